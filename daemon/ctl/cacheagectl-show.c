/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cacheagectl show: every property of a cache, or those -p names; the JSON of a cache. */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "cacheage/value.h"
#include "cacheagectl.h"

/*
 * Whether show prints the property @camel (or @snake, a statistic's own name), with -p; an
 * adapter statistic is "AdapterStats.KEY" (@adapter_key set).
 */
bool property_wanted(const char *camel, const char *snake, const char *adapter_key)
{
        char buf[SNAKE_MAX];
        bool wanted = n_arg_properties == 0;

        if (!snake)
                snake = snake_case(camel, buf);
        for (size_t i = 0; i < n_arg_properties; i++) {
                const char *want = arg_properties[i];
                size_t stem = strcspn(want, ".");

                if (adapter_key) {
                        /* "AdapterStats" or "adapter_stats", alone or with ".KEY" */
                        if ((strncmp(want, camel, stem) != 0 || strlen(camel) != stem) &&
                            (strncmp(want, snake, stem) != 0 || strlen(snake) != stem))
                                continue;
                        if (want[stem] && strcmp(want + stem + 1, adapter_key) != 0)
                                continue;
                } else if (strcmp(want, camel) != 0 && strcmp(want, snake) != 0) {
                        continue;
                }
                arg_properties_matched[i] = true;
                wanted = true;
        }
        return wanted;
}

/* The manager's properties, in the order show prints them. */
static const char *const manager_props[] = { "Version", "StartTimestampUSec",
                                             "DefaultIntervalUSec", "DropInDirectory",
                                             "Caches" };
#define N_MANAGER_PROPS (sizeof(manager_props) / sizeof(manager_props[0]))

/* @p names @camel, as written on the bus or in snake_case (the JSON's). */
static bool property_is(const char *p, const char *camel)
{
        char buf[SNAKE_MAX];

        return strcmp(p, camel) == 0 || strcmp(p, snake_case(camel, buf)) == 0;
}

static bool cache_property_known(const char *p)
{
        size_t stem = strcspn(p, ".");

        if (ca_stat_desc_find(p) || property_is(p, "RefaultHistogram") ||
            property_is(p, "Parts"))
                return true;
        for (size_t j = 0; j < n_cache_props; j++)
                if (property_is(p, cache_props[j].name))
                        return true;
        /* "AdapterStats" alone or with ".KEY" (any KEY: the adapter says which it has) */
        if ((strncmp(p, "AdapterStats", stem) == 0 || strncmp(p, "adapter_stats", stem) == 0) &&
            (stem == strlen("AdapterStats") || stem == strlen("adapter_stats")))
                return p[stem] == '\0' || p[stem + 1] != '\0';
        return false;
}

static bool manager_property_known(const char *p)
{
        for (size_t j = 0; j < N_MANAGER_PROPS; j++)
                if (property_is(p, manager_props[j]))
                        return true;
        return false;
}

/*
 * show [NAME]: at most one name; the -p names, checked before anything is asked, against the
 * cache's properties or (without NAME) the manager's: a typo is an error, not an empty answer.
 */
int check_show(int argc, char **argv)
{
        if (argc > 1)
                return fail(EXIT_USAGE, "'show' takes at most one cache name (without one: the "
                            "daemon's properties)");
        for (size_t i = 0; i < n_arg_properties; i++) {
                const char *p = arg_properties[i];

                if (argc == 0 && !manager_property_known(p))
                        return fail(EXIT_USAGE, "Unknown property '%s' of the daemon (every "
                                    "one: cacheagectl show; a cache's: cacheagectl show NAME)",
                                    p);
                if (argc == 1 && !cache_property_known(p))
                        return fail(EXIT_USAGE, "Unknown property '%s' (every one: cacheagectl "
                                    "show NAME; an adapter's statistic: AdapterStats.KEY)", p);
        }
        return 0;
}

void properties_help(void)
{
        const struct ca_stat_desc *d;
        size_t n_stats;

        for (size_t i = 0; i < N_MANAGER_PROPS; i++)
                printf("%s\n", manager_props[i]);
        for (size_t i = 0; i < n_cache_props; i++)
                printf("%s\n", cache_props[i].name);
        d = ca_stat_descs(&n_stats);
        for (size_t i = 0; i < n_stats; i++)
                printf("%s\n", d[i].property);
        printf("RefaultHistogram\nParts\nAdapterStats\n");
}

