#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# One kernel's side of bench/kernel.sh (run as root, on the host or in a guest of the VM lab):
# two services, each in its own memory cgroup, under each policy in turn.
#
#   T  the target: a process stats 2,000 files of its own every 200 ms (its hot set), another
#      reads a 32 MB file of its own (--file-mb) every 2 s (its page cache, kept in use), and a
#      third made a storm of STORM lookups of missing names before the policy started
#      (negative dentries never used again);
#   O  another service: its own hot set of 2,000 files and 2,000 negative dentries.
#
# Policies: none; bare (a bare loop at the same interval: v2 "echo BARE > memory.reclaim",
# v1 "echo 0 > memory.force_empty"); drop10 and drop2 (echo 2 > drop_caches every 10 s, 2 s);
# cacheaged (the daemon, cgroup = T, action = reclaim, interval INTERVAL; v1 with
# allow_force_empty).
#
# For each: what is left of the storm (T's names looked up again from inside T: the dentries
# made again are the ones that went), the hot sets' dentries made again while the policy ran
# (each hot set counts the rise of nr_dentry across its own passes, which take a lock so that
# they never overlap: exact in a quiet kernel, where nothing else makes dentries), T's page
# cache and active page cache at their lowest against the start, T's page cache read again
# (v2 workingset_refault_file), O's negatives that went, the p99 of O's stat() calls, and the
# time the policy spent in its writes. Prints "SAMPLE policy t_ms nr_dentry nr_negative
# T_slab T_file" lines every 250 ms and one "RESULT {json}" line per policy on stdout.
import argparse, errno, json, os, re, shutil, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--policies", default="none,bare,drop10,drop2,cacheaged")
ap.add_argument("--run", type=float, default=30)
ap.add_argument("--interval", type=float, default=2)
ap.add_argument("--storm", type=int, default=100000)
ap.add_argument("--bare", default="16M")
ap.add_argument("--no-file", action="store_true", help="T reads no file (no page cache)")
ap.add_argument("--file-mb", type=int, default=32, help="the size of the file T reads (MB)")
ap.add_argument("--table", action="store_true",
                help="end with a Markdown table of the policies (p99 against none's)")
args = ap.parse_args()

args.build = os.path.abspath(args.build)
LOAD = os.path.join(args.build, "bench", "kernel-load")
QUIET = os.environ.get("CACHEAGE_QUIET_KERNEL") == "1"


def rd(p):
    with open(p) as f:
        return f.read()


def memcg():
    v1 = None
    for line in rd("/proc/self/mountinfo").splitlines():
        left, right = line.split(" - ")
        mp, fstype, opts = left.split()[4], right.split()[0], right.split()[2]
        if fstype == "cgroup2" and "memory" in rd(mp + "/cgroup.controllers").split():
            return mp, 2
        if fstype == "cgroup" and "memory" in opts.split(",") and not v1:
            v1 = mp
    if v1:
        return v1, 1
    sys.exit("kernel-bench: no memory cgroup controller is mounted")


MC, VERSION = memcg()


def gstat(g):
    d = {}
    if VERSION == 2:
        for l in rd(f"{g}/memory.stat").splitlines():
            k, v = l.split()
            d[k] = int(v)
        return {"slab": d["slab_reclaimable"], "file": d["file"], "active": d["active_file"],
                "refault": d.get("workingset_refault_file", 0)}
    for l in rd(f"{g}/memory.stat").splitlines():
        k, v = l.split()
        d[k] = int(v)
    return {"slab": int(rd(f"{g}/memory.kmem.usage_in_bytes")), "file": d["total_cache"],
            "active": d["total_active_file"], "refault": 0}


def ds():
    f = rd("/proc/sys/fs/dentry-state").split()
    return int(f[0]), int(f[4])


def spawn(g, argv, out=None):
    def pre():
        with open(f"{g}/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
    return subprocess.Popen(argv, preexec_fn=pre, stdout=out or subprocess.DEVNULL)


def run_in(g, argv):
    p = spawn(g, argv, subprocess.PIPE)
    out = p.communicate()[0].decode().strip()
    return out


def write(path, text):
    fd = os.open(path, os.O_WRONLY)
    t = time.monotonic()
    try:
        os.write(fd, text.encode())
        err = 0
    except OSError as e:
        err = e.errno
    finally:
        os.close(fd)
    return err, time.monotonic() - t


def size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s)


