/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the network adapters' benchmarks share (see bench-util.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"

/* ---- the server's port ---- */

uint16_t bench_free_port(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) < 0)
                bench_die("no free port: %s", strerror(errno));
        close(fd);
        return ntohs(a.sin_port);
}

int bench_connect(uint16_t port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                 .sin_port = htons(port) };
        int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return fd;
}

void bench_write_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t r = write(fd, s, n);

                if (r <= 0)
                        bench_die("write to the server: %s", strerror(errno));
                s += r;
                n -= (size_t)r;
        }
}

/* ---- a client's latencies ---- */

void bench_samples_init(struct bench_samples *s, size_t max)
{
        s->v = malloc(max * sizeof(*s->v));
        if (!s->v)
                bench_die("out of memory");
        s->n = 0;
        s->max = max;
}

void bench_sample(struct bench_samples *s, uint64_t t_usec, uint64_t latency_usec)
{
        if (s->n < s->max)
                s->v[s->n++] = (struct bench_sample){ t_usec, (uint32_t)latency_usec };
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

struct bench_pct bench_percentiles(const struct bench_samples *s, uint64_t from, uint64_t to)
{
        struct bench_pct p = { 0 };
        uint32_t *v = malloc(s->n * sizeof(*v) + 1);

        if (!v)
                bench_die("out of memory");
        for (size_t i = 0; i < s->n; i++)
                if (s->v[i].t_usec >= from && s->v[i].t_usec < to)
                        v[p.n++] = s->v[i].latency_usec;
        if (p.n) {
                qsort(v, p.n, sizeof(*v), cmp_u32);
                p.p50 = v[p.n / 2];
                p.p99 = v[p.n * 99 / 100];
                p.p999 = v[p.n * 999 / 1000];
                p.max = v[p.n - 1];
        }
        free(v);
        return p;
}

static bool in_spans(const struct bench_span *s, size_t n, uint64_t t)
{
        for (size_t i = 0; i < n; i++)
                if (t >= s[i].from && t < s[i].to)
                        return true;
        return false;
}

struct bench_pct bench_percentiles_where(const struct bench_samples *s,
                                         const struct bench_span *in, size_t n_in,
                                         const struct bench_span *out, size_t n_out)
{
        struct bench_samples sub = { .v = malloc(s->n * sizeof(*s->v) + 1), .max = s->n };
        struct bench_pct p;

        if (!sub.v)
                bench_die("out of memory");
        for (size_t i = 0; i < s->n; i++)
                if ((!in || in_spans(in, n_in, s->v[i].t_usec)) &&
                    !in_spans(out, n_out, s->v[i].t_usec))
                        sub.v[sub.n++] = s->v[i];
        p = bench_percentiles(&sub, 0, UINT64_MAX);
        free(sub.v);
        return p;
}

struct bench_pct bench_percentiles_of(const struct bench_samples *s, const struct bench_span *v,
                                      size_t n, bool inside)
{
        return inside ? bench_percentiles_where(s, v, n, NULL, 0)
                      : bench_percentiles_where(s, NULL, 0, v, n);
}

void bench_pace(uint64_t t0, uint64_t period_usec, bool spin)
{
        uint64_t now = bench_now_usec();

        if (spin) {
                while (bench_now_usec() < t0 + period_usec)
                        ;
        } else if (now < t0 + period_usec) {
                struct timespec ts = { 0, (long)(t0 + period_usec - now) * 1000 };

                nanosleep(&ts, NULL);
        }
}

/* ---- the daemon: its log, line by line as it comes, and its watchdog pings ---- */

static void watch_line(struct bench_watch *w, const char *line, uint64_t t)
{
        for (const char *const *n = w->needles; *n; n++)
                if (strstr(line, *n) && !strstr(line, "objects due") &&
                    w->n_events < BENCH_MAX_EVENTS) {
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
        struct bench_watch *w = userdata;
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

void bench_daemon_start(struct bench_child *d, struct bench_watch *w, const char *name,
                        const char *conf_text, const char *const *needles,
                        uint64_t watchdog_usec, bool sched_idle)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        char conf[512], log[512], notify_env[600], wd_env[64];
        const char *dir = bench_run_dir();
        FILE *f;

        *w = (struct bench_watch){ .notify_fd = -1 };
        w->events = calloc(BENCH_MAX_EVENTS, sizeof(*w->events));
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
        if (!f || fputs(conf_text, f) < 0 || fclose(f) != 0)
                bench_die("%s: %s", conf, strerror(errno));
        snprintf(notify_env, sizeof(notify_env), "NOTIFY_SOCKET=%s", addr.sun_path);
        snprintf(wd_env, sizeof(wd_env), "WATCHDOG_USEC=%" PRIu64, watchdog_usec);
        w->needles = needles;
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

void bench_daemon_stop(struct bench_child *d, struct bench_watch *w)
{
        w->stop = true;
        pthread_join(w->thread, NULL);
        bench_child_stop(d);
}

void bench_watch_free(struct bench_watch *w)
{
        if (w->notify_fd >= 0)
                close(w->notify_fd);
        free((char *)w->log_path);
        free(w->events);
        free(w->pings);
        pthread_mutex_destroy(&w->lock);
        *w = (struct bench_watch){ .notify_fd = -1 };
}

ssize_t bench_wait_event(struct bench_watch *w, const char *needle, size_t nth, uint64_t timeout_usec)
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

size_t bench_count_events(struct bench_watch *w, const char *needle)
{
        size_t seen = 0;

        pthread_mutex_lock(&w->lock);
        for (size_t i = 0; i < w->n_events; i++)
                if (strstr(w->events[i].line, needle))
                        seen++;
        pthread_mutex_unlock(&w->lock);
        return seen;
}

uint64_t bench_longest_gap(const struct bench_watch *w, uint64_t from, uint64_t to)
{
        uint64_t gap = 0;

        for (size_t i = 1; i < w->n_pings; i++)
                if (w->pings[i] >= from && w->pings[i - 1] < to && w->pings[i] - w->pings[i - 1] > gap)
                        gap = w->pings[i] - w->pings[i - 1];
        return gap;
}

uint64_t bench_field_after(const char *line, const char *word)
{
        const char *p = strstr(line, word);

        return p ? strtoull(p + strlen(word), NULL, 10) : 0;
}

/* ---- the machine's own steps over slice_time ---- */

static uint64_t cpu_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t unit_work(uint64_t iterations)
{
        volatile uint64_t x = 0x9e3779b97f4a7c15ULL;

        for (uint64_t i = 0; i < iterations; i++)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return x;
}

void bench_control_units(uint64_t *ret_n, uint64_t *ret_over, uint64_t *ret_longest)
{
        struct sched_param sp = { 0 };
        uint64_t iterations = 1 << 16, t0, end, n = 0, over = 0, longest = 0;

        if (sched_setscheduler(0, SCHED_IDLE, &sp) < 0)
                bench_die("SCHED_IDLE: %s", strerror(errno));
        t0 = cpu_usec();
        unit_work(iterations);
        iterations = iterations * BENCH_UNIT_USEC / (cpu_usec() - t0 + 1);
        for (end = bench_now_usec() + BENCH_CONTROL_UNITS_SEC * 1000000; bench_now_usec() < end;) {
                uint64_t d;

                t0 = cpu_usec();
                unit_work(iterations);
                d = cpu_usec() - t0;
                n++;
                if (d > BENCH_SLICE_USEC)
                        over++;
                if (d > longest)
                        longest = d;
        }
        *ret_n = n;
        *ret_over = over;
        *ret_longest = longest;
}
