/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The adapter of doc/plugins.md's "Writing an adapter" guide, whole: the guide shows this file
 * in pieces (tests/test-example-plugin.sh checks that it still does, and builds it from the
 * installed headers alone); tests/test-daemon.c loads it into cacheaged.
 *
 * A cache of `objects` objects made at start; before each rotation the first `reused`
 * percent of them are used again, and when the machine is idle a consistency check counts
 * the live ones (work that can wait: the host says when the machine is busy).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <syslog.h>

#include <cacheage/age.h>
#include <cacheage/plugin.h>

/* The configuration of one [cache NAME] section, filled in by the key table. */
struct ex_config {
        uint64_t objects;
        double reused_pct;
        bool check;
};

static const struct ca_key_spec ex_keys[] = {
        { .name = "objects", .type = CA_KEY_UINT, CA_KEY_FIELD(struct ex_config, objects),
          .def = "1000", .min = 1, .max = 1000000, .help = "objects made at start" },
        { .name = "reused", .type = CA_KEY_PERCENT, CA_KEY_FIELD(struct ex_config, reused_pct),
          .def = "10", .help = "share of the objects used again before each rotation" },
        { .name = "check", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct ex_config, check),
          .def = "yes", .help = "count the live objects when the machine is idle" },
        CA_KEY_END
};

struct ex_object {
        struct ca_node node; /* the framework's: stamp, hits, list links */
        bool live;
};

struct ex {
        struct ca_host *host;
        struct ex_config cfg;
        struct ca_cache *cache;
        struct ex_object *objects;
        uint64_t checks, checks_put_off, live;
};

/* An object idle for too long: free it (here, mark it dead; the framework counts it). */
static enum ca_status ex_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct ex_object *o = (struct ex_object *)node; /* node is the first member */

        o->live = false;
        return CA_RECLAIMED;
}

static const struct ca_cache_ops ex_ops = {
        .reclaim = ex_reclaim,
};

/* Before each rotation: the users' accesses, then the optional work if the machine is idle. */
static int ex_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct ex *ex = userdata;
        uint64_t n_reused = (uint64_t)((double)ex->cfg.objects * ex->cfg.reused_pct / 100);
        struct ca_pressure p;

        for (uint64_t i = 0; i < n_reused; i++)
                if (ex->objects[i].live)
                        ca_touch(cache, &ex->objects[i].node);

        if (ca_host_pressure(ex->host, &p) == 0)
                ca_host_log(ex->host, LOG_DEBUG, "cpu pressure %.2f%%, io pressure %.2f%%",
                            p.cpu_some.avg10_pct, p.io_some.avg10_pct);
        if (!ex->cfg.check)
                return 0;
        if (!ca_host_idle(ex->host)) {
                ex->checks_put_off++;
                ca_host_log(ex->host, LOG_DEBUG, "machine busy: check put off");
                return 0;
        }
        ex->live = 0;
        for (uint64_t i = 0; i < ex->cfg.objects; i++)
                ex->live += ex->objects[i].live;
        ex->checks++;
        ca_host_log(ex->host, LOG_DEBUG, "check: %llu live objects",
                    (unsigned long long)ex->live);
        return 0;
}

/* Each figure says what it is: a counter (only grows) or a gauge (a level). */
static void ex_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct ex *ex = userdata;

        emit(eu, &(const struct ca_adapter_stat){ .name = "live", .kind = CA_STAT_GAUGE,
                                                  .unit = "objects",
                                                  .help = "live objects at the last check" },
             ex->live);
        emit(eu, &(const struct ca_adapter_stat){ .name = "checks", .kind = CA_STAT_COUNTER,
                                                  .help = "checks run" },
             ex->checks);
        emit(eu, &(const struct ca_adapter_stat){ .name = "checks_put_off",
                                                  .kind = CA_STAT_COUNTER,
                                                  .help = "checks put off: machine busy" },
             ex->checks_put_off);
}

static const struct ca_cache_hooks ex_hooks = {
        .before_rotate = ex_before_rotate,
        .stats = ex_stats,
};

/* Accepts NULL, and an instance that create() left half made. */
static void ex_destroy(void *instance)
{
        struct ex *ex = instance;

        if (!ex)
                return;
        ca_host_unregister_cache(ex->host, ex->cache);
        ca_cache_free(ex->cache);
        free(ex->objects);
        free(ex);
}

static int ex_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        struct ex_config cfg;
        struct ex *ex;
        int r;

        r = ca_section_parse(host, s, ex_keys, &cfg);
        if (r < 0)
                return r; /* every bad key has been reported, with its file and line */
        if (ca_host_check_only(host)) {
                *ret_instance = NULL; /* cacheaged --check-config: make nothing */
                return 0;
        }

        ex = calloc(1, sizeof(*ex));
        if (!ex)
                return -ENOMEM;
        ex->host = host;
        ex->cfg = cfg;
        ex->objects = calloc(cfg.objects, sizeof(*ex->objects));
        if (!ex->objects) {
                r = -ENOMEM;
                goto out_destroy;
        }
        r = ca_cache_new(&ex_ops, ex, NULL, &ex->cache);
        if (r < 0)
                goto out_destroy;
        for (uint64_t i = 0; i < cfg.objects; i++) {
                ex->objects[i].live = true;
                ca_cache_insert(ex->cache, &ex->objects[i].node);
        }
        r = ca_host_register_cache(host, s, ex->cache, &ex_hooks, ex);
        if (r < 0)
                goto out_destroy;
        *ret_instance = ex;
        return 0;

out_destroy:
        ex_destroy(ex);
        return r;
}

/* The one exported symbol; build with -fvisibility=hidden so that it stays the only one. */
__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "example",
        .description = "the plugin guide's example: objects made at start, some used again",
        .create = ex_create,
        .destroy = ex_destroy,
};
