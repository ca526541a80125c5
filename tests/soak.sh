#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The soak (issue 11): cacheaged on a private system-type bus, for SECONDS, under everything at
# once: caches of the soak adapter (tests/plugin-soak.c: a steady population, random reuse,
# every reclaimed object made again) and a dcache cache; a client that hammers the bus (GetAll,
# Rotate, Reload of good and bad files in turn, and the manager's properties); SIGHUP storms;
# dbus-daemon stopped and continued, killed and started again. At the end:
#   - every bus call answered while the bus was up (failures only inside a bus fault);
#   - no rotation lost: each soak cache rotated at least 90% of SECONDS / interval times
#     (plus what Rotate asked), every rotation begun reached the adapter, and its object
#     count is the adapter's;
#   - the longest aging slice within SLICE_LIMIT_MS (wall clock, preemption included);
#   - RSS after the warm-up and at the end within 1% (--rss: plain builds only, a
#     sanitizer's own allocator moves its RSS). The warm-up ends when every cache has rotated
#     2 x max_age + refault_window times (every object made at start has come due, been kept
#     or reclaimed and made again, and the refault memory has held a whole window of the
#     reclaimed: the population, the wheel and the ghost table are in their steady state), and
#     not before a sixth of SECONDS; the rotation count and the slice limit are checked with
#     --timing (plain builds: a sanitizer slows the daemon several times);
#   - SIGTERM: exit 0 within 10 s, no sanitizer report (LeakSanitizer runs at exit in an
#     ASan build); with --valgrind, memcheck's error summary is 0 errors and nothing is
#     definitely lost.
#
#   tests/soak.sh BUILD [--seconds N] [--objects N] [--caches N] [--interval DURATION]
#                       [--rss] [--timing] [--valgrind] [--keep]
# Last line: "soak: PASS" or "soak: FAIL (reasons)"; exit 0 or 1. Figures are printed as
# "figure: NAME VALUE" lines (scripts/soak.sh collects them).

set -u
build=${1:?usage: tests/soak.sh BUILD [options]}
shift
seconds=60 objects=500000 caches=5 interval=50ms rss_check= timing= valgrind= keep=
slice_limit_ms=${SLICE_LIMIT_MS:-100}
while [ $# -gt 0 ]; do
        case $1 in
        --seconds) seconds=$2; shift ;;
        --objects) objects=$2; shift ;;
        --caches) caches=$2; shift ;;
        --interval) interval=$2; shift ;;
        --rss) rss_check=1 ;;
        --timing) timing=1 ;;
        --valgrind) valgrind=1 ;;
        --keep) keep=1 ;;
        *) echo "soak: unknown option $1" >&2; exit 2 ;;
        esac
        shift
done
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
cacheaged=$build/daemon/cacheaged
for p in "$cacheaged" "$build/tests/soak.so" "$build/lib/adapters/dcache.so"; do
        [ -e "$p" ] || { echo "soak: $p is missing (build first)"; exit 1; }
done
command -v busctl >/dev/null && command -v dbus-daemon >/dev/null || {
        echo "soak: needs busctl and dbus-daemon"; exit 1; }
[ -z "$valgrind" ] || command -v valgrind >/dev/null || { echo "soak: needs valgrind"; exit 1; }

