/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What tests/test-redis.c drives the redis adapter with, besides adapter-harness.h (the adapter
 * under a host of the test's own, a fake server, a proxy): a real redis-server started on a free
 * port of 127.0.0.1 (or a unix socket in a temporary directory), never the system's, with
 * --save '' --appendonly no, and killed after; a blocking client of it; RESP requests in words
 * for the fake server and the proxy. Every helper asserts what it cannot do (Criterion).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter-harness.h"

/* --- a real redis-server ------------------------------------------------------------------- */

struct rds {
        pid_t pid;
        char *dir;               /* its log, its socket, its files */
        char *log;
        char sock[108];          /* the unix socket, or "" for TCP */
        uint16_t port;
        const char *opts[16];    /* extra arguments, NULL-ended */
        char server[128];        /* the adapter's "server =" for it */
};

/*
 * rds_start() - redis-server on a free port of 127.0.0.1 (@on_unix: on @dir/redis.sock, with
 * no TCP port), with the extra arguments @opts (NULL-ended, may be NULL), as nobody when run as
 * root; returns once it accepts connections.
 */
void rds_start(struct rds *r, bool on_unix, const char *const *opts);
/* rds_kill() - SIGKILL it (the keys are gone with it: nothing is saved). */
void rds_kill(struct rds *r);
/* rds_restart() - start it again, on the same port or socket, with the same arguments. */
void rds_restart(struct rds *r);
void rds_cleanup(struct rds *r);

/* --- a client ------------------------------------------------------------------------------ */

int rc_connect(const struct rds *r);
/*
 * rc_cmd() - send the command of the words @argv (NULL-ended; "\x00"-free) and read its whole
 * reply: malloc()ed, NUL-ended, as RESP. rc_cmdl() takes lengths (binary keys), and gives the
 * reply's (it may hold NUL bytes) in *ret_len when not NULL.
 */
char *rc_cmd(int fd, const char *const *argv);
char *rc_cmdl(int fd, size_t argc, const char *const *argv, const size_t *lens, size_t *ret_len);
/* rc_ok() - a command whose reply is +OK (asserted). */
void rc_ok(int fd, const char *const *argv);
/* rc_int() - a command whose reply is an integer (asserted). */
long long rc_int(int fd, const char *const *argv);
/* rc_set() - SET @key @value. */
void rc_set(int fd, const char *key, const char *value);
/*
 * rc_set_idle() - @key = @value, idle for @idle_sec already (RESTORE ... IDLETIME), so that a
 * test need not wait for the LRU clock's seconds; under an LFU policy, with frequency @idle_sec
 * instead (RESTORE ... FREQ).
 */
void rc_set_idle(int fd, const char *key, const char *value, unsigned idle_sec);
/* rc_set_idle_l() - the same for a key of @key_len bytes (binary), with a TTL (0: none). */
void rc_set_idle_l(int fd, const char *key, size_t key_len, const char *value, unsigned idle_sec,
                   unsigned ttl_ms);
/*
 * rc_wait_idle() - wait until OBJECT IDLETIME of @key is at least @idle_sec: a read before it is
 * then in an earlier second of Redis' LRU clock than the next scan (a use in the very second a
 * scan sees counts once more: the adapter cannot tell it from none).
 */
void rc_wait_idle(int fd, const char *key, unsigned idle_sec);
/* rc_load() - @prefix0..@prefix(n-1) = "value", as rc_set_idle(), pipelined. */
void rc_load(int fd, const char *prefix, int n, unsigned idle_sec);
/* rc_get() - GET: true when found (a read: it touches the key). */
bool rc_get(int fd, const char *key);
/* rc_exists() - EXISTS, which does not touch the key. */
bool rc_exists(int fd, const char *key);
/* rc_count() - how many of @prefix0..@prefix(n-1) exist. */
int rc_count(int fd, const char *prefix, int n);

/* --- requests in words --------------------------------------------------------------------- */

/* rd_frame() - a RESP request (an array of bulk strings), its words joined by blanks. */
size_t rd_frame(const char *buf, size_t len, char *out, size_t out_max);
/* rd_hold_reap() - a proxy's hold rule: the adapter's check-and-UNLINK script. */
bool rd_hold_reap(const char *request);
/* rd_bulk() - @text as a RESP bulk string, malloc()ed (for fake replies). */
char *rd_bulk(const char *text);
/* An INFO reply of a Redis 7.0 of @role ("master") that can be aged, as a bulk string. */
char *rd_fake_info(const char *role);
