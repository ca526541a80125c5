/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the memcached adapter's protocol parsers (lib/adapters/memcached-proto.c):
 * what a memcached server, or anything listening where one was expected, sends the daemon.
 *
 * Input: a server's byte stream, cut into lines at "\n" with a final "\r" dropped and lines
 * over MC_LINE_MAX skipped, as the adapter reads it. Every line goes to every parser.
 *
 * Checked, besides what the sanitizers catch:
 *   - each parser answers 0 or -EBADMSG, and a refusal always says why;
 *   - a metadump line read is well formed (a key of 1..250 bytes, a slab class under 64), and
 *     the entry written back as memcached writes it reads back the same;
 *   - a key's command token is at most 250 bytes; a plain one is the key itself, of bytes a
 *     command can carry; a base64 one decodes back to the key;
 *   - URI decoding what was encoded gives the bytes back;
 *   - a stat's name and value lie inside the line; an excerpt is short and printable.
 * A failed check prints why and aborts, so that libFuzzer keeps the input.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/adapters/memcached-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *line, size_t len)
{
        char ex[AD_EXCERPT_BUF];

        fprintf(stderr, "fuzz-memcached: %s: \"%s\"\n", what, ad_excerpt(line, len, ex));
        abort();
}

static void check_refusal(int r, const char *err, const char *line, size_t len)
{
        if (r != 0 && r != -EBADMSG)
                fail("a parser answered neither 0 nor -EBADMSG", line, len);
        if (r < 0 && (!err[0] || strlen(err) >= MC_ERR_MAX))
                fail("a refusal without a reason", line, len);
}

