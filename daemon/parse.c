/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Values as a person writes them in cacheaged.conf and on cacheagectl's command line
 * (durations, booleans, bounded integers), and the error lists that name what was wrong.
 * Shared by the configuration parser and the client; no inih, no bus.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* ---- error lists ---- */

void ca_errors_add(struct ca_errors *e, const char *fmt, ...)
{
        va_list ap;
        char **v;
        char *msg;
        int r;

        if (!e)
                return;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return; /* out of memory: the caller's own count of errors still holds */
        v = realloc(e->v, (e->n + 1) * sizeof(*v));
        if (!v) {
                free(msg);
                return;
        }
        v[e->n++] = msg;
        e->v = v;
}

void ca_errors_clear(struct ca_errors *e)
{
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++)
                free(e->v[i]);
        free(e->v);
        e->v = NULL;
        e->n = 0;
}

/* ---- values ---- */

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
 * A percentage: "12", "12.5", "12.5%". Parsed by hand rather than with strtod(), whose
 * decimal point follows the locale and which would take "nan", "inf" and hex.
 */

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
