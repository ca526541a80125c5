/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pressure stall information: the reader (daemon/psi.c) on fake /proc/pressure files (the
 * "some" avg10 the gating reads, every figure, a directory of them), and the idle gating it
 * drives in a real cacheaged (--bus none, fake pressure through CACHEAGED_PSI_DIR, the harness
 * of test-util.h): rotations deferred under pressure, forced after max_defer, and never gated
 * where PSI is missing.
 *
 * Environment (from tests/meson.build): CACHEAGED, CA_TEST_PLUGIN_DIR (testcache.so).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "psi.h"
#include "test-util.h"

/* ------------------------------------------------------------------------------------------ */
/* The reader, on fake files                                                                   */

/* A fake pressure file holding @text, alone in a new directory. */
struct fake {
        char *dir, *path;
};

static struct fake fake_new(const char *text)
{
        struct fake f = { .dir = test_mkdtemp("cacheaged-psi") };

        f.path = test_path_join(f.dir, "cpu");
        test_write_data(f.path, text, strlen(text));
        return f;
}

static void fake_free(struct fake *f)
{
        test_rm_rf(f->dir);
        free(f->path);
        free(f->dir);
}

static double psi_parse(const char *text, int *ret_r)
{
        struct fake f = fake_new(text);
        double pct = -1;

        *ret_r = psi_read_some_avg10(f.path, &pct);
        fake_free(&f);
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
        struct fake f = fake_new("some avg10=1.50 avg60=2.25 avg300=3.00 total=123456\n"
                                 "full avg10=0.50 avg60=0.75 avg300=1.00 total=789\n");
        struct ca_psi some = { 0 }, full = { 0 };

        cr_assert_eq(psi_read(f.path, &some, &full), 0);
        fake_free(&f);
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

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct fake f = fake_new(bad[i]);
                struct ca_psi some = { .avg10_pct = 42 };

                cr_expect_eq(psi_read(f.path, &some, NULL), -EBADMSG, "%s", bad[i]);
                cr_expect_float_eq(some.avg10_pct, 42, 1e-9, "written on failure: %s", bad[i]);
                fake_free(&f);
        }
}

/* A directory of the three files, as /proc/pressure; none (no PSI) is -EOPNOTSUPP. */
Test(psi, pressure_directory)
{
        static const char *const names[] = { "cpu", "memory", "io" };
        char *dir = test_mkdtemp("cacheaged-psi"), path[128];
        struct ca_pressure p;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                test_write_file(path, "some avg10=%zu.00 avg60=0 avg300=0 total=%zu\n", i + 1, i);
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
        free(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* The idle gating, in the daemon                                                              */

Test(psi, idle_gating)
{
        struct test_status st;
        struct test_daemon d;
        char *psi;
        ssize_t i;

        test_daemon_setup(&d);
        psi = test_path_join(d.dir, "psi");
        cr_assert(mkdir(psi, 0755) == 0);
        /* CPU pressure 50% > 20%: every rotation is deferred, but at most 2 in a row. */
        test_write_psi(psi, 50.0, 0.0);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 100ms\nmax_defer = 2\n"
                   "idle_cpu_pressure = 20\n[cache t]\nadapter = testcache\n",
                   test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start_ready(&d, 0, psi);
        i = test_daemon_wait_status(&d, 0, 5000, test_status_deferred, NULL, &st);
        cr_assert(i >= 0, "no rotation deferred\n%s", test_daemon_log(&d));
        /* ... and forced after max_defer: rotations still happen, objects still come. */
        unsigned long long some = 1;
        cr_assert(test_daemon_wait_status(&d, (size_t)i, 5000, test_status_objects_at_least,
                                          &some, &st) >= 0);
        cr_assert(strstr(test_daemon_log(&d), "deferred 2 times already: rotating"));
        test_daemon_stop(&d);
        free(psi);
        test_daemon_cleanup(&d);
}

Test(psi, no_psi_no_gating)
{
        unsigned long long some = 1;
        struct test_daemon d;
        const char *log;

        test_daemon_setup(&d);
        test_write_file(d.conf,
                        "[daemon]\nplugin_dir = %s\ninterval = 50ms\n[cache t]\nadapter = testcache\n",
                   test_env("CA_TEST_PLUGIN_DIR"));
        test_daemon_start(&d, 0, "/nonexistent-psi");
        cr_assert(test_daemon_wait_status(&d, 0, 5000, test_status_objects_at_least, &some,
                                          NULL) >= 0);
        cr_assert(test_daemon_wait_status(&d, 0, 5000, test_status_reclaimed, NULL, NULL) >= 0);
        test_daemon_stop(&d);
        log = test_daemon_log(&d);
        /* Said once, not at every rotation. */
        const char *first = strstr(log, "Pressure stall information unavailable");
        cr_assert(first, "%s", log);
        cr_assert(!strstr(first + 1, "Pressure stall information unavailable"), "%s", log);
        test_daemon_cleanup(&d);
}
