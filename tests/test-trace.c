/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The strace log reader: real logs captured on Debian 12 (strace 6.1) with the counts an
 * independent awk counter gives (tests/fixtures/trace/count.awk), every line form on its
 * own, hostile input (random and mutated bytes, over-long lines, pid and state limits), and
 * strace run now on a real shell.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cacheage/replay.h"
#include "cacheage/trace.h"

struct ev {
        uint64_t time_usec;
        int pid;
        enum ca_trace_op op;
        char syscall[32];
        char *path, *path2;
        int result;
        char *walks;        /* "K:path K:path" (K: l link, d dir, i interpreter, +H hold) */
        uint64_t hold;
        char *drops;        /* "1 2 3" */
        unsigned guesses;
};

struct run {
        struct ev *evs;
        size_t n, cap;
        struct ca_trace_stats st;
        int r; /* the last ca_trace_next() return */
};

static void run_free(struct run *run)
{
        for (size_t i = 0; i < run->n; i++) {
                free(run->evs[i].path);
                free(run->evs[i].path2);
                free(run->evs[i].walks);
                free(run->evs[i].drops);
        }
        free(run->evs);
        *run = (struct run) { 0 };
}

/* Every line is counted once: events - info_events + unfinished + skipped_* == lines. */
static void assert_sum(const struct ca_trace_stats *st)
{
        cr_assert_eq(st->events - st->info_events + st->unfinished + st->skipped_other +
                             st->skipped_malformed + st->skipped_dirfd + st->skipped_orphan +
                             st->skipped_noresult,
                     st->lines,
                     "lines %llu != events %llu + unfinished %llu + other %llu + malformed %llu "
                     "+ dirfd %llu + orphan %llu + noresult %llu",
                     (unsigned long long) st->lines, (unsigned long long) st->events,
                     (unsigned long long) st->unfinished, (unsigned long long) st->skipped_other,
                     (unsigned long long) st->skipped_malformed,
                     (unsigned long long) st->skipped_dirfd,
                     (unsigned long long) st->skipped_orphan,
                     (unsigned long long) st->skipped_noresult);
}

/* An event path must be absolute and normalised (a symlink's target is raw text). */
static void assert_normalised(const char *p)
{
        size_t n = strlen(p);

        cr_assert(p[0] == '/', "not absolute: %s", p);
        cr_assert(!strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../"),
                  "not normalised: %s", p);
        cr_assert(n == 1 || p[n - 1] != '/', "trailing slash: %s", p);
        cr_assert(!(n >= 2 && strcmp(p + n - 2, "/.") == 0), "trailing /.: %s", p);
        cr_assert(!(n >= 3 && strcmp(p + n - 3, "/..") == 0), "trailing /..: %s", p);
}

/* The walks of @e as "l:/lib d:/a/b i:/ld+4", for comparing with one string. */
static char *walks_text(const struct ca_trace_event *e)
{
        char *s = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&s, &len);

        cr_assert_not_null(f);
        for (size_t i = 0; i < e->nwalks; i++) {
                const struct ca_trace_walk *w = &e->walks[i];

                assert_normalised(w->path);
                fprintf(f, "%s%c:%s", i ? " " : "",
                        w->kind == CA_TRACE_WALK_LINK  ? 'l'
                        : w->kind == CA_TRACE_WALK_DIR ? 'd'
                                                       : 'i',
                        w->path);
                if (w->hold)
                        fprintf(f, "+%llu", (unsigned long long)w->hold);
        }
        fclose(f);
        return s;
}

static char *drops_text(const struct ca_trace_event *e)
{
        char *s = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&s, &len);

        cr_assert_not_null(f);
        for (size_t i = 0; i < e->ndrops; i++)
                fprintf(f, "%s%llu", i ? " " : "", (unsigned long long)e->drops[i]);
        fclose(f);
        return s;
}

/* Every event of @t, checked for form; the run's stats and the last return. */
static void read_reader(struct ca_trace *t, struct run *run)
{
        struct ca_trace_event e;
        int r;

        *run = (struct run) { 0 };
        while ((r = ca_trace_next(t, &e)) > 0) {
                struct ev *v;

                if (run->n == run->cap) {
                        run->cap = run->cap ? 2 * run->cap : 64;
                        run->evs = realloc(run->evs, run->cap * sizeof(*run->evs));
                        cr_assert_not_null(run->evs);
                }
                v = &run->evs[run->n++];
                cr_assert(e.path || e.op == CA_TRACE_RELEASE || (e.op == CA_TRACE_EXIT && !e.pid));
                if (e.op == CA_TRACE_EXIT) {
                        char proc[32];

                        snprintf(proc, sizeof(proc), "/proc/%d", e.pid);
                        cr_assert(e.pid ? e.path && strcmp(e.path, proc) == 0 : !e.path,
                                  "exit of %d: %s", e.pid, e.path ? e.path : "(null)");
                        cr_assert(!e.hold && !e.nwalks && !e.path2, "an exit only drops");
                }
                cr_assert_not_null(e.syscall);
                cr_assert_not_null(ca_trace_op_name(e.op));
                cr_assert_eq(!!e.fstype, e.op == CA_TRACE_MOUNT);
                if (e.op == CA_TRACE_RELEASE)
                        cr_assert(e.ndrops > 0 && !e.hold && !e.nwalks, "a release only drops");
                if (e.path && e.op != CA_TRACE_SYMLINK)
                        assert_normalised(e.path);
                if (e.path2)
                        assert_normalised(e.path2);
                cr_assert(e.result <= 0);
                *v = (struct ev) {
                        .time_usec = e.time_usec,
                        .pid = e.pid,
                        .op = e.op,
                        .path = strdup(e.path ? e.path : "-"),
                        .path2 = e.path2 ? strdup(e.path2) : NULL,
                        .result = e.result,
                        .walks = walks_text(&e),
                        .hold = e.hold,
                        .drops = drops_text(&e),
                        .guesses = e.guesses,
                };
                snprintf(v->syscall, sizeof(v->syscall), "%s", e.syscall);
        }
        run->r = r;
        ca_trace_get_stats(t, &run->st);
        cr_assert_eq(ca_trace_next(t, &e), r < 0 ? r : 0, "end is sticky");
        cr_assert_eq(run->st.events, run->n);
        assert_sum(&run->st);
}

static void read_all(FILE *f, const char *cwd, struct run *run)
{
        struct ca_trace *t = NULL;
        int r;

        r = ca_trace_open_file(f, cwd, &t);
        cr_assert_eq(r, 0, "open: %s", strerror(-r));
        read_reader(t, run);
        ca_trace_free(t);
}

static FILE *text_file(const char *text, size_t len)
{
        FILE *f = tmpfile();

        cr_assert_not_null(f);
        cr_assert_eq(fwrite(text, 1, len, f), len);
        rewind(f);
        return f;
}

static void read_text(const char *text, const char *cwd, struct run *run)
{
        FILE *f = text_file(text, strlen(text));

        read_all(f, cwd, run);
        fclose(f);
}

static const struct ev *find(const struct run *run, const char *path, enum ca_trace_op op)
{
        for (size_t i = 0; i < run->n; i++)
                if (strcmp(run->evs[i].path, path) == 0 && run->evs[i].op == op)
                        return &run->evs[i];
        return NULL;
}

static void assert_ev(const struct ev *v, enum ca_trace_op op, const char *path,
                      const char *path2, int result)
{
        cr_assert_eq(v->op, op, "op %s, want %s (%s)", ca_trace_op_name(v->op),
                     ca_trace_op_name(op), v->path);
        cr_assert_str_eq(v->path, path);
        if (path2) {
                cr_assert_not_null(v->path2, "no path2 for %s", path);
                cr_assert_str_eq(v->path2, path2);
        } else {
                cr_assert_null(v->path2, "path2 %s for %s", v->path2, path);
        }
        cr_assert_eq(v->result, result, "result %d, want %d for %s", v->result, result, path);
}

/* ---- fixtures ---- */

struct expect {
        uint64_t lines, events, enoent, unfinished, other, malformed, dirfd, orphan, noresult;
        uint64_t ops[_CA_TRACE_OP_MAX];
};

static void read_fixture(const char *name, const char *cwd, struct run *run)
{
        const char *srcdir = getenv("CA_TEST_SRCDIR");
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/fixtures/trace/%s", srcdir ? srcdir : "tests", name);
        f = fopen(path, "re");
        cr_assert_not_null(f, "%s: %s (is CA_TEST_SRCDIR set?)", path, strerror(errno));
        read_all(f, cwd, run);
        fclose(f);
}

static void check_counts(const struct run *run, const struct expect *x)
{
        const struct ca_trace_stats *st = &run->st;
        uint64_t ops[_CA_TRACE_OP_MAX] = { 0 }, enoent = 0;

        for (size_t i = 0; i < run->n; i++) {
                ops[run->evs[i].op]++;
                enoent += run->evs[i].result == -ENOENT;
        }
        cr_expect_eq(run->r, 0);
        cr_expect_eq(st->lines, x->lines, "lines %llu", (unsigned long long) st->lines);
        cr_expect_eq(st->events, x->events, "events %llu", (unsigned long long) st->events);
        cr_expect_eq(enoent, x->enoent, "enoent %llu", (unsigned long long) enoent);
        cr_expect_eq(st->unfinished, x->unfinished, "unfinished %llu",
                     (unsigned long long) st->unfinished);
        cr_expect_eq(st->skipped_other, x->other, "other %llu",
                     (unsigned long long) st->skipped_other);
        cr_expect_eq(st->skipped_malformed, x->malformed, "malformed %llu",
                     (unsigned long long) st->skipped_malformed);
        cr_expect_eq(st->skipped_dirfd, x->dirfd, "dirfd %llu",
                     (unsigned long long) st->skipped_dirfd);
        cr_expect_eq(st->skipped_orphan, x->orphan, "orphan %llu",
                     (unsigned long long) st->skipped_orphan);
        cr_expect_eq(st->skipped_noresult, x->noresult, "noresult %llu",
                     (unsigned long long) st->skipped_noresult);
        for (int op = 0; op < _CA_TRACE_OP_MAX; op++)
                cr_expect_eq(ops[op], x->ops[op], "%s: %llu, want %llu", ca_trace_op_name(op),
                             (unsigned long long) ops[op], (unsigned long long) x->ops[op]);
}

/*
 * The expected numbers below are the output of `awk -f count.awk FIXTURE` in
 * tests/fixtures/trace (see count.awk: a second implementation of the counting rules,
 * written from the strace format), not of this reader. The fixtures were captured in
 * /tmp/cafix with env -i and a fixed PATH; fixtures/trace/README says how.
 */

/* strace -f -tt -e trace=%file -o python-tt.log python3 -c 'import json, email.parser' */
Test(trace_fixture, python_import)
{
        static const struct expect x = {
                .lines = 503, .events = 346, .enoent = 41, .other = 157,
                .ops = { [CA_TRACE_LOOKUP] = 344, [CA_TRACE_EXEC] = 1, [CA_TRACE_EXIT] = 1 },
        };
        struct run run;

        read_fixture("python-tt.log", "/tmp/cafix", &run);
        check_counts(&run, &x);
        /* -tt: 03:26:35.xxx time of day; first line. */
        cr_assert_eq(run.evs[0].op, CA_TRACE_EXEC);
        cr_assert_str_eq(run.evs[0].path, "/usr/bin/python3");
        cr_assert(run.evs[0].pid > 0);
        cr_assert(run.evs[0].time_usec > 0 && run.evs[0].time_usec < 86400ull * 1000000);
        for (size_t i = 1; i < run.n; i++)
                cr_assert(run.evs[i].time_usec >= run.evs[i - 1].time_usec, "time goes back");
        run_free(&run);
}

/* strace -f -t -e trace=%file -o gcc-t.log gcc -I/opt/none/include -Iinc -I./inc2
 * -I/usr/local/include/nothing -c a.c -o a.o (a.c includes stdio.h, string.h, "proj.h",
 * which includes "inc2.h" and <sys/local.h>, and "missing_optional.h" found in inc2) */
