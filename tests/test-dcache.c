/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the dentry-cache model (lib/lab/dcache.c) against its contract in cacheage/dcache.h
 * and against what the kernel reports in /proc/sys/fs/dentry-state for the same sequence.
 *
 * Scripted sequences are fed as trace events (what the strace reader produces), so each test
 * reads like the program it models. The randomized tests run 100,000 operations under each
 * policy and combination and check the whole model (ca_dcache_check) as they go.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cacheage/dcache.h"
#include "cacheage/replay.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------------ */
/* helpers */

static struct ca_dcache *model(bool tail, bool cursor, bool counted, bool aging)
{
        struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;
        struct ca_dcache *d = NULL;

        p.tail_negative = tail;
        p.ratio_cursor = cursor;
        p.ratio_counted = counted;
        p.aging = aging;
        cr_assert_eq(ca_dcache_new(&p, &d), 0);
        return d;
}

static void check(struct ca_dcache *d)
{
        const char *why = NULL;
        int r = ca_dcache_check(d, &why);

        cr_assert_eq(r, 0, "model inconsistent: %s", why ? why : "?");
}

static int ev2(struct ca_dcache *d, enum ca_trace_op op, const char *path, const char *path2,
               int result)
{
        struct ca_trace_event e = {
                .op = op, .path = path, .path2 = path2, .result = result, .syscall = "test",
        };

        return ca_dcache_replay(d, &e);
}

static void ev(struct ca_dcache *d, enum ca_trace_op op, const char *path, int result)
{
        cr_assert_eq(ev2(d, op, path, NULL, result), 0, "replay of %s failed", path);
}

static struct ca_dcache_stats stats(const struct ca_dcache *d)
{
        struct ca_dcache_stats st;

        ca_dcache_stats(d, &st);
        return st;
}

/* The dentry at @path with a reference, looked at without touching or creating anything. */
static struct ca_dentry *find(struct ca_dcache *d, const char *path)
{
        struct ca_dentry *de = NULL;
        int r = ca_dcache_path_lookup(d, path,
                                      CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NEGATIVE |
                                              CA_DCACHE_LOOKUP_NOTOUCH,
                                      &de);

        return r == 0 ? de : NULL;
}

/* Whether @path is cached, and if so positive (1) or negative (0); -1 when not cached. */
static int state(struct ca_dcache *d, const char *path)
{
        struct ca_dentry *de = find(d, path);
        int s;

        if (!de)
                return -1;
        s = ca_dentry_positive(de);
        ca_dcache_put(d, de);
        return s;
}

static struct ca_dcache_dir_stats dir_stats(struct ca_dcache *d, const char *path)
{
        struct ca_dcache_dir_stats ds;
        struct ca_dentry *de = find(d, path);

        cr_assert_not_null(de, "%s not cached", path);
        ca_dcache_dir_stats(d, de, &ds);
        ca_dcache_put(d, de);
        return ds;
}

