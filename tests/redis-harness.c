/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The redis adapter's test harness (see redis-harness.h; adapter-harness.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "redis-harness.h"
#include "redis-proto.h"
#include "test-util.h"

/* --- a real redis-server ------------------------------------------------------------------- */

/* Start it and wait until it accepts: true, or false when it exited (a port taken meanwhile). */
static bool rds_spawn(struct rds *r)
{
        const char *argv[48];
        char port[16];
        size_t n = 0;

        argv[n++] = "redis-server";
        /* Never the system's configuration, persistence or port. */
        argv[n++] = "--save";
        argv[n++] = "";
        argv[n++] = "--appendonly";
        argv[n++] = "no";
        argv[n++] = "--dir";
        argv[n++] = r->dir;
        argv[n++] = "--daemonize";
        argv[n++] = "no";
        argv[n++] = "--bind";
        argv[n++] = "127.0.0.1";
        snprintf(port, sizeof(port), "%u", r->port);
        argv[n++] = "--port";
        argv[n++] = port;
        if (r->sock[0]) {
                argv[n++] = "--unixsocket";
                argv[n++] = r->sock;
                argv[n++] = "--unixsocketperm";
                argv[n++] = "700";
        }
        for (size_t i = 0; r->opts[i]; i++)
                argv[n++] = r->opts[i];
        argv[n] = NULL;
        if (ah_spawn_server(argv, r->log, true, r->sock, r->port, &r->pid))
                return true;
        r->pid = -1;
        return false;
}

void rds_start(struct rds *r, bool on_unix, const char *const *opts)
{
        size_t n = 0;

        *r = (struct rds){ .pid = -1 };
        for (; opts && opts[n]; n++) {
                cr_assert(n < ELEMENTSOF(r->opts) - 1);
                r->opts[n] = opts[n];
        }
        r->opts[n] = NULL;
        r->dir = test_mkdtemp("cacheage-redis");
        /* redis-server runs as nobody: its socket and files are made there. */
        chmod(r->dir, 0777);
        r->log = test_path_join(r->dir, "redis.log");
        if (on_unix) {
                snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
                snprintf(r->server, sizeof(r->server), "%s", r->sock);
                cr_assert(rds_spawn(r), "redis-server exited:\n%s", test_read_file(r->log));
                return;
        }
        for (int attempt = 0; attempt < 5; attempt++) {
                r->port = ah_free_port();
                snprintf(r->server, sizeof(r->server), "127.0.0.1:%u", r->port);
                if (rds_spawn(r))
                        return;
        }
        cr_assert_fail("redis-server would not start:\n%s", test_read_file(r->log));
}

void rds_kill(struct rds *r)
{
        if (r->pid > 0)
                test_kill(r->pid);
        r->pid = -1;
}

void rds_restart(struct rds *r)
{
        rds_kill(r);
        if (r->sock[0])
                unlink(r->sock);
        for (int attempt = 0; attempt < 50; attempt++) {
                if (rds_spawn(r))
                        return;
                usleep(100000); /* the port in TIME_WAIT or taken for a moment */
        }
        cr_assert_fail("redis-server would not start again:\n%s", test_read_file(r->log));
}

void rds_cleanup(struct rds *r)
{
        rds_kill(r);
        if (r->dir)
                test_rm_rf(r->dir);
        free(r->dir);
        free(r->log);
        *r = (struct rds){ .pid = -1 };
}

/* --- a client ------------------------------------------------------------------------------ */

int rc_connect(const struct rds *r)
{
        int fd = ah_try_connect(r->sock, r->port);

        cr_assert(fd >= 0, "connect to redis %s: %s", r->server, strerror(errno));
        return fd;
}

char *rc_cmdl(int fd, size_t argc, const char *const *argv, const size_t *lens, size_t *ret_len)
{
        static struct rp_value v[RP_VALUES_MAX];
        size_t n = rp_command(NULL, 0, argc, argv, lens), len = 0, cap = 4096, used, nv;
        char *cmd = malloc(n), *buf = malloc(cap), err[RP_ERR_MAX];

        cr_assert(cmd && buf);
        rp_command(cmd, n, argc, argv, lens);
        cr_assert(write(fd, cmd, n) == (ssize_t)n, "write: %s", strerror(errno));
        free(cmd);
        for (;;) {
                ssize_t r;
                int p;

                if (cap - len < 2048) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                        cr_assert(buf);
                }
                r = read(fd, buf + len, cap - len - 1);
                cr_assert(r > 0, "redis: no reply to %s: %s", argv[0],
                          r == 0 ? "closed" : strerror(errno));
                len += (size_t)r;
                buf[len] = '\0';
                p = rp_parse(buf, len, v, RP_VALUES_MAX, &nv, &used, err, sizeof(err));
                cr_assert(p == 0 || p == -EAGAIN, "redis: a bad reply to %s: %s", argv[0], err);
                if (p == 0) {
                        cr_assert_eq(used, len, "redis: more than one reply to %s", argv[0]);
                        if (ret_len)
                                *ret_len = len;
                        return buf;
                }
        }
}

