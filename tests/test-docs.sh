#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/test-docs.py with the statistics the adapters really report: starts cacheaged on a
# private bus with one cache of each adapter that ships (the kernel's twice: the whole host and
# a group, whose statistics differ), writes {"adapter": [statistic, ...]} from
# `cacheagectl --json show` of each, and runs test-docs.py with --statistics on it (TAP).
#
# Environment (from tests/meson.build): CACHEAGED, CACHEAGECTL, CA_ADAPTER_DIR (the built
# adapters), CA_TEST_SRCDIR, CA_BUILD_ROOT.

set -u
: "${CACHEAGED:?run through meson}" "${CACHEAGECTL:?}" "${CA_ADAPTER_DIR:?}" "${CA_TEST_SRCDIR:?}"
: "${CA_BUILD_ROOT:?}"

if ! command -v dbus-daemon >/dev/null; then
        echo "Bail out! dbus-daemon is missing (scripts/deps.sh installs it)"
        exit 1
fi

dir=$(mktemp -d /tmp/cacheage-docs-XXXXXX) || exit 1
chmod 755 "$dir"
# shellcheck disable=SC2034 # read by bus-lib.sh
bus_lib_tests=$CA_TEST_SRCDIR
. "$CA_TEST_SRCDIR/bus-lib.sh"
daemon_pid=
trap bus_cleanup EXIT

bus_start "$dir/bus" || { echo "Bail out! dbus-daemon did not answer"; exit 1; }
addr="unix:path=$dir/bus"
mkdir "$dir/files"
# No server behind the memcached and redis caches: their statistics are reported all the same
# (and one cannot be refused: nothing listens on port 1).
cat > "$dir/cacheaged.conf" <<CONF
[daemon]
interval = 1h
plugin_dir = $CA_ADAPTER_DIR
idle_cpu_pressure = 0
idle_memory_pressure = 0

[cache dcache]
adapter = dcache

[cache kernel-host]
adapter = kernel

[cache kernel-group]
adapter = kernel
cgroup = /

[cache files]
adapter = files
path = $dir/files
dry_run = yes

[cache memcached]
adapter = memcached
server = 127.0.0.1:1

[cache redis]
adapter = redis
server = 127.0.0.1:1
CONF
bus_daemon_start "$addr"

for cache in dcache kernel-host kernel-group files memcached redis; do
        "$CACHEAGECTL" --address="$addr" --no-pager --json show "$cache" > "$dir/$cache.json" ||
                { echo "Bail out! cacheagectl show $cache failed"; cat "$dir/$cache.json"; exit 1; }
done
python3 - "$dir" dcache kernel-host kernel-group files memcached redis > "$dir/stats.json" <<'PY' ||
import json, sys
live = {}
for cache in sys.argv[2:]:
    d = json.load(open("%s/%s.json" % (sys.argv[1], cache)))
    live.setdefault(d["adapter"], set()).update(d["adapter_stats"])
print(json.dumps({a: sorted(s) for a, s in live.items()}))
PY
        { echo "Bail out! the caches' statistics could not be read"; exit 1; }

python3 "$CA_TEST_SRCDIR/test-docs.py" "$CA_TEST_SRCDIR/.." "$CA_BUILD_ROOT" \
        --statistics "$dir/stats.json"
