/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memcached benchmarks' run: children, a client, the daemon's log (see memcached-run.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memcached-run.h"

const char *mcb_prog = "bench";
uint16_t mcb_port;

void mcb_die(const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "%s: ", mcb_prog);
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

uint64_t mcb_now_usec(void)
{
        return clock_usec(CLOCK_MONOTONIC);
}

uint64_t mcb_wall_usec(void)
{
        return clock_usec(CLOCK_REALTIME);
}

const char *mcb_env(const char *name)
{
        const char *v = getenv(name);

        if (!v || !*v)
                mcb_die("%s is not set (run it through meson: meson test -C BUILD --benchmark ...)",
                        name);
        return v;
}

double mcb_loadavg(void)
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
 * The children still running, stopped at exit too, and the run's directory removed: mcb_die()
 * leaves no memcached, daemon or temp tree behind.
 */
static pid_t running[8];
static char run_dir[] = "/tmp/cacheage-bench-mc-XXXXXX";

static void running_set(pid_t old, pid_t pid)
{
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (running[i] == old) {
                        running[i] = pid;
                        return;
                }
        mcb_die("more than %zu children at once", sizeof(running) / sizeof(running[0]));
}

static void running_stop(void)
{
        /* The directory first: a thread of ours may exit too once memcached is gone. */
        if (run_dir[strlen(run_dir) - 1] != 'X' && !getenv("CA_BENCH_KEEP")) {
                char cmd[sizeof(run_dir) + 16];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", run_dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "%s: could not remove %s\n", mcb_prog, run_dir);
        }
        for (size_t i = 0; i < sizeof(running) / sizeof(running[0]); i++)
                if (running[i] > 0) {
                        kill(running[i], SIGKILL);
                        waitpid(running[i], NULL, 0);
                }
}

const char *mcb_run_dir(void)
{
        if (run_dir[strlen(run_dir) - 1] == 'X') {
                if (!mkdtemp(run_dir))
                        mcb_die("mkdtemp: %s", strerror(errno));
                atexit(running_stop);
                /* memcached as nobody, and nobody's log files, live in it too */
                chmod(run_dir, 0755);
        }
        return run_dir;
}

void mcb_child_start(struct mcb_child *c, const char *const argv[], const char *log,
                     const char *const envp_extra[], bool sched_idle, bool as_nobody)
{
        const struct passwd *pw = as_nobody && geteuid() == 0 ? getpwnam("nobody") : NULL;
        pid_t parent = getpid();
        int fd;

        if (as_nobody && geteuid() == 0 && !pw)
                mcb_die("no user nobody to run %s as", argv[0]);
        snprintf(c->log, sizeof(c->log), "%s", log);
        c->pid = fork();
        if (c->pid < 0)
                mcb_die("fork: %s", strerror(errno));
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

void mcb_child_stop(struct mcb_child *c)
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

uint64_t mcb_rss_kib(pid_t pid)
{
        return status_kib(pid, "VmRSS");
}

uint64_t mcb_hwm_kib(pid_t pid)
{
        return status_kib(pid, "VmHWM");
}

uint64_t mcb_cpu_usec(pid_t pid)
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

/* ---- memcached ---- */

int mcb_connect(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                 .sin_port = htons(mcb_port) };
        int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return fd;
}

void mcb_memcached_start(struct mcb_child *c, const char *const *args)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        const char *argv[32] = { "memcached", "-l", "127.0.0.1", "-p", NULL, "-U", "0" };
        char port_s[16], log[512];
        size_t n = 7;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        /* A port the kernel picks free for us. */
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) < 0)
                mcb_die("no free port: %s", strerror(errno));
        mcb_port = ntohs(a.sin_port);
        close(fd);
        snprintf(port_s, sizeof(port_s), "%u", mcb_port);
        argv[4] = port_s;
        for (size_t i = 0; args && args[i]; i++) {
                if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
                        mcb_die("too many memcached arguments");
                argv[n++] = args[i];
        }
        argv[n] = NULL;
        snprintf(log, sizeof(log), "%s/memcached-%u.log", mcb_run_dir(), mcb_port);
        mcb_child_start(c, argv, log, NULL, false, true);
        for (int i = 0;; i++) {
                fd = mcb_connect();
                if (fd >= 0) {
                        close(fd);
                        return;
                }
                if (i > 1000 || waitpid(c->pid, NULL, WNOHANG) == c->pid)
                        mcb_die("memcached did not start (see %s)", log);
                usleep(10000);
        }
}

void mcb_write_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t r = write(fd, s, n);

                if (r <= 0)
                        mcb_die("write to memcached: %s", strerror(errno));
                s += r;
                n -= (size_t)r;
        }
}

