//! Rank 0's coordinator: admits the ranks (key, rank id, size checked), hands out the address
//! table, runs the schedule round by round with a barrier between rounds, gathers each flow's
//! measurement, and watches heartbeats so a rank that never arrives or dies mid-run becomes
//! `unreachable` measurements instead of a hang.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_mesh::{
    Flow, LinkMeasurement, NodeFacts, Phase, RankId, Round, Schedule, ScheduleKind, Transport,
};
use linerate_proto::{random_hex, FrameError, Psk};

use crate::wire::{
    recv, send, CoordMsg, RankMsg, HANDSHAKE_TIMEOUT, HEARTBEAT, MAX_PENDING, MAX_RANKS,
    MAX_RANK_FRAME, MESH_MAGIC, MESH_PROTOCOL, WRITE_TIMEOUT,
};

/// Events waiting for the coordinator's loop, all ranks together.
const QUEUE: usize = 1024;

/// Operator settings of a run.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub size: u32,
    pub psk: Option<Psk>,
    /// How long ranks have to join; the missing ones are then unreachable.
    pub join_timeout: Duration,
    /// How long a rank may stay silent before it counts as gone.
    pub heartbeat_timeout: Duration,
    pub transport: Transport,
    /// Each flow's bandwidth test, ms.
    pub duration_ms: u64,
    /// Split rounds so that at most this many flows run at once (oversubscribed fabrics).
    pub max_concurrent_pairs: Option<u32>,
    /// The most ranks this coordinator admits (`--max-ranks`): a join from a rank or a size
    /// beyond it is refused, and a larger `size` is cut to it.
    pub max_ranks: u32,
}

/// What the coordinator reports while it runs.
#[derive(Debug, Clone)]
pub enum CoordEvent {
    Joined {
        rank: RankId,
        peer: SocketAddr,
        facts: Box<NodeFacts>,
    },
    /// A connection that was not admitted, and why (the peer was told the same).
    Refused {
        peer: SocketAddr,
        reason: String,
    },
    /// A rank that was admitted is gone (or never came: `peer` None).
    Lost {
        rank: RankId,
        reason: String,
    },
    RoundStarted {
        index: u32,
        phase: Phase,
        flows: usize,
    },
    Measured(LinkMeasurement),
}

/// Everything the coordinator gathered, complete or not.
#[derive(Debug, Clone, Default)]
pub struct MeshRun {
    pub size: u32,
    /// Each rank's facts, by rank; None: it never joined.
    pub nodes: Vec<Option<NodeFacts>>,
    /// Ranks that never joined or were lost, with the reason.
    pub unreachable: Vec<(RankId, String)>,
    pub measurements: Vec<LinkMeasurement>,
    /// How many rounds ran (retests included).
    pub rounds: u32,
}

/// Split each round into rounds of at most `max` flows (linerate-mesh's `cap_concurrency`).
fn cap_rounds(rounds: &[Round], max: Option<u32>) -> Vec<Round> {
    match max.and_then(|m| NonZeroUsize::new(m as usize)) {
        Some(m) => {
            let s = Schedule {
                kind: ScheduleKind::File,
                size: 0,
                rounds: rounds.to_vec(),
            };
            linerate_mesh::cap_concurrency(&s, m).rounds
        }
        None => rounds.to_vec(),
    }
}

/// How long a round may take before its missing measurements are given up on: the flow's
/// tests, plus the client's connection, handshake, grace and results bounds.
pub fn round_deadline(duration_ms: u64) -> Duration {
    Duration::from_millis(duration_ms + crate::flows::latency_ms(duration_ms))
        + linerate_proto::defaults::CONNECT_TIMEOUT
        + linerate_proto::defaults::GRACE
        + linerate_proto::defaults::RESULTS_TIMEOUT
}

enum Ev {
    Join {
        rank: RankId,
        facts: Box<NodeFacts>,
        stream: TcpStream,
        peer: SocketAddr,
    },
    Refused {
        peer: SocketAddr,
        reason: String,
    },
    Msg(RankId, RankMsg),
    Lost(RankId, String),
}

