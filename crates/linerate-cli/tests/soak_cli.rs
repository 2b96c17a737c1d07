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
    // The RDMA traffic's window: its range, and only where there is RDMA traffic.
    refused(
        &["soak", "198.18.0.2", "--rdma-window", "0"],
        &["--rdma-window", "1..=1024"],
    );
    refused(
        &["soak", "198.18.0.2", "--rdma-window", "many"],
        &["--rdma-window", "many"],
    );
    refused(
        &["soak", "198.18.0.2", "--rdma-window", "4", "--no-rdma"],
        &["--rdma-window", "--no-rdma", "cannot be used"],
    );
    refused(
        &["soak", "--passive", "--rdma-window", "4"],
        &["--rdma-window", "--passive", "cannot be used"],
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

mod soak_tree;

use soak_tree::{add_data, counter, findings, get, port, set, set_rate, tree, verdict, Stream};

/// `linerate soak --passive` over `root` for `secs` seconds at 250 ms, one JSON line per event,
/// the text file into `textdir`.
fn passive_stream(root: &Path, textdir: &Path, secs: u32, extra: &[&str]) -> Stream {
    let mut cmd = std::process::Command::new("timeout");
    cmd.args([
        "-k",
        "5",
        "60",
        soak_tree::BIN,
        "soak",
        "--passive",
        "--root",
    ])
    .arg(root)
    .args(["--duration", &format!("{secs}s"), "--interval", "250ms"])
    .args(["--json-stream", "--textfile"])
    .arg(textdir)
    .args(extra)
    .env("NO_COLOR", "1");
    Stream::start(cmd)
}

/// The documented PromQL recipe, on the soak's text file, fires on exactly the ports its JSON
/// calls marginal or bad.
fn recipe_agrees(name: &str, textdir: &Path, doc: &Value) {
    let text = std::fs::read_to_string(textdir.join("linerate_soak.prom")).expect("the text file");
    linerate_testkit::promtool::assert_soak_recipe_agrees(&[(name.to_string(), text, doc.clone())]);
}

const PERFQUERY_R: [&str; 9] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_discards",
    "port_xmit_wait",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
];

#[test]
fn scripted_passive_soak_receive_errors_floors_pam4_saturation_and_resets() {
    // Issue #23's cases 1, 3 and 5 on a real soak of a fixture tree whose counter files change
    // while it reads them: 4X EDR ports, one set to 4X NDR.
    let t = tree(
        "cx4-edr-no-sm",
        "mlx5_0",
        &["mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"],
    );
    let root = t.path();
    for c in PERFQUERY_R {
        set(root, "mlx5_1", c, 5);
    }
    set(root, "mlx5_2", "symbol_error", 65_000);
    set_rate(root, "mlx5_5", "400 Gb/sec (4X NDR)");
    let textdir = tempfile::tempdir().unwrap();
    let mut s = passive_stream(root, textdir.path(), 4, &[]);
    // After the baseline: every change at once.
    s.interval("local", 1);
    let sym = |dev: &str, add: u64| {
        set(
            root,
            dev,
            "symbol_error",
            get(root, dev, "symbol_error") + add,
        );
    };
    set(
        root,
        "mlx5_0",
        "port_rcv_errors",
        get(root, "mlx5_0", "port_rcv_errors") + 20,
    );
    for c in PERFQUERY_R {
        set(root, "mlx5_1", c, 0);
    }
    set(root, "mlx5_2", "symbol_error", 65_535);
    sym("mlx5_3", 3);
    sym("mlx5_4", 4);
    sym("mlx5_5", 9000);
    for d in ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5"] {
        add_data(root, d);
    }
    let (code, doc) = s.finish();
    schema::assert_matches("soak.schema.json", &doc);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["thresholds_set"], serde_json::json!([]));
    // 1: 20 receive errors in 4 s with traffic counted: never clean. 5/s is under the 10/s of
    // `bad`, far over the budget (1 per 10^12 bits, at least 3).
    let p = port(&doc, "local", "mlx5_0");
    assert_eq!(verdict(p), ("marginal", "rcv_errors_budget"), "{p}");
    let f = findings(p, "rcv_errors_budget")[0];
    assert!(
        f["text"]
            .as_str()
            .unwrap()
            .contains("20 packets dropped on receive"),
        "{f}"
    );
    resets_are_one_note_per_sample(port(&doc, "local", "mlx5_1"));
    saturated_rates_floors_and_pam4(&doc, textdir.path());
    recipe_agrees("passive", textdir.path(), &doc);
}

/// Issue #23's case 5: nine counters reset by one `perfquery -R`: one note per sample that saw
/// resets (the test writes the files one by one, so normally one), listing each counter; its
/// value is how many, exactly.
fn resets_are_one_note_per_sample(p: &Value) {
    // 5: nine counters reset by one `perfquery -R`: one note per sample that saw resets (the
    // test writes the files one by one, so normally one), listing each counter.
    assert_eq!(verdict(p), ("clean", "clean"), "{p}");
    let notes = findings(p, "counter_reset");
    let mut seqs: Vec<u64> = PERFQUERY_R
        .iter()
        .map(|c| {
            counter(p, c)["resets"][0]["at"]["seq"]
                .as_u64()
                .unwrap_or_else(|| panic!("{c} was not reset: {p:#}"))
        })
        .collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(notes.len(), seqs.len(), "{notes:#?}");
    let listed: usize = notes
        .iter()
        .map(|n| n["value"].as_f64().unwrap() as usize)
        .sum();
    assert_eq!(listed, 9);
    assert!(notes.iter().all(|n| n["at_least"] == false));
}