static void rotate_age(struct ca_dcache *d, unsigned n)
{
        for (unsigned i = 0; i < n; i++) {
                ca_dcache_rotate(d);
                while (ca_dcache_age(d, 0, 0) > 0)
                        ;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* counts, as /proc/sys/fs/dentry-state would show them */

Test(dcache, layout_is_compact)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats st = stats(d);

        cr_assert_leq(st.dentry_bytes, 128, "a dentry is %lu bytes",
                      (unsigned long)st.dentry_bytes);
        if (sizeof(void *) == 8)
                cr_assert_eq(st.dentry_bytes, 112);
        cr_assert_eq(st.nr_dentry, 1, "only the root");
        check(d);
        ca_dcache_free(d);
}

Test(dcache, stat_of_missing_names_adds_negatives)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a, b, c;
        char path[64];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        a = stats(d);
        for (int i = 0; i < 1000; i++) {
                snprintf(path, sizeof(path), "/d/missing-%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        b = stats(d);
        cr_assert_eq(b.nr_negative - a.nr_negative, 1000);
        cr_assert_eq(b.nr_dentry - a.nr_dentry, 1000);
        cr_assert_eq(b.nr_unused - a.nr_unused, 1000);
        cr_assert_eq(dir_stats(d, "/d").negative, 1000);
        /* a second stat of each is a cache hit: nothing new */
        for (int i = 0; i < 1000; i++) {
                snprintf(path, sizeof(path), "/d/missing-%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        c = stats(d);
        cr_assert_eq(c.nr_dentry, b.nr_dentry);
        cr_assert_eq(c.nr_negative, b.nr_negative);
        cr_assert_eq(c.holds, 0);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, create_then_unlink_leaves_a_negative)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a, b, c, e;

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        a = stats(d);
        ev(d, CA_TRACE_CREATE, "/d/f", 0);
        b = stats(d);
        cr_assert_eq(b.nr_dentry, a.nr_dentry + 1);
        cr_assert_eq(b.nr_negative, a.nr_negative);
        cr_assert_eq(state(d, "/d/f"), 1);

        ev(d, CA_TRACE_UNLINK, "/d/f", 0);
        c = stats(d);
        cr_assert_eq(c.nr_dentry, b.nr_dentry, "unlink keeps the dentry ...");
        cr_assert_eq(c.nr_negative, b.nr_negative + 1, "... as a negative one");
        cr_assert_eq(state(d, "/d/f"), 0);

        ev(d, CA_TRACE_CREATE, "/d/f", 0);
        e = stats(d);
        cr_assert_eq(e.nr_dentry, c.nr_dentry);
        cr_assert_eq(e.nr_negative, b.nr_negative, "the negative dentry is reused");
        cr_assert_eq(state(d, "/d/f"), 1);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, rename_over_an_existing_name)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a, b, c;

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        ev(d, CA_TRACE_MKDIR, "/e", 0);
        ev(d, CA_TRACE_CREATE, "/d/a", 0);
        ev(d, CA_TRACE_CREATE, "/d/b", 0);
        a = stats(d);
        cr_assert_eq(ev2(d, CA_TRACE_RENAME, "/d/a", "/d/b", 0), 0);
        b = stats(d);
        cr_assert_eq(b.nr_dentry, a.nr_dentry - 1, "the old /d/b dentry dies");
        cr_assert_eq(b.nr_negative, a.nr_negative, "no negative dentry is left behind");
        cr_assert_eq(state(d, "/d/b"), 1);
        cr_assert_eq(state(d, "/d/a"), -1, "the old name is not cached at all");

        /* to a new name in another directory: the target's negative lookup dies with it */
        cr_assert_eq(ev2(d, CA_TRACE_RENAME, "/d/b", "/e/c", 0), 0);
        c = stats(d);
        cr_assert_eq(c.nr_dentry, b.nr_dentry);
        cr_assert_eq(c.nr_negative, b.nr_negative);
        cr_assert_eq(state(d, "/e/c"), 1);
        cr_assert_eq(state(d, "/d/b"), -1);
        cr_assert_eq(dir_stats(d, "/d").children, 0);
        cr_assert_eq(dir_stats(d, "/e").positive, 1);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, unused_follows_the_kernels_lazy_lru)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a, b, c;
        struct ca_dentry *f, *n, *dir;

        ev(d, CA_TRACE_CREATE, "/d/f", 0);
        a = stats(d);
        cr_assert_eq(a.nr_unreferenced, a.nr_unused, "nothing held: unused is unreferenced");

        /* dget of a cached dentry leaves it on the LRU: nr_unused does not move */
        cr_assert_eq(ca_dcache_path_lookup(d, "/d/f", 0, &f), 0);
        b = stats(d);
        cr_assert_eq(b.nr_unused, a.nr_unused);
        cr_assert_eq(b.nr_unreferenced, a.nr_unreferenced - 1);
        cr_assert(ca_dentry_on_lru(f));

        /* d_delete of it while on the LRU: counted negative at once */
        cr_assert_eq(ca_dcache_delete(d, f), 0);
        cr_assert_eq(stats(d).nr_negative, a.nr_negative + 1);
        ca_dcache_put(d, f);

        /* a fresh dentry is on no LRU until its final put */
        dir = find(d, "/d");
        cr_assert_eq(ca_dcache_alloc(d, dir, "new", 3, &n), 0);
        cr_assert_eq(ca_dcache_add(d, n, false, false), 0);
        c = stats(d);
        cr_assert_eq(c.nr_dentry, a.nr_dentry + 1);
        cr_assert_eq(c.nr_negative, a.nr_negative + 1, "held negative not counted");
        cr_assert_eq(c.nr_negative_all, a.nr_negative_all + 2);
        ca_dcache_put(d, n);
        cr_assert_eq(stats(d).nr_negative, a.nr_negative + 2);
        ca_dcache_put(d, dir);
        cr_assert_eq(stats(d).holds, 0);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, unlink_while_held_unhashes)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a, b;
        struct ca_dentry *f;

        ev(d, CA_TRACE_CREATE, "/d/f", 0);
        cr_assert_eq(ca_dcache_path_lookup(d, "/d/f", 0, &f), 0); /* an open file */
        a = stats(d);
        ev(d, CA_TRACE_UNLINK, "/d/f", 0);
        cr_assert_not(ca_dentry_hashed(f));
        cr_assert(ca_dentry_positive(f));
        cr_assert_eq(state(d, "/d/f"), -1);
        check(d);
        ca_dcache_put(d, f);
        b = stats(d);
        cr_assert_eq(b.nr_dentry, a.nr_dentry - 1, "dies at its last put");
        cr_assert_eq(b.nr_negative, a.nr_negative);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, rmdir_kills_the_negative_children)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a, b;
        char path[64];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        ev(d, CA_TRACE_MKDIR, "/d/s", 0);
        for (int i = 0; i < 10; i++) {
                snprintf(path, sizeof(path), "/d/s/x%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        a = stats(d);
        ev(d, CA_TRACE_RMDIR, "/d/s", 0);
        b = stats(d);
        cr_assert_eq(b.nr_dentry, a.nr_dentry - 10);
        cr_assert_eq(b.nr_negative, a.nr_negative - 10 + 1, "the directory's own is left");
        cr_assert_eq(state(d, "/d/s"), 0);
        /* a lookup below it now stops at the negative directory */
        ev(d, CA_TRACE_LOOKUP, "/d/s/x0", -ENOENT);
        cr_assert_eq(stats(d).nr_dentry, b.nr_dentry);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, long_names_live_outside)
{
        struct ca_dcache *d = model(false, false, false, false);
        const char *l1 = "/d/a-name-that-is-longer-than-thirty-two-bytes";
        const char *l2 = "/d/another-name-that-does-not-fit-inline-either-xx";
        struct ca_dcache_stats a;
        struct ca_dentry *de;
        size_t len;

        ev(d, CA_TRACE_CREATE, l1, 0);
        a = stats(d);
        cr_assert_eq(a.external_name_bytes, strlen(l1) - 3);
        cr_assert_eq(ev2(d, CA_TRACE_RENAME, l1, l2, 0), 0);
        de = find(d, l2);
        cr_assert_not_null(de);
        cr_assert_eq(memcmp(ca_dentry_name(de, &len), l2 + 3, strlen(l2) - 3), 0);
        cr_assert_eq(len, strlen(l2) - 3);
        ca_dcache_put(d, de);
        cr_assert_eq(stats(d).external_name_bytes, strlen(l2) - 3);
        cr_assert_eq(ev2(d, CA_TRACE_RENAME, l2, "/d/short", 0), 0);
        cr_assert_eq(stats(d).external_name_bytes, 0);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, hash_table_grows_and_finds_everything)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dentry *dir, *de;
        char name[32];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        dir = find(d, "/d");
        for (int i = 0; i < 100000; i++) {
                int n = snprintf(name, sizeof(name), "f%d", i);

                cr_assert_eq(ca_dcache_alloc(d, dir, name, (size_t)n, &de), 0);
                cr_assert_eq(ca_dcache_add(d, de, i % 2, false), 0);
                ca_dcache_put(d, de);
        }
        cr_assert_geq(stats(d).hash_buckets, 100000 / 2);
        for (int i = 0; i < 100000; i++) {
                int n = snprintf(name, sizeof(name), "f%d", i);

                de = ca_dcache_lookup(d, dir, name, (size_t)n);
                cr_assert_not_null(de, "%s lost", name);
                cr_assert_eq(ca_dentry_positive(de), i % 2);
                ca_dcache_put(d, de);
        }
        cr_assert_eq(ca_dcache_alloc(d, dir, "f7", 2, &de), -EEXIST);
        ca_dcache_put(d, dir);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, api_refuses_bad_input)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;
        struct ca_dentry *root = ca_dcache_root(d), *de;
        char big[300];

        memset(big, 'x', sizeof(big));
        cr_assert_eq(ca_dcache_alloc(d, root, "a/b", 3, &de), -EINVAL);
        cr_assert_eq(ca_dcache_alloc(d, root, "..", 2, &de), -EINVAL);
        cr_assert_eq(ca_dcache_alloc(d, root, big, sizeof(big), &de), -ENAMETOOLONG);
        cr_assert_eq(ca_dcache_path_lookup(d, "relative", 0, &de), -EINVAL);
        cr_assert_eq(ev2(d, CA_TRACE_LOOKUP, "relative", NULL, 0), -EINVAL);
        cr_assert_eq(ev2(d, CA_TRACE_RENAME, "/a", NULL, 0), -EINVAL);
        p.ratio = CA_DCACHE_RATIO_MAX + 1;
        cr_assert_eq(ca_dcache_set_params(d, &p), -EINVAL);
        p = CA_DCACHE_PARAMS_DEFAULT;
        p.age.max_age = 0;
        cr_assert_eq(ca_dcache_new(&p, &d), -EINVAL);
        /* a file is not a directory */
        ev(d, CA_TRACE_CREATE, "/file", 0);
        cr_assert_eq(ca_dcache_path_lookup(d, "/file/x", 0, &de), -ENOTDIR);
        check(d);
        ca_dcache_free(d);
}

