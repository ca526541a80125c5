/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The replay lab's --capture: a real workload recorded under strace now (see capture_script()
 * for what it does), its log kept in --out, never in the source tree.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay.h"

/* ------------------------------------------------------------------------------------------ */
/* --capture: a real workload under strace, now */

static int mkdir_p(const char *path)
{
        char buf[PATH_MAX];
        size_t len = strlen(path);

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, path, len + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path) < 0 ? -1 : 0;
}

static int touch_file(const char *dir, const char *name)
{
        char path[PATH_MAX];
        int fd;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

/*
 * The captured workload, for sh in the work directory @work (mkdtemp's: no character the shell
 * would interpret). Paths are absolute, so that the log replays the same from anywhere:
 *   1. a python import;
 *   2. the stat storm: in a, the 50 files are looked up first, then the missing names; in b the
 *      same lookups in another order, the files spread over the storm; a PATH search (one
 *      missing command, one found) every 100 names;
 *   3. a scan, like a backup or a build checking timestamps: every file of c looked up once
 *      (stat, then access: one burst), the PATH search going on;
 *   4. the python import again.
 */
static char *capture_script(const char *work, size_t names, bool python)
{
        const char *py = python ? "/usr/bin/python3 -c 'import json, email.parser'\n" : "";
        char *s = NULL;

        if (asprintf(&s,
                     "W=%s\n"
                     "%s"
                     "path_search() { command -v nosuchtool; command -v gcc; }\n"
                     "j=0; while [ $j -lt %u ]; do [ -e $W/a/f$j ]; j=$((j+1)); done\n"
                     "n=%zu; every=$((n / %u)); i=0\n"
                     "while [ $i -lt $n ]; do\n"
                     "  [ -e $W/a/m$i ]\n"
                     "  [ -e $W/b/m$i ]\n"
                     "  if [ $((i %% every)) -eq 0 ]; then [ -e $W/b/f$((i / every)) ]; fi\n"
                     "  if [ $((i %% 100)) -eq 0 ]; then path_search; fi\n"
                     "  i=$((i+1))\n"
                     "done >/dev/null\n"
                     "i=0\n"
                     "while [ $i -lt $n ]; do\n"
                     "  [ -e $W/c/f$i ] && [ -r $W/c/f$i ]\n"
                     "  if [ $((i %% 100)) -eq 0 ]; then path_search; fi\n"
                     "  i=$((i+1))\n"
                     "done >/dev/null\n"
                     "%s",
                     work, py, CAPTURE_FILES, names, CAPTURE_FILES, py) < 0)
                return NULL;
        return s;
}

int capture(const struct config *cfg, struct trace *t)
{
        char work[] = "/var/tmp/cacheage-lab-XXXXXX", sub[PATH_MAX], name[32], out[PATH_MAX];
        bool python = access("/usr/bin/python3", X_OK) == 0;
        char *script = NULL;
        pid_t pid;
        int status, r;

        r = mkdir_p(cfg->out);
        if (r < 0) {
                fprintf(stderr, "bench-replay: cannot create %s: %s\n", cfg->out, strerror(-r));
                return r;
        }
        /* strace runs in the work directory: the log's name must not be relative */
        if (!realpath(cfg->out, out))
                return -errno;
        if ((size_t)snprintf(t->file, sizeof(t->file), "%s/capture.strace", out) >=
            sizeof(t->file))
                return -ENAMETOOLONG;
        if (!mkdtemp(work))
                return -errno;
        for (const char *d = "abc"; *d; d++) {
                size_t files = *d == 'c' ? cfg->capture_names : CAPTURE_FILES;

                snprintf(sub, sizeof(sub), "%s/%c", work, *d);
                if (mkdir(sub, 0755) < 0) {
                        r = -errno;
                        goto out;
                }
                for (size_t i = 0; i < files; i++) {
                        snprintf(name, sizeof(name), "f%zu", i);
                        r = touch_file(sub, name);
                        if (r < 0)
                                goto out;
                }
                t->dirs[t->ndirs] = strdup(sub);
                if (!t->dirs[t->ndirs]) {
                        r = -ENOMEM;
                        goto out;
                }
                t->ndirs++;
        }
        script = capture_script(work, cfg->capture_names, python);
        if (!script) {
                r = -ENOMEM;
                goto out;
        }
        pid = fork();
        if (pid < 0) {
                r = -errno;
                goto out;
        }
        if (pid == 0) {
                char *const argv[] = { "strace", "-f", "-ttt", "-e", "trace=%file", "-o",
                                       t->file, "sh", "-c", script, NULL };
                /* a clean environment: a known PATH, no user's python path hooks */
                char home[PATH_MAX + 8];
                char *const envp[] = {
                        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                        "LANG=C.UTF-8", home, NULL,
                };
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                snprintf(home, sizeof(home), "HOME=%s", work);
                if (null >= 0) {
                        dup2(null, STDIN_FILENO);
                        dup2(null, STDOUT_FILENO);
                }
                if (chdir(work) < 0)
                        _exit(126);
                execvpe("strace", argv, envp);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0) {
                r = -errno;
                goto out;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-replay: strace of the workload failed (%s %d)\n",
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                r = -ECHILD;
                goto out;
        }
        r = 0;
out:
        free(script);
        nftw(work, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return r;
}

