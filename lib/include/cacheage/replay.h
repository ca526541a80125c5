/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_REPLAY_H
#define CACHEAGE_REPLAY_H

/*
 * Trace events (cacheage/trace.h) applied to a dentry-cache model (cacheage/dcache.h): an
 * strace line says what exists, and the model is made to agree, walking the paths the way the
 * kernel's lookup would have walked them.
 *
 * What an event says depends on its operation and its result: ca_dcache_replay_plan() is that
 * table, one place for the replay and for any tool that needs to know which dentries an event
 * walks (the replay lab counts lookups with it). An event's walks (links followed, directories
 * left by "..", an exec's interpreters) are looked up first, each as existing.
 *
 * Two ways to replay:
 *   ca_dcache_replay(d, ev)  each event on its own: references are taken and dropped as the
 *                            kernel's walk does, so nothing stays held; holds, drops and
 *                            mount points are ignored;
 *   struct ca_replay         the model as the traced programs kept it: a reference on each
 *                            event's hold (open fds, working directories, executed images,
 *                            pinned paths) until a later event drops it, so an unlink while a
 *                            file is open unhashes it and the close frees it, and held
 *                            dentries are busy; mount points with their filesystem's rules
 *                            (tmpfs and the like keep no negative dentry and pin their
 *                            positive ones; proc, devpts and 9p keep no negative, and a process's
 *                            /proc/PID goes when it ends); and statistics of what the trace
 *                            could not say. /proc is procfs unless a mount table says
 *                            otherwise (every Linux system mounts it there).
 *
 * Locking: the model's (one thread at a time). Errors are negative errno values.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cacheage/dcache.h"
#include "cacheage/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CA_DCACHE_REPLAY_STEPS_MAX 2 /* steps of one event: a link's two paths */

/* What one step of an event says about one of its paths. */
enum ca_dcache_replay_action {
        CA_DCACHE_REPLAY_EXISTS,  /* every component positive, those before the last
                                     directories; the last one too when .dir */
        CA_DCACHE_REPLAY_MISSING, /* the components before the last positive, the last
                                     negative; a cached negative component on the way ends
                                     the walk there (the kernel's walk would stop at it) */
        CA_DCACHE_REPLAY_PREFIX,  /* the components before the last positive directories; the
                                     last is not looked up (a create that failed) */
        CA_DCACHE_REPLAY_REMOVE,  /* looked up positive, then d_delete(); with .dir an rmdir,
                                     shrink_dcache_parent() first */
        CA_DCACHE_REPLAY_RENAME,  /* looked up positive, then d_move()d onto path2, which is
                                     looked up (negative when new); the old target dies */
};

struct ca_dcache_replay_step {
        enum ca_dcache_replay_action action;
        bool path2;  /* about the event's path2 (else its path) */
        bool dir;    /* EXISTS: the last component is a directory; REMOVE: an rmdir */
        bool fixup;  /* EXISTS: a cached negative dentry found positive is the model's error,
                        counted in replay_fixups (not a create that the event made) */
};

/*
 * ca_dcache_replay_plan() - what @ev says about the cache, in the order it is applied (after
 * the event's walks). The reader puts a failed call's path where its walk ended (trace.h), so
 * the last component of path is the one the result is about:
 *   success of LOOKUP, EXEC, CHDIR, PIN: EXISTS (CHDIR's last component a directory); MOUNT:
 *     EXISTS, a directory; CREATE, MKDIR: EXISTS (MKDIR's a directory); UNLINK, RMDIR:
 *     REMOVE; RENAME: RENAME; LINK: EXISTS of path, then EXISTS of path2; SYMLINK: EXISTS of
 *     path2 (path is the link's text, never looked up);
 *   -ENOENT: MISSING of path (of path2 for SYMLINK): the first missing component;
 *   -ENOTDIR: EXISTS of path (of path2 for SYMLINK): the component that is no directory;
 *   -EEXIST of CREATE, MKDIR, LINK, SYMLINK: as a success, with fix-ups counted;
 *   -EFAULT, -EBADF, -EINVAL, -ENAMETOOLONG, -ELOOP, -EIO (an errno the reader did not
 *     know): nothing, the event is ignored; RELEASE and EXIT: nothing to walk (they drop
 *     references; an EXIT's /proc/PID is struct ca_replay's);
 *   any other error (-EACCES, -EISDIR, -EPERM, ...): the object exists: EXISTS of path; but
 *     for CREATE and MKDIR PREFIX, and for SYMLINK PREFIX of path2 (only the parent is known).
 * Returns the number of steps stored in @ret (0: nothing to walk), or -EINVAL: no @ev, an
 * unknown op, a relative or missing path (but for RELEASE and EXIT; a symlink's path may be
 * relative), RENAME or LINK or SYMLINK without an absolute path2.
 */
