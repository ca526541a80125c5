#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Writes through polkit (TAP), with Debian's real polkitd on the test's private system bus:
#
#   - polkitd runs in a mount namespace of the test's own, where /usr/share/polkit-1/actions
#     holds only our action (systemd/org.cacheage.CacheAge1.policy, as installed), the rules
#     directories only the test's rules (the shipped example conf/50-cacheage.rules for a test
#     group, and one that logs every question), and /etc/passwd and /etc/group know the test
#     users: ca-admin (in the group), ca-user (not), ca-auth (an administrator polkit may ask
#     for). dbus-daemon runs with the same passwd and group.
#   - cacheaged runs as root outside, on that bus; cacheagectl runs as each user (setpriv).
#
# What is checked: the action as polkit reads it (pkaction); a user of the group may write
# (methods and properties), another may not (polkit wants an administrator's password, and no
# agent can ask: exit 4); root with CAP_SYS_ADMIN is not asked about, root without it is
# refused without asking; nothing is kept by the daemon (each write asks polkit again, and a
# rule changed to "no" refuses the next write at once); what polkit keeps: an administrator's
# authentication through the agent cacheagectl starts on a terminal (pkttyagent, the setuid
# helper, PAM), kept by polkit for the rest of that command; a write waiting for polkit leaves
# the daemon serving others; at most 64 wait at once (the next is refused, the 64 all
# complete); and without polkitd, the rule before polkit (root only).
#
# Environment (tests/meson.build): CACHEAGED, CACHEAGECTL, CA_TEST_PLUGIN_DIR, CA_TEST_SRCDIR.
# Needs root, dbus-daemon, unshare and polkitd (scripts/deps.sh).

set -u
: "${CACHEAGED:?run through meson}" "${CACHEAGECTL:?}" "${CA_TEST_PLUGIN_DIR:?}" "${CA_TEST_SRCDIR:?}"
src=$CA_TEST_SRCDIR/..

if [ "$(id -u)" != 0 ] || ! command -v dbus-daemon >/dev/null; then
        echo "1..0 # SKIP needs root and dbus-daemon"
        exit 0
fi
polkitd=/usr/lib/polkit-1/polkitd
for p in unshare setpriv script pkaction pkttyagent "$polkitd"; do
        command -v "$p" >/dev/null ||
                { echo "Bail out! $p is missing (scripts/deps.sh installs polkitd)"; exit 1; }
done

