/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheaged for real: each test starts the built daemon with --bus none, a configuration
 * written into a temporary directory, and a NOTIFY_SOCKET datagram socket that the test
 * owns, and checks what the daemon tells the service manager (READY=1, STATUS=, WATCHDOG=1,
 * RELOADING=1, STOPPING=1), its exit status and its log. A daemon's stderr that holds a
 * sanitizer report fails the test, so the ASan build checks the daemon's own memory.
 *
 * The PSI parser (daemon/psi.c) is tested directly on fake files.
 *
 * Environment (from tests/meson.build): CACHEAGED (the binary), CA_TEST_PLUGIN_DIR (the
 * test plugins: testcache.so, badabi.so), CA_ADAPTER_DIR (the real adapters), CA_TEST_SRCDIR.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "psi.h"

#define MSGS_MAX 4096

/* CACHEAGED_PLUGIN_DIR for the next daemon started (NULL: unset). */
static const char *spawn_plugin_dir;

struct daemon {
        char dir[64];
        char conf[128];
        char err[128];
        char out[128];
        int notify_fd;
        pid_t pid;
        int status;          /* wait status once exited */
        bool exited;
        char *msgs[MSGS_MAX]; /* every notification datagram, in order */
        size_t n_msgs;
};

static uint64_t now_msec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *env(const char *name)
{
        const char *v = getenv(name);

        cr_assert(v && *v, "%s is not set: run this test through meson", name);
        return v;
}