Test(trace_fixture, gcc_include_search)
{
        static const struct expect x = {
                .lines = 921, .events = 837, .enoent = 269, .other = 84,
                .ops = { [CA_TRACE_LOOKUP] = 823, [CA_TRACE_CREATE] = 3, [CA_TRACE_EXEC] = 7,
                         [CA_TRACE_UNLINK] = 1, [CA_TRACE_EXIT] = 3 },
        };
        struct run run;
        const struct ev *v;

        read_fixture("gcc-t.log", "/tmp/cafix", &run);
        check_counts(&run, &x);
        /* cc1 is a child seen without its clone: it starts in gcc's cwd. */
        v = find(&run, "/tmp/cafix/inc/proj.h", CA_TRACE_LOOKUP);
        cr_assert_not_null(v);
        cr_assert_eq(v->result, 0);
        v = find(&run, "/tmp/cafix/inc2/missing_optional.h", CA_TRACE_LOOKUP);
        cr_assert_not_null(v);
        cr_assert_eq(v->result, 0);
        v = find(&run, "/tmp/cafix/inc/missing_optional.h", CA_TRACE_LOOKUP);
        cr_assert_not_null(v);
        cr_assert_eq(v->result, -ENOENT);
        v = find(&run, "/tmp/cafix/a.o", CA_TRACE_CREATE);
        cr_assert_not_null(v);
        cr_assert_neq(v->pid, run.evs[0].pid, "as is another process");
        /* -t: whole seconds of the time of day (03:34:53). */
        cr_assert_eq(run.evs[0].time_usec, (3 * 3600 + 34 * 60 + 53) * 1000000ull);
        run_free(&run);
}

/* PATH=/opt/a/bin:... strace -f -ttt -e trace=%file sh -c 'nonexistentcmd; ls / >/dev/null'
 * 2>sh-ttt.log: the stderr form, "[pid N] " on the child, the shell's own message inside */
Test(trace_fixture, shell_path_search)
{
        static const struct expect x = {
                .lines = 95, .events = 67, .enoent = 37, .other = 27, .malformed = 1,
                .ops = { [CA_TRACE_LOOKUP] = 62, [CA_TRACE_CREATE] = 1, [CA_TRACE_EXEC] = 2,
                         [CA_TRACE_EXIT] = 2 },
        };
        struct run run;
        const struct ev *v;
        size_t main_enoent = 0;

        read_fixture("sh-ttt.log", "/tmp/cafix", &run);
        check_counts(&run, &x);
        for (size_t i = 0; i < run.n; i++)
                if (run.evs[i].pid == 0 && run.evs[i].result == -ENOENT &&
                    strstr(run.evs[i].path, "/nonexistentcmd"))
                        main_enoent++;
        /* 12 PATH entries, each missing once (awk: grep -c nonexistentcmd.*ENOENT = 12). */
        cr_assert_eq(main_enoent, 12);
        v = find(&run, "/usr/bin/ls", CA_TRACE_EXEC);
        cr_assert_not_null(v);
        cr_assert_gt(v->pid, 0, "the child has a [pid N] prefix");
        cr_assert_eq(run.evs[0].time_usec, 1796268893374054ull);
        run_free(&run);
}

/* strace -f -ttt -o proc-ttt.log -e trace=%file,%process sh -c 'cd w; (cd sub; stat -c %n f
 * >/dev/null; true); stat -c %n sub/f nope >/dev/null 2>&1; cd /tmp/cafix && test -e a.c' */
Test(trace_fixture, process_tree_cwd)
{
        static const struct expect x = {
                .lines = 177, .events = 109, .enoent = 50, .unfinished = 7, .other = 61,
                .ops = { [CA_TRACE_LOOKUP] = 97, [CA_TRACE_CREATE] = 2, [CA_TRACE_EXEC] = 3,
                         [CA_TRACE_CHDIR] = 3, [CA_TRACE_EXIT] = 4 },
        };
        struct run run;
        const struct ev *v;
        size_t found = 0;

        read_fixture("proc-ttt.log", "/tmp/cafix", &run);
        check_counts(&run, &x);
        /*
         * pid 11819's execve comes before its parent's "<... vfork resumed>) = 11819": it is
         * first given the first pid's cwd (w), then its parent's (w/sub) from the vfork.
         */
        for (size_t i = 0; i < run.n; i++) {
                if (strcmp(run.evs[i].syscall, "statx") != 0)
                        continue;
                found++;
                if (run.evs[i].pid == 11819)
                        assert_ev(&run.evs[i], CA_TRACE_LOOKUP, "/tmp/cafix/w/sub/f", NULL, 0);
        }
        cr_assert_eq(found, 3);
        v = find(&run, "/tmp/cafix/w/nope", CA_TRACE_LOOKUP);
        cr_assert_not_null(v);
        cr_assert_eq(v->result, -ENOENT);
        cr_assert_eq(v->pid, 11820);
        v = find(&run, "/tmp/cafix/a.c", CA_TRACE_LOOKUP);
        cr_assert_not_null(v, "relative to the shell's cwd after cd back");
        run_free(&run);
}

/* strace -f -e trace=%file sh -c 'sleep 0.2 & cd /tmp/cafix/w; stat -c %n sub/f nope
 * 2>/dev/null; cd /; wait' 2>bg-none.log: stderr form without timestamps; the shell is bare
 * while alone and "[pid 19663]" while sleep lives; two pids interleave 41 unfinished calls */
Test(trace_fixture, background_job_stderr)
{
        static const struct expect x = {
                .lines = 181, .events = 95, .enoent = 43, .unfinished = 41, .other = 45,
                .ops = { [CA_TRACE_LOOKUP] = 86, [CA_TRACE_CREATE] = 1, [CA_TRACE_EXEC] = 3,
                         [CA_TRACE_CHDIR] = 2, [CA_TRACE_EXIT] = 3 },
        };
        struct run run;
        const struct ev *v;

        read_fixture("bg-none.log", "/tmp/cafix", &run);
        check_counts(&run, &x);
        /* The shell's "[pid 19663] chdir" is the bare pid 0's: stat(1) inherits it. */
        v = find(&run, "/tmp/cafix/w", CA_TRACE_CHDIR);
        cr_assert_not_null(v);
        cr_assert_eq(v->pid, 0);
        assert_ev(find(&run, "/tmp/cafix/w/sub/f", CA_TRACE_LOOKUP), CA_TRACE_LOOKUP,
                  "/tmp/cafix/w/sub/f", NULL, 0);
        v = find(&run, "/tmp/cafix/w/nope", CA_TRACE_LOOKUP);
        cr_assert_not_null(v);
        cr_assert_eq(v->result, -ENOENT);
        cr_assert_eq(v->pid, 19665);
        for (size_t i = 0; i < run.n; i++)
                cr_assert_neq(run.evs[i].pid, 19663, "the shell keeps pid 0");
        run_free(&run);
}

/* cd /tmp/cafix/fs && strace -o fsops-none.log -e trace=%file,close,fchdir python3 -I -S
 * ../fsops.py: no pid column, no timestamps; mkdir, rename, link, symlink, *at calls on a
 * directory fd, fchdir, an escaped name, mkfifo (mknodat), EEXIST */
Test(trace_fixture, fs_operations)
{
        static const struct expect x = {
                .lines = 136, .events = 88, .enoent = 21, .other = 48,
                .ops = { [CA_TRACE_LOOKUP] = 63, [CA_TRACE_CREATE] = 3, [CA_TRACE_EXEC] = 1,
                         [CA_TRACE_MKDIR] = 4, [CA_TRACE_UNLINK] = 5, [CA_TRACE_RMDIR] = 3,
                         [CA_TRACE_RENAME] = 2, [CA_TRACE_LINK] = 1, [CA_TRACE_SYMLINK] = 1,
                         [CA_TRACE_CHDIR] = 4, [CA_TRACE_EXIT] = 1 },
        };
        static const char caf[] = "/tmp/cafix/fs/d/caf\303\251 \"q\"\n\t";
        struct run run;
        const struct ev *v;

        read_fixture("fsops-none.log", "/tmp/cafix/fs", &run);
        check_counts(&run, &x);
        for (size_t i = 0; i < run.n; i++) {
                cr_assert_eq(run.evs[i].pid, 0);
                cr_assert_eq(run.evs[i].time_usec, 0);
        }
        cr_assert_not_null(find(&run, "/tmp/cafix/fsops.py", CA_TRACE_LOOKUP));
        assert_ev(find(&run, "/tmp/cafix/fs/d/a", CA_TRACE_RENAME), CA_TRACE_RENAME,
                  "/tmp/cafix/fs/d/a", "/tmp/cafix/fs/d/b", 0);
        assert_ev(find(&run, "b", CA_TRACE_SYMLINK), CA_TRACE_SYMLINK, "b",
                  "/tmp/cafix/fs/d/s", 0);
        assert_ev(find(&run, "/tmp/cafix/fs/d/sub/x", CA_TRACE_LOOKUP), CA_TRACE_LOOKUP,
                  "/tmp/cafix/fs/d/sub/x", NULL, -ENOENT);
        assert_ev(find(&run, "/tmp/cafix/fs/d/sub/in", CA_TRACE_RENAME), CA_TRACE_RENAME,
                  "/tmp/cafix/fs/d/sub/in", "/tmp/cafix/fs/d/sub/out", 0);
        cr_assert_not_null(find(&run, "/tmp/cafix/fs/d/sub/out", CA_TRACE_RMDIR));
        cr_assert_not_null(find(&run, "/tmp/cafix/fs/d/sub", CA_TRACE_CHDIR), "fchdir(3)");
        v = find(&run, caf, CA_TRACE_CREATE);
        cr_assert_not_null(v, "escaped name after fchdir + chdir(\"..\")");
        cr_assert_not_null(find(&run, "/tmp/cafix/fs/d/fifo", CA_TRACE_CREATE));
        v = find(&run, "/tmp/cafix/fs/d/b", CA_TRACE_MKDIR);
        cr_assert_not_null(v);
        cr_assert_eq(v->result, -EEXIST);
        cr_assert_not_null(find(&run, "/tmp/cafix/fs/d", CA_TRACE_RMDIR));
        run_free(&run);
}

/* ---- line forms ---- */

Test(trace_line, timestamps)
{
        struct run run;

        read_text("stat(\"/a\", {st_mode=S_IFREG|0644, st_size=1, ...}) = 0\n"
                  "03:26:28 stat(\"/a\", 0x7ffd0) = 0\n"
                  "03:26:28.590530 stat(\"/a\", 0x7ffd0) = 0\n"
                  "1796268456.682677 stat(\"/a\", 0x7ffd0) = 0\n"
                  "1796268456.682677123 stat(\"/a\", 0x7ffd0) = 0\n"
                  "23:59:59.900000 stat(\"/a\", 0x7ffd0) = 0\n"
                  "00:00:00.100000 stat(\"/a\", 0x7ffd0) = 0\n"
                  "03:26 stat(\"/a\", 0x7ffd0) = 0\n"
                  "03:26:28.5x stat(\"/a\", 0x7ffd0) = 0\n",
                  NULL, &run);
        cr_assert_eq(run.n, 7);
        cr_assert_eq(run.evs[0].time_usec, 0);
        cr_assert_eq(run.evs[1].time_usec, 12388000000ull);
        cr_assert_eq(run.evs[2].time_usec, 12388590530ull);
        cr_assert_eq(run.evs[3].time_usec, 1796268456682677ull);
        cr_assert_eq(run.evs[4].time_usec, 1796268456682677ull, "ns precision truncated");
        cr_assert_eq(run.evs[5].time_usec, 86399900000ull);
        cr_assert_eq(run.evs[6].time_usec, 86400100000ull, "midnight adds a day");
        cr_assert_eq(run.st.skipped_malformed, 2);
        for (size_t i = 0; i < run.n; i++)
                assert_ev(&run.evs[i], CA_TRACE_LOOKUP, "/a", NULL, 0);
        run_free(&run);
}

Test(trace_line, pid_forms)
{
        struct run run;

        read_text("open(\"/a\", O_RDONLY) = 3\n"
                  "[pid  4321] open(\"/b\", O_RDONLY) = 3\n"
                  "[pid 7] 10:00:00.000001 open(\"/c\", O_RDONLY) = 3\n"
                  "1234  open(\"/d\", O_RDONLY) = 3\n"
                  "1234 10:00:00 open(\"/e\", O_RDONLY) = 3\n"
                  "[pid 12 open(\"/f\", O_RDONLY) = 3\n"
                  "99999999999 open(\"/g\", O_RDONLY) = 3\n",
                  NULL, &run);
        cr_assert_eq(run.n, 5);
        cr_assert_eq(run.evs[0].pid, 0);
        cr_assert_eq(run.evs[1].pid, 4321);
        cr_assert_eq(run.evs[2].pid, 7);
        cr_assert_eq(run.evs[2].time_usec, 36000000001ull);
        cr_assert_eq(run.evs[3].pid, 1234);
        cr_assert_eq(run.evs[4].pid, 1234);
        cr_assert_str_eq(run.evs[4].path, "/e");
        cr_assert_eq(run.st.skipped_malformed, 2, "bad [pid and a pid over INT_MAX");
        run_free(&run);
}

