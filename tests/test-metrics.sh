#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Metrics and history against a live cacheaged on a private system-type bus (TAP):
# `cacheagectl metrics` and [daemon] metrics_file checked by `promtool check metrics` and by
# tests/metrics-format.py (the text format's rules, and values against `cacheagectl show`);
# the file written atomically (mode 0644, no temporary file left, and one a killed daemon
# left removed at start); a failing metrics_file
# logged once; one through another user's symlink refused, one in root's directory below
# another user's written; GetHistory through `cacheagectl history`: the length bound, counters per
# rotation, --since, the table, --json, the chart on a terminal, --svg; the history kept over
# a reload, shortened by one, and started afresh for a recreated cache; nobody may read both.
#
# Environment (from tests/meson.build): CACHEAGED, CACHEAGECTL, CA_TEST_PLUGIN_DIR,
# CA_TEST_SRCDIR. Skipped without root, dbus-daemon, setpriv, script or promtool.

set -u
: "${CACHEAGED:?run through meson}" "${CACHEAGECTL:?}" "${CA_TEST_PLUGIN_DIR:?}" "${CA_TEST_SRCDIR:?}"

if [ "$(id -u)" != 0 ] || ! command -v dbus-daemon >/dev/null || ! command -v setpriv >/dev/null ||
   ! command -v script >/dev/null || ! command -v promtool >/dev/null; then
        echo "1..0 # SKIP needs root, dbus-daemon, setpriv, script and promtool (prometheus)"
        exit 0
fi

dir=$(mktemp -d /tmp/cacheage-metrics-XXXXXX) || exit 1
chmod 755 "$dir"
# shellcheck disable=SC2034 # read by bus-lib.sh
bus_lib_tests=$CA_TEST_SRCDIR
. "$CA_TEST_SRCDIR/bus-lib.sh"
daemon_pid=
trap bus_cleanup EXIT

wait_for() { # what, then a command that succeeds when ready (30 s at most)
        what=$1
        shift
        bus_wait 30 "$@" && return 0
        echo "Bail out! timed out waiting for $what"
        sed 's/^/# /' "$dir/cacheaged.log"
        exit 1
}

bus_start "$dir/bus" || { echo "Bail out! dbus-daemon did not answer"; exit 1; }
addr="unix:path=$dir/bus"
mkdir "$dir/prom"
# What a cacheaged killed while writing left (removed at the first write: it was left for ever,
# found by the system lab after kill -9), beside what merely looks like it (kept, and moved
# out before the checks below count the directory's files).
: > "$dir/prom/.cacheage.prom.AbCdEf"
: > "$dir/prom/.cacheage.prom.keep12"
: > "$dir/prom/.other.prom.ABCDEF"

write_conf() { # $1: extra [daemon] lines, $2: extra [cache alpha] lines
        cat > "$dir/cacheaged.conf" <<CONF
[daemon]
interval = 1h
plugin_dir = $CA_TEST_PLUGIN_DIR
idle_cpu_pressure = 0
idle_memory_pressure = 0
${1:-}

[cache alpha]
adapter = fixed
objects = 1000
reused = 100
${2:-}

[cache beta]
adapter = fixed
objects = 50
enabled = no
CONF
}
write_conf "metrics_file = $dir/prom/cacheage.prom
history_rotations = 5"

# The daemon with UMask=0077, as the unit runs it: the file must still be readable by all.
(umask 077 && exec "$CACHEAGED" --config "$dir/cacheaged.conf" --bus "$addr") > "$dir/cacheaged.log" 2>&1 &
daemon_pid=$!
ctl() { "$CACHEAGECTL" --address="$addr" --no-pager "$@"; }
wait_for "cacheaged" ctl list
# The time of the history's newest row: a rotation is recorded once its slices are done.
last_row() { ctl --json history alpha | grep -o '"time_usec":[0-9]*' | tail -1; }
rotate_alpha() { # $1: how many times
        for _ in $(seq "$1"); do
                before=$(last_row)
                ctl rotate alpha > /dev/null
                wait_for "a new row in the history" sh -c "[ \"\$('$CACHEAGECTL' --address='$addr' --json history alpha | grep -o '\"time_usec\":[0-9]*' | tail -1)\" != '$before' ]"
        done
}

check "metrics_file written at start" test -s "$dir/prom/cacheage.prom"
check "metrics_file: a temporary file a killed cacheaged left is removed, nothing else" sh -c "
        [ ! -e '$dir/prom/.cacheage.prom.AbCdEf' ] && [ -e '$dir/prom/.cacheage.prom.keep12' ] &&
        [ -e '$dir/prom/.other.prom.ABCDEF' ]"
mkdir "$dir/kept"
mv "$dir/prom/.cacheage.prom.keep12" "$dir/prom/.other.prom.ABCDEF" "$dir/kept/"
rotate_alpha 7