/* The tests keep their configuration templates in tables, so the format is not a literal. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void write_file(const char *path, const char *fmt, ...)
{
        va_list ap;
        FILE *f = fopen(path, "we");

        cr_assert(f, "cannot write %s: %s", path, strerror(errno));
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        cr_assert(fclose(f) == 0);
}
#pragma GCC diagnostic pop

static char *read_file(const char *path)
{
        static char buf[1 << 20];
        size_t n;
        FILE *f = fopen(path, "re");

        if (!f)
                return strcpy(buf, "");
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static void daemon_setup(struct daemon *d)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        memset(d, 0, sizeof(*d));
        d->pid = -1;
        strcpy(d->dir, "/tmp/cacheaged-test-XXXXXX");
        cr_assert(mkdtemp(d->dir));
        snprintf(d->conf, sizeof(d->conf), "%s/cacheaged.conf", d->dir);
        snprintf(d->err, sizeof(d->err), "%s/stderr", d->dir);
        snprintf(d->out, sizeof(d->out), "%s/stdout", d->dir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", d->dir);
        d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        cr_assert(d->notify_fd >= 0);
        cr_assert(bind(d->notify_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
}

/* Start the daemon with @args (NULL-terminated, after the binary) and @watchdog_usec. */
static void daemon_spawn(struct daemon *d, uint64_t watchdog_usec, const char *psi_dir,
                         const char *const *args)
{
        const char *argv[16] = { env("CACHEAGED") };
        size_t n = 1;

        for (; args && *args && n < 15; args++)
                argv[n++] = *args;
        argv[n] = NULL;

        d->pid = fork();
        cr_assert(d->pid >= 0);
        if (d->pid == 0) {
                char sock[128], wd[32];
                int fd;

                snprintf(sock, sizeof(sock), "%s/notify", d->dir);
                setenv("NOTIFY_SOCKET", sock, 1);
                unsetenv("WATCHDOG_PID");
                unsetenv("JOURNAL_STREAM");
                if (spawn_plugin_dir)
                        setenv("CACHEAGED_PLUGIN_DIR", spawn_plugin_dir, 1);
                else
                        unsetenv("CACHEAGED_PLUGIN_DIR");
                if (watchdog_usec) {
                        snprintf(wd, sizeof(wd), "%" PRIu64, watchdog_usec);
                        setenv("WATCHDOG_USEC", wd, 1);
                } else {
                        unsetenv("WATCHDOG_USEC");
                }
                if (psi_dir)
                        setenv("CACHEAGED_PSI_DIR", psi_dir, 1);
                else
                        unsetenv("CACHEAGED_PSI_DIR");
                fd = open(d->err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                dup2(fd, STDERR_FILENO);
                fd = open(d->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                dup2(fd, STDOUT_FILENO);
                execv(argv[0], (char **)argv);
                _exit(127);
        }
}

static void write_psi(const char *dir, double cpu, double mem);

/*
 * Start the daemon on d->conf. Rotations are gated on PSI, and the machine running the
 * tests may well be busy: unless a test says otherwise (@psi_dir), the daemon reads idle
 * fake pressure files.
 */
static void daemon_start(struct daemon *d, uint64_t watchdog_usec, const char *psi_dir)
{
        const char *args[] = { "--config", d->conf, "--bus", "none", "--log-level", "debug",
                               NULL };
        char idle[128];

        if (!psi_dir) {
                snprintf(idle, sizeof(idle), "%s/psi", d->dir);
                if (mkdir(idle, 0755) == 0)
                        write_psi(idle, 0, 0);
                psi_dir = idle;
        }
        daemon_spawn(d, watchdog_usec, psi_dir, args);
}

/* Receive datagrams for up to @timeout_ms; returns false on timeout. */
static bool daemon_recv(struct daemon *d, int timeout_ms)
{
        struct pollfd p = { .fd = d->notify_fd, .events = POLLIN };
        char buf[4096];
        ssize_t n;

        if (poll(&p, 1, timeout_ms) <= 0)
                return false;
        n = recv(d->notify_fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return false;
        buf[n] = '\0';
        if (d->n_msgs < MSGS_MAX)
                d->msgs[d->n_msgs++] = strdup(buf);
        return true;
}

/* A line of datagram @msg that starts with @prefix, or NULL. */
static const char *msg_line(const char *msg, const char *prefix)
{
        size_t len = strlen(prefix);

        for (const char *l = msg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, prefix, len) == 0)
                        return l;
        return NULL;
}

/*
 * Wait for a new datagram (after the @from-th) with a line starting with @prefix; returns its
 * index or -1 after @timeout_ms.
 */
static ssize_t daemon_wait_msg(struct daemon *d, size_t from, const char *prefix, int timeout_ms)
{
        uint64_t end = now_msec() + (uint64_t)timeout_ms;

        for (size_t i = from;; i++) {
                while (i >= d->n_msgs) {
                        uint64_t now = now_msec();

                        if (now >= end || !daemon_recv(d, (int)(end - now)))
                                return -1;
                }
                if (msg_line(d->msgs[i], prefix))
                        return (ssize_t)i;
        }
}

struct status {
        unsigned long caches;
        unsigned long long objects, reclaimed, deferred;
};

static bool parse_status(const char *msg, struct status *st)
{
        const char *l = msg_line(msg, "STATUS=");
        const char *dfr;

        if (!l)
                return false;
        memset(st, 0, sizeof(*st));
        if (sscanf(l, "STATUS=%lu caches, %llu objects, %llu reclaimed", &st->caches,
                   &st->objects, &st->reclaimed) != 3)
                return false;
        dfr = strstr(l, "reclaimed in the last rotations, ");
        if (dfr)
                sscanf(dfr, "reclaimed in the last rotations, %llu rotations deferred",
                       &st->deferred);
        return true;
}

/* Wait for a STATUS= for which @pred holds; returns its index or -1. */
static ssize_t daemon_wait_status(struct daemon *d, size_t from, int timeout_ms,
                                  bool (*pred)(const struct status *, const void *),
                                  const void *arg, struct status *ret)
{
        uint64_t end = now_msec() + (uint64_t)timeout_ms;
        struct status st;
        ssize_t i = (ssize_t)from - 1;

        for (;;) {
                uint64_t now = now_msec();

                if (now >= end)
                        return -1;
                i = daemon_wait_msg(d, (size_t)(i + 1), "STATUS=", (int)(end - now));
                if (i < 0)
                        return -1;
                if (parse_status(d->msgs[i], &st) && pred(&st, arg)) {
                        if (ret)
                                *ret = st;
                        return i;
                }
        }
}

static bool daemon_wait_exit(struct daemon *d, int timeout_ms)
{
        uint64_t end = now_msec() + (uint64_t)timeout_ms;

        while (!d->exited) {
                pid_t r = waitpid(d->pid, &d->status, WNOHANG);

                if (r == d->pid) {
                        d->exited = true;
                        break;
                }
                if (now_msec() >= end)
                        return false;
                usleep(5000);
        }
        return true;
}

/* The daemon's stderr must hold no sanitizer report, whatever the test checked. */
static void assert_no_sanitizer_report(struct daemon *d)
{
        const char *log = read_file(d->err);

        cr_assert(!strstr(log, "AddressSanitizer") && !strstr(log, "LeakSanitizer") &&
                          !strstr(log, "runtime error:"),
                  "sanitizer report in the daemon's stderr:\n%s", log);
}

static void daemon_cleanup(struct daemon *d)
{
        char path[160];

        if (d->pid > 0 && !d->exited) {
                kill(d->pid, SIGKILL);
                waitpid(d->pid, &d->status, 0);
                d->exited = true;
        }
        for (size_t i = 0; i < d->n_msgs; i++)
                free(d->msgs[i]);
        d->n_msgs = 0;
        close(d->notify_fd);
        const char *files[] = { "notify", "stderr", "stdout", "cacheaged.conf", "psi/cpu",
                                "psi/memory", "psi" };
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", d->dir, files[i]);
                if (unlink(path) < 0)
                        rmdir(path);
        }
        rmdir(d->dir);
}

/* SIGTERM: STOPPING=1, exit 0, clean stderr. Returns the time to exit, in ms. */
static uint64_t daemon_stop(struct daemon *d)
{
        size_t from = d->n_msgs;
        uint64_t t0 = now_msec(), dt;

        cr_assert(kill(d->pid, SIGTERM) == 0);
        cr_assert(daemon_wait_msg(d, from, "STOPPING=1", 5000) >= 0, "no STOPPING=1\n%s",
                  read_file(d->err));
        cr_assert(daemon_wait_exit(d, 5000), "the daemon did not exit within 5 s of SIGTERM");
        dt = now_msec() - t0;
        cr_assert(WIFEXITED(d->status) && WEXITSTATUS(d->status) == 0,
                  "exit status %d\n%s", d->status, read_file(d->err));
        assert_no_sanitizer_report(d);
        return dt;
}

/* Run the daemon to completion (a start-up error or --check-config): its exit code. */
static int daemon_run_to_exit(struct daemon *d, const char *const *args)
{
        daemon_spawn(d, 0, NULL, args);
        cr_assert(daemon_wait_exit(d, 10000), "the daemon did not exit");
        assert_no_sanitizer_report(d);
        cr_assert(WIFEXITED(d->status), "the daemon died: wait status %d", d->status);
        return WEXITSTATUS(d->status);
}

static bool status_objects_at_least(const struct status *st, const void *arg)
{
        return st->objects >= *(const unsigned long long *)arg;
}

static bool status_caches_are(const struct status *st, const void *arg)
{
        return st->caches == *(const unsigned long *)arg;
}

static bool status_any(const struct status *st, const void *arg)
{
        return true;
}

static bool status_reclaimed(const struct status *st, const void *arg)
{
        return st->reclaimed > 0;
}

static bool status_deferred(const struct status *st, const void *arg)
{
        return st->deferred > 0;
}

/* ------------------------------------------------------------------------------------------ */

Test(daemon, ready_status_stop)
{
        struct daemon d;
        struct status first, st;
        ssize_t i, j;
        uint64_t ms;

        daemon_setup(&d);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                   "[cache t]\nadapter = testcache\nadd = 100\n",
                   env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, NULL);

        i = daemon_wait_msg(&d, 0, "READY=1", 2000);
        cr_assert(i >= 0, "no READY=1 within 2 s\n%s", read_file(&d.err[0]));
        i = daemon_wait_status(&d, 0, 2000, status_any, NULL, &first);
        cr_assert(i >= 0);
        /* Objects come and go with rotations: single-use ones are reclaimed. */
        unsigned long long want = 100;
        j = daemon_wait_status(&d, (size_t)i + 1, 5000, status_objects_at_least, &want, &st);
        cr_assert(j > i, "STATUS= did not change as rotations happened");
        cr_assert_eq(st.caches, 1);
        cr_assert_neq(st.objects, first.objects);
        /*
         * Steady state: 100 added before each rotation, each reclaimed single_use_age (2)
         * epochs after it was added, that is at the next rotation.
         */
        j = daemon_wait_status(&d, (size_t)j + 1, 5000, status_reclaimed, NULL, &st);
        cr_assert(j > 0, "nothing reclaimed");
        cr_assert(st.objects <= 200, "single-use objects are not reclaimed: %llu", st.objects);

        ms = daemon_stop(&d);
        cr_log_info("SIGTERM to exit: %" PRIu64 " ms", ms);
        fprintf(stderr, "# SIGTERM to exit: %" PRIu64 " ms\n", ms);
        daemon_cleanup(&d);
}

