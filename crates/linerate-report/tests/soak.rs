//! soak's renderers on a judged soak built from constructed samples: the live line, the
//! table, the JSON document and stream lines against their schemas, the Prometheus text file
//! (through `promtool check metrics` where it is installed), the documented PromQL recipe
//! (through `promtool test rules`) against the JSON verdicts of every scripted scenario, and the
//! HTML timeline.

#[path = "../../linerate-soak/tests/scenarios/mod.rs"]
mod scenarios;

use linerate_testkit::schema::{assert_valid, validator};
use std::process::Command;

use linerate_facts::CounterSource;
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};
use linerate_report::{render_soak, soak_html, soak_json, soak_live_line, soak_textfile, Style};
use linerate_soak::{
    judge, JudgeParams, SoakEvent, SoakInterval, SoakParams, SoakReport, Tracker, Verdict,
};
use serde_json::Value;

/// Two minutes at 1 s: a QDR port per end (local: symbol errors over budget, with a 4-bit
/// counter saturating; remote: clean with a foreign reset), an Ethernet port on the local end
/// with a link down, and one slow interval on the local end.
fn report() -> (SoakReport, Vec<SoakInterval>) {
    let mut t = Tracker::new();
    let mut live = Vec::new();
    for seq in 0..=120u64 {
        for end in [End::Local, End::Remote] {
            let ib = |device: &str, counters: Vec<(&str, u64)>| PortSample {
                phy: None,
                device: device.into(),
                port: "1".into(),
                netdev: Some("ib0".into()),
                kind: SoakPortKind::Infiniband {
                    speed: Some("QDR".into()),
                    signalling_gbps: Some(40.0),
                },
                counters: counters
                    .into_iter()
                    .map(|(n, v)| (CounterSource::IbCounters, n.to_string(), v))
                    .collect(),
            };
            let ports = match end {
                End::Local => vec![
                    ib(
                        "mlx4_0",
                        vec![
                            ("symbol_error", seq * 3),
                            ("local_link_integrity_errors", (seq / 5).min(15)),
                        ],
                    ),
                    PortSample {
                        phy: None,
                        device: "eth\"0".into(),
                        port: String::new(),
                        netdev: Some("eth\"0".into()),
                        kind: SoakPortKind::Ethernet {
                            speed_mbps: Some(25_000),
                            roce: false,
                        },
                        counters: vec![
                            (
                                CounterSource::Carrier,
                                "carrier_down_count".into(),
                                u64::from(seq > 60),
                            ),
                            (
                                CounterSource::Ethtool,
                                "rx_corrected_bits_phy".into(),
                                seq * 1000,
                            ),
                        ],
                    },
                ],
                End::Remote => vec![ib(
                    "mlx4_1",
                    vec![("symbol_error", if seq < 50 { 40 } else { 0 })],
                )],
            };
            let bytes = if end == End::Local && seq == 70 {
                10_000_000_000
            } else {
                40_000_000_000
            };
            let s = SoakSample {
                end,
                seq,
                t_s: seq as f64 + if end == End::Remote { 1000.0 } else { 0.0 },
                ports,
                tcp_retrans_segs: Some(5),
                tcp_out_segs: None,
                bytes_sent: if seq == 0 { 0 } else { bytes },
                bytes_received: if seq == 0 { 0 } else { bytes },
                problems: Vec::new(),
                host: Vec::new(),
            };
            live.extend(t.push_interval(&s));
        }
    }
    let params = SoakParams {
        host: Some("198.18.0.2:9000".into()),
        duration_s: 120.0,
        interval_s: 1.0,
        passive: false,
        rdma: false,
        both_ways: true,
    };
    (judge(&t, &params, &JudgeParams::default()), live)
}

#[test]
fn the_report_judges_what_was_scripted() {
    let (r, _) = report();
    assert_eq!(
        r.port(End::Local, "mlx4_0", "1").unwrap().verdict,
        Verdict::Bad
    );
    assert_eq!(r.port(End::Local, "eth\"0", "").unwrap().rule, "link_down");
    assert_eq!(
        r.port(End::Remote, "mlx4_1", "1").unwrap().verdict,
        Verdict::Clean
    );
    assert_eq!(r.dips_total, 1);
}

