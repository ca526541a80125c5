/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel adapter: the host's real dentry cache. The kernel keeps and ages its dentries
 * itself, so the cache registered here holds no node; every rotation reads
 * /proc/sys/fs/dentry-state (and, for each target memory cgroup, its memory figures and
 * pressure) and shows them: the cache's objects are the host's dentries, of which negative
 * (ca_cache_set_counts()), and the rest are adapter statistics with their growth per rotation.
 *
 * Dentries are charged to the memory cgroup of the task that allocates them, so reclaim aimed
 * at one group is reclaim of that service's dentries. The target is one group (cgroup = PATH,
 * unit = NAME) or every child group of a slice (cgroup = /system.slice/\*, less exclude), each
 * a part with its own figures and passes, followed as services start and stop. With
 * action = reclaim each rotation ages each group's dentries by the finest tool the kernel has:
 *
 *   shrinker-scan   (shrinker debugfs) one pass of each superblock shrinker over the group's
 *                   objects: the dcache's referenced bit spares what was used since the last
 *                   pass, the rest goes: Chinner's rotation, per service;
 *   memory.reclaim  (cgroup v2) a pass in small steps (kernel-policy.h, struct kp_pass) over
 *                   what the group's reclaimable slab grew since the last pass (at the first
 *                   look: all of it, so what a service made before the daemon saw it is aged
 *                   like the rest), with swappiness=0 where the kernel takes that key;
 *   force_empty     (cgroup v1, only with allow_force_empty) everything the group holds, page
 *                   cache too, when its kernel memory grew that much since the last one.
 *
 * action = auto is reclaim where that pass reaches dentries (cgroup v2 on a kernel reclaiming
 * page cache with the classic LRU) and report elsewhere (cgroup v1; MGLRU, where
 * memory.reclaim takes page cache before any dentry: doc/adapters/kernel.md).
 *
 * action = drop writes 2 to /proc/sys/vm/drop_caches, host-wide, only past negative_limit or
 * negative_ratio after growth_rotations rotations of growth, at most once per min_interval.
 * Any action runs only in idle time and never under memory pressure; put off for longer than
 * the daemon's max_defer rotations (ca_host_idle() says so then), it runs anyway, on the
 * worker, at the daemon's own idle priority.
 *
 * Threads: a write to memory.reclaim, memory.force_empty or drop_caches runs the reclaim in
 * the writing thread and may take long, and asking systemd for a unit's group is a bus call.
 * So a rotation's whole refresh runs on one worker thread per instance (adapter-worker.h):
 * before_rotate hands it a job and answers CA_ROTATE_LATER; the loop, told the job is done,
 * publishes the results, logs them and calls ca_host_rotate_ready(). The worker owns what it
 * works with (the bus connection, the groups and their bases, the drop streak, the job's
 * messages); the loop owns what is published (counts, statistics). They meet in `job` and in
 * the parts: the loop reads them only while no job is under way, the worker writes them only
 * while one is.
 */

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stddef.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "cacheage/age.h"
#include "adapter-worker.h"
#include "cacheage/plugin.h"
#include "cacheage/value.h"
#include "kernel-knob.h"
#include "kernel-policy.h"
#include "kernel-sys.h"

#define KN_DROP_WHAT 2                    /* drop_caches: dentries and inodes, not page cache */
#define KN_BUS_TIMEOUT_USEC 5000000       /* a bus call to systemd */
#define KN_SWAPPINESS_KEY_MAX 32          /* bytes of "swappiness=N" */
#define KN_MSG_MAX 512                    /* bytes of one message of a job */
#define KN_JOB_MSGS 64                    /* messages one job keeps for the loop to log */
#define KN_PARTS_MAX 1024                 /* groups of a slice followed */
#define KN_EXCLUDE_MAX 64                 /* patterns of exclude */
/*
 * vm.vfs_cache_pressure is back this long after a sweep set it, at most, even while the write
 * is still in the kernel (kernel-knob.h): the shrinkers counted at the start of the write.
 */
#define KN_SWEEP_BOUND_USEC 100000
/* The window in which nothing else on the host may reclaim before a sweep raises the knob. */
#define KN_QUIET_USEC 100000
/*
 * The daemon's sleep before a sweep may overrun by this much at most: more, and the machine does
 * not run its threads on time (a starved guest: CPUs taken by the host), so the guard could not
 * keep its bound either (a loaded CI run: 2 sweeps' windows of 281 ms against 100 ms, the
 * neighbour's hot dentries taken meanwhile). A short sleep tests it when the window was already
 * measured.
 */
#define KN_LATE_USEC 20000
#define KN_PROBE_USEC 10000
#define KN_WINDOWS 64                     /* sweeps' windows kept for their median */
/*
 * A rotation's actions (writes, and the quiet windows before sweeps) take this long at most;
 * the groups left wait for the next rotation, first in line.
 */
#define KN_ROTATION_ACT_USEC 2000000

enum kn_action {
        KN_ACTION_REPORT,
        KN_ACTION_RECLAIM,
        KN_ACTION_DROP,
        KN_ACTION_AUTO,
};

/* What acts on the dentries, as the status says it. */
enum kn_mech {
        KN_MECH_REPORT,
        KN_MECH_MEMORY_RECLAIM,
        KN_MECH_FORCE_EMPTY,
        KN_MECH_SHRINKER_SCAN,
        KN_MECH_DROP_CACHES,
};

static const char *const mech_names[] = {
        [KN_MECH_REPORT] = "report",
        [KN_MECH_MEMORY_RECLAIM] = "memory.reclaim",
        [KN_MECH_FORCE_EMPTY] = "force_empty",
        [KN_MECH_SHRINKER_SCAN] = "shrinker-scan",
        [KN_MECH_DROP_CACHES] = "drop_caches",
};

#define KN_SWAPPINESS_KERNEL (-1) /* pass no swappiness= key */
#define KN_READ_ONLY_MECH "report (read-only)" /* the mechanism where its files are read-only */

struct kn_config {
        const char *cgroup;
        const char *unit;
        const char *exclude;
        int action;
        bool allow_force_empty;
        const char *reclaim_amount_text;
        uint64_t reclaim_amount;          /* bytes; 0 = auto (a pass) */
        const char *reclaim_step_text;
        uint64_t reclaim_step;
        const char *max_reclaim_text;
        uint64_t max_reclaim;
        const char *min_reclaim_text;
        uint64_t min_reclaim;
        int swappiness;
        uint64_t negative_limit;
        double negative_ratio;
        uint32_t growth_rotations;
        uint64_t min_interval_usec;
};

/* The swappiness= key of memory.reclaim: asked of the kernel once, then known. */
enum kn_key_state {
        KN_KEY_UNKNOWN,
        KN_KEY_ACCEPTED,
        KN_KEY_REFUSED,
};

/*
 * One memory cgroup acted on: the group, or one child of the slice. The worker writes it
 * during a job; the loop reads it in the done callback.
 */
struct kn_part {
        char *path;                       /* under the controller: "/system.slice/foo.service" */
        uint64_t ino;                     /* the group's cgroup id when first read */
        bool found;                       /* read at the last rotation */
        bool have_base;
        uint64_t base_bytes;              /* reclaimable slab (v2) or kernel memory (v1) the last
                                             pass left, or the lowest since; 0 at first look */
        bool draining;                    /* the last pass freed much: pass again */
        unsigned quiet;                   /* rotations since its last pass (kp_look_due()) */
        struct kp_file_window files;      /* its page cache at the last rotations */
        const char *pass_for;             /* why the last pass: NULL for growth */
        /* the last rotation's */
        struct ks_group before, after;
        bool acted, put_off;
        bool waits;                       /* the rotation's time for actions was spent first */
        struct kp_pass pass;              /* memory.reclaim */
        enum kp_how how;                  /* memory.reclaim: what the last rotation chose */
        char state[CA_CACHE_PART_STATE_MAX]; /* "", or why it is left alone (its part's) */
        uint64_t sweep_min_file;          /* page cache needed to sweep it; 0: the default */
        struct ks_shrinker_pass scan;     /* shrinker-scan */
        uint64_t act_usec;
        int act_error;
        uint64_t freed_bytes, freed_dentries;
        /* totals */
        uint64_t passes, reclaimed_bytes, reclaimed_dentries, asked_bytes, errors;
        int logged_error;                 /* the last error logged: each kind said once */
        unsigned listed;                  /* the listing that last found it (a slice) */
};

struct kn_msg {
        int level;
        char text[KN_MSG_MAX];
};

/* One rotation's refresh: asked by the loop, done by the worker. */
struct kn_job {
        /* in, from the loop */
        bool idle;
        double host_memory_pct;
        uint64_t now_usec;

        /* out, from the worker */
        int error;                        /* reading dentry-state failed */
        struct ks_dentry_state before, after;
        bool have_dentry_negative;
        uint64_t dentry_negative;
        enum kp_gate gate;
        bool acted, put_off;              /* any group (drop: the host) */
        int act_error;
        uint64_t act_usec;
        char why[KN_MSG_MAX];             /* drop: what decided it (or why not) */
        bool swap_on;                     /* a swap area is on (ks_swap_active()) */
        bool trim_ok;                     /* trims may be written (no swap, or swappiness=0) */
        uint64_t sweeps, sweeps_cut, sweeps_put_off_reclaim, sweeps_put_off_busy;
        uint64_t sweeps_put_off_late;
        uint64_t trims, trims_cut;
        uint64_t windows[KN_WINDOWS];     /* this job's sweeps' windows, usec */
        size_t n_windows;
        uint64_t quiet_read_usec, quiet_activity; /* kn_host_quiet()'s last reading */
        struct kn_msg msgs[KN_JOB_MSGS];  /* for the loop to log, in order */
        size_t n_msgs, msgs_lost;
};

struct kn {
        struct ca_host *host;
        struct kn_config cfg;
        const char *root;                 /* "/", or $CACHEAGED_KERNEL_ROOT in tests */
        struct ks_memcg memcg;
        enum kn_mech mech;
        bool group_target;
        char *slice;                      /* cgroup = PARENT/\*: PARENT; else NULL */
        char *exclude[KN_EXCLUDE_MAX];    /* exclude's patterns, copied */
        size_t n_exclude;
        bool have_dentry_negative;        /* the kernel has fs.dentry-negative */
        bool mglru;                       /* the kernel reclaims page cache with MGLRU */
        struct ca_cache *cache;

        /* the worker, and what it shares with the loop */
        struct aw *worker;
        struct kn_job job;
        struct kn_part **parts;           /* the groups, KN_PARTS_MAX at most */
        size_t n_parts;

        /* the worker's own */
        sd_bus *bus;
        struct kk_guard *guard;           /* sweeps' knob (made by create, freed by destroy) */
        unsigned listing;                 /* slice listings done */
        size_t cursor;                    /* the part the next rotation's actions start at */
        bool read_only;                   /* the kernel files it writes are read-only here */
        bool said_too_many;
        bool said_missing;                /* the group (or slice) not found: said once */
        struct kp_drop_state drop;
        /*
         * Reclaim the daemon's writes never move (ks_read_reclaim_activity()'s others), read at
         * each rotation's start: a sweep compares with the previous rotation's reading.
         */
        uint64_t others_prev, others_cur;
        unsigned others_read;             /* readings in a row, 2 at most: 2, others_prev is one */
        enum kn_key_state key_state;
        char key[KN_SWAPPINESS_KEY_MAX];

        /* the loop's: what is published */
        bool have_last;
        struct ks_dentry_state last_ds;
        uint64_t last_dentry_negative;
        struct ks_group sum;              /* the groups' figures, summed */
        uint64_t groups;                  /* groups found at the last rotation */
        uint64_t nr_dentry_growth, nr_negative_growth, kernel_growth, slab_growth;
        bool group_missing;
        uint64_t group_vanished;
        uint64_t actions, passes, put_off_busy, put_off_pressure, action_errors;
        uint64_t put_off_since_usec;      /* CLOCK_MONOTONIC; 0: not put off now */
        uint64_t last_action_usec, last_freed_dentries, last_freed_negative;
        uint64_t reclaimed_bytes, reclaimed_dentries;
        uint64_t reclaim_asked_bytes, reclaim_steps, reclaim_dry, shrinker_scanned;
        uint64_t host_memory_stall_usec;
        uint64_t loop_longest_usec;       /* the longest this adapter held the host's loop */
        uint64_t sweeps, sweeps_cut, sweeps_put_off_reclaim, sweeps_put_off_busy;
        uint64_t sweeps_put_off_late;
        uint64_t trims, trims_cut;
        uint64_t groups_trim, groups_sweep, groups_pass, groups_alone; /* at the last rotation */
        uint64_t groups_waiting;
        uint64_t windows[KN_WINDOWS];     /* the last sweeps' windows, usec, a ring */
        size_t n_windows, at_window;
        uint64_t window_max_usec;
        bool logged_read_error;
        bool pub_read_only;
};

