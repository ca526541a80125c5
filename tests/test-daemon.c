/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheaged for real: each test starts the built daemon with --bus none, a configuration
 * written into a temporary directory, and a NOTIFY_SOCKET datagram socket that the test
 * owns, and checks what the daemon tells the service manager (READY=1, STATUS=, WATCHDOG=1,
 * RELOADING=1, STOPPING=1), its exit status and its log. A daemon's stderr that holds a
 * sanitizer report fails the test, so the ASan build checks the daemon's own memory. The
 * harness is test-util's (test_daemon_*); PSI and the idle gating are in test-psi.c.
 *
 * Environment (from tests/meson.build): CACHEAGED (the binary), CA_TEST_PLUGIN_DIR (the
 * test plugins: testcache.so, badabi.so), CA_ADAPTER_DIR (the real adapters), CA_TEST_SRCDIR.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cacheage-build.h" /* CA_CONFIG_FILE */
#include "cacheage/plugin.h"
#include "test-util.h"


/* How the daemon refuses tests/plugin-badabi.c, built for the ABI before this one. */
static const char *abi_refused(void)
{
        static char buf[64];

        snprintf(buf, sizeof(buf), "ABI %d, expected %d", CA_PLUGIN_ABI - 1, CA_PLUGIN_ABI);
        return buf;
}

/* The tests keep their configuration templates in tables: a format that is not a literal. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void write_conf(const char *path, const char *template, const char *dir)
{
        test_write_file(path, template, dir);
}
#pragma GCC diagnostic pop

/* ------------------------------------------------------------------------------------------ */

Test(daemon, ready_status_stop)
{
        struct test_daemon d;
        struct test_status first, st;
        const char *status;
        ssize_t i, j;
        uint64_t ms;

        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                        "[cache t]\nadapter = testcache\nadd = 100\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start(&d, 0, NULL);

        i = test_daemon_wait_msg(&d, 0, "READY=1", 2000);
        cr_assert(i >= 0, "no READY=1 within 2 s\n%s", test_daemon_log(&d));
        i = test_daemon_wait_status(&d, 0, 2000, test_status_any, NULL, &first);
        cr_assert(i >= 0);
        /* One cache is said in the singular, in the log and in STATUS= (issue 25). */
        cr_assert(strstr(test_daemon_log(&d), "Started, 1 cache\n"), "%s", test_daemon_log(&d));
        status = test_msg_line(d.notify.msgs[i], "STATUS=");
        cr_assert(status && strncmp(status, "STATUS=1 cache, ", 16) == 0, "%s", d.notify.msgs[i]);
        /* Objects come and go with rotations: single-use ones are reclaimed. */
        unsigned long long want = 100;
        j = test_daemon_wait_status(&d, (size_t)i + 1, 5000, test_status_objects_at_least, &want, &st);
        cr_assert(j > i, "STATUS= did not change as rotations happened");
        cr_assert_eq(st.caches, 1);
        cr_assert_neq(st.objects, first.objects);
        /*
         * Steady state: 100 added before each rotation, each reclaimed single_use_age (2)
         * epochs after it was added, that is at the next rotation.
         */
        j = test_daemon_wait_status(&d, (size_t)j + 1, 5000, test_status_reclaimed, NULL, &st);
        cr_assert(j > 0, "nothing reclaimed");
        cr_assert(st.objects <= 200, "single-use objects are not reclaimed: %llu", st.objects);

        ms = test_daemon_stop(&d);
        cr_log_info("SIGTERM to exit: %" PRIu64 " ms", ms);
        fprintf(stderr, "# SIGTERM to exit: %" PRIu64 " ms\n", ms);
        test_daemon_cleanup(&d);
}

Test(daemon, watchdog)
{
        struct test_daemon d;
        size_t pings = 0;

        test_daemon_setup(&d);
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        /* WATCHDOG_USEC 400 ms: a ping every 200 ms, so about 10 in 2 s. */
        test_daemon_start_ready(&d, 400000, NULL);
        test_notify_drain_for(&d.notify, 2000);
        for (size_t i = 0; i < d.notify.n_msgs; i++)
                pings += test_msg_line(d.notify.msgs[i], "WATCHDOG=1") != NULL;
        fprintf(stderr, "# watchdog pings in ~2 s at WATCHDOG_USEC=400ms: %zu\n", pings);
        cr_assert(pings >= 4 && pings <= 25, "%zu watchdog pings", pings);
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
}

Test(daemon, no_watchdog_without_watchdog_usec)
{
        struct test_daemon d;

        test_daemon_setup(&d);
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n", test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start_ready(&d, 0, NULL);
        test_notify_drain_for(&d.notify, 500);
        for (size_t i = 0; i < d.notify.n_msgs; i++)
                cr_assert(!test_msg_line(d.notify.msgs[i], "WATCHDOG=1"));
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
}

