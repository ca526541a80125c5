/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the aging framework's refaults and adaptive ages (lib/age.c) against their
 * contract in cacheage/age.h: refault accounting exact on hand-made sequences (reclaim, insert
 * again inside and outside the window, identities colliding), the refault memory within its
 * bound, a refaulted object's own age, and ages = auto settling on a steady synthetic workload
 * and moving the right way when the workload changes.
 *
 * Objects here are keyed: each has an identity the test chooses, and "using" a key touches its
 * object when it is in the cache and inserts it (maybe a refault) when it is not.
 */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cacheage/age.h"
#include "list.h" /* container_of */

struct kobj {
        struct ca_node node;
        uint64_t identity;
        bool live;
        enum ca_status answer;
};

struct keyed {
        struct ca_cache *cache;
        struct kobj *objs;
        size_t n;
        size_t reclaimed;
};

static enum ca_status keyed_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct keyed *k = userdata;
        struct kobj *o = container_of(node, struct kobj, node);

        cr_assert(o->live, "reclaim of an object not in the cache");
        if (o->answer == CA_RECLAIMED) {
                o->live = false;
                k->reclaimed++;
        }
        return o->answer;
}

static uint64_t keyed_identity(const struct ca_cache *cache, const struct ca_node *node,
                               void *userdata)
{
        return container_of(node, const struct kobj, node)->identity;
}

static const struct ca_cache_ops keyed_ops = {
        .reclaim = keyed_reclaim,
        .identity = keyed_identity,
};

static struct keyed *keyed_new(size_t n, const struct ca_params *p)
{
        struct keyed *k = calloc(1, sizeof(*k));

        cr_assert_not_null(k);
        k->objs = calloc(n, sizeof(*k->objs));
        cr_assert_not_null(k->objs);
        k->n = n;
        for (size_t i = 0; i < n; i++) {
                k->objs[i].identity = i + 1;
                k->objs[i].answer = CA_RECLAIMED;
        }
        cr_assert_eq(ca_cache_new(&keyed_ops, k, p, &k->cache), 0);
        return k;
}

static void keyed_free(struct keyed *k)
{
        cr_assert_null(ca_cache_free(k->cache));
        free(k->objs);
        free(k);
}

/* Use object @i now: touched when cached, else inserted. */
static void use(struct keyed *k, size_t i)
{
        struct kobj *o = &k->objs[i];

        if (o->live) {
                ca_touch(k->cache, &o->node);
                return;
        }
        o->node = (struct ca_node){ 0 };
        ca_cache_insert(k->cache, &o->node);
        o->live = true;
}

static void step(struct keyed *k)
{
        ca_cache_rotate(k->cache);
        while (ca_cache_age(k->cache, 0, 0) > 0)
                ;
}

static struct ca_stats stats(const struct keyed *k)
{
        struct ca_stats s;

        ca_cache_stats(k->cache, &s);
        return s;
}

static void steps_until_gone(struct keyed *k, size_t i, uint32_t expect_epoch)
{
        while (k->objs[i].live) {
                cr_assert_lt(ca_cache_epoch(k->cache), expect_epoch, "object %zu still there",
                             i);
                step(k);
        }
        cr_assert_eq(ca_cache_epoch(k->cache), expect_epoch, "object %zu went at epoch %u", i,
                     ca_cache_epoch(k->cache));
}

/* ------------------------------------------------------------------------------------------ */

