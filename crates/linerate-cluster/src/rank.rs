//! One rank: its data server (the existing `serve` machinery, with the run's key), its
//! connection to the coordinator, and the flows it sends when a round says so. When the
//! coordinator goes away (its connection closes, or it stops sending heartbeats) the rank
//! ends with what it measured itself.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use linerate_bench::ServerConfig;
use linerate_mesh::{Flow, LinkMeasurement, NodeFacts, RankId};
use linerate_proto::{random_hex, FrameError, Limits, Psk};
use thiserror::Error;

use crate::flows::{run_flow, FlowConfig, FlowContext};
use crate::wire::{
    recv, send, CoordMsg, RankMsg, HEARTBEAT, MAX_COORDINATOR_FRAME, MESH_MAGIC, MESH_PROTOCOL,
    WRITE_TIMEOUT,
};

/// Describes this rank's node once its data address is known (the CLI probes the interface
/// that carries it).
pub type FactsFn = Arc<dyn Fn(SocketAddr) -> NodeFacts + Send + Sync>;

/// How a rank runs.
#[derive(Clone)]
pub struct RankConfig {
    pub rank: RankId,
    pub size: u32,
    pub coordinator: SocketAddr,
    pub psk: Option<Psk>,
    /// The data server's address (`--bind`); None: the local address of the connection to
    /// the coordinator (the one that routes to it).
    pub bind: Option<IpAddr>,
    /// The data server's port; 0: one the kernel picks.
    pub data_port: u16,
    /// What this rank tells the coordinator about its node (`rank`, `data_addr` are set here),
    /// when `describe` is None.
    pub facts: NodeFacts,
    /// Describes the node from its data address instead of `facts`.
    pub describe: Option<FactsFn>,
    /// How long to keep trying to reach the coordinator (it may start after this rank).
    pub join_timeout: Duration,
    pub heartbeat_timeout: Duration,
    /// RDMA flows: the libfabric provider.
    pub rdma_provider: Option<String>,
    /// The data server's limits (`serve`'s).
    pub limits: Limits,
    /// The data server's total buffer memory over its running tests (`serve --max-memory`).
    pub max_memory_bytes: u64,
}

impl std::fmt::Debug for RankConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankConfig")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("coordinator", &self.coordinator)
            .field("bind", &self.bind)
            .field("data_port", &self.data_port)
            .finish_non_exhaustive()
    }
}

/// Failures that end a rank before it measured anything.
#[derive(Debug, Error)]
pub enum RankError {
    #[error("rank {rank}: cannot reach the coordinator at {addr} within {secs} s: {err}; is rank 0 running, with --coordinator on the same address and port?")]
    Connect {
        rank: RankId,
        addr: SocketAddr,
        secs: f64,
        err: std::io::Error,
    },
    #[error("rank {rank}: data server on {addr}: {err}")]
    DataServer {
        rank: RankId,
        addr: SocketAddr,
        err: std::io::Error,
    },
    #[error("rank {rank}: the coordinator at {addr} refused this rank: {reason}")]
    Refused {
        rank: RankId,
        addr: SocketAddr,
        reason: String,
    },
    #[error("rank {rank}: joining the coordinator at {addr}: {reason}")]
    Join {
        rank: RankId,
        addr: SocketAddr,
        reason: String,
    },
}

/// What a rank did, complete or not.
#[derive(Debug, Clone, Default)]
pub struct RankRun {
    /// The flows this rank sent, measured (or failed).
    pub measurements: Vec<LinkMeasurement>,
    /// Set when the run did not end normally (the coordinator went away).
    pub error: Option<String>,
    /// The data address this rank announced.
    pub data_addr: Option<SocketAddr>,
    /// Every rank's data address, as the coordinator sent it (`None`: never joined).
    pub table: Vec<Option<String>>,
}

