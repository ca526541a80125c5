/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-fidelity: does the model see what the kernel sees? A command runs cold (the dentry
 * cache dropped: `echo 2 > /proc/sys/vm/drop_caches`) without strace, N times, and the changes
 * of /proc/sys/fs/dentry-state's nr_dentry, nr_unused and nr_negative are taken (medians); then
 * once more, cold, under strace (fidelity-capture.c), and the log is replayed into a fresh
 * model with what the capture knew (references, links, missing names, mounts, pinned paths).
 * The two are printed side by side, with "before": the same log replayed as before references
 * and capture information (replay_plain()). Target: each of the model's changes within 5% of the
 * kernel's, or within 5 dentries when the kernel's is under 100.
 *
 *   bench-fidelity [--runs N] [--tries N] [--json] [--keep DIR] [--only NAME[,NAME...]]
 *                  [--check] [-- COMMAND [ARG...]]
 *   bench-fidelity --record LOG [--cwd DIR] -- COMMAND [ARG...]
 *   bench-fidelity --speed LOG [--runs N] [--cwd DIR]
 *
 * Without a command it runs its own workloads (below): those the model was written against,
 * then three commands it was not (held out: they test it). The kernel's counters are global:
 * other work on the machine moves them too, so an idle interval as long as a run is measured
 * the same way and shown as the noise; the figures mean something only on a quiet kernel (a
 * guest of the system lab booted without systemd: doc/benchmarks.md). --check makes the exit
 * status say whether every counter was within the target, every counted run quiet and the
 * idle intervals still. Needs root (drop_caches) and strace.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fidelity.h"

#define RUNS_DEFAULT 5u
#define RUNS_MAX 101u
#define TARGET_PCT 5.0        /* % of the kernel's change */
#define TARGET_SMALL 100      /* below this change, an absolute target */
#define TARGET_ABS 5          /* dentries */
#define SETTLE_S 0.2          /* after drop_caches, before a run: the machine refills */
#define QUIET_S 0.1           /* the windows before and after a run */
#define QUIET_SLACK 2         /* dentries the counters may move in a quiet window */
#define TRIES_DEFAULT 10u     /* runs tried per run counted, at most (--tries) */
#define TRIES_MAX 1000u
#define PATH_DEFAULT "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *const counter_names[NR_COUNTERS] = { "nr_dentry", "nr_unused",
                                                        "nr_negative" };

/* ------------------------------------------------------------------------------------------ */
/* the workloads */

struct workload {
        const char *name;
        const char *what;
        bool tmpfs;                 /* the work directory in /dev/shm, else in /var/tmp */
        const char *setup;          /* sh, once, in the work directory */
        const char *reset;          /* sh, before each run, not measured */
        const char *argv[8];        /* the command, in the work directory */
};

#define PY "/usr/bin/python3"
#define SH "/bin/sh"

