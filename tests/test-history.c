/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's history ring (daemon/history.c) and the metric names (daemon/metrics.c): the
 * bound, the order, counters per rotation and their reset, the columns from the library's table
 * and the adapter's first row, changes of length; the naming rules over the whole table.
 */

#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "history.h"
#include "metrics.h"

/* A library row whose every field is @base + its index, @rotations rotations in all. */
static struct ca_stats stats_at(uint64_t base)
{
        struct ca_stats st;
        uint64_t *v = (uint64_t *)&st;

        for (size_t i = 0; i < sizeof(st) / sizeof(uint64_t); i++)
                v[i] = base + i;
        return st;
}

static void emit(struct history *h, const char *name, enum ca_stat_kind kind, uint64_t value)
{
        history_add_adapter(h, &(const struct ca_adapter_stat){ .name = name, .kind = kind,
                                                                 .unit = "objects" },
                            value);
}

/* One rotation: the library's figures at @base, adapter "live" (gauge) and "made" (counter). */
static void record(struct history *h, uint64_t time, uint64_t base, uint64_t live, uint64_t made)
{
        struct ca_stats st = stats_at(base);

        cr_assert_eq(history_begin_row(h, time, &st), 0);
        emit(h, "live", CA_STAT_GAUGE, live);
        emit(h, "made", CA_STAT_COUNTER, made);
        cr_assert_eq(history_end_row(h), 0);
}

static size_t column(const struct history *h, const char *name)
{
        size_t n;
        const struct history_column *c = history_columns(h, &n);

        for (size_t i = 0; i < n; i++)
                if (strcmp(c[i].name, name) == 0)
                        return i;
        cr_assert_fail("no column %s", name);
        return 0;
}

Test(history, columns_from_the_table_then_the_adapter)
{
        struct history *h = history_new(4);
        const struct ca_stat_desc *d;
        const struct history_column *c;
        size_t n_descs, n;

        cr_assert(h);
        cr_expect_null(history_columns(h, &n));
        cr_expect_eq(n, 0);
        record(h, 100, 0, 5, 10);
        d = ca_stat_descs(&n_descs);
        c = history_columns(h, &n);
        cr_assert_eq(n, n_descs + 2);
        for (size_t i = 0; i < n_descs; i++) {
                cr_expect_str_eq(c[i].name, d[i].name);
                cr_expect_eq(c[i].kind, d[i].kind);
                cr_expect_str_eq(c[i].unit, d[i].unit);
        }
        cr_expect_str_eq(c[n_descs].name, "live");
        cr_expect_eq(c[n_descs + 1].kind, CA_STAT_COUNTER);
        /* the memory per row, as doc/operating.md and cacheaged.conf(5) state it */
        cr_expect_eq(history_bytes_per_row(h), 8 * (1 + n_descs + 2));
        history_free(h);
}

Test(history, the_last_rows_oldest_first)
{
        struct history *h = history_new(3);
        uint64_t t;

        for (uint64_t i = 1; i <= 7; i++)
                record(h, i * 1000, i * 100, i, i);
        cr_assert_eq(history_rows(h), 3);
        for (size_t i = 0; i < 3; i++) {
                const uint64_t *v = history_row(h, i, &t);

                cr_expect_eq(t, (5 + i) * 1000);
                cr_expect_eq(v[column(h, "objects")], (5 + i) * 100, "row %zu", i);
                cr_expect_eq(v[column(h, "live")], 5 + i);
        }
        history_free(h);
}

Test(history, counters_per_rotation_gauges_as_levels)
{
        struct history *h = history_new(10);
        struct ca_stats st;
        const uint64_t *v;
        uint64_t t;

        record(h, 1, 100, 7, 40);  /* the first row: counters since the start */
        record(h, 2, 130, 9, 45);
        v = history_row(h, 0, &t);
        cr_expect_eq(v[column(h, "reclaimed")], stats_at(100).reclaimed);
        v = history_row(h, 1, &t);
        cr_expect_eq(v[column(h, "reclaimed")], 30);
        cr_expect_eq(v[column(h, "rotations")], 30);
        cr_expect_eq(v[column(h, "objects")], stats_at(130).objects);
        cr_expect_eq(v[column(h, "made")], 5);
        cr_expect_eq(v[column(h, "live")], 9);

        /* ResetStatistics zeroes the library's counters, not the adapter's own */
        history_counters_reset(h);
        record(h, 3, 2, 9, 50);
        v = history_row(h, 2, &t);
        cr_expect_eq(v[column(h, "reclaimed")], stats_at(2).reclaimed);
        cr_expect_eq(v[column(h, "made")], 5);
        /* a counter that went down without a reset said so: all of it is this rotation's */
        st = stats_at(1);
        cr_assert_eq(history_begin_row(h, 4, &st), 0);
        emit(h, "made", CA_STAT_COUNTER, 3); /* out of order, "live" missing */
        emit(h, "new_one", CA_STAT_GAUGE, 99); /* not a column: left out */
        cr_assert_eq(history_end_row(h), 0);
        v = history_row(h, 3, &t);
        cr_expect_eq(v[column(h, "reclaimed")], stats_at(1).reclaimed);
        cr_expect_eq(v[column(h, "made")], 3);
        cr_expect_eq(v[column(h, "live")], 0);
        history_free(h);
}

