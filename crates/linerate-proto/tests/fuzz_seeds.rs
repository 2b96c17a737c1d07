//! Replays the fuzz seed corpus (`fuzz/seeds/TARGET/*`) through the fuzz targets' own checks, so
//! plain `cargo test` on stable exercises every seed and every minimised crash kept there, without
//! cargo-fuzz or nightly. See `fuzz/README.md`.
//!
//! The generated part of the corpus comes from [`generated_seeds`]; after changing it, rewrite the
//! files with `cargo test -p linerate-proto --test fuzz_seeds -- --ignored write_seeds`.

use std::collections::BTreeSet;
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use linerate_proto::session::ServerEnd;
use linerate_proto::{
    write_msg, CpuUsage, Direction, FileSpec, FileStats, HostCpuLoad, IntervalSample, LatencyStats,
    LinkTraffic, Msg, RdmaListen, RdmaOp, RdmaSpec, RdmaTargetStats, RefusalKind, SideResults,
    Stalls, StreamResult, TcpLimited, TcpStats, TestKind, TestParams, UdpStats, UdpWarmup, MAGIC,
    MAX_CONTROL_FRAME, PROTOCOL_VERSION,
};

#[path = "../../../fuzz/src/lib.rs"]
mod checks;

const TARGETS: [&str; 4] = [
    "decode_frame",
    "validate_params",
    "client_session",
    "server_session",
];

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
// `crash-float-roundtrip-1ulp.bin` was one: serde_json without `float_roundtrip` parsed some f64
// one ULP off, so floats changed on every round trip. Fixed by enabling that feature in the root
// Cargo.toml; the seed stays as a regression test.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

/// Runs `check` on every seed of `target`, reporting every seed that fails rather than the first,
/// and every known failure that no longer fails as it should.
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
fn decode_frame_seeds() {
    let results = replay("decode_frame", checks::check_decode_frame);
    let seen: BTreeSet<&str> = results
        .iter()
        .flat_map(|(_, msgs)| msgs.iter().map(Msg::name))
        .collect();
    let all: BTreeSet<&str> = generated_seeds("decode_frame")
        .iter()
        .flat_map(|(_, bytes)| checks::check_decode_frame(bytes))
        .map(|m| m.name())
        .collect();
    assert_eq!(all.len(), 13, "the generator covers every Msg variant");
    assert_eq!(
        seen, all,
        "the seeds hold a valid frame of every Msg variant"
    );
}

#[test]
fn validate_params_seeds() {
    let results = replay("validate_params", checks::check_validate_params);
    let verdicts: BTreeSet<Option<bool>> = results.iter().map(|(_, v)| *v).collect();
    assert_eq!(
        verdicts,
        BTreeSet::from([None, Some(false), Some(true)]),
        "the seeds hold accepted, refused and unparsable parameters"
    );
}

#[test]
fn client_session_seeds() {
    let results = replay("client_session", checks::check_client_session);
    let ends: BTreeSet<String> = results
        .iter()
        .map(|(name, end)| match end {
            Some(Ok(())) => "results".to_string(),
            Some(Err(why)) => why.clone(),
            None => format!("{name}: going on"),
        })
        .collect();
    // Each golden conversation ends with the server's results; the hostile ones say why not.
    for (name, end) in &results {
        if name.contains("golden") {
            assert_eq!(end, &Some(Ok(())), "{name}");
        }
    }
    for why in [
        "results",
        "the server's first bytes are not a linerate frame",
        "no answer within 10 s of the hello",
        "frame of 4294967295 bytes exceeds the limit of 16777216 bytes (not a linerate peer, or a hostile one)",
        "protocol: expected results, got interval",
    ] {
        assert!(ends.contains(why), "no seed ends with `{why}`: {ends:?}");
    }
}

