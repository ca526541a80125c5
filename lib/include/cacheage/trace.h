/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_TRACE_H
#define CACHEAGE_TRACE_H

/*
 * Reader of `strace -f [-t|-tt|-ttt] -e trace=%file` logs: turns each usable line into a
 * lookup event (time, pid, operation, absolute path, result). Lines it cannot use are
 * counted by reason, never fatal. Paths are made absolute with the per-pid working
 * directory (chdir/fchdir-free model; a child inherits its parent's at clone/fork/vfork).
 *
 * Locking: a reader is used by one thread at a time.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CA_TRACE_LINE_MAX 65536 /* bytes; a longer line is skipped as malformed */
#define CA_TRACE_PIDS_MAX 65536 /* distinct pids tracked for working directories */

enum ca_trace_op {
        CA_TRACE_LOOKUP,   /* stat family, statx, access family, readlink, open without create */
        CA_TRACE_CREATE,   /* open/openat/creat with O_CREAT that succeeded; mknod */
        CA_TRACE_EXEC,     /* execve/execveat: a lookup of the program */
        CA_TRACE_MKDIR,
        CA_TRACE_UNLINK,
        CA_TRACE_RMDIR,
        CA_TRACE_RENAME,   /* path -> path2 */
        CA_TRACE_LINK,     /* path (existing) -> path2 (new) */
        CA_TRACE_SYMLINK,  /* path2 is the new name; path is the target text, not looked up */
        CA_TRACE_CHDIR,
        _CA_TRACE_OP_MAX,
};

struct ca_trace_event {
        uint64_t time_usec;    /* from the timestamp; 0 when the log has none */
        int pid;               /* 0 when the log has no pid column */
        enum ca_trace_op op;
        const char *syscall;   /* name as in the log, e.g. "newfstatat" */
        const char *path;      /* absolute and normalised (no ".", "..", "//") */
        const char *path2;     /* second path of rename/link/symlink, else NULL */
        int result;            /* 0 on success, else -errno (e.g. -ENOENT) */
};

/* Why lines were not turned into events. */
struct ca_trace_stats {
        uint64_t lines;        /* lines read */
        uint64_t events;       /* events returned */
        uint64_t unfinished;   /* "<unfinished ...>" halves held for their "resumed" */
        uint64_t skipped_other;     /* not a file syscall we model, signals, exits */
        uint64_t skipped_malformed; /* could not be parsed, or over CA_TRACE_LINE_MAX */
        uint64_t skipped_dirfd;     /* relative to a dirfd whose path is unknown */
        uint64_t skipped_orphan;    /* "resumed" without its "unfinished", or the reverse */
};

struct ca_trace;

/*
 * ca_trace_open_file() - read a log from @f (not closed by the reader).
 * @cwd: the working directory of the traced program at start (NULL: "/").
 * Returns 0, -EINVAL, -ENOMEM.
 */
int ca_trace_open_file(FILE *f, const char *cwd, struct ca_trace **ret);

/* ca_trace_open_path() - as above, opening @path. Returns 0 or a negative errno. */
int ca_trace_open_path(const char *path, const char *cwd, struct ca_trace **ret);

/* ca_trace_free() - accepts NULL; returns NULL. Closes the file only if it opened it. */
struct ca_trace *ca_trace_free(struct ca_trace *t);

/*
 * ca_trace_next() - the next event. Strings in *ret stay valid until the next call.
 * Returns 1 with an event, 0 at end of log, or a negative errno on a read error.
 */
int ca_trace_next(struct ca_trace *t, struct ca_trace_event *ret);

/* ca_trace_get_stats() - counts so far. */
void ca_trace_get_stats(const struct ca_trace *t, struct ca_trace_stats *ret);

/* ca_trace_op_name() - "lookup", "create", ...; NULL for an unknown value. */
const char *ca_trace_op_name(enum ca_trace_op op);

#ifdef __cplusplus
}
#endif

#endif
