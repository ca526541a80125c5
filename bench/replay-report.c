/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The replay lab's report: the table, the JSON object and the plot of a run's figures. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "replay.h"

#define SVG_WIDTH 960                    /* px */
#define SVG_PANEL 300                    /* px per trace */
#define SVG_AGES 130                     /* px more for the ages auto chose, where it ran */

/* ------------------------------------------------------------------------------------------ */
/* output */

static double mean(long double sum, uint64_t steps)
{
        return steps ? (double)(sum / (long double)steps) : 0.0;
}

/* The share of the avoidable dead time (none's minus the oracle's) that @p removed. */
static double gap_closed(const struct run *run, const struct policy *p)
{
        long double none = run->p[0].dead_time, oracle = run->p[run->np - 1].dead_time;

        if (none - oracle <= 0)
                return 0.0;
        return (double)((none - p->dead_time) / (none - oracle));
}

static double ratio(long double a, long double b)
{
        return b > 0 ? (double)(a / b) : 0.0;
}

static double extra_pct(const struct policy *p)
{
        return p->lookups ? 100.0 * (double)p->extra / (double)p->lookups : 0.0;
}

static bool has_refaults(const struct policy *p)
{
        return p->kind == P_AGING && p->aging != AGING_FIXED;
}

/* ------------------------------------------------------------------------------------------ */
/* the figures over time, up to the horizon */

/* The oracle's holding over time: what is held that will be used again. */
static long double useful_time(const struct run *run)
{
        const struct policy *oracle = &run->p[run->np - 1];

        return oracle->tw_resident - oracle->tw_dead;
}

/* Dead dentries held per useful one, time-averaged up to the horizon. */
static double dead_per_useful(const struct run *run, const struct policy *p)
{
        return ratio(p->tw_dead, useful_time(run));
}

static double extra_pct_h(const struct policy *p)
{
        return p->lookups_h ? 100.0 * (double)p->extra_h / (double)p->lookups_h : 0.0;
}

struct window {
        bool valid;
        size_t start_s, seconds;
        double dead_per_useful, extra_pct;
};

/*
 * The worst WINDOW_S-second windows of @p up to the horizon (one window of what there is, for a
 * shorter trace), sliding by a second: the one of most dead per useful, and the one of most
 * extra misses. Nothing without the trace's time.
 */
static void worst_windows(const struct run *run, const struct policy *p, struct window *ret_dead,
                          struct window *ret_extra)
{
        const struct policy *oracle = &run->p[run->np - 1];
        size_t n = run->nsec, w;

        *ret_dead = *ret_extra = (struct window){ 0 };
        if (!run->timed || n == 0)
                return;
        if (n > run->t_cut / 1000000)
                n = (size_t)(run->t_cut / 1000000);
        if (n == 0)
                return;
        w = n < WINDOW_S ? n : WINDOW_S;
        for (size_t b = 0; b + w <= n; b++) {
                double dead = 0, useful = 0, lookups = 0, extra = 0;
                struct window fig;

                for (size_t k = b; k < b + w; k++) {
                        dead += p->w_dead[k];
                        useful += oracle->w_resident[k] - oracle->w_dead[k];
                        lookups += p->w_lookups[k];
                        extra += p->w_extra[k];
                }
                fig = (struct window){ .valid = true, .start_s = b, .seconds = w,
                                       .dead_per_useful = useful > 0 ? dead / useful : 0,
                                       .extra_pct = lookups > 0 ? 100 * extra / lookups : 0 };
                if (!ret_dead->valid || fig.dead_per_useful > ret_dead->dead_per_useful)
                        *ret_dead = fig;
                if (!ret_extra->valid || fig.extra_pct > ret_extra->extra_pct)
                        *ret_extra = fig;
        }
}

/* Whether @p meets --target: dead per useful at most, extra misses at most (to the horizon). */
static bool target_met(const struct run *run, const struct policy *p, const struct config *cfg)
{
        return dead_per_useful(run, p) <= cfg->target_dead &&
               extra_pct_h(p) <= cfg->target_extra_pct;
}