#[test]
fn server_session_seeds() {
    let results = replay("server_session", checks::check_server_session);
    for (name, end) in &results {
        if name.contains("golden") {
            assert_eq!(end, &Some(ServerEnd::Served), "{name}");
        }
    }
    let ends: Vec<String> = results.iter().map(|(_, e)| format!("{e:?}")).collect();
    for want in [
        "Some(Served)",
        "Some(AuthFailed)",
        "Some(Dropped(\"timed out waiting for the peer\"))",
        "Some(Refused { reason: \"bad magic\", params: None })",
        "None",
    ] {
        assert!(
            ends.iter().any(|e| e == want),
            "no seed ends with {want}: {ends:?}"
        );
    }
}

/// Every generated seed is committed. Only by name: a committed seed may be older than the
/// generator (an optional field added since), and then it checks that older peers still decode.
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

#[test]
fn memory_bound_is_the_documented_one() {
    // 64 streams × 2 directions × 1 MiB with the default limits.
    assert_eq!(
        checks::memory_bound(&linerate_proto::Limits::default()),
        64 * 2 * 1024 * 1024
    );
}

/// (Re)writes the generated seeds; other files in the seed directories (minimised crashes) stay.
#[test]
#[ignore = "writes fuzz/seeds; run on purpose after changing the generator"]
fn write_seeds() {
    for target in TARGETS {
        let dir = seed_dir(target);
        fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in generated_seeds(target) {
            fs::write(dir.join(name), bytes).unwrap();
        }
    }
}

fn frame(m: &Msg) -> Vec<u8> {
    let mut buf = Vec::new();
    write_msg(&mut buf, m).unwrap();
    buf
}

fn raw_frame(body: &[u8]) -> Vec<u8> {
    let mut buf = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    buf.extend_from_slice(body);
    buf
}

fn params() -> TestParams {
    TestParams {
        length: 128 * 1024,
        ..TestParams::new(TestKind::TcpBw, Direction::Send)
    }
}

fn interval() -> IntervalSample {
    IntervalSample {
        start_s: 0.1 + 0.2,
        end_s: 1.300_000_000_000_000_3,
        bytes: vec![0, 1_250_000_000, u64::MAX],
        retransmits: Some(17),
        lost: None,
        omitted: false,
    }
}

/// What a server measured of its host during the test.
fn host_load() -> Option<Box<HostCpuLoad>> {
    Some(Box::new(HostCpuLoad {
        seconds: 10.002,
        cores: 2,
        busiest_core_percent: Some(100.0),
        busiest_core_others_percent: Some(61.75),
        own_cores: Some(0.9),
        other_cores: Some(1.1),
        steal_cores: None,
    }))
}

fn stalls() -> Option<Box<Stalls>> {
    Some(Box::new(Stalls {
        count: 3,
        seconds: 1.8,
        longest_s: 1.2,
        spans: vec![(0.5, 1.7), (2.0, 2.35), (f64::MAX, -0.0)],
    }))
}

fn link() -> Option<Box<LinkTraffic>> {
    Some(Box::new(LinkTraffic {
        interface: "lo".into(),
        seconds: 10.0,
        rx_bytes: u64::MAX,
        tx_bytes: 0,
    }))
}

fn qdiscs() -> Option<Vec<linerate_facts::QdiscDelta>> {
    Some(vec![linerate_facts::QdiscDelta {
        interface: "ifb0".into(),
        kind: "netem".into(),
        handle: "8001:".into(),
        parent: "root".into(),
        side: linerate_facts::QdiscSide::Ingress,
        packets: u64::MAX,
        drops: 755,
        overlimits: 0,
        requeues: 3,
        reset: true,
        reorders: false,
        tests: Vec::new(),
    }])
}