/* A disabled cache is loaded but never rotated: its timer is off. */
Test(daemon, disabled_cache_not_rotated)
{
        unsigned long long some = 300;
        struct test_status st;
        struct test_daemon d;

        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 50ms\n"
                        "[cache on]\nadapter = testcache\nadd = 100\nreuse = 100000\n"
                        "[cache off]\nadapter = testcache\nadd = 100000\nenabled = no\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start(&d, 0, NULL);
        /* Only "on" adds objects (100 a rotation, all kept): "off" would add 100000 at once. */
        cr_assert(test_daemon_wait_status(&d, 0, 5000, test_status_objects_at_least, &some, &st) >= 0);
        cr_assert_eq(st.caches, 2);
        cr_assert(st.objects < 100000, "the disabled cache rotated: %llu objects", st.objects);
        cr_assert(!strstr(test_daemon_log(&d), "off: rotation"), "%s", test_daemon_log(&d));
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
}

static size_t count_lines_with(const char *log, const char *needle)
{
        size_t n = 0;

        for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/*
 * An adapter whose refresh waits (a server's dump, a directory scan) answers CA_ROTATE_LATER
 * and calls ca_host_rotate_ready() later: its cache rotates when the refresh is done, ticks
 * that fall due meanwhile are skipped, and other caches go on rotating at their own pace.
 */
Test(daemon, asynchronous_refresh)
{
        struct test_daemon d;
        const char *log;
        size_t fast, skipped;

        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 50ms\n"
                        "[cache slow]\nadapter = testcache\nadd = 100\nrefresh_delay = 400ms\n"
                        "[cache failing]\nadapter = testcache\nrefresh_delay = 10ms\n"
                        "refresh_error = yes\n"
                        "[cache fast]\nadapter = testcache\nadd = 10\nreuse = 100000\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start(&d, 0, NULL);
        cr_assert(test_daemon_wait_log(&d, 0, "slow: refresh done", 10000), "%s",
                  test_daemon_log(&d));
        log = test_daemon_log(&d);
        /* The first rotation of "slow" came only once its refresh was done. */
        cr_assert(strstr(log, "slow: refresh done") < strstr(log, "slow: rotation, "), "%s", log);
        /* Ticks that fell due meanwhile were skipped, not queued. */
        skipped = count_lines_with(log, "slow: refresh under way");
        cr_assert(skipped >= 2, "%zu skipped:\n%s", skipped, log);
        /* "fast" rotated all along: 400 ms at 50 ms, even on a loaded machine several times. */
        fast = count_lines_with(log, "fast: rotation, ");
        cr_assert(fast >= 3, "fast rotated %zu times while slow refreshed:\n%s", fast, log);
        /* A failed asynchronous refresh is logged and the cache rotates what it holds. */
        cr_assert(test_daemon_wait_log(&d, 0, "failing: Failed to refresh the cache: "
                                              "Input/output error, rotating what it holds", 5000),
                  "%s", test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, 0, "failing: rotation, ", 5000));
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
}

static const char good_reload_conf[] = "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                                       "[cache t]\nadapter = testcache\nadd = 500\n"
                                       "reuse = 500\nlimit = 500\n";

Test(daemon, reload)
{
        unsigned long long full = 500;
        unsigned long two = 2, three = 3;
        struct test_status st;
        struct test_daemon d;
        ssize_t i, r;

        test_daemon_setup(&d);
        /* 500 objects, all reused every rotation: the count stays 500 once filled. */
        write_conf(d.conf, good_reload_conf, test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start_ready(&d, 0, NULL);
        i = test_daemon_wait_status(&d, 0, 5000, test_status_objects_at_least, &full, &st);
        cr_assert(i >= 0, "the cache did not fill\n%s", test_daemon_log(&d));

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
                /* Both at once: the parser's error and the plugin's, as --check-config says. */
                { "[daemon]\nplugin_dir = %s\ninterval = 100ms\nslice_budget = many\n"
                  "[cache t]\nadapter = testcache\nadd = 500\nreuse = 500\nlimit = 500\n"
                  "colour = blue\n",
                  { "cacheaged.conf:4: slice_budget", "cacheaged.conf:10: colour: unknown key",
                    NULL } },
        };
        for (size_t k = 0; k < sizeof(broken) / sizeof(broken[0]); k++) {
                size_t from = strlen(test_daemon_log(&d)); /* this reload's lines only */

                write_conf(d.conf, broken[k].conf, test_env("CA_TEST_PLUGIN_DIR"));
                cr_assert(kill(d.pid, SIGHUP) == 0);
                r = test_daemon_wait_msg(&d, (size_t)i + 1, "RELOADING=1", 5000);
                cr_assert(r >= 0, "no RELOADING=1");
                cr_assert(test_msg_line(d.notify.msgs[r], "MONOTONIC_USEC="),
                          "RELOADING=1 without MONOTONIC_USEC");
                r = test_daemon_wait_msg(&d, (size_t)r + 1, "READY=1", 5000);
                cr_assert(r >= 0, "no READY=1 after a failed reload");
                i = test_daemon_wait_status(&d, (size_t)r, 2000, test_status_any, NULL, &st);
                cr_assert(i >= 0);
                cr_assert_eq(st.caches, 1);
                cr_assert_eq(st.objects, 500,
                             "the caches changed on a failed reload: %llu objects", st.objects);
                cr_assert(waitpid(d.pid, &d.status, WNOHANG) == 0,
                          "the daemon died on a bad reload");
                /* Every error listed (before READY=1), each with its line. */
                const char *log = test_daemon_log(&d) + from;
                for (const char *const *e = broken[k].errors; *e; e++)
                        cr_assert(strstr(log, *e), "'%s' not in:\n%s", *e,
                                  strlen(log) > 1500 ? log + strlen(log) - 1500 : log);
        }

        /* A good one: a second cache appears; the first is kept with its objects. */
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                        "[cache t]\nadapter = testcache\nadd = 500\nreuse = 500\nlimit = 500\n"
                        "single_use_age = 3\n"
                        "[cache u]\nadapter = testcache\nadd = 10\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        cr_assert(kill(d.pid, SIGHUP) == 0);
        r = test_daemon_wait_msg(&d, (size_t)i + 1, "RELOADING=1", 5000);
        cr_assert(r >= 0);
        r = test_daemon_wait_msg(&d, (size_t)r + 1, "READY=1", 5000);
        cr_assert(r >= 0);
        i = test_daemon_wait_status(&d, (size_t)r, 2000, test_status_caches_are, &two, &st);
        cr_assert(i >= 0, "the new cache did not appear\n%s", test_daemon_log(&d));
        cr_assert(st.objects >= 500, "the kept cache lost objects: %llu", st.objects);

        /* Another adapter key: the cache is recreated (and says so); a third one is added. */
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                        "[cache t]\nadapter = testcache\nadd = 400\nreuse = 400\nlimit = 400\n"
                        "[cache u]\nadapter = testcache\nadd = 10\n"
                        "[cache v]\nadapter = testcache\nadd = 10\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        cr_assert(kill(d.pid, SIGHUP) == 0);
        i = test_daemon_wait_status(&d, (size_t)i + 1, 5000, test_status_caches_are, &three, &st);
        cr_assert(i >= 0);
        cr_assert(strstr(test_daemon_log(&d), "t: adapter or its keys changed, cache recreated"));

        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
}

