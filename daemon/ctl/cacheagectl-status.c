/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheagectl status: the daemon's line and a table of caches; list-caches: some of the
 * table's columns and how many caches were listed, as systemctl list-units; list: the names.
 */

#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "cacheage/value.h"
#include "cacheagectl.h"

enum { COL_CACHE, COL_ADAPTER, COL_STATE, COL_OBJECTS, COL_PART, COL_RECLAIMED,
       COL_REFAULTS, COL_INTERVAL, COL_AGES, COL_LAST, N_COLS };

static const struct {
        const char *title;
        bool right; /* numbers are right-aligned */
} columns[N_COLS] = {
        { "CACHE", false },     { "ADAPTER", false },  { "STATE", false },
        { "OBJECTS", true },    { "SINGLE-USE", true }, { "RECLAIMED", true },
        { "REFAULTS", true },   { "INTERVAL", false },  { "AGES", false },
        { "LAST ROTATION", false },
};

/*
 * The columns say what they count. A cache of nodes counts "objects", of which "single-use",
 * aged by its ages; the kernel adapter counts the kernel's "dentries", of which "negative",
 * aged by a mechanism (cacheage/age.h, struct ca_cache_counts). When every cache counts the
 * same things the titles name them and the cells are bare numbers; when they differ the
 * titles are general and each cell names what it counts.
 */
struct status_titles {
        char objects[CELL_MAX], part[CELL_MAX];
        const char *ages;
        bool name_objects, name_part; /* cells say what they count */
};

static const char *info_objects_name(const struct cache_info *c)
{
        return c->objects_name && *c->objects_name ? c->objects_name : "objects";
}

static const char *info_part_name(const struct cache_info *c)
{
        return c->part_name && *c->part_name ? c->part_name : "single-use";
}

static void upper(char *dst, size_t len, const char *src)
{
        size_t i;

        for (i = 0; src[i] && i + 1 < len; i++)
                dst[i] = src[i] >= 'a' && src[i] <= 'z' ? (char)(src[i] - 'a' + 'A') : src[i];
        dst[i] = '\0';
}

static void status_titles(const struct cache_info *caches, size_t n, struct status_titles *t)
{
        size_t n_counted = 0;

        *t = (struct status_titles){ .ages = "AGES" };
        for (size_t i = 0; i < n; i++) {
                n_counted += info_counted(&caches[i]);
                if (strcmp(info_objects_name(&caches[i]), info_objects_name(&caches[0])) != 0)
                        t->name_objects = true;
                if (strcmp(info_part_name(&caches[i]), info_part_name(&caches[0])) != 0)
                        t->name_part = true;
        }
        if (n == 0 || t->name_objects)
                snprintf(t->objects, sizeof(t->objects), "OBJECTS");
        else
                upper(t->objects, sizeof(t->objects), info_objects_name(&caches[0]));
        if (n == 0 || t->name_part)
                snprintf(t->part, sizeof(t->part), "OF WHICH");
        else
                upper(t->part, sizeof(t->part), info_part_name(&caches[0]));
        if (n_counted > 0)
                t->ages = n_counted == n ? "MECHANISM" : "AGING";
}

