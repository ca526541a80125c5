/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel adapter in the real daemon, on a private system-type bus (test-bus-harness.h):
 *
 *  - on the real kernel (root and a memory cgroup; skipped with a message where none can be
 *    made): report mode shows the host's dentries at once and a storm as growth; two child
 *    groups, a storm of lookups of missing names in A and a hot set statted every 200 ms in
 *    B: with cgroup = A and action = reclaim the host's nr_negative is back within 5% of its
 *    value before the storm within 5 rotations, B's hot set stays cached, and the host's
 *    other negatives stay;
 *  - on fake trees (tests/kernel-fake.c, CACHEAGED_KERNEL_ROOT) for what this kernel lacks or
 *    what would disturb every other test on the machine: cgroup v2's memory.reclaim (amounts,
 *    bounds, the swappiness= key taken or, answered by the real kernel's parser in a private
 *    mount namespace, refused), shrinker debugfs, drop_caches and its limits, the idle and
 *    pressure gates, a group that vanishes and comes back, a unit's group asked from a fake
 *    systemd on the private bus;
 *  - every bad key and path, with its file and line.
 *
 * Environment (from tests/meson.build): CACHEAGED, CACHEAGECTL, CA_ADAPTER_DIR, CA_TEST_SRCDIR.
 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <systemd/sd-bus.h>

#include "kernel-fake.h"
#include "kernel-policy.h"
#include "test-bus-harness.h"
#include "test-util.h"

#define ROTATION_WAIT_USEC 20000000 /* a rotation of a 1 s interval on a loaded machine */

static struct bus_env env;
static struct kernel_fake fake;
static char *psi_dir;
static char *group_a, *group_b;
static pid_t hot_pid = -1;
static char *bind_target; /* a bind mount of the test's: undone before its tree goes */
static const char *plugin_dir; /* NULL: the adapters as built (CA_ADAPTER_DIR) */
static char *gate_dir;         /* the hooked kernel.so's test gate (CA_KERNEL_TEST_GATE) */
static pid_t other_pid = -1;   /* a second cacheaged a test started */
static atomic_bool reclaiming; /* counter_moves() goes on */
static pthread_t reclaimer;
static bool have_reclaimer;

static void reclaimer_stop(void)
{
        if (!have_reclaimer)
                return;
        atomic_store(&reclaiming, false);
        pthread_join(reclaimer, NULL);
        have_reclaimer = false;
}

/* The hooked kernel.so's gate: let a held sweep go on. */
static void gate_release(void)
{
        char *go = test_path_join(gate_dir, "go");

        test_write_file(go, "%s", "");
        free(go);
}

static void teardown(void)
{
        if (bind_target) {
                cr_expect(umount2(bind_target, MNT_DETACH) == 0, "umount %s: %s", bind_target,
                          strerror(errno));
                free(bind_target);
                bind_target = NULL;
        }
        if (hot_pid > 0)
                test_kill(hot_pid);
        hot_pid = -1;
        if (other_pid > 0)
                test_kill(other_pid);
        other_pid = -1;
        reclaimer_stop();
        if (gate_dir)
                gate_release(); /* a daemon held at the gate stops as asked */
        bus_env_stop(&env);
        if (gate_dir) {
                test_rm_rf(gate_dir);
                free(gate_dir);
                gate_dir = NULL;
        }
        plugin_dir = NULL;
        unsetenv("CA_KERNEL_TEST_GATE");
        unsetenv("CA_KERNEL_TEST_GUARD_USEC");
        unsetenv("CA_KERNEL_TEST_ACT_USEC");
        kernel_fake_free(&fake);
        kernel_real_tmpdirs_remove();
        kernel_real_group_remove(group_a);
        kernel_real_group_remove(group_b);
        group_a = group_b = NULL;
        if (psi_dir) {
                test_rm_rf(psi_dir);
                free(psi_dir);
                psi_dir = NULL;
        }
        unsetenv("CACHEAGED_KERNEL_ROOT");
        unsetenv("CACHEAGED_PSI_DIR");
        unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
}

/* Fake PSI the daemon reads: CPU and memory "some avg10" as given, io idle. */
static void set_psi(double cpu, double memory)
{
        char *io;

        if (!psi_dir) {
                psi_dir = test_mkdtemp("cacheage-kpsi");
                setenv("CACHEAGED_PSI_DIR", psi_dir, 1);
        }
        test_write_psi(psi_dir, cpu, memory);
        io = test_path_join(psi_dir, "io");
        test_write_file(io, "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        free(io);
}

/* Start the bus and the daemon with "[daemon]" (1 s, no PSI gate) and @sections. */
static void start(const char *policy, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void start(const char *policy, const char *fmt, ...)
{
        char sections[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sections, sizeof(sections), fmt, ap);
        va_end(ap);
        if (!psi_dir)
                set_psi(0, 0);
        if (!env.dir)
                bus_env_start(&env, policy);
        bus_env_daemon(&env,
                       "[daemon]\nplugin_dir = %s\ninterval = 1s\nidle_cpu_pressure = 0\n"
                       "idle_memory_pressure = 0\nlog_level = debug\n%s",
                       plugin_dir ? plugin_dir : test_env("CA_ADAPTER_DIR"), sections);
}

/* One of the cache's AdapterStats; UINT64_MAX when it has no such statistic. */
static uint64_t astat(const char *cache, const char *name)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        uint64_t v, found = UINT64_MAX;
        const char *key;
        int r;

        r = sd_bus_get_property(env.bus, CA_BUS_NAME, cache_path(cache), CA_BUS_CACHE_IFACE,
                                "AdapterStats", &error, &reply, "a{st}");
        cr_assert(r >= 0, "AdapterStats: %s", error.message);
        cr_assert(sd_bus_message_enter_container(reply, 'a', "{st}") >= 0);
        while ((r = sd_bus_message_read(reply, "{st}", &key, &v)) > 0)
                if (strcmp(key, name) == 0)
                        found = v;
        cr_assert(r >= 0);
        sd_bus_message_unref(reply);
        return found;
}

/* Wait until the cache's AdapterStats @name is @want. */
static void wait_astat(const char *cache, const char *name, uint64_t want)
{
        uint64_t until = test_now_usec() + 5 * ROTATION_WAIT_USEC, v;

        while ((v = astat(cache, name)) != want) {
                cr_assert(test_now_usec() < until, "%s: %s is %" PRIu64 ", not %" PRIu64
                          " in time\n%s", cache, name, v, want, test_read_file(env.daemon_err));
                usleep(20000);
        }
}

/* Wait until the cache's AdapterStats @name is at least @want. */
static void wait_astat_at_least(const char *cache, const char *name, uint64_t want)
{
        uint64_t until = test_now_usec() + 5 * ROTATION_WAIT_USEC, v;

        while ((v = astat(cache, name)) == UINT64_MAX || v < want) {
                cr_assert(test_now_usec() < until, "%s: %s is %" PRIu64 ", not %" PRIu64
                          " in time\n%s", cache, name, v, want, test_read_file(env.daemon_err));
                usleep(20000);
        }
}

static uint64_t rotations(const char *cache)
{
        return get_t(env.bus, cache_path(cache), CA_BUS_CACHE_IFACE, "Rotations");
}

/* Wait until @cache has done @want rotations. */
static void wait_rotations_from(const char *cache, uint64_t want)
{
        uint64_t until = test_now_usec() + 5 * ROTATION_WAIT_USEC;

        while (rotations(cache) < want) {
                cr_assert(test_now_usec() < until, "%s: not %" PRIu64 " rotations in time\n%s",
                          cache, want, test_read_file(env.daemon_err));
                usleep(20000);
        }
}

/* Wait for @n more rotations of @cache to be done. */
static void wait_rotations(const char *cache, uint64_t n)
{
        wait_rotations_from(cache, rotations(cache) + n);
}

/* Wait until the daemon's log holds @needle (past @from bytes). */
static void wait_log(size_t from, const char *needle)
{
        uint64_t until = test_now_usec() + 30000000;
        char *log;

        for (;;) {
                log = test_read_file(env.daemon_err);
                if (strlen(log) > from && strstr(log + from, needle))
                        break;
                cr_assert(test_now_usec() < until, "no \"%s\" in the log:\n%s", needle, log);
                free(log);
                usleep(20000);
        }
        free(log);
}

static size_t log_size(void)
{
        char *log = test_read_file(env.daemon_err);
        size_t n = strlen(log);

        free(log);
        return n;
}

static size_t count_in_log(const char *needle)
{
        char *log = test_read_file(env.daemon_err);
        size_t n = 0;

        for (const char *p = log; (p = strstr(p, needle)); p++)
                n++;
        free(log);
        return n;
}

/* cacheagectl on the test's bus: its output (malloc()ed); it must exit 0. */
static char *ctl(const char *args)
{
        char cmd[1024], *out = malloc(65536);
        size_t n;
        FILE *p;

        cr_assert(out);
        snprintf(cmd, sizeof(cmd), "%s --address=%s %s 2>&1", test_env("CACHEAGECTL"),
                 env.address, args);
        p = popen(cmd, "r");
        cr_assert(p);
        n = fread(out, 1, 65535, p);
        out[n] = '\0';
        cr_assert(pclose(p) == 0, "cacheagectl %s:\n%s", args, out);
        return out;
}

static struct ks_dentry_state_t {
        uint64_t nr_dentry, nr_negative;
} dentry_state(void)
{
        char *s = test_read_file("/proc/sys/fs/dentry-state");
        unsigned long long a, b, c, d, e;

        cr_assert(sscanf(s, "%llu %llu %llu %llu %llu", &a, &b, &c, &d, &e) == 5);
        free(s);
        return (struct ks_dentry_state_t){ .nr_dentry = a, .nr_negative = e };
}

static void rotate_once(const char *cache);

/* ------------------------------------------------------------------------------------------ */
/* The real kernel.                                                                            */

/* A fresh install: the host's dentries and negatives in the status at once; a storm is growth. */
Test(kernel, real_report_shows_the_host_and_a_storm_as_growth, .fini = teardown, .timeout = 300)
{
        const char *path = cache_path("kernel");
        struct ks_dentry_state_t ds = dentry_state();
        char *s, *dir, cmd[1024], out[4096];
        uint64_t objects, growth;
        FILE *p;
        size_t n;

        start(NULL, "[cache kernel]\nadapter = kernel\ninterval = 1h\n");
        /* Before any rotation: the counts read at start. */
        cr_assert_eq(rotations("kernel"), 0);
        objects = get_t(env.bus, path, CA_BUS_CACHE_IFACE, "Objects");
        cr_assert(objects > 0 && objects > ds.nr_dentry / 2 && objects < ds.nr_dentry * 2,
                  "Objects %" PRIu64 ", nr_dentry %" PRIu64, objects, ds.nr_dentry);
        cr_assert(get_t(env.bus, path, CA_BUS_CACHE_IFACE, "PartObjects") > 0);
        cr_assert_eq(get_t(env.bus, path, CA_BUS_CACHE_IFACE, "SingleUseObjects"), 0,
                     "a negative dentry is not known to be single-use");
        s = get_s(env.bus, path, CA_BUS_CACHE_IFACE, "ObjectsName");
        cr_assert_str_eq(s, "host dentries", "the kernel counts dentries host-wide only");
        free(s);
        s = get_s(env.bus, path, CA_BUS_CACHE_IFACE, "PartName");
        cr_assert_str_eq(s, "negative");
        free(s);
        s = get_s(env.bus, path, CA_BUS_CACHE_IFACE, "Mechanism");
        cr_assert_str_eq(s, "report");
        free(s);

        /* cacheagectl status: the columns say what they count. */
        snprintf(cmd, sizeof(cmd), "%s --address=%s status 2>&1", test_env("CACHEAGECTL"),
                 env.address);
        p = popen(cmd, "r");
        cr_assert(p);
        n = fread(out, 1, sizeof(out) - 1, p);
        out[n] = '\0';
        cr_assert(pclose(p) == 0, "%s", out);
        cr_assert(strstr(out, "HOST DENTRIES") && strstr(out, "NEGATIVE") &&
                  strstr(out, "MECHANISM"), "%s", out);
        cr_assert(strstr(out, "report"), "%s", out);
        cr_assert(!strstr(out, "SINGLE-USE"), "%s", out);
        /* show: no ages, single-use or refault fields for a cache without nodes. */
        s = ctl("show kernel");
        cr_assert(strstr(s, "Mechanism=report") && strstr(s, "Reclaimed=") &&
                  !strstr(s, "SingleUseAge=") && !strstr(s, "Refaults=") &&
                  !strstr(s, "RefaultHistogram=") && !strstr(s, "Ages="), "%s", s);
        free(s);

        /*
         * 100,000 new negatives between two rotations (asked): growth of about that much. A
         * drop of the whole host's cache by someone else between the two (another benchmark's
         * drop_caches) takes them: then a new storm, at most three.
         */
        dir = kernel_real_tmpdir("kstorm");
        for (unsigned attempt = 0; attempt < 3; attempt++) {
                char sub[512];

                snprintf(sub, sizeof(sub), "%s/%u", dir, attempt);
                cr_assert(mkdir(sub, 0755) == 0);
                rotate_once("kernel");
                kernel_real_storm(NULL, sub, 100000);
                rotate_once("kernel");
                growth = astat("kernel", "nr_negative_growth");
                if (growth >= 90000 && astat("kernel", "nr_dentry_growth") >= 90000 &&
                    astat("kernel", "nr_negative") >= 100000)
                        break;
                fprintf(stderr, "kernel: storm %u: nr_negative_growth %" PRIu64 ", again\n",
                        attempt, growth);
        }
        cr_assert_eq(astat("kernel", "actions"), UINT64_MAX, "report mode has no actions");
        cr_assert_eq(astat("kernel", "age_limit"), 45);
        /* Host-wide: asserted in a quiet kernel; on a shared host, said when others spoil it. */
        if (!kernel_real_quiet() && growth < 90000)
                test_skip(teardown,
                          "others dropped the host's caches during each of 3 storms "
                          "(nr_negative_growth %" PRIu64 "): asserted in the VM lab", growth);
        cr_assert(growth >= (kernel_real_quiet() ? 100000 : 90000), "nr_negative_growth %"
                  PRIu64 "\n%s", growth, test_read_file(env.daemon_err));
        cr_assert(astat("kernel", "nr_dentry_growth") >= 90000);
        cr_assert(astat("kernel", "nr_negative") >= 100000);
        free(dir);
}

/*
 * A hot set: 2,000 files a child of @group makes in @dir, then stats every 200 ms until
 * SIGTERM, counting the dentries its passes had to make again (nr_dentry's rise across a
 * pass: exact in a quiet kernel, where nothing else allocates meanwhile; elsewhere only a
 * pass that made more than half of them counts), from the first pass after SIGUSR1 on (what
 * the test itself makes before, a storm, is not the hot set's). At SIGTERM it writes
 * "RE-CREATED PASSES" to the pipe whose read end is *ret_fd.
 */
static pid_t hot_set(const char *group, const char *dir, int *ret_fd)
{
        bool quiet = kernel_real_quiet();
        int fds[2];
        pid_t pid;
        char c;

        cr_assert(pipe(fds) == 0);
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                uint64_t recreated = 0, passes = 0;
                char path[512], out[64];
                bool counting = false;
                sigset_t term;

                sigemptyset(&term);
                sigaddset(&term, SIGTERM);
                sigaddset(&term, SIGUSR1);
                sigprocmask(SIG_BLOCK, &term, NULL);
                kernel_real_group_join(group);
                for (int i = 0; i < 2000; i++) {
                        snprintf(path, sizeof(path), "%s/hot-%d", dir, i);
                        FILE *f = fopen(path, "we");

                        if (!f)
                                _exit(1);
                        fclose(f);
                }
                (void)!write(fds[1], "r", 1);
                for (;;) {
                        struct ks_dentry_state_t a = dentry_state(), b;
                        struct timespec ts = { .tv_nsec = 200000000 };
                        struct stat st;

                        for (int i = 0; i < 2000; i++) {
                                snprintf(path, sizeof(path), "%s/hot-%d", dir, i);
                                (void)stat(path, &st);
                        }
                        b = dentry_state();
                        if (counting && b.nr_dentry > a.nr_dentry + (quiet ? 0 : 1000))
                                recreated += b.nr_dentry - a.nr_dentry > 2000
                                                     ? 2000
                                                     : b.nr_dentry - a.nr_dentry;
                        passes += counting;
                        switch (sigtimedwait(&term, NULL, &ts)) {
                        case SIGUSR1:
                                counting = true;
                                break;
                        case SIGTERM:
                                goto done;
                        }
                }
        done:
                snprintf(out, sizeof(out), "%" PRIu64 " %" PRIu64 "\n", recreated, passes);
                (void)!write(fds[1], out, strlen(out));
                _exit(0);
        }
        close(fds[1]);
        cr_assert(read(fds[0], &c, 1) == 1, "the hot set was not made");
        *ret_fd = fds[0];
        return pid;
}

