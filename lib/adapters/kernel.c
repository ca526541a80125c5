/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel adapter: the host's real dentry cache. The kernel keeps and ages its dentries
 * itself, so the cache registered here holds no node; every rotation reads
 * /proc/sys/fs/dentry-state (and, for a target memory cgroup, its memory figures and
 * pressure) and shows them: the cache's objects are the kernel's dentries, of which negative
 * (ca_cache_set_counts()), and the rest are adapter statistics with their growth per rotation.
 *
 * Dentries are charged to the memory cgroup of the task that allocates them, so reclaim aimed
 * at one group is reclaim of that service's dentries. With action = reclaim each rotation
 * runs the kernel's own reclaim on the group, by the finest tool the kernel has:
 *
 *   shrinker-scan   (shrinker debugfs) one pass of each superblock shrinker over the group's
 *                   objects: the dcache's referenced bit spares what was used since the last
 *                   pass, the rest goes: Chinner's rotation, per service;
 *   memory.reclaim  (cgroup v2) the group's growth in reclaimable slab since the last reclaim
 *                   (or its lowest level since), bounded, with swappiness=0 where the kernel
 *                   takes that key (detected);
 *   force_empty     (cgroup v1, only with allow_force_empty) everything the group holds, page
 *                   cache too, when its kernel memory grew as much since the last one.
 *
 * action = drop writes 2 to /proc/sys/vm/drop_caches, host-wide, only past negative_limit or
 * negative_ratio after growth_rotations rotations of growth, at most once per min_interval.
 * Any action runs only in idle time and never under memory pressure.
 *
 * Threads: a write to memory.reclaim, memory.force_empty or drop_caches runs the reclaim in
 * the writing thread and may take long, and asking systemd for a unit's group is a bus call.
 * So a rotation's whole refresh runs on one worker thread per instance (adapter-worker.h):
 * before_rotate hands it a job and answers CA_ROTATE_LATER; the loop, told the job is done,
 * publishes the results, logs them and calls ca_host_rotate_ready(). The worker owns what it
 * works with (the bus connection, the unit's group, the reclaim baseline, the drop streak);
 * the loop owns what is published (counts, statistics). They meet in `job`: the loop writes
 * it only while no job is under way, the worker only while one is.
 */

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "cacheage/age.h"
#include "adapter-worker.h"
#include "cacheage/plugin.h"
#include "kernel-policy.h"
#include "kernel-sys.h"

#define KN_DROP_WHAT 2                    /* drop_caches: dentries and inodes, not page cache */
#define KN_BUS_TIMEOUT_USEC 5000000       /* a bus call to systemd */
#define KN_SWAPPINESS_KEY_MAX 32          /* bytes of "swappiness=N" */
#define KN_MSG_MAX 512                    /* bytes of one message of a job */

enum kn_action {
        KN_ACTION_REPORT,
        KN_ACTION_RECLAIM,
        KN_ACTION_DROP,
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

struct kn_config {
        const char *cgroup;
        const char *unit;
        int action;
        bool allow_force_empty;
        const char *reclaim_amount_text;
        uint64_t reclaim_amount;          /* bytes; 0 = auto */
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
        bool have_group;                  /* the group was found and read */
        struct ks_group gbefore, gafter;
        char group_path[KS_PATH_MAX];     /* the group, as resolved (unit: systemd's answer) */
        char group_msg[KN_MSG_MAX];       /* why it was not found */
        bool acted, put_off;
        enum kp_gate gate;
        int act_error;
        uint64_t act_usec;
        uint64_t asked_bytes;             /* memory.reclaim */
        struct ks_shrinker_pass pass;     /* shrinker-scan */
        char why[KN_MSG_MAX];             /* what decided the action (or why none) */
        char notice[KN_MSG_MAX];          /* said once: what the kernel takes */
};

struct kn {
        struct ca_host *host;
        struct kn_config cfg;
        const char *root;                 /* "/", or $CACHEAGED_KERNEL_ROOT in tests */
        struct ks_memcg memcg;
        enum kn_mech mech;
        bool group_target;
        bool have_dentry_negative;        /* the kernel has fs.dentry-negative */
        struct ca_cache *cache;

        /* the worker, and what it shares with the loop */
        struct aw *worker;
        struct kn_job job;

        /* the worker's own */
        sd_bus *bus;
        bool have_base;
        uint64_t base_bytes;              /* the group's slab (v2) or kernel memory (v1) level
                                             the last reclaim left, or its lowest since */
        struct kp_drop_state drop;
        enum kn_key_state key_state;
        char key[KN_SWAPPINESS_KEY_MAX];

        /* the loop's: what is published */
        bool have_last;
        struct kn_job last;               /* the last finished job */
        uint64_t nr_dentry_growth, nr_negative_growth, kernel_growth, slab_growth;
        bool group_missing;
        uint64_t group_vanished;
        uint64_t actions, put_off_busy, put_off_pressure, action_errors;
        uint64_t last_action_usec, last_freed_dentries, last_freed_negative;
        uint64_t reclaim_asked_bytes, shrinker_scanned;
        uint64_t host_memory_stall_usec;
        uint64_t loop_longest_usec;       /* the longest this adapter held the host's loop */
        bool logged_read_error;
};

/* ---- the worker ---- */

static uint64_t now_usec(void)
{
        return ca_now_usec();
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

/* The group's level that reclaim follows: reclaimable slab (v2), kernel memory (v1). */
static uint64_t kn_level(const struct kn *kn, const struct ks_group *g)
{
        return g->have_slab ? g->slab_reclaimable_bytes : g->kernel_bytes;
}

/* memory.reclaim: the key, where the kernel takes it (asked once), and the amount. */
static int kn_memory_reclaim(struct kn *kn, int fd, struct kn_job *job)
{
        uint64_t amount = kp_reclaim_amount(kn->cfg.reclaim_amount, kn->base_bytes,
                                            kn_level(kn, &job->gbefore), kn->cfg.min_reclaim,
                                            kn->cfg.max_reclaim);
        char a[16], b[16];
        int r;

        snprintf(job->why, sizeof(job->why), "reclaimable slab %s, %s after the last reclaim", ks_format_size(kn_level(kn, &job->gbefore), a, sizeof(a)),
                 ks_format_size(kn->base_bytes, b, sizeof(b)));
        if (amount == 0)
                return 0;
        if (kn->cfg.swappiness != KN_SWAPPINESS_KERNEL && kn->key_state == KN_KEY_UNKNOWN) {
                r = ks_reclaim_accepts(fd, kn->key);
                if (r == 1) {
                        kn->key_state = KN_KEY_ACCEPTED;
                        snprintf(job->notice, sizeof(job->notice),
                                 "memory.reclaim takes %s here: amounts are written with it",
                                 kn->key);
                } else if (r == 0) {
                        kn->key_state = KN_KEY_REFUSED;
                        snprintf(job->notice, sizeof(job->notice),
                                 "memory.reclaim refuses %s here (a kernel before 6.10?): "
                                 "amounts are written without it", kn->key);
                }
                /* Another error: unknown still, asked again next time. */
        }
        job->acted = true;
        job->asked_bytes = amount;
        return ks_reclaim(fd, amount, kn->key_state == KN_KEY_ACCEPTED ? kn->key : NULL);
}

static int kn_force_empty(struct kn *kn, int fd, struct kn_job *job)
{
        uint64_t grown = kp_reclaim_amount(0, kn->base_bytes, job->gbefore.kernel_bytes,
                                           kn->cfg.min_reclaim, UINT64_MAX);
        char a[16], b[16];

        snprintf(job->why, sizeof(job->why), "kernel memory %s, %s after the last reclaim",
                 ks_format_size(job->gbefore.kernel_bytes, a, sizeof(a)),
                 ks_format_size(kn->base_bytes, b, sizeof(b)));
        if (grown == 0)
                return 0;
        job->acted = true;
        return ks_force_empty(fd);
}

static int kn_shrinker_scan(struct kn *kn, struct kn_job *job)
{
        snprintf(job->why, sizeof(job->why), "a pass over the group's objects (cgroup id %" PRIu64
                 ")", job->gbefore.ino);
        job->acted = true;
        return ks_shrinker_scan(kn->root, job->gbefore.ino, 0, &job->pass);
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

/* Open and read the group; false (and why, in the job) when it is not there. */
static bool kn_group_read(struct kn *kn, struct kn_job *job, int *ret_fd)
{
        int fd, r;

        if (kn->cfg.unit) {
                r = kn_resolve_unit(kn, job->group_path, sizeof(job->group_path),
                                    job->group_msg, sizeof(job->group_msg));
                if (r < 0)
                        return false;
        } else {
                snprintf(job->group_path, sizeof(job->group_path), "%s", kn->cfg.cgroup);
        }
        r = ks_cgroup_open(kn->root, &kn->memcg, job->group_path, &fd, job->group_msg,
                           sizeof(job->group_msg));
        if (r < 0)
                return false;
        r = ks_read_group(fd, kn->memcg.version, &job->gbefore);
        if (r < 0) {
                snprintf(job->group_msg, sizeof(job->group_msg), "%.400s: cannot read its "
                         "memory figures: %s", job->group_path, strerror(-r));
                close(fd);
                return false;
        }
        *ret_fd = fd;
        return true;
}

static void kn_run_job(struct kn *kn, struct kn_job *job)
{
        double group_pct = -1;
        uint64_t t0;
        int fd = -1, r;

        job->error = ks_read_dentry_state(kn->root, &job->before);
        if (job->error < 0)
                return;
        job->have_dentry_negative =
                kn->have_dentry_negative &&
                ks_read_dentry_negative(kn->root, &job->dentry_negative) == 0;
        if (kn->group_target) {
                job->have_group = kn_group_read(kn, job, &fd);
                if (!job->have_group) {
                        kn->have_base = false; /* a new group (a restart) starts a new base */
                        if (kn->mech != KN_MECH_DROP_CACHES) {
                                job->after = job->before;
                                return;
                        }
                } else if (job->gbefore.have_pressure) {
                        group_pct = job->gbefore.pressure_some_avg10;
                }
                if (job->have_group && !kn->have_base) {
                        /* The first look at a group sets where its growth is counted from. */
                        kn->base_bytes = kn_level(kn, &job->gbefore);
                        kn->have_base = true;
                }
        }

        job->gate = kp_gate(job->idle, job->host_memory_pct, group_pct);
        if (job->gate != KP_GO && kn->mech != KN_MECH_REPORT && kn->mech != KN_MECH_DROP_CACHES) {
                job->put_off = true;
                snprintf(job->why, sizeof(job->why), "%s", kp_gate_name(job->gate));
        } else {
                t0 = now_usec();
                switch (kn->mech) {
                case KN_MECH_REPORT:
                        r = 0;
                        break;
                case KN_MECH_MEMORY_RECLAIM:
                        r = kn_memory_reclaim(kn, fd, job);
                        break;
                case KN_MECH_FORCE_EMPTY:
                        r = kn_force_empty(kn, fd, job);
                        break;
                case KN_MECH_SHRINKER_SCAN:
                        r = kn_shrinker_scan(kn, job);
                        break;
                case KN_MECH_DROP_CACHES:
                default:
                        r = kn_drop(kn, job);
                        break;
                }
                job->act_usec = now_usec() - t0;
                /* -EAGAIN: the kernel reclaimed less than asked, which is an answer too. */
                job->act_error = r == -EAGAIN ? 0 : r;
        }

        if (ks_read_dentry_state(kn->root, &job->after) < 0)
                job->after = job->before;
        if (kn->mech == KN_MECH_DROP_CACHES && job->acted && job->act_error == 0)
                kp_drop_done(&kn->drop, job->now_usec, job->after.nr_negative);
        if (fd >= 0) {
                if (ks_read_group(fd, kn->memcg.version, &job->gafter) < 0)
                        job->gafter = job->gbefore;
                /*
                 * Growth is counted from where the last reclaim left the group, or from its
                 * lowest level since: growth too small to act on, or put off, adds up.
                 */
                if (job->acted)
                        kn->base_bytes = kn_level(kn, &job->gafter);
                else if (kn_level(kn, &job->gafter) < kn->base_bytes)
                        kn->base_bytes = kn_level(kn, &job->gafter);
                close(fd);
        }
}

static void kn_worker_run(struct aw *w, void *userdata)
{
        struct kn *kn = userdata;

        kn_run_job(kn, &kn->job);
}

/* ---- the loop: publishing, logging ---- */

static uint64_t rise(uint64_t from, uint64_t to)
{
        return to > from ? to - from : 0;
}

static void kn_publish_counts(struct kn *kn, const struct ks_dentry_state *ds)
{
        (void)ca_cache_set_counts(kn->cache, &(const struct ca_cache_counts){
                                                     .objects_name = "dentries",
                                                     .part_name = "negative",
                                                     .mechanism = mech_names[kn->mech],
                                                     .objects = ds->nr_dentry,
                                                     .part = ds->nr_negative });
}

static void kn_log_group(struct kn *kn, const struct kn_job *job)
{
        if (!job->have_group) {
                if (!kn->group_missing) {
                        kn->group_vanished++;
                        ca_host_log(kn->host, LOG_NOTICE, "%s; %s, looked for again at every "
                                    "rotation", job->group_msg,
                                    kn->mech == KN_MECH_REPORT ? "reported as missing"
                                                               : "nothing done to it");
                }
                kn->group_missing = true;
                return;
        }
        if (kn->group_missing)
                ca_host_log(kn->host, LOG_INFO, "group %s found again", job->group_path);
        kn->group_missing = false;
}

static void kn_log_action(struct kn *kn, const struct kn_job *job)
{
        char a[16], b[16], group[KN_MSG_MAX + 64] = "", extra[128] = "";

        if (job->put_off) {
                if (job->gate == KP_BUSY)
                        kn->put_off_busy++;
                else
                        kn->put_off_pressure++;
                ca_host_log(kn->host, LOG_DEBUG, "%s put off: %s", mech_names[kn->mech],
                            job->why);
                return;
        }
        if (!job->acted) {
                ca_host_log(kn->host, LOG_DEBUG, "no %s: %s", mech_names[kn->mech], job->why);
                return;
        }
        kn->actions++;
        kn->last_action_usec = job->act_usec;
        kn->last_freed_dentries = rise(job->after.nr_dentry, job->before.nr_dentry);
        kn->last_freed_negative = rise(job->after.nr_negative, job->before.nr_negative);
        kn->reclaim_asked_bytes += job->asked_bytes;
        kn->shrinker_scanned += job->pass.objects;
        if (job->have_group)
                snprintf(group, sizeof(group), " on %.*s (kernel memory %s -> %s)", KN_MSG_MAX,
                         job->group_path,
                         ks_format_size(job->gbefore.kernel_bytes, a, sizeof(a)),
                         ks_format_size(job->gafter.kernel_bytes, b, sizeof(b)));
        if (kn->mech == KN_MECH_MEMORY_RECLAIM)
                snprintf(extra, sizeof(extra), ", %s asked",
                         ks_format_size(job->asked_bytes, a, sizeof(a)));
        else if (kn->mech == KN_MECH_SHRINKER_SCAN)
                snprintf(extra, sizeof(extra), ", %" PRIu64 " object%s of %" PRIu64
                         " superblock%s scanned", job->pass.objects,
                         job->pass.objects == 1 ? "" : "s", job->pass.shrinkers,
                         job->pass.shrinkers == 1 ? "" : "s");
        if (job->act_error < 0) {
                kn->action_errors++;
                ca_host_log(kn->host, LOG_WARNING, "%s%s failed: %s (%s), tried again at the "
                            "next rotation", mech_names[kn->mech], group,
                            strerror(-job->act_error), job->why);
                return;
        }
        ca_host_log(kn->host, LOG_INFO, "%s%s: %s%s; nr_dentry %" PRIu64 " -> %" PRIu64
                    ", nr_negative %" PRIu64 " -> %" PRIu64 ", %" PRIu64 " ms",
                    mech_names[kn->mech], group, job->why, extra, job->before.nr_dentry,
                    job->after.nr_dentry, job->before.nr_negative, job->after.nr_negative,
                    job->act_usec / 1000);
}

static void kn_done_job(struct kn *kn);

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

static void kn_done_job(struct kn *kn)
{
        struct kn_job *job = &kn->job;

        if (job->error < 0) {
                if (!kn->logged_read_error)
                        ca_host_log(kn->host, LOG_WARNING, "Failed to read dentry-state: %s",
                                    strerror(-job->error));
                kn->logged_read_error = true;
                return;
        }
        kn->logged_read_error = false;
        if (job->notice[0])
                ca_host_log(kn->host, LOG_NOTICE, "%s", job->notice);
        /* Growth is what piled up between two rotations, the action's own effect left out. */
        if (kn->have_last) {
                kn->nr_dentry_growth = rise(kn->last.after.nr_dentry, job->before.nr_dentry);
                kn->nr_negative_growth = rise(kn->last.after.nr_negative, job->before.nr_negative);
                kn->kernel_growth = job->have_group && kn->last.have_group
                                            ? rise(kn->last.gafter.kernel_bytes,
                                                   job->gbefore.kernel_bytes)
                                            : 0;
                kn->slab_growth = job->have_group && kn->last.have_group
                                          ? rise(kn->last.gafter.slab_reclaimable_bytes,
                                                 job->gbefore.slab_reclaimable_bytes)
                                          : 0;
        }
        if (kn->group_target)
                kn_log_group(kn, job);
        if (kn->mech != KN_MECH_REPORT)
                kn_log_action(kn, job);
        ca_host_log(kn->host, LOG_DEBUG, "nr_dentry %" PRIu64 " (+%" PRIu64 "), nr_negative %"
                    PRIu64 " (+%" PRIu64 ")%s%s", job->after.nr_dentry, kn->nr_dentry_growth,
                    job->after.nr_negative, kn->nr_negative_growth,
                    job->have_group ? ", group " : "", job->have_group ? job->group_path : "");
        kn_publish_counts(kn, &job->after);
        kn->last = *job;
        kn->have_last = true;
}

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

#define EMIT(name_, kind_, unit_, help_, value_)                                               \
        emit(eu,                                                                               \
             &(const struct ca_adapter_stat){ .name = name_, .kind = kind_, .unit = unit_,     \
                                              .help = help_ },                                 \
             value_)

static void kn_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct kn *kn = userdata;
        const struct ks_dentry_state *ds = &kn->last.after;
        const struct ks_group *g = &kn->last.gafter;

        EMIT("nr_dentry", CA_STAT_GAUGE, "dentries", "dentries in the host's dentry cache",
             ds->nr_dentry);
        EMIT("nr_unused", CA_STAT_GAUGE, "dentries", "unused dentries, on the LRU",
             ds->nr_unused);
        EMIT("nr_negative", CA_STAT_GAUGE, "dentries", "negative dentries", ds->nr_negative);
        EMIT("age_limit", CA_STAT_GAUGE, "seconds", "dentry-state's age_limit", ds->age_limit);
        EMIT("want_pages", CA_STAT_GAUGE, "pages", "dentry-state's want_pages", ds->want_pages);
        if (kn->have_dentry_negative)
                EMIT("dentry_negative", CA_STAT_GAUGE, NULL,
                     "fs.dentry-negative: 1 when unlink deletes the dentry",
                     kn->last.dentry_negative);
        EMIT("nr_dentry_growth", CA_STAT_GAUGE, "dentries",
             "rise of nr_dentry between the last two rotations (0 when it fell)",
             kn->nr_dentry_growth);
        EMIT("nr_negative_growth", CA_STAT_GAUGE, "dentries",
             "rise of nr_negative between the last two rotations (0 when it fell)",
             kn->nr_negative_growth);
        EMIT("host_memory_stall_usec", CA_STAT_COUNTER, "usec",
             "host memory pressure, some tasks stalled (/proc/pressure/memory total)",
             kn->host_memory_stall_usec);
        EMIT("loop_longest_usec", CA_STAT_GAUGE, "usec",
             "the longest this cache held the daemon's loop (the kernel's work is on a thread)",
             kn->loop_longest_usec);
        if (kn->group_target) {
                EMIT("group_missing", CA_STAT_GAUGE, NULL,
                     "1 when the group was not found at the last rotation", kn->group_missing);
                EMIT("group_vanished", CA_STAT_COUNTER, NULL, "times the group went missing",
                     kn->group_vanished);
                EMIT("group_memory_bytes", CA_STAT_GAUGE, "bytes",
                     "memory charged to the group", g->memory_bytes);
                EMIT("group_kernel_bytes", CA_STAT_GAUGE, "bytes",
                     "kernel memory charged to the group (dentries among it)", g->kernel_bytes);
                EMIT("group_kernel_growth_bytes", CA_STAT_GAUGE, "bytes",
                     "rise of group_kernel_bytes between the last two rotations",
                     kn->kernel_growth);
                EMIT("group_file_bytes", CA_STAT_GAUGE, "bytes", "page cache of the group",
                     g->file_bytes);
                if (kn->memcg.version == KS_MEMCG_V2) {
                        EMIT("group_slab_reclaimable_bytes", CA_STAT_GAUGE, "bytes",
                             "reclaimable slab of the group (memory.stat)",
                             g->slab_reclaimable_bytes);
                        EMIT("group_slab_reclaimable_growth_bytes", CA_STAT_GAUGE, "bytes",
                             "rise of group_slab_reclaimable_bytes between the last two rotations",
                             kn->slab_growth);
                        EMIT("group_memory_stall_usec", CA_STAT_COUNTER, "usec",
                             "the group's memory pressure, some tasks stalled (memory.pressure)",
                             g->pressure_some_usec);
                }
        }
        if (kn->mech == KN_MECH_REPORT)
                return;
        EMIT("actions", CA_STAT_COUNTER, NULL, "reclaims or drops done", kn->actions);
        EMIT("actions_put_off_busy", CA_STAT_COUNTER, NULL,
             "actions put off: not idle time", kn->put_off_busy);
        EMIT("actions_put_off_pressure", CA_STAT_COUNTER, NULL,
             "actions put off: memory pressure", kn->put_off_pressure);
        EMIT("action_errors", CA_STAT_COUNTER, NULL, "actions the kernel refused",
             kn->action_errors);
        EMIT("last_action_usec", CA_STAT_GAUGE, "usec", "time the last action took",
             kn->last_action_usec);
        EMIT("last_action_freed_dentries", CA_STAT_GAUGE, "dentries",
             "fall of nr_dentry across the last action (host-wide: others count in)",
             kn->last_freed_dentries);
        EMIT("last_action_freed_negative", CA_STAT_GAUGE, "dentries",
             "fall of nr_negative across the last action (host-wide: others count in)",
             kn->last_freed_negative);
        if (kn->mech == KN_MECH_MEMORY_RECLAIM)
                EMIT("reclaim_asked_bytes", CA_STAT_COUNTER, "bytes",
                     "bytes asked of memory.reclaim", kn->reclaim_asked_bytes);
        if (kn->mech == KN_MECH_SHRINKER_SCAN)
                EMIT("shrinker_scanned", CA_STAT_COUNTER, "objects",
                     "objects the superblock shrinkers were asked to scan", kn->shrinker_scanned);
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

static int kn_check_reclaim_amount(const char *v, void *target, char *msg, size_t len)
{
        return kn_check_size(v, target ? &((struct kn_config *)target)->reclaim_amount : NULL,
                             true, msg, len);
}

static int kn_check_max_reclaim(const char *v, void *target, char *msg, size_t len)
{
        return kn_check_size(v, target ? &((struct kn_config *)target)->max_reclaim : NULL,
                             false, msg, len);
}

static int kn_check_min_reclaim(const char *v, void *target, char *msg, size_t len)
{
        return kn_check_size(v, target ? &((struct kn_config *)target)->min_reclaim : NULL,
                             false, msg, len);
}

static int kn_check_cgroup(const char *v, void *target, char *msg, size_t len)
{
        return ks_cgroup_path_check(v, msg, len);
}

static int kn_check_unit(const char *v, void *target, char *msg, size_t len)
{
        return ks_unit_name_check(v, msg, len);
}

/* Adding a key is adding a line here (and its use below). */
static const struct ca_key_spec kn_keys[] = {
        { .name = "cgroup", .type = CA_KEY_PATH, CA_KEY_FIELD(struct kn_config, cgroup),
          .check = kn_check_cgroup,
          .help = "the target memory cgroup, a path under the memory controller" },
        { .name = "unit", .type = CA_KEY_STRING, CA_KEY_FIELD(struct kn_config, unit),
          .check = kn_check_unit, .help = "the target: a systemd unit's control group" },
        { .name = "action", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct kn_config, action),
          .def = "report", .what = "action",
          .choices = (const struct ca_key_choice[]){ { "report", KN_ACTION_REPORT },
                                                     { "reclaim", KN_ACTION_RECLAIM },
                                                     { "drop", KN_ACTION_DROP },
                                                     { NULL, 0 } },
          .help = "report (change nothing), reclaim (the group), drop (drop_caches 2)" },
        { .name = "allow_force_empty", .type = CA_KEY_BOOL,
          CA_KEY_FIELD(struct kn_config, allow_force_empty), .def = "no",
          .help = "cgroup v1: reclaim with memory.force_empty (page cache too)" },
        { .name = "reclaim_amount", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct kn_config, reclaim_amount_text), .def = "auto",
          .check = kn_check_reclaim_amount,
          .help = "memory.reclaim per rotation: auto (the slab's growth) or a size" },
        { .name = "max_reclaim", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct kn_config, max_reclaim_text), .def = "64M",
          .check = kn_check_max_reclaim, .help = "memory.reclaim per rotation, at most" },
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
        { "max_reclaim", KN_ACTION_RECLAIM },       { "min_reclaim", KN_ACTION_RECLAIM },
        { "swappiness", KN_ACTION_RECLAIM },        { "negative_limit", KN_ACTION_DROP },
        { "negative_ratio", KN_ACTION_DROP },       { "growth_rotations", KN_ACTION_DROP },
        { "min_interval", KN_ACTION_DROP },
};

/*
 * The table, then what ties keys to each other and to this kernel: the target, the mechanism
 * (which needs the memory controller's version, and debugfs), the group path walked where it
 * exists. Every problem is reported, at --check-config too.
 */
static int kn_parse(struct ca_host *host, const struct ca_section *s, const char *root,
                    struct kn_config *cfg, struct ks_memcg *ret_memcg, enum kn_mech *ret_mech)
{
        struct ks_memcg memcg = { 0 };
        enum kn_mech mech = KN_MECH_REPORT;
        char msg[KN_MSG_MAX];
        int r, fd;

        *cfg = (struct kn_config){ 0 };
        r = ca_section_parse(host, s, kn_keys, cfg);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(action_keys) / sizeof(action_keys[0]); i++)
                if (cfg->action != action_keys[i].action && ca_section_get(s, action_keys[i].key))
                        ca_host_log(host, LOG_NOTICE, "%s applies to action = %s only, ignoring",
                                    action_keys[i].key,
                                    action_keys[i].action == KN_ACTION_DROP ? "drop" : "reclaim");
        if (cfg->cgroup && cfg->unit) {
                ca_host_key_error(host, s, "unit", "set either cgroup or unit, not both");
                return -EINVAL;
        }
        if (cfg->min_reclaim > cfg->max_reclaim) {
                ca_host_key_error(host, s, "min_reclaim", "min_reclaim is above max_reclaim");
                return -EINVAL;
        }
        if (cfg->action == KN_ACTION_DROP && !cfg->negative_limit && cfg->negative_ratio <= 0) {
                ca_host_key_error(host, s, "action", "action = drop needs a limit: "
                                  "negative_limit or negative_ratio");
                return -EINVAL;
        }

        if (cfg->cgroup || cfg->unit) {
                r = ks_find_memcg(root, &memcg);
                if (r < 0) {
                        ca_host_key_error(host, s, cfg->cgroup ? "cgroup" : "unit",
                                          "no memory cgroup controller is mounted (%s)",
                                          strerror(-r));
                        return -EINVAL;
                }
        }
        if (cfg->cgroup) {
                /* Refused now if it leads somewhere else; a group not there yet is fine. */
                r = ks_cgroup_open(root, &memcg, cfg->cgroup, &fd, msg, sizeof(msg));
                if (r == 0)
                        close(fd);
                else if (r == -ENOENT)
                        ca_host_log(host, LOG_NOTICE, "%s, looked for at every rotation", msg);
                else {
                        ca_host_key_error(host, s, "cgroup", "%s", msg);
                        return -EINVAL;
                }
        }

        switch (cfg->action) {
        case KN_ACTION_DROP:
                mech = KN_MECH_DROP_CACHES;
                break;
        case KN_ACTION_RECLAIM:
                if (!cfg->cgroup && !cfg->unit) {
                        ca_host_key_error(host, s, "action", "action = reclaim needs a group: set "
                                          "cgroup or unit (action = drop acts on the whole host)");
                        return -EINVAL;
                }
                if (ks_shrinker_present(root))
                        mech = KN_MECH_SHRINKER_SCAN;
                else if (memcg.version == KS_MEMCG_V2)
                        mech = KN_MECH_MEMORY_RECLAIM;
                else if (cfg->allow_force_empty)
                        mech = KN_MECH_FORCE_EMPTY;
                else {
                        ca_host_key_error(host, s, "action", "cgroup v1 has no gentle reclaim: "
                                          "memory.force_empty only with allow_force_empty = yes "
                                          "(it drops the group's page cache too)");
                        return -EINVAL;
                }
                break;
        default:
                break;
        }
        *ret_memcg = memcg;
        *ret_mech = mech;
        return 0;
}

