/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The benchmarks' run: its directory, its children, their figures (see bench-run.h). */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-run.h"

const char *bench_prog = "bench";

void bench_die(const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "%s: ", bench_prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

static uint64_t clock_usec(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t bench_now_usec(void)
{
        return clock_usec(CLOCK_MONOTONIC);
}

void bench_sleep_until(uint64_t t_usec)
{
        /* One reading of the clock: read twice, the difference can wrap past the time. */
        uint64_t now = bench_now_usec();

        if (t_usec > now)
                usleep((useconds_t)(t_usec - now));
}

uint64_t bench_wall_usec(void)
{
        return clock_usec(CLOCK_REALTIME);
}

const char *bench_env(const char *name)
{
        /* Made absolute once: the daemon takes only an absolute plugin_dir, and the documents
         * give these relative to the source tree (CA_ADAPTER_DIR=build/lib/adapters). */
        static struct {
                const char *name;
                char *path;
        } seen[4];
        const char *v = getenv(name);
        size_t i;

        for (i = 0; i < sizeof(seen) / sizeof(seen[0]) && seen[i].name; i++)
                if (strcmp(seen[i].name, name) == 0)
                        return seen[i].path;
        if (!v || !*v)
                bench_die("%s is not set (run it through meson: meson test -C BUILD --benchmark ...)",
                        name);
        if (i == sizeof(seen) / sizeof(seen[0]))
                bench_die("bench_env: more than %zu variables", i);
        seen[i].path = realpath(v, NULL);
        if (!seen[i].path)
                bench_die("%s=%s: %s", name, v, strerror(errno));
        seen[i].name = name;
        return seen[i].path;
}

double bench_loadavg(void)
{
        FILE *f = fopen("/proc/loadavg", "re");
        double v = -1;

        if (f) {
                if (fscanf(f, "%lf", &v) != 1)
                        v = -1;
                fclose(f);
        }
        return v;
}

/* ---- the run's directory and children ---- */

/*
 * The children still running, stopped at exit too, and the run's directory removed: bench_die()
 * leaves no memcached, daemon or temp tree behind.
 */
static pid_t running[32];
static char run_dir[] = "/tmp/cacheage-bench-XXXXXX";
static bool run_dir_made;

static void running_set(pid_t old, pid_t pid)
{
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (running[i] == old) {
                        running[i] = pid;
                        return;
                }
        bench_die("more than %zu children at once", sizeof(running) / sizeof(running[0]));
}

static void running_stop(void)
{
        /* The directory first: a thread of ours may exit too once memcached is gone. */
        if (run_dir_made && !getenv("CA_BENCH_KEEP")) {
                char cmd[sizeof(run_dir) + 16];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run_dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "%s: could not remove %s\n", bench_prog, run_dir);
        }
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (running[i] > 0) {
                        kill(running[i], SIGKILL);
                        waitpid(running[i], NULL, 0);
                }
}

const char *bench_run_dir(void)
{
        if (!run_dir_made) {
                if (!mkdtemp(run_dir))
                        bench_die("mkdtemp: %s", strerror(errno));
                run_dir_made = true;
                atexit(running_stop);
                /* memcached as nobody, and nobody's log files, live in it too */
                chmod(run_dir, 0755);
        }
        return run_dir;
}

void bench_child_start(struct bench_child *c, const char *const argv[], const char *log,
                     const char *const envp_extra[], bool sched_idle, bool as_nobody)
{
        const struct passwd *pw = as_nobody && geteuid() == 0 ? getpwnam("nobody") : NULL;
        pid_t parent = getpid();
        int fd;

        if (as_nobody && geteuid() == 0 && !pw)
                bench_die("no user nobody to run %s as", argv[0]);
        snprintf(c->log, sizeof(c->log), "%s", log);
        c->pid = fork();
        if (c->pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (c->pid > 0) {
                running_set(0, c->pid);
                return;
        }
        fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
        }
        for (size_t i = 0; envp_extra && envp_extra[i]; i++)
                putenv((char *)envp_extra[i]);
        if (sched_idle) {
                struct sched_param sp = { 0 };

                sched_setscheduler(0, SCHED_IDLE, &sp);
        }
        /*
         * nobody before the exec, not memcached's own "-u nobody" after it: a change of
         * credentials clears the parent-death signal, which is asked for after it.
         */
        if (pw && (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
                   setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0))
                _exit(127);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(127);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
}

void bench_child_stop(struct bench_child *c)
{
        if (c->pid <= 0)
                return;
        running_set(c->pid, 0);
        kill(c->pid, SIGTERM);
        for (int i = 0; i < 500; i++) {
                if (waitpid(c->pid, NULL, WNOHANG) == c->pid) {
                        c->pid = -1;
                        return;
                }
                usleep(10000);
        }
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        c->pid = -1;
}

bool bench_child_exited(struct bench_child *c, int *ret_status, struct rusage *ret_usage)
{
        struct rusage ru;
        int status;

        if (c->pid <= 0)
                return true;
        if (wait4(c->pid, &status, WNOHANG, &ru) != c->pid)
                return false;
        running_set(c->pid, 0);
        c->pid = -1;
        if (ret_status)
                *ret_status = status;
        if (ret_usage)
                *ret_usage = ru;
        return true;
}

char *bench_read_file(const char *path)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0;

        if (f) {
                if (getdelim(&buf, &len, '\0', f) < 0) {
                        free(buf);
                        buf = NULL;
                }
                fclose(f);
        }
        if (!buf)
                buf = strdup("");
        if (!buf)
                bench_die("out of memory");
        return buf;
}

bool bench_wait_log(struct bench_child *c, const char *needle, uint64_t timeout_usec,
                    char *ret_line, size_t size)
{
        uint64_t until = bench_now_usec() + timeout_usec;

        for (;;) {
                char *log = bench_read_file(c->log), *p = strstr(log, needle);

                if (p) {
                        while (p > log && p[-1] != '\n')
                                p--;
                        if (ret_line)
                                snprintf(ret_line, size, "%.*s", (int)strcspn(p, "\n"), p);
                        free(log);
                        return true;
                }
                free(log);
                if (bench_child_exited(c, NULL, NULL) || bench_now_usec() >= until)
                        return false;
                usleep(20000);
        }
}

static uint64_t status_kib(pid_t pid, const char *field)
{
        char path[64], line[256];
        size_t n = strlen(field);
        uint64_t kib = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, n) == 0 && line[n] == ':') {
                        kib = strtoull(line + n + 1, NULL, 10);
                        break;
                }
        fclose(f);
        return kib;
}

uint64_t bench_rss_kib(pid_t pid)
{
        return status_kib(pid, "VmRSS");
}

uint64_t bench_hwm_kib(pid_t pid)
{
        return status_kib(pid, "VmHWM");
}

uint64_t bench_cpu_usec(pid_t pid)
{
        char path[64], buf[1024], *p;
        unsigned long long utime, stime;
        long hz = sysconf(_SC_CLK_TCK);
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        /* after the command's ")": state, then 10 fields, then utime and stime */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                         &stime) != 2 || hz <= 0)
                return 0;
        return (uint64_t)(utime + stime) * 1000000 / (uint64_t)hz;
}

