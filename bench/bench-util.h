/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the benchmarks of the network adapters (bench-memcached, bench-memcached-value,
 * bench-redis) share beyond bench-run.h (the run, its processes): a server's port and a client
 * of it, a client's latencies kept with their times and their percentiles within or outside
 * stretches of time, the real cacheaged run as its unit runs it with its log and watchdog pings
 * read as they come, and the machine's own steps over slice_time (a control). Nothing here asserts speed: figures are
 * printed, as ratios to a baseline of the same run.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench-run.h"

#define BENCH_WATCHDOG_USEC 20000   /* the daemon pings every 10 ms */
#define BENCH_SLICE_USEC 2000       /* the daemon's slice_time (its default) */
#define BENCH_UNIT_USEC 400         /* the control's units of arithmetic */
#define BENCH_CONTROL_UNITS_SEC 20

/* ---- the server ---- */

/* bench_free_port() - a port of 127.0.0.1 that was free a moment ago. */
uint16_t bench_free_port(void);
/* bench_connect() - a TCP client of 127.0.0.1:@port (TCP_NODELAY), or -1. */
int bench_connect(uint16_t port);
void bench_write_all(int fd, const char *s, size_t n);

/* ---- a client's latencies ---- */

struct bench_sample {
        uint64_t t_usec;       /* when the request was sent */
        uint32_t latency_usec;
};

struct bench_samples {
        struct bench_sample *v;
        size_t n, max;
};

struct bench_pct {
        size_t n;
        uint32_t p50, p99, p999, max;
};

/* A stretch of time: a rotation (and half a second after it), a reload, a control. */
struct bench_span {
        uint64_t from, to;
};

void bench_samples_init(struct bench_samples *s, size_t max);
/* bench_sample() - keep one latency (dropped once @max are kept). */
void bench_sample(struct bench_samples *s, uint64_t t_usec, uint64_t latency_usec);
/* bench_percentiles() - of the requests sent within [from, to). */
struct bench_pct bench_percentiles(const struct bench_samples *s, uint64_t from, uint64_t to);
/*
 * bench_percentiles_where() - of the requests sent within the spans @in (every request when
 * @in is NULL) and outside all the spans @out.
 */
struct bench_pct bench_percentiles_where(const struct bench_samples *s,
                                         const struct bench_span *in, size_t n_in,
                                         const struct bench_span *out, size_t n_out);
/* bench_percentiles_of() - within the spans (@inside) or outside all of them. */
struct bench_pct bench_percentiles_of(const struct bench_samples *s, const struct bench_span *v,
                                      size_t n, bool inside);
/* bench_pace() - sleep (or spin, with @spin) until @t0 + @period_usec. */
void bench_pace(uint64_t t0, uint64_t period_usec, bool spin);

/* ---- the daemon ---- */

#define BENCH_MAX_EVENTS 4096 /* the daemon's log lines kept (those holding a needle) */

struct bench_event {
        uint64_t t_usec;         /* when it was read */
        char line[512];
};

/* The daemon's log, and its notify socket: READY=1 and the WATCHDOG=1 pings, with their times. */
struct bench_watch {
        const char *log_path;
        const char *const *needles; /* lines holding one of them are kept, NULL-ended */
        int notify_fd;
        volatile bool stop;
        pthread_t thread;
        pthread_mutex_t lock;
        struct bench_event *events; /* BENCH_MAX_EVENTS, never moved: read them after
                                       bench_wait_event() */
        size_t n_events;
        uint64_t *pings;          /* times of WATCHDOG=1 */
        size_t n_pings, cap_pings;
        volatile bool ready;
};

/*
 * bench_daemon_start() - the real cacheaged (CACHEAGED, --bus none, --log-level debug, at
 * SCHED_IDLE as its unit runs it when @sched_idle) on @conf_text, written to @name.conf in the
 * run directory (its log: @name.log); WATCHDOG_USEC=@watchdog_usec (0: none). Returns once it
 * said READY=1, @w keeping the lines of its log that hold one of @needles (NULL-ended).
 */
void bench_daemon_start(struct bench_child *d, struct bench_watch *w, const char *name,
                        const char *conf_text, const char *const *needles,
                        uint64_t watchdog_usec, bool sched_idle);
/* bench_daemon_stop() - stop reading its log, then stop it. */
void bench_daemon_stop(struct bench_child *d, struct bench_watch *w);
/* bench_watch_free() - what the watch holds (after bench_daemon_stop()). */
void bench_watch_free(struct bench_watch *w);
/*
 * bench_wait_event() - wait up to @timeout_usec for the @nth line (from 1) holding @needle: its
 * index in w->events, or -1.
 */
ssize_t bench_wait_event(struct bench_watch *w, const char *needle, size_t nth,
                         uint64_t timeout_usec);
/* bench_count_events() - how many lines holding @needle were read so far. */
size_t bench_count_events(struct bench_watch *w, const char *needle);
/* bench_longest_gap() - the longest gap between two watchdog pings within [from, to), in us. */
uint64_t bench_longest_gap(const struct bench_watch *w, uint64_t from, uint64_t to);
/* bench_field_after() - the number after @word in @line (0 when @word is not there). */
uint64_t bench_field_after(const char *line, const char *word);

/* ---- the machine's own steps over slice_time ---- */

/*
 * bench_control_units() - a thread at SCHED_IDLE, as the daemon runs, does units of arithmetic
 * about as long as the adapters' steps (BENCH_UNIT_USEC) for BENCH_CONTROL_UNITS_SEC and reads
 * its CPU clock around each: how many read over slice_time, and the longest. A VM that reports
 * no steal time charges a virtual CPU taken away to the thread on it.
 */
void bench_control_units(uint64_t *ret_n, uint64_t *ret_over, uint64_t *ret_longest);
