/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What root may trust: a file or directory that belongs to root or to the daemon's own user,
 * and that nobody else may write (a group that is root's or the daemon's own counts as
 * theirs). The rule sudo applies to its plugins.
 */

#include <stddef.h>
#include <sys/stat.h>

#define TRUST_SYMLINKS_MAX 40 /* symlinks followed in one path, as the kernel's MAXSYMLINKS */
#define TRUST_DEPTH_MAX 64    /* directories deep */

/*
 * stat_untrusted() - whether @st (of @path) fails the rule. Returns 0 when it is trusted,
 * else -EPERM with the reason in @reason ("PATH is writable by everyone").
 */
int stat_untrusted(const struct stat *st, const char *path, char *reason, size_t reason_len);

/*
 * trust_open() - open the regular file @path for reading, safely, the way systemd's chase()
 * with CHASE_SAFE walks a path: component by component from "/" (a relative @path from the
 * working directory's absolute name), each looked up with O_NOFOLLOW under the directory
 * already opened, so nothing can be swapped between a check and the use. Symlinks are
 * followed by hand (at most TRUST_SYMLINKS_MAX). Every directory passed through must belong
 * to root or the daemon's user; an entry may only be looked up in a directory that nobody
 * else may write, unless that directory is sticky (as /tmp) and the entry belongs to root or
 * the daemon's user, so that nobody else can replace it. The file itself must pass
 * stat_untrusted() and be a regular file (a FIFO would block whoever opens it).
 * Returns 0 and an O_RDONLY|O_CLOEXEC descriptor of the very file checked in *ret_fd (load
 * it through /proc/self/fd/N), or a negative errno with the reason in @reason, naming the
 * real path of what was refused.
 */
int trust_open(const char *path, int *ret_fd, char *reason, size_t reason_len);
