//! `linerate soak` without namespaces: `--passive` over a fixture root (no traffic, so no
//! BER verdict), its files, and the errors of bad options, each naming the option and what is
//! expected, with exit status 2.

use linerate_testkit::schema;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_linerate");

fn linerate(args: &[&str]) -> Output {
    Command::new(BIN)
        .env("NO_COLOR", "1")
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn passive_samples_the_local_ports_without_a_ber_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().to_str().unwrap();
    let html = dir.path().join("r.html");
    let root = fixture("cx3-fdr-at-qdr-datagram");
    let out = linerate(&[
        "soak",
        "--passive",
        "--root",
        &root,
        "--duration",
        "1s",
        "--interval",
        "250ms",
        "--json",
        "--textfile",
        text,
        "--report",
        html.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    schema::assert_matches("soak.schema.json", &doc);
    assert_eq!(doc["params"]["passive"], true);
    assert!(doc["params"]["host"].is_null());
    // No traffic: never called clean.
    assert_eq!(doc["verdict"], "insufficient", "{doc}");
    let ends = doc["ends"].as_array().unwrap();
    assert_eq!(ends.len(), 1, "a passive soak has the local end only");
    assert_eq!(ends[0]["end"], "local");
    let p = &ends[0]["ports"][0];
    assert_eq!(
        (p["device"].as_str(), p["port"].as_str()),
        (Some("mlx4_0"), Some("1"))
    );
    // 1 s at 250 ms: a baseline and four samples, so four intervals.
    assert_eq!(doc["timeline"].as_array().map(Vec::len), Some(4), "{doc}");
    // The sampling cost is reported on stderr.
    assert!(stderr.contains("sampling: 5 samples"), "{stderr}");
    // The text file, atomically in place (no temporary file left), readable by node_exporter.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.contains(&"linerate_soak.prom".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("linerate_soak.prom"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o444, 0o444, "{mode:o}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>"),
        "{}",
        &page[..40.min(page.len())]
    );
}

/// Exit status 2 and every part in stderr.
fn refused(args: &[&str], parts: &[&str]) {
    let out = linerate(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    for p in parts {
        assert!(err.contains(p), "{args:?}: expected {p:?} in {err}");
    }
}

#[test]
fn bad_options_name_themselves() {
    refused(
        &["soak", "--passive", "--duration", "ten minutes"],
        &["--duration", "ten minutes", "10m"],
    );
    refused(
        &[
            "soak",
            "--passive",
            "--interval",
            "10ms",
            "--duration",
            "1s",
        ],
        &["--interval", "100 ms"],
    );
    refused(
        &["soak", "--passive", "--interval", "2s", "--duration", "1s"],
        &["--duration", "shorter than --interval"],
    );
    refused(&["soak"], &["<HOST>"]);
    refused(
        &[
            "soak",
            "--passive",
            "--duration",
            "1s",
            "--textfile",
            "/nonexistent/dir",
        ],
        &["--textfile /nonexistent/dir", "not a directory"],
    );
    refused(
        &["soak", "host1", "--passive"],
        &["--passive", "cannot be used"],
    );
    // Thresholds: the option, the threshold and what it accepts.
    refused(
        &[
            "soak",
            "--passive",
            "--duration",
            "1s",
            "--threshold",
            "ber=2",
        ],
        &[
            "--threshold",
            "ber is 2",
            "a ratio above 0 and below 1",
            "default 1e-12",
        ],
    );
    refused(
        &["soak", "--passive", "--threshold", "speed=1"],
        &["`speed` is no threshold", "rcv_errors_per_bit"],
    );
    refused(
        &[
            "soak",
            "--passive",
            "--threshold",
            "port_rcv_errors_per_s=fast",
        ],
        &["port_rcv_errors_per_s: `fast` is not a number", "0 or more"],
    );
    refused(
        &[
            "soak",
            "--passive",
            "--duration",
            "1s",
            "--threshold",
            "min_bits=1e9",
            "--threshold",
            "min_bits=1e10",
        ],
        &["--threshold min_bits is given twice"],
    );
}

#[test]
fn help_names_every_threshold() {
    let out = linerate(&["soak", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for t in linerate_soak::Threshold::ALL {
        assert!(
            help.contains(t.as_str()),
            "{t} is not in soak --help:\n{help}"
        );
    }
}
