/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The files adapter: a cache directory on disk, aged file by file. Every file of the tree
 * under `path` (its subdirectories too with `recursive`, and only files of at least
 * `min_size`) is an object; a use is an open or a read seen by fanotify or inotify
 * (files-watch.h), or an atime that moved since the last scan; a file idle past its age is
 * deleted. With `dry_run` it is only named in the log.
 *
 * The refresh before each rotation is a rescan of the tree, which must not hold the host's
 * loop for longer than an aging slice however large the tree: it runs as a chain of steps,
 * each a lowest-priority event that reads directory entries until the slice's time is spent
 * and yields (CA_ROTATE_LATER; ca_host_rotate_ready() once the walk and the sweep of what
 * vanished are done). The deletions are two-phase: the reclaim op only queues a victim;
 * after_age starts the steps that hand them, a batch at a time, to a worker thread
 * (adapter-worker.h), which checks and unlinks each, and then take its answers back. A
 * system call there may wait for the disk (on a `discard` mount one unlinkat() took 1.14 s)
 * without holding the loop. Every check that decides what may be deleted is in files-safe.c.
 *
 * What it tracks, and what each object costs:
 *   struct fs_file  one per file: its aging node, what the scan saw (inode, size, times), its
 *                   directory and its name, in a hash table by (directory, name) and on one of
 *                   two lists: fs->files_seen (live, in the order the scans last saw them, so
 *                   that the ones a scan did not see are at its head) or fs->victims;
 *   struct fs_dir   one per directory entered: its inode (a directory reopened to delete in it
 *                   must be the one the scan saw), its watch key, a reference per child.
 * Both count towards `max_files`; beyond it new entries are not tracked (never deleted), and
 * the log says how many.
 *
 * Watches. An inotify watch is a kernel object charged to the daemon's user, root's, whose
 * fs.inotify.max_user_watches every other process of root's shares; and anyone who may write
 * the cache may make directories in it. So a directory is watched only while it holds tracked
 * files (a file's uses are all a watch is for; a new file is a new object, stamped by the scan
 * that finds it, so no use of it before that scan matters), and the watches of all the files
 * caches of the daemon are bounded together (fs_watch_pool: a quarter of max_user_watches, read
 * when a cache is made) and each by its `max_watches`. A directory beyond the bound is seen by
 * atime only (`unwatched_directories`), and tried again at every scan. With `remove_empty_dirs`
 * a directory found empty and unchanged by every scan for `max_age` rotations is removed, on
 * the worker, with the checks files get (fs_rmdir_if_same()).
 *
 * Lost events. When the kernel's queue overflows, the uses it dropped are unknown; what is
 * known is when they happened: after the last moment the queue was seen empty, our own mark
 * came out of it or the previous overflow marker was read (files-watch.h), and before this
 * marker was read. atime can prove
 * that a file was not read in such a window: a read moves it (on a strictatime mount always; on
 * a relatime one when atime is not newer than mtime or ctime, or is a day old), unless the
 * reader opened it O_NOATIME or the file is chattr +A. So each file keeps the scan since which
 * its atime would show a read (proof_gen); a marker read after a scan finished names that scan
 * (its window starts after it); the next scan, which starts after the marker was read, clears
 * every file whose atime did not move and was proof before the window, and counts each other
 * file as used (touched: relatime hid a read, or no proof yet). Until that scan, the reclaim op
 * keeps the unproven ones, and the victims and files handed to the worker that are unproven are
 * put back; proven victims go on, because the worker's own atime check, just before the
 * unlink, comes after the window. Uses that were delivered are never affected, and deletions
 * go on under a flood that overflows the queue every rotation. Under such a flood the queue may
 * never be seen empty: at the end of each scan a mark of our own (fw_sync()) bounds the next
 * window to after that scan.
 *
 * The hash tables grow incrementally (two tables while rehashing, a few
 * buckets moved per insertion, as redis's dict does), so that no step rehashes a large table
 * at once; they are keyed with SipHash and a random key, since the names are chosen by
 * whoever writes to the cache.
 *
 * Threads. Everything runs on the host's loop thread but the batch's run on the worker. The
 * batch (struct fs_job) is the loop's while the worker is idle and the worker's while it runs
 * (the handover orders them); during the run the loop touches only each entry's `used` flag
 * (atomic). The worker also reads, of each file in the batch, its name and what was seen, and
 * the names, inodes and parents of its directories up to the top: none of these change while
 * the file is in the batch (a file in it is on fs->sent, which no scan and no sweep touches),
 * and none is freed (the file holds its directory, each directory its parent). It uses a
 * duplicate of the root's handle: a rescan may replace the loop's meanwhile.
 */

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "adapter-worker.h"
#include "cacheage/plugin.h"
#include "files-safe.h"
#include "files-table.h"
#include "files-watch.h"

#define FS_DEPTH_MAX 32                /* directory levels entered below path */
#define FS_MAX_FILES_DEFAULT "1000000" /* files and directories tracked */
#define FS_MAX_FILES_MAX 100000000     /* files and directories tracked */
#define FS_CLOCK_EVERY 2               /* entries (each a system call or more) per clock read */
#define FS_EVENTS_PER_WAKEUP (64 * 1024) /* bytes of events read per wakeup, at most */
#define FS_PATH_MAX 4096               /* bytes of a path in a log line */
#define FS_BATCH_FILES 256             /* files handed to the worker at a time */
#define FS_MAX_WATCHES_MAX 100000000   /* max_watches, at most */
#define FS_WATCH_SHARE_DIV 4           /* the daemon's share of max_user_watches: a quarter */
#define FS_WATCHES_FALLBACK 8192       /* max_user_watches when it cannot be read */
#define FS_SEC_NSEC 1000000000LL
#define FS_RELATIME_NSEC ((24 * 3600 + 60) * FS_SEC_NSEC) /* relatime's day, and a minute */
#define FS_ATIME_SETTLE_NSEC FS_SEC_NSEC /* atime this old at least: a read now would differ */

enum {
        FS_WATCH_AUTO,
        FS_WATCH_FANOTIFY,
        FS_WATCH_INOTIFY,
        FS_WATCH_ATIME,
};

#define FS_WATCHES_AUTO (-1)

struct fs_config {
        const char *path;
        bool recursive;
        const char *min_size_text;
        uint64_t min_size;     /* bytes, from min_size_text */
        bool dry_run;
        int watch;
        uint64_t max_files;
        int max_watches;       /* FS_WATCHES_AUTO: the pool's bound only */
        bool remove_empty_dirs;
};

/* What a read of a file does to its atime, by the mount's options. */
enum fs_atime_mode {
        FS_ATIME_NONE,     /* noatime: nothing */
        FS_ATIME_RELATIME, /* moved when not newer than mtime or ctime, or a day old */
        FS_ATIME_STRICT,   /* moved always */
};

/*
 * The inotify watches of all the files caches of the daemon (one module, one loop thread):
 * together at most a quarter of fs.inotify.max_user_watches, so that a user who makes
 * directories in a cache can never take root's last watches.
 */
static struct {
        uint64_t limit; /* watches; read from the kernel when a cache is made */
        uint64_t used;
} fs_watch_pool;

/* ---- what is tracked ---- */

enum fs_state {
        FS_LIVE,        /* aged by the cache, on files_seen */
        FS_VICTIM,      /* chosen by reclaim, on victims, waiting to be checked and deleted */
        FS_VICTIM_USED, /* chosen, then used (or events were lost): to be put back */
        FS_SENT,        /* in the worker's batch (job->work[slot]), on sent */
        FS_SENT_USED,   /* in the batch, then used: its entry says so, the worker skips it */
};

struct fs_dir;

struct fs_file {
        struct ca_node node;        /* first: the reclaim op is handed the node */
        struct fs_hlink h;          /* in fs->files */
        TAILQ_ENTRY(fs_file) link;  /* in fs->files_seen, fs->victims or fs->sent */
        struct fs_dir *parent;
        struct fs_seen seen;
        union {
                uint32_t gen;       /* FS_LIVE: the last scan that saw it */
                uint32_t slot;      /* FS_SENT*: its entry in the batch */
        };
        uint32_t proof_gen;         /* the scan since which its atime shows any read; 0: none */
        uint8_t state;              /* enum fs_state */
        char name[];
};

struct fs_dir {
        struct fs_hlink h;          /* in fs->dirs, unless removed */
        struct fs_hlink w;          /* in fs->watches, while key_len > 0 */
        TAILQ_ENTRY(fs_dir) link;   /* in fs->dirs_seen, unless removed (or the top) */
        TAILQ_ENTRY(fs_dir) vlink;  /* in fs->dir_victims, while queued to be removed */
        struct fs_dir *parent;      /* NULL for the top */
        uint64_t ino;
        uint32_t gen;
        uint32_t refs;              /* children naming it as parent, and the removal's own */
        uint32_t nfiles;            /* tracked files in it */
        uint32_t empty_since;       /* the first of the scans that found it empty, 0: not */
        int64_t empty_mtime_nsec, empty_ctime_nsec; /* as that scan saw them */
        uint16_t depth;
        bool removed;               /* forgotten: freed when the last child goes */
        bool victim;                /* queued to be removed, or in the worker's batch */
        uint8_t key_len;
        unsigned char *key;         /* the watch's key, key_len bytes */
        char name[];
};

/*
 * A directory being read, level by level: its entries through getdents64() into a small
 * buffer of its own, not readdir()'s 32 KiB, because one call's kernel time grows with what
 * it returns (on ext4, 32 KiB of a large directory took up to a millisecond, 4 KiB at most
 * 70 us): the step's clock is read between calls.
 */
#define FS_DIRBUF 4096 /* bytes */

struct fs_level {
        int fd;
        struct fs_dir *dir;
        char *buf;          /* FS_DIRBUF bytes */
        size_t pos, len;
        uint32_t entries;   /* read so far, "." and ".." aside */
};

enum fs_phase {
        FS_SCAN_GATE, /* tests only: waiting for the gate */
        FS_SCAN_WALK,
        FS_SCAN_SWEEP_FILES,
        FS_SCAN_SWEEP_DIRS,
};

/* One file of a batch of deletions, and the worker's answer. */
enum fs_answer {
        FS_NOT_TRIED, /* the root check failed, or the run was cut short */
        FS_USED,      /* used since it was chosen: not looked at */
        FS_NO_DIR,    /* r: its directory could not be opened as the scan saw it */
        FS_CHECKED,   /* r: fs_unlink_if_same()'s answer */
};

struct fs_work {
        struct fs_file *f;    /* a file to delete, or */
        struct fs_dir *d;     /* an empty directory to remove (it holds a reference) */
        atomic_bool used;     /* set by the loop on a use seen meanwhile */
        int r;
        uint8_t answer;       /* enum fs_answer */
};

struct fs_job {
        /* in, from the loop */
        struct fs_root root;  /* a duplicate of the root's handle */
        const char *path;
        bool dry_run;
        bool first;           /* the first batch of a run (the tests' gate is there) */
        uint32_t n;           /* entries in work[] */
        /* out, from the worker */
        int root_error;       /* path does not resolve: nothing tried, why says why */
        bool root_moved;      /* path names another directory: nothing tried */
        char why[512];
        uint64_t longest_usec; /* the longest check and unlink of one file */
        /* the worker's own, during a run: the last directory opened */
        const struct fs_dir *chain_dir;
        int chain_fd;
        /* the loop's: answers taken back so far */
        uint32_t applied;
        struct fs_work work[FS_BATCH_FILES];
};

/* The longest step of some work on the loop, on the clock and of its thread's CPU time. */
struct fs_longest {
        uint64_t wall_usec, cpu_usec;
};

/* What one scan found; the last complete one is kept for the statistics. */
struct fs_scan_counts {
        uint64_t files, new_files, changed, atime_uses, untracked, mounts, symlinks, too_deep,
                errors, lost_proven, lost_assumed;
};

struct fs {
        struct ca_host *host;
        struct fs_config cfg;
        struct ca_cache *cache;
        struct event_base *base;
        struct fs_root root;
        bool root_failing;          /* path could not be resolved, last time it was tried */
        struct fs_dir *top;
        uint8_t sipkey[16];

        struct fs_table files, dirs, watches;
        TAILQ_HEAD(fs_file_list, fs_file) files_seen, victims, sent;
        TAILQ_HEAD(fs_dir_list, fs_dir) dirs_seen, dir_victims;
        uint64_t n_files, n_dirs;

        /* uses between scans */
        struct fw *watch;
        struct event *watch_ev;
        bool watch_full_logged, watch_bound_logged;
        uint64_t n_watches;         /* inotify watches held (each counted in fs_watch_pool) */
        enum fs_atime_mode atime_mode;
        int64_t scan_now_nsec;      /* CLOCK_REALTIME at the start of the scan's step */

        /* lost events (see the top of this file); scan numbers are fs->gen's */
        uint32_t sync_gen;          /* the last scan done when the queue was last known whole */
        uint32_t sync_mark_gen;     /* the last scan done when fw_sync() was called */
        bool lost_pending;          /* markers read since the last scan began */
        uint32_t lost_from;         /* and the earliest scan their windows follow */
        bool resolving;             /* the scan under way settles markers read before it */
        uint32_t resolve_from;

        /* the scan */
        struct event *scan_ev;
        bool scanning;
        enum fs_phase phase;
        struct fs_level stack[FS_DEPTH_MAX + 1];
        unsigned depth;
        uint32_t gen;
        uint64_t scan_started_usec;
        struct fs_scan_counts count, last;
        bool untracked_logged;

        /* the deletions */
        struct event *dispose_ev;
        struct aw *worker;
        struct fs_job *job;         /* work[] holds answers to take back while applied < n */
        bool disposing;
        uint32_t run_batches;       /* handed to the worker in this run */
        bool run_root_logged;       /* the root's trouble was said in this run */
        struct fs_longest run_longest; /* this run's steps on the loop */
        uint64_t run_longest_delete_usec; /* and its longest file on the worker */
        uint64_t run_started_usec, run_deleted, run_bytes, run_kept, run_errors, run_dirs;
        int last_errno_logged;

        /* statistics */
        uint64_t scans, accesses, atime_uses, deleted, deleted_bytes, would_delete, kept,
                gone, errors, events_lost, unwatched_dirs, last_scan_usec, longest_step_usec,
                longest_step_cpu_usec, longest_delete_usec, lost_uses_assumed, lost_proven,
                removed_dirs;

#ifdef CA_FILES_TEST_HOOKS
        const char *gate_dir;
        bool gate_logged;
#endif
};

/* ---- files and directories ---- */

struct fs_name_key {
        const struct fs_dir *parent;
        const char *name;
};

struct fs_bytes_key {
        const unsigned char *bytes;
        size_t len;
};

static char *fs_relpath(const struct fs_dir *d, const char *name, char *buf, size_t len);

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static uint32_t name_hash(const struct fs *fs, const struct fs_dir *parent, const char *name)
{
        return (uint32_t)fs_siphash(fs->sipkey, (uint64_t)(uintptr_t)parent, name, strlen(name));
}

static uint32_t key_hash(const struct fs *fs, const unsigned char *key, size_t len)
{
        return (uint32_t)fs_siphash(fs->sipkey, 0, key, len);
}

static bool file_eq(const struct fs_hlink *l, const void *key)
{
        const struct fs_file *f = container_of(l, struct fs_file, h);
        const struct fs_name_key *k = key;

        return f->parent == k->parent && strcmp(f->name, k->name) == 0;
}

static bool dir_eq(const struct fs_hlink *l, const void *key)
{
        const struct fs_dir *d = container_of(l, struct fs_dir, h);
        const struct fs_name_key *k = key;

        return d->parent == k->parent && strcmp(d->name, k->name) == 0;
}

static bool watch_eq(const struct fs_hlink *l, const void *key)
{
        const struct fs_dir *d = container_of(l, struct fs_dir, w);
        const struct fs_bytes_key *k = key;

        return d->key_len == k->len && memcmp(d->key, k->bytes, k->len) == 0;
}

static struct fs_file *file_find(struct fs *fs, struct fs_dir *parent, const char *name)
{
        struct fs_name_key k = { parent, name };
        struct fs_hlink *l = fs_table_find(&fs->files, name_hash(fs, parent, name), file_eq, &k);

        return l ? container_of(l, struct fs_file, h) : NULL;
}

static struct fs_dir *dir_find(struct fs *fs, struct fs_dir *parent, const char *name)
{
        struct fs_name_key k = { parent, name };
        struct fs_hlink *l = fs_table_find(&fs->dirs, name_hash(fs, parent, name), dir_eq, &k);

        return l ? container_of(l, struct fs_dir, h) : NULL;
}

static struct fs_dir *watch_find(struct fs *fs, const unsigned char *key, size_t len)
{
        struct fs_bytes_key k = { key, len };
        struct fs_hlink *l = fs_table_find(&fs->watches, key_hash(fs, key, len), watch_eq, &k);

        return l ? container_of(l, struct fs_dir, w) : NULL;
}

static bool fs_inotify(const struct fs *fs)
{
        return fs->watch && fw_mode(fs->watch) == FW_INOTIFY;
}

/* This cache's bound on its inotify watches: max_watches, within the daemon's pool. */
static uint64_t fs_watch_limit(const struct fs *fs)
{
        if (fs->cfg.max_watches == FS_WATCHES_AUTO ||
            (uint64_t)fs->cfg.max_watches > fs_watch_pool.limit)
                return fs_watch_pool.limit;
        return (uint64_t)fs->cfg.max_watches;
}

/* The pool's bound: a quarter of fs.inotify.max_user_watches as it is now. */
static void fs_watch_pool_update(void)
{
        unsigned long long v = 0;
        FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "re");

        if (!f || fscanf(f, "%llu", &v) != 1 || v == 0)
                v = FS_WATCHES_FALLBACK;
        if (f)
                fclose(f);
        fs_watch_pool.limit = v / FS_WATCH_SHARE_DIV > 0 ? v / FS_WATCH_SHARE_DIV : 1;
}

