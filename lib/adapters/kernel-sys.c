/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's files, read and written under a root (kernel-sys.h says which). Reads are small
 * and bounded; writes go through one function that opens the file without following a
 * symlink, refuses anything but a regular file (a FIFO in a fake tree would block), truncates
 * it as a shell's "echo N > file" does, and writes the text in one call, so that the kernel's
 * parser sees it whole.
 */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel-sys.h"

#define KS_SMALL_FILE_MAX 8192           /* bytes: memory.stat, dentry-state, pressure */
#define KS_BIG_FILE_MAX (16u << 20)      /* bytes: mountinfo, a shrinker's count */
#define KS_SIZE_MAX (UINT64_C(1) << 40)  /* bytes: the largest size a key takes (1T) */

/* @root + @path ("/proc/..."), the root's trailing slashes dropped. */
static int root_path(const char *root, const char *path, char *buf, size_t len)
{
        size_t n = strlen(root);

        while (n > 0 && root[n - 1] == '/')
                n--;
        if ((size_t)snprintf(buf, len, "%.*s%s", (int)n, root, path) >= len)
                return -ENAMETOOLONG;
        return 0;
}

/* Read @fd whole into a malloc()ed NUL-terminated buffer of at most @max bytes. */
static int read_fd(int fd, size_t max, char **ret)
{
        size_t len = 0, size = 4096;
        char *buf = malloc(size);
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= size) {
                        char *b;

                        if (size >= max) {
                                free(buf);
                                return -EFBIG;
                        }
                        size = size * 2 > max ? max : size * 2;
                        b = realloc(buf, size);
                        if (!b) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                n = read(fd, buf + len, size - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        n = -errno;
                        free(buf);
                        return (int)n;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/* Read @name under @dirfd (AT_FDCWD: a path), not through a symlink. */
static int read_at(int dirfd, const char *name, size_t max, char **ret)
{
        int fd, r;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = read_fd(fd, max, ret);
        close(fd);
        return r;
}

/* The text of @file in the directory @dir below @dirfd, neither through a symlink. */
static int read_at_below(int dirfd, const char *dir, const char *file, char **ret)
{
        int fd, r;

        fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = read_at(fd, file, KS_SMALL_FILE_MAX, ret);
        close(fd);
        return r;
}

/* The text of a file below @root, at most @max bytes. */
static int read_root_text(const char *root, const char *file, size_t max, char **ret)
{
        char path[KS_PATH_MAX];
        int r;

        r = root_path(root, file, path, sizeof(path));
        if (r < 0)
                return r;
        return read_at(AT_FDCWD, path, max, ret);
}

/* Write @text to @name under @dirfd, the way the kernel's files are written (see the top). */
static int write_at(int dirfd, const char *name, const char *text)
{
        size_t len = strlen(text);
        struct stat st;
        ssize_t n;
        int fd, r = 0;

        fd = openat(dirfd, name,
                    O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out_close;
        }
        if (!S_ISREG(st.st_mode)) {
                r = -ENODEV;
                goto out_close;
        }
        /* Not retried on EINTR: the kernel stopped its reclaim for a signal, as asked. */
        n = write(fd, text, len);
        if (n < 0)
                r = -errno;
        else if ((size_t)n != len)
                r = -EIO;
out_close:
        if (close(fd) < 0 && r == 0 && errno != EINTR)
                r = -errno;
        return r;
}

static int parse_u64(const char *s, char **end, uint64_t *ret)
{
        unsigned long long v;

        if (*s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        v = strtoull(s, end, 10);
        if (errno)
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* A file holding one number (memory.current, memory.usage_in_bytes, dentry-negative). */
static int read_u64_at(int dirfd, const char *name, uint64_t *ret)
{
        char *buf, *end;
        uint64_t v;
        int r;

        r = read_at(dirfd, name, KS_SMALL_FILE_MAX, &buf);
        if (r < 0)
                return r;
        r = parse_u64(buf, &end, &v);
        if (r == 0 && *end != '\n' && *end != '\0')
                r = -EBADMSG;
        free(buf);
        if (r == 0)
                *ret = v;
        return r;
}

int ks_read_dentry_state(const char *root, struct ks_dentry_state *ret)
{
        uint64_t v[6];
        char *buf, *p;
        int r;

        r = read_root_text(root, "/proc/sys/fs/dentry-state", KS_SMALL_FILE_MAX, &buf);
        if (r < 0)
                return r;
        p = buf;
        for (size_t i = 0; i < 6 && r == 0; i++) {
                while (*p == ' ' || *p == '\t')
                        p++;
                r = parse_u64(p, &p, &v[i]);
        }
        while (r == 0 && (*p == ' ' || *p == '\t' || *p == '\n'))
                p++;
        if (r == 0 && *p != '\0')
                r = -EBADMSG;
        free(buf);
        if (r < 0)
                return -EBADMSG;
        *ret = (struct ks_dentry_state){ .nr_dentry = v[0], .nr_unused = v[1],
                                         .age_limit = v[2], .want_pages = v[3],
                                         .nr_negative = v[4], .dummy = v[5] };
        return 0;
}

/* One number of a file below @root (a sysctl). */
static int read_root_u64(const char *root, const char *file, uint64_t *ret)
{
        char path[KS_PATH_MAX];
        int r;

        r = root_path(root, file, path, sizeof(path));
        if (r < 0)
                return r;
        return read_u64_at(AT_FDCWD, path, ret);
}

int ks_read_dentry_negative(const char *root, uint64_t *ret)
{
        return read_root_u64(root, "/proc/sys/fs/dentry-negative", ret);
}

/* ---- the memory controller ---- */

/* mountinfo escapes blanks and backslashes as \ooo. */
static void unescape(char *s)
{
        char *w = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else {
                        *w++ = *s;
                }
        }
        *w = '\0';
}

/* Whether the comma- or blank-separated @list holds @word. */
static bool has_word(const char *list, const char *word, const char *seps)
{
        size_t n = strlen(word);

        for (const char *p = list; (p = strstr(p, word)); p += n)
                if ((p == list || strchr(seps, p[-1])) && (p[n] == '\0' || strchr(seps, p[n])))
                        return true;
        return false;
}

static bool v2_has_memory(const char *root, const char *mount)
{
        char path[KS_PATH_MAX], *buf;
        bool yes;

        if (root_path(root, mount, path, sizeof(path)) < 0 ||
            strlen(path) + sizeof("/cgroup.controllers") > sizeof(path))
                return false;
        strcat(path, "/cgroup.controllers");
        if (read_at(AT_FDCWD, path, KS_SMALL_FILE_MAX, &buf) < 0)
                return false;
        yes = has_word(buf, "memory", " \n");
        free(buf);
        return yes;
}

int ks_find_memcg(const char *root, struct ks_memcg *ret)
{
        char *buf, *line, *next;
        struct ks_memcg v1 = { 0 }, v2 = { 0 };
        int r;

        ret->version = KS_MEMCG_NONE;
        r = read_root_text(root, "/proc/self/mountinfo", KS_BIG_FILE_MAX, &buf);
        if (r < 0)
                return r;
        for (line = buf; line && *line; line = next) {
                char *f[5], *dash, *fstype, *source, *opts, *save = NULL;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                dash = strstr(line, " - ");
                if (!dash)
                        continue;
                *dash = '\0';
                fstype = strtok_r(dash + 3, " ", &save);
                source = fstype ? strtok_r(NULL, " ", &save) : NULL;
                opts = source ? strtok_r(NULL, " ", &save) : NULL;
                save = NULL;
                f[0] = strtok_r(line, " ", &save);
                for (size_t i = 1; i < 5 && f[i - 1]; i++)
                        f[i] = strtok_r(NULL, " ", &save);
                if (!fstype || !opts || !f[4])
                        continue;
                unescape(f[4]);
                if (strlen(f[4]) >= sizeof(v1.mount))
                        continue;
                if (strcmp(fstype, "cgroup2") == 0 && v2.version == KS_MEMCG_NONE &&
                    v2_has_memory(root, f[4])) {
                        v2.version = KS_MEMCG_V2;
                        strcpy(v2.mount, f[4]);
                } else if (strcmp(fstype, "cgroup") == 0 && v1.version == KS_MEMCG_NONE &&
                           has_word(opts, "memory", ",")) {
                        v1.version = KS_MEMCG_V1;
                        strcpy(v1.mount, f[4]);
                }
        }
        free(buf);
        if (v2.version != KS_MEMCG_NONE)
                *ret = v2;
        else if (v1.version != KS_MEMCG_NONE)
                *ret = v1;
        else
                return -ENOENT;
        return 0;
}

int ks_cgroup_path_check(const char *path, char *msg, size_t msg_len)
{
        const char *p, *end;

        if (path[0] != '/') {
                snprintf(msg, msg_len, "\"%s\" is not an absolute path (expected e.g. "
                         "/system.slice/foo.service)", path);
                return -EINVAL;
        }
        if (strlen(path) > KS_PATH_MAX / 2) {
                snprintf(msg, msg_len, "the path is longer than %d bytes", KS_PATH_MAX / 2);
                return -EINVAL;
        }
        for (p = path + 1; *p; p = *end ? end + 1 : end) {
                size_t n;

                end = strchrnul(p, '/');
                n = (size_t)(end - p);
                if (n == 0 && *end == '\0' && p > path + 1)
                        break; /* one trailing slash */
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
                        snprintf(msg, msg_len, "\"%s\": empty, \".\" and \"..\" components are "
                                 "refused (a group is named by its plain path under the "
                                 "memory controller)", path);
                        return -EINVAL;
                }
        }
        return 0;
}

int ks_cgroup_open(const char *root, const struct ks_memcg *mc, const char *group, int *ret_fd,
                   char *msg, size_t msg_len)
{
        char path[KS_PATH_MAX], name[256], scratch[256];
        struct stat top, st;
        const char *p, *end;
        int fd, r;

        if (!msg) {
                msg = scratch;
                msg_len = sizeof(scratch);
        }
        r = root_path(root, mc->mount, path, sizeof(path));
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                snprintf(msg, msg_len, "cannot open the memory controller at %s: %s", path,
                         strerror(-r));
                return r;
        }
        if (fstat(fd, &top) < 0) {
                r = -errno;
                goto out_close;
        }
        for (p = group; *p; p = *end ? end + 1 : end) {
                int next;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                end = strchrnul(p, '/');
                if ((size_t)(end - p) >= sizeof(name)) {
                        snprintf(msg, msg_len, "%s: a component is too long", group);
                        r = -ENAMETOOLONG;
                        goto out_close;
                }
                memcpy(name, p, (size_t)(end - p));
                name[end - p] = '\0';
                if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                        snprintf(msg, msg_len, "%s%s: %s", path, group,
                                 r == -ENOENT ? "no such group" : strerror(-r));
                        goto out_close;
                }
                if (S_ISLNK(st.st_mode)) {
                        snprintf(msg, msg_len, "%s%s: \"%s\" is a symlink (refused: a group is "
                                 "only ever reached by its own path)", path, group, name);
                        r = -ELOOP;
                        goto out_close;
                }
                if (!S_ISDIR(st.st_mode)) {
                        snprintf(msg, msg_len, "%s%s: \"%s\" is not a directory", path, group,
                                 name);
                        r = -ENOTDIR;
                        goto out_close;
                }
                if (st.st_dev != top.st_dev) {
                        snprintf(msg, msg_len, "%s%s: \"%s\" is another filesystem mounted "
                                 "there (refused: outside the cgroup tree)", path, group, name);
                        r = -EXDEV;
                        goto out_close;
                }
                next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        r = -errno;
                        snprintf(msg, msg_len, "%s%s: %s", path, group, strerror(-r));
                        goto out_close;
                }
                close(fd);
                fd = next;
                /* Swapped for a mount between the check and the open: still refused. */
                if (fstat(fd, &st) < 0 || st.st_dev != top.st_dev) {
                        snprintf(msg, msg_len, "%s%s: \"%s\" left the cgroup tree", path,
                                 group, name);
                        r = -EXDEV;
                        goto out_close;
                }
        }
        *ret_fd = fd;
        return 0;

