//! Replays the iperf3 fuzz seed corpus (`fuzz/seeds/iperf3_*/`) through the fuzz targets' own
//! checks, so plain `cargo test` on stable exercises every seed and every minimised crash kept
//! there, without cargo-fuzz or nightly. See `fuzz/README.md`.
//!
//! The generated part of the corpus comes from [`generated_seeds`]: messages real iperf3 binaries
//! sent (from the golden transcripts) and hostile ones. After changing it, rewrite the files with
//! `cargo test -p linerate-iperf3 --test fuzz_seeds -- --ignored write_seeds`.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use common::{all, Dir, Transcript};

#[path = "../../../fuzz/src/iperf3.rs"]
mod checks;

const TARGETS: [&str; 3] = ["iperf3_frames", "iperf3_params", "iperf3_results"];

fn seed_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target)
}

/// Every file of a target's seed directory, by name.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = seed_dir(target);
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read(&path).expect("a readable seed"))
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

/// Seeds that reproduce a bug found by fuzzing and not fixed yet: (target, file, text the failure
/// contains). Each must still fail, with that text; once its bug is fixed the test says so, and
/// the entry goes (the seed stays, as a regression test).
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

/// Runs `check` on every seed of `target`, reporting every seed that fails rather than the first.
fn replay<T>(target: &str, check: impl Fn(&[u8]) -> T) -> Vec<(String, T)> {
    let mut results = Vec::new();
    let mut failed = Vec::new();
    for (name, bytes) in seeds(target) {
        let known = KNOWN_FAILURES
            .iter()
            .find(|(t, file, _)| *t == target && *file == name)
            .map(|(_, _, why)| *why);
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&bytes)));
        match (outcome, known) {
            (Ok(r), None) => results.push((name, r)),
            (Ok(_), Some(_)) => failed.push(format!(
                "fuzz/seeds/{target}/{name}: passes now; remove it from KNOWN_FAILURES"
            )),
            (Err(panic), known) => {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                if known.is_none_or(|expected| !why.contains(expected)) {
                    failed.push(format!("fuzz/seeds/{target}/{name}: {why}"));
                }
            }
        }
    }
    assert!(failed.is_empty(), "failing seeds:\n{}", failed.join("\n"));
    results
}

#[test]
fn frames_seeds() {
    let results = replay("iperf3_frames", checks::check_frames);
    let most = |f: fn(&checks::Outcome) -> usize| results.iter().map(|(_, o)| f(o)).max();
    // A whole test: cookie, params, TEST_END, results, IPERF_DONE; PARAM_EXCHANGE,
    // CREATE_STREAMS, TEST_START, TEST_RUNNING, EXCHANGE_RESULTS, results, DISPLAY_RESULTS.
    assert_eq!(
        most(|o| o.server_events),
        Some(5),
        "a whole conversation, client side"
    );
    assert_eq!(
        most(|o| o.client_events),
        Some(7),
        "a whole conversation, server side"
    );
    assert!(most(|o| o.frames) >= Some(2), "frames back to back");
    assert!(
        results
            .iter()
            .any(|(_, o)| o.frames == 0 && o.server_events <= 1),
        "broken ones"
    );
}

#[test]
fn params_seeds() {
    let results = replay("iperf3_params", checks::check_params);
    let verdicts: BTreeSet<Option<bool>> = results.iter().map(|(_, v)| *v).collect();
    assert_eq!(
        verdicts,
        BTreeSet::from([None, Some(false), Some(true)]),
        "the seeds hold accepted, refused and undecodable parameters"
    );
}

#[test]
fn results_seeds() {
    let results = replay("iperf3_results", checks::check_results);
    let counts: BTreeSet<Option<usize>> = results.iter().map(|(_, v)| *v).collect();
    assert!(counts.contains(&None), "undecodable results");
    assert!(
        counts.iter().flatten().any(|n| *n >= 4),
        "results of four streams"
    );
}

