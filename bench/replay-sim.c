/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replay lab's simulation: a trace loaded once, each event with the components it walks
 * (as ca_dcache_replay_plan() says the replay walks them), replayed event by event into one
 * dentry-cache model per policy, in lockstep, with the figures taken after every step (see
 * bench/replay.c for what they mean).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cacheage/replay.h"
#include "replay.h"

/*
 * Rotations run for one gap in the trace at most: enough to age every idle dentry away (a
 * directory goes max_age rotations after its last child); more would change nothing.
 */
#define ROTATIONS_PER_GAP_MAX 1024u
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

/*
 * The components ca_dcache_replay() walks for the event @e (@le, loaded), step by step as its
 * plan says (cacheage/replay.h): nothing for an event the replay ignores or refuses.
 */
static int trace_event_walks(struct trace *t, const struct levent *le,
                             const struct ca_trace_event *e)
{
        struct ca_dcache_replay_step steps[CA_DCACHE_REPLAY_STEPS_MAX];
        int n = ca_dcache_replay_plan(e, steps), r = 0;

        for (int i = 0; i < n && r == 0; i++) {
                const struct ca_dcache_replay_step *step = &steps[i];
                size_t off = step->path2 ? le->path2 : le->path;

                switch (step->action) {
                case CA_DCACHE_REPLAY_EXISTS:
                case CA_DCACHE_REPLAY_REMOVE:
                        r = trace_walk(t, off, false, false);
                        break;
                case CA_DCACHE_REPLAY_MISSING: /* a cached negative component ends the walk */
                        r = trace_walk(t, off, false, true);
                        break;
                case CA_DCACHE_REPLAY_PREFIX:
                        r = trace_walk(t, off, true, false);
                        break;
                case CA_DCACHE_REPLAY_RENAME: /* the source, then the target's lookup */
                        r = trace_walk(t, off, false, false);
                        if (r == 0)
                                r = trace_walk(t, le->path2, false, false);
                        break;
                }
        }
        return r;
}

void trace_done(struct trace *t)
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

/* ------------------------------------------------------------------------------------------ */
/* the ends of processes the log does not show */

#define PID_LIMIT (1u << 22)             /* the kernel's PID_MAX_LIMIT */

/* The pid N of a path "/proc/N" or "/proc/N/...", else 0. */
static uint32_t proc_pid_of(const char *path)
{
        unsigned long v;
        char *end;

        if (!path || strncmp(path, "/proc/", 6) != 0 || path[6] < '1' || path[6] > '9')
                return 0;
        v = strtoul(path + 6, &end, 10);
        if ((*end && *end != '/') || v >= PID_LIMIT)
                return 0;
        return (uint32_t)v;
}

struct pid_seen {
        uint32_t last;  /* the index of the last event that named it, + 1 */
        bool open;      /* named since its last EXIT */
};

struct added_exit {
        size_t after;   /* the event it follows */
        uint32_t pid;
};

static int cmp_added(const void *a, const void *b)
{
        const struct added_exit *x = a, *y = b;

        return (x->after > y->after) - (x->after < y->after);
}

static void name_pid(struct pid_seen *seen, uint32_t pid, size_t i)
{
        if (pid > 0 && pid < PID_LIMIT) {
                seen[pid].last = (uint32_t)i + 1;
                seen[pid].open = true;
        }
}

uint64_t trace_check_exits(const struct trace *t)
{
        uint32_t *named = calloc(PID_LIMIT, sizeof(*named)), *ended;
        uint64_t wrong = 0;

        ended = calloc(PID_LIMIT, sizeof(*ended));
        if (!named || !ended) {
                free(named);
                free(ended);
                return 1;
        }
        /* named and ended: the index of the last such event, + 1 */
        for (size_t i = 0; i < t->nev; i++) {
                const struct levent *e = &t->ev[i];
                uint32_t pids[3] = {
                        e->pid > 0 && (uint32_t)e->pid < PID_LIMIT ? (uint32_t)e->pid : 0,
                        proc_pid_of(e->path == SIZE_MAX ? NULL : t->str + e->path),
                        proc_pid_of(e->path2 == SIZE_MAX ? NULL : t->str + e->path2),
                };

                if (e->op == CA_TRACE_EXIT) {
                        if (pids[0])
                                ended[pids[0]] = (uint32_t)i + 1;
                        continue;
                }
                for (int k = 0; k < 3; k++)
                        if (pids[k])
                                named[pids[k]] = (uint32_t)i + 1;
        }
        for (uint32_t pid = 1; pid < PID_LIMIT; pid++)
                if (named[pid] && named[pid] > ended[pid]) {
                        if (wrong++ == 0)
                                fprintf(stderr, "bench-replay: %s: pid %u named after its "
                                        "last exit, or never exits\n", t->file, pid);
                }
        free(named);
        free(ended);
        return wrong;
}

