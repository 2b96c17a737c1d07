//! The `linerate-lab` program without a guest: a capture of a fixture tree gives back what was
//! captured from a real guest, and bad invocations are refused in one line. (Its guests are
//! exercised by the CLI's lab tests; this also makes `cargo test` build the program they run in
//! each guest as its agent.)

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_linerate-lab");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn a_capture_of_the_fixture_built_from_a_capture_is_that_capture() {
    let out = Command::new(BIN)
        .args(["capture", "--root"])
        .arg(repo().join("fixtures/sysfs/lab-rxe-qemu-capture"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fixtures/sysfs/captures/lab-rxe-qemu.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(got["files"], want["files"]);
    assert_eq!(got["links"], want["links"]);
    assert_eq!(got["kernel"], want["kernel"]);
}

#[test]
fn bad_invocations_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(BIN).args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let nolab = dir.path().join("nolab");
    let (code, err) = run(&["exec", nolab.to_str().unwrap(), "a", "--", "true"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no lab at"), "{err}");
    let (code, err) = run(&[
        "up",
        "--dir",
        dir.path().join("x").to_str().unwrap(),
        "--nic",
        "rtl8139",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("NIC `rtl8139`: expected virtio"), "{err}");
    let (code, err) = run(&["up", "--dir", "/tmp/x", "--guests", "3"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--guests"), "{err}");
    // A kernel that is not installed, named, with those that are and what installs them.
    let failed = dir.path().join("k");
    let (code, err) = run(&["up", "--dir", failed.to_str().unwrap(), "--kernel", "2.6"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("the lab kernel 2.6 is not installed (installed: ")
            && err.contains("scripts/setup-tests.sh installs 5.10, 6.1, 6.12"),
        "{err}"
    );
    // `ready` says why the lab is not up.
    let said = std::fs::read_to_string(failed.join("failed")).unwrap();
    assert!(
        said.contains("the lab kernel 2.6 is not installed"),
        "{said}"
    );
}
