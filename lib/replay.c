/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trace events applied to the dentry model (see cacheage/replay.h for the contract): the
 * plan says what an event's result tells about each of its paths, and the steps below make
 * the model agree, walking the paths with the model's own operations (dcache-internal.h) the
 * way lookup_slow() would have found them.
 *
 * Locking: the model's (one thread at a time). The walks take and drop their references
 * with __ca_dentry_get/put, never counted as the caller's holds.
 */

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "cacheage/replay.h"
#include "dcache-internal.h"

/* --- the steps ---------------------------------------------------------------------------- */

/*
 * Walk [path, end) to the parent of its last component, every component on the way being a
 * directory that exists (the trace says so), as lookup_slow() would find it. With
 * @stop_at_negative a cached negative component ends the walk: -ENOENT after the lookup that
 * hit it. Otherwise a cached negative one is instantiated (the trace proves the cache stale).
 * Returns 0, the parent (referenced) and the last component (len 0: the path names the
 * parent itself, "/" for instance).
 */
static int replay_walk_parent(struct ca_dcache *d, const char *path, const char *end,
                              bool stop_at_negative, struct ca_dentry **ret_parent,
                              const char **ret_name, size_t *ret_len)
{
        const char *p = path, *name;
        struct ca_dentry *cur = d->root;
        size_t len;
        int r;

        __ca_dentry_get(d, cur);
        while (next_component(&p, end, &name, &len)) {
                struct ca_dentry *child;

                if (len > CA_DCACHE_NAME_MAX) {
                        r = -ENAMETOOLONG;
                        goto out_put;
                }
                if (walk_dots(d, &cur, name, len))
                        continue;
                if (only_slashes(p, end)) {
                        *ret_parent = cur;
                        *ret_name = name;
                        *ret_len = len;
                        return 0;
                }
                if (!(cur->flags & D_DIR))
                        cur->flags |= D_DIR; /* walked through: a directory after all */
                child = __ca_dcache_lookup(d, cur, name, len);
                if (!child) {
                        r = __ca_dcache_alloc(d, cur, name, len, &child);
                        if (r < 0)
                                goto out_put;
                        r = __ca_dcache_add(d, child, true, true);
                        assert(r == 0);
                } else if (!(child->flags & D_POSITIVE)) {
                        if (stop_at_negative) {
                                __ca_dentry_put(d, child);
                                r = -ENOENT;
                                goto out_put;
                        }
                        r = __ca_dcache_instantiate(d, child, true);
                        assert(r == 0);
                        d->replay_fixups++;
                } else if (!(child->flags & D_DIR))
                        child->flags |= D_DIR;
                __ca_dentry_put(d, cur);
                cur = child;
        }
        *ret_parent = cur;
        *ret_name = NULL;
        *ret_len = 0;
        return 0;

out_put:
        __ca_dentry_put(d, cur);
        return r;
}

/*
 * The child @name of @parent as the trace says it is: positive (@exists) or negative.
 * A cached dentry that says otherwise is corrected; counted as a fix-up when @fixup.
 * Returns it referenced.
 */
static int replay_child(struct ca_dcache *d, struct ca_dentry *parent, const char *name,
                        size_t len, bool exists, bool dir, bool fixup,
                        struct ca_dentry **ret)
{
        struct ca_dentry *c;
        int r;

        parent->flags |= D_DIR; /* it has a child */
        c = __ca_dcache_lookup(d, parent, name, len);
        if (c && exists && !(c->flags & D_POSITIVE)) {
                r = __ca_dcache_instantiate(d, c, dir);
                assert(r == 0);
                if (fixup)
                        d->replay_fixups++;
        } else if (c && !exists && (c->flags & D_POSITIVE)) {
                /*
                 * Gone behind the cache's back, or a directory an earlier ENOENT walked
                 * through on the assumption that it existed (ld.so tries .../glibc-hwcaps/
                 * x86-64-v4/libfoo.so, then stats .../x86-64-v4 itself). Leave what a fresh
                 * lookup would: a negative dentry with nothing cached below it.
                 */
                d->replay_fixups++;
                if (has_children(c))
                        __ca_dcache_shrink_parent(d, c);
                if (c->refcount == 1 && !has_children(c)) {
                        r = __ca_dcache_delete(d, c);
                        assert(r == 0);
                } else {
                        __ca_dcache_drop(d, c);
                        __ca_dentry_put(d, c);
                        c = NULL;
                }
        } else if (c && exists && dir && !(c->flags & D_DIR))
                c->flags |= D_DIR;
        if (!c) {
                r = __ca_dcache_alloc(d, parent, name, len, &c);
                if (r < 0)
                        return r;
                r = __ca_dcache_add(d, c, exists, dir);
                assert(r == 0);
        }
        *ret = c;
        return 0;
}

/*
 * [path, end) as a step says it is: EXISTS, every component positive (the last a directory
 * when @dir); MISSING, the first missing component (a cached negative one on the way, or else
 * the last) negative; PREFIX, the components before the last positive, the last not looked up.
 */
