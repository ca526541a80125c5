/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "kernel-fake.h"
#include "test-util.h"

/* mkdir -p of root + @path. */
static void fake_mkdir(const char *root, const char *path)
{
        char buf[4096];

        snprintf(buf, sizeof(buf), "%s%s", root, path);
        for (char *p = buf + strlen(root) + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        cr_assert(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s", buf);
                        *p = '/';
                }
        cr_assert(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s", buf);
}

void kernel_fake_write(const struct kernel_fake *f, const char *path, const char *text)
{
        char *p = test_path_join(f->root, path + 1), dir[4096];

        snprintf(dir, sizeof(dir), "%s", path);
        if (strrchr(dir, '/') > dir) {
                *strrchr(dir, '/') = '\0';
                fake_mkdir(f->root, dir); /* the directories it lies in */
        }

        test_write_file(p, "%s", text);
        free(p);
}

char *kernel_fake_read(const struct kernel_fake *f, const char *path)
{
        char *p = test_path_join(f->root, path + 1), *s = test_read_file(p);

        free(p);
        return s;
}

void kernel_fake_dentry_state(const struct kernel_fake *f, uint64_t nr_dentry,
                              uint64_t nr_negative)
{
        char text[256];

        snprintf(text, sizeof(text), "%" PRIu64 "\t%" PRIu64 "\t45\t0\t%" PRIu64 "\t0\n",
                 nr_dentry, nr_dentry - nr_negative / 2, nr_negative);
        kernel_fake_write(f, "/proc/sys/fs/dentry-state", text);
}

void kernel_fake_new(struct kernel_fake *f, int version, uint64_t nr_dentry,
                     uint64_t nr_negative)
{
        const char *mount = version == 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";

        f->root = test_mkdtemp("cacheage-kernel");
        f->version = version;
        fake_mkdir(f->root, "/proc/sys/fs");
        fake_mkdir(f->root, "/proc/sys/vm");
        fake_mkdir(f->root, "/proc/self");
        fake_mkdir(f->root, mount);
        kernel_fake_dentry_state(f, nr_dentry, nr_negative);
        kernel_fake_write(f, "/proc/sys/fs/dentry-negative", "0\n");
        kernel_fake_write(f, "/proc/sys/vm/drop_caches", "");
        kernel_fake_write(f, "/proc/sys/vm/vfs_cache_pressure", "100\n");
        /* What counts reclaim (ks_read_reclaim_activity()): nothing reclaims. */
        kernel_fake_write(f, "/proc/vmstat", "nr_free_pages 1000\npgscan_kswapd 0\n"
                                             "pgscan_direct 0\npgscan_khugepaged 0\n"
                                             "slabs_scanned 0\n");
        if (version == 2) {
                kernel_fake_write(f, "/proc/self/mountinfo",
                                  "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
                                  "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime "
                                  "shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n");
                kernel_fake_write(f, "/sys/fs/cgroup/cgroup.controllers",
                                  "cpuset cpu io memory hugetlb pids rdma misc\n");
        } else {
                fake_mkdir(f->root, "/sys/fs/cgroup/unified");
                kernel_fake_write(f, "/proc/self/mountinfo",
                                  "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
                                  "25 22 0:22 / /sys/fs/cgroup rw shared:3 - tmpfs tmpfs rw\n"
                                  "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:4 - "
                                  "cgroup2 cgroup2 rw\n"
                                  "31 25 0:28 / /sys/fs/cgroup/cpu rw,nosuid shared:8 - cgroup "
                                  "cgroup rw,cpu\n"
                                  "35 25 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:12 - "
                                  "cgroup cgroup rw,memory\n");
                kernel_fake_write(f, "/sys/fs/cgroup/unified/cgroup.controllers", "\n");
        }
        f->memcg = test_path_join(f->root, mount + 1);
}

void kernel_fake_free(struct kernel_fake *f)
{
        if (f->root)
                test_rm_rf(f->root);
        free(f->root);
        free(f->memcg);
        *f = (struct kernel_fake){ 0 };
}

char *kernel_fake_group(const struct kernel_fake *f, const char *group, uint64_t kernel_bytes,
                        uint64_t slab_bytes, double pressure_pct)
{
        const char *mount = f->version == 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
        char path[4096], file[4200];
        char *dir;

        snprintf(path, sizeof(path), "%s%s", mount, group);
        fake_mkdir(f->root, path);
        dir = test_path_join(f->root, path + 1);
#define FILE_(name, ...)                                                                          \
        do {                                                                                       \
                snprintf(file, sizeof(file), "%s/%s", dir, name);                                 \
                test_write_file(file, __VA_ARGS__);                                                \
        } while (0)
        if (f->version == 2) {
                FILE_("memory.current", "%" PRIu64 "\n",
                      kernel_bytes + 1024000 + KERNEL_FAKE_FILE);
                FILE_("memory.stat",
                      "anon 1024000\nfile %" PRIu64 "\nkernel %" PRIu64 "\nkernel_stack 16384\n"
                      "slab %" PRIu64 "\nslab_reclaimable %" PRIu64 "\n"
                      "slab_unreclaimable 65536\n",
                      KERNEL_FAKE_FILE, kernel_bytes, slab_bytes + 65536, slab_bytes);
                FILE_("memory.pressure",
                      "some avg10=%.2f avg60=0.00 avg300=0.00 total=1234\n"
                      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                      pressure_pct);
                snprintf(file, sizeof(file), "%s/memory.reclaim", dir);
                if (access(file, F_OK) != 0)
                        test_write_file(file, "%s", "");
        } else {
                FILE_("memory.usage_in_bytes", "%" PRIu64 "\n", kernel_bytes + 3072000);
                FILE_("memory.kmem.usage_in_bytes", "%" PRIu64 "\n", kernel_bytes);
                FILE_("memory.stat", "cache 3072000\nrss 0\ntotal_cache 3072000\ntotal_rss 0\n");
                snprintf(file, sizeof(file), "%s/memory.force_empty", dir);
                if (access(file, F_OK) != 0)
                        test_write_file(file, "%s", "");
        }
#undef FILE_
        return dir;
}

void kernel_fake_shrinkers(const struct kernel_fake *f, uint64_t ino, uint64_t n0, uint64_t n1,
                           uint64_t n2)
{
        char text[256];

        fake_mkdir(f->root, "/sys/kernel/debug/shrinker/sb-ext4:vda1-14");
        fake_mkdir(f->root, "/sys/kernel/debug/shrinker/sb-tmpfs-3");
        fake_mkdir(f->root, "/sys/kernel/debug/shrinker/thp-zero-9");
        snprintf(text, sizeof(text), "1 224 2\n21 98 0\n%" PRIu64 " %" PRIu64 " %" PRIu64
                 "\n%" PRIu64 "7 5 5\n", ino, n0, n1, ino);
        kernel_fake_write(f, "/sys/kernel/debug/shrinker/sb-ext4:vda1-14/count", text);
        snprintf(text, sizeof(text), "%" PRIu64 " %" PRIu64 " 0\n", ino, n2);
        kernel_fake_write(f, "/sys/kernel/debug/shrinker/sb-tmpfs-3/count", text);
        snprintf(text, sizeof(text), "%" PRIu64 " 99 0\n", ino);
        kernel_fake_write(f, "/sys/kernel/debug/shrinker/thp-zero-9/count", text);
        for (size_t i = 0; i < 3; i++) {
                static const char *const scans[] = {
                        "/sys/kernel/debug/shrinker/sb-ext4:vda1-14/scan",
                        "/sys/kernel/debug/shrinker/sb-tmpfs-3/scan",
                        "/sys/kernel/debug/shrinker/thp-zero-9/scan",
                };

                kernel_fake_write(f, scans[i], "");
        }
}

/* ---- the real kernel ---- */

bool kernel_real_quiet(void)
{
        const char *q = getenv("CACHEAGE_QUIET_KERNEL");

        return q && strcmp(q, "1") == 0;
}

uint64_t kernel_real_drops(void)
{
        char *text = test_read_file("/proc/vmstat");
        const char *p = strstr(text, "\ndrop_slab ");
        uint64_t n = 0;

        if (p)
                n = strtoull(p + strlen("\ndrop_slab "), NULL, 10);
        free(text);
        return n;
}

#define KERNEL_TMPDIRS_MAX 16 /* directories of one test */
static char *tmpdirs[KERNEL_TMPDIRS_MAX];

char *kernel_real_tmpdir(const char *prefix)
{
        char name[64], *dir;

        snprintf(name, sizeof(name), "cacheage-%s", prefix);
        dir = test_mkdtemp(name);
        for (size_t i = 0; i < KERNEL_TMPDIRS_MAX; i++)
                if (!tmpdirs[i]) {
                        tmpdirs[i] = strdup(dir);
                        cr_assert(tmpdirs[i]);
                        return dir;
                }
        cr_assert_fail("more than %d temporary directories in one test", KERNEL_TMPDIRS_MAX);
        return NULL;
}

void kernel_real_tmpdirs_remove(void)
{
        for (size_t i = 0; i < KERNEL_TMPDIRS_MAX; i++) {
                if (!tmpdirs[i])
                        continue;
                if (access(tmpdirs[i], F_OK) == 0)
                        test_rm_rf(tmpdirs[i]);
                free(tmpdirs[i]);
                tmpdirs[i] = NULL;
        }
}

const char *kernel_real_memcg(int *ret_version)
{
        static char mount[4096];
        static int version;
        FILE *f;
        char line[8192];

        if (version) {
                *ret_version = version;
                return mount;
        }
        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return NULL;
        while (fgets(line, sizeof(line), f)) {
                char mp[4096], fstype[64], opts[1024];
                const char *dash = strstr(line, " - ");

                if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
                    sscanf(dash + 3, "%63s %*s %1023s", fstype, opts) != 2)
                        continue;
                if (strcmp(fstype, "cgroup2") == 0) {
                        char *p = test_path_join(mp, "cgroup.controllers"), *c = test_read_file(p);

                        if (strstr(c, "memory") && !version) {
                                snprintf(mount, sizeof(mount), "%s", mp);
                                version = 2;
                        }
                        free(c);
                        free(p);
                } else if (strcmp(fstype, "cgroup") == 0 && strstr(opts, "memory") && !version) {
                        snprintf(mount, sizeof(mount), "%s", mp);
                        version = 1;
                }
        }
        fclose(f);
        if (!version)
                return NULL;
        *ret_version = version;
        return mount;
}

/*
 * Groups of test processes that are gone: a test killed by its timeout never ran its
 * teardown. Removed before a new group is made, so no run leaves them for good.
 */
static void remove_stale_groups(const char *mount)
{
        DIR *d = opendir(mount);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                int pid;

                if (sscanf(de->d_name, "cacheage-test-%d-", &pid) == 1 && pid > 0 &&
                    kill(pid, 0) < 0 && errno == ESRCH)
                        kernel_real_group_remove(test_path_join(mount, de->d_name));
        }
        closedir(d);
}

