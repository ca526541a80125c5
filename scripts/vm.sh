#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The VM lab: run a command as root in a guest booted on one of Debian's own kernels, under
# qemu, with this machine's / shared read-only (every binary, library and build tree of the
# host runs there as is), an ext4 scratch disk on /tmp (negative dentries need a disk
# filesystem: tmpfs and 9p keep none), and cgroup v2 with the memory controller enabled for
# child groups. Prints the command's output and exits with its status.
#
#   scripts/vm.sh [OPTIONS] KERNEL -- CMD [ARG...]
#
#   KERNEL  6.1   Debian 12's current kernel (linux-image-6.1.0-NN-amd64)
#           6.12  Debian 13's kernel, from bookworm-backports (linux-image-6.12.N+deb12-amd64)
#           trixie-6.12  Debian 13's own kernel, from trixie
#           any version prefix the package linux-image-amd64 has in those suites
#   -m MiB        guest memory (default 1024)
#   --smp N       guest CPUs (default 2)
#   --disk SIZE   the scratch disk (default 2G, sparse)
#   --timeout S   stop the guest after S seconds (default 900): exit 124
#   -e NAME=VALUE an environment variable of CMD (PATH, HOME and LANG are set)
#   --refresh     look the kernel up again even when one is cached
#
# The kernel packages are found by name in a private apt list (bookworm, bookworm-updates,
# bookworm-security, bookworm-backports; trixie's for trixie-6.12; the system's sources are
# left alone), downloaded with apt-get download and unpacked with dpkg-deb, once, into the
# cache: $CACHEAGE_VM_CACHE, else /var/cache/cacheage-vm for root, else
# ${XDG_CACHE_HOME:-~/.cache}/cacheage-vm (scripts/vm-kernel.sh, shared with
# scripts/syslab.sh). A busybox
# initramfs is built for each run: it loads the 9p, virtio and ext4 modules, mounts the host's
# / read-only, the disk, proc, sys, dev and cgroup2, and chroots into the host's / in the
# caller's directory. The guest's kernel console goes to the run's console log, shown when the
# guest does not report an exit status.
#
# Exit status: CMD's; 124 on timeout; 125 when the guest failed (no status came back); 77 when
# the kernel cannot be had and CACHEAGE_VM_REQUIRED is not set (a developer machine without
# network: skipped, with a message); with CACHEAGE_VM_REQUIRED=1 (CI) that is 125, an error.
set -euo pipefail

mem=1024 smp=2 disk=2G timeout_s=900 refresh=0
envs=()
usage() { sed -n '/^#   scripts/,/^#   *--refresh/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
        case $1 in
        -m) mem=$2; shift 2 ;;
        --smp) smp=$2; shift 2 ;;
        --disk) disk=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        -e) envs+=("$2"); shift 2 ;;
        --refresh) refresh=1; shift ;;
        -h|--help) usage ;;
        --) shift; break ;;
        -*) echo "vm.sh: unknown option $1" >&2; usage ;;
        *) if [ -z "${kernel:-}" ]; then kernel=$1; shift; else break; fi ;;
        esac