Test(trace_line, unfinished_resumed_interleaved)
{
        struct run run;

        read_text("100 openat(AT_FDCWD, \"/a\", O_RDONLY <unfinished ...>\n"
                  "200 newfstatat(AT_FDCWD, \"/b\",  <unfinished ...>\n"
                  "300 stat(\"/c\", 0x1) = 0\n"
                  "100 <... openat resumed>) = 3\n"
                  "200 <... newfstatat resumed>0x7ffd, 0) = -1 ENOENT (No such file or directory)\n",
                  NULL, &run);
        cr_assert_eq(run.n, 3);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/c", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/a", NULL, 0);
        cr_assert_eq(run.evs[1].pid, 100);
        cr_assert_str_eq(run.evs[1].syscall, "openat");
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/b", NULL, -ENOENT);
        cr_assert_eq(run.evs[2].pid, 200);
        cr_assert_eq(run.st.unfinished, 2);
        cr_assert_eq(run.st.skipped_orphan, 0);
        run_free(&run);
}

Test(trace_line, unfinished_time_is_resumed_time)
{
        struct run run;

        read_text("5 10:00:00.000001 mkdir(\"/x\", 0777 <unfinished ...>\n"
                  "5 10:00:00.000009 <... mkdir resumed>) = 0\n",
                  NULL, &run);
        cr_assert_eq(run.n, 1);
        assert_ev(&run.evs[0], CA_TRACE_MKDIR, "/x", NULL, 0);
        cr_assert_eq(run.evs[0].time_usec, 36000000009ull);
        run_free(&run);
}

Test(trace_line, orphans)
{
        struct run run;

        read_text("1 <... openat resumed>) = 3\n"                      /* no half */
                  "2 stat(\"/a\",  <unfinished ...>\n"
                  "2 <... lstat resumed>0x1) = 0\n"                   /* other name */
                  "2 stat(\"/b\",  <unfinished ...>\n"                /* replaces /a */
                  "3 access(\"/c\", F_OK <unfinished ...>\n"
                  "3 +++ killed by SIGKILL +++\n"                     /* never resumed */
                  "4 unlink(\"/d\" <unfinished ...>\n",               /* EOF, and /b */
                  NULL, &run);
        cr_assert_eq(run.n, 1, "only the end of process 3");
        assert_ev(&run.evs[0], CA_TRACE_EXIT, "/proc/3", NULL, 0);
        cr_assert_eq(run.st.skipped_orphan, 6);
        cr_assert_eq(run.st.unfinished, 0);
        cr_assert_eq(run.st.skipped_other, 0);
        run_free(&run);
}

Test(trace_line, relative_paths_and_chdir)
{
        struct run run;

        read_text("chdir(\"/tmp/x\") = 0\n"
                  "stat(\"y/../z\", 0x1) = 0\n"
                  "chdir(\"sub//\") = 0\n"
                  "stat(\".\", 0x1) = 0\n"
                  "chdir(\"nope\") = -1 ENOENT (No such file or directory)\n"
                  "openat(AT_FDCWD, \"f\", O_RDONLY) = 3\n"
                  "chdir(\"../../../..\") = 0\n"
                  "access(\"a/./b/\", F_OK) = 0\n"
                  "stat(\"//abs///p/.\", 0x1) = 0\n",
                  "/home/u", &run);
        cr_assert_eq(run.n, 9);
        assert_ev(&run.evs[0], CA_TRACE_CHDIR, "/tmp/x", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/tmp/x/z", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_CHDIR, "/tmp/x/sub", NULL, 0);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/tmp/x/sub", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_CHDIR, "/tmp/x/sub/nope", NULL, -ENOENT);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/tmp/x/sub/f", NULL, 0);
        assert_ev(&run.evs[6], CA_TRACE_CHDIR, "/", NULL, 0);
        assert_ev(&run.evs[7], CA_TRACE_LOOKUP, "/a/b", NULL, 0);
        assert_ev(&run.evs[8], CA_TRACE_LOOKUP, "/abs/p", NULL, 0);
        run_free(&run);
}

Test(trace_line, at_fdcwd_and_start_cwd)
{
        struct run run;

        read_text("openat(AT_FDCWD, \"rel\", O_RDONLY) = -1 ENOENT (No such file or directory)\n"
                  "newfstatat(-100, \"r2\", 0x1, 0) = 0\n"
                  "faccessat2(AT_FDCWD, \"../up\", R_OK, AT_EACCESS) = 0\n"
                  "statx(AT_FDCWD</home/u>, \"r3\", 0, STATX_ALL, 0x1) = 0\n",
                  "/home//u/", &run);
        cr_assert_eq(run.n, 4);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/home/u/rel", NULL, -ENOENT);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/home/u/r2", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/home/up", NULL, 0);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/home/u/r3", NULL, 0);
        run_free(&run);
}

Test(trace_line, dirfds)
{
        struct run run;

        read_text("newfstatat(7, \"x\", 0x1, 0) = 0\n"                        /* unknown fd */
                  "newfstatat(7, \"/abs\", 0x1, 0) = 0\n"                     /* ignored fd */
                  "openat(AT_FDCWD, \"/d\", O_RDONLY|O_DIRECTORY) = 3\n"
                  "mkdirat(3, \"n\", 0777) = 0\n"
                  "dup2(3, 9) = 9\n"
                  "readlinkat(9, \"l\", 0x1, 4096) = -1 EINVAL (Invalid argument)\n"
                  "close(3) = 0\n"
                  "unlinkat(3, \"n\", AT_REMOVEDIR) = 0\n"                    /* closed */
                  "unlinkat(9, \"m\", 0) = 0\n"
                  "fcntl(9, F_DUPFD_CLOEXEC, 0) = 4\n"
                  "faccessat(4, \"..\", F_OK) = 0\n"
                  "newfstatat(5</etc>, \"passwd\", 0x1, 0) = 0\n"             /* -y names it */
                  "newfstatat(3, \"\", {st_mode=S_IFDIR}, AT_EMPTY_PATH) = 0\n" /* fstat */
                  "fchdir(9) = 0\n"
                  "stat(\"in-d\", 0x1) = 0\n"
                  "fchdir(11) = 0\n"                                          /* unknown */
                  "stat(\"lost\", 0x1) = 0\n"
                  "stat(\"/still\", 0x1) = 0\n"
                  "fchdir(12</srv>) = 0\n"
                  "stat(\"found\", 0x1) = 0\n",
                  NULL, &run);
        cr_assert_eq(run.st.skipped_dirfd, 4, "x, closed 3, fchdir(11), lost");
        cr_assert_eq(run.st.skipped_other, 4, "dup2, close, fcntl, fstat via \"\"");
        cr_assert_eq(run.n, 12);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/abs", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/d", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_MKDIR, "/d/n", NULL, 0);
        /* EINVAL: "l" is not a link, but the walk went through (do_readlinkat) */
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/d/l", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_UNLINK, "/d/m", NULL, 0);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/", NULL, 0);
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/etc/passwd", NULL, 0);
        assert_ev(&run.evs[7], CA_TRACE_CHDIR, "/d", NULL, 0);
        assert_ev(&run.evs[8], CA_TRACE_LOOKUP, "/d/in-d", NULL, 0);
        assert_ev(&run.evs[9], CA_TRACE_LOOKUP, "/still", NULL, 0);
        assert_ev(&run.evs[10], CA_TRACE_CHDIR, "/srv", NULL, 0);
        assert_ev(&run.evs[11], CA_TRACE_LOOKUP, "/srv/found", NULL, 0);
        run_free(&run);
}

/* A successful exec closes the O_CLOEXEC fds (do_close_on_exec), and only those. */
Test(trace_line, exec_closes_cloexec_fds)
{
        struct run run;

        read_text("openat(AT_FDCWD, \"/d\", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 3\n"
                  "openat(AT_FDCWD, \"/e\", O_RDONLY|O_DIRECTORY) = 4\n"
                  "openat(AT_FDCWD, \"/f\", O_RDONLY|O_DIRECTORY) = 5\n"
                  "fcntl(5, F_SETFD, FD_CLOEXEC) = 0\n"
                  "dup3(4, 6, O_CLOEXEC) = 6\n"
                  "execve(\"/bin/x\", [\"x\"], 0x1 /* 3 vars */) = -1 ENOENT (No such file or directory)\n"
                  "newfstatat(3, \"before\", 0x1, 0) = 0\n"
                  "execve(\"/bin/y\", [\"y\"], 0x1 /* 3 vars */) = 0\n"
                  "newfstatat(3, \"y\", 0x1, 0) = 0\n"
                  "newfstatat(4, \"y\", 0x1, 0) = 0\n"
                  "newfstatat(5, \"y\", 0x1, 0) = 0\n"
                  "newfstatat(6, \"y\", 0x1, 0) = 0\n",
                  NULL, &run);
        cr_assert_eq(run.n, 7);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/d/before", NULL, 0);
        assert_ev(&run.evs[5], CA_TRACE_EXEC, "/bin/y", NULL, 0);
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/e/y", NULL, 0);
        cr_assert_eq(run.st.skipped_dirfd, 3, "3, 5 and 6 were O_CLOEXEC");
        run_free(&run);
}

Test(trace_line, rename_family)
{
        struct run run;

        read_text("rename(\"a\", \"/t/b\") = 0\n"
                  "renameat(AT_FDCWD, \"c\", AT_FDCWD, \"d\") = -1 EXDEV (Invalid cross-device link)\n"
                  "renameat2(AT_FDCWD, \"e\", AT_FDCWD, \"f\", RENAME_NOREPLACE) = 0\n"
                  "renameat2(AT_FDCWD, \"g\", AT_FDCWD, \"h\", RENAME_EXCHANGE) = 0\n"
                  "renameat2(AT_FDCWD, \"i\", AT_FDCWD, \"j\", 0x2) = 0\n"
                  "renameat2(AT_FDCWD, \"k\", 8, \"l\", 0) = 0\n",
                  "/w", &run);
        cr_assert_eq(run.n, 5);
        assert_ev(&run.evs[0], CA_TRACE_RENAME, "/w/a", "/t/b", 0);
        assert_ev(&run.evs[1], CA_TRACE_RENAME, "/w/c", "/w/d", -EXDEV);
        assert_ev(&run.evs[2], CA_TRACE_RENAME, "/w/e", "/w/f", 0);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/w/g", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/w/i", NULL, 0);
        cr_assert_eq(run.st.skipped_dirfd, 1);
        run_free(&run);
}

Test(trace_line, unlink_rmdir_mkdir)
{
        struct run run;

        read_text("unlinkat(AT_FDCWD, \"d\", AT_REMOVEDIR) = 0\n"
                  "unlinkat(AT_FDCWD, \"f\", 0) = 0\n"
                  "unlinkat(AT_FDCWD, \"g\", 0x200) = -1 ENOTEMPTY (Directory not empty)\n"
                  "unlink(\"/u\") = -1 ENOENT (No such file or directory)\n"
                  "rmdir(\"/r\") = -1 ENOTDIR (Not a directory)\n"
                  "mkdir(\"/m\", 0755) = -1 EEXIST (File exists)\n"
                  "mkdirat(AT_FDCWD, \"n\", 0755) = 0\n",
                  "/w", &run);
        cr_assert_eq(run.n, 7);
        assert_ev(&run.evs[0], CA_TRACE_RMDIR, "/w/d", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_UNLINK, "/w/f", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_RMDIR, "/w/g", NULL, -ENOTEMPTY);
        assert_ev(&run.evs[3], CA_TRACE_UNLINK, "/u", NULL, -ENOENT);
        assert_ev(&run.evs[4], CA_TRACE_RMDIR, "/r", NULL, -ENOTDIR);
        assert_ev(&run.evs[5], CA_TRACE_MKDIR, "/m", NULL, -EEXIST);
        assert_ev(&run.evs[6], CA_TRACE_MKDIR, "/w/n", NULL, 0);
        run_free(&run);
}