out_close:
        close(fd);
        return r;
}

/* "key value" lines (memory.stat): the value of @key, -ENOENT when absent. */
static int stat_value(const char *text, const char *key, uint64_t *ret)
{
        size_t n = strlen(key);
        const char *l = text;
        char *end;

        while (*l) {
                if (strncmp(l, key, n) == 0 && l[n] == ' ')
                        return parse_u64(l + n + 1, &end, ret);
                l = strchrnul(l, '\n');
                if (*l)
                        l++;
        }
        return -ENOENT;
}

/* memory.pressure's "some" line: avg10 and total. */
static int parse_pressure(const char *text, double *ret_avg10, uint64_t *ret_total)
{
        const char *some = strstr(text, "some "), *a, *t;
        char *end;

        if (!some)
                return -EBADMSG;
        a = strstr(some, "avg10=");
        t = strstr(some, "total=");
        if (!a || !t)
                return -EBADMSG;
        errno = 0;
        *ret_avg10 = strtod(a + 6, &end);
        if (errno || end == a + 6 || !(*ret_avg10 >= 0 && *ret_avg10 <= 100))
                return -EBADMSG;
        return parse_u64(t + 6, &end, ret_total);
}

int ks_read_group(int fd, enum ks_memcg_version version, struct ks_group *ret)
{
        struct ks_group g = { 0 };
        struct stat st;
        char *buf;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        g.ino = st.st_ino;
        if (version == KS_MEMCG_V2) {
                r = read_u64_at(fd, "memory.current", &g.memory_bytes);
                if (r < 0)
                        return r;
                r = read_at(fd, "memory.stat", KS_SMALL_FILE_MAX, &buf);
                if (r < 0)
                        return r;
                r = stat_value(buf, "file", &g.file_bytes);
                if (r == 0)
                        r = stat_value(buf, "slab_reclaimable", &g.slab_reclaimable_bytes);
                /* 5.9's names; the figures of what a pass costs, reported where they exist. */
                if (r == 0 && stat_value(buf, "active_file", &g.active_file_bytes) == -EBADMSG)
                        r = -EBADMSG;
                if (r == 0 && stat_value(buf, "workingset_refault_file", &g.refault_file) ==
                                      -EBADMSG)
                        r = -EBADMSG;
                /* tmpfs pages: counted in "file", but swap-backed, not page cache to reclaim */
                if (r == 0 && stat_value(buf, "shmem", &g.shmem_bytes) == -EBADMSG)
                        r = -EBADMSG;
                /* "kernel" is 5.18's; before it slab is the bulk of what we look at. */
                if (r == 0 && stat_value(buf, "kernel", &g.kernel_bytes) == -ENOENT)
                        r = stat_value(buf, "slab", &g.kernel_bytes);
                free(buf);
                if (r < 0)
                        return r == -ENOENT ? -EBADMSG : r;
                g.have_slab = true;
                r = read_at(fd, "memory.pressure", KS_SMALL_FILE_MAX, &buf);
                if (r == 0) {
                        r = parse_pressure(buf, &g.pressure_some_avg10, &g.pressure_some_usec);
                        free(buf);
                        if (r < 0)
                                return r;
                        g.have_pressure = true;
                } else if (r != -ENOENT) { /* no PSI in the kernel: no such file */
                        return r;
                }
        } else {
                r = read_u64_at(fd, "memory.usage_in_bytes", &g.memory_bytes);
                if (r < 0)
                        return r;
                r = read_u64_at(fd, "memory.kmem.usage_in_bytes", &g.kernel_bytes);
                if (r < 0 && r != -ENOENT) /* kernels without kmem accounting */
                        return r;
                r = read_at(fd, "memory.stat", KS_SMALL_FILE_MAX, &buf);
                if (r < 0)
                        return r;
                r = stat_value(buf, "total_cache", &g.file_bytes);
                if (r == 0 && stat_value(buf, "total_active_file", &g.active_file_bytes) ==
                                      -EBADMSG)
                        r = -EBADMSG;
                free(buf);
                if (r < 0)
                        return r == -ENOENT ? -EBADMSG : r;
        }
        *ret = g;
        return 0;
}

