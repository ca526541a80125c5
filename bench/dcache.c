/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-dcache: what the dentry-cache model costs and what tail-negative buys, in one run.
 *
 *   memory      resident bytes per dentry at 10M dentries (short names), from the growth of
 *               RSS (/proc/self/statm) over the build, against the kernel's 192;
 *   lookups     cached 3-component path walks per second (all hits; dget/dput per step);
 *   soft lockup seed 004's case: one directory with 100 positive and 20M negative children
 *               (built by lookups that miss, so under tail_negative the final put sweeps each
 *               negative to the tail, the real mechanism), and the fsnotify "watch this
 *               directory" walk timed without tail_negative (a stock kernel: every child) and
 *               with it (the positives and one stop); the speedup is their ratio;
 *   fidelity    a real program under `strace -f -ttt -e trace=%file` stats N distinct
 *               missing names in a fresh directory on disk; the log is replayed into a fresh
 *               model, and the model's negative dentries under that directory are set beside
 *               the kernel's own increase of nr_negative (/proc/sys/fs/dentry-state) over the
 *               run. The kernel's figure is global, so the drift over an idle interval of the
 *               same length is measured as well and reported as noise.
 *
 * Benchmarks report, they do not assert: the exit status is 0 unless something failed to run.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cacheage/dcache.h"
#include "cacheage/replay.h"
#include "cacheage/trace.h"

#define DENTRIES_DEFAULT 10000000u   /* dentries for the memory figure */
#define NEGATIVES_DEFAULT 20000000u  /* negative children in the soft-lockup case */
#define POSITIVES 100u               /* positive children in the soft-lockup case */
#define FIDELITY_NAMES 20000u        /* missing names stat'ed under strace */
#define LOOKUP_FANOUT 64u            /* the lookup tree: 64 x 64 x 64 files */
#define LOOKUP_PATHS 65536u          /* distinct paths cycled through */
#define FILES_PER_DIR 1000u          /* memory figure: files per directory */

/* Targets, printed next to the results (PASS/MISS); never turned into an exit status. */
#define TARGET_DENTRY_BYTES 128.0
#define TARGET_WATCH_SPEEDUP 1000.0
#define TARGET_FIDELITY_PCT 2.0

struct config {
        size_t dentries;
        size_t negatives;
        size_t fidelity_names;
        double lookup_seconds;
        bool json, quick, fidelity;
};

struct fidelity {
        bool done;
        char reason[160];             /* why it was not done */
        char dir[PATH_MAX];
        uint64_t events;              /* replayed */
        uint64_t model_negative;      /* the model's negative dentries under dir */
        int64_t kernel_negative;      /* the kernel's nr_negative increase over the run */
        int64_t kernel_noise;         /* its drift over an idle interval as long */
        double error_pct;
        double run_s;
};

struct results {
        size_t struct_bytes;
        size_t dentries;
        double dentry_bytes, create_ns;
        size_t lookup_files;
        double lookups_per_s, lookup_ns;
        size_t negatives;
        double build_full_s, build_tail_s;
        size_t full_visited, tail_visited;
        uint64_t swept;
        double watch_full_ms, watch_tail_us, watch_speedup;
        struct fidelity fid;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t rss_bytes(void)
{
        unsigned long size = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "re");

