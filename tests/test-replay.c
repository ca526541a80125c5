/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replay's table (ca_dcache_replay_plan in lib/lab/replay.c) against its contract in
 * cacheage/replay.h, written out here case by case; and ca_dcache_replay() doing what the
 * plan says on a fresh model, for every operation and every kind of result. The scripted
 * sequences of test-dcache.c replay events too, against the kernel's counts.
 */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cacheage/replay.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

enum { EXISTS = CA_DCACHE_REPLAY_EXISTS, MISSING = CA_DCACHE_REPLAY_MISSING,
       PREFIX = CA_DCACHE_REPLAY_PREFIX, REMOVE = CA_DCACHE_REPLAY_REMOVE,
       RENAME = CA_DCACHE_REPLAY_RENAME };

/* One expected step, as "action path2 dir fixup". */
struct want {
        int action;
        bool path2, dir, fixup;
};

struct row {
        enum ca_trace_op op;
        int result;
        int n;
        struct want steps[CA_DCACHE_REPLAY_STEPS_MAX];
};

#define S(a, p2, d, fix) { .action = (a), .path2 = (p2), .dir = (d), .fixup = (fix) }

static const struct row rows[] = {
        /* lookups: success and any other error say the path exists */
        { CA_TRACE_LOOKUP, 0, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_LOOKUP, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_LOOKUP, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } }, /* the path is the file */
        { CA_TRACE_LOOKUP, -EACCES, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_LOOKUP, -EEXIST, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_EXEC, 0, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_EXEC, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_EXEC, -EACCES, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_CHDIR, 0, 1, { S(EXISTS, 0, 1, 1) } },      /* a directory */
        { CA_TRACE_CHDIR, -EACCES, 1, { S(EXISTS, 0, 0, 1) } }, /* not known to be one */
        { CA_TRACE_CHDIR, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } },
        /* creates: a negative turning positive is no fix-up; the reader names what is missing */
        { CA_TRACE_CREATE, 0, 1, { S(EXISTS, 0, 0, 0) } },
        { CA_TRACE_CREATE, -EEXIST, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_CREATE, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_CREATE, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_CREATE, -EACCES, 1, { S(PREFIX, 0, 0, 0) } },
        { CA_TRACE_MKDIR, 0, 1, { S(EXISTS, 0, 1, 0) } },
        { CA_TRACE_MKDIR, -EEXIST, 1, { S(EXISTS, 0, 1, 1) } },
        { CA_TRACE_MKDIR, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_MKDIR, -EPERM, 1, { S(PREFIX, 0, 0, 0) } },
        /* removes */
        { CA_TRACE_UNLINK, 0, 1, { S(REMOVE, 0, 0, 0) } },
        { CA_TRACE_UNLINK, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_UNLINK, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_UNLINK, -EISDIR, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_RMDIR, 0, 1, { S(REMOVE, 0, 1, 0) } },
        { CA_TRACE_RMDIR, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_RMDIR, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } }, /* names a file */
        { CA_TRACE_RMDIR, -ENOTEMPTY, 1, { S(EXISTS, 0, 0, 1) } },
        /* two paths */
        { CA_TRACE_RENAME, 0, 1, { S(RENAME, 0, 0, 0) } },
        { CA_TRACE_RENAME, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_RENAME, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_RENAME, -EXDEV, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_LINK, 0, 2, { S(EXISTS, 0, 0, 1), S(EXISTS, 1, 0, 0) } },
        { CA_TRACE_LINK, -EEXIST, 2, { S(EXISTS, 0, 0, 1), S(EXISTS, 1, 0, 1) } },
        { CA_TRACE_LINK, -ENOENT, 1, { S(MISSING, 0, 0, 0) } },
        { CA_TRACE_LINK, -ENOTDIR, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_LINK, -EPERM, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_SYMLINK, 0, 1, { S(EXISTS, 1, 0, 0) } },
        { CA_TRACE_SYMLINK, -EEXIST, 1, { S(EXISTS, 1, 0, 1) } },
        { CA_TRACE_SYMLINK, -ENOENT, 1, { S(MISSING, 1, 0, 0) } },
        { CA_TRACE_SYMLINK, -ENOTDIR, 1, { S(EXISTS, 1, 0, 1) } },
        { CA_TRACE_SYMLINK, -EACCES, 1, { S(PREFIX, 1, 0, 0) } },
        /* what the kernel held before the trace */
        { CA_TRACE_PIN, 0, 1, { S(EXISTS, 0, 0, 1) } },
        { CA_TRACE_MOUNT, 0, 1, { S(EXISTS, 0, 1, 1) } },
};

/* Results that say nothing, whatever the operation. */
static const int ignored_results[] = { -EFAULT, -EBADF, -EINVAL, -ENAMETOOLONG, -ELOOP, -EIO };

