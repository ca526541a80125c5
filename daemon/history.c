/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ring of a cache's last rotations (history.h). The ring is allocated whole when the first
 * row fixes the columns, so its memory is known from then on (and stated in cacheaged.conf(5)):
 * capacity * 8 * (1 + columns) bytes, at most HISTORY_BYTES_MAX, nothing per row after that.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

struct history {
        size_t requested; /* rows asked for (history_rotations) */
        size_t capacity;  /* rows held at most: requested, within HISTORY_BYTES_MAX */
        uint64_t first_seq; /* the number of the oldest row held: rows count from 1 */
        uint16_t id;        /* tells this history from one made before or after it */
        struct history_column *cols;
        size_t n_cols, n_lib; /* columns; the first n_lib are the library's */
        bool have_cols;

        uint64_t *ring; /* capacity rows of 1 + n_cols values: time, then the columns */
        size_t head;    /* the oldest row */
        size_t n;       /* rows held */

        uint64_t *cur;  /* the row being recorded: cumulative values */
        uint64_t *prev; /* the last recorded row's cumulative values, for the counters */
        bool have_prev;
        uint64_t time_usec;
        size_t next_adapter; /* where the next adapter statistic is expected (same order) */
        bool recording;
};

struct history *history_new(size_t capacity)
{
        static uint16_t last_id;
        struct history *h = calloc(1, sizeof(*h));

        if (h) {
                h->requested = h->capacity = capacity;
                h->first_seq = 1;
                h->id = ++last_id;
        }
        return h;
}

static void columns_free(struct history *h)
{
        for (size_t i = h->n_lib; i < h->n_cols; i++) {
                free((char *)h->cols[i].name);
                free((char *)h->cols[i].unit);
                free((char *)h->cols[i].help);
        }
        free(h->cols);
        h->cols = NULL;
        h->n_cols = h->n_lib = 0;
        h->have_cols = false;
}

struct history *history_free(struct history *h)
{
        if (!h)
                return NULL;
        columns_free(h);
        free(h->ring);
        free(h->cur);
        free(h->prev);
        free(h);
        return NULL;
}

static size_t row_width(const struct history *h)
{
        return 1 + h->n_cols;
}

size_t history_bytes_per_row(const struct history *h)
{
        return row_width(h) * sizeof(uint64_t);
}

/* The rows of @requested that fit in HISTORY_BYTES_MAX at @width values a row (at least 1). */
static size_t capacity_within_bound(size_t requested, size_t width)
{
        size_t most = HISTORY_BYTES_MAX / (width * sizeof(uint64_t));

        return requested < most ? requested : most > 0 ? most : 1;
}

size_t history_capacity(const struct history *h)
{
        return h->capacity;
}

uint64_t history_first_seq(const struct history *h)
{
        return h->first_seq;
}

uint16_t history_id(const struct history *h)
{
        return h->id;
}

int history_set_capacity(struct history *h, size_t requested)
{
        size_t w = row_width(h);
        size_t capacity = h->have_cols && requested > 0 ? capacity_within_bound(requested, w)
                                                        : requested;
        size_t keep = h->n < capacity ? h->n : capacity;
        uint64_t *ring = NULL;

        if (capacity == h->capacity) {
                h->requested = requested;
                return 0;
        }
        if (h->have_cols && capacity > 0) {
                ring = calloc(capacity * w, sizeof(uint64_t));
                if (!ring)
                        return -ENOMEM;
                /* The newest rows, oldest first, at the start of the new ring. */
                for (size_t i = 0; i < keep; i++)
                        memcpy(&ring[i * w], &h->ring[((h->head + h->n - keep + i) % h->capacity) * w],
                               w * sizeof(uint64_t));
        }
        free(h->ring);
        h->first_seq += h->n - (ring ? keep : 0);
        h->ring = ring;
        h->requested = requested;
        h->capacity = capacity;
        h->head = 0;
        h->n = ring ? keep : 0;
        return 0;
}

/* The library's columns: straight from its table, the same strings. */
static int columns_begin(struct history *h)
{
        const struct ca_stat_desc *d;
        size_t n;

        d = ca_stat_descs(&n);
        h->cols = calloc(n, sizeof(*h->cols));
        h->cur = calloc(n, sizeof(uint64_t));
        if (!h->cols || !h->cur)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                h->cols[i] = (struct history_column){ .name = d[i].name, .kind = d[i].kind,
                                                      .unit = d[i].unit, .help = d[i].help };
        h->n_cols = h->n_lib = n;
        return 0;
}

