/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RESP2 as the redis adapter reads and writes it (see redis-proto.h). The parser walks the
 * buffer once, iteratively (a stack of the arrays still open, at most RP_DEPTH_MAX), and checks
 * every limit at a header, before the bytes it announces could be waited for.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "redis-proto.h"

/* A signed decimal of a header (":", "$" or "*"): digits, an optional '-', 18 digits at most. */
static int parse_i64(const char *s, size_t len, int64_t *ret)
{
        bool neg = len > 0 && s[0] == '-';
        uint64_t u;

        if (neg) {
                s++;
                len--;
        }
        if (len == 0 || len > 18 || ad_parse_u64(s, len, UINT64_MAX, &u) < 0)
                return -EBADMSG;
        *ret = neg ? -(int64_t)u : (int64_t)u;
        return 0;
}

/* A line from @pos: its length without "\r\n" in *ret_len, or -EAGAIN / -EBADMSG. */
static int line_at(const char *buf, size_t len, size_t pos, size_t *ret_len, char *err,
                   size_t err_len)
{
        size_t max = len - pos < RP_LINE_MAX + 2 ? len - pos : RP_LINE_MAX + 2;
        const char *cr = memchr(buf + pos, '\r', max);

        if (!cr) {
                if (len - pos >= RP_LINE_MAX + 2)
                        return ad_bad(err, err_len, "a line longer than %d bytes", RP_LINE_MAX);
                return -EAGAIN;
        }
        if ((size_t)(cr - buf) + 1 >= len)
                return -EAGAIN;
        if (cr[1] != '\n')
                return ad_bad(err, err_len, "a carriage return without a line feed");
        *ret_len = (size_t)(cr - (buf + pos));
        return 0;
}

int rp_parse(const char *buf, size_t len, struct rp_value *v, size_t max_values, size_t *ret_n,
             size_t *ret_len, char *err, size_t err_len)
{
        /* The arrays still open: their index in @v and how many elements they still owe. */
        struct {
                size_t index;
                int64_t owed;
        } open[RP_DEPTH_MAX + 1];
        size_t depth = 0, n = 0, pos = 0, line_len = 0;
        int r;

        if (max_values > RP_VALUES_MAX)
                max_values = RP_VALUES_MAX;
        do {
                struct rp_value *x;
                int64_t num;

                if (pos >= len) {
                        *ret_len = pos + 1;
                        return -EAGAIN;
                }
                if (n >= max_values)
                        return ad_bad(err, err_len, "a reply of more than %zu values", max_values);
                r = line_at(buf, len, pos, &line_len, err, err_len);
                if (r == -EAGAIN) {
                        *ret_len = len + 1;
                        return r;
                }
                if (r < 0)
                        return r;
                x = &v[n];
                *x = (struct rp_value){ .str = buf + pos + 1, .len = line_len - (line_len > 0) };
                if (line_len == 0)
                        return ad_bad(err, err_len, "an empty line where a reply was due");
                switch (buf[pos]) {
                case '+':
                        x->type = RP_STATUS;
                        break;
                case '-':
                        x->type = RP_ERROR;
                        break;
                case ':':
                        x->type = RP_INTEGER;
                        if (parse_i64(x->str, x->len, &x->integer) < 0)
                                return ad_bad(err, err_len, "an integer that is not one");
                        break;
                case '$':
                        if (parse_i64(x->str, x->len, &num) < 0 || num < -1)
                                return ad_bad(err, err_len, "a bulk string of no length");
                        if (num == -1) {
                                *x = (struct rp_value){ .type = RP_NIL };
                                break;
                        }
                        if (num > RP_BULK_MAX)
                                return ad_bad(err, err_len, "a bulk string of %lld bytes (more "
                                              "than %d)", (long long)num, RP_BULK_MAX);
                        x->type = RP_BULK;
                        x->str = buf + pos + line_len + 2;
                        x->len = (size_t)num;
                        if (pos + line_len + 2 + x->len + 2 > RP_REPLY_MAX)
                                return ad_bad(err, err_len, "a reply longer than %d bytes",
                                              RP_REPLY_MAX);
                        if (pos + line_len + 2 + x->len + 2 > len) {
                                *ret_len = pos + line_len + 2 + x->len + 2;
                                return -EAGAIN;
                        }
                        if (memcmp(x->str + x->len, "\r\n", 2) != 0)
                                return ad_bad(err, err_len, "a bulk string longer than it said");
                        pos += x->len + 2;
                        break;
                case '*':
                        if (parse_i64(x->str, x->len, &num) < 0 || num < -1)
                                return ad_bad(err, err_len, "an array of no length");
                        if (num == -1) {
                                *x = (struct rp_value){ .type = RP_NIL_ARRAY };
                                break;
                        }
                        if (num > (int64_t)(max_values - n - 1))
                                return ad_bad(err, err_len, "an array of %lld elements (more "
                                              "than %zu values in all)", (long long)num,
                                              max_values);
                        if (depth == RP_DEPTH_MAX && num > 0)
                                return ad_bad(err, err_len, "arrays nested deeper than %d",
                                              RP_DEPTH_MAX);
                        *x = (struct rp_value){ .type = RP_ARRAY, .integer = num };
                        break;
                default:
                        return ad_bad(err, err_len, "not a RESP2 reply (type byte 0x%02x)",
                                      (unsigned char)buf[pos]);
                }
                pos += line_len + 2;
                if (pos > RP_REPLY_MAX)
                        return ad_bad(err, err_len, "a reply longer than %d bytes", RP_REPLY_MAX);
                n++;
                x->next = n;
                if (x->type == RP_ARRAY && x->integer > 0) {
                        open[depth].index = n - 1;
                        open[depth].owed = x->integer;
                        depth++;
                        continue;
                }
                /* A value is whole: it settles the arrays it ends. */
                while (depth > 0 && --open[depth - 1].owed == 0) {
                        depth--;
                        v[open[depth].index].next = n;
                }
        } while (depth > 0);
        *ret_n = n;
        *ret_len = pos;
        return 0;
}

