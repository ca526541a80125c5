/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Fake kernel trees for the kernel adapter's tests (tests/test-kernel-sys.c, test-kernel.c):
 * a directory laid out like "/" as far as the adapter reads it (CACHEAGED_KERNEL_ROOT), for
 * what this machine's kernel lacks (the cgroup v2 memory controller, shrinker debugfs) and for
 * what would disturb everyone (drop_caches). The real kernel's files are written by the kernel;
 * these are regular files the test writes and reads back: what the adapter wrote into one is
 * what it asked of the kernel.
 */

#include <stdbool.h>
#include <stdint.h>

struct kernel_fake {
        char *root;    /* the tree */
        char *memcg;   /* root + the memory controller's mount point */
        int version;   /* 1 or 2 */
};

/*
 * kernel_fake_new() - a tree with dentry-state (@nr_dentry, @nr_negative), dentry-negative,
 * drop_caches, vfs_cache_pressure (100), a vmstat where nothing reclaims, a mountinfo and a memory controller of @version (1: v1 at
 * /sys/fs/cgroup/memory beside a unified hierarchy without memory; 2: the unified hierarchy
 * at /sys/fs/cgroup with memory). No group, no shrinker debugfs.
 */
void kernel_fake_new(struct kernel_fake *f, int version, uint64_t nr_dentry,
                     uint64_t nr_negative);
void kernel_fake_free(struct kernel_fake *f);

/* kernel_fake_dentry_state() - rewrite dentry-state. */
void kernel_fake_dentry_state(const struct kernel_fake *f, uint64_t nr_dentry,
                              uint64_t nr_negative);

/*
 * kernel_fake_group() - make (or update) @group (e.g. "/a/b") with the version's files:
 * @kernel_bytes of kernel memory, of which @slab_bytes reclaimable slab (v2), memory
 * pressure "some avg10" @pressure_pct (v2), KERNEL_FAKE_FILE bytes of page cache (v2: enough
 * for passes on classic LRU, under the sweep floor on MGLRU). Returns the group directory's
 * path (malloc()ed).
 */
#define KERNEL_FAKE_FILE (UINT64_C(20) << 20)
char *kernel_fake_group(const struct kernel_fake *f, const char *group, uint64_t kernel_bytes,
                        uint64_t slab_bytes, double pressure_pct);

/*
 * kernel_fake_shrinkers() - shrinker debugfs with two superblock shrinkers and one other:
 * sb-ext4:vda1-14 counts "@ino @n0 @n1" (two nodes) among other groups' lines, sb-tmpfs-3
 * counts "@ino @n2 0", thp-zero-9 (not a superblock's) counts "@ino 99 0".
 */
void kernel_fake_shrinkers(const struct kernel_fake *f, uint64_t ino, uint64_t n0, uint64_t n1,
                           uint64_t n2);

/* kernel_fake_read() - root + @path's contents (malloc()ed; "" when missing). */
char *kernel_fake_read(const struct kernel_fake *f, const char *path);

/* kernel_fake_write() - root + @path holds @text, and only it (its directories made). */
void kernel_fake_write(const struct kernel_fake *f, const char *path, const char *text);

/* --- the real kernel's memory cgroups ------------------------------------------------------ */

/*
 * kernel_real_quiet() - whether this kernel is a quiet one (CACHEAGE_QUIET_KERNEL=1, set by
 * the VM lab's guests, tests/vm/): nothing but the test makes or frees dentries there, so
 * host-wide dentry-state figures can be asserted exactly. Elsewhere (a shared host, where
 * other work makes and frees dentries all the time) a test asserts its own groups' figures
 * and reads the host-wide ones only as information.
 */
bool kernel_real_quiet(void);

/*
 * kernel_real_drops() - how many times anyone dropped the host's slab caches so far
 * (/proc/vmstat drop_slab: a write of 2 or 3 to /proc/sys/vm/drop_caches; 0 where the kernel
 * does not count them). On a shared host another program's drop_caches takes a test's
 * dentries with everyone else's: a figure measured across one proves nothing of the adapter.
 */
uint64_t kernel_real_drops(void);

/*
 * kernel_real_tmpdir() - a new directory /tmp/cacheage-@prefix-XXXXXX (malloc()ed), removed
 * by kernel_real_tmpdirs_remove(), which the tests' .fini calls: a test that fails halfway
 * leaves none behind.
 */
char *kernel_real_tmpdir(const char *prefix);
void kernel_real_tmpdirs_remove(void);

/*
 * kernel_real_memcg() - the real memory controller's mount point (v1 or v2, from
 * /proc/self/mountinfo) and its version; NULL when there is none or it cannot take a child
 * group (not root): the caller skips, saying so.
 */
const char *kernel_real_memcg(int *ret_version);

/*
 * kernel_real_group_new() - a new child group "cacheage-test-PID-@tag" at the controller's
 * top level (malloc()ed path), or NULL (cr_skip'd by the caller) where none can be made.
 */
char *kernel_real_group_new(const char *tag);

/*
 * kernel_real_group_remove() - move what still runs in it out, and rmdir it (expects
 * success); accepts NULL.
 */
void kernel_real_group_remove(char *path);

/* kernel_real_group_join() - move the calling process into @path. */
void kernel_real_group_join(const char *path);

/*
 * kernel_real_storm() - stat() @n unique missing names ("missing-N") in @dir from a child in
 * group @group (NULL: the caller's group), and wait for it: @n new negative dentries,
 * charged to that group.
 */
void kernel_real_storm(const char *group, const char *dir, unsigned n);