Test(daemon, watchdog)
{
        struct daemon d;
        size_t pings = 0;
        uint64_t end;

        daemon_setup(&d);
        write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n",
                   env("CA_TEST_PLUGIN_DIR"));
        /* WATCHDOG_USEC 400 ms: a ping every 200 ms, so about 10 in 2 s. */
        daemon_start(&d, 400000, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0);
        end = now_msec() + 2000;
        while (now_msec() < end)
                daemon_recv(&d, (int)(end - now_msec()));
        for (size_t i = 0; i < d.n_msgs; i++)
                pings += msg_line(d.msgs[i], "WATCHDOG=1") != NULL;
        fprintf(stderr, "# watchdog pings in ~2 s at WATCHDOG_USEC=400ms: %zu\n", pings);
        cr_assert(pings >= 4 && pings <= 25, "%zu watchdog pings", pings);
        daemon_stop(&d);
        daemon_cleanup(&d);
}

Test(daemon, no_watchdog_without_watchdog_usec)
{
        struct daemon d;
        uint64_t end;

        daemon_setup(&d);
        write_file(d.conf, "[daemon]\nplugin_dir = %s\n", env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0);
        end = now_msec() + 500;
        while (now_msec() < end)
                daemon_recv(&d, (int)(end - now_msec()));
        for (size_t i = 0; i < d.n_msgs; i++)
                cr_assert(!msg_line(d.msgs[i], "WATCHDOG=1"));
        daemon_stop(&d);
        daemon_cleanup(&d);
}

/* A disabled cache is loaded but never rotated: its timer is off. */
Test(daemon, disabled_cache_not_rotated)
{
        unsigned long long some = 300;
        struct status st;
        struct daemon d;

        daemon_setup(&d);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 50ms\n"
                   "[cache on]\nadapter = testcache\nadd = 100\nreuse = 100000\n"
                   "[cache off]\nadapter = testcache\nadd = 100000\nenabled = no\n",
                   env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, NULL);
        /* Only "on" adds objects (100 a rotation, all kept): "off" would add 100000 at once. */
        cr_assert(daemon_wait_status(&d, 0, 5000, status_objects_at_least, &some, &st) >= 0);
        cr_assert_eq(st.caches, 2);
        cr_assert(st.objects < 100000, "the disabled cache rotated: %llu objects", st.objects);
        cr_assert(!strstr(read_file(d.err), "off: rotation"), "%s", read_file(d.err));
        daemon_stop(&d);
        daemon_cleanup(&d);
}

static const char good_reload_conf[] = "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                                       "[cache t]\nadapter = testcache\nadd = 500\n"
                                       "reuse = 500\nlimit = 500\n";

Test(daemon, reload)
{
        unsigned long long full = 500;
        unsigned long two = 2, three = 3;
        struct status st;
        struct daemon d;
        ssize_t i, r;

        daemon_setup(&d);
        /* 500 objects, all reused every rotation: the count stays 500 once filled. */
        write_file(d.conf, good_reload_conf, env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0);
        i = daemon_wait_status(&d, 0, 5000, status_objects_at_least, &full, &st);
        cr_assert(i >= 0, "the cache did not fill\n%s", read_file(d.err));

        /*
         * Broken configurations: a bad daemon value (the parser refuses the file), then an
         * unknown adapter key and a missing plugin (the file parses; the plugins refuse).
         */
        static const struct {
                const char *conf;
                const char *errors[3];
        } broken[] = {
                { "[daemon]\nplugin_dir = %s\ninterval = 100ms\nslice_budget = many\n"
                  "[cache t]\nadapter = testcache\nadd = 500\nreuse = 500\nlimit = 500\n",
                  { "cacheaged.conf:4: slice_budget", NULL } },
                { "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                  "[cache t]\nadapter = testcache\nadd = 500\nreuse = 500\nlimit = 500\n"
                  "colour = blue\n[cache n]\nadapter = nosuch\n",
                  { "cacheaged.conf:9: colour: unknown key",
                    "cacheaged.conf:10: [cache n]: no plugin for adapter 'nosuch'", NULL } },
        };
        for (size_t k = 0; k < sizeof(broken) / sizeof(broken[0]); k++) {
                write_file(d.conf, broken[k].conf, env("CA_TEST_PLUGIN_DIR"));
                cr_assert(kill(d.pid, SIGHUP) == 0);
                r = daemon_wait_msg(&d, (size_t)i + 1, "RELOADING=1", 5000);
                cr_assert(r >= 0, "no RELOADING=1");
                cr_assert(msg_line(d.msgs[r], "MONOTONIC_USEC="),
                          "RELOADING=1 without MONOTONIC_USEC");
                r = daemon_wait_msg(&d, (size_t)r + 1, "READY=1", 5000);
                cr_assert(r >= 0, "no READY=1 after a failed reload");
                i = daemon_wait_status(&d, (size_t)r, 2000, status_any, NULL, &st);
                cr_assert(i >= 0);
                cr_assert_eq(st.caches, 1);
                cr_assert_eq(st.objects, 500,
                             "the caches changed on a failed reload: %llu objects", st.objects);
                cr_assert(waitpid(d.pid, &d.status, WNOHANG) == 0,
                          "the daemon died on a bad reload");
                /* Every error listed (before READY=1), each with its line. */
                const char *log = read_file(d.err);
                for (const char *const *e = broken[k].errors; *e; e++)
                        cr_assert(strstr(log, *e), "'%s' not in:\n%s", *e,
                                  strlen(log) > 1500 ? log + strlen(log) - 1500 : log);
        }

        /* A good one: a second cache appears; the first is kept with its objects. */
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                   "[cache t]\nadapter = testcache\nadd = 500\nreuse = 500\nlimit = 500\n"
                   "single_use_age = 3\n"
                   "[cache u]\nadapter = testcache\nadd = 10\n",
                   env("CA_TEST_PLUGIN_DIR"));
        cr_assert(kill(d.pid, SIGHUP) == 0);
        r = daemon_wait_msg(&d, (size_t)i + 1, "RELOADING=1", 5000);
        cr_assert(r >= 0);
        r = daemon_wait_msg(&d, (size_t)r + 1, "READY=1", 5000);
        cr_assert(r >= 0);
        i = daemon_wait_status(&d, (size_t)r, 2000, status_caches_are, &two, &st);
        cr_assert(i >= 0, "the new cache did not appear\n%s", read_file(d.err));
        cr_assert(st.objects >= 500, "the kept cache lost objects: %llu", st.objects);

        /* Another adapter key: the cache is recreated (and says so); a third one is added. */
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                   "[cache t]\nadapter = testcache\nadd = 400\nreuse = 400\nlimit = 400\n"
                   "[cache u]\nadapter = testcache\nadd = 10\n"
                   "[cache v]\nadapter = testcache\nadd = 10\n",
                   env("CA_TEST_PLUGIN_DIR"));
        cr_assert(kill(d.pid, SIGHUP) == 0);
        i = daemon_wait_status(&d, (size_t)i + 1, 5000, status_caches_are, &three, &st);
        cr_assert(i >= 0);
        cr_assert(strstr(read_file(d.err), "t: adapter or its keys changed, cache recreated"));

        daemon_stop(&d);
        daemon_cleanup(&d);
}