fn results() -> SideResults {
    SideResults {
        streams: vec![
            StreamResult {
                id: 0,
                bytes_sent: 12_500_000_000,
                bytes_received: 0,
                seconds: 10.000_123_456_789,
                tcp: Some(TcpStats {
                    retransmits: 3,
                    rtt_us: 48,
                    rttvar_us: 7,
                    cwnd: 10,
                    mss: 8948,
                    data_segs_out: 1_396_000,
                    limited: Some(TcpLimited {
                        busy_us: 9_990_000,
                        rwnd_us: 120_000,
                        sndbuf_us: 0,
                    }),
                    dsack_dups: None,
                }),
                udp: None,
                cpu_s: 2.0 / 3.0,
                ..StreamResult::default()
            },
            StreamResult {
                id: 1,
                bytes_sent: 0,
                bytes_received: 14_000,
                seconds: 1e-9,
                tcp: None,
                udp: Some(UdpStats {
                    packets: 10,
                    lost: 1,
                    out_of_order: 2,
                    duplicates: 0,
                    jitter_us: 5e-324,
                    warmup: Some(UdpWarmup {
                        seq: u64::MAX,
                        packets: 3,
                    }),
                }),
                cpu_s: 0.0,
                ..StreamResult::default()
            },
            StreamResult {
                id: 2,
                bytes_received: 1 << 30,
                seconds: 0.5,
                file: Some(FileStats {
                    disk_bytes: 1 << 30,
                    disk_s: 0.25,
                    net_wait_s: f64::MIN_POSITIVE,
                }),
                ..StreamResult::default()
            },
        ],
        cpu: CpuUsage {
            user_s: 0.012,
            system_s: 1.797_693_134_862_315_7e308,
            wall_s: 10.0,
            percent: 100.0 / 3.0,
        },
        intervals: vec![interval(), IntervalSample::default()],
        latency: Some(LatencyStats {
            p50: 12.5,
            p90: 20.25,
            p99: 99.125,
            p999: 1234.5678,
            max: 2.225_073_858_507_201e-308,
            min: -0.0,
            mean: 15.333_333_333_333_334,
            stddev: 4.1e-5,
            transactions: 812_345,
            lost: 0,
        }),
        error: Some("peer reset after 3.2 s: \"connection reset\" \u{1f}\u{e9}".into()),
        fsync_s: Some(0.125),
        spin_us: None,
        host_load: host_load(),
        stalls: stalls(),
        link: link(),
        qdiscs: qdiscs(),
        udp_receive: Some(linerate_facts::UdpReceive {
            in_datagrams: u64::MAX,
            rcvbuf_errors: 1 << 40,
            in_errors: 7,
        }),
        rdma: Some(RdmaTargetStats {
            provider: "verbs".into(),
            domain: "mlx5_0".into(),
            messages: 1 << 20,
            bytes: u64::MAX,
            verify_errors: 3,
        }),
    }
}

/// The generated seed corpus of `target`, by file name.
fn generated_seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    match target {
        "decode_frame" => decode_frame_seeds_generated(),
        "validate_params" => validate_params_seeds_generated(),
        "client_session" => client_session_seeds_generated(),
        "server_session" => server_session_seeds_generated(),
        _ => panic!("unknown target {target}"),
    }
}

