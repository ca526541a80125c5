#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The kernel adapter at a slice's scale, on fake kernel trees (no VM needed): cacheagectl
# status, show and metrics while the daemon follows 1 group (the baseline, in the same run),
# then each of GROUPS (default 300 and 1024, the most a slice is followed with): each call's
# p50 and p99 as users run it (a new cacheagectl process each time), their ratio to the
# baseline's, the p99 against the 100 ms target, and the daemon's CPU per rotation. The fake
# kernel's writes cost nothing: this is what the daemon itself adds per group.
#
#   bench/kernel-scale.sh BUILD_DIR [GROUPS...]
#
# Also run by "meson test --benchmark -C BUILD_DIR kernel-scale".
set -eu

build=${1:?usage: $0 BUILD_DIR [GROUPS...]}
build=$(cd "$build" && pwd)
shift
src=$(cd "$(dirname "$0")/../tests" && pwd)
[ $# -gt 0 ] || set -- 300 1024
target_usec=100000

run() { # groups: the test's "kernel slice scale:" line
        CA_KERNEL_SCALE_GROUPS=$1 CA_TEST_SRCDIR="$src" CACHEAGED="$build/daemon/cacheaged" \
        CACHEAGECTL="$build/daemon/ctl/cacheagectl" CA_ADAPTER_DIR="$build/lib/adapters" \
        CA_KERNEL_HOOKED_DIR="$build/tests/hooked" LD_LIBRARY_PATH="$build/lib" \
                "$build/tests/test-kernel" --filter 'kernel/slice_scale' -j1 2>&1 |
                grep 'kernel slice scale:' || { echo "kernel-scale: the run of $1 groups failed" >&2; exit 1; }
}
field() { # line, name: its p50 and p99
        printf '%s\n' "$1" | sed -E "s/.*$2 p50 ([0-9]+) us p99 ([0-9]+) us.*/\\1 \\2/"
}

base=$(run 1)
echo "baseline: $base"
status=0
for n in "$@"; do
        line=$(run "$n")
        echo "$line"
        for what in status show metrics; do
                set -- $(field "$base" "$what") $(field "$line" "$what")
                over=""
                [ "$4" -le $target_usec ] || { over=" OVER the ${target_usec} us target"; status=1; }
                awk -v w="$what" -v n="$n" -v b50="$1" -v b99="$2" -v p50="$3" -v p99="$4" \
                        -v over="$over" 'BEGIN { printf "%5d groups, %-7s p50 %6.1f ms (%.2fx the baseline), p99 %6.1f ms (%.2fx)%s\n", n, w, p50 / 1000, p50 / b50, p99 / 1000, p99 / b99, over }'
        done
        printf '%s\n' "$line" | sed -E 's/.*daemon CPU per rotation ([0-9]+) us.*/  daemon CPU per rotation: \1 us/'
done
exit $status
