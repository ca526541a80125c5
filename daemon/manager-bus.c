/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheaged's D-Bus API: only the sd-bus vtables, their handlers, and the glue that drives
 * sd-bus from the manager's libevent loop. Every change goes through the manager_* setters.
 *
 * Loop glue: libevent 2.1 has no "prepare" hook, so after every sd_bus_process() batch and
 * after anything else that queued bus traffic (a signal, a reply) we re-read the fd's
 * events and sd-bus's timeout (absolute CLOCK_MONOTONIC µs) and re-arm our two events.
 * Both run at libevent priority 0, above the aging slices, so the bus answers while a
 * large cache ages.
 *
 * A lost connection is logged and retried with a backoff timer; the caches keep aging.
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <systemd/sd-bus.h>

/* The build's config.h (CA_VERSION); "config.h" alone is the parser's, beside this file. */
#include "cacheage-build.h"
#include "config.h"
#include "log.h"
#include "manager.h"

#define BUS_NAME "org.cacheage.CacheAge1"
#define BUS_MANAGER_PATH "/org/cacheage/CacheAge1"
#define BUS_MANAGER_INTERFACE "org.cacheage.CacheAge1.Manager"
#define BUS_CACHE_PREFIX "/org/cacheage/CacheAge1/cache"
#define BUS_CACHE_INTERFACE "org.cacheage.CacheAge1.Cache"
#define BUS_LOG_PATH "/org/freedesktop/LogControl1"
#define BUS_LOG_INTERFACE "org.freedesktop.LogControl1"
#define BUS_ERROR_CONFIG "org.cacheage.CacheAge1.ConfigError"

#define BUS_RECONNECT_MIN_USEC 500000ULL   /* first retry after a lost connection */
#define BUS_RECONNECT_MAX_USEC 30000000ULL /* backoff ceiling */
#define BUS_PROCESS_MAX 64                 /* messages handled before yielding to the loop */

struct manager_bus {
        struct manager *manager;
        char *address; /* "system", "user" or a D-Bus address */
        sd_bus *bus;
        struct event *io_event;
        struct event *time_event;
        struct event *reconnect_event;
        uint64_t reconnect_usec; /* the next backoff */
        int io_fd;
        short io_flags;
};

static const char *const cache_changed_properties[] = {
        "IntervalUSec", "SingleUseAge", "MaxAge", "Enabled", "Objects", "SingleUseObjects",
        "Bytes", "Rotations", "Scanned", "Reclaimed", "ReclaimedSingleUse", "Busy", "Kept",
        "LastRotationUSec", "LastRotationDurationUSec", "LongestSliceUSec", "Backlog",
        "AdapterStats", NULL,
};

static void bus_rearm(struct manager_bus *b);
static int bus_connect(struct manager_bus *b);
static void bus_disconnect(struct manager_bus *b);

/* ---- helpers ---- */

static struct manager_cache *cache_from_name_or_error(struct manager *m, const char *name,
                                                      sd_bus_error *error)
{
        struct manager_cache *c = manager_find_cache(m, name);

        if (!c)
                sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_OBJECT, "No cache named %s", name);
        return c;
}

static void cache_params(const struct manager_cache *c, struct ca_params *ret)
{
        const struct ca_conf_cache *cc;

        if (c->cache) {
                ca_cache_get_params(c->cache, ret);
                return;
        }
        /* Not registered (yet): what the configuration asks for. */
        cc = ca_conf_find_cache(manager_conf(c->manager), c->name);
        *ret = cc ? cc->params : CA_PARAMS_DEFAULT;
}

static int cache_path(const struct manager_cache *c, char **ret)
{
        if (c->object_path) {
                char *p = strdup(c->object_path);

                if (!p)
                        return -ENOMEM;
                *ret = p;
                return 0;
        }
        return sd_bus_path_encode(BUS_CACHE_PREFIX, c->name, ret);
}

/* ---- org.cacheage.CacheAge1.Manager ---- */

static int method_list_caches(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager *m = userdata;
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sso)");
        if (r < 0)
                goto out_unref;
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                struct manager_cache *c = manager_cache_at(m, i);
                char *path = NULL;

                r = cache_path(c, &path);
                if (r < 0)
                        goto out_unref;
                r = sd_bus_message_append(reply, "(sso)", c->name, c->adapter, path);
                free(path);
                if (r < 0)
                        goto out_unref;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                goto out_unref;
        r = sd_bus_send(NULL, reply, NULL);