static const struct workload workloads[] = {
        { "python-import", "python3 -c 'import json, email, http.client'", false, NULL, NULL,
          { PY, "-c", "import json, email, http.client" } },
        { "unlink-open", "1,000x create a file, unlink it while open, close", false, NULL, NULL,
          { PY, "-c",
            "import os\n"
            "for i in range(1000):\n"
            "    f = open('u%d' % i, 'w'); os.unlink('u%d' % i); f.close()\n" } },
        { "create-unlink", "1,000x create, close, unlink", false, NULL, NULL,
          { PY, "-c",
            "import os\n"
            "for i in range(1000):\n"
            "    open('c%d' % i, 'w').close(); os.unlink('c%d' % i)\n" } },
        { "path-search", "sh: 60 missing commands and 3 found, along the default PATH", false,
          NULL, NULL,
          { SH, "-c",
            "i=0; while [ $i -lt 60 ]; do command -v nosuch$i; i=$((i+1)); done;"
            " command -v ls gcc python3; true" } },
        { "tree-walk", "find -L and ls through links to directories, '..' through a link",
          false,
          "mkdir t && cd t && for d in 1 2 3 4 5 6 7 8; do mkdir d$d;"
          " for f in 1 2 3 4 5 6 7 8 9 10 11 12; do : > d$d/f$f; done; done &&"
          " ln -s d3 l3 && ln -s \"$PWD/d5\" abs5 && ln -s ../d2/f1 d1/lf &&"
          " ln -s nowhere dangling && mkdir d4/sub && ln -s ../../d6 d4/sub/up6",
          NULL,
          { SH, "-c",
            "find -L t -type f | wc -l; ls -L t/l3/.. t/abs5/../d7; cat t/d1/lf"
            " t/d4/sub/up6/f2; stat -L t/dangling t/l3/nope t/abs5/f3/x; true" } },
        { "tmpfs", "sh on tmpfs: 200 files made, 200 missing names, a rename, removals", true,
          NULL, "rm -rf ./*",
          { SH, "-c",
            "i=0; while [ $i -lt 200 ]; do : > f$i; [ -e m$i ]; i=$((i+1)); done;"
            " mkdir d; mv f1 d/; rm -f f2 f3 f4 f5; ls; cat f10; true" } },
        { "proc-pids", "sh: 100 short processes read their own /proc/PID and the shell's; "
          "100 missing names in /proc/PID, 100 files made, 100 missing", false, NULL, "rm -f ./*",
          { SH, "-c",
            "i=0; while [ $i -lt 100 ]; do head -c 64 /proc/self/status /proc/$$/stat"
            " >/dev/null; [ -e /proc/$$/nope$i ]; : > f$i; [ -e m$i ]; i=$((i+1)); done;"
            " true" } },
        { "git-status", "git status --porcelain in a 200-file repository", false,
          "git init -q r && cd r && for d in a b c d e; do mkdir -p src/$d;"
          " for f in $(seq 40); do echo $f > src/$d/f$f.c; done; done &&"
          " printf '*.o\\n' > .gitignore && git add -A &&"
          " git -c user.name=f -c user.email=f@example.org commit -qm init &&"
          " : > untracked.txt && touch src/a/f1.c",
          NULL, { "/usr/bin/git", "-C", "r", "status", "--porcelain" } },
        /* held out (unseen-*): commands not seen while the model was written, which test it */
        { "unseen-perl", "perl -MPOSIX -MFile::Find -e 1", false, NULL, NULL,
          { "/usr/bin/perl", "-MPOSIX", "-MFile::Find", "-e", "1" } },
        { "unseen-ls", "ls -lR /usr/share/doc/dpkg /etc/apt", false, NULL, NULL,
          { "/bin/ls", "-lR", "/usr/share/doc/dpkg", "/etc/apt" } },
        { "unseen-gcc", "gcc -E -x c /dev/null -o /dev/null", false, NULL, NULL,
          { "/usr/bin/gcc", "-E", "-x", "c", "/dev/null", "-o", "/dev/null" } },
};
#define NR_WORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/* ------------------------------------------------------------------------------------------ */
/* the kernel's side */

struct config {
        unsigned runs, tries;
        bool json;
        bool check;           /* --check: the exit status says whether all was within target */
        const char *keep;
        const char *record;
        const char *speed;
        const char *cwd;
        bool only[NR_WORKLOADS]; /* --only NAME[,NAME...]: those workloads alone */
        bool some;            /* --only was given */
        char **argv;          /* after "--" */
};

struct result {
        const char *name, *what;
        struct counts kernel, lo, hi, model, before, idle, idle_lo, idle_hi;
        struct model m;
        double run_s;
        unsigned quiet, idle_quiet;  /* runs that counted were quiet */
        int64_t noise, idle_noise;   /* the most the counters moved around a counted run */
        bool pass[NR_COUNTERS];
        bool done;
        char reason[160];
};