int history_begin_row(struct history *h, uint64_t time_usec, const struct ca_stats *stats)
{
        const struct ca_stat_desc *d;
        size_t n;
        int r;

        h->recording = false;
        if (h->capacity == 0)
                return 0;
        if (!h->have_cols && !h->cols) {
                r = columns_begin(h);
                if (r < 0) {
                        columns_free(h);
                        return r;
                }
        }
        d = ca_stat_descs(&n);
        for (size_t i = 0; i < n && i < h->n_lib; i++)
                h->cur[i] = ca_stat_value(stats, &d[i]);
        for (size_t i = h->n_lib; i < h->n_cols; i++)
                h->cur[i] = 0;
        h->time_usec = time_usec;
        h->next_adapter = h->n_lib;
        h->recording = true;
        return 0;
}

/* The first row: a new column, its strings copied. -ENOMEM leaves the row unrecorded. */
static int column_add(struct history *h, const struct ca_adapter_stat *stat, uint64_t value)
{
        struct history_column *cols;
        uint64_t *cur;
        char *name, *unit, *help;

        cols = realloc(h->cols, (h->n_cols + 1) * sizeof(*cols));
        if (!cols)
                return -ENOMEM;
        h->cols = cols;
        cur = realloc(h->cur, (h->n_cols + 1) * sizeof(*cur));
        if (!cur)
                return -ENOMEM;
        h->cur = cur;
        name = strdup(stat->name);
        unit = strdup(stat->unit ? stat->unit : "");
        help = strdup(stat->help ? stat->help : "");
        if (!name || !unit || !help) {
                free(name);
                free(unit);
                free(help);
                return -ENOMEM;
        }
        h->cols[h->n_cols] = (struct history_column){ .name = name, .kind = stat->kind,
                                                      .unit = unit, .help = help };
        h->cur[h->n_cols++] = value;
        return 0;
}

void history_add_adapter(void *userdata, const struct ca_adapter_stat *stat, uint64_t value)
{
        struct history *h = userdata;

        if (!h->recording)
                return;
        if (!h->have_cols) {
                /* The host passes at most CA_ADAPTER_STATS_MAX; a row holds no more. */
                if (h->n_cols - h->n_lib >= CA_ADAPTER_STATS_MAX)
                        return;
                if (column_add(h, stat, value) < 0)
                        h->recording = false; /* history_end_row() says -ENOMEM */
                return;
        }
        /* The hook emits the same statistics in the same order: look there first. */
        for (size_t k = 0; k < h->n_cols - h->n_lib; k++) {
                size_t i = h->n_lib + (h->next_adapter - h->n_lib + k) % (h->n_cols - h->n_lib);

                if (strcmp(h->cols[i].name, stat->name) == 0) {
                        h->cur[i] = value;
                        h->next_adapter = i + 1 < h->n_cols ? i + 1 : h->n_lib;
                        return;
                }
        }
}

int history_end_row(struct history *h)
{
        size_t w;
        uint64_t *row;

        if (h->capacity == 0)
                return 0;
        if (!h->recording) {
                if (!h->have_cols)
                        columns_free(h); /* a first row that ran out of memory */
                return -ENOMEM;
        }
        h->recording = false;
        if (!h->have_cols) {
                w = 1 + h->n_cols;
                /* Now that a row's width is known: within the bound. */
                h->capacity = capacity_within_bound(h->requested, w);
                h->ring = calloc(h->capacity * w, sizeof(uint64_t));
                h->prev = calloc(h->n_cols, sizeof(uint64_t));
                if (!h->ring || !h->prev) {
                        free(h->ring);
                        free(h->prev);
                        h->ring = h->prev = NULL;
                        columns_free(h);
                        return -ENOMEM;
                }
                h->have_cols = true;
        }
        w = row_width(h);
        if (h->n == h->capacity) {
                row = &h->ring[h->head * w];
                h->head = (h->head + 1) % h->capacity;
                h->first_seq++;
        } else {
                row = &h->ring[((h->head + h->n) % h->capacity) * w];
                h->n++;
        }
        row[0] = h->time_usec;
        for (size_t i = 0; i < h->n_cols; i++) {
                uint64_t v = h->cur[i];

                /* A counter below its last value was reset: all of it is this rotation's. */
                if (h->cols[i].kind == CA_STAT_COUNTER && h->have_prev && v >= h->prev[i])
                        v -= h->prev[i];
                row[1 + i] = v;
                h->prev[i] = h->cur[i];
        }
        h->have_prev = true;
        return 0;
}

void history_counters_reset(struct history *h)
{
        if (!h->prev)
                return;
        for (size_t i = 0; i < h->n_lib; i++)
                h->prev[i] = 0;
}

const struct history_column *history_columns(const struct history *h, size_t *ret_n)
{
        *ret_n = h->have_cols ? h->n_cols : 0;
        return h->have_cols ? h->cols : NULL;
}

size_t history_rows(const struct history *h)
{
        return h->n;
}

const uint64_t *history_row(const struct history *h, size_t i, uint64_t *ret_time_usec)
{
        const uint64_t *row = &h->ring[((h->head + i) % h->capacity) * row_width(h)];

        *ret_time_usec = row[0];
        return row + 1;
}