Test(refault, counted_inside_the_window_not_outside)
{
        struct ca_params p = { .single_use_age = 1, .max_age = 4, .refault_window = 3 };
        struct keyed *k = keyed_new(4, &p);
        uint64_t hist[CA_REFAULT_BUCKETS];
        struct ca_stats s;

        use(k, 0);
        steps_until_gone(k, 0, 1); /* single use: gone after 1 rotation */
        use(k, 0);                 /* back in the period of its reclaim: distance 0 */
        s = stats(k);
        cr_assert_eq(s.refaults, 1);
        cr_assert_eq(s.single_use_objects, 0, "a refault starts as reused");
        cr_assert_eq(s.remembered, 0, "a refault takes its identity out of the memory");
        steps_until_gone(k, 0, 5); /* reused: max_age 4 after its stamp, epoch 1 */

        for (int i = 0; i < 3; i++)
                step(k);
        use(k, 0); /* 3 rotations after its reclaim: the window's edge, still a refault */
        cr_assert_eq(stats(k).refaults, 2);
        steps_until_gone(k, 0, 12);

        for (int i = 0; i < 4; i++)
                step(k);
        use(k, 0); /* 4 > 3 rotations: too late to be aging's mistake */
        s = stats(k);
        cr_assert_eq(s.refaults, 2);
        cr_assert_eq(s.single_use_objects, 1, "not a refault: single use again");

        /* Never reclaimed, or removed by its owner rather than reclaimed: no refault. */
        use(k, 1);
        ca_cache_remove(k->cache, &k->objs[1].node);
        k->objs[1].live = false;
        use(k, 1);
        use(k, 2);
        s = stats(k);
        cr_assert_eq(s.refaults, 2);
        cr_assert_eq(s.reclaimed, 3);
        cr_assert_eq(s.refault_share_ppm, 2 * 1000000 / 3);

        ca_cache_refault_histogram(k->cache, hist);
        cr_assert_eq(hist[0], 1, "distance 0");
        cr_assert_eq(hist[2], 1, "distance 3 is in the bucket of 2 and 3");
        cr_assert_eq(hist[0] + hist[1] + hist[2] + hist[3] + hist[4] + hist[5] + hist[6] + hist[7],
                     s.refaults, "the buckets add up to the refaults");
        for (unsigned b = 0; b < CA_REFAULT_BUCKETS; b++)
                cr_assert_eq(ca_refault_bucket_floor(b), b ? 1u << (b - 1) : 0u);
        keyed_free(k);
}

Test(refault, busy_and_kept_objects_are_not_remembered)
{
        struct ca_params p = { .single_use_age = 1, .max_age = 1, .refault_window = 8 };
        struct keyed *k = keyed_new(2, &p);

        use(k, 0);
        use(k, 1);
        k->objs[0].answer = CA_BUSY;
        k->objs[1].answer = CA_KEEP;
        step(k);
        cr_assert_eq(stats(k).remembered, 0);
        cr_assert_eq(stats(k).reclaimed, 0);
        keyed_free(k);
}

Test(refault, colliding_identities_are_one)
{
        struct ca_params p = { .single_use_age = 1, .max_age = 1, .refault_window = 8 };
        struct keyed *k = keyed_new(4, &p);

        k->objs[1].identity = k->objs[0].identity; /* two keys hashed alike */
        use(k, 0);
        step(k);
        cr_assert(!k->objs[0].live);
        use(k, 2); /* another identity: nothing */
        cr_assert_eq(stats(k).refaults, 0);
        use(k, 1); /* the same identity as the reclaimed object: taken for it */
        cr_assert_eq(stats(k).refaults, 1);
        use(k, 0); /* the entry went with the first: the second is new */
        cr_assert_eq(stats(k).refaults, 1);
        keyed_free(k);
}

Test(refault, no_identity_op_or_no_window_counts_nothing)
{
        static const struct ca_cache_ops no_identity = { .reclaim = keyed_reclaim };
        struct ca_params p = { .single_use_age = 1, .max_age = 1, .refault_window = 8 };
        struct keyed *k = keyed_new(1, &p);
        struct ca_cache *c;

        cr_assert_null(ca_cache_free(k->cache));
        cr_assert_eq(ca_cache_new(&no_identity, k, &p, &c), 0);
        k->cache = c;
        use(k, 0);
        step(k);
        use(k, 0);
        cr_assert_eq(stats(k).refaults, 0);
        cr_assert_eq(stats(k).refault_memory_bytes, 0);
        keyed_free(k);

        p.refault_window = 0;
        k = keyed_new(1, &p);
        use(k, 0);
        step(k);
        use(k, 0);
        cr_assert_eq(stats(k).refaults, 0);
        cr_assert_eq(stats(k).refault_memory_bytes, 0);
        /* turned on at run time: remembered from then on */
        p.refault_window = 8;
        cr_assert_eq(ca_cache_set_params(k->cache, &p), 0);
        step(k);
        step(k);
        cr_assert(!k->objs[0].live);
        use(k, 0);
        cr_assert_eq(stats(k).refaults, 1);
        /* off again: everything forgotten */
        step(k);
        step(k);
        p.refault_window = 0;
        cr_assert_eq(ca_cache_set_params(k->cache, &p), 0);
        cr_assert_eq(stats(k).remembered, 0);
        use(k, 0);
        cr_assert_eq(stats(k).refaults, 1);
        keyed_free(k);
}

