/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheaged's D-Bus API: only the sd-bus vtables of org.cacheage.CacheAge1.Manager and of
 * the .Cache objects, and their handlers. Every change goes through the manager_* setters;
 * the connection itself is bus-loop.c's, LogControl1 is logcontrol-bus.c's.
 *
 * The Cache statistics are not listed here: the vtable gets one property per descriptor of
 * struct ca_stats (ca_stat_descs()), so a statistic the library adds appears on the bus, in
 * PropertiesChanged and in cacheagectl without a change here.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "bus-loop.h"
#include "bus-polkit.h"
/* The build's config.h (CA_VERSION); "config.h" alone is the parser's, beside this file. */
#include "cacheage-build.h"
#include "config.h"
#include "history.h"
#include "log.h"
#include "logcontrol-bus.h"
#include "manager-bus.h"
#include "manager.h"
#include "metrics.h"

/* ---- helpers ---- */

/* What a reply's body may hold: a reply is at most CA_BUS_REPLY_MAX, its header included. */
#define PAGE_BYTES_MAX ((size_t)(CA_BUS_REPLY_MAX - CA_BUS_HEADER_MAX))

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

/* The cache's object path: CA_BUS_CACHE_PREFIX/<name escaped>, malloc()ed. */
static int cache_path(const struct manager_cache *c, char **ret)
{
        return sd_bus_path_encode(CA_BUS_CACHE_PREFIX, c->name, ret);
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

/* The write gate, then the cache the call names ("": every cache, NULL in *@ret). */
static int manager_method_begin(sd_bus_message *msg, const char *what, struct manager *m,
                                struct manager_cache **ret, sd_bus_error *error)
{
        int r;

        r = bus_polkit_verify(msg, what, error);
        if (r < 0)
                return r;
        return read_cache_name(msg, m, ret, error);
}

/* Rotate, of the manager or of one cache: @c (NULL: every cache) now. */
static int rotate_and_reply(sd_bus_message *msg, struct manager *m, struct manager_cache *c,
                            sd_bus_error *error)
{
        int r;

        r = manager_rotate(m, c);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to rotate %s: %m",
                                               c ? c->name : "the caches");
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_manager_rotate(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager *m = userdata;
        struct manager_cache *c;
        int r;

        r = manager_method_begin(msg, "Rotate", m, &c, error);
        if (r < 0)
                return r;
        return rotate_and_reply(msg, m, c, error);
}

static int method_manager_reset_statistics(sd_bus_message *msg, void *userdata,
                                           sd_bus_error *error)
{
        struct manager *m = userdata;
        struct manager_cache *c;
        int r;

        r = manager_method_begin(msg, "ResetStatistics", m, &c, error);
        if (r < 0)
                return r;
        manager_reset_statistics(m, c); /* says PropertiesChanged */
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

        r = bus_polkit_verify(msg, "Reload", error);
        if (r < 0)
                return r;
        r = manager_reload(m, &errors);
        if (r >= 0) {
                /* The manager has said PropertiesChanged for every kept cache. */
                ca_errors_clear(&errors);
                return sd_bus_reply_method_return(msg, NULL);
        }

        /*
         * The reply carries every config error, one per line, as the log does, as far as a
         * reply holds them (a file of errors on every line could make megabytes).
         */
        f = open_memstream(&text, &len);
        if (f) {
                size_t i;

                for (i = 0; i < errors.n; i++) {
                        if ((size_t)ftell(f) + strlen(errors.v[i]) + 128 > PAGE_BYTES_MAX)
                                break;
                        fprintf(f, "%s%s", i ? "\n" : "", errors.v[i]);
                }
                if (i < errors.n)
                        fprintf(f, "\n... and %zu more errors (the daemon's log has every one)",
                                errors.n - i);
                if (errors.n == 0)
                        fprintf(f, "Reload failed: %s", strerror(-r));
                fclose(f);
        }
        ca_errors_clear(&errors);
        r = sd_bus_error_set(error, CA_BUS_ERROR_CONFIG,
                             text ? text : "Reload failed, the configuration was kept");
        free(text);
        return r;
}

/*
 * The metrics text from @cursor on, at most @max_bytes of it, malloc()ed in *ret_text; the next
 * page's cursor in *ret_next (0 after the last).
 */
static int metrics_page(struct manager *m, uint64_t cursor, size_t max_bytes, char **ret_text,
                        uint64_t *ret_next)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        r = metrics_write_page(m, f, cursor, max_bytes, ret_next);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0) {
                free(text);
                return r;
        }
        *ret_text = text;
        return 0;
}

