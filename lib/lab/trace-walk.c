/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The strace reader's path walk and what it knows about names: capture facts (loaded from a
 * capture information file, probed on the live system, or learned from the log), walked the way
 * link_path_walk() walks, and the information file itself.
 *
 * The walk keeps the canonical prefix it has reached and, per depth, the prefix's length and
 * hash (hash_name() over its components, extended one at a time), so ".." is a pop
 * and each component costs one hash probe when there are facts, none when there are not. A
 * link pushes its text as a new segment in front of what is left, as nd->stack does.
 *
 * Facts are about the system when the traced program ended (that is when they are probed);
 * what the log itself does to a name from then on (a create, an unlink, a rename, a readlink
 * result) overrides them in `now`, while `probed` keeps what the information file says.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace-internal.h"

#define HASH_ROOT 0x2545f4914f6cdd1dull /* of "/" */
#define MAGIC_MAX 4              /* /proc/self links followed in one walk */
#define FACT_LOAD 1              /* facts per bucket before the table doubles */
#define INFO_HEADER "# cacheage capture information 1"

/*
 * The hash of a canonical path, one component at a time, so a walk extends its prefix's hash
 * by each name it appends: eight bytes a step, mixed as murmur3's finaliser does.
 */
static uint64_t hash_name(uint64_t h, const char *s, size_t n)
{
        uint64_t v;

        h ^= n * 0x9e3779b97f4a7c15ull;
        for (; n >= 8; s += 8, n -= 8) {
                memcpy(&v, s, 8);
                h = (h ^ v) * 0xff51afd7ed558ccdull;
                h ^= h >> 32;
        }
        v = 0;
        switch (n) { /* the tail, without a loop: names are short */
        case 7: v |= (uint64_t)(unsigned char)s[6] << 48; __attribute__((fallthrough));
        case 6: v |= (uint64_t)(unsigned char)s[5] << 40; __attribute__((fallthrough));
        case 5: v |= (uint64_t)(unsigned char)s[4] << 32; __attribute__((fallthrough));
        case 4: v |= (uint64_t)(unsigned char)s[3] << 24; __attribute__((fallthrough));
        case 3: v |= (uint64_t)(unsigned char)s[2] << 16; __attribute__((fallthrough));
        case 2: v |= (uint64_t)(unsigned char)s[1] << 8; __attribute__((fallthrough));
        case 1: v |= (uint64_t)(unsigned char)s[0]; break;
        default: break;
        }
        h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
        return h ^ (h >> 29);
}

static uint64_t hash_path(const char *path, size_t len)
{
        const char *p = path, *end = path + len;
        uint64_t h = HASH_ROOT;

        while (p < end) {
                const char *c;

                while (p < end && *p == '/')
                        p++;
                for (c = p; p < end && *p != '/'; p++)
                        ;
                if (p > c)
                        h = hash_name(h, c, (size_t)(p - c));
        }
        return h;
}

/* The bit of fdepths for a name @depth components deep. */
static uint64_t depth_bit(size_t depth)
{
        return 1ull << (depth < 63 ? depth : 63);
}

/* Bloom filter of the facts' last names, for a walk that does not hash every prefix. */
static bool maybe_name(const struct ca_trace *t, const char *name, size_t n)
{
        uint64_t h = hash_name(0, name, n);

        return t->nbloom[h >> 62] & (1ull << ((h >> 56) & 63));
}

/* Bloom filter of the facts' hashes: most names have none, and say so in one load. */
static bool maybe_fact(const struct ca_trace *t, uint64_t hash)
{
        return t->fbloom[hash >> 62] & (1ull << ((hash >> 56) & 63));
}

/* ---- the fact table ---- */

bool trace_facts_active(const struct ca_trace *t)
{
        return t->nfacts > 0 || (t->options & CA_TRACE_PROBE);
}

static enum fact_kind fact_now(const struct fact *f)
{
        return (enum fact_kind)f->now;
}

static struct fact *fact_find(const struct ca_trace *t, const char *path, size_t len,
                              uint64_t hash)
{
        if (!t->fnbuckets)
                return NULL;
        for (struct fact *f = t->fbuckets[hash & (t->fnbuckets - 1)]; f; f = f->next)
                if (f->hash == hash && f->len == len && memcmp(f->path, path, len) == 0)
                        return f;
        return NULL;
}

static bool facts_grow(struct ca_trace *t)
{
        size_t n = t->fnbuckets ? 2 * t->fnbuckets : 1024;
        struct fact **b;

        if (!trace_charge(t, n * sizeof(*b), true))
                return false;
        b = calloc(n, sizeof(*b));
        if (!b) {
                trace_uncharge(t, n * sizeof(*b), true);
                return false;
        }
        for (size_t i = 0; i < t->fnbuckets; i++) {
                struct fact *f = t->fbuckets[i];

                while (f) {
                        struct fact *next = f->next;

                        f->next = b[f->hash & (n - 1)];
                        b[f->hash & (n - 1)] = f;
                        f = next;
                }
        }
        trace_uncharge(t, t->fnbuckets * sizeof(*b), true);
        free(t->fbuckets);
        t->fbuckets = b;
        t->fnbuckets = n;
        return true;
}

