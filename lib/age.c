/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The aging framework: a due-slot ring per cache, lazy re-insertion, budgeted slices.
 *
 * Locking: none here. The owner serialises every call but ca_touch(), which races with
 * everything through relaxed atomics on node->stamp and node->hits and one atomic counter
 * (single_use). Only the owner moves nodes between lists, so the lists need no lock.
 *
 * Why a ring and not a CLOCK list: the kernel's LRU walk (dentry_lru_isolate) looks at every
 * object at every pass, so a rotation costs the size of the cache. Here a node is filed
 * under the epoch it is next due and only that slot is looked at when the epoch comes: a
 * rotation costs the nodes that fell due. A node touched since it was filed is simply
 * refiled when its old slot comes round (lazy re-insertion, as timer wheels do), so the
 * access path never moves anything.
 */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cacheage/age.h"
#include "list.h"

struct ca_cache {
        struct ca_cache_head head; /* first: ca_touch() reads the epoch through it */
        _Atomic uint64_t single_use; /* nodes with hits == 1; ca_touch() decrements */

        const struct ca_cache_ops *ops;
        void *userdata;
        struct ca_params params;

        /*
         * A linked node is either waiting in slots[due % CA_SLOTS] (due in the future) or
         * pending (due now or past). Which one is told by node->due against the epoch, so a
         * rotation can splice a whole slot onto the pending list without touching its nodes.
         * The sweep list holds the nodes of one slot being re-swept after an age was lowered;
         * they still count in slot_count[sweep_slot] and go pending with that slot.
         */
        struct ca_list_head slots[CA_SLOTS];
        size_t slot_count[CA_SLOTS];
        struct ca_list_head pending; /* fell due, waiting for a slice; FIFO */
        size_t pending_count;
        struct ca_list_head sweep;
        unsigned sweep_slot;    /* slot whose nodes are in `sweep` */
        unsigned sweep_left;    /* slots still to re-sweep, 0 = none */

        uint64_t objects;
        uint64_t bytes;
        uint64_t rotations, scanned, reclaimed, reclaimed_single_use, busy, kept;
        uint64_t last_rotation_usec; /* CLOCK_REALTIME */
        uint64_t last_rotation_duration_usec, longest_slice_usec;
};

/*
 * A pending node is at most this many rotations behind the epoch (ca_cache_rotate() refreshes
 * older ones), so `due` in 16 bits tells pending from waiting (at most CA_SLOTS - 1 ahead).
 */
#define PENDING_REFRESH 0x4000 /* rotations */

/* hits while the owner holds the count for a reclaim callback and a touch came meanwhile */
#define CA_HITS_RACED 0x80

_Static_assert(offsetof(struct ca_cache, head) == 0, "ca_touch() needs the epoch first");
_Static_assert(sizeof(struct ca_node) <= 24 || sizeof(void *) != 8, "ca_node grew");
/* A C++ program sees these atomics as plain integers (age.h): the layouts must agree. */
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
               _Alignof(_Atomic uint32_t) == _Alignof(uint32_t) &&
               sizeof(_Atomic uint8_t) == sizeof(uint8_t), "atomics differ from plain integers");
_Static_assert(CA_HITS_MAX < CA_HITS_RACED, "the race mark must be outside the counts");
_Static_assert(65536 % CA_SLOTS == 0, "due % CA_SLOTS must survive 16-bit wrap");

static struct ca_node *node_of(struct ca_list_head *l)
{
        return list_entry(l, struct ca_node, link);
}

uint64_t ca_now_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t realtime_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint32_t cache_epoch(const struct ca_cache *c)
{
        return atomic_load_explicit(&c->head.epoch, memory_order_relaxed);
}

uint32_t ca_cache_epoch(const struct ca_cache *cache)
{
        return cache_epoch(cache);
}

int ca_cache_validate_params(const struct ca_params *p)
{
        if (!p)
                return -EINVAL;
        if (p->single_use_age < 1 || p->single_use_age > CA_AGE_MAX)
                return -EINVAL;
        if (p->max_age < 1 || p->max_age > CA_AGE_MAX)
                return -EINVAL;
        /*
         * A reused object may stay at least as long as a single-use one: a touch only ever
         * lengthens a node's limit, which is what lets a touched node stay in its slot until
         * it comes round (lazy re-insertion) instead of being moved by the access path.
         */
        if (p->max_age < p->single_use_age)
                return -EINVAL;
        return 0;
}

int ca_cache_new(const struct ca_cache_ops *ops, void *userdata, const struct ca_params *params,
                 struct ca_cache **ret)
{
        struct ca_params p = params ? *params : CA_PARAMS_DEFAULT;
        struct ca_cache *c;

