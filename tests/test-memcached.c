/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memcached adapter (lib/adapters/memcached.c) against a real memcached, started by each
 * test on a free port of 127.0.0.1 (or a unix socket) and killed after:
 *
 *   - its protocol parsers, alone (memcached-proto.c);
 *   - the adapter loaded into this process under a host of the test's own, which rotates when
 *     the test says, so that "after the right number of rotations" is exact, and a client can
 *     act between the dump and the aging;
 *   - the real cacheaged with --bus none: the adapter beside a dcache cache, a delete held by a
 *     proxy while the test rewrites the item, memcached killed and started again, a garbage
 *     server.
 *
 * The harness is in memcached-harness.{c,h}. Environment (tests/meson.build): CACHEAGED,
 * CA_ADAPTER_DIR (memcached.so, dcache.so).
 */

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "memcached-harness.h"
#include "memcached-proto.h"
#include "test-util.h"

/* ---- the parsers -------------------------------------------------------------------------- */

static int dump_line(const char *line, struct mc_dump_entry *e, char *err)
{
        return mc_parse_dump_line(line, strlen(line), e, err, MC_ERR_MAX);
}

Test(memcached, dump_line_as_1_6_18_writes_it)
{
        struct mc_dump_entry e;
        char err[MC_ERR_MAX];

        cr_assert_eq(dump_line("key=a%2520b exp=-1 la=1796299706 cas=17 fetch=no cls=1 size=65",
                               &e, err), 0, "%s", err);
        cr_expect_eq(e.key_len, 5);
        cr_expect_eq(memcmp(e.key, "a%20b", 5), 0);
        cr_expect_eq(e.la, 1796299706u);
        cr_expect_eq(e.cas, 17);
        cr_expect(!e.fetched);
        cr_expect_eq(e.cls, 1);
        cr_expect_eq(e.size, 65);

        /* Newer servers: more keys, a trailing blank; and binary bytes, escaped. */
        cr_assert_eq(dump_line("key=bin%01%20key exp=1800000000 la=5 cas=18446744073709551615 "
                               "fetch=yes cls=63 size=68 flags=0 ext_page=1 ", &e, err), 0,
                     "%s", err);
        cr_expect_eq(e.key_len, 8);
        cr_expect_eq(memcmp(e.key, "bin\x01 key", 8), 0);
        cr_expect_eq(e.cas, UINT64_MAX);
        cr_expect(e.fetched);
        cr_expect_eq(e.cls, 63);
}

Test(memcached, dump_line_refused)
{
        static const struct {
                const char *line, *reason;
        } bad[] = {
                { "", "empty line" },
                { "hello world", "no key= first" },
                { "key=a exp=-1 la=1 fetch=no cls=1", "no cas field" },
                { "key=a la=1 cas=1 fetch=no", "no cls field" },
                { "key=a la=x cas=1 fetch=no cls=1", "la is not a time" },
                { "key=a la=4294967296 cas=1 fetch=no cls=1", "la is not a time" },
                { "key=a la=1 cas=18446744073709551616 fetch=no cls=1", "cas is not" },
                { "key=a la=1 cas=1 fetch=maybe cls=1", "fetch is neither" },
                { "key=a la=1 cas=1 fetch=no cls=64", "cls is not a slab class" },
                { "key=a la=1 cas=1 cas=2 fetch=no cls=1", "two cas fields" },
                { "key=a key=b la=1 cas=1 fetch=no cls=1", "two key fields" },
                { "key=a%2 la=1 cas=1 fetch=no cls=1", "bad %-escape" },
                { "key=a%zz la=1 cas=1 fetch=no cls=1", "bad %-escape" },
                { "key= la=1 cas=1 fetch=no cls=1", "empty key" },
                { "key=a\tb la=1 cas=1 fetch=no cls=1", "byte 0x09" },
                { "key=a la=1 cas=1 fetch=no cls=1 =x", "without a name" },
                { "key=a la=1 cas=-1 fetch=no cls=1", "cas is not" },
        };
        struct mc_dump_entry e;
        char err[MC_ERR_MAX];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                err[0] = '\0';
                cr_expect_eq(dump_line(bad[i].line, &e, err), -EBADMSG, "%s", bad[i].line);
                cr_expect(strstr(err, bad[i].reason), "\"%s\": \"%s\", expected \"%s\"",
                          bad[i].line, err, bad[i].reason);
        }
}

/* A key is at most 250 bytes, however it is escaped. */
Test(memcached, dump_line_key_length)
{
        char line[1024], key[260];
        struct mc_dump_entry e;
        char err[MC_ERR_MAX];

        memset(key, 'k', sizeof(key));
        snprintf(line, sizeof(line), "key=%.*s la=1 cas=1 fetch=no cls=1", MC_KEY_MAX, key);
        cr_expect_eq(dump_line(line, &e, err), 0, "%s", err);
        cr_expect_eq(e.key_len, MC_KEY_MAX);
        snprintf(line, sizeof(line), "key=%.*s la=1 cas=1 fetch=no cls=1", MC_KEY_MAX + 1, key);
        cr_expect_eq(dump_line(line, &e, err), -EBADMSG);
        cr_expect(strstr(err, "longer than 250"), "%s", err);
}

/* Every byte goes through memcached's escaping and back. */
Test(memcached, uri_round_trip)
{
        uint8_t key[256], back[MC_KEY_MAX];
        char enc[3 * 256 + 1], err[MC_ERR_MAX];
        size_t n;

        for (size_t i = 0; i < 256; i++)
                key[i] = (uint8_t)i;
        for (size_t off = 0; off < 256; off += 125) {
                size_t len = off + 125 <= 256 ? 125 : 256 - off;
                int r = mc_uri_encode(key + off, len, enc, sizeof(enc));

                cr_assert(r > 0);
                cr_assert_eq(mc_uri_decode(enc, (size_t)r, back, sizeof(back), &n, err, sizeof(err)),
                             0, "%s", err);
                cr_assert_eq(n, len);
                cr_assert_eq(memcmp(back, key + off, len), 0);
        }
        cr_expect_eq(mc_uri_encode(key, 10, enc, 5), -E2BIG);
}

