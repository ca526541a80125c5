#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cacheagectl against a live cacheaged on a private system-type bus: the output of each
# command (stdout and stderr) and its exit status, compared with
# tests/fixtures/bus/cacheagectl.golden once the volatile fields (uptime, timestamps,
# durations, the temporary directory) are masked; every --json output must parse.
#
# Environment (from tests/meson.build): CACHEAGED, CACHEAGECTL, CA_TEST_PLUGIN_DIR,
# CA_TEST_SRCDIR, CA_TEST_CONFIG_FILE (the build's main configuration file). CA_UPDATE_GOLDEN=1 rewrites the golden file instead of comparing.
# Exit 77 (skipped) without root, setpriv or dbus-daemon: the nobody cases need them.

set -u

: "${CACHEAGED:?run through meson}" "${CACHEAGECTL:?}" "${CA_TEST_PLUGIN_DIR:?}" "${CA_TEST_SRCDIR:?}"
: "${CA_TEST_CONFIG_FILE:?}"
golden="$CA_TEST_SRCDIR/fixtures/bus/cacheagectl.golden"

if [ "$(id -u)" != 0 ] || ! command -v dbus-daemon >/dev/null || ! command -v setpriv >/dev/null; then
        echo "skipped: needs root, dbus-daemon and setpriv"
        exit 77
fi

dir=$(mktemp -d /tmp/cacheagectl-test-XXXXXX) || exit 1
chmod 755 "$dir"
# shellcheck disable=SC2034 # read by bus-lib.sh
bus_lib_tests=$CA_TEST_SRCDIR
. "$CA_TEST_SRCDIR/bus-lib.sh"
daemon_pid=
trap bus_cleanup EXIT

wait_for() { # $1: what, then a command that succeeds when ready (20 s at most)
        what=$1
        shift
        bus_wait 20 "$@" && return 0
        echo "timed out waiting for $what" >&2
        cat "$dir/cacheaged.log" >&2
        exit 1
}

bus_start "$dir/bus" || { echo "dbus-daemon did not answer" >&2; cat "$dir/bus.log" >&2; exit 1; }
addr="unix:path=$dir/bus"

write_conf() { # $1: extra lines for [cache alpha]
        cat > "$dir/cacheaged.conf" <<EOF
[daemon]
interval = 1h
plugin_dir = $CA_TEST_PLUGIN_DIR
idle_cpu_pressure = 0
idle_memory_pressure = 0

[cache alpha]
adapter = fixed
objects = 1000
reused = 100
$1

[cache beta]
adapter = fixed
objects = 50
interval = 30s
single_use_age = 1
max_age = 4
enabled = no

[cache gamma]
adapter = fixed
objects = 20
recreate = yes
single_use_age = 1
max_age = 2
enabled = no
EOF
}
write_conf ""

"$CACHEAGED" --config "$dir/cacheaged.conf" --bus "$addr" >"$dir/cacheaged.log" 2>&1 &
daemon_pid=$!
ctl() {
        "$CACHEAGECTL" --address="$addr" --no-pager "$@"
}
wait_for "cacheaged" ctl list

out="$dir/actual"
: > "$out"
jsons=0
run() { # run and record: the command line, its output (stdout then stderr), its status
        echo "\$ cacheagectl $*" >> "$out"
        ctl "$@" > "$dir/stdout" 2> "$dir/stderr"
        rc=$?
        cat "$dir/stdout" "$dir/stderr" >> "$out"
        echo "[exit $rc]" >> "$out"
        case " $* " in
        *" --json "* | *" --json=short "* | *" --json=pretty "*)
                jsons=$((jsons + 1))
                if ! python3 -c 'import json, sys; json.load(sys.stdin)' < "$dir/stdout"; then
                        echo "not JSON: cacheagectl $*" >&2
                        cat "$dir/stdout" >&2
                        json_failed=1
                fi ;;
        esac
}
json_failed=
nobody() { # as nobody, recorded like run
        echo "\$ (nobody) cacheagectl $*" >> "$out"
        setpriv --reuid=nobody --regid=nogroup --clear-groups \
                "$CACHEAGECTL" --address="$addr" --no-pager "$@" >> "$out" 2>&1
        echo "[exit $?]" >> "$out"
}
settle() { # wait until a cache's rotation work is done
        wait_for "rotation of $1" sh -c "'$CACHEAGECTL' --address='$addr' show '$1' | grep -qx Backlog=0"
}

