/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Accesses to the files adapter's tree, from fanotify or inotify (see files-watch.h). */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files-watch.h"

#define FW_READ_BUF 16384 /* bytes per read() of events */

struct fw {
        enum fw_mode mode;
        int fd;
        int sync_wd;          /* inotify: the last fw_sync()'s watch, -1: none */
        alignas(8) char buf[FW_READ_BUF];
};

enum fw_mode fw_mode(const struct fw *fw)
{
        return fw->mode;
}

int fw_fd(const struct fw *fw)
{
        return fw->fd;
}

struct fw *fw_free(struct fw *fw)
{
        if (!fw)
                return NULL;
        if (fw->fd >= 0)
                close(fw->fd);
        free(fw);
        return NULL;
}

static int fanotify_start(const struct fs_root *root, char *why, size_t why_len)
{
        int fd, r;

        /* Names, not descriptors: no file is opened for us, and events for one name merge. */
        fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME,
                           O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                snprintf(why, why_len, "fanotify_init: %s%s", strerror(-r),
                         r == -EPERM ? " (a filesystem mark needs CAP_SYS_ADMIN)" : "");
                return r;
        }
        if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN | FAN_ACCESS, root->fd,
                          NULL) < 0) {
                r = -errno;
                snprintf(why, why_len, "fanotify_mark on the filesystem: %s%s", strerror(-r),
                         r == -EPERM ? " (needs CAP_SYS_ADMIN)" :
                         r == -EXDEV || r == -EOPNOTSUPP || r == -ENODEV ?
                                 " (the filesystem reports no file handles)" : "");
                close(fd);
                return r;
        }
        return fd;
}