procs, groups, tmp = [], [], None


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()
    procs.clear()
    for g in groups:
        if os.path.isdir(g):
            for pid in rd(f"{g}/cgroup.procs").split():
                try:
                    with open(f"{MC}/cgroup.procs", "w") as f:
                        f.write(pid)
                except OSError:
                    pass
            try:
                os.rmdir(g)
            except OSError as e:
                print(f"kernel-bench: cannot remove {g}: {e}", file=sys.stderr)
    groups.clear()


def on_signal(sig, frame):
    raise KeyboardInterrupt


signal.signal(signal.SIGTERM, on_signal)


def one(policy):
    d = tempfile.mkdtemp(prefix=f"{policy}-", dir=tmp)
    T, O = f"{MC}/cacheage-bench-T-{os.getpid()}", f"{MC}/cacheage-bench-O-{os.getpid()}"
    for g in (T, O):
        os.mkdir(g)
        groups.append(g)
    for sub in ("t/hot", "t/storm", "o/hot", "o/neg"):
        os.makedirs(f"{d}/{sub}")
    lock = f"{d}/hot.lock"
    hot_args = ["exact"] if QUIET else []
    if not args.no_file:
        spawn(T, ["dd", "if=/dev/zero", f"of={d}/t/big", "bs=1M", f"count={args.file_mb}",
                  "status=none"]).wait()
        spawn(T, ["sync"]).wait()
        procs.append(spawn(T, [LOAD, "read", f"{d}/t/big", "2000"]))
    hot_t = spawn(T, [LOAD, "hot", f"{d}/t/hot", "2000", "200", f"lock={lock}"] + hot_args,
                  subprocess.PIPE)
    hot_o = spawn(O, [LOAD, "hot", f"{d}/o/hot", "2000", "200", f"lock={lock}"] + hot_args,
                  subprocess.PIPE)
    procs.extend([hot_t, hot_o])
    spawn(O, [LOAD, "storm", f"{d}/o/neg", "1000000", "60", "2000"]).wait()
    time.sleep(1)
    # The storm, before the policy starts (a service that ran before the daemon was there).
    spawn(T, [LOAD, "storm", f"{d}/t/storm", "1000000", "600", str(args.storm)]).wait()
    time.sleep(4)  # the file read twice more: its pages active

    t0s, o0s = gstat(T), gstat(O)
    daemon, spent, log = None, 0.0, None
    if policy == "cacheaged":
        conf = f"{d}/cacheaged.conf"
        with open(conf, "w") as f:
            f.write(f"[daemon]\nplugin_dir = {args.build}/lib/adapters\n"
                    "# A shared host is busy with other work: no CPU idle gate.\n"
                    "idle_cpu_pressure = 0\nlog_level = debug\n"
                    f"[cache t]\nadapter = kernel\ncgroup = /{os.path.basename(T)}\n"
                    f"action = reclaim\ninterval = {args.interval}s\n"
                    + ("allow_force_empty = yes\n" if VERSION == 1 else ""))
        log = open(f"{d}/cacheaged.log", "w+")
        daemon = subprocess.Popen([f"{args.build}/daemon/cacheaged", "--config", conf,
                                   "--bus", "none"], stderr=log, stdout=log)
        procs.append(daemon)
    for p in (hot_t, hot_o):
        p.send_signal(signal.SIGUSR1)
    start = tick = time.monotonic()
    next_action = start + (10 if policy == "drop10" else args.interval)
    min_file, min_active = t0s["file"], t0s["active"]
    while time.monotonic() - start < args.run:
        now = time.monotonic()
        if policy in ("bare", "drop2", "drop10") and now >= next_action:
            if policy == "bare" and VERSION == 2:
                err, dt = write(f"{T}/memory.reclaim", str(size(args.bare)))
            elif policy == "bare":
                err, dt = write(f"{T}/memory.force_empty", "0")
            else:
                err, dt = write("/proc/sys/vm/drop_caches", "2")
            if err not in (0, errno.EAGAIN):
                sys.exit(f"kernel-bench: {policy}: {os.strerror(err)}")
            spent += dt
            next_action += 10 if policy == "drop10" else args.interval
        n = ds()
        g = gstat(T)
        min_file, min_active = min(min_file, g["file"]), min(min_active, g["active"])
        print(f"SAMPLE {policy} {int((now - start) * 1000)} {n[0]} {n[1]} {g['slab']} "
              f"{g['file']}", flush=True)
        tick += 0.25
        time.sleep(max(0, tick - time.monotonic()))
    if daemon:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
        log.seek(0)
        # The adapter's own timing of each action (its log lines end in ", N ms").
        text = log.read()
        spent = sum(int(m) for m in re.findall(r", (\d+) ms$", text, re.M)) / 1000
        log.close()
        for line in text.splitlines():
            if "memory.reclaim on" in line or "force_empty on" in line or os.environ.get("BENCH_LOG"):
                print("LOG " + line, flush=True)
    for p in (hot_t, hot_o):
        p.send_signal(signal.SIGTERM)
    rt, ro = hot_t.communicate()[0].split(), hot_o.communicate()[0].split()
    t1s = gstat(T)
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    procs.clear()
    left = max(0, args.storm - int(run_in(T, [LOAD, "restat", f"{d}/t/storm", str(args.storm), "m"])))
    o_lost = min(2000, int(run_in(O, [LOAD, "restat", f"{d}/o/neg", "2000", "m"])))
    res = {"policy": policy, "kernel": os.uname().release, "cgroup": VERSION, "quiet": QUIET,
           "storm": args.storm, "storm_left": left,
           "t_hot_recreated": int(rt[0]), "t_hot_lookups": int(rt[1]) * 2000,
           "o_hot_recreated": int(ro[0]), "o_hot_lookups": int(ro[1]) * 2000,
           "o_stat_p99_ns": int(ro[2]), "o_negatives_lost": o_lost,
           "t_file_min_pct": round(100 * min_file / max(1, t0s["file"]), 1),
           "t_active_min_pct": round(100 * min_active / max(1, t0s["active"]), 1),
           "t_refault_pages": t1s["refault"] - t0s["refault"],
           "t_slab_start": t0s["slab"], "t_slab_end": t1s["slab"],
           "o_slab_start": o0s["slab"], "o_slab_end": gstat(O)["slab"],
           "spent_ms": round(spent * 1000)}
    print("RESULT " + json.dumps(res), flush=True)
    results.append(res)
    cleanup()
    shutil.rmtree(d, ignore_errors=True)


