# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
#
# Sourced by the shell tests that run cacheaged on a private system-type bus (test-cacheagectl,
# test-metrics, soak): set bus_lib_tests to this directory first.
#
#   bus_start SOCKET   writes SOCKET.conf (tests/fixtures/bus/system.conf.in with the unit's
#                      bus policy), starts dbus-daemon on it (log: SOCKET.log), and returns
#                      once it answers, or 1 after 20 s. Sets bus_pid; every pid started is
#                      also in bus_pids, for the caller's cleanup.
#   bus_ready SOCKET   the bus answers a call: dbus-daemon binds its socket before it listens,
#                      so a socket that exists is not yet a bus a client can use.
#   bus_wait SECONDS COMMAND...
#                      runs COMMAND (its output dropped) every 20 ms until it succeeds:
#                      returns 0 then, or 1 after SECONDS. The tests' wait_for() say how
#                      they fail.
#   bus_cleanup        stops $daemon_pid (when set) and every bus started, waits for them, and
#                      removes $dir unless CA_TEST_KEEP is set: a test's EXIT trap.
#
# For the TAP tests (test-metrics, test-remote, test-polkit):
#   ok WHAT, not_ok WHAT   one TAP line, numbered in $n; not_ok sets $failed
#   check WHAT COMMAND...  ok when COMMAND succeeds, else not_ok and its output
#   bus_daemon_conf    prints the [daemon] lines the bus tests share: an hour's interval, the
#                      test plugins ($CA_TEST_PLUGIN_DIR), no idle gating
#   bus_daemon_start ADDRESS
#                      starts cacheaged on $dir/cacheaged.conf and ADDRESS (log:
#                      $dir/cacheaged.log, pid: $daemon_pid), and returns once it answers, or
#                      bails out after 20 s
#   bus_daemon_stop    SIGTERM to $daemon_pid: one TAP line, ok when it exits 0 with no
#                      sanitizer report in its log
#   tap_end            the plan ("1..$n"), and the status: 0 unless something was not ok

: "${bus_lib_tests:?set bus_lib_tests before sourcing bus-lib.sh}"
bus_pids=

bus_ready() {
        busctl --address="unix:path=$1" --timeout=5 call org.freedesktop.DBus \
                /org/freedesktop/DBus org.freedesktop.DBus GetId >/dev/null 2>&1
}

bus_wait() {
        bus_lib_n=$(($1 * 50))
        shift
        bus_lib_i=0
        until "$@" >/dev/null 2>&1; do
                bus_lib_i=$((bus_lib_i + 1))
                [ "$bus_lib_i" -gt "$bus_lib_n" ] && return 1
                sleep 0.02
        done
        return 0
}

bus_cleanup() {
        [ -n "${daemon_pid:-}" ] && kill "$daemon_pid" 2>/dev/null
        # shellcheck disable=SC2086 # a list of pids
        [ -n "$bus_pids" ] && kill $bus_pids 2>/dev/null
        wait 2>/dev/null
        [ -z "${CA_TEST_KEEP:-}" ] && rm -rf "$dir"
}

bus_start() {
        sed -e "s|@SOCKET@|$1|" \
            -e "s|@POLICY@|$bus_lib_tests/../systemd/org.cacheage.CacheAge1.conf|" \
            "$bus_lib_tests/fixtures/bus/system.conf.in" > "$1.conf" || return 1
        rm -f "$1"
        dbus-daemon --nofork --config-file="$1.conf" >>"$1.log" 2>&1 &
        bus_pid=$!
        bus_pids="$bus_pids $bus_pid"
        bus_wait 20 bus_ready "$1"
}

n=0
failed=
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }

check() {
        bus_lib_what=$1
        shift
        if "$@" > "$dir/check.out" 2>&1; then
                ok "$bus_lib_what"
        else
                not_ok "$bus_lib_what"
                sed 's/^/# /' "$dir/check.out"
        fi
}

bus_daemon_conf() {
        printf '[daemon]\ninterval = 1h\nplugin_dir = %s\nidle_cpu_pressure = 0\nidle_memory_pressure = 0\n' \
                "$CA_TEST_PLUGIN_DIR"
}

bus_daemon_start() {
        "$CACHEAGED" --config "$dir/cacheaged.conf" --bus "$1" > "$dir/cacheaged.log" 2>&1 &
        daemon_pid=$!
        bus_wait 20 "$CACHEAGECTL" --address="$1" list ||
                { echo "Bail out! cacheaged did not answer"; sed 's/^/# /' "$dir/cacheaged.log"; exit 1; }
}

bus_daemon_stop() {
        kill "$daemon_pid"
        wait "$daemon_pid"
        bus_lib_rc=$?
        daemon_pid=
        if [ $bus_lib_rc = 0 ] && ! grep -q -e Sanitizer -e 'runtime error:' "$dir/cacheaged.log"; then
                ok "cacheaged stopped cleanly, no sanitizer report"
        else
                not_ok "cacheaged exited with $bus_lib_rc"
                sed 's/^/# /' "$dir/cacheaged.log"
        fi
}

tap_end() {
        echo "1..$n"
        [ -z "$failed" ]
}
