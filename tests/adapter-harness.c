/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network adapters' test harness (see adapter-harness.h). */

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
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
#include <syslog.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adapter-harness.h"
#include "test-util.h"

#define START_TIMEOUT_USEC 10000000   /* a server accepting connections */
#define REPLY_TIMEOUT_SEC 10          /* a client waiting for a server */
#define LOOP_TIMEOUT_USEC 30000000    /* the adapter finishing a refresh or a round */

/* --- a real server ------------------------------------------------------------------------- */

uint16_t ah_free_port(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(fd >= 0);
        cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind: %s", strerror(errno));
        cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
        close(fd);
        return ntohs(a.sin_port);
}

int ah_try_connect(const char *sock, uint16_t port)
{
        struct sockaddr_storage ss = { 0 };
        struct timeval tv = { .tv_sec = REPLY_TIMEOUT_SEC };
        socklen_t len;
        int fd;

        if (sock[0]) {
                struct sockaddr_un *un = (struct sockaddr_un *)&ss;

                un->sun_family = AF_UNIX;
                snprintf(un->sun_path, sizeof(un->sun_path), "%s", sock);
                len = sizeof(*un);
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;

                in->sin_family = AF_INET;
                in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                in->sin_port = htons(port);
                len = sizeof(*in);
        }
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
                int e = errno;

                close(fd);
                errno = e;
                return -1;
        }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        return fd;
}

/*
 * In the child, as root: become nobody before exec, then ask again for the parent-death signal,
 * which a change of credentials clears. memcached's own "-u nobody" changed them after the
 * exec, so a memcached of a test that failed outlived it.
 */
