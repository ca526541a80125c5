/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * When the kernel adapter acts, decided from figures alone (no file, no clock of its own), so
 * that the tests replay recorded dentry-state and PSI sequences through the very code the
 * daemon runs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Memory "some avg10" above this is memory pressure: the kernel reclaims already. As the
 * daemon's idle_memory_pressure default, and not 0: a pass's own cost, the pages of the
 * group's page cache it took and the group reads again (workingset refaults, a memory stall),
 * shows there for the next ten seconds at 0.5-5% (measured in the VM lab), and would put the
 * next passes off until it decays.
 */
#define KP_PRESSURE_PCT 10.0 /* percent */

/* Whether an action may run now. */
enum kp_gate {
        KP_GO,
        KP_BUSY,     /* not idle time (the daemon's PSI gate, ca_host_idle()) */
        KP_PRESSURE, /* memory pressure on the host or in the group */
};

/*
 * kp_gate() - any action only in idle time and never under memory pressure: @idle is the
 * daemon's verdict, @host_memory_pct and @group_memory_pct (negative: unknown) the memory
 * "some avg10" of the host and of the target group.
 */
enum kp_gate kp_gate(bool idle, double host_memory_pct, double group_memory_pct);

/* kp_gate_name() - "idle", "busy", "memory pressure". */
const char *kp_gate_name(enum kp_gate g);

/*
 * kp_reclaim_amount() - what one rotation asks the group to give back: @fixed bytes when set,
 * else the growth of @now over @base (the group's level when the last rotation ended), at
 * most @max; 0 (nothing to do) when that is below @min.
 */
uint64_t kp_reclaim_amount(uint64_t fixed, uint64_t base, uint64_t now, uint64_t min,
                           uint64_t max);

/*
 * A pass over a group's dentries with memory.reclaim (cgroup v2): small writes of @step bytes,
 * each a new reclaim from the kernel's lowest priority, whose slab scan follows the priority
 * it reaches (mm/vmscan.c do_shrink_slab: freeable >> priority). Where freed slab counts
 * towards the amount (classic LRU, 6.1: shrink_node adds reclaim_state->reclaimed_slab), a
 * step ends as soon as it freed @step, scanning the dentry LRU from its head: what was not
 * referenced since the last pass is freed, what was is rotated to the tail with its
 * DCACHE_REFERENCED bit cleared (fs/dcache.c dentry_lru_isolate). Steps go on while each
 * frees at least half of its size from the group's reclaimable slab (or, where slab pages do
 * not empty, as many dentries); the first that does not ends the pass: the group's
 * unreferenced dentries are gone, and a further step would only scan the rotated ones again
 * and free them, second chance or not. One big write instead runs whole priority sweeps and
 * retries (mm/memcontrol.c memory_reclaim, MAX_RECLAIM_RETRIES), passing over the LRU more
 * than once: the group's hot dentries go too (measured: doc/adapters/kernel.md).
 */
enum kp_pass_end {
        KP_PASS_GOING,
        KP_PASS_DONE,      /* a step took less than half of its size from slab */
        KP_PASS_DRY,       /* -EAGAIN: the group had less reclaimable than a step */
        KP_PASS_MAX,       /* max_reclaim asked, or the growth the pass was for */
        KP_PASS_CACHE,     /* the pass took its share of the group's page cache */
        KP_PASS_SWEPT,     /* a sweep: one write, one walk of the LRUs (kp_pass_sweep()) */
        KP_PASS_TRIMMED,   /* a trim: one write at the lowest pressure (kp_pass_trim()) */
        KP_PASS_ERROR,     /* the write failed otherwise */
};

#define KP_DENTRY_BYTES 192 /* bytes: the dcache's object size on x86-64 (struct dentry) */
/*
 * A pass stops once it took this share of the group's page cache (or one step, if more):
 * each step on classic LRU takes inactive page cache along with the slab, and what a pass
 * leaves the next ones take. Measured: a pass unbounded took 26% of a service's page cache
 * with a storm of 100,000 negatives (doc/adapters/kernel.md).
 */
#define KP_PASS_FILE_PCT 5 /* percent */

/*
 * The share is counted from the group's highest page cache of the last KP_FILE_ROTATIONS
 * rotations, not from where this pass begins: passes follow each other faster than a service
 * reads its files again, and two passes of 5% each from their own start took 10.4% of a
 * service's page cache in the VM lab's 6.1 (32.7M -> 29.3M, the file read every 2 s, passes
 * every 2 s). A pass that begins below the share of that level still makes its one step.
 */
#define KP_FILE_ROTATIONS 4
struct kp_file_window {
        uint64_t seen[KP_FILE_ROTATIONS];
        unsigned at;
};

/* kp_file_ref() - note @file, the group's page cache now; the highest of the last few. */
uint64_t kp_file_ref(struct kp_file_window *w, uint64_t file);

