# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What the VM lab's two scripts share (scripts/vm.sh: a command in a busybox guest;
# scripts/syslab.sh: a whole Debian system booted by systemd): the cache, and Debian's own
# kernels, found by package name in a private apt list (the system's sources are left alone),
# downloaded with apt-get download and unpacked with dpkg-deb, once, into the cache. Sourced,
# not run. The caller defines die MESSAGE (an error, exit 125) and unavailable MESSAGE (the
# lab cannot run here: a skip, or an error in CI).
#
#   vm_cache_init        sets $cache: $CACHEAGE_VM_CACHE, else /var/cache/cacheage-vm for root,
#                        else ${XDG_CACHE_HOME:-~/.cache}/cacheage-vm
#   vm_kernel KERNEL     sets $kdir, the kernel's unpacked tree: vmlinuz, config, and
#                        modules/NAME.ko (uncompressed) with modules/order, their insmod order:
#                        the virtio PCI transport, 9p over virtio, virtio_blk and ext4, with
#                        what they depend on
#   vm_kernel_refresh=1  look the kernel up again even when one is cached
#
# KERNEL: 6.1 (Debian 12's, bookworm), 6.12 (Debian 13's version, from bookworm-backports),
# trixie-6.12 (Debian 13's own, from trixie); any version prefix linux-image-amd64 has in those
# suites, with "trixie-" for Debian 13's.

vm_cache_init() {
        if [ -n "${CACHEAGE_VM_CACHE:-}" ]; then
                cache=$CACHEAGE_VM_CACHE
        elif [ "$(id -u)" -eq 0 ]; then
                cache=/var/cache/cacheage-vm
        else
                cache=${XDG_CACHE_HOME:-$HOME/.cache}/cacheage-vm
        fi
        mkdir -p "$cache/kernels"
}

# A kernel's unpacked tree: vmlinuz, config, modules/NAME.ko (uncompressed), modules/order.
vm_kdir_ready() { [ -f "$1/vmlinuz" ] && [ -f "$1/modules/order" ]; }

