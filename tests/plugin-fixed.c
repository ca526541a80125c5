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
 */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cacheage/age.h"
#include "cacheage/plugin.h"

#define FIXED_OBJECTS_MAX 50000000ULL /* nodes one instance may create */

struct fixed_object {
        struct ca_node node;
        bool freed;
};

struct fixed {
        struct ca_host *host;
        struct ca_cache *cache;
        struct fixed_object *objects;
        size_t n_objects, n_reused, object_size;
        enum ca_status verdict;
        bool bad_stats;
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

static const struct ca_cache_ops fixed_ops = {
        .reclaim = fixed_reclaim,
        .size = fixed_size,
};

static int fixed_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct fixed *f = userdata;

        f->refreshes++;
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
}

static const struct ca_cache_hooks fixed_hooks = {
        .before_rotate = fixed_before_rotate,
        .stats = fixed_stats,
};

static int parse_size(struct ca_host *host, const struct ca_section *s, const char *key,
                      unsigned long long max, size_t *ret)
{
        const char *v = ca_section_get(s, key);
        unsigned long long n;
        char *end;

        if (!v)
                return 0;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-' || n > max) {
                ca_host_key_error(host, s, key, "must be a number from 0 to %llu", max);
                return -EINVAL;
        }
        *ret = (size_t)n;
        return 0;
}

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

static int fixed_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        static const char *const known[] = { "objects", "reused", "verdict", "object_size",
                                             "bad_stats" };
        struct fixed cfg = { .host = host, .n_objects = 1000, .object_size = 64,
                             .verdict = CA_RECLAIMED };
        const char *verdict, *bad_stats;
        struct fixed *f;
        int r = 0;

        for (size_t i = 0; i < ca_section_n_keys(s); i++) {
                const char *k = ca_section_key(s, i);
                bool ok = false;

                for (size_t j = 0; j < sizeof(known) / sizeof(known[0]); j++)
                        ok = ok || strcmp(k, known[j]) == 0;
                if (!ok) {
                        ca_host_key_error(host, s, k, "unknown key");
                        r = -EINVAL;
                }
        }
        if (parse_size(host, s, "objects", FIXED_OBJECTS_MAX, &cfg.n_objects) < 0 ||
            parse_size(host, s, "reused", FIXED_OBJECTS_MAX, &cfg.n_reused) < 0 ||
            parse_size(host, s, "object_size", 1 << 20, &cfg.object_size) < 0)
                r = -EINVAL;
        verdict = ca_section_get(s, "verdict");
        if (verdict) {
                if (strcmp(verdict, "reclaim") == 0)
                        cfg.verdict = CA_RECLAIMED;
                else if (strcmp(verdict, "keep") == 0)
                        cfg.verdict = CA_KEEP;
                else if (strcmp(verdict, "busy") == 0)
                        cfg.verdict = CA_BUSY;
                else {
                        ca_host_key_error(host, s, "verdict", "must be reclaim, keep or busy");
                        r = -EINVAL;
                }
        }
        bad_stats = ca_section_get(s, "bad_stats");
        if (bad_stats && strcmp(bad_stats, "yes") != 0 && strcmp(bad_stats, "no") != 0) {
                ca_host_key_error(host, s, "bad_stats", "must be yes or no");
                r = -EINVAL;
        }
        cfg.bad_stats = bad_stats && strcmp(bad_stats, "yes") == 0;
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

        f = malloc(sizeof(*f));
        if (!f)
                return -ENOMEM;
        *f = cfg;
        f->objects = calloc(f->n_objects ? f->n_objects : 1, sizeof(*f->objects));
        if (!f->objects) {
                free(f);
                return -ENOMEM;
        }
        r = ca_cache_new(&fixed_ops, f, NULL, &f->cache);
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
