/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What root may trust: a file or directory that belongs to root or to the daemon's own user,
 * and that nobody else may write (a group that is root's or the daemon's own counts as
 * theirs). The rule sudo applies to its plugins.
 */

#include <stddef.h>
#include <sys/stat.h>

/*
 * stat_untrusted() - whether @st (of @path) fails the rule. Returns 0 when it is trusted,
 * else -EPERM with the reason in @reason ("PATH is writable by everyone").
 */
int stat_untrusted(const struct stat *st, const char *path, char *reason, size_t reason_len);