static void drop_to_nobody(void *userdata)
{
        const struct passwd *pw = getpwnam("nobody");
        pid_t parent = *(const pid_t *)userdata;

        if (!pw || setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
            setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(127);
}

bool ah_spawn_server(const char *const *argv, const char *log, bool as_nobody, const char *sock,
                     uint16_t port, pid_t *ret_pid)
{
        uint64_t until;
        pid_t pid;
        int fd;

        if (as_nobody && geteuid() == 0) {
                pid_t parent = getpid();
                int log_fd = open(log, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);

                /* nobody appends its log to the file root made */
                cr_assert(log_fd >= 0 && fchmod(log_fd, 0666) == 0, "%s: %s", log,
                          strerror(errno));
                close(log_fd);
                pid = test_spawn(argv, log, log, drop_to_nobody, &parent);
        } else {
                pid = test_spawn(argv, log, log, NULL, NULL);
        }

        until = test_now_usec() + START_TIMEOUT_USEC;
        while (test_now_usec() < until) {
                fd = ah_try_connect(sock, port);
                if (fd >= 0) {
                        close(fd);
                        *ret_pid = pid;
                        return true;
                }
                if (test_wait_exit(pid, 10000, NULL))
                        return false;
        }
        cr_assert_fail("%s did not accept connections within 10 s:\n%s", argv[0],
                       test_read_file(log));
        return false;
}

/* --- the adapter in this process ----------------------------------------------------------- */

static void host_append(struct host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void host_append(struct host *h, const char *fmt, ...)
{
        va_list ap;
        int n;

        for (;;) {
                va_start(ap, fmt);
                n = vsnprintf(h->log + h->log_len, h->log_cap - h->log_len, fmt, ap);
                va_end(ap);
                if ((size_t)n < h->log_cap - h->log_len)
                        break;
                h->log_cap = h->log_cap * 2 + (size_t)n;
                h->log = realloc(h->log, h->log_cap);
                cr_assert(h->log);
        }
        h->log_len += (size_t)n;
}

static void host_log_cb(void *userdata, int level, const char *msg)
{
        struct host *h = userdata;
        static const char *const names[] = { "EMERG", "ALERT", "CRIT", "ERR", "WARNING",
                                              "NOTICE", "INFO", "DEBUG" };

        host_append(h, "%s: %s\n", names[level & 7], msg);
        if (getenv("CA_TEST_VERBOSE"))
                fprintf(stderr, "# %s: %s\n", names[level & 7], msg);
}

static void host_key_error_cb(void *userdata, const struct ca_section *s, const char *key,
                              const char *msg)
{
        struct host *h = userdata;

        host_append(h, "KEY %s: %s\n", key ? key : "-", msg);
}

static struct event_base *host_base_cb(void *userdata)
{
        return ((struct host *)userdata)->base;
}

static int host_register_cb(void *userdata, const struct ca_section *s, struct ca_cache *cache,
                            const struct ca_cache_hooks *hooks, void *hooks_userdata)
{
        struct host *h = userdata;

        cr_assert(!h->cache, "a second cache");
        h->cache = cache;
        h->hooks = hooks;
        h->hooks_userdata = hooks_userdata;
        return 0;
}

static void host_unregister_cb(void *userdata, struct ca_cache *cache)
{
        struct host *h = userdata;

        if (h->cache == cache)
                h->cache = NULL;
}

static int host_check_only_cb(void *userdata)
{
        return 0;
}

static void host_ready_cb(void *userdata, struct ca_cache *cache, int error)
{
        struct host *h = userdata;

        cr_assert_eq(cache, h->cache);
        cr_assert_eq(error, 0, "the adapter reports its own errors");
        cr_assert(!h->ready, "rotate_ready twice for one refresh");
        h->ready = true;
        h->readies++;
}

static const struct ca_host_ops host_ops = {
        .log = host_log_cb,
        .key_error = host_key_error_cb,
        .event_base = host_base_cb,
        .register_cache = host_register_cb,
        .unregister_cache = host_unregister_cb,
        .check_only = host_check_only_cb,
        .rotate_ready = host_ready_cb,
};

int host_try_setup(struct host *h, const char *adapter, uint32_t single_use_age,
                   uint32_t max_age, const char *const *keys)
{
        struct event_config *cfg;
        const struct ca_params params = { .single_use_age = single_use_age, .max_age = max_age };
        char path[4096], reason[256];
        int r;

        *h = (struct host){ .log_cap = 4096 };
        h->log = malloc(h->log_cap);
        cr_assert(h->log);
        h->log[0] = '\0';
        /* As the daemon's: writes to a closed socket fail, they do not kill. */
        signal(SIGPIPE, SIG_IGN);
        /* The daemon's loop: three priorities, a poll after each lowest-priority callback. */
        cfg = event_config_new();
        cr_assert(cfg);
        event_config_set_max_dispatch_interval(cfg, NULL, 1, 2);
        h->base = event_base_new_with_config(cfg);
        event_config_free(cfg);
        cr_assert(h->base && event_base_priority_init(h->base, 3) == 0);

        snprintf(path, sizeof(path), "%s/%s.so", test_env("CA_ADAPTER_DIR"), adapter);
        h->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        cr_assert(h->dl, "dlopen %s: %s", path, dlerror());
        h->plugin = dlsym(h->dl, CA_PLUGIN_SYMBOL);
        cr_assert(h->plugin);
        cr_assert_eq(ca_plugin_check(h->plugin, adapter, reason, sizeof(reason)), 0, "%s",
                     reason);

        for (; keys && keys[0]; keys += 2) {
                cr_assert(h->n_keys < ELEMENTSOF(h->keys) && keys[1]);
                h->keys[h->n_keys++] = (struct ca_section_key){ keys[0], keys[1] };
        }
        h->section = (struct ca_section){ .name = "test", .keys = h->keys, .n_keys = h->n_keys };
        h->h = (struct ca_host){ .ops = &host_ops, .userdata = h };
        r = h->plugin->create(&h->h, &h->section, &h->instance);
        if (r < 0)
                return r;
        cr_assert(h->cache && h->hooks && h->hooks->before_rotate && h->hooks->after_age);
        cr_assert_eq(ca_cache_set_params(h->cache, &params), 0);
        return 0;
}

void host_setup(struct host *h, const char *adapter, uint32_t single_use_age, uint32_t max_age,
                const char *const *keys)
{
        int r = host_try_setup(h, adapter, single_use_age, max_age, keys);

        cr_assert_eq(r, 0, "create: %s\n%s", strerror(-r), h->log);
}

void host_cleanup(struct host *h)
{
        if (h->plugin && h->instance)
                h->plugin->destroy(h->instance);
        cr_expect(!h->cache, "destroy did not unregister its cache");
        if (h->dl)
                dlclose(h->dl);
        if (h->base)
                event_base_free(h->base);
        free(h->log);
        *h = (struct host){ 0 };
}

void host_run_for(struct host *h, unsigned ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        event_base_loopexit(h->base, &tv);
        event_base_dispatch(h->base);
}

/* Run the loop until @cond, for at most LOOP_TIMEOUT_USEC. */
static bool host_run_until(struct host *h, bool (*cond)(struct host *))
{
        uint64_t until = test_now_usec() + LOOP_TIMEOUT_USEC;

        while (!cond(h)) {
                if (test_now_usec() >= until)
                        return false;
                host_run_for(h, 5);
        }
        return true;
}

static bool host_is_ready(struct host *h)
{
        return h->ready;
}

void host_refresh(struct host *h)
{
        int r;

        h->ready = false;
        r = h->hooks->before_rotate(h->cache, h->hooks_userdata);
        cr_assert_eq(r, CA_ROTATE_LATER, "before_rotate answered %d", r);
        cr_assert(host_run_until(h, host_is_ready), "no rotate_ready within 30 s\n%s", h->log);
}

/* Whether the adapter has a statistic @name: its value in *ret. */
static bool host_stat_opt(struct host *h, const char *name, uint64_t *ret);

/* The deletes settled, and (an adapter that says so) nothing asked of the server any more. */
static bool host_round_done(struct host *h)
{
        uint64_t in_flight;

        return host_stat(h, "round_victims") == 0 &&
               (!host_stat_opt(h, "requests_in_flight", &in_flight) || in_flight == 0);
}

void host_age(struct host *h)
{
        size_t pending;

        ca_cache_rotate(h->cache);
        do {
                pending = ca_cache_age(h->cache, 0, ca_now_usec() + 2000);
                h->hooks->after_age(h->cache, h->hooks_userdata);
                host_run_for(h, 0);
        } while (pending > 0);
        cr_assert(host_run_until(h, host_round_done), "the deletes did not settle within 30 s\n%s",
                  h->log);
}

void host_rotate(struct host *h)
{
        host_refresh(h);
        host_age(h);
}

struct stat_find {
        const char *name;
        uint64_t value;
        bool found;
};

static void stat_emit(void *userdata, const struct ca_adapter_stat *stat, uint64_t value)
{
        struct stat_find *f = userdata;
        char reason[256];

        cr_assert_eq(ca_adapter_stat_check(stat, reason, sizeof(reason)), 0, "%s", reason);
        if (strcmp(stat->name, f->name) == 0) {
                f->value = value;
                f->found = true;
        }
}

static bool host_stat_opt(struct host *h, const char *name, uint64_t *ret)
{
        struct stat_find f = { .name = name };

        h->hooks->stats(h->cache, h->hooks_userdata, stat_emit, &f);
        *ret = f.value;
        return f.found;
}

uint64_t host_stat(struct host *h, const char *name)
{
        uint64_t v;

        cr_assert(host_stat_opt(h, name, &v), "no statistic %s", name);
        return v;
}

size_t host_log_count(const struct host *h, const char *needle)
{
        size_t n = 0;

        for (const char *p = h->log; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* --- servers in threads: listening, and a stop pipe ---------------------------------------- */

static int listen_any(uint16_t *ret_port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(fd >= 0);
        cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
        cr_assert(listen(fd, 8) == 0);
        cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
        *ret_port = ntohs(a.sin_port);
        return fd;
}

/* Wait for @fd to be readable, or the stop pipe: false when told to stop. */
static bool wait_readable(int fd, int stop_fd)
{
        struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };

        for (;;) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return false;
                }
                if (p[1].revents)
                        return false;
                if (p[0].revents)
                        return true;
        }
}

static void write_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t r = send(fd, s, n, MSG_NOSIGNAL);

                if (r <= 0)
                        return;
                s += r;
                n -= (size_t)r;
        }
}