static struct ca_trace_event event(enum ca_trace_op op, int result)
{
        bool two = op == CA_TRACE_RENAME || op == CA_TRACE_LINK || op == CA_TRACE_SYMLINK;

        return (struct ca_trace_event){
                .op = op,
                .syscall = "test",
                .path = op == CA_TRACE_SYMLINK ? "target" : "/a/b",
                .path2 = two ? "/c/d" : NULL,
                .result = result,
        };
}

Test(replay, plan_table)
{
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const struct row *w = &rows[i];
                struct ca_trace_event ev = event(w->op, w->result);
                struct ca_dcache_replay_step got[CA_DCACHE_REPLAY_STEPS_MAX];
                int n = ca_dcache_replay_plan(&ev, got);

                cr_assert_eq(n, w->n, "%s %d: %d steps, want %d", ca_trace_op_name(w->op),
                             w->result, n, w->n);
                for (int k = 0; k < n; k++) {
                        const struct want *s = &w->steps[k];

                        cr_assert(got[k].action == (enum ca_dcache_replay_action)s->action &&
                                          got[k].path2 == s->path2 && got[k].dir == s->dir &&
                                          got[k].fixup == s->fixup,
                                  "%s %d, step %d: action %d path2 %d dir %d fixup %d, want "
                                  "%d %d %d %d",
                                  ca_trace_op_name(w->op), w->result, k, got[k].action,
                                  got[k].path2, got[k].dir, got[k].fixup, s->action, s->path2,
                                  s->dir, s->fixup);
                }
        }
}

Test(replay, plan_ignores_results_that_say_nothing)
{
        for (int op = 0; op < _CA_TRACE_OP_MAX; op++)
                for (size_t i = 0; i < ELEMENTSOF(ignored_results); i++) {
                        struct ca_trace_event ev = event(op, ignored_results[i]);
                        struct ca_dcache_replay_step got[CA_DCACHE_REPLAY_STEPS_MAX];

                        cr_assert_eq(ca_dcache_replay_plan(&ev, got), 0, "%s %d",
                                     ca_trace_op_name(op), ignored_results[i]);
                }
}

Test(replay, plan_refuses_bad_events)
{
        struct ca_dcache_replay_step got[CA_DCACHE_REPLAY_STEPS_MAX];
        struct ca_trace_event ev;

        cr_assert_eq(ca_dcache_replay_plan(NULL, got), -EINVAL);
        ev = event(CA_TRACE_LOOKUP, 0);
        ev.path = NULL;
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), -EINVAL);
        ev.path = "relative/path";
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), -EINVAL);
        ev = event(CA_TRACE_LOOKUP, 0);
        ev.op = _CA_TRACE_OP_MAX;
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), -EINVAL);
        /* two-path operations need an absolute path2, even when only path is walked */
        ev = event(CA_TRACE_RENAME, -ENOENT);
        ev.path2 = NULL;
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), -EINVAL);
        ev = event(CA_TRACE_LINK, 0);
        ev.path2 = "new";
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), -EINVAL);
        /* a symlink's path is its text: relative is fine, even an ignored result is checked */
        ev = event(CA_TRACE_SYMLINK, -EIO);
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), 0);
        ev.path2 = NULL;
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), -EINVAL);
        /* an exit walks nothing, with its /proc/PID or without (no pid in the log) */
        ev = event(CA_TRACE_EXIT, 0);
        ev.path = "/proc/5";
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), 0);
        ev.path = NULL;
        cr_assert_eq(ca_dcache_replay_plan(&ev, got), 0);
}

/* What the model holds at @path: 1 positive, 0 negative, -1 not cached. */
static int state(struct ca_dcache *d, const char *path)
{
        struct ca_dentry *de = NULL;
        int r = ca_dcache_path_lookup(d, path,
                                      CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NEGATIVE |
                                              CA_DCACHE_LOOKUP_NOTOUCH,
                                      &de),
            s;

        if (r < 0)
                return -1;
        s = ca_dentry_positive(de) ? 1 : 0;
        ca_dcache_put(d, de);
        return s;
}

/*
 * Every row replayed on a fresh model: counted as replayed (or ignored), nothing held after,
 * the model consistent, and the last component of the step's path left as the action says.
 */
