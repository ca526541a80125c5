/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-redis: what aging a real Redis gives back and what it costs its users, in one run,
 * against what a Redis user would do instead.
 *
 *   1. A redis-server of its own on 127.0.0.1 (--save '' --appendonly no, never the system's)
 *      gets KEYS keys (default 1,000,000, 64-byte values); one in ten is read again, so nine in
 *      ten are written once and never read.
 *   2. The real cacheaged (--bus none), run as its unit runs it (SCHED_IDLE), ages it with the
 *      redis adapter, in CYCLES cycles (default 1) of two rotations: the first scans everything
 *      (the unread keys are new: nothing due), the second scans again and deletes the unread
 *      keys (checked and UNLINKed by the adapter's script). After each deleting rotation: INFO
 *      memory, MEMORY PURGE (jemalloc gives its dirty pages back at once), INFO memory again.
 *      Between cycles as many unread keys are written again, under new names (a generation of
 *      its own): new keys, as a cache gets them. With nobody aging them, each generation would
 *      add what the deletes freed (printed). At the end: whether the server can defragment.
 *   3. Meanwhile a client GETs the hot keys, one request at a time (each hot key in turn, every
 *      one read at least once a period), from another thread, and every latency is kept with
 *      its time. Its p99 while the adapter is idle is the baseline; its p99 during each
 *      rotation, during every rotation of a kind, and during the deletes alone, is reported
 *      against it (the goal is within 1.5x). The noise floor: idle windows as long as the
 *      rotations, pooled the same way.
 *   4. Controls, before the daemon starts: a plain client does the scan's work at full speed
 *      (SCAN, then OBJECT IDLETIME and PTTL of every key, pipelined), twice, then UNLINKs the
 *      unread keys at full speed, then for about PACED_SECONDS at the adapter's
 *      pace (PACED_BATCH keys a command, at its delete_rate: the cost of the deletes alone,
 *      without the adapter's checks), the keys set again after each: what that work costs the
 *      client from Redis itself, whoever asks.
 *   5. The daemon's loop: the adapter's longest step, its steps over slice_time on the CPU, the
 *      longest gap between watchdog pings, and the control of bench-memcached (plain arithmetic
 *      at SCHED_IDLE, after the daemon stops). Its memory: RSS per key tracked.
 *   6. The alternatives, on a fresh redis-server each, with the same keys and the same client:
 *      maxmemory + allkeys-lru (maxmemory set to the hot set's used_memory times 1.5; the unread
 *      keys written after the hot ones, one SET at a time: what is evicted, the hot keys lost,
 *      and the SETs' latency while Redis evicts in their path), and a TTL on every key (what is
 *      left after it, hot keys included, and the GETs' latency while Redis expires them).
 *
 * Nothing is asserted here about speed; the figures are printed, as ratios to baselines of the
 * same run. --check (with a few keys) makes a run that only checks that exactly the unread keys
 * went, for the test suite.
 *
 * Environment: CACHEAGED (the daemon), CA_ADAPTER_DIR (redis.so). Needs redis-server in PATH
 * (Debian: redis-server).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-util.h"
#include "redis-proto.h"

#define VALUE_BYTES 64
#define HOT_EVERY 10               /* one key in ten is read again */
#define LOAD_BATCH 1000            /* commands per write while loading */
#define MAX_SAMPLES (64u << 20)    /* client latencies kept */
#define MAX_CYCLES 10              /* of a scan, then a scan and deletes */
#define CONTROL_SCANS 2
#define CONTROL_BATCH 512          /* keys per pipelined batch of the controls */
#define PACED_BATCH 64             /* keys per UNLINK of the paced control: the adapter's reap */
#define PACED_SECONDS 100          /* the paced control: the unread keys of delete_rate x this */
#define ADAPTER_DELETE_RATE 250    /* victims/s: the adapter's default (RD_DELETE_RATE_DEFAULT) */
#define TTL_SEC 20                 /* the TTL alternative's time to live */

static const char *const watched[] = {
        "rd: refresh: ", "rd: scan: ", "rd: aged: ", "rd: rotation ", "Failed", "redis at", NULL
};

/* ---- a Redis client ---- */

static uint16_t port;

/* A blocking connection; its last reply's values in v[] (each thread has its own). */
struct conn {
        int fd;
        char *buf;
        size_t len, cap;
        size_t used;           /* bytes of the last reply, still at the start of buf */
        struct rp_value *v;
};

static void conn_open(struct conn *c)
{
        c->fd = bench_connect(port);
        if (c->fd < 0)
                bench_die("cannot connect to redis-server on port %u", port);
        c->cap = 1 << 16;
        c->len = c->used = 0;
        c->buf = malloc(c->cap);
        c->v = malloc(RP_VALUES_MAX * sizeof(*c->v));
        if (!c->buf || !c->v)
                bench_die("out of memory");
}

static void conn_close(struct conn *c)
{
        close(c->fd);
        free(c->buf);
        free(c->v);
}

/* Append a command of @argc words (binary: @lens) to @out. */
static size_t cmd(char *out, size_t argc, const char *const *argv, const size_t *lens)
{
        return rp_command(out, SIZE_MAX, argc, argv, lens);
}

static size_t cmdv(char *out, const char *const *argv)
{
        size_t lens[PACED_BATCH + 2], argc = 0;

        for (; argv[argc]; argc++) {
                if (argc == sizeof(lens) / sizeof(*lens))
                        bench_die("cmdv: more than %d words", PACED_BATCH + 2);
                lens[argc] = strlen(argv[argc]);
        }
        return cmd(out, argc, argv, lens);
}

/*
 * The next reply: its values in c->v[] (valid until the next call), their count returned.
 * The reply's bytes stay in the buffer until then.
 */
static size_t conn_reply(struct conn *c)
{
        char err[RP_ERR_MAX];
        size_t n, used;

        /* What the last reply used goes first. */
        memmove(c->buf, c->buf + c->used, c->len - c->used);
        c->len -= c->used;
        c->used = 0;
        for (;;) {
                int r = rp_parse(c->buf, c->len, c->v, RP_VALUES_MAX, &n, &used, err,
                                 sizeof(err));
                ssize_t got;

                if (r == 0) {
                        c->used = used;
                        return n;
                }
                if (r != -EAGAIN)
                        bench_die("a bad reply from redis-server: %s", err);
                if (c->cap - c->len < 65536) {
                        c->cap *= 2;
                        c->buf = realloc(c->buf, c->cap);
                        if (!c->buf)
                                bench_die("out of memory");
                }
                got = read(c->fd, c->buf + c->len, c->cap - c->len);
                if (got <= 0)
                        bench_die("read from redis-server: %s",
                                  got == 0 ? "closed" : strerror(errno));
                c->len += (size_t)got;
        }
}

/* One command, its reply's values in values[]. */
static size_t conn_cmd(struct conn *c, const char *const *argv)
{
        char out[4096];

        bench_write_all(c->fd, out, cmdv(out, argv));
        return conn_reply(c);
}

static uint64_t info_u64(struct conn *c, const char *section, const char *name)
{
        uint64_t v = 0;

        if (conn_cmd(c, (const char *[]){ "INFO", section, NULL }) != 1 ||
            c->v[0].type != RP_BULK ||
            rp_info_u64(c->v[0].str, c->v[0].len, name, UINT64_MAX, &v) < 0)
                bench_die("INFO %s without %s", section, name);
        return v;
}

/*
 * Key @i of generation @gen: the hot keys (one in HOT_EVERY) are the same in every generation;
 * the unread ones of generation 0 are "bench:N", those of later generations "bench:N:GEN".
 */
static int key_gen(char *buf, uint64_t i, unsigned gen)
{
        if (gen == 0 || i % HOT_EVERY == 0)
                return sprintf(buf, "bench:%08" PRIu64, i);
        return sprintf(buf, "bench:%08" PRIu64 ":%u", i, gen);
}

static int key(char *buf, uint64_t i)
{
        return key_gen(buf, i, 0);
}

/*
 * Set the keys [0, @n) of generation @gen (pipelined), with a TTL of @ttl_sec when not 0; with
 * @unread_only, only the unread ones. Then, unless @unread_only, GET each hot key once: one in
 * ten is read again.
 */
static void load(uint64_t n, bool unread_only, unsigned ttl_sec, unsigned gen)
{
        char *batch = malloc(LOAD_BATCH * 256), value[VALUE_BYTES + 1], k[32], ttl[16];
        struct conn c;

        if (!batch)
                bench_die("out of memory");
        memset(value, 'v', VALUE_BYTES);
        value[VALUE_BYTES] = '\0';
        snprintf(ttl, sizeof(ttl), "%u", ttl_sec);
        conn_open(&c);
        for (uint64_t i = 0; i < n; i += LOAD_BATCH) {
                size_t len = 0, sent = 0;

                for (uint64_t j = i; j < n && j < i + LOAD_BATCH; j++) {
                        if (unread_only && j % HOT_EVERY == 0)
                                continue;
                        key_gen(k, j, gen);
                        len += cmdv(batch + len,
                                    ttl_sec ? (const char *[]){ "SET", k, value, "EX", ttl, NULL }
                                            : (const char *[]){ "SET", k, value, NULL });
                        sent++;
                }
                bench_write_all(c.fd, batch, len);
                for (size_t r = 0; r < sent; r++)
                        conn_reply(&c);
        }
        for (uint64_t i = 0; !unread_only && i < n; i += LOAD_BATCH * HOT_EVERY) {
                size_t len = 0, sent = 0;

                for (uint64_t j = i; j < n && j < i + LOAD_BATCH * HOT_EVERY; j += HOT_EVERY) {
                        key(k, j);
                        len += cmdv(batch + len, (const char *[]){ "GET", k, NULL });
                        sent++;
                }
                bench_write_all(c.fd, batch, len);
                for (size_t r = 0; r < sent; r++)
                        conn_reply(&c);
        }
        conn_close(&c);
        free(batch);
}

/* How many keys of generation @gen are still there, hot ones and the others (EXISTS: no touch). */
static void count_present(uint64_t n, unsigned gen, uint64_t *ret_hot, uint64_t *ret_other)
{
        char *batch = malloc(LOAD_BATCH * 64), k[32];
        struct conn c;

        if (!batch)
                bench_die("out of memory");
        *ret_hot = *ret_other = 0;
        conn_open(&c);
        for (uint64_t i = 0; i < n; i += LOAD_BATCH) {
                size_t len = 0;

                for (uint64_t j = i; j < n && j < i + LOAD_BATCH; j++) {
                        key_gen(k, j, gen);
                        len += cmdv(batch + len, (const char *[]){ "EXISTS", k, NULL });
                }
                bench_write_all(c.fd, batch, len);
                for (uint64_t j = i; j < n && j < i + LOAD_BATCH; j++) {
                        conn_reply(&c);
                        if (c.v[0].type == RP_INTEGER && c.v[0].integer == 1)
                                *(j % HOT_EVERY == 0 ? ret_hot : ret_other) += 1;
                }
        }
        conn_close(&c);
        free(batch);
}

/* ---- the client: GETs of hot keys, one at a time ---- */

struct client {
        uint64_t keys;
        bool spin;             /* busy-wait between GETs, not sleep */
        struct bench_samples s;
        uint64_t misses;       /* GETs that found nothing */
        volatile bool stop;
        pthread_t thread;
};

static void *client_thread(void *userdata)
{
        struct client *cl = userdata;
        uint64_t hot = (cl->keys + HOT_EVERY - 1) / HOT_EVERY;
        char out[128], k[32];
        struct conn c;

        conn_open(&c);
        for (uint64_t j = 0; !cl->stop && cl->s.n < cl->s.max; j++) {
                size_t len;
                uint64_t t0;

                /* Each hot key in turn: every one is read in every period (100,000 in 10 s). */
                key(k, j % hot * HOT_EVERY);
                len = cmdv(out, (const char *[]){ "GET", k, NULL });
                t0 = bench_now_usec();
                bench_write_all(c.fd, out, len);
                conn_reply(&c);
                bench_sample(&cl->s, t0, bench_now_usec() - t0);
                if (c.v[0].type == RP_NIL)
                        cl->misses++;
                /* About 10,000 GETs a second: a steady client, not a load generator. */
                bench_pace(t0, 100, cl->spin);
        }
        conn_close(&c);
        return NULL;
}

static void client_start(struct client *cl, uint64_t keys)
{
        cl->keys = keys;
        cl->stop = false;
        cl->misses = 0;
        cl->s.n = 0;
        if (pthread_create(&cl->thread, NULL, client_thread, cl) != 0)
                bench_die("thread");
}

static void client_stop(struct client *cl)
{
        cl->stop = true;
        pthread_join(cl->thread, NULL);
}

/* ---- redis-server ---- */

static void server_start(struct bench_child *s, const char *dir, const char *name)
{
        char port_s[16], log[512];

        port = bench_free_port();
        snprintf(port_s, sizeof(port_s), "%u", port);
        snprintf(log, sizeof(log), "%s/%s.log", dir, name);
        {
                const char *argv[] = { "redis-server", "--port", port_s, "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no", "--dir", dir,
                                       "--daemonize", "no", NULL };

                bench_child_start(s, argv, log, NULL, false, false);
        }
        for (int i = 0;; i++) {
                int fd = bench_connect(port);

                if (fd >= 0) {
                        close(fd);
                        break;
                }
                if (i > 1000)
                        bench_die("redis-server did not start (see %s)", log);
                usleep(10000);
        }
}

/* used_memory and used_memory_rss now, then after MEMORY PURGE. */
struct memory {
        uint64_t used, rss, rss_purged;
};

static struct memory memory_now(bool purge)
{
        struct memory m = { 0 };
        struct conn c;

        conn_open(&c);
        m.used = info_u64(&c, "memory", "used_memory");
        m.rss = info_u64(&c, "memory", "used_memory_rss");
        if (purge) {
                conn_cmd(&c, (const char *[]){ "MEMORY", "PURGE", NULL });
                usleep(200000);
                m.rss_purged = info_u64(&c, "memory", "used_memory_rss");
        }
        conn_close(&c);
        return m;
}

/*
 * Whether this redis-server can give the pages that deleted keys leave half full back by moving
 * the survivors together (CONFIG SET activedefrag yes): its answer, "yes" when it takes it (then
 * set back to no). Debian's is built with Debian's jemalloc, without the hook it needs.
 */
static void defrag_answer(char *buf, size_t len)
{
        struct conn c;
        size_t n;

        conn_open(&c);
        n = conn_cmd(&c, (const char *[]){ "CONFIG", "SET", "activedefrag", "yes", NULL });
        if (n == 1 && c.v[0].type == RP_ERROR)
                snprintf(buf, len, "%.*s", (int)c.v[0].len, c.v[0].str);
        else
                snprintf(buf, len, "yes");
        conn_cmd(&c, (const char *[]){ "CONFIG", "SET", "activedefrag", "no", NULL });
        conn_close(&c);
}

/*
 * What a command cost the server's one thread so far (INFO commandstats: calls and usec), for
 * @name ("evalsha", "scan"); zeros when it never ran.
 */
static void command_usec(const char *name, uint64_t *ret_calls, uint64_t *ret_usec)
{
        char field[64], *p;
        struct conn c;
        const char *v;
        size_t vl;

        *ret_calls = *ret_usec = 0;
        conn_open(&c);
        conn_cmd(&c, (const char *[]){ "INFO", "commandstats", NULL });
        snprintf(field, sizeof(field), "cmdstat_%s", name);
        if (c.v[0].type == RP_BULK && rp_info_field(c.v[0].str, c.v[0].len, field, &v, &vl) == 0) {
                char text[256];

                snprintf(text, sizeof(text), "%.*s", (int)vl, v);
                if ((p = strstr(text, "calls=")))
                        *ret_calls = strtoull(p + 6, NULL, 10);
                if ((p = strstr(text, ",usec=")))
                        *ret_usec = strtoull(p + 6, NULL, 10);
        }
        conn_close(&c);
}

/* The number of keys of the server. */
static uint64_t dbsize(void)
{
        struct conn c;
        uint64_t n;

        conn_open(&c);
        conn_cmd(&c, (const char *[]){ "DBSIZE", NULL });
        n = c.v[0].type == RP_INTEGER ? (uint64_t)c.v[0].integer : UINT64_MAX;
        conn_close(&c);
        return n;
}

/* ---- the controls ---- */

/* The scan's work at full speed: SCAN, then OBJECT IDLETIME and PTTL of every key. */
static void control_scan(void)
{
        char *batch = malloc(CONTROL_BATCH * 128), cursor[24] = "0";
        struct conn c;

        if (!batch)
                bench_die("out of memory");
        conn_open(&c);
        do {
                size_t n, len = 0, keys, first, sent = 0;
                uint64_t next;
                char err[RP_ERR_MAX];
                char (*ks)[64];

                n = conn_cmd(&c, (const char *[]){ "SCAN", cursor, "COUNT", "256", NULL });
                if (rp_parse_scan(c.v, n, &next, &first, &keys, err, sizeof(err)) < 0)
                        bench_die("SCAN: %s", err);
                ks = malloc(keys * sizeof(*ks) + 1);
                if (!ks)
                        bench_die("out of memory");
                for (size_t i = 0; i < keys; i++)
                        snprintf(ks[i], sizeof(ks[i]), "%.*s", (int)c.v[first + i].len,
                                 c.v[first + i].str);
                snprintf(cursor, sizeof(cursor), "%" PRIu64, next);
                for (size_t i = 0; i < keys; i++) {
                        if (len > CONTROL_BATCH * 100) {
                                bench_write_all(c.fd, batch, len);
                                for (; sent; sent--)
                                        conn_reply(&c);
                                len = 0;
                        }
                        len += cmdv(batch + len, (const char *[]){ "OBJECT", "IDLETIME", ks[i],
                                                                   NULL });
                        len += cmdv(batch + len, (const char *[]){ "PTTL", ks[i], NULL });
                        sent += 2;
                }
                bench_write_all(c.fd, batch, len);
                for (; sent; sent--)
                        conn_reply(&c);
                free(ks);
        } while (strcmp(cursor, "0") != 0);
        conn_close(&c);
        free(batch);
}

/*
 * The unread keys UNLINKed: @per keys a command, @pipelined commands a round trip, @rate keys a
 * second (0: at full speed).
 */
static void control_delete(uint64_t n, size_t per, size_t pipelined, uint64_t rate)
{
        char *batch = malloc(pipelined * (per * 40 + 32)), k[PACED_BATCH][32];
        const char *argv[PACED_BATCH + 2] = { "UNLINK" };
        uint64_t t0 = bench_now_usec(), done = 0;
        size_t len = 0, sent = 0, argc = 1;
        struct conn c;

        if (per > PACED_BATCH)
                bench_die("control_delete: %zu keys a command, at most %d", per, PACED_BATCH);
        if (!batch)
                bench_die("out of memory");
        conn_open(&c);
        for (uint64_t i = 0; i < n; i++) {
                bool last = i + 1 == n;

                if (i % HOT_EVERY != 0) {
                        key(k[argc - 1], i);
                        argv[argc] = k[argc - 1];
                        argc++;
                }
                if (argc > 1 && (argc == per + 1 || last)) {
                        argv[argc] = NULL;
                        len += cmdv(batch + len, argv);
                        done += argc - 1;
                        argc = 1;
                        sent++;
                }
                if (sent > 0 && (sent == pipelined || last)) {
                        bench_write_all(c.fd, batch, len);
                        for (; sent; sent--)
                                conn_reply(&c);
                        len = 0;
                        if (rate)
                                bench_sleep_until(t0 + done * 1000000 / rate);
                }
        }
        conn_close(&c);
        free(batch);
}

/* ---- the alternatives ---- */

struct writer {
        uint64_t keys;
        struct bench_samples s;
        uint64_t first_eviction_usec; /* when INFO first showed evicted keys (0: never) */
        pthread_t thread;
};

/* The unread keys, one SET at a time, each latency kept. */
static void *writer_thread(void *userdata)
{
        struct writer *w = userdata;
        char out[256], k[32], value[VALUE_BYTES + 1];
        struct conn c;

        memset(value, 'v', VALUE_BYTES);
        value[VALUE_BYTES] = '\0';
        conn_open(&c);
        for (uint64_t i = 0; i < w->keys; i++) {
                uint64_t t0;
                size_t len;

                if (i % HOT_EVERY == 0)
                        continue;
                key(k, i);
                len = cmdv(out, (const char *[]){ "SET", k, value, NULL });
                t0 = bench_now_usec();
                bench_write_all(c.fd, out, len);
                conn_reply(&c);
                bench_sample(&w->s, t0, bench_now_usec() - t0);
        }
        conn_close(&c);
        return NULL;
}

/*
 * maxmemory + allkeys-lru: the hot keys first (and read), maxmemory at 1.5 times what they
 * use, then the unread keys written one SET at a time while the client reads the hot ones.
 */
static void alternative_lru(const char *dir, uint64_t keys, double factor, struct client *cl)
{
        struct bench_child srv = { .pid = -1 };
        struct writer w = { .keys = keys };
        struct memory m;
        uint64_t hot_used, maxmemory, hot, other, evicted, t0, t1, t_evict = 0;
        char maxmemory_s[32];
        struct conn c;

        server_start(&srv, dir, "redis-lru");
        conn_open(&c);
        conn_cmd(&c, (const char *[]){ "CONFIG", "SET", "maxmemory-policy", "allkeys-lru", NULL });
        /* The hot keys alone: every tenth key, and read. */
        {
                char *batch = malloc(LOAD_BATCH * 256), k[32], value[VALUE_BYTES + 1];
                size_t len = 0, sent = 0;

                if (!batch)
                        bench_die("out of memory");
                memset(value, 'v', VALUE_BYTES);
                value[VALUE_BYTES] = '\0';
                for (uint64_t i = 0; i < keys; i += HOT_EVERY) {
                        key(k, i);
                        len += cmdv(batch + len, (const char *[]){ "SET", k, value, NULL });
                        len += cmdv(batch + len, (const char *[]){ "GET", k, NULL });
                        sent += 2;
                        if (sent >= LOAD_BATCH) {
                                bench_write_all(c.fd, batch, len);
                                for (; sent; sent--)
                                        conn_reply(&c);
                                len = 0;
                        }
                }
                bench_write_all(c.fd, batch, len);
                for (; sent; sent--)
                        conn_reply(&c);
                free(batch);
        }
        hot_used = info_u64(&c, "memory", "used_memory");
        maxmemory = (uint64_t)((double)hot_used * factor);
        snprintf(maxmemory_s, sizeof(maxmemory_s), "%" PRIu64, maxmemory);
        conn_cmd(&c, (const char *[]){ "CONFIG", "SET", "maxmemory", maxmemory_s, NULL });
        client_start(cl, keys);
        usleep(2000000);
        bench_samples_init(&w.s, keys);
        t0 = bench_now_usec();
        if (pthread_create(&w.thread, NULL, writer_thread, &w) != 0)
                bench_die("thread");
        /* When eviction begins: INFO every 20 ms until it does. */
        while (!t_evict) {
                if (info_u64(&c, "stats", "evicted_keys") > 0)
                        t_evict = bench_now_usec();
                else if (bench_now_usec() > t0 + 600000000)
                        break;
                usleep(20000);
        }
        pthread_join(w.thread, NULL);
        t1 = bench_now_usec();
        usleep(2000000);
        client_stop(cl);
        evicted = info_u64(&c, "stats", "evicted_keys");
        m = memory_now(true);
        count_present(keys, 0, &hot, &other);
        conn_close(&c);
        bench_child_stop(&srv);
        {
                struct bench_pct before = bench_percentiles(&w.s, t0, t_evict ? t_evict : t1);
                struct bench_pct during = bench_percentiles(&w.s, t_evict ? t_evict : t1, t1);
                struct bench_pct gi = bench_percentiles(&cl->s, 0, t0);
                struct bench_pct ge = bench_percentiles(&cl->s, t_evict ? t_evict : t1, t1);

                printf("alternative maxmemory + allkeys-lru: maxmemory %" PRIu64 " bytes (the hot "
                       "set's used_memory %" PRIu64 " x %.1f); %" PRIu64 " unread keys written one "
                       "SET at a time in %.1f s; eviction began after %.1f s\n", maxmemory,
                       hot_used, factor, keys - (keys + HOT_EVERY - 1) / HOT_EVERY,
                       (double)(t1 - t0) / 1e6,
                       t_evict ? (double)(t_evict - t0) / 1e6 : -1.0);
                printf("  evicted %" PRIu64 " keys; left: %" PRIu64 " of %" PRIu64 " hot keys (%"
                       PRIu64 " lost), %" PRIu64 " unread keys; the client's GETs found nothing "
                       "%" PRIu64 " times\n", evicted, hot, (keys + HOT_EVERY - 1) / HOT_EVERY,
                       (keys + HOT_EVERY - 1) / HOT_EVERY - hot, other, cl->misses);
                printf("  used_memory %" PRIu64 ", RSS %" PRIu64 ", RSS after MEMORY PURGE %"
                       PRIu64 " bytes\n", m.used, m.rss, m.rss_purged);
                printf("  SET latency before eviction: p50 %u us, p99 %u us (%zu SETs); while "
                       "evicting (in the SETs' path): p50 %u us, p99 %u us (%.2fx), max %u us (%zu "
                       "SETs)\n", before.p50, before.p99, before.n, during.p50, during.p99,
                       (double)during.p99 / (before.p99 ? before.p99 : 1), during.max, during.n);
                printf("  the client's GET p99 before the writes %u us, while evicting %u us "
                       "(%.2fx)\n", gi.p99, ge.p99, (double)ge.p99 / (gi.p99 ? gi.p99 : 1));
        }
        free(w.s.v);
}

/* A TTL on every key: what is left once it passed, and the GETs' latency meanwhile. */
static void alternative_ttl(const char *dir, uint64_t keys, struct client *cl)
{
        struct bench_child srv = { .pid = -1 };
        struct memory before, after;
        uint64_t hot, other, t_loaded, expired;
        struct conn c;

        server_start(&srv, dir, "redis-ttl");
        load(keys, false, TTL_SEC, 0);
        t_loaded = bench_now_usec();
        before = memory_now(false);
        client_start(cl, keys);
        usleep((TTL_SEC + 10) * 1000000);
        client_stop(cl);
        conn_open(&c);
        expired = info_u64(&c, "stats", "expired_keys");
        conn_close(&c);
        after = memory_now(true);
        count_present(keys, 0, &hot, &other);
        bench_child_stop(&srv);
        {
                struct bench_pct live =
                        bench_percentiles(&cl->s, 0, t_loaded + (TTL_SEC - 2) * 1000000);
                struct bench_pct exp = bench_percentiles(&cl->s, t_loaded + (TTL_SEC - 1) * 1000000,
                                                         t_loaded + (TTL_SEC + 3) * 1000000);

                printf("alternative TTLs: every key SET with EX %d (nothing refreshes them: GET "
                       "does not); %d s later: %" PRIu64 " keys expired; left: %" PRIu64
                       " hot keys, %" PRIu64 " unread keys; the client's GETs found nothing %"
                       PRIu64 " times\n", TTL_SEC, TTL_SEC + 10, expired, hot, other, cl->misses);
                printf("  used_memory %" PRIu64 " -> %" PRIu64 ", RSS %" PRIu64 " -> %" PRIu64
                       ", after MEMORY PURGE %" PRIu64 " bytes\n", before.used, after.used,
                       before.rss, after.rss, after.rss_purged);
                printf("  the client's GET p99 while the keys live %u us, while Redis expires them "
                       "%u us (%.2fx)\n", live.p99, exp.p99,
                       (double)exp.p99 / (live.p99 ? live.p99 : 1));
        }
}

/* ---- the run ---- */

struct rotation {
        uint64_t start, refreshed, end;   /* refresh asked, scan read, deletes settled */
        uint64_t scan_keys, scan_ms, victims, round_ms, step_us, step_cpu_us, slice_us;
        uint64_t steps, steps_over, deleted, bytes_freed;
        struct memory after;              /* a deleting rotation's: right after, and purged */
        uint64_t used_before, rss_before;
};

/* What went, in percent of what was. */
static double given_back(uint64_t before, uint64_t after)
{
        return before ? 100.0 * (1.0 - (double)after / (double)before) : 0.0;
}

static void usage(void)
{
        printf("Usage: %s [OPTIONS]\n"
               "  --keys N            keys in redis (default 1000000)\n"
               "  --cycles N          cycles of a scan, then a scan with deletes, the deleted\n"
               "                      keys set again between cycles (default 1, at most %d)\n"
               "  --interval SECONDS  the cache's rotation interval (default 90)\n"
               "  --rate N            the adapter's rate key, keys/s scanned (default: its\n"
               "                      default)\n"
               "  --delete-rate N     the adapter's delete_rate key, victims/s checked and\n"
               "                      deleted (default: its default)\n"
               "  --check             one cycle with few keys, no controls nor alternatives:\n"
               "                      check that exactly the unread keys went (the test suite)\n"
               "  --no-alternatives   leave out maxmemory + allkeys-lru and TTLs\n"
               "  --lru-factor X      maxmemory for allkeys-lru: X times the hot set's\n"
               "                      used_memory (default 1.5)\n"
               "  --normal-priority   run the daemon at normal priority, not SCHED_IDLE\n"
               "  --spin              the client busy-waits between its GETs\n",
               bench_prog, MAX_CYCLES);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "keys", required_argument, NULL, 'n' },
                { "cycles", required_argument, NULL, 'y' },
                { "interval", required_argument, NULL, 'i' },
                { "rate", required_argument, NULL, 'r' },
                { "delete-rate", required_argument, NULL, 'd' },
                { "check", no_argument, NULL, 'c' },
                { "no-alternatives", no_argument, NULL, 'a' },
                { "lru-factor", required_argument, NULL, 'f' },
                { "normal-priority", no_argument, NULL, 'p' },
                { "spin", no_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint64_t keys = 1000000, interval_s = 90, cycles = 1, rss_before, rss_after = 0;
        uint64_t hot_left, other_left, n_hot, loaded_used;
        uint64_t units = 0, units_over = 0, unit_longest = 0, t_start;
        const char *rate = NULL, *delete_rate = NULL, *dir;
        char conf_text[1024], rate_line[128] = "";
        struct bench_child srv = { .pid = -1 };
        struct client client = { 0 };
        struct bench_child daemon;
        struct bench_watch watch;
        struct rotation rot[2 * MAX_CYCLES] = { { 0 } };
        struct bench_span busy[3 * MAX_CYCLES + CONTROL_SCANS + 4], kind[2][MAX_CYCLES];
        struct bench_span control[2][CONTROL_SCANS], deletes[MAX_CYCLES], paced;
        uint64_t keys_left, sha_calls0, sha_usec0, eval_calls0, eval_usec0, scan_calls0;
        uint64_t scan_usec0, sha_calls, sha_usec, eval_calls, eval_usec, scan_calls, scan_usec;
        uint64_t rotating_usec = 0, dr; /* dr: the adapter's delete_rate, victims/s */
        char defrag[256] = "";
        size_t n_busy = 0, n_rot;
        bool check = false, sched_idle = true, alternatives = true;
        double lru_factor = 1.5;
        struct memory loaded;
        int c;

        bench_prog = "bench-redis";
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
                switch (c) {
                case 'n':
                        keys = strtoull(optarg, NULL, 10);
                        break;
                case 'y':
                        cycles = strtoull(optarg, NULL, 10);
                        break;
                case 'i':
                        interval_s = strtoull(optarg, NULL, 10);
                        break;
                case 'r':
                        rate = optarg;
                        break;
                case 'd':
                        delete_rate = optarg;
                        break;
                case 'c':
                        check = true;
                        break;
                case 'a':
                        alternatives = false;
                        break;
                case 'f':
                        lru_factor = strtod(optarg, NULL);
                        break;
                case 'p':
                        sched_idle = false;
                        break;
                case 's':
                        client.spin = true;
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        usage();
                        return 2;
                }
        if (keys < HOT_EVERY || interval_s < 1 || cycles < 1 || cycles > MAX_CYCLES ||
            lru_factor < 1)
                bench_die("--keys at least %d, --interval at least 1, --cycles 1 to %d, "
                          "--lru-factor at least 1", HOT_EVERY, MAX_CYCLES);
        if (check) {
                cycles = 1;
                alternatives = false;
        }
        n_rot = 2 * cycles;
        dr = delete_rate ? strtoull(delete_rate, NULL, 10) : ADAPTER_DELETE_RATE;
        n_hot = (keys + HOT_EVERY - 1) / HOT_EVERY;
        snprintf(rate_line, sizeof(rate_line), "%s%s%s%s%s%s", rate ? "rate = " : "",
                 rate ? rate : "", rate ? "\n" : "", delete_rate ? "delete_rate = " : "",
                 delete_rate ? delete_rate : "", delete_rate ? "\n" : "");
        signal(SIGPIPE, SIG_IGN);
        dir = bench_run_dir();
        bench_samples_init(&client.s, MAX_SAMPLES);

        server_start(&srv, dir, "redis");
        t_start = bench_now_usec();
        load(keys, false, 0, 0);
        loaded = memory_now(false);
        loaded_used = loaded.used;
        printf("redis-server: %" PRIu64 " keys loaded (%" PRIu64 " read again) in %.1f s: "
               "used_memory %" PRIu64 ", RSS %" PRIu64 " bytes\n", keys, n_hot,
               (double)(bench_now_usec() - t_start) / 1e6, loaded.used, loaded.rss);

        /* The client reads the hot keys throughout (in --check too: they are to stay). */
        client_start(&client, keys);
        if (!check) {
                usleep(2000000); /* an idle stretch first */
                for (size_t d = 0; d < CONTROL_SCANS; d++) {
                        control[0][d].from = bench_now_usec();
                        control_scan();
                        control[0][d].to = bench_now_usec();
                        busy[n_busy++] = (struct bench_span){ control[0][d].from,
                                                              control[0][d].to + 500000 };
                        usleep(1000000);
                }
                control[1][0].from = bench_now_usec();
                control_delete(keys, 1, CONTROL_BATCH, 0);
                control[1][0].to = bench_now_usec();
                busy[n_busy++] = (struct bench_span){ control[1][0].from,
                                                      control[1][0].to + 500000 };
                t_start = bench_now_usec();
                load(keys, true, 0, 0);
                busy[n_busy++] = (struct bench_span){ t_start, bench_now_usec() + 500000 };
                usleep(1000000);
                /* About PACED_SECONDS of deletes (all of them when unpaced). */
                paced.from = bench_now_usec();
                control_delete(dr && dr * PACED_SECONDS < keys ? dr * PACED_SECONDS : keys,
                               PACED_BATCH, 1, dr);
                paced.to = bench_now_usec();
                busy[n_busy++] = (struct bench_span){ paced.from, paced.to + 500000 };
                t_start = bench_now_usec();
                load(keys, true, 0, 0);
                busy[n_busy++] = (struct bench_span){ t_start, bench_now_usec() + 500000 };
                usleep(1000000);
        }

        /* Rotations on the clock, not deferred by the load this very run puts on. */
        snprintf(conf_text, sizeof(conf_text), "[daemon]\nplugin_dir = %s\nidle_cpu_pressure = 0\n"
                 "idle_memory_pressure = 0\n[cache rd]\nadapter = redis\n"
                 "server = 127.0.0.1:%u\ninterval = %" PRIu64 "s\nmax_keys = %" PRIu64 "\n%s",
                 bench_env("CA_ADAPTER_DIR"), port, interval_s, keys, rate_line);
        command_usec("evalsha", &sha_calls0, &sha_usec0);
        command_usec("eval", &eval_calls0, &eval_usec0);
        command_usec("scan", &scan_calls0, &scan_usec0);
        bench_daemon_start(&daemon, &watch, "cacheaged", conf_text, watched, BENCH_WATCHDOG_USEC,
                           sched_idle);
        rss_before = bench_rss_kib(daemon.pid);

        for (size_t r = 0; r < n_rot; r++) {
                /* A rotation's deletes take keys / delete_rate seconds. */
                uint64_t timeout = (interval_s + 600) * 1000000 + (dr ? keys * 1000000 / dr : 0);
                ssize_t i, j, k;
                char nth[32];
                const char *line;

                i = bench_wait_event(&watch, "rd: refresh: ", r + 1, timeout);
                j = bench_wait_event(&watch, "rd: scan: ", r + 1, timeout);
                snprintf(nth, sizeof(nth), "rd: rotation %zu done", r + 1);
                k = bench_wait_event(&watch, nth, 1, timeout);
                if (i < 0 || j < 0 || k < 0)
                        bench_die("rotation %zu did not happen (see %s)", r + 1, daemon.log);
                rot[r].start = watch.events[i].t_usec;
                rot[r].refreshed = watch.events[j].t_usec;
                rot[r].scan_keys = bench_field_after(watch.events[j].line, "scan: ");
                rot[r].scan_ms = bench_field_after(watch.events[j].line, " keys in ");
                rot[r].slice_us = bench_field_after(watch.events[k].line, "longest slice ");
                /* Aged: the host's slices done, the last delete settled, INFO memory read. */
                k = bench_wait_event(&watch, "rd: aged: ", r + 1, timeout);
                if (k < 0)
                        bench_die("rotation %zu was not aged (see %s)", r + 1, daemon.log);
                line = watch.events[k].line;
                rot[r].end = watch.events[k].t_usec;
                rot[r].victims = bench_field_after(line, "rd: aged: ");
                rot[r].round_ms = bench_field_after(line, " victims checked and settled in ");
                rot[r].step_us = bench_field_after(line, "longest step ");
                rot[r].step_cpu_us = bench_field_after(line, " us (");
                rot[r].steps_over = bench_field_after(line, "on the CPU), ");
                rot[r].steps = bench_field_after(line, " of ");
                rot[r].deleted = bench_field_after(line, "in all ");
                rot[r].bytes_freed = bench_field_after(line, " deleted (");
                rot[r].used_before = bench_field_after(line, "used_memory ");
                rot[r].rss_before = bench_field_after(line, ", rss ");
                busy[n_busy++] = (struct bench_span){ rot[r].start, rot[r].end + 500000 };
                kind[r % 2][r / 2] = busy[n_busy - 1];
                if (r % 2 == 1)
                        deletes[r / 2] = (struct bench_span){ rot[r].refreshed,
                                                              rot[r].end + 500000 };
                if (r == 0)
                        rss_after = bench_rss_kib(daemon.pid);
                if (r % 2 == 1) {
                        uint64_t t0 = bench_now_usec();

                        /* What the deletes gave back, then with jemalloc's dirty pages purged. */
                        rot[r].after = memory_now(true);
                        if (r + 1 < n_rot) {
                                /* New unread keys, before the next rotation: a new cycle. */
                                load(keys, true, 0, (unsigned)(r / 2 + 1));
                                if (bench_now_usec() >= rot[r].start + interval_s * 1000000)
                                        fprintf(stderr, "%s: reloading ran into rotation %zu: "
                                                "use a longer --interval\n", bench_prog, r + 2);
                        }
                        busy[n_busy++] = (struct bench_span){ t0, bench_now_usec() + 500000 };
                }
        }
        /* A baseline after the rotations too: from the end of the last, as long, up to 60 s. */
        if (!check) {
                uint64_t last = rot[n_rot - 1].end - rot[n_rot - 1].start;

                usleep((useconds_t)(last < 3000000 ? 3000000 : last > 60000000 ? 60000000 : last));
        }
        client_stop(&client);
        bench_daemon_stop(&daemon, &watch);
        command_usec("evalsha", &sha_calls, &sha_usec);
        command_usec("eval", &eval_calls, &eval_usec);
        command_usec("scan", &scan_calls, &scan_usec);
        count_present(keys, (unsigned)(cycles - 1), &hot_left, &other_left);
        keys_left = dbsize();
        if (!check)
                defrag_answer(defrag, sizeof(defrag));
        bench_child_stop(&srv);
        if (!check)
                bench_control_units(&units, &units_over, &unit_longest);

        printf("cacheaged: slice_time 2ms (default), %s, rate %s, delete_rate %s; the client %s "
               "between GETs\n",
               sched_idle ? "run at SCHED_IDLE as its unit runs it" : "at normal priority",
               rate ? rate : "default", delete_rate ? delete_rate : "default",
               client.spin ? "spins" : "sleeps");
        for (size_t r = 0; r < n_rot; r++) {
                printf("rotation %zu: scan of %" PRIu64 " keys in %" PRIu64 " ms (%.0f keys/s), "
                       "refresh to aged in %.0f ms", r + 1, rot[r].scan_keys, rot[r].scan_ms,
                       rot[r].scan_ms ? (double)rot[r].scan_keys * 1000 / (double)rot[r].scan_ms
                                      : 0, (double)(rot[r].end - rot[r].start) / 1000);
                if (rot[r].victims)
                        printf("; %" PRIu64 " victims checked and deleted in %" PRIu64 " ms from "
                               "the rotation (%.0f keys/s)", rot[r].victims, rot[r].round_ms,
                               rot[r].round_ms ? (double)rot[r].victims * 1000 /
                                                         (double)rot[r].round_ms : 0);
                printf("\n");
                if (r % 2 == 1)
                        printf("  memory: used_memory %" PRIu64 " -> %" PRIu64 " (%.1f%% given "
                               "back; %" PRIu64 " bytes freed by MEMORY USAGE of the victims, all "
                               "cycles), RSS %" PRIu64 " -> %" PRIu64
                               ", after MEMORY PURGE %" PRIu64 " (%.1f%% given back)\n",
                               rot[r].used_before, rot[r].after.used,
                               given_back(rot[r].used_before, rot[r].after.used),
                               rot[r].bytes_freed, rot[r].rss_before, rot[r].after.rss,
                               rot[r].after.rss_purged,
                               given_back(rot[r].rss_before, rot[r].after.rss_purged));
        }
        printf("left after the last cycle: %" PRIu64 " of %" PRIu64 " unread keys; hot keys left: %"
               PRIu64 " of %" PRIu64 "; keys in the server: %" PRIu64 "; the client's GETs found "
               "nothing %" PRIu64 " times\n", other_left, keys - n_hot, hot_left, n_hot,
               keys_left, client.misses);
        if (!check)
                printf("without aging: each generation of unread keys held %" PRIu64 " bytes of "
                       "used_memory (what its deletes freed): %" PRIu64 " generations would hold "
                       "%" PRIu64 " bytes beside the hot keys' %" PRIu64 "; CONFIG SET activedefrag "
                       "yes: %s\n", rot[1].used_before - rot[1].after.used, cycles,
                       cycles * (rot[1].used_before - rot[1].after.used), rot[1].after.used,
                       defrag);
        printf("redis-server after loading: used_memory %" PRIu64 " bytes, %.0f bytes a key\n",
               loaded_used, (double)loaded_used / (double)keys);
        printf("daemon RSS: %" PRIu64 " KiB before, %" PRIu64 " KiB with %" PRIu64
               " keys tracked: %.0f bytes per key\n", rss_before, rss_after, keys,
               (double)(rss_after - rss_before) * 1024 / (double)keys);
        /* What the adapter's commands cost the server's one thread, by its own account. */
        for (size_t r = 0; r < n_rot; r++)
                rotating_usec += rot[r].end - rot[r].start;
        sha_calls -= sha_calls0;
        sha_usec -= sha_usec0;
        eval_calls -= eval_calls0;
        eval_usec -= eval_usec0;
        scan_calls -= scan_calls0;
        scan_usec -= scan_usec0;
        printf("redis-server's own time in the adapter's commands (INFO commandstats): scripts "
               "%" PRIu64 " calls, %.1f us each, SCAN %" PRIu64 " calls, %.1f us each; in all %.1f%% "
               "of the rotations' time (%.1f s of %.1f s)\n", sha_calls + eval_calls,
               sha_calls + eval_calls ? (double)(sha_usec + eval_usec) /
                                                (double)(sha_calls + eval_calls) : 0.0,
               scan_calls, scan_calls ? (double)scan_usec / (double)scan_calls : 0.0,
               rotating_usec ? 100.0 * (double)(sha_usec + eval_usec + scan_usec) /
                                       (double)rotating_usec : 0.0,
               (double)(sha_usec + eval_usec + scan_usec) / 1e6, (double)rotating_usec / 1e6);
        if (!check) {
                /* Baseline: every GET sent while the adapter was idle and nothing else ran. */
                struct bench_pct idle = bench_percentiles_of(&client.s, busy, n_busy, false);
                uint32_t base = idle.p99 ? idle.p99 : 1;
                static const char *const kind_name[] = { "scan only", "scan and deletes" };
                uint64_t steps = 0, over = 0, cpu_max = 0;
                struct bench_span null[2 * MAX_CYCLES];
                struct bench_pct p;

                printf("client GET latency, adapter idle (baseline): p50 %u us, p99 %u us, p99.9 "
                       "%u us, max %u us (%zu GETs)\n", idle.p50, idle.p99, idle.p999, idle.max,
                       idle.n);
                /* The noise floor: idle windows as long as the rotations, 1.5 s after each. */
                for (size_t r = 0; r < n_rot; r++)
                        null[r] = (struct bench_span){ rot[r].end + 1500000,
                                                       rot[r].end + 1500000 +
                                                               (rot[r].end - rot[r].start) };
                p = bench_percentiles_where(&client.s, null, n_rot, busy, n_busy);
                printf("client GET latency, idle windows as long as the rotations (the noise "
                       "floor): p50 %u us, p99 %u us (%.2fx the baseline), p99.9 %u us, max %u "
                       "us (%zu GETs)\n", p.p50, p.p99, (double)p.p99 / base, p.p999, p.max, p.n);
                for (size_t r = 0; r < n_rot; r++) {
                        p = bench_percentiles(&client.s, rot[r].start, rot[r].end);
                        printf("client GET latency, rotation %zu (%s): p50 %u us, p99 %u us "
                               "(%.2fx), p99.9 %u us, max %u us (%zu GETs)\n", r + 1,
                               kind_name[r % 2], p.p50, p.p99, (double)p.p99 / base, p.p999,
                               p.max, p.n);
                }
                for (size_t k = 0; k < 2; k++) {
                        struct bench_pct q = bench_percentiles_of(&client.s, control[k],
                                                                  k == 0 ? CONTROL_SCANS : 1, true);

                        p = bench_percentiles_of(&client.s, kind[k], cycles, true);
                        printf("client GET latency, every rotation with %s: p50 %u us, p99 %u us "
                               "(%.2fx the baseline), p99.9 %u us, max %u us (%zu GETs)\n",
                               kind_name[k], p.p50, p.p99, (double)p.p99 / base, p.p999, p.max,
                               p.n);
                        if (k == 1) {
                                struct bench_pct pc = bench_percentiles_of(&client.s, &paced,
                                                                           1, true);

                                p = bench_percentiles_of(&client.s, deletes, cycles, true);
                                printf("client GET latency, their deletes alone: p50 %u us, p99 %u "
                                       "us (%.2fx the baseline), p99.9 %u us, max %u us (%zu "
                                       "GETs)\n", p.p50, p.p99, (double)p.p99 / base, p.p999,
                                       p.max, p.n);
                                printf("client GET latency, control (a plain client UNLINKs the "
                                       "unread keys %d a command at the adapter's rate, no "
                                       "cacheaged): p50 %u us, p99 %u us (%.2fx the baseline; the "
                                       "adapter's deletes %.2fx the control), p99.9 %u us, "
                                       "max %u us (%zu GETs)\n", PACED_BATCH, pc.p50, pc.p99,
                                       (double)pc.p99 / base, (double)p.p99 / (pc.p99 ? pc.p99 : 1),
                                       pc.p999, pc.max, pc.n);
                        }
                        printf("client GET latency, control (%s, no cacheaged): p50 %u us, "
                               "p99 %u us (%.2fx the baseline; the adapter's rotations %.2fx "
                               "the control), max %u us (%zu GETs)\n",
                               k == 0 ? "a plain client does the scan's work at full speed, twice"
                                      : "a plain client UNLINKs the unread keys at full speed",
                               q.p50, q.p99, (double)q.p99 / base,
                               (double)p.p99 / (q.p99 ? q.p99 : 1), q.max, q.n);
                }
                for (size_t r = 0; r < n_rot; r++) {
                        printf("loop, rotation %zu: adapter's longest step %" PRIu64 " us (%"
                               PRIu64 " us on the CPU), %" PRIu64 " of %" PRIu64 " steps over "
                               "slice_time on the CPU, longest aging slice %" PRIu64 " us, "
                               "longest gap between watchdog pings %.1f ms (sent every %d ms)\n",
                               r + 1, rot[r].step_us, rot[r].step_cpu_us, rot[r].steps_over,
                               rot[r].steps, rot[r].slice_us,
                               (double)bench_longest_gap(&watch, rot[r].start,
                                                         rot[r].end) / 1000,
                               BENCH_WATCHDOG_USEC / 2000);
                        steps += rot[r].steps;
                        over += rot[r].steps_over;
                        if (rot[r].step_cpu_us > cpu_max)
                                cpu_max = rot[r].step_cpu_us;
                }
                printf("loop, all rotations: %" PRIu64 " of %" PRIu64 " adapter steps over "
                       "slice_time on the CPU (%.3f%%), longest %" PRIu64 " us\n", over, steps,
                       steps ? 100.0 * (double)over / (double)steps : 0.0, cpu_max);
                printf("loop, control (no daemon: a thread at SCHED_IDLE doing %d us units of "
                       "arithmetic for %d s): %" PRIu64 " of %" PRIu64 " units over slice_time on "
                       "its CPU clock (%.3f%%), longest %" PRIu64 " us\n", BENCH_UNIT_USEC,
                       BENCH_CONTROL_UNITS_SEC, units_over, units,
                       units ? 100.0 * (double)units_over / (double)units : 0.0, unit_longest);
        }
        if (alternatives) {
                alternative_lru(dir, keys, lru_factor, &client);
                alternative_ttl(dir, keys, &client);
        }
        free(client.s.v);
        bench_watch_free(&watch);
        if (other_left != 0 || hot_left != n_hot || keys_left != n_hot) {
                fprintf(stderr, "%s: expected every unread key gone and every hot key left\n",
                        bench_prog);
                return 1;
        }
        return 0;
}