#[test]
fn live_line_names_the_rate_and_what_moved() {
    let (_, live) = report();
    let first = soak_live_line(&live[0]);
    assert!(first.starts_with("local"), "{first}");
    assert!(first.contains("640 Gb/s (tx 320, rx 320)"), "{first}");
    assert!(first.contains("mlx4_0/1 symbol_error +3"), "{first}");
    let saturating = live
        .iter()
        .find(|i| i.moved.iter().any(|m| m.saturated))
        .expect("the 4-bit counter saturates");
    assert!(soak_live_line(saturating).contains("local_link_integrity_errors +1 (saturated)"));
    let reset = live
        .iter()
        .find(|i| i.moved.iter().any(|m| m.reset))
        .expect("the reset");
    let line = soak_live_line(reset);
    assert!(
        line.starts_with("remote") && line.contains("(reset)"),
        "{line}"
    );
}

#[test]
fn table_shows_verdict_rule_counters_and_sources() {
    let (r, _) = report();
    let text = render_soak(&r, Style::PLAIN);
    for want in [
        "mlx4_0/1 (QDR, 40 Gb/s signalling, ib0): BAD [local_link_integrity]",
        "symbol_error budget at BER 1e-12: 144/h",
        "local_link_integrity_errors",
        ">= 15",
        "saturated at 15 from sample 75",
        "above the budget for BER 1e-12 at 40 Gb/s: 144/h",
        "mlx4_1/1 (QDR, 40 Gb/s signalling, ib0): CLEAN [clean]",
        "reset 1 time(s)",
        "NVIDIA NVSentinel",
        "throughput dips (below 90% of the median): 1",
        "verdict: BAD (",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // Colour only when asked.
    assert!(!text.contains('\u{1b}'));
    assert!(render_soak(&r, Style { color: true }).contains('\u{1b}'));
}

#[test]
fn json_document_and_stream_lines_match_their_schemas() {
    let (mut r, live) = report();
    let doc: Value = serde_json::from_str(&soak_json(&r).unwrap()).unwrap();
    assert_valid(&validator("soak.schema.json"), &doc);
    assert_eq!(doc["schema_version"], 1);
    let mlx = &doc["ends"][0]["ports"][1];
    assert_eq!(mlx["device"], "mlx4_0");
    let budget = mlx["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "symbol_error_budget")
        .expect("the budget finding");
    assert_eq!(
        (&budget["source"], &budget["threshold"]),
        (&"ibta".into(), &144.0.into())
    );
    // A soak stopped early still makes a valid document.
    r.error = Some("the server closed the control connection".into());
    let stopped: Value = serde_json::from_str(&soak_json(&r).unwrap()).unwrap();
    assert_valid(&validator("soak.schema.json"), &stopped);
    let stream = validator("soak-event.schema.json");
    let params = r.params.clone();
    let thresholds = r.thresholds.clone();
    let lines = [
        SoakEvent::Start {
            schema_version: linerate_facts::SCHEMA_VERSION,
            tool: linerate_facts::TOOL,
            params: &params,
            thresholds: &thresholds,
        }
        .to_line(),
        SoakEvent::Interval { interval: &live[3] }.to_line(),
        SoakEvent::Error {
            error: "stopped".into(),
        }
        .to_line(),
        SoakEvent::End { report: &r }.to_line(),
    ];
    for l in lines {
        let l = l.unwrap();
        assert!(!l.contains('\n'));
        assert_valid(&stream, &serde_json::from_str(&l).unwrap());
    }
    // The schema is not a rubber stamp: a wrong verdict fails it.
    let mut bad = doc.clone();
    bad["ends"][0]["verdict"] = "fine".into();
    assert!(!validator("soak.schema.json").is_valid(&bad));
}

#[test]
fn textfile_has_help_type_and_node_exporter_labels() {
    let (r, _) = report();
    let text = soak_textfile(&r);
    assert!(text.contains("linerate_soak_verdict{end=\"local\",device=\"mlx4_0\",port=\"1\"} 4\n"));
    assert!(text.contains("linerate_soak_verdict{end=\"remote\",device=\"mlx4_1\",port=\"1\"} 0\n"));
    assert!(
        text.contains("device=\"eth\\\"0\",port=\"\""),
        "label values are escaped"
    );
    assert!(text.contains(
        "linerate_soak_saturated{end=\"local\",device=\"mlx4_0\",port=\"1\",counter=\"local_link_integrity_errors\"} 1\n"
    ));
    assert!(text.contains("linerate_soak_errors_per_hour{end=\"local\",device=\"mlx4_0\",port=\"1\",counter=\"symbol_error\"} 10800\n"));
    assert!(text.contains("linerate_soak_symbol_error_budget_per_hour{end=\"local\",device=\"mlx4_0\",port=\"1\"} 144\n"));
    assert!(text.contains("kind=\"pre_fec\",estimate=\"true\""));
    assert!(text.contains("linerate_soak_duration_seconds{end=\"local\"} 120\n"));
    assert!(text.contains("linerate_soak_overall_verdict 4\n"));
    // Every sample belongs to a family announced by HELP and TYPE, and carries no timestamp.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        assert!(text.contains(&format!("# HELP {name} ")), "{name}");
        assert!(text.contains(&format!("# TYPE {name} gauge\n")), "{name}");
        // After the name and labels: the value alone, no timestamp.
        let rest = match line.rsplit_once('}') {
            Some((_, rest)) => rest,
            None => line.split_once(' ').expect("name value").1,
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        assert_eq!(fields.len(), 1, "{line}");
        assert!(fields[0].parse::<f64>().is_ok(), "{line}");
    }
}

#[test]
fn promtool_accepts_the_textfile() {
    let (r, _) = report();
    let text = soak_textfile(&r);
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        linerate_testkit::skip("promtool is not installed (Debian package prometheus)");
        return;
    };
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(text.as_bytes()).expect("write to promtool");
    }
    let out = child.wait_with_output().expect("promtool runs");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And promtool is not a rubber stamp here: a broken line fails it.
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("promtool runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(format!("{text}linerate_soak_verdict{{end=\"x\" 1\n").as_bytes())
            .expect("write");
    }
    assert!(!child.wait().expect("promtool").success());
}

