/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's state and its loop. Everything runs on one libevent base, on one thread:
 *
 *   priority 0 (CA_PRIO_HIGH)   signals, the watchdog ping, the bus
 *   priority 1 (the default)    rotation timers, plugins' own I/O and timers
 *   priority 2 (CA_PRIO_SLICE)  aging slices
 *
 * A rotation is O(1) (ca_cache_rotate() splices one due slot); the work it creates runs as
 * slices of at most slice_budget nodes and slice_time, each a low-priority event that
 * re-activates itself while work is pending. The base is told to poll again after every
 * slice (event_config_set_max_dispatch_interval), so signals, other caches and bus calls
 * are served between two slices of a large cache, however large.
 *
 * Low priority must not mean never: an adapter whose own events keep priority 1 busy (a
 * feeding timer that takes its whole period) would starve the slices, and rotations would
 * pile up for ever. While a cache ages, a guard timer at priority 0 runs one slice itself
 * when no cache had one in the last CA_AGING_GUARD_SLICES slice times (for the cache that
 * waited longest), so aging gets at least a slice in every CA_AGING_GUARD_SLICES + 1
 * whatever an adapter does. The guard asks whether aging as a whole was starved, not each
 * cache: N caches aging at once wait N - 1 slice times for their turn in the round, and a
 * guard that took that wait for starvation ran every cache's slices at priority 0, ahead of
 * the rotation timers, which then fired late and lost periods (the soak's 5 caches rotated at
 * a fifth of their rate). It is re-armed from the time it ends, so it holds the loop at most
 * one slice in CA_AGING_GUARD_SLICES + 1. A
 * rotation that begins before the previous one's aging is done is counted (the cache falls
 * behind: RotationsBehind on the bus, "behind" in cacheagectl status and in STATUS=).
 */

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "history.h"
#include "isolate.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "metrics.h"
#include "notify.h"
#include "plugins.h"
#include "psi.h"

#define CA_AGING_GUARD_SLICES 3 /* slice times a starved cache waits for a slice, at most */

enum {
        CA_PRIO_HIGH = 0,
        CA_PRIO_DEFAULT = 1,
        CA_PRIO_SLICE = 2,
        CA_PRIO_N,
};

struct manager {
        char *config_path;         /* NULL: the search config.h describes */
        char *dropin_dir;          /* the administrator's drop-ins: ca_conf_dropin_dir() */
        char *bus_name;
        bool check_only;
        bool log_level_set;
        int log_level;

        struct event_base *base;
        struct ca_conf *conf;
        struct plugins *plugins;
        struct manager_cache **caches;
        size_t n_caches;
        struct manager_bus *bus;

        struct event *sig_term, *sig_int, *sig_hup;
        struct event *watchdog_timer;
        struct event *aging_guard;  /* priority 0, on while a cache ages */
        uint64_t last_slice_usec;  /* CLOCK_MONOTONIC, the last aging slice of any cache */

        bool metrics_failed;       /* the last write of metrics_file failed (logged once) */
        char *failed_files;        /* a start that failed: the files its errors name */
        size_t n_failed_errors;
        char *psi_dir;             /* $CACHEAGED_PSI_DIR (tests) or /proc/pressure */
        bool psi_missing_logged;
        uint64_t start_realtime_usec;
        int exit_status;
};

static uint64_t now_realtime_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static struct timeval usec_to_timeval(uint64_t usec)
{
        return (struct timeval){ .tv_sec = (time_t)(usec / 1000000),
                                 .tv_usec = (suseconds_t)(usec % 1000000) };
}

static void log_errors(const struct ca_errors *errors, size_t from)
{
        for (size_t i = from; i < errors->n; i++)
                log_error("%s", errors->v[i]);
}

/*
 * A start that failed: the errors, logged, and the files they name ("FILE:LINE: ..." or
 * "FILE: ..." of a file that exists), each once, in the order of the errors, for the last line
 * of --check-config, which named the main file even when a drop-in was at fault.
 */
