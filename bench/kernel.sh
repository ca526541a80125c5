#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The host's real dentry cache, two services, three ways (about 2 minutes; root, a memory cgroup):
#
#   A  a storm of stat()s of unique missing names, RATE a second for RUN seconds (a build, a
#      mail spool probing names): negative dentries that are never used again;
#   B  a hot set of 2,000 files it made, statted every 200 ms: dentries in constant use.
#
# each in its own child memory cgroup, under
#
#   none         nothing: the kernel reclaims only under memory pressure;
#   drop_caches  echo 2 > /proc/sys/vm/drop_caches every DROP_EVERY seconds, what
#                administrators do today: it takes every unused dentry of the host, B's too;
#   cacheage     cacheaged with the kernel adapter, cgroup = A, action = reclaim (cgroup v1:
#                allow_force_empty; v2: memory.reclaim), rotating every INTERVAL.
#
# Output: a table (nr_negative and nr_dentry at the end and at their peak, B's re-created
# dentries, the time each way spent reclaiming) and a plot of nr_negative over time, one
# line each, in bench/out/kernel/ (kernel.txt, kernel.svg and kernel.png where rsvg-convert
# or ImageMagick's convert is installed). The drop_caches run drops the whole host's dentry
# and inode caches: do not run this beside tests that count dentries.
#
#   bench/kernel.sh [BUILD_DIR]     default build/ (built if needed)
#   RUN=30 RATE=8000 DROP_EVERY=10 INTERVAL=2s
#   POLICIES="none drop_caches cacheage" (a subset, in that order, to leave the host's cache be)
set -eu

src=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
build=$(CDPATH="" cd -- "${1:-$src/build}" 2>/dev/null && pwd || echo "${1:-$src/build}")
out=$src/bench/out/kernel
run=${RUN:-30}
rate=${RATE:-8000}
drop_every=${DROP_EVERY:-10}
interval=${INTERVAL:-2s}
settle=4 # seconds after the storm, for the last rotations

[ "$(id -u)" -eq 0 ] || { echo "kernel.sh: needs root (memory cgroups, drop_caches)" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$src" >/dev/null
fi
ninja -C "$build" bench/kernel-load daemon/cacheaged lib/adapters/kernel.so >/dev/null
load=$build/bench/kernel-load
mkdir -p "$out"

# The memory controller: cgroup v2 when the unified hierarchy has it, else v1.
memcg=$(awk '$0 ~ / - cgroup2 / { print $5 }' /proc/self/mountinfo | while read -r m; do
        grep -qw memory "$m/cgroup.controllers" 2>/dev/null && echo "$m"; done | head -1)
version=2
if [ -z "$memcg" ]; then
        memcg=$(awk '/ - cgroup / && $NF ~ /(^|,)memory(,|$)/ { print $5 }' /proc/self/mountinfo | head -1)
        version=1
fi
[ -n "$memcg" ] || { echo "kernel.sh: no memory cgroup controller is mounted" >&2; exit 1; }

tmp=$(mktemp -d /tmp/cacheage-kbench-XXXXXX)
A=$memcg/cacheage-bench-A-$$
B=$memcg/cacheage-bench-B-$$
pids=""

group_empty() { # move what is left to the top, and remove the group
        [ -d "$1" ] || return 0
        while read -r p; do echo "$p" > "$memcg/cgroup.procs" 2>/dev/null || true; done < "$1/cgroup.procs"
        rmdir "$1" 2>/dev/null || true
}
cleanup() {
        for p in $pids; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        group_empty "$A"
        group_empty "$B"
        rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# Run $3... in group $1 (a path), stdout to $2.
in_group() {
        g=$1 o=$2
        shift 2
        sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$g" "$@" > "$o" &
}

echo "kernel.sh: $(uname -r), cgroup v$version at $memcg, load average $(cut -d' ' -f1 /proc/loadavg);" \
     "A: $rate stat()s of missing names a second for $run s; B: 2000 files every 200 ms" | tee "$out/kernel.txt"

policies=${POLICIES:-none drop_caches cacheage}
for policy in $policies; do
        mkdir "$A" "$B" "$tmp/a-$policy" "$tmp/b-$policy"
        in_group "$B" "$tmp/$policy.hot" "$load" hot "$tmp/b-$policy" 2000 200
        hot=$!
        pids="$hot"
        sleep 1
        case $policy in
        drop_caches)
                "$load" drop "$drop_every" $((run + settle)) > "$tmp/drops" &
                dropper=$!
                pids="$pids $dropper"
                ;;
        cacheage)
                cat > "$tmp/cacheaged.conf" <<EOF
