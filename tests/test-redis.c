/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The redis adapter (lib/adapters/redis.c) against a real redis-server, started by each test
 * on a free port of 127.0.0.1 (or a unix socket in a temporary directory) with --save ''
 * --appendonly no, and killed after: never the system's server, whether one runs or not.
 *
 *   - its RESP2 parsers, alone (redis-proto.c);
 *   - the adapter loaded into this process under a host of the test's own, which rotates when
 *     the test says, so that "after the right number of rotations" is exact, and a client can
 *     act between the scan and the deletes. Keys are made idle with RESTORE ... IDLETIME (or,
 *     under LFU, FREQ), so that no test waits for the LRU clock's seconds;
 *   - scripted servers that are not quite Redis;
 *   - the real cacheaged with --bus none: the adapter beside a dcache cache, a delete held by a
 *     proxy while the test rewrites the key, redis-server killed and started again, bad keys.
 *
 * The harness is in redis-harness.{c,h} and adapter-harness.{c,h}. Environment
 * (tests/meson.build): CACHEAGED, CA_ADAPTER_DIR (redis.so, dcache.so), CA_TEST_SRCDIR.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "redis-harness.h"
#include "redis-proto.h"
#include "test-util.h"

/* ---- the parsers -------------------------------------------------------------------------- */

static struct rp_value v[RP_VALUES_MAX];

static int parse(const char *s, size_t *ret_n, size_t *ret_len, char *err)
{
        return rp_parse(s, strlen(s), v, RP_VALUES_MAX, ret_n, ret_len, err, RP_ERR_MAX);
}

Test(redis, parse_every_type)
{
        static const char reply[] = "*6\r\n+OK\r\n-ERR no\r\n:-42\r\n$5\r\na\r\nb\r\r\n$-1\r\n"
                                    "*2\r\n*0\r\n*-1\r\n";
        char err[RP_ERR_MAX] = "";
        size_t n, len;

        cr_assert_eq(parse(reply, &n, &len, err), 0, "%s", err);
        cr_expect_eq(len, strlen(reply));
        cr_assert_eq(n, 9);
        cr_expect_eq(v[0].type, RP_ARRAY);
        cr_expect_eq(v[0].integer, 6);
        cr_expect_eq(v[0].next, 9);
        cr_expect(v[1].type == RP_STATUS && v[1].len == 2 && !memcmp(v[1].str, "OK", 2));
        cr_expect(v[2].type == RP_ERROR && rp_is_error(&v[2], "ERR") && !rp_is_error(&v[2], "ER"));
        cr_expect(v[3].type == RP_INTEGER && v[3].integer == -42);
        /* A bulk string is binary: CR and LF inside it are bytes. */
        cr_expect(v[4].type == RP_BULK && v[4].len == 5 && !memcmp(v[4].str, "a\r\nb\r", 5));
        cr_expect_eq(v[5].type, RP_NIL);
        cr_expect(v[6].type == RP_ARRAY && v[6].integer == 2 && v[6].next == 9);
        cr_expect(v[7].type == RP_ARRAY && v[7].integer == 0 && v[7].next == 8);
        cr_expect_eq(v[8].type, RP_NIL_ARRAY);
}

/* Every prefix of a reply is the beginning of one, and says how many bytes it needs. */
Test(redis, parse_asks_for_more)
{
        static const char reply[] = "*2\r\n$10\r\n0123456789\r\n*1\r\n:7\r\n";
        char err[RP_ERR_MAX];
        size_t n, len;

        for (size_t cut = 0; cut < strlen(reply); cut++) {
                cr_assert_eq(rp_parse(reply, cut, v, RP_VALUES_MAX, &n, &len, err, sizeof(err)),
                             -EAGAIN, "cut at %zu", cut);
                cr_expect_gt(len, cut, "cut at %zu", cut);
        }
        /* A bulk string's header says how much it needs, before its bytes come. */
        cr_assert_eq(rp_parse(reply, 9, v, RP_VALUES_MAX, &n, &len, err, sizeof(err)), -EAGAIN);
        cr_expect_eq(len, 9 + 12);
}

Test(redis, parse_refused)
{
        static const struct {
                const char *reply, *reason;
        } bad[] = {
                { "HTTP/1.1 400 Bad Request\r\n", "not a RESP2 reply (type byte 0x48)" },
                { ",1.5\r\n", "type byte 0x2c" },          /* RESP3's double */
                { ":12a\r\n", "an integer that is not one" },
                { ":\r\n", "an integer that is not one" },
                { "+OK\rX", "a carriage return without a line feed" },
                { "$-2\r\n", "a bulk string of no length" },
                { "$3\r\nabcd\r\n", "a bulk string longer than it said" },
                { "$999999999\r\n", "a bulk string of 999999999 bytes (more than 262144)" },
                { "*5000\r\n", "an array of 5000 elements" },
                { "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "arrays nested deeper than 4" },
                { "\r\n", "an empty line" },
        };
        char err[RP_ERR_MAX];
        size_t n, len;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                err[0] = '\0';
                cr_expect_eq(parse(bad[i].reply, &n, &len, err), -EBADMSG, "%s", bad[i].reply);
                cr_expect(strstr(err, bad[i].reason), "\"%s\": \"%s\", expected \"%s\"",
                          bad[i].reply, err, bad[i].reason);
        }
}

/* Limits are checked at a header: a line or a reply that would be too long is not waited for. */
Test(redis, parse_limits)
{
        char *line = malloc(RP_LINE_MAX + 10), err[RP_ERR_MAX];
        size_t n, len;

        cr_assert(line);
        memset(line, 'x', RP_LINE_MAX + 10);
        line[0] = '+';
        cr_expect_eq(rp_parse(line, RP_LINE_MAX + 10, v, RP_VALUES_MAX, &n, &len, err,
                              sizeof(err)), -EBADMSG);
        cr_expect(strstr(err, "a line longer than 4096 bytes"), "%s", err);
        free(line);
        /* Bulk strings of 200,000 bytes each: the third one's header makes the reply too long. */
        {
                char *r = malloc(3 * 200020), *q = r;

                cr_assert(r);
                q += sprintf(q, "*3\r\n");
                for (int i = 0; i < 2; i++) {
                        q += sprintf(q, "$200000\r\n");
                        memset(q, 'y', 200000);
                        q += 200000;
                        q += sprintf(q, "\r\n");
                }
                q += sprintf(q, "$200000\r\n");
                cr_expect_eq(rp_parse(r, (size_t)(q - r), v, RP_VALUES_MAX, &n, &len, err,
                                      sizeof(err)), -EBADMSG);
                cr_expect(strstr(err, "a reply longer than 524288 bytes"), "%s", err);
                free(r);
        }
}

Test(redis, decoders)
{
        char err[RP_ERR_MAX] = "", sha[RP_SHA_LEN + 1];
        size_t n, len, first, keys;
        uint64_t cursor, u;
        int64_t ints[3];
        const char *f;
        size_t fl;
        static const char info[] = "# Server\r\nredis_version:7.0.15\r\nused_memory:12\r\n"
                                   "used_memory_rss:x\r\nmaxmemory_policy:allkeys-lfu\r\n";

        cr_assert_eq(parse("*2\r\n$3\r\n417\r\n*2\r\n$1\r\na\r\n$0\r\n\r\n", &n, &len, err), 0);
        cr_assert_eq(rp_parse_scan(v, n, &cursor, &first, &keys, err, sizeof(err)), 0, "%s", err);
        cr_expect(cursor == 417 && first == 3 && keys == 2 && v[4].len == 0);
        cr_assert_eq(parse("*2\r\n$1\r\n0\r\n*1\r\n:1\r\n", &n, &len, err), 0);
        cr_expect_eq(rp_parse_scan(v, n, &cursor, &first, &keys, err, sizeof(err)), -EBADMSG);
        cr_expect(strstr(err, "a SCAN key that is an integer"), "%s", err);
        cr_assert_eq(parse(":1\r\n", &n, &len, err), 0);
        cr_expect_eq(rp_parse_scan(v, n, &cursor, &first, &keys, err, sizeof(err)), -EBADMSG);
        cr_expect(strstr(err, "an integer where SCAN's [cursor, keys] was due"), "%s", err);

        cr_assert_eq(parse("*3\r\n:1\r\n:-1\r\n:9007199254740992\r\n", &n, &len, err), 0);
        cr_assert_eq(rp_parse_integers(v, n, 3, ints, err, sizeof(err)), 0, "%s", err);
        cr_expect(ints[0] == 1 && ints[1] == -1 && ints[2] == 9007199254740992LL);
        cr_expect_eq(rp_parse_integers(v, n, 2, ints, err, sizeof(err)), -EBADMSG);
        cr_assert_eq(parse("*2\r\n:1\r\n$1\r\n1\r\n", &n, &len, err), 0);
        cr_expect_eq(rp_parse_integers(v, n, 2, ints, err, sizeof(err)), -EBADMSG);
        cr_expect(strstr(err, "value 2 is a bulk string"), "%s", err);

        cr_assert_eq(parse("$40\r\n3a072fd85ab45045fd17cf6f1c1acae14321eea3\r\n", &n, &len, err),
                     0);
        cr_expect_eq(rp_parse_sha(v, n, sha, err, sizeof(err)), 0);
        cr_expect_str_eq(sha, "3a072fd85ab45045fd17cf6f1c1acae14321eea3");
        cr_assert_eq(parse("$40\r\n3A072fd85ab45045fd17cf6f1c1acae14321eea3\r\n", &n, &len, err),
                     0);
        cr_expect_eq(rp_parse_sha(v, n, sha, err, sizeof(err)), -EBADMSG);

        cr_assert_eq(parse("*2\r\n$14\r\nlfu-decay-time\r\n$2\r\n10\r\n", &n, &len, err), 0);
        cr_expect_eq(rp_parse_config_u64(v, n, "lfu-decay-time", 1000, &u, err, sizeof(err)), 0);
        cr_expect_eq(u, 10);
        cr_assert_eq(parse("*0\r\n", &n, &len, err), 0);
        cr_expect_eq(rp_parse_config_u64(v, n, "lfu-decay-time", 1000, &u, err, sizeof(err)),
                     -ENOENT);

        cr_assert_eq(rp_info_field(info, strlen(info), "maxmemory_policy", &f, &fl), 0);
        cr_expect(fl == 11 && !memcmp(f, "allkeys-lfu", 11));
        cr_expect_eq(rp_info_u64(info, strlen(info), "used_memory", UINT64_MAX, &u), 0);
        cr_expect_eq(u, 12);
        cr_expect_eq(rp_info_u64(info, strlen(info), "used_memory_rss", UINT64_MAX, &u), -EBADMSG);
        cr_expect_eq(rp_info_u64(info, strlen(info), "used", UINT64_MAX, &u), -ENOENT);
        cr_expect_eq(rp_info_u64(info, strlen(info), "total_forks", UINT64_MAX, &u), -ENOENT);
}

