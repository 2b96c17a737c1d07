//! `linerate disk` end to end: bad input, --json, terminal lines, and signals mid-run.

use linerate_testkit::schema;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use schema::assert_matches;

fn linerate() -> Command {
    let mut c = Command::cargo_bin("linerate").unwrap();
    c.env("NO_COLOR", "1").timeout(Duration::from_mins(1));
    c
}

fn stray(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".linerate-disk-"))
        .collect()
}

#[test]
fn mem_json_matches_its_schema() {
    let out = linerate()
        .args(["mem", "--time", "0.2", "--size", "8M", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_matches("mem.schema.json", &doc);
    assert!(doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["kind"] == "mem_copy" && t["gbps"].as_f64().unwrap() > 0.0));
    // The common header, which the schema requires: a document without it is refused.
    assert_eq!(doc["tool"]["name"], "linerate");
    assert_eq!(doc["tool"]["version"], env!("CARGO_PKG_VERSION"));
    let v = schema::validator("mem.schema.json");
    let mut headless = doc.clone();
    headless.as_object_mut().unwrap().remove("tool");
    assert!(
        !v.is_valid(&headless),
        "the schema accepts a document without `tool`"
    );
    let mut extra = doc.clone();
    extra["dram"]["dimms"] = serde_json::json!([{"size_mib": 1024, "speed_mts": 3200}]);
    assert!(
        !v.is_valid(&extra),
        "the schema accepts a DIMM without its width"
    );
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--block", "1000"], "multiple of 4096"),
        (vec!["--tests", "seq_read,bogus"], "bogus"),
        (vec!["--qd", "0"], "qd"),
        (vec!["--size", "12X"], "not a size"),
        (
            vec!["--size", "99T"],
            "not enough free space: the test file needs 104 TiB",
        ),
        (vec!["--size", "0"], "smaller than one block"),
        (vec!["--time", "0"], "positive"),
        (vec!["--engine", "aio"], "aio"),
        (vec!["--tests", "seq_read,seq_read"], "twice"),
    ];
    for (args, msg) in cases {
        linerate()
            .arg("disk")
            .arg(d)
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(msg));
    }
    linerate()
        .arg("disk")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a directory"));
    linerate()
        .args(["disk", "/no/such/dir"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/no/such/dir: no such directory"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn json_document() {
    let dir = scratch();
    let out = linerate()
        .arg("disk")
        .arg(dir.path())
        .args([
            "--size",
            "32M",
            "--time",
            "0.3",
            "--tests",
            "seq_read,rand_write",
            "--qd",
            "8",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_matches("disk.schema.json", &doc);
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2);
    assert_eq!(tests[0]["kind"], "disk_seq_read");
    assert_eq!(tests[1]["kind"], "disk_rand_write");
    assert_eq!(tests[1]["block_bytes"], 4096);
    assert_eq!(tests[0]["queue_depth"], 8);
    assert_eq!(tests[0]["file_bytes"], 32 << 20);
    assert!(tests[0]["gbps"].as_f64().unwrap() > 0.0);
    assert!(tests[1]["iops"].as_f64().unwrap() > 0.0);
    assert!(doc["error"].is_null());
    assert!(stray(dir.path()).is_empty());
}

#[test]
fn terminal_lines() {
    let dir = scratch();
    linerate()
        .arg("disk")
        .arg(dir.path())
        .args([
            "--size",
            "32M",
            "--time",
            "0.2",
            "--tests",
            "rand_read",
            "--engine",
            "sync",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("linerate disk")
                .and(predicate::str::contains("test file 32 MiB"))
                .and(predicate::str::contains("rand_read"))
                .and(predicate::str::contains("IOPS"))
                .and(predicate::str::contains("p99"))
                .and(predicate::str::contains("sync")),
        );
    assert!(stray(dir.path()).is_empty());
}

/// Start a long run, wait until its test file exists, send `sig`; it must exit by itself
/// (status 2, not killed) and leave no test file.
fn signal_mid_run(sig: &str) {
    let dir = scratch();
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_linerate"))
        .arg("disk")
        .arg(dir.path())
        .args(["--size", "64M", "--time", "10"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while stray(dir.path()).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no test file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    assert!(StdCommand::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap()
        .success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("still running 10 s after {sig}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{status:?} {err}");
    assert!(err.contains("interrupted by SIG"), "{err}");
    assert!(stray(dir.path()).is_empty(), "{:?}", stray(dir.path()));
}

#[test]
fn sigint_mid_run_leaves_no_file() {
    signal_mid_run("-INT");
}

#[test]
fn sigterm_mid_run_leaves_no_file() {
    signal_mid_run("-TERM");
}

#[test]
fn permission_denied_names_the_path() {
    let is_root = StdCommand::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let has_setpriv = StdCommand::new("setpriv").arg("--version").output().is_ok();
    if !is_root || !has_setpriv {
        linerate_testkit::skip("needs root and setpriv to run as another user");
        return;
    }
    let dir = scratch(); // 0700, owned by root
                         // A copy of the binary that nobody can reach (the target dir may sit under a
                         // directory closed to other users, such as /root).
    let bin_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin_dir.path().join("linerate");
    std::fs::copy(env!("CARGO_BIN_EXE_linerate"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = StdCommand::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("disk")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&*dir.path().to_string_lossy()), "{err}");
    assert!(err.contains("permission denied"), "{err}");
}

#[test]
fn jobs_json_matches_its_schema_and_adds_up() {
    let dir = scratch();
    let out = linerate()
        .arg("disk")
        .arg(dir.path())
        .args([
            "--size",
            "16M",
            "--time",
            "0.3",
            "--tests",
            "rand_read",
            "--qd",
            "4",
            "--jobs",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_matches("disk.schema.json", &doc);
    let t = &doc["tests"][0];
    assert_eq!(t["jobs"], 2);
    let jobs = t["per_job"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let sum: u64 = jobs.iter().map(|j| j["ops"].as_u64().unwrap()).sum();
    assert_eq!(sum, t["ops"].as_u64().unwrap());
    assert_eq!(t["latency_samples"], t["ops"]);
    assert!(t["cpu_us_per_io"].as_f64().unwrap() > 0.0);
    // 2 jobs × QD 4 × the 1 MiB block of the fill.
    assert_eq!(doc["buffer_bytes"], 2 * 4 * (1 << 20));
    assert_eq!(doc["hipri"], false);
    assert!(stray(dir.path()).is_empty());
}

#[test]
fn polled_options_are_refused_with_the_reason() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--hipri", "--buffered"], "does not go with --buffered"),
        (
            vec!["--sqpoll", "--engine", "sync"],
            "does not go with --engine sync",
        ),
        (vec!["--jobs", "0"], "jobs"),
        (
            vec!["--jobs", "2", "--qd", "1024", "--block", "1M"],
            "at most 1 GiB",
        ),
    ];
    for (args, msg) in cases {
        linerate()
            .arg("disk")
            .arg(d)
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(msg));
    }
    if Path::new("/dev/shm").is_dir() {
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        let out = linerate()
            .arg("disk")
            .arg(shm.path())
            .args([
                "--size",
                "4M",
                "--time",
                "0.1",
                "--tests",
                "rand_read",
                "--hipri",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--hipri refused") || err.contains("io_uring is not available"),
            "{err}"
        );
        assert!(stray(shm.path()).is_empty());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
