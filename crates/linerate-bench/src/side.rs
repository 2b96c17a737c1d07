//! One side of a test: start a thread per stream, sample intervals, collect results.
//!
//! This is the machinery every kind shares; what a kind runs on each of its data connections
//! is its module's (`crate::kind`), given to [`run`] with the connections as a [`Wired`]; the
//! functions' types ([`TcpEnd`], [`UdpEnd`], [`ListenEnd`], [`ConnectEnd`]) are this module's.

use std::fs::File;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::lat::Rtt;
use linerate_engine::meter::{
    sample_intervals, Budget, Meter, SampleSchedule, Sink, StallWatch, Stop,
};
use linerate_engine::udp::{self, RecvState};
use linerate_engine::{sys, timed, with_thread_cpu, StreamOutcome, Timed};
use linerate_proto::{CpuUsage, IntervalSample, SideResults, Stalls, StreamResult, TestParams};

/// The bounds of a side's run: the grace after the test, the UDP drain, the idle limit
/// (protocol values, kept with the other defaults).
pub(crate) use linerate_proto::defaults::{GRACE, IDLE, UDP_DRAIN};

/// What an end runs on TCP connection `idx` of its test (either end: [`Streams::plan`] says
/// which). An error ends the side before it starts.
pub type TcpEnd = fn(&mut Streams<'_>, u32, TcpStream) -> Result<(), String>;
/// What an end runs on UDP flow `idx`.
pub type UdpEnd = fn(&mut Streams<'_>, u32, UdpFlow);
/// What the server runs for stream `idx` on its listener of the test, for the client at the
/// address given only.
pub type ListenEnd = fn(&mut Streams<'_>, u32, &Arc<TcpListener>, IpAddr);
/// What the client runs for stream `idx` against the server's listener (from `-B` when given).
pub type ConnectEnd = fn(&mut Streams<'_>, u32, SocketAddr, Option<IpAddr>);

/// One UDP flow of a stream: a socket (client: connected, one per stream; server: the test's
/// shared socket in linerate's datagrams, or the stream's own connected one in iperf3's) and,
/// for a server sending on a shared socket, the client's address for this stream. How its
/// datagrams are framed is the test's ([`SidePlan::datagrams`]).
#[derive(Debug, Clone)]
pub struct UdpFlow {
    pub sock: Arc<UdpSocket>,
    pub peer: Option<SocketAddr>,
}

/// How long a side that only receives waits for what is on its way once the peer ended the
/// test ([`Ending::Peer`]), at most; and the quiet that says nothing more is coming.
const PEER_END_DRAIN: Duration = Duration::from_secs(1);
const PEER_END_QUIET: Duration = Duration::from_millis(50);

/// What ends a side's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The test's time, which each end keeps (linerate's protocol): a sender stops at
    /// `duration_ms`, a receiver at the end of its stream.
    Time,
    /// The peer says the test is over (`peer_done`: iperf3's TEST_END, the client keeping the
    /// time): every stream runs until then and is stopped then. `duration_ms` is only the bound:
    /// a peer that never ends the test has its streams stopped at the bound (plus the grace),
    /// and the side reports that they ran on.
    Peer,
}

/// This side's data connections with what it runs on each, built together by the wire
/// protocol from the kind's `Ends`: a connection always fits its function.
#[derive(Debug)]
pub enum Wired {
    /// One TCP connection per stream.
    Tcp(TcpEnd, Vec<TcpStream>),
    /// One UDP flow per stream.
    Udp(UdpEnd, Vec<UdpFlow>),
    /// The server's listener of the test, served by `streams` threads for `client` only.
    Listen {
        run: ListenEnd,
        listener: Arc<TcpListener>,
        client: IpAddr,
        streams: u32,
    },
    /// The client's `streams` loops connecting to the server's listener.
    Connect {
        run: ConnectEnd,
        server: SocketAddr,
        bind: Option<IpAddr>,
        streams: u32,
    },
}

impl Wired {
    /// The streams (meters, results, interval columns).
    fn streams(&self) -> usize {
        match self {
            Self::Tcp(_, c) => c.len(),
            Self::Udp(_, c) => c.len(),
            Self::Listen { streams, .. } | Self::Connect { streams, .. } => *streams as usize,
        }
    }

    /// Handles of the TCP data connections, to shut them down when the test must end at once
    /// (the other transports' threads look at the stop flag).
    pub fn tcp_handles(&self) -> Vec<TcpStream> {
        match self {
            Self::Tcp(_, c) => c.iter().filter_map(|t| t.try_clone().ok()).collect(),
            Self::Udp(..) | Self::Listen { .. } | Self::Connect { .. } => Vec::new(),
        }
    }

    /// The UDP sockets, for a caller that keeps them open past the side's end (the client, until
    /// the far end's results came: a datagram still on its way then reaches the socket, or its
    /// full buffer where the host counts the drop, instead of being answered with ICMP).
    pub fn udp_sockets(&self) -> Vec<Arc<UdpSocket>> {
        match self {
            Self::Udp(_, f) => f.iter().map(|f| Arc::clone(&f.sock)).collect(),
            Self::Tcp(..) | Self::Listen { .. } | Self::Connect { .. } => Vec::new(),
        }
    }
}

/// A UDP receiver's error, if any, and the receive state of every stream.
type ReceiverRun = (Option<String>, Vec<RecvState>);

/// A transaction client's samples and its error, if any.
type RttRun = (Rtt, Option<String>);

/// The busy-poll of a TCP latency test (on the server, already capped by its limit).
pub(crate) fn spin_of(p: &TestParams) -> Duration {
    p.spin_us.map_or(linerate_engine::lat::DEFAULT_SPIN, |u| {
        Duration::from_micros(u64::from(u))
    })
}

/// A soak's counter sampler on one side (built by a
/// `linerate_inventory::counters::SoakSamplerFn`).
pub type SoakSampler = Box<dyn FnMut(u64, f64) -> linerate_proto::soak::SoakSample + Send>;

/// One side's soak sampling: the baseline at the start, then one sample after each interval
/// with the bytes this side sent and received in it.
pub struct Soak {
    sampler: SoakSampler,
    params: TestParams,
    is_client: bool,
    start: Instant,
    seq: u64,
}

impl std::fmt::Debug for Soak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Soak")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl Soak {
    pub fn new(sampler: SoakSampler, plan: &SidePlan) -> Self {
        Self {
            sampler,
            params: plan.params.clone(),
            is_client: plan.is_client,
            start: plan.start,
            seq: 0,
        }
    }

    fn take(&mut self) -> linerate_proto::soak::SoakSample {
        let s = (self.sampler)(self.seq, self.start.elapsed().as_secs_f64());
        self.seq += 1;
        s
    }

    /// The baseline, before any interval.
    pub fn first(&mut self) -> linerate_proto::soak::SoakSample {
        self.take()
    }

    /// The sample that closes interval `i`, with this side's bytes of it.
    pub fn after(&mut self, i: &IntervalSample) -> linerate_proto::soak::SoakSample {
        let mut s = self.take();
        for (idx, b) in i.bytes.iter().enumerate() {
            if self.params.sends_on(idx as u32, self.is_client) {
                s.bytes_sent += b;
            } else {
                s.bytes_received += b;
            }
        }
        s
    }
}

#[derive(Debug)]
pub struct SidePlan {
    pub params: TestParams,
    pub is_client: bool,
    /// The header of the test's UDP datagrams: linerate's with the tag of the test (from its
    /// cookie), or iperf3's.
    pub datagrams: udp::Format,
    pub start: Instant,
    /// CPU to pin stream threads to (`-A`), round robin.
    pub affinity: Vec<usize>,
    /// File transfers: the source (client) or the destination (server).
    pub file: Option<Arc<File>>,
    /// A test that ends on data rather than time (iperf3's `-n`/`-k`): what this end's streams
    /// count toward its end.
    pub budget: Option<Arc<Budget>>,
    /// What ends the streams.
    pub ending: Ending,
}

#[derive(Debug)]
pub struct SideRun {
    pub results: SideResults,
    pub rtt: Option<Rtt>,
    /// What each stream's counters said when the omitted warm-up ended (by stream index);
    /// `None` without a warm-up.
    pub omit_marks: Option<Vec<OmitMark>>,
    /// What this side's UDP receivers counted of each stream (by stream index; a stream it
    /// sent is left at its default), for a wire protocol that reports more than the
    /// [`SideResults`] carry (iperf3's counts, [`RecvState::iperf3`]); `None` when it received
    /// no UDP.
    pub udp_received: Option<Vec<RecvState>>,
    /// The far end's processes were found on this host (by the listening socket they hold):
    /// its CPU is in this side's figures, and its own figures count this side as someone else.
    pub far_end_here: bool,
}

/// A stream's counters when the omitted warm-up ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OmitMark {
    /// Bytes it had moved.
    pub bytes: u64,
    /// A TCP sender's retransmissions so far (TCP_INFO); `None` for the other streams.
    pub retransmits: Option<u64>,
}

impl SideRun {
    pub(crate) fn failed(error: String) -> Self {
        Self {
            results: SideResults {
                error: Some(error),
                ..SideResults::default()
            },
            rtt: None,
            omit_marks: None,
            udp_received: None,
            far_end_here: false,
        }
    }
}

struct Job {
    idx: u32,
    handle: thread::JoinHandle<StreamOutcome>,
}

/// A stream thread's work.
pub(crate) type StreamFn = Box<dyn FnOnce() -> StreamOutcome + Send>;

/// The threads and handles of one side's streams while they run. A kind's module starts its
/// threads through the methods below; the threads come in four sorts, by how they end.
pub struct Streams<'a> {
    plan: &'a SidePlan,
    deadline: Instant,
    meters: Vec<Arc<Meter>>,
    /// Set to abort: by the caller, or when the streams outlive the test.
    stop: Stop,
    /// Set when the last stream thread and transaction client ends.
    done: Stop,
    /// Set when the peer says it is done (the server's view of the client's `done`).
    peer_done: Stop,
    /// Ends the threads that do not end on their own (UDP receivers, answering servers).
    timed_stop: Stop,
    remaining: Arc<AtomicUsize>,
    /// Threads that end on their own: senders at the deadline, receivers at end of stream.
    jobs: Vec<Job>,
    /// Clients timing transactions (latency and connection rate).
    round_trips: Vec<thread::JoinHandle<Timed<RttRun>>>,
    /// UDP receivers: they end at the deadline plus the drain.
    receivers: Vec<thread::JoinHandle<Timed<ReceiverRun>>>,
    /// Servers answering the client's transactions: they end when the client is done (or at
    /// the deadline plus the grace).
    answerers: Vec<thread::JoinHandle<Timed<Option<String>>>>,
    /// Every TCP connection, to shut down when the test must end.
    tcp_handles: Vec<TcpStream>,
    /// The connections this side sends on, by stream index: only a sender retransmits, so only
    /// they count.
    send_handles: Vec<(u32, TcpStream)>,
    /// A thread already receives every stream of the shared UDP socket (server).
    pub(crate) shared_receiver: bool,
    /// This end reports no intervals (a server answering requests: the client counts them).
    pub(crate) quiet: bool,
    /// TCP latency: the busy-poll this end used per wait (reported to the peer).
    pub(crate) spin: Option<Duration>,
}