        if (!ops || !ops->reclaim || !ret)
                return -EINVAL;
        if (ca_cache_validate_params(&p) < 0)
                return -EINVAL;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ops = ops;
        c->userdata = userdata;
        c->params = p;
        for (size_t i = 0; i < CA_SLOTS; i++)
                list_init(&c->slots[i]);
        list_init(&c->pending);
        list_init(&c->sweep);
        *ret = c;
        return 0;
}

struct ca_cache *ca_cache_free(struct ca_cache *cache)
{
        free(cache);
        return NULL;
}

static uint32_t node_limit(const struct ca_cache *c, uint8_t hits)
{
        return hits <= 1 ? c->params.single_use_age : c->params.max_age;
}

static size_t node_size(const struct ca_cache *c, const struct ca_node *n)
{
        return c->ops->size ? c->ops->size(c, n, c->userdata) : 0;
}

static bool node_pending(const struct ca_cache *c, const struct ca_node *n)
{
        return (uint16_t)((uint16_t)cache_epoch(c) - n->due) < 0x8000;
}

/* Take @n off whichever list holds it, keeping the counts right; it stays `linked`. */
static void node_unlist(struct ca_cache *c, struct ca_node *n)
{
        if (node_pending(c, n)) {
                assert(c->pending_count > 0);
                c->pending_count--;
        } else {
                assert(c->slot_count[n->due % CA_SLOTS] > 0);
                c->slot_count[n->due % CA_SLOTS]--;
        }
        list_del_init(&n->link);
}

/*
 * File @n under the epoch it is next due, @due. A due time past the ring's far end is
 * clamped to it: the node is looked at early and refiled then (lazy re-insertion).
 */
static void node_schedule(struct ca_cache *c, struct ca_node *n, uint32_t due)
{
        uint32_t epoch = cache_epoch(c);
        uint32_t ahead = due - epoch;

        if (ahead == 0 || ahead > (uint32_t)CA_AGE_MAX * 2) {
                /* due now (or a stamp from the future, which only a racing touch can give) */
                n->due = (uint16_t)epoch;
                list_add_tail(&n->link, &c->pending);
                c->pending_count++;
                return;
        }
        if (ahead > CA_SLOTS - 1)
                ahead = CA_SLOTS - 1;
        n->due = (uint16_t)(epoch + ahead);
        list_add_tail(&n->link, &c->slots[n->due % CA_SLOTS]);
        c->slot_count[n->due % CA_SLOTS]++;
}

void ca_cache_insert(struct ca_cache *cache, struct ca_node *node)
{
        uint32_t epoch = cache_epoch(cache);

        assert(!ca_node_linked(node));
        atomic_store_explicit(&node->stamp, epoch, memory_order_relaxed);
        atomic_store_explicit(&node->hits, 1, memory_order_relaxed);
        node->flags = CA_NODE_LINKED;
        atomic_fetch_add_explicit(&cache->single_use, 1, memory_order_relaxed);
        cache->objects++;
        cache->bytes += node_size(cache, node);
        node_schedule(cache, node, epoch + cache->params.single_use_age);
}

/*
 * Account for a node of @hits and @bytes leaving the cache. Takes no node: after a reclaim
 * callback answered CA_RECLAIMED the node's memory may be gone.
 */
static void cache_forget(struct ca_cache *c, uint8_t hits, size_t bytes)
{
        if (hits <= 1)
                atomic_fetch_sub_explicit(&c->single_use, 1, memory_order_relaxed);
        assert(c->objects > 0);
        c->objects--;
        c->bytes -= bytes;
}

void ca_cache_remove(struct ca_cache *cache, struct ca_node *node)
{
        if (!ca_node_linked(node))
                return;
        node_unlist(cache, node);
        node->flags = 0;
        cache_forget(cache, atomic_load_explicit(&node->hits, memory_order_relaxed),
                     node_size(cache, node));
}