/* A new unknown fact for @path (not in the table). NULL: no budget or memory. */
static struct fact *fact_insert(struct ca_trace *t, const char *path, size_t len, uint64_t hash)
{
        size_t size = sizeof(struct fact) + len + 1;
        struct fact *f;

        if (t->nfacts >= t->fnbuckets * FACT_LOAD && !facts_grow(t) && !t->fnbuckets)
                goto out_dropped;
        if (!trace_charge(t, size, true))
                goto out_dropped;
        f = calloc(1, size);
        if (!f) {
                trace_uncharge(t, size, true);
                goto out_dropped;
        }
        f->hash = hash;
        f->len = len;
        memcpy(f->path, path, len);
        f->path[len] = '\0';
        f->next = t->fbuckets[hash & (t->fnbuckets - 1)];
        t->fbuckets[hash & (t->fnbuckets - 1)] = f;
        t->fbloom[hash >> 62] |= 1ull << ((hash >> 56) & 63);
        {
                size_t depth = 0, last = 0;
                uint64_t nh;

                for (size_t i = 0; i < len; i++)
                        if (path[i] == '/') {
                                depth++;
                                last = i + 1;
                        }
                t->fdepths |= depth_bit(depth);
                nh = hash_name(0, path + last, len - last);
                t->nbloom[nh >> 62] |= 1ull << ((nh >> 56) & 63);
        }
        t->nfacts++;
        t->stats.facts = t->nfacts;
        return f;

out_dropped:
        t->stats.state_dropped++;
        return NULL;
}

struct fact *trace_fact_get(struct ca_trace *t, const char *path, size_t len, bool create)
{
        uint64_t hash = hash_path(path, len);
        struct fact *f = fact_find(t, path, len, hash);

        if (!f && create)
                f = fact_insert(t, path, len, hash);
        return f;
}

static void fact_set_target(struct ca_trace *t, struct rstr **slot, const char *s, size_t len)
{
        *slot = trace_rstr_unref(t, *slot);
        if (s)
                *slot = trace_rstr_new(t, s, len, true);
}

void trace_fact_set(struct ca_trace *t, const char *path, size_t len, enum fact_kind kind,
                    const char *target, size_t tlen)
{
        /* Without capture information only links are worth a fact: nothing else is asked. */
        struct fact *f = trace_fact_get(t, path, len, t->info || kind == F_LINK);

        if (!f)
                return;
        f->now = (uint8_t)kind;
        fact_set_target(t, &f->target, kind == F_LINK ? target : NULL, tlen);
        if (kind == F_LINK && !f->target)
                f->now = F_UNKNOWN; /* its text not kept: unknown rather than wrong */
}

void trace_fact_rename(struct ca_trace *t, const char *from, size_t flen, const char *to,
                       size_t tlen)
{
        struct fact *f = trace_fact_get(t, from, flen, false);
        enum fact_kind kind = f ? fact_now(f) : F_UNKNOWN;
        struct rstr *target = f && f->target ? f->target : NULL;

        if (!trace_facts_active(t))
                return;
        if (target)
                target->ref++;
        trace_fact_set(t, to, tlen, kind == F_UNKNOWN || kind == F_ABSENT ? F_EXISTS : kind,
                       target ? target->s : NULL, target ? target->len : 0);
        trace_rstr_unref(t, target);
        if (f)
                trace_fact_set(t, from, flen, F_ABSENT, NULL, 0);
        if (kind != F_DIR && kind != F_UNKNOWN && kind != F_EXISTS)
                return;
        /* A directory moved: every name known below it went with it. */
        for (size_t i = 0; i < t->fnbuckets; i++)
                for (struct fact *g = t->fbuckets[i]; g; g = g->next)
                        if (g->len > flen && g->path[flen] == '/' &&
                            memcmp(g->path, from, flen) == 0) {
                                g->now = F_ABSENT;
                                g->target = trace_rstr_unref(t, g->target);
                        }
}

void trace_facts_free(struct ca_trace *t)
{
        for (size_t i = 0; i < t->fnbuckets; i++) {
                struct fact *f = t->fbuckets[i];

                while (f) {
                        struct fact *next = f->next;

                        trace_rstr_unref(t, f->target);
                        trace_rstr_unref(t, f->ptarget);
                        trace_rstr_unref(t, f->interp);
                        trace_uncharge(t, sizeof(*f) + f->len + 1, true);
                        free(f);
                        f = next;
                }
        }
        trace_uncharge(t, t->fnbuckets * sizeof(*t->fbuckets), true);
        free(t->fbuckets);
        t->fbuckets = NULL;
        t->fnbuckets = 0;
        t->nfacts = 0;
        t->stats.facts = 0;
        memset(t->fbloom, 0, sizeof(t->fbloom));
        memset(t->nbloom, 0, sizeof(t->nbloom));
        t->fdepths = 0;
        for (size_t i = 0; i < t->nmounts; i++) {
                trace_rstr_unref(t, t->mounts[i].path);
                trace_rstr_unref(t, t->mounts[i].fstype);
        }
        trace_uncharge(t, t->mounts_cap * sizeof(*t->mounts), true);
        free(t->mounts);
        t->mounts = NULL;
        t->nmounts = t->mounts_cap = 0;
        for (size_t i = 0; i < t->npins; i++)
                trace_rstr_unref(t, t->pins[i]);
        trace_uncharge(t, t->pins_cap * sizeof(*t->pins), true);
        free(t->pins);
        t->pins = NULL;
        t->npins = t->pins_cap = 0;
}

