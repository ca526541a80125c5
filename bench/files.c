/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-files: what the files adapter costs, on a real tree, in one run.
 *
 *   tree        --files N files (default 100,000) of 64 bytes, 1,000 to a directory, named as
 *               thumbnail caches name theirs (an md5 in hex and ".png", 36 characters), made
 *               under --dir (default /tmp: the filesystem the adapter would age);
 *   walk        the baseline: the least any rescan must do, a plain walk of the same tree in
 *               this process (openat O_DIRECTORY|O_NOFOLLOW, readdir, statx per entry), the
 *               median of --runs walks;
 *   scans       the real cacheaged (--bus none) with one files cache on the tree: its first
 *               scan (every file new), its steady scans (nothing changed) against the walk,
 *               and the longest step it held its loop for, against [daemon] slice_time;
 *   memory      the daemon's VmRSS with the tree tracked, less that of the same daemon on an
 *               empty directory, per file;
 *   deletions   nobody reads the files, so the rotation single_use_age deletes them all: the
 *               run's time, against a plain loop (statx, unlinkat) deleting an identical tree;
 *               the longest check and unlink of one file (on the adapter's worker thread)
 *               against the run's longest step on the loop (handing files over, taking the
 *               answers back).
 *   outside     what a daemon watching an EMPTY cache directory costs everyone else: a process
 *               that has nothing to do with the cache opens and reads --outside-files small
 *               files (default 2,000) beside the tree, on the same filesystem, in a loop, for
 *               --outside-seconds (default 3) per run; with no daemon, then with the daemon
 *               under watch = inotify, fanotify and auto, in turn, --runs times: that process's
 *               opens per second against no daemon's in the same round, and the CPU time the
 *               daemon used meanwhile (utime + stime of /proc/PID/stat), all of it for events
 *               outside its tree. --outside-only runs this part alone.
 *
 * Figures are ratios against baselines measured in the same run, because these machines are
 * noisy. Benchmarks report, they do not assert: the exit status is 0 unless something failed
 * to run.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-run.h"

#define FILES_DEFAULT 100000u
#define FILES_PER_DIR 1000u
#define FILE_BYTES 64
#define RUNS_DEFAULT 5
#define SLICE_TIME_USEC 2000 /* [daemon] slice_time, as the bench's configuration sets it */
#define WAIT_SEC 3600        /* for anything the daemon does: deletions on a slow disk too */

#define OUTSIDE_FILES_DEFAULT 2000u
#define OUTSIDE_SECONDS_DEFAULT 3u

struct config {
        const char *cacheaged, *plugin_dir, *dir;
        unsigned files, runs, outside_files, outside_seconds;
        bool json, keep, outside_only;
};

/* The outside case, one row per way of watching (OUT_NONE: no daemon at all). */
enum { OUT_NONE, OUT_INOTIFY, OUT_FANOTIFY, OUT_AUTO, OUT_MODES };

static const char *const out_mode_names[OUT_MODES] = { "none", "inotify", "fanotify", "auto" };

struct outside {
        unsigned runs;
        double opens_per_s[OUT_MODES][32];
        double ratio[OUT_MODES][32];     /* against OUT_NONE of the same round */
        double opens_per_cpu_s[OUT_MODES][32]; /* per second of the reader's own CPU time */
        double cpu_ratio[OUT_MODES][32];
        double daemon_cpu_s[OUT_MODES][32]; /* per second of the reader's run */
        char seen_by[OUT_MODES][16];     /* what the daemon's log says it watches with */
        double loadavg_start, loadavg_end;
};

struct results {
        unsigned files, dirs;
        const char *watch;
        double make_s;
        double walk_ms;
        double first_scan_ms, scan_ms, scan_vs_walk;
        double rotation_us;
        uint64_t longest_step_us, longest_step_cpu_us;
        double rss_empty_kb, rss_full_kb, bytes_per_file;
        double delete_ms, plain_delete_ms, delete_vs_plain, deletes_per_s;
        uint64_t deleted;
        uint64_t delete_step_us, delete_step_cpu_us; /* the run's longest step on the loop */
        uint64_t longest_delete_us; /* one file's check and unlink, on the worker */
        double loadavg; /* 1-minute load average at the start: how shared the machine was */
        struct outside out;
};