static void status_row(const struct cache_info *c, const struct status_titles *t, uint64_t now,
                       char cells[N_COLS][CELL_MAX])
{
        char d[CA_DURATION_MAX_STR];
        bool counted = info_counted(c);

        snprintf(cells[COL_CACHE], CELL_MAX, "%s", c->name ? c->name : "?");
        snprintf(cells[COL_ADAPTER], CELL_MAX, "%s", c->adapter ? c->adapter : "?");
        /* A cache whose aging cannot keep up with its interval says so where one looks. */
        if (c->rotations_behind > 0)
                snprintf(cells[COL_STATE], CELL_MAX, "behind(%" PRIu32 ")", c->rotations_behind);
        else if (c->enabled && c->deferred && *c->deferred) {
                /* Put off (the daemon's rotations or the adapter's work): why, since when. */
                char since[CA_DURATION_MAX_STR] = "0s";

                if (c->deferred_since_usec && now > c->deferred_since_usec)
                        format_age(now - c->deferred_since_usec, since, sizeof(since));
                snprintf(cells[COL_STATE], CELL_MAX, "deferred: %s since %s", c->deferred,
                         since);
        } else if (c->enabled && counted && adapter_stat_value(c, "groups_left_alone") > 0 &&
                   adapter_stat_value(c, "groups_left_alone") != UINT64_MAX)
                /* The kernel adapter's groups it cannot age without harm: show says which. */
                snprintf(cells[COL_STATE], CELL_MAX, "enabled, %" PRIu64 " left alone",
                         adapter_stat_value(c, "groups_left_alone"));
        else
                snprintf(cells[COL_STATE], CELL_MAX, "%s", c->enabled ? "enabled" : "disabled");
        snprintf(cells[COL_OBJECTS], CELL_MAX, "%" PRIu64 "%s%s", c->stats.objects,
                 t->name_objects ? " " : "", t->name_objects ? info_objects_name(c) : "");
        /* An older daemon has no PartObjects: its part is the single-use objects. */
        snprintf(cells[COL_PART], CELL_MAX, "%" PRIu64 "%s%s",
                 have_stat(c, ca_stat_desc_find("part_objects")) ? c->stats.part_objects
                                                                 : c->stats.single_use_objects,
                 t->name_part ? " " : "", t->name_part ? info_part_name(c) : "");
        /* A cache without nodes: what its adapter says the kernel took (and the bytes where
           it says them); nothing of it is remembered, so nothing can come back. */
        if (counted) {
                uint64_t bytes = adapter_stat_value(c, "reclaimed_bytes");
                char b[32];

                if (bytes != UINT64_MAX)
                        snprintf(cells[COL_RECLAIMED], CELL_MAX, "%" PRIu64 " (%s)",
                                 c->stats.reclaimed, ca_format_size(bytes, b, sizeof(b)));
                else
                        snprintf(cells[COL_RECLAIMED], CELL_MAX, "%" PRIu64, c->stats.reclaimed);
                snprintf(cells[COL_REFAULTS], CELL_MAX, "-");
        } else {
                snprintf(cells[COL_RECLAIMED], CELL_MAX, "%" PRIu64, c->stats.reclaimed);
                /* refaults, and their share of the reclaimed */
                if (c->stats.reclaimed)
                        snprintf(cells[COL_REFAULTS], CELL_MAX, "%" PRIu64 " (%.1f%%)",
                                 c->stats.refaults,
                                 (double)c->stats.refault_share_ppm / 10000.0);
                else
                        snprintf(cells[COL_REFAULTS], CELL_MAX, "%" PRIu64, c->stats.refaults);
        }
        snprintf(cells[COL_INTERVAL], CELL_MAX, "%s",
                 ca_format_duration(c->interval_usec, d, sizeof(d)));
        /*
         * A counted cache's mechanism; else the ages in force, and under auto, which moves
         * them, said so (not for a cache with no refault memory: its adapter gives no
         * identities, and its ages stay as written).
         */
        if (counted)
                snprintf(cells[COL_AGES], CELL_MAX, "%s", c->mechanism);
        else if (c->ages && strcmp(c->ages, "auto") == 0 && c->stats.refault_memory_bytes > 0)
                snprintf(cells[COL_AGES], CELL_MAX, "%" PRIu64 "/%" PRIu64 " auto",
                         c->stats.current_single_use_age, c->stats.current_max_age);
        else
                snprintf(cells[COL_AGES], CELL_MAX, "%" PRIu32 "/%" PRIu32, c->single_use_age,
                         c->max_age);
        format_relative(c->stats.last_rotation_usec, now, cells[COL_LAST], CELL_MAX);
}

#define COLS_ALL ((1u << N_COLS) - 1)
#define COL(c) (1u << (c))

/* One line of the table, of the columns in @cols; @row NULL prints @titles. */
static void print_row(unsigned cols, const size_t width[N_COLS], char (*row)[CELL_MAX],
                      const char *const titles[N_COLS])
{
        size_t last = 0;

        for (size_t j = 0; j < N_COLS; j++)
                if (cols & COL(j))
                        last = j;
        /* Bold titles; the state in colour (the padding outside the colour's codes). */
        if (!row)
                fputs(ansi(ANSI_BOLD), stdout);
        for (size_t j = 0; j < N_COLS; j++) {
                const char *s = row ? row[j] : titles[j];
                const char *on = "", *off = "";

                if (!(cols & COL(j)))
                        continue;
                if (row && j == COL_STATE) {
                        on = ansi(strncmp(s, "enabled", 7) == 0 ? ANSI_GREEN : ANSI_GREY);
                        off = ansi(ANSI_NORMAL);
                }
                if (j == last)
                        printf("%s%s%s", on, s, off);
                else if (columns[j].right)
                        printf("%s%*s%s  ", on, (int)width[j], s, off);
                else
                        printf("%s%-*s%s  ", on, (int)width[j], s, off);
        }
        printf("%s\n", row ? "" : ansi(ANSI_NORMAL));
}

