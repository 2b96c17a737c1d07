#!/usr/bin/env bash
# Set up, build, and check this machine: no second host needed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -q
exec ./target/release/linerate probe "$@"
