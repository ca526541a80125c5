#!/usr/bin/env bash
# Install what cacheage needs to build, test and run, from Debian 12's packages.
# Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(
    # build
    gcc g++ meson ninja-build pkgconf python3 scdoc
    libsystemd-dev libevent-dev libinih-dev
    # the replay lab's compressed session logs (bench/replay-xz.c)
    liblzma-dev xz-utils
    # tests
    libcriterion-dev dbus dbus-daemon dbus-bin systemd strace memcached util-linux man-db
    # setfacl: write ACLs that the trust checks must see (tests/test-trust.c, test-daemon.c)
    acl
    # the redis adapter's tests and bench start their own redis-server (never the system's,
    # which the package may start on 6379: nothing depends on it)
    redis-server redis-tools
    # ss shows a message queued on the daemon's bus socket (tests/test-bus-signals.sh)
    iproute2
    # polkit's daemon and tools (tests/test-polkit.sh); ssh and sshd (tests/test-remote.sh)
    polkitd openssh-client openssh-server
    # promtool checks the metrics (tests/test-metrics.sh)
    prometheus
    # fuzz targets: clang's libFuzzer is in libclang-rt-14-dev, only recommended by clang
    clang libclang-rt-14-dev
    # the VM lab (scripts/vm.sh): Debian's own kernels under qemu, a busybox initramfs, an
    # ext4 scratch disk
    qemu-system-x86 busybox-static cpio e2fsprogs xz-utils
    # the system lab (scripts/syslab.sh): Debian images and Debian 13's build chroot, without
    # fsync while they are made
    mmdebstrap eatmydata
    # the Debian packages (scripts/deb.sh)
    debhelper dpkg-dev fakeroot lintian
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "Installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
