//! The steps' branches against a scripted far end and host: no socket, no server, no root.

use std::collections::VecDeque;
use std::path::PathBuf;

use linerate_results::Endpoint;

use super::*;
use crate::far::FarEndProtocol;

type Answer = Box<dyn FnMut(&TestParams) -> Result<FarEndRun, ClientError>>;

/// A far end that answers each test with the next scripted answer (or a plain result).
struct Scripted {
    answers: VecDeque<Answer>,
    asked: Vec<TestParams>,
    /// Test kinds its protocol cannot express.
    cannot: Vec<TestKind>,
}

impl Scripted {
    fn new(answers: Vec<Answer>) -> Self {
        Self {
            answers: answers.into(),
            asked: Vec::new(),
            cannot: Vec::new(),
        }
    }
}

impl FarEndClient for Scripted {
    fn addr(&self) -> SocketAddr {
        "192.0.2.2:5301".parse().unwrap()
    }

    fn protocol(&self) -> FarEndProtocol {
        FarEndProtocol::Linerate
    }

    fn cannot_run(&self, p: &TestParams) -> Option<String> {
        self.cannot
            .contains(&p.kind)
            .then(|| format!("scripted: no {}", p.kind.as_str()))
    }

    fn version(&self) -> Option<String> {
        None
    }

    fn run(&mut self, p: &TestParams, _: Option<Arc<File>>) -> Result<FarEndRun, ClientError> {
        self.asked.push(p.clone());
        match self.answers.pop_front() {
            Some(mut a) => a(p),
            None => ok(p, 1.0),
        }
    }
}

/// A result of `gbps` for the test asked, from an end on `ib0`.
fn ok(p: &TestParams, gbps: f64) -> Result<FarEndRun, ClientError> {
    let mut result = TestResult::new(p.clone());
    result.gbps = gbps;
    Ok(FarEndRun {
        result,
        local: Some(HostFacts {
            address: "192.0.2.1".into(),
            name: Some("ib0".into()),
            ..HostFacts::default()
        }),
        remote: None,
    })
}

fn answer(gbps: f64) -> Answer {
    Box::new(move |p| ok(p, gbps))
}

fn refused(kind: RefusalKind, reason: &str) -> Answer {
    let reason = reason.to_string();
    Box::new(move |_| {
        Err(ClientError::Refused {
            kind,
            reason: reason.clone(),
        })
    })
}

fn unreachable() -> Answer {
    Box::new(|p: &TestParams| {
        let _ = p;
        Err(ClientError::Connect {
            addr: "192.0.2.2:5301".parse().unwrap(),
            err: std::io::ErrorKind::ConnectionRefused.into(),
            timeout: std::time::Duration::from_secs(5),
            iperf3: false,
        })
    })
}

/// This host, scripted: a fixed CPU picture per test, a route, a spin choice.
struct Host {
    cpu: HostCpu,
    route: Option<String>,
    tests_run: usize,
}

impl Host {
    fn new(route: Option<&str>) -> Self {
        Self {
            cpu: HostCpu {
                other_cores: Some(1.6),
                ..HostCpu::default()
            },
            route: route.map(str::to_string),
            tests_run: 0,
        }
    }
}

impl ThisHost for Host {
    fn during(&mut self, test: &mut dyn FnMut()) -> HostCpu {
        test();
        self.tests_run += 1;
        self.cpu
    }

    fn route_interface(&self, _: SocketAddr) -> Option<String> {
        self.route.clone()
    }

    fn spin_choice(&mut self, _: bool) -> SpinChoice {
        SpinChoice {
            spin_us: 0,
            reason: "blocking: scripted".into(),
        }
    }

    fn copy_source(&mut self, dir: &Path, _: u64) -> Result<(File, tempfile::TempPath), String> {
        let f = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
        let (f, p) = f.into_parts();
        Ok((f, p))
    }
}

fn fixture(case: &str) -> Inventory {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(case);
    linerate_inventory::probe(&root).unwrap_or_else(|e| panic!("{case}: {e}"))
}

