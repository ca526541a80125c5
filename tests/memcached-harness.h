/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What tests/test-memcached.c drives the memcached adapter with, besides adapter-harness.h (the
 * adapter under a host of the test's own, a fake server, a proxy): a real memcached started on
 * a free port of 127.0.0.1 (or a unix socket) and killed after, and a blocking client of it.
 * Every helper asserts what it cannot do (Criterion), as test-util's do.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter-harness.h"

/* --- a real memcached ---------------------------------------------------------------------- */

struct mcd {
        pid_t pid;
        char *dir;               /* its log and its socket */
        char *log;
        char sock[108];          /* the unix socket, or "" for TCP */
        uint16_t port;
        const char *opts[8];     /* extra arguments, NULL-ended */
        char server[128];        /* the adapter's "server =" for it */
};

/*
 * mcd_start() - memcached on a free port of 127.0.0.1 (@on_unix: on @dir/mc.sock), with the
 * extra arguments @opts (NULL-ended, may be NULL), as nobody when run as root; returns once
 * it accepts connections.
 */
void mcd_start(struct mcd *m, bool on_unix, const char *const *opts);
/* mcd_kill() - SIGKILL it (the items are gone with it). */
void mcd_kill(struct mcd *m);
/* mcd_restart() - start it again, on the same port or socket, with the same arguments. */
void mcd_restart(struct mcd *m);
void mcd_cleanup(struct mcd *m);

/* --- a client ------------------------------------------------------------------------------ */

int mcc_connect(const struct mcd *m);
/* mcc_cmd() - send @cmd and read until the reply ends with @end: malloc()ed. */
char *mcc_cmd(int fd, const char *cmd, const char *end);
/* mcc_set() - "set @key 0 0 ..." with @value: STORED, asserted. */
void mcc_set(int fd, const char *key, const char *value);
/* mcc_get() - a fetch: true when found (its value in @ret_value when not NULL, malloc()ed). */
bool mcc_get(int fd, const char *key, char **ret_value);
/* mcc_exists() - "me @key": found or not, without touching it. */
bool mcc_exists(int fd, const char *key);
/* mcc_cas() - the item's cas, from "me" (0: not there). */
uint64_t mcc_cas(int fd, const char *key);

/* --- fakes and proxies (adapter-harness.h) ----------------------------------------------- */

/* The three stats replies of a real memcached that can be aged, for scripts. */
extern const char fake_stats_ok[];

/* mc_hold_md() - a proxy's hold rule: the adapter's deletes ("md "). */
bool mc_hold_md(const char *request);
