#!/bin/sh
# What the sandbox drop-ins (systemd/sandbox/) claim about the kernel, checked on this kernel,
# with the unit's own restrictions: uid 0, no capability (CapabilityBoundingSet=), and for
# PrivateUsers=yes a user namespace that maps root to root only.
#   1. /proc/sys/vm/drop_caches: root may write it with no capability, in such a namespace too
#      (probed with "0", which the kernel refuses as a value only after the permission check:
#      nothing is dropped);
#   2. a memory cgroup's reclaim file (v1 memory.force_empty, v2 memory.reclaim) likewise, on
#      an empty group made for the test: kernel-reclaim.conf keeps PrivateUsers=yes and no
#      capability, and only lifts the read-only mounts;
#   3. a file of another user in that user's directory cannot be deleted by root without
#      CAP_DAC_OVERRIDE, nor with it inside the namespace (the owner is not mapped), and can
#      with it outside: files.conf sets PrivateUsers=no and that capability.
#   4. metrics.conf: with the file system as ProtectSystem=strict leaves it (everything
#      read-only) and the drop-in's ReadWritePaths= made writable again, as systemd mounts
#      them, in a private mount namespace with a scratch /var/lib: cacheaged with no capability
#      writes its metrics_file in that directory, and fails (logged) anywhere else.
#   5. redis-socket.conf: a redis-server of the test's own, as nobody, on a unix socket of mode
#      770 (unixsocketperm 770): root without capabilities cannot connect to it, neither in a
#      private user namespace, nor in the socket's group in one; in that group, outside one,
#      it can, which is what the drop-in sets (PrivateUsers=no, SupplementaryGroups=).
# Usage: test-sandbox.sh KERNEL_DROPIN FILES_DROPIN METRICS_DROPIN REDIS_SOCKET_DROPIN (the built
# drop-ins), with $CACHEAGED and $CA_TEST_PLUGIN_DIR. Needs root.
set -u
kernel_dropin=$1 files_dropin=$2 metrics_dropin=$3 redis_socket_dropin=$4
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
    echo "1..0 # SKIP needs root, unshare and setpriv"
    exit 0
fi
tmp=$(mktemp -d)
group=
redis_pid=
cleanup() {
    [ -n "$group" ] && rmdir "$group" 2>/dev/null
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# As the unit runs: no capability at all, and (with "userns") in a private user namespace.
nocaps() { setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"; }
userns() { unshare --user --map-root-user -- setpriv --inh-caps=-all --bounding-set=-all -- "$@"; }

echo "1..7"
# 1. The errno of writing "0": EINVAL once allowed, EACCES/EPERM/EROFS when not.
probe() {
    "$@" /usr/bin/python3 -c '
import errno, os
try:
    fd = os.open("/proc/sys/vm/drop_caches", os.O_WRONLY)
    os.write(fd, b"0\n")
    print("written")
except OSError as e:
    print(errno.errorcode[e.errno])'
}
plain=$(probe nocaps) inns=$(probe userns) nobody=$(probe setpriv --reuid=nobody --regid=nogroup --clear-groups)
if [ "$plain" = EINVAL ] && [ "$inns" = EINVAL ] && [ "$nobody" = EACCES ]; then
    echo "ok 1 - drop_caches: root writes it without capabilities, in a user namespace too (nobody: EACCES)"
else
    echo "not ok 1 - drop_caches: no capability $plain, user namespace $inns, nobody $nobody (expected EINVAL, EINVAL, EACCES)"
fi

# 2.
if [ -f /sys/fs/cgroup/memory/memory.force_empty ]; then
    group=/sys/fs/cgroup/memory/cacheage-test-$$
    file=memory.force_empty value=0
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    group=/sys/fs/cgroup/cacheage-test-$$
    file=memory.reclaim value=1M
fi
if [ -z "$group" ]; then
    echo "ok 2 # SKIP no memory cgroup controller"
elif ! mkdir "$group" 2>"$tmp/mkdir"; then
    echo "ok 2 # SKIP cannot make a memory cgroup: $(cat "$tmp/mkdir")"
    group=
elif nocaps sh -c "echo $value > $group/$file" 2>"$tmp/e1" &&
     userns sh -c "echo $value > $group/$file" 2>"$tmp/e2"; then
    echo "ok 2 - $file: root writes it without capabilities, in a user namespace too"
else
    echo "not ok 2 - $file refused: $(cat "$tmp/e1" "$tmp/e2")"
fi
if grep -q '^PrivateUsers=\|^CapabilityBoundingSet=' "$kernel_dropin"; then
    echo "not ok 3 - $kernel_dropin changes PrivateUsers= or the capabilities, which it needs not"
else
    echo "ok 3 - kernel-reclaim.conf keeps PrivateUsers=yes and no capability"
fi

# 3.
mkdir -p "$tmp/cache"
touch "$tmp/cache/a"
chown -R nobody:nogroup "$tmp/cache"
chmod 755 "$tmp/cache"
if nocaps rm -f "$tmp/cache/a" 2>/dev/null || [ ! -e "$tmp/cache/a" ]; then
    echo "not ok 4 - root deleted another user's file without CAP_DAC_OVERRIDE"
elif unshare --user --map-root-user -- rm -f "$tmp/cache/a" 2>/dev/null && [ ! -e "$tmp/cache/a" ]; then
    echo "not ok 4 - deleted in a user namespace: PrivateUsers=no would not be needed"
elif ! setpriv --inh-caps=-all --bounding-set=-all,+dac_override,+fowner -- rm -f "$tmp/cache/a" ||
     [ -e "$tmp/cache/a" ]; then
    echo "not ok 4 - CAP_DAC_OVERRIDE did not let root delete it"
elif ! grep -q '^PrivateUsers=no' "$files_dropin" || ! grep -q '^CapabilityBoundingSet=.*CAP_DAC_OVERRIDE' "$files_dropin"; then
    echo "not ok 4 - $files_dropin lacks PrivateUsers=no or CAP_DAC_OVERRIDE"
else
    echo "ok 4 - another user's files: CAP_DAC_OVERRIDE and no private user namespace, as files.conf says"
fi

# 4. metrics.conf: exactly one directory, the one the drop-in names, writable.
rw=$(sed -n 's/^ReadWritePaths=-\{0,1\}//p' "$metrics_dropin")
sandboxed_metrics() { # $1: metrics_file; prints "written" or the daemon's complaint
    cat > "$tmp/metrics.conf" <<CONF
[daemon]
plugin_dir = $CA_TEST_PLUGIN_DIR
idle_cpu_pressure = 0
idle_memory_pressure = 0
metrics_file = $1
[cache m]
adapter = fixed
objects = 10
interval = 10ms
CONF
    # systemd's ProtectSystem=strict: the whole tree read-only; ReadWritePaths=: a bind mount of
    # the path made writable again. /var/lib is a scratch tmpfs here, holding the directory.
    unshare --mount --propagation private sh -c '
        mount -t tmpfs scratch /var/lib && mkdir -p "$2" /var/lib/elsewhere || exit 1
        mount --bind /var/lib /var/lib && mount -o remount,bind,ro /var/lib || exit 1
        mount --bind "$2" "$2" && mount -o remount,bind,rw "$2" || exit 1
        setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- \
            "$CACHEAGED" --config "$1" --bus none > "$3/metrics.log" 2>&1 &
        pid=$!
        i=0
        while [ $i -lt 500 ] && ! [ -s "$4" ] && ! grep -q "Failed to write metrics" "$3/metrics.log"; do
            sleep 0.02; i=$((i + 1))
        done
        kill $pid; wait $pid
        if [ -s "$4" ] && grep -q "^cacheage_rotations_total{cache=\"m\"" "$4"; then
            echo written
        else
            grep -o "Failed to write metrics.*" "$3/metrics.log" || echo "nothing: $(cat "$3/metrics.log")"
        fi' sh "$tmp/metrics.conf" "$rw" "$tmp" "$1"
}
inside=$(sandboxed_metrics "$rw/cacheage.prom")
outside=$(sandboxed_metrics /var/lib/elsewhere/cacheage.prom)
if [ "$rw" != /var/lib/prometheus/node-exporter ]; then
    echo "not ok 5 - metrics.conf makes '$rw' writable, not node_exporter's textfile directory"
elif [ "$inside" != written ]; then
    echo "not ok 5 - metrics_file in $rw under the sandbox: $inside"
else
    echo "ok 5 - metrics_file written in $rw, with the file system read-only but that directory"
fi
case $outside in
*"Read-only file system"*) echo "ok 6 - metrics_file elsewhere: $outside" ;;
*) echo "not ok 6 - metrics_file outside $rw under the sandbox: $outside (expected EROFS)" ;;
esac