/* Bump hits once, saturating; the 1 -> 2 transition leaves the single-use count. */
static void node_bump_hits(struct ca_cache *c, struct ca_node *n)
{
        uint8_t hits = atomic_load_explicit(&n->hits, memory_order_relaxed);

        while (hits < CA_HITS_MAX) {
                if (atomic_compare_exchange_weak_explicit(&n->hits, &hits, hits + 1,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
                        if (hits == 1)
                                atomic_fetch_sub_explicit(&c->single_use, 1,
                                                          memory_order_relaxed);
                        return;
                }
        }
}

/*
 * The first touch of a period: plain relaxed stores, no locked instruction, except for the
 * one step the framework's decisions rest on. Going from 1 to 2 hits (single-use to reused)
 * is a compare-and-swap, so that of all threads racing there exactly one takes the node out
 * of the single-use count; it happens once in an object's life. Above 2, hits is a
 * statistic (any value above 1 means max_age), and a tight race may miscount it by one.
 */
void __ca_touch_slow(struct ca_cache *cache, struct ca_node *node, uint32_t epoch)
{
        uint32_t stamp = atomic_load_explicit(&node->stamp, memory_order_relaxed);
        uint8_t hits;

        /*
         * A touch that read the epoch just before a rotation must not move back the stamp
         * that a touch after it already stored. (Only when both race the rotation within a
         * few instructions can the older stamp land last: the node then looks idle one
         * period longer. A compare-and-swap would close that window at the price of a locked
         * instruction on every first touch of a period.)
         */
        if ((int32_t)(stamp - epoch) >= 0)
                return;
        atomic_store_explicit(&node->stamp, epoch, memory_order_relaxed);
        hits = atomic_load_explicit(&node->hits, memory_order_relaxed);
        for (;;) {
                uint8_t next;

                if (hits >= 2) {
                        /* reused already, or marked while frozen: a statistic from here */
                        if (hits < CA_HITS_MAX)
                                atomic_store_explicit(&node->hits, hits + 1,
                                                      memory_order_relaxed);
                        return;
                }
                /*
                 * 1 -> 2 leaves the single-use count: a compare-and-swap, so one thread
                 * does it. 0 means the owner holds the count while a reclaim callback runs
                 * (node_age()): only mark that a touch came, outside the counting range,
                 * so that no 1 can appear and be taken for the single-use state.
                 */
                next = hits == 0 ? CA_HITS_RACED : 2;
                if (atomic_compare_exchange_weak_explicit(&node->hits, &hits, next,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
                        if (next == 2)
                                atomic_fetch_sub_explicit(&cache->single_use, 1,
                                                          memory_order_relaxed);
                        return;
                }
        }
}

/* Move every node of slot @slot (and of the sweep list, if it is that slot's) to pending. */
static void slot_fall_due(struct ca_cache *c, unsigned slot)
{
        if (c->sweep_left && c->sweep_slot == slot)
                list_splice_tail_init(&c->sweep, &c->slots[slot]);
        list_splice_tail_init(&c->slots[slot], &c->pending);
        c->pending_count += c->slot_count[slot];
        c->slot_count[slot] = 0;
}

size_t ca_cache_rotate(struct ca_cache *cache)
{
        uint32_t epoch = cache_epoch(cache) + 1;
        unsigned slot = epoch % CA_SLOTS;
        size_t due = cache->slot_count[slot];

        atomic_store_explicit(&cache->head.epoch, epoch, memory_order_relaxed);
        cache->rotations++;
        cache->last_rotation_usec = realtime_usec();
        cache->last_rotation_duration_usec = 0;
        slot_fall_due(cache, slot);

        /*
         * A backlog carried over for PENDING_REFRESH rotations (a driver that rotates but
         * does not age) is restamped, so that node->due still tells pending from waiting.
         * A walk of the backlog, at most once every PENDING_REFRESH rotations.
         */
        if (!list_empty(&cache->pending) &&
            (uint16_t)((uint16_t)epoch - node_of(cache->pending.next)->due) >= PENDING_REFRESH) {
                struct ca_list_head *l;

                list_for_each(l, &cache->pending)
                        node_of(l)->due = (uint16_t)epoch;
        }
        return due;
}

/*
 * Give @n back its @hits after a callback that kept it; a touch that raced the callback
 * (hits went from 0 to 1) counts as one more period.
 */
static void node_restore_hits(struct ca_cache *c, struct ca_node *n, uint8_t hits)
{
        uint8_t raced = atomic_exchange_explicit(&n->hits, hits, memory_order_relaxed);

        n->flags = CA_NODE_LINKED;
        if (raced)
                node_bump_hits(c, n);
}

/* Look at @n, off every list: reclaim it when idle past its limit, else refile it. */
static void node_age(struct ca_cache *c, struct ca_node *n, uint32_t epoch, bool from_sweep)
{
        uint32_t stamp = atomic_load_explicit(&n->stamp, memory_order_relaxed);
        uint8_t hits = atomic_load_explicit(&n->hits, memory_order_relaxed);
        uint32_t limit = node_limit(c, hits);
        size_t bytes;

        c->scanned++;
        if (n->flags & CA_NODE_BUSY) {
                if (from_sweep) {
                        /* asked in this rotation already: the next one asks again */
                        node_schedule(c, n, epoch + 1);
                        return;
                }
                n->flags &= ~CA_NODE_BUSY;
        }
        if (epoch - stamp < limit) {
                node_schedule(c, n, stamp + limit);
                return;
        }

        /*
         * Everything about @n is read before the callback: it may free the object. hits is
         * taken to 0 meanwhile, so that a touch racing the callback counts from 0 and never
         * takes the node out of the single-use count a second time.
         */
        bytes = node_size(c, n);
        hits = atomic_exchange_explicit(&n->hits, 0, memory_order_relaxed);
        n->flags = 0;
        switch (c->ops->reclaim(c, n, c->userdata)) {
        case CA_RECLAIMED:
                c->reclaimed++;
                if (hits <= 1)
                        c->reclaimed_single_use++;
                cache_forget(c, hits, bytes);
                return;
        case CA_BUSY:
                node_restore_hits(c, n, hits);
                n->flags |= CA_NODE_BUSY;
                c->busy++;
                node_schedule(c, n, epoch + 1);
                return;
        case CA_KEEP:
        default:
                node_restore_hits(c, n, hits);
                c->kept++;
                ca_touch(c, n);
                hits = atomic_load_explicit(&n->hits, memory_order_relaxed);
                node_schedule(c, n, epoch + node_limit(c, hits));
                return;
        }
}

/*
 * The next node of the re-sweep, or NULL when it is done. Slots are taken whole onto the
 * sweep list, so a node refiled into a slot not yet swept is seen again (and refiled again,
 * harmlessly) but a node refiled into the slot being swept is not (no endless loop).
 */
static struct ca_node *sweep_next(struct ca_cache *c)
{
        while (c->sweep_left) {
                if (!list_empty(&c->sweep))
                        return node_of(c->sweep.next);
                if (--c->sweep_left == 0)
                        break;
                c->sweep_slot = (c->sweep_slot + 1) % CA_SLOTS;
                list_splice_tail_init(&c->slots[c->sweep_slot], &c->sweep);
        }
        return NULL;
}

static size_t sweep_remaining(const struct ca_cache *c)
{
        size_t left = 0;

        if (!c->sweep_left)
                return 0;
        for (unsigned i = 0; i < c->sweep_left; i++)
                left += c->slot_count[(c->sweep_slot + i) % CA_SLOTS];
        return left;
}

size_t ca_cache_age(struct ca_cache *cache, size_t budget, uint64_t deadline_usec)
{
        uint64_t start = ca_now_usec(), elapsed;
        uint32_t epoch = cache_epoch(cache);
        size_t seen = 0;

        if (budget == 0)
                budget = CA_SLICE_NODES;

        while (budget > 0) {
                bool from_sweep = list_empty(&cache->pending);
                struct ca_node *n = from_sweep ? sweep_next(cache) : node_of(cache->pending.next);

                if (!n)
                        break;
                budget--; /* spent before the callback: a busy node cannot livelock us */
                node_unlist(cache, n);
                node_age(cache, n, epoch, from_sweep);

                if (deadline_usec && ++seen % CA_CLOCK_EVERY == 0 &&
                    ca_now_usec() >= deadline_usec)
                        break;
        }

        elapsed = ca_now_usec() - start;
        cache->last_rotation_duration_usec += elapsed;
        if (elapsed > cache->longest_slice_usec)
                cache->longest_slice_usec = elapsed;
        return ca_cache_pending(cache);
}

size_t ca_cache_pending(const struct ca_cache *cache)
{
        return cache->pending_count + sweep_remaining(cache);
}

int ca_cache_set_params(struct ca_cache *cache, const struct ca_params *params)
{
        bool lowered;

        if (ca_cache_validate_params(params) < 0)
                return -EINVAL;
        lowered = params->single_use_age < cache->params.single_use_age ||
                  params->max_age < cache->params.max_age;
        cache->params = *params;
        if (!lowered)
                return 0;

        /*
         * One budgeted re-sweep of every waiting node, slot by slot from the next one due.
         * A sweep already running starts over.
         */
        if (cache->sweep_left)
                list_splice_tail_init(&cache->sweep, &cache->slots[cache->sweep_slot]);
        cache->sweep_slot = (cache_epoch(cache) + 1) % CA_SLOTS;
        cache->sweep_left = CA_SLOTS;
        list_splice_tail_init(&cache->slots[cache->sweep_slot], &cache->sweep);
        return 0;
}

void ca_cache_get_params(const struct ca_cache *cache, struct ca_params *ret)
{
        *ret = cache->params;
}

void ca_cache_stats(const struct ca_cache *cache, struct ca_stats *ret)
{
        *ret = (struct ca_stats){
                .objects = cache->objects,
                .single_use_objects =
                        atomic_load_explicit(&cache->single_use, memory_order_relaxed),
                .bytes = cache->bytes,
                .rotations = cache->rotations,
                .scanned = cache->scanned,
                .reclaimed = cache->reclaimed,
                .reclaimed_single_use = cache->reclaimed_single_use,
                .busy = cache->busy,
                .kept = cache->kept,
                .last_rotation_usec = cache->last_rotation_usec,
                .last_rotation_duration_usec = cache->last_rotation_duration_usec,
                .longest_slice_usec = cache->longest_slice_usec,
                .backlog = ca_cache_pending(cache),
        };
}

#define STAT(field, prop, kind_, unit_, help_)                                                  \
        {                                                                                       \
                .name = #field, .property = prop, .offset = offsetof(struct ca_stats, field),    \
                .kind = kind_, .unit = unit_, .help = help_                                     \
        }

/* What the bus, cacheagectl and the metrics exporter know of struct ca_stats. */
static const struct ca_stat_desc stat_descs[] = {
        STAT(objects, "Objects", CA_STAT_GAUGE, "objects", "objects in the cache"),
        STAT(single_use_objects, "SingleUseObjects", CA_STAT_GAUGE, "objects",
             "objects in the cache used in one rotation period only"),
        STAT(bytes, "Bytes", CA_STAT_GAUGE, "bytes", "size of the objects in the cache"),
        STAT(rotations, "Rotations", CA_STAT_COUNTER, "rotations", "rotations of the cache"),
        STAT(scanned, "Scanned", CA_STAT_COUNTER, "objects",
             "objects looked at by aging slices"),
        STAT(reclaimed, "Reclaimed", CA_STAT_COUNTER, "objects", "objects reclaimed"),
        STAT(reclaimed_single_use, "ReclaimedSingleUse", CA_STAT_COUNTER, "objects",
             "objects reclaimed that were used in one rotation period only"),
        STAT(busy, "Busy", CA_STAT_COUNTER, "objects",
             "objects due for reclaim that were in use (looked at again next rotation)"),
        STAT(kept, "Kept", CA_STAT_COUNTER, "objects",
             "objects due for reclaim that the adapter kept"),
        STAT(last_rotation_usec, "LastRotationUSec", CA_STAT_GAUGE, "timestamp_usec",
             "wall-clock time of the last rotation"),
        STAT(last_rotation_duration_usec, "LastRotationDurationUSec", CA_STAT_GAUGE, "usec",
             "time the aging slices of the last rotation took"),
        STAT(longest_slice_usec, "LongestSliceUSec", CA_STAT_GAUGE, "usec",
             "longest single aging slice"),
        STAT(backlog, "Backlog", CA_STAT_GAUGE, "objects",
             "objects due, waiting for an aging slice"),
};

#undef STAT

_Static_assert(sizeof(stat_descs) / sizeof(stat_descs[0]) ==
                       sizeof(struct ca_stats) / sizeof(uint64_t),
               "every field of struct ca_stats needs one descriptor in stat_descs");

const struct ca_stat_desc *ca_stat_descs(size_t *ret_n)
{
        *ret_n = sizeof(stat_descs) / sizeof(stat_descs[0]);
        return stat_descs;
}

const struct ca_stat_desc *ca_stat_desc_find(const char *name)
{
        /* snake_case and CamelCase never meet: one loop serves both spellings. */
        for (size_t i = 0; i < sizeof(stat_descs) / sizeof(stat_descs[0]); i++)
                if (strcmp(stat_descs[i].name, name) == 0 ||
                    strcmp(stat_descs[i].property, name) == 0)
                        return &stat_descs[i];
        return NULL;
}

uint64_t ca_stat_value(const struct ca_stats *stats, const struct ca_stat_desc *desc)
{
        uint64_t v;

        assert(desc->offset + sizeof(v) <= sizeof(*stats));
        memcpy(&v, (const char *)stats + desc->offset, sizeof(v));
        return v;
}

const char *ca_stat_kind_name(enum ca_stat_kind kind)
{
        switch (kind) {
        case CA_STAT_COUNTER:
                return "counter";
        case CA_STAT_GAUGE:
                return "gauge";
        }
        return NULL;
}

void ca_cache_reset_stats(struct ca_cache *cache)
{
        cache->rotations = cache->scanned = cache->reclaimed = 0;
        cache->reclaimed_single_use = cache->busy = cache->kept = 0;
        cache->last_rotation_duration_usec = cache->longest_slice_usec = 0;
}
