/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_TRACE_H
#define CACHEAGE_TRACE_H

/*
 * Reader of `strace -f [-t|-tt|-ttt] -e trace=%file` logs: turns each usable line into a
 * lookup event (time, pid, operation, canonical path, result), walking each path the way the
 * kernel's path walk would have. Lines it cannot use are counted by reason, never fatal.
 *
 * Line forms: with or without a pid column ("123  " as written by -f -o, "[pid  123] " as
 * written to stderr), with -t, -tt, -ttt or no timestamp (-T durations and -y/--decode-fds
 * decorations are understood and ignored or used), "<unfinished ...>" halves joined with
 * their "<... NAME resumed>" per pid. In the stderr form the first process is pid 0: strace
 * prints it bare while it is alone and as "[pid N]" while others live; N is recognised as
 * the one pid never announced by "strace: Process N attached" (with -q, which hides those
 * lines, it stays a separate pid).
 *
 * Processes, as the kernel keeps them: each pid has a working directory (fs_struct, shared by
 * CLONE_FS), an fd table (files_struct, shared by CLONE_FILES: open, dup, dup2, dup3, fcntl
 * F_DUPFD*, F_SETFD, close, close_range, O_CLOEXEC fds closed by a successful exec) and
 * mappings (mm, shared by CLONE_VM: mmap of an fd, munmap of the same address, the image and
 * its interpreters; replaced by exec). A child inherits them when the log shows the
 * clone/clone3/fork/vfork return; a pid first seen without one (trace=%file hides them)
 * starts with a copy of the current working directory of the log's first pid, as a shell or
 * make that forks every command would give it, and no fds. A path relative to an fd whose
 * path is unknown is counted in skipped_dirfd, never guessed. For exact working directories
 * and references record with
 *   strace -f -ttt -s 4096 -e trace=%file,%process,fchdir,close,close_range,dup,dup2,dup3,\
 *          fcntl,mmap,munmap
 *
 * Paths are walked component by component as the kernel does: a symbolic link is followed
 * where the call follows it (a `readlink` result in the log, a `symlink` call, or capture
 * information says which names are links), ".." goes up from where the walk really is (so
 * "link/.." is the parent of the link's target), and the event's path is canonical: absolute,
 * without ".", "..", "//" or any link. The links followed and the directories walked through
 * and left by ".." are the event's walks. /proc/self is the event's pid.
 *
 * Capture information (ca_trace_load_info(), ca_trace_write_info(); see below) says what the
 * kernel knew and the log does not show: which names are symbolic links, which were missing
 * and which were not directories, the interpreter of each program executed, the mount table
 * and the paths already held when the log began. Without it the reader assumes, and says so
 * in each event's guesses: no link but those the log shows, the last component missing on
 * -ENOENT, and so on.
 *
 * Limits: a line longer than CA_TRACE_LINE_MAX is skipped without being buffered whole;
 * at most CA_TRACE_PIDS_MAX pids are tracked (a further pid resolves only absolute paths);
 * the state kept between lines (working directories, fd tables, mappings, unfinished halves)
 * uses at most CA_TRACE_STATE_MAX bytes and the capture facts CA_TRACE_INFO_MAX, past which
 * state is dropped and counted, not guessed.
 *
 * Locking: a reader is used by one thread at a time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CA_TRACE_LINE_MAX 65536 /* bytes; a longer line is skipped as malformed */