Test(replay, replay_follows_the_plan)
{
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const struct row *w = &rows[i];
                const struct want *last = &w->steps[w->n - 1];
                struct ca_trace_event ev = event(w->op, w->result);
                struct ca_dcache_stats st;
                struct ca_dcache *d = NULL;
                const char *why = NULL;
                const char *path = last->path2 ? ev.path2 : ev.path;

                cr_assert_eq(ca_dcache_new(NULL, &d), 0);
                cr_assert_eq(ca_dcache_replay(d, &ev), 0, "%s %d", ca_trace_op_name(w->op),
                             w->result);
                ca_dcache_stats(d, &st);
                cr_assert_eq(st.replayed, 1, "%s %d", ca_trace_op_name(w->op), w->result);
                cr_assert_eq(st.replay_ignored, 0);
                cr_assert_eq(st.holds, 0);
                cr_assert_eq(ca_dcache_check(d, &why), 0, "%s", why);
                switch (last->action) {
                case EXISTS:
                        cr_assert_eq(state(d, path), 1, "%s %d: %s", ca_trace_op_name(w->op),
                                     w->result, path);
                        break;
                case MISSING:
                        cr_assert_eq(state(d, path), 0, "%s %d: %s", ca_trace_op_name(w->op),
                                     w->result, path);
                        break;
                case PREFIX:
                        cr_assert_eq(state(d, path), -1);
                        cr_assert_eq(state(d, last->path2 ? "/c" : "/a"), 1);
                        break;
                case REMOVE: /* unlinked in place: negative now */
                        cr_assert_eq(state(d, path), 0);
                        break;
                case RENAME: /* moved: the old name is gone, the new one positive */
                        cr_assert_eq(state(d, ev.path2), 1);
                        cr_assert_lt(state(d, ev.path), 1);
                        break;
                }
                d = ca_dcache_free(d);
        }
}

Test(replay, replay_counts_ignored_events)
{
        struct ca_trace_event ev = event(CA_TRACE_LOOKUP, -ELOOP);
        struct ca_dcache_stats st;
        struct ca_dcache *d = NULL;

        cr_assert_eq(ca_dcache_new(NULL, &d), 0);
        cr_assert_eq(ca_dcache_replay(d, &ev), 0);
        ev = event(CA_TRACE_UNLINK, 0);
        ev.path = "/"; /* nothing to unlink */
        cr_assert_eq(ca_dcache_replay(d, &ev), 0);
        ev = event(CA_TRACE_LOOKUP, 0);
        ev.path = "relative";
        cr_assert_eq(ca_dcache_replay(d, &ev), -EINVAL);
        ev = event(CA_TRACE_EXIT, 0); /* the stateless replay knows no /proc */
        ev.path = "/proc/5";
        cr_assert_eq(ca_dcache_replay(d, &ev), 0);
        ev.path = NULL;
        cr_assert_eq(ca_dcache_replay(d, &ev), 0);
        ca_dcache_stats(d, &st);
        cr_assert_eq(st.replay_ignored, 4);
        cr_assert_eq(st.replayed, 0);
        cr_assert_eq(st.nr_dentry, 1, "only the root");
        ca_dcache_free(d);
}

/* ------------------------------------------------------------------------------------------ */
/*
 * Hand-made logs (tests/fixtures/trace/replay/NAME.log, and NAME.info, the capture information
 * a capture would have written) through the reader and a replay, from the working directory
 * "/w", with the exact counts the kernel would show: one log per case the replay once got
 * wrong.
 */

struct counts {
        uint64_t dentry, unused, negative;
};

struct play {
        struct ca_trace *t;
        struct ca_dcache *d;
        struct ca_replay *r; /* NULL: ca_dcache_replay(), each event on its own */
        size_t events;
};

static void play_open(struct play *p, const char *name, bool info, bool stateful)
{
        const char *srcdir = getenv("CA_TEST_SRCDIR");
        char path[PATH_MAX];
        size_t line = 0;
        FILE *f;
        int r;

        *p = (struct play){ 0 };
        snprintf(path, sizeof(path), "%s/fixtures/trace/replay/%s.log", srcdir ? srcdir : "tests",
                 name);
        r = ca_trace_open_path(path, "/w", &p->t);
        cr_assert_eq(r, 0, "%s: %s (is CA_TEST_SRCDIR set?)", path, strerror(-r));
        cr_assert_eq(ca_trace_set_options(p->t, stateful ? CA_TRACE_REFS : 0), 0);
        if (info) {
                snprintf(path + strlen(path) - 4, 6, ".info");
                f = fopen(path, "re");
                cr_assert_not_null(f, "%s: %s", path, strerror(errno));
                r = ca_trace_load_info(p->t, f, &line);
                cr_assert_eq(r, 0, "%s:%zu: %s", path, line, strerror(-r));
                fclose(f);
        }
        cr_assert_eq(ca_dcache_new(NULL, &p->d), 0);
        if (stateful)
                cr_assert_eq(ca_replay_new(p->d, &p->r), 0);
}

