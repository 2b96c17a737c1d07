#!/usr/bin/env bash
# Install what building and testing linerate needs on a fresh Debian 12 machine.
# Idempotent: installs only what is missing. Needs root for apt (CI and the dev machines are root).
set -euo pipefail

# Debian packages the build and the tests need (none are needed by the binary itself):
# iproute2 for the network-namespace tests, chromium to check doctor's HTML report,
# and, for the tests only, nothing else: the peer tools are installed by bench/compare.sh --install.
PACKAGES=(python3 iproute2 util-linux libfabric1)
if [ "${LINERATE_NO_BROWSER:-}" != 1 ]; then
    PACKAGES+=(chromium)
fi

need=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
    echo "setup: installing ${need[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to install ${need[*]} (run as root, or install them yourself)" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found; install the stable Rust toolchain (https://rustup.rs) and rerun" >&2
    exit 1
fi
for c in rustfmt clippy; do
    if ! cargo "$c" --version >/dev/null 2>&1; then
        rustup component add "$c" >&2
    fi
done
