/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_TRACE_INTERNAL_H
#define CACHEAGE_TRACE_INTERNAL_H

/*
 * The strace reader's insides, shared by lib/lab/trace.c (lines, syscalls, processes and their
 * references) and lib/lab/trace-walk.c (capture facts, the path walk, probing, the information
 * file). Private: never installed, nothing here is exported (hidden visibility).
 *
 * Budgets: process state (kept strings, files, fd tables, mappings, unfinished halves) is
 * charged to state_bytes against CA_TRACE_STATE_MAX; capture facts, mounts and pins to
 * info_bytes against CA_TRACE_INFO_MAX. Locking: one thread at a time, as the reader.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cacheage/trace.h"

#define CA_HIDDEN __attribute__((visibility("hidden")))

#define PID_BUCKETS 4096        /* hash chains of the pid table */
#define READ_SLACK 65536        /* bytes read beyond one maximal line, to read in blocks */
#define READ_CAP ((size_t)CA_TRACE_LINE_MAX + 1 + READ_SLACK)
#define OUT_SIZE (2 * (size_t)CA_TRACE_LINE_MAX + 2) /* an event path, links followed */
#define INTERP_DEPTH_MAX 5      /* "#!" scripts in a row, then the ELF (the kernel's 4 + 1) */
#define SC_SLOTS 256            /* the syscall table's index: a power of two */

/* A kept string, reference counted, charged to one of the two budgets. */
struct rstr {
        unsigned ref;
        bool info;  /* charged to info_bytes (else state_bytes) */
        size_t len; /* bytes, without the NUL */
        char s[];
};

/* What a name is, as far as the reader knows (a capture fact). */
enum fact_kind {
        F_UNKNOWN = 0,
        F_ABSENT,
        F_DIR,
        F_FILE,    /* exists, not a directory nor a link */
        F_EXISTS,  /* exists, its type unknown (the log proved it) */
        F_LINK,
};

/* What executing a file loads (capture facts "elf" and "script"). */
enum exec_kind {
        X_UNKNOWN = 0,
        X_ELF,     /* interp: PT_INTERP, or "" for a static program */
        X_SCRIPT,  /* interp: the "#!" interpreter as written */
};

struct fact {
        struct fact *next;     /* hash chain */
        uint64_t hash;
        uint8_t now;           /* enum fact_kind: as the log has changed it */
        uint8_t probed;        /* as loaded or probed: what ca_trace_write_info() saves */
        uint8_t exec;          /* enum exec_kind */
        bool walked;           /* a walk of the log reached it */
        bool pin_written;      /* ca_trace_write_info() scratch */
        struct rstr *target;   /* the link's text now (F_LINK) */
        struct rstr *ptarget;  /* the link's text as probed */
        struct rstr *interp;   /* X_ELF, X_SCRIPT */
        size_t len;
        char path[];           /* canonical, NUL-terminated */
};

struct mount_info {
        struct rstr *path;
        struct rstr *fstype;
};

/* ---- process state (lib/lab/trace.c) ---- */

/* An open file description, a working directory or a mapped image: what a reference is on. */
struct file {
        unsigned ref;       /* fds, mappings, fs contexts pointing at it */
        uint64_t hold;      /* the replay's reference id (CA_TRACE_REFS), 0: none */
        struct rstr *path;  /* canonical */
};

struct fdent {
        struct file *f;
        bool cloexec;
};

/* files_struct: shared by CLONE_FILES. */
struct fdtab {
        unsigned ref;
        size_t cap;         /* fds 0 .. cap - 1 */
        struct fdent *v;
};

struct mapping {
        uint64_t addr;      /* 0: the image or an interpreter (never unmapped) */
        struct file *f;
};

/* mm_struct: shared by CLONE_VM. */
struct mm {
        unsigned ref;
        size_t n, cap;
        struct mapping *v;
};

/* fs_struct: shared by CLONE_FS. */
struct fsctx {
        unsigned ref;
        struct file *cwd;   /* NULL: unknown (fchdir to an fd we did not see opened) */
};

