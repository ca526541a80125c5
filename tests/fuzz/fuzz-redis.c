/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the redis adapter's RESP2 parsers (lib/adapters/redis-proto.c): what a
 * Redis server, or anything listening where one was expected, sends the daemon.
 *
 * Input: a server's byte stream, read as the adapter reads it: one reply after another from
 * the start, each handed to every decoder, until the bytes run out or are not RESP2.
 *
 * Checked, besides what the sanitizers catch:
 *   - rp_parse() answers 0, -EAGAIN or -EBADMSG; a refusal always says why; -EAGAIN asks for
 *     more bytes than it had, and the same bytes with the rest cut off again ask for more;
 *   - a reply read is inside its bytes: every string within them, the array links (next)
 *     consistent, no more values than allowed, and written back as RESP (rp_command() for the
 *     arrays of bulk strings) it reads back the same;
 *   - the decoders answer 0 or a negative errno, and what they give is what the values say.
 * A failed check prints why and aborts, so that libFuzzer keeps the input.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/adapters/redis-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *buf, size_t len)
{
        char ex[AD_EXCERPT_BUF];

        fprintf(stderr, "fuzz-redis: %s: \"%s\"\n", what, ad_excerpt(buf, len, ex));
        abort();
}

static struct rp_value values[RP_VALUES_MAX], again[RP_VALUES_MAX];

/* Every value's strings inside the reply's bytes, and the links of arrays consistent. */
static void check_values(const char *buf, size_t len, const struct rp_value *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (v[i].next <= i || v[i].next > n)
                        fail("a link out of order", buf, len);
                switch (v[i].type) {
                case RP_STATUS:
                case RP_ERROR:
                case RP_BULK:
                        if (v[i].str < buf || v[i].str + v[i].len > buf + len)
                                fail("a string outside the reply", buf, len);
                        if (v[i].next != i + 1)
                                fail("a scalar with elements", buf, len);
                        break;
                case RP_ARRAY: {
                        size_t j = i + 1;

                        for (int64_t k = 0; k < v[i].integer; k++) {
                                if (j >= n)
                                        fail("an array past the reply", buf, len);
                                j = v[j].next;
                        }
                        if (j != v[i].next)
                                fail("an array's link is not after its elements", buf, len);
                        break;
                }
                default:
                        if (v[i].next != i + 1)
                                fail("a scalar with elements", buf, len);
                        break;
                }
        }
        if (v[0].next != n)
                fail("the reply is not one value", buf, len);
}

/* An array of bulk strings written back with rp_command() reads back the same. */
static void check_round_trip(const char *buf, size_t len, const struct rp_value *v, size_t n)
{
        const char *argv[RP_VALUES_MAX];
        size_t lens[RP_VALUES_MAX], out_len, m, used;
        char err[RP_ERR_MAX] = "", *out;

        if (v[0].type != RP_ARRAY || v[0].integer < 1 || (size_t)v[0].integer + 1 != n)
                return;
        for (size_t i = 1; i < n; i++) {
                if (v[i].type != RP_BULK)
                        return;
                argv[i - 1] = v[i].str;
                lens[i - 1] = v[i].len;
        }
        out_len = rp_command(NULL, 0, n - 1, argv, lens);
        out = malloc(out_len);
        if (!out || rp_command(out, out_len, n - 1, argv, lens) != out_len)
                fail("rp_command() wrote another length", buf, len);
        if (rp_parse(out, out_len, again, RP_VALUES_MAX, &m, &used, err, sizeof(err)) != 0 ||
            m != n || used != out_len)
                fail("a command written does not read back", buf, len);
        for (size_t i = 1; i < n; i++)
                if (again[i].len != v[i].len || memcmp(again[i].str, v[i].str, v[i].len) != 0)
                        fail("a command written reads back other bytes", buf, len);
        free(out);
}