/* ---- the worker ---- */

static uint64_t now_usec(void)
{
        return ca_now_usec();
}

static uint64_t rise(uint64_t from, uint64_t to)
{
        return to > from ? to - from : 0;
}

/*
 * A message for the loop to log when the job is done (the worker does not log). Debug messages
 * (a slice's groups found, one by one) fill half of the job's room at most, so that a warning
 * after a thousand of them is still said.
 */
static void job_say(struct kn_job *job, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void job_say(struct kn_job *job, int level, const char *fmt, ...)
{
        va_list ap;

        if (job->n_msgs == KN_JOB_MSGS || (level >= LOG_DEBUG && job->n_msgs >= KN_JOB_MSGS / 2)) {
                job->msgs_lost++;
                return;
        }
        job->msgs[job->n_msgs].level = level;
        va_start(ap, fmt);
        vsnprintf(job->msgs[job->n_msgs].text, KN_MSG_MAX, fmt, ap);
        va_end(ap);
        job->n_msgs++;
}

/* A unit's control group, asked from systemd: 0, or -ENOENT with the reason in @msg. */
static int kn_resolve_unit(struct kn *kn, char *ret, size_t len, char *msg, size_t msg_len)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *path;
        char *cgroup = NULL;
        int r;

        if (!kn->bus) {
                r = sd_bus_open_system(&kn->bus);
                if (r >= 0)
                        r = sd_bus_set_method_call_timeout(kn->bus, KN_BUS_TIMEOUT_USEC);
                if (r < 0) {
                        kn->bus = sd_bus_flush_close_unref(kn->bus);
                        snprintf(msg, msg_len, "cannot reach systemd on the system bus: %s",
                                 strerror(-r));
                        return -ENOENT;
                }
        }
        r = sd_bus_call_method(kn->bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnit", &error, &reply,
                               "s", kn->cfg.unit);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0)
                r = sd_bus_get_property_string(kn->bus, "org.freedesktop.systemd1", path,
                                               ks_unit_interface(kn->cfg.unit), "ControlGroup",
                                               &error, &cgroup);
        sd_bus_message_unref(reply);
        if (r < 0) {
                snprintf(msg, msg_len, "systemd does not know %s: %s", kn->cfg.unit,
                         error.message ? error.message : strerror(-r));
                /* A connection that broke is made anew at the next rotation. */
                if (!sd_bus_is_open(kn->bus))
                        kn->bus = sd_bus_flush_close_unref(kn->bus);
                sd_bus_error_free(&error);
                return -ENOENT;
        }
        if (!cgroup[0]) {
                snprintf(msg, msg_len, "%s has no control group (not running)", kn->cfg.unit);
                r = -ENOENT;
        } else if (ks_cgroup_path_check(cgroup, msg, msg_len) < 0 ||
                   (size_t)snprintf(ret, len, "%s", cgroup) >= len) {
                r = -ENOENT;
        }
        free(cgroup);
        return r;
}

static struct kn_part *part_free(struct kn_part *p)
{
        if (p) {
                free(p->path);
                free(p);
        }
        return NULL;
}

static struct kn_part *part_new(const char *path)
{
        struct kn_part *p = calloc(1, sizeof(*p));

        if (!p)
                return NULL;
        p->path = strdup(path);
        if (!p->path)
                return part_free(p);
        return p;
}

/* The group's level that reclaim follows: reclaimable slab (v2), kernel memory (v1). */
static uint64_t kn_level(const struct ks_group *g)
{
        return g->have_slab ? g->slab_reclaimable_bytes : g->kernel_bytes;
}

static bool kn_excluded(const struct kn *kn, const char *name)
{
        for (size_t i = 0; i < kn->n_exclude; i++)
                if (fnmatch(kn->exclude[i], name, 0) == 0)
                        return true;
        return false;
}

/* The one part of a group target, replaced when its path changes (a unit restarted elsewhere). */
static int kn_parts_one(struct kn *kn, const char *path)
{
        struct kn_part *p;

        if (kn->n_parts == 1 && strcmp(kn->parts[0]->path, path) == 0)
                return 0;
        p = part_new(path);
        if (!p)
                return -ENOMEM;
        if (kn->n_parts == 1)
                part_free(kn->parts[0]);
        kn->parts[0] = p;
        kn->n_parts = 1;
        return 0;
}

/* A slice's children, now: new ones added (their first look ahead), gone ones dropped. */
static int kn_parts_list(struct kn *kn, struct kn_job *job)
{
        char **names = NULL, msg[KN_MSG_MAX], path[KS_PATH_MAX];
        size_t n = 0, kept = 0;
        bool more = false;
        int fd, r;

        r = ks_cgroup_open(kn->root, &kn->memcg, kn->slice, &fd, msg, sizeof(msg));
        if (r == 0) {
                r = ks_cgroup_children(fd, KN_PARTS_MAX + KN_EXCLUDE_MAX, &names, &n, &more);
                close(fd);
                if (r < 0)
                        snprintf(msg, sizeof(msg), "%.400s: cannot list its groups: %s",
                                 kn->slice, strerror(-r));
        }
        if (r < 0) {
                if (!kn->said_missing)
                        job_say(job, LOG_NOTICE, "%s; looked for again at every rotation", msg);
                kn->said_missing = true;
                for (size_t i = 0; i < kn->n_parts; i++)
                        kn->parts[i] = part_free(kn->parts[i]);
                kn->n_parts = 0;
                return r;
        }
        if (kn->said_missing)
                job_say(job, LOG_INFO, "slice %s found again", kn->slice);
        kn->said_missing = false;
        kn->listing++;
        for (size_t i = 0; i < n; i++) {
                struct kn_part *p = NULL;

                if (kn_excluded(kn, names[i]))
                        continue;
                snprintf(path, sizeof(path), "%s/%s", strcmp(kn->slice, "/") ? kn->slice : "",
                         names[i]);
                for (size_t j = 0; j < kn->n_parts && !p; j++)
                        if (strcmp(kn->parts[j]->path, path) == 0)
                                p = kn->parts[j];
                if (!p) {
                        if (kn->n_parts == KN_PARTS_MAX) {
                                more = true;
                                continue;
                        }
                        p = part_new(path);
                        if (!p)
                                break;
                        kn->parts[kn->n_parts++] = p;
                        job_say(job, LOG_DEBUG, "group %s found", path);
                }
                p->listed = kn->listing;
        }
        for (size_t i = 0; i < kn->n_parts; i++) {
                struct kn_part *p = kn->parts[i];

                if (p->listed == kn->listing) {
                        kn->parts[kept++] = p;
                        continue;
                }
                job_say(job, LOG_DEBUG, "group %s went away", p->path);
                part_free(p);
        }
        kn->n_parts = kept;
        if (more && !kn->said_too_many)
                job_say(job, LOG_WARNING, "%s has more than %d groups: the others are not "
                        "followed, ignoring", kn->slice, KN_PARTS_MAX);
        kn->said_too_many = more;
        ks_names_free(names, n);
        return 0;
}

/* The groups of this rotation: 0, or -ENOENT (said in the job) when there is none to read. */
static int kn_parts_refresh(struct kn *kn, struct kn_job *job)
{
        char path[KS_PATH_MAX], msg[KN_MSG_MAX];
        int r;

        if (kn->slice)
                return kn_parts_list(kn, job);
        if (kn->cfg.unit) {
                r = kn_resolve_unit(kn, path, sizeof(path), msg, sizeof(msg));
                if (r < 0) {
                        if (!kn->said_missing)
                                job_say(job, LOG_NOTICE, "%s; %s, looked for again at every "
                                        "rotation", msg, kn->mech == KN_MECH_REPORT
                                                                 ? "reported as missing"
                                                                 : "nothing done to it");
                        kn->said_missing = true;
                        return r;
                }
        } else {
                snprintf(path, sizeof(path), "%s", kn->cfg.cgroup);
        }
        return kn_parts_one(kn, path);
}

/* memory.reclaim's key, where the kernel takes it (asked once per instance). */
static const char *kn_reclaim_key(struct kn *kn, int fd, struct kn_job *job)
{
        int r;

        if (kn->cfg.swappiness == KN_SWAPPINESS_KERNEL)
                return NULL;
        if (kn->key_state == KN_KEY_UNKNOWN) {
                r = ks_reclaim_accepts(fd, kn->key);
                if (r == 1) {
                        kn->key_state = KN_KEY_ACCEPTED;
                        job_say(job, LOG_NOTICE, "memory.reclaim takes %s here: amounts are "
                                "written with it", kn->key);
                } else if (r == 0) {
                        kn->key_state = KN_KEY_REFUSED;
                        job_say(job, LOG_NOTICE, "memory.reclaim refuses %s here (a kernel "
                                "before 6.10?): amounts are written without it", kn->key);
                }
                /* Another error: unknown still, asked again next time. */
        }
        return kn->key_state == KN_KEY_ACCEPTED ? kn->key : NULL;
}

/*
 * One write to memory.reclaim. -EINVAL with the key is the kernel refusing the key after all
 * (it said otherwise when asked): the key is dropped and the write made again without it.
 */
static int kn_reclaim_write(struct kn *kn, int fd, uint64_t bytes, struct kn_job *job)
{
        const char *key = kn_reclaim_key(kn, fd, job);
        int r;

        r = ks_reclaim(fd, bytes, key);
        if (r == -EINVAL && key) {
                kn->key_state = KN_KEY_REFUSED;
                job_say(job, LOG_NOTICE, "memory.reclaim refused %s: amounts are written "
                        "without it from now on", key);
                r = ks_reclaim(fd, bytes, NULL);
        }
        return r;
}

/*
 * Whether anything else on the host reclaims now: the activity counters (kernel-sys.h) the same
 * across KN_QUIET_USEC. A sweep raises vm.vfs_cache_pressure for every reclaim on the host, so
 * it is made only when none is under way: another group's memory.high, a memory.reclaim of
 * another tool, kswapd or direct reclaim would take its own hot dentries at the raised value.
 * The window is measured from the end of the last sweep's write (the counters were read then)
 * where it was that long ago, else it is waited for. The reclaim no write of the daemon's moves
 * (a group under its own memory.high or memory.max, kswapd, direct reclaim) must also have stood
 * still since the last rotation began: such a neighbour reclaims whenever it allocates, and a
 * quiet 100 ms only made an overlap rarer (at 300 services on 6.12 a neighbour lost 1,542 hot
 * dentries to one). And only when the machine runs the daemon on time: a sleep (the wait, or
 * KN_PROBE_USEC) that overran by KN_LATE_USEC is KN_HOST_LATE.
 */
enum kn_host { KN_HOST_QUIET, KN_HOST_RECLAIMS, KN_HOST_LATE, KN_HOST_UNWATCHED };

static enum kn_host kn_host_quiet(struct kn *kn, uint64_t *last_read_usec, uint64_t *last_activity)
{
        uint64_t a0 = *last_activity, a1, others, t = now_usec(), want, slept;

        if (kn->others_read < 2)
                return KN_HOST_UNWATCHED; /* the daemon's first rotation: nothing to compare */
        if (!*last_read_usec || t - *last_read_usec > 10 * KN_QUIET_USEC) {
                if (ks_read_reclaim_activity(kn->root, &kn->memcg, KN_PARTS_MAX, &a0, NULL) < 0)
                        return KN_HOST_RECLAIMS;
                t = now_usec();
                *last_read_usec = t;
        }
        want = t - *last_read_usec < KN_QUIET_USEC ? KN_QUIET_USEC - (t - *last_read_usec)
                                                   : KN_PROBE_USEC;
        usleep((useconds_t)want);
#ifdef CA_KERNEL_TEST_HOOKS
        /* Tests: while the file CA_KERNEL_TEST_LATE names is there, the sleep wakes 30 ms late. */
        if (getenv("CA_KERNEL_TEST_LATE") && access(getenv("CA_KERNEL_TEST_LATE"), F_OK) == 0)
                usleep(30000);
#endif
        slept = now_usec() - t;
        if (ks_read_reclaim_activity(kn->root, &kn->memcg, KN_PARTS_MAX, &a1, &others) < 0)
                return KN_HOST_RECLAIMS;
        *last_activity = a1;
        *last_read_usec = now_usec();
        /* Nor since the last rotation began: a group under its own memory.high, kswapd. */
        if (a1 != a0 || others != kn->others_prev)
                return KN_HOST_RECLAIMS;
        return slept > want + KN_LATE_USEC ? KN_HOST_LATE : KN_HOST_QUIET;
}