struct kp_pass {
        bool sweep;              /* one sweep (kp_pass_sweep()) */
        bool trim;               /* one trim (kp_pass_trim()) */
        uint64_t step;           /* bytes per write */
        uint64_t max;            /* bytes asked at most per pass */
        uint64_t asked;          /* bytes asked so far */
        uint64_t freed_bytes;    /* fall of reclaimable slab across the steps */
        uint64_t freed_dentries; /* fall of nr_dentry across the steps */
        uint64_t last_before;    /* the slab before the last step */
        uint64_t file_start;     /* the group's page cache when the pass began */
        uint64_t file_taken;     /* fall of the group's page cache across the steps */
        unsigned steps;
        enum kp_pass_end end;
        int error;               /* KP_PASS_ERROR: the write's negative errno */
};

/*
 * kp_pass_begin() - a new pass of @step-byte writes, at most @max bytes asked (the slab's
 * growth since the last pass, bounded by max_reclaim), on a group holding @file bytes of page
 * cache. Never more: where the group has nothing
 * else to give (no page cache), a write the unreferenced dentries cannot fill runs every
 * priority and then the retries, and takes the referenced ones too (measured).
 */
void kp_pass_begin(struct kp_pass *p, uint64_t step, uint64_t max, uint64_t file);

/*
 * A sweep, where the kernel reclaims with MGLRU (6.12). There memory.reclaim meets each write
 * from the group's page cache at the lowest priority (DEF_PRIORITY, 12), and the slab is
 * scanned once per write in proportion to that priority (mm/shrinker.c do_shrink_slab:
 * (count >> priority) * 4 / seeks, seeks 2 for a superblock, the count scaled by
 * vm.vfs_cache_pressure / 100 in fs/super.c super_cache_count); since 6.5 the slab a group
 * frees no longer counts towards what was asked. So the steps of a pass reach almost none of
 * the dentries, and take page cache instead (measured: doc/adapters/kernel.md).
 *
 * A sweep is one write of KP_SWEEP_STEP (SWAP_CLUSTER_MAX pages: one call of the reclaim,
 * mm/memcontrol.c memory_reclaim) with vm.vfs_cache_pressure at KP_SWEEP_PRESSURE for its
 * length: then the one slab scan at priority 12 walks each of the group's dentry and inode
 * LRUs once, as long as it was when the write began, freeing what was not referenced since the
 * last sweep and rotating what was, with its bit cleared (fs/dcache.c dentry_lru_isolate). One
 * walk, never two: a second would free the rotated ones, the group's hot set. And only where the
 * group holds page cache enough for the kernel to meet the write at priority 12
 * (KP_SWEEP_MIN_FILE): below it the priority falls, and each lower one would walk the LRUs
 * twice as often again; such a group gets the steps of a pass, whose priority falls by itself.
 */
#define KP_SWEEP_STEP (32 * 4096)              /* bytes: SWAP_CLUSTER_MAX pages */
#define KP_SWEEP_PRESSURE (100 * 4096 / 2)     /* vm.vfs_cache_pressure: one walk at priority 12 */
#define KP_SWEEP_MIN_FILE (32ULL << 20)        /* bytes of page cache */
#define KP_VFS_CACHE_PRESSURE_DEFAULT 100      /* the kernel's */

/*
 * A trim: the way to age a group that holds no page cache the kernel could reclaim, or a few
 * pages (a service that only stats and opens: most of a slice's; its directories' blocks are
 * its few pages). There memory.reclaim meets no write: the kernel runs every priority from 12
 * to 0, then tries again while nothing was reclaimed (mm/memcontrol.c memory_reclaim,
 * MAX_RECLAIM_RETRIES: 17 descents in all), and each priority scans (count >> priority) * 4 /
 * seeks of the group's slab; at the kernel's default vm.vfs_cache_pressure (100) the seventeen
 * walk its dentry LRU several times, and the second walk frees the dentries the first found
 * referenced, the hot set (measured: a whole hot set gone to one write of 4K, on 6.1 and 6.12).
 * A trim is one write of KP_TRIM_STEP with vm.vfs_cache_pressure at KP_TRIM_PRESSURE for its
 * length: the count is then a hundredth, and the seventeen descents together walk the LRU about
 * once, freeing what was not referenced since the last walk and rotating what was. Measured in
 * the VM lab (bench/kernel-sweep.py, 6,000 negatives and 200 referenced dentries; 100,000 and
 * 2,000): on 6.12 0.94 (0.93) of the storm freed, on 6.1 0.81 (0.41: there freed slab counts
 * and ends the write sooner), none of the hot set on either; at pressure 3 and above the hot
 * set went on 6.12. Anything that ends the write sooner only walks less: a trim walks the LRU
 * once at most, and is one write per rotation.
 *
 * A page reclaimed ends the write after one descent, which at pressure 1 walks a twenty-fifth
 * of the LRU: so a group with a few pages (KP_TRIM_MAX_FILE at most) has them taken first, by
 * writes with vm.vfs_cache_pressure at 0 (no shrinker counts anything: page cache only), up to
 * KP_TRIM_DROPS of them: on classic LRU a write only deactivates a page read twice, the next
 * takes it (measured on 6.1, groups with 4K to 128K of page cache: after one such write the
 * trim freed 0.2% of a storm, after up to four 74%; on 6.12 one was enough: 94%). What they
 * leave (dirty pages: a directory just written) the trim's write cannot take either, and it
 * walks the LRU once; a page read again meanwhile ends it early, and it walks less. Where swap
 * is on and the write cannot say swappiness=0 (6.1 refuses the key; swappiness = kernel or
 * above 0 in the configuration), such a write would swap the group's memory out instead: no
 * trim.
 */