/* The aging rows' own lines: refaults against extra misses, auto's ages, the target. */
static void print_aging(const struct run *run, const struct config *cfg)
{
        bool any = false;

        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];

                if (!has_refaults(p))
                        continue;
                if (!any)
                        printf("  refaults (framework) / extra misses (lab):");
                any = true;
                printf(" %s %llu/%llu", p->name, (unsigned long long)p->age_stats.refaults,
                       (unsigned long long)p->extra);
                if (p->extra)
                        printf(" = %.2f", (double)p->age_stats.refaults / (double)p->extra);
        }
        if (any)
                printf("\n");
        any = false;
        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];

                if (p->kind != P_AGING || p->aging != AGING_AUTO)
                        continue;
                if (!any)
                        printf("  auto at the end (single-use/max age, objects with their own):");
                any = true;
                printf(" %s %llu/%llu %llu", p->name,
                       (unsigned long long)p->age_stats.current_single_use_age,
                       (unsigned long long)p->age_stats.current_max_age,
                       (unsigned long long)p->age_stats.own_aged_objects);
        }
        if (any)
                printf("\n");
        if (!cfg->target_given)
                return;
        printf("  target: dead/useful <= %.3f and extra <= %.2f%%:", cfg->target_dead,
               cfg->target_extra_pct);
        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];

                if (p->kind == P_AGING)
                        printf(" %s %.3f %.2f%% %s", p->name, dead_per_useful(run, p),
                               extra_pct_h(p), target_met(run, p, cfg) ? "met" : "MISSED");
        }
        printf("\n");
}

/* Whether grid row @g does better than @p on both counts: less dead per useful, fewer extra. */
static bool dominates(const struct run *run, const struct policy *g, const struct policy *p)
{
        return g->rotate_usec == p->rotate_usec &&
               dead_per_useful(run, g) < dead_per_useful(run, p) && g->extra_h < p->extra_h;
}

/* Whether @g is at least as good as @q on both counts and better on one (the frontier's list). */
static bool weakly_dominates(const struct run *run, const struct policy *g, const struct policy *q)
{
        double dg = dead_per_useful(run, g), dq = dead_per_useful(run, q);

        return g != q && g->rotate_usec == q->rotate_usec && dg <= dq &&
               g->extra_h <= q->extra_h && (dg < dq || g->extra_h < q->extra_h);
}

/* --frontier: the grid's own frontier, and for each aging-auto row the grid rows beating it. */
static void print_frontier(const struct run *run)
{
        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];
                size_t beaten = 0, shown = 0;

                if (p->kind != P_AGING || p->aging != AGING_AUTO || run->nall == run->np)
                        continue;
                printf("  frontier of fixed ages at %llu ms (dead/u, extra%%; -rf: with the refault "
                       "memory):",
                       (unsigned long long)(p->rotate_usec / 1000));
                for (size_t g = run->np; g < run->nall; g++) {
                        const struct policy *q = &run->p[g];
                        bool on = q->rotate_usec == p->rotate_usec;

                        for (size_t h = run->np; on && h < run->nall; h++)
                                on = !weakly_dominates(run, &run->p[h], q);
                        if (on)
                                printf("%s %s%u/%u %.4f %.2f%%", shown++ % 4 ? "," : "\n   ",
                                       q->aging == AGING_REFAULT ? "rf " : "",
                                       q->single_use_age, q->max_age, dead_per_useful(run, q),
                                       extra_pct_h(q));
                }
                printf("\n  %s: %.4f %.2f%%:", p->name, dead_per_useful(run, p), extra_pct_h(p));
                for (size_t g = run->np; g < run->nall; g++) {
                        const struct policy *q = &run->p[g];

                        if (!dominates(run, q, p))
                                continue;
                        if (beaten++ < 6)
                                printf(" %s %.4f %.2f%%", q->name, dead_per_useful(run, q),
                                       extra_pct_h(q));
                }
                if (beaten)
                        printf("%s: ABOVE the frontier, %zu fixed pairs beat it on both counts\n",
                               beaten > 6 ? " ..." : "", beaten);
                else
                        printf(" on or below the frontier (no fixed pair beats it on both "
                               "counts)\n");
        }
}

