/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The connection under the network adapters' frame (see adapter-net.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cacheage/plugin.h"
#include "adapter-net.h"

/* ---- the server's address ---- */

static int parse_port(const char *s, uint16_t *ret)
{
        unsigned port = 0;

        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                port = port * 10 + (unsigned)(*s - '0');
                if (port > 65535)
                        return -EINVAL;
        }
        if (port == 0)
                return -EINVAL;
        *ret = (uint16_t)port;
        return 0;
}

int ad_server_parse(const char *v, struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                    char *msg, size_t msg_len)
{
        struct sockaddr_storage ss = { 0 };
        socklen_t len;
        char host[64];
        const char *colon;
        uint16_t port;

        if (v[0] == '/') {
                struct sockaddr_un *un = (struct sockaddr_un *)&ss;

                if (strlen(v) >= sizeof(un->sun_path)) {
                        snprintf(msg, msg_len, "socket path \"%s\" longer than %zu bytes", v,
                                 sizeof(un->sun_path) - 1);
                        return -EINVAL;
                }
                un->sun_family = AF_UNIX;
                strcpy(un->sun_path, v);
                len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(v) + 1);
                goto out;
        }
        colon = strrchr(v, ':');
        if (!colon || colon == v || (size_t)(colon - v) >= sizeof(host) ||
            parse_port(colon + 1, &port) < 0)
                goto out_bad;
        memcpy(host, v, (size_t)(colon - v));
        host[colon - v] = '\0';
        if (host[0] == '[') {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
                size_t n = strlen(host);

                if (n < 3 || host[n - 1] != ']')
                        goto out_bad;
                host[n - 1] = '\0';
                if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
                        goto out_bad;
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                len = sizeof(*in6);
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;

                if (strcmp(host, "localhost") == 0)
                        strcpy(host, "127.0.0.1");
                if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
                        goto out_bad;
                in->sin_family = AF_INET;
                in->sin_port = htons(port);
                len = sizeof(*in);
        }
out:
        *ret_addr = ss;
        *ret_len = len;
        return 0;
out_bad:
        snprintf(msg, msg_len, "invalid server \"%s\" (expected IPv4:PORT, [IPv6]:PORT, "
                 "localhost:PORT or an absolute socket path; names are not resolved)", v);
        return -EINVAL;
}

/* ---- the connection ---- */

int ad_connect(struct event_base *base, const struct sockaddr_storage *addr, socklen_t addr_len,
               int priority, size_t read_max, size_t input_max, struct bufferevent **ret_bev)
{
        struct bufferevent *bev;
        int fd, r;

        fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (addr->ss_family != AF_UNIX)
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
        if (connect(fd, (const struct sockaddr *)addr, addr_len) < 0 && errno != EINPROGRESS) {
                r = -errno;
                close(fd);
                return r;
        }
        bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!bev) {
                close(fd);
                return -ENOMEM;
        }
        bufferevent_priority_set(bev, priority);
        bufferevent_setwatermark(bev, EV_READ, 0, input_max);
        bufferevent_set_max_single_read(bev, read_max);
        /* No address: wait for the connection under way (or made) to be writable. */
        if (bufferevent_socket_connect(bev, NULL, 0) < 0) {
                bufferevent_free(bev);
                return -ENOMEM;
        }
        *ret_bev = bev;
        return 0;
}

void ad_timeouts(struct bufferevent *bev, uint64_t timeout_usec, bool waiting)
{
        struct timeval tv = { .tv_sec = (time_t)(timeout_usec / 1000000),
                              .tv_usec = (suseconds_t)(timeout_usec % 1000000) };

        if (waiting)
                bufferevent_set_timeouts(bev, &tv, &tv);
        else
                bufferevent_set_timeouts(bev, NULL, NULL);
}

/* ---- steps in the host's loop ---- */

