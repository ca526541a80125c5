/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the files adapter may touch (see files-safe.h for the rules and why). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "files-safe.h"

#define FS_OPEN_DIR (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

bool fs_name_ok(const char *name)
{
        return name && *name && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
               !strchr(name, '/');
}

static int64_t ts_nsec(const struct statx_timestamp *t)
{
        return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static uint64_t sx_dev(const struct statx *sx)
{
        return makedev(sx->stx_dev_major, sx->stx_dev_minor);
}

/* Whether what @sx describes lies on @root's filesystem and mount, and is no mount's root. */
static bool same_mount(const struct fs_root *root, const struct statx *sx)
{
        if (sx_dev(sx) != root->dev)
                return false;
        if ((sx->stx_mask & STATX_MNT_ID) && sx->stx_mnt_id != root->mnt_id)
                return false;
        return !(sx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

void fs_root_close(struct fs_root *root)
{
        if (root->fd >= 0)
                close(root->fd);
        root->fd = -1;
}

bool fs_root_same(const struct fs_root *a, const struct fs_root *b)
{
        return a->dev == b->dev && a->ino == b->ino;
}

int fs_root_open(const char *path, struct fs_root *ret, char *why, size_t why_len)
{
        char component[256];
        struct statx sx;
        const char *p = path;
        unsigned n_components = 0;
        int fd, r;

        if (!path || path[0] != '/') {
                snprintf(why, why_len, "\"%s\" is not an absolute path", path ? path : "");
                return -EINVAL;
        }
        fd = open("/", FS_OPEN_DIR);
        if (fd < 0)
                return -errno;
        for (;;) {
                size_t len;
                int next;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                len = strcspn(p, "/");
                if (len >= sizeof(component)) {
                        snprintf(why, why_len, "a component of %s is longer than %zu bytes", path,
                                 sizeof(component) - 1);
                        r = -ENAMETOOLONG;
                        goto out_close;
                }
                memcpy(component, p, len);
                component[len] = '\0';
                p += len;
                if (!fs_name_ok(component)) {
                        snprintf(why, why_len, "%s: \".\" and \"..\" are not allowed", path);
                        r = -EINVAL;
                        goto out_close;
                }
                next = openat(fd, component, FS_OPEN_DIR);
                if (next < 0) {
                        struct stat st;

                        r = -errno;
                        if (r == -ENOTDIR && fstatat(fd, component, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                            S_ISLNK(st.st_mode)) {
                                snprintf(why, why_len, "%.*s is a symlink: symlinks are never "
                                         "followed, name the directory it points to",
                                         (int)(p - path), path);
                                r = -ELOOP;
                        } else {
                                snprintf(why, why_len, "cannot open %.*s: %s", (int)(p - path),
                                         path, strerror(-r));
                        }
                        goto out_close;
                }
                close(fd);
                fd = next;
                n_components++;
        }
        if (n_components == 0) {
                snprintf(why, why_len, "\"/\" is the whole filesystem, not a cache directory");
                r = -EINVAL;
                goto out_close;
        }
        if (statx(fd, "", AT_EMPTY_PATH, FS_STATX_MASK, &sx) < 0) {
                r = -errno;
                snprintf(why, why_len, "cannot stat %s: %s", path, strerror(-r));
                goto out_close;
        }
        if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) || !(sx.stx_mask & STATX_MNT_ID)) {
                snprintf(why, why_len, "the kernel does not report mount points "
                         "(STATX_ATTR_MOUNT_ROOT, STATX_MNT_ID: Linux 5.8), so bind mounts in %s "
                         "could not be told apart", path);
                r = -EOPNOTSUPP;
                goto out_close;
        }
        *ret = (struct fs_root){
                .fd = fd,
                .dev = sx_dev(&sx),
                .ino = sx.stx_ino,
                .mnt_id = sx.stx_mnt_id,
        };
        return 0;

out_close:
        close(fd);
        return r;
}

int fs_dir_open(const struct fs_root *root, int parent_fd, const char *name, uint64_t expect_ino,
                int *ret_fd, uint64_t *ret_ino)
{
        struct statx sx;
        int fd, r;

        if (!fs_name_ok(name))
                return -EINVAL;
        /* A symlink fails here with ENOTDIR (O_DIRECTORY|O_NOFOLLOW): never followed. */
        fd = openat(parent_fd, name, FS_OPEN_DIR);
        if (fd < 0)
                return -errno;
        /* The handle itself, not the name: what was opened is what is checked. */
        if (statx(fd, "", AT_EMPTY_PATH, FS_STATX_MASK, &sx) < 0) {
                r = -errno;
                goto out_close;
        }
        if (!S_ISDIR(sx.stx_mode)) {
                r = -ENOTDIR;
                goto out_close;
        }
        if (!same_mount(root, &sx)) {
                r = -EXDEV;
                goto out_close;
        }
        if (expect_ino && sx.stx_ino != expect_ino) {
                r = -ESTALE;
                goto out_close;
        }
        *ret_fd = fd;
        *ret_ino = sx.stx_ino;
        return 0;

out_close:
        close(fd);
        return r;
}

int fs_entry_stat(const struct fs_root *root, int dir_fd, const char *name, struct fs_seen *ret)
{
        struct statx sx;

        if (!fs_name_ok(name))
                return -EINVAL;
        if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, FS_STATX_MASK, &sx) < 0)
                return -errno;
        if (S_ISLNK(sx.stx_mode))
                return FS_OTHER;
        /* Before the type: a file bind-mounted onto a name of the tree is a mount too. */
        if (!same_mount(root, &sx))
                return FS_MOUNT;
        if (S_ISDIR(sx.stx_mode))
                return FS_DIR;
        if (!S_ISREG(sx.stx_mode))
                return FS_OTHER;
        *ret = (struct fs_seen){
                .ino = sx.stx_ino,
                .size = sx.stx_size,
                .mtime_nsec = ts_nsec(&sx.stx_mtime),
                .ctime_nsec = ts_nsec(&sx.stx_ctime),
                .atime_nsec = ts_nsec(&sx.stx_atime),
        };
        return FS_FILE;
}

