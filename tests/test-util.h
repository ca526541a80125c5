/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the tests share: time, the environment meson gives them, files, temporary directories,
 * child processes, waiting for a condition, a NOTIFY_SOCKET peer, and a cacheaged run with
 * --bus none under such a peer. Compiled into each test that needs it (tests/meson.build).
 *
 * Every helper asserts (cr_assert) on what it cannot do, with the reason, so that a test reads
 * as its steps; where a failure must not stop the cleanup that follows, it expects
 * (cr_expect) instead, as said. Waits take generous timeouts and poll: the machine running
 * the tests may be loaded, and nothing here assumes its speed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* test_cmp_u64() - qsort()'s comparison of two uint64_t, ascending. */
int test_cmp_u64(const void *a, const void *b);

/*
 * test_skip() - cr_skip_test() after running @fini, the test's own .fini: Criterion (2.4.1)
 * runs no .fini after a skip, and a test that skips mid-way would leave its daemon, its busy
 * loops, its memory cgroups and its trees behind for every later run.
 */
#define test_skip(fini, ...)                                                                       \
        do {                                                                                       \
                fini();                                                                            \
                cr_skip_test(__VA_ARGS__);                                                         \
        } while (0)

/* --- time ---------------------------------------------------------------------------------- */

uint64_t test_now_usec(void);      /* CLOCK_MONOTONIC */
uint64_t test_realtime_usec(void); /* CLOCK_REALTIME */

/* --- the environment ----------------------------------------------------------------------- */

/* test_env() - the variable @name, which meson sets (asserted). */
const char *test_env(const char *name);

/* --- files and directories ----------------------------------------------------------------- */

