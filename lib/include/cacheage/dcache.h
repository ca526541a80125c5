/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_DCACHE_H
#define CACHEAGE_DCACHE_H

/*
 * A userspace model of the Linux dentry cache (fs/dcache.c), precise enough to replay real
 * workloads (cacheage/replay.h applies strace events to it) and to put the 2022 negative-dentry
 * proposals side by side on one trace.
 *
 * Model
 *   A dentry has a name, a parent, a reference count and a state: positive (names an
 *   object), negative (caches a failed lookup) or, between ca_dcache_alloc() and
 *   ca_dcache_add(), in lookup (unhashed, neither). Hashed dentries are found by
 *   (parent, name) in one hash table. Every directory keeps the list of its children
 *   (d_subdirs/d_child: new ones at the head, as d_alloc does) and each child holds one
 *   reference on its parent. The root "/" is pinned by the model and never killed.
 *
 *   The last ca_dcache_put() of a hashed dentry keeps it cached, unused (dput/retain_dentry);
 *   of an unhashed one kills it, and killing drops the reference it held on its parent.
 *
 * Counts, with the kernel's meaning (/proc/sys/fs/dentry-state; kernel 4.19 and later)
 *   nr_dentry    every dentry allocated, the root included;
 *   nr_unused    dentries on the LRU (DCACHE_LRU_LIST): put on it at their final dput and
 *                left there lazily when referenced again; only killing, or the reclaim pass
 *                finding one in use (the shrinker's dentry_lru_isolate), takes one off;
 *   nr_negative  negative dentries on the LRU (d_lru_add, __d_clear_type_and_inode and
 *                __d_instantiate keep it). A negative dentry that is held, or that was never
 *                put, is not counted, as in the kernel.
 *   So when nobody holds anything, nr_unused is the dentries with no reference and
 *   nr_negative all negative dentries. The refcount-zero figures are reported besides
 *   (nr_unreferenced, nr_negative_all).
 *
 * Policies (each a switch in struct ca_dcache_params, settable at creation and at run time)
 *   tail_negative  the 2022 sweep (seeds 004-008): the final put of a negative dentry flags it
 *                  tail-negative and moves it to the tail of its parent's list; it is recycled
 *                  to the head before it turns positive; walks that want positive children
 *                  stop at the first tail-negative one (CA_WALK_SKIP_SIBLINGS);
 *   ratio_cursor   Brennan's negative-dentry ratio (seed 003), faithfully: every alloc and
 *                  every delete scans `ratio + 1` siblings from a per-directory cursor and
 *                  kills one unused negative dentry when it saw no positive one; its flaws are
 *                  kept (order dependence, small directories, no preference for old dentries);
 *   ratio_counted  ours: exact per-directory counts, and whenever a dentry turns negative (a
 *                  lookup miss is added, or a delete), the oldest unused negatives of that
 *                  directory (least recently put) are killed until it has at most
 *                  max(floor, ratio * positives) negative children. O(1) amortised;
 *   aging          every dentry but the root is a node of a ca_cache owned by the model; a
 *                  lookup hit touches it; the reclaim op kills an unused dentry.
 *
 * Locking: none. A model is used by one thread at a time (the owner's lock); the dentries it
 * hands out belong to it. Errors are negative errno values; the library never logs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheage/age.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CA_DCACHE_NAME_MAX 255        /* bytes in one component (NAME_MAX) */
#define CA_DCACHE_INLINE_NAME 32      /* bytes of a name kept inside the dentry */
#define CA_DCACHE_RATIO_MAX 20        /* negatives per positive (Brennan's sysctl bound) */
#define CA_DCACHE_RATIO_DEFAULT 5     /* negatives per positive (Brennan's default) */
#define CA_DCACHE_FLOOR_DEFAULT 16    /* negatives any directory may keep (ratio_counted) */
#define CA_DCACHE_FLOOR_MAX (1u << 30) /* negatives */

struct ca_dcache;
struct ca_dentry;

