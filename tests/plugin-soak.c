/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The soak's adapter (tests/soak.sh): a steady population of `objects` objects. Before each
 * rotation `touch` percent of them, picked at random, are used again, and every object
 * reclaimed since the last rotation comes back (a new object in its place), so each rotation
 * has the same work and the cache never empties. It counts what it sees, so the soak can
 * check the framework's figures against its own: live objects, refreshes (rotations begun),
 * reclaimed, and the CPU time its own work took on the loop (refresh_usec: the soak reports
 * it as a share of the run, to tell the adapter's cost from the framework's).
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cacheage/plugin.h"

#define SOAK_OBJECTS_MAX 10000000 /* objects per cache */

struct soak_obj {
        struct ca_node node;
        bool live;
};

struct soak_config {
        uint64_t objects;
        double touch_pct;
};

struct soak {
        struct ca_host *host;
        struct ca_cache *cache;
        struct soak_obj *objs;
        uint64_t n, live, refreshes, reclaimed, recreated;
        uint64_t refresh_usec; /* CPU time in before_rotate, in all */
        uint64_t *dead;  /* indexes reclaimed since the last refresh */
        uint64_t n_dead;
        uint64_t rng;
        double touch_pct;
};

static uint64_t soak_random(struct soak *s)
{
        s->rng ^= s->rng >> 12;
        s->rng ^= s->rng << 25;
        s->rng ^= s->rng >> 27;
        return s->rng * 2685821657736338717ULL;
}

/* The loop thread's CPU time: what its work cost, whatever else ran on the machine meanwhile. */
static uint64_t soak_cpu_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static enum ca_status soak_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct soak *s = userdata;
        struct soak_obj *o = (struct soak_obj *)node;

        o->live = false;
        s->live--;
        s->reclaimed++;
        s->dead[s->n_dead++] = (uint64_t)(o - s->objs);
        return CA_RECLAIMED;
}

static const struct ca_cache_ops soak_ops = { .reclaim = soak_reclaim };

static int soak_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct soak *s = userdata;
        uint64_t touches = (uint64_t)((double)s->n * s->touch_pct / 100);
        uint64_t start_usec = soak_cpu_usec();

        for (uint64_t i = 0; i < s->n_dead; i++) {
                struct soak_obj *o = &s->objs[s->dead[i]];

                *o = (struct soak_obj){ .live = true };
                ca_cache_insert(cache, &o->node);
                s->live++;
                s->recreated++;
        }
        s->n_dead = 0;
        for (uint64_t i = 0; i < touches; i++) {
                struct soak_obj *o = &s->objs[soak_random(s) % s->n];

                if (o->live)
                        ca_touch(cache, &o->node);
        }
        s->refreshes++;
        s->refresh_usec += soak_cpu_usec() - start_usec;
        return 0;
}

static void soak_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct soak *s = userdata;

        emit(eu, &(const struct ca_adapter_stat){ .name = "live", .kind = CA_STAT_GAUGE,
                                                  .unit = "objects",
                                                  .help = "objects the adapter holds" },
             s->live);
        emit(eu, &(const struct ca_adapter_stat){ .name = "refreshes", .kind = CA_STAT_COUNTER,
                                                  .help = "rotations begun (before_rotate)" },
             s->refreshes);
        emit(eu, &(const struct ca_adapter_stat){ .name = "reclaimed", .kind = CA_STAT_COUNTER,
                                                  .unit = "objects",
                                                  .help = "reclaim answers CA_RECLAIMED" },
             s->reclaimed);
        emit(eu, &(const struct ca_adapter_stat){ .name = "recreated", .kind = CA_STAT_COUNTER,
                                                  .unit = "objects",
                                                  .help = "objects made again after reclaim" },
             s->recreated);
        emit(eu, &(const struct ca_adapter_stat){ .name = "refresh_usec", .kind = CA_STAT_COUNTER,
                                                  .unit = "usec",
                                                  .help = "CPU time spent in before_rotate" },
             s->refresh_usec);
}

static const struct ca_cache_hooks soak_hooks = {
        .before_rotate = soak_before_rotate,
        .stats = soak_stats,
};

static const struct ca_key_spec soak_keys[] = {
        { .name = "objects", .type = CA_KEY_UINT, CA_KEY_FIELD(struct soak_config, objects),
          .def = "100000", .min = 1, .max = SOAK_OBJECTS_MAX, .help = "objects held" },
        { .name = "touch", .type = CA_KEY_PERCENT, CA_KEY_FIELD(struct soak_config, touch_pct),
          .def = "10", .help = "share of the objects used again, at random, per rotation" },
        CA_KEY_END
};

static void soak_destroy(void *instance)
{
        struct soak *s = instance;

        if (!s)
                return;
        ca_host_unregister_cache(s->host, s->cache);
        ca_cache_free(s->cache);
        free(s->dead);
        free(s->objs);
        free(s);
}

static int soak_create(struct ca_host *host, const struct ca_section *sec, void **ret_instance)
{
        struct soak_config cfg;
        struct soak *s;
        int r;

        r = ca_section_parse(host, sec, soak_keys, &cfg);
        if (r < 0)
                return r;
        if (ca_host_check_only(host)) {
                *ret_instance = NULL;
                return 0;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->host = host;
        s->n = cfg.objects;
        s->touch_pct = cfg.touch_pct;
        s->rng = 0x9e3779b97f4a7c15ULL ^ cfg.objects;
        s->objs = calloc(s->n, sizeof(*s->objs));
        s->dead = calloc(s->n, sizeof(*s->dead));
        if (!s->objs || !s->dead) {
                r = -ENOMEM;
                goto out_destroy;
        }
        /*
         * Resident now, as the objects are: pages of this list first written when a rotation
         * reclaims more than any before would look like growth after the warm-up.
         */
        memset(s->dead, 0xff, s->n * sizeof(*s->dead));
        r = ca_cache_new(&soak_ops, s, NULL, &s->cache);
        if (r < 0)
                goto out_destroy;
        for (uint64_t i = 0; i < s->n; i++) {
                s->objs[i].live = true;
                ca_cache_insert(s->cache, &s->objs[i].node);
        }
        s->live = s->n;
        r = ca_host_register_cache(host, sec, s->cache, &soak_hooks, s);
        if (r < 0)
                goto out_destroy;
        *ret_instance = s;
        return 0;

out_destroy:
        soak_destroy(s);
        return r;
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "soak",
        .description = "a steady population with random reuse, for the soak",
        .create = soak_create,
        .destroy = soak_destroy,
};