/*
 * Reloads more frequent than a cache's interval must not postpone its rotations: a kept cache
 * whose interval did not change keeps its timer running.
 */
Test(daemon, frequent_reloads_keep_rotating)
{
        size_t rotations = 0;
        struct daemon d;
        const char *log;
        uint64_t end;

        daemon_setup(&d);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 400ms\n"
                   "[cache t]\nadapter = testcache\nadd = 10\n",
                   env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0, "%s", read_file(d.err));
        /* A reload every 150 ms for 2.4 s (six intervals), reading what it notifies. */
        end = now_msec() + 2400;
        while (now_msec() < end) {
                uint64_t next = now_msec() + 150;

                cr_assert(kill(d.pid, SIGHUP) == 0);
                while (now_msec() < next)
                        daemon_recv(&d, (int)(next - now_msec()));
        }
        daemon_stop(&d);
        log = read_file(d.err);
        for (const char *p = log; (p = strstr(p, "t: rotation,")); p++)
                rotations++;
        fprintf(stderr, "# rotations in 2.4 s of reloads every 150 ms, interval 400 ms: %zu\n",
                rotations);
        cr_assert(strstr(log, "Configuration reloaded"), "%s", log);
        cr_assert(rotations >= 3, "reloads postponed the rotations: %zu in 2.4 s\n%s", rotations,
                  strlen(log) > 1500 ? log + strlen(log) - 1500 : log);
        daemon_cleanup(&d);
}

/* A configuration file that another user may write is said (and used: a warning, not an outage). */
Test(daemon, config_writable_by_others_warned)
{
        char dropins[160], dropin[192], want[256];
        struct daemon d;

        daemon_setup(&d);
        write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n",
                   env("CA_TEST_PLUGIN_DIR"));
        snprintf(dropins, sizeof(dropins), "%s.d", d.conf);
        snprintf(dropin, sizeof(dropin), "%s/10-more.conf", dropins);
        cr_assert(mkdir(dropins, 0755) == 0);
        write_file(dropin, "[cache t]\nadd = 5\n");
        cr_assert(chmod(d.conf, 0644) == 0 && chmod(dropin, 0646) == 0);
        daemon_start(&d, 0, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0, "%s", read_file(d.err));
        daemon_stop(&d);
        snprintf(want, sizeof(want), "%s is writable by everyone; using it anyway", dropin);
        cr_assert(strstr(read_file(d.err), want), "%s", read_file(d.err));
        cr_assert(!strstr(read_file(d.err), "cacheaged.conf is writable"), "%s",
                  read_file(d.err));
        unlink(dropin);
        rmdir(dropins);
        daemon_cleanup(&d);
}

static void assert_start_fails(const char *conf_fmt, const char *dir, const char *const *needles)
{
        const char *args[8] = { "--config", NULL, "--bus", "none", NULL };
        struct daemon d;
        const char *log;

        daemon_setup(&d);
        args[1] = d.conf;
        write_file(d.conf, conf_fmt, dir);
        cr_assert_eq(daemon_run_to_exit(&d, args), 1);
        log = read_file(d.err);
        for (; *needles; needles++)
                cr_assert(strstr(log, *needles), "'%s' not in:\n%s", *needles, log);
        /* Refused at start: never ready. */
        for (size_t i = 0; i < d.n_msgs; i++)
                cr_assert(!msg_line(d.msgs[i], "READY=1"));
        daemon_recv(&d, 0);
        cr_assert(d.n_msgs == 0 || !msg_line(d.msgs[0], "READY=1"));
        daemon_cleanup(&d);
}

Test(daemon, plugin_wrong_abi)
{
        char path[512];

        snprintf(path, sizeof(path), "Failed to load plugin %s/badabi.so: ABI 1, expected 2",
                 env("CA_TEST_PLUGIN_DIR"));
        assert_start_fails("[daemon]\nplugin_dir = %s\n[cache old]\nadapter = badabi\n",
                           env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){ path, "cacheaged.conf:3", NULL });
}

static void copy_file(const char *from, const char *to, mode_t mode)
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

/*
 * The daemon runs as root and runs what it loads: a plugin that someone else may write, or
 * in a directory someone else may write, is refused, also through a symlink.
 */
Test(daemon, plugin_writable_by_others)
{
        char dir[] = "/tmp/cacheaged-plugins-XXXXXX", link_dir[] = "/tmp/cacheaged-link-XXXXXX";
        char so[128], link[128], src[512], want[256];

        cr_assert(mkdtemp(dir) && mkdtemp(link_dir));
        cr_assert(chmod(dir, 0755) == 0 && chmod(link_dir, 0755) == 0);
        snprintf(so, sizeof(so), "%s/testcache.so", dir);
        snprintf(src, sizeof(src), "%s/testcache.so", env("CA_TEST_PLUGIN_DIR"));
        snprintf(link, sizeof(link), "%s/testcache.so", link_dir);
        cr_assert(symlink(so, link) == 0);
        static const char conf[] = "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n";

        /* A good copy loads (the check refuses nothing it should not). */
        copy_file(src, so, 0755);
        {
                const char *args[] = { "--config", NULL, "--check-config", NULL };
                struct daemon d;

                daemon_setup(&d);
                args[1] = d.conf;
                write_file(d.conf, conf, link_dir);
                cr_assert_eq(daemon_run_to_exit(&d, args), 0, "%s", read_file(d.err));
                daemon_cleanup(&d);
        }

        cr_assert(chmod(so, 0757) == 0);
        snprintf(want, sizeof(want), "%s is writable by everyone", so);
        assert_start_fails(conf, dir, (const char *[]){ "cacheaged.conf:3: Failed to load plugin",
                                                        want, NULL });
        assert_start_fails(conf, link_dir, (const char *[]){ want, NULL });

        cr_assert(chmod(so, 0755) == 0 && chmod(dir, 0777) == 0);
        snprintf(want, sizeof(want), "%s is writable by everyone", dir);
        assert_start_fails(conf, dir, (const char *[]){ want, NULL });
        assert_start_fails(conf, link_dir, (const char *[]){ want, NULL });

        unlink(link);
        unlink(so);
        rmdir(link_dir);
        rmdir(dir);
}