#define CA_TRACE_PIDS_MAX 65536 /* distinct pids tracked for working directories */
#define CA_TRACE_FDS_MAX 65536  /* fd numbers followed per fd table (0 .. this - 1) */
#define CA_TRACE_STATE_MAX (16u << 20) /* bytes of process state kept between lines */
#define CA_TRACE_INFO_MAX (64u << 20)  /* bytes of capture facts kept */
#define CA_TRACE_LINKS_MAX 40   /* symbolic links followed in one walk (the kernel's MAXSYMLINKS) */
#define CA_TRACE_WALKS_MAX 64   /* walks of one event; more are counted in walks_dropped */

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
        CA_TRACE_RELEASE,  /* no path: references end (close, munmap; CA_TRACE_REFS) */
        CA_TRACE_PIN,      /* capture information: a path the kernel held before the log began
                              (held for good; not a call: see info_events) */
        CA_TRACE_MOUNT,    /* capture information: a mount point of filesystem fstype, held
                              for good (not a call: see info_events) */
        CA_TRACE_EXIT,     /* a process (or thread) ended: "+++ exited", "+++ killed by",
                              "+++ superseded"; path is its directory in /proc ("/proc/PID"),
                              NULL when the log does not give its pid; with CA_TRACE_REFS the
                              references it alone held are its drops */
        _CA_TRACE_OP_MAX,
};

/* A lookup a call made besides the one of its path (see ca_trace_event.walks). */
enum ca_trace_walk_kind {
        CA_TRACE_WALK_LINK,   /* a symbolic link followed: positive, not a directory */
        CA_TRACE_WALK_DIR,    /* a directory walked into and left by "..": positive */
        CA_TRACE_WALK_INTERP, /* a program's interpreter, loaded by a successful exec ("#!"
                                 line, or an ELF's PT_INTERP): positive, mapped */
};

struct ca_trace_walk {
        const char *path;             /* canonical */
        enum ca_trace_walk_kind kind;
        uint64_t hold;                /* nonzero: referenced from now on under this id */
};

/* What the reader could not know and assumed, for one event (ca_trace_event.guesses). */
enum {
        CA_TRACE_GUESS_LINKS = 1 << 0,   /* a component no capture fact covers: taken to be
                                            no symbolic link */
        CA_TRACE_GUESS_MISSING = 1 << 1, /* -ENOENT, the first missing component unknown: the
                                            last taken (for a create, the parent) */
        CA_TRACE_GUESS_NOTDIR = 1 << 2,  /* -ENOTDIR, the component that is no directory
                                            unknown: the parent taken (the last for a call
                                            that wants a directory, or a trailing slash) */
        CA_TRACE_GUESS_INTERP = 1 << 3,  /* a successful exec whose interpreters are unknown:
                                            none looked up */
};

struct ca_trace_event {
        uint64_t time_usec;    /* from the timestamp; 0 when the log has none. -ttt: since
                                  the epoch; -t/-tt: time of day, plus a day each time the
                                  clock goes back by more than 12 hours (midnight) */
        int pid;               /* 0 when the log has no pid column (or the line none) */
        enum ca_trace_op op;   /* of the joined call, with its "resumed" half's time */
        const char *syscall;   /* name as in the log, e.g. "newfstatat"; "exit" for an EXIT,
                                  "info" for capture information */
        const char *path;      /* canonical (absolute, no ".", "..", "//" or link); NULL for
                                  RELEASE. Where the call failed it is where the walk ended:
                                  -ENOENT, the first missing component (for a create at most
                                  the parent; for rename and link in either path); -ENOTDIR,
                                  the component that is not a directory */
        const char *path2;     /* second path of rename/link/symlink, else NULL */
        int result;            /* 0 on success, else -errno (e.g. -ENOENT); an errno name
                                  the reader does not know gives -EIO. A readlink of what
                                  is not a link gives 0: its EINVAL comes after a walk that
                                  went through (do_readlinkat) */
        const struct ca_trace_walk *walks; /* lookups made before path's own, in order: links
                                  followed, directories left by "..", an exec's interpreters */
        size_t nwalks;
        uint64_t hold;         /* nonzero (CA_TRACE_REFS, PIN, MOUNT): path's final dentry is
                                  referenced from now on under this id (an open fd, a working
                                  directory, an executed image) */
        const uint64_t *drops; /* references that end after this event (CA_TRACE_REFS) */
        size_t ndrops;
        const char *fstype;    /* MOUNT: the filesystem type ("ext4", "tmpfs"); else NULL */
        unsigned guesses;      /* CA_TRACE_GUESS_* */
};