/* Replay @n more events (SIZE_MAX: to the end). */
static void play_steps(struct play *p, size_t n)
{
        struct ca_trace_event ev;
        const char *why = NULL;
        int r;

        for (size_t i = 0; i < n && (r = ca_trace_next(p->t, &ev)) == 1; i++) {
                r = p->r ? ca_replay_event(p->r, &ev) : ca_dcache_replay(p->d, &ev);
                cr_assert_eq(r, 0, "event %zu (%s %s): %s", p->events, ev.syscall,
                             ev.path ? ev.path : "-", strerror(-r));
                p->events++;
        }
        cr_assert_eq(ca_dcache_check(p->d, &why), 0, "after event %zu: %s", p->events, why);
}

static struct counts play_counts(const struct play *p)
{
        struct ca_dcache_stats st;

        ca_dcache_stats(p->d, &st);
        return (struct counts){ st.nr_dentry, st.nr_unused, st.nr_negative };
}

static struct ca_replay_stats play_stats(const struct play *p)
{
        struct ca_replay_stats st;

        ca_replay_get_stats(p->r, &st);
        return st;
}

static void play_close(struct play *p)
{
        struct ca_dcache_stats st;

        p->r = ca_replay_free(p->r);
        ca_dcache_stats(p->d, &st);
        cr_assert_eq(st.holds, 0, "the replay let go of every reference it held");
        ca_dcache_free(p->d);
        ca_trace_free(p->t);
}

#define assert_counts(p, d_, u_, n_)                                                       \
        do {                                                                               \
                struct counts c_ = play_counts(p);                                         \
                cr_assert(c_.dentry == (d_) && c_.unused == (u_) && c_.negative == (n_),   \
                          "after event %zu: nr_dentry %llu nr_unused %llu nr_negative "    \
                          "%llu, want %d %d %d",                                           \
                          (p)->events, (unsigned long long)c_.dentry,                      \
                          (unsigned long long)c_.unused, (unsigned long long)c_.negative,  \
                          (d_), (u_), (n_));                                               \
        } while (0)

/* The model's positive dentry at @path, not touching it (the caller puts it). */
static struct ca_dentry *positive_at(struct ca_dcache *d, const char *path)
{
        struct ca_dentry *de = NULL;

        cr_assert_eq(ca_dcache_path_lookup(d, path,
                                           CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NOTOUCH,
                                           &de),
                     0, "%s not cached positive", path);
        return de;
}

/* What the model holds at @path (see state()), not touching it. */
static bool is_dir_at(struct ca_dcache *d, const char *path)
{
        struct ca_dentry *de = positive_at(d, path);
        bool dir = ca_dentry_is_dir(de);

        ca_dcache_put(d, de);
        return dir;
}

/*
 * Unlink while open: the open fd's reference makes d_delete() unhash the dentry instead of
 * turning it negative, and the close frees it; unlink after close leaves a negative one.
 * Replayed event by event without references, both leave a negative dentry (1050 of them in
 * the 1,000x loop).
 */
Test(replay_log, unlink_while_open)
{
        struct play p;

        play_open(&p, "held-unlink", false, true);
        play_steps(&p, 1); /* the starting directory, held */
        assert_counts(&p, 2, 0, 0);
        play_steps(&p, 2); /* open f (fd 3), unlink f */
        assert_counts(&p, 3, 0, 0);  /* / /w and f, unhashed and held */
        cr_assert_eq(state(p.d, "/w/f"), -1, "unhashed: no longer found");
        play_steps(&p, 1); /* close(3): the last reference, f dies */
        assert_counts(&p, 2, 0, 0);
        play_steps(&p, SIZE_MAX); /* g: open, close, unlink */
        assert_counts(&p, 3, 1, 1);
        cr_assert_eq(state(p.d, "/w/g"), 0);
        cr_assert_eq(play_stats(&p).holds, 3);
        cr_assert_eq(play_stats(&p).drops, 2, "f and g closed; /w held for good");
        cr_assert_eq(play_stats(&p).held, 1);
        play_close(&p);

        play_open(&p, "held-unlink", false, false);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 4, 2, 2); /* / /w f g, both negative: what the issue measured */
        play_close(&p);
}

/*
 * An fd dup'd to 7 (dup2 clears O_CLOEXEC) survives the exec and keeps its file alive across
 * an unlink until close(7); the O_CLOEXEC one is closed by the exec. The executed image is
 * held until the exit.
 */
