/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memcached's text protocol as the memcached adapter reads it (see memcached-proto.h). Every
 * parser is strict about what it needs and lenient about what it does not: a metadump line
 * with an unknown key is read, one without a cas or with a key that does not decode is not.
 */

#include <errno.h>
#include <string.h>

#include "memcached-proto.h"

static bool word_is(const char *line, size_t len, const char *word)
{
        size_t n = strlen(word);

        return len >= n && memcmp(line, word, n) == 0 && (len == n || line[n] == ' ');
}

enum mc_reply mc_reply_kind(const char *line, size_t len)
{
        static const struct {
                const char *word;
                enum mc_reply kind;
        } words[] = {
                { "END", MC_REPLY_END },       { "STAT", MC_REPLY_STAT },
                { "ME", MC_REPLY_ME },         { "EN", MC_REPLY_EN },
                { "EX", MC_REPLY_EX },         { "NF", MC_REPLY_NF },
                { "HD", MC_REPLY_HD },         { "MN", MC_REPLY_MN },
                { "BUSY", MC_REPLY_BUSY },     { "NOTSTARTED", MC_REPLY_NOTSTARTED },
                { "BADCLASS", MC_REPLY_BADCLASS },
                { "ERROR", MC_REPLY_ERROR },   { "CLIENT_ERROR", MC_REPLY_ERROR },
                { "SERVER_ERROR", MC_REPLY_ERROR },
        };

        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (word_is(line, len, words[i].word))
                        return words[i].kind;
        return MC_REPLY_OTHER;
}

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int mc_uri_decode(const char *s, size_t len, uint8_t *out, size_t out_max, size_t *ret_len,
                  char *err, size_t err_len)
{
        size_t n = 0;

        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (n == out_max)
                        return ad_bad(err, err_len, "key longer than %zu bytes", out_max);
                if (c == '%') {
                        int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
                        int lo = i + 2 < len ? hex_digit(s[i + 2]) : -1;

                        if (hi < 0 || lo < 0)
                                return ad_bad(err, err_len, "bad %%-escape in the key");
                        out[n++] = (uint8_t)(hi << 4 | lo);
                        i += 2;
                        continue;
                }
                if (c <= ' ' || c >= 0x7f)
                        return ad_bad(err, err_len, "byte 0x%02x in the key, unescaped", c);
                out[n++] = c;
        }
        if (n == 0)
                return ad_bad(err, err_len, "empty key");
        *ret_len = n;
        return 0;
}

/* The next blank-separated token of [*p, end): its start and length; false at the end. */
static bool next_token(const char **p, const char *end, const char **ret, size_t *ret_len)
{
        const char *s = *p, *e;

        while (s < end && *s == ' ')
                s++;
        if (s == end)
                return false;
        e = memchr(s, ' ', (size_t)(end - s));
        if (!e)
                e = end;
        *ret = s;
        *ret_len = (size_t)(e - s);
        *p = e;
        return true;
}

/* The fields a metadump line and an ME line share, read from "k=v" tokens. */
struct fields {
        bool has_la, has_cas, has_fetch, has_cls;
        uint64_t la, cas, cls, size;
        bool fetched;
};

/* Read one "k=v" token into @f; @key_out/@key_len receive "key=" (NULL: "key" not allowed). */
static int field(struct fields *f, const char *t, size_t n, const char **key_out, size_t *key_len,
                 char *err, size_t err_len)
{
        const char *eq = memchr(t, '=', n), *v;
        size_t kl, vl;
        int r;

        if (!eq || eq == t)
                return ad_bad(err, err_len, "a field without a name=value form");
        kl = (size_t)(eq - t);
        v = eq + 1;
        vl = n - kl - 1;
#define IS(name) (kl == sizeof(name) - 1 && memcmp(t, name, kl) == 0)
        if (IS("key")) {
                if (!key_out)
                        return ad_bad(err, err_len, "unexpected key field");
                if (*key_out)
                        return ad_bad(err, err_len, "two key fields");
                *key_out = v;
                *key_len = vl;
                return 0;
        }
        if (IS("la")) {
                if (f->has_la)
                        return ad_bad(err, err_len, "two la fields");
                r = ad_parse_u64(v, vl, UINT32_MAX, &f->la);
                if (r < 0)
                        return ad_bad(err, err_len, "la is not a time in seconds");
                f->has_la = true;
        } else if (IS("cas")) {
                if (f->has_cas)
                        return ad_bad(err, err_len, "two cas fields");
                if (ad_parse_u64(v, vl, UINT64_MAX, &f->cas) < 0)
                        return ad_bad(err, err_len, "cas is not a 64-bit number");
                f->has_cas = true;
        } else if (IS("fetch")) {
                if (f->has_fetch)
                        return ad_bad(err, err_len, "two fetch fields");
                if (vl == 3 && memcmp(v, "yes", 3) == 0)
                        f->fetched = true;
                else if (vl == 2 && memcmp(v, "no", 2) == 0)
                        f->fetched = false;
                else
                        return ad_bad(err, err_len, "fetch is neither yes nor no");
                f->has_fetch = true;
        } else if (IS("cls")) {
                if (f->has_cls)
                        return ad_bad(err, err_len, "two cls fields");
                if (ad_parse_u64(v, vl, MC_CLASSES - 1, &f->cls) < 0)
                        return ad_bad(err, err_len, "cls is not a slab class (0..%d)",
                                      MC_CLASSES - 1);
                f->has_cls = true;
        } else if (IS("size")) {
                if (ad_parse_u64(v, vl, UINT32_MAX, &f->size) < 0)
                        return ad_bad(err, err_len, "size is not a 32-bit number");
        }
        /* exp, flags, ext_page, ext_offset and keys to come: not needed. */
#undef IS
        return 0;
}