struct proc {
        struct proc *next;  /* hash chain */
        int pid;
        bool guess_fs;      /* state made up at first sight; the clone line corrects it */
        bool guess_fds;
        bool guess_mm;
        bool exec_guessed;  /* a successful exec while guess_fds: O_CLOEXEC fds are gone */
        struct fsctx *fs;
        struct fdtab *fds;
        struct mm *mm;
        char *held;         /* the "<unfinished ...>" half, marker removed; NULL: none */
        size_t held_len;
};

/* One segment of a walk: a path, or a link's text pushed in front of the rest. */
struct seg {
        const char *p, *end;  /* what is left */
        const char *last;     /* the end of its last component */
};

struct depth {
        uint32_t len;         /* of the canonical prefix at this depth ("/" is 0) */
        uint64_t hash;
};

/* Where a walk ended, and what it could not know (lib/lab/trace-walk.c). */
struct walk_res {
        size_t len;           /* of the canonical path written */
        bool stopped;         /* at the fault of -ENOENT or -ENOTDIR (RF_STOP_*) */
        bool unknown;         /* a component no fact covered */
        bool toolong;         /* the canonical path did not fit */
        bool eloop;           /* CA_TRACE_LINKS_MAX links */
        bool dir;             /* the last must be a directory (RF_DIR, or a trailing slash) */
};

/* How one path of a call is walked (lib/lab/trace-walk.c). */
enum {
        RF_FOLLOW = 1 << 0,       /* a link in the last component is followed */
        RF_DIR = 1 << 1,          /* the last component must be a directory */
        RF_CREATE = 1 << 2,       /* the last component is being created (may be missing) */
        RF_STOP_ABSENT = 1 << 3,  /* -ENOENT: stop at the first missing component */
        RF_STOP_NOTDIR = 1 << 4,  /* -ENOTDIR: stop at the first that is no directory */
        RF_PROVEN = 1 << 5,       /* the walk went through: correct facts that deny it */
        RF_NO_WALKS = 1 << 6,     /* record no walks (state only: fchdir, getcwd) */
};

struct ca_trace {
        FILE *f;
        bool own_f;
        bool eof, skipping, finished, started;
        bool limited;        /* ca_trace_set_read_limit(): read at most read_left more bytes */
        uint64_t read_left, bytes_read;
        unsigned options;       /* CA_TRACE_REFS, CA_TRACE_PROBE */
        uint8_t sc_slots[SC_SLOTS]; /* syscall name -> table entry + 1 (0: empty) */
        bool info;              /* capture information loaded or probing: a fact for every
                                   name the log changes (else only for links) */

        char *rbuf;             /* READ_CAP + 1 bytes */
        size_t rpos, rlen;
        char *join;             /* a held half + its resumed rest, CA_TRACE_LINE_MAX + 1 */
        char *dec;              /* a decoded string, CA_TRACE_LINE_MAX + 1 bytes */
        char *deco;             /* a decoded -y "<path>" of a dirfd, CA_TRACE_LINE_MAX + 1 */
        char *out[2];           /* event paths, OUT_SIZE bytes each */
        char *scratch;          /* a path being walked for an interpreter, OUT_SIZE bytes */

        struct proc *buckets[PID_BUCKETS];
        size_t procs;
        bool have_first;
        int first_pid;
        bool seen_attach;       /* "strace: Process N attached" lines are in the log */
        int main_alias;         /* stderr form: the first process's own pid, -1: unknown */
        struct fsctx *first_fs; /* before the first pid is seen and after it exits: its fs */
        struct file *start_cwd; /* the starting working directory, held for good */

        size_t state_bytes;     /* charged against CA_TRACE_STATE_MAX */
        size_t info_bytes;      /* charged against CA_TRACE_INFO_MAX */
        uint64_t day_usec, last_tod_usec;
        bool tod_seen;
        uint64_t next_hold;     /* the last hold id given */

