/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_AGE_H
#define CACHEAGE_AGE_H

/*
 * Generic periodic cache aging (Dave Chinner's proposal in the 2022 negative-dentry
 * discussion): every cache is rotated on a timer, in idle time, and objects that were
 * used in one rotation period and never again are reclaimed long before memory
 * pressure would force it.
 *
 * Model
 *   A cache has a clock, `epoch`, advanced by one at every rotation. Each cached object
 *   embeds a struct ca_node that records the epoch of its last touch (`stamp`) and in how
 *   many distinct rotation periods it was touched (`hits`, saturating at CA_HITS_MAX).
 *   An object with hits == 1 (used only in the period that created it, however often)
 *   may stay idle for `single_use_age` rotations; a reused one for `max_age`.
 *
 *   Nodes wait in a ring of CA_SLOTS lists keyed by the epoch at which they are next
 *   due; a rotation moves the slot that fell due to the pending list, and aging slices
 *   (ca_cache_age) work through the pending list within a node budget and a deadline.
 *   Work per rotation is proportional to the nodes that fell due, not to the cache.
 *
 * Refaults
 *   An adapter may give each object an identity (ops->identity: a 64-bit hash of its key).
 *   The framework then remembers the identities it reclaimed, compactly, as the kernel's
 *   workingset shadow entries and S3-FIFO's ghost queue do: 8 bytes each (a 32-bit
 *   fingerprint, the epoch of the reclaim and the idle time it was reclaimed at), at most one
 *   per object the cache has held at its largest (that high-water mark rounded down to sets of
 *   8, at least CA_REFAULT_MEMORY_MIN; grown at a rotation once the mark is a quarter above
 *   it). After an idle pause aging empties a cache, which is just when the memory of what it
 *   held matters: hence the high-water mark, not the objects held now. An object inserted with an identity
 *   reclaimed at most `refault_window` rotations before is a refault: aging dropped something
 *   that was wanted. It starts as reused (it gets max_age), so one mistake is not repeated.
 *   Two identities with the same fingerprint are one to the framework: with R identities
 *   remembered, an insert is taken for a refault by mistake with odds of about R / 2^32.
 *
 * Adaptive ages (`auto_ages`)
 *   single_use_age and max_age become upper limits, and every rotation the cache moves the
 *   ages in force (CurrentSingleUseAge, CurrentMaxAge in the statistics) so that its refault
 *   share over the last rotations tracks `target_refault_ppm`: longer by an eighth when the
 *   share is above twice the target; shorter by an eighth when it is below half of it and
 *   nothing the ages in force would make came back for 16 rotations. A max_age at which the
 *   share was too high is not gone back to for four refault windows, which is what makes a
 *   steady workload settle on one age (a session whose programs come back in rounds kept one
 *   for 48 to 107 rotations). When nothing comes back, the ages go down to 1 rotation and
 *   stay: what nobody asked for within a whole refault window is junk, which should go
 *   soonest, and the first refaults above the band bring them up again.
 *   A refaulted object also gets an age of its own, twice the idle gap it showed
 *   (its idle time at reclaim plus the rotations until it came back), up to CA_OWN_AGE_MAX and
 *   max_age: objects that proved to come back after a pause stay over the next one, the
 *   others go early. The own age lives in spare bits of the node's flags, so struct ca_node
 *   keeps its 24 bytes and ca_touch() does not change. A cache without refaults to steer by
 *   (no ops->identity) keeps its ages at the limits, as fixed ones.
 *
 * Locking
 *   ca_touch() may be called from any thread, concurrently with everything else, as long
 *   as the node is linked into the cache (it is lock-free and writes nothing when the
 *   node was already touched in the current period). Every other function here must be
 *   called with the owner's lock held (or from the owner's single thread); the library
 *   takes no lock of its own. The reclaim callback runs under that same lock.
 *
 * Errors are negative errno values; the library never logs above debug and never exits.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The fields that ca_touch() reads and writes outside the owner's lock are C11 atomics. C++
 * (before C++23) has no _Atomic: a C++ program that embeds the library sees the same fields as
 * plain integers, of the same size and alignment (age.c asserts it), which ca_touch() reads
 * with the compiler's __atomic builtins (GCC and Clang), relaxed as in C. Only the library
 * writes them. CA_ATOMIC() and CA_LOAD_RELAXED() are for this header, not for users.
 */