Test(trace_line, create_or_lookup)
{
        struct run run;

        read_text("openat(AT_FDCWD, \"/a\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3\n"
                  "openat(AT_FDCWD, \"/b\", O_WRONLY|O_CREAT|O_EXCL, 0600) = -1 EEXIST (File exists)\n"
                  "open(\"/c\", O_RDONLY) = 4\n"
                  "open(\"/d\", 0x241, 0644) = 5\n"                       /* -X raw: O_CREAT */
                  "openat2(AT_FDCWD, \"/e\", {flags=O_RDWR|O_CREAT, mode=0600, resolve=0}, 24) = 6\n"
                  "creat(\"/f\", 0644) = 7\n"
                  "creat(\"/g\", 0644) = -1 EACCES (Permission denied)\n"
                  "mknod(\"/h\", S_IFIFO|0644) = 0\n"
                  "mknodat(AT_FDCWD, \"/i\", S_IFCHR|0600, makedev(0x1, 0x3)) = -1 EPERM (Operation not permitted)\n"
                  "openat(AT_FDCWD, \"/j\", O_RDONLY|O_CREATX) = 3\n"     /* not the flag */
                  "linkat(3, \"\", AT_FDCWD, \"/k\", AT_EMPTY_PATH) = 0\n"
                  "link(\"/l\", \"m\") = 0\n"
                  "linkat(AT_FDCWD, \"/n\", AT_FDCWD, \"/o\", 0) = -1 EXDEV (Invalid cross-device link)\n",
                  "/w", &run);
        cr_assert_eq(run.n, 13);
        assert_ev(&run.evs[0], CA_TRACE_CREATE, "/a", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/b", NULL, -EEXIST);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/c", NULL, 0);
        assert_ev(&run.evs[3], CA_TRACE_CREATE, "/d", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_CREATE, "/e", NULL, 0);
        assert_ev(&run.evs[5], CA_TRACE_CREATE, "/f", NULL, 0);
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/g", NULL, -EACCES);
        assert_ev(&run.evs[7], CA_TRACE_CREATE, "/h", NULL, 0);
        assert_ev(&run.evs[8], CA_TRACE_LOOKUP, "/i", NULL, -EPERM);
        assert_ev(&run.evs[9], CA_TRACE_LOOKUP, "/j", NULL, 0);
        assert_ev(&run.evs[10], CA_TRACE_CREATE, "/k", NULL, 0);
        assert_ev(&run.evs[11], CA_TRACE_LINK, "/l", "/w/m", 0);
        assert_ev(&run.evs[12], CA_TRACE_LINK, "/n", "/o", -EXDEV);
        run_free(&run);
}

Test(trace_line, symlinks_and_exec)
{
        struct run run;

        read_text("symlink(\"../t\", \"s\") = 0\n"
                  "symlinkat(\"/abs/t\", AT_FDCWD, \"/x/s2\") = -1 EEXIST (File exists)\n"
                  "execve(\"./prog\", [\"./prog\", \"a, b)\"], 0x7ffe /* 37 vars */) = -1 ENOENT (No such file or directory)\n"
                  "execveat(AT_FDCWD, \"/bin/true\", [\"true\"], 0x1 /* 0 vars */, 0) = 0\n"
                  "readlink(\"/proc/self/exe\", \"/usr/bin/x\", 4096) = 10\n",
                  "/w", &run);
        cr_assert_eq(run.n, 5);
        assert_ev(&run.evs[0], CA_TRACE_SYMLINK, "../t", "/w/s", 0);
        assert_ev(&run.evs[1], CA_TRACE_SYMLINK, "/abs/t", "/x/s2", -EEXIST);
        assert_ev(&run.evs[2], CA_TRACE_EXEC, "/w/prog", NULL, -ENOENT);
        assert_ev(&run.evs[3], CA_TRACE_EXEC, "/bin/true", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/proc/self/exe", NULL, 0);
        run_free(&run);
}

Test(trace_line, other_lookups)
{
        struct run run;

        read_text("statfs(\"/sys/fs/selinux\", 0x7ffe) = -1 ENOENT (No such file or directory)\n"
                  "chmod(\"x\", 0644) = 0\n"
                  "utimensat(AT_FDCWD, \"y\", NULL, 0) = 0\n"
                  "utimensat(3, NULL, [UTIME_NOW, UTIME_NOW], 0) = 0\n"   /* futimens */
                  "getxattr(\"/z\", \"user.a\", 0x1, 0) = -1 ENODATA (No data available)\n"
                  "inotify_add_watch(3, \"/dir\", IN_MODIFY) = 1\n",
                  "/w", &run);
        cr_assert_eq(run.n, 5);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/sys/fs/selinux", NULL, -ENOENT);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/w/x", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/w/y", NULL, 0);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/z", NULL, -ENODATA);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/dir", NULL, 0);
        cr_assert_eq(run.st.skipped_other, 1);
        run_free(&run);
}

Test(trace_line, results)
{
        struct run run;

        read_text("stat(\"/a\", 0x1) = 0 <0.000012>\n"                       /* -T */
                  "openat(AT_FDCWD, \"/b\", O_RDONLY) = 3</b>\n"              /* -y */
                  "stat(\"/c\", 0x1) = -1 ELOOP (Too many levels of symbolic links)\n"
                  "stat(\"/d\", 0x1) = -1 ENAMETOOLONG (File name too long)\n"
                  "stat(\"/e\", 0x1) = -1 EWHATEVER (Made up)\n"
                  "stat(\"/f\", 0x1) = -1 (errno 9999)\n"
                  "stat(\"/g\", 0x1) = ?\n"
                  "openat(AT_FDCWD, \"/h\", O_RDONLY) = ? <unavailable>\n"
                  "open(\"/i\", O_RDONLY) = -1 ERESTARTSYS (To be restarted if SA_RESTART is set)\n"
                  "stat(\"/j\", 0x1)                         = -1 EROFS (Read-only file system)\n"
                  "stat(\"/k\", 0x1) = x\n"
                  "stat(\"/l\", 0x1) =\n"
                  "stat(\"/m\", 0x1) = -\n"
                  "stat(\"/n\", 0x1) 0\n",
                  NULL, &run);
        cr_assert_eq(run.n, 7);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/a", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/b", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/c", NULL, -ELOOP);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/d", NULL, -ENAMETOOLONG);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/e", NULL, -EIO);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/f", NULL, -EIO);
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/j", NULL, -EROFS);
        cr_assert_eq(run.st.skipped_noresult, 3);
        cr_assert_eq(run.st.skipped_malformed, 4);
        run_free(&run);
}

Test(trace_line, escapes)
{
        struct run run;

        read_text("stat(\"/caf\\303\\251 \\\"q\\\"\\n\\t\", 0x1) = 0\n"
                  "stat(\"/\\x41\\x4a\\x7\", 0x1) = 0\n"
                  "stat(\"/back\\\\slash\\v\\f\\r\\a\\b\\'\\?\", 0x1) = 0\n"
                  "stat(\"/a,b)c\", 0x1) = 0\n"
                  "stat(\"/nul\\0x\", 0x1) = 0\n"                            /* NUL: bad */
                  "stat(\"/bad\\q\", 0x1) = 0\n"                             /* unknown */
                  "stat(\"/oct\\777\", 0x1) = 0\n"                           /* > 0xff */
                  "stat(\"/hex\\xg\", 0x1) = 0\n"
                  "stat(\"/open, 0x1) = 0\n",                                /* unclosed */
                  NULL, &run);
        cr_assert_eq(run.n, 4);
        cr_assert_str_eq(run.evs[0].path, "/caf\303\251 \"q\"\n\t");
        cr_assert_str_eq(run.evs[1].path, "/AJ\a");
        cr_assert_str_eq(run.evs[2].path, "/back\\slash\v\f\r\a\b'?");
        cr_assert_str_eq(run.evs[3].path, "/a,b)c");
        cr_assert_eq(run.st.skipped_malformed, 5);
        run_free(&run);
}

Test(trace_line, truncated_and_odd_arguments)
{
        struct run run;

        read_text("stat(\"/usr/lib/x86_64-linux-gnu/\"..., 0x1) = 0\n"     /* -s cut it */
                  "stat(0x7ffd1234, 0x1) = -1 EFAULT (Bad address)\n"      /* unreadable */
                  "stat() = 0\n"
                  "renameat(AT_FDCWD, \"a\") = 0\n"                         /* too few */
                  "openat(foo, \"rel\", O_RDONLY) = 3\n"                    /* bad dirfd */
                  "readlink(\"/x\", \"very long targ\"..., 14) = 14\n",     /* only buf cut */
                  "/w", &run);
        cr_assert_eq(run.n, 1);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/x", NULL, 0);
        cr_assert_eq(run.st.skipped_malformed, 5);
        run_free(&run);
}

Test(trace_line, garbage_and_other)
{
        struct run run;

        read_text("\n"
                  "hello world\n"
                  "sh: 1: nonexistentcmd: not found\n"
                  "(((\n"
                  "openat(\n"
                  "stat(\"/a\"]) = 0\n"
                  "stat(\"/a\" /* unterminated ) = 0\n"
                  "<... stat resumed\n"
                  "read(3, \"\\177ELF\\2\\1\\1\", 832) = 832\n"
                  "exit_group(0)                           = ?\n"
                  "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=5} ---\n"
                  "+++ exited with 0 +++\n"
                  "strace: Process 6965 attached\n"
                  "stat(\"/ok\", 0x1) = 0\r\n"
                  "stat(\"/last\", 0x1) = 0",                               /* no newline */
                  NULL, &run);
        cr_assert_eq(run.n, 3);
        assert_ev(&run.evs[0], CA_TRACE_EXIT, "-", NULL, 0); /* no pid column: no /proc/PID */
        cr_assert_str_eq(run.evs[1].path, "/ok");
        cr_assert_str_eq(run.evs[2].path, "/last");
        cr_assert_eq(run.st.lines, 15);
        cr_assert_eq(run.st.skipped_malformed, 8);
        cr_assert_eq(run.st.skipped_other, 4);
        run_free(&run);
}

Test(trace_line, clone_inheritance)
{
        struct run run;

        read_text("10 chdir(\"/p\") = 0\n"
                  "10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 11\n"
                  "10 chdir(\"/q\") = 0\n"
                  "11 stat(\"a\", 0x1) = 0\n"                /* forked in /p */
                  "12 stat(\"b\", 0x1) = 0\n"                /* no clone line: first pid's */
                  "11 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD, exit_signal=0}, 88) = 13\n"
                  "13 chdir(\"/r\") = 0\n"
                  "11 stat(\"c\", 0x1) = 0\n"                /* shares fs with 13 */
                  "14 stat(\"d\", 0x1) = 0\n"                /* seen before its vfork */
                  "11 vfork() = 14\n"
                  "14 stat(\"e\", 0x1) = 0\n"
                  "10 +++ exited with 0 +++\n"
                  "15 stat(\"f\", 0x1) = 0\n"                /* first pid gone: its last cwd */
                  "11 fork() = -1 EAGAIN (Resource temporarily unavailable)\n",
                  "/start", &run);
        cr_assert_eq(run.n, 10);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/p/a", NULL, 0);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/q/b", NULL, 0);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/r/c", NULL, 0);
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/q/d", NULL, 0);
        assert_ev(&run.evs[7], CA_TRACE_LOOKUP, "/r/e", NULL, 0);
        assert_ev(&run.evs[8], CA_TRACE_EXIT, "/proc/10", NULL, 0);
        cr_assert_eq(run.evs[8].pid, 10);
        assert_ev(&run.evs[9], CA_TRACE_LOOKUP, "/q/f", NULL, 0);
        run_free(&run);
}

Test(trace_line, stderr_main_alias)
{
        struct run run;

        /* strace -f 2>LOG: the first process is bare alone, "[pid 50]" beside a child. */
        read_text("chdir(\"/a\") = 0\n"
                  "strace: Process 51 attached\n"
                  "[pid 50] chdir(\"/b\") = 0\n"
                  "[pid 51] stat(\"x\", 0x1) = 0\n"      /* forked in /a */
                  "[pid 50] stat(\"y\",  <unfinished ...>\n"
                  "[pid 51] +++ exited with 0 +++\n"
                  "<... stat resumed>0x1) = 0\n"          /* bare again, same process */
                  "strace: Process 52 attached\n"
                  "[pid 52] stat(\"z\", 0x1) = 0\n",     /* from the first process: /b */
                  "/", &run);
        cr_assert_eq(run.n, 6);
        assert_ev(&run.evs[1], CA_TRACE_CHDIR, "/b", NULL, 0);
        cr_assert_eq(run.evs[1].pid, 0);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/a/x", NULL, 0);
        cr_assert_eq(run.evs[2].pid, 51);
        assert_ev(&run.evs[3], CA_TRACE_EXIT, "/proc/51", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/b/y", NULL, 0);
        cr_assert_eq(run.evs[4].pid, 0);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/b/z", NULL, 0);
        cr_assert_eq(run.st.skipped_orphan, 0);
        run_free(&run);

        /* -q hides the attach lines: a bracketed pid is never guessed to be the first. */
        read_text("chdir(\"/a\") = 0\n"
                  "[pid 50] chdir(\"/b\") = 0\n"
                  "stat(\"y\", 0x1) = 0\n",
                  "/", &run);
        cr_assert_eq(run.n, 3);
        cr_assert_eq(run.evs[1].pid, 50);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/a/y", NULL, 0);
        run_free(&run);

        /* -p 70: the attach line comes first and names the first process. */
        read_text("strace: Process 70 attached\n"
                  "chdir(\"/a\") = 0\n"
                  "[pid 70] chdir(\"b\") = 0\n"
                  "stat(\"y\", 0x1) = 0\n",
                  "/", &run);
        cr_assert_eq(run.n, 3);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/a/b/y", NULL, 0);
        cr_assert_eq(run.evs[1].pid, 0);
        run_free(&run);
}

Test(trace_line, getcwd_sets_cwd)
{
        struct run run;

        read_text("getcwd(\"/real/dir\", 4096) = 10\n"
                  "stat(\"x\", 0x1) = 0\n"
                  "getcwd(0x7ffd, 1) = -1 ERANGE (Numerical result out of range)\n"
                  "getcwd(\"(unreachable)/y\", 4096) = 16\n"
                  "stat(\"z\", 0x1) = 0\n",
                  "/start", &run);
        cr_assert_eq(run.n, 2);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/real/dir/x", NULL, 0);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/real/dir/z", NULL, 0);
        cr_assert_eq(run.st.skipped_other, 3);
        run_free(&run);
}

