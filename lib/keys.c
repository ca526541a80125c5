/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keys read by table (cacheage/plugin.h): one value by one spec, into a caller's struct.
 * No host and no section here, so that the daemon's own [daemon] and [cache] keys, read
 * line by line as inih hands them over, use the very same code and messages as the
 * adapters' sections (ca_section_parse(), in plugin.c).
 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cacheage/plugin.h"
#include "cacheage/value.h"

/* Append to a message, keeping it terminated when it does not fit. */
static void msg_append(char *buf, size_t len, size_t *off, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void msg_append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (*off >= len)
                return;
        va_start(ap, fmt);
        n = vsnprintf(buf + *off, len - *off, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        *off = (size_t)n < len - *off ? *off + (size_t)n : len;
}

/* "a, b or c": the i-th name of a list from @name_at, until it returns NULL. */
static void append_names(char *buf, size_t len, size_t *off,
                         const char *(*name_at)(const void *list, size_t i), const void *list,
                         const char *last)
{
        size_t n = 0;

        while (name_at(list, n))
                n++;
        for (size_t i = 0; i < n; i++)
                msg_append(buf, len, off, "%s%s", i == 0 ? "" : i + 1 < n || last ? ", " : " or ",
                           name_at(list, i));
        if (last)
                msg_append(buf, len, off, "%s%s", n > 0 ? " or " : "", last);
}

static const char *spec_name_at(const void *list, size_t i)
{
        return ((const struct ca_key_spec *)list)[i].name;
}

static const char *choice_name_at(const void *list, size_t i)
{
        return ((const struct ca_key_choice *)list)[i].name;
}

const struct ca_key_spec *ca_key_find(const struct ca_key_spec *specs, const char *name)
{
        if (!specs || !name)
                return NULL;
        for (; specs->name; specs++)
                if (strcmp(specs->name, name) == 0)
                        return specs;
        return NULL;
}

/*
 * Optimal string alignment distance (Damerau-Levenshtein without moves across edits): one
 * character inserted, dropped, changed, or two neighbours swapped, each costs 1. Names are
 * CA_CONF_NAME_MAX-short; longer ones are not typos of a key.
 */
#define TYPO_NAME_MAX 64

static unsigned typo_distance(const char *a, const char *b)
{
        unsigned d[TYPO_NAME_MAX + 1][TYPO_NAME_MAX + 1];
        size_t n = strlen(a), m = strlen(b);

        if (n > TYPO_NAME_MAX || m > TYPO_NAME_MAX)
                return UINT_MAX;
        for (size_t i = 0; i <= n; i++)
                d[i][0] = (unsigned)i;
        for (size_t j = 0; j <= m; j++)
                d[0][j] = (unsigned)j;
        for (size_t i = 1; i <= n; i++)
                for (size_t j = 1; j <= m; j++) {
                        unsigned cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

                        if (d[i - 1][j] + 1 < v)
                                v = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < v)
                                v = d[i][j - 1] + 1;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                            d[i - 2][j - 2] + 1 < v)
                                v = d[i - 2][j - 2] + 1;
                        d[i][j] = v;
                }
        return d[n][m];
}

const char *ca_key_closest(const struct ca_key_spec *specs, const char *name,
                           unsigned *ret_distance)
{
        const char *best = NULL;
        unsigned best_d = UINT_MAX;
        size_t len;

        if (!specs || !name)
                return NULL;
        len = strlen(name);
        for (; specs->name; specs++) {
                unsigned d = typo_distance(name, specs->name);

                if (d < best_d) {
                        best = specs->name;
                        best_d = d;
                }
        }
        /* A likely typo: at most 2 edits, 1 for names under 4 bytes, and never all of it. */
        if (!best || best_d == 0 || best_d > (len < 4 ? 1u : 2u) || best_d >= len)
                return NULL;
        if (ret_distance)
                *ret_distance = best_d;
        return best;
}

char *ca_key_names(const struct ca_key_spec *specs, char *buf, size_t len)
{
        size_t off = 0;

        if (!buf || len == 0)
                return buf;
        buf[0] = '\0';
        if (specs)
                append_names(buf, len, &off, spec_name_at, specs, NULL);
        return buf;
}

