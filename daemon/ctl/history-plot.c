/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The history's pictures (history-plot.h): no library, so that cacheagectl needs none. */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history-plot.h"

#define LABEL_COLS 10 /* the scale's width, left of the chart */

static uint64_t max_of(const uint64_t *v, size_t n)
{
        uint64_t m = 0;

        for (size_t i = 0; i < n; i++)
                if (v[i] > m)
                        m = v[i];
        return m;
}

static void clock_time(uint64_t usec, char *buf, size_t len)
{
        time_t t = (time_t)(usec / 1000000);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, len, "%H:%M:%S", &tm) == 0)
                snprintf(buf, len, "?");
}

void plot_terminal(FILE *f, const uint64_t *time_usec, size_t n, const struct plot_series *s,
                   size_t n_series, unsigned width, unsigned height)
{
        /* Eighths of a cell, bottom up: U+2581..U+2588. */
        static const char *const eighths[] = { " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
        size_t cols, per_col;
        char a[32], b[32];

        if (n == 0 || width <= LABEL_COLS + 2 || height == 0)
                return;
        cols = width - LABEL_COLS - 2;
        per_col = (n + cols - 1) / cols;
        cols = (n + per_col - 1) / per_col;
        for (size_t k = 0; k < n_series; k++) {
                uint64_t top = max_of(s[k].values, n);

                fprintf(f, "%s%s", k ? "\n" : "", s[k].title);
                if (per_col > 1)
                        fprintf(f, " (largest of %zu rotations per column)", per_col);
                fputc('\n', f);
                for (unsigned row = height; row > 0; row--) {
                        if (row == height)
                                fprintf(f, "%*" PRIu64 " ┤", LABEL_COLS, top);
                        else
                                fprintf(f, "%*s │", LABEL_COLS, "");
                        for (size_t c = 0; c < cols; c++) {
                                uint64_t v = 0;
                                uint64_t level;

                                for (size_t i = c * per_col; i < n && i < (c + 1) * per_col; i++)
                                        if (s[k].values[i] > v)
                                                v = s[k].values[i];
                                /* eighths of the whole chart's height, rounded up: any value shows */
                                level = top ? (v * height * 8 + top - 1) / top : 0;
                                if (level >= (uint64_t)row * 8)
                                        fputs(eighths[8], f);
                                else if (level > (uint64_t)(row - 1) * 8)
                                        fputs(eighths[level - (uint64_t)(row - 1) * 8], f);
                                else
                                        fputc(' ', f);
                        }
                        fputc('\n', f);
                }
                fprintf(f, "%*d ┼", LABEL_COLS, 0);
                for (size_t c = 0; c < cols; c++)
                        fputs("─", f);
                fputc('\n', f);
        }
        clock_time(time_usec[0], a, sizeof(a));
        clock_time(time_usec[n - 1], b, sizeof(b));
        fprintf(f, "%*s %-*s%s\n", LABEL_COLS, "", (int)(cols > strlen(b) ? cols - strlen(b) : 1),
                a, b);
        fprintf(f, "%*s %zu rotation%s\n", LABEL_COLS, "", n, n == 1 ? "" : "s");
}

/* A round step for about @ticks intervals over 0..@max: 1, 2 or 5 times a power of ten. */
static double nice_step(double max, unsigned ticks)
{
        double raw = max / ticks, p = 1;

        if (raw <= 0)
                return 1;
        while (p * 10 <= raw)
                p *= 10;
        while (p > raw)
                p /= 10;
        if (raw <= p)
                return p;
        if (raw <= 2 * p)
                return 2 * p;
        if (raw <= 5 * p)
                return 5 * p;
        return 10 * p;
}

/* An axis label: "12", "1.5k", "2M". */
static void tick_label(double v, char *buf, size_t len)
{
        if (v >= 1e6)
                snprintf(buf, len, "%gM", v / 1e6);
        else if (v >= 1e4)
                snprintf(buf, len, "%gk", v / 1e3);
        else
                snprintf(buf, len, "%g", v);
}

/* SVG text: the few characters XML gives a meaning. */
static void put_text(FILE *f, const char *s)
{
        for (; *s; s++) {
                if (*s == '<')
                        fputs("&lt;", f);
                else if (*s == '>')
                        fputs("&gt;", f);
                else if (*s == '&')
                        fputs("&amp;", f);
                else
                        fputc(*s, f);
        }
}

#define SVG_W 800
#define SVG_LEFT 70
#define SVG_RIGHT 20
#define SVG_TOP 64
#define SVG_PAD 12 /* px between the y axis and the first rotation, and after the last */
#define SVG_PANEL_H 170
#define SVG_GAP 50
#define SVG_BOTTOM 50

int plot_svg(FILE *f, const char *title, const uint64_t *time_usec, size_t n,
             const struct plot_series *s, size_t n_series)
{
        static const char *const colours[] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd" };
        double span_s, xstep, pw = SVG_W - SVG_LEFT - SVG_RIGHT, xw = pw - 2 * SVG_PAD;
        unsigned h = SVG_TOP + (unsigned)n_series * (SVG_PANEL_H + SVG_GAP) - SVG_GAP + SVG_BOTTOM;

        if (n == 0)
                return -EINVAL;
        span_s = (double)(time_usec[n - 1] - time_usec[0]) / 1e6;
        if (span_s <= 0)
                span_s = 1;
        xstep = nice_step(span_s, 8);
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%u\" "
                   "viewBox=\"0 0 %d %u\" font-family=\"sans-serif\" font-size=\"12\">\n"
                   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                   "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">",
                SVG_W, h, SVG_W, h, SVG_LEFT);
        put_text(f, title);
        fputs("</text>\n", f);
        for (size_t k = 0; k < n_series; k++) {
                double top = (double)max_of(s[k].values, n), ystep, ymax;
                double y0 = SVG_TOP + (double)k * (SVG_PANEL_H + SVG_GAP) + SVG_PANEL_H;
                const char *colour = colours[k % (sizeof(colours) / sizeof(colours[0]))];
                char label[32];

                ystep = nice_step(top > 0 ? top : 1, 4);
                ymax = ystep * (double)(uint64_t)((top > 0 ? top : 1) / ystep + 0.999999);
                fprintf(f, "<g>\n<text x=\"%d\" y=\"%.1f\" font-weight=\"bold\" fill=\"%s\">",
                        SVG_LEFT, y0 - SVG_PANEL_H - 6, colour);
                put_text(f, s[k].title);
                fputs("</text>\n", f);
                /* y grid and ticks */
                for (double v = 0; v <= ymax + ystep / 2; v += ystep) {
                        double y = y0 - v / ymax * SVG_PANEL_H;

                        tick_label(v, label, sizeof(label));
                        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                   "stroke=\"#dddddd\"/>\n"
                                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                                SVG_LEFT, y, SVG_LEFT + pw, y, SVG_LEFT - 6, y + 4, label);
                }
                /* x ticks: seconds since the first rotation */
                for (double t = 0; t <= span_s + xstep / 1000; t += xstep) {
                        double x = SVG_LEFT + SVG_PAD + t / span_s * xw;

                        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                   "stroke=\"black\"/>\n"
                                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                                x, y0, x, y0 + 5, x, y0 + 18, t);
                }
                if (s[k].bars) {
                        double bw = n > 1 ? xw / (double)n * 0.8 : 4;

                        if (bw > 2 * SVG_PAD - 2) /* within the padding at either end */
                                bw = 2 * SVG_PAD - 2;
                        if (bw < 1)
                                bw = 1;
                        for (size_t i = 0; i < n; i++) {
                                double x = SVG_LEFT + SVG_PAD +
                                           (double)(time_usec[i] - time_usec[0]) / 1e6 /
                                                   span_s * xw;
                                double bh = (double)s[k].values[i] / ymax * SVG_PANEL_H;

                                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                           "height=\"%.1f\" fill=\"%s\"/>\n",
                                        x - bw / 2, y0 - bh, bw, bh, colour);
                        }
                } else {
                        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                                   "points=\"", colour);
                        for (size_t i = 0; i < n; i++)
                                fprintf(f, "%s%.1f,%.1f", i ? " " : "",
                                        SVG_LEFT + SVG_PAD +
                                                (double)(time_usec[i] - time_usec[0]) / 1e6 /
                                                        span_s * xw,
                                        y0 - (double)s[k].values[i] / ymax * SVG_PANEL_H);
                        fputs("\"/>\n", f);
                }
                /* the axes themselves, over the grid */
                fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n"
                           "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
                           "</g>\n",
                        SVG_LEFT, y0 - SVG_PANEL_H, SVG_LEFT, y0, SVG_LEFT, y0, SVG_LEFT + pw, y0);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%u\" text-anchor=\"middle\">seconds since the first "
                   "rotation shown (%zu rotations)</text>\n</svg>\n",
                SVG_LEFT + pw / 2, h - 12, n);
        return ferror(f) ? -EIO : 0;
}
