/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the aging framework (lib/age.c) against its contract in cacheage/age.h.
 *
 * Most tests drive one cache from this thread with a harness that records every reclaim
 * callback, and check after every rotation which objects are still there: the contract is
 * exact ("reclaimed after exactly N idle rotations, not one earlier"), so the tests are too.
 * The randomized test compares the library with an independent reference model, rotation
 * by rotation; the threaded one touches from four threads while this one rotates and ages.
 * The last tests are the minimal reproductions of bugs these tests found in lib/age.c.
 */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "cacheage/age.h"
#include "list.h" /* container_of */

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------------ */
/* Harness: objects in an array, a reclaim callback that records and answers as told.        */

struct obj {
        struct ca_node node;
        unsigned id;
        size_t size_bytes;
        bool live;               /* in the cache, as far as the test knows */
        enum ca_status answer;   /* what the callback answers for it */
        unsigned calls;          /* reclaim callbacks for it */
        uint32_t last_call_epoch;
        uint32_t reclaimed_epoch;
};

struct harness {
        struct ca_cache *cache;
        struct obj *objs;
        size_t n_objs;
        size_t calls;            /* reclaim callbacks, in total */
        size_t reclaimed;        /* CA_RECLAIMED answers, in total */
        size_t max_slices;       /* ca_cache_age() calls allowed by age_all() */
        bool sized;
};

static enum ca_status harness_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct harness *h = userdata;
        struct obj *o = container_of(node, struct obj, node);

        cr_assert_eq(cache, h->cache, "reclaim called with another cache");
        cr_assert(o >= h->objs && o < h->objs + h->n_objs, "reclaim called with a foreign node");
        cr_assert(o->live, "reclaim called for object %u, which is no longer in the cache", o->id);
        h->calls++;
        o->calls++;
        o->last_call_epoch = ca_cache_epoch(cache);
        if (o->answer == CA_RECLAIMED) {
                o->live = false;
                o->reclaimed_epoch = o->last_call_epoch;
                h->reclaimed++;
        }
        return o->answer;
}

static size_t harness_size(const struct ca_cache *cache, const struct ca_node *node, void *userdata)
{
        return container_of(node, const struct obj, node)->size_bytes;
}

/* Identities only count with a refault_window, which harness_new() does not give. */
static uint64_t harness_identity(const struct ca_cache *cache, const struct ca_node *node,
                                 void *userdata)
{
        return container_of(node, const struct obj, node)->id + 1;
}

static const struct ca_cache_ops harness_ops = {
        .reclaim = harness_reclaim,
        .identity = harness_identity,
};
static const struct ca_cache_ops harness_sized_ops = {
        .reclaim = harness_reclaim,
        .size = harness_size,
        .identity = harness_identity,
};

static struct harness *harness_new(size_t n_objs, uint32_t single_use_age, uint32_t max_age,
                                   bool sized)
{
        struct ca_params p = { .single_use_age = single_use_age, .max_age = max_age };
        struct harness *h = calloc(1, sizeof(*h));
        int r;

        cr_assert_not_null(h);
        h->objs = calloc(n_objs ? n_objs : 1, sizeof(struct obj));
        cr_assert_not_null(h->objs);
        h->n_objs = n_objs;
        h->sized = sized;
        h->max_slices = 10000;
        for (size_t i = 0; i < n_objs; i++) {
                h->objs[i].id = (unsigned)i;
                h->objs[i].size_bytes = 100 + i;
                h->objs[i].answer = CA_RECLAIMED;
        }
        r = ca_cache_new(sized ? &harness_sized_ops : &harness_ops, h, &p, &h->cache);
        cr_assert_eq(r, 0, "ca_cache_new: %d", r);
        return h;
}

static void harness_free(struct harness *h)
{
        if (!h)
                return;
        cr_assert_null(ca_cache_free(h->cache));
        free(h->objs);
        free(h);
}

static void insert(struct harness *h, size_t i)
{
        cr_assert(!h->objs[i].live);
        ca_cache_insert(h->cache, &h->objs[i].node);
        h->objs[i].live = true;
        cr_assert(ca_node_linked(&h->objs[i].node));
}

static void touch(struct harness *h, size_t i)
{
        ca_touch(h->cache, &h->objs[i].node);
}

static void remove_obj(struct harness *h, size_t i)
{
        ca_cache_remove(h->cache, &h->objs[i].node);
        h->objs[i].live = false;
        cr_assert(!ca_node_linked(&h->objs[i].node));
}

static struct ca_stats stats(const struct harness *h)
{
        struct ca_stats s;

        ca_cache_stats(h->cache, &s);
        return s;
}

/* Run slices until the rotation's work is done; returns the number of slices. */
static size_t age_all(struct harness *h)
{
        size_t slices = 0;

        for (;;) {
                size_t left = ca_cache_age(h->cache, 0, 0);

                slices++;
                cr_assert_eq(left, ca_cache_pending(h->cache));
                if (left == 0)
                        break;
                cr_assert(slices < h->max_slices, "aging does not converge (%zu left)", left);
        }
        cr_assert_eq(stats(h).backlog, 0);
        return slices;
}

/* One rotation and all of its aging; returns the objects reclaimed by it. */
static size_t step(struct harness *h)
{
        size_t before = h->reclaimed;

        ca_cache_rotate(h->cache);
        age_all(h);
        return h->reclaimed - before;
}

static size_t count_live(const struct harness *h)
{
        size_t n = 0;

        for (size_t i = 0; i < h->n_objs; i++)
                n += h->objs[i].live;
        return n;
}

static void set_params(struct harness *h, uint32_t single_use_age, uint32_t max_age)
{
        struct ca_params p = { .single_use_age = single_use_age, .max_age = max_age };
        int r = ca_cache_set_params(h->cache, &p);

        cr_assert_eq(r, 0, "ca_cache_set_params(%u, %u): %d", single_use_age, max_age, r);
}

/* ------------------------------------------------------------------------------------------ */
/* Single use and reuse                                                                       */

Test(age, single_use_reclaimed_after_exactly_single_use_age)
{
        static const uint32_t ages[] = { 1, 2, 3, 5, 63, 64, 65, 130 };

        for (size_t a = 0; a < ELEMENTSOF(ages); a++) {
                uint32_t age = ages[a];
                /* Object k is inserted in period k and touched 50 times within it. */
                struct harness *h = harness_new(4, age, CA_AGE_MAX, false);

                for (uint32_t epoch = 0; epoch <= age + 4; epoch++) {
                        if (epoch < 4) {
                                insert(h, epoch);
                                for (int t = 0; t < 50; t++)
                                        touch(h, epoch);
                        }
                        for (size_t k = 0; k < 4; k++) {
                                bool expect = k <= epoch && epoch < k + age;

                                cr_assert_eq(h->objs[k].live, expect,
                                             "age %u: object %zu (inserted at %zu) %s at epoch %u",
                                             age, k, k, expect ? "gone" : "still there", epoch);
                                if (!expect && k <= epoch)
                                        cr_assert_eq(h->objs[k].reclaimed_epoch, k + age);
                        }
                        step(h);
                }
                cr_assert_eq(h->calls, 4, "age %u: one callback per object", age);
                cr_assert_eq(stats(h).reclaimed_single_use, 4);
                cr_assert_eq(stats(h).single_use_objects, 0);
                harness_free(h);
        }
}

Test(age, reused_survives_until_max_age_after_last_touch)
{
        static const uint32_t max_ages[] = { 2, 3, 5, 8, 63, 64, 65, 200 };

        for (size_t a = 0; a < ELEMENTSOF(max_ages); a++) {
                uint32_t max_age = max_ages[a];
                /*
                 * Object 0: inserted at 0, touched at 1 only. Object 1: touched at 1, 2 and 3 (and
                 * many times in each). Object 2: touched at 1, then once more long after its
                 * single-use due time would have passed (at max_age, just before it goes).
                 */
                uint32_t last[3] = { 1, 3, max_age };
                struct harness *h = harness_new(3, 2, max_age, false);
                struct ca_stats s;

                for (size_t k = 0; k < 3; k++)
                        insert(h, k);
                for (uint32_t epoch = 0; epoch <= max_age * 2 + 4; epoch++) {
                        for (size_t k = 0; k < 3; k++) {
                                bool expect = epoch < last[k] + max_age;

                                cr_assert_eq(h->objs[k].live, expect,
                                             "max_age %u: object %zu (last touch %u) %s at %u",
                                             max_age, k, last[k], expect ? "gone" : "still there",
                                             epoch);
                                if (expect && (epoch == 1 || (k == 1 && epoch <= 3) ||
                                               (k == 2 && epoch == last[2])))
                                        for (int t = 0; t < 20; t++)
                                                touch(h, k);
                        }
                        if (epoch == 1)
                                cr_assert_eq(stats(h).single_use_objects, 0);
                        step(h);
                }
                s = stats(h);
                cr_assert_eq(s.reclaimed, 3);
                cr_assert_eq(s.reclaimed_single_use, 0, "reused objects are not single use");
                cr_assert_eq(h->calls, 3);
                harness_free(h);
        }
}

Test(age, touched_every_period_is_never_reclaimed)
{
        static const struct ca_params cases[] = {
                { .single_use_age = 2, .max_age = 2 },
                { .single_use_age = 2, .max_age = 8 },
                { .single_use_age = 3, .max_age = 200 },
        };

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                uint32_t sua = cases[c].single_use_age, max_age = cases[c].max_age;
                /* 0..9 hot, touched in every period; 10.. cold, one inserted per rotation. */
                struct harness *h = harness_new(10 + 500, sua, max_age, false);
                uint32_t period;

                for (size_t k = 0; k < 10; k++)
                        insert(h, k);
                for (uint32_t epoch = 0; epoch < 500; epoch++) {
                        for (size_t k = 0; k < 10; k++)
                                touch(h, k);
                        insert(h, 10 + epoch);
                        step(h);
                        /* Cold object inserted at epoch e goes at e + sua. */
                        for (uint32_t e = 0; e <= epoch; e++)
                                cr_assert_eq(h->objs[10 + e].live, epoch + 1 < e + sua);
                }
                for (size_t k = 0; k < 10; k++)
                        cr_assert_eq(h->objs[k].calls, 0, "hot object %zu asked for reclaim", k);
                cr_assert_eq(stats(h).objects, 10 + (sua - 1));
                /* Lazy re-insertion: a hot node is refiled about once per max_age (or ring). */
                period = max_age < CA_SLOTS ? max_age - 1 : CA_SLOTS - 2;
                cr_assert_leq(stats(h).scanned, 500 + 10 * (500 / period + 2),
                              "hot nodes are looked at too often: %llu",
                              (unsigned long long)stats(h).scanned);
                harness_free(h);
        }
}

