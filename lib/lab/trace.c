/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * strace log reader. One line at a time from a fixed buffer (a line is never longer than
 * CA_TRACE_LINE_MAX in memory), parsed in place: prefix (pid, timestamp), then a body that
 * is a syscall, a resumed half, or an exit/signal note. Arguments are split at top-level
 * commas, skipping quoted strings, brackets, comments and -y "<path>" decorations, so a
 * path argument is found by position (the table below) and decoded from its C escapes; its
 * walk is lib/lab/trace-walk.c's.
 *
 * State between lines, all bounded: per pid a held "<unfinished ...>" half and pointers to
 * its fs context (working directory), fd table and mappings, each shared by the pids a clone
 * with CLONE_FS, CLONE_FILES or CLONE_VM joins, as the kernel shares fs_struct, files_struct
 * and mm_struct. What they point at is a `struct file` (an open file description, a working
 * directory, a mapped image), reference counted like the kernel's: when the last fd, mapping
 * or context lets go of it, its hold id (CA_TRACE_REFS) goes into the event's drops. Strings
 * and tables are charged to one byte budget (CA_TRACE_STATE_MAX); when it is spent, the state
 * is dropped (cwd unknown, fd forgotten, half orphaned) so that later lines are skipped and
 * counted instead of resolved against a guess.
 *
 * Why trust fds at all: trace=%file hides close(), dup() and socket(), so an fd number
 * could be reused behind our back. Relative *at() calls use directory fds opened just
 * before (openat O_DIRECTORY, then fstatat/openat on it), so the last open that returned
 * the number is nearly always the right one; close/dup/fcntl/close_range are honoured when
 * the log has them, and a successful execve closes the O_CLOEXEC ones.
 */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "trace-internal.h"

#define ARGS_MAX 8              /* arguments remembered per call; the rest are skipped */
#define DAY_USEC (86400ull * 1000000ull)
#define AT_FDCWD_VALUE (-100)

/* ---- budgets and kept strings ---- */

bool trace_charge(struct ca_trace *t, size_t size, bool info)
{
        size_t *b = info ? &t->info_bytes : &t->state_bytes;
        size_t max = info ? CA_TRACE_INFO_MAX : CA_TRACE_STATE_MAX;

        if (size > max || *b > max - size)
                return false;
        *b += size;
        return true;
}

void trace_uncharge(struct ca_trace *t, size_t size, bool info)
{
        size_t *b = info ? &t->info_bytes : &t->state_bytes;

        assert(*b >= size);
        *b -= size;
}

struct rstr *trace_rstr_new(struct ca_trace *t, const char *s, size_t len, bool info)
{
        size_t size = sizeof(struct rstr) + len + 1;
        struct rstr *r;

        if (len > OUT_SIZE || !trace_charge(t, size, info))
                return NULL;
        r = malloc(size);
        if (!r) {
                trace_uncharge(t, size, info);
                return NULL;
        }
        r->ref = 1;
        r->info = info;
        r->len = len;
        memcpy(r->s, s, len);
        r->s[len] = '\0';
        return r;
}

struct rstr *trace_rstr_unref(struct ca_trace *t, struct rstr *r)
{
        if (r && --r->ref == 0) {
                trace_uncharge(t, sizeof(struct rstr) + r->len + 1, r->info);
                free(r);
        }
        return NULL;
}

/* ---- references: files, fd tables, mappings, working directories ---- */

/* @size zeroed bytes of process state, charged to the budget. NULL: no budget or memory. */
static void *state_zalloc(struct ca_trace *t, size_t size)
{
        void *p;

        if (!trace_charge(t, size, false))
                return NULL;
        p = calloc(1, size);
        if (!p)
                trace_uncharge(t, size, false);
        return p;
}

static void state_free(struct ca_trace *t, void *p, size_t size)
{
        trace_uncharge(t, size, false);
        free(p);
}

int trace_grow(struct ca_trace *t, void **v, size_t *cap, size_t need, size_t size, size_t max,
               bool info)
{
        size_t ncap = *cap ? *cap : 16;
        char *nv;

        if (need <= *cap)
                return 0;
        if (need > max)
                return -E2BIG;
        while (ncap < need)
                ncap *= 2;
        if (ncap > max)
                ncap = max;
        if (!trace_charge(t, (ncap - *cap) * size, info))
                return -E2BIG;
        nv = realloc(*v, ncap * size);
        if (!nv) {
                trace_uncharge(t, (ncap - *cap) * size, info);
                return -ENOMEM;
        }
        memset(nv + *cap * size, 0, (ncap - *cap) * size);
        *v = nv;
        *cap = ncap;
        return 0;
}

static bool refs(const struct ca_trace *t)
{
        return t->options & CA_TRACE_REFS;
}

/* A reference ended: the replay lets go of it after this line's event. */
static void drop_push(struct ca_trace *t, uint64_t id)
{
        if (t->ndrops == t->drops_cap) {
                size_t cap = t->drops_cap ? 2 * t->drops_cap : 64;
                uint64_t *v = realloc(t->drops, cap * sizeof(*v));

                if (!v) {
                        t->stats.state_dropped++; /* held for good: nothing wrong but memory */
                        return;
                }
                t->drops = v;
                t->drops_cap = cap;
        }
        t->drops[t->ndrops++] = id;
}

/* A new file on canonical @path, with a hold id when @hold and references are followed. */
static struct file *file_new(struct ca_trace *t, const char *path, size_t len, bool hold)
{
        struct file *f = state_zalloc(t, sizeof(*f));

        if (!f)
                goto out_dropped;
        f->path = trace_rstr_new(t, path, len, false);
        if (!f->path) {
                state_free(t, f, sizeof(*f));
                goto out_dropped;
        }
        f->ref = 1;
        if (hold && refs(t))
                f->hold = ++t->next_hold;
        return f;

out_dropped:
        t->stats.state_dropped++;
        return NULL;
}

static struct file *file_ref(struct file *f)
{
        if (f)
                f->ref++;
        return f;
}

static struct file *file_unref(struct ca_trace *t, struct file *f)
{
        if (f && --f->ref == 0) {
                if (f->hold)
                        drop_push(t, f->hold);
                trace_rstr_unref(t, f->path);
                state_free(t, f, sizeof(*f));
        }
        return NULL;
}

static struct fdtab *fdtab_new(struct ca_trace *t)
{
        struct fdtab *tab = state_zalloc(t, sizeof(*tab));

        if (tab)
                tab->ref = 1;
        return tab;
}

static struct fdtab *fdtab_unref(struct ca_trace *t, struct fdtab *tab)
{
        if (tab && --tab->ref == 0) {
                for (size_t i = 0; i < tab->cap; i++)
                        file_unref(t, tab->v[i].f);
                trace_uncharge(t, tab->cap * sizeof(*tab->v), false);
                free(tab->v);
                state_free(t, tab, sizeof(*tab));
        }
        return NULL;
}

/* Room for @fd in @tab. False: over CA_TRACE_FDS_MAX, the budget or memory. */
static bool fdtab_reserve(struct ca_trace *t, struct fdtab *tab, unsigned fd)
{
        return trace_grow(t, (void **)&tab->v, &tab->cap, (size_t)fd + 1, sizeof(*tab->v),
                          CA_TRACE_FDS_MAX, false) == 0;
}

/* A fork's copy (without the O_CLOEXEC fds when @exec: an exec happened since). */
static struct fdtab *fdtab_copy(struct ca_trace *t, const struct fdtab *from, bool exec)
{
        struct fdtab *tab = fdtab_new(t);

        if (!tab || !fdtab_reserve(t, tab, from->cap ? from->cap - 1 : 0))
                return tab;
        for (unsigned i = 0; i < from->cap; i++)
                if (!(exec && from->v[i].cloexec)) {
                        tab->v[i].f = file_ref(from->v[i].f);
                        tab->v[i].cloexec = from->v[i].cloexec;
                }
        return tab;
}

static struct file *fd_file(const struct fdtab *tab, int fd)
{
        return tab && fd >= 0 && (unsigned)fd < tab->cap ? tab->v[fd].f : NULL;
}

static void fd_close(struct ca_trace *t, struct fdtab *tab, int fd)
{
        if (!fd_file(tab, fd))
                return;
        tab->v[fd].f = file_unref(t, tab->v[fd].f);
        tab->v[fd].cloexec = false;
}

/* @fd now refers to @f (consumed; NULL: to something whose path is not known). */
static void fd_install(struct ca_trace *t, struct fdtab *tab, int fd, struct file *f, bool cloexec)
{
        if (!tab || fd < 0) {
                file_unref(t, f);
                return;
        }
        fd_close(t, tab, fd);
        if (!f)
                return;
        if (!fdtab_reserve(t, tab, (unsigned)fd)) {
                t->stats.state_dropped++;
                file_unref(t, f);
                return;
        }
        tab->v[fd].f = f;
        tab->v[fd].cloexec = cloexec;
}

static struct mm *mm_new(struct ca_trace *t)
{
        struct mm *mm = state_zalloc(t, sizeof(*mm));

        if (mm)
                mm->ref = 1;
        return mm;
}

static struct mm *mm_unref(struct ca_trace *t, struct mm *mm)
{
        if (mm && --mm->ref == 0) {
                for (size_t i = 0; i < mm->n; i++)
                        file_unref(t, mm->v[i].f);
                trace_uncharge(t, mm->cap * sizeof(*mm->v), false);
                free(mm->v);
                state_free(t, mm, sizeof(*mm));
        }
        return NULL;
}

/* @f (a reference taken) mapped at @addr in @mm. */
static void mm_add(struct ca_trace *t, struct mm *mm, uint64_t addr, struct file *f)
{
        if (!mm || !f)
                return;
        if (trace_grow(t, (void **)&mm->v, &mm->cap, mm->n + 1, sizeof(*mm->v), SIZE_MAX,
                       false) < 0) {
                t->stats.state_dropped++;
                return;
        }
        mm->v[mm->n++] = (struct mapping){ .addr = addr, .f = file_ref(f) };
}

static struct mm *mm_copy(struct ca_trace *t, const struct mm *from)
{
        struct mm *mm = mm_new(t);

        for (size_t i = 0; mm && i < from->n; i++)
                mm_add(t, mm, from->v[i].addr, from->v[i].f);
        return mm;
}

