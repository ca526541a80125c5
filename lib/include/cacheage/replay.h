/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_REPLAY_H
#define CACHEAGE_REPLAY_H

/*
 * Trace events (cacheage/trace.h) applied to a dentry-cache model (cacheage/dcache.h): an
 * strace line says what exists, and the model is made to agree, walking the paths the way the
 * kernel's lookup would have walked them.
 *
 * What an event says depends on its operation and its result: ca_dcache_replay_plan() is that
 * table, one place for ca_dcache_replay() and for any tool that needs to know which dentries
 * an event walks (the replay lab counts lookups with it).
 *
 * Locking: the model's (one thread at a time). Errors are negative errno values.
 */

#include <stdbool.h>

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
        CA_DCACHE_REPLAY_MISSING, /* the components before the first missing one positive, the
                                     missing one negative: a cached negative component on the
                                     way, or else the last (ENOENT) */
        CA_DCACHE_REPLAY_PREFIX,  /* the components before the last positive directories; the
                                     last is not looked up (ENOTDIR, a failed create) */
        CA_DCACHE_REPLAY_REMOVE,  /* looked up positive, then d_delete(); with .dir an rmdir,
                                     shrink_dcache_parent() first */
        CA_DCACHE_REPLAY_RENAME,  /* looked up positive, then d_move()d onto path2, which is
                                     looked up (negative when new); the old target dies */
};

struct ca_dcache_replay_step {
        enum ca_dcache_replay_action action;
        bool path2;  /* about the event's path2 (else its path) */
        bool parent; /* MISSING: about the path's parent, its last component dropped (the
                        missing part of a failed create); nothing when that is "/" */
        bool dir;    /* EXISTS: the last component is a directory; REMOVE: an rmdir */
        bool fixup;  /* EXISTS: a cached negative dentry found positive is the model's error,
                        counted in replay_fixups (not a create that the event made) */
};

/*
 * ca_dcache_replay_plan() - what @ev says about the cache, in the order ca_dcache_replay()
 * applies it:
 *   success of LOOKUP, EXEC, CHDIR: EXISTS (CHDIR's last component a directory); CREATE,
 *     MKDIR: EXISTS (MKDIR's a directory); UNLINK, RMDIR: REMOVE; RENAME: RENAME; LINK:
 *     EXISTS of path, then EXISTS of path2; SYMLINK: EXISTS of path2 (path is the link's text,
 *     never looked up);
 *   -ENOENT: MISSING (for CREATE, MKDIR and SYMLINK the parent's last component is what is
 *     missing; for RENAME and LINK, path's);
 *   -ENOTDIR: PREFIX (RMDIR: EXISTS, the path names a file);
 *   -EEXIST of CREATE, MKDIR, LINK, SYMLINK: as a success, with fix-ups counted;
 *   -EFAULT, -EBADF, -EINVAL, -ENAMETOOLONG, -ELOOP, -EIO (an errno the reader did not
 *     know): nothing, the event is ignored;
 *   any other error (-EACCES, -EISDIR, -EPERM, ...): the object exists: EXISTS of path; but
 *     for CREATE and MKDIR PREFIX, and for SYMLINK PREFIX of path2 (only the parent is known).
 * Returns the number of steps stored in @ret (0: ignored), or -EINVAL: no @ev or path, an
 * unknown op, a relative path (a symlink's path may be relative), RENAME or LINK or SYMLINK
 * without an absolute path2.
 */
int ca_dcache_replay_plan(const struct ca_trace_event *ev,
                          struct ca_dcache_replay_step ret[CA_DCACHE_REPLAY_STEPS_MAX]);

/*
 * ca_dcache_replay() - apply one trace event, as ca_dcache_replay_plan() says:
 *   EXISTS walks the path, instantiating or allocating what it needs; MISSING walks it until
 *     a cached negative component, else leaves the last negative; PREFIX walks the
 *     components before the last; REMOVE and RENAME look up, then d_delete() or d_move().
 * Where the cache contradicts the trace (a cached negative the trace found, or a positive it
 * did not, such as a directory an earlier -ENOENT was assumed to have walked through), the
 * model is corrected to what a fresh lookup would leave, a positive, or a negative dentry
 * with its unused subtree killed (counted in the model's replay_fixups). An event with
 * nothing to apply (ignored by the plan; an unlink of "/"; a rename onto itself) counts in
 * replay_ignored, any other in replayed.
 * Components are taken as written: symbolic links are not followed. References are taken
 * and dropped as the kernel's walk does, so nothing stays held.
 * Returns 0 (applied or ignored), -EINVAL (see ca_dcache_replay_plan()), -ENAMETOOLONG,
 * -ENOMEM.
 */
int ca_dcache_replay(struct ca_dcache *d, const struct ca_trace_event *ev);

#ifdef __cplusplus
}
#endif

#endif