Test(history, length_changes_keep_the_newest)
{
        struct history *h = history_new(5);
        uint64_t t;

        for (uint64_t i = 1; i <= 5; i++)
                record(h, i, i, 0, 0);
        cr_assert_eq(history_set_capacity(h, 2), 0);
        cr_assert_eq(history_rows(h), 2);
        history_row(h, 0, &t);
        cr_expect_eq(t, 4);
        cr_assert_eq(history_set_capacity(h, 6), 0);
        cr_expect_eq(history_rows(h), 2);
        for (uint64_t i = 6; i <= 12; i++)
                record(h, i, i, 0, 0);
        cr_assert_eq(history_rows(h), 6);
        history_row(h, 0, &t);
        cr_expect_eq(t, 7);
        history_row(h, 5, &t);
        cr_expect_eq(t, 12);
        /* 0 keeps nothing and records nothing; a length again starts empty */
        cr_assert_eq(history_set_capacity(h, 0), 0);
        record(h, 13, 13, 0, 0);
        cr_expect_eq(history_rows(h), 0);
        cr_assert_eq(history_set_capacity(h, 3), 0);
        record(h, 14, 14, 0, 0);
        cr_assert_eq(history_rows(h), 1);
        history_row(h, 0, &t);
        cr_expect_eq(t, 14);
        history_free(h);
}

/*
 * The ring's memory has a bound whatever history_rotations says: 100,000 rotations of a row
 * with 128 adapter statistics would be 120 MB a cache; HISTORY_BYTES_MAX holds fewer rows.
 * The host passes no more than CA_ADAPTER_STATS_MAX statistics, and a row holds no more.
 */
Test(history, memory_bounded)
{
        struct history *h = history_new(100000), *small = history_new(1000);
        struct ca_stats st = stats_at(1);
        size_t n_descs, n;

        (void)ca_stat_descs(&n_descs);
        cr_assert_eq(history_begin_row(h, 1, &st), 0);
        for (int i = 0; i < CA_ADAPTER_STATS_MAX + 10; i++) {
                char name[32];

                snprintf(name, sizeof(name), "s%d", i);
                emit(h, name, CA_STAT_COUNTER, (uint64_t)i);
        }
        cr_assert_eq(history_end_row(h), 0);
        history_columns(h, &n);
        cr_expect_eq(n, n_descs + CA_ADAPTER_STATS_MAX);
        cr_expect_eq(history_bytes_per_row(h), 8 * (1 + n_descs + CA_ADAPTER_STATS_MAX));
        cr_expect_eq(history_capacity(h), HISTORY_BYTES_MAX / history_bytes_per_row(h));
        cr_expect_lt(history_capacity(h), 100000);
        cr_expect_leq(history_capacity(h) * history_bytes_per_row(h), HISTORY_BYTES_MAX);
        /* Within the bound a length is what was asked; over it, the bound again. */
        cr_assert_eq(history_set_capacity(h, 50), 0);
        cr_expect_eq(history_capacity(h), 50);
        cr_assert_eq(history_set_capacity(h, 100000), 0);
        cr_expect_eq(history_capacity(h), HISTORY_BYTES_MAX / history_bytes_per_row(h));
        /* The default is far within it. */
        record(small, 1, 1, 1, 1);
        cr_expect_eq(history_capacity(small), 1000);
        history_free(h);
        history_free(small);
}