void print_cache_json(FILE *f, const struct cache_info *c)
{
        const struct ca_stat_desc *d;
        size_t n_stats;
        bool first = true;

        fputc('{', f);
        for (size_t i = 0; i < n_cache_props; i++) {
                const struct cache_prop *p = &cache_props[i];

                if (!(c->have_props & (1u << i)) || !property_wanted(p->name, NULL, NULL) ||
                    counted_leaves_out(c, p->name))
                        continue;
                if (!first)
                        fputc(',', f);
                first = false;
                json_key(f, p->name);
                fputc(':', f);
                if (p->type == 's')
                        json_string(f, *(char **)prop_field(c, p));
                else if (p->type == 'b')
                        fputs(prop_number(c, p) ? "true" : "false", f);
                else
                        fprintf(f, "%" PRIu64, prop_number(c, p));
        }
        d = ca_stat_descs(&n_stats);
        for (size_t i = 0; i < n_stats; i++) {
                if (!have_stat(c, &d[i]) || !property_wanted(d[i].property, d[i].name, NULL) ||
                    counted_leaves_out(c, d[i].name))
                        continue;
                if (!first)
                        fputc(',', f);
                first = false;
                json_string(f, d[i].name);
                fprintf(f, ":%" PRIu64, ca_stat_value(&c->stats, &d[i]));
        }
        if (c->n_parts && property_wanted("Parts", "parts", NULL)) {
                if (!first)
                        fputc(',', f);
                first = false;
                json_key(f, "Parts");
                fputs(":[", f);
                for (size_t j = 0; j < c->n_parts; j++) {
                        fprintf(f, "%s{\"name\":", j ? "," : "");
                        json_string(f, c->parts[j].name);
                        fprintf(f, ",\"bytes\":%" PRIu64 ",\"reclaimed\":%" PRIu64
                                ",\"reclaimed_bytes\":%" PRIu64, c->parts[j].bytes,
                                c->parts[j].reclaimed, c->parts[j].reclaimed_bytes);
                        if (c->parts[j].state) {
                                fputs(",\"state\":", f);
                                json_string(f, c->parts[j].state);
                        }
                        fputc('}', f);
                }
                fputc(']', f);
        }
        if (c->have_refault_histogram && !counted_leaves_out(c, "RefaultHistogram") &&
            property_wanted("RefaultHistogram", "refault_histogram", NULL)) {
                if (!first)
                        fputc(',', f);
                first = false;
                json_key(f, "RefaultHistogram");
                fputs(":[", f);
                for (size_t j = 0; j < c->n_refault_buckets; j++)
                        fprintf(f, "%s{\"from_rotations\":%" PRIu32 ",\"refaults\":%" PRIu64 "}",
                                j ? "," : "", c->refault_floor[j], c->refault_histogram[j]);
                fputc(']', f);
        }
        if (c->have_adapter_stats) {
                bool first_stat = true;

                for (size_t j = 0; j < c->n_adapter_stats; j++) {
                        if (!property_wanted("AdapterStats", "adapter_stats",
                                             c->adapter_stats[j].key))
                                continue;
                        if (first_stat) {
                                if (!first)
                                        fputc(',', f);
                                json_key(f, "AdapterStats");
                                fputs(":{", f);
                        } else {
                                fputc(',', f);
                        }
                        first_stat = false;
                        json_string(f, c->adapter_stats[j].key);
                        fprintf(f, ":%" PRIu64, c->adapter_stats[j].value);
                }
                if (!first_stat)
                        fputc('}', f);
                else if (n_arg_properties == 0)
                        fprintf(f, "%s\"adapter_stats\":{}", first ? "" : ",");
        }
        fputc('}', f);
}


/* ---- show ---- */

/* One "Name=value" line of show, or the value alone with --value. */
static void show_line(const char *name, const char *value)
{
        if (arg_value)
                printf("%s\n", value);
        else
                printf("%s=%s\n", name, value);
}

static void show_value(const char *name, enum fmt fmt, uint64_t v, uint64_t now)
{
        char buf[256], rel[64], line[384];

        switch (fmt) {
        case FMT_BOOL:
                show_line(name, v ? "yes" : "no");
                break;
        case FMT_DURATION:
                show_line(name, ca_format_duration(v, buf, sizeof(buf)));
                break;
        case FMT_TIMESTAMP:
                if (v == 0) {
                        show_line(name, "never");
                        break;
                }
                snprintf(line, sizeof(line), "%s (%s)", format_timestamp(v, buf, sizeof(buf)),
                         format_relative(v, now, rel, sizeof(rel)));
                show_line(name, line);
                break;
        default:
                snprintf(buf, sizeof(buf), "%" PRIu64, v);
                show_line(name, buf);
        }
}

