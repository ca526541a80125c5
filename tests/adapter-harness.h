/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the tests of the network adapters (test-memcached.c, test-redis.c) drive them with: a
 * real server started on a free port of 127.0.0.1 (or a unix socket) and killed after; the
 * adapter loaded into this process under a host of the test's own (its loop, its rotations, step
 * by step); a fake server that answers what the test scripts (garbage, silence, errors); and a
 * proxy that can hold the adapter's first delete until the test lets it go. The protocol is
 * the caller's: a framer cuts the requests of a byte stream and says them in words. Every
 * helper asserts what it cannot do (Criterion), as test-util's do.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cacheage/plugin.h"

/* --- a real server ------------------------------------------------------------------------- */

/* ah_free_port() - a port of 127.0.0.1 that was free a moment ago. */
uint16_t ah_free_port(void);

/*
 * ah_try_connect() - a blocking client of the unix socket @sock (when not empty) or of
 * 127.0.0.1:@port, with a receive timeout of 10 s; -1 with errno when it cannot connect.
 */
int ah_try_connect(const char *sock, uint16_t port);

/*
 * ah_spawn_server() - start @argv (searched in PATH) with its output in @log, as nobody when
 * the test runs as root and @as_nobody (in the child, before the exec, so that the parent-death
 * signal holds: a server of a failed test never outlives it), and wait until it accepts on
 * @sock or @port. True and its pid; false when it exited first (a port taken meanwhile).
 */
bool ah_spawn_server(const char *const *argv, const char *log, bool as_nobody, const char *sock,
                     uint16_t port, pid_t *ret_pid);

/* --- the adapter in this process ----------------------------------------------------------- */

struct host {
        struct event_base *base;
        struct ca_host h;
        void *dl;
        const struct ca_plugin *plugin;
        void *instance;
        struct ca_section section;
        struct ca_section_key keys[12];
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
 * host_setup() - load CA_ADAPTER_DIR/@adapter.so and create an instance on a section of @keys
 * ("key", "value", ..., NULL), with @single_use_age and @max_age; asserts it works.
 */
void host_setup(struct host *h, const char *adapter, uint32_t single_use_age, uint32_t max_age,
                const char *const *keys);
/*
 * host_try_setup() - the same, but a create() that fails is no failure: its errno (0 when it
 * made an instance), and its messages in h->log.
 */
int host_try_setup(struct host *h, const char *adapter, uint32_t single_use_age,
                   uint32_t max_age, const char *const *keys);
void host_cleanup(struct host *h);

/* host_refresh() - before_rotate, then the loop until the adapter says the refresh is done. */
void host_refresh(struct host *h);
/*
 * host_age() - rotate, run every aging slice, then the loop until the deletes are settled (the
 * statistic round_victims is 0) and, for an adapter with a statistic requests_in_flight, until
 * it is 0 too.
 */
void host_age(struct host *h);
/* host_rotate() - host_refresh() and host_age(). */
void host_rotate(struct host *h);
/* host_run_for() - run the loop for @ms milliseconds. */
void host_run_for(struct host *h, unsigned ms);
/* host_stat() - an adapter statistic by name (asserted to exist). */
uint64_t host_stat(struct host *h, const char *name);
/* host_log_count() - how many logged lines hold @needle. */
size_t host_log_count(const struct host *h, const char *needle);

/* --- requests in words --------------------------------------------------------------------- */

/*
 * A framer: whether @buf (@len bytes) begins with a whole request; then its length in bytes,
 * and in @out (@out_max bytes, NUL-ended, cut when longer) its words joined by blanks. 0 when
 * the request is not whole yet.
 */
typedef size_t (*ah_framer_t)(const char *buf, size_t len, char *out, size_t out_max);

/* fake_frame_line() - a text protocol's line, "\r\n"-ended (memcached's). */
size_t fake_frame_line(const char *buf, size_t len, char *out, size_t out_max);

/* --- a fake server ------------------------------------------------------------------------- */

/*
 * One connection at a time; on each request it answers from the script: the reply for the
 * first rule whose prefix starts the request's words ("" matches any); a NULL reply closes the
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
        ah_framer_t framer;
        struct fake_rule rules[12];
        unsigned used[12];
        size_t n_rules;
        unsigned connections;
        char server[64];
};

void fake_start(struct fake *f, ah_framer_t framer);
/* fake_script() - replace the rules (under the lock; a connection uses them from its next request).
 */
void fake_script(struct fake *f, const struct fake_rule *rules, size_t n);
void fake_stop(struct fake *f);

/* --- a proxy that can hold a request ------------------------------------------------------- */

struct proxy {
        int lfd;
        uint16_t port;
        uint16_t upstream_port;  /* the real server's, on 127.0.0.1 */
        int stop_pipe[2];
        pthread_t thread;
        pthread_mutex_t lock;
        ah_framer_t framer;
        bool (*hold)(const char *request); /* the first request it says yes to is held... */
        bool held;               /* ... it is: held_line says what (its words) */
        bool release;
        char held_line[512];
        char server[64];
};

/* proxy_start() - a proxy to 127.0.0.1:@upstream_port that holds the first request @hold takes. */
void proxy_start(struct proxy *p, uint16_t upstream_port, ah_framer_t framer,
                 bool (*hold)(const char *request));
/* proxy_wait_held() - wait up to @timeout_ms for a held request: its words, or NULL. */
const char *proxy_wait_held(struct proxy *p, int timeout_ms);
void proxy_release(struct proxy *p);
void proxy_stop(struct proxy *p);
