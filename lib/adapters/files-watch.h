/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * How the files adapter sees a file being used between two scans: fanotify or inotify. Both
 * report an access as (the directory's key, the file's name); the adapter keeps a table from
 * keys to its directories.
 *
 *   fanotify  one mark on the whole filesystem of the tree (FAN_MARK_FILESYSTEM, FAN_OPEN |
 *             FAN_ACCESS), reported as the parent directory's file handle and the name
 *             (FAN_REPORT_DFID_NAME, Linux 5.9): it sees a use through any mount of the
 *             filesystem (a bind mount of the cache into a container too), and costs no
 *             kernel object per directory. It needs CAP_SYS_ADMIN; without it fw_open() fails
 *             with -EPERM and the adapter falls back to inotify. A directory's key is its
 *             file handle (name_to_handle_at()).
 *   inotify   a watch per directory (IN_OPEN | IN_ACCESS), which anyone may place on what they
 *             can read, up to fs.inotify.max_user_watches per user: past it fw_watch_dir()
 *             fails with -ENOSPC and the adapter sees that directory's files by atime only.
 *             Uses through another mount are seen too (the watch is on the inode). A
 *             directory's key is its watch descriptor.
 *
 * When the kernel's event queue overflows, events are lost: fw_read() says so (lost), and the
 * adapter treats every file as possibly used in that period.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "files-safe.h"

enum fw_mode {
        FW_FANOTIFY,
        FW_INOTIFY,
};

#define FW_KEY_MAX 136 /* bytes of a directory's key: a handle type and MAX_HANDLE_SZ bytes */

struct fw;

/* What fw_read() reports. */
struct fw_callbacks {
        /* A file @name of the directory whose key is @key was opened or read. */
        void (*access)(void *userdata, const unsigned char *key, size_t key_len, const char *name);
        /* The kernel's queue overflowed: events were lost. */
        void (*lost)(void *userdata);
};

/*
 * fw_open() - start watching in @mode for @root's tree (fanotify marks @root's filesystem
 * now; inotify waits for fw_watch_dir()). Returns 0, or a negative errno with the reason in
 * @why (-EPERM: not allowed; -EINVAL, -ENOSYS: the kernel lacks it; -EOPNOTSUPP, -EXDEV: the
 * filesystem cannot report file handles).
 */
int fw_open(enum fw_mode mode, const struct fs_root *root, struct fw **ret, char *why,
            size_t why_len);

/* fw_free() - stop watching; accepts NULL, returns NULL. */
struct fw *fw_free(struct fw *fw);

enum fw_mode fw_mode(const struct fw *fw);

/* fw_fd() - the descriptor to poll for events (readable). */
int fw_fd(const struct fw *fw);

/*
 * fw_watch_dir() - watch the directory open at @dir_fd (a handle from fs_dir_open()). Stores
 * its key in @key (FW_KEY_MAX bytes) and the key's length in *ret_key_len. Returns 0, -ENOSPC
 * (inotify: fs.inotify.max_user_watches reached), or another negative errno.
 */
int fw_watch_dir(struct fw *fw, int dir_fd, unsigned char *key, size_t *ret_key_len);

/* fw_unwatch_dir() - stop watching the directory whose key is @key (a no-op for fanotify). */
void fw_unwatch_dir(struct fw *fw, const unsigned char *key, size_t key_len);

/*
 * fw_read() - read the events waiting, at most about @max_bytes of them, and report each
 * through @cb. Returns the number of events read (0: none waiting), or a negative errno.
 */
int fw_read(struct fw *fw, size_t max_bytes, const struct fw_callbacks *cb, void *userdata);