done
{ [ -n "${kernel:-}" ] && [ $# -gt 0 ]; } || usage

die() { echo "vm.sh: $*" >&2; exit 125; }
unavailable() { # the kernel cannot be had: an error in CI, a skip elsewhere
        if [ -n "${CACHEAGE_VM_REQUIRED:-}" ]; then
                die "$* (CACHEAGE_VM_REQUIRED is set: the lab must run)"
        fi
        echo "vm.sh: SKIP: $*" >&2
        exit 77
}
for t in qemu-system-x86_64 busybox cpio dpkg-deb apt-get xz mkfs.ext4 flock timeout; do
        command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin command -v "$t" >/dev/null 2>&1 ||
                unavailable "$t is not installed (scripts/deps.sh installs qemu-system-x86, busybox-static, cpio)"
done
busybox=$(command -v busybox)
{ ldd "$busybox" 2>&1 || true; } | grep -q "not a dynamic" || unavailable "$busybox is not static (busybox-static)"

# The cache and the kernel: scripts/vm-kernel.sh, shared with the system lab (scripts/syslab.sh).
. "$(dirname "$0")/vm-kernel.sh"
vm_cache_init
vm_kernel_refresh=$refresh
vm_kernel "$kernel"

# ---- the run: an initramfs, a disk, qemu ---------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/cacheage-vm-XXXXXX")
qemu_pid=
cleanup() {
        # timeout passes the signal on to qemu
        [ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null || true
        rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$run/i/bin" "$run/i/modules" "$run/i/proc" "$run/i/sys" "$run/i/dev" "$run/i/newroot"
cp "$busybox" "$run/i/bin/busybox"
cp "$kdir"/modules/* "$run/i/modules/"

# The command, run in the caller's directory with the given environment.
{
        echo "cd $(printf %q "$PWD") || exit 125"
        echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8"
        for e in "${envs[@]}"; do echo "export $(printf %q "$e")"; done
        printf 'exec'
        printf ' %q' "$@"
        echo
} > "$run/i/cmd"

# The guest has its own /tmp (the scratch disk), /run, /var/tmp and /root: a tree of the host
# below them (a clone in /tmp, as CI's may be) would be hidden there. The source tree, the
# caller's directory and every directory named in the command are mounted back on the guest's
# at the same paths (read-only, as the rest of the host's /), outermost first.
top=$(cd "$(dirname "$0")/.." && pwd -P)
{
        for p in "$top" "$PWD" "$@"; do
                case $p in /*) ;; *) continue ;; esac
                [ -d "$p" ] || p=$(dirname "$p")
                [ -d "$p" ] || continue
                p=$(cd "$p" && pwd -P)
                case $p/ in /tmp/*|/run/*|/var/tmp/*|/root/*) echo "$p" ;; esac
        done
} | awk '{ print length($0) "\t" $0 }' | sort -n | cut -f2- | awk '
        { for (i = 1; i <= n; i++) if (index($0 "/", kept[i] "/") == 1) next; kept[++n] = $0; print }
' > "$run/i/keep"

cat > "$run/i/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fail() { echo "vm init: $*" > /dev/ttyS0; echo 125 > /dev/ttyS2; echo o > /proc/sysrq-trigger; sleep 60; }
for m in $(cat /modules/order); do
        insmod /modules/$m.ko || fail "insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose host /newroot ||
        fail "cannot mount the host's / over 9p"
k=0
while read -r p; do
        k=$((k + 1))
        mkdir -p /keep/$k && mount --bind "/newroot$p" /keep/$k || fail "cannot keep $p"
done < /keep.list
n=0
while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
mount -t ext4 /dev/vda /newroot/tmp || fail "cannot mount the scratch disk"
chmod 1777 /newroot/tmp
for d in run var/tmp root; do
        mount -t tmpfs tmpfs /newroot/$d || fail "cannot mount a tmpfs on /$d"
done
k=0
while read -r p; do
        k=$((k + 1))
        mkdir -p "/newroot$p" && mount --move /keep/$k "/newroot$p" || fail "cannot put $p back"
done < /keep.list
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
mkdir -p /newroot/dev/shm /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t cgroup2 none /newroot/sys/fs/cgroup || fail "cannot mount cgroup2"
echo +memory > /newroot/sys/fs/cgroup/cgroup.subtree_control || fail "no memory controller"
mount -t debugfs none /newroot/sys/kernel/debug 2>/dev/null
stty -F /newroot/dev/ttyS1 raw -echo
chroot /newroot /bin/sh /proc/1/root/cmd > /newroot/dev/ttyS1 2>&1 < /dev/null
echo $? > /newroot/dev/ttyS2
sync
echo o > /newroot/proc/sysrq-trigger
sleep 60
EOF
mv "$run/i/keep" "$run/i/keep.list"
chmod +x "$run/i/init" "$run/i/cmd"
(cd "$run/i" && find . | cpio -o -H newc --quiet | gzip -1) > "$run/initrd"

truncate -s "$disk" "$run/disk.img"
mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$run/disk.img" 2>/dev/null ||
        PATH=$PATH:/sbin:/usr/sbin mkfs.ext4 -q -F "$run/disk.img"

: > "$run/status"
# stdin from /dev/null: the output's chardev is stdio, and the guest reads nothing.
rc=0
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -nodefaults -display none -no-reboot \
        -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
        -kernel "$kdir/vmlinuz" -initrd "$run/initrd" \
        -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
        -virtfs local,path=/,mount_tag=host,security_model=passthrough,readonly=on,multidevs=remap \
        -drive "file=$run/disk.img,if=virtio,format=raw,cache=unsafe" \
        -serial "file:$run/console" -chardev stdio,id=out,signal=off -serial chardev:out \
        -serial "file:$run/status" < /dev/null &
qemu_pid=$!
wait "$qemu_pid" || rc=$?
qemu_pid=
timed_out=0
[ "$rc" = 124 ] || [ "$rc" = 137 ] && timed_out=1

status=$(tr -dc '0-9\n' < "$run/status" | head -1)
if [ "$timed_out" = 1 ]; then
        echo "vm.sh: the guest ($kernel) did not finish within $timeout_s s; its console:" >&2
        tail -30 "$run/console" >&2
        exit 124
fi
if [ -z "$status" ]; then
        echo "vm.sh: the guest ($kernel) reported no exit status; its console:" >&2
        tail -40 "$run/console" >&2
        exit 125
fi
exit "$status"