/* Give the watch of @d up (inotify: the kernel's too). */
static void dir_unwatch(struct fs *fs, struct fs_dir *d)
{
        if (!d->key_len)
                return;
        fs_table_del(&fs->watches, &d->w);
        if (fs->watch)
                fw_unwatch_dir(fs->watch, d->key, d->key_len);
        if (fs_inotify(fs)) {
                fs->n_watches--;
                fs_watch_pool.used--;
        }
        free(d->key);
        d->key = NULL;
        d->key_len = 0;
}

/* Drop a reference on @d; a removed directory goes with its last child, and so on upwards. */
static void dir_put(struct fs *fs, struct fs_dir *d)
{
        while (d && --d->refs == 0 && d->removed) {
                struct fs_dir *parent = d->parent;

                free(d);
                fs->n_dirs--;
                d = parent;
        }
}

/* Forget @d: out of the tables and lists now, freed once no child names it. */
static void dir_forget(struct fs *fs, struct fs_dir *d)
{
        if (d->removed)
                return;
        dir_unwatch(fs, d);
        fs_table_del(&fs->dirs, &d->h);
        TAILQ_REMOVE(&fs->dirs_seen, d, link);
        d->removed = true;
        d->refs++;
        dir_put(fs, d);
}

/* @d is no longer queued to be removed: the removal's reference goes. */
static void dir_victim_release(struct fs *fs, struct fs_dir *d)
{
        d->victim = false;
        dir_put(fs, d);
}

/* A zeroed struct of @size bytes whose flexible name[] (at @name_offset) holds @name. */
static void *alloc_named(size_t size, size_t name_offset, const char *name)
{
        size_t len = strlen(name);
        char *p = calloc(1, name_offset + len + 1 > size ? name_offset + len + 1 : size);

        if (p)
                memcpy(p + name_offset, name, len + 1);
        return p;
}

static struct fs_dir *dir_new(struct fs *fs, struct fs_dir *parent, const char *name, uint64_t ino)
{
        struct fs_dir *d = alloc_named(sizeof(struct fs_dir), offsetof(struct fs_dir, name), name);

        if (!d)
                return NULL;
        d->parent = parent;
        d->ino = ino;
        d->depth = parent ? parent->depth + 1 : 0;
        if (parent) {
                parent->refs++;
                d->h.hash = name_hash(fs, parent, name);
                fs_table_add(&fs->dirs, &d->h);
                TAILQ_INSERT_TAIL(&fs->dirs_seen, d, link);
        }
        fs->n_dirs++;
        return d;
}

/*
 * Watch @d, open at @fd: with inotify, within the bounds (beyond them, and when the kernel
 * refuses, its files are seen by atime only, and the next scan tries again).
 */
static void dir_watch(struct fs *fs, struct fs_dir *d, int fd)
{
        unsigned char key[FW_KEY_MAX];
        char rel[FS_PATH_MAX];
        struct fs_dir *other;
        size_t len;
        int r;

        if (!fs->watch || d->key_len)
                return;
        if (fs_inotify(fs) &&
            (fs->n_watches >= fs_watch_limit(fs) || fs_watch_pool.used >= fs_watch_pool.limit)) {
                bool own = fs->n_watches >= fs_watch_limit(fs);

                fs->unwatched_dirs++;
                if (!fs->watch_bound_logged) {
                        fs->watch_bound_logged = true;
                        ca_host_log(fs->host, LOG_WARNING,
                                    "%s: %" PRIu64 " inotify watches, the bound (%s); uses in "
                                    "directories beyond it are seen by atime only, retried at "
                                    "every scan", fs->cfg.path,
                                    own ? fs_watch_limit(fs) : fs_watch_pool.limit,
                                    own && fs_watch_limit(fs) < fs_watch_pool.limit ?
                                    "max_watches" : "the daemon's files caches' quarter of "
                                    "fs.inotify.max_user_watches");
                }
                return;
        }
        r = fw_watch_dir(fs->watch, fd, key, &len);
        if (r < 0) {
                fs->unwatched_dirs++;
                if (!fs->watch_full_logged) {
                        fs->watch_full_logged = true;
                        ca_host_log(fs->host, LOG_WARNING,
                                    "Cannot watch %s: %s%s; uses there are seen by atime only, "
                                    "retried at every scan",
                                    d->parent ? fs_relpath(d->parent, d->name, rel, sizeof(rel)) :
                                    fs->cfg.path, strerror(-r),
                                    r == -ENOSPC ? " (fs.inotify.max_user_watches reached)" : "");
                }
                return;
        }
        /*
         * The same key as another record's: the same directory, renamed since the last scan
         * (the old name's record is swept at the end of this one). The kernel's watch is the
         * inode's, counted once: the record of the name seen now owns it.
         */
        other = watch_find(fs, key, len);
        d->key = malloc(len);
        if (!d->key) {
                if (!other)
                        fw_unwatch_dir(fs->watch, key, len);
                return;
        }
        if (other) {
                fs_table_del(&fs->watches, &other->w);
                free(other->key);
                other->key = NULL;
                other->key_len = 0;
        } else if (fs_inotify(fs)) {
                fs->n_watches++;
                fs_watch_pool.used++;
        }
        memcpy(d->key, key, len);
        d->key_len = (uint8_t)len;
        d->w.hash = key_hash(fs, key, len);
        fs_table_add(&fs->watches, &d->w);
}

