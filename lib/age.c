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
 *
 * Refaults: the identities of reclaimed objects wait in a set-associative table of 8-byte
 * entries, sets of GHOST_WAYS (one cache line). Each identity may live in either of two sets,
 * both chosen from its fingerprint (multiply-shifts onto any number of sets) so that the table
 * can grow without the identities; two choices fill a table nearly to the last entry before
 * anything is forgotten, where one would lose a tenth to sets that overflow early. When both
 * sets are full the oldest of their entries goes, so what is forgotten first is what is least
 * likely to come back within the window.
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
        struct ca_params params;       /* as set; with auto_ages, the limits */
        uint32_t single_use_age;       /* in force: the params', or auto's choice */
        uint32_t max_age;

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

        /* the refault memory (NULL without a window or without ops->identity) */
        struct ghost_entry *ghost;
        size_t ghost_sets;
        size_t ghost_sweep;            /* the next set the rotation sweeps */
        uint64_t remembered;
        uint64_t objects_peak;         /* the most objects held: sizes the memory */
        uint64_t refaults, refault_hist[CA_REFAULT_BUCKETS];
        uint64_t own_aged;

        /* auto_ages: refaults and reclaims of the last rotations, decaying (AUTO_SCALE units) */
        uint64_t reclaimed_total, refaults_total; /* never reset */
        uint64_t refaults_steering;    /* of refaults_total, those the ages now would still make */
        uint64_t auto_reclaimed_mark, auto_refaults_mark;
        uint64_t auto_reclaimed, auto_refaults;
        uint32_t auto_hold;            /* rotations before the next move may be taken */
        uint32_t auto_quiet;           /* rotations since a refault the ages in force make */
        uint32_t auto_floor;           /* a max_age that proved too short: stay above it ... */
        uint32_t auto_floor_until;     /* ... until this epoch (a refault window after) */
        /* A cache whose objects are not its nodes: what its owner counted (set_counts). */
        bool counted;
        uint64_t counted_objects, counted_part;
        char objects_name[CA_COUNTS_NAME_MAX], part_name[CA_COUNTS_NAME_MAX];
        char mechanism[CA_COUNTS_NAME_MAX];
        /* Its parts (ca_cache_set_parts()): the array and, after it, their names. */
        struct ca_cache_part *parts;
        size_t n_parts;
        /* Put off by its owner: why ("" when not), since when (CLOCK_REALTIME usec). */
        char deferred[CA_COUNTS_NAME_MAX];
        uint64_t deferred_since_usec;
};

/*
 * One remembered identity: a fingerprint (0: an empty entry) and, in `meta`, the low
 * GHOST_EPOCH_BITS of the epoch it was reclaimed at over the idle time it was reclaimed at
 * (saturating at 255 rotations). The rotation's sweep visits every entry well before the
 * epoch bits can wrap, and drops those older than the window.
 */
struct ghost_entry {
        uint32_t fp;
        uint32_t meta;
};

#define GHOST_WAYS 8                    /* entries per set: 64 bytes */
#define GHOST_EPOCH_BITS 24
#define GHOST_EPOCH_MASK ((1u << GHOST_EPOCH_BITS) - 1)
#define GHOST_IDLE_MAX 255u             /* rotations */
#define GHOST_SWEEP_SHARE 64            /* the rotation sweeps 1/this of the sets */

