/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Values as a person writes them (see cacheage/value.h): read by the daemon's configuration,
 * by cacheagectl's arguments and by every adapter's key table, so that a duration or a
 * boolean is written the same way wherever it goes. No allocation, no locale, no state.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cacheage/value.h"

/* ASCII classes, whatever the locale. */
static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static bool is_lower(char c)
{
        return c >= 'a' && c <= 'z';
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t';
}

static const struct {
        const char *name;
        uint64_t usec;
} duration_units[] = {
        { "us", 1ULL },
        { "usec", 1ULL },
        { "ms", 1000ULL },
        { "msec", 1000ULL },
        { "s", 1000000ULL },
        { "sec", 1000000ULL },
        { "second", 1000000ULL },
        { "seconds", 1000000ULL },
        { "m", 60ULL * 1000000 },
        { "min", 60ULL * 1000000 },
        { "minute", 60ULL * 1000000 },
        { "minutes", 60ULL * 1000000 },
        { "h", 3600ULL * 1000000 },
        { "hr", 3600ULL * 1000000 },
        { "hour", 3600ULL * 1000000 },
        { "hours", 3600ULL * 1000000 },
        { "d", 86400ULL * 1000000 },
        { "day", 86400ULL * 1000000 },
        { "days", 86400ULL * 1000000 },
        { "w", 7ULL * 86400 * 1000000 },
        { "week", 7ULL * 86400 * 1000000 },
        { "weeks", 7ULL * 86400 * 1000000 },
};

/*
 * systemd's time span syntax, without fractions: "1h 30min", "1h30min", "5 min". Every
 * component needs a unit except a lone number, which is seconds ("1h 30" is refused as
 * ambiguous). A syntax error is -EINVAL even when a number also overflowed.
 */
int ca_parse_duration(const char *s, uint64_t *ret_usec)
{
        uint64_t total = 0;
        bool overflow = false;
        size_t n_components = 0;
        bool bare = false;

        if (!s)
                return -EINVAL;
        while (is_space(*s))
                s++;
        if (!*s)
                return -EINVAL;

        while (*s) {
                uint64_t n = 0, unit = 0, v;
                const char *u;
                size_t len;

                if (!is_digit(*s) || bare)
                        return -EINVAL;
                for (; is_digit(*s); s++)
                        if (__builtin_mul_overflow(n, 10, &n) ||
                            __builtin_add_overflow(n, (uint64_t)(*s - '0'), &n))
                                overflow = true;
                while (is_space(*s))
                        s++;
                for (u = s; is_lower(*s); s++)
                        ;
                len = (size_t)(s - u);
                if (len == 0) {
                        if (n_components > 0)
                                return -EINVAL;
                        bare = true;
                        unit = 1000000ULL;
                } else {
                        for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]);
                             i++)
                                if (strlen(duration_units[i].name) == len &&
                                    memcmp(duration_units[i].name, u, len) == 0)
                                        unit = duration_units[i].usec;
                        if (unit == 0)
                                return -EINVAL;
                }
                if (__builtin_mul_overflow(n, unit, &v) || __builtin_add_overflow(total, v, &total))
                        overflow = true;
                n_components++;
                while (is_space(*s))
                        s++;
        }
        if (overflow)
                return -ERANGE;
        *ret_usec = total;
        return 0;
}

char *ca_format_size(uint64_t bytes, char *buf, size_t len)
{
        static const char units[] = "KMGTPE";
        double v = (double)bytes;
        size_t u = 0;

        if (bytes < 1024) {
                snprintf(buf, len, "%" PRIu64 "B", bytes);
                return buf;
        }
        while (v >= 1024 && u < sizeof(units) - 1) {
                v /= 1024;
                u++;
        }
        snprintf(buf, len, "%.1f%c", v, units[u - 1]);
        return buf;
}

char *ca_format_duration(uint64_t usec, char *buf, size_t len)
{
        /* Each unit is a multiple of the next, so taking the largest first is shortest. */
        static const struct {
                const char *name;
                uint64_t usec;
        } units[] = {
                { "w", 7ULL * 86400 * 1000000 }, { "d", 86400ULL * 1000000 },
                { "h", 3600ULL * 1000000 },      { "min", 60ULL * 1000000 },
                { "s", 1000000ULL },             { "ms", 1000ULL },
                { "us", 1ULL },
        };
        size_t off = 0;

        if (!buf || len == 0)
                return buf;
        buf[0] = '\0';
        if (usec == 0) {
                snprintf(buf, len, "0");
                return buf;
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && usec > 0; i++) {
                uint64_t n = usec / units[i].usec;
                int w;

                if (n == 0)
                        continue;
                usec -= n * units[i].usec;
                w = snprintf(buf + off, len - off, "%s%llu%s", off > 0 ? " " : "",
                             (unsigned long long)n, units[i].name);
                if (w < 0 || (size_t)w >= len - off)
                        break; /* truncated, still terminated */
                off += (size_t)w;
        }
        return buf;
}

int ca_parse_bool(const char *s)
{
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -EINVAL;
}

int ca_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        uint64_t n = 0;
        bool overflow = false;

        if (!s || !*s)
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (!is_digit(*p))
                        return -EINVAL;
                if (__builtin_mul_overflow(n, 10, &n) ||
                    __builtin_add_overflow(n, (uint64_t)(*p - '0'), &n))
                        overflow = true;
        }
        if (overflow || n < min || n > max)
                return -ERANGE;
        *ret = n;
        return 0;
}

/*
 * Parsed by hand rather than with strtod(), whose decimal point follows the locale and which
 * would take "nan", "inf", hex and exponents. @suffix: one character allowed at the end.
 */
static int parse_decimal(const char *s, char suffix, double min, double max, double *ret)
{
        uint64_t whole = 0;
        bool overflow = false;
        double v, scale = 0.1;
        const char *p = s;

        if (!p || !is_digit(*p))
                return -EINVAL;
        for (; is_digit(*p); p++)
                if (__builtin_mul_overflow(whole, 10, &whole) ||
                    __builtin_add_overflow(whole, (uint64_t)(*p - '0'), &whole))
                        overflow = true;
        v = (double)whole;
        if (*p == '.') {
                p++;
                if (!is_digit(*p))
                        return -EINVAL;
                for (; is_digit(*p); p++, scale /= 10)
                        v += (*p - '0') * scale;
        }
        if (suffix && *p == suffix)
                p++;
        if (*p)
                return -EINVAL;
        if (overflow || v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int ca_parse_decimal(const char *s, double min, double max, double *ret)
{
        return parse_decimal(s, '\0', min, max, ret);
}

int ca_parse_percent(const char *s, double *ret_pct)
{
        return parse_decimal(s, '%', 0.0, 100.0, ret_pct);
}


bool ca_valid_name(const char *s, bool adapter, size_t max)
{
        size_t n = 0;

        if (!s)
                return false;
        for (; *s; s++, n++) {
                char c = *s;

                if (is_lower(c) || is_digit(c) || c == '_' || c == '-')
                        continue;
                if (!adapter && ((c >= 'A' && c <= 'Z') || c == '.'))
                        continue;
                return false;
        }
        return n >= 1 && n <= max;
}
