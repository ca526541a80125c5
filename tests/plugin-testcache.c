/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal adapter for the daemon tests: every rotation adds `add` new objects, and
 * `reuse` of the oldest live ones are touched again, so that the aging is predictable:
 * single-use objects go after single_use_age rotations, reused ones stay.
 *
 * Keys: add = N (objects added per rotation, default 100), reuse = N (default 0),
 * limit = N (objects ever added, default 100000), refresh_delay = DURATION (0: the refresh is
 * synchronous; else it finishes that long later on the host's loop, as an adapter waiting for
 * a server would, through CA_ROTATE_LATER and ca_host_rotate_ready()), refresh_error = yes
 * (the asynchronous refresh reports -EIO), create_fault = crash|hang (create() aborts, or
 * never returns: what the daemon's isolated check of a reload must survive), hog = yes (a
 * 10ms timer of the adapter's own that spins for its whole period, as a feeding timer that
 * cannot keep up does: the aging must still get its share of the loop).
 */

#include <errno.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include <syslog.h>

#include "cacheage/plugin.h"

#define TESTCACHE_MAX 1000000 /* objects */

struct tc_obj {
        struct ca_node node;
        struct tc_obj *next_free;
        int live;
};

struct tc {
        struct ca_host *host;
        struct ca_cache *cache;
        struct tc_obj *objs;
        size_t n_objs, used;
        uint64_t add, reuse, reclaimed;
        uint64_t refresh_delay_usec;
        bool refresh_error;
        struct event *refresh_timer;
        uint64_t refreshes;
        struct event *hog_timer;
};

#define TC_HOG_USEC 10000 /* the hog's period, all of it spent spinning */

static void tc_hog(evutil_socket_t fd, short what, void *userdata)
{
        uint64_t until = ca_now_usec() + TC_HOG_USEC;

        while (ca_now_usec() < until)
                ;
}

static enum ca_status tc_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct tc *tc = userdata;
        struct tc_obj *o = (struct tc_obj *)node;

        o->live = 0;
        tc->reclaimed++;
        return CA_RECLAIMED;
}

static const struct ca_cache_ops tc_ops = { .reclaim = tc_reclaim };

static void tc_refresh(struct tc *tc, struct ca_cache *cache)
{
        uint64_t touched = 0;

        for (size_t i = 0; i < tc->used && touched < tc->reuse; i++)
                if (tc->objs[i].live) {
                        ca_touch(cache, &tc->objs[i].node);
                        touched++;
                }
        for (uint64_t i = 0; i < tc->add && tc->used < tc->n_objs; i++) {
                struct tc_obj *o = &tc->objs[tc->used++];

                o->live = 1;
                ca_cache_insert(cache, &o->node);
        }
        tc->refreshes++;
}

static void tc_refresh_done(evutil_socket_t fd, short what, void *userdata)
{
        struct tc *tc = userdata;

        tc_refresh(tc, tc->cache);
        ca_host_rotate_ready(tc->host, tc->cache, tc->refresh_error ? -EIO : 0);
}

static int tc_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct tc *tc = userdata;
        struct timeval tv;

        if (!tc->refresh_timer) {
                tc_refresh(tc, cache);
                return 0;
        }
        tv.tv_sec = (time_t)(tc->refresh_delay_usec / 1000000);
        tv.tv_usec = (suseconds_t)(tc->refresh_delay_usec % 1000000);
        if (evtimer_add(tc->refresh_timer, &tv) < 0)
                return -ENOMEM;
        return CA_ROTATE_LATER;
}

static void tc_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct tc *tc = userdata;

        emit(eu, &(const struct ca_adapter_stat){ .name = "added", .kind = CA_STAT_COUNTER },
             tc->used);
        emit(eu, &(const struct ca_adapter_stat){ .name = "reclaimed", .kind = CA_STAT_COUNTER },
             tc->reclaimed);
        emit(eu, &(const struct ca_adapter_stat){ .name = "refreshes", .kind = CA_STAT_COUNTER },
             tc->refreshes);
}

static const struct ca_cache_hooks tc_hooks = {
        .before_rotate = tc_before_rotate,
        .stats = tc_stats,
};

enum { TC_FAULT_NONE, TC_FAULT_CRASH, TC_FAULT_HANG };

struct tc_config {
        uint64_t add, reuse, limit;
        uint64_t refresh_delay_usec;
        bool refresh_error;
        int create_fault;
        bool hog;
};

