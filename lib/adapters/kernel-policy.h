/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * When the kernel adapter acts, decided from figures alone (no file, no clock of its own), so
 * that the tests replay recorded dentry-state and PSI sequences through the very code the
 * daemon runs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Memory "some avg10" above this is memory pressure: the kernel reclaims already. */
#define KP_PRESSURE_PCT 0.0 /* percent */

/* Whether an action may run now. */
enum kp_gate {
        KP_GO,
        KP_BUSY,     /* not idle time (the daemon's PSI gate, ca_host_idle()) */
        KP_PRESSURE, /* memory pressure on the host or in the group */
};

/*
 * kp_gate() - any action only in idle time and never under memory pressure: @idle is the
 * daemon's verdict, @host_memory_pct and @group_memory_pct (negative: unknown) the memory
 * "some avg10" of the host and of the target group.
 */
enum kp_gate kp_gate(bool idle, double host_memory_pct, double group_memory_pct);

/* kp_gate_name() - "idle", "busy", "memory pressure". */
const char *kp_gate_name(enum kp_gate g);

/*
 * kp_reclaim_amount() - what one rotation asks the group to give back: @fixed bytes when set,
 * else the growth of @now over @base (the group's level when the last rotation ended), at
 * most @max; 0 (nothing to do) when that is below @min.
 */
uint64_t kp_reclaim_amount(uint64_t fixed, uint64_t base, uint64_t now, uint64_t min,
                           uint64_t max);

/* action = drop: drop_caches 2, host-wide, only past a limit and after steady growth. */
struct kp_drop_config {
        uint64_t negative_limit;    /* nr_negative at or above this is too many; 0 = off */
        double negative_ratio;      /* negatives per positive dentry above this; 0 = off */
        uint32_t growth_rotations;  /* rotations in a row nr_negative must have grown */
        uint64_t min_interval_usec; /* between two drops */
};

struct kp_drop_state {
        bool have_last;
        uint64_t last_negative;     /* nr_negative at the previous rotation */
        uint32_t growing;           /* rotations in a row it grew */
        bool dropped;
        uint64_t last_drop_usec;
};

enum kp_drop {
        KP_DROP_UNDER_LIMIT,
        KP_DROP_NOT_GROWING,
        KP_DROP_TOO_SOON,
        KP_DROP_GATED,  /* it would, but not now: see the gate */
        KP_DROP_NOW,
};

/*
 * kp_drop_decide() - one rotation's figures: whether to drop now. Updates the growth streak
 * in @st; says why in @why (may be NULL), with the figures that decided.
 */
enum kp_drop kp_drop_decide(const struct kp_drop_config *cfg, struct kp_drop_state *st,
                            uint64_t nr_dentry, uint64_t nr_negative, enum kp_gate gate,
                            uint64_t now_usec, char *why, size_t why_len);

/* kp_drop_done() - a drop happened at @now_usec, leaving @nr_negative: the streak starts over. */
void kp_drop_done(struct kp_drop_state *st, uint64_t now_usec, uint64_t nr_negative);