/// One frame of each message type, fields at interesting values (`hello` and `request`
/// are given: the stream seeds reuse them).
fn valid_messages(hello: &Msg, request: &Msg) -> [(&'static str, Msg); 13] {
    // The committed seed is older: its inventory is arbitrary JSON, which still decodes (every
    // field named as unknown), as an older or foreign peer's would.
    let inventory = Box::new(linerate_facts::HostFacts {
        address: "192.0.2.1".into(),
        name: Some("eth0".into()),
        ..linerate_facts::HostFacts::default()
    });
    [
        ("01-hello", hello.clone()),
        (
            "02-server_hello",
            Msg::ServerHello {
                protocol: PROTOCOL_VERSION,
                version: "0.1.0".into(),
                auth: true,
                nonce: "ffeeddccbbaa99887766554433221100".into(),
            },
        ),
        (
            "03-auth",
            Msg::Auth {
                proof: "a".repeat(64),
            },
        ),
        (
            "04-auth_ok",
            Msg::AuthOk {
                proof: "0f".repeat(32),
            },
        ),
        ("05-request", request.clone()),
        (
            "06-accepted",
            Msg::Accepted {
                test_id: u64::MAX,
                cookie: "c0ffee".into(),
                udp_port: Some(65_535),
                memory_bytes: 16 * 1024 * 1024,
                inventory: Some(inventory),
                rdma: Some(RdmaListen {
                    ports: vec![0, 1, 65_535],
                    provider: "tcp".into(),
                    domain: "lo".into(),
                }),
                listen_port: None,
            },
        ),
        (
            "07-refused",
            Msg::Refused {
                reason: "65 streams requested; this server allows at most 64".into(),
                kind: RefusalKind::OverLimit,
            },
        ),
        (
            "08-data_hello",
            Msg::DataHello {
                cookie: "c0ffee".into(),
                stream: 7,
            },
        ),
        ("09-start", Msg::Start),
        ("10-interval", Msg::Interval { sample: interval() }),
        ("11-done", Msg::Done),
        ("12-results", Msg::Results { results: results() }),
        (
            "13-error",
            Msg::Error {
                message: "unexpected message \u{2014} \\ \"quoted\"\n".into(),
            },
        ),
    ]
}

fn decode_frame_seeds_generated() -> Vec<(String, Vec<u8>)> {
    let hello = Msg::Hello {
        magic: MAGIC.into(),
        protocol: PROTOCOL_VERSION,
        version: "0.1.0".into(),
        nonce: "00112233445566778899aabbccddeeff".into(),
    };
    let request = Msg::Request {
        params: TestParams {
            direction: Direction::Bidir,
            streams: 8,
            window: Some(4 * 1024 * 1024),
            congestion: Some("bbr".into()),
            ..params()
        },
    };
    let valid = valid_messages(&hello, &request);
    let mut out: Vec<(String, Vec<u8>)> = valid
        .iter()
        .map(|(name, m)| (format!("{name}.bin"), frame(m)))
        .collect();

    let mut stream = frame(&hello);
    stream.extend(frame(&request));
    stream.extend(frame(&Msg::Start));
    out.push(("14-stream-hello-request-start.bin".into(), stream));
    out.push(("15-truncated-length.bin".into(), vec![0, 0, 1]));
    let mut cut = frame(&hello);
    cut.truncate(cut.len() - 5);
    out.push(("16-truncated-body.bin".into(), cut));
    let mut over = (MAX_CONTROL_FRAME + 1).to_be_bytes().to_vec();
    over.extend_from_slice(b"{\"type\":\"start\"}");
    out.push(("17-length-over-limit.bin".into(), over));
    let mut empty_then_start = raw_frame(b"");
    empty_then_start.extend(raw_frame(b"{\"type\":\"start\"}"));
    out.push(("18-empty-frame-then-start.bin".into(), empty_then_start));
    out.push((
        "19-garbage-http.bin".into(),
        b"GET / HTTP/1.1\r\nHost: linerate\r\n\r\n".to_vec(),
    ));
    out.push((
        "20-malformed-fields.bin".into(),
        raw_frame(
            br#"{"type":"accepted","test_id":18446744073709551616,"cookie":"\ud800","udp_port":70000,"memory_bytes":-1,"inventory":[1e999]}"#,
        ),
    ));
    // A refusal of a kind a newer server may send: decodes, as `other`.
    // An older server's refusal, without a kind: decodes, as `other`.
    out.push((
        "22-refused-without-kind.bin".into(),
        raw_frame(
            br#"{"type":"refused","reason":"65 streams requested; this server allows at most 64"}"#,
        ),
    ));
    out.push((
        "21-refused-unknown-kind.bin".into(),
        raw_frame(
            br#"{"type":"refused","reason":"a newer server's reason","kind":"from_the_future"}"#,
        ),
    ));
    out
}

#[expect(
    clippy::too_many_lines,
    reason = "a table of seeds, one request per case, read top to bottom; splitting it would only \
              scatter the rows"
)]
fn validate_params_seeds_generated() -> Vec<(String, Vec<u8>)> {
    let json = |p: &TestParams| serde_json::to_vec(p).unwrap();
    vec![
        ("01-tcp_bw.json", json(&params())),
        (
            "02-bidir-at-limits.json",
            json(&TestParams {
                direction: Direction::Bidir,
                streams: 64,
                length: 1024 * 1024,
                duration_ms: 300_000,
                omit_ms: 299_999,
                interval_ms: 100,
                ..params()
            }),
        ),
        (
            "03-udp_bw.json",
            json(&TestParams {
                kind: TestKind::UdpBw,
                direction: Direction::Receive,
                length: 1400,
                bitrate_bps: 1_000_000_000,
                ..params()
            }),
        ),
        (
            "04-udp_lat.json",
            json(&TestParams {
                kind: TestKind::UdpLat,
                length: 8,
                interval_ms: 0,
                ..params()
            }),
        ),
        (
            "05-tcp_lat-max.json",
            json(&TestParams {
                kind: TestKind::TcpLat,
                direction: Direction::Bidir,
                streams: 64,
                length: 1024 * 1024,
                window: Some(256 * 1024 * 1024),
                congestion: Some("cubic_2".into()),
                zerocopy: true,
                ..params()
            }),
        ),
        (
            "06-streams-zero.json",
            json(&TestParams {
                streams: 0,
                ..params()
            }),
        ),
        (
            "07-everything-max.json",
            json(&TestParams {
                kind: TestKind::UdpBw,
                direction: Direction::Bidir,
                streams: u32::MAX,
                duration_ms: u64::MAX,
                omit_ms: u64::MAX,
                interval_ms: u64::MAX,
                length: u32::MAX,
                window: Some(u32::MAX),
                bitrate_bps: u64::MAX,
                congestion: Some(String::new()),
                zerocopy: true,
                spin_us: Some(u32::MAX),
                discard: false,
                no_rcvlowat: false,
                file: Some(FileSpec {
                    name: "../../etc/passwd".into(),
                    size: u64::MAX,
                    fsync: true,
                    remove_after: true,
                }),
                rdma: Some(RdmaSpec {
                    op: RdmaOp::Read,
                    latency: true,
                    provider: Some("verbs;ofi_rxm".repeat(10)),
                    window: u32::MAX,
                    qps: u32::MAX,
                    verify: true,
                    sweep: true,
                }),
                // Left out so the committed seed keeps its bytes (a soak is a TCP test).
                soak: false,
            }),
        ),
        (
            "08-bad-congestion.json",
            json(&TestParams {
                congestion: Some("bbr; rm -rf /".into()),
                ..params()
            }),
        ),
        (
            "09-unknown-field.json",
            br#"{"kind":"tcp_bw","direction":"send","streams":1,"duration_ms":1000,"omit_ms":0,"interval_ms":0,"length":1,"window":null,"bitrate_bps":0,"congestion":null,"zerocopy":false,"extra":1}"#.to_vec(),
        ),
        ("10-garbage.json", b"{\"kind\":\"tcp_bw\",\"streams\":-1,[".to_vec()),
        (
            "11-file_transfer.json",
            json(&TestParams {
                kind: TestKind::FileTransfer,
                streams: 4,
                file: Some(FileSpec {
                    name: "backup.tar".into(),
                    size: 10 << 30,
                    fsync: true,
                    remove_after: false,
                }),
                ..params()
            }),
        ),
        (
            "13-rdma-write-sweep.json",
            json(&TestParams {
                kind: TestKind::Rdma,
                length: 8 << 20,
                rdma: Some(RdmaSpec {
                    op: RdmaOp::Write,
                    latency: false,
                    provider: Some("verbs".into()),
                    window: 64,
                    qps: 1,
                    verify: true,
                    sweep: true,
                }),
                ..params()
            }),
        ),
        (
            "12-file_transfer-traversal.json",
            json(&TestParams {
                kind: TestKind::FileTransfer,
                file: Some(FileSpec {
                    name: "../.ssh/authorized_keys".into(),
                    size: 400,
                    fsync: false,
                    remove_after: false,
                }),
                ..params()
            }),
        ),
    ]
    .into_iter()
    .map(|(name, bytes)| (name.to_string(), bytes))
    .collect()
}

