#!/usr/bin/env bash
# The closing lines of scripts/test.sh: every failed test named (its test binary, its name, and
# the command that runs it again), the skipped ones, and one count for the whole run.
#
#   scripts/test-summary.sh CARGO_LOG [PACKAGE_LOG] [SKIP_LOG]
#
# CARGO_LOG is what `cargo test --workspace --no-fail-fast` printed (stdout and stderr),
# PACKAGE_LOG what scripts/package-test.sh printed, SKIP_LOG linerate-testkit's log of the
# tests that could not run here (one line each). cargo counts a recorded skip as passed: it is
# moved to the skipped count. A test binary that ended without its results (it crashed, was
# killed, or its harness never reported) is named too and counted as one failed test. The test
# binaries that took 30 s or more are listed with their time. The last line is the count:
# "tests: N passed, N failed, N skipped".
set -euo pipefail
cargo_log="$1"
package_log="${2:-/dev/null}"
skip_log="${3:-/dev/null}"
[ -e "$package_log" ] || package_log=/dev/null
[ -e "$skip_log" ] || skip_log=/dev/null

k=$(grep -c . "$skip_log" || true)
if [ "$k" -gt 0 ]; then
    echo "skipped (could not run here):"
    sed 's/^/  /' "$skip_log"
fi

awk -v k="$k" -v pkg_log="$package_log" '
    # The test binary now running: cargo says "Running tests/lab_nfs.rs (target/debug/deps/lab_nfs-0123)",
    # "Running unittests src/lib.rs (target/debug/deps/linerate_lab-0123)" or "Doc-tests linerate_lab".
    function start(name, src) {
        bin = name; what = src; nbins++; binname[nbins] = bin; binsrc[nbins] = src
        state = ""; names = 0; got[nbins] = 0
    }
    /^ *Running .* \(.*\)$/ {
        path = $0; sub(/.*\(/, "", path); sub(/\)$/, "", path)
        n = path; sub(/.*\//, "", n); sub(/-[0-9a-f]+$/, "", n)
        src = $0; sub(/^ *Running /, "", src); sub(/ \(.*$/, "", src)
        start(n, src); next
    }
    /^ *Doc-tests [^ ]+$/ { n = $2; start(n, "doc-tests"); next }
    # libtest lists the failed tests of a binary after its output: "failures:", one name a line
    # indented by four spaces, a blank line, then "test result:". (The first "failures:" block
    # holds each failed test'"'"'s output, its sections headed "---- NAME stdout ----".)
    /^failures:$/ { state = "list"; names = 0; next }
    state == "list" && /^    [^ ]/ { names++; name[names] = substr($0, 5); next }
    state == "list" && /^$/ { if (names > 0) state = "done"; next }
    state == "list" { state = ""; names = 0 }
    state == "done" && /^test result:/ {
        for (i = 1; i <= names; i++) { nf++; fbin[nf] = nbins; ftest[nf] = name[i] }
        state = ""; names = 0
    }
    state == "done" && !/^$/ && !/^test result:/ { state = ""; names = 0 }
    /^test result:/ {
        p += $4; f += $6; i_ += $8; got[nbins] = 1
        if (match($0, /finished in [0-9.]+s/)) dur[nbins] = substr($0, RSTART + 12, RLENGTH - 13)
        if ($2 == "FAILED.") failed_bin[nbins] = 1
        next
    }
    # cargo names each failed binary with the arguments that run it again.
    /^error: (test|doctest) failed, to rerun pass `.*`$/ {
        r = $0; sub(/^[^`]*`/, "", r); sub(/`$/, "", r); rerun[nbins] = r; failed_bin[nbins] = 1
        next
    }
    END {
        # The package test: its own count, and each check it failed.
        while ((getline line < pkg_log) > 0) {
            if (line ~ /^package-test: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/) {
                split(line, w, " "); p += w[2]; f += w[4]; pk += w[6]
            } else if (line ~ /^FAIL /) {
                npf++; pfail[npf] = substr(line, 6)
            }
        }
        lost = 0
        for (b = 1; b <= nbins; b++) if (failed_bin[b] && !got[b]) lost++
        if (nf + lost + npf > 0) {
            printf "failed (%d):\n", nf + lost + npf
            for (j = 1; j <= nf; j++) {
                b = fbin[j]
                again = rerun[b] != "" ? sprintf("  [cargo test %s -- --exact '"'"'%s'"'"']", rerun[b], ftest[j]) : ""
                printf "  %s::%s (%s)%s\n", binname[b], ftest[j], binsrc[b], again
            }
            for (b = 1; b <= nbins; b++) if (failed_bin[b] && !got[b]) {
                again = rerun[b] != "" ? sprintf("  [cargo test %s]", rerun[b]) : ""
                printf "  %s (%s): the test binary ended without its results (crashed or killed: its output above)%s\n", binname[b], binsrc[b], again
            }
            for (j = 1; j <= npf; j++) printf "  scripts/package-test.sh: %s\n", pfail[j]
        }
        slow = ""
        for (b = 1; b <= nbins; b++) if (dur[b] + 0 >= 30) slow = slow sprintf("%s%s %.0f s", slow == "" ? "" : ", ", binname[b], dur[b])
        if (slow != "") printf "test binaries that took 30 s or more: %s\n", slow
        printf "skipped: %d ignored by design, %d could not run here, %d package test\n", i_, k, pk
        printf "tests: %d passed, %d failed, %d skipped\n", p - k, f + lost, i_ + k + pk
    }' "$cargo_log"
