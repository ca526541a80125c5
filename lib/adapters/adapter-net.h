/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The connection under the frame of the network caches' adapters (adapter-round.h): the
 * server's address as the "server =" key writes it, a non-blocking connection on the host's loop,
 * the accounting of the adapter's steps in that loop, the pace of a walk (items a second), and
 * the rule that a failure is logged once per change. All of it runs on the host's loop thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "adapter-stat.h" /* AD_GAUGE(), AD_COUNTER() */

struct bufferevent;
struct event_base;

#define AD_MSG_MAX 512 /* bytes of an error message kept for "once per change" */
#define AD_REFRESH_TIMEOUT_MAX_USEC (7ULL * 24 * 3600 * 1000000) /* 1 week */
#define AD_REFRESH_SLACK_USEC 60000000ULL /* refresh_timeout = 0: this, plus ... */
#define AD_REFRESH_PER_ITEM 3             /* ... this many times max_items at rate */

/* ---- the server's address ---- */

/*
 * ad_server_parse() - "server =": IPv4:PORT, [IPv6]:PORT, localhost:PORT (127.0.0.1) or an
 * absolute unix socket path. Names are not resolved: a DNS lookup would block the host's loop.
 * Returns 0 and the address in *ret_addr, *ret_len, or -EINVAL with the reason in @msg.
 */
int ad_server_parse(const char *v, struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                    char *msg, size_t msg_len);

/* ---- the connection ---- */

/*
 * ad_connect() - a non-blocking stream socket connecting to @addr (TCP_NODELAY: requests go in
 * small writes, which Nagle's algorithm would hold behind the server's delayed ACK), wrapped in
 * a bufferevent on @base at @priority that reads at most @read_max bytes at once and stops
 * reading while @input_max bytes wait in its input. The caller sets its callbacks and enables
 * it. Connecting is asked here rather than by libevent, which reports a refusal it sees at once
 * without its errno. Returns 0 and the bufferevent, or a negative errno (the connect's own).
 */
int ad_connect(struct event_base *base, const struct sockaddr_storage *addr, socklen_t addr_len,
               int priority, size_t read_max, size_t input_max, struct bufferevent **ret_bev);

/*
 * ad_timeouts() - wait for the server at most @timeout_usec while it owes bytes (@waiting),
 * forever when it owes none.
 */
void ad_timeouts(struct bufferevent *bev, uint64_t timeout_usec, bool waiting);

/* ---- steps in the host's loop ---- */

/*
 * How long the adapter held the loop, on the clock and on the CPU. On a loaded machine (or at
 * SCHED_IDLE, as the unit runs) the first includes the time the kernel gave to others mid-step;
 * the second is the adapter's own work, the one compared with the host's slice_time.
 */
struct ad_steps {
        uint64_t steps, over_slice;     /* runs in the loop, and those over slice_time on the CPU */
        uint64_t longest_usec, longest_cpu_usec; /* since ad_steps_mark() */
        uint64_t mark_steps, mark_over; /* steps and over_slice at the mark */
        uint64_t work;                  /* lines or items of the step under way */
};

struct ad_step {
        uint64_t start_usec, start_cpu_usec;
};

/* ad_cpu_usec() - this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), 0 when unknown. */
uint64_t ad_cpu_usec(void);
struct ad_step ad_step_begin(struct ad_steps *s);
/*
 * ad_step_end() - count the step. Returns true when it took longer than @slice_usec on the CPU
 * (its figures in *ret_cpu_usec and *ret_usec), for the adapter to log what it was doing.
 */
bool ad_step_end(struct ad_steps *s, const struct ad_step *step, uint64_t slice_usec,
                 uint64_t *ret_cpu_usec, uint64_t *ret_usec);
/* ad_steps_mark() - a refresh begins: the longest steps start again, the counts are marked. */
void ad_steps_mark(struct ad_steps *s);

/* ---- pace ---- */

#define AD_PACE_BURST_USEC 10000     /* a paced walk may catch up on this much time */
#define AD_PACE_WAIT_MIN_USEC 1000   /* the shortest pause of a paced walk */

/*
 * A walk paced to @rate items a second (0: no limit). Reading slower than the server sends
 * fills the socket: the server's thread writing it waits and leaves the CPU to its clients.
 * A pause longer than a burst is not saved up for later.
 */
struct ad_pace {
        uint64_t rate;
        uint64_t start_usec, items;
};

/* ad_pace_start() - a walk begins (a dump requested, a round of checks, a scan). */
void ad_pace_start(struct ad_pace *p, uint64_t rate);
/*
 * ad_pace() - 0 when the next @n items may go now (they are counted), else how long to wait
 * for them (at least AD_PACE_WAIT_MIN_USEC).
 */
uint64_t ad_pace(struct ad_pace *p, uint64_t n);

/* ---- health: a failure logged once per change ---- */

struct ad_health {
        bool failing;
        char last_kind[AD_MSG_MAX];
};

/*
 * ad_health_fail() - a failure of kind @kind (what went wrong without the particulars, such as
 * the message's format, so that "bad line 1234" and "bad line 5678" are one): whether to log it
 * at warning (the first, or another kind than the last) rather than at debug (the same again).
 * The caller counts and logs.
 */
bool ad_health_fail(struct ad_health *h, const char *kind);
/* ad_health_ok() - the server answers: whether it was failing (say once that it answers again). */
bool ad_health_ok(struct ad_health *h);

/* ---- a connection and the adapter's steps on it ---- */

struct ca_adapter_stat;
struct ca_cache;
struct ca_host;
struct event;