/* ---- limits and hostile input ---- */

static void line_of(char *buf, size_t len, const char *head, const char *tail)
{
        size_t h = strlen(head), t = strlen(tail);

        cr_assert(len >= h + t);
        memcpy(buf, head, h);
        memset(buf + h, 'a', len - h - t);
        memcpy(buf + len - t, tail, t);
}

Test(trace_limits, line_max_boundary)
{
        size_t n = 3 * (CA_TRACE_LINE_MAX + 2) + 64, off = 0;
        char *text = malloc(n);
        struct run run;
        FILE *f;

        cr_assert_not_null(text);
        /* Exactly CA_TRACE_LINE_MAX bytes: kept. One more: skipped. Far more: skipped. */
        line_of(text + off, CA_TRACE_LINE_MAX, "stat(\"/", "\", 0x1) = 0");
        off += CA_TRACE_LINE_MAX;
        text[off++] = '\n';
        line_of(text + off, CA_TRACE_LINE_MAX + 1, "stat(\"/", "\", 0x1) = 0");
        off += CA_TRACE_LINE_MAX + 1;
        text[off++] = '\n';
        off += (size_t) sprintf(text + off, "stat(\"/ok\", 0x1) = 0\n");
        line_of(text + off, CA_TRACE_LINE_MAX + 20, "stat(\"/", "\", 0x1) = 0");
        off += CA_TRACE_LINE_MAX + 20; /* no newline: the log ends inside it */

        f = text_file(text, off);
        read_all(f, NULL, &run);
        fclose(f);
        cr_assert_eq(run.n, 2);
        cr_assert_eq(strlen(run.evs[0].path), CA_TRACE_LINE_MAX - strlen("stat(\"\", 0x1) = 0"));
        cr_assert_str_eq(run.evs[1].path, "/ok");
        cr_assert_eq(run.st.lines, 4);
        cr_assert_eq(run.st.skipped_malformed, 2);
        run_free(&run);
        free(text);
}

Test(trace_limits, huge_line_is_not_buffered)
{
        /* 8 MiB on one line, then a good one: skipped in pieces, never held whole. */
        size_t big = 8u << 20;
        char *chunk = malloc(65536);
        struct run run;
        FILE *f = tmpfile();

        cr_assert_not_null(f);
        cr_assert_not_null(chunk);
        memset(chunk, 'x', 65536);
        for (size_t i = 0; i < big; i += 65536)
                cr_assert_eq(fwrite(chunk, 1, 65536, f), 65536);
        fputs("\nstat(\"/after\", 0x1) = 0\n", f);
        rewind(f);
        read_all(f, NULL, &run);
        fclose(f);
        free(chunk);
        cr_assert_eq(run.n, 1);
        cr_assert_str_eq(run.evs[0].path, "/after");
        cr_assert_eq(run.st.lines, 2);
        cr_assert_eq(run.st.skipped_malformed, 1);
        run_free(&run);
}

Test(trace_limits, long_join_is_malformed)
{
        size_t half = CA_TRACE_LINE_MAX - 100, off = 0;
        char *text = malloc(2 * CA_TRACE_LINE_MAX);
        struct run run;
        FILE *f;

        cr_assert_not_null(text);
        line_of(text, half, "1 stat(\"/", "\", <unfinished ...>");
        off = half;
        text[off++] = '\n';
        line_of(text + off, half, "1 <... stat resumed>", "0x1) = 0");
        off += half;
        text[off++] = '\n';
        f = text_file(text, off);
        read_all(f, NULL, &run);
        fclose(f);
        cr_assert_eq(run.n, 0);
        cr_assert_eq(run.st.skipped_orphan, 1);
        cr_assert_eq(run.st.skipped_malformed, 1);
        run_free(&run);
        free(text);
}

Test(trace_limits, pid_table_bound)
{
        struct run run;
        FILE *f = tmpfile();

        cr_assert_not_null(f);
        /* The first pid and CA_TRACE_PIDS_MAX - 1 more fill the table... */
        fputs("1 chdir(\"/w\") = 0\n", f);
        for (int pid = 2; pid <= CA_TRACE_PIDS_MAX; pid++)
                fprintf(f, "%d stat(\"r\", 0x1) = 0\n", pid);
        /* ...so the next resolves absolute paths only, until a pid exits. */
        fprintf(f, "%d stat(\"r\", 0x1) = 0\n", CA_TRACE_PIDS_MAX + 1);
        fprintf(f, "%d stat(\"/abs\", 0x1) = 0\n", CA_TRACE_PIDS_MAX + 1);
        fprintf(f, "%d openat(AT_FDCWD, \"/x\", O_RDONLY <unfinished ...>\n",
                CA_TRACE_PIDS_MAX + 1);
        fputs("5 +++ exited with 0 +++\n", f);
        fprintf(f, "%d stat(\"r\", 0x1) = 0\n", CA_TRACE_PIDS_MAX + 2);
        rewind(f);
        read_all(f, NULL, &run);
        fclose(f);
        cr_assert_eq(run.n, CA_TRACE_PIDS_MAX + 3);
        cr_assert_eq(run.st.skipped_dirfd, 1);
        cr_assert_eq(run.st.skipped_orphan, 1);
        cr_assert_str_eq(run.evs[1].path, "/w/r");
        cr_assert_str_eq(run.evs[run.n - 3].path, "/abs");
        assert_ev(&run.evs[run.n - 2], CA_TRACE_EXIT, "/proc/5", NULL, 0);
        cr_assert_str_eq(run.evs[run.n - 1].path, "/w/r");
        run_free(&run);
}

/*
 * Long unfinished halves from many pids (60,000 bytes each, twice what CA_TRACE_STATE_MAX
 * holds), and with @resumed their resumed halves after them: read into *ret.
 */
static size_t read_long_halves(bool resumed, struct run *ret)
{
        size_t len = 60000, pids = 2 * CA_TRACE_STATE_MAX / len;
        char *line = malloc(len + 64);
        FILE *f = tmpfile();

        cr_assert_not_null(f);
        cr_assert_not_null(line);
        for (size_t pid = 1; pid <= pids; pid++) {
                char head[64];

                snprintf(head, sizeof(head), "%zu stat(\"/", pid);
                line_of(line, len, head, "\", <unfinished ...>");
                fwrite(line, 1, len, f);
                fputc('\n', f);
        }
        for (size_t pid = 1; resumed && pid <= pids; pid++)
                fprintf(f, "%zu <... stat resumed>0x1) = 0\n", pid);
        rewind(f);
        read_all(f, NULL, ret);
        fclose(f);
        free(line);
        return pids;
}

Test(trace_limits, state_budget)
{
        /* Held up to CA_TRACE_STATE_MAX, then orphaned at the end. */
        struct run run;
        size_t pids = read_long_halves(false, &run);

        cr_assert_eq(run.n, 0);
        cr_assert_eq(run.st.lines, pids);
        cr_assert_eq(run.st.unfinished, 0, "all orphaned at the end");
        cr_assert_eq(run.st.skipped_orphan, pids);
        run_free(&run);
}

Test(trace_limits, state_budget_refuses_halves)
{
        /* Resumed before the end: only the halves that fitted are joined. */
        struct run run;
        size_t pids = read_long_halves(true, &run);

        cr_assert_gt(run.n, pids / 3, "about half fit in the budget");
        cr_assert_lt(run.n, pids * 2 / 3);
        cr_assert_eq(run.st.unfinished, run.n);
        cr_assert_eq(run.st.skipped_orphan, 2 * (pids - run.n), "the half and its resume");
        run_free(&run);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

Test(trace_limits, random_bytes)
{
        static const char *const bits[] = {
                "openat(", "AT_FDCWD", ", ", "\"", "\\", "\\3", "\\x", "..", "/", ")", " = ",
                "-1 ENOENT (x)", " <unfinished ...>", "<... openat resumed>", "[pid 1] ",
                "12 ", "\n", "chdir(\"", "clone(", ") = 7\n", "3<", ">", "(", "[", "{",
                "}", "]", "/*", "*/", "O_CREAT", "...", "12:00:00.5 ", "1.5 ", "+++ exited ",
                "fchdir(", "renameat2(", "?", "\r", "getcwd(\"/",
        };
        size_t size = 16384;
        char *buf = malloc(size);

        cr_assert_not_null(buf);
        for (int iter = 0; iter < 300; iter++) {
                struct run run;
                size_t n = 0;
                FILE *f;

                while (n < size - 32) {
                        uint64_t r = rng();

                        if (r % 3 == 0) {
                                const char *b = bits[(r >> 8) % (sizeof(bits) / sizeof(bits[0]))];

                                memcpy(buf + n, b, strlen(b));
                                n += strlen(b);
                        } else {
                                buf[n++] = (char) (iter % 2 ? r >> 16 : 32 + (r >> 16) % 95);
                        }
                }
                f = text_file(buf, n);
                read_all(f, iter % 3 ? "/" : "/a/b", &run);
                fclose(f);
                run_free(&run);
        }
        free(buf);
}

Test(trace_limits, mutated_fixture)
{
        const char *srcdir = getenv("CA_TEST_SRCDIR");
        char path[PATH_MAX];
        char *orig, *buf;
        long size;
        FILE *f;

        snprintf(path, sizeof(path), "%s/fixtures/trace/proc-ttt.log", srcdir ? srcdir : "tests");
        f = fopen(path, "re");
        cr_assert_not_null(f, "%s: %s", path, strerror(errno));
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        rewind(f);
        orig = malloc((size_t) size);
        buf = malloc((size_t) size);
        cr_assert_not_null(orig);
        cr_assert_not_null(buf);
        cr_assert_eq(fread(orig, 1, (size_t) size, f), (size_t) size);
        fclose(f);
        for (int iter = 0; iter < 200; iter++) {
                struct run run;
                size_t n = (size_t) size;

                memcpy(buf, orig, n);
                for (int k = 0; k < 1 + iter % 40; k++) {
                        uint64_t r = rng();
                        size_t at = (size_t) (r % n);

                        switch ((r >> 32) % 3) {
                        case 0:
                                buf[at] = (char) (r >> 40);
                                break;
                        case 1: /* drop a byte */
                                memmove(buf + at, buf + at + 1, n - at - 1);
                                n--;
                                break;
                        default: /* cut the log */
                                if (k == 0)
                                        n = at + 1;
                                break;
                        }
                }
                f = text_file(buf, n);
                read_all(f, "/tmp/cafix", &run);
                fclose(f);
                run_free(&run);
        }
        free(orig);
        free(buf);
}

/* ---- API ---- */

Test(trace_api, open_and_errors)
{
        struct ca_trace *t = (struct ca_trace *) 0x1;
        struct ca_trace_event e;
        struct ca_trace_stats st;
        FILE *f = tmpfile();
        int r;

        cr_assert_not_null(f);
        cr_assert_eq(ca_trace_open_file(f, "relative", &t), -EINVAL);
        cr_assert_eq(ca_trace_open_file(NULL, NULL, &t), -EINVAL);
        cr_assert_eq(ca_trace_open_file(f, NULL, NULL), -EINVAL);
        cr_assert_eq(t, (struct ca_trace *) 0x1, "ret_ untouched on failure");
        cr_assert_eq(ca_trace_open_path("/nonexistent/ca-trace.log", NULL, &t), -ENOENT);
        cr_assert_null(ca_trace_free(NULL));
        fclose(f);

        /* A stream that cannot be read: -EIO, not end of log. */
        f = fopen("/dev/null", "we");
        cr_assert_not_null(f);
        r = ca_trace_open_file(f, NULL, &t);
        cr_assert_eq(r, 0);
        cr_assert_eq(ca_trace_next(t, &e), -EIO);
        ca_trace_get_stats(t, &st);
        cr_assert_eq(st.lines, 0);
        cr_assert_null(ca_trace_free(t));
        fclose(f);

        cr_assert_str_eq(ca_trace_op_name(CA_TRACE_LOOKUP), "lookup");
        cr_assert_str_eq(ca_trace_op_name(CA_TRACE_CHDIR), "chdir");
        cr_assert_null(ca_trace_op_name(_CA_TRACE_OP_MAX));
        cr_assert_null(ca_trace_op_name((enum ca_trace_op) -1));
}

Test(trace_api, open_path_owns_file)
{
        char tmpl[] = "/tmp/ca-trace-XXXXXX";
        struct ca_trace *t = NULL;
        struct ca_trace_event e;
        int fd = mkstemp(tmpl);

        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, "mkdir(\"d\", 0777) = 0\n", 21), 21);
        close(fd);
        cr_assert_eq(ca_trace_open_path(tmpl, "/base", &t), 0);
        cr_assert_eq(ca_trace_next(t, &e), 1);
        cr_assert_eq(e.op, CA_TRACE_MKDIR);
        cr_assert_str_eq(e.path, "/base/d");
        cr_assert_str_eq(e.syscall, "mkdir");
        cr_assert_eq(ca_trace_next(t, &e), 0);
        cr_assert_null(ca_trace_free(t));
        unlink(tmpl);
}