#define KP_TRIM_STEP 4096          /* bytes: the smallest write; the kernel asks 32 pages anyway */
#define KP_TRIM_PRESSURE 1         /* vm.vfs_cache_pressure for a trim's write */
#define KP_TRIM_DROP_PRESSURE 0    /* and for the writes that take its few pages first */
#define KP_TRIM_DROPS 4            /* those writes, at most */
#define KP_TRIM_MAX_FILE (32 * 4096) /* bytes of page cache: what one write takes (32 pages) */

/*
 * Page cache a group on classic LRU holds for passes (kp_pass_begin()): measured safe in the
 * VM lab's 6.1 with 16 MiB and more (bench/kernel-bench.py --file-mb). With less, and some, a
 * write is met from its page cache at a priority where the slab scan may walk the LRU twice:
 * one 4K write took the whole hot set of a group with 1 MiB at the default pressure, and kept
 * it with 2 and 4 MiB (bench/kernel-sweep.py, 6.1), so no fixed amount is safe there.
 */
#define KP_PASS_MIN_FILE (16ULL << 20) /* bytes of page cache */

/* What one rotation does to a group (kp_group_how()). */
enum kp_how {
        KP_HOW_TRIM,  /* KP_TRIM_MAX_FILE of reclaimable page cache at most: a trim */
        KP_HOW_SWEEP, /* MGLRU, page cache at its sweep floor or more: a sweep */
        KP_HOW_PASS,  /* classic LRU, KP_PASS_MIN_FILE of page cache or more: a pass */
        KP_HOW_ALONE, /* some page cache, under the floor: left alone (no safe write known) */
};

/*
 * kp_group_how() - first, no harm: a group is acted on only the way measured to take what was
 * not used and keep what was. @reclaimable is its page cache less what is swap-backed (shmem),
 * @sweep_min its sweep floor (0: KP_SWEEP_MIN_FILE), @trim_ok whether a trim may be written
 * (no swap, or the kernel takes swappiness=0 and the configuration keeps it). Says why a group is left alone in @why (may be NULL).
 */
enum kp_how kp_group_how(bool mglru, uint64_t reclaimable, uint64_t sweep_min, bool trim_ok,
                         char *why, size_t why_len);

/* kp_how_name() - "trim", "sweep", "pass", "left alone". */
const char *kp_how_name(enum kp_how how);

/*
 * kp_sweep_fits() - whether a group holding @file bytes of page cache may be swept: at least
 * @min (0: KP_SWEEP_MIN_FILE, measured on 6.12: 32 MiB met the write at priority 12, 24 MiB did
 * not, and the group's hot set went).
 */
bool kp_sweep_fits(uint64_t file, uint64_t min);

/*
 * kp_sweep_overran() - whether a sweep walked the LRUs more than once (the kernel met the write
 * below priority 12): the shrinkers scanned @scanned objects across it (/proc/vmstat
 * slabs_scanned, host-wide) while the group's @slab bytes of reclaimable slab hold at most
 * @slab / KP_DENTRY_BYTES objects (inodes are larger). More than twice that cannot be one walk;
 * the group then needs more page cache than it had to be swept (kp_sweep_min_after()).
 */
bool kp_sweep_overran(uint64_t scanned, uint64_t slab);

/* kp_sweep_min_after() - the page cache a group needs from now on, after it overran with @file. */
uint64_t kp_sweep_min_after(uint64_t file, uint64_t min);

/* kp_pass_sweep() - make the pass begun one sweep: one write of KP_SWEEP_STEP, then done. */
void kp_pass_sweep(struct kp_pass *p);

/*
 * kp_pass_trim() - make the pass begun one trim: one write of KP_TRIM_STEP, then done, whatever
 * the kernel answered (EAGAIN is a trim's usual answer: nothing it could reclaim). The next
 * rotation trims again while a trim freed @min (kp_pass_again()); the growth after one is
 * counted from where it left the group (kp_pass_base()).
 */
