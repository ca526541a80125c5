/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the value parsers of cacheage/value.h, which read the configuration
 * and cacheagectl's "set NAME KEY=VALUE" arguments: ca_parse_duration(), ca_format_duration(),
 * ca_parse_uint(), ca_parse_bool(), ca_parse_decimal(), ca_parse_percent().
 *
 * The input (up to its first NUL) is the string. Checked, besides what the sanitizers catch:
 *   - every parser returns one of its documented values and writes its output only on
 *     success;
 *   - format(parse(s)) parses back to the same value, and so does format(v) for the first
 *     8 input bytes taken as any uint64 v: the formatter never truncates and its form is
 *     canonical (formatting what it parsed gives the same text);
 *   - ca_parse_uint() agrees with a reference built on strtoull() for a set of ranges;
 *   - ca_parse_bool() ignores case, as documented;
 *   - ca_parse_decimal() takes digits with at most one inner '.', within its range, and
 *     agrees with strtod() on what it takes; ca_parse_percent() is the same within 0..100
 *     with an optional '%'.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheage/value.h"
#include "cacheage/age.h" /* CA_AGE_MAX */

#define SENTINEL 0xA5A5A5A5A5A5A5A5ULL
#define FUZZ_STRING_MAX 4096 /* bytes; longer inputs are cut, a config line is shorter */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *s)
{
        fprintf(stderr, "fuzz-duration: %s (input \"%s\")\n", what, s);
        abort();
}

static bool only_chars(const char *s, const char *chars)
{
        return s[strspn(s, chars)] == '\0';
}

/* format(v) must read back as v, and format its own reading identically. */
static void check_round_trip(uint64_t v, const char *input)
{
        char buf[CA_DURATION_MAX_STR], again[CA_DURATION_MAX_STR];
        uint64_t back = SENTINEL;
        int r;

        if (ca_format_duration(v, buf, sizeof(buf)) != buf)
                fail("ca_format_duration() did not return its buffer", input);
        if (strlen(buf) + 1 >= sizeof(buf))
                fail("ca_format_duration() filled CA_DURATION_MAX_STR: maybe truncated", input);
        r = ca_parse_duration(buf, &back);
        if (r != 0 || back != v) {
                fprintf(stderr, "fuzz-duration: %llu formats as \"%s\", which parses as %d/%llu\n",
                        (unsigned long long)v, buf, r, (unsigned long long)back);
                fail("format/parse round trip", input);
        }
        ca_format_duration(back, again, sizeof(again));
        if (strcmp(buf, again) != 0)
                fail("ca_format_duration() is not canonical", input);
}

static void check_duration(const char *s)
{
        char padded[FUZZ_STRING_MAX + 8];
        uint64_t v = SENTINEL, w = SENTINEL;
        int r, r2;

        r = ca_parse_duration(s, &v);
        if (r != 0 && r != -EINVAL && r != -ERANGE)
                fail("ca_parse_duration() returned an undocumented value", s);
        if (r < 0 && v != SENTINEL)
                fail("ca_parse_duration() wrote its output on failure", s);
        if (r == -ERANGE && !only_chars(s, "0123456789abcdefghijklmnopqrstuvwxyz \t"))
                fail("ca_parse_duration() said -ERANGE for text with foreign characters", s);
        if (r != 0)
                return;
        if (!only_chars(s, "0123456789abcdefghijklmnopqrstuvwxyz \t"))
                fail("ca_parse_duration() accepted a character outside digits, units, blanks", s);
        check_round_trip(v, s);

        /* Blanks around the text change nothing. */
        snprintf(padded, sizeof(padded), " \t%s \t", s);
        r2 = ca_parse_duration(padded, &w);
        if (r2 != 0 || w != v)
                fail("surrounding blanks changed the parsed duration", s);
}

/* What ca_parse_uint() should answer: decimal digits only, no overflow, within the range. */
static int reference_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        unsigned long long n;
        char *end;

        if (!*s || !only_chars(s, "0123456789"))
                return -EINVAL;
        errno = 0;
        n = strtoull(s, &end, 10);
        if (errno == ERANGE || n < min || n > max)
                return -ERANGE;
        *ret = n;
        return 0;
}

