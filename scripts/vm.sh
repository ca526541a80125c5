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
#           any version prefix the package linux-image-amd64 has in those suites
#   -m MiB        guest memory (default 1024)
#   --smp N       guest CPUs (default 2)
#   --disk SIZE   the scratch disk (default 2G, sparse)
#   --timeout S   stop the guest after S seconds (default 900): exit 124
#   -e NAME=VALUE an environment variable of CMD (PATH, HOME and LANG are set)
#   --refresh     look the kernel up again even when one is cached
#
# The kernel packages are found by name in a private apt list (bookworm, bookworm-updates,
# bookworm-security, bookworm-backports; the system's sources are left alone), downloaded with
# apt-get download and unpacked with dpkg-deb, once, into the cache: $CACHEAGE_VM_CACHE, else
# /var/cache/cacheage-vm for root, else ${XDG_CACHE_HOME:-~/.cache}/cacheage-vm. A busybox
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

if [ -n "${CACHEAGE_VM_CACHE:-}" ]; then
        cache=$CACHEAGE_VM_CACHE
elif [ "$(id -u)" -eq 0 ]; then
        cache=/var/cache/cacheage-vm
else
        cache=${XDG_CACHE_HOME:-$HOME/.cache}/cacheage-vm
fi
mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/kernels"
# One look-up at a time: two guests starting together share the apt list, its sources and the
# cache (the lock is held until the kernel is found; the runs go on side by side).
exec 9> "$cache/lock"
flock 9

# ---- the kernel: found by package name, downloaded and unpacked once --------------------
apt_opts=(-o "Dir::Etc::sourcelist=$cache/apt/sources.list" -o Dir::Etc::sourceparts=-
          -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache"
          -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
mirror=${CACHEAGE_VM_MIRROR:-http://deb.debian.org}
key=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$cache/apt/sources.list.new" <<EOF
deb [signed-by=$key] $mirror/debian bookworm main
deb [signed-by=$key] $mirror/debian bookworm-updates main
deb [signed-by=$key] $mirror/debian-security bookworm-security main
deb [signed-by=$key] $mirror/debian bookworm-backports main
EOF
mv "$cache/apt/sources.list.new" "$cache/apt/sources.list"

# A kernel's unpacked tree: vmlinuz, config, modules/NAME.ko (uncompressed), modules/order.
kdir_ready() { [ -f "$1/vmlinuz" ] && [ -f "$1/modules/order" ]; }

fetch_kernel() { # $1: version prefix; prints the unpacked tree's path
        local prefix=$1 version pkg deb tmp
        apt-get -q "${apt_opts[@]}" update >"$cache/apt/update.log" 2>&1 ||
                { cat "$cache/apt/update.log" >&2; return 1; }
        # madison lists the highest version first; the suite's kernel meta-package names it.
        version=$(apt-cache "${apt_opts[@]}" madison linux-image-amd64 |
                  awk -F' *[|] *' -v p="$prefix." 'index($2, p) == 1 { print $2; exit }')
        [ -n "$version" ] || { echo "vm.sh: no linux-image-amd64 $prefix.* in bookworm or bookworm-backports" >&2; return 1; }
        pkg=$(apt-cache "${apt_opts[@]}" depends "linux-image-amd64=$version" |
              awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
        [ -n "$pkg" ] || { echo "vm.sh: linux-image-amd64 $version names no kernel package" >&2; return 1; }
        kdir=$cache/kernels/${pkg}_$version
        if ! kdir_ready "$kdir"; then
                tmp=$(mktemp -d "$cache/kernels/.unpack-XXXXXX")
                (cd "$tmp" && apt-get -q "${apt_opts[@]}" download "$pkg=$version" >&2) ||
                        { rm -rf "$tmp"; return 1; }
                deb=$(ls "$tmp"/*.deb)
                echo "vm.sh: unpacking $(basename "$deb")" >&2
                mkdir "$tmp/x" "$tmp/k" "$tmp/k/modules"
                dpkg-deb -x "$deb" "$tmp/x"
                cp "$tmp"/x/boot/vmlinuz-* "$tmp/k/vmlinuz"
                cp "$tmp"/x/boot/config-* "$tmp/k/config"
                pick_modules "$tmp"/x/lib/modules/* "$tmp/k/modules" || { rm -rf "$tmp"; return 1; }
                rm -rf "$kdir"
                mv "$tmp/k" "$kdir"
                rm -rf "$tmp"
        fi
        echo "$kdir"
}

# The modules the guest needs, with what they depend on (a .ko's "depends=", first), into $2:
# NAME.ko uncompressed and "order", the insmod order. Built-in ones are left out.
pick_modules() {
        local tree=$1 out=$2 m
        declare -A path=() seen=()
        while read -r f; do
                m=${f##*/}; m=${m%%.ko*}; m=${m//-/_}
                path[$m]=$f
        done < <(find "$tree/kernel" -name '*.ko*')
        add() {
                local m=${1//-/_} d deps
                [ -z "${seen[$m]:-}" ] || return 0
                seen[$m]=1
                if [ -z "${path[$m]:-}" ]; then
                        grep -q "/${1}.ko\$\|/${m}.ko\$" "$tree/modules.builtin" && return 0
                        echo "vm.sh: module $m is neither a module nor built in" >&2
                        return 1
                fi
                case ${path[$m]} in
                *.xz) xz -dc "${path[$m]}" > "$out/$m.ko" ;;
                *) cp "${path[$m]}" "$out/$m.ko" ;;
                esac
                deps=$(tr '\0' '\n' < "$out/$m.ko" | sed -n 's/^depends=//p' | tr ',' ' ')
                for d in $deps; do add "$d" || return 1; done
                echo "$m" >> "$out/order"
        }
        : > "$out/order"
        # virtio PCI transport, 9p over virtio, the disk, ext4 (and crc32c, its soft dependency)
        for m in virtio_pci 9pnet_virtio 9p virtio_blk crc32c_generic ext4; do
                add "$m" || return 1
        done
}

alias_link=$cache/$kernel
kdir=
if [ "$refresh" = 0 ] && [ -L "$alias_link" ] && kdir_ready "$(readlink -f "$alias_link")"; then
        kdir=$(readlink -f "$alias_link")
else
        if kdir=$(fetch_kernel "$kernel"); then
                ln -sfn "$kdir" "$alias_link"
        elif [ -L "$alias_link" ] && kdir_ready "$(readlink -f "$alias_link")"; then
                echo "vm.sh: cannot look $kernel up again: the cached kernel is used" >&2
                kdir=$(readlink -f "$alias_link")
        else
                unavailable "kernel $kernel cannot be fetched (no network, or no such kernel)"
        fi
fi

exec 9>&-

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
