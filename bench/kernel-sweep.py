#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# How much page cache a sweep needs (the kernel adapter on MGLRU, doc/adapters/kernel.md, "A
# sweep"): in a quiet guest of the VM lab, as root, on cgroup v2. For each trial a new memory
# cgroup gets FILE MiB of page cache (a file written and read twice from inside it), a hot set
# of 1,000 files and 1,000 missing names looked up several times (referenced dentries), then a
# storm of 100,000 missing names looked up once, then the hot set again. Then one write of SIZE
# bytes to its memory.reclaim with vm.vfs_cache_pressure at PRESSURE for the length of that
# write (0: left as it is), put back at once. Printed: the group's reclaimable slab and page
# cache before and after, the storm left (its names looked up again from the group: the
# dentries made again are the ones that went), the hot set's dentries made again, the write's
# time. One line per trial:
#
#   scripts/vm.sh 6.12 -- bench/kernel-sweep.py PRESSURE,SIZE,FILE [...]
#   scripts/vm.sh 6.12 -- bench/kernel-sweep.py 204800,131072,32 204800,131072,24 0,131072,32
#
# PRESSURE may also be "trim" (the kernel adapter's trim: the page cache dropped at 0, then the
# write at 1) or "probeK" (a 4K write at 0 first, then the write at K times the group's file LRU
# over the pages that probe scanned: a pressure scaled to how deep the kernel went to meet it);
# --reader keeps a process of the group reading its file while the writes run.
#
# Measured 2026-12-04 on Debian 13's 6.12 (commit 810b662): at 204800, a 128K write took the
# storm (625 left) and none of the hot set with 32 or 64 MiB of page cache; with 24, 20, 16, 8,
# 4 or 0 MiB it took the hot set too (2,002 made again): the kernel fell below priority 12.
# Without the raised pressure, 0 of the storm went. On 6.1 (classic LRU) the same write took
# the storm and kept the hot set with 8 MiB too.
import os
import subprocess
import sys
import tempfile
import time

MC = "/sys/fs/cgroup"
STORM = 100000
READER = False
BALLAST = 0  # MiB: --ballast, clean page cache charged to the group just before the write
HOT = 1000
TRIM = -1  # PRESSURE "trim": the kernel adapter's trim (0, then 1), not one pressure
PROBE = -2  # PRESSURE "probeK": a 4K probe at pressure 0, then the write at K * LRU / pgscan
trials = 0


def rd(path):
    with open(path) as f:
        return f.read()


def wr(path, text):
    with open(path, "w") as f:
        f.write(text)


def dentries():
    f = rd("/proc/sys/fs/dentry-state").split()
    return int(f[0]), int(f[4])  # nr_dentry, nr_negative


def slabs_scanned():
    for line in rd("/proc/vmstat").splitlines():
        k, v = line.split()
        if k == "slabs_scanned":
            return int(v)
    return 0


def group_stat(g):
    st = dict(line.split() for line in rd(f"{g}/memory.stat").splitlines())
    return int(st["slab_reclaimable"]), int(st["file"])


def lru_stat(g):
    st = dict(line.split() for line in rd(f"{g}/memory.stat").splitlines())
    return int(st["pgscan"]), (int(st["active_file"]) + int(st["inactive_file"])) >> 12


def run_in(g, work):
    """@work in a child process that joined group @g; waited for."""
    pid = os.fork()
    if pid == 0:
        wr(f"{g}/cgroup.procs", str(os.getpid()))
        work()
        os._exit(0)
    os.waitpid(pid, 0)


def look_up(names):
    for p in names:
        try:
            os.stat(p)
        except FileNotFoundError:
            pass