/* A child group's name: what ks_cgroup_path_check() takes as one component. */
static bool child_name_ok(const char *name)
{
        return name[0] && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
               strlen(name) < 256 && !strchr(name, '/');
}

char **ks_names_free(char **names, size_t n)
{
        for (size_t i = 0; names && i < n; i++)
                free(names[i]);
        free(names);
        return NULL;
}

int ks_cgroup_children(int fd, size_t max, char ***ret_names, size_t *ret_n, bool *ret_more)
{
        char **names = NULL;
        size_t n = 0, size = 0;
        bool more = false;
        struct dirent *de;
        int dfd, r = 0;
        DIR *d;

        dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        d = fdopendir(dfd);
        if (!d) {
                r = -errno;
                close(dfd);
                return r;
        }
        while ((errno = 0, de = readdir(d))) {
                struct stat st;

                if (!child_name_ok(de->d_name))
                        continue;
                /* d_type where the filesystem gives it (cgroupfs does), else lstat. */
                if (de->d_type == DT_UNKNOWN) {
                        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            !S_ISDIR(st.st_mode))
                                continue;
                } else if (de->d_type != DT_DIR) {
                        continue;
                }
                if (n == max) {
                        more = true;
                        break;
                }
                if (n == size) {
                        size_t nsize = size ? size * 2 : 16;
                        char **b = realloc(names, nsize * sizeof(*names));

                        if (!b) {
                                r = -ENOMEM;
                                break;
                        }
                        names = b;
                        size = nsize;
                }
                names[n] = strdup(de->d_name);
                if (!names[n]) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        /* A group removed while it was read: ENOENT from readdir. */
        if (r == 0 && errno != 0 && !more)
                r = -errno;
        closedir(d);
        if (r < 0) {
                ks_names_free(names, n);
                return r;
        }
        *ret_names = names;
        *ret_n = n;
        *ret_more = more;
        return 0;
}