/* --- requests in words --------------------------------------------------------------------- */

size_t fake_frame_line(const char *buf, size_t len, char *out, size_t out_max)
{
        const char *eol = memmem(buf, len, "\r\n", 2);

        if (!eol)
                return 0;
        snprintf(out, out_max, "%.*s", (int)(eol - buf), buf);
        return (size_t)(eol + 2 - buf);
}

/* --- a fake server ------------------------------------------------------------------------- */

/* The rule for @words, under the lock: its index, or -1. */
static int fake_match(struct fake *f, const char *line)
{
        for (size_t i = 0; i < f->n_rules; i++) {
                const struct fake_rule *r = &f->rules[i];

                if (r->times && f->used[i] >= r->times)
                        continue;
                if (strncmp(line, r->prefix, strlen(r->prefix)) == 0) {
                        f->used[i]++;
                        return (int)i;
                }
        }
        return -1;
}

/*
 * Send @len bytes of @data to @fd, a byte each @trickle_ms when that is not 0: false when told
 * to stop; *ret_gone when the client went away (a send that fails).
 */
static bool fake_send(struct fake *f, int fd, const char *data, size_t len, unsigned trickle_ms,
                      bool *ret_gone)
{
        size_t off = 0;

        while (off < len) {
                struct pollfd p[2] = { { .fd = f->stop_pipe[0], .events = POLLIN },
                                       { .fd = fd, .events = POLLOUT } };
                ssize_t n;

                /* The pause, or a wait for room in the socket; either way, a stop ends it. */
                if (poll(p, trickle_ms ? 1 : 2, trickle_ms ? (int)trickle_ms : -1) < 0 &&
                    errno != EINTR)
                        return false;
                if (p[0].revents)
                        return false;
                n = send(fd, data + off, trickle_ms ? 1 : len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n < 0) {
                        *ret_gone = true;
                        return true;
                }
                off += (size_t)n;
        }
        return true;
}