/*
 * A reload every 150 ms for 2.4 s of a cache that rotates every 400 ms, its interval written
 * as @intervals[0], @intervals[1] in turn (the same twice: no change): the reloads must not
 * postpone its rotations (at least 3 in the 2.4 s).
 */
static void assert_rotating_through_reloads(const char *const intervals[2])
{
        size_t rotations = 0, reloads = 0;
        struct test_daemon d;
        const char *log;
        uint64_t end;

        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = %s\n"
                        "[cache t]\nadapter = testcache\nadd = 10\n",
                        test_env("CA_TEST_PLUGIN_DIR"), intervals[0]);
        test_daemon_start_ready(&d, 0, NULL);
        end = test_now_usec() + 2400000;
        while (test_now_usec() < end) {
                test_write_file(d.conf,
                                "[daemon]\nplugin_dir = %s\ninterval = %s\n"
                                "[cache t]\nadapter = testcache\nadd = 10\n",
                                test_env("CA_TEST_PLUGIN_DIR"), intervals[++reloads % 2]);
                cr_assert(kill(d.pid, SIGHUP) == 0);
                test_notify_drain_for(&d.notify, 150);
        }
        test_daemon_stop(&d);
        log = test_daemon_log(&d);
        for (const char *p = log; (p = strstr(p, "t: rotation,")); p++)
                rotations++;
        fprintf(stderr, "# rotations in 2.4 s of reloads every 150 ms, interval %s/%s: %zu\n",
                intervals[0], intervals[1], rotations);
        cr_assert(strstr(log, "Configuration reloaded"), "%s", log);
        cr_assert(rotations >= 3, "reloads postponed the rotations: %zu in 2.4 s\n%s", rotations,
                  strlen(log) > 1500 ? log + strlen(log) - 1500 : log);
        test_daemon_cleanup(&d);
}

/* A kept cache whose interval did not change keeps its timer running. */
Test(daemon, frequent_reloads_keep_rotating)
{
        assert_rotating_through_reloads((const char *const[]){ "400ms", "400ms" });
}

/*
 * When every reload changes the interval, the new one counts from the last rotation.
 * Restarting the timer at each reload, the daemon rotated 0 times here.
 */
Test(daemon, reloads_changing_the_interval_keep_rotating)
{
        assert_rotating_through_reloads((const char *const[]){ "400ms", "450ms" });
}