static void check_uint(const char *s)
{
        static const struct {
                uint64_t min, max;
        } ranges[] = {
                { 0, UINT64_MAX }, { 1, CA_AGE_MAX }, { 0, 1000 }, { 0, 0 },
                { UINT64_MAX, UINT64_MAX }, { 10, 9 },
        };

        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
                uint64_t got = SENTINEL, want = SENTINEL;
                int r = ca_parse_uint(s, ranges[i].min, ranges[i].max, &got);
                int e = reference_uint(s, ranges[i].min, ranges[i].max, &want);

                if (r != e || got != want) {
                        fprintf(stderr, "fuzz-duration: ca_parse_uint(%llu..%llu) = %d/%llu, "
                                "expected %d/%llu\n", (unsigned long long)ranges[i].min,
                                (unsigned long long)ranges[i].max, r, (unsigned long long)got,
                                e, (unsigned long long)want);
                        fail("ca_parse_uint() disagrees with strtoull()", s);
                }
        }
}

static void check_bool(const char *s)
{
        char upper[FUZZ_STRING_MAX + 1];
        size_t i;
        int r;

        r = ca_parse_bool(s);
        if (r != 0 && r != 1 && r != -EINVAL)
                fail("ca_parse_bool() returned an undocumented value", s);
        for (i = 0; s[i] && i < FUZZ_STRING_MAX; i++)
                upper[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
        upper[i] = '\0';
        if (ca_parse_bool(upper) != r)
                fail("ca_parse_bool() depends on case", s);
}

/* Digits, or digits '.' digits: the only form the decimal parsers take. */
static bool is_decimal_form(const char *s)
{
        size_t n = strspn(s, "0123456789");

        if (n == 0)
                return false;
        if (s[n] == '\0')
                return true;
        return s[n] == '.' && strspn(s + n + 1, "0123456789") > 0 &&
               s[n + 1 + strspn(s + n + 1, "0123456789")] == '\0';
}

static void check_decimal(const char *s)
{
        char bare[FUZZ_STRING_MAX + 1];
        double v = -1.0, p = -1.0, want;
        size_t n = strlen(s);
        int r, rp, rb;

        r = ca_parse_decimal(s, 0.0, 1000.0, &v);
        if (r != 0 && r != -EINVAL && r != -ERANGE)
                fail("ca_parse_decimal() returned an undocumented value", s);
        if (r < 0 && v != -1.0)
                fail("ca_parse_decimal() wrote its output on failure", s);
        if ((r == -EINVAL) == is_decimal_form(s))
                fail("ca_parse_decimal() and the decimal form disagree", s);
        if (r == 0) {
                want = strtod(s, NULL);
                if (v < 0.0 || v > 1000.0 || v - want > 1e-9 * (1 + want) ||
                    want - v > 1e-9 * (1 + want))
                        fail("ca_parse_decimal() disagrees with strtod()", s);
        }

        /* A percentage is a decimal within 0..100, '%' or not. */
        rp = ca_parse_percent(s, &p);
        memcpy(bare, s, n + 1);
        if (n > 0 && bare[n - 1] == '%')
                bare[n - 1] = '\0';
        rb = ca_parse_decimal(bare, 0.0, 100.0, &v);
        if (rp != rb || (rp == 0 && p != v))
                fail("ca_parse_percent() is not ca_parse_decimal() within 0..100", s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char s[FUZZ_STRING_MAX + 1];
        size_t n = size < FUZZ_STRING_MAX ? size : FUZZ_STRING_MAX;
        uint64_t v;

        memcpy(s, data, n);
        s[n] = '\0';

        check_duration(s);
        check_uint(s);
        check_bool(s);
        check_decimal(s);

        /* Any 64-bit value formats to text that reads back exactly. */
        if (size >= sizeof(v)) {
                memcpy(&v, data, sizeof(v));
                check_round_trip(v, s);
        }
        return 0;
}