/// Issue #23's cases 5 (a saturated rate is "at least") and 3 (the floor, and PAM4).
fn saturated_rates_floors_and_pam4(doc: &Value, textdir: &Path) {
    // 5: a 16-bit counter that saturates: its rate is "at least".
    let p = port(doc, "local", "mlx5_2");
    assert_eq!(verdict(p), ("bad", "symbol_error_budget"), "{p}");
    let f = findings(p, "symbol_error_budget")[0];
    assert!(
        f["at_least"] == true
            && f["text"]
                .as_str()
                .unwrap()
                .starts_with("symbol_error at least"),
        "{f}"
    );
    assert_eq!(counter(p, "symbol_error")["observed_at_least"], true);
    // 3: three errors are the floor: not over it, the check says so with the same numbers;
    // four are over; on NDR (PAM4) symbol errors are not judged alone and have no limit.
    let p = port(doc, "local", "mlx5_3");
    assert_eq!(verdict(p), ("clean", "clean"), "{p}");
    let c = p["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == "symbol_error_budget")
        .expect("the check");
    assert_eq!(
        (c["fired"].as_bool(), c["value"].as_f64()),
        (Some(false), c["limit"].as_f64())
    );
    assert_eq!(
        verdict(port(doc, "local", "mlx5_4")),
        ("bad", "symbol_error_budget")
    );
    let ndr = port(doc, "local", "mlx5_5");
    assert_eq!(verdict(ndr), ("clean", "clean"), "{ndr}");
    assert!(ndr["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["rule"] != "symbol_error_budget"));
    assert!(ndr["symbol_budget"]["limit_per_hour"].is_null());
    let text = std::fs::read_to_string(textdir.join("linerate_soak.prom")).unwrap();
    assert!(
        !text.contains(r#"linerate_soak_symbol_error_budget_per_hour{end="local",device="mlx5_5""#)
    );
}

#[test]
fn scripted_passive_soak_a_counter_pegged_then_cleared_is_judged_over_the_rest() {
    // Issue #23's case 2: symbol_error pegged when the soak begins, cleared during it, then 300
    // errors. With ber 1e-9 (a budget of 103/s on EDR) over the whole 4 s that is 75/s and was
    // called clean; over the 2 s at most after the clear it is 150/s or more.
    let t = tree("cx4-edr-no-sm", "mlx5_0", &["mlx5_1"]);
    let root = t.path();
    for d in ["mlx5_0", "mlx5_1"] {
        set(root, d, "symbol_error", 65_535);
    }
    let textdir = tempfile::tempdir().unwrap();
    let mut s = passive_stream(
        root,
        textdir.path(),
        4,
        &["--threshold", "ber=1e-9", "--threshold", "min_bits=3e9"],
    );
    s.interval("local", 8);
    for d in ["mlx5_0", "mlx5_1"] {
        set(root, d, "symbol_error", 0);
        add_data(root, d);
    }
    // Only once the soak has seen the clear: the errors land in a later sample.
    s.reset_seen("mlx5_0", "symbol_error");
    set(root, "mlx5_0", "symbol_error", 300);
    let (code, doc) = s.finish();
    schema::assert_matches("soak.schema.json", &doc);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(
        doc["thresholds_set"],
        serde_json::json!(["ber", "min_bits"])
    );
    assert_eq!(doc["thresholds"]["ber"], 1e-9);
    let p = port(&doc, "local", "mlx5_0");
    assert_eq!(verdict(p), ("bad", "symbol_error_budget"), "{p}");
    let c = counter(p, "symbol_error");
    let observed = c["observed_s"].as_f64().unwrap();
    assert!(observed > 0.0 && observed <= 2.0, "{c}");
    assert_eq!(c["observed_delta"], 300);
    let f = findings(p, "symbol_error_budget")[0];
    assert!(f["text"].as_str().unwrap().contains("observed (of"), "{f}");
    for d in ["mlx5_0", "mlx5_1"] {
        let notes = findings(port(&doc, "local", d), "pegged_then_cleared");
        assert_eq!(notes.len(), 1, "{d}: {doc}");
    }
    assert_eq!(verdict(port(&doc, "local", "mlx5_1")), ("clean", "clean"));
    recipe_agrees("pegged_then_cleared", textdir.path(), &doc);
}

#[test]
fn passive_soak_judges_a_hot_module_against_its_own_thresholds() {
    // The QSFP-DD of the fixture reads 70.49 °C, over its high warning: read at the first
    // sample and judged by the `phy` family, through the document, the text file and the HTML.
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().to_str().unwrap();
    let html = dir.path().join("r.html");
    let root = fixture("cx7-400g-qsfp-dd-hot-module");
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
    // A marginal port: exit status 1, as for any verdict from marginal up.
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    schema::assert_matches("soak.schema.json", &doc);
    let findings: Vec<&Value> = doc["ends"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["findings"].as_array().unwrap())
        .filter(|f| f["rule"] == "temperature_warning" || f["rule"] == "temperature_alarm")
        .collect();
    let [f] = findings.as_slice() else {
        panic!("one temperature finding expected: {doc}")
    };
    assert_eq!(
        (f["unit"].as_str(), f["source"].as_str()),
        (Some("celsius"), Some("device")),
        "{f}"
    );
    assert!(
        f["text"]
            .as_str()
            .unwrap()
            .starts_with("module reached 70.5 °C"),
        "{f}"
    );
    assert_eq!(doc["verdict"], "marginal", "{doc}");
    let prom = std::fs::read_to_string(dir.path().join("linerate_soak.prom")).unwrap();
    assert!(prom.contains("temperature_"), "{prom}");
}