# The apt options of one distribution's private list ($1: bookworm or trixie), in vm_apt_opts.
vm_apt_setup() {
        local dist=$1 dir mirror key
        # bookworm's list keeps the directory it always had, so that caches stay valid
        if [ "$dist" = bookworm ]; then dir=$cache/apt; else dir=$cache/apt-$dist; fi
        mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
        vm_apt_opts=(-o "Dir::Etc::sourcelist=$dir/sources.list" -o Dir::Etc::sourceparts=-
                     -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
                     -o Dir::State::status=/dev/null -o Debug::NoLocking=1
                     -o APT::Sandbox::User="$(id -un)")
        mirror=${CACHEAGE_VM_MIRROR:-http://deb.debian.org}
        key=/usr/share/keyrings/debian-archive-keyring.gpg
        {
                echo "deb [signed-by=$key] $mirror/debian $dist main"
                echo "deb [signed-by=$key] $mirror/debian $dist-updates main"
                echo "deb [signed-by=$key] $mirror/debian-security $dist-security main"
                [ "$dist" != bookworm ] || echo "deb [signed-by=$key] $mirror/debian bookworm-backports main"
        } > "$dir/sources.list.new"
        mv "$dir/sources.list.new" "$dir/sources.list"
        vm_apt_log=$dir/update.log
}

# The modules the guest needs, with what they depend on (a .ko's "depends=", first), into $2:
# NAME.ko uncompressed and "order", the insmod order. Built-in ones are left out.
vm_pick_modules() {
        local tree=$1 out=$2 m
        declare -A path=() seen=()
        while read -r f; do
                m=${f##*/}; m=${m%%.ko*}; m=${m//-/_}
                path[$m]=$f
        done < <(find "$tree/kernel" -name '*.ko*')
        add() {
                local m=${1//-/_} d deps
                [ -z "${seen[$m]:-}" ] || return 0
                seen[$m]=1
                if [ -z "${path[$m]:-}" ]; then
                        grep -q "/${1}.ko\$\|/${m}.ko\$" "$tree/modules.builtin" && return 0
                        echo "vm: module $m is neither a module nor built in" >&2
                        return 1
                fi
                case ${path[$m]} in
                *.xz) xz -dc "${path[$m]}" > "$out/$m.ko" ;;
                *) cp "${path[$m]}" "$out/$m.ko" ;;
                esac
                deps=$(tr '\0' '\n' < "$out/$m.ko" | sed -n 's/^depends=//p' | tr ',' ' ')
                for d in $deps; do add "$d" || return 1; done
                echo "$m" >> "$out/order"
        }
        : > "$out/order"
        # virtio PCI transport, 9p over virtio, the disk, ext4 (and crc32c, its soft dependency)
        for m in virtio_pci 9pnet_virtio 9p virtio_blk crc32c_generic ext4; do
                add "$m" || return 1
        done
}

vm_fetch_kernel() { # $1: the distribution, $2: a version prefix; prints the unpacked tree's path
        local dist=$1 prefix=$2 version pkg deb tmp dir
        vm_apt_setup "$dist"
        apt-get -q "${vm_apt_opts[@]}" update >"$vm_apt_log" 2>&1 ||
                { cat "$vm_apt_log" >&2; return 1; }
        # madison lists the highest version first; the suite's kernel meta-package names it.
        version=$(apt-cache "${vm_apt_opts[@]}" madison linux-image-amd64 |
                  awk -F' *[|] *' -v p="$prefix." 'index($2, p) == 1 { print $2; exit }')
        [ -n "$version" ] || { echo "vm: no linux-image-amd64 $prefix.* in $dist's suites" >&2; return 1; }
        pkg=$(apt-cache "${vm_apt_opts[@]}" depends "linux-image-amd64=$version" |
              awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
        [ -n "$pkg" ] || { echo "vm: linux-image-amd64 $version names no kernel package" >&2; return 1; }
        dir=$cache/kernels/${pkg}_$version
        if ! vm_kdir_ready "$dir"; then
                tmp=$(mktemp -d "$cache/kernels/.unpack-XXXXXX")
                (cd "$tmp" && apt-get -q "${vm_apt_opts[@]}" download "$pkg=$version" >&2) ||
                        { rm -rf "$tmp"; return 1; }
                deb=$(ls "$tmp"/*.deb)
                echo "vm: unpacking $(basename "$deb")" >&2
                mkdir "$tmp/x" "$tmp/k" "$tmp/k/modules"
                dpkg-deb -x "$deb" "$tmp/x"
                cp "$tmp"/x/boot/vmlinuz-* "$tmp/k/vmlinuz"
                cp "$tmp"/x/boot/config-* "$tmp/k/config"
                # /lib/modules on Debian 12, /usr/lib/modules on 13 (merged /usr)
                vm_pick_modules "$(ls -d "$tmp"/x/lib/modules/* "$tmp"/x/usr/lib/modules/* 2>/dev/null | head -1)" \
                        "$tmp/k/modules" || { rm -rf "$tmp"; return 1; }
                rm -rf "$dir"
                mv "$tmp/k" "$dir"
                rm -rf "$tmp"
        fi
        echo "$dir"
}

vm_kernel() {
        local kernel=$1 dist=bookworm prefix=$1 alias_link=$cache/$1
        case $kernel in
        trixie-*) dist=trixie prefix=${kernel#trixie-} ;;
        esac
        # One look-up at a time: two guests starting together share the apt list, its sources
        # and the cache (the lock is held until the kernel is found; the runs go on side by
        # side).
        exec 9> "$cache/lock"
        flock 9
        kdir=
        if [ "${vm_kernel_refresh:-0}" = 0 ] && [ -L "$alias_link" ] &&
           vm_kdir_ready "$(readlink -f "$alias_link")"; then
                kdir=$(readlink -f "$alias_link")
        elif kdir=$(vm_fetch_kernel "$dist" "$prefix"); then
                ln -sfn "$kdir" "$alias_link"
        elif [ -L "$alias_link" ] && vm_kdir_ready "$(readlink -f "$alias_link")"; then
                echo "vm: cannot look $kernel up again: the cached kernel is used" >&2
                kdir=$(readlink -f "$alias_link")
        else
                exec 9>&-
                unavailable "kernel $kernel cannot be fetched (no network, or no such kernel)"
        fi
        exec 9>&-
}
