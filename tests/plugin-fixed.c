/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A deterministic adapter for the bus tests: `objects` nodes created at start and never
 * touched, except the first `reused` ones, touched before every rotation. The reclaim verdict
 * is fixed (`verdict = reclaim|keep|busy`), so after k rotations the statistics are exactly
 * those of the same cache driven in-process by the test.
 *
 *     [cache fixed]
 *     adapter = fixed
 *     objects = 1000
 *     reused = 10
 *     verdict = reclaim
 *     object_size = 64
 *     bad_stats = no      (yes: also emit two malformed statistics, which the host leaves out)
 *     recreate = no       (yes: objects get identities, their index + 1, and what was
 *                          reclaimed is created again before every rotation: refaults)
 *     extra_stats = 0     (N: also emit counters extra_0 .. extra_N-1, rotations each, so
 *                          that its history's rows and its metrics grow to what a test needs)
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cacheage/age.h"
#include "cacheage/plugin.h"

#define FIXED_OBJECTS_MAX 50000000ULL /* nodes one instance may create */
#define FIXED_EXTRA_STATS_MAX 1000    /* more than the host takes (CA_ADAPTER_STATS_MAX) */

struct fixed_object {
        struct ca_node node;
        bool freed;
};

struct fixed {
        struct ca_host *host;
        struct ca_cache *cache;
        struct fixed_object *objects;
        size_t n_objects, n_reused, object_size, extra_stats;
        enum ca_status verdict;
        bool bad_stats, recreate;
        uint64_t freed, touches, refreshes;
};

static enum ca_status fixed_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct fixed *f = userdata;
        struct fixed_object *o = (struct fixed_object *)node;

        if (f->verdict == CA_RECLAIMED) {
                o->freed = true;
                f->freed++;
        }
        return f->verdict;
}

static size_t fixed_size(const struct ca_cache *cache, const struct ca_node *node, void *userdata)
{
        const struct fixed *f = userdata;

        return f->object_size;
}

static uint64_t fixed_identity(const struct ca_cache *cache, const struct ca_node *node,
                               void *userdata)
{
        const struct fixed *f = userdata;

        return (uint64_t)((const struct fixed_object *)node - f->objects) + 1;
}

static const struct ca_cache_ops fixed_ops = {
        .reclaim = fixed_reclaim,
        .size = fixed_size,
};

static const struct ca_cache_ops fixed_recreate_ops = {
        .reclaim = fixed_reclaim,
        .size = fixed_size,
        .identity = fixed_identity,
};

static int fixed_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct fixed *f = userdata;

        f->refreshes++;
        for (size_t i = 0; f->recreate && i < f->n_objects; i++)
                if (f->objects[i].freed) {
                        f->objects[i] = (struct fixed_object){ 0 };
                        ca_cache_insert(cache, &f->objects[i].node);
                }
        for (size_t i = 0; i < f->n_reused; i++)
                if (!f->objects[i].freed && ca_node_linked(&f->objects[i].node)) {
                        ca_touch(cache, &f->objects[i].node);
                        f->touches++;
                }
        return 0;
}

static void fixed_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit,
                        void *emit_userdata)
{
        struct fixed *f = userdata;

        /* The bus tests read these declarations back from AdapterStatsInfo. */
        emit(emit_userdata,
             &(const struct ca_adapter_stat){ .name = "created", .kind = CA_STAT_GAUGE,
                                              .unit = "objects",
                                              .help = "objects created at start" },
             f->n_objects);
        if (f->bad_stats)
                emit(emit_userdata,
                     &(const struct ca_adapter_stat){ .name = "Bad Name",
                                                      .kind = CA_STAT_COUNTER },
                     1);
        emit(emit_userdata,
             &(const struct ca_adapter_stat){ .name = "freed", .kind = CA_STAT_COUNTER,
                                              .unit = "objects", .help = "objects reclaimed" },
             f->freed);
        emit(emit_userdata,
             &(const struct ca_adapter_stat){ .name = "touches", .kind = CA_STAT_COUNTER,
                                              .help = "touches before rotations" },
             f->touches);
        if (f->bad_stats)
                emit(emit_userdata,
                     &(const struct ca_adapter_stat){ .name = "odd_kind",
                                                      .kind = (enum ca_stat_kind)7 },
                     2);
        emit(emit_userdata,
             &(const struct ca_adapter_stat){ .name = "refreshes", .kind = CA_STAT_COUNTER },
             f->refreshes);
        for (size_t i = 0; i < f->extra_stats; i++) {
                char name[32];

                snprintf(name, sizeof(name), "extra_%zu", i);
                emit(emit_userdata,
                     &(const struct ca_adapter_stat){ .name = name, .kind = CA_STAT_COUNTER,
                                                      .unit = "rotations",
                                                      .help = "a statistic for the size of "
                                                              "replies" },
                     f->refreshes);
        }
}

