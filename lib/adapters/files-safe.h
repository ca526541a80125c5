/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the files adapter may touch, decided in one place. The daemon runs as root and a cache
 * directory is often writable by others, so every step below holds whatever a concurrent
 * user does to the tree:
 *
 *   - every name is resolved relative to a directory handle opened O_DIRECTORY|O_NOFOLLOW,
 *     from the root handle down, one component at a time: no path string is ever resolved
 *     by the kernel as a whole, and no symlink is followed, anywhere (the configured path
 *     included: a symlink in it is refused, because a user who owns an ancestor could point
 *     it elsewhere);
 *   - a directory is entered only when it is on the root's filesystem and mount: the same
 *     st_dev, the same mount id, and not the root of a mount (STATX_ATTR_MOUNT_ROOT), which
 *     catches a bind mount of the same filesystem that st_dev alone would not;
 *   - a directory reopened later (to delete in it) must be the very directory the scan saw
 *     (its inode), or nothing in it is touched;
 *   - a file is deleted only when, just before unlinkat(), fstatat(AT_SYMLINK_NOFOLLOW) on its
 *     parent handle shows the very file the scan saw: a regular file, not a mount point, the
 *     same inode, size, mtime and ctime, and an atime that did not move.
 *
 * No function here allocates, logs or keeps state: the unit tests call them directly.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* What the scan saw of a file: what must still hold for it to be deleted. */
struct fs_seen {
        uint64_t ino;
        uint64_t size;     /* bytes */
        int64_t mtime_nsec; /* since the Unix epoch */
        int64_t ctime_nsec;
        int64_t atime_nsec;
};

/* The tree's root: the directory a configured path names, and the filesystem and mount it is on. */
struct fs_root {
        int fd;             /* O_DIRECTORY|O_NOFOLLOW, -1 when closed */
        uint64_t dev;       /* makedev() of statx's stx_dev_major/minor */
        uint64_t ino;
        uint64_t mnt_id;
};

/* The statx mask the functions below ask for. */
#define FS_STATX_MASK (STATX_TYPE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME | \
                       STATX_ATIME | STATX_MNT_ID)

/*
 * fs_root_open() - open @path (absolute, "/" itself refused) from "/" one component at a time
 * with O_DIRECTORY|O_NOFOLLOW. Returns 0 and the root in *ret, or a negative errno with the
 * reason in @why: -EINVAL (not absolute, "/", "." or ".." in it), -ELOOP (a component is a
 * symlink), -ENOTDIR, -EOPNOTSUPP (the kernel does not report mount roots: Linux < 5.8),
 * or what openat() said.
 */
int fs_root_open(const char *path, struct fs_root *ret, char *why, size_t why_len);

/* fs_root_close() - close the handle (accepts a closed root). */
void fs_root_close(struct fs_root *root);

/*
 * fs_root_same() - whether @a and @b are the same directory (a path resolved again names the
 * root that is open).
 */
bool fs_root_same(const struct fs_root *a, const struct fs_root *b);

/*
 * fs_dir_open() - open the directory @name of @parent_fd, a directory of @root's tree,
 * O_DIRECTORY|O_NOFOLLOW, and check that it may be entered. @expect_ino 0 takes any inode.
 * Returns 0, the handle in *ret_fd and its inode in *ret_ino, or a negative errno (the handle
 * closed): -ENOTDIR (a symlink, or not a directory), -EXDEV (another filesystem, another
 * mount, or a mount point: a bind mount), -ESTALE (not the inode expected), -EINVAL (@name
 * empty, ".", ".." or with a '/'), or what openat() or statx() said.
 */
int fs_dir_open(const struct fs_root *root, int parent_fd, const char *name, uint64_t expect_ino,
                int *ret_fd, uint64_t *ret_ino);

/* The type of an entry as fs_entry_stat() saw it. */
enum fs_kind {
        FS_FILE,  /* a regular file of the root's mount: an object */
        FS_DIR,   /* a directory: to be entered with fs_dir_open() */
        FS_OTHER, /* a symlink, a device, a FIFO, a socket: never an object */
        FS_MOUNT, /* anything on another filesystem or mount, or a mount point (a bind mount) */
};

/*
 * fs_entry_stat() - statx() @name in @dir_fd without following it (AT_SYMLINK_NOFOLLOW).
 * Returns the kind (and, for FS_FILE, what was seen in *ret), or a negative errno.
 */
int fs_entry_stat(const struct fs_root *root, int dir_fd, const char *name, struct fs_seen *ret);

/* fs_seen_same() - the same inode, size, mtime and ctime (atime is not identity). */
bool fs_seen_same(const struct fs_seen *a, const struct fs_seen *b);

/*
 * fs_unlink_if_same() - delete @name from @dir_fd, a directory of @root's tree opened with
 * fs_dir_open() or the root itself, only when it is still exactly the file @seen says (see
 * the top of this file); with @dry_run check the same and delete nothing.
 * Returns 0 (deleted, or would be), -ENOENT (gone already), -ESTALE (not that file any more:
 * replaced, modified, or no longer a regular file of this mount), -EBUSY (its atime moved:
 * read since it was seen), -EINVAL (a bad @name), or what unlinkat() said (-EPERM, -EACCES,
 * -EROFS, ...).
 *
 * The check and the unlink are two system calls: a file renamed onto @name between them is
 * what gets deleted. It is a file of the same directory of the tree, put there by someone who
 * may write that directory, within microseconds; nothing outside the tree can be reached
 * (the directory is a verified handle and unlinkat() follows no symlink).
 */
int fs_unlink_if_same(const struct fs_root *root, int dir_fd, const char *name,
                      const struct fs_seen *seen, bool dry_run);

/*
 * fs_rmdir_if_same() - remove the empty directory @name from @dir_fd (a directory of @root's
 * tree, as for fs_unlink_if_same()) only when it is still the directory that was seen empty:
 * not a symlink, on the root's mount and no mount point, inode @ino, and its mtime and ctime
 * still @mtime_nsec and @ctime_nsec (nothing was made in it or removed from it since); with
 * @dry_run check the same and remove nothing. rmdir() itself removes only an empty directory.
 * Returns 0, -ENOENT (gone), -ESTALE (not that directory, or changed), -ENOTEMPTY or -EEXIST
 * (not empty), -EBUSY (a mount point), -EINVAL (a bad @name), or what unlinkat() said.
 *
 * As for files, a directory renamed onto @name between the check and the removal is what is
 * removed, if it is empty: an empty directory of the same directory of the tree.
 */
int fs_rmdir_if_same(const struct fs_root *root, int dir_fd, const char *name, uint64_t ino,
                     int64_t mtime_nsec, int64_t ctime_nsec, bool dry_run);

/* fs_name_ok() - a single path component: not empty, not "." or "..", no '/'. */
bool fs_name_ok(const char *name);