/*
 * auto_ages: the decaying sums lose 1/AUTO_DECAY per rotation (a memory of about that many
 * rotations). The ages move up by an eighth (at least one rotation) when the share is above
 * target * AUTO_BAND on at least AUTO_MIN_RECLAIMED reclaims in the sums' memory, down by an
 * eighth when it is below target / AUTO_BAND and no refault the ages in force would make came
 * for AUTO_QUIET rotations (nothing reclaimed counts as nothing come back: a cache that keeps
 * everything long reclaims little); after a move they hold still for AUTO_HOLD rotations.
 * Steps up of a sixteenth (before the floor below) climbed for the whole of a slow session
 * (session g: from 24 to 47 over 95 rotations, never 20 at one age); of a quarter, they
 * overshot and held more dead than fixed ages that missed less. Larger steps down overshot
 * into refaults on the lab's sessions. The quiet before shortening is twice the
 * share's memory: with AUTO_DECAY alone, the first descent from the limits ran ahead of the
 * returns of a session whose programs came back every 20 to 50 rotations (session g: down to
 * 12/24 in 60 rotations, then 2.2% extra misses while the refaults brought it back up).
 *
 * What makes the ages settle is the floor: a max_age at which the share was above the band
 * proved too short, and for AUTO_FLOOR_WINDOWS refault windows the ages do not shorten back
 * to it. Without it the ages cycled on the recorded sessions, whose returns come in rounds
 * (a program run again every 10 to 40 rotations): down in the quiet between two rounds, up
 * at the next one (24 -> 21 -> 24 -> 21 -> 19 -> 23, about every 60 rotations), each time
 * down paying a burst of refaults. A floor that lasted one refault window still let them
 * probe again about every 64 rotations (longest stretch at one age 10 rotations on session
 * b); four windows gave stretches of 58 to 114 rotations on the 10-minute sessions. A floor
 * is forgotten after that, so that a workload that changed is followed down again: when
 * nothing comes back, the ages go down to 1 rotation, the framework's least (what nobody asked
 * for again within a refault window is junk, and junk should go soonest; the first refaults
 * above the band bring the ages back up, and each returning object gets its own age).
 */
#define AUTO_SCALE 1024u
#define AUTO_DECAY 8u
#define AUTO_BAND 2u
#define AUTO_HOLD 4u                    /* rotations */
#define AUTO_MIN_RECLAIMED 8u           /* objects */
#define AUTO_QUIET (2 * AUTO_DECAY)     /* rotations without a steering refault to shorten */
#define AUTO_FLOOR_WINDOWS 4u           /* refault windows a too-short max_age is avoided */
#define AUTO_STEP 8u                    /* a step moves max_age by 1/this (at least 1 rotation) */

/*
 * The controller's parts, as built and as the lab's variants change one of them alone (enum
 * ca_auto_controller, `bench-replay --controller`): what the comment above says of each part
 * was measured with these.
 */
struct auto_tuning {
        uint32_t quiet;         /* rotations without a steering refault before a step down */
        uint32_t up;            /* a step up adds max_age / up (at least 1 rotation) */
        uint32_t down;          /* a step down takes max_age / down (at least 1 rotation) */
        uint32_t floor_windows; /* refault windows a too-short max_age is barred; 0: no bar */
};

static const struct auto_tuning auto_tunings[_CA_AUTO_CONTROLLER_MAX] = {
        [CA_AUTO_CONTROLLER_BUILT] = { AUTO_QUIET, AUTO_STEP, AUTO_STEP, AUTO_FLOOR_WINDOWS },
        [CA_AUTO_CONTROLLER_NO_BAR] = { AUTO_QUIET, AUTO_STEP, AUTO_STEP, 0 },
        [CA_AUTO_CONTROLLER_BAR_1_WINDOW] = { AUTO_QUIET, AUTO_STEP, AUTO_STEP, 1 },
        [CA_AUTO_CONTROLLER_QUIET_8] = { 8, AUTO_STEP, AUTO_STEP, AUTO_FLOOR_WINDOWS },
        [CA_AUTO_CONTROLLER_UP_SIXTEENTH] = { AUTO_QUIET, 16, AUTO_STEP, AUTO_FLOOR_WINDOWS },
        [CA_AUTO_CONTROLLER_UP_QUARTER] = { AUTO_QUIET, 4, AUTO_STEP, AUTO_FLOOR_WINDOWS },
        [CA_AUTO_CONTROLLER_DOWN_QUARTER] = { AUTO_QUIET, AUTO_STEP, 4, AUTO_FLOOR_WINDOWS },
};

_Static_assert(sizeof(struct ghost_entry) == CA_REFAULT_ENTRY_BYTES, "entry size is stated");
_Static_assert(CA_REFAULT_MEMORY_MIN % GHOST_WAYS == 0, "whole sets");
_Static_assert(CA_REFAULT_WINDOW_MAX < (1u << (GHOST_EPOCH_BITS - 1)) - GHOST_SWEEP_SHARE,
               "the sweep must drop an entry before its epoch bits wrap");
