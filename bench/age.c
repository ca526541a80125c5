/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-age: what the aging framework costs, against the classic alternatives in the same run.
 *
 *   hot path   an access a cache makes anyway (read the object's key) with ca_touch(), against
 *              the same access with a move-to-front in a mutex-protected LRU list, with one and
 *              with two threads; on uniform accesses (the adversarial case: most touches are
 *              the first of their object in the period) and on a Zipf-like pattern (skew 0.99
 *              over 1M objects, a rotation every 10M accesses: what caches see); and what the
 *              first touch of a period costs against a repeated one;
 *   aging      nodes aged per second, and the longest ca_cache_age() slice at 10M nodes;
 *   rotation   one rotation of a 10M-node cache of which 10% fell due, against one pass of the
 *              kernel's CLOCK list walk (dentry_lru_isolate) over the same nodes and touches.
 *
 * Every object is 64 bytes (one cache line) with the ca_node and the list links embedded, as a
 * real cache would have them. Objects sit in memory in index order but are linked, inserted and
 * accessed in random orders, so that no walk or access pattern is one the hardware prefetcher
 * can follow: every number here includes the cache and TLB misses that a big cache pays.
 *
 * Benchmarks report, they do not assert: the exit status is 0 unless something failed to run
 * (allocation, thread creation, or a cross-check between the two sides of a comparison).
 */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cacheage/age.h"
#include "list.h"

#define RUNS_DEFAULT 5
#define RUNS_MAX 1000

/* Targets, printed next to the results (PASS/MISS); never turned into an exit status. */
#define TARGET_TOUCH_VS_LRU 0.2
#define TARGET_ZIPF_TOUCH_VS_LRU 0.1
#define ZIPF_SKEW 0.99
#define ZIPF_ACCESSES 20000000     /* two periods */
#define ZIPF_ROTATE_EVERY 10000000 /* accesses */
#define FIRST_PASSES 5             /* rounds of the first-touch measure */
#define TARGET_ROTATE_VS_CLOCK 0.2
#define TARGET_LONGEST_SLICE_USEC 1000.0

/* A cached object: one cache line, everything a cache would embed in it. */
struct obj {
        struct ca_node node; /* aging */
        uint64_t key;        /* what every access reads */
        struct ca_list_head lru; /* the LRU baseline's list, or the CLOCK baseline's */
        uint8_t referenced;  /* the CLOCK baseline's DCACHE_REFERENCED */
        uint32_t mark;       /* run that aging reclaimed it in (cross-check with CLOCK) */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct obj) == 64, "an object is one cache line");

struct config {
        size_t objects;      /* hot path: objects accessed */
        size_t accesses;     /* hot path: accesses per variant and run */
        size_t rotate_every; /* hot path: accesses between two rotations */
        size_t age_nodes;    /* nodes aged per second: cache size */
        size_t clock_nodes;  /* rotation against CLOCK: cache size */
        size_t slice_nodes;  /* longest slice: cache size */
        size_t zipf_accesses, zipf_rotate_every;
        unsigned runs;
        bool json;
        bool quick;
};

struct results {
        double access_ns, touch_ns, lru_ns, touch_vs_lru;
        double access_2t_ns, touch_2t_ns, lru_2t_ns, touch_vs_lru_2t;
        double touch_slow_pct; /* touches that were the first of their object in the period */
        double zipf_access_ns, zipf_touch_ns, zipf_lru_ns, zipf_touch_vs_lru, zipf_slow_pct;
        double first_touch_ns, repeat_touch_ns; /* touch minus access, 100% / 0% first touches */
        double age_nodes_per_s;
        double rotate_ms, clock_ms, rotate_vs_clock;
        size_t rotate_due, rotate_objects, rotate_reclaimed;
        double longest_slice_us, slice_p99_us, longest_slice_cpu_us;
        size_t slices;
        double loadavg; /* 1-minute load average at the start: how shared the machine was */
};

static volatile uint64_t sink; /* where every access sum goes, so that no loop is elided */

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The 1-minute load average, NAN when unknown. */
static double loadavg_1min(void)
{
        double v = NAN;
        FILE *f = fopen("/proc/loadavg", "re");

        if (!f)
                return NAN;
        if (fscanf(f, "%lf", &v) != 1)
                v = NAN;
        fclose(f);
        return v;
}