/* ---- paths walked as the kernel walks them ---- */

static void assert_walks(const struct ev *v, const char *walks)
{
        cr_assert_str_eq(v->walks, walks, "walks of %s: \"%s\", want \"%s\"", v->path, v->walks,
                         walks);
}

/* Links the log itself shows (readlink results, symlink calls) are followed where a call
 * follows them, and forgotten when unlinked; a text strace cut short (-s) teaches nothing. */
Test(trace_walk, links_learned_from_the_log)
{
        struct run run;

        read_text("10 readlink(\"/lib\", \"usr/lib\", 4095) = 7\n"
                  "10 openat(AT_FDCWD, \"/lib/x86_64-linux-gnu/libc.so.6\", O_RDONLY) = 3\n"
                  "10 lstat(\"/lib\", {st_mode=S_IFLNK|0777, st_size=7, ...}) = 0\n"
                  "10 stat(\"/lib/\", {st_mode=S_IFDIR|0755, st_size=4096, ...}) = 0\n"
                  "10 openat(AT_FDCWD, \"/lib\", O_RDONLY|O_NOFOLLOW|O_PATH) = 4\n"
                  "10 newfstatat(AT_FDCWD, \"/lib\", 0x1, AT_SYMLINK_NOFOLLOW) = 0\n"
                  "10 newfstatat(AT_FDCWD, \"/lib\", 0x1, 0) = 0\n"
                  "10 symlinkat(\"/etc\", AT_FDCWD, \"/w/e\") = 0\n"
                  "10 access(\"e/passwd\", R_OK) = 0\n"
                  "10 readlink(\"/w/t\", \"trunc\"..., 5) = 5\n"
                  "10 stat(\"/w/t/x\", 0x1) = 0\n"
                  "10 unlink(\"/w/e\") = 0\n"
                  "10 access(\"e/passwd\", R_OK) = -1 ENOENT (No such file or directory)\n",
                  "/w", &run);
        cr_assert_eq(run.n, 13);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/lib", NULL, 0);
        assert_walks(&run.evs[0], "");
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/usr/lib/x86_64-linux-gnu/libc.so.6", NULL, 0);
        assert_walks(&run.evs[1], "l:/lib");
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/lib", NULL, 0); /* lstat: not followed */
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/usr/lib", NULL, 0); /* a trailing slash */
        assert_walks(&run.evs[3], "l:/lib");
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/lib", NULL, 0);     /* O_NOFOLLOW */
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/lib", NULL, 0);     /* AT_SYMLINK_NOFOLLOW */
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/usr/lib", NULL, 0);
        assert_ev(&run.evs[7], CA_TRACE_SYMLINK, "/etc", "/w/e", 0);
        assert_ev(&run.evs[8], CA_TRACE_LOOKUP, "/etc/passwd", NULL, 0);
        assert_walks(&run.evs[8], "l:/w/e");
        assert_ev(&run.evs[10], CA_TRACE_LOOKUP, "/w/t/x", NULL, 0);
        assert_walks(&run.evs[10], "");
        assert_ev(&run.evs[12], CA_TRACE_LOOKUP, "/w/e", NULL, -ENOENT); /* gone: it ends there */
        cr_assert_eq(run.evs[12].guesses & CA_TRACE_GUESS_MISSING, 0);
        cr_assert_eq(run.st.facts, 2, "/lib, /w/e, and nothing for the cut text");
        run_free(&run);
}

/* "x/.." looks x up first (a directory walked into), then goes up from where it really is. */
Test(trace_walk, dotdot_walks_into_the_directory)
{
        struct run run;

        read_text("stat(\"a/b/../c\", 0x1) = 0\n"
                  "stat(\"../x\", 0x1) = 0\n"
                  "stat(\"a/./b/../../d\", 0x1) = 0\n"
                  "stat(\"/..\", 0x1) = 0\n"
                  "stat(\"a/b/..\", 0x1) = 0\n",
                  "/w", &run);
        cr_assert_eq(run.n, 5);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/w/a/c", NULL, 0);
        assert_walks(&run.evs[0], "d:/w/a/b");
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/x", NULL, 0); /* from the cwd: no lookup */
        assert_walks(&run.evs[1], "");
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/w/d", NULL, 0);
        assert_walks(&run.evs[2], "d:/w/a/b"); /* once: /w/a is on b's way */
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/", NULL, 0);
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/w/a", NULL, 0);
        assert_walks(&run.evs[4], "d:/w/a/b");
        run_free(&run);
}

/* /proc/self and /proc/thread-self are the calling process (proc_self_get_link). */
Test(trace_walk, proc_self_is_the_caller)
{
        struct run run;

        read_text("42 openat(AT_FDCWD, \"/proc/self/status\", O_RDONLY) = 3\n"
                  "43 stat(\"/proc/thread-self/comm\", 0x1) = 0\n"
                  "42 readlink(\"/proc/self\", \"42\", 64) = 2\n",
                  "/", &run);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/proc/42/status", NULL, 0);
        assert_walks(&run.evs[0], "l:/proc/self");
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/proc/43/task/43/comm", NULL, 0);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, "/proc/self", NULL, 0);
        run_free(&run);
        read_text("stat(\"/proc/self/status\", 0x1) = 0\n", "/", &run); /* no pid: as written */
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/proc/self/status", NULL, 0);
        run_free(&run);
}

/*
 * A failed call's path is where its walk ended. Without capture information: -ENOENT the last
 * component (for a create the parent), -ENOTDIR the parent (the last for a call that wants a
 * directory, or a trailing slash); each said in the event's guesses.
 */
Test(trace_walk, failures_name_where_the_walk_ended)
{
        struct run run;

        read_text("stat(\"/a/b/c\", 0x1) = -1 ENOENT (No such file or directory)\n"
                  "openat(AT_FDCWD, \"/a/n/f\", O_WRONLY|O_CREAT, 0644) = -1 ENOENT (No such file or directory)\n"
                  "mkdir(\"/m/d\", 0755) = -1 ENOENT (No such file or directory)\n"
                  "stat(\"/etc/passwd/x\", 0x1) = -1 ENOTDIR (Not a directory)\n"
                  "chdir(\"/etc/passwd\") = -1 ENOTDIR (Not a directory)\n"
                  "openat(AT_FDCWD, \"/etc/hosts/\", O_RDONLY) = -1 ENOTDIR (Not a directory)\n"
                  "openat(AT_FDCWD, \"/etc/group\", O_RDONLY|O_DIRECTORY) = -1 ENOTDIR (Not a directory)\n"
                  "rename(\"/r/a\", \"/r/n/b\") = -1 ENOENT (No such file or directory)\n"
                  "symlink(\"t\", \"/s/n/l\") = -1 ENOENT (No such file or directory)\n"
                  "stat(\"/ok\", 0x1) = 0\n",
                  "/", &run);
        cr_assert_eq(run.n, 10);
        assert_ev(&run.evs[0], CA_TRACE_LOOKUP, "/a/b/c", NULL, -ENOENT);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, "/a/n", NULL, -ENOENT);
        assert_ev(&run.evs[2], CA_TRACE_MKDIR, "/m", NULL, -ENOENT);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, "/etc/passwd", NULL, -ENOTDIR);
        assert_ev(&run.evs[4], CA_TRACE_CHDIR, "/etc/passwd", NULL, -ENOTDIR);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, "/etc/hosts", NULL, -ENOTDIR);
        assert_ev(&run.evs[6], CA_TRACE_LOOKUP, "/etc/group", NULL, -ENOTDIR);
        assert_ev(&run.evs[7], CA_TRACE_RENAME, "/r/a", "/r/n/b", -ENOENT);
        assert_ev(&run.evs[8], CA_TRACE_SYMLINK, "t", "/s/n", -ENOENT);
        for (size_t i = 0; i < 9; i++)
                cr_assert(run.evs[i].guesses &
                                  (i >= 3 && i <= 6 ? CA_TRACE_GUESS_NOTDIR
                                                    : CA_TRACE_GUESS_MISSING),
                          "event %zu: guesses %x", i, run.evs[i].guesses);
        cr_assert_eq(run.evs[9].guesses, CA_TRACE_GUESS_LINKS, "no facts: links unknown");
        cr_assert_eq(run.st.guessed_missing, 5);
        cr_assert_eq(run.st.guessed_notdir, 4);
        cr_assert_eq(run.st.guessed_links, 10);
        run_free(&run);
}

/* ---- references (CA_TRACE_REFS) ---- */

static void read_refs(const char *text, const char *cwd, struct run *run)
{
        FILE *f = text_file(text, strlen(text));
        struct ca_trace *t = NULL;

        cr_assert_eq(ca_trace_open_file(f, cwd, &t), 0);
        cr_assert_eq(ca_trace_set_options(t, 0x80), -EINVAL);
        cr_assert_eq(ca_trace_set_options(t, CA_TRACE_REFS), 0);
        read_reader(t, run);
        cr_assert_eq(ca_trace_set_options(t, 0), -EBUSY, "too late");
        ca_trace_free(t);
        fclose(f);
}

static void assert_ref(const struct ev *v, enum ca_trace_op op, const char *syscall,
                       uint64_t hold, const char *drops)
{
        cr_assert_eq(v->op, op, "%s %s: op %s", v->syscall, v->path, ca_trace_op_name(v->op));
        cr_assert_str_eq(v->syscall, syscall);
        cr_assert_eq(v->hold, hold, "%s %s: hold %llu, want %llu", v->syscall, v->path,
                     (unsigned long long)v->hold, (unsigned long long)hold);
        cr_assert_str_eq(v->drops, drops, "%s %s: drops \"%s\", want \"%s\"", v->syscall,
                         v->path, v->drops, drops);
}

/*
 * An open file stays held while any fd (dup, dup2, fcntl F_DUPFD, a fork's copy) refers to it;
 * O_CLOEXEC (open, F_DUPFD_CLOEXEC, F_SETFD, close_range CLOSE_RANGE_CLOEXEC) fds are closed by
 * a successful exec; the image is held until the exit. A close or dup2 with nothing but drops
 * to say is a RELEASE; an exit is an EXIT, with the drops of what only that process held.
 */