static int dentry_state(int fd, struct counts *ret)
{
        char buf[256];
        long long v[5];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        buf[n] = '\0';
        if (sscanf(buf, "%lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5)
                return -EIO;
        ret->v[NR_DENTRY] = v[0];
        ret->v[NR_UNUSED] = v[1];
        ret->v[NR_NEGATIVE] = v[4];
        return 0;
}

static int drop_caches(void)
{
        int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
        int r = 0;

        if (fd < 0)
                return -errno;
        if (write(fd, "2\n", 2) != 2)
                r = -errno;
        close(fd);
        return r;
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* Medians and extremes of @n samples per counter. */
static void summarise(struct counts *samples, unsigned n, struct counts *med, struct counts *lo,
                      struct counts *hi)
{
        for (int c = 0; c < NR_COUNTERS; c++) {
                int64_t v[RUNS_MAX];

                for (unsigned i = 0; i < n; i++)
                        v[i] = samples[i].v[c];
                qsort(v, n, sizeof(v[0]), cmp_i64);
                med->v[c] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
                lo->v[c] = v[0];
                hi->v[c] = v[n - 1];
        }
}

static int run_sh(const struct command *c, const char *script)
{
        char *argv[] = { SH, "-ec", (char *)script, NULL };

        return script ? run_quiet(c, argv) : 0;
}

/* How far something else moved the counters while we watched for @window_s (the largest). */
static int noise(int dsfd, double window_s, int64_t *ret)
{
        struct counts a, b;
        int r = dentry_state(dsfd, &a);

        if (r < 0)
                return r;
        usleep((useconds_t)(window_s * 1e6));
        r = dentry_state(dsfd, &b);
        if (r < 0)
                return r;
        *ret = 0;
        for (int k = 0; k < NR_COUNTERS; k++) {
                int64_t v = b.v[k] > a.v[k] ? b.v[k] - a.v[k] : a.v[k] - b.v[k];

                if (v > *ret)
                        *ret = v;
        }
        return 0;
}

struct sample {
        struct counts c;
        int64_t noise;  /* the windows around it: the larger of the two */
};

static int cmp_noise(const void *a, const void *b)
{
        int64_t x = ((const struct sample *)a)->noise, y = ((const struct sample *)b)->noise;

        return (x > y) - (x < y);
}

/*
 * @runs cold runs of @c (@c NULL: an idle wait of @idle_s instead), each between two readings
 * of dentry-state from one open file (opening it again would make dentries of its own). The
 * counters are global and other work moves them in bursts (the machine refilling its caches
 * after the drop, builds, tests): a run is quiet when the counters stood still (within
 * QUIET_SLACK) in a window just before it and just after it; an idle interval is quiet when the
 * counters stood still over it as well (a kworker of a loaded guest moved one by 2 once: the next
 * try was still). Runs are tried until @runs were quiet or @tries times @runs were tried; the
 * quietest tried (the smallest movement in their windows) count. *ret_quiet says how many of
 * them were quiet, *ret_noise the largest movement in a counted run's windows.
 */
static int measure(const struct command *c, const char *reset, int dsfd, unsigned runs,
                   unsigned tries, double idle_s, struct counts *med, struct counts *lo,
                   struct counts *hi, double *ret_run_s, unsigned *ret_quiet, int64_t *ret_noise)
{
        struct sample *v = calloc((size_t)tries * runs, sizeof(*v));
        struct counts counted[RUNS_MAX];
        unsigned nq = 0, tried = 0;
        double total = 0;
        int r = 0;

        if (!v)
                return -ENOMEM;
        for (; tried < tries * runs && nq < runs; tried++) {
                int64_t n1 = 0, n2 = 0;
                struct counts a, b;
                double t0;

                if (c && (r = run_sh(c, reset)) < 0)
                        goto out_free;
                if ((r = drop_caches()) < 0)
                        goto out_free;
                usleep((useconds_t)(SETTLE_S * 1e6)); /* the others refill first */
                if ((r = noise(dsfd, QUIET_S, &n1)) < 0 || (r = dentry_state(dsfd, &a)) < 0)
                        goto out_free;
                t0 = now_s();
                if (c)
                        r = run_quiet(c, c->argv);
                else
                        usleep((useconds_t)(idle_s * 1e6));
                total += now_s() - t0;
                if (r < 0 || (r = dentry_state(dsfd, &b)) < 0 ||
                    (r = noise(dsfd, QUIET_S, &n2)) < 0)
                        goto out_free;
                v[tried].noise = n1 > n2 ? n1 : n2;
                for (int k = 0; k < NR_COUNTERS; k++) {
                        int64_t d = b.v[k] - a.v[k], moved = d < 0 ? -d : d;

                        v[tried].c.v[k] = d;
                        /* An idle interval is one long window: its own movement is noise. */
                        if (!c && moved > v[tried].noise)
                                v[tried].noise = moved;
                }
                nq += v[tried].noise <= QUIET_SLACK;
        }
        qsort(v, tried, sizeof(v[0]), cmp_noise);
        for (unsigned i = 0; i < runs && i < tried; i++)
                counted[i] = v[i].c;
        summarise(counted, runs < tried ? runs : tried, med, lo, hi);
        *ret_quiet = nq < runs ? nq : runs;
        *ret_noise = v[(runs < tried ? runs : tried) - 1].noise;
        if (ret_run_s)
                *ret_run_s = total / tried;
out_free:
        free(v);
        return r;
}

static bool within(int64_t kernel, int64_t model)
{
        int64_t diff = model > kernel ? model - kernel : kernel - model;
        int64_t mag = kernel < 0 ? -kernel : kernel;

        if (mag < TARGET_SMALL)
                return diff <= TARGET_ABS;
        return (double)diff * 100.0 <= TARGET_PCT * (double)mag;
}

/* ------------------------------------------------------------------------------------------ */
/* one workload */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path) < 0 ? -1 : 0;
}

static char **make_env(const char *home)
{
        static char path[] = "PATH=" PATH_DEFAULT, lang[] = "LANG=C.UTF-8",
                    locks[] = "GIT_OPTIONAL_LOCKS=0";
        static char homev[PATH_MAX + 8];
        static char *envp[5];

        snprintf(homev, sizeof(homev), "HOME=%s", home);
        envp[0] = path;
        envp[1] = homev;
        envp[2] = lang;
        envp[3] = locks; /* git status: never write the index */
        envp[4] = NULL;
        return envp;
}

static void run_one(const struct config *cfg, int dsfd, const struct workload *w, char **argv,
                    struct result *res)
{
        char dir[PATH_MAX], log[PATH_MAX + 32];
        struct snapshot snap = { 0 };
        struct command c;
        int r;

        *res = (struct result){ .name = w ? w->name : argv[0], .what = w ? w->what : "" };
        snprintf(dir, sizeof(dir), "%s/cacheage-fidelity-XXXXXX",
                 w && w->tmpfs ? "/dev/shm" : "/var/tmp");
        if (cfg->cwd)
                snprintf(dir, sizeof(dir), "%s", cfg->cwd);
        else if (!mkdtemp(dir)) {
                snprintf(res->reason, sizeof(res->reason), "mkdtemp: %s", strerror(errno));
                return;
        }
        c = (struct command){ .argv = w ? (char *const *)w->argv : argv, .cwd = dir,
                              .envp = make_env(dir) };
        /* held by us too, as a shell would hold it: the kernel keeps it across drop_caches */
        if (chdir(dir) < 0) {
                snprintf(res->reason, sizeof(res->reason), "chdir: %s", strerror(errno));
                goto out;
        }
        if (w && (r = run_sh(&c, w->setup)) < 0) {
                snprintf(res->reason, sizeof(res->reason), "setup failed");
                goto out;
        }
        r = measure(&c, w ? w->reset : NULL, dsfd, cfg->runs, cfg->tries, 0, &res->kernel,
                    &res->lo, &res->hi, &res->run_s, &res->quiet, &res->noise);
        if (r == 0)
                r = measure(NULL, NULL, dsfd, cfg->runs, cfg->tries, res->run_s, &res->idle,
                            &res->idle_lo, &res->idle_hi, NULL, &res->idle_quiet,
                            &res->idle_noise);
        if (r < 0) {
                snprintf(res->reason, sizeof(res->reason), "cold runs: %s",
                         r == -ECHILD ? "the command failed" : strerror(-r));
                goto out;
        }

        snprintf(log, sizeof(log), "%s/%s.strace", cfg->keep ? cfg->keep : dir,
                 w ? w->name : "command");
        if (w)
                run_sh(&c, w->reset);
        r = drop_caches();
        if (r == 0)
                r = snapshot_take(&snap);
        if (r == 0)
                r = capture(&c, &snap, log);
        if (r == 0)
                r = replay_capture(log, dir, &res->m);
        if (r == 0)
                r = replay_plain(log, dir, &res->before);
        if (r < 0) {
                snprintf(res->reason, sizeof(res->reason), "capture: %s",
                         r == -ENOENT ? "strace not found" : strerror(-r));
                goto out;
        }
        res->model = res->m.delta;
        for (int k = 0; k < NR_COUNTERS; k++)
                res->pass[k] = within(res->kernel.v[k], res->model.v[k]);
        res->done = true;
out:
        snapshot_done(&snap);
        if (chdir("/") < 0)
                res->done = false;
        if (!cfg->keep && !cfg->cwd) {
                char info[PATH_MAX + 40];

                snprintf(info, sizeof(info), "%s.info", log);
                unlink(info);
                nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        }
}

/* ------------------------------------------------------------------------------------------ */
/* output */

static double pct(int64_t kernel, int64_t model)
{
        return kernel ? 100.0 * (double)(model - kernel) / (double)(kernel < 0 ? -kernel : kernel)
                      : 0.0;
}

static void print_human(const struct config *cfg, const struct result *res, size_t n)
{
        struct utsname u;
        unsigned pass = 0, total = 0;

        uname(&u);
        printf("bench-fidelity: kernel %s; medians of %u cold runs (drop_caches 2) against the "
               "model of one strace capture\n",
               u.release, cfg->runs);
        printf("target: each change within %.0f%% of the kernel's (within %d dentries under %d)\n\n",
               TARGET_PCT, TARGET_ABS, TARGET_SMALL);
        printf("%-14s %-12s %9s %15s %8s %8s  %-6s %8s %8s  %s\n", "workload", "counter",
               "kernel", "(runs)", "model", "diff", "", "before", "diff", "idle (runs)");
        for (size_t i = 0; i < n; i++) {
                const struct result *r = &res[i];

                if (!r->done) {
                        printf("%-14s not measured: %s\n", r->name, r->reason);
                        continue;
                }
                for (int k = 0; k < NR_COUNTERS; k++) {
                        char range[32], idle[40];

                        snprintf(range, sizeof(range), "(%lld..%lld)", (long long)r->lo.v[k],
                                 (long long)r->hi.v[k]);
                        snprintf(idle, sizeof(idle), "%+lld (%lld..%lld)",
                                 (long long)r->idle.v[k], (long long)r->idle_lo.v[k],
                                 (long long)r->idle_hi.v[k]);
                        printf("%-14s %-12s %9lld %15s %8lld %+7.1f%%  %-6s %8lld %+7.1f%%  "
                               "%s\n",
                               k == 0 ? r->name : "", counter_names[k],
                               (long long)r->kernel.v[k], range, (long long)r->model.v[k],
                               pct(r->kernel.v[k], r->model.v[k]),
                               r->pass[k] ? "PASS" : "MISS", (long long)r->before.v[k],
                               pct(r->kernel.v[k], r->before.v[k]), idle);
                        pass += r->pass[k];
                        total++;
                }
                printf("%-14s %u/%u quiet runs, noise <= %lld (idle %u/%u, <= %lld), %.3f s a "
                       "run; %llu events, %llu "
                       "warm; unknown: links %llu, missing %llu, notdir %llu, interp %llu; "
                       "fds unknown %llu\n",
                       "", r->quiet, cfg->runs, (long long)r->noise, r->idle_quiet, cfg->runs,
                       (long long)r->idle_noise, r->run_s,
                       (unsigned long long)r->m.ts.events, (unsigned long long)r->m.rs.warm,
                       (unsigned long long)r->m.rs.guessed_links,
                       (unsigned long long)r->m.rs.guessed_missing,
                       (unsigned long long)r->m.rs.guessed_notdir,
                       (unsigned long long)r->m.rs.guessed_interp,
                       (unsigned long long)r->m.ts.fds_unknown);
        }
        printf("\n%u of %u within target\n", pass, total);
}

static void print_counts(const char *key, const struct counts *c, bool comma)
{
        printf("\"%s\": {\"nr_dentry\": %lld, \"nr_unused\": %lld, \"nr_negative\": %lld}%s",
               key, (long long)c->v[NR_DENTRY], (long long)c->v[NR_UNUSED],
               (long long)c->v[NR_NEGATIVE], comma ? ", " : "");
}

static void print_one_json(const struct result *r)
{
        const struct ca_replay_stats *s = &r->m.rs;

        printf("{\"name\": \"%s\", ", r->name);
        if (!r->done) {
                printf("\"error\": \"%s\"}", r->reason);
                return;
        }
        print_counts("kernel", &r->kernel, true);
        print_counts("model", &r->model, true);
        print_counts("before", &r->before, true);
        print_counts("kernel_min", &r->lo, true);
        print_counts("kernel_max", &r->hi, true);
        print_counts("idle", &r->idle, true);
        printf("\"pass\": {\"nr_dentry\": %s, \"nr_unused\": %s, \"nr_negative\": %s}, ",
               r->pass[0] ? "true" : "false", r->pass[1] ? "true" : "false",
               r->pass[2] ? "true" : "false");
        printf("\"replay\": {\"events\": %llu, \"warm\": %llu, \"held\": %llu, "
               "\"guessed_links\": %llu, \"guessed_missing\": %llu, \"guessed_notdir\": %llu, "
               "\"guessed_interp\": %llu, \"hold_failed\": %llu, \"drop_unknown\": %llu, "
               "\"fixups\": %llu, \"fds_unknown\": %llu}, \"run_s\": %.3f, \"quiet\": %u, "
               "\"noise\": %lld, \"idle_noise\": %lld}",
               (unsigned long long)r->m.ts.events, (unsigned long long)s->warm,
               (unsigned long long)s->held, (unsigned long long)s->guessed_links,
               (unsigned long long)s->guessed_missing, (unsigned long long)s->guessed_notdir,
               (unsigned long long)s->guessed_interp, (unsigned long long)s->hold_failed,
               (unsigned long long)s->drop_unknown, (unsigned long long)r->m.ds.replay_fixups,
               (unsigned long long)r->m.ts.fds_unknown, r->run_s, r->quiet,
               (long long)r->noise, (long long)r->idle_noise);
}

static void print_json(const struct config *cfg, const struct result *res, size_t n)
{
        if (cfg->argv) {
                print_one_json(&res[0]);
                putchar('\n');
                return;
        }
        printf("{\"runs\": %u, \"workloads\": [", cfg->runs);
        for (size_t i = 0; i < n; i++) {
                print_one_json(&res[i]);
                if (i + 1 < n)
                        printf(", ");
        }
        printf("]}\n");
}

/*
 * --check: every counter within the target, every counted run and idle interval quiet, and the
 * idle intervals' medians still (within QUIET_SLACK). Says on stderr what failed. Returns the
 * exit status: 0 or 1.
 */
static int check(const struct config *cfg, const struct result *res, size_t n)
{
        int status = 0;

        for (size_t i = 0; i < n; i++) {
                const struct result *r = &res[i];

                for (int k = 0; k < NR_COUNTERS; k++) {
                        if (!r->pass[k]) {
                                fprintf(stderr, "check: %s: %s %lld in the model, %lld in the kernel\n",
                                        r->name, counter_names[k], (long long)r->model.v[k],
                                        (long long)r->kernel.v[k]);
                                status = 1;
                        }
                        if (r->idle.v[k] > QUIET_SLACK || r->idle.v[k] < -QUIET_SLACK) {
                                fprintf(stderr, "check: %s: idle, %s moved by %lld\n", r->name,
                                        counter_names[k], (long long)r->idle.v[k]);
                                status = 1;
                        }
                }
                if (r->quiet < cfg->runs || r->idle_quiet < cfg->runs) {
                        fprintf(stderr, "check: %s: %u/%u runs and %u/%u idle intervals quiet "
                                "(noise <= %lld, idle <= %lld): not a quiet kernel\n", r->name,
                                r->quiet, cfg->runs, r->idle_quiet, cfg->runs,
                                (long long)r->noise, (long long)r->idle_noise);
                        status = 1;
                }
        }
        return status;
}

/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
        fprintf(f,
                "usage: bench-fidelity [--runs N] [--tries N] [--json] [--keep DIR]\n"
                "                      [--only NAME[,NAME...]] [--check] [-- COMMAND [ARG...]]\n"
                "       bench-fidelity --record LOG [--cwd DIR] -- COMMAND [ARG...]\n"
                "       bench-fidelity --speed LOG [--runs N] [--cwd DIR]\n"
                "  --runs N      cold runs of each command without strace (median; default %u)\n"
                "  --tries N     runs tried per run counted, for quiet ones (default %u)\n"
                "  --json        one JSON object\n"
                "  --keep DIR    keep the strace logs and their .info files in DIR\n"
                "  --only NAME[,NAME...]  run those of its own workloads\n"
                "  --check       exit 1 unless every counter is within the target, every\n"
                "                counted run quiet and the idle intervals still\n"
                "  --record LOG  only capture: LOG and LOG.info, for bench-replay and the like\n"
                "  --speed LOG   the reader's speed on LOG: alone, and with references, LOG.info\n"
                "                if there is one, and a replay\n"
                "  --cwd DIR     where the command runs (default: a new directory in /var/tmp)\n"
                "Without a command: its own workloads, the held-out commands last (unseen-*).\n"
                "Needs root and strace.\n",
                RUNS_DEFAULT, TRIES_DEFAULT);
        fprintf(f, "Workloads:");
        for (size_t i = 0; i < NR_WORKLOADS; i++)
                fprintf(f, " %s", workloads[i].name);
        fprintf(f, "\n");
}