/* The list @f is on, by its state. */
static struct fs_file_list *file_list(struct fs *fs, const struct fs_file *f)
{
        switch (f->state) {
        case FS_LIVE:
                return &fs->files_seen;
        case FS_SENT:
        case FS_SENT_USED:
                return &fs->sent;
        default:
                return &fs->victims;
        }
}

/* Forget @f: out of the cache, the table and its list, and freed. */
static void file_forget(struct fs *fs, struct fs_file *f)
{
        if (ca_node_linked(&f->node))
                ca_cache_remove(fs->cache, &f->node);
        fs_table_del(&fs->files, &f->h);
        TAILQ_REMOVE(file_list(fs, f), f, link);
        f->parent->nfiles--;
        dir_put(fs, f->parent);
        free(f);
        fs->n_files--;
}

/*
 * (Re)start aging @f as a new object, now, as @seen says it is (NULL: as it was seen). The
 * size op must answer at removal what it answered at insertion: the update goes between.
 */
static void file_age_afresh(struct fs *fs, struct fs_file *f, const struct fs_seen *seen)
{
        if (ca_node_linked(&f->node))
                ca_cache_remove(fs->cache, &f->node);
        if (seen)
                f->seen = *seen;
        memset(&f->node, 0, sizeof(f->node));
        ca_cache_insert(fs->cache, &f->node);
}

static struct fs_file *file_new(struct fs *fs, struct fs_dir *parent, const char *name,
                                const struct fs_seen *seen, uint32_t proof_gen)
{
        struct fs_file *f = alloc_named(sizeof(struct fs_file), offsetof(struct fs_file, name), name);

        if (!f)
                return NULL;
        f->parent = parent;
        parent->refs++;
        parent->nfiles++;
        f->seen = *seen;
        f->proof_gen = proof_gen;
        f->gen = fs->gen;
        f->h.hash = name_hash(fs, parent, name);
        fs_table_add(&fs->files, &f->h);
        TAILQ_INSERT_TAIL(&fs->files_seen, f, link);
        ca_cache_insert(fs->cache, &f->node);
        fs->n_files++;
        return f;
}

/* "dir/sub/name", relative to path, for the log. */
static char *fs_relpath(const struct fs_dir *d, const char *name, char *buf, size_t len)
{
        const struct fs_dir *chain[FS_DEPTH_MAX + 1];
        size_t n = 0, off = 0;

        for (; d && d->parent && n < FS_DEPTH_MAX; d = d->parent)
                chain[n++] = d;
        buf[0] = '\0';
        while (n-- > 0 && off < len) {
                int w = snprintf(buf + off, len - off, "%s/", chain[n]->name);

                off += w > 0 ? (size_t)w : 0;
        }
        if (off < len)
                snprintf(buf + off, len - off, "%s", name);
        return buf;
}

/* ---- steps on the loop ---- */

/*
 * One step of a scan or of deletions: it ends once the host's slice time is spent. Its wall
 * time and its thread's CPU time are both kept: on a loaded machine the wall time also counts
 * the other processes that preempted the loop, the CPU time only the step's own work.
 */
struct fs_step {
        uint64_t started_usec, cpu_started_usec, deadline_usec;
};

static int64_t realtime_nsec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * FS_SEC_NSEC + ts.tv_nsec;
}

static uint64_t thread_cpu_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static struct fs_step fs_step_begin(struct fs *fs)
{
        uint64_t now = ca_now_usec();

        return (struct fs_step){ .started_usec = now, .cpu_started_usec = thread_cpu_usec(),
                                 .deadline_usec = now + ca_host_slice_usec(fs->host) };
}

/* The end of @step: the adapter's longest steps, and those of @run too (NULL: none). */
static void fs_step_end(struct fs *fs, const struct fs_step *step, struct fs_longest *run)
{
        uint64_t wall = ca_now_usec() - step->started_usec;
        uint64_t cpu = thread_cpu_usec() - step->cpu_started_usec;

        if (wall > fs->longest_step_usec)
                fs->longest_step_usec = wall;
        if (cpu > fs->longest_step_cpu_usec)
                fs->longest_step_cpu_usec = cpu;
        if (run && wall > run->wall_usec)
                run->wall_usec = wall;
        if (run && cpu > run->cpu_usec)
                run->cpu_usec = cpu;
}

#ifdef CA_FILES_TEST_HOOKS
/*
 * Tests only (tests/hooked/meson.build builds a second files.so with CA_FILES_TEST_HOOKS): with
 * CA_FILES_TEST_GATE=DIR, each scan (on the loop) and each run of deletions (on the worker,
 * before its first batch's root check) starts only once a token file ("scan", "dispose") is in
 * DIR, and takes it, so that a test can act exactly between the scan that chose a file and the
 * checks before its deletion. While a file "hold" is in DIR, the worker waits before each
 * file's check, and makes a file "held" to say so: a deletion that takes as long as the test
 * wants, to see what the loop does meanwhile. The shipped module has none of this.
 */
