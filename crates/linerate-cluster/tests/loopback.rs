//! The coordinator and ranks on loopback, in one process: a whole run, a rank that never
//! joins, hostile connections, and a coordinator that goes away.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use linerate_cluster::coordinator::{self, CoordEvent, CoordinatorConfig, MeshRun};
use linerate_cluster::rank::{self, RankConfig, RankError, RankRun};
use linerate_cluster::wire::{recv, send, CoordMsg, RankMsg, MESH_MAGIC, MESH_PROTOCOL};
use linerate_mesh::{pairwise, NodeFacts, Phase, Transport};
use linerate_proto::Psk;

const KEY: &[u8] = b"a test key of at least sixteen bytes";

fn coord_cfg(size: u32, psk: Option<Psk>, join_timeout: Duration) -> CoordinatorConfig {
    CoordinatorConfig {
        size,
        psk,
        join_timeout,
        heartbeat_timeout: Duration::from_secs(5),
        transport: Transport::Tcp,
        duration_ms: 300,
        max_concurrent_pairs: None,
        max_ranks: 1024,
        stop: None,
    }
}

fn rank_cfg(rank: u32, size: u32, coordinator: SocketAddr, psk: Option<Psk>) -> RankConfig {
    RankConfig {
        rank,
        size,
        coordinator,
        psk,
        bind: None,
        data_port: 0,
        facts: NodeFacts {
            host: format!("node{rank}"),
            ..NodeFacts::default()
        },
        describe: None,
        join_timeout: Duration::from_secs(10),
        heartbeat_timeout: Duration::from_secs(5),
        rdma_provider: None,
        limits: linerate_proto::Limits::default(),
        max_memory_bytes: linerate_proto::defaults::MAX_MEMORY_BYTES,
    }
}

/// Start a coordinator on loopback; its address, its events, and its result.
fn start(
    cfg: CoordinatorConfig,
) -> (
    SocketAddr,
    mpsc::Receiver<CoordEvent>,
    thread::JoinHandle<MeshRun>,
) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let schedule = pairwise(cfg.size);
        coordinator::run(l, &cfg, &schedule, &mut |_| Vec::new(), &mut |e| {
            let _ = tx.send(e);
        })
    });
    (addr, rx, h)
}

fn spawn_rank(cfg: RankConfig) -> thread::JoinHandle<Result<RankRun, RankError>> {
    thread::spawn(move || rank::run(&cfg, &mut |_| {}))
}

fn wait_for(rx: &mpsc::Receiver<CoordEvent>, what: impl Fn(&CoordEvent) -> bool) -> CoordEvent {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(e) = rx.recv_timeout(Duration::from_millis(200)) {
            if what(&e) {
                return e;
            }
        }
    }
    panic!("the coordinator never reported the event waited for");
}

#[test]
fn three_ranks_measure_every_ordered_pair() {
    let (addr, _ev, h) = start(coord_cfg(3, None, Duration::from_secs(10)));
    let ranks: Vec<_> = (0..3)
        .map(|r| spawn_rank(rank_cfg(r, 3, addr, None)))
        .collect();
    let run = h.join().unwrap();
    assert!(run.unreachable.is_empty(), "{:?}", run.unreachable);
    assert_eq!(run.measurements.len(), 6, "{:?}", run.measurements);
    for m in &run.measurements {
        assert!(m.error.is_none(), "{m:?}");
        assert!(m.gbps.is_some_and(|g| g > 0.0), "{m:?}");
    }
    // One latency ping-pong per unordered pair.
    assert_eq!(
        run.measurements
            .iter()
            .filter(|m| m.latency.is_some())
            .count(),
        3
    );
    for (r, h) in ranks.into_iter().enumerate() {
        let rr = h.join().unwrap().unwrap();
        assert!(rr.error.is_none(), "rank {r}: {:?}", rr.error);
        assert_eq!(
            rr.measurements.len(),
            2,
            "rank {r} sends to each of the others once"
        );
    }
    let hosts: Vec<_> = run
        .nodes
        .iter()
        .map(|n| n.as_ref().unwrap().host.clone())
        .collect();
    assert_eq!(hosts, ["node0", "node1", "node2"]);
}