#ifdef __cplusplus
#define CA_ATOMIC(type) type
#define CA_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
extern "C" {
#else
#include <stdatomic.h>
#define CA_ATOMIC(type) _Atomic type
#define CA_LOAD_RELAXED(p) atomic_load_explicit((p), memory_order_relaxed)
#endif

#define CA_SLOTS 64            /* due-slot ring size, in rotations */
#define CA_HITS_MAX 127        /* saturation of ca_node.hits, in rotation periods */
#define CA_AGE_MAX 65535       /* largest single_use_age / max_age, in rotations */
#define CA_SLICE_NODES 1024    /* default node budget of one aging slice */
#define CA_CLOCK_EVERY 64      /* nodes aged between two reads of the clock */

#define CA_SINGLE_USE_AGE_DEFAULT 2 /* rotations */
#define CA_MAX_AGE_DEFAULT 8        /* rotations */

#define CA_REFAULT_WINDOW_DEFAULT 64     /* rotations a reclaimed identity is remembered */
#define CA_REFAULT_WINDOW_MAX 65535      /* rotations */
#define CA_REFAULT_MEMORY_MIN 64         /* identities the refault memory can hold at least */
#define CA_REFAULT_ENTRY_BYTES 8         /* bytes per remembered identity */
#define CA_REFAULT_BUCKETS 8             /* of the refault distance histogram */
#define CA_TARGET_REFAULT_DEFAULT_PPM 100000 /* auto: 10% of reclaims */
#define CA_TARGET_REFAULT_MAX_PPM 500000 /* auto: at most half of the reclaims */
#define CA_OWN_AGE_MAX 63                /* rotations: a refaulted object's own age, at most */

/*
 * A link of a circular doubly linked list (the kernel's struct list_head). The library's own
 * lists are made of these; the operations on them are private to the library.
 */
struct ca_list_head {
        struct ca_list_head *next, *prev;
};

/*
 * Intrusive aging node, embedded in the cached object (24 bytes on x86-64). Only `stamp` and
 * `hits` are touched outside the owner's lock; the rest is the framework's.
 */
struct ca_node {
        struct ca_list_head link;    /* in a due slot or the pending list; self when unlinked */
        CA_ATOMIC(uint32_t) stamp;   /* epoch of the last touch */
        CA_ATOMIC(uint8_t) hits;     /* distinct rotation periods touched in, saturating */
        uint8_t flags;               /* CA_NODE_*: the framework's, under the owner's lock */
        uint16_t due;                /* low bits of the epoch it was filed for */
};

#define CA_NODE_LINKED 0x01 /* aged by a cache */
#define CA_NODE_BUSY 0x02   /* answered CA_BUSY or CA_KEEP in this rotation: asked again at
                               the next */
#define CA_NODE_AGE_SHIFT 2 /* flags >> this: the node's own age (auto), 0 = the cache's */

/* What a reclaim callback did with a node that fell due (kernel's enum lru_status). */
enum ca_status {
        CA_RECLAIMED, /* the adapter freed the object; the node must not be used again */
        CA_BUSY,      /* in use right now: looked at again at the next rotation */
        CA_KEEP,      /* the adapter vetoes reclaim for now (a directory that still has
                         children): looked at again at the next rotation, and not a use */
};

struct ca_cache;

struct ca_cache_ops {
        /*
         * Required. Called from ca_cache_age() for a node whose idle time reached its limit.
         * The node is already unlinked from the cache. Return CA_RECLAIMED after freeing
         * (or queueing for disposal) the object, CA_BUSY or CA_KEEP to have it relinked.
         * Neither CA_BUSY nor CA_KEEP is a use: the node keeps its stamp and its hits and is
         * asked again at the next rotation, so an object kept while its reason lasts goes
         * as soon as the reason ends (and it is still idle). An adapter that knows of a use
         * the framework did not see calls ca_touch() on the node first (the callback may).
         * Runs under the owner's lock; must not call back into the same cache but for that
         * ca_touch().
         */
        enum ca_status (*reclaim)(struct ca_cache *cache, struct ca_node *node, void *userdata);
        /*
         * Optional. The object's size in bytes for the `bytes` statistic; asked once at
         * insert and once when the node leaves the cache, so it must not change meanwhile.
         */
        size_t (*size)(const struct ca_cache *cache, const struct ca_node *node, void *userdata);
        /*
         * Optional. The object's identity: a 64-bit hash of its key, the same for the same key
         * whenever it is asked (an object re-created with the key it had has the identity it
         * had). Asked at insert and just before the reclaim callback, and only while the cache
         * has a refault_window; without it the cache counts no refaults.
         */
        uint64_t (*identity)(const struct ca_cache *cache, const struct ca_node *node,
                             void *userdata);
};

/*
 * Aging parameters, in rotations (the rotation interval belongs to the driver). A zeroed tail
 * (refault_window, auto_ages, target_refault_ppm, auto_controller) means no refault memory
 * and fixed ages.
 */
struct ca_params {
        uint32_t single_use_age; /* 1..CA_AGE_MAX, default CA_SINGLE_USE_AGE_DEFAULT; with
                                    auto_ages the longest the cache may choose */
        uint32_t max_age;        /* single_use_age..CA_AGE_MAX, default CA_MAX_AGE_DEFAULT;
                                    with auto_ages the longest the cache may choose */
        uint32_t refault_window; /* 0 (no refault memory) or 1..CA_REFAULT_WINDOW_MAX, default
                                    CA_REFAULT_WINDOW_DEFAULT */
        bool auto_ages;          /* move the ages to hold target_refault_ppm (needs a window) */
        uint32_t target_refault_ppm; /* auto_ages: refaults per million reclaims to hold,
                                        1..CA_TARGET_REFAULT_MAX_PPM; else ignored */
        uint32_t auto_controller; /* auto_ages: enum ca_auto_controller, for the lab only;
                                     0 (CA_AUTO_CONTROLLER_BUILT) everywhere else */
};

/*
 * The controller of ages = auto as built, or one of its parts taken out or changed alone: a
 * knob for the lab's measurements of what each part is worth (`bench-replay --controller`,
 * doc/benchmarks.md), which no configuration key reaches. A zeroed field is the controller as
 * built, which nothing else should ask for.
 */
enum ca_auto_controller {
        CA_AUTO_CONTROLLER_BUILT = 0,      /* 16 quiet rotations before a step down, steps of an
                                              eighth, a too-short max_age barred for 4 refault
                                              windows */
        CA_AUTO_CONTROLLER_NO_BAR,         /* no bar on a too-short max_age */
        CA_AUTO_CONTROLLER_BAR_1_WINDOW,   /* the bar for 1 refault window */
        CA_AUTO_CONTROLLER_QUIET_8,        /* a step down after 8 quiet rotations */
        CA_AUTO_CONTROLLER_UP_SIXTEENTH,   /* steps up of a sixteenth */
        CA_AUTO_CONTROLLER_UP_QUARTER,     /* steps up of a quarter */
        CA_AUTO_CONTROLLER_DOWN_QUARTER,   /* steps down of a quarter */
        _CA_AUTO_CONTROLLER_MAX,
};

#define CA_PARAMS_DEFAULT                                                                  \
        ((struct ca_params){ .single_use_age = CA_SINGLE_USE_AGE_DEFAULT,                  \
                             .max_age = CA_MAX_AGE_DEFAULT,                                \
                             .refault_window = CA_REFAULT_WINDOW_DEFAULT,                  \
                             .target_refault_ppm = CA_TARGET_REFAULT_DEFAULT_PPM })

/*
 * A cache's statistics. Every field is a uint64_t and has one descriptor in the table that
 * ca_stat_descs() returns, which is what the daemon's D-Bus properties, cacheagectl and the
 * metrics exporter read: a new field needs its value in ca_cache_stats() and one line in that
 * table (age.c), nothing else.
 */
struct ca_stats {
        uint64_t objects;                   /* nodes in the cache */
        uint64_t single_use_objects;        /* of which touched in one period only */
        uint64_t part_objects;              /* of which of the kind ca_cache_counts() names */
        uint64_t bytes;                     /* sum of ops->size, 0 without it */
        uint64_t rotations;                 /* ca_cache_rotate() calls */
        uint64_t scanned;                   /* nodes looked at by aging slices */
        uint64_t reclaimed;                 /* CA_RECLAIMED answers */
        uint64_t reclaimed_single_use;      /* of which with hits == 1 */
        uint64_t busy;                      /* CA_BUSY answers */
        uint64_t kept;                      /* CA_KEEP answers */
        uint64_t last_rotation_usec;        /* CLOCK_REALTIME of the last rotation, 0 = never */
        uint64_t last_rotation_duration_usec; /* slice time spent on the last rotation */
        uint64_t longest_slice_usec;        /* longest single ca_cache_age() call */
        uint64_t backlog;                   /* nodes pending, not yet aged */
        uint64_t refaults;                  /* inserts of an identity reclaimed in the window */
        uint64_t refault_share_ppm;         /* refaults per million reclaimed */
        uint64_t remembered;                /* identities in the refault memory */
        uint64_t refault_memory_bytes;      /* size of the refault memory */
        uint64_t current_single_use_age;    /* single_use_age in force (auto moves it) */
        uint64_t current_max_age;           /* max_age in force (auto moves it) */
        uint64_t own_aged_objects;          /* objects with an age of their own (auto) */
};

/* What a statistic is, for a metrics system (and adapters' own statistics, plugin.h). */
enum ca_stat_kind {
        CA_STAT_COUNTER, /* counts events: only grows, until statistics are reset */
        CA_STAT_GAUGE,   /* a level: goes up and down (a size, a duration, a time) */
};

/* One field of struct ca_stats. */
struct ca_stat_desc {
        const char *name;       /* the field's name, snake_case: "reclaimed_single_use" */
        const char *property;   /* the D-Bus property, CamelCase ("usec" is "USec") */
        size_t offset;          /* of the uint64_t field in struct ca_stats */
        enum ca_stat_kind kind;
        /*
         * "objects", "bytes", "rotations", "ppm" (parts per million), "usec" (a duration), or
         * "timestamp_usec" (CLOCK_REALTIME microseconds since the Unix epoch, 0 = never).
         */
        const char *unit;
        const char *help;       /* one line, lower case, no final period */
};

/*
 * ca_stat_descs() - the descriptors of struct ca_stats: every field exactly once, in the
 * struct's order. Stores their number in *ret_n. (Functions rather than exported arrays, so
 * that a program linked against an older table never copies a stale size of it.)
 */
const struct ca_stat_desc *ca_stat_descs(size_t *ret_n);

/* ca_stat_desc_find() - the descriptor whose name or D-Bus property is @name, or NULL. */
const struct ca_stat_desc *ca_stat_desc_find(const char *name);

/* ca_stat_value() - the field of @stats that @desc describes. */
uint64_t ca_stat_value(const struct ca_stats *stats, const struct ca_stat_desc *desc);

/* ca_stat_kind_name() - "counter" or "gauge"; NULL for a value outside the enum. */
const char *ca_stat_kind_name(enum ca_stat_kind kind);

/*
 * ca_cache_new() - create an empty cache.
 * @ops: reclaim (required) and size (optional); must outlive the cache.
 * @params: NULL for the defaults.
 * Returns 0 and stores the cache in *ret, -EINVAL on bad ops or params, -ENOMEM.
 */
int ca_cache_new(const struct ca_cache_ops *ops, void *userdata, const struct ca_params *params,
                 struct ca_cache **ret);

/*
 * ca_cache_free() - free the cache itself. Nodes still linked are forgotten, not reclaimed
 * (the owner frees its objects); accepts NULL. Returns NULL.
 */
struct ca_cache *ca_cache_free(struct ca_cache *cache);

/*
 * ca_cache_set_params() - change the aging parameters at run time.
 * Raising an age costs nothing (nodes are looked at early and rescheduled). Lowering one
 * starts a re-sweep of every waiting node, slot by slot, done by the next aging slices
 * (budgeted as usual) before they report the rotation done, so the new limit applies at
 * once: an object already idle past it goes in the current rotation.
 * A new refault_window applies to what is remembered already; turning the window on sizes
 * the refault memory at the next rotation, turning it off forgets everything remembered.
 * Turning auto_ages on starts from the limits; lowering a limit under auto clamps the ages in
 * force to it; turning it off leaves objects the own ages they earned until they leave.
 * Returns 0, -ENOMEM (the refault memory), or -EINVAL (and nothing changes) when a value is
 * outside 1..CA_AGE_MAX, max_age is below single_use_age (a reused object never goes before a
 * single-use one), refault_window is above CA_REFAULT_WINDOW_MAX, or auto_ages is asked
 * without a refault_window or with target_refault_ppm outside 1..CA_TARGET_REFAULT_MAX_PPM,
 * or auto_controller is not an enum ca_auto_controller.
 */
int ca_cache_set_params(struct ca_cache *cache, const struct ca_params *params);
void ca_cache_get_params(const struct ca_cache *cache, struct ca_params *ret);

/* ca_cache_validate_params() - 0 when @params would be accepted, else -EINVAL. */
int ca_cache_validate_params(const struct ca_params *params);

/*
 * ca_cache_insert() - start aging @node, which is in no cache: zero-initialised (calloc, or
 * = { 0 }) or removed since. It is stamped with the current epoch, hits = 1, due after
 * single_use_age rotations; but a refault (its identity was reclaimed within refault_window
 * rotations) starts as reused: hits = 2, due after max_age (auto: after its own age).
 * Inserting a linked node is a programmer error (assert).
 */
void ca_cache_insert(struct ca_cache *cache, struct ca_node *node);

/*
 * ca_cache_remove() - stop aging @node, from whatever state it is in (waiting, pending, or
 * already unlinked, which is a no-op). The caller must make sure no other thread touches
 * the node while and after it is removed.
 */
void ca_cache_remove(struct ca_cache *cache, struct ca_node *node);

/* ca_node_linked() - whether @node is aged by a cache. */
static inline bool ca_node_linked(const struct ca_node *node)
{
        return node->flags & CA_NODE_LINKED;
}

/* ca_cache_epoch() - the cache's clock (relaxed; any thread). */
uint32_t ca_cache_epoch(const struct ca_cache *cache);

/* The public head of struct ca_cache, so that ca_touch() can be inlined. */
struct ca_cache_head {
        CA_ATOMIC(uint32_t) epoch; /* advanced by ca_cache_rotate() only */
};

void __ca_touch_slow(struct ca_cache *cache, struct ca_node *node, uint32_t epoch);

/*
 * ca_touch() - mark @node used now. Lock-free and safe from any thread; the common case
 * (already touched in this rotation period) is two loads and no store. The first touch in
 * a new period stores the stamp and bumps hits with plain relaxed stores; the step from 1 to
 * 2 hits (single-use to reused) is taken exactly once however many threads race, while a
 * count above 2 is a statistic that a tight race may miscount by one.
 */
static inline void ca_touch(struct ca_cache *cache, struct ca_node *node)
{
        uint32_t epoch = CA_LOAD_RELAXED(&((struct ca_cache_head *)cache)->epoch);

        if (CA_LOAD_RELAXED(&node->stamp) != epoch)
                __ca_touch_slow(cache, node, epoch);
}

/*
 * ca_cache_rotate() - advance the clock by one and move the nodes that fell due to the
 * pending list. The slot is spliced, no node is looked at; with a refault window, 1/64 of
 * the refault memory is swept of what fell out of the window (and the memory grows when the
 * cache has outgrown it by a quarter), and auto_ages takes its step. Returns the number of
 * nodes that fell due, and notes the wall-clock time for the statistics. The driver is
 * expected to run ca_cache_age() until it returns 0 before the next rotation (a backlog is
 * allowed, but is carried over).
 */
size_t ca_cache_rotate(struct ca_cache *cache);

/*
 * ca_cache_age() - one aging slice: look at up to @budget pending nodes (0 = CA_SLICE_NODES),
 * stopping early once CLOCK_MONOTONIC passes @deadline_usec (0 = no deadline; the clock is
 * read once every CA_CLOCK_EVERY nodes). A node idle for at least its limit is unlinked and
 * handed to ops->reclaim; any other is rescheduled to stamp + limit. The budget is spent
 * before each callback, so CA_BUSY nodes cannot livelock a slice.
 * Returns the number of nodes still to look at, re-sweep included (0: the rotation's work
 * is done).
 */
size_t ca_cache_age(struct ca_cache *cache, size_t budget, uint64_t deadline_usec);

/* ca_cache_pending() - nodes waiting for an aging slice, re-sweep included. */
size_t ca_cache_pending(const struct ca_cache *cache);

/* ca_cache_stats() - a snapshot of the cache's statistics. */
void ca_cache_stats(const struct ca_cache *cache, struct ca_stats *ret);

/*
 * ca_cache_refault_histogram() - how long after their reclaim the refaults came back, in
 * rotations: ret[0] counts those back within the rotation period of their reclaim, ret[i] for
 * i >= 1 those back after 2^(i-1) to 2^i - 1 rotations, the last bucket everything from
 * 2^(CA_REFAULT_BUCKETS - 2) up (ca_refault_bucket_floor() gives each bucket's lowest
 * distance). The buckets add up to the refaults statistic; reset with it.
 */
void ca_cache_refault_histogram(const struct ca_cache *cache, uint64_t ret[CA_REFAULT_BUCKETS]);

/* ca_refault_bucket_floor() - the lowest distance, in rotations, of histogram bucket @i. */
uint32_t ca_refault_bucket_floor(unsigned i);

/*
 * A cache whose objects are not its nodes: the host's dentry cache, which the kernel keeps and
 * ages itself while an adapter watches it and steers the kernel's reclaim. Such a cache holds
 * no node; its owner counts the objects where they live and says what the counts are, so that
 * what a cache shows as its objects is always a real count, named for what it counts.
 * For a cache of nodes the same questions have the framework's answers: "objects",
 * "single-use" and no mechanism.
 */
#define CA_COUNTS_NAME_MAX 32 /* bytes of a name, NUL included */

struct ca_cache_counts {
        const char *objects_name; /* what an object is, a plural noun: "dentries" */
        const char *part_name;    /* the part of them `part` counts, an adjective: "negative" */
        const char *mechanism;    /* how they are aged now: "memory.reclaim"; "" for a cache of
                                     nodes (the framework's own rotation) */
        uint64_t objects;         /* how many objects there are */
        uint64_t part;            /* how many of them are part_name */
};

/*
 * ca_cache_set_counts() - from now on @cache reports @counts: ca_cache_stats() gives
 * counts->objects as `objects` and counts->part as `part_objects` (its nodes, if it has any,
 * are no longer what it shows), `single_use_objects` 0 (no object of such a cache is known
 * to be single-use), and ca_cache_get_counts() the names. The names are copied; each is 1 to
 * CA_COUNTS_NAME_MAX - 1 bytes of [a-z0-9._-()] and space (mechanism may be empty).
 * Returns 0, or -EINVAL (and nothing changes) for a missing or malformed name.
 */
int ca_cache_set_counts(struct ca_cache *cache, const struct ca_cache_counts *counts);

/*
 * ca_cache_get_counts() - what @cache shows as objects: the counts its owner set, or for a
 * cache of nodes its nodes ("objects", of which "single-use", mechanism ""). The names
 * point into the cache, valid until the next ca_cache_set_counts() or ca_cache_free().
 */
void ca_cache_get_counts(const struct ca_cache *cache, struct ca_cache_counts *ret);

/*
 * ca_cache_count_reclaimed() - a cache whose owner counts its objects (ca_cache_set_counts())
 * says that @objects of them were reclaimed, by whatever reclaims them (the kernel): they count
 * in `reclaimed` as the framework's own reclaims do. Returns 0, or -EINVAL for a cache of
 * nodes (the framework counts those itself).
 */
int ca_cache_count_reclaimed(struct ca_cache *cache, uint64_t objects);

/*
 * The parts of a counted cache: the groups it acts on separately (the kernel adapter's memory
 * cgroups of a slice), each with what it holds and what was reclaimed of it, so that a client
 * can tell which gave most. At most CA_CACHE_PARTS_MAX, each name 1 to CA_CACHE_PART_NAME_MAX
 * - 1 printable bytes.
 */
#define CA_CACHE_PARTS_MAX 4096     /* parts of one cache */
#define CA_CACHE_PART_NAME_MAX 256  /* bytes of a part's name, NUL included */

struct ca_cache_part {
        const char *name;         /* "/system.slice/foo.service" */
        uint64_t bytes;           /* what it holds now (the owner says of what) */
        uint64_t reclaimed;       /* objects reclaimed of it, in all */
        uint64_t reclaimed_bytes; /* bytes reclaimed of it, in all */
        const char *state;        /* NULL or "": as its owner ages it; else what stops that
                                     ("left alone: 3.1M page cache, below the sweep floor
                                     (32.0M)"), printable, under CA_CACHE_PART_STATE_MAX */
};
#define CA_CACHE_PART_STATE_MAX 256 /* bytes of a part's state, NUL included */

/*
 * ca_cache_set_parts() - from now on @cache has these @n parts (copied; 0 parts: none).
 * Returns 0, -EINVAL (too many, or a malformed name or state: nothing changes), -ENOMEM.
 */
int ca_cache_set_parts(struct ca_cache *cache, const struct ca_cache_part *parts, size_t n);

/*
 * ca_cache_get_parts() - the parts ca_cache_set_parts() gave, valid until the next call of it
 * or ca_cache_free(): their number, and the array in *ret (NULL when none).
 */
size_t ca_cache_get_parts(const struct ca_cache *cache, const struct ca_cache_part **ret);

/*
 * ca_cache_set_deferred() - the cache's owner puts its work off, for @reason ("busy", "memory
 * pressure": 1 to CA_COUNTS_NAME_MAX - 1 bytes of [a-z0-9._-()] and space), or takes it up again
 * (@reason NULL). The time it was first put off for that reason is kept while it stays so.
 * Returns 0, or -EINVAL for a malformed reason (nothing changes).
 */
int ca_cache_set_deferred(struct ca_cache *cache, const char *reason);

/*
 * ca_cache_get_deferred() - why the owner puts the cache's work off ("" when it does not) and
 * since when (CLOCK_REALTIME microseconds, 0 when it does not). @reason points into the cache.
 */
void ca_cache_get_deferred(const struct ca_cache *cache, const char **ret_reason,
                           uint64_t *ret_since_usec);

/*
 * ca_cache_reset_stats() - zero the counters (rotations, scanned, reclaimed, busy, kept,
 * refaults and their histogram) and the durations (last rotation's, longest slice); the other
 * gauges (objects, single-use objects, bytes, backlog, last_rotation_usec, the refault memory
 * and the ages in force) and the epoch stay.
 */
void ca_cache_reset_stats(struct ca_cache *cache);

/* ca_now_usec() - CLOCK_MONOTONIC in microseconds, the clock of every deadline here. */
uint64_t ca_now_usec(void);

#ifdef __cplusplus
}
#endif

#endif