#ifdef CA_KERNEL_TEST_HOOKS
/*
 * Tests only (tests/hooked/meson.build builds a second kernel.so with CA_KERNEL_TEST_HOOKS):
 * with CA_KERNEL_TEST_GATE=DIR, a sweep that has set vm.vfs_cache_pressure makes DIR/held and
 * waits for DIR/go before its write (taking it), so that a test can kill the daemon, reload it
 * or start another while the knob is set; CA_KERNEL_TEST_GUARD_USEC sets the guard's bound and
 * CA_KERNEL_TEST_ACT_USEC a rotation's time for actions; CA_KERNEL_TEST_LATE=FILE makes the
 * sleep before a sweep wake late while FILE is there (kn_host_quiet()).
 * The shipped module has none of this.
 */
static void kn_test_gate(struct kn *kn)
{
        const char *dir = getenv("CA_KERNEL_TEST_GATE");
        char held[KS_PATH_MAX], go[KS_PATH_MAX];
        int fd;

        if (!dir)
                return;
        snprintf(held, sizeof(held), "%s/held", dir);
        snprintf(go, sizeof(go), "%s/go", dir);
        fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        while (unlink(go) < 0 && aw_sleep(kn->worker, 10000))
                ;
        (void)unlink(held);
}

static uint64_t kn_guard_bound(void)
{
        const char *v = getenv("CA_KERNEL_TEST_GUARD_USEC");

        return v ? strtoull(v, NULL, 10) : KN_SWEEP_BOUND_USEC;
}

/* CA_KERNEL_TEST_ACT_USEC: the rotation's time for actions (1: one group's). */
static uint64_t kn_act_budget(void)
{
        const char *v = getenv("CA_KERNEL_TEST_ACT_USEC");

        return v ? strtoull(v, NULL, 10) : KN_ROTATION_ACT_USEC;
}
#else
static uint64_t kn_guard_bound(void)
{
        return KN_SWEEP_BOUND_USEC;
}

static uint64_t kn_act_budget(void)
{
        return KN_ROTATION_ACT_USEC;
}
#endif

/*
 * One write of @bytes with vm.vfs_cache_pressure at @value for its length, set and put back
 * through the knob's guard (kernel-knob.h: recorded, locked across processes, back after
 * KN_SWEEP_BOUND_USEC at most; a lowered value's write is interrupted first). The window goes
 * into the job's statistics (@windows: a sweep's). -EINPROGRESS with nothing written when
 * another process or cache holds the knob.
 */
static int kn_knob_write(struct kn *kn, int fd, struct kn_job *job, uint64_t value,
                         uint64_t bytes, struct kk_window *ret)
{
        char msg[KK_MSG_MAX];
        int r, w;

        r = kk_set(kn->guard, value, msg, sizeof(msg));
        if (msg[0])
                job_say(job, r < 0 ? LOG_WARNING : LOG_NOTICE, "%s", msg);
        if (r == -EBUSY) {
                job->sweeps_put_off_busy++;
                return -EINPROGRESS;
        }
        if (r < 0)
                return r;
#ifdef CA_KERNEL_TEST_HOOKS
        kn_test_gate(kn);
#endif
        kk_write_begin(kn->guard);
        r = kn_reclaim_write(kn, fd, bytes, job);
        kk_write_end(kn->guard);
        w = kk_put_back(kn->guard, ret, msg, sizeof(msg));
        if (msg[0])
                job_say(job, LOG_ERR, "%s", msg);
        if (r == -EINTR)
                r = 0; /* stopped by the guard at its bound: it walked less */
        return w < 0 ? w : r;
}

/*
 * A sweep (MGLRU, where memory.reclaim meets a write from page cache at the kernel's lowest
 * priority and scans the slab in proportion to that priority: kernel-policy.h, KP_SWEEP_*):
 * the smallest write with vm.vfs_cache_pressure at KP_SWEEP_PRESSURE, and only while nothing
 * else on the host reclaims. The shrinkers' scan across it (/proc/vmstat slabs_scanned) tells
 * whether the kernel walked the LRUs more than once: then the group needs more page cache to be
 * swept. -EINPROGRESS with nothing written when the sweep is put off.
 */
static int kn_sweep(struct kn *kn, struct kn_part *p, int fd, struct kn_job *job)
{
        uint64_t scanned0, scanned1;
        struct kk_window w = { 0 };
        int r;

        switch (kn_host_quiet(kn, &job->quiet_read_usec, &job->quiet_activity)) {
        case KN_HOST_RECLAIMS:
                job->sweeps_put_off_reclaim++;
                return -EINPROGRESS;
        case KN_HOST_LATE:
                job->sweeps_put_off_late++;
                return -EINPROGRESS;
        case KN_HOST_UNWATCHED:
                return -EINPROGRESS;
        case KN_HOST_QUIET:
                break;
        }
        if (ks_read_slabs_scanned(kn->root, &scanned0) < 0)
                scanned0 = 0;
        r = kn_knob_write(kn, fd, job, KP_SWEEP_PRESSURE, KP_SWEEP_STEP, &w);
        if (r == -EINPROGRESS)
                return r;
        job->sweeps++;
        job->sweeps_cut += w.cut;
        if (job->n_windows < KN_WINDOWS)
                job->windows[job->n_windows++] = w.usec;
        if (ks_read_slabs_scanned(kn->root, &scanned1) < 0 || scanned1 < scanned0)
                scanned1 = scanned0;
        /* The write's own scanning is not another's reclaim: the quiet window starts now. */
        job->quiet_read_usec = 0;
        if (kp_sweep_overran(scanned1 - scanned0, p->before.slab_reclaimable_bytes)) {
                p->sweep_min_file = kp_sweep_min_after(p->before.file_bytes, p->sweep_min_file);
                job_say(job, LOG_NOTICE, "a sweep of %s scanned %" PRIu64 " objects, more than "
                        "twice what its %" PRIu64 " bytes of slab hold: the kernel met it below "
                        "its lowest priority, with %" PRIu64 " bytes of page cache; swept again "
                        "only with %" PRIu64 " (left alone meanwhile)", p->path,
                        scanned1 - scanned0, p->before.slab_reclaimable_bytes,
                        p->before.file_bytes, p->sweep_min_file);
        }
        return r;
}

/*
 * A trim (kernel-policy.h, KP_TRIM_*): the group's few pages of page cache taken first, with
 * vm.vfs_cache_pressure at KP_TRIM_DROP_PRESSURE (no slab scanned), then one write of
 * KP_TRIM_STEP with it at KP_TRIM_PRESSURE for the write's whole length. Pages the first write
 * could not take (dirty ones) take nothing from the second either, which then walks the LRU
 * once; pages it could take (read again meanwhile) end it early, and it walks less. Lowering the
 * knob takes no other group's dentries (their reclaim scans less slab meanwhile), so no quiet
 * window is waited for. -EINPROGRESS with nothing written when another process or cache holds
 * the knob.
 */
static int kn_trim(struct kn *kn, struct kn_part *p, int fd, struct kn_job *job)
{
        uint64_t left = rise(p->before.shmem_bytes, p->before.file_bytes);
        struct kk_window w = { 0 };
        struct ks_group g;
        int r;

        /* Referenced pages are only deactivated by a write (classic LRU): a few writes. */
        for (unsigned i = 0; left > 0 && i < KP_TRIM_DROPS; i++) {
                r = kn_knob_write(kn, fd, job, KP_TRIM_DROP_PRESSURE, KP_TRIM_STEP, &w);
                if (r == -EAGAIN)
                        break; /* what is left cannot be taken now (dirty) */
                if (r < 0)
                        return r;
                if (ks_read_group(fd, kn->memcg.version, &g) < 0)
                        break;
                left = rise(g.shmem_bytes, g.file_bytes);
        }
        r = kn_knob_write(kn, fd, job, KP_TRIM_PRESSURE, KP_TRIM_STEP, &w);
        if (r == -EINPROGRESS)
                return r;
        job->trims++;
        job->trims_cut += w.cut;
        return r;
}

/*
 * A rotation of a group by memory.reclaim (kernel-policy.h): first, no harm. A group with no page
 * cache the kernel could reclaim is trimmed; one with page cache enough is swept (MGLRU) or
 * passed over in steps (classic LRU, struct kp_pass: steps over what its reclaimable slab grew
 * since the last one, at the first look all of it); one between is left alone, and its part
 * says why. Each only when the slab grew min_reclaim since the last action, or the last one left
 * much (draining), or a look is due (classic LRU). With reclaim_amount = SIZE instead: one write
 * of that size, whatever the group (the bare loop, to compare).
 */
static int kn_memory_reclaim(struct kn *kn, struct kn_part *p, int fd, struct kn_job *job)
{
        uint64_t level = kn_level(&p->before), grown = rise(p->base_bytes, level), max;
        uint64_t file = kp_file_ref(&p->files, p->before.file_bytes);
        uint64_t reclaimable = rise(p->before.shmem_bytes, p->before.file_bytes);
        char why[CA_CACHE_PART_STATE_MAX - 32];
        struct ks_dentry_state a, b;
        struct ks_group g;
        int r;

        p->how = kn->cfg.reclaim_amount ? KP_HOW_PASS
                                        : kp_group_how(kn->mglru, reclaimable, p->sweep_min_file,
                                                       job->trim_ok, why, sizeof(why));
        if (p->how == KP_HOW_ALONE) {
                if (strncmp(p->state, "left alone: ", 12) != 0 || strcmp(p->state + 12, why))
                        job_say(job, LOG_DEBUG, "%s left alone: %s", p->path, why);
                snprintf(p->state, sizeof(p->state), "left alone: %s", why);
                return 0;
        }
        p->state[0] = '\0';
        if (kn->cfg.reclaim_amount) {
                max = kn->cfg.reclaim_amount;
                p->pass_for = NULL;
                kp_pass_begin(&p->pass, max, max, p->before.file_bytes);
        } else if (p->draining || (grown < kn->cfg.min_reclaim && p->how == KP_HOW_PASS &&
                                   kp_look_due(p->quiet, level, kn->cfg.min_reclaim,
                                               p->before.file_bytes))) {
                /*
                 * What the last pass left, or a look for what passes left: as much as
                 * max_reclaim, the steps say when it is all.
                 */
                p->pass_for = p->draining ? "what the last one left"
                                          : "a look for what passes left";
                kp_pass_begin(&p->pass, kn->cfg.reclaim_step, kn->cfg.max_reclaim, file);
        } else {
                if (grown < kn->cfg.min_reclaim)
                        return 0; /* nothing to age */
                p->pass_for = NULL;
                max = grown < kn->cfg.max_reclaim ? grown : kn->cfg.max_reclaim;
                kp_pass_begin(&p->pass, kn->cfg.reclaim_step, max, file);
        }
        if (p->how == KP_HOW_SWEEP && !kn->cfg.reclaim_amount)
                kp_pass_sweep(&p->pass);
        else if (p->how == KP_HOW_TRIM && !kn->cfg.reclaim_amount)
                kp_pass_trim(&p->pass);
        p->acted = true;
        for (uint64_t slab = level;;) {
                bool more;

                if (ks_read_dentry_state(kn->root, &a) < 0)
                        a = (struct ks_dentry_state){ 0 };
                r = p->pass.sweep  ? kn_sweep(kn, p, fd, job)
                    : p->pass.trim ? kn_trim(kn, p, fd, job)
                                   : kn_reclaim_write(kn, fd, p->pass.step, job);
                if (r == -EINPROGRESS) {
                        /* Put off (kn_sweep(), kn_trim()): nothing written, the growth waits. */
                        p->acted = false;
                        return 0;
                }
                if (ks_read_dentry_state(kn->root, &b) < 0)
                        b = a;
                if (ks_read_group(fd, kn->memcg.version, &g) < 0)
                        g = p->before; /* gone meanwhile: the step counts as freeing nothing */
                more = kp_pass_step(&p->pass, r, slab, kn_level(&g),
                                    rise(b.nr_dentry, a.nr_dentry), g.file_bytes);
                slab = kn_level(&g);
                if (!more || aw_stopping(kn->worker))
                        break;
        }
        return p->pass.end == KP_PASS_ERROR ? p->pass.error : 0;
}
/* force_empty (v1): everything the group holds, when its kernel memory grew that much. */
static int kn_force_empty(struct kn *kn, struct kn_part *p, int fd)
{
        if (kp_reclaim_amount(0, p->base_bytes, p->before.kernel_bytes, kn->cfg.min_reclaim,
                              UINT64_MAX) == 0)
                return 0;
        p->acted = true;
        return ks_force_empty(fd);
}

static int kn_shrinker_scan(struct kn *kn, struct kn_part *p)
{
        p->acted = true;
        return ks_shrinker_scan(kn->root, p->before.ino, 0, &p->scan);
}