/*
 * The memory never holds more identities than the cache has held objects at its largest (or
 * CA_REFAULT_MEMORY_MIN), nor takes more than CA_REFAULT_ENTRY_BYTES for each: through growth,
 * churn of identities never seen again, and a shrinking cache. And it is big enough for what it
 * is for: a cache emptied by aging and refilled with the same keys sees them as refaults.
 */
Test(refault, memory_stays_within_its_bound)
{
        enum { N = 20000, HELD = 5000 };
        struct ca_params p = { .single_use_age = 1, .max_age = 1, .refault_window = 1000 };
        struct keyed *k = keyed_new(N, &p);
        uint64_t peak = 0, refaults;
        size_t next = 0;

        for (uint32_t r = 0; r < 400; r++) {
                /* rises to HELD new objects per rotation, then falls to 50 */
                size_t burst = r < 100 ? (r + 1) * (HELD / 100) : r < 200 ? HELD : 50;
                struct ca_stats s;
                uint64_t bound;

                for (size_t i = 0; i < burst; i++) {
                        k->objs[next].identity = ((uint64_t)r << 32) | i; /* never seen again */
                        k->objs[next].live = false;
                        use(k, next);
                        next = (next + 1) % N;
                }
                s = stats(k);
                if (s.objects > peak)
                        peak = s.objects;
                step(k);
                s = stats(k);
                bound = peak > CA_REFAULT_MEMORY_MIN ? peak : CA_REFAULT_MEMORY_MIN;
                cr_assert_leq(s.remembered, bound, "rotation %u: %llu remembered, bound %llu", r,
                              (unsigned long long)s.remembered, (unsigned long long)bound);
                cr_assert_leq(s.refault_memory_bytes, bound * CA_REFAULT_ENTRY_BYTES,
                              "rotation %u: %llu bytes", r,
                              (unsigned long long)s.refault_memory_bytes);
                cr_assert_leq(s.remembered * CA_REFAULT_ENTRY_BYTES, s.refault_memory_bytes);
                cr_assert_eq(s.refaults, 0, "rotation %u: no identity came back", r);
        }
        keyed_free(k);

        /* HELD keys, all reclaimed at once after a pause, all wanted again */
        k = keyed_new(HELD, &p);
        for (size_t i = 0; i < HELD; i++)
                use(k, i);
        step(k);
        step(k); /* the memory is sized to the cache at a rotation */
        cr_assert_eq(stats(k).objects, 0);
        for (size_t i = 0; i < HELD; i++)
                use(k, i);
        refaults = stats(k).refaults;
        cr_assert_geq(refaults, HELD * 95 / 100, "%llu of %d refaults seen",
                      (unsigned long long)refaults, HELD);
        keyed_free(k);
}

/* ------------------------------------------------------------------------------------------ */
/* ages = auto */

Test(refault, auto_validation)
{
        static const struct ca_params bad[] = {
                { .single_use_age = 1, .max_age = 2, .auto_ages = true,
                  .target_refault_ppm = 1000 }, /* no window */
                { .single_use_age = 1, .max_age = 2, .refault_window = 4, .auto_ages = true },
                { .single_use_age = 1, .max_age = 2, .refault_window = 4, .auto_ages = true,
                  .target_refault_ppm = CA_TARGET_REFAULT_MAX_PPM + 1 },
                { .single_use_age = 1, .max_age = 2, .refault_window = CA_REFAULT_WINDOW_MAX + 1 },
        };
        struct keyed *k = keyed_new(1, NULL);
        struct ca_params p;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cr_assert_eq(ca_cache_validate_params(&bad[i]), -EINVAL, "case %zu", i);
                cr_assert_eq(ca_cache_set_params(k->cache, &bad[i]), -EINVAL, "case %zu", i);
        }
        ca_cache_get_params(k->cache, &p);
        cr_assert_eq(p.refault_window, CA_REFAULT_WINDOW_DEFAULT, "the defaults stay");
        cr_assert_eq(p.target_refault_ppm, CA_TARGET_REFAULT_DEFAULT_PPM);
        cr_assert(!p.auto_ages);
        keyed_free(k);
}

