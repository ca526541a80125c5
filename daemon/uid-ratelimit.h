/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A rate limit, per uid, on log lines that a caller can make the daemon write at will (a
 * refused bus write logs one, and anyone may call): at most @burst lines per uid in a window of
 * @interval_usec that opens at its first line; the rest are counted, and once the window has
 * ended one summary says how many were left out. Without it one unprivileged caller could fill
 * the journal until journald's own limit for the whole service (10,000 lines in 30 s by default)
 * drops the daemon's real errors with the flood.
 *
 * Its memory is fixed at creation: UID_RATELIMIT_SLOTS uids are counted at once, plus uid 0,
 * which has a slot of its own (root's lines never share with anyone's), plus "others": a uid
 * that finds every slot taken (a window still open, or a count still to summarize) shares that
 * one slot with every other such uid, and it is limited the same way. So a caller with many
 * uids (subordinate uids through a user namespace) gets no more lines than the table holds:
 * at most (UID_RATELIMIT_SLOTS + 2) x @burst lines and as many summaries per interval.
 *
 * Pure logic: the caller gives the time (CLOCK_MONOTONIC) and writes the lines. One thread.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UID_RATELIMIT_SLOTS 256 /* uids counted at once, besides uid 0 and "others" */

struct uid_ratelimit;

enum uid_ratelimit_verdict {
        UID_RATELIMIT_PASS,      /* write the line */
        UID_RATELIMIT_PASS_LAST, /* write it, and say that the window's next ones are counted */
        UID_RATELIMIT_DROP,      /* leave it out: counted for the window's summary */
};

/*
 * uid_ratelimit_new() - a limit of @burst (>= 1) lines per uid per @interval_usec (> 0).
 * Returns 0, -EINVAL or -ENOMEM.
 */
int uid_ratelimit_new(uint64_t interval_usec, unsigned burst, struct uid_ratelimit **ret);

/* uid_ratelimit_free() - accepts NULL; returns NULL. Counts not yet summarized are lost. */
struct uid_ratelimit *uid_ratelimit_free(struct uid_ratelimit *rl);

/*
 * uid_ratelimit_check() - a line about @uid, of syslog @level, at @now_usec: whether to write
 * it. *@ret_shared says whether @uid counts in the "others" slot (its window is theirs). Call
 * uid_ratelimit_summary() until it returns 0 before, so that an ended window is summed up
 * before its slot starts another.
 */
enum uid_ratelimit_verdict uid_ratelimit_check(struct uid_ratelimit *rl, uid_t uid, int level,
                                               uint64_t now_usec, bool *ret_shared);

/*
 * uid_ratelimit_summary() - a window that has ended by @now_usec with lines left out: its uid
 * (*@ret_shared: the "others" slot, and *@ret_uid means nothing), how many lines were left
 * out and the most severe level among them; that count is then cleared. Returns 1, or 0 when
 * no such window is left. UINT64_MAX for @now_usec ends every window (at exit).
 */
int uid_ratelimit_summary(struct uid_ratelimit *rl, uint64_t now_usec, uid_t *ret_uid,
                          bool *ret_shared, uint64_t *ret_dropped, int *ret_level);

/*
 * uid_ratelimit_next_summary_usec() - when the first window with lines left out ends (a time
 * for a timer), or UINT64_MAX when none has any.
 */
uint64_t uid_ratelimit_next_summary_usec(const struct uid_ratelimit *rl);

/* uid_ratelimit_interval_usec() - the window's length, as given to uid_ratelimit_new(). */
uint64_t uid_ratelimit_interval_usec(const struct uid_ratelimit *rl);
