/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The replay lab's report: the table, the JSON object and the plot of a run's figures. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "replay.h"

#define SVG_WIDTH 960                    /* px */
#define SVG_PANEL 300                    /* px per trace */

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

/* Whether @p meets --target: dead time at most that share of none's, extra misses at most. */
static bool target_met(const struct run *run, const struct policy *p, const struct config *cfg)
{
        return ratio(p->dead_time, run->p[0].dead_time) <= cfg->target_dead &&
               extra_pct(p) <= cfg->target_extra_pct;
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
        printf("  target: dead/none <= %.2f and extra <= %.2f%%:", cfg->target_dead,
               cfg->target_extra_pct);
        for (size_t i = 0; i < run->np; i++) {
                const struct policy *p = &run->p[i];

                if (p->kind == P_AGING)
                        printf(" %s %.3f %.2f%% %s", p->name,
                               ratio(p->dead_time, run->p[0].dead_time), extra_pct(p),
                               target_met(run, p, cfg) ? "met" : "MISSED");
        }
        printf("\n");
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

void print_human(const struct run *runs, size_t nruns, const struct config *cfg)
{
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                const struct trace *t = run->t;
                const struct policy *none = &run->p[0], *oracle = &run->p[run->np - 1];
                char clk[96];

                printf("%s%s: %zu events%s, %llu steps, %zu dentries named, timestamps: %s, "
                       "%llu refused by the model; replayed in %.2f s\n",
                       ri ? "\n" : "", t->file, t->nev,
                       cfg->loop > 1 ? " (looped)" : "", (unsigned long long)run->steps,
                       t->ids.n - 1, clock_desc(run, clk, sizeof(clk)),
                       (unsigned long long)run->failed, run->seconds);
                printf("  %-19s %7s %9s %7s %9s %12s %6s %6s %8s %7s %6s %7s %8s %5s %7s\n",
                       "policy", "peak", "mean", "peakneg", "meanneg", "dead(d*ev)", "/none",
                       "gap", "misses", "extra", "extra%", "refault", "reclaim", "rot",
                       "watch");
                for (size_t i = 0; i < run->np; i++) {
                        const struct policy *p = &run->p[i];
                        char refaults[24] = "-";

                        if (has_refaults(p))
                                snprintf(refaults, sizeof(refaults), "%llu",
                                         (unsigned long long)p->age_stats.refaults);
                        printf("  %-19s %7llu %9.1f %7llu %9.1f %12.0Lf %6.3f %5.1f%% %8llu "
                               "%7llu %5.2f%% %7s %8llu %5llu %7llu\n",
                               p->name, (unsigned long long)p->peak, mean(p->sum, run->steps),
                               (unsigned long long)p->peak_negative,
                               mean(p->sum_negative, run->steps), p->dead_time,
                               ratio(p->dead_time, none->dead_time),
                               100.0 * gap_closed(run, p), (unsigned long long)p->misses,
                               (unsigned long long)p->extra, extra_pct(p), refaults,
                               (unsigned long long)p->reclaimed,
                               (unsigned long long)p->rotations,
                               (unsigned long long)p->watch_visits);
                }
                print_aging(run, cfg);
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
        printf("\npeak/mean: resident dentries (root excepted) over the event steps; neg: "
               "negative ones;\ndead(d*ev): sum over steps of dentries resident after their "
               "last use; /none: against none;\ngap: share of none's dead time above the "
               "oracle's that the policy removed;\nmisses/extra: component lookups that "
               "missed / that hit under none; refault: dentries the framework saw re-created\n"
               "within its refault window; reclaim: dentries killed by the policy; rot: "
               "rotations;\nwatch: children visited watching every cached directory at the "
               "end.\n");
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
        printf("\"aging\":\"%s\",", names[p->aging]);
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
        if (cfg->target_given)
                printf("\"target_met\":%s,", target_met(run, p, cfg) ? "true" : "false");
}

void print_json(const struct run *runs, size_t nruns, const struct config *cfg)
{
        printf("{\"bench\":\"replay\",\"loop\":%llu,\"single_use_age\":%u,\"max_age\":%u,"
               "\"refault_window\":%u,\"ages\":\"%s\",\"target_refault_ppm\":%u,",
               (unsigned long long)cfg->loop, cfg->age.single_use_age, cfg->age.max_age,
               cfg->age.refault_window, cfg->ages_auto ? "auto" : "fixed",
               cfg->age.target_refault_ppm);
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
                       "\"seconds\":%.3f,\"policies\":[",
                       t->nev, (unsigned long long)run->steps, t->ids.n - 1,
                       t->has_time ? "true" : "false",
                       (unsigned long long)run->span_usec, (unsigned long long)run->failed,
                       (unsigned long long)t->rstats.lines, run->seconds);
                for (size_t i = 0; i < run->np; i++) {
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

int write_svg(const char *file, const struct run *runs, size_t nruns)
{
        const int left = 70, right = 170, top = 30, bottom = 40;
        const int pw = SVG_WIDTH - left - right, ph = SVG_PANEL - top - bottom;
        FILE *f = fopen(file, "we");

        if (!f)
                return -errno;
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
                   "viewBox=\"0 0 %d %zu\" font-family=\"sans-serif\" font-size=\"12\">\n"
                   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                SVG_WIDTH, nruns * SVG_PANEL, SVG_WIDTH, nruns * SVG_PANEL);
        for (size_t ri = 0; ri < nruns; ri++) {
                const struct run *run = &runs[ri];
                int y0 = (int)ri * SVG_PANEL;
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
        }
        fprintf(f, "</svg>\n");
        if (ferror(f) | (fclose(f) != 0))
                return -EIO;
        return 0;
}

