/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memcached's text protocol, as far as the memcached adapter speaks it: the lines of
 * `lru_crawler metadump`, the replies to `stats`, `me` (meta debug), `md` (meta delete) and
 * `mn` (meta no-op), and the key of a command. Pure functions over one line (without its
 * "\n" or "\r\n"), no I/O, no allocation: the adapter (memcached.c), its tests and its
 * libFuzzer target (tests/fuzz/fuzz-memcached.c) call the same code.
 *
 * Everything that comes from the server is checked as untrusted input: each parser returns 0,
 * or -EBADMSG with the reason in @err (what was wrong, not the line itself: the caller quotes
 * an excerpt with ad_excerpt()).
 *
 * Protocol facts, checked against memcached 1.6.18 (doc/protocol.txt, crawler.c,
 * proto_text.c): a metadump line is "key=K exp=E la=LA cas=C fetch=yes|no cls=N size=S" (newer
 * servers add keys, and a trailing blank) ending in "\n", the dump ends with "END\r\n"; K is
 * URI-encoded (every byte but [A-Za-z0-9._~-] as %XX); LA is the absolute Unix time of the
 * last access, to the second. "me K" answers "ME K exp=E la=L cas=C fetch=F cls=N size=S" with
 * L the seconds since the last access, or "EN". "md K C<cas> O<n> q" answers nothing when
 * deleted, "EX O<n>" when the CAS differs, "NF O<n>" when the item is gone. Keys are at most
 * 250 bytes (KEY_MAX_LENGTH), and a command's key token too, base64 or not.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-text.h" /* ad_parse_u64(), ad_excerpt() */

#define MC_KEY_MAX 250       /* bytes of a key, and of a key token in a command */
#define MC_LINE_MAX 4096     /* bytes of one reply line, "\n" excluded: longer is garbage */
#define MC_CLASSES 64        /* slab classes (MAX_NUMBER_OF_SLAB_CLASSES) */
#define MC_ERR_MAX 160       /* bytes of a parser's reason */

/* One item of a metadump. */
struct mc_dump_entry {
        uint8_t key[MC_KEY_MAX]; /* decoded: the key's bytes as stored */
        size_t key_len;          /* 1..MC_KEY_MAX */
        uint64_t cas;
        uint32_t la;             /* last access, Unix seconds */
        uint32_t size;           /* bytes memcached spends on the item (0 when not given) */
        uint8_t cls;             /* slab class, < MC_CLASSES */
        bool fetched;
};

/* An item as `me` shows it now. */
struct mc_meta {
        uint64_t cas;
        uint32_t idle_sec;       /* seconds since the last access ("la" of `me`) */
        uint8_t cls;
        bool fetched;
};

/* What a reply line is; the adapter decides whether it was expected. */
enum mc_reply {
        MC_REPLY_END,            /* "END": end of stats or of a dump */
        MC_REPLY_STAT,           /* "STAT name value" */
        MC_REPLY_ME,             /* "ME key ...": mc_parse_meta() reads it */
        MC_REPLY_EN,             /* "EN": `me` found nothing */
        MC_REPLY_EX,             /* "EX ...": CAS differs, nothing deleted */
        MC_REPLY_NF,             /* "NF ...": nothing to delete */
        MC_REPLY_HD,             /* "HD ...": done (only without q) */
        MC_REPLY_MN,             /* "MN": the no-op fence */
        MC_REPLY_BUSY,           /* "BUSY ...": the LRU crawler is busy */
        MC_REPLY_NOTSTARTED,     /* "NOTSTARTED ...": nothing to crawl (an empty server) */
        MC_REPLY_BADCLASS,       /* "BADCLASS ...": a crawl of what the server does not know */
        MC_REPLY_ERROR,          /* "ERROR", "CLIENT_ERROR ...", "SERVER_ERROR ..." */
        MC_REPLY_OTHER,          /* anything else: a metadump line, or garbage */
};

/* mc_reply_kind() - classify one reply line by its first word. */
enum mc_reply mc_reply_kind(const char *line, size_t len);

/*
 * mc_uri_decode() - decode @len bytes of URI-encoding (%XX, any case; every other byte
 * printable ASCII but blank and '%') into @out (at most @out_max bytes). Returns 0 and the
 * length in *ret_len (at least 1), or -EBADMSG.
 */
int mc_uri_decode(const char *s, size_t len, uint8_t *out, size_t out_max, size_t *ret_len,
                  char *err, size_t err_len);

/*
 * mc_parse_dump_line() - one metadump line: key, la, cas, fetch and cls are required, exp
 * and size read when present, other keys ignored (the protocol says there will be more).
 * Returns 0 and the entry, or -EBADMSG.
 */
int mc_parse_dump_line(const char *line, size_t len, struct mc_dump_entry *ret, char *err,
                       size_t err_len);

/*
 * mc_parse_meta() - an "ME key exp=.. la=.. cas=.. fetch=.. cls=.. size=.." line. The key is
 * skipped (it may hold anything, even " exp=": the fields are taken after the last one).
 * Returns 0 and the fields, or -EBADMSG.
 */
int mc_parse_meta(const char *line, size_t len, struct mc_meta *ret, char *err, size_t err_len);

/*
 * mc_parse_stat() - "STAT name value": pointers into @line for the name and the value (the
 * rest of the line, empty when there is none), with their lengths. Returns 0, or -EBADMSG.
 */
int mc_parse_stat(const char *line, size_t len, const char **ret_name, size_t *ret_name_len,
                  const char **ret_value, size_t *ret_value_len);

/*
 * mc_key_token() - the key as a command token into @out (MC_KEY_MAX + 1 bytes, NUL-ended):
 * the bytes themselves when each is a graphic character or above 0x7f (memcached splits
 * commands at blanks and ends them at "\n"), else base64, in which case the command needs the
 * "b" flag (*ret_base64). Returns the token's length, or -E2BIG when the base64 form is longer
 * than a key may be (a binary key over 186 bytes cannot be named in a text command).
 */
int mc_key_token(const uint8_t *key, size_t key_len, char *out, bool *ret_base64);

/*
 * mc_uri_encode() - @key as memcached's metadump writes it (every byte but [A-Za-z0-9._~-]
 * as %XX) into @out, NUL-ended. Returns the length, or -E2BIG when @out_max is too small.
 * For tests and the fuzz target: the adapter only decodes.
 */
int mc_uri_encode(const uint8_t *key, size_t key_len, char *out, size_t out_max);
