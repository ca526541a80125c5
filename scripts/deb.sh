#!/usr/bin/env bash
# Build the Debian packages from this tree (dpkg-buildpackage -us -uc -b in a copy of it), check
# them with lintian (no error allowed), and, as root on a machine without cacheage installed,
# install them (apt-get, which waits for dpkg's lock), check the installed daemon, and purge
# them again (also when a step fails). Prints TAP; the .debs are
# left in build-deb/ (or $1).
#   scripts/deb.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
out=$(realpath -m "${1:-build-deb}")

scripts/deps.sh || { echo "Bail out! scripts/deps.sh failed"; exit 1; }

# dpkg's lock may be held by another apt run on the machine: wait for it, as apt-get can.
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq "$@"; }
installed=
tmp=$(mktemp -d)
cleanup() {
    # Whatever failed, the machine is left without the packages this script installed.
    [ -n "$installed" ] && apt_get purge cacheage libcacheage-dev libcacheage0 >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
src=$tmp/cacheage-$version
mkdir -p "$src" "$out"
# The tree as git knows it (committed or not), without build directories.
git ls-files -z --cached --others --exclude-standard | tar -C "$top" --null -T - -cf - | tar -C "$src" -xf -

n=0 failed=0
check() { # what, then a command: one TAP line
    local what=$1
    shift
    n=$((n + 1))
    if "$@" >"$tmp/check.log" 2>&1; then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what"
        sed 's/^/# /' "$tmp/check.log" | tail -40
        failed=$((failed + 1))
        return 1
    fi
}

echo "1..7"
check "dpkg-buildpackage -us -uc -b" sh -c "cd '$src' && dpkg-buildpackage -us -uc -b"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out"/ 2>/dev/null
changes=$(ls "$out"/cacheage_*.changes 2>/dev/null)
check "lintian finds no error" lintian --fail-on error --display-info --no-tag-display-limit "$changes"
# The packages' contents, as a user and as the tests rely on them.
check "the packages hold the daemon, the unit, the D-Bus and polkit files, the man pages, the guides, the library" \
    sh -c "for p in '$out'/cacheage_*.deb '$out'/libcacheage0_*.deb '$out'/libcacheage-dev_*.deb; do dpkg-deb -c \"\$p\"; done >'$tmp/contents' &&
        for f in ./usr/sbin/cacheaged ./usr/bin/cacheagectl ./lib/systemd/system/cacheaged.service \
                 ./usr/share/dbus-1/system-services/org.cacheage.CacheAge1.service \
                 ./usr/share/dbus-1/system.d/org.cacheage.CacheAge1.conf ./etc/cacheage/cacheaged.conf \
                 ./usr/share/polkit-1/actions/org.cacheage.CacheAge1.policy \
                 ./usr/share/doc/cacheage/examples/50-cacheage.rules \
                 ./usr/share/doc/cacheage/README.md ./usr/share/doc/cacheage/doc/daemon.md \
                 ./usr/share/doc/cacheage/doc/adapters/files.md \
                 ./usr/share/man/man8/cacheaged.8.gz ./usr/share/man/man5/cacheaged.conf.5.gz \
                 ./usr/share/man/man1/cacheagectl.1.gz ./usr/share/man/man3/libcacheage.3.gz \
                 ./usr/include/cacheage/age.h ./usr/lib/x86_64-linux-gnu/pkgconfig/libcacheage.pc \
                 ./usr/share/doc/libcacheage-dev/examples/plugin-example.c \
                 ./usr/lib/x86_64-linux-gnu/cacheage/plugins/dcache.so; do
            grep -q \" \$f\\\$\" '$tmp/contents' || grep -q \" \$f -> \" '$tmp/contents' || { echo \"missing: \$f\"; exit 1; }
        done"

# The user unit is each user's to enable (doc/daemon.md: users opt in): dh_installsystemduser
# --no-enable, whose postinst enables it only for a user who had enabled it before (the
# "debian-installed" guard); the default one enables it for every user at the first install.
check "the user unit is not enabled for every user: no unconditional enable in the postinst" \
    sh -c "dpkg-deb -e '$out'/cacheage_*.deb '$tmp/control' &&
        sed -n '/by dh_installsystemduser/,/End automatically added/p' '$tmp/control/postinst' >'$tmp/user-postinst' &&
        grep -q 'deb-systemd-helper --user debian-installed' '$tmp/user-postinst' &&
        ! grep -q 'Enables the unit on first installation' '$tmp/user-postinst'"

if [ "$(id -u)" != 0 ] || dpkg-query -W -f='${Status}' cacheage 2>/dev/null | grep -q installed; then
    for what in "install" "the installed daemon checks its configuration" "purge"; do
        n=$((n + 1))
        echo "ok $n - $what # SKIP needs root and no cacheage installed already"
    done
else
    installed=yes
    check "the three packages install (apt-get install ./*.deb: dpkg, and their dependencies)" \
        apt_get install --no-install-recommends "$out"/cacheage_*.deb "$out"/libcacheage0_*.deb \
        "$out"/libcacheage-dev_*.deb
    check "the installed daemon checks its configuration, its unit verifies, its pages are found; no user has the user unit enabled" \
        sh -c "[ ! -e /etc/systemd/user/default.target.wants/cacheaged.service ] &&
               /usr/sbin/cacheaged --check-config && cacheagectl --version &&
               systemd-analyze verify /lib/systemd/system/cacheaged.service &&
               man -w cacheaged.conf.5 && pkg-config --libs libcacheage"
    check "purging removes them, configuration included" \
        sh -c "DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq purge \
                   cacheage libcacheage-dev libcacheage0 && [ ! -e /etc/cacheage/cacheaged.conf ] &&
               [ ! -e /usr/sbin/cacheaged ]" && installed=
fi
echo "# .debs in $out"
[ "$failed" = 0 ]