/* @b - @a, or 0 when @b is not above @a. */
static uint64_t rise(uint64_t b, uint64_t a)
{
        return b > a ? b - a : 0;
}

/* Stop a hot set: how many of its dentries it made again, in how many passes of 2,000. */
static void hot_set_stop(pid_t *pid, int fd, uint64_t *ret_recreated, uint64_t *ret_passes)
{
        char buf[64] = "";
        ssize_t n;
        int status;

        cr_assert(kill(*pid, SIGTERM) == 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        cr_assert(waitpid(*pid, &status, 0) == *pid);
        *pid = -1;
        cr_assert(n > 0 && sscanf(buf, "%" SCNu64 " %" SCNu64, ret_recreated, ret_passes) == 2,
                  "the hot set said \"%s\"", buf);
}

/* A real group's level that the adapter follows: v2 reclaimable slab, v1 kernel memory. */
static uint64_t group_level(const char *group)
{
        int version;
        char *path, *text;
        const char *p;
        uint64_t v = 0;

        kernel_real_memcg(&version);
        path = test_path_join(group, version == 2 ? "memory.stat" : "memory.kmem.usage_in_bytes");
        text = test_read_file(path);
        if (version == 2) {
                p = strstr(text, "\nslab_reclaimable ");
                cr_assert(p && sscanf(p + 18, "%" SCNu64, &v) == 1, "%s: %s", path, text);
        } else {
                cr_assert(sscanf(text, "%" SCNu64, &v) == 1, "%s: %s", path, text);
        }
        free(text);
        free(path);
        return v;
}

/* v2 memory.stat's "file" of a real group (its page cache). */
static uint64_t group_file(const char *group)
{
        char *path = test_path_join(group, "memory.stat"), *text = test_read_file(path);
        const char *p = strncmp(text, "file ", 5) == 0 ? text : strstr(text, "\nfile ");
        uint64_t v = 0;

        cr_assert(p && sscanf(p + (p == text ? 5 : 6), "%" SCNu64, &v) == 1, "%s: %s", path,
                  text);
        free(text);
        free(path);
        return v;
}

static uint64_t read_vfs_cache_pressure(void)
{
        char *s = test_read_file("/proc/sys/vm/vfs_cache_pressure");
        uint64_t v = strtoull(s, NULL, 10);

        free(s);
        return v;
}

/* Whether the kernel reclaims page cache with MGLRU (memory.reclaim takes it first). */
static bool mglru(void)
{
        char *s = test_read_file("/sys/kernel/mm/lru_gen/enabled");
        bool on = strtoul(s, NULL, 16) & 1;

        free(s);
        return on;
}

/*
 * Statting the @n names kernel_real_storm() missed in @dir again: how many negative dentries
 * that made (those that had gone). Exact in a quiet kernel only.
 */
static uint64_t restat_storm(const char *dir, unsigned n)
{
        struct ks_dentry_state_t a = dentry_state(), b;
        char path[512];
        struct stat st;

        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/missing-%u", dir, i);
                (void)stat(path, &st);
        }
        b = dentry_state();
        return b.nr_negative > a.nr_negative ? b.nr_negative - a.nr_negative : 0;
}

/*
 * A service made a storm of 100,000 missing names before the daemon started: aged like the
 * rest, it goes within 30 rotations (a trim walks its LRU once at most, and a loaded guest
 * interrupts a trim after 1 s: in CI's 6.1 guest 9 trims left 1,470 of it after 15), while
 * another group's hot
 * set and the host's negatives outside the group stay. Asserted on the group's own figures
 * (its reclaimable slab, v1 its kernel memory: others' work moves neither); in a quiet kernel
 * (the VM lab) on dentry-state as well, exactly, and the other hot set and the host's
 * negatives with it. The group holds no page cache: where a group has none, a pass's last
 * step takes its referenced dentries too (doc/adapters/kernel.md): not this test's concern.
 */
Test(kernel, real_storm_before_the_daemon_goes_and_the_others_stay, .fini = teardown,
     .timeout = 900)
{
        bool quiet = kernel_real_quiet();
        char *dir_a, *dir_b, *mark_dir;
        uint64_t level0, level1, level, r0, recreated, passes, made, drops;
        struct ks_dentry_state_t ds0, ds1, now;
        int version, hot_fd;

        group_a = kernel_real_group_new("a");
        group_b = kernel_real_group_new("b");
        if (!group_a || !group_b)
                test_skip(teardown,
                          "no memory cgroup can be made here (not root, or none mounted)");
        kernel_real_memcg(&version);
        dir_a = kernel_real_tmpdir("ka");
        dir_b = kernel_real_tmpdir("kb");
        mark_dir = kernel_real_tmpdir("kmark");
        hot_pid = hot_set(group_b, dir_b, &hot_fd);
        /* Negatives of the host's own that must stay: 5,000 made here, outside A. */
        kernel_real_storm(NULL, mark_dir, 5000);

        drops = kernel_real_drops();
        level0 = group_level(group_a);
        ds0 = dentry_state();
        kernel_real_storm(group_a, dir_a, 100000);
        level1 = group_level(group_a);
        ds1 = dentry_state();
        if (!quiet && kernel_real_drops() != drops)
                test_skip(teardown,
                          "another program dropped the host's caches during the storm "
                          "(/proc/vmstat drop_slab): nothing to measure on this machine now");
        cr_assert(level1 >= level0 + (8 << 20), "the storm's 100,000 dentries: %" PRIu64
                  " -> %" PRIu64 " bytes", level0, level1);
        cr_assert(kill(hot_pid, SIGUSR1) == 0); /* B counts from now on */

        start(NULL, "[cache a]\nadapter = kernel\ncgroup = %s\naction = reclaim\n"
                    "allow_force_empty = yes\n",
              strrchr(group_a, '/'));
        r0 = rotations("a");
        /* Gone: the group's level back within a quarter of the storm's. */
        while ((level = group_level(group_a)) > level0 + (level1 - level0) / 4 ||
               (quiet && dentry_state().nr_negative > ds0.nr_negative + 1000) ||
               astat("a", "actions") == 0 || astat("a", "actions") == UINT64_MAX) {
                /* Gone without the adapter: another program dropped the whole host's caches
                   (a benchmark's drop_caches): nothing to measure on this machine now. */
                if (rotations("a") >= r0 + 30 && !quiet &&
                    (kernel_real_drops() != drops ||
                     (astat("a", "actions") == 0 && level <= level0 + (level1 - level0) / 4)))
                        test_skip(teardown, "another program dropped the host's caches while the "
                                            "adapter worked (/proc/vmstat drop_slab)");
                cr_assert(rotations("a") < r0 + 30, "after 30 rotations: level %" PRIu64 " (%"
                          PRIu64 " before the storm, %" PRIu64 " after it), nr_negative %"
                          PRIu64 " (%" PRIu64 " before it)\n%s", level, level0, level1,
                          dentry_state().nr_negative, ds0.nr_negative,
                          test_read_file(env.daemon_err));
                usleep(50000);
        }
        now = dentry_state();
        fprintf(stderr, "kernel: the storm went in %" PRIu64 " rotations: the group's level %"
                PRIu64 " -> %" PRIu64 " -> %" PRIu64 " bytes, nr_negative %" PRIu64 " -> %"
                PRIu64 " -> %" PRIu64 "%s\n", rotations("a") - r0, level0, level1, level,
                ds0.nr_negative, ds1.nr_negative, now.nr_negative,
                quiet ? "" : " (host-wide: others count in)");
        cr_assert(count_in_log(version == 1 ? "force_empty on /" : "memory.reclaim on /") >= 1,
                  "%s", test_read_file(env.daemon_err));
        cr_assert(astat("a", "actions") >= 1);
        cr_assert_eq(astat("a", "action_errors"), 0);
        /* The slab's fall across the passes or trims: what the kernel frees after a write's
           last read (dentries go after an RCU grace period) is not counted, so it is a lower
           bound, and how low depends on the guest's speed: 47% of the storm with passes on 6.1
           in a guest, with trims 23% once and 5% in a loaded CI run (2026-12-07). Counted, not
           sized here: the storm's going is asserted by the group's level above and by
           RECLAIMED below. */
        cr_assert_gt(astat("a", "reclaimed_bytes"), 0, "reclaimed_bytes 0 of a storm of %" PRIu64,
                     level1 - level0);
        /* RECLAIMED: the dentries the passes took (host-wide fall: exact when quiet). */
        cr_assert(get_t(env.bus, cache_path("a"), CA_BUS_CACHE_IFACE, "Reclaimed") >=
                          (quiet ? 90000 : 1),
                  "Reclaimed %" PRIu64,
                  get_t(env.bus, cache_path("a"), CA_BUS_CACHE_IFACE, "Reclaimed"));

        /* B's hot set stayed: its passes made (almost) none of its dentries again. */
        hot_set_stop(&hot_pid, hot_fd, &recreated, &passes);
        made = restat_storm(mark_dir, 5000);
        fprintf(stderr, "kernel: B made %" PRIu64 " of its hot dentries again in %" PRIu64
                " passes of 2,000; %" PRIu64 " of the host's 5,000 negatives outside A were "
                "made again%s\n", recreated, passes, made,
                quiet ? "" : " (host-wide figures: information only on a shared host)");
        if (quiet) {
                cr_assert(recreated * 100 <= passes * 2000,
                          "B made %" PRIu64 " of its dentries again in %" PRIu64 " passes",
                          recreated, passes);
                cr_assert(made < 50, "the host's negatives outside A went: %" PRIu64, made);
                cr_assert(dentry_state().nr_negative <= ds0.nr_negative + 1000);
        }
        free(dir_a);
        free(dir_b);
        free(mark_dir);
}

/*
 * The issue's scenario: a service stats its 2,000 files every 200 ms and reads a 32 MB file
 * of its own every 2 s, and made a storm of 100,000 missing names before the daemon started.
 * At a 2 s interval, within 15 rotations (30 s), the storm goes (1,000 left at most), the hot
 * set makes under 1% of its dentries again and the group's page cache stays at 90% or more.
 * Classic LRU (the VM lab's 6.1) gets passes, again while one frees an eighth of a step, or
 * looks after KP_LOOK_ROTATIONS quiet ones (a pass the page cache met can leave much of the
 * storm); MGLRU (6.12) is swept. In a quiet kernel only (the VM lab's guests).
 */