Test(age, ages_beyond_the_ring_are_exact)
{
        static const struct ca_params cases[] = {
                { .single_use_age = 200, .max_age = 1000 },
                { .single_use_age = 64, .max_age = 127 },
                { .single_use_age = 63, .max_age = 128 },
                { .single_use_age = 1000, .max_age = 1000 },
        };

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                uint32_t sua = cases[c].single_use_age, max_age = cases[c].max_age;
                /* 0: single use, inserted at 0; 1: touched at 1; 2: inserted at 7, touched at 40 */
                uint32_t end[3] = { sua, 1 + max_age, 40 + max_age };
                struct harness *h = harness_new(3, sua, max_age, false);
                uint64_t scanned;

                insert(h, 0);
                insert(h, 1);
                for (uint32_t epoch = 0; epoch <= 40 + max_age + 2; epoch++) {
                        if (epoch == 1)
                                touch(h, 1);
                        if (epoch == 7)
                                insert(h, 2);
                        if (epoch == 40)
                                touch(h, 2);
                        for (size_t k = 0; k < 3; k++)
                                if (k != 2 || epoch >= 7)
                                        cr_assert_eq(h->objs[k].live, epoch < end[k],
                                                     "ages %u/%u: object %zu at epoch %u (due %u)",
                                                     sua, max_age, k, epoch, end[k]);
                        step(h);
                }
                cr_assert_eq(h->calls, 3);
                /* Each node is looked at about once per ring turn, not once per rotation. */
                scanned = stats(h).scanned;
                cr_assert_leq(scanned, 3 * ((40 + max_age) / (CA_SLOTS - 1) + 3),
                              "scanned %llu", (unsigned long long)scanned);
                harness_free(h);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* Reclaim answers                                                                            */

Test(age, busy_is_retried_at_the_next_rotation)
{
        struct harness *h = harness_new(2, 1, 4, false);
        struct ca_stats s;

        insert(h, 0);
        insert(h, 1);
        h->objs[0].answer = CA_BUSY;
        h->objs[1].answer = CA_BUSY;

        for (uint32_t epoch = 1; epoch <= 3; epoch++) {
                step(h);
                cr_assert_eq(h->objs[0].calls, epoch, "busy object asked once per rotation");
                cr_assert_eq(h->objs[0].last_call_epoch, epoch);
                /* More slices in the same rotation do not ask again. */
                cr_assert_eq(ca_cache_age(h->cache, 0, 0), 0);
                cr_assert_eq(h->objs[0].calls, epoch);
                cr_assert(h->objs[0].live && ca_node_linked(&h->objs[0].node));
        }
        s = stats(h);
        cr_assert_eq(s.busy, 6);
        cr_assert_eq(s.objects, 2);
        cr_assert_eq(s.single_use_objects, 2, "busy is not a touch");

        /* Object 1 is touched while busy: next rotation it is idle 1 < max_age, not asked. */
        touch(h, 1);
        h->objs[0].answer = CA_RECLAIMED;
        step(h);
        cr_assert(!h->objs[0].live);
        cr_assert_eq(h->objs[0].reclaimed_epoch, 4);
        cr_assert_eq(h->objs[1].calls, 3);
        h->objs[1].answer = CA_RECLAIMED;
        /* Touched at 3, max_age 4: goes at 7 exactly. */
        for (uint32_t epoch = 5; epoch <= 8; epoch++) {
                step(h);
                cr_assert_eq(h->objs[1].live, epoch < 7, "epoch %u", epoch);
        }
        s = stats(h);
        cr_assert_eq(s.reclaimed, 2);
        cr_assert_eq(s.reclaimed_single_use, 1);
        cr_assert_eq(s.busy, 6);
        harness_free(h);
}

Test(age, busy_cannot_livelock_a_slice)
{
        enum { N = 1000, B = 10 };
        struct harness *h = harness_new(N, 1, 1, false);
        size_t left;

        for (size_t i = 0; i < N; i++) {
                insert(h, i);
                h->objs[i].answer = CA_BUSY;
        }
        cr_assert_eq(ca_cache_rotate(h->cache), N);
        left = ca_cache_age(h->cache, B, 0);
        cr_assert_eq(h->calls, B, "one slice of budget %d made %zu calls", B, h->calls);
        cr_assert_eq(left, N - B);

        for (size_t slice = 1; slice < N / B; slice++) {
                uint64_t scanned = stats(h).scanned;
                size_t calls = h->calls;

                left = ca_cache_age(h->cache, B, 0);
                cr_assert_eq(h->calls - calls, B);
                cr_assert_eq(stats(h).scanned - scanned, B);
                cr_assert_eq(left, N - B * (slice + 1));
        }
        cr_assert_eq(left, 0);
        cr_assert_eq(ca_cache_age(h->cache, B, 0), 0);
        cr_assert_eq(h->calls, N, "each busy node asked once in the rotation");
        /* All of them again at the next rotation, and only then. */
        cr_assert_eq(ca_cache_rotate(h->cache), N);
        age_all(h);
        cr_assert_eq(h->calls, 2 * N);
        cr_assert_eq(stats(h).busy, 2 * N);
        harness_free(h);
}

/*
 * Kept is not a use (issue 23; it counted as a touch before, which made a directory kept for its
 * children reused and gave it a whole max_age after its last child went): the object keeps its
 * stamp and its single use, is asked at every rotation while the adapter keeps it, and goes at
 * the first one after the adapter lets it.
 */
Test(age, keep_is_not_a_use)
{
        struct harness *h = harness_new(2, 1, 4, false);
        struct ca_stats s;

        insert(h, 0);
        insert(h, 1);
        h->objs[0].answer = CA_KEEP;
        step(h); /* epoch 1: both due; 0 kept, 1 reclaimed */
        cr_assert_eq(h->objs[0].calls, 1);
        cr_assert(h->objs[0].live);
        cr_assert(!h->objs[1].live);
        s = stats(h);
        cr_assert_eq(s.kept, 1);
        cr_assert_eq(s.objects, 1);
        cr_assert_eq(s.single_use_objects, 1, "a kept object is still single use");
        cr_assert_eq(atomic_load(&h->objs[0].node.stamp), 0, "kept moved the stamp");

        /* Asked at every rotation while kept, once each. */
        for (uint32_t epoch = 2; epoch <= 4; epoch++) {
                step(h);
                cr_assert(h->objs[0].live);
                cr_assert_eq(h->objs[0].calls, epoch, "epoch %u", epoch);
        }
        cr_assert_eq(stats(h).kept, 4);

        /* Let go at 5: it goes at 5, single use still (max_age 4 would have kept it to 8). */
        h->objs[0].answer = CA_RECLAIMED;
        step(h);
        cr_assert(!h->objs[0].live);
        cr_assert_eq(h->objs[0].reclaimed_epoch, 5);
        s = stats(h);
        cr_assert_eq(s.reclaimed, 2);
        cr_assert_eq(s.reclaimed_single_use, 2, "kept is not reuse: both went as single use");
        cr_assert_eq(h->objs[0].calls, 5);
        harness_free(h);
}

/* A use the adapter knows of is its own touch in the callback, then CA_KEEP. */
static enum ca_status keep_touched_reclaim(struct ca_cache *cache, struct ca_node *node,
                                           void *userdata)
{
        unsigned *calls = userdata;

        ++*calls;
        ca_touch(cache, node);
        return CA_KEEP;
}

Test(age, keep_after_a_touch_in_the_callback_is_a_use)
{
        static const struct ca_cache_ops ops = { .reclaim = keep_touched_reclaim };
        struct ca_params p = { .single_use_age = 1, .max_age = 4 };
        struct ca_node node = { 0 };
        struct ca_cache *c;
        struct ca_stats s;
        unsigned calls = 0;

        cr_assert_eq(ca_cache_new(&ops, &calls, &p, &c), 0);
        ca_cache_insert(c, &node);
        ca_cache_rotate(c); /* 1: due, touched and kept: reused, stamped 1 */
        cr_assert_eq(ca_cache_age(c, 0, 0), 0);
        cr_assert_eq(calls, 1);
        ca_cache_stats(c, &s);
        cr_assert_eq(s.single_use_objects, 0, "the touch made it reused");
        cr_assert_eq(atomic_load(&node.stamp), 1);
        /* max_age 4 from 1: not asked again before 5 */
        for (int e = 2; e <= 4; e++) {
                ca_cache_rotate(c);
                cr_assert_eq(ca_cache_age(c, 0, 0), 0);
                cr_assert_eq(calls, 1, "asked at %d", e);
        }
        ca_cache_rotate(c);
        cr_assert_eq(ca_cache_age(c, 0, 0), 0);
        cr_assert_eq(calls, 2);
        ca_cache_remove(c, &node);
        ca_cache_free(c);
}

/* ------------------------------------------------------------------------------------------ */
/* Parameter changes                                                                          */

Test(age, lowering_max_age_applies_at_once)
{
        /* Reused objects 0..9, last touched at 1 + k: idle at epoch 12 is 11 - k. */
        struct harness *h = harness_new(10, 2, 20, false);

        for (size_t k = 0; k < 10; k++)
                insert(h, k);
        for (uint32_t epoch = 1; epoch <= 12; epoch++) {
                step(h);
                for (size_t k = 0; k < 10; k++)
                        if (epoch == 1 || epoch == 1 + k)
                                touch(h, k);
        }
        cr_assert_eq(h->calls, 0);
        cr_assert_eq(ca_cache_epoch(h->cache), 12);

        set_params(h, 2, 5);
        cr_assert_eq(h->calls, 0, "set_params itself reclaims nothing");
        age_all(h);
        for (size_t k = 0; k < 10; k++)
                cr_assert_eq(h->objs[k].live, 11 - k < 5, "object %zu idle %zu after lowering",
                             k, 11 - k);
        /* The rest go one per rotation, exactly at last touch + 5. */
        for (uint32_t epoch = 13; epoch <= 16; epoch++) {
                step(h);
                for (size_t k = 7; k < 10; k++)
                        cr_assert_eq(h->objs[k].live, epoch < 1 + k + 5, "epoch %u object %zu",
                                     epoch, k);
        }
        cr_assert_eq(h->calls, 10);
        cr_assert_eq(stats(h).objects, 0);
        harness_free(h);
}

Test(age, lowering_single_use_age_applies_at_once)
{
        /* Single-use objects 0..8 inserted at epoch k; reused 9..17 touched at k - 9 + 1. */
        struct harness *h = harness_new(18, 10, 30, false);

        for (uint32_t epoch = 0; epoch < 9; epoch++) {
                insert(h, epoch);
                if (epoch == 0)
                        for (size_t k = 9; k < 18; k++)
                                insert(h, k);
                if (epoch >= 1)
                        touch(h, 9 + epoch - 1);
                step(h);
        }
        touch(h, 17);
        cr_assert_eq(ca_cache_epoch(h->cache), 9);
        cr_assert_eq(h->calls, 0);
        cr_assert_eq(stats(h).single_use_objects, 9);

        set_params(h, 4, 30);
        age_all(h);
        /* Inserted at k, idle 9 - k >= 4 for k <= 5; reused ones are under max_age. */
        for (size_t k = 0; k < 18; k++)
                cr_assert_eq(h->objs[k].live, k >= 6, "object %zu after lowering", k);
        for (uint32_t epoch = 10; epoch <= 13; epoch++) {
                step(h);
                for (size_t k = 6; k < 9; k++)
                        cr_assert_eq(h->objs[k].live, epoch < k + 4, "epoch %u object %zu", epoch,
                                     k);
        }
        cr_assert_eq(stats(h).reclaimed_single_use, 9);
        cr_assert_eq(stats(h).objects, 9);
        harness_free(h);
}

Test(age, lowering_then_rotating_before_aging)
{
        /* Single-use objects inserted at 0..7; at epoch 8 lower 20 -> 3, rotate, then age. */
        struct harness *h = harness_new(8, 20, 20, false);

        for (uint32_t epoch = 0; epoch < 8; epoch++) {
                insert(h, epoch);
                step(h);
        }
        set_params(h, 3, 20);
        ca_cache_rotate(h->cache); /* epoch 9 */
        age_all(h);
        for (size_t k = 0; k < 8; k++)
                cr_assert_eq(h->objs[k].live, 9 - k < 3, "object %zu", k);
        step(h); /* 10 */
        cr_assert(!h->objs[7].live);
        cr_assert_eq(h->objs[7].reclaimed_epoch, 10);
        cr_assert_eq(h->calls, 8);
        harness_free(h);
}

Test(age, lowering_twice_mid_sweep_with_small_slices)
{
        /* 64 single-use objects inserted at 0..63 with age 100; lowered to 50 then to 30. */
        struct harness *h = harness_new(64, 100, 100, false);
        size_t left;

        for (uint32_t epoch = 0; epoch < 64; epoch++) {
                insert(h, epoch);
                step(h);
        }
        /* epoch 64: object k is idle 64 - k */
        set_params(h, 50, 100);
        for (int i = 0; i < 5; i++)
                ca_cache_age(h->cache, 3, 0);
        set_params(h, 30, 100);
        for (size_t slices = 0; (left = ca_cache_age(h->cache, 1, 0)); slices++)
                cr_assert_lt(slices, 10000, "aging does not converge");
        for (size_t k = 0; k < 64; k++)
                cr_assert_eq(h->objs[k].live, 64 - k < 30, "object %zu idle %zu", k, 64 - k);
        for (uint32_t epoch = 65; epoch < 100; epoch++) {
                step(h);
                for (size_t k = 35; k < 64; k++)
                        cr_assert_eq(h->objs[k].live, epoch < k + 30, "epoch %u object %zu", epoch,
                                     k);
        }
        cr_assert_eq(h->calls, 64);
        harness_free(h);
}

Test(age, raising_ages_is_free_and_exact)
{
        /* 0: single use inserted at 0; 1: reused, touched at 1. Raise just before they go. */
        struct harness *h = harness_new(2, 2, 3, false);
        uint64_t scanned;

        insert(h, 0);
        insert(h, 1);
        step(h); /* 1 */
        touch(h, 1);
        scanned = stats(h).scanned;
        set_params(h, 5, 9);
        cr_assert_eq(ca_cache_pending(h->cache), 0, "raising schedules no re-sweep");
        cr_assert_eq(ca_cache_age(h->cache, 0, 0), 0);
        cr_assert_eq(stats(h).scanned, scanned);
        for (uint32_t epoch = 2; epoch <= 12; epoch++) {
                step(h);
                cr_assert_eq(h->objs[0].live, epoch < 5, "single use, epoch %u", epoch);
                cr_assert_eq(h->objs[1].live, epoch < 10, "reused, epoch %u", epoch);
        }
        harness_free(h);
}

Test(age, params_validation)
{
        struct harness *h = harness_new(1, 3, 7, false);
        static const struct ca_params bad[] = {
                { .single_use_age = 0, .max_age = 7 },
                { .single_use_age = 3, .max_age = 0 },
                { .single_use_age = CA_AGE_MAX + 1, .max_age = 7 },
                { .single_use_age = 3, .max_age = CA_AGE_MAX + 1 },
                { .single_use_age = UINT32_MAX, .max_age = UINT32_MAX },
                /* a reused object never goes before a single-use one */
                { .single_use_age = 5, .max_age = 4 },
                { .single_use_age = CA_AGE_MAX, .max_age = 1 },
        };
        struct ca_params p;
        struct ca_cache *c = (struct ca_cache *)&p; /* must stay untouched */

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                cr_assert_eq(ca_cache_validate_params(&bad[i]), -EINVAL, "case %zu", i);
                cr_assert_eq(ca_cache_set_params(h->cache, &bad[i]), -EINVAL, "case %zu", i);
                ca_cache_get_params(h->cache, &p);
                cr_assert_eq(p.single_use_age, 3);
                cr_assert_eq(p.max_age, 7);
                cr_assert_eq(ca_cache_new(&harness_ops, NULL, &bad[i], &c), -EINVAL);
                cr_assert_eq(c, (struct ca_cache *)&p, "ret written on failure");
        }
        cr_assert_eq(ca_cache_validate_params(NULL), -EINVAL);
        cr_assert_eq(ca_cache_set_params(h->cache, NULL), -EINVAL);
        cr_assert_eq(ca_cache_pending(h->cache), 0, "a refused change starts no re-sweep");

        p = (struct ca_params){ .single_use_age = CA_AGE_MAX, .max_age = CA_AGE_MAX };
        cr_assert_eq(ca_cache_validate_params(&p), 0);
        p = (struct ca_params){ .single_use_age = 1, .max_age = CA_AGE_MAX };
        cr_assert_eq(ca_cache_set_params(h->cache, &p), 0);
        ca_cache_get_params(h->cache, &p);
        cr_assert_eq(p.single_use_age, 1);
        cr_assert_eq(p.max_age, CA_AGE_MAX);

        /* A refused change leaves aging as it was: object goes at single_use_age 1. */
        insert(h, 0);
        cr_assert_eq(ca_cache_set_params(h->cache, &bad[0]), -EINVAL);
        step(h);
        cr_assert(!h->objs[0].live);
        harness_free(h);
}