/*
 * A refaulted object gets twice the idle gap it showed: reclaimed after 1 idle rotation, back
 * 3 rotations later, it may now stay idle 2 * (1 + 3) = 8 rotations, where the cache's own
 * max_age is 2.
 */
Test(refault, auto_gives_a_refault_its_own_age)
{
        struct ca_params p = { .single_use_age = 1, .max_age = 2, .refault_window = 16,
                               .auto_ages = true, .target_refault_ppm = 20000 };
        struct keyed *k = keyed_new(2, &p);

        use(k, 0);
        steps_until_gone(k, 0, 1);
        for (int i = 0; i < 3; i++)
                step(k);
        use(k, 0); /* epoch 4 */
        cr_assert_eq(stats(k).own_aged_objects, 1);
        cr_assert_eq(stats(k).current_max_age, 2, "too few reclaims to move the cache's ages");
        steps_until_gone(k, 0, 12);
        cr_assert_eq(stats(k).own_aged_objects, 0);
        keyed_free(k);
}

/*
 * A workload of new keys, NEW per rotation; with @comeback each comes back once, after a gap
 * drawn from 1..GAP_MAX rotations (a fixed random sequence). Returns the ages in force after
 * each rotation in @max_ages (n entries).
 */
enum { NEW = 200, GAP_MAX = 20, POOL = NEW * (GAP_MAX + 2 * CA_OWN_AGE_MAX + 2) };

struct workload {
        struct keyed *k;
        uint64_t rng;
        uint64_t next_identity;
        uint32_t due[POOL];   /* the epoch at which slot i comes back; 0 = never */
        size_t next;
};

static uint32_t rnd(struct workload *w, uint32_t n)
{
        w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
        return (uint32_t)((w->rng >> 33) % n);
}

static void run_workload(struct workload *w, bool comeback, size_t rotations, uint32_t *max_ages)
{
        for (size_t r = 0; r < rotations; r++) {
                uint32_t epoch = ca_cache_epoch(w->k->cache);

                for (size_t i = 0; i < POOL; i++)
                        if (w->due[i] == epoch && epoch) {
                                use(w->k, i);
                                w->due[i] = 0;
                        }
                for (size_t i = 0; i < NEW; i++) {
                        size_t slot = w->next;

                        w->next = (w->next + 1) % POOL;
                        cr_assert_eq(w->due[slot], 0, "pool too small");
                        if (w->k->objs[slot].live) {
                                ca_cache_remove(w->k->cache, &w->k->objs[slot].node);
                                w->k->objs[slot].live = false;
                        }
                        w->k->objs[slot].identity = ++w->next_identity;
                        use(w->k, slot);
                        if (comeback)
                                w->due[slot] = epoch + 1 + rnd(w, GAP_MAX);
                }
                step(w->k);
                max_ages[r] = (uint32_t)stats(w->k).current_max_age;
        }
}

/* The most rotations in a row with the same age in @ages[from, to). */
static unsigned longest_at_one_age(const uint32_t *ages, size_t from, size_t to)
{
        unsigned run = 1, longest = 1;

        for (size_t i = from + 1; i < to; i++) {
                run = ages[i] == ages[i - 1] ? run + 1 : 1;
                if (run > longest)
                        longest = run;
        }
        return longest;
}

/* How many times the ages in force changed in @ages[from, to). */
static unsigned moves(const uint32_t *ages, size_t from, size_t to)
{
        unsigned n = 0;

        for (size_t i = from + 1; i < to; i++)
                n += ages[i] != ages[i - 1];
        return n;
}