static bool fs_gate_take(const char *dir, const char *token)
{
        char path[FS_PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", dir, token);
        return unlink(path) == 0;
}

static bool fs_gate_pass(struct fs *fs, const char *token)
{
        char path[FS_PATH_MAX];

        if (!fs->gate_dir)
                return true;
        snprintf(path, sizeof(path), "%s/%s", fs->gate_dir, token);
        if (fs_gate_take(fs->gate_dir, token)) {
                ca_host_log(fs->host, LOG_DEBUG, "test gate: %s taken", token);
                fs->gate_logged = false;
                return true;
        }
        if (!fs->gate_logged)
                ca_host_log(fs->host, LOG_DEBUG, "test gate: waiting for %s", path);
        fs->gate_logged = true;
        return false;
}

static bool fs_gate_wait(struct fs *fs, struct event *ev, const char *token)
{
        static const struct timeval poll_10ms = { 0, 10000 };

        if (fs_gate_pass(fs, token))
                return true;
        event_add(ev, &poll_10ms);
        return false;
}

/* On the worker: the "dispose" token taken; false when the worker stops first. */
static bool fs_gate_wait_worker(struct aw *w, const char *dir)
{
        while (dir && !fs_gate_take(dir, "dispose"))
                if (!aw_sleep(w, 10000))
                        return false;
        return true;
}

/* On the worker: no "hold" in the gate (any more); false when the worker stops first. */
static bool fs_hold(struct aw *w, const char *dir)
{
        char hold[FS_PATH_MAX], held[FS_PATH_MAX];
        int fd;

        if (!dir)
                return true;
        snprintf(hold, sizeof(hold), "%s/hold", dir);
        if (access(hold, F_OK) < 0)
                return true;
        snprintf(held, sizeof(held), "%s/held", dir);
        fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        while (access(hold, F_OK) == 0)
                if (!aw_sleep(w, 10000))
                        return false;
        return true;
}
#endif

/* ---- uses seen by fanotify or inotify ---- */

/* A use of @f: aged afresh, or, when it was chosen meanwhile, put back instead of deleted. */
static void fs_file_used(struct fs *fs, struct fs_file *f)
{
        switch (f->state) {
        case FS_LIVE:
                ca_touch(fs->cache, &f->node);
                break;
        case FS_VICTIM:
                f->state = FS_VICTIM_USED;
                break;
        case FS_SENT:
                /* The worker skips it if it has not come to it yet. */
                atomic_store_explicit(&fs->job->work[f->slot].used, true, memory_order_relaxed);
                f->state = FS_SENT_USED;
                break;
        default:
                break;
        }
}

static void fs_on_access(void *userdata, const unsigned char *key, size_t key_len, const char *name)
{
        struct fs *fs = userdata;
        struct fs_dir *d = watch_find(fs, key, key_len);
        struct fs_file *f = d ? file_find(fs, d, name) : NULL;

        if (!f)
                return;
        fs->accesses++;
        fs_file_used(fs, f);
}

/* The last scan whose every look at a file is over by now. */
static uint32_t fs_scans_done(const struct fs *fs)
{
        return fs->scanning ? fs->gen - 1 : fs->gen;
}

/*
 * Whether @f's atime would have shown any read made after scan @from finished: its proof
 * dates from that scan or an earlier one (and its atime has not moved since, or the proof
 * would have been taken again).
 */
static bool file_proven(const struct fs_file *f, uint32_t from)
{
        return f->proof_gen != 0 && (int32_t)(f->proof_gen - from) <= 0;
}

/* What a read does to the atime of a file on @fd's mount (read-only: nothing, as noatime). */
static int fs_atime_mode_of(int fd, enum fs_atime_mode *ret)
{
        struct statvfs sv;

        if (fstatvfs(fd, &sv) < 0)
                return -errno;
        *ret = sv.f_flag & (ST_NOATIME | ST_RDONLY) ? FS_ATIME_NONE :
               sv.f_flag & ST_RELATIME ? FS_ATIME_RELATIME : FS_ATIME_STRICT;
        return 0;
}

/*
 * Whether a read of the file seen as @s, from now on, moves its atime (what the kernel's
 * relatime_need_update() and atime_needs_update() decide), with margins: a day and a minute
 * for relatime's day, and an atime at least a second old, since a read in the same tick of the
 * kernel's coarse clock leaves it as it is.
 */
static bool fs_atime_proves(const struct fs *fs, const struct fs_seen *s)
{
        int64_t age_nsec = fs->scan_now_nsec - s->atime_nsec;

        if (fs->atime_mode == FS_ATIME_NONE || age_nsec < FS_ATIME_SETTLE_NSEC)
                return false;
        return fs->atime_mode == FS_ATIME_STRICT || s->atime_nsec <= s->mtime_nsec ||
               s->atime_nsec <= s->ctime_nsec || age_nsec >= FS_RELATIME_NSEC;
}

/*
 * Events were lost after scan fs->sync_gen finished and before now (files-watch.h): until a
 * scan that starts after now settles it (fs_scan_file()), a file whose atime was not proof
 * before that window is not proven idle. The reclaim op keeps those, and the victims chosen so
 * far among them are put back now; proven ones go on (the worker checks their atime after now).
 */
static void fs_on_lost(void *userdata)
{
        struct fs *fs = userdata;
        uint32_t from = fs->sync_gen;
        struct fs_file *f;

        fs->events_lost++;
        if (!fs->lost_pending || (int32_t)(from - fs->lost_from) < 0)
                fs->lost_from = from;
        fs->lost_pending = true;
        /* The marker is out of the queue: the next one stands for later drops only. */
        fs->sync_gen = fs_scans_done(fs);
        TAILQ_FOREACH(f, &fs->victims, link)
                if (!file_proven(f, from))
                        fs_file_used(fs, f);
        TAILQ_FOREACH(f, &fs->sent, link)
                if (!file_proven(f, from))
                        fs_file_used(fs, f);
        ca_host_log(fs->host, fs->events_lost == 1 ? LOG_WARNING : LOG_DEBUG,
                    "The kernel's event queue overflowed: uses were lost, so a file counts as "
                    "used unless its atime proves otherwise at the next scan (%" PRIu64
                    " times so far)", fs->events_lost);
}

/* The queue was empty: no marker is in it, the next one stands for later drops only. */
static void fs_on_drained(void *userdata)
{
        struct fs *fs = userdata;

        fs->sync_gen = fs_scans_done(fs);
}

/* Our own mark came out of the queue: a marker from now on stands for drops after it. */
static void fs_on_synced(void *userdata)
{
        struct fs *fs = userdata;

        if ((int32_t)(fs->sync_mark_gen - fs->sync_gen) > 0)
                fs->sync_gen = fs->sync_mark_gen;
}

static const struct fw_callbacks fs_watch_callbacks = {
        .access = fs_on_access,
        .lost = fs_on_lost,
        .drained = fs_on_drained,
        .synced = fs_on_synced,
};

static void fs_watch_drain(struct fs *fs)
{
        int r;

        if (!fs->watch)
                return;
        r = fw_read(fs->watch, FS_EVENTS_PER_WAKEUP, &fs_watch_callbacks, fs);
        if (r < 0)
                ca_host_log(fs->host, LOG_WARNING, "Failed to read events: %s", strerror(-r));
}

static void fs_watch_cb(evutil_socket_t fd, short what, void *userdata)
{
        fs_watch_drain(userdata);
}

/*
 * Events are read at the lowest priority, the scan's: libevent runs only the highest priority
 * that has active events in a pass, and under a flood the descriptor is always readable, so at
 * any higher one the reads would starve the scan (lost events are accounted for instead).
 */
static int fs_watch_event(struct fs *fs)
{
        fs->watch_ev = event_new(fs->base, fw_fd(fs->watch), EV_READ | EV_PERSIST, fs_watch_cb,
                                 fs);
        if (!fs->watch_ev ||
            event_priority_set(fs->watch_ev, event_base_get_npriorities(fs->base) - 1) < 0 ||
            event_add(fs->watch_ev, NULL) < 0)
                return -ENOMEM;
        return 0;
}

/* ---- the scan ---- */

static void fs_level_pop(struct fs *fs)
{
        struct fs_level *lvl = &fs->stack[--fs->depth];

        close(lvl->fd);
        free(lvl->buf);
}

static bool fs_level_push(struct fs *fs, int fd, struct fs_dir *dir)
{
        char *buf = malloc(FS_DIRBUF);

        if (!buf)
                return false;
        fs->stack[fs->depth++] = (struct fs_level){ .fd = fd, .dir = dir, .buf = buf };
        return true;
}

/* The next entry of @lvl, NULL at its end (errno 0) or on an error (errno set). */
static const struct dirent64 *fs_level_next(struct fs_level *lvl)
{
        const struct dirent64 *de;

        if (lvl->pos >= lvl->len) {
                ssize_t n = getdents64(lvl->fd, lvl->buf, FS_DIRBUF);

                if (n <= 0) {
                        errno = n < 0 ? errno : 0;
                        return NULL;
                }
                lvl->len = (size_t)n;
                lvl->pos = 0;
        }
        de = (const struct dirent64 *)(const void *)(lvl->buf + lvl->pos);
        lvl->pos += de->d_reclen;
        return de;
}

static void fs_scan_close_levels(struct fs *fs)
{
        while (fs->depth > 0)
                fs_level_pop(fs);
}

static bool fs_over_limit(struct fs *fs)
{
        if (fs->n_files + fs->n_dirs < fs->cfg.max_files)
                return false;
        fs->count.untracked++;
        return true;
}

static void fs_scan_enter(struct fs *fs, struct fs_level *lvl, const char *name)
{
        char rel[FS_PATH_MAX];
        struct fs_dir *d;
        uint64_t ino;
        int fd, r;

        if (fs->depth > FS_DEPTH_MAX) {
                fs->count.too_deep++;
                ca_host_log(fs->host, LOG_DEBUG, "Not entering %s: deeper than %d levels",
                            fs_relpath(lvl->dir, name, rel, sizeof(rel)), FS_DEPTH_MAX);
                return;
        }
        d = dir_find(fs, lvl->dir, name);
        r = fs_dir_open(&fs->root, lvl->fd, name, d ? d->ino : 0, &fd, &ino);
        if (r == -ESTALE) {
                /* Another directory under that name: what the old one held is swept. */
                dir_forget(fs, d);
                d = NULL;
                r = fs_dir_open(&fs->root, lvl->fd, name, 0, &fd, &ino);
        }
        if (r < 0) {
                if (r == -EXDEV) {
                        fs->count.mounts++;
                        ca_host_log(fs->host, LOG_DEBUG,
                                    "Not entering %s: another filesystem or mount",
                                    fs_relpath(lvl->dir, name, rel, sizeof(rel)));
                } else if (r != -ENOENT && r != -ENOTDIR) {
                        fs->count.errors++;
                        ca_host_log(fs->host, LOG_DEBUG, "Cannot open %s: %s, skipped",
                                    fs_relpath(lvl->dir, name, rel, sizeof(rel)), strerror(-r));
                }
                return;
        }
        if (!d) {
                if (fs_over_limit(fs) || !(d = dir_new(fs, lvl->dir, name, ino))) {
                        close(fd);
                        return;
                }
        }
        d->gen = fs->gen;
        TAILQ_REMOVE(&fs->dirs_seen, d, link);
        TAILQ_INSERT_TAIL(&fs->dirs_seen, d, link);
        /* fanotify: a key costs no kernel object; inotify decides once it is read. */
        if (!fs_inotify(fs))
                dir_watch(fs, d, fd);
        if (!fs_level_push(fs, fd, d)) {
                fs->count.errors++;
                close(fd);
        }
}

static void fs_scan_file(struct fs *fs, struct fs_dir *dir, const char *name,
                         const struct fs_seen *seen)
{
        struct fs_file *f;

        /* Too small to matter: not tracked, so never deleted (a tracked one is swept). */
        if (seen->size < fs->cfg.min_size)
                return;
        fs->count.files++;
        f = file_find(fs, dir, name);
        if (f) {
                if (f->state != FS_LIVE)
                        return; /* the deletion's own check decides */
                if (!fs_seen_same(&f->seen, seen)) {
                        /* Replaced or written: another object, aged from now. */
                        file_age_afresh(fs, f, seen);
                        f->proof_gen = fs_atime_proves(fs, seen) ? fs->gen : 0;
                        fs->count.changed++;
                } else if (seen->atime_nsec != f->seen.atime_nsec) {
                        f->seen.atime_nsec = seen->atime_nsec;
                        f->proof_gen = fs_atime_proves(fs, seen) ? fs->gen : 0;
                        ca_touch(fs->cache, &f->node);
                        fs->count.atime_uses++;
                        fs->atime_uses++;
                } else {
                        /* Lost events before this scan: settled by atime, or a use. */
                        if (fs->resolving) {
                                if (file_proven(f, fs->resolve_from)) {
                                        fs->count.lost_proven++;
                                        fs->lost_proven++;
                                } else {
                                        ca_touch(fs->cache, &f->node);
                                        fs->count.lost_assumed++;
                                        fs->lost_uses_assumed++;
                                }
                        }
                        if (!f->proof_gen && fs_atime_proves(fs, seen))
                                f->proof_gen = fs->gen;
                }
                f->gen = fs->gen;
                TAILQ_REMOVE(&fs->files_seen, f, link);
                TAILQ_INSERT_TAIL(&fs->files_seen, f, link);
                return;
        }
        if (fs_over_limit(fs))
                return;
        if (file_new(fs, dir, name, seen, fs_atime_proves(fs, seen) ? fs->gen : 0))
                fs->count.new_files++;
}

static void fs_scan_entry(struct fs *fs, struct fs_level *lvl, const struct dirent64 *de)
{
        char rel[FS_PATH_MAX];
        struct fs_seen seen;
        int k;

        if (de->d_type == DT_LNK) {
                fs->count.symlinks++; /* never an object, never followed */
                return;
        }
        if (de->d_type == DT_DIR && !fs->cfg.recursive)
                return;
        k = fs_entry_stat(&fs->root, lvl->fd, de->d_name, &seen);
        if (k < 0) {
                if (k != -ENOENT) {
                        fs->count.errors++;
                        ca_host_log(fs->host, LOG_DEBUG, "Cannot stat %s: %s, skipped",
                                    fs_relpath(lvl->dir, de->d_name, rel, sizeof(rel)),
                                    strerror(-k));
                }
                return;
        }
        switch (k) {
        case FS_FILE:
                fs_scan_file(fs, lvl->dir, de->d_name, &seen);
                break;
        case FS_DIR:
                if (fs->cfg.recursive)
                        fs_scan_enter(fs, lvl, de->d_name);
                break;
        case FS_MOUNT:
                fs->count.mounts++;
                ca_host_log(fs->host, LOG_DEBUG, "Not entering %s: another filesystem or mount",
                            fs_relpath(lvl->dir, de->d_name, rel, sizeof(rel)));
                break;
        default:
                break;
        }
}

/*
 * @lvl's directory was read to its end (@whole: without an error): a watch while it holds
 * files (inotify), none while it holds none; with remove_empty_dirs, whether it was found
 * empty and unchanged by max_age scans in a row, and then queued to be removed.
 */
static void fs_level_done(struct fs *fs, struct fs_level *lvl, bool whole)
{
        struct fs_dir *d = lvl->dir;
        struct ca_params params;
        struct statx sx;
        int64_t mtime, ctime;

        if (fs_inotify(fs)) {
                if (d->nfiles > 0)
                        dir_watch(fs, d, lvl->fd);
                else
                        dir_unwatch(fs, d);
        }
        if (!fs->cfg.remove_empty_dirs || !d->parent || d->victim)
                return;
        if (!whole || lvl->entries > 0 ||
            statx(lvl->fd, "", AT_EMPTY_PATH, STATX_MTIME | STATX_CTIME, &sx) < 0) {
                d->empty_since = 0;
                return;
        }
        mtime = (int64_t)sx.stx_mtime.tv_sec * FS_SEC_NSEC + sx.stx_mtime.tv_nsec;
        ctime = (int64_t)sx.stx_ctime.tv_sec * FS_SEC_NSEC + sx.stx_ctime.tv_nsec;
        if (!d->empty_since || mtime != d->empty_mtime_nsec || ctime != d->empty_ctime_nsec) {
                /* Empty from this scan on, or changed meanwhile (filled and emptied): anew. */
                d->empty_since = fs->gen;
                d->empty_mtime_nsec = mtime;
                d->empty_ctime_nsec = ctime;
                return;
        }
        ca_cache_get_params(fs->cache, &params);
        if (fs->gen - d->empty_since < params.max_age)
                return;
        d->victim = true;
        d->refs++; /* the removal's own: it outlives a scan that forgets it */
        TAILQ_INSERT_TAIL(&fs->dir_victims, d, vlink);
}

/* The next entry of the directory being read, or the end of it. */
static void fs_scan_walk_one(struct fs *fs)
{
        struct fs_level *lvl = &fs->stack[fs->depth - 1];
        const struct dirent64 *de = fs_level_next(lvl);

        if (!de) {
                bool whole = errno == 0;

                if (!whole) {
                        char rel[FS_PATH_MAX];

                        fs->count.errors++;
                        ca_host_log(fs->host, LOG_DEBUG, "Cannot read %s: %s",
                                    fs_relpath(lvl->dir->parent, lvl->dir->name, rel, sizeof(rel)),
                                    strerror(errno));
                }
                fs_level_done(fs, lvl, whole);
                fs_level_pop(fs);
                return;
        }
        if (fs_name_ok(de->d_name)) {
                lvl->entries++;
                fs_scan_entry(fs, lvl, de);
        }
}

/* One unit of the scan's work; false once the scan is complete. */
static bool fs_scan_one(struct fs *fs)
{
        struct fs_file *f;
        struct fs_dir *d;

        switch (fs->phase) {
        case FS_SCAN_GATE:
                return true;
        case FS_SCAN_WALK:
                if (fs->depth == 0) {
                        fs->phase = FS_SCAN_SWEEP_FILES;
                        return true;
                }
                fs_scan_walk_one(fs);
                /* Growing tables are emptied into their successors as the scan goes. */
                fs_table_rehash(&fs->files, 1);
                return true;
        case FS_SCAN_SWEEP_FILES:
                /* Live files not seen by this scan are at the head of files_seen: gone. */
                f = TAILQ_FIRST(&fs->files_seen);
                if (f && f->gen != fs->gen) {
                        file_forget(fs, f);
                        return true;
                }
                fs->phase = FS_SCAN_SWEEP_DIRS;
                return true;
        case FS_SCAN_SWEEP_DIRS:
                d = TAILQ_FIRST(&fs->dirs_seen);
                if (d && d->gen != fs->gen) {
                        dir_forget(fs, d);
                        return true;
                }
                return false;
        }
        return false;
}

static void fs_scan_finish(struct fs *fs)
{
        struct fs_scan_counts *c = &fs->count;

        /* Uses queued in the kernel so far belong to the period that ends now. */
        fs_watch_drain(fs);
        fs->scanning = false;
        fs->resolving = false;
        /*
         * Under a flood the queue may never be seen empty: a mark of our own, just after the
         * read above made room for it, bounds the next overflow's window to after this scan.
         */
        if (fs->watch && fw_sync(fs->watch) == 0)
                fs->sync_mark_gen = fs->gen;
        fs->scans++;
        fs->last_scan_usec = ca_now_usec() - fs->scan_started_usec;
        fs->last = *c;
        fs->errors += c->errors;
        if (c->untracked && !fs->untracked_logged)
                ca_host_log(fs->host, LOG_WARNING,
                            "max_files (%" PRIu64 ") reached: %" PRIu64 " files and directories "
                            "not tracked, and never deleted", fs->cfg.max_files, c->untracked);
        fs->untracked_logged = c->untracked > 0;
        ca_host_log(fs->host, LOG_DEBUG,
                    "scan %" PRIu64 " done in %.1f ms: %" PRIu64 " files (%" PRIu64
                    " new, %" PRIu64 " changed, %" PRIu64 " used by atime), %" PRIu64
                    " directories, %" PRIu64 " mounts and %" PRIu64 " symlinks skipped, %" PRIu64
                    " errors; longest step %" PRIu64 " us (%" PRIu64 " us of CPU); %" PRIu64
                    " watches, %" PRIu64 " directories with files unwatched; lost events "
                    "settled: %" PRIu64 " files proven idle by atime, %" PRIu64 " counted as used",
                    fs->scans, (double)fs->last_scan_usec / 1000, c->files, c->new_files, c->changed,
                    c->atime_uses, fs->n_dirs, c->mounts, c->symlinks, c->errors,
                    fs->longest_step_usec, fs->longest_step_cpu_usec, fs->n_watches,
                    fs->unwatched_dirs, c->lost_proven, c->lost_assumed);
        ca_host_rotate_ready(fs->host, fs->cache, 0);
}

static void fs_scan_step(evutil_socket_t fd, short what, void *userdata)
{
        struct fs *fs = userdata;
        struct fs_step step;

#ifdef CA_FILES_TEST_HOOKS
        if (fs->phase == FS_SCAN_GATE && !fs_gate_wait(fs, fs->scan_ev, "scan"))
                return;
#endif
        step = fs_step_begin(fs);
        fs->scan_now_nsec = realtime_nsec();
        if (fs->phase == FS_SCAN_GATE) {
                /* Markers read so far are settled by this scan, whose first look is now. */
                fs->resolving = fs->lost_pending;
                fs->resolve_from = fs->lost_from;
                fs->lost_pending = false;
                fs->phase = FS_SCAN_WALK;
        }
        for (unsigned n = 1;; n++) {
                if (!fs_scan_one(fs)) {
                        fs_step_end(fs, &step, NULL);
                        fs_scan_finish(fs);
                        return;
                }
                if (n % FS_CLOCK_EVERY == 0 && ca_now_usec() >= step.deadline_usec)
                        break;
        }
        fs_step_end(fs, &step, NULL);
        /* Yield: the base polls (bus, signals, other caches) before this runs again. */
        event_active(fs->scan_ev, 0, 0);
}

/* ---- the root ---- */

/*
 * Forget everything tracked (the path now names another directory, or the instance goes) but
 * the files in the worker's batch: they are the worker's until its answers are taken back.
 */
static void fs_forget_all(struct fs *fs)
{
        struct fs_file *f;
        struct fs_dir *d;

        while ((f = TAILQ_FIRST(&fs->victims)))
                file_forget(fs, f);
        while ((f = TAILQ_FIRST(&fs->files_seen)))
                file_forget(fs, f);
        while ((d = TAILQ_FIRST(&fs->dir_victims))) {
                TAILQ_REMOVE(&fs->dir_victims, d, vlink);
                dir_victim_release(fs, d);
        }
        while ((d = TAILQ_FIRST(&fs->dirs_seen)))
                dir_forget(fs, d);
}

/*
 * Resolve path again (no symlink, from "/"): the directory it names now is the tree. When it
 * is another directory than the one open, what was tracked is forgotten and the watches start
 * over on the new one.
 */
static int fs_check_root(struct fs *fs)
{
        struct fs_root now;
        char why[512];
        int r;

        r = fs_root_open(fs->cfg.path, &now, why, sizeof(why));
        if (r < 0) {
                /* Once per change of state: the host also logs the failed refresh. */
                ca_host_log(fs->host, fs->root_failing ? LOG_DEBUG : LOG_WARNING, "%s", why);
                fs->root_failing = true;
                return r;
        }
        if (fs->root_failing)
                ca_host_log(fs->host, LOG_NOTICE, "%s is there again", fs->cfg.path);
        fs->root_failing = false;
        if (fs_root_same(&now, &fs->root)) {
                fs_root_close(&now);
                return 0;
        }
        ca_host_log(fs->host, LOG_NOTICE, "%s is another directory now: starting over on it",
                    fs->cfg.path);
        fs_forget_all(fs);
        dir_unwatch(fs, fs->top);
        fs_root_close(&fs->root);
        fs->root = now;
        fs->top->ino = now.ino;
        if (fs_atime_mode_of(fs->root.fd, &fs->atime_mode) < 0)
                fs->atime_mode = FS_ATIME_NONE; /* no atime proof: lost events keep files */
        if (fs->watch) {
                enum fw_mode mode = fw_mode(fs->watch);
                struct fw *w = NULL;

                event_del(fs->watch_ev);
                event_free(fs->watch_ev);
                fs->watch_ev = NULL;
                fs->watch = fw_free(fs->watch);
                if (fw_open(mode, &fs->root, &w, why, sizeof(why)) == 0) {
                        fs->watch = w;
                        r = fs_watch_event(fs);
                        if (r < 0)
                                return r;
                } else {
                        ca_host_log(fs->host, LOG_WARNING, "Cannot watch %s any more (%s): "
                                    "uses are seen by atime only", fs->cfg.path, why);
                }
        }
        return 0;
}

static int fs_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct fs *fs = userdata;
        int fd, r;

        if (fs->scanning)
                return 0; /* the host starts one refresh at a time: cannot happen */
        r = fs_check_root(fs);
        if (r < 0)
                return r; /* the host logs it, and rotates what is tracked */
        fd = openat(fs->root.fd, ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (!fs_level_push(fs, fd, fs->top)) {
                close(fd);
                return -ENOMEM;
        }
        if (!fs_inotify(fs))
                dir_watch(fs, fs->top, fd);
        fs->scanning = true;
        fs->gen++;
        fs->count = (struct fs_scan_counts){ 0 };
        fs->unwatched_dirs = 0;
        fs->scan_started_usec = ca_now_usec();
        fs->phase = FS_SCAN_GATE;
        event_active(fs->scan_ev, 0, 0);
        return CA_ROTATE_LATER;
}

/* ---- deletion ---- */

static bool fs_has_victims(const struct fs *fs)
{
        return !TAILQ_EMPTY(&fs->victims) || !TAILQ_EMPTY(&fs->dir_victims);
}

/* Put a victim back: live again, aged from now (it changed, was used, or is a dry run's). */
static void fs_put_back(struct fs *fs, struct fs_file *f)
{
        TAILQ_REMOVE(file_list(fs, f), f, link);
        f->state = FS_LIVE;
        f->gen = fs->gen;
        TAILQ_INSERT_TAIL(&fs->files_seen, f, link);
        file_age_afresh(fs, f, NULL);
}

static enum ca_status fs_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct fs *fs = userdata;
        struct fs_file *f = (struct fs_file *)node;

        /*
         * Events lost since the last scan began, and this file's atime no proof for their
         * window: not proven idle, so counted as used (as the next scan would), a touch
         * (CA_KEEP alone is no use: it would be asked again at once, and kept again).
         */
        if (fs->lost_pending && !file_proven(f, fs->lost_from)) {
                ca_touch(cache, node);
                fs->lost_uses_assumed++;
                return CA_KEEP;
        }
        TAILQ_REMOVE(&fs->files_seen, f, link);
        f->state = FS_VICTIM;
        TAILQ_INSERT_TAIL(&fs->victims, f, link);
        return CA_RECLAIMED; /* checked and deleted by the steps after the slice */
}