int ks_read_lru_gen(const char *root, unsigned *ret_flags)
{
        char *buf, *end;
        unsigned long v;
        int r;

        r = read_root_text(root, "/sys/kernel/mm/lru_gen/enabled", KS_SMALL_FILE_MAX, &buf);
        if (r < 0)
                return r;
        errno = 0;
        v = strtoul(buf, &end, 16);
        r = errno || end == buf || (*end != '\n' && *end != '\0') || v > 0xffff ? -EBADMSG : 0;
        free(buf);
        if (r == 0)
                *ret_flags = (unsigned)v;
        return r;
}

int ks_swap_active(const char *root)
{
        char *buf, *nl;
        int r;

        r = read_root_text(root, "/proc/swaps", KS_BIG_FILE_MAX, &buf);
        if (r < 0)
                return r == -ENOENT ? 0 : r; /* no swap support at all */
        /* A header line, then one line per active swap area. */
        nl = strchr(buf, '\n');
        r = nl && nl[1] != '\0';
        free(buf);
        return r;
}

int ks_read_slabs_scanned(const char *root, uint64_t *ret)
{
        char *buf;
        int r;

        r = read_root_text(root, "/proc/vmstat", KS_BIG_FILE_MAX, &buf);
        if (r < 0)
                return r;
        r = stat_value(buf, "slabs_scanned", ret);
        free(buf);
        return r;
}

