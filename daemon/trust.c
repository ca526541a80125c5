/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "trust.h"

static bool uid_trusted(uid_t uid)
{
        return uid == 0 || uid == geteuid();
}

/*
 * Owners that a user namespace hides.
 *
 * Under PrivateUsers=yes a user's instance (systemd/user/cacheaged.service) runs in a user
 * namespace that maps its own uid and nothing else: the user's service manager, unprivileged,
 * can map no other. Every other owner then reads as the overflow uid
 * (/proc/sys/kernel/overflowuid, 65534): root's /home, /usr and plugins as much as another
 * user's directory or the real nobody's. Refused as any owner but root and the daemon's user
 * is, such an instance could open neither its configuration (below /home) nor a plugin (below
 * /usr): it exited 6 at every start (issue 33, seen in the system lab).
 *
 * What can the overflow uid hide there? Root, and every user but the daemon's own. So it
 * cannot be taken for root's in general: a directory of another user's on the way would let
 * that user swap what the daemon reads, loads and (with the files adapter) deletes for theirs.
 * It is taken for root's only where trusting whoever owns it gives nobody anything they do not
 * have already:
 *  - the directories on the way to the daemon's user's home directory: whoever owns them can
 *    replace the home itself, and with it every file the user has;
 *  - the directories on the way to the daemon's own executable: whoever owns them can replace
 *    the daemon;
 *  - the installation's directories (trust_add_installed(): the daemon's compiled-in plugin
 *    directory, which the package manager made with the executable) and the regular files
 *    directly in them, and the directories on the way to them.
 * Anywhere else (another user's home, a directory of /srv or /tmp) an overflow owner is refused
 * as before. The write bits, of the mode and of the ACL, count for these as for any other
 * owner; and an entry of a sticky directory is never taken for root's on this ground (anyone
 * may have made it). And all this only in a namespace that leaves root unmapped, where root's
 * files must read as the overflow uid: where root is mapped (the system instance under
 * PrivateUsers=yes, or no user namespace at all) the overflow uid is nobody's or an unmapped
 * user's, never root's, and refused.
 * What stays unprovable from inside: that root did not give one of those directories, or a
 * module in the plugin directory, to another user. The system instance, which sees the real
 * owners, refuses such a module; the user instance would load it.
 */
#define TRUST_INSTALLED_MAX 4 /* directories trust_add_installed() takes */

struct trust_anchor {
        char path[PATH_MAX]; /* real path */
        bool entries;        /* the regular files directly in it too */
};

static struct {
        pthread_once_t once;
        bool root_unmapped;  /* this user namespace leaves root unmapped */
        uid_t overflow_uid;
        struct trust_anchor anchor[TRUST_INSTALLED_MAX + 2];
        size_t n_anchors;
} hidden = { .once = PTHREAD_ONCE_INIT };
static pthread_mutex_t installed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct trust_anchor installed[TRUST_INSTALLED_MAX];
static size_t n_installed;

/* Whether /proc/self/uid_map maps uid 0 of the initial namespace (no file: no namespace). */
static bool root_mapped(void)
{
        unsigned long inside, outside, count;
        bool mapped = false;
        FILE *f;

        f = fopen("/proc/self/uid_map", "re");
        if (!f)
                return true;
        while (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3)
                if (outside == 0 && count > 0)
                        mapped = true;
        fclose(f);
        return mapped;
}

static void anchor_add(const char *path, bool entries)
{
        struct trust_anchor *a = &hidden.anchor[hidden.n_anchors];

        if (!path || path[0] != '/' || hidden.n_anchors >= sizeof(hidden.anchor) / sizeof(*a) ||
            !realpath(path, a->path))
                return;
        a->entries = entries;
        hidden.n_anchors++;
}

