/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-replay: the replay lab. One strace log is replayed, event by event and in lockstep, into
 * one dentry-cache model per policy, and the policies are compared on what they keep:
 *
 *   none           the stock kernel without memory pressure: nothing is ever reclaimed;
 *   tail_negative  the 2022 sweep: reclaims nothing either (its figures are none's), shown for
 *                  the cost of the "watch every directory" walk at the end of the trace;
 *   ratio_cursor   Brennan's negative-dentry ratio (seed 003), ratio 5;
 *   ratio_counted  our counted ratio, ratio 5, floor 16;
 *   aging@T        periodic aging, single_use_age and max_age at their defaults (or as given),
 *                  each rotation aged to the end (no slice limit) before the next event. One
 *                  row per rotation interval, on one of two clocks:
 *                    aging@10ms  the trace's timestamps (-tt, -ttt): a rotation each time 10 ms
 *                                of traced time have passed, before the first event after it;
 *                                the default for logs that have them (--rotate-ms);
 *                    aging@100ev the event count: a rotation before every 100th event; the
 *                                default for logs without timestamps or with -t's whole
 *                                seconds (--rotate-events, which adds such rows to the others);
 *                  strace slows the traced program down, and more so on a busy machine, so rows
 *                  on trace time move from one capture to the next; event rows do not;
 *   oracle         drops every dentry right after its last use: a first pass records, for each
 *                  path, the index of the last event that walks it; the replay kills it then.
 *
 * Figures per policy, sampled after every event (an "event step"):
 *   resident     dentries in the model, the pinned root excepted: peak and mean; and negatives;
 *   dead time    the sum over event steps of the dentries resident after their last use, in
 *                dentry-events: what keeping objects nobody will look up again costs;
 *   misses       component lookups (d_lookup calls of the path walks) that found nothing;
 *   extra        misses that were hits under `none`: lookups that missed only because the
 *                policy had dropped the dentry;
 *   gap closed   (dead(none) - dead(policy)) / (dead(none) - dead(oracle)): how much of the
 *                avoidable dead time the policy removed (1 = as good as the oracle).
 *
 * A dentry is identified by its path (parent's identity and name), as the trace names it. Which
 * components an event walks follows ca_dcache_replay(): the whole path, its parent's components
 * only (-ENOTDIR, a create that failed), both paths of a rename or link. Counting the dead: after
 * each event, the dentries this event used for the last time and that are still resident become
 * dead; a step in which the policy or the trace may have killed something (a reclaim counter
 * moved, an unlink, rmdir or rename) is recounted exactly by a walk of the whole model. --check
 * recounts every step and fails on any difference.
 *
 * Probes. Hits are found by looking the components up (ca_dcache_lookup, one reference at a
 * time as the walk takes them) just before the event is replayed: the replay takes and drops the
 * same references and touches the same dentries in the same rotation period right after, so the
 * probe changes nothing a policy sees.
 *
 * --loop N replays the log N times in a row, as a long-running program repeating its lookups;
 * on trace time each repetition starts one mean gap after the previous one ended.
 *
 * --capture records a fresh trace of a real workload now (strace -f -ttt -e trace=%file; see
 * capture_script()): a stat storm of distinct missing names in two directories of 50 files
 * (the same lookups in two orders, for Brennan's order dependence), PATH searches, a scan that
 * looks every file of a third directory up once, and a python import before and after. It is
 * stored in --out (bench/out by default), never in the source tree.
 *
 * Benchmarks report, they do not assert: the exit status is 0 unless something failed to run
 * (or --check found a difference).
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#define ROTATE_MS_DEFAULT "10,100"       /* ms of trace time per rotation, one aging row each */
#define ROTATE_EVENTS_DEFAULT "100,1000" /* events per rotation, for logs without timestamps */
/*
 * Rotations run for one gap in the trace at most: enough to age every idle dentry away (a
 * directory goes max_age rotations after its last child); more would change nothing.
 */
#define ROTATIONS_PER_GAP_MAX 1024u
#define CAPTURE_NAMES_DEFAULT 3000u      /* missing names stat'ed per directory by --capture */
#define CAPTURE_FILES 50u                /* files per directory in the capture */
#define SVG_WIDTH 960                    /* px */
#define SVG_PANEL 300                    /* px per trace */
#define SVG_BUCKETS 800u                 /* points per line at most */
#define POLICIES_MAX 16u                 /* rows of a table */
#define DIRS_MAX 8u                      /* --dir */
#define WALKS_MAX 2u                     /* walks per event: rename and link have two */
#define NO_ID UINT32_MAX                 /* a dentry no event walks */

/* ------------------------------------------------------------------------------------------ */
/* small helpers */

static void *xrealloc_array(void *p, size_t n, size_t size)
{
        if (size && n > SIZE_MAX / size)
                return NULL;
        return realloc(p, n * size);
}

/* Grow *p (of *cap elements) to hold @need. Returns 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
        size_t n = *cap ? *cap : 64;
        void *q;

        if (need <= *cap)
                return 0;
        while (n < need)
                n *= 2;
        q = xrealloc_array(*p, n, size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}

static uint32_t hash_name(uint32_t parent, const char *name, size_t len)
{
        uint32_t h = 2166136261u ^ (parent * 0x9e3779b1u);

        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)name[i];
                h *= 16777619u;
        }
        return h ^ (h >> 15);
}

/* ------------------------------------------------------------------------------------------ */
/* path identities: (parent id, name) -> id; id 0 is "/" */

struct ident {
        uint32_t parent;
        uint32_t hash;
        size_t name;   /* offset in names */
        uint32_t len;
};

struct idents {
        struct ident *v;
        size_t n, cap;
        uint32_t *slots; /* id + 1; 0 empty */
        size_t nslots;   /* a power of two */
        char *names;
        size_t names_len, names_cap;
};

static int idents_init(struct idents *t)
{
        *t = (struct idents){ 0 };
        t->nslots = 1024;
        t->slots = calloc(t->nslots, sizeof(*t->slots));
        if (!t->slots || grow((void **)&t->v, &t->cap, 1, sizeof(*t->v)) < 0)
                return -ENOMEM;
        t->v[0] = (struct ident){ .parent = 0 };
        t->n = 1;
        return 0;
}

static void idents_done(struct idents *t)
{
        free(t->v);
        free(t->slots);
        free(t->names);
        *t = (struct idents){ 0 };
}

static uint32_t idents_find(const struct idents *t, uint32_t parent, const char *name, size_t len)
{
        uint32_t h = hash_name(parent, name, len);

        for (size_t i = h & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
                uint32_t s = t->slots[i];
                const struct ident *e;

                if (!s)
                        return NO_ID;
                e = &t->v[s - 1];
                if (e->hash == h && e->parent == parent && e->len == len &&
                    memcmp(t->names + e->name, name, len) == 0)
                        return s - 1;
        }
}

static int idents_rehash(struct idents *t)
{
        size_t n = t->nslots * 2;
        uint32_t *s = calloc(n, sizeof(*s));

        if (!s)
                return -ENOMEM;
        for (size_t id = 1; id < t->n; id++) {
                size_t i = t->v[id].hash & (n - 1);

                while (s[i])
                        i = (i + 1) & (n - 1);
                s[i] = (uint32_t)id + 1;
        }
        free(t->slots);
        t->slots = s;
        t->nslots = n;
        return 0;
}

static int idents_get(struct idents *t, uint32_t parent, const char *name, size_t len,
                      uint32_t *ret)
{
        uint32_t id = idents_find(t, parent, name, len), h;
        size_t i;
        int r;

        if (id != NO_ID) {
                *ret = id;
                return 0;
        }
        if (t->n >= UINT32_MAX - 1)
                return -E2BIG;
        if ((t->n + 1) * 2 > t->nslots) {
                r = idents_rehash(t);
                if (r < 0)
                        return r;
        }
        if (grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0 ||
            grow((void **)&t->names, &t->names_cap, t->names_len + len, 1) < 0)
                return -ENOMEM;
        h = hash_name(parent, name, len);
        memcpy(t->names + t->names_len, name, len);
        t->v[t->n] = (struct ident){ .parent = parent, .hash = h, .name = t->names_len,
                                     .len = (uint32_t)len };
        t->names_len += len;
        for (i = h & (t->nslots - 1); t->slots[i]; i = (i + 1) & (t->nslots - 1))
                ;
        t->slots[i] = (uint32_t)t->n + 1;
        *ret = (uint32_t)t->n++;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* a trace, loaded once, with the walks of each event */

struct comp {
        uint32_t id;
        uint32_t start, len; /* in the walk's path */
};

struct walk {
        size_t path;         /* offset in the trace's strings */
        uint32_t comp0, n;   /* components walked: comps[comp0 .. comp0 + n) */
        bool stop_negative;  /* ENOENT: a cached negative component ends the walk */
};

struct levent {
        uint64_t time_usec;
        size_t path, path2;  /* offsets; SIZE_MAX: none */
        int result, pid;
        enum ca_trace_op op;
        uint32_t walk0, nwalks;
};

struct trace {
        char file[PATH_MAX];
        char cwd[PATH_MAX];
        char *dirs[DIRS_MAX];   /* directories whose negatives are reported */
        size_t ndirs;
        struct ca_trace_stats rstats;

        char *str;
        size_t str_len, str_cap;
        struct levent *ev;
        size_t nev, ev_cap;
        struct walk *walks;
        size_t nwalks, walks_cap;
        struct comp *comps;
        size_t ncomps, comps_cap;
        struct idents ids;
        bool has_time;           /* timestamps fine enough to rotate by (not -t's seconds) */
        uint64_t t0_usec, t1_usec; /* the first and the last timestamp */
};

static int trace_str(struct trace *t, const char *s, size_t *ret)
{
        size_t len = strlen(s) + 1;

        if (grow((void **)&t->str, &t->str_cap, t->str_len + len, 1) < 0)
                return -ENOMEM;
        memcpy(t->str + t->str_len, s, len);
        *ret = t->str_len;
        t->str_len += len;
        return 0;
}

/*
 * Add a walk of the path at offset @off: every component, or every one but the last
 * (@drop_last), each given its identity. A missing or relative path is not walked (replay
 * refuses the event).
 */
static int trace_walk(struct trace *t, size_t off, bool drop_last, bool stop_negative)
{
        const char *path, *p;
        uint32_t parent = 0, comp0 = (uint32_t)t->ncomps, n = 0;
        struct walk *w;
        int r;

        if (off == SIZE_MAX || t->str[off] != '/')
                return 0;
        path = p = t->str + off;

        for (;;) {
                const char *s, *e;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                s = p;
                while (*p && *p != '/')
                        p++;
                e = p;
                if (drop_last) {
                        const char *q = e;

                        while (*q == '/')
                                q++;
                        if (!*q)
                                break;
                }
                /* the model refuses longer names: the walk would stop there */
                if ((size_t)(e - s) > CA_DCACHE_NAME_MAX)
                        break;
                if (grow((void **)&t->comps, &t->comps_cap, t->ncomps + 1, sizeof(*t->comps)) < 0)
                        return -ENOMEM;
                r = idents_get(&t->ids, parent, s, (size_t)(e - s), &parent);
                if (r < 0)
                        return r;
                t->comps[t->ncomps++] = (struct comp){ .id = parent,
                                                       .start = (uint32_t)(s - path),
                                                       .len = (uint32_t)(e - s) };
                n++;
        }
        if (n == 0)
                return 0;
        if (grow((void **)&t->walks, &t->walks_cap, t->nwalks + 1, sizeof(*t->walks)) < 0)
                return -ENOMEM;
        w = &t->walks[t->nwalks++];
        *w = (struct walk){ .path = off, .comp0 = comp0, .n = n, .stop_negative = stop_negative };
        t->ev[t->nev].nwalks++;
        return 0;
}

/* The components ca_dcache_replay() walks for @e (see its contract in dcache.h). */
static int trace_event_walks(struct trace *t, const struct levent *e)
{
        int res = e->result;
        bool enoent = res == -ENOENT, enotdir = res == -ENOTDIR;
        int r = 0;

        switch (res) {
        case -EFAULT:
        case -EBADF:
        case -EINVAL:
        case -ENAMETOOLONG:
        case -ELOOP:
        case -EIO:
                return 0; /* replay ignores them */
        }
        switch (e->op) {
        case CA_TRACE_LOOKUP:
        case CA_TRACE_EXEC:
        case CA_TRACE_CHDIR:
                return trace_walk(t, e->path, enotdir, enoent);
        case CA_TRACE_CREATE:
        case CA_TRACE_MKDIR:
                if (res == 0 || res == -EEXIST)
                        return trace_walk(t, e->path, false, false);
                return trace_walk(t, e->path, true, enoent);
        case CA_TRACE_UNLINK:
        case CA_TRACE_RMDIR:
                return trace_walk(t, e->path, enotdir && e->op == CA_TRACE_UNLINK, enoent);
        case CA_TRACE_RENAME:
                r = trace_walk(t, e->path, enotdir, enoent);
                if (r == 0 && res == 0)
                        r = trace_walk(t, e->path2, false, false);
                return r;
        case CA_TRACE_LINK:
                r = trace_walk(t, e->path, enotdir, enoent);
                if (r == 0 && (res == 0 || res == -EEXIST))
                        r = trace_walk(t, e->path2, false, false);
                return r;
        case CA_TRACE_SYMLINK:
                if (res == 0 || res == -EEXIST)
                        return trace_walk(t, e->path2, false, false);
                return trace_walk(t, e->path2, true, enoent);
        default:
                return 0;
        }
}

static void trace_done(struct trace *t)
{
        free(t->str);
        free(t->ev);
        free(t->walks);
        free(t->comps);
        idents_done(&t->ids);
        for (size_t i = 0; i < t->ndirs; i++)
                free(t->dirs[i]);
        *t = (struct trace){ 0 };
}

static int trace_load(struct trace *t)
{
        struct ca_trace *rd = NULL;
        struct ca_trace_event e;
        bool fine_time = false;
        int r;

        r = idents_init(&t->ids);
        if (r < 0)
                return r;
        r = ca_trace_open_path(t->file, t->cwd[0] ? t->cwd : NULL, &rd);
        if (r < 0)
                return r;
        while ((r = ca_trace_next(rd, &e)) == 1) {
                struct levent *le;

                if (grow((void **)&t->ev, &t->ev_cap, t->nev + 1, sizeof(*t->ev)) < 0) {
                        r = -ENOMEM;
                        break;
                }
                le = &t->ev[t->nev];
                *le = (struct levent){ .time_usec = e.time_usec, .result = e.result,
                                       .pid = e.pid, .op = e.op, .path = SIZE_MAX,
                                       .path2 = SIZE_MAX, .walk0 = (uint32_t)t->nwalks };
                if (e.time_usec) {
                        if (!t->has_time || e.time_usec < t->t0_usec)
                                t->t0_usec = e.time_usec;
                        if (e.time_usec > t->t1_usec)
                                t->t1_usec = e.time_usec;
                        t->has_time = true;
                        if (e.time_usec % 1000000)
                                fine_time = true;
                }
                if (e.path && (r = trace_str(t, e.path, &le->path)) < 0)
                        break;
                if (e.path2 && (r = trace_str(t, e.path2, &le->path2)) < 0)
                        break;
                /* replay refuses an event without a path: nothing walked */
                if (le->path != SIZE_MAX && (r = trace_event_walks(t, le)) < 0)
                        break;
                t->nev++;
        }
        /* -t gives whole seconds: too coarse a clock for rotations of milliseconds */
        if (t->has_time && !fine_time)
                t->has_time = false;
        ca_trace_get_stats(rd, &t->rstats);
        ca_trace_free(rd);
        return r < 0 ? r : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* policies */

enum kind {
        P_NONE,
        P_TAIL,
        P_CURSOR,
        P_COUNTED,
        P_AGING,
        P_ORACLE,
};

struct dir_fig {
        uint64_t peak_negative, final_negative;
        long double sum_negative, sum_children;
};

struct policy {
        char name[32];
        enum kind kind;
        uint64_t rotate_usec;   /* aging on the trace-time clock */
        uint64_t rotate_events; /* aging on the event clock */
        struct ca_dcache *d;

        uint64_t next_rotation_usec;
        uint64_t rotations;
        uint64_t dead;          /* resident after their last use, now */
        bool recount;           /* something may have been killed: count exactly */

        /* figures */
        uint64_t peak, peak_negative, peak_dead;
        long double sum, sum_negative, dead_time;
        uint64_t lookups, hits, misses, extra;
        uint64_t reclaimed;     /* by the policy (or the oracle) */
        uint64_t watch_visits;  /* "watch every directory" at the end */
        uint64_t check_diffs;
        uint32_t *series;       /* the plot: highest resident per run->bucket steps */
        struct dir_fig dirs[DIRS_MAX];
        uint32_t hits_walk[WALKS_MAX];
        bool negative_walk[WALKS_MAX];
};

struct config {
        bool json, check, capture;
        const char *svg;
        const char *out;
        const char *cwd;
        uint64_t loop;
        size_t capture_names;
        uint64_t rotate_ms[POLICIES_MAX];
        size_t nrotate_ms;
        uint64_t rotate_events[POLICIES_MAX];
        size_t nrotate_events;
        bool rotate_events_given; /* event-clock rows even for logs with timestamps */
        struct ca_params age;
        uint32_t ratio;
        char *dirs[DIRS_MAX];
        size_t ndirs;
};

static uint64_t policy_reclaim_count(const struct ca_dcache_stats *s)
{
        return s->cursor_killed + s->counted_killed + s->aging_reclaimed;
}

static int policy_init(struct policy *p, const struct config *cfg)
{
        struct ca_dcache_params params = CA_DCACHE_PARAMS_DEFAULT;

        params.ratio = cfg->ratio;
        params.age = cfg->age;
        switch (p->kind) {
        case P_TAIL:
                params.tail_negative = true;
                break;
        case P_CURSOR:
                params.ratio_cursor = true;
                break;
        case P_COUNTED:
                params.ratio_counted = true;
                break;
        case P_AGING:
                params.aging = true;
                break;
        default:
                break;
        }
        p->series = calloc(SVG_BUCKETS + 1, sizeof(*p->series));
        if (!p->series)
                return -ENOMEM;
        return ca_dcache_new(&params, &p->d);
}

static void policy_done(struct policy *p)
{
        p->d = ca_dcache_free(p->d);
        free(p->series);
        p->series = NULL;
}

/* One rotation of an aging policy, aged to the end. */
static void policy_rotate(struct policy *p)
{
        ca_dcache_rotate(p->d);
        while (ca_dcache_age(p->d, 0, 0) > 0)
                ;
        p->rotations++;
}

/*
 * Look the components of @w up in @d as the walk will: returns how many leading ones are cached
 * and whether the last of those is negative. References are taken and dropped one at a time.
 */
static uint32_t probe_walk(struct ca_dcache *d, const struct trace *t, const struct walk *w,
                           bool *ret_negative)
{
        const char *path = t->str + w->path;
        struct ca_dentry *cur = ca_dcache_root(d), *held = NULL;
        uint32_t hits = 0;
        bool negative = false;

        for (uint32_t k = 0; k < w->n; k++) {
                const struct comp *c = &t->comps[w->comp0 + k];
                struct ca_dentry *child = ca_dcache_lookup(d, cur, path + c->start, c->len);

                ca_dcache_put(d, held);
                held = child;
                if (!child)
                        break;
                hits++;
                cur = child;
                if (!ca_dentry_positive(child)) {
                        negative = true;
                        break;
                }
        }
        ca_dcache_put(d, held);
        *ret_negative = negative;
        return hits;
}

/* The dentry at @path's first @len bytes, referenced, or NULL; for the oracle and --dir. */
static struct ca_dentry *lookup_prefix(struct ca_dcache *d, const char *path, size_t len)
{
        char buf[CA_TRACE_LINE_MAX + 1];
        struct ca_dentry *de;

        if (len > CA_TRACE_LINE_MAX)
                return NULL;
        memcpy(buf, path, len);
        buf[len] = '\0';
        if (ca_dcache_path_lookup(d, buf,
                                  CA_DCACHE_LOOKUP_NOCREATE | CA_DCACHE_LOOKUP_NEGATIVE |
                                          CA_DCACHE_LOOKUP_NOTOUCH,
                                  &de) < 0)
                return NULL;
        return de;
}

/* ------------------------------------------------------------------------------------------ */
/* counting the dead exactly: a walk of the whole model */

struct frame {
        const struct ca_dentry *de;
        uint32_t id;
};

struct recount {
        const struct idents *ids;
        const int64_t *last;
        int64_t now;
        struct frame *stack;
        size_t depth, cap;
        uint64_t dead;
        int error;
};

static enum ca_walk_ret recount_one(struct ca_dentry *de, void *userdata)
{
        struct recount *rc = userdata;
        const struct ca_dentry *parent = ca_dentry_parent(de);
        uint32_t id;
        const char *name;
        size_t len;

        if (parent == de) { /* the root */
                rc->depth = 0;
        } else {
                while (rc->depth > 0 && rc->stack[rc->depth - 1].de != parent)
                        rc->depth--;
                if (rc->depth == 0) {
                        rc->error = -EUCLEAN; /* a walk is preorder: never */
                        return CA_WALK_QUIT;
                }
        }
        if (parent == de)
                id = 0;
        else if (rc->stack[rc->depth - 1].id == NO_ID)
                id = NO_ID;
        else {
                name = ca_dentry_name(de, &len);
                id = idents_find(rc->ids, rc->stack[rc->depth - 1].id, name, len);
        }
        if (grow((void **)&rc->stack, &rc->cap, rc->depth + 1, sizeof(*rc->stack)) < 0) {
                rc->error = -ENOMEM;
                return CA_WALK_QUIT;
        }
        rc->stack[rc->depth++] = (struct frame){ .de = de, .id = id };
        /* a dentry no event walks (made some other way) is dead from the start */
        if (parent != de && (id == NO_ID || rc->last[id] <= rc->now))
                rc->dead++;
        return CA_WALK_CONTINUE;
}

static int recount_dead(struct ca_dcache *d, const struct trace *t, const int64_t *last,
                        int64_t now, struct frame **stack, size_t *cap, uint64_t *ret)
{
        struct recount rc = { .ids = &t->ids, .last = last, .now = now, .stack = *stack,
                              .cap = *cap };

        ca_dcache_walk(d, ca_dcache_root(d), recount_one, &rc);
        *stack = rc.stack;
        *cap = rc.cap;
        if (rc.error < 0)
                return rc.error;
        *ret = rc.dead;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the end-of-trace watch walk (tail_negative's figure) */

struct dirlist {
        struct ca_dentry **v;
        size_t n, cap;
        int error;
};

static enum ca_walk_ret collect_dir(struct ca_dentry *de, void *userdata)
{
        struct dirlist *l = userdata;

        if (!ca_dentry_positive(de) || !ca_dentry_is_dir(de))
                return CA_WALK_SKIP;
        if (grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)) < 0) {
                l->error = -ENOMEM;
                return CA_WALK_QUIT;
        }
        l->v[l->n++] = de;
        return CA_WALK_CONTINUE;
}

/* Children visited when every cached directory gets an inotify watch (and loses it again). */
static int watch_all(struct ca_dcache *d, uint64_t *ret)
{
        struct dirlist l = { 0 };
        uint64_t visits = 0;

        ca_dcache_walk(d, ca_dcache_root(d), collect_dir, &l);
        if (l.error < 0) {
                free(l.v);
                return l.error;
        }
        for (size_t i = 0; i < l.n; i++) {
                visits += ca_dcache_watch_dir(d, l.v[i], true);
                ca_dcache_watch_dir(d, l.v[i], false);
        }
        free(l.v);
        *ret = visits;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the replay */

struct dying {
        uint32_t walk, k; /* comps[walks[walk].comp0 + k] */
};

struct run {
        struct trace *t;
        struct policy p[POLICIES_MAX];
        size_t np;
        uint64_t steps;          /* events x loop */
        uint64_t failed;         /* events the model refused (once per event) */
        int64_t *last;           /* by identity: the last step walking it; -1 never */
        uint64_t span_usec;      /* first to last event, and one step more, per repetition */
        double seconds;          /* wall time of the replay */
        uint64_t bucket;         /* steps per point of the plot */
        /* scratch of the steps */
        struct dying *dy;        /* this step's last uses */
        size_t ndy, dy_cap;
        uint64_t *seen;          /* by identity: step + 1 when put in dy */
        struct frame *stack;     /* recount_dead()'s */
        size_t stack_cap;
};

static int run_policies(struct run *run, const struct config *cfg)
{
        size_t n = 0;

        run->p[n++] = (struct policy){ .name = "none", .kind = P_NONE };
        run->p[n++] = (struct policy){ .name = "tail_negative", .kind = P_TAIL };
        run->p[n++] = (struct policy){ .name = "ratio_cursor", .kind = P_CURSOR };
        run->p[n++] = (struct policy){ .name = "ratio_counted", .kind = P_COUNTED };
        /* rows on the trace's clock where it has one; on the event clock without, or asked for */
        if (run->t->has_time)
                for (size_t i = 0; i < cfg->nrotate_ms && n < POLICIES_MAX - 1; i++) {
                        struct policy *p = &run->p[n++];

                        *p = (struct policy){ .kind = P_AGING,
                                              .rotate_usec = cfg->rotate_ms[i] * 1000 };
                        snprintf(p->name, sizeof(p->name), "aging@%llums",
                                 (unsigned long long)cfg->rotate_ms[i]);
                }
        if (!run->t->has_time || cfg->rotate_events_given)
                for (size_t i = 0; i < cfg->nrotate_events && n < POLICIES_MAX - 1; i++) {
                        struct policy *p = &run->p[n++];

                        *p = (struct policy){ .kind = P_AGING,
                                              .rotate_events = cfg->rotate_events[i] };
                        snprintf(p->name, sizeof(p->name), "aging@%lluev",
                                 (unsigned long long)cfg->rotate_events[i]);
                }
        run->p[n++] = (struct policy){ .name = "oracle", .kind = P_ORACLE };
        run->np = n;
        for (size_t i = 0; i < n; i++) {
                int r = policy_init(&run->p[i], cfg);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* The first pass: the last step at which each identity is walked, over all repetitions. */
static int run_last_use(struct run *run)
{
        const struct trace *t = run->t;
        uint64_t base = (run->steps / (t->nev ? t->nev : 1) - 1) * t->nev;

        run->last = malloc(t->ids.n * sizeof(*run->last));
        if (!run->last)
                return -ENOMEM;
        for (size_t i = 0; i < t->ids.n; i++)
                run->last[i] = -1;
        run->last[0] = INT64_MAX; /* the root is pinned: never dead */
        /* a loop repeats the same walks: the last repetition has every last use */
        for (size_t k = 0; k < t->nev; k++) {
                const struct levent *e = &t->ev[k];

                for (uint32_t w = e->walk0; w < e->walk0 + e->nwalks; w++)
                        for (uint32_t c = 0; c < t->walks[w].n; c++)
                                run->last[t->comps[t->walks[w].comp0 + c].id] =
                                        (int64_t)(base + k);
        }
        return 0;
}

/* Rotate an aging policy for every period that ended before @vt (or the step @vi). */
static void run_rotations(struct run *run, struct policy *p, uint64_t vi, uint64_t vt)
{
        struct ca_dcache_stats before, after;
        unsigned n = 0;

        ca_dcache_stats(p->d, &before);
        if (p->rotate_events) {
                if (vi > 0 && vi % p->rotate_events == 0)
                        policy_rotate(p);
        } else {
                if (p->next_rotation_usec == 0)
                        p->next_rotation_usec = p->rotate_usec;
                if (vt >= p->next_rotation_usec) {
                        uint64_t due = (vt - p->next_rotation_usec) / p->rotate_usec + 1;

                        while (n < due && n < ROTATIONS_PER_GAP_MAX) {
                                policy_rotate(p);
                                n++;
                        }
                        p->next_rotation_usec += due * p->rotate_usec;
                }
        }
        ca_dcache_stats(p->d, &after);
        if (after.nr_dentry != before.nr_dentry)
                p->recount = true;
}

/* The oracle: kill the dentries this step used for the last time, deepest first. */
static uint64_t oracle_drop(struct policy *p, const struct trace *t, const struct dying *dy,
                            size_t ndy)
{
        struct ca_dcache_stats before, after;

        ca_dcache_stats(p->d, &before);
        for (size_t i = ndy; i-- > 0;) {
                const struct walk *w = &t->walks[dy[i].walk];
                const struct comp *c = &t->comps[w->comp0 + dy[i].k];
                struct ca_dentry *de = lookup_prefix(p->d, t->str + w->path, c->start + c->len);
                struct ca_dcache_dir_stats ds;

                if (!de)
                        continue;
                ca_dcache_dir_stats(p->d, de, &ds);
                if (ds.children)
                        ca_dcache_shrink_parent(p->d, de);
                ca_dcache_drop(p->d, de);
                ca_dcache_put(p->d, de);
        }
        ca_dcache_stats(p->d, &after);
        return before.nr_dentry - after.nr_dentry;
}

/* How many of @dy (from the walks starting at @walk0) are resident in @p's model. */
static uint64_t count_resident(struct policy *p, const struct trace *t, uint32_t walk0,
                               const struct dying *dy, size_t ndy)
{
        uint32_t hits[WALKS_MAX] = { 0 };
        bool probed[WALKS_MAX] = { false };
        uint64_t n = 0;

        for (size_t i = 0; i < ndy; i++) {
                uint32_t j = dy[i].walk - walk0;

                if (!probed[j]) {
                        bool negative;

                        hits[j] = probe_walk(p->d, t, &t->walks[dy[i].walk], &negative);
                        probed[j] = true;
                }
                if (dy[i].k < hits[j])
                        n++;
        }
        return n;
}

/* The dentries step @vi uses for the last time, each once, shallowest first, in run->dy. */
static int step_dying(struct run *run, const struct levent *le, uint64_t vi)
{
        const struct trace *t = run->t;

        run->ndy = 0;
        for (uint32_t w = le->walk0; w < le->walk0 + le->nwalks; w++)
                for (uint32_t k = 0; k < t->walks[w].n; k++) {
                        uint32_t id = t->comps[t->walks[w].comp0 + k].id;

                        if (run->last[id] != (int64_t)vi || run->seen[id] == vi + 1)
                                continue;
                        run->seen[id] = vi + 1;
                        if (grow((void **)&run->dy, &run->dy_cap, run->ndy + 1,
                                 sizeof(*run->dy)) < 0)
                                return -ENOMEM;
                        run->dy[run->ndy++] = (struct dying){ .walk = w, .k = k };
                }
        return 0;
}

/* Before the event: the rotations that fell due, then its lookups, hit or miss, per policy. */
static void step_probe(struct run *run, const struct levent *le, uint64_t vi, uint64_t vt)
{
        const struct trace *t = run->t;
        const struct policy *none = &run->p[0];

        for (size_t i = 0; i < run->np; i++) {
                struct policy *p = &run->p[i];

                if (p->kind == P_AGING)
                        run_rotations(run, p, vi, vt);
                for (uint32_t w = 0; w < le->nwalks; w++)
                        p->hits_walk[w] = probe_walk(p->d, t, &t->walks[le->walk0 + w],
                                                     &p->negative_walk[w]);
        }
        for (size_t i = 0; i < run->np; i++) {
                struct policy *p = &run->p[i];

                for (uint32_t w = 0; w < le->nwalks; w++) {
                        const struct walk *wk = &t->walks[le->walk0 + w];
                        uint32_t h = p->hits_walk[w];
                        /* a walk that meets a negative dentry before its end stops there */
                        bool ends = p->negative_walk[w] && wk->stop_negative;
                        uint32_t looked = ends ? h : wk->n;

                        p->lookups += looked;
                        p->hits += h;
                        p->misses += looked - h;
                        if (none->hits_walk[w] > h)
                                p->extra += none->hits_walk[w] - h;
                }
        }
}

/*
 * Replay @e into @p's model, let the oracle drop what it will never need again, and bring the
 * count of dead dentries up to date. Returns 0, 1 when the model refused the event, or -ENOMEM.
 */
static int step_apply(struct run *run, const struct config *cfg, struct policy *p,
                      const struct levent *le, const struct ca_trace_event *e, uint64_t vi)
{
        const struct trace *t = run->t;
        struct ca_dcache_stats before, after;
        int refused, r;

        ca_dcache_stats(p->d, &before);
        r = ca_dcache_replay(p->d, e);
        if (r == -ENOMEM)
                return r;
        refused = r < 0;
        ca_dcache_stats(p->d, &after);
        if (policy_reclaim_count(&after) != policy_reclaim_count(&before) ||
            after.replay_fixups != before.replay_fixups || le->op == CA_TRACE_UNLINK ||
            le->op == CA_TRACE_RMDIR || le->op == CA_TRACE_RENAME)
                p->recount = true;
        if (!p->recount && run->ndy)
                p->dead += count_resident(p, t, le->walk0, run->dy, run->ndy);
        if (p->kind == P_ORACLE && run->ndy) {
                uint64_t killed = oracle_drop(p, t, run->dy, run->ndy);

                p->reclaimed += killed;
                if (!p->recount)
                        p->dead -= killed < p->dead ? killed : p->dead;
        }
        if (p->recount || cfg->check) {
                uint64_t dead;

                r = recount_dead(p->d, t, run->last, (int64_t)vi, &run->stack, &run->stack_cap,
                                 &dead);
                if (r < 0)
                        return r;
                if (!p->recount && dead != p->dead && p->check_diffs++ == 0)
                        fprintf(stderr,
                                "bench-replay: %s, step %llu: %llu dead counted incrementally, "
                                "%llu by a walk\n",
                                p->name, (unsigned long long)vi, (unsigned long long)p->dead,
                                (unsigned long long)dead);
                p->dead = dead;
                p->recount = false;
        }
        return refused;
}

/* The figures after step @vi. */
static void step_sample(struct run *run, struct policy *p, uint64_t vi)
{
        const struct trace *t = run->t;
        struct ca_dcache_stats st;
        uint64_t resident, negative;
        uint32_t *point = &p->series[vi / run->bucket];

        ca_dcache_stats(p->d, &st);
        resident = st.nr_dentry - 1;
        negative = st.nr_negative_all;
        if (resident > p->peak)
                p->peak = resident;
        if (negative > p->peak_negative)
                p->peak_negative = negative;
        if (p->dead > p->peak_dead)
                p->peak_dead = p->dead;
        p->sum += resident;
        p->sum_negative += negative;
        p->dead_time += p->dead;
        /* a point of the plot is the highest value of its bucket: peaks stay visible */
        if (resident > *point)
                *point = resident > UINT32_MAX ? UINT32_MAX : (uint32_t)resident;
        for (size_t j = 0; j < t->ndirs; j++) {
                struct ca_dentry *dir = lookup_prefix(p->d, t->dirs[j], strlen(t->dirs[j]));
                struct ca_dcache_dir_stats ds = { 0 };

                if (dir) {
                        ca_dcache_dir_stats(p->d, dir, &ds);
                        ca_dcache_put(p->d, dir);
                }
                if (ds.negative > p->dirs[j].peak_negative)
                        p->dirs[j].peak_negative = ds.negative;
                p->dirs[j].sum_negative += ds.negative;
                p->dirs[j].sum_children += ds.children;
                p->dirs[j].final_negative = ds.negative;
        }
}

static int run_step(struct run *run, const struct config *cfg, uint64_t vi)
{
        const struct trace *t = run->t;
        const struct levent *le = &t->ev[vi % t->nev];
        uint64_t rep = vi / t->nev, vt = 0;
        struct ca_trace_event e = { 0 };
        bool refused = false;
        int r;

        if (t->has_time)
                vt = (le->time_usec > t->t0_usec ? le->time_usec - t->t0_usec : 0) +
                     rep * run->span_usec;
        r = step_dying(run, le, vi);
        if (r < 0)
                return r;
        step_probe(run, le, vi, vt);

        e.time_usec = le->time_usec;
        e.pid = le->pid;
        e.op = le->op;
        e.syscall = "";
        e.path = le->path == SIZE_MAX ? NULL : t->str + le->path;
        e.path2 = le->path2 == SIZE_MAX ? NULL : t->str + le->path2;
        e.result = le->result;

        for (size_t i = 0; i < run->np; i++) {
                r = step_apply(run, cfg, &run->p[i], le, &e, vi);
                if (r < 0)
                        return r;
                if (r > 0)
                        refused = true;
                step_sample(run, &run->p[i], vi);
        }
        if (refused)
                run->failed++;
        return 0;
}

static int run_trace(struct run *run, const struct config *cfg)
{
        struct trace *t = run->t;
        struct timespec t0, t1;
        int r;

        run->steps = t->nev * cfg->loop;
        run->bucket = run->steps / SVG_BUCKETS + 1;
        if (t->has_time && t->nev > 0) {
                uint64_t span = t->t1_usec - t->t0_usec;

                /* the next repetition starts one mean gap after the last event */
                run->span_usec = span + (t->nev > 1 ? span / (t->nev - 1) : 0) + 1;
        }
        r = run_policies(run, cfg);
        if (r < 0)
                return r;
        if (t->nev == 0)
                return 0;
        r = run_last_use(run);
        if (r < 0)
                return r;
        run->seen = calloc(t->ids.n, sizeof(*run->seen));
        if (!run->seen)
                return -ENOMEM;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (uint64_t vi = 0; vi < run->steps; vi++) {
                r = run_step(run, cfg, vi);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < run->np; i++) {
                struct policy *p = &run->p[i];
                struct ca_dcache_stats st;
                const char *reason;

                ca_dcache_stats(p->d, &st);
                if (p->kind != P_ORACLE)
                        p->reclaimed = policy_reclaim_count(&st);
                r = watch_all(p->d, &p->watch_visits);
                if (r < 0)
                        return r;
                if (cfg->check && ca_dcache_check(p->d, &reason) < 0) {
                        fprintf(stderr, "bench-replay: %s: model inconsistent: %s\n", p->name,
                                reason);
                        p->check_diffs++;
                }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        run->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        return 0;
}

static void run_done(struct run *run)
{
        for (size_t i = 0; i < run->np; i++)
                policy_done(&run->p[i]);
        free(run->last);
        free(run->dy);
        free(run->seen);
        free(run->stack);
        *run = (struct run){ 0 };
}

/* ------------------------------------------------------------------------------------------ */
/* output */

static double mean(long double sum, uint64_t steps)
{
        return steps ? (double)(sum / (long double)steps) : 0.0;
}

/* The share of the avoidable dead time (none's minus the oracle's) that @p removed. */
static double gap_closed(const struct run *run, const struct policy *p)
{
        long double none = run->p[0].dead_time, oracle = run->p[run->np - 1].dead_time;

        if (none - oracle <= 0)
                return 0.0;
        return (double)((none - p->dead_time) / (none - oracle));
}

static double ratio(long double a, long double b)
{
        return b > 0 ? (double)(a / b) : 0.0;
}

static const char *clock_desc(const struct run *run, char *buf, size_t size)
{
        if (run->t->has_time)
                snprintf(buf, size, "%.3f s from first to next repetition",
                         (double)run->span_usec / 1e6);
        else
                snprintf(buf, size, "none finer than 1 s (aging on the event clock)");
        return buf;
}

static void print_human(const struct run *runs, size_t nruns, const struct config *cfg)
{
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                const struct trace *t = run->t;
                const struct policy *none = &run->p[0], *oracle = &run->p[run->np - 1];
                char clk[96];

                printf("%s%s: %zu events%s, %llu steps, %zu dentries named, timestamps: %s, "
                       "%llu refused by the model; replayed in %.2f s\n",
                       ri ? "\n" : "", t->file, t->nev,
                       cfg->loop > 1 ? " (looped)" : "", (unsigned long long)run->steps,
                       t->ids.n - 1, clock_desc(run, clk, sizeof(clk)),
                       (unsigned long long)run->failed, run->seconds);
                printf("  %-15s %7s %9s %7s %9s %12s %6s %6s %8s %7s %6s %8s %5s %7s\n",
                       "policy", "peak", "mean", "peakneg", "meanneg", "dead(d*ev)", "/none",
                       "gap", "misses", "extra", "extra%", "reclaim", "rot", "watch");
                for (size_t i = 0; i < run->np; i++) {
                        const struct policy *p = &run->p[i];

                        printf("  %-15s %7llu %9.1f %7llu %9.1f %12.0Lf %6.3f %5.1f%% %8llu "
                               "%7llu %5.2f%% %8llu %5llu %7llu\n",
                               p->name, (unsigned long long)p->peak, mean(p->sum, run->steps),
                               (unsigned long long)p->peak_negative,
                               mean(p->sum_negative, run->steps), p->dead_time,
                               ratio(p->dead_time, none->dead_time),
                               100.0 * gap_closed(run, p), (unsigned long long)p->misses,
                               (unsigned long long)p->extra,
                               p->lookups ? 100.0 * (double)p->extra / (double)p->lookups : 0.0,
                               (unsigned long long)p->reclaimed,
                               (unsigned long long)p->rotations,
                               (unsigned long long)p->watch_visits);
                }
                printf("  vs none: mean resident");
                for (size_t i = 1; i < run->np; i++)
                        printf(" %s %.3f", run->p[i].name,
                               ratio(run->p[i].sum, none->sum));
                printf("\n  above the oracle: mean resident");
                for (size_t i = 0; i + 1 < run->np; i++)
                        printf(" %s %+.1f", run->p[i].name,
                               mean(run->p[i].sum, run->steps) - mean(oracle->sum, run->steps));
                printf("\n");
                if (t->ndirs == 0)
                        continue;
                printf("  under a directory: negative children peak/mean, all children mean\n");
                for (size_t j = 0; j < t->ndirs; j++)
                        printf("  %c = %s\n", (int)('A' + j), t->dirs[j]);
                printf("  %-15s", "policy");
                for (size_t j = 0; j < t->ndirs; j++)
                        printf(" %18c", (int)('A' + j));
                printf("\n");
                for (size_t i = 0; i < run->np; i++) {
                        printf("  %-15s", run->p[i].name);
                        for (size_t j = 0; j < t->ndirs; j++) {
                                const struct dir_fig *df = &run->p[i].dirs[j];

                                printf(" %5llu/%-5.0f %6.0f", (unsigned long long)df->peak_negative,
                                       mean(df->sum_negative, run->steps),
                                       mean(df->sum_children, run->steps));
                        }
                        printf("\n");
                }
        }
        printf("\npeak/mean: resident dentries (root excepted) over the event steps; neg: "
               "negative ones;\ndead(d*ev): sum over steps of dentries resident after their "
               "last use; /none: against none;\ngap: share of none's dead time above the "
               "oracle's that the policy removed;\nmisses/extra: component lookups that "
               "missed / that hit under none; reclaim: dentries killed\nby the policy; rot: "
               "rotations; watch: children visited watching every cached directory at the "
               "end.\n");
}

static void json_string(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;

                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

static void print_json(const struct run *runs, size_t nruns, const struct config *cfg)
{
        printf("{\"bench\":\"replay\",\"loop\":%llu,\"single_use_age\":%u,\"max_age\":%u,"
               "\"ratio\":%u,\"traces\":[",
               (unsigned long long)cfg->loop, cfg->age.single_use_age, cfg->age.max_age,
               cfg->ratio);
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                const struct trace *t = run->t;
                const struct policy *none = &run->p[0], *oracle = &run->p[run->np - 1];

                printf("%s{\"file\":", ri ? "," : "");
                json_string(stdout, t->file);
                printf(",\"events\":%zu,\"steps\":%llu,\"identities\":%zu,\"timestamps\":%s,"
                       "\"repetition_usec\":%llu,\"refused\":%llu,\"lines\":%llu,"
                       "\"seconds\":%.3f,\"policies\":[",
                       t->nev, (unsigned long long)run->steps, t->ids.n - 1,
                       t->has_time ? "true" : "false",
                       (unsigned long long)run->span_usec, (unsigned long long)run->failed,
                       (unsigned long long)t->rstats.lines, run->seconds);
                for (size_t i = 0; i < run->np; i++) {
                        const struct policy *p = &run->p[i];

                        printf("%s{\"name\":\"%s\",\"rotate_usec\":%llu,\"rotate_events\":%llu,"
                               "\"peak\":%llu,\"mean\":%.2f,\"peak_negative\":%llu,"
                               "\"mean_negative\":%.2f,\"peak_dead\":%llu,\"dead_time\":%.0Lf,"
                               "\"dead_vs_none\":%.4f,\"gap_closed\":%.4f,"
                               "\"mean_vs_none\":%.4f,\"mean_above_oracle\":%.2f,"
                               "\"lookups\":%llu,\"hits\":%llu,\"misses\":%llu,"
                               "\"extra_misses\":%llu,\"reclaimed\":%llu,\"rotations\":%llu,"
                               "\"watch_visits\":%llu,\"dirs\":[",
                               i ? "," : "", p->name, (unsigned long long)p->rotate_usec,
                               (unsigned long long)p->rotate_events,
                               (unsigned long long)p->peak, mean(p->sum, run->steps),
                               (unsigned long long)p->peak_negative,
                               mean(p->sum_negative, run->steps),
                               (unsigned long long)p->peak_dead, p->dead_time,
                               ratio(p->dead_time, none->dead_time), gap_closed(run, p),
                               ratio(p->sum, none->sum),
                               mean(p->sum, run->steps) - mean(oracle->sum, run->steps),
                               (unsigned long long)p->lookups, (unsigned long long)p->hits,
                               (unsigned long long)p->misses, (unsigned long long)p->extra,
                               (unsigned long long)p->reclaimed,
                               (unsigned long long)p->rotations,
                               (unsigned long long)p->watch_visits);
                        for (size_t j = 0; j < t->ndirs; j++) {
                                printf("%s{\"path\":", j ? "," : "");
                                json_string(stdout, t->dirs[j]);
                                printf(",\"peak_negative\":%llu,\"mean_negative\":%.2f,"
                                       "\"mean_children\":%.2f,\"final_negative\":%llu}",
                                       (unsigned long long)p->dirs[j].peak_negative,
                                       mean(p->dirs[j].sum_negative, run->steps),
                                       mean(p->dirs[j].sum_children, run->steps),
                                       (unsigned long long)p->dirs[j].final_negative);
                        }
                        printf("]}");
                }
                printf("]}");
        }
        printf("]}\n");
}

/* ------------------------------------------------------------------------------------------ */
/* the plot: resident dentries per step, one line per policy, one panel per trace */

static const char *svg_color(const struct run *run, size_t i)
{
        static const char *const aging[] = { "#0571b0", "#67a9cf", "#053061", "#92c5de" };
        size_t nth = 0;

        switch (run->p[i].kind) {
        case P_NONE:
                return "#555555";
        case P_TAIL:
                return "#999999";
        case P_CURSOR:
                return "#e66101";
        case P_COUNTED:
                return "#5e3c99";
        case P_ORACLE:
                return "#1a9641";
        case P_AGING:
        default:
                for (size_t j = 0; j < i; j++)
                        nth += run->p[j].kind == P_AGING;
                return aging[nth % (sizeof(aging) / sizeof(aging[0]))];
        }
}

/* A round tick step giving about @n ticks up to @max. */
static double nice_step(double max, int n)
{
        double raw = max / n, p = 1;

        if (raw <= 0)
                return 1;
        while (p * 10 <= raw)
                p *= 10;
        while (p > raw)
                p /= 10;
        if (raw / p >= 5)
                return 5 * p;
        if (raw / p >= 2)
                return 2 * p;
        return p;
}

static const char *basename_of(const char *path)
{
        const char *s = strrchr(path, '/');

        return s ? s + 1 : path;
}

static int write_svg(const char *file, const struct run *runs, size_t nruns)
{
        const int left = 70, right = 170, top = 30, bottom = 40;
        const int pw = SVG_WIDTH - left - right, ph = SVG_PANEL - top - bottom;
        FILE *f = fopen(file, "we");

        if (!f)
                return -errno;
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
                   "viewBox=\"0 0 %d %zu\" font-family=\"sans-serif\" font-size=\"12\">\n"
                   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                SVG_WIDTH, nruns * SVG_PANEL, SVG_WIDTH, nruns * SVG_PANEL);
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                int y0 = (int)ri * SVG_PANEL;
                uint64_t ymax = 1, steps = run->steps ? run->steps : 1;
                double ystep, xstep;

                for (size_t i = 0; i < run->np; i++)
                        if (run->p[i].peak > ymax)
                                ymax = run->p[i].peak;
                ystep = nice_step((double)ymax, 5);
                ymax = (uint64_t)(ystep * ((uint64_t)((double)ymax / ystep) + 1));
                xstep = nice_step((double)steps, 6);

                fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\">", left, y0 + 20);
                fprintf(f, "%s%s: resident dentries per event step</text>\n",
                        basename_of(run->t->file), run->steps > run->t->nev ? " (looped)" : "");
                fprintf(f, "<g stroke=\"#ddd\">\n");
                for (double v = 0; v <= (double)ymax + 1e-9; v += ystep) {
                        double y = y0 + top + ph - v / (double)ymax * ph;

                        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", left,
                                y, left + pw, y);
                }
                fprintf(f, "</g>\n<g text-anchor=\"end\">\n");
                for (double v = 0; v <= (double)ymax + 1e-9; v += ystep)
                        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.0f</text>\n", left - 6,
                                y0 + top + ph - v / (double)ymax * ph + 4, v);
                fprintf(f, "</g>\n<g text-anchor=\"middle\">\n");
                for (double v = 0; v <= (double)steps + 1e-9; v += xstep)
                        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n",
                                left + v / (double)steps * pw, y0 + top + ph + 16, v);
                fprintf(f, "<text x=\"%d\" y=\"%d\">event step</text>\n</g>\n", left + pw / 2,
                        y0 + top + ph + 32);
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                           "stroke=\"#333\"/>\n",
                        left, y0 + top, pw, ph);
                for (size_t i = 0; i < run->np; i++) {
                        const struct policy *p = &run->p[i];
                        const char *color = svg_color(run, i);
                        /*
                         * Policies often keep the same dentries: each line is drawn thinner than
                         * the one before, so that one on top of another leaves it visible; and
                         * tail_negative, which keeps what none keeps, is dashed.
                         */
                        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s "
                                   "points=\"",
                                color, 1.5 + 3.0 * (double)(run->np - 1 - i) / (double)run->np,
                                p->kind == P_TAIL ? " stroke-dasharray=\"6 4\"" : "");
                        for (uint64_t b = 0; b * run->bucket < run->steps; b++) {
                                uint64_t end = (b + 1) * run->bucket;

                                if (end > run->steps)
                                        end = run->steps;
                                fprintf(f, "%.1f,%.1f ",
                                        left + (double)end / (double)steps * pw,
                                        y0 + top + ph - (double)p->series[b] / (double)ymax * ph);
                        }
                        fprintf(f, "\"/>\n");
                        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                                   "stroke-width=\"3\"%s/>\n",
                                left + pw + 12, y0 + top + 10 + (int)i * 18, left + pw + 36,
                                y0 + top + 10 + (int)i * 18, color,
                                p->kind == P_TAIL ? " stroke-dasharray=\"6 4\"" : "");
                        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", left + pw + 42,
                                y0 + top + 14 + (int)i * 18, p->name);
                }
        }
        fprintf(f, "</svg>\n");
        if (ferror(f) | (fclose(f) != 0))
                return -EIO;
        return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* --capture: a real workload under strace, now */

