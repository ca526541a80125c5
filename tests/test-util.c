/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tests' shared helpers (see test-util.h). */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
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

#include <criterion/criterion.h>

#include "test-util.h"

#define WAIT_POLL_USEC 10000 /* between two looks at a condition */

/* --- time ---------------------------------------------------------------------------------- */

static uint64_t clock_usec(clockid_t clock)
{
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int test_cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

uint64_t test_now_usec(void)
{
        return clock_usec(CLOCK_MONOTONIC);
}

uint64_t test_realtime_usec(void)
{
        return clock_usec(CLOCK_REALTIME);
}

/* --- the environment ----------------------------------------------------------------------- */

const char *test_env(const char *name)
{
        const char *v = getenv(name);

        cr_assert(v && *v, "%s is not set: run this test through meson", name);
        return v;
}

/* --- files and directories ----------------------------------------------------------------- */

void test_write_file(const char *path, const char *fmt, ...)
{
        FILE *f = fopen(path, "we");
        va_list ap;

        cr_assert(f, "cannot write %s: %s", path, strerror(errno));
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        cr_assert(fclose(f) == 0, "cannot write %s: %s", path, strerror(errno));
}

void test_write_data(const char *path, const void *data, size_t len)
{
        FILE *f = fopen(path, "we");

        cr_assert(f, "cannot write %s: %s", path, strerror(errno));
        cr_assert_eq(fwrite(data, 1, len, f), len);
        cr_assert(fclose(f) == 0, "cannot write %s: %s", path, strerror(errno));
}

char *test_read_file(const char *path)
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
        cr_assert(buf);
        return buf;
}

char *test_path_join(const char *dir, const char *name)
{
        char *p;

        cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
        return p;
}

char *test_mkdtemp(const char *prefix)
{
        char *p;

        cr_assert(asprintf(&p, "/tmp/%s-XXXXXX", prefix) > 0);
        cr_assert(mkdtemp(p), "mkdtemp %s: %s", p, strerror(errno));
        cr_assert(chmod(p, 0755) == 0);
        return p;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path);
}

void test_rm_rf(const char *path)
{
        if (!path || getenv("CA_TEST_KEEP"))
                return;
        cr_expect(nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0, "cannot remove %s: %s",
                  path, strerror(errno));
}

/* --- processes ----------------------------------------------------------------------------- */

static void redirect(const char *path, int fd)
{
        int f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

        if (f >= 0)
                dup2(f, fd);
}

pid_t test_spawn(const char *const argv[], const char *out_path, const char *err_path,
                 void (*setup)(void *userdata), void *userdata)
{
        pid_t parent, pid;

        /* truncated here, appended to there: one file may take both streams */
        if (out_path)
                close(open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (err_path)
                close(open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        parent = getpid();
        pid = fork();
        cr_assert(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
                /* A failed assertion ends the test's process without its teardown: the daemon or
                 * dbus-daemon it started must not outlive it, spinning on a machine of 2 cores. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                        _exit(127);
                /* The TSan build's shim (tests/meson.build) is for Criterion's own process: its
                 * rand_r() keeps dbus-daemon from starting, and nothing started here needs it. */
                if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "tsan-criterion-shim"))
                        unsetenv("LD_PRELOAD");
                if (setup)
                        setup(userdata);
                if (out_path)
                        redirect(out_path, STDOUT_FILENO);
                if (err_path)
                        redirect(err_path, STDERR_FILENO);
                execvp(argv[0], (char *const *)argv);
                _exit(127);
        }
        return pid;
}

bool test_wait_exit(pid_t pid, uint64_t timeout_usec, int *ret_status)
{
        uint64_t until = test_now_usec() + timeout_usec;
        int status;

        for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);

                if (r == pid) {
                        if (ret_status)
                                *ret_status = status;
                        return true;
                }
                cr_assert(r == 0, "waitpid %d: %s", (int)pid, strerror(errno));
                if (test_now_usec() >= until)
                        return false;
                usleep(WAIT_POLL_USEC);
        }
}

int test_kill(pid_t pid)
{
        int status = 0;

        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return status;
}