/* ------------------------------------------------------------------------------------------ */
/* replay: what each result makes of the path */

Test(dcache, replay_maps_results)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_stats a;

        /* the reader names the component that is no directory: "/a/b" of "/a/b/c" */
        ev(d, CA_TRACE_LOOKUP, "/a/b", -ENOTDIR);
        cr_assert_eq(state(d, "/a"), 1);
        cr_assert_eq(state(d, "/a/b"), 1);
        {
                struct ca_dentry *de = find(d, "/a/b");

                cr_assert_not(ca_dentry_is_dir(de), "ENOTDIR: /a/b is a file");
                ca_dcache_put(d, de);
        }

        ev(d, CA_TRACE_LOOKUP, "/etc/shadow", -EACCES);
        cr_assert_eq(state(d, "/etc/shadow"), 1, "EACCES: it exists");

        ev(d, CA_TRACE_LOOKUP, "/x", -ENOENT);
        ev(d, CA_TRACE_LOOKUP, "/x/y/z", -ENOENT);
        cr_assert_eq(state(d, "/x"), 0);
        cr_assert_eq(stats(d).nr_negative, 1, "the walk stops at the cached negative /x");

        /* and the first missing component: "/p/q" of a create of "/p/q/f" */
        ev(d, CA_TRACE_CREATE, "/p/q", -ENOENT);
        cr_assert_eq(state(d, "/p"), 1);
        cr_assert_eq(state(d, "/p/q"), 0, "create ENOENT: the parent is missing");
        cr_assert_eq(state(d, "/p/q/f"), -1);

        ev(d, CA_TRACE_MKDIR, "/m", -EEXIST);
        cr_assert_eq(state(d, "/m"), 1);

        cr_assert_eq(ev2(d, CA_TRACE_SYMLINK, "/s", NULL, 0), -EINVAL, "no path2: refused");
        /* relative target text, as `ln -s b d/s` logs it: fine, it is never looked up */
        cr_assert_eq(ev2(d, CA_TRACE_SYMLINK, "target text", "/m/link2", 0), 0);
        cr_assert_eq(state(d, "/m/link2"), 1, "the new name is positive");
        cr_assert_eq(ev2(d, CA_TRACE_SYMLINK, "/target", "/m/link", 0), 0);
        cr_assert_eq(state(d, "/m/link"), 1);
        cr_assert_eq(state(d, "/target"), -1, "a symlink's target is not looked up");

        cr_assert_eq(ev2(d, CA_TRACE_LINK, "/m/link", "/m/hard", 0), 0);
        cr_assert_eq(state(d, "/m/hard"), 1);

        a = stats(d);
        ev(d, CA_TRACE_LOOKUP, "/q", -EFAULT);
        cr_assert_eq(stats(d).replay_ignored, a.replay_ignored + 1);
        cr_assert_eq(stats(d).nr_dentry, a.nr_dentry);

        /* the trace overrules a stale cache */
        ev(d, CA_TRACE_LOOKUP, "/x", 0);
        cr_assert_eq(state(d, "/x"), 1);
        ev(d, CA_TRACE_LOOKUP, "/m/hard", -ENOENT);
        cr_assert_eq(state(d, "/m/hard"), 0);
        cr_assert_eq(stats(d).replay_fixups, a.replay_fixups + 2);

        /* ld.so's hwcaps search: a lookup below a directory, then the directory itself */
        ev(d, CA_TRACE_LOOKUP, "/lib/hwcaps/v4/libfoo.so", -ENOENT);
        cr_assert_eq(state(d, "/lib/hwcaps/v4"), 1, "assumed on the way");
        ev(d, CA_TRACE_LOOKUP, "/lib/hwcaps/v4", -ENOENT);
        cr_assert_eq(state(d, "/lib/hwcaps/v4"), 0);
        cr_assert_eq(state(d, "/lib/hwcaps/v4/libfoo.so"), -1, "nothing cached below it");

        ev(d, CA_TRACE_CHDIR, "/c", 0);
        ev(d, CA_TRACE_EXEC, "/c/prog", 0);
        cr_assert_eq(state(d, "/c/prog"), 1);
        cr_assert_eq(stats(d).holds, 0);
        check(d);
        ca_dcache_free(d);
}

