#!/usr/bin/env bash
# The test suite under load: a busy loop on every core, and the whole suite run RUNS times in
# a row (default 10) in BUILD (default build/). Prints each run's failed tests and, last,
# "N passed, N failed" counting runs. CI must not depend on a quiet machine (issue 11).
#   scripts/load-test.sh [BUILD [RUNS]]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-10}
hogs=()
stop_hogs() {
    for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${hogs[@]}"; do wait "$p" 2>/dev/null; done
}
trap stop_hogs EXIT
for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    hogs+=($!)
done
ninja -C "$build" >/dev/null || exit 1
ok=0 bad=0
for i in $(seq "$runs"); do
    start=$(date +%s)
    if meson test -C "$build" --num-processes 2 --print-errorlogs >"$build/load-run-$i.log" 2>&1; then
        ok=$((ok + 1))
        echo "run $i: ok ($(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg))"
    else
        bad=$((bad + 1))
        cp "$build/meson-logs/testlog.txt" "$build/load-run-$i.testlog.txt"
        echo "run $i: FAILED ($(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg)):" \
            "$(grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$build/load-run-$i.log" | awk '{print $2, $4}' | tr '\n' ' ')"
    fi
done
echo "$ok passed, $bad failed"
[ "$bad" -eq 0 ]