/*
 * A process whose end the log does not show (strace -qq hides "+++ exited", and the processes
 * that ps or top read in /proc are not traced at all) ends right after the last event that
 * names it: as the caller, or in a path under /proc/N. That is when the kernel would have
 * taken /proc/N out of its cache at the latest known to the log; a process read by ps once
 * and never again was gone before the next ps, which is all a log can say. EXIT events are
 * added there, each after the event it follows, at that event's time.
 */
static int trace_add_exits(struct trace *t)
{
        struct pid_seen *seen = calloc(PID_LIMIT, sizeof(*seen));
        struct added_exit *add = NULL;
        struct levent *ev = NULL;
        size_t nadd = 0, cap = 0, j = 0, k = 0;
        int r = -ENOMEM;

        if (!seen)
                return -ENOMEM;
        for (size_t i = 0; i < t->nev; i++) {
                const struct levent *e = &t->ev[i];

                if (e->op == CA_TRACE_EXIT) {
                        t->exits_logged++;
                        if (e->pid > 0 && (uint32_t)e->pid < PID_LIMIT)
                                seen[e->pid].open = false;
                        continue;
                }
                name_pid(seen, e->pid > 0 ? (uint32_t)e->pid : 0, i);
                name_pid(seen, proc_pid_of(e->path == SIZE_MAX ? NULL : t->str + e->path), i);
                name_pid(seen, proc_pid_of(e->path2 == SIZE_MAX ? NULL : t->str + e->path2), i);
        }
        for (uint32_t pid = 1; pid < PID_LIMIT; pid++) {
                if (!seen[pid].open)
                        continue;
                if (grow((void **)&add, &cap, nadd + 1, sizeof(*add)) < 0)
                        goto out_free;
                add[nadd++] = (struct added_exit){ .after = seen[pid].last - 1, .pid = pid };
        }
        if (nadd == 0) {
                r = 0;
                goto out_free;
        }
        qsort(add, nadd, sizeof(*add), cmp_added);
        ev = calloc(t->nev + nadd, sizeof(*ev));
        if (!ev)
                goto out_free;
        for (size_t i = 0; i < t->nev; i++) {
                ev[j++] = t->ev[i];
                for (; k < nadd && add[k].after == i; k++) {
                        char path[32];
                        size_t off;

                        snprintf(path, sizeof(path), "/proc/%u", add[k].pid);
                        r = trace_str(t, path, &off);
                        if (r < 0)
                                goto out_free;
                        ev[j++] = (struct levent){ .time_usec = t->ev[i].time_usec,
                                                   .path = off, .path2 = SIZE_MAX,
                                                   .pid = (int)add[k].pid, .op = CA_TRACE_EXIT,
                                                   .walk0 = (uint32_t)t->nwalks };
                }
        }
        free(t->ev);
        t->ev = ev;
        ev = NULL;
        t->nev = j;
        t->ev_cap = j;
        t->exits_added = nadd;
        r = 0;
out_free:
        free(ev);
        free(add);
        free(seen);
        return r;
}

/*
 * How long the longest "round" of the trace was: of the programs executed more than once
 * (a successful exec of one path), the longest time one took to run again. What a session
 * does again comes back within it; what did not come back within it by the end of the trace
 * may still have come back had the session gone on (bench/replay.c: the horizon).
 */
static int trace_rounds(struct trace *t)
{
        uint64_t *last = calloc(t->ids.n, sizeof(*last)); /* time + 1 of the last exec */

        if (!last)
                return -ENOMEM;
        for (size_t i = 0; i < t->nev; i++) {
                const struct levent *e = &t->ev[i];
                const struct walk *w;
                uint32_t id;

                if (e->op != CA_TRACE_EXEC || e->result != 0 || e->nwalks == 0 || !e->time_usec)
                        continue;
                w = &t->walks[e->walk0];
                id = t->comps[w->comp0 + w->n - 1].id;
                if (last[id] && e->time_usec + 1 > last[id] &&
                    e->time_usec + 1 - last[id] > t->round_usec)
                        t->round_usec = e->time_usec + 1 - last[id];
                last[id] = e->time_usec + 1;
        }
        free(last);
        return 0;
}

