/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Values as a person writes them (durations, booleans, bounded integers) and lists of error
 * messages; used by the configuration parser and by cacheagectl.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ca_errors {
        char **v; /* messages, in order */
        size_t n;
};

/*
 * ca_errors_add() - append one formatted message. @e may be NULL (nothing happens). When
 * memory runs out the message is dropped: callers that must know whether an error occurred
 * count errors themselves (ca_conf_load() does).
 */
void ca_errors_add(struct ca_errors *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ca_errors_clear() - free every message and empty the list; accepts NULL. */
void ca_errors_clear(struct ca_errors *e);

/*
 * ca_parse_duration() - "250ms", "30s", "5min", "1h", "1h 30min", "1h30min", "2d", "500us";
 * systemd's units (us usec ms msec s sec second(s) m min minute(s) h hr hour(s) d day(s)
 * w week(s)), components add up. A lone number is seconds; no signs, no fractions.
 * Returns 0 and stores microseconds, -EINVAL (syntax) or -ERANGE (over UINT64_MAX usec).
 */
int ca_parse_duration(const char *s, uint64_t *ret_usec);

/*
 * ca_format_duration() - the shortest exact form ("1min 30s", "250ms", "1w", "0"), which
 * ca_parse_duration() reads back; truncated to fit @len. Returns @buf.
 */
char *ca_format_duration(uint64_t usec, char *buf, size_t len);
#define CA_DURATION_MAX_STR 64

/* ca_parse_bool() - yes/no, true/false, on/off, 1/0, any case. Returns 0/1, or -EINVAL. */
int ca_parse_bool(const char *s);

/*
 * ca_parse_uint() - decimal digits only (no sign, no spaces), within [min, max]. Returns 0
 * and stores the value, -EINVAL (not a number) or -ERANGE (overflow or outside the range).
 */
int ca_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/*
 * ca_valid_name() - a cache or key name ([A-Za-z0-9_.-]), or with @adapter an adapter name
 * ([a-z0-9_-]: it becomes a file name, so no '/', no dot files), 1..@max bytes.
 */
bool ca_valid_name(const char *s, bool adapter, size_t max);

/* ASCII classes, whatever the locale. */
static inline bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static inline bool is_lower(char c)
{
        return c >= 'a' && c <= 'z';
}

static inline bool is_space(char c)
{
        return c == ' ' || c == '\t';
}

