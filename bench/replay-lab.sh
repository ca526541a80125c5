#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The replay lab in one go (about 10 s): record a real workload under strace now, replay it and
# the committed fixtures under every policy, and leave the tables, the JSON and the plots in
# bench/out/ (gitignored: traces are never committed).
#
#   bench/replay-lab.sh [BUILD_DIR]    default build-lab, set up (release) and built if needed
#
#   NAMES=N   missing names per directory in the capture (default 10000)
#   LOOP=N    repetitions of each fixture, a long-running program repeating its lookups (50)
#
# Output: capture.strace (the log), capture.txt / .json / .svg, fixtures.txt / .json / .svg,
# sessions.txt / .json / .svg (the recorded interactive sessions, the table with each
# aging-auto row against the fixed ages of --frontier), and a .png
# of each plot where rsvg-convert is installed (apt-get install librsvg2-bin).
set -eu

src=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
build=${1:-$src/build-lab}
out=$src/bench/out
fixtures=$src/tests/fixtures/trace
names=${NAMES:-10000}
loop=${LOOP:-50}

if ! command -v strace >/dev/null 2>&1; then
        echo "replay-lab: strace is needed for the capture (apt-get install strace)" >&2
        exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$src" --buildtype=release >/dev/null
fi
ninja -C "$build" bench/bench-replay >/dev/null
exe=$build/bench/bench-replay
mkdir -p "$out"

echo "== capture (recorded now): python import, stat storms, PATH searches, a scan, python import"
# Aging on the trace's own clock (10 ms, 100 ms of traced time: how fast the workload ran under
# strace on a shared machine moves these rows) and on the event clock (the same for any run
# of the same workload).
"$exe" --capture --out "$out" --names "$names" --rotate-events 1000,10000 --ages auto \
        --svg "$out/capture.svg" | tee "$out/capture.txt"

# The same log again for the JSON; the directories it reports are named in the table.
set --
for d in $(sed -n 's/^  [A-Z] = //p' "$out/capture.txt"); do
        set -- "$@" --dir "$d"
done
"$exe" --json --rotate-events 1000,10000 --ages auto "$@" "$out/capture.strace" \
        >"$out/capture.json"

echo
echo "== fixtures (tests/fixtures/trace), each replayed $loop times in a row"
"$exe" --loop "$loop" --ages auto --svg "$out/fixtures.svg" "$fixtures"/*.log |
        tee "$out/fixtures.txt"
"$exe" --json --loop "$loop" --ages auto "$fixtures"/*.log >"$out/fixtures.json"

echo
echo "== interactive sessions (tests/fixtures/sessions): one configuration, a rotation every 3 s,"
echo "   each aging-auto row against a grid of fixed ages (--frontier; about 10 minutes)"
sessions=$src/tests/fixtures/sessions
conf="--rotate-ms 3000 --ages auto --single-use-age 32 --max-age 64"
# shellcheck disable=SC2086
"$exe" $conf --frontier --svg "$out/sessions.svg" "$sessions"/session-*.log.xz |
        tee "$out/sessions.txt"
# shellcheck disable=SC2086
"$exe" $conf --json "$sessions"/session-*.log.xz >"$out/sessions.json"

if command -v rsvg-convert >/dev/null 2>&1; then
        for f in capture fixtures sessions; do
                rsvg-convert "$out/$f.svg" -o "$out/$f.png"
        done
fi
echo
echo "replay-lab: results in $out"