        /* capture facts (lib/lab/trace-walk.c) */
        struct fact **fbuckets;
        size_t fnbuckets;       /* 0 or a power of two */
        size_t nfacts;
        uint64_t fbloom[4];     /* a bit per fact's hash: most names have none */
        uint64_t fdepths;       /* bit d: a fact d components deep (63: or deeper) */
        uint64_t nbloom[4];     /* a bit per fact's last name */
        struct mount_info *mounts;
        size_t nmounts, mounts_cap;
        struct rstr **pins;
        size_t npins, pins_cap;
        size_t info_next;       /* the next information event to return */

        /* the walk's scratch */
        struct depth *stk;
        size_t stk_cap;

        /* the event being built */
        struct ca_trace_walk walks[CA_TRACE_WALKS_MAX];
        size_t walk_off[CA_TRACE_WALKS_MAX]; /* offsets in wstr until the event is returned */
        size_t nwalks;
        char *wstr;
        size_t wstr_len, wstr_cap;
        uint64_t *drops;
        size_t ndrops, drops_cap;
        unsigned guesses;
        uint64_t *counted;      /* the counter this line went to, when no event */
        int line_pid;           /* of the line being read, for a RELEASE event */
        uint64_t line_time;
        const char *release_name; /* the call that let references go ("exit") */

        struct ca_trace_stats stats;
};

/* ---- lib/lab/trace.c, for lib/lab/trace-walk.c ---- */

CA_HIDDEN struct rstr *trace_rstr_new(struct ca_trace *t, const char *s, size_t len, bool info);
CA_HIDDEN struct rstr *trace_rstr_unref(struct ca_trace *t, struct rstr *r);
CA_HIDDEN bool trace_decode_string(const char *p, char term, char *out, size_t *ret_len,
                                   const char **ret_end);
CA_HIDDEN bool trace_charge(struct ca_trace *t, size_t size, bool info);
CA_HIDDEN void trace_uncharge(struct ca_trace *t, size_t size, bool info);
/*
 * trace_grow() - room for @need elements of @size bytes in *@v (*@cap of them now, at most
 * @max), the new ones zeroed and charged to a budget. Returns 0, -E2BIG, -ENOMEM.
 */
CA_HIDDEN int trace_grow(struct ca_trace *t, void **v, size_t *cap, size_t need, size_t size,
                         size_t max, bool info);

/* ---- lib/lab/trace-walk.c ---- */

/*
 * trace_walk() - walk @path (@len bytes, decoded) from the canonical @base (NULL: "/"; unused
 * when @path is absolute) as the kernel would for @pid, with RF_* @flags: write the canonical
 * result into @out (OUT_SIZE bytes), record the walks made besides it in the event being built
 * (links followed, directories left by ".."), and say where it ended in *res.
 */
CA_HIDDEN void trace_walk(struct ca_trace *t, int pid, const char *base, const char *path,
                          size_t len, unsigned flags, char *out, struct walk_res *res);

/* trace_facts_active() - whether any fact can say something (facts known, or probing). */
CA_HIDDEN bool trace_facts_active(const struct ca_trace *t);

/* The fact for canonical @path, created unknown if missing (NULL: no memory or budget). */
CA_HIDDEN struct fact *trace_fact_get(struct ca_trace *t, const char *path, size_t len,
                                      bool create);

/* The log changed @path: it is now @kind (F_LINK: with @target, @tlen bytes). */
CA_HIDDEN void trace_fact_set(struct ca_trace *t, const char *path, size_t len,
                              enum fact_kind kind, const char *target, size_t tlen);

/* A rename moved @from to @to: what was known under @from is now absent. */
CA_HIDDEN void trace_fact_rename(struct ca_trace *t, const char *from, size_t flen,
                                 const char *to, size_t tlen);

/* What executing canonical @path loads (probed when unknown and probing). */
CA_HIDDEN enum exec_kind trace_exec_kind(struct ca_trace *t, const char *path, size_t len,
                                         const char **ret_interp, size_t *ret_ilen);

/* trace_add_walk() - append a walk of @path (@len bytes) to the event being built. */
CA_HIDDEN bool trace_add_walk(struct ca_trace *t, const char *path, size_t len,
                              enum ca_trace_walk_kind kind, uint64_t hold);

CA_HIDDEN void trace_facts_free(struct ca_trace *t);

#endif
