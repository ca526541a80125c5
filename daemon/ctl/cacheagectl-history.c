/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cacheagectl history: a cache's last rotations as a table, a terminal chart, JSON or SVG. */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "cacheage/value.h"
#include "cacheagectl.h"
#include "history-plot.h"

struct history_column {
        char *name, *kind, *unit;
};

/* A cache's history as GetHistoryPage sends it: columns, and per rotation a time and values. */
struct history_info {
        struct history_column *cols;
        size_t n_cols;
        uint64_t *times;
        uint64_t *values; /* n_rows * n_cols */
        size_t n_rows;
};

static void history_info_clear(struct history_info *h)
{
        for (size_t i = 0; i < h->n_cols; i++) {
                free(h->cols[i].name);
                free(h->cols[i].kind);
                free(h->cols[i].unit);
        }
        free(h->cols);
        free(h->times);
        free(h->values);
        *h = (struct history_info){ 0 };
}

/* One page of GetHistoryPage: its rows are added to @h; the columns are the first page's. */
static int read_history(sd_bus_message *m, struct history_info *h, bool first_page)
{
        const char *name, *kind, *unit;
        size_t n_cols = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sss)");
        while (r >= 0 && !first_page &&
               (r = sd_bus_message_read(m, "(sss)", &name, &kind, &unit)) > 0)
                if (n_cols >= h->n_cols || strcmp(name, h->cols[n_cols++].name) != 0)
                        return -EBADMSG;
        if (r >= 0 && !first_page && n_cols != h->n_cols)
                return -EBADMSG;
        while (r >= 0 && first_page &&
               (r = sd_bus_message_read(m, "(sss)", &name, &kind, &unit)) > 0) {
                struct history_column *v = realloc(h->cols, (h->n_cols + 1) * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                h->cols = v;
                v[h->n_cols] = (struct history_column){ strdup(name), strdup(kind), strdup(unit) };
                if (!v[h->n_cols].name || !v[h->n_cols].kind || !v[h->n_cols++].unit)
                        return -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "(tat)");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "tat")) > 0) {
                const void *p;
                size_t len;
                uint64_t t, *times, *values;

                r = sd_bus_message_read(m, "t", &t);
                if (r >= 0)
                        r = sd_bus_message_read_array(m, 't', &p, &len);
                if (r < 0)
                        return r;
                if (len != h->n_cols * sizeof(uint64_t))
                        return -EBADMSG;
                times = realloc(h->times, (h->n_rows + 1) * sizeof(*times));
                if (!times)
                        return -ENOMEM;
                h->times = times;
                values = realloc(h->values, (h->n_rows + 1) * h->n_cols * sizeof(*values) + 1);
                if (!values)
                        return -ENOMEM;
                h->values = values;
                memcpy(&values[h->n_rows * h->n_cols], p, len);
                times[h->n_rows++] = t;
                r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 0;
}

/*
 * Every page of a cache's history (GetHistoryPage: a reply holds at most 256 KiB) into @h. A
 * history started anew between two pages (a reload recreated the cache) is read again from
 * its start, at most 3 times.
 */
static int fetch_history(sd_bus *bus, const char *name, uint64_t since_usec,
                         struct history_info *h, sd_bus_error *error)
{
        for (unsigned attempt = 0;; attempt++) {
                uint64_t cursor = 0;
                bool first = true;
                int r;

                history_info_clear(h);
                do {
                        sd_bus_message *reply = NULL;

                        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH,
                                               CA_BUS_MANAGER_IFACE, "GetHistoryPage", error,
                                               &reply, "stt", name, since_usec, cursor);
                        if (r < 0)
                                break;
                        r = read_history(reply, h, first);
                        if (r >= 0)
                                r = sd_bus_message_read(reply, "t", &cursor);
                        sd_bus_message_unref(reply);
                        if (r < 0)
                                return r == -ENOMEM ? r : -EBADMSG;
                        first = false;
                } while (cursor != 0);
                if (r < 0 && attempt < 3 && sd_bus_error_has_name(error, CA_BUS_ERROR_CHANGED)) {
                        sd_bus_error_free(error);
                        continue;
                }
                return r;
        }
}

/*
 * --since: "-DURATION" or "DURATION ago" (before now), "@SECONDS" (since the Unix epoch),
 * "YYYY-MM-DD [HH:MM[:SS]]" (local time). Returns 0 or -EINVAL.
 */