char *kernel_real_group_new(const char *tag)
{
        int version;
        const char *mount = kernel_real_memcg(&version);
        char *path, *probe;
        bool usable;

        if (!mount || geteuid() != 0)
                return NULL;
        remove_stale_groups(mount);
        cr_assert(asprintf(&path, "%s/cacheage-test-%d-%s", mount, (int)getpid(), tag) > 0);
        if (mkdir(path, 0755) < 0) {
                free(path);
                return NULL;
        }
        /* cgroup v2 gives a child the memory controller only where the parent enables it
           for its children (cgroup.subtree_control): without, this is no memory cgroup. */
        probe = test_path_join(path, version == 2 ? "memory.current" : "memory.usage_in_bytes");
        usable = access(probe, F_OK) == 0;
        free(probe);
        if (!usable) {
                (void)rmdir(path);
                free(path);
                return NULL;
        }
        return path;
}

void kernel_real_group_join(const char *path)
{
        char *procs = test_path_join(path, "cgroup.procs");
        FILE *f = fopen(procs, "we");

        cr_assert(f, "open %s: %s", procs, strerror(errno));
        fprintf(f, "%d\n", (int)getpid());
        cr_assert(fclose(f) == 0, "join %s: %s", path, strerror(errno));
        free(procs);
}