out_unref:
        sd_bus_message_unref(reply);
        return r;
}

/* The "s name" argument of the manager's methods: a cache, or NULL for "" (all of them). */
static int read_cache_name(sd_bus_message *msg, struct manager *m, struct manager_cache **ret,
                           sd_bus_error *error)
{
        struct manager_cache *c = NULL;
        const char *name;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        if (name[0]) {
                c = cache_from_name_or_error(m, name, error);
                if (!c)
                        return -ENOENT;
        }
        *ret = c;
        return 0;
}

static int method_manager_rotate(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager *m = userdata;
        struct manager_cache *c;
        int r;

        r = read_cache_name(msg, m, &c, error);
        if (r < 0)
                return r;
        r = manager_rotate(m, c);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to rotate %s: %m",
                                               c ? c->name : "the caches");
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_manager_reset_statistics(sd_bus_message *msg, void *userdata,
                                           sd_bus_error *error)
{
        struct manager *m = userdata;
        struct manager_cache *c;
        int r;

        r = read_cache_name(msg, m, &c, error);
        if (r < 0)
                return r;
        manager_reset_statistics(m, c);
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                struct manager_cache *x = manager_cache_at(m, i);

                if (!c || x == c) {
                        char *path = NULL;

                        if (cache_path(x, &path) >= 0)
                                (void)sd_bus_emit_properties_changed_strv(
                                        sd_bus_message_get_bus(msg), path, BUS_CACHE_INTERFACE,
                                        (char **)cache_changed_properties);
                        free(path);
                }
        }
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager *m = userdata;
        struct ca_errors errors = { 0 };
        char *text = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        r = manager_reload(m, &errors);
        if (r >= 0) {
                /* The manager has said PropertiesChanged for every kept cache. */
                ca_errors_clear(&errors);
                return sd_bus_reply_method_return(msg, NULL);
        }

        /* The reply carries every config error, one per line, as the log does. */
        f = open_memstream(&text, &len);
        if (f) {
                for (size_t i = 0; i < errors.n; i++)
                        fprintf(f, "%s%s", i ? "\n" : "", errors.v[i]);
                if (errors.n == 0)
                        fprintf(f, "Reload failed: %s", strerror(-r));
                fclose(f);
        }
        ca_errors_clear(&errors);
        r = sd_bus_error_set(error, BUS_ERROR_CONFIG,
                             text ? text : "Reload failed, the configuration was kept");
        free(text);
        return r;
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface,
                                const char *property, sd_bus_message *reply, void *userdata,
                                sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", CA_VERSION);
}

static int property_get_default_interval(sd_bus *bus, const char *path, const char *interface,
                                         const char *property, sd_bus_message *reply,
                                         void *userdata, sd_bus_error *error)
{
        return sd_bus_message_append(reply, "t", manager_default_interval_usec(userdata));
}

static int interval_error(sd_bus_error *error, const char *property)
{
        char lo[CA_DURATION_MAX_STR], hi[CA_DURATION_MAX_STR];

        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "%s must be between %s and %s", property,
                                 ca_format_duration(CA_INTERVAL_MIN_USEC, lo, sizeof(lo)),
                                 ca_format_duration(CA_INTERVAL_MAX_USEC, hi, sizeof(hi)));
}

static void emit_cache(struct manager_bus *b, struct manager_cache *c, const char *const *names)
{
        char *path = NULL;

        if (!b || !b->bus || cache_path(c, &path) < 0)
                return;
        (void)sd_bus_emit_properties_changed_strv(b->bus, path, BUS_CACHE_INTERFACE,
                                                  (char **)names);
        free(path);
        bus_rearm(b);
}

static int property_set_default_interval(sd_bus *bus, const char *path, const char *interface,
                                         const char *property, sd_bus_message *value,
                                         void *userdata, sd_bus_error *error)
{
        static const char *const names[] = { "IntervalUSec", NULL };
        struct manager *m = userdata;
        uint64_t usec;
        int r;

        r = sd_bus_message_read(value, "t", &usec);
        if (r < 0)
                return r;
        /* The setters refuse what is out of range (-EINVAL) and then change nothing. */
        r = manager_set_default_interval(m, usec);
        if (r < 0)
                return interval_error(error, property);
        (void)sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                struct manager_cache *c = manager_cache_at(m, i);
                char *p = NULL;

                if (c->interval_is_default && cache_path(c, &p) >= 0)
                        (void)sd_bus_emit_properties_changed_strv(bus, p, BUS_CACHE_INTERFACE,
                                                                  (char **)names);
                free(p);
        }
        return 0;
}