/*
 * The module is opened once along a path of trusted directories and that very file is
 * loaded: a plugin_dir reached through a directory that another user owns (who could swap a
 * symlink there between a check and dlopen()) is refused, and so is anything but a regular
 * file (a FIFO named like a module used to hang start-up, --check-config and reload).
 */
Test(daemon, plugin_path_untrusted_or_not_a_file)
{
        char top[] = "/tmp/cacheaged-chain-XXXXXX";
        char evil[128], good[128], so[160], link[160], fifo_dir[128], fifo[160], src[512];
        static const char conf[] = "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n";

        cr_assert(mkdtemp(top) && chmod(top, 0755) == 0);
        snprintf(evil, sizeof(evil), "%s/evil", top);
        snprintf(good, sizeof(good), "%s/good", top);
        snprintf(fifo_dir, sizeof(fifo_dir), "%s/fifo", top);
        cr_assert(mkdir(evil, 0755) == 0 && chown(evil, 65534, 65534) == 0);
        cr_assert(mkdir(good, 0755) == 0 && mkdir(fifo_dir, 0755) == 0);
        snprintf(src, sizeof(src), "%s/testcache.so", env("CA_TEST_PLUGIN_DIR"));
        snprintf(so, sizeof(so), "%s/testcache.so", good);
        copy_file(src, so, 0755);
        snprintf(link, sizeof(link), "%s/plugins", evil);
        cr_assert(symlink(good, link) == 0 && lchown(link, 65534, 65534) == 0);
        snprintf(fifo, sizeof(fifo), "%s/testcache.so", fifo_dir);
        cr_assert(mkfifo(fifo, 0644) == 0);

        {
                char want[256];

                snprintf(want, sizeof(want), "%s is owned by uid 65534, not by root", evil);
                assert_start_fails(conf, link, (const char *[]){ "cacheaged.conf:3: Failed to "
                                                                 "load plugin", want, NULL });
        }
        {
                char want[256];

                snprintf(want, sizeof(want), "%s is not a regular file", fifo);
                assert_start_fails(conf, fifo_dir, (const char *[]){ want, NULL });
        }
        /* --check-config says the same, and does not hang either. */
        {
                const char *args[] = { "--config", NULL, "--check-config", NULL };
                struct daemon d;

                daemon_setup(&d);
                args[1] = d.conf;
                write_file(d.conf, conf, fifo_dir);
                cr_assert_eq(daemon_run_to_exit(&d, args), 1);
                cr_assert(strstr(read_file(d.err), "is not a regular file"), "%s",
                          read_file(d.err));
                daemon_cleanup(&d);
        }

        unlink(fifo);
        unlink(link);
        unlink(so);
        rmdir(fifo_dir);
        rmdir(good);
        rmdir(evil);
        rmdir(top);
}

Test(daemon, plugin_missing_file)
{
        assert_start_fails("[daemon]\nplugin_dir = %s/nonexistent\n\n[cache gone]\n"
                           "adapter = testcache\n",
                           env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){ "cacheaged.conf:4: [cache gone]: no plugin for "
                                             "adapter 'testcache'",
                                             "/nonexistent/testcache.so: No such file",
                                             NULL });
}

Test(daemon, unknown_adapter)
{
        assert_start_fails("[daemon]\nplugin_dir = %s\n[cache a]\nadapter = testcache\n"
                           "[cache b]\nadapter = frobnicator\n",
                           env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){ "cacheaged.conf:5: [cache b]: no plugin for "
                                             "adapter 'frobnicator'",
                                             "frobnicator.so", NULL });
}

Test(daemon, check_config)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct daemon d;
        const char *log;

        daemon_setup(&d);
        args[1] = d.conf;
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 30s\n"
                   "[cache a]\nadapter = testcache\nadd = 5\n"
                   "[cache b]\nadapter = testcache\nreuse = 3\n",
                   env("CA_TEST_PLUGIN_DIR"));
        cr_assert_eq(daemon_run_to_exit(&d, args), 0, "%s", read_file(d.err));
        cr_assert(strstr(read_file(d.out), "configuration OK, 2 caches"));
        daemon_cleanup(&d);

        /* Every error at once: the daemon's own, and each plugin's section's. */
        daemon_setup(&d);
        args[1] = d.conf;
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = soon\n"
                   "[cache a]\nadapter = testcache\nadd = lots\n"
                   "[cache b]\nadapter = testcache\nspeed = 3\n"
                   "[cache c]\nadapter = badabi\n",
                   env("CA_TEST_PLUGIN_DIR"));
        cr_assert_eq(daemon_run_to_exit(&d, args), 1);
        log = read_file(d.err);
        cr_assert(strstr(log, "cacheaged.conf:3: interval"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:6: add: invalid number \"lots\""), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:9: speed: unknown key"), "%s", log);
        cr_assert(strstr(log, "ABI 1, expected 2"), "%s", log);
        daemon_cleanup(&d);

        /* The daemon's own keys are good: now every plugin section is checked. */
        daemon_setup(&d);
        args[1] = d.conf;
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\n"
                   "[cache a]\nadapter = testcache\nadd = lots\n"
                   "[cache b]\nadapter = testcache\nspeed = 3\n"
                   "[cache c]\nadapter = badabi\n",
                   env("CA_TEST_PLUGIN_DIR"));
        cr_assert_eq(daemon_run_to_exit(&d, args), 1);
        log = read_file(d.err);
        cr_assert(strstr(log, "cacheaged.conf:5: add: invalid number \"lots\""), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:8: speed: unknown key"), "%s", log);
        cr_assert(strstr(log, "ABI 1, expected 2"), "%s", log);
        daemon_cleanup(&d);
}