int ks_read_reclaim_activity(const char *root, const struct ks_memcg *mc, size_t max_groups,
                             uint64_t *ret, uint64_t *ret_others)
{
        /* others: what no memory.reclaim write (cgroup reclaim, the daemon's own) moves. */
        static const struct {
                const char *key;
                bool others;
        } vmstat_keys[] = { { "pgscan_kswapd", true }, { "pgscan_direct", true },
                            { "pgscan_khugepaged", true }, { "slabs_scanned", false } };
        uint64_t sum = 0, others = 0, v;
        char **names = NULL, *buf;
        size_t n = 0, found = 0;
        bool more;
        int fd, r;

        r = read_root_text(root, "/proc/vmstat", KS_BIG_FILE_MAX, &buf);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(vmstat_keys) / sizeof(vmstat_keys[0]); i++)
                if (stat_value(buf, vmstat_keys[i].key, &v) == 0) {
                        sum += v;
                        if (vmstat_keys[i].others)
                                others += v;
                        found++;
                }
        free(buf);
        if (!found)
                return -EBADMSG; /* not the kernel's vmstat: nothing can be said quiet */
        if (mc->version == KS_MEMCG_V2 && ks_cgroup_open(root, mc, "/", &fd, NULL, 0) == 0) {
                if (ks_cgroup_children(fd, max_groups, &names, &n, &more) < 0)
                        n = 0;
                for (size_t i = 0; i < n; i++) {
                        if (ret && read_at_below(fd, names[i], "memory.stat", &buf) == 0) {
                                if (stat_value(buf, "pgscan", &v) == 0)
                                        sum += v;
                                free(buf);
                        }
                        if (read_at_below(fd, names[i], "memory.events", &buf) == 0) {
                                if (stat_value(buf, "high", &v) == 0) {
                                        sum += v;
                                        others += v;
                                }
                                if (stat_value(buf, "max", &v) == 0)
                                        others += v;
                                free(buf);
                        }
                }
                ks_names_free(names, n);
                close(fd);
        }
        if (ret)
                *ret = sum;
        if (ret_others)
                *ret_others = others;
        return 0;
}

