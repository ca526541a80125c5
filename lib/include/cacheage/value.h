/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_VALUE_H
#define CACHEAGE_VALUE_H

/*
 * Values as a person writes them in a configuration file or on a command line: durations
 * with units, booleans, bounded integers, decimals and percentages, names. The daemon's
 * configuration, cacheagectl and the adapters' key tables (plugin.h) all read values with
 * these, so that one value is written the same way everywhere.
 *
 * Every parser is strict and locale-independent: ASCII digits only, no sign, no exponent, no
 * surrounding blanks unless said. Each returns 0 and writes its output, or a negative errno
 * and writes nothing: -EINVAL when the text is not of the expected form, -ERANGE when it is
 * but the value is outside the range asked for (or overflows). A syntax error is -EINVAL
 * even when a number in it also overflowed. No function here allocates or keeps state;
 * all are safe from any thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ca_parse_duration() - "250ms", "30s", "5min", "1h", "1h 30min", "1h30min", "2d", "500us";
 * systemd's units (us usec ms msec s sec second(s) m min minute(s) h hr hour(s) d day(s)
 * w week(s)), components add up. A lone number is seconds; no signs, no fractions; blanks
 * around and between components are allowed. Returns 0 and stores microseconds, -EINVAL
 * (syntax, or NULL) or -ERANGE (over UINT64_MAX microseconds).
 */
int ca_parse_duration(const char *s, uint64_t *ret_usec);

/*
 * ca_format_duration() - the shortest exact form ("1min 30s", "250ms", "1w", "0"), which
 * ca_parse_duration() reads back; truncated to fit @len (CA_DURATION_MAX_STR always fits).
 * Returns @buf.
 */
char *ca_format_duration(uint64_t usec, char *buf, size_t len);
#define CA_DURATION_MAX_STR 64 /* bytes */

/*
 * ca_format_size() - bytes as the kernel's sizes are written: "512B", "20.0M", "1.5G" (binary
 * units, one decimal); truncated to fit @len (CA_SIZE_MAX_STR always fits). Returns @buf.
 */
char *ca_format_size(uint64_t bytes, char *buf, size_t len);
#define CA_SIZE_MAX_STR 24 /* bytes */

/* ca_parse_bool() - yes/no, true/false, on/off, 1/0, any case. Returns 1 or 0, or -EINVAL. */
int ca_parse_bool(const char *s);

/*
 * ca_parse_uint() - decimal digits only (no sign, no blanks), within [min, max]. Returns 0
 * and stores the value, -EINVAL (not a number) or -ERANGE (overflow or outside the range).
 */
int ca_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/*
 * ca_parse_decimal() - "12", "12.5": digits, optionally a '.' and at least one more digit
 * (not strtod(): no locale decimal point, no "nan", "inf", hex or exponent), within
 * [min, max]. Returns 0 and stores the value, -EINVAL or -ERANGE.
 */
int ca_parse_decimal(const char *s, double min, double max, double *ret);

/*
 * ca_parse_percent() - a ca_parse_decimal() within 0..100, optionally followed by '%'
 * ("12", "12.5", "12.5%"). Returns 0 and stores the percentage, -EINVAL or -ERANGE.
 */
int ca_parse_percent(const char *s, double *ret_pct);

/*
 * ca_valid_name() - whether @s is a cache or key name ([A-Za-z0-9_.-]) or, with @adapter,
 * an adapter name ([a-z0-9_-]: it becomes a file name, so no '/', no dot files), of 1..@max
 * bytes. NULL is not a name.
 */
bool ca_valid_name(const char *s, bool adapter, size_t max);

#ifdef __cplusplus
}
#endif

#endif