int test_stop(pid_t pid, uint64_t timeout_usec)
{
        int status = 0;

        kill(pid, SIGTERM);
        if (test_wait_exit(pid, timeout_usec, &status))
                return status;
        cr_expect_fail("process %d did not stop within %" PRIu64 " s of SIGTERM", (int)pid,
                       timeout_usec / 1000000);
        return test_kill(pid);
}

void test_expect_no_sanitizer_report(const char *path)
{
        char *log = test_read_file(path);

        cr_expect(!strstr(log, "Sanitizer") && !strstr(log, "runtime error:"),
                  "sanitizer report in %s:\n%s", path, log);
        free(log);
}

void test_copy_file(const char *from, const char *to, mode_t mode)
{
        char buf[65536];
        int in = open(from, O_RDONLY | O_CLOEXEC), out;
        ssize_t n;

        cr_assert(in >= 0, "%s: %s", from, strerror(errno));
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        cr_assert(out >= 0, "%s: %s", to, strerror(errno));
        while ((n = read(in, buf, sizeof(buf))) > 0)
                cr_assert(write(out, buf, (size_t)n) == n);
        close(in);
        close(out);
        cr_assert(chmod(to, mode) == 0);
}

/* --- waiting ------------------------------------------------------------------------------- */

bool test_wait_until(bool (*cond)(void *userdata), void *userdata, uint64_t timeout_usec)
{
        uint64_t until = test_now_usec() + timeout_usec;

        while (!cond(userdata)) {
                if (test_now_usec() >= until)
                        return false;
                usleep(WAIT_POLL_USEC);
        }
        return true;
}

/* --- a NOTIFY_SOCKET peer ------------------------------------------------------------------ */

void test_notify_open(struct test_notify *n, const char *dir)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *n = (struct test_notify){ .fd = -1 };
        cr_assert((size_t)snprintf(n->path, sizeof(n->path), "%s/notify", dir) <
                          sizeof(sa.sun_path),
                  "%s/notify: too long for a socket", dir);
        strcpy(sa.sun_path, n->path);
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        cr_assert(n->fd >= 0);
        cr_assert(bind(n->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", n->path,
                  strerror(errno));
}

void test_notify_close(struct test_notify *n)
{
        for (size_t i = 0; i < n->n_msgs; i++)
                free(n->msgs[i]);
        n->n_msgs = 0;
        if (n->fd >= 0)
                close(n->fd);
        n->fd = -1;
}

bool test_notify_recv(struct test_notify *n, int timeout_ms)
{
        struct pollfd p = { .fd = n->fd, .events = POLLIN };
        char buf[4096];
        ssize_t len;

        if (poll(&p, 1, timeout_ms) <= 0)
                return false;
        len = recv(n->fd, buf, sizeof(buf) - 1, 0);
        if (len < 0)
                return false;
        buf[len] = '\0';
        if (n->n_msgs < TEST_NOTIFY_MSGS_MAX) {
                n->msgs[n->n_msgs] = strdup(buf);
                cr_assert(n->msgs[n->n_msgs]);
                n->n_msgs++;
        }
        return true;
}

void test_notify_drain_for(struct test_notify *n, int timeout_ms)
{
        uint64_t end = test_now_usec() + (uint64_t)timeout_ms * 1000;

        for (uint64_t now; (now = test_now_usec()) < end;)
                test_notify_recv(n, (int)((end - now + 999) / 1000));
}

const char *test_msg_line(const char *msg, const char *prefix)
{
        size_t len = strlen(prefix);

        for (const char *l = msg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, prefix, len) == 0)
                        return l;
        return NULL;
}

ssize_t test_notify_wait(struct test_notify *n, size_t from, const char *prefix, int timeout_ms)
{
        uint64_t end = test_now_usec() + (uint64_t)timeout_ms * 1000;

        for (size_t i = from;; i++) {
                while (i >= n->n_msgs) {
                        uint64_t now = test_now_usec();

                        if (now >= end || !test_notify_recv(n, (int)((end - now + 999) / 1000)))
                                return -1;
                }
                if (test_msg_line(n->msgs[i], prefix))
                        return (ssize_t)i;
        }
}

/* --- cacheaged with --bus none ------------------------------------------------------------- */