Test(trace_refs, fds_dup_close_exec_exit)
{
        struct run run;

        read_refs("5 openat(AT_FDCWD, \"/a\", O_RDONLY) = 3\n"
                  "5 dup(3) = 4\n"
                  "5 close(3) = 0\n"
                  "5 fcntl(4, F_DUPFD_CLOEXEC, 10) = 10\n"
                  "5 close(4) = 0\n"
                  "5 openat(AT_FDCWD, \"/b\", O_RDONLY|O_CLOEXEC) = 3\n"
                  "5 fcntl(3, F_SETFD, 0) = 0\n"
                  "5 openat(AT_FDCWD, \"/c\", O_RDONLY) = 5\n"
                  "5 close_range(5, 5, CLOSE_RANGE_CLOEXEC) = 0\n"
                  "5 openat(AT_FDCWD, \"/d\", O_RDONLY) = 6\n"
                  "5 dup2(6, 3) = 3\n"
                  "5 close(6) = 0\n"
                  "5 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 6\n"
                  "6 close(3) = 0\n"
                  "6 execve(\"/bin/x\", [\"x\"], 0x1 /* 0 vars */) = 0\n"
                  "6 +++ exited with 0 +++\n"
                  "5 close(10) = 0\n"
                  "5 close(99) = -1 EBADF (Bad file descriptor)\n"
                  "5 close_range(3, 4294967295, 0) = 0\n"
                  "5 +++ exited with 0 +++\n",
                  "/", &run);
        cr_assert_eq(run.n, 11);
        assert_ref(&run.evs[0], CA_TRACE_PIN, "info", 1, ""); /* the starting directory */
        assert_ref(&run.evs[1], CA_TRACE_LOOKUP, "openat", 2, "");
        assert_ref(&run.evs[2], CA_TRACE_LOOKUP, "openat", 3, "");
        assert_ref(&run.evs[3], CA_TRACE_LOOKUP, "openat", 4, "");
        assert_ref(&run.evs[4], CA_TRACE_LOOKUP, "openat", 5, "");
        assert_ref(&run.evs[5], CA_TRACE_RELEASE, "dup2", 0, "3"); /* b was on fd 3 */
        assert_ref(&run.evs[6], CA_TRACE_EXEC, "execve", 6, "");   /* a and c: the parent's */
        assert_ref(&run.evs[7], CA_TRACE_EXIT, "exit", 0, "6");
        cr_assert_str_eq(run.evs[7].path, "/proc/6");
        assert_ref(&run.evs[8], CA_TRACE_RELEASE, "close", 0, "2");
        assert_ref(&run.evs[9], CA_TRACE_RELEASE, "close_range", 0, "5 4");
        assert_ref(&run.evs[10], CA_TRACE_EXIT, "exit", 0, ""); /* nothing left to let go */
        cr_assert_eq(run.evs[6].guesses & CA_TRACE_GUESS_INTERP, CA_TRACE_GUESS_INTERP);
        cr_assert_eq(run.st.info_events, 1);
        cr_assert_eq(run.st.fds_unknown, 0, "a failed close(99) says nothing: %llu",
                     (unsigned long long)run.st.fds_unknown);
        run_free(&run);
}

/* Threads share the fd table and the working directory (CLONE_FILES, CLONE_FS). */
Test(trace_refs, threads_share_fds_and_cwd)
{
        struct run run;

        read_refs("7 openat(AT_FDCWD, \"/t\", O_RDONLY) = 3\n"
                  "7 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, exit_signal=0, stack=0x7f, stack_size=0x7fff00}, 88) = 8\n"
                  "8 close(3) = 0\n"
                  "8 chdir(\"/tmp\") = 0\n"
                  "7 stat(\"x\", 0x1) = 0\n"
                  "8 +++ exited with 0 +++\n"
                  "7 chdir(\"/\") = 0\n",
                  "/", &run);
        cr_assert_eq(run.n, 7);
        assert_ref(&run.evs[1], CA_TRACE_LOOKUP, "openat", 2, "");
        assert_ref(&run.evs[2], CA_TRACE_RELEASE, "close", 0, "2");
        assert_ref(&run.evs[3], CA_TRACE_CHDIR, "chdir", 3, ""); /* the start stays pinned */
        assert_ev(&run.evs[4], CA_TRACE_LOOKUP, "/tmp/x", NULL, 0);
        assert_ref(&run.evs[5], CA_TRACE_EXIT, "exit", 0, ""); /* the thread's cwd is shared */
        assert_ref(&run.evs[6], CA_TRACE_CHDIR, "chdir", 4, "3");
        run_free(&run);
}

/* ---- capture information ---- */

static struct ca_trace *open_text(const char *log, FILE **ret_f)
{
        struct ca_trace *t = NULL;

        *ret_f = text_file(log, strlen(log));
        cr_assert_eq(ca_trace_open_file(*ret_f, "/w", &t), 0);
        return t;
}

static int load_text(struct ca_trace *t, const char *info, size_t *ret_line)
{
        FILE *f = text_file(info, strlen(info));
        int r = ca_trace_load_info(t, f, ret_line);

        fclose(f);
        return r;
}

Test(trace_info, errors_name_the_line_and_keep_nothing)
{
        static const struct {
                const char *text;
                size_t line;
        } bad[] = {
                { "# comment\n\nmount \"/x\"\n", 3 },           /* no fstype */
                { "pin relative\n", 1 },
                { "pin \"relative\"\n", 1 },
                { "dir \"/a\"\nlink \"/a\"\n", 2 },              /* no target */
                { "frobnicate \"/x\"\n", 1 },
                { "dir \"/a\" extra\n", 1 },
                { "absent \"/a\\0b\"\n", 1 },                   /* a NUL in a path */
                { "file \"/a\n", 1 },                           /* unterminated */
                { "script \"/s\" \"\"\n", 1 },                  /* a script needs one */
        };
        struct ca_trace_stats st;
        struct ca_trace_event e;
        struct ca_trace *t;
        size_t line;
        FILE *f;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                t = open_text("stat(\"/x\", 0x1) = 0\n", &f);
                line = 0;
                cr_assert_eq(load_text(t, bad[i].text, &line), -EINVAL, "%s", bad[i].text);
                cr_assert_eq(line, bad[i].line, "%s: line %zu", bad[i].text, line);
                ca_trace_get_stats(t, &st);
                cr_assert_eq(st.facts, 0, "nothing kept");
                cr_assert_eq(ca_trace_next(t, &e), 1);
                cr_assert_eq(e.op, CA_TRACE_LOOKUP, "no information event after a bad file");
                ca_trace_free(t);
                fclose(f);
        }
        t = open_text("stat(\"/x\", 0x1) = 0\n", &f);
        cr_assert_eq(load_text(t, "# cacheage capture information 1\n\n  dir \"/w\"  \n", NULL), 0);
        cr_assert_eq(ca_trace_add_pin(t, "rel"), -EINVAL);
        cr_assert_eq(ca_trace_add_mount(t, "/m", "two words"), -EINVAL);
        cr_assert_eq(ca_trace_next(t, &e), 1);
        cr_assert_eq(load_text(t, "dir \"/a\"\n", NULL), -EBUSY);
        cr_assert_eq(ca_trace_add_pin(t, "/p"), -EBUSY);
        ca_trace_free(t);
        fclose(f);
}

static const char info_text[] =
        "mount \"/\" ext4\n"
        "mount \"/dev/shm\" tmpfs\n"
        "pin \"/w/held\"\n"            /* in a directory the log walks into */
        "pin \"/usr/lib/deep/er/f\"\n" /* below one it walks through: /usr/lib */
        "pin \"/elsewhere/x\"\n"        /* nowhere near */
        "dir \"/w\"\n"
        "link \"/w/l\" \"../usr/lib\"\n"
        "dir \"/usr\"\n"
        "dir \"/usr/lib\"\n"
        "file \"/usr/lib/f\"\n"
        "absent \"/usr/lib/nodir\"\n"
        "link \"/w/sp\" \"a \\\"q\\\"\\n\"\n"
        "elf \"/usr/lib/f\" \"\"\n";

static const char info_log[] = "stat(\"l/f\", 0x1) = 0\n"
                               "stat(\"/w/l/nodir/x\", 0x1) = -1 ENOENT (No such file or directory)\n"
                               "rename(\"/usr/lib/f\", \"/usr/lib/nodir/g\") = -1 ENOENT (No such file or directory)\n"
                               "execve(\"l/f\", [\"f\"], 0x1 /* 0 vars */) = 0\n";

/* Loaded, applied, and written back as loaded: the same events from the written file. */
Test(trace_info, written_back_as_loaded)
{
        char *out = NULL;
        size_t out_len = 0;
        struct run a, b;
        struct ca_trace *t;
        FILE *f, *w;

        t = open_text(info_log, &f);
        cr_assert_eq(load_text(t, info_text, NULL), 0);
        read_reader(t, &a);
        w = open_memstream(&out, &out_len);
        cr_assert_eq(ca_trace_write_info(t, w), 0);
        fclose(w);
        ca_trace_free(t);
        fclose(f);

        cr_assert_eq(a.n, 10, "2 mounts, 3 pins, the cwd, 4 calls");
        cr_assert_eq(a.st.info_events, 6);
        assert_ev(&a.evs[0], CA_TRACE_MOUNT, "/", NULL, 0);
        assert_ev(&a.evs[2], CA_TRACE_PIN, "/w/held", NULL, 0);
        assert_ev(&a.evs[5], CA_TRACE_PIN, "/w", NULL, 0);
        assert_ev(&a.evs[6], CA_TRACE_LOOKUP, "/usr/lib/f", NULL, 0);
        assert_walks(&a.evs[6], "l:/w/l");
        cr_assert_eq(a.evs[6].guesses, 0, "every component known");
        assert_ev(&a.evs[7], CA_TRACE_LOOKUP, "/usr/lib/nodir", NULL, -ENOENT);
        assert_ev(&a.evs[8], CA_TRACE_RENAME, "/usr/lib/nodir", "/usr/lib/nodir", -ENOENT);
        cr_assert_eq(a.evs[8].guesses, 0, "the second path's missing component, probed");
        assert_ev(&a.evs[9], CA_TRACE_EXEC, "/usr/lib/f", NULL, 0);
        cr_assert_eq(a.evs[9].guesses, 0, "a static program: no interpreter");
        cr_assert_not_null(strstr(out, "pin \"/w/held\"\n"), "%s", out);
        cr_assert_not_null(strstr(out, "pin \"/usr/lib\"\n"), "the deepest walked ancestor");
        cr_assert_null(strstr(out, "/elsewhere"));
        cr_assert_not_null(strstr(out, "link \"/w/sp\" \"a \\\"q\\\"\\012\"\n"), "%s", out);
        cr_assert_not_null(strstr(out, "mount \"/dev/shm\" tmpfs\n"));

        t = open_text(info_log, &f);
        cr_assert_eq(load_text(t, out, NULL), 0);
        read_reader(t, &b);
        ca_trace_free(t);
        fclose(f);
        cr_assert_eq(b.n, a.n - 1, "/elsewhere/x was dropped, /usr/lib stands for the deep pin");
        for (size_t i = 4; i < b.n; i++) {
                cr_assert_str_eq(b.evs[i].path, a.evs[i + 1].path);
                cr_assert_str_eq(b.evs[i].walks, a.evs[i + 1].walks);
        }
        free(out);
        run_free(&a);
        run_free(&b);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

/* CA_TRACE_PROBE looks names up on the running system: links, missing names, interpreters. */
Test(trace_info, probe_the_live_system)
{
        char dir[] = "/tmp/ca-probe-XXXXXX", p[PATH_MAX + 64], log[4096], sh[PATH_MAX];
        char *out = NULL;
        size_t out_len = 0;
        struct ca_trace_stats st;
        struct ca_trace *t;
        struct run run;
        FILE *f, *w;

        cr_assert_not_null(mkdtemp(dir));
        cr_assert_not_null(realpath("/bin/sh", sh));
        snprintf(p, sizeof(p), "%s/d", dir);
        cr_assert_eq(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/d/f", dir);
        write_file(p, "", 0644);
        snprintf(p, sizeof(p), "%s/s", dir);
        write_file(p, "#! /bin/sh -e\ntrue\n", 0755);
        snprintf(p, sizeof(p), "%s/l", dir);
        cr_assert_eq(symlink("d", p), 0);
        snprintf(p, sizeof(p), "%s/abs", dir);
        cr_assert_eq(symlink(dir, p), 0);
        snprintf(log, sizeof(log),
                 "stat(\"%s/l/f\", 0x1) = 0\n"
                 "stat(\"%s/abs/l/../d/f\", 0x1) = 0\n"
                 "stat(\"%s/m/x\", 0x1) = -1 ENOENT (No such file or directory)\n"
                 "execve(\"%s/s\", [\"s\"], 0x1 /* 0 vars */) = 0\n"
                 "stat(\"%s/d/f/x\", 0x1) = -1 ENOTDIR (Not a directory)\n"
                 "stat(\"/proc/1/nothing-probed-here\", 0x1) = -1 ENOENT (No such file or directory)\n",
                 dir, dir, dir, dir, dir);
        f = text_file(log, strlen(log));
        cr_assert_eq(ca_trace_open_file(f, "/", &t), 0);
        cr_assert_eq(ca_trace_set_options(t, CA_TRACE_PROBE), 0);
        read_reader(t, &run);
        ca_trace_get_stats(t, &st);
        w = open_memstream(&out, &out_len);
        cr_assert_eq(ca_trace_write_info(t, w), 0);
        fclose(w);
        ca_trace_free(t);
        fclose(f);

        assert_ev(&run.evs[0], CA_TRACE_PIN, "/", NULL, 0); /* the starting directory */
        snprintf(p, sizeof(p), "%s/d/f", dir);
        assert_ev(&run.evs[1], CA_TRACE_LOOKUP, p, NULL, 0);
        cr_assert_eq(run.evs[1].guesses, 0);
        assert_ev(&run.evs[2], CA_TRACE_LOOKUP, p, NULL, 0);
        snprintf(p, sizeof(p), "l:%s/abs l:%s/l d:%s/d", dir, dir, dir);
        assert_walks(&run.evs[2], p);
        snprintf(p, sizeof(p), "%s/m", dir);
        assert_ev(&run.evs[3], CA_TRACE_LOOKUP, p, NULL, -ENOENT);
        cr_assert_eq(run.evs[3].guesses, 0);
        cr_assert_eq(run.evs[4].op, CA_TRACE_EXEC);
        cr_assert_eq(run.evs[4].guesses & CA_TRACE_GUESS_INTERP, 0, "%s", run.evs[4].walks);
        snprintf(p, sizeof(p), "i:%s", sh);
        cr_assert_not_null(strstr(run.evs[4].walks, p), "%s", run.evs[4].walks);
        snprintf(p, sizeof(p), "%s/d/f", dir);
        assert_ev(&run.evs[5], CA_TRACE_LOOKUP, p, NULL, -ENOTDIR);
        cr_assert_eq(run.evs[5].guesses, 0);
        cr_assert(run.evs[6].guesses & CA_TRACE_GUESS_MISSING, "/proc/<pid>: not probed");
        cr_assert_gt(st.probes, 8);

        snprintf(p, sizeof(p), "link \"%s/l\" \"d\"\n", dir);
        cr_assert_not_null(strstr(out, p), "%s", out);
        snprintf(p, sizeof(p), "absent \"%s/m\"\n", dir);
        cr_assert_not_null(strstr(out, p), "%s", out);
        snprintf(p, sizeof(p), "script \"%s/s\" \"/bin/sh\"\n", dir);
        cr_assert_not_null(strstr(out, p), "%s", out);
        snprintf(p, sizeof(p), "elf \"%s\" \"/", sh);
        cr_assert_not_null(strstr(out, p), "%s", out);
        cr_assert_null(strstr(out, "/proc/1/"), "%s", out);
        free(out);
        run_free(&run);
        snprintf(p, sizeof(p), "rm -rf '%s'", dir);
        cr_assert_eq(system(p), 0);
}

/* ---- strace, now ---- */

/*
 * `strace -f OPTS... -o LOG /bin/sh -c SCRIPT`, output to /dev/null. Skips the test when
 * strace is not installed or cannot trace here (ptrace not permitted), after removing @rm.
 */
static void strace_shell(const char *log, const char *const *opts, const char *script,
                         const char *rm)
{
        const char *const paths[] = { "/usr/bin/strace", "/bin/strace", "/usr/local/bin/strace" };
        const char *strace = NULL, *argv[32];
        char cmd[PATH_MAX + 16];
        size_t n = 0;
        int status, fd;
        pid_t pid;

        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !strace; i++)
                if (access(paths[i], X_OK) == 0)
                        strace = paths[i];
        if (!strace) {
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rm);
                (void)!system(cmd);
                cr_skip_test("strace is not installed");
        }
        argv[n++] = "strace";
        argv[n++] = "-f";
        for (size_t i = 0; opts[i]; i++)
                argv[n++] = opts[i];
        argv[n++] = "-o";
        argv[n++] = log;
        argv[n++] = "/bin/sh";
        argv[n++] = "-c";
        argv[n++] = script;
        argv[n] = NULL;
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                fd = open("/dev/null", O_RDWR);
                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                execv(strace, (char *const *)argv);
                _exit(127);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || access(log, R_OK) != 0) {
                unlink(log);
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rm);
                (void)!system(cmd);
                cr_skip_test("strace could not trace (status %d): ptrace not permitted?", status);
        }
}