/* --only's list: names of workloads, separated by commas; an unknown one is an error. */
static int parse_only(const char *list, struct config *cfg)
{
        for (const char *p = list; *p;) {
                size_t n = strcspn(p, ","), i;

                for (i = 0; i < NR_WORKLOADS; i++)
                        if (strlen(workloads[i].name) == n && strncmp(workloads[i].name, p, n) == 0)
                                break;
                if (i == NR_WORKLOADS) {
                        fprintf(stderr, "bench-fidelity: no workload %.*s\n", (int)n, p);
                        return -EINVAL;
                }
                cfg->only[i] = cfg->some = true;
                p += n + (p[n] == ',');
        }
        return cfg->some ? 0 : -EINVAL;
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
        *cfg = (struct config){ .runs = RUNS_DEFAULT, .tries = TRIES_DEFAULT };
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (strcmp(a, "--") == 0) {
                        if (i + 1 >= argc)
                                return -EINVAL;
                        cfg->argv = argv + i + 1;
                        break;
                } else if (strcmp(a, "--json") == 0) {
                        cfg->json = true;
                } else if (strcmp(a, "--check") == 0) {
                        cfg->check = true;
                } else if (strcmp(a, "--runs") == 0 && i + 1 < argc) {
                        char *end;
                        unsigned long v = strtoul(argv[++i], &end, 10);

                        if (*end || v < 1 || v > RUNS_MAX)
                                return -EINVAL;
                        cfg->runs = (unsigned)v;
                } else if (strcmp(a, "--tries") == 0 && i + 1 < argc) {
                        char *end;
                        unsigned long v = strtoul(argv[++i], &end, 10);

                        if (*end || v < 1 || v > TRIES_MAX)
                                return -EINVAL;
                        cfg->tries = (unsigned)v;
                } else if (strcmp(a, "--keep") == 0 && i + 1 < argc) {
                        cfg->keep = argv[++i];
                } else if (strcmp(a, "--speed") == 0 && i + 1 < argc) {
                        cfg->speed = argv[++i];
                } else if (strcmp(a, "--record") == 0 && i + 1 < argc) {
                        cfg->record = argv[++i];
                } else if (strcmp(a, "--cwd") == 0 && i + 1 < argc) {
                        cfg->cwd = argv[++i];
                } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
                        if (parse_only(argv[++i], cfg) < 0)
                                return -EINVAL;
                } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        usage(stdout);
                        exit(0);
                } else {
                        return -EINVAL;
                }
        }
        if (cfg->record && !cfg->argv)
                return -EINVAL;
        if (cfg->some && cfg->argv)
                return -EINVAL;
        return 0;
}