void test_daemon_setup(struct test_daemon *d)
{
        *d = (struct test_daemon){ .pid = -1 };
        d->dir = test_mkdtemp("cacheaged-test");
        d->conf = test_path_join(d->dir, "cacheaged.conf");
        d->err = test_path_join(d->dir, "stderr");
        d->out = test_path_join(d->dir, "stdout");
        test_notify_open(&d->notify, d->dir);
}

void test_daemon_cleanup(struct test_daemon *d)
{
        if (d->pid > 0 && !d->exited) {
                d->status = test_kill(d->pid);
                d->exited = true;
        }
        test_notify_close(&d->notify);
        test_rm_rf(d->dir);
        free(d->dir);
        free(d->conf);
        free(d->err);
        free(d->out);
        free(d->log);
        *d = (struct test_daemon){ .pid = -1 };
}

struct daemon_env {
        const struct test_daemon *d;
        uint64_t watchdog_usec;
        const char *psi_dir;
};

static void set_or_unset(const char *name, const char *value)
{
        if (value)
                setenv(name, value, 1);
        else
                unsetenv(name);
}

/* In the child: what the service manager would give it, and nothing from our environment. */
static void daemon_child_env(void *userdata)
{
        const struct daemon_env *e = userdata;
        char wd[32];

        snprintf(wd, sizeof(wd), "%" PRIu64, e->watchdog_usec);
        setenv("NOTIFY_SOCKET", e->d->notify.path, 1);
        unsetenv("WATCHDOG_PID");
        unsetenv("JOURNAL_STREAM");
        set_or_unset("WATCHDOG_USEC", e->watchdog_usec ? wd : NULL);
        set_or_unset("CACHEAGED_PLUGIN_DIR", e->d->plugin_dir);
        set_or_unset("CACHEAGED_PSI_DIR", e->psi_dir);
}

void test_daemon_spawn(struct test_daemon *d, uint64_t watchdog_usec, const char *psi_dir,
                       const char *const *args)
{
        const char *argv[16] = { test_env("CACHEAGED") };
        struct daemon_env e = { .d = d, .watchdog_usec = watchdog_usec, .psi_dir = psi_dir };
        size_t n = 1;

        for (; args && *args; args++) {
                cr_assert(n < ELEMENTSOF(argv) - 1, "too many arguments");
                argv[n++] = *args;
        }
        argv[n] = NULL;
        d->exited = false;
        d->pid = test_spawn(argv, d->out, d->err, daemon_child_env, &e);
}

void test_daemon_start(struct test_daemon *d, uint64_t watchdog_usec, const char *psi_dir)
{
        const char *args[] = { "--config", d->conf, "--bus", "none", "--log-level", "debug",
                               NULL };
        char *idle = NULL;

        if (!psi_dir) {
                idle = test_path_join(d->dir, "psi");
                if (mkdir(idle, 0755) == 0)
                        test_write_psi(idle, 0, 0);
                psi_dir = idle;
        }
        test_daemon_spawn(d, watchdog_usec, psi_dir, args);
        free(idle);
}

void test_daemon_start_ready(struct test_daemon *d, uint64_t watchdog_usec, const char *psi_dir)
{
        test_daemon_start(d, watchdog_usec, psi_dir);
        cr_assert(test_daemon_wait_msg(d, 0, "READY=1", 10000) >= 0, "no READY=1 within 10 s\n%s",
                  test_daemon_log(d));
}

int test_daemon_run_to_exit(struct test_daemon *d, const char *const *args)
{
        test_daemon_spawn(d, 0, NULL, args);
        cr_assert(test_wait_exit(d->pid, 10000000, &d->status), "the daemon did not exit");
        d->exited = true;
        test_expect_no_sanitizer_report(d->err);
        cr_assert(WIFEXITED(d->status), "the daemon died: wait status %d", d->status);
        return WEXITSTATUS(d->status);
}

uint64_t test_daemon_stop(struct test_daemon *d)
{
        size_t from = d->notify.n_msgs;
        uint64_t t0 = test_now_usec();

        cr_assert(kill(d->pid, SIGTERM) == 0);
        cr_assert(test_daemon_wait_msg(d, from, "STOPPING=1", 5000) >= 0, "no STOPPING=1\n%s",
                  test_daemon_log(d));
        cr_assert(test_wait_exit(d->pid, 5000000, &d->status),
                  "the daemon did not exit within 5 s of SIGTERM");
        d->exited = true;
        cr_assert(WIFEXITED(d->status) && WEXITSTATUS(d->status) == 0, "exit status %d\n%s",
                  d->status, test_daemon_log(d));
        test_expect_no_sanitizer_report(d->err);
        return (test_now_usec() - t0) / 1000;
}

