/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replay's table (ca_dcache_replay_plan in lib/replay.c) against its contract in
 * cacheage/replay.h, written out here case by case; and ca_dcache_replay() doing what the
 * plan says on a fresh model, for every operation and every kind of result. The scripted
 * sequences of test-dcache.c replay events too, against the kernel's counts.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cacheage/replay.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

enum { EXISTS = CA_DCACHE_REPLAY_EXISTS, MISSING = CA_DCACHE_REPLAY_MISSING,
       PREFIX = CA_DCACHE_REPLAY_PREFIX, REMOVE = CA_DCACHE_REPLAY_REMOVE,
       RENAME = CA_DCACHE_REPLAY_RENAME };

/* One expected step, as "action path2 parent dir fixup". */
struct want {
        int action;
        bool path2, parent, dir, fixup;
};

struct row {
        enum ca_trace_op op;
        int result;
        int n;
        struct want steps[CA_DCACHE_REPLAY_STEPS_MAX];
};

#define S(a, p2, par, d, fix)                                                             \
        { .action = (a), .path2 = (p2), .parent = (par), .dir = (d), .fixup = (fix) }

static const struct row rows[] = {
        /* lookups: success and any other error say the path exists */
        { CA_TRACE_LOOKUP, 0, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_LOOKUP, -ENOENT, 1, { S(MISSING, 0, 0, 0, 0) } },
        { CA_TRACE_LOOKUP, -ENOTDIR, 1, { S(PREFIX, 0, 0, 0, 0) } },
        { CA_TRACE_LOOKUP, -EACCES, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_LOOKUP, -EEXIST, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_EXEC, 0, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_EXEC, -ENOENT, 1, { S(MISSING, 0, 0, 0, 0) } },
        { CA_TRACE_EXEC, -EACCES, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_CHDIR, 0, 1, { S(EXISTS, 0, 0, 1, 1) } },      /* a directory */
        { CA_TRACE_CHDIR, -EACCES, 1, { S(EXISTS, 0, 0, 0, 1) } }, /* not known to be one */
        { CA_TRACE_CHDIR, -ENOTDIR, 1, { S(PREFIX, 0, 0, 0, 0) } },
        /* creates: a negative turning positive is no fix-up; the parent is what is missing */
        { CA_TRACE_CREATE, 0, 1, { S(EXISTS, 0, 0, 0, 0) } },
        { CA_TRACE_CREATE, -EEXIST, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_CREATE, -ENOENT, 1, { S(MISSING, 0, 1, 0, 0) } },
        { CA_TRACE_CREATE, -ENOTDIR, 1, { S(PREFIX, 0, 0, 0, 0) } },
        { CA_TRACE_CREATE, -EACCES, 1, { S(PREFIX, 0, 0, 0, 0) } },
        { CA_TRACE_MKDIR, 0, 1, { S(EXISTS, 0, 0, 1, 0) } },
        { CA_TRACE_MKDIR, -EEXIST, 1, { S(EXISTS, 0, 0, 1, 1) } },
        { CA_TRACE_MKDIR, -ENOENT, 1, { S(MISSING, 0, 1, 0, 0) } },
        { CA_TRACE_MKDIR, -EPERM, 1, { S(PREFIX, 0, 0, 0, 0) } },
        /* removes */
        { CA_TRACE_UNLINK, 0, 1, { S(REMOVE, 0, 0, 0, 0) } },
        { CA_TRACE_UNLINK, -ENOENT, 1, { S(MISSING, 0, 0, 0, 0) } },
        { CA_TRACE_UNLINK, -ENOTDIR, 1, { S(PREFIX, 0, 0, 0, 0) } },
        { CA_TRACE_UNLINK, -EISDIR, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_RMDIR, 0, 1, { S(REMOVE, 0, 0, 1, 0) } },
        { CA_TRACE_RMDIR, -ENOENT, 1, { S(MISSING, 0, 0, 0, 0) } },
        { CA_TRACE_RMDIR, -ENOTDIR, 1, { S(EXISTS, 0, 0, 0, 1) } }, /* names a file */
        { CA_TRACE_RMDIR, -ENOTEMPTY, 1, { S(EXISTS, 0, 0, 0, 1) } },
        /* two paths */
        { CA_TRACE_RENAME, 0, 1, { S(RENAME, 0, 0, 0, 0) } },
        { CA_TRACE_RENAME, -ENOENT, 1, { S(MISSING, 0, 0, 0, 0) } },
        { CA_TRACE_RENAME, -ENOTDIR, 1, { S(PREFIX, 0, 0, 0, 0) } },
        { CA_TRACE_RENAME, -EXDEV, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_LINK, 0, 2, { S(EXISTS, 0, 0, 0, 1), S(EXISTS, 1, 0, 0, 0) } },
        { CA_TRACE_LINK, -EEXIST, 2, { S(EXISTS, 0, 0, 0, 1), S(EXISTS, 1, 0, 0, 1) } },
        { CA_TRACE_LINK, -ENOENT, 1, { S(MISSING, 0, 0, 0, 0) } },
        { CA_TRACE_LINK, -ENOTDIR, 1, { S(PREFIX, 0, 0, 0, 0) } },
        { CA_TRACE_LINK, -EPERM, 1, { S(EXISTS, 0, 0, 0, 1) } },
        { CA_TRACE_SYMLINK, 0, 1, { S(EXISTS, 1, 0, 0, 0) } },
        { CA_TRACE_SYMLINK, -EEXIST, 1, { S(EXISTS, 1, 0, 0, 1) } },
        { CA_TRACE_SYMLINK, -ENOENT, 1, { S(MISSING, 1, 1, 0, 0) } },
        { CA_TRACE_SYMLINK, -EACCES, 1, { S(PREFIX, 1, 0, 0, 0) } },
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
                                          got[k].path2 == s->path2 &&
                                          got[k].parent == s->parent && got[k].dir == s->dir &&
                                          got[k].fixup == s->fixup,
                                  "%s %d, step %d: action %d path2 %d parent %d dir %d "
                                  "fixup %d, want %d %d %d %d %d",
                                  ca_trace_op_name(w->op), w->result, k, got[k].action,
                                  got[k].path2, got[k].parent, got[k].dir, got[k].fixup,
                                  s->action, s->path2, s->parent, s->dir, s->fixup);
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
                        if (last->parent) /* the parent was missing */
                                cr_assert_eq(state(d, last->path2 ? "/c" : "/a"), 0);
                        else
                                cr_assert_eq(state(d, path), 0, "%s %d: %s",
                                             ca_trace_op_name(w->op), w->result, path);
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
        ca_dcache_stats(d, &st);
        cr_assert_eq(st.replay_ignored, 2);
        cr_assert_eq(st.replayed, 0);
        cr_assert_eq(st.nr_dentry, 1, "only the root");
        ca_dcache_free(d);
}