/* A command written is what redis-server reads: binary arguments included. */
Test(redis, command_round_trip)
{
        const char *argv[] = { "SET", "a\r\nb\0c", "" };
        const size_t lens[] = { 3, 6, 0 };
        char buf[64], err[RP_ERR_MAX];
        size_t need = rp_command(NULL, 0, 3, argv, lens), n, len;

        cr_assert_eq(need, strlen("*3\r\n$3\r\nSET\r\n$6\r\n") + 6 + strlen("\r\n$0\r\n\r\n"));
        cr_assert_eq(rp_command(buf, sizeof(buf), 3, argv, lens), need);
        cr_assert_eq(rp_parse(buf, need, v, RP_VALUES_MAX, &n, &len, err, sizeof(err)), 0);
        cr_expect(n == 4 && len == need && v[2].len == 6 && !memcmp(v[2].str, "a\r\nb\0c", 6));
}

/* ---- the adapter under the test's own host, against a real redis-server -------------------- */

/* @n keys @prefix0.. at once, idle for @idle_sec (or, under LFU, of that frequency). */
static void load(int fd, const char *prefix, int n, unsigned idle_sec)
{
        rc_load(fd, prefix, n, idle_sec);
}

static void read_keys(int fd, const char *prefix, int n)
{
        char key[128];

        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%s%d", prefix, i);
                cr_assert(rc_get(fd, key), "%s", key);
        }
}

/* What most tests run: a real redis-server, a client of it, and the adapter under our host. */
struct env {
        struct rds r;
        struct host h;
        int fd;
};

static void env_start(struct env *e, bool on_unix, const char *const *opts)
{
        rds_start(&e->r, on_unix, opts);
        e->fd = rc_connect(&e->r);
}

/* The adapter on it, with the ages and more keys (@more NULL-ended, may be NULL). */
static void env_host_keys(struct env *e, uint32_t single_use_age, uint32_t max_age,
                          const char *const *more)
{
        const char *keys[20] = { "server", e->r.server };
        size_t n = 2;

        for (; more && *more; more++) {
                cr_assert(n < ELEMENTSOF(keys) - 1);
                keys[n++] = *more;
        }
        keys[n] = NULL;
        host_setup(&e->h, "redis", single_use_age, max_age, keys);
}

static void env_host(struct env *e, uint32_t single_use_age, uint32_t max_age, const char *k,
                     const char *val)
{
        env_host_keys(e, single_use_age, max_age, (const char *[]){ k, val, NULL });
}

static void env_stop(struct env *e)
{
        host_cleanup(&e->h);
        close(e->fd);
        rds_cleanup(&e->r);
}

/*
 * Keys written, half of them read again: the first rotation deletes nothing (everything is new),
 * the second exactly the unread ones; the read ones stay through max_age rotations and go once
 * unread past it. Keys with a TTL are Redis' business.
 */
static void ages_exactly_the_unread(bool on_unix)
{
        struct env e;
        int rotations;

        env_start(&e, on_unix, NULL);
        load(e.fd, "u", 10, 100);
        load(e.fd, "f", 10, 100);
        rc_set_idle_l(e.fd, "t", 1, "value", 100, 1000000);
        env_host(&e, 2, 8, NULL, NULL);

        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "keys"), 20);
        cr_expect_eq(host_stat(&e.h, "scan_keys"), 21);
        cr_expect_eq(host_stat(&e.h, "ttl_keys"), 1);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        read_keys(e.fd, "f", 10);
        rc_wait_idle(e.fd, "f9", 1);

        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 10, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "u", 10), 0, "an unread key stayed");
        cr_expect_eq(rc_count(e.fd, "f", 10), 10, "a read key went");
        cr_expect_eq(host_stat(&e.h, "keys"), 10);
        cr_expect_gt(host_stat(&e.h, "bytes_freed"), 10 * 40);
        cr_expect_gt(host_stat(&e.h, "used_memory_after"), 0);

        for (rotations = 3; rotations <= 8; rotations++)
                host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "f", 10), 10, "a reused key went before max_age");
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 20, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "f", 10), 0);
        cr_expect(rc_exists(e.fd, "t"), "a key with a TTL was deleted");
        cr_expect_eq(host_stat(&e.h, "kept_touched"), 0);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

Test(redis, ages_exactly_the_unread, .timeout = 60)
{
        ages_exactly_the_unread(false);
}

Test(redis, ages_over_a_unix_socket, .timeout = 60)
{
        ages_exactly_the_unread(true);
}

/*
 * Between the scan and the delete: a key read, a key rewritten, are found used by the reap
 * script and stay, as they now are; the one left alone goes.
 */
Test(redis, read_or_rewritten_after_the_scan_survives)
{
        struct env e;
        char *r;

        env_start(&e, false, NULL);
        load(e.fd, "x", 1, 100);
        load(e.fd, "y", 1, 100);
        load(e.fd, "z", 1, 100);
        env_host(&e, 1, 1, NULL, NULL);
        host_refresh(&e.h);            /* the scan that finds all three idle... */
        cr_assert(rc_get(e.fd, "x0")); /* ...then x0 is read and y0 rewritten, before the reap */
        rc_set(e.fd, "y0", "new");
        host_age(&e.h);
        cr_expect(rc_exists(e.fd, "x0"), "the key read after the scan was deleted\n%s", e.h.log);
        r = rc_cmd(e.fd, (const char *[]){ "GET", "y0", NULL });
        cr_expect_str_eq(r, "$3\r\nnew\r\n", "the key rewritten after the scan: %s", r);
        free(r);
        cr_expect(!rc_exists(e.fd, "z0"));
        cr_expect_eq(host_stat(&e.h, "kept_touched"), 2, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 1);
        cr_expect_eq(host_stat(&e.h, "aged"), 3);
        env_stop(&e);
}

/*
 * Keys with a TTL are left to Redis (ttl_keys = leave): never tracked, never deleted. EXPIRE on
 * a victim between the scan and the reap looks it up (a use): it stays. With ttl_keys = age
 * keys with a TTL go too.
 */
Test(redis, ttl_keys)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "n", 5, 100);
        load(e.fd, "w", 1, 100);
        for (int i = 0; i < 5; i++) {
                char key[16];

                snprintf(key, sizeof(key), "t%d", i);
                rc_set_idle_l(e.fd, key, strlen(key), "value", 100, 1000000);
        }
        env_host(&e, 1, 1, NULL, NULL);
        host_refresh(&e.h);
        cr_assert_eq(rc_int(e.fd, (const char *[]){ "EXPIRE", "w0", "1000", NULL }), 1);
        host_age(&e.h);
        cr_expect_eq(rc_count(e.fd, "n", 5), 0);
        cr_expect_eq(rc_count(e.fd, "t", 5), 5, "a key with a TTL was deleted");
        cr_expect(rc_exists(e.fd, "w0"), "a key given a TTL after the scan was deleted");
        cr_expect_eq(host_stat(&e.h, "ttl_keys"), 5);
        cr_expect_eq(host_stat(&e.h, "kept_touched"), 1);
        cr_expect_eq(host_stat(&e.h, "deleted"), 5);
        host_cleanup(&e.h);

        rc_wait_idle(e.fd, "w0", 1);
        env_host(&e, 1, 1, "ttl_keys", "age");
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "t", 5), 0, "%s", e.h.log);
        cr_expect(!rc_exists(e.fd, "w0"));
        cr_expect_eq(host_stat(&e.h, "ttl_keys"), 0);
        cr_expect_eq(host_stat(&e.h, "deleted"), 6);
        env_stop(&e);
}

/* match: one keyspace only; db: another database's keys only. */
Test(redis, match_and_db)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "a:", 5, 100);
        load(e.fd, "b:", 5, 100);
        env_host(&e, 1, 1, "match", "a:*");
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "a:", 5), 0);
        cr_expect_eq(rc_count(e.fd, "b:", 5), 5, "a key outside match was deleted");
        cr_expect_eq(host_stat(&e.h, "scan_keys"), 5);
        host_cleanup(&e.h);

        rc_ok(e.fd, (const char *[]){ "SELECT", "3", NULL });
        load(e.fd, "c:", 5, 100);
        env_host(&e, 1, 1, "db", "3");
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "c:", 5), 0, "%s", e.h.log);
        rc_ok(e.fd, (const char *[]){ "SELECT", "0", NULL });
        cr_expect_eq(rc_count(e.fd, "b:", 5), 5, "a key of db 0 was deleted");
        env_stop(&e);
}

/*
 * Under an LFU policy idle times are not kept: the adapter reads OBJECT FREQ. A key at 0 that
 * nobody reads goes; one read (frequency 1) stays; a new one (5) cannot be told from a read one
 * and stays. With lfu-decay-time 1 (Redis' default) a read's trace may decay before a scan:
 * every rotation is blind, said once.
 */