[daemon]
plugin_dir = $build/lib/adapters
# The machine running the benchmark is shared with other work: no CPU idle gate.
idle_cpu_pressure = 0
[cache a]
adapter = kernel
cgroup = /${A##*/}
action = reclaim
allow_force_empty = yes
interval = $interval
EOF
                "$build/daemon/cacheaged" --config "$tmp/cacheaged.conf" --bus none \
                        --log-level info 2> "$out/cacheaged.log" &
                daemon=$!
                pids="$pids $daemon"
                sleep 1
                ;;
        esac
        # The samples start 1 s before the storm, in every run alike.
        "$load" sample 250 > "$out/$policy.samples" &
        sampler=$!
        pids="$pids $sampler"
        sleep 1
        in_group "$A" "$tmp/$policy.storm" "$load" storm "$tmp/a-$policy" "$rate" "$run"
        storm=$!
        wait "$storm"
        sleep "$settle"
        spent=0
        case $policy in
        drop_caches)
                kill "$dropper" 2>/dev/null || true
                wait "$dropper" 2>/dev/null || true
                spent=$(awk '{ printf "%.0f", $2 / 1000 }' "$tmp/drops")
                ;;
        cacheage)
                kill "$daemon" 2>/dev/null || true
                wait "$daemon" || true
                # The reclaims' own time, as the adapter logged each one.
                spent=$(sed -n 's/.*, \([0-9]*\) ms$/\1/p' "$out/cacheaged.log" | awk '{ s += $1 } END { print s + 0 }')
                ;;
        esac
        kill "$hot" "$sampler"
        wait "$hot" "$sampler" 2>/dev/null || true
        pids=""
        read -r recreated passes < "$tmp/$policy.hot"
        awk -v p="$policy" -v r="$recreated" -v n="$passes" -v s="$spent" '
                { if ($3 > peak) peak = $3; if ($2 > dpeak) dpeak = $2; neg = $3; den = $2 }
                END { printf "%s %d %d %d %d %d %d %d\n", p, neg, peak, den, dpeak, r, n, s }' \
                "$out/$policy.samples" >> "$tmp/rows"
        # Back to where the next run starts: A's dentries go with its directory.
        rm -rf "$tmp/a-$policy" "$tmp/b-$policy"
        [ "$version" = 1 ] && echo 0 > "$A/memory.force_empty"
        group_empty "$A"
        group_empty "$B"
done

{
        printf '\n%-12s %12s %12s %12s %12s %13s %10s\n' policy nr_negative "peak" nr_dentry "peak" \
                "B re-created" "time spent"
        while read -r p neg peak den dpeak r n s; do
                printf '%-12s %12d %12d %12d %12d %13s %8s ms\n' "$p" "$neg" "$peak" "$den" "$dpeak" \
                        "$r/$((n * 2000))" "$s"
        done < "$tmp/rows"
        echo
        echo "(nr_negative, nr_dentry: host-wide at the end and at their peak; B re-created: dentries"
        echo "of B's hot set it had to allocate again, of all its lookups; time spent: in drop_caches"
        echo "writes, or in the adapter's reclaims as it logged them)"
} | tee -a "$out/kernel.txt"

# The plot: nr_negative over time, one line each.
awk -v out="$out/kernel.svg" '
        FNR == 1 { f++; name[f] = FILENAME; sub(".*/", "", name[f]); sub("\\.samples$", "", name[f]) }
        { t[f, FNR] = $1 / 1000; v[f, FNR] = $3; n[f] = FNR; if ($3 > max) max = $3; if ($1 / 1000 > tmax) tmax = $1 / 1000 }
        END {
                W = 760; H = 420; L = 80; R = 20; T = 30; B = 50
                color["none"] = "#c0392b"; color["drop_caches"] = "#7f8c8d"; color["cacheage"] = "#2471a3"
                scale = 1; while (scale * 10 < max) scale *= 10
                ymax = int(max / scale + 1) * scale
                printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H > out
                printf "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H > out
                printf "<text x=\"%d\" y=\"18\" font-size=\"14\">host nr_negative over time: A stat()s missing names from 1 s, B keeps a hot set</text>\n", L > out
                for (i = 0; i <= 5; i++) {
                        y = T + (H - T - B) * (1 - i / 5)
                        printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, W - R, y > out
                        printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", L - 6, y + 4, ymax * i / 5 > out
                }
                for (s = 0; s <= tmax; s += 5) {
                        x = L + (W - L - R) * s / tmax
                        printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%ds</text>\n", x, H - B + 18, s > out
                }
                for (k = 1; k <= f; k++) {
                        printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color[name[k]] > out
                        for (i = 1; i <= n[k]; i++)
                                printf "%.1f,%.1f ", L + (W - L - R) * t[k, i] / tmax, T + (H - T - B) * (1 - v[k, i] / ymax) > out
                        printf "\"/>\n" > out
                        printf "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>", L + 10 + (k - 1) * 150, H - 18, color[name[k]] > out
                        printf "<text x=\"%d\" y=\"%d\">%s</text>\n", L + 30 + (k - 1) * 150, H - 12, name[k] > out
                }
                printf "</svg>\n" > out
        }' $(for p in $policies; do echo "$out/$p.samples"; done)
if command -v rsvg-convert >/dev/null 2>&1; then
        rsvg-convert "$out/kernel.svg" -o "$out/kernel.png"
elif command -v convert >/dev/null 2>&1; then
        convert "$out/kernel.svg" "$out/kernel.png" 2>/dev/null || true
fi
echo "kernel.sh: $out/kernel.txt, $out/kernel.svg$([ -f "$out/kernel.png" ] && echo ", $out/kernel.png")"
