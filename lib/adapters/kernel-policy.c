/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cacheage/value.h"
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

uint64_t kp_file_ref(struct kp_file_window *w, uint64_t file)
{
        uint64_t high = 0;

        w->seen[w->at++ % KP_FILE_ROTATIONS] = file;
        for (size_t i = 0; i < KP_FILE_ROTATIONS; i++)
                if (w->seen[i] > high)
                        high = w->seen[i];
        return high;
}

void kp_pass_begin(struct kp_pass *p, uint64_t step, uint64_t max, uint64_t file)
{
        *p = (struct kp_pass){ .step = step, .max = max, .file_start = file,
                               .end = KP_PASS_GOING };
}

enum kp_how kp_group_how(bool mglru, uint64_t reclaimable, uint64_t sweep_min, bool trim_ok,
                         char *why, size_t why_len)
{
        char a[16], b[16];

        if (why && why_len)
                why[0] = '\0';
        if (reclaimable <= KP_TRIM_MAX_FILE) {
                if (trim_ok)
                        return KP_HOW_TRIM;
                if (why)
                        snprintf(why, why_len, "%s page cache, swap on and no swappiness=0 "
                                 "for the write: it would swap the group's memory out",
                                 ca_format_size(reclaimable, a, sizeof(a)));
                return KP_HOW_ALONE;
        }
        if (mglru && kp_sweep_fits(reclaimable, sweep_min))
                return KP_HOW_SWEEP;
        if (!mglru && reclaimable >= KP_PASS_MIN_FILE)
                return KP_HOW_PASS;
        if (why)
                snprintf(why, why_len, "%s page cache, below the %s floor (%s)",
                         ca_format_size(reclaimable, a, sizeof(a)), mglru ? "sweep" : "pass",
                         ca_format_size(mglru ? (sweep_min ? sweep_min : KP_SWEEP_MIN_FILE)
                                              : KP_PASS_MIN_FILE,
                                        b, sizeof(b)));
        return KP_HOW_ALONE;
}

const char *kp_how_name(enum kp_how how)
{
        static const char *const names[] = {
                [KP_HOW_TRIM] = "trim",
                [KP_HOW_SWEEP] = "sweep",
                [KP_HOW_PASS] = "pass",
                [KP_HOW_ALONE] = "left alone",
        };

        return (unsigned)how < sizeof(names) / sizeof(names[0]) ? names[how] : "?";
}

bool kp_sweep_fits(uint64_t file, uint64_t min)
{
        return file >= (min ? min : KP_SWEEP_MIN_FILE);
}

bool kp_sweep_overran(uint64_t scanned, uint64_t slab)
{
        return scanned / 2 > slab / KP_DENTRY_BYTES;
}

uint64_t kp_sweep_min_after(uint64_t file, uint64_t min)
{
        uint64_t now = min ? min : KP_SWEEP_MIN_FILE;

        return 2 * (file > now ? file : now);
}

void kp_pass_trim(struct kp_pass *p)
{
        p->trim = true;
        p->step = KP_TRIM_STEP;
}

void kp_pass_sweep(struct kp_pass *p)
{
        p->sweep = true;
        p->step = KP_SWEEP_STEP;
}

bool kp_pass_step(struct kp_pass *p, int error, uint64_t slab_before, uint64_t slab_after,
                  uint64_t dentries_freed, uint64_t file_after)
{
        uint64_t freed = slab_before > slab_after ? slab_before - slab_after : 0;
        uint64_t budget = p->file_start / 100 * KP_PASS_FILE_PCT;

        p->steps++;
        p->last_before = slab_before;
        if (error < 0 && error != -EAGAIN) {
                p->end = KP_PASS_ERROR;
                p->error = error;
                return false;
        }
        p->asked += p->step;
        p->freed_bytes += freed;
        p->freed_dentries += dentries_freed;
        if (p->trim) {
                /* At most one walk, and usually the kernel's every retry: one write a rotation. */
                p->end = KP_PASS_TRIMMED;
                return false;
        }
        if (p->sweep) {
                /* One walk of the LRUs: the next would take the rotated, referenced ones. */
                p->end = error == -EAGAIN ? KP_PASS_DRY : KP_PASS_SWEPT;
                return false;
        }
        /* -EAGAIN: the kernel tried every priority and retried; the group is dry. */
        if (error == -EAGAIN) {
                p->end = KP_PASS_DRY;
                return false;
        }
        /* Dentries freed from pages that stay partly used count as what they would free. */
        if (freed * 2 < p->step && dentries_freed * KP_DENTRY_BYTES * 2 < p->step) {
                p->end = KP_PASS_DONE;
                return false;
        }
        if (p->asked + p->step > p->max) {
                p->end = KP_PASS_MAX;
                return false;
        }
        p->file_taken = p->file_start > file_after ? p->file_start - file_after : 0;
        if (p->file_taken >= (budget > p->step ? budget : p->step)) {
                p->end = KP_PASS_CACHE;
                return false;
        }
        return true;
}

uint64_t kp_pass_base(const struct kp_pass *p, uint64_t after)
{
        return p->end == KP_PASS_DRY && p->last_before > after ? p->last_before : after;
}

bool kp_pass_again(const struct kp_pass *p, uint64_t min)
{
        /*
         * A trim walks once at most, and a write the kernel meets sooner about half the LRU
         * (the 6.1 guest: a storm halved trim by trim, 16,968 dentries freed, then 8,508,
         * 4,266, 2,137, 1,084): what it left is about what it freed, so a trim comes again
         * while one frees an eighth of min_reclaim, as a pass does (KP_AGAIN_DIV).
         */
        if (p->end == KP_PASS_TRIMMED)
                return p->freed_bytes >= min / KP_AGAIN_DIV ||
                       p->freed_dentries * KP_DENTRY_BYTES >= min / KP_AGAIN_DIV;
        /* A sweep walked the whole LRUs: what it left was referenced. */
        if (p->end == KP_PASS_DRY || p->end == KP_PASS_ERROR || p->end == KP_PASS_SWEPT ||
            p->steps == 0)
                return false;
        if (p->file_start >= KP_LOOK_MIN_FILE)
                min /= KP_AGAIN_DIV;
        return p->freed_bytes >= min || p->freed_dentries * KP_DENTRY_BYTES >= min;
}

bool kp_look_due(unsigned quiet, uint64_t slab, uint64_t min, uint64_t file)
{
        return quiet >= KP_LOOK_ROTATIONS && slab >= min && file >= KP_LOOK_MIN_FILE;
}

const char *kp_pass_end_name(enum kp_pass_end end)
{
        switch (end) {
        case KP_PASS_GOING:
                return "under way";
        case KP_PASS_DONE:
                return "the last step took little slab";
        case KP_PASS_DRY:
                return "less reclaimable than asked";
        case KP_PASS_MAX:
                return "all it was for asked";
        case KP_PASS_CACHE:
                return "its share of the page cache taken";
        case KP_PASS_SWEPT:
                return "one sweep";
        case KP_PASS_TRIMMED:
                return "one trim";
        case KP_PASS_ERROR:
                return "failed";
        }
        return "?";
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
