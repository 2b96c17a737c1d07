//! `linerate mesh` on loopback: three ranks as three processes, rank 0's outputs checked against
//! their schemas, and the errors a user meets first. No root needed; nothing timed.

mod common;

use linerate_testkit::schema;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use common::{free_port, BIN};

/// `linerate mesh --rank R --size N --coordinator 127.0.0.1:PORT -t 0.3 EXTRA`, under `timeout`.
fn rank(r: u32, size: u32, port: u16, extra: &[&str]) -> Child {
    Command::new("timeout")
        .args(["-k", "5", "90", BIN, "mesh"])
        .args(["--rank", &r.to_string(), "--size", &size.to_string()])
        .args(["--coordinator", &format!("127.0.0.1:{port}")])
        .args(["-t", "0.3", "--join-timeout", "20"])
        .args(extra)
        .env_clear()
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn timeout(1)")
}

/// Three ranks; rank 0 with `extra`. Rank 0's output; the others must end well and print nothing.
fn three_ranks(extra: &[&str]) -> Output {
    let port = free_port();
    let others: Vec<Child> = (1..3).map(|r| rank(r, 3, port, &[])).collect();
    let out = rank(0, 3, port, extra).wait_with_output().unwrap();
    for (i, c) in others.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "rank {}: {err}", i + 1);
        assert!(o.stdout.is_empty(), "rank {} prints nothing", i + 1);
    }
    assert_ne!(out.status.code(), Some(124), "rank 0 hung");
    out
}

#[test]
fn rank_0_writes_the_document_the_csv_and_the_html_report() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("mesh.csv");
    let html = dir.path().join("mesh.html");
    let out = three_ranks(&[
        "--json",
        "--csv",
        csv.to_str().unwrap(),
        "--report",
        html.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    schema::assert_matches("mesh.schema.json", &doc);
    assert_eq!(doc["rendezvous"]["method"], "flag", "{}", doc["rendezvous"]);
    assert_eq!(doc["rendezvous"]["label"], "--coordinator");
    // Each rank says where its number came from (here: --rank and --size).
    for r in doc["ranks"].as_array().unwrap() {
        assert_eq!(r["identity_source"], "flags", "{r}");
    }
    assert!(
        doc["rendezvous"]["addr"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:")),
        "{}",
        doc["rendezvous"]
    );
    // The exit status follows the verdict (loopback on a shared machine may judge a link slow).
    let healthy = doc["healthy"].as_bool().unwrap();
    assert_eq!(out.status.code(), Some(i32::from(!healthy)), "{stderr}");
    assert_eq!(doc["size"], 3);
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 3);
    let round: Vec<&Value> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["phase"] == "round")
        .collect();
    assert_eq!(round.len(), 6, "every ordered pair once");
    assert!(round
        .iter()
        .all(|m| m["gbps"].as_f64().is_some_and(|g| g > 0.0)));
    assert!(doc["lost"].as_array().unwrap().is_empty());
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        csv.lines().count(),
        4,
        "a header and a row per sender: {csv}"
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("<svg") && html.contains("</html>"), "{html}");
}

#[test]
fn json_stream_lines_are_mesh_events() {
    // Operator limits at exactly what the run needs are no obstacle (a 0.3 s test, 3 ranks).
    let out = three_ranks(&[
        "--json-stream",
        "--max-ranks",
        "3",
        "--max-duration",
        "0.3",
        "--max-tests",
        "2",
        "--max-memory",
        "64M",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = schema::validator("mesh-event.schema.json");
    let mut n = 0;
    for line in stdout.lines() {
        let e: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        schema::assert_valid(&v, &e);
        assert!(
            e["tx"]["addr"]
                .as_str()
                .is_some_and(|a| a.starts_with("127.0.0.1:")),
            "{e}"
        );
        n += 1;
    }
    assert!(n >= 6, "one line per measurement: {stdout}");
}

fn mesh(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .arg("mesh")
        .args(args)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn errors_say_what_to_do() {
    let (code, err) = mesh(&[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no rank") && err.contains("--rank"), "{err}");
    let (code, err) = mesh(&[
        "--rank",
        "0",
        "--size",
        "5000",
        "--coordinator",
        "127.0.0.1:1",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("more than the 4096"), "{err}");
    let port = free_port().to_string();
    let coord = format!("127.0.0.1:{port}");
    let (code, err) = mesh(&[
        "--rank",
        "0",
        "--size",
        "2",
        "--coordinator",
        &coord,
        "--schedule",
        "bogus",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--schedule bogus: expected pairwise"), "{err}");
    // A rank whose coordinator never comes says so within --join-timeout.
    let (code, err) = mesh(&[
        "--rank",
        "1",
        "--size",
        "2",
        "--coordinator",
        &coord,
        "--join-timeout",
        "1",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot reach the coordinator"), "{err}");
}

#[test]
fn operator_limits_that_the_run_cannot_keep_are_refused_at_start() {
    let (code, err) = mesh(&[
        "--rank",
        "0",
        "--size",
        "8",
        "--max-ranks",
        "4",
        "--coordinator",
        "127.0.0.1:1",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--size 8 is more than --max-ranks 4"), "{err}");
    let (code, err) = mesh(&[
        "--rank",
        "0",
        "--size",
        "2",
        "-t",
        "5",
        "--max-duration",
        "2",
        "--coordinator",
        "127.0.0.1:1",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--max-duration 2 s is shorter than --time 5 s"),
        "{err}"
    );
    for bad in [
        ["--max-ranks", "0"],
        ["--max-ranks", "5000"],
        ["--max-tests", "0"],
        ["--max-memory", "lots"],
    ] {
        let mut args = vec!["--rank", "0", "--size", "2", "--coordinator", "127.0.0.1:1"];
        args.extend(bad);
        let (code, err) = mesh(&args);
        assert_eq!(code, Some(2), "{bad:?}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
    }
}