bool fs_seen_same(const struct fs_seen *a, const struct fs_seen *b)
{
        return a->ino == b->ino && a->size == b->size && a->mtime_nsec == b->mtime_nsec &&
               a->ctime_nsec == b->ctime_nsec;
}

int fs_unlink_if_same(const struct fs_root *root, int dir_fd, const char *name,
                      const struct fs_seen *seen, bool dry_run)
{
        struct fs_seen now;
        int r;

        r = fs_entry_stat(root, dir_fd, name, &now);
        if (r < 0)
                return r;
        if (r != FS_FILE || !fs_seen_same(&now, seen))
                return -ESTALE;
        if (now.atime_nsec != seen->atime_nsec)
                return -EBUSY;
        if (dry_run)
                return 0;
        /* flags 0: a file, never a directory; unlinkat() follows no symlink, even in @name. */
        if (unlinkat(dir_fd, name, 0) < 0)
                return -errno;
        return 0;
}

int fs_rmdir_if_same(const struct fs_root *root, int dir_fd, const char *name, uint64_t ino,
                     int64_t mtime_nsec, int64_t ctime_nsec, bool dry_run)
{
        struct statx sx;

        if (!fs_name_ok(name))
                return -EINVAL;
        if (statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, FS_STATX_MASK, &sx) < 0)
                return -errno;
        if (!S_ISDIR(sx.stx_mode) || !same_mount(root, &sx) || sx.stx_ino != ino ||
            ts_nsec(&sx.stx_mtime) != mtime_nsec || ts_nsec(&sx.stx_ctime) != ctime_nsec)
                return -ESTALE;
        if (dry_run)
                return 0;
        /* AT_REMOVEDIR: a directory only, and only an empty one; no symlink is followed. */
        if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0)
                return -errno;
        return 0;
}
