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
 *             kernel object per directory. But it reports every open and read on the whole
 *             filesystem: on one shared with busy paths the daemon pays for all of them, and so
 *             does every process that opens a file there (bench-files' outside case: half the
 *             opens of a process reading files elsewhere on "/"). fw_whole_filesystem() says
 *             whether the tree is all its filesystem holds. It needs CAP_SYS_ADMIN; without it
 *             fw_open() fails with -EPERM. A directory's key is its file handle
 *             (name_to_handle_at()).
 *   inotify   a watch per directory (IN_OPEN | IN_ACCESS), which anyone may place on what they
 *             can read, up to fs.inotify.max_user_watches per user: past it fw_watch_dir()
 *             fails with -ENOSPC. Uses through another mount are seen too (the watch is on the
 *             inode). A directory's key is its watch descriptor. Events are only those of the
 *             directories watched.
 *
 * When the kernel's event queue overflows, events are lost: fw_read() says so (lost). The
 * queue holds one overflow marker at most, queued at the first event dropped and dequeued by a
 * read, so the events a marker stands for were all dropped after the previous marker was read,
 * and after the last read that found the queue empty (drained): the adapter uses both to bound
 * what a marker may hide (files.c, "Lost events").
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
        /* The kernel's queue overflowed: events were lost (since the last lost() or drained()). */
        void (*lost)(void *userdata);
        /* A read found the queue empty: every event before this moment has been reported. */
        void (*drained)(void *userdata);
        /* The last fw_sync()'s mark came out of the queue: every event before it, likewise. */
        void (*synced)(void *userdata);
};

/*
 * fw_open() - start watching in @mode for @root's tree (fanotify marks @root's filesystem
 * now; inotify waits for fw_watch_dir()). Returns 0, or a negative errno with the reason in
 * @why (-EPERM: not allowed; -EINVAL, -ENOSYS: the kernel lacks it; -EOPNOTSUPP, -EXDEV: the
 * filesystem cannot report file handles).
 */
int fw_open(enum fw_mode mode, const struct fs_root *root, struct fw **ret, char *why,
            size_t why_len);

/*
 * fw_whole_filesystem() - whether @root is the root of its filesystem as well as of its mount
 * (/proc/self/mountinfo: the mount's root is "/"), so that a filesystem mark reports the tree's
 * own files only. Any error answers false.
 */
bool fw_whole_filesystem(const struct fs_root *root);

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
 * fw_sync() - put a mark of our own at the end of the queue now (inotify: the IN_IGNORED of a
 * watch added and removed at once, on "/", which no tree can be): when fw_read() comes to it,
 * cb->synced(), and any overflow marker read after it stands for drops after this call. A
 * queue that is full drops the mark (its marker is read instead). Only the last call's mark
 * counts. Returns 0, -EOPNOTSUPP (fanotify), or a negative errno.
 */
int fw_sync(struct fw *fw);

/*
 * fw_read() - read the events waiting, at most about @max_bytes of them, and report each
 * through @cb; cb->drained() when a read found none left. Returns the number of events read
 * (0: none waiting), or a negative errno.
 */
int fw_read(struct fw *fw, size_t max_bytes, const struct fw_callbacks *cb, void *userdata);