#[test]
fn html_timeline_is_self_contained_and_marks_events() {
    let (r, _) = report();
    let html = soak_html(&r);
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    for id in ["timeline-local", "timeline-remote", "verdicts", "counters"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    // The local end: symbol errors moved in every one of its 120 intervals; one dip.
    let local = html.split("id=\"timeline-remote\"").next().unwrap();
    assert_eq!(local.matches("class=\"event\"").count(), 120);
    assert_eq!(local.matches("class=\"dip\"").count(), 1);
    // The remote end: one reset, marked purple.
    let remote = html.split("id=\"timeline-remote\"").nth(1).unwrap();
    assert_eq!(remote.matches("class=\"event\"").count(), 1);
    assert!(remote.contains("#9333ea"));
    assert!(html.contains("eth&quot;0"), "names are escaped");
    assert!(html.contains("class=\"verdict error\""));
}

#[test]
fn an_empty_soak_renders_everywhere() {
    // The server refused at once: no sample on either end. Every renderer still writes a
    // valid, honest document.
    let mut r = judge(
        &Tracker::new(),
        &SoakParams::default(),
        &JudgeParams::default(),
    );
    r.error = Some("connection refused".into());
    assert_eq!(r.verdict, Verdict::Insufficient);
    let doc: Value = serde_json::from_str(&soak_json(&r).unwrap()).unwrap();
    assert_valid(&validator("soak.schema.json"), &doc);
    assert!(render_soak(&r, Style::PLAIN).contains("stopped early: connection refused"));
    let text = soak_textfile(&r);
    assert!(text.contains("linerate_soak_overall_verdict 1\n"));
    assert!(!text.contains("linerate_soak_verdict{"));
    let html = soak_html(&r);
    assert!(html.contains("connection refused") && html.contains("insufficient"));
}

#[test]
fn a_long_soak_is_drawn_in_buckets() {
    let mut t = Tracker::new();
    for seq in 0..=4000u64 {
        t.push(&SoakSample {
            end: End::Local,
            seq,
            t_s: seq as f64,
            ports: Vec::new(),
            tcp_retrans_segs: None,
            tcp_out_segs: None,
            bytes_sent: 1_000_000,
            bytes_received: 1_000_000,
            problems: Vec::new(),
            host: Vec::new(),
        });
    }
    let r = judge(&t, &SoakParams::default(), &JudgeParams::default());
    let html = soak_html(&r);
    assert!(
        html.contains("4000 intervals, drawn as 1334 buckets"),
        "caption"
    );
    let points = html
        .split("stroke=\"#2563eb\" stroke-width=\"2\" points=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the throughput line");
    assert_eq!(points.split(' ').count(), 2 * 1334);
}

/// The text file and the JSON document of a judged soak, named.
fn exported(name: &str, r: &SoakReport) -> (String, String, Value) {
    let doc: Value = serde_json::from_str(&soak_json(r).unwrap()).unwrap();
    assert_valid(&validator("soak.schema.json"), &doc);
    (name.to_string(), soak_textfile(r), doc)
}

#[test]
fn the_documented_promql_recipe_fires_exactly_with_the_verdicts() {
    // Every scripted scenario (the six of #13, the five cases of #23, Ethernet, the reset,
    // saturation, congestion and link-down ones) and this file's own soak: the alerts of
    // docs/soak.md fire on exactly the ports the JSON calls marginal or bad.
    let mut soaks: Vec<(String, String, Value)> = scenarios::all()
        .iter()
        .map(|(name, r)| exported(name, r))
        .collect();
    soaks.push(exported("report", &report().0));
    // The scenarios have both kinds of port, so the test can fail either way.
    let cable =
        |s: &(String, String, Value)| linerate_testkit::promtool::soak_cable_ports(&s.2).len();
    assert!(soaks.iter().map(cable).sum::<usize>() >= 10);
    assert!(soaks
        .iter()
        .any(|s| s.2["verdict"] != "bad" && s.2["verdict"] != "marginal"));
    linerate_testkit::promtool::assert_soak_recipe_agrees(&soaks);
}

#[test]
fn the_recipe_test_is_no_rubber_stamp() {
    // The same recipe against an expectation the verdicts do not make fails.
    let (rules, alerts) = linerate_testkit::promtool::soak_recipe();
    let (name, text, doc) = exported("pegged_then_cleared", &scenarios::pegged_then_cleared());
    let mut cases = linerate_testkit::promtool::soak_cases(&[(name, text, doc)], &alerts);
    assert!(!cases[0].alerts[0].1.is_empty());
    cases[0].alerts[0].1.clear();
    match linerate_testkit::promtool::test_rules(&rules, &cases) {
        Ok(false) => {
            linerate_testkit::skip("promtool is not installed (Debian package prometheus)");
        }
        r => assert!(r.is_err(), "{r:?}"),
    }
    // And the old recipe (errors per hour over the budget, without the floor or PAM4) would
    // have fired where the verdict does not: 3 symbol errors in 20 s on EDR, and NDR.
    let r = scenarios::budgets_and_pam4();
    let text = soak_textfile(&r);
    assert!(text.contains("linerate_soak_errors_per_hour{end=\"local\",device=\"mlx5_0\",port=\"1\",counter=\"symbol_error\"} 540\n"));
    assert!(text.contains("linerate_soak_check_limit{end=\"local\",device=\"mlx5_0\",port=\"1\",rule=\"symbol_error_budget\",counter=\"symbol_error\",verdict=\"bad\",unit=\"per_hour\"} 540\n"));
    assert!(!text
        .contains("linerate_soak_symbol_error_budget_per_hour{end=\"remote\",device=\"mlx5_2\""));
}