dir=$(mktemp -d /tmp/cacheage-soak-XXXXXX) || exit 1
chmod 755 "$dir"
addr="unix:path=$dir/bus"
dbus_pid= daemon_pid= actors=()
failures=()
fail() { failures+=("$*"); echo "soak: FAILED CHECK: $*"; }
figure() { echo "figure: $1 $2"; }
cleanup() {
        for p in "${actors[@]}"; do kill "$p" 2>/dev/null; done
        # The bus may have been restarted by the fault actor: its pid is in the file.
        [ -s "$dir/dbus.pid" ] && dbus_pid=$(cat "$dir/dbus.pid")
        [ -n "$dbus_pid" ] && kill -CONT "$dbus_pid" 2>/dev/null
        [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
        [ -n "$dbus_pid" ] && kill "$dbus_pid" 2>/dev/null
        wait 2>/dev/null
        [ -n "${memcg:-}" ] && rmdir "$memcg$group" 2>/dev/null
        [ -n "$keep" ] && echo "soak: kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT

# ---- the bus ----
bus_lib_tests=$src/tests
. "$src/tests/bus-lib.sh"
start_bus() {
        bus_start "$dir/bus" || { echo "soak: dbus-daemon did not start"; cat "$dir/bus.log"; exit 1; }
        dbus_pid=$bus_pid
        echo "$dbus_pid" > "$dir/dbus.pid"
}
start_bus

# ---- the configurations: two good ones (one setting apart: nothing recreated) and a bad one ----
per_cache=$((objects / caches))
# The workload (issue 11): 5% of a cache's objects used again per rotation, single-use objects
# kept 32 rotations and reused ones 64. It was 20% with 8/16: at 5,000,000 objects and 250ms
# aging could not keep up with that (measured, after the fixes in manager.c and isolate.c: 4 to
# 17 rotations behind at the end, backlogs up to 315,000 objects: no steady state); with 5% and 32/64, two thirds of the objects are reused within
# their 32 rotations and every cache keeps up. history_rotations: the history's ring is made
# resident as it fills (1,000 rows: 250 s at 250ms, growth after the warm-up of any shorter
# soak); 100 rows fill within the warm-up.
single_use_age=32 max_age=64 touch=5 refault_window=64
write_conf() { # $1: file, $2: an extra line for [daemon]
        {
                printf '[daemon]\nplugin_dir = %s\ninterval = %s\n' "$dir/plugins" "$interval"
                printf 'idle_cpu_pressure = 0\nidle_memory_pressure = 0\nhistory_rotations = 100\n%s\n' "$2"
                for i in $(seq "$caches"); do
                        printf '[cache soak%d]\nadapter = soak\nobjects = %d\ntouch = %s\n' "$i" "$per_cache" "$touch"
                        printf 'single_use_age = %d\nmax_age = %d\nrefault_window = %d\n\n' \
                                "$single_use_age" "$max_age" "$refault_window"
                done
        } > "$1"
}
write_conf "$dir/good-a.conf" ""
write_conf "$dir/good-b.conf" "log_level = info"
cp "$dir/good-a.conf" "$dir/bad.conf"
printf '[cache broken]\nadapter = soak\nobjects = lots\n' >> "$dir/bad.conf"
# One plugin_dir for every adapter: copies in the soak's directory (root's, like /tmp).
mkdir -m 755 "$dir/plugins"
cp "$build/tests/soak.so" "$build/lib/adapters/dcache.so" "$build/lib/adapters/files.so" \
        "$build/lib/adapters/kernel.so" "$dir/plugins/"
# The adapters that keep text of their section for good (a files cache's path, a kernel
# cache's group) go through every reload too (issue 21: a reload once freed that text under
# them, and a files cache then deleted the files of a dry-run directory). Two files caches
# with paths of the same length, one of them dry_run, and a kernel cache on a child memory
# cgroup of the soak's own (report mode: it reads the group's files every rotation).
mkdir -m 755 "$dir/files-w" "$dir/files-d"
for i in $(seq 20); do echo "entry $i" > "$dir/files-d/f$i"; done
memcg=
# mountinfo: the mount point is the 5th field; the type and the options follow " - ".
while read -r mnt fstype opts; do
        case $fstype in
        cgroup) case ",$opts," in *,memory,*) memcg=$mnt ;; esac ;;
        cgroup2) [ -z "$memcg" ] && grep -qw memory "$mnt/cgroup.controllers" 2>/dev/null && memcg=$mnt ;;
        esac
done < <(awk '{ for (i = 7; $i != "-"; i++); print $5, $(i + 1), $(i + 3) }' /proc/self/mountinfo)
group=/cacheage-soak-$$
if [ -n "$memcg" ] && mkdir "$memcg$group" 2>/dev/null; then
        echo "soak: kernel cache on $memcg$group"
else
        echo "soak: no memory cgroup can be made here: the kernel cache reports the host"
        memcg= group=
fi
for f in good-a good-b bad; do
        # Its ages are what the client sets (MaxAge 8): a write that changes nothing, so that its
        # population settles (with the default ages between a Set and the next reload it swung
        # from 3,000 to 83,000 dentries, and the heap's high-water mark with it: +4% RSS).
        printf '[cache model]\nadapter = dcache\nsource = workload:mixed\nrate = 20000\n' >> "$dir/$f.conf"
        printf 'single_use_age = 4\nmax_age = 8\nrefault_window = 8\n' >> "$dir/$f.conf"
        # One interval in every file: a changed interval restarts the cache's timer at each
        # reload, and reloads ten times a second kept it from rotating (its population, and RSS,
        # then grew all run long).
        printf 'interval = 1s\n' >> "$dir/$f.conf"
        printf '[cache kernel]\nadapter = kernel\ninterval = 500ms\n%s\n' \
                "${group:+cgroup = $group}" >> "$dir/$f.conf"
        for kind in w d; do
                printf '[cache files%s]\nadapter = files\npath = %s\nwatch = inotify\n' \
                        "$kind" "$dir/files-$kind" >> "$dir/$f.conf"
                printf 'interval = 500ms\nsingle_use_age = 2\nmax_age = 4\n' >> "$dir/$f.conf"
                [ "$kind" = d ] && printf 'dry_run = yes\n' >> "$dir/$f.conf"
        done