/* splitmix64: fixed seeds, so that every run and every variant sees the same sequences. */
/* CPU time of the calling thread: what a slice cost, without the time it was not running. */
static uint64_t thread_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *state)
{
        uint64_t z = (*state += 0x9e3779b97f4a7c15u);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *state, size_t n)
{
        return (uint32_t)(((rng_next(state) >> 32) * (uint64_t)n) >> 32);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Median of @n samples (sorts them in place). */
static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* @n objects, zeroed (page faults taken here, not in a timed loop), key = index. */
static struct obj *objs_new(size_t n)
{
        struct obj *objs = aligned_alloc(64, n * sizeof(*objs));

        if (!objs)
                return NULL;
        memset(objs, 0, n * sizeof(*objs));
        for (size_t i = 0; i < n; i++)
                objs[i].key = i;
        return objs;
}

/* A random permutation of 0..n-1 (Fisher-Yates). */
static uint32_t *perm_new(size_t n, uint64_t seed)
{
        uint32_t *p = malloc(n * sizeof(*p));

        if (!p)
                return NULL;
        for (size_t i = 0; i < n; i++)
                p[i] = (uint32_t)i;
        for (size_t i = n; i > 1; i--) {
                uint32_t j = rng_below(&seed, i), t = p[i - 1];

                p[i - 1] = p[j];
                p[j] = t;
        }
        return p;
}

/* @len independent uniform indices below @n. */
static uint32_t *seq_new(size_t len, size_t n, uint64_t seed)
{
        uint32_t *s = malloc(len * sizeof(*s));

        if (!s)
                return NULL;
        for (size_t i = 0; i < len; i++)
                s[i] = rng_below(&seed, n);
        return s;
}

/*
 * Reclaim callbacks. Objects live in one array freed after the phase, so reclaim only counts
 * (or collects, like the kernel's dispose list), then answers CA_RECLAIMED.
 */
static enum ca_status reclaim_count(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        (*(size_t *)userdata)++;
        return CA_RECLAIMED;
}

static const struct ca_cache_ops count_ops = { .reclaim = reclaim_count };

struct victims {
        struct obj **v;
        size_t n, cap;
};

static enum ca_status reclaim_collect(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct victims *vs = userdata;

        if (vs->n >= vs->cap)
                return CA_BUSY; /* cannot happen (cap = cache size); the cross-check would say */
        vs->v[vs->n++] = container_of(node, struct obj, node);
        return CA_RECLAIMED;
}

static const struct ca_cache_ops collect_ops = { .reclaim = reclaim_collect };

/*
 * ---- Hot path -----------------------------------------------------------------------------
 *
 * Three loops over the same precomputed index sequence: the plain access, the access plus
 * ca_touch(), the access plus move-to-front under a pthread mutex. Separate noinline functions
 * so that the compiler treats them alike and none is folded into another.
 *
 * The touch loop rotates the cache once per round of as many accesses as there are objects, so
 * that each round is a new period: with uniform accesses about 1 - 1/e = 63% of the touches are
 * the first of their object in the period (the slow path: stamp and hits stored) and the rest
 * find the stamp current (two loads). The exact share is computed from the sequence and
 * reported. It is a hard case for touch: a skewed (real) workload repeats far more within a
 * period. The cache is never aged here: aging does not change what a touch does, and the
 * nodes must stay linked to be touched.
 */

struct lru {
        pthread_mutex_t lock;
        struct ca_list_head head; /* front = most recently used */
};

static __attribute__((noinline)) uint64_t loop_access(struct obj *objs, const uint32_t *seq,
                                                      size_t n)
{
        uint64_t sum = 0;

        for (size_t i = 0; i < n; i++)
                sum += objs[seq[i]].key;
        return sum;
}

/*
 * @rotate_every: accesses between rotations, 0 = this thread never rotates. The rotation comes
 * first, so that every round of accesses starts a new period.
 */
static __attribute__((noinline)) uint64_t loop_touch(struct ca_cache *cache, struct obj *objs,
                                                     const uint32_t *seq, size_t n,
                                                     size_t rotate_every)
{
        uint64_t sum = 0;

        for (size_t i = 0; i < n;) {
                size_t end = rotate_every && n - i > rotate_every ? i + rotate_every : n;

                if (rotate_every)
                        ca_cache_rotate(cache);
                for (; i < end; i++) {
                        struct obj *o = &objs[seq[i]];

                        sum += o->key;
                        ca_touch(cache, &o->node);
                }
        }
        return sum;
}

static __attribute__((noinline)) uint64_t loop_lru(struct lru *lru, struct obj *objs,
                                                   const uint32_t *seq, size_t n)
{
        uint64_t sum = 0;

        for (size_t i = 0; i < n; i++) {
                struct obj *o = &objs[seq[i]];

                sum += o->key;
                pthread_mutex_lock(&lru->lock);
                if (lru->head.next != &o->lru)
                        list_move(&o->lru, &lru->head);
                pthread_mutex_unlock(&lru->lock);
        }
        return sum;
}

enum variant {
        VARIANT_ACCESS,
        VARIANT_TOUCH,
        VARIANT_LRU,
        _VARIANT_MAX,
};

struct worker {
        enum variant variant;
        struct obj *objs;
        const uint32_t *seq;
        size_t n;                /* accesses */
        struct ca_cache *cache;
        size_t rotate_every;     /* accesses, 0 = never */
        struct lru *lru;
        pthread_barrier_t *start; /* NULL when alone */
        uint64_t elapsed_ns;
        uint64_t sum;
};

static void *worker_run(void *userdata)
{
        struct worker *w = userdata;
        uint64_t t0;

        if (w->start)
                pthread_barrier_wait(w->start);
        t0 = now_ns();
        switch (w->variant) {
        case VARIANT_ACCESS:
                w->sum = loop_access(w->objs, w->seq, w->n);
                break;
        case VARIANT_TOUCH:
                w->sum = loop_touch(w->cache, w->objs, w->seq, w->n, w->rotate_every);
                break;
        case VARIANT_LRU:
        default:
                w->sum = loop_lru(w->lru, w->objs, w->seq, w->n);
                break;
        }
        w->elapsed_ns = now_ns() - t0;
        return NULL;
}

/*
 * Run @nthreads (1 or 2) workers at once, the calling thread being worker 0; ns per access as
 * each thread saw it, averaged.
 */
static int run_workers(struct worker *ws, unsigned nthreads, double *ret_ns)
{
        pthread_barrier_t start;
        pthread_t tid;
        double ns = 0;
        int r;

        if (nthreads == 1) {
                ws[0].start = NULL;
                worker_run(&ws[0]);
        } else {
                if (pthread_barrier_init(&start, NULL, 2) != 0)
                        return -ENOMEM;
                ws[0].start = ws[1].start = &start;
                r = -pthread_create(&tid, NULL, worker_run, &ws[1]);
                if (r < 0) {
                        pthread_barrier_destroy(&start);
                        return r;
                }
                worker_run(&ws[0]);
                pthread_join(tid, NULL);
                pthread_barrier_destroy(&start);
        }
        for (unsigned i = 0; i < nthreads; i++) {
                sink += ws[i].sum;
                ns += (double)ws[i].elapsed_ns / (double)ws[i].n;
        }
        *ret_ns = ns / nthreads;
        return 0;
}

/* Fraction of the accesses of @seq that are the first of their object in their round. */
static int slow_touch_pct(const uint32_t *seq, size_t len, size_t n, size_t rotate_every,
                          double *ret)
{
        uint32_t *round = malloc(n * sizeof(*round));
        size_t first = 0;

        if (!round)
                return -ENOMEM;
        memset(round, 0xff, n * sizeof(*round));
        for (size_t i = 0; i < len; i++) {
                uint32_t k = (uint32_t)(i / rotate_every);

                if (round[seq[i]] != k) {
                        round[seq[i]] = k;
                        first++;
                }
        }
        free(round);
        *ret = 100.0 * (double)first / (double)len;
        return 0;
}

/*
 * The setup of the hot-path measures: the cache and the LRU, @n objects inserted and linked in
 * the random @order, so that list neighbours are random lines; the share of first touches of
 * @seq rotated every @rotate_every accesses; one pass of plain accesses to warm the TLB, the
 * caches and the clock frequency. Returns 0 or a negative errno (*ret may be set: free it).
 */
static int hot_setup(struct obj *objs, const uint32_t *order, size_t n, size_t *never,
                     const uint32_t *seq, size_t len, size_t rotate_every, struct lru *lru,
                     struct ca_cache **ret, double *ret_slow_pct)
{
        int r = ca_cache_new(&count_ops, never, NULL, ret);

        if (r < 0)
                return r;
        list_init(&lru->head);
        for (size_t i = 0; i < n; i++) {
                ca_cache_insert(*ret, &objs[order[i]].node);
                list_add_tail(&objs[order[i]].lru, &lru->head);
        }
        r = slow_touch_pct(seq, len, n, rotate_every, ret_slow_pct);
        if (r < 0)
                return r;
        sink += loop_access(objs, seq, len);
        return 0;
}

static int bench_hot_path(const struct config *cfg, struct results *res)
{
        size_t n = cfg->objects, len = cfg->accesses, half = cfg->accesses / 2;
        struct lru lru = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct ca_cache *cache = NULL;
        struct obj *objs = NULL;
        uint32_t *seq = NULL, *seq2 = NULL, *order = NULL;
        double *samples = NULL, *s[2][_VARIANT_MAX];
        size_t never = 0;
        int r;

        objs = objs_new(n);
        seq = seq_new(len, n, 1);
        seq2 = seq_new(half, n, 2);
        order = perm_new(n, 3);
        samples = calloc(2 * _VARIANT_MAX * cfg->runs, sizeof(*samples));
        if (!objs || !seq || !seq2 || !order || !samples) {
                r = -ENOMEM;
                goto out_free;
        }
        for (unsigned t = 0; t < 2; t++)
                for (unsigned v = 0; v < _VARIANT_MAX; v++)
                        s[t][v] = samples + (t * _VARIANT_MAX + v) * cfg->runs;

        r = hot_setup(objs, order, n, &never, seq, len, cfg->rotate_every, &lru, &cache,
                      &res->touch_slow_pct);
        if (r < 0)
                goto out_free;

        for (unsigned run = 0; run < cfg->runs; run++)
                for (unsigned t = 0; t < 2; t++)
                        for (unsigned v = 0; v < _VARIANT_MAX; v++) {
                                /*
                                 * Two threads: each its own sequence (half as long, so that
                                 * the work is the same), the same objects, the same lock and
                                 * cache; thread 0 also rotates, every rotate_every / 2 of its
                                 * own accesses, while thread 1 keeps touching.
                                 */
                                struct worker ws[2] = {
                                        { .variant = v, .objs = objs, .seq = seq,
                                          .n = t ? half : len, .cache = cache,
                                          .rotate_every = t ? cfg->rotate_every / 2
                                                            : cfg->rotate_every,
                                          .lru = &lru },
                                        { .variant = v, .objs = objs, .seq = seq2, .n = half,
                                          .cache = cache, .rotate_every = 0, .lru = &lru },
                                };

                                r = run_workers(ws, t + 1, &s[t][v][run]);
                                if (r < 0)
                                        goto out_free;
                        }

        /* Marginal costs: each run's variant minus the same run's plain access, then medians. */
        for (unsigned t = 0; t < 2; t++)
                for (unsigned run = 0; run < cfg->runs; run++) {
                        s[t][VARIANT_TOUCH][run] -= s[t][VARIANT_ACCESS][run];
                        s[t][VARIANT_LRU][run] -= s[t][VARIANT_ACCESS][run];
                }
        res->access_ns = median(s[0][VARIANT_ACCESS], cfg->runs);
        res->touch_ns = median(s[0][VARIANT_TOUCH], cfg->runs);
        res->lru_ns = median(s[0][VARIANT_LRU], cfg->runs);
        res->touch_vs_lru = res->touch_ns / res->lru_ns;
        res->access_2t_ns = median(s[1][VARIANT_ACCESS], cfg->runs);
        res->touch_2t_ns = median(s[1][VARIANT_TOUCH], cfg->runs);
        res->lru_2t_ns = median(s[1][VARIANT_LRU], cfg->runs);
        res->touch_vs_lru_2t = res->touch_2t_ns / res->lru_2t_ns;
        r = 0;
out_free:
        /* The nodes are forgotten with the cache; the objects go with their array. */
        ca_cache_free(cache);
        free(samples);
        free(order);
        free(seq2);
        free(seq);
        free(objs);
        return r;
}

/*
 * ---- Zipf, and the first touch of a period ------------------------------------------------
 *
 * A cache's real traffic is skewed: a few objects take most accesses. Ranks follow Zipf's law
 * with skew ZIPF_SKEW (P(rank k) ~ 1 / k^0.99) over the same 1M objects, hot ranks scattered
 * over memory by a random permutation, and the cache rotates every ZIPF_ROTATE_EVERY accesses:
 * most touches then find the stamp current (two loads, no store), which is where ca_touch()
 * beats a move-to-front that locks and writes two lists at every access.
 *
 * The first touch of a period stores the stamp and bumps hits in the object's line: measured
 * alone with passes that each touch every object once in a random order, rotated before each
 * pass (every touch a first), against the same passes not rotated (no touch a first).
 */

/* @len Zipf-distributed indices below @n, by inverting the CDF; rank r is object perm[r]. */
static uint32_t *zipf_seq_new(size_t len, size_t n, double skew, uint64_t seed)
{
        double *cdf = malloc(n * sizeof(*cdf)), sum = 0;
        uint32_t *perm = perm_new(n, seed ^ 0x5a5a), *s = malloc(len * sizeof(*s));

        if (!cdf || !perm || !s) {
                free(s);
                s = NULL;
                goto out_free;
        }
        for (size_t k = 0; k < n; k++) {
                sum += 1.0 / pow((double)(k + 1), skew);
                cdf[k] = sum;
        }
        for (size_t i = 0; i < len; i++) {
                double u = (double)(rng_next(&seed) >> 11) / 9007199254740992.0 * sum;
                size_t lo = 0, hi = n - 1;

                while (lo < hi) {
                        size_t mid = (lo + hi) / 2;

                        if (cdf[mid] < u)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                s[i] = perm[lo];
        }
out_free:
        free(perm);
        free(cdf);
        return s;
}

/*
 * Single-thread marginal costs over @seq: per run, touch and lru minus the same run's access;
 * medians into ret[variant] (access: its own median).
 */
static int measure_1t(const struct config *cfg, struct obj *objs, struct ca_cache *cache,
                      struct lru *lru, const uint32_t *seq, size_t len, size_t rotate_every,
                      double ret[_VARIANT_MAX])
{
        double *samples = calloc(_VARIANT_MAX * cfg->runs, sizeof(*samples));
        int r = 0;

        if (!samples)
                return -ENOMEM;
        for (unsigned run = 0; run < cfg->runs && r == 0; run++)
                for (unsigned v = 0; v < _VARIANT_MAX && r == 0; v++) {
                        struct worker w = { .variant = v, .objs = objs, .seq = seq, .n = len,
                                            .cache = cache, .rotate_every = rotate_every,
                                            .lru = lru };

                        r = run_workers(&w, 1, &samples[v * cfg->runs + run]);
                }
        if (r == 0) {
                for (unsigned run = 0; run < cfg->runs; run++) {
                        samples[VARIANT_TOUCH * cfg->runs + run] -= samples[run];
                        samples[VARIANT_LRU * cfg->runs + run] -= samples[run];
                }
                for (unsigned v = 0; v < _VARIANT_MAX; v++)
                        ret[v] = median(samples + v * cfg->runs, cfg->runs);
        }
        free(samples);
        return r;
}

static int bench_zipf(const struct config *cfg, struct results *res)
{
        size_t n = cfg->objects, len = cfg->zipf_accesses;
        struct lru lru = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct ca_cache *cache = NULL;
        struct obj *objs = NULL;
        uint32_t *seq = NULL, *order = NULL, *passes = NULL;
        double v[_VARIANT_MAX], first[_VARIANT_MAX], repeat[_VARIANT_MAX];
        size_t never = 0;
        int r;

        objs = objs_new(n);
        seq = zipf_seq_new(len, n, ZIPF_SKEW, 4);
        order = perm_new(n, 3);
        passes = malloc(FIRST_PASSES * n * sizeof(*passes));
        if (!objs || !seq || !order || !passes) {
                r = -ENOMEM;
                goto out_free;
        }
        for (unsigned p = 0; p < FIRST_PASSES; p++) {
                uint32_t *perm = perm_new(n, 10 + p);

                if (!perm) {
                        r = -ENOMEM;
                        goto out_free;
                }
                memcpy(passes + p * n, perm, n * sizeof(*perm));
                free(perm);
        }
        r = hot_setup(objs, order, n, &never, seq, len, cfg->zipf_rotate_every, &lru, &cache,
                      &res->zipf_slow_pct);
        if (r < 0)
                goto out_free;

        r = measure_1t(cfg, objs, cache, &lru, seq, len, cfg->zipf_rotate_every, v);
        if (r < 0)
                goto out_free;
        res->zipf_access_ns = v[VARIANT_ACCESS];
        res->zipf_touch_ns = v[VARIANT_TOUCH];
        res->zipf_lru_ns = v[VARIANT_LRU];
        res->zipf_touch_vs_lru = res->zipf_touch_ns / res->zipf_lru_ns;

        /* every touch the first of its period: a rotation before each pass */
        r = measure_1t(cfg, objs, cache, &lru, passes, FIRST_PASSES * n, n, first);
        if (r < 0)
                goto out_free;
        /* none: no rotation, the stamps current from the pass before */
        sink += loop_touch(cache, objs, passes, n, 0);
        r = measure_1t(cfg, objs, cache, &lru, passes, FIRST_PASSES * n, 0, repeat);
        if (r < 0)
                goto out_free;
        res->first_touch_ns = first[VARIANT_TOUCH];
        res->repeat_touch_ns = repeat[VARIANT_TOUCH];
out_free:
        ca_cache_free(cache);
        free(passes);
        free(order);
        free(seq);
        free(objs);
        return r;
}

/*
 * ---- Aging rate ---------------------------------------------------------------------------
 *
 * Every node due: @n nodes inserted in a random order, single_use_age rotations, then slices
 * until the rotation's work is done. reclaim answers CA_RECLAIMED (the common case of a
 * rotation that finds single-use objects), so each node is looked at, unlinked and forgotten.
 */
static int fill_all_due(struct ca_cache **ret, struct obj *objs, const uint32_t *order, size_t n,
                        size_t *reclaimed)
{
        struct ca_params params = CA_PARAMS_DEFAULT;
        struct ca_cache *cache;
        int r;

        r = ca_cache_new(&count_ops, reclaimed, &params, &cache);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                ca_cache_insert(cache, &objs[order[i]].node);
        for (uint32_t i = 0; i < params.single_use_age; i++)
                ca_cache_rotate(cache);
        *ret = cache;
        return 0;
}

static int bench_age_rate(const struct config *cfg, struct results *res)
{
        size_t n = cfg->age_nodes;
        struct obj *objs = objs_new(n);
        uint32_t *order = perm_new(n, 4);
        double *rate = calloc(cfg->runs, sizeof(*rate));
        int r = -ENOMEM;

        if (!objs || !order || !rate)
                goto out_free;
        for (unsigned run = 0; run < cfg->runs; run++) {
                struct ca_cache *cache;
                size_t reclaimed = 0;
                uint64_t t0, t1;

                r = fill_all_due(&cache, objs, order, n, &reclaimed);
                if (r < 0)
                        goto out_free;
                t0 = now_ns();
                while (ca_cache_age(cache, CA_SLICE_NODES, 0) > 0)
                        ;
                t1 = now_ns();
                ca_cache_free(cache);
                if (reclaimed != n) {
                        fprintf(stderr, "age rate: %zu of %zu nodes reclaimed\n", reclaimed, n);
                        r = -EPROTO;
                        goto out_free;
                }
                rate[run] = (double)n / ((double)(t1 - t0) / 1e9);
        }
        res->age_nodes_per_s = median(rate, cfg->runs);
        r = 0;
out_free:
        free(rate);
        free(order);
        free(objs);
        return r;
}

/*
 * ---- Rotation against the kernel's CLOCK --------------------------------------------------
 *
 * The kernel ages the dcache with a CLOCK over an LRU list: the shrinker walks every dentry
 * (list_lru_walk, isolate = dentry_lru_isolate): a referenced one has DCACHE_REFERENCED
 * cleared and is rotated to the tail (LRU_ROTATE), an unreferenced one is reclaimed. A pass
 * costs the whole cache. Modelled here without d_lock trylock nor refcount check, which only
 * makes the CLOCK cheaper than the kernel's.
 *
 * The fair comparison is one steady state, the same objects, the same touches and the same
 * outcome; only the bookkeeping differs. The workload, per rotation period:
 *   - a hot set H (about 83% of the objects) is used in every period;
 *   - a cohort C (about 8.7%) of new objects is created and used in a burst (lookup, open,
 *     lookup again: one use) and never again: single-use objects, the negative-dentry case.
 *     Two cohorts are resident, the one made in the last period and the one before.
 * CLOCK, one pass per period: H is referenced, so it is rotated; the last period's cohort is
 * referenced (the second put of its burst set the bit), so it is rotated with its bit cleared;
 * the cohort before has been unreferenced for a whole pass and is reclaimed. Aging, with
 * single_use_age = 2 (the default): that same cohort is reclaimed, two rotations after its
 * period. Both reclaim exactly the same objects at the same rotation; the benchmark checks it.
 *
 * What aging looks at in that rotation: the due cohort, plus the part of H whose slot came
 * round. A node of H is refiled, lazily, only when its slot falls due: with max_age = CA_SLOTS
 * it is filed CA_SLOTS - 1 rotations ahead each time, so 1/63 of H falls due per rotation.
 * (max_age is the one policy difference: a hot object that stopped being used would go after
 * max_age rotations here and after one pass under CLOCK. No object here does, so the outcome is
 * the same; the default max_age of 8 would refile 1/7 of H at each rotation instead.) Sizes are
 * solved so that cohort + H/63 is exactly 10% of the cache: C = (63 D - N) / 61, H = N - 2 C.
 *
 * Building that state without running 63 periods over the whole cache: H is inserted in 63
 * groups, one per period; group g is used again in the next period, and so is refiled at the
 * rotation after, to the slot of epoch E + g, where E is the first measured rotation. In period
 * E - 2 the first cohort is made, in period E - 1 the second, and all of H is used. The CLOCK
 * list holds the same objects in insertion order, with the bits that the passes of those
 * periods would have left: set on H and on the last cohort, clear on the older one.
 *
 * Each measured run is one rotation to completion (ca_cache_rotate, then ca_cache_age until 0)
 * and one CLOCK pass; then the next period: the victims come back as the new cohort (inserted
 * in both), and H is used again, in a random order, untimed.
 */
struct clock_list {
        struct ca_list_head head; /* walked from the front; rotated objects go to the tail */
        size_t count;
};

static size_t clock_pass(struct clock_list *cl, struct obj **victims)
{
        size_t walk = cl->count, nv = 0; /* one full pass: what was there when it started */

        while (walk-- > 0) {
                struct ca_list_head *it = cl->head.next;
                struct obj *o = list_entry(it, struct obj, lru);

                if (o->referenced) {
                        o->referenced = 0;
                        list_move_tail(it, &cl->head); /* LRU_ROTATE */
                } else {
                        list_del(it);
                        cl->count--; /* LRU_REMOVED, onto the dispose list */
                        victims[nv++] = o;
                }
        }
        return nv;
}

/* A use of @o, as both sides see it. */
static void obj_use(struct ca_cache *cache, struct obj *o)
{
        ca_touch(cache, &o->node);
        if (!o->referenced)
                o->referenced = 1;
}

static void obj_insert(struct ca_cache *cache, struct clock_list *cl, struct obj *o,
                       bool referenced)
{
        ca_cache_insert(cache, &o->node);
        o->referenced = referenced;
        list_add_tail(&o->lru, &cl->head);
        cl->count++;
}

static void age_to_completion(struct ca_cache *cache)
{
        while (ca_cache_age(cache, CA_SLICE_NODES, 0) > 0)
                ;
}

static int bench_rotate_vs_clock(const struct config *cfg, struct results *res)
{
        const size_t groups = CA_SLOTS - 1, n = cfg->clock_nodes, due_target = n / 10;
        const size_t cohort = (groups * due_target - n) / (groups - 2), hot = n - 2 * cohort;
        const struct ca_params params = { .single_use_age = 2, .max_age = CA_SLOTS };
        const uint32_t first_measured = (uint32_t)groups + 2; /* E */
        struct victims vs = { .cap = n };
        struct clock_list cl = { .count = 0 };
        struct ca_cache *cache = NULL;
        struct obj *objs = NULL, **cvictims = NULL;
        uint32_t *order = NULL, *hot_order = NULL;
        double *rot = NULL, *clk = NULL;
        size_t group_start[CA_SLOTS];
        int r = -ENOMEM;

        objs = objs_new(n);
        order = perm_new(n, 5);      /* order[0, hot) = H, then cohort A, then cohort B */
        hot_order = perm_new(hot, 6); /* the order H is used in, every period */
        vs.v = malloc(n * sizeof(*vs.v));
        cvictims = malloc(n * sizeof(*cvictims));
        rot = calloc(cfg->runs, sizeof(*rot));
        clk = calloc(cfg->runs, sizeof(*clk));
        if (!objs || !order || !hot_order || !vs.v || !cvictims || !rot || !clk)
                goto out_free;
        r = ca_cache_new(&collect_ops, &vs, &params, &cache);
        if (r < 0)
                goto out_free;
        list_init(&cl.head);
        for (size_t g = 0; g <= groups; g++) /* group g is order[group_start[g], [g + 1]) */
                group_start[g] = g * (hot / groups) + (g < hot % groups ? g : hot % groups);

        /* Periods 0 .. E - 2, each followed by its rotation (see above). */
        for (uint32_t e = 0; e + 1 < first_measured; e++) {
                if (e < groups)
                        for (size_t i = group_start[e]; i < group_start[e + 1]; i++)
                                obj_insert(cache, &cl, &objs[order[i]], true);
                if (e >= 1 && e - 1 < groups)
                        for (size_t i = group_start[e - 1]; i < group_start[e]; i++)
                                obj_use(cache, &objs[order[i]]);
                if (e == first_measured - 2)
                        for (size_t i = hot; i < hot + cohort; i++) /* cleared by a pass since */
                                obj_insert(cache, &cl, &objs[order[i]], false);
                ca_cache_rotate(cache);
                age_to_completion(cache);
        }
        /* Period E - 1: the second cohort, and all of H used. */
        for (size_t i = hot + cohort; i < n; i++)
                obj_insert(cache, &cl, &objs[order[i]], true);
        for (size_t i = 0; i < hot; i++)
                obj_use(cache, &objs[order[hot_order[i]]]);
        if (vs.n != 0) {
                fprintf(stderr, "rotate vs clock: %zu nodes reclaimed while building\n", vs.n);
                r = -EPROTO;
                goto out_free;
        }

        for (unsigned run = 0; run < cfg->runs; run++) {
                size_t g = run % groups, due, nv, differ = 0;
                uint64_t t0, t1, t2;

                vs.n = 0;
                t0 = now_ns();
                due = ca_cache_rotate(cache);
                age_to_completion(cache);
                t1 = now_ns();
                nv = clock_pass(&cl, cvictims);
                t2 = now_ns();

                /* Same outcome on both sides, or the comparison means nothing. */
                for (size_t i = 0; i < vs.n; i++)
                        vs.v[i]->mark = run + 1;
                for (size_t i = 0; i < nv; i++)
                        if (cvictims[i]->mark != run + 1)
                                differ++;
                if (due != cohort + group_start[g + 1] - group_start[g] || vs.n != cohort ||
                    nv != cohort || differ > 0) {
                        fprintf(stderr,
                                "rotate vs clock: run %u: %zu due (expected %zu), aging "
                                "reclaimed %zu, CLOCK %zu (%zu of them not by aging), "
                                "expected %zu\n",
                                run, due, cohort + group_start[g + 1] - group_start[g], vs.n,
                                nv, differ, cohort);
                        r = -EPROTO;
                        goto out_free;
                }
                rot[run] = (double)(t1 - t0) / 1e6;
                clk[run] = (double)(t2 - t1) / 1e6;
                res->rotate_due = due;
                res->rotate_reclaimed = vs.n;

                /* The next period: a new cohort (the victims, reused), and H used again. */
                for (size_t i = 0; i < vs.n; i++)
                        obj_insert(cache, &cl, vs.v[i], true);
                for (size_t i = 0; i < hot; i++)
                        obj_use(cache, &objs[order[hot_order[i]]]);
        }
        res->rotate_objects = n;
        res->rotate_ms = median(rot, cfg->runs);
        res->clock_ms = median(clk, cfg->runs);
        res->rotate_vs_clock = res->rotate_ms / res->clock_ms;
        r = 0;
out_free:
        ca_cache_free(cache);
        free(clk);
        free(rot);
        free(cvictims);
        free(vs.v);
        free(hot_order);
        free(order);
        free(objs);
        return r;
}

/*
 * ---- Longest slice ------------------------------------------------------------------------
 *
 * The soft lockups of the seeds come from one walk over everything; here a rotation over any
 * number of due nodes is cut into slices of CA_SLICE_NODES, and what matters is the longest.
 * Every node of a 10M-node cache due at once (as in the aging rate above), no deadline.
 *
 * The wall time of a slice is what an event loop waits for, and what the target is about; on a
 * shared machine it also holds the time the thread was preempted, so the longest slice in
 * thread CPU time is reported beside it: the slice's own work.
 */
static int bench_slices(const struct config *cfg, struct results *res)
{
        size_t n = cfg->slice_nodes, max_slices = n / CA_SLICE_NODES + 2;
        struct obj *objs = objs_new(n);
        uint32_t *order = perm_new(n, 7);
        double *longest = calloc(cfg->runs, sizeof(*longest));
        double *p99 = calloc(cfg->runs, sizeof(*p99));
        double *longest_cpu = calloc(cfg->runs, sizeof(*longest_cpu));
        double *slice = calloc(max_slices, sizeof(*slice));
        int r = -ENOMEM;

        if (!objs || !order || !longest || !p99 || !longest_cpu || !slice)
                goto out_free;
        for (unsigned run = 0; run < cfg->runs; run++) {
                struct ca_cache *cache;
                size_t reclaimed = 0, slices = 0, left;
                uint64_t cpu_max_ns = 0;

                r = fill_all_due(&cache, objs, order, n, &reclaimed);
                if (r < 0)
                        goto out_free;
                do {
                        uint64_t c0 = thread_cpu_ns(), t0 = now_ns(), t1, c1;

                        left = ca_cache_age(cache, CA_SLICE_NODES, 0);
                        t1 = now_ns();
                        c1 = thread_cpu_ns();
                        if (slices < max_slices)
                                slice[slices] = (double)(t1 - t0) / 1e3;
                        if (c1 - c0 > cpu_max_ns)
                                cpu_max_ns = c1 - c0;
                        slices++;
                } while (left > 0);
                ca_cache_free(cache);
                if (reclaimed != n || slices > max_slices) {
                        fprintf(stderr, "slices: %zu of %zu nodes reclaimed in %zu slices\n",
                                reclaimed, n, slices);
                        r = -EPROTO;
                        goto out_free;
                }
                qsort(slice, slices, sizeof(*slice), cmp_double);
                longest[run] = slice[slices - 1];
                p99[run] = slice[(slices * 99) / 100];
                longest_cpu[run] = (double)cpu_max_ns / 1e3;
                res->slices = slices;
        }
        res->longest_slice_us = median(longest, cfg->runs);
        res->slice_p99_us = median(p99, cfg->runs);
        res->longest_slice_cpu_us = median(longest_cpu, cfg->runs);
        r = 0;
out_free:
        free(slice);
        free(longest_cpu);
        free(p99);
        free(longest);
        free(order);
        free(objs);
        return r;
}

/* ---- Output ------------------------------------------------------------------------------ */

static void json_number(const char *name, double v, const char *sep)
{
        if (isfinite(v))
                printf("\"%s\":%.6g%s", name, v, sep);
        else
                printf("\"%s\":null%s", name, sep);
}

static void print_json(const struct config *cfg, const struct results *res)
{
        printf("{\"bench\":\"age\",\"quick\":%s,\"runs\":%u,\"objects\":%zu,\"accesses\":%zu,"
               "\"rotate_every\":%zu,\"object_bytes\":%zu,\"node_bytes\":%zu,",
               cfg->quick ? "true" : "false", cfg->runs, cfg->objects, cfg->accesses,
               cfg->rotate_every, sizeof(struct obj), sizeof(struct ca_node));
        json_number("loadavg", res->loadavg, ",");
        json_number("access_ns", res->access_ns, ",");
        json_number("touch_ns", res->touch_ns, ",");
        json_number("lru_ns", res->lru_ns, ",");
        json_number("touch_vs_lru", res->touch_vs_lru, ",");
        json_number("access_2t_ns", res->access_2t_ns, ",");
        json_number("touch_2t_ns", res->touch_2t_ns, ",");
        json_number("lru_2t_ns", res->lru_2t_ns, ",");
        json_number("touch_vs_lru_2t", res->touch_vs_lru_2t, ",");
        json_number("touch_slow_pct", res->touch_slow_pct, ",");
        printf("\"zipf_skew\":%.2f,\"zipf_accesses\":%zu,\"zipf_rotate_every\":%zu,", ZIPF_SKEW,
               cfg->zipf_accesses, cfg->zipf_rotate_every);
        json_number("zipf_access_ns", res->zipf_access_ns, ",");
        json_number("zipf_touch_ns", res->zipf_touch_ns, ",");
        json_number("zipf_lru_ns", res->zipf_lru_ns, ",");
        json_number("zipf_touch_vs_lru", res->zipf_touch_vs_lru, ",");
        json_number("zipf_slow_pct", res->zipf_slow_pct, ",");
        json_number("first_touch_ns", res->first_touch_ns, ",");
        json_number("repeat_touch_ns", res->repeat_touch_ns, ",");
        printf("\"age_nodes\":%zu,\"age_reclaim\":\"CA_RECLAIMED\",", cfg->age_nodes);
        json_number("age_nodes_per_s", res->age_nodes_per_s, ",");
        printf("\"rotate_objects\":%zu,\"rotate_due\":%zu,\"rotate_reclaimed\":%zu,",
               res->rotate_objects, res->rotate_due, res->rotate_reclaimed);
        json_number("rotate_ms", res->rotate_ms, ",");
        json_number("clock_ms", res->clock_ms, ",");
        json_number("rotate_vs_clock", res->rotate_vs_clock, ",");
        printf("\"slice_nodes\":%zu,\"slice_budget\":%d,\"slices\":%zu,", cfg->slice_nodes,
               CA_SLICE_NODES, res->slices);
        json_number("longest_slice_us", res->longest_slice_us, ",");
        json_number("slice_p99_us", res->slice_p99_us, ",");
        json_number("longest_slice_cpu_us", res->longest_slice_cpu_us, "");
        printf("}\n");
}

static const char *verdict(double v, double target)
{
        return v <= target ? "PASS" : "MISS"; /* NaN is a MISS */
}

static void print_table(const struct config *cfg, const struct results *res)
{
        printf("bench-age%s: median of %u runs; objects of %zu B, struct ca_node %zu B; "
               "load average %.2f at start\n\n",
               cfg->quick ? " --quick" : "", cfg->runs, sizeof(struct obj),
               sizeof(struct ca_node), res->loadavg);
        printf("hot path: %zu objects, %zu random accesses, rotation every %zu accesses\n",
               cfg->objects, cfg->accesses, cfg->rotate_every);
        printf("  %-22s %12s %12s  %s\n", "metric", "value", "target", "");
        printf("  %-22s %9.2f ns\n", "access_ns", res->access_ns);
        printf("  %-22s %9.2f ns %12s  (%.1f%% of touches first in their period)\n",
               "touch_ns", res->touch_ns, "", res->touch_slow_pct);
        printf("  %-22s %9.2f ns\n", "lru_ns", res->lru_ns);
        printf("  %-22s %12.3f %12s  %s\n", "touch_vs_lru", res->touch_vs_lru, "<= 0.2",
               verdict(res->touch_vs_lru, TARGET_TOUCH_VS_LRU));
        printf("  %-22s %9.2f ns\n", "access_2t_ns", res->access_2t_ns);
        printf("  %-22s %9.2f ns\n", "touch_2t_ns", res->touch_2t_ns);
        printf("  %-22s %9.2f ns\n", "lru_2t_ns", res->lru_2t_ns);
        printf("  %-22s %12.3f %12s  %s\n", "touch_vs_lru_2t", res->touch_vs_lru_2t, "<= 0.2",
               verdict(res->touch_vs_lru_2t, TARGET_TOUCH_VS_LRU));
        printf("zipf: %zu objects, %zu accesses of skew %.2f, rotation every %zu accesses\n",
               cfg->objects, cfg->zipf_accesses, ZIPF_SKEW, cfg->zipf_rotate_every);
        printf("  %-22s %9.2f ns\n", "zipf_access_ns", res->zipf_access_ns);
        printf("  %-22s %9.2f ns %12s  (%.1f%% of touches first in their period)\n",
               "zipf_touch_ns", res->zipf_touch_ns, "", res->zipf_slow_pct);
        printf("  %-22s %9.2f ns\n", "zipf_lru_ns", res->zipf_lru_ns);
        printf("  %-22s %12.3f %12s  %s\n", "zipf_touch_vs_lru", res->zipf_touch_vs_lru,
               "<= 0.1", verdict(res->zipf_touch_vs_lru, TARGET_ZIPF_TOUCH_VS_LRU));
        printf("first touch: %d passes over every object in a random order\n", FIRST_PASSES);
        printf("  %-22s %9.2f ns %12s  (rotated before each pass: every touch a first)\n",
               "first_touch_ns", res->first_touch_ns, "");
        printf("  %-22s %9.2f ns %12s  (not rotated: the stamp is current)\n",
               "repeat_touch_ns", res->repeat_touch_ns, "");
        printf("aging: %zu nodes all due, reclaim answers CA_RECLAIMED\n", cfg->age_nodes);
        printf("  %-22s %10.2f M/s\n", "age_nodes_per_s", res->age_nodes_per_s / 1e6);
        printf("rotation: %zu nodes, %zu due (%.1f%%), %zu reclaimed; CLOCK pass over the same\n",
               res->rotate_objects, res->rotate_due,
               100.0 * (double)res->rotate_due / (double)res->rotate_objects,
               res->rotate_reclaimed);
        printf("  %-22s %9.2f ms\n", "rotate_ms", res->rotate_ms);
        printf("  %-22s %9.2f ms\n", "clock_ms", res->clock_ms);
        printf("  %-22s %12.3f %12s  %s\n", "rotate_vs_clock", res->rotate_vs_clock, "<= 0.2",
               verdict(res->rotate_vs_clock, TARGET_ROTATE_VS_CLOCK));
        printf("slices: %zu nodes all due, budget %d nodes, no deadline\n", cfg->slice_nodes,
               CA_SLICE_NODES);
        printf("  %-22s %9.1f us %12s  %s\n", "longest_slice_us", res->longest_slice_us,
               "<= 1000", verdict(res->longest_slice_us, TARGET_LONGEST_SLICE_USEC));
        printf("  %-22s %9.1f us\n", "slice_p99_us", res->slice_p99_us);
        printf("  %-22s %9.1f us %12s  %s  (thread CPU time: the slice's own work)\n",
               "longest_slice_cpu_us", res->longest_slice_cpu_us, "<= 1000",
               verdict(res->longest_slice_cpu_us, TARGET_LONGEST_SLICE_USEC));
        printf("  %-22s %12zu\n", "slices", res->slices);
        printf("  %-22s %9zu B\n", "node_bytes", sizeof(struct ca_node));
}

static void help(void)
{
        printf("Usage: bench-age [--json] [--quick] [--runs N] [--rotate-every N]\n"
               "\n"
               "What cacheage's aging adds to a cache, against the classic alternatives, in one\n"
               "run. Each measure is taken --runs times (default %d); the median is reported.\n"
               "Objects are %zu bytes with the aging node (%zu bytes) and list links embedded.\n"
               "\n"
               "  access_ns        1M objects, 10M accesses in a random order (the same index\n"
               "                   sequence for every variant), each reading the object's key\n"
               "  touch_ns         access + ca_touch(), minus access_ns. The cache is rotated\n"
               "                   before every 1M accesses (one rotation per round of as many\n"
               "                   accesses as objects, never aged): about 63%% of touches are\n"
               "                   the first of their object in the period (slow path), the\n"
               "                   rest the fast path; the table shows the exact share\n"
               "  lru_ns           access + move-to-front in a pthread-mutex-protected\n"
               "                   doubly-linked LRU (links in the object), minus access_ns\n"
               "  touch_vs_lru     touch_ns / lru_ns (target <= 0.2)\n"
               "  touch_vs_lru_2t  the same with two threads at once, each its own sequence of\n"
               "                   5M accesses over the same objects; thread 0 rotates every\n"
               "                   500k of its accesses while thread 1 touches; the LRU shares\n"
               "                   one mutex\n"
               "  zipf_touch_vs_lru  touch_ns / lru_ns over 20M accesses of Zipf skew 0.99 to\n"
               "                   the same 1M objects (hot ones scattered), rotated every 10M\n"
               "                   accesses: the pattern caches see (target <= 0.1)\n"
               "  first_touch_ns   touch minus access when every touch is the first of its\n"
               "                   object in the period (5 passes over all objects, each in a\n"
               "                   random order, rotated before each); repeat_touch_ns the\n"
               "                   same passes not rotated: the difference is what the stores\n"
               "                   of the first touch cost\n"
               "  age_nodes_per_s  1M nodes inserted in a random order, rotated single_use_age\n"
               "                   times so that all are due, then ca_cache_age() until done;\n"
               "                   reclaim answers CA_RECLAIMED\n"
               "  rotate_vs_clock  one rotation (ca_cache_rotate + ca_cache_age until 0) of a\n"
               "                   10M-node cache with 10%% due, against one pass of a kernel-\n"
               "                   style CLOCK (dentry_lru_isolate) over the same nodes and\n"
               "                   touches; both reclaim the same objects (checked); target\n"
               "                   <= 0.2. See the comment in bench/age.c for the workload\n"
               "  longest_slice_us the longest ca_cache_age() call (budget %d nodes, no\n"
               "                   deadline) while aging 10M due nodes (target <= 1000 us),\n"
               "                   in wall time; also its 99th percentile, the slice count,\n"
               "                   and the longest in thread CPU time (without preemption)\n"
               "  node_bytes       sizeof(struct ca_node)\n"
               "\n"
               "Options:\n"
               "  --json     one JSON object on stdout instead of the table\n"
               "  --quick    every size divided by 10 (a smoke run: the objects then fit in\n"
               "             the caches, so the numbers are not the ones to quote)\n"
               "  --runs N   runs per measure, 1..%d (default %d)\n"
               "  --rotate-every N\n"
               "             accesses between two rotations in the hot-path measures (default:\n"
               "             as many as objects, the stress case above; 10000000 = one period\n"
               "             for the whole run, about 10%% first touches, as a busy cache sees)\n"
               "  --help     this text\n"
               "\n"
               "Targets are printed with PASS/MISS; the exit status is 0 unless something\n"
               "failed to run.\n",
               RUNS_DEFAULT, sizeof(struct obj), sizeof(struct ca_node), CA_SLICE_NODES,
               RUNS_MAX, RUNS_DEFAULT);
}

static int parse_argv(int argc, char **argv, struct config *cfg)
{
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "quick", no_argument, NULL, 'q' },
                { "runs", required_argument, NULL, 'r' },
                { "rotate-every", required_argument, NULL, 'R' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        cfg->json = true;
                        break;
                case 'q':
                        cfg->quick = true;
                        break;
                case 'r': {
                        char *end;
                        unsigned long v;

                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end || v < 1 || v > RUNS_MAX) {
                                fprintf(stderr, "Invalid --runs value '%s' (1..%d)\n", optarg,
                                        RUNS_MAX);
                                return -EINVAL;
                        }
                        cfg->runs = (unsigned)v;
                        break;
                }
                case 'R': {
                        char *end;
                        unsigned long long v;

                        errno = 0;
                        v = strtoull(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end || v < 1 || v > SIZE_MAX / 2) {
                                fprintf(stderr, "Invalid --rotate-every value '%s' (accesses, "
                                        "at least 1)\n", optarg);
                                return -EINVAL;
                        }
                        cfg->rotate_every = (size_t)v;
                        break;
                }
                case 'h':
                        help();
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "Unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

int main(int argc, char **argv)
{
        struct config cfg = { .runs = RUNS_DEFAULT };
        struct results res = { 0 };
        size_t scale;
        int r;

        r = parse_argv(argc, argv, &cfg);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        scale = cfg.quick ? 10 : 1;
        cfg.objects = 1000000 / scale;
        cfg.accesses = 10000000 / scale;
        if (!cfg.rotate_every)
                cfg.rotate_every = cfg.objects;
        else if (cfg.quick)
                cfg.rotate_every = cfg.rotate_every / scale ? cfg.rotate_every / scale : 1;
        cfg.age_nodes = 1000000 / scale;
        cfg.clock_nodes = 10000000 / scale;
        cfg.slice_nodes = 10000000 / scale;
        cfg.zipf_accesses = ZIPF_ACCESSES / scale;
        cfg.zipf_rotate_every = ZIPF_ROTATE_EVERY / scale;

        res.loadavg = loadavg_1min();
        /* One phase at a time, each freeing its memory before the next. */
        r = bench_hot_path(&cfg, &res);
        if (r < 0) {
                fprintf(stderr, "Failed to run the hot path benchmark: %s\n", strerror(-r));
                return 1;
        }
        r = bench_zipf(&cfg, &res);
        if (r < 0) {
                fprintf(stderr, "Failed to run the Zipf benchmark: %s\n", strerror(-r));
                return 1;
        }
        r = bench_age_rate(&cfg, &res);
        if (r < 0) {
                fprintf(stderr, "Failed to run the aging rate benchmark: %s\n", strerror(-r));
                return 1;
        }
        r = bench_rotate_vs_clock(&cfg, &res);
        if (r < 0) {
                fprintf(stderr, "Failed to run the rotation benchmark: %s\n", strerror(-r));
                return 1;
        }
        r = bench_slices(&cfg, &res);
        if (r < 0) {
                fprintf(stderr, "Failed to run the slice benchmark: %s\n", strerror(-r));
                return 1;
        }

        if (cfg.json)
                print_json(&cfg, &res);
        else
                print_table(&cfg, &res);
        return 0;
}