# 7. redis-socket.conf: the socket's group, and no private user namespace.
mkdir "$tmp/redis"
chmod 711 "$tmp"          # nobody goes through to its own directory, and lists nothing
chmod 777 "$tmp/redis"
setpriv --reuid=nobody --regid=nogroup --clear-groups -- redis-server --port 0 --save '' \
    --appendonly no --dir "$tmp/redis" --unixsocket "$tmp/redis/redis.sock" \
    --unixsocketperm 770 > "$tmp/redis/log" 2>&1 &
redis_pid=$!
i=0
while [ $i -lt 500 ] && ! [ -S "$tmp/redis/redis.sock" ]; do sleep 0.02; i=$((i + 1)); done
gid=$(getent group nogroup | cut -d: -f3)
ping() { "$@" redis-cli -s "$tmp/redis/redis.sock" ping 2>&1 | tr -d '\n'; }
plain=$(ping nocaps) inns=$(ping userns)
ingroup=$(ping setpriv --groups="$gid" --inh-caps=-all --ambient-caps=-all --bounding-set=-all --)
inns_group=$(ping unshare --user --map-root-user -- setpriv --groups="$gid" --inh-caps=-all \
    --bounding-set=-all -- 2>/dev/null)
if ! [ -S "$tmp/redis/redis.sock" ]; then
    echo "not ok 7 - redis-server made no socket: $(cat "$tmp/redis/log")"
elif [ "$ingroup" != PONG ]; then
    echo "not ok 7 - root without capabilities in the socket's group: $ingroup (expected PONG)"
elif [ "$plain" = PONG ] || [ "$inns" = PONG ] || [ "$inns_group" = PONG ]; then
    echo "not ok 7 - connected without the group or in a user namespace: $plain / $inns / $inns_group"
elif ! grep -q '^PrivateUsers=no' "$redis_socket_dropin" ||
     ! grep -q '^SupplementaryGroups=redis' "$redis_socket_dropin"; then
    echo "not ok 7 - $redis_socket_dropin lacks PrivateUsers=no or SupplementaryGroups=redis"
else
    echo "ok 7 - a redis socket of mode 770: root without capabilities connects in its group, outside a user namespace only"
fi