static int mkdir_p(const char *path)
{
        char buf[PATH_MAX];
        size_t len = strlen(path);

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, path, len + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path) < 0 ? -1 : 0;
}

static int touch_file(const char *dir, const char *name)
{
        char path[PATH_MAX];
        int fd;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

/*
 * The captured workload, for sh in the work directory @work (mkdtemp's: no character the shell
 * would interpret). Paths are absolute, so that the log replays the same from anywhere:
 *   1. a python import;
 *   2. the stat storm: in a, the 50 files are looked up first, then the missing names; in b the
 *      same lookups in another order, the files spread over the storm; a PATH search (one
 *      missing command, one found) every 100 names;
 *   3. a scan, like a backup or a build checking timestamps: every file of c looked up once
 *      (stat, then access: one burst), the PATH search going on;
 *   4. the python import again.
 */
static char *capture_script(const char *work, size_t names, bool python)
{
        const char *py = python ? "/usr/bin/python3 -c 'import json, email.parser'\n" : "";
        char *s = NULL;

        if (asprintf(&s,
                     "W=%s\n"
                     "%s"
                     "path_search() { command -v nosuchtool; command -v gcc; }\n"
                     "j=0; while [ $j -lt %u ]; do [ -e $W/a/f$j ]; j=$((j+1)); done\n"
                     "n=%zu; every=$((n / %u)); i=0\n"
                     "while [ $i -lt $n ]; do\n"
                     "  [ -e $W/a/m$i ]\n"
                     "  [ -e $W/b/m$i ]\n"
                     "  if [ $((i %% every)) -eq 0 ]; then [ -e $W/b/f$((i / every)) ]; fi\n"
                     "  if [ $((i %% 100)) -eq 0 ]; then path_search; fi\n"
                     "  i=$((i+1))\n"
                     "done >/dev/null\n"
                     "i=0\n"
                     "while [ $i -lt $n ]; do\n"
                     "  [ -e $W/c/f$i ] && [ -r $W/c/f$i ]\n"
                     "  if [ $((i %% 100)) -eq 0 ]; then path_search; fi\n"
                     "  i=$((i+1))\n"
                     "done >/dev/null\n"
                     "%s",
                     work, py, CAPTURE_FILES, names, CAPTURE_FILES, py) < 0)
                return NULL;
        return s;
}

static int capture(const struct config *cfg, struct trace *t)
{
        char work[] = "/var/tmp/cacheage-lab-XXXXXX", sub[PATH_MAX], name[32], out[PATH_MAX];
        bool python = access("/usr/bin/python3", X_OK) == 0;
        char *script = NULL;
        pid_t pid;
        int status, r;

        r = mkdir_p(cfg->out);
        if (r < 0) {
                fprintf(stderr, "bench-replay: cannot create %s: %s\n", cfg->out, strerror(-r));
                return r;
        }
        /* strace runs in the work directory: the log's name must not be relative */
        if (!realpath(cfg->out, out))
                return -errno;
        if ((size_t)snprintf(t->file, sizeof(t->file), "%s/capture.strace", out) >=
            sizeof(t->file))
                return -ENAMETOOLONG;
        if (!mkdtemp(work))
                return -errno;
        for (const char *d = "abc"; *d; d++) {
                size_t files = *d == 'c' ? cfg->capture_names : CAPTURE_FILES;

                snprintf(sub, sizeof(sub), "%s/%c", work, *d);
                if (mkdir(sub, 0755) < 0) {
                        r = -errno;
                        goto out;
                }
                for (size_t i = 0; i < files; i++) {
                        snprintf(name, sizeof(name), "f%zu", i);
                        r = touch_file(sub, name);
                        if (r < 0)
                                goto out;
                }
                t->dirs[t->ndirs] = strdup(sub);
                if (!t->dirs[t->ndirs]) {
                        r = -ENOMEM;
                        goto out;
                }
                t->ndirs++;
        }
        script = capture_script(work, cfg->capture_names, python);
        if (!script) {
                r = -ENOMEM;
                goto out;
        }
        pid = fork();
        if (pid < 0) {
                r = -errno;
                goto out;
        }
        if (pid == 0) {
                char *const argv[] = { "strace", "-f", "-ttt", "-e", "trace=%file", "-o",
                                       t->file, "sh", "-c", script, NULL };
                /* a clean environment: a known PATH, no user's python path hooks */
                char home[PATH_MAX + 8];
                char *const envp[] = {
                        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                        "LANG=C.UTF-8", home, NULL,
                };
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                snprintf(home, sizeof(home), "HOME=%s", work);
                if (null >= 0) {
                        dup2(null, STDIN_FILENO);
                        dup2(null, STDOUT_FILENO);
                }
                if (chdir(work) < 0)
                        _exit(126);
                execvpe("strace", argv, envp);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0) {
                r = -errno;
                goto out;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-replay: strace of the workload failed (%s %d)\n",
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                r = -ECHILD;
                goto out;
        }
        r = 0;
out:
        free(script);
        nftw(work, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return r;
}

/* ------------------------------------------------------------------------------------------ */

static void usage(const char *argv0)
{
        printf("%s [options] [TRACE...]\n"
               "Replays strace logs (strace -f [-t|-tt|-ttt] -e trace=%%file) under each dentry\n"
               "reclaim policy and compares what they keep.\n"
               "  --capture             first record a real workload now, into --out\n"
               "  --out DIR             where --capture stores its log (default bench/out)\n"
               "  --names N             missing names per directory in the capture (%u)\n"
               "  --loop N              replay each trace N times in a row (a long-running\n"
               "                        program repeating its lookups)\n"
               "  --rotate-ms LIST      aging rows: ms of trace time per rotation (%s)\n"
               "  --rotate-events LIST  aging rows on the event clock (%s); forces that\n"
               "                        clock even for logs with timestamps\n"
               "  --single-use-age N, --max-age N   aging parameters (2, 8)\n"
               "  --ratio N             negatives per positive of the ratio policies (5)\n"
               "  --cwd DIR             working directory of the traced programs (default /)\n"
               "  --dir PATH            report negatives under this directory (repeatable)\n"
               "  --check               count the dead by a full walk at every step too\n"
               "  --json                one JSON object on stdout\n"
               "  --svg FILE            plot of resident dentries per step\n",
               argv0, CAPTURE_NAMES_DEFAULT, ROTATE_MS_DEFAULT, ROTATE_EVENTS_DEFAULT);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        unsigned long long v;
        char *end;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || *s == '-' || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_list(const char *s, uint64_t *v, size_t *n)
{
        char buf[256], *save = NULL;

        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        *n = 0;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (*n >= POLICIES_MAX - 6 || parse_u64(tok, 1, UINT32_MAX, &v[*n]) < 0)
                        return -EINVAL;
                (*n)++;
        }
        return *n ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
        enum {
                OPT_CAPTURE = 256,
                OPT_OUT,
                OPT_NAMES,
                OPT_LOOP,
                OPT_ROTATE_MS,
                OPT_ROTATE_EVENTS,
                OPT_SINGLE_USE_AGE,
                OPT_MAX_AGE,
                OPT_RATIO,
                OPT_CWD,
                OPT_DIR,
                OPT_CHECK,
                OPT_SVG,
        };
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "svg", required_argument, NULL, OPT_SVG },
                { "capture", no_argument, NULL, OPT_CAPTURE },
                { "out", required_argument, NULL, OPT_OUT },
                { "names", required_argument, NULL, OPT_NAMES },
                { "loop", required_argument, NULL, OPT_LOOP },
                { "rotate-ms", required_argument, NULL, OPT_ROTATE_MS },
                { "rotate-events", required_argument, NULL, OPT_ROTATE_EVENTS },
                { "single-use-age", required_argument, NULL, OPT_SINGLE_USE_AGE },
                { "max-age", required_argument, NULL, OPT_MAX_AGE },
                { "ratio", required_argument, NULL, OPT_RATIO },
                { "cwd", required_argument, NULL, OPT_CWD },
                { "dir", required_argument, NULL, OPT_DIR },
                { "check", no_argument, NULL, OPT_CHECK },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct config cfg = {
                .out = "bench/out",
                .loop = 1,
                .capture_names = CAPTURE_NAMES_DEFAULT,
                .age = CA_PARAMS_DEFAULT,
                .ratio = CA_DCACHE_RATIO_DEFAULT,
        };
        struct trace *traces = NULL;
        struct run *runs = NULL;
        size_t ntraces = 0;
        uint64_t v, check_diffs = 0;
        int c, r, status = 1;

        (void)parse_list(ROTATE_MS_DEFAULT, cfg.rotate_ms, &cfg.nrotate_ms);
        (void)parse_list(ROTATE_EVENTS_DEFAULT, cfg.rotate_events, &cfg.nrotate_events);
        while ((c = getopt_long(argc, argv, "jh", options, NULL)) >= 0) {
                r = 0;
                switch (c) {
                case 'j':
                        cfg.json = true;
                        break;
                case OPT_SVG:
                        cfg.svg = optarg;
                        break;
                case OPT_CAPTURE:
                        cfg.capture = true;
                        break;
                case OPT_OUT:
                        cfg.out = optarg;
                        break;
                case OPT_NAMES:
                        r = parse_u64(optarg, CAPTURE_FILES, 10000000, &v);
                        cfg.capture_names = (size_t)v;
                        break;
                case OPT_LOOP:
                        r = parse_u64(optarg, 1, 1000000, &cfg.loop);
                        break;
                case OPT_ROTATE_MS:
                        r = parse_list(optarg, cfg.rotate_ms, &cfg.nrotate_ms);
                        break;
                case OPT_ROTATE_EVENTS:
                        r = parse_list(optarg, cfg.rotate_events, &cfg.nrotate_events);
                        cfg.rotate_events_given = true;
                        break;
                case OPT_SINGLE_USE_AGE:
                        r = parse_u64(optarg, 1, CA_AGE_MAX, &v);
                        cfg.age.single_use_age = (uint32_t)v;
                        break;
                case OPT_MAX_AGE:
                        r = parse_u64(optarg, 1, CA_AGE_MAX, &v);
                        cfg.age.max_age = (uint32_t)v;
                        break;
                case OPT_RATIO:
                        r = parse_u64(optarg, 0, CA_DCACHE_RATIO_MAX, &v);
                        cfg.ratio = (uint32_t)v;
                        break;
                case OPT_CWD:
                        cfg.cwd = optarg;
                        break;
                case OPT_DIR:
                        if (cfg.ndirs >= DIRS_MAX || optarg[0] != '/')
                                r = -EINVAL;
                        else
                                cfg.dirs[cfg.ndirs++] = optarg;
                        break;
                case OPT_CHECK:
                        cfg.check = true;
                        break;
                case 'h':
                        usage(argv[0]);
                        return 0;
                default:
                        usage(argv[0]);
                        return 2;
                }
                if (r < 0) {
                        const char *name = "?";

                        for (const struct option *o = options; o->name; o++)
                                if (o->val == c)
                                        name = o->name;
                        fprintf(stderr, "bench-replay: bad value for --%s: %s\n", name, optarg);
                        return 2;
                }
        }
        if (ca_cache_validate_params(&cfg.age) < 0) {
                fprintf(stderr, "bench-replay: max_age must be at least single_use_age\n");
                return 2;
        }
        ntraces = (size_t)(argc - optind) + (cfg.capture ? 1 : 0);
        if (ntraces == 0) {
                usage(argv[0]);
                return 2;
        }
        traces = calloc(ntraces, sizeof(*traces));
        runs = calloc(ntraces, sizeof(*runs));
        if (!traces || !runs)
                goto out;
        for (size_t i = 0; i < ntraces; i++) {
                struct trace *t = &traces[i];
                bool captured = cfg.capture && i == 0;

                if (captured) {
                        r = capture(&cfg, t);
                        if (r < 0) {
                                fprintf(stderr, "bench-replay: capture failed: %s\n",
                                        strerror(-r));
                                goto out;
                        }
                } else {
                        snprintf(t->file, sizeof(t->file), "%s",
                                 argv[optind + (int)i - (cfg.capture ? 1 : 0)]);
                        if (cfg.cwd)
                                snprintf(t->cwd, sizeof(t->cwd), "%s", cfg.cwd);
                }
                for (size_t j = 0; j < cfg.ndirs && t->ndirs < DIRS_MAX; j++) {
                        t->dirs[t->ndirs] = strdup(cfg.dirs[j]);
                        if (!t->dirs[t->ndirs])
                                goto out;
                        t->ndirs++;
                }
                r = trace_load(t);
                if (r < 0) {
                        fprintf(stderr, "bench-replay: cannot read %s: %s\n", t->file,
                                strerror(-r));
                        goto out;
                }
                runs[i].t = t;
                r = run_trace(&runs[i], &cfg);
                if (r < 0) {
                        fprintf(stderr, "bench-replay: replay of %s failed: %s\n", t->file,
                                strerror(-r));
                        goto out;
                }
                for (size_t j = 0; j < runs[i].np; j++)
                        check_diffs += runs[i].p[j].check_diffs;
        }
        if (cfg.json)
                print_json(runs, ntraces, &cfg);
        else
                print_human(runs, ntraces, &cfg);
        if (cfg.svg) {
                r = write_svg(cfg.svg, runs, ntraces);
                if (r < 0) {
                        fprintf(stderr, "bench-replay: cannot write %s: %s\n", cfg.svg,
                                strerror(-r));
                        goto out;
                }
        }
        status = check_diffs ? 1 : 0;
        if (check_diffs)
                fprintf(stderr, "bench-replay: --check: %llu differences\n",
                        (unsigned long long)check_diffs);
out:
        for (size_t i = 0; runs && i < ntraces; i++)
                run_done(&runs[i]);
        for (size_t i = 0; traces && i < ntraces; i++)
                trace_done(&traces[i]);
        free(runs);
        free(traces);
        return status;
}