static int kn_drop(struct kn *kn, struct kn_job *job)
{
        enum kp_drop d;
        struct kp_drop_config cfg = {
                .negative_limit = kn->cfg.negative_limit,
                .negative_ratio = kn->cfg.negative_ratio,
                .growth_rotations = kn->cfg.growth_rotations,
                .min_interval_usec = kn->cfg.min_interval_usec,
        };

        d = kp_drop_decide(&cfg, &kn->drop, job->before.nr_dentry, job->before.nr_negative,
                           job->gate, job->now_usec, job->why, sizeof(job->why));
        if (d == KP_DROP_GATED)
                job->put_off = true;
        if (d != KP_DROP_NOW)
                return 0;
        job->acted = true;
        return ks_drop_caches(kn->root, KN_DROP_WHAT);
}

/* One group's rotation: read it, act on it where the gate lets, read it again. */
static void kn_part_run(struct kn *kn, struct kn_part *p, struct kn_job *job, bool may_act)
{
        struct ks_dentry_state a, b;
        char msg[KN_MSG_MAX];
        double group_pct = -1;
        enum kp_gate gate;
        uint64_t t0;
        int fd, r;

        p->acted = p->put_off = p->waits = false;
        p->act_error = 0;
        p->act_usec = 0;
        p->freed_bytes = p->freed_dentries = 0;
        p->pass = (struct kp_pass){ 0 };
        p->scan = (struct ks_shrinker_pass){ 0 };
        r = ks_cgroup_open(kn->root, &kn->memcg, p->path, &fd, msg, sizeof(msg));
        if (r == 0) {
                r = ks_read_group(fd, kn->memcg.version, &p->before);
                if (r < 0) {
                        snprintf(msg, sizeof(msg), "%.400s: cannot read its memory figures: %s",
                                 p->path, strerror(-r));
                        close(fd);
                }
        }
        if (r < 0) {
                /* A slice's group went between the listing and now: the next listing says. */
                if (!kn->slice && !kn->said_missing)
                        job_say(job, LOG_NOTICE, "%s; %s, looked for again at every rotation",
                                msg, kn->mech == KN_MECH_REPORT ? "reported as missing"
                                                                : "nothing done to it");
                if (!kn->slice)
                        kn->said_missing = true;
                p->found = false;
                p->have_base = false; /* a new group (a restart) is looked at anew */
                return;
        }
        if (!kn->slice && kn->said_missing)
                job_say(job, LOG_INFO, "group %s found again", p->path);
        if (!kn->slice)
                kn->said_missing = false;
        /* Another group under the same name (a restart): its first look. */
        if (p->found && p->ino != p->before.ino)
                p->have_base = false;
        p->found = true;
        p->ino = p->before.ino;
        if (!p->have_base) {
                /* The first look: what the group holds now is aged like the rest. */
                p->base_bytes = 0;
                p->draining = false;
                p->quiet = 0;
                p->files = (struct kp_file_window){ 0 };
                p->have_base = true;
        }
        if (p->before.have_pressure)
                group_pct = p->before.pressure_some_avg10;
        gate = kp_gate(job->idle, job->host_memory_pct, group_pct);
        if (kn->read_only) {
                p->after = p->before;
                close(fd);
                return;
        }
        if (gate != KP_GO && kn->mech != KN_MECH_REPORT) {
                p->put_off = true;
                job_say(job, LOG_DEBUG, "%s on %s put off: %s (memory some avg10: host %.2f%%, "
                        "group %.2f%%)", mech_names[kn->mech], p->path, kp_gate_name(gate),
                        job->host_memory_pct, group_pct);
                if (gate > job->gate)
                        job->gate = gate;
                p->after = p->before;
                close(fd);
                return;
        }
        if (!may_act && kn->mech != KN_MECH_REPORT) {
                /* The rotation's time for actions is spent: its turn comes first next time. */
                p->waits = true;
                p->after = p->before;
                close(fd);
                return;
        }
        if (kn->mech == KN_MECH_MEMORY_RECLAIM && !kn->cfg.reclaim_amount) {
                /* Trims only where they cannot swap the group's memory out. */
                if (job->swap_on && kn->key_state == KN_KEY_UNKNOWN)
                        (void)kn_reclaim_key(kn, fd, job);
                job->trim_ok = !job->swap_on ||
                               (kn->key_state == KN_KEY_ACCEPTED && kn->cfg.swappiness == 0);
        }
        if (ks_read_dentry_state(kn->root, &a) < 0)
                a = (struct ks_dentry_state){ 0 };
        t0 = now_usec();
        switch (kn->mech) {
        case KN_MECH_MEMORY_RECLAIM:
                r = kn_memory_reclaim(kn, p, fd, job);
                break;
        case KN_MECH_FORCE_EMPTY:
                r = kn_force_empty(kn, p, fd);
                break;
        case KN_MECH_SHRINKER_SCAN:
                r = kn_shrinker_scan(kn, p);
                break;
        default:
                r = 0;
                break;
        }
        p->act_usec = now_usec() - t0;
        /* -EAGAIN: the kernel reclaimed less than asked, which is an answer too. */
        p->act_error = r == -EAGAIN ? 0 : r;
        if (ks_read_group(fd, kn->memcg.version, &p->after) < 0)
                p->after = p->before;
        close(fd);
        if (!p->acted)
                goto out_base;
        if (ks_read_dentry_state(kn->root, &b) < 0)
                b = a;
        job->acted = true;
        if (p->act_error == -EROFS || p->act_error == -EACCES || p->act_error == -EPERM) {
                /* The unit's sandbox: every group alike, said once, and no more tries. */
                kn->read_only = true;
                job_say(job, LOG_WARNING, "%s on %s failed: %s: the unit's sandbox keeps the "
                        "kernel's files read-only (link the drop-in sandbox/kernel-reclaim.conf, "
                        "cacheaged(8)); reporting only until a restart", mech_names[kn->mech],
                        p->path, strerror(-p->act_error));
        }
        if (p->act_error < 0) {
                p->errors++;
                if (job->act_error == 0)
                        job->act_error = p->act_error;
                if (p->act_error != p->logged_error && !kn->read_only)
                        job_say(job, LOG_WARNING, "%s on %s failed: %s, tried again at the "
                                "next rotation%s", mech_names[kn->mech], p->path,
                                strerror(-p->act_error),
                                p->logged_error ? "" : " (said once for each error)");
                p->logged_error = p->act_error;
                goto out_base;
        }
        p->logged_error = 0;
        p->passes++;
        p->freed_bytes = rise(kn_level(&p->after), kn_level(&p->before));
        /* Host-wide: in a quiet kernel exactly this group's; elsewhere others count in. */
        p->freed_dentries = rise(b.nr_dentry, a.nr_dentry);
        p->reclaimed_bytes += p->freed_bytes;
        p->reclaimed_dentries += p->freed_dentries;
        p->asked_bytes += p->pass.asked;

out_base:
        /*
         * Growth is counted from where the last pass left the group, or from its lowest
         * level since: growth too small to act on, or put off, adds up.
         */
        /* Passes go on while each takes enough (kp_pass_again()): what a pass left is taken. */
        p->draining = p->acted && kn->mech == KN_MECH_MEMORY_RECLAIM && !kn->cfg.reclaim_amount &&
                      kp_pass_again(&p->pass, kn->cfg.reclaim_step);
        p->quiet = p->acted ? 0 : p->quiet + 1;
        if (p->acted && p->act_error == 0)
                p->base_bytes = kn->mech == KN_MECH_MEMORY_RECLAIM
                                        ? kp_pass_base(&p->pass, kn_level(&p->after))
                                        : kn_level(&p->after);
        else if (kn_level(&p->after) < p->base_bytes)
                p->base_bytes = kn_level(&p->after);
}

/*
 * Every group of the rotation, read and, within the rotation's time for actions
 * (KN_ROTATION_ACT_USEC), acted on: a slice's first look, or a rotation after a storm in many
 * services, is spread over the rotations that follow, starting each where the last one stopped,
 * so that a rotation's cost to the daemon (the kernel's reclaim runs in its thread) stays bounded.
 */
static void kn_parts_run(struct kn *kn, struct kn_job *job)
{
        size_t n = kn->n_parts, start = kn->cursor < n ? kn->cursor : 0;
        uint64_t spent = 0, budget = kn_act_budget();
        bool may_act = true;

        for (size_t k = 0; k < n && !aw_stopping(kn->worker); k++) {
                size_t i = (start + k) % n;
                struct kn_part *p = kn->parts[i];

                kn_part_run(kn, p, job, may_act);
                spent += p->act_usec;
                if (may_act && spent >= budget) {
                        may_act = false;
                        kn->cursor = (i + 1) % n;
                }
        }
        if (may_act)
                kn->cursor = start; /* nobody waited: the same order next time */
}

static void kn_run_job(struct kn *kn, struct kn_job *job)
{
        uint64_t t0;
        int r;

        job->error = ks_read_dentry_state(kn->root, &job->before);
        if (job->error < 0)
                return;
        job->have_dentry_negative =
                kn->have_dentry_negative &&
                ks_read_dentry_negative(kn->root, &job->dentry_negative) == 0;
        job->gate = kp_gate(job->idle, job->host_memory_pct, -1);
        job->swap_on = ks_swap_active(kn->root) == 1;
        if (kn->group_target && kn->mglru) {
                uint64_t others;

                /* The first rotation's sweeps wait for the next, which has one to compare. */
                if (ks_read_reclaim_activity(kn->root, &kn->memcg, KN_PARTS_MAX, NULL,
                                             &others) < 0) {
                        kn->others_read = 0;
                } else {
                        kn->others_read += kn->others_read < 2;
                        kn->others_prev = kn->others_cur;
                        kn->others_cur = others;
                }
        }
        if (kn->group_target) {
                if (kn_parts_refresh(kn, job) == 0)
                        kn_parts_run(kn, job);
                else
                        for (size_t i = 0; i < kn->n_parts; i++)
                                kn->parts[i]->found = false;
        } else if (kn->mech == KN_MECH_DROP_CACHES) {
                t0 = now_usec();
                r = kn_drop(kn, job);
                job->act_usec = now_usec() - t0;
                job->act_error = r;
        }
        for (size_t i = 0; i < kn->n_parts; i++)
                job->put_off |= kn->parts[i]->put_off;
        if (ks_read_dentry_state(kn->root, &job->after) < 0)
                job->after = job->before;
        if (kn->mech == KN_MECH_DROP_CACHES && job->acted && job->act_error == 0)
                kp_drop_done(&kn->drop, job->now_usec, job->after.nr_negative);
}

static void kn_worker_run(struct aw *w, void *userdata)
{
        struct kn *kn = userdata;

        kn_run_job(kn, &kn->job);
}

/* ---- the loop: publishing, logging ---- */

static void kn_publish_counts(struct kn *kn, const struct ks_dentry_state *ds)
{
        /*
         * The kernel counts dentries host-wide only: a group's own are not to be had. Where
         * the files the mechanism writes are read-only it only reports, and says so.
         */
        (void)ca_cache_set_counts(kn->cache, &(const struct ca_cache_counts){
                                                     .objects_name = "host dentries",
                                                     .part_name = "negative",
                                                     .mechanism = kn->pub_read_only
                                                                          ? KN_READ_ONLY_MECH
                                                                          : mech_names[kn->mech],
                                                     .objects = ds->nr_dentry,
                                                     .part = ds->nr_negative });
}

/* What one group's action did, as the log says it. */
static void kn_log_part(struct kn *kn, const struct kn_part *p)
{
        char a[16], b[16], c[16], d[16], e[16], how[160] = "";

        if (!p->acted || p->act_error < 0)
                return;
        if (kn->mech == KN_MECH_MEMORY_RECLAIM)
                snprintf(how, sizeof(how), "%u step%s, %s asked (%s)%s%s", p->pass.steps,
                         p->pass.steps == 1 ? "" : "s",
                         ca_format_size(p->pass.asked, a, sizeof(a)),
                         kp_pass_end_name(p->pass.end), p->pass_for ? ", for " : "",
                         p->pass_for ? p->pass_for : "");
        else if (kn->mech == KN_MECH_SHRINKER_SCAN)
                snprintf(how, sizeof(how), "%" PRIu64 " object%s of %" PRIu64 " superblock%s "
                         "scanned", p->scan.objects, p->scan.objects == 1 ? "" : "s",
                         p->scan.shrinkers, p->scan.shrinkers == 1 ? "" : "s");
        else
                snprintf(how, sizeof(how), "kernel memory grew %s",
                         ca_format_size(rise(p->base_bytes, kn_level(&p->before)), a,
                                        sizeof(a)));
        /* A pass that took little is routine: at debug level, so that a slice stays quiet. */
        ca_host_log(kn->host, p->freed_bytes >= kn->cfg.min_reclaim ? LOG_INFO : LOG_DEBUG,
                    "%s on %s: %s; %s %s -> %s, %" PRIu64 " dentries (host-wide) freed, page "
                    "cache %s -> %s, %" PRIu64 " ms", mech_names[kn->mech], p->path, how,
                    p->before.have_slab ? "reclaimable slab" : "kernel memory",
                    ca_format_size(kn_level(&p->before), b, sizeof(b)),
                    ca_format_size(kn_level(&p->after), c, sizeof(c)), p->freed_dentries,
                    ca_format_size(p->before.file_bytes, d, sizeof(d)),
                    ca_format_size(p->after.file_bytes, e, sizeof(e)), p->act_usec / 1000);
}