Test(redis, lfu_policy)
{
        struct env e;

        env_start(&e, false, NULL);
        rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", NULL });
        rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "lfu-decay-time", "60", NULL });
        load(e.fd, "c", 5, 0); /* frequency 0 */
        load(e.fd, "r", 5, 0);
        rc_set(e.fd, "new", "value");
        env_host(&e, 2, 2, NULL, NULL);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "keys"), 11);
        read_keys(e.fd, "r", 5);
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "c", 5), 0, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "r", 5), 5, "a key read under LFU went");
        cr_expect(rc_exists(e.fd, "new"));
        cr_expect_eq(host_stat(&e.h, "deleted"), 5);
        cr_expect_eq(host_stat(&e.h, "blind_rotations"), 0, "%s", e.h.log);

        rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "lfu-decay-time", "1", NULL });
        load(e.fd, "d", 5, 0);
        for (int i = 0; i < 4; i++)
                host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "d", 5), 5, "deleted while a read could leave no trace");
        cr_expect_eq(host_stat(&e.h, "blind_rotations"), 4);
        cr_expect_eq(host_log_count(&e.h, "NOTICE: redis at"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "LFU policy with lfu-decay-time 1"), 4, "%s", e.h.log);

        /* Back to LRU: the counters meant something else; everything is known anew. */
        rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "maxmemory-policy", "noeviction", NULL });
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "maxmemory-policy went from LFU to LRU"), 1, "%s",
                     e.h.log);
        cr_expect_eq(host_log_count(&e.h, "every use can be seen again"), 1, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "d", 5), 5);
        env_stop(&e);
}

static bool bgsave_running(int fd)
{
        char *r = rc_cmd(fd, (const char *[]){ "INFO", "persistence", NULL });
        bool running = strstr(r, "rdb_bgsave_in_progress:1") != NULL;

        free(r);
        return running;
}

static void bgsave_wait(int fd)
{
        uint64_t until = test_now_usec() + 20000000;

        while (bgsave_running(fd) && test_now_usec() < until)
                usleep(20000);
        cr_assert(!bgsave_running(fd), "BGSAVE did not end within 20 s");
}

/*
 * While Redis has a child (BGSAVE) it records no access: a key read then looks unread. The
 * rotation whose period saw the fork is blind and deletes nothing; the next ones age again.
 * A fork between the scan and the reap keeps the victims (the reap script checks).
 */
Test(redis, fork_hides_reads, .timeout = 60)
{
        struct env e;
        char *r;

        env_start(&e, false, NULL);
        load(e.fd, "u", 10, 100);
        load(e.fd, "h", 1, 100);
        env_host(&e, 2, 2, NULL, NULL);
        host_rotate(&e.h);

        /* A slow BGSAVE: h0 is read while it runs, and Redis does not record it. */
        rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "rdb-key-save-delay", "100000", NULL });
        r = rc_cmd(e.fd, (const char *[]){ "BGSAVE", NULL });
        cr_assert(strstr(r, "Background saving started"), "%s", r);
        free(r);
        cr_assert(bgsave_running(e.fd));
        cr_assert(rc_get(e.fd, "h0"));
        cr_assert(bgsave_running(e.fd), "BGSAVE ended before the read: no test");
        rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "rdb-key-save-delay", "0", NULL });
        bgsave_wait(e.fd);
        cr_expect_geq(rc_int(e.fd, (const char *[]){ "OBJECT", "IDLETIME", "h0", NULL }), 100,
                      "the read left a trace after all: no test");

        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0, "deleted in a blind rotation\n%s", e.h.log);
        cr_expect(rc_exists(e.fd, "h0"), "a key read during a fork went");
        cr_expect_eq(host_stat(&e.h, "blind_rotations"), 1);
        cr_expect_eq(host_log_count(&e.h, "a fork ran during the period"), 1, "%s", e.h.log);
        /* Every key counted as used in the blind period: they go max_age (2) rotations later. */
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "u", 10), 0, "aging did not resume\n%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "blind_rotations"), 1);

        /* A fork between the scan and the reap: the reap does nothing. */
        load(e.fd, "v", 5, 100);
        host_cleanup(&e.h);
        env_host(&e, 1, 1, NULL, NULL);
        host_refresh(&e.h);
        r = rc_cmd(e.fd, (const char *[]){ "BGSAVE", NULL });
        free(r);
        bgsave_wait(e.fd);
        host_age(&e.h);
        cr_expect_eq(rc_count(e.fd, "v", 5), 5, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "kept_unsure"), 5, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        env_stop(&e);
}

/* SCRIPT FLUSH between rotations: each script is sent again whole, and the aging goes on. */
Test(redis, scripts_flushed_are_sent_again)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 40, 100);
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        rc_ok(e.fd, (const char *[]){ "SCRIPT", "FLUSH", NULL });
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "k", 40), 0, "%s", e.h.log);
        /* At least one probe and one reap (more when a SCAN's probes were in flight at once). */
        cr_expect_geq(host_stat(&e.h, "scripts_reloaded"), 2, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/* Restarted (a new run_id), what was known is forgotten, and its keys are aged from the start. */
Test(redis, restart_forgets_what_was_known)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 5, 100);
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        close(e.fd);
        rds_restart(&e.r);
        host_run_for(&e.h, 200); /* the adapter sees its connection closed */
        e.fd = rc_connect(&e.r);
        load(e.fd, "k", 5, 100);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "restarted"), 1, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "k", 5), 5, "a new key went with its namesake's age");
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "k", 5), 0);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/* redis-server stopped: said once, counted each time, nothing deleted; started: aging resumes. */
Test(redis, recovers_when_redis_returns)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 3, 100);
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        close(e.fd);
        rds_kill(&e.r);
        host_run_for(&e.h, 200);
        for (int i = 0; i < 3; i++)
                host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "errors"), 3, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "WARNING: redis at"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "cannot connect"), 3, "%s", e.h.log);
        rds_restart(&e.r);
        e.fd = rc_connect(&e.r);
        load(e.fd, "k", 3, 100);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "k", 3), 0, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 3);
        env_stop(&e);
}

/* Over max_keys: the rest is not aged (never deleted), said once, and counted. */
Test(redis, max_keys)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 12, 100);
        env_host(&e, 1, 8, "max_keys", "5");
        host_rotate(&e.h); /* 5 tracked, and deleted at once (single_use_age 1) */
        cr_expect_eq(host_stat(&e.h, "untracked_keys"), 7);
        cr_expect_eq(host_stat(&e.h, "deleted"), 5);
        cr_expect_eq(rc_count(e.fd, "k", 12), 7, "an untracked key was deleted");
        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 12);
        cr_expect_eq(host_stat(&e.h, "untracked_keys"), 0);
        cr_expect_eq(host_log_count(&e.h, "more than max_keys (5)"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "every key of redis at"), 1, "%s", e.h.log);
        env_stop(&e);
}

/* dry_run: the victims are checked and counted once each, and nothing is deleted. */
Test(redis, dry_run_deletes_nothing)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 6, 100);
        env_host(&e, 1, 2, "dry_run", "yes");
        for (int i = 0; i < 5; i++)
                host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "k", 6), 6);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 6, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "dry run: would delete \"k"), 6);
        /* A condemned key rewritten is aged again, as new. */
        rc_set_idle(e.fd, "k0", "again", 50);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 7, "%s", e.h.log);
        env_stop(&e);
}

/* Binary, UTF-8 and spaced keys go as any; a key over 1024 bytes is not aged, and said so. */
Test(redis, odd_and_long_keys)
{
        static const char bin[] = "bin\0\r\n key";
        char long_key[1026], ok_key[1025];
        struct env e;
        size_t lens[2] = { 6, sizeof(bin) - 1 };
        char *r;

        env_start(&e, false, NULL);
        load(e.fd, "cl\xc3\xa9 with spaces ", 1, 100);
        memset(long_key, 'L', sizeof(long_key) - 1);
        long_key[sizeof(long_key) - 1] = '\0';
        memset(ok_key, 'K', sizeof(ok_key) - 1);
        ok_key[sizeof(ok_key) - 1] = '\0';
        rc_set_idle(e.fd, long_key, "value", 100);
        rc_set_idle(e.fd, ok_key, "value", 100);
        rc_set_idle_l(e.fd, bin, sizeof(bin) - 1, "value", 100, 0);
        env_host(&e, 1, 8, NULL, NULL);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 3, "%s", e.h.log);
        r = rc_cmdl(e.fd, 2, (const char *[]){ "EXISTS", bin }, lens, NULL);
        cr_expect_str_eq(r, ":0\r\n", "the binary key stayed");
        free(r);
        cr_expect(!rc_exists(e.fd, "cl\xc3\xa9 with spaces 0"));
        cr_expect(!rc_exists(e.fd, ok_key), "a key of 1024 bytes stayed");
        cr_expect(rc_exists(e.fd, long_key), "a key over 1024 bytes was deleted");
        cr_expect_eq(host_stat(&e.h, "untracked_keys"), 1);
        cr_expect_eq(host_log_count(&e.h, "longer than 1024 bytes"), 1, "%s", e.h.log);
        env_stop(&e);
}

/*
 * rate and delete_rate: the scan takes at least keys / rate seconds, the deletes victims /
 * delete_rate (a lower bound only: a loaded machine makes them slower, never faster), and what
 * goes is the same as unpaced.
 */
Test(redis, rate_paces_the_scan_and_the_deletes, .timeout = 60)
{
        struct env e;
        uint64_t t0, refresh_usec, age_usec;

        env_start(&e, false, NULL);
        load(e.fd, "u", 1000, 100);
        env_host_keys(&e, 1, 8, (const char *[]){ "rate", "2000", "delete_rate", "500", NULL });
        t0 = test_now_usec();
        host_refresh(&e.h);
        refresh_usec = test_now_usec() - t0;
        t0 = test_now_usec();
        host_age(&e.h);
        age_usec = test_now_usec() - t0;
        cr_expect_geq(refresh_usec, 450000, "1,000 keys scanned at 2,000/s in %" PRIu64 " us",
                      refresh_usec);
        cr_expect_geq(age_usec, 1800000, "1,000 victims checked at 500/s in %" PRIu64 " us",
                      age_usec);
        cr_expect_eq(host_stat(&e.h, "deleted"), 1000, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "u", 1000), 0);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/* A client reading its hot keys throughout: none of them is ever deleted; every cold one goes. */