/* The run's stderr holds @needle (printf format), asserted with the log. */
static void assert_log_has(struct test_daemon *d, size_t from, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void assert_log_has(struct test_daemon *d, size_t from, const char *fmt, ...)
{
        char want[1024];
        const char *log;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(want, sizeof(want), fmt, ap);
        va_end(ap);
        log = test_daemon_log(d);
        cr_assert(strlen(log) >= from && strstr(log + from, want), "'%s' not in:\n%s", want,
                  log + (strlen(log) >= from ? from : 0));
}

/* SIGHUP: the reload fails (the caches stay as they are) or succeeds, as @ok says. */
static void reload_expect(struct test_daemon *d, bool ok)
{
        size_t from = strlen(test_daemon_log(d));

        cr_assert(kill(d->pid, SIGHUP) == 0);
        cr_assert(test_daemon_wait_log(d, from, ok ? "Configuration reloaded" : "Reload failed",
                                       10000),
                  "the reload did not %s:\n%s", ok ? "succeed" : "fail",
                  test_daemon_log(d) + from);
}

/*
 * The configuration says what root deletes: a file of it that another user owns or may write
 * (by its mode or its ACL), or below a directory another user may write, is refused with the
 * file and the reason, by --check-config, at start and at reload (it used to be loaded, with a
 * warning). A sticky directory's root-owned drop-in is fine, as /tmp's files are.
 */
Test(daemon, config_writable_by_others_refused)
{
        const char *check[] = { "--config", NULL, "--check-config", NULL };
        const char *start[] = { "--config", NULL, "--bus", "none", NULL };
        char dropins[160], dropin[192];
        struct test_daemon d;
        size_t from;

        test_daemon_setup(&d);
        check[1] = start[1] = d.conf;
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        snprintf(dropins, sizeof(dropins), "%s.d", d.conf);
        snprintf(dropin, sizeof(dropin), "%s/10-more.conf", dropins);
        cr_assert(mkdir(dropins, 0755) == 0);
        test_write_file(dropin, "[cache t]\nadd = 5\n");
        cr_assert(chmod(d.conf, 0644) == 0 && chmod(dropin, 0646) == 0);

        cr_assert_eq(test_daemon_run_to_exit(&d, check), 1);
        assert_log_has(&d, 0, "%s: refused: %s is writable by everyone (only root may write",
                       dropin, dropin);
        cr_assert(!strstr(test_daemon_log(&d), "cacheaged.conf: refused"), "%s",
                  test_daemon_log(&d));
        cr_assert_eq(test_daemon_run_to_exit(&d, start), 6, "started on a drop-in anyone may "
                     "write");
        assert_log_has(&d, 0, "%s: refused: %s is writable by everyone", dropin, dropin);

        /* Nobody else may write it: it is read. */
        cr_assert(chmod(dropin, 0644) == 0);
        test_daemon_start_ready(&d, 0, NULL);

        /* Another user's file. */
        cr_assert(chown(dropin, 65534, 0) == 0);
        from = strlen(test_daemon_log(&d));
        reload_expect(&d, false);
        assert_log_has(&d, from, "%s: refused: %s is owned by uid 65534, not by root", dropin,
                       dropin);
        cr_assert(chown(dropin, 0, 0) == 0);
        reload_expect(&d, true);

        /* Root's file, with a write ACL for another user. */
        {
                char cmd[512];

                snprintf(cmd, sizeof(cmd), "setfacl -m u:65534:rw '%s'", dropin);
                cr_assert(system(cmd) == 0, "%s", cmd);
                from = strlen(test_daemon_log(&d));
                reload_expect(&d, false);
                assert_log_has(&d, from, "%s is writable by uid 65534 (its ACL)", dropin);
                snprintf(cmd, sizeof(cmd), "setfacl -b '%s'", dropin);
                cr_assert(system(cmd) == 0, "%s", cmd);
        }

        /* A drop-in directory that anyone may write: whoever may replace the file. */
        cr_assert(chmod(dropins, 0777) == 0);
        from = strlen(test_daemon_log(&d));
        reload_expect(&d, false);
        assert_log_has(&d, from, "%s: refused: %s is writable by everyone", dropin, dropins);
        /* Sticky: only root may replace root's file there. */
        cr_assert(chmod(dropins, 01777) == 0);
        reload_expect(&d, true);
        cr_assert(chmod(dropins, 0755) == 0);

        /* The main file, writable by a group that is not root's. */
        cr_assert(chown(d.conf, 0, 65534) == 0 && chmod(d.conf, 0664) == 0);
        from = strlen(test_daemon_log(&d));
        reload_expect(&d, false);
        assert_log_has(&d, from, "%s: refused: %s is writable by its group", d.conf, d.conf);
        cr_assert(waitpid(d.pid, &d.status, WNOHANG) == 0, "the daemon died on a bad reload");
        test_daemon_stop(&d);
        unlink(dropin);
        rmdir(dropins);
        test_daemon_cleanup(&d);
}

/*
 * What a new administrator meets: a mistyped key of the daemon's in a cache section
 * ("intervall") was answered with the adapter's keys alone, and --check-config's last line
 * named the main file when the errors were a drop-in's. The hint now weighs the daemon's
 * cache keys and the adapter's and lists both; an adapter a drop-in set is blamed there; the
 * last line names the files at fault.
 */
Test(daemon, check_config_names_the_dropin_and_the_key)
{
        const char *check[] = { "--config", NULL, "--check-config", NULL };
        char dropins[160], dropin[192];
        struct test_daemon d;
        const char *log;

        test_daemon_setup(&d);
        check[1] = d.conf;
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n"
                                "[cache u]\nadd = 5\n", test_env("CA_TEST_PLUGIN_DIR"));
        snprintf(dropins, sizeof(dropins), "%s.d", d.conf);
        snprintf(dropin, sizeof(dropin), "%s/10-more.conf", dropins);
        cr_assert(mkdir(dropins, 0755) == 0);
        test_write_file(dropin, "[cache t]\nintervall = 5s\nreus = 3\n");

        cr_assert_eq(test_daemon_run_to_exit(&d, check), 1);
        assert_log_has(&d, 0, "%s:2: intervall: unknown key, did you mean \"interval\"? "
                       "(expected add, reuse, ", dropin);
        assert_log_has(&d, 0, "; or a key of every cache: adapter, interval, single_use_age, "
                       "max_age, refault_window, ages, target_refault or enabled)");
        /* A typo of the adapter's own key: the adapter's key, with both lists. */
        assert_log_has(&d, 0, "%s:3: reus: unknown key, did you mean \"reuse\"? (expected add, ",
                       dropin);
        log = test_daemon_log(&d);
        cr_assert(strstr(log, "[cache u] has no adapter"), "%s", log);
        assert_log_has(&d, 0, "configuration is invalid: 3 errors in %s, %s\n", d.conf, dropin);
        log = test_daemon_log(&d); /* the last one's is freed */
        cr_assert(!strstr(log, "cacheaged.conf: configuration is invalid"), "%s", log);

        /* The adapter set by the drop-in, to one there is no plugin for: blamed there. */
        test_write_file(dropin, "[cache t]\ninterval = 5s\n\n[cache u]\nadapter = nosuch\n");
        cr_assert_eq(test_daemon_run_to_exit(&d, check), 1);
        assert_log_has(&d, 0, "%s:5: [cache u]: no plugin for adapter 'nosuch'", dropin);
        assert_log_has(&d, 0, "configuration is invalid: 1 error in %s\n", dropin);
        unlink(dropin);
        rmdir(dropins);
        test_daemon_cleanup(&d);
}