static void write_psi(const char *dir, double cpu, double mem)
{
        char path[256];

        snprintf(path, sizeof(path), "%s/cpu", dir);
        write_file(path, "some avg10=%.2f avg60=0.00 avg300=0.00 total=1\n"
                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", cpu);
        snprintf(path, sizeof(path), "%s/memory", dir);
        write_file(path, "some avg10=%.2f avg60=0.00 avg300=0.00 total=1\n"
                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", mem);
}

Test(daemon, idle_gating)
{
        char psi[128], path[160];
        struct status st;
        struct daemon d;
        ssize_t i;

        daemon_setup(&d);
        snprintf(psi, sizeof(psi), "%s/psi", d.dir);
        cr_assert(mkdir(psi, 0755) == 0);
        /* CPU pressure 50% > 20%: every rotation is deferred, but at most 2 in a row. */
        write_psi(psi, 50.0, 0.0);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 100ms\nmax_defer = 2\n"
                   "idle_cpu_pressure = 20\n[cache t]\nadapter = testcache\n",
                   env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, psi);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0);
        i = daemon_wait_status(&d, 0, 5000, status_deferred, NULL, &st);
        cr_assert(i >= 0, "no rotation deferred\n%s", read_file(d.err));
        /* ... and forced after max_defer: rotations still happen, objects still come. */
        unsigned long long some = 1;
        cr_assert(daemon_wait_status(&d, (size_t)i, 5000, status_objects_at_least, &some, &st) >= 0);
        cr_assert(strstr(read_file(d.err), "deferred 2 times already: rotating"));
        daemon_stop(&d);

        for (const char *f = "cpu"; f; f = strcmp(f, "cpu") == 0 ? "memory" : NULL) {
                snprintf(path, sizeof(path), "%s/%s", psi, f);
                unlink(path);
        }
        rmdir(psi);
        daemon_cleanup(&d);
}

Test(daemon, no_psi_no_gating)
{
        unsigned long long some = 1;
        struct daemon d;
        const char *log;

        daemon_setup(&d);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 50ms\n[cache t]\nadapter = testcache\n",
                   env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, "/nonexistent-psi");
        cr_assert(daemon_wait_status(&d, 0, 5000, status_objects_at_least, &some, NULL) >= 0);
        cr_assert(daemon_wait_status(&d, 0, 5000, status_reclaimed, NULL, NULL) >= 0);
        daemon_stop(&d);
        log = read_file(d.err);
        /* Said once, not at every rotation. */
        const char *first = strstr(log, "Pressure stall information unavailable");
        cr_assert(first, "%s", log);
        cr_assert(!strstr(first + 1, "Pressure stall information unavailable"), "%s", log);
        daemon_cleanup(&d);
}

/* ------------------------------------------------------------------------------------------ */
/* The real dcache adapter.                                                                    */

static void require_dcache_adapter(void)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/dcache.so", env("CA_ADAPTER_DIR"));
        if (access(path, R_OK) < 0)
                cr_skip_test("%s not built", path);
}

/*
 * A storm of lookups of unique missing names: every one a single-use negative dentry. The
 * count grows for single_use_age rotations, then levels off, as each rotation reclaims what
 * was added single_use_age rotations before; without aging it would grow by rate * interval
 * each time.
 */
Test(daemon, dcache_storm_levels_off)
{
        unsigned long long counts[256];
        size_t n = 0, from = 0;
        struct status st;
        struct daemon d;
        uint64_t end;
        ssize_t i;

        require_dcache_adapter();
        daemon_setup(&d);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 200ms\n"
                   "[cache storm]\nadapter = dcache\nsource = workload:statstorm\n"
                   "rate = 2000\nsingle_use_age = 4\n",
                   env("CA_ADAPTER_DIR"));
        daemon_start(&d, 0, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0, "%s", read_file(d.err));
        end = now_msec() + 4000;
        while (now_msec() < end && n < 256) {
                i = daemon_wait_status(&d, from, (int)(end - now_msec()), status_any, NULL, &st);
                if (i < 0)
                        break;
                counts[n++] = st.objects;
                from = (size_t)i + 1;
        }
        fprintf(stderr, "# dcache storm, objects per rotation:");
        for (size_t k = 0; k < n; k++)
                fprintf(stderr, " %llu", counts[k]);
        fprintf(stderr, "\n");
        cr_assert(n >= 10, "only %zu rotations in 4 s\n%s", n, read_file(d.err));
        /* It grew for single_use_age (4) rotations ... */
        cr_assert(counts[1] < counts[2] && counts[2] < counts[3] && counts[3] > 600,
                  "no build-up: %llu %llu %llu", counts[1], counts[2], counts[3]);
        /*
         * ... and levelled off: 2000/s for 4 s is 8000 names, but the second half's peak
         * stays within half again of the first half's (a straight line would double).
         */
        unsigned long long peak1 = 0, peak2 = 0;
        for (size_t k = 0; k < n; k++) {
                if (k < n / 2 && counts[k] > peak1)
                        peak1 = counts[k];
                if (k >= n / 2 && counts[k] > peak2)
                        peak2 = counts[k];
        }
        cr_assert(peak2 * 2 < peak1 * 3, "still growing: %llu then %llu", peak1, peak2);
        cr_assert(peak2 < 4000, "%llu dentries for 8000 single-use names", peak2);
        cr_assert(st.reclaimed > 0);
        daemon_stop(&d);
        daemon_cleanup(&d);
}

Test(daemon, dcache_keys_checked)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct daemon d;
        const char *log;

        require_dcache_adapter();
        daemon_setup(&d);
        args[1] = d.conf;
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\n"
                   "[cache a]\nadapter = dcache\nsource = workload:nonsense\nrate = 0\n"
                   "ratio_mode = sideways\nnegative_ratio = 99\ncolour = red\n"
                   "[cache b]\nadapter = dcache\nsource = strace:relative/path\n",
                   env("CA_ADAPTER_DIR"));
        cr_assert_eq(daemon_run_to_exit(&d, args), 1);
        log = read_file(d.err);
        cr_assert(strstr(log, "cacheaged.conf:5: source"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:6: rate"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:7: ratio_mode"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:8: negative_ratio"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:9: colour: unknown key"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:12: source"), "%s", log);
        daemon_cleanup(&d);
}

/* An strace log replayed: once (the feeding stops at its end) and in a loop. */
Test(daemon, dcache_strace_replay)
{
        unsigned long long some = 40;
        struct status st;
        struct daemon d;
        const char *log;
        uint64_t end;

        require_dcache_adapter();
        daemon_setup(&d);
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                   "[cache once]\nadapter = dcache\nsource = strace:%s/fixtures/daemon/ls.strace\n"
                   "max_age = 1000\n"
                   "[cache again]\nadapter = dcache\nsource = strace:%s/fixtures/daemon/ls.strace\n"
                   "loop = yes\nspeed = 10\n",
                   env("CA_ADAPTER_DIR"), env("CA_TEST_SRCDIR"), env("CA_TEST_SRCDIR"));
        daemon_start(&d, 0, NULL);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 2000) >= 0, "%s", read_file(d.err));
        cr_assert(daemon_wait_status(&d, 0, 3000, status_objects_at_least, &some, &st) >= 0,
                  "%s", read_file(d.err));
        end = now_msec() + 3000;
        while (!strstr(read_file(d.err), "once: ") && now_msec() < end)
                usleep(20000);
        usleep(500000);
        daemon_stop(&d);
        log = read_file(d.err);
        cr_assert(strstr(log, "once: ") && strstr(log, "ls.strace: replay finished"), "%s", log);
        cr_assert(!strstr(log, "again: ") || !strstr(strstr(log, "again: "), "replay finished"),
                  "the looping replay ended:\n%s", log);
        daemon_cleanup(&d);
}

