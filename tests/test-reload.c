/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a reload hands the adapters it keeps (issue 21, item 1). plugin.h promises that a
 * section's text lives as long as the instance; a reload that kept an instance used to point
 * its section at the new configuration and free the old one, while the adapters still held
 * pointers into the old text (files' `path`, kernel's `cgroup`): after a plain SIGHUP the files
 * adapter read freed memory as its path, took another cache's directory for its own and
 * deleted, as root, the files of a directory configured `dry_run`.
 *
 * Here every adapter that ships (dcache, kernel, files, memcached, redis) and the guide's example
 * plugin run in one real cacheaged through 100 reloads that keep each of their caches while
 * other keys change (the host's aging keys, the daemon's keys, a cache that comes and goes),
 * rotating all along. Under AddressSanitizer a read of freed text aborts the daemon; in any
 * build, the dry-run directory must keep every file, and each adapter must still work after
 * the last reload.
 *
 * Environment (tests/meson.build): CACHEAGED, CA_ADAPTER_DIR (the adapters),
 * CA_TEST_PLUGIN_DIR (example.so), CA_TEST_SRCDIR.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "kernel-fake.h"
#include "memcached-harness.h"
#include "redis-harness.h"
#include "test-util.h"

#define RELOADS 100
#define DRY_FILES 20
#define WET_FILES 5

struct lab {
        char *root;          /* the test's directory */
        char *plugins;       /* root/plugins: copies of the modules (the daemon's plugin_dir) */
        char *wet, *dry;     /* two cache directories whose paths have the same length */
        struct kernel_fake kernel;
        struct mcd mcd;
        struct rds rds;
        struct test_daemon d;
};

static void copy_module(struct lab *l, const char *dir, const char *name)
{
        char from[512], to[512];

        snprintf(from, sizeof(from), "%s/%s.so", dir, name);
        snprintf(to, sizeof(to), "%s/%s.so", l->plugins, name);
        test_copy_file(from, to, 0755);
}

static void fill_dir(const char *dir, unsigned n)
{
        char path[512];

        cr_assert(mkdir(dir, 0755) == 0, "%s: %s", dir, strerror(errno));
        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/f%02u", dir, i);
                test_write_file(path, "cache entry %u\n", i);
        }
}

static unsigned count_files(const char *dir)
{
        char path[512];
        unsigned n = 0;

        for (unsigned i = 0; i < DRY_FILES; i++) {
                snprintf(path, sizeof(path), "%s/f%02u", dir, i);
                n += access(path, F_OK) == 0;
        }
        return n;
}

/*
 * The configuration of reload @i: every adapter's own keys the same at each reload (so each
 * cache is kept), the host's keys of each cache and the daemon's keys changing, and a cache
 * that is there at every other reload.
 */
static void write_conf(struct lab *l, unsigned i)
{
        FILE *f = fopen(l->d.conf, "w");

        cr_assert(f, "%s: %s", l->d.conf, strerror(errno));
        fprintf(f,
                "[daemon]\nplugin_dir = %s\ninterval = 100ms\nhistory_rotations = %u\n"
                "idle_cpu_pressure = 0\nidle_memory_pressure = 0\n"
                "[cache model]\nadapter = dcache\nsource = workload:statstorm\nrate = 2000\n"
                "max_age = %u\n"
                "[cache kernel]\nadapter = kernel\ncgroup = /system.slice/svc.service\n"
                "interval = 150ms\nsingle_use_age = %u\n"
                "[cache wet]\nadapter = files\npath = %s\nwatch = atime\nsingle_use_age = 1\n"
                "max_age = %u\n"
                "[cache dry]\nadapter = files\npath = %s\nwatch = atime\nsingle_use_age = 1\n"
                "dry_run = yes\nmax_age = %u\n"
                "[cache mc]\nadapter = memcached\nserver = %s\nsingle_use_age = 1\n"
                "enabled = %s\n"
                "[cache rd]\nadapter = redis\nserver = %s\nmatch = never-*\nsingle_use_age = %u\n"
                "[cache example]\nadapter = example\nobjects = 500\nreused = %u\n",
                l->plugins, 50 + i % 7, 8 + i % 2, 2 + i % 2, l->wet, 2 + i % 3, l->dry,
                2 + i % 3, l->mcd.server, i % 10 == 5 ? "no" : "yes", l->rds.server, 1 + i % 2,
                10);
        if (i % 2)
                fprintf(f, "[cache extra]\nadapter = example\nobjects = %u\n", 100 + i);
        cr_assert(fclose(f) == 0);
}