static void die(const char *what)
{
        fprintf(stderr, "bench-files: %s: %s\n", what, strerror(errno));
        exit(1);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* ---- the tree ---- */

static uint64_t mix(uint64_t x)
{
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        return x ^ (x >> 33);
}

static void tree_sync(const char *path)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || syncfs(fd) < 0)
                die(path);
        close(fd);
}

/* A new file of FILE_BYTES bytes @c at @path. */
static void make_file(const char *path, char c)
{
        char data[FILE_BYTES];
        int fd;

        memset(data, c, sizeof(data));
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data) || close(fd) < 0)
                die(path);
}

static void make_tree(const char *root, unsigned files)
{
        char path[4096];

        if (mkdir(root, 0755) < 0)
                die(root);
        for (unsigned i = 0; i < files; i++) {
                if (i % FILES_PER_DIR == 0) {
                        snprintf(path, sizeof(path), "%s/%02x", root, i / FILES_PER_DIR);
                        if (mkdir(path, 0755) < 0)
                                die(path);
                }
                snprintf(path, sizeof(path), "%s/%02x/%016" PRIx64 "%016" PRIx64 ".png", root,
                         i / FILES_PER_DIR, mix(i), mix(~(uint64_t)i));
                make_file(path, 'x');
        }
        /*
         * Written back, as a cache's old files are: a file still in delayed allocation has no
         * block to free, and on a filesystem mounted with discard (this machine's root) freeing
         * one is a synchronous discard per file. Both trees are deleted in that same state.
         */
        tree_sync(root);
}

