//! One side of a test: start a thread per stream, sample intervals, collect results.

use std::fs::File;
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::lat::{self, Rtt};
use linerate_engine::meter::{sample_intervals, Meter, SampleSchedule, Sink, Stop};
use linerate_engine::udp::{self, RecvState};
use linerate_engine::{file, sys, tcp, timed, with_thread_cpu, StreamOutcome, Timed};
use linerate_proto::{
    CpuUsage, Direction, IntervalSample, SideResults, StreamResult, TestKind, TestParams,
    FILE_BUFFERS,
};

/// The bounds of a side's run: the grace after the test, the UDP drain, the idle limit
/// (protocol values, kept with the other defaults).
pub(crate) use linerate_proto::defaults::{GRACE, IDLE, UDP_DRAIN};

/// A data connection of this side.
#[derive(Debug)]
pub enum Conn {
    Tcp(TcpStream),
    /// A UDP socket (client: connected per stream; server: the shared socket) and,
    /// for a server sending, the client's address for this stream.
    Udp {
        sock: Arc<UdpSocket>,
        peer: Option<SocketAddr>,
    },
}

/// A UDP receiver's error, if any, and the receive state of every stream.
type UdpRecvRun = (Option<String>, Vec<RecvState>);

/// A latency client's samples and its error, if any.
type RttRun = (Rtt, Option<String>);

/// Run a latency client on its own thread: its samples, error and CPU; `done` is set at the end.
fn latency_client(
    done: Stop,
    run: impl FnOnce(&mut Rtt) -> Option<String> + Send + 'static,
) -> thread::JoinHandle<Timed<RttRun>> {
    thread::spawn(move || {
        let r = timed(|| {
            let mut rtt = Rtt::new();
            let e = run(&mut rtt);
            (rtt, e)
        });
        done.set();
        r
    })
}

/// A TCP latency test's busy-poll per wait (on the server, already capped by its limit).
fn spin_of(p: &TestParams) -> Duration {
    p.spin_us
        .map_or(lat::DEFAULT_SPIN, |u| Duration::from_micros(u64::from(u)))
}

/// Does this side send on connection `idx`?
pub fn sends(p: &TestParams, idx: u32, is_client: bool) -> bool {
    match p.direction {
        Direction::Send => is_client,
        Direction::Receive => !is_client,
        Direction::Bidir => (idx < p.streams) == is_client,
    }
}

/// A soak's counter sampler on one side (built by a [`crate::SoakSamplerFn`]).
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
            if sends(&self.params, idx as u32, self.is_client) {
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
    /// UDP tag of the test (from the cookie).
    pub tag: u32,
    pub start: Instant,
    /// CPU to pin stream threads to (`-A`), round robin.
    pub affinity: Vec<usize>,
    /// File transfers: the source (client) or the destination (server).
    pub file: Option<Arc<File>>,
}

#[derive(Debug)]
pub struct SideRun {
    pub results: SideResults,
    pub rtt: Option<Rtt>,
}

impl SideRun {
    fn failed(error: String) -> Self {
        Self {
            results: SideResults {
                error: Some(error),
                ..SideResults::default()
            },
            rtt: None,
        }
    }
}

struct Job {
    idx: u32,
    handle: thread::JoinHandle<StreamOutcome>,
}

/// A stream thread's work.
type StreamFn = Box<dyn FnOnce() -> StreamOutcome + Send>;

/// The threads and handles of one side's streams while they run.
struct Streams<'a> {
    plan: &'a SidePlan,
    deadline: Instant,
    meters: Vec<Arc<Meter>>,
    /// Set to abort: by the caller, or when the streams outlive the test.
    stop: Stop,
    /// Set when the last stream thread (or the latency client) ends.
    done: Stop,
    /// Ends the threads that end by time (UDP receivers, echo servers).
    udp_stop: Stop,
    remaining: Arc<AtomicUsize>,
    jobs: Vec<Job>,
    /// Every TCP connection, to shut down when the test must end.
    tcp_handles: Vec<TcpStream>,
    /// The connections this side sends on: only a sender retransmits, so only they count.
    send_handles: Vec<TcpStream>,
    rtt_slot: Option<thread::JoinHandle<Timed<RttRun>>>,
    /// Receivers and echo servers that end by time: each returns its error and, for UDP
    /// receivers, the state of the streams it received.
    udp_recv_threads: Vec<thread::JoinHandle<Timed<UdpRecvRun>>>,
    shared_udp_listening: bool,
}