static int property_get_caches(sd_bus *bus, const char *path, const char *interface,
                               const char *property, sd_bus_message *reply, void *userdata,
                               sd_bus_error *error)
{
        struct manager *m = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        if (r < 0)
                return r;
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                r = sd_bus_message_append(reply, "s", manager_cache_at(m, i)->name);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int property_get_start_timestamp(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply,
                                        void *userdata, sd_bus_error *error)
{
        return sd_bus_message_append(reply, "t", manager_start_realtime_usec(userdata));
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("StartTimestampUSec", "t", property_get_start_timestamp, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_WRITABLE_PROPERTY("DefaultIntervalUSec", "t", property_get_default_interval,
                                 property_set_default_interval, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Caches", "as", property_get_caches, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("ListCaches", SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(sso)", caches), method_list_caches,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Rotate", SD_BUS_ARGS("s", name), SD_BUS_NO_RESULT,
                                method_manager_rotate, 0),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload, 0),
        SD_BUS_METHOD_WITH_ARGS("ResetStatistics", SD_BUS_ARGS("s", name), SD_BUS_NO_RESULT,
                                method_manager_reset_statistics, 0),
        SD_BUS_VTABLE_END,
};

/* ---- org.cacheage.CacheAge1.Cache, one object per cache ---- */

static int cache_object_find(sd_bus *bus, const char *path, const char *interface,
                             void *userdata, void **ret_found, sd_bus_error *error)
{
        struct manager *m = userdata;
        struct manager_cache *c;
        char *name = NULL;
        int r;

        r = sd_bus_path_decode(path, BUS_CACHE_PREFIX, &name);
        if (r <= 0)
                return 0;
        c = manager_find_cache(m, name);
        free(name);
        if (!c)
                return 0;
        *ret_found = c;
        return 1;
}

static int cache_node_enumerator(sd_bus *bus, const char *prefix, void *userdata,
                                 char ***ret_nodes, sd_bus_error *error)
{
        struct manager *m = userdata;
        size_t n = manager_n_caches(m);
        char **v;
        int r;

        v = calloc(n + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = cache_path(manager_cache_at(m, i), &v[i]);
                if (r < 0) {
                        for (size_t j = 0; j < i; j++)
                                free(v[j]);
                        free(v);
                        return r;
                }
        }
        *ret_nodes = v;
        return 0;
}

static int property_get_cache_string(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error)
{
        struct manager_cache *c = userdata;

        return sd_bus_message_append(reply, "s", strcmp(property, "Name") == 0 ? c->name
                                                                                 : c->adapter);
}

static int property_get_interval(sd_bus *bus, const char *path, const char *interface,
                                 const char *property, sd_bus_message *reply, void *userdata,
                                 sd_bus_error *error)
{
        struct manager_cache *c = userdata;

        return sd_bus_message_append(reply, "t", c->interval_usec);
}

static int property_set_interval(sd_bus *bus, const char *path, const char *interface,
                                 const char *property, sd_bus_message *value, void *userdata,
                                 sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        uint64_t usec;
        int r;

        r = sd_bus_message_read(value, "t", &usec);
        if (r < 0)
                return r;
        /* The setters refuse what is out of range (-EINVAL) and then change nothing. */
        r = manager_cache_set_interval(c, usec);
        if (r < 0)
                return interval_error(error, property);
        return sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
}

static int property_get_age(sd_bus *bus, const char *path, const char *interface,
                            const char *property, sd_bus_message *reply, void *userdata,
                            sd_bus_error *error)
{
        struct ca_params p;

        cache_params(userdata, &p);
        return sd_bus_message_append(reply, "u", strcmp(property, "SingleUseAge") == 0
                                                         ? p.single_use_age
                                                         : p.max_age);
}

