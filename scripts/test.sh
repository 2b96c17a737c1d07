#!/usr/bin/env bash
# Set up, then run every check CI runs: formatting, clippy, fixture trees, all tests, and the .deb
# built, installed, checked and removed (scripts/package-test.sh: as root with CI=true only).
set -euo pipefail
export CARGO_TERM_COLOR=never
cd "$(dirname "$0")/.."
scripts/setup-tests.sh
echo "== cargo fmt --check" >&2
cargo fmt --all --check
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== fixture trees match their generator" >&2
python3 fixtures/sysfs/build.py --check
echo "== cargo test" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
echo "== the Debian package" >&2
scripts/package-test.sh 2>&1 | tee -a "$log"
# One closing line for the whole workspace (cargo prints one per test binary) and the package test.
awk '/^test result:/ { p += $4; f += $6; i += $8 }
     /^package-test: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $2; f += $4; i += $6 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$log"
