/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Every statistic of every cache in the Prometheus text format (version 0.0.4, which
 * node_exporter's textfile collector and `promtool check metrics` read): the library's, one
 * family per entry of ca_stat_descs(), and the adapters', one family per adapter and name, as
 * their stats hooks describe them; names, types and help come from those descriptions, and the
 * units become Prometheus's base units by rule (metrics_name()). Outside those lists: the
 * refaults by distance (ca_cache_refault_histogram()), one counter per bucket.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cacheage/age.h"

struct manager;

#define METRICS_NAME_MAX 256 /* bytes of a metric name, NUL included */

/*
 * metrics_name() - the metric name of statistic @name (kind @kind, unit @unit, may be NULL or
 * "") under @prefix ("cacheage_", or "cacheage_ADAPTER_"): characters outside [a-zA-Z0-9_]
 * become '_', a duration in "usec" becomes "_seconds", a "timestamp_usec" "_timestamp_seconds",
 * "ppm" a "_ratio", "bytes" and "seconds" end in "_bytes" and "_seconds", and a counter ends in
 * "_total". *ret_divisor is what the value is divided by (1 or 1000000).
 */
char *metrics_name(const char *prefix, const char *name, enum ca_stat_kind kind,
                   const char *unit, char buf[static METRICS_NAME_MAX], uint64_t *ret_divisor);

/* metrics_write() - the text into @f. Returns 0, or -EIO when writing failed. */
int metrics_write(struct manager *m, FILE *f);

/*
 * metrics_write_page() - the text from @cursor on (0: from the start) into @f, at most
 * @max_bytes of it, ending where a sample ends (a family goes on in the next page without its
 * HELP and TYPE): the pages put end to end are the text. *ret_next gets the next page's
 * cursor, 0 after the last page. A cursor holds a hash of the caches and of the adapters'
 * families: -ESTALE when they changed since (a reload; read again from 0). -ENOBUFS when
 * @max_bytes cannot hold a single sample (under 8 KiB), -EIO when writing failed.
 */
int metrics_write_page(struct manager *m, FILE *f, uint64_t cursor, size_t max_bytes,
                       uint64_t *ret_next);

/*
 * metrics_write_file() - the text into @path, atomically: a temporary file beside it (a
 * hidden name, which the textfile collector skips), mode 0644 whatever the umask, renamed over
 * @path. The directory is opened along a trusted path (trust_open_full(), TRUST_DIRECTORY:
 * root's or the daemon's user's, writable by nobody else) and everything is made relative to
 * it. A process's first write also removes the temporary files a killed cacheaged left there.
 * Returns 0, or a negative errno with the reason in @reason (the temporary file is gone).
 */
int metrics_write_file(struct manager *m, const char *path, char *reason, size_t reason_len);