/* munmap() of a whole mapping made at @addr (a part of one leaves it mapped). */
static void mm_unmap(struct ca_trace *t, struct mm *mm, uint64_t addr)
{
        if (!mm || addr == 0)
                return;
        for (size_t i = mm->n; i-- > 0;)
                if (mm->v[i].addr == addr) {
                        file_unref(t, mm->v[i].f);
                        mm->v[i] = mm->v[--mm->n];
                        return;
                }
}

static struct fsctx *fs_new(struct ca_trace *t, struct file *cwd /* a reference taken */)
{
        struct fsctx *fs = state_zalloc(t, sizeof(*fs));

        if (!fs)
                return NULL;
        fs->ref = 1;
        fs->cwd = file_ref(cwd);
        return fs;
}

static struct fsctx *fs_ref(struct fsctx *fs)
{
        if (fs)
                fs->ref++;
        return fs;
}

static struct fsctx *fs_unref(struct ca_trace *t, struct fsctx *fs)
{
        if (fs && --fs->ref == 0) {
                file_unref(t, fs->cwd);
                state_free(t, fs, sizeof(*fs));
        }
        return NULL;
}

static void fs_set_cwd(struct ca_trace *t, struct fsctx *fs, struct file *cwd /* consumed */)
{
        file_unref(t, fs->cwd);
        fs->cwd = cwd;
}

/* ---- the pid table ---- */

static unsigned pid_hash(int pid)
{
        return ((unsigned)pid * 2654435761u) >> 20 & (PID_BUCKETS - 1);
}

static struct proc *proc_find(struct ca_trace *t, int pid)
{
        for (struct proc *p = t->buckets[pid_hash(pid)]; p; p = p->next)
                if (p->pid == pid)
                        return p;
        return NULL;
}

/* Moves a held half to the orphans: its "resumed" will never be joined. */
static void proc_orphan_held(struct ca_trace *t, struct proc *p)
{
        if (!p->held)
                return;
        trace_uncharge(t, p->held_len + 1, false);
        free(p->held);
        p->held = NULL;
        p->held_len = 0;
        t->stats.unfinished--;
        t->stats.skipped_orphan++;
}

/* Where a pid first seen without its clone line starts: the first pid's current fs. */
static struct fsctx *default_fs(struct ca_trace *t)
{
        struct proc *first = t->first_fs ? NULL : proc_find(t, t->first_pid);

        return first ? first->fs : t->first_fs;
}

static void proc_free(struct ca_trace *t, struct proc *p)
{
        fs_unref(t, p->fs);
        fdtab_unref(t, p->fds);
        mm_unref(t, p->mm);
        free(p);
}

/*
 * The state of @pid, created on first sight: the log's first pid gets the starting cwd
 * (and keeps sharing it with first_fs), a later one a copy of first_fs's current cwd
 * (see trace.h), no fds and no mappings. NULL when the table is full or memory is short:
 * the caller then resolves absolute paths only.
 */
static struct proc *proc_get(struct ca_trace *t, int pid)
{
        struct proc *p = proc_find(t, pid);
        unsigned h;

        if (p)
                return p;
        if (t->procs >= CA_TRACE_PIDS_MAX)
                return NULL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        p->fds = fdtab_new(t);
        p->mm = mm_new(t);
        if (p->fds && p->mm && t->have_first) {
                struct fsctx *from = default_fs(t);

                p->fs = fs_new(t, from ? from->cwd : NULL);
                p->guess_fs = p->guess_fds = p->guess_mm = true;
        } else if (p->fds && p->mm) {
                p->fs = t->first_fs; /* handed over; proc_drop() hands it back */
                t->first_fs = NULL;
                t->first_pid = pid;
                t->have_first = true;
        }
        if (!p->fs) {
                proc_free(t, p);
                return NULL;
        }
        p->pid = pid;
        h = pid_hash(pid);
        p->next = t->buckets[h];
        t->buckets[h] = p;
        t->procs++;
        return p;
}

/* A process is gone: its fds, mappings and working directory let go. */
static void proc_drop(struct ca_trace *t, int pid)
{
        struct proc **pp = &t->buckets[pid_hash(pid)];

        for (; *pp; pp = &(*pp)->next) {
                struct proc *p = *pp;

                if (p->pid != pid)
                        continue;
                proc_orphan_held(t, p);
                *pp = p->next;
                if (!t->first_fs && pid == t->first_pid) {
                        /* later pids still start from its cwd: the path, not its reference */
                        struct file *cwd = p->fs->cwd;

                        cwd = cwd && cwd->hold ? file_new(t, cwd->path->s, cwd->path->len, false)
                                               : file_ref(cwd);
                        t->first_fs = fs_new(t, cwd);
                        file_unref(t, cwd);
                }
                proc_free(t, p);
                t->procs--;
                return;
        }
}

/* What this line counted in, when it makes no event (a RELEASE may take it over). */
static int skip(struct ca_trace *t, uint64_t *counter)
{
        (*counter)++;
        t->counted = counter;
        return 0;
}