/* ------------------------------------------------------------------------------------------ */
/* tail_negative (seeds 004-008) */

/* /w with 10 positives, each created after 100 missing names were looked up in it. */
static void build_watched_dir(struct ca_dcache *d)
{
        char path[64];

        ev(d, CA_TRACE_MKDIR, "/w", 0);
        for (int i = 0; i < 10; i++) {
                for (int j = 0; j < 100; j++) {
                        snprintf(path, sizeof(path), "/w/miss-%d-%d", i, j);
                        ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
                }
                snprintf(path, sizeof(path), "/w/file-%d", i);
                ev(d, CA_TRACE_CREATE, path, 0);
        }
}

struct marks {
        const struct ca_dentry *dir;
        unsigned positive, watched_positive, watched_negative;
};

static enum ca_walk_ret count_marks(struct ca_dentry *de, void *userdata)
{
        struct marks *m = userdata;

        if (de == m->dir)
                return CA_WALK_CONTINUE;
        if (ca_dentry_positive(de)) {
                m->positive++;
                m->watched_positive += ca_dentry_watched(de);
        } else
                m->watched_negative += ca_dentry_watched(de);
        return CA_WALK_SKIP;
}

static void watch_case(bool tail, size_t want_visited)
{
        struct ca_dcache *d = model(tail, false, false, false);
        struct ca_dentry *w;
        struct marks m = { 0 };

        build_watched_dir(d);
        w = find(d, "/w");
        cr_assert_eq(ca_dcache_watch_dir(d, w, true), want_visited);
        m.dir = w;
        ca_dcache_walk(d, w, count_marks, &m);
        cr_assert_eq(m.positive, 10);
        cr_assert_eq(m.watched_positive, 10, "every positive child is marked");
        cr_assert_eq(m.watched_negative, 0, "no negative child is marked");
        /* a child created later is marked as it turns positive */
        ev(d, CA_TRACE_CREATE, "/w/miss-0-0", 0);
        memset(&m, 0, sizeof(m));
        m.dir = w;
        ca_dcache_walk(d, w, count_marks, &m);
        cr_assert_eq(m.watched_positive, 11);
        check(d);
        cr_assert_eq(ca_dcache_watch_dir(d, w, false), want_visited + (tail ? 1 : 0));
        memset(&m, 0, sizeof(m));
        m.dir = w;
        ca_dcache_walk(d, w, count_marks, &m);
        cr_assert_eq(m.watched_positive, 0);
        ca_dcache_put(d, w);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, watch_walk_with_tail_negative_visits_positives_only)
{
        watch_case(true, 10 + 1);
}

Test(dcache, watch_walk_without_tail_negative_visits_everything)
{
        watch_case(false, 10 + 1000);
}

/* Records the second dentry a walk meets: the first child of where it started. */
struct first_rec {
        unsigned calls;
        struct ca_dentry *first;
};

static enum ca_walk_ret first_child_of(struct ca_dentry *de, void *userdata)
{
        struct first_rec *f = userdata;

        if (f->calls++ == 0)
                return CA_WALK_CONTINUE;
        f->first = de;
        return CA_WALK_QUIT;
}

Test(dcache, tail_negative_sweeps_at_final_put_and_recycles)
{
        struct ca_dcache *d = model(true, false, false, false);
        struct first_rec first = { 0 };
        struct ca_dentry *x, *w;
        struct ca_dcache_dir_stats ds;

        build_watched_dir(d);
        cr_assert_eq(ca_dcache_path_lookup(d, "/w/held", CA_DCACHE_LOOKUP_NEGATIVE, &x), 0);
        cr_assert_not(ca_dentry_positive(x));
        cr_assert_not(ca_dentry_tail_negative(x), "no sweep while held");
        ca_dcache_put(d, x);
        x = find(d, "/w/held");
        cr_assert(ca_dentry_tail_negative(x), "swept at the final put");
        ds = dir_stats(d, "/w");
        cr_assert_eq(ds.tail_negative, 1001);
        check(d);

        /* recycled to the head before it turns positive */
        cr_assert_eq(ca_dcache_instantiate(d, x, false), 0);
        cr_assert_not(ca_dentry_tail_negative(x));
        w = find(d, "/w");
        ca_dcache_walk(d, w, first_child_of, &first);
        cr_assert_eq(first.first, x, "recycled to the head of the list");
        cr_assert_eq(ca_dcache_watch_dir(d, w, true), 11 + 1);
        cr_assert(ca_dentry_watched(x));
        ca_dcache_put(d, x);
        ca_dcache_put(d, w);
        cr_assert_eq(stats(d).recycled, 1);
        check(d);
        ca_dcache_free(d);
}

/* d_walk's actions: counts callbacks and where they went. */
struct walk_rec {
        unsigned calls, quit_after;
        bool skip_tail;
};

static enum ca_walk_ret walk_rec(struct ca_dentry *de, void *userdata)
{
        struct walk_rec *w = userdata;