/* aging-auto: the ages it went through (rotation: single-use/max), the last ones at the end. */
static void print_ages(const struct run *run)
{
        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];
                size_t from = p->nages > 12 ? p->nages - 12 : 0;
                uint64_t longest = 0;

                if (p->kind != P_AGING || p->aging != AGING_AUTO || !p->nages)
                        continue;
                /* the most rotations one pair was in force, the last until the end */
                for (size_t k = 0; k < p->nages; k++) {
                        uint64_t until = k + 1 < p->nages ? p->ages[k + 1].rotation : p->rotations;

                        if (until - p->ages[k].rotation > longest)
                                longest = until - p->ages[k].rotation;
                }
                printf("  %s ages (rotation: single-use/max), %zu changes, longest at one %llu "
                       "rotations%s:", p->name, p->nages - 1, (unsigned long long)longest,
                       from ? ", the last 12" : "");
                for (size_t k = from; k < p->nages; k++)
                        printf(" %llu:%u/%u", (unsigned long long)p->ages[k].rotation,
                               p->ages[k].single_use_age, p->ages[k].max_age);
                printf("\n");
        }
}

static const char *clock_desc(const struct run *run, char *buf, size_t size)
{
        if (run->t->has_time)
                snprintf(buf, size, "%.3f s from first to next repetition",
                         (double)run->span_usec / 1e6);
        else
                snprintf(buf, size, "none finer than 1 s (aging on the event clock)");
        return buf;
}

/* The horizon and how it was chosen, for the table's head. */
static const char *horizon_desc(const struct run *run, const struct config *cfg, char *buf,
                                size_t size)
{
        if (!run->timed)
                snprintf(buf, size, "none (no time: every step counts)");
        else
                snprintf(buf, size, "%.1f s (%s; longest round %.1f s), figures over time to "
                         "%.1f s of %.1f s", (double)run->horizon / 1e6,
                         cfg->horizon_s >= 0 ? "--horizon" : "the longest round",
                         (double)run->t->round_usec / 1e6, (double)run->t_cut / 1e6,
                         (double)run->t_end / 1e6);
        return buf;
}

const char *controller_name(uint32_t variant)
{
        static const char *const names[_CA_AUTO_CONTROLLER_MAX] = {
                [CA_AUTO_CONTROLLER_BUILT] = "built",
                [CA_AUTO_CONTROLLER_NO_BAR] = "no-bar",
                [CA_AUTO_CONTROLLER_BAR_1_WINDOW] = "bar-1-window",
                [CA_AUTO_CONTROLLER_QUIET_8] = "quiet-8",
                [CA_AUTO_CONTROLLER_UP_SIXTEENTH] = "up-sixteenth",
                [CA_AUTO_CONTROLLER_UP_QUARTER] = "up-quarter",
                [CA_AUTO_CONTROLLER_DOWN_QUARTER] = "down-quarter",
        };

        return variant < _CA_AUTO_CONTROLLER_MAX && names[variant] ? names[variant] : "?";
}

