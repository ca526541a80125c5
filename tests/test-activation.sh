#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# D-Bus activation as installed: a system-type dbus-daemon with --systemd-activation reads
# systemd/org.cacheage.CacheAge1.service from its service directory; a call to
# org.cacheage.CacheAge1 (cacheagectl list) makes it ask "systemd" (tests/fake-systemd.c, which
# starts cacheaged) for the unit that file names, and that name must be the Alias= of
# cacheaged.service. When the unit cannot be started (not enabled: no alias), cacheagectl says
# so with exit status 3, and asks whether cacheaged.service is enabled only where systemd runs
# the machine. TAP.
#
# Environment (tests/meson.build): CACHEAGED, CACHEAGECTL, CA_TEST_PLUGIN_DIR, CA_TEST_SRCDIR,
# FAKE_SYSTEMD. Needs root and dbus-daemon.
set -u
: "${CACHEAGED:?}" "${CACHEAGECTL:?}" "${CA_TEST_PLUGIN_DIR:?}" "${CA_TEST_SRCDIR:?}" "${FAKE_SYSTEMD:?}"
src=$CA_TEST_SRCDIR/..
if [ "$(id -u)" != 0 ] || ! command -v dbus-daemon >/dev/null; then
        echo "1..0 # SKIP needs root and dbus-daemon"
        exit 0
fi
dir=$(mktemp -d /tmp/cacheage-activation-XXXXXX)
chmod 755 "$dir"
pids=
cleanup() {
        for p in $pids; do kill "$p" 2>/dev/null; done
        stop_daemon
        wait 2>/dev/null
        rm -rf "$dir"
}
stop_daemon() { # the cacheaged that fake-systemd started, by the pid it wrote
        [ -f "$dir/daemon.pid" ] && kill "$(cat "$dir/daemon.pid")" 2>/dev/null
        rm -f "$dir/daemon.pid"
}
trap cleanup EXIT
wait_for() { # a command that succeeds when ready (about 20 s at most)
        i=0
        until "$@" >/dev/null 2>&1; do
                i=$((i + 1))
                [ $i -gt 1000 ] && return 1
                sleep 0.02
        done
}

mkdir "$dir/services"
cp "$src/systemd/org.cacheage.CacheAge1.service" "$dir/services/"
cat > "$dir/systemd.conf" <<CONF
<busconfig>
  <servicedir>$dir/services</servicedir>
  <policy user="root"><allow own="org.freedesktop.systemd1"/></policy>
</busconfig>
CONF
sed -e "s|@SOCKET@|$dir/bus|" -e "s|@POLICY@|$src/systemd/org.cacheage.CacheAge1.conf|" \
    -e "s|</busconfig>|<include>$dir/systemd.conf</include></busconfig>|" \
    "$CA_TEST_SRCDIR/fixtures/bus/system.conf.in" > "$dir/bus.conf"
dbus-daemon --nofork --systemd-activation --config-file="$dir/bus.conf" > "$dir/bus.log" 2>&1 &
pids="$pids $!"
addr=unix:path=$dir/bus
wait_for test -S "$dir/bus" || { echo "Bail out! dbus-daemon did not start"; cat "$dir/bus.log"; exit 1; }

cat > "$dir/cacheaged.conf" <<CONF
[daemon]
plugin_dir = $CA_TEST_PLUGIN_DIR
[cache alpha]
adapter = fixed
objects = 10
CONF
alias=$(sed -n 's/^Alias=//p' "$src/systemd/cacheaged.service")
# What fake-systemd starts: cacheaged on this bus, its pid kept for the cleanup.
cat > "$dir/start" <<CONF
#!/bin/sh
echo \$\$ > "$dir/daemon.pid"
exec "$CACHEAGED" --config "$dir/cacheaged.conf" --bus "$addr" > "$dir/cacheaged.log" 2>&1
CONF
chmod 755 "$dir/start"

fake_systemd() { # the unit it knows; runs it in the background
        : > "$dir/systemd.log"
        "$FAKE_SYSTEMD" "$addr" "$dir/systemd.log" "$1" "$dir/start" 2> "$dir/systemd.err" &
        systemd_pid=$!
        pids="$pids $systemd_pid"
        wait_for grep -q '^ready' "$dir/systemd.log" ||
                { echo "Bail out! fake-systemd did not start"; cat "$dir/systemd.err"; exit 1; }
}

echo "1..5"
fake_systemd "$alias"
out=$("$CACHEAGECTL" --address="$addr" list 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$out" = alpha ] && grep -qx "request $alias" "$dir/systemd.log"; then
        echo "ok 1 - a call started cacheaged through systemd's $alias"
else
        echo "not ok 1 - list: exit $rc, '$out'; systemd was asked for: $(grep request "$dir/systemd.log")"
        sed 's/^/# /' "$dir/bus.log" "$dir/cacheaged.log" 2>/dev/null
fi
if [ -n "$alias" ] && [ "$alias" = "dbus-$(sed -n 's/^BusName=//p' "$src/systemd/cacheaged.service").service" ]; then
        echo "ok 2 - the alias is dbus-BUSNAME.service, as systemd's daemons name theirs"
else
        echo "not ok 2 - the unit's Alias= is '$alias'"
fi

# A unit that is not enabled has no alias: systemd answers NoSuchUnit.
stop_daemon
kill "$systemd_pid"
# (Asking cacheaged itself would activate it again: ask the bus whether the name has an owner.)
wait_for sh -c "busctl --address='$addr' call org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus NameHasOwner s org.cacheage.CacheAge1 | grep -qx 'b false'" ||
        echo "# cacheaged still owns its name"
fake_systemd other.service
out=$("$CACHEAGECTL" --address="$addr" list 2>&1)
rc=$?
if [ $rc = 3 ] && printf '%s' "$out" | grep -q "not running" && printf '%s' "$out" | grep -q "$alias"; then
        echo "ok 3 - when systemd cannot start it: exit 3, '$out'"
else
        echo "not ok 3 - exit $rc, '$out' (expected 3, 'not running', the unit's name)"
fi

# The hint names the unit only where systemd runs the machine (sd_booted(): /run/systemd/system
# exists). Both cases in a mount namespace of their own, whatever runs this machine.
booted() { # yes|no: cacheagectl's message with or without /run/systemd/system
        unshare -m sh -c "mount -t tmpfs tmpfs /run && { [ $1 = no ] || mkdir -p /run/systemd/system; } &&
                exec '$CACHEAGECTL' --address='$addr' list" 2>&1
}
out=$(booted yes)
if printf '%s' "$out" | grep -q "(is cacheaged.service enabled?)\$"; then
        echo "ok 4 - where systemd is PID 1, the message asks whether cacheaged.service is enabled"
else
        echo "not ok 4 - booted with systemd: '$out'"
fi
out=$(booted no)
if printf '%s' "$out" | grep -q "not running" && ! printf '%s' "$out" | grep -q "enabled?"; then
        echo "ok 5 - without systemd, no word of a unit: '$out'"
else
        echo "not ok 5 - not booted with systemd: '$out'"
fi