static void kn_sum(struct ks_group *sum, const struct ks_group *g)
{
        sum->memory_bytes += g->memory_bytes;
        sum->kernel_bytes += g->kernel_bytes;
        sum->file_bytes += g->file_bytes;
        sum->slab_reclaimable_bytes += g->slab_reclaimable_bytes;
        sum->active_file_bytes += g->active_file_bytes;
        sum->refault_file += g->refault_file;
        sum->pressure_some_usec += g->pressure_some_usec;
        if (g->pressure_some_avg10 > sum->pressure_some_avg10)
                sum->pressure_some_avg10 = g->pressure_some_avg10;
}

/* The groups, as the cache's parts: what each holds and what the passes took of it. */
static void kn_publish_parts(struct kn *kn)
{
        struct ca_cache_part *v = calloc(kn->n_parts ? kn->n_parts : 1, sizeof(*v));
        size_t n = 0;

        if (!v)
                return; /* the last ones stay */
        for (size_t i = 0; i < kn->n_parts; i++) {
                const struct kn_part *p = kn->parts[i];

                if (!p->found)
                        continue;
                v[n++] = (struct ca_cache_part){
                        .name = p->path, .bytes = kn_level(&p->after),
                        .reclaimed = p->reclaimed_dentries,
                        .reclaimed_bytes = p->reclaimed_bytes,
                        .state = p->state[0] ? p->state
                                 : p->waits ? "waits: the rotation's time for actions was spent"
                                            : NULL };
        }
        (void)ca_cache_set_parts(kn->cache, v, n);
        free(v);
}

static void kn_done_job(struct kn *kn)
{
        struct kn_job *job = &kn->job;
        struct ks_group before = { 0 }, after = { 0 };
        uint64_t groups = 0, reclaimed = 0;
        bool put_off = false;

        for (size_t i = 0; i < job->n_msgs; i++)
                ca_host_log(kn->host, job->msgs[i].level, "%s", job->msgs[i].text);
        if (job->msgs_lost)
                ca_host_log(kn->host, LOG_NOTICE, "... and %zu messages more of this rotation",
                            job->msgs_lost);
        if (job->error < 0) {
                if (!kn->logged_read_error)
                        ca_host_log(kn->host, LOG_WARNING, "Failed to read dentry-state: %s",
                                    strerror(-job->error));
                kn->logged_read_error = true;
                return;
        }
        kn->logged_read_error = false;

        uint64_t how[KP_HOW_ALONE + 1] = { 0 }, waiting = 0;

        for (size_t i = 0; i < kn->n_parts; i++) {
                struct kn_part *p = kn->parts[i];

                if (!p->found)
                        continue;
                groups++;
                if (kn->mech == KN_MECH_MEMORY_RECLAIM && !kn->read_only && !p->put_off &&
                    !p->waits)
                        how[p->how]++;
                waiting += p->waits;
                kn_sum(&before, &p->before);
                kn_sum(&after, &p->after);
                put_off |= p->put_off;
                if (!p->acted)
                        continue;
                kn_log_part(kn, p);
                if (p->act_error < 0) {
                        kn->action_errors++;
                        continue;
                }
                kn->actions++;
                kn->reclaimed_bytes += p->freed_bytes;
                kn->reclaimed_dentries += p->freed_dentries;
                reclaimed += p->freed_dentries;
                kn->reclaim_asked_bytes += p->pass.asked;
                kn->reclaim_steps += p->pass.steps;
                kn->reclaim_dry += p->pass.end == KP_PASS_DRY;
                kn->shrinker_scanned += p->scan.objects;
                kn->last_action_usec = p->act_usec;
        }
        before.have_slab = after.have_slab = kn->memcg.version == KS_MEMCG_V2;
        if (how[KP_HOW_ALONE] != kn->groups_alone)
                ca_host_log(kn->host, LOG_INFO, "%" PRIu64 " of %" PRIu64 " group%s left alone: "
                            "page cache the kernel would take before their dentries, under the "
                            "floor where that is safe (cacheagectl show shows each)",
                            how[KP_HOW_ALONE], groups, groups == 1 ? "" : "s");
        kn->groups_trim = how[KP_HOW_TRIM];
        kn->groups_sweep = how[KP_HOW_SWEEP];
        kn->groups_pass = how[KP_HOW_PASS];
        kn->groups_alone = how[KP_HOW_ALONE];
        kn->groups_waiting = waiting;
        kn->trims += job->trims;
        kn->trims_cut += job->trims_cut;
        kn->sweeps += job->sweeps;
        kn->sweeps_cut += job->sweeps_cut;
        kn->sweeps_put_off_reclaim += job->sweeps_put_off_reclaim;
        kn->sweeps_put_off_busy += job->sweeps_put_off_busy;
        kn->sweeps_put_off_late += job->sweeps_put_off_late;
        for (size_t i = 0; i < job->n_windows; i++) {
                kn->windows[kn->at_window] = job->windows[i];
                kn->at_window = (kn->at_window + 1) % KN_WINDOWS;
                if (kn->n_windows < KN_WINDOWS)
                        kn->n_windows++;
                if (job->windows[i] > kn->window_max_usec)
                        kn->window_max_usec = job->windows[i];
        }
        if (job->sweeps_put_off_reclaim)
                ca_host_log(kn->host, LOG_INFO, "%" PRIu64 " sweep%s put off: something else on "
                            "the host reclaims, and a sweep's vm.vfs_cache_pressure would reach "
                            "it", job->sweeps_put_off_reclaim,
                            job->sweeps_put_off_reclaim == 1 ? "" : "s");
        if (job->sweeps_put_off_busy)
                ca_host_log(kn->host, LOG_INFO, "%" PRIu64 " sweep%s put off: another cacheaged "
                            "(or cache) has vm.vfs_cache_pressure set",
                            job->sweeps_put_off_busy, job->sweeps_put_off_busy == 1 ? "" : "s");
        if (job->sweeps_put_off_late)
                ca_host_log(kn->host, LOG_INFO, "%" PRIu64 " sweep%s put off: the machine ran "
                            "the daemon late (a sleep overran by %d ms or more), and the guard "
                            "could not keep vm.vfs_cache_pressure's window short",
                            job->sweeps_put_off_late, job->sweeps_put_off_late == 1 ? "" : "s",
                            KN_LATE_USEC / 1000);

        /* Growth is what piled up between two rotations, the action's own effect left out. */
        if (kn->have_last) {
                kn->nr_dentry_growth = rise(kn->last_ds.nr_dentry, job->before.nr_dentry);
                kn->nr_negative_growth = rise(kn->last_ds.nr_negative, job->before.nr_negative);
                kn->kernel_growth = groups && kn->groups ? rise(kn->sum.kernel_bytes,
                                                                before.kernel_bytes)
                                                         : 0;
                kn->slab_growth = groups && kn->groups
                                          ? rise(kn->sum.slab_reclaimable_bytes,
                                                 before.slab_reclaimable_bytes)
                                          : 0;
        }
        if (kn->group_target) {
                bool missing = groups == 0 && !kn->slice;

                if (missing && !kn->group_missing)
                        kn->group_vanished++;
                kn->group_missing = missing;
                kn->groups = groups;
                kn->sum = after;
        }
        if (kn->mech == KN_MECH_DROP_CACHES && job->acted) {
                kn->last_action_usec = job->act_usec;
                if (job->act_error < 0) {
                        kn->action_errors++;
                        ca_host_log(kn->host, LOG_WARNING, "drop_caches failed: %s (%s), tried "
                                    "again at the next rotation", strerror(-job->act_error),
                                    job->why);
                } else {
                        kn->actions++;
                        ca_host_log(kn->host, LOG_INFO, "drop_caches: %s; nr_dentry %" PRIu64
                                    " -> %" PRIu64 ", nr_negative %" PRIu64 " -> %" PRIu64
                                    ", %" PRIu64 " ms", job->why, job->before.nr_dentry,
                                    job->after.nr_dentry, job->before.nr_negative,
                                    job->after.nr_negative, job->act_usec / 1000);
                }
        } else if (kn->mech == KN_MECH_DROP_CACHES) {
                ca_host_log(kn->host, LOG_DEBUG, "no drop_caches: %s", job->why);
        }
        put_off |= job->put_off;
        if (put_off) {
                if (job->gate == KP_BUSY)
                        kn->put_off_busy++;
                else
                        kn->put_off_pressure++;
                if (!kn->put_off_since_usec)
                        kn->put_off_since_usec = job->now_usec;
                (void)ca_cache_set_deferred(kn->cache, kp_gate_name(job->gate));
                ca_host_log(kn->host, LOG_DEBUG, "%s put off: %s", mech_names[kn->mech],
                            kp_gate_name(job->gate));
        } else if (job->acted || kn->mech == KN_MECH_REPORT || groups > 0) {
                kn->put_off_since_usec = 0;
                (void)ca_cache_set_deferred(kn->cache, NULL);
        }
        /* The dentries the passes took count as the cache's reclaimed objects (RECLAIMED). */
        if (reclaimed)
                (void)ca_cache_count_reclaimed(kn->cache, reclaimed);
        if (kn->group_target)
                kn_publish_parts(kn);
        if (job->acted) {
                kn->last_freed_dentries = rise(job->after.nr_dentry, job->before.nr_dentry);
                kn->last_freed_negative = rise(job->after.nr_negative, job->before.nr_negative);
        }
        ca_host_log(kn->host, LOG_DEBUG, "nr_dentry %" PRIu64 " (+%" PRIu64 "), nr_negative %"
                    PRIu64 " (+%" PRIu64 "), %" PRIu64 " group%s", job->after.nr_dentry,
                    kn->nr_dentry_growth, job->after.nr_negative, kn->nr_negative_growth,
                    groups, groups == 1 ? "" : "s");
        kn->pub_read_only = kn->read_only;
        kn_publish_counts(kn, &job->after);
        kn->last_ds = job->after;
        kn->last_dentry_negative = job->dentry_negative;
        kn->have_last = true;
}

/* The loop's side of a finished job; how long it held the loop is measured. */
static void kn_done(void *userdata)
{
        struct kn *kn = userdata;
        uint64_t t0 = now_usec(), n;

        kn_done_job(kn);
        n = now_usec() - t0;
        if (n > kn->loop_longest_usec)
                kn->loop_longest_usec = n;
        /* Last: the host may rotate at once, and destroy nothing of ours meanwhile. */
        ca_host_rotate_ready(kn->host, kn->cache, kn->job.error < 0 ? kn->job.error : 0);
}

static const struct aw_ops kn_worker_ops = {
        .run = kn_worker_run,
        .done = kn_done,
};

/* ---- hooks ---- */

static int kn_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct kn *kn = userdata;
        struct ca_pressure p;
        double memory_pct = 0;
        uint64_t t0 = now_usec(), dt;

        if (ca_host_pressure(kn->host, &p) == 0) {
                memory_pct = p.memory_some.avg10_pct;
                kn->host_memory_stall_usec = p.memory_some.total_usec;
        }
        /* The host starts no other refresh before ca_host_rotate_ready(): the worker is idle. */
        kn->job = (struct kn_job){ .idle = ca_host_idle(kn->host),
                                   .host_memory_pct = memory_pct,
                                   .now_usec = now_usec() };
        aw_submit(kn->worker);
        dt = now_usec() - t0;
        if (dt > kn->loop_longest_usec)
                kn->loop_longest_usec = dt;
        return CA_ROTATE_LATER;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* The median of the last sweeps' windows (0 before the first). */
static uint64_t kn_window_p50(const struct kn *kn)
{
        uint64_t v[KN_WINDOWS];

        if (!kn->n_windows)
                return 0;
        memcpy(v, kn->windows, kn->n_windows * sizeof(v[0]));
        qsort(v, kn->n_windows, sizeof(v[0]), cmp_u64);
        return v[kn->n_windows / 2];
}