/* @name as execvp() would find it, into @out (absolute). */
static int find_program(const char *name, char *out, size_t size)
{
        const char *p = PATH_DEFAULT;

        if (strchr(name, '/'))
                return realpath(name, out) ? 0 : -errno;
        while (*p) {
                size_t n = strcspn(p, ":");

                if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, p, name) < size &&
                    access(out, X_OK) == 0)
                        return 0;
                p += n + (p[n] == ':');
        }
        return -ENOENT;
}

/* One pass of the reader over @log; with @replay, references, LOG.info and a replay too. */
static int speed_pass(const char *log, const char *cwd, bool replay, double *ret_s,
                      uint64_t *ret_lines)
{
        struct ca_trace_stats ts;
        struct ca_trace_event e;
        struct ca_trace *t = NULL;
        struct model m;
        double t0 = now_s();
        int r;

        if (replay) {
                r = replay_capture(log, cwd, &m);
                ts = m.ts;
        } else {
                r = ca_trace_open_path(log, cwd, &t);
                while (r >= 0 && (r = ca_trace_next(t, &e)) == 1)
                        ;
                ca_trace_get_stats(t, &ts);
                ca_trace_free(t);
        }
        *ret_s = now_s() - t0;
        *ret_lines = ts.lines;
        return r;
}