static int property_set_age(sd_bus *bus, const char *path, const char *interface,
                            const char *property, sd_bus_message *value, void *userdata,
                            sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        struct ca_params p;
        uint32_t age;
        int r;

        r = sd_bus_message_read(value, "u", &age);
        if (r < 0)
                return r;
        if (age < 1 || age > CA_AGE_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s must be between 1 and %u rotations", property,
                                         (unsigned)CA_AGE_MAX);
        cache_params(c, &p);
        if (strcmp(property, "SingleUseAge") == 0)
                p.single_use_age = age;
        else
                p.max_age = age;
        if (p.max_age < p.single_use_age)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "MaxAge must not be below SingleUseAge (%u < %u)",
                                         p.max_age, p.single_use_age);
        r = manager_cache_set_params(c, &p);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to set %s: %m", property);
        return sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
}

static int property_get_enabled(sd_bus *bus, const char *path, const char *interface,
                                const char *property, sd_bus_message *reply, void *userdata,
                                sd_bus_error *error)
{
        struct manager_cache *c = userdata;

        return sd_bus_message_append(reply, "b", (int)c->enabled);
}

static int property_set_enabled(sd_bus *bus, const char *path, const char *interface,
                                const char *property, sd_bus_message *value, void *userdata,
                                sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        int b, r;

        r = sd_bus_message_read(value, "b", &b);
        if (r < 0)
                return r;
        r = manager_cache_set_enabled(c, b);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to set %s: %m", property);
        return sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
}

/* The statistics, by property name: one table so that getter and signal agree. */
static int stat_value(const struct manager_cache *c, const char *property, uint64_t *ret)
{
        static const struct {
                const char *name;
                size_t offset;
        } table[] = {
                { "Objects", offsetof(struct ca_stats, objects) },
                { "SingleUseObjects", offsetof(struct ca_stats, single_use_objects) },
                { "Bytes", offsetof(struct ca_stats, bytes) },
                { "Rotations", offsetof(struct ca_stats, rotations) },
                { "Scanned", offsetof(struct ca_stats, scanned) },
                { "Reclaimed", offsetof(struct ca_stats, reclaimed) },
                { "ReclaimedSingleUse", offsetof(struct ca_stats, reclaimed_single_use) },
                { "Busy", offsetof(struct ca_stats, busy) },
                { "Kept", offsetof(struct ca_stats, kept) },
                { "LastRotationDurationUSec",
                  offsetof(struct ca_stats, last_rotation_duration_usec) },
                { "LongestSliceUSec", offsetof(struct ca_stats, longest_slice_usec) },
                { "Backlog", offsetof(struct ca_stats, backlog) },
        };
        struct ca_stats st = { 0 };

        if (strcmp(property, "LastRotationUSec") == 0) {
                *ret = c->last_rotation_realtime_usec;
                return 0;
        }
        manager_cache_stats(c, &st);
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (strcmp(table[i].name, property) == 0) {
                        memcpy(ret, (const char *)&st + table[i].offset, sizeof(uint64_t));
                        return 0;
                }
        return -ENOENT;
}

static int property_get_stat(sd_bus *bus, const char *path, const char *interface,
                             const char *property, sd_bus_message *reply, void *userdata,
                             sd_bus_error *error)
{
        uint64_t v;
        int r;

        r = stat_value(userdata, property, &v);
        if (r < 0)
                return r;
        return sd_bus_message_append(reply, "t", v);
}

struct adapter_stats_ctx {
        sd_bus_message *reply;
        int r;
};

static void adapter_stat_emit(void *userdata, const char *key, uint64_t value)
{
        struct adapter_stats_ctx *ctx = userdata;

        if (ctx->r >= 0 && key)
                ctx->r = sd_bus_message_append(ctx->reply, "{st}", key, value);
}

static int property_get_adapter_stats(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply,
                                      void *userdata, sd_bus_error *error)
{
        struct adapter_stats_ctx ctx = { .reply = reply };
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{st}");
        if (r < 0)
                return r;
        manager_cache_adapter_stats(userdata, adapter_stat_emit, &ctx);
        if (ctx.r < 0)
                return ctx.r;
        return sd_bus_message_close_container(reply);
}