static int b64_value(char c)
{
        static const char b64[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *p = c ? strchr(b64, c) : NULL;

        return p ? (int)(p - b64) : -1;
}

static void check_token(const uint8_t *key, size_t key_len, const char *line, size_t len)
{
        char token[MC_KEY_MAX + 1];
        uint8_t back[MC_KEY_MAX];
        size_t n = 0, tl;
        bool b64;
        int r = mc_key_token(key, key_len, token, &b64);

        if (r == -E2BIG) {
                bool plain = true;

                for (size_t i = 0; i < key_len; i++)
                        plain = plain && (key[i] > ' ' && key[i] != 0x7f);
                /* Only a key that needs base64, and whose base64 is longer than a key. */
                if (plain || (key_len + 2) / 3 * 4 <= MC_KEY_MAX)
                        fail("a key refused a token it could have", line, len);
                return;
        }
        if (r < 0 || r > MC_KEY_MAX || (size_t)r != strlen(token))
                fail("a key token of a bad length", line, len);
        tl = (size_t)r;
        if (!b64) {
                if (tl != key_len || memcmp(token, key, key_len) != 0)
                        fail("a plain token that is not the key", line, len);
                for (size_t i = 0; i < tl; i++)
                        if ((uint8_t)token[i] <= ' ' || (uint8_t)token[i] == 0x7f)
                                fail("a plain token with a byte no command can carry", line, len);
                return;
        }
        if (tl % 4)
                fail("base64 of a bad length", line, len);
        for (size_t i = 0; i < tl; i += 4) {
                int v[4];

                for (int j = 0; j < 4; j++)
                        v[j] = token[i + j] == '=' ? 0 : b64_value(token[i + j]);
                if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
                        fail("not base64", line, len);
                back[n++] = (uint8_t)(v[0] << 2 | v[1] >> 4);
                if (token[i + 2] != '=')
                        back[n++] = (uint8_t)(v[1] << 4 | v[2] >> 2);
                if (token[i + 3] != '=')
                        back[n++] = (uint8_t)(v[2] << 6 | v[3]);
        }
        if (n != key_len || memcmp(back, key, key_len) != 0)
                fail("base64 that does not decode to the key", line, len);
}

static void check_dump_line(const char *line, size_t len)
{
        struct mc_dump_entry e, again;
        char err[MC_ERR_MAX] = "", enc[3 * MC_KEY_MAX + 1], rebuilt[1024];
        int r = mc_parse_dump_line(line, len, &e, err, sizeof(err));
        int n;

        check_refusal(r, err, line, len);
        if (r < 0)
                return;
        if (e.key_len < 1 || e.key_len > MC_KEY_MAX || e.cls >= MC_CLASSES)
                fail("a dump entry out of bounds", line, len);
        if (mc_uri_encode(e.key, e.key_len, enc, sizeof(enc)) < 0)
                fail("a key that cannot be encoded back", line, len);
        n = snprintf(rebuilt, sizeof(rebuilt),
                     "key=%s exp=-1 la=%" PRIu32 " cas=%" PRIu64 " fetch=%s cls=%u size=%" PRIu32,
                     enc, e.la, e.cas, e.fetched ? "yes" : "no", e.cls, e.size);
        if (mc_parse_dump_line(rebuilt, (size_t)n, &again, err, sizeof(err)) != 0 ||
            again.key_len != e.key_len || memcmp(again.key, e.key, e.key_len) != 0 ||
            again.la != e.la || again.cas != e.cas || again.fetched != e.fetched ||
            again.cls != e.cls || again.size != e.size)
                fail("a dump entry that does not read back the same", line, len);
        check_token(e.key, e.key_len, line, len);
}

static void check_uri(const char *line, size_t len)
{
        uint8_t key[MC_KEY_MAX], back[MC_KEY_MAX];
        char err[MC_ERR_MAX] = "", enc[3 * MC_KEY_MAX + 1];
        size_t n, m;
        int r = mc_uri_decode(line, len, key, sizeof(key), &n, err, sizeof(err));

        check_refusal(r, err, line, len);
        if (r < 0)
                return;
        if (n < 1 || n > sizeof(key))
                fail("a decoded key out of bounds", line, len);
        r = mc_uri_encode(key, n, enc, sizeof(enc));
        if (r < 0 || mc_uri_decode(enc, (size_t)r, back, sizeof(back), &m, err, sizeof(err)) != 0 ||
            m != n || memcmp(back, key, n) != 0)
                fail("URI encoding does not round-trip", line, len);
        check_token(key, n, line, len);
}

static void check_line(const char *line, size_t len)
{
        char err[MC_ERR_MAX] = "", ex[AD_EXCERPT_BUF];
        const char *name, *value;
        size_t nl, vl;
        struct mc_meta meta;
        enum mc_reply kind = mc_reply_kind(line, len);
        int r;

        if ((int)kind < MC_REPLY_END || kind > MC_REPLY_OTHER)
                fail("a reply of no kind", line, len);
        check_dump_line(line, len);
        check_uri(line, len);

        r = mc_parse_meta(line, len, &meta, err, sizeof(err));
        check_refusal(r, err, line, len);
        if (r == 0 && (kind != MC_REPLY_ME || meta.cls >= MC_CLASSES))
                fail("a meta reply misread", line, len);

        r = mc_parse_stat(line, len, &name, &nl, &value, &vl);
        if (r != 0 && r != -EBADMSG)
                fail("mc_parse_stat answered neither 0 nor -EBADMSG", line, len);
        if (r == 0 && (kind != MC_REPLY_STAT || nl == 0 || name < line || value < name + nl ||
                       value + vl > line + len || name + nl > line + len))
                fail("a stat outside its line", line, len);

        ad_excerpt(line, len, ex);
        if (strlen(ex) > AD_EXCERPT_MAX + 3)
                fail("an excerpt too long", line, len);
        for (const char *p = ex; *p; p++)
                if (*p < ' ' || *p > '~')
                        fail("an excerpt not printable", line, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *p = (const char *)data, *end = p + size;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t)(end - p));
                size_t len = (size_t)((eol ? eol : end) - p);
                char *line;

                if (len > 0 && p[len - 1] == '\r')
                        len--;
                if (len <= MC_LINE_MAX) {
                        /* A copy of its own, unterminated: ASan sees any read past the line. */
                        line = malloc(len ? len : 1);
                        if (!line)
                                abort();
                        memcpy(line, p, len);
                        check_line(line, len);
                        free(line);
                }
                if (!eol)
                        break;
                p = eol + 1;
        }
        return 0;
}
