/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pager: a child that execs it with its stdin on a pipe. Whether the exec worked is known
 * before the parent touches its standard output: the child holds the write end of a
 * close-on-exec pipe, which a successful exec closes with nothing written, and to which a
 * failed one writes its errno. Only then is standard output moved onto the pager's pipe, so a
 * pager that is not there costs nothing but the attempt.
 *
 * A command with shell syntax in it ("less -R | tee x") runs under "sh -c"; the shell always
 * starts, so its first word is looked up in PATH first, and a missing one counts as a pager that
 * cannot start.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pager.h"

#define PAGER_ARGS_MAX 16

static pid_t pager_pid;

/* The configured pager: NULL for the default ones, "" for none. */
static const char *pager_configured(void)
{
        static const char *const vars[] = { "CACHEAGECTL_PAGER", "SYSTEMD_PAGER", "PAGER" };

        for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
                const char *v = getenv(vars[i]);

                if (v)
                        return strcmp(v, "cat") == 0 ? "" : v;
        }
        return NULL;
}

/* Whether @name runs as a command: a path to an executable, or one found in $PATH. */
static bool command_exists(const char *name, size_t len)
{
        const char *path = getenv("PATH");
        char buf[4096];

        if (len == 0 || len >= sizeof(buf))
                return false;
        if (memchr(name, '/', len)) {
                snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
                return access(buf, X_OK) == 0;
        }
        for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
                size_t n = strcspn(p, ":");
                struct stat st;

                snprintf(buf, sizeof(buf), "%.*s/%.*s", (int)(n ? n : 1), n ? p : ".", (int)len,
                         name);
                if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                        return true;
                p += n + (p[n] == ':');
        }
        return false;
}

/*
 * In the child: exec @cmd, split at blanks, or under "sh -c" when it has shell syntax. Returns
 * only when it cannot start, with errno set.
 */
static void exec_pager(const char *cmd)
{
        char copy[4096], *argv[PAGER_ARGS_MAX + 1], *save;
        size_t n = 0;

        if (strpbrk(cmd, "|&;<>()$`\\\"'*?[#~\n")) {
                size_t first = strcspn(cmd + strspn(cmd, " \t"), " \t|&;<>()");

                if (!command_exists(cmd + strspn(cmd, " \t"), first)) {
                        errno = ENOENT;
                        return;
                }
                execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
                return;
        }
        if (strlen(cmd) >= sizeof(copy)) {
                errno = E2BIG;
                return;
        }
        strcpy(copy, cmd);
        for (char *w = strtok_r(copy, " \t", &save); w && n < PAGER_ARGS_MAX;
             w = strtok_r(NULL, " \t", &save))
                argv[n++] = w;
        argv[n] = NULL;
        if (n == 0) {
                errno = ENOENT;
                return;
        }
        execvp(argv[0], argv);
}

bool pager_open(void)
{
        const char *configured = pager_configured(), *less;
        int fds[2], status_fds[2], e = 0;
        ssize_t n;
        pid_t pid;

        if (pager_pid > 0 || !isatty(STDOUT_FILENO) || (configured && !configured[0]))
                return false;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return false;
        if (pipe2(status_fds, O_CLOEXEC) < 0)
                goto out_close_fds;
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                goto out_close_status;
        if (pid == 0) {
                dup2(fds[0], STDIN_FILENO); /* dup2() clears close-on-exec on the copy */
                less = getenv("SYSTEMD_LESS");
                setenv("LESS", less ? less : "FRSXMK", 1);
                /* As systemd does: the one configured, then the usual ones. */
                if (configured)
                        exec_pager(configured);
                exec_pager("less");
                exec_pager("more");
                e = errno;
                (void)!write(status_fds[1], &e, sizeof(e));
                _exit(127);
        }
        close(status_fds[1]);
        close(fds[0]);
        do
                n = read(status_fds[0], &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        close(status_fds[0]);
        if (n != 0) {
                /* It did not start: reap it, keep writing where we were. */
                close(fds[1]);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return false;
        }
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        /* The reader may quit early (q in less): the writes then fail, quietly. */
        signal(SIGPIPE, SIG_IGN);
        pager_pid = pid;
        return true;

out_close_status:
        close(status_fds[0]);
        close(status_fds[1]);
out_close_fds:
        close(fds[0]);
        close(fds[1]);
        return false;
}

void pager_close(void)
{
        if (pager_pid <= 0)
                return;
        fflush(stdout);
        /* The pager sees the end of its input only once every copy of the pipe is closed. */
        fclose(stdout);
        close(STDOUT_FILENO);
        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}
