/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dropin.h"

/* mkdir -p, 0755: the configuration is world-readable, as /etc's is. */
static int mkdir_parents(const char *dir)
{
        char buf[4096];
        size_t len = strlen(dir);

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, dir, len + 1);
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;

                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = c;
                if (!c)
                        return 0;
        }
}

/* The whole file, NUL-terminated, or NULL with errno (ENOENT: none; EFBIG: too large). */
static char *read_small_file(const char *path)
{
        struct stat st;
        char *buf;
        ssize_t n;
        int fd, e;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) < 0) {
                e = errno;
                goto out_close;
        }
        if (!S_ISREG(st.st_mode) || st.st_size > DROPIN_SIZE_MAX) {
                e = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
                goto out_close;
        }
        buf = malloc((size_t)st.st_size + 1);
        if (!buf) {
                e = ENOMEM;
                goto out_close;
        }
        n = read(fd, buf, (size_t)st.st_size);
        if (n != st.st_size) {
                e = n < 0 ? errno : EIO;
                free(buf);
                goto out_close;
        }
        buf[n] = '\0';
        close(fd);
        return buf;

out_close:
        close(fd);
        errno = e;
        return NULL;
}

/* Write @text to @path whole: a hidden temporary file beside it (the daemon skips those). */
static int write_replace(const char *path, const char *text)
{
        char *tmp;
        size_t len = strlen(text);
        const char *base = strrchr(path, '/');
        int fd, r = 0;

        base = base ? base + 1 : path;
        if (asprintf(&tmp, "%.*s.%s.XXXXXX", (int)(base - path), path, base) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                goto out_free;
        }
        if (fchmod(fd, 0644) < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
                r = errno ? -errno : -EIO;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
out_free:
        free(tmp);
        return r;
}

/* Whether the line of @len bytes at @line is "@key = ..." (or "@key: ..."). */
static bool line_sets(const char *line, size_t len, const char *key)
{
        size_t k = strlen(key), i = strspn(line, " \t");

        if (i + k > len || strncmp(line + i, key, k) != 0)
                return false;
        i += k;
        i += strspn(line + i, " \t");
        return i < len && (line[i] == '=' || line[i] == ':');
}

int dropin_update(const char *dir, const char *cache, const struct dropin_key *keys, size_t n_keys,
                  char **ret_path, char **ret_old, char *err, size_t err_len)
{
        char *path = NULL, *old = NULL, *text = NULL, *header = NULL;
        size_t text_len = 0;
        FILE *f;
        int r;

        if (asprintf(&path, "%s/" DROPIN_PRIORITY "-%s.conf", dir, cache) < 0 ||
            asprintf(&header, "[cache %s]", cache) < 0) {
                r = -ENOMEM;
                goto out_free;
        }
        r = mkdir_parents(dir);
        if (r < 0) {
                snprintf(err, err_len, "cannot create %s: %s", dir, strerror(-r));
                goto out_free;
        }
        old = read_small_file(path);
        if (!old && errno != ENOENT) {
                r = -errno;
                snprintf(err, err_len, "cannot read %s: %s", path, strerror(-r));
                goto out_free;
        }
        f = open_memstream(&text, &text_len);
        if (!f) {
                r = -ENOMEM;
                goto out_free;
        }
        if (!old)
                fprintf(f, "# Written by \"cacheagectl set --persistent %s\", which rewrites the "
                        "lines it sets.\n%s\n", cache, header);
        for (const char *l = old; l && *l;) {
                size_t len = strcspn(l, "\n");
                const char *t = l + strspn(l, " \t");
                bool drop = false;

                if (*t == '[' && (strncmp(t, header, strlen(header)) != 0 ||
                                  strspn(t + strlen(header), " \t\r") !=
                                          len - (size_t)(t - l) - strlen(header))) {
                        fclose(f);
                        r = -EEXIST;
                        snprintf(err, err_len, "%s has another section than %s: not written by "
                                 "cacheagectl, left as it is", path, header);
                        goto out_free;
                }
                for (size_t i = 0; i < n_keys && !drop; i++)
                        drop = line_sets(l, len, keys[i].key);
                if (!drop)
                        fprintf(f, "%.*s\n", (int)len, l);
                l += len + (l[len] == '\n');
        }
        for (size_t i = 0; i < n_keys; i++)
                fprintf(f, "%s = %s\n", keys[i].key, keys[i].value);
        if (fclose(f) != 0) {
                r = -ENOMEM;
                goto out_free;
        }
        r = write_replace(path, text);
        if (r < 0) {
                snprintf(err, err_len, "cannot write %s: %s", path, strerror(-r));
                goto out_free;
        }
        *ret_path = path;
        *ret_old = old;
        path = old = NULL;

out_free:
        free(text);
        free(header);
        free(old);
        free(path);
        return r;
}

int dropin_restore(const char *path, const char *old)
{
        if (!old)
                return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
        return write_replace(path, old);
}