static int replay_path(struct ca_dcache *d, const char *path, const char *end,
                       enum ca_dcache_replay_action action, bool dir, bool fixup)
{
        bool missing = action == CA_DCACHE_REPLAY_MISSING;
        struct ca_dentry *parent, *c;
        const char *name;
        size_t len;
        int r;

        r = replay_walk_parent(d, path, end, missing, &parent, &name, &len);
        if (r == -ENOENT && missing)
                return 0; /* it ended at a cached negative component: the missing one */
        if (r < 0)
                return r;
        if (len > 0 && action != CA_DCACHE_REPLAY_PREFIX) {
                /* a cached positive the trace did not find is always the model's error */
                r = replay_child(d, parent, name, len, !missing, dir, fixup || missing, &c);
                if (r == 0)
                        __ca_dentry_put(d, c);
        }
        __ca_dentry_put(d, parent);
        return r;
}

/* [path, return) is the parent directory's path: up to the last component. */
static const char *parent_end(const char *path, const char *end)
{
        while (end > path && end[-1] == '/')
                end--;
        while (end > path && end[-1] != '/')
                end--;
        return end;
}

static int replay_remove(struct ca_dcache *d, const char *path, const char *end, bool rmdir)
{
        struct ca_dentry *parent, *c;
        const char *name;
        size_t len;
        int r;

        r = replay_walk_parent(d, path, end, false, &parent, &name, &len);
        if (r < 0)
                return r;
        if (len == 0) {
                d->replay_ignored++;
                goto out_put;
        }
        r = replay_child(d, parent, name, len, true, rmdir, true, &c);
        if (r < 0)
                goto out_put;
        if (rmdir)
                __ca_dcache_shrink_parent(d, c);
        r = __ca_dcache_delete(d, c);
        assert(r == 0);
        __ca_dentry_put(d, c);
out_put:
        __ca_dentry_put(d, parent);
        return r;
}

static int replay_rename(struct ca_dcache *d, const char *path, const char *path2)
{
        const char *end = path + strlen(path), *end2 = path2 + strlen(path2);
        struct ca_dentry *sp, *src, *tp, *tgt;
        const char *name, *name2;
        size_t len, len2;
        int r;

        r = replay_walk_parent(d, path, end, false, &sp, &name, &len);
        if (r < 0)
                return r;
        if (len == 0) {
                d->replay_ignored++;
                __ca_dentry_put(d, sp);
                return 0;
        }
        r = replay_child(d, sp, name, len, true, false, true, &src);
        __ca_dentry_put(d, sp);
        if (r < 0)
                return r;
        r = replay_walk_parent(d, path2, end2, false, &tp, &name2, &len2);
        if (r < 0)
                goto out_src;
        if (len2 == 0) {
                d->replay_ignored++;
                goto out_tp;
        }
        /* the target's lookup: cached, or a new negative dentry (lookup_one_qstr_excl) */
        tgt = __ca_dcache_lookup(d, tp, name2, len2);
        if (!tgt) {
                r = __ca_dcache_alloc(d, tp, name2, len2, &tgt);
                if (r < 0)
                        goto out_tp;
                r = __ca_dcache_add(d, tgt, false, false);
                assert(r == 0);
        }
        if (tgt == src || is_ancestor(src, tgt) || is_ancestor(tgt, src)) {
                /* the same name, or impossible for a rename that succeeded */
                d->replay_ignored++;
                r = 0;
        } else {
                if ((tgt->flags & D_POSITIVE) && has_children(tgt))
                        __ca_dcache_shrink_parent(d, tgt);
                r = __ca_dcache_move(d, src, tgt);
        }
        __ca_dentry_put(d, tgt);
out_tp:
        __ca_dentry_put(d, tp);
out_src:
        __ca_dentry_put(d, src);
        return r;
}

/* --- the plan and the replay --------------------------------------------------------------- */

static bool absolute(const char *p)
{
        return p && p[0] == '/';
}

/* Results that tell nothing about the cache: the call failed before any lookup. */
static bool result_says_nothing(int result)
{
        switch (result) {
        case -EFAULT:
        case -EBADF:
        case -EINVAL:
        case -ENAMETOOLONG:
        case -ELOOP:
        case -EIO: /* an errno the reader did not know: nothing to learn */
                return true;
        default:
                return false;
        }
}

int ca_dcache_replay_plan(const struct ca_trace_event *ev,
                          struct ca_dcache_replay_step ret[CA_DCACHE_REPLAY_STEPS_MAX])
{
        const struct ca_dcache_replay_step exists = { .action = CA_DCACHE_REPLAY_EXISTS,
                                                      .fixup = true },
                                           missing = { .action = CA_DCACHE_REPLAY_MISSING },
                                           prefix = { .action = CA_DCACHE_REPLAY_PREFIX };
        int res;

