/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The kernel's files that the kernel adapter reads and the few it writes, and nothing else:
 *
 *   read   /proc/sys/fs/dentry-state, /proc/sys/fs/dentry-negative, /proc/self/mountinfo,
 *          /sys/kernel/mm/lru_gen/enabled, /proc/sys/vm/vfs_cache_pressure, /proc/vmstat,
 *          /proc/swaps; the top-level groups' memory.stat and memory.events (v2);
 *          a memory cgroup's memory.current, memory.stat, memory.pressure (v2) or
 *          memory.usage_in_bytes, memory.kmem.usage_in_bytes, memory.stat (v1), and the
 *          names of its child groups (a slice);
 *          the count file of each /sys/kernel/debug/shrinker/sb-* shrinker
 *   write  memory.reclaim (v2), memory.force_empty (v1), the scan file of each sb-* shrinker,
 *          /proc/sys/vm/drop_caches, /proc/sys/vm/vfs_cache_pressure
 *
 * Every path is taken under a root, "/" but in tests, where it is a fake tree laid out like the
 * real one (KS_ROOT_ENV). A group is opened from the memory controller's mount point one
 * component at a time with O_NOFOLLOW and without leaving its filesystem, so neither a
 * symlink nor a mount can lead a write outside the cgroup tree; ".." and "." are refused before.
 *
 * No global state: everything here may run on the adapter's worker thread. Functions return 0
 * or a negative errno.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Tests only: a directory standing for "/" (proc/sys/fs/dentry-state, proc/self/mountinfo,
 * sys/fs/cgroup/..., sys/kernel/debug/shrinker/..., proc/sys/vm/drop_caches), so that the v2
 * and shrinker paths, which this machine's kernel lacks, and drop_caches, which would disturb
 * everyone, run on fake trees. The daemon's environment is root's (the unit), so this gives
 * nobody anything.
 */
#define KS_ROOT_ENV "CACHEAGED_KERNEL_ROOT"

#define KS_PATH_MAX 4096

/* /proc/sys/fs/dentry-state, every field in the kernel's order (fs/dcache.c). */
struct ks_dentry_state {
        uint64_t nr_dentry;
        uint64_t nr_unused;
        uint64_t age_limit;  /* seconds; a constant 45 */
        uint64_t want_pages; /* unused by the kernel */
        uint64_t nr_negative;
        uint64_t dummy;      /* padding */
};

/* ks_read_dentry_state() - read it; -EBADMSG when it is not six numbers. */
int ks_read_dentry_state(const char *root, struct ks_dentry_state *ret);

/*
 * ks_read_dentry_negative() - fs.dentry-negative (1: unlink deletes the dentry rather than
 * leaving it negative). -ENOENT on kernels without it.
 */
int ks_read_dentry_negative(const char *root, uint64_t *ret);

/* Where the memory controller is. */
enum ks_memcg_version {
        KS_MEMCG_NONE = 0,
        KS_MEMCG_V1 = 1,
        KS_MEMCG_V2 = 2,
};

struct ks_memcg {
        enum ks_memcg_version version;
        char mount[KS_PATH_MAX]; /* its mount point, without the root */
};

/*
 * ks_find_memcg() - the memory controller's hierarchy, from root/proc/self/mountinfo: the
 * unified hierarchy (cgroup2) when its cgroup.controllers lists "memory", else a v1 hierarchy
 * mounted with the memory option. -ENOENT when there is none (ret->version KS_MEMCG_NONE).
 */
int ks_find_memcg(const char *root, struct ks_memcg *ret);

/*
 * ks_cgroup_path_check() - a group path as configured: absolute, at most KS_PATH_MAX / 2
 * bytes, no empty, "." or ".." component. -EINVAL with the reason in @msg.
 */
int ks_cgroup_path_check(const char *path, char *msg, size_t msg_len);