/* ---- probing the live system ---- */

/* /proc/<pid>/...: the traced processes are gone, so is what was there. */
static bool unprobeable(const char *path, size_t len)
{
        return len > 6 && memcmp(path, "/proc/", 6) == 0 && path[6] >= '0' && path[6] <= '9';
}

/* What @path (NUL-terminated, @len bytes) is now, as a new fact. NULL: unknown. */
static struct fact *probe(struct ca_trace *t, const char *path, size_t len, uint64_t hash)
{
        char target[PATH_MAX];
        enum fact_kind kind;
        ssize_t n = 0;
        struct stat st;
        struct fact *f;

        if (unprobeable(path, len))
                return NULL;
        t->stats.probes++;
        if (lstat(path, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return NULL; /* EACCES, EIO: not known */
                kind = F_ABSENT;
        } else if (S_ISLNK(st.st_mode)) {
                n = readlink(path, target, sizeof(target) - 1);
                if (n <= 0)
                        return NULL;
                kind = F_LINK;
        } else {
                kind = S_ISDIR(st.st_mode) ? F_DIR : F_FILE;
        }
        f = fact_insert(t, path, len, hash);
        if (!f)
                return NULL;
        f->now = f->probed = (uint8_t)kind;
        if (kind == F_LINK) {
                fact_set_target(t, &f->target, target, (size_t)n);
                fact_set_target(t, &f->ptarget, target, (size_t)n);
                if (!f->target || !f->ptarget)
                        f->now = f->probed = F_UNKNOWN;
        }
        return f;
}

static uint64_t get_le(const unsigned char *p, unsigned bytes)
{
        uint64_t v = 0;

        for (unsigned i = bytes; i-- > 0;)
                v = v << 8 | p[i];
        return v;
}

/*
 * What executing the file @fd loads, read as binfmt_script and binfmt_elf do: a "#!" line's
 * interpreter (first word, within the kernel's 256-byte buffer), or an ELF's PT_INTERP
 * ("" for a static program). Little-endian ELF only (x86, arm64, riscv): else X_UNKNOWN.
 */
static enum exec_kind read_exec(int fd, char *interp, size_t size, size_t *ret_len)
{
        unsigned char h[256], ph[56];
        ssize_t n = pread(fd, h, sizeof(h), 0);
        uint64_t phoff, phnum, phentsize;
        bool is64;

