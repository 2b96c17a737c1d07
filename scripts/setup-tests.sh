#!/usr/bin/env bash
# What the tests need on a fresh Debian 12 machine, on top of scripts/setup.sh (the build's):
# scripts/test.sh runs it. Idempotent: installs only what is missing. Needs root for apt
# (CI and the dev machines are root).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

# python3: fixtures/sysfs/build.py --check; iproute2, util-linux: the network-namespace tests;
# libfabric1: the RDMA tests; chromium: checks doctor's HTML report (LINERATE_NO_BROWSER=1 leaves
# it out); man-db, bash-completion, systemd (systemd-analyze): scripts/package-test.sh, which checks
# the .deb's man pages, completion and unit; prometheus (promtool check metrics, promtool test rules): soak's text file and its PromQL recipe
# for node_exporter; netplan.io (`netplan generate --root-dir`) and procps (`sysctl -p`):
# crates/linerate-cli/tests/setup_cli.rs checks what `setup` writes with them. The peer tools are
# bench/compare.sh --install's.
PACKAGES=(python3 iproute2 util-linux libfabric1 man-db bash-completion systemd prometheus netplan.io procps)
# openmpi-bin (mpirun, with libpmix2) and pdsh: the launcher tests of `linerate mesh`
# (crates/linerate-cluster/tests/pmix.rs, crates/linerate-cli/tests/launchers.rs).
PACKAGES+=(openmpi-bin pdsh)
# openssh-server (sshd, started by the test itself on 127.0.0.1 with its own keys) and
# openssh-client (ssh, ssh-keygen): the `--ssh` tests (crates/linerate-cli/tests/ssh_far_end.rs,
# crates/linerate-ssh/tests/iperf3_over_ssh.rs); iperf3: the latter's far end and stock client,
# a stock iperf3 client against `linerate serve` (crates/linerate-cli/tests/bench_loopback.rs,
# netns_iperf3_serve.rs), and the stock `iperf3 -s` that `bench --iperf3` and `doctor --iperf3`
# measure against (crates/linerate-cli/tests/netns_iperf3.rs, ssh_far_end.rs).
PACKAGES+=(openssh-server openssh-client iperf3)
# tmux: crates/linerate-cli/tests/watch_tmux.rs runs `linerate watch`'s screen in a tmux server of its
# own and reads it back with capture-pane (keys, resize, the terminal restored after q and SIGTERM).
PACKAGES+=(tmux)
# ethtool: what probe reads below the port is set against ethtool's own answer on this machine's
# NICs (crates/linerate-inventory/tests/phy_live.rs) and in the lab's guests, which run this
# root's binaries (crates/linerate-cli/tests/lab_phy.rs).
PACKAGES+=(ethtool)
# lintian (with dpkg-dev, binutils: dpkg-parsechangelog, readelf) and systemd-container
# (systemd-nspawn: the throwaway system the package is installed in): scripts/package-test.sh.
PACKAGES+=(lintian dpkg-dev binutils systemd-container)
# rpm (rpmbuild, rpm2cpio), rpmlint and cpio: scripts/package.sh builds the .rpm with rpmbuild,
# scripts/package-test.sh checks it with rpmlint and unpacks it. debootstrap: the Debian 11 root
# the portable build is tested in (linerate_testkit::debian, made once and cached under
# /var/cache/linerate-tests). busybox-static: the `--ssh-copy` script is checked under busybox sh
# as well as dash and bash (crates/linerate-ssh/src/copy.rs).
PACKAGES+=(rpm rpmlint cpio debootstrap busybox-static)
# slurm-wlm (slurmctld, slurmd, srun, scancel), munge (munged) and libpmix-dev (the libpmix.so
# that Slurm's mpi/pmix plugin loads): crates/linerate-cli/tests/slurm.rs runs a single-node
# cluster of its own in a temporary directory (its own munge key and socket, its own ports); the
# packages' system services are not used (slurmd and slurmctld do not start without
# /etc/slurm/slurm.conf).
PACKAGES+=(slurm-wlm munge libpmix-dev)
# The lab (crates/linerate-lab, docs/lab.md): guests of Debian's stock kernel under QEMU, booted by
# virtme-ng on a read-only snapshot of this root, with soft-RoCE. qemu-system-x86 (TCG where KVM
# cannot boot a stock kernel), linux-image-amd64 (the guests' kernel: rdma_rxe, sch_netem,
# rpcrdma, nfsd; installing it does not change the running kernel), busybox-static (virtme-ng's
# initramfs), rdma-core (rdma, the rxe devices), ibverbs-utils (ibv_devinfo), perftest (ib_*_bw,
# ib_write_lat), libfabric-bin (fi_info), iputils-ping (a wire carries traffic), pciutils (lspci
# -vv, compared with probe in the guests). Without recommends: the kernel's would pull firmware.
LAB_PACKAGES=(qemu-system-x86 linux-image-amd64 busybox-static rdma-core ibverbs-utils perftest libfabric-bin iputils-ping pciutils)
if [ "${LINERATE_NO_LAB:-}" != 1 ]; then
    lab_need=()
    for p in "${LAB_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || lab_need+=("$p")
    done
    if ((${#lab_need[@]})); then
        echo "setup-tests: installing the lab's ${lab_need[*]}" >&2
        if [ "$(id -u)" -ne 0 ]; then
            echo "setup-tests: need root to install ${lab_need[*]} (run as root, or install them yourself)" >&2
            exit 1
        fi
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lab_need[@]}" >/dev/null
    fi
    # nfs-kernel-server (rpc.nfsd, rpc.mountd, exportfs, rpcbind, mount.nfs) and fio: NFS over
    # RDMA in the lab (crates/linerate-cli/tests/lab_nfs.rs, bench/nfs_rdma_fio.sh). The guests
    # run this root read-only, so the programs are installed here; nothing of NFS may run or be
    # enabled on this machine: a temporary policy-rc.d (exit 101) keeps the packages' scripts
    # from starting services (an existing one is left alone), and the units of the packages this
    # run installed are disabled and stopped afterwards (systemd only; CI is a fresh machine).
    nfs_need=()
    for p in nfs-kernel-server fio; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || nfs_need+=("$p")
    done
    if ((${#nfs_need[@]})); then
        echo "setup-tests: installing ${nfs_need[*]} for the lab's NFS (no service started here)" >&2
        if [ "$(id -u)" -ne 0 ]; then
            echo "setup-tests: need root to install ${nfs_need[*]} (run as root, or install them yourself)" >&2
            exit 1
        fi
        had=()
        for p in nfs-kernel-server nfs-common rpcbind; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && had+=("$p")
        done
        policy=/usr/sbin/policy-rc.d
        made_policy=0
        if [ ! -e "$policy" ]; then
            printf '#!/bin/sh\n# setup-tests: no service starts while the lab'"'"'s NFS packages install\nexit 101\n' >"$policy"
            chmod 755 "$policy"
            made_policy=1
        fi
        rc=0
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${nfs_need[@]}" >/dev/null || rc=$?
        [ "$made_policy" = 1 ] && rm -f "$policy"
        [ "$rc" = 0 ] || exit "$rc"
        if [ -d /run/systemd/system ]; then
            units=()
            [[ " ${had[*]} " == *" nfs-kernel-server "* ]] || units+=(nfs-server.service nfs-mountd.service nfs-idmapd.service nfsdcld.service)
            [[ " ${had[*]} " == *" nfs-common "* ]] || units+=(rpc-statd.service nfs-client.target rpc-statd-notify.service)
            [[ " ${had[*]} " == *" rpcbind "* ]] || units+=(rpcbind.service rpcbind.socket)
            for u in "${units[@]}"; do
                systemctl disable --now --quiet "$u" 2>/dev/null || true
            done
            for u in nfs-server rpcbind; do
                if [[ " ${had[*]} " != *" ${u/nfs-server/nfs-kernel-server} "* ]] && systemctl is-active --quiet "$u"; then
                    echo "setup-tests: $u is still active after its package was installed" >&2
                    exit 1
                fi
            done
        fi
    fi
    # The lab's other kernels (docs/lab.md, "The kernels"): Debian 11's 5.10 (bullseye and its
    # security updates) and the 6.12 of Debian 12's backports, beside linux-image-amd64's 6.1.
    # Installing a kernel package does not change the running kernel. The suites are read
    # through an apt configuration of their own in a temporary directory, on the mirrors this
    # machine's apt already uses: this machine's apt sources are not changed, so nothing else
    # can be upgraded from them later, and the install itself is refused unless apt would
    # install that one kernel package and nothing else. No initramfs is made (virtme-ng makes
    # its own). The newest build of each series is taken; LINERATE_LAB_KERNELS (the series the
    # tests boot, 5.10,6.1,6.12 by default) says which series to install.
    install_lab_kernel() {
        local series="$1" suites="$2" pattern="$3"
        local f
        for f in /boot/vmlinuz-"$series".*; do
            [ -f "$f" ] && [ -f "/lib/modules/${f#/boot/vmlinuz-}/modules.dep" ] && return 0
        done
        if [ "$(id -u)" -ne 0 ]; then
            echo "setup-tests: need root to install the lab's kernel $series (run as root)" >&2
            exit 1
        fi
        local debian security
        debian=$(apt-get indextargets --format '$(REPO_URI)' 'Codename: bookworm' 'Identifier: Packages' | head -1)
        security=$(apt-get indextargets --format '$(REPO_URI)' 'Codename: bookworm-security' 'Identifier: Packages' | head -1)
        if [ -z "$debian" ]; then
            echo "setup-tests: the lab's kernel $series comes from Debian's archive, and this machine's apt has no Debian 12 (bookworm) source to find its mirror from" >&2
            exit 1
        fi
        local apt_dir
        apt_dir=$(mktemp -d)
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/prefs"
        # apt downloads as its own user, _apt, where it can write.
        chmod 755 "$apt_dir"
        chown -R _apt:root "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" 2>/dev/null || true
        local s
        for s in $suites; do
            case "$s" in
                *-security)
                    [ -n "$security" ] && echo "deb ${security%/} $s main" ;;
                *) echo "deb ${debian%/} $s main" ;;
            esac
        done >"$apt_dir/sources.list"
        local apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/none"
            -o "Dir::Etc::PreferencesParts=$apt_dir/prefs" -o "Dir::State::Lists=$apt_dir/lists"
            -o "Dir::Cache=$apt_dir/cache")
        echo "setup-tests: installing the lab's kernel $series (from $suites)" >&2
        apt-get "${apt_opts[@]}" update -qq
        local pkg
        pkg=$(apt-cache "${apt_opts[@]}" pkgnames linux-image- | grep -E "^linux-image-$pattern-amd64\$" | sort -V | tail -1)
        if [ -z "$pkg" ]; then
            echo "setup-tests: no linux-image-$series package in $suites" >&2
            rm -rf "$apt_dir"
            exit 1
        fi
        # Nothing from these suites but the kernel package itself.
        printf 'Package: *\nPin: release *\nPin-Priority: -1\n\nPackage: %s\nPin: release *\nPin-Priority: 500\n' "$pkg" >"$apt_dir/prefs/lab-kernel.pref"
        local plan
        plan=$(apt-get "${apt_opts[@]}" -s install --no-install-recommends "$pkg" | grep '^Inst ' || true)
        if [ "$(printf '%s\n' "$plan" | grep -c '^Inst ')" != 1 ] || ! printf '%s\n' "$plan" | grep -q "^Inst $pkg "; then
            echo "setup-tests: installing $pkg would change more than that package; apt's plan:" >&2
            printf '%s\n' "$plan" >&2
            rm -rf "$apt_dir"
            exit 1
        fi
        INITRD=No DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "$pkg" >/dev/null
        rm -rf "$apt_dir"
    }
    kernels=",${LINERATE_LAB_KERNELS:-5.10,6.1,6.12},"
    [[ "$kernels" == *",5.10,"* ]] && install_lab_kernel 5.10 "bullseye bullseye-security" '5\.10\.0-[0-9]+'
    [[ "$kernels" == *",6.12,"* ]] && install_lab_kernel 6.12 "bookworm-backports" '6\.12\.[0-9]+\+deb12(\.[0-9]+)?'
    # virtme-ng from PyPI, pinned, in a virtual environment of its own (the lab looks for
    # /opt/linerate-lab/venv/bin/vng first; LINERATE_LAB_VNG names another).
    VNG_VERSION=1.42
    LAB_VENV=/opt/linerate-lab/venv
    if ! "$LAB_VENV/bin/vng" --version 2>/dev/null | grep -qx "virtme-ng $VNG_VERSION"; then
        echo "setup-tests: installing virtme-ng $VNG_VERSION in $LAB_VENV (pip)" >&2
        if ! python3 -m venv "$LAB_VENV" 2>/dev/null; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$LAB_VENV"
        fi
        "$LAB_VENV/bin/pip" install -q --disable-pip-version-check "virtme-ng==$VNG_VERSION"
    fi
    # netdevsim, which Debian's kernels do not build, out of tree for the lab's default kernel
    # (6.1, which crates/linerate-cli/tests/lab_phy.rs boots and loads it in):
    # scripts/build-netdevsim.sh installs make, linux-source-6.1 (139 MB) and that release's
    # headers, and builds it once. On a fresh machine about a minute, mostly the download and
    # unpacking the source; nothing to do when the module is there. Where it cannot be built (a
    # kernel whose headers the archive no longer has), lab_phy records a skip naming the command,
    # which CI turns into a failure: there it stops the setup at once.
    if ! scripts/build-netdevsim.sh; then
        if [ "${CI:-}" = true ]; then
            echo "setup-tests: netdevsim could not be built for the lab's kernel (see above)" >&2
            exit 1
        fi
        echo "setup-tests: netdevsim not built (see above); lab_phy skips its netdevsim part" >&2
    fi
fi

# The portable build (scripts/package.sh): cargo-zigbuild links with zig against glibc 2.28's
# symbols, so the binary runs on RHEL 8, Debian 11 and later whatever this machine's glibc is.
# Both from PyPI, pinned, in a virtual environment of their own (LINERATE_ZIG_VENV names
# another): cargo-zigbuild is the maintained cargo front end for zig's linker, and the ziglang
# wheel carries zig itself, with the glibc versions' stubs, so nothing but PyPI is reached.
ZIGBUILD_VERSION=0.24.1
ZIG_VERSION=0.15.2
ZIG_VENV=${LINERATE_ZIG_VENV:-/opt/linerate-zig/venv}
if ! "$ZIG_VENV/bin/cargo-zigbuild" --version 2>/dev/null | grep -qx "cargo-zigbuild $ZIGBUILD_VERSION" ||
    [ "$("$ZIG_VENV/bin/python3" -m ziglang version 2>/dev/null)" != "$ZIG_VERSION" ]; then
    echo "setup-tests: installing cargo-zigbuild $ZIGBUILD_VERSION and zig $ZIG_VERSION in $ZIG_VENV (pip)" >&2
    if ! python3 -m venv "$ZIG_VENV" 2>/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        python3 -m venv "$ZIG_VENV"
    fi
    "$ZIG_VENV/bin/pip" install -q --disable-pip-version-check \
        "cargo-zigbuild==$ZIGBUILD_VERSION" "ziglang==$ZIG_VERSION"
fi

if [ "${LINERATE_NO_BROWSER:-}" != 1 ]; then
    PACKAGES+=(chromium)
fi

need=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
    echo "setup-tests: installing ${need[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup-tests: need root to install ${need[*]} (run as root, or install them yourself)" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

for c in rustfmt clippy; do
    if ! cargo "$c" --version >/dev/null 2>&1; then
        rustup component add "$c" >&2
    fi
done

# Cargo plugins, from the crate registry at pinned minor versions (what they write is part of what
# the tests check): cargo-deb builds the .deb that scripts/package-test.sh checks; cargo-about
# writes its third-party licences (its binary needs the `cli` feature); cargo-deny checks the
# crates' licences, duplicates and sources (scripts/test.sh, deny.toml).
install_plugin() {
    local cmd="$1" crate="$2" version="$3"
    shift 3
    if ! cargo "$cmd" --version 2>/dev/null | grep -q "^$crate ${version#\~}"; then
        echo "setup-tests: installing $crate $version (cargo install, a few minutes)" >&2
        cargo install "$crate" --version "$version" --locked --quiet "$@"
    fi
}
install_plugin deb cargo-deb '~3.8'
install_plugin about cargo-about '~0.9' --features cli
install_plugin deny cargo-deny '~0.20'

# Every crate of the lock file, for every platform: cargo-deny and cargo-about then run offline
# (cargo metadata needs the crates of other platforms too).
cargo fetch --locked --quiet
