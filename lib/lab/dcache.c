/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dentry-cache model: fs/dcache.c in userspace, with the 2022 negative-dentry proposals as
 * switches (see cacheage/dcache.h for the contract). Its structures are in dcache-internal.h,
 * shared with lib/lab/replay.c, which applies trace events to a model.
 *
 * Locking: none. One thread at a time (the owner's lock); the aging framework's reclaim
 * callback runs inside ca_dcache_age(), under that same lock.
 *
 * Memory. A dentry is 112 bytes on x86-64 (the kernel's is 192): the ca_node, one hash chain
 * pointer, parent, d_child links, a pointer to per-directory state, 32-bit refcount and hash,
 * 16 bits of flags, the name length and 32 bytes of inline name. Everything a directory needs
 * (the head of its children's list, exact counts, Brennan's cursor, our negative queue) lives
 * in a struct ca_ddir allocated with its first child, so files pay nothing for it. Dentries
 * come from slabs of CA_SLAB_BYTES carved by the model (a kmem_cache, without the per-cpu
 * parts), so that malloc's per-chunk header and rounding do not add 16 bytes to each.
 *
 * Accounting. Every count (global and per directory) is a function of a dentry's state, so
 * each state change is bracketed by account(-1) / account(+1): no count is ever updated by
 * hand, and ca_dcache_check() recounts them all.
 *
 * Aging. ca_cache_age() writes to a node after the reclaim op answered CA_RECLAIMED, so the
 * op kills a dentry logically (unhash, unlist, counts, parent's reference) and leaves its
 * memory on a dispose list, freed at the next reclaim call or the next entry into the model
 * (collect first, dispose after: prune_dcache_sb -> shrink_dentry_list). An unhashed parent
 * whose last reference goes inside the op would have to leave the cache too, which the op
 * must not do, so it is only marked doomed and killed on the next entry (settle()).
 */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcache-internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define CA_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CA_HAVE_ASAN 1
#endif
#endif
#ifdef CA_HAVE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CA_SLAB_BYTES (1u << 20)      /* bytes per slab of dentries */
#define CA_HASH_BITS_MIN 10           /* 1024 buckets to start with */
#define CA_HASH_BITS_MAX 31
#define CA_HASH_LOAD 2                /* hashed dentries per bucket before the table doubles */
#define CA_QUEUE_MIN 8                /* slots of a directory's negative queue */
#define CA_SHRINK_BATCH 256           /* dentries collected per shrink pass */

/* ---------------------------------------------------------------------------------------- */
/* names and hashing */

static const char *dname(const struct ca_dentry *de)
{
        return de->name_len > CA_DCACHE_INLINE_NAME ? de->name.ext : de->name.inline_name;
}

static uint32_t name_hash(const struct ca_dentry *parent, const char *name, size_t len)
{
        /* FNV-1a salted with the parent (as full_name_hash(parent, ...)), then a finaliser */
        uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ull);

        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)name[i];
                h *= 0x100000001b3ull;
        }
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        return (uint32_t)h;
}

static bool name_valid(const char *name, size_t len)
{
        if (len == 0 || !name)
                return false;
        if (memchr(name, '/', len) || memchr(name, '\0', len))
                return false;
        if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
                return false;
        return true;
}

/* Store @name in @de, which has none yet (or whose old one the caller frees). */
static int name_set(struct ca_dcache *d, struct ca_dentry *de, const char *name, size_t len)
{
        if (len > CA_DCACHE_INLINE_NAME) {
                char *p = malloc(len);

                if (!p)
                        return -ENOMEM;
                memcpy(p, name, len);
                de->name.ext = p;
                d->external_name_bytes += len;
        } else
                memcpy(de->name.inline_name, name, len);
        de->name_len = (uint8_t)len;
        return 0;
}

static void name_free(struct ca_dcache *d, struct ca_dentry *de)
{
        if (de->name_len > CA_DCACHE_INLINE_NAME) {
                d->external_name_bytes -= de->name_len;
                free(de->name.ext);
        }
        de->name_len = 0;
}

static size_t bucket_of(const struct ca_dcache *d, uint32_t hash)
{
        return hash & ((1u << d->hash_bits) - 1);
}

static struct ca_dentry *hash_find(const struct ca_dcache *d, const struct ca_dentry *parent,
                                   const char *name, size_t len, uint32_t hash)
{
        for (struct ca_dentry *de = d->buckets[bucket_of(d, hash)]; de; de = de->hash_next)
                if (de->hash == hash && de->parent == parent && de->name_len == len &&
                    memcmp(dname(de), name, len) == 0)
                        return de;
        return NULL;
}

/* Double the table; on ENOMEM keep the old one (longer chains, nothing lost). */
static void hash_grow(struct ca_dcache *d)
{
        unsigned bits = d->hash_bits + 1;
        struct ca_dentry **nb;
        size_t n = (size_t)1 << d->hash_bits;

        nb = calloc((size_t)1 << bits, sizeof(*nb));
        if (!nb)
                return;
        for (size_t i = 0; i < n; i++) {
                struct ca_dentry *de = d->buckets[i], *next;

                for (; de; de = next) {
                        size_t b = de->hash & ((1u << bits) - 1);

                        next = de->hash_next;
                        de->hash_next = nb[b];
                        nb[b] = de;
                }
        }
        free(d->buckets);
        d->buckets = nb;
        d->hash_bits = bits;
}

static void hash_insert(struct ca_dcache *d, struct ca_dentry *de)
{
        size_t b;

        if (d->nr_hashed + 1 > ((uint64_t)CA_HASH_LOAD << d->hash_bits) &&
            d->hash_bits < CA_HASH_BITS_MAX)
                hash_grow(d);
        b = bucket_of(d, de->hash);
        de->hash_next = d->buckets[b];
        d->buckets[b] = de;
}