bool rp_is_error(const struct rp_value *v, const char *word)
{
        size_t n = strlen(word);

        return v->type == RP_ERROR && v->len >= n && memcmp(v->str, word, n) == 0 &&
               (v->len == n || v->str[n] == ' ');
}

static const char *type_name(enum rp_type t)
{
        static const char *const names[] = {
                [RP_STATUS] = "a status", [RP_ERROR] = "an error", [RP_INTEGER] = "an integer",
                [RP_BULK] = "a bulk string", [RP_NIL] = "a nil", [RP_ARRAY] = "an array",
                [RP_NIL_ARRAY] = "a nil array",
        };

        return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "a value";
}

int rp_parse_scan(const struct rp_value *v, size_t n, uint64_t *ret_cursor, size_t *ret_first,
                  size_t *ret_keys, char *err, size_t err_len)
{
        const struct rp_value *cursor = &v[1], *keys;

        if (n < 3 || v[0].type != RP_ARRAY || v[0].integer != 2)
                return ad_bad(err, err_len, "%s where SCAN's [cursor, keys] was due",
                              type_name(v[0].type));
        if (cursor->type != RP_BULK || ad_parse_u64(cursor->str, cursor->len, UINT64_MAX,
                                                    ret_cursor) < 0)
                return ad_bad(err, err_len, "a SCAN cursor that is not a number");
        keys = &v[2];
        if (keys->type != RP_ARRAY)
                return ad_bad(err, err_len, "SCAN's keys are %s, not an array",
                              type_name(keys->type));
        for (size_t i = 3; i < 3 + (size_t)keys->integer; i++)
                if (v[i].type != RP_BULK)
                        return ad_bad(err, err_len, "a SCAN key that is %s", type_name(v[i].type));
        if (n != 3 + (size_t)keys->integer)
                return ad_bad(err, err_len, "a SCAN reply with more than [cursor, keys]");
        *ret_first = 3;
        *ret_keys = (size_t)keys->integer;
        return 0;
}