def trial(pressure, size, file_mib, k=0):
    global trials
    trials += 1
    d = tempfile.mkdtemp(dir="/tmp", prefix="kernel-sweep-")
    g = f"{MC}/kernel-sweep-{os.getpid()}-{trials}"
    os.mkdir(g)
    os.mkdir(f"{d}/hot")
    os.mkdir(f"{d}/storm")
    hot = [f"{d}/hot/f{i}" for i in range(HOT)] + [f"{d}/hot/m{i}" for i in range(HOT)]
    storm = [f"{d}/storm/x{i}" for i in range(STORM)]

    def setup():
        for i in range(HOT):
            open(f"{d}/hot/f{i}", "w").close()
        if file_mib:
            with open(f"{d}/big", "wb") as f:
                f.write(b"\1" * int(file_mib * 1048576))
            os.sync()
            for _ in range(2):
                with open(f"{d}/big", "rb") as f:
                    f.read()
        look_up(hot)
        look_up(hot)
        look_up(storm)
        look_up(hot)

    run_in(g, setup)
    reader = 0
    if READER and file_mib:
        # A service reading its file while the write runs (--reader): from inside the group.
        reader = os.fork()
        if reader == 0:
            wr(f"{g}/cgroup.procs", str(os.getpid()))
            while True:
                with open(f"{d}/big", "rb") as f:
                    while f.read(1 << 16):
                        pass
    time.sleep(0.5)
    ballast = f"{d}/ballast"
    if BALLAST:
        # Read once from inside the group: inactive, clean page cache it is charged for, that
        # the write is met from first; dropped again after it (POSIX_FADV_DONTNEED).
        with open(ballast, "wb") as f:
            f.truncate(BALLAST << 20)

        def charge():
            with open(ballast, "rb") as f:
                while f.read(1 << 16):
                    pass
        run_in(g, charge)
    slab0, file0 = group_stat(g)
    was = rd("/proc/sys/vm/vfs_cache_pressure").strip()
    scanned0 = slabs_scanned()
    t = time.monotonic()
    result = "ok"
    try:
        if pressure == TRIM:
            # The kernel adapter's trim: the group's few pages of page cache dropped first with
            # the shrinkers counting nothing (pressure 0), then the write at pressure 1, whatever
            # page cache is left (dirty pages the first could not take).
            wr("/proc/sys/vm/vfs_cache_pressure", "0")
            for _ in range(4):  # KP_TRIM_DROPS
                if not group_stat(g)[1]:
                    break
                try:
                    wr(f"{g}/memory.reclaim", str(size))
                except OSError:
                    break  # EAGAIN: what is left cannot be taken now
            result = f"{group_stat(g)[1]} bytes of page cache left, then "
            wr("/proc/sys/vm/vfs_cache_pressure", "1")
            try:
                wr(f"{g}/memory.reclaim", str(size))
                result += "ok"
            except OSError as e:
                result += os.strerror(e.errno)
        elif pressure == PROBE:
            # How deep the kernel goes to meet a write from this group's page cache, asked
            # with the shrinkers counting nothing (pressure 0): the pages it scanned against
            # the group's file LRU. Then the write at a pressure scaled to that depth.
            scan0, lru = lru_stat(g)
            wr("/proc/sys/vm/vfs_cache_pressure", "0")
            wr(f"{g}/memory.reclaim", "4096")
            scan = max(1, lru_stat(g)[0] - scan0)
            p = max(1, min(int(was), k * lru // scan))
            scanned0 = slabs_scanned()
            scan0 = lru_stat(g)[0]
            wr("/proc/sys/vm/vfs_cache_pressure", str(p))
            wr(f"{g}/memory.reclaim", str(size))
            result = f"probe scanned {scan} of {lru} pages, write at {p} scanned {lru_stat(g)[0] - scan0}"
        else:
            if pressure:
                wr("/proc/sys/vm/vfs_cache_pressure", str(pressure))
            wr(f"{g}/memory.reclaim", str(size))
    except OSError as e:
        result = os.strerror(e.errno)
    finally:
        wr("/proc/sys/vm/vfs_cache_pressure", was)
    ms = (time.monotonic() - t) * 1000
    if BALLAST:
        fd = os.open(ballast, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    if reader:
        os.kill(reader, 9)
        os.waitpid(reader, 0)
    scanned = slabs_scanned() - scanned0
    time.sleep(0.3)
    slab1, file1 = group_stat(g)
    n = dentries()[0]
    run_in(g, lambda: look_up(hot))
    hot_again = dentries()[0] - n
    n = dentries()[0]
    run_in(g, lambda: look_up(storm))
    storm_left = max(0, STORM - (dentries()[0] - n))
    print(f"pressure {'trim' if pressure == TRIM else f'probe{k}' if pressure == PROBE else pressure}, write {size}, page cache {file_mib} MiB: slab {slab0 >> 10}K -> "
          f"{slab1 >> 10}K, page cache {file0 >> 20}M -> {file1 >> 20}M, storm left {storm_left} "
          f"of {STORM}, hot set made again {hot_again} of {2 * HOT}, {ms:.0f} ms, {scanned} objects "
          f"scanned, {result}", flush=True)
    subprocess.run(["rm", "-rf", d], check=False)
    try:
        os.rmdir(g)
    except OSError:
        pass  # its page cache still charged: the kernel keeps it until reclaimed


args = sys.argv[1:]
while args and args[0].startswith("--"):
    if args[0] == "--storm":
        STORM = int(args[1])
    elif args[0] == "--hot":
        HOT = int(args[1])
    elif args[0] == "--ballast":
        BALLAST = int(args[1])
    elif args[0] == "--reader":
        READER = True
        args = args[1:]
        continue
    else:
        sys.exit(f"kernel-sweep.py: unknown option {args[0]}")
    args = args[2:]
if not args:
    sys.exit("usage: kernel-sweep.py [--storm N] [--hot N] [--reader] [--ballast MIB] PRESSURE,SIZE,FILE_MIB [...]")
for spec in args:
    p, s, f = spec.split(",")
    if p.startswith("probe"):
        trial(PROBE, int(s), float(f), int(p[5:]))
    else:
        trial(TRIM if p == "trim" else int(p), int(s), float(f))