def table():
    """The policies side by side; O's stat() p99 as a ratio to none's (the same run)."""
    base = next((r["o_stat_p99_ns"] for r in results if r["policy"] == "none"), 0)
    print("| policy | storm left | T hot set made again | O hot set made again | "
          "T page cache, lowest | T active page cache, lowest | T page cache read again | "
          "O negatives lost | O stat() p99 | time in writes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        pct = lambda n, d: f"{100 * n / d:.2f}%" if d else "-"
        p99 = f"{r['o_stat_p99_ns'] / base:.2f}x" if base else f"{r['o_stat_p99_ns']} ns"
        print(f"| {r['policy']} | {r['storm_left']} of {r['storm']} | "
              f"{pct(r['t_hot_recreated'], r['t_hot_lookups'])} | "
              f"{pct(r['o_hot_recreated'], r['o_hot_lookups'])} | {r['t_file_min_pct']}% | "
              f"{r['t_active_min_pct']}% | {r['t_refault_pages'] * 4 / 1024:.1f} MB | "
              f"{r['o_negatives_lost']} of 2000 | {p99} | {r['spent_ms']} ms |")


results = []
tmp = tempfile.mkdtemp(prefix="cacheage-kbench-", dir="/tmp")
try:
    print(f"kernel-bench: {os.uname().release}, cgroup v{VERSION} at {MC}, "
          f"MGLRU {rd('/sys/kernel/mm/lru_gen/enabled').strip() if os.path.exists('/sys/kernel/mm/lru_gen/enabled') else 'absent'}, "
          f"{'a quiet kernel' if QUIET else 'a shared host'}, load {rd('/proc/loadavg').split()[0]}",
          file=sys.stderr, flush=True)
    for policy in args.policies.split(","):
        one(policy)
    if args.table:
        table()
except KeyboardInterrupt:
    sys.exit(130)
finally:
    cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