Test(memcached, key_token)
{
        char out[MC_KEY_MAX + 1];
        uint8_t bin[200];
        bool b64;

        cr_expect_eq(mc_key_token((const uint8_t *)"user:42", 7, out, &b64), 7);
        cr_expect_str_eq(out, "user:42");
        cr_expect(!b64);
        /* UTF-8 is sent as it is: memcached splits at blanks only. */
        cr_expect_eq(mc_key_token((const uint8_t *)"cl\xc3\xa9", 4, out, &b64), 4);
        cr_expect(!b64);
        /* A blank or a control byte: base64, with the b flag. */
        cr_expect_eq(mc_key_token((const uint8_t *)"bin\x01 key", 8, out, &b64), 12);
        cr_expect_str_eq(out, "YmluASBrZXk=");
        cr_expect(b64);
        cr_expect_eq(mc_key_token((const uint8_t *)"a b", 3, out, &b64), 4);
        cr_expect_str_eq(out, "YSBi");
        memset(bin, 0, sizeof(bin));
        /* 186 bytes are 248 in base64, the longest binary key a command can name; 187 are 252. */
        cr_expect_eq(mc_key_token(bin, 186, out, &b64), 248);
        cr_expect_eq(mc_key_token(bin, 187, out, &b64), -E2BIG);
}

Test(memcached, meta_reply)
{
        static const char ok[] = "ME a b exp=x la=0 cas=0 exp=-1 la=12 cas=99 fetch=yes cls=3 "
                                 "size=70";
        struct mc_meta m;
        char err[MC_ERR_MAX];

        /* A key may hold anything, even " exp=": the fields are the last ones. */
        cr_assert_eq(mc_parse_meta(ok, strlen(ok), &m, err, sizeof(err)), 0, "%s", err);
        cr_expect_eq(m.cas, 99);
        cr_expect_eq(m.idle_sec, 12);
        cr_expect(m.fetched);
        cr_expect_eq(m.cls, 3);
        cr_expect_eq(mc_parse_meta("ME k la=1", 10, &m, err, sizeof(err)), -EBADMSG);
        cr_expect_eq(mc_parse_meta("ME  exp=1 la=1 cas=1 fetch=no cls=1", 35, &m, err,
                                   sizeof(err)), -EBADMSG);
        cr_expect_eq(mc_parse_meta("EN", 2, &m, err, sizeof(err)), -EBADMSG);
}

Test(memcached, reply_kinds_and_stats)
{
        const char *name, *value;
        size_t nl, vl;

        cr_expect_eq(mc_reply_kind("END", 3), MC_REPLY_END);
        cr_expect_eq(mc_reply_kind("ENDX", 4), MC_REPLY_OTHER);
        cr_expect_eq(mc_reply_kind("EX O17", 6), MC_REPLY_EX);
        cr_expect_eq(mc_reply_kind("NF", 2), MC_REPLY_NF);
        cr_expect_eq(mc_reply_kind("MN", 2), MC_REPLY_MN);
        cr_expect_eq(mc_reply_kind("BUSY currently processing crawler request", 41), MC_REPLY_BUSY);
        cr_expect_eq(mc_reply_kind("CLIENT_ERROR bad command line format", 36), MC_REPLY_ERROR);
        cr_expect_eq(mc_reply_kind("key=a", 5), MC_REPLY_OTHER);
        cr_assert_eq(mc_parse_stat("STAT time 1700000000", 20, &name, &nl, &value, &vl), 0);
        cr_expect(nl == 4 && memcmp(name, "time", 4) == 0);
        cr_expect(vl == 10 && memcmp(value, "1700000000", 10) == 0);
        cr_assert_eq(mc_parse_stat("STAT empty", 10, &name, &nl, &value, &vl), 0);
        cr_expect(nl == 5 && vl == 0);
        cr_expect_eq(mc_parse_stat("STAT  x", 7, &name, &nl, &value, &vl), -EBADMSG);
}

Test(memcached, excerpt)
{
        char buf[AD_EXCERPT_BUF], line[200];

        cr_expect_str_eq(ad_excerpt("a\x01\xff\\", 4, buf), "a\\x01\\xff\\x5c");
        memset(line, 'x', sizeof(line));
        ad_excerpt(line, sizeof(line), buf);
        cr_expect_eq(strlen(buf), AD_EXCERPT_MAX + 3);
        cr_expect_str_eq(buf + AD_EXCERPT_MAX, "...");
}

/* ---- the adapter under the test's own host, against a real memcached ---------------------- */

static void set_keys(int fd, const char *prefix, int n)
{
        char key[64];

        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%s%d", prefix, i);
                mcc_set(fd, key, "value");
        }
}

static void fetch_keys(int fd, const char *prefix, int n)
{
        char key[64];

        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%s%d", prefix, i);
                cr_assert(mcc_get(fd, key, NULL), "%s", key);
        }
}

static int count_present(int fd, const char *prefix, int n)
{
        char key[64];
        int present = 0;

        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%s%d", prefix, i);
                present += mcc_exists(fd, key);
        }
        return present;
}

/* What most tests run: a real memcached, a client of it, and the adapter under our host. */
struct env {
        struct mcd m;
        struct host h;
        int fd;
};

static void env_start(struct env *e, bool on_unix, const char *const *opts)
{
        mcd_start(&e->m, on_unix, opts);
        e->fd = mcc_connect(&e->m);
}

/* The adapter on it, with the ages and one more key (@k NULL: none). */
static void env_host(struct env *e, uint32_t single_use_age, uint32_t max_age, const char *k,
                     const char *v)
{
        const char *keys[] = { "server", e->m.server, k, v, NULL };

        host_setup(&e->h, "memcached", single_use_age, max_age, keys);
}

static void env_stop(struct env *e)
{
        host_cleanup(&e->h);
        close(e->fd);
        mcd_cleanup(&e->m);
}

/*
 * Items set, half of them fetched: the first rotation deletes nothing (everything is new),
 * the second exactly the never-fetched ones; the fetched ones stay through max_age rotations
 * and go once idle past it.
 */