struct reader {
        const struct rds *r;
        volatile bool stop;
        unsigned long reads;
};

static void *reader_thread(void *userdata)
{
        struct reader *rd = userdata;
        int fd = rc_connect(rd->r);

        while (!rd->stop) {
                read_keys(fd, "hot", 200);
                rd->reads += 200;
                usleep(100000);
        }
        close(fd);
        return NULL;
}

Test(redis, nothing_read_is_lost, .timeout = 60)
{
        struct reader rd = { 0 };
        pthread_t t;
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "hot", 200, 100);
        load(e.fd, "cold", 2000, 100);
        rd.r = &e.r;
        cr_assert(pthread_create(&t, NULL, reader_thread, &rd) == 0);
        env_host_keys(&e, 2, 2, (const char *[]){ "rate", "0", "delete_rate", "0", NULL });
        for (int i = 0; i < 6; i++) {
                host_rotate(&e.h);
                host_run_for(&e.h, 400);
        }
        rd.stop = true;
        pthread_join(t, NULL);
        cr_expect_gt(rd.reads, 2000);
        cr_expect_eq(rc_count(e.fd, "hot", 200), 200, "a key read throughout went\n%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "cold", 2000), 0, "%s", e.h.log);
        env_stop(&e);
}

/* ---- passwords and ACL users -------------------------------------------------------------- */

static char *password_file(const char *dir, const char *text, mode_t mode)
{
        char *path = test_path_join(dir, "password");

        test_write_file(path, "%s", text);
        cr_assert(chmod(path, mode) == 0);
        return path;
}

/*
 * An ACL user with no more than the adapter needs, over TCP and over the unix socket; a wrong
 * password and a missing one are clear errors, said once.
 */
Test(redis, acl_user, .timeout = 60)
{
        static const char *const setuser[] = {
                "ACL", "SETUSER", "cacheage", "on", ">s3cret", "~*", "resetchannels", "-@all",
                "+select", "+scan", "+info", "+time", "+eval", "+evalsha", "+script|load",
                "+object|idletime", "+object|freq", "+pttl", "+memory|usage", "+unlink",
                "+config|get", NULL
        };
        char *dir = test_mkdtemp("cacheage-redis-pw"), *good, *bad;
        struct env e;

        for (int unix_socket = 0; unix_socket < 2; unix_socket++) {
                env_start(&e, unix_socket, NULL);
                rc_ok(e.fd, setuser);
                load(e.fd, "k", 5, 100);
                rc_ok(e.fd, (const char *[]){ "CONFIG", "SET", "requirepass", "other", NULL });
                good = password_file(dir, "s3cret\n", 0600);
                env_host_keys(&e, 1, 1, (const char *[]){ "user", "cacheage", "password_file",
                                                          good, NULL });
                host_rotate(&e.h);
                cr_expect_eq(host_stat(&e.h, "deleted"), 5, "%s", e.h.log);
                cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
                host_cleanup(&e.h);
                free(good);

                bad = password_file(dir, "wrong", 0640);
                env_host_keys(&e, 1, 1, (const char *[]){ "user", "cacheage", "password_file",
                                                          bad, NULL });
                host_rotate(&e.h);
                host_rotate(&e.h);
                cr_expect_eq(host_stat(&e.h, "errors"), 2);
                cr_expect_eq(host_log_count(&e.h, "AUTH refused: \"WRONGPASS"), 2, "%s", e.h.log);
                cr_expect_eq(host_log_count(&e.h, "WARNING"), 1, "%s", e.h.log);
                host_cleanup(&e.h);
                free(bad);

                env_host(&e, 1, 1, NULL, NULL);
                host_rotate(&e.h);
                cr_expect_eq(host_log_count(&e.h, "the server wants a password"), 1, "%s",
                             e.h.log);
                host_cleanup(&e.h);
                e.h = (struct host){ 0 };
                close(e.fd);
                rds_cleanup(&e.r);
        }
        test_rm_rf(dir);
        free(dir);
}

/*
 * An ACL user without a command the adapter needs (issue 31, item 5): a configuration error,
 * said once at error naming the command and the ACL rule that would allow it, the cache's state
 * says so ("deferred: acl denies unlink"), nothing is deleted, and no "refused", "answers again",
 * "refused" at every rotation (the reap's UNLINK flapped so, and nothing ever went). Granted, the
 * next rotation ages, and says once that it may.
 */
Test(redis, acl_user_without_a_command, .timeout = 120)
{
        static const struct {
                const char *missing;  /* the rule left out */
                const char *named;    /* what the error line says */
                const char *deferred; /* the cache's state */
        } cases[] = {
                { "+unlink", "may not run UNLINK (ACL SETUSER cacheage +unlink)",
                  "acl denies unlink" },
                { "+object|idletime",
                  "may not run OBJECT IDLETIME (ACL SETUSER cacheage +object|idletime)",
                  "acl denies object idletime" },
                { "+evalsha", "may not run EVALSHA (ACL SETUSER cacheage +evalsha)",
                  "acl denies evalsha" },
                { "+scan", "may not run SCAN (ACL SETUSER cacheage +scan)", "acl denies scan" },
                { "~*", "may not read every key it is asked about (ACL SETUSER cacheage ~*, or "
                  "the pattern of match)", "acl denies keys" },
        };
        static const char *const rules[] = {
                "+select", "+scan", "+info", "+time", "+eval", "+evalsha", "+script|load",
                "+object|idletime", "+object|freq", "+pttl", "+memory|usage", "+unlink",
                "+config|get",
        };
        char *dir = test_mkdtemp("cacheage-redis-pw"), *pw = password_file(dir, "s3cret\n", 0600);

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                const char *setuser[32] = { "ACL", "SETUSER", "cacheage", "on", ">s3cret",
                                            strcmp(cases[c].missing, "~*") ? "~*" : "~x*",
                                            "resetchannels", "-@all" };
                size_t n = 8;
                const char *reason;
                uint64_t since;
                struct env e;

                for (size_t i = 0; i < ELEMENTSOF(rules); i++)
                        if (strcmp(rules[i], cases[c].missing) != 0)
                                setuser[n++] = rules[i];
                setuser[n] = NULL;
                env_start(&e, false, NULL);
                rc_ok(e.fd, setuser);
                load(e.fd, "k", 5, 100);
                env_host_keys(&e, 1, 1, (const char *[]){ "user", "cacheage", "password_file",
                                                          pw, NULL });
                for (int i = 0; i < 4; i++)
                        host_rotate(&e.h);
                cr_expect_eq(rc_count(e.fd, "k", 5), 5, "%s: a key went", cases[c].missing);
                cr_expect_eq(host_log_count(&e.h, "ERR: redis at"), 1, "%s\n%s",
                             cases[c].missing, e.h.log);
                cr_expect_eq(host_log_count(&e.h, cases[c].named), 1, "%s\n%s",
                             cases[c].missing, e.h.log);
                cr_expect_eq(host_log_count(&e.h, "WARNING"), 0, "%s: flapping\n%s",
                             cases[c].missing, e.h.log);
                cr_expect_eq(host_log_count(&e.h, "answers again"), 0, "%s\n%s",
                             cases[c].missing, e.h.log);
                cr_expect_eq(host_stat(&e.h, "acl_denied"), 1, "%s", cases[c].missing);
                /* Refused a command, it asks again before each scan rather than scan in vain. */
                if (strcmp(cases[c].missing, "~*") != 0)
                        cr_expect_leq(host_stat(&e.h, "scans"), 1, "%s\n%s", cases[c].missing,
                                      e.h.log);
                ca_cache_get_deferred(e.h.cache, &reason, &since);
                cr_expect_str_eq(reason, cases[c].deferred, "%s", cases[c].missing);

                rc_ok(e.fd, (const char *[]){ "ACL", "SETUSER", "cacheage", cases[c].missing,
                                              NULL });
                host_rotate(&e.h);
                cr_expect_eq(host_stat(&e.h, "deleted"), 5, "%s: granted, nothing went\n%s",
                             cases[c].missing, e.h.log);
                cr_expect_eq(host_log_count(&e.h, "may run every command it needs again"), 1,
                             "%s\n%s", cases[c].missing, e.h.log);
                cr_expect_eq(host_stat(&e.h, "acl_denied"), 0, "%s", cases[c].missing);
                ca_cache_get_deferred(e.h.cache, &reason, &since);
                cr_expect_str_eq(reason, "", "%s", cases[c].missing);
                env_stop(&e);
        }
        free(pw);
        test_rm_rf(dir);
        free(dir);
}