static const struct ca_key_spec tc_keys[] = {
        { .name = "add", .type = CA_KEY_UINT, CA_KEY_FIELD(struct tc_config, add), .def = "100",
          .max = TESTCACHE_MAX, .help = "objects added per rotation" },
        { .name = "reuse", .type = CA_KEY_UINT, CA_KEY_FIELD(struct tc_config, reuse),
          .def = "0", .max = TESTCACHE_MAX, .help = "oldest live objects touched per rotation" },
        { .name = "limit", .type = CA_KEY_UINT, CA_KEY_FIELD(struct tc_config, limit),
          .def = "100000", .max = TESTCACHE_MAX, .help = "objects ever added" },
        { .name = "refresh_delay", .type = CA_KEY_DURATION,
          CA_KEY_FIELD(struct tc_config, refresh_delay_usec), .def = "0", .max = 60000000,
          .help = "how long an asynchronous refresh takes (0: synchronous)" },
        { .name = "refresh_error", .type = CA_KEY_BOOL,
          CA_KEY_FIELD(struct tc_config, refresh_error), .def = "no",
          .help = "the asynchronous refresh fails with EIO" },
        { .name = "create_fault", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct tc_config, create_fault),
          .def = "none",
          .choices = (const struct ca_key_choice[]){ { "none", TC_FAULT_NONE },
                                                     { "crash", TC_FAULT_CRASH },
                                                     { "hang", TC_FAULT_HANG },
                                                     { NULL, 0 } },
          .help = "create() aborts, or never returns" },
        { .name = "hog", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct tc_config, hog), .def = "no",
          .help = "a 10ms timer that spins for its whole period" },
        CA_KEY_END
};

static int tc_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        struct tc_config cfg;
        struct tc *tc;
        int r;

        r = ca_section_parse(host, s, tc_keys, &cfg);
        if (r < 0)
                return r;
        if (cfg.create_fault == TC_FAULT_CRASH)
                abort();
        while (cfg.create_fault == TC_FAULT_HANG)
                pause();
        if (ca_host_check_only(host)) {
                *ret_instance = NULL;
                return 0;
        }

        tc = calloc(1, sizeof(*tc));
        if (!tc)
                return -ENOMEM;
        tc->host = host;
        tc->add = cfg.add;
        tc->reuse = cfg.reuse;
        tc->n_objs = cfg.limit ? cfg.limit : 1;
        tc->refresh_delay_usec = cfg.refresh_delay_usec;
        tc->refresh_error = cfg.refresh_error;
        if (cfg.refresh_delay_usec > 0) {
                tc->refresh_timer = evtimer_new(ca_host_event_base(host), tc_refresh_done, tc);
                if (!tc->refresh_timer)
                        goto out_free;
        }
        if (cfg.hog) {
                struct timeval tv = { .tv_sec = 0, .tv_usec = TC_HOG_USEC };

                tc->hog_timer = event_new(ca_host_event_base(host), -1, EV_PERSIST, tc_hog, tc);
                if (!tc->hog_timer || event_add(tc->hog_timer, &tv) < 0)
                        goto out_free;
        }
        tc->objs = calloc(tc->n_objs, sizeof(*tc->objs));
        if (!tc->objs)
                goto out_free;
        r = ca_cache_new(&tc_ops, tc, NULL, &tc->cache);
        if (r < 0)
                goto out_free;
        r = ca_host_register_cache(host, s, tc->cache, &tc_hooks, tc);
        if (r < 0)
                goto out_free_cache;
        ca_host_log(host, LOG_DEBUG, "testcache: %llu added per rotation",
                    (unsigned long long)cfg.add);
        *ret_instance = tc;
        return 0;

out_free_cache:
        ca_cache_free(tc->cache);
out_free:
        if (tc->refresh_timer)
                event_free(tc->refresh_timer);
        if (tc->hog_timer)
                event_free(tc->hog_timer);
        free(tc->objs);
        free(tc);
        return r < 0 ? r : -ENOMEM;
}

static void tc_destroy(void *instance)
{
        struct tc *tc = instance;

        if (!tc)
                return;
        if (tc->refresh_timer)
                event_free(tc->refresh_timer);
        if (tc->hog_timer)
                event_free(tc->hog_timer);
        ca_host_unregister_cache(tc->host, tc->cache);
        ca_cache_free(tc->cache);
        free(tc->objs);
        free(tc);
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "testcache",
        .description = "objects added and reused at a fixed rate, for the daemon tests",
        .create = tc_create,
        .destroy = tc_destroy,
};
