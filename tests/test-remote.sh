#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cacheagectl -H [USER@]HOST[:PORT][/MACHINE] (TAP): the system bus of another machine (or of a
# container on it) over ssh, as systemctl -H reaches it (sd-bus runs "ssh -xT [-p PORT] --
# [USER@]HOST systemd-stdio-bridge [--machine=MACHINE]").
#
#   - What ssh is asked: a stand-in "ssh" first on PATH records its arguments and bridges to the
#     test's bus with systemd-stdio-bridge --bus-path (so the arguments are sd-bus's, for real).
#   - For real: an sshd of the test's own on 127.0.0.1 (a free port, keys made here), in a
#     mount namespace where /run/dbus/system_bus_socket is the test's bus, so that the plain
#     "systemd-stdio-bridge" that sshd runs reaches it as it would reach a machine's system bus.
#     The real ssh client is run through a one-line wrapper that adds "-F CONFIG" (the test's
#     key and known hosts: ssh reads ~/.ssh/config from the passwd home, which a test must not
#     touch); everything else is as an administrator would have it.
#   - What is refused before anything is run (exit 2), each bad part of -H's argument named (a
#     machine sd-bus would drop, a port ssh could only refuse), and a host that cannot be
#     reached (3).
#
# Environment (tests/meson.build): CACHEAGED, CACHEAGECTL, CA_TEST_PLUGIN_DIR, CA_TEST_SRCDIR.
# Needs root, dbus-daemon, systemd-stdio-bridge, unshare, sshd and ssh (scripts/deps.sh).

set -u
: "${CACHEAGED:?run through meson}" "${CACHEAGECTL:?}" "${CA_TEST_PLUGIN_DIR:?}" "${CA_TEST_SRCDIR:?}"

if [ "$(id -u)" != 0 ] || ! command -v dbus-daemon >/dev/null; then
        echo "1..0 # SKIP needs root and dbus-daemon"
        exit 0
fi
sshd=/usr/sbin/sshd
for p in systemd-stdio-bridge unshare ssh ssh-keygen "$sshd"; do
        command -v "$p" >/dev/null ||
                { echo "Bail out! $p is missing (scripts/deps.sh installs it)"; exit 1; }
done