void mcb_read_until(int fd, const char *end, size_t count)
{
        char buf[1 << 14]; /* threads read at the same time: not static */
        size_t n = strlen(end), seen = 0, match = 0;

        while (seen < count) {
                ssize_t r = read(fd, buf, sizeof(buf));

                if (r <= 0)
                        mcb_die("read from memcached: %s", r == 0 ? "closed" : strerror(errno));
                for (ssize_t i = 0; i < r; i++) {
                        match = buf[i] == end[match] ? match + 1 : (buf[i] == end[0] ? 1 : 0);
                        if (match == n) {
                                seen++;
                                match = 0;
                        }
                }
        }
}

/* The text after "STAT @name " in memcached's "stats", in @buf ("" when it has none). */
static void server_stat_text(const char *name, char *buf, size_t size)
{
        char line[256];
        size_t n = strlen(name);
        int fd = mcb_connect();
        FILE *f;

        if (fd < 0)
                mcb_die("cannot connect to memcached for its stats");
        f = fdopen(fd, "r");
        if (!f)
                mcb_die("fdopen: %s", strerror(errno));
        buf[0] = '\0';
        mcb_write_all(fd, "stats\r\n", 7);
        while (fgets(line, sizeof(line), f) && strncmp(line, "END", 3) != 0)
                if (strncmp(line, "STAT ", 5) == 0 && strncmp(line + 5, name, n) == 0 &&
                    line[5 + n] == ' ')
                        snprintf(buf, size, "%s", line + 6 + n);
        fclose(f);
}

uint64_t mcb_server_stat(const char *name)
{
        char v[64];

        server_stat_text(name, v, sizeof(v));
        return strtoull(v, NULL, 10);
}

double mcb_server_stat_double(const char *name)
{
        char v[64];

        server_stat_text(name, v, sizeof(v));
        return strtod(v, NULL);
}

/* ---- cacheaged: its log, line by line as it comes, and its watchdog pings ---- */

static const char *const watched[] = {
        "mc: refresh: ", "mc: dump: ", "mc: aged: ", "mc: rotation ", "Failed", "memcached at",
};

static void watch_line(struct mcb_watch *w, const char *line, uint64_t t)
{
        for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
                if (strstr(line, watched[i]) && !strstr(line, "objects due") &&
                    w->n_events < MCB_MAX_EVENTS) {
                        pthread_mutex_lock(&w->lock);
                        w->events[w->n_events].t_usec = t;
                        snprintf(w->events[w->n_events].line, sizeof(w->events[0].line), "%.500s",
                                 line);
                        w->n_events++;
                        pthread_mutex_unlock(&w->lock);
                        return;
                }
}