/*
 * ks_cgroup_open() - open @group (checked by ks_cgroup_path_check()) under the memory
 * controller @mc as a directory fd: each component with O_NOFOLLOW|O_DIRECTORY on the
 * controller's own filesystem. -ENOENT when it does not exist (a stopped service), -ELOOP for
 * a symlink, -EXDEV for a mount crossed, -ENOTDIR; the reason in @msg (may be NULL).
 */
int ks_cgroup_open(const char *root, const struct ks_memcg *mc, const char *group, int *ret_fd,
                   char *msg, size_t msg_len);

/* A memory cgroup's figures; what the version lacks stays 0 (and have_* says so). */
struct ks_group {
        uint64_t ino;                 /* the group directory's inode: the cgroup id */
        uint64_t memory_bytes;        /* v2 memory.current, v1 memory.usage_in_bytes */
        uint64_t kernel_bytes;        /* v2 memory.stat kernel, v1 memory.kmem.usage_in_bytes */
        uint64_t file_bytes;          /* v2 memory.stat file, v1 memory.stat total_cache */
        uint64_t slab_reclaimable_bytes; /* v2 memory.stat slab_reclaimable */
        uint64_t active_file_bytes;   /* v2 memory.stat active_file, v1 total_active_file */
        uint64_t shmem_bytes;         /* v2 memory.stat shmem: in file_bytes, but swap-backed */
        uint64_t refault_file;        /* v2 memory.stat workingset_refault_file (pages read
                                         again soon after reclaim took them); 0 without it */
        double pressure_some_avg10;   /* v2 memory.pressure, percent */
        uint64_t pressure_some_usec;  /* v2 memory.pressure "some" total */
        bool have_slab, have_pressure;
};

/*
 * ks_read_group() - the figures of the group open at @fd, as @version has them. -ENOENT when
 * the group was removed meanwhile, -EBADMSG for a file not of the kernel's form.
 */
int ks_read_group(int fd, enum ks_memcg_version version, struct ks_group *ret);

/*
 * ks_cgroup_children() - the names of the child groups of the group open at @fd (a slice's
 * services), at most @max, in directory order: directories only, never a symlink, each name a
 * valid path component. *ret_names is a malloc()ed array of malloc()ed names (free each, then
 * it); *ret_more is set when there were more than @max. -ENOENT when the group went away.
 */
int ks_cgroup_children(int fd, size_t max, char ***ret_names, size_t *ret_n, bool *ret_more);

/* ks_names_free() - free an array that ks_cgroup_children() gave; returns NULL. */
char **ks_names_free(char **names, size_t n);

/*
 * ks_read_lru_gen() - /sys/kernel/mm/lru_gen/enabled ("0x0007"): the multi-gen LRU's feature
 * bits; bit 0 set means the kernel reclaims page cache with MGLRU. -ENOENT without MGLRU in
 * the kernel.
 */
int ks_read_lru_gen(const char *root, unsigned *ret_flags);

#define KS_LRU_GEN_CORE 0x0001 /* MGLRU is in use (mm/vmscan.c lru_gen_enabled()) */

/*
 * ks_read_slabs_scanned() - /proc/vmstat slabs_scanned: the objects the shrinkers have scanned,
 * host-wide, since boot.
 */
int ks_read_slabs_scanned(const char *root, uint64_t *ret);

/*
 * ks_swap_active() - whether any swap area is on (/proc/swaps lists one): 1, 0, or -errno.
 * Where it is, memory.reclaim may swap a group's memory out unless the swappiness=0 key holds.
 */
int ks_swap_active(const char *root);

/*
 * ks_read_reclaim_activity() - a sum that grows whenever anything on the host reclaims: from
 * /proc/vmstat pgscan_kswapd, pgscan_direct, pgscan_khugepaged (global reclaim: kswapd, direct)
 * and slabs_scanned (any shrinker's scan), and, on cgroup v2, from each top-level group of @mc
 * (hierarchical: every group below counts) memory.stat pgscan and memory.events high (memory
 * cgroup reclaim, a memory.high or a memory.reclaim write, which /proc/vmstat does not count).
 * *ret_others is the part of it no memory.reclaim write moves, the daemon's own included:
 * pgscan_kswapd, pgscan_direct, pgscan_khugepaged and the groups' memory.events high and max (a
 * group reclaiming on its own). Either may be NULL (without @ret no memory.stat is read). At
 * most @max_groups top-level groups are read.
 * -errno when /proc/vmstat cannot be read.
 */