static void ages_exactly_the_unfetched(bool on_unix)
{
        struct env e;
        int rotations;

        env_start(&e, on_unix, NULL);
        set_keys(e.fd, "u", 10);
        set_keys(e.fd, "f", 10);
        fetch_keys(e.fd, "f", 10);
        env_host(&e, 2, 8, NULL, NULL);

        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 20);
        cr_expect_eq(host_stat(&e.h, "unfetched_items"), 10);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        cr_expect_eq(count_present(e.fd, "u", 10) + count_present(e.fd, "f", 10), 20);

        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 10, "%s", e.h.log);
        cr_expect_eq(count_present(e.fd, "u", 10), 0, "a never-fetched item stayed");
        cr_expect_eq(count_present(e.fd, "f", 10), 10, "a fetched item went");
        cr_expect_eq(host_stat(&e.h, "items"), 10);

        for (rotations = 3; rotations <= 8; rotations++)
                host_rotate(&e.h);
        cr_expect_eq(count_present(e.fd, "f", 10), 10, "a reused item went before max_age");
        cr_expect_eq(host_stat(&e.h, "deleted"), 10);

        /* Idle long enough by memcached's own clock (seconds), they go. */
        while (host_stat(&e.h, "deleted") < 20 && rotations < 200) {
                host_run_for(&e.h, 200);
                host_rotate(&e.h);
                rotations++;
        }
        cr_expect_eq(host_stat(&e.h, "deleted"), 20, "%s", e.h.log);
        cr_expect_eq(count_present(e.fd, "f", 10), 0);
        cr_expect_eq(host_stat(&e.h, "cas_conflicts"), 0);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

Test(memcached, ages_exactly_the_unfetched, .timeout = 120)
{
        ages_exactly_the_unfetched(false);
}

Test(memcached, ages_over_a_unix_socket, .timeout = 120)
{
        ages_exactly_the_unfetched(true);
}

/* A fetch between two dumps (fetch turning yes) is a use: the item is not single-use. */
Test(memcached, fetch_between_dumps_is_a_use)
{
        struct env e;

        env_start(&e, false, NULL);
        set_keys(e.fd, "k", 10);
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        fetch_keys(e.fd, "k", 5);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 5);
        cr_expect_eq(count_present(e.fd, "k", 5), 5, "a fetched item went");
        cr_expect_eq(count_present(e.fd, "k", 10), 5);
        env_stop(&e);
}

/* A rewritten item (another cas) is a new object: its single-use age starts again. */
Test(memcached, rewrite_is_a_new_object)
{
        struct env e;

        env_start(&e, false, NULL);
        mcc_set(e.fd, "a", "1");
        mcc_set(e.fd, "b", "1");
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        mcc_set(e.fd, "a", "2");
        host_rotate(&e.h);
        cr_expect(!mcc_exists(e.fd, "b"));
        cr_expect(mcc_exists(e.fd, "a"), "the rewritten item went with the old one's age");
        host_rotate(&e.h);
        cr_expect(!mcc_exists(e.fd, "a"), "the rewritten item, never fetched, stayed");
        cr_expect_eq(host_stat(&e.h, "deleted"), 2);
        env_stop(&e);
}

/*
 * Between the dump and the delete: an item rewritten, or fetched for the first time, is found
 * changed by the check ("me") and kept, as it now is; the one left alone goes.
 */
Test(memcached, changed_after_the_dump_survives)
{
        struct env e;
        char *v = NULL;

        env_start(&e, false, NULL);
        mcc_set(e.fd, "x", "old");
        mcc_set(e.fd, "y", "old");
        mcc_set(e.fd, "z", "old");
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        host_refresh(&e.h);          /* the dump that finds all three idle... */
        mcc_set(e.fd, "x", "new");   /* ...then x is rewritten and y read, before the aging */
        cr_assert(mcc_get(e.fd, "y", NULL));
        host_age(&e.h);
        cr_expect(mcc_get(e.fd, "x", &v), "the rewritten item was deleted");
        cr_expect_str_eq(v ? v : "", "new");
        cr_expect(mcc_exists(e.fd, "y"), "the item read after the dump was deleted");
        cr_expect(!mcc_exists(e.fd, "z"));
        cr_expect_eq(host_stat(&e.h, "changed"), 2);
        cr_expect_eq(host_stat(&e.h, "deleted"), 1);
        cr_expect_eq(host_stat(&e.h, "cas_conflicts"), 0);
        free(v);
        env_stop(&e);
}

static bool idle_at_least(int fd, const char *key, unsigned sec)
{
        char cmd[128], *r, *la;
        bool ok;

        snprintf(cmd, sizeof(cmd), "me %s\r\n", key);
        r = mcc_cmd(fd, cmd, "\r\n");
        la = strstr(r, " la=");
        ok = la && strtoul(la + 4, NULL, 10) >= sec;
        free(r);
        return ok;
}

/*
 * A reused item that fell due, read again after the dump: "me" shows an access since the
 * dump, so it stays (memcached's la moved; the dump could not know).
 */
Test(memcached, read_after_the_dump_survives, .timeout = 60)
{
        struct env e;
        uint64_t until;

        env_start(&e, false, NULL);
        mcc_set(e.fd, "r", "v");
        cr_assert(mcc_get(e.fd, "r", NULL));
        cr_assert(mcc_get(e.fd, "r", NULL));
        /* Long enough idle by memcached's clock that the dump sees it idle (seconds). */
        until = test_now_usec() + 20000000;
        while (!idle_at_least(e.fd, "r", 3) && test_now_usec() < until)
                usleep(100000);
        env_host(&e, 1, 1, NULL, NULL);
        /* Inserted; due at once: kept, the fetch seen at first sight is its second use. */
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        host_refresh(&e.h);        /* due again at this rotation, and idle as the dump sees it */
        cr_assert(mcc_get(e.fd, "r", NULL));
        /* memcached records the read when its LRU maintainer bumps the item: wait for that. */
        until = test_now_usec() + 10000000;
        while (idle_at_least(e.fd, "r", 1) && test_now_usec() < until)
                usleep(10000);
        host_age(&e.h);
        cr_expect(mcc_exists(e.fd, "r"), "an item read after the dump was deleted\n%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "maybe_active"), 1, "%s", e.h.log);
        env_stop(&e);
}

/* An item gone from the dump (deleted by a client, expired) is forgotten, never deleted. */
Test(memcached, vanished_items_are_forgotten)
{
        struct env e;
        char *r;

        env_start(&e, false, NULL);
        mcc_set(e.fd, "a", "1");
        mcc_set(e.fd, "b", "1");
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 2);
        r = mcc_cmd(e.fd, "delete a\r\n", "\r\n");
        cr_expect_str_eq(r, "DELETED\r\n");
        free(r);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 0);
        cr_expect_eq(host_stat(&e.h, "deleted"), 1, "only b was the adapter's to delete");
        cr_expect_eq(host_stat(&e.h, "gone"), 0, "a was asked about: it was no victim");
        env_stop(&e);
}