static void hidden_init(void)
{
        char exe[PATH_MAX], *slash, buf[4096];
        struct passwd pw, *found = NULL;
        unsigned long v = 65534;
        ssize_t n;
        FILE *f;

        hidden.root_unmapped = !root_mapped();
        f = fopen("/proc/sys/kernel/overflowuid", "re");
        if (f) {
                if (fscanf(f, "%lu", &v) != 1)
                        v = 65534;
                fclose(f);
        }
        hidden.overflow_uid = (uid_t)v;
        if (!hidden.root_unmapped)
                return;
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0) {
                exe[n] = '\0';
                slash = strrchr(exe, '/');
                if (slash && slash != exe) {
                        *slash = '\0';
                        anchor_add(exe, false);
                }
        }
        if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &found) == 0 && found)
                anchor_add(found->pw_dir, false);
        pthread_mutex_lock(&installed_lock);
        for (size_t i = 0; i < n_installed; i++)
                anchor_add(installed[i].path, true);
        pthread_mutex_unlock(&installed_lock);
}

int trust_add_installed(const char *dir)
{
        int r = 0;

        if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX)
                return -EINVAL;
        pthread_mutex_lock(&installed_lock);
        if (n_installed >= TRUST_INSTALLED_MAX)
                r = -E2BIG;
        else
                snprintf(installed[n_installed++].path, PATH_MAX, "%s", dir);
        pthread_mutex_unlock(&installed_lock);
        return r;
}