static int parse_since(const char *s, uint64_t now_usec, uint64_t *ret_usec)
{
        static const char *const formats[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M",
                                               "%Y-%m-%d" };
        char buf[128];
        uint64_t d, secs;
        size_t len = strlen(s);
        struct tm tm;
        const char *end;
        time_t t;

        if (s[0] == '-' || (len > 4 && strcmp(s + len - 4, " ago") == 0)) {
                snprintf(buf, sizeof(buf), "%.*s", (int)(s[0] == '-' ? len - 1 : len - 4),
                         s[0] == '-' ? s + 1 : s);
                if (ca_parse_duration(buf, &d) < 0)
                        return -EINVAL;
                *ret_usec = d < now_usec ? now_usec - d : 0;
                return 0;
        }
        if (s[0] == '@') {
                if (ca_parse_uint(s + 1, 0, UINT64_MAX / 1000000, &secs) < 0)
                        return -EINVAL;
                *ret_usec = secs * 1000000;
                return 0;
        }
        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
                memset(&tm, 0, sizeof(tm));
                end = strptime(s, formats[i], &tm);
                if (!end || *end)
                        continue;
                tm.tm_isdst = -1;
                t = mktime(&tm);
                if (t < 0)
                        return -EINVAL;
                *ret_usec = (uint64_t)t * 1000000;
                return 0;
        }
        return -EINVAL;
}

/* The column named @name, or -1. */
static ssize_t history_column_find(const struct history_info *h, const char *name)
{
        for (size_t i = 0; i < h->n_cols; i++)
                if (strcmp(h->cols[i].name, name) == 0)
                        return (ssize_t)i;
        return -1;
}

/* The pictures show objects and what each rotation reclaimed: the point of aging. */
static int history_series(const struct history_info *h, struct plot_series s[2],
                          uint64_t *ret_values[2])
{
        static const char *const names[] = { "objects", "reclaimed" };
        static const char *const titles[] = { "objects after each rotation",
                                              "reclaimed per rotation" };

        for (size_t k = 0; k < 2; k++) {
                ssize_t c = history_column_find(h, names[k]);

                if (c < 0)
                        return -ENOENT;
                ret_values[k] = malloc((h->n_rows ? h->n_rows : 1) * sizeof(uint64_t));
                if (!ret_values[k])
                        return -ENOMEM;
                for (size_t i = 0; i < h->n_rows; i++)
                        ret_values[k][i] = h->values[i * h->n_cols + (size_t)c];
                s[k] = (struct plot_series){ .title = titles[k], .values = ret_values[k],
                                             .bars = k == 1 };
        }
        return 0;
}

/* A column's title: its name in upper case, '-' for '_'. */
static void history_title(const char *name, char *buf, size_t len)
{
        size_t i;

        for (i = 0; name[i] && i + 1 < len; i++)
                buf[i] = name[i] == '_' ? '-' : (char)(name[i] >= 'a' && name[i] <= 'z'
                                                               ? name[i] - 'a' + 'A' : name[i]);
        buf[i] = '\0';
}

static void history_print_table(const struct history_info *h)
{
        size_t n = h->n_cols + 1, *width;
        char cell[CELL_MAX], ts[64];

        width = calloc(n, sizeof(*width));
        if (!width)
                return;
        /* The time column, then each column but timestamps (the time column says it). */
        for (int pass = 0; pass < 2; pass++) {
                for (size_t i = 0; i <= h->n_rows; i++) {
                        bool title = i == 0;

                        if (title && arg_no_legend)
                                continue;
                        for (size_t j = 0; j < n; j++) {
                                const struct history_column *c = j ? &h->cols[j - 1] : NULL;
                                uint64_t v = c && !title ? h->values[(i - 1) * h->n_cols + j - 1]
                                                         : 0;

                                if (c && strcmp(c->unit, "timestamp_usec") == 0)
                                        continue;
                                if (title && c && strcmp(c->unit, "usec") == 0)
                                        /* durations are written with their unit: "423us" */
                                        history_title(c->name, cell,
                                                      strlen(c->name) > 5 &&
                                                      strcmp(c->name + strlen(c->name) - 5, "_usec") == 0
                                                      ? strlen(c->name) - 4 : sizeof(cell));
                                else if (title)
                                        history_title(c ? c->name : "time", cell, sizeof(cell));
                                else if (!c) {
                                        time_t t = (time_t)(h->times[i - 1] / 1000000);
                                        struct tm tm;

                                        if (!localtime_r(&t, &tm) ||
                                            !strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm))
                                                snprintf(ts, sizeof(ts), "?");
                                        snprintf(cell, sizeof(cell), "%s", ts);
                                } else if (strcmp(c->unit, "usec") == 0)
                                        ca_format_duration(v, cell, sizeof(cell));
                                else
                                        snprintf(cell, sizeof(cell), "%" PRIu64, v);
                                if (pass == 0) {
                                        if (strlen(cell) > width[j])
                                                width[j] = strlen(cell);
                                        continue;
                                }
                                printf("%s%s%*s%s", j ? "  " : "", title ? ansi(ANSI_BOLD) : "",
                                       j ? (int)width[j] : -(int)width[j], cell,
                                       title ? ansi(ANSI_NORMAL) : "");
                        }
                        if (pass == 1)
                                putchar('\n');
                }
        }
        free(width);
}

