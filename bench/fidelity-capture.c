/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-fidelity's capture: what the kernel had before the run (the mount table, and every path
 * a process holds: working directories, roots, executables, open files, mapped files, read from
 * /proc right after the caches were dropped), the run itself under strace, and the names the
 * log walked, probed right after it by the reader (CA_TRACE_PROBE). The capture information
 * file next to the log holds all of it, so a later replay needs nothing but the two files.
 */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fidelity.h"

/* ------------------------------------------------------------------------------------------ */
/* what every process holds */

struct strv {
        char **v;
        size_t n, cap;
};

static int strv_add(struct strv *s, const char *p, size_t len)
{
        if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 256;
                char **v = realloc(s->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                s->v = v;
                s->cap = cap;
        }
        s->v[s->n] = strndup(p, len);
        if (!s->v[s->n])
                return -ENOMEM;
        s->n++;
        return 0;
}

static void strv_free(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A path the kernel prints (d_path): absolute, not " (deleted)". */
static int add_held(struct strv *s, const char *p, size_t len)
{
        static const char deleted[] = " (deleted)";

        if (len == 0 || p[0] != '/')
                return 0; /* pipe:[123], socket:[456], anon_inode:... */
        if (len >= sizeof(deleted) - 1 &&
            memcmp(p + len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
                return 0;
        return strv_add(s, p, len);
}

static int add_link(struct strv *s, const char *link)
{
        char buf[PATH_MAX];
        ssize_t n = readlink(link, buf, sizeof(buf));

        if (n <= 0 || (size_t)n >= sizeof(buf))
                return 0; /* gone meanwhile, or a kernel thread */
        return add_held(s, buf, (size_t)n);
}

/* /proc/PID: cwd, root, exe, each fd, and the files in maps. */
static int add_process(struct strv *s, const char *pid)
{
        static const char *const links[] = { "cwd", "root", "exe" };
        char path[PATH_MAX], *line = NULL;
        size_t cap = 0;
        struct dirent *e;
        ssize_t n;
        FILE *f;
        DIR *dir;
        int r = 0;

        for (size_t i = 0; i < sizeof(links) / sizeof(links[0]) && r == 0; i++) {
                snprintf(path, sizeof(path), "/proc/%s/%s", pid, links[i]);
                r = add_link(s, path);
        }
        snprintf(path, sizeof(path), "/proc/%s/fd", pid);
        dir = opendir(path);
        while (dir && r == 0 && (e = readdir(dir))) {
                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, e->d_name);
                r = add_link(s, path);
        }
        if (dir)
                closedir(dir);
        snprintf(path, sizeof(path), "/proc/%s/maps", pid);
        f = fopen(path, "re");
        while (f && r == 0 && (n = getline(&line, &cap, f)) > 0) {
                /* address perms offset dev inode   path */
                char *p = line;

                for (int field = 0; field < 5 && *p; field++) {
                        while (*p && *p != ' ')
                                p++;
                        while (*p == ' ')
                                p++;
                }
                n = (ssize_t)strcspn(p, "\n");
                r = add_held(s, p, (size_t)n);
        }
        if (f)
                fclose(f);
        free(line);
        return r;
}

/* A /proc/self/mounts field: octal escapes (\040 for a space) decoded in place. */
static void unescape_mount(char *s)
{
        char *o = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else {
                        *o++ = *s;
                }
        }
        *o = '\0';
}

int snapshot_take(struct snapshot *ret)
{
        struct strv pins = { 0 }, mounts = { 0 }, fstypes = { 0 };
        char *line = NULL;
        size_t cap = 0, n = 0;
        struct dirent *e;
        FILE *f;
        DIR *dir;
        int r = 0;

        f = fopen("/proc/self/mounts", "re");
        if (!f)
                return -errno;
        while (r == 0 && getline(&line, &cap, f) > 0) {
                char *save = NULL, *dev = strtok_r(line, " ", &save);
                char *mnt = dev ? strtok_r(NULL, " ", &save) : NULL;
                char *fs = mnt ? strtok_r(NULL, " ", &save) : NULL;

                if (!fs || mnt[0] != '/')
                        continue;
                unescape_mount(mnt);
                r = strv_add(&mounts, mnt, strlen(mnt));
                if (r == 0)
                        r = strv_add(&fstypes, fs, strlen(fs));
        }
        fclose(f);
        free(line);

        dir = opendir("/proc");
        if (!dir)
                r = r ? r : -errno;
        while (dir && r == 0 && (e = readdir(dir)))
                if (isdigit((unsigned char)e->d_name[0]))
                        r = add_process(&pins, e->d_name);
        if (dir)
                closedir(dir);
        if (r < 0) {
                strv_free(pins.v, pins.n);
                strv_free(mounts.v, mounts.n);
                strv_free(fstypes.v, fstypes.n);
                return r;
        }
        /* one line per path */
        if (pins.n)
                qsort(pins.v, pins.n, sizeof(*pins.v), cmp_str);
        for (size_t i = 0; i < pins.n; i++) {
                if (n > 0 && strcmp(pins.v[n - 1], pins.v[i]) == 0) {
                        free(pins.v[i]);
                        continue;
                }
                pins.v[n++] = pins.v[i];
        }
        *ret = (struct snapshot){ .mounts = mounts.v, .fstypes = fstypes.v,
                                  .nmounts = mounts.n, .pins = pins.v, .npins = n };
        return 0;
}

void snapshot_done(struct snapshot *s)
{
        strv_free(s->mounts, s->nmounts);
        strv_free(s->fstypes, s->nmounts);
        strv_free(s->pins, s->npins);
        *s = (struct snapshot){ 0 };
}

/* ------------------------------------------------------------------------------------------ */
/* the run */

int run_quiet(const struct command *c, char *const *argv)
{
        pid_t pid;
        int status;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
                    dup2(null, STDERR_FILENO) < 0 || chdir(c->cwd) < 0)
                        _exit(126);
                execve(argv[0], argv, c->envp);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                return -ENOENT;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

static const char *find_strace(void)
{
        static const char *const paths[] = { "/usr/bin/strace", "/bin/strace",
                                             "/usr/local/bin/strace" };

        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
                if (access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

/* The reader over @log with CA_TRACE_PROBE: every name it walks looked up now, saved. */
static int probe(const struct command *c, const struct snapshot *snap, const char *log,
                 const char *info)
{
        struct ca_trace *t = NULL;
        struct ca_trace_event e;
        FILE *out = NULL;
        int r;

        r = ca_trace_open_path(log, c->cwd, &t);
        if (r < 0)
                return r;
        r = ca_trace_set_options(t, CA_TRACE_PROBE);
        for (size_t i = 0; r == 0 && i < snap->nmounts; i++)
                r = ca_trace_add_mount(t, snap->mounts[i], snap->fstypes[i]);
        for (size_t i = 0; r == 0 && i < snap->npins; i++)
                r = ca_trace_add_pin(t, snap->pins[i]);
        while (r >= 0 && (r = ca_trace_next(t, &e)) == 1)
                ;
        if (r == 0) {
                out = fopen(info, "we");
                r = out ? ca_trace_write_info(t, out) : -errno;
        }
        if (out && fclose(out) != 0 && r == 0)
                r = -EIO;
        ca_trace_free(t);
        return r;
}

int capture(const struct command *c, const struct snapshot *snap, const char *log)
{
        const char *strace = find_strace();
        char info[PATH_MAX];
        char *argv[64];
        size_t n = 0;
        int r;

        if (!strace)
                return -ENOENT;
        if ((size_t)snprintf(info, sizeof(info), "%s.info", log) >= sizeof(info))
                return -ENAMETOOLONG;
        argv[n++] = (char *)strace;
        argv[n++] = "-f";
        argv[n++] = "-ttt";
        argv[n++] = "-s";
        argv[n++] = "4096";
        argv[n++] = "-e";
        argv[n++] = "trace=" FID_TRACE_SET;
        argv[n++] = "-o";
        argv[n++] = (char *)log;
        argv[n++] = "--";
        for (size_t i = 0; c->argv[i]; i++) {
                if (n + 2 > sizeof(argv) / sizeof(argv[0]))
                        return -E2BIG;
                argv[n++] = c->argv[i];
        }
        argv[n] = NULL;
        r = run_quiet(c, argv);
        if (r < 0)
                return r;
        return probe(c, snap, log, info);
}

/* ------------------------------------------------------------------------------------------ */
/* the replay */

int replay_capture(const char *log, const char *cwd, struct model *ret)
{
        struct ca_trace *t = NULL;
        struct ca_replay *rp = NULL;
        struct ca_dcache *d = NULL;
        struct ca_trace_event e;
        char info[PATH_MAX];
        size_t line = 0;
        FILE *f;
        int r;

        snprintf(info, sizeof(info), "%s.info", log);
        r = ca_trace_open_path(log, cwd, &t);
        if (r < 0)
                return r;
        r = ca_trace_set_options(t, CA_TRACE_REFS);
        f = r == 0 ? fopen(info, "re") : NULL;
        if (f) {
                r = ca_trace_load_info(t, f, &line);
                fclose(f);
                if (r == -EINVAL)
                        fprintf(stderr, "bench-fidelity: %s:%zu: not capture information\n",
                                info, line);
        }
        if (r == 0)
                r = ca_dcache_new(NULL, &d);
        if (r == 0)
                r = ca_replay_new(d, &rp);
        while (r >= 0 && (r = ca_trace_next(t, &e)) == 1) {
                r = ca_replay_event(rp, &e);
                if (r == -ENAMETOOLONG)
                        r = 0; /* the model refuses names over NAME_MAX, as the kernel */
        }
        if (r == 0) {
                *ret = (struct model){ 0 };
                ca_replay_get_stats(rp, &ret->rs);
                ca_trace_get_stats(t, &ret->ts);
                ca_dcache_stats(d, &ret->ds);
                ret->delta.v[NR_DENTRY] =
                        (int64_t)ret->ds.nr_dentry - 1 - (int64_t)ret->rs.warm;
                ret->delta.v[NR_UNUSED] = (int64_t)ret->ds.nr_unused;
                ret->delta.v[NR_NEGATIVE] = (int64_t)ret->ds.nr_negative;
        }
        ca_replay_free(rp);
        ca_dcache_free(d);
        ca_trace_free(t);
        return r;
}

int replay_plain(const char *log, const char *cwd, struct counts *ret)
{
        struct ca_trace *t = NULL;
        struct ca_dcache *d = NULL;
        struct ca_dcache_stats ds;
        struct ca_trace_event e;
        int r = ca_trace_open_path(log, cwd, &t);

        if (r == 0)
                r = ca_dcache_new(NULL, &d);
        while (r >= 0 && (r = ca_trace_next(t, &e)) == 1) {
                r = ca_dcache_replay(d, &e);
                if (r == -ENAMETOOLONG)
                        r = 0;
        }
        if (r == 0) {
                ca_dcache_stats(d, &ds);
                ret->v[NR_DENTRY] = (int64_t)ds.nr_dentry - 1;
                ret->v[NR_UNUSED] = (int64_t)ds.nr_unused;
                ret->v[NR_NEGATIVE] = (int64_t)ds.nr_negative;
        }
        ca_dcache_free(d);
        ca_trace_free(t);
        return r;
}