/*
 * rate: the dump and the checks take at least items / rate seconds (a lower bound only: a
 * loaded machine makes them slower, never faster), and what goes is the same as unpaced.
 */
Test(memcached, rate_paces_the_dump_and_the_checks, .timeout = 120)
{
        struct env e;
        uint64_t t0, refresh_usec, age_usec;

        env_start(&e, false, NULL);
        set_keys(e.fd, "u", 2000);
        set_keys(e.fd, "f", 10);
        fetch_keys(e.fd, "f", 10);
        env_host(&e, 2, 8, "rate", "1000");

        t0 = test_now_usec();
        host_refresh(&e.h);
        refresh_usec = test_now_usec() - t0;
        cr_expect_geq(refresh_usec, 1800000, "2,010 items dumped at 1,000/s in %" PRIu64 " us",
                      refresh_usec);
        host_age(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 2010);

        host_refresh(&e.h);
        t0 = test_now_usec();
        host_age(&e.h);
        age_usec = test_now_usec() - t0;
        cr_expect_geq(age_usec, 1800000, "2,000 victims checked at 1,000/s in %" PRIu64 " us",
                      age_usec);
        cr_expect_eq(host_stat(&e.h, "deleted"), 2000, "%s", e.h.log);
        cr_expect_eq(count_present(e.fd, "u", 2000), 0);
        cr_expect_eq(count_present(e.fd, "f", 10), 10);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/* The memory of forgotten items is used again for new ones: the pool does not grow. */
Test(memcached, forgotten_items_memory_is_reused, .timeout = 120)
{
        struct env e;
        uint64_t bytes;

        env_start(&e, false, NULL);
        set_keys(e.fd, "u", 3000);
        set_keys(e.fd, "a-much-longer-key-of-another-size-class-", 300);
        /* single_use_age 1: each rotation deletes what its dump found new. */
        env_host(&e, 1, 8, "rate", "0");
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 3300, "%s", e.h.log);
        bytes = host_stat(&e.h, "pool_bytes");
        cr_expect_gt(bytes, 3300 * 64, "%" PRIu64 " bytes for 3,300 items", bytes);
        host_rotate(&e.h); /* its sweep gives the deleted items back to the pool */
        set_keys(e.fd, "u", 3000);
        set_keys(e.fd, "a-much-longer-key-of-another-size-class-", 300);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 6600, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "pool_bytes"), bytes, "the pool grew from %" PRIu64, bytes);
        env_stop(&e);
}

/* Over max_items: the rest is not aged (never deleted), said once, and counted. */
Test(memcached, max_items)
{
        struct env e;

        env_start(&e, false, NULL);
        set_keys(e.fd, "k", 12);
        env_host(&e, 1, 8, "max_items", "5");
        host_rotate(&e.h);  /* 5 tracked, and deleted at once (single_use_age 1) */
        cr_expect_eq(host_stat(&e.h, "untracked_items"), 7);
        cr_expect_eq(host_stat(&e.h, "deleted"), 5);
        cr_expect_eq(count_present(e.fd, "k", 12), 7, "an untracked item was deleted");
        host_rotate(&e.h);  /* 5 of the 7 */
        host_rotate(&e.h);  /* the last 2: nothing untracked any more */
        cr_expect_eq(host_stat(&e.h, "deleted"), 12);
        cr_expect_eq(host_stat(&e.h, "untracked_items"), 0);
        cr_expect_eq(host_log_count(&e.h, "more than max_items (5)"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "every item of memcached at"), 1, "%s", e.h.log);
        env_stop(&e);
}

/* dry_run: the victims are checked and counted once each, and nothing is deleted. */
Test(memcached, dry_run_deletes_nothing)
{
        struct env e;

        env_start(&e, false, NULL);
        set_keys(e.fd, "k", 6);
        env_host(&e, 1, 2, "dry_run", "yes");
        for (int i = 0; i < 5; i++)
                host_rotate(&e.h);
        cr_expect_eq(count_present(e.fd, "k", 6), 6);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 6, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "dry run: would delete k"), 6);
        /* A condemned item rewritten is aged again, as new. */
        mcc_set(e.fd, "k0", "again");
        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 7);
        env_stop(&e);
}

/* Keys memcached escapes in its dump, UTF-8, and a binary key (deleted with the b flag). */
Test(memcached, odd_and_binary_keys)
{
        struct env e;
        char *r;

        env_start(&e, false, NULL);
        mcc_set(e.fd, "a%20b", "1");
        mcc_set(e.fd, "cl\xc3\xa9/\x7e+", "1");
        r = mcc_cmd(e.fd, "ms YmluASBrZXk= 1 b\r\nz\r\n", "\r\n"); /* "bin\x01 key" */
        cr_assert_str_eq(r, "HD\r\n");
        free(r);
        env_host(&e, 1, 8, NULL, NULL);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 3, "%s", e.h.log);
        cr_expect(!mcc_exists(e.fd, "a%20b"));
        cr_expect(!mcc_exists(e.fd, "cl\xc3\xa9/\x7e+"));
        r = mcc_cmd(e.fd, "me YmluASBrZXk= b\r\n", "\r\n");
        cr_expect_str_eq(r, "EN\r\n", "the binary key stayed: %s", r);
        free(r);
        env_stop(&e);
}