        if (++w->calls == w->quit_after)
                return CA_WALK_QUIT;
        if (w->skip_tail && ca_dentry_tail_negative(de))
                return CA_WALK_SKIP_SIBLINGS;
        return CA_WALK_CONTINUE;
}

Test(dcache, d_walk_actions)
{
        struct ca_dcache *d = model(true, false, false, false);
        struct walk_rec w = { 0 };
        size_t calls;

        build_watched_dir(d);                          /* /w: 10 positive, 1000 negative */
        ev(d, CA_TRACE_CREATE, "/v/f", 0);              /* /v: 1 positive */
        ev(d, CA_TRACE_LOOKUP, "/v/g", -ENOENT);        /* and 1 negative */
        calls = ca_dcache_walk(d, ca_dcache_root(d), walk_rec, &w);
        cr_assert_eq(calls, 1 + 2 + 1010 + 2);
        cr_assert_eq(w.calls, calls);

        w = (struct walk_rec){ .skip_tail = true };
        calls = ca_dcache_walk(d, ca_dcache_root(d), walk_rec, &w);
        cr_assert_eq(calls, 1 + 2 + (10 + 1) + (1 + 1), "SKIP_SIBLINGS at each tail");

        w = (struct walk_rec){ .quit_after = 5 };
        cr_assert_eq(ca_dcache_walk(d, ca_dcache_root(d), walk_rec, &w), 5);
        ca_dcache_free(d);
}

/* ------------------------------------------------------------------------------------------ */
/* Brennan's ratio (seed 003) and ours */

/* A directory /d whose list reads, head to tail, as @layout says ('P' positive, 'N' negative),
 * built with every policy off (newest at the head, so built from the tail). */
static struct ca_dentry *build_layout(struct ca_dcache *d, const char *layout)
{
        struct ca_dentry *dir, *de;
        char name[32];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        dir = find(d, "/d");
        for (size_t i = strlen(layout); i-- > 0;) {
                int n = snprintf(name, sizeof(name), "%c%zu", layout[i], i);

                cr_assert_eq(ca_dcache_alloc(d, dir, name, (size_t)n, &de), 0);
                cr_assert_eq(ca_dcache_add(d, de, layout[i] == 'P', false), 0);
                ca_dcache_put(d, de);
        }
        return dir;
}

/* Scan until nothing was killed for @quiet scans in a row; returns the kills. */
static unsigned scan_to_fixpoint(struct ca_dcache *d, struct ca_dentry *dir, unsigned quiet)
{
        unsigned kills = 0, calm = 0;

        while (calm < quiet) {
                if (ca_dcache_ratio_scan(d, dir)) {
                        kills++;
                        calm = 0;
                } else
                        calm++;
        }
        return kills;
}

/*
 * Seed 001: "If you have 100 positive dentries all adjacent to each other, the pruner will
 * see them, but only allow 5 negative dentries to come after them before it starts pruning."
 */
Test(dcache, brennan_adjacent_positives_keep_ratio_negatives)
{
        struct ca_dcache *d = model(false, false, false, false);
        char layout[601];
        struct ca_dentry *dir;
        unsigned kills;

        memset(layout, 'P', 100);
        memset(layout + 100, 'N', 500);
        layout[600] = '\0';
        dir = build_layout(d, layout);
        kills = scan_to_fixpoint(d, dir, 20 * 606);
        cr_assert_eq(kills, 495);
        cr_assert_eq(dir_stats(d, "/d").negative, CA_DCACHE_RATIO_DEFAULT,
                     "exactly `ratio` negatives stay after the positives");
        cr_assert_eq(dir_stats(d, "/d").positive, 100);
        ca_dcache_put(d, dir);
        check(d);
        ca_dcache_free(d);
}

/*
 * Seed 001: "the pruner would not prune a list of dentries containing 500 negative dentries
 * and 100 positive dentries, assuming that they are evenly shuffled together." Faithfully:
 * the list head takes one slot of the ratio + 1 the scan looks at, so 100 gaps of 5 hold
 * 499 negatives and the head; the 500th goes, once, and then nothing ever does.
 */
Test(dcache, brennan_shuffled_negatives_are_not_pruned)
{
        struct ca_dcache *d = model(false, false, false, false);
        char layout[601];
        struct ca_dentry *dir;

        for (int g = 0; g < 100; g++)
                memcpy(layout + 6 * g, "PNNNNN", 6);
        layout[600] = '\0';
        dir = build_layout(d, layout);
        cr_assert_eq(scan_to_fixpoint(d, dir, 20 * 606), 1, "only the head's gap loses one");
        cr_assert_eq(dir_stats(d, "/d").negative, 499);
        cr_assert_eq(scan_to_fixpoint(d, dir, 20 * 606), 0, "and it is stable");
        ca_dcache_put(d, dir);
        ca_dcache_free(d);

        /* with the head counted as a gap's negative, exactly never pruned */
        d = model(false, false, false, false);
        for (int g = 0; g < 100; g++)
                memcpy(layout + 6 * g, g == 99 ? "PNNNN\0" : "PNNNNN", 6);
        dir = build_layout(d, layout);
        cr_assert_eq(scan_to_fixpoint(d, dir, 20 * 606), 0);
        cr_assert_eq(dir_stats(d, "/d").negative, 499);
        ca_dcache_put(d, dir);
        check(d);
        ca_dcache_free(d);
}