/* Serve one connection: false when told to stop. */
static bool fake_serve(struct fake *f, int fd)
{
        static char buf[1 << 16];
        char words[4096];
        size_t len = 0, n;

        for (;;) {
                ssize_t r;

                if (!wait_readable(fd, f->stop_pipe[0]))
                        return false;
                r = read(fd, buf + len, sizeof(buf) - len);
                if (r <= 0)
                        return true;
                len += (size_t)r;
                while ((n = f->framer(buf, len, words, sizeof(words))) > 0) {
                        struct fake_rule rule = { 0 };
                        int i;

                        pthread_mutex_lock(&f->lock);
                        i = fake_match(f, words);
                        if (i >= 0)
                                rule = f->rules[i];
                        pthread_mutex_unlock(&f->lock);
                        len -= n;
                        memmove(buf, buf + n, len);
                        if (i < 0 || rule.silent)
                                continue;
                        if (!rule.reply)
                                return true;
                        if (!rule.trickle_ms && !rule.forever) {
                                write_all(fd, rule.reply,
                                          rule.reply_len ? rule.reply_len : strlen(rule.reply));
                                continue;
                        }
                        do {
                                bool gone = false;

                                if (!fake_send(f, fd, rule.reply,
                                               rule.reply_len ? rule.reply_len : strlen(rule.reply),
                                               rule.trickle_ms, &gone))
                                        return false;
                                if (gone)
                                        return true;
                        } while (rule.forever);
                }
                if (len == sizeof(buf))
                        len = 0; /* a request longer than the buffer: dropped */
        }
}

static void *fake_thread(void *userdata)
{
        struct fake *f = userdata;

        while (wait_readable(f->lfd, f->stop_pipe[0])) {
                int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
                bool go_on;

                if (fd < 0)
                        continue;
                pthread_mutex_lock(&f->lock);
                f->connections++;
                pthread_mutex_unlock(&f->lock);
                go_on = fake_serve(f, fd);
                close(fd);
                if (!go_on)
                        break;
        }
        return NULL;
}

void fake_start(struct fake *f, ah_framer_t framer)
{
        *f = (struct fake){ .lfd = -1, .framer = framer };
        pthread_mutex_init(&f->lock, NULL);
        f->lfd = listen_any(&f->port);
        cr_assert(pipe2(f->stop_pipe, O_CLOEXEC) == 0);
        snprintf(f->server, sizeof(f->server), "127.0.0.1:%u", f->port);
        cr_assert(pthread_create(&f->thread, NULL, fake_thread, f) == 0);
}

void fake_script(struct fake *f, const struct fake_rule *rules, size_t n)
{
        cr_assert(n <= ELEMENTSOF(f->rules));
        pthread_mutex_lock(&f->lock);
        for (size_t i = 0; i < n; i++) {
                f->rules[i] = rules[i];
                f->used[i] = 0;
        }
        f->n_rules = n;
        pthread_mutex_unlock(&f->lock);
}

void fake_stop(struct fake *f)
{
        cr_assert(write(f->stop_pipe[1], "x", 1) == 1);
        pthread_join(f->thread, NULL);
        close(f->lfd);
        close(f->stop_pipe[0]);
        close(f->stop_pipe[1]);
        pthread_mutex_destroy(&f->lock);
}