/*
 * Without the segmented LRU (-o no_lru_maintainer) memcached records a read at most once a
 * minute: a fetched item counts as used while its la is that young, and is never deleted here.
 */
Test(memcached, no_segmented_lru_keeps_reads_for_a_minute)
{
        const char *opts[] = { "-o", "no_lru_maintainer", NULL };
        struct env e;

        env_start(&e, false, opts);
        set_keys(e.fd, "u", 5);
        set_keys(e.fd, "f", 5);
        fetch_keys(e.fd, "f", 5);
        env_host(&e, 1, 1, NULL, NULL);
        for (int i = 0; i < 12; i++)
                host_rotate(&e.h);
        cr_expect_eq(count_present(e.fd, "u", 5), 0);
        cr_expect_eq(count_present(e.fd, "f", 5), 5, "a read item went within a minute\n%s", e.h.log);
        env_stop(&e);
}

/* memcached -C: no CAS, so no safe delete: said, and nothing goes. */
Test(memcached, no_cas_no_aging)
{
        const char *opts[] = { "-C", NULL };
        struct env e;

        env_start(&e, false, opts);
        set_keys(e.fd, "k", 4);
        env_host(&e, 1, 1, NULL, NULL);
        for (int i = 0; i < 3; i++)
                host_rotate(&e.h);
        cr_expect_eq(count_present(e.fd, "k", 4), 4);
        cr_expect_eq(host_stat(&e.h, "errors"), 3);
        cr_expect_eq(host_log_count(&e.h, "WARNING: memcached at"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "runs without CAS (-C)"), 3, "%s", e.h.log);
        env_stop(&e);
}

/*
 * Restarted, memcached counts cas values from 1 again: the same keys set in the same order
 * get the very cas values the adapter knew. It tells the new instance by its pid and start
 * time, and ages its items from the start.
 */
Test(memcached, restart_forgets_what_was_known)
{
        struct env e;
        uint64_t cas_before;

        env_start(&e, false, NULL);
        set_keys(e.fd, "k", 5);
        cas_before = mcc_cas(e.fd, "k4");
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        close(e.fd);
        mcd_restart(&e.m);
        host_run_for(&e.h, 200); /* the adapter sees its connection closed */
        e.fd = mcc_connect(&e.m);
        set_keys(e.fd, "k", 5);
        cr_expect_eq(mcc_cas(e.fd, "k4"), cas_before, "(the hazard: same key, same cas)");
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "restarted"), 1, "%s", e.h.log);
        cr_expect_eq(count_present(e.fd, "k", 5), 5, "a new item went with its namesake's age");
        host_rotate(&e.h);
        cr_expect_eq(count_present(e.fd, "k", 5), 0);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/* memcached stopped: said once, counted each time, nothing deleted; started: aging resumes. */
Test(memcached, recovers_when_memcached_returns)
{
        struct env e;

        env_start(&e, false, NULL);
        set_keys(e.fd, "k", 3);
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        close(e.fd);
        mcd_kill(&e.m);
        host_run_for(&e.h, 200); /* its connection closed: no error, nothing was asked */
        host_rotate(&e.h);
        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "errors"), 3, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "WARNING: memcached at"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "cannot connect"), 3, "%s", e.h.log);
        mcd_restart(&e.m);
        e.fd = mcc_connect(&e.m);
        set_keys(e.fd, "k", 3);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        host_rotate(&e.h);
        cr_expect_eq(count_present(e.fd, "k", 3), 0, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 3);
        env_stop(&e);
}

/* ---- servers that are not memcached, or not quite ----------------------------------------- */

static void host_on_fake(struct host *h, const struct fake *f)
{
        const char *keys[] = { "server", f->server, "timeout", "300ms", NULL };

        host_setup(h, "memcached", 1, 1, keys);
}

/* Each: a clear error, logged once however often it repeats, counted each time; no crash. */
Test(memcached, garbage_servers)
{
        static char long_line[10000];
        const struct {
                struct fake_rule rules[3];
                size_t n;
                const char *error;
        } cases[] = {
                { { { .prefix = "", .reply = "HELLO\r\n" } }, 1,
                  "unexpected reply to stats (is this memcached?): \"HELLO\"" },
                { { { .prefix = "stats items", .reply = fake_stats_ok },
                    { .prefix = "lru_crawler", .reply = "key=a la=x cas=1 fetch=no cls=1\nEND\r\n" } },
                  2, "bad metadump line 1: la is not a time in seconds: \"key=a la=x cas=1" },
                { { { .prefix = "stats items", .reply = fake_stats_ok },
                    { .prefix = "lru_crawler", .reply = "\x01\xff garbage\r\n" } },
                  2, "not a metadump line (no key= first): \"\\x01\\xff garbage\"" },
                { { { .prefix = "", .reply = long_line } }, 1, "a reply line longer than 4096 bytes" },
                { { { .prefix = "", .silent = true } }, 1, "no reply within timeout" },
                { { { .prefix = "", .reply = NULL } }, 1, "connection closed by the server" },
                { { { .prefix = "stats items", .reply = fake_stats_ok },
                    { .prefix = "lru_crawler", .reply = "ERROR metadump not allowed\r\n" } },
                  2, "metadump refused: \"ERROR metadump not allowed\"" },
                { { { .prefix = "stats items", .reply = "STAT pid 1\r\nEND\r\nEND\r\nEND\r\n" } },
                  1, "runs without CAS" },
        };
        struct fake f;
        struct host h;
        uint64_t errors = 0;

        memset(long_line, 'A', sizeof(long_line) - 1);
        fake_start(&f, fake_frame_line);
        host_on_fake(&h, &f);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                fake_script(&f, cases[i].rules, cases[i].n);
                host_rotate(&h);
                host_rotate(&h);
                errors += 2;
                cr_expect_eq(host_stat(&h, "errors"), errors, "case %zu\n%s", i, h.log);
                cr_expect_eq(host_log_count(&h, cases[i].error), 2, "case %zu: \"%s\"\n%s", i,
                             cases[i].error, h.log);
                /* Logged once at warning, the repeat at debug. */
                cr_expect_eq(host_log_count(&h, "WARNING: memcached at"), i + 1, "case %zu\n%s", i,
                             h.log);
                cr_expect_eq(host_stat(&h, "items"), 0);
        }
        host_cleanup(&h);
        fake_stop(&f);
}