Test(kernel, real_pass_keeps_the_hot_set_and_page_cache, .fini = teardown, .timeout = 900)
{
        uint64_t file0, file, min_file, r0, recreated, passes, left, gone = 0, files[20];
        struct ks_dentry_state_t ds0;
        char *dir, *big, cmd[1024];
        int version, hot_fd;
        pid_t reader;

        if (!kernel_real_quiet())
                test_skip(teardown,
                          "host-wide dentry figures need a quiet kernel: the VM lab (suite vm)");
        group_a = kernel_real_group_new("pass");
        if (!group_a)
                test_skip(teardown,
                          "no memory cgroup can be made here (not root, or none mounted)");
        kernel_real_memcg(&version);
        if (version != 2)
                test_skip(teardown, "cgroup v1: force_empty drops the page cache, no pass");
        dir = kernel_real_tmpdir("kpass");
        big = test_path_join(dir, "big");
        /* The group's own page cache: written from the group, read by it every 2 s. */
        snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && dd if=/dev/zero of=%s bs=1M "
                 "count=32 status=none && sync && exec sh -c 'while :; do cat %s > /dev/null; "
                 "sleep 2; done'", group_a, big, big);
        reader = fork();
        cr_assert(reader >= 0);
        if (reader == 0) {
                execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
                _exit(127);
        }
        while (group_file(group_a) < (32 << 20))
                usleep(100000);
        hot_pid = hot_set(group_a, dir, &hot_fd);
        ds0 = dentry_state();
        kernel_real_storm(group_a, dir, 100000);
        sleep(5); /* the file read twice more: its pages active */
        cr_assert(kill(hot_pid, SIGUSR1) == 0); /* the hot set counts from now on */

        /*
         * The group's page cache as it stands without the daemon: the median of 2 s (one read
         * of the file), not one reading, which once stood 1.5M above what the daemon's first
         * look found a second later.
         */
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                files[i] = group_file(group_a);
                usleep(100000);
        }
        qsort(files, ELEMENTSOF(files), sizeof(files[0]), test_cmp_u64);
        file0 = min_file = files[ELEMENTSOF(files) / 2];
        start(NULL, "[cache a]\nadapter = kernel\ncgroup = %s\naction = reclaim\n"
                    "interval = 2s\n",
              strrchr(group_a, '/'));
        r0 = rotations("a");
        while (rotations("a") < r0 + 15) {
                left = rise(dentry_state().nr_negative, ds0.nr_negative);
                if (left <= 1000 && gone == 0)
                        gone = rotations("a") - r0;
                file = group_file(group_a);
                if (file < min_file)
                        min_file = file;
                usleep(100000);
        }
        left = rise(dentry_state().nr_negative, ds0.nr_negative);
        fprintf(stderr, "kernel: after 15 rotations %" PRIu64 " of the storm's 100,000 "
                "negatives left (%s%" PRIu64 "); page cache %" PRIu64 " -> lowest %" PRIu64
                " bytes\n", left, gone ? "all gone at rotation " : "never all gone: ", gone,
                file0, min_file);
        cr_assert(left <= 1000, "%" PRIu64 " of the storm left after 15 rotations\n%s", left,
                  test_read_file(env.daemon_err));
        if (mglru()) {
                /* Swept: one walk takes every unreferenced dentry. */
                cr_assert(count_in_log("(one sweep)") >= 1, "%s",
                          test_read_file(env.daemon_err));
                cr_assert_eq(count_in_log("below its lowest priority"), 0, "%s",
                             test_read_file(env.daemon_err));
        }
        hot_set_stop(&hot_pid, hot_fd, &recreated, &passes);
        test_kill(reader);
        fprintf(stderr, "kernel: the hot set made %" PRIu64 " of its dentries again in %" PRIu64
                " passes of 2,000\n", recreated, passes);
        cr_assert(recreated * 100 < passes * 2000, "%" PRIu64 " re-created in %" PRIu64
                  " passes\n%s", recreated, passes, test_read_file(env.daemon_err));
        /* memory.reclaim's errnos on a real kernel: the swappiness= key asked once, taken or
           refused (EINVAL: 6.1 refuses it), neither an error; EAGAIN ends a pass, no error. */
        cr_assert_eq(count_in_log("memory.reclaim takes swappiness=0 here") +
                             count_in_log("memory.reclaim refuses swappiness=0 here"),
                     1, "%s", test_read_file(env.daemon_err));
        cr_assert_eq(astat("a", "action_errors"), 0, "%s", test_read_file(env.daemon_err));
        cr_assert(min_file * 100 >= file0 * 90, "page cache %" PRIu64 " -> %" PRIu64 "\n%s",
                  file0, min_file, test_read_file(env.daemon_err));
        cr_assert_eq(read_vfs_cache_pressure(), 100, "put back after the sweeps");
        free(big);
        free(dir);
}

/* On cgroup v2, action = auto reclaims; on MGLRU it says how (the VM lab's 6.12). */
Test(kernel, real_v2_auto_reclaims_and_says_how, .fini = teardown, .timeout = 300)
{
        char *s;
        int version;

        group_a = kernel_real_group_new("auto");
        if (!group_a)
                test_skip(teardown,
                          "no memory cgroup can be made here (not root, or none mounted)");
        kernel_real_memcg(&version);
        if (version != 2 || access("/sys/kernel/mm/lru_gen/enabled", F_OK) != 0)
                test_skip(teardown, "no cgroup v2 or no MGLRU in this kernel");
        start(NULL, "[cache a]\nadapter = kernel\ncgroup = %s\naction = auto\n",
              strrchr(group_a, '/'));
        s = get_s(env.bus, cache_path("a"), CA_BUS_CACHE_IFACE, "Mechanism");
        if (mglru()) {
                cr_assert_str_eq(s, "memory.reclaim");
                wait_log(0, "the kernel reclaims page cache with MGLRU: a group holding 32 MiB "
                            "of page cache or more gets sweeps, one without page cache trims");
                wait_rotations("a", 1);
                cr_assert_eq(astat("a", "mglru"), 1);
        } else {
                cr_assert_str_eq(s, "memory.reclaim", "classic LRU: a pass reaches dentries");
                wait_log(0, "the kernel reclaims page cache with the classic LRU: a group "
                            "holding 16 MiB of page cache or more gets passes");
                wait_rotations("a", 1);
                cr_assert_eq(astat("a", "mglru"), 0);
        }
        free(s);
}

/* The loop is free while the kernel reclaims: bus calls are answered during force_empty. */
struct getter {
        char address[300];
        _Atomic bool stop;
        uint64_t calls, failed, slowest_usec;
        char first_error[256]; /* what the first failed call said */
};

static void *getter_main(void *userdata)
{
        struct getter *g = userdata;
        sd_bus *bus = NULL;

        cr_assert(harness_connect(g->address, &bus) >= 0);
        while (!atomic_load(&g->stop)) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                uint64_t v, t = test_now_usec(), dt;

                int r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, cache_path("a"),
                                                    CA_BUS_CACHE_IFACE, "Objects", &error, 't',
                                                    &v);

                if (r < 0 && g->failed++ == 0)
                        snprintf(g->first_error, sizeof(g->first_error), "%s: %s (%s)",
                                 error.name ? error.name : "-",
                                 error.message ? error.message : "-", strerror(-r));
                sd_bus_error_free(&error);
                dt = test_now_usec() - t;
                if (dt > g->slowest_usec)
                        g->slowest_usec = dt;
                g->calls++;
        }
        sd_bus_flush_close_unref(bus);
        return NULL;
}