/* --speed: lines a second, medians of cfg->runs passes, the two ways taken in turn. */
static int speed(const struct config *cfg)
{
        double v[2][RUNS_MAX];
        uint64_t lines = 0;
        int r = 0;

        for (unsigned i = 0; i < cfg->runs && r == 0; i++)
                for (int k = 0; k < 2 && r == 0; k++) {
                        double s;

                        r = speed_pass(cfg->speed, cfg->cwd, k == 1, &s, &lines);
                        v[k][i] = (double)lines / s;
                }
        if (r < 0)
                return r;
        for (int k = 0; k < 2; k++) {
                qsort(v[k], cfg->runs, sizeof(v[k][0]), cmp_double);
                printf("%-36s %10.2f M lines/s\n",
                       k ? "read with references and a replay" : "read", v[k][cfg->runs / 2] / 1e6);
        }
        printf("(%llu lines, median of %u passes)\n", (unsigned long long)lines, cfg->runs);
        return 0;
}

/* --record: the capture alone, kept for bench-replay (and its information file). */
static int record(const struct config *cfg, char **argv)
{
        char cwd[PATH_MAX], log[PATH_MAX];
        struct snapshot snap = { 0 };
        struct command c;
        int r;

        if (!realpath(cfg->cwd ? cfg->cwd : ".", cwd))
                return -errno;
        if (cfg->record[0] == '/')
                snprintf(log, sizeof(log), "%s", cfg->record);
        else if (!getcwd(log, sizeof(log)) ||
                 strlen(log) + 1 + strlen(cfg->record) >= sizeof(log))
                return -ENAMETOOLONG;
        else
                strcat(strcat(log, "/"), cfg->record);
        c = (struct command){ .argv = argv, .cwd = cwd, .envp = make_env(cwd) };
        if (chdir(cwd) < 0)
                return -errno;
        r = drop_caches();
        if (r < 0)
                fprintf(stderr, "bench-fidelity: drop_caches: %s, capturing warm\n",
                        strerror(-r));
        r = snapshot_take(&snap);
        if (r == 0)
                r = capture(&c, &snap, log);
        snapshot_done(&snap);
        if (r == 0)
                printf("%s\n%s.info\n", log, log);
        return r;
}