/*
 * A failure is said once per kind, not per text: the same bad dump line, found at another line
 * at the next rotation ("bad metadump line 1", then "line 2"), was said again at every one.
 */
Test(memcached, same_failure_with_another_number_said_once)
{
        const struct fake_rule rules[] = {
                { .prefix = "stats items", .reply = fake_stats_ok },
                { .prefix = "lru_crawler", .reply = "key=a la=x cas=1 fetch=no cls=1\n",
                  .times = 1 },
                { .prefix = "lru_crawler",
                  .reply = "key=b la=1700000000 cas=2 fetch=no cls=1\n"
                           "key=a la=x cas=1 fetch=no cls=1\n" },
        };
        struct fake f;
        struct host h;

        fake_start(&f, fake_frame_line);
        fake_script(&f, rules, ELEMENTSOF(rules));
        host_on_fake(&h, &f);
        host_rotate(&h);
        host_rotate(&h);
        cr_expect_eq(host_stat(&h, "errors"), 2, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "bad metadump line 1: la is not a time"), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "bad metadump line 2: la is not a time"), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "WARNING: memcached at"), 1, "said twice:\n%s", h.log);
        cr_expect_eq(host_log_count(&h, "(again)"), 1, "%s", h.log);
        host_cleanup(&h);
        fake_stop(&f);
}

/*
 * timeout bounds a silence only: a server that sends a byte every 100 ms, or STAT lines
 * without end, held the refresh (and so every rotation of the cache) for ever, and said
 * nothing. refresh_timeout bounds the whole refresh: cut, counted, said once, retried.
 */
Test(memcached, refresh_deadline, .timeout = 120)
{
        const struct fake_rule endless[] = {
                { .prefix = "stats items", .reply = "STAT items:1:number 1\r\n", .forever = true },
        };
        const struct fake_rule trickle[] = {
                { .prefix = "stats items", .reply = fake_stats_ok, .trickle_ms = 100 },
        };
        const char *keys[] = { "server", NULL, "timeout", "1s", "refresh_timeout", "2s", NULL };
        uint64_t t0;
        struct fake f;
        struct host h;

        fake_start(&f, fake_frame_line);
        keys[1] = f.server;
        fake_script(&f, endless, ELEMENTSOF(endless));
        host_setup(&h, "memcached", 1, 1, keys);
        t0 = test_now_usec();
        host_refresh(&h);
        cr_expect_geq(test_now_usec() - t0, 1900000, "cut before refresh_timeout");
        cr_expect_eq(host_stat(&h, "refresh_timeouts"), 1, "%s", h.log);
        cr_expect_eq(host_stat(&h, "errors"), 1);
        cr_expect_eq(host_log_count(&h, "WARNING: memcached at"), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "no whole refresh within refresh_timeout (2s; the "
                                        "server was reading stats)"), 1, "%s", h.log);

        /* A byte every 100 ms: never a second of silence, never a whole reply in 2 s. */
        fake_script(&f, trickle, ELEMENTSOF(trickle));
        host_refresh(&h);
        cr_expect_eq(host_stat(&h, "refresh_timeouts"), 2, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "WARNING: memcached at"), 1, "said twice:\n%s", h.log);
        cr_expect_eq(host_log_count(&h, "refresh_timeout (2s; the server was reading stats) "
                                        "(again)"), 1, "%s", h.log);
        /* A good server again: a whole refresh, and nothing cut. */
        fake_script(&f, (const struct fake_rule[]){
                                { .prefix = "stats items", .reply = fake_stats_ok },
                                { .prefix = "lru_crawler", .reply = "END\r\n" } },
                    2);
        host_refresh(&h);
        cr_expect_eq(host_stat(&h, "dumps"), 1, "%s", h.log);
        host_run_for(&h, 2500);
        cr_expect_eq(host_stat(&h, "refresh_timeouts"), 2, "a finished refresh was cut:\n%s",
                     h.log);
        host_cleanup(&h);
        fake_stop(&f);
}

/*
 * A server without the hash table walk is dumped by LRU; a busy LRU crawler is asked again,
 * not an error. The whole exchange of a delete as the
 * protocol says it, against a scripted server: me, then md with the cas seen, then the fence.
 */
Test(memcached, busy_crawler_and_scripted_delete)
{
        const struct fake_rule rules[] = {
                { .prefix = "stats items", .reply = fake_stats_ok },
                { .prefix = "lru_crawler metadump all",
                  .reply = "BUSY currently processing crawler request\r\n", .times = 2 },
                { .prefix = "lru_crawler metadump all",
                  .reply = "key=k%20 la=1700000000 cas=5 fetch=no cls=1 size=60\nEND\r\n" },
                /* A server before 1.6.9: no hash table walk. */
                { .prefix = "lru_crawler metadump hash", .reply = "BADCLASS invalid class id\r\n" },
                /* "k " is a key no text command can hold: base64 "ayA=", and the b flag. */
                { .prefix = "me ayA= b", .reply = "ME ayA= exp=-1 la=100 cas=5 fetch=no cls=1 "
                                                 "size=60\r\n" },
                { .prefix = "md ayA= b C5 q", .silent = true },
                { .prefix = "mn", .reply = "MN\r\n" },
        };
        struct fake f;
        struct host h;

        fake_start(&f, fake_frame_line);
        fake_script(&f, rules, ELEMENTSOF(rules));
        /*
         * Asked again every MC_BUSY_RETRY_USEC (100 ms) for as long as timeout: 300 ms (the
         * other scripted tests') was once too short for two retries on a loaded machine.
         */
        host_setup(&h, "memcached", 1, 1,
                   (const char *[]){ "server", f.server, "timeout", "5s", NULL });
        host_rotate(&h);
        cr_expect_eq(host_stat(&h, "errors"), 0, "%s", h.log);
        cr_expect_eq(host_stat(&h, "dumps"), 1);
        cr_expect_eq(host_stat(&h, "deleted"), 1, "%s", h.log);
        cr_expect_eq(f.used[1], 2, "the busy crawler was not asked again");
        cr_expect_eq(f.used[3], 1);
        cr_expect_eq(f.used[5], 1, "no md with the cas seen");
        cr_expect_eq(f.used[6], 2, "not fenced");
        cr_expect_eq(host_log_count(&h, "no hash table walk"), 1, "%s", h.log);
        host_cleanup(&h);
        fake_stop(&f);
}