/*
 * The log must be a regular file: a FIFO would hang the start (open() waits for a writer),
 * a directory would only fail at the first read. A missing one is said by --check-config.
 */
Test(daemon, dcache_strace_not_a_file)
{
        const char *check[] = { "--config", NULL, "--check-config", NULL };
        char fifo[160], want[256], conf[512];
        struct daemon d;

        require_dcache_adapter();
        daemon_setup(&d);
        snprintf(fifo, sizeof(fifo), "%s/fifo", d.dir);
        cr_assert(mkfifo(fifo, 0600) == 0);
        snprintf(conf, sizeof(conf), "[daemon]\nplugin_dir = %s\n[cache x]\nadapter = dcache\n"
                 "source = strace:%s\n", env("CA_ADAPTER_DIR"), fifo);
        snprintf(want, sizeof(want), "cacheaged.conf:5: source: cannot open %s: not a regular file",
                 fifo);
        assert_start_fails("%s", conf, (const char *[]){ want, NULL });
        unlink(fifo);
        snprintf(conf, sizeof(conf), "[daemon]\nplugin_dir = %s\n[cache x]\nadapter = dcache\n"
                 "source = strace:%s\n", env("CA_ADAPTER_DIR"), d.dir);
        assert_start_fails("%s", conf, (const char *[]){ "cacheaged.conf:5: source: cannot open",
                                                         "Is a directory", NULL });

        check[1] = d.conf;
        write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache x]\nadapter = dcache\n"
                           "source = strace:%s/nonexistent.strace\n",
                   env("CA_ADAPTER_DIR"), d.dir);
        cr_assert_eq(daemon_run_to_exit(&d, check), 1, "%s", read_file(d.err));
        cr_assert(strstr(read_file(d.err), "cacheaged.conf:5: source: cannot open"),
                  "%s", read_file(d.err));
        cr_assert(strstr(read_file(d.err), "No such file"), "%s", read_file(d.err));
        daemon_cleanup(&d);
}

/* The shipped configurations are valid (the demo's plugins found through the variable). */
Test(daemon, shipped_configs_check)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        char path[512];
        struct daemon d;

        require_dcache_adapter();
        spawn_plugin_dir = env("CA_ADAPTER_DIR");
        daemon_setup(&d);
        snprintf(path, sizeof(path), "%s/../conf/demo.conf", env("CA_TEST_SRCDIR"));
        args[1] = path;
        cr_assert_eq(daemon_run_to_exit(&d, args), 0, "%s", read_file(d.err));
        cr_assert(strstr(read_file(d.out), "configuration OK, 2 caches"));
        daemon_cleanup(&d);

        daemon_setup(&d);
        snprintf(path, sizeof(path), "%s/../conf/cacheaged.conf", env("CA_TEST_SRCDIR"));
        args[1] = path;
        cr_assert_eq(daemon_run_to_exit(&d, args), 0, "%s", read_file(d.err));
        daemon_cleanup(&d);
        spawn_plugin_dir = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* The README's example adapter (tests/plugin-example.c): its key table and the host API.      */

/* Wait until the daemon's stderr holds @needle (after @from bytes); false after @timeout_ms. */
static bool daemon_wait_log(struct daemon *d, size_t from, const char *needle, int timeout_ms)
{
        uint64_t end = now_msec() + (uint64_t)timeout_ms;
        const char *log;

        for (;;) {
                log = read_file(d->err);
                if (strlen(log) > from && strstr(log + from, needle))
                        return true;
                if (now_msec() >= end)
                        return false;
                usleep(20000);
        }
}

/* Every bad key of the section at once, each at its line, through the plugin's key table. */
Test(daemon, example_plugin_keys)
{
        assert_start_fails("[daemon]\nplugin_dir = %s\n[cache ex]\nadapter = example\n"
                           "objects = 0\nreused = lots\ncolour = red\ncheck = maybe\n",
                           env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){
                                   "cacheaged.conf:5: objects: 0 out of range (expected "
                                   "1..1000000)",
                                   "cacheaged.conf:6: reused: invalid number \"lots\" "
                                   "(expected a percentage 0..100, e.g. 12.5)",
                                   "cacheaged.conf:7: colour: unknown key (expected objects, "
                                   "reused or check)",
                                   "cacheaged.conf:8: check: invalid boolean \"maybe\"",
                                   NULL });
}

/*
 * ca_host_pressure() gives the adapter the daemon's PSI figures, and ca_host_idle() the
 * daemon's own idle decision: busy while CPU pressure is above idle_cpu_pressure (rotations
 * still run, max_defer = 0), idle once it falls.
 */
Test(daemon, example_plugin_host_api)
{
        char psi[128], path[160];
        struct daemon d;
        size_t mark;

        daemon_setup(&d);
        snprintf(psi, sizeof(psi), "%s/psi", d.dir);
        cr_assert(mkdir(psi, 0755) == 0);
        write_psi(psi, 50.0, 0.0);
        snprintf(path, sizeof(path), "%s/io", psi);
        write_file(path, "some avg10=7.25 avg60=0.00 avg300=0.00 total=1\n"
                         "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        write_file(d.conf,
                   "[daemon]\nplugin_dir = %s\ninterval = 100ms\nmax_defer = 0\n"
                   "idle_cpu_pressure = 20\n[cache ex]\nadapter = example\nobjects = 100\n"
                   "reused = 50\n",
                   env("CA_TEST_PLUGIN_DIR"));
        daemon_start(&d, 0, psi);
        cr_assert(daemon_wait_msg(&d, 0, "READY=1", 5000) >= 0, "%s", read_file(d.err));
        cr_assert(daemon_wait_log(&d, 0, "ex: cpu pressure 50.00%, io pressure 7.25%", 10000),
                  "%s", read_file(d.err));
        cr_assert(daemon_wait_log(&d, 0, "ex: machine busy: check put off", 10000), "%s",
                  read_file(d.err));
        cr_assert(!strstr(read_file(d.err), "ex: check:"), "checked while busy\n%s",
                  read_file(d.err));

        /* Idle now: the check runs, and finds the reused half still there. */
        mark = strlen(read_file(d.err));
        write_psi(psi, 1.0, 0.0);
        cr_assert(daemon_wait_log(&d, mark, "ex: check: 50 live objects", 10000), "%s",
                  read_file(d.err));
        daemon_stop(&d);
        unlink(path);
        daemon_cleanup(&d);
}