run
run status --json
run show alpha
run list
run list --json

run rotate alpha
settle alpha
run rotate
settle alpha
run status
run show alpha
run show alpha --json
run show beta --json

run set beta interval=45s single-use-age=2 max-age=6 enabled=yes
run show beta
run --json set beta enabled=no
# Both ages in one go, in either direction: every step the daemon sees is valid.
run set beta single-use-age=20 max-age=30
run set beta max-age=3 single-use-age=3
settle beta # lower ages: a re-sweep, which the next slices finish
# Not Scanned: a second lowering that comes before the first one's sweep had a slice starts it
# over (lib/age.c), so how many objects were looked at depends on the machine's load.
beta_props=Name,Enabled,IntervalUSec,SingleUseAge,MaxAge,Objects,SingleUseObjects,Reclaimed,Backlog
run show beta -p $beta_props
# A result with max-age below single-use-age is refused before anything is sent.
run set beta interval=1min max-age=2
run set beta max-age=1 single-use-age=5
run show beta -p $beta_props
run set beta single-use-age=2 max-age=6
run reset-statistics alpha
run show alpha
run --json reset-statistics

# Errors: one line, a distinct exit status.
run show nope
run rotate nope
run --json show nope
run set alpha interval=5ms
run set alpha interval=soon
run set alpha max-age=0
run set alpha single-use-age=70000
run set alpha enabled=maybe
run set alpha colour=blue
run set alpha interval
run set alpha
run set nope interval=1min
# A key given twice is refused (which value was meant?), and control bytes in an argument are
# shown escaped, never raw (issue 11).
run set alpha interval=1s interval=2s
run_as() { # $1: the command line as recorded (the arguments hold control bytes), then them
        echo "\$ cacheagectl $1" >> "$out"
        shift
        ctl "$@" >> "$out" 2>&1
        echo "[exit $?]" >> "$out"
}
run_as "set alpha 'colour<ESC>[31m=red<LF>next'" set alpha "$(printf 'colour\033[31m=red\nnext')"
run_as "show 'no<LF>such'" show "$(printf 'no\nsuch')"
run frobnicate
run --watch=0 status
run status --watch=x

# Output options: status of some caches, no legend, properties, values, pretty JSON.
run status beta
run status beta alpha beta
run status nope
run --no-legend status
run show alpha -p Name,Objects -p reclaimed -p AdapterStats.created
run show alpha --property=IntervalUSec --value
run show alpha -p AdapterStats --value
run --json=pretty show alpha -p name,objects,AdapterStats.created
run --json=pretty list
run --json=short list
run show alpha -p Objcts
run show alpha -p AdapterStats.nope

# show without a name: the manager's properties; -P NAME is -p NAME --value (issue 25).
run show
run show -p Caches,default_interval_usec
run -P Version show
run show alpha -P Objects
run show alpha -P IntervalUSec -p MaxAge
run --json show
run --json=pretty show -p drop_in_directory,Caches
run show -p Objects
run show alpha beta
run -P Version status
run -p help

# Exit statuses as systemctl's (LSB): reading an unknown cache 4 ("status unknown"), changing
# one 5 ("not installed"); permission denied 4 (below, as nobody).
run status nope
run history nope
run reset-statistics nope
run set nope enabled=no

# list-caches, as systemctl list-units: the table, then how many (one cache: singular).
run list-caches
run list-caches 'b*'
run list-caches 'a*' 'g*'
run list-caches 'x*'
run --no-legend list-caches
run --json list-caches 'a*'
run status -p Objects
run --json=loud status
run rotate --persistent alpha