done
cp "$dir/good-a.conf" "$dir/cacheaged.conf"

# ---- the daemon ----
runner=()
if [ -n "$valgrind" ]; then
        runner=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
                --errors-for-leak-kinds=definite --child-silent-after-fork=yes
                --log-file="$dir/valgrind.log")
fi
"${runner[@]}" "$cacheaged" --config "$dir/cacheaged.conf" --bus "$addr" --log-level info \
        >"$dir/cacheaged.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 3000); do
        busctl --address="$addr" --timeout=5 call org.cacheage.CacheAge1 /org/cacheage/CacheAge1 \
                org.cacheage.CacheAge1.Manager ListCaches >/dev/null 2>&1 && break
        kill -0 "$daemon_pid" 2>/dev/null || { echo "soak: cacheaged died at start"; cat "$dir/cacheaged.log"; exit 1; }
        sleep 0.1
done
interval_usec=$(busctl --address="$addr" get-property org.cacheage.CacheAge1 /org/cacheage/CacheAge1/cache/soak1 \
        org.cacheage.CacheAge1.Cache IntervalUSec | awk '{print $2}')
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$daemon_pid/status" 2>/dev/null || echo 0; }
rss_start=$(rss)
# Time the daemon waited for a CPU (run queue, ns): a slice's wall clock includes it.
run_delay() { awk '{print $2}' "/proc/$daemon_pid/schedstat" 2>/dev/null || echo 0; }
rotations_of() { # cache name: its Rotations, or nothing while the bus does not answer
        busctl --address="$addr" --timeout=5 get-property org.cacheage.CacheAge1 \
                "/org/cacheage/CacheAge1/cache/$1" org.cacheage.CacheAge1.Cache Rotations 2>/dev/null |
                awk '{print $2}'
}