static size_t fs_size(const struct ca_cache *cache, const struct ca_node *node, void *userdata)
{
        return (size_t)((const struct fs_file *)node)->seen.size;
}

static const struct ca_cache_ops fs_ops = {
        .reclaim = fs_reclaim,
        .size = fs_size,
};

/* -- on the worker -- */

static void fs_job_chain_close(struct fs_job *job)
{
        if (job->chain_fd >= 0 && job->chain_fd != job->root.fd)
                close(job->chain_fd);
        job->chain_fd = -1;
        job->chain_dir = NULL;
}

/*
 * A handle on @d, opened from the root one component at a time, each the very directory the
 * scan saw (fs_dir_open() with its inode). Kept for the next file of the same directory in the
 * batch. Returns the descriptor (the root's for the top), or a negative errno. The loop has
 * made sure that no directory of the chain was forgotten by a scan (fs_chain_forgotten()).
 */
static int fs_job_chain_open(struct fs_job *job, const struct fs_dir *d)
{
        const struct fs_dir *chain[FS_DEPTH_MAX];
        size_t n = 0;
        int fd, r;

        if (d == job->chain_dir)
                return job->chain_fd;
        fs_job_chain_close(job);
        for (const struct fs_dir *p = d; p->parent; p = p->parent) {
                if (n == FS_DEPTH_MAX)
                        return -ESTALE;
                chain[n++] = p;
        }
        fd = job->root.fd;
        while (n-- > 0) {
                uint64_t ino;
                int next;

                r = fs_dir_open(&job->root, fd, chain[n]->name, chain[n]->ino, &next, &ino);
                if (fd != job->root.fd)
                        close(fd);
                if (r < 0)
                        return r;
                fd = next;
        }
        job->chain_dir = d;
        job->chain_fd = fd;
        return fd;
}