impl<'a> Streams<'a> {
    fn new(plan: &'a SidePlan, n: usize, abort: &Stop) -> Self {
        Self {
            plan,
            deadline: plan.start + Duration::from_millis(plan.params.duration_ms),
            meters: (0..n).map(|_| Meter::new()).collect(),
            stop: abort.clone(),
            done: Stop::new(),
            udp_stop: Stop::new(),
            remaining: Arc::new(AtomicUsize::new(0)),
            jobs: Vec::new(),
            tcp_handles: Vec::new(),
            send_handles: Vec::new(),
            rtt_slot: None,
            udp_recv_threads: Vec::new(),
            shared_udp_listening: false,
        }
    }

    /// Start connection `idx`'s thread for this test kind.
    fn start(&mut self, idx: u32, conn: Conn) -> Result<(), String> {
        match (self.plan.params.kind, conn) {
            (TestKind::TcpBw, Conn::Tcp(s)) => self.tcp_bw(idx, s),
            (TestKind::FileTransfer, Conn::Tcp(s)) => self.file_transfer(idx, s)?,
            (TestKind::UdpBw, Conn::Udp { sock, peer }) => self.udp_bw(idx, sock, peer),
            (TestKind::TcpLat, Conn::Tcp(s)) => self.tcp_lat(idx, s),
            (TestKind::UdpLat, Conn::Udp { sock, .. }) => self.udp_lat(idx, sock),
            // RDMA tests run in `crate::rdma`, on libfabric's connections, not here.
            (kind, c) => {
                return Err(format!(
                    "internal: connection {c:?} does not fit a {} test",
                    kind.as_str()
                ))
            }
        }
        Ok(())
    }