Test(refault, auto_shortens_when_nothing_comes_back_and_lengthens_when_things_do, .timeout = 120)
{
        enum { PHASE = 400 };
        struct ca_params p = { .single_use_age = 24, .max_age = 32, .refault_window = 64,
                               .auto_ages = true, .target_refault_ppm = 50000 };
        struct workload *w = calloc(1, sizeof(*w));
        uint32_t a[PHASE], b[PHASE];
        struct ca_stats s0, s1;

        cr_assert_not_null(w);
        w->rng = 42;
        w->k = keyed_new(POOL, &p);
        cr_assert_eq(stats(w->k).current_max_age, 32, "auto starts from the limits");
        cr_assert_eq(stats(w->k).current_single_use_age, 24);

        /* nothing comes back: the ages go down to 1 and stay */
        run_workload(w, false, PHASE, a);
        for (size_t i = 1; i < PHASE; i++)
                cr_assert_leq(a[i], a[i - 1], "rotation %zu: lengthened with no refault", i);
        cr_assert_eq(a[PHASE - 1], 1);
        cr_assert_eq(stats(w->k).current_single_use_age, 1);

        /*
         * Everything comes back once, 1 to 20 rotations later: the ages go up, then settle,
         * one age kept while the age below it is known to be too short (AUTO_FLOOR_WINDOWS
         * refault windows, 256 rotations here). Then the floor is forgotten and one probe
         * down finds it again: a few moves every 4 windows, no more.
         */
        run_workload(w, true, PHASE / 4, b);
        s0 = stats(w->k);
        run_workload(w, true, PHASE, b);
        s1 = stats(w->k);
        cr_assert_gt(b[PHASE - 1], 8, "ages stayed short (%u) with things coming back",
                     b[PHASE - 1]);
        cr_assert_leq(b[PHASE - 1], 32);
        cr_assert_geq(longest_at_one_age(b, 0, PHASE), 200, "no age kept 200 rotations (%u)",
                      longest_at_one_age(b, 0, PHASE));
        cr_assert_leq(moves(b, 0, PHASE), 16, "%u moves on a steady workload",
                      moves(b, 0, PHASE));
        /* and the share settled within the band around the target (2.5%..10%, with margin) */
        {
                uint64_t refaults = s1.refaults - s0.refaults;
                uint64_t reclaimed = s1.reclaimed - s0.reclaimed;
                uint64_t share = refaults * 1000000 / reclaimed;

                cr_assert(share >= 50000 / 4 && share <= 50000 * 4,
                          "share %llu ppm far from the target",
                          (unsigned long long)share);
        }
        keyed_free(w->k);
        free(w);
}

/*
 * Rounds as a session has them: FILES keys used all together, the gap between two rounds
 * cycling through @gaps, and JUNK new keys a rotation never used again, under @p: the max_age
 * in force after each rotation into @ages; returns the refaults counted.
 */
enum { ROUNDS_ROTATIONS = 720, ROUNDS_FILES = 400 };

static uint64_t rounds_ages(const struct ca_params *p, const uint32_t gaps[4],
                            uint32_t ages[ROUNDS_ROTATIONS])
{
        enum { JUNK = 30 };
        struct keyed *k = keyed_new(ROUNDS_FILES + (size_t)JUNK * ROUNDS_ROTATIONS, p);
        uint32_t next_round = 0;
        size_t junk = ROUNDS_FILES, round = 0;
        uint64_t refaults;

        for (uint32_t r = 0; r < ROUNDS_ROTATIONS; r++) {
                if (r == next_round) {
                        for (size_t i = 0; i < ROUNDS_FILES; i++)
                                use(k, i);
                        next_round = r + gaps[round++ % 4];
                }
                for (size_t j = 0; j < JUNK; j++)
                        use(k, junk++);
                step(k);
                ages[r] = (uint32_t)stats(k).current_max_age;
        }
        refaults = stats(k).refaults;
        keyed_free(k);
        return refaults;
}

/*
 * A session's shape: FILES keys used all together in rounds, the gap between two rounds
 * cycling through 12, 20, 16 and 24 rotations, and JUNK new keys a rotation never used again;
 * limits 32/64. The ages go down from the limits, overshoot once into the first returns'
 * refaults (the rounds' gaps), come back up, and then keep one age: the age that proved too
 * short is not gone back to for AUTO_FLOOR_WINDOWS refault windows, though no refault comes
 * meanwhile (each file has its own age by then). Once that is over, nothing comes back that
 * the ages steer by, and they go down to 1 rotation and stay there. Before the floor, the ages
 * never stayed put: down in the quiet between two rounds, up at the next one, never 35
 * rotations at one age (lib/age.c, AUTO_FLOOR_WINDOWS).
 */