/* The field size a type stores into; 0 for UINT, which takes any unsigned width. */
static size_t type_size(enum ca_key_type type)
{
        switch (type) {
        case CA_KEY_BOOL:
                return sizeof(bool);
        case CA_KEY_UINT:
                return 0;
        case CA_KEY_DURATION:
                return sizeof(uint64_t);
        case CA_KEY_PERCENT:
        case CA_KEY_DECIMAL:
                return sizeof(double);
        case CA_KEY_CHOICE:
                return sizeof(int);
        case CA_KEY_STRING:
        case CA_KEY_PATH:
        case CA_KEY_NAME:
                return sizeof(const char *);
        }
        return SIZE_MAX;
}

/* A table's mistake, said as plainly as a user's, so that it is caught by the first test. */
static int spec_check(const struct ca_key_spec *k, char *msg, size_t len)
{
        const char *bad = NULL;
        size_t want = type_size(k->type);

        if (want == SIZE_MAX)
                bad = "unknown type";
        else if (want != 0 && k->size != want)
                bad = "field size does not match the type";
        else if (k->type == CA_KEY_UINT && k->size != 1 && k->size != 2 && k->size != 4 &&
                 k->size != 8)
                bad = "field size is not that of an unsigned integer";
        else if (k->type == CA_KEY_UINT && k->size < 8 && k->max >> (k->size * 8) != 0)
                bad = "max does not fit the field";
        else if ((k->type == CA_KEY_UINT || k->type == CA_KEY_DURATION ||
                  (k->type == CA_KEY_CHOICE && (k->flags & CA_KEY_NUMBER))) &&
                 k->min > k->max)
                bad = "min above max";
        else if (k->type == CA_KEY_DECIMAL && !(k->dmin <= k->dmax))
                bad = "dmin above dmax";
        else if (k->type == CA_KEY_CHOICE && !k->choices)
                bad = "no choices";
        else if (k->type == CA_KEY_CHOICE && (k->flags & CA_KEY_NUMBER) && k->max > INT_MAX)
                bad = "max does not fit an int";
        else if (k->type == CA_KEY_NAME && k->max == 0)
                bad = "no max length";
        if (!bad)
                return 0;
        snprintf(msg, len, "key table entry refused: %s", bad);
        return -EINVAL;
}

/* One value as read, before it is stored. */
union key_value {
        bool b;
        uint64_t u;
        double d;
        int i;
        const char *s;
};

static void store(const struct ca_key_spec *k, void *field, const union key_value *v)
{
        switch (k->type) {
        case CA_KEY_BOOL:
                *(bool *)field = v->b;
                break;
        case CA_KEY_UINT:
                if (k->size == 1)
                        *(uint8_t *)field = (uint8_t)v->u;
                else if (k->size == 2)
                        *(uint16_t *)field = (uint16_t)v->u;
                else if (k->size == 4)
                        *(uint32_t *)field = (uint32_t)v->u;
                else
                        *(uint64_t *)field = v->u;
                break;
        case CA_KEY_DURATION:
                *(uint64_t *)field = v->u;
                break;
        case CA_KEY_PERCENT:
        case CA_KEY_DECIMAL:
                *(double *)field = v->d;
                break;
        case CA_KEY_CHOICE:
                *(int *)field = v->i;
                break;
        case CA_KEY_STRING:
        case CA_KEY_PATH:
        case CA_KEY_NAME:
                *(const char **)field = v->s;
                break;
        }
}

/* What the type is called in "invalid ... \"value\"", unless the spec names it. */
static const char *noun(const struct ca_key_spec *k, const char *own)
{
        return k->what ? k->what : own;
}