uint64_t ad_cpu_usec(void)
{
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct ad_step ad_step_begin(struct ad_steps *s)
{
        s->work = 0;
        return (struct ad_step){ .start_usec = ca_now_usec(), .start_cpu_usec = ad_cpu_usec() };
}

bool ad_step_end(struct ad_steps *s, const struct ad_step *step, uint64_t slice_usec,
                 uint64_t *ret_cpu_usec, uint64_t *ret_usec)
{
        uint64_t d = ca_now_usec() - step->start_usec;
        uint64_t cpu = ad_cpu_usec() - step->start_cpu_usec;

        if (d > s->longest_usec)
                s->longest_usec = d;
        if (cpu > s->longest_cpu_usec)
                s->longest_cpu_usec = cpu;
        s->steps++;
        if (cpu <= slice_usec)
                return false;
        s->over_slice++;
        *ret_cpu_usec = cpu;
        *ret_usec = d;
        return true;
}

void ad_steps_mark(struct ad_steps *s)
{
        s->longest_usec = s->longest_cpu_usec = 0;
        s->mark_steps = s->steps;
        s->mark_over = s->over_slice;
}

/* ---- pace ---- */

void ad_pace_start(struct ad_pace *p, uint64_t rate)
{
        p->rate = rate;
        p->start_usec = ca_now_usec();
        p->items = 0;
}

uint64_t ad_pace(struct ad_pace *p, uint64_t n)
{
        uint64_t now, due;

        if (p->rate == 0)
                return 0;
        now = ca_now_usec();
        due = p->start_usec + p->items * 1000000 / p->rate;
        if (now > due + AD_PACE_BURST_USEC) {
                p->start_usec = now - AD_PACE_BURST_USEC;
                p->items = 0;
                due = p->start_usec;
        }
        if (due > now)
                return due - now > AD_PACE_WAIT_MIN_USEC ? due - now : AD_PACE_WAIT_MIN_USEC;
        p->items += n;
        return 0;
}

/* ---- health ---- */

bool ad_health_fail(struct ad_health *h, const char *kind)
{
        bool news = !h->failing || strcmp(kind, h->last_kind) != 0;

        h->failing = true;
        snprintf(h->last_kind, sizeof(h->last_kind), "%s", kind);
        return news;
}

bool ad_health_ok(struct ad_health *h)
{
        bool was = h->failing;

        h->failing = false;
        h->last_kind[0] = '\0';
        return was;
}

/* ---- a connection and the adapter's steps on it ---- */

struct ad_step ad_conn_begin(struct ad_conn *c)
{
        return ad_step_begin(&c->steps);
}

void ad_conn_end(struct ad_conn *c, const struct ad_step *step)
{
        uint64_t cpu, d;

        if (ad_step_end(&c->steps, step, ca_host_slice_usec(c->host), &cpu, &d))
                ca_host_log(c->host, LOG_DEBUG, "a step over slice_time: %" PRIu64 " us on the "
                            "CPU (%" PRIu64 " us on the clock) for %" PRIu64 " %s, %s", cpu, d,
                            c->steps.work, c->work_unit, c->ops->doing(c->userdata));
}

void ad_conn_schedule(struct ad_conn *c, uint64_t delay_usec)
{
        struct timeval tv = { .tv_sec = (time_t)(delay_usec / 1000000),
                              .tv_usec = (suseconds_t)(delay_usec % 1000000) };

        evtimer_add(c->step, &tv);
}

bool ad_conn_scheduled(const struct ad_conn *c)
{
        return evtimer_pending(c->step, NULL);
}

void ad_conn_refresh(struct ad_conn *c, uint64_t deadline_usec)
{
        struct timeval tv = { .tv_sec = (time_t)(deadline_usec / 1000000),
                              .tv_usec = (suseconds_t)(deadline_usec % 1000000) };

        c->refreshing = true;
        if (deadline_usec && !evtimer_pending(c->deadline, NULL))
                evtimer_add(c->deadline, &tv);
}

uint64_t ad_refresh_deadline_usec(uint64_t configured_usec, uint64_t max_items,
                                  uint64_t items_seen, uint64_t rate)
{
        uint64_t items = items_seen > max_items ? items_seen : max_items;

        if (configured_usec)
                return configured_usec;
        return AD_REFRESH_SLACK_USEC + AD_REFRESH_PER_ITEM * (items * 1000000 / (rate ? rate : 1));
}

void ad_conn_refresh_done(struct ad_conn *c)
{
        if (!c->refreshing)
                return;
        evtimer_del(c->deadline);
        c->ready_due = true;
        ad_conn_schedule(c, 0);
}

static void conn_step_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct ad_conn *c = userdata;
        struct ad_step step;

        if (c->ready_due) {
                c->ready_due = false;
                if (c->refreshing) {
                        /* A failed refresh is the adapter's to log: the host rotates anyway. */
                        c->refreshing = false;
                        ca_host_rotate_ready(c->host, c->cache, 0);
                }
                /* What came meanwhile was left for this step: the next one reads it. */
                if (c->bev && evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
                        ad_conn_schedule(c, 0);
                return;
        }
        step = ad_conn_begin(c);
        c->ops->step(c->userdata);
        ad_conn_end(c, &step);
}

static void conn_deadline_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct ad_conn *c = userdata;
        struct ad_step step;

        if (!c->refreshing || c->ready_due || !c->ops->refresh_timeout)
                return;
        step = ad_conn_begin(c);
        c->ops->refresh_timeout(c->userdata);
        ad_conn_end(c, &step);
}