/* ---- the real cacheaged ------------------------------------------------------------------- */

/* A daemon with the memcached adapter on @server and a dcache model beside it. */
static void daemon_start(struct test_daemon *d, const char *server, const char *extra)
{
        test_daemon_setup(d);
        test_write_file(d->conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 300ms\n"
                        "[cache mc]\nadapter = memcached\nserver = %s\n%s"
                        "[cache model]\nadapter = dcache\nsource = workload:statstorm\n"
                        "rate = 2000\n",
                        test_env("CA_ADAPTER_DIR"), server, extra ? extra : "");
        test_daemon_start_ready(d, 0, NULL);
}

static size_t count_in(const char *log, const char *needle)
{
        size_t n = 0;

        for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* The whole daemon: exactly the never-fetched items go, beside a cache of another adapter. */
Test(memcached, daemon_ages_beside_another_cache, .timeout = 120)
{
        struct test_daemon d;
        struct mcd m;
        int fd;

        mcd_start(&m, false, NULL);
        fd = mcc_connect(&m);
        set_keys(fd, "u", 10);
        set_keys(fd, "f", 10);
        fetch_keys(fd, "f", 10);
        daemon_start(&d, m.server, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "mc: aged: 10 victims", 30000), "%s",
                  test_daemon_log(&d));
        cr_expect_eq(count_present(fd, "u", 10), 0);
        cr_expect_eq(count_present(fd, "f", 10), 10);
        cr_expect(count_in(test_daemon_log(&d), "model: rotation, ") >= 2, "%s",
                  test_daemon_log(&d));
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        close(fd);
        mcd_cleanup(&m);
}

/*
 * The CAS guard, for real: a proxy holds the daemon's first delete; the test rewrites that
 * item meanwhile; the delete, let go, finds another cas (EX): the new item is there.
 */
Test(memcached, daemon_rewrite_between_check_and_delete_survives, .timeout = 120)
{
        struct test_daemon d;
        struct proxy p;
        struct mcd m;
        const char *held;
        char key[64], *v = NULL;
        int fd;

        mcd_start(&m, false, NULL);
        proxy_start(&p, m.port, fake_frame_line, mc_hold_md);
        fd = mcc_connect(&m);
        set_keys(fd, "k", 3);
        daemon_start(&d, p.server, "timeout = 60s\n");
        held = proxy_wait_held(&p, 30000);
        cr_assert(held, "no delete came\n%s", test_daemon_log(&d));
        cr_assert(sscanf(held, "md %63s C", key) == 1, "%s", held);
        mcc_set(fd, key, "rewritten");
        proxy_release(&p);
        cr_assert(test_daemon_wait_log(&d, 0, "1 cas conflicts", 30000), "%s",
                  test_daemon_log(&d));
        cr_expect(mcc_get(fd, key, &v), "%s, rewritten while its delete was on the way, is gone",
                  key);
        cr_expect_str_eq(v ? v : "", "rewritten");
        cr_expect_eq(count_present(fd, "k", 3), 1, "the two others stayed");
        free(v);
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        proxy_stop(&p);
        close(fd);
        mcd_cleanup(&m);
}

/* memcached killed mid-run: said once, the other cache keeps aging; started again: recovered. */
Test(memcached, daemon_memcached_restarted, .timeout = 120)
{
        struct test_daemon d;
        struct mcd m;
        size_t from, models;
        int fd;

        mcd_start(&m, false, NULL);
        daemon_start(&d, m.server, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "mc: dump: ", 30000), "%s", test_daemon_log(&d));
        mcd_kill(&m);
        cr_assert(test_daemon_wait_log(&d, 0, "nothing is deleted until a dump succeeds", 30000),
                  "%s", test_daemon_log(&d));
        from = strlen(test_daemon_log(&d));
        /* Several failed rotations of mc, while the model rotates on. */
        cr_assert(test_daemon_wait_log(&d, from, "(again)", 30000), "%s", test_daemon_log(&d));
        from = strlen(test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, from, "(again)", 30000), "%s", test_daemon_log(&d));
        models = count_in(test_daemon_log(&d) + from, "model: rotation, ");
        cr_expect(models >= 1, "the other cache stopped aging\n%s", test_daemon_log(&d));
        cr_expect_eq(count_in(test_daemon_log(&d), "; nothing is deleted until a dump succeeds"), 1,
                     "%s", test_daemon_log(&d));
        mcd_restart(&m);
        fd = mcc_connect(&m);
        set_keys(fd, "k", 4);
        cr_assert(test_daemon_wait_log(&d, 0, "answers again", 30000), "%s", test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, 0, "mc: aged: 4 victims", 30000), "%s",
                  test_daemon_log(&d));
        cr_expect_eq(count_present(fd, "k", 4), 0);
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        close(fd);
        mcd_cleanup(&m);
}

/* The storm's configuration: the memcached cache at @rate, beside a dcache cache. */
static void storm_config(struct test_daemon *d, const char *server, unsigned rate)
{
        char *tmp;

        /* Written beside and renamed: a SIGHUP never reads half a file. */
        if (asprintf(&tmp, "%s.new", d->conf) < 0)
                cr_assert_fail("out of memory");
        test_write_file(tmp,
                        "[daemon]\nplugin_dir = %s\ninterval = 300ms\n"
                        "[cache mc]\nadapter = memcached\nserver = %s\nrate = %u\n"
                        "single_use_age = 2\nmax_age = 100\n"
                        "[cache model]\nadapter = dcache\nsource = workload:statstorm\n"
                        "rate = 2000\n",
                        test_env("CA_ADAPTER_DIR"), server, rate);
        cr_assert(rename(tmp, d->conf) == 0);
        free(tmp);
}

