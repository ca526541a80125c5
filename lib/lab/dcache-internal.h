/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_DCACHE_INTERNAL_H
#define CACHEAGE_DCACHE_INTERNAL_H

/*
 * The dentry model's insides, shared by lib/lab/dcache.c (the model) and lib/lab/replay.c (trace
 * events applied to it), as fs/internal.h is shared within fs/. Private: never installed, and
 * nothing declared here is exported from libcacheage (hidden visibility).
 *
 * The __ca_ operations are the model's own, without what the public ones add around them:
 * they do not settle() first (the caller did, once, on entering the model) and the references
 * they take or drop are not counted as the caller's holds (a walk drops them before it
 * returns). Locking: the model's, as everywhere: one thread at a time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheage/dcache.h"
#include "list.h"

#define CA_HIDDEN __attribute__((visibility("hidden")))

/* Per-directory state, allocated with the first child. */
struct ca_ddir {
        struct ca_list_head children; /* d_subdirs: new children at the head */
        struct ca_list_head *cursor;  /* ratio_cursor: Brennan's d_scan_cursor (NULL: the first) */
        uint32_t nr_children;
        uint32_t nr_positive;
        uint32_t nr_negative;      /* hashed negative children */
        uint32_t nr_unused_negative;
        uint32_t nr_tail;
        /*
         * ratio_counted: the unused negative children, least recently put first, in a ring of
         * tickets. A child that leaves the queue before its turn leaves a hole (NULL); the
         * ring is rebuilt when it fills, so each push costs O(1) amortised.
         */
        uint32_t q_head, q_tail;   /* tickets; slot = ticket & (q_cap - 1) */
        uint32_t q_cap;            /* 0 or a power of two */
        uint32_t q_live;
        struct ca_dentry **q;
};

enum {
        D_POSITIVE = 1 << 0,
        D_DIR = 1 << 1,            /* known to be a directory */
        D_HASHED = 1 << 2,
        D_LRU = 1 << 3,            /* DCACHE_LRU_LIST: counted in nr_unused */
        D_TAIL = 1 << 4,           /* DCACHE_TAIL_NEGATIVE */
        D_WATCHED = 1 << 5,        /* DCACHE_FSNOTIFY_PARENT_WATCHED */
        D_WATCH_CHILDREN = 1 << 6, /* its children are watched (the inode's mark, here) */
        D_QUEUED = 1 << 7,         /* in its parent's ratio_counted queue */
        D_ROOT = 1 << 8,
        D_DOOMED = 1 << 9,         /* unhashed and unused inside the reclaim op: dies at settle */
};

struct ca_dentry {
        struct ca_node node;          /* aging */
        struct ca_dentry *hash_next;  /* hash chain; dispose and doomed lists once unhashed */
        struct ca_dentry *parent;     /* the root's is itself */
        struct ca_list_head child;    /* d_child, in parent->dir->children */
        struct ca_ddir *dir;          /* NULL until a first child */
        uint32_t refcount;            /* children + references held outside */
        uint32_t hash;                /* of (parent, name) */
        uint16_t flags;
        uint8_t name_len;
        uint8_t reserved;
        uint32_t qpos;                /* ratio_counted: ticket in the parent's queue */
        union {
                char inline_name[CA_DCACHE_INLINE_NAME];
                char *ext;            /* name_len > CA_DCACHE_INLINE_NAME */
        } name;
};

_Static_assert(sizeof(struct ca_dentry) <= 112 || sizeof(void *) != 8,
               "struct ca_dentry must stay at 112 bytes on 64-bit");
_Static_assert(CA_DCACHE_NAME_MAX <= UINT8_MAX, "name_len is 8 bits");

struct ca_dcache {
        struct ca_dcache_params params;
        struct ca_cache *cache;       /* aging on */
        struct ca_dentry *root;

        struct ca_dentry **buckets;
        unsigned hash_bits;

        /* slabs */
        void **slabs;
        size_t nr_slabs, slabs_cap;
        size_t slab_used;             /* dentries carved from the last slab */
        struct ca_dentry *free_list;  /* through hash_next */

        struct ca_dentry *dispose;    /* killed inside the reclaim op; memory still the cache's */
        struct ca_dentry *doomed;     /* to kill at settle() */
        bool in_reclaim;

        /* counts (account()) */
        uint64_t nr_dentry, nr_lru, nr_lru_negative, nr_positive, nr_negative_all;
        uint64_t nr_unreferenced, nr_tail, nr_hashed;
        uint64_t external_name_bytes, holds;
        uint64_t queue_enomem;        /* queue pushes that failed: ratio_counted degraded */