# ---- the actors: a client, SIGHUP storms, bus faults ----
: > "$dir/calls"
touch "$dir/running"
cache_obj=/org/cacheage/CacheAge1/cache/soak1
mgr=(org.cacheage.CacheAge1 /org/cacheage/CacheAge1 org.cacheage.CacheAge1.Manager)
client() {
        local i=0 out rc kind fault
        while [ -e "$dir/running" ]; do
                i=$((i + 1))
                fault=
                [ -e "$dir/bus-fault" ] && fault=1
                case $((i % 6)) in
                0) kind=getall
                   out=$(busctl --address="$addr" --timeout=30 call org.cacheage.CacheAge1 "$cache_obj" \
                        org.freedesktop.DBus.Properties GetAll s org.cacheage.CacheAge1.Cache 2>&1) ;;
                1) kind=rotate
                   out=$(busctl --address="$addr" --timeout=30 call "${mgr[@]}" Rotate s soak2 2>&1) ;;
                2) kind=reload-good
                   if [ $((i % 12)) = 2 ]; then cp "$dir/good-a.conf" "$dir/cacheaged.conf.new"
                   else cp "$dir/good-b.conf" "$dir/cacheaged.conf.new"; fi
                   mv "$dir/cacheaged.conf.new" "$dir/cacheaged.conf"
                   out=$(busctl --address="$addr" --timeout=60 call "${mgr[@]}" Reload 2>&1) ;;
                3) kind=reload-bad
                   cp "$dir/bad.conf" "$dir/cacheaged.conf.new"
                   mv "$dir/cacheaged.conf.new" "$dir/cacheaged.conf"
                   out=$(busctl --address="$addr" --timeout=60 call "${mgr[@]}" Reload 2>&1) ;;
                4) kind=manager
                   out=$(busctl --address="$addr" --timeout=30 get-property "${mgr[@]}" Caches 2>&1) ;;
                5) kind=set
                   out=$(busctl --address="$addr" --timeout=30 set-property org.cacheage.CacheAge1 \
                        /org/cacheage/CacheAge1/cache/model org.cacheage.CacheAge1.Cache MaxAge u 8 2>&1) ;;
                esac
                rc=$?
                [ -e "$dir/bus-fault" ] && fault=1
                if [ "$kind" = reload-bad ]; then
                        # Answered means refused, naming the bad key.
                        if [ $rc != 0 ] && printf '%s' "$out" | grep -q 'objects: invalid number'; then rc=0
                        elif [ $rc = 0 ]; then out="a bad configuration was accepted"; rc=1; fi
                        # Put back whole (a copy then a rename): a SIGHUP storm must never read
                        # a file half written (cp truncates first: an empty file is a valid
                        # configuration of no caches, and the reload removed them all).
                        cp "$dir/good-a.conf" "$dir/cacheaged.conf.new"
                        mv "$dir/cacheaged.conf.new" "$dir/cacheaged.conf"
                fi
                if [ $rc = 0 ]; then echo "$kind ok" >> "$dir/calls"
                elif [ -n "$fault" ]; then echo "$kind fault" >> "$dir/calls"
                else echo "$kind UNANSWERED $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200)" >> "$dir/calls"
                fi
        done
}
hup_storms() {
        while [ -e "$dir/running" ]; do
                sleep 5
                for _ in $(seq 20); do kill -HUP "$daemon_pid" 2>/dev/null; done
                echo storm >> "$dir/storms"
        done
}
bus_faults() {
        local n=0
        while [ -e "$dir/running" ]; do
                sleep 12
                [ -e "$dir/running" ] || break
                n=$((n + 1))
                touch "$dir/bus-fault"
                if [ $((n % 2)) = 1 ]; then
                        kill -STOP "$(cat "$dir/dbus.pid")"; sleep 3; kill -CONT "$(cat "$dir/dbus.pid")"
                        echo stopped >> "$dir/faults"
                else
                        kill "$(cat "$dir/dbus.pid")"; wait "$(cat "$dir/dbus.pid")" 2>/dev/null
                        start_bus
                        echo restarted >> "$dir/faults"
                fi
                sleep 2
                rm -f "$dir/bus-fault"
        done
}

# New files in the files cache's directory all along, some read again: the adapter deletes the
# others while the reloads come.
files_writer() {
        local n=0
        while [ -e "$dir/running" ]; do
                n=$((n + 1))
                for i in $(seq 20); do echo "$n" > "$dir/files-w/n$n-$i"; done
                [ $n -gt 1 ] && cat "$dir/files-w/n$((n - 1))-1" >/dev/null 2>&1
                sleep 0.5
        done
}

warmup=$((seconds / 6))
[ "$warmup" -lt 5 ] && warmup=5
client & actors+=($!)
hup_storms & actors+=($!)
bus_faults & actors+=($!)
files_writer & actors+=($!)
t0=$(date +%s.%N)
end=$(( $(date +%s) + seconds ))
sleep "$warmup"
# ... and on until every cache is in its steady state, if the run is long enough for that.
steady=
while [ "$(date +%s)" -lt $((end - 10)) ]; do
        steady=1
        for i in $(seq "$caches"); do
                r=$(rotations_of "soak$i")
                [ -n "$r" ] && [ "$r" -ge $((2 * max_age + refault_window)) ] || { steady=; break; }
        done
        r=$(rotations_of model)
        [ -n "$r" ] && [ "$r" -ge $((2 * 8 + 8)) ] || steady=
        [ -n "$steady" ] && break
        sleep 1
done
rss_warm=$(rss)
delay_warm=$(run_delay)
warm_at=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
max_rss=$rss_warm
while [ "$(date +%s)" -lt "$end" ]; do
        sleep 1
        kill -0 "$daemon_pid" 2>/dev/null || { fail "cacheaged died"; break; }
        r=$(rss); [ "$r" -gt "$max_rss" ] && max_rss=$r
done
rm -f "$dir/running"
for p in "${actors[@]}"; do wait "$p" 2>/dev/null; done
actors=()
elapsed=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
# The bus is up again (the fault actor ends with it running); the last word is the daemon's.
kill -CONT "$(cat "$dir/dbus.pid")" 2>/dev/null
for _ in $(seq 100); do bus_ready "$dir/bus" && break; sleep 0.1; done
cp "$dir/good-a.conf" "$dir/cacheaged.conf.new"
mv "$dir/cacheaged.conf.new" "$dir/cacheaged.conf"
sleep 2
rss_end=$(rss)
delay_end=$(run_delay)