void print_human(const struct run *runs, size_t nruns, const struct config *cfg)
{
        if (cfg->age.auto_controller != CA_AUTO_CONTROLLER_BUILT)
                printf("aging-auto rows: the controller with --controller %s, not as built\n\n",
                       controller_name(cfg->age.auto_controller));
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                const struct trace *t = run->t;
                const struct policy *none = &run->p[0], *oracle = &run->p[run->np - 1];
                char clk[96], hz[160];

                printf("%s%s: %zu events%s, %llu steps, %zu dentries named, timestamps: %s, "
                       "%llu refused by the model; replayed in %.2f s\n",
                       ri ? "\n" : "", t->file, t->nev,
                       cfg->loop > 1 ? " (looped)" : "", (unsigned long long)run->steps,
                       t->ids.n - 1, clock_desc(run, clk, sizeof(clk)),
                       (unsigned long long)run->failed, run->seconds);
                printf("  horizon: %s; process ends: %llu in the log, %llu after a pid's last "
                       "event\n",
                       horizon_desc(run, cfg, hz, sizeof(hz)),
                       (unsigned long long)t->exits_logged, (unsigned long long)t->exits_added);
                printf("  %-19s %6s %8s %6s %6s %6s %7s %6s %6s %5s %7s %7s %7s %4s %6s\n",
                       "policy", "peak", "mean", "/none", "gap", "extra%", "dead/u", "extra%",
                       "dead/u", "@s", "extra%", "refault", "reclaim", "rot", "watch");
                for (size_t i = 0; i < run->np; i++) {
                        const struct policy *p = &run->p[i];
                        struct window wd, wx;
                        char refaults[24] = "-", wdead[16] = "-", wat[16] = "-", wext[16] = "-";

                        if (has_refaults(p))
                                snprintf(refaults, sizeof(refaults), "%llu",
                                         (unsigned long long)p->age_stats.refaults);
                        worst_windows(run, p, &wd, &wx);
                        if (wd.valid) {
                                snprintf(wdead, sizeof(wdead), "%.3f", wd.dead_per_useful);
                                snprintf(wat, sizeof(wat), "%zu", wd.start_s);
                                snprintf(wext, sizeof(wext), "%.2f%%", wx.extra_pct);
                        }
                        printf("  %-19s %6llu %8.1f %6.3f %5.1f%% %5.2f%% %7.3f %5.2f%% %6s %5s "
                               "%7s %7s %7llu %4llu %6llu\n",
                               p->name, (unsigned long long)p->peak, mean(p->sum, run->steps),
                               ratio(p->dead_time, none->dead_time),
                               100.0 * gap_closed(run, p), extra_pct(p),
                               dead_per_useful(run, p), extra_pct_h(p), wdead, wat, wext,
                               refaults, (unsigned long long)p->reclaimed,
                               (unsigned long long)p->rotations,
                               (unsigned long long)p->watch_visits);
                }
                print_aging(run, cfg);
                print_ages(run);
                print_frontier(run);
                printf("  vs none: mean resident");
                for (size_t i = 1; i < run->np; i++)
                        printf(" %s %.3f", run->p[i].name,
                               ratio(run->p[i].sum, none->sum));
                printf("\n  above the oracle: mean resident");
                for (size_t i = 0; i + 1 < run->np; i++)
                        printf(" %s %+.1f", run->p[i].name,
                               mean(run->p[i].sum, run->steps) - mean(oracle->sum, run->steps));
                printf("\n");
                if (t->ndirs == 0)
                        continue;
                printf("  under a directory: negative children peak/mean, all children mean\n");
                for (size_t j = 0; j < t->ndirs; j++)
                        printf("  %c = %s\n", (int)('A' + j), t->dirs[j]);
                printf("  %-15s", "policy");
                for (size_t j = 0; j < t->ndirs; j++)
                        printf(" %18c", (int)('A' + j));
                printf("\n");
                for (size_t i = 0; i < run->np; i++) {
                        printf("  %-15s", run->p[i].name);
                        for (size_t j = 0; j < t->ndirs; j++) {
                                const struct dir_fig *df = &run->p[i].dirs[j];

                                printf(" %5llu/%-5.0f %6.0f", (unsigned long long)df->peak_negative,
                                       mean(df->sum_negative, run->steps),
                                       mean(df->sum_children, run->steps));
                        }
                        printf("\n");
                }
        }
        printf("\npeak/mean: resident dentries (root excepted) over the event steps;\n"
               "/none: dentries resident after their last use, summed over the steps, against "
               "none's (the whole trace);\ngap: share of none's such time above the oracle's "
               "that the policy removed; extra%%: component lookups that\nmissed only because "
               "the policy had dropped the dentry, of all (the whole trace);\n"
               "then, over trace time up to the horizon: dead/u: dead dentries held per useful "
               "one (one the oracle holds:\nused again later), time-averaged; extra%%: as "
               "above; and in the worst %u s window of each: its dead/u, where it starts (@s),\n"
               "and the worst window's extra%%; refault: dentries the framework saw re-created "
               "within its refault window;\nreclaim: dentries killed by the policy; rot: "
               "rotations; watch: children visited watching every cached directory at the "
               "end.\n", WINDOW_S);
}