int trace_load(struct trace *t)
{
        struct ca_trace *rd = NULL;
        struct ca_trace_event e;
        bool fine_time = false;
        FILE *xz = NULL;
        int r;

        r = idents_init(&t->ids);
        if (r < 0)
                return r;
        if (xz_named(t->file)) {
                r = xz_fopen(t->file, &xz);
                if (r < 0)
                        return r;
                r = ca_trace_open_file(xz, t->cwd[0] ? t->cwd : NULL, &rd);
        } else {
                r = ca_trace_open_path(t->file, t->cwd[0] ? t->cwd : NULL, &rd);
        }
        if (r < 0) {
                if (xz)
                        fclose(xz);
                return r;
        }
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
                r = trace_event_walks(t, le, &e);
                if (r < 0)
                        break;
                t->nev++;
        }
        /* -t gives whole seconds: too coarse a clock for rotations of milliseconds */
        if (t->has_time && !fine_time)
                t->has_time = false;
        ca_trace_get_stats(rd, &t->rstats);
        ca_trace_free(rd);
        if (xz)
                fclose(xz);
        if (r < 0)
                return r;
        r = trace_add_exits(t);
        return r < 0 ? r : trace_rounds(t);
}

/* ------------------------------------------------------------------------------------------ */
/* policies */

static uint64_t policy_reclaim_count(const struct ca_dcache_stats *s)
{
        return s->cursor_killed + s->counted_killed + s->aging_reclaimed;
}

static int policy_init(struct policy *p, const struct config *cfg)
{
        struct ca_dcache_params params = CA_DCACHE_PARAMS_DEFAULT;
        int r;

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
                if (p->grid) {
                        params.age.single_use_age = p->single_use_age;
                        params.age.max_age = p->max_age;
                        if (!params.age.refault_window)
                                params.age.refault_window = CA_REFAULT_WINDOW_DEFAULT;
                }
                if (p->aging == AGING_FIXED)
                        params.age.refault_window = 0;
                params.age.auto_ages = p->aging == AGING_AUTO;
                break;
        default:
                break;
        }
        p->series = calloc(SVG_BUCKETS + 1, sizeof(*p->series));
        if (!p->series)
                return -ENOMEM;
        r = ca_dcache_new(&params, &p->d);
        return r < 0 ? r : ca_replay_new(p->d, &p->r);
}

