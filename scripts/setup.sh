#!/usr/bin/env bash
# What building linerate needs, and nothing else (scripts/selfcheck.sh runs it): a Rust toolchain
# and a C linker. The binary itself needs no package at run time (libfabric only for RDMA).
# Test-only packages (Chromium, iproute2, libfabric1, man-db, cargo-deb, ...) are
# scripts/setup-tests.sh's. Idempotent: installs only what is missing.
set -euo pipefail

if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found; install the stable Rust toolchain (https://rustup.rs) and rerun" >&2
    exit 1
fi

# rustc links through `cc`; a fresh Debian with rustup from its site may not have one.
if ! command -v cc >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: no C linker (cc): install gcc and libc6-dev (as root: apt-get install gcc libc6-dev) and rerun" >&2
        exit 1
    fi
    echo "setup: installing gcc libc6-dev (rustc links with cc)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
fi