# ---- metrics ----
ctl metrics > "$dir/metrics.txt"
check "cacheagectl metrics: promtool check metrics is clean" \
        sh -c "promtool check metrics < '$dir/metrics.txt'"
ctl show alpha > "$dir/show-alpha"
check "cacheagectl metrics: the format's rules, every statistic, values as cacheagectl show" \
        python3 "$CA_TEST_SRCDIR/metrics-format.py" "$dir/metrics.txt" "$dir/show-alpha" alpha fixed
check "metrics_file: promtool check metrics is clean" \
        sh -c "promtool check metrics < '$dir/prom/cacheage.prom'"
check "metrics_file: the same text as cacheagectl metrics after the last rotation" \
        cmp "$dir/metrics.txt" "$dir/prom/cacheage.prom"
check "metrics_file: mode 0644 under UMask=0077, no temporary file left beside it" \
        sh -c "[ \"\$(stat -c %a '$dir/prom/cacheage.prom')\" = 644 ] && [ \"\$(ls -A '$dir/prom')\" = cacheage.prom ]"
check "metrics and history are open to nobody" \
        setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c \
        "'$CACHEAGECTL' --address='$addr' metrics >/dev/null && '$CACHEAGECTL' --address='$addr' history alpha >/dev/null"

# ---- history ----
ctl --json history alpha > "$dir/h1.json"
check "history: the last 5 of 7 rotations, counters per rotation, objects as now" \
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
cols = [c["name"] for c in d["columns"]]
rows = d["rotations"]
assert len(rows) == 5, len(rows)
assert cols[:2] == ["objects", "single_use_objects"], cols
assert {"reclaimed", "busy", "last_rotation_duration_usec", "created", "freed"} <= set(cols), cols
kinds = {c["name"]: c["kind"] for c in d["columns"]}
assert kinds["reclaimed"] == "counter" and kinds["objects"] == "gauge" and kinds["created"] == "gauge"
assert all(r["rotations"] == 1 for r in rows), [r["rotations"] for r in rows]
assert [r["time_usec"] for r in rows] == sorted(r["time_usec"] for r in rows)
assert rows[-1]["objects"] == int(sys.argv[2]), (rows[-1]["objects"], sys.argv[2])
# fixed: 1000 objects, 100 reused; everything else went at the 2nd rotation: none after
assert all(r["reclaimed"] == 0 for r in rows), [r["reclaimed"] for r in rows]
assert all(r["created"] == 1000 for r in rows)
' "$dir/h1.json" "$(ctl show alpha -p Objects --value)"
ctl history alpha > "$dir/table"
check "history: a table, a title line and 5 rows" sh -c "
        head -1 '$dir/table' | grep -q '^TIME  *OBJECTS  *SINGLE-USE-OBJECTS .* RECLAIMED .* CREATED ' &&
        [ \$(wc -l < '$dir/table') = 6 ] && ! grep -q LAST-ROTATION-USEC '$dir/table'"
check "history --since=-1h: all 5; a time to come: none" sh -c "
        [ \$('$CACHEAGECTL' --address='$addr' --no-pager --no-legend history alpha --since=-1h | wc -l) = 5 ] &&
        '$CACHEAGECTL' --address='$addr' history alpha --since=@4102444800 | grep -qx 'No rotation of alpha in its history since then.'"
check "history: a bad --since (exit 2), no such cache (exit 4, as systemctl status)" sh -c "
        '$CACHEAGECTL' --address='$addr' history alpha --since=yesterdayish 2>&1; [ \$? = 2 ] &&
        '$CACHEAGECTL' --address='$addr' history nope 2>&1 | grep -qx 'cacheagectl: No cache named nope' &&
        { '$CACHEAGECTL' --address='$addr' history nope >/dev/null 2>&1; [ \$? = 4 ]; }"

# Reset, then a rotation: the counters of the row count from the reset.
ctl reset-statistics alpha > /dev/null
rotate_alpha 1
check "history after reset-statistics: the new row's counters start from zero" python3 -c '
import json, subprocess, sys
d = json.loads(subprocess.check_output(sys.argv[1:] + ["--json", "history", "alpha"]))
assert d["rotations"][-1]["rotations"] == 1, d["rotations"][-1]
' "$CACHEAGECTL" --address="$addr"

# On a terminal: a chart of objects and reclaimed above the table.
script -qec "env COLUMNS=70 TERM=xterm '$CACHEAGECTL' --address='$addr' --no-pager history alpha" /dev/null \
        < /dev/null > "$dir/tty" 2>&1
