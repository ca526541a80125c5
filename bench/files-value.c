/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-files-value: the files adapter against `systemd-tmpfiles --clean` with an Age= line, on
 * the same workload, on relatime, strictatime and noatime mounts, in one run and one table.
 *
 * Each cleaner gets a tree of its own on a tmpfs of its own (tmpfs keeps atime as a disk
 * filesystem does: relatime by default), mounted in a private mount namespace of this process
 * (gone with it), and the same workload, on a clock compressed to seconds:
 *
 *   hot    --hot files (default 50), each read (open, read, close) every --hot-period seconds
 *          (default 3); a read that finds the file gone is a miss, and the file is written again;
 *   dead   --dead files a second (default 20) written once and never read;
 *   late   --late files a second (default 5) written, then read once --late-after seconds later
 *          (default 8: longer than the adapter's default single-use age, shorter than Age=).
 *
 * The cleaners, each on a relatime, a strictatime and a noatime mount:
 *
 *   tmpfiles        `systemd-tmpfiles --clean` of one line `e TREE - - - AGEs` run every
 *                   --interval (default 2 s), as its daily timer runs it; Age= is --age (default
 *                   16 s); it keeps a file while any of its atime, mtime, ctime is younger;
 *   cacheaged ...   the real cacheaged with a files cache on the tree, rotating every interval,
 *                   ages = fixed, single_use_age = max_age = age / interval + 1 (the same rule
 *                   as Age=: a file unused for age goes at the next rotation), with watch =
 *                   fanotify (root; the mark is on the tree's own tmpfs), inotify or atime;
 *   single_use_age 2  the same with watch = inotify and the daemon's default single_use_age:
 *                   a file never read after its write goes after 1 to 2 rotations.
 *
 * Figures (from --warmup on, default age + 2 intervals): the hot files' reads that missed (the
 * cleaner deleted a file still in use), the late files' reads that missed, the dead files present
 * (mean, sampled every second; the ideal is dead-rate x age for the Age= rule), how long a dead
 * file lived (median and longest of those deleted; "kept" when none went), and the CPU each
 * cleaner used (the daemon's, or the sum of tmpfiles' runs).
 *
 * Needs root (mounts, fanotify); without it, exits 77 (a skipped test). Benchmarks report: the
 * exit status is 0 unless something failed to run, or, with --check, a cleaner that sees reads
 * (fanotify, inotify) deleted a hot file, or cacheaged accepted watch = atime on noatime.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-run.h"

#define TICK_USEC 100000       /* the workload's step */
#define SAMPLE_USEC 1000000    /* dead files counted every second */
#define FILE_BYTES 64
#define START_TIMEOUT_USEC 30000000

static const char *const mount_opts[] = { "relatime", "strictatime", "noatime" };
#define N_MOUNTS (sizeof(mount_opts) / sizeof(mount_opts[0]))

enum cleaner {
        CL_TMPFILES,
        CL_FANOTIFY,
        CL_INOTIFY,
        CL_ATIME,
        CL_INOTIFY_2_8,
        N_CLEANERS,
};

static const char *const cleaner_names[] = {
        [CL_TMPFILES] = "systemd-tmpfiles Age=",
        [CL_FANOTIFY] = "cacheaged, fanotify",
        [CL_INOTIFY] = "cacheaged, inotify",
        [CL_ATIME] = "cacheaged, atime",
        [CL_INOTIFY_2_8] = "cacheaged, inotify, single_use_age 2",
};

struct params {
        const char *cacheaged, *plugin_dir;
        unsigned interval_s, age_s, seconds, warmup_s, hot, hot_period_s, dead_per_s, late_per_s;
        unsigned late_after_s;
        bool check;
};

struct tree {
        const char *mount_opt;
        enum cleaner cleaner;
        char mnt[PATH_MAX], path[PATH_MAX + 8], conf[PATH_MAX + 16];
        bool mounted;
        int fd;                     /* the tree's directory */
        struct bench_child proc;    /* the daemon, or the running tmpfiles */
        bool refused;
        char how[128];              /* how uses are seen, as the daemon says */
        uint64_t *dead_gone_usec;   /* per dead file: when first seen gone (0: present) */
        uint64_t hot_reads, hot_misses, late_reads, late_misses;
        uint64_t dead_present_sum, dead_samples;
        uint64_t tmpfiles_runs, tmpfiles_skipped, tmpfiles_failed;
        double cpu_s;
};

/* ---- the files ---- */

static void write_file(struct tree *t, const char *name)
{
        static const char data[FILE_BYTES] = "cache entry";
        int fd = openat(t->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);

        if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data) || close(fd) < 0)
                bench_die("write %s/%s: %s", t->path, name, strerror(errno));
}