Test(kernel, real_loop_answers_while_the_kernel_reclaims, .fini = teardown, .timeout = 300)
{
        struct getter g = { 0 };
        pthread_t thread;
        char *dir;
        uint64_t actions;

        group_a = kernel_real_group_new("loop");
        if (!group_a)
                test_skip(teardown,
                          "no memory cgroup can be made here (not root, or none mounted)");
        start(NULL, "[cache a]\nadapter = kernel\ncgroup = %s\naction = reclaim\n"
                    "allow_force_empty = yes\n",
              strrchr(group_a, '/'));
        snprintf(g.address, sizeof(g.address), "%s", env.address);
        dir = kernel_real_tmpdir("kloop");
        wait_rotations("a", 1);
        actions = astat("a", "actions");
        cr_assert(pthread_create(&thread, NULL, getter_main, &g) == 0);
        /*
         * A storm, then the reclaim it calls for, within 5 rotations. Another program dropping
         * the host's cache meanwhile (a benchmark's drop_caches) takes the storm's dentries
         * before the adapter sees them grow: then another storm, three at most.
         */
        for (unsigned attempt = 0; attempt < 3 && astat("a", "actions") == actions; attempt++) {
                char sub[512];
                uint64_t r0;

                snprintf(sub, sizeof(sub), "%s/%u", dir, attempt);
                cr_assert(mkdir(sub, 0755) == 0);
                kernel_real_storm(group_a, sub, 200000);
                r0 = rotations("a");
                while (astat("a", "actions") == actions && rotations("a") < r0 + 5)
                        usleep(20000);
        }
        atomic_store(&g.stop, true);
        pthread_join(thread, NULL);
        cr_assert(astat("a", "actions") > actions, "no reclaim after 3 storms\n%s",
                  test_read_file(env.daemon_err));
        fprintf(stderr, "kernel: %" PRIu64 " Gets while %" PRIu64 " us of reclaim ran on the "
                "worker: slowest %" PRIu64 " us; the adapter held the loop %" PRIu64
                " us at most\n", g.calls, astat("a", "last_action_usec"), g.slowest_usec,
                astat("a", "loop_longest_usec"));
        cr_assert_eq(g.failed, 0, "%" PRIu64 " of %" PRIu64 " calls failed, the first: %s\n%s",
                     g.failed, g.calls, g.first_error, test_read_file(env.daemon_err));
        cr_assert(g.calls > 0);
        free(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* Fake trees.                                                                                 */

static void fake_start(int version, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fake_start(int version, const char *fmt, ...)
{
        char sections[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sections, sizeof(sections), fmt, ap);
        va_end(ap);
        if (!fake.root)
                kernel_fake_new(&fake, version, 100000, 20000);
        setenv("CACHEAGED_KERNEL_ROOT", fake.root, 1);
        start(NULL, "%s", sections);
}

/* Wait until root + @file holds @want (the adapter's last write there). */
static void wait_file(const char *file, const char *want)
{
        uint64_t until = test_now_usec() + 5 * ROTATION_WAIT_USEC;
        char *s;

        while (strcmp(s = kernel_fake_read(&fake, file), want) != 0) {
                cr_assert(test_now_usec() < until, "%s holds \"%s\", not \"%s\"\n%s", file, s,
                          want, test_read_file(env.daemon_err));
                free(s);
                usleep(20000);
        }
        free(s);
}

static void expect_file(const char *file, const char *want)
{
        char *s = kernel_fake_read(&fake, file);

        cr_assert_str_eq(s, want, "%s", file);
        free(s);
}

/*
 * memory.reclaim on a fake tree, whose "kernel" reclaims nothing: each pass is one step (it
 * took no slab), the first look a pass over what the group holds, a later one after the slab
 * grew by min_reclaim, or a look after KP_LOOK_ROTATIONS rotations without one where the group
 * holds page cache enough; reclaim_amount = SIZE writes that size every rotation; nothing
 * under memory pressure. How a pass goes on a real kernel: the VM lab's tests.
 */
Test(kernel, memory_reclaim_v2_passes_bounds_and_gates, .fini = teardown, .timeout = 300)
{
        const char *file = "/sys/fs/cgroup/system.slice/build.service/memory.reclaim";
        uint64_t put_off;
        char *s, text[256];

        kernel_fake_new(&fake, 2, 100000, 20000);
        free(kernel_fake_group(&fake, "/system.slice/build.service", 3 << 20, 2 << 20, 0));
        free(kernel_fake_group(&fake, "/system.slice/fixed.service", 3 << 20, 2 << 20, 0));
        fake_start(2, "[cache build]\nadapter = kernel\ncgroup = /system.slice/build.service\n"
                      "action = reclaim\n"
                      "[cache fixed]\nadapter = kernel\ncgroup = /system.slice/fixed.service\n"
                      "action = reclaim\nreclaim_amount = 16M\n");
        s = get_s(env.bus, cache_path("build"), CA_BUS_CACHE_IFACE, "Mechanism");
        cr_assert_str_eq(s, "memory.reclaim");
        free(s);
        /* The first look: the 2 MiB the group holds are aged like the rest. */
        wait_file(file, "262144 swappiness=0");
        wait_log(0, "memory.reclaim takes swappiness=0 here");
        wait_astat_at_least("build", "reclaim_steps", 1);
        cr_assert_eq(astat("build", "reclaim_steps"), 1, "the step took no slab: the pass ends");
        wait_log(0, "memory.reclaim on /system.slice/build.service: 1 step, 256.0K asked (the "
                    "last step took little slab)");

        /* Little page cache (3 MB): left alone, not even a look, and the part says why. */
        kernel_fake_write(&fake, file, "");
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/build.service/memory.stat",
                          "anon 1024000\nfile 3072000\nkernel 3145728\nslab 2162688\n"
                          "slab_reclaimable 2097152\nslab_unreclaimable 65536\n");
        wait_rotations("build", KP_LOOK_ROTATIONS + 2);
        expect_file(file, "");
        cr_assert_eq(astat("build", "reclaim_steps"), 1);
        cr_assert_eq(astat("build", "groups_left_alone"), 1);
        s = ctl("show build");
        cr_assert(strstr(s, "PartsNotAged=1\nPartState=/system.slice/build.service left alone: "
                            "2.9M page cache, below the pass floor (16.0M)"), "%s", s);
        free(s);
        s = ctl("status build");
        cr_assert(strstr(s, "enabled, 1 left alone"), "%s", s);
        free(s);
        /* Page cache enough: after KP_LOOK_ROTATIONS quiet rotations, a look (one step). */
        snprintf(text, sizeof(text), "anon 1024000\nfile %llu\nkernel 3145728\nslab 2162688\n"
                 "slab_reclaimable 2097152\nslab_unreclaimable 65536\n", KP_LOOK_MIN_FILE);
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/build.service/memory.stat", text);
        wait_file(file, "262144 swappiness=0");
        wait_log(0, "memory.reclaim on /system.slice/build.service: 1 step, 256.0K asked (the "
                    "last step took little slab), for a look for what passes left");
        wait_astat("build", "reclaim_steps", 2);

        /* 20 MiB of new reclaimable slab: a pass. */
        kernel_fake_write(&fake, file, "");
        free(kernel_fake_group(&fake, "/system.slice/build.service", 23 << 20, 22 << 20, 0));
        wait_file(file, "262144 swappiness=0");
        wait_astat("build", "group_slab_reclaimable_bytes", 22 << 20);
        wait_astat_at_least("build", "reclaim_asked_bytes", 3 * 262144);

        /* A fixed amount: one write of it at every rotation. */
        wait_file("/sys/fs/cgroup/system.slice/fixed.service/memory.reclaim",
                  "16777216 swappiness=0");
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/fixed.service/memory.reclaim", "");
        wait_file("/sys/fs/cgroup/system.slice/fixed.service/memory.reclaim",
                  "16777216 swappiness=0");

        /* Under memory pressure (the host's, then the group's) nothing is done. */
        set_psi(0, 20.0);
        wait_rotations("build", 2); /* a look under way before the pressure came ends */
        kernel_fake_write(&fake, file, "");
        free(kernel_fake_group(&fake, "/system.slice/build.service", 900 << 20, 890 << 20, 0));
        put_off = astat("build", "actions_put_off_pressure");
        wait_rotations("build", 2);
        expect_file(file, "");
        cr_assert(astat("build", "actions_put_off_pressure") >= put_off + 1);
        cr_assert(astat("build", "put_off_usec") > 0, "put off since then");
        s = get_s(env.bus, cache_path("build"), CA_BUS_CACHE_IFACE, "Deferred");
        cr_assert_str_eq(s, "memory pressure");
        free(s);
        cr_assert(get_t(env.bus, cache_path("build"), CA_BUS_CACHE_IFACE, "DeferredSinceUSec") >
                  0);
        s = ctl("status build");
        cr_assert(strstr(s, "deferred: memory pressure since "), "%s", s);
        free(s);
        set_psi(0, 0);
        free(kernel_fake_group(&fake, "/system.slice/build.service", 900 << 20, 890 << 20, 15.0));
        wait_rotations("build", 2);
        expect_file(file, "");
        /* The pressure gone, the growth is taken back. */
        free(kernel_fake_group(&fake, "/system.slice/build.service", 900 << 20, 890 << 20, 0));
        wait_file(file, "262144 swappiness=0");
        wait_rotations("build", 1);
        cr_assert_eq(astat("build", "put_off_usec"), 0);
        s = get_s(env.bus, cache_path("build"), CA_BUS_CACHE_IFACE, "Deferred");
        cr_assert_str_eq(s, "", "taken up again");
        free(s);
}

/*
 * MGLRU: a group holding page cache enough is swept (one write of KP_SWEEP_STEP with
 * vm.vfs_cache_pressure raised for its length, then put back as found); one with little page
 * cache gets a pass's steps; a value only a cacheaged killed during a sweep leaves is put back
 * to the kernel's default at start.
 */
Test(kernel, mglru_sweeps_groups_with_page_cache_enough, .fini = teardown, .timeout = 300)
{
        char *big, text[256];

        kernel_fake_new(&fake, 2, 100000, 20000);
        kernel_fake_write(&fake, "/sys/kernel/mm/lru_gen/enabled", "0x0007\n");
        snprintf(text, sizeof(text), "%d\n", KP_SWEEP_PRESSURE);
        kernel_fake_write(&fake, "/proc/sys/vm/vfs_cache_pressure", text);
        big = kernel_fake_group(&fake, "/big", 4 << 20, 3 << 20, 0);
        snprintf(text, sizeof(text), "anon 1024000\nfile %llu\nkernel 4194304\nslab 3211264\n"
                 "slab_reclaimable 3145728\nslab_unreclaimable 65536\n", KP_SWEEP_MIN_FILE);
        kernel_fake_write(&fake, "/sys/fs/cgroup/big/memory.stat", text);
        free(kernel_fake_group(&fake, "/small", 4 << 20, 3 << 20, 0));
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n"
                      "[cache small]\nadapter = kernel\ncgroup = /small\naction = reclaim\n");
        wait_log(0, "vm.vfs_cache_pressure was 204800, left by a cacheaged stopped while it "
                    "was set (no record: the kernel's default): put back to 100");
        wait_file("/sys/fs/cgroup/big/memory.reclaim", "131072 swappiness=0");
        wait_log(0, "memory.reclaim on /big: 1 step, 128.0K asked (one sweep)");
        /* Under the floor, not without page cache: left alone (no write known to be safe). */
        wait_rotations("small", 2);
        expect_file("/sys/fs/cgroup/small/memory.reclaim", "");
        cr_assert_eq(astat("small", "groups_left_alone"), 1);
        {
                char *show = ctl("show small");

                cr_assert(strstr(show, "left alone: 20.0M page cache, below the sweep floor "
                                       "(32.0M)"), "%s", show);
                free(show);
        }
        wait_rotations("big", 1);
        expect_file("/proc/sys/vm/vfs_cache_pressure", "100");

        /* An administrator's value is put back as it was. */
        kernel_fake_write(&fake, "/proc/sys/vm/vfs_cache_pressure", "150\n");
        kernel_fake_write(&fake, "/sys/fs/cgroup/big/memory.reclaim", "");
        snprintf(text, sizeof(text), "anon 1024000\nfile %llu\nkernel 30000000\nslab 25000000\n"
                 "slab_reclaimable 24000000\nslab_unreclaimable 65536\n", KP_SWEEP_MIN_FILE);
        kernel_fake_write(&fake, "/sys/fs/cgroup/big/memory.stat", text);
        wait_file("/sys/fs/cgroup/big/memory.reclaim", "131072 swappiness=0");
        wait_rotations("big", 1);
        expect_file("/proc/sys/vm/vfs_cache_pressure", "150");
        cr_assert_geq(astat("big", "sweeps"), 2);
        cr_assert_lt(astat("big", "sweep_window_max_usec"), 5000000);
        /* sweeps_cut is not asserted: a loaded machine (CI's ASan build) may hold the fake
           write past the guard's 100 ms; the guard's cut has tests of its own. */
        cr_assert_leq(astat("big", "sweeps_cut"), astat("big", "sweeps"));
        cr_assert_eq(astat("small", "sweeps"), 0);
        free(big);
}

/* ---- the knob a sweep sets, whatever happens to the daemon (lib/adapters/kernel-knob.h) ---- */

#define KNOB "/proc/sys/vm/vfs_cache_pressure"
#define RECORD "/run/cacheage/sysctl/vm.vfs_cache_pressure"
#define KN_TEST_LONG_USEC 3600000000ULL /* a guard that never fires during a test */

/* An MGLRU fake with the administrator's vfs_cache_pressure (150) and a group to sweep. */
static void knob_fake(const char *group)
{
        char text[256], path[256], *dir;

        if (!fake.root) {
                kernel_fake_new(&fake, 2, 100000, 20000);
                kernel_fake_write(&fake, "/sys/kernel/mm/lru_gen/enabled", "0x0007\n");
                kernel_fake_write(&fake, KNOB, "150");
                setenv("CACHEAGED_KERNEL_ROOT", fake.root, 1);
        }
        dir = kernel_fake_group(&fake, group, 4 << 20, 3 << 20, 0);
        snprintf(text, sizeof(text), "anon 1024000\nfile %llu\nkernel 4194304\nslab 3211264\n"
                 "slab_reclaimable 3145728\nslab_unreclaimable 65536\n", KP_SWEEP_MIN_FILE);
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.stat", group);
        kernel_fake_write(&fake, path, text);
        free(dir);
}

/* The hooked kernel.so, its sweeps held at a gate; the guard's bound @guard_usec. */
static void knob_hooked(uint64_t guard_usec)
{
        char v[32];

        gate_dir = test_mkdtemp("cacheage-kgate");
        setenv("CA_KERNEL_TEST_GATE", gate_dir, 1);
        snprintf(v, sizeof(v), "%" PRIu64, guard_usec);
        setenv("CA_KERNEL_TEST_GUARD_USEC", v, 1);
        plugin_dir = test_env("CA_KERNEL_HOOKED_DIR");
}

/* Wait until a sweep holds at the gate (it set the knob), then take the mark away. */
static void wait_held(void)
{
        char *held = test_path_join(gate_dir, "held");
        uint64_t until = test_now_usec() + 5 * ROTATION_WAIT_USEC;

        while (access(held, F_OK) < 0) {
                cr_assert(test_now_usec() < until, "no sweep held at the gate\n%s",
                          test_read_file(env.daemon_err));
                usleep(10000);
        }
        free(held);
}

/* cacheaged with @args on the test's fake root: its exit status (it must exit in 30 s). */
static int run_cacheaged(const char *const *args, const char *log)
{
        const char *argv[16] = { test_env("CACHEAGED") };
        int status;
        pid_t pid;
        size_t n = 1;

        for (; *args && n < 15; args++)
                argv[n++] = *args;
        argv[n] = NULL;
        pid = test_spawn(argv, log, log, NULL, NULL);
        cr_assert(test_wait_exit(pid, 30000000, &status), "cacheaged did not exit");
        cr_assert(WIFEXITED(status), "%d", status);
        return WEXITSTATUS(status);
}

/* SIGKILL the daemon held in a sweep: the knob stays set, the record says what it was. */
static void kill_held(void)
{
        char *rec;
        int st;

        wait_held();
        expect_file(KNOB, "204800");
        rec = kernel_fake_read(&fake, RECORD);
        cr_assert_str_eq(rec, "150 204800\n");
        free(rec);
        cr_assert_eq(kill(env.daemon_pid, SIGKILL), 0);
        cr_assert_eq(waitpid(env.daemon_pid, &st, 0), env.daemon_pid);
        env.daemon_pid = -1;
        test_rm_rf(gate_dir);
        cr_assert_eq(mkdir(gate_dir, 0755), 0);
        expect_file(KNOB, "204800");
}

/*
 * Killed in the middle of a sweep, vm.vfs_cache_pressure left at 204800: each later start puts
 * the administrator's 150 back (not the kernel's default), whatever its configuration: one
 * refused (exit 6), one without a kernel cache, `--restore-sysctl` alone (the unit's
 * ExecStopPost=); `--check-config` writes nothing of the host.
 */
Test(kernel, killed_mid_sweep_every_start_puts_the_value_back, .fini = teardown, .timeout = 300)
{
        char *bad = NULL, *dcache = NULL, *log = NULL, *dir = test_mkdtemp("cacheage-kstart");
        knob_fake("/big");
        knob_hooked(3600000000ULL);
        bad = test_path_join(dir, "bad.conf");
        test_write_file(bad, "[daemon]\ninterval = forever\n");
        dcache = test_path_join(dir, "dcache.conf");
        test_write_file(dcache, "[daemon]\nplugin_dir = %s\n[cache lab]\nadapter = dcache\n"
                        "source = workload:statstorm\n", test_env("CA_ADAPTER_DIR"));
        log = test_path_join(dir, "log");

        /* A configuration refused: exit 6, and the value is back. */
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        kill_held();
        cr_assert_eq(run_cacheaged((const char *[]){ "--config", bad, "--bus", "none", NULL },
                                   log), 6, "%s", test_read_file(log));
        expect_file(KNOB, "150");
        cr_assert(strstr(test_read_file(log), "was 204800, left by a cacheaged stopped while it "
                                              "was set: put back to 150"), "%s",
                  test_read_file(log));
        cr_assert_str_eq(kernel_fake_read(&fake, RECORD), "", "the record goes with it");

        /* A configuration without a kernel cache. */
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        kill_held();
        {
                const char *argv[] = { test_env("CACHEAGED"), "--config", dcache, "--bus", "none",
                                       NULL };
                uint64_t until = test_now_usec() + 30000000;
                char *v;

                other_pid = test_spawn(argv, log, log, NULL, NULL);
                while (strcmp(v = kernel_fake_read(&fake, KNOB), "150") != 0) {
                        cr_assert(test_now_usec() < until, "still %s\n%s", v,
                                  test_read_file(log));
                        free(v);
                        usleep(10000);
                }
                free(v);
                while (!strstr(test_read_file(log), "Started, 1 cache")) {
                        cr_assert(test_now_usec() < until, "%s", test_read_file(log));
                        usleep(10000);
                }
                cr_assert_eq(test_stop(other_pid, 30000000), 0, "%s", test_read_file(log));
                other_pid = -1;
        }

        /* --check-config writes nothing; --restore-sysctl alone puts it back. */
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        kill_held();
        cr_assert_eq(run_cacheaged((const char *[]){ "--config", dcache, "--check-config",
                                                     NULL }, log), 0, "%s", test_read_file(log));
        expect_file(KNOB, "204800");
        cr_assert_str_eq(kernel_fake_read(&fake, RECORD), "150 204800\n");
        cr_assert_eq(run_cacheaged((const char *[]){ "--restore-sysctl", NULL }, log), 0, "%s",
                     test_read_file(log));
        expect_file(KNOB, "150");
        cr_assert_eq(run_cacheaged((const char *[]){ "--restore-sysctl", NULL }, log), 0,
                     "nothing to do is no error");
        expect_file(KNOB, "150");
        test_rm_rf(dir);
        free(dir);
        free(bad);
        free(dcache);
        free(log);
}

/*
 * While one daemon holds the knob in a sweep: a reload that makes a kernel cache anew is checked
 * in a child at once (it used to hang on the sweep's lock until check_timeout) and writes
 * nothing of the host; a second cacheaged on the same host starts without touching the knob
 * and puts its own sweeps off (sweeps_put_off_busy) until the first has put the value back.
 */
Test(kernel, reload_and_another_daemon_during_a_sweep, .fini = teardown, .timeout = 300)
{
        char *conf2 = NULL, *log2 = NULL, *dir = test_mkdtemp("cacheage-kother");
        uint64_t t0;

        knob_fake("/big");
        knob_fake("/big2");
        knob_hooked(3600000000ULL);
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        wait_held();
        expect_file(KNOB, "204800");

        /* The reload's check runs the kernel adapter's create in a child. */
        test_write_file(env.conf, "[daemon]\nplugin_dir = %s\ninterval = 1s\n"
                        "idle_cpu_pressure = 0\nidle_memory_pressure = 0\nlog_level = debug\n"
                        "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n"
                        "[cache host]\nadapter = kernel\n", plugin_dir);
        t0 = test_now_usec();
        cr_assert_eq(kill(env.daemon_pid, SIGHUP), 0);
        wait_log(0, "Configuration reloaded, 2 caches");
        cr_assert_lt(test_now_usec() - t0, 5000000, "the check did not wait for the sweep");
        expect_file(KNOB, "204800");
        cr_assert_str_eq(kernel_fake_read(&fake, RECORD), "150 204800\n", "nothing written");

        /* A second daemon (an administrator's trial) on the same host. */
        unsetenv("CA_KERNEL_TEST_GATE");
        conf2 = test_path_join(dir, "second.conf");
        log2 = test_path_join(dir, "log");
        test_write_file(conf2, "[daemon]\nplugin_dir = %s\ninterval = 1s\n"
                        "idle_cpu_pressure = 0\nidle_memory_pressure = 0\nlog_level = debug\n"
                        "[cache trial]\nadapter = kernel\ncgroup = /big2\naction = reclaim\n",
                        test_env("CA_ADAPTER_DIR"));
        {
                const char *argv[] = { test_env("CACHEAGED"), "--config", conf2, "--bus", "none",
                                       NULL };
                uint64_t until = test_now_usec() + 60000000;

                other_pid = test_spawn(argv, log2, log2, NULL, NULL);
                /* Its rotations come and go; the knob stays the first daemon's. */
                while (!strstr(test_read_file(log2), "put off: another cacheaged")) {
                        cr_assert(test_now_usec() < until, "%s", test_read_file(log2));
                        expect_file(KNOB, "204800");
                        usleep(20000);
                }
        }
        cr_assert_null(strstr(test_read_file(log2), "put back to"), "%s", test_read_file(log2));
        expect_file(KNOB, "204800");
        gate_release();
        wait_file(KNOB, "150");
        /* The second daemon sweeps once the first is done, and puts 150 back too. */
        wait_file("/sys/fs/cgroup/big2/memory.reclaim", "131072 swappiness=0");
        cr_assert_eq(test_stop(other_pid, 30000000), 0, "%s", test_read_file(log2));
        other_pid = -1;
        expect_file(KNOB, "150");
        cr_assert_str_eq(kernel_fake_read(&fake, RECORD), "");
        test_rm_rf(dir);
        free(dir);
        free(conf2);
        free(log2);
}

/*
 * The guard puts vm.vfs_cache_pressure back after its bound, while the sweep's write is still
 * held; the statistics say the window was cut, and how long it was.
 */
Test(kernel, guard_puts_the_knob_back_while_a_sweep_is_held, .fini = teardown, .timeout = 300)
{
        uint64_t w;

        knob_fake("/big");
        knob_hooked(50000);
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        wait_held();
        wait_file(KNOB, "150");
        cr_assert_str_eq(kernel_fake_read(&fake, RECORD), "");
        cr_assert(access(test_path_join(gate_dir, "held"), F_OK) == 0, "still held");
        gate_release();
        wait_astat_at_least("big", "sweeps_cut", 1);
        w = astat("big", "sweep_window_max_usec");
        cr_assert(w >= 50000 && w < 2000000, "%" PRIu64 " us", w);
        cr_assert_geq(astat("big", "sweep_window_p50_usec"), 50000);
}

/*
 * Something on the host reclaims: a kernel file's counter moves every @period_usec, the file
 * written whole (renamed over the old one), as the kernel's file reads: @before, the count,
 * @after.
 */
struct reclaim_counter {
        const char *file, *before, *after;
        useconds_t period_usec;
};

static void *counter_moves(void *userdata)
{
        const struct reclaim_counter *c = userdata;
        char *path = test_path_join(fake.root, c->file), tmp[PATH_MAX];
        unsigned n = 0;

        snprintf(tmp, sizeof(tmp), "%s.new", path);
        while (atomic_load(&reclaiming)) {
                test_write_file(tmp, "%s%u%s", c->before, ++n, c->after);
                cr_assert_eq(rename(tmp, path), 0);
                usleep(c->period_usec);
        }
        free(path);
        return NULL;
}

static void reclaimer_start(const struct reclaim_counter *c)
{
        atomic_store(&reclaiming, true);
        cr_assert_eq(pthread_create(&reclaimer, NULL, counter_moves, (void *)c), 0);
        have_reclaimer = true;
}

/* kswapd's counter moves: no sweep until it stops. */
Test(kernel, sweep_put_off_while_the_host_reclaims, .fini = teardown, .timeout = 300)
{
        static const struct reclaim_counter kswapd = {
                "proc/vmstat", "pgscan_kswapd ", "\npgscan_direct 0\nslabs_scanned 0\n", 10000
        };

        knob_fake("/big");
        reclaimer_start(&kswapd);
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        wait_astat_at_least("big", "sweeps_put_off_reclaim", 3);
        expect_file("/sys/fs/cgroup/big/memory.reclaim", "");
        expect_file(KNOB, "150");
        wait_log(0, "sweep put off: something else on the host reclaims");
        reclaimer_stop();
        wait_file("/sys/fs/cgroup/big/memory.reclaim", "131072 swappiness=0");
        wait_astat_at_least("big", "sweeps", 1);
        expect_file(KNOB, "150");
}

/*
 * A neighbour under its own memory.high reclaims in bursts, whenever it allocates: quiet for the
 * 100 ms before a raise and reclaiming in the window all the same. So a sweep also waits while
 * that reclaim moved since the last rotation began (1 s here), not only in the last 100 ms: with
 * a burst every 200 ms, never; once the neighbour is still, at the next rotation but one.
 */
Test(kernel, sweep_put_off_while_a_neighbour_reclaimed_since_the_last_rotation,
     .fini = teardown, .timeout = 300)
{
        /* A neighbour reclaiming on its own: its memory.events high counted up every 200 ms. */
        static const struct reclaim_counter neighbour = {
                "sys/fs/cgroup/neighbour/memory.events", "low 0\nhigh ",
                "\nmax 0\noom 0\noom_kill 0\n", 200000
        };
        char *dir;

        knob_fake("/big");
        dir = kernel_fake_group(&fake, "/neighbour", 4 << 20, 3 << 20, 0);
        free(dir);
        reclaimer_start(&neighbour);
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        wait_astat_at_least("big", "sweeps_put_off_reclaim", 4);
        cr_assert_eq(astat("big", "sweeps"), 0, "a sweep while the neighbour reclaimed");
        expect_file("/sys/fs/cgroup/big/memory.reclaim", "");
        expect_file(KNOB, "150");
        reclaimer_stop();
        wait_file("/sys/fs/cgroup/big/memory.reclaim", "131072 swappiness=0");
        wait_astat_at_least("big", "sweeps", 1);
        expect_file(KNOB, "150");
}

/*
 * The machine runs the daemon late (the hooked kernel.so: while a file is there, the sleep before
 * a sweep wakes 30 ms late, as in a starved guest): no sweep, each put off and counted, until it
 * runs on time again. The guard's bound alone could not keep the window short there.
 */
Test(kernel, sweep_put_off_while_the_daemon_runs_late, .fini = teardown, .timeout = 300)
{
        char *late;

        knob_fake("/big");
        knob_hooked(KN_TEST_LONG_USEC);
        late = test_path_join(gate_dir, "late");
        test_write_file(late, "%s", "");
        setenv("CA_KERNEL_TEST_LATE", late, 1);
        unsetenv("CA_KERNEL_TEST_GATE"); /* no sweep held */
        fake_start(2, "[cache big]\nadapter = kernel\ncgroup = /big\naction = reclaim\n");
        wait_astat_at_least("big", "sweeps_put_off_late", 3);
        expect_file("/sys/fs/cgroup/big/memory.reclaim", "");
        expect_file(KNOB, "150");
        cr_assert_eq(astat("big", "sweeps"), 0);
        cr_assert_eq(astat("big", "sweeps_put_off_reclaim"), 0);
        wait_log(0, "sweep put off: the machine ran the daemon late");
        cr_assert_eq(unlink(late), 0);
        wait_file("/sys/fs/cgroup/big/memory.reclaim", "131072 swappiness=0");
        wait_astat_at_least("big", "sweeps", 1);
        expect_file(KNOB, "150");
        unsetenv("CA_KERNEL_TEST_LATE");
        free(late);
}

/* The real vm.vfs_cache_pressure a test found, put back after it (0: none to put back). */
static uint64_t knob_found;

static void real_knob_teardown(void)
{
        teardown();
        if (knob_found) {
                char v[32];

                snprintf(v, sizeof(v), "%" PRIu64, knob_found);
                test_write_file("/proc/sys/vm/vfs_cache_pressure", "%s", v);
                knob_found = 0;
        }
}

/* Start the daemon on the real kernel, held in its first sweep, then SIGKILL it. */
static void real_kill_held(const char *group, char *log_for)
{
        char *rec;
        int st;

        start(NULL, "[cache a]\nadapter = kernel\ncgroup = %s\naction = reclaim\n"
                    "interval = 2s\n", group);
        wait_held();
        cr_assert_eq(read_vfs_cache_pressure(), 204800);
        rec = test_read_file("/run/cacheage/sysctl/vm.vfs_cache_pressure");
        cr_assert_str_eq(rec, "150 204800\n");
        free(rec);
        cr_assert_eq(kill(env.daemon_pid, SIGKILL), 0);
        cr_assert_eq(waitpid(env.daemon_pid, &st, 0), env.daemon_pid);
        env.daemon_pid = -1;
        test_rm_rf(gate_dir);
        cr_assert_eq(mkdir(gate_dir, 0755), 0);
        cr_assert_eq(read_vfs_cache_pressure(), 204800, "left raised by the kill");
        (void)log_for;
}

/*
 * On a real MGLRU kernel (the 6.12 guest): a daemon killed while its sweep holds
 * vm.vfs_cache_pressure at 204800 leaves it so; a start refused for its configuration, one
 * without a kernel cache, and `--restore-sysctl` alone each put the administrator's 150 back.
 * Then, unheld, real sweeps of a storm of 100,000: the knob raised 250 ms at most each time
 * (the guard), while the kernel's write may take longer.
 */
Test(kernel, real_sweep_killed_every_start_puts_the_value_back, .fini = real_knob_teardown,
     .timeout = 900)
{
        char *dir, *big, cmd[1024], *bad, *dcache, *log, *conf_dir;
        const char *argv[8];
        int version, status;
        pid_t reader, pid;
        uint64_t w;

        if (!kernel_real_quiet())
                test_skip(real_knob_teardown, "the host's vfs_cache_pressure is changed only in "
                          "a quiet kernel: the VM lab (suite vm)");
        group_a = kernel_real_group_new("sweepkill");
        if (!group_a)
                test_skip(real_knob_teardown,
                          "no memory cgroup can be made here (not root, or none mounted)");
        kernel_real_memcg(&version);
        if (version != 2 || !mglru())
                test_skip(real_knob_teardown, "sweeps are for MGLRU kernels (6.12): "
                          "classic LRU passes");
        knob_found = read_vfs_cache_pressure();
        test_write_file("/proc/sys/vm/vfs_cache_pressure", "150");
        dir = kernel_real_tmpdir("ksweepkill");
        big = test_path_join(dir, "big");
        snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && dd if=/dev/zero of=%s bs=1M "
                 "count=40 status=none && sync && exec sh -c 'while :; do cat %s > /dev/null; "
                 "sleep 2; done'", group_a, big, big);
        reader = fork();
        cr_assert(reader >= 0);
        if (reader == 0) {
                execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
                _exit(127);
        }
        while (group_file(group_a) < (36 << 20))
                usleep(100000);
        kernel_real_storm(group_a, dir, 20000);
        conf_dir = test_mkdtemp("cacheage-ksweepkill");
        bad = test_path_join(conf_dir, "bad.conf");
        test_write_file(bad, "[daemon]\ninterval = forever\n");
        dcache = test_path_join(conf_dir, "dcache.conf");
        test_write_file(dcache, "[daemon]\nplugin_dir = %s\n[cache lab]\nadapter = dcache\n"
                        "source = workload:statstorm\n", test_env("CA_ADAPTER_DIR"));
        log = test_path_join(conf_dir, "log");
        knob_hooked(3600000000ULL);

        real_kill_held(strrchr(group_a, '/'), log);
        status = run_cacheaged((const char *[]){ "--config", bad, "--bus", "none", NULL }, log);
        cr_assert_eq(status, 6, "%s", test_read_file(log));
        cr_assert_eq(read_vfs_cache_pressure(), 150, "%s", test_read_file(log));

        real_kill_held(strrchr(group_a, '/'), log);
        argv[0] = test_env("CACHEAGED");
        argv[1] = "--config";
        argv[2] = dcache;
        argv[3] = "--bus";
        argv[4] = "none";
        argv[5] = NULL;
        pid = test_spawn(argv, log, log, NULL, NULL);
        while (!strstr(test_read_file(log), "Started, 1 cache"))
                usleep(20000);
        cr_assert_eq(read_vfs_cache_pressure(), 150, "%s", test_read_file(log));
        cr_assert_eq(test_stop(pid, 30000000), 0);

        real_kill_held(strrchr(group_a, '/'), log);
        cr_assert_eq(run_cacheaged((const char *[]){ "--restore-sysctl", NULL }, log), 0);
        cr_assert_eq(read_vfs_cache_pressure(), 150);

        /* Unheld: real sweeps, each window bounded by the guard. */
        unsetenv("CA_KERNEL_TEST_GATE");
        unsetenv("CA_KERNEL_TEST_GUARD_USEC");
        plugin_dir = NULL;
        kernel_real_storm(group_a, dir, 100000);
        start(NULL, "[cache a]\nadapter = kernel\ncgroup = %s\naction = reclaim\n"
                    "interval = 2s\n", strrchr(group_a, '/'));
        wait_astat_at_least("a", "sweeps", 1);
        w = astat("a", "sweep_window_max_usec");
        fprintf(stderr, "kernel: %" PRIu64 " sweeps, windows p50 %" PRIu64 " us, longest %"
                PRIu64 " us, %" PRIu64 " cut by the guard; the last write took %" PRIu64
                " us\n", astat("a", "sweeps"), astat("a", "sweep_window_p50_usec"), w,
                astat("a", "sweeps_cut"), astat("a", "last_action_usec"));
        /*
         * The guard, not the write, ends the window: one longer than 250 ms (a guest the host
         * starved after the sweep began) must be one the guard cut, put back while the write
         * was still in the kernel. How long the windows are is the benchmark's figure
         * (doc/benchmarks.md), not a timed assertion.
         */
        if (w >= 250000)
                cr_assert(astat("a", "sweeps_cut") >= 1 && w < astat("a", "last_action_usec"),
                          "the knob stayed raised %" PRIu64 " us, not cut by the guard\n%s", w,
                          test_read_file(env.daemon_err));
        bus_env_stop_daemon(&env);
        cr_assert_eq(read_vfs_cache_pressure(), 150);
        test_kill(reader);
        test_rm_rf(conf_dir);
        free(conf_dir);
        free(bad);
        free(dcache);
        free(log);
        free(big);
        free(dir);
}