/*
 * Every statistic in the Prometheus text format: what metrics_file holds. More than a reply may
 * hold is an error that names GetMetricsPage (a bus drops a daemon that sends more than its
 * limit).
 */
static int method_get_metrics(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        char *text = NULL;
        uint64_t next = 0;
        int r;

        r = metrics_page(userdata, 0, PAGE_BYTES_MAX, &text, &next);
        if (r < 0)
                return r;
        if (next != 0)
                r = sd_bus_error_setf(error, CA_BUS_ERROR_TOO_LARGE,
                                      "The metrics are over the %d KiB a reply holds: "
                                      "GetMetricsPage() reads them in pages",
                                      CA_BUS_REPLY_MAX / 1024);
        else
                r = sd_bus_reply_method_return(msg, "s", text);
        free(text);
        return r;
}

/* The metrics text page by page: the pages end to end are GetMetrics()'s text. */
static int method_get_metrics_page(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        uint64_t cursor, next = 0;
        char *text = NULL;
        int r;

        r = sd_bus_message_read(msg, "t", &cursor);
        if (r < 0)
                return r;
        r = metrics_page(userdata, cursor, PAGE_BYTES_MAX, &text, &next);
        if (r == -ESTALE)
                return sd_bus_error_setf(error, CA_BUS_ERROR_CHANGED,
                                         "The caches changed since that page (a reload): read "
                                         "the metrics again from cursor 0");
        if (r < 0)
                return r;
        r = sd_bus_reply_method_return(msg, "st", text, next);
        free(text);
        return r;
}

/*
 * A page of a cache's history: the columns (name, "counter"|"gauge", unit), then its rows from
 * the row @cursor names on (0: the oldest), of time_usec >= @since_usec (CLOCK_REALTIME), oldest
 * first, as many as fit in PAGE_BYTES_MAX; *ret_next: the cursor of the first row left out, 0
 * when none is. A cursor is the history's id (16 bits) and a row's number (48 bits).
 */
static int history_reply(sd_bus_message *msg, struct manager_cache *c, uint64_t since_usec,
                         uint64_t cursor, bool paged, sd_bus_error *error)
{
        const struct history_column *cols;
        sd_bus_message *reply = NULL;
        uint64_t first = history_first_seq(c->history), next = 0, start_seq;
        size_t n_cols, bytes = 0, rows = history_rows(c->history), from = 0;
        int r;

        if (cursor != 0) {
                start_seq = cursor & ((UINT64_C(1) << 48) - 1);
                if ((uint16_t)(cursor >> 48) != history_id(c->history))
                        return sd_bus_error_setf(error, CA_BUS_ERROR_CHANGED,
                                                 "The history of %s started anew since that "
                                                 "page (the cache was recreated): read it again "
                                                 "from cursor 0", c->name);
                /* Rows gone from the ring meanwhile are skipped. */
                from = start_seq > first ? (size_t)(start_seq - first) : 0;
        }
        cols = history_columns(c->history, &n_cols);
        for (size_t i = 0; i < n_cols; i++)
                bytes += 8 + 3 * 8 + strlen(cols[i].name) + strlen(cols[i].unit) + 8;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sss)");
        for (size_t i = 0; r >= 0 && i < n_cols; i++)
                r = sd_bus_message_append(reply, "(sss)", cols[i].name,
                                          ca_stat_kind_name(cols[i].kind), cols[i].unit);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(tat)");
        for (size_t i = from; r >= 0 && i < rows; i++) {
                uint64_t time_usec;
                const uint64_t *v = history_row(c->history, i, &time_usec);
                size_t row_bytes = 24 + n_cols * sizeof(*v); /* 8-aligned (t, at) */

                if (time_usec < since_usec)
                        continue;
                if (bytes + row_bytes > PAGE_BYTES_MAX) {
                        if (!paged) {
                                sd_bus_message_unref(reply);
                                return sd_bus_error_setf(
                                        error, CA_BUS_ERROR_TOO_LARGE,
                                        "The history of %s is over the %d KiB a reply holds: "
                                        "GetHistoryPage() reads it in pages", c->name,
                                        CA_BUS_REPLY_MAX / 1024);
                        }
                        next = (uint64_t)history_id(c->history) << 48 | (first + i);
                        break;
                }
                bytes += row_bytes;
                r = sd_bus_message_open_container(reply, 'r', "tat");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "t", time_usec);
                if (r >= 0)
                        r = sd_bus_message_append_array(reply, 't', v, n_cols * sizeof(*v));
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0 && paged)
                r = sd_bus_message_append(reply, "t", next);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        sd_bus_message_unref(reply);
        return r;
}

