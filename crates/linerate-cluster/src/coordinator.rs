//! Rank 0's coordinator: admits the ranks (key, rank id, size checked), hands out the address
//! table, runs the schedule round by round with a barrier between rounds, gathers each flow's
//! measurement with the load its two hosts reported over its round, and watches heartbeats so
//! a rank that never arrives or dies mid-run becomes `unreachable` measurements instead of a
//! hang. A rank busy measuring is never lost for being late with its heartbeat: its round's
//! deadline decides. Asked to stop (rank 0 got SIGTERM or SIGINT), it ends the run at once with
//! what was measured.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_mesh::{
    Flow, HostLoad, LinkMeasurement, NodeFacts, Phase, RankId, Round, Schedule, ScheduleKind,
    Transport,
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
    /// Set (to the signal's number) to end the run now with what was measured: the round
    /// under way is abandoned, no retest runs, every rank is told.
    pub stop: Option<Arc<AtomicUsize>>,
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

/// Where a run was when it was asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    /// The value [`CoordinatorConfig::stop`] was set to (the signal's number).
    pub signal: usize,
    /// The rounds that had started (counting every round of the run, retests included): the
    /// last was abandoned.
    pub started: u32,
    /// The phase under way.
    pub phase: Phase,
    /// The rounds of the schedule (after `max_concurrent_pairs`), retests not included.
    pub scheduled: u32,
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
    /// Set when the run was asked to stop before its end.
    pub interrupted: Option<Interrupted>,
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
    /// Nothing from the rank for the heartbeat timeout (its reader keeps reading).
    Silent(RankId),
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

