/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * RESP2 (the Redis serialization protocol, version 2), as far as the redis adapter speaks it:
 * one reply parsed from the start of a buffer into a flat list of values, the shapes of the
 * replies it expects (SCAN, the adapter's two scripts, SCRIPT LOAD, CONFIG GET), the fields of
 * INFO, and commands written as RESP arrays. Pure functions, no I/O, no allocation: the adapter
 * (redis.c), its tests and its libFuzzer target (tests/fuzz/fuzz-redis.c) call the same code.
 *
 * Everything that comes from the server is untrusted: a parser returns 0, or -EBADMSG with the
 * reason in @err (what was wrong, not the bytes themselves: the caller quotes an excerpt with
 * ad_excerpt()). Every size is bounded before anything is waited for: a bulk string announced
 * longer than RP_BULK_MAX, an array of more than RP_VALUES_MAX values, deeper than RP_DEPTH_MAX,
 * or a reply longer than RP_REPLY_MAX is refused at its header, not read.
 *
 * Protocol facts, checked against Redis 7.0.15 (src/networking.c, src/resp_parser.c): a reply
 * is "+text\r\n" (status), "-text\r\n" (error), ":N\r\n" (integer, signed 64 bits), "$N\r\n"
 * then N bytes and "\r\n" (bulk string; "$-1\r\n" is nil), "*N\r\n" then N replies (array;
 * "*-1\r\n" is a nil array). A RESP2 connection (no HELLO 3) receives no other type. Lua
 * scripts' replies: a table becomes an array, a number an integer (truncated), false/nil a nil.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-text.h" /* ad_parse_u64(), ad_excerpt() */

#define RP_KEY_MAX 1024             /* bytes of a key the adapter tracks (longer: not aged) */
#define RP_BULK_MAX (256 * 1024)    /* bytes of one bulk string (an INFO reply is about 5 KiB) */
#define RP_LINE_MAX 4096            /* bytes of a status, an error or a header, "\r\n" excluded */
#define RP_REPLY_MAX (512 * 1024)   /* bytes of one whole reply */
#define RP_VALUES_MAX 4096          /* values in one reply, every element of every array */
#define RP_DEPTH_MAX 4              /* arrays within arrays */
#define RP_ERR_MAX 160              /* bytes of a parser's reason */
#define RP_SHA_LEN 40               /* a script's SHA1, in hex */

enum rp_type {
        RP_STATUS,    /* +text */
        RP_ERROR,     /* -text */
        RP_INTEGER,   /* :N */
        RP_BULK,      /* $N then N bytes */
        RP_NIL,       /* $-1 */
        RP_ARRAY,     /* *N then N values */
        RP_NIL_ARRAY, /* *-1 */
};

/*
 * One value of a reply. The values of an array follow it, depth first: the first element of
 * v[i] (an array) is v[i + 1], and the one after an element v[j] is v[v[j].next].
 */
struct rp_value {
        enum rp_type type;
        const char *str;   /* STATUS, ERROR, BULK: into the buffer parsed, not NUL-ended */
        size_t len;
        int64_t integer;   /* INTEGER; ARRAY: how many elements */
        size_t next;       /* the index after this value and all its elements */
};

/*
 * rp_parse() - one reply at the start of @buf (@len bytes). Returns 0 with its values in
 * @v[0..*ret_n) (@max_values at most) and its length in bytes in *ret_len; -EAGAIN when the
 * bytes so far are the beginning of a reply, with *ret_len the bytes it needs at the least (more
 * than @len: wait for that many before trying again); -EBADMSG when it is not RESP2 or is over
 * a limit.
 */
int rp_parse(const char *buf, size_t len, struct rp_value *v, size_t max_values, size_t *ret_n,
             size_t *ret_len, char *err, size_t err_len);

/* rp_is_error() - whether @v is an error reply that starts with the word @word ("NOSCRIPT"). */
bool rp_is_error(const struct rp_value *v, const char *word);

/*
 * rp_parse_scan() - a SCAN reply: an array of the next cursor (a bulk string of digits) and an
 * array of bulk strings (the keys). Returns 0 with the cursor, the index of the first key in @v
 * and the number of keys; or -EBADMSG.
 */
int rp_parse_scan(const struct rp_value *v, size_t n, uint64_t *ret_cursor, size_t *ret_first,
                  size_t *ret_keys, char *err, size_t err_len);

/*
 * rp_parse_integers() - an array of @count integers (each -2^53..2^53, what a Lua number holds
 * exactly) into @out. Returns 0, or -EBADMSG.
 */
int rp_parse_integers(const struct rp_value *v, size_t n, size_t count, int64_t *out, char *err,
                      size_t err_len);

/* rp_parse_sha() - a SCRIPT LOAD reply: a bulk string of 40 hex digits into @out (41 bytes). */
int rp_parse_sha(const struct rp_value *v, size_t n, char *out, char *err, size_t err_len);

/*
 * rp_parse_config_u64() - a CONFIG GET reply for one parameter: an array of its name (@name)
 * and its value, a number up to @max. Returns 0, -ENOENT (an empty array: no such parameter),
 * or -EBADMSG.
 */
int rp_parse_config_u64(const struct rp_value *v, size_t n, const char *name, uint64_t max,
                        uint64_t *ret, char *err, size_t err_len);

/*
 * rp_info_field() - the value of "@name:VALUE\r\n" in an INFO reply's text: a pointer into
 * @text and its length. Returns 0, or -ENOENT.
 */
int rp_info_field(const char *text, size_t len, const char *name, const char **ret_value,
                  size_t *ret_len);
/* rp_info_u64() - the same, a number up to @max: 0, -ENOENT, or -EBADMSG (not a number). */
int rp_info_u64(const char *text, size_t len, const char *name, uint64_t max, uint64_t *ret);

/*
 * rp_command() - the command of @argc arguments (@argv[i], @lens[i] bytes each) as a RESP
 * array, written to @out when it fits in @out_max bytes. Returns the length it takes (write
 * again with a buffer that large when it is more than @out_max).
 */
size_t rp_command(char *out, size_t out_max, size_t argc, const char *const *argv,
                  const size_t *lens);