Test(age, new_rejects_bad_arguments)
{
        static const struct ca_cache_ops no_reclaim = { .size = harness_size };
        struct ca_cache *c = (struct ca_cache *)&no_reclaim, *good = NULL;
        struct ca_params p;

        cr_assert_eq(ca_cache_new(&no_reclaim, NULL, NULL, &c), -EINVAL);
        cr_assert_eq(ca_cache_new(NULL, NULL, NULL, &c), -EINVAL);
        cr_assert_eq(c, (struct ca_cache *)&no_reclaim, "ret written on failure");
        cr_assert_eq(ca_cache_new(&harness_ops, NULL, NULL, NULL), -EINVAL);

        cr_assert_eq(ca_cache_new(&harness_ops, NULL, NULL, &good), 0);
        cr_assert_not_null(good);
        ca_cache_get_params(good, &p);
        cr_assert_eq(p.single_use_age, CA_SINGLE_USE_AGE_DEFAULT);
        cr_assert_eq(p.max_age, CA_MAX_AGE_DEFAULT);
        cr_assert_eq(ca_cache_epoch(good), 0);
        cr_assert_null(ca_cache_free(good));
        cr_assert_null(ca_cache_free(NULL));
}

/* ------------------------------------------------------------------------------------------ */
/* Slices: budget and deadline                                                                */

static void check_budgeted_slices(struct harness *h, size_t budget)
{
        size_t left = ca_cache_pending(h->cache), slices = 0;

        while (left) {
                uint64_t scanned = stats(h).scanned;
                size_t calls = h->calls, now_left;

                now_left = ca_cache_age(h->cache, budget, 0);
                cr_assert_leq(stats(h).scanned - scanned, budget, "slice scanned %llu > budget %zu",
                              (unsigned long long)(stats(h).scanned - scanned), budget);
                cr_assert_leq(h->calls - calls, stats(h).scanned - scanned,
                              "callbacks for nodes not counted as scanned");
                cr_assert_gt(stats(h).scanned - scanned, 0, "a slice with work made no progress");
                cr_assert_eq(now_left, ca_cache_pending(h->cache));
                cr_assert_eq(stats(h).backlog, now_left, "backlog leaves out the re-sweep");
                left = now_left;
                cr_assert_lt(++slices, 100000);
        }
}

Test(age, slice_never_exceeds_its_budget)
{
        static const size_t budgets[] = { 1, 7, 64, 1000 };

        for (size_t b = 0; b < ELEMENTSOF(budgets); b++) {
                enum { N = 3000 };
                struct harness *h = harness_new(N, 3, 100, false);

                /* Mixed: a third single use (reclaimed), a third reused (refiled), a third busy. */
                for (size_t i = 0; i < N; i++) {
                        insert(h, i);
                        if (i % 3 == 2)
                                h->objs[i].answer = CA_BUSY;
                }
                ca_cache_rotate(h->cache);
                age_all(h);
                for (size_t i = 1; i < N; i += 3)
                        touch(h, i);
                ca_cache_rotate(h->cache);
                ca_cache_rotate(h->cache);
                cr_assert_eq(ca_cache_pending(h->cache), N);
                check_budgeted_slices(h, budgets[b]);
                cr_assert_eq(count_live(h), 2 * N / 3);
                cr_assert_eq(stats(h).busy, N / 3);

                /* Budget also holds in a re-sweep after lowering (3/100 -> 2/2). */
                set_params(h, 2, 2);
                cr_assert_gt(ca_cache_pending(h->cache), 0);
                check_budgeted_slices(h, budgets[b]);
                /* Reused ones touched at 1, epoch 3: idle 2 >= 2, reclaimed by the re-sweep. */
                for (size_t i = 1; i < N; i += 3)
                        cr_assert(!h->objs[i].live, "object %zu survived the re-sweep", i);
                harness_free(h);
        }
}

Test(age, past_deadline_stops_a_slice_at_the_clock_period)
{
        enum { N = 1000 };
        struct harness *h = harness_new(N, 1, 1, false);
        size_t left;

        for (size_t i = 0; i < N; i++)
                insert(h, i);
        ca_cache_rotate(h->cache);
        /* A deadline already passed: the clock is read after CA_CLOCK_EVERY nodes. */
        left = ca_cache_age(h->cache, N, 1);
        cr_assert_eq(stats(h).scanned, CA_CLOCK_EVERY);
        cr_assert_eq(left, N - CA_CLOCK_EVERY);
        /* A far deadline does not stop it early. */
        left = ca_cache_age(h->cache, N, ca_now_usec() + 3600ull * 1000000);
        cr_assert_eq(left, 0);
        cr_assert_eq(h->reclaimed, N);
        harness_free(h);
}

/* ------------------------------------------------------------------------------------------ */
/* Removal from every state                                                                   */

static void check_counts(const struct harness *h)
{
        struct ca_stats s = stats(h);
        uint64_t objects = 0, single_use = 0, bytes = 0;

        for (size_t i = 0; i < h->n_objs; i++) {
                const struct obj *o = &h->objs[i];

                if (!o->live)
                        continue;
                cr_assert(ca_node_linked(&o->node), "object %zu live but not linked", i);
                objects++;
                single_use += atomic_load(&o->node.hits) == 1;
                bytes += o->size_bytes;
        }
        cr_assert_eq(s.objects, objects);
        cr_assert_eq(s.single_use_objects, single_use);
        cr_assert_eq(s.bytes, h->sized ? bytes : 0);
}

