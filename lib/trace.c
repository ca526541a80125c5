/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * strace log reader. One line at a time from a fixed buffer (a line is never longer than
 * CA_TRACE_LINE_MAX in memory), parsed in place: prefix (pid, timestamp), then a body that
 * is a syscall, a resumed half, or an exit/signal note. Arguments are split at top-level
 * commas, skipping quoted strings, brackets, comments and -y "<path>" decorations, so a
 * path argument is found by position (the table below) and decoded from its C escapes.
 *
 * State between lines, all bounded: per pid a held "<unfinished ...>" half and a pointer to
 * an fs context (working directory + the last few fds opened), shared by the pids a
 * CLONE_FS clone joins, as the kernel's fs_struct is. Strings kept are reference counted
 * and charged to one byte budget (CA_TRACE_STATE_MAX); when it is spent, the state is
 * dropped (cwd unknown, fd forgotten, half orphaned) so that later lines are skipped and
 * counted instead of resolved against a guess.
 *
 * Why trust fds at all: trace=%file hides close(), dup() and socket(), so an fd number
 * could be reused behind our back. Relative *at() calls use directory fds opened just
 * before (openat O_DIRECTORY, then fstatat/openat on it), so the last open that returned
 * the number is nearly always the right one; close/dup/fcntl(F_DUPFD) are honoured when
 * the log has them, and a successful execve forgets the fds (most are O_CLOEXEC).
 */

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cacheage/trace.h"

#define PID_BUCKETS 4096        /* hash chains of the pid table */
#define ARGS_MAX 8              /* arguments remembered per call; the rest are skipped */
#define READ_SLACK 65536        /* bytes read beyond one maximal line, to read in blocks */
#define DAY_USEC (86400ull * 1000000ull)

/* A kept string: working directories and fd paths are shared between pids. */
struct rstr {
        unsigned ref;
        size_t len; /* bytes, without the NUL */
        char s[];
};

/* What the kernel keeps in fs_struct and the fd table, as much as the log tells. */
struct fsctx {
        unsigned ref;
        struct rstr *cwd; /* NULL: unknown (fchdir to an fd we did not see opened) */
        struct {
                int fd; /* -1: free */
                struct rstr *path;
        } fds[CA_TRACE_FDS_MAX];
        unsigned fd_next; /* slot taken when all are in use (round robin) */
};

struct proc {
        struct proc *next; /* hash chain */
        int pid;
        bool guessed;      /* fs copied by the first-pid rule; a clone line may correct it */
        struct fsctx *fs;
        char *held;        /* the "<unfinished ...>" half, marker removed; NULL: none */
        size_t held_len;
};

struct ca_trace {
        FILE *f;
        bool own_f;
        bool eof, skipping, finished;

        char *rbuf;          /* READ_CAP + 1 bytes */
        size_t rpos, rlen;
        char *join;          /* a held half + its resumed rest, CA_TRACE_LINE_MAX + 1 bytes */
        char *dec;           /* a decoded string, CA_TRACE_LINE_MAX + 1 bytes */
        char *deco;          /* a decoded -y "<path>" of a dirfd, CA_TRACE_LINE_MAX + 1 bytes */
        char *out[2];        /* event paths, 2 * CA_TRACE_LINE_MAX + 2 bytes each */

        struct proc *buckets[PID_BUCKETS];
        size_t procs;
        bool have_first;
        int first_pid;
        bool seen_attach;       /* "strace: Process N attached" lines are in the log */
        int main_alias;         /* stderr form: the first process's own pid, -1: unknown */
        struct fsctx *first_fs; /* before the first pid is seen and after it exits: its fs */

        size_t state_bytes; /* charged against CA_TRACE_STATE_MAX */
        uint64_t day_usec, last_tod_usec;
        bool tod_seen;

        struct ca_trace_stats stats;
};

#define READ_CAP ((size_t) CA_TRACE_LINE_MAX + 1 + READ_SLACK)
#define OUT_SIZE (2 * (size_t) CA_TRACE_LINE_MAX + 2)

/* ---- kept strings and fs contexts ---- */

static struct rstr *rstr_new(struct ca_trace *t, const char *s, size_t len)
{
        size_t size = sizeof(struct rstr) + len + 1;
        struct rstr *r;

