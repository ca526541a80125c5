#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The system lab: the tree's .debs installed with apt on a whole Debian system booted by systemd,
# under qemu (TCG: no KVM needed) on one of Debian's own kernels, and a scenario run there as a
# oneshot unit ordered after multi-user.target (by default tests/system/scenario.sh: what the
# docs tell an administrator to do, one TAP test a step), or a command of the caller's. Prints
# the scenario's TAP (the command's output) and exits with its status. The VM lab's other half,
# scripts/vm.sh, runs one command on the host's own files instead.
#
#   scripts/syslab.sh [OPTIONS] SYSTEM KERNEL
#   scripts/syslab.sh [OPTIONS] SYSTEM KERNEL -- CMD [ARG...]
#   scripts/syslab.sh --prepare SYSTEM...
#
#   SYSTEM  12   Debian 12 (bookworm; systemd 252)
#           13   Debian 13 (trixie; systemd 257, valkey-server beside redis-server)
#   KERNEL  6.1  Debian 12's (12 only); 6.12: Debian 13's version, from bookworm-backports on 12,
#                trixie's own on 13
#   --prepare       only build what the runs need (the images, Debian 13's build chroot, the
#                   .debs, the kernels), for CI to start early
#   --debs DIR      install these .debs (cacheage_*.deb, libcacheage0_*.deb) instead of
#                   building them from the tree
#   --scenario FILE run this instead of tests/system/scenario.sh (in the guest, as root, with
#                   bash; its directory is shared with the guest too)
#   -- CMD [ARG...] run CMD instead of a scenario, as root, in the caller's directory: that
#                   directory and the directory of every absolute ARG are shared with the guest
#                   read-only at their own paths (a build tree's programs run there as they are,
#                   on the image's libraries; the system's own directories cannot be shared);
#                   no .debs are built or installed
#   --init minimal  boot without systemd: PID 1 is a shell that mounts /proc, /sys and /dev/shm
#                   and runs the scenario or CMD, and nothing else runs (what a measurement of
#                   the kernel's global counters needs); --init systemd (the default): systemd
#                   to multi-user.target, the scenario as a unit after it
#   -m MiB          guest memory (default 1536)
#   --smp N         guest CPUs (default 2)
#   --timeout S     stop the guest after S seconds (default 900): exit 124
#   -e NAME=VALUE   an environment variable of the scenario
#   --refresh       build the image again and look the kernel up again
#
# The image: mmdebstrap (minbase, no recommends, no man pages or locales) from Debian's own
# packages: systemd, udev, dbus, polkitd, redis-server, memcached, prometheus-node-exporter (on 13
# valkey-server too) and the .debs' run-time dependencies; on 12 also what bench-fidelity's
# workloads run (strace, python3, git, perl, gcc); no kernel and no initramfs-tools. It
# is made into an ext4 image once and cached as $cache/images/debianN-HASH.img, HASH the
# recipe's (packages, options, the customize hook below): a change of the recipe builds a new
# one, and the old one is removed. The guest boots it as a snapshot=on drive (its writes are
# dropped at exit: one image serves every run) through a busybox initramfs of our own, which
# loads the kernel's virtio, 9p and ext4 modules, mounts /dev/vda and switch_roots to systemd.
#
# The .debs, unless --debs: built from the tree as git sees it (committed or not) into
# build-syslab/debianN/, and built again only when the tree changed. Debian 12's with
# dpkg-buildpackage on this machine (as scripts/deb.sh builds them; the build dependencies are
# scripts/deps.sh's); Debian 13's natively, in a trixie chroot made by mmdebstrap (buildd and
# the Build-Depends of debian/control), cached as $cache/build/trixie-HASH/ and entered with
# chroot in a mount namespace of its own.
#
# The run: a 9p share (read-only) holds the .debs (as build-deb/, where the README's install
# command finds them), the scenario and its environment; the image's unit syslab.service mounts
# it on /run/syslab, runs the scenario with its output on the second serial port (this
# script's standard output) and its exit status on the third, then powers off. The kernel's and
# systemd's console goes to a log shown when no status came back.
#
# Exit status: the scenario's; 124 on timeout; 125 when the guest failed (no status came back:
# it is booted once more first, as a loaded host can hang a guest's boot), or an image, a
# chroot or a .deb could not be built; 77 when the lab cannot run here (no mmdebstrap, qemu,
# network for the first image) and CACHEAGE_VM_REQUIRED is not set; with it (CI) that is 125.
set -euo pipefail

