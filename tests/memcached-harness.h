/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What tests/test-memcached.c drives the memcached adapter with: a real memcached started on
 * a free port of 127.0.0.1 (or a unix socket) and killed after; a blocking client of it; the
 * adapter loaded into this process under a host of the test's own (its loop, its rotations,
 * step by step); a fake server that speaks what the test scripts (garbage, silence, a busy
 * crawler); and a proxy that can hold the adapter's first delete until the test lets it go.
 * Every helper asserts what it cannot do (Criterion), as test-util's do.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cacheage/plugin.h"

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

/* --- the adapter in this process ----------------------------------------------------------- */

struct host {
        struct event_base *base;
        struct ca_host h;
        void *dl;
        const struct ca_plugin *plugin;
        void *instance;
        struct ca_section section;
        struct ca_section_key keys[8];
        size_t n_keys;
        struct ca_cache *cache;
        const struct ca_cache_hooks *hooks;
        void *hooks_userdata;
        bool ready;
        size_t readies;
        char *log;               /* every message, one a line, "LEVEL: message" */
        size_t log_len, log_cap;
};

/*
 * host_setup() - load CA_ADAPTER_DIR/memcached.so and create an instance on a section of
 * @keys ("key", "value", ..., NULL), with @single_use_age and @max_age; asserts it works.
 */
void host_setup(struct host *h, uint32_t single_use_age, uint32_t max_age, const char *const *keys);
void host_cleanup(struct host *h);

/* host_refresh() - before_rotate, then the loop until the adapter says the refresh is done. */
void host_refresh(struct host *h);
/* host_age() - rotate, run every aging slice, then the loop until the deletes are settled. */
void host_age(struct host *h);
/* host_rotate() - host_refresh() and host_age(). */
void host_rotate(struct host *h);
/* host_run_for() - run the loop for @ms milliseconds. */
void host_run_for(struct host *h, unsigned ms);
/* host_stat() - an adapter statistic by name (asserted to exist). */
uint64_t host_stat(struct host *h, const char *name);
/* host_log_count() - how many logged lines hold @needle. */
size_t host_log_count(const struct host *h, const char *needle);

/* --- a fake server ------------------------------------------------------------------------- */

/*
 * One connection at a time; on each request line it answers from the script: the reply for
 * the first rule whose prefix starts the line ("" matches any line); a NULL reply closes the
 * connection; a rule with `silent` says nothing. `times` > 0 limits a rule to that many uses.
 * `trickle_ms` sends the reply a byte at a time (a server that never falls silent long enough
 * for the adapter's timeout), `forever` sends it without end (STAT lines that never END).
 */
struct fake_rule {
        const char *prefix;
        const char *reply;
        size_t reply_len;        /* 0: strlen(reply) */
        bool silent;
        unsigned times;
        unsigned trickle_ms;     /* > 0: the reply a byte at a time, this far apart */
        bool forever;            /* the reply again and again, until the client goes */
};

struct fake {
        int lfd;
        uint16_t port;
        int stop_pipe[2];
        pthread_t thread;
        pthread_mutex_t lock;
        struct fake_rule rules[8];
        unsigned used[8];
        size_t n_rules;
        unsigned connections;
        char server[64];
};

void fake_start(struct fake *f);
/* fake_script() - replace the rules (under the lock; a connection uses them from its next line). */
void fake_script(struct fake *f, const struct fake_rule *rules, size_t n);
void fake_stop(struct fake *f);

/* The three stats replies of a real memcached that can be aged, for scripts. */
extern const char fake_stats_ok[];

/* --- a proxy that can hold the first "md" ------------------------------------------------- */

struct proxy {
        int lfd;
        uint16_t port;
        char upstream[128];      /* mcd.server of the real one: "127.0.0.1:PORT" */
        uint16_t upstream_port;
        int stop_pipe[2];
        pthread_t thread;
        pthread_mutex_t lock;
        bool hold_md;            /* hold the client's first "md " line and what follows */
        bool held;               /* it is held: held_line says what */
        bool release;
        char held_line[512];
        char server[64];
};

void proxy_start(struct proxy *p, const struct mcd *upstream);
/* proxy_wait_held() - wait up to @timeout_ms for a held md: its line (without "\r\n"), or NULL. */
const char *proxy_wait_held(struct proxy *p, int timeout_ms);
void proxy_release(struct proxy *p);
void proxy_stop(struct proxy *p);