/* The password file: as the daemon trusts files, and readable by nobody else. */
Test(redis, password_file_rules)
{
        char *dir = test_mkdtemp("cacheage-redis-pw"), *path, *link;
        struct host h;
        const char *keys[] = { "password_file", NULL, NULL };

        path = password_file(dir, "s3cret\n", 0604);
        keys[1] = path;
        cr_expect_eq(host_try_setup(&h, "redis", 1, 1, keys), -EPERM);
        cr_expect(strstr(h.log, "KEY password_file: ") && strstr(h.log, "is readable by everyone"),
                  "%s", h.log);
        host_cleanup(&h);

        cr_assert(chmod(path, 0600) == 0);
        cr_expect_eq(host_try_setup(&h, "redis", 1, 1, keys), 0, "%s", h.log);
        host_cleanup(&h);

        test_write_file(path, "\n");
        cr_expect_eq(host_try_setup(&h, "redis", 1, 1, keys), -EINVAL);
        cr_expect(strstr(h.log, ": empty"), "%s", h.log);
        host_cleanup(&h);

        test_write_file(path, "one\ntwo\n");
        cr_expect_eq(host_try_setup(&h, "redis", 1, 1, keys), -EINVAL);
        cr_expect(strstr(h.log, "more than one line"), "%s", h.log);
        host_cleanup(&h);

        if (geteuid() == 0) {
                const struct passwd *pw = getpwnam("nobody");

                cr_assert(pw);
                test_write_file(path, "s3cret\n");
                cr_assert(chown(path, pw->pw_uid, pw->pw_gid) == 0);
                cr_expect_eq(host_try_setup(&h, "redis", 1, 1, keys), -EPERM);
                cr_expect(strstr(h.log, "is owned by uid"), "%s", h.log);
                host_cleanup(&h);
        }

        link = test_path_join(dir, "missing");
        keys[1] = link;
        cr_expect_lt(host_try_setup(&h, "redis", 1, 1, keys), 0);
        cr_expect(strstr(h.log, "KEY password_file: "), "%s", h.log);
        host_cleanup(&h);
        cr_expect_eq(host_try_setup(&h, "redis", 1, 1,
                                    (const char *[]){ "user", "cacheage", NULL }), -EINVAL);
        cr_expect(strstr(h.log, "KEY user: a user needs a password_file"), "%s", h.log);
        host_cleanup(&h);
        free(link);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* setfacl @spec on @path (the acl package); an assertion when it fails. */
static void acl_set(const char *spec, const char *path)
{
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "setfacl -m '%s' '%s'", spec, path);
        cr_assert(system(cmd) == 0, "%s failed", cmd);
}

/*
 * A password file of mode 0600 that a POSIX ACL lets another user or group read is as readable
 * by others as one of mode 0604: refused, naming the file and whom (issue 31, item 5: it was
 * accepted, only S_IROTH was looked at). One whose mask cuts the entry, or whose ACL names only
 * root, passes.
 */
Test(redis, password_file_readable_through_an_acl)
{
        static const struct {
                const char *acl;
                const char *refused; /* NULL: accepted */
        } cases[] = {
                { "u:nobody:r", "is readable by uid 65534 (its ACL" },
                { "g:nogroup:r", "is readable by gid 65534 (its ACL" },
                { "u:nobody:r,m::---", NULL },
                { "u:root:r", NULL },
        };
        char *dir = test_mkdtemp("cacheage-redis-pw");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *path = password_file(dir, "s3cret\n", 0600);
                const char *keys[] = { "password_file", path, NULL };
                struct host h;
                int r;

                acl_set(cases[i].acl, path);
                r = host_try_setup(&h, "redis", 1, 1, keys);
                if (cases[i].refused) {
                        cr_expect_eq(r, -EPERM, "%s: %d\n%s", cases[i].acl, r, h.log);
                        cr_expect(strstr(h.log, "KEY password_file: ") && strstr(h.log, path) &&
                                  strstr(h.log, cases[i].refused), "%s:\n%s", cases[i].acl,
                                  h.log);
                } else {
                        cr_expect_eq(r, 0, "%s: %d\n%s", cases[i].acl, r, h.log);
                }
                host_cleanup(&h);
                cr_assert(unlink(path) == 0);
                free(path);
        }
        test_rm_rf(dir);
        free(dir);
}

/* ---- the server changes under a round (issue 31, item 6) ---------------------------------- */

/* @key, as it is (any type), idle for @idle_sec already: DUMP, then RESTORE ... IDLETIME. */
static void make_idle(int fd, const char *key, unsigned idle_sec)
{
        static struct rp_value dv[4];
        char *dump, idle[16], err[RP_ERR_MAX], *r;
        size_t n, used, len, lens[7];
        const char *argv[7] = { "DUMP", key };

        lens[0] = 4;
        lens[1] = strlen(key);
        dump = rc_cmdl(fd, 2, argv, lens, &len);
        cr_assert_eq(rp_parse(dump, len, dv, 4, &n, &used, err, sizeof(err)), 0, "%s", err);
        cr_assert_eq(dv[0].type, RP_BULK, "DUMP %s", key);
        snprintf(idle, sizeof(idle), "%u", idle_sec);
        argv[0] = "RESTORE";
        argv[2] = "0";
        argv[3] = dv[0].str;
        argv[4] = "REPLACE";
        argv[5] = "IDLETIME";
        argv[6] = idle;
        for (size_t i = 0; i < 7; i++)
                lens[i] = strlen(argv[i]);
        lens[3] = dv[0].len;
        r = rc_cmdl(fd, 7, argv, lens, NULL);
        cr_assert_str_eq(r, "+OK\r\n", "RESTORE %s: %s", key, r);
        free(r);
        free(dump);
}

/*
 * Keys of every type Redis has: the scripts' OBJECT, MEMORY USAGE and UNLINK take them all, a
 * read of each type (HGET, LRANGE, SISMEMBER, ZSCORE, XRANGE, GET) is a use, and the unread ones
 * go at the second rotation.
 */
Test(redis, keys_of_every_type, .timeout = 60)
{
        static const struct {
                const char *const make[6];
                const char *const read[6];
        } types[] = {
                { { "SET", "%s", "v" }, { "GET", "%s" } },
                { { "HSET", "%s", "f", "v" }, { "HGET", "%s", "f" } },
                { { "RPUSH", "%s", "a", "b" }, { "LRANGE", "%s", "0", "-1" } },
                { { "SADD", "%s", "a", "b" }, { "SISMEMBER", "%s", "a" } },
                { { "ZADD", "%s", "1", "a" }, { "ZSCORE", "%s", "a" } },
                { { "XADD", "%s", "*", "f", "v" }, { "XRANGE", "%s", "-", "+" } },
        };
        struct env e;
        char key[32];

        env_start(&e, false, NULL);
        for (size_t t = 0; t < ELEMENTSOF(types); t++)
                for (int read = 0; read < 2; read++) {
                        const char *argv[7] = { 0 };
                        char *r;

                        snprintf(key, sizeof(key), "%s%zu", read ? "read" : "unread", t);
                        for (size_t i = 0; types[t].make[i]; i++)
                                argv[i] = strcmp(types[t].make[i], "%s") ? types[t].make[i] : key;
                        r = rc_cmd(e.fd, argv);
                        cr_assert(r[0] != '-', "%s: %s", argv[0], r);
                        free(r);
                        make_idle(e.fd, key, 100);
                }
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "keys"), 12, "%s", e.h.log);
        for (size_t t = 0; t < ELEMENTSOF(types); t++) {
                const char *argv[7] = { 0 };
                char *r;

                snprintf(key, sizeof(key), "read%zu", t);
                for (size_t i = 0; types[t].read[i]; i++)
                        argv[i] = strcmp(types[t].read[i], "%s") ? types[t].read[i] : key;
                r = rc_cmd(e.fd, argv);
                cr_assert(r[0] != '-', "%s: %s", argv[0], r);
                free(r);
        }
        rc_wait_idle(e.fd, "read5", 1);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 6, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "unread", 6), 0, "an unread key stayed");
        cr_expect_eq(rc_count(e.fd, "read", 6), 6, "a read key went");
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/*
 * SCRIPT FLUSH between the scan and the reap: the reap, answered NOSCRIPT, goes again whole;
 * the key read meanwhile stays, the others go, and it is no error.
 */
Test(redis, script_flush_between_scan_and_reap)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 10, 100);
        env_host(&e, 1, 1, NULL, NULL);
        host_refresh(&e.h);
        rc_ok(e.fd, (const char *[]){ "SCRIPT", "FLUSH", NULL });
        cr_assert(rc_get(e.fd, "k0"));
        host_age(&e.h);
        cr_expect(rc_exists(e.fd, "k0"), "the key read after the scan went\n%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "k", 10), 1, "%s", e.h.log);
        cr_expect_geq(host_stat(&e.h, "scripts_reloaded"), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        env_stop(&e);
}

/*
 * The server restarted with another dataset between the scan and the reap, keys of the same
 * names among it, as idle as the old ones: nothing of it goes on the old instance's scan; the
 * next rotation says it restarted and forgets what it knew; the keys go only once seen idle on
 * the new instance.
 */
Test(redis, restarted_with_another_dataset_mid_round, .timeout = 60)
{
        struct env e;

        env_start(&e, false, NULL);
        load(e.fd, "k", 10, 100);
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        host_refresh(&e.h);            /* the scan that finds k0..k9 idle, due now... */
        close(e.fd);
        rds_kill(&e.r);                /* ...then another server, another dataset */
        rds_restart(&e.r);
        e.fd = rc_connect(&e.r);
        load(e.fd, "k", 10, 100);
        load(e.fd, "n", 10, 100);
        host_age(&e.h);
        cr_expect_eq(rc_count(e.fd, "k", 10) + rc_count(e.fd, "n", 10), 20,
                     "a key of the new dataset went on the old one's scan\n%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0, "%s", e.h.log);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "restarted"), 1, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "k", 10) + rc_count(e.fd, "n", 10), 20,
                     "a key went at its first sight on the new instance\n%s", e.h.log);
        host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "k", 10) + rc_count(e.fd, "n", 10), 0, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        env_stop(&e);
}

/* Wait until the redis-server of @fd is a replica whose link to its master is up. */
static void wait_replica_up(int fd)
{
        uint64_t until = test_now_usec() + 20000000;

        for (;;) {
                char *r = rc_cmd(fd, (const char *[]){ "INFO", "replication", NULL });
                bool up = strstr(r, "master_link_status:up") != NULL;

                free(r);
                if (up)
                        return;
                cr_assert(test_now_usec() < until, "no replication link within 20 s");
                usleep(50000);
        }
}

/*
 * The server made a replica (REPLICAOF) between the scan and the reap: its dataset is its
 * master's now, some keys of the same names; none of them goes, on the replica or the master.
 * The next rotation refuses the replica, said once; made a master again, it answers again and
 * ages what it holds.
 */
