//! The closing lines of the test command (`scripts/test-summary.sh`, run by `scripts/test.sh`):
//! a cargo log with failed tests in two test binaries, a binary that crashed and a doc-test is
//! summed up with every failed test named by its binary and name (and the command that runs it
//! again), the skips moved out of the passed count, and the count as the very last line.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What `cargo test --workspace --no-fail-fast` printed (cargo 1.95, trimmed backtraces): a
/// passing binary, a failed unit test, a binary killed by SIGABRT, a failed integration test
/// whose panic message itself holds lines like libtest's list, and a failed doc-test.
const CARGO_LOG: &str = r"   Compiling linerate-lab v0.1.0 (/repo/crates/linerate-lab)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 5.96s
     Running unittests src/lib.rs (target/debug/deps/linerate_lab-d4c513b87e0db57a)

running 3 tests
test host::tests::kernels_order ... ok
test spec::tests::the_pair ... ok
test agent::tests::spawned ... FAILED

failures:

---- agent::tests::spawned stdout ----

thread 'agent::tests::spawned' (26797) panicked at crates/linerate-lab/src/agent.rs:5:69:
not ready:
failures:
    a fake line in a panic message
stack backtrace:
   0: __rustc::rust_begin_unwind


failures:
    agent::tests::spawned

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.85s

error: test failed, to rerun pass `-p linerate-lab --lib`
     Running tests/crash.rs (target/debug/deps/crash-3727792560df41ec)

running 1 test
error: test failed, to rerun pass `-p linerate --test crash`

Caused by:
  process didn't exit successfully: `/repo/target/debug/deps/crash-3727792560df41ec` (signal: 6, SIGABRT: process abort signal)
     Running tests/lab_nfs.rs (target/debug/deps/lab_nfs-c787734dd4479374)

running 3 tests
test ignored_one ... ignored
test fine ... ok
test nfs_over_rdma_end_to_end ... FAILED

failures:

---- nfs_over_rdma_end_to_end stdout ----
lab: 2 guest(s) up in 41.2 s, kernel 6.1.0-57-amd64 (TCG)

thread 'nfs_over_rdma_end_to_end' (26827) panicked at crates/linerate-cli/tests/lab_nfs.rs:114:5:
Connection refused: no `linerate serve` listens on port 5301


failures:
    nfs_over_rdma_end_to_end

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 312.54s

error: test failed, to rerun pass `-p linerate --test lab_nfs`
     Running tests/skips.rs (target/debug/deps/skips-0a1b2c3d4e5f6071)

running 2 tests
test needs_root ... ok
test plain ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

   Doc-tests linerate_units

running 2 tests
test crates/linerate-units/src/lib.rs - Gbps (line 12) ... ok
test crates/linerate-units/src/lib.rs - GiB (line 40) ... FAILED

failures:

---- crates/linerate-units/src/lib.rs - GiB (line 40) stdout ----
Test executable failed (exit status: 101).


failures:
    crates/linerate-units/src/lib.rs - GiB (line 40)

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.57s

error: doctest failed, to rerun pass `-p linerate-units --doc`
error: 4 targets failed:
    `-p linerate-lab --lib`
    `-p linerate --test crash`
    `-p linerate --test lab_nfs`
    `-p linerate-units --doc`
";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-summary.sh")
}

/// The summary's lines for these logs.
fn summary(cargo: &str, package: Option<&str>, skips: Option<&str>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let mut cmd = Command::new("bash");
    cmd.arg(script()).arg(write("cargo.log", cargo));
    cmd.arg(package.map_or_else(|| dir.path().join("none"), |t| write("package.log", t)));
    cmd.arg(skips.map_or_else(|| dir.path().join("none"), |t| write("skips", t)));
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn every_failed_test_is_named_with_its_binary_and_the_count_is_last() {
    let lines = summary(
        CARGO_LOG,
        Some("PASS lintian is clean\nFAIL the unit is disabled: enabled\npackage-test: 30 passed, 1 failed, 0 skipped\n"),
        Some("skips::needs_root: needs root\n"),
    );
    let text = lines.join("\n");
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in:\n{text}"))
    };
    // Both failed tests, each with its test binary, and the command that runs it alone.
    let unit = &lines[at("linerate_lab::agent::tests::spawned")];
    assert!(
        unit.contains("(unittests src/lib.rs)")
            && unit
                .contains("[cargo test -p linerate-lab --lib -- --exact 'agent::tests::spawned']"),
        "{unit}"
    );
    let nfs = &lines[at("lab_nfs::nfs_over_rdma_end_to_end")];
    assert!(
        nfs.contains("(tests/lab_nfs.rs)")
            && nfs.contains(
                "[cargo test -p linerate --test lab_nfs -- --exact 'nfs_over_rdma_end_to_end']"
            ),
        "{nfs}"
    );
    // The doc-test, the crashed binary and the package test's failed check.
    at("linerate_units::crates/linerate-units/src/lib.rs - GiB (line 40) (doc-tests)");
    let crash = &lines[at("crash (tests/crash.rs)")];
    assert!(
        crash.contains("ended without its results")
            && crash.contains("[cargo test -p linerate --test crash]"),
        "{crash}"
    );
    at("scripts/package-test.sh: the unit is disabled: enabled");
    // Nothing else is called failed: not the line in a panic message, not a passing test.
    let failed = at("failed (5):");
    assert_eq!(
        lines[failed + 1..]
            .iter()
            .filter(|l| l.starts_with("  "))
            .count(),
        5,
        "{text}"
    );
    assert!(!text.contains("a fake line"), "{text}");
    assert!(!text.contains("::fine"), "{text}");
    // The skip listed, the slow binary timed, and the count the very last line: 2 + 1 + 2 + 1
    // passed by cargo, less the recorded skip, plus the package test's 30; each failed test,
    // the crashed binary as one, and the package test's failed check.
    at("skipped (could not run here):");
    at("  skips::needs_root: needs root");
    at("test binaries that took 30 s or more: lab_nfs 313 s");
    assert_eq!(
        lines[lines.len() - 2],
        "skipped: 1 ignored by design, 1 could not run here, 0 package test"
    );
    assert_eq!(
        lines.last().unwrap(),
        "tests: 35 passed, 5 failed, 2 skipped"
    );
}

#[test]
fn a_clean_run_names_nothing() {
    let mut clean = CARGO_LOG
        .lines()
        .skip_while(|l| !l.contains("tests/skips.rs"))
        .take_while(|l| !l.contains("Doc-tests"))
        .collect::<Vec<_>>()
        .join("\n");
    clean.push('\n');
    let lines = summary(&clean, None, None);
    assert_eq!(
        lines,
        [
            "skipped: 0 ignored by design, 0 could not run here, 0 package test",
            "tests: 2 passed, 0 failed, 0 skipped"
        ]
    );
}