impl std::fmt::Debug for Streams<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("streams", &self.meters.len())
            .field("jobs", &self.jobs.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Streams<'a> {
    fn new(plan: &'a SidePlan, n: usize, abort: &Stop, peer_done: &Stop) -> Self {
        Self {
            plan,
            deadline: plan.start + Duration::from_millis(plan.params.duration_ms),
            meters: (0..n).map(|_| Meter::new()).collect(),
            stop: abort.clone(),
            done: Stop::new(),
            peer_done: peer_done.clone(),
            timed_stop: Stop::new(),
            remaining: Arc::new(AtomicUsize::new(0)),
            jobs: Vec::new(),
            round_trips: Vec::new(),
            receivers: Vec::new(),
            answerers: Vec::new(),
            tcp_handles: Vec::new(),
            send_handles: Vec::new(),
            shared_receiver: false,
            quiet: false,
            spin: None,
        }
    }

    /// Start every connection's thread with the function of its kind.
    fn start(&mut self, wired: Wired) -> Result<(), String> {
        match wired {
            Wired::Tcp(run, conns) => {
                for (i, s) in conns.into_iter().enumerate() {
                    run(self, i as u32, s)?;
                }
            }
            Wired::Udp(run, flows) => {
                for (i, f) in flows.into_iter().enumerate() {
                    run(self, i as u32, f);
                }
            }
            Wired::Listen {
                run,
                listener,
                client,
                streams,
            } => {
                for i in 0..streams {
                    run(self, i, &listener, client);
                }
            }
            Wired::Connect {
                run,
                server,
                bind,
                streams,
            } => {
                for i in 0..streams {
                    run(self, i, server, bind);
                }
            }
        }
        Ok(())
    }

    /// The test as this side runs it.
    pub(crate) fn plan(&self) -> &SidePlan {
        self.plan
    }

    pub(crate) fn params(&self) -> &TestParams {
        &self.plan.params
    }

    /// When the test's time is up.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Stream `idx`'s counter.
    pub(crate) fn meter(&self, idx: u32) -> Arc<Meter> {
        Arc::clone(&self.meters[idx as usize])
    }

    /// Every stream's counter (a thread that receives them all).
    pub(crate) fn meters(&self) -> Vec<Arc<Meter>> {
        self.meters.clone()
    }

    /// The test's abort flag, which stream threads check.
    pub(crate) fn stop(&self) -> Stop {
        self.stop.clone()
    }

    /// Does this side send on connection `idx`?
    pub(crate) fn sends(&self, idx: u32) -> bool {
        self.plan.params.sends_on(idx, self.plan.is_client)
    }

    /// A thread that ends on its own, with the CPU it used.
    pub(crate) fn spawn_job(&mut self, idx: u32, f: StreamFn) {
        let cpu = self.cpu_of(idx);
        let finished = self.finisher();
        let handle = thread::Builder::new()
            .name(format!("stream-{idx}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = sys::pin_to_cpu(c);
                }
                let o = with_thread_cpu(f);
                finished();
                o
            })
            .expect("spawning a stream thread");
        self.jobs.push(Job { idx, handle });
    }

    /// A client timing transactions on stream `idx` into its own samples.
    pub(crate) fn spawn_round_trips(
        &mut self,
        idx: u32,
        run: impl FnOnce(&mut Rtt) -> Option<String> + Send + 'static,
    ) {
        let cpu = self.cpu_of(idx);
        let finished = self.finisher();
        self.round_trips.push(
            thread::Builder::new()
                .name(format!("transactions-{idx}"))
                .spawn(move || {
                    if let Some(c) = cpu {
                        let _ = sys::pin_to_cpu(c);
                    }
                    let r = timed(|| {
                        let mut rtt = Rtt::new();
                        let e = run(&mut rtt);
                        (rtt, e)
                    });
                    finished();
                    r
                })
                .expect("spawning a transaction client"),
        );
    }

    /// A UDP receiver: it runs until the stop flag it is given is set, at the deadline plus
    /// the drain; it returns its error and the state of every stream it received.
    pub(crate) fn spawn_receiver(
        &mut self,
        idx: u32,
        run: impl FnOnce(&Stop) -> ReceiverRun + Send + 'static,
    ) {
        let until = self.timed_stop.clone();
        self.receivers.push(
            thread::Builder::new()
                .name(format!("udp-recv-{idx}"))
                .spawn(move || timed(|| run(&until)))
                .expect("spawning a UDP receiver"),
        );
    }

    /// A server thread answering the client's transactions until the stop flag it is given is
    /// set: when the client is done, at the latest at the deadline plus the grace.
    pub(crate) fn spawn_answerer(
        &mut self,
        idx: u32,
        run: impl FnOnce(&Stop) -> Option<String> + Send + 'static,
    ) {
        let until = self.timed_stop.clone();
        self.answerers.push(
            thread::Builder::new()
                .name(format!("answer-{idx}"))
                .spawn(move || timed(|| run(&until)))
                .expect("spawning a server thread"),
        );
    }

    /// After the peer ended the test (iperf3's TEST_END, sent once its senders stopped): a side
    /// that only receives keeps receiving what is still on its way, until its TCP queues are
    /// empty and nothing has arrived for [`PEER_END_QUIET`], at most [`PEER_END_DRAIN`]. A
    /// test that ends on data (`-n`) would otherwise lose its last socket buffers' worth at
    /// this end. A side that sends stops at once: what it sent later the peer would not count.
    fn take_in_flight(&self) {
        let n = self.meters.len() as u32;
        if (0..n).any(|i| self.sends(i)) {
            return;
        }
        let total = || self.meters.iter().map(|m| m.bytes()).sum::<u64>();
        let queued = || {
            self.tcp_handles
                .iter()
                .any(|h| sys::unread_bytes(h).is_ok_and(|q| q > 0))
        };
        // A receiver woken only once a batch has queued (SO_RCVLOWAT) would not wake for the
        // last bytes: wake on any data. Setting the mark wakes a reader already waiting
        // (tcp_set_rcvlowat), and again below if a retune raised it meanwhile.
        let wake_on_any = || {
            for h in &self.tcp_handles {
                let _ = sys::set_rcvlowat(h, 1);
            }
        };
        wake_on_any();
        let until = Instant::now() + PEER_END_DRAIN;
        let (mut seen, mut since) = (total(), Instant::now());
        while Instant::now() < until {
            thread::sleep(Duration::from_millis(5));
            let now = total();
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() >= PEER_END_QUIET {
                if !queued() {
                    break;
                }
                wake_on_any();
            }
        }
    }

    /// Keep handles of stream `idx`'s TCP connection: to shut it down, and (a sender's) for
    /// TCP_INFO.
    pub(crate) fn keep_tcp(&mut self, idx: u32, s: &TcpStream, sender: bool) {
        if let Ok(c) = s.try_clone() {
            self.tcp_handles.push(c);
        }
        if let Some(c) = sender.then(|| s.try_clone().ok()).flatten() {
            self.send_handles.push((idx, c));
        }
    }

    /// The CPU to pin stream `idx`'s thread to (`-A`), round robin.
    fn cpu_of(&self, idx: u32) -> Option<usize> {
        let affinity = &self.plan.affinity;
        (!affinity.is_empty()).then(|| affinity[idx as usize % affinity.len()])
    }

    /// Counts a thread that ends on its own; what it returns marks it ended, and sets `done`
    /// when it is the last.
    fn finisher(&self) -> impl FnOnce() + Send + 'static {
        let remaining = Arc::clone(&self.remaining);
        let done = self.done.clone();
        remaining.fetch_add(1, Ordering::SeqCst);
        move || {
            if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                done.set();
            }
        }
    }

    /// No thread ends on its own: receivers and answering servers only, which end by time.
    fn time_only(&self) -> bool {
        self.jobs.is_empty() && self.round_trips.is_empty()
    }

    /// Snapshot the counters when the warm-up ends (None: no warm-up): each stream's bytes, and
    /// a TCP sender's retransmissions.
    fn omit_snapshot(&self) -> Option<thread::JoinHandle<Vec<OmitMark>>> {
        let omit = Duration::from_millis(self.plan.params.omit_ms);
        (!omit.is_zero()).then(|| {
            let meters = self.meters.clone();
            let senders: Vec<(u32, TcpStream)> = self
                .send_handles
                .iter()
                .filter_map(|(i, s)| s.try_clone().ok().map(|s| (*i, s)))
                .collect();
            let stop = self.stop.clone();
            let at = self.plan.start + omit;
            thread::spawn(move || {
                while Instant::now() < at && !stop.is_set() {
                    thread::sleep(
                        (at.saturating_duration_since(Instant::now()))
                            .min(Duration::from_millis(20)),
                    );
                }
                let mut marks: Vec<OmitMark> = meters
                    .iter()
                    .map(|m| OmitMark {
                        bytes: m.bytes(),
                        retransmits: None,
                    })
                    .collect();
                for (i, s) in &senders {
                    if let Some(m) = marks.get_mut(*i as usize) {
                        m.retransmits = sys::tcp_info(s).map(|t| t.retransmits);
                    }
                }
                marks
            })
        })
    }

    /// When sampling ends at the latest: UDP receivers stop after the drain; everything else
    /// after the grace period.
    fn until(&self) -> Instant {
        if self.receivers.is_empty() {
            self.deadline + GRACE
        } else {
            self.deadline + UDP_DRAIN
        }
    }

    /// Sample the meters every interval until the streams are done: the intervals, and the
    /// spans of the measured part of the test (after the warm-up, before the deadline) with no
    /// progress on any stream (None: a server that answers requests samples nothing).
    fn sample(&self, sink: &mut dyn Sink, until: Instant) -> (Vec<IntervalSample>, Option<Stalls>) {
        let p = &self.plan.params;
        let time_only = self.time_only();
        // Only a TCP sender retransmits.
        let mut rtx = || -> Option<u64> {
            (!self.send_handles.is_empty()).then(|| {
                self.send_handles
                    .iter()
                    .filter_map(|(_, s)| sys::tcp_info(s))
                    .map(|t| t.retransmits)
                    .sum()
            })
        };
        // Sampling ends when the streams are done (or, for time-bound threads, at `until`,
        // and for answering servers when the client is done), and at once when the test is
        // aborted.
        let peer_ends = self.plan.ending == Ending::Peer;
        let stop_sampling = || {
            self.stop.is_set()
                || (!time_only && self.done.is_set())
                || ((peer_ends || !self.answerers.is_empty()) && self.peer_done.is_set())
        };
        if self.quiet {
            // A server answering requests has nothing to report per interval; wait for the end.
            while !stop_sampling()
                && Instant::now() < until
                && (!self.done.is_set() || self.jobs.is_empty())
            {
                thread::sleep(Duration::from_millis(20));
            }
            return (Vec::new(), None);
        }
        let every = Duration::from_millis(if p.interval_ms == 0 {
            1000
        } else {
            p.interval_ms
        });
        let mut quiet = |_: &IntervalSample| {};
        let s: &mut dyn Sink = if p.interval_ms == 0 { &mut quiet } else { sink };
        let sched = SampleSchedule {
            start: self.plan.start,
            every,
            omit: Duration::from_millis(p.omit_ms),
            until,
        };
        let mut watch = StallWatch::new(
            p.omit_ms as f64 / 1000.0,
            self.deadline.duration_since(self.plan.start).as_secs_f64(),
        );
        let intervals =
            sample_intervals(&self.meters, sched, &stop_sampling, &mut rtx, s, &mut watch);
        (intervals, Some(watch.finish()))
    }

    /// End every thread (stop flags and socket shutdowns unblock them) and collect what they saw.
    fn join(self, timed_out: bool) -> Joined {
        let n = self.meters.len();
        self.timed_stop.set();
        if timed_out || self.stop.is_set() {
            self.stop.set();
            for h in &self.tcp_handles {
                let _ = h.shutdown(Shutdown::Both);
            }
        }
        let outcomes: Vec<(u32, StreamOutcome)> = self
            .jobs
            .into_iter()
            .map(|j| {
                (
                    j.idx,
                    j.handle.join().unwrap_or_else(|_| StreamOutcome {
                        error: Some("stream thread panicked".into()),
                        ..StreamOutcome::default()
                    }),
                )
            })
            .collect();
        let mut j = Joined {
            outcomes,
            errors: Vec::new(),
            shared_user: 0.0,
            shared_sys: 0.0,
            udp_state: None,
            rtt: None,
        };
        for t in self.receivers {
            if let Ok(((e, states), u, s)) = t.join() {
                j.shared_user += u;
                j.shared_sys += s;
                j.errors.extend(e);
                // A stream's datagrams all arrive on one socket: keep the state that saw them.
                let merged = j
                    .udp_state
                    .get_or_insert_with(|| vec![RecvState::default(); n]);
                for (m, st) in merged.iter_mut().zip(states) {
                    if st.packets > m.packets {
                        *m = st;
                    }
                }
            }
        }
        for t in self.answerers {
            if let Ok((e, u, s)) = t.join() {
                j.shared_user += u;
                j.shared_sys += s;
                j.errors.extend(e);
            }
        }
        for h in self.round_trips {
            if let Ok(((r, e), u, s)) = h.join() {
                j.shared_user += u;
                j.shared_sys += s;
                j.errors.extend(e);
                *j.rtt.get_or_insert_with(Rtt::new) += &r;
            }
        }
        j
    }
}