Test(redis, becomes_a_replica_mid_round, .timeout = 90)
{
        struct rds m;
        char port[16];
        struct env e;
        int fdm;

        rds_start(&m, false, (const char *[]){ "--repl-diskless-sync-delay", "0", NULL });
        fdm = rc_connect(&m);
        load(fdm, "t", 5, 100);        /* the master's t0..t4 */
        env_start(&e, false, NULL);
        load(e.fd, "t", 10, 100);      /* the server's own t0..t9 */
        env_host(&e, 2, 8, NULL, NULL);
        host_rotate(&e.h);
        host_refresh(&e.h);
        snprintf(port, sizeof(port), "%u", m.port);
        rc_ok(e.fd, (const char *[]){ "REPLICAOF", "127.0.0.1", port, NULL });
        wait_replica_up(e.fd);
        host_age(&e.h);
        cr_expect_eq(rc_count(fdm, "t", 5), 5, "a key of the master went\n%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "t", 5), 5, "a key of the replica went\n%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0, "%s", e.h.log);

        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "a replica (role:slave)"), 2, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "WARNING: redis at"), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0, "%s", e.h.log);

        /*
         * The sync rewrote every key: used, so they go only past max_age, unread since (and
         * once a second old: a key seen at idle time 0 counts as used once more).
         */
        rc_ok(e.fd, (const char *[]){ "REPLICAOF", "NO", "ONE", NULL });
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        rc_wait_idle(e.fd, "t0", 1);
        for (int i = 0; i < 11; i++)
                host_rotate(&e.h);
        cr_expect_eq(rc_count(e.fd, "t", 5), 0, "a master again, its unread keys stayed\n%s",
                     e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 5, "%s", e.h.log);
        cr_expect_eq(rc_count(fdm, "t", 5), 5, "a key of the old master went");
        env_stop(&e);
        close(fdm);
        rds_cleanup(&m);
}

/*
 * Made a replica between the scan and the reap, its sync not begun yet (the master waits 5 s
 * before a diskless sync): it still holds its own keys, exactly as the scan saw them, and the
 * reap's UNLINK is refused there (READONLY). Nothing goes; the refusal is said.
 */
Test(redis, replica_before_its_sync_deletes_nothing, .timeout = 60)
{
        struct rds m;
        char port[16];
        struct env e;
        int fdm;

        rds_start(&m, false, (const char *[]){ "--repl-diskless-sync-delay", "5", NULL });
        fdm = rc_connect(&m);
        env_start(&e, false, NULL);
        load(e.fd, "t", 10, 100);
        env_host(&e, 1, 1, NULL, NULL);
        host_refresh(&e.h);
        snprintf(port, sizeof(port), "%u", m.port);
        rc_ok(e.fd, (const char *[]){ "REPLICAOF", "127.0.0.1", port, NULL });
        host_age(&e.h);
        cr_expect_eq(rc_count(e.fd, "t", 10), 10, "a key went on a replica\n%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "the reap script refused: \"READONLY"), 1, "%s",
                     e.h.log);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "a replica (role:slave)"), 1, "%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "t", 10), 10, "a key went on a replica\n%s", e.h.log);
        env_stop(&e);
        close(fdm);
        rds_cleanup(&m);
}

/*
 * The server gone while a paced scan waits for its pace (nothing in flight): the refresh fails
 * at once, said, and the next rotation connects again. It was closed without a word, and the
 * cache's rotations waited for refresh_timeout (69 min by default).
 */
Test(redis, server_gone_while_a_paced_scan_waits, .timeout = 60)
{
        struct env e;
        uint64_t t0;
        int r;

        env_start(&e, false, NULL);
        load(e.fd, "k", 60, 100);
        env_host(&e, 2, 8, "rate", "20");
        e.h.ready = false;
        r = e.h.hooks->before_rotate(e.h.cache, e.h.hooks_userdata);
        cr_assert_eq(r, CA_ROTATE_LATER);
        host_run_for(&e.h, 500); /* the scan under way, waiting for its pace */
        close(e.fd);
        rds_kill(&e.r);
        t0 = test_now_usec();
        while (!e.h.ready && test_now_usec() - t0 < 10000000)
                host_run_for(&e.h, 20);
        cr_expect(e.h.ready, "the refresh still waits, 10 s after the server went\n%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "errors"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "nothing is deleted until a scan succeeds"), 1, "%s",
                     e.h.log);
        rds_restart(&e.r);
        e.fd = rc_connect(&e.r);
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        env_stop(&e);
}

/*
 * CLIENT PAUSE WRITE during the deletes: the reap waits for it (a script may write), and a key
 * read during the pause stays. Paused longer than `timeout`, the round fails, its victims stay,
 * and the reap given up is not run when the pause ends; the next rotation ages again.
 */
Test(redis, client_pause_write_during_the_deletes, .timeout = 60)
{
        struct env e;
        uint64_t t0;

        env_start(&e, false, NULL);
        load(e.fd, "k", 10, 100);
        env_host(&e, 1, 1, NULL, NULL);
        host_refresh(&e.h);
        rc_ok(e.fd, (const char *[]){ "CLIENT", "PAUSE", "1500", "WRITE", NULL });
        cr_assert(rc_get(e.fd, "k0"));
        t0 = test_now_usec();
        host_age(&e.h);
        cr_expect_geq(test_now_usec() - t0, 1000000, "the reap did not wait for the pause");
        cr_expect(rc_exists(e.fd, "k0"), "the key read during the pause went\n%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "k", 10), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "kept_touched"), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        host_cleanup(&e.h);

        load(e.fd, "j", 10, 100);
        env_host(&e, 2, 8, "timeout", "500ms");
        host_rotate(&e.h);
        host_refresh(&e.h);
        rc_ok(e.fd, (const char *[]){ "CLIENT", "PAUSE", "2000", "WRITE", NULL });
        cr_assert(rc_get(e.fd, "j0"));
        host_age(&e.h);
        cr_expect_eq(host_stat(&e.h, "errors"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "no reply within timeout"), 1, "%s", e.h.log);
        usleep(2000000); /* the pause is over: what was given up stays given up */
        cr_expect_eq(rc_count(e.fd, "j", 10), 10, "a reap given up was run\n%s", e.h.log);
        /* The victims spared are new objects: j0, read again, is reused; the rest go. */
        host_rotate(&e.h);
        cr_assert(rc_get(e.fd, "j0"));
        rc_wait_idle(e.fd, "j0", 1);
        host_rotate(&e.h);
        cr_expect(rc_exists(e.fd, "j0"), "the key read again went\n%s", e.h.log);
        cr_expect_eq(rc_count(e.fd, "j", 10), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        env_stop(&e);
}

/* ---- servers that are not Redis, or not quite --------------------------------------------- */

#define SHA "0123456789abcdef0123456789abcdef01234567"
#define SHA_REPLY "$40\r\n" SHA "\r\n"

static void host_on_fake(struct host *h, const struct fake *f)
{
        const char *keys[] = { "server", f->server, "timeout", "300ms", NULL };

        host_setup(h, "redis", 1, 1, keys);
}

/* Each: a clear error, logged once however often it repeats, counted each time; no crash. */
Test(redis, garbage_servers, .timeout = 60)
{
        char *info = rd_fake_info("master"), *replica = rd_fake_info("slave"), *endless, *p;
        struct {
                struct fake_rule rules[5];
                size_t n;
                const char *error;
        } cases[] = {
                { { { .prefix = "", .reply = "-ERR no\r\n" } }, 1, "SELECT refused: \"ERR no\"" },
                { { { .prefix = "", .reply = "HTTP/1.1 400 Bad Request\r\n" } }, 1,
                  "bad reply to SELECT: not a RESP2 reply (type byte 0x48): \"HTTP/1.1 400" },
                { { { .prefix = "", .silent = true } }, 1, "no reply within timeout" },
                { { { .prefix = "", .reply = NULL } }, 1, "connection closed by the server" },
                /* Bytes nobody asked for: a second +OK taken as SCRIPT LOAD's answer. */
                { { { .prefix = "SELECT", .reply = "+OK\r\n+OK\r\n" } }, 1,
                  "bad reply to SCRIPT LOAD: a status where a script's SHA1 was due" },
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = "$999999999\r\n" } }, 2,
                  "a bulk string of 999999999 bytes (more than 262144)" },
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = SHA_REPLY },
                    { .prefix = "INFO", .reply = info },
                    { .prefix = "SCAN", .reply = ":1\r\n" } }, 4,
                  "bad SCAN reply: an integer where SCAN's [cursor, keys] was due" },
                /* A reply that goes on past every bound: SCAN's keys, 3,000 of 300 bytes. */
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = SHA_REPLY },
                    { .prefix = "INFO", .reply = info },
                    { .prefix = "SCAN", .reply = NULL } }, 4, "a reply longer than 524288 bytes" },
                /* NOSCRIPT to EVALSHA, and to the whole script too. */
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = SHA_REPLY },
                    { .prefix = "INFO", .reply = info },
                    { .prefix = "SCAN", .reply = "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n" },
                    { .prefix = "EVAL", .reply = "-NOSCRIPT No matching script.\r\n" } }, 5,
                  "the probe script refused: \"NOSCRIPT" },
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = SHA_REPLY },
                    { .prefix = "INFO", .reply = info },
                    { .prefix = "SCAN", .reply = "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n" },
                    { .prefix = "EVALSHA", .reply = "*3\r\n:1000\r\n$1\r\n1\r\n:0\r\n" } }, 5,
                  "bad reply to the probe script: value 2 is a bulk string, not an integer" },
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = SHA_REPLY },
                    { .prefix = "INFO", .reply = replica } }, 3, "a replica (role:slave)" },
                { { { .prefix = "SELECT", .reply = "+OK\r\n" },
                    { .prefix = "SCRIPT", .reply = SHA_REPLY },
                    { .prefix = "INFO", .reply = "$11\r\n# Server\r\nx\r\n" } }, 3,
                  "INFO without a redis_version (is this Redis?)" },
        };
        struct fake f;
        struct host h;
        uint64_t errors = 0;

        endless = malloc(3000 * 310 + 32);
        cr_assert(endless);
        p = endless + sprintf(endless, "*2\r\n$1\r\n0\r\n*3000\r\n");
        for (int i = 0; i < 3000; i++) {
                p += sprintf(p, "$300\r\n");
                memset(p, 'e', 300);
                p += 300;
                p += sprintf(p, "\r\n");
        }
        *p = '\0';
        cases[7].rules[3].reply = endless;

        fake_start(&f, rd_frame);
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
                cr_expect_eq(host_log_count(&h, "WARNING: redis at"), i + 1, "case %zu\n%s", i,
                             h.log);
                cr_expect_eq(host_stat(&h, "keys"), 0);
                cr_expect_eq(host_stat(&h, "deleted"), 0);
        }
        host_cleanup(&h);
        fake_stop(&f);
        free(endless);
        free(replica);
        free(info);
}