Test(refault, auto_keeps_an_age_through_rounds, .timeout = 120)
{
        enum { WINDOW = 64 };
        static const uint32_t gaps[] = { 12, 20, 16, 24 };
        struct ca_params p = { .single_use_age = 32, .max_age = 64, .refault_window = WINDOW,
                               .auto_ages = true,
                               .target_refault_ppm = CA_TARGET_REFAULT_DEFAULT_PPM };
        uint32_t ages[ROUNDS_ROTATIONS], too_short = 0, up_at = 0, longest = 0, run = 0;
        uint64_t refaults = rounds_ages(&p, gaps, ages);

        for (uint32_t r = 0; r < ROUNDS_ROTATIONS; r++) {
                if (r > 0 && ages[r] > ages[r - 1] && !up_at) {
                        up_at = r; /* the first move up: the age before proved too short */
                        too_short = ages[r - 1];
                }
                run = r > 0 && ages[r] == ages[r - 1] ? run + 1 : 1;
                if (run > longest)
                        longest = run;
        }
        cr_assert_gt(up_at, 0, "the ages never went back up: no return was ever too short");
        cr_assert_lt(too_short, 24, "the rounds come back within 24 rotations");
        /* the floor: not back to the too-short age for four windows (less the hold) */
        for (uint32_t r = up_at; r < up_at + 4 * WINDOW - 8; r++)
                cr_assert_gt(ages[r], too_short, "rotation %u: back to %u, which proved too short",
                             r, ages[r]);
        cr_assert_geq(longest, 100, "no age kept for 100 rotations (longest %u)", longest);
        cr_assert_eq(ages[ROUNDS_ROTATIONS - 1], 1,
                     "nothing steering came back: down to 1, not %u", ages[ROUNDS_ROTATIONS - 1]);
        cr_assert_eq(refaults, ROUNDS_FILES, "each file missed once, at its first return");
}

/*
 * The lab's knob (bench-replay --controller, doc/benchmarks.md): a zeroed auto_controller is
 * the controller as built, and each variant is the one asked for: on the same rounds each
 * moves the ages otherwise than the built one and than every other variant.
 */
Test(refault, auto_controller_variants_are_selected, .timeout = 120)
{
        struct ca_params p = { .single_use_age = 32, .max_age = 64, .refault_window = 64,
                               .auto_ages = true,
                               .target_refault_ppm = CA_TARGET_REFAULT_DEFAULT_PPM };
        /* The rounds with gaps twice as long: the ages step up from above 16 rotations, where
           an eighth and a sixteenth differ. */
        static const uint32_t long_gaps[] = { 24, 40, 32, 48 };
        static uint32_t ages[_CA_AUTO_CONTROLLER_MAX][ROUNDS_ROTATIONS], zeroed[ROUNDS_ROTATIONS];
        struct keyed *k;
        struct ca_params got;

        cr_assert_eq(CA_PARAMS_DEFAULT.auto_controller, CA_AUTO_CONTROLLER_BUILT);
        cr_assert_eq(CA_AUTO_CONTROLLER_BUILT, 0, "a zeroed tail is the controller as built");
        p.auto_controller = _CA_AUTO_CONTROLLER_MAX;
        cr_assert_eq(ca_cache_validate_params(&p), -EINVAL);
        k = keyed_new(1, NULL);
        cr_assert_eq(ca_cache_set_params(k->cache, &p), -EINVAL);
        p.auto_controller = CA_AUTO_CONTROLLER_UP_QUARTER;
        cr_assert_eq(ca_cache_set_params(k->cache, &p), 0);
        ca_cache_get_params(k->cache, &got);
        cr_assert_eq(got.auto_controller, CA_AUTO_CONTROLLER_UP_QUARTER);
        keyed_free(k);

        p.auto_controller = 0;
        rounds_ages(&p, long_gaps, zeroed);
        for (uint32_t v = 0; v < _CA_AUTO_CONTROLLER_MAX; v++) {
                p.auto_controller = v;
                rounds_ages(&p, long_gaps, ages[v]);
        }
        cr_assert_arr_eq(zeroed, ages[CA_AUTO_CONTROLLER_BUILT], sizeof(zeroed),
                         "a zeroed auto_controller is not the controller as built");
        for (uint32_t v = 0; v < _CA_AUTO_CONTROLLER_MAX; v++)
                for (uint32_t w = v + 1; w < _CA_AUTO_CONTROLLER_MAX; w++)
                        cr_assert(memcmp(ages[v], ages[w], sizeof(zeroed)) != 0,
                                  "variants %u and %u move the ages alike", v, w);
}
