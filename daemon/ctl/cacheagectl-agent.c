/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * polkit's text agent for this process, as systemctl starts one: when a change needs polkit's
 * authorization and polkit wants the caller to authenticate (auth_admin_keep), pkttyagent
 * asks for the password on this terminal. It registers for its parent (this process), and
 * says it is ready by closing the file descriptor given with --notify-fd. In a login session,
 * --fallback leaves the session's agent (a desktop's) in charge, as systemctl does; outside
 * one (no logind, a container) polkit uses a fallback agent for nobody, so it is not one then.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-login.h>

#include "cacheagectl.h"

#define POLKIT_AGENT_PATH "/usr/bin/pkttyagent"

static pid_t agent_pid;

/*
 * Start the agent, and wait until it is registered: only for a caller other than root (root
 * needs no authorization) whose standard input is a terminal (something must answer the
 * question). Returns 1 when an agent runs, 0 when none is wanted or could start (the change is
 * then allowed or refused without a question).
 */
int polkit_agent_open(void)
{
        char fd_arg[16];
        char buf[64];
        bool in_session;
        int fds[2];
        pid_t pid;

        if (agent_pid > 0)
                return 1;
        if (geteuid() == 0 || !isatty(STDIN_FILENO) || access(POLKIT_AGENT_PATH, X_OK) < 0)
                return 0;
        in_session = sd_pid_get_session(0, NULL) >= 0;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return 0;
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                close(fds[0]);
                close(fds[1]);
                return 0;
        }
        if (pid == 0) {
                /* The agent: the pipe's write end stays open across exec, for --notify-fd. */
                (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (fcntl(fds[1], F_SETFD, 0) < 0)
                        _exit(127);
                /* Its questions go to the terminal, not into output piped elsewhere (JSON). */
                if (!isatty(STDOUT_FILENO)) {
                        int tty = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC);

                        if (tty >= 0 && dup2(tty, STDOUT_FILENO) < 0)
                                _exit(127);
                }
                snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
                execl(POLKIT_AGENT_PATH, POLKIT_AGENT_PATH, "--notify-fd", fd_arg,
                      in_session ? "--fallback" : (char *)NULL, (char *)NULL);
                _exit(127);
        }
        close(fds[1]);
        /* Registered (or dead): the write end is closed either way. */
        for (;;) {
                ssize_t n = read(fds[0], buf, sizeof(buf));

                if (n == 0 || (n < 0 && errno != EINTR))
                        break;
        }
        close(fds[0]);
        if (waitpid(pid, NULL, WNOHANG) == pid)
                return 0; /* it could not register: no question will be asked */
        agent_pid = pid;
        return 1;
}

/* Stop the agent, if one runs. */
void polkit_agent_close(void)
{
        if (agent_pid <= 0)
                return;
        (void)kill(agent_pid, SIGTERM);
        (void)waitpid(agent_pid, NULL, 0);
        agent_pid = 0;
}