_Static_assert(CA_OWN_AGE_MAX <= 0xff >> CA_NODE_AGE_SHIFT, "own age fits the flags");
_Static_assert((CA_NODE_LINKED | CA_NODE_BUSY) < (1u << CA_NODE_AGE_SHIFT), "flags overlap");

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
        if (p->refault_window > CA_REFAULT_WINDOW_MAX)
                return -EINVAL;
        /* auto_ages steers by refaults: without a memory of the reclaimed it would be blind */
        if (p->auto_ages && (p->refault_window == 0 || p->target_refault_ppm < 1 ||
                             p->target_refault_ppm > CA_TARGET_REFAULT_MAX_PPM))
                return -EINVAL;
        if (p->auto_controller >= _CA_AUTO_CONTROLLER_MAX)
                return -EINVAL;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the refault memory */

/* splitmix64's finaliser: an adapter's identity need not be well mixed. */
static uint64_t mix64(uint64_t x)
{
        x ^= x >> 30;
        x *= UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 27;
        x *= UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

static uint32_t ghost_fp(uint64_t identity)
{
        uint32_t fp = (uint32_t)(mix64(identity) >> 32);

        return fp ? fp : 1;
}

static size_t ghost_capacity(const struct ca_cache *c)
{
        return c->ghost_sets * GHOST_WAYS;
}

/* Rotations since the entry's reclaim. */
static uint32_t ghost_distance(const struct ca_cache *c, const struct ghost_entry *e)
{
        return ((uint32_t)cache_epoch(c) - (e->meta >> 8)) & GHOST_EPOCH_MASK;
}

/* The two sets of @fp in a table of @sets sets (the same one twice, rarely). */
static void ghost_set_index(uint32_t fp, size_t sets, size_t ret[2])
{
        uint32_t other = fp * 0x9e3779b1u;

        other = other << 16 | other >> 16;
        ret[0] = (size_t)(((uint64_t)fp * sets) >> 32);
        ret[1] = (size_t)(((uint64_t)other * sets) >> 32);
}

static unsigned set_used(const struct ghost_entry *set)
{
        unsigned n = 0;

        for (unsigned w = 0; w < GHOST_WAYS; w++)
                n += set[w].fp != 0;
        return n;
}

/* A table of @sets sets holding the entries of the old one. Returns 0 or -ENOMEM. */
static int ghost_resize(struct ca_cache *c, size_t sets)
{
        struct ghost_entry *g = calloc(sets * GHOST_WAYS, sizeof(*g));
        size_t kept = 0;

        if (!g)
                return -ENOMEM;
        for (size_t i = 0; c->ghost && i < ghost_capacity(c); i++) {
                const struct ghost_entry *e = &c->ghost[i];
                struct ghost_entry *set, *other;
                size_t idx[2];

                if (!e->fp)
                        continue;
                ghost_set_index(e->fp, sets, idx);
                set = &g[idx[0] * GHOST_WAYS];
                other = &g[idx[1] * GHOST_WAYS];
                if (set_used(other) < set_used(set))
                        set = other;
                for (unsigned w = 0; w < GHOST_WAYS; w++)
                        if (!set[w].fp) {
                                set[w] = *e;
                                kept++;
                                break;
                        }
        }
        free(c->ghost);
        c->ghost = g;
        c->ghost_sets = sets;
        c->ghost_sweep = 0;
        c->remembered = kept;
        return 0;
}

static void ghost_off(struct ca_cache *c)
{
        free(c->ghost);
        c->ghost = NULL;
        c->ghost_sets = 0;
        c->ghost_sweep = 0;
        c->remembered = 0;
}

/*
 * Forget @identity, and say whether it was a refault: reclaimed at most refault_window
 * rotations ago; then *ret_distance is the rotations since and *ret_idle its idle time then.
 */
static bool ghost_take(struct ca_cache *c, uint64_t identity, uint32_t *ret_distance,
                       uint32_t *ret_idle)
{
        uint32_t fp = ghost_fp(identity);
        size_t idx[2];

        ghost_set_index(fp, c->ghost_sets, idx);
        for (unsigned i = 0; i < 2 * GHOST_WAYS; i++) {
                struct ghost_entry *set = &c->ghost[idx[i / GHOST_WAYS] * GHOST_WAYS];
                unsigned w = i % GHOST_WAYS;
                uint32_t distance;

                if (set[w].fp != fp)
                        continue;
                distance = ghost_distance(c, &set[w]);
                *ret_idle = set[w].meta & 0xff;
                set[w] = (struct ghost_entry){ 0 };
                c->remembered--;
                *ret_distance = distance;
                return distance <= c->params.refault_window;
        }
        return false;
}

/*
 * Remember @identity, reclaimed now after @idle rotations: in its own entry if it has one, else
 * in an empty entry of the emptier of its sets, else in place of the oldest of both.
 */
static void ghost_put(struct ca_cache *c, uint64_t identity, uint32_t idle)
{
        uint32_t fp = ghost_fp(identity);
        struct ghost_entry *victim = NULL, *empty = NULL;
        unsigned empty_used = GHOST_WAYS;
        uint32_t oldest = 0;
        size_t idx[2];

        ghost_set_index(fp, c->ghost_sets, idx);
        for (unsigned s = 0; s < 2 && !(s == 1 && idx[1] == idx[0]); s++) {
                struct ghost_entry *set = &c->ghost[idx[s] * GHOST_WAYS];
                unsigned used = set_used(set);

                for (unsigned w = 0; w < GHOST_WAYS; w++) {
                        uint32_t distance;

                        if (set[w].fp == fp) {
                                empty = NULL;
                                victim = &set[w];
                                goto found;
                        }
                        if (!set[w].fp) {
                                if (used < empty_used) {
                                        empty = &set[w];
                                        empty_used = used;
                                }
                                continue;
                        }
                        distance = ghost_distance(c, &set[w]);
                        if (!victim || distance > oldest) {
                                victim = &set[w];
                                oldest = distance;
                        }
                }
        }
        if (empty)
                victim = empty;
found:
        if (!victim->fp)
                c->remembered++;
        victim->fp = fp;
        victim->meta = ((uint32_t)cache_epoch(c) & GHOST_EPOCH_MASK) << 8 |
                       (idle < GHOST_IDLE_MAX ? idle : GHOST_IDLE_MAX);
}

/*
 * At each rotation: drop what fell out of the window from 1/GHOST_SWEEP_SHARE of the sets, and
 * grow the table to the cache's high-water mark (in whole sets, rounded down) once that is a
 * quarter above what it holds, so that growing costs O(1) per insert. A failed allocation
 * leaves the table as it was.
 */
static void ghost_rotate(struct ca_cache *c)
{
        size_t n = c->ghost_sets / GHOST_SWEEP_SHARE ? c->ghost_sets / GHOST_SWEEP_SHARE : 1;
        uint64_t capacity = ghost_capacity(c);

        for (size_t i = 0; i < n; i++) {
                struct ghost_entry *set = &c->ghost[c->ghost_sweep * GHOST_WAYS];

                for (unsigned w = 0; w < GHOST_WAYS; w++)
                        if (set[w].fp && ghost_distance(c, &set[w]) > c->params.refault_window) {
                                set[w] = (struct ghost_entry){ 0 };
                                c->remembered--;
                        }
                if (++c->ghost_sweep == c->ghost_sets)
                        c->ghost_sweep = 0;
        }
        if (c->objects_peak >= capacity + capacity / 4 &&
            c->objects_peak / GHOST_WAYS <= SIZE_MAX / GHOST_WAYS / sizeof(struct ghost_entry))
                (void)ghost_resize(c, (size_t)(c->objects_peak / GHOST_WAYS));
}

static unsigned refault_bucket(uint32_t distance)
{
        unsigned b = 0;

        while (distance && b < CA_REFAULT_BUCKETS - 1) {
                distance >>= 1;
                b++;
        }
        return b;
}

uint32_t ca_refault_bucket_floor(unsigned i)
{
        if (i == 0 || i >= CA_REFAULT_BUCKETS)
                return 0;
        return UINT32_C(1) << (i - 1);
}

void ca_cache_refault_histogram(const struct ca_cache *cache, uint64_t ret[CA_REFAULT_BUCKETS])
{
        memcpy(ret, cache->refault_hist, sizeof(cache->refault_hist));
}

/* ------------------------------------------------------------------------------------------ */
/* auto_ages */

/* single_use_age follows max_age in the proportion of their limits, rounded up. */
static uint32_t auto_single_use_age(const struct ca_cache *c, uint32_t max_age)
{
        uint64_t su = ((uint64_t)max_age * c->params.single_use_age + c->params.max_age - 1) /
                      c->params.max_age;

        return su < 1 ? 1 : su > c->params.single_use_age ? c->params.single_use_age : (uint32_t)su;
}

/*
 * One step of the controller, at each rotation: fold the last period's reclaims and refaults
 * into the decaying sums, and move the ages when the share left the band around the target.
 * The band, the quiet before shortening and the floor are what keep a steady workload from
 * making the ages oscillate (see AUTO_FLOOR_WINDOWS).
 */
static void auto_step(struct ca_cache *c)
{
        uint64_t reclaimed = c->reclaimed_total - c->auto_reclaimed_mark;
        uint64_t refaults = c->refaults_steering - c->auto_refaults_mark;
        const struct auto_tuning *t = &auto_tunings[c->params.auto_controller];
        uint64_t target = c->params.target_refault_ppm, share;
        uint32_t epoch = cache_epoch(c), max = c->max_age, floor;
        bool enough;

        c->auto_reclaimed_mark = c->reclaimed_total;
        c->auto_refaults_mark = c->refaults_steering;
        c->auto_reclaimed += reclaimed * AUTO_SCALE - c->auto_reclaimed / AUTO_DECAY;
        c->auto_refaults += refaults * AUTO_SCALE - c->auto_refaults / AUTO_DECAY;
        c->auto_quiet = refaults ? 0 : c->auto_quiet < UINT32_MAX ? c->auto_quiet + 1 : UINT32_MAX;
        if (c->auto_floor && (int32_t)(epoch - c->auto_floor_until) >= 0)
                c->auto_floor = 0; /* no longer known to be too short */
        if (c->auto_hold) {
                c->auto_hold--;
                return;
        }
        enough = c->auto_reclaimed >= (uint64_t)AUTO_MIN_RECLAIMED * AUTO_SCALE;
        share = c->auto_reclaimed ? c->auto_refaults * 1000000 / c->auto_reclaimed : 0;
        if (enough && share > target * AUTO_BAND) {
                /* too short: not gone back to for AUTO_FLOOR_WINDOWS refault windows */
                if (t->floor_windows && max >= c->auto_floor) {
                        c->auto_floor = max;
                        c->auto_floor_until = epoch + t->floor_windows * c->params.refault_window;
                }
                max += max / t->up ? max / t->up : 1;
        } else if (share * AUTO_BAND < target && c->auto_quiet >= t->quiet) {
                floor = c->auto_floor + 1;
                max -= max / t->down ? max / t->down : 1;
                if (max < floor)
                        max = floor;
        }
        if (max < 1)
                max = 1;
        if (max > c->params.max_age)
                max = c->params.max_age;
        if (max == c->max_age)
                return;
        /*
         * No re-sweep: a node filed under the old age is looked at when that comes, and refiled
         * under the new one; the controller's steps are small, so is the delay.
         */
        c->max_age = max;
        c->single_use_age = auto_single_use_age(c, max);
        /*
         * Only AUTO_HOLD after shortening too: the floor bounds an overshoot, where waiting a
         * single_use_age after each step down kept the ages near their limits for the whole of
         * a 10-minute session.
         */
        c->auto_hold = AUTO_HOLD;
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
        c->single_use_age = p.single_use_age;
        c->max_age = p.max_age;
        if (p.refault_window && ops->identity &&
            ghost_resize(c, CA_REFAULT_MEMORY_MIN / GHOST_WAYS) < 0) {
                free(c);
                return -ENOMEM;
        }
        for (size_t i = 0; i < CA_SLOTS; i++)
                list_init(&c->slots[i]);
        list_init(&c->pending);
        list_init(&c->sweep);
        *ret = c;
        return 0;
}

struct ca_cache *ca_cache_free(struct ca_cache *cache)
{
        if (cache) {
                free(cache->ghost);
                free(cache->parts);
        }
        free(cache);
        return NULL;
}

static uint32_t node_own_age(const struct ca_node *n)
{
        return n->flags >> CA_NODE_AGE_SHIFT;
}

/* A reused node's limit is its own age where it has one longer than the cache's. */
static uint32_t node_limit(const struct ca_cache *c, const struct ca_node *n, uint8_t hits)
{
        uint32_t own = node_own_age(n);

        if (hits <= 1)
                return c->single_use_age;
        return own > c->max_age ? own : c->max_age;
}

static uint64_t node_identity(const struct ca_cache *c, const struct ca_node *n)
{
        return c->ops->identity(c, n, c->userdata);
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

/*
 * Whether @node, being inserted, is a refault; counts it. Under auto_ages *ret_own_age is the
 * age it gets: twice the idle gap it showed (idle at reclaim, then the rotations until now).
 */
static bool insert_refault(struct ca_cache *c, const struct ca_node *node, uint32_t *ret_own_age)
{
        uint32_t distance, idle, limit, own;

        *ret_own_age = 0;
        if (!c->ghost || !ghost_take(c, node_identity(c, node), &distance, &idle))
                return false;
        c->refaults++;
        c->refaults_total++;
        /*
         * auto_ages steers by the refaults that the ages in force would still make: one that
         * idled at least today's single_use_age before it came back (it would be reclaimed
         * first again). A refault of an object dropped under shorter ages, before the last
         * lengthening, says nothing of these and would only push them further.
         */
        if (idle + distance >= c->single_use_age)
                c->refaults_steering++;
        c->refault_hist[refault_bucket(distance)]++;
        if (!c->params.auto_ages)
                return true;
        limit = CA_OWN_AGE_MAX;
        own = 2 * (idle + distance);
        *ret_own_age = own < 1 ? 1 : own > limit ? limit : own;
        return true;
}

void ca_cache_insert(struct ca_cache *cache, struct ca_node *node)
{
        uint32_t epoch = cache_epoch(cache), own;
        bool refault;

        assert(!ca_node_linked(node));
        refault = insert_refault(cache, node, &own);
        atomic_store_explicit(&node->stamp, epoch, memory_order_relaxed);
        /* a refault starts as reused: the mistake is not made twice */
        atomic_store_explicit(&node->hits, refault ? 2 : 1, memory_order_relaxed);
        node->flags = (uint8_t)(CA_NODE_LINKED | own << CA_NODE_AGE_SHIFT);
        if (!refault)
                atomic_fetch_add_explicit(&cache->single_use, 1, memory_order_relaxed);
        if (own)
                cache->own_aged++;
        if (++cache->objects > cache->objects_peak)
                cache->objects_peak = cache->objects;
        cache->bytes += node_size(cache, node);
        node_schedule(cache, node, epoch + node_limit(cache, node, refault ? 2 : 1));
}

/*
 * Account for a node of @hits and @bytes leaving the cache. Takes no node: after a reclaim
 * callback answered CA_RECLAIMED the node's memory may be gone.
 */
static void cache_forget(struct ca_cache *c, uint8_t hits, size_t bytes, bool own_aged)
{
        if (hits <= 1)
                atomic_fetch_sub_explicit(&c->single_use, 1, memory_order_relaxed);
        if (own_aged)
                c->own_aged--;
        assert(c->objects > 0);
        c->objects--;
        c->bytes -= bytes;
}

void ca_cache_remove(struct ca_cache *cache, struct ca_node *node)
{
        bool own_aged = node_own_age(node) != 0;

        if (!ca_node_linked(node))
                return;
        node_unlist(cache, node);
        node->flags = 0;
        cache_forget(cache, atomic_load_explicit(&node->hits, memory_order_relaxed),
                     node_size(cache, node), own_aged);
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
        if (cache->ghost)
                ghost_rotate(cache);
        if (cache->params.auto_ages && cache->ghost) /* no refaults to steer by: fixed */
                auto_step(cache);

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

        n->flags |= CA_NODE_LINKED;
        if (raced)
                node_bump_hits(c, n);
}

/* Look at @n, off every list: reclaim it when idle past its limit, else refile it. */
static void node_age(struct ca_cache *c, struct ca_node *n, uint32_t epoch, bool from_sweep)
{
        uint32_t stamp = atomic_load_explicit(&n->stamp, memory_order_relaxed);
        uint8_t hits = atomic_load_explicit(&n->hits, memory_order_relaxed);
        uint32_t limit = node_limit(c, n, hits);
        uint64_t identity = 0;
        bool own_aged;
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
        if (c->ghost)
                identity = node_identity(c, n);
        own_aged = node_own_age(n) != 0;
        hits = atomic_exchange_explicit(&n->hits, 0, memory_order_relaxed);
        n->flags &= (uint8_t)~(CA_NODE_LINKED | CA_NODE_BUSY);
        switch (c->ops->reclaim(c, n, c->userdata)) {
        case CA_RECLAIMED:
                c->reclaimed++;
                c->reclaimed_total++;
                if (hits <= 1)
                        c->reclaimed_single_use++;
                cache_forget(c, hits, bytes, own_aged);
                if (c->ghost)
                        ghost_put(c, identity, epoch - stamp);
                return;
        case CA_BUSY:
                node_restore_hits(c, n, hits);
                n->flags |= CA_NODE_BUSY;
                c->busy++;
                node_schedule(c, n, epoch + 1);
                return;
        case CA_KEEP:
        default:
                /*
                 * Kept is not used: no touch, no step towards reused. The adapter's reason (a
                 * directory's children) may end any time, so it is asked again at the next
                 * rotation, as a busy node is; then, idle past its limit still, it goes. (When
                 * a kept node counted as touched, a directory outlived its last child by a whole
                 * max_age.) A use the adapter knows of is its own ca_touch() in the callback.
                 */
                node_restore_hits(c, n, hits);
                n->flags |= CA_NODE_BUSY;
                c->kept++;
                node_schedule(c, n, epoch + 1);
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
        uint32_t single_use_age, max_age;
        bool lowered;

        if (ca_cache_validate_params(params) < 0)
                return -EINVAL;
        single_use_age = params->single_use_age;
        max_age = params->max_age;
        if (params->refault_window && cache->ops->identity && !cache->ghost) {
                /* the smallest memory now; the next rotation sizes it to the cache */
                if (ghost_resize(cache, CA_REFAULT_MEMORY_MIN / GHOST_WAYS) < 0)
                        return -ENOMEM;
        } else if (!params->refault_window && cache->ghost) {
                ghost_off(cache);
        }
        if (params->auto_ages && cache->params.auto_ages && cache->ghost) {
                /* auto goes on from where it is, within the new limits */
                if (cache->max_age < max_age)
                        max_age = cache->max_age;
                if (cache->single_use_age < single_use_age)
                        single_use_age = cache->single_use_age;
                if (single_use_age > max_age)
                        single_use_age = max_age;
        } else if (params->auto_ages) {
                /* auto starts from the limits, with no history */
                cache->auto_reclaimed = cache->auto_refaults = 0;
                cache->auto_reclaimed_mark = cache->reclaimed_total;
                cache->auto_refaults_mark = cache->refaults_steering;
                cache->auto_hold = cache->auto_quiet = cache->auto_floor = 0;
        }
        lowered = single_use_age < cache->single_use_age || max_age < cache->max_age;
        cache->params = *params;
        cache->single_use_age = single_use_age;
        cache->max_age = max_age;
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
                .refaults = cache->refaults,
                .refault_share_ppm =
                        cache->reclaimed ? cache->refaults * 1000000 / cache->reclaimed : 0,
                .remembered = cache->remembered,
                .refault_memory_bytes = ghost_capacity(cache) * sizeof(struct ghost_entry),
                .current_single_use_age = cache->single_use_age,
                .current_max_age = cache->max_age,
                .own_aged_objects = cache->own_aged,
        };
        if (cache->counted) {
                ret->objects = cache->counted_objects;
                ret->single_use_objects = 0;
                ret->part_objects = cache->counted_part;
        } else {
                ret->part_objects = ret->single_use_objects;
        }
}

/* A name of ca_cache_counts: what status lines print, so short, lower case and plain. */
static bool counts_name_ok(const char *s, bool may_be_empty)
{
        size_t n;

        if (!s)
                return false;
        n = strlen(s);
        if (n >= CA_COUNTS_NAME_MAX || (n == 0 && !may_be_empty))
                return false;
        /* Parentheses for a qualified mechanism: "report (read-only)". */
        return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-() ") == n;
}

int ca_cache_set_counts(struct ca_cache *cache, const struct ca_cache_counts *counts)
{
        if (!counts || !counts_name_ok(counts->objects_name, false) ||
            !counts_name_ok(counts->part_name, false) || !counts_name_ok(counts->mechanism, true))
                return -EINVAL;
        strcpy(cache->objects_name, counts->objects_name);
        strcpy(cache->part_name, counts->part_name);
        strcpy(cache->mechanism, counts->mechanism);
        cache->counted_objects = counts->objects;
        cache->counted_part = counts->part;
        cache->counted = true;
        return 0;
}

int ca_cache_count_reclaimed(struct ca_cache *cache, uint64_t objects)
{
        if (!cache->counted)
                return -EINVAL;
        cache->reclaimed += objects;
        return 0;
}

static bool part_name_ok(const char *name)
{
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n >= CA_CACHE_PART_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
                        return false;
        return true;
}

/* A part's state: "" or printable, shorter than CA_CACHE_PART_STATE_MAX. */
static bool part_state_ok(const char *state)
{
        size_t n = strlen(state);

        if (n >= CA_CACHE_PART_STATE_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)state[i] < 0x20 || state[i] == 0x7f)
                        return false;
        return true;
}

int ca_cache_set_parts(struct ca_cache *cache, const struct ca_cache_part *parts, size_t n)
{
        struct ca_cache_part *v;
        size_t names = 0;
        char *p;

        if (n > CA_CACHE_PARTS_MAX || (n && !parts))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                const char *st = parts[i].state ? parts[i].state : "";

                if (!part_name_ok(parts[i].name) || !part_state_ok(st))
                        return -EINVAL;
                names += strlen(parts[i].name) + 1 + strlen(st) + 1;
        }
        v = NULL;
        if (n) {
                v = malloc(n * sizeof(*v) + names);
                if (!v)
                        return -ENOMEM;
                p = (char *)(v + n);
                for (size_t i = 0; i < n; i++) {
                        const char *st = parts[i].state ? parts[i].state : "";
                        size_t len = strlen(parts[i].name) + 1, st_len = strlen(st) + 1;

                        v[i] = parts[i];
                        v[i].name = memcpy(p, parts[i].name, len);
                        p += len;
                        v[i].state = memcpy(p, st, st_len);
                        p += st_len;
                }
        }
        free(cache->parts);
        cache->parts = v;
        cache->n_parts = n;
        return 0;
}