Test(replay_log, dup_fd_across_exec)
{
        struct play p;

        play_open(&p, "held-exec", true, true);
        play_steps(&p, 4); /* pin /w, open kept (3), open gone (4), exec */
        assert_counts(&p, 6, 1, 0);  /* / /w kept gone /bin prog; gone unused */
        cr_assert_eq(play_stats(&p).held, 3, "/w, kept through fd 7, the image");
        play_steps(&p, 2); /* unlink kept (held: unhashed), unlink gone (negative) */
        assert_counts(&p, 6, 1, 1);
        cr_assert_eq(state(p.d, "/w/kept"), -1);
        cr_assert_eq(state(p.d, "/w/gone"), 0);
        play_steps(&p, 1); /* close(7): kept dies */
        assert_counts(&p, 5, 1, 1);
        play_steps(&p, SIZE_MAX); /* exit: the image goes */
        assert_counts(&p, 5, 2, 1);
        cr_assert_eq(play_stats(&p).held, 1);
        cr_assert_eq(play_stats(&p).drop_unknown, 0);
        cr_assert_eq(play_stats(&p).guessed_interp, 0, "the .info says prog is static");
        play_close(&p);
}

/*
 * chdir takes a reference before the walk's is dropped: the new working directory never
 * reaches the LRU, and relative names resolve from it; chdir elsewhere lets it go.
 */
Test(replay_log, chdir_then_relative_path)
{
        struct play p;

        play_open(&p, "chdir-relative", false, true);
        play_steps(&p, 3); /* pin /w, chdir sub, stat x */
        assert_counts(&p, 4, 1, 0); /* x alone unused: sub is held */
        cr_assert_eq(state(p.d, "/w/sub/x"), 1);
        play_steps(&p, 1); /* ../y from /w/sub */
        cr_assert_eq(state(p.d, "/w/y"), 0);
        play_steps(&p, SIZE_MAX); /* chdir /, exit */
        assert_counts(&p, 5, 2, 1);
        cr_assert_eq(play_stats(&p).guessed_missing, 1, "no capture information for y");
        play_close(&p);

        play_open(&p, "chdir-relative", false, false);
        play_steps(&p, 2);
        assert_counts(&p, 4, 2, 0); /* no pin of /w; without references sub went to the LRU */
        play_close(&p);
}

/*
 * ENOENT under a missing directory: the walk stops at the first missing component, as
 * probed at capture (absent "/usr/nodir"); without the information every component but the
 * last is taken to exist, and the statistics say so.
 */
Test(replay_log, enoent_under_missing_directory)
{
        struct play p;

        play_open(&p, "enoent-prefix", true, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 5, 2, 2); /* / /w /usr, nodir and newdir negative */
        cr_assert_eq(state(p.d, "/usr/nodir"), 0);
        cr_assert_eq(state(p.d, "/usr/newdir"), 0);
        cr_assert_eq(play_stats(&p).guessed_missing, 0);
        play_close(&p);

        play_open(&p, "enoent-prefix", false, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 8, 3, 3); /* nodir and nodir/sub made up as directories */
        cr_assert_eq(state(p.d, "/usr/nodir"), 1);
        cr_assert_eq(play_stats(&p).guessed_missing, 3);
        cr_assert_eq(play_stats(&p).guessed_links, 3);
        play_close(&p);
}

/*
 * A symlinked directory (/lib -> usr/lib, merged /usr): names looked up through either path
 * are one directory's children; the link itself is a positive non-directory.
 */
Test(replay_log, symlinked_directory)
{
        struct ca_dcache_dir_stats ds;
        struct ca_dentry *de = NULL;
        struct play p;

        play_open(&p, "symlink-dir", true, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 9, 4, 1); /* / /w /lib /usr /usr/lib x86_64-linux-gnu libc libm nolib */
        cr_assert_eq(ca_dcache_path_lookup(p.d, "/usr/lib/x86_64-linux-gnu",
                                           CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NOTOUCH,
                                           &de),
                     0);
        ca_dcache_dir_stats(p.d, de, &ds);
        ca_dcache_put(p.d, de);
        cr_assert_eq(ds.positive, 2, "libc and libm side by side");
        cr_assert_eq(ds.negative, 1);
        cr_assert_not(is_dir_at(p.d, "/lib"), "the link is no directory");
        cr_assert_eq(state(p.d, "/lib/x86_64-linux-gnu"), -1);
        play_close(&p);

        play_open(&p, "symlink-dir", false, true);
        play_steps(&p, SIZE_MAX);
        cr_assert(is_dir_at(p.d, "/lib"), "without the information /lib is a directory");
        cr_assert_eq(state(p.d, "/lib/x86_64-linux-gnu/libc.so.6"), 1);
        cr_assert_eq(play_stats(&p).guessed_links, 3);
        play_close(&p);
}

/*
 * tmpfs keeps no negative dentry and pins every positive one (not on the LRU) until its
 * unlink frees it; proc keeps no negative either; the disk does. What tmpfs had before the
 * log (old) and the mount points count as warm.
 */