dir=$(mktemp -d /tmp/cacheage-remote-XXXXXX) || exit 1
chmod 755 "$dir"
# shellcheck disable=SC2034 # read by bus-lib.sh
bus_lib_tests=$CA_TEST_SRCDIR
. "$CA_TEST_SRCDIR/bus-lib.sh"
daemon_pid=
sshd_pid=
cleanup() {
        [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
        bus_cleanup
}
trap cleanup EXIT
trap "exit 143" TERM INT # a timeout's SIGTERM: the EXIT trap cleans up

bus_start "$dir/bus" || { echo "Bail out! dbus-daemon did not answer"; exit 1; }
addr="unix:path=$dir/bus"
{ bus_daemon_conf; printf '[cache alpha]\nadapter = fixed\nobjects = 100\n'; } > "$dir/cacheaged.conf"
bus_daemon_start "$addr"

# --- The stand-in: what sd-bus asks ssh to run ---
mkdir "$dir/fake"
cat > "$dir/fake/ssh" <<EOF
#!/bin/sh
printf '%s\n' "\$@" > "$dir/argv"
exec systemd-stdio-bridge --bus-path="$addr"
EOF
chmod 755 "$dir/fake/ssh"
fake() { PATH="$dir/fake:$PATH" "$CACHEAGECTL" --no-pager "$@"; }

check "-H USER@HOST:PORT: ssh -xT -p PORT -- USER@HOST systemd-stdio-bridge; the caches listed" \
        sh -c "out=\$(PATH='$dir/fake':\$PATH '$CACHEAGECTL' -H admin@cachehost:2222 list) &&
               [ \"\$out\" = alpha ] &&
               [ \"\$(tr '\n' ' ' < '$dir/argv')\" = '-xT -p 2222 -- admin@cachehost systemd-stdio-bridge ' ]"
check "--host=HOST: ssh -xT -- HOST systemd-stdio-bridge; show of the manager" \
        sh -c "PATH='$dir/fake':\$PATH '$CACHEAGECTL' --host=cachehost show -P Caches | grep -qx alpha &&
               [ \"\$(tr '\n' ' ' < '$dir/argv')\" = '-xT -- cachehost systemd-stdio-bridge ' ]"
# A container on the host, as systemctl -H HOST/MACHINE: systemd-stdio-bridge --machine there
# (the stand-in bridges to the test's bus whatever the machine).
check "-H USER@HOST:PORT/MACHINE: ... systemd-stdio-bridge --machine=MACHINE; the caches listed" \
        sh -c "out=\$(PATH='$dir/fake':\$PATH '$CACHEAGECTL' -H admin@cachehost:2222/web1 list) &&
               [ \"\$out\" = alpha ] &&
               [ \"\$(tr '\n' ' ' < '$dir/argv')\" = '-xT -p 2222 -- admin@cachehost systemd-stdio-bridge --machine=web1 ' ]"
check "-H HOST/MACHINE (dotted names, digits too): --machine=MACHINE, and [IPV6]:PORT" \
        sh -c "PATH='$dir/fake':\$PATH '$CACHEAGECTL' -H cachehost/web-1.test list | grep -qx alpha &&
               [ \"\$(tr '\n' ' ' < '$dir/argv')\" = '-xT -- cachehost systemd-stdio-bridge --machine=web-1.test ' ] &&
               PATH='$dir/fake':\$PATH '$CACHEAGECTL' -H cachehost/10.2 list | grep -qx alpha &&
               [ \"\$(tr '\n' ' ' < '$dir/argv')\" = '-xT -- cachehost systemd-stdio-bridge --machine=10.2 ' ] &&
               PATH='$dir/fake':\$PATH '$CACHEAGECTL' -H 'admin@[::1]:2222' list | grep -qx alpha &&
               [ \"\$(tr '\n' ' ' < '$dir/argv')\" = '-xT -p 2222 -- admin@::1 systemd-stdio-bridge ' ]"

# --- Refused before anything runs (2), or a host that cannot be reached (3) ---
usage() { # description, then cacheagectl's arguments: exit 2, and ssh was not run
        what=$1
        shift
        rm -f "$dir/argv"
        fake "$@" > "$dir/out" 2>&1
        rc=$?
        if [ $rc = 2 ] && [ ! -e "$dir/argv" ]; then
                ok "$what: exit 2, $(cat "$dir/out")"
        else
                not_ok "$what: exit $rc (expected 2, and no ssh)"
                sed 's/^/# /' "$dir/out"
        fi
}
refused() { # description, what the message must name, then -H's argument: exit 2, no ssh
        what=$1 part=$2
        rm -f "$dir/argv"
        fake -H "$3" list > "$dir/out" 2>&1
        rc=$?
        if [ $rc = 2 ] && [ ! -e "$dir/argv" ] &&
           grep -qF -- "--host: '$3' is not [USER@]HOST[:PORT][/MACHINE]: $part" "$dir/out"; then
                ok "$what: exit 2, $(cat "$dir/out")"
        else
                not_ok "$what: exit $rc (expected 2, no ssh, and a message naming \"$part\")"
                sed 's/^/# /' "$dir/out"
                [ -e "$dir/argv" ] && echo "# ssh ran with: $(tr '\n' ' ' < "$dir/argv")"
        fi
}
usage "--user with -H" -H cachehost --user status
usage "-H and -A" -H cachehost --address="$addr" status
usage "an empty host" --host= status
# Each part of [USER@]HOST[:PORT][/MACHINE] that sd-bus would drop, or hand ssh as it is.
refused "a machine that is not a machine name (sd-bus drops it: the host's daemon answered)" \
        "machine 'web_1' is not a valid machine name" cachehost/web_1
refused "the same after a port" "machine 'web_1' is not a valid machine name" cachehost:22/web_1
refused "an all-digit machine (sd-bus takes it for a port and drops it)" "machine '1234' is all digits" \
        cachehost/1234
refused "machine .host" "machine '.host' is HOST itself" cachehost/.host
long=$(printf '%065d' 0 | tr 0 a)
refused "a machine of 65 bytes" "machine '$long' is longer than 64 bytes" "cachehost/$long"
refused "an empty machine" "the machine after '/' is empty" cachehost/
refused "two machines" "more than one '/'" cachehost/web1/x
refused "port 99999 (was handed to ssh)" "port '99999' is not a number from 1 to 65535" cachehost:99999
refused "port 0" "port '0' is not a number from 1 to 65535" cachehost:0
refused "a port that is no number (systemd's old HOST:MACHINE)" \
        "port 'web1' is not a number from 1 to 65535 (a container is HOST/MACHINE)" cachehost:web1
refused "an empty port" "the port after ':' is empty" cachehost:
refused "a user with no host" "the host is empty" admin@
refused "an empty host before a port" "the host is empty" :22
refused "an empty user" "the user before '@' is empty" @cachehost
refused "two users" "more than one '@'" a@b@cachehost
refused "an IPv6 address without brackets" "more than one ':'" ::1
refused "brackets around no IPv6 address" "host '[cachehost]' is not an IPv6 address" "[cachehost]"
refused "a host that looks like an option" "host '-oProxyCommand=x' begins with '-'" -oProxyCommand=x
refused "a blank in the host" "host 'cache host' contains a blank" "cache host"
usage "set --persistent writes this machine's files" -H cachehost set --persistent alpha enabled=no
usage "cat-config reads this machine's files" -H cachehost cat-config
mkdir "$dir/unreachable"
cat > "$dir/unreachable/ssh" <<'EOF'
#!/bin/sh
echo "ssh: connect to host nohost port 22: Connection refused" >&2
exit 255
EOF
chmod 755 "$dir/unreachable/ssh"
check "a host ssh cannot reach: exit 3, ssh's own message, then which bus" sh -c "
        PATH='$dir/unreachable':\$PATH '$CACHEAGECTL' -H nohost status > '$dir/out' 2>&1
        [ \$? = 3 ] && grep -q 'Connection refused' '$dir/out' &&
        grep -qx 'cacheagectl: Failed to reach the system bus of nohost (over ssh): .*' '$dir/out' ||
        { cat '$dir/out'; false; }"

# --- For real: sshd on 127.0.0.1, whose "system bus" is the test's ---
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key" ||
        { echo "Bail out! ssh-keygen failed"; exit 1; }
cp "$dir/client_key.pub" "$dir/authorized_keys"
echo "[127.0.0.1]:$port $(cat "$dir/host_key.pub")" > "$dir/known_hosts"
cat > "$dir/sshd_config" <<EOF
ListenAddress 127.0.0.1:$port
HostKey $dir/host_key
PidFile none
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
EOF
cat > "$dir/ssh_config" <<EOF
Host *
        IdentityFile $dir/client_key
        UserKnownHostsFile $dir/known_hosts
        StrictHostKeyChecking yes
        BatchMode yes
EOF
mkdir "$dir/real"
cat > "$dir/real/ssh" <<EOF
#!/bin/sh
exec $(command -v ssh) -F "$dir/ssh_config" "\$@"
EOF
chmod 755 "$dir/real/ssh"
# Its own /run: the privilege separation directory, and the test's bus where the system's is.
unshare -m sh -c "mount -t tmpfs tmpfs /run && mkdir -p /run/sshd /run/dbus &&
        touch /run/dbus/system_bus_socket && mount --bind '$dir/bus' /run/dbus/system_bus_socket &&
        exec $sshd -D -e -f '$dir/sshd_config'" > "$dir/sshd.log" 2>&1 &
sshd_pid=$!
real() { PATH="$dir/real:$PATH" "$CACHEAGECTL" --no-pager -H "root@127.0.0.1:$port" "$@"; }
bus_wait 20 sh -c "PATH='$dir/real':\$PATH ssh -p $port root@127.0.0.1 true" ||
        { echo "Bail out! sshd did not answer"; sed 's/^/# /' "$dir/sshd.log"; exit 1; }

check "over sshd: status of the remote daemon" sh -c "
        PATH='$dir/real':\$PATH '$CACHEAGECTL' --no-pager -H root@127.0.0.1:$port status |
        grep -q '^alpha  *fixed  *enabled '"
before=$("$CACHEAGECTL" --address="$addr" show alpha -P Rotations)
rotated() { [ "$("$CACHEAGECTL" --address="$addr" show alpha -P Rotations)" = $((before + 1)) ]; }
if real rotate alpha > "$dir/out" 2>&1 && bus_wait 10 rotated; then
        ok "over sshd: a write as the remote root (rotate), seen on the bus itself"
else
        not_ok "over sshd: a write as the remote root (rotate), seen on the bus itself"
        sed 's/^/# /' "$dir/out" "$dir/cacheaged.log"
fi
check "over sshd: --json show of the manager" sh -c "
        PATH='$dir/real':\$PATH '$CACHEAGECTL' --no-pager -H root@127.0.0.1:$port --json show |
        python3 -c 'import json, sys; assert json.load(sys.stdin)[\"caches\"] == [\"alpha\"]'"
check "over sshd: no such cache, exit 4 as locally" sh -c "
        PATH='$dir/real':\$PATH '$CACHEAGECTL' --no-pager -H root@127.0.0.1:$port status nope
        [ \$? = 4 ]"
check "sshd saw the public key logins" grep -q "Accepted publickey for root from 127.0.0.1" "$dir/sshd.log"

bus_daemon_stop
tap_end