struct ca_dcache_params {
        bool tail_negative; /* sweep negatives to the tail at their final put (seeds 005-008) */
        bool ratio_cursor;  /* Brennan's cursor scan at alloc and delete (seed 003) */
        bool ratio_counted; /* exact counts, oldest unused negative first (ours) */
        bool aging;         /* every dentry aged by the model's ca_cache */
        uint32_t ratio;     /* negatives per positive, 0..CA_DCACHE_RATIO_MAX; Brennan's 0
                               disables his scan (it then looks at one dentry only) */
        uint32_t floor;     /* ratio_counted: negatives a directory may always keep,
                               0..CA_DCACHE_FLOOR_MAX */
        struct ca_params age; /* aging parameters, in rotations */
};

#define CA_DCACHE_PARAMS_DEFAULT                                                           \
        ((struct ca_dcache_params){ .ratio = CA_DCACHE_RATIO_DEFAULT,                      \
                                    .floor = CA_DCACHE_FLOOR_DEFAULT,                      \
                                    .age = CA_PARAMS_DEFAULT })

struct ca_dcache_stats {
        /* /proc/sys/fs/dentry-state, kernel meaning (see the top of this file) */
        uint64_t nr_dentry;
        uint64_t nr_unused;
        uint64_t nr_negative;
        /* the model's own figures */
        uint64_t nr_positive;        /* positive dentries (hashed or not) */
        uint64_t nr_negative_all;    /* hashed negative dentries, in use or not */
        uint64_t nr_unreferenced;    /* dentries with no reference */
        uint64_t nr_tail_negative;   /* dentries flagged tail-negative */
        uint64_t nr_hashed;          /* dentries in the hash table */
        uint64_t hash_buckets;
        uint64_t dentry_bytes;       /* sizeof(struct ca_dentry), for a short name */
        uint64_t external_name_bytes; /* bytes of names kept outside the dentries */
        uint64_t holds;              /* references held by callers (ca_dcache_get etc.) */
        /* what the policies did, since creation */
        uint64_t swept;              /* tail_negative: sweeps to the tail */
        uint64_t recycled;           /* tail_negative: recycles to the head */
        uint64_t cursor_scans;       /* ratio_cursor: incremental scans */
        uint64_t cursor_scanned;     /* ratio_cursor: list slots looked at */
        uint64_t cursor_killed;      /* ratio_cursor: negatives killed */
        uint64_t counted_killed;     /* ratio_counted: negatives killed */
        uint64_t aging_reclaimed;    /* aging: dentries killed by the reclaim op */
        uint64_t aging_busy;         /* aging: CA_BUSY answers (in use) */
        uint64_t aging_kept;         /* aging: CA_KEEP answers (has children) */
        /* trace replay (cacheage/replay.h) */
        uint64_t replayed;           /* events applied */
        uint64_t replay_ignored;     /* events with nothing to apply */
        uint64_t replay_fixups;      /* cached state the trace contradicted, corrected */
};

/* One directory's children, counted exactly. */
struct ca_dcache_dir_stats {
        uint64_t children;          /* everything on its list */
        uint64_t positive;          /* positive children */
        uint64_t negative;          /* hashed negative children */
        uint64_t unused_negative;   /* of which with no reference */
        uint64_t in_lookup;         /* allocated, not yet added (or dropped) negatives */
        uint64_t tail_negative;     /* children flagged tail-negative */
};

/*
 * ca_dcache_new() - a model holding only the root "/" (a positive directory).
 * @params: NULL for CA_DCACHE_PARAMS_DEFAULT (every policy off: a stock kernel).
 * Returns 0 and stores the model in *ret, -EINVAL on bad params, -ENOMEM.
 */
int ca_dcache_new(const struct ca_dcache_params *params, struct ca_dcache **ret);

/* ca_dcache_free() - free the model and every dentry (held ones too); accepts NULL. */
struct ca_dcache *ca_dcache_free(struct ca_dcache *d);

/* ca_dcache_validate_params() - 0 when @params would be accepted, else -EINVAL. */
int ca_dcache_validate_params(const struct ca_dcache_params *params);