static int fields_complete(const struct fields *f, char *err, size_t err_len)
{
        if (!f->has_la)
                return ad_bad(err, err_len, "no la field");
        if (!f->has_cas)
                return ad_bad(err, err_len, "no cas field");
        if (!f->has_fetch)
                return ad_bad(err, err_len, "no fetch field");
        if (!f->has_cls)
                return ad_bad(err, err_len, "no cls field");
        return 0;
}

int mc_parse_dump_line(const char *line, size_t len, struct mc_dump_entry *ret, char *err,
                       size_t err_len)
{
        const char *p = line, *end = line + len, *t, *key = NULL;
        struct fields f = { 0 };
        size_t n, key_len = 0;
        int r;

        if (len == 0)
                return ad_bad(err, err_len, "empty line");
        if (len < 4 || memcmp(line, "key=", 4) != 0)
                return ad_bad(err, err_len, "not a metadump line (no key= first)");
        while (next_token(&p, end, &t, &n)) {
                r = field(&f, t, n, &key, &key_len, err, err_len);
                if (r < 0)
                        return r;
        }
        if (!key)
                return ad_bad(err, err_len, "no key field");
        r = fields_complete(&f, err, err_len);
        if (r < 0)
                return r;
        r = mc_uri_decode(key, key_len, ret->key, MC_KEY_MAX, &ret->key_len, err, err_len);
        if (r < 0)
                return r;
        ret->cas = f.cas;
        ret->la = (uint32_t)f.la;
        ret->size = (uint32_t)f.size;
        ret->cls = (uint8_t)f.cls;
        ret->fetched = f.fetched;
        return 0;
}

/* The last occurrence of @needle in [s, s + len). */
static const char *memrmem(const char *s, size_t len, const char *needle)
{
        size_t n = strlen(needle);

        for (size_t i = len; i >= n; i--)
                if (memcmp(s + i - n, needle, n) == 0)
                        return s + i - n;
        return NULL;
}

int mc_parse_meta(const char *line, size_t len, struct mc_meta *ret, char *err, size_t err_len)
{
        const char *p, *end = line + len, *t;
        struct fields f = { 0 };
        size_t n;
        int r;

        if (len < 4 || memcmp(line, "ME ", 3) != 0)
                return ad_bad(err, err_len, "not a meta debug reply");
        p = memrmem(line + 3, len - 3, " exp=");
        if (!p || p == line + 3)
                return ad_bad(err, err_len, "a meta debug reply without exp=");
        while (next_token(&p, end, &t, &n)) {
                r = field(&f, t, n, NULL, NULL, err, err_len);
                if (r < 0)
                        return r;
        }
        r = fields_complete(&f, err, err_len);
        if (r < 0)
                return r;
        ret->cas = f.cas;
        ret->idle_sec = (uint32_t)f.la;
        ret->cls = (uint8_t)f.cls;
        ret->fetched = f.fetched;
        return 0;
}

int mc_parse_stat(const char *line, size_t len, const char **ret_name, size_t *ret_name_len,
                  const char **ret_value, size_t *ret_value_len)
{
        const char *name, *sp;

        if (len < 6 || memcmp(line, "STAT ", 5) != 0)
                return -EBADMSG;
        name = line + 5;
        sp = memchr(name, ' ', len - 5);
        if (sp == name)
                return -EBADMSG;
        *ret_name = name;
        if (!sp) {
                /* "STAT name" alone: an empty value. */
                *ret_name_len = len - 5;
                *ret_value = line + len;
                *ret_value_len = 0;
                return 0;
        }
        *ret_name_len = (size_t)(sp - name);
        *ret_value = sp + 1;
        *ret_value_len = len - 5 - *ret_name_len - 1;
        return 0;
}

static bool key_byte_plain(uint8_t c)
{
        return (c > ' ' && c < 0x7f) || c >= 0x80;
}

int mc_key_token(const uint8_t *key, size_t key_len, char *out, bool *ret_base64)
{
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        bool plain = key_len > 0;
        size_t n = 0;

        for (size_t i = 0; i < key_len && plain; i++)
                plain = key_byte_plain(key[i]);
        if (plain) {
                if (key_len > MC_KEY_MAX)
                        return -E2BIG;
                memcpy(out, key, key_len);
                out[key_len] = '\0';
                *ret_base64 = false;
                return (int)key_len;
        }
        if ((key_len + 2) / 3 * 4 > MC_KEY_MAX)
                return -E2BIG;
        for (size_t i = 0; i < key_len; i += 3) {
                uint32_t v = (uint32_t)key[i] << 16;

                if (i + 1 < key_len)
                        v |= (uint32_t)key[i + 1] << 8;
                if (i + 2 < key_len)
                        v |= key[i + 2];
                out[n++] = b64[v >> 18 & 63];
                out[n++] = b64[v >> 12 & 63];
                out[n++] = i + 1 < key_len ? b64[v >> 6 & 63] : '=';
                out[n++] = i + 2 < key_len ? b64[v & 63] : '=';
        }
        out[n] = '\0';
        *ret_base64 = true;
        return (int)n;
}

int mc_uri_encode(const uint8_t *key, size_t key_len, char *out, size_t out_max)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = 0;

        for (size_t i = 0; i < key_len; i++) {
                uint8_t c = key[i];
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                             c == '~';

                if (n + (plain ? 1 : 3) >= out_max)
                        return -E2BIG;
                if (plain) {
                        out[n++] = (char)c;
                } else {
                        out[n++] = '%';
                        out[n++] = hex[c >> 4];
                        out[n++] = hex[c & 15];
                }
        }
        if (n >= out_max)
                return -E2BIG;
        out[n] = '\0';
        return (int)n;
}