/*
 * What an adapter does when its connection speaks (each called inside a step of its own, whose
 * time counts in ad_conn.steps): @connected, @read (bytes came, or the server closed: c->eof),
 * @step (the timer of ad_conn_schedule() fired), @failed (the connection failed: the message,
 * for the adapter to count and log; it closes the connection), @refresh_timeout (the refresh
 * under way missed the deadline of ad_conn_refresh(); the adapter fails it). @doing names what the
 * adapter was doing, for the log line of a step over slice_time.
 */
struct ad_conn_ops {
        void (*connected)(void *userdata);
        void (*read)(void *userdata);
        void (*step)(void *userdata);
        void (*failed)(void *userdata, const char *msg);
        void (*refresh_timeout)(void *userdata);
        const char *(*doing)(void *userdata);
};

/*
 * One connection to a server on the host's loop, and the machinery the frame (adapter-round.c)
 * runs it with: a timer for the adapter's next step, at the base's lowest priority (as the host's
 * aging slices), so that the loop polls between two steps; the bufferevent's callbacks turned
 * into ops; the steps' accounting; and the refresh handshake with the host, whose
 * ca_host_rotate_ready() comes from a step of its own, so that the rotation, and the aging
 * slice it may start at once, never run inside one of the adapter's steps.
 */
struct ad_conn {
        struct ca_host *host;
        struct ca_cache *cache;        /* the adapter's, once registered */
        struct event_base *base;
        int priority;                  /* the base's lowest */
        struct bufferevent *bev;       /* NULL when not connected */
        struct event *step;            /* the adapter's next step */
        struct event *deadline;        /* the refresh under way must be done by then */
        bool connecting;
        bool eof;                      /* the server closed; what it sent is read first */
        bool refreshing;               /* ca_host_rotate_ready() is owed */
        bool ready_due;                /* ... and due at the next step */
        uint64_t timeout_usec;
        struct ad_steps steps;
        const char *work_unit;         /* what steps.work counts, for the log line of a long step */
        const struct ad_conn_ops *ops;
        void *userdata;
};

/*
 * ad_conn_init() - on the host's base, not connected; @work_unit says what a step's work counts
 * ("lines or items"). Returns 0, -EINVAL (no base) or -ENOMEM.
 */
int ad_conn_init(struct ad_conn *c, struct ca_host *host, uint64_t timeout_usec,
                 const struct ad_conn_ops *ops, const char *work_unit, void *userdata);
/* ad_conn_free() - close, and free the timer; accepts a connection never initialised (zeroed). */
void ad_conn_free(struct ad_conn *c);
/*
 * ad_conn_connect() - start connecting to @addr (ad_connect(): @read_max, @input_max), with
 * the timeout armed. Returns 0, or a negative errno (nothing to close).
 */
int ad_conn_connect(struct ad_conn *c, const struct sockaddr_storage *addr, socklen_t addr_len,
                    size_t read_max, size_t input_max);
/* ad_conn_close() - drop the connection and the step scheduled. */
void ad_conn_close(struct ad_conn *c);
/* ad_conn_timeouts() - ad_timeouts() with the connection's timeout (nothing when closed). */
void ad_conn_timeouts(struct ad_conn *c, bool waiting);
/* ad_conn_schedule() - the next step after @delay_usec, once the loop has polled. */
void ad_conn_schedule(struct ad_conn *c, uint64_t delay_usec);
/* ad_conn_scheduled() - whether a step is scheduled (it reads what comes meanwhile). */
bool ad_conn_scheduled(const struct ad_conn *c);
/* ad_conn_begin(), ad_conn_end() - a step of the adapter's outside the connection's callbacks. */
struct ad_step ad_conn_begin(struct ad_conn *c);
void ad_conn_end(struct ad_conn *c, const struct ad_step *step);
/*
 * ad_conn_refresh() - a refresh begins: ca_host_rotate_ready() is owed, and, when
 * @deadline_usec is not 0, due within @deadline_usec (a deadline already running stays): past
 * it, ops->refresh_timeout is called. The connection's timeout only bounds a silence; a server
 * that sends a byte every few seconds would hold the cache's rotations for ever.
 */
void ad_conn_refresh(struct ad_conn *c, uint64_t deadline_usec);
/*
 * ad_refresh_deadline_usec() - the deadline of a refresh: @configured_usec ("refresh_timeout"),
 * or when it is 0 a minute plus three times what reading the larger of @max_items and
 * @items_seen (the most a refresh has read: a server may hold more than is tracked) takes at
 * @rate items a second: a round of deletes under way, the walk and its sweep (2 min for a
 * million items at 50,000 a second).
 */
uint64_t ad_refresh_deadline_usec(uint64_t configured_usec, uint64_t max_items,
                                  uint64_t items_seen, uint64_t rate);
/* ad_conn_refresh_done() - it is over (the deadline is off): the host is told at the next step. */
void ad_conn_refresh_done(struct ad_conn *c);

/*
 * ad_conn_stats() - the steps' statistics: longest_step_usec, longest_step_cpu_usec, steps,
 * steps_over_slice.
 */
void ad_conn_stats(const struct ad_conn *c, void (*emit)(void *, const struct ca_adapter_stat *,
                                                           uint64_t), void *eu);

/*
 * ad_reserve() - room for one more element of @size in the array *@array of *@cap (doubled,
 * 1024 at first) holding @n. Returns 0, or -ENOMEM (the array as it was).
 */
int ad_reserve(void *array, size_t *cap, size_t n, size_t size);

/* ---- an index of keys ---- */

/* ad_hash() - FNV-1a (64 bits), its high bits folded in: for tables of a power of two. */
uint64_t ad_hash(const uint8_t *key, size_t len);
/* ad_buckets_for() - buckets for at most @max_items: half one an item, at least @min. */
size_t ad_buckets_for(uint64_t max_items, size_t min);