void kp_pass_trim(struct kp_pass *p);

/*
 * kp_pass_step() - one write was made (@error its result), and the group's reclaimable slab
 * went from @slab_before to @slab_after, nr_dentry by @dentries_freed, its page cache to
 * @file_after: whether to write again.
 */
bool kp_pass_step(struct kp_pass *p, int error, uint64_t slab_before, uint64_t slab_after,
                  uint64_t dentries_freed, uint64_t file_after);

/*
 * kp_pass_base() - the level the next pass's growth is counted from, given the slab @after
 * this one. A pass the kernel ended with -EAGAIN ran dry: its last step took the referenced
 * dentries too (where the group had nothing else to give), which the service then makes
 * again; counted from before that step, their coming back is not growth, and the next pass
 * waits for new dentries instead of taking them once more.
 */
uint64_t kp_pass_base(const struct kp_pass *p, uint64_t after);

/*
 * Page cache a group holds for a pass to go on at an eighth of a step, and for looks
 * (kp_look_due()). There a step that finds no unreferenced dentry is met from page cache at
 * priority 6 or gentler (64 pages of 4,096), where the slab is scanned about a sixteenth per
 * write (mm/vmscan.c, do_shrink_slab(): freeable >> priority, times 4 / seeks, summed over the
 * priorities), so the referenced dentries are rotated, not freed; measured in the VM lab's 6.1
 * with groups of 16 and 32 MB (bench/kernel-bench.py --file-mb). With less, such a step goes
 * on to the referenced dentries (the kernel lowers its priority and walks the slab again), so
 * those groups pass again only after a step's worth, and get no looks.
 */
#define KP_LOOK_MIN_FILE (16ULL << 20) /* bytes of page cache */

/*
 * kp_pass_again() - whether the next rotation passes again whatever the slab grew: this pass
 * freed at least @min (bytes of slab, or as many dentries: the adapter gives a step's size), or
 * @min / KP_AGAIN_DIV in a group that held KP_LOOK_MIN_FILE of page cache, and did not run dry.
 * A step can end a pass while unreferenced dentries remain (classic LRU meets it from the
 * inactive page cache first); the passes that follow take them, oldest first, until one frees
 * little. In the VM lab's 6.1 a pass that freed 626 dentries (120K, under a step) had ended
 * the passes with 625 of a storm left for good.
 */
#define KP_AGAIN_DIV 8
bool kp_pass_again(const struct kp_pass *p, uint64_t min);

/*
 * kp_look_due() - whether a group on classic LRU that no pass took for @quiet rotations gets
 * one anyway, a look for what earlier passes left: a pass can end at a step the page cache
 * met (the file just read) with much of a storm left, and nothing but growth would pass again.
 * Every KP_LOOK_ROTATIONS quiet rotations, where the group holds at least @min of slab (@slab)
 * and KP_LOOK_MIN_FILE of page cache (@file); a look that finds little costs one step.
 */
#define KP_LOOK_ROTATIONS 4
bool kp_look_due(unsigned quiet, uint64_t slab, uint64_t min, uint64_t file);

/* kp_pass_end_name() - what ended a pass, as the log says it. */
const char *kp_pass_end_name(enum kp_pass_end end);

/* action = drop: drop_caches 2, host-wide, only past a limit and after steady growth. */
struct kp_drop_config {
        uint64_t negative_limit;    /* nr_negative at or above this is too many; 0 = off */
        double negative_ratio;      /* negatives per positive dentry above this; 0 = off */
        uint32_t growth_rotations;  /* rotations in a row nr_negative must have grown */
        uint64_t min_interval_usec; /* between two drops */
};

struct kp_drop_state {
        bool have_last;
        uint64_t last_negative;     /* nr_negative at the previous rotation */
        uint32_t growing;           /* rotations in a row it grew */
        bool dropped;
        uint64_t last_drop_usec;
};

enum kp_drop {
        KP_DROP_UNDER_LIMIT,
        KP_DROP_NOT_GROWING,
        KP_DROP_TOO_SOON,
        KP_DROP_GATED,  /* it would, but not now: see the gate */
        KP_DROP_NOW,
};

/*
 * kp_drop_decide() - one rotation's figures: whether to drop now. Updates the growth streak
 * in @st; says why in @why (may be NULL), with the figures that decided.
 */
enum kp_drop kp_drop_decide(const struct kp_drop_config *cfg, struct kp_drop_state *st,
                            uint64_t nr_dentry, uint64_t nr_negative, enum kp_gate gate,
                            uint64_t now_usec, char *why, size_t why_len);

/* kp_drop_done() - a drop happened at @now_usec, leaving @nr_negative: the streak starts over. */
void kp_drop_done(struct kp_drop_state *st, uint64_t now_usec, uint64_t nr_negative);