char *rc_cmd(int fd, const char *const *argv)
{
        size_t lens[64], argc = 0;

        for (; argv[argc]; argc++) {
                cr_assert(argc < ELEMENTSOF(lens));
                lens[argc] = strlen(argv[argc]);
        }
        return rc_cmdl(fd, argc, argv, lens, NULL);
}

void rc_ok(int fd, const char *const *argv)
{
        char *r = rc_cmd(fd, argv);

        cr_assert_str_eq(r, "+OK\r\n", "%s: %s", argv[0], r);
        free(r);
}

long long rc_int(int fd, const char *const *argv)
{
        char *r = rc_cmd(fd, argv);
        long long v;

        cr_assert(r[0] == ':', "%s %s: %s", argv[0], argv[1] ? argv[1] : "", r);
        v = strtoll(r + 1, NULL, 10);
        free(r);
        return v;
}

void rc_set(int fd, const char *key, const char *value)
{
        rc_ok(fd, (const char *[]){ "SET", key, value, NULL });
}

void rc_set_idle(int fd, const char *key, const char *value, unsigned idle_sec)
{
        rc_set_idle_l(fd, key, strlen(key), value, idle_sec, 0);
}

void rc_set_idle_l(int fd, const char *key, size_t key_len, const char *value, unsigned idle_sec,
                   unsigned ttl_ms)
{
        static struct rp_value v[4];
        char *dump, idle[16], ttl[16], *policy, err[RP_ERR_MAX];
        size_t n, used, lens[8], len;
        const char *dump_argv[] = { "DUMP", "cacheage-test:template" };
        bool lfu;

        policy = rc_cmd(fd, (const char *[]){ "CONFIG", "GET", "maxmemory-policy", NULL });
        lfu = strstr(policy, "lfu") != NULL;
        free(policy);
        rc_set(fd, "cacheage-test:template", value);
        lens[0] = 4;
        lens[1] = strlen(dump_argv[1]);
        dump = rc_cmdl(fd, 2, dump_argv, lens, &len);
        cr_assert_eq(rp_parse(dump, len, v, 4, &n, &used, err, sizeof(err)), 0, "%s", err);
        cr_assert_eq(v[0].type, RP_BULK);
        snprintf(idle, sizeof(idle), "%u", idle_sec);
        snprintf(ttl, sizeof(ttl), "%u", ttl_ms);
        {
                const char *argv[] = { "RESTORE", key, ttl, v[0].str, "REPLACE",
                                       lfu ? "FREQ" : "IDLETIME", idle };
                char *r;

                for (size_t i = 0; i < ELEMENTSOF(argv); i++)
                        lens[i] = strlen(argv[i]);
                lens[1] = key_len;
                lens[3] = v[0].len;
                r = rc_cmdl(fd, ELEMENTSOF(argv), argv, lens, NULL);
                cr_assert_str_eq(r, "+OK\r\n", "RESTORE %s: %s", key, r);
                free(r);
        }
        free(dump);
        cr_assert_eq(rc_int(fd, (const char *[]){ "DEL", "cacheage-test:template", NULL }), 1);
}

void rc_wait_idle(int fd, const char *key, unsigned idle_sec)
{
        uint64_t until = test_now_usec() + 5000000;

        while (rc_int(fd, (const char *[]){ "OBJECT", "IDLETIME", key, NULL }) < idle_sec) {
                cr_assert(test_now_usec() < until, "%s not idle for %u s within 5 s", key,
                          idle_sec);
                usleep(50000);
        }
}