        if (len > CA_TRACE_LINE_MAX || t->state_bytes + size > CA_TRACE_STATE_MAX)
                return NULL;
        r = malloc(size);
        if (!r)
                return NULL;
        r->ref = 1;
        r->len = len;
        memcpy(r->s, s, len);
        r->s[len] = '\0';
        t->state_bytes += size;
        return r;
}

static struct rstr *rstr_ref(struct rstr *r)
{
        if (r)
                r->ref++;
        return r;
}

static struct rstr *rstr_unref(struct ca_trace *t, struct rstr *r)
{
        if (r && --r->ref == 0) {
                t->state_bytes -= sizeof(struct rstr) + r->len + 1;
                free(r);
        }
        return NULL;
}

static struct fsctx *fs_new(struct rstr *cwd)
{
        struct fsctx *fs = calloc(1, sizeof(*fs));

        if (!fs)
                return NULL;
        fs->ref = 1;
        fs->cwd = rstr_ref(cwd);
        for (unsigned i = 0; i < CA_TRACE_FDS_MAX; i++)
                fs->fds[i].fd = -1;
        return fs;
}

static void fs_forget_fds(struct ca_trace *t, struct fsctx *fs)
{
        for (unsigned i = 0; i < CA_TRACE_FDS_MAX; i++) {
                fs->fds[i].fd = -1;
                fs->fds[i].path = rstr_unref(t, fs->fds[i].path);
        }
}

static struct fsctx *fs_unref(struct ca_trace *t, struct fsctx *fs)
{
        if (fs && --fs->ref == 0) {
                fs_forget_fds(t, fs);
                rstr_unref(t, fs->cwd);
                free(fs);
        }
        return NULL;
}

/* A fork's copy: same cwd, same fds (when @with_fds). */
static struct fsctx *fs_copy(const struct fsctx *from, bool with_fds)
{
        struct fsctx *fs = fs_new(from->cwd);

        if (!fs || !with_fds)
                return fs;
        for (unsigned i = 0; i < CA_TRACE_FDS_MAX; i++) {
                fs->fds[i].fd = from->fds[i].fd;
                fs->fds[i].path = rstr_ref(from->fds[i].path);
        }
        fs->fd_next = from->fd_next;
        return fs;
}

static void fs_set_cwd(struct ca_trace *t, struct fsctx *fs, struct rstr *cwd /* consumed */)
{
        rstr_unref(t, fs->cwd);
        fs->cwd = cwd;
}

static int fs_find_fd(const struct fsctx *fs, int fd)
{
        for (unsigned i = 0; i < CA_TRACE_FDS_MAX; i++)
                if (fs->fds[i].fd == fd && fd >= 0)
                        return (int) i;
        return -1;
}

static void fs_drop_fd(struct ca_trace *t, struct fsctx *fs, int fd)
{
        int i = fs_find_fd(fs, fd);

        if (i >= 0) {
                fs->fds[i].fd = -1;
                fs->fds[i].path = rstr_unref(t, fs->fds[i].path);
        }
}

/* Remember @fd -> @path (consumed; NULL forgets @fd, so a stale path is never used). */
static void fs_set_fd(struct ca_trace *t, struct fsctx *fs, int fd, struct rstr *path)
{
        int i;

        fs_drop_fd(t, fs, fd);
        if (!path)
                return;
        i = fs_find_fd(fs, -1);
        if (i < 0) {
                i = (int) (fs->fd_next++ % CA_TRACE_FDS_MAX);
                rstr_unref(t, fs->fds[i].path);
        }
        fs->fds[i].fd = fd;
        fs->fds[i].path = path;
}

/* ---- the pid table ---- */