/* test_write_file() - @path holds the formatted text, and only it. */
void test_write_file(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* test_write_data() - @path holds the @len bytes of @data (NUL bytes too). */
void test_write_data(const char *path, const void *data, size_t len);

/* test_read_file() - the whole file, malloc()ed; "" when it cannot be read. */
char *test_read_file(const char *path);

/* test_path_join() - "@dir/@name", malloc()ed. */
char *test_path_join(const char *dir, const char *name);

/* test_copy_file() - @from copied to @to (created or truncated), then chmod()ed to @mode. */
void test_copy_file(const char *from, const char *to, mode_t mode);

/*
 * test_mkdtemp() - a new directory /tmp/@prefix-XXXXXX, mode 0755 so that an unprivileged
 * peer may reach what the test puts there; malloc()ed. Always under /tmp: a socket path must
 * stay short, and the trust checks walk a known root-owned, sticky parent.
 */
char *test_mkdtemp(const char *prefix);

/*
 * test_rm_rf() - remove @path and everything below it, following no symlink; kept when
 * CA_TEST_KEEP is set (to look at after a failure). Expects (not asserts) success.
 */
void test_rm_rf(const char *path);

/* --- processes ----------------------------------------------------------------------------- */

/*
 * test_spawn() - fork and exec @argv (searched in PATH) with stdout to @out_path and stderr to
 * @err_path (the same file when equal; NULL leaves the stream as it is). In the child,
 * @setup(@userdata) runs first when not NULL (to set the environment, say).
 */
pid_t test_spawn(const char *const argv[], const char *out_path, const char *err_path,
                 void (*setup)(void *userdata), void *userdata);

/* test_wait_exit() - wait up to @timeout_usec for @pid to exit: true and its wait status. */
bool test_wait_exit(pid_t pid, uint64_t timeout_usec, int *ret_status);

/*
 * test_stop() - SIGTERM to @pid and wait up to @timeout_usec; SIGKILL after that, which
 * fails the test (expected, not asserted). Returns the wait status.
 */
int test_stop(pid_t pid, uint64_t timeout_usec);

/* test_kill() - SIGKILL and reap @pid, whatever it was doing. Returns the wait status. */
int test_kill(pid_t pid);

/*
 * test_expect_no_sanitizer_report() - the log at @path (a child's stderr) must hold no
 * AddressSanitizer, LeakSanitizer or UndefinedBehaviorSanitizer report: the ASan build checks
 * the memory of the programs the tests run, not only their own.
 */
void test_expect_no_sanitizer_report(const char *path);

/* --- waiting ------------------------------------------------------------------------------- */

/*
 * test_wait_until() - call @cond(@userdata) every 10 ms until it returns true (then true) or
 * @timeout_usec passed (false).
 */
bool test_wait_until(bool (*cond)(void *userdata), void *userdata, uint64_t timeout_usec);

/* --- a NOTIFY_SOCKET peer (the service manager's side of sd_notify) ------------------------ */

#define TEST_NOTIFY_MSGS_MAX 4096

struct test_notify {
        char path[108];                        /* the socket, for NOTIFY_SOCKET */
        int fd;
        char *msgs[TEST_NOTIFY_MSGS_MAX];      /* every datagram received, in order */
        size_t n_msgs;
};

/* test_notify_open() - a datagram socket @dir/notify to receive notifications on. */
void test_notify_open(struct test_notify *n, const char *dir);
void test_notify_close(struct test_notify *n);

/* test_notify_recv() - receive one datagram within @timeout_ms; false on timeout. */
bool test_notify_recv(struct test_notify *n, int timeout_ms);

/* test_notify_drain_for() - keep receiving for @timeout_ms. */
void test_notify_drain_for(struct test_notify *n, int timeout_ms);

/*
 * test_notify_wait() - a datagram after the @from-th with a line starting with @prefix, as
 * it arrives: its index, or -1 after @timeout_ms.
 */
ssize_t test_notify_wait(struct test_notify *n, size_t from, const char *prefix, int timeout_ms);

/* test_msg_line() - the line of datagram @msg that starts with @prefix, or NULL. */
const char *test_msg_line(const char *msg, const char *prefix);

/* --- cacheaged with --bus none, under a NOTIFY_SOCKET the test owns ------------------------ */

/*
 * One daemon run: a temporary directory holding its configuration, its stdout and stderr and
 * the notify socket. Environment: CACHEAGED (the binary).
 */
struct test_daemon {
        char *dir;
        char *conf;          /* @dir/cacheaged.conf, for the test to write */
        char *err, *out;     /* the daemon's stderr and stdout */
        struct test_notify notify;
        const char *plugin_dir; /* CACHEAGED_PLUGIN_DIR for the next start (NULL: unset) */
        pid_t pid;
        int status;          /* wait status once exited */
        bool exited;
        char *log;           /* test_daemon_log()'s last read */
};

/* The figures of a STATUS= notification. */
struct test_status {
        unsigned long caches;
        unsigned long long objects, reclaimed, deferred;
};

void test_daemon_setup(struct test_daemon *d);

/* test_daemon_cleanup() - kill it if it runs, remove its directory, free everything. */
void test_daemon_cleanup(struct test_daemon *d);

/*
 * test_daemon_spawn() - start the daemon with @args (after the binary, NULL-terminated), with
 * WATCHDOG_USEC=@watchdog_usec (0: unset) and CACHEAGED_PSI_DIR=@psi_dir (NULL: unset).
 */
void test_daemon_spawn(struct test_daemon *d, uint64_t watchdog_usec, const char *psi_dir,
                       const char *const *args);

/*
 * test_daemon_start() - start it on d->conf, --bus none, debug log. Rotations are gated on
 * PSI and the machine running the tests may well be busy: unless @psi_dir names other
 * pressure files, the daemon reads idle fake ones (test_write_psi()).
 */
void test_daemon_start(struct test_daemon *d, uint64_t watchdog_usec, const char *psi_dir);

/* test_daemon_start_ready() - test_daemon_start(), then READY=1 within 10 s (asserted). */
void test_daemon_start_ready(struct test_daemon *d, uint64_t watchdog_usec, const char *psi_dir);

/* test_daemon_run_to_exit() - run it to completion (an error, --check-config): exit code. */
int test_daemon_run_to_exit(struct test_daemon *d, const char *const *args);

/* test_daemon_stop() - SIGTERM: STOPPING=1, exit 0, clean stderr. Returns the time it took, ms. */
uint64_t test_daemon_stop(struct test_daemon *d);

/* test_daemon_log() - its stderr so far (valid until the next call or the cleanup). */
const char *test_daemon_log(struct test_daemon *d);

/* test_daemon_out() - its stdout so far (same lifetime as test_daemon_log()). */
const char *test_daemon_out(struct test_daemon *d);

/*
 * test_daemon_wait_log() - wait up to @timeout_ms for @needle in its stderr, past its first
 * @from bytes (what was there before the step the test waits on): found or not.
 */
bool test_daemon_wait_log(struct test_daemon *d, size_t from, const char *needle,
                          int timeout_ms);

/* test_daemon_wait_msg() - test_notify_wait() on its notifications. */
ssize_t test_daemon_wait_msg(struct test_daemon *d, size_t from, const char *prefix,
                             int timeout_ms);

/*
 * test_daemon_wait_status() - a STATUS= after the @from-th notification for which
 * @pred(status, @arg) holds: its index (and the figures in *ret when not NULL), or -1.
 */
ssize_t test_daemon_wait_status(struct test_daemon *d, size_t from, int timeout_ms,
                                bool (*pred)(const struct test_status *, const void *),
                                const void *arg, struct test_status *ret);

/* Predicates for test_daemon_wait_status(). */
bool test_status_any(const struct test_status *st, const void *arg);
bool test_status_objects_at_least(const struct test_status *st, const void *arg); /* u64 */
bool test_status_caches_are(const struct test_status *st, const void *arg);       /* ulong */
bool test_status_reclaimed(const struct test_status *st, const void *arg);
bool test_status_deferred(const struct test_status *st, const void *arg);

/*
 * test_write_psi() - fake /proc/pressure files in @dir: cpu and memory with "some avg10="
 * @cpu and @mem percent.
 */
void test_write_psi(const char *dir, double cpu, double mem);