dir=$(mktemp -d /tmp/cacheage-polkit-XXXXXX) || exit 1
chmod 755 "$dir"
# shellcheck disable=SC2034 # read by bus-lib.sh (its TAP helpers; this bus is started here)
bus_lib_tests=$CA_TEST_SRCDIR
. "$CA_TEST_SRCDIR/bus-lib.sh"
addr=unix:path=$dir/bus
pids=
daemon_pid=
polkit_pid=
cleanup() {
        [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
        [ -n "$polkit_pid" ] && kill "$polkit_pid" 2>/dev/null
        [ -n "$polkit_pid" ] && kill -CONT "$polkit_pid" 2>/dev/null # stopped for the pile
        # shellcheck disable=SC2086 # a list of pids
        [ -n "$pids" ] && kill $pids 2>/dev/null
        wait 2>/dev/null
        [ -z "${CA_TEST_KEEP:-}" ] && rm -rf "$dir"
}
trap cleanup EXIT
trap "exit 143" TERM INT # a timeout's SIGTERM: the EXIT trap cleans up

wait_for() { # seconds, then a command that succeeds when ready
        t=$(($1 * 20))
        shift
        until "$@" >/dev/null 2>&1; do
                t=$((t - 1))
                [ $t -gt 0 ] || return 1
                sleep 0.05
        done
}

# The test's users and group, known to dbus-daemon and polkitd only.
admin_uid=61001 user_uid=61002 group=ca-test-admins
cp /etc/passwd "$dir/passwd"
cp /etc/group "$dir/group"
cat >> "$dir/passwd" <<EOF
ca-admin:x:$admin_uid:$admin_uid::/nonexistent:/usr/sbin/nologin
ca-user:x:$user_uid:$user_uid::/nonexistent:/usr/sbin/nologin
EOF
cat >> "$dir/group" <<EOF
ca-admin:x:$admin_uid:
ca-user:x:$user_uid:
$group:x:61010:ca-admin
EOF
chmod 644 "$dir/passwd" "$dir/group"
users_ns() { # mount the test's passwd and group, then run the rest of the line
        printf 'mount --bind %s/passwd /etc/passwd && mount --bind %s/group /etc/group && ' \
                "$dir" "$dir"
}

# The bus: the tests' system-type one, with our policy and polkit's own.
sed -e "s|@SOCKET@|$dir/bus|" -e "s|@POLICY@|$src/systemd/org.cacheage.CacheAge1.conf|" \
    -e "s|</busconfig>|<include>/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf</include></busconfig>|" \
    "$CA_TEST_SRCDIR/fixtures/bus/system.conf.in" > "$dir/bus.conf"
unshare -m sh -c "$(users_ns) exec dbus-daemon --nofork --config-file='$dir/bus.conf'" \
        > "$dir/bus.log" 2>&1 &
pids="$pids $!"
wait_for 20 busctl --address="$addr" call org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus GetId || { echo "Bail out! dbus-daemon did not answer"; exit 1; }

# polkitd's actions and rules (it reads them as its own user, polkitd).
mkdir -m 755 "$dir/actions" "$dir/rules.d"
cp "$src/systemd/org.cacheage.CacheAge1.policy" "$dir/actions/"
sed "s/\"cacheage-admin\"/\"$group\"/" "$src/conf/50-cacheage.rules" > "$dir/rules.d/50-cacheage.rules"
cat > "$dir/rules.d/10-test.rules" <<'EOF'
// Every question is logged.
polkit.addRule(function(action, subject) {
        if (action.id == "org.cacheage.manage")
                polkit.log("question: user=" + subject.user + " member=" +
                           action.lookup("member") + " property=" + action.lookup("property"));
});
EOF
chmod 644 "$dir/actions/"* "$dir/rules.d/"*
start_polkitd() {
        DBUS_SYSTEM_BUS_ADDRESS=$addr unshare -m sh -c "$(users_ns)
                mount --bind '$dir/actions' /usr/share/polkit-1/actions &&
                mount --bind '$dir/rules.d' /usr/share/polkit-1/rules.d &&
                mount -t tmpfs tmpfs /etc/polkit-1/rules.d && exec $polkitd" \
                >> "$dir/polkitd.log" 2>&1 &
        polkit_pid=$!
        # 60 s: on CI's machine, with two guests and a build beside it, polkitd had loaded its
        # rules and entered its loop but was not on the bus after 20 s
        wait_for 60 sh -c "busctl --address='$addr' status org.freedesktop.PolicyKit1" ||
                { echo "Bail out! polkitd did not start"; sed 's/^/# /' "$dir/polkitd.log"; exit 1; }
}
start_polkitd
questions() { grep -c 'question: ' "$dir/polkitd.log"; }

# cacheaged, as root, on that bus. Every refusal gets its line here (an interval of 1us: each
# opens another): this test counts them, ca-admin's beyond the 10 a minute the daemon would log
# (test-bus's refused_writes_logged_within_a_bound checks that limit).
{ bus_daemon_conf; printf 'log_level = debug\n[cache alpha]\nadapter = fixed\nobjects = 100\n'; } \
        > "$dir/cacheaged.conf"
export CACHEAGED_REFUSAL_LOG_INTERVAL=1us
bus_daemon_start "$addr"
unset CACHEAGED_REFUSAL_LOG_INTERVAL

as() { # uid, then cacheagectl's arguments; output in $dir/out, the exit status returned
        u=$1
        shift
        setpriv --reuid="$u" --regid="$u" --clear-groups \
                "$CACHEAGECTL" --address="$addr" --no-pager "$@" > "$dir/out" 2>&1
}
expect() { # description, expected exit status, uid, then cacheagectl's arguments
        what=$1 want=$2
        shift 2
        as "$@"
        rc=$?
        if [ "$rc" = "$want" ]; then
                ok "$what (exit $rc)"
        else
                not_ok "$what: exit $rc, expected $want"
                sed 's/^/# /' "$dir/out"
                tail -5 "$dir/cacheaged.log" | sed 's/^/# daemon: /'
        fi
}
show() { "$CACHEAGECTL" --address="$addr" show alpha -P "$1"; }

# The action as polkitd read it from the installed file.
if DBUS_SYSTEM_BUS_ADDRESS=$addr pkaction --verbose --action-id org.cacheage.manage > "$dir/out" 2>&1 &&
   grep -q 'implicit any: *auth_admin_keep' "$dir/out" &&
   grep -q 'implicit active: *auth_admin_keep' "$dir/out"; then
        ok "pkaction: org.cacheage.manage, auth_admin_keep"
else
        not_ok "pkaction: org.cacheage.manage"
        sed 's/^/# /' "$dir/out"
fi

# A member of the group: methods and properties, each one polkit's question.
q0=$(questions)
expect "ca-admin (in $group) rotates alpha" 0 $admin_uid rotate alpha
expect "ca-admin sets alpha's interval and max-age (two Sets)" 0 $admin_uid \
        set alpha interval=5min max-age=9
if [ "$(show IntervalUSec)" = 5min ] && [ "$(show MaxAge)" = 9 ] &&
   [ $(($(questions) - q0)) = 3 ] &&
   grep -q "Rotate allowed to uid $admin_uid (pid [0-9]*) by polkit (org.cacheage.manage)" "$dir/cacheaged.log" &&
   grep -q "setting IntervalUSec allowed to uid $admin_uid" "$dir/cacheaged.log" &&
   grep -q "question: user=ca-admin member=Set property=MaxAge" "$dir/polkitd.log"; then
        ok "the settings changed; polkit was asked once per write (3), with the member and property"
else
        not_ok "after ca-admin's writes: interval $(show IntervalUSec), max-age $(show MaxAge), $(($(questions) - q0)) questions"
        grep -e question -e allowed "$dir/polkitd.log" "$dir/cacheaged.log" | sed 's/^/# /'
fi
expect "ca-admin reloads" 0 $admin_uid reload

# Not a member: polkit wants an administrator's password (auth_admin_keep), no agent asks.
expect "ca-user (not in the group) may not rotate" 4 $user_uid rotate alpha
if grep -q "needs authentication for org.cacheage.manage" "$dir/out" &&
   grep -q "Rotate denied to uid $user_uid (pid [0-9]*) by polkit (org.cacheage.manage): it wants the caller to authenticate" "$dir/cacheaged.log"; then
        ok "ca-user is told authentication is needed; the daemon says polkit wanted it"
else
        not_ok "ca-user's refusal"
        sed 's/^/# /' "$dir/out"
fi
expect "ca-user may not set, --no-ask-password either" 4 $user_uid --no-ask-password set alpha enabled=no
expect "ca-user may still read" 0 $user_uid show alpha -p Enabled
# Every read of the Manager, without a question to polkit (the gate's list of reads).
q0=$(questions)
reads_ok=yes
for call in "ListCaches" "GetMetrics" "GetMetricsPage t 0" "GetHistory st alpha 0" \
            "GetHistoryPage stt alpha 0 0"; do
        # shellcheck disable=SC2086 # the method and its arguments
        setpriv --reuid=$user_uid --regid=$user_uid --clear-groups busctl --address="$addr" \
                call org.cacheage.CacheAge1 /org/cacheage/CacheAge1 \
                org.cacheage.CacheAge1.Manager $call > "$dir/out" 2>&1 ||
                { reads_ok="no: $call: $(cat "$dir/out")"; break; }
done
if [ "$reads_ok" = yes ] && [ "$(questions)" = "$q0" ]; then
        ok "ca-user calls every read of the Manager, and polkit is not asked"
else
        not_ok "the Manager's reads as ca-user: $reads_ok, $(($(questions) - q0)) questions"
fi
# A property name with control bytes is quoted escaped, in the error and in the log (busctl
# itself prints it raw before the daemon's message).
setpriv --reuid=$user_uid --regid=$user_uid --clear-groups busctl --address="$addr" set-property \
        org.cacheage.CacheAge1 /org/cacheage/CacheAge1/cache/alpha org.cacheage.CacheAge1.Cache \
        "$(printf 'Max\033[31mAge')" u 3 > "$dir/out" 2>&1
if grep -q 'required: setting Max\\x1b\[31mAge needs' "$dir/out" && ! grep -q "$(printf '\033')" "$dir/cacheaged.log" &&
   grep -q 'setting Max\\x1b\[31mAge denied to uid' "$dir/cacheaged.log"; then
        ok "a Set of a property named with control bytes: refused, the name escaped (\\x1b)"
else
        not_ok "the property name with control bytes"
        sed 's/^/# /' "$dir/out"
fi

# Root is decided by the daemon: with CAP_SYS_ADMIN always, without it never, polkit unasked.
q0=$(questions)
expect "root rotates" 0 0 rotate alpha
if setpriv --bounding-set=-sys_admin "$CACHEAGECTL" --address="$addr" rotate alpha > "$dir/out" 2>&1; then
        not_ok "root without CAP_SYS_ADMIN rotated"
else
        rc=$?
        if [ $rc = 4 ] && grep -q "Rotate denied to uid 0 (pid [0-9]*): no CAP_SYS_ADMIN" "$dir/cacheaged.log"; then
                ok "root without CAP_SYS_ADMIN is refused (exit 4), though polkit allows uid 0 anything"
        else
                not_ok "root without CAP_SYS_ADMIN: exit $rc"
                sed 's/^/# /' "$dir/out"
        fi
fi
if [ "$(questions)" = "$q0" ]; then
        ok "polkit was not asked about root's writes"
else
        not_ok "polkit was asked about root: $(($(questions) - q0)) questions"
fi

# Nothing kept by the daemon: a rule that says no takes effect at the next write.
cat > "$dir/rules.d/20-no.rules" <<'EOF'
polkit.addRule(function(action, subject) {
        if (action.id == "org.cacheage.manage")
                return polkit.Result.NO;
});
EOF
chmod 644 "$dir/rules.d/20-no.rules"
if wait_for 20 sh -c "! setpriv --reuid=$admin_uid --regid=$admin_uid --clear-groups \
        '$CACHEAGECTL' --address='$addr' reset-statistics alpha"; then
        expect "with the rule saying no, ca-admin's next write is refused" 4 $admin_uid rotate alpha
        grep -qx "cacheagectl: Permission denied: Rotate needs root, or polkit's authorization for org.cacheage.manage, which it refused (try: sudo cacheagectl rotate ...)" "$dir/out" ||
                { not_ok "the refusal does not say polkit refused"; sed 's/^/# /' "$dir/out"; }
else
        not_ok "ca-admin still allowed 20 s after polkit's rules said no"
fi
rm "$dir/rules.d/20-no.rules"
if wait_for 20 setpriv --reuid=$admin_uid --regid=$admin_uid --clear-groups \
        "$CACHEAGECTL" --address="$addr" reset-statistics alpha; then
        ok "the rule removed, ca-admin's writes are allowed again"
else
        not_ok "ca-admin refused 20 s after the rule was removed"
fi

# auth_admin_keep, for real: ca-user on a terminal (script(1)); cacheagectl starts polkit's
# text agent (pkttyagent), which authenticates as the administrator ca-auth (addAdminRule)
# through polkit-agent-helper-1 and PAM, in a mount namespace where /etc/shadow gives ca-auth
# an empty password (pam_unix nullok: no prompt) and /run/dbus/system_bus_socket is the test's
# bus (the setuid helper reports to polkitd there). polkit then keeps the authorization for
# that caller: the second Set of the same command is allowed without authenticating again. With
# no login session here, polkit keeps it for the connection: the next command authenticates.
cp /etc/shadow "$dir/shadow"
echo "ca-auth::19000:0:99999:7:::" >> "$dir/shadow"
chmod 640 "$dir/shadow"
echo "ca-auth:x:61004:61004::/nonexistent:/usr/sbin/nologin" >> "$dir/passwd"
echo "ca-auth:x:61004:" >> "$dir/group"
loads0=$(grep -c 'Finished loading' "$dir/polkitd.log")
cat > "$dir/rules.d/05-admin.rules" <<'EOF'
polkit.addAdminRule(function(action, subject) {
        return ["unix-user:ca-auth"];
});
EOF
chmod 644 "$dir/rules.d/05-admin.rules"
cat > "$dir/on-terminal" <<EOF
#!/bin/sh
mount -t tmpfs tmpfs /run && mkdir -p /run/dbus && touch /run/dbus/system_bus_socket &&
mount --bind '$dir/bus' /run/dbus/system_bus_socket &&
mount --bind '$dir/passwd' /etc/passwd && mount --bind '$dir/group' /etc/group &&
mount --bind '$dir/shadow' /etc/shadow &&
exec setpriv --reuid=$user_uid --regid=$user_uid --clear-groups \
        "$CACHEAGECTL" --address="$addr" --no-pager "\$@"
EOF
chmod 755 "$dir/on-terminal"
authentications() { grep -c "successfully authenticated as unix-user:ca-auth to gain TEMPORARY authorization for action org.cacheage.manage" "$dir/polkitd.log"; }
on_terminal() { # cacheagectl's arguments: as ca-user on a terminal; output in $dir/tty.out
        script -qec "unshare -m '$dir/on-terminal' $*" /dev/null < /dev/null > "$dir/tty.out" 2>&1
}
wait_for 20 sh -c "[ \$(grep -c 'Finished loading' '$dir/polkitd.log') -gt $loads0 ]" ||
        not_ok "polkitd did not load the administrator's rule"
q0=$(questions)
a0=$(authentications)
on_terminal set alpha interval=7min max-age=7
rc=$?
if [ $rc = 0 ] && [ "$(show IntervalUSec)" = 7min ] && [ "$(show MaxAge)" = 7 ] &&
   grep -q "AUTHENTICATING FOR org.cacheage.manage" "$dir/tty.out" &&
   grep -q "Authentication is required to change cacheaged's caches" "$dir/tty.out" &&
   grep -q "Authenticating as: ca-auth" "$dir/tty.out"; then
        ok "ca-user authenticates as the administrator on the terminal, with the action's message: both Sets done"
else
        not_ok "ca-user on a terminal: exit $rc"
        sed 's/^/# /' "$dir/tty.out"
        tail -5 "$dir/polkitd.log" | sed 's/^/# polkitd: /'
fi
if [ $(($(questions) - q0)) = 2 ] && [ $(($(authentications) - a0)) = 1 ]; then
        ok "polkit asked about both Sets, authenticated once: it kept the authorization for the second"
else
        not_ok "$(($(questions) - q0)) questions, $(($(authentications) - a0)) authentications (expected 2 and 1)"
fi
on_terminal rotate alpha
rc=$?
if [ $rc = 0 ] && [ $(($(authentications) - a0)) = 2 ]; then
        ok "the next command authenticates again (no login session: polkit kept it for the connection)"
else
        not_ok "the next command: exit $rc, $(($(authentications) - a0)) authentications in all (expected 2)"
        sed 's/^/# /' "$dir/tty.out"
fi
expect "without a terminal, ca-user is still refused" 4 $user_uid rotate alpha
on_terminal --no-ask-password rotate alpha
rc=$?
if [ $rc = 4 ] && [ $(($(authentications) - a0)) = 2 ] && ! grep -q AUTHENTICATING "$dir/tty.out"; then
        ok "on a terminal with --no-ask-password: no agent, refused (exit 4)"
else
        not_ok "--no-ask-password on a terminal: exit $rc"
        sed 's/^/# /' "$dir/tty.out"
fi

# A write waiting for polkit does not stop the daemon: polkitd is stopped (SIGSTOP), so that
# the questions wait for it (for less than the daemon's 25 s call timeout). Meanwhile reads are
# answered; 71 writes pile up, and the daemon refuses those past 64 at once; once polkitd goes
# on (SIGCONT), every waiting one is done. The pile is sent with busctl (quick to start, told
# to wait 120 s): it is the daemon's limit under test, not the client.
launch() { # $1: its number; its pid is added to $waiting
        setpriv --reuid=$admin_uid --regid=$admin_uid --clear-groups busctl --address="$addr" \
                --timeout=120 call org.cacheage.CacheAge1 /org/cacheage/CacheAge1 \
                org.cacheage.CacheAge1.Manager ResetStatistics s alpha > "$dir/w$1.out" 2>&1 &
        waiting="$waiting $!"
        pids="$pids $!"
}
asked0=$(grep -c "by uid $admin_uid (pid [0-9]*): asking polkit" "$dir/cacheaged.log")
refused0=$(grep -c "refused to uid $admin_uid (pid [0-9]*): 64 calls wait" "$dir/cacheaged.log")
kill -STOP "$polkit_pid"
stopped=$(date +%s)
waiting=
launch 0
first=$waiting
wait_for 20 sh -c "[ \$(grep -c 'by uid $admin_uid (pid [0-9]*): asking polkit' '$dir/cacheaged.log') -gt $asked0 ]" ||
        not_ok "the first write did not reach the gate"
start=$(date +%s%N)
"$CACHEAGECTL" --address="$addr" --no-pager status > "$dir/status.out" 2>&1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ $rc = 0 ] && [ $ms -lt 2000 ] && kill -0 $first 2>/dev/null; then
        ok "while a write waits for polkit, status is answered ($ms ms)"