/// Checks a joining rank can pass without the run's state: protocol, key, rank id and size.
fn admit(
    cfg: &CoordinatorConfig,
    stream: &mut TcpStream,
) -> Result<(RankId, Box<NodeFacts>), String> {
    let what = |e: FrameError| format!("not a linerate mesh rank: {e}");
    let hello: RankMsg = recv(stream, MAX_RANK_FRAME).map_err(what)?;
    let RankMsg::Hello {
        magic,
        protocol,
        nonce: rank_nonce,
    } = hello
    else {
        return Err("not a linerate mesh rank: the first message is not a hello".into());
    };
    if magic != MESH_MAGIC {
        return Err(format!("not a linerate mesh rank: magic `{magic}`"));
    }
    if protocol != MESH_PROTOCOL {
        return Err(format!(
            "rank speaks mesh protocol {protocol}, this coordinator {MESH_PROTOCOL}: run the same linerate version on every node"
        ));
    }
    let nonce = random_hex(16);
    let proof = cfg
        .psk
        .as_ref()
        .map(|k| k.server_proof(&rank_nonce, &nonce));
    send(
        stream,
        &CoordMsg::Challenge {
            nonce: nonce.clone(),
            auth: cfg.psk.is_some(),
            proof,
        },
    )
    .map_err(what)?;
    let RankMsg::Join {
        rank,
        size,
        facts,
        proof,
    } = recv(stream, MAX_RANK_FRAME).map_err(what)?
    else {
        return Err("not a linerate mesh rank: expected a join after the challenge".into());
    };
    if let Some(k) = &cfg.psk {
        match proof {
            Some(p) if k.verify_client(&nonce, &rank_nonce, &p) => {}
            Some(_) => {
                return Err("wrong pre-shared key: give every rank the same --psk-file".into())
            }
            None => {
                return Err(
                    "this run requires a pre-shared key: pass --psk-file FILE to every rank".into(),
                )
            }
        }
    }
    if size > cfg.max_ranks || rank >= cfg.max_ranks {
        return Err(format!(
            "rank {rank} of a run of {size} is beyond this coordinator's --max-ranks {}",
            cfg.max_ranks
        ));
    }
    if size != cfg.size {
        return Err(format!(
            "rank {rank} was started with size {size}, the coordinator with size {}: every rank must be given the same --size",
            cfg.size
        ));
    }
    if rank >= cfg.size {
        return Err(format!(
            "rank {rank} is out of range: this run has {} ranks (0-{})",
            cfg.size,
            cfg.size - 1
        ));
    }
    if facts.rank != rank {
        return Err(format!("rank {rank} sent the facts of rank {}", facts.rank));
    }
    Ok((rank, facts))
}

