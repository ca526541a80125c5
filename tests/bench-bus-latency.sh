#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# How long a D-Bus Get waits while a big cache ages: the bus test's responsiveness case,
# at a size and a number of calls of your choosing, against the 50 ms target.
#
#   tests/bench-bus-latency.sh BUILD_DIR [OBJECTS [GETS]]     (defaults: 10000000 5000)
#
# Also run by "meson test --benchmark -C BUILD_DIR".
set -eu

build=${1:?usage: $0 BUILD_DIR [OBJECTS [GETS]]}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
target_usec=50000

out=$(CA_TEST_SRCDIR="$src" CACHEAGED="$build/daemon/cacheaged" \
      CA_TEST_PLUGIN_DIR="$build/tests" \
      CA_BUS_BENCH_OBJECTS="${2:-10000000}" CA_BUS_BENCH_GETS="${3:-5000}" \
      "$build/tests/test-bus" --filter 'bus/responsive*' 2>&1) || { echo "$out"; exit 1; }
line=$(printf '%s\n' "$out" | grep 'bus latency')
echo "$line"
slowest=$(printf '%s\n' "$line" | sed -E 's/.*slowest ([0-9]+) us.*/\1/')
if [ "$slowest" -le $target_usec ]; then
        echo "slowest Get ${slowest} us: within the ${target_usec} us target"
else
        echo "slowest Get ${slowest} us: OVER the ${target_usec} us target"
fi
