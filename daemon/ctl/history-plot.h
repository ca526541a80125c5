/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pictures of a cache's history for cacheagectl: a chart drawn in the terminal with block
 * characters, and a self-contained SVG plot (no script, no external font or style), one panel
 * per series over a shared time axis.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct plot_series {
        const char *title;      /* "objects", "reclaimed per rotation" */
        const uint64_t *values; /* one per rotation */
        bool bars;              /* SVG: a bar per rotation (per-rotation counts), else a line */
};

/*
 * plot_terminal() - each series as a block chart @height rows high and at most @width columns
 * wide (rotations beyond that share a column, which shows their largest value), with its
 * scale, under a line naming it; then the time axis (@time_usec: CLOCK_REALTIME per rotation).
 */
void plot_terminal(FILE *f, const uint64_t *time_usec, size_t n, const struct plot_series *s,
                   size_t n_series, unsigned width, unsigned height);

/*
 * plot_svg() - an SVG document: @title, then one panel per series with its y axis (ticks at
 * round numbers), and the x axis in seconds since the first rotation. Returns 0, or -EIO
 * when writing failed, -EINVAL with no rotation.
 */
int plot_svg(FILE *f, const char *title, const uint64_t *time_usec, size_t n,
             const struct plot_series *s, size_t n_series);
