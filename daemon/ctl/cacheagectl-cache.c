/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cache's and the manager's properties, read with GetAll into a table keyed by property name,
 * so that the human output, `show` and `--json` agree, and a property the daemon adds later is
 * ignored rather than fatal.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "cacheagectl.h"

_Static_assert(sizeof(struct ca_stats) / sizeof(uint64_t) <= 64, "have_stats is too small");

/* The properties that are not statistics, in the order show and --json print them. */
const struct cache_prop cache_props[] = {
        { "Name", 's', FMT_PLAIN, offsetof(struct cache_info, name) },
        { "Adapter", 's', FMT_PLAIN, offsetof(struct cache_info, adapter) },
        { "Enabled", 'b', FMT_BOOL, offsetof(struct cache_info, enabled) },
        { "IntervalUSec", 't', FMT_DURATION, offsetof(struct cache_info, interval_usec) },
        { "SingleUseAge", 'u', FMT_PLAIN, offsetof(struct cache_info, single_use_age) },
        { "MaxAge", 'u', FMT_PLAIN, offsetof(struct cache_info, max_age) },
        { "Ages", 's', FMT_PLAIN, offsetof(struct cache_info, ages) },
        { "RefaultWindow", 'u', FMT_PLAIN, offsetof(struct cache_info, refault_window) },
        { "TargetRefaultPpm", 'u', FMT_PLAIN, offsetof(struct cache_info, target_refault_ppm) },
        { "ObjectsName", 's', FMT_PLAIN, offsetof(struct cache_info, objects_name) },
        { "PartName", 's', FMT_PLAIN, offsetof(struct cache_info, part_name) },
        { "Mechanism", 's', FMT_PLAIN, offsetof(struct cache_info, mechanism) },
        { "RotationsBehind", 'u', FMT_PLAIN, offsetof(struct cache_info, rotations_behind) },
        { "Deferred", 's', FMT_PLAIN, offsetof(struct cache_info, deferred) },
        { "DeferredSinceUSec", 't', FMT_TIMESTAMP, offsetof(struct cache_info, deferred_since_usec) },
};
const size_t n_cache_props = sizeof(cache_props) / sizeof(cache_props[0]);

void *prop_field(const struct cache_info *c, const struct cache_prop *p)
{
        return (char *)c + p->offset;
}

/* The value of a 't', 'u' or 'b' property. */
uint64_t prop_number(const struct cache_info *c, const struct cache_prop *p)
{
        switch (p->type) {
        case 'u':
                return *(const uint32_t *)prop_field(c, p);
        case 'b':
                return *(const bool *)prop_field(c, p);
        default:
                return *(const uint64_t *)prop_field(c, p);
        }
}

enum fmt stat_fmt(const struct ca_stat_desc *d)
{
        if (strcmp(d->unit, "usec") == 0)
                return FMT_DURATION;
        if (strcmp(d->unit, "timestamp_usec") == 0)
                return FMT_TIMESTAMP;
        return FMT_PLAIN;
}

bool have_stat(const struct cache_info *c, const struct ca_stat_desc *d)
{
        return c->have_stats & (UINT64_C(1) << (d->offset / sizeof(uint64_t)));
}

/* A cache whose adapter counts its objects (the kernel's dentries): it has no nodes. */
bool info_counted(const struct cache_info *c)
{
        return c->mechanism && *c->mechanism;
}

/*
 * A counted cache has no nodes: no ages, no single-use objects, no refaults. show leaves those
 * out of its properties.
 */
bool counted_leaves_out(const struct cache_info *c, const char *name)
{
        static const char *const node_only[] = {
                "SingleUseAge", "MaxAge", "Ages", "RefaultWindow", "TargetRefaultPpm",
                "RefaultHistogram", "single_use_objects", "reclaimed_single_use", "scanned",
                "busy", "kept", "backlog", "refaults", "refault_share_ppm", "remembered",
                "refault_memory_bytes", "current_single_use_age", "current_max_age",
                "own_aged_objects",
        };

        if (!info_counted(c))
                return false;
        for (size_t i = 0; i < sizeof(node_only) / sizeof(node_only[0]); i++)
                if (strcmp(name, node_only[i]) == 0)
                        return true;
        return false;
}

/* The adapter statistic @key, or UINT64_MAX when the cache has none. */
uint64_t adapter_stat_value(const struct cache_info *c, const char *key)
{
        for (size_t i = 0; i < c->n_adapter_stats; i++)
                if (strcmp(c->adapter_stats[i].key, key) == 0)
                        return c->adapter_stats[i].value;
        return UINT64_MAX;
}