static void policy_done(struct policy *p)
{
        p->r = ca_replay_free(p->r);
        p->d = ca_dcache_free(p->d);
        free(p->w_dead);
        free(p->w_resident);
        free(p->w_lookups);
        free(p->w_extra);
        free(p->ages);
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

static const char *const aging_names[_AGING_MAX] = {
        [AGING_FIXED] = "aging",
        [AGING_REFAULT] = "aging-rf",
        [AGING_AUTO] = "aging-auto",
};

/*
 * --frontier: fixed ages over a grid, without and with the refault memory, at each interval on
 * the trace's clock: single_use_age from 1 to 40 rotations, max_age 1 to 4 times that. Dense
 * enough that a configuration off the frontier meets a row that does better on both counts.
 */
static size_t grid_rows(struct run *run, const struct config *cfg, size_t n)
{
        static const uint32_t su[] = { 1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 32, 40 };
        static const uint32_t times2[] = { 2, 3, 4, 6, 8 }; /* max_age / single_use_age * 2 */

        for (size_t i = 0; i < cfg->nrotate_ms; i++)
                for (enum aging a = AGING_FIXED; a <= AGING_REFAULT; a++)
                        for (size_t j = 0; j < sizeof(su) / sizeof(su[0]); j++)
                                for (size_t k = 0; k < sizeof(times2) / sizeof(times2[0]); k++) {
                                        uint32_t max = su[j] * times2[k] / 2;
                                        struct policy *p;

                                        if (k > 0 && max == su[j] * times2[k - 1] / 2)
                                                continue; /* 1 * 3 / 2: 1/1 again */
                                        if (n >= POLICIES_MAX || max > CA_AGE_MAX)
                                                return n;
                                        p = &run->p[n++];
                                        *p = (struct policy){
                                                .kind = P_AGING, .aging = a, .grid = true,
                                                .single_use_age = su[j], .max_age = max,
                                                .rotate_usec = cfg->rotate_ms[i] * 1000 };
                                        snprintf(p->name, sizeof(p->name), "%s@%llums:%u/%u",
                                                 aging_names[a],
                                                 (unsigned long long)cfg->rotate_ms[i], su[j],
                                                 max);
                                }
        return n;
}

static int run_policies(struct run *run, const struct config *cfg)
{
        size_t n = 0;

        run->p[n++] = (struct policy){ .name = "none", .kind = P_NONE };
        run->p[n++] = (struct policy){ .name = "tail_negative", .kind = P_TAIL };
        run->p[n++] = (struct policy){ .name = "ratio_cursor", .kind = P_CURSOR };
        run->p[n++] = (struct policy){ .name = "ratio_counted", .kind = P_COUNTED };
        /*
         * Rows on the trace's clock where it has one; on the event clock without, or asked for.
         * Each interval gives the aging variants side by side (auto with --ages auto only).
         */
        for (enum aging a = 0; a < _AGING_MAX; a++) {
                if (a == AGING_AUTO && !cfg->ages_auto)
                        continue;
                if (a == AGING_REFAULT && !cfg->age.refault_window)
                        continue;
                if (run->t->has_time)
                        for (size_t i = 0; i < cfg->nrotate_ms && n < POLICIES_MAX - 1; i++) {
                                struct policy *p = &run->p[n++];

                                *p = (struct policy){ .kind = P_AGING, .aging = a,
                                                      .rotate_usec = cfg->rotate_ms[i] * 1000 };
                                snprintf(p->name, sizeof(p->name), "%s@%llums", aging_names[a],
                                         (unsigned long long)cfg->rotate_ms[i]);
                        }
                if (!run->t->has_time || cfg->rotate_events_given)
                        for (size_t i = 0; i < cfg->nrotate_events && n < POLICIES_MAX - 1; i++) {
                                struct policy *p = &run->p[n++];

                                *p = (struct policy){ .kind = P_AGING, .aging = a,
                                                      .rotate_events = cfg->rotate_events[i] };
                                snprintf(p->name, sizeof(p->name), "%s@%lluev", aging_names[a],
                                         (unsigned long long)cfg->rotate_events[i]);
                        }
        }
        run->p[n++] = (struct policy){ .name = "oracle", .kind = P_ORACLE };
        run->np = n;
        /* the grid after the oracle: the table's rows are run->p[0 .. np) */
        if (cfg->frontier && run->t->has_time)
                n = grid_rows(run, cfg, n);
        run->nall = n;
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

/*
 * Bring @p's figures over time up to @t: what it held since its last change (p->t_mark) held
 * until @t, counted up to the horizon (run->t_cut), and per second for the windows.
 */
static void integrate(const struct run *run, struct policy *p, uint64_t t)
{
        uint64_t a = p->t_mark, b = t < run->t_cut ? t : run->t_cut;

        if (t <= p->t_mark)
                return;
        p->t_mark = t;
        if (b <= a)
                return;
        p->tw_dead += (long double)p->dead * (long double)(b - a);
        p->tw_resident += (long double)p->resident * (long double)(b - a);
        for (uint64_t s = a / 1000000; run->nsec && s * 1000000 < b && s < run->nsec; s++) {
                uint64_t lo = s * 1000000 > a ? s * 1000000 : a;
                uint64_t hi = (s + 1) * 1000000 < b ? (s + 1) * 1000000 : b;

                p->w_dead[s] += (double)p->dead * (double)(hi - lo);
                p->w_resident[s] += (double)p->resident * (double)(hi - lo);
        }
}

/* What the model holds now, and the dead among it, counted by a walk (after step @vi). */
static int policy_recount(struct run *run, struct policy *p, int64_t vi)
{
        struct ca_dcache_stats st;
        int r = recount_dead(p->d, run->t, run->last, vi, &run->stack, &run->stack_cap, &p->dead);

        ca_dcache_stats(p->d, &st);
        p->resident = st.nr_dentry - 1;
        return r;
}

/* aging-auto: note the ages in force when a rotation changed them. */
static int note_ages(struct policy *p, uint64_t vi, uint64_t t)
{
        struct ca_stats st;
        struct age_point *last = p->nages ? &p->ages[p->nages - 1] : NULL;

        if (p->aging != AGING_AUTO)
                return 0;
        ca_cache_stats(ca_dcache_cache(p->d), &st);
        if (last && last->single_use_age == st.current_single_use_age &&
            last->max_age == st.current_max_age)
                return 0;
        if (grow((void **)&p->ages, &p->ages_cap, p->nages + 1, sizeof(*p->ages)) < 0)
                return -ENOMEM;
        p->ages[p->nages++] = (struct age_point){ .rotation = p->rotations, .step = vi,
                                                  .t_usec = t,
                                                  .single_use_age =
                                                          (uint32_t)st.current_single_use_age,
                                                  .max_age = (uint32_t)st.current_max_age };
        return 0;
}

/*
 * One rotation of an aging policy at @t, before step @vi: what it held until then counted,
 * the dead counted again if it reclaimed anything.
 */
static int rotate_at(struct run *run, struct policy *p, uint64_t vi, uint64_t t)
{
        struct ca_dcache_stats before, after;

        integrate(run, p, t);
        ca_dcache_stats(p->d, &before);
        policy_rotate(p);
        ca_dcache_stats(p->d, &after);
        if (after.nr_dentry != before.nr_dentry) {
                int r = policy_recount(run, p, (int64_t)vi - 1);

                if (r < 0)
                        return r;
        }
        return note_ages(p, vi, t);
}

/* Rotate an aging policy for every period that ended before @vt (or the step @vi). */
static int run_rotations(struct run *run, struct policy *p, uint64_t vi, uint64_t vt)
{
        unsigned n = 0;
        int r = 0;

        if (p->rotate_events) {
                if (vi > 0 && vi % p->rotate_events == 0)
                        r = rotate_at(run, p, vi, run->timed ? vt : vi);
        } else {
                if (p->next_rotation_usec == 0)
                        p->next_rotation_usec = p->rotate_usec;
                if (vt >= p->next_rotation_usec) {
                        uint64_t due = (vt - p->next_rotation_usec) / p->rotate_usec + 1;

                        /* the rest of a long gap changes nothing: at its start, together */
                        while (n < due && n < ROTATIONS_PER_GAP_MAX && r == 0) {
                                r = rotate_at(run, p, vi,
                                              p->next_rotation_usec + n * p->rotate_usec);
                                n++;
                        }
                        p->next_rotation_usec += due * p->rotate_usec;
                }
        }
        return r;
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

/*
 * Before the event at @vt (its clock: time, or the step): the rotations that fell due, then its
 * lookups, hit or miss, per policy.
 */
static int step_probe(struct run *run, const struct levent *le, uint64_t vi, uint64_t vt)
{
        const struct trace *t = run->t;
        const struct policy *none = &run->p[0];
        bool counted = vt <= run->t_cut;
        size_t sec = vt / 1000000;

        for (size_t i = 0; i < run->nall; i++) {
                struct policy *p = &run->p[i];

                if (p->kind == P_AGING) {
                        int r = run_rotations(run, p, vi, run->timed ? vt : 0);

                        if (r < 0)
                                return r;
                }
                for (uint32_t w = 0; w < le->nwalks; w++)
                        p->hits_walk[w] = probe_walk(p->d, t, &t->walks[le->walk0 + w],
                                                     &p->negative_walk[w]);
        }
        for (size_t i = 0; i < run->nall; i++) {
                struct policy *p = &run->p[i];

                for (uint32_t w = 0; w < le->nwalks; w++) {
                        const struct walk *wk = &t->walks[le->walk0 + w];
                        uint32_t h = p->hits_walk[w];
                        /* a walk that meets a negative dentry before its end stops there */
                        bool ends = p->negative_walk[w] && wk->stop_negative;
                        uint32_t looked = ends ? h : wk->n;
                        uint32_t extra = none->hits_walk[w] > h ? none->hits_walk[w] - h : 0;

                        p->lookups += looked;
                        p->hits += h;
                        p->misses += looked - h;
                        p->extra += extra;
                        if (counted) {
                                p->lookups_h += looked;
                                p->extra_h += extra;
                        }
                        if (run->nsec && sec < run->nsec) {
                                p->w_lookups[sec] += looked;
                                p->w_extra[sec] += extra;
                        }
                }
        }
        return 0;
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
        r = ca_replay_event(p->r, e);
        if (r == -ENOMEM)
                return r;
        refused = r < 0;
        ca_dcache_stats(p->d, &after);
        if (policy_reclaim_count(&after) != policy_reclaim_count(&before) ||
            after.replay_fixups != before.replay_fixups || le->op == CA_TRACE_UNLINK ||
            le->op == CA_TRACE_RMDIR || le->op == CA_TRACE_RENAME || le->op == CA_TRACE_EXIT)
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
        p->resident = resident;
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
        r = step_probe(run, le, vi, run->timed ? vt : vi);
        if (r < 0)
                return r;

        e.time_usec = le->time_usec;
        e.pid = le->pid;
        e.op = le->op;
        e.syscall = "";
        e.path = le->path == SIZE_MAX ? NULL : t->str + le->path;
        e.path2 = le->path2 == SIZE_MAX ? NULL : t->str + le->path2;
        e.result = le->result;

        for (size_t i = 0; i < run->nall; i++) {
                integrate(run, &run->p[i], run->timed ? vt : vi);
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

/*
 * The clock of the figures over time: the trace's time where it has one (else the steps), the
 * end, the horizon (--horizon, or the longest round: with --loop at least a repetition; at
 * most half the trace), and the seconds for the windows.
 */
static int run_clock(struct run *run, const struct config *cfg)
{
        const struct trace *t = run->t;
        uint64_t horizon;

        run->timed = t->has_time;
        if (!run->timed) {
                run->t_end = run->steps - 1;
                run->horizon = 0; /* no time: the whole trace, no windows */
                run->t_cut = run->t_end;
                return 0;
        }
        run->t_end = (t->t1_usec - t->t0_usec) + (cfg->loop - 1) * run->span_usec;
        if (cfg->horizon_s >= 0)
                horizon = (uint64_t)(cfg->horizon_s * 1e6);
        else {
                horizon = t->round_usec;
                if (cfg->loop > 1 && horizon < run->span_usec)
                        horizon = run->span_usec;
                if (horizon > run->t_end / 2)
                        horizon = run->t_end / 2;
        }
        run->horizon = horizon < run->t_end ? horizon : run->t_end;
        run->t_cut = run->t_end - run->horizon;
        run->nsec = (size_t)(run->t_end / 1000000) + 1;
        for (size_t i = 0; i < run->nall; i++) {
                struct policy *p = &run->p[i];

                p->w_dead = calloc(run->nsec, sizeof(*p->w_dead));
                p->w_resident = calloc(run->nsec, sizeof(*p->w_resident));
                p->w_lookups = calloc(run->nsec, sizeof(*p->w_lookups));
                p->w_extra = calloc(run->nsec, sizeof(*p->w_extra));
                if (!p->w_dead || !p->w_resident || !p->w_lookups || !p->w_extra)
                        return -ENOMEM;
        }
        return 0;
}

int run_trace(struct run *run, const struct config *cfg)
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
        r = run_clock(run, cfg);
        if (r < 0)
                return r;
        r = run_last_use(run);
        if (r < 0)
                return r;
        run->seen = calloc(t->ids.n, sizeof(*run->seen));
        if (!run->seen)
                return -ENOMEM;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (size_t i = 0; i < run->nall; i++) {
                r = note_ages(&run->p[i], 0, 0); /* where auto starts: the limits */
                if (r < 0)
                        return r;
        }
        for (uint64_t vi = 0; vi < run->steps; vi++) {
                r = run_step(run, cfg, vi);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < run->nall; i++) {
                struct policy *p = &run->p[i];
                struct ca_dcache_stats st;
                const char *reason;

                integrate(run, p, run->t_end);
                ca_dcache_stats(p->d, &st);
                if (p->kind != P_ORACLE)
                        p->reclaimed = policy_reclaim_count(&st);
                if (p->kind == P_AGING) {
                        ca_cache_stats(ca_dcache_cache(p->d), &p->age_stats);
                        ca_cache_refault_histogram(ca_dcache_cache(p->d), p->refault_hist);
                }
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

void run_done(struct run *run)
{
        for (size_t i = 0; i < run->nall; i++)
                policy_done(&run->p[i]);
        free(run->last);
        free(run->dy);
        free(run->seen);
        free(run->stack);
        *run = (struct run){ 0 };
}

