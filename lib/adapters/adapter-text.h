/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Text that the network adapters' protocol units (memcached-proto.c, redis-proto.c) share:
 * numbers read strictly, a parser's refusal, and an excerpt of what a server sent for a log
 * message. Pure
 * functions, no I/O, no allocation: the adapters, their tests and their fuzz targets call them.
 */

#include <stddef.h>
#include <stdint.h>

#define AD_EXCERPT_MAX 64 /* bytes of a line quoted in a message, escapes included */
#define AD_EXCERPT_BUF (AD_EXCERPT_MAX + 4)

/*
 * ad_parse_u64() - @len decimal digits (no sign, no blank) up to @max. Returns 0, or
 * -EBADMSG (not a number, empty) / -ERANGE (above @max).
 */
int ad_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret);

/*
 * ad_bad() - a parser's refusal: its reason, from @fmt, in @err (@err_len bytes; none when @err
 * is NULL). Returns -EBADMSG.
 */
int ad_bad(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * ad_excerpt() - up to AD_EXCERPT_MAX bytes of @line for a log message: printable ASCII as is,
 * other bytes (and '\') as \xNN, "..." when cut. Returns @buf (AD_EXCERPT_BUF bytes).
 */
char *ad_excerpt(const char *line, size_t len, char *buf);
