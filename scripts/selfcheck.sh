#!/usr/bin/env bash
# Build, and check this machine with `linerate doctor`: no second host needed, nothing installed
# beyond what building needs (scripts/setup.sh).
# Extra arguments go to doctor (e.g. --quick, --report report.html, --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -q
exec ./target/release/linerate doctor "$@"