        *ret_len = 0;
        if (n >= 2 && h[0] == '#' && h[1] == '!') {
                ssize_t i = 2, s;

                while (i < n && (h[i] == ' ' || h[i] == '\t'))
                        i++;
                s = i;
                while (i < n && h[i] != ' ' && h[i] != '\t' && h[i] != '\n' && h[i] != '\0')
                        i++;
                if (i == s || (size_t)(i - s) >= size)
                        return X_UNKNOWN;
                memcpy(interp, h + s, (size_t)(i - s));
                *ret_len = (size_t)(i - s);
                return X_SCRIPT;
        }
        if (n < 64 || memcmp(h, "\177ELF", 4) != 0 || h[5] != 1 /* ELFDATA2LSB */)
                return X_UNKNOWN;
        is64 = h[4] == 2;
        phoff = get_le(h + (is64 ? 32 : 28), is64 ? 8 : 4);
        phentsize = get_le(h + (is64 ? 54 : 42), 2);
        phnum = get_le(h + (is64 ? 56 : 44), 2);
        if (phentsize < (is64 ? 56u : 32u) || phnum > 4096)
                return X_UNKNOWN;
        for (uint64_t i = 0; i < phnum; i++) {
                uint64_t off, sz;

                if (pread(fd, ph, is64 ? 56 : 32, (off_t)(phoff + i * phentsize)) !=
                    (is64 ? 56 : 32))
                        return X_UNKNOWN;
                if (get_le(ph, 4) != 3 /* PT_INTERP */)
                        continue;
                off = get_le(ph + (is64 ? 8 : 4), is64 ? 8 : 4);
                sz = get_le(ph + (is64 ? 32 : 16), is64 ? 8 : 4);
                if (sz < 2 || sz > size || pread(fd, interp, sz, (off_t)off) != (ssize_t)sz)
                        return X_UNKNOWN;
                *ret_len = strnlen(interp, sz);
                return X_ELF;
        }
        return X_ELF; /* static */
}

enum exec_kind trace_exec_kind(struct ca_trace *t, const char *path, size_t len,
                               const char **ret_interp, size_t *ret_ilen)
{
        bool probing = t->options & CA_TRACE_PROBE;
        struct fact *f = trace_fact_get(t, path, len, probing);

        if (f && f->exec == X_UNKNOWN && probing && !unprobeable(path, len)) {
                char interp[PATH_MAX];
                enum exec_kind k = X_UNKNOWN;
                size_t ilen = 0;
                int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

                t->stats.probes++;
                if (fd >= 0) {
                        k = read_exec(fd, interp, sizeof(interp), &ilen);
                        close(fd);
                }
                if (k != X_UNKNOWN) {
                        fact_set_target(t, &f->interp, interp, ilen);
                        if (f->interp)
                                f->exec = (uint8_t)k;
                }
        }
        if (!f || f->exec == X_UNKNOWN || !f->interp)
                return X_UNKNOWN;
        *ret_interp = f->interp->s;
        *ret_ilen = f->interp->len;
        return (enum exec_kind)f->exec;
}

/* ---- the walk ---- */

bool trace_add_walk(struct ca_trace *t, const char *path, size_t len,
                    enum ca_trace_walk_kind kind, uint64_t hold)
{
        if (t->nwalks >= CA_TRACE_WALKS_MAX)
                goto out_dropped;
        if (t->wstr_len + len + 1 > t->wstr_cap) {
                size_t cap = t->wstr_cap ? t->wstr_cap : 4096;
                char *s;

                while (cap < t->wstr_len + len + 1)
                        cap *= 2;
                s = realloc(t->wstr, cap);
                if (!s)
                        goto out_dropped;
                t->wstr = s;
                t->wstr_cap = cap;
        }
        memcpy(t->wstr + t->wstr_len, path, len);
        t->wstr[t->wstr_len + len] = '\0';
        t->walk_off[t->nwalks] = t->wstr_len;
        t->walks[t->nwalks] = (struct ca_trace_walk){ .kind = kind, .hold = hold };
        t->nwalks++;
        t->wstr_len += len + 1;
        return true;

out_dropped:
        t->stats.walks_dropped++;
        return false;
}

/* Room for @depth + 1 entries in the walk's depth stack. */
static bool stk_grow(struct ca_trace *t, size_t depth)
{
        size_t cap;
        struct depth *s;

        cap = t->stk_cap ? 2 * t->stk_cap : 64;
        while (cap <= depth)
                cap *= 2;
        s = realloc(t->stk, cap * sizeof(*s));
        if (!s)
                return false;
        t->stk = s;
        t->stk_cap = cap;
        return true;
}

static inline bool stk_reserve(struct ca_trace *t, size_t depth)
{
        return depth < t->stk_cap || stk_grow(t, depth);
}

/* [p, end): the end of its last component (p when it has none). */
static const char *last_component_end(const char *p, const char *end)
{
        while (end > p && end[-1] == '/')
                end--;
        return end;
}

static void seg_push(struct seg *s, const char *p, size_t len)
{
        s->p = p;
        s->end = p + len;
        s->last = last_component_end(p, p + len);
}

/* Nothing but slashes is left below the top segment. */
static bool below_empty(const struct seg *segs, size_t nseg)
{
        for (size_t i = 0; i + 1 < nseg; i++)
                if (segs[i].p < segs[i].last)
                        return false;
        return true;
}

/* Whether the path ends as "dir/", "dir/." or "dir/..": the last must be a directory. */
static bool wants_dir(const char *path, size_t len)
{
        if (len == 0 || (path[len - 1] != '/' && path[len - 1] != '.'))
                return false;
        if (path[len - 1] == '/' || len == 1 || path[len - 2] == '/')
                return true; /* "x/", "." or "x/." */
        return path[len - 2] == '.' && (len == 2 || path[len - 3] == '/'); /* ".." */
}

/*
 * The walk when there is no fact at all (a plain log): no name can be a link, but /proc/self
 * (left to trace_walk()), so the canonical path is the lexical one, and a ".." still leaves a
 * directory the walk went into. The reader's hot path: no hash, no stack. False: not for it.
 */
static bool walk_lexical(struct ca_trace *t, int pid, const char *base, const char *path,
                         size_t len, unsigned flags, char *out, struct walk_res *res)
{
        bool prev_comp = false;
        size_t n = 0;

        if (pid > 0 && memmem(path, len, "self", 4))
                return false;
        for (int pass = 0; pass < 2; pass++) {
                const char *p = pass ? path : base, *end;

                if (pass == 0 && (!base || (len > 0 && path[0] == '/')))
                        continue;
                end = pass ? path + len : base + strlen(base);
                while (p < end) {
                        const char *c = p;
                        size_t cl;

                        while (p < end && *p != '/')
                                p++;
                        cl = (size_t)(p - c);
                        if (p < end)
                                p++;
                        if (cl == 0 || (cl == 1 && c[0] == '.'))
                                continue;
                        if (cl == 2 && c[0] == '.' && c[1] == '.') {
                                /* the kernel walked into it before going up */
                                if (prev_comp && !(flags & RF_NO_WALKS))
                                        trace_add_walk(t, out, n, CA_TRACE_WALK_DIR, 0);
                                while (n > 0 && out[n - 1] != '/')
                                        n--;
                                if (n > 0)
                                        n--;
                                prev_comp = false;
                                continue;
                        }
                        if (n + 1 + cl >= OUT_SIZE - 1) {
                                res->toolong = true;
                                n = 0;
                                break;
                        }
                        out[n++] = '/';
                        memcpy(out + n, c, cl);
                        n += cl;
                        prev_comp = pass == 1;
                }
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
        res->len = n;
        res->unknown = true;
        res->dir = (flags & RF_DIR) || wants_dir(path, len);
        return true;
}

void trace_walk(struct ca_trace *t, int pid, const char *base, const char *path, size_t len,
                unsigned flags, char *out, struct walk_res *res)
{
        struct seg segs[CA_TRACE_LINKS_MAX + 2];
        char magic[MAGIC_MAX][48];
        size_t nseg = 0, depth = 0, olen = 0, links = 0, nmagic = 0;
        bool active = trace_facts_active(t), dense = t->info, prev_comp = false;
        uint64_t hash = HASH_ROOT;

        *res = (struct walk_res){ 0 };
        if (!active && walk_lexical(t, pid, base, path, len, flags, out, res))
                return;
        if (!stk_reserve(t, 64))
                goto out_toolong;
        t->stk[0] = (struct depth){ .len = 0, .hash = HASH_ROOT };
        if (wants_dir(path, len))
                flags |= RF_DIR | RF_FOLLOW;
        if ((len == 0 || path[0] != '/') && base) {
                /* canonical already: its components are taken as they are */
                const char *b = base, *be = base + strlen(base);

                while (b < be) {
                        const char *c;

                        while (b < be && *b == '/')
                                b++;
                        if (b == be)
                                break;
                        c = b;
                        while (b < be && *b != '/')
                                b++;
                        if (olen + 1 + (size_t)(b - c) >= OUT_SIZE - 1 ||
                            !stk_reserve(t, depth + 1))
                                goto out_toolong;
                        out[olen] = '/';
                        memcpy(out + olen + 1, c, (size_t)(b - c));
                        olen += 1 + (size_t)(b - c);
                        if (dense)
                                hash = hash_name(hash, c, (size_t)(b - c));
                        t->stk[++depth] = (struct depth){ .len = (uint32_t)olen, .hash = hash };
                }
        }
        seg_push(&segs[nseg++], path, len);

        while (nseg > 0) {
                struct seg *s = &segs[nseg - 1];
                enum fact_kind kind = F_UNKNOWN;
                const char *name, *target = NULL;
                size_t n, nlen, tlen = 0;
                struct fact *f = NULL;
                bool last;
                uint64_t h;

                while (s->p < s->end && *s->p == '/')
                        s->p++;
                if (s->p >= s->end) {
                        nseg--;
                        continue;
                }
                name = s->p;
                while (s->p < s->end && *s->p != '/')
                        s->p++;
                n = (size_t)(s->p - name);
                last = s->p >= s->last && (nseg == 1 || below_empty(segs, nseg));
                if (n == 1 && name[0] == '.')
                        continue;
                if (n == 2 && name[0] == '.' && name[1] == '.') {
                        if (depth > 0) {
                                /* the kernel walked into it before going up */
                                if (prev_comp && !(flags & RF_NO_WALKS))
                                        trace_add_walk(t, out, olen, CA_TRACE_WALK_DIR, 0);
                                depth--;
                                olen = t->stk[depth].len;
                                hash = t->stk[depth].hash;
                        }
                        prev_comp = false;
                        continue;
                }
                if (olen + 1 + n >= OUT_SIZE - 1 || !stk_reserve(t, depth + 1))
                        goto out_toolong;
                out[olen] = '/';
                memcpy(out + olen + 1, name, n);
                nlen = olen + 1 + n;
                h = dense ? hash_name(hash, name, n) : 0; /* only facts need it */

                if (depth == 1 && olen == 5 && memcmp(out, "/proc", 5) == 0 && pid > 0 &&
                    nmagic < MAGIC_MAX &&
                    ((n == 4 && memcmp(name, "self", 4) == 0) ||
                     (n == 11 && memcmp(name, "thread-self", 11) == 0))) {
                        /* proc_self_get_link(): the caller's own pid */
                        int m = n == 4 ? snprintf(magic[nmagic], sizeof(magic[0]), "%d", pid)
                                       : snprintf(magic[nmagic], sizeof(magic[0]),
                                                  "%d/task/%d", pid, pid);

                        kind = F_LINK;
                        target = magic[nmagic++];
                        tlen = (size_t)m;
                } else if (active && (dense || ((t->fdepths & depth_bit(depth + 1)) &&
                                                maybe_name(t, name, n)))) {
                        if (!dense) /* a few facts (links the log showed): hash where they are */
                                h = hash_path(out, nlen);
                        f = maybe_fact(t, h) ? fact_find(t, out, nlen, h) : NULL;
                        if (!f && (t->options & CA_TRACE_PROBE)) {
                                char saved = out[nlen];

                                out[nlen] = '\0';
                                f = probe(t, out, nlen, h);
                                out[nlen] = saved;
                        }
                        if (f) {
                                kind = fact_now(f);
                                if (kind == F_LINK) {
                                        target = f->target->s;
                                        tlen = f->target->len;
                                }
                        }
                }
                if (kind == F_UNKNOWN)
                        res->unknown = true;
                if (f)
                        f->walked = true;

                if (kind == F_LINK && (!last || (flags & RF_FOLLOW))) {
                        if (++links > CA_TRACE_LINKS_MAX || nseg >= sizeof(segs) / sizeof(segs[0])) {
                                res->eloop = true;
                                t->stats.walks_dropped++;
                                break;
                        }
                        if (!(flags & RF_NO_WALKS))
                                trace_add_walk(t, out, nlen, CA_TRACE_WALK_LINK, 0);
                        if (tlen > 0 && target[0] == '/') {
                                depth = 0;
                                olen = 0;
                                hash = HASH_ROOT;
                        }
                        seg_push(&segs[nseg++], target, tlen);
                        prev_comp = false;
                        continue;
                }
                t->stk[++depth] = (struct depth){ .len = (uint32_t)nlen, .hash = h };
                olen = nlen;
                hash = h;
                prev_comp = true;
                if ((flags & RF_STOP_ABSENT) && kind == F_ABSENT && !(last && (flags & RF_CREATE))) {
                        res->stopped = true;
                        break;
                }
                if ((flags & RF_STOP_NOTDIR) && (kind == F_FILE || kind == F_LINK) &&
                    (!last || (flags & RF_DIR))) {
                        res->stopped = true;
                        break;
                }
                if ((flags & RF_PROVEN) && f) {
                        /* the call went through: the fact is older than the log says */
                        if (!last && kind != F_DIR && kind != F_LINK)
                                f->now = F_DIR;
                        else if (last && kind == F_ABSENT)
                                f->now = (flags & RF_DIR) ? F_DIR : F_EXISTS;
                }
        }
        if (olen == 0)
                out[olen++] = '/';
        out[olen] = '\0';
        res->len = olen;
        res->dir = flags & RF_DIR;
        return;

out_toolong:
        res->toolong = true;
        out[0] = '/';
        out[1] = '\0';
        res->len = 1;
}

/* ---- the capture information file ---- */

/* A '"'-quoted string at *pp into @out (CA_TRACE_LINE_MAX + 1 bytes); advances *pp. */
static bool info_string(const char **pp, char *out, size_t *ret_len)
{
        const char *p = *pp, *end;

        while (*p == ' ' || *p == '\t')
                p++;
        if (*p != '"' || !trace_decode_string(p + 1, '"', out, ret_len, &end))
                return false;
        if (*ret_len > CA_TRACE_LINE_MAX)
                return false;
        out[*ret_len] = '\0';
        *pp = end;
        return true;
}

static bool info_path(const char **pp, char *out, size_t *ret_len)
{
        return info_string(pp, out, ret_len) && *ret_len > 0 && out[0] == '/';
}

static bool info_end(const char *p)
{
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                p++;
        return *p == '\0';
}

static struct rstr *info_keep(struct ca_trace *t, const char *s, size_t len)
{
        return trace_rstr_new(t, s, len, true);
}

/* Canonical spelling of a loaded path: one slash between components, none at the end. */
static size_t info_canonical(char *p, size_t len)
{
        size_t n = 0;

        for (size_t i = 0; i < len; i++) {
                if (p[i] == '/' && n > 0 && p[n - 1] == '/')
                        continue;
                p[n++] = p[i];
        }
        while (n > 1 && p[n - 1] == '/')
                n--;
        p[n] = '\0';
        return n;
}

/* @path (writable, @len bytes, absolute) a mount point of @fs (@flen bytes). */
static int add_mount(struct ca_trace *t, char *path, size_t len, const char *fs, size_t flen)
{
        struct mount_info m;
        int r;

        len = info_canonical(path, len);
        m.path = info_keep(t, path, len);
        m.fstype = info_keep(t, fs, flen);
        r = m.path && m.fstype ? trace_grow(t, (void **)&t->mounts, &t->mounts_cap,
                                            t->nmounts + 1, sizeof(m), SIZE_MAX, true)
                               : -E2BIG;
        if (r < 0) {
                trace_rstr_unref(t, m.path);
                trace_rstr_unref(t, m.fstype);
                return r;
        }
        t->mounts[t->nmounts++] = m;
        return 0;
}

static int add_pin(struct ca_trace *t, char *path, size_t len)
{
        struct rstr *pin;
        int r;

        len = info_canonical(path, len);
        pin = info_keep(t, path, len);
        r = pin ? trace_grow(t, (void **)&t->pins, &t->pins_cap, t->npins + 1, sizeof(pin),
                             SIZE_MAX, true)
                : -E2BIG;
        if (r < 0) {
                trace_rstr_unref(t, pin);
                return r;
        }
        t->pins[t->npins++] = pin;
        return 0;
}

static int info_line(struct ca_trace *t, const char *line)
{
        static const struct {
                const char *word;
                enum fact_kind kind;
        } kinds[] = { { "dir", F_DIR }, { "file", F_FILE }, { "absent", F_ABSENT } };
        const char *p = line, *w;
        size_t wl, len, len2;
        struct fact *f;

        while (*p == ' ' || *p == '\t')
                p++;
        if (*p == '#' || info_end(p))
                return 0;
        w = p;
        while (*p >= 'a' && *p <= 'z')
                p++;
        wl = (size_t)(p - w);

        if (wl == 5 && memcmp(w, "mount", 5) == 0) {
                const char *fs;

                if (!info_path(&p, t->dec, &len))
                        return -EINVAL;
                while (*p == ' ' || *p == '\t')
                        p++;
                fs = p;
                while (*p > ' ' && *p != '"' && *p < 0x7f)
                        p++;
                if (p == fs || !info_end(p))
                        return -EINVAL;
                return add_mount(t, t->dec, len, fs, (size_t)(p - fs));
        }
        if (wl == 3 && memcmp(w, "pin", 3) == 0) {
                if (!info_path(&p, t->dec, &len) || !info_end(p))
                        return -EINVAL;
                return add_pin(t, t->dec, len);
        }
        if ((wl == 4 && memcmp(w, "link", 4) == 0) || (wl == 3 && memcmp(w, "elf", 3) == 0) ||
            (wl == 6 && memcmp(w, "script", 6) == 0)) {
                bool link = w[0] == 'l';

                if (!info_path(&p, t->dec, &len) || !info_string(&p, t->deco, &len2) ||
                    !info_end(p) || (link && len2 == 0) || (w[0] == 's' && len2 == 0))
                        return -EINVAL;
                len = info_canonical(t->dec, len);
                f = trace_fact_get(t, t->dec, len, true);
                if (!f)
                        return -E2BIG;
                if (link) {
                        fact_set_target(t, &f->target, t->deco, len2);
                        fact_set_target(t, &f->ptarget, t->deco, len2);
                        if (!f->target || !f->ptarget)
                                return -E2BIG;
                        f->now = f->probed = F_LINK;
                } else {
                        fact_set_target(t, &f->interp, t->deco, len2);
                        if (!f->interp)
                                return -E2BIG;
                        f->exec = w[0] == 'e' ? X_ELF : X_SCRIPT;
                }
                return 0;
        }
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                if (strlen(kinds[i].word) != wl || memcmp(kinds[i].word, w, wl) != 0)
                        continue;
                if (!info_path(&p, t->dec, &len) || !info_end(p))
                        return -EINVAL;
                len = info_canonical(t->dec, len);
                f = trace_fact_get(t, t->dec, len, true);
                if (!f)
                        return -E2BIG;
                f->now = f->probed = (uint8_t)kinds[i].kind;
                f->target = trace_rstr_unref(t, f->target);
                f->ptarget = trace_rstr_unref(t, f->ptarget);
                return 0;
        }
        return -EINVAL;
}

int ca_trace_load_info(struct ca_trace *t, FILE *f, size_t *ret_line)
{
        size_t cap = 0, lineno = 0;
        char *line = NULL;
        ssize_t n;
        int r = 0;

        if (!t || !f)
                return -EINVAL;
        if (t->started)
                return -EBUSY;
        while ((n = getline(&line, &cap, f)) >= 0) {
                lineno++;
                if ((size_t)n > 2 * (size_t)CA_TRACE_LINE_MAX + 64 ||
                    memchr(line, '\0', (size_t)n)) {
                        r = -EINVAL;
                        break;
                }
                r = info_line(t, line);
                if (r < 0)
                        break;
        }
        if (r == 0 && ferror(f))
                r = -EIO;
        free(line);
        if (r < 0) {
                if (r == -EINVAL && ret_line)
                        *ret_line = lineno;
                trace_facts_free(t);
                t->info = (t->options & CA_TRACE_PROBE) != 0;
                return r;
        }
        t->info = true;
        return 0;
}

int ca_trace_add_mount(struct ca_trace *t, const char *path, const char *fstype)
{
        size_t len, flen;

        if (!t || !path || path[0] != '/' || !fstype || !*fstype)
                return -EINVAL;
        if (t->started)
                return -EBUSY;
        len = strlen(path);
        flen = strcspn(fstype, " \t\n\"");
        if (len > CA_TRACE_LINE_MAX || fstype[flen])
                return -EINVAL;
        memcpy(t->dec, path, len + 1);
        t->info = true;
        return add_mount(t, t->dec, len, fstype, flen);
}

int ca_trace_add_pin(struct ca_trace *t, const char *path)
{
        size_t len;

        if (!t || !path || path[0] != '/')
                return -EINVAL;
        if (t->started)
                return -EBUSY;
        len = strlen(path);
        if (len > CA_TRACE_LINE_MAX)
                return -EINVAL;
        memcpy(t->dec, path, len + 1);
        t->info = true;
        return add_pin(t, t->dec, len);
}

/* @s as strace writes strings: printable ASCII as it is, the rest in octal. */
static int write_string(FILE *f, const char *s, size_t len)
{
        if (fputc('"', f) == EOF)
                return -EIO;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c == '"' || c == '\\') {
                        if (fprintf(f, "\\%c", c) < 0)
                                return -EIO;
                } else if (c < 0x20 || c >= 0x7f) {
                        if (fprintf(f, "\\%03o", c) < 0)
                                return -EIO;
                } else if (fputc(c, f) == EOF) {
                        return -EIO;
                }
        }
        return fputc('"', f) == EOF ? -EIO : 0;
}

