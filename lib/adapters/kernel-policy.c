/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <stdio.h>

#include "kernel-policy.h"

enum kp_gate kp_gate(bool idle, double host_memory_pct, double group_memory_pct)
{
        /* Under pressure the kernel reclaims already: acting then only adds to the stall. */
        if (host_memory_pct > KP_PRESSURE_PCT || group_memory_pct > KP_PRESSURE_PCT)
                return KP_PRESSURE;
        return idle ? KP_GO : KP_BUSY;
}

const char *kp_gate_name(enum kp_gate g)
{
        switch (g) {
        case KP_GO:
                return "idle";
        case KP_BUSY:
                return "busy";
        case KP_PRESSURE:
                return "memory pressure";
        }
        return "?";
}

uint64_t kp_reclaim_amount(uint64_t fixed, uint64_t base, uint64_t now, uint64_t min,
                           uint64_t max)
{
        uint64_t amount = fixed ? fixed : (now > base ? now - base : 0);

        if (amount > max)
                amount = max;
        return amount < min || amount == 0 ? 0 : amount;
}

static bool over_limit(const struct kp_drop_config *cfg, uint64_t nr_dentry, uint64_t nr_negative,
                       char *why, size_t len)
{
        uint64_t positive = nr_dentry > nr_negative ? nr_dentry - nr_negative : 0;

        if (cfg->negative_limit && nr_negative >= cfg->negative_limit) {
                if (why)
                        snprintf(why, len, "nr_negative %" PRIu64 " >= negative_limit %" PRIu64,
                                 nr_negative, cfg->negative_limit);
                return true;
        }
        if (cfg->negative_ratio > 0 && (double)nr_negative > cfg->negative_ratio * (double)positive) {
                if (why)
                        snprintf(why, len, "nr_negative %" PRIu64 " > negative_ratio %.2f x %" PRIu64
                                 " positive", nr_negative, cfg->negative_ratio, positive);
                return true;
        }
        if (why)
                snprintf(why, len, "nr_negative %" PRIu64 " under the limits (%" PRIu64
                         " positive)", nr_negative, positive);
        return false;
}

enum kp_drop kp_drop_decide(const struct kp_drop_config *cfg, struct kp_drop_state *st,
                            uint64_t nr_dentry, uint64_t nr_negative, enum kp_gate gate,
                            uint64_t now_usec, char *why, size_t why_len)
{
        char limit[160];
        size_t n;

        /* The streak counts rotations at which it grew since the one before; a fall ends it. */
        if (st->have_last && nr_negative > st->last_negative)
                st->growing++;
        else
                st->growing = 0;
        st->have_last = true;
        st->last_negative = nr_negative;

        if (!over_limit(cfg, nr_dentry, nr_negative, limit, sizeof(limit))) {
                if (why)
                        snprintf(why, why_len, "%s", limit);
                return KP_DROP_UNDER_LIMIT;
        }
        n = why ? (size_t)snprintf(why, why_len, "%s, grew %" PRIu32 " rotation%s in a row",
                                   limit, st->growing, st->growing == 1 ? "" : "s")
                : 0;
        if (why && n >= why_len)
                n = why_len - 1;
        if (st->growing < cfg->growth_rotations) {
                if (why)
                        snprintf(why + n, why_len - n, " (< growth_rotations %" PRIu32 ")",
                                 cfg->growth_rotations);
                return KP_DROP_NOT_GROWING;
        }
        if (st->dropped && now_usec - st->last_drop_usec < cfg->min_interval_usec) {
                if (why)
                        snprintf(why + n, why_len - n, ", last drop %" PRIu64 " s ago (< min_interval)",
                                 (now_usec - st->last_drop_usec) / 1000000);
                return KP_DROP_TOO_SOON;
        }
        if (gate != KP_GO) {
                if (why)
                        snprintf(why + n, why_len - n, ", but %s", kp_gate_name(gate));
                return KP_DROP_GATED;
        }
        return KP_DROP_NOW;
}

void kp_drop_done(struct kp_drop_state *st, uint64_t now_usec, uint64_t nr_negative)
{
        st->dropped = true;
        st->last_drop_usec = now_usec;
        st->growing = 0;
        st->have_last = true;
        st->last_negative = nr_negative;
}