static int part_cmp(const void *a, const void *b)
{
        const struct part_info *x = *(const struct part_info *const *)a;
        const struct part_info *y = *(const struct part_info *const *)b;

        if (x->reclaimed_bytes != y->reclaimed_bytes)
                return x->reclaimed_bytes > y->reclaimed_bytes ? -1 : 1;
        return strcmp(x->name, y->name);
}

/*
 * The parts not aged as the rest: how many ("PartsNotAged=N"), then one "PartState=" line each
 * for the first CTL_PARTS_SHOWN in the daemon's order (--json lists each with its part).
 */
static void show_part_states(const struct cache_info *c)
{
        char line[768];
        size_t n = 0, shown = 0;

        for (size_t i = 0; i < c->n_parts; i++)
                n += c->parts[i].state != NULL;
        if (!n)
                return;
        snprintf(line, sizeof(line), "%zu", n);
        show_line("PartsNotAged", line);
        for (size_t i = 0; i < c->n_parts && shown < CTL_PARTS_SHOWN; i++) {
                if (!c->parts[i].state)
                        continue;
                snprintf(line, sizeof(line), "%s %s", c->parts[i].name, c->parts[i].state);
                show_line("PartState", line);
                shown++;
        }
}

/*
 * The parts that gave most, by bytes reclaimed ("Parts=N" first, then one "Part=" line each:
 * name, what it gave, what it holds).
 */
static void show_parts(const struct cache_info *c)
{
        const struct part_info **v = calloc(c->n_parts, sizeof(*v));
        char line[512], a[32], b[32];

        if (!v)
                return;
        for (size_t i = 0; i < c->n_parts; i++)
                v[i] = &c->parts[i];
        qsort(v, c->n_parts, sizeof(*v), part_cmp);
        snprintf(line, sizeof(line), "%zu", c->n_parts);
        show_line("Parts", line);
        for (size_t i = 0; i < c->n_parts && i < CTL_PARTS_SHOWN; i++) {
                snprintf(line, sizeof(line), "%s reclaimed %s (%" PRIu64 " objects), holds %s",
                         v[i]->name, ca_format_size(v[i]->reclaimed_bytes, a, sizeof(a)),
                         v[i]->reclaimed, ca_format_size(v[i]->bytes, b, sizeof(b)));
                show_line("Part", line);
        }
        free(v);
        show_part_states(c);
}

/* A -p name that matched nothing in this cache (an adapter statistic it lacks): exit 1. */
static int check_properties_matched(const char *cache)
{
        for (size_t i = 0; i < n_arg_properties; i++)
                if (!arg_properties_matched[i])
                        return fail(EXIT_FAILED, "Cache %s has no property %s", cache,
                                    arg_properties[i]);
        return 0;
}