    fn spawn_job(&mut self, idx: u32, f: StreamFn) {
        let remaining = Arc::clone(&self.remaining);
        let done = self.done.clone();
        let affinity = &self.plan.affinity;
        let cpu = (!affinity.is_empty()).then(|| affinity[idx as usize % affinity.len()]);
        remaining.fetch_add(1, Ordering::SeqCst);
        let handle = thread::Builder::new()
            .name(format!("stream-{idx}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = sys::pin_to_cpu(c);
                }
                let o = with_thread_cpu(f);
                if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                    done.set();
                }
                o
            })
            .expect("spawning a stream thread");
        self.jobs.push(Job { idx, handle });
    }

    /// Keep handles of a TCP connection: to shut it down, and (a sender's) for TCP_INFO.
    fn keep_tcp(&mut self, s: &TcpStream, sender: bool) {
        if let Ok(c) = s.try_clone() {
            self.tcp_handles.push(c);
        }
        if let Some(c) = sender.then(|| s.try_clone().ok()).flatten() {
            self.send_handles.push(c);
        }
    }

    fn sends(&self, idx: u32) -> bool {
        sends(&self.plan.params, idx, self.plan.is_client)
    }

    fn tcp_bw(&mut self, idx: u32, s: TcpStream) {
        let p = &self.plan.params;
        let sender = self.sends(idx);
        self.keep_tcp(&s, sender);
        let (meter, stop) = (Arc::clone(&self.meters[idx as usize]), self.stop.clone());
        let length = p.length as usize;
        let discard = p.discard;
        let wake = if p.no_rcvlowat {
            tcp::Wake::EachArrival
        } else {
            tcp::Wake::Batched {
                cap: p.window.map(|w| w as usize / 2),
            }
        };
        let send_plan = tcp::SendPlan {
            length,
            deadline: self.deadline,
            bitrate_bps: p.bitrate_bps,
            zerocopy: p.zerocopy,
        };
        let f: StreamFn = if sender {
            Box::new(move || tcp::send(&s, &send_plan, &meter, &stop))
        } else {
            let how = if discard {
                tcp::Receive::Discard
            } else {
                tcp::Receive::Copy
            };
            Box::new(move || tcp::recv(&s, length, how, wake, IDLE, &meter, &stop))
        };
        self.spawn_job(idx, f);
    }

    fn file_transfer(&mut self, idx: u32, s: TcpStream) -> Result<(), String> {
        let p = &self.plan.params;
        let (Some(f), Some(spec)) = (self.plan.file.clone(), p.file.as_ref()) else {
            return Err("internal: a file transfer without its file".into());
        };
        let sender = self.sends(idx);
        self.keep_tcp(&s, sender);
        let (meter, stop) = (Arc::clone(&self.meters[idx as usize]), self.stop.clone());
        let (offset, len) = spec.range(idx, p.streams);
        let range = file::Range { offset, len };
        let bufs = file::Buffers {
            block: p.length as usize,
            count: FILE_BUFFERS as usize,
        };
        let deadline = self.deadline;
        let f: StreamFn = if sender {
            Box::new(move || file::send_range(&s, &f, range, bufs, deadline, &meter, &stop))
        } else {
            Box::new(move || file::recv_range(&s, &f, range, bufs, IDLE, &meter, &stop))
        };
        self.spawn_job(idx, f);
        Ok(())
    }

    fn udp_bw(&mut self, idx: u32, sock: Arc<UdpSocket>, peer: Option<SocketAddr>) {
        let p = &self.plan.params;
        if self.sends(idx) {
            let (meter, stop) = (Arc::clone(&self.meters[idx as usize]), self.stop.clone());
            let (tag, length, rate) = (self.plan.tag, p.length as usize, p.bitrate_bps);
            let deadline = self.deadline;
            let f: StreamFn = Box::new(move || {
                udp::send(&sock, peer, tag, idx, length, rate, deadline, &meter, &stop)
            });
            self.spawn_job(idx, f);
        } else if self.plan.is_client || !self.shared_udp_listening {
            // Server: one thread on the shared socket receives every stream.
            self.shared_udp_listening = true;
            let (tag, meters, us) = (self.plan.tag, self.meters.clone(), self.udp_stop.clone());
            self.udp_recv_threads.push(
                thread::Builder::new()
                    .name(format!("udp-recv-{idx}"))
                    .spawn(move || timed(|| udp::recv(&sock, tag, &meters, &us)))
                    .expect("spawning the UDP receiver"),
            );
        }
    }

    fn tcp_lat(&mut self, idx: u32, s: TcpStream) {
        let p = &self.plan.params;
        let spin = spin_of(p);
        self.keep_tcp(&s, false);
        let (meter, stop) = (Arc::clone(&self.meters[idx as usize]), self.stop.clone());
        let length = p.length as usize;
        let deadline = self.deadline;
        if self.plan.is_client {
            self.rtt_slot = Some(latency_client(self.done.clone(), move |rtt| {
                lat::tcp_client(&s, length, spin, deadline, rtt, &meter, &stop)
            }));
        } else {
            let idle = IDLE + Duration::from_millis(p.duration_ms);
            let f: StreamFn = Box::new(move || StreamOutcome {
                error: lat::tcp_echo(&s, length, spin, idle, &stop),
                ended: Some(Instant::now()),
                ..StreamOutcome::default()
            });
            self.spawn_job(idx, f);
        }
    }

    fn udp_lat(&mut self, idx: u32, sock: Arc<UdpSocket>) {
        let length = self.plan.params.length as usize;
        if self.plan.is_client {
            let (meter, stop) = (Arc::clone(&self.meters[idx as usize]), self.stop.clone());
            let deadline = self.deadline;
            self.rtt_slot = Some(latency_client(self.done.clone(), move |rtt| {
                lat::udp_client(&sock, length, deadline, rtt, &meter, &stop)
            }));
        } else {
            let us = self.udp_stop.clone();
            self.udp_recv_threads.push(thread::spawn(move || {
                timed(|| (lat::udp_echo(&sock, &us), Vec::new()))
            }));
        }
    }

    /// Only receivers on a shared UDP socket, or echo servers: they end by time.
    fn time_only(&self) -> bool {
        self.jobs.is_empty() && self.rtt_slot.is_none()
    }

    /// Snapshot the counters when the warm-up ends (None: no warm-up).
    fn omit_snapshot(&self) -> Option<thread::JoinHandle<Vec<u64>>> {
        let omit = Duration::from_millis(self.plan.params.omit_ms);
        (!omit.is_zero()).then(|| {
            let meters = self.meters.clone();
            let stop = self.stop.clone();
            let at = self.plan.start + omit;
            thread::spawn(move || {
                while Instant::now() < at && !stop.is_set() {
                    thread::sleep(
                        (at.saturating_duration_since(Instant::now()))
                            .min(Duration::from_millis(20)),
                    );
                }
                meters.iter().map(|m| m.bytes()).collect::<Vec<u64>>()
            })
        })
    }

    /// When sampling ends at the latest: UDP receivers that end by time stop after the
    /// drain; everything else (latency servers with the stream) after the grace period.
    fn until(&self) -> Instant {
        if self.plan.params.kind.is_udp() && (self.time_only() || !self.udp_recv_threads.is_empty())
        {
            self.deadline + UDP_DRAIN
        } else {
            self.deadline + GRACE
        }
    }

    /// Sample the meters every interval until the streams are done: the intervals.
    fn sample(&self, sink: &mut dyn Sink, until: Instant) -> Vec<IntervalSample> {
        let p = &self.plan.params;
        let time_only = self.time_only();
        let mut rtx = || -> Option<u64> {
            if !matches!(p.kind, TestKind::TcpBw | TestKind::FileTransfer)
                || self.send_handles.is_empty()
            {
                return None;
            }
            Some(
                self.send_handles
                    .iter()
                    .filter_map(sys::tcp_info)
                    .map(|t| t.retransmits)
                    .sum(),
            )
        };
        // Sampling ends when the streams are done (or, for time-bound receivers, at `until`),
        // and at once when the test is aborted.
        let stop_sampling = || self.stop.is_set() || (!time_only && self.done.is_set());
        if p.kind.is_latency() && !self.plan.is_client {
            // An echo server has nothing to report per interval; wait for the end.
            while !stop_sampling()
                && Instant::now() < until
                && (!self.done.is_set() || self.jobs.is_empty())
            {
                thread::sleep(Duration::from_millis(20));
            }
            return Vec::new();
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
        sample_intervals(&self.meters, sched, &stop_sampling, &mut rtx, s)
    }

    /// End every thread (stop flags and socket shutdowns unblock them) and collect what they saw.
    fn join(self, timed_out: bool) -> Joined {
        let n = self.meters.len();
        self.udp_stop.set();
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
            udp_state: vec![RecvState::default(); n],
            rtt: None,
        };
        for t in self.udp_recv_threads {
            if let Ok(((e, states), u, s)) = t.join() {
                j.shared_user += u;
                j.shared_sys += s;
                if let Some(e) = e {
                    j.errors.push(e);
                }
                // A stream's datagrams all arrive on one socket: keep the state that saw them.
                for (merged, st) in j.udp_state.iter_mut().zip(states) {
                    if st.packets > merged.packets {
                        *merged = st;
                    }
                }
            }
        }
        if let Some(((r, e), u, s)) = self.rtt_slot.and_then(|h| h.join().ok()) {
            j.shared_user += u;
            j.shared_sys += s;
            if let Some(e) = e {
                j.errors.push(e);
            }
            j.rtt = Some(r);
        }
        j
    }
}