else
        not_ok "status while a write waits for polkit: exit $rc after $ms ms"
        sed 's/^/# /' "$dir/status.out"
fi
for k in $(seq 70); do
        launch $k
done
if wait_for 20 grep -q "refused to uid $admin_uid (pid [0-9]*): 64 calls wait for polkit already" \
        "$dir/cacheaged.log" &&
   grep -q "asking polkit.* (64 waiting)" "$dir/cacheaged.log" &&
   wait_for 10 sh -c "grep -l 'Too many calls wait for polkit (64); try again' '$dir'/w*.out"; then
        ok "with 64 writes waiting for polkit, the next is refused at once"
else
        not_ok "no write refused for the limit"
        grep "asking polkit\|refused" "$dir/cacheaged.log" | tail -3 | sed 's/^/# /'
fi
# Every one of the 71 reaches the daemon before polkitd goes on: on a loaded machine a busctl
# may start late, find the pile gone and be done, which is right but not what is counted here.
wait_for 60 sh -c "[ \$((\$(grep -c 'by uid $admin_uid (pid [0-9]*): asking polkit' '$dir/cacheaged.log') +
        \$(grep -c 'refused to uid $admin_uid (pid [0-9]*): 64 calls wait' '$dir/cacheaged.log'))) \
        -ge $((asked0 + refused0 + 71)) ]" ||
        echo "# not all 71 writes reached the daemon in 60 s"
