/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-uid rate limit of log lines (uid-ratelimit.h). Fixed windows, as journald's own
 * (RateLimitIntervalSec=, RateLimitBurst=) but per uid; the table is a plain array searched
 * in full: 258 slots of a few words, looked at only when a line is about to be written.
 */

#include <errno.h>
#include <stdlib.h>

#include "uid-ratelimit.h"

struct slot {
        uid_t uid;
        bool used;
        uint64_t start_usec; /* the window opened (its first line) */
        unsigned passed;     /* lines written in this window */
        uint64_t dropped;    /* lines left out, not summarized yet */
        int level;           /* the most severe of those (lowest syslog number) */
};

#define SLOT_ROOT 0                           /* uid 0's own */
#define SLOT_OTHERS (UID_RATELIMIT_SLOTS + 1) /* every uid that found no slot */

struct uid_ratelimit {
        uint64_t interval_usec;
        unsigned burst;
        struct slot slots[UID_RATELIMIT_SLOTS + 2];
};

int uid_ratelimit_new(uint64_t interval_usec, unsigned burst, struct uid_ratelimit **ret)
{
        struct uid_ratelimit *rl;

        if (interval_usec == 0 || burst == 0)
                return -EINVAL;
        rl = calloc(1, sizeof(*rl));
        if (!rl)
                return -ENOMEM;
        rl->interval_usec = interval_usec;
        rl->burst = burst;
        *ret = rl;
        return 0;
}

struct uid_ratelimit *uid_ratelimit_free(struct uid_ratelimit *rl)
{
        free(rl);
        return NULL;
}

static bool window_ended(const struct uid_ratelimit *rl, const struct slot *s, uint64_t now_usec)
{
        return now_usec >= s->start_usec && now_usec - s->start_usec >= rl->interval_usec;
}

/* @uid's slot: its own, a free one, one whose window ended and is summed up, or "others". */
static struct slot *slot_for(struct uid_ratelimit *rl, uid_t uid, uint64_t now_usec)
{
        struct slot *spare = NULL;

        if (uid == 0)
                return &rl->slots[SLOT_ROOT];
        for (size_t i = 1; i <= UID_RATELIMIT_SLOTS; i++) {
                struct slot *s = &rl->slots[i];

                if (s->used && s->uid == uid)
                        return s;
                if (!spare && (!s->used || (s->dropped == 0 && window_ended(rl, s, now_usec))))
                        spare = s;
        }
        if (!spare)
                return &rl->slots[SLOT_OTHERS];
        *spare = (struct slot){ .uid = uid, .used = true, .start_usec = now_usec };
        return spare;
}

enum uid_ratelimit_verdict uid_ratelimit_check(struct uid_ratelimit *rl, uid_t uid, int level,
                                               uint64_t now_usec, bool *ret_shared)
{
        struct slot *s = slot_for(rl, uid, now_usec);

        *ret_shared = s == &rl->slots[SLOT_OTHERS];
        if (!s->used || window_ended(rl, s, now_usec)) {
                /* A count not summarized yet (the caller did not ask) is kept, not lost. */
                s->used = true;
                s->uid = uid;
                s->start_usec = now_usec;
                s->passed = 0;
        }
        if (s->passed < rl->burst) {
                s->passed++;
                return s->passed == rl->burst ? UID_RATELIMIT_PASS_LAST : UID_RATELIMIT_PASS;
        }
        if (s->dropped == 0 || level < s->level)
                s->level = level;
        s->dropped++;
        return UID_RATELIMIT_DROP;
}

int uid_ratelimit_summary(struct uid_ratelimit *rl, uint64_t now_usec, uid_t *ret_uid,
                          bool *ret_shared, uint64_t *ret_dropped, int *ret_level)
{
        for (size_t i = 0; i < UID_RATELIMIT_SLOTS + 2; i++) {
                struct slot *s = &rl->slots[i];

                if (s->dropped == 0 || !window_ended(rl, s, now_usec))
                        continue;
                *ret_uid = s->uid;
                *ret_shared = i == SLOT_OTHERS;
                *ret_dropped = s->dropped;
                *ret_level = s->level;
                s->dropped = 0;
                return 1;
        }
        return 0;
}

uint64_t uid_ratelimit_next_summary_usec(const struct uid_ratelimit *rl)
{
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < UID_RATELIMIT_SLOTS + 2; i++) {
                const struct slot *s = &rl->slots[i];

                if (s->dropped > 0 && s->start_usec + rl->interval_usec < next)
                        next = s->start_usec + rl->interval_usec;
        }
        return next;
}

uint64_t uid_ratelimit_interval_usec(const struct uid_ratelimit *rl)
{
        return rl->interval_usec;
}