static int method_cache_rotate(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        int r;

        r = manager_rotate(c->manager, c);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to rotate %s: %m", c->name);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_cache_reset_statistics(sd_bus_message *msg, void *userdata,
                                         sd_bus_error *error)
{
        struct manager_cache *c = userdata;

        manager_reset_statistics(c->manager, c);
        (void)sd_bus_emit_properties_changed_strv(sd_bus_message_get_bus(msg),
                                                  sd_bus_message_get_path(msg),
                                                  BUS_CACHE_INTERFACE,
                                                  (char **)cache_changed_properties);
        return sd_bus_reply_method_return(msg, NULL);
}

#define STAT_PROPERTY(name)                                                                \
        SD_BUS_PROPERTY(name, "t", property_get_stat, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

static const sd_bus_vtable cache_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", property_get_cache_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Adapter", "s", property_get_cache_string, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_WRITABLE_PROPERTY("IntervalUSec", "t", property_get_interval,
                                 property_set_interval, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_WRITABLE_PROPERTY("SingleUseAge", "u", property_get_age, property_set_age, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_WRITABLE_PROPERTY("MaxAge", "u", property_get_age, property_set_age, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_WRITABLE_PROPERTY("Enabled", "b", property_get_enabled, property_set_enabled, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        STAT_PROPERTY("Objects"),
        STAT_PROPERTY("SingleUseObjects"),
        STAT_PROPERTY("Bytes"),
        STAT_PROPERTY("Rotations"),
        STAT_PROPERTY("Scanned"),
        STAT_PROPERTY("Reclaimed"),
        STAT_PROPERTY("ReclaimedSingleUse"),
        STAT_PROPERTY("Busy"),
        STAT_PROPERTY("Kept"),
        STAT_PROPERTY("LastRotationUSec"),
        STAT_PROPERTY("LastRotationDurationUSec"),
        STAT_PROPERTY("LongestSliceUSec"),
        STAT_PROPERTY("Backlog"),
        SD_BUS_PROPERTY("AdapterStats", "a{st}", property_get_adapter_stats, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD("Rotate", NULL, NULL, method_cache_rotate, 0),
        SD_BUS_METHOD("ResetStatistics", NULL, NULL, method_cache_reset_statistics, 0),
        SD_BUS_VTABLE_END,
};

/* ---- org.freedesktop.LogControl1, for "systemctl service-log-level" ---- */

static int property_get_log_level(sd_bus *bus, const char *path, const char *interface,
                                  const char *property, sd_bus_message *reply, void *userdata,
                                  sd_bus_error *error)
{
        const char *s = log_level_to_string(manager_get_log_level(userdata));

        return sd_bus_message_append(reply, "s", s ? s : "info");
}

static int property_set_log_level(sd_bus *bus, const char *path, const char *interface,
                                  const char *property, sd_bus_message *value, void *userdata,
                                  sd_bus_error *error)
{
        const char *s;
        int level, r;

        r = sd_bus_message_read(value, "s", &s);
        if (r < 0)
                return r;
        level = log_level_from_string(s);
        if (level < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid log level '%s'", s);
        manager_set_log_level(userdata, level);
        log_info("Log level set to %s.", log_level_to_string(level));
        return sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
}

/* We only ever write to stderr, which systemd connects to the journal. */
static int property_get_log_target(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *reply, void *userdata,
                                   sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", "console");
}

static int property_set_log_target(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *value, void *userdata,
                                   sd_bus_error *error)
{
        const char *s;
        int r;

        r = sd_bus_message_read(value, "s", &s);
        if (r < 0)
                return r;
        if (strcmp(s, "console") != 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                         "Log target '%s' is not supported, only 'console'", s);
        return 0;
}

static int property_get_syslog_identifier(sd_bus *bus, const char *path, const char *interface,
                                          const char *property, sd_bus_message *reply,
                                          void *userdata, sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", "cacheaged");
}

static const sd_bus_vtable log_control_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_WRITABLE_PROPERTY("LogLevel", "s", property_get_log_level,
                                 property_set_log_level, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_WRITABLE_PROPERTY("LogTarget", "s", property_get_log_target,
                                 property_set_log_target, 0, 0),
        SD_BUS_PROPERTY("SyslogIdentifier", "s", property_get_syslog_identifier, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END,
};

/* ---- driving sd-bus from libevent ---- */

static void bus_schedule_reconnect(struct manager_bus *b)
{
        struct timeval tv = {
                .tv_sec = (time_t)(b->reconnect_usec / 1000000),
                .tv_usec = (suseconds_t)(b->reconnect_usec % 1000000),
        };

        log_warning("Reconnecting to the bus in %.1fs.", (double)b->reconnect_usec / 1e6);
        evtimer_add(b->reconnect_event, &tv);
        b->reconnect_usec *= 2;
        if (b->reconnect_usec > BUS_RECONNECT_MAX_USEC)
                b->reconnect_usec = BUS_RECONNECT_MAX_USEC;
}

static void bus_lost(struct manager_bus *b, int error)
{
        if (error < 0)
                log_error_errno(error, "Lost the bus connection: %m");
        else
                log_error("Lost the bus connection.");
        bus_disconnect(b);
        bus_schedule_reconnect(b);
}

static void bus_process(struct manager_bus *b)
{
        int r = 0;

        /*
         * Bounded, so that a flood of requests cannot starve the timers; what is left is
         * seen again at once because sd-bus then asks for a zero timeout.
         */
        for (unsigned i = 0; i < BUS_PROCESS_MAX; i++) {
                r = sd_bus_process(b->bus, NULL);
                if (r <= 0)
                        break;
        }
        if (r < 0 || sd_bus_is_open(b->bus) <= 0) {
                bus_lost(b, r);
                return;
        }
        bus_rearm(b);
}

static void bus_io_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct manager_bus *b = userdata;

        b->io_flags = 0; /* the event was one-shot */
        if (b->bus)
                bus_process(b);
}

static void bus_time_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct manager_bus *b = userdata;

        if (b->bus)
                bus_process(b);
}

static void bus_reconnect_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct manager_bus *b = userdata;
        int r;

        r = bus_connect(b);
        if (r < 0) {
                bus_disconnect(b);
                bus_schedule_reconnect(b);
                return;
        }
        log_info("Reconnected to the bus.");
        b->reconnect_usec = BUS_RECONNECT_MIN_USEC;
        manager_bus_caches_changed(b);
}

static void bus_rearm(struct manager_bus *b)
{
        short flags = 0;
        uint64_t until;
        int fd, events, r;

        if (!b || !b->bus)
                return;

        fd = sd_bus_get_fd(b->bus);
        events = sd_bus_get_events(b->bus);
        if (fd < 0 || events < 0) {
                /* Closed under us: let the timer notice at once, outside any callback. */
                struct timeval now = { 0, 0 };

                evtimer_add(b->time_event, &now);
                return;
        }
        if (events & POLLIN)
                flags |= EV_READ;
        if (events & POLLOUT)
                flags |= EV_WRITE;
        if (fd != b->io_fd || flags != b->io_flags) {
                event_del(b->io_event);
                event_assign(b->io_event, manager_event_base(b->manager), fd, flags, bus_io_cb,
                             b);
                event_priority_set(b->io_event, 0);
                b->io_fd = fd;
                b->io_flags = flags;
                if (flags)
                        event_add(b->io_event, NULL);
        }

        r = sd_bus_get_timeout(b->bus, &until);
        if (r <= 0 || until == UINT64_MAX) {
                evtimer_del(b->time_event);
        } else {
                uint64_t now = ca_now_usec(), rel = until > now ? until - now : 0;
                struct timeval tv = {
                        .tv_sec = (time_t)(rel / 1000000),
                        .tv_usec = (suseconds_t)(rel % 1000000),
                };

                evtimer_add(b->time_event, &tv);
        }
}

static int bus_open(const char *address, sd_bus **ret)
{
        sd_bus *bus = NULL;
        int r;

        if (strcmp(address, "system") == 0)
                return sd_bus_open_system_with_description(ret, "cacheaged");
        if (strcmp(address, "user") == 0)
                return sd_bus_open_user_with_description(ret, "cacheaged");

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                goto out_unref;
        (void)sd_bus_set_description(bus, "cacheaged");
        r = sd_bus_set_bus_client(bus, 1);
        if (r < 0)
                goto out_unref;
        /*
         * A bus given by address is treated like the system bus: sd-bus checks the caller's
         * privilege for every member not marked unprivileged.
         */
        r = sd_bus_set_trusted(bus, 0);
        if (r < 0)
                goto out_unref;
        r = sd_bus_start(bus);
        if (r < 0)
                goto out_unref;
        *ret = bus;
        return 0;
out_unref:
        sd_bus_unref(bus);
        return r;
}

static const char *bus_describe(const char *address)
{
        if (strcmp(address, "system") == 0)
                return "the system bus";
        if (strcmp(address, "user") == 0)
                return "the user bus";
        return address;
}

static int bus_connect(struct manager_bus *b)
{
        struct manager *m = b->manager;
        int r;

        r = bus_open(b->address, &b->bus);
        if (r < 0) {
                b->bus = NULL;
                return log_error_errno(r, "Failed to connect to %s: %m", bus_describe(b->address));
        }

        r = sd_bus_add_object_vtable(b->bus, NULL, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE,
                                     manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register the manager object: %m");
        r = sd_bus_add_fallback_vtable(b->bus, NULL, BUS_CACHE_PREFIX, BUS_CACHE_INTERFACE,
                                       cache_vtable, cache_object_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register the cache objects: %m");
        r = sd_bus_add_node_enumerator(b->bus, NULL, BUS_CACHE_PREFIX, cache_node_enumerator, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register the cache enumerator: %m");
        r = sd_bus_add_object_vtable(b->bus, NULL, BUS_LOG_PATH, BUS_LOG_INTERFACE,
                                     log_control_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register the log control object: %m");

        /* No queueing: a second daemon on the same bus is a mistake, said at once. */
        r = sd_bus_request_name(b->bus, BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is already taken on %s: is another "
                                          "cacheaged running?",
                                       BUS_NAME, bus_describe(b->address));
        if (r == -EACCES || r == -EPERM)
                return log_error_errno(r, "Not allowed to own %s on %s: %m (is "
                                          "org.cacheage.CacheAge1.conf installed in the bus's "
                                          "system.d, and is cacheaged running as root?)",
                                       BUS_NAME, bus_describe(b->address));
        if (r < 0)
                return log_error_errno(r, "Failed to acquire the name %s on %s: %m", BUS_NAME,
                                       bus_describe(b->address));

        b->io_fd = -1;
        b->io_flags = 0;
        bus_rearm(b);
        log_debug("Serving %s on %s.", BUS_NAME, bus_describe(b->address));
        return 0;
}

static void bus_disconnect(struct manager_bus *b)
{
        if (b->io_event)
                event_del(b->io_event);
        if (b->time_event)
                evtimer_del(b->time_event);
        b->io_fd = -1;
        b->io_flags = 0;
        /* Slots are floating (NULL): unref'ing the bus drops every vtable with it. */
        b->bus = sd_bus_flush_close_unref(b->bus);
}

int manager_bus_new(struct manager *m, const char *bus, struct manager_bus **ret)
{
        struct event_base *base = manager_event_base(m);
        struct manager_bus *b;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->manager = m;
        b->io_fd = -1;
        b->reconnect_usec = BUS_RECONNECT_MIN_USEC;
        b->address = strdup(bus ? bus : "system");
        /* The io event is assigned for real once the fd is known. */
        b->io_event = event_new(base, -1, 0, bus_io_cb, b);
        b->time_event = evtimer_new(base, bus_time_cb, b);
        b->reconnect_event = evtimer_new(base, bus_reconnect_cb, b);
        if (!b->address || !b->io_event || !b->time_event || !b->reconnect_event) {
                r = -ENOMEM;
                goto out_free;
        }
        event_priority_set(b->time_event, 0);

        r = bus_connect(b);
        if (r < 0)
                goto out_free;
        *ret = b;
        return 0;
out_free:
        manager_bus_free(b);
        return r;
}

struct manager_bus *manager_bus_free(struct manager_bus *b)
{
        if (!b)
                return NULL;
        bus_disconnect(b);
        if (b->io_event)
                event_free(b->io_event);
        if (b->time_event)
                event_free(b->time_event);
        if (b->reconnect_event)
                event_free(b->reconnect_event);
        free(b->address);
        free(b);
        return NULL;
}

void manager_bus_cache_changed(struct manager_bus *b, struct manager_cache *c)
{
        if (!c)
                return;
        emit_cache(b, c, cache_changed_properties);
}

void manager_bus_caches_changed(struct manager_bus *b)
{
        if (!b || !b->bus)
                return;
        (void)sd_bus_emit_properties_changed(b->bus, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE,
                                             "Caches", NULL);
        bus_rearm(b);
}