static void history_print_json(const char *name, const struct history_info *h)
{
        struct json_doc j;
        FILE *f = json_begin(&j);

        fprintf(f, "{\"cache\":");
        json_string(f, name);
        fprintf(f, ",\"columns\":[");
        for (size_t i = 0; i < h->n_cols; i++) {
                fprintf(f, "%s{\"name\":", i ? "," : "");
                json_string(f, h->cols[i].name);
                fprintf(f, ",\"kind\":");
                json_string(f, h->cols[i].kind);
                fprintf(f, ",\"unit\":");
                json_string(f, h->cols[i].unit);
                fputc('}', f);
        }
        fprintf(f, "],\"rotations\":[");
        for (size_t i = 0; i < h->n_rows; i++) {
                fprintf(f, "%s{\"time_usec\":%" PRIu64, i ? "," : "", h->times[i]);
                for (size_t k = 0; k < h->n_cols; k++) {
                        fputc(',', f);
                        json_string(f, h->cols[k].name);
                        fprintf(f, ":%" PRIu64, h->values[i * h->n_cols + k]);
                }
                fputc('}', f);
        }
        fprintf(f, "]}");
        json_end(&j);
}

static int history_write_svg(const char *name, const struct history_info *h,
                             const struct plot_series s[2])
{
        char title[256];
        FILE *f;
        int r;

        if (h->n_rows == 0)
                return fail(EXIT_FAILED, "No rotation of %s in its history yet: no plot written",
                            name);
        f = fopen(arg_svg, "we");
        if (!f)
                return fail(EXIT_FAILED, "Failed to write %s: %s", arg_svg, strerror(errno));
        snprintf(title, sizeof(title), "cacheaged: cache %s", name);
        r = plot_svg(f, title, h->times, h->n_rows, s, 2);
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r < 0)
                return fail(EXIT_FAILED, "Failed to write %s: %s", arg_svg, strerror(-r));
        if (!arg_json)
                printf("Wrote %s: %zu rotation%s of %s.\n", arg_svg, h->n_rows,
                       h->n_rows == 1 ? "" : "s", name);
        return 0;
}

int cmd_history(sd_bus *bus, int argc, char **argv)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        struct history_info h = { 0 };
        struct plot_series s[2];
        uint64_t since_usec = 0, *plotted[2] = { NULL, NULL };
        bool plot;
        int r;

        if (argc != 1)
                return fail(EXIT_USAGE, "'history' takes one cache name");
        if (arg_since && parse_since(arg_since, now_realtime_usec(), &since_usec) < 0)
                return fail(EXIT_USAGE, "--since: '%s' is not a time (expected e.g. -10min, "
                            "\"1h ago\", \"2026-12-03 04:51\", @1796273500)", arg_since);
        r = fetch_history(bus, argv[0], since_usec, &h, &error);
        if (r < 0 && sd_bus_error_is_set(&error)) {
                if (sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        r = no_such_cache(argv[0]);
                else
                        r = call_failed(&error, r, "history", argv[0]);
                sd_bus_error_free(&error);
                goto out_free;
        }
        if (r < 0) {
                r = fail(EXIT_FAILED, "Failed to parse the history of %s: %s", argv[0],
                         strerror(-r));
                goto out_free;
        }
        /* Without those columns (or memory) there is no picture: the table stays. */
        r = history_series(&h, s, plotted);
        if (r < 0 && arg_svg) {
                r = fail(EXIT_FAILED, "Nothing to plot in the history of %s: %s", argv[0],
                         r == -ENOENT ? "no objects or reclaimed column" : strerror(-r));
                goto out_free;
        }
        plot = r >= 0;
        r = 0;
        if (arg_svg) {
                r = history_write_svg(argv[0], &h, s);
                goto out_free;
        }
        if (arg_json) {
                history_print_json(argv[0], &h);
                goto out_free;
        }
        maybe_page();
        if (h.n_rows == 0) {
                printf("No rotation of %s in its history%s.\n", argv[0],
                       arg_since ? " since then" : " yet");
                goto out_free;
        }
        if (plot && arg_tty_columns) {
                plot_terminal(stdout, h.times, h.n_rows, s, 2, arg_tty_columns, 8);
                putchar('\n');
        }
        history_print_table(&h);

out_free:
        free(plotted[0]);
        free(plotted[1]);
        history_info_clear(&h);
        return r;
}