/* ------------------------------------------------------------------------------------------ */
/* PSI parsing on fake files.                                                                  */

static double psi_parse(const char *text, int *ret_r)
{
        char path[] = "/tmp/cacheaged-psi-XXXXXX";
        double pct = -1;
        int fd = mkstemp(path);

        cr_assert(fd >= 0);
        cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        close(fd);
        *ret_r = psi_read_some_avg10(path, &pct);
        unlink(path);
        return pct;
}

Test(psi, parse)
{
        int r;

        cr_assert_float_eq(psi_parse("some avg10=12.34 avg60=1.00 avg300=0.00 total=5\n"
                                     "full avg10=99.00 avg60=0.00 avg300=0.00 total=0\n", &r),
                           12.34, 1e-9);
        cr_assert_eq(r, 0);
        /* "full" first (not the kernel's order, but nothing says it cannot be). */
        cr_assert_float_eq(psi_parse("full avg10=99.00 avg60=0 avg300=0 total=0\n"
                                     "some avg10=0.50 avg60=0 avg300=0 total=0\n", &r),
                           0.5, 1e-9);
        cr_assert_eq(r, 0);
        /* No trailing newline. */
        cr_assert_float_eq(psi_parse("some avg10=3.00", &r), 3.0, 1e-9);
        cr_assert_eq(r, 0);
}

Test(psi, malformed)
{
        int r;

        psi_parse("", &r);
        cr_assert_eq(r, -EBADMSG);
        psi_parse("full avg10=1.00 avg60=0 avg300=0 total=0\n", &r);
        cr_assert_eq(r, -EBADMSG);
        /* avg10 of the next line must not be taken for the "some" line's. */
        psi_parse("some avg60=1.00 total=0\nfull avg10=5.00\n", &r);
        cr_assert_eq(r, -EBADMSG);
        psi_parse("some avg10=abc avg60=0\n", &r);
        cr_assert_eq(r, -EBADMSG);
        psi_parse("some avg10=250.00 avg60=0\n", &r);
        cr_assert_eq(r, -EBADMSG);
}

Test(psi, missing)
{
        double pct = 7;

        cr_assert_eq(psi_read_some_avg10("/nonexistent/pressure/cpu", &pct), -ENOENT);
        cr_assert_float_eq(pct, 7, 1e-9, "output written on failure");
}

Test(psi, every_figure)
{
        char path[] = "/tmp/cacheaged-psi-XXXXXX";
        struct ca_psi some = { 0 }, full = { 0 };
        int fd = mkstemp(path);
        static const char text[] = "some avg10=1.50 avg60=2.25 avg300=3.00 total=123456\n"
                                   "full avg10=0.50 avg60=0.75 avg300=1.00 total=789\n";

        cr_assert(fd >= 0);
        cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        close(fd);
        cr_assert_eq(psi_read(path, &some, &full), 0);
        unlink(path);
        cr_expect_float_eq(some.avg10_pct, 1.5, 1e-9);
        cr_expect_float_eq(some.avg60_pct, 2.25, 1e-9);
        cr_expect_float_eq(some.avg300_pct, 3.0, 1e-9);
        cr_expect_eq(some.total_usec, 123456);
        cr_expect_float_eq(full.avg10_pct, 0.5, 1e-9);
        cr_expect_float_eq(full.avg300_pct, 1.0, 1e-9);
        cr_expect_eq(full.total_usec, 789);
}

Test(psi, malformed_figures)
{
        static const char *const bad[] = {
                "some avg10=1.00 avg60=x avg300=0.00 total=1\n",
                "some avg10=1.00 avg60=0 avg300=0 total=-1\n",
                "some avg10=nan avg60=0 avg300=0 total=1\n",
                "some avg10=1.00 avg60=0 avg300=0 total=1\nfull avg60=0\n",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char path[] = "/tmp/cacheaged-psi-XXXXXX";
                struct ca_psi some = { .avg10_pct = 42 };
                int fd = mkstemp(path);

                cr_assert(fd >= 0);
                cr_assert(write(fd, bad[i], strlen(bad[i])) == (ssize_t)strlen(bad[i]));
                close(fd);
                cr_expect_eq(psi_read(path, &some, NULL), -EBADMSG, "%s", bad[i]);
                cr_expect_float_eq(some.avg10_pct, 42, 1e-9, "written on failure: %s", bad[i]);
                unlink(path);
        }
}

/* A directory of the three files, as /proc/pressure; none (no PSI) is -EOPNOTSUPP. */
Test(psi, pressure_directory)
{
        char dir[] = "/tmp/cacheaged-psi-XXXXXX", path[128];
        static const char *const names[] = { "cpu", "memory", "io" };
        struct ca_pressure p;

        cr_assert(mkdtemp(dir));
        for (size_t i = 0; i < 3; i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                write_file(path, "some avg10=%zu.00 avg60=0 avg300=0 total=%zu\n", i + 1, i);
        }
        cr_assert_eq(psi_read_pressure(dir, &p), 0);
        cr_expect_float_eq(p.cpu_some.avg10_pct, 1.0, 1e-9);
        cr_expect_float_eq(p.memory_some.avg10_pct, 2.0, 1e-9);
        cr_expect_float_eq(p.io_some.avg10_pct, 3.0, 1e-9);
        cr_expect_eq(p.io_some.total_usec, 2);
        cr_expect_float_eq(p.cpu_full.avg10_pct, 0.0, 1e-9, "no full line: zero");

        snprintf(path, sizeof(path), "%s/io", dir);
        unlink(path);
        cr_expect_eq(psi_read_pressure(dir, &p), -EOPNOTSUPP);
        for (size_t i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                unlink(path);
        }
        rmdir(dir);
        cr_expect_eq(psi_read_pressure(dir, &p), -EOPNOTSUPP);
}