int rp_parse_integers(const struct rp_value *v, size_t n, size_t count, int64_t *out, char *err,
                      size_t err_len)
{
        const int64_t exact = (int64_t)1 << 53;

        if (v[0].type != RP_ARRAY)
                return ad_bad(err, err_len, "%s where an array of %zu integers was due",
                              type_name(v[0].type), count);
        if ((size_t)v[0].integer != count || n != count + 1)
                return ad_bad(err, err_len, "an array of %lld values where %zu were due",
                              (long long)v[0].integer, count);
        for (size_t i = 0; i < count; i++) {
                if (v[i + 1].type != RP_INTEGER)
                        return ad_bad(err, err_len, "value %zu is %s, not an integer", i + 1,
                                      type_name(v[i + 1].type));
                if (v[i + 1].integer < -exact || v[i + 1].integer > exact)
                        return ad_bad(err, err_len, "value %zu is out of range", i + 1);
                out[i] = v[i + 1].integer;
        }
        return 0;
}

int rp_parse_sha(const struct rp_value *v, size_t n, char *out, char *err, size_t err_len)
{
        if (n != 1 || v[0].type != RP_BULK || v[0].len != RP_SHA_LEN)
                return ad_bad(err, err_len, "%s where a script's SHA1 was due",
                              type_name(v[0].type));
        for (size_t i = 0; i < RP_SHA_LEN; i++)
                if (!((v[0].str[i] >= '0' && v[0].str[i] <= '9') ||
                      (v[0].str[i] >= 'a' && v[0].str[i] <= 'f')))
                        return ad_bad(err, err_len, "a script's SHA1 that is not hex");
        memcpy(out, v[0].str, RP_SHA_LEN);
        out[RP_SHA_LEN] = '\0';
        return 0;
}

int rp_parse_config_u64(const struct rp_value *v, size_t n, const char *name, uint64_t max,
                        uint64_t *ret, char *err, size_t err_len)
{
        if (v[0].type == RP_ARRAY && v[0].integer == 0)
                return -ENOENT;
        if (n != 3 || v[0].type != RP_ARRAY || v[1].type != RP_BULK || v[2].type != RP_BULK)
                return ad_bad(err, err_len, "%s where CONFIG GET's [name, value] was due",
                              type_name(v[0].type));
        if (v[1].len != strlen(name) || memcmp(v[1].str, name, v[1].len) != 0)
                return ad_bad(err, err_len, "CONFIG GET answered for another parameter");
        if (ad_parse_u64(v[2].str, v[2].len, max, ret) < 0)
                return ad_bad(err, err_len, "%s is not a number up to %llu", name,
                              (unsigned long long)max);
        return 0;
}

int rp_info_field(const char *text, size_t len, const char *name, const char **ret_value,
                  size_t *ret_len)
{
        size_t n = strlen(name), pos = 0;

        while (pos < len) {
                const char *eol = memchr(text + pos, '\n', len - pos);
                size_t line = (size_t)((eol ? eol : text + len) - (text + pos));
                size_t l = line > 0 && text[pos + line - 1] == '\r' ? line - 1 : line;

                if (l > n && memcmp(text + pos, name, n) == 0 && text[pos + n] == ':') {
                        *ret_value = text + pos + n + 1;
                        *ret_len = l - n - 1;
                        return 0;
                }
                pos += line + 1;
        }
        return -ENOENT;
}

int rp_info_u64(const char *text, size_t len, const char *name, uint64_t max, uint64_t *ret)
{
        const char *v;
        size_t vl;
        int r = rp_info_field(text, len, name, &v, &vl);

        if (r < 0)
                return r;
        return ad_parse_u64(v, vl, max, ret) < 0 ? -EBADMSG : 0;
}

size_t rp_command(char *out, size_t out_max, size_t argc, const char *const *argv,
                  const size_t *lens)
{
        char head[32];
        size_t total = (size_t)snprintf(head, sizeof(head), "*%zu\r\n", argc), pos = 0;

        for (size_t i = 0; i < argc; i++)
                total += (size_t)snprintf(head, sizeof(head), "$%zu\r\n", lens[i]) + lens[i] + 2;
        if (total > out_max)
                return total;
        pos += (size_t)sprintf(out + pos, "*%zu\r\n", argc);
        for (size_t i = 0; i < argc; i++) {
                pos += (size_t)sprintf(out + pos, "$%zu\r\n", lens[i]);
                memcpy(out + pos, argv[i], lens[i]);
                pos += lens[i];
                memcpy(out + pos, "\r\n", 2);
                pos += 2;
        }
        return total;
}