/*
 * Why lines were not turned into events. Every line read is counted in exactly one of
 * events, unfinished and skipped_* (a joined pair counts its first half in unfinished and
 * its "resumed" half where the whole call went), so that lines = events - info_events +
 * unfinished + skipped_*.
 */
struct ca_trace_stats {
        uint64_t lines;        /* lines read */
        uint64_t events;       /* events returned */
        uint64_t unfinished;   /* "<unfinished ...>" halves held for their "resumed" */
        uint64_t skipped_other;     /* not a file syscall we model, signals */
        uint64_t skipped_malformed; /* could not be parsed, over CA_TRACE_LINE_MAX, or a path
                                       longer than the reader's buffers once links are
                                       followed */
        uint64_t skipped_dirfd;     /* relative to a dirfd whose path is unknown */
        uint64_t skipped_orphan;    /* "resumed" without its "unfinished", or the reverse */
        uint64_t skipped_noresult;  /* "= ?" or -ERESTART*: the call never returned */
        uint64_t info_events;       /* events from capture information, not lines (PIN,
                                       MOUNT), before the first line's */
        /* what could not be known: events with each guess (see CA_TRACE_GUESS_*) */
        uint64_t guessed_links;
        uint64_t guessed_missing;
        uint64_t guessed_notdir;
        uint64_t guessed_interp;
        uint64_t walks_dropped;     /* walks over CA_TRACE_WALKS_MAX, or a walk given up after
                                       CA_TRACE_LINKS_MAX links (-ELOOP) */
        uint64_t fds_unknown;       /* close, dup, mmap or fchdir of an fd the log never
                                       showed opened (inherited, a pipe or a socket) */
        uint64_t state_dropped;     /* state not kept for lack of CA_TRACE_STATE_MAX or
                                       CA_TRACE_INFO_MAX or memory (a reference then never
                                       taken, a fact then unknown) */
        uint64_t facts;             /* capture facts known now (loaded, probed or learned) */
        uint64_t probes;            /* names looked up on the live system (CA_TRACE_PROBE) */
};

struct ca_trace;

/*
 * ca_trace_open_file() - read a log from @f (not closed by the reader; read with fread
 * only, from its current position).
 * @cwd: the working directory of the traced program at start, canonical (NULL: "/").
 * Returns 0, -EINVAL (@f or @ret NULL, @cwd relative or longer than CA_TRACE_LINE_MAX),
 * -ENOMEM.
 */
int ca_trace_open_file(FILE *f, const char *cwd, struct ca_trace **ret);

/* ca_trace_open_path() - as above, opening @path. Returns 0 or a negative errno. */
int ca_trace_open_path(const char *path, const char *cwd, struct ca_trace **ret);

/* ca_trace_free() - accepts NULL; returns NULL. Closes the file only if it opened it. */
struct ca_trace *ca_trace_free(struct ca_trace *t);

enum {
        /*
         * Follow references: each successful open, chdir and exec (and the interpreters it
         * loads) gives its event a hold id, and the event after which the last fd, mapping or
         * process holding it is gone carries it in drops (a close or munmap with nothing else
         * to say is a RELEASE event, an exit the EXIT event). The starting working directory is the
         * first event, a PIN held for good. Needs close, %process and (for mappings) mmap in
         * the log, or references are dropped only at exit.
         */
        CA_TRACE_REFS = 1 << 0,
        /*
         * Look up on the running system what no capture fact says (lstat, readlink, the
         * first bytes of executed files), as the capture tool does right after the traced
         * program ended; ca_trace_write_info() then saves what was found. Paths under
         * /proc/<pid> are never probed (their processes are gone).
         */
        CA_TRACE_PROBE = 1 << 1,
};

/*
 * ca_trace_set_options() - CA_TRACE_* flags, before the first ca_trace_next().
 * Returns 0, -EINVAL (unknown flag), -EBUSY (reading has begun).
 */
int ca_trace_set_options(struct ca_trace *t, unsigned flags);