Test(trace_live, strace_a_shell)
{
        static const char *const opts[] = { "-e", "trace=%file", NULL };
        char dir[] = "/tmp/ca-trace-live-XXXXXX", log[64], script[512], miss[160], p[160];
        struct run run;
        const struct ev *v;
        FILE *f;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(log, sizeof(log), "%s/log", dir);
        snprintf(script, sizeof(script),
                 "cd %s && stat nonexistent-ca-XXXX; mkdir d && cd d && : > f && mv f g && "
                 "rm g && cd .. && rmdir d",
                 dir);
        strace_shell(log, opts, script, dir);
        f = fopen(log, "re");
        cr_assert_not_null(f);
        read_all(f, "/", &run);
        fclose(f);
        unlink(log);

        cr_assert_gt(run.n, 10);
        cr_assert_eq(run.st.skipped_malformed, 0);
        cr_assert_eq(run.st.skipped_dirfd, 0);
        cr_assert_not_null(find(&run, "/bin/sh", CA_TRACE_EXEC));
        assert_ev(find(&run, dir, CA_TRACE_CHDIR), CA_TRACE_CHDIR, dir, NULL, 0);
        /* stat(1) is a child: it starts in the shell's cwd (the first-pid rule). */
        snprintf(miss, sizeof(miss), "%s/nonexistent-ca-XXXX", dir);
        v = find(&run, miss, CA_TRACE_LOOKUP);
        cr_assert_not_null(v, "no lookup of %s", miss);
        cr_assert_eq(v->result, -ENOENT);
        cr_assert_neq(v->pid, run.evs[0].pid);
        snprintf(p, sizeof(p), "%s/d", dir);
        assert_ev(find(&run, p, CA_TRACE_MKDIR), CA_TRACE_MKDIR, p, NULL, 0);
        assert_ev(find(&run, p, CA_TRACE_RMDIR), CA_TRACE_RMDIR, p, NULL, 0);
        snprintf(p, sizeof(p), "%s/d/f", dir);
        cr_assert_not_null(find(&run, p, CA_TRACE_CREATE), "no create of %s", p);
        v = find(&run, p, CA_TRACE_RENAME);
        cr_assert_not_null(v, "no rename of %s", p);
        snprintf(p, sizeof(p), "%s/d/g", dir);
        cr_assert_str_eq(v->path2, p);
        cr_assert_not_null(find(&run, p, CA_TRACE_UNLINK), "no unlink of %s", p);
        run_free(&run);
        rmdir(dir);
}

/*
 * A shell under strace with what the references need (bench-fidelity's trace set), read with
 * CA_TRACE_PROBE and CA_TRACE_REFS and replayed: every process exits, so every reference taken
 * is dropped again but the starting directory's; nothing is dropped that was not held; the
 * link and the file unlinked while open are seen as the kernel saw them.
 */
Test(trace_live, references_and_probe)
{
        static const char *const opts[] = {
                "-ttt", "-s", "4096", "-e",
                "trace=%file,%process,fchdir,close,close_range,dup,dup2,dup3,fcntl,mmap,munmap",
                NULL
        };
        char dir[] = "/tmp/ca-trace-refs-XXXXXX", log[64], script[1024], p[160];
        const char *why = NULL;
        struct ca_replay_stats rs;
        struct ca_trace_stats ts;
        struct ca_trace_event e;
        struct ca_dcache *d = NULL;
        struct ca_replay *rp = NULL;
        struct ca_trace *t = NULL;
        struct ca_dentry *de = NULL;
        bool saw_unlink = false;
        int r;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(log, sizeof(log), "%s/log", dir);
        snprintf(script, sizeof(script),
                 "cd %s && mkdir d && ln -s d l && exec 3>l/f && rm l/f && exec 3>&- && "
                 ": > d/g && cat l/g /proc/self/status >/dev/null && stat l/nothing 2>/dev/null; "
                 "(cd l && ls ../l/.. >/dev/null); true",
                 dir);
        strace_shell(log, opts, script, dir);

        cr_assert_eq(ca_trace_open_path(log, "/", &t), 0);
        cr_assert_eq(ca_trace_set_options(t, CA_TRACE_REFS | CA_TRACE_PROBE), 0);
        cr_assert_eq(ca_dcache_new(NULL, &d), 0);
        cr_assert_eq(ca_replay_new(d, &rp), 0);
        snprintf(p, sizeof(p), "%s/d/f", dir);
        while ((r = ca_trace_next(t, &e)) == 1) {
                if (e.op == CA_TRACE_UNLINK && strcmp(e.path, p) == 0) {
                        cr_assert_eq(e.nwalks, 1, "through the link");
                        saw_unlink = true;
                }
                r = ca_replay_event(rp, &e);
                cr_assert_eq(r, 0, "%s %s: %s", e.syscall, e.path ? e.path : "-", strerror(-r));
        }
        cr_assert_eq(r, 0);
        cr_assert(saw_unlink, "no unlink of %s", p);
        ca_trace_get_stats(t, &ts);
        ca_replay_get_stats(rp, &rs);
        cr_assert_eq(ts.skipped_dirfd, 0);
        cr_assert_eq(ts.skipped_malformed, 0);
        cr_assert_gt(rs.holds, 10);
        cr_assert_eq(rs.held, 1, "all but the starting directory dropped: %llu held",
                     (unsigned long long)rs.held);
        cr_assert_eq(rs.drop_unknown, 0);
        cr_assert_eq(rs.hold_failed, 0);
        cr_assert_eq(ca_dcache_check(d, &why), 0, "%s", why);
        cr_assert_neq(ca_dcache_path_lookup(d, p, CA_DCACHE_LOOKUP_NOCREATE |
                                                          CA_DCACHE_LOOKUP_NEGATIVE |
                                                          CA_DCACHE_LOOKUP_NOTOUCH,
                                            &de),
                      0, "unlinked while open: freed at the close, not negative");
        snprintf(p, sizeof(p), "%s/d/nothing", dir);
        cr_assert_eq(ca_dcache_path_lookup(d, p, CA_DCACHE_LOOKUP_NOCREATE |
                                                         CA_DCACHE_LOOKUP_NEGATIVE |
                                                         CA_DCACHE_LOOKUP_NOTOUCH,
                                           &de),
                     0, "the negative dentry is in the link's target");
        cr_assert_not(ca_dentry_positive(de));
        ca_dcache_put(d, de);
        ca_replay_free(rp);
        ca_dcache_free(d);
        ca_trace_free(t);
        snprintf(script, sizeof(script), "rm -rf '%s'", dir);
        cr_assert_eq(system(script), 0);
}

/*
 * A read limit: the reader stops with -EAGAIN once it has read what it may, keeps its place,
 * and goes on when given more; the events and the counts are those of a read without limit,
 * a 200 KB line included (crossed over many calls, never buffered whole).
 */
Test(trace, read_limit_keeps_the_place)
{
        static const char head[] = "1 1700000000.000001 close(3) = 0\n";
        static const char ev[] = "1 1700000000.000002 newfstatat(AT_FDCWD, \"/a/b\", 0x1, 0) = "
                                 "-1 ENOENT (No such file or directory)\n";
        size_t big = 200000, len = 0, cap = big + 64 * sizeof(head) + 8 * sizeof(ev);
        struct ca_trace_stats st_free, st_limited;
        char *text = malloc(cap);
        unsigned again = 0, events = 0;
        struct ca_trace_event e;
        struct ca_trace *t;
        FILE *f;
        int r;

        cr_assert(text);
        for (int i = 0; i < 64; i++)
                len += (size_t)sprintf(text + len, "%s", head);
        len += (size_t)sprintf(text + len, "%s", ev);
        memset(text + len, 'x', big);
        len += big;
        text[len++] = '\n';
        for (int i = 0; i < 3; i++)
                len += (size_t)sprintf(text + len, "%s", ev);

        f = fmemopen(text, len, "r");
        cr_assert(f);
        cr_assert_eq(ca_trace_open_file(f, "/", &t), 0);
        while (ca_trace_next(t, &e) > 0)
                ;
        ca_trace_get_stats(t, &st_free);
        cr_assert_eq(ca_trace_bytes_read(t), len);
        ca_trace_free(t);
        fclose(f);

        f = fmemopen(text, len, "r");
        cr_assert(f);
        cr_assert_eq(ca_trace_open_file(f, "/", &t), 0);
        for (;;) {
                uint64_t before = ca_trace_bytes_read(t);

                ca_trace_set_read_limit(t, 1000);
                r = ca_trace_next(t, &e);
                cr_assert_leq(ca_trace_bytes_read(t) - before, 1000);
                if (r == -EAGAIN) {
                        again++;
                        continue;
                }
                cr_assert_geq(r, 0);
                if (r == 0)
                        break;
                cr_assert_str_eq(e.path, "/a/b");
                events++;
        }
        ca_trace_get_stats(t, &st_limited);
        cr_assert_eq(events, 4);
        cr_assert_eq(st_limited.events, st_free.events);
        cr_assert_eq(st_limited.lines, st_free.lines);
        cr_assert_eq(st_limited.skipped_malformed, st_free.skipped_malformed);
        cr_assert_eq(st_limited.skipped_other, st_free.skipped_other);
        cr_assert_geq(again, len / 1000 - 1, "%u stops for %zu bytes", again, len);
        ca_trace_free(t);
        fclose(f);
        free(text);
}
