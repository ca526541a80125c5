/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_TRACE_H
#define CACHEAGE_TRACE_H

/*
 * Reader of `strace -f [-t|-tt|-ttt] -e trace=%file` logs: turns each usable line into a
 * lookup event (time, pid, operation, absolute path, result). Lines it cannot use are
 * counted by reason, never fatal.
 *
 * Line forms: with or without a pid column ("123  " as written by -f -o, "[pid  123] " as
 * written to stderr), with -t, -tt, -ttt or no timestamp (-T durations and -y/--decode-fds
 * decorations are understood and ignored or used), "<unfinished ...>" halves joined with
 * their "<... NAME resumed>" per pid. In the stderr form the first process is pid 0: strace
 * prints it bare while it is alone and as "[pid N]" while others live; N is recognised as
 * the one pid never announced by "strace: Process N attached" (with -q, which hides those
 * lines, it stays a separate pid).
 *
 * Working directories: each pid has one (chdir, fchdir to a known fd, getcwd results).
 * A child inherits its parent's when the log shows the clone/clone3/fork/vfork return
 * (shared with CLONE_FS); a pid first seen without one (trace=%file hides them) starts with
 * a copy of the current working directory of the log's first pid, as a shell or make that
 * forks every command would give it. Directory fds are learned from successful opens
 * (per pid, the last CA_TRACE_FDS_MAX; close/dup/fcntl F_DUPFD honoured when traced). A
 * path relative to an unknown directory is counted in skipped_dirfd, never guessed.
 * strace's %file class has neither fchdir nor clone: for exact working directories
 * record with `-e trace=%file,%process,fchdir,close`.
 *
 * Paths are normalised lexically ("..", ".", "//"), as if no component were a symlink.
 *
 * Limits: a line longer than CA_TRACE_LINE_MAX is skipped without being buffered whole;
 * at most CA_TRACE_PIDS_MAX pids are tracked (a further pid resolves only absolute paths);
 * the strings kept between lines (working directories, fd paths, unfinished halves) use at
 * most CA_TRACE_STATE_MAX bytes, past which the state is dropped and counted, not guessed.
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
#define CA_TRACE_FDS_MAX 8      /* fds remembered per process, for dirfds and fchdir */
#define CA_TRACE_STATE_MAX (16u << 20) /* bytes of strings kept between lines */

enum ca_trace_op {
        CA_TRACE_LOOKUP,   /* stat family, statx, access family, readlink, open without create
                              or failed, failed creat/mknod; also statfs, truncate, chmod,
                              chown, utimes, xattr calls, chroot, inotify_add_watch; and
                              renameat2 RENAME_EXCHANGE (of path only: both names stay) */
        CA_TRACE_CREATE,   /* open/openat/openat2/creat with O_CREAT that succeeded; mknod;
                              linkat(fd, "", AT_EMPTY_PATH) naming an O_TMPFILE (path) */
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
        uint64_t time_usec;    /* from the timestamp; 0 when the log has none. -ttt: since
                                  the epoch; -t/-tt: time of day, plus a day each time the
                                  clock goes back by more than 12 hours (midnight) */
        int pid;               /* 0 when the log has no pid column (or the line none) */
        enum ca_trace_op op;   /* of the joined call, with its "resumed" half's time */
        const char *syscall;   /* name as in the log, e.g. "newfstatat" */
        const char *path;      /* absolute and normalised (no ".", "..", "//") */
        const char *path2;     /* second path of rename/link/symlink, else NULL */
        int result;            /* 0 on success, else -errno (e.g. -ENOENT); an errno name
                                  the reader does not know gives -EIO */
};

/*
 * Why lines were not turned into events. Every line read is counted in exactly one of
 * events, unfinished and skipped_* (a joined pair counts its first half in unfinished and
 * its "resumed" half where the whole call went), so they always add up to lines.
 */
struct ca_trace_stats {
        uint64_t lines;        /* lines read */
        uint64_t events;       /* events returned */
        uint64_t unfinished;   /* "<unfinished ...>" halves held for their "resumed" */
        uint64_t skipped_other;     /* not a file syscall we model, signals, exits */
        uint64_t skipped_malformed; /* could not be parsed, or over CA_TRACE_LINE_MAX */
        uint64_t skipped_dirfd;     /* relative to a dirfd whose path is unknown */
        uint64_t skipped_orphan;    /* "resumed" without its "unfinished", or the reverse */
        uint64_t skipped_noresult;  /* "= ?" or -ERESTART*: the call never returned */
};

struct ca_trace;

/*
 * ca_trace_open_file() - read a log from @f (not closed by the reader; read with fread
 * only, from its current position).
 * @cwd: the working directory of the traced program at start, absolute (NULL: "/").
 * Returns 0, -EINVAL (@f or @ret NULL, @cwd relative or longer than CA_TRACE_LINE_MAX),
 * -ENOMEM.
 */
int ca_trace_open_file(FILE *f, const char *cwd, struct ca_trace **ret);

/* ca_trace_open_path() - as above, opening @path. Returns 0 or a negative errno. */
int ca_trace_open_path(const char *path, const char *cwd, struct ca_trace **ret);

/* ca_trace_free() - accepts NULL; returns NULL. Closes the file only if it opened it. */
struct ca_trace *ca_trace_free(struct ca_trace *t);

/*
 * ca_trace_next() - the next event. Strings in *ret stay valid until the next call on @t
 * (event.syscall for the reader's lifetime). At the end of the log, halves still waiting
 * for their "resumed" are counted as orphans. Returns 1 with an event, 0 at end of log
 * (again on every later call), or -EIO on a read error.
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
