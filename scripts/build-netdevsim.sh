#!/usr/bin/env bash
# Build netdevsim, the kernel's simulated NIC, as an out-of-tree module for the lab's kernel
# (docs/lab.md), once, into /opt/linerate-lab/netdevsim/RELEASE/netdevsim.ko. Debian's kernels
# are built without it (`# CONFIG_NETDEVSIM is not set`); its source is in Debian's
# linux-source-MAJOR.MINOR package and builds against linux-headers-RELEASE (its dependencies,
# NET_DEVLINK, DEBUG_FS and PSAMPLE, are in Debian's config). The lab tests that use it
# (crates/linerate-cli/tests/lab_phy.rs) load it with `insmod` in the guest: FEC, pause with its
# statistics, rings, coalescing, channels and SR-IOV VFs with rate limits through the kernel's
# own ethtool and rtnetlink paths.
#
#   scripts/build-netdevsim.sh [RELEASE]     # default: the lab's kernel as linerate-lab picks
#                                            # it: $LINERATE_LAB_KERNEL (a release, an image or
#                                            # a series), else the newest 6.1 release under
#                                            # /boot with its modules (DEFAULT_KERNEL), else the
#                                            # newest
# Idempotent: nothing to do when the module is there. Needs root for apt and /opt.
set -euo pipefail

release=${1:-}
want=${LINERATE_LAB_KERNEL:-6.1}
want=${want##*/vmlinuz-}
if [ -z "$release" ]; then
    case $want in
    *-*) release=$want ;;
    *)
        newest=
        for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V -r); do
            r=${k##*/vmlinuz-}
            [ -d "/lib/modules/$r/kernel" ] || continue
            [ -n "$newest" ] || newest=$r
            case $r in "$want".*)
                release=$r
                break
                ;;
            esac
        done
        release=${release:-$newest}
        ;;
    esac
fi
if [ -z "$release" ]; then
    echo "build-netdevsim: no kernel under /boot with its modules installed (apt install linux-image-amd64)" >&2
    exit 2
fi
out=/opt/linerate-lab/netdevsim/$release
if [ -f "$out/netdevsim.ko" ]; then
    exit 0
fi
series=$(echo "$release" | cut -d. -f1,2)
need=()
# make: kbuild's; linux-headers-RELEASE brings the compiler the kernel was built with.
for p in make "linux-source-$series" "linux-headers-$release"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
    echo "build-netdevsim: installing ${need[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "build-netdevsim: need root to install ${need[*]}" >&2
        exit 1
    fi
    # Once more after refreshing the package lists when they do not know the packages yet.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }
fi
tarball=$(ls /usr/src/linux-source-"$series".tar.* 2>/dev/null | head -1)
if [ -z "$tarball" ]; then
    echo "build-netdevsim: no /usr/src/linux-source-$series.tar.* after installing linux-source-$series" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "build-netdevsim: building netdevsim for $release from $tarball (a few minutes)" >&2
tar -xf "$tarball" -C "$work" --wildcards "linux-source-$series/drivers/net/netdevsim/*"
src="$work/linux-source-$series/drivers/net/netdevsim"
make -s -C "/usr/src/linux-headers-$release" M="$src" CONFIG_NETDEVSIM=m modules >"$work/build.log" 2>&1 || {
    tail -20 "$work/build.log" >&2
    exit 1
}
mkdir -p "$out"
cp "$src/netdevsim.ko" "$out/netdevsim.ko.tmp"
mv "$out/netdevsim.ko.tmp" "$out/netdevsim.ko"
echo "build-netdevsim: $out/netdevsim.ko ($(modinfo -F vermagic "$out/netdevsim.ko"))" >&2
