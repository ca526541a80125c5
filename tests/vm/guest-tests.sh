#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# In a guest of the VM lab (scripts/vm.sh): the kernel adapter's tests on the real kernel,
# with cgroup v2 and its memory controller, in a quiet kernel (nothing but the test makes
# dentries there, so host-wide dentry-state figures are asserted exactly:
# CACHEAGE_QUIET_KERNEL=1, tests/kernel-fake.h), after bench-fidelity's short version. The
# tests on fake trees ran on the host.
#
#   scripts/vm.sh 6.1 -- tests/vm/guest-tests.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
export CA_TEST_SRCDIR="$src/tests" CACHEAGED="$build/daemon/cacheaged" CACHEAGECTL="$build/daemon/ctl/cacheagectl" \
       CA_KERNEL_HOOKED_DIR="$build/tests/hooked" \
       CA_ADAPTER_DIR="$build/lib/adapters" CACHEAGE_QUIET_KERNEL=1
echo "guest: Linux $(uname -r), MGLRU $(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo absent)," \
     "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
# A guest is where these tests must run: one that skips for want of what the lab provides (a
# memory cgroup, a quiet kernel, a controller) fails the run. Skips for the kernel's own
# design stay skips: v1-only tests on v2, the item-3 pass on MGLRU (doc/adapters/kernel.md).
status=0
# bench-fidelity's short version in CI: the dentry model against this quiet kernel's own
# counters, on the guest's tmpfs (/var/tmp and /dev/shm; the host's files come over 9p, which
# keeps no negative dentry): three workloads, one cold run each, --check. First, in the guest as
# booted: run after the kernel tests, in a loaded CI run here, with what they left (their groups
# going, their files, the caches they warmed), the kernel and the model both counted 9 to 16
# dentries more or less than in a guest as booted. The whole table, on Debian 12's
# ext4 root: doc/benchmarks.md, bench-fidelity.
echo "=== bench-fidelity --check --only unlink-open,create-unlink,tmpfs"
if [ ! -x "$build/bench/bench-fidelity" ]; then
        echo "guest: $build/bench/bench-fidelity is missing"
        status=1
elif ! "$build/bench/bench-fidelity" --check --runs 1 --tries 10 \
        --only unlink-open,create-unlink,tmpfs; then
        echo "guest: bench-fidelity: the model and the kernel differ (above)"
        status=1
fi
out=$(mktemp)
for t in "test-kernel-sys:kernel_sys/*real*" "test-kernel:kernel/real_*"; do
        bin=${t%%:*} filter=${t#*:}
        echo "=== $bin --filter=$filter"
        "$build/tests/$bin" --filter="$filter" -j1 --tap=- > "$out" 2>&1 || status=1
        cat "$out"
        if grep '^ok .*# SKIP' "$out" |
           grep -E 'no memory cgroup|quiet kernel|controller is mounted|dropped the host'; then
                echo "guest: the tests above skipped in a guest, where they must run"
                status=1
        fi
done
rm -f "$out"
exit $status