/* --- a proxy that can hold a request ------------------------------------------------------- */

/* Forward the whole requests of @buf that may go; keep the rest. */
static void proxy_forward(struct proxy *p, int to, char *buf, size_t *len)
{
        char words[512];
        size_t done = 0;

        for (;;) {
                size_t n = p->framer(buf + done, *len - done, words, sizeof(words));
                bool hold;

                if (n == 0)
                        break;
                pthread_mutex_lock(&p->lock);
                hold = !p->release && p->hold(words);
                if (hold && !p->held) {
                        snprintf(p->held_line, sizeof(p->held_line), "%s", words);
                        p->held = true;
                }
                pthread_mutex_unlock(&p->lock);
                if (hold)
                        break; /* this request and what follows wait for proxy_release() */
                write_all(to, buf + done, n);
                done += n;
        }
        memmove(buf, buf + done, *len - done);
        *len -= done;
}

static int proxy_upstream(const struct proxy *p)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                 .sin_port = htons(p->upstream_port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

/* Serve one client: false when told to stop. */
static bool proxy_serve(struct proxy *p, int client)
{
        static char cbuf[1 << 20];
        char sbuf[65536];
        size_t clen = 0;
        int server = proxy_upstream(p);
        bool go_on = true;

        if (server < 0)
                return true;
        for (;;) {
                struct pollfd fds[3] = { { .fd = client, .events = POLLIN },
                                         { .fd = server, .events = POLLIN },
                                         { .fd = p->stop_pipe[0], .events = POLLIN } };
                ssize_t r;

                /* Held bytes are looked at again every 10 ms, for a release. */
                if (poll(fds, 3, 10) < 0 && errno != EINTR)
                        break;
                if (fds[2].revents) {
                        go_on = false;
                        break;
                }
                if (fds[0].revents) {
                        r = read(client, cbuf + clen, sizeof(cbuf) - clen);
                        if (r <= 0)
                                break;
                        clen += (size_t)r;
                }
                if (fds[1].revents) {
                        r = read(server, sbuf, sizeof(sbuf));
                        if (r <= 0)
                                break;
                        write_all(client, sbuf, (size_t)r);
                }
                proxy_forward(p, server, cbuf, &clen);
        }
        close(server);
        return go_on;
}

static void *proxy_thread(void *userdata)
{
        struct proxy *p = userdata;

        while (wait_readable(p->lfd, p->stop_pipe[0])) {
                int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
                bool go_on;

                if (fd < 0)
                        continue;
                go_on = proxy_serve(p, fd);
                close(fd);
                if (!go_on)
                        break;
        }
        return NULL;
}

void proxy_start(struct proxy *p, uint16_t upstream_port, ah_framer_t framer,
                 bool (*hold)(const char *request))
{
        *p = (struct proxy){ .lfd = -1, .upstream_port = upstream_port, .framer = framer,
                             .hold = hold };
        pthread_mutex_init(&p->lock, NULL);
        p->lfd = listen_any(&p->port);
        cr_assert(pipe2(p->stop_pipe, O_CLOEXEC) == 0);
        snprintf(p->server, sizeof(p->server), "127.0.0.1:%u", p->port);
        cr_assert(pthread_create(&p->thread, NULL, proxy_thread, p) == 0);
}

const char *proxy_wait_held(struct proxy *p, int timeout_ms)
{
        uint64_t until = test_now_usec() + (uint64_t)timeout_ms * 1000;

        for (;;) {
                bool held;

                pthread_mutex_lock(&p->lock);
                held = p->held;
                pthread_mutex_unlock(&p->lock);
                if (held)
                        return p->held_line;
                if (test_now_usec() >= until)
                        return NULL;
                usleep(10000);
        }
}

void proxy_release(struct proxy *p)
{
        pthread_mutex_lock(&p->lock);
        p->release = true;
        pthread_mutex_unlock(&p->lock);
}

void proxy_stop(struct proxy *p)
{
        cr_assert(write(p->stop_pipe[1], "x", 1) == 1);
        pthread_join(p->thread, NULL);
        close(p->lfd);
        close(p->stop_pipe[0]);
        close(p->stop_pipe[1]);
        pthread_mutex_destroy(&p->lock);
}