/* Whether path still names the root the batch was given (a rescan adopts a new one). */
static bool fs_job_root_ok(struct fs_job *job)
{
        struct fs_root now;
        int r;

        r = fs_root_open(job->path, &now, job->why, sizeof(job->why));
        if (r < 0) {
                job->root_error = r;
                return false;
        }
        job->root_moved = !fs_root_same(&now, &job->root);
        fs_root_close(&now);
        return !job->root_moved;
}

/* Check and unlink one file of the batch; false when the worker stops meanwhile. */
static bool fs_work_one(struct fs *fs, struct aw *aw, struct fs_job *job, struct fs_work *w)
{
        const struct fs_file *f = w->f;
        const struct fs_dir *d = w->d;
        uint64_t t0 = ca_now_usec(), dt;
        int fd;

#ifdef CA_FILES_TEST_HOOKS
        if (!fs_hold(aw, fs->gate_dir))
                return false; /* a check that takes as long as the test holds it */
#endif
        if (atomic_load_explicit(&w->used, memory_order_relaxed)) {
                w->answer = FS_USED;
                return true;
        }
        fd = fs_job_chain_open(job, f ? f->parent : d->parent);
        if (fd < 0) {
                w->answer = FS_NO_DIR;
                w->r = fd;
        } else if (f) {
                w->answer = FS_CHECKED;
                w->r = fs_unlink_if_same(&job->root, fd, f->name, &f->seen, job->dry_run);
        } else {
                w->answer = FS_CHECKED;
                w->r = fs_rmdir_if_same(&job->root, fd, d->name, d->ino, d->empty_mtime_nsec,
                                        d->empty_ctime_nsec, job->dry_run);
        }
        dt = ca_now_usec() - t0;
        if (dt > job->longest_usec)
                job->longest_usec = dt;
        return true;
}

/* The batch, on the worker: every system call of the deletions is here. */
static void fs_worker_run(struct aw *w, void *userdata)
{
        struct fs *fs = userdata;
        struct fs_job *job = fs->job;

#ifdef CA_FILES_TEST_HOOKS
        if (job->first && !fs_gate_wait_worker(w, fs->gate_dir))
                return;
#endif
        if (!fs_job_root_ok(job))
                return;
        /* Stopping (the instance goes): the rest is left as it is, nothing lost. */
        for (uint32_t i = 0; i < job->n && !aw_stopping(w); i++)
                if (!fs_work_one(fs, w, job, &job->work[i]))
                        break;
        fs_job_chain_close(job);
}

/* -- on the loop -- */

/* Whether a directory of @d's chain was forgotten by a scan since (replaced or gone). */
static bool fs_chain_forgotten(const struct fs_dir *d)
{
        size_t n = 0;

        for (; d->parent; d = d->parent)
                if (d->removed || ++n > FS_DEPTH_MAX)
                        return true;
        return false;
}

/* Not deleted, and aged afresh: it changed, was used, or the root moved. */
static void fs_keep(struct fs *fs, struct fs_file *f)
{
        fs->kept++;
        fs->run_kept++;
        fs_put_back(fs, f);
}

/*
 * @f's directory is gone, or is not the one the scan saw (replaced, a symlink or a mount now):
 * nothing in it is touched, and the next scan finds what is there.
 */
static void fs_dir_failed(struct fs *fs, struct fs_file *f, int r)
{
        char rel[FS_PATH_MAX];

        if (r == -ENOENT) {
                fs->gone++;
        } else if (r == -ESTALE || r == -ENOTDIR || r == -EXDEV) {
                fs->kept++;
                fs->run_kept++;
                ca_host_log(fs->host, LOG_DEBUG, "%s: its directory changed since it was seen, "
                            "kept", fs_relpath(f->parent, f->name, rel, sizeof(rel)));
        } else {
                fs->errors++;
                fs->run_errors++;
                ca_host_log(fs->host, r == fs->last_errno_logged ? LOG_DEBUG : LOG_WARNING,
                            "Cannot open the directory of %s: %s, kept",
                            fs_relpath(f->parent, f->name, rel, sizeof(rel)), strerror(-r));
                fs->last_errno_logged = r;
        }
        file_forget(fs, f);
}

/* fs_unlink_if_same()'s answer @r for @f, counted and said. */
static void fs_file_checked(struct fs *fs, struct fs_file *f, int r)
{
        char rel[FS_PATH_MAX];

        switch (r) {
        case 0:
                fs->run_deleted++;
                fs->run_bytes += f->seen.size;
                if (fs->cfg.dry_run) {
                        fs->would_delete++;
                        ca_host_log(fs->host, LOG_INFO, "dry run: would delete %s (%" PRIu64
                                    " bytes)", fs_relpath(f->parent, f->name, rel, sizeof(rel)),
                                    f->seen.size);
                        fs_put_back(fs, f);
                        return;
                }
                fs->deleted++;
                fs->deleted_bytes += f->seen.size;
                ca_host_log(fs->host, LOG_DEBUG, "deleted %s",
                            fs_relpath(f->parent, f->name, rel, sizeof(rel)));
                file_forget(fs, f);
                return;
        case -ENOENT:
                fs->gone++;
                file_forget(fs, f);
                return;
        case -ESTALE:
        case -EBUSY:
                /* Replaced, written or read since it was seen: not what was idle. */
                ca_host_log(fs->host, LOG_DEBUG, "%s %s since it was seen, kept",
                            fs_relpath(f->parent, f->name, rel, sizeof(rel)),
                            r == -EBUSY ? "was read" : "changed");
                fs_keep(fs, f);
                return;
        default:
                fs->errors++;
                fs->run_errors++;
                ca_host_log(fs->host, r == fs->last_errno_logged ? LOG_DEBUG : LOG_WARNING,
                            "Cannot delete %s: %s, kept",
                            fs_relpath(f->parent, f->name, rel, sizeof(rel)), strerror(-r));
                fs->last_errno_logged = r;
                fs_put_back(fs, f);
                return;
        }
}

/* The worker's answer @w for an empty directory, counted and said; its reference dropped. */
static void fs_dir_answer(struct fs *fs, const struct fs_work *w)
{
        struct fs_dir *d = w->d;
        char rel[FS_PATH_MAX];
        int r = w->answer == FS_CHECKED ? w->r : w->answer == FS_NO_DIR ? -ESTALE : -EAGAIN;

        fs_relpath(d->parent, d->name, rel, sizeof(rel));
        if (r == 0 && fs->cfg.dry_run) {
                ca_host_log(fs->host, LOG_INFO, "dry run: would remove the empty directory %s/",
                            rel);
        } else if (r == 0 || r == -ENOENT) {
                if (r == 0) {
                        fs->removed_dirs++;
                        fs->run_dirs++;
                        ca_host_log(fs->host, LOG_DEBUG, "removed the empty directory %s/", rel);
                }
                dir_forget(fs, d);
        } else if (r == -EAGAIN) {
                /* Not tried (the root moved, or the daemon stops): looked at again. */
        } else if (r == -ESTALE || r == -ENOTEMPTY || r == -EEXIST) {
                /* Changed, filled or replaced: idle again from the next scan that finds it so. */
                ca_host_log(fs->host, LOG_DEBUG, "%s/ changed since it was seen empty, kept",
                            rel);
        } else {
                fs->errors++;
                fs->run_errors++;
                ca_host_log(fs->host, r == fs->last_errno_logged ? LOG_DEBUG : LOG_WARNING,
                            "Cannot remove the empty directory %s/: %s, kept", rel, strerror(-r));
                fs->last_errno_logged = r;
        }
        d->empty_since = 0;
        dir_victim_release(fs, d);
}

static void fs_take_answer(struct fs *fs, const struct fs_work *w)
{
        if (w->d) {
                fs_dir_answer(fs, w);
                return;
        }
        switch (w->answer) {
        case FS_NO_DIR:
                fs_dir_failed(fs, w->f, w->r);
                return;
        case FS_CHECKED:
                /* Used after its check (FS_SENT_USED): gone all the same, as before a thread. */
                fs_file_checked(fs, w->f, w->r);
                return;
        default:
                fs_keep(fs, w->f);
                return;
        }
}

/* What the worker found of the root, said once (per change of state, or per run). */
static void fs_job_report_root(struct fs *fs, const struct fs_job *job)
{
        if (job->root_error < 0) {
                ca_host_log(fs->host, fs->root_failing ? LOG_DEBUG : LOG_WARNING,
                            "%s: nothing deleted", job->why);
                fs->root_failing = true;
        } else if (job->root_moved && !fs->run_root_logged) {
                ca_host_log(fs->host, LOG_NOTICE, "%s is another directory now: nothing deleted "
                            "until the next scan", fs->cfg.path);
                fs->run_root_logged = true;
        }
}

/*
 * Hand the next victims to the worker, at most FS_BATCH_FILES: those used since they were
 * chosen, or whose directory a scan forgot, are settled here without a system call.
 */