void kernel_real_storm(const char *group, const char *dir, unsigned n)
{
        pid_t pid = fork();
        int status;

        cr_assert(pid >= 0);
        if (pid == 0) {
                char path[512];
                struct stat st;

                if (group)
                        kernel_real_group_join(group);
                for (unsigned i = 0; i < n; i++) {
                        snprintf(path, sizeof(path), "%s/missing-%u", dir, i);
                        (void)stat(path, &st);
                }
                _exit(0);
        }
        cr_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0);
}

void kernel_real_group_remove(char *path)
{
        char *procs, *pids, *parent, *up;
        uint64_t until = test_now_usec() + 10000000;

        if (!path)
                return;
        parent = strdup(path);
        cr_assert(parent);
        *strrchr(parent, '/') = '\0';
        up = test_path_join(parent, "cgroup.procs");
        procs = test_path_join(path, "cgroup.procs");
        /* Processes that outlived the test go back to the parent; the group can go then. */
        while (*(pids = test_read_file(procs))) {
                FILE *f = fopen(up, "we");

                for (char *p = pids, *end; f && *p; p = end) {
                        long pid = strtol(p, &end, 10);

                        if (end == p)
                                break;
                        fprintf(f, "%ld\n", pid);
                        fflush(f);
                }
                if (f)
                        fclose(f);
                free(pids);
                if (test_now_usec() > until)
                        break;
                usleep(10000);
        }
        free(pids);
        cr_expect(rmdir(path) == 0, "rmdir %s: %s", path, strerror(errno));
        free(procs);
        free(up);
        free(parent);
        free(path);
}