/* show without a name: the manager's properties, as "systemctl show" shows systemd's. */
static int show_manager(sd_bus *bus)
{
        uint64_t now = now_realtime_usec();
        struct manager_info m;
        size_t len = 0;
        char *caches;
        int r;

        r = get_manager(bus, &m);
        if (r != 0)
                return r;
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);
                const char *sep = "";

                fputc('{', f);
                if (property_wanted("Version", NULL, NULL)) {
                        fprintf(f, "%s\"version\":", sep);
                        json_string(f, m.version);
                        sep = ",";
                }
                if (property_wanted("StartTimestampUSec", NULL, NULL)) {
                        fprintf(f, "%s\"start_timestamp_usec\":%" PRIu64, sep, m.start_usec);
                        sep = ",";
                }
                if (property_wanted("DefaultIntervalUSec", NULL, NULL)) {
                        fprintf(f, "%s\"default_interval_usec\":%" PRIu64, sep,
                                m.default_interval_usec);
                        sep = ",";
                }
                if (property_wanted("DropInDirectory", NULL, NULL)) {
                        fprintf(f, "%s\"drop_in_directory\":", sep);
                        json_string(f, m.drop_in_dir);
                        sep = ",";
                }
                if (property_wanted("Caches", NULL, NULL)) {
                        fprintf(f, "%s\"caches\":", sep);
                        json_strings(f, m.names, m.n_names);
                }
                fputc('}', f);
                json_end(&j);
                manager_info_clear(&m);
                return 0;
        }
        maybe_page();
        if (property_wanted("Version", NULL, NULL))
                show_line("Version", m.version ? m.version : "");
        if (property_wanted("StartTimestampUSec", NULL, NULL))
                show_value("StartTimestampUSec", FMT_TIMESTAMP, m.start_usec, now);
        if (property_wanted("DefaultIntervalUSec", NULL, NULL))
                show_value("DefaultIntervalUSec", FMT_DURATION, m.default_interval_usec, now);
        if (property_wanted("DropInDirectory", NULL, NULL))
                show_line("DropInDirectory", m.drop_in_dir ? m.drop_in_dir : "");
        if (property_wanted("Caches", NULL, NULL)) {
                /* A list, space-separated as systemctl shows one. */
                for (size_t i = 0; i < m.n_names; i++)
                        len += strlen(m.names[i]) + 1;
                caches = calloc(1, len + 1);
                if (!caches) {
                        manager_info_clear(&m);
                        return fail(EXIT_FAILED, "Out of memory");
                }
                for (size_t i = 0; i < m.n_names; i++) {
                        if (i > 0)
                                strcat(caches, " ");
                        strcat(caches, m.names[i]);
                }
                show_line("Caches", caches);
                free(caches);
        }
        manager_info_clear(&m);
        return 0;
}

int cmd_show(sd_bus *bus, int argc, char **argv)
{
        const struct ca_stat_desc *d;
        uint64_t now = now_realtime_usec();
        struct cache_info c;
        size_t n_stats;
        char key[256];
        int r;

        if (argc == 0)
                return show_manager(bus);
        r = get_cache(bus, argv[0], &c);
        if (r != 0)
                return r;
        if (arg_json) {
                struct json_doc j;

                print_cache_json(json_begin(&j), &c);
                json_end(&j);
                cache_info_clear(&c);
                return check_properties_matched(argv[0]);
        }
        maybe_page();
        for (size_t i = 0; i < n_cache_props; i++) {
                const struct cache_prop *p = &cache_props[i];
                const char *str;

                if (!(c.have_props & (1u << i)) || !property_wanted(p->name, NULL, NULL) ||
                    counted_leaves_out(&c, p->name))
                        continue;
                if (p->type == 's') {
                        str = *(char **)prop_field(&c, p);
                        show_line(p->name, str ? str : "");
                } else {
                        show_value(p->name, p->fmt, prop_number(&c, p), now);
                }
        }
        d = ca_stat_descs(&n_stats);
        for (size_t i = 0; i < n_stats; i++)
                if (have_stat(&c, &d[i]) && property_wanted(d[i].property, d[i].name, NULL) &&
                    !counted_leaves_out(&c, d[i].name))
                        show_value(d[i].property, stat_fmt(&d[i]),
                                   ca_stat_value(&c.stats, &d[i]), now);
        if (c.n_parts && property_wanted("Parts", "parts", NULL))
                show_parts(&c);
        if (c.have_refault_histogram && !counted_leaves_out(&c, "RefaultHistogram") &&
            property_wanted("RefaultHistogram", "refault_histogram", NULL)) {
                char hist[CA_REFAULT_BUCKETS * 32] = "";
                size_t len = 0;

                for (size_t j = 0; j < c.n_refault_buckets && len < sizeof(hist); j++)
                        len += (size_t)snprintf(hist + len, sizeof(hist) - len,
                                                "%s%" PRIu32 "%s:%" PRIu64, j ? " " : "",
                                                c.refault_floor[j],
                                                j + 1 == c.n_refault_buckets ? "+" : "",
                                                c.refault_histogram[j]);
                show_line("RefaultHistogram", hist);
        }
        for (size_t j = 0; j < c.n_adapter_stats; j++) {
                if (!property_wanted("AdapterStats", "adapter_stats", c.adapter_stats[j].key))
                        continue;
                snprintf(key, sizeof(key), "AdapterStats.%s", c.adapter_stats[j].key);
                show_value(key, FMT_PLAIN, c.adapter_stats[j].value, now);
        }
        cache_info_clear(&c);
        return check_properties_matched(argv[0]);
}