static void assert_start_fails(const char *conf_fmt, const char *dir, const char *const *needles)
{
        const char *args[8] = { "--config", NULL, "--bus", "none", NULL };
        struct test_daemon d;
        const char *log;

        test_daemon_setup(&d);
        args[1] = d.conf;
        write_conf(d.conf, conf_fmt, dir);
        /* 6, "not configured": the units' RestartPreventExitStatus= keeps systemd from retrying. */
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 6);
        log = test_daemon_log(&d);
        for (; *needles; needles++)
                cr_assert(strstr(log, *needles), "'%s' not in:\n%s", *needles, log);
        /* Refused at start: never ready. */
        for (size_t i = 0; i < d.notify.n_msgs; i++)
                cr_assert(!test_msg_line(d.notify.msgs[i], "READY=1"));
        test_notify_recv(&d.notify, 0);
        cr_assert(d.notify.n_msgs == 0 || !test_msg_line(d.notify.msgs[0], "READY=1"));
        test_daemon_cleanup(&d);
}

Test(daemon, plugin_wrong_abi)
{
        char path[512];

        snprintf(path, sizeof(path), "Failed to load plugin %s/badabi.so: ABI %d, expected %d",
                 test_env("CA_TEST_PLUGIN_DIR"), CA_PLUGIN_ABI - 1, CA_PLUGIN_ABI);
        assert_start_fails("[daemon]\nplugin_dir = %s\n[cache old]\nadapter = badabi\n",
                           test_env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){ path, "cacheaged.conf:3", NULL });
}

/*
 * The daemon runs as root and runs what it loads: a plugin that someone else may write, or
 * in a directory someone else may write, is refused, also through a symlink.
 */
Test(daemon, plugin_writable_by_others)
{
        char *dir = test_mkdtemp("cacheaged-plugins"), *link_dir = test_mkdtemp("cacheaged-link");
        char so[128], link[128], src[512], want[256];

        snprintf(so, sizeof(so), "%s/testcache.so", dir);
        snprintf(src, sizeof(src), "%s/testcache.so", test_env("CA_TEST_PLUGIN_DIR"));
        snprintf(link, sizeof(link), "%s/testcache.so", link_dir);
        cr_assert(symlink(so, link) == 0);
        static const char conf[] = "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n";

        /* A good copy loads (the check refuses nothing it should not). */
        test_copy_file(src, so, 0755);
        {
                const char *args[] = { "--config", NULL, "--check-config", NULL };
                struct test_daemon d;

                test_daemon_setup(&d);
                args[1] = d.conf;
                write_conf(d.conf, conf, link_dir);
                cr_assert_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
                test_daemon_cleanup(&d);
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

        test_rm_rf(link_dir);
        test_rm_rf(dir);
        free(link_dir);
        free(dir);
}

/*
 * The module is opened once along a path of trusted directories and that very file is
 * loaded: a plugin_dir reached through a directory that another user owns (who could swap a
 * symlink there between a check and dlopen()) is refused, and so is anything but a regular
 * file (a FIFO named like a module used to hang start-up, --check-config and reload).
 */
Test(daemon, plugin_path_untrusted_or_not_a_file)
{
        char *top = test_mkdtemp("cacheaged-chain");
        char evil[128], good[128], so[160], link[160], fifo_dir[128], fifo[160], src[512];
        static const char conf[] = "[daemon]\nplugin_dir = %s\n[cache t]\nadapter = testcache\n";

        snprintf(evil, sizeof(evil), "%s/evil", top);
        snprintf(good, sizeof(good), "%s/good", top);
        snprintf(fifo_dir, sizeof(fifo_dir), "%s/fifo", top);
        cr_assert(mkdir(evil, 0755) == 0 && chown(evil, 65534, 65534) == 0);
        cr_assert(mkdir(good, 0755) == 0 && mkdir(fifo_dir, 0755) == 0);
        snprintf(src, sizeof(src), "%s/testcache.so", test_env("CA_TEST_PLUGIN_DIR"));
        snprintf(so, sizeof(so), "%s/testcache.so", good);
        test_copy_file(src, so, 0755);
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
                struct test_daemon d;

                test_daemon_setup(&d);
                args[1] = d.conf;
                write_conf(d.conf, conf, fifo_dir);
                cr_assert_eq(test_daemon_run_to_exit(&d, args), 1);
                cr_assert(strstr(test_daemon_log(&d), "is not a regular file"), "%s",
                          test_daemon_log(&d));
                test_daemon_cleanup(&d);
        }

        test_rm_rf(top);
        free(top);
}