/// Every generated seed is committed. Only by name: a committed seed may be older than the
/// generator.
#[test]
fn generated_seeds_are_committed() {
    for target in TARGETS {
        for (name, _) in generated_seeds(target) {
            let path = seed_dir(target).join(&name);
            assert!(
                path.is_file(),
                "{} is missing: rerun with --ignored write_seeds",
                path.display()
            );
        }
    }
}

/// Writes the generated seeds into `fuzz/seeds/`.
#[test]
#[ignore = "writes fuzz/seeds/; run by hand after changing the generator"]
fn write_seeds() {
    for target in TARGETS {
        let dir = seed_dir(target);
        fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in generated_seeds(target) {
            fs::write(dir.join(name), bytes).unwrap();
        }
    }
}

fn generated_seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let transcripts = all();
    match target {
        "iperf3_frames" => frames_seeds_generated(&transcripts),
        "iperf3_params" => params_seeds_generated(&transcripts),
        "iperf3_results" => results_seeds_generated(&transcripts),
        other => panic!("no target {other}"),
    }
}

fn find<'a>(transcripts: &'a [Transcript], name: &str) -> &'a Transcript {
    transcripts
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no transcript {name}"))
}

/// The JSON messages in one side's bytes: the frames after the cookie (client) or between the
/// state bytes (server), found by their lengths.
fn messages(t: &Transcript, d: Dir) -> Vec<Vec<u8>> {
    let bytes = t.stream(d);
    let mut out = Vec::new();
    let mut at = if d == Dir::C2s { 37 } else { 0 };
    while at + 4 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if bytes[at] == 0 && len > 1 && at + 4 + len <= bytes.len() && bytes[at + 4] == b'{' {
            out.push(bytes[at + 4..at + 4 + len].to_vec());
            at += 4 + len;
        } else {
            at += 1;
        }
    }
    out
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// A selector byte (read size and limit, see `check_frames`) and a stream.
fn selected(selector: u8, stream: &[u8]) -> Vec<u8> {
    let mut v = vec![selector];
    v.extend_from_slice(stream);
    v
}