/* ---- lexing ---- */

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static bool is_ident(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static const char *skip_spaces(const char *p)
{
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* Decimal digits into *ret (at most @max), advancing *pp. False when none or too large. */
static bool parse_uint(const char **pp, uint64_t max, uint64_t *ret)
{
        const char *p = *pp;
        uint64_t v = 0;

        if (!is_digit(*p))
                return false;
        for (; is_digit(*p); p++) {
                if (v > (max - (uint64_t) (*p - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *pp = p;
        *ret = v;
        return true;
}

/* ".ffffff" (1 to 9 digits) as microseconds; none is 0. */
static bool parse_fraction(const char **pp, uint64_t *ret_usec)
{
        const char *p = *pp;
        uint64_t v = 0;
        int n = 0;

        if (*p != '.') {
                *ret_usec = 0;
                return true;
        }
        for (p++; is_digit(*p); p++, n++) {
                if (n >= 9)
                        return false;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        if (n == 0)
                return false;
        for (; n < 6; n++)
                v *= 10;
        for (; n > 6; n--)
                v /= 10;
        *pp = p;
        *ret_usec = v;
        return true;
}

/*
 * "HH:MM:SS[.f]" (-t, -tt) or "S.f" (-ttt), followed by a space. Time of day gets a day
 * added whenever it goes back by more than 12 h, so a log across midnight stays ordered.
 */
static bool parse_time(struct ca_trace *t, const char **pp, uint64_t *ret_usec)
{
        const char *p = *pp;
        uint64_t a, frac, usec;

        if (!parse_uint(&p, 1ull << 40, &a))
                return false;
        if (*p == ':') {
                uint64_t m, s;

                p++;
                if (a > 99 || !parse_uint(&p, 59, &m) || *p != ':')
                        return false;
                p++;
                if (!parse_uint(&p, 60, &s) || !parse_fraction(&p, &frac))
                        return false;
                usec = ((a * 60 + m) * 60 + s) * 1000000ull + frac;
                if (t->tod_seen && usec + DAY_USEC / 2 < t->last_tod_usec)
                        t->day_usec += DAY_USEC;
                t->tod_seen = true;
                t->last_tod_usec = usec;
                usec += t->day_usec;
        } else {
                if (*p != '.' || !parse_fraction(&p, &frac))
                        return false;
                usec = a * 1000000ull + frac;
        }
        if (*p != ' ')
                return false;
        *pp = p;
        *ret_usec = usec;
        return true;
}

/*
 * Decodes a C-escaped string starting after its opening quote (or '<'), up to the
 * unescaped @term, into @out (at least as large as the input). Sets *ret_end after the
 * terminator. False on a missing terminator, an unknown escape or a NUL byte, none of
 * which a path can hold.
 */
bool trace_decode_string(const char *p, char term, char *out, size_t *ret_len,
                         const char **ret_end)
{
        size_t n = 0;

        for (;;) {
                unsigned v;
                char c = *p++;

                if (c == '\0')
                        return false;
                if (c == term)
                        break;
                if (c != '\\') {
                        out[n++] = c;
                        continue;
                }
                c = *p++;
                switch (c) {
                case '\\': case '"': case '\'': case '?': case '<': case '>':
                        out[n++] = c;
                        continue;
                case 'a': out[n++] = '\a'; continue;
                case 'b': out[n++] = '\b'; continue;
                case 'f': out[n++] = '\f'; continue;
                case 'n': out[n++] = '\n'; continue;
                case 'r': out[n++] = '\r'; continue;
                case 't': out[n++] = '\t'; continue;
                case 'v': out[n++] = '\v'; continue;
                case 'x':
                        v = 0;
                        for (int i = 0; i < 2; i++, p++) {
                                if (is_digit(*p))
                                        v = v * 16 + (unsigned) (*p - '0');
                                else if (*p >= 'a' && *p <= 'f')
                                        v = v * 16 + (unsigned) (*p - 'a' + 10);
                                else if (*p >= 'A' && *p <= 'F')
                                        v = v * 16 + (unsigned) (*p - 'A' + 10);
                                else if (i == 0)
                                        return false;
                                else
                                        break;
                        }
                        break;
                default:
                        if (c < '0' || c > '7')
                                return false;
                        v = (unsigned) (c - '0');
                        for (int i = 1; i < 3 && *p >= '0' && *p <= '7'; i++, p++)
                                v = v * 8 + (unsigned) (*p - '0');
                        if (v > 0xff)
                                return false;
                        break;
                }
                if (v == 0)
                        return false;
                out[n++] = (char) v;
        }
        *ret_len = n;
        *ret_end = p;
        return true;
}

/* ---- syscalls ---- */

enum sc_kind {
        K_OPEN,       /* O_CREAT in flags and success: create */
        K_CREAT,
        K_MKNOD,
        K_LOOKUP,
        K_READLINK,   /* a lookup whose result is a link's text */
        K_EXEC,
        K_MKDIR,
        K_UNLINK,
        K_UNLINKAT,   /* AT_REMOVEDIR: rmdir */
        K_RMDIR,
        K_RENAME,
        K_RENAME2,    /* RENAME_EXCHANGE: a lookup */
        K_LINK,
        K_LINKAT,     /* AT_EMPTY_PATH with "": an O_TMPFILE given a name */
        K_SYMLINK,
        K_CHDIR,
        K_FCHDIR,
        K_GETCWD,     /* state only, from here on */
        K_CLONE,
        K_CLOSE,
        K_CLOSE_RANGE,
        K_DUP,
        K_FCNTL,
        K_MMAP,
        K_MUNMAP,
};

/* Whether a call follows a link in the last component of its path. */
enum {
        FOL_NO,
        FOL_YES,
        FOL_AT,      /* unless AT_SYMLINK_NOFOLLOW in its flags */
        FOL_ATF,     /* only with AT_SYMLINK_FOLLOW */
        FOL_OPEN,    /* unless O_NOFOLLOW, or O_CREAT|O_EXCL */
        FOL_INOTIFY, /* unless IN_DONT_FOLLOW */
};

/* Argument positions; -1: none (a missing dirfd means AT_FDCWD). */
struct sc_desc {
        const char *name;
        enum sc_kind kind;
        signed char dirfd, path, dirfd2, path2, flags;
        unsigned char follow;
        bool dir;    /* the last component must be a directory */
};

static const struct sc_desc syscalls[] = {
        { "open",              K_OPEN,        -1, 0, -1, -1, 1, FOL_OPEN, false },
        { "openat",            K_OPEN,         0, 1, -1, -1, 2, FOL_OPEN, false },
        { "openat2",           K_OPEN,         0, 1, -1, -1, 2, FOL_OPEN, false },
        { "creat",             K_CREAT,       -1, 0, -1, -1, -1, FOL_YES, false },
        { "stat",              K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lstat",             K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "stat64",            K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lstat64",           K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "oldstat",           K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "oldlstat",          K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "newfstatat",        K_LOOKUP,       0, 1, -1, -1, 3, FOL_AT, false },
        { "fstatat64",         K_LOOKUP,       0, 1, -1, -1, 3, FOL_AT, false },
        { "statx",             K_LOOKUP,       0, 1, -1, -1, 2, FOL_AT, false },
        { "access",            K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "faccessat",         K_LOOKUP,       0, 1, -1, -1, -1, FOL_YES, false },
        { "faccessat2",        K_LOOKUP,       0, 1, -1, -1, 3, FOL_AT, false },
        { "execve",            K_EXEC,        -1, 0, -1, -1, -1, FOL_YES, false },
        { "execveat",          K_EXEC,         0, 1, -1, -1, 4, FOL_AT, false },
        { "readlink",          K_READLINK,    -1, 0, -1, -1, -1, FOL_NO, false },
        { "readlinkat",        K_READLINK,     0, 1, -1, -1, -1, FOL_NO, false },
        { "mkdir",             K_MKDIR,       -1, 0, -1, -1, -1, FOL_NO, false },
        { "mkdirat",           K_MKDIR,        0, 1, -1, -1, -1, FOL_NO, false },
        { "unlink",            K_UNLINK,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "unlinkat",          K_UNLINKAT,     0, 1, -1, -1, 2, FOL_NO, false },
        { "rmdir",             K_RMDIR,       -1, 0, -1, -1, -1, FOL_NO, true },
        { "rename",            K_RENAME,      -1, 0, -1, 1, -1, FOL_NO, false },
        { "renameat",          K_RENAME,       0, 1, 2, 3, -1, FOL_NO, false },
        { "renameat2",         K_RENAME2,      0, 1, 2, 3, 4, FOL_NO, false },
        { "link",              K_LINK,        -1, 0, -1, 1, -1, FOL_NO, false },
        { "linkat",            K_LINKAT,       0, 1, 2, 3, 4, FOL_ATF, false },
        { "symlink",           K_SYMLINK,     -1, 0, -1, 1, -1, FOL_NO, false },
        { "symlinkat",         K_SYMLINK,     -1, 0, 1, 2, -1, FOL_NO, false },
        { "chdir",             K_CHDIR,       -1, 0, -1, -1, -1, FOL_YES, true },
        { "fchdir",            K_FCHDIR,       0, -1, -1, -1, -1, FOL_NO, false },
        { "mknod",             K_MKNOD,       -1, 0, -1, -1, -1, FOL_NO, false },
        { "mknodat",           K_MKNOD,        0, 1, -1, -1, -1, FOL_NO, false },
        /* Other path walks of trace=%file: lookups for a dentry model. */
        { "statfs",            K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "statfs64",          K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "truncate",          K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "truncate64",        K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "chmod",             K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "fchmodat",          K_LOOKUP,       0, 1, -1, -1, -1, FOL_YES, false },
        { "fchmodat2",         K_LOOKUP,       0, 1, -1, -1, 3, FOL_AT, false },
        { "chown",             K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lchown",            K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "chown32",           K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lchown32",          K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "fchownat",          K_LOOKUP,       0, 1, -1, -1, 4, FOL_AT, false },
        { "utime",             K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "utimes",            K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "utimensat",         K_LOOKUP,       0, 1, -1, -1, 3, FOL_AT, false },
        { "futimesat",         K_LOOKUP,       0, 1, -1, -1, -1, FOL_YES, false },
        { "getxattr",          K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lgetxattr",         K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "setxattr",          K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lsetxattr",         K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "listxattr",         K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "llistxattr",        K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "removexattr",       K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, false },
        { "lremovexattr",      K_LOOKUP,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "chroot",            K_LOOKUP,      -1, 0, -1, -1, -1, FOL_YES, true },
        { "inotify_add_watch", K_LOOKUP,      -1, 1, -1, -1, 2, FOL_INOTIFY, false },
        { "name_to_handle_at", K_LOOKUP,       0, 1, -1, -1, 4, FOL_ATF, false },
        /* State only: working directories, fds and mappings. */
        { "getcwd",            K_GETCWD,      -1, 0, -1, -1, -1, FOL_NO, false },
        { "clone",             K_CLONE,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "clone3",            K_CLONE,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "fork",              K_CLONE,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "vfork",             K_CLONE,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "close",             K_CLOSE,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "close_range",       K_CLOSE_RANGE, -1, -1, -1, -1, 2, FOL_NO, false },
        { "dup",               K_DUP,         -1, -1, -1, -1, -1, FOL_NO, false },
        { "dup2",              K_DUP,         -1, -1, -1, -1, -1, FOL_NO, false },
        { "dup3",              K_DUP,         -1, -1, -1, -1, 2, FOL_NO, false },
        { "fcntl",             K_FCNTL,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "fcntl64",           K_FCNTL,       -1, -1, -1, -1, -1, FOL_NO, false },
        { "mmap",              K_MMAP,        -1, -1, -1, -1, -1, FOL_NO, false },
        { "mmap2",             K_MMAP,        -1, -1, -1, -1, -1, FOL_NO, false },
        { "munmap",            K_MUNMAP,      -1, -1, -1, -1, -1, FOL_NO, false },
};

#define NSYSCALLS (sizeof(syscalls) / sizeof(syscalls[0]))
_Static_assert(NSYSCALLS < SC_SLOTS / 2 && NSYSCALLS < UINT8_MAX, "the index stays sparse");

static unsigned sc_hash(const char *name, size_t len)
{
        unsigned h = (unsigned)len * 31u;

        for (size_t i = 0; i < len; i++)
                h = h * 33u + (unsigned char)name[i];
        return h;
}

/* The index of the table by name (slot: entry + 1), built once per reader. */
static void sc_index(struct ca_trace *t)
{
        for (size_t i = 0; i < NSYSCALLS; i++) {
                unsigned s = sc_hash(syscalls[i].name, strlen(syscalls[i].name));

                while (t->sc_slots[s & (SC_SLOTS - 1)])
                        s++;
                t->sc_slots[s & (SC_SLOTS - 1)] = (uint8_t)(i + 1);
        }
}

/* Every line names a call: one hash and, mostly, one compare. */
static const struct sc_desc *sc_find(const struct ca_trace *t, const char *name, size_t len)
{
        for (unsigned s = sc_hash(name, len);; s++) {
                unsigned i = t->sc_slots[s & (SC_SLOTS - 1)];

                if (!i)
                        return NULL;
                if (strncmp(syscalls[i - 1].name, name, len) == 0 &&
                    syscalls[i - 1].name[len] == '\0')
                        return &syscalls[i - 1];
        }
}

/* The errno names strace prints that a path walk can plausibly return. */
static const struct {
        const char *name;
        int value;
} errnos[] = {
#define E(x) { #x, x }
        E(ENOENT), E(ENOTDIR), E(EACCES), E(EEXIST), E(EISDIR), E(ELOOP), E(ENAMETOOLONG),
        E(EPERM), E(EINVAL), E(EXDEV), E(ENOTEMPTY), E(EBUSY), E(EROFS), E(EBADF), E(EFAULT),
        E(ENOMEM), E(ENOSPC), E(EMLINK), E(ETXTBSY), E(ENXIO), E(ENODEV), E(ENOEXEC),
        E(E2BIG), E(EAGAIN), E(EWOULDBLOCK), E(EINTR), E(EIO), E(ESTALE), E(EDQUOT),
        E(EOPNOTSUPP), E(ENOTSUP), E(ENOSYS), E(ENODATA), E(ERANGE), E(ESRCH), E(ECHILD),
        E(EMFILE), E(ENFILE), E(EOVERFLOW), E(EFBIG), E(ENOTTY), E(ENOMEDIUM), E(EUCLEAN),
        E(ENOKEY), E(EKEYREVOKED), E(ENOTCONN), E(ECONNREFUSED), E(EADDRINUSE),
        E(EOWNERDEAD), E(ECANCELED), E(EPROTO), E(EHOSTDOWN), E(ETIMEDOUT), E(EDEADLK),
#undef E
};

enum { RES_OK, RES_ERR, RES_NONE };

/*
 * " = 3", " = 0 <0.000012>", " = 3</dev/null>", " = -1 ENOENT (No such file or directory)",
 * " = ?". Unknown errno names give -EIO; ERESTART* (the call is restarted and shows again)
 * counts as no result.
 */
static int parse_result(const char *p, uint64_t *ret_value, int *ret_errno)
{
        uint64_t v;

        p = skip_spaces(p);
        if (*p++ != '=' || *p != ' ')
                return -EINVAL;
        p = skip_spaces(p);
        if (*p == '?')
                return RES_NONE;
        if (*p == '-') {
                const char *name;
                size_t n;

                p++;
                if (!parse_uint(&p, UINT64_MAX, &v))
                        return -EINVAL;
                p = skip_spaces(p);
                name = p;
                while (is_ident(*p))
                        p++;
                n = (size_t) (p - name);
                if (n >= 8 && strncmp(name, "ERESTART", 8) == 0)
                        return RES_NONE;
                *ret_errno = EIO;
                for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                        if (strncmp(errnos[i].name, name, n) == 0 && errnos[i].name[n] == '\0') {
                                *ret_errno = errnos[i].value; /* ENOENT first: the usual */
                                break;
                        }
                return RES_ERR;
        }
        if (p[0] == '0' && p[1] == 'x') {
                /* mmap's address: what a munmap names later */
                if (!is_ident(p[2]))
                        return -EINVAL;
                v = 0;
                for (p += 2; is_ident(*p); p++) {
                        unsigned d = is_digit(*p) ? (unsigned)(*p - '0')
                                     : (*p >= 'a' && *p <= 'f') ? (unsigned)(*p - 'a' + 10)
                                     : 16;

                        if (d > 15 || v > UINT64_MAX >> 4)
                                return -EINVAL;
                        v = v << 4 | d;
                }
                *ret_value = v;
                return RES_OK;
        }
        if (!parse_uint(&p, UINT64_MAX, &v))
                return -EINVAL;
        *ret_value = v;
        return RES_OK;
}

struct args {
        const char *a[ARGS_MAX];
        size_t len[ARGS_MAX];
        unsigned n;
        const char *end; /* after the closing parenthesis */
};

static void args_push(struct args *args, const char *start, const char *end)
{
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if (args->n < ARGS_MAX) {
                args->a[args->n] = start;
                args->len[args->n] = (size_t) (end - start);
        }
        args->n++;
}

/* Splits `a, "s,)", [b, c], {d=e}, 3</x,y>, 0x1 (a C comment)` at top-level commas. */
static bool split_args(const char *p, struct args *ret)
{
        const char *start = skip_spaces(p);
        unsigned depth = 0;

        ret->n = 0;
        for (p = start;; p++) {
                switch (*p) {
                case '\0':
                        return false;
                case '"':
                        for (p++; *p != '"'; p++) {
                                if (*p == '\0')
                                        return false;
                                if (*p == '\\' && p[1] != '\0')
                                        p++;
                        }
                        break;
                case '/':
                        if (p[1] == '*') {
                                p = strstr(p + 2, "*/");
                                if (!p)
                                        return false;
                                p++;
                        }
                        break;
                case '<':
                        /* -y decoration of an fd: "3</usr/lib>", "AT_FDCWD</tmp>". */
                        if (p > start && (is_digit(p[-1]) || p[-1] == 'D')) {
                                for (p++; *p != '>'; p++) {
                                        if (*p == '\0')
                                                return false;
                                        if (*p == '\\' && p[1] != '\0')
                                                p++;
                                }
                        }
                        break;
                case '(': case '[': case '{':
                        if (depth == UINT_MAX)
                                return false;
                        depth++;
                        break;
                case ']': case '}':
                        if (depth == 0)
                                return false;
                        depth--;
                        break;
                case ')':
                        if (depth > 0) {
                                depth--;
                                break;
                        }
                        if (p > start || ret->n > 0)
                                args_push(ret, start, p);
                        ret->end = p + 1;
                        return true;
                case ',':
                        if (depth == 0) {
                                args_push(ret, start, p);
                                start = skip_spaces(p + 1);
                                p = start - 1;
                        }
                        break;
                default:
                        break;
                }
        }
}

/* Whether flag @name (e.g. "O_CREAT") is set in an argument, symbolic or numeric (-X raw). */
static bool arg_has_flag(const struct args *args, int i, const char *name, uint64_t bit)
{
        const char *a, *end, *hit;
        size_t n = strlen(name);

        if (i < 0 || (unsigned) i >= args->n || i >= ARGS_MAX)
                return false;
        a = args->a[i];
        end = a + args->len[i];
        if (args->len[i] == 1 && a[0] == '0')
                return false; /* the usual "no flags" */
        /* one identifier at a time: "O_RDONLY|O_CLOEXEC", "{flags=O_RDWR|O_CREAT, ...}" */
        for (const char *p = a; p < end; p = hit) {
                while (p < end && !is_ident(*p))
                        p++;
                for (hit = p; hit < end && is_ident(*hit); hit++)
                        ;
                if ((size_t)(hit - p) == n && memcmp(p, name, n) == 0)
                        return true;
        }
        if (is_digit(*a))
                return (strtoull(a, NULL, 0) & bit) != 0;
        return false;
}

enum { STR_OK, STR_NULL, STR_BAD };

/* A path argument, decoded into t->dec. "..." after the quote (truncated by -s) is bad. */
static int arg_string(struct ca_trace *t, const struct args *args, int i, size_t *ret_len)
{
        const char *a, *end;

        if (i < 0 || (unsigned) i >= args->n || i >= ARGS_MAX)
                return STR_BAD;
        a = args->a[i];
        if (args->len[i] == 4 && memcmp(a, "NULL", 4) == 0)
                return STR_NULL;
        if (*a != '"' || !trace_decode_string(a + 1, '"', t->dec, ret_len, &end))
                return STR_BAD;
        if (end != a + args->len[i])
                return STR_BAD;
        t->dec[*ret_len] = '\0';
        return STR_OK;
}

/* Whether argument @i is a number above zero (a size: "1023", "0x400"). */
static bool arg_positive(const struct args *args, int i)
{
        const char *p;
        uint64_t v;

        if (i < 0 || (unsigned) i >= args->n || i >= ARGS_MAX)
                return false;
        p = args->a[i];
        if (p[0] == '0' && p[1] == 'x')
                return strtoull(p, NULL, 16) > 0;
        return parse_uint(&p, UINT64_MAX, &v) && v > 0;
}

/* An fd argument: its number, and a -y "<path>" decoration decoded into @deco if any. */
static bool arg_fd(const struct args *args, int i, int *ret_fd, char *deco, size_t *ret_deco_len)
{
        const char *p, *end;
        uint64_t v;

        *ret_deco_len = 0;
        if (i < 0 || (unsigned) i >= args->n || i >= ARGS_MAX)
                return false;
        p = args->a[i];
        end = p + args->len[i];
        if (args->len[i] >= 8 && memcmp(p, "AT_FDCWD", 8) == 0) {
                *ret_fd = -100;
                p += 8;
        } else if (args->len[i] >= 4 && memcmp(p, "-100", 4) == 0) {
                *ret_fd = -100;
                p += 4;
        } else {
                if (!parse_uint(&p, INT_MAX, &v))
                        return false;
                *ret_fd = (int) v;
        }
        if (p < end && *p == '<') {
                const char *e;

                if (!deco || !trace_decode_string(p + 1, '>', deco, ret_deco_len, &e) || e != end ||
                    *ret_deco_len == 0 || deco[0] != '/')
                        return false;
                deco[*ret_deco_len] = '\0';
                return true;
        }
        return p == end;
}

/* ---- paths ---- */

enum { RESOLVE_OK, RESOLVE_DIRFD, RESOLVE_BAD, RESOLVE_EMPTY };

/*
 * The canonical form of path argument @pi relative to dirfd argument @di (-1: the cwd) into
 * @out, walked with RF_* @rflags as the kernel walks it (lib/lab/trace-walk.c). @p is NULL for a
 * pid we do not track: only absolute paths resolve then. @raw_len gets the decoded length.
 */
static int resolve(struct ca_trace *t, int pid, const struct proc *p, const struct args *args,
                   int di, int pi, unsigned rflags, char *out, struct walk_res *res)
{
        size_t len, deco_len;
        const char *base = NULL;
        struct file *f;
        int fd;
        int r;

        r = arg_string(t, args, pi, &len);
        if (r != STR_OK)
                return r == STR_NULL ? RESOLVE_EMPTY : RESOLVE_BAD;
        if (len == 0)
                return RESOLVE_EMPTY; /* AT_EMPTY_PATH: the fd itself, no name looked up */
        if (t->dec[0] != '/') {
                if (di < 0) {
                        fd = AT_FDCWD_VALUE;
                        deco_len = 0;
                } else if (!arg_fd(args, di, &fd, t->deco, &deco_len)) {
                        return RESOLVE_BAD;
                }
                if (deco_len > 0)
                        base = t->deco; /* -y told us where the dirfd points */
                else if (!p)
                        return RESOLVE_DIRFD;
                else if (fd == AT_FDCWD_VALUE && p->fs->cwd)
                        base = p->fs->cwd->path->s;
                else if (fd != AT_FDCWD_VALUE && (f = fd_file(p->fds, fd)))
                        base = f->path->s;
                else
                        return RESOLVE_DIRFD;
        }
        trace_walk(t, pid, base, t->dec, len, rflags, out, res);
        return res->toolong ? RESOLVE_BAD : RESOLVE_OK;
}

static int resolve_count(struct ca_trace *t, int r)
{
        switch (r) {
        case RESOLVE_DIRFD:
                return skip(t, &t->stats.skipped_dirfd);
        case RESOLVE_EMPTY:
                return skip(t, &t->stats.skipped_other);
        default:
                return skip(t, &t->stats.skipped_malformed);
        }
}

/* @out (@len bytes) without its last component ("/" stays "/"). Returns the new length. */
static size_t cut_last(char *out, size_t len)
{
        while (len > 1 && out[len - 1] != '/')
                len--;
        if (len > 1)
                len--;
        out[len] = '\0';
        return len;
}

/* The open flags that change a walk or a reference, in one pass over the argument. */
enum { OF_CREAT = 1, OF_EXCL = 2, OF_NOFOLLOW = 4, OF_DIRECTORY = 8, OF_CLOEXEC = 16 };

static unsigned open_flags(const struct args *args, int i)
{
        static const struct {
                const char *name;
                unsigned len, of;
                uint64_t bit;
        } names[] = {
                { "O_CREAT", 7, OF_CREAT, 0100 },        { "O_EXCL", 6, OF_EXCL, 0200 },
                { "O_NOFOLLOW", 10, OF_NOFOLLOW, 0400000 }, { "O_DIRECTORY", 11, OF_DIRECTORY, 0200000 },
                { "O_CLOEXEC", 9, OF_CLOEXEC, 02000000 },
        };
        const char *a, *end, *q;
        unsigned of = 0;

        if (i < 0 || (unsigned)i >= args->n || i >= ARGS_MAX)
                return 0;
        a = args->a[i];
        end = a + args->len[i];
        if (is_digit(*a)) { /* -X raw */
                uint64_t v = strtoull(a, NULL, 0);

                for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
                        of |= v & names[k].bit ? names[k].of : 0;
                return of;
        }
        for (const char *p = a; p < end; p = q) {
                while (p < end && !is_ident(*p))
                        p++;
                for (q = p; q < end && is_ident(*q); q++)
                        ;
                for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
                        if ((size_t)(q - p) == names[k].len &&
                            memcmp(p, names[k].name, names[k].len) == 0)
                                of |= names[k].of;
        }
        return of;
}

/* Whether a call with these flags follows a link in its last component. */
static bool follows(const struct sc_desc *sc, const struct args *args, unsigned oflags)
{
        switch (sc->follow) {
        case FOL_YES:
                return true;
        case FOL_AT:
                return !arg_has_flag(args, sc->flags, "AT_SYMLINK_NOFOLLOW", 0x100);
        case FOL_ATF:
                return arg_has_flag(args, sc->flags, "AT_SYMLINK_FOLLOW", 0x400);
        case FOL_OPEN:
                return !(oflags & OF_NOFOLLOW) &&
                       (oflags & (OF_CREAT | OF_EXCL)) != (OF_CREAT | OF_EXCL);
        case FOL_INOTIFY:
                return !arg_has_flag(args, sc->flags, "IN_DONT_FOLLOW", 0x02000000);
        default:
                return false;
        }
}

/* ---- working directories, fds, mappings ---- */

static void set_cwd(struct ca_trace *t, struct proc *p, struct file *cwd /* consumed */)
{
        if (!p) {
                file_unref(t, cwd);
                return;
        }
        fs_set_cwd(t, p->fs, cwd);
        p->guess_fs = false;
}

/*
 * clone/fork/vfork returned @child in @parent: it inherits the cwd (shared with CLONE_FS),
 * the fds (CLONE_FILES) and the mappings (CLONE_VM), merged with what it did before this line
 * if the log showed it first (its own opens stay; an exec of its own keeps its image).
 */
static void inherit(struct ca_trace *t, struct proc *parent, int child, const struct args *args,
                    const char *name)
{
        bool vfork = strcmp(name, "vfork") == 0;
        bool share_fs = arg_has_flag(args, 0, "CLONE_FS", 0) || arg_has_flag(args, 1, "CLONE_FS", 0);
        bool share_files = arg_has_flag(args, 0, "CLONE_FILES", 0) ||
                           arg_has_flag(args, 1, "CLONE_FILES", 0);
        bool share_vm = vfork || arg_has_flag(args, 0, "CLONE_VM", 0) ||
                        arg_has_flag(args, 1, "CLONE_VM", 0);
        struct proc *c = proc_find(t, child);

        if (!c) {
                c = proc_get(t, child);
                if (!c)
                        return;
        }
        if (c->guess_fs) {
                struct fsctx *fs = share_fs ? fs_ref(parent->fs) : fs_new(t, parent->fs->cwd);

                if (fs) {
                        fs_unref(t, c->fs);
                        c->fs = fs;
                        c->guess_fs = false;
                }
        }
        if (c->guess_fds) {
                /* an exec since then unshared and closed the O_CLOEXEC ones */
                struct fdtab *tab = share_files && !c->exec_guessed
                                            ? (parent->fds->ref++, parent->fds)
                                            : fdtab_copy(t, parent->fds, c->exec_guessed);

                if (tab) {
                        for (unsigned i = 0; i < c->fds->cap; i++)
                                if (c->fds->v[i].f)
                                        fd_install(t, tab, (int)i, file_ref(c->fds->v[i].f),
                                                   c->fds->v[i].cloexec);
                        fdtab_unref(t, c->fds);
                        c->fds = tab;
                        c->guess_fds = false;
                }
        }
        if (c->guess_mm && !c->exec_guessed) {
                struct mm *mm = share_vm ? (parent->mm->ref++, parent->mm) : mm_copy(t, parent->mm);

                if (mm) {
                        for (size_t i = 0; i < c->mm->n; i++)
                                mm_add(t, mm, c->mm->v[i].addr, c->mm->v[i].f);
                        mm_unref(t, c->mm);
                        c->mm = mm;
                }
        }
        c->guess_mm = false;
}

static void dup_fd(struct ca_trace *t, struct proc *p, int fd, int fd2, bool cloexec)
{
        struct file *f = fd_file(p->fds, fd);

        if (!f)
                t->stats.fds_unknown++;
        fd_install(t, p->fds, fd2, file_ref(f), cloexec);
}

static void close_range_fds(struct ca_trace *t, struct proc *p, const struct args *args)
{
        const char *a;
        uint64_t first, last;
        bool cloexec = arg_has_flag(args, 2, "CLOSE_RANGE_CLOEXEC", 4);

        if (args->n < 2)
                return;
        a = args->a[0];
        if (!parse_uint(&a, UINT64_MAX, &first))
                return;
        a = args->a[1];
        if (!parse_uint(&a, UINT64_MAX, &last))
                last = UINT64_MAX; /* ~0U spelled otherwise */
        if (arg_has_flag(args, 2, "CLOSE_RANGE_UNSHARE", 2) && p->fds->ref > 1) {
                struct fdtab *tab = fdtab_copy(t, p->fds, false);

                if (!tab)
                        return;
                fdtab_unref(t, p->fds);
                p->fds = tab;
        }
        for (uint64_t fd = first; fd <= last && fd < p->fds->cap; fd++) {
                if (cloexec && p->fds->v[fd].f)
                        p->fds->v[fd].cloexec = true;
                else if (!cloexec)
                        fd_close(t, p->fds, (int)fd);
        }
}

/* The state-only calls: working directories, fds, mappings. Counted as other. */
static int do_state(struct ca_trace *t, const struct sc_desc *sc, struct proc *p,
                    const struct args *args, bool ok, uint64_t value)
{
        size_t len, deco_len;
        struct walk_res res;
        int fd, fd2;
        const char *a;
        uint64_t v;

        skip(t, &t->stats.skipped_other);
        if (!p || !ok)
                return 0;
        switch (sc->kind) {
        case K_GETCWD:
                /* the kernel's own words, where we had lost track or guessed wrong */
                if (arg_string(t, args, 0, &len) != STR_OK || len == 0 || t->dec[0] != '/')
                        break;
                trace_walk(t, 0, NULL, t->dec, len, RF_NO_WALKS, t->out[0], &res);
                if (res.toolong || (p->fs->cwd && strcmp(p->fs->cwd->path->s, t->out[0]) == 0))
                        break;
                /* taken before we knew: no event holds it */
                set_cwd(t, p, file_new(t, t->out[0], res.len, false));
                break;
        case K_CLONE:
                if (value > 0 && value <= INT_MAX)
                        inherit(t, p, (int)value, args, sc->name);
                break;
        case K_CLOSE:
                if (arg_fd(args, 0, &fd, NULL, &deco_len)) {
                        if (!fd_file(p->fds, fd))
                                t->stats.fds_unknown++;
                        fd_close(t, p->fds, fd);
                }
                break;
        case K_CLOSE_RANGE:
                close_range_fds(t, p, args);
                break;
        case K_FCNTL:
                if (!arg_fd(args, 0, &fd, NULL, &deco_len))
                        break;
                if (arg_has_flag(args, 1, "F_SETFD", 0)) {
                        if (fd_file(p->fds, fd))
                                p->fds->v[fd].cloexec = arg_has_flag(args, 2, "FD_CLOEXEC", 1);
                        break;
                }
                if (value > INT_MAX || (!arg_has_flag(args, 1, "F_DUPFD", 0) &&
                                        !arg_has_flag(args, 1, "F_DUPFD_CLOEXEC", 0)))
                        break;
                dup_fd(t, p, fd, (int)value, arg_has_flag(args, 1, "F_DUPFD_CLOEXEC", 0));
                break;
        case K_DUP:
                fd2 = (int)value;
                if (value > INT_MAX || !arg_fd(args, 0, &fd, NULL, &deco_len) || fd == fd2)
                        break;
                dup_fd(t, p, fd, fd2, arg_has_flag(args, sc->flags, "O_CLOEXEC", 02000000));
                break;
        case K_MMAP:
                /* mmap(addr, length, prot, flags, fd, offset): a file stays mapped */
                if (args->n < 5 || !refs(t))
                        break;
                a = args->a[4];
                if (!parse_uint(&a, INT_MAX, &v))
                        break; /* -1: anonymous */
                if (!fd_file(p->fds, (int)v))
                        t->stats.fds_unknown++;
                mm_add(t, p->mm, value, fd_file(p->fds, (int)v));
                break;
        case K_MUNMAP:
                if (args->n < 1 || !refs(t))
                        break;
                a = args->a[0];
                if (a[0] == '0' && a[1] == 'x')
                        mm_unmap(t, p->mm, strtoull(a, NULL, 16));
                break;
        default:
                break;
        }
        return 0;
}

/* ---- what an exec loads ---- */

/*
 * A successful exec in @p of canonical ev->path: the fd table unshared and its O_CLOEXEC fds
 * closed, a new mm holding the image and its interpreters, as binfmt_script and binfmt_elf
 * would open them (walks of the event; the image is the last ELF of a "#!" chain).
 */
static void do_exec(struct ca_trace *t, struct proc *p, int pid, struct ca_trace_event *ev,
                    size_t len)
{
        const char *cur = t->out[0], *base = p && p->fs->cwd ? p->fs->cwd->path->s : NULL;
        size_t clen = len, cur_walk = SIZE_MAX;
        struct mm *mm = NULL;

        if (p) {
                if (p->fds->ref > 1) {
                        struct fdtab *tab = fdtab_copy(t, p->fds, true);

                        if (tab) {
                                fdtab_unref(t, p->fds);
                                p->fds = tab;
                        }
                }
                for (unsigned i = 0; i < p->fds->cap; i++)
                        if (p->fds->v[i].cloexec)
                                fd_close(t, p->fds, (int)i);
                if (p->guess_fds)
                        p->exec_guessed = true;
                mm = mm_new(t);
                if (mm) {
                        mm_unref(t, p->mm);
                        p->mm = mm;
                        p->guess_mm = false;
                }
        }
        for (unsigned depth = 0;; depth++) {
                enum exec_kind kind = X_UNKNOWN;
                const char *interp = NULL;
                struct walk_res res;
                size_t ilen = 0;
                struct file *f;

                if (depth < INTERP_DEPTH_MAX)
                        kind = trace_exec_kind(t, cur, clen, &interp, &ilen);
                if (kind == X_SCRIPT) {
                        /* the script is read, not mapped: its interpreter is executed */
                        trace_walk(t, pid, base, interp, ilen, RF_FOLLOW | RF_PROVEN,
                                   t->scratch, &res);
                        if (res.unknown)
                                t->guesses |= CA_TRACE_GUESS_LINKS;
                        if (res.toolong ||
                            !trace_add_walk(t, t->scratch, res.len, CA_TRACE_WALK_INTERP, 0))
                                break;
                        cur = t->scratch;
                        clen = res.len;
                        cur_walk = t->nwalks - 1;
                        continue;
                }
                if (kind == X_UNKNOWN)
                        t->guesses |= CA_TRACE_GUESS_INTERP; /* taken for the image */
                /* the image, mapped for as long as the mm lives */
                f = mm ? file_new(t, cur, clen, true) : NULL;
                if (f) {
                        if (cur_walk == SIZE_MAX)
                                ev->hold = f->hold;
                        else
                                t->walks[cur_walk].hold = f->hold;
                        mm_add(t, mm, 0, f);
                        file_unref(t, f);
                }
                if (kind == X_ELF && ilen > 0) {
                        trace_walk(t, pid, base, interp, ilen, RF_FOLLOW | RF_PROVEN,
                                   t->scratch, &res);
                        if (res.unknown)
                                t->guesses |= CA_TRACE_GUESS_LINKS;
                        f = !res.toolong && mm ? file_new(t, t->scratch, res.len, true) : NULL;
                        if (!res.toolong)
                                trace_add_walk(t, t->scratch, res.len, CA_TRACE_WALK_INTERP,
                                               f ? f->hold : 0);
                        if (f) {
                                mm_add(t, mm, 0, f);
                                file_unref(t, f);
                        }
                }
                break;
        }
}

/* ---- one call ---- */

static unsigned result_flags(bool ok, int err)
{
        if (ok)
                return RF_PROVEN;
        if (err == ENOENT)
                return RF_STOP_ABSENT;
        if (err == ENOTDIR)
                return RF_STOP_NOTDIR;
        return 0;
}

/*
 * Where a failed call's walk ended when the walk did not stop at a known fault: the guess,
 * said in the event. -ENOENT: the last component (for a create, the parent); -ENOTDIR: the
 * parent (the last when it had to be a directory).
 */
static size_t guess_fault(struct ca_trace *t, int err, unsigned rflags, char *out, size_t len)
{
        if (err == ENOENT) {
                t->guesses |= CA_TRACE_GUESS_MISSING;
                return (rflags & RF_CREATE) ? cut_last(out, len) : len;
        }
        t->guesses |= CA_TRACE_GUESS_NOTDIR;
        return (rflags & RF_DIR) ? len : cut_last(out, len);
}

/* What the log just did to a name, for the facts that later walks consult. */
static void learn(struct ca_trace *t, const char *path, enum fact_kind kind)
{
        trace_fact_set(t, path, strlen(path), kind, NULL, 0);
}

/*
 * One whole call "name(args) = result" of @pid. Returns 1 with *ev filled, else 0 with the
 * line counted.
 */
static int do_call(struct ca_trace *t, int pid, uint64_t time_usec, const char *body,
                   struct ca_trace_event *ev)
{
        const struct sc_desc *sc;
        struct args args;
        const char *p = body;
        struct walk_res res = { 0 }, res2 = { 0 };
        struct proc *proc;
        unsigned rflags, rflags2 = 0, oflags;
        uint64_t value = 0;
        int err = 0, res_kind;
        bool ok, two;
        int r;

        while (is_ident(*p))
                p++;
        sc = sc_find(t, body, (size_t)(p - body));
        if (!sc)
                return skip(t, &t->stats.skipped_other);
        if (!split_args(p + 1, &args))
                return skip(t, &t->stats.skipped_malformed);
        res_kind = parse_result(args.end, &value, &err);
        if (res_kind < 0)
                return skip(t, &t->stats.skipped_malformed);
        if (res_kind == RES_NONE)
                return skip(t, &t->stats.skipped_noresult);
        ok = res_kind == RES_OK;
        /*
         * readlink of what is not a link: do_readlinkat() says EINVAL only after its walk went
         * through and found an object (only a size of 0 fails before any walk), so for the
         * cache it is a lookup that succeeded, the path's dentries made and released.
         * glibc's realpath() and gcc's prefix code readlink every component they meet.
         */
        if (!ok && err == EINVAL && sc->kind == K_READLINK && arg_positive(&args, sc->path + 2)) {
                ok = true;
                err = 0;
        }
        proc = proc_get(t, pid);
        t->release_name = sc->name;
        if (sc->kind >= K_GETCWD)
                return do_state(t, sc, proc, &args, ok, value);

        *ev = (struct ca_trace_event){
                .time_usec = time_usec,
                .pid = pid,
                .syscall = sc->name,
                .path = t->out[0],
                .result = ok ? 0 : -err,
        };

        if (sc->kind == K_FCHDIR) {
                size_t deco_len;
                struct file *f;
                int fd;

                if (!arg_fd(&args, 0, &fd, t->out[0], &deco_len))
                        return skip(t, &t->stats.skipped_malformed);
                f = proc ? fd_file(proc->fds, fd) : NULL;
                if (deco_len > 0) {
                        /* -y told us: already in out[0], canonical */
                } else if (f) {
                        memcpy(t->out[0], f->path->s, f->path->len + 1);
                } else {
                        t->stats.fds_unknown++;
                        if (ok)
                                set_cwd(t, proc, NULL); /* somewhere we cannot tell */
                        return skip(t, &t->stats.skipped_dirfd);
                }
                ev->op = CA_TRACE_CHDIR;
                if (ok) {
                        /* set_fs_pwd(): a reference of its own on the fd's path */
                        struct file *cwd = file_new(t, t->out[0], strlen(t->out[0]), true);

                        ev->hold = cwd ? cwd->hold : 0;
                        set_cwd(t, proc, cwd);
                }
                return 1;
        }

        /* the flags are read only where they change something: lines are many */
        oflags = sc->kind == K_OPEN ? open_flags(&args, sc->flags) : 0;
        rflags = result_flags(ok, err);
        if (trace_facts_active(t) ? follows(sc, &args, oflags) : sc->follow != FOL_NO)
                rflags |= RF_FOLLOW; /* without facts only /proc/self can be a link */
        if (!ok && err == ENOTDIR &&
            (sc->dir || (oflags & OF_DIRECTORY) ||
             (sc->kind == K_UNLINKAT && arg_has_flag(&args, sc->flags, "AT_REMOVEDIR", 0x200)) ||
             (sc->follow == FOL_INOTIFY &&
              arg_has_flag(&args, sc->flags, "IN_ONLYDIR", 0x01000000))))
                rflags |= RF_DIR;
        if (sc->kind == K_CREAT || sc->kind == K_MKNOD || sc->kind == K_MKDIR ||
            (oflags & OF_CREAT))
                rflags |= RF_CREATE;
        two = sc->path2 >= 0 && sc->kind != K_SYMLINK;

        if (sc->kind == K_SYMLINK) {
                size_t len;

                r = arg_string(t, &args, sc->path, &len);
                if (r != STR_OK)
                        return resolve_count(t, RESOLVE_BAD);
                memcpy(t->out[1], t->dec, len + 1); /* the target text, never looked up */
                r = resolve(t, pid, proc, &args, sc->dirfd2, sc->path2,
                            (rflags & ~(RF_FOLLOW | RF_DIR)) | RF_CREATE, t->out[0], &res);
                if (r != RESOLVE_OK)
                        return resolve_count(t, r);
                /* the event's path is the text, path2 the new name */
                memcpy(t->scratch, t->out[0], res.len + 1);
                memcpy(t->out[0], t->out[1], len + 1);
                memcpy(t->out[1], t->scratch, res.len + 1);
                ev->path2 = t->out[1];
                if (res.unknown)
                        t->guesses |= CA_TRACE_GUESS_LINKS;
                if (!ok && (err == ENOENT || err == ENOTDIR) && !res.stopped)
                        guess_fault(t, err, RF_CREATE, t->out[1], res.len);
                if (ok)
                        trace_fact_set(t, t->out[1], strlen(t->out[1]), F_LINK, t->out[0], len);
                ev->op = CA_TRACE_SYMLINK;
                goto out_event;
        }

        r = resolve(t, pid, proc, &args, sc->dirfd, sc->path, rflags, t->out[0], &res);
        if (r == RESOLVE_EMPTY && sc->kind == K_LINKAT &&
            arg_has_flag(&args, sc->flags, "AT_EMPTY_PATH", 0x1000)) {
                /* linkat(fd, "", dir, name, AT_EMPTY_PATH): an O_TMPFILE named. */
                r = resolve(t, pid, proc, &args, sc->dirfd2, sc->path2,
                            (rflags & ~RF_FOLLOW) | RF_CREATE, t->out[0], &res);
                if (r != RESOLVE_OK)
                        return resolve_count(t, r);
                if (res.unknown)
                        t->guesses |= CA_TRACE_GUESS_LINKS;
                if (!ok && (err == ENOENT || err == ENOTDIR) && !res.stopped)
                        guess_fault(t, err, RF_CREATE, t->out[0], res.len);
                if (ok)
                        learn(t, t->out[0], F_FILE);
                ev->op = ok ? CA_TRACE_CREATE : CA_TRACE_LOOKUP;
                goto out_event;
        }
        if (r != RESOLVE_OK)
                return resolve_count(t, r);
        if (two) {
                /* the second path is walked unless the first one failed already */
                rflags2 = (rflags & ~(RF_FOLLOW | RF_DIR)) | RF_CREATE;
                if (res.stopped) /* named, never walked */
                        rflags2 = (rflags2 & ~(RF_STOP_ABSENT | RF_STOP_NOTDIR | RF_PROVEN)) |
                                  RF_NO_WALKS;
                r = resolve(t, pid, proc, &args, sc->dirfd2, sc->path2, rflags2, t->out[1],
                            &res2);
                if (r != RESOLVE_OK)
                        return resolve_count(t, r);
                ev->path2 = t->out[1];
                if (!res.stopped && res2.stopped) { /* the fault was in the second path */
                        memcpy(t->out[0], t->out[1], res2.len + 1);
                        res = res2;
                }
        }
        if (!ok && (err == ENOENT || err == ENOTDIR) && !res.stopped)
                res.len = guess_fault(t, err, rflags | (res.dir ? RF_DIR : 0), t->out[0],
                                      res.len);
        if (res.unknown || res2.unknown)
                t->guesses |= CA_TRACE_GUESS_LINKS;

        switch (sc->kind) {
        case K_OPEN:
        case K_CREAT:
                ev->op = ok && (sc->kind == K_CREAT || (rflags & RF_CREATE)) ? CA_TRACE_CREATE
                                                                         : CA_TRACE_LOOKUP;
                if (ok && ev->op == CA_TRACE_CREATE)
                        learn(t, t->out[0], F_FILE);
                if (ok && proc && value <= INT_MAX) {
                        struct file *f = file_new(t, t->out[0], res.len, true);

                        ev->hold = f ? f->hold : 0;
                        fd_install(t, proc->fds, (int)value, f, oflags & OF_CLOEXEC);
                }
                break;
        case K_MKNOD:
                ev->op = ok ? CA_TRACE_CREATE : CA_TRACE_LOOKUP;
                if (ok)
                        learn(t, t->out[0], F_FILE);
                break;
        case K_LOOKUP:
                ev->op = CA_TRACE_LOOKUP;
                break;
        case K_READLINK: {
                /* readlink(path, buf, size) = n: the link's text, when strace printed it whole */
                int bi = sc->path + 1;
                size_t len;

                ev->op = CA_TRACE_LOOKUP;
                if (ok && arg_string(t, &args, bi, &len) == STR_OK && len == value && len > 0)
                        trace_fact_set(t, t->out[0], res.len, F_LINK, t->dec, len);
                break;
        }
        case K_EXEC:
                ev->op = CA_TRACE_EXEC;
                if (ok)
                        do_exec(t, proc, pid, ev, res.len);
                break;
        case K_MKDIR:
                ev->op = CA_TRACE_MKDIR;
                if (ok)
                        learn(t, t->out[0], F_DIR);
                break;
        case K_UNLINK:
                ev->op = CA_TRACE_UNLINK;
                if (ok)
                        learn(t, t->out[0], F_ABSENT);
                break;
        case K_UNLINKAT:
                ev->op = arg_has_flag(&args, sc->flags, "AT_REMOVEDIR", 0x200) ? CA_TRACE_RMDIR
                                                                             : CA_TRACE_UNLINK;
                if (ok)
                        learn(t, t->out[0], F_ABSENT);
                break;
        case K_RMDIR:
                ev->op = CA_TRACE_RMDIR;
                if (ok)
                        learn(t, t->out[0], F_ABSENT);
                break;
        case K_RENAME2:
                if (arg_has_flag(&args, sc->flags, "RENAME_EXCHANGE", 2)) {
                        ev->op = CA_TRACE_LOOKUP;
                        ev->path2 = NULL;
                        break;
                }
                __attribute__((fallthrough));
        case K_RENAME:
                ev->op = CA_TRACE_RENAME;
                if (ok)
                        trace_fact_rename(t, t->out[0], res.len, t->out[1], res2.len);
                break;
        case K_LINK:
        case K_LINKAT:
                ev->op = CA_TRACE_LINK;
                if (ok)
                        learn(t, t->out[1], F_FILE);
                break;
        case K_CHDIR:
                ev->op = CA_TRACE_CHDIR;
                if (ok) {
                        struct file *cwd = file_new(t, t->out[0], res.len, true);

                        ev->hold = cwd ? cwd->hold : 0;
                        set_cwd(t, proc, cwd);
                }
                break;
        default:
                assert(false);
                return skip(t, &t->stats.skipped_other);
        }

out_event:
        return 1;
}

/*
 * The stderr form prints the first process bare while it is alone and as "[pid N]" while
 * others live; every other process is announced by "strace: Process N attached" first.
 * So a bracketed pid never announced nor seen, in a log whose first process is bare, is
 * that process again. Without attach lines (-q) nothing is aliased: no guess.
 */
static int main_pid(struct ca_trace *t, int pid)
{
        if (pid == t->main_alias)
                return 0;
        if (t->main_alias < 0 && t->seen_attach && t->have_first && t->first_pid == 0 &&
            !proc_find(t, pid)) {
                t->main_alias = pid;
                return 0;
        }
        return pid;
}

/* "strace: Process N attached": a new process (or, before any call, the one -p names). */
static void note_attached(struct ca_trace *t, const char *msg)
{
        uint64_t v;

        if (strncmp(msg, "Process ", 8) != 0)
                return;
        msg += 8;
        if (!parse_uint(&msg, INT_MAX, &v) || strcmp(msg, " attached") != 0)
                return;
        t->seen_attach = true;
        if (!t->have_first && t->main_alias < 0)
                t->main_alias = (int) v;
        else if ((int) v != t->main_alias)
                proc_get(t, (int) v); /* known now: never taken for the first process */
}

/* "<... NAME resumed>REST": joined with the pid's held half, then handled whole. */
static int do_resumed(struct ca_trace *t, int pid, uint64_t time_usec, const char *body,
                      struct ca_trace_event *ev);

static int do_body(struct ca_trace *t, int pid, uint64_t time_usec, const char *body,
                   size_t len, struct ca_trace_event *ev)
{
        static const char marker[] = " <unfinished ...>";
        const size_t mlen = sizeof(marker) - 1;
        struct proc *p;
        const char *q;

        t->line_pid = pid;
        t->line_time = time_usec;
        /* a call, mostly: the other forms start with punctuation, or are strace's notes */
        if (is_ident(body[0]) && !(body[0] == 's' && strncmp(body, "strace: ", 8) == 0))
                goto out_call;
        if (strncmp(body, "<... ", 5) == 0)
                return do_resumed(t, pid, time_usec, body, ev);
        if (strncmp(body, "+++ ", 4) == 0) {
                if (strncmp(body + 4, "exited ", 7) == 0 || strncmp(body + 4, "killed ", 7) == 0 ||
                    strncmp(body + 4, "superseded ", 11) == 0) {
                        /* its fds, mappings and cwd let go; the pid may be reused */
                        proc_drop(t, pid);
                        *ev = (struct ca_trace_event){ .time_usec = time_usec, .pid = pid,
                                                       .op = CA_TRACE_EXIT, .syscall = "exit" };
                        if (pid > 0) {
                                snprintf(t->out[0], OUT_SIZE, "/proc/%d", pid);
                                ev->path = t->out[0];
                        }
                        return 1;
                }
                return skip(t, &t->stats.skipped_other);
        }
        if (strncmp(body, "strace: ", 8) == 0)
                note_attached(t, body + 8);
        if (strncmp(body, "--- ", 4) == 0 || strncmp(body, "strace: ", 8) == 0)
                return skip(t, &t->stats.skipped_other);
out_call:
        for (q = body; is_ident(*q); q++)
                ;
        if (q == body || *q != '(')
                return skip(t, &t->stats.skipped_malformed);
        while (len > 0 && body[len - 1] == ' ')
                len--;
        if (len < mlen || memcmp(body + len - mlen, marker, mlen) != 0)
                return do_call(t, pid, time_usec, body, ev);

        /* An unfinished half: held until its pid resumes it. */
        p = proc_get(t, pid);
        len -= mlen;
        if (!p)
                return skip(t, &t->stats.skipped_orphan);
        proc_orphan_held(t, p);
        if (!trace_charge(t, len + 1, false))
                return skip(t, &t->stats.skipped_orphan);
        p->held = malloc(len + 1);
        if (!p->held) {
                trace_uncharge(t, len + 1, false);
                return skip(t, &t->stats.skipped_orphan);
        }
        memcpy(p->held, body, len);
        p->held[len] = '\0';
        p->held_len = len;
        t->stats.unfinished++;
        return 0;
}

static int do_resumed(struct ca_trace *t, int pid, uint64_t time_usec, const char *body,
                      struct ca_trace_event *ev)
{
        const char *name = body + 5, *q = name, *rest;
        struct proc *p = proc_find(t, pid);
        size_t nlen, rlen, hlen;

        while (is_ident(*q))
                q++;
        nlen = (size_t) (q - name);
        if (strncmp(q, " resumed>", 9) != 0)
                return skip(t, &t->stats.skipped_malformed);
        rest = q + 9;
        if (!p || !p->held || p->held_len <= nlen || memcmp(p->held, name, nlen) != 0 ||
            p->held[nlen] != '(')
                return skip(t, &t->stats.skipped_orphan);
        hlen = p->held_len;
        rlen = strlen(rest);
        if (hlen + rlen > CA_TRACE_LINE_MAX) {
                proc_orphan_held(t, p);
                return skip(t, &t->stats.skipped_malformed);
        }
        memcpy(t->join, p->held, hlen);
        memcpy(t->join + hlen, rest, rlen + 1);
        /* The half stays counted in unfinished: this line accounts for the call. */
        free(p->held);
        p->held = NULL;
        p->held_len = 0;
        trace_uncharge(t, hlen + 1, false);
        if (strncmp(t->join, "<... ", 5) == 0) /* cannot nest; keeps recursion at one */
                return skip(t, &t->stats.skipped_malformed);
        return do_body(t, pid, time_usec, t->join, hlen + rlen, ev);
}

/* One line (NUL-terminated, @len bytes, no NUL inside). */
static int do_line(struct ca_trace *t, char *line, size_t len, struct ca_trace_event *ev)
{
        const char *p = line;
        uint64_t time_usec = 0, v;
        int pid = 0;

        t->stats.lines++;
        if (memchr(line, '\0', len))
                return skip(t, &t->stats.skipped_malformed);
        if (len > 0 && line[len - 1] == '\r')
                line[--len] = '\0';

        /* "[pid  123] " (stderr) or "123  " (-o): a number followed by a space. */
        if (strncmp(p, "[pid", 4) == 0) {
                p = skip_spaces(p + 4);
                if (!parse_uint(&p, INT_MAX, &v) || *p != ']' || p[1] != ' ')
                        return skip(t, &t->stats.skipped_malformed);
                pid = main_pid(t, (int) v);
                p += 2;
        } else if (is_digit(*p)) {
                const char *q = p;

                if (parse_uint(&q, INT_MAX, &v) && *q == ' ') {
                        pid = (int) v;
                        p = q;
                }
        }
        p = skip_spaces(p);
        if (is_digit(*p) && !parse_time(t, &p, &time_usec))
                return skip(t, &t->stats.skipped_malformed);
        p = skip_spaces(p);
        return do_body(t, pid, time_usec, p, len - (size_t) (p - line), ev);
}

/* ---- reading ---- */

/* The next line into *ret_line (NUL-terminated); 0 at end; over-long lines are counted. */
static int read_line(struct ca_trace *t, char **ret_line, size_t *ret_len)
{
        for (;;) {
                size_t avail = t->rlen - t->rpos, n;
                char *line = t->rbuf + t->rpos;
                char *nl = memchr(line, '\n', avail);

                if (nl) {
                        size_t len = (size_t) (nl - line);

                        t->rpos += len + 1;
                        if (t->skipping) { /* the tail of an over-long line */
                                t->skipping = false;
                                continue;
                        }
                        if (len > CA_TRACE_LINE_MAX) {
                                t->stats.lines++;
                                t->stats.skipped_malformed++;
                                continue;
                        }
                        *nl = '\0';
                        *ret_line = line;
                        *ret_len = len;
                        return 1;
                }
                if (t->skipping || avail > CA_TRACE_LINE_MAX) {
                        if (!t->skipping) {
                                t->stats.lines++;
                                t->stats.skipped_malformed++;
                                t->skipping = true;
                        }
                        t->rpos = t->rlen = 0;
                        avail = 0;
                } else if (t->rpos > 0) {
                        memmove(t->rbuf, line, avail);
                        t->rpos = 0;
                        t->rlen = avail;
                }
                if (t->eof) {
                        if (avail == 0)
                                return 0;
                        /* A last line without its newline. */
                        t->rbuf[t->rlen] = '\0';
                        *ret_line = t->rbuf;
                        *ret_len = avail;
                        t->rpos = t->rlen;
                        return 1;
                }
                n = READ_CAP - t->rlen;
                if (t->limited) {
                        if (t->read_left == 0)
                                return -EAGAIN; /* the place is kept: rbuf holds the rest */
                        if (n > t->read_left)
                                n = (size_t) t->read_left;
                }
                n = fread(t->rbuf + t->rlen, 1, n, t->f);
                if (n == 0) {
                        if (ferror(t->f))
                                return -EIO;
                        t->eof = true;
                }
                t->rlen += n;
                t->bytes_read += n;
                if (t->limited)
                        t->read_left -= n;
        }
}

/* ---- events ---- */

/* The next event of the capture information, before the first line's: mounts, pins, cwd. */
static bool info_event(struct ca_trace *t, struct ca_trace_event *ev)
{
        size_t i = t->info_next;
        const struct rstr *path;

        if (i < t->nmounts) {
                path = t->mounts[i].path;
                *ev = (struct ca_trace_event){ .op = CA_TRACE_MOUNT,
                                               .fstype = t->mounts[i].fstype->s };
        } else if ((i -= t->nmounts) < t->npins) {
                path = t->pins[i];
                *ev = (struct ca_trace_event){ .op = CA_TRACE_PIN };
        } else if (i == t->npins && t->start_cwd && (refs(t) || t->info)) {
                /* held by the traced program (and whoever started it) from the start */
                path = t->start_cwd->path;
                *ev = (struct ca_trace_event){ .op = CA_TRACE_PIN };
                ev->hold = t->start_cwd->hold = ++t->next_hold;
                t->info_next++;
                goto out_event;
        } else {
                return false;
        }
        t->info_next++;
        ev->hold = ++t->next_hold;

out_event:
        memcpy(t->out[0], path->s, path->len + 1);
        ev->path = t->out[0];
        ev->syscall = "info";
        t->stats.info_events++;
        return true;
}

/* The walks and drops gathered for this line, into its event; the guesses counted. */
static void finish_event(struct ca_trace *t, struct ca_trace_event *ev)
{
        for (size_t i = 0; i < t->nwalks; i++)
                t->walks[i].path = t->wstr + t->walk_off[i];
        ev->walks = t->nwalks ? t->walks : NULL;
        ev->nwalks = t->nwalks;
        ev->drops = t->ndrops ? t->drops : NULL;
        ev->ndrops = t->ndrops;
        ev->guesses = t->guesses;
        t->stats.guessed_links += (t->guesses & CA_TRACE_GUESS_LINKS) != 0;
        t->stats.guessed_missing += (t->guesses & CA_TRACE_GUESS_MISSING) != 0;
        t->stats.guessed_notdir += (t->guesses & CA_TRACE_GUESS_NOTDIR) != 0;
        t->stats.guessed_interp += (t->guesses & CA_TRACE_GUESS_INTERP) != 0;
        t->stats.events++;
}

int ca_trace_next(struct ca_trace *t, struct ca_trace_event *ret)
{
        struct ca_trace_event ev;
        size_t len;
        char *line;
        int r;

        if (!t || !ret)
                return -EINVAL;
        t->started = true;
        while (!t->finished) {
                t->nwalks = t->wstr_len = t->ndrops = 0;
                t->guesses = 0;
                t->counted = NULL;
                t->release_name = NULL;
                if (info_event(t, &ev)) {
                        finish_event(t, &ev);
                        *ret = ev;
                        return 1;
                }
                r = read_line(t, &line, &len);
                if (r < 0)
                        return r;
                if (r == 0) {
                        /* Halves whose "resumed" never came. */
                        for (size_t b = 0; b < PID_BUCKETS; b++)
                                for (struct proc *p = t->buckets[b]; p; p = p->next)
                                        proc_orphan_held(t, p);
                        t->finished = true;
                        break;
                }
                ev = (struct ca_trace_event){ 0 };
                if (do_line(t, line, len, &ev) > 0) {
                        finish_event(t, &ev);
                        *ret = ev;
                        return 1;
                }
                if (t->ndrops > 0 && t->counted) {
                        /* nothing else to say: the line is the end of references */
                        (*t->counted)--;
                        ev = (struct ca_trace_event){ .time_usec = t->line_time,
                                                      .pid = t->line_pid,
                                                      .op = CA_TRACE_RELEASE,
                                                      .syscall = t->release_name
                                                                         ? t->release_name
                                                                         : "release" };
                        t->nwalks = 0;
                        t->guesses = 0;
                        finish_event(t, &ev);
                        *ret = ev;
                        return 1;
                }
        }
        return 0;
}

void ca_trace_set_read_limit(struct ca_trace *t, uint64_t bytes)
{
        if (!t)
                return;
        t->limited = bytes > 0;
        t->read_left = bytes;
}

uint64_t ca_trace_bytes_read(const struct ca_trace *t)
{
        return t ? t->bytes_read : 0;
}

/* ---- lifetime ---- */

int ca_trace_set_options(struct ca_trace *t, unsigned flags)
{
        if (!t || (flags & ~(unsigned)(CA_TRACE_REFS | CA_TRACE_PROBE)))
                return -EINVAL;
        if (t->started)
                return -EBUSY;
        t->options = flags;
        if (flags & CA_TRACE_PROBE)
                t->info = true;
        return 0;
}

int ca_trace_open_file(FILE *f, const char *cwd, struct ca_trace **ret)
{
        struct walk_res res;
        struct ca_trace *t;
        size_t len;

        if (!f || !ret)
                return -EINVAL;
        if (!cwd)
                cwd = "/";
        len = strlen(cwd);
        if (cwd[0] != '/' || len > CA_TRACE_LINE_MAX)
                return -EINVAL;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->f = f;
        t->main_alias = -1;
        sc_index(t);
        t->rbuf = malloc(READ_CAP + 1);
        t->join = malloc(CA_TRACE_LINE_MAX + 1);
        t->dec = malloc(CA_TRACE_LINE_MAX + 1);
        t->deco = malloc(CA_TRACE_LINE_MAX + 1);
        t->out[0] = malloc(OUT_SIZE);
        t->out[1] = malloc(OUT_SIZE);
        t->scratch = malloc(OUT_SIZE);
        if (!t->rbuf || !t->join || !t->dec || !t->deco || !t->out[0] || !t->out[1] ||
            !t->scratch)
                goto out_free;
        trace_walk(t, 0, NULL, cwd, len, RF_NO_WALKS, t->out[0], &res);
        t->start_cwd = file_new(t, t->out[0], res.len, false); /* its hold: at its PIN */
        if (!t->start_cwd)
                goto out_free;
        t->first_fs = fs_new(t, t->start_cwd);
        if (!t->first_fs)
                goto out_free;
        *ret = t;
        return 0;

out_free:
        ca_trace_free(t);
        return -ENOMEM;
}

int ca_trace_open_path(const char *path, const char *cwd, struct ca_trace **ret)
{
        FILE *f;
        int r;

        if (!path || !ret)
                return -EINVAL;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        r = ca_trace_open_file(f, cwd, ret);
        if (r < 0) {
                fclose(f);
                return r;
        }
        (*ret)->own_f = true;
        return 0;
}

struct ca_trace *ca_trace_free(struct ca_trace *t)
{
        if (!t)
                return NULL;
        for (size_t b = 0; b < PID_BUCKETS; b++) {
                struct proc *p = t->buckets[b];

                while (p) {
                        struct proc *next = p->next;

                        if (p->held)
                                trace_uncharge(t, p->held_len + 1, false);
                        free(p->held);
                        proc_free(t, p);
                        p = next;
                }
        }
        fs_unref(t, t->first_fs);
        file_unref(t, t->start_cwd);
        trace_facts_free(t);
        if (t->own_f && t->f)
                fclose(t->f);
        free(t->rbuf);
        free(t->join);
        free(t->dec);
        free(t->deco);
        free(t->out[0]);
        free(t->out[1]);
        free(t->scratch);
        free(t->stk);
        free(t->wstr);
        free(t->drops);
        free(t);
        return NULL;
}

void ca_trace_get_stats(const struct ca_trace *t, struct ca_trace_stats *ret)
{
        if (t && ret)
                *ret = t->stats;
}

const char *ca_trace_op_name(enum ca_trace_op op)
{
        static const char *const names[_CA_TRACE_OP_MAX] = {
                [CA_TRACE_LOOKUP] = "lookup",   [CA_TRACE_CREATE] = "create",
                [CA_TRACE_EXEC] = "exec",       [CA_TRACE_MKDIR] = "mkdir",
                [CA_TRACE_UNLINK] = "unlink",   [CA_TRACE_RMDIR] = "rmdir",
                [CA_TRACE_RENAME] = "rename",   [CA_TRACE_LINK] = "link",
                [CA_TRACE_SYMLINK] = "symlink", [CA_TRACE_CHDIR] = "chdir",
                [CA_TRACE_RELEASE] = "release", [CA_TRACE_PIN] = "pin",
                [CA_TRACE_MOUNT] = "mount",     [CA_TRACE_EXIT] = "exit",
        };

        if ((unsigned)op >= _CA_TRACE_OP_MAX)
                return NULL;
        return names[op];
}