Test(daemon, plugin_missing_file)
{
        assert_start_fails("[daemon]\nplugin_dir = %s/nonexistent\n\n[cache gone]\n"
                           "adapter = testcache\n",
                           test_env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){ "cacheaged.conf:4: [cache gone]: no plugin for "
                                             "adapter 'testcache'",
                                             "/nonexistent/testcache.so: No such file",
                                             NULL });
}

Test(daemon, unknown_adapter)
{
        assert_start_fails("[daemon]\nplugin_dir = %s\n[cache a]\nadapter = testcache\n"
                           "[cache b]\nadapter = frobnicator\n",
                           test_env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){ "cacheaged.conf:5: [cache b]: no plugin for "
                                             "adapter 'frobnicator'",
                                             "frobnicator.so", NULL });
}

Test(daemon, check_config)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        const char *log;

        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 30s\n"
                        "[cache a]\nadapter = testcache\nadd = 5\n"
                        "[cache b]\nadapter = testcache\nreuse = 3\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
        cr_assert(strstr(test_daemon_out(&d), "configuration OK, 2 caches"));
        test_daemon_cleanup(&d);

        /* Every error at once: the daemon's own, and each plugin's section's. */
        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = soon\n"
                        "[cache a]\nadapter = testcache\nadd = lots\n"
                        "[cache b]\nadapter = testcache\nspeed = 3\n"
                        "[cache c]\nadapter = badabi\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 1);
        log = test_daemon_log(&d);
        cr_assert(strstr(log, "cacheaged.conf:3: interval"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:6: add: invalid number \"lots\""), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:9: speed: unknown key"), "%s", log);
        cr_assert(strstr(log, abi_refused()), "%s", log);
        test_daemon_cleanup(&d);

        /* The daemon's own keys are good: now every plugin section is checked. */
        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\n"
                        "[cache a]\nadapter = testcache\nadd = lots\n"
                        "[cache b]\nadapter = testcache\nspeed = 3\n"
                        "[cache c]\nadapter = badabi\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 1);
        log = test_daemon_log(&d);
        cr_assert(strstr(log, "cacheaged.conf:5: add: invalid number \"lots\""), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:8: speed: unknown key"), "%s", log);
        cr_assert(strstr(log, abi_refused()), "%s", log);
        test_daemon_cleanup(&d);
}

/* ------------------------------------------------------------------------------------------ */
/* The real dcache adapter.                                                                    */

static void require_dcache_adapter(void)
{
        char path[512];

        snprintf(path, sizeof(path), "%s/dcache.so", test_env("CA_ADAPTER_DIR"));
        /* built with this test (tests/meson.build): missing is a broken build, not a skip */
        cr_assert(access(path, R_OK) == 0, "%s: %s", path, strerror(errno));
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
        struct test_status st;
        struct test_daemon d;
        uint64_t end;
        ssize_t i;

        require_dcache_adapter();
        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 200ms\n"
                        "[cache storm]\nadapter = dcache\nsource = workload:statstorm\n"
                        "rate = 2000\nsingle_use_age = 4\n",
                        test_env("CA_ADAPTER_DIR"));
        test_daemon_start_ready(&d, 0, NULL);
        end = test_now_usec() + 4000000;
        while (test_now_usec() < end && n < 256) {
                i = test_daemon_wait_status(&d, from, (int)((end - test_now_usec()) / 1000),
                                            test_status_any, NULL, &st);
                if (i < 0)
                        break;
                counts[n++] = st.objects;
                from = (size_t)i + 1;
        }
        fprintf(stderr, "# dcache storm, objects per rotation:");
        for (size_t k = 0; k < n; k++)
                fprintf(stderr, " %llu", counts[k]);
        fprintf(stderr, "\n");
        cr_assert(n >= 10, "only %zu rotations in 4 s\n%s", n, test_daemon_log(&d));
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
        test_daemon_stop(&d);
        test_daemon_cleanup(&d);
}

Test(daemon, dcache_keys_checked)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        const char *log;

        require_dcache_adapter();
        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\n"
                        "[cache a]\nadapter = dcache\nsource = workload:nonsense\nrate = 0\n"
                        "ratio_mode = sideways\nnegative_ratio = 99\ncolour = red\n"
                        "[cache b]\nadapter = dcache\nsource = strace:relative/path\n",
                        test_env("CA_ADAPTER_DIR"));
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 1);
        log = test_daemon_log(&d);
        cr_assert(strstr(log, "cacheaged.conf:5: source"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:6: rate"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:7: ratio_mode"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:8: negative_ratio"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:9: colour: unknown key"), "%s", log);
        cr_assert(strstr(log, "cacheaged.conf:12: source"), "%s", log);
        test_daemon_cleanup(&d);
}