static unsigned pid_hash(int pid)
{
        return ((unsigned) pid * 2654435761u) >> 20 & (PID_BUCKETS - 1);
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
        t->state_bytes -= p->held_len + 1;
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

/*
 * The state of @pid, created on first sight: the log's first pid gets the starting cwd
 * (and keeps sharing it with first_fs), a later one a copy of first_fs's current cwd
 * (see trace.h). NULL when the table is full or memory is short: the caller then
 * resolves absolute paths only.
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
        if (!t->have_first) {
                p->fs = t->first_fs; /* handed over; proc_drop() hands it back */
                t->first_fs = NULL;
                t->first_pid = pid;
                t->have_first = true;
        } else {
                p->fs = fs_copy(default_fs(t), false);
                p->guessed = true;
        }
        if (!p->fs) {
                free(p);
                return NULL;
        }
        p->pid = pid;
        h = pid_hash(pid);
        p->next = t->buckets[h];
        t->buckets[h] = p;
        t->procs++;
        return p;
}

static void proc_drop(struct ca_trace *t, int pid)
{
        struct proc **pp = &t->buckets[pid_hash(pid)];

        for (; *pp; pp = &(*pp)->next) {
                struct proc *p = *pp;

                if (p->pid != pid)
                        continue;
                proc_orphan_held(t, p);
                *pp = p->next;
                if (!t->first_fs && pid == t->first_pid)
                        t->first_fs = p->fs; /* later pids still start from its cwd */
                else
                        fs_unref(t, p->fs);
                free(p);
                t->procs--;
                return;
        }
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
static bool decode_string(const char *p, char term, char *out, size_t *ret_len,
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
        K_GETCWD,     /* state only */
        K_CLONE,
        K_CLOSE,
        K_DUP,
        K_FCNTL,
};

/* Argument positions; -1: none (a missing dirfd means AT_FDCWD). */
struct sc_desc {
        const char *name;
        enum sc_kind kind;
        signed char dirfd, path, dirfd2, path2, flags;
};

static const struct sc_desc syscalls[] = {
        { "open",              K_OPEN,     -1, 0, -1, -1, 1 },
        { "openat",            K_OPEN,      0, 1, -1, -1, 2 },
        { "openat2",           K_OPEN,      0, 1, -1, -1, 2 },
        { "creat",             K_CREAT,    -1, 0, -1, -1, -1 },
        { "stat",              K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lstat",             K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "stat64",            K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lstat64",           K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "oldstat",           K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "oldlstat",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "newfstatat",        K_LOOKUP,    0, 1, -1, -1, -1 },
        { "fstatat64",         K_LOOKUP,    0, 1, -1, -1, -1 },
        { "statx",             K_LOOKUP,    0, 1, -1, -1, -1 },
        { "access",            K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "faccessat",         K_LOOKUP,    0, 1, -1, -1, -1 },
        { "faccessat2",        K_LOOKUP,    0, 1, -1, -1, -1 },
        { "execve",            K_EXEC,     -1, 0, -1, -1, -1 },
        { "execveat",          K_EXEC,      0, 1, -1, -1, -1 },
        { "readlink",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "readlinkat",        K_LOOKUP,    0, 1, -1, -1, -1 },
        { "mkdir",             K_MKDIR,    -1, 0, -1, -1, -1 },
        { "mkdirat",           K_MKDIR,     0, 1, -1, -1, -1 },
        { "unlink",            K_UNLINK,   -1, 0, -1, -1, -1 },
        { "unlinkat",          K_UNLINKAT,  0, 1, -1, -1, 2 },
        { "rmdir",             K_RMDIR,    -1, 0, -1, -1, -1 },
        { "rename",            K_RENAME,   -1, 0, -1, 1, -1 },
        { "renameat",          K_RENAME,    0, 1, 2, 3, -1 },
        { "renameat2",         K_RENAME2,   0, 1, 2, 3, 4 },
        { "link",              K_LINK,     -1, 0, -1, 1, -1 },
        { "linkat",            K_LINKAT,    0, 1, 2, 3, 4 },
        { "symlink",           K_SYMLINK,  -1, 0, -1, 1, -1 },
        { "symlinkat",         K_SYMLINK,  -1, 0, 1, 2, -1 },
        { "chdir",             K_CHDIR,    -1, 0, -1, -1, -1 },
        { "fchdir",            K_FCHDIR,    0, -1, -1, -1, -1 },
        { "mknod",             K_MKNOD,    -1, 0, -1, -1, -1 },
        { "mknodat",           K_MKNOD,     0, 1, -1, -1, -1 },
        /* Other path walks of trace=%file: lookups for a dentry model. */
        { "statfs",            K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "statfs64",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "truncate",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "truncate64",        K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "chmod",             K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "fchmodat",          K_LOOKUP,    0, 1, -1, -1, -1 },
        { "fchmodat2",         K_LOOKUP,    0, 1, -1, -1, -1 },
        { "chown",             K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lchown",            K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "chown32",           K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lchown32",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "fchownat",          K_LOOKUP,    0, 1, -1, -1, -1 },
        { "utime",             K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "utimes",            K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "utimensat",         K_LOOKUP,    0, 1, -1, -1, -1 },
        { "futimesat",         K_LOOKUP,    0, 1, -1, -1, -1 },
        { "getxattr",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lgetxattr",         K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "setxattr",          K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lsetxattr",         K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "listxattr",         K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "llistxattr",        K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "removexattr",       K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "lremovexattr",      K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "chroot",            K_LOOKUP,   -1, 0, -1, -1, -1 },
        { "inotify_add_watch", K_LOOKUP,   -1, 1, -1, -1, -1 },
        { "name_to_handle_at", K_LOOKUP,    0, 1, -1, -1, -1 },
        /* State only: working directories and fds. */
        { "getcwd",            K_GETCWD,   -1, 0, -1, -1, -1 },
        { "clone",             K_CLONE,    -1, -1, -1, -1, -1 },
        { "clone3",            K_CLONE,    -1, -1, -1, -1, -1 },
        { "fork",              K_CLONE,    -1, -1, -1, -1, -1 },
        { "vfork",             K_CLONE,    -1, -1, -1, -1, -1 },
        { "close",             K_CLOSE,    -1, -1, -1, -1, -1 },
        { "dup",               K_DUP,      -1, -1, -1, -1, -1 },
        { "dup2",              K_DUP,      -1, -1, -1, -1, -1 },
        { "dup3",              K_DUP,      -1, -1, -1, -1, -1 },
        { "fcntl",             K_FCNTL,    -1, -1, -1, -1, -1 },
        { "fcntl64",           K_FCNTL,    -1, -1, -1, -1, -1 },
};

static const struct sc_desc *sc_find(const char *name, size_t len)
{
        for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
                if (strncmp(syscalls[i].name, name, len) == 0 && syscalls[i].name[len] == '\0')
                        return &syscalls[i];
        return NULL;
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
                        if (strncmp(errnos[i].name, name, n) == 0 && errnos[i].name[n] == '\0')
                                *ret_errno = errnos[i].value;
                return RES_ERR;
        }
        if (p[0] == '0' && p[1] == 'x') {
                /* Only mmap-like calls print hex; none of ours needs the value. */
                *ret_value = UINT64_MAX;
                return is_ident(p[2]) ? RES_OK : -EINVAL;
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
        for (const char *p = a; (hit = memmem(p, (size_t) (end - p), name, n)); p = hit + 1)
                if ((hit == a || !is_ident(hit[-1])) && (hit + n == end || !is_ident(hit[n])))
                        return true;
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
        if (*a != '"' || !decode_string(a + 1, '"', t->dec, ret_len, &end))
                return STR_BAD;
        if (end != a + args->len[i])
                return STR_BAD;
        t->dec[*ret_len] = '\0';
        return STR_OK;
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

                if (!deco || !decode_string(p + 1, '>', deco, ret_deco_len, &e) || e != end ||
                    *ret_deco_len == 0 || deco[0] != '/')
                        return false;
                deco[*ret_deco_len] = '\0';
                return true;
        }
        return p == end;
}