#[test]
fn a_rank_that_never_joins_is_unreachable_and_the_others_are_measured() {
    let (addr, _ev, h) = start(coord_cfg(3, None, Duration::from_secs(2)));
    let ranks: Vec<_> = (0..2)
        .map(|r| spawn_rank(rank_cfg(r, 3, addr, None)))
        .collect();
    let run = h.join().unwrap();
    assert_eq!(run.unreachable.len(), 1);
    assert_eq!(run.unreachable[0].0, 2);
    assert!(
        run.unreachable[0].1.contains("never joined"),
        "{:?}",
        run.unreachable
    );
    assert_eq!(run.measurements.len(), 6);
    for m in &run.measurements {
        if m.tx == 2 || m.rx == 2 {
            assert!(m.gbps.is_none(), "{m:?}");
            assert!(
                m.error.as_deref().unwrap().contains("rank 2 unreachable"),
                "{m:?}"
            );
        } else {
            assert!(m.gbps.is_some_and(|g| g > 0.0), "{m:?}");
        }
    }
    for h in ranks {
        assert!(h.join().unwrap().unwrap().error.is_none());
    }
}

/// Connect, say hello, read the challenge.
fn hello(addr: SocketAddr) -> (TcpStream, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let nonce = "00112233".to_string();
    send(
        &mut s,
        &RankMsg::Hello {
            magic: MESH_MAGIC.into(),
            protocol: MESH_PROTOCOL,
            nonce: nonce.clone(),
        },
    )
    .unwrap();
    let CoordMsg::Challenge { nonce: c, .. } = recv(&mut s, 1 << 20).unwrap() else {
        panic!("no challenge")
    };
    (s, nonce, c)
}

fn join_as(addr: SocketAddr, rank: u32, size: u32, key: &Psk) -> CoordMsg {
    let (mut s, mine, theirs) = hello(addr);
    send(
        &mut s,
        &RankMsg::Join {
            rank,
            size,
            facts: Box::new(NodeFacts {
                rank,
                ..NodeFacts::default()
            }),
            proof: Some(key.client_proof(&theirs, &mine)),
        },
    )
    .unwrap();
    recv(&mut s, 1 << 20).unwrap()
}

fn refused(m: CoordMsg) -> String {
    match m {
        CoordMsg::Refused { reason } => reason,
        m => panic!("expected a refusal, got {m:?}"),
    }
}

#[test]
fn hostile_connections_are_refused_and_the_run_goes_on() {
    let key = Psk::from_bytes(KEY);
    let (addr, ev, h) = start(coord_cfg(3, Some(key.clone()), Duration::from_secs(20)));
    // Garbage, then an oversized frame: each refused with what it is, then closed.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"\x00\x00\x00\x05hello").unwrap();
    let r = refused(recv(&mut s, 1 << 20).unwrap());
    assert!(r.contains("not a linerate mesh rank"), "{r}");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&(64u32 << 20).to_be_bytes()).unwrap();
    let r = refused(recv(&mut s, 1 << 20).unwrap());
    assert!(r.contains("exceeds the limit"), "{r}");
    // A wrong key, an out-of-range rank, a wrong size.
    let wrong = Psk::from_bytes(b"another key, also long enough");
    assert!(refused(join_as(addr, 1, 3, &wrong)).contains("wrong pre-shared key"));
    assert!(refused(join_as(addr, 7, 3, &key)).contains("rank 7 is out of range"));
    assert!(refused(join_as(addr, 1, 4, &key)).contains("same --size"));
    // A rank without the key is told to pass one.
    let e = rank::run(&rank_cfg(1, 3, addr, None), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("--psk-file"), "{e}");
    // Two real ranks join, then a duplicate of rank 1 is refused.
    let r0 = spawn_rank(rank_cfg(0, 3, addr, Some(key.clone())));
    let r1 = spawn_rank(rank_cfg(1, 3, addr, Some(key.clone())));
    // (in either order)
    for _ in 0..2 {
        wait_for(&ev, |e| matches!(e, CoordEvent::Joined { .. }));
    }
    let r = refused(join_as(addr, 1, 3, &key));
    assert!(r.contains("rank 1 has already joined"), "{r}");
    // The coordinator still works: the last rank joins and the run completes.
    let r2 = spawn_rank(rank_cfg(2, 3, addr, Some(key.clone())));
    let run = h.join().unwrap();
    assert!(run.unreachable.is_empty(), "{:?}", run.unreachable);
    assert_eq!(run.measurements.len(), 6);
    assert!(run
        .measurements
        .iter()
        .all(|m| m.gbps.is_some_and(|g| g > 0.0)));
    for h in [r0, r1, r2] {
        assert!(h.join().unwrap().unwrap().error.is_none());
    }
}