# ---- the figures and the checks ----
# One GetAll per cache: a snapshot (the daemon answers it in one go, between rotations).
snapshot() { # cache name: "ROTATIONS OBJECTS LONGEST_SLICE BACKLOG LIVE REFRESHES BUSY BEHIND"
        busctl --address="$addr" --timeout=30 --json=short call org.cacheage.CacheAge1 \
                "/org/cacheage/CacheAge1/cache/$1" org.freedesktop.DBus.Properties GetAll s \
                org.cacheage.CacheAge1.Cache 2>/dev/null |
                python3 -c 'import json, sys
p = json.load(sys.stdin)["data"][0]
a = p["AdapterStats"]["data"]
print(p["Rotations"]["data"], p["Objects"]["data"], p["LongestSliceUSec"]["data"],
      p["Backlog"]["data"], a.get("live", -1), a.get("refreshes", -1),
      a.get("refresh_usec", -1), p["RotationsBehind"]["data"])'
}
rotate_calls=$(grep -c '^rotate ok' "$dir/calls")
total_rot=0 total_obj=0 longest=0 min_ratio=
for i in $(seq "$caches"); do
        c=soak$i
        read -r rot obj sl backlog live ref busy behind <<< "$(snapshot "$c")"
        [ -n "$ref" ] || { fail "$c: no snapshot over the bus"; continue; }
        total_rot=$((total_rot + rot)); total_obj=$((total_obj + obj))
        [ "$sl" -gt "$longest" ] && longest=$sl
        forced=0; [ "$c" = soak2 ] && forced=$rotate_calls
        # The timer's share: rotations (less Rotate()'s) against elapsed / interval.
        ratio=$(awk -v r="$rot" -v f="$forced" -v e="$elapsed" -v i="$interval_usec" \
                'BEGIN { printf "%.3f", (r - f) / (e * 1e6 / i) }')
        if [ -z "$min_ratio" ] || awk -v a="$ratio" -v b="$min_ratio" 'BEGIN { exit !(a < b) }'; then
                min_ratio=$ratio
        fi
        # The adapter's own work (before_rotate) as a share of the run: the loop's time it took.
        share=$(awk -v b="$busy" -v e="$elapsed" 'BEGIN { printf "%.3f", b / (e * 1e6) }')
        echo "soak: $c: $rot rotations ($ref begun by the adapter; $forced by Rotate), $obj objects ($live held by the adapter), backlog $backlog, $behind behind, longest slice ${sl} us"
        figure "timer_rotation_ratio_$c" "$ratio"
        figure "adapter_loop_share_$c" "$share"
        # Every rotation begun reached the adapter, and the objects are the adapter's.
        [ "$rot" = "$ref" ] || fail "$c: $rot rotations but the adapter saw $ref begin"
        [ "$obj" = "$live" ] || fail "$c: $obj objects, the adapter holds $live"
done
figure timer_rotation_ratio_min "$min_ratio"
# No timer period dropped on a quiet machine (libevent skips the periods of a late loop: on a
# loaded one, rotations come late, never twice; --timing is for plain builds on a quiet one).
if [ -n "$timing" ] && awk -v a="$min_ratio" 'BEGIN { exit !(a < 0.9) }'; then
        fail "a cache rotated at $min_ratio of its timer's rate (want >= 0.9)"
fi
figure objects "$total_obj"
figure seconds "$elapsed"
figure rotations "$total_rot"
figure longest_slice_usec "$longest"
# The share of the time after the warm-up the daemon spent runnable but waiting for a CPU.
figure run_queue_wait_share "$(awk -v d=$((delay_end - delay_warm)) -v e="$elapsed" -v w="$warm_at" \
        'BEGIN { printf "%.3f", d / 1e9 / (e - w + 2) }')"
figure rss_start_kib "$rss_start"
figure warm_up_seconds "$warm_at"
figure warm_up_steady "${steady:-no}"
figure rss_warm_kib "$rss_warm"
figure rss_end_kib "$rss_end"
figure rss_max_kib "$max_rss"
growth=$(awk -v a="$rss_end" -v b="$rss_warm" 'BEGIN { printf "%.3f", (a - b) * 100 / b }')
figure rss_growth_pct "$growth"
for k in getall rotate reload-good reload-bad manager set; do
        figure "calls_${k}_ok" "$(grep -c "^$k ok" "$dir/calls")"