static void hash_remove(struct ca_dcache *d, struct ca_dentry *de)
{
        struct ca_dentry **pp = &d->buckets[bucket_of(d, de->hash)];

        while (*pp != de) {
                assert(*pp);
                pp = &(*pp)->hash_next;
        }
        *pp = de->hash_next;
        de->hash_next = NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* slabs */

static struct ca_dentry *slab_alloc(struct ca_dcache *d)
{
        const size_t per_slab = CA_SLAB_BYTES / sizeof(struct ca_dentry);
        struct ca_dentry *de;

        if (d->free_list) {
                de = d->free_list;
                UNPOISON(de, sizeof(*de));
                d->free_list = de->hash_next;
        } else {
                if (d->nr_slabs == 0 || d->slab_used == per_slab) {
                        void *slab;

                        if (d->nr_slabs == d->slabs_cap) {
                                size_t cap = d->slabs_cap ? d->slabs_cap * 2 : 16;
                                void **s = realloc(d->slabs, cap * sizeof(*s));

                                if (!s)
                                        return NULL;
                                d->slabs = s;
                                d->slabs_cap = cap;
                        }
                        slab = malloc(CA_SLAB_BYTES);
                        if (!slab)
                                return NULL;
                        d->slabs[d->nr_slabs++] = slab;
                        d->slab_used = 0;
                }
                de = (struct ca_dentry *)d->slabs[d->nr_slabs - 1] + d->slab_used++;
        }
        memset(de, 0, sizeof(*de));
        return de;
}

static void slab_free(struct ca_dcache *d, struct ca_dentry *de)
{
        de->hash_next = d->free_list;
        d->free_list = de;
        /* the free list pointer stays readable; the rest is a use-after-free under ASan */
        POISON((char *)de + sizeof(struct ca_node),
               sizeof(*de) - sizeof(struct ca_node));
        POISON(de, offsetof(struct ca_dentry, hash_next));
}

/* ---------------------------------------------------------------------------------------- */
/* accounting: every count follows from state, changed only inside account(-1)/account(+1) */

static void account(struct ca_dcache *d, struct ca_dentry *de, int sign)
{
        struct ca_ddir *pd = (de->flags & D_ROOT) ? NULL : de->parent->dir;
        uint64_t s64 = (uint64_t)(int64_t)sign;
        uint32_t s32 = (uint32_t)sign;
        bool positive = de->flags & D_POSITIVE;

        if (positive) {
                d->nr_positive += s64;
                if (pd)
                        pd->nr_positive += s32;
        } else if (de->flags & D_HASHED) {
                d->nr_negative_all += s64;
                if (pd) {
                        pd->nr_negative += s32;
                        if (de->refcount == 0)
                                pd->nr_unused_negative += s32;
                }
        }
        if (de->refcount == 0)
                d->nr_unreferenced += s64;
        if (de->flags & D_LRU) {
                d->nr_lru += s64;
                if (!positive)
                        d->nr_lru_negative += s64;
        }
        if (de->flags & D_TAIL) {
                d->nr_tail += s64;
                if (pd)
                        pd->nr_tail += s32;
        }
        if (de->flags & D_HASHED)
                d->nr_hashed += s64;
}

/* ---------------------------------------------------------------------------------------- */
/* per-directory state */

static struct ca_ddir *ddir_get(struct ca_dentry *de)
{
        if (!de->dir) {
                de->dir = calloc(1, sizeof(*de->dir));
                if (!de->dir)
                        return NULL;
                list_init(&de->dir->children);
        }
        return de->dir;
}

static void ddir_free(struct ca_dentry *de)
{
        if (!de->dir)
                return;
        free(de->dir->q);
        free(de->dir);
        de->dir = NULL;
}

/* An empty directory gives its state back, unless Brennan's cursor must be kept exact. */
static void ddir_maybe_free(struct ca_dentry *de)
{
        if (de->dir && de->dir->nr_children == 0 && !de->dir->cursor)
                ddir_free(de);
}

/* ratio_counted queue ---------------------------------------------------------------------- */

static void queue_remove(struct ca_ddir *dir, struct ca_dentry *de)
{
        assert(de->flags & D_QUEUED);
        dir->q[de->qpos & (dir->q_cap - 1)] = NULL;
        de->flags &= ~D_QUEUED;
        if (--dir->q_live == 0)
                dir->q_head = dir->q_tail; /* all holes now */
}

/* Rebuild the ring with only its live entries, at least twice as big as they are. */
static int queue_rebuild(struct ca_ddir *dir)
{
        uint32_t cap = CA_QUEUE_MIN, n = 0;
        struct ca_dentry **q;

        while (cap < 2 * (dir->q_live + 1))
                cap *= 2;
        q = calloc(cap, sizeof(*q));
        if (!q)
                return -ENOMEM;
        for (uint32_t t = dir->q_head; t != dir->q_tail; t++) {
                struct ca_dentry *e = dir->q[t & (dir->q_cap - 1)];

                if (!e)
                        continue;
                e->qpos = n;
                q[n++] = e;
        }
        assert(n == dir->q_live);
        free(dir->q);
        dir->q = q;
        dir->q_cap = cap;
        dir->q_head = 0;
        dir->q_tail = n;
        return 0;
}

static int queue_push(struct ca_ddir *dir, struct ca_dentry *de)
{
        if (dir->q_tail - dir->q_head == dir->q_cap) {
                int r = queue_rebuild(dir);

                if (r < 0)
                        return r;
        }
        de->qpos = dir->q_tail++;
        dir->q[de->qpos & (dir->q_cap - 1)] = de;
        de->flags |= D_QUEUED;
        dir->q_live++;
        return 0;
}

static struct ca_dentry *queue_pop(struct ca_ddir *dir)
{
        while (dir->q_head != dir->q_tail) {
                struct ca_dentry *e = dir->q[dir->q_head & (dir->q_cap - 1)];

                if (e) {
                        queue_remove(dir, e);
                        return e;
                }
                dir->q_head++;
        }
        return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* references, kill */

static void dentry_kill(struct ca_dcache *d, struct ca_dentry *de);

static void dentry_get(struct ca_dcache *d, struct ca_dentry *de)
{
        if (de->refcount > 0) {
                de->refcount++;
                return;
        }
        /* dget leaves it on the LRU (lazily, as the kernel does); it is no longer a victim */
        account(d, de, -1);
        de->refcount = 1;
        if (de->flags & D_QUEUED)
                queue_remove(de->parent->dir, de);
        account(d, de, +1);
}

/* The tail-negative sweep at the final put, as in the 2022 dcache series (seed 005). */
static void sweep_negative(struct ca_dcache *d, struct ca_dentry *de)
{
        de->flags |= D_TAIL;
        list_move_tail(&de->child, &de->parent->dir->children);
        d->swept++;
}

/* ... and its reverse before a tail-negative dentry turns positive. */
static void recycle_negative(struct ca_dcache *d, struct ca_dentry *de)
{
        de->flags &= ~D_TAIL;
        list_move(&de->child, &de->parent->dir->children);
        d->recycled++;
}

/* dput(). */
static void dentry_put(struct ca_dcache *d, struct ca_dentry *de)
{
        assert(de->refcount > 0);
        if (de->refcount > 1) {
                de->refcount--;
                return;
        }
        account(d, de, -1);
        de->refcount = 0;
        if (!(de->flags & D_HASHED)) {
                account(d, de, +1);
                if (d->in_reclaim) {
                        de->flags |= D_DOOMED;
                        de->hash_next = d->doomed;
                        d->doomed = de;
                } else
                        dentry_kill(d, de);
                return;
        }
        /* retain_dentry(): cached, unused, on the LRU */
        de->flags |= D_LRU;
        if (!(de->flags & D_POSITIVE)) {
                if (d->params.tail_negative && !(de->flags & D_TAIL))
                        sweep_negative(d, de);
                if (d->params.ratio_counted && queue_push(de->parent->dir, de) < 0)
                        d->queue_enomem++;
        }
        account(d, de, +1);
}

static void dentry_free(struct ca_dcache *d, struct ca_dentry *de)
{
        if (d->in_reclaim) {
                de->hash_next = d->dispose;
                d->dispose = de;
        } else
                slab_free(d, de);
}

/* Take @de off its parent's list (dentry_unlist(), with Brennan's cursor step). */
static void child_unlist(struct ca_dentry *parent, struct ca_dentry *de)
{
        struct ca_ddir *dir = parent->dir;

        if (dir->cursor == &de->child)
                dir->cursor = de->child.next;
        list_del_init(&de->child);
        dir->nr_children--;
}

/*
 * __dentry_kill() of an unused, childless dentry, then the put of its reference on the
 * parent (which the kernel's callers do; see cursor_scan()).
 */
static void dentry_kill(struct ca_dcache *d, struct ca_dentry *de)
{
        struct ca_dentry *parent = de->parent;

        assert(de->refcount == 0 && !has_children(de) && !(de->flags & D_ROOT));
        account(d, de, -1);
        if (de->flags & D_HASHED)
                hash_remove(d, de);
        if (de->flags & D_QUEUED)
                queue_remove(parent->dir, de);
        de->flags &= ~(D_HASHED | D_LRU | D_TAIL | D_DOOMED);
        if (d->cache && ca_node_linked(&de->node) && !d->in_reclaim)
                ca_cache_remove(d->cache, &de->node);
        child_unlist(parent, de);
        ddir_maybe_free(parent);
        ddir_free(de);
        name_free(d, de);
        d->nr_dentry--;
        dentry_free(d, de);
        dentry_put(d, parent);
}

/* Free what the reclaim op left behind and kill the doomed; at every entry into the model. */
static void settle(struct ca_dcache *d)
{
        while (d->dispose) {
                struct ca_dentry *de = d->dispose;

                d->dispose = de->hash_next;
                slab_free(d, de);
        }
        while (d->doomed) {
                struct ca_dentry *de = d->doomed;

                d->doomed = de->hash_next;
                de->hash_next = NULL;
                dentry_kill(d, de); /* may doom nothing: we are not in the op */
        }
}

/* ---------------------------------------------------------------------------------------- */
/* the negative-dentry ratio policies */

/*
 * Brennan's dentry_incremental_scan() (seed 003), step for step: look at ratio + 1 slots of
 * @parent's list from the cursor (the list head counts as a slot), remember the first unused
 * negative one, and kill it when no positive was seen. Coming back to the start ends the
 * scan without a kill and without moving the cursor. Two deliberate differences, both bugs
 * of the RFC rather than its policy: the victim's reference on @parent is dropped (the RFC
 * calls __dentry_kill(), which leaves that to its callers, so every kill leaked one), and
 * d_move() steps the cursor off a dentry leaving the directory (the RFC did not, and its
 * cursor could then walk another directory's list).
 */
static bool cursor_scan(struct ca_dcache *d, struct ca_dentry *parent)
{
        struct ca_ddir *dir = parent->dir;
        struct ca_list_head *head, *cursor, *start;
        struct ca_dentry *candidate = NULL;
        uint32_t nr_to_scan = d->params.ratio + 1;
        uint32_t nr_positive = 0;

        if (nr_to_scan == 1 || !dir)
                return false;
        d->cursor_scans++;
        head = &dir->children;
        cursor = start = dir->cursor ? dir->cursor : head->next;
        while (nr_to_scan--) {
                d->cursor_scanned++;
                if (cursor != head) {
                        struct ca_dentry *de = child_entry(cursor);

                        if (!(de->flags & D_POSITIVE)) {
                                if (de->refcount == 0 && !candidate)
                                        candidate = de;
                        } else
                                nr_positive++;
                }
                cursor = cursor->next;
                if (cursor == start)
                        return false;
        }
        dir->cursor = cursor;
        if (nr_positive || !candidate)
                return false;
        d->cursor_killed++;
        dentry_kill(d, candidate);
        return true;
}

/*
 * Ours: at most max(floor, ratio * positives) negative children, the least recently put
 * unused ones killed first. Each kill removes a dentry some earlier operation created, so
 * the loop is O(1) amortised. The caller holds a reference below @parent, so it survives.
 */
static void counted_enforce(struct ca_dcache *d, struct ca_dentry *parent)
{
        struct ca_ddir *dir;

        for (;;) {
                struct ca_dentry *victim;
                uint64_t limit;

                dir = parent->dir;
                if (!dir)
                        return;
                limit = (uint64_t)d->params.ratio * dir->nr_positive;
                if (limit < d->params.floor)
                        limit = d->params.floor;
                if (dir->nr_negative <= limit)
                        return;
                victim = queue_pop(dir);
                if (!victim)
                        return;
                /* popping changed no count: it is still an unused negative until killed */
                d->counted_killed++;
                dentry_kill(d, victim);
        }
}

/* ---------------------------------------------------------------------------------------- */
/* state changes */

static void touch(struct ca_dcache *d, struct ca_dentry *de)
{
        if (d->cache && ca_node_linked(&de->node))
                ca_touch(d->cache, &de->node);
}

/* __d_instantiate() / __d_add() with an inode; inside the caller's account bracket. */
static void make_positive(struct ca_dcache *d, struct ca_dentry *de, bool dir)
{
        assert(!(de->flags & D_QUEUED));
        if (de->flags & D_TAIL)
                recycle_negative(d, de);
        de->flags |= D_POSITIVE;
        if (dir)
                de->flags |= D_DIR;
        /* fsnotify_update_flags() */
        if (de->parent->flags & D_WATCH_CHILDREN)
                de->flags |= D_WATCHED;
        else
                de->flags &= ~D_WATCHED;
}

/* d_lookup(). Inline: it is every step of the path walk, which GCC stopped inlining it into
   when the replay moved out (bench-dcache's lookups_per_s). */
static inline struct ca_dentry *lookup_locked(struct ca_dcache *d, struct ca_dentry *parent,
                                              const char *name, size_t len, bool do_touch)
{
        struct ca_dentry *de = hash_find(d, parent, name, len, name_hash(parent, name, len));

        if (!de)
                return NULL;
        dentry_get(d, de);
        if (do_touch)
                touch(d, de);
        return de;
}

static int alloc_locked(struct ca_dcache *d, struct ca_dentry *parent, const char *name,
                        size_t len, struct ca_dentry **ret)
{
        struct ca_ddir *dir;
        struct ca_dentry *de;
        uint32_t hash;
        bool new_dir;
        int r;

        if (len > CA_DCACHE_NAME_MAX)
                return -ENAMETOOLONG;
        if (!name_valid(name, len))
                return -EINVAL;
        if (!(parent->flags & D_POSITIVE))
                return -ENOENT;
        if (!(parent->flags & D_DIR))
                return -ENOTDIR;
        hash = name_hash(parent, name, len);
        if (hash_find(d, parent, name, len, hash))
                return -EEXIST;

        new_dir = !parent->dir;
        dir = ddir_get(parent);
        if (!dir)
                return -ENOMEM;
        de = slab_alloc(d);
        if (!de) {
                r = -ENOMEM;
                goto out_dir;
        }
        r = name_set(d, de, name, len);
        if (r < 0) {
                slab_free(d, de);
                goto out_dir;
        }
        list_init(&de->node.link);
        de->hash = hash;
        de->refcount = 1;
        de->parent = parent;
        dentry_get(d, parent);
        list_add(&de->child, &dir->children);
        dir->nr_children++;
        d->nr_dentry++;
        account(d, de, +1);
        if (d->cache)
                ca_cache_insert(d->cache, &de->node);
        if (d->params.ratio_cursor)
                cursor_scan(d, parent);
        *ret = de;
        return 0;

out_dir:
        if (new_dir)
                ddir_free(parent);
        return r;
}

static int add_locked(struct ca_dcache *d, struct ca_dentry *de, bool positive, bool dir)
{
        if (de->flags & (D_HASHED | D_ROOT) || de->refcount == 0)
                return -EINVAL;
        if ((de->flags & D_POSITIVE) && !positive)
                return -EINVAL;
        de->hash = name_hash(de->parent, dname(de), de->name_len);
        if (hash_find(d, de->parent, dname(de), de->name_len, de->hash))
                return -EEXIST;
        account(d, de, -1);
        if (positive && !(de->flags & D_POSITIVE))
                make_positive(d, de, dir);
        hash_insert(d, de);
        de->flags |= D_HASHED;
        account(d, de, +1);
        if (!positive && d->params.ratio_counted)
                counted_enforce(d, de->parent);
        return 0;
}

static int instantiate_locked(struct ca_dcache *d, struct ca_dentry *de, bool dir)
{
        if ((de->flags & (D_POSITIVE | D_ROOT)) || de->refcount == 0)
                return -EINVAL;
        account(d, de, -1);
        make_positive(d, de, dir);
        account(d, de, +1);
        return 0;
}

static void drop_locked(struct ca_dcache *d, struct ca_dentry *de)
{
        if (!(de->flags & D_HASHED) || (de->flags & D_ROOT))
                return;
        account(d, de, -1);
        hash_remove(d, de);
        de->flags &= ~D_HASHED;
        if (de->flags & D_QUEUED)
                queue_remove(de->parent->dir, de);
        account(d, de, +1);
        /* an unused dentry off the hash would sit on the LRU until the shrinker: kill it now */
        if (de->refcount == 0)
                dentry_kill(d, de);
}

static int delete_locked(struct ca_dcache *d, struct ca_dentry *de)
{
        struct ca_dentry *parent = de->parent;

        if (!(de->flags & D_POSITIVE) || (de->flags & D_ROOT) || de->refcount == 0)
                return -EINVAL;
        if (de->refcount != 1) {
                drop_locked(d, de);
                return 0;
        }
        /* dentry_unlink_inode(): negative in place; nr_negative follows D_LRU in account() */
        account(d, de, -1);
        de->flags &= ~(D_POSITIVE | D_DIR);
        account(d, de, +1);
        if (!(de->flags & D_HASHED))
                return 0;
        if (d->params.ratio_cursor)
                cursor_scan(d, parent);
        if (d->params.ratio_counted)
                counted_enforce(d, parent);
        return 0;
}

static int move_locked(struct ca_dcache *d, struct ca_dentry *de, struct ca_dentry *target)
{
        struct ca_dentry *old_parent = de->parent, *new_parent = target->parent;
        const char *name = dname(target);
        size_t len = target->name_len;
        char *ext = NULL;

        if (!(de->flags & D_POSITIVE) || (de->flags & D_ROOT) || (target->flags & D_ROOT))
                return -EINVAL;
        if (de == target || de->refcount == 0 || target->refcount == 0)
                return -EINVAL;
        if (is_ancestor(de, target))
                return -EINVAL;
        /* an unhashed target's name may have been taken since: never hash a duplicate */
        if (!(target->flags & D_HASHED)) {
                struct ca_dentry *other = hash_find(d, new_parent, name, len,
                                                    name_hash(new_parent, name, len));

                if (other && other != de)
                        return -EEXIST;
        }
        if (len > CA_DCACHE_INLINE_NAME) {
                ext = malloc(len);
                if (!ext)
                        return -ENOMEM;
                memcpy(ext, name, len);
        }

        drop_locked(d, target); /* held by the caller: unhashed, not killed */
        account(d, de, -1);
        if (de->flags & D_HASHED)
                hash_remove(d, de);
        name_free(d, de);
        if (ext) {
                de->name.ext = ext;
                d->external_name_bytes += len;
        } else
                memcpy(de->name.inline_name, name, len);
        de->name_len = (uint8_t)len;

        if (new_parent != old_parent) {
                child_unlist(old_parent, de);
                de->parent = new_parent;
                dentry_get(d, new_parent); /* target is its child: its dir exists */
                list_add(&de->child, &new_parent->dir->children);
                new_parent->dir->nr_children++;
        } else {
                /* list_move() within the list: Brennan's cursor, if here, moves along */
                list_move(&de->child, &old_parent->dir->children);
        }
        de->hash = name_hash(new_parent, dname(de), len);
        hash_insert(d, de);
        de->flags |= D_HASHED;
        if (new_parent->flags & D_WATCH_CHILDREN)
                de->flags |= D_WATCHED;
        else
                de->flags &= ~D_WATCHED;
        account(d, de, +1);
        touch(d, de);
        if (new_parent != old_parent) {
                ddir_maybe_free(old_parent);
                dentry_put(d, old_parent);
        }
        return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* tree iteration (nothing may change the tree meanwhile) */

static struct ca_dentry *first_child(const struct ca_dentry *de)
{
        if (!has_children(de))
                return NULL;
        return child_entry(de->dir->children.next);
}

/* The next dentry after @de that is not below it, within @top's subtree; NULL at the end. */
static struct ca_dentry *next_skip(struct ca_dentry *de, const struct ca_dentry *top)
{
        while (de != top) {
                struct ca_dentry *p = de->parent;

                if (de->child.next != &p->dir->children)
                        return child_entry(de->child.next);
                de = p;
        }
        return NULL;
}

static struct ca_dentry *next_preorder(struct ca_dentry *de, const struct ca_dentry *top)
{
        struct ca_dentry *c = first_child(de);

        return c ? c : next_skip(de, top);
}

/* ---------------------------------------------------------------------------------------- */
/* shrink_dcache_parent() */

static size_t shrink_locked(struct ca_dcache *d, struct ca_dentry *top)
{
        size_t killed = 0;

        /*
         * Passes over the subtree, each collecting a batch of unused dentries (which have no
         * children, since children hold references) and killing them; a directory whose last
         * child went is unused by the next pass. No allocation, so it cannot fail.
         */
        for (;;) {
                struct ca_dentry *batch[CA_SHRINK_BATCH];
                size_t n = 0;

                for (struct ca_dentry *de = first_child(top); de && n < CA_SHRINK_BATCH;
                     de = next_preorder(de, top))
                        if (de->refcount == 0)
                                batch[n++] = de;
                if (n == 0)
                        return killed;
                for (size_t i = 0; i < n; i++)
                        dentry_kill(d, batch[i]);
                killed += n;
        }
}

/* ---------------------------------------------------------------------------------------- */
/* aging */

static enum ca_status dcache_reclaim(struct ca_cache *cache, struct ca_node *node,
                                     void *userdata)
{
        struct ca_dcache *d = userdata;
        struct ca_dentry *de = container_of(node, struct ca_dentry, node);
        uint32_t children = nr_children(de);

        /* the framework is done with the previous victims */
        while (d->dispose) {
                struct ca_dentry *dead = d->dispose;

                d->dispose = dead->hash_next;
                slab_free(d, dead);
        }
        if (de->flags & D_DOOMED) {
                d->aging_busy++; /* killed at the next settle() */
                return CA_BUSY;
        }
        if (de->refcount > children) {
                /* dentry_lru_isolate(): in use, off the LRU until its next final put */
                if (de->flags & D_LRU) {
                        account(d, de, -1);
                        de->flags &= ~D_LRU;
                        account(d, de, +1);
                }
                d->aging_busy++;
                return CA_BUSY;
        }
        if (children) {
                d->aging_kept++;
                return CA_KEEP;
        }
        d->in_reclaim = true;
        dentry_kill(d, de);
        d->in_reclaim = false;
        d->aging_reclaimed++;
        return CA_RECLAIMED;
}

static size_t dcache_node_size(const struct ca_cache *cache, const struct ca_node *node,
                               void *userdata)
{
        return sizeof(struct ca_dentry);
}

/*
 * A dentry's identity for the framework's refaults: a hash of its path, each component's
 * name hash weighted by a power of an odd constant by its height above the dentry, which is
 * hash(parent's identity, name) unrolled: computed from the dentry up, with no recursion,
 * and the same for a dentry re-created (under a re-created parent, too) at the same path.
 * Not the hash table's: that one is salted with the parent's address, which a re-created
 * parent does not keep.
 */
static uint64_t dentry_identity(const struct ca_dentry *de)
{
        uint64_t id = 0, weight = 1;

        for (; !(de->flags & D_ROOT); de = de->parent) {
                uint64_t h = 0xcbf29ce484222325ull;
                const char *name = dname(de);

                for (size_t i = 0; i < de->name_len; i++) {
                        h ^= (unsigned char)name[i];
                        h *= 0x100000001b3ull;
                }
                id += (h ^ (h >> 29)) * weight;
                weight *= 0x9e3779b97f4a7c15ull;
        }
        return id;
}

static uint64_t dcache_node_identity(const struct ca_cache *cache, const struct ca_node *node,
                                     void *userdata)
{
        return dentry_identity(container_of(node, const struct ca_dentry, node));
}

static const struct ca_cache_ops dcache_ops = {
        .reclaim = dcache_reclaim,
        .size = dcache_node_size,
        .identity = dcache_node_identity,
};

size_t ca_dcache_rotate(struct ca_dcache *d)
{
        settle(d);
        return d->cache ? ca_cache_rotate(d->cache) : 0;
}

size_t ca_dcache_age(struct ca_dcache *d, size_t budget, uint64_t deadline_usec)
{
        size_t left;

        settle(d);
        if (!d->cache)
                return 0;
        left = ca_cache_age(d->cache, budget, deadline_usec);
        settle(d);
        return left;
}

struct ca_cache *ca_dcache_cache(const struct ca_dcache *d)
{
        return d->cache;
}

void ca_dcache_dispose(struct ca_dcache *d)
{
        settle(d);
}

/* ---------------------------------------------------------------------------------------- */
/* creation, parameters */

int ca_dcache_validate_params(const struct ca_dcache_params *p)
{
        if (!p)
                return -EINVAL;
        if (p->ratio > CA_DCACHE_RATIO_MAX || p->floor > CA_DCACHE_FLOOR_MAX)
                return -EINVAL;
        return ca_cache_validate_params(&p->age);
}

static void aging_off(struct ca_dcache *d)
{
        if (!d->cache)
                return;
        for (struct ca_dentry *de = d->root; de; de = next_preorder(de, d->root))
                ca_cache_remove(d->cache, &de->node);
        d->cache = ca_cache_free(d->cache);
}

static int aging_on(struct ca_dcache *d, const struct ca_params *age)
{
        int r;

        r = ca_cache_new(&dcache_ops, d, age, &d->cache);
        if (r < 0)
                return r;
        for (struct ca_dentry *de = next_preorder(d->root, d->root); de;
             de = next_preorder(de, d->root))
                ca_cache_insert(d->cache, &de->node);
        return 0;
}

static void queues_off(struct ca_dcache *d)
{
        for (struct ca_dentry *de = d->root; de; de = next_preorder(de, d->root)) {
                de->flags &= ~D_QUEUED;
                if (de->dir) {
                        free(de->dir->q);
                        de->dir->q = NULL;
                        de->dir->q_cap = de->dir->q_head = de->dir->q_tail = 0;
                        de->dir->q_live = 0;
                }
        }
}

static int queues_on(struct ca_dcache *d)
{
        for (struct ca_dentry *de = d->root; de; de = next_preorder(de, d->root)) {
                struct ca_list_head *l;

                if (!has_children(de))
                        continue;
                /* the head is the newest: queue from the tail, the oldest first */
                list_for_each_prev(l, &de->dir->children) {
                        struct ca_dentry *c = child_entry(l);

                        if (c->refcount || (c->flags & (D_POSITIVE | D_DOOMED)) ||
                            !(c->flags & D_HASHED))
                                continue;
                        if (queue_push(de->dir, c) < 0) {
                                queues_off(d);
                                return -ENOMEM;
                        }
                }
        }
        return 0;
}

int ca_dcache_new(const struct ca_dcache_params *params, struct ca_dcache **ret)
{
        struct ca_dcache_params p = params ? *params : CA_DCACHE_PARAMS_DEFAULT;
        struct ca_dcache *d;
        struct ca_dentry *root;
        int r;

        if (!ret || ca_dcache_validate_params(&p) < 0)
                return -EINVAL;
        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->hash_bits = CA_HASH_BITS_MIN;
        d->buckets = calloc((size_t)1 << d->hash_bits, sizeof(*d->buckets));
        if (!d->buckets) {
                r = -ENOMEM;
                goto out_free;
        }
        root = slab_alloc(d);
        if (!root) {
                r = -ENOMEM;
                goto out_free;
        }
        list_init(&root->node.link);
        root->parent = root;
        root->flags = D_ROOT | D_POSITIVE | D_DIR;
        root->refcount = 1; /* pinned, as a mount pins its root */
        memcpy(root->name.inline_name, "/", 1);
        root->name_len = 1;
        list_init(&root->child);
        d->root = root;
        d->nr_dentry = 1;
        account(d, root, +1);
        d->params = p;
        if (p.aging) {
                r = aging_on(d, &p.age);
                if (r < 0)
                        goto out_free;
        }
        *ret = d;
        return 0;

out_free:
        ca_dcache_free(d);
        return r;
}

int ca_dcache_set_params(struct ca_dcache *d, const struct ca_dcache_params *params)
{
        int r;

        if (ca_dcache_validate_params(params) < 0)
                return -EINVAL;
        settle(d);
        if (params->ratio_counted && !d->params.ratio_counted) {
                r = queues_on(d);
                if (r < 0)
                        return r;
        }
        if (params->aging && !d->cache) {
                r = aging_on(d, &params->age);
                if (r < 0) {
                        if (params->ratio_counted && !d->params.ratio_counted)
                                queues_off(d);
                        return r;
                }
        } else if (params->aging) {
                r = ca_cache_set_params(d->cache, &params->age);
                assert(r == 0); /* validated above */
        } else
                aging_off(d);
        if (!params->ratio_counted && d->params.ratio_counted)
                queues_off(d);
        d->params = *params;
        return 0;
}

void ca_dcache_get_params(const struct ca_dcache *d, struct ca_dcache_params *ret)
{
        *ret = d->params;
}

struct ca_dcache *ca_dcache_free(struct ca_dcache *d)
{
        struct ca_dentry *de;

        if (!d)
                return NULL;
        d->cache = ca_cache_free(d->cache);
        /* post-order: a directory's state goes after its children were walked */
        de = d->root;
        while (de) {
                struct ca_dentry *c = first_child(de);

                if (c) {
                        de = c;
                        continue;
                }
                for (;;) {
                        struct ca_dentry *p = de->parent;
                        struct ca_list_head *next = de->child.next;
                        bool root = de->flags & D_ROOT;

                        ddir_free(de);
                        name_free(d, de);
                        if (root) {
                                de = NULL;
                                break;
                        }
                        if (next != &p->dir->children) {
                                de = child_entry(next);
                                break;
                        }
                        de = p;
                }
        }
        for (size_t i = 0; i < d->nr_slabs; i++) {
                UNPOISON(d->slabs[i], CA_SLAB_BYTES);
                free(d->slabs[i]);
        }
        free(d->slabs);
        free(d->buckets);
        free(d);
        return NULL;
}

struct ca_dentry *ca_dcache_root(struct ca_dcache *d)
{
        return d->root;
}

/* ---------------------------------------------------------------------------------------- */
/* public dentry operations */

struct ca_dentry *ca_dcache_lookup(struct ca_dcache *d, struct ca_dentry *parent,
                                   const char *name, size_t len)
{
        struct ca_dentry *de;

        settle(d);
        if (!name || len == 0 || len > CA_DCACHE_NAME_MAX)
                return NULL;
        de = lookup_locked(d, parent, name, len, true);
        if (de)
                d->holds++;
        return de;
}

int ca_dcache_alloc(struct ca_dcache *d, struct ca_dentry *parent, const char *name,
                    size_t len, struct ca_dentry **ret)
{
        struct ca_dentry *de;
        int r;

        settle(d);
        if (!ret)
                return -EINVAL;
        r = alloc_locked(d, parent, name, len, &de);
        if (r < 0)
                return r;
        d->holds++;
        *ret = de;
        return 0;
}

int ca_dcache_add(struct ca_dcache *d, struct ca_dentry *dentry, bool positive, bool dir)
{
        settle(d);
        return add_locked(d, dentry, positive, dir);
}

int ca_dcache_instantiate(struct ca_dcache *d, struct ca_dentry *dentry, bool dir)
{
        settle(d);
        return instantiate_locked(d, dentry, dir);
}

int ca_dcache_delete(struct ca_dcache *d, struct ca_dentry *dentry)
{
        settle(d);
        return delete_locked(d, dentry);
}

void ca_dcache_drop(struct ca_dcache *d, struct ca_dentry *dentry)
{
        settle(d);
        drop_locked(d, dentry);
}

struct ca_dentry *ca_dcache_get(struct ca_dcache *d, struct ca_dentry *dentry)
{
        settle(d);
        dentry_get(d, dentry);
        d->holds++;
        return dentry;
}

void ca_dcache_put(struct ca_dcache *d, struct ca_dentry *dentry)
{
        settle(d);
        if (!dentry)
                return;
        assert(d->holds > 0);
        d->holds--;
        dentry_put(d, dentry);
}

int ca_dcache_move(struct ca_dcache *d, struct ca_dentry *dentry, struct ca_dentry *target)
{
        settle(d);
        return move_locked(d, dentry, target);
}

int ca_dcache_ratio_scan(struct ca_dcache *d, struct ca_dentry *dir)
{
        settle(d);
        return cursor_scan(d, dir) ? 1 : 0;
}

size_t ca_dcache_shrink_parent(struct ca_dcache *d, struct ca_dentry *dentry)
{
        settle(d);
        /* without the caller's reference, its last child's death could take it along */
        if (dentry->refcount == 0)
                return 0;
        return shrink_locked(d, dentry);
}

/* ---------------------------------------------------------------------------------------- */
/* path walk */

int ca_dcache_path_lookup(struct ca_dcache *d, const char *path, unsigned flags,
                          struct ca_dentry **ret)
{
        const char *p, *end, *name;
        struct ca_dentry *cur;
        size_t len;
        int r;

        settle(d);
        if (!path || path[0] != '/' || !ret)
                return -EINVAL;
        p = path;
        end = path + strlen(path);
        cur = d->root;
        dentry_get(d, cur);
        while (next_component(&p, end, &name, &len)) {
                struct ca_dentry *child;

                if (len > CA_DCACHE_NAME_MAX) {
                        r = -ENAMETOOLONG;
                        goto out_put;
                }
                if (!(cur->flags & D_DIR)) {
                        r = -ENOTDIR;
                        goto out_put;
                }
                if (walk_dots(d, &cur, name, len))
                        continue;
                child = lookup_locked(d, cur, name, len, !(flags & CA_DCACHE_LOOKUP_NOTOUCH));
                if (!child) {
                        if (flags & CA_DCACHE_LOOKUP_NOCREATE) {
                                r = -ENOENT;
                                goto out_put;
                        }
                        /* lookup_slow(): d_alloc, the filesystem says "no", d_add(NULL) */
                        r = alloc_locked(d, cur, name, len, &child);
                        if (r < 0)
                                goto out_put;
                        r = add_locked(d, child, false, false);
                        assert(r == 0);
                }
                dentry_put(d, cur);
                cur = child;
                if (!(cur->flags & D_POSITIVE)) {
                        if ((flags & CA_DCACHE_LOOKUP_NEGATIVE) && only_slashes(p, end)) {
                                d->holds++;
                                *ret = cur;
                                return 0;
                        }
                        r = -ENOENT;
                        goto out_put;
                }
        }
        d->holds++;
        *ret = cur;
        return 0;

out_put:
        dentry_put(d, cur);
        return r;
}

/* ---------------------------------------------------------------------------------------- */
/* walks */

size_t ca_dcache_walk(struct ca_dcache *d, struct ca_dentry *start, ca_dcache_walk_fn fn,
                      void *userdata)
{
        struct ca_dentry *de;
        size_t calls = 1;

        settle(d);
        if (fn(start, userdata) != CA_WALK_CONTINUE)
                return calls;
        de = first_child(start);
        while (de) {
                calls++;
                switch (fn(de, userdata)) {
                case CA_WALK_QUIT:
                        return calls;
                case CA_WALK_CONTINUE:
                        if (has_children(de)) {
                                de = first_child(de);
                                continue;
                        }
                        de = next_skip(de, start);
                        break;
                case CA_WALK_SKIP:
                        de = next_skip(de, start);
                        break;
                case CA_WALK_SKIP_SIBLINGS:
                        de = de->parent == start ? NULL : next_skip(de->parent, start);
                        break;
                default:
                        return calls;
                }
        }
        return calls;
}

size_t ca_dcache_watch_dir(struct ca_dcache *d, struct ca_dentry *dir, bool watched)
{
        struct ca_list_head *l;
        size_t visited = 0;

        settle(d);
        if (watched)
                dir->flags |= D_WATCH_CHILDREN;
        else
                dir->flags &= ~D_WATCH_CHILDREN;
        if (!has_children(dir))
                return 0;
        list_for_each(l, &dir->dir->children) {
                struct ca_dentry *c = child_entry(l);

                visited++;
                if (!(c->flags & D_POSITIVE)) {
                        /* seed 006: all remaining children are negative */
                        if (d->params.tail_negative && (c->flags & D_TAIL))
                                break;
                        continue;
                }
                if (watched)
                        c->flags |= D_WATCHED;
                else
                        c->flags &= ~D_WATCHED;
        }
        return visited;
}

/* ---------------------------------------------------------------------------------------- */
/* accessors and statistics */

const char *ca_dentry_name(const struct ca_dentry *dentry, size_t *ret_len)
{
        if (ret_len)
                *ret_len = dentry->name_len;
        return dname(dentry);
}

struct ca_dentry *ca_dentry_parent(const struct ca_dentry *dentry)
{
        return dentry->parent;
}

bool ca_dentry_positive(const struct ca_dentry *dentry)
{
        return dentry->flags & D_POSITIVE;
}

bool ca_dentry_is_dir(const struct ca_dentry *dentry)
{
        return dentry->flags & D_DIR;
}

bool ca_dentry_hashed(const struct ca_dentry *dentry)
{
        return dentry->flags & D_HASHED;
}

bool ca_dentry_tail_negative(const struct ca_dentry *dentry)
{
        return dentry->flags & D_TAIL;
}

bool ca_dentry_watched(const struct ca_dentry *dentry)
{
        return dentry->flags & D_WATCHED;
}

bool ca_dentry_on_lru(const struct ca_dentry *dentry)
{
        return dentry->flags & D_LRU;
}

uint32_t ca_dentry_refcount(const struct ca_dentry *dentry)
{
        return dentry->refcount;
}

void ca_dcache_stats(const struct ca_dcache *d, struct ca_dcache_stats *ret)
{
        *ret = (struct ca_dcache_stats){
                .nr_dentry = d->nr_dentry,
                .nr_unused = d->nr_lru,
                .nr_negative = d->nr_lru_negative,
                .nr_positive = d->nr_positive,
                .nr_negative_all = d->nr_negative_all,
                .nr_unreferenced = d->nr_unreferenced,
                .nr_tail_negative = d->nr_tail,
                .nr_hashed = d->nr_hashed,
                .hash_buckets = (uint64_t)1 << d->hash_bits,
                .dentry_bytes = sizeof(struct ca_dentry),
                .external_name_bytes = d->external_name_bytes,
                .holds = d->holds,
                .swept = d->swept,
                .recycled = d->recycled,
                .cursor_scans = d->cursor_scans,
                .cursor_scanned = d->cursor_scanned,
                .cursor_killed = d->cursor_killed,
                .counted_killed = d->counted_killed,
                .aging_reclaimed = d->aging_reclaimed,
                .aging_busy = d->aging_busy,
                .aging_kept = d->aging_kept,
                .replayed = d->replayed,
                .replay_ignored = d->replay_ignored,
                .replay_fixups = d->replay_fixups,
        };
}

void ca_dcache_dir_stats(const struct ca_dcache *d, const struct ca_dentry *dir,
                         struct ca_dcache_dir_stats *ret)
{
        const struct ca_ddir *dd = dir->dir;

        if (!dd) {
                *ret = (struct ca_dcache_dir_stats){ 0 };
                return;
        }
        *ret = (struct ca_dcache_dir_stats){
                .children = dd->nr_children,
                .positive = dd->nr_positive,
                .negative = dd->nr_negative,
                .unused_negative = dd->nr_unused_negative,
                .in_lookup = dd->nr_children - dd->nr_positive - dd->nr_negative,
                .tail_negative = dd->nr_tail,
        };
}

/* ---------------------------------------------------------------------------------------- */
/* the checker */

#define CHECK(cond, why)                                                                  \
        do {                                                                              \
                if (!(cond)) {                                                            \
                        if (ret_reason)                                                   \
                                *ret_reason = (why);                                      \
                        return -EUCLEAN;                                                  \
                }                                                                         \
        } while (0)

/* One directory's list: links, parents, order of tail-negatives, counts, cursor, queue. */
static int check_dir(const struct ca_dcache *d, const struct ca_dentry *de,
                     const char **ret_reason)
{
        const struct ca_ddir *dir = de->dir;
        uint32_t n = 0, pos = 0, neg = 0, unused_neg = 0, tail = 0, queued = 0;
        bool seen_tail = false, cursor_found = !dir->cursor || dir->cursor == &dir->children;
        const struct ca_list_head *l;

        CHECK(dir->nr_children > 0 || dir->cursor, "empty directory state kept without cursor");
        list_for_each(l, &dir->children) {
                const struct ca_dentry *c = child_entry(l);

                CHECK(l->next->prev == l && l->prev->next == l, "broken d_child links");
                CHECK(c->parent == de, "child's parent is not the directory holding it");
                n++;
                if (c->flags & D_POSITIVE)
                        pos++;
                else if (c->flags & D_HASHED) {
                        neg++;
                        if (c->refcount == 0)
                                unused_neg++;
                }
                if (c->flags & D_TAIL) {
                        tail++;
                        seen_tail = true;
                        CHECK(!(c->flags & D_POSITIVE), "tail-negative dentry is positive");
                } else
                        CHECK(!seen_tail, "non-tail child after a tail-negative one");
                if (l == dir->cursor)
                        cursor_found = true;
                if (c->flags & D_QUEUED) {
                        queued++;
                        CHECK(dir->q_cap && dir->q[c->qpos & (dir->q_cap - 1)] == c &&
                                      c->qpos - dir->q_head < dir->q_tail - dir->q_head,
                              "queued dentry not where its ticket says");
                }
                if (c->flags & D_POSITIVE)
                        CHECK(!!(c->flags & D_WATCHED) == !!(de->flags & D_WATCH_CHILDREN),
                              "positive child's watch mark differs from its parent's watch");
        }
        CHECK(n == dir->nr_children, "nr_children differs from the list");
        CHECK(pos == dir->nr_positive, "directory's positive count differs from a recount");
        CHECK(neg == dir->nr_negative, "directory's negative count differs from a recount");
        CHECK(unused_neg == dir->nr_unused_negative, "directory's unused negative count wrong");
        CHECK(tail == dir->nr_tail, "directory's tail-negative count differs from a recount");
        CHECK(cursor_found, "Brennan cursor points outside its directory's list");
        CHECK(queued == dir->q_live, "queue's live count differs from queued children");
        if (d->params.ratio_counted && !d->queue_enomem)
                CHECK(queued == unused_neg, "an unused negative dentry is not queued");
        return 0;
}

int ca_dcache_check(const struct ca_dcache *d, const char **ret_reason)
{
        uint64_t n = 0, lru = 0, lru_neg = 0, pos = 0, neg = 0, unref = 0, tail = 0, hashed = 0;
        uint64_t outside = 0, in_buckets = 0;
        int r;

        CHECK(d->root->refcount >= 1 + nr_children(d->root), "root lost its pin");
        for (struct ca_dentry *de = d->root; de; de = next_preorder(de, d->root)) {
                uint32_t children = nr_children(de);

                n++;
                if (de->flags & D_POSITIVE)
                        pos++;
                else if (de->flags & D_HASHED)
                        neg++;
                if (de->flags & D_LRU) {
                        lru++;
                        if (!(de->flags & D_POSITIVE))
                                lru_neg++;
                }
                if (de->refcount == 0)
                        unref++;
                if (de->flags & D_TAIL)
                        tail++;
                CHECK(de->refcount >= children, "refcount below the number of children");
                outside += de->refcount - children;
                if (de->refcount == 0) {
                        CHECK(!children, "unused dentry with children");
                        CHECK(((de->flags & D_HASHED) && (de->flags & D_LRU)) ||
                                      (de->flags & D_DOOMED),
                              "unused dentry neither cached on the LRU nor doomed");
                }
                if (de->flags & D_DOOMED)
                        CHECK(de->refcount == 0 && !(de->flags & D_HASHED), "bad doomed dentry");
                if (de->flags & D_QUEUED)
                        CHECK(d->params.ratio_counted && de->refcount == 0 &&
                                      !(de->flags & D_POSITIVE) && (de->flags & D_HASHED),
                              "queued dentry is not an unused negative one");
                if (de->flags & D_HASHED) {
                        hashed++;
                        CHECK(de->hash == name_hash(de->parent, dname(de), de->name_len),
                              "stored hash differs from (parent, name)");
                        CHECK(hash_find(d, de->parent, dname(de), de->name_len, de->hash) == de,
                              "hashed dentry not found by its name");
                }
                if (!(de->flags & D_ROOT)) {
                        CHECK(de->name_len >= 1, "dentry without a name");
                        CHECK(de->parent->dir, "child of a parent without directory state");
                        CHECK(!(de->flags & D_DIR) || (de->flags & D_POSITIVE),
                              "negative dentry marked as a directory");
                        CHECK(!!d->cache == !!ca_node_linked(&de->node),
                              "aging link differs from the aging switch");
                }
                if (de->dir) {
                        r = check_dir(d, de, ret_reason);
                        if (r < 0)
                                return r;
                }
        }
        CHECK(n == d->nr_dentry, "nr_dentry differs from a recount");
        CHECK(lru == d->nr_lru, "nr_unused differs from a recount");
        CHECK(lru_neg == d->nr_lru_negative, "nr_negative differs from a recount");
        CHECK(pos == d->nr_positive, "nr_positive differs from a recount");
        CHECK(neg == d->nr_negative_all, "nr_negative_all differs from a recount");
        CHECK(unref == d->nr_unreferenced, "nr_unreferenced differs from a recount");
        CHECK(tail == d->nr_tail, "nr_tail_negative differs from a recount");
        CHECK(hashed == d->nr_hashed, "nr_hashed differs from a recount");
        CHECK(outside == d->holds + 1, "references held outside differ from the holds taken");
        for (size_t b = 0; b < ((size_t)1 << d->hash_bits); b++)
                for (const struct ca_dentry *de = d->buckets[b]; de; de = de->hash_next) {
                        CHECK(bucket_of(d, de->hash) == b, "dentry in the wrong bucket");
                        CHECK(de->flags & D_HASHED, "unhashed dentry in the hash table");
                        in_buckets++;
                }
        CHECK(in_buckets == hashed, "hash table holds other dentries than the tree's hashed");
        if (d->cache) {
                struct ca_stats st;

                ca_cache_stats(d->cache, &st);
                CHECK(st.objects == d->nr_dentry - 1, "aging cache objects differ from dentries");
        }
        return 0;
}

/* ---------------------------------------------------------------------------------------- */
/*
 * The inner operations, for lib/lab/replay.c (dcache-internal.h). They stay static above so that
 * the model's own paths keep them inlined; these are their hidden entry points.
 */

void __ca_dentry_get(struct ca_dcache *d, struct ca_dentry *de)
{
        dentry_get(d, de);
}

void __ca_dentry_put(struct ca_dcache *d, struct ca_dentry *de)
{
        dentry_put(d, de);
}

struct ca_dentry *__ca_dcache_lookup(struct ca_dcache *d, struct ca_dentry *parent,
                                     const char *name, size_t len)
{
        return lookup_locked(d, parent, name, len, true);
}

struct ca_dentry *__ca_dcache_peek(struct ca_dcache *d, struct ca_dentry *parent,
                                   const char *name, size_t len)
{
        return lookup_locked(d, parent, name, len, false);
}

size_t __ca_dcache_invalidate(struct ca_dcache *d, struct ca_dentry *top)
{
        size_t killed = shrink_locked(d, top);

        /* what is left below is held (or holds something): unhashed, it dies when let go */
        for (struct ca_dentry *de = first_child(top); de; de = next_preorder(de, top))
                drop_locked(d, de);
        drop_locked(d, top);
        return killed;
}

int __ca_dcache_alloc(struct ca_dcache *d, struct ca_dentry *parent, const char *name,
                      size_t len, struct ca_dentry **ret)
{
        return alloc_locked(d, parent, name, len, ret);
}

int __ca_dcache_add(struct ca_dcache *d, struct ca_dentry *de, bool positive, bool dir)
{
        return add_locked(d, de, positive, dir);
}

int __ca_dcache_instantiate(struct ca_dcache *d, struct ca_dentry *de, bool dir)
{
        return instantiate_locked(d, de, dir);
}

void __ca_dcache_drop(struct ca_dcache *d, struct ca_dentry *de)
{
        drop_locked(d, de);
}

int __ca_dcache_delete(struct ca_dcache *d, struct ca_dentry *de)
{
        return delete_locked(d, de);
}

int __ca_dcache_move(struct ca_dcache *d, struct ca_dentry *de, struct ca_dentry *target)
{
        return move_locked(d, de, target);
}

size_t __ca_dcache_shrink_parent(struct ca_dcache *d, struct ca_dentry *top)
{
        return shrink_locked(d, top);
}