static void fs_dispose_submit(struct fs *fs, const struct fs_step *step)
{
        struct fs_job *job = fs->job;
        struct fs_file *f;
        struct fs_dir *d;
        uint32_t n = 0;
        int fd, r;

        while (n < FS_BATCH_FILES && (f = TAILQ_FIRST(&fs->victims))) {
                if (f->state == FS_VICTIM_USED) {
                        fs_keep(fs, f);
                } else if (fs_chain_forgotten(f->parent)) {
                        fs_dir_failed(fs, f, -ESTALE);
                } else {
                        struct fs_work *w = &job->work[n];

                        TAILQ_REMOVE(&fs->victims, f, link);
                        TAILQ_INSERT_TAIL(&fs->sent, f, link);
                        f->state = FS_SENT;
                        f->slot = n++;
                        w->f = f;
                        w->d = NULL;
                        atomic_init(&w->used, false);
                        w->r = 0;
                        w->answer = FS_NOT_TRIED;
                }
                if (ca_now_usec() >= step->deadline_usec)
                        break;
        }
        /* Empty directories after the files (a file's deletion may be what emptied one). */
        while (n < FS_BATCH_FILES && TAILQ_EMPTY(&fs->victims) &&
               (d = TAILQ_FIRST(&fs->dir_victims)) && ca_now_usec() < step->deadline_usec) {
                struct fs_work *w = &job->work[n];

                TAILQ_REMOVE(&fs->dir_victims, d, vlink);
                if (fs_chain_forgotten(d)) {
                        dir_victim_release(fs, d);
                        continue;
                }
                n++;
                w->f = NULL;
                w->d = d;
                atomic_init(&w->used, false);
                w->r = 0;
                w->answer = FS_NOT_TRIED;
        }
        if (n == 0)
                return;
        job->n = n;
        job->applied = 0;
        job->root_error = 0;
        job->root_moved = false;
        job->longest_usec = 0;
        fd = fcntl(fs->root.fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
                /* Out of descriptors: each file of the batch is said, and found again by a scan. */
                r = -errno;
                for (uint32_t i = 0; i < n; i++) {
                        job->work[i].answer = FS_NO_DIR;
                        job->work[i].r = r;
                }
                return;
        }
        job->root = fs->root;
        job->root.fd = fd;
        job->path = fs->cfg.path;
        job->dry_run = fs->cfg.dry_run;
        job->first = fs->run_batches++ == 0;
        job->chain_fd = -1;
        job->chain_dir = NULL;
        aw_submit(fs->worker);
}

/* Take the worker's answers back, as many as the step's time allows. */
static void fs_dispose_apply(struct fs *fs, const struct fs_step *step)
{
        struct fs_job *job = fs->job;

        if (job->applied == 0)
                fs_job_report_root(fs, job);
        while (job->applied < job->n) {
                fs_take_answer(fs, &job->work[job->applied++]);
                if (ca_now_usec() >= step->deadline_usec)
                        break;
        }
        if (job->applied < job->n)
                return;
        if (job->longest_usec > fs->longest_delete_usec)
                fs->longest_delete_usec = job->longest_usec;
        if (job->longest_usec > fs->run_longest_delete_usec)
                fs->run_longest_delete_usec = job->longest_usec;
        fs_root_close(&job->root);
        job->n = job->applied = 0;
}

static void fs_dispose_finish(struct fs *fs)
{
        fs->disposing = false;
        /* Before the summary, which is what a reader of the log waits for. */
        if (fs->run_dirs)
                ca_host_log(fs->host, LOG_INFO, "removed %" PRIu64 " empty directories",
                            fs->run_dirs);
        ca_host_log(fs->host, LOG_INFO,
                    "%s %" PRIu64 " files (%" PRIu64 " bytes); %" PRIu64 " kept (changed, "
                    "replaced or used since they were seen); %" PRIu64 " errors; in %" PRIu64
                    " ms, longest step %" PRIu64 " us (%" PRIu64 " us of CPU) on the loop, "
                    "longest check and unlink %" PRIu64 " us on the worker",
                    fs->cfg.dry_run ? "dry run: would delete" : "deleted", fs->run_deleted,
                    fs->run_bytes, fs->run_kept, fs->run_errors,
                    (ca_now_usec() - fs->run_started_usec) / 1000, fs->run_longest.wall_usec,
                    fs->run_longest.cpu_usec, fs->run_longest_delete_usec);
        fs->run_deleted = fs->run_bytes = fs->run_kept = fs->run_errors = fs->run_dirs = 0;
        fs->run_longest = (struct fs_longest){ 0 };
        fs->run_longest_delete_usec = 0;
        fs->last_errno_logged = 0;
}

/*
 * One step of a run of deletions on the loop: take the answers of the batch that came back, or
 * hand over the next one. The run ends when no victim is left and every answer is taken.
 */
static void fs_dispose_step(evutil_socket_t fd, short what, void *userdata)
{
        struct fs *fs = userdata;
        struct fs_step step;

        if (aw_busy(fs->worker))
                return; /* fs_worker_done() comes back here */
        if (!fs->disposing && fs->job->n == 0 && !fs_has_victims(fs))
                return;
        step = fs_step_begin(fs);
        if (!fs->disposing) {
                fs->disposing = true;
                fs->run_started_usec = step.started_usec;
                fs->run_batches = 0;
                fs->run_root_logged = false;
        }
        if (fs->job->n > 0)
                fs_dispose_apply(fs, &step);
        else
                fs_dispose_submit(fs, &step);
        fs_step_end(fs, &step, &fs->run_longest);
        if (aw_busy(fs->worker))
                return;
        if (fs->job->n == 0 && !fs_has_victims(fs)) {
                fs_dispose_finish(fs);
                return;
        }
        event_active(fs->dispose_ev, 0, 0);
}

/* The worker is done with the batch: its answers are taken back in steps, below all else. */
static void fs_worker_done(void *userdata)
{
        struct fs *fs = userdata;

        event_active(fs->dispose_ev, 0, 0);
}

static const struct aw_ops fs_worker_ops = {
        .run = fs_worker_run,
        .done = fs_worker_done,
};

static void fs_after_age(struct ca_cache *cache, void *userdata)
{
        struct fs *fs = userdata;

        /* A batch under way: its answers start the next one. */
        if (fs_has_victims(fs) && !aw_busy(fs->worker))
                event_active(fs->dispose_ev, 0, 0);
}

/* ---- statistics ---- */

#define EMIT(nm, kd, un, hp, val)                                                           \
        emit(eu, &(const struct ca_adapter_stat){ .name = nm, .kind = kd, .unit = un,      \
                                                  .help = hp },                            \
             val)

static void fs_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct fs *fs = userdata;

        EMIT("files", CA_STAT_GAUGE, "objects", "files tracked", fs->n_files);
        EMIT("directories", CA_STAT_GAUGE, "objects", "directories entered", fs->n_dirs);
        EMIT("scans", CA_STAT_COUNTER, NULL, "scans of the tree completed", fs->scans);
        EMIT("last_scan_usec", CA_STAT_GAUGE, "usec", "the last scan, first step to last",
             fs->last_scan_usec);
        EMIT("longest_step_usec", CA_STAT_GAUGE, "usec",
             "longest step of a scan or of deletions on the loop", fs->longest_step_usec);
        EMIT("longest_step_cpu_usec", CA_STAT_GAUGE, "usec",
             "longest CPU time of one step: its own work, without preemption",
             fs->longest_step_cpu_usec);
        EMIT("longest_delete_usec", CA_STAT_GAUGE, "usec",
             "longest check and unlink of one file, on the deletion thread",
             fs->longest_delete_usec);
        EMIT("accesses", CA_STAT_COUNTER, NULL,
             "uses of tracked files seen by fanotify or inotify", fs->accesses);
        EMIT("atime_uses", CA_STAT_COUNTER, NULL, "uses of tracked files seen by a moved atime",
             fs->atime_uses);
        EMIT("deleted", CA_STAT_COUNTER, "objects", "files deleted", fs->deleted);
        EMIT("deleted_bytes", CA_STAT_COUNTER, "bytes", "sizes of the files deleted",
             fs->deleted_bytes);
        EMIT("would_delete", CA_STAT_COUNTER, "objects", "files a dry run would have deleted",
             fs->would_delete);
        EMIT("kept", CA_STAT_COUNTER, "objects",
             "files chosen but changed, replaced or used before the deletion: kept", fs->kept);
        EMIT("gone", CA_STAT_COUNTER, "objects", "files chosen but deleted by someone else",
             fs->gone);
        EMIT("errors", CA_STAT_COUNTER, NULL, "files that could not be read or deleted",
             fs->errors);
        EMIT("untracked", CA_STAT_GAUGE, "objects",
             "files and directories over max_files at the last scan: never deleted",
             fs->last.untracked);
        EMIT("mounts_skipped", CA_STAT_GAUGE, "objects",
             "mount points (other filesystems, bind mounts) not entered at the last scan",
             fs->last.mounts);
        EMIT("unwatched_directories", CA_STAT_GAUGE, "objects",
             "directories holding files without a watch (max_watches, or the kernel's limit): "
             "atime only", fs->unwatched_dirs);
        EMIT("watches", CA_STAT_GAUGE, "objects",
             "inotify watches held (one per directory holding files, within max_watches)",
             fs->n_watches);
        EMIT("events_lost", CA_STAT_COUNTER, NULL, "overflows of the kernel's event queue",
             fs->events_lost);
        EMIT("lost_uses_assumed", CA_STAT_COUNTER, NULL,
             "files counted as used because an overflow may have hidden a use and atime "
             "could not tell", fs->lost_uses_assumed);
        EMIT("lost_proven_idle", CA_STAT_COUNTER, NULL,
             "files an overflow could have hidden a use of, proven unread by their atime",
             fs->lost_proven);
        EMIT("removed_directories", CA_STAT_COUNTER, "objects",
             "empty directories removed (remove_empty_dirs)", fs->removed_dirs);
}

static const struct ca_cache_hooks fs_hooks = {
        .before_rotate = fs_before_rotate,
        .after_age = fs_after_age,
        .stats = fs_stats,
};

/* ---- keys ---- */

/* "0", "4096", "64K", "10M", "1G", "2T" (powers of 1024; "KiB" and "k" as well). */
static int fs_check_size(const char *value, void *target, char *msg, size_t msg_len)
{
        static const struct {
                const char *suffix;
                unsigned shift;
        } units[] = {
                { "", 0 },   { "B", 0 },   { "K", 10 }, { "k", 10 }, { "KiB", 10 },
                { "M", 20 }, { "MiB", 20 }, { "G", 30 }, { "GiB", 30 }, { "T", 40 },
                { "TiB", 40 },
        };
        const char *p = value;
        uint64_t v = 0;

        if (*p < '0' || *p > '9')
                goto out_invalid;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX >> 41))
                        goto out_range;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(p, units[i].suffix) == 0) {
                        if (target)
                                ((struct fs_config *)target)->min_size = v << units[i].shift;
                        return 0;
                }
out_invalid:
        snprintf(msg, msg_len, "invalid size \"%s\" (expected bytes, or e.g. 64K, 10M, 1G)", value);
        return -EINVAL;
out_range:
        snprintf(msg, msg_len, "size \"%s\" is too large", value);
        return -ERANGE;
}

static const struct ca_key_choice fs_watch_choices[] = {
        { "auto", FS_WATCH_AUTO },
        { "fanotify", FS_WATCH_FANOTIFY },
        { "inotify", FS_WATCH_INOTIFY },
        { "atime", FS_WATCH_ATIME },
        { NULL, 0 },
};