static void json_string(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;

                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

/*
 * An aging row's refault figures: "refaults" (null without refault memory), the ages in force
 * at the end, the histogram; "target_met" with --target. Ends with a comma.
 */
static void json_aging(const struct run *run, const struct policy *p, const struct config *cfg)
{
        static const char *const names[_AGING_MAX] = {
                [AGING_FIXED] = "fixed", [AGING_REFAULT] = "refault", [AGING_AUTO] = "auto" };
        const struct ca_stats *s = &p->age_stats;

        if (p->kind != P_AGING) {
                printf("\"refaults\":null,");
                return;
        }
        printf("\"aging\":\"%s\",\"grid\":%s,\"single_use_age\":%u,\"max_age\":%u,",
               names[p->aging], p->grid ? "true" : "false",
               p->grid ? p->single_use_age : cfg->age.single_use_age,
               p->grid ? p->max_age : cfg->age.max_age);
        if (p->aging == AGING_AUTO && run->nall > run->np) {
                bool first = true;

                printf("\"dominated_by\":[");
                for (size_t g = run->np; g < run->nall; g++)
                        if (dominates(run, &run->p[g], p)) {
                                printf("%s\"%s\"", first ? "" : ",", run->p[g].name);
                                first = false;
                        }
                printf("],");
        }
        if (has_refaults(p)) {
                printf("\"refaults\":%llu,\"refault_histogram\":[",
                       (unsigned long long)s->refaults);
                for (unsigned b = 0; b < CA_REFAULT_BUCKETS; b++)
                        printf("%s{\"from_rotations\":%u,\"refaults\":%llu}", b ? "," : "",
                               ca_refault_bucket_floor(b),
                               (unsigned long long)p->refault_hist[b]);
                printf("],\"remembered\":%llu,\"refault_memory_bytes\":%llu,",
                       (unsigned long long)s->remembered,
                       (unsigned long long)s->refault_memory_bytes);
        } else {
                printf("\"refaults\":null,");
        }
        printf("\"single_use_age_final\":%llu,\"max_age_final\":%llu,\"own_aged\":%llu,",
               (unsigned long long)s->current_single_use_age,
               (unsigned long long)s->current_max_age,
               (unsigned long long)s->own_aged_objects);
        if (p->aging == AGING_AUTO) {
                /* the ages in force from each rotation that changed them (0: the start) */
                printf("\"ages\":[");
                for (size_t k = 0; k < p->nages; k++)
                        printf("%s{\"rotation\":%llu,\"t_s\":%.3f,\"single_use_age\":%u,"
                               "\"max_age\":%u}",
                               k ? "," : "", (unsigned long long)p->ages[k].rotation,
                               run->timed ? (double)p->ages[k].t_usec / 1e6
                                          : (double)p->ages[k].t_usec,
                               p->ages[k].single_use_age, p->ages[k].max_age);
                printf("],");
        }
        if (cfg->target_given)
                printf("\"target_met\":%s,", target_met(run, p, cfg) ? "true" : "false");
}

/* A window's figures, or null. */
static void json_window(const char *key, const struct window *w)
{
        printf("\"%s\":", key);
        if (!w->valid) {
                printf("null,");
                return;
        }
        printf("{\"start_s\":%zu,\"seconds\":%zu,\"dead_per_useful\":%.5f,"
               "\"extra_pct\":%.4f},",
               w->start_s, w->seconds, w->dead_per_useful, w->extra_pct);
}

/*
 * The figures over time, up to the horizon: dead per useful, the horizon (on every row, so
 * that a row reads alone), the extra misses, the worst windows. Ends with a comma.
 */
static void json_over_time(const struct run *run, const struct policy *p)
{
        struct window wd, wx;

        worst_windows(run, p, &wd, &wx);
        printf("\"dead_per_useful\":%.5f,\"horizon_s\":%.3f,\"extra_misses_h\":%llu,"
               "\"lookups_h\":%llu,\"extra_pct_h\":%.4f,",
               dead_per_useful(run, p), run->timed ? (double)run->horizon / 1e6 : 0.0,
               (unsigned long long)p->extra_h, (unsigned long long)p->lookups_h,
               extra_pct_h(p));
        json_window("worst_dead_window", &wd);
        json_window("worst_extra_window", &wx);
}

void print_json(const struct run *runs, size_t nruns, const struct config *cfg)
{
        printf("{\"bench\":\"replay\",\"loop\":%llu,\"single_use_age\":%u,\"max_age\":%u,"
               "\"refault_window\":%u,\"ages\":\"%s\",\"target_refault_ppm\":%u,"
               "\"controller\":\"%s\",",
               (unsigned long long)cfg->loop, cfg->age.single_use_age, cfg->age.max_age,
               cfg->age.refault_window, cfg->ages_auto ? "auto" : "fixed",
               cfg->age.target_refault_ppm, controller_name(cfg->age.auto_controller));
        if (cfg->target_given)
                printf("\"target_dead\":%.4f,\"target_extra_pct\":%.4f,", cfg->target_dead,
                       cfg->target_extra_pct);
        printf("\"ratio\":%u,\"traces\":[", cfg->ratio);
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                const struct trace *t = run->t;
                const struct policy *none = &run->p[0], *oracle = &run->p[run->np - 1];

                printf("%s{\"file\":", ri ? "," : "");
                json_string(stdout, t->file);
                printf(",\"events\":%zu,\"steps\":%llu,\"identities\":%zu,\"timestamps\":%s,"
                       "\"repetition_usec\":%llu,\"refused\":%llu,\"lines\":%llu,"
                       "\"seconds\":%.3f,\"exits_logged\":%llu,\"exits_added\":%llu,"
                       "\"round_s\":%.3f,\"end_s\":%.3f,\"horizon_s\":%.3f,"
                       "\"window_s\":%u,\"policies\":[",
                       t->nev, (unsigned long long)run->steps, t->ids.n - 1,
                       t->has_time ? "true" : "false",
                       (unsigned long long)run->span_usec, (unsigned long long)run->failed,
                       (unsigned long long)t->rstats.lines, run->seconds,
                       (unsigned long long)t->exits_logged, (unsigned long long)t->exits_added,
                       (double)t->round_usec / 1e6,
                       run->timed ? (double)run->t_end / 1e6 : 0.0,
                       run->timed ? (double)run->horizon / 1e6 : 0.0, WINDOW_S);
                for (size_t i = 0; i < run->nall; i++) {
                        const struct policy *p = &run->p[i];

                        printf("%s{\"name\":\"%s\",\"rotate_usec\":%llu,\"rotate_events\":%llu,"
                               "\"peak\":%llu,\"mean\":%.2f,\"peak_negative\":%llu,"
                               "\"mean_negative\":%.2f,\"peak_dead\":%llu,\"dead_time\":%.0Lf,"
                               "\"dead_vs_none\":%.4f,\"gap_closed\":%.4f,"
                               "\"mean_vs_none\":%.4f,\"mean_above_oracle\":%.2f,"
                               "\"lookups\":%llu,\"hits\":%llu,\"misses\":%llu,"
                               "\"extra_misses\":%llu,\"reclaimed\":%llu,\"rotations\":%llu,"
                               "\"watch_visits\":%llu,",
                               i ? "," : "", p->name, (unsigned long long)p->rotate_usec,
                               (unsigned long long)p->rotate_events,
                               (unsigned long long)p->peak, mean(p->sum, run->steps),
                               (unsigned long long)p->peak_negative,
                               mean(p->sum_negative, run->steps),
                               (unsigned long long)p->peak_dead, p->dead_time,
                               ratio(p->dead_time, none->dead_time), gap_closed(run, p),
                               ratio(p->sum, none->sum),
                               mean(p->sum, run->steps) - mean(oracle->sum, run->steps),
                               (unsigned long long)p->lookups, (unsigned long long)p->hits,
                               (unsigned long long)p->misses, (unsigned long long)p->extra,
                               (unsigned long long)p->reclaimed,
                               (unsigned long long)p->rotations,
                               (unsigned long long)p->watch_visits);
                        json_over_time(run, p);
                        json_aging(run, p, cfg);
                        printf("\"dirs\":[");
                        for (size_t j = 0; j < t->ndirs; j++) {
                                printf("%s{\"path\":", j ? "," : "");
                                json_string(stdout, t->dirs[j]);
                                printf(",\"peak_negative\":%llu,\"mean_negative\":%.2f,"
                                       "\"mean_children\":%.2f,\"final_negative\":%llu}",
                                       (unsigned long long)p->dirs[j].peak_negative,
                                       mean(p->dirs[j].sum_negative, run->steps),
                                       mean(p->dirs[j].sum_children, run->steps),
                                       (unsigned long long)p->dirs[j].final_negative);
                        }
                        printf("]}");
                }
                printf("]}");
        }
        printf("]}\n");
}