/* Whether @path is @dir or a directory on the way to it. */
static bool path_leads_to(const char *path, const char *dir)
{
        size_t n = strlen(path);

        if (strcmp(path, "/") == 0)
                return true;
        return strncmp(dir, path, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
}

/*
 * Whether the owner @uid of @path (its real path; @file: a regular file) may be trusted: root
 * or the daemon's user, or the overflow uid where it hides root and stands on the way to what
 * the daemon trusts already (above).
 */
static bool owner_trusted(uid_t uid, const char *path, bool file)
{
        if (uid_trusted(uid))
                return true;
        pthread_once(&hidden.once, hidden_init);
        if (!hidden.root_unmapped || uid != hidden.overflow_uid || !path)
                return false;
        for (size_t i = 0; i < hidden.n_anchors; i++) {
                const struct trust_anchor *a = &hidden.anchor[i];
                const char *slash = strrchr(path, '/');

                if (!file && path_leads_to(path, a->path))
                        return true;
                if (file && a->entries && slash && (size_t)(slash - path) == strlen(a->path) &&
                    strncmp(path, a->path, (size_t)(slash - path)) == 0)
                        return true;
        }
        return false;
}

static bool gid_trusted(gid_t gid)
{
        return gid == 0 || gid == getegid();
}

/*
 * A POSIX access ACL, as the kernel hands it out in the system.posix_acl_access attribute
 * (include/uapi/linux/posix_acl_xattr.h): a little-endian header of version 2, then entries
 * of tag, permissions and id. Read here rather than through libacl: only named users and
 * groups matter, and their write bit counts only as far as the mask lets it.
 */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_XATTR_VERSION 0x0002
#define ACL_XATTR_BYTES_MAX (4 + 8 * 4096) /* 4096 entries, far over any file system's limit */
enum {
        ACL_TAG_USER = 0x02,
        ACL_TAG_GROUP = 0x08,
        ACL_TAG_MASK = 0x10,
};
#define ACL_PERM_READ 0x04
#define ACL_PERM_WRITE 0x02

static uint32_t le_get(const uint8_t *p, size_t bytes)
{
        uint32_t v = 0;

        for (size_t i = bytes; i > 0; i--)
                v = v << 8 | p[i - 1];
        return v;
}

/*
 * Whether the access ACL of @fd (any descriptor, O_PATH too) gives @perm (ACL_PERM_READ or
 * ACL_PERM_WRITE), as far as its mask lets it through, to a named user or group other than
 * root's and the daemon's (and @also_gid, when not -1). Returns 0 (none, or no ACL), 1 with whom
 * in @who, or a negative errno (the ACL cannot be read, or makes no sense).
 */
static int acl_granted_to_others(int fd, uint32_t perm, gid_t also_gid, char *who,
                                 size_t who_len)
{
        char proc[64];
        uint8_t *buf;
        bool mask_grants = true;
        ssize_t n;
        int r = 0;

        /* getxattr() follows the magic link: fgetxattr() refuses an O_PATH descriptor. */
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        n = getxattr(proc, ACL_XATTR, NULL, 0);
        if (n < 0)
                return errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
        if (n < 4 || n > ACL_XATTR_BYTES_MAX || (n - 4) % 8 != 0)
                return -EBADMSG;
        buf = malloc((size_t)n);
        if (!buf)
                return -ENOMEM;
        n = getxattr(proc, ACL_XATTR, buf, (size_t)n);
        if (n < 0) {
                /* Changed since: whatever it is now, it cannot be vouched for. */
                r = errno == ENODATA ? 0 : errno == ERANGE ? -EAGAIN : -errno;
                goto out_free;
        }
        if (n < 4 || (n - 4) % 8 != 0 || le_get(buf, 4) != ACL_XATTR_VERSION) {
                r = -EBADMSG;
                goto out_free;
        }
        for (ssize_t i = 4; i < n; i += 8)
                if (le_get(buf + i, 2) == ACL_TAG_MASK)
                        mask_grants = le_get(buf + i + 2, 2) & perm;
        for (ssize_t i = 4; mask_grants && i < n && r == 0; i += 8) {
                uint32_t tag = le_get(buf + i, 2), granted = le_get(buf + i + 2, 2);
                uint32_t id = le_get(buf + i + 4, 4);

                if (!(granted & perm))
                        continue;
                if (tag == ACL_TAG_USER && !uid_trusted((uid_t)id)) {
                        snprintf(who, who_len, "uid %u (its ACL)", (unsigned)id);
                        r = 1;
                } else if (tag == ACL_TAG_GROUP && !gid_trusted((gid_t)id) &&
                           (gid_t)id != also_gid) {
                        snprintf(who, who_len, "gid %u (its ACL)", (unsigned)id);
                        r = 1;
                }
        }
out_free:
        free(buf);
        return r;
}

/*
 * Whether someone other than root or the daemon's user may create or rename entries in @st
 * (of @fd), or write it: by its mode, or by a named user or group of its ACL. Returns 0, 1
 * with whom in @who, or a negative errno when the ACL cannot be read.
 */
static int writable_by_others(int fd, const struct stat *st, char *who, size_t who_len)
{
        if (st->st_mode & S_IWOTH) {
                snprintf(who, who_len, "everyone");
                return 1;
        }
        /* With an ACL these bits are its mask: conservative, never too lenient. */
        if ((st->st_mode & S_IWGRP) && !gid_trusted(st->st_gid)) {
                snprintf(who, who_len, "its group");
                return 1;
        }
        if (S_ISLNK(st->st_mode))
                return 0;
        return acl_granted_to_others(fd, ACL_PERM_WRITE, (gid_t)-1, who, who_len);
}

int fd_untrusted(int fd, const struct stat *st, const char *path, char *reason,
                 size_t reason_len)
{
        char who[64];
        int r;

        if (!owner_trusted(st->st_uid, path, S_ISREG(st->st_mode))) {
                if (geteuid() == 0)
                        snprintf(reason, reason_len, "%s is owned by uid %u, not by root", path,
                                 (unsigned)st->st_uid);
                else
                        snprintf(reason, reason_len, "%s is owned by uid %u, not by root or "
                                 "uid %u", path, (unsigned)st->st_uid, (unsigned)geteuid());
                return -EPERM;
        }
        r = writable_by_others(fd, st, who, sizeof(who));
        if (r > 0) {
                snprintf(reason, reason_len, "%s is writable by %s", path, who);
                return -EPERM;
        }
        if (r < 0) {
                snprintf(reason, reason_len, "%s: cannot read its ACL: %s", path, strerror(-r));
                return -EPERM;
        }
        return 0;
}

int fd_readable_by_others(int fd, const struct stat *st, const char *path, char *reason,
                          size_t reason_len)
{
        char who[64];
        int r;

        if (st->st_mode & S_IROTH) {
                snprintf(reason, reason_len, "%s is readable by everyone (chmod o-r)", path);
                return -EPERM;
        }
        /* Its group may read it (0640); with an ACL, the group bits are the mask, read below. */
        r = acl_granted_to_others(fd, ACL_PERM_READ, st->st_gid, who, sizeof(who));
        if (r > 0) {
                snprintf(reason, reason_len, "%s is readable by %s: remove the entry (setfacl "
                         "-x) or cut it with the mask (setfacl -m m::---)", path, who);
                return -EPERM;
        }
        if (r < 0) {
                snprintf(reason, reason_len, "%s: cannot read its ACL: %s", path, strerror(-r));
                return -EPERM;
        }
        return 0;
}

/*
 * The walk's state: the directories opened from "/" down to the current one (so that ".."
 * needs no lookup), with their real names, and what is left of the path to walk.
 */
struct walk {
        int fd[TRUST_DEPTH_MAX];
        struct stat st[TRUST_DEPTH_MAX];
        size_t depth;                /* fd[depth - 1] is the current directory */
        size_t theirs;               /* TRUST_DIRECTORY: fd[theirs - 1] is the first directory
                                        of another owner's on the way (0: none) */
        char real[PATH_MAX];         /* its real path */
        char todo[2 * PATH_MAX];     /* components still to walk */
        char *reason;
        size_t reason_len;
};

static int walk_fail(struct walk *w, int r, const char *what)
{
        snprintf(w->reason, w->reason_len, "%s: %s", what, strerror(-r));
        return r;
}

static void walk_pop_to(struct walk *w, size_t depth)
{
        while (w->depth > depth) {
                char *slash;

                close(w->fd[--w->depth]);
                slash = strrchr(w->real, '/');
                if (slash)
                        slash[slash == w->real ? 1 : 0] = '\0';
        }
        if (w->theirs > w->depth)
                w->theirs = 0;
}

static int walk_push(struct walk *w, int fd, const struct stat *st, const char *name)
{
        size_t len = strlen(w->real);

        if (w->depth >= TRUST_DEPTH_MAX) {
                close(fd);
                return walk_fail(w, -ELOOP, w->real);
        }
        if (w->depth > 0 && snprintf(w->real + len, sizeof(w->real) - len, "%s%s",
                                     len > 1 ? "/" : "", name) >= (int)(sizeof(w->real) - len)) {
                close(fd);
                return walk_fail(w, -ENAMETOOLONG, w->real);
        }
        w->fd[w->depth] = fd;
        w->st[w->depth] = *st;
        w->depth++;
        return 0;
}

/* Replace the first @consumed bytes of todo by @prefix (a symlink's target) + "/". */
static int walk_splice(struct walk *w, size_t consumed, const char *prefix)
{
        char rest[sizeof(w->todo)];

        snprintf(rest, sizeof(rest), "%s", w->todo + consumed);
        if (snprintf(w->todo, sizeof(w->todo), "%s/%s", prefix, rest) >= (int)sizeof(w->todo))
                return walk_fail(w, -ENAMETOOLONG, prefix);
        return 0;
}

static void walk_real_child(const struct walk *w, const char *name, char *buf, size_t len)
{
        snprintf(buf, len, "%s%s%s", w->real, strcmp(w->real, "/") == 0 ? "" : "/", name);
}

/* /dev/null: what a masked drop-in links to. */
static bool is_dev_null(const struct stat *st)
{
        return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* Open @name in @dir_fd with @flags and make sure it is still the entry @st that was checked. */
static int reopen_checked(int dir_fd, const char *name, int flags, const struct stat *st,
                          const char *path, char *reason, size_t reason_len)
{
        struct stat opened;
        int fd;

        fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                snprintf(reason, reason_len, "%s: %s", path, strerror(errno));
                return -errno;
        }
        if (fstat(fd, &opened) < 0 || opened.st_dev != st->st_dev ||
            opened.st_ino != st->st_ino || (opened.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
                close(fd);
                snprintf(reason, reason_len, "%s changed while it was checked", path);
                return -EAGAIN;
        }
        return fd;
}

int trust_open_full(const char *path, unsigned flags, int *ret_fd, char *reason,
                    size_t reason_len)
{
        struct walk w = { .depth = 0, .real = "/", .reason = reason, .reason_len = reason_len };
        bool want_dir = flags & TRUST_DIRECTORY;
        unsigned symlinks = 0;
        struct stat st;
        int fd, r;

        if (path[0] == '/') {
                snprintf(w.todo, sizeof(w.todo), "%s", path);
        } else {
                char cwd[PATH_MAX];

                if (!getcwd(cwd, sizeof(cwd)))
                        return walk_fail(&w, -errno, "working directory");
                if (snprintf(w.todo, sizeof(w.todo), "%s/%s", cwd, path) >= (int)sizeof(w.todo))
                        return walk_fail(&w, -ENAMETOOLONG, path);
        }

        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = -errno;
                if (fd >= 0)
                        close(fd);
                return walk_fail(&w, r, "/");
        }
        r = walk_push(&w, fd, &st, "/");
        if (r < 0)
                return r;

        for (;;) {
                const struct stat *dir_st = &w.st[w.depth - 1];
                char name[NAME_MAX + 1], child_path[PATH_MAX], who[64];
                size_t start = strspn(w.todo, "/"), n = strcspn(w.todo + start, "/");
                /* A directory is walked to its end: every component is one to go through. */
                bool last = !want_dir &&
                            w.todo[start + n + strspn(w.todo + start + n, "/")] == '\0';

                if (n == 0) {
                        if (!want_dir) {
                                /* The path ended on a directory. */
                                r = walk_fail(&w, -EISDIR, w.real);
                                goto out_close;
                        }
                        /*
                         * The directory itself: entries will be made in it, so nobody else
                         * may write it, sticky or not.
                         */
                        r = fd_untrusted(w.fd[w.depth - 1], dir_st, w.real, reason,
                                         reason_len);
                        if (r < 0)
                                goto out_close;
                        r = reopen_checked(w.fd[w.depth - 1], ".", O_RDONLY | O_DIRECTORY,
                                           dir_st, w.real, reason, reason_len);
                        if (r < 0)
                                goto out_close;
                        walk_pop_to(&w, 0);
                        *ret_fd = r;
                        return 0;
                }
                if (n > NAME_MAX) {
                        r = walk_fail(&w, -ENAMETOOLONG, w.real);
                        goto out_close;
                }
                memcpy(name, w.todo + start, n);
                name[n] = '\0';
                memmove(w.todo, w.todo + start + n, strlen(w.todo + start + n) + 1);

                if (strcmp(name, ".") == 0 && !last)
                        continue;
                if (strcmp(name, "..") == 0 && !last) {
                        walk_pop_to(&w, w.depth > 1 ? w.depth - 1 : 1);
                        continue;
                }

                walk_real_child(&w, name, child_path, sizeof(child_path));
                fd = openat(w.fd[w.depth - 1], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        r = -errno;
                        if (fd >= 0)
                                close(fd);
                        walk_fail(&w, r, child_path);
                        goto out_close;
                }
                /*
                 * Whoever may write the directory may replace the entry after any check: only
                 * a sticky directory keeps others from replacing an entry they do not own.
                 */
                r = writable_by_others(w.fd[w.depth - 1], dir_st, who, sizeof(who));
                if (r < 0) {
                        close(fd);
                        snprintf(reason, reason_len, "%s: cannot read its ACL: %s", w.real,
                                 strerror(-r));
                        r = -EPERM;
                        goto out_close;
                }
                if (r > 0 && !((dir_st->st_mode & S_ISVTX) && uid_trusted(st.st_uid))) {
                        close(fd);
                        if (dir_st->st_mode & S_ISVTX)
                                snprintf(reason, reason_len, "%s is owned by uid %u in %s, which "
                                         "%s may write", child_path, (unsigned)st.st_uid,
                                         w.real, who);
                        else
                                snprintf(reason, reason_len, "%s is writable by %s", w.real, who);
                        r = -EPERM;
                        goto out_close;
                }
                if (S_ISLNK(st.st_mode) && w.theirs) {
                        /* Its owner may point it anywhere, at any time. */
                        close(fd);
                        snprintf(reason, reason_len, "%s is a symlink below a directory "
                                 "that uid %u may change", child_path,
                                 (unsigned)w.st[w.theirs - 1].st_uid);
                        r = -EPERM;
                        goto out_close;
                }
                if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t len;

                        len = readlinkat(fd, "", target, sizeof(target) - 1);
                        r = len < 0 ? -errno : 0;
                        close(fd);
                        if (r < 0 || ++symlinks > TRUST_SYMLINKS_MAX) {
                                r = walk_fail(&w, r < 0 ? r : -ELOOP, child_path);
                                goto out_close;
                        }
                        target[len] = '\0';
                        r = walk_splice(&w, 0, target);
                        if (r < 0)
                                goto out_close;
                        if (target[0] == '/')
                                walk_pop_to(&w, 1);
                        continue;
                }
                if (last && (flags & TRUST_DEV_NULL) && is_dev_null(&st)) {
                        /* Read as empty: nothing in it to trust, whoever may write it. */
                        close(fd);
                        r = reopen_checked(w.fd[w.depth - 1], name, O_RDONLY, &st, child_path,
                                           reason, reason_len);
                        if (r < 0)
                                goto out_close;
                        walk_pop_to(&w, 0);
                        *ret_fd = r;
                        return 0;
                }
                if (want_dir && S_ISDIR(st.st_mode) && !owner_trusted(st.st_uid, child_path, false)) {
                        /*
                         * A directory to write in (metrics_file's) may lie below another
                         * owner's directory, as Debian's node_exporter textfile directory lies
                         * in the prometheus user's /var/lib/prometheus: that owner may rename
                         * what is below it, but cannot make a directory of root's (what the
                         * walk must end in, writable by nobody else), nor move one in from
                         * outside its own tree; so the daemon still writes only into a
                         * directory of root's. What it could do is point a symlink elsewhere:
                         * none is followed below such a directory. Its write bits count as
                         * ever: one anybody else may write is refused.
                         */
                        r = writable_by_others(fd, &st, who, sizeof(who));
                        if (r != 0) {
                                close(fd);
                                if (r > 0)
                                        snprintf(reason, reason_len, "%s is writable by %s",
                                                 child_path, who);
                                else
                                        snprintf(reason, reason_len, "%s: cannot read its ACL: "
                                                 "%s", child_path, strerror(-r));
                                r = -EPERM;
                                goto out_close;
                        }
                        r = walk_push(&w, fd, &st, name);
                        if (r < 0)
                                goto out_close;
                        if (!w.theirs)
                                w.theirs = w.depth;
                        continue;
                }
                if (!owner_trusted(st.st_uid, child_path, last && S_ISREG(st.st_mode))) {
                        r = fd_untrusted(fd, &st, child_path, reason, reason_len);
                        close(fd);
                        goto out_close;
                }
                if (!last) {
                        if (!S_ISDIR(st.st_mode)) {
                                close(fd);
                                walk_fail(&w, -ENOTDIR, child_path);
                                r = -ENOTDIR;
                                goto out_close;
                        }
                        r = walk_push(&w, fd, &st, name);
                        if (r < 0)
                                goto out_close;
                        continue;
                }

                /* The file itself: only a regular file, and the very one that was checked. */
                if (!S_ISREG(st.st_mode)) {
                        close(fd);
                        snprintf(reason, reason_len, "%s is not a regular file", child_path);
                        r = -ENODEV;
                        goto out_close;
                }
                r = fd_untrusted(fd, &st, child_path, reason, reason_len);
                close(fd);
                if (r < 0)
                        goto out_close;
                r = reopen_checked(w.fd[w.depth - 1], name, O_RDONLY | O_NONBLOCK, &st,
                                   child_path, reason, reason_len);
                if (r < 0)
                        goto out_close;
                walk_pop_to(&w, 0);
                *ret_fd = r;
                return 0;
        }

out_close:
        walk_pop_to(&w, 0);
        return r;
}

int trust_open(const char *path, int *ret_fd, char *reason, size_t reason_len)
{
        return trust_open_full(path, 0, ret_fd, reason, reason_len);
}