/*
 * ca_dcache_set_params() - switch policies and change parameters at run time.
 * Turning tail_negative on flags nothing by itself: negatives are swept at their next final
 * put (so a walk stops early only past swept ones); off leaves flags in place (recycled
 * before turning positive, as always) and walks no longer stop at them. ratio_cursor keeps
 * its cursors across switches. Turning ratio_counted on queues every unused negative dentry
 * (O(dentries), in list order per directory, the oldest first as far as the list tells);
 * off drops the queues. Turning aging on inserts every dentry into the cache as new; off
 * removes them all. Age parameters are passed to ca_cache_set_params().
 * Returns 0, -EINVAL (nothing changed), -ENOMEM (nothing changed).
 */
int ca_dcache_set_params(struct ca_dcache *d, const struct ca_dcache_params *params);
void ca_dcache_get_params(const struct ca_dcache *d, struct ca_dcache_params *ret);

/* ca_dcache_root() - the root dentry, pinned by the model (no reference is taken). */
struct ca_dentry *ca_dcache_root(struct ca_dcache *d);

/* --- dentry operations, shaped like the kernel's ---------------------------------------------- */

/*
 * ca_dcache_lookup() - d_lookup(): the hashed child @name (@len bytes) of @parent, with a
 * reference taken (release with ca_dcache_put()), touched for aging; NULL when not cached.
 */
struct ca_dentry *ca_dcache_lookup(struct ca_dcache *d, struct ca_dentry *parent,
                                   const char *name, size_t len);

/*
 * ca_dcache_alloc() - d_alloc(): a new dentry @name under @parent, in lookup (unhashed, not
 * positive), with one reference for the caller, at the head of @parent's list; takes a
 * reference on @parent. Runs ratio_cursor's scan of @parent (Brennan hooks d_alloc).
 * Returns 0, -EINVAL (empty name, '/' or NUL in it, "." or ".."), -ENAMETOOLONG, -ENOENT
 * (@parent negative), -ENOTDIR (@parent not known as a directory), -EEXIST (a hashed child
 * of that name exists), -ENOMEM.
 */
int ca_dcache_alloc(struct ca_dcache *d, struct ca_dentry *parent, const char *name,
                    size_t len, struct ca_dentry **ret);

/*
 * ca_dcache_add() - d_add(): hash @dentry (from ca_dcache_alloc, or dropped), positive (a
 * directory when @dir) or negative. A negative one makes ratio_counted look at its parent.
 * Returns 0, -EINVAL (already hashed), -EEXIST (another dentry of that name is hashed).
 */
int ca_dcache_add(struct ca_dcache *d, struct ca_dentry *dentry, bool positive, bool dir);

/*
 * ca_dcache_instantiate() - d_instantiate(): make the negative (or in-lookup) @dentry
 * positive, recycling it to the head of its parent's list first if it is tail-negative.
 * The caller holds a reference. Returns 0, -EINVAL (already positive).
 */
int ca_dcache_instantiate(struct ca_dcache *d, struct ca_dentry *dentry, bool dir);

/*
 * ca_dcache_delete() - d_delete() after an unlink or rmdir: when the caller's reference is
 * the only one, @dentry turns negative in place (and the ratio policies look at its
 * parent); otherwise it is unhashed and dies at its last put. Returns 0, -EINVAL (negative).
 */
int ca_dcache_delete(struct ca_dcache *d, struct ca_dentry *dentry);

/* ca_dcache_drop() - d_drop(): unhash @dentry; it dies at its last put. */
void ca_dcache_drop(struct ca_dcache *d, struct ca_dentry *dentry);

/* ca_dcache_get() - dget(): take a reference. Returns @dentry. */
struct ca_dentry *ca_dcache_get(struct ca_dcache *d, struct ca_dentry *dentry);

/*
 * ca_dcache_put() - dput(): drop a reference; accepts NULL. The last one keeps a hashed
 * dentry cached (on the LRU; swept to the tail when negative under tail_negative) and kills
 * an unhashed one, which drops its reference on its parent, and so on up.
 */
