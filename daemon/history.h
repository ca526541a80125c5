/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A cache's history: its last N rotations, one row each, in a ring allocated once (N rows of
 * 8 * (1 + columns) bytes: the time, then one value per column). The columns are every
 * statistic of the library (ca_stat_descs(), in its order), then the adapter's own (as its
 * stats hook emits them at the first row): nothing here names a statistic. A gauge's value is
 * its level after the rotation; a counter's is what the rotation added to it.
 */

#include <stddef.h>
#include <stdint.h>

#include "cacheage/age.h"
#include "cacheage/plugin.h"

struct history;

/*
 * A ring's memory, at most: history_rotations rows of 8 * (1 + columns) bytes, fewer rows when
 * that is over (95,325 rows of the library's 21 statistics alone; 13,981 with the 128 an
 * adapter may add, CA_ADAPTER_STATS_MAX).
 */
#define HISTORY_BYTES_MAX (16 * 1024 * 1024)

/* One column: a statistic. The strings live as long as the history. */
struct history_column {
        const char *name; /* snake_case: the library's or the adapter's name */
        enum ca_stat_kind kind;
        const char *unit; /* "" when the adapter gave none */
        const char *help;
};

/*
 * history_new() - an empty history of @capacity rows (0: records nothing), within
 * HISTORY_BYTES_MAX once the first row says how wide a row is. NULL: no memory.
 */
struct history *history_new(size_t capacity);
struct history *history_free(struct history *h);

/*
 * history_set_capacity() - keep @capacity rows from now on (within HISTORY_BYTES_MAX); the
 * newest rows are kept. Returns 0 or -ENOMEM (and nothing changes).
 */
int history_set_capacity(struct history *h, size_t capacity);

/* history_capacity() - the rows it holds at most: what was asked, within HISTORY_BYTES_MAX. */
size_t history_capacity(const struct history *h);

/*
 * history_first_seq() - the number of row 0 (the oldest held): rows are numbered from 1 in the
 * order recorded, and keep their number while they are held (row i is number first + i), so a
 * reader can go on from where it stopped (GetHistoryPage).
 */
uint64_t history_first_seq(const struct history *h);

/* history_id() - a number that tells this history from the others of the process (it wraps). */
uint16_t history_id(const struct history *h);

/* history_bytes_per_row() - what one row costs: 8 * (1 + columns), once the columns are known. */
size_t history_bytes_per_row(const struct history *h);

/*
 * history_begin_row() / history_add_adapter() / history_end_row() - record one rotation:
 * @stats after it, at @time_usec (CLOCK_REALTIME), then each adapter statistic (emit-shaped,
 * so that it can be a stats hook's emit callback), then the end. The first row fixes the
 * columns; an adapter statistic not among them later is left out, a missing one reads 0.
 * Returns 0 or -ENOMEM (from the first row only: nothing is recorded then).
 */
int history_begin_row(struct history *h, uint64_t time_usec, const struct ca_stats *stats);
void history_add_adapter(void *history, const struct ca_adapter_stat *stat, uint64_t value);
int history_end_row(struct history *h);

/*
 * history_counters_reset() - the library's counters were zeroed (ResetStatistics): the next
 * row counts from zero.
 */
void history_counters_reset(struct history *h);

/* history_columns() - the columns (NULL and 0 before the first row). */
const struct history_column *history_columns(const struct history *h, size_t *ret_n);

/* history_rows() - rows held, oldest first: row i is history_row(h, i). */
size_t history_rows(const struct history *h);
/* history_row() - the time of row @i and its values, one per column. */
const uint64_t *history_row(const struct history *h, size_t i, uint64_t *ret_time_usec);