static void *watch_thread(void *userdata)
{
        struct mcb_watch *w = userdata;
        char buf[8192], line[1024];
        size_t ll = 0;
        int fd = -1;

        while (!w->stop) {
                struct pollfd p = { .fd = w->notify_fd, .events = POLLIN };
                uint64_t t;
                ssize_t r;

                if (poll(&p, 1, 1) > 0) {
                        r = recv(w->notify_fd, buf, sizeof(buf) - 1, 0);
                        t = mcb_now_usec();
                        if (r > 0) {
                                buf[r] = '\0';
                                if (strstr(buf, "WATCHDOG=1")) {
                                        if (w->n_pings == w->cap_pings) {
                                                w->cap_pings = w->cap_pings ? w->cap_pings * 2 : 4096;
                                                w->pings = realloc(w->pings, w->cap_pings * sizeof(*w->pings));
                                                if (!w->pings)
                                                        mcb_die("out of memory");
                                        }
                                        w->pings[w->n_pings++] = t;
                                }
                                if (strstr(buf, "READY=1"))
                                        w->ready = true;
                        }
                }
                if (fd < 0)
                        fd = open(w->log_path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                t = mcb_now_usec();
                while ((r = read(fd, buf, sizeof(buf))) > 0)
                        for (ssize_t i = 0; i < r; i++) {
                                if (buf[i] != '\n') {
                                        if (ll < sizeof(line) - 1)
                                                line[ll++] = buf[i];
                                        continue;
                                }
                                line[ll] = '\0';
                                watch_line(w, line, t);
                                ll = 0;
                        }
        }
        if (fd >= 0)
                close(fd);
        return NULL;
}

void mcb_daemon_start(struct mcb_child *d, struct mcb_watch *w, const char *name,
                      const char *cache_lines, uint64_t watchdog_usec, bool sched_idle)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        char conf[512], log[512], notify_env[600], wd_env[64];
        const char *dir = mcb_run_dir();
        FILE *f;

        *w = (struct mcb_watch){ .notify_fd = -1 };
        w->events = calloc(MCB_MAX_EVENTS, sizeof(*w->events));
        if (!w->events)
                mcb_die("out of memory");
        snprintf(addr.sun_path, sizeof(addr.sun_path), "%.80s/%.16s.notify", dir, name);
        unlink(addr.sun_path);
        w->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (w->notify_fd < 0 || bind(w->notify_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
                mcb_die("notify socket: %s", strerror(errno));
        snprintf(conf, sizeof(conf), "%s/%s.conf", dir, name);
        snprintf(log, sizeof(log), "%s/%s.log", dir, name);
        f = fopen(conf, "we");
        if (!f)
                mcb_die("%s: %s", conf, strerror(errno));
        /* Rotations on the clock, not deferred by the load this very run puts on. */
        fprintf(f, "[daemon]\nplugin_dir = %s\nidle_cpu_pressure = 0\nidle_memory_pressure = 0\n"
                "[cache mc]\nadapter = memcached\nserver = 127.0.0.1:%u\n%s",
                mcb_env("CA_ADAPTER_DIR"), mcb_port, cache_lines);
        if (fclose(f) != 0)
                mcb_die("%s: %s", conf, strerror(errno));
        snprintf(notify_env, sizeof(notify_env), "NOTIFY_SOCKET=%s", addr.sun_path);
        snprintf(wd_env, sizeof(wd_env), "WATCHDOG_USEC=%" PRIu64, watchdog_usec);
        w->log_path = strdup(log);
        if (!w->log_path)
                mcb_die("out of memory");
        pthread_mutex_init(&w->lock, NULL);
        {
                const char *argv[] = { mcb_env("CACHEAGED"), "--config", conf, "--bus", "none",
                                       "--log-level", "debug", NULL };
                const char *envp[] = { notify_env, watchdog_usec ? wd_env : NULL, NULL };

                mcb_child_start(d, argv, log, envp, sched_idle, false);
        }
        if (pthread_create(&w->thread, NULL, watch_thread, w) != 0)
                mcb_die("thread");
        for (int i = 0; !w->ready; i++) {
                if (i > 1000 || waitpid(d->pid, NULL, WNOHANG) == d->pid)
                        mcb_die("the daemon is not ready (see %s)", log);
                usleep(10000);
        }
}

void mcb_daemon_stop(struct mcb_child *d, struct mcb_watch *w)
{
        w->stop = true;
        pthread_join(w->thread, NULL);
        mcb_child_stop(d);
}

void mcb_watch_free(struct mcb_watch *w)
{
        if (w->notify_fd >= 0)
                close(w->notify_fd);
        free((char *)w->log_path);
        free(w->events);
        free(w->pings);
        pthread_mutex_destroy(&w->lock);
        *w = (struct mcb_watch){ .notify_fd = -1 };
}

ssize_t mcb_wait_event(struct mcb_watch *w, const char *needle, size_t nth, uint64_t timeout_usec)
{
        uint64_t until = mcb_now_usec() + timeout_usec;

        for (;;) {
                size_t seen = 0;

                pthread_mutex_lock(&w->lock);
                for (size_t i = 0; i < w->n_events; i++)
                        if (strstr(w->events[i].line, needle) && ++seen == nth) {
                                pthread_mutex_unlock(&w->lock);
                                return (ssize_t)i;
                        }
                pthread_mutex_unlock(&w->lock);
                if (mcb_now_usec() >= until)
                        return -1;
                usleep(2000);
        }
}

size_t mcb_count_events(struct mcb_watch *w, const char *needle)
{
        size_t seen = 0;

        pthread_mutex_lock(&w->lock);
        for (size_t i = 0; i < w->n_events; i++)
                if (strstr(w->events[i].line, needle))
                        seen++;
        pthread_mutex_unlock(&w->lock);
        return seen;
}

uint64_t mcb_longest_gap(const struct mcb_watch *w, uint64_t from, uint64_t to)
{
        uint64_t gap = 0;

        for (size_t i = 1; i < w->n_pings; i++)
                if (w->pings[i] >= from && w->pings[i - 1] < to && w->pings[i] - w->pings[i - 1] > gap)
                        gap = w->pings[i] - w->pings[i - 1];
        return gap;
}

uint64_t mcb_field_after(const char *line, const char *word)
{
        const char *p = strstr(line, word);

        return p ? strtoull(p + strlen(word), NULL, 10) : 0;
}