/* The two workloads as a program would run them: the order decides under Brennan's scan. */
static struct ca_dcache_dir_stats run_order(struct ca_dcache *d, bool adjacent, int negatives)
{
        int per = negatives / 100, n = 0;
        char path[64];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        for (int i = 0; i < 100; i++) {
                snprintf(path, sizeof(path), "/d/p%d", i);
                ev(d, CA_TRACE_CREATE, path, 0);
                for (int j = 0; !adjacent && j < per; j++) {
                        snprintf(path, sizeof(path), "/d/n%d", n++);
                        ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
                }
        }
        while (n < negatives) {
                snprintf(path, sizeof(path), "/d/n%d", n++);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        check(d);
        return dir_stats(d, "/d");
}

Test(dcache, brennan_depends_on_order)
{
        struct ca_dcache *d1 = model(false, true, false, false);
        struct ca_dcache *d2 = model(false, true, false, false);
        struct ca_dcache_dir_stats adj = run_order(d1, true, 500);
        struct ca_dcache_dir_stats shuf = run_order(d2, false, 500);

        cr_assert_eq(adj.positive, 100);
        cr_assert_eq(shuf.positive, 100);
        cr_assert_lt(adj.negative, 300, "adjacent: pruned hard (%lu left)",
                     (unsigned long)adj.negative);
        cr_assert_geq(shuf.negative, 490, "shuffled: hardly pruned (%lu left)",
                      (unsigned long)shuf.negative);
        ca_dcache_free(d1);
        ca_dcache_free(d2);
}

Test(dcache, brennan_small_directories_keep_about_ratio)
{
        struct ca_dcache *d = model(false, true, false, false);
        char path[64];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        for (int i = 0; i < 1000; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        cr_assert_leq(dir_stats(d, "/d").negative, CA_DCACHE_RATIO_DEFAULT + 1,
                      "seed 001's second gripe: no positives, so only about `ratio` stay");
        check(d);
        ca_dcache_free(d);
}

Test(dcache, counted_ratio_is_order_independent)
{
        static const int negatives[] = { 500, 600, 2000 };

        for (size_t i = 0; i < ELEMENTSOF(negatives); i++) {
                struct ca_dcache *d1 = model(false, false, true, false);
                struct ca_dcache *d2 = model(false, false, true, false);
                struct ca_dcache_dir_stats adj = run_order(d1, true, negatives[i]);
                struct ca_dcache_dir_stats shuf = run_order(d2, false, negatives[i]);
                uint64_t want = negatives[i] < 500 ? (uint64_t)negatives[i] : 500;

                cr_assert_eq(adj.negative, shuf.negative, "%d: %lu vs %lu", negatives[i],
                             (unsigned long)adj.negative, (unsigned long)shuf.negative);
                cr_assert_eq(adj.negative, want);
                cr_assert_eq(adj.positive, 100);
                ca_dcache_free(d1);
                ca_dcache_free(d2);
        }
}

Test(dcache, counted_ratio_kills_the_oldest_and_keeps_a_floor)
{
        struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;
        struct ca_dcache *d;
        char path[64];

        p.ratio_counted = true;
        p.ratio = 2;
        p.floor = 8;
        cr_assert_eq(ca_dcache_new(&p, &d), 0);
        ev(d, CA_TRACE_MKDIR, "/d", 0);
        for (int i = 0; i < 16; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
                if (i == 9)
                        ev(d, CA_TRACE_LOOKUP, "/d/n5", -ENOENT); /* n5 used again */
        }
        /* the 8 least recently used went first: n0-n4 and n6-n8, not the reused n5 */
        cr_assert_eq(dir_stats(d, "/d").negative, 8, "no positives: the floor");
        cr_assert_eq(state(d, "/d/n5"), 0);
        cr_assert_eq(state(d, "/d/n9"), 0);
        cr_assert_eq(state(d, "/d/n6"), -1);
        cr_assert_eq(state(d, "/d/n8"), -1);
        for (int i = 16; i < 100; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        cr_assert_eq(dir_stats(d, "/d").negative, 8);
        for (int i = 0; i < 92; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                cr_assert_eq(state(d, path), -1, "%s is among the oldest", path);
        }
        for (int i = 92; i < 100; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                cr_assert_eq(state(d, path), 0, "%s is among the newest", path);
        }
        for (int i = 0; i < 10; i++) {
                snprintf(path, sizeof(path), "/d/p%d", i);
                ev(d, CA_TRACE_CREATE, path, 0);
        }
        for (int i = 100; i < 200; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        cr_assert_eq(dir_stats(d, "/d").negative, 20, "ratio * positives");
        /* an unlink lowers the limit and turns one more negative */
        ev(d, CA_TRACE_UNLINK, "/d/p0", 0);
        cr_assert_eq(dir_stats(d, "/d").negative, 18);
        cr_assert_eq(state(d, "/d/p0"), 0, "the new negative is the youngest: it stays");
        check(d);
        ca_dcache_free(d);
}

/* ------------------------------------------------------------------------------------------ */
/* aging */

static struct ca_dcache *aging_model(uint32_t single_use_age, uint32_t max_age)
{
        struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;
        struct ca_dcache *d;

        p.aging = true;
        p.age.single_use_age = single_use_age;
        p.age.max_age = max_age;
        cr_assert_eq(ca_dcache_new(&p, &d), 0);
        return d;
}

Test(dcache, aging_single_use_negatives_go_after_single_use_age)
{
        struct ca_dcache *d = aging_model(2, 8);
        char path[64];

        ev(d, CA_TRACE_MKDIR, "/d", 0);
        for (int i = 0; i < 100; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        cr_assert_eq(stats(d).nr_negative, 100);
        rotate_age(d, 1);
        cr_assert_eq(stats(d).nr_negative, 100, "not before single_use_age rotations");
        check(d);
        rotate_age(d, 1);
        cr_assert_eq(stats(d).nr_negative, 0);
        cr_assert_eq(stats(d).aging_reclaimed, 100);
        cr_assert_eq(state(d, "/d"), 1, "the directory stays while it had children");
        /* killing the children dropped their references: /d is unused now */
        {
                struct ca_dentry *dd = find(d, "/d");

                cr_assert_eq(ca_dentry_refcount(dd), 1, "only ours");
                ca_dcache_put(d, dd);
        }
        check(d);
        ca_dcache_free(d);
}

Test(dcache, aging_never_takes_what_is_in_use_or_has_children)
{
        struct ca_dcache *d = aging_model(1, 2);
        struct ca_dentry *held;

        ev(d, CA_TRACE_CREATE, "/a/b/held", 0);
        ev(d, CA_TRACE_CREATE, "/a/c/file", 0);
        cr_assert_eq(ca_dcache_path_lookup(d, "/a/b/held", 0, &held), 0);
        rotate_age(d, 20);
        cr_assert_eq(state(d, "/a/b/held"), 1, "in use");
        cr_assert_eq(state(d, "/a/b"), 1, "has a child");
        cr_assert_eq(state(d, "/a"), 1, "has a child");
        cr_assert_eq(state(d, "/a/c"), -1, "its child went, then it did");
        cr_assert_gt(stats(d).aging_busy, 0);
        cr_assert_gt(stats(d).aging_kept, 0);
        check(d);
        ca_dcache_put(d, held);
        rotate_age(d, 20);
        cr_assert_eq(stats(d).nr_dentry, 1, "only the root is left");
        check(d);
        ca_dcache_free(d);
}

Test(dcache, aging_reused_ones_survive_until_max_age)
{
        struct ca_dcache *d = aging_model(2, 6);

        ev(d, CA_TRACE_LOOKUP, "/r", -ENOENT);
        ev(d, CA_TRACE_LOOKUP, "/once", -ENOENT);
        rotate_age(d, 1);
        ev(d, CA_TRACE_LOOKUP, "/r", -ENOENT); /* a hit in a second period: reused */
        rotate_age(d, 1);
        cr_assert_eq(state(d, "/once"), -1, "single use: gone after 2");
        cr_assert_eq(state(d, "/r"), 0);
        rotate_age(d, 4);
        cr_assert_eq(state(d, "/r"), 0, "idle 5 rotations: still there");
        rotate_age(d, 1);
        cr_assert_eq(state(d, "/r"), -1, "idle 6 = max_age: gone");
        check(d);
        ca_dcache_free(d);
}

Test(dcache, aging_kills_an_unhashed_parent_with_its_last_child)
{
        struct ca_dcache *d = aging_model(1, 1);
        struct ca_dentry *dir, *child;

        ev(d, CA_TRACE_LOOKUP, "/gone/x", -ENOENT);
        dir = find(d, "/gone");
        child = find(d, "/gone/x");
        ca_dcache_drop(d, dir); /* the directory was removed behind a cached child */
        ca_dcache_put(d, dir);
        ca_dcache_put(d, child);
        cr_assert_eq(stats(d).nr_dentry, 3);
        rotate_age(d, 3);
        cr_assert_eq(stats(d).nr_dentry, 1);
        check(d);
        ca_dcache_free(d);
}

Test(dcache, switching_policies_at_run_time)
{
        struct ca_dcache *d = model(false, false, false, false);
        struct ca_dcache_params p;
        char path[64];

        for (int i = 0; i < 300; i++) {
                snprintf(path, sizeof(path), "/d/n%d", i);
                ev(d, CA_TRACE_LOOKUP, path, -ENOENT);
        }
        ca_dcache_get_params(d, &p);
        p.aging = true;
        p.ratio_counted = true;
        p.tail_negative = true;
        cr_assert_eq(ca_dcache_set_params(d, &p), 0);
        cr_assert_not_null(ca_dcache_cache(d));
        check(d);
        ev(d, CA_TRACE_LOOKUP, "/d/one-more", -ENOENT);
        cr_assert_eq(dir_stats(d, "/d").negative, CA_DCACHE_FLOOR_DEFAULT);
        rotate_age(d, 10);
        cr_assert_eq(stats(d).nr_negative, 0);
        check(d);
        p.aging = false;
        p.ratio_counted = false;
        cr_assert_eq(ca_dcache_set_params(d, &p), 0);
        cr_assert_null(ca_dcache_cache(d));
        check(d);
        ca_dcache_free(d);
}

/* ------------------------------------------------------------------------------------------ */
/* randomized: the whole model stays consistent under every policy */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return (uint32_t)((rng_state >> 11) % n);
}

static const char *const names[] = {
        "a", "b", "c", "d", "e", "f", "g", "h", "i",
        "a-long-name-that-does-not-fit-in-the-dentry",
};

static void random_path(char *buf, size_t size)
{
        unsigned depth = 1 + rnd(3);
        size_t n = 0;

        for (unsigned i = 0; i < depth && n + 64 < size; i++)
                n += (size_t)snprintf(buf + n, size - n, "/%s", names[rnd(ELEMENTSOF(names))]);
}

#define HELD_MAX 12

static void random_ops(struct ca_dcache_params p, uint64_t seed, unsigned ops)
{
        static const int results[] = { 0, 0, 0, -ENOENT, -ENOENT, -ENOTDIR, -EACCES, -EEXIST,
                                       -ENOTEMPTY, -EINVAL };
        struct ca_dentry *held[HELD_MAX];
        unsigned nheld = 0;
        struct ca_dcache *d;
        char path[256], path2[256];

        rng_state = seed;
        cr_assert_eq(ca_dcache_new(&p, &d), 0);
        for (unsigned i = 0; i < ops; i++) {
                unsigned what = rnd(100);

                random_path(path, sizeof(path));
                random_path(path2, sizeof(path2));
                if (what < 55) {
                        enum ca_trace_op op = (enum ca_trace_op)rnd(_CA_TRACE_OP_MAX);
                        int res = results[rnd(ELEMENTSOF(results))];

                        int rr = ev2(d, op, path, path2, res);

                        cr_assert_eq(rr, 0, "op %d %s %s %d: %d", op, path, path2, res, rr);
                } else if (what < 65 && nheld < HELD_MAX) {
                        struct ca_dentry *de;

                        if (ca_dcache_path_lookup(d, path, CA_DCACHE_LOOKUP_NEGATIVE, &de) == 0)
                                held[nheld++] = de;
                } else if (what < 75 && nheld > 0) {
                        unsigned k = rnd(nheld);

                        ca_dcache_put(d, held[k]);
                        held[k] = held[--nheld];
                } else if (what < 80 && nheld > 0) {
                        struct ca_dentry *de = held[rnd(nheld)], *c;
                        const char *name = names[rnd(ELEMENTSOF(names))];

                        if (ca_dcache_alloc(d, de, name, strlen(name), &c) == 0) {
                                if (rnd(3) == 0)
                                        (void)ca_dcache_add(d, c, rnd(2), rnd(2));
                                if (nheld < HELD_MAX)
                                        held[nheld++] = c;
                                else
                                        ca_dcache_put(d, c);
                        }
                } else if (what < 84 && nheld > 0) {
                        struct ca_dentry *de = held[rnd(nheld)];

                        switch (rnd(4)) {
                        case 0:
                                (void)ca_dcache_delete(d, de);
                                break;
                        case 1:
                                (void)ca_dcache_instantiate(d, de, rnd(2));
                                break;
                        case 2:
                                ca_dcache_drop(d, de);
                                break;
                        default:
                                (void)ca_dcache_add(d, de, rnd(2), rnd(2));
                                break;
                        }
                } else if (what < 86 && nheld > 1) {
                        (void)ca_dcache_move(d, held[rnd(nheld)], held[rnd(nheld)]);
                } else if (what < 88 && nheld > 0) {
                        (void)ca_dcache_watch_dir(d, held[rnd(nheld)], rnd(2));
                } else if (what < 89 && nheld > 0) {
                        (void)ca_dcache_shrink_parent(d, held[rnd(nheld)]);
                } else if (what < 90 && nheld > 0) {
                        (void)ca_dcache_ratio_scan(d, held[rnd(nheld)]);
                } else if (what < 96) {
                        ca_dcache_rotate(d);
                        (void)ca_dcache_age(d, 1 + rnd(64), 0);
                } else if (what < 97) {
                        struct ca_dcache_params q = p;

                        /* flip one switch now and then, the test's policy otherwise */
                        switch (rnd(4)) {
                        case 0:
                                q.tail_negative = !q.tail_negative;
                                break;
                        case 1:
                                q.ratio_counted = !q.ratio_counted;
                                break;
                        case 2:
                                q.aging = !q.aging;
                                break;
                        default:
                                q.age.single_use_age = 1 + rnd(3);
                                break;
                        }
                        cr_assert_eq(ca_dcache_set_params(d, rnd(2) ? &q : &p), 0);
                } else {
                        const char *n = names[rnd(ELEMENTSOF(names))];
                        struct ca_dentry *c = ca_dcache_lookup(d, ca_dcache_root(d), n, strlen(n));

                        ca_dcache_put(d, c);
                }
                if (i % 1000 == 999) {
                        ca_dcache_dispose(d);
                        check(d);
                }
        }
        while (nheld > 0)
                ca_dcache_put(d, held[--nheld]);
        if (getenv("CA_TEST_VERBOSE")) {
                struct ca_dcache_stats st = stats(d);

                fprintf(stderr, "dentries %lu swept %lu recycled %lu cursor_killed %lu "
                        "counted_killed %lu reclaimed %lu busy %lu kept %lu replayed %lu "
                        "ignored %lu fixups %lu\n", (unsigned long)st.nr_dentry,
                        (unsigned long)st.swept, (unsigned long)st.recycled,
                        (unsigned long)st.cursor_killed, (unsigned long)st.counted_killed,
                        (unsigned long)st.aging_reclaimed, (unsigned long)st.aging_busy,
                        (unsigned long)st.aging_kept, (unsigned long)st.replayed,
                        (unsigned long)st.replay_ignored, (unsigned long)st.replay_fixups);
        }
        check(d);
        cr_assert_eq(stats(d).holds, 0);
        cr_assert_geq(stats(d).nr_unused, stats(d).nr_unreferenced);
        /* everything still aging goes in the end, and nothing is left behind */
        if (ca_dcache_cache(d)) {
                rotate_age(d, 64);
                cr_assert_eq(stats(d).nr_dentry, 1, "%lu dentries outlived aging",
                             (unsigned long)stats(d).nr_dentry);
                check(d);
        }
        ca_dcache_free(d);
}

static struct ca_dcache_params policy(bool tail, bool cursor, bool counted, bool aging)
{
        struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;

        p.tail_negative = tail;
        p.ratio_cursor = cursor;
        p.ratio_counted = counted;
        p.aging = aging;
        p.ratio = 1;
        p.floor = 1;
        p.age.single_use_age = 2;
        p.age.max_age = 4;
        return p;
}

#define RANDOM_OPS 100000

Test(dcache, random_none)
{
        random_ops(policy(false, false, false, false), 1, RANDOM_OPS);
}

Test(dcache, random_tail_negative)
{
        random_ops(policy(true, false, false, false), 2, RANDOM_OPS);
}

Test(dcache, random_ratio_cursor)
{
        random_ops(policy(false, true, false, false), 3, RANDOM_OPS);
}

Test(dcache, random_ratio_counted)
{
        random_ops(policy(false, false, true, false), 4, RANDOM_OPS);
}

Test(dcache, random_aging)
{
        random_ops(policy(false, false, false, true), 5, RANDOM_OPS);
}

Test(dcache, random_tail_and_cursor)
{
        random_ops(policy(true, true, false, false), 6, RANDOM_OPS);
}

Test(dcache, random_tail_counted_aging)
{
        random_ops(policy(true, false, true, true), 7, RANDOM_OPS);
}

Test(dcache, random_everything)
{
        random_ops(policy(true, true, true, true), 8, RANDOM_OPS);
}