int ks_read_vfs_cache_pressure(const char *root, uint64_t *ret)
{
        return read_root_u64(root, "/proc/sys/vm/vfs_cache_pressure", ret);
}

/* One number written to a file below @root (a sysctl). */
static int write_root_u64(const char *root, const char *file, uint64_t value)
{
        char path[KS_PATH_MAX], text[32];
        int r;

        r = root_path(root, file, path, sizeof(path));
        if (r < 0)
                return r;
        snprintf(text, sizeof(text), "%" PRIu64, value);
        return write_at(AT_FDCWD, path, text);
}

int ks_write_vfs_cache_pressure(const char *root, uint64_t value)
{
        return write_root_u64(root, "/proc/sys/vm/vfs_cache_pressure", value);
}

int ks_reclaim_accepts(int fd, const char *key)
{
        char text[128];
        int r;

        if ((size_t)snprintf(text, sizeof(text), "0 %s", key) >= sizeof(text))
                return -EINVAL;
        r = write_at(fd, "memory.reclaim", text);
        if (r == 0)
                return 1;
        return r == -EINVAL ? 0 : r;
}

int ks_reclaim(int fd, uint64_t bytes, const char *key)
{
        char text[128];

        if ((size_t)snprintf(text, sizeof(text), "%" PRIu64 "%s%s", bytes, key ? " " : "",
                             key ? key : "") >= sizeof(text))
                return -EINVAL;
        return write_at(fd, "memory.reclaim", text);
}

int ks_force_empty(int fd)
{
        return write_at(fd, "memory.force_empty", "0");
}

int ks_drop_caches(const char *root, unsigned what)
{
        return write_root_u64(root, "/proc/sys/vm/drop_caches", what);
}