static const struct ca_cache_hooks fixed_hooks = {
        .before_rotate = fixed_before_rotate,
        .stats = fixed_stats,
};

static void fixed_destroy(void *instance)
{
        struct fixed *f = instance;

        if (!f)
                return;
        if (f->cache) {
                ca_host_unregister_cache(f->host, f->cache);
                f->cache = ca_cache_free(f->cache);
        }
        free(f->objects);
        free(f);
}

struct fixed_config {
        size_t n_objects, n_reused, object_size, extra_stats;
        int verdict;
        bool bad_stats, recreate;
};

static const struct ca_key_spec fixed_keys[] = {
        { .name = "objects", .type = CA_KEY_UINT, CA_KEY_FIELD(struct fixed_config, n_objects),
          .def = "1000", .max = FIXED_OBJECTS_MAX, .help = "nodes created at start" },
        { .name = "reused", .type = CA_KEY_UINT, CA_KEY_FIELD(struct fixed_config, n_reused),
          .def = "0", .max = FIXED_OBJECTS_MAX, .help = "first nodes touched before rotations" },
        { .name = "object_size", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct fixed_config, object_size), .def = "64", .max = 1 << 20,
          .help = "bytes reported per node" },
        { .name = "verdict", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct fixed_config, verdict),
          .def = "reclaim",
          .choices = (const struct ca_key_choice[]){ { "reclaim", CA_RECLAIMED },
                                                     { "keep", CA_KEEP },
                                                     { "busy", CA_BUSY },
                                                     { NULL, 0 } },
          .help = "what reclaim answers, always" },
        { .name = "bad_stats", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct fixed_config, bad_stats),
          .def = "no", .help = "also emit malformed statistics (the host must leave them out)" },
        { .name = "recreate", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct fixed_config, recreate),
          .def = "no", .help = "create the reclaimed again before every rotation (refaults)" },
        { .name = "extra_stats", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct fixed_config, extra_stats), .def = "0",
          .max = FIXED_EXTRA_STATS_MAX, .help = "further counters the stats hook emits" },
        CA_KEY_END
};

static int fixed_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        struct fixed_config cfg;
        struct fixed *f;
        int r;

        r = ca_section_parse(host, s, fixed_keys, &cfg);
        if (cfg.n_reused > cfg.n_objects) {
                ca_host_key_error(host, s, "reused", "must not exceed objects (%zu)",
                                  cfg.n_objects);
                r = -EINVAL;
        }
        if (r < 0)
                return r;
        if (ca_host_check_only(host)) {
                *ret_instance = NULL;
                return 0;
        }

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->host = host;
        f->n_objects = cfg.n_objects;
        f->n_reused = cfg.n_reused;
        f->object_size = cfg.object_size;
        f->verdict = (enum ca_status)cfg.verdict;
        f->bad_stats = cfg.bad_stats;
        f->recreate = cfg.recreate;
        f->extra_stats = cfg.extra_stats;
        f->objects = calloc(f->n_objects ? f->n_objects : 1, sizeof(*f->objects));
        if (!f->objects) {
                free(f);
                return -ENOMEM;
        }
        r = ca_cache_new(f->recreate ? &fixed_recreate_ops : &fixed_ops, f, NULL, &f->cache);
        if (r < 0)
                goto out_free;
        for (size_t i = 0; i < f->n_objects; i++)
                ca_cache_insert(f->cache, &f->objects[i].node);
        r = ca_host_register_cache(host, s, f->cache, &fixed_hooks, f);
        if (r < 0)
                goto out_free;
        *ret_instance = f;
        return 0;
out_free:
        f->cache = ca_cache_free(f->cache);
        fixed_destroy(f);
        return r;
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "fixed",
        .description = "test adapter: a fixed set of objects, never used (bus tests)",
        .create = fixed_create,
        .destroy = fixed_destroy,
};