fn connect(cfg: &RankConfig) -> Result<TcpStream, RankError> {
    let start = Instant::now();
    loop {
        let left = cfg.join_timeout.saturating_sub(start.elapsed());
        let e = match TcpStream::connect_timeout(
            &cfg.coordinator,
            left.max(Duration::from_millis(100)),
        ) {
            Ok(s) => return Ok(s),
            Err(e) => e,
        };
        if start.elapsed() + Duration::from_millis(200) >= cfg.join_timeout {
            return Err(RankError::Connect {
                rank: cfg.rank,
                addr: cfg.coordinator,
                secs: cfg.join_timeout.as_secs_f64(),
                err: e,
            });
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// Start this rank's data server; its address.
fn data_server(cfg: &RankConfig, ip: IpAddr) -> Result<SocketAddr, RankError> {
    let want = SocketAddr::new(ip, cfg.data_port);
    let err = |err| RankError::DataServer {
        rank: cfg.rank,
        addr: want,
        err,
    };
    let listener = TcpListener::bind(want).map_err(err)?;
    let addr = listener.local_addr().map_err(err)?;
    let scfg = ServerConfig {
        bind: addr,
        limits: cfg.limits.clone(),
        max_memory_bytes: cfg.max_memory_bytes,
        psk: cfg.psk.clone(),
        log: false,
        ..ServerConfig::default()
    };
    thread::spawn(move || linerate_bench::serve_on(&listener, scfg));
    Ok(addr)
}

/// Hello, challenge, join: the coordinator proves it knows the key, then this rank does.
fn join(cfg: &RankConfig, s: &mut TcpStream, facts: NodeFacts) -> Result<(), RankError> {
    let jerr = |reason: String| RankError::Join {
        rank: cfg.rank,
        addr: cfg.coordinator,
        reason,
    };
    let ferr = |e: FrameError| jerr(e.to_string());
    let nonce = random_hex(16);
    send(
        s,
        &RankMsg::Hello {
            magic: MESH_MAGIC.into(),
            protocol: MESH_PROTOCOL,
            nonce: nonce.clone(),
        },
    )
    .map_err(ferr)?;
    let (cnonce, auth, proof) = match recv(s, MAX_COORDINATOR_FRAME).map_err(ferr)? {
        CoordMsg::Challenge { nonce, auth, proof } => (nonce, auth, proof),
        CoordMsg::Refused { reason } => {
            return Err(RankError::Refused {
                rank: cfg.rank,
                addr: cfg.coordinator,
                reason,
            })
        }
        m => return Err(jerr(format!("unexpected answer to hello: {m:?}"))),
    };
    let proof = match (&cfg.psk, auth) {
        (Some(k), true) => {
            if !proof.is_some_and(|p| k.verify_server(&nonce, &cnonce, &p)) {
                return Err(jerr("the coordinator failed to prove it knows the pre-shared key: give every rank the same --psk-file".into()));
            }
            Some(k.client_proof(&cnonce, &nonce))
        }
        (Some(_), false) => return Err(jerr("the coordinator runs without a pre-shared key but this rank has --psk-file: refusing to trust it (give rank 0 the same --psk-file)".into())),
        (None, true) => return Err(jerr("the coordinator requires a pre-shared key: pass --psk-file FILE (the same file as rank 0's)".into())),
        (None, false) => None,
    };
    send(
        s,
        &RankMsg::Join {
            rank: cfg.rank,
            size: cfg.size,
            facts: Box::new(facts),
            proof,
        },
    )
    .map_err(ferr)?;
    match recv(s, MAX_COORDINATOR_FRAME).map_err(ferr)? {
        CoordMsg::Welcome => Ok(()),
        CoordMsg::Refused { reason } => Err(RankError::Refused {
            rank: cfg.rank,
            addr: cfg.coordinator,
            reason,
        }),
        m => Err(jerr(format!("unexpected answer to join: {m:?}"))),
    }
}

enum In {
    Msg(CoordMsg),
    Lost(String),
}

/// Read the coordinator's messages into `tx`; its silence past `timeout` or a closed
/// connection ends the rank.
fn reader(mut s: TcpStream, timeout: Duration, tx: &mpsc::Sender<In>) {
    let _ = s.set_read_timeout(Some(timeout));
    loop {
        match recv::<CoordMsg>(&mut s, MAX_COORDINATOR_FRAME) {
            Ok(m) => {
                if tx.send(In::Msg(m)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let reason = match e {
                    FrameError::Timeout => {
                        format!("no heartbeat from it for {} s", timeout.as_secs_f64())
                    }
                    FrameError::Closed => {
                        "its connection closed (rank 0 ended or was killed)".into()
                    }
                    e => format!("bad message from it: {e}"),
                };
                let _ = tx.send(In::Lost(reason));
                return;
            }
        }
    }
}

/// Run the flows of one round this rank sends, at the same time; report each.
fn round_flows(
    fcfg: &FlowConfig,
    ctx: FlowContext,
    mine: &[Flow],
    addrs: &[Option<String>],
) -> Vec<LinkMeasurement> {
    thread::scope(|sc| {
        let handles: Vec<_> = mine
            .iter()
            .map(|f| {
                let dest = addrs
                    .get(f.rx as usize)
                    .and_then(Option::as_ref)
                    .and_then(|a| a.parse::<SocketAddr>().ok());
                sc.spawn(move || match dest {
                    Some(d) => run_flow(fcfg, ctx, f, d),
                    None => LinkMeasurement {
                        phase: ctx.phase,
                        round: ctx.round,
                        tx: f.tx,
                        rx: f.rx,
                        transport: fcfg.transport,
                        concurrency: ctx.concurrency,
                        gbps: None,
                        latency: None,
                        retransmits: None,
                        error: Some(format!("unreachable: rank {} has no data address", f.rx)),
                        tx_load: None,
                        rx_load: None,
                    },
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

/// Run one rank until the coordinator ends the run or goes away. `measured` sees each of
/// this rank's measurements as it is made.
pub fn run(
    cfg: &RankConfig,
    measured: &mut dyn FnMut(&LinkMeasurement),
) -> Result<RankRun, RankError> {
    let mut s = connect(cfg)?;
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(
        cfg.heartbeat_timeout.max(crate::wire::HANDSHAKE_TIMEOUT),
    ));
    let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
    let local = s.local_addr().map_err(|err| RankError::Connect {
        rank: cfg.rank,
        addr: cfg.coordinator,
        secs: 0.0,
        err,
    })?;
    let data_addr = data_server(cfg, cfg.bind.unwrap_or(local.ip()))?;
    let base = cfg
        .describe
        .as_ref()
        .map_or_else(|| cfg.facts.clone(), |f| f(data_addr));
    let facts = NodeFacts {
        rank: cfg.rank,
        data_addr: Some(data_addr.to_string()),
        ..base
    };
    join(cfg, &mut s, facts)?;
    let mut out = RankRun {
        data_addr: Some(data_addr),
        ..RankRun::default()
    };
    let (tx, rx) = mpsc::channel();
    let rd = s.try_clone().map_err(|e| RankError::Join {
        rank: cfg.rank,
        addr: cfg.coordinator,
        reason: e.to_string(),
    })?;
    let timeout = cfg.heartbeat_timeout;
    thread::spawn(move || reader(rd, timeout, &tx));
    let writer = Arc::new(Mutex::new(s));
    let stop = Arc::new(AtomicBool::new(false));
    {
        // Heartbeats from a thread of their own, whatever the rank is measuring, each with how
        // busy the host was since the previous one.
        let (writer, stop) = (writer.clone(), stop.clone());
        let _ = thread::Builder::new()
            .name("mesh-heartbeat".into())
            .spawn(move || {
                let mut load = crate::load::Sampler::new();
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(HEARTBEAT);
                    let load = load.since_last();
                    let Ok(mut w) = writer.lock() else { return };
                    if send(&mut *w, &RankMsg::Heartbeat { load }).is_err() {
                        return;
                    }
                }
            });
    }
    let error = serve_rounds(cfg, data_addr, &rx, &writer, &mut out, measured);
    out.error = error;
    stop.store(true, Ordering::Relaxed);
    Ok(out)
}

/// The rank's loop: rounds until `end` (None) or the coordinator is gone (the reason).
fn serve_rounds(
    cfg: &RankConfig,
    data_addr: SocketAddr,
    rx: &mpsc::Receiver<In>,
    writer: &Mutex<TcpStream>,
    out: &mut RankRun,
    measured: &mut dyn FnMut(&LinkMeasurement),
) -> Option<String> {
    let gone = |why: &str| {
        // The coordinator may have ended the run and closed before this rank, busy measuring,
        // read it: an end already received is the reason.
        while let Ok(m) = rx.try_recv() {
            if let In::Msg(CoordMsg::End { reason }) = m {
                return reason
                    .map(|r| format!("rank {}: the coordinator ended the run: {r}", cfg.rank));
            }
        }
        Some(format!(
            "rank {}: the coordinator (rank 0 at {}) is gone: {why}",
            cfg.rank, cfg.coordinator
        ))
    };
    let write = |m: &RankMsg| -> Result<(), FrameError> {
        let mut w = writer.lock().map_err(|_| FrameError::Closed)?;
        send(&mut *w, m)
    };
    loop {
        let msg = match rx.recv_timeout(cfg.heartbeat_timeout + Duration::from_secs(1)) {
            Ok(In::Msg(m)) => m,
            Ok(In::Lost(why)) => return gone(&why),
            Err(RecvTimeoutError::Timeout) => return gone("no message from it in time"),
            Err(RecvTimeoutError::Disconnected) => return gone("its reader ended"),
        };
        match msg {
            CoordMsg::Heartbeat | CoordMsg::Welcome | CoordMsg::Challenge { .. } => {}
            CoordMsg::Table { addrs } => out.table = addrs,
            CoordMsg::Round {
                index,
                phase,
                transport,
                duration_ms,
                flows,
            } => {
                let fcfg = FlowConfig {
                    transport,
                    duration_ms,
                    psk: cfg.psk.clone(),
                    bind: Some(data_addr.ip()),
                    rdma_provider: cfg.rdma_provider.clone(),
                };
                let ctx = FlowContext {
                    round: index,
                    phase,
                    concurrency: u32::try_from(flows.len()).unwrap_or(u32::MAX),
                };
                let mine: Vec<Flow> = flows.into_iter().filter(|f| f.tx == cfg.rank).collect();
                for m in round_flows(&fcfg, ctx, &mine, &out.table) {
                    measured(&m);
                    let sent = write(&RankMsg::Measured { m: m.clone() });
                    out.measurements.push(m);
                    if let Err(e) = sent {
                        return gone(&format!("sending a measurement failed: {e}"));
                    }
                }
                if let Err(e) = write(&RankMsg::Done { index }) {
                    return gone(&format!("sending the end of round {index} failed: {e}"));
                }
            }
            CoordMsg::End { reason } => {
                return reason
                    .map(|r| format!("rank {}: the coordinator ended the run: {r}", cfg.rank))
            }
            CoordMsg::Refused { reason } => {
                return gone(&format!("it refused this rank: {reason}"))
            }
        }
    }
}
