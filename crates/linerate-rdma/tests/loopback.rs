//! Real data over libfabric's tcp provider on 127.0.0.1, both sides in this process.
//!
//! These tests need libfabric1 (scripts/setup-tests.sh installs it). They fail, never skip, without it.
#![allow(clippy::result_large_err)] // the engine returns partial results with its errors, by value

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate_rdma::{Fabric, Initiator, Op, Params, RdmaError, Target, TargetStats};

const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const T: Duration = Duration::from_secs(5);

fn fabric() -> Fabric {
    match Fabric::load() {
        Ok(f) => f,
        Err(e) => panic!("{e}: these tests move real data through libfabric; run scripts/setup-tests.sh (installs libfabric1)"),
    }
}

type Served = JoinHandle<Result<TargetStats, (TargetStats, RdmaError)>>;

/// A target on its own thread, and the initiator connected to it.
fn pair(params: &Params) -> (Initiator, Served) {
    let f = fabric();
    let listener = f.listen(Some("tcp"), LO).expect("listen");
    assert_eq!(listener.provider(), "tcp");
    let port = listener.port();
    assert_ne!(port, 0);
    let p = params.clone();
    let served = std::thread::spawn(move || {
        let mut target: Target = listener
            .accept(&p, T)
            .map_err(|e| (TargetStats::default(), e))?;
        target.serve(
            &AtomicBool::new(false),
            Instant::now() + Duration::from_secs(30),
        )
    });
    let ini = f
        .connect(Some("tcp"), LO, SocketAddr::new(LO, port), params, T)
        .expect("connect");
    (ini, served)
}

fn bw_verified(op: Op) {
    let params = Params {
        verify: true,
        window: 8,
        max_size: 64 << 10,
        ..Params::new(op, 64 << 10)
    };
    let (mut ini, served) = pair(&params);
    let stop = AtomicBool::new(false);
    let mut samples = 0;
    let r = ini
        .bandwidth(64 << 10, Duration::from_millis(700), &stop, &mut |_| {
            samples += 1;
        })
        .map_err(|(_, e)| e)
        .unwrap();
    assert!(r.bytes > 0 && r.messages > 0, "{r:?}");
    assert_eq!(r.bytes, r.messages * (64 << 10));
    assert_eq!(r.verify_errors, 0, "{op}: {r:?}");
    assert!(r.gbps > 0.0 && r.messages_per_s > 0.0);
    ini.finish(T).unwrap();
    let stats = served.join().unwrap().map_err(|(_, e)| e).unwrap();
    assert_eq!(stats.verify_errors, 0);
    if op != Op::Read {
        assert_eq!(stats.messages, r.messages, "the target checked every {op}");
    }
}

#[test]
fn load_reports_a_version() {
    let f = fabric();
    assert!(f.version().starts_with("1."), "{}", f.version());
    let rows = f.providers().unwrap();
    assert!(rows.iter().any(|r| r.provider == "tcp"), "{rows:?}");
}

#[test]
fn write_bandwidth_verified() {
    bw_verified(Op::Write);
}

#[test]
fn read_bandwidth_verified() {
    bw_verified(Op::Read);
}

#[test]
fn send_bandwidth_verified() {
    bw_verified(Op::Send);
}

#[test]
fn sweep_on_one_connection() {
    let params = Params {
        verify: true,
        window: 4,
        max_size: 1 << 20,
        ..Params::new(Op::Write, 2)
    };
    let (mut ini, served) = pair(&params);
    let stop = AtomicBool::new(false);
    for size in [2usize, 1000, 4096, 65536, 1 << 20] {
        let r = ini
            .bandwidth(size, Duration::from_millis(150), &stop, &mut |_| {})
            .map_err(|(_, e)| e)
            .unwrap();
        assert!(r.messages > 0, "{size}: {r:?}");
        assert_eq!(r.verify_errors, 0, "{size}");
    }
    ini.finish(T).unwrap();
    let stats = served.join().unwrap().map_err(|(_, e)| e).unwrap();
    assert_eq!(stats.runs, 5);
}

fn latency(op: Op) {
    let params = Params::new(op, 4096);
    let (mut ini, served) = pair(&params);
    for size in [8usize, 4096] {
        let r = ini.latency(size, 300, T).map_err(|(_, e)| e).unwrap();
        assert_eq!(r.samples, 300, "{op} {size}");
        assert!(
            r.p50_us > 0.0 && r.min_us <= r.p50_us && r.p50_us <= r.p99_us && r.p99_us <= r.max_us,
            "{r:?}"
        );
        assert!(r.transactions_per_s > 0.0);
    }
    ini.finish(T).unwrap();
    served.join().unwrap().map_err(|(_, e)| e).unwrap();
}

#[test]
fn write_latency() {
    latency(Op::Write);
}

#[test]
fn send_latency() {
    latency(Op::Send);
}

#[test]
fn read_latency() {
    latency(Op::Read);
}

