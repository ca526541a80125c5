/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memcached benchmarks' memcached, client and daemon (see memcached-run.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcached-run.h"

uint16_t mcb_port;

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

void mcb_memcached_start(struct bench_child *c, const char *const *args)
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
                bench_die("no free port: %s", strerror(errno));
        mcb_port = ntohs(a.sin_port);
        close(fd);
        snprintf(port_s, sizeof(port_s), "%u", mcb_port);
        argv[4] = port_s;
        for (size_t i = 0; args && args[i]; i++) {
                if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
                        bench_die("too many memcached arguments");
                argv[n++] = args[i];
        }
        argv[n] = NULL;
        snprintf(log, sizeof(log), "%s/memcached-%u.log", bench_run_dir(), mcb_port);
        bench_child_start(c, argv, log, NULL, false, true);
        for (int i = 0;; i++) {
                fd = mcb_connect();
                if (fd >= 0) {
                        close(fd);
                        return;
                }
                if (i > 1000 || waitpid(c->pid, NULL, WNOHANG) == c->pid)
                        bench_die("memcached did not start (see %s)", log);
                usleep(10000);
        }
}

void mcb_write_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t r = write(fd, s, n);

                if (r <= 0)
                        bench_die("write to memcached: %s", strerror(errno));
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
                        bench_die("read from memcached: %s", r == 0 ? "closed" : strerror(errno));
                for (ssize_t i = 0; i < r; i++) {
                        match = buf[i] == end[match] ? match + 1 : (buf[i] == end[0] ? 1 : 0);
                        if (match == n) {
                                seen++;
                                match = 0;
                        }
                }
        }
}

/*
 * The figure @name of memcached's @command ("stats", "stats items"), summed over the slab classes
 * where it is per class ("STAT items:CLS:@name N"); as a double, fractions kept.
 */
static double server_stat_sum(const char *command, const char *name)
{
        char line[256];
        size_t n = strlen(name);
        double sum = 0;
        int fd = mcb_connect();
        FILE *f;

        if (fd < 0)
                bench_die("cannot connect to memcached for its stats");
        f = fdopen(fd, "r");
        if (!f)
                bench_die("fdopen: %s", strerror(errno));
        mcb_write_all(fd, command, strlen(command));
        mcb_write_all(fd, "\r\n", 2);
        while (fgets(line, sizeof(line), f) && strncmp(line, "END", 3) != 0) {
                const char *key = line + 5, *end = strchr(key, ' ');

                if (strncmp(line, "STAT ", 5) != 0 || !end || (size_t)(end - key) < n ||
                    strncmp(end - n, name, n) != 0 || (end - n != key && end[-(ptrdiff_t)n - 1] != ':'))
                        continue;
                sum += strtod(end + 1, NULL);
        }
        fclose(f);
        return sum;
}

uint64_t mcb_server_stat(const char *name)
{
        return (uint64_t)server_stat_sum("stats", name);
}

double mcb_server_stat_double(const char *name)
{
        return server_stat_sum("stats", name);
}

uint64_t mcb_server_stat_items(const char *name)
{
        return (uint64_t)server_stat_sum("stats items", name);
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
                        t = bench_now_usec();
                        if (r > 0) {
                                buf[r] = '\0';
                                if (strstr(buf, "WATCHDOG=1")) {
                                        if (w->n_pings == w->cap_pings) {
                                                w->cap_pings = w->cap_pings ? w->cap_pings * 2 : 4096;
                                                w->pings = realloc(w->pings, w->cap_pings * sizeof(*w->pings));
                                                if (!w->pings)
                                                        bench_die("out of memory");
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
                t = bench_now_usec();
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

void mcb_daemon_start(struct bench_child *d, struct mcb_watch *w, const char *name,
                      const char *cache_lines, uint64_t watchdog_usec, bool sched_idle)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        char conf[512], log[512], notify_env[600], wd_env[64];
        const char *dir = bench_run_dir();
        FILE *f;

        *w = (struct mcb_watch){ .notify_fd = -1 };
        w->events = calloc(MCB_MAX_EVENTS, sizeof(*w->events));
        if (!w->events)
                bench_die("out of memory");
        snprintf(addr.sun_path, sizeof(addr.sun_path), "%.80s/%.16s.notify", dir, name);
        unlink(addr.sun_path);
        w->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (w->notify_fd < 0 || bind(w->notify_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
                bench_die("notify socket: %s", strerror(errno));
        snprintf(conf, sizeof(conf), "%s/%s.conf", dir, name);
        snprintf(log, sizeof(log), "%s/%s.log", dir, name);
        f = fopen(conf, "we");
        if (!f)
                bench_die("%s: %s", conf, strerror(errno));
        /* Rotations on the clock, not deferred by the load this very run puts on. */
        fprintf(f, "[daemon]\nplugin_dir = %s\nidle_cpu_pressure = 0\nidle_memory_pressure = 0\n"
                "[cache mc]\nadapter = memcached\nserver = 127.0.0.1:%u\n%s",
                bench_env("CA_ADAPTER_DIR"), mcb_port, cache_lines);
        if (fclose(f) != 0)
                bench_die("%s: %s", conf, strerror(errno));
        snprintf(notify_env, sizeof(notify_env), "NOTIFY_SOCKET=%s", addr.sun_path);
        snprintf(wd_env, sizeof(wd_env), "WATCHDOG_USEC=%" PRIu64, watchdog_usec);
        w->log_path = strdup(log);
        if (!w->log_path)
                bench_die("out of memory");
        pthread_mutex_init(&w->lock, NULL);
        {
                const char *argv[] = { bench_env("CACHEAGED"), "--config", conf, "--bus", "none",
                                       "--log-level", "debug", NULL };
                const char *envp[] = { notify_env, watchdog_usec ? wd_env : NULL, NULL };

                bench_child_start(d, argv, log, envp, sched_idle, false);
        }
        if (pthread_create(&w->thread, NULL, watch_thread, w) != 0)
                bench_die("thread");
        for (int i = 0; !w->ready; i++) {
                if (i > 1000 || waitpid(d->pid, NULL, WNOHANG) == d->pid)
                        bench_die("the daemon is not ready (see %s)", log);
                usleep(10000);
        }
}

void mcb_daemon_stop(struct bench_child *d, struct mcb_watch *w)
{
        w->stop = true;
        pthread_join(w->thread, NULL);
        bench_child_stop(d);
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
        uint64_t until = bench_now_usec() + timeout_usec;

        for (;;) {
                size_t seen = 0;

                pthread_mutex_lock(&w->lock);
                for (size_t i = 0; i < w->n_events; i++)
                        if (strstr(w->events[i].line, needle) && ++seen == nth) {
                                pthread_mutex_unlock(&w->lock);
                                return (ssize_t)i;
                        }
                pthread_mutex_unlock(&w->lock);
                if (bench_now_usec() >= until)
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