/* Joins @base and @path (decoded, @len bytes) into the normalised absolute @out. */
static void normalise(const char *base, const char *path, size_t len, char *out)
{
        size_t n = 0;

        for (int pass = 0; pass < 2; pass++) {
                const char *p = pass == 0 ? base : path;
                const char *end = pass == 0 ? base + strlen(base) : path + len;

                if (pass == 0 && (len > 0 && path[0] == '/'))
                        continue;
                while (p < end) {
                        const char *c = p;
                        size_t cl;

                        while (p < end && *p != '/')
                                p++;
                        cl = (size_t) (p - c);
                        if (p < end)
                                p++;
                        if (cl == 0 || (cl == 1 && c[0] == '.'))
                                continue;
                        if (cl == 2 && c[0] == '.' && c[1] == '.') {
                                while (n > 0 && out[n - 1] != '/')
                                        n--;
                                if (n > 0)
                                        n--;
                                continue;
                        }
                        out[n++] = '/';
                        memcpy(out + n, c, cl);
                        n += cl;
                }
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
}

enum { RESOLVE_OK, RESOLVE_DIRFD, RESOLVE_BAD, RESOLVE_EMPTY };

/*
 * The absolute form of path argument @pi relative to dirfd argument @di (-1: the cwd)
 * into @out. @fs is NULL for a pid we do not track: only absolute paths resolve then.
 */
static int resolve(struct ca_trace *t, const struct fsctx *fs, const struct args *args,
                   int di, int pi, char *out)
{
        size_t len, deco_len;
        const char *base;
        int fd, i;
        int r;

        r = arg_string(t, args, pi, &len);
        if (r != STR_OK)
                return r == STR_NULL ? RESOLVE_EMPTY : RESOLVE_BAD;
        if (len == 0)
                return RESOLVE_EMPTY; /* AT_EMPTY_PATH: the fd itself, no name looked up */
        if (t->dec[0] == '/') {
                normalise("", t->dec, len, out);
                return RESOLVE_OK;
        }
        if (di < 0) {
                fd = -100;
                deco_len = 0;
        } else if (!arg_fd(args, di, &fd, t->deco, &deco_len)) {
                return RESOLVE_BAD;
        }
        if (deco_len > 0) {
                base = t->deco; /* -y told us where the dirfd points */
        } else if (!fs) {
                return RESOLVE_DIRFD;
        } else if (fd == -100) {
                if (!fs->cwd)
                        return RESOLVE_DIRFD;
                base = fs->cwd->s;
        } else {
                i = fs_find_fd(fs, fd);
                if (i < 0)
                        return RESOLVE_DIRFD;
                base = fs->fds[i].path->s;
        }
        normalise(base, t->dec, len, out);
        return RESOLVE_OK;
}

static int resolve_count(struct ca_trace *t, int r)
{
        switch (r) {
        case RESOLVE_DIRFD:
                t->stats.skipped_dirfd++;
                break;
        case RESOLVE_EMPTY:
                t->stats.skipped_other++;
                break;
        default:
                t->stats.skipped_malformed++;
                break;
        }
        return 0;
}

static struct rstr *out_keep(struct ca_trace *t, const char *s)
{
        return rstr_new(t, s, strlen(s));
}

/* clone/fork/vfork returned @child in @parent: it inherits the cwd (shared with CLONE_FS). */
static void inherit(struct ca_trace *t, struct proc *parent, int child, bool share_fs)
{
        struct proc *c = proc_find(t, child);
        struct fsctx *fs;

        if (c && !c->guessed)
                return; /* it has a cwd of its own already (chdir before this line) */
        if (!c) {
                c = proc_get(t, child);
                if (!c)
                        return;
        }
        if (share_fs) {
                parent->fs->ref++;
                fs = parent->fs;
        } else {
                fs = fs_copy(parent->fs, true);
                if (!fs)
                        return;
        }
        fs_unref(t, c->fs);
        c->fs = fs;
        c->guessed = false;
}

/* The state-only calls: working directories and fds. Counted as other. */
static int do_state(struct ca_trace *t, const struct sc_desc *sc, struct proc *p,
                    const struct args *args, uint64_t value)
{
        size_t len, deco_len;
        int fd, fd2, i;

        t->stats.skipped_other++;
        if (!p || value > INT_MAX)
                return 0;
        switch (sc->kind) {
        case K_GETCWD:
                if (arg_string(t, args, 0, &len) == STR_OK && len > 0 && t->dec[0] == '/') {
                        normalise("", t->dec, len, t->out[0]);
                        fs_set_cwd(t, p->fs, out_keep(t, t->out[0]));
                        p->guessed = false;
                }
                break;
        case K_CLONE:
                if (value > 0)
                        inherit(t, p, (int) value,
                                arg_has_flag(args, 0, "CLONE_FS", 0) ||
                                        arg_has_flag(args, 1, "CLONE_FS", 0));
                break;
        case K_CLOSE:
                if (arg_fd(args, 0, &fd, NULL, &deco_len))
                        fs_drop_fd(t, p->fs, fd);
                break;
        case K_FCNTL:
                if (!arg_has_flag(args, 1, "F_DUPFD", 0) &&
                    !arg_has_flag(args, 1, "F_DUPFD_CLOEXEC", 0))
                        break;
                __attribute__((fallthrough));
        case K_DUP:
                fd2 = (int) value;
                if (!arg_fd(args, 0, &fd, NULL, &deco_len) || fd == fd2)
                        break;
                i = fs_find_fd(p->fs, fd);
                fs_set_fd(t, p->fs, fd2, i >= 0 ? rstr_ref(p->fs->fds[i].path) : NULL);
                break;
        default:
                break;
        }
        return 0;
}

static void set_cwd(struct ca_trace *t, struct proc *p, const char *path)
{
        if (!p)
                return;
        fs_set_cwd(t, p->fs, path ? out_keep(t, path) : NULL);
        p->guessed = false;
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
        struct proc *proc;
        struct fsctx *fs;
        uint64_t value = 0;
        int err = 0, res;
        int r;

        while (is_ident(*p))
                p++;
        sc = sc_find(body, (size_t) (p - body));
        if (!sc) {
                t->stats.skipped_other++;
                return 0;
        }
        if (!split_args(p + 1, &args)) {
                t->stats.skipped_malformed++;
                return 0;
        }
        res = parse_result(args.end, &value, &err);
        if (res < 0) {
                t->stats.skipped_malformed++;
                return 0;
        }
        if (res == RES_NONE) {
                t->stats.skipped_noresult++;
                return 0;
        }
        proc = proc_get(t, pid);
        fs = proc ? proc->fs : NULL;
        if (sc->kind >= K_GETCWD)
                return do_state(t, sc, proc, &args, res == RES_OK ? value : UINT64_MAX);

        *ev = (struct ca_trace_event) {
                .time_usec = time_usec,
                .pid = pid,
                .syscall = sc->name,
                .path = t->out[0],
                .result = res == RES_OK ? 0 : -err,
        };

        if (sc->kind == K_FCHDIR) {
                size_t deco_len;
                int fd, i;

                if (!arg_fd(&args, 0, &fd, t->out[0], &deco_len)) {
                        t->stats.skipped_malformed++;
                        return 0;
                }
                if (deco_len > 0) {
                        /* -y told us: already in out[0] */
                } else if (fs && (i = fs_find_fd(fs, fd)) >= 0) {
                        memcpy(t->out[0], fs->fds[i].path->s, fs->fds[i].path->len + 1);
                } else {
                        if (res == RES_OK)
                                set_cwd(t, proc, NULL); /* somewhere we cannot tell */
                        t->stats.skipped_dirfd++;
                        return 0;
                }
                ev->op = CA_TRACE_CHDIR;
                if (res == RES_OK)
                        set_cwd(t, proc, t->out[0]);
                return 1;
        }

        if (sc->kind == K_SYMLINK) {
                size_t len;

                r = arg_string(t, &args, sc->path, &len);
                if (r != STR_OK)
                        return resolve_count(t, RESOLVE_BAD);
                memcpy(t->out[0], t->dec, len + 1); /* the target text, never looked up */
        } else {
                r = resolve(t, fs, &args, sc->dirfd, sc->path, t->out[0]);
                if (r == RESOLVE_EMPTY && sc->kind == K_LINKAT &&
                    arg_has_flag(&args, sc->flags, "AT_EMPTY_PATH", 0x1000)) {
                        /* linkat(fd, "", dir, name, AT_EMPTY_PATH): an O_TMPFILE named. */
                        r = resolve(t, fs, &args, sc->dirfd2, sc->path2, t->out[0]);
                        if (r != RESOLVE_OK)
                                return resolve_count(t, r);
                        ev->op = res == RES_OK ? CA_TRACE_CREATE : CA_TRACE_LOOKUP;
                        return 1;
                }
                if (r != RESOLVE_OK)
                        return resolve_count(t, r);
        }
        if (sc->path2 >= 0) {
                r = resolve(t, fs, &args, sc->dirfd2, sc->path2, t->out[1]);
                if (r != RESOLVE_OK)
                        return resolve_count(t, r);
                ev->path2 = t->out[1];
        }

        switch (sc->kind) {
        case K_OPEN:
        case K_CREAT:
                if (res == RES_OK && proc && value <= INT_MAX)
                        fs_set_fd(t, fs, (int) value, out_keep(t, t->out[0]));
                ev->op = res == RES_OK && (sc->kind == K_CREAT ||
                                           arg_has_flag(&args, sc->flags, "O_CREAT", 0100))
                                 ? CA_TRACE_CREATE
                                 : CA_TRACE_LOOKUP;
                break;
        case K_MKNOD:
                ev->op = res == RES_OK ? CA_TRACE_CREATE : CA_TRACE_LOOKUP;
                break;
        case K_LOOKUP:
                ev->op = CA_TRACE_LOOKUP;
                break;
        case K_EXEC:
                ev->op = CA_TRACE_EXEC;
                if (res == RES_OK && proc) {
                        /*
                         * A new image: O_CLOEXEC fds are gone. A CLONE_FS sharer (a thread,
                         * killed by the exec anyway) keeps them: fds are not split from
                         * the cwd here.
                         */
                        if (fs->ref == 1)
                                fs_forget_fds(t, fs);
                }
                break;
        case K_MKDIR:
                ev->op = CA_TRACE_MKDIR;
                break;
        case K_UNLINK:
                ev->op = CA_TRACE_UNLINK;
                break;
        case K_UNLINKAT:
                ev->op = arg_has_flag(&args, sc->flags, "AT_REMOVEDIR", 0x200) ? CA_TRACE_RMDIR
                                                                             : CA_TRACE_UNLINK;
                break;
        case K_RMDIR:
                ev->op = CA_TRACE_RMDIR;
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
                break;
        case K_LINK:
        case K_LINKAT:
                ev->op = CA_TRACE_LINK;
                break;
        case K_SYMLINK:
                ev->op = CA_TRACE_SYMLINK;
                break;
        case K_CHDIR:
                ev->op = CA_TRACE_CHDIR;
                if (res == RES_OK)
                        set_cwd(t, proc, t->out[0]);
                break;
        default:
                assert(false);
                t->stats.skipped_other++;
                return 0;
        }
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

        if (strncmp(body, "<... ", 5) == 0)
                return do_resumed(t, pid, time_usec, body, ev);
        if (strncmp(body, "+++ ", 4) == 0) {
                if (strncmp(body + 4, "exited ", 7) == 0 || strncmp(body + 4, "killed ", 7) == 0)
                        proc_drop(t, pid); /* the pid may be reused by a new process */
                t->stats.skipped_other++;
                return 0;
        }
        if (strncmp(body, "strace: ", 8) == 0)
                note_attached(t, body + 8);
        if (strncmp(body, "--- ", 4) == 0 || strncmp(body, "strace: ", 8) == 0) {
                t->stats.skipped_other++;
                return 0;
        }
        for (q = body; is_ident(*q); q++)
                ;
        if (q == body || *q != '(') {
                t->stats.skipped_malformed++;
                return 0;
        }
        while (len > 0 && body[len - 1] == ' ')
                len--;
        if (len < mlen || memcmp(body + len - mlen, marker, mlen) != 0)
                return do_call(t, pid, time_usec, body, ev);

        /* An unfinished half: held until its pid resumes it. */
        p = proc_get(t, pid);
        len -= mlen;
        if (!p || t->state_bytes + len + 1 > CA_TRACE_STATE_MAX) {
                t->stats.skipped_orphan++;
                return 0;
        }
        proc_orphan_held(t, p);
        p->held = malloc(len + 1);
        if (!p->held) {
                t->stats.skipped_orphan++;
                return 0;
        }
        memcpy(p->held, body, len);
        p->held[len] = '\0';
        p->held_len = len;
        t->state_bytes += len + 1;
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
        if (strncmp(q, " resumed>", 9) != 0) {
                t->stats.skipped_malformed++;
                return 0;
        }
        rest = q + 9;
        if (!p || !p->held || p->held_len <= nlen || memcmp(p->held, name, nlen) != 0 ||
            p->held[nlen] != '(') {
                t->stats.skipped_orphan++;
                return 0;
        }
        hlen = p->held_len;
        rlen = strlen(rest);
        if (hlen + rlen > CA_TRACE_LINE_MAX) {
                proc_orphan_held(t, p);
                t->stats.skipped_malformed++;
                return 0;
        }
        memcpy(t->join, p->held, hlen);
        memcpy(t->join + hlen, rest, rlen + 1);
        /* The half stays counted in unfinished: this line accounts for the call. */
        free(p->held);
        p->held = NULL;
        p->held_len = 0;
        t->state_bytes -= hlen + 1;
        if (strncmp(t->join, "<... ", 5) == 0) { /* cannot nest; keeps recursion at one */
                t->stats.skipped_malformed++;
                return 0;
        }
        return do_body(t, pid, time_usec, t->join, hlen + rlen, ev);
}

/* One line (NUL-terminated, @len bytes, no NUL inside). */
static int do_line(struct ca_trace *t, char *line, size_t len, struct ca_trace_event *ev)
{
        const char *p = line;
        uint64_t time_usec = 0, v;
        int pid = 0;

        t->stats.lines++;
        if (memchr(line, '\0', len)) {
                t->stats.skipped_malformed++;
                return 0;
        }
        if (len > 0 && line[len - 1] == '\r')
                line[--len] = '\0';

        /* "[pid  123] " (stderr) or "123  " (-o): a number followed by a space. */
        if (strncmp(p, "[pid", 4) == 0) {
                p = skip_spaces(p + 4);
                if (!parse_uint(&p, INT_MAX, &v) || *p != ']' || p[1] != ' ') {
                        t->stats.skipped_malformed++;
                        return 0;
                }
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
        if (is_digit(*p) && !parse_time(t, &p, &time_usec)) {
                t->stats.skipped_malformed++;
                return 0;
        }
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
                n = fread(t->rbuf + t->rlen, 1, READ_CAP - t->rlen, t->f);
                if (n == 0) {
                        if (ferror(t->f))
                                return -EIO;
                        t->eof = true;
                }
                t->rlen += n;
        }
}

int ca_trace_next(struct ca_trace *t, struct ca_trace_event *ret)
{
        struct ca_trace_event ev;
        size_t len;
        char *line;
        int r;

        if (!t || !ret)
                return -EINVAL;
        while (!t->finished) {
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
                ev = (struct ca_trace_event) { 0 };
                if (do_line(t, line, len, &ev) > 0) {
                        t->stats.events++;
                        *ret = ev;
                        return 1;
                }
        }
        return 0;
}

/* ---- lifetime ---- */

int ca_trace_open_file(FILE *f, const char *cwd, struct ca_trace **ret)
{
        struct ca_trace *t;
        struct rstr *c;
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
        t->rbuf = malloc(READ_CAP + 1);
        t->join = malloc(CA_TRACE_LINE_MAX + 1);
        t->dec = malloc(CA_TRACE_LINE_MAX + 1);
        t->deco = malloc(CA_TRACE_LINE_MAX + 1);
        t->out[0] = malloc(OUT_SIZE);
        t->out[1] = malloc(OUT_SIZE);
        if (!t->rbuf || !t->join || !t->dec || !t->deco || !t->out[0] || !t->out[1])
                goto out_free;
        normalise("", cwd, len, t->out[0]);
        c = out_keep(t, t->out[0]);
        if (!c)
                goto out_free;
        t->first_fs = fs_new(c);
        rstr_unref(t, c);
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

                        free(p->held);
                        fs_unref(t, p->fs);
                        free(p);
                        p = next;
                }
        }
        fs_unref(t, t->first_fs);
        if (t->own_f && t->f)
                fclose(t->f);
        free(t->rbuf);
        free(t->join);
        free(t->dec);
        free(t->deco);
        free(t->out[0]);
        free(t->out[1]);
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
        };

        if ((unsigned) op >= _CA_TRACE_OP_MAX)
                return NULL;
        return names[op];
}
