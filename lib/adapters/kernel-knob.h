/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * vm.vfs_cache_pressure set for the length of one memory.reclaim write, and never left so.
 *
 * The knob is the host's: every reclaim on the host reads it (fs/super.c super_cache_count, when
 * a shrinker counts, at the start of its scan). The kernel adapter sets it for one write at a
 * time (a sweep, kernel.c); whatever happens to the process that set it, it comes back:
 *
 *   - the value found, and the one set, are recorded in the run directory (KK_RUN_DIR under
 *     the root, the unit's RuntimeDirectory=) before the knob is changed, and the record removed
 *     once the value is back: a record left means a process died with the knob set, and says
 *     what to put back;
 *   - every process sets it only under flock() on the run directory's lock file, so that none
 *     takes another's value for the one to put back (the kernel drops a dead holder's lock);
 *   - kk_restore() puts a recorded value back: cacheaged calls it first thing at every start,
 *     whatever its configuration says, and the unit's ExecStopPost= runs
 *     `cacheaged --restore-sysctl`, which calls it;
 *   - a guard thread puts the value back after a bound, even while the write is still in the
 *     kernel. A value raised (a sweep) goes back at once: the shrinkers read the knob when they
 *     count, so what they counted is scanned anyway, and everything else on the host sees the
 *     administrator's value again. A value lowered (a trim) is meant for the whole write, whose
 *     every descent counts again: after KK_LOWERED_BOUND_USEC (when longer than the guard's
 *     bound) the guard first interrupts the write (a signal to the writing
 *     thread, between kk_write_begin() and kk_write_end(): the kernel's reclaim stops for it
 *     after its current descent, mm/memcontrol.c memory_reclaim), and puts the value back once
 *     the write has ended, or KK_GRACE_USEC (30 s) later at most.
 *
 * A value is put back only while the knob still holds what was set: one an administrator
 * wrote meanwhile stays. Nothing here logs: messages come back in @msg for the caller to say.
 * Functions return 0 or a negative errno.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KK_RUN_DIR "/run/cacheage/sysctl"               /* under the root */
#define KK_LOCK_FILE "sysctl.lock"
#define KK_RECORD_FILE "vm.vfs_cache_pressure"
#define KK_MSG_MAX 512                                  /* bytes of a message */
/*
 * What a cacheaged before the record set for its sweeps, and nothing else sets: found with no
 * record, it is put back to the kernel's default.
 */
#define KK_UNRECORDED_VALUE 204800
#define KK_KERNEL_DEFAULT 100
/*
 * A lowered value's write interrupted: how long it may still run before the value goes back
 * anyway. Put back inside a descent, the rest of the descent counts at the administrator's
 * pressure: on a group without page cache that is the walk after walk a trim avoids, and its
 * hot set goes (seen in a 6.1 guest under TCG with 100 services: a trim cut at 100 ms took a
 * whole hot set of 100, and with 2 s a descent that took 2.7 s did the same). Interrupted, the
 * kernel ends the write after its current descent; a lowered knob costs the rest of the host
 * nothing it would keep (its reclaim scans less slab meanwhile), and a recorded value is put
 * back whatever ends the daemon; so the bound is only against a write stuck in the kernel.
 */
#define KK_GRACE_USEC 30000000

/*
 * A lowered value's bound, when the guard's own is shorter: a trim's write walks the group's
 * LRU about once over its seventeen descents, and one cut at 100 ms (a loaded machine, TCG)
 * walks a fraction of it, leaving its storm to rotations that may not come soon. The bound of a
 * raised value (a sweep) is what keeps the rest of the host's reclaim gentle; a lowered one
 * costs the host nothing it would keep, so it may run for this long before it is interrupted.
 */
#define KK_LOWERED_BOUND_USEC 1000000

struct kk_guard;

/* How long one setting lasted, for the statistics. */
struct kk_window {
        uint64_t usec;       /* from the write that set it to the one that put it back */
        bool cut;            /* the guard put it back while the write was still under way */
        bool normal_sched;   /* the setting thread left idle CPU priority for the window */
};

/*
 * kk_guard_new() - the guard of one user (a kernel cache): a thread that puts a set value back
 * @bound_usec after it was set. Files are taken under @root ("/" but in tests), which must
 * outlive the guard. The thread leaves idle CPU priority if the process may (it asks
 * once, at start: a unit's LimitNICE=); the answer is in kk_guard_normal_sched().
 */
int kk_guard_new(const char *root, uint64_t bound_usec, struct kk_guard **ret);

/* kk_guard_grace() - KK_GRACE_USEC for this guard instead (tests). */
void kk_guard_grace(struct kk_guard *g, uint64_t grace_usec);

/* kk_guard_free() - stop the guard, putting back anything still set; returns NULL. */
struct kk_guard *kk_guard_free(struct kk_guard *g);

/* kk_guard_normal_sched() - whether the guard's thread runs at normal CPU priority. */
bool kk_guard_normal_sched(const struct kk_guard *g);

/*
 * kk_set() - set vm.vfs_cache_pressure to @value until kk_put_back(), from the calling thread:
 * the lock taken (-EBUSY at once when another process or cache holds it), a value a dead
 * process left put back first (said in @msg), the value found recorded (-errno and nothing
 * changed when it cannot be), then the knob written and the guard armed. For the window the
 * calling thread leaves idle CPU priority where it may. One setting at a time per guard.
 */
int kk_set(struct kk_guard *g, uint64_t value, char *msg, size_t len);

/*
 * kk_write_begin(), kk_write_end() - the calling thread (the one that called kk_set()) is in the
 * write the knob was set for, then out of it: the guard may interrupt it meanwhile (the write
 * then fails with EINTR, an answer: the kernel stopped as asked). The thread's signal mask must
 * not block SIGRTMIN + KK_SIGNAL_OFFSET, whose handler does nothing.
 */
#define KK_SIGNAL_OFFSET 1
void kk_write_begin(struct kk_guard *g);
void kk_write_end(struct kk_guard *g);

/*
 * kk_put_back() - the value found put back (unless the guard did, or someone wrote the knob
 * meanwhile), the record removed, the lock dropped, the thread's priority as it was. @ret
 * (may be NULL) says how long it lasted. An error writing the knob is returned (and said in
 * @msg); the record then stays for kk_restore().
 */
int kk_put_back(struct kk_guard *g, struct kk_window *ret, char *msg, size_t len);

/*
 * kk_restore() - what a process that died with the knob set left: under the lock (-EBUSY when
 * a live process holds it: that one puts its value back itself), the recorded value written
 * back while the knob still holds the value that process set, and the record removed; with no
 * record but KK_UNRECORDED_VALUE in the knob (left by a cacheaged from before the record), the
 * kernel's default. Returns 1 when it put a value back (said in @msg), 0 when there was nothing
 * to do. Never creates the run directory.
 */
int kk_restore(const char *root, char *msg, size_t len);