/*
 * First, no harm, in a slice on classic LRU: a group with no page cache is trimmed (one write of
 * 4K with vm.vfs_cache_pressure at 1 for its length, then put back), one with 16 MiB or more
 * gets passes, one between is left alone and says why in show, status and the metrics. With
 * swap on and no swappiness=0 for the write, the one without page cache is left alone too.
 */
Test(kernel, slice_trims_passes_and_leaves_alone, .fini = teardown, .timeout = 300)
{
        const char *a = "/sys/fs/cgroup/system.slice/a.service";
        char path[256], *s;

        kernel_fake_new(&fake, 2, 100000, 20000);
        kernel_fake_write(&fake, KNOB, "150");
        free(kernel_fake_group(&fake, "/system.slice/a.service", 3 << 20, 2 << 20, 0));
        snprintf(path, sizeof(path), "%s/memory.stat", a);
        kernel_fake_write(&fake, path, "anon 1024000\nfile 0\nkernel 3145728\nslab 2162688\n"
                                       "slab_reclaimable 2097152\nslab_unreclaimable 65536\n");
        free(kernel_fake_group(&fake, "/system.slice/b.service", 3 << 20, 2 << 20, 0));
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/b.service/memory.stat",
                          "anon 1024000\nfile 4194304\nshmem 1048576\nkernel 3145728\n"
                          "slab 2162688\nslab_reclaimable 2097152\nslab_unreclaimable 65536\n");
        free(kernel_fake_group(&fake, "/system.slice/c.service", 3 << 20, 2 << 20, 0));
        free(kernel_fake_group(&fake, "/system.slice/d.service", 3 << 20, 2 << 20, 0));
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/d.service/memory.stat",
                          "anon 1024000\nfile 65536\nkernel 3145728\nslab 2162688\n"
                          "slab_reclaimable 2097152\nslab_unreclaimable 65536\n");
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "action = reclaim\n");
        wait_file("/sys/fs/cgroup/system.slice/a.service/memory.reclaim", "4096 swappiness=0");
        /* d's 64K (a directory's blocks): a trim too, those taken first by another write. */
        wait_file("/sys/fs/cgroup/system.slice/d.service/memory.reclaim", "4096 swappiness=0");
        wait_log(0, "memory.reclaim on /system.slice/a.service: 1 step, 4.0K asked (one trim)");
        wait_file("/sys/fs/cgroup/system.slice/c.service/memory.reclaim", "262144 swappiness=0");
        wait_astat_at_least("services", "trims", 2);
        wait_astat("services", "groups_trimmed", 2);
        cr_assert_eq(astat("services", "groups_passed"), 1);
        cr_assert_eq(astat("services", "groups_left_alone"), 1);
        expect_file(KNOB, "150");
        cr_assert_str_eq(kernel_fake_read(&fake, RECORD), "");
        expect_file("/sys/fs/cgroup/system.slice/b.service/memory.reclaim", "");
        s = ctl("show services");
        cr_assert(strstr(s, "PartState=/system.slice/b.service left alone: 3.0M page cache, "
                            "below the pass floor (16.0M)"), "%s", s);
        free(s);
        s = ctl("show --json services");
        cr_assert(strstr(s, "\"state\":\"left alone: 3.0M page cache"), "%s", s);
        free(s);
        s = ctl("status");
        cr_assert(strstr(s, "enabled, 1 left alone"), "%s", s);
        free(s);
        s = ctl("metrics");
        cr_assert(strstr(s, "cacheage_part_not_aged{cache=\"services\",adapter=\"kernel\",group=\"/system.slice/"
                            "b.service\"} 1"), "%s", s);
        cr_assert(strstr(s, "cacheage_part_not_aged{cache=\"services\",adapter=\"kernel\",group=\"/system.slice/"
                            "a.service\"} 0"), "%s", s);
        free(s);
        wait_log(0, "1 of 4 groups left alone");

        /* Swap on, and no swappiness=0 for the writes: no trim (it would swap a out). */
        bus_env_stop_daemon(&env);
        kernel_fake_write(&fake, "/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n"
                                                "/dev/vdb\tpartition\t1048572\t0\t-2\n");
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/a.service/memory.reclaim", "");
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "action = reclaim\nswappiness = kernel\n");
        wait_astat("services", "groups_left_alone", 3);
        wait_rotations("services", 2);
        expect_file("/sys/fs/cgroup/system.slice/a.service/memory.reclaim", "");
        s = ctl("show services");
        cr_assert(strstr(s, "/system.slice/a.service left alone: 0B page cache, swap on and no "
                            "swappiness=0 for the write"), "%s", s);
        free(s);
}

