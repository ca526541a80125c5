/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon's state: the configuration in force, the plugin instances and their caches,
 * one rotation timer per enabled cache, the aging slices, the systemd notifications.
 * Single-threaded: everything runs on one libevent base.
 *
 * The bus side (manager-bus.h) reads the state through these functions and changes it
 * only through the manager_* setters, which validate and apply at once; the manager calls
 * manager_bus_* hooks (no-ops when there is no bus) when something visible changed.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cacheage/age.h"
#include "cacheage/plugin.h"
#include "config.h"

struct event_base;
struct manager;
struct manager_bus;
struct history;

struct manager_cache {
        struct manager *manager;
        char *name;
        char *adapter;
        struct ca_cache *cache;         /* registered by the plugin; NULL until then */
        const struct ca_cache_hooks *hooks;
        void *hooks_userdata;
        void *instance;                 /* the plugin's */
        const struct ca_plugin *plugin;

        uint64_t interval_usec;         /* effective: the cache's own or the default */
        bool interval_is_default;       /* follows the daemon's default interval */
        bool enabled;

        uint64_t deferred;              /* rotations deferred by idle gating */
        unsigned defer_streak;          /* consecutive deferrals, bounded by max_defer */
        uint64_t defer_since_usec;      /* CLOCK_REALTIME: the streak began; 0: none */
        bool defer_exhausted;           /* this rotation runs busy, after max_defer: its
                                           adapter's work runs too (host_idle() says idle) */

        struct event *rotate_timer;     /* persistent, interval_usec; off when disabled */
        uint64_t period_start_usec;     /* CLOCK_MONOTONIC: the timer's period began */
        uint64_t timer_usec;            /* the period it runs with: interval_usec, or less
                                           until it first fires after the interval changed */
        struct event *age_event;        /* low-priority slice event */

        /* Private to manager.c. */
        struct ca_host host;            /* what the plugin instance calls back through */
        struct ca_section *section;     /* the instance's section of the configuration */
        struct ca_errors *errors;       /* where key errors go while create() runs */
        bool check_only;                /* a create() that only validates */
        bool aging;                     /* a rotation's slices are still running */
        bool refreshing;                /* before_rotate answered CA_ROTATE_LATER, not ready yet */
        uint64_t refresh_started_usec;  /* CLOCK_MONOTONIC, when that refresh began */
        uint64_t skipped_refreshing;    /* rotations skipped while a refresh was under way */
        uint32_t rotations_behind;      /* rotations begun, in a row, before the last one's
                                           aging finished: the cache falls behind (0: not) */
        uint64_t last_slice_usec;       /* CLOCK_MONOTONIC, the last aging slice (the guard's) */
        uint64_t reclaimed_before;      /* stats.reclaimed when the rotation began */
        uint64_t last_reclaimed;        /* objects the last finished rotation reclaimed */
        uint64_t logged_ages[2];        /* single-use and max age in force, as last logged */
        bool adapter_stats_warned;      /* a malformed adapter statistic was logged, or too
                                           many of them */
        bool history_bound_logged;      /* its history holds fewer rows than asked: said */
        struct history *history;        /* the last rotations (history.h); kept over reloads */

        /* Private to manager-bus.c. */
        bool bus_changed;               /* PropertiesChanged owed, not yet sent */
};

struct manager_options {
        const char *config_path;        /* --config; NULL: systemd's search (config.h) */
        const char *bus;                /* "system", "user", an address, or "none" */
        bool check_only;
        bool log_level_set;             /* --log-level given: it wins over the configuration */
        int log_level;
};

/*
 * manager_cache_deferred() - why the cache's work is put off, "" when it is not: its rotations
 * by the daemon's idle gating ("busy"), else its adapter's own work (ca_cache_set_deferred());
 * and since when (CLOCK_REALTIME microseconds, 0: not put off).
 */
void manager_cache_deferred(const struct manager_cache *c, const char **ret_reason,
                            uint64_t *ret_since_usec);

int manager_new(const struct manager_options *opts, struct manager **ret);
struct manager *manager_free(struct manager *m);

/* Load the configuration, plugins and caches; errors are logged (all of them). */
int manager_start(struct manager *m);
/* Run the loop until SIGTERM/SIGINT; returns the exit status. */
int manager_run(struct manager *m);

struct event_base *manager_event_base(struct manager *m);
const struct ca_conf *manager_conf(const struct manager *m);
/*
 * manager_failed_files() - after a manager_start() that failed: the files its errors name,
 * "A, B" (NULL when none does), and how many errors there were.
 */
const char *manager_failed_files(const struct manager *m, size_t *ret_n_errors);
uint64_t manager_start_realtime_usec(const struct manager *m);
/* manager_dropin_dir() - where "cacheagectl set --persistent" writes (ca_conf_dropin_dir()). */
const char *manager_dropin_dir(const struct manager *m);

size_t manager_n_caches(const struct manager *m);
struct manager_cache *manager_cache_at(struct manager *m, size_t i);
struct manager_cache *manager_find_cache(struct manager *m, const char *name);

uint64_t manager_default_interval_usec(const struct manager *m);
/* -EINVAL outside CA_INTERVAL_MIN_USEC..CA_INTERVAL_MAX_USEC; caches on the default follow. */
int manager_set_default_interval(struct manager *m, uint64_t usec);

/* Setters apply at once (timers re-armed) and return 0 or -EINVAL, changing nothing then. */
int manager_cache_set_interval(struct manager_cache *c, uint64_t usec);
int manager_cache_set_params(struct manager_cache *c, const struct ca_params *p);
int manager_cache_set_enabled(struct manager_cache *c, bool enabled);

/* Rotate now (and start aging): one cache, or every enabled cache when @c is NULL. */
int manager_rotate(struct manager *m, struct manager_cache *c);
/* Zero the statistics of one cache, or of all when @c is NULL. */
void manager_reset_statistics(struct manager *m, struct manager_cache *c);

/*
 * Reload the configuration: parsed and checked whole first; on any error nothing changes,
 * -EINVAL is returned and the messages are added to @errors (and logged). Done before
 * returning; RELOADING=1 and READY=1 are sent around it.
 */
int manager_reload(struct manager *m, struct ca_errors *errors);

/* Statistics of @c: the library's (zero before the plugin registered its cache). */
void manager_cache_stats(const struct manager_cache *c, struct ca_stats *ret);
/* What @c counts as its objects, and how they are aged (ca_cache_get_counts()). */
void manager_cache_counts(const struct manager_cache *c, struct ca_cache_counts *ret);
/*
 * The adapter's own statistics through @emit, the well-formed ones only: a malformed one
 * (ca_adapter_stat_check()) is left out, and logged once for the cache.
 */
void manager_cache_adapter_stats(struct manager_cache *c, ca_stat_emit_t emit,
                                 void *emit_userdata);

int manager_get_log_level(const struct manager *m);
void manager_set_log_level(struct manager *m, int level);