/* The table of @caches, the columns in @cols: titles (unless --no-legend), one row each. */
static int print_table(const struct cache_info *caches, size_t n, unsigned cols, uint64_t now)
{
        char (*cells)[N_COLS][CELL_MAX] = calloc(n ? n : 1, sizeof(*cells));
        const char *titles[N_COLS];
        struct status_titles t;
        size_t width[N_COLS];

        if (!cells)
                return fail(EXIT_FAILED, "Out of memory");
        status_titles(caches, n, &t);
        for (size_t j = 0; j < N_COLS; j++)
                titles[j] = columns[j].title;
        titles[COL_OBJECTS] = t.objects;
        titles[COL_PART] = t.part;
        titles[COL_AGES] = t.ages;
        for (size_t j = 0; j < N_COLS; j++)
                width[j] = strlen(titles[j]);
        for (size_t i = 0; i < n; i++) {
                status_row(&caches[i], &t, now, cells[i]);
                for (size_t j = 0; j < N_COLS; j++)
                        if (strlen(cells[i][j]) > width[j])
                                width[j] = strlen(cells[i][j]);
        }
        if (!arg_no_legend)
                print_row(cols, width, NULL, titles);
        for (size_t i = 0; i < n; i++)
                print_row(cols, width, cells[i], titles);
        free(cells);
        return 0;
}

/* Every cache of @m, read (*ret_caches: m->n_names of them). Returns 0 or the exit status. */
static int get_caches(sd_bus *bus, const struct manager_info *m, struct cache_info **ret_caches)
{
        struct cache_info *caches = calloc(m->n_names ? m->n_names : 1, sizeof(*caches));
        int r;

        if (!caches)
                return fail(EXIT_FAILED, "Out of memory");
        for (size_t i = 0; i < m->n_names; i++) {
                r = get_cache(bus, m->names[i], &caches[i]);
                if (r != 0) {
                        for (size_t k = 0; k < i; k++)
                                cache_info_clear(&caches[k]);
                        free(caches);
                        return r;
                }
        }
        *ret_caches = caches;
        return 0;
}

static void caches_free(struct cache_info *caches, size_t n)
{
        for (size_t i = 0; caches && i < n; i++)
                cache_info_clear(&caches[i]);
        free(caches);
}

/*
 * status NAME...: keep only those caches, in the order asked, each once; an unknown one is an
 * error (exit 4, as show's). Returns 0 or the exit status.
 */
static int select_caches(struct manager_info *m, int argc, char **argv)
{
        char **keep;
        size_t n = 0;

        if (argc == 0)
                return 0;
        keep = calloc((size_t)argc, sizeof(*keep));
        if (!keep)
                return fail(EXIT_FAILED, "Out of memory");
        for (int a = 0; a < argc; a++) {
                bool found = false, dup = false;

                for (size_t k = 0; k < n; k++)
                        dup = dup || strcmp(keep[k], argv[a]) == 0;
                for (size_t i = 0; i < m->n_names && !found; i++)
                        if (m->names[i] && strcmp(m->names[i], argv[a]) == 0) {
                                found = true;
                                if (!dup) {
                                        keep[n++] = m->names[i];
                                        m->names[i] = NULL;
                                }
                        }
                if (!found && !dup) {
                        for (size_t k = 0; k < n; k++)
                                free(keep[k]);
                        free(keep);
                        return no_such_cache(argv[a]);
                }
        }
        for (size_t i = 0; i < m->n_names; i++)
                free(m->names[i]);
        free(m->names);
        m->names = keep;
        m->n_names = n;
        return 0;
}

static int status_once(sd_bus *bus, int argc, char **argv)
{
        struct manager_info m;
        struct cache_info *caches = NULL;
        uint64_t now;
        char d[CA_DURATION_MAX_STR], di[CA_DURATION_MAX_STR], ts[128];
        int r;

        r = get_manager(bus, &m);
        if (r != 0)
                return r;
        r = select_caches(&m, argc, argv);
        if (r == 0)
                r = get_caches(bus, &m, &caches);
        if (r != 0)
                goto out_free;
        now = now_realtime_usec();

        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                fprintf(f, "{\"version\":");
                json_string(f, m.version);
                fprintf(f, ",\"start_timestamp_usec\":%" PRIu64 ",\"uptime_usec\":%" PRIu64
                        ",\"default_interval_usec\":%" PRIu64 ",\"caches\":[",
                        m.start_usec, now > m.start_usec ? now - m.start_usec : 0,
                        m.default_interval_usec);
                for (size_t i = 0; i < m.n_names; i++) {
                        if (i > 0)
                                fputc(',', f);
                        print_cache_json(f, &caches[i]);
                }
                fprintf(f, "]}");
                json_end(&j);
                goto out_free;
        }

        /* The legend: the daemon's line above the table, the titles. */
        if (!arg_no_legend)
                printf("cacheaged %s, up %s (since %s), default interval %s\n",
                       m.version ? m.version : "?",
                       format_age(now > m.start_usec ? now - m.start_usec : 0, d, sizeof(d)),
                       format_timestamp(m.start_usec, ts, sizeof(ts)),
                       ca_format_duration(m.default_interval_usec, di, sizeof(di)));
        if (m.n_names == 0) {
                if (!arg_no_legend)
                        printf("No caches configured.\n");
                goto out_free;
        }
        r = print_table(caches, m.n_names, COLS_ALL, now);