static void conn_read_cb(struct bufferevent *bev, void *userdata)
{
        struct ad_conn *c = userdata;
        struct ad_step step;

        /* A step already scheduled reads what came; reading now would run two at once. */
        if (ad_conn_scheduled(c))
                return;
        step = ad_conn_begin(c);
        c->ops->read(c->userdata);
        ad_conn_end(c, &step);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *userdata)
{
        struct ad_conn *c = userdata;
        struct ad_step step = ad_conn_begin(c);
        char msg[AD_MSG_MAX];

        if (what & BEV_EVENT_CONNECTED) {
                c->connecting = false;
                c->ops->connected(c->userdata);
        } else if (what & BEV_EVENT_TIMEOUT) {
                c->ops->failed(c->userdata, c->connecting ? "no connection within timeout"
                                                          : "no reply within timeout");
        } else if (what & BEV_EVENT_EOF) {
                /* What it sent before closing is read first. */
                c->eof = true;
                if (!ad_conn_scheduled(c))
                        c->ops->read(c->userdata);
        } else if (what & BEV_EVENT_ERROR) {
                int e = EVUTIL_SOCKET_ERROR();

                snprintf(msg, sizeof(msg), "%s: %s",
                         c->connecting ? "cannot connect" : "connection lost",
                         e ? strerror(e) : "error");
                c->ops->failed(c->userdata, msg);
        }
        ad_conn_end(c, &step);
}

int ad_conn_init(struct ad_conn *c, struct ca_host *host, uint64_t timeout_usec,
                 const struct ad_conn_ops *ops, const char *work_unit, void *userdata)
{
        *c = (struct ad_conn){ .host = host, .timeout_usec = timeout_usec, .ops = ops,
                               .work_unit = work_unit, .userdata = userdata };
        c->base = ca_host_event_base(host);
        if (!c->base)
                return -EINVAL;
        c->priority = event_base_get_npriorities(c->base) - 1;
        c->step = evtimer_new(c->base, conn_step_cb, c);
        c->deadline = evtimer_new(c->base, conn_deadline_cb, c);
        if (!c->step || !c->deadline)
                return -ENOMEM;
        event_priority_set(c->step, c->priority);
        return 0;
}

void ad_conn_free(struct ad_conn *c)
{
        ad_conn_close(c);
        if (c->step)
                event_free(c->step);
        if (c->deadline)
                event_free(c->deadline);
        c->step = c->deadline = NULL;
}

int ad_conn_connect(struct ad_conn *c, const struct sockaddr_storage *addr, socklen_t addr_len,
                    size_t read_max, size_t input_max)
{
        int r = ad_connect(c->base, addr, addr_len, c->priority, read_max, input_max, &c->bev);

        if (r < 0)
                return r;
        bufferevent_setcb(c->bev, conn_read_cb, NULL, conn_event_cb, c);
        c->connecting = true;
        c->eof = false;
        ad_conn_timeouts(c, true);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
        return 0;
}

void ad_conn_close(struct ad_conn *c)
{
        if (c->bev)
                bufferevent_free(c->bev);
        c->bev = NULL;
        if (c->step)
                event_del(c->step);
        c->connecting = false;
        c->eof = false;
}

void ad_conn_timeouts(struct ad_conn *c, bool waiting)
{
        if (c->bev)
                ad_timeouts(c->bev, c->timeout_usec, waiting);
}

void ad_conn_stats(const struct ad_conn *c, void (*emit)(void *, const struct ca_adapter_stat *,
                                                           uint64_t), void *eu)
{
        AD_GAUGE("longest_step_usec", "usec",
                 "longest run of the adapter in the loop since the last refresh began",
                 c->steps.longest_usec);
        AD_GAUGE("longest_step_cpu_usec", "usec",
                 "the same step's own CPU time (without the time the kernel gave to others)",
                 c->steps.longest_cpu_usec);
        AD_COUNTER("steps", "steps", "runs of the adapter in the host's loop", c->steps.steps);
        AD_COUNTER("steps_over_slice", "steps",
                   "runs that took longer than slice_time on the CPU (a host that takes the "
                   "virtual CPU away mid-step counts here too)", c->steps.over_slice);
}

int ad_reserve(void *array, size_t *cap, size_t n, size_t size)
{
        void **a = array;
        size_t want = *cap ? *cap * 2 : 1024;
        void *v;

        if (n < *cap)
                return 0;
        v = realloc(*a, want * size);
        if (!v)
                return -ENOMEM;
        *a = v;
        *cap = want;
        return 0;
}

/* ---- an index of keys ---- */

uint64_t ad_hash(const uint8_t *key, size_t len)
{
        /* FNV-1a, 64 bits: keys are short, and the tables' sizes are powers of two. */
        uint64_t h = 0xcbf29ce484222325ULL;

        for (size_t i = 0; i < len; i++) {
                h ^= key[i];
                h *= 0x100000001b3ULL;
        }
        return h ^ (h >> 29);
}

size_t ad_buckets_for(uint64_t max_items, size_t min)
{
        size_t n = min;

        while (n < max_items / 2)
                n *= 2;
        return n;
}
