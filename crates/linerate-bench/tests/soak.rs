//! A soak over the control protocol, on loopback: the server samples its counters (a scripted
//! sampler here) at the start and after every interval and sends them as `soak_sample`; the
//! client samples its own; each sample carries its end and the bytes of its interval. A server
//! that cannot sample refuses a soak.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

use linerate_bench::{run_client, ClientConfig, ClientError, Event, ServerConfig};
use linerate_facts::CounterSource;
use linerate_inventory::counters::SoakSamplerFn;
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};
use linerate_proto::{Direction, RefusalKind, TestKind, TestParams};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A sampler whose one counter counts the samples taken (so the test knows who sampled).
fn scripted(end: End, taken: Arc<AtomicU64>) -> SoakSamplerFn {
    Arc::new(move |_ip| {
        let taken = Arc::clone(&taken);
        Box::new(move |seq, t_s| {
            let n = taken.fetch_add(1, Ordering::SeqCst);
            SoakSample {
                end,
                seq,
                t_s,
                ports: vec![PortSample {
                    phy: None,
                    device: "lo".into(),
                    port: String::new(),
                    netdev: Some("lo".into()),
                    kind: SoakPortKind::Ethernet {
                        speed_mbps: None,
                        roce: false,
                    },
                    counters: vec![(CounterSource::NetdevStatistics, "samples".into(), n)],
                }],
                tcp_retrans_segs: None,
                tcp_out_segs: None,
                bytes_sent: 0,
                bytes_received: 0,
                problems: Vec::new(),
                host: Vec::new(),
            }
        })
    })
}

fn start_server(cfg: ServerConfig) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    let addr = l.local_addr().expect("listener address");
    thread::spawn(move || linerate_bench::serve_on(&l, cfg));
    addr
}

fn soak_params() -> TestParams {
    TestParams {
        streams: 2,
        duration_ms: 1_200,
        interval_ms: 200,
        length: 64 * 1024,
        // Paced: cheap on a busy machine; the counts matter here, not the rate.
        bitrate_bps: 200_000_000,
        soak: true,
        ..TestParams::new(TestKind::TcpBw, Direction::Bidir)
    }
}

#[test]
fn both_ends_stream_their_samples() {
    let _g = serial();
    let server_taken = Arc::new(AtomicU64::new(0));
    let addr = start_server(ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        log: false,
        soak: Some(scripted(End::Local, Arc::clone(&server_taken))),
        ..ServerConfig::default()
    });
    let client_taken = Arc::new(AtomicU64::new(0));
    let mut cfg = ClientConfig::new(addr, soak_params());
    cfg.soak = Some(scripted(End::Local, Arc::clone(&client_taken)));
    let (mut local, mut remote, mut local_intervals) = (Vec::new(), Vec::new(), Vec::new());
    let run = run_client(&cfg, &mut |e| match e {
        Event::LocalSoak(s) => local.push(s),
        Event::RemoteSoak(s) => remote.push(s),
        Event::Local(i) => local_intervals.push(i),
        _ => {}
    })
    .expect("the soak runs");
    assert!(run.error.is_none(), "{:?}", run.error);

    // The client: a baseline, then one sample per local interval, numbered in order.
    assert_eq!(local.len(), local_intervals.len() + 1);
    assert!(local.iter().all(|s| s.end == End::Local));
    assert!(local.iter().enumerate().all(|(i, s)| s.seq == i as u64));
    assert_eq!(client_taken.load(Ordering::SeqCst), local.len() as u64);
    // Bidir: streams 0..2 are the client's sends, 2..4 its receives.
    for (s, i) in local[1..].iter().zip(&local_intervals) {
        assert_eq!(s.bytes_sent, i.bytes[0] + i.bytes[1]);
        assert_eq!(s.bytes_received, i.bytes[2] + i.bytes[3]);
    }
    assert!(local.iter().map(|s| s.bytes_received).sum::<u64>() > 0);

    // The server: every sample it took arrived, marked remote (it claimed local), in order.
    assert!(remote.len() >= 4, "{} remote samples", remote.len());
    assert_eq!(server_taken.load(Ordering::SeqCst), remote.len() as u64);
    assert!(remote.iter().all(|s| s.end == End::Remote));
    assert!(remote.iter().enumerate().all(|(i, s)| s.seq == i as u64));
    assert!(remote.windows(2).all(|w| w[1].t_s >= w[0].t_s));
    assert_eq!(remote[0].bytes_sent + remote[0].bytes_received, 0);
    assert!(remote.iter().map(|s| s.bytes_sent).sum::<u64>() > 0);
    assert!(remote.iter().map(|s| s.bytes_received).sum::<u64>() > 0);
}

#[test]
fn a_server_that_cannot_sample_refuses_a_soak() {
    let _g = serial();
    let addr = start_server(ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        log: false,
        ..ServerConfig::default()
    });
    let cfg = ClientConfig::new(addr, soak_params());
    match run_client(&cfg, &mut |_| {}) {
        Err(e @ ClientError::Refused { .. }) => {
            assert_eq!(e.refusal_kind(), Some(RefusalKind::Unsupported), "{e}");
            assert!(e.to_string().contains("soak"), "{e}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
