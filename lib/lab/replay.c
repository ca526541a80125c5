/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trace events applied to the dentry model (see cacheage/replay.h for the contract): the
 * plan says what an event's result tells about each of its paths, and the steps below make
 * the model agree, walking the paths with the model's own operations (dcache-internal.h) the
 * way lookup_slow() would have found them.
 *
 * struct ca_replay adds what the kernel keeps between calls: the references of open files,
 * working directories and mapped images (a table from the reader's hold ids to dentries), the
 * positive dentries a filesystem pins (tmpfs' extra dget in shmem_mknod), and the mount points,
 * below which the filesystem's d_delete decides whether a negative dentry is kept
 * (always_delete_dentry in tmpfs, ramfs, devtmpfs; proc and devpts never make one).
 *
 * Locking: the model's (one thread at a time). The walks take and drop their references
 * with __ca_dentry_get/put, never counted as the caller's holds; the replay's own references
 * (holds, pins, mount points) are counted as holds, so ca_dcache_check() sees them.
 */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cacheage/replay.h"
#include "dcache-internal.h"

/* --- filesystems -------------------------------------------------------------------------- */

enum {
        FS_NO_NEGATIVE = 1 << 0,  /* d_delete says delete, or lookup makes none: a negative
                                     dentry dies at its last reference */
        FS_PIN_POSITIVE = 1 << 1, /* every positive dentry is pinned from its creation to its
                                     unlink (tmpfs' shmem_mknod dget()) */
        FS_PID_DIRS = 1 << 2,     /* procfs: the directory of a pid at its root goes with the
                                     process (proc_flush_pid() at the reap) */
        FS_MOUNT = 1 << 7,        /* in the mounts table: a mount point */
};

/* What each filesystem does with its dentries (checked on kernel 6.18: see README). */
static const struct {
        const char *name;
        unsigned rules;
} fs_rules[] = {
        { "tmpfs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "devtmpfs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "ramfs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "hugetlbfs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "mqueue", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "debugfs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "tracefs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "securityfs", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "bpf", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "binfmt_misc", FS_NO_NEGATIVE | FS_PIN_POSITIVE },
        { "proc", FS_NO_NEGATIVE | FS_PID_DIRS },
        { "devpts", FS_NO_NEGATIVE },
        { "configfs", FS_NO_NEGATIVE },
        /* v9fs_cached_dentry_delete() (cache=loose...) or always_delete_dentry() (no cache) */
        { "9p", FS_NO_NEGATIVE },
};

static unsigned fs_rules_of(const char *fstype)
{
        for (size_t i = 0; fstype && i < sizeof(fs_rules) / sizeof(fs_rules[0]); i++)
                if (strcmp(fs_rules[i].name, fstype) == 0)
                        return fs_rules[i].rules;
        return 0; /* ext4, xfs, btrfs, overlay, sysfs, cgroup...: as the model */
}

/* --- the replay's tables: a small open-addressing map from nonzero keys ------------------- */

struct u64map {
        uint64_t *keys; /* 0: empty */
        void **vals;
        size_t cap, n;  /* cap: 0 or a power of two */
};

static size_t map_slot(const struct u64map *m, uint64_t key)
{
        return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (m->cap - 1);
}

static void **map_find(const struct u64map *m, uint64_t key)
{
        if (!m->n)
                return NULL;
        for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
                if (m->keys[i] == key)
                        return &m->vals[i];
                if (!m->keys[i])
                        return NULL;
        }
}

static int map_put(struct u64map *m, uint64_t key, void *val)
{
        size_t i;

        if ((m->n + 1) * 4 > m->cap * 3) {
                struct u64map g = { .cap = m->cap ? 2 * m->cap : 64 };

                g.keys = calloc(g.cap, sizeof(*g.keys));
                g.vals = calloc(g.cap, sizeof(*g.vals));
                if (!g.keys || !g.vals) {
                        free(g.keys);
                        free(g.vals);
                        return -ENOMEM;
                }
                for (size_t j = 0; j < m->cap; j++)
                        if (m->keys[j]) {
                                for (i = map_slot(&g, m->keys[j]); g.keys[i];)
                                        i = (i + 1) & (g.cap - 1);
                                g.keys[i] = m->keys[j];
                                g.vals[i] = m->vals[j];
                        }
                g.n = m->n;
                free(m->keys);
                free(m->vals);
                *m = g;
        }
        for (i = map_slot(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
                ;
        m->keys[i] = key;
        m->vals[i] = val;
        m->n++;
        return 0;
}

/* Removes @key; returns its value (NULL: absent). Backward-shift deletion: no tombstones. */
static void *map_del(struct u64map *m, uint64_t key)
{
        void **v = map_find(m, key), *val;
        size_t i, j;

        if (!v)
                return NULL;
        val = *v;
        i = (size_t)(v - m->vals);
        for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
                size_t home = map_slot(m, m->keys[j]);

                /* move j back to i unless its home lies cyclically in (i, j] */
                if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
                        m->keys[i] = m->keys[j];
                        m->vals[i] = m->vals[j];
                        i = j;
                }
        }
        m->keys[i] = 0;
        m->vals[i] = NULL;
        m->n--;
        return val;
}

static void map_free(struct u64map *m)
{
        free(m->keys);
        free(m->vals);
        *m = (struct u64map){ 0 };
}

struct ca_replay {
        struct ca_dcache *d;
        struct u64map holds;    /* hold id -> dentry */
        struct u64map pins;     /* dentry -> dentry: positives their filesystem pins */
        struct u64map mounts;   /* dentry -> FS_MOUNT | rules */
        unsigned root_fs;       /* the rules at "/" */
        struct ca_replay_stats st;
};

/* What one event's walks carry along. */
struct rctx {
        struct ca_dcache *d;
        struct ca_replay *r;    /* NULL: ca_dcache_replay(), no state */
        unsigned fs;            /* the rules of the filesystem the walk is in */
        bool create;            /* this step creates its path's last component */
        bool warm;              /* PIN, MOUNT: what it adds was in the kernel already */
        int enomem;             /* a table of the replay could not grow */
};

static uint64_t key_of(const struct ca_dentry *de)
{
        return (uint64_t)(uintptr_t)de;
}

/* A reference of the replay's own, counted as a caller's hold (ca_dcache_get()). */
static void ref_get(struct ca_dcache *d, struct ca_dentry *de)
{
        __ca_dentry_get(d, de);
        d->holds++;
}

static void ref_put(struct ca_dcache *d, struct ca_dentry *de)
{
        assert(d->holds > 0);
        d->holds--;
        __ca_dentry_put(d, de);
}

/* "/proc" itself: procfs on every Linux system, when no mount table says otherwise. */
static bool is_proc_root(const struct ca_dentry *de)
{
        return !(de->flags & D_ROOT) && (de->parent->flags & D_ROOT) && de->name_len == 4 &&
               memcmp(de->name_len > CA_DCACHE_INLINE_NAME ? de->name.ext : de->name.inline_name,
                      "proc", 4) == 0;
}

/* Whether @de is a mount point (known, or the default /proc); its rules in *ret_rules. */
static bool mount_rules(const struct ca_replay *r, const struct ca_dentry *de,
                        unsigned *ret_rules)
{
        void **v = r->mounts.n ? map_find(&r->mounts, key_of(de)) : NULL;

        if (v) {
                *ret_rules = (unsigned)(uintptr_t)*v & ~(unsigned)FS_MOUNT;
                return true;
        }
        if (is_proc_root(de)) {
                *ret_rules = fs_rules_of("proc");
                return true;
        }
        return false;
}

/* The rules below @de: the nearest mount point at or above it. */
static unsigned fs_of(const struct rctx *c, struct ca_dentry *de)
{
        unsigned rules;

        if (!c->r)
                return 0;
        for (;;) {
                if (mount_rules(c->r, de, &rules))
                        return rules;
                if (de->flags & D_ROOT)
                        return c->r->root_fs;
                de = de->parent;
        }
}

/* The walk stepped into @de: a mount point changes the rules. */
static void enter(struct rctx *c, struct ca_dentry *de)
{
        unsigned rules;

        if (c->r && mount_rules(c->r, de, &rules))
                c->fs = rules;
}

/*
 * @de is positive now, in the filesystem the walk is in (@alloced: a new dentry). On a
 * filesystem that pins its positives it is pinned; one the event did not create was in the
 * kernel's cache already (tmpfs keeps everything), and so is all that PIN and MOUNT add.
 */
static void made_positive(struct rctx *c, struct ca_dentry *de, bool alloced)
{
        if (!c->r)
                return;
        if (alloced && c->warm)
                c->r->st.warm++;
        if (!(c->fs & FS_PIN_POSITIVE) || map_find(&c->r->pins, key_of(de)))
                return;
        if (map_put(&c->r->pins, key_of(de), de) < 0) {
                c->enomem = -ENOMEM;
                return;
        }
        ref_get(c->d, de);
        if (alloced && !c->create && !c->warm)
                c->r->st.warm++;
}

/* @de is negative now: a filesystem that keeps none lets it die at its last reference. */
static void made_negative(struct rctx *c, struct ca_dentry *de)
{
        if (!c->r || !(c->fs & FS_NO_NEGATIVE) || !(de->flags & D_HASHED))
                return;
        __ca_dcache_drop(c->d, de);
        c->r->st.fs_unkept++;
}

/* The filesystem's pin of @de ends (an unlink, or it is renamed over). */
static void unpin(struct rctx *c, struct ca_dentry *de)
{
        if (c->r && c->r->pins.n && map_del(&c->r->pins, key_of(de)))
                ref_put(c->d, de);
}

/* --- the steps ---------------------------------------------------------------------------- */

/*
 * Walk [path, end) to the parent of its last component, every component on the way being a
 * directory that exists (the trace says so), as lookup_slow() would find it. With
 * @stop_at_negative a cached negative component ends the walk: -ENOENT after the lookup that
 * hit it. Otherwise a cached negative one is instantiated (the trace proves the cache stale).
 * Returns 0, the parent (referenced) and the last component (len 0: the path names the
 * parent itself, "/" for instance); c->fs is the parent's filesystem's rules.
 */
static int replay_walk_parent(struct rctx *c, const char *path, const char *end,
                              bool stop_at_negative, struct ca_dentry **ret_parent,
                              const char **ret_name, size_t *ret_len)
{
        struct ca_dcache *d = c->d;
        const char *p = path, *name;
        struct ca_dentry *cur = d->root;
        size_t len;
        int r;

        c->fs = c->r ? c->r->root_fs : 0;
        __ca_dentry_get(d, cur);
        while (next_component(&p, end, &name, &len)) {
                struct ca_dentry *child;

                if (len > CA_DCACHE_NAME_MAX) {
                        r = -ENAMETOOLONG;
                        goto out_put;
                }
                if (walk_dots(d, &cur, name, len)) {
                        if (is_dotdot(name, len))
                                c->fs = fs_of(c, cur);
                        continue;
                }
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
                        made_positive(c, child, true);
                } else if (!(child->flags & D_POSITIVE)) {
                        if (stop_at_negative) {
                                __ca_dentry_put(d, child);
                                r = -ENOENT;
                                goto out_put;
                        }
                        r = __ca_dcache_instantiate(d, child, true);
                        assert(r == 0);
                        d->replay_fixups++;
                        made_positive(c, child, false);
                } else {
                        if (!(child->flags & D_DIR))
                                child->flags |= D_DIR;
                        if (c->fs & FS_PIN_POSITIVE)
                                made_positive(c, child, false);
                }
                __ca_dentry_put(d, cur);
                cur = child;
                enter(c, cur);
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
static int replay_child(struct rctx *c, struct ca_dentry *parent, const char *name, size_t len,
                        bool exists, bool dir, bool fixup, struct ca_dentry **ret)
{
        struct ca_dcache *d = c->d;
        struct ca_dentry *ch;
        int r;

        parent->flags |= D_DIR; /* it has a child */
        ch = __ca_dcache_lookup(d, parent, name, len);
        if (ch && exists && !(ch->flags & D_POSITIVE)) {
                r = __ca_dcache_instantiate(d, ch, dir);
                assert(r == 0);
                if (fixup)
                        d->replay_fixups++;
                made_positive(c, ch, false);
        } else if (ch && !exists && (ch->flags & D_POSITIVE)) {
                /*
                 * Gone behind the cache's back, or a directory an earlier ENOENT walked
                 * through on the assumption that it existed (ld.so tries .../glibc-hwcaps/
                 * x86-64-v4/libfoo.so, then stats .../x86-64-v4 itself). Leave what a fresh
                 * lookup would: a negative dentry with nothing cached below it.
                 */
                d->replay_fixups++;
                unpin(c, ch);
                if (has_children(ch))
                        __ca_dcache_shrink_parent(d, ch);
                if (ch->refcount == 1 && !has_children(ch)) {
                        r = __ca_dcache_delete(d, ch);
                        assert(r == 0);
                        made_negative(c, ch);
                } else {
                        __ca_dcache_drop(d, ch);
                        __ca_dentry_put(d, ch);
                        ch = NULL;
                }
        } else if (ch && exists) {
                if (dir && !(ch->flags & D_DIR))
                        ch->flags |= D_DIR;
                if (c->fs & FS_PIN_POSITIVE)
                        made_positive(c, ch, false);
        }
        if (!ch) {
                r = __ca_dcache_alloc(d, parent, name, len, &ch);
                if (r < 0)
                        return r;
                r = __ca_dcache_add(d, ch, exists, dir);
                assert(r == 0);
                if (exists)
                        made_positive(c, ch, true);
                else
                        made_negative(c, ch);
        }
        *ret = ch;
        return 0;
}

/*
 * [path, end) as a step says it is: EXISTS, every component positive (the last a directory
 * when @dir); MISSING, the first missing component (a cached negative one on the way, or else
 * the last) negative; PREFIX, the components before the last positive, the last not looked up.
 * With @ret_final, the positive dentry an EXISTS step ends at, referenced (NULL otherwise).
 */
static int replay_path(struct rctx *c, const char *path, const char *end,
                       enum ca_dcache_replay_action action, bool dir, bool fixup,
                       struct ca_dentry **ret_final)
{
        bool missing = action == CA_DCACHE_REPLAY_MISSING;
        struct ca_dentry *parent, *ch;
        const char *name;
        size_t len;
        int r;

        r = replay_walk_parent(c, path, end, missing, &parent, &name, &len);
        if (r == -ENOENT && missing)
                return 0; /* it ended at a cached negative component: the missing one */
        if (r < 0)
                return r;
        if (len == 0 && action == CA_DCACHE_REPLAY_EXISTS && ret_final) {
                *ret_final = parent; /* "/" itself */
                return 0;
        }
        if (len > 0 && action != CA_DCACHE_REPLAY_PREFIX) {
                /* a cached positive the trace did not find is always the model's error */
                r = replay_child(c, parent, name, len, !missing, dir, fixup || missing, &ch);
                if (r == 0 && ret_final && !missing)
                        *ret_final = ch;
                else if (r == 0)
                        __ca_dentry_put(c->d, ch);
        }
        __ca_dentry_put(c->d, parent);
        return r;
}

static int replay_remove(struct rctx *c, const char *path, const char *end, bool rmdir)
{
        struct ca_dcache *d = c->d;
        struct ca_dentry *parent, *ch;
        const char *name;
        size_t len;
        int r;

        r = replay_walk_parent(c, path, end, false, &parent, &name, &len);
        if (r < 0)
                return r;
        if (len == 0) {
                d->replay_ignored++;
                goto out_put;
        }
        r = replay_child(c, parent, name, len, true, rmdir, true, &ch);
        if (r < 0)
                goto out_put;
        if (rmdir)
                __ca_dcache_shrink_parent(d, ch);
        unpin(c, ch); /* shmem_unlink()'s dput() comes before d_delete() */
        r = __ca_dcache_delete(d, ch);
        assert(r == 0);
        made_negative(c, ch);
        __ca_dentry_put(d, ch);
out_put:
        __ca_dentry_put(d, parent);
        return r;
}

static int replay_rename(struct rctx *c, const char *path, const char *path2)
{
        const char *end = path + strlen(path), *end2 = path2 + strlen(path2);
        struct ca_dcache *d = c->d;
        struct ca_dentry *sp, *src, *tp, *tgt;
        const char *name, *name2;
        size_t len, len2;
        int r;

        r = replay_walk_parent(c, path, end, false, &sp, &name, &len);
        if (r < 0)
                return r;
        if (len == 0) {
                d->replay_ignored++;
                __ca_dentry_put(d, sp);
                return 0;
        }
        r = replay_child(c, sp, name, len, true, false, true, &src);
        __ca_dentry_put(d, sp);
        if (r < 0)
                return r;
        r = replay_walk_parent(c, path2, end2, false, &tp, &name2, &len2);
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
                unpin(c, tgt); /* renamed over: its inode's last name goes */
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

        if (!ev || (unsigned)ev->op >= _CA_TRACE_OP_MAX)
                return -EINVAL;
        if (ev->op == CA_TRACE_RELEASE || ev->op == CA_TRACE_EXIT)
                return 0; /* only references end (and, with the replay's state, /proc/PID) */
        /* A symlink's path is its target text, never looked up: it may be relative. */
        if (!ev->path || (ev->op != CA_TRACE_SYMLINK && !absolute(ev->path)))
                return -EINVAL;
        if ((ev->op == CA_TRACE_RENAME || ev->op == CA_TRACE_LINK ||
             ev->op == CA_TRACE_SYMLINK) && !absolute(ev->path2))
                return -EINVAL;
        res = ev->result;
        if (result_says_nothing(res))
                return 0;

        /* the reader put the walk's end, the component the error is about, last */
        if (res == -ENOENT || res == -ENOTDIR) {
                ret[0] = res == -ENOENT ? missing : exists;
                ret[0].path2 = ev->op == CA_TRACE_SYMLINK;
                return 1;
        }
        switch (ev->op) {
        case CA_TRACE_LOOKUP:
        case CA_TRACE_EXEC:
        case CA_TRACE_CHDIR:
        case CA_TRACE_PIN:
        case CA_TRACE_MOUNT:
                ret[0] = exists;
                ret[0].dir = (res == 0 && ev->op == CA_TRACE_CHDIR) || ev->op == CA_TRACE_MOUNT;
                return 1;
        case CA_TRACE_CREATE:
        case CA_TRACE_MKDIR:
                if (res == 0 || res == -EEXIST) {
                        /* a cached negative turning positive is the point of a create */
                        ret[0] = exists;
                        ret[0].dir = ev->op == CA_TRACE_MKDIR;
                        ret[0].fixup = res != 0;
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
                else
                        ret[0] = exists;
                return 1;
        case CA_TRACE_RENAME:
                if (res == 0)
                        ret[0] = (struct ca_dcache_replay_step){
                                .action = CA_DCACHE_REPLAY_RENAME,
                        };
                else
                        ret[0] = exists;
                return 1;
        case CA_TRACE_LINK:
                ret[0] = exists;
                if (res != 0 && res != -EEXIST)
                        return 1;
                ret[1] = exists;
                ret[1].path2 = true;
                ret[1].fixup = res != 0;
                return 2;
        case CA_TRACE_SYMLINK:
                if (res == 0 || res == -EEXIST) {
                        ret[0] = exists;
                        ret[0].fixup = res != 0;
                } else
                        ret[0] = prefix;
                ret[0].path2 = true;
                return 1;
        default:
                return -EINVAL;
        }
}

static int replay_step(struct rctx *c, const struct ca_trace_event *ev,
                       const struct ca_dcache_replay_step *step, struct ca_dentry **ret_final)
{
        const char *path = step->path2 ? ev->path2 : ev->path;
        const char *end = path + strlen(path);

        c->create = step->action == CA_DCACHE_REPLAY_EXISTS && !step->fixup;
        switch (step->action) {
        case CA_DCACHE_REPLAY_MISSING:
        case CA_DCACHE_REPLAY_EXISTS:
        case CA_DCACHE_REPLAY_PREFIX:
                return replay_path(c, path, end, step->action, step->dir, step->fixup,
                                   ret_final);
        case CA_DCACHE_REPLAY_REMOVE:
                return replay_remove(c, path, end, step->dir);
        case CA_DCACHE_REPLAY_RENAME:
                return replay_rename(c, path, ev->path2);
        }
        return -EINVAL;
}

/* --- references ---------------------------------------------------------------------------- */

static void hold_take(struct rctx *c, uint64_t id, struct ca_dentry *de)
{
        struct ca_replay *r = c->r;

        if (map_find(&r->holds, id)) {
                r->st.hold_twice++;
                return;
        }
        if (map_put(&r->holds, id, de) < 0) {
                c->enomem = -ENOMEM;
                return;
        }
        ref_get(c->d, de);
        r->st.holds++;
}

static void hold_drop(struct ca_replay *r, uint64_t id)
{
        struct ca_dentry *de = map_del(&r->holds, id);

        if (!de) {
                r->st.drop_unknown++;
                return;
        }
        ref_put(r->d, de);
        r->st.drops++;
}

/* @de (referenced) is a mount point of @fstype: the filesystem's rules apply below it. */
static void mount_at(struct rctx *c, struct ca_dentry *de, const char *fstype)
{
        struct ca_replay *r = c->r;
        unsigned rules = fs_rules_of(fstype);
        void **v = map_find(&r->mounts, key_of(de));

        if (de->flags & D_ROOT)
                r->root_fs = rules;
        if (v) { /* mounted over: the top one counts */
                *v = (void *)(uintptr_t)(FS_MOUNT | rules);
                return;
        }
        if (map_put(&r->mounts, key_of(de), (void *)(uintptr_t)(FS_MOUNT | rules)) < 0) {
                c->enomem = -ENOMEM;
                return;
        }
        ref_get(c->d, de);
        r->st.mounts++;
}

/*
 * A process ended: its directory in /proc goes, as proc_flush_pid() does at the reap with
 * d_invalidate() (fs/proc/base.c): what nobody holds below it is killed, the rest unhashed,
 * to die at its last reference (pid_delete_dentry() kills a dead task's dentries at their last
 * dput). Looked up without a touch: an exit is no use of /proc. Only where /proc is procfs.
 */
static void proc_exit(struct ca_replay *r, const char *path)
{
        struct ca_dcache *d = r->d;
        struct ca_dentry *proc, *dir;
        const char *name;
        unsigned rules;
        uint64_t before;

        if (!path || strncmp(path, "/proc/", 6) != 0 || !path[6] ||
            strspn(path + 6, "0123456789") != strlen(path + 6))
                return;
        name = path + 6;
        proc = __ca_dcache_peek(d, d->root, "proc", 4);
        if (!proc)
                return;
        dir = mount_rules(r, proc, &rules) && (rules & FS_PID_DIRS) && (proc->flags & D_POSITIVE)
                      ? __ca_dcache_peek(d, proc, name, strlen(name))
                      : NULL;
        __ca_dentry_put(d, proc);
        if (!dir)
                return;
        before = d->nr_dentry;
        __ca_dcache_invalidate(d, dir);
        __ca_dentry_put(d, dir);
        r->st.proc_flushed += before - d->nr_dentry;
}

/* One event, with (@r) or without the replay's state. */
static int replay_apply(struct ca_dcache *d, struct ca_replay *r, const struct ca_trace_event *ev)
{
        struct ca_dcache_replay_step steps[CA_DCACHE_REPLAY_STEPS_MAX];
        struct rctx c = { .d = d, .r = r };
        uint64_t ignored;
        bool did, step_ignored;
        int n, rr = 0;

        ca_dcache_dispose(d); /* settle(), as every entry into the model does */
        n = ca_dcache_replay_plan(ev, steps);
        if (n < 0)
                return n;
        for (size_t i = 0; i < ev->nwalks; i++)
                if (!ev->walks || !absolute(ev->walks[i].path))
                        return -EINVAL;
        c.warm = ev->op == CA_TRACE_PIN || ev->op == CA_TRACE_MOUNT;
        did = ev->nwalks > 0 || (r && (ev->hold || ev->ndrops));

        /* the lookups the call made on the way: links, "..", interpreters */
        for (size_t i = 0; i < ev->nwalks && rr == 0; i++) {
                const struct ca_trace_walk *w = &ev->walks[i];
                struct ca_dentry *final = NULL;

                c.create = false;
                rr = replay_path(&c, w->path, w->path + strlen(w->path),
                                 CA_DCACHE_REPLAY_EXISTS, w->kind == CA_TRACE_WALK_DIR, true,
                                 r && w->hold ? &final : NULL);
                if (final) {
                        hold_take(&c, w->hold, final);
                        __ca_dentry_put(d, final);
                } else if (r && w->hold) {
                        r->st.hold_failed++;
                }
        }

        ignored = d->replay_ignored;
        for (int i = 0; i < n && rr == 0; i++) {
                bool want = i == 0 && r && (ev->hold || ev->op == CA_TRACE_MOUNT);
                struct ca_dentry *final = NULL;

                rr = replay_step(&c, ev, &steps[i], want ? &final : NULL);
                if (!want)
                        continue;
                if (final && ev->hold)
                        hold_take(&c, ev->hold, final);
                else if (ev->hold)
                        r->st.hold_failed++;
                if (final && ev->op == CA_TRACE_MOUNT)
                        mount_at(&c, final, ev->fstype);
                if (final)
                        __ca_dentry_put(d, final);
        }
        if (n == 0 && r && ev->hold)
                r->st.hold_failed++; /* nothing walked: nothing to hold */
        step_ignored = d->replay_ignored != ignored;
        d->replay_ignored = ignored;

        /* references that end with this call: after it, as the kernel's fput() comes last */
        for (size_t i = 0; r && i < ev->ndrops; i++)
                hold_drop(r, ev->drops[i]);
        if (rr < 0)
                return rr;
        /* a process that ended let go of its fds above; its /proc directory goes at the reap */
        if (r && ev->op == CA_TRACE_EXIT) {
                r->st.exits++;
                proc_exit(r, ev->path);
                did = true;
        }
        if (did || (n > 0 && !step_ignored))
                d->replayed++;
        else
                d->replay_ignored++;
        return c.enomem;
}

int ca_dcache_replay(struct ca_dcache *d, const struct ca_trace_event *ev)
{
        return replay_apply(d, NULL, ev);
}

int ca_replay_new(struct ca_dcache *d, struct ca_replay **ret)
{
        struct ca_replay *r;

        if (!d || !ret)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->d = d;
        *ret = r;
        return 0;
}

static void put_all(struct ca_dcache *d, struct u64map *m)
{
        for (size_t i = 0; i < m->cap; i++)
                if (m->keys[i])
                        ref_put(d, m->vals[i]);
        map_free(m);
}

struct ca_replay *ca_replay_free(struct ca_replay *r)
{
        if (!r)
                return NULL;
        ca_dcache_dispose(r->d);
        put_all(r->d, &r->holds);
        put_all(r->d, &r->pins);
        for (size_t i = 0; i < r->mounts.cap; i++)
                if (r->mounts.keys[i])
                        ref_put(r->d, (struct ca_dentry *)(uintptr_t)r->mounts.keys[i]);
        map_free(&r->mounts);
        free(r);
        return NULL;
}

int ca_replay_event(struct ca_replay *r, const struct ca_trace_event *ev)
{
        int rr;

        if (!r || !ev)
                return -EINVAL;
        rr = replay_apply(r->d, r, ev);
        if (rr == -EINVAL)
                return rr;
        r->st.events += rr == 0;
        r->st.guessed_links += (ev->guesses & CA_TRACE_GUESS_LINKS) != 0;
        r->st.guessed_missing += (ev->guesses & CA_TRACE_GUESS_MISSING) != 0;
        r->st.guessed_notdir += (ev->guesses & CA_TRACE_GUESS_NOTDIR) != 0;
        r->st.guessed_interp += (ev->guesses & CA_TRACE_GUESS_INTERP) != 0;
        return rr;
}

void ca_replay_get_stats(const struct ca_replay *r, struct ca_replay_stats *ret)
{
        if (!r || !ret)
                return;
        *ret = r->st;
        ret->held = r->holds.n + r->pins.n + r->mounts.n;
        ret->fs_pinned = r->pins.n;
}