        /* A symlink's path is its target text, never looked up: it may be relative. */
        if (!ev || !ev->path || (unsigned)ev->op >= _CA_TRACE_OP_MAX ||
            (ev->op != CA_TRACE_SYMLINK && !absolute(ev->path)))
                return -EINVAL;
        if ((ev->op == CA_TRACE_RENAME || ev->op == CA_TRACE_LINK ||
             ev->op == CA_TRACE_SYMLINK) && !absolute(ev->path2))
                return -EINVAL;
        res = ev->result;
        if (result_says_nothing(res))
                return 0;

        switch (ev->op) {
        case CA_TRACE_LOOKUP:
        case CA_TRACE_EXEC:
        case CA_TRACE_CHDIR:
                if (res == -ENOENT)
                        ret[0] = missing;
                else if (res == -ENOTDIR)
                        ret[0] = prefix;
                else {
                        ret[0] = exists;
                        ret[0].dir = res == 0 && ev->op == CA_TRACE_CHDIR;
                }
                return 1;
        case CA_TRACE_CREATE:
        case CA_TRACE_MKDIR:
                if (res == 0 || res == -EEXIST) {
                        /* a cached negative turning positive is the point of a create */
                        ret[0] = exists;
                        ret[0].dir = ev->op == CA_TRACE_MKDIR;
                        ret[0].fixup = res != 0;
                } else if (res == -ENOENT) {
                        ret[0] = missing;
                        ret[0].parent = true;
                } else
                        ret[0] = prefix;
                return 1;
        case CA_TRACE_UNLINK:
        case CA_TRACE_RMDIR:
                if (res == 0)
                        ret[0] = (struct ca_dcache_replay_step){
                                .action = CA_DCACHE_REPLAY_REMOVE,
                                .dir = ev->op == CA_TRACE_RMDIR,
                        };
                else if (res == -ENOENT)
                        ret[0] = missing;
                else if (res == -ENOTDIR && ev->op == CA_TRACE_UNLINK)
                        ret[0] = prefix;
                else
                        ret[0] = exists;
                return 1;
        case CA_TRACE_RENAME:
                if (res == 0)
                        ret[0] = (struct ca_dcache_replay_step){
                                .action = CA_DCACHE_REPLAY_RENAME,
                        };
                else if (res == -ENOENT)
                        ret[0] = missing;
                else if (res == -ENOTDIR)
                        ret[0] = prefix;
                else
                        ret[0] = exists;
                return 1;
        case CA_TRACE_LINK:
                if (res == -ENOENT)
                        ret[0] = missing;
                else if (res == -ENOTDIR)
                        ret[0] = prefix;
                else {
                        ret[0] = exists;
                        if (res != 0 && res != -EEXIST)
                                return 1;
                        ret[1] = exists;
                        ret[1].path2 = true;
                        ret[1].fixup = res != 0;
                        return 2;
                }
                return 1;
        case CA_TRACE_SYMLINK:
                if (res == 0 || res == -EEXIST) {
                        ret[0] = exists;
                        ret[0].fixup = res != 0;
                } else if (res == -ENOENT) {
                        ret[0] = missing;
                        ret[0].parent = true;
                } else
                        ret[0] = prefix;
                ret[0].path2 = true;
                return 1;
        default:
                return -EINVAL;
        }
}

static int replay_step(struct ca_dcache *d, const struct ca_trace_event *ev,
                       const struct ca_dcache_replay_step *step)
{
        const char *path = step->path2 ? ev->path2 : ev->path;
        const char *end = path + strlen(path);

        switch (step->action) {
        case CA_DCACHE_REPLAY_MISSING:
                if (step->parent) {
                        end = parent_end(path, end);
                        if (end - path <= 1)
                                return 0; /* the parent is "/": nothing is missing */
                }
                __attribute__((fallthrough));
        case CA_DCACHE_REPLAY_EXISTS:
        case CA_DCACHE_REPLAY_PREFIX:
                return replay_path(d, path, end, step->action, step->dir, step->fixup);
        case CA_DCACHE_REPLAY_REMOVE:
                return replay_remove(d, path, end, step->dir);
        case CA_DCACHE_REPLAY_RENAME:
                return replay_rename(d, path, ev->path2);
        }
        return -EINVAL;
}

int ca_dcache_replay(struct ca_dcache *d, const struct ca_trace_event *ev)
{
        struct ca_dcache_replay_step steps[CA_DCACHE_REPLAY_STEPS_MAX];
        uint64_t ignored;
        int n, r = 0;

        ca_dcache_dispose(d); /* settle(), as every entry into the model does */
        n = ca_dcache_replay_plan(ev, steps);
        if (n < 0)
                return n;
        if (n == 0) {
                d->replay_ignored++;
                return 0;
        }
        ignored = d->replay_ignored;
        for (int i = 0; i < n && r == 0; i++)
                r = replay_step(d, ev, &steps[i]);
        if (r < 0)
                return r;
        if (d->replay_ignored == ignored)
                d->replayed++;
        return 0;
}