static const struct ca_key_choice fs_watches_choices[] = {
        { "auto", FS_WATCHES_AUTO },
        { NULL, 0 },
};

static const struct ca_key_spec fs_keys[] = {
        { .name = "path", .type = CA_KEY_PATH, CA_KEY_FIELD(struct fs_config, path),
          .help = "the directory whose files are aged (absolute, no symlink in it; required)" },
        { .name = "recursive", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct fs_config, recursive),
          .def = "yes", .help = "age the files of its subdirectories too" },
        { .name = "min_size", .type = CA_KEY_STRING,
          CA_KEY_FIELD(struct fs_config, min_size_text), .def = "0", .check = fs_check_size,
          .help = "smaller files are not tracked, so never deleted (bytes, or 64K, 10M, 1G)" },
        { .name = "dry_run", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct fs_config, dry_run),
          .def = "no", .help = "delete nothing: log what would be deleted" },
        { .name = "watch", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct fs_config, watch),
          .def = "auto", .choices = fs_watch_choices, .what = "watch",
          .help = "how uses are seen: auto (fanotify, else inotify, else atime), fanotify, "
                  "inotify or atime" },
        { .name = "max_files", .type = CA_KEY_UINT, CA_KEY_FIELD(struct fs_config, max_files),
          .def = FS_MAX_FILES_DEFAULT, .min = 1, .max = FS_MAX_FILES_MAX,
          .help = "files and directories tracked at most; beyond, not tracked (never deleted)" },
        { .name = "max_watches", .type = CA_KEY_CHOICE,
          CA_KEY_FIELD(struct fs_config, max_watches), .def = "auto",
          .choices = fs_watches_choices, .flags = CA_KEY_NUMBER, .min = 1,
          .max = FS_MAX_WATCHES_MAX, .what = "number of watches",
          .help = "inotify watches at most (auto: the daemon's files caches together take a "
                  "quarter of fs.inotify.max_user_watches, and no cache more)" },
        { .name = "remove_empty_dirs", .type = CA_KEY_BOOL,
          CA_KEY_FIELD(struct fs_config, remove_empty_dirs), .def = "no",
          .help = "remove a directory found empty and unchanged for max_age rotations" },
        CA_KEY_END
};

/* ---- create and destroy ---- */

static void fs_destroy(void *instance)
{
        struct fs *fs = instance;

        if (!fs)
                return;
        ca_host_unregister_cache(fs->host, fs->cache);
        /* A batch under way stops at its next file; a system call in progress is waited for. */
        fs->worker = aw_free(fs->worker);
        fs_scan_close_levels(fs);
        if (fs->job)
                fs_root_close(&fs->job->root);
        if (fs->top) {
                struct fs_file *f;

                while ((f = TAILQ_FIRST(&fs->sent)))
                        file_forget(fs, f);
                for (uint32_t i = fs->job ? fs->job->applied : 0; fs->job && i < fs->job->n; i++)
                        if (fs->job->work[i].d)
                                dir_victim_release(fs, fs->job->work[i].d);
                fs_forget_all(fs);
                dir_unwatch(fs, fs->top);
                free(fs->top);
        }
        if (fs->scan_ev)
                event_free(fs->scan_ev);
        if (fs->dispose_ev)
                event_free(fs->dispose_ev);
        if (fs->watch_ev)
                event_free(fs->watch_ev);
        fw_free(fs->watch);
        ca_cache_free(fs->cache);
        fs_table_done(&fs->files);
        fs_table_done(&fs->dirs);
        fs_table_done(&fs->watches);
        fs_root_close(&fs->root);
        free(fs->job);
        free(fs);
}

/*
 * How uses are seen. fanotify's mark is on the whole filesystem and reports every open and read
 * on it: `auto` takes it only where the tree is the whole filesystem (nothing else pays for
 * it), else inotify, whose watches are the tree's own directories; `fanotify` takes it
 * anywhere, said in the log. atime alone (asked for, or when neither works) only where the
 * mount updates atime at all.
 */
static int fs_watch_start(struct fs *fs)
{
        int want = fs->cfg.watch;
        char why[512] = "", why_fan[512] = "", how[512];
        struct statvfs sv;
        bool whole;
        int r;

        r = fs_atime_mode_of(fs->root.fd, &fs->atime_mode);
        if (r < 0)
                return r;
        whole = fw_whole_filesystem(&fs->root);
        if (want == FS_WATCH_FANOTIFY || (want == FS_WATCH_AUTO && whole)) {
                r = fw_open(FW_FANOTIFY, &fs->root, &fs->watch, why_fan, sizeof(why_fan));
                if (r < 0 && want == FS_WATCH_FANOTIFY) {
                        ca_host_log(fs->host, LOG_ERR, "watch = fanotify: %s", why_fan);
                        return r;
                }
        }
        if (!fs->watch && (want == FS_WATCH_AUTO || want == FS_WATCH_INOTIFY)) {
                r = fw_open(FW_INOTIFY, &fs->root, &fs->watch, why, sizeof(why));
                if (r < 0 && want == FS_WATCH_INOTIFY) {
                        ca_host_log(fs->host, LOG_ERR, "watch = inotify: %s", why);
                        return r;
                }
        }
        if (fs->watch) {
                if (want == FS_WATCH_AUTO && why_fan[0])
                        ca_host_log(fs->host, LOG_INFO, "no fanotify: %s", why_fan);
                r = fs_watch_event(fs);
                if (r < 0)
                        return r;
                if (fs_inotify(fs))
                        snprintf(how, sizeof(how), "inotify and atime (a watch per directory "
                                 "holding files, at most %" PRIu64 "%s)%s", fs_watch_limit(fs),
                                 fs->cfg.max_watches == FS_WATCHES_AUTO ||
                                 (uint64_t)fs->cfg.max_watches > fs_watch_pool.limit ?
                                 ": the files caches' quarter of fs.inotify.max_user_watches" :
                                 ", max_watches",
                                 want == FS_WATCH_AUTO && !whole ?
                                 "; not fanotify: its mark would report every open on the "
                                 "whole filesystem, which holds more than this tree" : "");
                else if (whole)
                        snprintf(how, sizeof(how), "fanotify and atime (a mark on the "
                                 "filesystem, which holds only this tree)");
                else
                        snprintf(how, sizeof(how), "fanotify and atime (a mark on the "
                                 "filesystem: every open and read on it, also outside this "
                                 "tree, is reported to the daemon and slows the process that "
                                 "makes it)");
                ca_host_log(fs->host, LOG_INFO, "aging %s%s: uses seen by %s", fs->cfg.path,
                            fs->cfg.dry_run ? " (dry run)" : "", how);
                return 0;
        }

        /* atime only: what the mount lets it show (a read-only one: nothing to delete anyway). */
        if (fstatvfs(fs->root.fd, &sv) < 0)
                return -errno;
        if (sv.f_flag & ST_NOATIME) {
                ca_host_log(fs->host, LOG_ERR, "%s is on a noatime mount and %s: no use of a "
                            "file could be seen, so none is proven idle; refusing",
                            fs->cfg.path, want == FS_WATCH_ATIME ? "watch = atime" :
                            "neither fanotify nor inotify works here");
                return -EOPNOTSUPP;
        }
        ca_host_log(fs->host, LOG_INFO, "aging %s%s: uses seen by atime only%s", fs->cfg.path,
                    fs->cfg.dry_run ? " (dry run)" : "",
                    fs->atime_mode == FS_ATIME_RELATIME ?
                            " on a relatime mount: a file read again within 24 h of its "
                            "last recorded access looks unused" : "");
        return 0;
}

static int fs_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        struct fs_config cfg = { 0 };
        struct fs_root root;
        struct fs *fs;
        char why[512];
        int r;

        r = ca_section_parse(host, s, fs_keys, &cfg);
        if (r < 0)
                return r;
        if (!cfg.path) {
                ca_host_key_error(host, s, "path", "required: the directory to age "
                                  "(e.g. path = /var/cache/thumbnails)");
                return -EINVAL;
        }
        r = fs_root_open(cfg.path, &root, why, sizeof(why));
        if (r < 0) {
                ca_host_key_error(host, s, "path", "%s", why);
                return r;
        }
        if (ca_host_check_only(host)) {
                fs_root_close(&root);
                *ret_instance = NULL;
                return 0;
        }

        fs = calloc(1, sizeof(*fs));
        if (!fs) {
                fs_root_close(&root);
                return -ENOMEM;
        }
        fs->host = host;
        fs->cfg = cfg;
        fs->root = root;
        fs->base = ca_host_event_base(host);
        TAILQ_INIT(&fs->files_seen);
        TAILQ_INIT(&fs->victims);
        TAILQ_INIT(&fs->sent);
        TAILQ_INIT(&fs->dirs_seen);
        TAILQ_INIT(&fs->dir_victims);
        if (getrandom(fs->sipkey, sizeof(fs->sipkey), 0) != sizeof(fs->sipkey)) {
                r = -errno;
                goto out_destroy;
        }
        r = fs_table_init(&fs->files);
        if (r >= 0)
                r = fs_table_init(&fs->dirs);
        if (r >= 0)
                r = fs_table_init(&fs->watches);
        if (r < 0)
                goto out_destroy;
        fs->top = dir_new(fs, NULL, "", root.ino);
        if (!fs->top) {
                r = -ENOMEM;
                goto out_destroy;
        }
        fs->scan_ev = event_new(fs->base, -1, 0, fs_scan_step, fs);
        fs->dispose_ev = event_new(fs->base, -1, 0, fs_dispose_step, fs);
        if (!fs->scan_ev || !fs->dispose_ev) {
                r = -ENOMEM;
                goto out_destroy;
        }
        /* Below everything else the host runs, as its own aging slices are. */
        event_priority_set(fs->scan_ev, event_base_get_npriorities(fs->base) - 1);
        event_priority_set(fs->dispose_ev, event_base_get_npriorities(fs->base) - 1);
#ifdef CA_FILES_TEST_HOOKS
        fs->gate_dir = getenv("CA_FILES_TEST_GATE");
#endif
        fs->job = calloc(1, sizeof(*fs->job));
        if (!fs->job) {
                r = -ENOMEM;
                goto out_destroy;
        }
        fs->job->root.fd = -1;
        fs->job->chain_fd = -1;
        r = aw_new(fs->base, &fs_worker_ops, fs, &fs->worker);
        if (r < 0)
                goto out_destroy;
        fs_watch_pool_update();
        r = fs_watch_start(fs);
        if (r < 0)
                goto out_destroy;
        r = ca_cache_new(&fs_ops, fs, NULL, &fs->cache);
        if (r < 0)
                goto out_destroy;
        r = ca_host_register_cache(host, s, fs->cache, &fs_hooks, fs);
        if (r < 0)
                goto out_destroy;
        *ret_instance = fs;
        return 0;

out_destroy:
        fs_destroy(fs);
        return r;
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "files",
        .description = "a cache directory on disk: files unused for their age are deleted",
        .create = fs_create,
        .destroy = fs_destroy,
};
