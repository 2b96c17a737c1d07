#!/usr/bin/env bash
# The Debian 11 (bullseye: glibc 2.31) root the portable build's tests run in
# (crates/linerate-cli/tests/portable_debian11.rs, through linerate-testkit's debian.rs, which
# runs this script): `debootstrap --variant=minbase` with openssh-server, made once and cached
# at $ROOT between runs. Under a lock, so a second caller waits for the first one's root rather
# than making its own; a root already complete returns at once. scripts/test.sh starts it beside
# clippy and the test build, which want the CPU while it mostly downloads, so the package test
# finds it made.
#
# Needs root and debootstrap. LINERATE_DEBIAN_MIRROR names another archive than Debian's.
set -euo pipefail
ROOT=${LINERATE_DEBIAN11_ROOT:-/var/cache/linerate-tests/debian11-minbase}
INCLUDE=openssh-server
MIRROR=${LINERATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
parent=$(dirname "$ROOT")
mkdir -p "$parent"
exec 9>"$parent/$(basename "$ROOT").lock"
flock 9
if [ -e "$ROOT/.linerate-complete" ]; then
    exit 0
fi
partial="$ROOT.partial"
rm -rf "$partial"
start=$SECONDS
if ! debootstrap --variant=minbase --include="$INCLUDE" bullseye "$partial" "$MIRROR" </dev/null; then
    echo "debian11-root: debootstrap bullseye from $MIRROR failed" >&2
    rm -rf "$partial"
    exit 1
fi
# The downloaded packages are not needed again.
chroot "$partial" apt-get clean || true
rm -rf "$ROOT"
mv "$partial" "$ROOT"
echo "debootstrap --variant=minbase --include=$INCLUDE bullseye in $((SECONDS - start)) s" >"$ROOT/.linerate-complete"
echo "debian11-root: made $ROOT in $((SECONDS - start)) s" >&2