/*
 * A rotation's time for actions spent (here: after one group's), the other groups wait, are
 * shown waiting, and come first at the next rotation: a slice's first look is spread.
 */
Test(kernel, slice_first_look_spread_over_rotations, .fini = teardown, .timeout = 300)
{
        char name[64], path[128];
        uint64_t waiting;

        kernel_fake_new(&fake, 2, 100000, 20000);
        for (int i = 0; i < 6; i++) {
                snprintf(name, sizeof(name), "/system.slice/s%d.service", i);
                free(kernel_fake_group(&fake, name, 3 << 20, 2 << 20, 0));
        }
        knob_hooked(KN_TEST_LONG_USEC);
        unsetenv("CA_KERNEL_TEST_GATE");
        setenv("CA_KERNEL_TEST_ACT_USEC", "1", 1);
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "action = reclaim\n");
        wait_astat_at_least("services", "groups_waiting", 4);
        waiting = astat("services", "groups_waiting");
        cr_assert(waiting <= 5, "%" PRIu64, waiting);
        {
                char *s = ctl("show services");

                cr_assert(strstr(s, "waits: the rotation's time for actions was spent"), "%s", s);
                free(s);
        }
        /* One group a rotation, each in its turn: all six passed over within six rotations. */
        for (int i = 0; i < 6; i++) {
                snprintf(path, sizeof(path), "/sys/fs/cgroup/system.slice/s%d.service/"
                         "memory.reclaim", i);
                wait_file(path, "262144 swappiness=0");
        }
        unsetenv("CA_KERNEL_TEST_ACT_USEC");
}

/*
 * cgroup = PATH/\*: every child group of a slice is a part with its own first look and passes,
 * less those exclude names; groups that start and stop are followed; the figures are the
 * groups' sums.
 */
Test(kernel, slice_groups_followed_and_excluded, .fini = teardown, .timeout = 300)
{
        char *b, *s;

        kernel_fake_new(&fake, 2, 100000, 20000);
        free(kernel_fake_group(&fake, "/system.slice/a.service", 4 << 20, 3 << 20, 0));
        b = kernel_fake_group(&fake, "/system.slice/b.service", 6 << 20, 5 << 20, 0);
        free(kernel_fake_group(&fake, "/system.slice/c.service", 8 << 20, 7 << 20, 0));
        kernel_fake_write(&fake, "/sys/fs/cgroup/system.slice/memory.reclaim", "");
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "exclude = c.service  d-*.service\naction = reclaim\n");
        wait_file("/sys/fs/cgroup/system.slice/a.service/memory.reclaim", "262144 swappiness=0");
        wait_file("/sys/fs/cgroup/system.slice/b.service/memory.reclaim", "262144 swappiness=0");
        /* The passes are written on the adapter's thread, the figures published after it. */
        wait_astat("services", "groups", 2);
        cr_assert_eq(astat("services", "group_slab_reclaimable_bytes"), 8 << 20,
                     "a's and b's, summed");
        cr_assert_eq(astat("services", "group_missing"), UINT64_MAX, "a slice has no one group");
        expect_file("/sys/fs/cgroup/system.slice/c.service/memory.reclaim", "");
        expect_file("/sys/fs/cgroup/system.slice/memory.reclaim", "");
        /* show lists the groups, those that gave most first (here all gave nothing). */
        s = ctl("show services");
        cr_assert(strstr(s, "Parts=2\n") &&
                  strstr(s, "Part=/system.slice/a.service reclaimed 0B (0 objects), holds 3.0M") &&
                  strstr(s, "Part=/system.slice/b.service reclaimed 0B (0 objects), holds 5.0M"),
                  "%s", s);
        free(s);

        /* A service started since: followed, its first look a pass; d-1 is excluded too. */
        free(kernel_fake_group(&fake, "/system.slice/e.service", 3 << 20, 2 << 20, 0));
        free(kernel_fake_group(&fake, "/system.slice/d-1.service", 3 << 20, 2 << 20, 0));
        wait_file("/sys/fs/cgroup/system.slice/e.service/memory.reclaim", "262144 swappiness=0");
        wait_rotations("services", 1);
        cr_assert_eq(astat("services", "groups"), 3);
        expect_file("/sys/fs/cgroup/system.slice/d-1.service/memory.reclaim", "");

        /* A service stopped: no longer followed. */
        test_rm_rf(b);
        free(b);
        wait_rotations("services", 2);
        cr_assert_eq(astat("services", "groups"), 2);
        cr_assert_eq(astat("services", "group_slab_reclaimable_bytes"), 5 << 20);
        expect_file("/sys/fs/cgroup/system.slice/c.service/memory.reclaim", "");
}

/* The daemon's CPU time so far (user + system), in microseconds. */
static uint64_t daemon_cpu_usec(pid_t pid)
{
        char path[64], *text, *p;
        unsigned long long utime, stime;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        text = test_read_file(path);
        p = strrchr(text, ')'); /* past the command's name, which may hold blanks */
        cr_assert(p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                              &utime, &stime) == 2, "%s", text);
        free(text);
        return (utime + stime) * 1000000 / (uint64_t)sysconf(_SC_CLK_TCK);
}

/*
 * @n runs of cacheagectl @args, its output thrown away (a slice's metrics are long): the p50
 * and p99 of their wall time, in microseconds. Each must exit 0.
 */
static void ctl_latency(const char *args, size_t n, uint64_t *ret_p50, uint64_t *ret_p99)
{
        uint64_t *v = calloc(n, sizeof(*v));
        char cmd[1024];

        cr_assert(v);
        snprintf(cmd, sizeof(cmd), "%s --address=%s %s >/dev/null", test_env("CACHEAGECTL"),
                 env.address, args);
        for (size_t i = 0; i < n; i++) {
                uint64_t t0 = test_now_usec();

                cr_assert_eq(system(cmd), 0, "%s", cmd);
                v[i] = test_now_usec() - t0;
        }
        qsort(v, n, sizeof(v[0]), test_cmp_u64);
        *ret_p50 = v[n / 2];
        *ret_p99 = v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
        free(v);
}

/*
 * A slice of many groups (CA_KERNEL_SCALE_GROUPS, 300 by default) on a fake tree: every group
 * followed and passed over, the parts published, and what the loop answers with them there
 * (status, show, metrics) as users would ask it; the latencies and the daemon's CPU per
 * rotation are printed ("kernel slice scale: ...") for bench/kernel-scale.sh, which holds them
 * to their targets: a timed assertion here would fail on a loaded machine, not on a slow daemon.
 */
Test(kernel, slice_scale, .fini = teardown, .timeout = 600)
{
        const char *v = getenv("CA_KERNEL_SCALE_GROUPS");
        size_t n = v ? strtoul(v, NULL, 10) : 300;
        uint64_t st50, st99, sh50, sh99, me50, me99, cpu0, cpu1, r0, r1;
        char name[64], *s;

        cr_assert(n >= 1 && n <= 1024, "CA_KERNEL_SCALE_GROUPS: 1..1024");
        kernel_fake_new(&fake, 2, 100000, 20000);
        for (size_t i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "/system.slice/svc%04zu.service", i);
                free(kernel_fake_group(&fake, name, 3 << 20, 2 << 20, 0));
        }
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "action = reclaim\n");
        wait_astat("services", "groups", n);
        wait_astat("services", "groups_passed", n);
        s = ctl("show services");
        snprintf(name, sizeof(name), "Parts=%zu\n", n);
        cr_assert(strstr(s, name), "%s", s);
        free(s);
        r0 = rotations("services");
        cpu0 = daemon_cpu_usec(env.daemon_pid);
        ctl_latency("status", 50, &st50, &st99);
        ctl_latency("show services", 50, &sh50, &sh99);
        ctl_latency("metrics", 50, &me50, &me99);
        wait_rotations("services", 3);
        r1 = rotations("services");
        cpu1 = daemon_cpu_usec(env.daemon_pid);
        fprintf(stderr, "kernel slice scale: %zu groups, status p50 %" PRIu64 " us p99 %" PRIu64
                " us, show p50 %" PRIu64 " us p99 %" PRIu64 " us, metrics p50 %" PRIu64
                " us p99 %" PRIu64 " us, daemon CPU per rotation %" PRIu64 " us\n", n, st50,
                st99, sh50, sh99, me50, me99, (cpu1 - cpu0) / (r1 > r0 ? r1 - r0 : 1));
}