static uint64_t kn_get_read_only(const struct kn *kn)
{
        return kn->pub_read_only;
}

static uint64_t kn_get_mglru(const struct kn *kn)
{
        return kn->mglru;
}

static uint64_t kn_get_group_missing(const struct kn *kn)
{
        return kn->group_missing;
}

static uint64_t kn_get_put_off_usec(const struct kn *kn)
{
        return kn->put_off_since_usec ? now_usec() - kn->put_off_since_usec : 0;
}

static uint64_t kn_get_guard_normal(const struct kn *kn)
{
        return kk_guard_normal_sched(kn->guard);
}

/* Which caches report a statistic (kn_stat_shown()). */
enum kn_when {
        KN_IF_ALWAYS,
        KN_IF_DENTRY_NEGATIVE, /* the kernel has fs.dentry-negative */
        KN_IF_SLICE,           /* cgroup = PATH/\* */
        KN_IF_ONE_GROUP,       /* cgroup = PATH, or unit = NAME */
        KN_IF_GROUPS,          /* either */
        KN_IF_GROUPS_V2,       /* either, on cgroup v2 */
        KN_IF_ACTING,          /* an action but report */
        KN_IF_ACTING_GROUPS,   /* on groups */
        KN_IF_RECLAIM,         /* memory.reclaim */
        KN_IF_RECLAIM_POLICY,  /* memory.reclaim as trims, passes and sweeps (no reclaim_amount) */
        KN_IF_GUARD,           /* the knob's guard: memory.reclaim */
        KN_IF_SHRINKER,        /* shrinker debugfs */
};

static bool kn_stat_shown(const struct kn *kn, enum kn_when when)
{
        switch (when) {
        case KN_IF_ALWAYS:
                return true;
        case KN_IF_DENTRY_NEGATIVE:
                return kn->have_dentry_negative;
        case KN_IF_SLICE:
                return kn->group_target && kn->slice;
        case KN_IF_ONE_GROUP:
                return kn->group_target && !kn->slice;
        case KN_IF_GROUPS:
                return kn->group_target;
        case KN_IF_GROUPS_V2:
                return kn->group_target && kn->memcg.version == KS_MEMCG_V2;
        case KN_IF_ACTING:
                return kn->mech != KN_MECH_REPORT;
        case KN_IF_ACTING_GROUPS:
                return kn->mech != KN_MECH_REPORT && kn->group_target;
        case KN_IF_RECLAIM:
                return kn->mech == KN_MECH_MEMORY_RECLAIM;
        case KN_IF_RECLAIM_POLICY:
                return kn->mech == KN_MECH_MEMORY_RECLAIM && !kn->cfg.reclaim_amount;
        case KN_IF_GUARD:
                return kn->guard;
        case KN_IF_SHRINKER:
                return kn->mech == KN_MECH_SHRINKER_SCAN;
        }
        return false;
}

/*
 * The adapter's statistics, in the order they are reported: what each is, which caches report
 * it, and where its value is (a uint64_t of struct kn, or a function for the others).
 */
struct kn_stat {
        struct ca_adapter_stat stat;
        enum kn_when when;
        size_t offset;
        uint64_t (*get)(const struct kn *kn);
};
#define KN_FIELD(f) .offset = offsetof(struct kn, f)

