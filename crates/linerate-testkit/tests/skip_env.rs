//! `skip` end to end: this test binary runs its own `child_scenario` with the variables
//! set and unset, and checks what the harness and the log see.

use std::path::Path;
use std::process::{Command, Output};

use linerate_testkit::{skip, REQUIRE_ENV, SKIP_LOG_ENV};

/// Not a test of its own (ignored, so never counted as passed): started by the tests below.
#[test]
#[ignore = "a scenario run by `a_skip_is_recorded` and `a_required_skip_fails`"]
fn child_scenario() {
    skip("needs something this machine lacks");
}

/// Run `child_scenario` alone, with the log at `log` and `require` as given.
fn child(log: &Path, require: Option<&str>) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "child_scenario", "--nocapture"])
        .env(SKIP_LOG_ENV, log)
        // The parent may itself run under scripts/test.sh or CI: the child sees only this.
        .env_remove(REQUIRE_ENV);
    if let Some(v) = require {
        cmd.env(REQUIRE_ENV, v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_skip_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("skips");
    for require in [None, Some("0"), Some("")] {
        let out = child(&log, require);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{require:?}: {stdout}");
        assert!(
            stdout.contains("SKIP skip_env::child_scenario: needs something this machine lacks"),
            "{stdout}"
        );
    }
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines,
        "skip_env::child_scenario: needs something this machine lacks\n".repeat(3)
    );
}

#[test]
fn a_required_skip_fails() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("skips");
    let out = child(&log, Some("1"));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("skip_env::child_scenario cannot run here") && all.contains("broken setup"),
        "{all}"
    );
    assert!(!log.exists(), "a failed test is not a skip");
}