/* More groups in a slice than the adapter follows (1024): the first 1024, and a word, once. */
Test(kernel, slice_of_more_than_1024_groups, .fini = teardown, .timeout = 600)
{
        char name[64];

        kernel_fake_new(&fake, 2, 100000, 20000);
        for (int i = 0; i < 1030; i++) {
                snprintf(name, sizeof(name), "/system.slice/svc%04d.service", i);
                free(kernel_fake_group(&fake, name, 3 << 20, 2 << 20, 0));
        }
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "action = reclaim\n");
        wait_astat("services", "groups", 1024);
        wait_rotations("services", 3);
        cr_assert_eq(astat("services", "groups"), 1024);
        cr_assert_eq(count_in_log("/system.slice has more than 1024 groups: the others are not "
                                  "followed, ignoring"), 1, "%s", test_read_file(env.daemon_err));
}

/* Not idle (CPU pressure over the daemon's gate): the action waits, the figures do not. */
/*
 * Not idle (CPU pressure over the daemon's gate): the daemon puts the rotations off (Deferred
 * "busy", said in status), the figures stay; after max_defer rotations put off, the rotation
 * runs busy and the adapter's reclaim with it. A rotation asked on the bus while busy runs,
 * but its reclaim is put off.
 */
Test(kernel, actions_only_in_idle_time_or_after_max_defer, .fini = teardown, .timeout = 300)
{
        const char *file = "/sys/fs/cgroup/svc/memory.reclaim";
        uint64_t deferred_from = 0;
        char *s;

        kernel_fake_new(&fake, 2, 100000, 20000);
        free(kernel_fake_group(&fake, "/svc", 2 << 20, 1 << 20, 0));
        set_psi(0, 0);
        setenv("CACHEAGED_KERNEL_ROOT", fake.root, 1);
        bus_env_start(&env, NULL);
        bus_env_daemon(&env, "[daemon]\nplugin_dir = %s\ninterval = 1s\nidle_cpu_pressure = 20\n"
                             "max_defer = 1000\nlog_level = debug\n[cache svc]\nadapter = kernel\ncgroup = /svc\n"
                             "action = reclaim\n",
                       test_env("CA_ADAPTER_DIR"));
        wait_file(file, "262144 swappiness=0"); /* the first look, idle */
        kernel_fake_write(&fake, file, "");
        set_psi(50, 0);
        free(kernel_fake_group(&fake, "/svc", 40 << 20, 33 << 20, 0));
        kernel_fake_dentry_state(&fake, 300000, 220000);
        /* Rotations put off: said, with since when. */
        for (uint64_t until = test_now_usec() + 5 * ROTATION_WAIT_USEC;;) {
                s = get_s(env.bus, cache_path("svc"), CA_BUS_CACHE_IFACE, "Deferred");
                if (strcmp(s, "busy") == 0)
                        break;
                free(s);
                cr_assert(test_now_usec() < until, "never deferred\n%s",
                          test_read_file(env.daemon_err));
                usleep(20000);
        }
        free(s);
        deferred_from = get_t(env.bus, cache_path("svc"), CA_BUS_CACHE_IFACE,
                              "DeferredSinceUSec");
        cr_assert(deferred_from > 0);
        sleep(2);
        s = ctl("status svc");
        cr_assert(strstr(s, "deferred: busy since "), "%s", s);
        free(s);
        expect_file(file, "");
        /* A rotation asked meanwhile: the figures, but the reclaim is put off. */
        rotate_once("svc");
        expect_file(file, "");
        cr_assert(astat("svc", "actions_put_off_busy") >= 1);
        cr_assert_eq(get_t(env.bus, cache_path("svc"), CA_BUS_CACHE_IFACE, "Objects"), 300000);
        cr_assert_eq(get_t(env.bus, cache_path("svc"), CA_BUS_CACHE_IFACE, "PartObjects"),
                     220000);

        /* With max_defer = 2, still busy: the third rotation runs, and its reclaim too. */
        bus_env_stop_daemon(&env);
        bus_env_daemon(&env, "[daemon]\nplugin_dir = %s\ninterval = 1s\nidle_cpu_pressure = 20\n"
                             "max_defer = 2\nlog_level = debug\n[cache svc]\nadapter = kernel\ncgroup = /svc\n"
                             "action = reclaim\n",
                       test_env("CA_ADAPTER_DIR"));
        wait_file(file, "262144 swappiness=0");
        cr_assert(strstr(test_read_file(env.daemon_err), "but deferred 2 times already: "
                                                         "rotating, and the adapter's work"),
                  "%s", test_read_file(env.daemon_err));
        cr_assert_eq(astat("svc", "actions_put_off_busy"), 0, "%s",
                     test_read_file(env.daemon_err));
}

/*
 * The unit's shipped sandbox mounts /sys/fs/cgroup read-only (ProtectControlGroups=yes): the
 * adapter sees it at start, says once, as a notice, that it reports only and how to act, and
 * its status says "report (read-only)" from the first look. (Issue 33, seen in the system lab:
 * it showed MECHANISM memory.reclaim and logged a warning at its first write.) A private mount
 * namespace, inherited by the bus and the daemon, holds the read-only bind mount.
 */
Test(kernel, read_only_cgroup_files_report_and_say_why, .fini = teardown, .timeout = 300)
{
        char *s;

        cr_assert(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
        cr_assert(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
        kernel_fake_new(&fake, 2, 100000, 20000);
        free(kernel_fake_group(&fake, "/system.slice/build.service", 3 << 20, 2 << 20, 0));
        bind_target = strdup(fake.memcg);
        cr_assert(bind_target);
        cr_assert(mount(fake.memcg, fake.memcg, NULL, MS_BIND, NULL) == 0, "bind: %s",
                  strerror(errno));
        cr_assert(mount(NULL, fake.memcg, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) == 0,
                  "remount read-only: %s", strerror(errno));
        fake_start(2, "[cache services]\nadapter = kernel\ncgroup = /system.slice/*\n"
                      "action = auto\n");
        s = get_s(env.bus, cache_path("services"), CA_BUS_CACHE_IFACE, "Mechanism");
        cr_assert_str_eq(s, "report (read-only)", "before any rotation");
        free(s);
        wait_log(0, "/sys/fs/cgroup is read-only here (the unit's sandbox): action = auto only "
                    "reports; to act, link the drop-in sandbox/kernel-reclaim.conf");
        wait_rotations("services", 2);
        cr_assert_eq(astat("services", "read_only"), 1);
        cr_assert_eq(astat("services", "action_errors"), 0, "nothing was tried");
        expect_file("/sys/fs/cgroup/system.slice/build.service/memory.reclaim", "");
        s = ctl("status services");
        cr_assert(strstr(s, "report (read-only)") && !strstr(s, "memory.reclaim"), "%s", s);
        free(s);
        /* The warning of a write that found its files read-only: none was tried. */
        cr_assert_eq(count_in_log("failed"), 0, "%s", test_read_file(env.daemon_err));
}

/* A kernel whose memory.reclaim has no swappiness=: its own parser says so (EINVAL). */
Test(kernel, real_memory_reclaim_key_refused_is_left_out, .fini = teardown, .timeout = 300)
{
        char *soft, *s;

        group_a = kernel_real_group_new("key");
        if (!group_a)
                test_skip(teardown,
                          "no memory cgroup can be made here (not root, or none mounted)");
        soft = test_path_join(group_a, "memory.soft_limit_in_bytes");
        if (access(soft, F_OK) != 0)
                test_skip(teardown, "no v1 memory.soft_limit_in_bytes to stand for such a kernel");
        /* A private mount namespace, which the bus and the daemon inherit. */
        cr_assert(unshare(CLONE_NEWNS) == 0, "unshare: %s", strerror(errno));
        cr_assert(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
        kernel_fake_new(&fake, 2, 100000, 20000);
        free(kernel_fake_group(&fake, "/svc", 2 << 20, 1 << 20, 0));
        bind_target = test_path_join(fake.memcg, "svc/memory.reclaim");
        cr_assert(mount(soft, bind_target, NULL, MS_BIND, NULL) == 0, "bind: %s",
                  strerror(errno));
        fake_start(2, "[cache svc]\nadapter = kernel\ncgroup = /svc\naction = reclaim\n");
        wait_rotations("svc", 1);
        free(kernel_fake_group(&fake, "/svc", 10 << 20, 9 << 20, 0));
        wait_log(0, "memory.reclaim refuses swappiness=0 here");
        wait_log(0, "memory.reclaim on /svc");
        s = test_read_file(soft);
        cr_assert_str_eq(s, "262144\n", "a step's amount alone, parsed by the kernel");
        free(s);
        cr_assert_eq(astat("svc", "action_errors"), 0);
        free(soft);
}

Test(kernel, shrinker_scan_where_debugfs_has_it, .fini = teardown, .timeout = 300)
{
        struct stat st;
        char *dir, *s;

        kernel_fake_new(&fake, 1, 100000, 20000);
        dir = kernel_fake_group(&fake, "/svc", 2 << 20, 0, 0);
        cr_assert(stat(dir, &st) == 0);
        kernel_fake_shrinkers(&fake, st.st_ino, 802, 0, 40);
        /* No allow_force_empty needed: the finest tool is there. */
        fake_start(1, "[cache svc]\nadapter = kernel\ncgroup = /svc\naction = reclaim\n");
        s = get_s(env.bus, cache_path("svc"), CA_BUS_CACHE_IFACE, "Mechanism");
        cr_assert_str_eq(s, "shrinker-scan");
        free(s);
        char want[64];
        snprintf(want, sizeof(want), "%" PRIu64 " 0 802", (uint64_t)st.st_ino);
        wait_file("/sys/kernel/debug/shrinker/sb-ext4:vda1-14/scan", want);
        snprintf(want, sizeof(want), "%" PRIu64 " 0 40", (uint64_t)st.st_ino);
        wait_file("/sys/kernel/debug/shrinker/sb-tmpfs-3/scan", want);
        expect_file("/sys/kernel/debug/shrinker/thp-zero-9/scan", "");
        expect_file("/sys/fs/cgroup/memory/svc/memory.force_empty", "");
        /*
         * Every rotation is a pass. The worker writes the scan files; the loop counts the
         * objects when it takes the finished job, a moment later: waited for, not raced.
         */
        kernel_fake_write(&fake, "/sys/kernel/debug/shrinker/sb-tmpfs-3/scan", "");
        wait_file("/sys/kernel/debug/shrinker/sb-tmpfs-3/scan", want);
        wait_astat_at_least("svc", "shrinker_scanned", 2 * (802 + 40));
        free(dir);
}

/* One rotation, asked on the bus (the cache's own interval is an hour): exactly one look. */
static void rotate_once(const char *cache)
{
        uint64_t r0 = rotations(cache);
        sd_bus_error error = SD_BUS_ERROR_NULL;

        cr_assert(sd_bus_call_method(env.bus, CA_BUS_NAME, cache_path(cache), CA_BUS_CACHE_IFACE,
                                     "Rotate", &error, NULL, NULL) >= 0,
                  "Rotate: %s", error.message);
        wait_rotations_from(cache, r0 + 1);
}

/* nr_negative for each rotation, one after the other; whether drop_caches was written. */
static bool negatives(const uint64_t *v, size_t n)
{
        bool dropped = false;

        for (size_t i = 0; i < n; i++) {
                char *s;

                kernel_fake_dentry_state(&fake, 400000, v[i]);
                rotate_once("host");
                s = kernel_fake_read(&fake, "/proc/sys/vm/drop_caches");
                dropped |= strcmp(s, "2") == 0;
                free(s);
        }
        return dropped;
}

/* drop_caches: past the limit, after steady growth, once per min_interval, in idle time. */
Test(kernel, drop_past_the_limit_after_growth, .fini = teardown, .timeout = 300)
{
        kernel_fake_new(&fake, 2, 400000, 20000);
        fake_start(2, "[cache host]\nadapter = kernel\naction = drop\nnegative_limit = 50000\n"
                      "growth_rotations = 3\nmin_interval = 1h\ninterval = 1h\n");
        /* Growth under the limit; a fall; past the limit but flat: nothing. */
        cr_assert(!negatives((const uint64_t[]){ 20000, 25000, 30000, 35000, 40000, 10000 }, 6));
        cr_assert(!negatives((const uint64_t[]){ 60000, 60000, 60000, 60000 }, 4));
        /* Growing, but not yet for 3 rotations in a row. */
        cr_assert(!negatives((const uint64_t[]){ 61000, 62000 }, 2));
        /* Not in idle time: put off, the streak goes on. */
        set_psi(0, 20.0);
        cr_assert(!negatives((const uint64_t[]){ 63000 }, 1));
        cr_assert_eq(astat("host", "actions_put_off_pressure"), 1);
        set_psi(0, 0);
        cr_assert(negatives((const uint64_t[]){ 64000 }, 1), "%s", test_read_file(env.daemon_err));
        wait_log(0, ">= negative_limit 50000, grew 4 rotations in a row");
        cr_assert_eq(astat("host", "actions"), 1);
        /* Still growing past it: min_interval holds the next one. */
        kernel_fake_write(&fake, "/proc/sys/vm/drop_caches", "");
        cr_assert(!negatives((const uint64_t[]){ 65000, 66000, 67000, 68000, 69000 }, 5));
        cr_assert_eq(astat("host", "actions"), 1);
        cr_assert(count_in_log("(< min_interval)") >= 1);
}

/* A group that vanishes (service stopped) is said once and looked for again; never fatal. */
Test(kernel, vanished_group_reported_once_and_found_again, .fini = teardown, .timeout = 300)
{
        char *dir;
        size_t mark;

        kernel_fake_new(&fake, 1, 100000, 20000);
        dir = kernel_fake_group(&fake, "/svc", 2 << 20, 0, 0);
        fake_start(1, "[cache svc]\nadapter = kernel\ncgroup = /svc\naction = reclaim\n"
                      "allow_force_empty = yes\n");
        wait_rotations("svc", 1);
        cr_assert_eq(astat("svc", "group_missing"), 0);
        cr_assert_eq(astat("svc", "group_kernel_bytes"), 2 << 20);
        test_rm_rf(dir);
        wait_rotations("svc", 3);
        cr_assert_eq(astat("svc", "group_missing"), 1);
        cr_assert_eq(astat("svc", "group_vanished"), 1);
        cr_assert_eq(count_in_log("/svc: no such group; nothing done to it"), 1,
                     "said once\n%s", test_read_file(env.daemon_err));
        cr_assert(get_t(env.bus, cache_path("svc"), CA_BUS_CACHE_IFACE, "Objects") > 0,
                  "the host's figures go on");
        mark = log_size();
        free(kernel_fake_group(&fake, "/svc", 5 << 20, 0, 0));
        wait_log(mark, "group /svc found again");
        wait_rotations("svc", 1);
        cr_assert_eq(astat("svc", "group_missing"), 0);
        cr_assert_eq(astat("svc", "group_kernel_bytes"), 5 << 20);
        /* Growth is counted from the group that came back, not the one that went. */
        free(kernel_fake_group(&fake, "/svc", 30 << 20, 0, 0));
        wait_file("/sys/fs/cgroup/memory/svc/memory.force_empty", "0");
        free(dir);
}

/* ---- unit = NAME: a fake systemd on the private bus ---- */

struct fake_systemd {
        sd_bus *bus;
        pthread_t thread;
        _Atomic bool stop;
        pthread_mutex_t lock;
        char cgroup[256];   /* ControlGroup of foo.service; "" when stopped */
        unsigned lookups;
};

static struct fake_systemd sysd;

static int sysd_get_unit(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        const char *name;
        int r;

        r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        if (strcmp(name, "foo.service") != 0)
                return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit",
                                         "Unit %s not loaded.", name);
        pthread_mutex_lock(&sysd.lock);
        sysd.lookups++;
        pthread_mutex_unlock(&sysd.lock);
        return sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/unit/foo_2eservice");
}

static int sysd_control_group(sd_bus *bus, const char *path, const char *interface,
                              const char *property, sd_bus_message *reply, void *userdata,
                              sd_bus_error *error)
{
        int r;

        pthread_mutex_lock(&sysd.lock);
        r = sd_bus_message_append(reply, "s", sysd.cgroup);
        pthread_mutex_unlock(&sysd.lock);
        return r;
}

static const sd_bus_vtable sysd_manager[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetUnit", "s", "o", sysd_get_unit, 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable sysd_service[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ControlGroup", "s", sysd_control_group, 0, 0),
        SD_BUS_VTABLE_END,
};

static void *sysd_main(void *userdata)
{
        while (!atomic_load(&sysd.stop)) {
                int r = sd_bus_process(sysd.bus, NULL);

                if (r < 0)
                        break;
                if (r == 0)
                        sd_bus_wait(sysd.bus, 50000);
        }
        return NULL;
}

static void sysd_set(const char *cgroup)
{
        pthread_mutex_lock(&sysd.lock);
        snprintf(sysd.cgroup, sizeof(sysd.cgroup), "%s", cgroup);
        pthread_mutex_unlock(&sysd.lock);
}

static void sysd_teardown(void)
{
        if (sysd.bus) {
                atomic_store(&sysd.stop, true);
                pthread_join(sysd.thread, NULL);
                sysd.bus = sd_bus_flush_close_unref(sysd.bus);
        }
        teardown();
}

Test(kernel, unit_group_asked_from_systemd, .fini = sysd_teardown, .timeout = 300)
{
        char policy[512], ours[512];

        /* Our policy, and root may own and call org.freedesktop.systemd1 (the fake). */
        snprintf(ours, sizeof(ours), "%s/../systemd/org.cacheage.CacheAge1.conf",
                 test_env("CA_TEST_SRCDIR"));
        kernel_fake_new(&fake, 2, 100000, 20000);
        snprintf(policy, sizeof(policy), "%s/bus-policy.conf", fake.root);
        test_write_file(policy,
                        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration "
                        "1.0//EN\" \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                        "<busconfig>\n <include>%s</include>\n <policy user=\"root\">\n"
                        "  <allow own=\"org.freedesktop.systemd1\"/>\n"
                        "  <allow send_destination=\"org.freedesktop.systemd1\"/>\n"
                        " </policy>\n</busconfig>\n",
                        ours);
        free(kernel_fake_group(&fake, "/system.slice/foo.service", 3 << 20, 2 << 20, 0));
        bus_env_start(&env, policy);

        pthread_mutex_init(&sysd.lock, NULL);
        sysd_set("/system.slice/foo.service");
        cr_assert(harness_connect(env.address, &sysd.bus) >= 0);
        cr_assert(sd_bus_add_object_vtable(sysd.bus, NULL, "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", sysd_manager,
                                           NULL) >= 0);
        cr_assert(sd_bus_add_object_vtable(sysd.bus, NULL,
                                           "/org/freedesktop/systemd1/unit/foo_2eservice",
                                           "org.freedesktop.systemd1.Service", sysd_service,
                                           NULL) >= 0);
        cr_assert(sd_bus_request_name(sysd.bus, "org.freedesktop.systemd1", 0) >= 0);
        cr_assert(pthread_create(&sysd.thread, NULL, sysd_main, NULL) == 0);
        setenv("DBUS_SYSTEM_BUS_ADDRESS", env.address, 1);

        fake_start(2, "[cache foo]\nadapter = kernel\nunit = foo.service\n"
                      "[cache gone]\nadapter = kernel\nunit = gone.service\n");
        wait_rotations("foo", 1);
        cr_assert_eq(astat("foo", "group_missing"), 0, "%s", test_read_file(env.daemon_err));
        cr_assert_eq(astat("foo", "group_slab_reclaimable_bytes"), 2 << 20);
        wait_rotations("gone", 1);
        cr_assert_eq(astat("gone", "group_missing"), 1);
        wait_log(0, "systemd does not know gone.service: Unit gone.service not loaded.");

        /* Stopped: no control group, said once. Restarted elsewhere: found there. */
        sysd_set("");
        wait_log(0, "foo.service has no control group (not running)");
        cr_assert_eq(astat("foo", "group_missing"), 1);
        free(kernel_fake_group(&fake, "/system.slice/foo-restarted.service", 7 << 20, 6 << 20, 0));
        sysd_set("/system.slice/foo-restarted.service");
        wait_log(0, "group /system.slice/foo-restarted.service found again");
        wait_rotations("foo", 1);
        cr_assert_eq(astat("foo", "group_slab_reclaimable_bytes"), 6 << 20);
        cr_assert(sysd.lookups >= 3, "asked at every rotation");
}

/* ------------------------------------------------------------------------------------------ */
/* Keys and paths, each error at its line.                                                     */

static void expect_errors(const char *conf, const char *const *want)
{
        struct test_daemon d;
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        const char *log;

        test_daemon_setup(&d);
        d.plugin_dir = test_env("CA_ADAPTER_DIR");
        test_write_file(d.conf, "%s", conf);
        args[1] = d.conf;
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 1, "%s", test_daemon_log(&d));
        log = test_daemon_log(&d);
        for (const char *const *w = want; *w; w++)
                cr_expect(strstr(log, *w), "missing: %s\nin:\n%s", *w, log);
        test_daemon_cleanup(&d);
}

