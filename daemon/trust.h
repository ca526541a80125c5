/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What root may trust: a file or directory that belongs to root or to the daemon's own user,
 * and that nobody else may write, by its mode or by its POSIX ACL (a group that is root's or
 * the daemon's own counts as theirs). The rule sudo applies to its plugins. The system
 * instance runs as root and trusts root alone; a user's instance trusts root and that user.
 * In a user namespace that leaves root unmapped (a user's instance under PrivateUsers=yes),
 * root's files read as the overflow uid; trust.c says where that owner is taken for root's.
 */

#include <stddef.h>
#include <sys/stat.h>

#define TRUST_SYMLINKS_MAX 40 /* symlinks followed in one path, as the kernel's MAXSYMLINKS */
#define TRUST_DEPTH_MAX 64    /* directories deep */

/*
 * fd_untrusted() - whether @st (of @fd, any descriptor of it, O_PATH too; of @path) fails the
 * rule: its owner, its mode, and the named users and groups of its POSIX access ACL whose
 * write the mask lets through. Returns 0 when it is trusted, else -EPERM with the reason in
 * @reason ("PATH is writable by everyone", "PATH is writable by uid 1000 (its ACL)").
 */
int fd_untrusted(int fd, const struct stat *st, const char *path, char *reason,
                 size_t reason_len);

/*
 * fd_readable_by_others() - whether @st (of @fd, any descriptor of it; of @path) may be read by
 * someone other than root, the daemon's user and the file's own group: by its mode, or by a named
 * user or group of its POSIX access ACL whose read the mask lets through. For a secret (a
 * password file). Returns 0 when it is not, else -EPERM with the file and whom in @reason ("PATH
 * is readable by everyone (chmod o-r)", "PATH is readable by uid 1000 (its ACL): ...").
 */
int fd_readable_by_others(int fd, const struct stat *st, const char *path, char *reason,
                          size_t reason_len);

#define TRUST_DEV_NULL (1u << 0)  /* the file may be /dev/null (a masked drop-in): read as empty */
#define TRUST_DIRECTORY (1u << 1) /* @path is a directory, to make entries in */

/*
 * trust_open_full() - open the regular file @path for reading, safely, the way systemd's
 * chase() with CHASE_SAFE walks a path: component by component from "/" (a relative @path from
 * the working directory's absolute name), each looked up with O_NOFOLLOW under the directory
 * already opened, so nothing can be swapped between a check and the use. Symlinks are
 * followed by hand (at most TRUST_SYMLINKS_MAX). Every directory passed through must belong
 * to root or the daemon's user; an entry may only be looked up in a directory that nobody
 * else may write (fd_untrusted(): its mode and its ACL), unless that directory is sticky (as
 * /tmp) and the entry belongs to root or the daemon's user, so that nobody else can replace
 * it. The file itself must pass fd_untrusted() and be a regular file (a FIFO would block
 * whoever opens it).
 * @flags: TRUST_DEV_NULL also takes the character device /dev/null as the file (its own mode
 * does not matter: it reads as empty); TRUST_DIRECTORY wants @path to be a directory, which
 * must pass fd_untrusted() itself, sticky or not, and opens it O_RDONLY|O_DIRECTORY for
 * openat() and renameat() below it; on the way to it, unlike on the way to a file, a directory
 * of another owner's is passed through where nobody else may write it, but no symlink below it
 * is followed (its owner may rename entries, not make a directory of root's: trust.c).
 * Returns 0 and an O_CLOEXEC descriptor of the very file or directory checked in *ret_fd
 * (load a module through /proc/self/fd/N), or a negative errno with the reason in @reason,
 * naming the real path of what was refused: -EPERM (refused by the rule), -ENODEV (not a
 * regular file), -ENOENT, -ENOTDIR, -ELOOP, ...
 */
int trust_open_full(const char *path, unsigned flags, int *ret_fd, char *reason,
                    size_t reason_len);

/*
 * trust_add_installed() - @dir (absolute) belongs to the installation, as the executable does:
 * in a user namespace that leaves root unmapped, the overflow uid owning it, the directories on
 * the way to it or the regular files directly in it is taken for root's (trust.c says why and
 * where else). Call before the first trust_open*(). Returns 0, -EINVAL, or -E2BIG (more than 4).
 */
int trust_add_installed(const char *dir);

/* trust_open() - trust_open_full() without flags: a regular file. */
int trust_open(const char *path, int *ret_fd, char *reason, size_t reason_len);