        if (!f)
                return 0;
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
                resident = 0;
        fclose(f);
        return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* A name without snprintf: the builds make tens of millions. */
static size_t make_name(char *buf, char prefix, size_t n)
{
        char tmp[24];
        size_t len = 0, i = 0;

        do {
                tmp[len++] = (char)('0' + n % 10);
                n /= 10;
        } while (n);
        buf[i++] = prefix;
        while (len)
                buf[i++] = tmp[--len];
        return i;
}

/* A child of @parent as a lookup makes it: d_alloc, d_add (positive or not), dput. */
static int add_child(struct ca_dcache *d, struct ca_dentry *parent, char prefix, size_t n,
                     bool positive, bool dir, struct ca_dentry **ret_held)
{
        struct ca_dentry *de;
        char name[32];
        size_t len = make_name(name, prefix, n);
        int r;

        r = ca_dcache_alloc(d, parent, name, len, &de);
        if (r < 0)
                return r;
        r = ca_dcache_add(d, de, positive, dir);
        if (r < 0) {
                ca_dcache_put(d, de);
                return r;
        }
        if (ret_held)
                *ret_held = de;
        else
                ca_dcache_put(d, de);
        return 0;
}

/* ------------------------------------------------------------------------------------------ */

static int bench_memory(const struct config *cfg, struct results *res)
{
        size_t dirs = cfg->dentries / (FILES_PER_DIR + 1), count = 0, before, after;
        struct ca_dcache *d;
        double t0;
        int r;

        if (dirs == 0)
                dirs = 1;
        r = ca_dcache_new(NULL, &d);
        if (r < 0)
                return r;
        before = rss_bytes();
        t0 = now_s();
        for (size_t i = 0; i < dirs && r == 0; i++) {
                struct ca_dentry *dir;

                r = add_child(d, ca_dcache_root(d), 'd', i, true, true, &dir);
                if (r < 0)
                        break;
                count++;
                for (size_t j = 0; j < FILES_PER_DIR && r == 0; j++, count++)
                        r = add_child(d, dir, 'f', j, true, false, NULL);
                ca_dcache_put(d, dir);
        }
        res->create_ns = (now_s() - t0) * 1e9 / (double)(count ? count : 1);
        after = rss_bytes();
        res->dentries = count;
        {
                struct ca_dcache_stats st;

                ca_dcache_stats(d, &st);
                res->struct_bytes = (size_t)st.dentry_bytes;
        }
        res->dentry_bytes = count ? (double)(after - before) / (double)count : 0;
        ca_dcache_free(d);
        return r;
}

static uint64_t xorshift(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

static int bench_lookups(const struct config *cfg, struct results *res)
{
        const unsigned n = LOOKUP_FANOUT;
        struct ca_dcache *d;
        char (*paths)[32];
        uint64_t rng = 0x9e3779b97f4a7c15ull;
        size_t lookups = 0;
        double t0, elapsed;
        int r;

        r = ca_dcache_new(NULL, &d);
        if (r < 0)
                return r;
        for (unsigned a = 0; a < n && r == 0; a++) {
                struct ca_dentry *da;

                r = add_child(d, ca_dcache_root(d), 'd', a, true, true, &da);
                for (unsigned b = 0; b < n && r == 0; b++) {
                        struct ca_dentry *db;

                        r = add_child(d, da, 'e', b, true, true, &db);
                        for (unsigned c = 0; c < n && r == 0; c++)
                                r = add_child(d, db, 'f', c, true, false, NULL);
                        if (r == 0)
                                ca_dcache_put(d, db);
                }
                if (r == 0)
                        ca_dcache_put(d, da);
        }
        res->lookup_files = (size_t)n * n * n;
        paths = malloc(sizeof(*paths) * LOOKUP_PATHS);
        if (r < 0 || !paths) {
                free(paths);
                ca_dcache_free(d);
                return r < 0 ? r : -ENOMEM;
        }
        for (size_t i = 0; i < LOOKUP_PATHS; i++)
                snprintf(paths[i], sizeof(paths[i]), "/d%u/e%u/f%u",
                         (unsigned)(xorshift(&rng) % n), (unsigned)(xorshift(&rng) % n),
                         (unsigned)(xorshift(&rng) % n));

        t0 = now_s();
        do {
                for (size_t i = 0; i < 4096; i++) {
                        struct ca_dentry *de;

                        r = ca_dcache_path_lookup(d, paths[xorshift(&rng) % LOOKUP_PATHS], 0,
                                                  &de);
                        if (r < 0)
                                goto out;
                        ca_dcache_put(d, de);
                }
                lookups += 4096;
                elapsed = now_s() - t0;
        } while (elapsed < cfg->lookup_seconds);
        res->lookups_per_s = (double)lookups / elapsed;
        res->lookup_ns = elapsed * 1e9 / (double)lookups;
out:
        free(paths);
        ca_dcache_free(d);
        return r;
}

/*
 * One directory, "/big": half the positives, half the negatives, the other halves, so that
 * in list order (newest first) positives and negatives are interleaved in two runs.
 */
static int build_big(struct ca_dcache *d, size_t negatives, struct ca_dentry **ret_big)
{
        struct ca_dentry *big;
        size_t neg = 0;
        int r;

        r = add_child(d, ca_dcache_root(d), 'b', 0, true, true, &big);
        if (r < 0)
                return r;
        for (int half = 0; half < 2 && r == 0; half++) {
                for (size_t i = 0; i < POSITIVES / 2 && r == 0; i++)
                        r = add_child(d, big, 'p', half * (POSITIVES / 2) + i, true, false, NULL);
                for (size_t end = half ? negatives : negatives / 2; neg < end && r == 0; neg++)
                        r = add_child(d, big, 'n', neg, false, false, NULL);
        }
        if (r < 0) {
                ca_dcache_put(d, big);
                return r;
        }
        *ret_big = big;
        return 0;
}

static int bench_watch(const struct config *cfg, struct results *res)
{
        res->negatives = cfg->negatives;
        for (int tail = 0; tail < 2; tail++) {
                struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;
                struct ca_dcache_stats st;
                struct ca_dentry *big;
                struct ca_dcache *d;
                unsigned runs = tail ? 1000 : 3;
                double t0, best = 1e30;
                size_t visited = 0;
                int r;

                p.tail_negative = tail;
                r = ca_dcache_new(&p, &d);
                if (r < 0)
                        return r;
                t0 = now_s();
                r = build_big(d, cfg->negatives, &big);
                if (r < 0) {
                        ca_dcache_free(d);
                        return r;
                }
                if (tail)
                        res->build_tail_s = now_s() - t0;
                else
                        res->build_full_s = now_s() - t0;
                /* the full walk: best of a few; the tail walk: mean of many (it is ~1 us) */
                if (tail) {
                        t0 = now_s();
                        for (unsigned i = 0; i < runs; i++)
                                visited = ca_dcache_watch_dir(d, big, i % 2 == 0);
                        best = (now_s() - t0) / runs;
                } else
                        for (unsigned i = 0; i < runs; i++) {
                                double s = now_s(), e;

                                visited = ca_dcache_watch_dir(d, big, i % 2 == 0);
                                e = now_s() - s;
                                if (e < best)
                                        best = e;
                        }
                ca_dcache_stats(d, &st);
                if (tail) {
                        res->watch_tail_us = best * 1e6;
                        res->tail_visited = visited;
                        res->swept = st.swept;
                } else {
                        res->watch_full_ms = best * 1e3;
                        res->full_visited = visited;
                }
                ca_dcache_put(d, big);
                ca_dcache_free(d);
        }
        res->watch_speedup = res->watch_tail_us > 0
                                     ? res->watch_full_ms * 1e3 / res->watch_tail_us
                                     : 0;
        /* cross-checks: the two walks must have seen what the model says is there */
        if (res->full_visited != cfg->negatives + POSITIVES ||
            res->tail_visited != POSITIVES + 1 || res->swept != cfg->negatives) {
                fprintf(stderr, "watch: visited %zu and %zu, swept %lu: model broken\n",
                        res->full_visited, res->tail_visited, (unsigned long)res->swept);
                return -EUCLEAN;
        }
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* fidelity */

static int read_nr_negative(int64_t *ret)
{
        unsigned long long v[6];
        FILE *f = fopen("/proc/sys/fs/dentry-state", "re");
        int n;

        if (!f)
                return -errno;
        n = fscanf(f, "%llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
        fclose(f);
        if (n < 5)
                return -EIO;
        *ret = (int64_t)v[4];
        return 0;
}

/* The traced program: stat @n distinct missing names in @dir. */
static int stat_missing(const char *dir, size_t n)
{
        char path[PATH_MAX];
        struct stat st;

        for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/missing-%zu", dir, i);
                if (stat(path, &st) == 0)
                        return 1;
        }
        return 0;
}

static int run_strace(const char *log, const char *exe, const char *dir, size_t n)
{
        char count[32];
        pid_t pid;
        int status;

        snprintf(count, sizeof(count), "%zu", n);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                if (null >= 0) {
                        dup2(null, STDIN_FILENO);
                        dup2(null, STDOUT_FILENO);
                        dup2(null, STDERR_FILENO);
                }
                /* a sanitizer build's leak check refuses to run under ptrace */
                {
                        const char *o = getenv("ASAN_OPTIONS");
                        char opts[512];

                        snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0", o ? o : "",
                                 o && *o ? ":" : "");
                        setenv("ASAN_OPTIONS", opts, 1);
                }
                execlp("strace", "strace", "-f", "-ttt", "-e", "trace=%file", "-o", log, exe,
                       "--stat-missing", dir, count, (char *)NULL);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -ENOENT : -ECHILD;
        return 0;
}

static void bench_fidelity(const struct config *cfg, struct fidelity *fid)
{
        char exe[PATH_MAX], log[PATH_MAX + 16], cwd[PATH_MAX];
        struct ca_dcache *d = NULL;
        struct ca_trace *t = NULL;
        struct ca_trace_event e;
        struct ca_dentry *dir;
        int64_t k0, k1, k2;
        double t0;
        ssize_t n;
        int r;

        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n < 0 || !getcwd(cwd, sizeof(cwd))) {
                snprintf(fid->reason, sizeof(fid->reason), "cannot find this program");
                return;
        }
        exe[n] = '\0';
        /* on disk: tmpfs deletes negative dentries at once, the kernel would count none */
        snprintf(fid->dir, sizeof(fid->dir), "/var/tmp/cacheage-fidelity-XXXXXX");
        if (!mkdtemp(fid->dir)) {
                snprintf(fid->reason, sizeof(fid->reason), "mkdtemp: %s", strerror(errno));
                return;
        }
        snprintf(log, sizeof(log), "%s.strace", fid->dir);

        r = read_nr_negative(&k0);
        if (r < 0) {
                snprintf(fid->reason, sizeof(fid->reason), "dentry-state: %s", strerror(-r));
                goto out;
        }
        t0 = now_s();
        r = run_strace(log, exe, fid->dir, cfg->fidelity_names);
        fid->run_s = now_s() - t0;
        if (r < 0) {
                snprintf(fid->reason, sizeof(fid->reason), "strace run failed: %s",
                         r == -ENOENT ? "strace not found" : strerror(-r));
                goto out;
        }
        (void)read_nr_negative(&k1);
        /* the kernel's figure is global: how much does it drift in as long, idle? */
        usleep((useconds_t)(fid->run_s * 1e6));
        (void)read_nr_negative(&k2);
        fid->kernel_negative = k1 - k0;
        fid->kernel_noise = k2 - k1;

        r = ca_trace_open_path(log, cwd, &t);
        if (r >= 0)
                r = ca_dcache_new(NULL, &d);
        while (r >= 0 && (r = ca_trace_next(t, &e)) == 1)
                if (ca_dcache_replay(d, &e) == 0)
                        fid->events++;
        if (r < 0) {
                snprintf(fid->reason, sizeof(fid->reason), "replay failed: %s", strerror(-r));
                goto out;
        }
        r = ca_dcache_path_lookup(d, fid->dir,
                                  CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NOTOUCH, &dir);
        if (r < 0) {
                snprintf(fid->reason, sizeof(fid->reason), "directory not in the replay");
                goto out;
        }
        {
                struct ca_dcache_dir_stats ds;

                ca_dcache_dir_stats(d, dir, &ds);
                fid->model_negative = ds.negative;
        }
        ca_dcache_put(d, dir);
        fid->error_pct = fid->kernel_negative
                                 ? 100.0 * ((double)fid->model_negative -
                                            (double)fid->kernel_negative) /
                                           (double)fid->kernel_negative
                                 : 100.0;
        fid->done = true;
out:
        ca_dcache_free(d);
        ca_trace_free(t);
        unlink(log);
        rmdir(fid->dir);
}

/* ------------------------------------------------------------------------------------------ */

static const char *verdict(bool pass)
{
        return pass ? "PASS" : "MISS";
}

static void print_human(const struct config *cfg, const struct results *res)
{
        const struct fidelity *f = &res->fid;

        printf("bench-dcache%s: struct ca_dentry %zu B (kernel struct dentry 192 B)\n\n",
               cfg->quick ? " (quick)" : "", res->struct_bytes);
        printf("  %-22s %14s %12s\n", "metric", "value", "target");
        printf("  %-22s %12.1f B %12s  %s  (%zu dentries, %.0f ns each to create)\n",
               "dentry_bytes", res->dentry_bytes, "<= 128",
               verdict(res->dentry_bytes <= TARGET_DENTRY_BYTES), res->dentries, res->create_ns);
        printf("  %-22s %14.0f %12s        (%.0f ns each; %zu cached files)\n", "lookups_per_s",
               res->lookups_per_s, "", res->lookup_ns, res->lookup_files);
        printf("  %-22s %11.1f ms %12s        (%zu children visited; built in %.1f s)\n",
               "watch_full_ms", res->watch_full_ms, "", res->full_visited, res->build_full_s);
        printf("  %-22s %11.3f us %12s        (%zu children visited; built in %.1f s, %lu swept)\n",
               "watch_tail_us", res->watch_tail_us, "", res->tail_visited, res->build_tail_s,
               (unsigned long)res->swept);
        printf("  %-22s %13.0fx %12s  %s  (%zu negative, %u positive children)\n",
               "watch_speedup", res->watch_speedup, ">= 1000x",
               verdict(res->watch_speedup >= TARGET_WATCH_SPEEDUP), res->negatives, POSITIVES);
        if (f->done)
                printf("  %-22s %+12.2f %% %12s  %s  (model %lu negative dentries under the "
                       "directory, kernel +%ld nr_negative, idle drift %+ld; %lu events, "
                       "%zu names)\n",
                       "fidelity", f->error_pct, "within 2%",
                       verdict(f->error_pct <= TARGET_FIDELITY_PCT &&
                               f->error_pct >= -TARGET_FIDELITY_PCT),
                       (unsigned long)f->model_negative, (long)f->kernel_negative,
                       (long)f->kernel_noise, (unsigned long)f->events, cfg->fidelity_names);
        else
                printf("  %-22s %14s %12s        (%s)\n", "fidelity", "-", "within 2%",
                       f->reason[0] ? f->reason : "not run");
}

static void print_json(const struct config *cfg, const struct results *res)
{
        const struct fidelity *f = &res->fid;

        printf("{\"bench\":\"dcache\",\"quick\":%s,\"dentry_struct_bytes\":%zu,"
               "\"dentries\":%zu,\"dentry_bytes\":%.2f,\"create_ns\":%.1f,"
               "\"lookup_files\":%zu,\"lookups_per_s\":%.0f,\"lookup_ns\":%.1f,"
               "\"negatives\":%zu,\"positives\":%u,\"watch_full_ms\":%.3f,"
               "\"watch_tail_us\":%.4f,\"watch_speedup\":%.1f,\"watch_full_visited\":%zu,"
               "\"watch_tail_visited\":%zu,\"swept\":%lu,",
               cfg->quick ? "true" : "false", res->struct_bytes, res->dentries, res->dentry_bytes,
               res->create_ns, res->lookup_files, res->lookups_per_s, res->lookup_ns,
               res->negatives, POSITIVES, res->watch_full_ms, res->watch_tail_us,
               res->watch_speedup, res->full_visited, res->tail_visited,
               (unsigned long)res->swept);
        /* fidelity: null when it could not run here (no strace, no dentry-state) */
        if (f->done)
                printf("\"fidelity\":{\"names\":%zu,\"events\":%lu,\"model_negative\":%lu,"
                       "\"kernel_negative\":%ld,\"kernel_noise\":%ld,\"error_pct\":%.3f}}\n",
                       cfg->fidelity_names, (unsigned long)f->events,
                       (unsigned long)f->model_negative, (long)f->kernel_negative,
                       (long)f->kernel_noise, f->error_pct);
        else
                printf("\"fidelity\":null,\"fidelity_reason\":\"%s\"}\n",
                       f->reason[0] ? f->reason : "not run");
}

static void usage(const char *argv0)
{
        printf("%s [--json] [--quick] [--negatives N] [--dentries N] [--no-fidelity]\n"
               "  --negatives N   negative children in the soft-lockup case (default %u)\n"
               "  --dentries N    dentries for the memory figure (default %u)\n",
               argv0, NEGATIVES_DEFAULT, DENTRIES_DEFAULT);
}

static int parse_size(const char *s, size_t *ret)
{
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > (1ull << 34))
                return -EINVAL;
        *ret = (size_t)v;
        return 0;
}