void ca_dcache_put(struct ca_dcache *d, struct ca_dentry *dentry);

/*
 * ca_dcache_move() - d_move() of a successful rename: @dentry (positive) takes the name and
 * parent of @target, which is unhashed and dies at its last put. The caller holds a
 * reference on both. @dentry goes to the head of its new parent's list.
 * Returns 0, -EINVAL (@dentry negative or the root, @target the root or @dentry an ancestor
 * of @target), -EEXIST (@target is unhashed and another dentry has its name now), -ENOMEM
 * (the name did not fit and no memory for it; nothing changed).
 */
int ca_dcache_move(struct ca_dcache *d, struct ca_dentry *dentry, struct ca_dentry *target);

/*
 * ca_dcache_ratio_scan() - one dentry_incremental_scan() of @dir, the step Brennan's
 * ratio_cursor runs at every alloc and delete in it (seed 003), whether or not the switch is
 * on: ratio + 1 slots from the directory's cursor, one unused negative child killed when no
 * positive was among them. For tests and the replay lab, which need the scan on a list that
 * no alloc or delete perturbs. Returns 1 when it killed a dentry, else 0.
 */
int ca_dcache_ratio_scan(struct ca_dcache *d, struct ca_dentry *dir);

/*
 * ca_dcache_shrink_parent() - shrink_dcache_parent() (rmdir, rename over a directory): kill
 * every unused dentry below @dentry, deepest first. The caller holds a reference on @dentry
 * (without one nothing is done). Returns how many were killed.
 */
size_t ca_dcache_shrink_parent(struct ca_dcache *d, struct ca_dentry *dentry);

/* --- path walk -------------------------------------------------------------------------------- */

enum {
        CA_DCACHE_LOOKUP_NOCREATE = 1 << 0, /* a name not cached is -ENOENT, nothing created */
        CA_DCACHE_LOOKUP_NEGATIVE = 1 << 1, /* hand back a negative final dentry (return 0) */
        CA_DCACHE_LOOKUP_NOTOUCH = 1 << 2,  /* inspect: no aging touch */
};

/*
 * ca_dcache_path_lookup() - walk the absolute @path from the root, component by component,
 * with the cache as the filesystem: a name not cached does not exist, so a negative dentry
 * is created for it (d_alloc + d_add) and the walk stops there, as it does at a cached
 * negative one. Each step takes the next component's reference and drops the previous
 * one's (dget/dput); every component found is touched. "." is skipped and ".." goes up.
 * Returns 0 and the final positive dentry (referenced) in *ret; -ENOENT at a negative
 * component (with CA_DCACHE_LOOKUP_NEGATIVE and the final component, 0 and that dentry);
 * -ENOTDIR through a positive dentry not known as a directory; -EINVAL (relative path),
 * -ENAMETOOLONG, -ENOMEM.
 */
int ca_dcache_path_lookup(struct ca_dcache *d, const char *path, unsigned flags,
                          struct ca_dentry **ret);

/* --- walks ------------------------------------------------------------------------------------ */

/* What a walk callback wants next (the kernel's enum d_walk_ret). */
enum ca_walk_ret {
        CA_WALK_CONTINUE,      /* go on, into this dentry's children too */
        CA_WALK_QUIT,          /* stop the whole walk */
        CA_WALK_SKIP,          /* skip this dentry's children */
        CA_WALK_SKIP_SIBLINGS, /* skip this dentry and the rest of its siblings */
};

typedef enum ca_walk_ret (*ca_dcache_walk_fn)(struct ca_dentry *dentry, void *userdata);

/*
 * ca_dcache_walk() - d_walk(): call @fn on @start, then on every dentry below it, a parent
 * before its children, children in list order. @fn must not change the tree.
 * Returns the number of callbacks made.
 */
size_t ca_dcache_walk(struct ca_dcache *d, struct ca_dentry *start, ca_dcache_walk_fn fn,
                      void *userdata);