/// One admitted rank's reader: its messages into the coordinator's queue. Silence longer than
/// the heartbeat timeout is reported, and reading goes on (the coordinator decides whether the
/// rank is lost: not while it measures); a bad frame or a closed connection: the rank is lost.
/// The timeout runs in the kernel, so a reader that is itself slow to be scheduled never
/// mistakes bytes that arrived for silence.
fn reader(rank: RankId, mut stream: TcpStream, timeout: Duration, tx: &SyncSender<Ev>) {
    let _ = stream.set_read_timeout(Some(timeout));
    loop {
        match recv::<RankMsg>(&mut stream, MAX_RANK_FRAME) {
            Ok(m) => {
                if tx.send(Ev::Msg(rank, m)).is_err() {
                    return;
                }
            }
            Err(FrameError::Timeout) => {
                if tx.send(Ev::Silent(rank)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let reason = match e {
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
    /// When the coordinator last read a message from it.
    heard: Instant,
}

/// When each round ran, and what each rank reported over it: a rank's heartbeat covers the
/// second or so before it arrived, and counts in every round that interval overlaps, weighted by
/// the overlap, so a round's load is its ranks' average over the round itself (not over the idle
/// time before or after it that the same heartbeat covered).
#[derive(Debug, Default)]
struct Loads {
    /// Per round (the run's index): start, end, and where its measurements start in
    /// [`MeshRun::measurements`] (a round's measurements are recorded together).
    windows: Vec<(Instant, Option<Instant>, usize)>,
    /// What each rank reported over each recent round.
    pending: BTreeMap<(u32, RankId), LoadSum>,
}

/// A rank's reports over one round, each figure summed times the seconds it covered.
#[derive(Debug, Clone, Copy, Default)]
struct LoadSum {
    cores: u32,
    secs: f64,
    other: f64,
    steal: f64,
    idle: f64,
    /// The rank's own CPU and wait, and the seconds they were reported for.
    rank: f64,
    rank_secs: f64,
    waited: f64,
    waited_secs: f64,
}

impl LoadSum {
    fn add(&mut self, l: &HostLoad, secs: f64) {
        self.cores = l.cores;
        self.secs += secs;
        self.other += l.other_cores * secs;
        self.steal += l.steal_cores * secs;
        self.idle += l.idle_cores * secs;
        if let Some(c) = l.rank_cores {
            self.rank += c * secs;
            self.rank_secs += secs;
        }
        if let Some(w) = l.waited_cores {
            self.waited += w * secs;
            self.waited_secs += secs;
        }
    }

    /// The average over what was reported; `None` before anything was.
    fn load(&self) -> Option<HostLoad> {
        let avg = |x: f64, s: f64| (s > 0.0).then(|| x / s);
        Some(HostLoad {
            cores: self.cores,
            other_cores: avg(self.other, self.secs)?,
            steal_cores: avg(self.steal, self.secs)?,
            idle_cores: avg(self.idle, self.secs)?,
            rank_cores: avg(self.rank, self.rank_secs),
            waited_cores: avg(self.waited, self.waited_secs),
            seconds: self.secs,
        })
    }
}

/// How many heartbeat timeouts a rank may stay silent while it measures (in a flow of the round
/// under way): under a load that leaves its heartbeat thread little CPU it may be late,
/// and losing a live rank turns every one of its links into a false `unreachable`. A rank
/// that is really gone is still lost by then, or at its round's deadline.
const MEASURING_SILENCE: u32 = 3;

/// How long after its end a round still takes load reports (a rank late with its heartbeat
/// covers a longer interval).
const LOAD_WINDOW: Duration = Duration::from_secs(60);

impl Loads {
    fn start(&mut self, first: usize) {
        self.windows.push((Instant::now(), None, first));
    }

    fn end(&mut self) {
        if let Some(w) = self.windows.last_mut() {
            w.1 = Some(Instant::now());
        }
        // Forget the rounds no report can reach any more.
        let now = Instant::now();
        let keep = self
            .windows
            .iter()
            .position(|(_, e, _)| e.is_none_or(|e| now.saturating_duration_since(e) < LOAD_WINDOW))
            .unwrap_or(self.windows.len());
        let keep = u32::try_from(keep).unwrap_or(u32::MAX);
        self.pending = self.pending.split_off(&(keep, 0));
    }

    /// Rank `r` reports `l` for the interval that ended now.
    fn report(&mut self, r: RankId, l: HostLoad, measurements: &mut [LinkMeasurement]) {
        let b = Instant::now();
        let a = b
            .checked_sub(Duration::from_secs_f64(l.seconds.clamp(0.0, 3600.0)))
            .unwrap_or(b);
        for k in (0..self.windows.len()).rev() {
            let (start, end, first) = self.windows[k];
            if end.is_some_and(|e| e <= a) {
                break;
            }
            let overlap = end
                .unwrap_or(b)
                .min(b)
                .saturating_duration_since(start.max(a))
                .as_secs_f64();
            if overlap <= 0.0 {
                continue;
            }
            let k32 = u32::try_from(k).unwrap_or(u32::MAX);
            let sum = self.pending.entry((k32, r)).or_default();
            sum.add(&l, overlap);
            let load = sum.load();
            let last = self
                .windows
                .get(k + 1)
                .map_or(measurements.len(), |w| w.2)
                .min(measurements.len());
            for m in measurements
                .get_mut(first.min(last)..last)
                .unwrap_or_default()
            {
                if m.tx == r {
                    m.tx_load = load;
                }
                if m.rx == r {
                    m.rx_load = load;
                }
            }
        }
    }

    /// The loads reported so far over a measurement's round.
    fn apply(&self, m: &mut LinkMeasurement) {
        m.tx_load = self.pending.get(&(m.round, m.tx)).and_then(LoadSum::load);
        m.rx_load = self.pending.get(&(m.round, m.rx)).and_then(LoadSum::load);
    }
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
    loads: Loads,
}

impl Coord<'_> {
    fn alive(&self, r: RankId) -> bool {
        matches!(self.peers.get(r as usize), Some(Some(p)) if p.alive)
    }

    /// The signal the run was asked to stop by, if it was.
    fn stopped(&self) -> Option<usize> {
        self.cfg
            .stop
            .as_ref()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&s| s != 0)
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
                    heard: Instant::now(),
                });
                self.run.nodes[rank as usize] = Some((*facts).clone());
                (self.events)(CoordEvent::Joined { rank, peer, facts });
            }
            Ev::Refused { peer, reason } => (self.events)(CoordEvent::Refused { peer, reason }),
            Ev::Lost(r, reason) => self.lose(r, reason),
            Ev::Silent(r) => {
                // A rank measuring in the round under way (sending, or receiving a flow not yet
                // reported) may be too busy to say so for a while ([`MEASURING_SILENCE`]
                // heartbeat timeouts), within its round's deadline.
                let silent = match self.peers.get(r as usize) {
                    Some(Some(p)) => p.heard.elapsed(),
                    _ => Duration::ZERO,
                };
                let measuring = self.waiting.contains(&r) || self.open.iter().any(|f| f.rx == r);
                let allowed = if measuring {
                    self.cfg.heartbeat_timeout * MEASURING_SILENCE
                } else {
                    self.cfg.heartbeat_timeout
                };
                if silent >= allowed {
                    self.lose(r, format!("no heartbeat for {} s", silent.as_secs()));
                }
            }
            Ev::Msg(r, m) => {
                if let Some(Some(p)) = self.peers.get_mut(r as usize) {
                    p.heard = Instant::now();
                }
                self.message(r, m);
            }
        }
    }

    fn message(&mut self, r: RankId, m: RankMsg) {
        match m {
            RankMsg::Heartbeat { load } => {
                if let Some(l) = load.filter(|l| {
                    [l.other_cores, l.steal_cores, l.idle_cores, l.seconds]
                        .iter()
                        .all(|x| x.is_finite() && *x >= 0.0)
                }) {
                    self.loads.report(r, l, &mut self.run.measurements);
                }
            }
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

    fn record(&mut self, mut m: LinkMeasurement) {
        // Loads come from the coordinator's bookkeeping, never from what a rank claims.
        self.loads.apply(&mut m);
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
            tx_load: None,
            rx_load: None,
        }
    }

    /// Wait for events until `done` holds, `deadline` passes or the run is asked to stop,
    /// sending heartbeats.
    fn pump(&mut self, deadline: Instant, joining: bool, done: &dyn Fn(&Self) -> bool) {
        while !done(self) && Instant::now() < deadline && self.stopped().is_none() {
            self.heartbeat();
            match self.rx.recv_timeout(Duration::from_millis(100)) {
                // Once asked to stop, nothing more is taken in: under `scancel` every rank gets
                // the same signal, and their connections closing then are not losses.
                Ok(_) if self.stopped().is_some() => return,
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
        self.loads.start(self.run.measurements.len());
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
            self.loads.end();
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
        if self.stopped().is_some() {
            // Abandoned: what this round did not finish was not measured, not unreachable.
            self.open.clear();
            self.waiting.clear();
            self.loads.end();
            return;
        }
        // A sender that never finished and has said nothing for the heartbeat timeout stopped
        // answering (a paused process keeps its connection open).
        for r in std::mem::take(&mut self.waiting) {
            let silent = match self.peers.get(r as usize) {
                Some(Some(p)) => p.heard.elapsed(),
                _ => Duration::ZERO,
            };
            if silent >= self.cfg.heartbeat_timeout {
                self.lose(
                    r,
                    format!(
                        "no heartbeat for {} s, and its flows of round {index} never reported",
                        silent.as_secs()
                    ),
                );
            }
        }
        for f in std::mem::take(&mut self.open) {
            let m = self.unreachable(&f, phase, index, concurrency);
            self.record(m);
        }
        self.loads.end();
    }

    /// Waits (at most two heartbeats) until every live rank has reported its load past the
    /// end of the last round, so the retests' loads are complete.
    fn settle(&mut self) {
        let Some(end) = self.loads.windows.last().and_then(|w| w.1) else {
            return;
        };
        let deadline = Instant::now() + 2 * HEARTBEAT + Duration::from_millis(500);
        self.pump(deadline, false, &|c| {
            c.peers
                .iter()
                .flatten()
                .all(|p| !p.alive || p.heard > end + Duration::from_millis(50))
        });
    }

    /// Marks the run interrupted when it was asked to stop; whether it was.
    fn interrupted(&mut self, phase: Phase, scheduled: usize) -> bool {
        let Some(signal) = self.stopped() else {
            return false;
        };
        if self.run.interrupted.is_none() {
            self.run.interrupted = Some(Interrupted {
                signal,
                started: self.run.rounds,
                phase,
                scheduled: u32::try_from(scheduled).unwrap_or(u32::MAX),
            });
        }
        true
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
        loads: Loads::default(),
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
    let rounds = cap_rounds(&schedule.rounds, c.cfg.max_concurrent_pairs);
    let mut stopped = c.interrupted(Phase::Round, rounds.len());
    for r in &rounds {
        if stopped {
            break;
        }
        c.round(r, Phase::Round);
        stopped = c.interrupted(Phase::Round, rounds.len());
    }
    if !stopped {
        let extra = cap_rounds(&retest(&c.run), c.cfg.max_concurrent_pairs);
        for r in &extra {
            if stopped {
                break;
            }
            c.round(r, Phase::Retest);
            stopped = c.interrupted(Phase::Retest, rounds.len());
        }
        if !extra.is_empty() && !stopped {
            c.settle();
        }
    }
    let reason = c.run.interrupted.map(|i| {
        format!(
            "rank 0 was asked to stop (signal {}) after {} round(s) had started",
            i.signal, i.started
        )
    });
    for r in 0..size {
        c.write(
            r,
            &CoordMsg::End {
                reason: reason.clone(),
            },
        );
    }
    stop.store(true, Ordering::Relaxed);
    let _ = acceptor.join();
    c.run
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(other: f64, rank: f64, waited: f64, seconds: f64) -> HostLoad {
        HostLoad {
            cores: 2,
            other_cores: other,
            steal_cores: 0.0,
            idle_cores: 0.0,
            rank_cores: Some(rank),
            waited_cores: Some(waited),
            seconds,
        }
    }

    fn measurement(round: u32, tx: RankId, rx: RankId) -> LinkMeasurement {
        LinkMeasurement {
            phase: Phase::Retest,
            round,
            tx,
            rx,
            transport: Transport::Tcp,
            concurrency: 1,
            gbps: Some(1.0),
            latency: None,
            retransmits: None,
            error: None,
            tx_load: None,
            rx_load: None,
        }
    }

    #[test]
    fn a_rounds_load_is_its_ranks_reports_weighted_by_their_overlap_with_it() {
        let now = Instant::now();
        let ago = |ms: u64| now.checked_sub(Duration::from_millis(ms)).unwrap();
        // Round 0 ran from 4 s to 2 s ago, round 1 from 2 s ago and runs still.
        let mut loads = Loads {
            windows: vec![(ago(4000), Some(ago(2000)), 0), (ago(2000), None, 1)],
            pending: BTreeMap::new(),
        };
        let mut ms = vec![measurement(0, 1, 2), measurement(1, 2, 1)];
        // Rank 1 reports a busy interval covering the last 3 s: 1 s of it in round 0, 2 s in
        // round 1.
        loads.report(1, load(1.8, 0.6, 0.9, 3.0), &mut ms);
        let l0 = ms[0].tx_load.expect("round 0 load");
        assert!((l0.seconds - 1.0).abs() < 0.05, "{l0:?}");
        assert!((l0.other_cores - 1.8).abs() < 1e-9, "{l0:?}");
        let l1 = ms[1].rx_load.expect("round 1 load");
        assert!((l1.seconds - 2.0).abs() < 0.05, "{l1:?}");
        // Another report over round 1 only: the average weighs each by its overlap.
        loads.report(1, load(0.0, 0.0, 0.0, 2.0), &mut ms);
        let l1 = ms[1].rx_load.unwrap();
        assert!((l1.other_cores - 0.9).abs() < 0.05, "{l1:?}");
        assert!((l1.waited_cores.unwrap() - 0.45).abs() < 0.05, "{l1:?}");
        // A measurement recorded later gets what was reported so far.
        let mut late = measurement(1, 3, 1);
        loads.apply(&mut late);
        assert_eq!(late.rx_load, ms[1].rx_load);
        assert!(late.tx_load.is_none(), "rank 3 reported nothing");
    }
}