        uint64_t swept, recycled, cursor_scans, cursor_scanned, cursor_killed, counted_killed;
        uint64_t aging_reclaimed, aging_busy, aging_kept;
        uint64_t replayed, replay_ignored, replay_fixups;
};

/* --- links and names --------------------------------------------------------------------- */

static inline struct ca_dentry *child_entry(const struct ca_list_head *l)
{
        return list_entry(l, struct ca_dentry, child);
}

static inline bool has_children(const struct ca_dentry *de)
{
        return de->dir && de->dir->nr_children > 0;
}

static inline uint32_t nr_children(const struct ca_dentry *de)
{
        return de->dir ? de->dir->nr_children : 0;
}

/* Whether @a is @de or one of its ancestors. */
static inline bool is_ancestor(const struct ca_dentry *a, const struct ca_dentry *de)
{
        for (;;) {
                if (de == a)
                        return true;
                if (de->flags & D_ROOT)
                        return false;
                de = de->parent;
        }
}

/* --- the model's operations (lib/lab/dcache.c), for lib/lab/replay.c -------------------------- */

/* dget() and dput() (see ca_dcache_put() for what the last one does). */
CA_HIDDEN void __ca_dentry_get(struct ca_dcache *d, struct ca_dentry *de);
CA_HIDDEN void __ca_dentry_put(struct ca_dcache *d, struct ca_dentry *de);

/* d_lookup(): referenced and touched for aging; NULL when not cached. */
CA_HIDDEN struct ca_dentry *__ca_dcache_lookup(struct ca_dcache *d, struct ca_dentry *parent,
                                               const char *name, size_t len);
/* The same, not touched: the cache looked at, not a use (a process exit finding its dir). */
CA_HIDDEN struct ca_dentry *__ca_dcache_peek(struct ca_dcache *d, struct ca_dentry *parent,
                                             const char *name, size_t len);
/*
 * d_invalidate() of @top (referenced by the caller): its unused descendants killed, the rest of
 * the subtree and @top unhashed, so that each dies at its last reference. Returns the dentries
 * killed now.
 */
CA_HIDDEN size_t __ca_dcache_invalidate(struct ca_dcache *d, struct ca_dentry *top);
/* As ca_dcache_alloc(), ca_dcache_add(), ca_dcache_instantiate(), ca_dcache_drop(),
   ca_dcache_delete(), ca_dcache_move() and ca_dcache_shrink_parent(). */
CA_HIDDEN int __ca_dcache_alloc(struct ca_dcache *d, struct ca_dentry *parent, const char *name,
                                size_t len, struct ca_dentry **ret);
CA_HIDDEN int __ca_dcache_add(struct ca_dcache *d, struct ca_dentry *de, bool positive, bool dir);
CA_HIDDEN int __ca_dcache_instantiate(struct ca_dcache *d, struct ca_dentry *de, bool dir);
CA_HIDDEN void __ca_dcache_drop(struct ca_dcache *d, struct ca_dentry *de);
CA_HIDDEN int __ca_dcache_delete(struct ca_dcache *d, struct ca_dentry *de);
CA_HIDDEN int __ca_dcache_move(struct ca_dcache *d, struct ca_dentry *de,
                               struct ca_dentry *target);
CA_HIDDEN size_t __ca_dcache_shrink_parent(struct ca_dcache *d, struct ca_dentry *top);

/* --- path walks --------------------------------------------------------------------------- */

/* The next component of [*p, end): skips slashes; false at the end. */
static inline bool next_component(const char **p, const char *end, const char **ret_name,
                           size_t *ret_len)
{
        const char *s = *p, *e;

        while (s < end && *s == '/')
                s++;
        if (s == end)
                return false;
        e = s;
        while (e < end && *e != '/')
                e++;
        *ret_name = s;
        *ret_len = (size_t)(e - s);
        *p = e;
        return true;
}

static inline bool only_slashes(const char *p, const char *end)
{
        while (p < end && *p == '/')
                p++;
        return p == end;
}

static inline bool is_dot(const char *name, size_t len)
{
        return len == 1 && name[0] == '.';
}

static inline bool is_dotdot(const char *name, size_t len)
{
        return len == 2 && name[0] == '.' && name[1] == '.';
}

/*
 * "." and "..": the walk stays where it is, or moves its reference from *cur to the parent.
 * Returns whether @name was one of them (nothing to look up then).
 */
static inline bool walk_dots(struct ca_dcache *d, struct ca_dentry **cur, const char *name,
                             size_t len)
{
        struct ca_dentry *p = (*cur)->parent;

        if (is_dot(name, len))
                return true;
        if (!is_dotdot(name, len))
                return false;
        __ca_dentry_get(d, p);
        __ca_dentry_put(d, *cur);
        *cur = p;
        return true;
}

#endif