static const struct kn_stat kn_stat_table[] = {
        { .stat = { "nr_dentry", CA_STAT_GAUGE, "dentries",
                      "dentries in the host's dentry cache" },
          .when = KN_IF_ALWAYS, KN_FIELD(last_ds.nr_dentry) },
        { .stat = { "nr_unused", CA_STAT_GAUGE, "dentries",
                      "unused dentries, on the LRU" },
          .when = KN_IF_ALWAYS, KN_FIELD(last_ds.nr_unused) },
        { .stat = { "nr_negative", CA_STAT_GAUGE, "dentries",
                      "negative dentries" },
          .when = KN_IF_ALWAYS, KN_FIELD(last_ds.nr_negative) },
        { .stat = { "age_limit", CA_STAT_GAUGE, "seconds",
                      "dentry-state's age_limit" },
          .when = KN_IF_ALWAYS, KN_FIELD(last_ds.age_limit) },
        { .stat = { "want_pages", CA_STAT_GAUGE, "pages",
                      "dentry-state's want_pages" },
          .when = KN_IF_ALWAYS, KN_FIELD(last_ds.want_pages) },
        { .stat = { "dentry_negative", CA_STAT_GAUGE, NULL,
                      "fs.dentry-negative: 1 when unlink deletes the dentry" },
          .when = KN_IF_DENTRY_NEGATIVE, KN_FIELD(last_dentry_negative) },
        { .stat = { "nr_dentry_growth", CA_STAT_GAUGE, "dentries",
                      "rise of nr_dentry between the last two rotations (0 when it fell)" },
          .when = KN_IF_ALWAYS, KN_FIELD(nr_dentry_growth) },
        { .stat = { "nr_negative_growth", CA_STAT_GAUGE, "dentries",
                      "rise of nr_negative between the last two rotations (0 when it fell)" },
          .when = KN_IF_ALWAYS, KN_FIELD(nr_negative_growth) },
        { .stat = { "host_memory_stall_usec", CA_STAT_COUNTER, "usec",
                      "host memory pressure, some tasks stalled (/proc/pressure/memory total)" },
          .when = KN_IF_ALWAYS, KN_FIELD(host_memory_stall_usec) },
        { .stat = { "loop_longest_usec", CA_STAT_GAUGE, "usec",
                      "the longest this cache held the daemon's loop (the kernel's work is on a "
                      "thread)" },
          .when = KN_IF_ALWAYS, KN_FIELD(loop_longest_usec) },
        { .stat = { "read_only", CA_STAT_GAUGE, NULL,
                      "1 when the kernel's files it writes were found read-only (the unit's "
                      "sandbox)" },
          .when = KN_IF_ALWAYS, .get = kn_get_read_only },
        { .stat = { "mglru", CA_STAT_GAUGE, NULL,
                      "1 when the kernel reclaims page cache with MGLRU (memory.reclaim takes "
                      "page cache before dentries)" },
          .when = KN_IF_ALWAYS, .get = kn_get_mglru },
        { .stat = { "groups", CA_STAT_GAUGE, "groups",
                      "groups of the slice followed (found at the last rotation)" },
          .when = KN_IF_SLICE, KN_FIELD(groups) },
        { .stat = { "group_missing", CA_STAT_GAUGE, NULL,
                      "1 when the group was not found at the last rotation" },
          .when = KN_IF_ONE_GROUP, .get = kn_get_group_missing },
        { .stat = { "group_vanished", CA_STAT_COUNTER, NULL,
                      "times the group went missing" },
          .when = KN_IF_ONE_GROUP, KN_FIELD(group_vanished) },
        { .stat = { "group_memory_bytes", CA_STAT_GAUGE, "bytes",
                      "memory charged to the group(s)" },
          .when = KN_IF_GROUPS, KN_FIELD(sum.memory_bytes) },
        { .stat = { "group_kernel_bytes", CA_STAT_GAUGE, "bytes",
                      "kernel memory charged to the group(s) (dentries among it)" },
          .when = KN_IF_GROUPS, KN_FIELD(sum.kernel_bytes) },
        { .stat = { "group_kernel_growth_bytes", CA_STAT_GAUGE, "bytes",
                      "rise of group_kernel_bytes between the last two rotations" },
          .when = KN_IF_GROUPS, KN_FIELD(kernel_growth) },
        { .stat = { "group_file_bytes", CA_STAT_GAUGE, "bytes",
                      "page cache of the group(s)" },
          .when = KN_IF_GROUPS, KN_FIELD(sum.file_bytes) },
        { .stat = { "group_active_file_bytes", CA_STAT_GAUGE, "bytes",
                      "page cache of the group(s) on the active list" },
          .when = KN_IF_GROUPS, KN_FIELD(sum.active_file_bytes) },
        { .stat = { "group_slab_reclaimable_bytes", CA_STAT_GAUGE, "bytes",
                      "reclaimable slab of the group(s) (memory.stat): their dentries and "
                      "inodes" },
          .when = KN_IF_GROUPS_V2, KN_FIELD(sum.slab_reclaimable_bytes) },
        { .stat = { "group_slab_reclaimable_growth_bytes", CA_STAT_GAUGE, "bytes",
                      "rise of group_slab_reclaimable_bytes between the last two rotations" },
          .when = KN_IF_GROUPS_V2, KN_FIELD(slab_growth) },
        { .stat = { "group_refault_file", CA_STAT_COUNTER, "pages",
                      "page cache of the group(s) read again soon after reclaim took it "
                      "(memory.stat workingset_refault_file)" },
          .when = KN_IF_GROUPS_V2, KN_FIELD(sum.refault_file) },
        { .stat = { "group_memory_stall_usec", CA_STAT_COUNTER, "usec",
                      "the group's memory pressure, some tasks stalled (memory.pressure)" },
          .when = KN_IF_GROUPS_V2, KN_FIELD(sum.pressure_some_usec) },
        { .stat = { "actions", CA_STAT_COUNTER, NULL,
                      "passes, reclaims or drops done" },
          .when = KN_IF_ACTING, KN_FIELD(actions) },
        { .stat = { "actions_put_off_busy", CA_STAT_COUNTER, NULL,
                      "rotations whose action was put off: not idle time" },
          .when = KN_IF_ACTING, KN_FIELD(put_off_busy) },
        { .stat = { "actions_put_off_pressure", CA_STAT_COUNTER, NULL,
                      "rotations whose action was put off: memory pressure" },
          .when = KN_IF_ACTING, KN_FIELD(put_off_pressure) },
        { .stat = { "put_off_usec", CA_STAT_GAUGE, "usec",
                      "how long actions have been put off now (0: they run)" },
          .when = KN_IF_ACTING, .get = kn_get_put_off_usec },
        { .stat = { "action_errors", CA_STAT_COUNTER, NULL,
                      "actions the kernel refused" },
          .when = KN_IF_ACTING, KN_FIELD(action_errors) },
        { .stat = { "last_action_usec", CA_STAT_GAUGE, "usec",
                      "time the last action took" },
          .when = KN_IF_ACTING, KN_FIELD(last_action_usec) },
        { .stat = { "last_action_freed_dentries", CA_STAT_GAUGE, "dentries",
                      "fall of nr_dentry across the last rotation's actions (host-wide: others "
                      "count in)" },
          .when = KN_IF_ACTING, KN_FIELD(last_freed_dentries) },
        { .stat = { "last_action_freed_negative", CA_STAT_GAUGE, "dentries",
                      "fall of nr_negative across the last rotation's actions (host-wide: "
                      "others count in)" },
          .when = KN_IF_ACTING, KN_FIELD(last_freed_negative) },
        { .stat = { "reclaimed_bytes", CA_STAT_COUNTER, "bytes",
                      "fall of the groups' reclaimable slab (v2) or kernel memory (v1) across "
                      "the actions" },
          .when = KN_IF_ACTING_GROUPS, KN_FIELD(reclaimed_bytes) },
        { .stat = { "reclaimed_dentries", CA_STAT_COUNTER, "dentries",
                      "fall of nr_dentry across the actions (host-wide: exact in a quiet "
                      "kernel, others count in elsewhere)" },
          .when = KN_IF_ACTING_GROUPS, KN_FIELD(reclaimed_dentries) },
        { .stat = { "reclaim_asked_bytes", CA_STAT_COUNTER, "bytes",
                      "bytes asked of memory.reclaim" },
          .when = KN_IF_RECLAIM, KN_FIELD(reclaim_asked_bytes) },
        { .stat = { "reclaim_steps", CA_STAT_COUNTER, "writes",
                      "writes to memory.reclaim (steps of the passes)" },
          .when = KN_IF_RECLAIM, KN_FIELD(reclaim_steps) },
        { .stat = { "reclaim_dry", CA_STAT_COUNTER, NULL,
                      "passes the kernel ended with EAGAIN: less reclaimable than asked" },
          .when = KN_IF_RECLAIM, KN_FIELD(reclaim_dry) },
        { .stat = { "groups_trimmed", CA_STAT_GAUGE, "groups",
                      "groups with 128K of page cache to reclaim at most, trimmed (a write at "
                      "vm.vfs_cache_pressure 1) when they grow, at the last rotation" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(groups_trim) },
        { .stat = { "groups_swept", CA_STAT_GAUGE, "groups",
                      "groups with page cache at their sweep floor (MGLRU), swept when they "
                      "grow" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(groups_sweep) },
        { .stat = { "groups_passed", CA_STAT_GAUGE, "groups",
                      "groups with 16 MiB of page cache or more (classic LRU), passed over" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(groups_pass) },
        { .stat = { "groups_left_alone", CA_STAT_GAUGE, "groups",
                      "groups left alone: some page cache, under the floor where a write is "
                      "safe" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(groups_alone) },
        { .stat = { "groups_waiting", CA_STAT_GAUGE, "groups",
                      "groups whose action waits for the next rotation: the rotation's time for "
                      "actions was spent" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(groups_waiting) },
        { .stat = { "trims", CA_STAT_COUNTER, "writes",
                      "trims: writes with vm.vfs_cache_pressure lowered to 1 for their length" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(trims) },
        { .stat = { "trims_cut", CA_STAT_COUNTER, "writes",
                      "trims the guard interrupted at its bound" },
          .when = KN_IF_RECLAIM_POLICY, KN_FIELD(trims_cut) },
        { .stat = { "sweeps", CA_STAT_COUNTER, "writes",
                      "sweeps: writes with vm.vfs_cache_pressure raised for their length" },
          .when = KN_IF_GUARD, KN_FIELD(sweeps) },
        { .stat = { "sweep_window_p50_usec", CA_STAT_GAUGE, "usec",
                      "median time vm.vfs_cache_pressure stayed raised, of the last 64 sweeps" },
          .when = KN_IF_GUARD, .get = kn_window_p50 },
        { .stat = { "sweep_window_max_usec", CA_STAT_GAUGE, "usec",
                      "longest time vm.vfs_cache_pressure stayed raised by a sweep" },
          .when = KN_IF_GUARD, KN_FIELD(window_max_usec) },
        { .stat = { "sweeps_cut", CA_STAT_COUNTER, "writes",
                      "sweeps whose vm.vfs_cache_pressure the guard put back while the write "
                      "was still in the kernel" },
          .when = KN_IF_GUARD, KN_FIELD(sweeps_cut) },
        { .stat = { "sweeps_put_off_reclaim", CA_STAT_COUNTER, "writes",
                      "sweeps put off: something else on the host reclaimed" },
          .when = KN_IF_GUARD, KN_FIELD(sweeps_put_off_reclaim) },
        { .stat = { "sweeps_put_off_busy", CA_STAT_COUNTER, "writes",
                      "sweeps put off: another cacheaged or cache had vm.vfs_cache_pressure set" },
          .when = KN_IF_GUARD, KN_FIELD(sweeps_put_off_busy) },
        { .stat = { "sweeps_put_off_late", CA_STAT_COUNTER, "writes",
                      "sweeps put off: the daemon's sleep before it overran by 20 ms or more (a "
                      "starved machine, where the guard could not keep its bound)" },
          .when = KN_IF_GUARD, KN_FIELD(sweeps_put_off_late) },
        { .stat = { "sweep_guard_normal_priority", CA_STAT_GAUGE, NULL,
                      "1 when the guard's thread runs at normal CPU priority (the drop-in's "
                      "LimitNICE=), 0 at the daemon's idle priority" },
          .when = KN_IF_GUARD, .get = kn_get_guard_normal },
        { .stat = { "shrinker_scanned", CA_STAT_COUNTER, "objects",
                      "objects the superblock shrinkers were asked to scan" },
          .when = KN_IF_SHRINKER, KN_FIELD(shrinker_scanned) },
};
#undef KN_FIELD

static void kn_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        const struct kn *kn = userdata;

        for (size_t i = 0; i < sizeof(kn_stat_table) / sizeof(kn_stat_table[0]); i++) {
                const struct kn_stat *st = &kn_stat_table[i];

                if (kn_stat_shown(kn, st->when))
                        emit(eu, &st->stat,
                             st->get ? st->get(kn)
                                     : *(const uint64_t *)((const char *)kn + st->offset));
        }
}

static const struct ca_cache_hooks kn_hooks = {
        .before_rotate = kn_before_rotate,
        .stats = kn_stats,
};

/* No node ever reaches it: the kernel frees its own dentries. */
static enum ca_status kn_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        return CA_KEEP;
}

static const struct ca_cache_ops kn_ops = {
        .reclaim = kn_reclaim,
};

/* ---- configuration ---- */

static int kn_check_size(const char *v, uint64_t *field, bool auto_ok, char *msg, size_t len)
{
        uint64_t bytes = 0;
        int r;

        if (auto_ok && strcmp(v, "auto") == 0) {
                if (field)
                        *field = 0;
                return 0;
        }
        r = ks_parse_size(v, &bytes);
        if (r == 0 && bytes < 4096)
                r = -ERANGE;
        if (r < 0) {
                snprintf(msg, len, "invalid size \"%s\" (expected %s4096..1T, e.g. 64K, 10M, 1G)",
                         v, auto_ok ? "auto or " : "");
                return r;
        }
        if (field)
                *field = bytes;
        return 0;
}

/* The size keys' checks: each its field of struct kn_config, "auto" or not. */
#define KN_CHECK_SIZE(field_, auto_ok_)                                                         \
        static int kn_check_##field_(const char *v, void *target, char *msg, size_t len)      \
        {                                                                                      \
                return kn_check_size(v, target ? &((struct kn_config *)target)->field_ : NULL,\
                                     auto_ok_, msg, len);                                      \
        }
KN_CHECK_SIZE(reclaim_amount, true)
KN_CHECK_SIZE(max_reclaim, false)
KN_CHECK_SIZE(min_reclaim, false)
KN_CHECK_SIZE(reclaim_step, false)
#undef KN_CHECK_SIZE

/* A group, or every child group of one: "/system.slice/\*" (a trailing "/\*" only). */
static int kn_check_cgroup(const char *v, void *target, char *msg, size_t len)
{
        size_t n = strlen(v);
        char parent[KS_PATH_MAX];

        if (n >= 2 && strcmp(v + n - 2, "/*") == 0) {
                if (n == 2)
                        return 0; /* every group at the top */
                snprintf(parent, sizeof(parent), "%.*s", (int)(n - 2), v);
                if (strchr(parent, '*')) {
                        snprintf(msg, len, "\"%s\": only a trailing /* is taken (every child "
                                 "group of a slice)", v);
                        return -EINVAL;
                }
                return ks_cgroup_path_check(parent, msg, len);
        }
        if (strchr(v, '*')) {
                snprintf(msg, len, "\"%s\": only a trailing /* is taken (every child group of a "
                         "slice, e.g. /system.slice/*)", v);
                return -EINVAL;
        }
        return ks_cgroup_path_check(v, msg, len);
}

/* exclude: names (or fnmatch patterns) of a slice's groups, separated by blanks. */
static int kn_check_exclude(const char *v, void *target, char *msg, size_t len)
{
        size_t n = 0;

        for (const char *p = v; *p;) {
                size_t w;

                p += strspn(p, " \t");
                w = strcspn(p, " \t");
                if (!w)
                        break;
                if (w > 255 || memchr(p, '/', w)) {
                        snprintf(msg, len, "\"%.*s\" is not a group's name (a slice's child, "
                                 "e.g. foo.service or foo-*.service)", (int)(w > 64 ? 64 : w), p);
                        return -EINVAL;
                }
                if (++n > KN_EXCLUDE_MAX) {
                        snprintf(msg, len, "more than %d names", KN_EXCLUDE_MAX);
                        return -EINVAL;
                }
                p += w;
        }
        return 0;
}

static int kn_check_unit(const char *v, void *target, char *msg, size_t len)
{
        return ks_unit_name_check(v, msg, len);
}

/* Adding a key is adding a line here (and its use below). */
static const struct ca_key_spec kn_keys[] = {
        { .name = "cgroup", .type = CA_KEY_PATH, CA_KEY_FIELD(struct kn_config, cgroup),
          .check = kn_check_cgroup,
          .help = "the target memory cgroup, a path under the memory controller; PATH/* for "
                  "each of its child groups" },
        { .name = "unit", .type = CA_KEY_STRING, CA_KEY_FIELD(struct kn_config, unit),
          .check = kn_check_unit, .help = "the target: a systemd unit's control group" },
        { .name = "exclude", .type = CA_KEY_STRING, CA_KEY_FIELD(struct kn_config, exclude),
          .check = kn_check_exclude,
          .help = "cgroup = PATH/*: child groups left alone, names or patterns" },
        { .name = "action", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct kn_config, action),
          .def = "report", .what = "action",
          .choices = (const struct ca_key_choice[]){ { "report", KN_ACTION_REPORT },
                                                     { "reclaim", KN_ACTION_RECLAIM },
                                                     { "drop", KN_ACTION_DROP },
                                                     { "auto", KN_ACTION_AUTO },
                                                     { NULL, 0 } },
          .help = "report (change nothing), reclaim (the groups), drop (drop_caches 2), auto "
                  "(reclaim where a pass reaches dentries, else report)" },
        { .name = "allow_force_empty", .type = CA_KEY_BOOL,
          CA_KEY_FIELD(struct kn_config, allow_force_empty), .def = "no",
          .help = "cgroup v1: reclaim with memory.force_empty (page cache too)" },
        { .name = "reclaim_amount", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct kn_config, reclaim_amount_text), .def = "auto",
          .check = kn_check_reclaim_amount,
          .help = "memory.reclaim per rotation: auto (a pass in steps) or one write of a size" },
        { .name = "reclaim_step", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct kn_config, reclaim_step_text), .def = "256K",
          .check = kn_check_reclaim_step, .help = "memory.reclaim: one step of a pass" },
        { .name = "max_reclaim", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct kn_config, max_reclaim_text), .def = "64M",
          .check = kn_check_max_reclaim, .help = "memory.reclaim per pass, at most" },
        { .name = "min_reclaim", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct kn_config, min_reclaim_text), .def = "1M",
          .check = kn_check_min_reclaim,
          .help = "growth below which a rotation reclaims nothing" },
        { .name = "swappiness", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct kn_config, swappiness),
          .def = "0", .flags = CA_KEY_NUMBER, .min = 0, .max = 200,
          .choices = (const struct ca_key_choice[]){ { "kernel", KN_SWAPPINESS_KERNEL },
                                                     { NULL, 0 } },
          .help = "memory.reclaim's swappiness= where the kernel takes it; kernel: none" },
        { .name = "negative_limit", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct kn_config, negative_limit), .def = "1000000", .min = 0,
          .max = UINT64_C(1) << 40, .flags = CA_KEY_ZERO_OFF,
          .help = "drop: nr_negative at or above this is too many" },
        { .name = "negative_ratio", .type = CA_KEY_DECIMAL,
          CA_KEY_FIELD(struct kn_config, negative_ratio), .def = "0", .dmin = 0, .dmax = 1000,
          .help = "drop: negatives per positive dentry above this is too many; 0 = off" },
        { .name = "growth_rotations", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct kn_config, growth_rotations), .def = "3", .min = 1, .max = 1000,
          .help = "drop: rotations in a row nr_negative must have grown" },
        { .name = "min_interval", .type = CA_KEY_DURATION,
          CA_KEY_FIELD(struct kn_config, min_interval_usec), .def = "1h", .min = 1000000,
          .max = UINT64_C(7) * 86400 * 1000000, .help = "drop: at most once per this" },
        CA_KEY_END
};

/* The adapter's keys that only some actions read, said when set for another. */
static const struct {
        const char *key;
        int action;
} action_keys[] = {
        { "allow_force_empty", KN_ACTION_RECLAIM }, { "reclaim_amount", KN_ACTION_RECLAIM },
        { "reclaim_step", KN_ACTION_RECLAIM },
        { "max_reclaim", KN_ACTION_RECLAIM },       { "min_reclaim", KN_ACTION_RECLAIM },
        { "swappiness", KN_ACTION_RECLAIM },        { "negative_limit", KN_ACTION_DROP },
        { "negative_ratio", KN_ACTION_DROP },       { "growth_rotations", KN_ACTION_DROP },
        { "min_interval", KN_ACTION_DROP },
};

/* Whether the kernel reclaims page cache with MGLRU (memory.reclaim then takes it first). */
static bool kn_mglru(const char *root)
{
        unsigned flags;

        return ks_read_lru_gen(root, &flags) == 0 && (flags & KS_LRU_GEN_CORE);
}

/*
 * The table, then what ties keys to each other and to this kernel: the target, the mechanism
 * (which needs the memory controller's version, debugfs and the LRU's kind), the group path
 * walked where it exists. Every problem is reported, at --check-config too.
 */