/* The least a rescan must do; with @unlink, the least a deletion must do too. */
static unsigned walk(int dir_fd, bool do_unlink)
{
        unsigned n = 0;
        DIR *d = fdopendir(dir_fd);
        struct dirent *de;

        if (!d)
                die("fdopendir");
        while ((de = readdir(d))) {
                struct statx sx;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (statx(dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
                        die(de->d_name);
                if (S_ISDIR(sx.stx_mode)) {
                        int fd = openat(dirfd(d), de->d_name,
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                        if (fd < 0)
                                die(de->d_name);
                        n += walk(fd, do_unlink);
                        if (do_unlink && unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                                die(de->d_name);
                } else {
                        n++;
                        if (do_unlink && unlinkat(dirfd(d), de->d_name, 0) < 0)
                                die(de->d_name);
                }
        }
        closedir(d);
        return n;
}

static int open_dir(const char *path)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0)
                die(path);
        return fd;
}

/* ---- the daemon ---- */

struct daemon {
        pid_t pid;
        char log[4096];
};

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                die(path);
}

static void daemon_start(struct daemon *d, const struct config *cfg, const char *work,
                         const char *name, const char *tree, unsigned single_use_age,
                         const char *watch)
{
        char conf[4096], text[8192], psi[2048];
        pid_t pid;

        snprintf(psi, sizeof(psi), "%s/psi", work);
        mkdir(psi, 0755);
        /* Idle pressure figures: rotations are not put off on a busy machine. */
        snprintf(conf, sizeof(conf), "%s/cpu", psi);
        write_text(conf, "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        snprintf(conf, sizeof(conf), "%s/memory", psi);
        write_text(conf, "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        snprintf(conf, sizeof(conf), "%s/%s.conf", work, name);
        snprintf(text, sizeof(text),
                 "[daemon]\nplugin_dir = %s\ninterval = 1s\nslice_time = %uus\n"
                 "[cache t]\nadapter = files\npath = %s\nsingle_use_age = %u\nmax_age = %u\n"
                 "watch = %s\n",
                 cfg->plugin_dir, SLICE_TIME_USEC, tree, single_use_age, single_use_age, watch);
        write_text(conf, text);
        snprintf(d->log, sizeof(d->log), "%s/%s.log", work, name);
        pid = fork();
        if (pid < 0)
                die("fork");
        if (pid == 0) {
                int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(127);
                setenv("CACHEAGED_PSI_DIR", psi, 1);
                unsetenv("NOTIFY_SOCKET");
                execl(cfg->cacheaged, cfg->cacheaged, "--config", conf, "--bus", "none",
                      "--log-level", "debug", (char *)NULL);
                _exit(127);
        }
        d->pid = pid;
}

static char *read_all(const char *path)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0;

        if (!f)
                return strdup("");
        if (getdelim(&buf, &len, '\0', f) < 0) {
                free(buf);
                buf = strdup("");
        }
        fclose(f);
        return buf;
}

/* Wait for @needle in the daemon's log; the whole line it is in (static). */
static const char *daemon_wait(struct daemon *d, const char *needle)
{
        static char line[1024];
        uint64_t until = bench_now_usec() + (uint64_t)WAIT_SEC * 1000000;

        for (;;) {
                char *log = read_all(d->log), *p = strstr(log, needle);
                int status;

                if (p) {
                        while (p > log && p[-1] != '\n')
                                p--;
                        snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
                        free(log);
                        return line;
                }
                free(log);
                if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
                        fprintf(stderr, "bench-files: cacheaged exited; its log: %s\n", d->log);
                        exit(1);
                }
                if (bench_now_usec() > until) {
                        fprintf(stderr, "bench-files: no '%s' in %s\n", needle, d->log);
                        exit(1);
                }
                usleep(20000);
        }
}

static double daemon_rss_kb(struct daemon *d)
{
        char path[64], *status, *p;
        double kb = 0;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
        status = read_all(path);
        p = strstr(status, "VmRSS:");
        if (p)
                kb = strtod(p + strlen("VmRSS:"), NULL);
        free(status);
        return kb;
}

static void daemon_stop(struct daemon *d)
{
        int status;

        kill(d->pid, SIGTERM);
        waitpid(d->pid, &status, 0);
}

/* "scan N done in X ms": X. */
static double scan_ms(struct daemon *d, unsigned n)
{
        char needle[64];

        snprintf(needle, sizeof(needle), "t: scan %u done in ", n);
        return strtod(strstr(daemon_wait(d, needle), needle) + strlen(needle), NULL);
}

static uint64_t figure_after(const char *line, const char *word)
{
        const char *p = strstr(line, word);

        return p ? strtoull(p + strlen(word), NULL, 10) : 0;
}

/* ---- outside the tree ---- */

static void make_outside(const char *dir, unsigned files)
{
        char path[4096];

        if (mkdir(dir, 0755) < 0)
                die(dir);
        for (unsigned i = 0; i < files; i++) {
                snprintf(path, sizeof(path), "%s/%05u", dir, i);
                make_file(path, 'o');
        }
}

/*
 * A process with nothing to do with the cache: it opens and reads the @files files of @dir in
 * turn for @seconds. Returns its opens per second of the clock, and in *ret_per_cpu_s per
 * second of its own CPU time (what a watch adds to each open, whatever else the machine runs).
 */
static double outside_reader(const char *dir, unsigned files, unsigned seconds,
                             double *ret_per_cpu_s)
{
        uint64_t opens = 0, t0, t1;
        struct rusage ru;
        int p[2], status;
        pid_t pid;

        if (pipe(p) < 0)
                die("pipe");
        pid = fork();
        if (pid < 0)
                die("fork");
        if (pid == 0) {
                char path[4096], buf[FILE_BYTES];
                uint64_t until = bench_now_usec() + (uint64_t)seconds * 1000000, n = 0;

                close(p[0]);
                while (bench_now_usec() < until) {
                        for (unsigned i = 0; i < files; i++) {
                                int fd;

                                snprintf(path, sizeof(path), "%s/%05u", dir, i);
                                fd = open(path, O_RDONLY | O_CLOEXEC);
                                if (fd < 0 || read(fd, buf, sizeof(buf)) < 0)
                                        _exit(1);
                                close(fd);
                                n++;
                        }
                }
                if (write(p[1], &n, sizeof(n)) != sizeof(n))
                        _exit(1);
                _exit(0);
        }
        close(p[1]);
        t0 = bench_now_usec();
        if (read(p[0], &opens, sizeof(opens)) != sizeof(opens))
                die("the outside reader");
        t1 = bench_now_usec();
        close(p[0]);
        if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-files: the outside reader failed\n");
                exit(1);
        }
        *ret_per_cpu_s = (double)opens / ((double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                                          (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
        return (double)opens / ((double)(t1 - t0) / 1e6);
}

/* The CPU time @pid has used, user and system, in seconds. */
static double process_cpu_s(pid_t pid)
{
        char path[64], *stat, *p;
        unsigned long long utime = 0, stime = 0;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        stat = read_all(path);
        p = strrchr(stat, ')');
        /* After the command: state (3), ... utime (14), stime (15). */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                         &stime) != 2) {
                fprintf(stderr, "bench-files: cannot read %s\n", path);
                exit(1);
        }
        free(stat);
        return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_row(const void *a, const void *b)
{
        return cmp_double(a, b);
}

static double median(const double *v, unsigned n)
{
        double s[32];

        memcpy(s, v, n * sizeof(double));
        qsort(s, n, sizeof(double), cmp_row);
        return s[n / 2];
}

static void run_outside(const struct config *cfg, const char *work, struct outside *out)
{
        char empty[2048], other[2048];
        unsigned seconds = cfg->outside_seconds;

        snprintf(empty, sizeof(empty), "%s/outside-cache", work);
        snprintf(other, sizeof(other), "%s/elsewhere", work);
        if (mkdir(empty, 0755) < 0)
                die(empty);
        make_outside(other, cfg->outside_files);
        out->runs = cfg->runs;
        out->loadavg_start = bench_loadavg();
        snprintf(out->seen_by[OUT_NONE], sizeof(out->seen_by[0]), "-");
        /* Rounds of the four, so that each ratio is against the same minute's baseline. */
        for (unsigned r = 0; r < cfg->runs; r++) {
                for (int m = OUT_NONE; m < OUT_MODES; m++) {
                        struct daemon d;
                        double cpu0 = 0, cpu1 = 0;

                        if (m != OUT_NONE) {
                                const char *line;

                                daemon_start(&d, cfg, work, out_mode_names[m], empty, 2,
                                             out_mode_names[m]);
                                daemon_wait(&d, "t: rotation 1 done:");
                                line = strstr(daemon_wait(&d, ": uses seen by "),
                                              ": uses seen by ") + strlen(": uses seen by ");
                                snprintf(out->seen_by[m], sizeof(out->seen_by[m]), "%.*s",
                                         (int)strcspn(line, " "), line);
                                cpu0 = process_cpu_s(d.pid);
                        }
                        out->opens_per_s[m][r] = outside_reader(other, cfg->outside_files,
                                                                seconds,
                                                                &out->opens_per_cpu_s[m][r]);
                        if (m != OUT_NONE) {
                                cpu1 = process_cpu_s(d.pid);
                                daemon_stop(&d);
                        }
                        out->daemon_cpu_s[m][r] = (cpu1 - cpu0) / seconds;
                        out->ratio[m][r] = out->opens_per_s[m][r] / out->opens_per_s[OUT_NONE][r];
                        out->cpu_ratio[m][r] = out->opens_per_cpu_s[m][r] /
                                               out->opens_per_cpu_s[OUT_NONE][r];
                }
        }
        out->loadavg_end = bench_loadavg();
        rmdir(empty);
}

static void print_outside(const struct config *cfg, const struct outside *o)
{
        printf("\nbench-files outside: a process reads %u files of %d B beside an EMPTY cache "
               "directory, on its filesystem, %u s a run, %u rounds (medians; load average "
               "%.2f at start, %.2f at end)\n\n", cfg->outside_files, FILE_BYTES,
               cfg->outside_seconds, o->runs, o->loadavg_start, o->loadavg_end);
        printf("  %-9s %-9s %12s %8s %16s %8s %14s\n", "watch", "seen by", "opens_per_s",
               "vs none", "opens_per_cpu_s", "vs none", "daemon CPU s/s");
        for (int m = OUT_NONE; m < OUT_MODES; m++)
                printf("  %-9s %-9s %12.0f %8.3f %16.0f %8.3f %14.3f\n", out_mode_names[m],
                       o->seen_by[m], median(o->opens_per_s[m], o->runs),
                       median(o->ratio[m], o->runs), median(o->opens_per_cpu_s[m], o->runs),
                       median(o->cpu_ratio[m], o->runs), median(o->daemon_cpu_s[m], o->runs));
        printf("\n  opens_per_s: the reader's opens per second of the clock (other load moves it); "
               "opens_per_cpu_s: per second of its own CPU time (what each open costs it); "
               "vs none: against no daemon in the same round; daemon CPU: seconds of the "
               "daemon's CPU per second of the run, all for events outside its tree\n");
}

static void print_outside_json(const struct outside *o)
{
        printf("{\"bench\":\"files-outside\",\"loadavg_start\":%.2f,\"loadavg_end\":%.2f,"
               "\"runs\":%u", o->loadavg_start, o->loadavg_end, o->runs);
        for (int m = OUT_NONE; m < OUT_MODES; m++)
                printf(",\"%s\":{\"seen_by\":\"%s\",\"opens_per_s\":%.0f,\"vs_none\":%.3f,"
                       "\"opens_per_cpu_s\":%.0f,\"cpu_vs_none\":%.3f,"
                       "\"daemon_cpu_s_per_s\":%.3f}", out_mode_names[m], o->seen_by[m],
                       median(o->opens_per_s[m], o->runs), median(o->ratio[m], o->runs),
                       median(o->opens_per_cpu_s[m], o->runs), median(o->cpu_ratio[m], o->runs),
                       median(o->daemon_cpu_s[m], o->runs));
        printf("}\n");
}

/* ---- the run ---- */

static void run_tree(const struct config *cfg, const char *work, struct results *res)
{
        char tree[2048], copy[2048], empty[2048], needle[64];
        double walks[32];
        struct daemon d;
        const char *line;
        uint64_t t0;

        snprintf(tree, sizeof(tree), "%s/tree", work);
        snprintf(copy, sizeof(copy), "%s/copy", work);
        snprintf(empty, sizeof(empty), "%s/empty", work);
        if (mkdir(empty, 0755) < 0)
                die(empty);

        res->loadavg = bench_loadavg();
        res->files = cfg->files;
        res->dirs = (cfg->files + FILES_PER_DIR - 1) / FILES_PER_DIR;
        t0 = bench_now_usec();
        make_tree(tree, cfg->files);
        res->make_s = (double)(bench_now_usec() - t0) / 1e6;

        for (unsigned i = 0; i < cfg->runs; i++) {
                t0 = bench_now_usec();
                if (walk(open_dir(tree), false) != cfg->files)
                        die("walk: wrong count");
                walks[i] = (double)(bench_now_usec() - t0) / 1000;
        }
        qsort(walks, cfg->runs, sizeof(double), cmp_double);
        res->walk_ms = walks[cfg->runs / 2];

        /* The daemon on an empty directory: what it costs without files. */
        daemon_start(&d, cfg, work, "empty", empty, 2, "auto");
        daemon_wait(&d, "t: rotation 1 done:");
        res->rss_empty_kb = daemon_rss_kb(&d);
        line = strstr(daemon_wait(&d, ": uses seen by "), ": uses seen by ");
        line += strlen(": uses seen by ");
        res->watch = strncmp(line, "fanotify", 8) == 0 ? "fanotify" :
                     strncmp(line, "inotify", 7) == 0 ? "inotify" : "atime";
        daemon_stop(&d);

        /*
         * On the tree, every file unread: scans 1 (all new) to 1 + runs, then the rotation
         * single_use_age = 2 + runs deletes them all.
         */
        daemon_start(&d, cfg, work, "tree", tree, 2 + cfg->runs, "auto");
        res->first_scan_ms = scan_ms(&d, 1);
        for (unsigned i = 0; i < cfg->runs; i++)
                walks[i] = scan_ms(&d, 2 + i);
        qsort(walks, cfg->runs, sizeof(double), cmp_double);
        res->scan_ms = walks[cfg->runs / 2];
        res->scan_vs_walk = res->scan_ms / res->walk_ms;
        snprintf(needle, sizeof(needle), "t: rotation %u done:", 1 + cfg->runs);
        line = daemon_wait(&d, needle);
        res->rss_full_kb = daemon_rss_kb(&d);
        res->bytes_per_file = (res->rss_full_kb - res->rss_empty_kb) * 1024 / cfg->files;
        snprintf(needle, sizeof(needle), "t: scan %u done", 1 + cfg->runs);
        line = daemon_wait(&d, needle);
        res->longest_step_us = figure_after(line, "longest step ");
        res->longest_step_cpu_us = figure_after(line, " us (");
        snprintf(needle, sizeof(needle), "t: rotation %u done:", 2 + cfg->runs);
        res->rotation_us = (double)figure_after(daemon_wait(&d, needle), "single-use in all), ");
        line = daemon_wait(&d, " kept (changed, replaced or used since");
        res->deleted = figure_after(line, "t: deleted ");
        res->delete_ms = (double)figure_after(line, "errors; in ");
        res->delete_step_us = figure_after(line, "longest step ");
        res->delete_step_cpu_us = figure_after(line, " us (");
        res->longest_delete_us = figure_after(line, "longest check and unlink ");
        daemon_stop(&d);

        /* The baseline deletion: a plain loop over an identical tree. */
        make_tree(copy, cfg->files);
        t0 = bench_now_usec();
        if (walk(open_dir(copy), true) != cfg->files)
                die("delete: wrong count");
        res->plain_delete_ms = (double)(bench_now_usec() - t0) / 1000;
        rmdir(copy);
        res->delete_vs_plain = res->delete_ms / res->plain_delete_ms;
        res->deletes_per_s = res->delete_ms > 0 ? (double)res->deleted / res->delete_ms * 1000 : 0;

        /* What is left: the empty tree's directories, the logs. */
        walk(open_dir(tree), true);
        rmdir(tree);
        rmdir(empty);
}

static void run(const struct config *cfg, struct results *res)
{
        char work[1024], cmd[2048];

        snprintf(work, sizeof(work), "%s/bench-files-XXXXXX", cfg->dir);
        if (!mkdtemp(work))
                die(work);
        if (!cfg->outside_only)
                run_tree(cfg, work, res);
        run_outside(cfg, work, &res->out);
        if (cfg->keep) {
                fprintf(stderr, "bench-files: the daemons' logs are in %s\n", work);
                return;
        }
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
        if (system(cmd) != 0)
                fprintf(stderr, "bench-files: could not remove %s\n", work);
}

static void print_human(const struct config *cfg, const struct results *r)
{
        printf("bench-files: %u files of %d B in %u directories (made in %.1f s) under %s; "
               "uses seen by %s; medians of %u; load average %.2f at start\n\n",
               r->files, FILE_BYTES, r->dirs, r->make_s, cfg->dir, r->watch, cfg->runs,
               r->loadavg);
        printf("  %-22s %14s\n", "metric", "value");
        printf("  %-22s %11.1f ms   (plain walk: openat, readdir, statx per entry)\n", "walk_ms",
               r->walk_ms);
        printf("  %-22s %11.1f ms   (every file new)\n", "first_scan_ms", r->first_scan_ms);
        printf("  %-22s %11.1f ms   (nothing changed)\n", "scan_ms", r->scan_ms);
        printf("  %-22s %14.2f   (scan_ms / walk_ms)\n", "scan_vs_walk", r->scan_vs_walk);
        printf("  %-22s %11" PRIu64 " us   (wall time, preemption included; slice_time %d us: "
               "%.2fx)\n", "longest_step_us", r->longest_step_us, SLICE_TIME_USEC,
               (double)r->longest_step_us / SLICE_TIME_USEC);
        printf("  %-22s %11" PRIu64 " us   (the step's own CPU time: %.2fx slice_time)\n",
               "longest_step_cpu_us", r->longest_step_cpu_us,
               (double)r->longest_step_cpu_us / SLICE_TIME_USEC);
        printf("  %-22s %11.0f us   (the aging after the scan that chose every file)\n",
               "rotation_us", r->rotation_us);
        printf("  %-22s %12.1f B   (VmRSS %.0f kB with the tree, %.0f kB on an empty one)\n",
               "bytes_per_file", r->bytes_per_file, r->rss_full_kb, r->rss_empty_kb);
        printf("  %-22s %11.1f ms   (%" PRIu64 " files checked and deleted)\n", "delete_ms",
               r->delete_ms, r->deleted);
        printf("  %-22s %11" PRIu64 " us   (the run's longest step on the loop; %" PRIu64
               " us of CPU)\n", "delete_step_us", r->delete_step_us, r->delete_step_cpu_us);
        printf("  %-22s %11" PRIu64 " us   (one file's check and unlink, on the worker thread)\n",
               "longest_delete_us", r->longest_delete_us);
        printf("  %-22s %11.1f ms   (plain loop: statx, unlinkat)\n", "plain_delete_ms",
               r->plain_delete_ms);
        printf("  %-22s %14.2f   (delete_ms / plain_delete_ms)\n", "delete_vs_plain",
               r->delete_vs_plain);
        printf("  %-22s %14.0f\n", "deletes_per_s", r->deletes_per_s);
}

static void print_json(const struct config *cfg, const struct results *r)
{
        printf("{\"bench\":\"files\",\"loadavg\":%.2f,\"files\":%u,\"dirs\":%u,\"watch\":\"%s\",\"runs\":%u,"
               "\"walk_ms\":%.2f,\"first_scan_ms\":%.2f,\"scan_ms\":%.2f,\"scan_vs_walk\":%.3f,"
               "\"longest_step_us\":%" PRIu64 ",\"longest_step_cpu_us\":%" PRIu64 ","
               "\"delete_step_us\":%" PRIu64 ",\"delete_step_cpu_us\":%" PRIu64 ","
               "\"slice_time_us\":%d,\"rotation_us\":%.0f,"
               "\"rss_empty_kb\":%.0f,\"rss_full_kb\":%.0f,\"bytes_per_file\":%.1f,"
               "\"delete_ms\":%.2f,\"deleted\":%" PRIu64 ",\"plain_delete_ms\":%.2f,"
               "\"delete_vs_plain\":%.3f,\"deletes_per_s\":%.0f,\"longest_delete_us\":%" PRIu64
               "}\n",
               r->loadavg, r->files, r->dirs, r->watch, cfg->runs, r->walk_ms, r->first_scan_ms, r->scan_ms,
               r->scan_vs_walk, r->longest_step_us, r->longest_step_cpu_us,
               r->delete_step_us, r->delete_step_cpu_us, SLICE_TIME_USEC, r->rotation_us,
               r->rss_empty_kb, r->rss_full_kb, r->bytes_per_file, r->delete_ms, r->deleted,
               r->plain_delete_ms, r->delete_vs_plain, r->deletes_per_s, r->longest_delete_us);
}

static void usage(const char *argv0)
{
        printf("%s --cacheaged PATH --plugin-dir DIR [--files N] [--runs N] [--dir DIR] "
               "[--json] [--quick] [--keep] [--outside-only] [--outside-files N] "
               "[--outside-seconds S]\n"
               "The cost of the files adapter on a tree of N files (default %u); see the top of "
               "bench/files.c.\n"
               "--keep leaves the daemons' logs (and the emptied tree) in place.\n",
               argv0, FILES_DEFAULT);
}

int main(int argc, char *argv[])
{
        static const struct option options[] = {
                { "cacheaged", required_argument, NULL, 'c' },
                { "plugin-dir", required_argument, NULL, 'p' },
                { "files", required_argument, NULL, 'n' },
                { "runs", required_argument, NULL, 'r' },
                { "dir", required_argument, NULL, 'd' },
                { "json", no_argument, NULL, 'j' },
                { "quick", no_argument, NULL, 'q' },
                { "keep", no_argument, NULL, 'k' },
                { "outside-only", no_argument, NULL, 'o' },
                { "outside-files", required_argument, NULL, 'O' },
                { "outside-seconds", required_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct config cfg = { .files = FILES_DEFAULT, .runs = RUNS_DEFAULT, .dir = "/tmp",
                              .outside_files = OUTSIDE_FILES_DEFAULT,
                              .outside_seconds = OUTSIDE_SECONDS_DEFAULT };
        struct results res = { 0 };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        cfg.cacheaged = optarg;
                        break;
                case 'p':
                        cfg.plugin_dir = optarg;
                        break;
                case 'n':
                        cfg.files = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        cfg.runs = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'd':
                        cfg.dir = optarg;
                        break;
                case 'j':
                        cfg.json = true;
                        break;
                case 'k':
                        cfg.keep = true;
                        break;
                case 'o':
                        cfg.outside_only = true;
                        break;
                case 'O':
                        cfg.outside_files = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'S':
                        cfg.outside_seconds = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'q':
                        cfg.files = 10000;
                        cfg.runs = 3;
                        break;
                case 'h':
                        usage(argv[0]);
                        return 0;
                default:
                        usage(argv[0]);
                        return 2;
                }
        }
        if (!cfg.cacheaged || !cfg.plugin_dir || cfg.files == 0 || cfg.runs == 0 ||
            cfg.runs > 32 || cfg.outside_files == 0 || cfg.outside_files > 99999 ||
            cfg.outside_seconds == 0) {
                usage(argv[0]);
                return 2;
        }
        /* The configuration wants absolute paths. */
        cfg.cacheaged = realpath(cfg.cacheaged, NULL);
        cfg.plugin_dir = realpath(cfg.plugin_dir, NULL);
        if (!cfg.cacheaged || !cfg.plugin_dir)
                die("--cacheaged or --plugin-dir");
        run(&cfg, &res);
        if (cfg.json) {
                if (!cfg.outside_only)
                        print_json(&cfg, &res);
                print_outside_json(&res.out);
        } else {
                if (!cfg.outside_only)
                        print_human(&cfg, &res);
                print_outside(&cfg, &res.out);
        }
        return 0;
}
