#!/usr/bin/env bash
# The Quick start's main command: install what is missing, build, then run cacheaged on
# the demo configuration (conf/demo.conf) on a private D-Bus, and watch its caches age
# with "cacheagectl status --watch". Ctrl-C stops everything.
#   DEMO_SECONDS=N   stop by itself after N seconds (default: run until interrupted)
#   DEMO_SVG=FILE    with DEMO_SECONDS: at the end, write the storm cache's history as a plot
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null

tmp=$(mktemp -d /tmp/cacheage-demo.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

# A private session-type bus: only this demo talks on it.
address="unix:path=$tmp/bus"
dbus-daemon --session --nofork --nopidfile --address="$address" 2>"$tmp/dbus.log" &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/bus" ] && break; sleep 0.1; done

CACHEAGED_PLUGIN_DIR=build/lib/adapters build/daemon/cacheaged \
        --config conf/demo.conf --bus "$address" --log-level info 2>"$tmp/cacheaged.log" &
pids+=($!)
sleep 1
if ! kill -0 "${pids[1]}" 2>/dev/null; then
    cat "$tmp/cacheaged.log" >&2
    exit 1
fi

echo "cacheaged runs on $address with conf/demo.conf (log: $tmp/cacheaged.log)."
echo "Objects grow, then level off as each rotation reclaims the single-use ones."
if [ -n "${DEMO_SECONDS:-}" ]; then
    end=$((SECONDS + DEMO_SECONDS))
    while [ $SECONDS -lt $end ]; do
        build/daemon/cacheagectl --address "$address" --no-pager status
        echo
        sleep 2
    done
    # DEMO_SVG=FILE: the storm cache's history as a plot (the README's picture).
    if [ -n "${DEMO_SVG:-}" ]; then
        build/daemon/cacheagectl --address "$address" history storm --svg "$DEMO_SVG"
    fi
else
    build/daemon/cacheagectl --address "$address" --no-pager status --watch=1
fi