int ca_dcache_replay_plan(const struct ca_trace_event *ev,
                          struct ca_dcache_replay_step ret[CA_DCACHE_REPLAY_STEPS_MAX]);

/*
 * ca_dcache_replay() - apply one trace event on its own: its walks (EXISTS), then as
 * ca_dcache_replay_plan() says:
 *   EXISTS walks the path, instantiating or allocating what it needs; MISSING walks it until
 *     a cached negative component, else leaves the last negative; PREFIX walks the
 *     components before the last; REMOVE and RENAME look up, then d_delete() or d_move().
 * Where the cache contradicts the trace (a cached negative the trace found, or a positive it
 * did not, such as a directory an earlier -ENOENT was assumed to have walked through), the
 * model is corrected to what a fresh lookup would leave, a positive, or a negative dentry
 * with its unused subtree killed (counted in the model's replay_fixups). An event with
 * nothing to apply (ignored by the plan, a RELEASE or EXIT; an unlink of "/"; a rename onto itself)
 * counts in replay_ignored, any other in replayed. Holds and drops are ignored: references
 * are taken and dropped as the kernel's walk does, so nothing stays held; and so are
 * filesystems and process exits (EXIT is ignored: struct ca_replay knows /proc).
 * Returns 0 (applied or ignored), -EINVAL (see ca_dcache_replay_plan(); or a walk with a
 * relative path), -ENAMETOOLONG, -ENOMEM.
 */
int ca_dcache_replay(struct ca_dcache *d, const struct ca_trace_event *ev);

/* --- a replay that keeps what the traced programs held ---------------------------------------- */

struct ca_replay;

struct ca_replay_stats {
        uint64_t events;         /* events applied (ca_replay_event() returned 0) */
        uint64_t held;           /* references held now: holds, mount points, pinned positives */
        uint64_t holds;          /* holds taken (an event's or a walk's hold id) */
        uint64_t drops;          /* holds dropped */
        uint64_t mounts;         /* mount points known */
        uint64_t fs_pinned;      /* positive dentries pinned now by their filesystem (tmpfs) */
        uint64_t fs_unkept;      /* negative dentries their filesystem did not keep */
        uint64_t warm;           /* dentries added for what the kernel held before the trace
                                    began: pinned paths, mount points, their ancestors, and
                                    positives found on a filesystem that pins them. A delta
                                    against the kernel's counts is nr_dentry - 1 - warm */
        uint64_t exits;          /* EXIT events: processes that ended */
        uint64_t proc_flushed;   /* dentries their /proc/PID directories took with them */
        /* what could not be known (events with each of the reader's guesses, trace.h) */
        uint64_t guessed_links;
        uint64_t guessed_missing;
        uint64_t guessed_notdir;
        uint64_t guessed_interp;
        /* what did not add up */
        uint64_t hold_failed;    /* a hold whose path did not end at a positive dentry (the
                                    model refused the walk, or a failed call), never taken */
        uint64_t drop_unknown;   /* a drop of an id not held (its hold failed) */
        uint64_t hold_twice;     /* a hold id given again (the first one kept) */
};

/*
 * ca_replay_new() - a replay into @d, which it does not own (it must outlive the replay).
 * Returns 0, -EINVAL, -ENOMEM.
 */
int ca_replay_new(struct ca_dcache *d, struct ca_replay **ret);

/* ca_replay_free() - drop every reference the replay holds in its model; accepts NULL. */
struct ca_replay *ca_replay_free(struct ca_replay *r);

/*
 * ca_replay_event() - apply @ev as ca_dcache_replay() does, and then what it says about
 * references: its walks' and its own hold (path's final dentry, when positive) taken, its
 * drops dropped. A MOUNT makes its path a mount point of ev->fstype: below it, the
 * filesystem's rules apply (tmpfs, devtmpfs, ramfs and the like: a negative dentry dies at its
 * last reference and positives stay pinned until unlinked; proc, devpts, 9p: no negatives
 * kept, as proc_pident_lookup() and the like return -ENOENT without a dentry and 9p's d_delete
 * deletes a negative one; others, as the model).
 * /proc is proc when no MOUNT says what it is. An EXIT (after its drops) takes the
 * process's /proc/PID out of the cache where /proc is proc, as proc_flush_pid() does at the
 * reap: the unused dentries below it killed, the held ones unhashed to die at their last
 * reference. PIN and MOUNT dentries count as warm, and so do the ancestors they need and the
 * positives found on a pinning filesystem. Returns as ca_dcache_replay(), or -ENOMEM for the
 * replay's own tables (the event's effect on the model stays).
 */
int ca_replay_event(struct ca_replay *r, const struct ca_trace_event *ev);

void ca_replay_get_stats(const struct ca_replay *r, struct ca_replay_stats *ret);

#ifdef __cplusplus
}
#endif

#endif