fn frames_seeds_generated(ts: &[Transcript]) -> Vec<(String, Vec<u8>)> {
    // Selectors: read size (selector % 64) + 1; limit by selector / 64: 0 iperf3's params cap,
    // 1 a 64-byte cap, 2 linerate's results cap.
    let mut out = vec![];
    for (i, (name, sel)) in [
        ("3.1.3/tcp.txt", 0x00),
        ("3.12/udp64.txt", 0x86),
        ("3.21/bidir.txt", 0x83),
        ("3.21/server-output-json.txt", 0xbf),
        ("3.7/reverse.txt", 0x84),
    ]
    .into_iter()
    .enumerate()
    {
        let t = find(ts, name);
        let tag = name.replace(['/', '.'], "_").replace("_txt", "");
        out.push((
            format!("{:02}-{tag}-client.bin", 2 * i + 1),
            selected(sel, &t.stream(Dir::C2s)),
        ));
        out.push((
            format!("{:02}-{tag}-server.bin", 2 * i + 2),
            selected(sel, &t.stream(Dir::S2c)),
        ));
    }
    let t = find(ts, "3.21/error-max-duration.txt");
    out.push((
        "11-3_21-server-error.bin".into(),
        selected(0x80, &t.stream(Dir::S2c)),
    ));
    let t = find(ts, "3.21/busy.txt");
    out.push((
        "12-3_21-busy.bin".into(),
        selected(0x80, &t.stream(Dir::S2c)),
    ));
    let cookie = b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\0".to_vec();
    let mut over = cookie.clone();
    over.extend_from_slice(&8193u32.to_be_bytes());
    out.push(("13-params-over-8k.bin".into(), selected(0x00, &over)));
    let mut empty = cookie.clone();
    empty.extend_from_slice(&[0, 0, 0, 0]);
    out.push(("14-empty-message.bin".into(), selected(0x00, &empty)));
    let mut truncated = cookie.clone();
    truncated.extend_from_slice(&[0, 0, 0, 100, b'{', b'"']);
    out.push(("15-truncated-body.bin".into(), selected(0x02, &truncated)));
    out.push((
        "16-http.bin".into(),
        selected(0x03, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    ));
    let mut not_json = cookie.clone();
    not_json.extend(frame(b"{\"tcp\":tru"));
    out.push(("17-params-not-json.bin".into(), selected(0x05, &not_json)));
    let mut wrong_states = cookie;
    wrong_states.extend(frame(br#"{"tcp":true,"parallel":1,"time":1}"#));
    wrong_states.extend_from_slice(&[13, 0xfe, 0x77, 4, 16, 16]);
    out.push((
        "18-states-out-of-order.bin".into(),
        selected(0x01, &wrong_states),
    ));
    out.push((
        "19-huge-length.bin".into(),
        selected(0x80, &[0xff, 0xff, 0xff, 0xff, 0]),
    ));
    let t = find(ts, "3.21/udp64.txt");
    let both: Vec<u8> = messages(t, Dir::C2s)
        .iter()
        .flat_map(|m| frame(m))
        .collect();
    out.push((
        "20-params-then-results-frames.bin".into(),
        selected(0x8f, &both),
    ));
    out
}

fn params_seeds_generated(ts: &[Transcript]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for name in [
        "3.1.3/udp64.txt",
        "3.7/bidir.txt",
        "3.9/reverse.txt",
        "3.12/tcp.txt",
        "3.16/parallel.txt",
        "3.18/server-output-json.txt",
        "3.21/udp64.txt",
        "3.21/error-bitrate-limit.txt",
    ] {
        let t = find(ts, name);
        let body = messages(t, Dir::C2s).into_iter().next().unwrap();
        let tag = name.replace(['/', '.'], "_").replace("_txt", "");
        out.push((format!("{:02}-{tag}.json", out.len() + 1), body));
    }
    let hand: [(&str, &[u8]); 12] = [
        ("every-key", br#"{"sctp":true,"omit":1,"server_affinity":2,"time":3,"num":4,"blockcount":5,"MSS":6,"nodelay":true,"parallel":7,"reverse":true,"bidirectional":true,"mptcp":true,"window":8,"len":9,"bandwidth":10,"fqrate":11,"pacing_timer":12,"burst":13,"gso":1,"gso_dg_size":14,"gso_bf_size":15,"gro":1,"gro_bf_size":16,"TOS":17,"flowlabel":18,"title":"t","extra_data":"e","congestion":"bbr","congestion_used":"cubic","get_server_output":1,"udp_counters_64bit":1,"repeating_payload":1,"no_fq_socket_pacing":1,"zerocopy":1,"dont_fragment":1,"authtoken":"tok","skip_rx_copy":1,"client_version":"3.21"}"#),
        ("false-flags", br#"{"tcp":true,"parallel":1,"reverse":false,"nodelay":null,"get_server_output":"no"}"#),
        ("wrong-type", br#"{"tcp":true,"time":"10","parallel":1}"#),
        ("over-every-limit", br#"{"udp":true,"omit":601,"time":86401,"parallel":129,"len":65508,"window":536870913,"MSS":32768,"burst":1001,"TOS":256}"#),
        ("unsigned-minus-one", br#"{"tcp":true,"parallel":1,"window":18446744073709551615,"server_affinity":18446744073709551615}"#),
        ("negatives", br#"{"tcp":true,"parallel":-1,"num":-5,"bandwidth":-1,"time":-3}"#),
        ("fractions-and-huge", br#"{"tcp":true,"parallel":1.9,"time":1e300,"omit":-1e300,"len":131072.5}"#),
        ("unknown-and-nested", br#"{"tcp":true,"parallel":1,"future":{"a":[1,2,{"b":null}]},"x":"\u0000\ud83d\ude00"}"#),
        ("not-json", b"{\"tcp\":tru"),
        ("array", b"[1,2,3]"),
        ("unpaced-bidir-max", br#"{"tcp":true,"parallel":128,"bidirectional":true,"time":86400,"omit":600,"len":1048576,"window":536870912,"client_version":"3.20"}"#),
        ("duplicate-keys", br#"{"tcp":true,"parallel":1,"parallel":200,"time":1}"#),
    ];
    for (tag, body) in hand {
        out.push((format!("{:02}-{tag}.json", out.len() + 1), body.to_vec()));
    }
    out
}

fn results_seeds_generated(ts: &[Transcript]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, d) in [
        ("3.1.3/tcp.txt", Dir::C2s),
        ("3.1.3/udp64.txt", Dir::S2c),
        ("3.7/bidir.txt", Dir::S2c),
        ("3.12/reverse.txt", Dir::S2c),
        ("3.12/udp-impaired.txt", Dir::S2c),
        ("3.16/omit.txt", Dir::C2s),
        ("3.18/server-output-text.txt", Dir::S2c),
        ("3.21/parallel.txt", Dir::C2s),
        ("3.21/server-output-json.txt", Dir::S2c),
    ] {
        let t = find(ts, name);
        let body = messages(t, d).into_iter().next_back().unwrap();
        let side = if d == Dir::C2s { "client" } else { "server" };
        let tag = name.replace(['/', '.'], "_").replace("_txt", "");
        out.push((format!("{:02}-{tag}-{side}.json", out.len() + 1), body));
    }
    let head = r#""cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5"#;
    let stream = r#""id":1,"bytes":1,"retransmits":-1,"jitter":0,"errors":0,"packets":0"#;
    let hand: Vec<(&str, String)> = vec![
        (
            "four-streams",
            format!(
                r#"{{{head},"sender_has_retransmits":1,"streams":[{{{stream}}},{{"id":3,"bytes":2,"retransmits":0,"jitter":0.5,"errors":1,"packets":9}},{{"id":4,"bytes":3,"retransmits":5,"jitter":1e-9,"errors":0,"packets":0}},{{"id":5,"bytes":4,"retransmits":1,"jitter":0,"errors":0,"packets":0}}]}}"#
            ),
        ),
        (
            "missing-cpu",
            format!(
                r#"{{"cpu_util_total":1,"sender_has_retransmits":1,"streams":[{{{stream}}}]}}"#
            ),
        ),
        (
            "omitted-half",
            format!(
                r#"{{{head},"sender_has_retransmits":0,"streams":[{{{stream},"omitted_errors":0}}]}}"#
            ),
        ),
        (
            "retransmits-flag-2",
            format!(r#"{{{head},"sender_has_retransmits":2,"streams":[]}}"#),
        ),
        (
            "negative-bytes-id-0",
            format!(
                r#"{{{head},"sender_has_retransmits":0,"streams":[{{"id":0,"bytes":-1,"retransmits":0,"jitter":0,"errors":0,"packets":0}}]}}"#
            ),
        ),
        (
            "streams-not-array",
            format!(r#"{{{head},"sender_has_retransmits":0,"streams":{{"id":1}}}}"#),
        ),
        (
            "stream-not-object",
            format!(r#"{{{head},"sender_has_retransmits":0,"streams":[1,"x",null]}}"#),
        ),
        (
            "huge-floats",
            r#"{"cpu_util_total":1e308,"cpu_util_user":-1e308,"cpu_util_system":18446744073709551615,"sender_has_retransmits":-1,"streams":[{"id":4294967295,"bytes":9223372036854775807,"retransmits":-9223372036854775808,"jitter":9007199254740993,"errors":0,"packets":0,"start_time":-0.0,"end_time":5e-324}]}"#.to_string(),
        ),
        ("not-json", "{\"cpu_util_total\":".to_string()),
        (
            "server-output-odd",
            format!(
                r#"{{{head},"sender_has_retransmits":-1,"server_output_json":[1,{{"start":{{"version":"iperf 3.99"}}}}],"server_output_text":"a\u0000b","streams":[]}}"#
            ),
        ),
    ];
    for (tag, body) in hand {
        out.push((
            format!("{:02}-{tag}.json", out.len() + 1),
            body.into_bytes(),
        ));
    }
    out
}