/// The accept loop: each connection gets a handshake thread (at most [`MAX_PENDING`] at once).
fn accept_loop(
    listener: &TcpListener,
    cfg: &CoordinatorConfig,
    tx: &SyncSender<Ev>,
    stop: &AtomicBool,
) {
    let pending = Arc::new(AtomicUsize::new(0));
    let _ = listener.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        let (mut stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => {
                thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if pending.load(Ordering::Relaxed) >= MAX_PENDING {
            continue; // dropped: closes the connection
        }
        pending.fetch_add(1, Ordering::Relaxed);
        let (cfg, tx, pending) = (cfg.clone(), tx.clone(), pending.clone());
        thread::spawn(move || {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_nodelay(true);
            let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
            let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
            let ev = match admit(&cfg, &mut stream) {
                Ok((rank, facts)) => Ev::Join {
                    rank,
                    facts,
                    stream,
                    peer,
                },
                Err(reason) => {
                    let _ = send(
                        &mut stream,
                        &CoordMsg::Refused {
                            reason: reason.clone(),
                        },
                    );
                    Ev::Refused { peer, reason }
                }
            };
            pending.fetch_sub(1, Ordering::Relaxed);
            let _ = tx.send(ev);
        });
    }
}

/// One admitted rank's reader: its messages into the coordinator's queue; silence longer
/// than the heartbeat timeout, a bad frame or a closed connection: the rank is lost.
fn reader(rank: RankId, mut stream: TcpStream, timeout: Duration, tx: &SyncSender<Ev>) {
    let _ = stream.set_read_timeout(Some(timeout));
    loop {
        match recv::<RankMsg>(&mut stream, MAX_RANK_FRAME) {
            Ok(m) => {
                if tx.send(Ev::Msg(rank, m)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let reason = match e {
                    FrameError::Timeout => format!("no heartbeat for {} s", timeout.as_secs_f64()),
                    FrameError::Closed => {
                        "its connection to the coordinator closed (the process ended or was killed)"
                            .into()
                    }
                    e => format!("bad message: {e}"),
                };
                let _ = tx.send(Ev::Lost(rank, reason));
                return;
            }
        }
    }
}

struct Peer {
    stream: TcpStream,
    alive: bool,
}

/// The coordinator's state while it runs.
struct Coord<'a> {
    cfg: CoordinatorConfig,
    rx: Receiver<Ev>,
    tx: SyncSender<Ev>,
    peers: Vec<Option<Peer>>,
    run: MeshRun,
    last_beat: Instant,
    events: &'a mut dyn FnMut(CoordEvent),
    /// Flows of the current round still without a measurement.
    open: Vec<Flow>,
    /// Senders of the current round still running.
    waiting: Vec<RankId>,
}

impl Coord<'_> {
    fn alive(&self, r: RankId) -> bool {
        matches!(self.peers.get(r as usize), Some(Some(p)) if p.alive)
    }

    fn write(&mut self, r: RankId, m: &CoordMsg) {
        let failed = match self.peers.get_mut(r as usize) {
            Some(Some(p)) if p.alive => send(&mut p.stream, m).err(),
            _ => None,
        };
        if let Some(e) = failed {
            self.lose(r, format!("writing to it failed: {e}"));
        }
    }

    fn lose(&mut self, r: RankId, reason: String) {
        if let Some(Some(p)) = self.peers.get_mut(r as usize) {
            if !p.alive {
                return;
            }
            p.alive = false;
            let _ = p.stream.shutdown(std::net::Shutdown::Both);
        }
        self.run.unreachable.push((r, reason.clone()));
        (self.events)(CoordEvent::Lost { rank: r, reason });
        self.waiting.retain(|&w| w != r);
    }

    fn heartbeat(&mut self) {
        if self.last_beat.elapsed() >= HEARTBEAT {
            self.last_beat = Instant::now();
            for r in 0..self.cfg.size {
                self.write(r, &CoordMsg::Heartbeat);
            }
        }
    }

    /// Handle one event; `joining` while ranks may still join.
    fn handle(&mut self, ev: Ev, joining: bool) {
        match ev {
            Ev::Join {
                rank,
                facts,
                mut stream,
                peer,
            } => {
                let refuse = if !joining {
                    Some(
                        "the run has already started: ranks must join within --join-timeout"
                            .to_string(),
                    )
                } else if let Some(Some(_)) = self.peers.get(rank as usize) {
                    let from = self.run.nodes[rank as usize]
                        .as_ref()
                        .map_or(String::new(), |f| format!(" ({})", f.host));
                    Some(format!(
                        "rank {rank} has already joined{from}: every rank needs its own id"
                    ))
                } else {
                    None
                };
                if let Some(reason) = refuse {
                    let _ = send(
                        &mut stream,
                        &CoordMsg::Refused {
                            reason: reason.clone(),
                        },
                    );
                    (self.events)(CoordEvent::Refused { peer, reason });
                    return;
                }
                if send(&mut stream, &CoordMsg::Welcome).is_err() {
                    return;
                }
                let (Ok(rd), tx) = (stream.try_clone(), self.tx.clone()) else {
                    return;
                };
                let timeout = self.cfg.heartbeat_timeout;
                thread::spawn(move || reader(rank, rd, timeout, &tx));
                self.peers[rank as usize] = Some(Peer {
                    stream,
                    alive: true,
                });
                self.run.nodes[rank as usize] = Some((*facts).clone());
                (self.events)(CoordEvent::Joined { rank, peer, facts });
            }
            Ev::Refused { peer, reason } => (self.events)(CoordEvent::Refused { peer, reason }),
            Ev::Lost(r, reason) => self.lose(r, reason),
            Ev::Msg(r, m) => self.message(r, m),
        }
    }

    fn message(&mut self, r: RankId, m: RankMsg) {
        match m {
            RankMsg::Heartbeat => {}
            RankMsg::Measured { m } => {
                let pos = self.open.iter().position(|f| f.tx == m.tx && f.rx == m.rx);
                // Only the sender reports a flow, and only a flow of the current round.
                if m.tx == r && m.round == self.run.rounds.saturating_sub(1) {
                    if let Some(i) = pos {
                        self.open.remove(i);
                        self.record(m);
                    }
                }
            }
            RankMsg::Done { index } => {
                if index == self.run.rounds.saturating_sub(1) {
                    self.waiting.retain(|&w| w != r);
                }
            }
            RankMsg::Hello { .. } | RankMsg::Join { .. } => {
                self.lose(r, "protocol error: a second hello or join".into());
            }
        }
    }

    fn record(&mut self, m: LinkMeasurement) {
        (self.events)(CoordEvent::Measured(m.clone()));
        self.run.measurements.push(m);
    }

    fn unreachable(&self, f: &Flow, phase: Phase, round: u32, concurrency: u32) -> LinkMeasurement {
        let who: Vec<String> = [f.tx, f.rx]
            .iter()
            .filter(|&&r| !self.alive(r))
            .map(|r| format!("rank {r}"))
            .collect();
        LinkMeasurement {
            phase,
            round,
            tx: f.tx,
            rx: f.rx,
            transport: self.cfg.transport,
            concurrency,
            gbps: None,
            latency: None,
            retransmits: None,
            error: Some(format!(
                "unreachable: {}",
                if who.is_empty() {
                    "no result within the round's deadline".into()
                } else {
                    format!("{} unreachable", who.join(" and "))
                }
            )),
        }
    }

    /// Wait for events until `done` holds or `deadline` passes, sending heartbeats.
    fn pump(&mut self, deadline: Instant, joining: bool, done: &dyn Fn(&Self) -> bool) {
        while !done(self) && Instant::now() < deadline {
            self.heartbeat();
            match self.rx.recv_timeout(Duration::from_millis(100)) {
                Ok(ev) => self.handle(ev, joining),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn join_phase(&mut self) {
        let deadline = Instant::now() + self.cfg.join_timeout;
        self.pump(deadline, true, &|c| c.peers.iter().all(Option::is_some));
        for r in 0..self.cfg.size {
            if self.peers[r as usize].is_none() {
                let reason = format!(
                    "never joined within --join-timeout {} s",
                    self.cfg.join_timeout.as_secs_f64()
                );
                self.run.unreachable.push((r, reason.clone()));
                (self.events)(CoordEvent::Lost { rank: r, reason });
            }
        }
        let addrs: Vec<Option<String>> = self
            .run
            .nodes
            .iter()
            .map(|n| n.as_ref().and_then(|f| f.data_addr.clone()))
            .collect();
        for r in 0..self.cfg.size {
            self.write(
                r,
                &CoordMsg::Table {
                    addrs: addrs.clone(),
                },
            );
        }
    }

    fn round(&mut self, round: &Round, phase: Phase) {
        let index = self.run.rounds;
        self.run.rounds += 1;
        let concurrency = u32::try_from(round.flows.len()).unwrap_or(u32::MAX);
        let (live, dead): (Vec<Flow>, Vec<Flow>) = round
            .flows
            .iter()
            .partition(|f| self.alive(f.tx) && self.alive(f.rx));
        for f in &dead {
            let m = self.unreachable(f, phase, index, concurrency);
            self.record(m);
        }
        (self.events)(CoordEvent::RoundStarted {
            index,
            phase,
            flows: live.len(),
        });
        if live.is_empty() {
            return;
        }
        self.open.clone_from(&live);
        let mut senders: Vec<RankId> = live.iter().map(|f| f.tx).collect();
        senders.sort_unstable();
        senders.dedup();
        self.waiting.clone_from(&senders);
        let msg = CoordMsg::Round {
            index,
            phase,
            transport: self.cfg.transport,
            duration_ms: self.cfg.duration_ms,
            flows: live.clone(),
        };
        for &s in &senders {
            self.write(s, &msg);
        }
        let deadline = Instant::now() + round_deadline(self.cfg.duration_ms);
        self.pump(deadline, false, &|c| c.waiting.is_empty());
        for f in std::mem::take(&mut self.open) {
            let m = self.unreachable(&f, phase, index, concurrency);
            self.record(m);
        }
    }
}

/// Run a whole mesh on `listener`: admit the ranks, run `schedule` (rounds capped by
/// `max_concurrent_pairs`), then the rounds `retest` asks for given what was measured, and
/// tell every rank the run is over. Never fails: what could not be measured is
/// `unreachable`.
pub fn run(
    listener: TcpListener,
    cfg: &CoordinatorConfig,
    schedule: &Schedule,
    retest: &mut dyn FnMut(&MeshRun) -> Vec<Round>,
    events: &mut dyn FnMut(CoordEvent),
) -> MeshRun {
    let size = cfg.size.min(MAX_RANKS).min(cfg.max_ranks.max(1));
    let cfg = CoordinatorConfig {
        size,
        ..cfg.clone()
    };
    // Bounded: a rank that floods the coordinator waits for it (its reader blocks), so the
    // queue holds at most QUEUE frames of at most MAX_RANK_FRAME bytes.
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let stop = Arc::new(AtomicBool::new(false));
    let acceptor = {
        let (cfg, tx, stop) = (cfg.clone(), tx.clone(), stop.clone());
        thread::spawn(move || accept_loop(&listener, &cfg, &tx, &stop))
    };
    let mut c = Coord {
        peers: (0..size).map(|_| None).collect(),
        run: MeshRun {
            size,
            nodes: vec![None; size as usize],
            ..MeshRun::default()
        },
        cfg,
        rx,
        tx,
        last_beat: Instant::now(),
        events,
        open: Vec::new(),
        waiting: Vec::new(),
    };
    c.join_phase();
    for r in cap_rounds(&schedule.rounds, c.cfg.max_concurrent_pairs) {
        c.round(&r, Phase::Round);
    }
    let extra = retest(&c.run);
    for r in cap_rounds(&extra, c.cfg.max_concurrent_pairs) {
        c.round(&r, Phase::Retest);
    }
    for r in 0..size {
        c.write(r, &CoordMsg::End { reason: None });
    }
    stop.store(true, Ordering::Relaxed);
    let _ = acceptor.join();
    c.run
}