/* ------------------------------------------------------------------------------------------ */
/* the plot: resident dentries per step, one line per policy, one panel per trace */

static const char *svg_color(const struct run *run, size_t i)
{
        static const char *const aging[] = { "#0571b0", "#67a9cf", "#053061", "#92c5de" };
        size_t nth = 0;

        switch (run->p[i].kind) {
        case P_NONE:
                return "#555555";
        case P_TAIL:
                return "#999999";
        case P_CURSOR:
                return "#e66101";
        case P_COUNTED:
                return "#5e3c99";
        case P_ORACLE:
                return "#1a9641";
        case P_AGING:
        default:
                for (size_t j = 0; j < i; j++)
                        nth += run->p[j].kind == P_AGING;
                return aging[nth % (sizeof(aging) / sizeof(aging[0]))];
        }
}

/* A round tick step giving about @n ticks up to @max. */
static double nice_step(double max, int n)
{
        double raw = max / n, p = 1;

        if (raw <= 0)
                return 1;
        while (p * 10 <= raw)
                p *= 10;
        while (p > raw)
                p /= 10;
        if (raw / p >= 5)
                return 5 * p;
        if (raw / p >= 2)
                return 2 * p;
        return p;
}

static const char *basename_of(const char *path)
{
        const char *s = strrchr(path, '/');

        return s ? s + 1 : path;
}

