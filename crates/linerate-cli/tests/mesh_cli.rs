//! `linerate mesh` on loopback: three ranks as three processes, rank 0's outputs checked against
//! their schemas, and the errors a user meets first. No root needed; nothing timed.

mod common;

use linerate_testkit::schema;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use common::{free_port, BusyLoops, BIN};

/// `linerate mesh --rank R --size N --coordinator 127.0.0.1:PORT -t 0.3 EXTRA` (`-t` in EXTRA
/// replaces the 0.3), under `timeout`.
fn rank(r: u32, size: u32, port: u16, extra: &[&str]) -> Child {
    let time: &[&str] = if extra.contains(&"-t") {
        &[]
    } else {
        &["-t", "0.3"]
    };
    Command::new("timeout")
        .args(["-k", "5", "90", BIN, "mesh"])
        .args(["--rank", &r.to_string(), "--size", &size.to_string()])
        .args(["--coordinator", &format!("127.0.0.1:{port}")])
        .args(time)
        .args(["--join-timeout", "20"])
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
    // One rank has no link to measure: refused before anything listens, naming the source.
    let (code, err) = mesh(&["--rank", "0", "--size", "1", "--coordinator", "127.0.0.1:1"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--size=1: a mesh needs at least two ranks"),
        "{err}"
    );
    let out = Command::new(BIN)
        .arg("mesh")
        .env_clear()
        .env("SLURM_PROCID", "0")
        .env("SLURM_NTASKS", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("SLURM_NTASKS=1: a mesh needs at least two ranks")
            && err.contains("srun -n 2"),
        "{err}"
    );
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

/// The process `timeout(1)` runs (its only child), to signal it by PID.
fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn sigterm_to_rank_0_writes_what_was_measured() {
    // `-t 1`: six rounds of 1 s tests; rank 0 is stopped once the first measurement is out.
    let port = free_port();
    let others: Vec<Child> = (1..3).map(|r| rank(r, 3, port, &["-t", "1"])).collect();
    let mut r0 = rank(0, 3, port, &["-t", "1", "--json-stream", "--json"]);
    let stdout = r0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("a first measurement within 60 s");
    let pid = child_of(r0.id()).expect("rank 0 under timeout(1)");
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = r0.wait().unwrap();
    let out = reader.join().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut r0.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}\n{out}");
    assert!(err.contains("rank 0 was stopped by SIGTERM"), "{err}");
    // The stream lines, then the document over what was measured.
    let (lines, doc): (Vec<&str>, Vec<&str>) =
        out.lines().partition(|l| l.starts_with("{\"event\""));
    assert!(!lines.is_empty(), "{out}");
    let doc: Value = serde_json::from_str(&doc.join("\n")).unwrap_or_else(|e| panic!("{e}: {out}"));
    schema::assert_matches("mesh.schema.json", &doc);
    assert!(
        doc["interrupted"]
            .as_str()
            .is_some_and(|s| s.starts_with("rank 0 was stopped by SIGTERM")),
        "{}",
        doc["interrupted"]
    );
    assert_eq!(doc["healthy"], false);
    assert!(!doc["measurements"].as_array().unwrap().is_empty());
    // The other ranks are told, and end with what they measured.
    for (i, c) in others.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "rank {}: {e}", i + 1);
        assert!(e.contains("asked to stop"), "rank {}: {e}", i + 1);
    }
}

#[test]
fn automatic_colour_is_off_under_a_launcher() {
    // `script` gives the command a pseudo-terminal, as mpirun does to each rank.
    let have_script = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("script").is_file()));
    if !have_script {
        return linerate_testkit::skip("script(1) not installed (util-linux / bsdutils)");
    }
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sysfs/cx3pro-downtrained"
    );
    let escapes = |vars: &str, color: &str| -> usize {
        let cmd = format!("env -i TERM=xterm {vars} {BIN} {color} probe --root {fixture}");
        let out = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .matches("\x1b[")
            .count()
    };
    assert!(escapes("", "") > 0, "a terminal is coloured");
    for var in [
        "OMPI_COMM_WORLD_RANK=0",
        "PMIX_RANK=1",
        "PMI_RANK=0",
        "SLURM_PROCID=2",
    ] {
        assert_eq!(escapes(var, ""), 0, "{var}");
        assert!(escapes(var, "--color always") > 0, "{var} --color always");
    }
}

#[test]
fn with_every_core_loaded_no_live_rank_is_lost_and_nothing_is_accused() {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let _load = BusyLoops::start(2 * cores, "300");
    // Four ranks on loopback, two flows at once, a tight heartbeat timeout.
    let port = free_port();
    let extra = ["-t", "0.5", "--heartbeat-timeout", "2"];
    let others: Vec<Child> = (1..4).map(|r| rank(r, 4, port, &extra)).collect();
    let mut args = extra.to_vec();
    args.push("--json");
    let out = rank(0, 4, port, &args).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{err}", String::from_utf8_lossy(&out.stdout)));
    schema::assert_matches("mesh.schema.json", &doc);
    assert_eq!(doc["lost"], serde_json::json!([]), "{err}");
    assert!(!err.contains("unreachable"), "{err}");
    let retests: Vec<&Value> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["phase"] == "retest")
        .collect();
    for l in doc["links"].as_array().unwrap() {
        let status = l["status"].as_str().unwrap();
        assert!(
            !["slow", "lossy", "unreachable"].contains(&status),
            "accused under load: {l}\nretests: {retests:#?}"
        );
        assert!(
            !l["explanation"]
                .as_str()
                .unwrap()
                .contains("suspect this link"),
            "{l}"
        );
    }
    for n in doc["nodes"].as_array().unwrap() {
        assert!(
            ["ok", "unconfirmed"].contains(&n["status"].as_str().unwrap()),
            "accused under load: {n}"
        );
    }
    // The retests (if any ran) carry the load that explains them.
    for m in doc["measurements"].as_array().unwrap() {
        if m["phase"] == "retest" {
            assert!(m["tx_load"]["other_cores"].is_number(), "{m}");
        }
    }
    for (i, c) in others.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "rank {}: {}",
            i + 1,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