Test(replay_log, tmpfs_and_proc_keep_no_negatives)
{
        struct ca_dentry *de = NULL;
        struct play p;

        play_open(&p, "tmpfs", true, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 7, 1, 1); /* / /dev shm /proc /w, f (pinned), /w/nope */
        cr_assert_eq(state(p.d, "/dev/shm/nope"), -1);
        cr_assert_eq(state(p.d, "/proc/nope"), -1);
        cr_assert_eq(state(p.d, "/dev/shm/old"), -1, "unlinked on tmpfs: freed");
        cr_assert_eq(state(p.d, "/w/nope"), 0);
        cr_assert_eq(ca_dcache_path_lookup(p.d, "/dev/shm/f",
                                           CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NOTOUCH,
                                           &de),
                     0);
        cr_assert_not(ca_dentry_on_lru(de), "pinned by tmpfs, closed or not");
        ca_dcache_put(p.d, de);
        cr_assert_eq(play_stats(&p).warm, 5, "/dev /dev/shm /proc /w and old");
        cr_assert_eq(play_stats(&p).fs_unkept, 3, "nope on tmpfs, on proc, and old's negative");
        cr_assert_eq(play_stats(&p).mounts, 4);
        cr_assert_eq(play_stats(&p).fs_pinned, 2, "shm on devtmpfs, f on tmpfs");
        play_close(&p);

        /*
         * Without the mount table: tmpfs is not known, every negative kept there and f on the
         * LRU; but /proc is procfs on every system, so /proc/nope is still not kept.
         */
        play_open(&p, "tmpfs", false, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 9, 5, 3);
        cr_assert_eq(state(p.d, "/proc/nope"), -1);
        cr_assert_eq(play_stats(&p).fs_unkept, 1);
        play_close(&p);
}

/*
 * 9p keeps no negative dentry, with its cache or without (fs/9p/vfs_dentry.c: d_delete is
 * v9fs_cached_dentry_delete(), true for a negative one, or always_delete_dentry()): a missing
 * name on a 9p root is looked up again every time, as on the VM lab's guests, whose / is the
 * host's over 9p. The ext4 disk under it keeps its negative.
 */
Test(replay_log, ninep_keeps_no_negatives)
{
        struct play p;

        play_open(&p, "ninep", true, true);
        play_steps(&p, SIZE_MAX);
        cr_assert_eq(state(p.d, "/usr/nope"), -1, "a negative kept on 9p");
        cr_assert_eq(state(p.d, "/usr/bin/env"), 1);
        cr_assert_eq(state(p.d, "/w/nope"), 0, "the ext4 disk keeps its negative");
        cr_assert_eq(play_stats(&p).fs_unkept, 2, "/usr/nope, twice");
        play_close(&p);

        play_open(&p, "ninep", false, true); /* without the mount table: kept, as on a disk */
        play_steps(&p, SIZE_MAX);
        cr_assert_eq(state(p.d, "/usr/nope"), 0);
        play_close(&p);
}

/*
 * A process's /proc/PID goes when it ends (proc_flush_pid() at the reap, fs/proc/base.c): 701
 * reads its own status through /proc/self, its parent's stat and init's; its parent opens
 * 701's cmdline and holds it past 701's exit. At the exit 701's own fd is let go and its
 * status killed; cmdline, held, and /proc/701 above it are unhashed (701's stat by its parent
 * then finds nothing, and leaves no negative: procfs makes none) and die at the close. The
 * live processes' entries stay. Without the capture information /proc is procfs all the
 * same; the stateless replay knows no filesystem and keeps everything.
 */
Test(replay_log, proc_pid_goes_with_its_process)
{
        for (int info = 1; info >= 0; info--) {
                struct play p;

                play_open(&p, "proc-exit", info, true);
                play_steps(&p, info ? 9 : 7); /* info: two mounts; and /w, pinned */
                cr_assert_eq(state(p.d, "/proc/701/status"), 1);
                cr_assert_eq(state(p.d, "/proc/701/cmdline"), 1);
                cr_assert_eq(state(p.d, "/proc/701/nope"), -1, "procfs makes no negative");
                play_steps(&p, 1); /* 701 exits */
                cr_assert_eq(state(p.d, "/proc/701"), -1);
                cr_assert_eq(state(p.d, "/proc/701/status"), -1);
                cr_assert_eq(state(p.d, "/proc/700/stat"), 1);
                cr_assert_eq(state(p.d, "/proc/1/stat"), 1);
                cr_assert_eq(play_stats(&p).exits, 1);
                cr_assert_eq(play_stats(&p).proc_flushed, 1, "status; cmdline is held");
                play_steps(&p, SIZE_MAX);
                cr_assert_eq(state(p.d, "/proc/701"), -1, "no negative from the failed stat");
                /* / /w /proc self 700 700/stat 1 1/stat; unused: self and the two stats */
                assert_counts(&p, 8, 3, 0);
                play_close(&p);
        }

        {
                struct play p;

                struct ca_dcache_stats st;

                play_open(&p, "proc-exit", false, false);
                play_steps(&p, 6); /* to the exit: no references, no info events */
                cr_assert_eq(state(p.d, "/proc/701/status"), 1, "stateless: kept at the exit");
                cr_assert_eq(state(p.d, "/proc/701/nope"), 0, "stateless: a negative");
                play_steps(&p, SIZE_MAX);
                /* the parent's failed stat finds 701 cached: the model's error, a fix-up */
                cr_assert_eq(state(p.d, "/proc/701"), 0);
                ca_dcache_stats(p.d, &st);
                cr_assert_eq(st.replay_fixups, 1);
                play_close(&p);
        }
}

