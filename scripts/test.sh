#!/usr/bin/env bash
# Set up, then run every check CI runs: formatting, clippy, the crates' licences and sources
# (cargo deny), fixture trees, all tests, and the .deb built, checked by lintian, built again
# elsewhere to compare, installed in a throwaway system, exercised and purged
# (scripts/package-test.sh: as root; LINERATE_PACKAGE_TEST=0 leaves it out).
#
# A test that cannot run on this machine (no root, namespaces, tmpfs, Chromium, setpriv)
# records itself in $LINERATE_SKIP_LOG (linerate-testkit's `skip`): the closing line counts
# it as skipped, not passed, and lists it. With LINERATE_REQUIRE_PRIVILEGED=1 (set by
# .ci/run) such a test fails instead.
set -euo pipefail
export CARGO_TERM_COLOR=never
cd "$(dirname "$0")/.."
scripts/setup-tests.sh
echo "== cargo fmt --check" >&2
cargo fmt --all --check
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo deny: licences, duplicate crates, sources (deny.toml)" >&2
# Offline: scripts/setup-tests.sh fetched the crates. The advisory check needs RustSec's database
# from the internet: `cargo deny check advisories` on a machine that has it (docs/packaging.md).
cargo deny --offline --locked check licenses bans sources
echo "== fixture trees match their generator" >&2
python3 fixtures/sysfs/build.py --check
echo "== cargo test" >&2
log=$(mktemp)
skips=$(mktemp)
trap 'rm -f "$log" "$skips"' EXIT
export LINERATE_SKIP_LOG="$skips"
status=0
# --no-fail-fast: every test binary runs, so the closing line counts the whole suite.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log" || status=$?
# A recorded skip returned normally, so cargo counted it as passed: move it to the skipped count.
k=$(grep -c . "$skips" || true)
echo "== the Debian package" >&2
# The package test counts its own skip in its closing line, so it does not write the skip log.
LINERATE_SKIP_LOG= scripts/package-test.sh 2>&1 | tee -a "$log" || status=$?
if [ "$k" -gt 0 ]; then
    echo "skipped (could not run here):"
    sed 's/^/  /' "$skips"
fi
# One closing line for the whole workspace (cargo prints one per test binary) and the package test.
# "skipped" adds up the tests ignored by design (#[ignore]: run by hand or by another test), the
# tests that could not run here (listed above) and a skipped package test; the line above it
# tells them apart.
awk -v k="$k" '/^test result:/ { p += $4; f += $6; i += $8 }
    /^package-test: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $2; f += $4; pk += $6 }
    END {
        printf "skipped: %d ignored by design, %d could not run here, %d package test\n", i, k, pk
        printf "tests: %d passed, %d failed, %d skipped\n", p - k, f, i + k + pk
    }' "$log"
exit "$status"