/* An strace log replayed: once (the feeding stops at its end) and in a loop. */
Test(daemon, dcache_strace_replay)
{
        unsigned long long some = 40;
        struct test_status st;
        struct test_daemon d;
        const char *log;

        require_dcache_adapter();
        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 100ms\n"
                        "[cache once]\nadapter = dcache\nsource = strace:%s/fixtures/daemon/ls.strace\n"
                        "max_age = 1000\n"
                        "[cache again]\nadapter = dcache\nsource = strace:%s/fixtures/daemon/ls.strace\n"
                        "loop = yes\nspeed = 10\n",
                        test_env("CA_ADAPTER_DIR"), test_env("CA_TEST_SRCDIR"), test_env("CA_TEST_SRCDIR"));
        test_daemon_start_ready(&d, 0, NULL);
        cr_assert(test_daemon_wait_status(&d, 0, 3000, test_status_objects_at_least, &some, &st) >= 0,
                  "%s", test_daemon_log(&d));
        test_daemon_wait_log(&d, 0, "once: ", 3000);
        usleep(500000);
        test_daemon_stop(&d);
        log = test_daemon_log(&d);
        cr_assert(strstr(log, "once: ") && strstr(log, "ls.strace: replay finished"), "%s", log);
        cr_assert(!strstr(log, "again: ") || !strstr(strstr(log, "again: "), "replay finished"),
                  "the looping replay ended:\n%s", log);
        test_daemon_cleanup(&d);
}

/*
 * The log must be a regular file: a FIFO would hang the start (open() waits for a writer),
 * a directory would only fail at the first read. A missing one is said by --check-config.
 */
Test(daemon, dcache_strace_not_a_file)
{
        const char *check[] = { "--config", NULL, "--check-config", NULL };
        char fifo[160], want[256], conf[512];
        struct test_daemon d;

        require_dcache_adapter();
        test_daemon_setup(&d);
        snprintf(fifo, sizeof(fifo), "%s/fifo", d.dir);
        cr_assert(mkfifo(fifo, 0600) == 0);
        snprintf(conf, sizeof(conf), "[daemon]\nplugin_dir = %s\n[cache x]\nadapter = dcache\n"
                 "source = strace:%s\n", test_env("CA_ADAPTER_DIR"), fifo);
        snprintf(want, sizeof(want), "cacheaged.conf:5: source: cannot open %s: not a regular file",
                 fifo);
        assert_start_fails("%s", conf, (const char *[]){ want, NULL });
        unlink(fifo);
        snprintf(conf, sizeof(conf), "[daemon]\nplugin_dir = %s\n[cache x]\nadapter = dcache\n"
                 "source = strace:%s\n", test_env("CA_ADAPTER_DIR"), d.dir);
        assert_start_fails("%s", conf, (const char *[]){ "cacheaged.conf:5: source: cannot open",
                                                         "Is a directory", NULL });

        check[1] = d.conf;
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache x]\nadapter = dcache\n"
                        "source = strace:%s/nonexistent.strace\n",
                   test_env("CA_ADAPTER_DIR"), d.dir);
        cr_assert_eq(test_daemon_run_to_exit(&d, check), 1, "%s", test_daemon_log(&d));
        cr_assert(strstr(test_daemon_log(&d), "cacheaged.conf:5: source: cannot open"),
                  "%s", test_daemon_log(&d));
        cr_assert(strstr(test_daemon_log(&d), "No such file"), "%s", test_daemon_log(&d));
        test_daemon_cleanup(&d);
}

/* The shipped configurations are valid (the demo's plugins found through the variable). */
Test(daemon, shipped_configs_check)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        char path[512];
        struct test_daemon d;

        require_dcache_adapter();
        test_daemon_setup(&d);
        d.plugin_dir = test_env("CA_ADAPTER_DIR");
        snprintf(path, sizeof(path), "%s/../conf/demo.conf", test_env("CA_TEST_SRCDIR"));
        args[1] = path;
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
        cr_assert(strstr(test_daemon_out(&d), "configuration OK, 2 caches"));
        test_daemon_cleanup(&d);

        test_daemon_setup(&d);
        d.plugin_dir = test_env("CA_ADAPTER_DIR");
        snprintf(path, sizeof(path), "%s/../conf/cacheaged.conf", test_env("CA_TEST_SRCDIR"));
        args[1] = path;
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
        test_daemon_cleanup(&d);
}

/* ------------------------------------------------------------------------------------------ */
/* doc/plugins.md's example adapter (tests/plugin-example.c): its key table and the host API. */