/* Read @value by its type into @ret; or a negative errno and the reason in @msg. */
static int key_read(const struct ca_key_spec *k, const char *value, union key_value *ret,
                    char *msg, size_t msg_len)
{
        const char *off = k->flags & CA_KEY_ZERO_OFF ? "; 0 = off" : "";
        char a[CA_DURATION_MAX_STR], b[CA_DURATION_MAX_STR];
        size_t len = 0;
        int r;

        switch (k->type) {
        case CA_KEY_BOOL:
                r = ca_parse_bool(value);
                if (r < 0) {
                        snprintf(msg, msg_len, "invalid %s \"%s\" (expected yes/no, true/false, "
                                 "on/off or 1/0)", noun(k, "boolean"), value);
                        return r;
                }
                ret->b = r;
                return 0;

        case CA_KEY_UINT:
                r = ca_parse_uint(value, k->min, k->max, &ret->u);
                if (r == -EINVAL)
                        snprintf(msg, msg_len, "invalid %s \"%s\" (expected an integer %" PRIu64
                                 "..%" PRIu64 "%s)", noun(k, "number"), value, k->min, k->max,
                                 off);
                else if (r < 0)
                        snprintf(msg, msg_len, "%s out of range (expected %" PRIu64 "..%" PRIu64
                                 "%s)", value, k->min, k->max, off);
                return r;

        case CA_KEY_DURATION:
                r = ca_parse_duration(value, &ret->u);
                if (r == -EINVAL) {
                        snprintf(msg, msg_len, "invalid %s \"%s\" (expected e.g. 250ms, 30s, "
                                 "5min, 1h%s)", noun(k, "duration"), value, off);
                        return r;
                }
                if (r < 0 || ret->u < k->min || ret->u > k->max) {
                        snprintf(msg, msg_len, "%s out of range (expected %s..%s%s)", value,
                                 ca_format_duration(k->min, a, sizeof(a)),
                                 ca_format_duration(k->max, b, sizeof(b)), off);
                        return -ERANGE;
                }
                return 0;

        case CA_KEY_PERCENT:
                r = ca_parse_percent(value, &ret->d);
                if (r == -EINVAL)
                        snprintf(msg, msg_len, "invalid %s \"%s\" (expected a percentage 0..100, "
                                 "e.g. 12.5%s)", noun(k, "number"), value, off);
                else if (r < 0)
                        snprintf(msg, msg_len, "%s out of range (expected 0..100%s)", value, off);
                return r;

        case CA_KEY_DECIMAL:
                r = ca_parse_decimal(value, k->dmin, k->dmax, &ret->d);
                if (r == -EINVAL)
                        snprintf(msg, msg_len, "invalid %s \"%s\" (expected a decimal number "
                                 "%g..%g%s)", noun(k, "number"), value, k->dmin, k->dmax, off);
                else if (r < 0)
                        snprintf(msg, msg_len, "%s out of range (expected %g..%g%s)", value,
                                 k->dmin, k->dmax, off);
                return r;

        case CA_KEY_CHOICE:
                for (const struct ca_key_choice *c = k->choices; c->name; c++)
                        if (strcmp(value, c->name) == 0) {
                                ret->i = c->value;
                                return 0;
                        }
                if ((k->flags & CA_KEY_NUMBER) && ca_parse_uint(value, k->min, k->max, &ret->u) == 0) {
                        ret->i = (int)ret->u;
                        return 0;
                }
                if (k->flags & CA_KEY_NUMBER)
                        snprintf(a, sizeof(a), "%" PRIu64 "..%" PRIu64, k->min, k->max);
                msg_append(msg, msg_len, &len, "invalid %s \"%s\" (expected ",
                           noun(k, "value"), value);
                append_names(msg, msg_len, &len, choice_name_at, k->choices,
                             k->flags & CA_KEY_NUMBER ? a : NULL);
                msg_append(msg, msg_len, &len, "%s)", off);
                return -EINVAL;

        case CA_KEY_STRING:
                break;

        case CA_KEY_PATH:
                if (value[0] != '/') {
                        snprintf(msg, msg_len, "\"%s\" is not an absolute path (expected e.g. %s)",
                                 value, k->def ? k->def : "/path");
                        return -EINVAL;
                }
                break;

        case CA_KEY_NAME:
                if (!ca_valid_name(value, k->flags & CA_KEY_ADAPTER_NAME, k->max)) {
                        snprintf(msg, msg_len, "invalid %s \"%s\" (expected 1..%" PRIu64
                                 " characters of %s)", noun(k, "name"), value, k->max,
                                 k->flags & CA_KEY_ADAPTER_NAME ? "a-z 0-9 _ -"
                                                                : "A-Z a-z 0-9 _ . -");
                        return -EINVAL;
                }
                break;
        }
        ret->s = value;
        return 0;
}

int ca_key_parse(const struct ca_key_spec *k, const char *value, void *target, char *msg,
                 size_t msg_len)
{
        union key_value v;
        int r;

        r = spec_check(k, msg, msg_len);
        if (r < 0)
                return r;
        if (!value) {
                snprintf(msg, msg_len, "no value");
                return -EINVAL;
        }
        r = key_read(k, value, &v, msg, msg_len);
        if (r < 0)
                return r;
        if (k->check) {
                r = k->check(value, target, msg, msg_len);
                if (r < 0)
                        return r;
        }
        if (target)
                store(k, (char *)target + k->offset, &v);
        return 0;
}