#[test]
fn joins_beyond_max_ranks_are_refused_naming_the_limit() {
    let key = Psk::from_bytes(KEY);
    let cfg = CoordinatorConfig {
        max_ranks: 2,
        ..coord_cfg(2, Some(key.clone()), Duration::from_secs(1))
    };
    let (addr, _ev, h) = start(cfg);
    for (rank, size) in [(1, 5), (3, 2), (4095, 4096)] {
        let r = refused(join_as(addr, rank, size, &key));
        assert!(r.contains("--max-ranks 2"), "rank {rank} of {size}: {r}");
    }
    // Within the limit, the ordinary checks still apply.
    assert!(refused(join_as(addr, 1, 1, &key)).contains("same --size"));
    // Nobody joined: the run ends after the join timeout with both ranks unreachable.
    let run = h.join().unwrap();
    let lost: Vec<u32> = run.unreachable.iter().map(|(r, _)| *r).collect();
    assert_eq!(lost, [0, 1]);
}

#[test]
fn a_rank_ends_with_a_message_when_the_coordinator_goes_away() {
    // A coordinator that admits the rank, sends the table, then closes.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let fake = thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _: RankMsg = recv(&mut s, 1 << 20).unwrap();
        send(
            &mut s,
            &CoordMsg::Challenge {
                nonce: "aa".into(),
                auth: false,
                proof: None,
            },
        )
        .unwrap();
        let _: RankMsg = recv(&mut s, 1 << 20).unwrap();
        send(&mut s, &CoordMsg::Welcome).unwrap();
        send(
            &mut s,
            &CoordMsg::Table {
                addrs: vec![None, None],
            },
        )
        .unwrap();
    });
    let start = Instant::now();
    let run = rank::run(&rank_cfg(1, 2, addr, None), &mut |_| {}).unwrap();
    fake.join().unwrap();
    let e = run.error.expect("the rank says the coordinator is gone");
    assert!(
        e.contains("the coordinator (rank 0 at") && e.contains("is gone"),
        "{e}"
    );
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn rdma_flows_run_on_the_rdma_engine() {
    let cfg = CoordinatorConfig {
        transport: Transport::Rdma,
        ..coord_cfg(2, None, Duration::from_secs(10))
    };
    let (addr, _ev, h) = start(cfg);
    let ranks: Vec<_> = (0..2)
        .map(|r| {
            let mut c = rank_cfg(r, 2, addr, None);
            c.rdma_provider = Some("tcp".into());
            spawn_rank(c)
        })
        .collect();
    let run = h.join().unwrap();
    for h in ranks {
        assert!(h.join().unwrap().unwrap().error.is_none());
    }
    assert_eq!(run.measurements.len(), 2);
    if let Some(e) = run.measurements.iter().find_map(|m| m.error.as_deref()) {
        if e.contains("libfabric") || e.contains("provider") {
            linerate_testkit::skip(format!("no libfabric tcp provider here: {e}"));
            return;
        }
    }
    for m in &run.measurements {
        assert_eq!(m.transport, Transport::Rdma);
        assert!(m.error.is_none(), "{m:?}");
        assert!(m.gbps.is_some_and(|g| g > 0.0), "{m:?}");
    }
    assert!(
        run.measurements.iter().any(|m| m.latency.is_some()),
        "the pair's RDMA ping-pong"
    );
}