/// A transcript's lines: from the client or not, the message, its frame.
type Transcript = Vec<(bool, Msg, Vec<u8>)>;

/// The golden transcripts of the previous release, by name.
fn golden() -> Vec<(String, Transcript)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/43439da");
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let lines = fs::read_to_string(&p)
                .unwrap()
                .lines()
                .map(|l| {
                    let e: serde_json::Value = serde_json::from_str(l).unwrap();
                    let body = serde_json::to_vec(&e["msg"]).unwrap();
                    let m = linerate_proto::decode(&body).unwrap();
                    (e["from"] == "client", m, raw_frame(&body))
                })
                .collect();
            (name, lines)
        })
        .collect()
}

/// A fuzz script's ops (see `check_client_session`): bytes in pieces of at most 255.
fn script_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    for piece in bytes.chunks(255) {
        out.push(0);
        out.push(u8::try_from(piece.len()).unwrap());
        out.extend_from_slice(piece);
    }
}

/// Time passing: `ms` milliseconds, in ops of at most 2.55 s; `op` is the wait op's byte.
fn script_wait(out: &mut Vec<u8>, mut ms: u64) {
    while ms > 0 {
        let step = ms.min(2550);
        out.push(1);
        out.push(u8::try_from(step.div_ceil(10)).unwrap());
        ms -= step;
    }
}