void cache_info_clear(struct cache_info *c)
{
        free(c->name);
        free(c->adapter);
        free(c->ages);
        free(c->objects_name);
        free(c->part_name);
        free(c->mechanism);
        for (size_t i = 0; i < c->n_adapter_stats; i++)
                free(c->adapter_stats[i].key);
        free(c->adapter_stats);
        free(c->deferred);
        for (size_t i = 0; i < c->n_parts; i++) {
                free(c->parts[i].name);
                free(c->parts[i].state);
        }
        free(c->parts);
        memset(c, 0, sizeof(*c));
}

static int read_adapter_stats(sd_bus_message *m, struct cache_info *c)
{
        const char *key;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{st}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "{st}", &key, &value)) > 0) {
                struct adapter_stat *v;

                if (c->n_adapter_stats >= CTL_ADAPTER_STATS_MAX)
                        continue;
                v = realloc(c->adapter_stats, (c->n_adapter_stats + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                c->adapter_stats = v;
                v[c->n_adapter_stats].key = strdup(key);
                if (!v[c->n_adapter_stats].key)
                        return -ENOMEM;
                v[c->n_adapter_stats++].value = value;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* A property's variant holding an array of @item ("(sttt)"): entered, or left (both levels). */
static int enter_array(sd_bus_message *m, const char *item)
{
        char type[32];
        int r;

        snprintf(type, sizeof(type), "a%s", item);
        r = sd_bus_message_enter_container(m, 'v', type);
        if (r < 0)
                return r;
        return sd_bus_message_enter_container(m, 'a', item);
}

static int exit_array(sd_bus_message *m)
{
        int r = sd_bus_message_exit_container(m);

        return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* Parts: a(sttt), (name, bytes, reclaimed, reclaimed bytes); past CTL_PARTS_MAX ignored. */
static int read_parts(sd_bus_message *m, struct cache_info *c)
{
        struct part_info p;
        const char *name;
        int r;

        r = enter_array(m, "(sttt)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sttt)", &name, &p.bytes, &p.reclaimed,
                                        &p.reclaimed_bytes)) > 0) {
                struct part_info *v;

                if (c->n_parts >= CTL_PARTS_MAX)
                        continue;
                v = realloc(c->parts, (c->n_parts + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                c->parts = v;
                p.name = strdup(name);
                if (!p.name)
                        return -ENOMEM;
                p.state = NULL;
                c->parts[c->n_parts++] = p;
        }
        return r < 0 ? r : exit_array(m);
}

/*
 * PartStates: a(ss), the parts not aged as the rest and why; each state goes to its part of
 * Parts (read before it: GetAll sends them in the vtable's order).
 */
static int read_part_states(sd_bus_message *m, struct cache_info *c)
{
        const char *name, *state;
        int r;

        r = enter_array(m, "(ss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(ss)", &name, &state)) > 0)
                for (size_t i = 0; i < c->n_parts; i++)
                        if (!c->parts[i].state && strcmp(c->parts[i].name, name) == 0) {
                                c->parts[i].state = strdup(state);
                                if (!c->parts[i].state)
                                        return -ENOMEM;
                                break;
                        }
        return r < 0 ? r : exit_array(m);
}

/* RefaultHistogram: a(ut), (lowest distance of the bucket, refaults); extra buckets ignored. */
static int read_refault_histogram(sd_bus_message *m, struct cache_info *c)
{
        uint32_t floor;
        uint64_t n;
        int r;

        r = enter_array(m, "(ut)");
        if (r < 0)
                return r;
        c->n_refault_buckets = 0;
        while ((r = sd_bus_message_read(m, "(ut)", &floor, &n)) > 0)
                if (c->n_refault_buckets < CA_REFAULT_BUCKETS) {
                        c->refault_floor[c->n_refault_buckets] = floor;
                        c->refault_histogram[c->n_refault_buckets++] = n;
                }
        if (r < 0)
                return r;
        c->have_refault_histogram = true;
        return exit_array(m);
}

static int read_prop(sd_bus_message *m, const struct cache_prop *p, struct cache_info *c)
{
        const char *s;
        char **field;
        int b, r;

        switch (p->type) {
        case 's':
                r = sd_bus_message_read(m, "v", "s", &s);
                if (r < 0)
                        return r;
                field = prop_field(c, p);
                free(*field);
                *field = strdup(s);
                return *field ? 0 : -ENOMEM;
        case 'u':
                return sd_bus_message_read(m, "v", "u", (uint32_t *)prop_field(c, p));
        case 'b':
                r = sd_bus_message_read(m, "v", "b", &b);
                if (r >= 0)
                        *(bool *)prop_field(c, p) = b;
                return r;
        default:
                return sd_bus_message_read(m, "v", "t", (uint64_t *)prop_field(c, p));
        }
}

/* Read one property of a GetAll reply's a{sv} into @c; unknown ones are skipped. */
static int read_cache_property(sd_bus_message *m, const char *name, struct cache_info *c)
{
        const struct ca_stat_desc *d;
        uint64_t t;
        int r;

        for (size_t i = 0; i < n_cache_props; i++)
                if (strcmp(cache_props[i].name, name) == 0) {
                        r = read_prop(m, &cache_props[i], c);
                        if (r < 0)
                                return r;
                        c->have_props |= 1u << i;
                        return 0;
                }
        d = ca_stat_desc_find(name);
        if (d && strcmp(d->property, name) == 0) {
                r = sd_bus_message_read(m, "v", "t", &t);
                if (r < 0)
                        return r;
                memcpy((char *)&c->stats + d->offset, &t, sizeof(t));
                c->have_stats |= UINT64_C(1) << (d->offset / sizeof(uint64_t));
                return 0;
        }
        if (strcmp(name, "RefaultHistogram") == 0)
                return read_refault_histogram(m, c);
        if (strcmp(name, "Parts") == 0)
                return read_parts(m, c);
        if (strcmp(name, "PartStates") == 0)
                return read_part_states(m, c);
        if (strcmp(name, "AdapterStats") == 0) {
                r = sd_bus_message_enter_container(m, 'v', "a{st}");
                if (r < 0)
                        return r;
                r = read_adapter_stats(m, c);
                if (r < 0)
                        return r;
                c->have_adapter_stats = true;
                return sd_bus_message_exit_container(m);
        }
        return sd_bus_message_skip(m, "v");
}

int get_cache(sd_bus *bus, const char *name, struct cache_info *ret)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct cache_info c = { 0 };
        char *path = NULL;
        const char *prop;
        int r;

        r = sd_bus_path_encode(CA_BUS_CACHE_PREFIX, name, &path);
        if (r < 0)
                return fail(EXIT_FAILED, "Out of memory");
        r = sd_bus_call_method(bus, CA_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
                               &error, &reply, "s", CA_BUS_CACHE_IFACE);
        free(path);
        if (r < 0) {
                r = call_failed(&error, r, "show", name);
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &prop);
                if (r >= 0)
                        r = read_cache_property(reply, prop, &c);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        sd_bus_message_unref(reply);
        if (r < 0) {
                cache_info_clear(&c);
                return fail(EXIT_FAILED, "Failed to parse the properties of %s: %s", name,
                            strerror(-r));
        }
        *ret = c;
        return 0;
}


void manager_info_clear(struct manager_info *m)
{
        free(m->version);
        free(m->drop_in_dir);
        for (size_t i = 0; i < m->n_names; i++)
                free(m->names[i]);
        free(m->names);
        memset(m, 0, sizeof(*m));
}

int get_manager(sd_bus *bus, struct manager_info *ret)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct manager_info m = { 0 };
        const char *s, *adapter, *path;
        int r;

        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH,
                               "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s",
                               CA_BUS_MANAGER_IFACE);
        if (r < 0)
                goto out_call;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &s);
                if (r < 0)
                        break;
                if (strcmp(s, "Version") == 0) {
                        r = sd_bus_message_read(reply, "v", "s", &s);
                        if (r >= 0) {
                                free(m.version);
                                m.version = strdup(s);
                        }
                } else if (strcmp(s, "DropInDirectory") == 0) {
                        r = sd_bus_message_read(reply, "v", "s", &s);
                        if (r >= 0) {
                                free(m.drop_in_dir);
                                m.drop_in_dir = strdup(s);
                        }
                } else if (strcmp(s, "StartTimestampUSec") == 0) {
                        r = sd_bus_message_read(reply, "v", "t", &m.start_usec);
                } else if (strcmp(s, "DefaultIntervalUSec") == 0) {
                        r = sd_bus_message_read(reply, "v", "t", &m.default_interval_usec);
                } else {
                        r = sd_bus_message_skip(reply, "v");
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        reply = sd_bus_message_unref(reply);
        if (r < 0)
                goto out_parse;

        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "ListCaches", &error, &reply, NULL);
        if (r < 0)
                goto out_call;
        r = sd_bus_message_enter_container(reply, 'a', "(sso)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(sso)", &s, &adapter, &path)) > 0) {
                char **v;

                if (m.n_names >= CTL_CACHES_MAX)
                        continue;
                v = realloc(m.names, (m.n_names + 1) * sizeof(*v));
                if (!v) {
                        r = -ENOMEM;
                        break;
                }
                m.names = v;
                m.names[m.n_names] = strdup(s);
                if (!m.names[m.n_names]) {
                        r = -ENOMEM;
                        break;
                }
                m.n_names++;
        }
        sd_bus_message_unref(reply);
        if (r < 0)
                goto out_parse;
        *ret = m;
        return 0;

out_call:
        manager_info_clear(&m);
        r = call_failed(&error, r, "query cacheaged", NULL);
        sd_bus_error_free(&error);
        return r;
out_parse:
        manager_info_clear(&m);
        return fail(EXIT_FAILED, "Failed to parse the reply of cacheaged: %s", strerror(-r));
}
