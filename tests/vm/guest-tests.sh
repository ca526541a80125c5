#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# In a guest of the VM lab (scripts/vm.sh): the kernel adapter's tests on the real kernel,
# with cgroup v2 and its memory controller, in a quiet kernel (nothing but the test makes
# dentries there, so host-wide dentry-state figures are asserted exactly:
# CACHEAGE_QUIET_KERNEL=1, tests/kernel-fake.h). The tests on fake trees ran on the host.
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