int ks_read_reclaim_activity(const char *root, const struct ks_memcg *mc, size_t max_groups,
                             uint64_t *ret, uint64_t *ret_others);

/* ks_read_vfs_cache_pressure() / ks_write_vfs_cache_pressure() - vm.vfs_cache_pressure. */
int ks_read_vfs_cache_pressure(const char *root, uint64_t *ret);
int ks_write_vfs_cache_pressure(const char *root, uint64_t value);

/*
 * ks_reclaim_accepts() - whether the group's memory.reclaim takes @key ("swappiness=0"):
 * writes "0 @key", which asks the kernel to reclaim nothing, so that the kernel's own parser
 * answers (mm/vmscan.c user_proactive_reclaim(): an unknown key is -EINVAL). Returns 1, 0
 * (refused), or another negative errno (the answer is unknown).
 */
int ks_reclaim_accepts(int fd, const char *key);

/*
 * ks_reclaim() - write "@bytes[ @key]" to the group's memory.reclaim: the kernel's reclaim on
 * this group, slab shrinkers included, in the calling thread until done. -EAGAIN when the
 * kernel reclaimed less than asked (an answer: the group had less reclaimable than that),
 * -EINVAL when the kernel refused the text (a key it does not know), -EINTR for a signal.
 */
int ks_reclaim(int fd, uint64_t bytes, const char *key);

/*
 * ks_force_empty() - write memory.force_empty (v1): everything the group holds that can be
 * reclaimed, page cache too, in the calling thread. -EINVAL for a root group.
 */
int ks_force_empty(int fd);

/* ks_drop_caches() - write @what (2: dentries and inodes) to /proc/sys/vm/drop_caches. */
int ks_drop_caches(const char *root, unsigned what);

/* ks_shrinker_present() - whether root/sys/kernel/debug/shrinker exists (CONFIG_SHRINKER_DEBUG). */
bool ks_shrinker_present(const char *root);

/* What one pass over the superblock shrinkers did. */
struct ks_shrinker_pass {
        uint64_t shrinkers;  /* sb-* shrinkers holding objects of the group */
        uint64_t objects;    /* objects they counted for it, and asked to scan */
        uint64_t failed;     /* writes refused (a shrinker gone meanwhile) */
};

/*
 * ks_shrinker_scan() - one rotation of the group whose cgroup id is @ino through shrinker
 * debugfs: for each superblock shrinker ("sb-*"; they hold dentries and inodes), its count
 * line for @ino, then "@ino NODE N" into its scan file for each node with N objects, so that
 * the dcache's LRU walk visits each of the group's objects once: a dentry referenced since
 * the last pass loses its mark and stays (DCACHE_REFERENCED, fs/dcache.c dentry_lru_isolate),
 * the others are freed. At most @max_objects are asked per node of a shrinker (0: no bound).
 */
int ks_shrinker_scan(const char *root, uint64_t ino, uint64_t max_objects,
                     struct ks_shrinker_pass *ret);

/*
 * ks_parse_size() - "4096", "64K", "10M", "1G" (binary, as the kernel's memparse) into bytes,
 * at most 1T. -EINVAL, -ERANGE.
 */
int ks_parse_size(const char *s, uint64_t *ret);


/*
 * ks_unit_name_check() - a systemd unit name this adapter can ask for: [A-Za-z0-9:_.\@-],
 * at most 255 bytes, ending in .service, .scope, .slice, .socket, .mount or .swap. -EINVAL
 * with the reason in @msg.
 */
int ks_unit_name_check(const char *unit, char *msg, size_t msg_len);

/* ks_unit_interface() - the systemd D-Bus interface with the ControlGroup of @unit's type. */
const char *ks_unit_interface(const char *unit);