/// What the threads of one side left when they ended.
struct Joined {
    outcomes: Vec<(u32, StreamOutcome)>,
    errors: Vec<String>,
    /// CPU of threads that serve every stream at once (UDP receive, echo, latency client).
    shared_user: f64,
    shared_sys: f64,
    udp_state: Vec<RecvState>,
    rtt: Option<Rtt>,
}

impl Joined {
    /// UDP receivers: outcomes from the shared state. Then every outcome in stream order.
    fn add_udp_receivers(&mut self, plan: &SidePlan) {
        if plan.params.kind == TestKind::UdpBw {
            for (i, s) in self.udp_state.iter().enumerate() {
                let i = i as u32;
                if !sends(&plan.params, i, plan.is_client) {
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
        let (mut user, mut system) = (self.shared_user, self.shared_sys);
        let receivers = self
            .outcomes
            .iter()
            .filter(|(i, _)| !sends(p, *i, plan.is_client))
            .count()
            .max(1);
        let mut streams = Vec::new();
        for (i, o) in &self.outcomes {
            user += o.user_s;
            system += o.system_s;
            if let Some(e) = &o.error {
                self.errors.push(format!("stream {i}: {e}"));
            }
            let sender = sends(p, *i, plan.is_client);
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
                    + if sender || p.kind != TestKind::UdpBw {
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

/// Run this side's streams to completion (bounded by duration + [`GRACE`]).
pub fn run(plan: &SidePlan, conns: Vec<Conn>, sink: &mut dyn Sink, abort: &Stop) -> SideRun {
    let n = conns.len();
    let mut st = Streams::new(plan, n, abort);
    for (i, conn) in conns.into_iter().enumerate() {
        if let Err(e) = st.start(i as u32, conn) {
            return SideRun::failed(e);
        }
    }
    let time_only = st.time_only();
    if time_only {
        st.remaining.store(0, Ordering::SeqCst);
    }
    let omit_snap = st.omit_snapshot();
    let until = st.until();
    let intervals = st.sample(sink, until);
    // Past this point every thread must end.
    let timed_out = !st.done.is_set() && !time_only && Instant::now() >= until;
    let mut joined = st.join(timed_out);
    let snap: Vec<u64> = omit_snap
        .and_then(|h| h.join().ok())
        .unwrap_or_else(|| vec![0; n]);
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
            spin_us: (plan.params.kind == TestKind::TcpLat)
                .then(|| u32::try_from(spin_of(&plan.params).as_micros()).unwrap_or(u32::MAX)),
        },
        rtt,
    }
}