void rc_load(int fd, const char *prefix, int n, unsigned idle_sec)
{
        static struct rp_value v[4];
        char *dump, idle[16], *policy, err[RP_ERR_MAX], key[128], *batch, *in;
        const char *dump_argv[] = { "DUMP", "cacheage-test:template" };
        size_t lens[8], len, used, nv, blen = 0, bcap = 1 << 20, ilen = 0, icap = 1 << 16;
        bool lfu;

        policy = rc_cmd(fd, (const char *[]){ "CONFIG", "GET", "maxmemory-policy", NULL });
        lfu = strstr(policy, "lfu") != NULL;
        free(policy);
        rc_set(fd, "cacheage-test:template", "value");
        lens[0] = 4;
        lens[1] = strlen(dump_argv[1]);
        dump = rc_cmdl(fd, 2, dump_argv, lens, &len);
        cr_assert_eq(rp_parse(dump, len, v, 4, &nv, &used, err, sizeof(err)), 0, "%s", err);
        snprintf(idle, sizeof(idle), "%u", idle_sec);
        batch = malloc(bcap);
        in = malloc(icap);
        cr_assert(batch && in);
        /* Every RESTORE at once; then their n replies, each +OK. */
        for (int i = 0; i < n; i++) {
                const char *argv[] = { "RESTORE", key, "0", v[0].str, "REPLACE",
                                       lfu ? "FREQ" : "IDLETIME", idle };

                snprintf(key, sizeof(key), "%s%d", prefix, i);
                for (size_t j = 0; j < ELEMENTSOF(argv); j++)
                        lens[j] = strlen(argv[j]);
                lens[3] = v[0].len;
                len = rp_command(NULL, 0, ELEMENTSOF(argv), argv, lens);
                if (blen + len > bcap) {
                        bcap = 2 * (blen + len);
                        batch = realloc(batch, bcap);
                        cr_assert(batch);
                }
                rp_command(batch + blen, len, ELEMENTSOF(argv), argv, lens);
                blen += len;
        }
        for (size_t off = 0; off < blen;) {
                ssize_t w = write(fd, batch + off, blen - off);

                cr_assert(w > 0, "write: %s", strerror(errno));
                off += (size_t)w;
        }
        for (int replies = 0; replies < n;) {
                ssize_t r = read(fd, in + ilen, icap - ilen);

                cr_assert(r > 0, "redis: no reply to RESTORE: %s", r == 0 ? "closed" : strerror(errno));
                ilen += (size_t)r;
                for (;;) {
                        if (rp_parse(in, ilen, v + 1, 3, &nv, &used, err, sizeof(err)) != 0)
                                break;
                        cr_assert(v[1].type == RP_STATUS, "RESTORE: %.*s", (int)v[1].len,
                                  v[1].str);
                        memmove(in, in + used, ilen - used);
                        ilen -= used;
                        replies++;
                }
        }
        free(in);
        free(batch);
        free(dump);
        cr_assert_eq(rc_int(fd, (const char *[]){ "DEL", "cacheage-test:template", NULL }), 1);
}

bool rc_get(int fd, const char *key)
{
        char *r = rc_cmd(fd, (const char *[]){ "GET", key, NULL });
        bool found = r[0] == '$' && r[1] != '-';

        free(r);
        return found;
}

bool rc_exists(int fd, const char *key)
{
        return rc_int(fd, (const char *[]){ "EXISTS", key, NULL }) == 1;
}

int rc_count(int fd, const char *prefix, int n)
{
        char key[128];
        int present = 0;

        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%s%d", prefix, i);
                present += rc_exists(fd, key);
        }
        return present;
}

/* --- requests in words --------------------------------------------------------------------- */

size_t rd_frame(const char *buf, size_t len, char *out, size_t out_max)
{
        static struct rp_value v[RP_VALUES_MAX];
        char err[RP_ERR_MAX];
        size_t n, used, pos = 0;

        if (len > 0 && buf[0] != '*')
                return fake_frame_line(buf, len, out, out_max); /* an inline command */
        if (rp_parse(buf, len, v, RP_VALUES_MAX, &n, &used, err, sizeof(err)) != 0)
                return 0;
        out[0] = '\0';
        for (size_t i = 1; i < n && pos + 1 < out_max; i++) {
                size_t l = v[i].len < out_max - pos - 1 - (i > 1) ? v[i].len
                                                                  : out_max - pos - 1 - (i > 1);

                if (i > 1)
                        out[pos++] = ' ';
                memcpy(out + pos, v[i].str, l);
                pos += l;
                out[pos] = '\0';
        }
        return used;
}

bool rd_hold_reap(const char *request)
{
        /* The reap's words: EVALSHA sha n keys... lru|lfu AFTER FORKS DRY lrus... (the probe's
           end at AFTER). */
        if (strncmp(request, "EVALSHA ", 8) != 0)
                return false;
        for (const char *p = strstr(request, " l"); p; p = strstr(p + 1, " l")) {
                const char *q = p + 5;
                int fields = 0;

                if (strncmp(p, " lru ", 5) != 0 && strncmp(p, " lfu ", 5) != 0)
                        continue;
                while (fields < 3 && *q >= '0' && *q <= '9') {
                        while (*q >= '0' && *q <= '9')
                                q++;
                        fields++;
                        if (*q == ' ')
                                q++;
                }
                if (fields == 3)
                        return true;
        }
        return false;
}

char *rd_bulk(const char *text)
{
        char *s;

        cr_assert(asprintf(&s, "$%zu\r\n%s\r\n", strlen(text), text) > 0);
        return s;
}

char *rd_fake_info(const char *role)
{
        char *text, *bulk;

        cr_assert(asprintf(&text, "# Server\r\nredis_version:7.0.15\r\nrun_id:"
                           "0123456789abcdef0123456789abcdef01234567\r\nhz:10\r\nlru_clock:1000\r\n"
                           "# Memory\r\nused_memory:1000000\r\nused_memory_rss:2000000\r\n"
                           "maxmemory_policy:noeviction\r\n# Persistence\r\n"
                           "rdb_bgsave_in_progress:0\r\naof_rewrite_in_progress:0\r\n"
                           "module_fork_in_progress:0\r\n# Stats\r\ntotal_forks:0\r\n"
                           "# Replication\r\nrole:%s\r\n# Cluster\r\ncluster_enabled:0\r\n",
                           role) > 0);
        bulk = rd_bulk(text);
        free(text);
        return bulk;
}