static int kn_parse(struct ca_host *host, const struct ca_section *s, const char *root,
                    struct kn_config *cfg, struct ks_memcg *ret_memcg, enum kn_mech *ret_mech,
                    char **ret_slice)
{
        struct ks_memcg memcg = { 0 };
        enum kn_mech mech = KN_MECH_REPORT;
        char msg[KN_MSG_MAX], *slice = NULL;
        const char *group;
        bool mglru = kn_mglru(root);
        int r, fd;

        *cfg = (struct kn_config){ 0 };
        r = ca_section_parse(host, s, kn_keys, cfg);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(action_keys) / sizeof(action_keys[0]); i++) {
                int a = cfg->action == KN_ACTION_AUTO ? KN_ACTION_RECLAIM : cfg->action;

                if (a != action_keys[i].action && ca_section_get(s, action_keys[i].key))
                        ca_host_log(host, LOG_NOTICE, "%s applies to action = %s only, ignoring",
                                    action_keys[i].key,
                                    action_keys[i].action == KN_ACTION_DROP ? "drop"
                                                                            : "reclaim or auto");
        }
        if (cfg->cgroup && cfg->unit) {
                ca_host_key_error(host, s, "unit", "set either cgroup or unit, not both");
                return -EINVAL;
        }
        if (cfg->min_reclaim > cfg->max_reclaim) {
                ca_host_key_error(host, s, "min_reclaim", "min_reclaim is above max_reclaim");
                return -EINVAL;
        }
        if (cfg->reclaim_step > cfg->max_reclaim) {
                ca_host_key_error(host, s, "reclaim_step", "reclaim_step is above max_reclaim");
                return -EINVAL;
        }
        if (cfg->action == KN_ACTION_DROP && !cfg->negative_limit && cfg->negative_ratio <= 0) {
                ca_host_key_error(host, s, "action", "action = drop needs a limit: "
                                  "negative_limit or negative_ratio");
                return -EINVAL;
        }
        group = cfg->cgroup;
        if (group && strlen(group) >= 2 && strcmp(group + strlen(group) - 2, "/*") == 0) {
                slice = strndup(group, strlen(group) - 2);
                if (!slice)
                        return -ENOMEM;
                if (!*slice) {
                        free(slice);
                        slice = strdup("/");
                        if (!slice)
                                return -ENOMEM;
                }
                group = slice;
        }
        if (cfg->exclude && !slice) {
                ca_host_key_error(host, s, "exclude", "exclude leaves out groups of a slice: "
                                  "cgroup = PATH/* only");
                goto out_inval;
        }

        if (cfg->cgroup || cfg->unit) {
                r = ks_find_memcg(root, &memcg);
                if (r < 0) {
                        ca_host_key_error(host, s, cfg->cgroup ? "cgroup" : "unit",
                                          "no memory cgroup controller is mounted (%s)",
                                          strerror(-r));
                        goto out_inval;
                }
        }
        if (group) {
                /* Refused now if it leads somewhere else; a group not there yet is fine. */
                r = ks_cgroup_open(root, &memcg, group, &fd, msg, sizeof(msg));
                if (r == 0)
                        close(fd);
                else if (r == -ENOENT)
                        ca_host_log(host, LOG_NOTICE, "%s, looked for at every rotation", msg);
                else {
                        ca_host_key_error(host, s, "cgroup", "%s", msg);
                        goto out_inval;
                }
        }

        switch (cfg->action) {
        case KN_ACTION_DROP:
                mech = KN_MECH_DROP_CACHES;
                break;
        case KN_ACTION_RECLAIM:
        case KN_ACTION_AUTO:
                if (!cfg->cgroup && !cfg->unit) {
                        ca_host_key_error(host, s, "action", "action = %s needs a group: set "
                                          "cgroup or unit (action = drop acts on the whole host)",
                                          cfg->action == KN_ACTION_AUTO ? "auto" : "reclaim");
                        goto out_inval;
                }
                if (ks_shrinker_present(root))
                        mech = KN_MECH_SHRINKER_SCAN;
                else if (memcg.version == KS_MEMCG_V2)
                        mech = KN_MECH_MEMORY_RECLAIM;
                else if (memcg.version == KS_MEMCG_V1 && cfg->allow_force_empty)
                        mech = KN_MECH_FORCE_EMPTY;
                else if (cfg->action == KN_ACTION_AUTO)
                        ca_host_log(host, LOG_NOTICE, "action = auto reports only here: cgroup "
                                    "v1 has no gentle reclaim (force_empty drops the page cache "
                                    "too: allow_force_empty)");
                else {
                        ca_host_key_error(host, s, "action", "cgroup v1 has no gentle reclaim: "
                                          "memory.force_empty only with allow_force_empty = yes "
                                          "(it drops the group's page cache too)");
                        goto out_inval;
                }
                if (mech == KN_MECH_MEMORY_RECLAIM)
                        ca_host_log(host, LOG_INFO, "the kernel reclaims page cache with %s: a "
                                    "group holding %llu MiB of page cache or more gets %s, one "
                                    "without page cache trims, one between is left alone "
                                    "(cacheaged.conf(5))", mglru ? "MGLRU" : "the classic LRU",
                                    (mglru ? KP_SWEEP_MIN_FILE : KP_PASS_MIN_FILE) >> 20,
                                    mglru ? "sweeps" : "passes");
                break;
        default:
                break;
        }
        *ret_memcg = memcg;
        *ret_mech = mech;
        *ret_slice = slice;
        return 0;

out_inval:
        free(slice);
        return -EINVAL;
}

/* ---- create / destroy ---- */

/*
 * The directory of the files @kn's mechanism writes that is mounted read-only here, or NULL:
 * the unit's sandbox mounts /sys/fs/cgroup (ProtectControlGroups=) and /proc/sys
 * (ProtectKernelTunables=) read-only unless the drop-in sandbox/kernel-reclaim.conf is linked.
 * Seen at start, so that a fresh install with the shipped configuration (action = auto) says
 * once, as a notice, that it reports and why, instead of a warning at its first write.
 */
static const char *kn_read_only_dir(const struct kn *kn)
{
        const char *dirs[2] = { NULL, NULL };
        char path[2 * KS_PATH_MAX];
        struct statvfs sv;

        switch (kn->mech) {
        case KN_MECH_MEMORY_RECLAIM:
                dirs[0] = kn->memcg.mount;
                /* a sweep raises vm.vfs_cache_pressure for its length */
                if (kn->mglru)
                        dirs[1] = "/proc/sys/vm";
                break;
        case KN_MECH_FORCE_EMPTY:
                dirs[0] = kn->memcg.mount;
                break;
        case KN_MECH_SHRINKER_SCAN:
                dirs[0] = "/sys/kernel/debug/shrinker";
                break;
        case KN_MECH_DROP_CACHES:
                dirs[0] = "/proc/sys/vm";
                break;
        default:
                return NULL;
        }
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && dirs[i]; i++) {
                snprintf(path, sizeof(path), "%s%s", strcmp(kn->root, "/") ? kn->root : "",
                         dirs[i]);
                if (statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY))
                        return dirs[i];
        }
        return NULL;
}

static void kn_destroy(void *instance)
{
        struct kn *kn = instance;

        if (!kn)
                return;
        if (kn->cache)
                ca_host_unregister_cache(kn->host, kn->cache);
        /* An action under way is waited for: the kernel's write cannot be cut short. */
        kn->worker = aw_free(kn->worker);
        kn->bus = sd_bus_flush_close_unref(kn->bus); /* the worker's, and it is gone */
        kn->guard = kk_guard_free(kn->guard);
        ca_cache_free(kn->cache);
        for (size_t i = 0; i < kn->n_parts; i++)
                part_free(kn->parts[i]);
        free(kn->parts);
        for (size_t i = 0; i < kn->n_exclude; i++)
                free(kn->exclude[i]);
        free(kn->slice);
        free(kn);
}

/* exclude's patterns, copied (the section's text is not the instance's to keep). */
static int kn_exclude_split(struct kn *kn, const char *v)
{
        for (const char *p = v ? v : ""; *p;) {
                size_t w;

                p += strspn(p, " \t");
                w = strcspn(p, " \t");
                if (!w)
                        break;
                if (kn->n_exclude == KN_EXCLUDE_MAX)
                        return -E2BIG; /* kn_check_exclude() refused it already */
                kn->exclude[kn->n_exclude] = strndup(p, w);
                if (!kn->exclude[kn->n_exclude])
                        return -ENOMEM;
                kn->n_exclude++;
                p += w;
        }
        return 0;
}

static int kn_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        const char *root = getenv(KS_ROOT_ENV);
        struct ks_dentry_state ds;
        struct event_base *base;
        struct kn_config cfg;
        struct ks_memcg memcg;
        const char *ro_dir;
        enum kn_mech mech;
        char *slice = NULL;
        uint64_t dn;
        struct kn *kn;
        int r;

        if (!root || !*root)
                root = "/";
        r = kn_parse(host, s, root, &cfg, &memcg, &mech, &slice);
        if (r < 0)
                return r;
        /* A fresh install shows the host's dentries at once: read them now (and say so early). */
        r = ks_read_dentry_state(root, &ds);
        if (r < 0) {
                ca_host_key_error(host, s, NULL, "cannot read %s/proc/sys/fs/dentry-state: %s",
                                  strcmp(root, "/") ? root : "", strerror(-r));
                free(slice);
                return r;
        }
        if (ca_host_check_only(host)) {
                free(slice);
                *ret_instance = NULL;
                return 0;
        }

        kn = calloc(1, sizeof(*kn));
        if (!kn) {
                free(slice);
                return -ENOMEM;
        }
        kn->host = host;
        kn->cfg = cfg;
        kn->root = root;
        kn->memcg = memcg;
        kn->mech = mech;
        kn->slice = slice;
        kn->group_target = cfg.cgroup || cfg.unit;
        kn->have_dentry_negative = ks_read_dentry_negative(root, &dn) == 0;
        kn->mglru = kn_mglru(root);
        /*
         * What a killed cacheaged left of a sweep is put back by cacheaged's start and the unit's
         * ExecStopPost= (kernel-knob.h), whatever the configuration: not here, where a reload's
         * check in a child would write the host too.
         */
        if (mech == KN_MECH_MEMORY_RECLAIM) {
                r = kk_guard_new(root, kn_guard_bound(), &kn->guard);
                if (r < 0)
                        goto out_destroy;
        }
        ro_dir = kn_read_only_dir(kn);
        if (ro_dir) {
                kn->read_only = kn->pub_read_only = true;
                ca_host_log(host, LOG_NOTICE, "%s is read-only here (the unit's sandbox): %s "
                            "only reports; to act, link the drop-in sandbox/kernel-reclaim.conf "
                            "(cacheaged(8))", ro_dir, cfg.action == KN_ACTION_AUTO
                                                          ? "action = auto"
                                                          : "the action");
        }
        if (cfg.swappiness != KN_SWAPPINESS_KERNEL)
                snprintf(kn->key, sizeof(kn->key), "swappiness=%d", cfg.swappiness);
        if (strcmp(root, "/") != 0)
                ca_host_log(host, LOG_NOTICE, "the kernel's files are read under %s (%s: tests "
                            "only)", root, KS_ROOT_ENV);
        r = kn_exclude_split(kn, cfg.exclude);
        if (r < 0)
                goto out_destroy;
        kn->parts = calloc(slice ? KN_PARTS_MAX : 1, sizeof(*kn->parts));
        if (!kn->parts) {
                r = -ENOMEM;
                goto out_destroy;
        }

        r = ca_cache_new(&kn_ops, kn, NULL, &kn->cache);
        if (r < 0)
                goto out_destroy;
        kn->last_ds = ds;
        kn->last_dentry_negative = dn;
        kn_publish_counts(kn, &ds);

        base = ca_host_event_base(host);
        if (!base) {
                r = -EINVAL;
                goto out_destroy;
        }
        r = aw_new(base, &kn_worker_ops, kn, &kn->worker);
        if (r < 0)
                goto out_destroy;

        r = ca_host_register_cache(host, s, kn->cache, &kn_hooks, kn);
        if (r < 0)
                goto out_destroy;
        ca_host_log(host, LOG_INFO, "%s%s%s%s, %s: %" PRIu64 " dentries, %" PRIu64 " negative",
                    slice ? "the groups of " : cfg.cgroup ? "cgroup " : cfg.unit ? "unit " : "",
                    slice ? slice : cfg.cgroup ? cfg.cgroup : cfg.unit ? cfg.unit
                                                                       : "the whole host",
                    kn->n_exclude ? " (some excluded)" : "",
                    kn->memcg.version ? (kn->memcg.version == KS_MEMCG_V2 ? " (cgroup v2)"
                                                                          : " (cgroup v1)")
                                      : "",
                    mech_names[mech], ds.nr_dentry, ds.nr_negative);
        *ret_instance = kn;
        return 0;

out_destroy:
        /* Unregistering a cache the host does not know is a no-op. */
        kn_destroy(kn);
        return r;
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "kernel",
        .description = "the host's dentry cache, watched and, per memory cgroup, reclaimed",
        .create = kn_create,
        .destroy = kn_destroy,
};
