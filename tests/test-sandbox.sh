#!/bin/sh
# What the sandbox drop-ins (systemd/sandbox/) claim about the kernel, checked on this kernel,
# with the unit's own restrictions: uid 0, no capability (CapabilityBoundingSet=), and for
# PrivateUsers=yes a user namespace that maps root to root only.
#   1. /proc/sys/vm/drop_caches: root may write it with no capability, in such a namespace too
#      (probed with "0", which the kernel refuses as a value only after the permission check:
#      nothing is dropped);
#   2. a memory cgroup's reclaim file (v1 memory.force_empty, v2 memory.reclaim) likewise, on
#      an empty group made for the test: kernel-reclaim.conf keeps PrivateUsers=yes and no
#      capability, and only lifts the read-only mounts;
#   3. a file of another user in that user's directory cannot be deleted by root without
#      CAP_DAC_OVERRIDE, nor with it inside the namespace (the owner is not mapped), and can
#      with it outside: files.conf sets PrivateUsers=no and that capability.
# Usage: test-sandbox.sh KERNEL_DROPIN FILES_DROPIN (the built drop-ins). Needs root.
set -u
kernel_dropin=$1 files_dropin=$2
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
    echo "1..0 # SKIP needs root, unshare and setpriv"
    exit 0
fi
tmp=$(mktemp -d)
group=
cleanup() {
    [ -n "$group" ] && rmdir "$group" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# As the unit runs: no capability at all, and (with "userns") in a private user namespace.
nocaps() { setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"; }
userns() { unshare --user --map-root-user -- setpriv --inh-caps=-all --bounding-set=-all -- "$@"; }

echo "1..4"
# 1. The errno of writing "0": EINVAL once allowed, EACCES/EPERM/EROFS when not.
probe() {
    "$@" /usr/bin/python3 -c '
import errno, os
try:
    fd = os.open("/proc/sys/vm/drop_caches", os.O_WRONLY)
    os.write(fd, b"0\n")
    print("written")
except OSError as e:
    print(errno.errorcode[e.errno])'
}
plain=$(probe nocaps) inns=$(probe userns) nobody=$(probe setpriv --reuid=nobody --regid=nogroup --clear-groups)
if [ "$plain" = EINVAL ] && [ "$inns" = EINVAL ] && [ "$nobody" = EACCES ]; then
    echo "ok 1 - drop_caches: root writes it without capabilities, in a user namespace too (nobody: EACCES)"
else
    echo "not ok 1 - drop_caches: no capability $plain, user namespace $inns, nobody $nobody (expected EINVAL, EINVAL, EACCES)"
fi

# 2.
if [ -f /sys/fs/cgroup/memory/memory.force_empty ]; then
    group=/sys/fs/cgroup/memory/cacheage-test-$$
    file=memory.force_empty value=0
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    group=/sys/fs/cgroup/cacheage-test-$$
    file=memory.reclaim value=1M
fi
if [ -z "$group" ]; then
    echo "ok 2 # SKIP no memory cgroup controller"
elif ! mkdir "$group" 2>"$tmp/mkdir"; then
    echo "ok 2 # SKIP cannot make a memory cgroup: $(cat "$tmp/mkdir")"
    group=
elif nocaps sh -c "echo $value > $group/$file" 2>"$tmp/e1" &&
     userns sh -c "echo $value > $group/$file" 2>"$tmp/e2"; then
    echo "ok 2 - $file: root writes it without capabilities, in a user namespace too"
else
    echo "not ok 2 - $file refused: $(cat "$tmp/e1" "$tmp/e2")"
fi
if grep -q '^PrivateUsers=\|^CapabilityBoundingSet=' "$kernel_dropin"; then
    echo "not ok 3 - $kernel_dropin changes PrivateUsers= or the capabilities, which it needs not"
else
    echo "ok 3 - kernel-reclaim.conf keeps PrivateUsers=yes and no capability"
fi

# 3.
mkdir -p "$tmp/cache"
touch "$tmp/cache/a"
chown -R nobody:nogroup "$tmp/cache"
chmod 755 "$tmp/cache"
if nocaps rm -f "$tmp/cache/a" 2>/dev/null || [ ! -e "$tmp/cache/a" ]; then
    echo "not ok 4 - root deleted another user's file without CAP_DAC_OVERRIDE"
elif unshare --user --map-root-user -- rm -f "$tmp/cache/a" 2>/dev/null && [ ! -e "$tmp/cache/a" ]; then
    echo "not ok 4 - deleted in a user namespace: PrivateUsers=no would not be needed"
elif ! setpriv --inh-caps=-all --bounding-set=-all,+dac_override,+fowner -- rm -f "$tmp/cache/a" ||
     [ -e "$tmp/cache/a" ]; then
    echo "not ok 4 - CAP_DAC_OVERRIDE did not let root delete it"
elif ! grep -q '^PrivateUsers=no' "$files_dropin" || ! grep -q '^CapabilityBoundingSet=.*CAP_DAC_OVERRIDE' "$files_dropin"; then
    echo "not ok 4 - $files_dropin lacks PrivateUsers=no or CAP_DAC_OVERRIDE"
else
    echo "ok 4 - another user's files: CAP_DAC_OVERRIDE and no private user namespace, as files.conf says"
fi
