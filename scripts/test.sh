#!/usr/bin/env bash
# Set up, then run every check CI runs: formatting, clippy, the crates' licences and sources
# (cargo deny), fixture trees, all tests, and the .deb built, checked by lintian, built again
# elsewhere to compare, installed in a throwaway system, exercised and purged
# (scripts/package-test.sh: as root; LINERATE_PACKAGE_TEST=0 leaves it out).
#
# A test that cannot run on this machine (no root, namespaces, tmpfs, Chromium, setpriv)
# records itself in $LINERATE_SKIP_LOG (linerate-testkit's `skip`): the closing line counts
# it as skipped, not passed, and lists it. With LINERATE_REQUIRE_PRIVILEGED=1 (set by
# .ci/run) such a test fails instead. The closing lines name every failed test, and the time
# each part took.
set -euo pipefail
export CARGO_TERM_COLOR=never
cd "$(dirname "$0")/.."
# The wall time of each part, for the closing lines.
parts=()
lap_start=$SECONDS
lap() {
    parts+=("$1 $((SECONDS - lap_start)) s")
    echo "== $1 took $((SECONDS - lap_start)) s" >&2
    lap_start=$SECONDS
}
scripts/setup-tests.sh
lap setup
# The package test's Debian 11 root (scripts/debian11-root.sh; cached, so only a fresh machine
# makes it: minutes, mostly downloads) is made beside clippy and the test build, and waited for
# before the tests, whose figures want the CPU to themselves.
debian_root_log=$(mktemp)
debian_root_pid=
if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/debootstrap ] && [ "${LINERATE_PACKAGE_TEST:-1}" != 0 ]; then
    setsid scripts/debian11-root.sh >"$debian_root_log" 2>&1 &
    debian_root_pid=$!
    # A run that stops before the tests stops it too (its own process group: debootstrap with it).
    trap '[ -z "$debian_root_pid" ] || kill -- "-$debian_root_pid" 2>/dev/null || true; rm -f "$debian_root_log"' EXIT
fi
echo "== cargo fmt --check" >&2
cargo fmt --all --check
lap fmt
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
lap clippy
echo "== cargo deny: licences, duplicate crates, sources (deny.toml)" >&2
# Offline: scripts/setup-tests.sh fetched the crates. The advisory check needs RustSec's database
# from the internet: `cargo deny check advisories` on a machine that has it (docs/packaging.md).
cargo deny --offline --locked check licenses bans sources
echo "== fixture trees match their generator" >&2
python3 fixtures/sysfs/build.py --check
python3 fixtures/eeprom/reconstruct.py --check
lap "deny and fixtures"
echo "== cargo test --no-run: the test binaries" >&2
cargo test --workspace --locked --no-run
lap "test build"
if [ -n "$debian_root_pid" ]; then
    # A failure is the package test's to report (it makes the root again, and says why).
    wait "$debian_root_pid" || sed 's/^/debian11-root: /' "$debian_root_log" >&2
    debian_root_pid=
    lap "the Debian 11 root (beyond the build)"
fi
rm -f "$debian_root_log"
echo "== cargo test" >&2
log=$(mktemp)
package_log=$(mktemp)
skips=$(mktemp)
trap 'rm -f "$log" "$package_log" "$skips"' EXIT
export LINERATE_SKIP_LOG="$skips"
status=0
# --no-fail-fast: every test binary runs, so the closing lines count and name the whole suite.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log" || status=$?
lap tests
echo "== the Debian package" >&2
# The package test counts its own skip in its closing line, so it does not write the skip log.
LINERATE_SKIP_LOG= scripts/package-test.sh 2>&1 | tee "$package_log" || status=$?
lap "package test"
echo "times: $(IFS=,; echo "${parts[*]}" | sed 's/,/, /g'); in all $SECONDS s"
# The closing lines (scripts/test-summary.sh): every failed test named with its test binary
# and the command that runs it again, the tests that could not run here, and one count for
# the whole workspace (cargo prints one per test binary) and the package test. "skipped" adds
# up the tests ignored by design (#[ignore]: run by hand or by another test), the tests that
# could not run here (a recorded skip returned normally, so cargo counted it as passed) and a
# skipped package test; the line above it tells them apart.
scripts/test-summary.sh "$log" "$package_log" "$skips"
exit "$status"