Test(kernel, every_bad_key_and_path_at_its_line, .fini = teardown)
{
        char *link, conf[4096];

        kernel_fake_new(&fake, 1, 100000, 20000);
        free(kernel_fake_group(&fake, "/real", 1 << 20, 0, 0));
        link = test_path_join(fake.memcg, "link");
        cr_assert(symlink("real", link) == 0);
        free(link);
        setenv("CACHEAGED_KERNEL_ROOT", fake.root, 1);

        /* Value errors, all of one section at once. */
        snprintf(conf, sizeof(conf),
                 "[cache k]\n"                      /* 1 */
                 "adapter = kernel\n"               /* 2 */
                 "action = sweep\n"                 /* 3 */
                 "max_reclaim = 10Q\n"              /* 4 */
                 "reclaim_amount = 100\n"           /* 5 */
                 "cgroup = /a/../b\n"               /* 6 */
                 "unit = foo.timer\n"               /* 7 */
                 "swappiness = 300\n"               /* 8 */
                 "colour = red\n"                   /* 9 */
                 "negative_ratio = -1\n"            /* 10 */
                 "min_interval = soon\n");          /* 11 */
        expect_errors(conf, (const char *[]){
                "cacheaged.conf:3: action: invalid action \"sweep\"",
                "cacheaged.conf:4: max_reclaim: invalid size \"10Q\" (expected 4096..1T",
                "cacheaged.conf:5: reclaim_amount: invalid size \"100\" (expected auto or 4096..1T",
                "cacheaged.conf:6: cgroup: \"/a/../b\": empty, \".\" and \"..\" components are refused",
                "cacheaged.conf:7: unit: \"foo.timer\" is not a unit with a control group",
                "cacheaged.conf:8: swappiness:",
                "cacheaged.conf:9: colour: unknown key",
                "cacheaged.conf:10: negative_ratio:",
                "cacheaged.conf:11: min_interval: invalid duration \"soon\"",
                NULL });

        /* What ties keys together and to this kernel, one section each, all reported. */
        snprintf(conf, sizeof(conf),
                 "[cache link]\nadapter = kernel\ncgroup = /link\n"                    /* 1-3 */
                 "[cache nogroup]\nadapter = kernel\naction = reclaim\n"              /* 4-6 */
                 "[cache v1]\nadapter = kernel\ncgroup = /real\naction = reclaim\n"    /* 7-10 */
                 "[cache both]\nadapter = kernel\ncgroup = /real\nunit = x.service\n"  /* 11-14 */
                 "[cache nolimit]\nadapter = kernel\naction = drop\nnegative_limit = 0\n" /* 15-18 */
                 "[cache minmax]\nadapter = kernel\ncgroup = /real\naction = reclaim\n"
                 "allow_force_empty = yes\nmin_reclaim = 128M\n"                        /* 19-24 */
                 "[cache file]\nadapter = kernel\ncgroup = /real/memory.stat\n"       /* 25-27 */
                 "[cache star]\nadapter = kernel\ncgroup = /a/*/b\n"                 /* 28-30 */
                 "[cache excl]\nadapter = kernel\ncgroup = /real\nexclude = x.service\n"
                                                                                     /* 31-34 */
                 "[cache step]\nadapter = kernel\ncgroup = /real\naction = reclaim\n"
                 "allow_force_empty = yes\nreclaim_step = 2M\nmax_reclaim = 1M\n"
                 "min_reclaim = 512K\n"                                               /* 35-42 */
                 "[cache bad-excl]\nadapter = kernel\ncgroup = /*\nexclude = a/b\n"); /* 43-46 */
        expect_errors(conf, (const char *[]){
                "cacheaged.conf:3: cgroup: ",
                "\"link\" is a symlink (refused",
                "cacheaged.conf:6: action: action = reclaim needs a group",
                "cacheaged.conf:10: action: cgroup v1 has no gentle reclaim: memory.force_empty "
                "only with allow_force_empty = yes",
                "cacheaged.conf:14: unit: set either cgroup or unit, not both",
                "cacheaged.conf:17: action: action = drop needs a limit",
                "cacheaged.conf:24: min_reclaim: min_reclaim is above max_reclaim",
                "cacheaged.conf:27: cgroup: ",
                "\"memory.stat\" is not a directory",
                "cacheaged.conf:30: cgroup: \"/a/*/b\": only a trailing /* is taken",
                "cacheaged.conf:34: exclude: exclude leaves out groups of a slice",
                "cacheaged.conf:40: reclaim_step: reclaim_step is above max_reclaim",
                "cacheaged.conf:46: exclude: \"a/b\" is not a group's name",
                NULL });

        /* No memory controller at all, for a group target. */
        kernel_fake_write(&fake, "/proc/self/mountinfo",
                          "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n");
        expect_errors("[cache k]\nadapter = kernel\nunit = foo.service\n",
                      (const char *[]){ "cacheaged.conf:3: unit: no memory cgroup controller "
                                        "is mounted",
                                        NULL });
}

/* A group not there yet is fine at --check-config (a service not started), and said. */
Test(kernel, missing_group_is_not_an_error, .fini = teardown)
{
        struct test_daemon d;
        const char *args[] = { "--config", NULL, "--check-config", NULL };

        kernel_fake_new(&fake, 1, 100000, 20000);
        setenv("CACHEAGED_KERNEL_ROOT", fake.root, 1);
        test_daemon_setup(&d);
        d.plugin_dir = test_env("CA_ADAPTER_DIR");
        test_write_file(d.conf, "[cache k]\nadapter = kernel\ncgroup = /later.service\n"
                                "action = reclaim\nallow_force_empty = yes\n");
        args[1] = d.conf;
        cr_assert_eq(test_daemon_run_to_exit(&d, args), 0, "%s", test_daemon_log(&d));
        cr_assert(strstr(test_daemon_log(&d), "later.service: no such group, looked for at every "
                                               "rotation"),
                  "%s", test_daemon_log(&d));
        test_daemon_cleanup(&d);
}