/* Whether the model has the dentry at @path on its LRU (counted in nr_unused), not touching it. */
static bool on_lru_at(struct ca_dcache *d, const char *path)
{
        struct ca_dentry *de = positive_at(d, path);
        bool lru = ca_dentry_on_lru(de);

        ca_dcache_put(d, de);
        return lru;
}

/*
 * readlink() of a directory fails with EINVAL after its walk went through (do_readlinkat()):
 * the directory's dentry is made, released, and put on the LRU, where it stays when a child
 * is looked up later (the LRU is lazy). gcc's driver and cc1 readlink every component of
 * their prefixes; the model once took the EINVAL for a call that looked nothing up, and had
 * three unused dentries fewer than the kernel after `gcc -E` (Debian 12, 6.1 and 6.12: 47 on
 * the kernel's LRU, 44 in the model). Only a size of 0 fails before the walk.
 */
Test(replay_log, readlink_einval_is_a_lookup)
{
        struct play p;

        play_open(&p, "readlink-einval", true, true);
        play_steps(&p, 2); /* /w, pinned; readlink("/usr") = EINVAL */
        cr_assert_eq(state(p.d, "/usr"), 1, "walked, found");
        cr_assert(on_lru_at(p.d, "/usr"), "released at the end of the call");
        play_steps(&p, 3); /* /usr/local, /usr/local/include: EINVAL; a missing name below */
        cr_assert(on_lru_at(p.d, "/usr/local"));
        cr_assert(on_lru_at(p.d, "/usr/local/include"), "on the LRU though its child holds it");
        cr_assert_eq(state(p.d, "/usr/local/include/x86_64-linux-gnu"), 0);
        play_steps(&p, SIZE_MAX); /* readlinkat(..., 0) = EINVAL: no walk */
        cr_assert_eq(state(p.d, "/usr/share"), -1, "a size of 0 walks nothing");
        /* / /w /usr local include x86_64-linux-gnu; unused: usr, local, include, the negative */
        assert_counts(&p, 6, 4, 1);
        play_close(&p);
}

/*
 * ".." through a symlink goes up from the link's target (/a/b/.. is /a), not lexically (/w);
 * the target's directory is walked into first. An ENOTDIR names the file in the way.
 */
Test(replay_log, dotdot_through_symlink)
{
        struct play p;

        play_open(&p, "dotdot-link", true, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 8, 5, 1); /* / /w l /a b c d(-) f */
        cr_assert_eq(state(p.d, "/a/c"), 1);
        cr_assert_eq(state(p.d, "/a/d"), 0);
        cr_assert_eq(state(p.d, "/w/c"), -1);
        cr_assert(is_dir_at(p.d, "/a/b"));
        cr_assert_not(is_dir_at(p.d, "/w/l"));
        cr_assert_not(is_dir_at(p.d, "/w/f"), "ENOTDIR: f is the file in the way");
        cr_assert_eq(state(p.d, "/w/f/x"), -1);
        play_close(&p);

        play_open(&p, "dotdot-link", false, true);
        play_steps(&p, SIZE_MAX);
        cr_assert_eq(state(p.d, "/w/c"), 1, "lexically, without the information");
        cr_assert_eq(play_stats(&p).guessed_notdir, 1);
        play_close(&p);
}

/*
 * What the kernel looked up that strace does not show: the ELF interpreter of the exec
 * (through three links), held with the image until the exit; a mapping holds its file past
 * the close until munmap. The pinned libc makes /usr/lib/x86_64-linux-gnu warm.
 */