/*
 * A cache's last rotations from since_usec on (CLOCK_REALTIME, 0 = all): the columns (name,
 * "counter"|"gauge", unit), then one (time, values) per rotation, oldest first; more than a
 * reply may hold is an error that names GetHistoryPage.
 */
static int method_get_history(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager_cache *c;
        uint64_t since_usec;
        const char *name;
        int r;

        r = sd_bus_message_read(msg, "st", &name, &since_usec);
        if (r < 0)
                return r;
        c = cache_from_name_or_error(userdata, name, error);
        if (!c)
                return -ENOENT;
        return history_reply(msg, c, since_usec, 0, false, error);
}

/* GetHistory() page by page: the same columns, then the rows from a cursor on, and the next. */
static int method_get_history_page(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager_cache *c;
        uint64_t since_usec, cursor;
        const char *name;
        int r;

        r = sd_bus_message_read(msg, "stt", &name, &since_usec, &cursor);
        if (r < 0)
                return r;
        c = cache_from_name_or_error(userdata, name, error);
        if (!c)
                return -ENOENT;
        return history_reply(msg, c, since_usec, cursor, true, error);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface,
                                const char *property, sd_bus_message *reply, void *userdata,
                                sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", CA_VERSION);
}

static int property_get_dropin_dir(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *reply, void *userdata,
                                   sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", manager_dropin_dir(userdata));
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

/*
 * What every property's Set does first: the write gate (bus-polkit.h), then the value of type
 * @type into @ret. 0, or what the handler returns (@error set by the gate, or sd-bus's own).
 */
static int property_set_begin(sd_bus_message *value, const char *what, const char *type,
                              void *ret, sd_bus_error *error)
{
        int r;

        r = bus_polkit_verify(value, what, error);
        if (r < 0)
                return r;
        return sd_bus_message_read_basic(value, type[0], ret);
}

static int property_set_default_interval(sd_bus *bus, const char *path, const char *interface,
                                         const char *property, sd_bus_message *value,
                                         void *userdata, sd_bus_error *error)
{
        static const char *const names[] = { "IntervalUSec", NULL };
        struct manager *m = userdata;
        uint64_t usec;
        int r;

        r = property_set_begin(value, "setting DefaultIntervalUSec", "t", &usec, error);
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
                        (void)sd_bus_emit_properties_changed_strv(bus, p, CA_BUS_CACHE_IFACE,
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
        SD_BUS_PROPERTY("DropInDirectory", "s", property_get_dropin_dir, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_WRITABLE_PROPERTY("DefaultIntervalUSec", "t", property_get_default_interval,
                                 property_set_default_interval, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Caches", "as", property_get_caches, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("ListCaches", SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(sso)", caches), method_list_caches,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Rotate", SD_BUS_ARGS("s", name), SD_BUS_NO_RESULT,
                                method_manager_rotate, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResetStatistics", SD_BUS_ARGS("s", name), SD_BUS_NO_RESULT,
                                method_manager_reset_statistics, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMetrics", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", text),
                                method_get_metrics, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMetricsPage", SD_BUS_ARGS("t", cursor),
                                SD_BUS_RESULT("s", text, "t", next_cursor),
                                method_get_metrics_page, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetHistory", SD_BUS_ARGS("s", name, "t", since_usec),
                                SD_BUS_RESULT("a(sss)", columns, "a(tat)", rotations),
                                method_get_history, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetHistoryPage",
                                SD_BUS_ARGS("s", name, "t", since_usec, "t", cursor),
                                SD_BUS_RESULT("a(sss)", columns, "a(tat)", rotations, "t",
                                              next_cursor),
                                method_get_history_page, SD_BUS_VTABLE_UNPRIVILEGED),
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

        r = sd_bus_path_decode(path, CA_BUS_CACHE_PREFIX, &name);
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

/* What the cache counts as its objects (cacheage/age.h, struct ca_cache_counts). */
static int property_get_counts_name(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply,
                                    void *userdata, sd_bus_error *error)
{
        struct ca_cache_counts counts;

        manager_cache_counts(userdata, &counts);
        if (strcmp(property, "ObjectsName") == 0)
                return sd_bus_message_append(reply, "s", counts.objects_name);
        if (strcmp(property, "PartName") == 0)
                return sd_bus_message_append(reply, "s", counts.part_name);
        return sd_bus_message_append(reply, "s", counts.mechanism);
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

        r = property_set_begin(value, "setting IntervalUSec", "t", &usec, error);
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

        r = property_set_begin(value, "setting an age", "u", &age, error);
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

/* Ages, RefaultWindow, TargetRefaultPpm: read-only, set in the configuration. */
static int property_get_refault_setting(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply,
                                        void *userdata, sd_bus_error *error)
{
        struct ca_params p;

        cache_params(userdata, &p);
        if (strcmp(property, "Ages") == 0)
                return sd_bus_message_append(reply, "s", p.auto_ages ? "auto" : "fixed");
        return sd_bus_message_append(reply, "u", strcmp(property, "RefaultWindow") == 0
                                                         ? p.refault_window
                                                         : p.target_refault_ppm);
}

/* How long after their reclaim the refaults came back: (lowest distance in rotations, count). */
static int property_get_refault_histogram(sd_bus *bus, const char *path, const char *interface,
                                          const char *property, sd_bus_message *reply,
                                          void *userdata, sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        uint64_t hist[CA_REFAULT_BUCKETS] = { 0 };
        int r;

        if (c->cache)
                ca_cache_refault_histogram(c->cache, hist);
        r = sd_bus_message_open_container(reply, 'a', "(ut)");
        if (r < 0)
                return r;
        for (unsigned i = 0; i < CA_REFAULT_BUCKETS; i++) {
                r = sd_bus_message_append(reply, "(ut)", ca_refault_bucket_floor(i), hist[i]);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
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

        r = property_set_begin(value, "setting Enabled", "b", &b, error);
        if (r < 0)
                return r;
        r = manager_cache_set_enabled(c, b);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to set %s: %m", property);
        return sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
}

static int property_get_rotations_behind(sd_bus *bus, const char *path, const char *interface,
                                         const char *property, sd_bus_message *reply,
                                         void *userdata, sd_bus_error *error)
{
        struct manager_cache *c = userdata;

        return sd_bus_message_append(reply, "u", c->rotations_behind);
}

/* Work put off: why ("" when it is not), since when. */
static int property_get_deferred(sd_bus *bus, const char *path, const char *interface,
                                 const char *property, sd_bus_message *reply, void *userdata,
                                 sd_bus_error *error)
{
        const char *reason;
        uint64_t since;

        manager_cache_deferred(userdata, &reason, &since);
        if (strcmp(property, "Deferred") == 0)
                return sd_bus_message_append(reply, "s", reason);
        return sd_bus_message_append(reply, "t", since);
}

/* The cache's parts (ca_cache_set_parts()): name, bytes, reclaimed, reclaimed bytes. */
static int property_get_parts(sd_bus *bus, const char *path, const char *interface,
                              const char *property, sd_bus_message *reply, void *userdata,
                              sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        const struct ca_cache_part *parts = NULL;
        size_t n = c->cache ? ca_cache_get_parts(c->cache, &parts) : 0;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sttt)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(sttt)", parts[i].name, parts[i].bytes,
                                          parts[i].reclaimed, parts[i].reclaimed_bytes);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The parts that are not aged as their owner ages the rest, and why: name, state. */
static int property_get_part_states(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        const struct ca_cache_part *parts = NULL;
        size_t n = c->cache ? ca_cache_get_parts(c->cache, &parts) : 0;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (parts[i].state && parts[i].state[0])
                        r = sd_bus_message_append(reply, "(ss)", parts[i].name, parts[i].state);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The statistics: one property per descriptor of struct ca_stats, read by offset. */
static int property_get_stat(sd_bus *bus, const char *path, const char *interface,
                             const char *property, sd_bus_message *reply, void *userdata,
                             sd_bus_error *error)
{
        const struct ca_stat_desc *d = ca_stat_desc_find(property);
        struct ca_stats st;

        if (!d) /* the vtable is built from the same table */
                return -ENOENT;
        manager_cache_stats(userdata, &st);
        return sd_bus_message_append(reply, "t", ca_stat_value(&st, d));
}

/* The adapter's own statistics: values, and what each one is. */
struct adapter_stats_ctx {
        sd_bus_message *reply;
        int r;
};

static void adapter_stat_emit(void *userdata, const struct ca_adapter_stat *stat, uint64_t value)
{
        struct adapter_stats_ctx *ctx = userdata;

        if (ctx->r >= 0)
                ctx->r = sd_bus_message_append(ctx->reply, "{st}", stat->name, value);
}

static void adapter_stat_info_emit(void *userdata, const struct ca_adapter_stat *stat,
                                   uint64_t value)
{
        struct adapter_stats_ctx *ctx = userdata;

        if (ctx->r >= 0)
                ctx->r = sd_bus_message_append(ctx->reply, "(sss)", stat->name,
                                               ca_stat_kind_name(stat->kind),
                                               stat->help ? stat->help : "");
}

static int property_get_adapter_stats(sd_bus *bus, const char *path, const char *interface,
                                      const char *property, sd_bus_message *reply,
                                      void *userdata, sd_bus_error *error)
{
        bool info = strcmp(property, "AdapterStatsInfo") == 0;
        struct adapter_stats_ctx ctx = { .reply = reply };
        int r;

        r = sd_bus_message_open_container(reply, 'a', info ? "(sss)" : "{st}");
        if (r < 0)
                return r;
        /* Only well-formed statistics come through (the manager checks them). */
        manager_cache_adapter_stats(userdata, info ? adapter_stat_info_emit : adapter_stat_emit,
                                    &ctx);
        if (ctx.r < 0)
                return ctx.r;
        return sd_bus_message_close_container(reply);
}

static int method_cache_rotate(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        int r;

        r = bus_polkit_verify(msg, "Rotate", error);
        if (r < 0)
                return r;
        return rotate_and_reply(msg, c->manager, c, error);
}

static int method_cache_reset_statistics(sd_bus_message *msg, void *userdata,
                                         sd_bus_error *error)
{
        struct manager_cache *c = userdata;
        int r;

        r = bus_polkit_verify(msg, "ResetStatistics", error);
        if (r < 0)
                return r;
        manager_reset_statistics(c->manager, c); /* says PropertiesChanged */
        return sd_bus_reply_method_return(msg, NULL);
}

/*
 * The Cache vtable is built at start: these settings, one property per statistic (in the
 * order of ca_stat_descs()), then the adapter's statistics and the methods.
 */
static const sd_bus_vtable cache_vtable_head[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", property_get_cache_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Adapter", "s", property_get_cache_string, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_WRITABLE_PROPERTY("IntervalUSec", "t", property_get_interval,
                                 property_set_interval, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_WRITABLE_PROPERTY("SingleUseAge", "u", property_get_age, property_set_age, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_WRITABLE_PROPERTY("MaxAge", "u", property_get_age, property_set_age, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_WRITABLE_PROPERTY("Enabled", "b", property_get_enabled, property_set_enabled, 0,
                                 SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_PROPERTY("Ages", "s", property_get_refault_setting, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("RefaultWindow", "u", property_get_refault_setting, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("TargetRefaultPpm", "u", property_get_refault_setting, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("RotationsBehind", "u", property_get_rotations_behind, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Deferred", "s", property_get_deferred, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("DeferredSinceUSec", "t", property_get_deferred, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
};

static const sd_bus_vtable cache_vtable_tail[] = {
        SD_BUS_PROPERTY("RefaultHistogram", "a(ut)", property_get_refault_histogram, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ObjectsName", "s", property_get_counts_name, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("PartName", "s", property_get_counts_name, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Mechanism", "s", property_get_counts_name, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Parts", "a(sttt)", property_get_parts, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("PartStates", "a(ss)", property_get_part_states, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("AdapterStats", "a{st}", property_get_adapter_stats, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* What each adapter statistic is: the adapter's, for the life of the cache. */
        SD_BUS_PROPERTY("AdapterStatsInfo", "a(sss)", property_get_adapter_stats, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD("Rotate", NULL, NULL, method_cache_rotate, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("ResetStatistics", NULL, NULL, method_cache_reset_statistics,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static bool vtable_emits_change(const sd_bus_vtable *v)
{
        return (v->type == _SD_BUS_VTABLE_PROPERTY ||
                v->type == _SD_BUS_VTABLE_WRITABLE_PROPERTY) &&
               (v->flags & SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE);
}

/*
 * Build the Cache vtable, and the names of its properties that change (said after each
 * rotation's work and each reset): those marked EMITS_CHANGE in it.
 */
static int cache_vtable_build(sd_bus_vtable **ret_vtable, const char ***ret_changed)
{
        size_t n_stats, n, k = 0, n_changed = 0;
        const struct ca_stat_desc *d = ca_stat_descs(&n_stats);
        const char **changed;
        sd_bus_vtable *v;

        n = ELEMENTSOF(cache_vtable_head) + n_stats + ELEMENTSOF(cache_vtable_tail);
        v = calloc(n, sizeof(*v));
        changed = calloc(n + 1, sizeof(*changed));
        if (!v || !changed) {
                free(v);
                free(changed);
                return -ENOMEM;
        }
        for (size_t i = 0; i < ELEMENTSOF(cache_vtable_head); i++)
                v[k++] = cache_vtable_head[i];
        for (size_t i = 0; i < n_stats; i++)
                v[k++] = (sd_bus_vtable)SD_BUS_PROPERTY(d[i].property, "t", property_get_stat, 0,
                                                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE);
        for (size_t i = 0; i < ELEMENTSOF(cache_vtable_tail); i++)
                v[k++] = cache_vtable_tail[i];
        for (size_t i = 0; i < n; i++)
                if (vtable_emits_change(&v[i]))
                        changed[n_changed++] = v[i].x.property.member;
        *ret_vtable = v;
        *ret_changed = changed;
        return 0;
}

/* ---- the objects, on every connection ---- */

/*
 * PropertiesChanged is owed, not queued: a change marks the object (the cache entry, or the
 * manager's Caches) and one flush event at priority 0 says it once per marked object. While
 * sd-bus's write queue holds CA_BUS_WQUEUE_SIGNALS_MAX messages or more (dbus-daemon stopped
 * or slow), nothing is added to it: the marks wait, one per object whatever the number of
 * rotations meanwhile, and the flush looks again every CA_BUS_FLUSH_RETRY_USEC. So a stalled
 * bus costs a bounded queue, and a client sees the latest values once it flows again.
 */
#define CA_BUS_WQUEUE_SIGNALS_MAX 64     /* messages queued before signals wait */
#define CA_BUS_FLUSH_RETRY_USEC 100000   /* while the queue is full, or the bus away */

struct manager_bus {
        struct manager *manager;
        struct bus_loop *loop;
        struct bus_polkit *polkit; /* the write gate, before every object */
        sd_bus_vtable *cache_vtable;
        const char **cache_changed; /* NULL-terminated */
        struct event *flush_event;  /* priority 0: says what is owed */
        bool caches_changed;        /* the manager's Caches property is owed */
};

/*
 * What anyone may call under CA_BUS_MANAGER_PATH; every other call there is a write, which
 * the gate lets through for root or for whom polkit authorizes (bus-polkit.h).
 */
static bool manager_bus_is_read(const char *interface, const char *member)
{
        static const struct {
                const char *interface, *member;
        } reads[] = {
                { "org.freedesktop.DBus.Properties", "Get" },
                { "org.freedesktop.DBus.Properties", "GetAll" },
                { "org.freedesktop.DBus.Introspectable", "Introspect" },
                { "org.freedesktop.DBus.Peer", "Ping" },
                { "org.freedesktop.DBus.Peer", "GetMachineId" },
                { CA_BUS_MANAGER_IFACE, "ListCaches" },
                { CA_BUS_MANAGER_IFACE, "GetMetrics" },
                { CA_BUS_MANAGER_IFACE, "GetMetricsPage" },
                { CA_BUS_MANAGER_IFACE, "GetHistory" },
                { CA_BUS_MANAGER_IFACE, "GetHistoryPage" },
        };

        for (size_t i = 0; i < ELEMENTSOF(reads); i++)
                if (strcmp(reads[i].interface, interface) == 0 &&
                    strcmp(reads[i].member, member) == 0)
                        return true;
        return false;
}

static int manager_bus_attach(sd_bus *bus, void *userdata)
{
        struct manager_bus *b = userdata;
        struct manager *m = b->manager;
        int r;

        r = bus_polkit_attach(b->polkit, bus);
        if (r < 0)
                return r;
        r = sd_bus_add_object_vtable(bus, NULL, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                                     manager_vtable, m);
        if (r < 0)
                return r;
        r = sd_bus_add_fallback_vtable(bus, NULL, CA_BUS_CACHE_PREFIX, CA_BUS_CACHE_IFACE,
                                       b->cache_vtable, cache_object_find, m);
        if (r < 0)
                return r;
        r = sd_bus_add_node_enumerator(bus, NULL, CA_BUS_CACHE_PREFIX, cache_node_enumerator, m);
        if (r < 0)
                return r;
        return logcontrol_bus_add(bus, m);
}

static void manager_bus_reconnected(void *userdata)
{
        struct manager_bus *b = userdata;

        /* What changed while the bus was away is said now, once per object. */
        for (size_t i = 0; i < manager_n_caches(b->manager); i++)
                manager_bus_cache_changed(b, manager_cache_at(b->manager, i));
        manager_bus_caches_changed(b);
}

static void manager_bus_flush_later(struct manager_bus *b)
{
        struct timeval tv = { .tv_sec = 0, .tv_usec = CA_BUS_FLUSH_RETRY_USEC };

        evtimer_add(b->flush_event, &tv);
}

static void manager_bus_flush(evutil_socket_t fd, short what, void *userdata)
{
        struct manager_bus *b = userdata;
        struct manager *m = b->manager;
        sd_bus *bus = bus_loop_bus(b->loop);
        uint64_t queued = 0;

        if (!bus)
                return; /* the reconnection says everything again */
        if (sd_bus_get_n_queued_write(bus, &queued) >= 0 && queued >= CA_BUS_WQUEUE_SIGNALS_MAX) {
                manager_bus_flush_later(b);
                return;
        }
        if (b->caches_changed) {
                b->caches_changed = false;
                (void)sd_bus_emit_properties_changed(bus, CA_BUS_MANAGER_PATH,
                                                     CA_BUS_MANAGER_IFACE, "Caches", NULL);
        }
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                struct manager_cache *c = manager_cache_at(m, i);
                char *path = NULL;

                if (!c->bus_changed || cache_path(c, &path) < 0)
                        continue;
                c->bus_changed = false;
                (void)sd_bus_emit_properties_changed_strv(bus, path, CA_BUS_CACHE_IFACE,
                                                          (char **)b->cache_changed);
                free(path);
        }
        bus_loop_rearm(b->loop);
}

static void manager_bus_owe(struct manager_bus *b)
{
        if (!evtimer_pending(b->flush_event, NULL))
                event_active(b->flush_event, EV_TIMEOUT, 0);
}

static const struct bus_loop_ops manager_bus_loop_ops = {
        .attach = manager_bus_attach,
        .reconnected = manager_bus_reconnected,
};

int manager_bus_new(struct manager *m, const char *address, struct manager_bus **ret)
{
        struct manager_bus *b;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return log_error_errno(ENOMEM, "Out of memory");
        b->manager = m;
        b->flush_event = evtimer_new(manager_event_base(m), manager_bus_flush, b);
        if (!b->flush_event) {
                r = log_error_errno(ENOMEM, "Out of memory");
                goto out_free;
        }
        event_priority_set(b->flush_event, 0);
        r = cache_vtable_build(&b->cache_vtable, &b->cache_changed);
        if (r < 0) {
                log_error_errno(r, "Failed to build the cache objects' vtable: %m");
                goto out_free;
        }
        r = bus_polkit_new(manager_event_base(m), CA_BUS_MANAGER_PATH, CA_POLKIT_ACTION_MANAGE,
                           manager_bus_is_read, &b->polkit);
        if (r < 0) {
                log_error_errno(r, "Out of memory");
                goto out_free;
        }
        r = bus_loop_new(manager_event_base(m), address, CA_BUS_NAME, &manager_bus_loop_ops, b,
                         &b->loop); /* logs every failure */
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
        /* The connection first: it holds the vtable. */
        b->loop = bus_loop_free(b->loop);
        b->polkit = bus_polkit_free(b->polkit); /* the calls waiting for polkit, unanswered */
        if (b->flush_event)
                event_free(b->flush_event);
        free(b->cache_vtable);
        free(b->cache_changed);
        free(b);
        return NULL;
}

void manager_bus_cache_changed(struct manager_bus *b, struct manager_cache *c)
{
        if (!b || !c)
                return;
        c->bus_changed = true;
        manager_bus_owe(b);
}

void manager_bus_caches_changed(struct manager_bus *b)
{
        if (!b)
                return;
        b->caches_changed = true;
        manager_bus_owe(b);
}