/// What the threads of one side left when they ended.
struct Joined {
    outcomes: Vec<(u32, StreamOutcome)>,
    errors: Vec<String>,
    /// CPU of threads that serve every stream at once (UDP receive, echo, transaction clients).
    shared_user: f64,
    shared_sys: f64,
    /// The UDP receivers' state of every stream, when this side received UDP.
    udp_state: Option<Vec<RecvState>>,
    rtt: Option<Rtt>,
}

impl Joined {
    /// UDP receivers: outcomes from the shared state. Then every outcome in stream order.
    fn add_udp_receivers(&mut self, plan: &SidePlan) {
        if let Some(states) = &self.udp_state {
            for (i, s) in states.iter().enumerate() {
                let i = i as u32;
                if !plan.params.sends_on(i, plan.is_client) {
                    self.outcomes.push((
                        i,
                        StreamOutcome {
                            bytes: s.bytes,
                            udp: Some(s.stats(None)),
                            ended: s.last,
                            ..StreamOutcome::default()
                        },
                    ));
                }
            }
        }
        self.outcomes.sort_by_key(|(i, _)| *i);
    }

    /// Each stream's result, measured from the end of the warm-up (`snap`: its bytes then);
    /// the stream errors join `errors`. Also the CPU seconds of all streams, (user, system).
    fn stream_results(&mut self, plan: &SidePlan, snap: &[u64]) -> (Vec<StreamResult>, f64, f64) {
        let p = &plan.params;
        let deadline = plan.start + Duration::from_millis(p.duration_ms);
        let measure_from = plan.start + Duration::from_millis(p.omit_ms);
        let shared = self.shared_user + self.shared_sys;
        // The shared threads' CPU is the UDP receivers' when this side received UDP.
        let shared_receivers = self.udp_state.is_some();
        let (mut user, mut system) = (self.shared_user, self.shared_sys);
        let receivers = self
            .outcomes
            .iter()
            .filter(|(i, _)| !p.sends_on(*i, plan.is_client))
            .count()
            .max(1);
        let mut streams = Vec::new();
        for (i, o) in &self.outcomes {
            user += o.user_s;
            system += o.system_s;
            if let Some(e) = &o.error {
                self.errors.push(format!("stream {i}: {e}"));
            }
            let sender = p.sends_on(*i, plan.is_client);
            let measured = o
                .bytes
                .saturating_sub(snap.get(*i as usize).copied().unwrap_or(0));
            let ended = o.ended.unwrap_or_else(Instant::now);
            // A sender's time ends at the deadline; a receiver's when the last byte came.
            let ended = if sender { ended.min(deadline) } else { ended };
            streams.push(StreamResult {
                id: *i,
                bytes_sent: if sender { measured } else { 0 },
                bytes_received: if sender { 0 } else { measured },
                seconds: ended.saturating_duration_since(measure_from).as_secs_f64(),
                tcp: o.tcp,
                udp: o.udp,
                total_bytes: o.bytes,
                file: o.file,
                // Threads shared by all receiving streams are split evenly among them.
                cpu_s: o.user_s
                    + o.system_s
                    + if sender || !shared_receivers {
                        0.0
                    } else {
                        shared / receivers as f64
                    },
            });
        }
        if self.rtt.is_some() {
            let duration = Duration::from_millis(p.duration_ms);
            if let Some(s) = streams.first_mut() {
                s.seconds = duration.as_secs_f64();
            } else {
                streams.push(StreamResult {
                    id: 0,
                    seconds: duration
                        .saturating_sub(Duration::from_millis(p.omit_ms))
                        .as_secs_f64(),
                    ..StreamResult::default()
                });
            }
        }
        (streams, user, system)
    }
}

