#!/usr/bin/env bash
# The Quick start's main command: install what is missing, build, then run cacheaged on
# the demo configuration (conf/demo.conf) on a private D-Bus, and watch its caches age
# with "cacheagectl status --watch". Ctrl-C stops everything.
#   DEMO_SECONDS=N   stop by itself after N seconds (default: run until interrupted)
#   DEMO_SVG=FILE    with DEMO_SECONDS: at the end, write the storm cache's history as a plot
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
say "Installing what is missing (scripts/deps.sh: apt-get, the first time only)"
scripts/deps.sh
if [ ! -d build ]; then
    say "Configuring the build (meson setup build)"
    meson setup build >/dev/null
fi
# ninja's one-line progress ([n/N] what) on a terminal; the first build takes a minute or two.
say "Building (ninja -C build; the first time about 1-2 minutes on 2 cores)"
if [ -t 1 ]; then
    ninja -C build
else
    ninja -C build >/dev/null
fi
say "Starting a private D-Bus and cacheaged on conf/demo.conf"

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

cat <<EOF
cacheaged runs on $address with conf/demo.conf (log: $tmp/cacheaged.log).
Two caches of the dentry model, rotated every 1 s (demo) and 2 s (storm):
  demo   a mixed workload (5,000 lookups/s): OBJECTS grow for a few seconds, then level off
         as each rotation reclaims the single-use ones (RECLAIMED climbs, OBJECTS does not).
  storm  2,000 lookups/s of names that never exist: without aging OBJECTS would grow by
         120,000 a minute; here it stays at a few thousand (about 4,000 just after each
         rotation, the arrivals of the two rotations before; more in between).
AGES is single_use_age/max_age in rotations; "auto": the daemon tunes them from refaults.
Look at OBJECTS (level, not growing) and RECLAIMED (growing) below. Ctrl-C stops everything.
In another terminal: build/daemon/ctl/cacheagectl --address "$address" show storm
EOF
if [ -n "${DEMO_SECONDS:-}" ]; then
    end=$((SECONDS + DEMO_SECONDS))
    while [ $SECONDS -lt $end ]; do
        build/daemon/ctl/cacheagectl --address "$address" --no-pager status
        echo
        sleep 2
    done
    # DEMO_SVG=FILE: the storm cache's history as a plot (the README's picture).
    if [ -n "${DEMO_SVG:-}" ]; then
        build/daemon/ctl/cacheagectl --address "$address" history storm --svg "$DEMO_SVG"
    fi
else
    build/daemon/ctl/cacheagectl --address "$address" --no-pager status --watch=1
fi