static bool has_ages(const struct run *run)
{
        for (size_t i = 0; i < run->np; i++)
                if (run->p[i].kind == P_AGING && run->p[i].aging == AGING_AUTO && run->p[i].nages)
                        return true;
        return false;
}

/* The plot's own height: the legend, one line per row, may need more than SVG_PANEL. */
static int plot_height(const struct run *run)
{
        int legend = 30 + 18 * (int)run->np + 20;

        return legend > SVG_PANEL ? legend : SVG_PANEL;
}

static int panel_height(const struct run *run)
{
        return plot_height(run) + (has_ages(run) ? SVG_AGES : 0);
}

/*
 * Below a trace's panel: the ages each aging-auto row had in force, single-use (dashed) and
 * max, over the same event steps, as steps from one rotation's change to the next.
 */
static void svg_ages(FILE *f, const struct run *run, int y0, int left, int pw)
{
        const int top = 20, ph = SVG_AGES - top - 30;
        uint64_t steps = run->steps ? run->steps : 1;
        uint32_t ymax = 1;
        double ystep;

        for (size_t i = 0; i < run->np; i++)
                for (size_t k = 0; k < run->p[i].nages; k++)
                        if (run->p[i].ages[k].max_age > ymax)
                                ymax = run->p[i].ages[k].max_age;
        ystep = nice_step(ymax, 3);
        ymax = (uint32_t)(ystep * ((uint32_t)(ymax / ystep) + 1));
        fprintf(f, "<text x=\"%d\" y=\"%d\">ages in force (aging-auto, rotations): max, "
                   "single-use dashed</text>\n", left, y0 + top - 6);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                   "stroke=\"#333\"/>\n<g text-anchor=\"end\">\n",
                left, y0 + top, pw, ph);
        for (double v = 0; v <= ymax + 1e-9; v += ystep)
                fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.0f</text>\n", left - 6,
                        y0 + top + ph - v / ymax * ph + 4, v);
        fprintf(f, "</g>\n");
        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];

                if (p->kind != P_AGING || p->aging != AGING_AUTO || !p->nages)
                        continue;
                for (int which = 0; which < 2; which++) {
                        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s "
                                   "points=\"",
                                svg_color(run, i), which ? " stroke-dasharray=\"4 3\"" : "");
                        for (size_t k = 0; k < p->nages; k++) {
                                const struct age_point *a = &p->ages[k];
                                uint64_t end = k + 1 < p->nages ? p->ages[k + 1].step : steps;
                                double age = which ? a->single_use_age : a->max_age;
                                double y = y0 + top + ph - age / ymax * ph;

                                fprintf(f, "%.1f,%.1f %.1f,%.1f ",
                                        left + (double)a->step / (double)steps * pw, y,
                                        left + (double)end / (double)steps * pw, y);
                        }
                        fprintf(f, "\"/>\n");
                }
        }
}

