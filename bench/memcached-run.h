/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the memcached benchmarks (bench-memcached, bench-memcached-value) share: a real memcached
 * on a free port and a blocking client of it; the real cacheaged with a memcached cache on it
 * (its log and notify socket are read by bench-util.c).
 * The processes are the run's children (bench-run.h).
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench-run.h"
#include "bench-util.h"

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

/*
 * mcb_daemon_start() - bench_daemon_start() with one cache "mc" of the memcached adapter
 * (CA_ADAPTER_DIR) on the memcached running now, @cache_lines added to its section, rotations
 * never deferred for pressure; its log watched for the adapter's lines. Named @name in the run
 * directory (its .conf and .log).
 */
void mcb_daemon_start(struct bench_child *d, struct bench_watch *w, const char *name,
                      const char *cache_lines, uint64_t watchdog_usec, bool sched_idle);
