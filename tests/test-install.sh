#!/bin/sh
# libcacheage as installed, seen from outside the tree: the build is installed into a
# temporary DESTDIR, then
#   1. the library exports exactly the functions its installed headers declare, each at
#      version CACHEAGE_0 (lib/libcacheage.sym), and nothing else;
#   2. doc/plugins.md's "Writing an adapter" guide shows tests/plugin-example.c: its C blocks,
#      in order, are that file from its first #include on (blank lines aside);
#   3. that file, as installed among the examples, builds into a plugin with the installed
#      headers only, as the guide says (pkg-config --cflags --libs libcacheage,
#      -fvisibility=hidden), and the plugin exports cacheage_plugin and nothing else;
#   4. the unit lies in a directory systemd loads units from (systemd-analyze unit-paths), and
#      every man page its Documentation= names is installed;
#   5. the D-Bus activation file names the unit's bus name, and the unit's alias as its
#      SystemdService=;
#   6. pkg-config's line for libcacheage is enough for a plugin that uses libevent (the host's
#      event base): it compiles and links against libevent;
#   7. debian/libcacheage0.symbols lists exactly the symbols the library exports, with their
#      version, so that an ABI change is a change of that file (the .deb build checks it again,
#      strictly: scripts/deb.sh);
#   8. the polkit action is where polkitd reads actions, defines the action the daemon asks
#      about (bus-def.h) with auth_admin_keep for everyone, and the example rule names it.
# Usage: test-install.sh BUILD_DIR SOURCE_DIR PREFIX LIBDIR INCLUDEDIR DATADIR MANDIR CC...
set -eu
build=$1 src=$2 prefix=$3 libdir=$4 includedir=$5 datadir=$6 mandir=$7
shift 7
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $includedir in /*) ;; *) includedir=$prefix/$includedir ;; esac
case $datadir in /*) ;; *) datadir=$prefix/$datadir ;; esac
case $mandir in /*) ;; *) mandir=$prefix/$mandir ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

echo "1..8"
if ! meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1; then
    sed 's/^/# /' "$tmp/install.log"
    echo "Bail out! meson install failed"
    exit 1
fi
lib=$dest$libdir/libcacheage.so
headers=$dest$includedir/cacheage

# 1. Exported = declared. GCC's -aux-info lists every function a translation unit declares,
# with the header it comes from; static inline ones are not exported and say "static".
if "$@" -aux-info "$tmp/aux" -fsyntax-only -x c /dev/null 2>/dev/null; then
    for h in "$headers"/*.h; do
        echo "#include <cacheage/$(basename "$h")>"
    done >"$tmp/all.c"
    "$@" -I"$dest$includedir" -aux-info "$tmp/aux" -fsyntax-only "$tmp/all.c"
    grep -F "$headers/" "$tmp/aux" | grep ' extern ' |
        sed -E 's|^/\*[^*]*\*/ extern [^(]*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*|\1|' | sort -u >"$tmp/declared"
    nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/exported"
    unversioned=$(objdump -T "$lib" | awk '/ g +(DF|DO) \.(text|data|rodata|bss)/ && $0 !~ /CACHEAGE_0/' | wc -l)
    if [ -s "$tmp/declared" ] && cmp -s "$tmp/declared" "$tmp/exported" && [ "$unversioned" = 0 ]; then
        echo "ok 1 - libcacheage exports the $(wc -l <"$tmp/exported") functions its headers declare, at CACHEAGE_0"
    else
        echo "not ok 1 - exported symbols differ from the installed headers' functions"
        diff "$tmp/declared" "$tmp/exported" | sed 's/^/# /' || true
        echo "# symbols without version CACHEAGE_0: $unversioned"
    fi
else
    echo "ok 1 # SKIP the compiler has no -aux-info (GCC only)"
fi

# 2. The guide's C blocks are pieces of the example, in order.
if python3 - "$src/doc/plugins.md" "$src/tests/plugin-example.c" >"$tmp/guide.log" 2>&1 <<'PY'
import re, sys
readme = open(sys.argv[1]).read()
example = open(sys.argv[2]).read()
m = re.search(r"^## Writing an adapter\n(.*?)(?=^#{1,6} |\Z)", readme, re.M | re.S)
if not m:
    sys.exit("no '## Writing an adapter' section in doc/plugins.md")
blocks = re.findall(r"^```c\n(.*?)^```", m.group(1), re.M | re.S)
if len(blocks) < 3:
    sys.exit("the guide has %d C blocks" % len(blocks))
# Together, in order, the blocks are the file from its first #include on: nothing is left
# out that a reader would need.
body = example[example.index("#include"):]
shown = "\n".join(b.strip("\n") + "\n" for b in blocks)
if [l for l in shown.splitlines() if l] != [l for l in body.splitlines() if l]:
    import difflib
    sys.exit("the guide's C blocks are not tests/plugin-example.c from its first #include:\n" +
             "".join(difflib.unified_diff(body.splitlines(True), shown.splitlines(True),
                                          "plugin-example.c", "doc/plugins.md guide")))
print("%d blocks" % len(blocks))
PY
then
    echo "ok 2 - doc/plugins.md's guide shows tests/plugin-example.c ($(cat "$tmp/guide.log"))"
else
    echo "not ok 2 - doc/plugins.md's guide and tests/plugin-example.c differ"
    sed 's/^/# /' "$tmp/guide.log"
fi

# 3. The example as installed, from the installed headers alone, built as the guide says.
example=$dest$datadir/doc/cacheage/examples/plugin-example.c
pc=$(PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$dest$libdir/pkgconfig \
    pkg-config --cflags --libs libcacheage)
if ! cmp -s "$example" "$src/tests/plugin-example.c"; then
    echo "not ok 3 - $example is not installed, or is not tests/plugin-example.c"
# shellcheck disable=SC2086 # pc: pkg-config's flags, split on purpose
elif "$@" -shared -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter -Werror \
        -o "$tmp/example.so" "$example" $pc >"$tmp/cc.log" 2>&1; then
    exported=$(nm -D --defined-only "$tmp/example.so" | awk '$2 != "A" && $3 !~ /^_(init|fini)$/ { print $3 }')
    if [ "$exported" = cacheage_plugin ]; then
        echo "ok 3 - the example builds from the installed headers and exports only cacheage_plugin"
    else
        echo "not ok 3 - the example exports: $exported"
    fi
else
    echo "not ok 3 - the example does not build with: $pc"
    sed 's/^/# /' "$tmp/cc.log"
fi

# 4. The unit where systemd looks, and the man pages it points at.
units=$(find "$dest" -name cacheaged.service -path '*/systemd/system/*')
unitdir=$(dirname "${units:-/nonexistent/x}")
unitdir=${unitdir#"$dest"}
if [ -z "$units" ] || [ "$(printf '%s\n' "$units" | wc -l)" != 1 ]; then
    echo "not ok 4 - cacheaged.service installed $(printf '%s\n' "$units" | grep -c .) times"
elif ! systemd-analyze unit-paths 2>/dev/null | grep -qxF "$unitdir"; then
    echo "not ok 4 - the unit is in $unitdir, which is not among systemd-analyze unit-paths"
elif ! grep -q '^Documentation=man:' "$units"; then
    echo "not ok 4 - the unit has no Documentation= man page"
else
    missing=
    for doc in $(sed -n 's/^Documentation=//p' "$units"); do
        page=${doc#man:}
        name=${page%%(*} section=${page#*(}
        section=${section%)}
        [ -f "$dest$mandir/man$section/$name.$section" ] || missing="$missing $doc"
    done
    if [ -n "$missing" ]; then
        echo "not ok 4 - Documentation= names pages that are not installed:$missing"
    else
        echo "ok 4 - the unit is in $unitdir (systemd's unit path) and its man pages are installed"
    fi
fi

# 5. D-Bus activation goes through systemd, to this unit.
activation=$dest$datadir/dbus-1/system-services/org.cacheage.CacheAge1.service
busname=$(sed -n 's/^BusName=//p' "$units" 2>/dev/null)
alias=$(sed -n 's/^Alias=//p' "$units" 2>/dev/null)
if [ ! -f "$activation" ]; then
    echo "not ok 5 - no $activation"
elif [ -z "$busname" ] || [ "$(sed -n 's/^Name=//p' "$activation")" != "$busname" ] ||
     [ "$(sed -n 's/^SystemdService=//p' "$activation")" != "$alias" ] ||
     [ "$alias" != "dbus-$busname.service" ] ||
     [ "$(sed -n 's/^User=//p' "$activation")" != root ]; then
    echo "not ok 5 - the activation file and the unit disagree (BusName=$busname, Alias=$alias):"
    sed 's/^/# /' "$activation"
else
    echo "ok 5 - $busname is activated through systemd's $alias"
fi

# 6. A plugin that does its I/O on the host's event base, with pkg-config's line only.
cat >"$tmp/evplugin.c" <<'EOF'
#include <event2/event.h>
#include <cacheage/plugin.h>

const char *evplugin_method(struct ca_host *host);
const char *evplugin_method(struct ca_host *host)
{
        return event_base_get_method(ca_host_event_base(host));
}
EOF
# shellcheck disable=SC2086 # pc: pkg-config's flags, split on purpose
if "$@" -shared -fPIC -Wall -Werror -Wl,--no-undefined -o "$tmp/evplugin.so" "$tmp/evplugin.c" \
        $pc >"$tmp/ev.log" 2>&1 && readelf -d "$tmp/evplugin.so" | grep -q 'NEEDED.*libevent'; then
    echo "ok 6 - pkg-config --cflags --libs libcacheage brings libevent: $pc"
else
    echo "not ok 6 - a plugin using libevent does not build with: $pc"
    sed 's/^/# /' "$tmp/ev.log"
fi

# 7. The symbols file tracks the ABI.
objdump -T "$lib" | awk '$NF ~ /^ca_|^__ca_/ && $0 ~ / g / { print $NF "@" $(NF-1) }' | sort >"$tmp/abi"
objdump -T "$lib" | awk '$NF ~ /^CACHEAGE_/ { print $NF "@" $NF }' | sort -u >>"$tmp/abi"
sort "$tmp/abi" -o "$tmp/abi"
sed -n 's/^ \([^ ]*\) .*/\1/p' "$src/debian/libcacheage0.symbols" | sort >"$tmp/listed"
if [ -s "$tmp/abi" ] && cmp -s "$tmp/abi" "$tmp/listed"; then
    echo "ok 7 - debian/libcacheage0.symbols lists the $(wc -l <"$tmp/abi") exported symbols"
else
    echo "not ok 7 - debian/libcacheage0.symbols and the library's symbols differ (< exported, > listed):"
    diff "$tmp/abi" "$tmp/listed" | sed 's/^/# /' || true
fi

# 8. The polkit action, where polkitd reads them ($datadir/polkit-1/actions), as the daemon names it.
policy=$dest$datadir/polkit-1/actions/org.cacheage.CacheAge1.policy
action=$(sed -n 's/^#define CA_POLKIT_ACTION_MANAGE "\(.*\)"$/\1/p' "$src/daemon/bus-def.h")
rules=$dest$datadir/doc/cacheage/examples/50-cacheage.rules
if [ -n "$action" ] && [ -f "$rules" ] && grep -q "action.id == \"$action\"" "$rules" &&
   python3 - "$policy" "$action" <<'EOF'
import sys
import xml.etree.ElementTree as ET

action = [a for a in ET.parse(sys.argv[1]).getroot().iter("action") if a.get("id") == sys.argv[2]]
defaults = {d.tag: d.text for d in action[0].find("defaults")} if action else {}
sys.exit(0 if defaults == {k: "auth_admin_keep" for k in
                           ("allow_any", "allow_inactive", "allow_active")} else 1)
EOF
then
    echo "ok 8 - $action (auth_admin_keep) in polkit's actions directory, and the example rule"
else
    echo "not ok 8 - no action '$action' with auth_admin_keep in $policy, or no example $rules"
fi