Test(replay_log, exec_interpreter_and_warm_pins)
{
        struct play p;

        play_open(&p, "exec-warm", true, true);
        play_steps(&p, 2); /* the pins */
        assert_counts(&p, 6, 0, 0);
        cr_assert_eq(play_stats(&p).warm, 5, "/usr /usr/lib x86_64-linux-gnu libc /w");
        play_steps(&p, 1); /* exec */
        cr_assert_eq(state(p.d, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), 1);
        cr_assert_eq(state(p.d, "/usr/lib64/ld-linux-x86-64.so.2"), 1, "a link on the way");
        cr_assert_eq(state(p.d, "/usr/bin/python3.11"), 1);
        cr_assert_eq(play_stats(&p).held, 4, "two pins, the image, the interpreter");
        play_steps(&p, 1); /* open libm: fd 3, then mapped, then closed */
        cr_assert_eq(play_stats(&p).held, 5);
        play_steps(&p, 1); /* munmap: the mapping was the last reference */
        cr_assert_eq(play_stats(&p).held, 4);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 15, 7, 0);
        cr_assert_eq(play_stats(&p).held, 2, "the pins stay");
        cr_assert_eq(play_stats(&p).guessed_interp, 0);
        play_close(&p);

        play_open(&p, "exec-warm", false, true);
        play_steps(&p, SIZE_MAX);
        cr_assert_eq(state(p.d, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), -1);
        cr_assert_eq(play_stats(&p).guessed_interp, 1, "the interpreter was not known");
        play_close(&p);
}

/*
 * A "#!" script: binfmt_script reads it and executes its interpreter, through two links
 * (/bin -> usr/bin, sh -> dash); the interpreter is the image held until the exit, the
 * script is only looked up. Parents are busy while they have children, as d_alloc()'s
 * reference on the parent makes them.
 */
Test(replay_log, exec_script_interpreter)
{
        struct play p;

        play_open(&p, "exec-script", true, true);
        play_steps(&p, 2); /* the starting directory, the exec */
        /* / /w run.sh /bin(link) /usr /usr/bin sh(link) dash; unused: run.sh /bin sh */
        assert_counts(&p, 8, 3, 0);
        cr_assert_not(is_dir_at(p.d, "/usr/bin/sh"), "a link, walked through");
        cr_assert_eq(state(p.d, "/usr/bin/dash"), 1);
        cr_assert_eq(play_stats(&p).held, 2, "/w and the interpreter's image");
        play_steps(&p, SIZE_MAX); /* exit: dash let go */
        assert_counts(&p, 8, 4, 0);
        cr_assert_eq(play_stats(&p).held, 1);
        cr_assert_eq(play_stats(&p).guessed_interp, 0);
        play_close(&p);

        play_open(&p, "exec-script", false, true);
        play_steps(&p, SIZE_MAX);
        assert_counts(&p, 3, 1, 0); /* / /w run.sh, taken for the image */
        cr_assert_eq(state(p.d, "/usr/bin/dash"), -1, "no interpreter known");
        cr_assert_eq(play_stats(&p).guessed_interp, 1);
        play_close(&p);
}

/* Holds and drops of the replay, and a MOUNT's rules, without a reader. */
Test(replay, holds_without_a_reader)
{
        struct ca_trace_event ev = event(CA_TRACE_LOOKUP, 0);
        static const uint64_t drop_2[] = { 2 }, drop_9[] = { 9 };
        struct ca_replay_stats st;
        struct ca_dcache *d = NULL;
        struct ca_replay *r = NULL;
        const char *why = NULL;

        cr_assert_eq(ca_dcache_new(NULL, &d), 0);
        cr_assert_eq(ca_replay_new(NULL, &r), -EINVAL);
        cr_assert_eq(ca_replay_new(d, &r), 0);
        ev.hold = 2;
        cr_assert_eq(ca_replay_event(r, &ev), 0);
        cr_assert_eq(ca_replay_event(r, &ev), 0); /* the same id again: kept once */
        ev = (struct ca_trace_event){ .op = CA_TRACE_RELEASE, .syscall = "close",
                                      .drops = drop_9, .ndrops = 1 };
        cr_assert_eq(ca_replay_event(r, &ev), 0);
        ca_replay_get_stats(r, &st);
        cr_assert_eq(st.holds, 1);
        cr_assert_eq(st.hold_twice, 1);
        cr_assert_eq(st.drop_unknown, 1);
        cr_assert_eq(state(d, "/a/b"), 1);
        ev.drops = drop_2;
        cr_assert_eq(ca_replay_event(r, &ev), 0);
        ca_replay_get_stats(r, &st);
        cr_assert_eq(st.held, 0);
        cr_assert_eq(ca_dcache_check(d, &why), 0, "%s", why);
        /* a RELEASE is nothing to a replay without state */
        cr_assert_eq(ca_dcache_replay(d, &ev), 0);
        /* a walk must be absolute */
        ev = event(CA_TRACE_LOOKUP, 0);
        ev.walks = &(struct ca_trace_walk){ .path = "rel", .kind = CA_TRACE_WALK_LINK };
        ev.nwalks = 1;
        cr_assert_eq(ca_replay_event(r, &ev), -EINVAL);
        ca_replay_free(r);
        ca_dcache_free(d);
}