/// The client's events: 4 DataReady, 5 LocalDone.
const C_DATA_READY: u8 = 4;
const C_LOCAL_DONE: u8 = 5;

fn client_session_seeds_generated() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (name, lines) in golden() {
        // Setup 0: no key, tcp_bw, one stream.
        let mut s = vec![0];
        for (from_client, m, frame) in &lines {
            match (from_client, m) {
                (true, Msg::Start) => s.push(C_DATA_READY),
                (true, Msg::Done) => s.push(C_LOCAL_DONE),
                (true, _) => {}
                (false, _) => script_bytes(&mut s, frame),
            }
        }
        seeds.push((format!("01-golden-{name}.bin"), s));
    }
    let hello = |protocol| Msg::ServerHello {
        protocol,
        version: "0.1.0".into(),
        auth: false,
        nonce: "5eed".into(),
    };
    let mut http = vec![0];
    script_bytes(&mut http, b"HTTP/1.1 400 Bad Request\r\n\r\n");
    script_wait(&mut http, 300);
    seeds.push(("02-http.bin".into(), http));
    let mut iperf3 = vec![0];
    script_bytes(&mut iperf3, &[9]);
    script_wait(&mut iperf3, 300);
    seeds.push(("03-iperf3.bin".into(), iperf3));
    let mut silent = vec![0];
    script_wait(&mut silent, 10_000);
    seeds.push(("04-silent.bin".into(), silent));
    let mut over = vec![0];
    script_bytes(&mut over, &frame(&hello(PROTOCOL_VERSION)));
    script_bytes(&mut over, &[0xff; 8]);
    seeds.push(("05-answer-over-the-limit.bin".into(), over));
    let mut version = vec![0];
    script_bytes(&mut version, &frame(&hello(2)));
    seeds.push(("06-other-version.bin".into(), version));
    // An RDMA test (setup bit 2) whose server sends an interval after done.
    let mut rdma = vec![4];
    script_bytes(&mut rdma, &frame(&hello(PROTOCOL_VERSION)));
    script_bytes(
        &mut rdma,
        &frame(&Msg::Accepted {
            test_id: 1,
            cookie: "c00c1e".into(),
            udp_port: None,
            memory_bytes: 1 << 20,
            inventory: None,
            rdma: None,
            listen_port: None,
        }),
    );
    rdma.extend([C_DATA_READY, C_LOCAL_DONE]);
    script_bytes(&mut rdma, &frame(&Msg::Interval { sample: interval() }));
    seeds.push(("07-rdma-interval.bin".into(), rdma));
    // A key (setup bit 0), a server that skips authentication, then closes mid-frame.
    let mut key = vec![1];
    script_bytes(&mut key, &frame(&hello(PROTOCOL_VERSION)));
    seeds.push(("08-key-not-asked.bin".into(), key));
    let mut cut = vec![0];
    script_bytes(&mut cut, &frame(&hello(PROTOCOL_VERSION))[..7]);
    cut.push(2);
    seeds.push(("09-closed-mid-frame.bin".into(), cut));
    seeds
}