/*
 * ca_dcache_watch_dir() - __fsnotify_update_child_dentry_flags() (inotify_add_watch): mark
 * (@watched) or unmark every positive child of @dir as watched by its parent, and remember
 * the state for children instantiated or moved in later. Under tail_negative the walk stops
 * at the first tail-negative child, as seed 006 made it. Returns the children visited.
 */
size_t ca_dcache_watch_dir(struct ca_dcache *d, struct ca_dentry *dir, bool watched);

/* --- dentries --------------------------------------------------------------------------------- */

/* ca_dentry_name() - the name (not NUL-terminated), its length in *ret_len. */
const char *ca_dentry_name(const struct ca_dentry *dentry, size_t *ret_len);
/* ca_dentry_parent() - the parent (the root is its own parent). */
struct ca_dentry *ca_dentry_parent(const struct ca_dentry *dentry);
bool ca_dentry_positive(const struct ca_dentry *dentry);
bool ca_dentry_is_dir(const struct ca_dentry *dentry);
bool ca_dentry_hashed(const struct ca_dentry *dentry);
bool ca_dentry_tail_negative(const struct ca_dentry *dentry);
bool ca_dentry_watched(const struct ca_dentry *dentry);  /* marked by its parent's watch */
bool ca_dentry_on_lru(const struct ca_dentry *dentry);   /* counted in nr_unused */
uint32_t ca_dentry_refcount(const struct ca_dentry *dentry);

/* --- statistics and checks -------------------------------------------------------------------- */

void ca_dcache_stats(const struct ca_dcache *d, struct ca_dcache_stats *ret);

/* ca_dcache_dir_stats() - @dir's children, counted by the model (O(1)). */
void ca_dcache_dir_stats(const struct ca_dcache *d, const struct ca_dentry *dir,
                         struct ca_dcache_dir_stats *ret);

/*
 * ca_dcache_check() - the whole model against itself, O(dentries + buckets): tree links and
 * parents; each refcount equals its children plus references held outside (which add up to
 * the holds taken through this API); tail-negative children are negative and stand after
 * every other child; the hash table holds exactly the hashed dentries, each findable; every
 * count equals a recount; ratio_counted queues, Brennan cursors, aging links and watch marks
 * are consistent. Returns 0, or -EUCLEAN with a static description in *ret_reason (if not
 * NULL).
 */
int ca_dcache_check(const struct ca_dcache *d, const char **ret_reason);

/* --- aging ------------------------------------------------------------------------------------ */

/*
 * The reclaim op: a dentry held by anyone is CA_BUSY (and taken off the LRU, as the
 * shrinker's isolate does); one whose only references are its children's is CA_KEEP (its
 * children go first; not a use, so it is asked again at every rotation while a child lives
 * and goes at the first one after its last child, idle past its own age, as the kernel puts
 * a parent back on the LRU without DCACHE_REFERENCED when its last child dies); an unused
 * one is killed.
 */

/* ca_dcache_rotate() - ca_cache_rotate() of the model's cache; 0 when aging is off. */
size_t ca_dcache_rotate(struct ca_dcache *d);

/*
 * ca_dcache_age() - one aging slice (see ca_cache_age()) and the disposal of its victims.
 * Returns the nodes still pending.
 */
size_t ca_dcache_age(struct ca_dcache *d, size_t budget, uint64_t deadline_usec);

/*
 * ca_dcache_cache() - the model's cache (NULL without aging). A host may drive it with
 * ca_cache_rotate() and ca_cache_age() itself, then calls ca_dcache_dispose() after each
 * slice: the reclaim op kills dentries at once but leaves their memory (the framework still
 * writes to a node after the op) and parents that died with them for later.
 */
struct ca_cache *ca_dcache_cache(const struct ca_dcache *d);

/*
 * ca_dcache_dispose() - free what aging slices left behind and kill the unhashed parents
 * whose last child they reclaimed. Every other model function does it first, so it only
 * matters for memory between slices and for ca_dcache_check().
 */
void ca_dcache_dispose(struct ca_dcache *d);

#ifdef __cplusplus
}
#endif

#endif