static void check_decoders(const char *buf, size_t len, const struct rp_value *v, size_t n)
{
        char err[RP_ERR_MAX] = "", sha[RP_SHA_LEN + 1];
        int64_t ints[RP_VALUES_MAX];
        uint64_t cursor, u;
        size_t first, keys;
        int r;

        r = rp_parse_scan(v, n, &cursor, &first, &keys, err, sizeof(err));
        if (r == 0) {
                if (first + keys != n)
                        fail("SCAN's keys past the reply", buf, len);
                for (size_t i = first; i < first + keys; i++)
                        if (v[i].type != RP_BULK)
                                fail("a SCAN key that is no bulk string", buf, len);
        } else if (r != -EBADMSG || !err[0]) {
                fail("rp_parse_scan() refused without a reason", buf, len);
        }
        if (n > 1) {
                err[0] = '\0';
                r = rp_parse_integers(v, n, n - 1, ints, err, sizeof(err));
                if (r != 0 && (r != -EBADMSG || !err[0]))
                        fail("rp_parse_integers() refused without a reason", buf, len);
                for (size_t i = 0; r == 0 && i < n - 1; i++)
                        if (ints[i] != v[i + 1].integer)
                                fail("an integer misread", buf, len);
        }
        err[0] = '\0';
        r = rp_parse_sha(v, n, sha, err, sizeof(err));
        if (r == 0 && strlen(sha) != RP_SHA_LEN)
                fail("a SHA1 of a bad length", buf, len);
        if (r != 0 && (r != -EBADMSG || !err[0]))
                fail("rp_parse_sha() refused without a reason", buf, len);
        err[0] = '\0';
        r = rp_parse_config_u64(v, n, "lfu-decay-time", UINT32_MAX, &u, err, sizeof(err));
        if (r != 0 && r != -ENOENT && (r != -EBADMSG || !err[0]))
                fail("rp_parse_config_u64() refused without a reason", buf, len);
        if (v[0].type == RP_BULK) {
                const char *f;
                size_t fl;

                /* INFO's fields: each value within the text. */
                static const char *const names[] = { "used_memory", "lru_clock", "run_id",
                                                     "maxmemory_policy", "total_forks", "" };

                for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                        if (rp_info_field(v[0].str, v[0].len, names[i], &f, &fl) == 0 &&
                            (f < v[0].str || f + fl > v[0].str + v[0].len))
                                fail("an INFO field outside the text", buf, len);
                        r = rp_info_u64(v[0].str, v[0].len, names[i], UINT64_MAX, &u);
                        if (r != 0 && r != -ENOENT && r != -EBADMSG)
                                fail("rp_info_u64() answered another error", buf, len);
                }
        }
        (void)rp_is_error(v, "NOSCRIPT");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        size_t pos = 0;

        while (pos < size) {
                /* A copy of its own: ASan sees any read past the bytes. */
                size_t len = size - pos, n = 0, used = 0, need = 0, m;
                char *buf = malloc(len), err[RP_ERR_MAX] = "";
                int r;

                if (!buf)
                        abort();
                memcpy(buf, data + pos, len);
                r = rp_parse(buf, len, values, RP_VALUES_MAX, &n, &used, err, sizeof(err));
                if (r == -EAGAIN) {
                        need = used;
                        if (need <= len)
                                fail("-EAGAIN without asking for more bytes", buf, len);
                        free(buf);
                        break;
                }
                if (r == -EBADMSG) {
                        if (!err[0] || strlen(err) >= RP_ERR_MAX)
                                fail("a refusal without a reason", buf, len);
                        free(buf);
                        break;
                }
                if (r != 0 || n == 0 || n > RP_VALUES_MAX || used == 0 || used > len)
                        fail("rp_parse() answered out of bounds", buf, len);
                check_values(buf, used, values, n);
                /* The same reply cut short is only the beginning of one. */
                if (used > 1) {
                        r = rp_parse(buf, used - 1, again, RP_VALUES_MAX, &m, &need, err,
                                     sizeof(err));
                        if (r != -EAGAIN || need <= used - 1)
                                fail("a reply cut short is not said to be incomplete", buf, used);
                }
                check_round_trip(buf, used, values, n);
                check_decoders(buf, used, values, n);
                free(buf);
                pos += used;
        }
        return 0;
}