static int write_fact(FILE *f, const char *word, const char *path, size_t len, const char *s2,
                      size_t len2, bool with2)
{
        if (fprintf(f, "%s ", word) < 0 || write_string(f, path, len) < 0)
                return -EIO;
        if (with2 && (fputc(' ', f) == EOF || write_string(f, s2, len2) < 0))
                return -EIO;
        return fputc('\n', f) == EOF ? -EIO : 0;
}

/* [p, p + len): the length of its parent's path (0: the root). */
static size_t parent_len(const char *p, size_t len)
{
        while (len > 0 && p[len - 1] != '/')
                len--;
        return len > 0 ? len - 1 : 0;
}

/*
 * The pin @p if the log walked into its directory (the directory's entries as warm as they
 * were), else its deepest ancestor the log walked through (that walk as warm as it was);
 * nothing when the log went nowhere near it. Each path once.
 */
static int write_pin(struct ca_trace *t, FILE *f, const struct rstr *p)
{
        size_t end = parent_len(p->s, p->len);
        struct fact *a;

        if (t->nfacts == 0) /* nothing was walked with facts: keep them all */
                return write_fact(f, "pin", p->s, p->len, NULL, 0, false);
        a = end > 0 ? trace_fact_get(t, p->s, end, false) : NULL;
        if (end == 0 || (a && a->walked)) {
                struct fact *self = trace_fact_get(t, p->s, p->len, false);

                if (self && self->pin_written)
                        return 0;
                if (self)
                        self->pin_written = true;
                return write_fact(f, "pin", p->s, p->len, NULL, 0, false);
        }
        for (end = parent_len(p->s, end); end > 0; end = parent_len(p->s, end)) {
                a = trace_fact_get(t, p->s, end, false);
                if (!a || !a->walked)
                        continue;
                if (a->pin_written)
                        return 0;
                a->pin_written = true;
                return write_fact(f, "pin", p->s, end, NULL, 0, false);
        }
        return 0;
}

