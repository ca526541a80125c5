/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the memcached benchmarks (bench-memcached, bench-memcached-value) share: a real memcached
 * on a free port and a blocking client of it; the real cacheaged with a memcached cache on it,
 * its log and its notify socket read as they come, line by line, with the time each arrived.
 * The processes are the run's children (bench-run.h).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench-run.h"

/* --- memcached ----------------------------------------------------------------------------- */

/* The port of the memcached running now (mcb_memcached_start()). */
extern uint16_t mcb_port;

/*
 * mcb_memcached_start() - memcached on a free port of 127.0.0.1 (no UDP), with @args (NULL-ended,
 * may be NULL) added, as nobody when run as root, its log in the run directory; returns once it
 * accepts connections.
 */
void mcb_memcached_start(struct bench_child *c, const char *const *args);
/* mcb_connect() - a blocking TCP_NODELAY connection to it, or -1. */
int mcb_connect(void);
void mcb_write_all(int fd, const char *s, size_t n);
/* mcb_read_until() - read until the stream has shown @count times @end. */
void mcb_read_until(int fd, const char *end, size_t count);
/* mcb_server_stat() - one figure of memcached's "stats", as an integer (0 when it has none). */
uint64_t mcb_server_stat(const char *name);
/* mcb_server_stat_double() - the same, for figures with a fraction (rusage_user). */
double mcb_server_stat_double(const char *name);
/* mcb_server_stat_items() - a figure of "stats items", summed over the slab classes. */
uint64_t mcb_server_stat_items(const char *name);

/* --- cacheaged ----------------------------------------------------------------------------- */

#define MCB_MAX_EVENTS 4096 /* the daemon's log lines kept (those that mcb_watched lists) */

struct mcb_event {
        uint64_t t_usec;         /* when it was read */
        char line[512];
};

/* The daemon's log, and its notify socket: READY=1 and the WATCHDOG=1 pings, with their times. */
struct mcb_watch {
        const char *log_path;
        int notify_fd;
        volatile bool stop;
        pthread_t thread;
        pthread_mutex_t lock;
        struct mcb_event *events; /* MCB_MAX_EVENTS, never moved: read them after mcb_wait_event() */
        size_t n_events;
        uint64_t *pings;          /* times of WATCHDOG=1 */
        size_t n_pings, cap_pings;
        volatile bool ready;
};

/*
 * mcb_daemon_start() - the real cacheaged (CACHEAGED, --bus none, --log-level debug, at
 * SCHED_IDLE as its unit runs it when @sched_idle) with one cache "mc" of the memcached adapter
 * (CA_ADAPTER_DIR) on the memcached running now, @cache_lines added to its section, rotations
 * never deferred for pressure; WATCHDOG_USEC=@watchdog_usec (0: none). Named @name in the run
 * directory (its .conf and .log). Returns once it said READY=1, @w reading its log.
 */
void mcb_daemon_start(struct bench_child *d, struct mcb_watch *w, const char *name,
                      const char *cache_lines, uint64_t watchdog_usec, bool sched_idle);
/* mcb_daemon_stop() - stop reading its log, then stop it. */
void mcb_daemon_stop(struct bench_child *d, struct mcb_watch *w);
/* mcb_watch_free() - what the watch holds (after mcb_daemon_stop()). */
void mcb_watch_free(struct mcb_watch *w);

/* mcb_wait_event() - wait up to @timeout_usec for the @nth line (from 1) holding @needle: its
 * index in w->events, or -1. */
ssize_t mcb_wait_event(struct mcb_watch *w, const char *needle, size_t nth, uint64_t timeout_usec);
/* mcb_count_events() - how many lines holding @needle were read so far. */
size_t mcb_count_events(struct mcb_watch *w, const char *needle);
/* mcb_longest_gap() - the longest gap between two watchdog pings within [from, to), in us. */
uint64_t mcb_longest_gap(const struct mcb_watch *w, uint64_t from, uint64_t to);
/* mcb_field_after() - the number after @word in @line (0 when @word is not there). */
uint64_t mcb_field_after(const char *line, const char *word);