mem=1536 smp=2 timeout_s=900 refresh=0 prepare=0 debs= scenario= init=systemd
envs=() cmd=()
usage() { sed -n '/^#   scripts\/syslab.sh \[/,/^#   --refresh/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
        case $1 in
        --prepare) prepare=1; shift ;;
        --debs) debs=$(cd "$2" && pwd -P); shift 2 ;;
        --scenario) scenario=$(realpath "$2"); shift 2 ;;
        -m) mem=$2; shift 2 ;;
        --smp) smp=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        -e) envs+=("$2"); shift 2 ;;
        --init) init=$2; shift 2 ;;
        --refresh) refresh=1; shift ;;
        -h|--help) usage ;;
        -*) echo "syslab.sh: unknown option $1" >&2; usage ;;
        *) break ;;
        esac
done
case $init in systemd|minimal) ;; *) echo "syslab.sh: --init systemd or minimal" >&2; usage ;; esac
# SYSTEM KERNEL -- CMD...: the command instead of a scenario
if [ "$prepare" = 0 ] && [ $# -gt 3 ] && [ "$3" = -- ]; then
        cmd=("${@:4}")
        set -- "$1" "$2"
fi
if [ "$prepare" = 1 ]; then
        [ $# -gt 0 ] || usage
        systems=("$@")
else
        [ $# -eq 2 ] || usage
        systems=("$1")
        kernel_arg=$2
fi

top=$(cd "$(dirname "$0")/.." && pwd -P)
scenario=${scenario:-$top/tests/system/scenario.sh}

die() { echo "syslab.sh: $*" >&2; exit 125; }
unavailable() { # the lab cannot run here: an error in CI, a skip elsewhere
        if [ -n "${CACHEAGE_VM_REQUIRED:-}" ]; then
                die "$* (CACHEAGE_VM_REQUIRED is set: the lab must run)"
        fi
        echo "syslab.sh: SKIP: $*" >&2
        exit 77
}
say() { echo "syslab.sh: $*" >&2; }
for t in qemu-system-x86_64 busybox cpio dpkg-deb apt-get xz mkfs.ext4 flock timeout mmdebstrap \
         unshare sha256sum; do
        command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin command -v "$t" >/dev/null 2>&1 ||
                unavailable "$t is not installed (scripts/deps.sh installs mmdebstrap, qemu-system-x86, busybox-static, cpio)"
done
busybox=$(command -v busybox)
{ ldd "$busybox" 2>&1 || true; } | grep -q "not a dynamic" || unavailable "$busybox is not static (busybox-static)"
[ "$(id -u)" = 0 ] || unavailable "the system lab needs root (mmdebstrap's root mode, chroot)"

for s in "${systems[@]}"; do
        case $s in 12|13) ;; *) echo "syslab.sh: no system $s (12 or 13)" >&2; usage ;; esac
done

. "$top/scripts/vm-kernel.sh"
vm_cache_init
vm_kernel_refresh=$refresh
mkdir -p "$cache/images" "$cache/build"

# Everything this run makes goes here, removed at exit whatever happens.
tmps=()
qemu_pid= tail_pid=
pids=()
cleanup() {
        # --prepare's workers
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        # timeout passes the signal on to qemu
        [ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null || true
        [ -z "$tail_pid" ] || kill "$tail_pid" 2>/dev/null || true
        for d in "${tmps[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

suite_of() { case $1 in 12) echo bookworm ;; 13) echo trixie ;; esac; }

mirror=${CACHEAGE_VM_MIRROR:-http://deb.debian.org}
sources() { # the suite's apt sources, one mmdebstrap argument each
        printf '%s\n' "deb $mirror/debian $1 main" "deb $mirror/debian $1-updates main" \
                "deb $mirror/debian-security $1-security main"
}

# What mmdebstrap is told besides the packages: no recommends, no man pages, locales or docs
# while it builds (the customize hook lets dpkg install docs again, for the .debs' examples),
# eatmydata (no fsync: the image is made whole or not at all).
mmdebstrap_opts=(--mode=root --aptopt='APT::Install-Recommends "false"'
                 --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
                 --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright')
eatmydata_hooks=/usr/share/mmdebstrap/hooks/eatmydata
if [ -d "$eatmydata_hooks" ] && command -v eatmydata >/dev/null; then
        mmdebstrap_opts+=(--hook-dir="$eatmydata_hooks")
fi

# ---- the image -----------------------------------------------------------------------------

# What the scenario needs, and nothing else: systemd with udev, logind (the user instance needs a
# user manager), D-Bus with the user bus, polkit, the servers whose adapters it runs, procps;
# and the run-time dependencies of the .debs, so that apt installs them offline.
image_packages() {
        local common="systemd udev dbus dbus-user-session libpam-systemd polkitd procps
                      redis-server memcached prometheus-node-exporter libinih1"
        # bench-fidelity's workloads, and the strace that captures them (12 only: it is
        # measured on Debian 12's system, on its 6.1 and on 6.12)
        local fidelity="strace python3 git perl gcc"
        case $1 in
        12) echo $common libevent-2.1-7 $fidelity ;;
        13) echo $common valkey-server libevent-2.1-7t64 ;;
        esac
}

# The customize hook, run with the root's path as $1: the unit that runs the scenario, and a
# quiet system (no timers or gettys that would disturb a measurement).
image_hook() {
        cat <<'EOF'
set -eu
root=$1
rm -f "$root/etc/dpkg/dpkg.cfg.d/99mmdebstrap"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tsyslab\n' > "$root/etc/hosts"
echo syslab > "$root/etc/hostname"
: > "$root/etc/fstab"
for u in apt-daily.timer apt-daily-upgrade.timer fstrim.timer logrotate.timer man-db.timer \
         e2scrub_all.timer e2scrub_reap.service dpkg-db-backup.timer getty@tty1.service \
         serial-getty@ttyS0.service serial-getty@ttyS1.service serial-getty@ttyS2.service \
         systemd-timesyncd.service; do
        ln -sf /dev/null "$root/etc/systemd/system/$u"
done
# Debian 13 has both servers on 6379: Valkey moves to 6380 (its own socket is off, as Redis').
if [ -f "$root/etc/valkey/valkey.conf" ]; then
        sed -i 's/^port 6379$/port 6380/' "$root/etc/valkey/valkey.conf"
        grep -q '^port 6380$' "$root/etc/valkey/valkey.conf"
fi
cat > "$root/usr/local/sbin/syslab-run" <<'RUN'
#!/bin/sh
# The system lab's side in the guest: the host's share on /run/syslab, its scenario run with
# the output on ttyS1 and the exit status on ttyS2, then power off.
status=125
mkdir -p /run/syslab
if mount -t 9p -o trans=virtio,version=9p2000.L,ro syslab /run/syslab; then
        stty -F /dev/ttyS1 raw -echo 2>/dev/null
        bash /run/syslab/run > /dev/ttyS1 2>&1 < /dev/null
        status=$?
fi
echo "$status" > /dev/ttyS2
systemctl --no-block poweroff
RUN
chmod 0755 "$root/usr/local/sbin/syslab-run"
cat > "$root/etc/systemd/system/syslab.service" <<'UNIT'
[Unit]
Description=The system lab's scenario, from the host
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/syslab-run
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/syslab.service "$root/etc/systemd/system/multi-user.target.wants/syslab.service"
EOF
}

image_key() {
        { suite_of "$1"; image_packages "$1"; printf '%s\n' "${mmdebstrap_opts[@]}"; image_hook "$1"; } |
                sha256sum | cut -c1-16
}

# Sets $image: the system's image, built when its recipe has none yet (one builder at a time:
# the others wait for it and use it).
image_get() {
        local system=$1 suite key tmp start
        suite=$(suite_of "$system")
        key=$(image_key "$system")
        image=$cache/images/debian$system-$key.img
        exec 8> "$cache/images/.lock-$system"
        flock 8
        if [ "$refresh" = 1 ] && [ -z "${refreshed[$system]:-}" ]; then
                rm -f "$image"
                refreshed[$system]=1
        fi
        if [ ! -f "$image" ]; then
                say "building the Debian $system image ($suite, recipe $key): mmdebstrap"
                start=$SECONDS
                tmp=$(mktemp -d "$cache/images/.build-XXXXXX")
                tmps+=("$tmp")
                image_hook "$system" > "$tmp/hook.sh"
                if ! mmdebstrap --variant=minbase "${mmdebstrap_opts[@]}" \
                        --include="$(image_packages "$system" | tr -s ' \n' ',' | sed 's/^,//;s/,$//')" \
                        --customize-hook="sh $tmp/hook.sh \"\$1\"" \
                        "$suite" "$tmp/root" "${suite_sources[@]}" > "$tmp/log" 2>&1; then
                        tail -30 "$tmp/log" >&2
                        exec 8>&-
                        unavailable "mmdebstrap could not build the Debian $system image (above: no network?)"
                fi
                truncate -s 4G "$tmp/image"
                mkfs.ext4 -q -F -L syslab -d "$tmp/root" "$tmp/image" ||
                        PATH=$PATH:/sbin:/usr/sbin mkfs.ext4 -q -F -L syslab -d "$tmp/root" "$tmp/image" ||
                        die "mkfs.ext4 -d failed for the Debian $system image"
                rm -f "$cache/images/debian$system-"*.img
                mv "$tmp/image" "$image"
                rm -rf "$tmp"
                say "the Debian $system image: $(( SECONDS - start )) s, $(du -m "$image" | cut -f1) MB used"
        fi
        exec 8>&-
}
declare -A refreshed=()

# ---- Debian 13's build chroot ---------------------------------------------------------------

# debian/control's Build-Depends, one a line, without versions or alternatives but the first.
build_depends() {
        sed -n '/^Build-Depends:/,/^[A-Z]/p' "$top/debian/control" | sed '1s/^Build-Depends://;/^[A-Z]/d' |
                tr ',' '\n' | sed 's/|.*//;s/(.*)//;s/\[.*\]//;s/^[[:space:]]*//;s/[[:space:]]*$//' | grep -v '^$'
}

# Sets $chroot: a trixie root with build-essential and the Build-Depends, built when missing.
chroot_get() {
        local key tmp start
        key=$({ build_depends; printf '%s\n' "${mmdebstrap_opts[@]}"; } | sha256sum | cut -c1-16)
        chroot=$cache/build/trixie-$key
        exec 8> "$cache/build/.lock"
        flock 8
        if [ "$refresh" = 1 ] && [ -z "${refreshed[chroot]:-}" ]; then
                rm -rf "$chroot"
                refreshed[chroot]=1
        fi
        if [ ! -f "$chroot/.ready" ]; then
                say "building Debian 13's build chroot (trixie, $key): mmdebstrap"
                start=$SECONDS
                tmp=$(mktemp -d "$cache/build/.build-XXXXXX")
                tmps+=("$tmp")
                if ! mmdebstrap --variant=buildd "${mmdebstrap_opts[@]}" \
                        --include="$(build_depends | paste -sd,)" \
                        trixie "$tmp/root" "${trixie_sources[@]}" > "$tmp/log" 2>&1; then
                        tail -30 "$tmp/log" >&2
                        exec 8>&-
                        unavailable "mmdebstrap could not build Debian 13's build chroot (above: no network?)"
                fi
                rm -rf "$cache/build/trixie-"*
                touch "$tmp/root/.ready"
                mv "$tmp/root" "$chroot"
                rm -rf "$tmp"
                say "Debian 13's build chroot: $(( SECONDS - start )) s"
        fi
        exec 8>&-
}

# ---- the .debs ------------------------------------------------------------------------------

# The tree as git knows it (committed or not), without build directories; -z list on stdout.
tree_files() {
        git -C "$top" ls-files -z --cached --others --exclude-standard
}

# A digest of what the .debs are built from: every file but the tests, the benchmarks and the
# scripts, which the package's build (-Dtests=false) does not read.
tree_key() {
        tree_files | tr '\0' '\n' | grep -v -e '^tests/' -e '^bench/' -e '^scripts/' -e '^\.ci/' |
                (cd "$top" && tar --null -T <(tr '\n' '\0') --mtime=@0 --owner=0 --group=0 --numeric-owner \
                        --sort=name -cf - 2>/dev/null) | sha256sum | cut -c1-16
}

# Sets $debs_dir: the system's .debs, built from the tree when it changed since the last build.
debs_get() {
        local system=$1 out=$top/build-syslab/debian$1 key tmp src version start log
        debs_dir=$out
        mkdir -p "$out"
        exec 7> "$out.lock"
        flock 7
        key=$(tree_key)
        if [ "$(cat "$out/.tree" 2>/dev/null)" = "$key" ] && ls "$out"/cacheage_*.deb >/dev/null 2>&1; then
                exec 7>&-
                return 0
        fi
        [ "$system" = 12 ] || chroot_get
        say "building the .debs for Debian $system (tree $key)"
        start=$SECONDS
        version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/cacheage-syslab-deb-XXXXXX")
        tmps+=("$tmp")
        log=$tmp/build.log
        if [ "$system" = 12 ]; then
                src=$tmp/cacheage-$version
                mkdir -p "$src"
                tree_files | tar -C "$top" --null -T - -cf - | tar -C "$src" -xf -
                if ! (cd "$src" && dpkg-buildpackage -us -uc -b) > "$log" 2>&1; then
                        tail -40 "$log" >&2
                        exec 7>&-
                        die "dpkg-buildpackage failed for Debian 12 (scripts/deps.sh installs the build dependencies)"
                fi
                rm -f "$out"/*.deb
                cp "$tmp"/*.deb "$out"/
        else
                # In the cached chroot, in a mount namespace of its own (its /proc, /dev and
                # build directory vanish with it); one build at a time (the lock above is
                # per system).
                exec 6> "$cache/build/.lock-use"
                flock 6
                rm -rf "$chroot/build"
                src=$chroot/build/cacheage-$version
                mkdir -p "$src"
                tree_files | tar -C "$top" --null -T - -cf - | tar -C "$src" -xf -
                if ! unshare --mount --propagation private --fork sh -c '
                        root=$1
                        mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" &&
                        mount -t tmpfs tmpfs "$root/tmp" &&
                        chroot "$root" sh -c "cd /build/cacheage-$2 && dpkg-buildpackage -us -uc -b"
                        ' sh "$chroot" "$version" > "$log" 2>&1; then
                        tail -40 "$log" >&2
                        exec 6>&- 7>&-
                        die "dpkg-buildpackage failed for Debian 13 in $chroot"
                fi
                rm -f "$out"/*.deb
                cp "$chroot"/build/*.deb "$out"/
                rm -rf "$chroot/build"
                exec 6>&-
        fi
        echo "$key" > "$out/.tree"
        say "the .debs for Debian $system: $(( SECONDS - start )) s"
        exec 7>&-
}

kernel_of() { # SYSTEM KERNEL: the VM lab's kernel name
        case $1:$2 in
        12:6.1|12:6.12) echo "$2" ;;
        13:6.12) echo trixie-6.12 ;;
        *) echo "syslab.sh: Debian $1 has no kernel $2 here (12: 6.1, 6.12; 13: 6.12)" >&2; return 1 ;;
        esac
}

mapfile -t bookworm_sources < <(sources bookworm)
mapfile -t trixie_sources < <(sources trixie)
prepare_system() { # image, .debs and kernels of system $1
        if [ "$1" = 12 ]; then suite_sources=("${bookworm_sources[@]}"); else suite_sources=("${trixie_sources[@]}"); fi
        image_get "$1"
        if [ -z "$debs" ] && [ ${#cmd[@]} = 0 ]; then debs_get "$1"; fi
        if [ "$prepare" = 1 ]; then
                if [ "$1" = 12 ]; then vm_kernel 6.1; vm_kernel 6.12; else vm_kernel trixie-6.12; fi
        fi
}

if [ "$prepare" = 1 ]; then
        # Each system's chain in a process of its own, side by side: mmdebstrap waits on the
        # mirror and on dpkg about as much as it computes (measured: 6 min of CPU in 11 min 25 s
        # for both systems one after the other, at a host load of 5-7).
        pids=()
        for s in "${systems[@]}"; do
                (pids=() tmps=(); trap cleanup EXIT; trap 'exit 130' INT TERM; prepare_system "$s") &
                pids+=("$!")
        done
        worst=0
        for p in "${pids[@]}"; do
                rc=0
                wait "$p" || rc=$?
                # an error (125) outweighs "cannot run here" (77)
                if [ "$rc" != 0 ] && [ "$worst" != 125 ]; then worst=$rc; fi
        done
        exit "$worst"
fi
prepare_system "${systems[0]}"

# ---- the run --------------------------------------------------------------------------------
system=${systems[0]}
kname=$(kernel_of "$system" "$kernel_arg") || usage
vm_kernel "$kname"

# A command's shares: the caller's directory and the directory of each absolute argument,
# canonical, outermost first, none inside another; never a directory of the system itself
# (the image's own would be hidden).
shared_dirs() {
        local p
        for p in "$PWD" "${cmd[@]}"; do
                case $p in /*) ;; *) continue ;; esac
                [ -d "$p" ] || p=$(dirname "$p")
                [ -d "$p" ] || continue
                p=$(cd "$p" && pwd -P)
                case $p in
                /|/tmp|/var|/var/tmp|/home|/root|/usr|/usr/*|/etc|/etc/*|/lib*|/bin|/bin/*|/sbin|/sbin/*|\
                /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*|/boot|/boot/*)
                        echo "syslab.sh: cannot share $p with the guest: the image's own would be hidden" >&2
                        return 1 ;;
                esac
                echo "$p"
        done | awk '{ print length($0) "\t" $0 }' | sort -n | cut -f2- | awk '
                { for (i = 1; i <= n; i++) if (index($0 "/", kept[i] "/") == 1) next; kept[++n] = $0; print }'
}

run=$(mktemp -d "${TMPDIR:-/tmp}/cacheage-syslab-XXXXXX")
tmps+=("$run")
mkdir -p "$run/share" "$run/i/bin" "$run/i/modules" "$run/i/proc" "$run/i/sys" "$run/i/dev" \
        "$run/i/newroot"
virtfs=()
if [ ${#cmd[@]} -gt 0 ]; then
        dirs=$(shared_dirs) || exit 125
        mapfile -t dirs <<< "$dirs"
fi
{
        echo "export SYSLAB_SYSTEM=$system SYSLAB_KERNEL=$kernel_arg LANG=C.UTF-8"
        echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root"
        for e in "${envs[@]}"; do echo "export $(printf %q "$e")"; done
        if [ ${#cmd[@]} = 0 ]; then
                echo "cd /run/syslab || exit 125"
                printf 'exec bash %q\n' "/run/syslab/scenario/$(basename "$scenario")"
        else
                for i in "${!dirs[@]}"; do
                        virtfs+=(-virtfs "local,path=${dirs[$i]},mount_tag=share$i,security_model=none,readonly=on")
                        printf 'mkdir -p %q && mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose share%d %q || exit 125\n' \
                                "${dirs[$i]}" "$i" "${dirs[$i]}"
                done
                printf 'cd %q || exit 125\n' "$PWD"
                printf 'exec'
                printf ' %q' "${cmd[@]}"
                echo
        fi
} > "$run/share/run"
if [ ${#cmd[@]} = 0 ]; then
        debs=${debs:-$debs_dir}
        ls "$debs"/cacheage_*.deb "$debs"/libcacheage0_*.deb >/dev/null 2>&1 || die "no cacheage_*.deb and libcacheage0_*.deb in $debs"
        [ -f "$scenario" ] || die "no scenario $scenario"
        mkdir -p "$run/share/build-deb" "$run/share/scenario"
        cp "$debs"/*.deb "$run/share/build-deb/"
        cp -r "$(dirname "$scenario")"/. "$run/share/scenario/"
fi
# --init minimal: PID 1 on the image's root in place of systemd (the initramfs has mounted the
# share on /run/syslab). Orphans would stay zombies: nothing run here makes any.
cat > "$run/share/init" <<'EOF'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t devpts devpts /dev/pts
mount -t cgroup2 cgroup2 /sys/fs/cgroup
hostname syslab
stty -F /dev/ttyS1 raw -echo 2>/dev/null
bash /run/syslab/run > /dev/ttyS1 2>&1 < /dev/null
echo $? > /dev/ttyS2
sync
echo o > /proc/sysrq-trigger
sleep 60
EOF
echo "$init" > "$run/i/boot-init"

cp "$busybox" "$run/i/bin/busybox"
cp "$kdir"/modules/* "$run/i/modules/"
cat > "$run/i/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fail() { echo "syslab init: $*" > /dev/ttyS0; echo 125 > /dev/ttyS2; echo o > /proc/sysrq-trigger; sleep 60; }
for m in $(cat /modules/order); do
        insmod /modules/$m.ko || fail "insmod $m failed"
done
n=0
while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
mount -t ext4 -o rw /dev/vda /newroot || fail "cannot mount the image"
umount /proc /sys
mount --move /dev /newroot/dev
if [ "$(cat /boot-init)" = minimal ]; then
        mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /newroot/run &&
                mkdir /newroot/run/syslab &&
                mount -t 9p -o trans=virtio,version=9p2000.L,ro syslab /newroot/run/syslab ||
                fail "cannot mount the share"
        exec switch_root /newroot /bin/sh /run/syslab/init
fi
exec switch_root /newroot /lib/systemd/systemd
EOF
chmod +x "$run/i/init"
(cd "$run/i" && find . | cpio -o -H newc --quiet | gzip -1) > "$run/initrd"

boot() {
        : > "$run/status"
        : > "$run/console"
        : > "$run/out" # before tail follows it
        # stdin from /dev/null: the output's chardev is stdio, and the guest reads nothing.
        timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -nodefaults -display none -no-reboot \
                -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
                -kernel "$kdir/vmlinuz" -initrd "$run/initrd" \
                -append "console=ttyS0 quiet panic=-1 no_timer_check rdinit=/init" \
                -drive "file=$image,if=virtio,format=raw,snapshot=on,cache=unsafe" \
                -virtfs "local,path=$run/share,mount_tag=syslab,security_model=none,readonly=on" \
                "${virtfs[@]}" \
                -serial "file:$run/console" -chardev stdio,id=out,signal=off -serial chardev:out \
                -serial "file:$run/status" < /dev/null > "$run/out" &
        qemu_pid=$!
        # The scenario's output as it comes; in the background, so that a signal's trap runs
        # at once (bash runs it only after a foreground command).
        tail -n +1 -f --pid="$qemu_pid" "$run/out" &
        tail_pid=$!
        rc=0
        wait "$qemu_pid" || rc=$?
        qemu_pid=
        wait "$tail_pid" || true
}

say "Debian $system on $(basename "$kdir"), image $(basename "$image"), init $init"
start=$SECONDS
boot
status=$(tr -dc '0-9\n' < "$run/status" | head -1)
if [ -z "$status" ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && ! grep -q '^\(not \)\{0,1\}ok ' "$run/out"; then
        say "the guest gave no status and no result (a loaded host can hang a boot): booting it once more; its console:"
        tail -15 "$run/console" >&2
        boot
        status=$(tr -dc '0-9\n' < "$run/status" | head -1)
fi
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        say "the guest (Debian $system, $kernel_arg) did not finish within $timeout_s s; its console:"
        tail -30 "$run/console" >&2
        exit 124
fi
if [ -z "$status" ]; then
        say "the guest (Debian $system, $kernel_arg) reported no exit status; its console:"
        tail -40 "$run/console" >&2
        exit 125
fi
say "Debian $system on $kernel_arg: exit status $status after $(( SECONDS - start )) s"
exit "$status"