int ca_trace_write_info(struct ca_trace *t, FILE *f)
{
        static const char *const words[] = {
                [F_ABSENT] = "absent", [F_DIR] = "dir", [F_FILE] = "file",
        };
        int r = 0;

        if (!t || !f)
                return -EINVAL;
        if (fprintf(f, "%s\n", INFO_HEADER) < 0)
                return -EIO;
        for (size_t i = 0; i < t->nmounts && r == 0; i++) {
                const struct mount_info *m = &t->mounts[i];

                if (fputs("mount ", f) == EOF || write_string(f, m->path->s, m->path->len) < 0 ||
                    fprintf(f, " %s\n", m->fstype->s) < 0)
                        r = -EIO;
        }
        for (size_t i = 0; i < t->fnbuckets; i++)
                for (struct fact *a = t->fbuckets[i]; a; a = a->next)
                        a->pin_written = false;
        for (size_t i = 0; i < t->npins && r == 0; i++)
                r = write_pin(t, f, t->pins[i]);
        for (size_t i = 0; i < t->fnbuckets && r == 0; i++)
                for (struct fact *a = t->fbuckets[i]; a && r == 0; a = a->next) {
                        if (a->probed == F_LINK && a->ptarget)
                                r = write_fact(f, "link", a->path, a->len, a->ptarget->s,
                                               a->ptarget->len, true);
                        else if (a->probed == F_ABSENT || a->probed == F_DIR ||
                                 a->probed == F_FILE)
                                r = write_fact(f, words[a->probed], a->path, a->len, NULL, 0,
                                               false);
                        if (r == 0 && a->exec != X_UNKNOWN && a->interp)
                                r = write_fact(f, a->exec == X_ELF ? "elf" : "script", a->path,
                                               a->len, a->interp->s, a->interp->len, true);
                }
        if (r == 0 && fflush(f) == EOF)
                r = -EIO;
        return r;
}