/// Runs the plan against `far`, returning the steps' runs and what the far end was asked.
fn plan_with(
    far: &mut Scripted,
    host: &mut Host,
    before: &Inventory,
    self_check: bool,
) -> (Result<(), ClientError>, Runs, Vec<String>) {
    let mut lines = Vec::new();
    let mut progress = |s: &str| lines.push(s.to_string());
    let mut steps = Steps::new(far, host, &mut progress, Depth::Quick, self_check);
    let r = steps.plan(before);
    let runs = steps.runs;
    (r, runs, lines)
}

#[test]
fn a_down_port_that_stops_the_first_test_is_the_diagnosis() {
    // No subnet manager on ib0: the first test cannot reach the far end, and that is why.
    let before = fixture("cx4-edr-no-sm");
    let mut far = Scripted::new(vec![unreachable()]);
    let mut host = Host::new(Some("ib0"));
    let (r, runs, lines) = plan_with(&mut far, &mut host, &before, false);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(far.asked.len(), 1, "the plan stops at the first test");
    assert_eq!(runs.local_if.as_deref(), Some("ib0"));
    assert!(runs.tests.is_empty());
    assert_eq!(runs.errors.len(), 1, "{:?}", runs.errors);
    assert!(
        runs.errors[0].contains("no `linerate serve` listens"),
        "{:?}",
        runs.errors
    );
    assert!(
        lines.iter().any(|l| l.starts_with("  → failed:")),
        "{lines:?}"
    );
}

#[test]
fn an_unreachable_far_end_behind_a_working_port_is_an_error() {
    let before = fixture("cx7-ndr-healthy");
    let mut far = Scripted::new(vec![unreachable()]);
    let mut host = Host::new(Some("ib0"));
    let (r, runs, _) = plan_with(&mut far, &mut host, &before, false);
    assert!(
        matches!(r, Err(ClientError::Connect { .. })),
        "doctor cannot run: {r:?}"
    );
    assert!(runs.tests.is_empty());
}

#[test]
fn the_udp_rate_comes_from_the_best_tcp_result() {
    let before = fixture("cx7-ndr-healthy");
    // The plan of a quick self-check: one stream, several streams, latency, UDP.
    let mut far = Scripted::new(vec![answer(0.4), answer(0.6), answer(0.0)]);
    let mut host = Host::new(None);
    let (r, runs, _) = plan_with(&mut far, &mut host, &before, true);
    assert!(r.is_ok());
    let kinds: Vec<TestKind> = far.asked.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            TestKind::TcpBw,
            TestKind::TcpBw,
            TestKind::TcpLat,
            TestKind::UdpBw
        ]
    );
    // Half the best TCP result (0.6 Gb/s): 300 Mb/s.
    assert_eq!(far.asked[3].bitrate_bps, 300_000_000);
    // The latency test waits as this host said, and each test's CPU picture is kept.
    assert_eq!(far.asked[2].spin_us, Some(0));
    assert_eq!(runs.cpu.len(), runs.tests.len());
    assert_eq!(host.tests_run, 4);
    assert!(runs.cpu.iter().all(|c| c.other_cores == Some(1.6)));
    // The interface comes from what the first test said of this end.
    assert_eq!(runs.local_if.as_deref(), Some("ib0"));
}

#[test]
fn a_refusal_after_the_first_test_is_noted_and_the_plan_goes_on() {
    let before = fixture("cx7-ndr-healthy");
    let mut far = Scripted::new(vec![
        answer(20.0),
        refused(RefusalKind::Busy, "server busy"),
        refused(RefusalKind::OverLimit, "latency tests are not allowed"),
    ]);
    let mut host = Host::new(None);
    let (r, runs, _) = plan_with(&mut far, &mut host, &before, true);
    assert!(r.is_ok());
    assert_eq!(far.asked.len(), 4, "every test of the plan was asked");
    assert_eq!(runs.tests.len(), 2, "the first and the UDP test ran");
    assert_eq!(runs.errors.len(), 2, "{:?}", runs.errors);
    assert!(runs.errors[0].contains("server busy"), "{:?}", runs.errors);
    // No UDP rate above what the best TCP result (20 Gb/s) allows: the 1 Gb/s cap.
    assert_eq!(
        far.asked[3].bitrate_bps,
        linerate_proto::defaults::UDP_BITRATE_BPS
    );
}