const char *test_daemon_log(struct test_daemon *d)
{
        free(d->log);
        d->log = test_read_file(d->err);
        return d->log;
}

const char *test_daemon_out(struct test_daemon *d)
{
        free(d->log);
        d->log = test_read_file(d->out);
        return d->log;
}

struct log_wait {
        struct test_daemon *d;
        size_t from;
        const char *needle;
};

static bool log_has(void *userdata)
{
        const struct log_wait *w = userdata;
        const char *log;

        /*
         * Keep reading its notifications meanwhile: a unix datagram queue holds only
         * net.unix.max_dgram_qlen (10) messages, then sd_notify() blocks the daemon's loop.
         */
        while (test_notify_recv(&w->d->notify, 0))
                ;
        log = test_daemon_log(w->d);

        return strlen(log) > w->from && strstr(log + w->from, w->needle);
}

bool test_daemon_wait_log(struct test_daemon *d, size_t from, const char *needle,
                          int timeout_ms)
{
        struct log_wait w = { .d = d, .from = from, .needle = needle };

        return test_wait_until(log_has, &w, (uint64_t)timeout_ms * 1000);
}

ssize_t test_daemon_wait_msg(struct test_daemon *d, size_t from, const char *prefix,
                             int timeout_ms)
{
        return test_notify_wait(&d->notify, from, prefix, timeout_ms);
}

static bool parse_status(const char *msg, struct test_status *st)
{
        const char *l = test_msg_line(msg, "STATUS=");
        const char *dfr;

        if (!l)
                return false;
        *st = (struct test_status){ 0 };
        /* "1 cache, 1 object" or "2 caches, 5 objects": the words are skipped. */
        if (sscanf(l, "STATUS=%lu %*s %llu %*s %llu reclaimed", &st->caches, &st->objects,
                   &st->reclaimed) != 3)
                return false;
        dfr = strstr(l, "reclaimed in the last rotations, ");
        if (dfr)
                sscanf(dfr, "reclaimed in the last rotations, %llu rotation",
                       &st->deferred);
        return true;
}

ssize_t test_daemon_wait_status(struct test_daemon *d, size_t from, int timeout_ms,
                                bool (*pred)(const struct test_status *, const void *),
                                const void *arg, struct test_status *ret)
{
        uint64_t end = test_now_usec() + (uint64_t)timeout_ms * 1000;
        struct test_status st;
        ssize_t i = (ssize_t)from - 1;

        for (;;) {
                uint64_t now = test_now_usec();

                if (now >= end)
                        return -1;
                i = test_daemon_wait_msg(d, (size_t)(i + 1), "STATUS=",
                                         (int)((end - now + 999) / 1000));
                if (i < 0)
                        return -1;
                if (parse_status(d->notify.msgs[i], &st) && pred(&st, arg)) {
                        if (ret)
                                *ret = st;
                        return i;
                }
        }
}

bool test_status_any(const struct test_status *st, const void *arg)
{
        return true;
}

bool test_status_objects_at_least(const struct test_status *st, const void *arg)
{
        return st->objects >= *(const unsigned long long *)arg;
}

bool test_status_caches_are(const struct test_status *st, const void *arg)
{
        return st->caches == *(const unsigned long *)arg;
}

bool test_status_reclaimed(const struct test_status *st, const void *arg)
{
        return st->reclaimed > 0;
}

bool test_status_deferred(const struct test_status *st, const void *arg)
{
        return st->deferred > 0;
}

#define PSI_FORMAT                                                                        \
        "some avg10=%.2f avg60=0.00 avg300=0.00 total=1\n"                                 \
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

void test_write_psi(const char *dir, double cpu, double mem)
{
        char *path;

        path = test_path_join(dir, "cpu");
        test_write_file(path, PSI_FORMAT, cpu);
        free(path);
        path = test_path_join(dir, "memory");
        test_write_file(path, PSI_FORMAT, mem);
        free(path);
}