/* A use: open, read, close. False when the file is gone. */
static bool read_file(struct tree *t, const char *name)
{
        char buf[FILE_BYTES];
        int fd = openat(t->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0) {
                if (errno == ENOENT)
                        return false;
                bench_die("open %s/%s: %s", t->path, name, strerror(errno));
        }
        if (read(fd, buf, sizeof(buf)) < 0)
                bench_die("read %s/%s: %s", t->path, name, strerror(errno));
        close(fd);
        return true;
}

static bool exists(struct tree *t, const char *name)
{
        struct stat st;

        if (fstatat(t->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return true;
        if (errno != ENOENT)
                bench_die("stat %s/%s: %s", t->path, name, strerror(errno));
        return false;
}

/* ---- the cleaners ---- */

static void tree_setup(struct tree *t, const struct params *p)
{
        const char *dir = bench_run_dir();
        char opts[64];

        snprintf(t->mnt, sizeof(t->mnt), "%s/%s-%d", dir, t->mount_opt, (int)t->cleaner);
        if (mkdir(t->mnt, 0755) < 0)
                bench_die("mkdir %s: %s", t->mnt, strerror(errno));
        snprintf(opts, sizeof(opts), "size=64m,mode=0755");
        if (mount("bench", t->mnt, "tmpfs",
                  strcmp(t->mount_opt, "noatime") == 0       ? MS_NOATIME
                  : strcmp(t->mount_opt, "strictatime") == 0 ? MS_STRICTATIME
                                                             : MS_RELATIME,
                  opts) < 0)
                bench_die("mount a tmpfs on %s: %s", t->mnt, strerror(errno));
        t->mounted = true;
        snprintf(t->path, sizeof(t->path), "%s/cache", t->mnt);
        if (mkdir(t->path, 0755) < 0)
                bench_die("mkdir %s: %s", t->path, strerror(errno));
        t->fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (t->fd < 0)
                bench_die("open %s: %s", t->path, strerror(errno));
        t->proc.pid = -1;
}

static void conf_write(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                bench_die("%s: %s", path, strerror(errno));
}

static void cleaner_start(struct tree *t, const struct params *p)
{
        static const char *const watch[] = {
                [CL_FANOTIFY] = "fanotify", [CL_INOTIFY] = "inotify", [CL_ATIME] = "atime",
                [CL_INOTIFY_2_8] = "inotify",
        };
        /*
         * A file used in the period of rotation k goes at rotation k + ages: (ages - 1) to ages
         * intervals after its last use. tmpfiles takes it at its first run after Age=: Age to
         * Age + interval after. The same rule is ages = Age / interval + 1.
         */
        unsigned ages = p->age_s / p->interval_s + 1;
        char text[4096], log[PATH_MAX + 16], line[1024];

        if (t->cleaner == CL_TMPFILES) {
                snprintf(t->conf, sizeof(t->conf), "%s.tmpfiles.conf", t->mnt);
                snprintf(text, sizeof(text), "e %s - - - %us -\n", t->path, p->age_s);
                conf_write(t->conf, text);
                snprintf(t->how, sizeof(t->how), "atime, mtime, ctime");
                return;
        }
        snprintf(t->conf, sizeof(t->conf), "%s.cacheaged.conf", t->mnt);
        snprintf(text, sizeof(text),
                 "[daemon]\nplugin_dir = %s\nidle_cpu_pressure = 0\nidle_memory_pressure = 0\n"
                 "[cache t]\nadapter = files\npath = %s\nwatch = %s\ninterval = %us\n"
                 "ages = fixed\nsingle_use_age = %u\nmax_age = %u\n",
                 p->plugin_dir, t->path, watch[t->cleaner], p->interval_s,
                 t->cleaner == CL_INOTIFY_2_8 ? 2 : ages, ages);
        conf_write(t->conf, text);
        snprintf(log, sizeof(log), "%s.cacheaged.log", t->mnt);
        {
                const char *argv[] = { p->cacheaged, "--config", t->conf, "--bus", "none",
                                       "--log-level", "debug", NULL };

                bench_child_start(&t->proc, argv, log, NULL, false, false);
        }
        if (bench_wait_log(&t->proc, "uses seen by ", START_TIMEOUT_USEC, line, sizeof(line))) {
                const char *how = strstr(line, "uses seen by ") + strlen("uses seen by ");

                snprintf(t->how, sizeof(t->how), "%.*s", (int)strcspn(how, " ("), how);
                return;
        }
        if (t->proc.pid > 0)
                bench_die("cacheaged did not start on %s (see %s)", t->path, log);
        /* It exited: refused, as it must be for atime on noatime; anything else is a failure. */
        t->refused = true;
        {
                char *logged = bench_read_file(log);
                bool refusing = strstr(logged, "refusing");

                free(logged);
                if (!refusing)
                        bench_die("cacheaged refused %s for another reason (see %s)", t->path,
                                  log);
        }
        snprintf(t->how, sizeof(t->how), "refused");
}

/* A run of tmpfiles that ended: its CPU, and whether it failed. */
static void tmpfiles_reaped(struct tree *t, int status, const struct rusage *ru)
{
        t->cpu_s += (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
                    (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
        t->tmpfiles_failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* tmpfiles' run, every interval; one still running is let be (counted). */
static void tmpfiles_tick(struct tree *t)
{
        struct rusage ru;
        char log[PATH_MAX + 16];
        int status;

        if (t->proc.pid > 0) {
                if (!bench_child_exited(&t->proc, &status, &ru)) {
                        t->tmpfiles_skipped++;
                        return;
                }
                tmpfiles_reaped(t, status, &ru);
        }
        snprintf(log, sizeof(log), "%s.tmpfiles.log", t->mnt);
        {
                const char *argv[] = { "systemd-tmpfiles", "--clean", t->conf, NULL };

                bench_child_start(&t->proc, argv, log, NULL, false, false);
        }
        t->tmpfiles_runs++;
}

static void cleaner_stop(struct tree *t)
{
        if (t->cleaner == CL_TMPFILES) {
                struct rusage ru;
                int status;

                if (t->proc.pid <= 0)
                        return;
                while (!bench_child_exited(&t->proc, &status, &ru))
                        usleep(10000);
                tmpfiles_reaped(t, status, &ru);
                return;
        }
        if (t->proc.pid > 0) {
                t->cpu_s = (double)bench_cpu_usec(t->proc.pid) / 1e6;
                bench_child_stop(&t->proc);
        }
}

static void tree_cleanup(struct tree *t)
{
        if (t->fd >= 0)
                close(t->fd);
        if (t->mounted && umount2(t->mnt, MNT_DETACH) < 0)
                fprintf(stderr, "%s: umount %s: %s\n", bench_prog, t->mnt, strerror(errno));
        free(t->dead_gone_usec);
}

/* ---- the run ---- */

static void run(const struct params *p, struct tree *trees, size_t n)
{
        size_t n_dead = (size_t)p->dead_per_s * p->seconds, n_late = (size_t)p->late_per_s * p->seconds;
        uint64_t *dead_at = calloc(n_dead + 1, sizeof(*dead_at));
        uint64_t *late_at = calloc(n_late + 1, sizeof(*late_at));
        uint64_t t0, next_clean, next_sample, dead_done = 0, late_done = 0, late_read = 0;
        uint64_t hot_done = 0;
        char name[64];

        if (!dead_at || !late_at)
                bench_die("out of memory");
        for (size_t i = 0; i < n; i++) {
                trees[i].dead_gone_usec = calloc(n_dead + 1, sizeof(uint64_t));
                if (!trees[i].dead_gone_usec)
                        bench_die("out of memory");
                for (unsigned h = 0; h < p->hot; h++) {
                        snprintf(name, sizeof(name), "hot-%04u", h);
                        write_file(&trees[i], name);
                }
        }
        t0 = bench_now_usec();
        next_clean = t0 + (uint64_t)p->interval_s * 1000000;
        next_sample = t0 + SAMPLE_USEC;
        for (;;) {
                uint64_t now = bench_now_usec(), t = now - t0;
                bool warm = t >= (uint64_t)p->warmup_s * 1000000, ended = t >= (uint64_t)p->seconds * 1000000;
                uint64_t due;

                if (ended)
                        break;
                for (due = p->dead_per_s * t / 1000000; dead_done < due && dead_done < n_dead;
                     dead_done++) {
                        snprintf(name, sizeof(name), "dead-%06" PRIu64, dead_done);
                        for (size_t i = 0; i < n; i++)
                                write_file(&trees[i], name);
                        dead_at[dead_done] = now;
                }
                for (due = p->late_per_s * t / 1000000; late_done < due && late_done < n_late;
                     late_done++) {
                        snprintf(name, sizeof(name), "late-%06" PRIu64, late_done);
                        for (size_t i = 0; i < n; i++)
                                write_file(&trees[i], name);
                        late_at[late_done] = now;
                }
                for (; late_read < late_done &&
                       late_at[late_read] + (uint64_t)p->late_after_s * 1000000 <= now;
                     late_read++) {
                        snprintf(name, sizeof(name), "late-%06" PRIu64, late_read);
                        for (size_t i = 0; i < n; i++) {
                                bool hit = read_file(&trees[i], name);

                                trees[i].late_reads += warm;
                                trees[i].late_misses += warm && !hit;
                        }
                }
                due = (uint64_t)p->hot * t / ((uint64_t)p->hot_period_s * 1000000);
                if (due - hot_done > p->hot)
                        hot_done = due - p->hot; /* a stall: one pass, not several */
                for (; hot_done < due; hot_done++) {
                        snprintf(name, sizeof(name), "hot-%04" PRIu64, hot_done % p->hot);
                        for (size_t i = 0; i < n; i++) {
                                bool hit = read_file(&trees[i], name);

                                trees[i].hot_reads += warm;
                                trees[i].hot_misses += warm && !hit;
                                if (!hit) /* cache-aside: made again */
                                        write_file(&trees[i], name);
                        }
                }
                if (now >= next_clean) {
                        for (size_t i = 0; i < n; i++)
                                if (trees[i].cleaner == CL_TMPFILES)
                                        tmpfiles_tick(&trees[i]);
                        next_clean += (uint64_t)p->interval_s * 1000000;
                }
                if (now >= next_sample) {
                        /* The dead files still there; one gone stays gone (never written again). */
                        for (size_t i = 0; i < n; i++) {
                                uint64_t present = 0;

                                for (uint64_t d = 0; d < dead_done; d++) {
                                        if (trees[i].dead_gone_usec[d])
                                                continue;
                                        snprintf(name, sizeof(name), "dead-%06" PRIu64, d);
                                        if (exists(&trees[i], name))
                                                present++;
                                        else
                                                trees[i].dead_gone_usec[d] = now;
                                }
                                if (warm) {
                                        trees[i].dead_present_sum += present;
                                        trees[i].dead_samples++;
                                }
                        }
                        next_sample += SAMPLE_USEC;
                }
                bench_sleep_until(t0 + t + TICK_USEC);
        }
        /* How long each dead file lived: from its write to the first sample that missed it. */
        for (size_t i = 0; i < n; i++)
                for (uint64_t d = 0; d < dead_done; d++)
                        if (trees[i].dead_gone_usec[d])
                                trees[i].dead_gone_usec[d] -= dead_at[d];
        free(late_at);
        free(dead_at);
}

/* ---- the table ---- */

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* The median and longest life of the dead files that went ("kept" when none did). */
static void lifetimes(const struct tree *t, size_t n_dead, char *buf, size_t size)
{
        uint64_t *v = malloc((n_dead + 1) * sizeof(*v));
        size_t n = 0, kept = 0;

        if (!v)
                bench_die("out of memory");
        for (size_t d = 0; d < n_dead; d++)
                if (t->dead_gone_usec[d])
                        v[n++] = t->dead_gone_usec[d];
                else
                        kept++;
        if (n == 0)
                snprintf(buf, size, "kept");
        else {
                qsort(v, n, sizeof(*v), cmp_u64);
                snprintf(buf, size, "%.0f s (%.0f s)", (double)v[n / 2] / 1e6,
                         (double)v[n - 1] / 1e6);
        }
        free(v);
}

static const char *pct(char *buf, uint64_t part, uint64_t whole)
{
        if (whole == 0)
                snprintf(buf, 32, "-");
        else
                snprintf(buf, 32, "%.1f%% (%" PRIu64 ")", 100.0 * (double)part / (double)whole,
                         part);
        return buf;
}

static void print_table(const struct params *p, const struct tree *trees, size_t n,
                        double load_start, double load_end)
{
        printf("%u hot files read every %u s; %u dead files/s written, never read; %u late "
               "files/s read once %u s after their write; %u s, figures from %u s on. "
               "systemd-tmpfiles --clean every %u s with Age=%us; cacheaged interval %u s, "
               "single_use_age = max_age = %u (or single_use_age 2), ages = fixed. Each on a "
               "tmpfs of its own. Load average %.2f at start, %.2f at the end.\n\n",
               p->hot, p->hot_period_s, p->dead_per_s, p->late_per_s, p->late_after_s,
               p->seconds, p->warmup_s, p->interval_s, p->age_s, p->interval_s,
               p->age_s / p->interval_s + 1, load_start, load_end);
        printf("| mount | cleaner | uses seen by | hot reads missed | late reads missed | "
               "dead files present (mean) | a dead file's life: median (longest) | CPU |\n");
        printf("|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < n; i++) {
                const struct tree *t = &trees[i];
                char a[32], b[32], life[64];

                if (t->refused) {
                        printf("| %s | %s | refused: no use of a file can be seen | - | - | - | "
                               "- | - |\n", t->mount_opt, cleaner_names[t->cleaner]);
                        continue;
                }
                lifetimes(t, (size_t)p->dead_per_s * p->seconds, life, sizeof(life));
                printf("| %s | %s | %s | %s | %s | %.0f | %s | %.2f s |\n", t->mount_opt,
                       cleaner_names[t->cleaner], t->how, pct(a, t->hot_misses, t->hot_reads),
                       pct(b, t->late_misses, t->late_reads),
                       t->dead_samples ? (double)t->dead_present_sum / (double)t->dead_samples : 0,
                       life, t->cpu_s);
        }
        printf("\n");
        for (size_t i = 0; i < n; i++)
                if (trees[i].cleaner == CL_TMPFILES)
                        printf("tmpfiles on %s: %" PRIu64 " runs, %" PRIu64 " failed, %" PRIu64
                               " skipped (the last still running)\n", trees[i].mount_opt,
                               trees[i].tmpfiles_runs, trees[i].tmpfiles_failed,
                               trees[i].tmpfiles_skipped);
}

static void usage(void)
{
        printf("Usage: %s --cacheaged PATH --plugin-dir DIR [OPTIONS]\n"
               "  --interval S      cacheaged's interval and tmpfiles' period (default 2)\n"
               "  --age S           Age=, and the adapter's ages in intervals (default 16)\n"
               "  --seconds S       the workload's length (default 80)\n"
               "  --warmup S        figures from S seconds on (default age + 2 intervals)\n"
               "  --hot N           hot files (default 50)\n"
               "  --hot-period S    each read every S seconds (default 3)\n"
               "  --dead N          dead files written a second (default 20)\n"
               "  --late N          late files written a second (default 5)\n"
               "  --late-after S    a late file's read, S seconds after its write (default 8)\n"
               "  --check           a short run for the test suite\n",
               bench_prog);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "cacheaged", required_argument, NULL, 'c' },
                { "plugin-dir", required_argument, NULL, 'p' },
                { "interval", required_argument, NULL, 'i' },
                { "age", required_argument, NULL, 'a' },
                { "seconds", required_argument, NULL, 's' },
                { "warmup", required_argument, NULL, 'w' },
                { "hot", required_argument, NULL, 'H' },
                { "hot-period", required_argument, NULL, 'P' },
                { "dead", required_argument, NULL, 'd' },
                { "late", required_argument, NULL, 'l' },
                { "late-after", required_argument, NULL, 'L' },
                { "check", no_argument, NULL, 'k' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct params p = { .interval_s = 2, .age_s = 16, .seconds = 80, .hot = 50,
                            .hot_period_s = 3, .dead_per_s = 20, .late_per_s = 5,
                            .late_after_s = 8 };
        struct tree trees[N_MOUNTS * N_CLEANERS];
        char *cacheaged, *plugin_dir;
        size_t n = 0;
        bool failed = false;
        double load_start;
        int c;

        bench_prog = "bench-files-value";
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;

                switch (c) {
                case 'c':
                        p.cacheaged = optarg;
                        break;
                case 'p':
                        p.plugin_dir = optarg;
                        break;
                case 'i':
                        p.interval_s = (unsigned)v;
                        break;
                case 'a':
                        p.age_s = (unsigned)v;
                        break;
                case 's':
                        p.seconds = (unsigned)v;
                        break;
                case 'w':
                        p.warmup_s = (unsigned)v;
                        break;
                case 'H':
                        p.hot = (unsigned)v;
                        break;
                case 'P':
                        p.hot_period_s = (unsigned)v;
                        break;
                case 'd':
                        p.dead_per_s = (unsigned)v;
                        break;
                case 'l':
                        p.late_per_s = (unsigned)v;
                        break;
                case 'L':
                        p.late_after_s = (unsigned)v;
                        break;
                case 'k':
                        p.check = true;
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        usage();
                        return 2;
                }
        }
        if (p.check) {
                p.interval_s = 1;
                p.age_s = 4;
                p.seconds = 14;
                p.hot = 20;
                p.hot_period_s = 1;
                p.late_after_s = 3;
        }
        if (!p.warmup_s)
                p.warmup_s = p.age_s + 2 * p.interval_s;
        if (!p.cacheaged || !p.plugin_dir || p.interval_s < 1 || p.age_s < p.interval_s ||
            p.warmup_s >= p.seconds || p.hot < 1 || p.hot_period_s < 1) {
                usage();
                return 2;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "%s: needs root (tmpfs mounts, fanotify): skipped\n", bench_prog);
                return 77;
        }
        /* Absolute paths, for the configuration files. */
        cacheaged = realpath(p.cacheaged, NULL);
        plugin_dir = realpath(p.plugin_dir, NULL);
        if (!cacheaged || !plugin_dir)
                bench_die("--cacheaged or --plugin-dir: %s", strerror(errno));
        p.cacheaged = cacheaged;
        p.plugin_dir = plugin_dir;
        signal(SIGPIPE, SIG_IGN);
        /* The mounts live in a mount namespace of this process: they go when it goes. */
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                bench_die("a private mount namespace: %s", strerror(errno));

        load_start = bench_loadavg();
        for (size_t m = 0; m < N_MOUNTS; m++)
                for (int cl = 0; cl < N_CLEANERS; cl++) {
                        trees[n] = (struct tree){ .mount_opt = mount_opts[m], .cleaner = cl,
                                                  .fd = -1 };
                        tree_setup(&trees[n], &p);
                        cleaner_start(&trees[n], &p);
                        n++;
                }
        run(&p, trees, n);
        for (size_t i = 0; i < n; i++)
                cleaner_stop(&trees[i]);
        print_table(&p, trees, n, load_start, bench_loadavg());

        for (size_t i = 0; i < n; i++) {
                const struct tree *t = &trees[i];

                if ((t->cleaner == CL_FANOTIFY || t->cleaner == CL_INOTIFY ||
                     t->cleaner == CL_INOTIFY_2_8) && t->hot_misses) {
                        fprintf(stderr, "%s: %s on %s deleted hot files (%" PRIu64 " reads "
                                "missed)\n", bench_prog, cleaner_names[t->cleaner], t->mount_opt,
                                t->hot_misses);
                        failed = true;
                }
                if (t->cleaner == CL_ATIME && (strcmp(t->mount_opt, "noatime") == 0) != t->refused) {
                        fprintf(stderr, "%s: watch = atime on %s was %s\n", bench_prog,
                                t->mount_opt, t->refused ? "refused" : "accepted");
                        failed = true;
                }
                if (t->tmpfiles_failed) {
                        fprintf(stderr, "%s: systemd-tmpfiles failed %" PRIu64 " times on %s\n",
                                bench_prog, t->tmpfiles_failed, t->mount_opt);
                        failed = true;
                }
        }
        for (size_t i = 0; i < n; i++)
                tree_cleanup(&trees[i]);
        free(cacheaged);
        free(plugin_dir);
        return failed && p.check ? 1 : 0;
}