# On a terminal (script(1) gives one): the pager as systemd's tools choose it, never losing the
# output, and colour; what the pager and the colour did is recorded, not the escape codes.
cat > "$dir/pager-a" <<'EOF'
#!/bin/sh
echo "[pager a, LESS=$LESS]"
cat
EOF
sed 's/pager a/pager b/' "$dir/pager-a" > "$dir/pager-b"
sed 's/pager a/pager c/' "$dir/pager-a" > "$dir/pager-c"
chmod 755 "$dir/pager-a" "$dir/pager-b" "$dir/pager-c"
mkdir "$dir/nopath"
on_tty() { # environment assignments, then cacheagectl's arguments; recorded like run
        echo "\$ (tty) $*" >> "$out"
        envs=
        while [ $# -gt 0 ] && case $1 in *=*) true ;; *) false ;; esac; do
                envs="$envs '$1'"
                shift
        done
        script -qec "env -u PAGER -u SYSTEMD_PAGER -u CACHEAGECTL_PAGER -u NO_COLOR -u SYSTEMD_COLORS -u LESS TERM=xterm $envs '$CACHEAGECTL' --address='$addr' $*" /dev/null \
                < /dev/null > "$dir/tty" 2>&1
        rc=$?
        tr -d '\r' < "$dir/tty" | sed 's/\x1b\[[0-9;]*m/<C>/g' >> "$out"
        echo "[exit $rc]" >> "$out"
}
on_tty PAGER=no-such-pager PATH="$dir/nopath" show alpha -p Name,Adapter
on_tty PATH="$dir/nopath" show alpha -p Name
on_tty "PAGER=no-such-pager | cat" PATH="$dir/nopath" show alpha -p Name
on_tty PAGER="$dir/pager-a" show alpha -p Name
on_tty PAGER="$dir/pager-a" SYSTEMD_PAGER="$dir/pager-b" show alpha -p Name
on_tty PAGER="$dir/pager-a" SYSTEMD_PAGER="$dir/pager-b" CACHEAGECTL_PAGER="$dir/pager-c" show alpha -p Name
on_tty SYSTEMD_PAGER="$dir/pager-b" SYSTEMD_LESS=XR show alpha -p Name
on_tty SYSTEMD_PAGER="$dir/pager-b" LESS=ignored show alpha -p Name
on_tty SYSTEMD_PAGER="$dir/pager-b" --no-pager show alpha -p Name
on_tty PAGER=cat show alpha -p Name
on_tty SYSTEMD_PAGER="$dir/pager-b" show nope
on_tty PAGER=cat --no-legend status beta
on_tty PAGER=cat NO_COLOR=1 --no-legend status beta
on_tty PAGER=cat SYSTEMD_COLORS=0 --no-legend status beta
on_tty PAGER=cat TERM=dumb --no-legend status beta
run_colour() { # SYSTEMD_COLORS=1 without a terminal
        echo "\$ SYSTEMD_COLORS=1 cacheagectl --no-legend status beta (not a tty)" >> "$out"
        SYSTEMD_COLORS=1 "$CACHEAGECTL" --address="$addr" --no-legend status beta 2>&1 |
                sed 's/\x1b\[[0-9;]*m/<C>/g' >> "$out"
        echo "[exit $?]" >> "$out"
}
run_colour

# --watch refreshes until interrupted (5 s for 3 refreshes of 0.2 s: a loaded machine is slow).
timeout 5 "$CACHEAGECTL" --address="$addr" --watch=0.2 status > "$dir/watch" 2>&1
n=$(grep -c '^cacheaged ' "$dir/watch")
echo "\$ timeout 5 cacheagectl --watch=0.2 status: at least 3 refreshes: $([ "$n" -ge 3 ] && echo yes || echo "no ($n)")" >> "$out"

# Refaults: gamma creates again what was reclaimed before its next rotation (ages = auto by
# default, and it has identities): the column, the share, the histogram, the ages in force.
run rotate gamma
settle gamma
run rotate gamma
settle gamma
run status gamma
run show gamma -p Ages,RefaultWindow,TargetRefaultPpm,Reclaimed,Refaults,RefaultSharePpm
run show gamma -p Remembered,RefaultMemoryBytes,CurrentSingleUseAge,CurrentMaxAge,OwnAgedObjects
run show gamma -p RefaultHistogram
run show gamma -p RefaultHistogram --value
run --json show gamma -p refaults,refault_histogram

# Reading is open to all, the rest needs root.
nobody status
nobody show beta
nobody rotate alpha
nobody set alpha interval=1min
nobody reset-statistics
nobody reload

# Reload: a good configuration, then a bad one that changes nothing.
write_conf "interval = 2min"
run reload
run status
write_conf "interval = 2 fortnights
bogus_key = 1"
run reload
run --json reload
run status

# set --persistent: a drop-in in the daemon's drop-in directory, then a reload.
write_conf ""
run reload
run set beta interval=1min
run set --persistent beta interval=2min max-age=9
show_dropin() {
        echo "\$ cat @DIR@/cacheaged.conf.d/50-beta.conf" >> "$out"
        cat "$dir/cacheaged.conf.d/50-beta.conf" >> "$out" 2>&1
}
show_dropin
run show beta -p IntervalUSec,MaxAge,Enabled
run --json set --persistent beta enabled=yes max-age=7
show_dropin
run reload
run show beta -p IntervalUSec,MaxAge,Enabled
nobody set --persistent beta enabled=no
# A reload that fails (the main file is broken meanwhile): the drop-in is put back as it was.
write_conf "interval = 2 fortnights"
run set --persistent beta interval=5min
show_dropin
write_conf ""
run set --persistent nope enabled=no
ls "$dir/cacheaged.conf.d" >> "$out"

# cat-config: the files the daemon reads, in order, as systemd-analyze cat-config prints them;
# read here, no daemon asked (so no --address: run_local).
run_local() { # recorded like run, without --address (and with $root when set)
        echo "\$ ${CACHEAGED_CONFIG_ROOT:+CACHEAGED_CONFIG_ROOT=$CACHEAGED_CONFIG_ROOT }cacheagectl $*" >> "$out"
        "$CACHEAGECTL" --no-pager "$@" >> "$out" 2>&1
        echo "[exit $?]" >> "$out"
}
run_local cat-config --config="$dir/cacheaged.conf"
run_local --json cat-config --config="$dir/cacheaged.conf"
run_local cat-config --config="$dir/nonexistent.conf"
run_local cat-config extra
run cat-config
# The search below a root (CACHEAGED_CONFIG_ROOT, the daemon's): the main file missing, then
# there; drop-ins of every directory merged by name, the first directory's winning, one masked.
root=$dir/root
conf_d=$root$CA_TEST_CONFIG_FILE.d
mkdir -p "$conf_d" "$root/run/cacheage/cacheaged.conf.d" "$root/usr/lib/cacheage/cacheaged.conf.d"
printf '[daemon]\ninterval = 2min\n' > "$conf_d/10-a.conf"
ln -s /dev/null "$conf_d/30-masked.conf"
printf '[daemon]\ninterval = 9min\n' > "$root/run/cacheage/cacheaged.conf.d/10-a.conf"
printf '[cache b]\nadapter = fixed\n' > "$root/run/cacheage/cacheaged.conf.d/20-b.conf"
printf '[cache masked]\nadapter = fixed\n' > "$root/usr/lib/cacheage/cacheaged.conf.d/30-masked.conf"
printf '# the distribution'"'"'s\n' > "$root/usr/lib/cacheage/cacheaged.conf.d/40-c.conf"
printf 'not a drop-in\n' > "$root/usr/lib/cacheage/cacheaged.conf.d/50-d.txt"
CACHEAGED_CONFIG_ROOT=$root run_local cat-config
printf '[daemon]\nlog_level = info\n' > "$root$CA_TEST_CONFIG_FILE"
CACHEAGED_CONFIG_ROOT=$root run_local cat-config
# The daemon reads exactly those: --check-config on the same search agrees.
echo "\$ cacheaged --check-config (the same root)" >> "$out"
CACHEAGED_CONFIG_ROOT=$root CACHEAGED_PLUGIN_DIR=$CA_TEST_PLUGIN_DIR "$CACHEAGED" --check-config \
        >> "$out" 2>&1
echo "[exit $?]" >> "$out"

# No daemon on that bus.
bus_start "$dir/empty" || { echo "the second dbus-daemon did not answer" >&2; exit 1; }
dbus2_pid=$bus_pid
echo "\$ cacheagectl --address=unix:path=@DIR@/empty status" >> "$out"
"$CACHEAGECTL" --address="unix:path=$dir/empty" status >> "$out" 2>&1
echo "[exit $?]" >> "$out"
echo "\$ cacheagectl --address=unix:path=@DIR@/none status" >> "$out"
"$CACHEAGECTL" --address="unix:path=$dir/none" status >> "$out" 2>&1
echo "[exit $?]" >> "$out"
kill "$dbus2_pid"
# An address that is not one is a bad command line (2), not a daemon that does not run (3).
for bad in garbage:: unix: 'unix:path=a b'; do
        echo "\$ cacheagectl --address=$bad status" >> "$out"
        "$CACHEAGECTL" --address="$bad" status >> "$out" 2>&1
        echo "[exit $?]" >> "$out"
done

# Bash completion: commands, options, the daemon's cache names, set's keys.
complete_line() {
        echo "\$ complete '$1'" >> "$out"
        PATH="$(dirname "$CACHEAGECTL"):$PATH" bash -c '
                compopt() { :; }
                . "$1"
                COMP_LINE=$2 COMP_POINT=${#2}
                _cacheagectl
                printf "%s\n" "${COMPREPLY[*]}"' sh "$CA_TEST_SRCDIR/../completion/cacheagectl" \
                "$1" >> "$out" 2>&1
}
complete_line "cacheagectl "
complete_line "cacheagectl --js"
complete_line "cacheagectl --address=$addr show "
complete_line "cacheagectl --address $addr --json set a"
complete_line "cacheagectl --address=$addr set alpha "
complete_line "cacheagectl --address=$addr set alpha interval=1s enabled="
complete_line "cacheagectl --address=$addr reload "
complete_line "cacheagectl --address=$addr status b"
complete_line "cacheagectl --json=p"
complete_line "cacheagectl --no-l"
complete_line "cacheagectl l"
# -p and -P complete property names: a cache's own (its adapter's statistics too) when one is
# named, else every name cacheagectl knows; after a comma, the next name of the list.
complete_line "cacheagectl --address=$addr show alpha -p AdapterStats.c"
complete_line "cacheagectl --address=$addr show alpha -p Name,Objects,Sing"
complete_line "cacheagectl --address=$addr show -P Ver"
complete_line "cacheagectl --address=$addr show alpha --property=Refault"
complete_line "cacheagectl -p Drop"
# What bash registers once the file is sourced.
echo "\$ complete -p cacheagectl" >> "$out"
bash -c '. "$1"; complete -p cacheagectl' sh "$CA_TEST_SRCDIR/../completion/cacheagectl" >> "$out" 2>&1

run --version
echo "\$ cacheagectl --help | head -1" >> "$out"
ctl --help | head -1 >> "$out"

# The daemon stops cleanly, with no sanitizer report.
kill "$daemon_pid"
wait "$daemon_pid"
rc=$?
daemon_pid=
failed=
if [ $rc != 0 ] || grep -q -e Sanitizer -e 'runtime error:' "$dir/cacheaged.log"; then
        echo "cacheaged exited with $rc:" >&2
        cat "$dir/cacheaged.log" >&2
        failed=1
fi

# Mask what changes from run to run.
sed -E -e "s|$dir/root$CA_TEST_CONFIG_FILE|@ROOT@@CONFIG_FILE@|g" -e "s|$CA_TEST_CONFIG_FILE|@CONFIG_FILE@|g" \
    -e "s|$CA_TEST_PLUGIN_DIR|@PLUGIN_DIR@|g" -e "s|$dir|@DIR@|g" \
    -e 's/up [^(]*\(since [^)]*\)/up UPTIME (since TIME)/' \
    -e 's/(=|: )(Mon|Tue|Wed|Thu|Fri|Sat|Sun) [0-9-]+ [0-9:]+ [A-Z0-9+-]+ \([^)]*\)/\1TIME (AGO)/' \
    -e 's/(just now|([0-9]+(w|d|h|min|s|ms|us) )*[0-9]+(w|d|h|min|s|ms|us) ago)$/AGO/' \
    -e 's/^(LastRotationDurationUSec|LongestSliceUSec)=.*/\1=DURATION/' \
    -e 's/"(start_timestamp_usec|uptime_usec|last_rotation_usec|last_rotation_duration_usec|longest_slice_usec)":[0-9]+/"\1":N/g' \
    -e "s/^cacheagectl $(printf '%s' "$("$CACHEAGECTL" --version | cut -d' ' -f2)" | sed 's/\./\\./g')\$/cacheagectl VERSION/" \
    -e 's/^cacheaged [0-9.]+, up/cacheaged VERSION, up/' \
    -e 's/"version":"[0-9.]+"/"version":"VERSION"/' \
    "$out" > "$out.masked"

if [ -n "${CA_UPDATE_GOLDEN:-}" ]; then
        cp "$out.masked" "$golden"
        echo "wrote $golden"
elif ! diff -u "$golden" "$out.masked"; then
        echo "cacheagectl output differs from $golden (CA_UPDATE_GOLDEN=1 rewrites it)" >&2
        failed=1
fi
[ -z "$json_failed" ] || failed=1
echo "$jsons --json outputs parsed"
[ -z "$failed" ]