/// The server's events: 4 NoSuchTest, 5 Accept, 6 Refuse, 7 DataReady, 8 DataFailed,
/// 9 Interval, 10 SoakSample, 11 Finished.
const S_NO_SUCH_TEST: u8 = 4;
const S_ACCEPT: u8 = 5;
const S_DATA_READY: u8 = 7;
const S_INTERVAL: u8 = 9;
const S_FINISHED: u8 = 11;

fn server_session_seeds_generated() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (name, lines) in golden() {
        let mut s = vec![0];
        for (from_client, m, frame) in &lines {
            match (from_client, m) {
                (true, Msg::Request { .. }) => {
                    script_bytes(&mut s, frame);
                    s.extend([S_ACCEPT, S_DATA_READY]);
                }
                (true, _) => script_bytes(&mut s, frame),
                (false, Msg::Interval { .. }) => s.push(S_INTERVAL),
                (false, Msg::Results { .. }) => s.push(S_FINISHED),
                (false, _) => {}
            }
        }
        seeds.push((format!("01-golden-{name}.bin"), s));
    }
    let hello = |magic: &str| Msg::Hello {
        magic: magic.into(),
        protocol: PROTOCOL_VERSION,
        version: "0.1.0".into(),
        nonce: "c0ffee".into(),
    };
    let mut data = vec![0];
    let mut bytes = frame(&Msg::DataHello {
        cookie: "c00c1e".into(),
        stream: 0,
    });
    bytes.extend_from_slice(b"the test's data, never read by the conversation");
    script_bytes(&mut data, &bytes);
    data.push(S_NO_SUCH_TEST);
    seeds.push(("02-data-hello-then-data.bin".into(), data));
    let mut magic = vec![0];
    script_bytes(&mut magic, &frame(&hello("iperf3")));
    seeds.push(("03-bad-magic.bin".into(), magic));
    // A key (setup bit 0) and a wrong proof: the error after 200 ms.
    let mut proof = vec![1];
    script_bytes(&mut proof, &frame(&hello(MAGIC)));
    script_bytes(
        &mut proof,
        &frame(&Msg::Auth {
            proof: "00".repeat(32),
        }),
    );
    script_wait(&mut proof, 200);
    seeds.push(("04-wrong-proof.bin".into(), proof));
    // A hello dripped a byte at a time, past the handshake's deadline.
    let mut drip = vec![0];
    for b in frame(&hello(MAGIC)).iter().take(20) {
        script_bytes(&mut drip, &[*b]);
        script_wait(&mut drip, 300);
    }
    seeds.push(("05-slow-drip.bin".into(), drip));
    let mut invalid = vec![0];
    script_bytes(&mut invalid, &frame(&hello(MAGIC)));
    let mut p = params();
    p.streams = 0;
    script_bytes(&mut invalid, &frame(&Msg::Request { params: p }));
    seeds.push(("06-invalid-request.bin".into(), invalid));
    let mut over = vec![0];
    script_bytes(&mut over, &(MAX_CONTROL_FRAME + 1).to_be_bytes());
    seeds.push(("07-first-frame-over-the-limit.bin".into(), over));
    // Every event out of turn, then a hello left half sent.
    let mut turns = vec![0];
    turns.extend(4..12);
    script_bytes(&mut turns, &frame(&hello(MAGIC))[..9]);
    seeds.push(("08-events-out-of-turn.bin".into(), turns));
    seeds
}