/* Rows keep their numbers while held: a reader goes on where it stopped (GetHistoryPage). */
Test(history, row_numbers)
{
        struct history *h = history_new(3), *other = history_new(3);

        cr_expect_eq(history_first_seq(h), 1);
        for (uint64_t i = 1; i <= 3; i++)
                record(h, i, i, 0, 0);
        cr_expect_eq(history_first_seq(h), 1);
        record(h, 4, 4, 0, 0);
        record(h, 5, 5, 0, 0);
        cr_expect_eq(history_first_seq(h), 3, "rows 1 and 2 left the ring");
        cr_assert_eq(history_set_capacity(h, 1), 0);
        cr_expect_eq(history_first_seq(h), 5, "the newest row is kept with its number");
        cr_expect_neq(history_id(h), history_id(other));
        history_free(h);
        history_free(other);
}

Test(history, none_at_all)
{
        struct history *h = history_new(0);

        record(h, 1, 1, 1, 1);
        cr_expect_eq(history_rows(h), 0);
        cr_expect_null(history_free(h));
        cr_expect_null(history_free(NULL));
}

Test(metrics, names_follow_the_rules)
{
        static const struct {
                const char *prefix, *name, *unit;
                enum ca_stat_kind kind;
                const char *want;
                uint64_t divisor;
        } cases[] = {
                { "cacheage_", "reclaimed", "objects", CA_STAT_COUNTER, "cacheage_reclaimed_total", 1 },
                { "cacheage_", "objects", "objects", CA_STAT_GAUGE, "cacheage_objects", 1 },
                { "cacheage_", "bytes", "bytes", CA_STAT_GAUGE, "cacheage_bytes", 1 },
                { "cacheage_", "memory", "bytes", CA_STAT_GAUGE, "cacheage_memory_bytes", 1 },
                { "cacheage_", "last_rotation_usec", "timestamp_usec", CA_STAT_GAUGE,
                  "cacheage_last_rotation_timestamp_seconds", 1000000 },
                { "cacheage_", "last_rotation_duration_usec", "usec", CA_STAT_GAUGE,
                  "cacheage_last_rotation_duration_seconds", 1000000 },
                { "cacheage_", "wait_usec", "usec", CA_STAT_COUNTER,
                  "cacheage_wait_seconds_total", 1000000 },
                { "cacheage_", "share_ppm", "ppm", CA_STAT_GAUGE, "cacheage_share_ratio", 1000000 },
                { "cacheage_kernel_", "age_limit", "seconds", CA_STAT_GAUGE,
                  "cacheage_kernel_age_limit_seconds", 1 },
                { "cacheage_my-adapter_", "hits", NULL, CA_STAT_COUNTER,
                  "cacheage_my_adapter_hits_total", 1 },
                { "cacheage_x_", "errors_total", "", CA_STAT_COUNTER, "cacheage_x_errors_total", 1 },
        };
        char buf[METRICS_NAME_MAX];
        uint64_t div;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                cr_expect_str_eq(metrics_name(cases[i].prefix, cases[i].name, cases[i].kind,
                                              cases[i].unit, buf, &div),
                                 cases[i].want);
                cr_expect_eq(div, cases[i].divisor, "%s", cases[i].want);
        }
}

/* Every statistic of the library: a valid name, its own, no unit left that is not a base one. */
Test(metrics, every_statistic_of_the_table_gets_its_own_name)
{
        const struct ca_stat_desc *d;
        char names[64][METRICS_NAME_MAX];
        size_t n;
        uint64_t div;
        regex_t re;

        cr_assert_eq(regcomp(&re, "^[a-zA-Z_:][a-zA-Z0-9_:]*$", REG_EXTENDED | REG_NOSUB), 0);
        d = ca_stat_descs(&n);
        cr_assert(n <= 64);
        for (size_t i = 0; i < n; i++) {
                metrics_name("cacheage_", d[i].name, d[i].kind, d[i].unit, names[i], &div);
                cr_expect_eq(regexec(&re, names[i], 0, NULL, 0), 0, "%s", names[i]);
                cr_expect_null(strstr(names[i], "usec"), "%s", names[i]);
                cr_expect_null(strstr(names[i], "ppm"), "%s", names[i]);
                cr_expect_eq(d[i].kind == CA_STAT_COUNTER,
                             strcmp(names[i] + strlen(names[i]) - 6, "_total") == 0, "%s",
                             names[i]);
                for (size_t j = 0; j < i; j++)
                        cr_expect_str_neq(names[i], names[j]);
        }
        regfree(&re);
}