/*
 * Capture information: a text file, one fact per line, '#' comments; paths are canonical and
 * written as strace writes strings (double quotes, C escapes):
 *   mount "PATH" FSTYPE        a mount point (/proc/self/mounts at capture)
 *   pin "PATH"                 a path held when the log began (an open fd, a working
 *                              directory or a mapped file of a process running then)
 *   link "PATH" "TARGET"       a symbolic link and its text
 *   dir "PATH" / file "PATH"   exists: a directory / anything else (no link)
 *   absent "PATH"              does not exist
 *   elf "PATH" "INTERP"        executing PATH maps it and its PT_INTERP ("": static)
 *   script "PATH" "INTERP"     executing PATH runs its "#!" interpreter INTERP
 * Facts describe the system when the program ended (they are probed then); what the log
 * itself shows (a create, an unlink, a rename, a readlink result) takes precedence from
 * where it appears.
 */

/*
 * ca_trace_load_info() - read capture information from @f, before the first ca_trace_next():
 * its mounts then pins become the first events. Returns 0; -EINVAL with the number of the
 * offending line in *ret_line (if not NULL); -EBUSY (reading has begun); -E2BIG (over
 * CA_TRACE_INFO_MAX); -ENOMEM; -EIO (a read error). On error nothing loaded is kept.
 */
int ca_trace_load_info(struct ca_trace *t, FILE *f, size_t *ret_line);

/*
 * ca_trace_add_mount(), ca_trace_add_pin() - capture information given directly, as a capture
 * tool has it (the "mount" and "pin" lines of a file), before the first ca_trace_next().
 * Returns 0, -EINVAL (relative path, empty or spaced fstype), -EBUSY, -E2BIG, -ENOMEM.
 */
int ca_trace_add_mount(struct ca_trace *t, const char *path, const char *fstype);
int ca_trace_add_pin(struct ca_trace *t, const char *path);

/*
 * ca_trace_write_info() - write what the reader knows as capture information: the loaded
 * mounts, the facts as loaded or probed (not as the log changed them later), the interpreters;
 * of the loaded pins, those in a directory the log walked into, and for the others their
 * deepest ancestor the log walked through (enough for the directories the log sees to be
 * as warm as they were). Usually after reading the whole log with CA_TRACE_PROBE.
 * Returns 0, -EINVAL, -EIO (a write error).
 */
int ca_trace_write_info(struct ca_trace *t, FILE *f);

/*
 * ca_trace_next() - the next event. Strings and arrays in *ret stay valid until the next call
 * on @t (event.syscall and fstype for the reader's lifetime). At the end of the log, halves
 * still waiting for their "resumed" are counted as orphans; references still held stay held
 * (no event drops them). Returns 1 with an event, 0 at end of log (again on every later
 * call), -EAGAIN when the read limit is reached (ca_trace_set_read_limit()), or -EIO on a
 * read error.
 */
int ca_trace_next(struct ca_trace *t, struct ca_trace_event *ret);

/*
 * ca_trace_set_read_limit() - from now on, let ca_trace_next() read at most @bytes more from
 * the file (0: no limit, the default). When it needs more input than that, ca_trace_next()
 * returns -EAGAIN and keeps its place: the next call, after a new limit, goes on where it
 * stopped. A caller on an event loop bounds its work per turn with it, whatever the log
 * holds (a line of 100 MB, megabytes without an event).
 */
void ca_trace_set_read_limit(struct ca_trace *t, uint64_t bytes);

/* ca_trace_bytes_read() - bytes read from the file so far. */
uint64_t ca_trace_bytes_read(const struct ca_trace *t);

/* ca_trace_get_stats() - counts so far. */
void ca_trace_get_stats(const struct ca_trace *t, struct ca_trace_stats *ret);

/* ca_trace_op_name() - "lookup", "create", ...; NULL for an unknown value. */
const char *ca_trace_op_name(enum ca_trace_op op);

#ifdef __cplusplus
}
#endif

#endif