Test(age, remove_from_every_state)
{
        enum { N = 200 };
        struct harness *h = harness_new(N, 3, 6, true);
        struct ca_stats s;
        size_t due;

        /* Waiting in a slot: single use and reused. */
        insert(h, 0);
        insert(h, 1);
        cr_assert_eq(stats(h).bytes, 100 + 101);
        step(h);
        touch(h, 1);
        check_counts(h);
        remove_obj(h, 0);
        remove_obj(h, 1);
        check_counts(h);
        s = stats(h);
        cr_assert_eq(s.objects, 0);
        cr_assert_eq(s.single_use_objects, 0);
        cr_assert_eq(s.bytes, 0);
        /* A second remove is a no-op. */
        ca_cache_remove(h->cache, &h->objs[0].node);
        check_counts(h);
        for (int i = 0; i < 10; i++)
                step(h);
        cr_assert_eq(h->calls, 0, "removed objects were handed to reclaim");

        /* Pending after a rotation, before aging. */
        for (size_t i = 2; i < 12; i++)
                insert(h, i);
        step(h);
        step(h);
        touch(h, 3);
        due = ca_cache_rotate(h->cache);
        cr_assert_eq(due, 10);
        cr_assert_eq(stats(h).backlog, 10);
        remove_obj(h, 2);
        remove_obj(h, 3);
        remove_obj(h, 11);
        cr_assert_eq(stats(h).backlog, 7);
        check_counts(h);
        cr_assert_eq(ca_cache_age(h->cache, 3, 0), 4);
        remove_obj(h, 10); /* pending still, after a partial slice */
        cr_assert_eq(stats(h).backlog, 3);
        age_all(h);
        for (size_t i = 2; i < 12; i++)
                cr_assert_eq(h->objs[i].calls, (i == 2 || i == 3 || i >= 10) ? 0 : 1,
                             "object %zu", i);
        check_counts(h);

        /* Re-insert a removed node: it starts over as single use. */
        insert(h, 0);
        check_counts(h);
        step(h);
        step(h);
        cr_assert(h->objs[0].live);
        step(h);
        cr_assert(!h->objs[0].live);
        cr_assert_eq(h->objs[0].calls, 1);

        /*
         * In the re-sweep after lowering: 20 reused objects all due at the same epoch, so that
         * they fill the slot the re-sweep takes first. One budget-1 slice takes that slot onto
         * the sweep list; remove some of those nodes, rotate through the slot, finish.
         */
        {
                uint32_t e0 = ca_cache_epoch(h->cache);
                size_t removed[] = { 21, 25, 30, 39 };
                bool gone[N] = { false };
                uint64_t scanned;
                size_t calls;

                for (size_t i = 20; i < 40; i++)
                        insert(h, i); /* due at e0 + 3 */
                step(h);
                step(h);                  /* e0 + 2: next due slot is e0 + 3 */
                for (size_t i = 20; i < 40; i++)
                        touch(h, i);      /* reused, last touch e0 + 2 */
                set_params(h, 3, 4);      /* max 6 -> 4: a re-sweep starting at slot e0 + 3 */
                scanned = stats(h).scanned;
                calls = h->calls;
                cr_assert_eq(ca_cache_pending(h->cache), 20);
                /* The node looked at is refiled to a slot not yet swept: it counts again. */
                cr_assert_geq(ca_cache_age(h->cache, 1, 0), 19);
                cr_assert_eq(stats(h).scanned - scanned, 1);
                cr_assert_eq(h->calls, calls, "nothing is idle past 4 yet");
                for (size_t r = 0; r < ELEMENTSOF(removed); r++) {
                        remove_obj(h, removed[r]);
                        gone[removed[r]] = true;
                }
                check_counts(h);
                cr_assert_leq(ca_cache_pending(h->cache), 20 - ELEMENTSOF(removed));
                /* Rotate while the sweep list still holds nodes: the slot falls due with it. */
                ca_cache_rotate(h->cache); /* e0 + 3 */
                check_counts(h);
                age_all(h);
                check_counts(h);
                for (uint32_t e = e0 + 4; e <= e0 + 8; e++) {
                        step(h);
                        for (size_t i = 20; i < 40; i++)
                                if (!gone[i])
                                        cr_assert_eq(h->objs[i].live, e < e0 + 2 + 4,
                                                     "object %zu at %u", i, e - e0);
                }
                for (size_t r = 0; r < ELEMENTSOF(removed); r++)
                        cr_assert_eq(h->objs[removed[r]].calls, 0);
        }
        check_counts(h);
        cr_assert_eq(stats(h).objects, 0);
        cr_assert_eq(stats(h).bytes, 0);
        harness_free(h);
}

Test(age, remove_during_a_sweep_in_progress)
{
        /* Several slots' worth of waiting nodes, lowered, sweep left half done, remove all. */
        enum { N = 640 };
        struct harness *h = harness_new(N, 60, 60, true);

        for (uint32_t e = 0; e < 10; e++) {
                for (size_t i = 0; i < N / 10; i++)
                        insert(h, e * (N / 10) + i);
                step(h);
        }
        set_params(h, 50, 50);
        for (int s = 0; s < 5; s++)
                ca_cache_age(h->cache, 37, 0);
        cr_assert_gt(ca_cache_pending(h->cache), 0);
        for (size_t i = 0; i < N; i += 2)
                remove_obj(h, i);
        check_counts(h);
        age_all(h);
        for (size_t i = 1; i < N; i += 2)
                remove_obj(h, i);
        check_counts(h);
        cr_assert_eq(ca_cache_pending(h->cache), 0);
        for (int e = 0; e < 200; e++)
                step(h);
        cr_assert_eq(h->calls, 0);
        cr_assert_eq(stats(h).objects, 0);
        harness_free(h);
}

/* ------------------------------------------------------------------------------------------ */
/* Statistics                                                                                 */

Test(age, stats_count_what_happened_and_reset_keeps_gauges)
{
        struct harness *h = harness_new(10, 1, 2, true);
        struct ca_stats s;

        for (size_t i = 0; i < 10; i++)
                insert(h, i);
        h->objs[0].answer = CA_BUSY;
        h->objs[1].answer = CA_KEEP;
        touch(h, 9); /* same period: no effect */
        s = stats(h);
        cr_assert_eq(s.objects, 10);
        cr_assert_eq(s.single_use_objects, 10);
        cr_assert_eq(s.bytes, 10 * 100 + 45);
        cr_assert_eq(s.rotations, 0);
        cr_assert_eq(ca_cache_epoch(h->cache), 0);

        ca_cache_rotate(h->cache);
        touch(h, 8); /* pending, touched before aging: refiled, not reclaimed */
        s = stats(h);
        cr_assert_eq(s.rotations, 1);
        cr_assert_eq(s.backlog, 10);
        cr_assert_eq(s.scanned, 0);
        cr_assert_eq(s.single_use_objects, 9);
        age_all(h);
        s = stats(h);
        cr_assert_eq(s.scanned, 10);
        cr_assert_eq(s.reclaimed, 7);
        cr_assert_eq(s.reclaimed_single_use, 7);
        cr_assert_eq(s.busy, 1);
        cr_assert_eq(s.kept, 1);
        cr_assert_eq(s.objects, 3);
        cr_assert_eq(s.single_use_objects, 2, "objects 0 (busy) and 1 (kept) are single use");
        cr_assert_eq(s.bytes, 100 + 101 + 108);
        cr_assert_eq(s.backlog, 0);
        cr_assert_eq(ca_cache_epoch(h->cache), 1);

        /* Reset: counters to zero, gauges stay, the backlog of a fresh rotation too. */
        ca_cache_rotate(h->cache);
        ca_cache_reset_stats(h->cache);
        s = stats(h);
        cr_assert_eq(s.rotations, 0);
        cr_assert_eq(s.scanned, 0);
        cr_assert_eq(s.reclaimed, 0);
        cr_assert_eq(s.reclaimed_single_use, 0);
        cr_assert_eq(s.busy, 0);
        cr_assert_eq(s.kept, 0);
        cr_assert_eq(s.last_rotation_duration_usec, 0);
        cr_assert_eq(s.longest_slice_usec, 0);
        cr_assert_eq(s.objects, 3);
        cr_assert_eq(s.single_use_objects, 2);
        cr_assert_eq(s.bytes, 100 + 101 + 108);
        cr_assert_eq(s.backlog, 2, "busy object 0 and kept object 1 are due again");
        cr_assert_eq(ca_cache_epoch(h->cache), 2);

        h->objs[0].answer = CA_RECLAIMED;
        age_all(h);
        s = stats(h);
        cr_assert_eq(s.scanned, 2);
        cr_assert_eq(s.reclaimed, 1);
        cr_assert_eq(s.reclaimed_single_use, 1);
        cr_assert_eq(s.kept, 1);
        cr_assert_eq(s.single_use_objects, 1, "object 1, kept again, is single use still");
        cr_assert_eq(s.objects, 2);
        harness_free(h);
}

/* The descriptor table: what the bus, cacheagectl and the exporter know of struct ca_stats. */

/* "reclaimed_single_use" -> "ReclaimedSingleUse", "longest_slice_usec" -> "LongestSliceUSec". */
static void camel_case(const char *snake, char *buf, size_t len)
{
        size_t n = 0;

        for (const char *p = snake; *p && n + 5 < len;) {
                const char *end = strchr(p, '_');
                size_t w = end ? (size_t)(end - p) : strlen(p);

                if (w == 4 && strncmp(p, "usec", 4) == 0) {
                        memcpy(buf + n, "USec", 4);
                        n += 4;
                } else {
                        for (size_t i = 0; i < w && n + 1 < len; i++)
                                buf[n++] = i == 0 ? (char)(p[i] - 'a' + 'A') : p[i];
                }
                p += w + (end ? 1 : 0);
        }
        buf[n] = '\0';
}

static bool all_of(const char *s, const char *set)
{
        return s && *s && strspn(s, set) == strlen(s);
}

Test(age, stat_descs_cover_every_field_once)
{
        const struct ca_stat_desc *d;
        uint64_t seen = 0;
        size_t n;

        d = ca_stat_descs(&n);
        cr_assert_not_null(d);
        /* Every field is a uint64_t: n descriptors at distinct aligned offsets cover them all. */
        cr_assert_eq(n * sizeof(uint64_t), sizeof(struct ca_stats),
                     "%zu descriptors for a struct of %zu bytes", n, sizeof(struct ca_stats));
        for (size_t i = 0; i < n; i++) {
                size_t slot = d[i].offset / sizeof(uint64_t);

                cr_assert_eq(d[i].offset % sizeof(uint64_t), 0, "%s: offset %zu", d[i].name,
                             d[i].offset);
                cr_assert_lt(d[i].offset, sizeof(struct ca_stats), "%s", d[i].name);
                cr_assert(!(seen & (UINT64_C(1) << slot)), "%s: its field is described twice",
                          d[i].name);
                seen |= UINT64_C(1) << slot;
                /* In the struct's order, as the bus and cacheagectl show them. */
                if (i > 0)
                        cr_assert_gt(d[i].offset, d[i - 1].offset, "%s", d[i].name);
        }
}

Test(age, stat_descs_names_properties_and_kinds)
{
        const struct ca_stat_desc *d;
        char camel[128];
        size_t n;

        d = ca_stat_descs(&n);
        for (size_t i = 0; i < n; i++) {
                cr_assert(all_of(d[i].name, "abcdefghijklmnopqrstuvwxyz0123456789_") &&
                                  d[i].name[0] >= 'a' && d[i].name[0] <= 'z' &&
                                  !strstr(d[i].name, "__") &&
                                  d[i].name[strlen(d[i].name) - 1] != '_',
                          "name \"%s\" is not snake_case", d[i].name);
                camel_case(d[i].name, camel, sizeof(camel));
                cr_assert_str_eq(d[i].property, camel, "%s: property %s, expected %s", d[i].name,
                                 d[i].property, camel);
                cr_assert_not_null(ca_stat_kind_name(d[i].kind), "%s: kind %d", d[i].name,
                                   (int)d[i].kind);
                cr_assert(all_of(d[i].unit, "abcdefghijklmnopqrstuvwxyz_"), "%s: unit \"%s\"",
                          d[i].name, d[i].unit ? d[i].unit : "(null)");
                cr_assert(d[i].help && d[i].help[0] && d[i].help[strlen(d[i].help) - 1] != '.',
                          "%s: help \"%s\"", d[i].name, d[i].help ? d[i].help : "(null)");
                /* A time in microseconds says so in its name, as every tunable here does. */
                cr_assert_eq(strstr(d[i].unit, "usec") != NULL, strstr(d[i].name, "_usec") != NULL,
                             "%s: unit %s", d[i].name, d[i].unit);
                for (size_t j = 0; j < i; j++) {
                        cr_assert_str_neq(d[i].name, d[j].name);
                        cr_assert_str_neq(d[i].property, d[j].property);
                }
        }
        /* Found by either spelling, and by nothing else. */
        for (size_t i = 0; i < n; i++) {
                cr_assert_eq(ca_stat_desc_find(d[i].name), &d[i]);
                cr_assert_eq(ca_stat_desc_find(d[i].property), &d[i]);
        }
        cr_assert_null(ca_stat_desc_find("epoch"));
        cr_assert_null(ca_stat_desc_find(""));
        cr_assert_null(ca_stat_desc_find("objects "));
        cr_assert_str_eq(ca_stat_kind_name(CA_STAT_COUNTER), "counter");
        cr_assert_str_eq(ca_stat_kind_name(CA_STAT_GAUGE), "gauge");
        cr_assert_null(ca_stat_kind_name((enum ca_stat_kind)7));
}