int write_svg(const char *file, const struct run *runs, size_t nruns)
{
        const int left = 70, right = 170, top = 30, bottom = 40;
        const int pw = SVG_WIDTH - left - right, ph = SVG_PANEL - top - bottom;
        FILE *f = fopen(file, "we");
        int height = 0, y0 = 0;

        if (!f)
                return -errno;
        for (size_t ri = 0; ri < nruns; ri++)
                height += panel_height(&runs[ri]);
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                   "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                SVG_WIDTH, height, SVG_WIDTH, height);
        for (size_t ri = 0; ri < nruns; y0 += panel_height(&runs[ri]), ri++) {
                const struct run *run = &runs[ri];
                uint64_t ymax = 1, steps = run->steps ? run->steps : 1;
                double ystep, xstep;

                for (size_t i = 0; i < run->np; i++)
                        if (run->p[i].peak > ymax)
                                ymax = run->p[i].peak;
                ystep = nice_step((double)ymax, 5);
                ymax = (uint64_t)(ystep * ((uint64_t)((double)ymax / ystep) + 1));
                xstep = nice_step((double)steps, 6);

                fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\">", left, y0 + 20);
                fprintf(f, "%s%s: resident dentries per event step</text>\n",
                        basename_of(run->t->file), run->steps > run->t->nev ? " (looped)" : "");
                fprintf(f, "<g stroke=\"#ddd\">\n");
                for (double v = 0; v <= (double)ymax + 1e-9; v += ystep) {
                        double y = y0 + top + ph - v / (double)ymax * ph;

                        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", left,
                                y, left + pw, y);
                }
                fprintf(f, "</g>\n<g text-anchor=\"end\">\n");
                for (double v = 0; v <= (double)ymax + 1e-9; v += ystep)
                        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.0f</text>\n", left - 6,
                                y0 + top + ph - v / (double)ymax * ph + 4, v);
                fprintf(f, "</g>\n<g text-anchor=\"middle\">\n");
                for (double v = 0; v <= (double)steps + 1e-9; v += xstep)
                        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n",
                                left + v / (double)steps * pw, y0 + top + ph + 16, v);
                fprintf(f, "<text x=\"%d\" y=\"%d\">event step</text>\n</g>\n", left + pw / 2,
                        y0 + top + ph + 32);
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                           "stroke=\"#333\"/>\n",
                        left, y0 + top, pw, ph);
                for (size_t i = 0; i < run->np; i++) {
                        const struct policy *p = &run->p[i];
                        const char *color = svg_color(run, i);
                        /*
                         * Policies often keep the same dentries: each line is drawn thinner than
                         * the one before, so that one on top of another leaves it visible; and
                         * tail_negative, which keeps what none keeps, is dashed.
                         */
                        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s "
                                   "points=\"",
                                color, 1.5 + 3.0 * (double)(run->np - 1 - i) / (double)run->np,
                                p->kind == P_TAIL ? " stroke-dasharray=\"6 4\"" : "");
                        for (uint64_t b = 0; b * run->bucket < run->steps; b++) {
                                uint64_t end = (b + 1) * run->bucket;

                                if (end > run->steps)
                                        end = run->steps;
                                fprintf(f, "%.1f,%.1f ",
                                        left + (double)end / (double)steps * pw,
                                        y0 + top + ph - (double)p->series[b] / (double)ymax * ph);
                        }
                        fprintf(f, "\"/>\n");
                        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                                   "stroke-width=\"3\"%s/>\n",
                                left + pw + 12, y0 + top + 10 + (int)i * 18, left + pw + 36,
                                y0 + top + 10 + (int)i * 18, color,
                                p->kind == P_TAIL ? " stroke-dasharray=\"6 4\"" : "");
                        fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", left + pw + 42,
                                y0 + top + 14 + (int)i * 18, p->name);
                }
                if (has_ages(run))
                        svg_ages(f, run, y0 + plot_height(run), left, pw);
        }
        fprintf(f, "</svg>\n");
        if (ferror(f) | (fclose(f) != 0))
                return -EIO;
        return 0;
}