check "history on a terminal: a chart of both series, no wider than the terminal" sh -c "
        grep -q '^objects after each rotation' '$dir/tty' && grep -q '^reclaimed per rotation' '$dir/tty' &&
        grep -q '█' '$dir/tty' && grep -q '5 rotations' '$dir/tty' &&
        [ \$(tr -d '\r' < '$dir/tty' | sed -n '/rotations\$/q;p' | awk '{ if (length(\$0) > m) m = length(\$0) } END { print m }') -le 70 ]"

ctl history alpha --svg "$dir/alpha.svg" > "$dir/svg.out"
check "history --svg: an SVG with both panels, axes and labels, one point per rotation" python3 -c '
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg"
texts = [t.text for t in root.iter(ns + "text")]
assert "objects after each rotation" in texts and "reclaimed per rotation" in texts, texts
assert any(t and t.startswith("seconds since the first rotation") for t in texts)
assert "0" in texts  # the y axes start at 0
lines = root.findall(".//" + ns + "polyline")
assert len(lines) == 1 and len(lines[0].get("points").split()) == 5
bars = [r for r in root.iter(ns + "rect") if r.get("fill") != "white"]
assert len(bars) == 5, len(bars)
assert not list(root.iter(ns + "script")) and not list(root.iter(ns + "image"))
' "$dir/alpha.svg"

# ---- reloads ----
ctl --json history alpha > "$dir/before.json"
write_conf "metrics_file = $dir/prom/cacheage.prom
history_rotations = 5
max_defer = 5" ""
ctl reload > "$dir/reload.out" 2>&1
ctl --json history alpha > "$dir/after.json"
check "reload: a kept cache keeps its history" sh -c "[ ! -s '$dir/reload.out' ] && cmp '$dir/before.json' '$dir/after.json'"
write_conf "metrics_file = $dir/prom/cacheage.prom
history_rotations = 3" ""
ctl reload
check "reload with history_rotations = 3: the newest 3 rows kept" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["rotations"]; b = json.load(open(sys.argv[2]))["rotations"]
assert b == a[-3:], (a, b)
' "$dir/after.json" "$(ctl --json history alpha > "$dir/short.json"; echo "$dir/short.json")"
write_conf "metrics_file = $dir/nowhere/cacheage.prom" "objects = 999"
sed -i '/^objects = 1000$/d' "$dir/cacheaged.conf"
ctl reload
check "reload: a recreated cache (adapter keys changed) starts a new history" sh -c "
        '$CACHEAGECTL' --address='$addr' --no-pager history alpha | grep -qx 'No rotation of alpha in its history yet.'"
rotate_alpha 1
check "metrics_file that cannot be written: logged once, the daemon goes on" sh -c "
        [ \$(grep -c 'Failed to write metrics to $dir/nowhere/cacheage.prom' '$dir/cacheaged.log') = 1 ] &&
        '$CACHEAGECTL' --address='$addr' metrics | grep -q '^cacheage_objects{cache=\"alpha\",adapter=\"fixed\"} 999\$'"

# metrics_file below a directory another user owns: that user's symlink would send root's
# file anywhere (here into root's $dir/victim); it is refused, and said, and nothing is
# written. A write that works comes first, so that the refusal is logged (once per failure).
mkdir "$dir/victim" "$dir/theirs"
ln -s "$dir/victim" "$dir/theirs/prom"
chown -h nobody "$dir/theirs" "$dir/theirs/prom"
write_conf "metrics_file = $dir/prom/cacheage.prom" "objects = 999"
sed -i '/^objects = 1000$/d' "$dir/cacheaged.conf"
ctl reload
write_conf "metrics_file = $dir/theirs/prom/cacheage.prom" "objects = 999"
sed -i '/^objects = 1000$/d' "$dir/cacheaged.conf"
ctl reload
rotate_alpha 1
check "metrics_file through another user's symlink: refused with the reason, nothing written" sh -c "
        grep -q 'Failed to write metrics to $dir/theirs/prom/cacheage.prom: $dir/theirs/prom is a symlink below a directory that uid 65534 may change' '$dir/cacheaged.log' &&
        [ -z \"\$(ls -A '$dir/victim')\" ]"

# Debian's layout: node_exporter's directory is root's, its parent the prometheus user's (here
# nobody's). The file is written there (issue 33: it was refused).
mkdir -p "$dir/prometheus/node-exporter"
chown nobody "$dir/prometheus"
write_conf "metrics_file = $dir/prometheus/node-exporter/cacheage.prom" "objects = 999"
sed -i '/^objects = 1000$/d' "$dir/cacheaged.conf"
ctl reload
rotate_alpha 1
check "metrics_file in a directory of root's below another user's: written" sh -c "
        grep -q '^cacheage_objects{cache=\"alpha\",adapter=\"fixed\"} ' '$dir/prometheus/node-exporter/cacheage.prom'"

bus_daemon_stop
tap_end