kill -CONT "$polkit_pid"
held=$(($(date +%s) - stopped))
echo "# polkitd was stopped for $held s (the daemon's calls to it time out at 25 s)"
done_ok=0 refused=0 bad=0
n_w=0
for p in $waiting; do
        wait "$p"
        rc=$?
        if [ $rc = 0 ]; then
                done_ok=$((done_ok + 1))
        elif grep -q "Too many calls wait for polkit" "$dir/w$n_w.out"; then
                refused=$((refused + 1))
        else
                bad=$((bad + 1))
        fi
        n_w=$((n_w + 1))
done
# On a machine loaded enough to keep polkitd stopped 24 s or more, the first calls to it time
# out, and their writes are refused for it: that is the daemon's answer then, said so.
timed_out=$(grep -c "denied to uid $admin_uid (pid [0-9]*): polkit failed: " \
        "$dir/cacheaged.log")
[ "$held" -ge 24 ] || timed_out=0
if [ $((bad - timed_out)) = 0 ] && [ $refused -ge 1 ] && [ $((done_ok + timed_out)) = 64 ]; then
        ok "polkitd going on: the 64 waiting writes done ($timed_out timed out), only those refused ($refused) failed"
else
        not_ok "after polkitd went on: $done_ok done, $refused refused, $bad failed otherwise"
        cat "$dir"/w*.out | sort | uniq -c | sed 's/^/# /'
        grep "denied to uid $admin_uid" "$dir/cacheaged.log" | tail -3 | sed 's/^/# /'
fi

# Without polkit on the bus: root only, as before polkit.
kill "$polkit_pid"
wait "$polkit_pid" 2>/dev/null
polkit_pid=
wait_for 20 sh -c "! busctl --address='$addr' status org.freedesktop.PolicyKit1"
expect "polkitd stopped: ca-admin is refused" 4 $admin_uid rotate alpha
if grep -q "Rotate denied to uid $admin_uid (pid [0-9]*): not root, and polkit is not running" "$dir/cacheaged.log"; then
        ok "the daemon says polkit is not running"
else
        not_ok "no word of polkit's absence in the log"
fi
expect "polkitd stopped: root still rotates" 0 0 rotate alpha

bus_daemon_stop
tap_end