#[test]
fn only_a_receiver_bound_single_stream_gets_a_discard_twin() {
    let before = fixture("cx7-ndr-healthy");
    let with_receiver = |cpu: f64, streams_ok: bool| -> Answer {
        Box::new(move |p: &TestParams| {
            let mut r = ok(p, 20.0)?;
            r.result.receiver = Some(Endpoint {
                host: "remote",
                bytes: 1,
                gbps: 20.0,
                cpu_percent: cpu,
            });
            if !streams_ok {
                r.result.error = Some("cut short".into());
            }
            Ok(r)
        })
    };
    // Single stream at 97 % (bound), the multi-stream test at 99 % (not a single stream).
    let mut far = Scripted::new(vec![with_receiver(97.0, true), with_receiver(99.0, true)]);
    let mut host = Host::new(None);
    let mut progress = |_: &str| {};
    let mut steps = Steps::new(&mut far, &mut host, &mut progress, Depth::Quick, true);
    steps.plan(&before).unwrap();
    steps.discard_twins();
    let runs = steps.runs;
    let twins: Vec<&TestParams> = far.asked.iter().filter(|p| p.discard).collect();
    assert_eq!(twins.len(), 1, "{:?}", far.asked);
    assert_eq!(twins[0].streams, 1);
    assert_eq!(runs.tests.len(), 5);
    // Below the line, or cut short: no twin.
    for (cpu, fine) in [(60.0, true), (97.0, false)] {
        let mut far = Scripted::new(vec![with_receiver(cpu, fine)]);
        let mut host = Host::new(None);
        let mut progress = |_: &str| {};
        let mut steps = Steps::new(&mut far, &mut host, &mut progress, Depth::Quick, true);
        steps.plan(&before).unwrap();
        steps.discard_twins();
        assert!(far.asked.iter().all(|p| !p.discard), "{cpu} {fine}");
    }
}

/// Steps that already ran one TCP test, against `far`.
fn after_one_test<'a>(
    far: &'a mut Scripted,
    host: &'a mut Host,
    progress: &'a mut dyn FnMut(&str),
    self_check: bool,
) -> Steps<'a> {
    let mut steps = Steps::new(far, host, progress, Depth::Quick, self_check);
    steps.runs.tests.push(TestResult::new(plan::p(
        TestKind::TcpBw,
        Direction::Send,
        1,
        1.0,
        0.0,
    )));
    steps
}

#[test]
fn a_far_end_without_a_write_directory_is_a_note_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for reason in [
        refused(RefusalKind::NoWriteDir, "this server has no --write-dir"),
        // A server before refusal kinds says so in words only.
        refused(RefusalKind::Other, "this server accepts no files"),
    ] {
        let mut far = Scripted::new(vec![reason]);
        let mut host = Host::new(None);
        let mut progress = |_: &str| {};
        let mut steps = after_one_test(&mut far, &mut host, &mut progress, false);
        let mut notes = Vec::new();
        assert!(steps.copy(dir.path(), &mut notes).is_none());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("the server's disk was not measured"),
            "{notes:?}"
        );
        assert!(steps.runs.errors.is_empty(), "{:?}", steps.runs.errors);
    }
    // Another refusal is an error of the copy.
    let mut far = Scripted::new(vec![refused(RefusalKind::Busy, "server busy")]);
    let mut host = Host::new(None);
    let mut progress = |_: &str| {};
    let mut steps = after_one_test(&mut far, &mut host, &mut progress, false);
    let mut notes = Vec::new();
    assert!(steps.copy(dir.path(), &mut notes).is_none());
    assert!(notes.is_empty());
    assert_eq!(
        steps.runs.errors,
        ["file copy: the server refused the test: server busy"]
    );
    // The source files were removed after each copy.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_copy_goes_to_loopback_in_a_self_check_and_to_the_far_end_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    for (self_check, to) in [(true, "loopback"), (false, "192.0.2.2:5301")] {
        let mut far = Scripted::new(vec![]);
        let mut host = Host::new(None);
        let mut progress = |_: &str| {};
        let mut notes = Vec::new();
        {
            // Nothing ran yet: no copy.
            let mut steps =
                Steps::new(&mut far, &mut host, &mut progress, Depth::Quick, self_check);
            assert!(steps.copy(dir.path(), &mut notes).is_none());
        }
        let mut steps = after_one_test(&mut far, &mut host, &mut progress, self_check);
        let (t, where_to) = steps.copy(dir.path(), &mut notes).expect("a copy");
        assert_eq!(where_to, to);
        assert_eq!(t.params.kind, TestKind::FileTransfer);
        assert_eq!(
            t.params.file.as_ref().map(|f| f.size),
            Some(copy_size(Depth::Quick))
        );
    }
}