/* Every bad key of the section at once, each at its line, through the plugin's key table. */
Test(daemon, example_plugin_keys)
{
        assert_start_fails("[daemon]\nplugin_dir = %s\n[cache ex]\nadapter = example\n"
                           "objects = 0\nreused = lots\ncolour = red\ncheck = maybe\n",
                           test_env("CA_TEST_PLUGIN_DIR"),
                           (const char *[]){
                                   "cacheaged.conf:5: objects: 0 out of range (expected "
                                   "1..1000000)",
                                   "cacheaged.conf:6: reused: invalid number \"lots\" "
                                   "(expected a percentage 0..100, e.g. 12.5)",
                                   "cacheaged.conf:7: colour: unknown key (expected objects, "
                                   "reused or check; or a key of every cache: adapter, "
                                   "interval, single_use_age, max_age, refault_window, ages, "
                                   "target_refault or enabled)",
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
        struct test_daemon d;
        char *psi, *io;
        size_t mark;

        test_daemon_setup(&d);
        psi = test_path_join(d.dir, "psi");
        io = test_path_join(psi, "io");
        cr_assert(mkdir(psi, 0755) == 0);
        test_write_psi(psi, 50.0, 0.0);
        test_write_file(io, "some avg10=7.25 avg60=0.00 avg300=0.00 total=1\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 100ms\nmax_defer = 0\n"
                        "idle_cpu_pressure = 20\n[cache ex]\nadapter = example\nobjects = 100\n"
                        "reused = 50\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start_ready(&d, 0, psi);
        cr_assert(test_daemon_wait_log(&d, 0, "ex: cpu pressure 50.00%, io pressure 7.25%",
                                       10000),
                  "%s", test_daemon_log(&d));
        cr_assert(test_daemon_wait_log(&d, 0, "ex: machine busy: check put off", 10000), "%s",
                  test_daemon_log(&d));
        cr_assert(!strstr(test_daemon_log(&d), "ex: check:"), "checked while busy\n%s",
                  test_daemon_log(&d));

        /* Idle now: the check runs, and finds the reused half still there. */
        mark = strlen(test_daemon_log(&d));
        test_write_psi(psi, 1.0, 0.0);
        cr_assert(test_daemon_wait_log(&d, mark, "ex: check: 50 live objects", 10000), "%s",
                  test_daemon_log(&d));
        test_daemon_stop(&d);
        free(io);
        free(psi);
        test_daemon_cleanup(&d);
}


/*
 * Without --config the daemon searches as systemd's daemons do: here no main file at all, a
 * drop-in shipped in /usr/lib and one in /etc of the same name that masks it, and one in /run.
 * It starts on its defaults plus the drop-ins; a reload reads the same places again.
 */
Test(daemon, config_search_without_main_file)
{
        const char *args[] = { "--bus", "none", "--log-level", "debug", NULL };
        char *root, *lib, *run, *etc, *psi, *cmd;
        struct test_daemon d;
        struct test_status st;
        unsigned long caches = 2;
        ssize_t i;

        test_daemon_setup(&d);
        root = test_path_join(d.dir, "root");
        psi = test_path_join(d.dir, "psi");
        cr_assert(asprintf(&lib, "%s/usr/lib/cacheage/cacheaged.conf.d", root) > 0);
        cr_assert(asprintf(&run, "%s/run/cacheage/cacheaged.conf.d", root) > 0);
        cr_assert(asprintf(&etc, "%s%s.d", root, CA_CONFIG_FILE) > 0);
        cr_assert(asprintf(&cmd, "mkdir -p '%s' '%s' '%s' '%s'", lib, run, etc, psi) > 0);
        cr_assert_eq(system(cmd), 0);
        test_write_psi(psi, 0, 0);
        free(cmd);

        cr_assert(asprintf(&cmd, "%s/10-plugins.conf", lib) > 0);
        test_write_file(cmd, "[daemon]\nplugin_dir = %s\ninterval = 100ms\n",
                        test_env("CA_TEST_PLUGIN_DIR"));
        free(cmd);
        cr_assert(asprintf(&cmd, "%s/20-shipped.conf", lib) > 0);
        test_write_file(cmd, "[cache shipped]\nadapter = nosuch\n");
        free(cmd);
        cr_assert(asprintf(&cmd, "%s/20-shipped.conf", etc) > 0);
        cr_assert(symlink("/dev/null", cmd) == 0);
        free(cmd);
        cr_assert(asprintf(&cmd, "%s/30-a.conf", run) > 0);
        test_write_file(cmd, "[cache a]\nadapter = testcache\nadd = 10\n");
        free(cmd);

        cr_assert_eq(setenv("CACHEAGED_CONFIG_ROOT", root, 1), 0);
        test_daemon_spawn(&d, 0, psi, args);
        cr_assert(test_daemon_wait_msg(&d, 0, "READY=1", 10000) >= 0, "not ready:\n%s",
                  test_daemon_log(&d));
        caches = 1;
        i = test_daemon_wait_status(&d, 0, 5000, test_status_caches_are, &caches, &st);
        cr_assert(i >= 0, "not 1 cache:\n%s", test_daemon_log(&d));

        /* A new drop-in in /etc, then SIGHUP: the search runs again. */
        cr_assert(asprintf(&cmd, "%s/40-b.conf", etc) > 0);
        test_write_file(cmd, "[cache b]\nadapter = testcache\n");
        free(cmd);
        cr_assert(kill(d.pid, SIGHUP) == 0);
        caches = 2;
        cr_assert(test_daemon_wait_status(&d, (size_t)i + 1, 10000, test_status_caches_are,
                                          &caches, &st) >= 0, "not 2 caches after the reload:\n%s",
                  test_daemon_log(&d));
        test_daemon_stop(&d);
        unsetenv("CACHEAGED_CONFIG_ROOT");
        free(root);
        free(lib);
        free(run);
        free(etc);
        free(psi);
        test_daemon_cleanup(&d);
}