size_t ca_cache_get_parts(const struct ca_cache *cache, const struct ca_cache_part **ret)
{
        *ret = cache->parts;
        return cache->n_parts;
}

int ca_cache_set_deferred(struct ca_cache *cache, const char *reason)
{
        struct timespec ts;

        if (!reason) {
                cache->deferred[0] = '\0';
                cache->deferred_since_usec = 0;
                return 0;
        }
        if (!counts_name_ok(reason, false))
                return -EINVAL;
        if (strcmp(cache->deferred, reason) == 0)
                return 0;
        strcpy(cache->deferred, reason);
        clock_gettime(CLOCK_REALTIME, &ts);
        cache->deferred_since_usec = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
        return 0;
}

void ca_cache_get_deferred(const struct ca_cache *cache, const char **ret_reason,
                           uint64_t *ret_since_usec)
{
        *ret_reason = cache->deferred;
        *ret_since_usec = cache->deferred_since_usec;
}

void ca_cache_get_counts(const struct ca_cache *cache, struct ca_cache_counts *ret)
{
        struct ca_stats st;

        if (cache->counted) {
                *ret = (struct ca_cache_counts){ .objects_name = cache->objects_name,
                                                 .part_name = cache->part_name,
                                                 .mechanism = cache->mechanism,
                                                 .objects = cache->counted_objects,
                                                 .part = cache->counted_part };
                return;
        }
        ca_cache_stats(cache, &st);
        *ret = (struct ca_cache_counts){ .objects_name = "objects", .part_name = "single-use",
                                         .mechanism = "", .objects = st.objects,
                                         .part = st.single_use_objects };
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
        STAT(part_objects, "PartObjects", CA_STAT_GAUGE, "objects",
             "objects in the cache of the kind PartName names (single-use, for a cache of nodes)"),
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
        STAT(refaults, "Refaults", CA_STAT_COUNTER, "objects",
             "objects inserted again within refault_window rotations of their reclaim"),
        STAT(refault_share_ppm, "RefaultSharePpm", CA_STAT_GAUGE, "ppm",
             "refaults per million objects reclaimed"),
        STAT(remembered, "Remembered", CA_STAT_GAUGE, "objects",
             "identities of reclaimed objects in the refault memory"),
        STAT(refault_memory_bytes, "RefaultMemoryBytes", CA_STAT_GAUGE, "bytes",
             "size of the refault memory"),
        STAT(current_single_use_age, "CurrentSingleUseAge", CA_STAT_GAUGE, "rotations",
             "single_use_age in force (ages = auto moves it)"),
        STAT(current_max_age, "CurrentMaxAge", CA_STAT_GAUGE, "rotations",
             "max_age in force (ages = auto moves it)"),
        STAT(own_aged_objects, "OwnAgedObjects", CA_STAT_GAUGE, "objects",
             "objects with an age of their own, from the gap they showed when they refaulted"),
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
        cache->refaults = 0;
        memset(cache->refault_hist, 0, sizeof(cache->refault_hist));
        cache->last_rotation_duration_usec = cache->longest_slice_usec = 0;
}