static void manager_start_failed(struct manager *m, struct ca_errors *errors)
{
        char *files = NULL;
        size_t len = 0;
        FILE *f;

        log_errors(errors, 0);
        m->n_failed_errors = errors->n;
        f = open_memstream(&files, &len);
        for (size_t i = 0; f && i < errors->n; i++) {
                const char *msg = errors->v[i];
                size_t n = strcspn(msg, ":");
                char *path = strndup(msg, n);
                struct stat st;
                bool seen = false;

                if (!path)
                        break;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = strncmp(errors->v[j], path, n) == 0 && errors->v[j][n] == ':';
                if (msg[n] == ':' && !seen && lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
                        fprintf(f, "%s%s", ftell(f) > 0 ? ", " : "", path);
                free(path);
        }
        if (f && fclose(f) == 0 && files && files[0])
                m->failed_files = files;
        else
                free(files);
        ca_errors_clear(errors);
}

/* ---- the host side of the plugin API: one struct ca_host per instance ---- */

static void host_log(void *userdata, int level, const char *msg)
{
        struct manager_cache *c = userdata;

        log_full(level, "%s: %s", c->name, msg);
}

/*
 * An adapter knows only its own keys: its "unknown key (expected ...)" left out the daemon's
 * keys of a cache section (interval, max_age...), which are as good there, and a typo of one
 * of them ("intervall") reached the adapter as a key of its own. The hint is made again from
 * both: the likelier typo of the two lists, the daemon's keys after the adapter's. A message of
 * another form (ca_section_parse()'s are documented in plugin.h) is left as it is.
 */
static const char *unknown_key_hint(const char *key, const char *msg, char *buf, size_t len)
{
        static const char prefix[] = "unknown key", mean[] = ", did you mean \"";
        const struct ca_key_spec *daemon_keys = ca_conf_key_table(true);
        char names[CA_KEY_MSG_MAX], theirs[CA_CONF_NAME_MAX + 1] = "";
        const char *list, *best, *ours;
        unsigned d_ours = 0, d_theirs = 0;
        size_t n;

        if (!key || strncmp(msg, prefix, strlen(prefix)) != 0 ||
            !(list = strstr(msg, " (expected ")) || msg[strlen(msg) - 1] != ')')
                return msg;
        if (strncmp(msg + strlen(prefix), mean, strlen(mean)) == 0) {
                const char *x = msg + strlen(prefix) + strlen(mean);

                n = strcspn(x, "\"");
                if (n < sizeof(theirs))
                        snprintf(theirs, sizeof(theirs), "%.*s", (int)n, x);
        }
        list += strlen(" (expected ");
        ours = ca_key_closest(daemon_keys, key, &d_ours);
        if (theirs[0])
                (void)ca_key_closest((const struct ca_key_spec[]){ { .name = theirs },
                                                                   CA_KEY_END },
                                     key, &d_theirs);
        best = ours && (!theirs[0] || d_ours < d_theirs) ? ours : theirs[0] ? theirs : NULL;
        snprintf(buf, len, "%s%s%s%s (expected %.*s; or a key of every cache: %s)", prefix,
                 best ? mean : "", best ? best : "", best ? "\"?" : "",
                 (int)(strlen(list) - 1), list, ca_key_names(daemon_keys, names, sizeof(names)));
        return buf;
}

static void host_key_error(void *userdata, const struct ca_section *s, const char *key,
                           const char *msg)
{
        struct manager_cache *c = userdata;
        const struct ca_conf_cache *cc = section_conf(s);
        const char *file = cc->file;
        unsigned line = cc->line;
        char hint[2 * CA_KEY_MSG_MAX];

        /* A key that is set is blamed where it was written; a missing one, on the section. */
        for (size_t i = 0; key && i < cc->n_keys; i++)
                if (strcmp(cc->keys[i].key, key) == 0) {
                        file = cc->keys[i].file;
                        line = cc->keys[i].line;
                }
        msg = unknown_key_hint(key, msg, hint, sizeof(hint));
        if (c->errors)
                ca_errors_add(c->errors, "%s:%u: %s: %s", file, line, key ? key : cc->name, msg);
        else
                log_error("%s:%u: %s: %s", file, line, key ? key : cc->name, msg);
}

static struct event_base *host_event_base(void *userdata)
{
        struct manager_cache *c = userdata;

        return c->manager->base;
}

static int host_register_cache(void *userdata, const struct ca_section *s, struct ca_cache *cache,
                               const struct ca_cache_hooks *hooks, void *hooks_userdata)
{
        struct manager_cache *c = userdata;
        int r;

        if (c->check_only)
                return -EPERM;
        if (s != c->section)
                return -EINVAL;
        if (c->cache)
                return -EEXIST;
        r = ca_cache_set_params(cache, &section_conf(s)->params);
        if (r < 0)
                return r;
        c->cache = cache;
        c->hooks = hooks;
        c->hooks_userdata = hooks_userdata;
        return 0;
}

static void host_unregister_cache(void *userdata, struct ca_cache *cache)
{
        struct manager_cache *c = userdata;

        if (!cache || c->cache != cache)
                return;
        if (c->rotate_timer)
                event_del(c->rotate_timer);
        if (c->age_event)
                event_del(c->age_event);
        c->cache = NULL;
        c->hooks = NULL;
        c->hooks_userdata = NULL;
        c->aging = false;
        c->refreshing = false;
}

static int host_check_only(void *userdata)
{
        struct manager_cache *c = userdata;

        return c->check_only;
}

static bool manager_machine_busy(struct manager *m, char *what, size_t what_len);
static void manager_guard_arm(struct manager *m);
static void cache_rotate_now(struct manager_cache *c, int refresh_error);

static int host_pressure(void *userdata, struct ca_pressure *ret)
{
        struct manager_cache *c = userdata;

        return psi_read_pressure(c->manager->psi_dir, ret);
}

/*
 * The adapters' idle time is the rotations' idle time: one decision, the same limits. A
 * rotation that runs busy because it was put off max_defer times already runs its adapter's
 * optional work too (the kernel adapter's reclaim), at the daemon's own idle priority: what
 * waits longer than that is not optional any more.
 */
static bool host_idle(void *userdata)
{
        struct manager_cache *c = userdata;

        return c->defer_exhausted || !manager_machine_busy(c->manager, NULL, 0);
}

static void host_rotate_ready(void *userdata, struct ca_cache *cache, int error)
{
        struct manager_cache *c = userdata;

        if (!c->cache || c->cache != cache || !c->refreshing) {
                log_debug("%s: rotate_ready without a refresh under way, ignoring", c->name);
                return;
        }
        c->refreshing = false;
        log_debug("%s: refresh done in %" PRIu64 " ms", c->name,
                  (ca_now_usec() - c->refresh_started_usec) / 1000);
        cache_rotate_now(c, error);
}

/* Adapters working on the loop in steps of their own keep each within an aging slice's time. */
static uint64_t host_slice_usec(void *userdata)
{
        struct manager_cache *c = userdata;

        return c->manager->conf->slice_time_usec;
}

static const struct ca_host_ops host_ops = {
        .log = host_log,
        .key_error = host_key_error,
        .event_base = host_event_base,
        .register_cache = host_register_cache,
        .unregister_cache = host_unregister_cache,
        .check_only = host_check_only,
        .pressure = host_pressure,
        .idle = host_idle,
        .rotate_ready = host_rotate_ready,
        .slice_usec = host_slice_usec,
};

/* ---- rotation and aging ---- */

static void manager_update_status(struct manager *m);

static uint64_t cache_effective_interval(const struct ca_conf *conf, const struct ca_conf_cache *cc)
{
        return cc->interval_usec ? cc->interval_usec : conf->interval_usec;
}

/* Timers that have nothing to do are off: a disabled or cache-less entry has none armed. */
static void cache_arm(struct manager_cache *c)
{
        struct timeval tv;

        if (!c->rotate_timer)
                return;
        event_del(c->rotate_timer);
        if (!c->enabled || !c->cache)
                return;
        c->period_start_usec = ca_now_usec();
        c->timer_usec = c->interval_usec;
        tv = usec_to_timeval(c->timer_usec);
        event_add(c->rotate_timer, &tv);
}

/*
 * The interval changed (a reload, SetInterval, the default's change): the next rotation
 * comes at the new interval from the timer's last one (at once when that is past; Rotate()
 * does not move the timer), not a whole new interval from now. Were the timer restarted,
 * reloads that change the interval more often than it runs would postpone every rotation
 * for ever.
 */
static void cache_arm_keep_phase(struct manager_cache *c)
{
        uint64_t elapsed = ca_now_usec() - c->period_start_usec;
        struct timeval tv;

        if (!c->rotate_timer || !c->enabled || !c->cache ||
            !event_pending(c->rotate_timer, EV_TIMEOUT, NULL)) {
                cache_arm(c);
                return;
        }
        event_del(c->rotate_timer);
        c->timer_usec = elapsed < c->interval_usec ? c->interval_usec - elapsed : 0;
        tv = usec_to_timeval(c->timer_usec);
        event_add(c->rotate_timer, &tv);
}

/*
 * Whether the machine is busy enough to put a rotation off: PSI "some avg10" above the
 * configured percentage. Unreadable PSI (an older kernel, CONFIG_PSI off) means no gating.
 * @what (may be NULL) says which limit was passed.
 */
static bool manager_machine_busy(struct manager *m, char *what, size_t what_len)
{
        static const char *const names[] = { "cpu", "memory" };
        const double limits[] = { m->conf->idle_cpu_pressure, m->conf->idle_memory_pressure };
        char path[4096];
        double pct;
        int r;

        for (size_t i = 0; i < 2; i++) {
                if (limits[i] <= 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", m->psi_dir, names[i]);
                r = psi_read_some_avg10(path, &pct);
                if (r < 0) {
                        if (!m->psi_missing_logged)
                                log_full_errno(LOG_NOTICE, r,
                                               "Pressure stall information unavailable (%s: %m), "
                                               "rotations are not deferred to idle time",
                                               path);
                        m->psi_missing_logged = true;
                        return false;
                }
                if (pct > limits[i]) {
                        if (what)
                                snprintf(what, what_len, "%s pressure %.2f%% > %.2f%%",
                                         names[i], pct, limits[i]);
                        return true;
                }
        }
        return false;
}

/* Idle gating: put the rotation off while the machine is busy, max_defer times in a row. */
static bool cache_defer(struct manager_cache *c)
{
        struct manager *m = c->manager;
        char what[128];

        if (m->conf->idle_cpu_pressure <= 0 && m->conf->idle_memory_pressure <= 0)
                return false;
        c->defer_exhausted = false;
        if (!manager_machine_busy(m, what, sizeof(what))) {
                c->defer_streak = 0;
                c->defer_since_usec = 0;
                return false;
        }
        if (c->defer_streak >= m->conf->max_defer) {
                log_debug("%s: %s, but deferred %u time%s already: rotating%s", c->name, what,
                          c->defer_streak, c->defer_streak == 1 ? "" : "s",
                          m->conf->max_defer > 0 ? ", and the adapter's work with it" : "");
                c->defer_streak = 0;
                c->defer_since_usec = 0;
                /* max_defer = 0 defers nothing: rotations run, optional work waits. */
                c->defer_exhausted = m->conf->max_defer > 0;
                return false;
        }
        if (c->defer_streak++ == 0)
                c->defer_since_usec = now_realtime_usec();
        c->deferred++;
        log_debug("%s: %s, rotation deferred (%u in a row)", c->name, what, c->defer_streak);
        return true;
}

/* The aging guard runs while some cache ages (timers that have nothing to do are off). */
static void manager_guard_arm(struct manager *m)
{
        struct timeval tv;

        if (!m->aging_guard || evtimer_pending(m->aging_guard, NULL))
                return;
        tv = usec_to_timeval(m->conf->slice_time_usec * CA_AGING_GUARD_SLICES);
        /* From now, not from when this loop iteration began: the guard may have run a slice. */
        event_base_update_cache_time(m->base);
        evtimer_add(m->aging_guard, &tv);
}

/*
 * Run aging slices until the cache has nothing pending: after a rotation, or after an age
 * was lowered (the library's re-sweep). Work that finds slices still running adds to them.
 */
static void cache_start_aging(struct manager_cache *c)
{
        struct ca_stats st;

        if (!c->aging) {
                ca_cache_stats(c->cache, &st);
                c->reclaimed_before = st.reclaimed;
                c->aging = true;
                c->last_slice_usec = ca_now_usec();
                /* Aging that begins after a pause is not starved yet. */
                if (!c->manager->aging_guard || !evtimer_pending(c->manager->aging_guard, NULL))
                        c->manager->last_slice_usec = c->last_slice_usec;
        }
        event_active(c->age_event, 0, 0);
        manager_guard_arm(c->manager);
}

/* Apply aging parameters now; a lowered age starts its re-sweep at once. */
static int cache_set_params(struct manager_cache *c, const struct ca_params *p)
{
        int r;

        r = ca_cache_set_params(c->cache, p);
        if (r < 0)
                return r;
        if (c->age_event && ca_cache_pending(c->cache) > 0)
                cache_start_aging(c);
        return 0;
}

/* The rotation proper, once the cache is refreshed (@refresh_error: how that went). */
static void cache_rotate_now(struct manager_cache *c, int refresh_error)
{
        size_t due;

        if (refresh_error < 0)
                log_warning_errno(refresh_error, "%s: Failed to refresh the cache: %m, "
                                  "rotating what it holds", c->name);
        if (c->aging) {
                /* The last rotation's work is not done: the cache falls behind. */
                if (c->rotations_behind++ == 0) {
                        log_warning("%s: falling behind: a rotation begins before the last one's "
                                    "aging is done (%zu objects pending)", c->name,
                                    ca_cache_pending(c->cache));
                        manager_update_status(c->manager);
                        manager_bus_cache_changed(c->manager->bus, c);
                }
        }
        due = ca_cache_rotate(c->cache);
        log_debug("%s: rotation, %zu object%s due", c->name, due, due == 1 ? "" : "s");
        cache_start_aging(c);
}

static int cache_rotate(struct manager_cache *c, bool forced)
{
        int r = 0;

        if (!c->cache)
                return -ESTALE;
        if (c->refreshing) {
                /* One refresh at a time: a slow source slows its own rotations only. */
                c->skipped_refreshing++;
                log_debug("%s: refresh under way for %" PRIu64 " ms, rotation skipped", c->name,
                          (ca_now_usec() - c->refresh_started_usec) / 1000);
                return 0;
        }
        if (!forced && cache_defer(c))
                return 0;

        if (c->hooks && c->hooks->before_rotate) {
                c->refreshing = true;
                c->refresh_started_usec = ca_now_usec();
                r = c->hooks->before_rotate(c->cache, c->hooks_userdata);
                if (r == CA_ROTATE_LATER)
                        return 0; /* host_rotate_ready() rotates (or already did) */
                if (!c->refreshing)
                        return 0; /* ready was called, yet not CA_ROTATE_LATER: rotated once */
                c->refreshing = false;
                if (r > 0) {
                        log_warning("%s: before_rotate answered %d, which means nothing; "
                                    "rotating", c->name, r);
                        r = 0;
                }
        }
        if (!c->cache) /* the hook gave up on its cache */
                return -ESTALE;
        cache_rotate_now(c, r);
        return 0;
}

static void cache_rotate_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct manager_cache *c = userdata;

        c->period_start_usec = ca_now_usec();
        if (c->timer_usec != c->interval_usec)
                cache_arm(c); /* the first period after a change of interval was shorter */
        cache_rotate(c, false);
}

/* The rotation's row of the cache's history: the library's figures, then the adapter's. */
static void cache_record_history(struct manager_cache *c, const struct ca_stats *st)
{
        int r;

        r = history_begin_row(c->history, now_realtime_usec(), st);
        if (r >= 0) {
                manager_cache_adapter_stats(c, history_add_adapter, c->history);
                r = history_end_row(c->history);
        }
        if (r < 0)
                log_warning_errno(r, "%s: Failed to record the rotation in the history: %m, "
                                  "ignoring", c->name);
        else if (!c->history_bound_logged &&
                 history_capacity(c->history) < c->manager->conf->history_rotations) {
                c->history_bound_logged = true;
                log_notice("%s: its history keeps %zu rotations, not history_rotations = %u: "
                           "%zu bytes a rotation, at most %d MiB a cache", c->name,
                           history_capacity(c->history), c->manager->conf->history_rotations,
                           history_bytes_per_row(c->history), HISTORY_BYTES_MAX >> 20);
        }
}

/*
 * metrics_file, after each rotation (and at start and reload): a failure is logged once, and
 * again only after a write that worked.
 */
static void manager_write_metrics(struct manager *m)
{
        char reason[512];
        int r;

        if (!m->conf->metrics_file)
                return;
        r = metrics_write_file(m, m->conf->metrics_file, reason, sizeof(reason));
        if (r < 0 && !m->metrics_failed)
                log_warning("Failed to write metrics to %s: %s, ignoring",
                            m->conf->metrics_file, reason);
        else if (r >= 0 && m->metrics_failed)
                log_info("Metrics written to %s again", m->conf->metrics_file);
        m->metrics_failed = r < 0;
}

static void cache_rotation_done(struct manager_cache *c)
{
        struct manager *m = c->manager;
        struct ca_stats st;

        ca_cache_stats(c->cache, &st);
        c->last_reclaimed = st.reclaimed >= c->reclaimed_before ? st.reclaimed - c->reclaimed_before
                                                                : st.reclaimed;
        c->aging = false;
        if (c->rotations_behind > 0)
                log_info("%s: caught up, after %" PRIu32 " rotation%s behind", c->name,
                         c->rotations_behind, c->rotations_behind == 1 ? "" : "s");
        c->rotations_behind = 0;
        log_debug("%s: rotation %" PRIu64 " done: %" PRIu64 " object%s, %" PRIu64
                  " reclaimed (%" PRIu64 " single-use in all), %" PRIu64 " us, longest slice %"
                  PRIu64 " us",
                  c->name, st.rotations, st.objects, st.objects == 1 ? "" : "s",
                  c->last_reclaimed, st.reclaimed_single_use,
                  st.last_rotation_duration_usec, st.longest_slice_usec);
        /* ages = auto moves them: say where they settled, once per move */
        if (st.current_single_use_age != c->logged_ages[0] ||
            st.current_max_age != c->logged_ages[1]) {
                log_debug("%s: ages in force %" PRIu64 "/%" PRIu64 " (single-use/max), %" PRIu64
                          " refaults, %.2f%% of the reclaimed",
                          c->name, st.current_single_use_age, st.current_max_age, st.refaults,
                          (double)st.refault_share_ppm / 10000.0);
                c->logged_ages[0] = st.current_single_use_age;
                c->logged_ages[1] = st.current_max_age;
        }
        cache_record_history(c, &st);
        manager_update_status(m);
        manager_write_metrics(m);
        if (m->bus)
                manager_bus_cache_changed(m->bus, c);
}

/* One aging slice, from the slice event or from the guard. */
static void cache_age_slice(struct manager_cache *c)
{
        const struct ca_conf *conf = c->manager->conf;
        size_t pending;

        if (!c->cache || !c->aging) /* the guard may have finished the work already */
                return;
        c->last_slice_usec = ca_now_usec();
        c->manager->last_slice_usec = c->last_slice_usec;
        pending = ca_cache_age(c->cache, conf->slice_budget,
                               c->last_slice_usec + conf->slice_time_usec);
        if (c->hooks && c->hooks->after_age)
                c->hooks->after_age(c->cache, c->hooks_userdata);
        if (!c->cache) /* after_age may have given up on the cache */
                return;
        if (pending > 0) {
                /* Yield: the base polls before it runs this low-priority event again. */
                event_active(c->age_event, 0, 0);
                return;
        }
        cache_rotation_done(c);
}

static void cache_age_cb(evutil_socket_t fd, short what, void *userdata)
{
        cache_age_slice(userdata);
}

/*
 * Every CA_AGING_GUARD_SLICES slice times while a cache ages: when no slice at all ran
 * meanwhile, one for the cache that waited longest.
 */
static void on_aging_guard(evutil_socket_t fd, short what, void *userdata)
{
        struct manager *m = userdata;
        uint64_t starved_usec = m->conf->slice_time_usec * CA_AGING_GUARD_SLICES;
        struct manager_cache *oldest = NULL;
        bool aging = false;

        for (size_t i = 0; i < m->n_caches; i++) {
                struct manager_cache *c = m->caches[i];

                if (!c->aging || !c->cache)
                        continue;
                if (!oldest || c->last_slice_usec < oldest->last_slice_usec)
                        oldest = c;
        }
        if (oldest && ca_now_usec() - m->last_slice_usec >= starved_usec) {
                log_debug("%s: no aging slice for %" PRIu64 " us: one runs now", oldest->name,
                          ca_now_usec() - m->last_slice_usec);
                cache_age_slice(oldest);
        }
        for (size_t i = 0; i < m->n_caches && !aging; i++)
                aging = m->caches[i]->aging && m->caches[i]->cache;
        if (aging)
                manager_guard_arm(m);
}

/* ---- cache entries ---- */

static struct manager_cache *cache_free(struct manager_cache *c)
{
        if (!c)
                return NULL;
        if (c->rotate_timer)
                event_del(c->rotate_timer);
        if (c->age_event)
                event_del(c->age_event);
        if (c->instance)
                c->plugin->destroy(c->instance);
        if (c->rotate_timer)
                event_free(c->rotate_timer);
        if (c->age_event)
                event_free(c->age_event);
        section_free(c->section);
        history_free(c->history);
        free(c->adapter);
        free(c->name);
        free(c);
        return NULL;
}

/*
 * Create the plugin instance of section @cc (of configuration @conf). With @check_only the
 * plugin only validates its keys and nothing is kept. Every problem is added to @errors.
 */
static int cache_create(struct manager *m, const struct ca_conf *conf,
                        const struct ca_conf_cache *cc, bool check_only, struct ca_errors *errors,
                        struct manager_cache **ret)
{
        const struct ca_plugin *plugin;
        struct manager_cache *c;
        size_t n_errors = errors->n;
        int r;

        r = plugins_get(m->plugins, plugins_dir(conf), cc, &plugin, errors);
        if (r < 0)
                return r;

        c = calloc(1, sizeof(*c));
        if (!c)
                goto out_oom;
        c->manager = m;
        c->plugin = plugin;
        c->check_only = check_only;
        c->errors = errors;
        c->host = (struct ca_host){ .ops = &host_ops, .userdata = c };
        c->interval_usec = cache_effective_interval(conf, cc);
        c->interval_is_default = cc->interval_usec == 0;
        c->enabled = cc->enabled;
        c->name = strdup(cc->name);
        c->adapter = strdup(cc->adapter);
        c->section = section_new(cc);
        if (!c->name || !c->adapter || !c->section)
                goto out_oom;
        if (!check_only) {
                c->rotate_timer = event_new(m->base, -1, EV_PERSIST, cache_rotate_cb, c);
                c->age_event = event_new(m->base, -1, 0, cache_age_cb, c);
                c->history = history_new(conf->history_rotations);
                if (!c->rotate_timer || !c->age_event || !c->history)
                        goto out_oom;
                event_priority_set(c->age_event, CA_PRIO_SLICE);
        }

        r = plugin->create(&c->host, c->section, &c->instance);
        if (r < 0) {
                if (errors->n == n_errors)
                        ca_errors_add(errors, "%s:%u: [cache %s]: adapter '%s' failed: %s",
                                      cc->file, cc->line, cc->name, cc->adapter, strerror(-r));
                c->instance = NULL;
                cache_free(c);
                return r;
        }
        if (!check_only && !c->cache) {
                ca_errors_add(errors, "%s:%u: [cache %s]: adapter '%s' registered no cache",
                              cc->file, cc->line, cc->name, cc->adapter);
                cache_free(c);
                return -EINVAL;
        }
        if (check_only || errors->n > n_errors) {
                /* Nothing is kept from a check; an instance that reported errors is refused. */
                r = errors->n > n_errors ? -EINVAL : 0;
                cache_free(c);
                if (r < 0)
                        return r;
                *ret = NULL;
                return 0;
        }
        c->errors = NULL;
        *ret = c;
        return 0;

out_oom:
        ca_errors_add(errors, "%s:%u: [cache %s]: out of memory", cc->file, cc->line, cc->name);
        cache_free(c);
        return -ENOMEM;
}

/* Whether an entry must be recreated for section @cc: another adapter, or other adapter keys. */
static bool cache_needs_recreate(const struct manager_cache *c, const struct ca_conf_cache *cc)
{
        const struct ca_conf_cache *old = section_conf(c->section);

        if (strcmp(old->adapter, cc->adapter) != 0 || old->n_keys != cc->n_keys)
                return true;
        for (size_t i = 0; i < old->n_keys; i++) {
                bool same = false;

                for (size_t j = 0; j < cc->n_keys; j++)
                        if (strcmp(old->keys[i].key, cc->keys[j].key) == 0) {
                                same = strcmp(old->keys[i].value, cc->keys[j].value) == 0;
                                break;
                        }
                if (!same)
                        return true;
        }
        return false;
}

/* ---- the manager ---- */

static void manager_update_status(struct manager *m)
{
        uint64_t objects = 0, reclaimed = 0, deferred = 0;
        size_t behind = 0;
        char behind_text[64] = "";
        struct ca_stats st;

        for (size_t i = 0; i < m->n_caches; i++) {
                struct manager_cache *c = m->caches[i];

                if (!c->cache)
                        continue;
                ca_cache_stats(c->cache, &st);
                objects += st.objects;
                reclaimed += c->last_reclaimed;
                deferred += c->deferred;
                behind += c->rotations_behind > 0;
        }
        if (behind)
                snprintf(behind_text, sizeof(behind_text), ", %zu behind", behind);
        if (deferred)
                notify_status("%zu cache%s, %" PRIu64 " object%s, %" PRIu64
                              " reclaimed in the last rotations, %" PRIu64 " rotation%s "
                              "deferred%s",
                              m->n_caches, m->n_caches == 1 ? "" : "s", objects,
                              objects == 1 ? "" : "s", reclaimed, deferred,
                              deferred == 1 ? "" : "s", behind_text);
        else
                notify_status("%zu cache%s, %" PRIu64 " object%s, %" PRIu64
                              " reclaimed in the last rotations%s",
                              m->n_caches, m->n_caches == 1 ? "" : "s", objects,
                              objects == 1 ? "" : "s", reclaimed, behind_text);
}

static void manager_apply_log_level(struct manager *m)
{
        log_set_level(m->log_level_set ? m->log_level : m->conf->log_level);
}

static void on_sigterm(evutil_socket_t sig, short what, void *userdata)
{
        struct manager *m = userdata;

        log_info("Received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
        notify_stopping();
        event_base_loopbreak(m->base);
}

static void on_sighup(evutil_socket_t sig, short what, void *userdata)
{
        struct manager *m = userdata;
        struct ca_errors errors = { 0 };

        log_info("Received SIGHUP");
        (void)manager_reload(m, &errors); /* logged there */
        ca_errors_clear(&errors);
}

static void on_watchdog(evutil_socket_t fd, short what, void *userdata)
{
        /* Sent from the loop itself: a loop stuck in a slice stops the pings. */
        notify_watchdog();
}

int manager_new(const struct manager_options *opts, struct manager **ret)
{
        struct event_config *cfg;
        struct manager *m;
        const char *e;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->config_path = opts->config_path ? strdup(opts->config_path) : NULL;
        m->bus_name = strdup(opts->bus ? opts->bus : "system");
        e = getenv("CACHEAGED_PSI_DIR");
        m->psi_dir = strdup(e && *e ? e : PSI_DIR_DEFAULT);
        m->check_only = opts->check_only;
        m->log_level_set = opts->log_level_set;
        m->log_level = opts->log_level;
        m->start_realtime_usec = now_realtime_usec();
        if ((opts->config_path && !m->config_path) || !m->bus_name || !m->psi_dir ||
            ca_conf_dropin_dir(m->config_path, &m->dropin_dir) < 0)
                goto out_free;

        cfg = event_config_new();
        if (!cfg)
                goto out_free;
        /* After each slice, look for new events before running the next one. */
        event_config_set_max_dispatch_interval(cfg, NULL, 1, CA_PRIO_SLICE);
        m->base = event_base_new_with_config(cfg);
        event_config_free(cfg);
        if (!m->base || event_base_priority_init(m->base, CA_PRIO_N) < 0)
                goto out_free;
        m->plugins = plugins_new();
        if (!m->plugins)
                goto out_free;
        *ret = m;
        return 0;

out_free:
        manager_free(m);
        return -ENOMEM;
}

struct manager *manager_free(struct manager *m)
{
        if (!m)
                return NULL;
        m->bus = manager_bus_free(m->bus);
        /* Instances before their modules, and before the base their events live on. */
        for (size_t i = 0; i < m->n_caches; i++)
                cache_free(m->caches[i]);
        free(m->caches);
        m->plugins = plugins_free(m->plugins);
        if (m->sig_term)
                event_free(m->sig_term);
        if (m->sig_int)
                event_free(m->sig_int);
        if (m->sig_hup)
                event_free(m->sig_hup);
        if (m->watchdog_timer)
                event_free(m->watchdog_timer);
        if (m->aging_guard)
                event_free(m->aging_guard);
        if (m->base)
                event_base_free(m->base);
        ca_conf_free(m->conf);
        free(m->psi_dir);
        free(m->bus_name);
        free(m->failed_files);
        free(m->dropin_dir);
        free(m->config_path);
        free(m);
        return NULL;
}

static int manager_add_signal(struct manager *m, int sig, event_callback_fn cb,
                              struct event **ret)
{
        struct event *ev;

        ev = evsignal_new(m->base, sig, cb, m);
        if (!ev)
                return -ENOMEM;
        event_priority_set(ev, CA_PRIO_HIGH);
        if (event_add(ev, NULL) < 0) {
                event_free(ev);
                return -EIO;
        }
        *ret = ev;
        return 0;
}

/*
 * Let the plugins check the sections of a configuration that had errors, adding theirs to
 * @errors; creates nothing. Sections without an adapter are the parser's to report, and with
 * a refused plugin_dir every plugin would be looked for in the wrong place.
 */
static void check_partial_conf(struct manager *m, const struct ca_conf *conf,
                               struct ca_errors *errors)
{
        if (conf->plugin_dir_refused)
                return;
        for (size_t i = 0; i < conf->n_caches; i++) {
                struct manager_cache *c = NULL;

                if (conf->caches[i].adapter)
                        (void)cache_create(m, conf, &conf->caches[i], true, errors, &c);
        }
}

int manager_start(struct manager *m)
{
        struct ca_errors errors = { 0 };
        uint64_t watchdog_usec;
        bool failed = false;
        int r;

        r = ca_conf_load_partial(m->config_path, &m->conf, &errors);
        if (r == -ENOENT && m->config_path && strcmp(m->bus_name, "user") == 0) {
                /*
                 * A user's instance whose user has written no configuration yet: its unit
                 * names the file, and a start that failed on it would be restarted every few
                 * seconds for as long as the session lasts. It runs with no cache instead, as
                 * the system instance does without its main file, until a reload finds one.
                 */
                ca_errors_clear(&errors);
                log_notice("%s does not exist (nor %s.d/): no cache to age; write it, then "
                           "reload (systemctl --user reload cacheaged)", m->config_path,
                           m->config_path);
                r = ca_conf_new(&m->conf);
        }
        if (r == -EINVAL && m->conf) {
                /* Every error in one run: the plugins check what the parser could read. */
                check_partial_conf(m, m->conf, &errors);
                m->conf = ca_conf_free(m->conf);
        }
        if (r < 0) {
                manager_start_failed(m, &errors);
                return r;
        }
        manager_apply_log_level(m);

        m->caches = calloc(m->conf->n_caches ? m->conf->n_caches : 1, sizeof(*m->caches));
        if (!m->caches)
                return log_error_errno(ENOMEM, "Out of memory");
        /* Go through every section, so that all the errors are reported at once. */
        for (size_t i = 0; i < m->conf->n_caches; i++) {
                struct manager_cache *c = NULL;

                r = cache_create(m, m->conf, &m->conf->caches[i], m->check_only, &errors, &c);
                if (r < 0)
                        failed = true;
                else if (c)
                        m->caches[m->n_caches++] = c;
        }
        if (failed || errors.n > 0) {
                manager_start_failed(m, &errors);
                return -EINVAL;
        }
        if (m->check_only)
                return 0;

        r = manager_add_signal(m, SIGTERM, on_sigterm, &m->sig_term);
        if (r >= 0)
                r = manager_add_signal(m, SIGINT, on_sigterm, &m->sig_int);
        if (r >= 0)
                r = manager_add_signal(m, SIGHUP, on_sighup, &m->sig_hup);
        if (r < 0)
                return log_error_errno(r, "Failed to watch signals: %m");

        watchdog_usec = notify_watchdog_usec();
        if (watchdog_usec > 0) {
                struct timeval tv = usec_to_timeval(watchdog_usec / 2);

                m->watchdog_timer = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
                if (!m->watchdog_timer)
                        return log_error_errno(ENOMEM, "Out of memory");
                event_priority_set(m->watchdog_timer, CA_PRIO_HIGH);
                event_add(m->watchdog_timer, &tv);
                log_debug("Watchdog: pinging every %" PRIu64 " us", watchdog_usec / 2);
        }

        m->aging_guard = evtimer_new(m->base, on_aging_guard, m);
        if (!m->aging_guard)
                return log_error_errno(ENOMEM, "Out of memory");
        event_priority_set(m->aging_guard, CA_PRIO_HIGH);

        if (strcmp(m->bus_name, "none") != 0) {
                r = manager_bus_new(m, m->bus_name, &m->bus);
                if (r < 0)
                        return r; /* logged there */
        }

        for (size_t i = 0; i < m->n_caches; i++)
                cache_arm(m->caches[i]);
        return 0;
}

int manager_run(struct manager *m)
{
        log_info("Started, %zu cache%s", m->n_caches, m->n_caches == 1 ? "" : "s");
        notify_ready();
        manager_update_status(m);
        manager_write_metrics(m);
        if (m->watchdog_timer)
                notify_watchdog();
        if (event_base_dispatch(m->base) < 0)
                return log_error_errno(EIO, "Event loop failed");
        return m->exit_status;
}

struct event_base *manager_event_base(struct manager *m)
{
        return m->base;
}

const char *manager_failed_files(const struct manager *m, size_t *ret_n_errors)
{
        *ret_n_errors = m->n_failed_errors;
        return m->failed_files;
}

const struct ca_conf *manager_conf(const struct manager *m)
{
        return m->conf;
}

const char *manager_dropin_dir(const struct manager *m)
{
        return m->dropin_dir;
}

uint64_t manager_start_realtime_usec(const struct manager *m)
{
        return m->start_realtime_usec;
}

size_t manager_n_caches(const struct manager *m)
{
        return m->n_caches;
}

struct manager_cache *manager_cache_at(struct manager *m, size_t i)
{
        return i < m->n_caches ? m->caches[i] : NULL;
}

struct manager_cache *manager_find_cache(struct manager *m, const char *name)
{
        for (size_t i = 0; i < m->n_caches; i++)
                if (strcmp(m->caches[i]->name, name) == 0)
                        return m->caches[i];
        return NULL;
}

uint64_t manager_default_interval_usec(const struct manager *m)
{
        return m->conf->interval_usec;
}

int manager_set_default_interval(struct manager *m, uint64_t usec)
{
        if (usec < CA_INTERVAL_MIN_USEC || usec > CA_INTERVAL_MAX_USEC)
                return -EINVAL;
        m->conf->interval_usec = usec;
        for (size_t i = 0; i < m->n_caches; i++) {
                struct manager_cache *c = m->caches[i];

                if (!c->interval_is_default || c->interval_usec == usec)
                        continue;
                c->interval_usec = usec;
                cache_arm_keep_phase(c);
        }
        return 0;
}

int manager_cache_set_interval(struct manager_cache *c, uint64_t usec)
{
        if (usec < CA_INTERVAL_MIN_USEC || usec > CA_INTERVAL_MAX_USEC)
                return -EINVAL;
        c->interval_is_default = false;
        if (c->interval_usec == usec)
                return 0;
        c->interval_usec = usec;
        cache_arm_keep_phase(c);
        return 0;
}

int manager_cache_set_params(struct manager_cache *c, const struct ca_params *p)
{
        if (ca_cache_validate_params(p) < 0)
                return -EINVAL;
        if (!c->cache)
                return -ESTALE;
        return cache_set_params(c, p);
}

int manager_cache_set_enabled(struct manager_cache *c, bool enabled)
{
        if (c->enabled == enabled)
                return 0;
        c->enabled = enabled;
        c->defer_streak = 0;
        cache_arm(c);
        return 0;
}

int manager_rotate(struct manager *m, struct manager_cache *c)
{
        if (c)
                return cache_rotate(c, true);
        for (size_t i = 0; i < m->n_caches; i++)
                if (m->caches[i]->enabled)
                        cache_rotate(m->caches[i], true);
        return 0;
}

void manager_reset_statistics(struct manager *m, struct manager_cache *c)
{
        if (!c) {
                for (size_t i = 0; i < m->n_caches; i++)
                        manager_reset_statistics(m, m->caches[i]);
                return;
        }
        if (c->cache)
                ca_cache_reset_stats(c->cache);
        c->deferred = 0;
        c->reclaimed_before = 0;
        c->last_reclaimed = 0;
        history_counters_reset(c->history);
        manager_bus_cache_changed(m->bus, c);
}

/*
 * Reload, in three steps so that a bad configuration changes nothing: parse and check every
 * section (the plugins validate their keys), create the instances of new and changed
 * sections, and only then swap: removed and replaced instances are destroyed, kept ones get
 * their new parameters in place (no object lost).
 */
/* Whether the reload of @conf makes a new instance for section @cc. */
static bool reload_creates(struct manager *m, const struct ca_conf_cache *cc)
{
        struct manager_cache *old = manager_find_cache(m, cc->name);

        return !old || cache_needs_recreate(old, cc);
}

struct reload_check {
        struct manager *manager;
        const struct ca_conf *conf;
        bool partial; /* the parser found errors: the plugins check what it read, no more */
};

/*
 * Whether the reload runs any plugin code: only for sections new or changed (adapter or
 * keys). A section the same as the one in force was accepted by the same plugin already and
 * keeps its instance: checking it again would only cost the fork, which is not cheap for a
 * large daemon (the child copies the page tables, and every page the parent writes after it
 * faults once: 63,000 faults a second, the loop's largest cost, in the soak's 5,000,000
 * objects reloaded three times a second).
 */
static bool reload_runs_plugins(struct manager *m, const struct ca_conf *conf)
{
        for (size_t i = 0; i < conf->n_caches; i++)
                if (conf->caches[i].adapter && reload_creates(m, &conf->caches[i]))
                        return true;
        return false;
}

/*
 * In a child (isolate.h): every new or changed section checked, then the instances the
 * reload would make, made, as the reload will make them. The child's copies are left to its
 * exit.
 */
static int reload_check(void *userdata, struct ca_errors *errors, struct isolate *iso)
{
        struct reload_check *rc = userdata;
        struct manager *m = rc->manager;
        const struct ca_conf *conf = rc->conf;
        bool failed = false;

        /* The parent logs what matters again when it makes the instances. */
        if (log_get_level() > LOG_WARNING)
                log_set_level(LOG_WARNING);
        if (rc->partial && conf->plugin_dir_refused)
                return 0;
        /* A partial one: only the check of what the parser read, as check_partial_conf(). */
        for (int create = 0; create < (rc->partial ? 1 : 2) && !failed && errors->n == 0; create++)
                for (size_t i = 0; i < conf->n_caches; i++) {
                        const struct ca_conf_cache *cc = &conf->caches[i];
                        struct manager_cache *c = NULL;

                        if (!cc->adapter) /* only in a partial one: the parser said so */
                                continue;
                        if (!reload_creates(m, cc)) /* kept as it is: checked already */
                                continue;
                        isolate_step(iso, "%s:%u: [cache %s]: adapter '%s'", cc->file, cc->line,
                                     cc->name, cc->adapter);
                        if (cache_create(m, conf, cc, !create, errors, &c) < 0)
                                failed = true;
                }
        return failed ? -EINVAL : 0;
}

static int manager_reload_apply(struct manager *m, struct ca_conf *conf, struct ca_errors *errors)
{
        struct manager_cache **caches, **kept;
        struct reload_check rc = { .manager = m, .conf = conf };
        size_t n_errors = errors->n;
        bool set_changed = false;
        int r;

        /*
         * A plugin that crashes or hangs in create() would take every cache with it: the
         * sections are checked, and the new instances made, in a child first.
         */
        r = 0;
        if (reload_runs_plugins(m, conf))
                r = isolate_run(reload_check, &rc, conf->check_timeout_usec, errors);
        if (r < 0 && errors->n == n_errors) {
                ca_errors_add(errors, "Failed to start the check of the new configuration: %s",
                              strerror(-r));
                return r;
        }
        if (r < 0 || errors->n > n_errors)
                return -EINVAL;

        caches = calloc(conf->n_caches ? conf->n_caches : 1, sizeof(*caches));
        kept = calloc(conf->n_caches ? conf->n_caches : 1, sizeof(*kept));
        if (!caches || !kept) {
                free(caches);
                free(kept);
                ca_errors_add(errors, "Out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < conf->n_caches; i++) {
                const struct ca_conf_cache *cc = &conf->caches[i];
                struct manager_cache *old = manager_find_cache(m, cc->name);

                if (old && !cache_needs_recreate(old, cc)) {
                        kept[i] = old;
                        continue;
                }
                r = cache_create(m, conf, cc, false, errors, &caches[i]);
                if (r < 0) {
                        for (size_t j = 0; j < i; j++)
                                cache_free(caches[j]);
                        free(caches);
                        free(kept);
                        return -EINVAL;
                }
        }

        /* From here on nothing fails. */
        for (size_t i = 0; i < conf->n_caches; i++)
                if (!kept[i] && !manager_find_cache(m, conf->caches[i].name)) {
                        log_info("%s: added (adapter %s)", conf->caches[i].name,
                                 conf->caches[i].adapter);
                        set_changed = true;
                }
        for (size_t i = 0; i < m->n_caches; i++) {
                struct manager_cache *old = m->caches[i];
                bool is_kept = false;

                for (size_t j = 0; j < conf->n_caches && !is_kept; j++)
                        is_kept = kept[j] == old;
                if (is_kept)
                        continue;
                if (ca_conf_find_cache(conf, old->name)) {
                        log_info("%s: adapter or its keys changed, cache recreated", old->name);
                } else {
                        log_info("%s: removed", old->name);
                        set_changed = true;
                }
                cache_free(old);
        }
        for (size_t i = 0; i < conf->n_caches; i++) {
                const struct ca_conf_cache *cc = &conf->caches[i];
                struct manager_cache *c = kept[i];
                uint64_t interval_usec = cache_effective_interval(conf, cc);
                bool restart, new_interval;

                if (!c)
                        continue;
                section_rebind(c->section, cc);
                /*
                 * A kept cache's timer runs on: were it restarted, reloads more frequent than
                 * the interval would postpone every rotation for ever. A new interval counts
                 * from the last rotation; a new state starts afresh.
                 */
                restart = c->enabled != cc->enabled;
                new_interval = c->interval_usec != interval_usec;
                c->interval_usec = interval_usec;
                c->interval_is_default = cc->interval_usec == 0;
                if (c->enabled != cc->enabled)
                        c->defer_streak = 0;
                c->enabled = cc->enabled;
                if (c->cache)
                        (void)cache_set_params(c, &cc->params); /* validated by the parser */
                /* The history goes on; out of memory, it keeps its old length. */
                if (history_set_capacity(c->history, conf->history_rotations) < 0)
                        log_warning("%s: Out of memory for a history of %" PRIu32
                                    " rotations, keeping the old length", c->name,
                                    conf->history_rotations);
                if (restart)
                        cache_arm(c);
                else if (new_interval)
                        cache_arm_keep_phase(c);
                caches[i] = c;
        }
        free(m->caches);
        m->caches = caches;
        m->n_caches = conf->n_caches;
        ca_conf_free(m->conf);
        m->conf = conf;
        manager_apply_log_level(m);
        for (size_t i = 0; i < m->n_caches; i++)
                if (!kept[i])
                        cache_arm(m->caches[i]);
        free(kept);
        if (m->bus) {
                if (set_changed)
                        manager_bus_caches_changed(m->bus);
                /* Kept caches may have new settings: say so for every one. */
                for (size_t i = 0; i < m->n_caches; i++)
                        manager_bus_cache_changed(m->bus, m->caches[i]);
        }
        return 0;
}

int manager_reload(struct manager *m, struct ca_errors *errors)
{
        struct ca_conf *conf = NULL;
        size_t n_errors = errors->n;
        int r;

        log_info("Reloading %s", m->config_path ? m->config_path : "the configuration");
        notify_reloading();
        /* Every error in one answer, as at start: the plugins check what the parser read. */
        r = ca_conf_load_partial(m->config_path, &conf, errors);
        if (r == -EINVAL && conf) {
                struct reload_check rc = { .manager = m, .conf = conf, .partial = true };

                /*
                 * In a child too: a plugin that crashes or hangs must not take the daemon
                 * with it because the file has another error. The limit in force applies (the
                 * new one may be what failed to parse). The reload fails whatever the child says.
                 */
                if (reload_runs_plugins(m, conf))
                        (void)isolate_run(reload_check, &rc, m->conf->check_timeout_usec,
                                          errors);
                conf = ca_conf_free(conf);
        }
        if (r >= 0) {
                r = manager_reload_apply(m, conf, errors);
                if (r < 0)
                        ca_conf_free(conf);
        }
        /* Logged whoever asked (SIGHUP or the bus), before the manager hears READY=1. */
        if (r < 0) {
                log_errors(errors, n_errors);
                log_error("Reload failed, the configuration in force stays unchanged");
        } else {
                log_info("Configuration reloaded, %zu cache%s", m->n_caches,
                         m->n_caches == 1 ? "" : "s");
                manager_write_metrics(m);
        }
        /* Whatever happened, the daemon runs (the old or the new configuration). */
        notify_ready();
        manager_update_status(m);
        return r < 0 ? -EINVAL : 0;
}

void manager_cache_stats(const struct manager_cache *c, struct ca_stats *ret)
{
        if (!c->cache) {
                *ret = (struct ca_stats){ 0 };
                return;
        }
        ca_cache_stats(c->cache, ret);
}

void manager_cache_deferred(const struct manager_cache *c, const char **ret_reason,
                            uint64_t *ret_since_usec)
{
        if (c->defer_streak > 0) {
                *ret_reason = "busy";
                *ret_since_usec = c->defer_since_usec;
        } else if (c->cache) {
                ca_cache_get_deferred(c->cache, ret_reason, ret_since_usec);
        } else {
                *ret_reason = "";
                *ret_since_usec = 0;
        }
}

void manager_cache_counts(const struct manager_cache *c, struct ca_cache_counts *ret)
{
        if (!c->cache) {
                *ret = (struct ca_cache_counts){ .objects_name = "objects",
                                                 .part_name = "single-use", .mechanism = "" };
                return;
        }
        ca_cache_get_counts(c->cache, ret);
}

struct adapter_stats_filter {
        struct manager_cache *cache;
        ca_stat_emit_t emit;
        void *emit_userdata;
        bool malformed;
        size_t n;       /* passed on */
        size_t over;    /* left out past CA_ADAPTER_STATS_MAX */
};

/* Between the plugin's stats hook and the bus: what goes on the bus must be well-formed. */
static void adapter_stat_filter(void *userdata, const struct ca_adapter_stat *stat,
                                uint64_t value)
{
        struct adapter_stats_filter *f = userdata;
        char reason[256];

        if (ca_adapter_stat_check(stat, reason, sizeof(reason)) < 0) {
                /* Every malformed one of the first call that finds any, then never again. */
                if (!f->cache->adapter_stats_warned)
                        log_warning("%s: adapter %s reports a malformed statistic: %s, ignoring",
                                    f->cache->name, f->cache->adapter, reason);
                f->malformed = true;
                return;
        }
        if (f->n >= CA_ADAPTER_STATS_MAX) {
                f->over++;
                return;
        }
        f->n++;
        f->emit(f->emit_userdata, stat, value);
}

void manager_cache_adapter_stats(struct manager_cache *c, ca_stat_emit_t emit,
                                 void *emit_userdata)
{
        struct adapter_stats_filter f = { .cache = c, .emit = emit,
                                          .emit_userdata = emit_userdata };

        if (!c->cache || !c->hooks || !c->hooks->stats)
                return;
        c->hooks->stats(c->cache, c->hooks_userdata, adapter_stat_filter, &f);
        if (f.over > 0 && !c->adapter_stats_warned)
                log_warning("%s: adapter %s reports %zu statistics, more than %d: the last %zu "
                            "are left out, ignoring", c->name, c->adapter, f.n + f.over,
                            CA_ADAPTER_STATS_MAX, f.over);
        if (f.malformed || f.over > 0)
                c->adapter_stats_warned = true;
}

int manager_get_log_level(const struct manager *m)
{
        return log_get_level();
}

void manager_set_log_level(struct manager *m, int level)
{
        log_set_level(level);
}