/*
 * A storm of reloads of the real cacheaged while memcached's round is under way (issue 31,
 * item 6: the last storm did not start memcached): 80 SIGHUPs, 100 ms apart, through dumps of a
 * second and deletes of half a second (rate 4000, 4000 items); the first 40 keep the instance,
 * then every third changes the cache's rate, so that it is made again in the middle of a dump
 * or a check. Nothing fetched is
 * lost, every never-fetched item still goes after the storm, the daemon stops cleanly, and no
 * sanitizer report (the ASan build).
 */
Test(memcached, daemon_reload_storm_mid_round, .timeout = 180)
{
        struct test_daemon d;
        size_t reloads = 0;
        struct mcd m;
        uint64_t t0;
        int fd;

        mcd_start(&m, false, NULL);
        fd = mcc_connect(&m);
        set_keys(fd, "f", 2000);
        fetch_keys(fd, "f", 2000);
        set_keys(fd, "u", 2000);
        test_daemon_setup(&d);
        storm_config(&d, m.server, 4000);
        test_daemon_start_ready(&d, 0, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "mc: refresh: stats", 30000), "%s",
                  test_daemon_log(&d));
        for (int i = 0; i < 80; i++) {
                if (i >= 40 && i % 3 == 2)
                        storm_config(&d, m.server, i % 2 ? 4000 : 4400);
                cr_assert(kill(d.pid, SIGHUP) == 0);
                /* Read as systemd does: a notify socket left full blocks the daemon's sends. */
                test_notify_drain_for(&d.notify, 100);
        }
        test_notify_drain_for(&d.notify, 1000);
        reloads = count_in(test_daemon_log(&d), "Configuration reloaded");
        cr_expect_geq(reloads, 60, "%zu reloads done of 80\n%s", reloads, test_daemon_log(&d));
        cr_expect_geq(count_in(test_daemon_log(&d), "mc: adapter or its keys changed, cache "
                               "recreated"), 10, "%s", test_daemon_log(&d));
        cr_expect_geq(count_in(test_daemon_log(&d), "mc: refresh under way"), 1,
                      "no reload came in the middle of a refresh\n%s", test_daemon_log(&d));
        cr_expect_eq(count_present(fd, "f", 2000), 2000, "a fetched item went in the storm");

        /* After the storm: the never-fetched go, the fetched stay. */
        t0 = test_now_usec();
        while (count_present(fd, "u", 2000) > 0 && test_now_usec() - t0 < 90000000)
                test_notify_drain_for(&d.notify, 500);
        cr_expect_eq(count_present(fd, "u", 2000), 0, "never-fetched items stayed\n%s",
                     test_daemon_log(&d));
        cr_expect_eq(count_present(fd, "f", 2000), 2000, "a fetched item went");
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        close(fd);
        mcd_cleanup(&m);
}

/* A server speaking garbage: a clear error, the daemon runs on and stops cleanly. */
Test(memcached, daemon_garbage_server, .timeout = 60)
{
        const struct fake_rule rules[] = { { .prefix = "", .reply = "220 smtp.example ESMTP\r\n" } };
        struct test_daemon d;
        struct fake f;

        fake_start(&f, fake_frame_line);
        fake_script(&f, rules, ELEMENTSOF(rules));
        daemon_start(&d, f.server, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "unexpected reply to stats (is this memcached?): "
                                       "\"220 smtp.example ESMTP\"", 30000), "%s",
                  test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, strlen(test_daemon_log(&d)), "model: rotation, ",
                                       30000), "the other cache stopped");
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        fake_stop(&f);
}

/* Bad keys: every one said, with its file and line; nothing runs. */
Test(memcached, daemon_bad_keys)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        const char *log;

        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\n"
                        "[cache mc]\nadapter = memcached\nserver = cache.example:11211\n"
                        "timeout = 1ms\nmax_items = 0\ndry_run = perhaps\ncolour = red\n"
                        "rate = fast\n",
                        test_env("CA_ADAPTER_DIR"));
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 1);
        log = test_daemon_log(&d);
        cr_expect(strstr(log, "cacheaged.conf:5: server: invalid server \"cache.example:11211\" "
                              "(expected IPv4:PORT, [IPv6]:PORT, localhost:PORT or an absolute "
                              "socket path; names are not resolved)"), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:6: timeout: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:7: max_items: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:8: dry_run: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:9: colour: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:10: rate: "), "%s", log);

        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\n"
                        "[cache a]\nadapter = memcached\nserver = [::1]:11211\n"
                        "[cache b]\nadapter = memcached\nserver = /run/memcached/memcached.sock\n"
                        "[cache c]\nadapter = memcached\nserver = localhost:11211\ndry_run = yes\n",
                        test_env("CA_ADAPTER_DIR"));
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
        test_daemon_cleanup(&d);
}

/* The commented example of conf/cacheaged.conf, its keys uncommented, is a good section. */
Test(memcached, conf_example_checks)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        char path[4096], *conf, *p, *example;
        size_t n = 0;

        snprintf(path, sizeof(path), "%s/../conf/cacheaged.conf", test_env("CA_TEST_SRCDIR"));
        conf = test_read_file(path);
        p = strstr(conf, "#[cache sessions]\n");
        cr_assert(p, "no memcached example in %s", path);
        example = calloc(1, strlen(p) + 1);
        cr_assert(example);
        /* "#key = value" lines uncommented; "# prose" left out; up to the next blank line. */
        for (char *line = p; *line && *line != '\n'; line = strchr(line, '\n') + 1) {
                size_t len = (size_t)(strchr(line, '\n') - line);

                if (line[0] == '#' && line[1] != ' ' && line[1] != '\n') {
                        memcpy(example + n, line + 1, len);
                        n += len;
                        example[n++] = '\n';
                }
        }
        cr_assert(strstr(example, "adapter = memcached\n"), "%s", example);
        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n%s", test_env("CA_ADAPTER_DIR"),
                        example);
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 0, "%s\n%s", example, test_daemon_log(&d));
        test_daemon_cleanup(&d);
        free(example);
        free(conf);
}