/// Run this side's streams to completion (bounded by duration + [`GRACE`]). `abort` ends them
/// at once; `peer_done` tells a server that the client is done, which ends its answering
/// threads.
pub fn run(
    plan: &SidePlan,
    wired: Wired,
    sink: &mut dyn Sink,
    abort: &Stop,
    peer_done: &Stop,
) -> SideRun {
    let n = wired.streams();
    let mut st = Streams::new(plan, n, abort, peer_done);
    if let Err(e) = st.start(wired) {
        // What started is ended and joined: no thread outlives its test.
        st.stop.set();
        drop(st.join(true));
        return SideRun::failed(e);
    }
    let time_only = st.time_only();
    let omit_snap = st.omit_snapshot();
    let until = st.until();
    let (intervals, stalls) = st.sample(sink, until);
    // The peer ended the test: every stream stops now (and its connection is shut down),
    // once a side that only receives has taken in what was already on its way.
    let peer_ended = plan.ending == Ending::Peer && peer_done.is_set();
    if peer_ended {
        st.take_in_flight();
        st.stop.set();
    }
    // Past this point every thread must end.
    let timed_out = !peer_ended && !st.done.is_set() && !time_only && Instant::now() >= until;
    let spin = st.spin;
    let mut joined = st.join(timed_out);
    let omit_marks: Option<Vec<OmitMark>> = omit_snap.and_then(|h| h.join().ok());
    let snap: Vec<u64> = omit_marks
        .as_ref()
        .map_or_else(|| vec![0; n], |m| m.iter().map(|m| m.bytes).collect());
    joined.add_udp_receivers(plan);
    let (streams, user, system) = joined.stream_results(plan, &snap);
    let duration = Duration::from_millis(plan.params.duration_ms);
    let wall = Instant::now()
        .duration_since(plan.start)
        .as_secs_f64()
        .max(1e-9);
    let mut errors = joined.errors;
    if timed_out {
        errors.push(format!(
            "streams still running {} s after the test should have ended: stopped",
            GRACE.as_secs()
        ));
    }
    errors.dedup();
    let rtt = joined.rtt;
    let udp_received = joined.udp_state;
    SideRun {
        results: SideResults {
            streams,
            cpu: CpuUsage {
                user_s: user,
                system_s: system,
                wall_s: wall,
                percent: (user + system) / wall.min(duration.as_secs_f64().max(1e-9)) * 100.0,
            },
            intervals,
            latency: rtt.as_ref().map(Rtt::stats),
            error: (!errors.is_empty()).then(|| errors.join("; ")),
            fsync_s: None,
            rdma: None,
            spin_us: spin.map(|s| u32::try_from(s.as_micros()).unwrap_or(u32::MAX)),
            // The caller measures the host and its interface around the whole run.
            host_load: None,
            stalls: stalls.map(Box::new),
            link: None,
            qdiscs: None,
            udp_receive: None,
        },
        rtt,
        omit_marks,
        udp_received,
        far_end_here: false,
    }
}