#[test]
fn zero_and_oversized_messages_are_rejected() {
    let params = Params::new(Op::Write, 4096);
    let (mut ini, served) = pair(&params);
    let stop = AtomicBool::new(false);
    let (_, e) = ini.bandwidth(0, T, &stop, &mut |_| {}).unwrap_err();
    assert!(
        matches!(e, RdmaError::InvalidParams(_)) && e.to_string().contains("0 bytes"),
        "{e}"
    );
    let (_, e) = ini.bandwidth(8192, T, &stop, &mut |_| {}).unwrap_err();
    assert!(
        e.to_string().contains("beyond the registered region"),
        "{e}"
    );
    let (_, e) = ini.latency(0, 10, T).unwrap_err();
    assert!(matches!(e, RdmaError::InvalidParams(_)), "{e}");
    // The connection still works after rejected input.
    let r = ini.latency(8, 10, T).map_err(|(_, e)| e).unwrap();
    assert_eq!(r.samples, 10);
    ini.finish(T).unwrap();
    served.join().unwrap().map_err(|(_, e)| e).unwrap();

    let f = fabric();
    let bad = Params {
        size: 0,
        ..Params::new(Op::Write, 1)
    };
    let e = f
        .connect(Some("tcp"), LO, SocketAddr::new(LO, 9), &bad, T)
        .unwrap_err();
    assert!(matches!(e, RdmaError::InvalidParams(_)), "{e}");
}

#[test]
fn connect_to_nothing_fails_fast() {
    // A port nobody listens on: bind one, note it, close it.
    let port = TcpListener::bind((LO, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let f = fabric();
    let t0 = Instant::now();
    let e = f
        .connect(
            Some("tcp"),
            LO,
            SocketAddr::new(LO, port),
            &Params::new(Op::Write, 64),
            Duration::from_secs(3),
        )
        .unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t0.elapsed()
    );
    let text = e.to_string();
    eprintln!("{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(
        text.contains("fi_connect") || text.contains("connecting"),
        "{text}"
    );
}

#[test]
fn unknown_provider_is_named() {
    let e = fabric().listen(Some("no-such-provider"), LO).unwrap_err();
    assert!(matches!(e, RdmaError::NoProvider { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("no RDMA provider/device (tried: no-such-provider)"),
        "{e}"
    );
}

#[test]
fn target_dropping_mid_transfer_keeps_partial_results() {
    let params = Params {
        window: 8,
        op_timeout: Duration::from_secs(2),
        ..Params::new(Op::Write, 1 << 20)
    };
    let f = fabric();
    let listener = f.listen(Some("tcp"), LO).unwrap();
    let port = listener.port();
    let p = params.clone();
    let served = std::thread::spawn(move || {
        let mut target = listener.accept(&p, T).unwrap();
        // Serve for a while, then close the endpoint under the running transfer.
        let r = target.serve(
            &AtomicBool::new(false),
            Instant::now() + Duration::from_millis(400),
        );
        drop(target);
        r
    });
    let mut ini = f
        .connect(Some("tcp"), LO, SocketAddr::new(LO, port), &params, T)
        .unwrap();
    let t0 = Instant::now();
    let (partial, e) = ini
        .bandwidth(
            1 << 20,
            Duration::from_secs(20),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap_err();
    let took = t0.elapsed();
    eprintln!(
        "initiator after {took:?}: {e}; kept {} bytes over {:.2} s",
        partial.bytes, partial.seconds
    );
    assert!(took < Duration::from_secs(6), "took {took:?}: {e}");
    assert!(partial.bytes > 0, "partial results kept: {partial:?}");
    assert!(partial.seconds > 0.0);
    assert!(
        matches!(
            e,
            RdmaError::PeerGone(_) | RdmaError::Timeout { .. } | RdmaError::Call { .. }
        ),
        "{e}"
    );
    let (_, te) = served.join().unwrap().unwrap_err();
    assert!(matches!(te, RdmaError::Timeout { .. }), "{te}");
}

#[test]
fn accept_without_initiator_times_out() {
    let listener = fabric().listen(Some("tcp"), LO).unwrap();
    let t0 = Instant::now();
    let e = listener
        .accept(&Params::new(Op::Write, 64), Duration::from_millis(300))
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(matches!(e, RdmaError::Timeout { .. }), "{e}");
}

#[test]
fn target_refuses_requests_beyond_its_limits() {
    let f = fabric();
    let listener = f.listen(Some("tcp"), LO).unwrap();
    let port = listener.port();
    let served = std::thread::spawn(move || listener.accept(&Params::new(Op::Write, 4096), T));
    let big = Params::new(Op::Write, 1 << 20);
    let t0 = Instant::now();
    let e = f
        .connect(Some("tcp"), LO, SocketAddr::new(LO, port), &big, T)
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3), "{e}");
    eprintln!("initiator: {e}");
    let te = served.join().unwrap().unwrap_err();
    assert!(te.to_string().contains("this target allows 4096"), "{te}");
}
