#!/bin/sh
# The systemd unit as built: "systemd-analyze verify" passes and "systemd-analyze security
# --offline=yes" rates its exposure at most 2.5 (no systemd as PID 1 is needed for either).
# ExecStart= is pointed at the built binary, which verify requires to exist, and man(1) finds the
# built man pages, which verify looks up for each Documentation= entry.
# Usage: test-unit.sh UNIT CACHEAGED MANPAGE... (the configured cacheaged.service, the built
# daemon, the built man pages).
set -eu
UNIT=$1
CACHEAGED=$(realpath "$2")
shift 2
command -v systemd-analyze >/dev/null || { echo "1..0 # SKIP systemd-analyze missing"; exit 0; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|^ExecStart=.*|ExecStart=$CACHEAGED|" "$UNIT" >"$tmp/cacheaged.service"
for page in "$@"; do
    mkdir -p "$tmp/man/man${page##*.}"
    ln -s "$(realpath "$page")" "$tmp/man/man${page##*.}/"
done
export MANPATH="$tmp/man"

echo "1..3"
if out=$(systemd-analyze verify "$tmp/cacheaged.service" 2>&1) && [ -z "$out" ]; then
    echo "ok 1 - systemd-analyze verify is clean"
else
    echo "not ok 1 - systemd-analyze verify: $out"
fi

report=$(systemd-analyze security --offline=yes "$tmp/cacheaged.service" 2>&1 || true)
level=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for cacheaged.service: \([0-9.]*\).*/\1/p')
echo "# exposure level: ${level:-unknown}"
if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 2.5) }'; then
    echo "ok 2 - exposure $level <= 2.5"
else
    echo "not ok 2 - exposure ${level:-unknown} (expected <= 2.5)"
fi

# The threshold flag agrees (systemd counts it in tenths).
if systemd-analyze security --offline=yes --threshold=25 "$tmp/cacheaged.service" >/dev/null 2>&1; then
    echo "ok 3 - --threshold=25 accepted"
else
    echo "not ok 3 - --threshold=25 refused"
fi