#[test]
fn rdma_runs_on_an_rdma_port_or_when_asked_and_says_why_it_failed() {
    let ib = fixture("cx7-ndr-healthy");
    let eth = fixture("realtek-1g");
    let run = |mode: RdmaMode, before: &Inventory, local_if: &str, answer_rdma: Option<Answer>| {
        let mut far = Scripted::new(answer_rdma.into_iter().collect());
        let mut host = Host::new(None);
        let mut progress = |_: &str| {};
        let mut steps = after_one_test(&mut far, &mut host, &mut progress, false);
        steps.runs.local_if = Some(local_if.into());
        steps.rdma(&mode, before);
        let errors = steps.runs.errors.clone();
        let n = steps.runs.tests.len();
        (far.asked, errors, n)
    };
    let ib_if = ib
        .ports
        .iter()
        .find(|p| p.device.is_some() && p.port.is_some())
        .and_then(|p| p.netdev.clone())
        .expect("an IB port with a netdev");
    let (asked, _, n) = run(RdmaMode::Auto, &ib, &ib_if, None);
    assert_eq!(asked.len(), 1);
    let spec = asked[0].rdma.as_ref().expect("an RDMA test");
    assert_eq!(spec.provider.as_deref(), Some("verbs"));
    assert_eq!(n, 2);
    // An Ethernet port without RDMA: nothing, unless a provider is named.
    let eth_if = eth.ports[0].netdev.clone().unwrap_or_default();
    assert!(run(RdmaMode::Auto, &eth, &eth_if, None).0.is_empty());
    assert!(run(RdmaMode::Off, &ib, &ib_if, None).0.is_empty());
    let (asked, errors, n) = run(
        RdmaMode::Provider("tcp".into()),
        &eth,
        &eth_if,
        Some(refused(
            RefusalKind::Unsupported,
            "libfabric is not installed",
        )),
    );
    assert_eq!(asked.len(), 1);
    assert_eq!(n, 1, "nothing measured");
    assert_eq!(
        errors,
        ["RDMA (tcp): the server refused the test: libfabric is not installed"]
    );
}

#[test]
fn steps_the_far_end_cannot_express_are_skipped_with_the_reason_and_never_asked() {
    let before = fixture("cx7-ndr-healthy");
    let mut far = Scripted::new(vec![]);
    far.cannot = vec![TestKind::TcpLat, TestKind::FileTransfer, TestKind::Rdma];
    let mut host = Host::new(None);
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    let mut progress = |s: &str| lines.push(s.to_string());
    let mut steps = Steps::new(&mut far, &mut host, &mut progress, Depth::Quick, false);
    steps.plan(&before).unwrap();
    let mut notes = Vec::new();
    assert!(steps.copy(dir.path(), &mut notes).is_none());
    steps.rdma(&RdmaMode::Provider("tcp".into()), &before);
    let runs = steps.runs;
    let skipped: Vec<_> = runs.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        skipped,
        [
            "scripted: no tcp_lat",
            "scripted: no file_transfer",
            "scripted: no rdma"
        ]
    );
    assert_eq!(runs.skipped[1].step, "file copy");
    assert!(
        runs.errors.is_empty(),
        "a skip is no error: {:?}",
        runs.errors
    );
    assert_eq!(
        notes,
        ["the server's disk was not measured: scripted: no file_transfer"]
    );
    // Never asked, and no copy source was written for it.
    assert!(far.asked.iter().all(|p| !far.cannot.contains(&p.kind)));
    assert!(far.asked.iter().any(|p| p.kind == TestKind::UdpBw));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("→ skipped: scripted: no tcp_lat")),
        "{lines:?}"
    );
}
