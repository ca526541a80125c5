/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trust.h"

static bool uid_trusted(uid_t uid)
{
        return uid == 0 || uid == geteuid();
}

/* Whether someone other than root or the daemon's user may create or rename entries in @st. */
static bool writable_by_others(const struct stat *st)
{
        return (st->st_mode & S_IWOTH) ||
               ((st->st_mode & S_IWGRP) && st->st_gid != 0 && st->st_gid != getegid());
}

int stat_untrusted(const struct stat *st, const char *path, char *reason, size_t reason_len)
{
        if (!uid_trusted(st->st_uid)) {
                snprintf(reason, reason_len, "%s is owned by uid %u, not by root", path,
                         (unsigned)st->st_uid);
                return -EPERM;
        }
        if (writable_by_others(st)) {
                snprintf(reason, reason_len, "%s is writable by %s", path,
                         st->st_mode & S_IWOTH ? "everyone" : "its group");
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

int trust_open(const char *path, int *ret_fd, char *reason, size_t reason_len)
{
        struct walk w = { .depth = 0, .real = "/", .reason = reason, .reason_len = reason_len };
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
                char name[NAME_MAX + 1], child_path[PATH_MAX];
                size_t start = strspn(w.todo, "/"), n = strcspn(w.todo + start, "/");
                bool last = w.todo[start + n + strspn(w.todo + start + n, "/")] == '\0';

                if (n == 0) {
                        /* The path ended on a directory. */
                        r = walk_fail(&w, -EISDIR, w.real);
                        goto out_close;
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
                if (writable_by_others(dir_st) &&
                    !((dir_st->st_mode & S_ISVTX) && uid_trusted(st.st_uid))) {
                        close(fd);
                        r = stat_untrusted(dir_st, w.real, reason, reason_len);
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
                if (!uid_trusted(st.st_uid)) {
                        close(fd);
                        r = stat_untrusted(&st, child_path, reason, reason_len);
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
                close(fd);

                /* The file itself: only a regular file, and the very one that was checked. */
                if (!S_ISREG(st.st_mode)) {
                        snprintf(reason, reason_len, "%s is not a regular file", child_path);
                        r = -EPERM;
                        goto out_close;
                }
                r = stat_untrusted(&st, child_path, reason, reason_len);
                if (r < 0)
                        goto out_close;
                fd = openat(w.fd[w.depth - 1], name,
                            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        r = -errno;
                        walk_fail(&w, r, child_path);
                        goto out_close;
                }
                {
                        struct stat opened;

                        if (fstat(fd, &opened) < 0 || opened.st_dev != st.st_dev ||
                            opened.st_ino != st.st_ino || !S_ISREG(opened.st_mode)) {
                                close(fd);
                                snprintf(reason, reason_len, "%s changed while it was checked",
                                         child_path);
                                r = -EAGAIN;
                                goto out_close;
                        }
                }
                walk_pop_to(&w, 0);
                *ret_fd = fd;
                return 0;
        }

out_close:
        walk_pop_to(&w, 0);
        return r;
}