out_free:
        caches_free(caches, m.n_names);
        manager_info_clear(&m);
        return r;
}

int cmd_status(sd_bus *bus, int argc, char **argv)
{
        struct timespec ts;
        int r;

        if (arg_watch_sec <= 0) {
                maybe_page();
                return status_once(bus, argc, argv);
        }
        ts.tv_sec = (time_t)arg_watch_sec;
        ts.tv_nsec = (long)((arg_watch_sec - (double)ts.tv_sec) * 1e9);
        for (;;) {
                if (!arg_json && isatty(STDOUT_FILENO))
                        fputs("\033[H\033[2J", stdout); /* home, clear: refresh in place */
                r = status_once(bus, argc, argv);
                if (r != 0)
                        return r;
                fflush(stdout);
                nanosleep(&ts, NULL);
        }
}


/*
 * list-caches [PATTERN...]: the caches whose names match a pattern (every one without), in the
 * daemon's order.
 */
static void filter_caches(struct manager_info *m, int argc, char **argv)
{
        size_t n = 0;

        for (size_t i = 0; i < m->n_names; i++) {
                bool match = argc == 0;

                for (int a = 0; a < argc && !match; a++)
                        match = fnmatch(argv[a], m->names[i], FNM_NOESCAPE) == 0;
                if (match)
                        m->names[n++] = m->names[i];
                else
                        free(m->names[i]);
        }
        m->n_names = n;
}

int cmd_list_caches(sd_bus *bus, int argc, char **argv)
{
        const unsigned cols = COL(COL_CACHE) | COL(COL_ADAPTER) | COL(COL_STATE) |
                              COL(COL_INTERVAL) | COL(COL_AGES);
        struct cache_info *caches = NULL;
        struct manager_info m;
        int r;

        r = get_manager(bus, &m);
        if (r != 0)
                return r;
        filter_caches(&m, argc, argv);
        r = get_caches(bus, &m, &caches);
        if (r != 0)
                goto out_free;
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);
                char cells[N_COLS][CELL_MAX];
                struct status_titles t;

                status_titles(caches, m.n_names, &t);
                fputc('[', f);
                for (size_t i = 0; i < m.n_names; i++) {
                        status_row(&caches[i], &t, 0, cells);
                        fprintf(f, "%s{\"cache\":", i ? "," : "");
                        json_string(f, caches[i].name);
                        fprintf(f, ",\"adapter\":");
                        json_string(f, caches[i].adapter);
                        fprintf(f, ",\"state\":");
                        json_string(f, caches[i].rotations_behind > 0 ? "behind"
                                       : caches[i].enabled             ? "enabled"
                                                                       : "disabled");
                        fprintf(f, ",\"interval_usec\":%" PRIu64 ",\"ages\":",
                                caches[i].interval_usec);
                        json_string(f, cells[COL_AGES]);
                        fputc('}', f);
                }
                fputc(']', f);
                json_end(&j);
                goto out_free;
        }
        maybe_page();
        if (m.n_names > 0)
                r = print_table(caches, m.n_names, cols, now_realtime_usec());
        /* As systemctl list-units: a blank line, then the count. */
        if (r == 0 && !arg_no_legend)
                printf("%s%zu cache%s listed.\n", m.n_names > 0 ? "\n" : "", m.n_names,
                       m.n_names == 1 ? "" : "s");

out_free:
        caches_free(caches, m.n_names);
        manager_info_clear(&m);
        return r;
}

int cmd_list(sd_bus *bus, int argc, char **argv)
{
        struct manager_info m;
        int r;

        if (argc > 0)
                return fail(EXIT_USAGE, "'list' takes no arguments");
        r = get_manager(bus, &m);
        if (r != 0)
                return r;
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                json_strings(f, m.names, m.n_names);
                json_end(&j);
        } else {
                for (size_t i = 0; i < m.n_names; i++)
                        printf("%s\n", m.names[i]);
        }
        manager_info_clear(&m);
        return 0;
}
