#!/bin/sh
# The systemd unit as built: "systemd-analyze verify" passes and "systemd-analyze security
# --offline=yes" rates its exposure at most 2.0 (the shipped configuration, the kernel adapter
# reporting, runs under it; no systemd as PID 1 is needed for either);
# the same for the unit with each sandbox drop-in of $CA_SANDBOX_DROPINS on top.
# ExecStart= is pointed at the built binary, which verify requires to exist, and man(1) finds the
# built man pages, which verify looks up for each Documentation= entry.
# Usage: test-unit.sh UNIT CACHEAGED MANPAGE... (the configured cacheaged.service, the built
# daemon, the built man pages).
# With CA_UNIT_USER=1 the unit is the user instance's (systemd/user/cacheaged.service): verified
# by a user manager's rules, its exposure only reported (a user manager cannot take
# capabilities or devices away, so the system unit's limit does not apply).
set -eu
UNIT=$1
CACHEAGED=$(realpath "$2")
shift 2
command -v systemd-analyze >/dev/null || { echo "1..0 # SKIP systemd-analyze missing"; exit 0; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e "s|^ExecStart=.*|ExecStart=$CACHEAGED|" -e "s|^ExecStopPost=+[^ ]*cacheaged |ExecStopPost=+$CACHEAGED |" "$UNIT" >"$tmp/cacheaged.service"
for page in "$@"; do
    mkdir -p "$tmp/man/man${page##*.}"
    ln -s "$(realpath "$page")" "$tmp/man/man${page##*.}/"
done
export MANPATH="$tmp/man"

# A configuration that is wrong stays wrong: the status the daemon exits with at start on one is
# a status the unit does not restart on (else systemd starts it again every RestartSec= for ever).
restart_check() { # the test's number
    printf '[daemon]\ninterval = soon\n' >"$tmp/bad.conf"
    status=0
    "$CACHEAGED" --config "$tmp/bad.conf" --bus none >/dev/null 2>&1 || status=$?
    prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$UNIT")
    if [ "$status" != 0 ] && [ "$status" != 1 ] &&
       printf ' %s ' "$prevent" | grep -q " $status "; then
        echo "ok $1 - a bad configuration exits $status, which RestartPreventExitStatus= names"
    else
        echo "not ok $1 - a bad configuration exits $status; RestartPreventExitStatus=$prevent"
    fi
}

if [ -n "${CA_UNIT_USER:-}" ]; then
    # systemd-analyze --user needs a runtime directory, even offline.
    mkdir -m 0700 "$tmp/runtime"
    export XDG_RUNTIME_DIR="$tmp/runtime"
    if out=$(systemd-analyze --user verify "$tmp/cacheaged.service" 2>&1) && [ -z "$out" ]; then
        echo "ok 1 - systemd-analyze --user verify is clean"
    else
        echo "not ok 1 - systemd-analyze --user verify: $out"
    fi
    report=$(systemd-analyze --user security --offline=yes "$tmp/cacheaged.service" 2>&1 || true)
    level=$(printf '%s\n' "$report" |
        sed -n 's/.*Overall exposure level for cacheaged.service: \([0-9.]*\).*/\1/p')
    echo "# exposure level (user unit): ${level:-unknown}"
    restart_check 2
    echo "1..2"
    exit 0
fi

if out=$(systemd-analyze verify "$tmp/cacheaged.service" 2>&1) && [ -z "$out" ]; then
    echo "ok 1 - systemd-analyze verify is clean"
else
    echo "not ok 1 - systemd-analyze verify: $out"
fi

report=$(systemd-analyze security --offline=yes "$tmp/cacheaged.service" 2>&1 || true)
level=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for cacheaged.service: \([0-9.]*\).*/\1/p')
echo "# exposure level: ${level:-unknown}"
if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }'; then
    echo "ok 2 - exposure $level <= 2.0"
else
    echo "not ok 2 - exposure ${level:-unknown} (expected <= 2.0)"
fi

# The threshold flag agrees (systemd counts it in tenths).
if systemd-analyze security --offline=yes --threshold=20 "$tmp/cacheaged.service" >/dev/null 2>&1; then
    echo "ok 3 - --threshold=20 accepted"
else
    echo "not ok 3 - --threshold=20 refused"
fi
restart_check 4

# Each sandbox drop-in (systemd/sandbox/) on top of the unit: verify stays clean, the exposure
# stays at most 2.5, what the drop-in relaxes shows as relaxed in the report (so it was read),
# and the rest of the sandbox is as it was.
n=4
for dropin in ${CA_SANDBOX_DROPINS:-}; do
    name=$(basename "$dropin" .conf)
    rm -rf "$tmp/cacheaged.service.d"
    mkdir "$tmp/cacheaged.service.d"
    cp "$dropin" "$tmp/cacheaged.service.d/"
    case $name in
    kernel-reclaim) relaxed='✗ ProtectControlGroups=|✗ ProtectKernelTunables=' ;;
    files) relaxed='✗ PrivateUsers=|✗ CapabilityBoundingSet=~CAP_(DAC_*|FOWNER' ;;
    memcached-remote|redis-remote) relaxed='allow list with non-localhost entries' ;;
    redis-socket) relaxed='✗ PrivateUsers=' ;;
    # One directory writable: no check of the report changes, ProtectSystem= stays strict.
    metrics) relaxed='✓ ProtectSystem=' ;;
    *) relaxed='unknown drop-in: say in test-unit.sh what it relaxes' ;;
    esac
    n=$((n + 1))
    out=$(systemd-analyze verify "$tmp/cacheaged.service" 2>&1)
    report=$(systemd-analyze security --offline=yes "$tmp/cacheaged.service" 2>&1 || true)
    level=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for cacheaged.service: \([0-9.]*\).*/\1/p')
    missing=
    IFS='|'
    for r in $relaxed; do
        printf '%s\n' "$report" | grep -qF -- "$r" || missing="$missing [$r]"
    done
    unset IFS
    kept=$(printf '%s\n' "$report" | grep -c -e '^✓ NoNewPrivileges=' -e '^✓ SystemCallFilter=~@mount' \
        -e '^✓ MemoryDenyWriteExecute=' -e '^✓ RestrictNamespaces=~user')
    if [ -n "$out" ]; then
        echo "not ok $n - $name: systemd-analyze verify: $out"
    elif [ -z "$level" ] || ! awk -v l="$level" 'BEGIN { exit !(l <= 2.5) }'; then
        echo "not ok $n - $name: exposure ${level:-unknown} (expected <= 2.5)"
    elif [ -n "$missing" ]; then
        echo "not ok $n - $name: the report does not show it relaxed:$missing"
    elif [ "$kept" != 4 ]; then
        echo "not ok $n - $name: the rest of the sandbox changed ($kept of 4 checks kept)"
    else
        echo "ok $n - $name drop-in: verify clean, exposure $level, relaxes only what it says"
    fi
done
echo "1..$n"