static const struct ca_stat_desc *stat_desc(const char *name)
{
        const struct ca_stat_desc *d = ca_stat_desc_find(name);

        cr_assert_not_null(d, "no descriptor named %s", name);
        cr_assert_str_eq(d->name, name);
        return d;
}

Test(age, stat_value_reads_the_named_field)
{
        struct ca_stats s;
        uint64_t v = 1000;

        /* A distinct value in every field, through its C name; read back through its descriptor. */
#define FIELD(f)                                                                                   \
        do {                                                                                       \
                s.f = ++v;                                                                         \
                cr_assert_eq(ca_stat_value(&s, stat_desc(#f)), v, "%s", #f);                      \
        } while (0)
        memset(&s, 0, sizeof(s));
        FIELD(objects);
        FIELD(single_use_objects);
        FIELD(part_objects);
        FIELD(bytes);
        FIELD(rotations);
        FIELD(scanned);
        FIELD(reclaimed);
        FIELD(reclaimed_single_use);
        FIELD(busy);
        FIELD(kept);
        FIELD(last_rotation_usec);
        FIELD(last_rotation_duration_usec);
        FIELD(longest_slice_usec);
        FIELD(backlog);
#undef FIELD
}

/* A cache of nodes names its counts itself; one whose owner counts elsewhere shows those. */
Test(age, counts_of_a_cache_of_nodes_and_of_a_counted_cache)
{
        struct harness *h = harness_new(10, 2, 8, false);
        struct ca_cache_counts c;
        struct ca_stats st;

        for (size_t i = 0; i < 10; i++)
                ca_cache_insert(h->cache, &h->objs[i].node);
        ca_cache_rotate(h->cache);
        ca_touch(h->cache, &h->objs[0].node); /* reused: 9 single-use left */
        ca_cache_get_counts(h->cache, &c);
        cr_assert_str_eq(c.objects_name, "objects");
        cr_assert_str_eq(c.part_name, "single-use");
        cr_assert_str_eq(c.mechanism, "");
        cr_assert_eq(c.objects, 10);
        cr_assert_eq(c.part, 9);
        ca_cache_stats(h->cache, &st);
        cr_assert_eq(st.part_objects, 9);
        cr_assert_eq(st.single_use_objects, 9);

        /* Malformed names change nothing. */
        static const struct ca_cache_counts bad[] = {
                { .objects_name = NULL, .part_name = "negative", .mechanism = "" },
                { .objects_name = "dentries", .part_name = "", .mechanism = "" },
                { .objects_name = "dentries", .part_name = "negative", .mechanism = NULL },
                { .objects_name = "Dentries", .part_name = "negative", .mechanism = "" },
                { .objects_name = "dentries", .part_name = "neg\native", .mechanism = "" },
                { .objects_name = "dentries", .part_name = "negative",
                  .mechanism = "a mechanism with a name far too long" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cr_assert_eq(ca_cache_set_counts(h->cache, &bad[i]), -EINVAL, "bad[%zu]", i);
        cr_assert_eq(ca_cache_set_counts(h->cache, NULL), -EINVAL);
        ca_cache_get_counts(h->cache, &c);
        cr_assert_str_eq(c.objects_name, "objects");

        /* Counted: the owner's figures and names, copied; no object is known single-use. */
        char objects_name[] = "dentries", part_name[] = "negative", mechanism[] = "report";
        cr_assert_eq(ca_cache_set_counts(h->cache,
                                         &(struct ca_cache_counts){ .objects_name = objects_name,
                                                                    .part_name = part_name,
                                                                    .mechanism = mechanism,
                                                                    .objects = 84213,
                                                                    .part = 13428 }),
                     0);
        objects_name[0] = part_name[0] = mechanism[0] = 'x';
        ca_cache_get_counts(h->cache, &c);
        cr_assert_str_eq(c.objects_name, "dentries");
        cr_assert_str_eq(c.part_name, "negative");
        cr_assert_str_eq(c.mechanism, "report");
        cr_assert_eq(c.objects, 84213);
        cr_assert_eq(c.part, 13428);
        ca_cache_stats(h->cache, &st);
        cr_assert_eq(st.objects, 84213);
        cr_assert_eq(st.part_objects, 13428);
        cr_assert_eq(st.single_use_objects, 0);
        cr_assert_eq(st.rotations, 1, "the framework's own figures stay");
        harness_free(h);
}

static uint64_t realtime_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Kinds say what a reset does: every counter goes to zero; objects, bytes and times stay. */
Test(age, reset_zeroes_every_counter_and_keeps_the_time)
{
        struct harness *h = harness_new(20, 1, 1, true);
        struct ca_params p = { .single_use_age = 1, .max_age = 1, .refault_window = 4 };
        uint64_t hist[CA_REFAULT_BUCKETS];
        const struct ca_stat_desc *d;
        struct ca_stats s;
        uint64_t before, after, last;
        size_t n;

        cr_assert_eq(ca_cache_set_params(h->cache, &p), 0);
        for (size_t i = 0; i < 20; i++)
                insert(h, i);
        h->objs[0].answer = CA_BUSY;
        h->objs[1].answer = CA_KEEP;
        cr_assert_eq(stats(h).last_rotation_usec, 0, "never rotated");
        before = realtime_usec();
        ca_cache_rotate(h->cache);
        after = realtime_usec();
        age_all(h);
        insert(h, 2); /* a refault */
        remove_obj(h, 2);
        s = stats(h);
        last = s.last_rotation_usec;
        cr_assert(last >= before && last <= after, "last rotation %llu not within [%llu, %llu]",
                  (unsigned long long)last, (unsigned long long)before,
                  (unsigned long long)after);

        d = ca_stat_descs(&n);
        for (size_t i = 0; i < n; i++)
                if (d[i].kind == CA_STAT_COUNTER)
                        cr_assert_gt(ca_stat_value(&s, &d[i]), 0, "%s did not count", d[i].name);
        ca_cache_rotate(h->cache); /* the busy and the kept object are due again */
        ca_cache_reset_stats(h->cache);
        s = stats(h);
        for (size_t i = 0; i < n; i++)
                if (d[i].kind == CA_STAT_COUNTER)
                        cr_assert_eq(ca_stat_value(&s, &d[i]), 0, "%s survived a reset",
                                     d[i].name);
        ca_cache_refault_histogram(h->cache, hist);
        for (unsigned b = 0; b < CA_REFAULT_BUCKETS; b++)
                cr_assert_eq(hist[b], 0, "refault histogram bucket %u survived a reset", b);
        cr_assert_eq(s.objects, 2);
        cr_assert_eq(s.bytes, 100 + 101);
        cr_assert_eq(s.backlog, 2);
        cr_assert_geq(s.last_rotation_usec, last, "the time of the last rotation stays");
        harness_free(h);
}

/* ------------------------------------------------------------------------------------------ */
/* Rotation cost and backlogs                                                                 */

Test(age, rotation_looks_at_no_node_and_backlog_carries_over)
{
        enum { N = 5000 };
        struct harness *h = harness_new(N, 2, 4, false);
        struct ca_stats s;
        size_t due;

        /* Inserted at 0 (0..2499) and at 1 (2500..4999); odd ones touched at 2. */
        for (size_t i = 0; i < N / 2; i++)
                insert(h, i);
        ca_cache_rotate(h->cache);
        for (size_t i = N / 2; i < N; i++)
                insert(h, i);
        due = ca_cache_rotate(h->cache); /* 2: the first half is due */
        cr_assert_eq(due, N / 2);
        for (size_t i = 1; i < N; i += 2)
                touch(h, i);
        due = ca_cache_rotate(h->cache); /* 3: second half due, nothing aged yet */
        cr_assert_eq(due, N / 2);
        s = stats(h);
        cr_assert_eq(h->calls, 0, "a rotation called reclaim");
        cr_assert_eq(s.scanned, 0, "a rotation looked at nodes");
        cr_assert_eq(s.backlog, N);
        cr_assert_eq(ca_cache_pending(h->cache), N);
        cr_assert_eq(s.rotations, 3);

        age_all(h); /* at 3: even ones idle 3 (first half) / 2 (second half) >= 2: gone */
        for (size_t i = 0; i < N; i++)
                cr_assert_eq(h->objs[i].live, i % 2 == 1, "object %zu", i);
        /* Odd ones touched at 2 go at 6; rotate twice without aging, then age at 6. */
        cr_assert_eq(ca_cache_rotate(h->cache), 0);
        cr_assert_eq(ca_cache_rotate(h->cache), 0);
        cr_assert_eq(ca_cache_rotate(h->cache), N / 2);
        cr_assert_eq(h->calls, N / 2);
        age_all(h);
        cr_assert_eq(count_live(h), 0);
        cr_assert_eq(stats(h).scanned, N + N / 2);
        harness_free(h);
}

Test(age, rotating_long_without_aging_keeps_counts_and_victims_exact)
{
        /*
         * A driver that rotates 0x4000 times and more without aging, then ages (the
         * PENDING_REFRESH path: a pending node's 16-bit due must still tell it from a waiting
         * one). 40000 rotations put a pending node more than 0x8000 behind the clock. An age
         * lowered early on leaves a re-sweep pending all that time, its first slot holding
         * nodes (group G) when it falls due.
         */
        enum { HOT = 8, COLD = 64, LATE = HOT + COLD, G = LATE + 8, N = G + 8 };
        struct harness *h = harness_new(N, 2, 5, true);
        struct ca_stats s;

        for (size_t i = 0; i < HOT + COLD; i++)
                insert(h, i);
        for (uint32_t e = 1; e <= 40000; e++) {
                ca_cache_rotate(h->cache);
                for (size_t i = 0; i < HOT; i++)
                        touch(h, i);
                if (e == 3)
                        cr_assert_eq(stats(h).backlog, HOT + COLD);
                if (e == 9)
                        for (size_t i = G; i < N; i++)
                                insert(h, i); /* due at 11 */
                if (e == 10) {
                        set_params(h, 2, 4); /* re-sweep from slot 11: group G */
                        cr_assert_eq(ca_cache_pending(h->cache), HOT + COLD + (N - G));
                }
                if (e == 0x4000 + 5 || e == 0x8000 + 20 || e == 0x9000) {
                        /* Remove pending nodes deep in the backlog, cold and of group G. */
                        size_t victim = HOT + (e % COLD), g = G + e % (N - G);

                        if (h->objs[victim].live)
                                remove_obj(h, victim);
                        if (h->objs[g].live)
                                remove_obj(h, g);
                        check_counts(h);
                        cr_assert_eq(stats(h).backlog, count_live(h));
                }
                if (e == 30000)
                        for (size_t i = LATE; i < G; i++)
                                insert(h, i); /* waiting, due at 30002 */
        }
        s = stats(h);
        cr_assert_eq(s.rotations, 40000);
        cr_assert_eq(ca_cache_epoch(h->cache), 40000);
        cr_assert_eq(s.scanned, 0);
        cr_assert_eq(h->calls, 0);
        cr_assert_eq(s.backlog, count_live(h));
        check_counts(h);

        age_all(h);
        for (size_t i = 0; i < N; i++)
                if (i < HOT)
                        cr_assert(h->objs[i].live, "hot object %zu reclaimed", i);
                else if (h->objs[i].calls)
                        cr_assert_eq(h->objs[i].reclaimed_epoch, 40000);
        cr_assert_eq(count_live(h), HOT);
        check_counts(h);
        /* And aging goes on exactly afterwards. */
        insert(h, LATE);
        step(h);
        cr_assert(h->objs[LATE].live);
        step(h);
        cr_assert(!h->objs[LATE].live);
        for (int e = 0; e < 6; e++)
                step(h);
        cr_assert_eq(count_live(h), 0);
        harness_free(h);
}

Test(age, exact_across_the_16_bit_epoch_wrap)
{
        struct harness *h = harness_new(64, 3, 70, false);

        while (ca_cache_epoch(h->cache) < 65536 - 40)
                ca_cache_rotate(h->cache);
        /* One object inserted per rotation around the wrap, every other one reused once. */
        for (uint32_t k = 0; k < 64; k++) {
                insert(h, k);
                if (k >= 1 && (k - 1) % 2 == 0)
                        touch(h, k - 1);
                step(h);
                for (uint32_t j = 0; j <= k; j++) {
                        bool reused = j % 2 == 0 && j + 1 <= k;
                        uint32_t end = reused ? j + 1 + 70 : j + 3;

                        cr_assert_eq(h->objs[j].live, k + 1 < end, "object %u at step %u", j, k);
                }
        }
        for (uint32_t e = 0; e < 80; e++)
                step(h);
        cr_assert_eq(count_live(h), 0);
        cr_assert_eq(h->calls, 64);
        harness_free(h);
}

/* ------------------------------------------------------------------------------------------ */
/* Touches from several threads                                                               */

struct first_touch {
        struct harness *h;
        pthread_barrier_t *start;
};

static void *first_touch_thread(void *p)
{
        struct first_touch *f = p;

        pthread_barrier_wait(f->start);
        /* Same order in every thread, so that they meet on the same nodes. */
        for (size_t i = 0; i < f->h->n_objs; i++)
                ca_touch(f->h->cache, &f->h->objs[i].node);
        return NULL;
}

Test(age, racing_first_touches_of_a_period_take_a_node_out_of_single_use_once)
{
        enum { THREADS = 4, N = 20000, PERIODS = 3 };
        struct harness *h = harness_new(N, 10, 10, false);
        pthread_t threads[THREADS];
        pthread_barrier_t start;
        struct first_touch f = { .h = h, .start = &start };

        for (size_t i = 0; i < N; i++)
                insert(h, i);
        for (uint32_t period = 1; period <= PERIODS; period++) {
                ca_cache_rotate(h->cache);
                cr_assert_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
                for (unsigned t = 0; t < THREADS; t++)
                        cr_assert_eq(pthread_create(&threads[t], NULL, first_touch_thread, &f), 0);
                for (unsigned t = 0; t < THREADS; t++)
                        cr_assert_eq(pthread_join(threads[t], NULL), 0);
                pthread_barrier_destroy(&start);
                /*
                 * The step from single use to reused is taken exactly once (the count would
                 * wrap below 0 otherwise); above 2, hits is a statistic that a tight race may
                 * count high, never low.
                 */
                for (size_t i = 0; i < N; i++) {
                        unsigned hits = atomic_load(&h->objs[i].node.hits);

                        cr_assert_geq(hits, 1 + period, "node %zu: hits %u after %u periods", i,
                                      hits, 1 + period);
                        cr_assert_eq(atomic_load(&h->objs[i].node.stamp), period);
                }
                cr_assert_eq(stats(h).single_use_objects, 0, "single_use_objects %llu",
                             (unsigned long long)stats(h).single_use_objects);
        }
        cr_assert_eq(h->calls, 0);
        harness_free(h);
}

enum {
        MT_THREADS = 4,
        MT_HOT = 256,            /* touched by every thread in every period */
        MT_BATCH = 32,           /* inserted each period, touched by the threads in the next */
        MT_ROTATIONS = 300,
        MT_COLD = MT_BATCH,      /* inserted each period, never touched: single use */
        MT_MAX_AGE = 3,
        MT_SINGLE_USE_AGE = 2,
};

struct mt {
        struct harness *h;
        _Atomic uint32_t published;  /* batches 0..published-1 inserted (release) */
        _Atomic bool stop;
        _Atomic uint32_t done_epoch[MT_THREADS]; /* epoch of the thread's last full pass */
        size_t batch_base, cold_base;
};

static size_t mt_batch(const struct mt *m, uint32_t epoch, size_t i)
{
        return m->batch_base + (size_t)epoch * MT_BATCH + i;
}

struct mt_arg {
        struct mt *m;
        unsigned id;
};

static void *mt_thread(void *p)
{
        struct mt_arg *a = p;
        struct mt *m = a->m;
        struct ca_cache *cache = m->h->cache;

        while (!atomic_load_explicit(&m->stop, memory_order_relaxed)) {
                uint32_t epoch = ca_cache_epoch(cache);
                uint32_t published = atomic_load_explicit(&m->published, memory_order_acquire);
                bool batch = epoch >= 1 && epoch - 1 < MT_ROTATIONS;

                for (int round = 0; round < 3; round++)
                        for (size_t i = 0; i < MT_HOT; i++)
                                ca_touch(cache, &m->h->objs[(i + a->id * 61) % MT_HOT].node);
                /*
                 * The batch inserted in the previous period: its second period is this one.
                 * The epoch is read relaxed, so the batch may not be visible yet; such a pass
                 * does not count as this period's.
                 */
                if (batch && epoch - 1 >= published)
                        continue;
                if (batch)
                        for (size_t i = 0; i < MT_BATCH; i++)
                                ca_touch(cache, &m->h->objs[mt_batch(m, epoch - 1, i)].node);
                atomic_store_explicit(&m->done_epoch[a->id], epoch, memory_order_release);
                sched_yield();
        }
        return NULL;
}

static void mt_wait_passes(struct mt *m, uint32_t epoch)
{
        for (unsigned t = 0; t < MT_THREADS; t++)
                while (atomic_load_explicit(&m->done_epoch[t], memory_order_acquire) < epoch)
                        sched_yield();
}

Test(age, touches_from_threads_while_owner_rotates_and_ages, .timeout = 120)
{
        struct mt m = { 0 };
        struct mt_arg args[MT_THREADS];
        pthread_t threads[MT_THREADS];
        size_t n = MT_HOT + (size_t)MT_ROTATIONS * (MT_BATCH + MT_COLD);
        struct harness *h = harness_new(n, MT_SINGLE_USE_AGE, MT_MAX_AGE, false);
        uint64_t single_use = 0, objects = 0;
        struct ca_stats s;

        m.h = h;
        m.batch_base = MT_HOT;
        m.cold_base = MT_HOT + (size_t)MT_ROTATIONS * MT_BATCH;
        for (size_t i = 0; i < MT_HOT; i++)
                insert(h, i);
        for (size_t i = 0; i < MT_BATCH; i++)
                insert(h, mt_batch(&m, 0, i));
        for (size_t i = 0; i < MT_COLD; i++)
                insert(h, m.cold_base + i);
        atomic_store_explicit(&m.published, 1, memory_order_release);

        for (unsigned t = 0; t < MT_THREADS; t++) {
                args[t] = (struct mt_arg){ .m = &m, .id = t };
                cr_assert_eq(pthread_create(&threads[t], NULL, mt_thread, &args[t]), 0);
        }

        for (uint32_t epoch = 1; epoch <= MT_ROTATIONS + MT_MAX_AGE + 2; epoch++) {
                mt_wait_passes(&m, epoch - 1); /* every thread touched in period epoch - 1 */
                ca_cache_rotate(h->cache);
                age_all(h); /* concurrently with the threads' touches of this period */
                if (epoch < MT_ROTATIONS) {
                        for (size_t i = 0; i < MT_BATCH; i++)
                                insert(h, mt_batch(&m, epoch, i));
                        for (size_t i = 0; i < MT_COLD; i++)
                                insert(h, m.cold_base + (size_t)epoch * MT_COLD + i);
                        atomic_store_explicit(&m.published, epoch + 1, memory_order_release);
                }
                /* Cold ones go at exactly insert + single_use_age; nobody touched them. */
                if (epoch >= MT_SINGLE_USE_AGE && epoch - MT_SINGLE_USE_AGE < MT_ROTATIONS)
                        for (size_t i = 0; i < MT_COLD; i++) {
                                const struct obj *o = &h->objs[m.cold_base +
                                                               (size_t)(epoch - MT_SINGLE_USE_AGE) *
                                                                       MT_COLD + i];

                                cr_assert(!o->live && o->reclaimed_epoch == epoch,
                                          "cold object inserted at %u not reclaimed at %u",
                                          epoch - MT_SINGLE_USE_AGE, epoch);
                        }
        }
        atomic_store_explicit(&m.stop, true, memory_order_relaxed);
        for (unsigned t = 0; t < MT_THREADS; t++)
                cr_assert_eq(pthread_join(threads[t], NULL), 0);

        /* Hot ones were touched in every period: never even asked. */
        for (size_t i = 0; i < MT_HOT; i++)
                cr_assert(h->objs[i].live && h->objs[i].calls == 0, "hot object %zu was aged", i);
        /*
         * A batch inserted at b was touched in period b + 1 (a straggler pass may also touch
         * it in b + 2): reused, so it goes max_age after that, not at b + single_use_age.
         */
        for (uint32_t b = 0; b < MT_ROTATIONS; b++)
                for (size_t i = 0; i < MT_BATCH; i++) {
                        const struct obj *o = &h->objs[mt_batch(&m, b, i)];

                        cr_assert(!o->live, "batch %u object %zu never reclaimed", b, i);
                        cr_assert(o->reclaimed_epoch >= b + 1 + MT_MAX_AGE &&
                                          o->reclaimed_epoch <= b + 2 + MT_MAX_AGE,
                                  "batch %u object %zu reclaimed at %u", b, i, o->reclaimed_epoch);
                }

        for (size_t i = 0; i < n; i++)
                if (h->objs[i].live) {
                        objects++;
                        single_use += atomic_load(&h->objs[i].node.hits) == 1;
                }
        s = stats(h);
        cr_assert_eq(s.objects, objects);
        cr_assert_eq(objects, MT_HOT);
        cr_assert_eq(s.single_use_objects, single_use, "single_use_objects %llu, recount %llu",
                     (unsigned long long)s.single_use_objects, (unsigned long long)single_use);
        cr_assert_eq(s.reclaimed, (uint64_t)MT_ROTATIONS * (MT_BATCH + MT_COLD));
        cr_assert_eq(s.reclaimed_single_use, (uint64_t)MT_ROTATIONS * MT_COLD,
                     "a batch object, reused, was counted as single use");
        harness_free(h);
}

/* ------------------------------------------------------------------------------------------ */
/* Randomized, against an independent reference model                                         */

/*
 * The model knows nothing of slots: for each object, the epoch of its last touch and in how
 * many distinct periods it was touched. At any aging at epoch E, the objects handed to
 * reclaim must be exactly those with E - stamp >= limit (limit = single_use_age while
 * touched in one period, else max_age), minus those already answered busy or kept at E (asked
 * again at E + 1 only, re-sweep or not; neither answer is a touch). A lowered age applies to
 * the very next aging.
 */

enum { RM_OBJS = 1536, RM_OPS = 100000 };

struct rm_obj {
        bool alive;
        uint32_t stamp;
        unsigned hits;
        bool busy_now;           /* answered busy or kept at the model's current epoch */
        size_t size_bytes;
};

struct rm {
        uint64_t rng;            /* the library-side PRNG: reclaim answers */
        uint64_t seed;
        size_t op;
        uint32_t epoch;
        struct ca_params params;
        struct rm_obj objs[RM_OBJS];
        struct ca_node nodes[RM_OBJS];
        struct ca_cache *cache;
        uint64_t reclaimed, reclaimed_single_use, busy, kept, calls;
};

static uint64_t rm_next(uint64_t *s)
{
        /* splitmix64: deterministic, seedable, good enough to pick operations */
        uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
}

static uint32_t rm_limit(const struct rm *m, const struct rm_obj *o)
{
        return o->hits == 1 ? m->params.single_use_age : m->params.max_age;
}

static bool rm_due(const struct rm *m, const struct rm_obj *o)
{
        return o->alive && m->epoch - o->stamp >= rm_limit(m, o);
}

static void rm_touch_model(struct rm *m, struct rm_obj *o)
{
        if (o->stamp != m->epoch) {
                o->stamp = m->epoch;
                if (o->hits < CA_HITS_MAX)
                        o->hits++;
        }
}

static enum ca_status rm_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct rm *m = userdata;
        size_t i = (size_t)(node - m->nodes);
        struct rm_obj *o;
        uint64_t r;

        cr_assert(i < RM_OBJS, "seed %#llx op %zu: foreign node", (unsigned long long)m->seed,
                  m->op);
        o = &m->objs[i];
        cr_assert(o->alive, "seed %#llx op %zu epoch %u: reclaim of removed object %zu",
                  (unsigned long long)m->seed, m->op, m->epoch, i);
        cr_assert(rm_due(m, o),
                  "seed %#llx op %zu epoch %u: object %zu handed to reclaim too early "
                  "(stamp %u hits %u limit %u)",
                  (unsigned long long)m->seed, m->op, m->epoch, i, o->stamp, o->hits,
                  rm_limit(m, o));
        cr_assert(!o->busy_now, "seed %#llx op %zu epoch %u: busy or kept object %zu asked twice",
                  (unsigned long long)m->seed, m->op, m->epoch, i);
        m->calls++;
        r = rm_next(&m->rng) % 10;
        if (r < 7) {
                m->reclaimed++;
                m->reclaimed_single_use += o->hits == 1;
                o->alive = false;
                return CA_RECLAIMED;
        }
        if (r < 9) {
                m->busy++;
                o->busy_now = true;
                return CA_BUSY;
        }
        /* kept is not a use (issue 23): asked again at the next rotation, as a busy one */
        m->kept++;
        o->busy_now = true;
        return CA_KEEP;
}

static size_t rm_size(const struct ca_cache *cache, const struct ca_node *node, void *userdata)
{
        const struct rm *m = userdata;

        return m->objs[node - m->nodes].size_bytes;
}

static const struct ca_cache_ops rm_ops = { .reclaim = rm_reclaim, .size = rm_size };

static void rm_check(struct rm *m, bool full)
{
        struct ca_stats s;
        uint64_t objects = 0, single_use = 0, bytes = 0;

        ca_cache_stats(m->cache, &s);
        for (size_t i = 0; i < RM_OBJS; i++) {
                struct rm_obj *o = &m->objs[i];

                if (!o->alive) {
                        cr_assert(!ca_node_linked(&m->nodes[i]),
                                  "seed %#llx op %zu: object %zu still linked",
                                  (unsigned long long)m->seed, m->op, i);
                        continue;
                }
                cr_assert(ca_node_linked(&m->nodes[i]));
                objects++;
                single_use += o->hits == 1;
                bytes += o->size_bytes;
                if (full)
                        cr_assert(!rm_due(m, o) || o->busy_now,
                                  "seed %#llx op %zu epoch %u: object %zu (stamp %u hits %u "
                                  "limit %u) is due but was not handed to reclaim",
                                  (unsigned long long)m->seed, m->op, m->epoch, i, o->stamp,
                                  o->hits, rm_limit(m, o));
        }
        cr_assert_eq(ca_cache_epoch(m->cache), m->epoch, "seed %#llx op %zu",
                     (unsigned long long)m->seed, m->op);
        cr_assert_eq(s.objects, objects, "seed %#llx op %zu", (unsigned long long)m->seed, m->op);
        cr_assert_eq(s.single_use_objects, single_use, "seed %#llx op %zu",
                     (unsigned long long)m->seed, m->op);
        cr_assert_eq(s.bytes, bytes, "seed %#llx op %zu", (unsigned long long)m->seed, m->op);
        cr_assert_eq(s.reclaimed, m->reclaimed, "seed %#llx op %zu", (unsigned long long)m->seed,
                     m->op);
        cr_assert_eq(s.reclaimed_single_use, m->reclaimed_single_use);
        cr_assert_eq(s.busy, m->busy);
        cr_assert_eq(s.kept, m->kept);
        if (full)
                cr_assert_eq(s.backlog, 0);
}

/* Every object the model says is due at this epoch, before an aging pass. */
static size_t rm_count_due(const struct rm *m)
{
        size_t n = 0;

        for (size_t i = 0; i < RM_OBJS; i++)
                n += rm_due(m, &m->objs[i]) && !m->objs[i].busy_now;
        return n;
}

/* One slice, within its budget. */
static size_t rm_slice(struct rm *m, size_t budget)
{
        struct ca_stats before, after;
        size_t left;

        ca_cache_stats(m->cache, &before);
        left = ca_cache_age(m->cache, budget, 0);
        ca_cache_stats(m->cache, &after);
        cr_assert_leq(after.scanned - before.scanned, budget, "seed %#llx op %zu",
                      (unsigned long long)m->seed, m->op);
        cr_assert_eq(left, after.backlog);
        return left;
}

static void rm_age_fully(struct rm *m)
{
        size_t guard = 0;

        while (rm_slice(m, 1 + rm_next(&m->rng) % 300))
                cr_assert_lt(++guard, 100000, "seed %#llx op %zu: aging does not converge",
                             (unsigned long long)m->seed, m->op);
}

static void rm_rotate(struct rm *m)
{
        ca_cache_rotate(m->cache);
        m->epoch++;
        for (size_t i = 0; i < RM_OBJS; i++)
                m->objs[i].busy_now = false;
}

Test(age, randomized_against_reference_model, .timeout = 120)
{
        struct rm *m = calloc(1, sizeof(*m));
        uint64_t ops_rng;
        const char *env = getenv("CA_TEST_SEED");
        size_t rotations = 0;
        int r;

        cr_assert_not_null(m);
        m->seed = env ? strtoull(env, NULL, 0) : 0x5eed0a9e;
        m->rng = m->seed ^ 0xa5a5a5a5a5a5a5a5ull;
        ops_rng = m->seed;
        m->params = (struct ca_params){ .single_use_age = 2, .max_age = 5 };
        r = ca_cache_new(&rm_ops, m, &m->params, &m->cache);
        cr_assert_eq(r, 0);

        for (m->op = 0; m->op < RM_OPS; m->op++) {
                uint64_t x = rm_next(&ops_rng);
                unsigned kind = (unsigned)(x % 1000);
                size_t i = (size_t)((x >> 16) % RM_OBJS);
                struct rm_obj *o = &m->objs[i];

                if (kind < 300) { /* insert */
                        if (o->alive)
                                continue;
                        o->size_bytes = 1 + (size_t)((x >> 40) % 4096);
                        ca_cache_insert(m->cache, &m->nodes[i]);
                        *o = (struct rm_obj){ .alive = true, .stamp = m->epoch, .hits = 1,
                                              .size_bytes = o->size_bytes };
                } else if (kind < 340) { /* remove, also of an object already gone */
                        ca_cache_remove(m->cache, &m->nodes[i]);
                        o->alive = false;
                } else if (kind < 700) { /* touch, a few times */
                        if (!o->alive)
                                continue;
                        for (unsigned t = 0; t <= (x >> 40) % 3; t++)
                                ca_touch(m->cache, &m->nodes[i]);
                        rm_touch_model(m, o);
                } else if (kind < 900 || (kind >= 955 && kind < 975)) {
                        /*
                         * Rotate and age fully, or (now and then, e.g. right after a lowered
                         * age) age fully without rotating: the victims must be exact.
                         */
                        size_t expected;
                        uint64_t calls = m->calls;

                        if (kind < 900) {
                                rm_rotate(m);
                                rotations++;
                        }
                        expected = rm_count_due(m);
                        rm_age_fully(m);
                        cr_assert_eq(m->calls - calls, expected,
                                     "seed %#llx op %zu epoch %u: %llu objects handed to "
                                     "reclaim, the model expected %zu",
                                     (unsigned long long)m->seed, m->op, m->epoch,
                                     (unsigned long long)(m->calls - calls), expected);
                        rm_check(m, true);
                } else if (kind < 930) { /* rotate only: a backlog carried over */
                        rm_rotate(m);
                        rm_check(m, false);
                } else if (kind < 955) { /* a partial slice: a subset of the due, no more */
                        rm_slice(m, 1 + (x >> 40) % 20);
                        rm_check(m, false);
                } else { /* parameters, in small ranges, now and then past the ring */
                        struct ca_params p = { 0 };

                        p.single_use_age = 1 + (uint32_t)((x >> 20) % 4);
                        p.max_age = p.single_use_age + (uint32_t)((x >> 30) % 8);
                        if ((x >> 50) % 8 == 0)
                                p.max_age = 60 + (uint32_t)((x >> 40) % 80);
                        if ((x >> 56) % 16 == 0) {
                                struct ca_params bad = p;

                                bad.max_age = (x >> 60) % 2 ? 0 : CA_AGE_MAX + 1;
                                cr_assert_eq(ca_cache_set_params(m->cache, &bad), -EINVAL);
                        }
                        cr_assert_eq(ca_cache_set_params(m->cache, &p), 0);
                        m->params = p;
                        rm_check(m, false);
                }
        }
        cr_assert_gt(rotations, 19000);
        cr_assert_gt(m->reclaimed, 10000);
        cr_assert_gt(m->busy, 1000);
        cr_assert_gt(m->kept, 1000);
        cr_log_info("randomized: seed %#llx, %zu rotations, %llu reclaimed, %llu busy, %llu kept",
                    (unsigned long long)m->seed, rotations, (unsigned long long)m->reclaimed,
                    (unsigned long long)m->busy, (unsigned long long)m->kept);
        cr_assert_null(ca_cache_free(m->cache));
        free(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Regressions: minimal reproductions of bugs found by the tests above                        */

static struct ca_cache *race_cache;
static enum ca_status race_answer;

static void *race_touch(void *arg)
{
        ca_touch(race_cache, arg);
        return NULL;
}

static enum ca_status race_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        pthread_t t;

        /*
         * Another thread touches the object after node_age() read its stamp and hits, and
         * before the adapter decides (an adapter's lookup took a reference, touched, dropped
         * it; the adapter then sees no reference and frees). The toucher cannot know that
         * the node is being looked at; its memory is valid until the callback returns.
         */
        cr_assert_eq(pthread_create(&t, NULL, race_touch, node), 0);
        cr_assert_eq(pthread_join(t, NULL), 0);
        return race_answer;
}

/*
 * Was: node_age() loaded hits (1) before the callback; the racing first touch of the period
 * bumped it to 2 and took the node out of single_use; CA_RECLAIMED then took it out again
 * (single_use_objects wrapped to UINT64_MAX with one node). After CA_BUSY or CA_KEEP the
 * racing touch must still count as the touch of a second period, once.
 */
static void race_case(enum ca_status answer)
{
        static const struct ca_cache_ops ops = { .reclaim = race_reclaim };
        struct ca_params p = { .single_use_age = 1, .max_age = 4 };
        struct ca_node node = { 0 }, other = { 0 };
        struct ca_stats s;

        race_answer = answer;
        cr_assert_eq(ca_cache_new(&ops, NULL, &p, &race_cache), 0);
        ca_cache_insert(race_cache, &node);
        ca_cache_rotate(race_cache);
        ca_cache_insert(race_cache, &other); /* a single-use object that stays */
        cr_assert_eq(ca_cache_age(race_cache, 0, 0), 0);
        ca_cache_stats(race_cache, &s);
        if (answer == CA_RECLAIMED) {
                cr_assert_eq(s.objects, 1);
                cr_assert_eq(s.reclaimed, 1);
                cr_assert(!ca_node_linked(&node));
                cr_assert_eq(s.single_use_objects, 1, "single_use_objects %llu, expected 1",
                             (unsigned long long)s.single_use_objects);
        } else {
                cr_assert_eq(s.objects, 2);
                cr_assert(ca_node_linked(&node));
                cr_assert_eq(atomic_load(&node.hits), 2, "hits %u after a raced %s",
                             (unsigned)atomic_load(&node.hits),
                             answer == CA_BUSY ? "busy" : "keep");
                cr_assert_eq(s.single_use_objects, 1, "single_use_objects %llu, expected 1",
                             (unsigned long long)s.single_use_objects);
                /* Touched at 1 by the racing thread (kept is no use): reused, max_age 4. */
                for (int e = 2; e <= 4; e++) {
                        ca_cache_remove(race_cache, &other);
                        ca_cache_insert(race_cache, &other);
                        ca_cache_rotate(race_cache);
                        cr_assert_eq(ca_cache_age(race_cache, 0, 0), 0);
                        cr_assert(ca_node_linked(&node), "reused node reclaimed at %d", e);
                }
                ca_cache_remove(race_cache, &node);
        }
        ca_cache_remove(race_cache, &other);
        ca_cache_stats(race_cache, &s);
        cr_assert_eq(s.objects, 0);
        cr_assert_eq(s.single_use_objects, 0);
        race_cache = ca_cache_free(race_cache);
}

Test(age, touch_racing_reclaim_keeps_single_use_count)
{
        race_case(CA_RECLAIMED);
        race_case(CA_BUSY);
        race_case(CA_KEEP);
}

/*
 * Was: a rotation between lowering an age and the end of its re-sweep left the re-sweep
 * behind the slot that a CA_BUSY node is refiled to, so the same slices asked it twice in
 * one rotation. Sequence: 2/10; insert at 0 (answers busy); rotate (1); set_params(1, 10)
 * without aging; rotate (2); age.
 */
Test(age, busy_asked_once_per_rotation_when_lowered_then_rotated)
{
        struct harness *h = harness_new(1, 2, 10, false);

        insert(h, 0);
        h->objs[0].answer = CA_BUSY;
        step(h); /* 1 */
        set_params(h, 1, 10);
        ca_cache_rotate(h->cache); /* 2 */
        age_all(h);
        cr_assert_eq(h->objs[0].calls, 1, "busy node asked %u times at epoch 2",
                     h->objs[0].calls);
        cr_assert_eq(stats(h).busy, 1);
        step(h); /* 3: asked again, once */
        cr_assert_eq(h->objs[0].calls, 2);
        cr_assert_eq(stats(h).busy, 2);
        harness_free(h);
}

/*
 * Was: a slice whose budget ran out on the re-sweep's last waiting node returned 0 with the
 * re-sweep still open; it resumed after later rotations and asked a node answered CA_BUSY
 * a moment before once more. Sequence: 3/10; insert at 0 (answers busy); rotate, age (1);
 * set_params(2, 10); ca_cache_age(budget 1) returns 0; rotate (2); rotate (3); age.
 */
Test(age, busy_asked_once_per_rotation_after_a_resweep_returned_0)
{
        struct harness *h = harness_new(1, 3, 10, false);

        insert(h, 0);
        h->objs[0].answer = CA_BUSY;
        step(h); /* 1 */
        set_params(h, 2, 10);
        cr_assert_eq(ca_cache_age(h->cache, 1, 0), 0);
        cr_assert_eq(h->objs[0].calls, 0);
        ca_cache_rotate(h->cache); /* 2 */
        ca_cache_rotate(h->cache); /* 3 */
        age_all(h);
        cr_assert_eq(h->objs[0].calls, 1, "busy node asked %u times at epoch 3",
                     h->objs[0].calls);
        harness_free(h);
}

/*
 * A busy node is not asked again in its rotation by a re-sweep started after the answer
 * either (lowering right after a busy answer), and is asked at the next one.
 */
Test(age, busy_not_asked_again_by_a_resweep_in_the_same_rotation)
{
        struct harness *h = harness_new(2, 3, 10, false);

        insert(h, 0);
        insert(h, 1);
        h->objs[0].answer = CA_BUSY;
        for (int e = 1; e <= 3; e++)
                step(h);
        cr_assert_eq(h->objs[0].calls, 1);
        cr_assert(!h->objs[1].live);
        set_params(h, 1, 1);
        age_all(h);
        cr_assert_eq(h->objs[0].calls, 1, "asked again in the rotation it answered busy");
        step(h);
        cr_assert_eq(h->objs[0].calls, 2);
        h->objs[0].answer = CA_RECLAIMED;
        step(h);
        cr_assert(!h->objs[0].live);
        cr_assert_eq(h->objs[0].reclaimed_epoch, 5);
        harness_free(h);
}

/*
 * Was: a touch whose epoch was read just before a rotation, landing after another thread's
 * first touch of the new period, moved the stamp back (the node looked idle one period
 * longer). ca_touch() does that when its thread is preempted between its load of the epoch
 * and its store; the direct call stands for it. (A race within a few instructions of each
 * other can still do it, as lib/age.c documents; this sequence must not.)
 */
Test(age, late_touch_of_a_past_period_does_not_move_the_stamp_back)
{
        struct harness *h = harness_new(1, 2, 2, false);

        insert(h, 0);
        step(h); /* 1 */
        touch(h, 0);
        __ca_touch_slow(h->cache, &h->objs[0].node, 0);
        cr_assert_eq(atomic_load(&h->objs[0].node.stamp), 1, "stamp moved back to %u",
                     (unsigned)atomic_load(&h->objs[0].node.stamp));
        cr_assert_geq(atomic_load(&h->objs[0].node.hits), 2);
        step(h); /* 2 */
        cr_assert(h->objs[0].live, "touched at 1, max_age 2, reclaimed at 2");
        step(h); /* 3 */
        cr_assert(!h->objs[0].live);
        harness_free(h);
}

/*
 * FINDING (fails, though not on every run, against lib/age.c as of d303e8a): a first touch
 * of a period that loads hits while a CA_KEEP or CA_BUSY callback runs (hits is 0 then)
 * and stores 0 + 1 after node_restore_hits() gave the node back its hits (say 5) and saw
 * no race: the node is single use again (hits 1) but not in single_use; its next first
 * touch takes it out of the count a second time, and the count wraps below 0. The window
 * is two instructions in __ca_touch_slow(), so no single-threaded sequence shows it: three
 * threads touch 256 nodes as fast as they can while this one rotates and ages them with
 * max_age 1 (every node falls due and is kept or busy). On this 2-core machine a run of
 * 200000 such rotations ended with single_use_objects = 2^64 - 40 and a recount of 0.
 * Taking 0 -> 1 with a compare-and-swap, as 1 -> 2 is, would close it.
 */
enum { KB_THREADS = 3, KB_NODES = 256, KB_ROTATIONS = 20000 };

struct keep_busy {
        struct ca_node nodes[KB_NODES];
        struct ca_cache *cache;
        _Atomic bool stop;
        uint64_t callbacks;
};

static enum ca_status keep_busy_reclaim(struct ca_cache *cache, struct ca_node *node,
                                        void *userdata)
{
        struct keep_busy *kb = userdata;

        return ++kb->callbacks % 2 ? CA_KEEP : CA_BUSY;
}

static void *keep_busy_toucher(void *p)
{
        struct keep_busy *kb = p;

        while (!atomic_load_explicit(&kb->stop, memory_order_relaxed))
                for (size_t i = 0; i < KB_NODES; i++)
                        ca_touch(kb->cache, &kb->nodes[i]);
        return NULL;
}

Test(age, finding_touch_racing_keep_or_busy_keeps_single_use_count, .timeout = 120)
{
        static const struct ca_cache_ops ops = { .reclaim = keep_busy_reclaim };
        struct ca_params p = { .single_use_age = 1, .max_age = 1 };
        struct keep_busy *kb = calloc(1, sizeof(*kb));
        pthread_t threads[KB_THREADS];
        uint64_t single_use = 0;
        struct ca_stats s;

        cr_assert_not_null(kb);
        cr_assert_eq(ca_cache_new(&ops, kb, &p, &kb->cache), 0);
        for (size_t i = 0; i < KB_NODES; i++)
                ca_cache_insert(kb->cache, &kb->nodes[i]);
        for (unsigned t = 0; t < KB_THREADS; t++)
                cr_assert_eq(pthread_create(&threads[t], NULL, keep_busy_toucher, kb), 0);
        for (unsigned r = 0; r < KB_ROTATIONS; r++) {
                size_t guard = 0;

                ca_cache_rotate(kb->cache);
                while (ca_cache_age(kb->cache, 0, 0))
                        cr_assert_lt(++guard, 10000);
        }
        atomic_store_explicit(&kb->stop, true, memory_order_relaxed);
        for (unsigned t = 0; t < KB_THREADS; t++)
                cr_assert_eq(pthread_join(threads[t], NULL), 0);

        cr_assert_gt(kb->callbacks, KB_ROTATIONS, "the nodes never fell due");
        for (size_t i = 0; i < KB_NODES; i++) {
                cr_assert(ca_node_linked(&kb->nodes[i]));
                single_use += atomic_load(&kb->nodes[i].hits) == 1;
        }
        ca_cache_stats(kb->cache, &s);
        cr_assert_eq(s.objects, KB_NODES);
        cr_assert_eq(s.single_use_objects, single_use,
                     "single_use_objects %llu, recount %llu (after %llu callbacks)",
                     (unsigned long long)s.single_use_objects, (unsigned long long)single_use,
                     (unsigned long long)kb->callbacks);
        cr_assert_eq(single_use, 0, "%llu nodes touched in thousands of periods have hits 1",
                     (unsigned long long)single_use);
        cr_assert_null(ca_cache_free(kb->cache));
        free(kb);
}