/*
 * A failure of the same kind with other particulars (another excerpt) is said once at warning,
 * as memcached's: an error reply that differs at every rotation was said at every rotation.
 */
Test(redis, same_failure_with_another_excerpt_said_once)
{
        const struct fake_rule rules[] = {
                { .prefix = "", .reply = "-ERR busy 1\r\n", .times = 1 },
                { .prefix = "", .reply = "-ERR busy 2\r\n" },
        };
        struct fake f;
        struct host h;

        fake_start(&f, rd_frame);
        fake_script(&f, rules, ELEMENTSOF(rules));
        host_on_fake(&h, &f);
        host_rotate(&h);
        host_rotate(&h);
        cr_expect_eq(host_stat(&h, "errors"), 2, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "SELECT refused: \"ERR busy 1\""), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "SELECT refused: \"ERR busy 2\""), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "WARNING: redis at"), 1, "said twice:\n%s", h.log);
        cr_expect_eq(host_log_count(&h, "(again)"), 1, "%s", h.log);
        host_cleanup(&h);
        fake_stop(&f);
}

/*
 * timeout bounds a silence only: a server that sends a byte every 100 ms, or whose SCAN cursor
 * never comes back to 0, would hold the refresh (and so every rotation of the cache) for ever,
 * and say nothing. refresh_timeout bounds the whole refresh: cut, counted, said once, retried.
 */
Test(redis, refresh_deadline, .timeout = 120)
{
        char *info = rd_fake_info("master");
        const struct fake_rule endless[] = {
                { .prefix = "SELECT", .reply = "+OK\r\n" },
                { .prefix = "SCRIPT", .reply = SHA_REPLY },
                { .prefix = "INFO", .reply = info },
                { .prefix = "SCAN", .reply = "*2\r\n$1\r\n7\r\n*0\r\n" },
        };
        const struct fake_rule trickle[] = {
                { .prefix = "SELECT", .reply = "+OK\r\n" },
                { .prefix = "SCRIPT", .reply = SHA_REPLY },
                { .prefix = "INFO", .reply = info, .trickle_ms = 100 },
        };
        const struct fake_rule good[] = {
                { .prefix = "SELECT", .reply = "+OK\r\n" },
                { .prefix = "SCRIPT", .reply = SHA_REPLY },
                { .prefix = "INFO", .reply = info },
                { .prefix = "SCAN", .reply = "*2\r\n$1\r\n0\r\n*0\r\n" },
        };
        const char *keys[] = { "server", NULL, "timeout", "1s", "refresh_timeout", "2s", NULL };
        uint64_t t0;
        struct fake f;
        struct host h;

        fake_start(&f, rd_frame);
        keys[1] = f.server;
        fake_script(&f, endless, ELEMENTSOF(endless));
        host_setup(&h, "redis", 1, 1, keys);
        t0 = test_now_usec();
        host_refresh(&h);
        cr_expect_geq(test_now_usec() - t0, 1900000, "cut before refresh_timeout");
        cr_expect_eq(host_stat(&h, "refresh_timeouts"), 1, "%s", h.log);
        cr_expect_eq(host_stat(&h, "errors"), 1);
        cr_expect_eq(host_log_count(&h, "WARNING: redis at"), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "no whole refresh within refresh_timeout (2s; the "
                                        "server was scanning)"), 1, "%s", h.log);

        /* A byte every 100 ms: never a second of silence, never a whole INFO in 2 s. */
        fake_script(&f, trickle, ELEMENTSOF(trickle));
        host_refresh(&h);
        cr_expect_eq(host_stat(&h, "refresh_timeouts"), 2, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "no whole refresh within refresh_timeout (2s; the "
                                        "server was reading INFO)"), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "WARNING: redis at"), 1, "said twice:\n%s", h.log);
        cr_expect_eq(host_stat(&h, "keys"), 0);

        /* A good server again: a whole refresh, and nothing cut. */
        fake_script(&f, good, ELEMENTSOF(good));
        host_refresh(&h);
        cr_expect_eq(host_stat(&h, "scans"), 1, "%s", h.log);
        host_run_for(&h, 2500);
        cr_expect_eq(host_stat(&h, "refresh_timeouts"), 2, "a finished refresh was cut:\n%s",
                     h.log);
        host_cleanup(&h);
        fake_stop(&f);
        free(info);
}

/*
 * The whole exchange of a rotation as the adapter speaks it, against a scripted server: both
 * scripts take TIME for the LRU clock 250 ms into a second (hz 10); the reap carries the key's
 * lru as the probe's clock and idle time gave it (1000 - 100), the forks as INFO said them and
 * no dry run; its result is the sampled bytes of the first key deleted.
 */
Test(redis, scripted_exchange)
{
        char *info = rd_fake_info("master");
        const struct fake_rule rules[] = {
                { .prefix = "SELECT 0", .reply = "+OK\r\n" },
                { .prefix = "SCRIPT LOAD", .reply = SHA_REPLY },
                { .prefix = "INFO memory", .reply = info },
                { .prefix = "INFO", .reply = info },
                { .prefix = "SCAN 0 COUNT 8", .reply = "*2\r\n$1\r\n0\r\n*1\r\n$3\r\nk 1\r\n" },
                { .prefix = "EVALSHA " SHA " 1 k 1 lru 250000 0 0 900",
                  .reply = "*2\r\n:0\r\n:64\r\n" },
                { .prefix = "EVALSHA " SHA " 1 k 1 lru 250000",
                  .reply = "*3\r\n:1000\r\n:100\r\n:0\r\n" },
        };
        struct fake f;
        struct host h;

        fake_start(&f, rd_frame);
        fake_script(&f, rules, ELEMENTSOF(rules));
        host_on_fake(&h, &f);
        host_rotate(&h);
        cr_expect_eq(host_stat(&h, "errors"), 0, "%s", h.log);
        cr_expect_eq(host_stat(&h, "scans"), 1);
        cr_expect_eq(host_stat(&h, "deleted"), 1, "%s", h.log);
        cr_expect_eq(host_stat(&h, "bytes_freed"), 64);
        cr_expect_eq(host_stat(&h, "used_memory_after"), 1000000);
        cr_expect_eq(host_stat(&h, "used_memory_rss_before"), 2000000);
        cr_expect_eq(f.used[1], 2, "both scripts loaded");
        cr_expect_eq(f.used[5], 1, "no reap with the lru seen");
        cr_expect_eq(f.used[6], 1, "no probe");
        host_cleanup(&h);
        fake_stop(&f);
        free(info);
}

/*
 * Scripts answered with the wrong types (issue 31, item 6): each a clear error naming the script,
 * counted, nothing counted deleted, the reap's victim spared (tracked still) or the probe's walk
 * not trusted; never a crash. The exchange is scripted_exchange's, the script's reply changed.
 */