#[test]
fn a_silent_rank_is_lost_after_the_heartbeat_timeout_and_the_run_ends() {
    let key = Psk::from_bytes(KEY);
    let cfg = CoordinatorConfig {
        heartbeat_timeout: Duration::from_secs(2),
        ..coord_cfg(2, Some(key.clone()), Duration::from_secs(10))
    };
    let (addr, _ev, h) = start(cfg);
    let r0 = spawn_rank(rank_cfg(0, 2, addr, Some(key.clone())));
    // Rank 1 joins, then says nothing more while keeping its connection open.
    let (mut s, mine, theirs) = hello(addr);
    send(
        &mut s,
        &RankMsg::Join {
            rank: 1,
            size: 2,
            facts: Box::new(NodeFacts {
                rank: 1,
                data_addr: Some("127.0.0.1:9".into()),
                ..NodeFacts::default()
            }),
            proof: Some(key.client_proof(&theirs, &mine)),
        },
    )
    .unwrap();
    assert_eq!(
        recv::<CoordMsg>(&mut s, 1 << 20).unwrap(),
        CoordMsg::Welcome
    );
    let started = Instant::now();
    let run = h.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(run.unreachable.len(), 1, "{:?}", run.unreachable);
    assert_eq!(run.unreachable[0].0, 1);
    assert!(
        run.unreachable[0].1.contains("no heartbeat"),
        "{:?}",
        run.unreachable
    );
    assert_eq!(run.measurements.len(), 2);
    assert!(run
        .measurements
        .iter()
        .all(|m| m.gbps.is_none() && m.error.is_some()));
    assert!(r0.join().unwrap().unwrap().error.is_none());
    drop(s);
}

#[test]
fn retests_carry_the_load_both_hosts_reported_over_them() {
    let cfg = coord_cfg(2, None, Duration::from_secs(10));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = thread::spawn(move || {
        let schedule = pairwise(2);
        let mut retest = |_: &MeshRun| {
            vec![linerate_mesh::Round {
                flows: vec![linerate_mesh::Flow {
                    tx: 1,
                    rx: 0,
                    latency: false,
                }],
            }]
        };
        coordinator::run(l, &cfg, &schedule, &mut retest, &mut |_| {})
    });
    let ranks: Vec<_> = (0..2)
        .map(|r| spawn_rank(rank_cfg(r, 2, addr, None)))
        .collect();
    let run = h.join().unwrap();
    for h in ranks {
        assert!(h.join().unwrap().unwrap().error.is_none());
    }
    let retest = run
        .measurements
        .iter()
        .find(|m| m.phase == Phase::Retest)
        .expect("the retest ran");
    // Both ranks' heartbeats covered it (the coordinator waits for them after the last round).
    for l in [retest.tx_load, retest.rx_load] {
        let l = l.unwrap_or_else(|| panic!("no load on {retest:?}"));
        assert!(l.cores >= 1 && l.seconds > 0.0, "{l:?}");
        assert!(l.other_cores >= 0.0 && l.idle_cores >= 0.0, "{l:?}");
    }
}

#[test]
fn asked_to_stop_the_run_ends_with_what_was_measured() {
    let stop = Arc::new(AtomicUsize::new(0));
    let cfg = CoordinatorConfig {
        stop: Some(stop.clone()),
        ..coord_cfg(4, None, Duration::from_secs(10))
    };
    let (addr, ev, h) = start(cfg);
    let ranks: Vec<_> = (0..4)
        .map(|r| spawn_rank(rank_cfg(r, 4, addr, None)))
        .collect();
    // Stop once the second round has started: the first is complete, the second abandoned.
    wait_for(&ev, |e| {
        matches!(e, CoordEvent::RoundStarted { index: 1, .. })
    });
    stop.store(15, Ordering::Relaxed);
    let started = Instant::now();
    let run = h.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "stops at once");
    let i = run.interrupted.expect("interrupted");
    assert_eq!((i.signal, i.phase), (15, Phase::Round));
    assert!(i.started >= 2 && i.scheduled == 6, "{i:?}");
    assert!(run.unreachable.is_empty(), "{:?}", run.unreachable);
    assert!(!run.measurements.is_empty());
    assert!(
        run.measurements.iter().all(|m| m.error.is_none()),
        "abandoned flows are not unreachable: {:?}",
        run.measurements
    );
    assert!(run.measurements.len() < 12, "{:?}", run.measurements);
    for h in ranks {
        let e = h.join().unwrap().unwrap().error.unwrap_or_default();
        assert!(e.contains("asked to stop (signal 15)"), "{e}");
    }
}