bool ks_shrinker_present(const char *root)
{
        char path[KS_PATH_MAX];
        struct stat st;

        return root_path(root, "/sys/kernel/debug/shrinker", path, sizeof(path)) == 0 &&
               stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* One shrinker's count file: the line of cgroup @ino, its per-node counts scanned. */
static int shrinker_one(int dirfd, uint64_t ino, uint64_t max_objects,
                        struct ks_shrinker_pass *pass)
{
        char *buf, *line, *next, *p, text[96];
        bool found = false;
        int r;

        r = read_at(dirfd, "count", KS_BIG_FILE_MAX, &buf);
        if (r < 0)
                return r;
        for (line = buf; line && *line && !found; line = next) {
                uint64_t id;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (parse_u64(line, &p, &id) < 0 || id != ino)
                        continue;
                found = true;
                pass->shrinkers++;
                for (unsigned node = 0; *p == ' '; node++) {
                        uint64_t n;

                        r = parse_u64(p + 1, &p, &n);
                        if (r < 0)
                                break;
                        if (n == 0)
                                continue;
                        if (max_objects && n > max_objects)
                                n = max_objects;
                        snprintf(text, sizeof(text), "%" PRIu64 " %u %" PRIu64, ino, node, n);
                        if (write_at(dirfd, "scan", text) < 0)
                                pass->failed++;
                        else
                                pass->objects += n;
                }
        }
        free(buf);
        return r < 0 ? -EBADMSG : 0;
}

int ks_shrinker_scan(const char *root, uint64_t ino, uint64_t max_objects,
                     struct ks_shrinker_pass *ret)
{
        struct ks_shrinker_pass pass = { 0 };
        char path[KS_PATH_MAX];
        struct dirent *de;
        DIR *d;
        int r;

        r = root_path(root, "/sys/kernel/debug/shrinker", path, sizeof(path));
        if (r < 0)
                return r;
        d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                int fd;

                /* Superblock shrinkers, "sb-ext4:vda1-14": the ones that hold dentries. */
                if (strncmp(de->d_name, "sb-", 3) != 0)
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        continue; /* unregistered meanwhile */
                if (shrinker_one(fd, ino, max_objects, &pass) < 0)
                        pass.failed++;
                close(fd);
        }
        closedir(d);
        *ret = pass;
        return 0;
}

int ks_parse_size(const char *s, uint64_t *ret)
{
        uint64_t v, mult = 1;
        char *end;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno)
                return -ERANGE;
        switch (*end) {
        case 'k': case 'K': mult = UINT64_C(1) << 10; end++; break;
        case 'm': case 'M': mult = UINT64_C(1) << 20; end++; break;
        case 'g': case 'G': mult = UINT64_C(1) << 30; end++; break;
        case 't': case 'T': mult = UINT64_C(1) << 40; end++; break;
        default: break;
        }
        if (*end != '\0')
                return -EINVAL;
        if (v > KS_SIZE_MAX / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

static const struct {
        const char *suffix, *interface;
} unit_types[] = {
        { ".service", "org.freedesktop.systemd1.Service" },
        { ".scope", "org.freedesktop.systemd1.Scope" },
        { ".slice", "org.freedesktop.systemd1.Slice" },
        { ".socket", "org.freedesktop.systemd1.Socket" },
        { ".mount", "org.freedesktop.systemd1.Mount" },
        { ".swap", "org.freedesktop.systemd1.Swap" },
};

const char *ks_unit_interface(const char *unit)
{
        size_t n = strlen(unit);

        for (size_t i = 0; i < sizeof(unit_types) / sizeof(unit_types[0]); i++) {
                size_t m = strlen(unit_types[i].suffix);

                if (n > m && strcmp(unit + n - m, unit_types[i].suffix) == 0)
                        return unit_types[i].interface;
        }
        return NULL;
}

int ks_unit_name_check(const char *unit, char *msg, size_t msg_len)
{
        size_t n = strlen(unit);

        if (n == 0 || n > 255 ||
            strspn(unit, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:_.\\@-") !=
                    n) {
                snprintf(msg, msg_len, "invalid unit name \"%s\" (expected e.g. foo.service)",
                         unit);
                return -EINVAL;
        }
        if (!ks_unit_interface(unit)) {
                snprintf(msg, msg_len, "\"%s\" is not a unit with a control group (expected "
                         "a .service, .scope, .slice, .socket, .mount or .swap)", unit);
                return -EINVAL;
        }
        return 0;
}