Test(redis, scripts_answered_with_wrong_types)
{
        char *info = rd_fake_info("master");
        static const struct {
                bool probe;           /* the probe's reply is wrong, else the reap's */
                const char *reply;
                const char *said;
        } cases[] = {
                { false, "+OK\r\n", "bad reply to the reap script: " },
                { false, "$2\r\n64\r\n", "bad reply to the reap script: " },
                { false, "*2\r\n:0\r\n$2\r\n64\r\n", "bad reply to the reap script: " },
                { false, "*2\r\n:1\r\n:0\r\n", "a status other than 0" },
                { false, "*1\r\n:0\r\n", "bad reply to the reap script: " },
                { false, "*-1\r\n", "bad reply to the reap script: " },
                { false, "$-1\r\n", "bad reply to the reap script: " },
                { false, "*2\r\n:0\r\n*1\r\n:0\r\n", "bad reply to the reap script: " },
                { false, "*2\r\n:0\r\n:-7\r\n", "a reap result out of range (-7)" },
                { false, ":0\r\n", "bad reply to the reap script: " },
                { true, "*-1\r\n", "bad reply to the probe script: " },
                { true, "*3\r\n+a\r\n+b\r\n+c\r\n", "bad reply to the probe script: " },
                { true, "*3\r\n:-5\r\n:100\r\n:0\r\n", "an LRU clock out of range" },
                { true, "*3\r\n:1000\r\n:100\r\n:7\r\n", "a probe result out of range" },
                { true, "*5\r\n:1000\r\n:100\r\n:0\r\n:1\r\n:0\r\n", "bad reply to the probe" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const struct fake_rule rules[] = {
                        { .prefix = "SELECT 0", .reply = "+OK\r\n" },
                        { .prefix = "SCRIPT LOAD", .reply = SHA_REPLY },
                        { .prefix = "INFO", .reply = info },
                        { .prefix = "SCAN 0 COUNT 8",
                          .reply = "*2\r\n$1\r\n0\r\n*1\r\n$3\r\nk 1\r\n" },
                        { .prefix = "EVALSHA " SHA " 1 k 1 lru 250000 0 0 900",
                          .reply = cases[i].probe ? "*2\r\n:0\r\n:64\r\n" : cases[i].reply },
                        { .prefix = "EVALSHA " SHA " 1 k 1 lru 250000",
                          .reply = cases[i].probe ? cases[i].reply
                                                  : "*3\r\n:1000\r\n:100\r\n:0\r\n" },
                };
                struct fake f;
                struct host h;

                fake_start(&f, rd_frame);
                fake_script(&f, rules, ELEMENTSOF(rules));
                host_on_fake(&h, &f);
                host_rotate(&h);
                cr_expect_eq(host_stat(&h, "errors"), 1, "case %zu\n%s", i, h.log);
                cr_expect_eq(host_log_count(&h, cases[i].said), 1, "case %zu: %s\n%s", i,
                             cases[i].said, h.log);
                cr_expect_eq(host_stat(&h, "deleted"), 0, "case %zu", i);
                cr_expect_eq(host_stat(&h, "keys"), cases[i].probe ? 0 : 1,
                             "case %zu: the victim was not spared\n%s", i, h.log);
                cr_expect_eq(host_stat(&h, "round_victims"), 0, "case %zu", i);
                host_cleanup(&h);
                fake_stop(&f);
        }
        free(info);
}

/* ---- the real cacheaged ------------------------------------------------------------------- */

/* A daemon with the redis adapter on @server and a dcache model beside it. */
static void daemon_start(struct test_daemon *d, const char *server, const char *extra)
{
        test_daemon_setup(d);
        test_write_file(d->conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 300ms\n"
                        "[cache rd]\nadapter = redis\nserver = %s\n%s"
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

/* The whole daemon: exactly the unread keys go, beside a cache of another adapter; a reload. */
Test(redis, daemon_ages_beside_another_cache, .timeout = 60)
{
        struct test_daemon d;
        struct rds r;
        size_t from;
        int fd;

        rds_start(&r, false, NULL);
        fd = rc_connect(&r);
        load(fd, "u", 10, 100);
        load(fd, "f", 10, 100);
        daemon_start(&d, r.server, NULL);
        /* The read keys are read throughout; the others go. */
        for (int i = 0; i < 300 && count_in(test_daemon_log(&d), "rd: aged: 10 victims") == 0;
             i++) {
                read_keys(fd, "f", 10);
                usleep(100000);
        }
        cr_assert(count_in(test_daemon_log(&d), "rd: aged: 10 victims"), "%s", test_daemon_log(&d));
        cr_expect_eq(rc_count(fd, "u", 10), 0);
        cr_expect_eq(rc_count(fd, "f", 10), 10);
        cr_expect(count_in(test_daemon_log(&d), "model: rotation, ") >= 2, "%s",
                  test_daemon_log(&d));
        /* A reload keeps the cache, which goes on aging. */
        load(fd, "v", 5, 100);
        from = strlen(test_daemon_log(&d));
        kill(d.pid, SIGHUP);
        cr_assert(test_daemon_wait_log(&d, from, "rd: aged: 5 victims", 30000), "%s",
                  test_daemon_log(&d));
        cr_expect_eq(rc_count(fd, "v", 5), 0);
        cr_expect_eq(rc_count(fd, "f", 10), 10);
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        close(fd);
        rds_cleanup(&r);
}

/*
 * The atomic check, for real: a proxy holds the daemon's first reap; the test rewrites one of
 * its keys meanwhile; the reap, let go, finds the key used: the new value is there.
 */
Test(redis, daemon_rewrite_between_scan_and_delete_survives, .timeout = 60)
{
        struct test_daemon d;
        struct proxy p;
        struct rds r;
        const char *held;
        char key[64], *val;
        int fd;

        rds_start(&r, false, NULL);
        proxy_start(&p, r.port, rd_frame, rd_hold_reap);
        fd = rc_connect(&r);
        load(fd, "k", 3, 100);
        daemon_start(&d, p.server, "timeout = 60s\n");
        held = proxy_wait_held(&p, 30000);
        cr_assert(held, "no reap came\n%s", test_daemon_log(&d));
        cr_assert(sscanf(held, "EVALSHA %*s %*d %63s", key) == 1, "%s", held);
        rc_set(fd, key, "rewritten");
        proxy_release(&p);
        cr_assert(test_daemon_wait_log(&d, 0, "1 kept as used since", 30000), "%s",
                  test_daemon_log(&d));
        val = rc_cmd(fd, (const char *[]){ "GET", key, NULL });
        cr_expect_str_eq(val, "$9\r\nrewritten\r\n", "%s, rewritten while its delete was on the "
                         "way: %s", key, val);
        free(val);
        cr_expect_eq(rc_count(fd, "k", 3), 1, "the two others stayed");
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        proxy_stop(&p);
        close(fd);
        rds_cleanup(&r);
}

/* redis-server killed mid-run: said once, the other cache keeps aging; started again: recovered. */
Test(redis, daemon_redis_restarted, .timeout = 60)
{
        struct test_daemon d;
        struct rds r;
        size_t from, models;
        int fd;

        rds_start(&r, false, NULL);
        daemon_start(&d, r.server, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "rd: scan: ", 30000), "%s", test_daemon_log(&d));
        rds_kill(&r);
        cr_assert(test_daemon_wait_log(&d, 0, "nothing is deleted until a scan succeeds", 30000),
                  "%s", test_daemon_log(&d));
        from = strlen(test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, from, "(again)", 30000), "%s", test_daemon_log(&d));
        from = strlen(test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, from, "(again)", 30000), "%s", test_daemon_log(&d));
        models = count_in(test_daemon_log(&d) + from, "model: rotation, ");
        cr_expect(models >= 1, "the other cache stopped aging\n%s", test_daemon_log(&d));
        cr_expect_eq(count_in(test_daemon_log(&d), "cannot connect: Connection refused; nothing "
                              "is deleted until a scan succeeds"), 1, "%s", test_daemon_log(&d));
        rds_restart(&r);
        fd = rc_connect(&r);
        load(fd, "k", 4, 100);
        cr_assert(test_daemon_wait_log(&d, 0, "answers again", 30000), "%s", test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, 0, "rd: aged: 4 victims", 30000), "%s",
                  test_daemon_log(&d));
        cr_expect_eq(rc_count(fd, "k", 4), 0);
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        close(fd);
        rds_cleanup(&r);
}

/* A server speaking garbage: a clear error, the daemon runs on and stops cleanly. */
Test(redis, daemon_garbage_server, .timeout = 60)
{
        const struct fake_rule rules[] = {
                { .prefix = "", .reply = "220 smtp.example ESMTP\r\n" },
        };
        struct test_daemon d;
        struct fake f;

        fake_start(&f, rd_frame);
        fake_script(&f, rules, ELEMENTSOF(rules));
        daemon_start(&d, f.server, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "bad reply to SELECT: not a RESP2 reply (type byte "
                                       "0x32): \"220 smtp.example ESMTP", 30000), "%s",
                  test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, strlen(test_daemon_log(&d)), "model: rotation, ",
                                       30000), "the other cache stopped");
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
        fake_stop(&f);
}

/* Bad keys: every one said, with its file and line; nothing runs. */
Test(redis, daemon_bad_keys)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        const char *log;
        char *pw;

        test_daemon_setup(&d);
        args[1] = d.conf;
        pw = password_file(d.dir, "s3cret", 0644);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\n"
                        "[cache rd]\nadapter = redis\nserver = cache.example:6379\n"
                        "timeout = 1ms\nmax_keys = 0\ndry_run = perhaps\ncolour = red\n"
                        "rate = fast\nttl_keys = maybe\ndb = 70000\nmatch = a b\n"
                        "delete_rate = -5\npassword_file = %s\n",
                        test_env("CA_ADAPTER_DIR"), pw);
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 1);
        log = test_daemon_log(&d);
        cr_expect(strstr(log, "cacheaged.conf:5: server: invalid server \"cache.example:6379\" "
                              "(expected IPv4:PORT, [IPv6]:PORT, localhost:PORT or an absolute "
                              "socket path; names are not resolved)"), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:6: timeout: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:7: max_keys: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:8: dry_run: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:9: colour: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:10: rate: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:11: ttl_keys: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:12: db: "), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:13: match: a SCAN pattern with a blank"), "%s", log);
        cr_expect(strstr(log, "cacheaged.conf:14: delete_rate: "), "%s", log);

        /* The keys are good, the password file is not: said with its line. */
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n"
                        "[cache rd]\nadapter = redis\npassword_file = %s\n",
                        test_env("CA_ADAPTER_DIR"), pw);
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 1);
        cr_expect(strstr(test_daemon_log(&d), "cacheaged.conf:5: password_file: ") &&
                  strstr(test_daemon_log(&d), "is readable by everyone"), "%s",
                  test_daemon_log(&d));

        cr_assert(chmod(pw, 0600) == 0);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\n"
                        "[cache a]\nadapter = redis\nserver = [::1]:6379\n"
                        "[cache b]\nadapter = redis\nserver = /run/redis/redis-server.sock\n"
                        "user = cacheage\npassword_file = %s\n"
                        "[cache c]\nadapter = redis\nserver = localhost:6379\ndry_run = yes\n"
                        "match = sessions:*\nttl_keys = age\ndb = 2\n",
                        test_env("CA_ADAPTER_DIR"), pw);
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
        free(pw);
        test_daemon_cleanup(&d);
}

/* The commented example of conf/cacheaged.conf, its keys uncommented, is a good section. */
Test(redis, conf_example_checks)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        char path[4096], *conf, *p, *example;
        size_t n = 0;

        snprintf(path, sizeof(path), "%s/../conf/cacheaged.conf", test_env("CA_TEST_SRCDIR"));
        conf = test_read_file(path);
        p = strstr(conf, "#[cache redis]\n");
        cr_assert(p, "no redis example in %s", path);
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
        cr_assert(strstr(example, "adapter = redis\n"), "%s", example);
        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n%s", test_env("CA_ADAPTER_DIR"),
                        example);
        cr_expect_eq(test_daemon_run_to_exit(&d, args), 0, "%s\n%s", example, test_daemon_log(&d));
        test_daemon_cleanup(&d);
        free(example);
        free(conf);
}