static size_t count_in(const char *log, const char *needle)
{
        size_t n = 0;

        for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static struct lab l = { .mcd = { .pid = -1 }, .rds = { .pid = -1 } };
static int mc_fd = -1, rd_fd = -1;

/* Criterion runs it after the test, also after a failed assertion. */
static void lab_cleanup(void)
{
        if (mc_fd >= 0)
                close(mc_fd);
        if (rd_fd >= 0)
                close(rd_fd);
        if (l.d.dir)
                test_daemon_cleanup(&l.d);
        if (l.mcd.dir)
                mcd_cleanup(&l.mcd);
        if (l.rds.dir)
                rds_cleanup(&l.rds);
        if (l.kernel.root)
                kernel_fake_free(&l.kernel);
        unsetenv("CACHEAGED_KERNEL_ROOT");
        if (l.root)
                test_rm_rf(l.root);
        free(l.wet);
        free(l.dry);
        free(l.plugins);
        free(l.root);
}

Test(reload, every_adapter_keeps_its_text_through_100_reloads, .fini = lab_cleanup,
     .timeout = 600)
{
        static const char *const kept[] = { "model", "kernel", "wet", "dry", "mc", "rd",
                                            "example" };
        const char *log;
        char needle[64];

        l.root = test_mkdtemp("cacheage-reload");
        l.plugins = test_path_join(l.root, "plugins");
        cr_assert(mkdir(l.plugins, 0755) == 0);
        for (const char *const *n = (const char *const[]){ "dcache", "kernel", "files",
                                                           "memcached", "redis", NULL };
             *n; n++)
                copy_module(&l, test_env("CA_ADAPTER_DIR"), *n);
        copy_module(&l, test_env("CA_TEST_PLUGIN_DIR"), "example");
        l.wet = test_path_join(l.root, "wet");
        l.dry = test_path_join(l.root, "dry");
        fill_dir(l.wet, WET_FILES);
        fill_dir(l.dry, DRY_FILES);

        kernel_fake_new(&l.kernel, 2, 100000, 20000);
        free(kernel_fake_group(&l.kernel, "/system.slice/svc.service", 8 << 20, 4 << 20, 0));
        setenv("CACHEAGED_KERNEL_ROOT", l.kernel.root, 1);

        mcd_start(&l.mcd, false, NULL);
        mc_fd = mcc_connect(&l.mcd);
        mcc_set(mc_fd, "never-read", "x");
        rds_start(&l.rds, false, NULL);
        rd_fd = rc_connect(&l.rds);
        rc_set_idle(rd_fd, "never-read", "x", 100);

        test_daemon_setup(&l.d);
        write_conf(&l, 0);
        test_daemon_start_ready(&l.d, 0, NULL);
        for (unsigned i = 1; i <= RELOADS; i++) {
                size_t from = l.d.notify.n_msgs;

                write_conf(&l, i);
                cr_assert(kill(l.d.pid, SIGHUP) == 0);
                /* Reloaded (READY=1 after RELOADING=1), then a little time for rotations. */
                cr_assert(test_daemon_wait_msg(&l.d, from, "READY=1", 10000) >= 0,
                          "reload %u did not finish\n%s", i, test_daemon_log(&l.d));
                test_notify_drain_for(&l.d.notify, i % 10 ? 20 : 300);
        }
        /* After the last reload, every adapter still does its work on its own keys. */
        test_notify_drain_for(&l.d.notify, 2000);
        test_daemon_stop(&l.d);
        log = test_daemon_log(&l.d);

        cr_expect_eq(count_in(log, "Configuration reloaded"), RELOADS, "%s",
                     strlen(log) > 3000 ? log + strlen(log) - 3000 : log);
        for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
                snprintf(needle, sizeof(needle), "%s: adapter or its keys changed", kept[i]);
                cr_expect(!strstr(log, needle), "%s was recreated, not kept", kept[i]);
                snprintf(needle, sizeof(needle), "%s: rotation,", kept[i]);
                cr_expect(count_in(log, needle) >= 10, "%s rotated %zu times", kept[i],
                          count_in(log, needle));
        }
        cr_expect(!strstr(log, "another directory now"), "%s", log);
        cr_expect(!strstr(log, "is not an absolute path"), "%s", log);
        /* The dry run deleted nothing; the other files cache did delete its idle files. */
        cr_expect_eq(count_files(l.dry), DRY_FILES, "the dry-run directory lost files");
        cr_expect_eq(count_files(l.wet), 0, "the files cache stopped deleting after reloads");
        cr_expect(!mcc_exists(mc_fd, "never-read"), "the memcached cache stopped aging");
        cr_expect(!rc_exists(rd_fd, "never-read"), "the redis cache stopped aging");
}