done
figure calls_in_bus_faults "$(grep -c ' fault$' "$dir/calls")"
unanswered=$(grep -c UNANSWERED "$dir/calls")
figure calls_unanswered "$unanswered"
figure hup_storms "$(wc -l < "$dir/storms" 2>/dev/null || echo 0)"
figure bus_stops "$(grep -c stopped "$dir/faults" 2>/dev/null)"
figure bus_restarts "$(grep -c restarted "$dir/faults" 2>/dev/null)"
figure reconnects "$(grep -c 'Reconnected to' "$dir/cacheaged.log")"
figure reloads_failed "$(grep -c 'Reload failed' "$dir/cacheaged.log")"
figure reloads_done "$(grep -c 'Configuration reloaded' "$dir/cacheaged.log")"

[ "$unanswered" = 0 ] || { fail "$unanswered bus calls unanswered"; grep UNANSWERED "$dir/calls" | head -5; }
[ "$longest" -le $((slice_limit_ms * 1000)) ] || [ -z "$timing" ] ||
        fail "longest slice ${longest} us > ${slice_limit_ms} ms"
[ "$(grep -c '^rotate ok' "$dir/calls")" -gt 0 ] || fail "no Rotate call got through"
# The caches that keep their section's text went through every reload doing their work.
adapter_stat() { # cache, statistic
        busctl --address="$addr" --timeout=30 --json=short get-property org.cacheage.CacheAge1 \
                "/org/cacheage/CacheAge1/cache/$1" org.cacheage.CacheAge1.Cache AdapterStats 2>/dev/null |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["data"].get(sys.argv[1], -1))' "$2"
}
dry_left=$(find "$dir/files-d" -type f | wc -l)
figure files_dry_run_left "$dry_left"
[ "$dry_left" = 20 ] || fail "the dry-run directory lost $((20 - dry_left)) of its 20 files"
deleted=$(adapter_stat filesw deleted)
figure files_deleted "$deleted"
[ "${deleted:--1}" -gt 0 ] || fail "the files cache deleted nothing through the reloads"
kernel_rot=$(rotations_of kernel)
figure kernel_rotations "$kernel_rot"
[ "${kernel_rot:-0}" -gt 0 ] || fail "the kernel cache did not rotate"
grep -q -e 'another directory now' -e 'is not an absolute path' "$dir/cacheaged.log" &&
        fail "a cache's section text changed under it: $(grep -m1 -e 'another directory now' -e 'is not an absolute path' "$dir/cacheaged.log")"
[ "$(grep -c '^reload-bad ok' "$dir/calls")" -gt 0 ] || fail "no bad Reload was refused over the bus"
if [ -n "$rss_check" ] && [ -z "$steady" ]; then
        fail "no steady state to measure RSS growth from: a cache had not rotated $((2 * max_age + refault_window)) times by $warm_at s"
elif [ -n "$rss_check" ] && awk -v g="$growth" 'BEGIN { exit !(g >= 1) }'; then
        fail "RSS grew by ${growth}% after the warm-up ($rss_warm -> $rss_end KiB)"
fi

kill -TERM "$daemon_pid"
stopped=
for _ in $(seq 100); do kill -0 "$daemon_pid" 2>/dev/null || { stopped=1; break; }; sleep 0.1; done
if [ -z "$stopped" ]; then
        fail "cacheaged did not exit within 10 s of SIGTERM"
else
        wait "$daemon_pid"; rc=$?
        [ "$rc" = 0 ] || fail "cacheaged exited with $rc"
fi
daemon_pid=
if grep -q -e 'Sanitizer' -e 'runtime error:' "$dir/cacheaged.log"; then
        fail "a sanitizer report"; grep -A20 -e Sanitizer -e 'runtime error:' "$dir/cacheaged.log" | head -40
fi
if [ -n "$valgrind" ]; then
        errors=$(grep -c 'ERROR SUMMARY' "$dir/valgrind.log")
        figure valgrind_log_lines "$(wc -l < "$dir/valgrind.log")"
        if [ -s "$dir/valgrind.log" ]; then
                fail "valgrind reported:"; head -40 "$dir/valgrind.log"
        fi
        : "$errors"
fi
if [ ${#failures[@]} -gt 0 ]; then
        echo "--- cacheaged's log, last lines:"; tail -20 "$dir/cacheaged.log"
        echo "soak: FAIL (${#failures[@]} checks)"
        exit 1
fi
echo "soak: PASS"