int main(int argc, char **argv)
{
        struct result res[NR_WORKLOADS];
        char prog[PATH_MAX];
        struct config cfg;
        size_t n = 0;
        int dsfd, r;

        if (parse_args(argc, argv, &cfg) < 0) {
                usage(stderr);
                return 2;
        }
        if (cfg.argv) {
                r = find_program(cfg.argv[0], prog, sizeof(prog));
                if (r < 0) {
                        fprintf(stderr, "bench-fidelity: %s: %s\n", cfg.argv[0], strerror(-r));
                        return 2;
                }
                cfg.argv[0] = prog;
        }
        if (cfg.speed) {
                r = speed(&cfg);
                if (r < 0)
                        fprintf(stderr, "bench-fidelity: %s: %s\n", cfg.speed, strerror(-r));
                return r < 0;
        }
        if (cfg.record) {
                r = record(&cfg, cfg.argv);
                if (r < 0)
                        fprintf(stderr, "bench-fidelity: capture failed: %s\n", strerror(-r));
                return r < 0;
        }
        dsfd = open("/proc/sys/fs/dentry-state", O_RDONLY | O_CLOEXEC);
        if (dsfd < 0) {
                fprintf(stderr, "bench-fidelity: /proc/sys/fs/dentry-state: %s\n",
                        strerror(errno));
                return 1;
        }
        if (drop_caches() < 0) {
                fprintf(stderr, "bench-fidelity: cannot drop caches (root needed)\n");
                return 77; /* skipped */
        }
        if (cfg.argv)
                run_one(&cfg, dsfd, NULL, cfg.argv, &res[n++]);
        else
                for (size_t i = 0; i < NR_WORKLOADS; i++)
                        if (!cfg.some || cfg.only[i])
                                run_one(&cfg, dsfd, &workloads[i], NULL, &res[n++]);
        close(dsfd);
        if (cfg.json)
                print_json(&cfg, res, n);
        else
                print_human(&cfg, res, n);
        for (size_t i = 0; i < n; i++)
                if (!res[i].done)
                        return 1;
        return cfg.check ? check(&cfg, res, n) : 0;
}