bool fw_whole_filesystem(const struct fs_root *root)
{
        char line[4096];
        struct statx sx;
        bool whole = false;
        FILE *f;

        if (statx(root->fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 ||
            !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return false;
        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return false;
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": ROOT is the mount's root in its filesystem. */
        while (fgets(line, sizeof(line), f)) {
                unsigned long long id;
                char fs_root[8];

                if (sscanf(line, "%llu %*u %*u:%*u %7s", &id, fs_root) == 2 && id == root->mnt_id) {
                        whole = strcmp(fs_root, "/") == 0 && strchr(line, '\n') != NULL;
                        break;
                }
        }
        fclose(f);
        return whole;
}

int fw_open(enum fw_mode mode, const struct fs_root *root, struct fw **ret, char *why,
            size_t why_len)
{
        struct fw *fw;
        int fd, r;

        if (mode == FW_FANOTIFY) {
                fd = fanotify_start(root, why, why_len);
                if (fd < 0)
                        return fd;
        } else {
                fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (fd < 0) {
                        r = -errno;
                        snprintf(why, why_len, "inotify_init1: %s", strerror(-r));
                        return r;
                }
        }
        fw = malloc(sizeof(*fw));
        if (!fw) {
                close(fd);
                return -ENOMEM;
        }
        fw->mode = mode;
        fw->fd = fd;
        fw->sync_wd = -1;
        *ret = fw;
        return 0;
}

int fw_watch_dir(struct fw *fw, int dir_fd, unsigned char *key, size_t *ret_key_len)
{
        if (fw->mode == FW_FANOTIFY) {
                union {
                        struct file_handle fh;
                        unsigned char raw[sizeof(struct file_handle) + MAX_HANDLE_SZ];
                } h;
                int mount_id;

                h.fh.handle_bytes = MAX_HANDLE_SZ;
                if (name_to_handle_at(dir_fd, "", &h.fh, &mount_id, AT_EMPTY_PATH) < 0)
                        return -errno;
                /* As fanotify reports it: the handle's type, then its bytes. */
                memcpy(key, &h.fh.handle_type, sizeof(int));
                memcpy(key + sizeof(int), h.fh.f_handle, h.fh.handle_bytes);
                *ret_key_len = sizeof(int) + h.fh.handle_bytes;
                return 0;
        }

        char path[64];
        int wd;

        /* inotify takes a path: our own handle's, which names exactly the directory opened. */
        snprintf(path, sizeof(path), "/proc/self/fd/%d", dir_fd);
        wd = inotify_add_watch(fw->fd, path, IN_OPEN | IN_ACCESS | IN_ONLYDIR | IN_EXCL_UNLINK);
        if (wd < 0)
                return -errno;
        memcpy(key, &wd, sizeof(wd));
        *ret_key_len = sizeof(wd);
        return 0;
}

void fw_unwatch_dir(struct fw *fw, const unsigned char *key, size_t key_len)
{
        int wd;

        if (fw->mode != FW_INOTIFY || key_len != sizeof(wd))
                return;
        memcpy(&wd, key, sizeof(wd));
        /* EINVAL when the kernel dropped it already (the directory was deleted): nothing to do. */
        (void)inotify_rm_watch(fw->fd, wd);
}

int fw_sync(struct fw *fw)
{
        int wd;

        if (fw->mode != FW_INOTIFY)
                return -EOPNOTSUPP;
        /* A mask of an event "/" never has: the only event of this watch is its IN_IGNORED. */
        wd = inotify_add_watch(fw->fd, "/", IN_DELETE_SELF | IN_ONLYDIR);
        if (wd < 0)
                return -errno;
        if (inotify_rm_watch(fw->fd, wd) < 0)
                return -errno;
        fw->sync_wd = wd;
        return 0;
}

/*
 * One fanotify event's information records (@p..@end): its DFID_NAME record, if it has one.
 * Records with file handles are not padded to any alignment: every field is copied out.
 */
static void fanotify_records(const char *p, const char *end, const struct fw_callbacks *cb,
                             void *userdata)
{
        /* struct fanotify_event_info_fid: the header, the fsid, then a struct file_handle. */
        const size_t handle_at = sizeof(struct fanotify_event_info_fid);

        while (p + sizeof(struct fanotify_event_info_header) <= end) {
                struct fanotify_event_info_header h;
                struct file_handle fh;
                unsigned char key[FW_KEY_MAX];
                const char *name;

                memcpy(&h, p, sizeof(h));
                if (h.len < sizeof(h) || h.len > (size_t)(end - p))
                        return; /* malformed: stop at what can be trusted */
                if (h.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME &&
                    h.len > handle_at + sizeof(fh)) {
                        memcpy(&fh, p + handle_at, sizeof(fh));
                        name = p + handle_at + sizeof(fh) + fh.handle_bytes;
                        if (fh.handle_bytes <= MAX_HANDLE_SZ && name < p + h.len &&
                            memchr(name, '\0', (size_t)(p + h.len - name))) {
                                memcpy(key, &fh.handle_type, sizeof(int));
                                memcpy(key + sizeof(int), p + handle_at + sizeof(fh),
                                       fh.handle_bytes);
                                cb->access(userdata, key, sizeof(int) + fh.handle_bytes, name);
                        }
                }
                p += h.len;
        }
}

/* The fanotify events in @buf (@len bytes): how many, or -EPROTO. */
static int fanotify_parse(const char *buf, size_t len, const struct fw_callbacks *cb,
                          void *userdata)
{
        size_t off = 0;
        int n = 0;

        /* Not FAN_EVENT_NEXT(): with file handles the events are not 8-byte aligned. */
        while (off + sizeof(struct fanotify_event_metadata) <= len) {
                struct fanotify_event_metadata m;

                memcpy(&m, buf + off, sizeof(m));
                if (m.vers != FANOTIFY_METADATA_VERSION || m.metadata_len < sizeof(m) ||
                    m.event_len < m.metadata_len || m.event_len > len - off)
                        return -EPROTO;
                /* Names only (FAN_REPORT_DFID_NAME): no descriptor, but never leak one. */
                if (m.fd >= 0)
                        close(m.fd);
                n++;
                if (m.mask & FAN_Q_OVERFLOW)
                        cb->lost(userdata);
                else
                        fanotify_records(buf + off + m.metadata_len, buf + off + m.event_len, cb,
                                         userdata);
                off += m.event_len;
        }
        return n;
}

/* The inotify events in @buf (@len bytes): how many. */
static int inotify_parse(struct fw *fw, const char *buf, size_t len,
                         const struct fw_callbacks *cb, void *userdata)
{
        int n = 0;

        for (size_t off = 0; off + sizeof(struct inotify_event) <= len;) {
                struct inotify_event e;
                const char *name = buf + off + sizeof(e);

                memcpy(&e, buf + off, sizeof(e));
                off += sizeof(e) + e.len;
                if (off > len)
                        break;
                n++;
                if (e.mask & IN_Q_OVERFLOW) {
                        cb->lost(userdata);
                        continue;
                }
                if ((e.mask & IN_IGNORED) && e.wd == fw->sync_wd) {
                        fw->sync_wd = -1;
                        cb->synced(userdata);
                        continue;
                }
                /* The directory itself, or a subdirectory: not a file of the tree. */
                if (e.len == 0 || (e.mask & IN_ISDIR) || !(e.mask & (IN_OPEN | IN_ACCESS)) ||
                    !memchr(name, '\0', e.len))
                        continue;
                cb->access(userdata, (const unsigned char *)&e.wd, sizeof(e.wd), name);
        }
        return n;
}

int fw_read(struct fw *fw, size_t max_bytes, const struct fw_callbacks *cb, void *userdata)
{
        size_t total = 0;
        int n = 0;

        while (total < max_bytes) {
                ssize_t len = read(fw->fd, fw->buf, sizeof(fw->buf));
                int r;

                if (len < 0) {
                        if (errno == EAGAIN) {
                                cb->drained(userdata);
                                break;
                        }
                        if (errno == EINTR)
                                break;
                        return -errno;
                }
                if (len == 0)
                        break;
                total += (size_t)len;
                r = fw->mode == FW_FANOTIFY ? fanotify_parse(fw->buf, (size_t)len, cb, userdata)
                                            : inotify_parse(fw, fw->buf, (size_t)len, cb,
                                                            userdata);
                if (r < 0)
                        return r;
                n += r;
        }
        return n;
}