int main(int argc, char **argv)
{
        enum { OPT_NEGATIVES = 256, OPT_DENTRIES, OPT_NO_FIDELITY, OPT_STAT_MISSING };
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "quick", no_argument, NULL, 'q' },
                { "negatives", required_argument, NULL, OPT_NEGATIVES },
                { "dentries", required_argument, NULL, OPT_DENTRIES },
                { "no-fidelity", no_argument, NULL, OPT_NO_FIDELITY },
                { "stat-missing", no_argument, NULL, OPT_STAT_MISSING },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct config cfg = {
                .dentries = DENTRIES_DEFAULT,
                .negatives = NEGATIVES_DEFAULT,
                .fidelity_names = FIDELITY_NAMES,
                .lookup_seconds = 1.0,
                .fidelity = true,
        };
        bool negatives_set = false, dentries_set = false;
        struct results res = { 0 };
        int c, r;

        while ((c = getopt_long(argc, argv, "jqh", options, NULL)) >= 0) {
                switch (c) {
                case 'j':
                        cfg.json = true;
                        break;
                case 'q':
                        cfg.quick = true;
                        break;
                case OPT_NEGATIVES:
                        if (parse_size(optarg, &cfg.negatives) < 0) {
                                fprintf(stderr, "bad --negatives: %s\n", optarg);
                                return 2;
                        }
                        negatives_set = true;
                        break;
                case OPT_DENTRIES:
                        if (parse_size(optarg, &cfg.dentries) < 0) {
                                fprintf(stderr, "bad --dentries: %s\n", optarg);
                                return 2;
                        }
                        dentries_set = true;
                        break;
                case OPT_NO_FIDELITY:
                        cfg.fidelity = false;
                        break;
                case OPT_STAT_MISSING: {
                        /* the program traced by the fidelity check: DIR N */
                        size_t n;

                        if (optind + 2 > argc || parse_size(argv[optind + 1], &n) < 0)
                                return 2;
                        return stat_missing(argv[optind], n);
                }
                case 'h':
                        usage(argv[0]);
                        return 0;
                default:
                        usage(argv[0]);
                        return 2;
                }
        }
        if (cfg.quick) {
                if (!negatives_set)
                        cfg.negatives = 1000000;
                if (!dentries_set)
                        cfg.dentries = 1000000;
                cfg.lookup_seconds = 0.2;
                cfg.fidelity_names = 5000;
        }

        r = bench_memory(&cfg, &res);
        if (r >= 0)
                r = bench_lookups(&cfg, &res);
        if (r >= 0)
                r = bench_watch(&cfg, &res);
        if (r < 0) {
                fprintf(stderr, "bench-dcache: %s\n", strerror(-r));
                return 1;
        }
        if (cfg.fidelity)
                bench_fidelity(&cfg, &res.fid);
        else
                snprintf(res.fid.reason, sizeof(res.fid.reason), "--no-fidelity");
        if (cfg.json)
                print_json(&cfg, &res);
        else
                print_human(&cfg, &res);
        return 0;
}