/* ---- create / destroy ---- */

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
        ca_cache_free(kn->cache);
        free(kn);
}

static int kn_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        const char *root = getenv(KS_ROOT_ENV);
        struct ks_dentry_state ds;
        struct event_base *base;
        struct kn_config cfg;
        struct ks_memcg memcg;
        enum kn_mech mech;
        uint64_t dn;
        struct kn *kn;
        int r;

        if (!root || !*root)
                root = "/";
        r = kn_parse(host, s, root, &cfg, &memcg, &mech);
        if (r < 0)
                return r;
        /* A fresh install shows the host's dentries at once: read them now (and say so early). */
        r = ks_read_dentry_state(root, &ds);
        if (r < 0) {
                ca_host_key_error(host, s, NULL, "cannot read %s/proc/sys/fs/dentry-state: %s",
                                  strcmp(root, "/") ? root : "", strerror(-r));
                return r;
        }
        if (ca_host_check_only(host)) {
                *ret_instance = NULL;
                return 0;
        }

        kn = calloc(1, sizeof(*kn));
        if (!kn)
                return -ENOMEM;
        kn->host = host;
        kn->cfg = cfg;
        kn->root = root;
        kn->memcg = memcg;
        kn->mech = mech;
        kn->group_target = cfg.cgroup || cfg.unit;
        kn->have_dentry_negative = ks_read_dentry_negative(root, &dn) == 0;
        if (cfg.swappiness != KN_SWAPPINESS_KERNEL)
                snprintf(kn->key, sizeof(kn->key), "swappiness=%d", cfg.swappiness);
        if (strcmp(root, "/") != 0)
                ca_host_log(host, LOG_NOTICE, "the kernel's files are read under %s (%s: tests "
                            "only)", root, KS_ROOT_ENV);

        r = ca_cache_new(&kn_ops, kn, NULL, &kn->cache);
        if (r < 0)
                goto out_destroy;
        kn->last.after = ds;
        kn->last.dentry_negative = dn;
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
        ca_host_log(host, LOG_INFO, "%s%s%s, %s: %" PRIu64 " dentries, %" PRIu64 " negative",
                    cfg.cgroup ? "cgroup " : cfg.unit ? "unit " : "the whole host",
                    cfg.cgroup ? cfg.cgroup : cfg.unit ? cfg.unit : "",
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
