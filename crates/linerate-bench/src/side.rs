//! One side of a test: start a thread per stream, sample intervals, collect results.

use std::fs::File;
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::lat::{self, Rtt};
use linerate_engine::meter::{sample_intervals, Meter, Schedule, Sink, Stop};
use linerate_engine::udp::{self, RecvState};
use linerate_engine::{file, sys, tcp, timed, with_thread_cpu, StreamOutcome, Timed};
use linerate_proto::{
    CpuUsage, Direction, SideResults, StreamResult, TestKind, TestParams, FILE_BUFFERS,
};

/// After the test's duration, a side waits at most this long for its streams to end.
pub const GRACE: Duration = Duration::from_secs(10);
/// UDP receivers keep listening this long after the senders' deadline.
pub const UDP_DRAIN: Duration = Duration::from_millis(500);
/// A TCP receiver with no data for this long gives up.
pub const IDLE: Duration = Duration::from_secs(10);

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

/// Does this side send on connection `idx`?
pub fn sends(p: &TestParams, idx: u32, is_client: bool) -> bool {
    match p.direction {
        Direction::Send => is_client,
        Direction::Receive => !is_client,
        Direction::Bidir => (idx < p.streams) == is_client,
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

/// Run this side's streams to completion (bounded by duration + [`GRACE`]).
#[allow(clippy::needless_pass_by_value)]
pub fn run(plan: &SidePlan, conns: Vec<Conn>, sink: &mut dyn Sink, abort: &Stop) -> SideRun {
    let p = &plan.params;
    let n = conns.len();
    let meters: Vec<Arc<Meter>> = (0..n).map(|_| Meter::new()).collect();
    let duration = Duration::from_millis(p.duration_ms);
    let deadline = plan.start + duration;
    let hard_stop = deadline + GRACE;
    let stop = abort.clone();
    let done = Stop::new();
    let remaining = Arc::new(AtomicUsize::new(0));
    let mut jobs: Vec<Job> = Vec::new();
    let mut tcp_handles: Vec<TcpStream> = Vec::new();
    // The connections this side sends on: only a sender retransmits, so only they count.
    let mut send_handles: Vec<TcpStream> = Vec::new();
    let mut rtt_slot: Option<thread::JoinHandle<Timed<RttRun>>> = None;
    // Receivers and echo servers that end by time: (error, user s, system s).
    // Each returns its error and, for UDP receivers, the state of the streams it received.
    let mut udp_recv_threads: Vec<thread::JoinHandle<Timed<UdpRecvRun>>> = Vec::new();
    let udp_stop = Stop::new();
    let mut shared_udp_listening = false;

    let spawn_job =
        |idx: u32, f: Box<dyn FnOnce() -> StreamOutcome + Send>, jobs: &mut Vec<Job>| {
            let remaining = Arc::clone(&remaining);
            let done = done.clone();
            let cpu = (!plan.affinity.is_empty())
                .then(|| plan.affinity[idx as usize % plan.affinity.len()]);
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
            jobs.push(Job { idx, handle });
        };

    for (i, conn) in conns.into_iter().enumerate() {
        let idx = i as u32;
        let meter = Arc::clone(&meters[i]);
        let stop = stop.clone();
        let sender = sends(p, idx, plan.is_client);
        match (p.kind, conn) {
            (TestKind::TcpBw, Conn::Tcp(s)) => {
                if let Ok(c) = s.try_clone() {
                    tcp_handles.push(c);
                }
                if let Some(c) = sender.then(|| s.try_clone().ok()).flatten() {
                    send_handles.push(c);
                }
                let length = p.length as usize;
                let send_plan = tcp::SendPlan {
                    length,
                    deadline,
                    bitrate_bps: p.bitrate_bps,
                    zerocopy: p.zerocopy,
                };
                let f: Box<dyn FnOnce() -> StreamOutcome + Send> = if sender {
                    Box::new(move || tcp::send(&s, &send_plan, &meter, &stop))
                } else {
                    Box::new(move || tcp::recv(&s, length, IDLE, &meter, &stop))
                };
                spawn_job(idx, f, &mut jobs);
            }
            (TestKind::FileTransfer, Conn::Tcp(s)) => {
                let (Some(f), Some(spec)) = (plan.file.clone(), p.file.as_ref()) else {
                    return SideRun::failed("internal: a file transfer without its file".into());
                };
                if let Ok(c) = s.try_clone() {
                    tcp_handles.push(c);
                }
                if let Some(c) = sender.then(|| s.try_clone().ok()).flatten() {
                    send_handles.push(c);
                }
                let (offset, len) = spec.range(idx, p.streams);
                let range = file::Range { offset, len };
                let bufs = file::Buffers {
                    block: p.length as usize,
                    count: FILE_BUFFERS as usize,
                };
                let f: Box<dyn FnOnce() -> StreamOutcome + Send> = if sender {
                    Box::new(move || file::send_range(&s, &f, range, bufs, deadline, &meter, &stop))
                } else {
                    Box::new(move || file::recv_range(&s, &f, range, bufs, IDLE, &meter, &stop))
                };
                spawn_job(idx, f, &mut jobs);
            }
            (TestKind::UdpBw, Conn::Udp { sock, peer }) => {
                if sender {
                    let (tag, length, rate) = (plan.tag, p.length as usize, p.bitrate_bps);
                    let f: Box<dyn FnOnce() -> StreamOutcome + Send> = Box::new(move || {
                        udp::send(&sock, peer, tag, idx, length, rate, deadline, &meter, &stop)
                    });
                    spawn_job(idx, f, &mut jobs);
                } else if plan.is_client || !shared_udp_listening {
                    // Server: one thread on the shared socket receives every stream.
                    shared_udp_listening = true;
                    let (tag, meters, us) = (plan.tag, meters.clone(), udp_stop.clone());
                    udp_recv_threads.push(
                        thread::Builder::new()
                            .name(format!("udp-recv-{idx}"))
                            .spawn(move || timed(|| udp::recv(&sock, tag, &meters, &us)))
                            .expect("spawning the UDP receiver"),
                    );
                }
            }
            (TestKind::TcpLat, Conn::Tcp(s)) => {
                let spin = p
                    .spin_us
                    .map_or(lat::DEFAULT_SPIN, |u| Duration::from_micros(u64::from(u)));
                if let Ok(c) = s.try_clone() {
                    tcp_handles.push(c);
                }
                let length = p.length as usize;
                if plan.is_client {
                    rtt_slot = Some(latency_client(done.clone(), move |rtt| {
                        lat::tcp_client(&s, length, spin, deadline, rtt, &meter, &stop)
                    }));
                } else {
                    let f: Box<dyn FnOnce() -> StreamOutcome + Send> =
                        Box::new(move || StreamOutcome {
                            error: lat::tcp_echo(&s, length, spin, IDLE + duration, &stop),
                            ended: Some(Instant::now()),
                            ..StreamOutcome::default()
                        });
                    spawn_job(idx, f, &mut jobs);
                }
            }
            (TestKind::UdpLat, Conn::Udp { sock, .. }) => {
                let length = p.length as usize;
                if plan.is_client {
                    rtt_slot = Some(latency_client(done.clone(), move |rtt| {
                        lat::udp_client(&sock, length, deadline, rtt, &meter, &stop)
                    }));
                } else {
                    let us = udp_stop.clone();
                    udp_recv_threads.push(thread::spawn(move || {
                        timed(|| (lat::udp_echo(&sock, &us), Vec::new()))
                    }));
                }
            }
            (kind, c) => {
                return SideRun::failed(format!(
                    "internal: connection {c:?} does not fit a {} test",
                    kind.as_str()
                ));
            }
        }
    }
    if jobs.is_empty() && rtt_slot.is_none() {
        // Only receivers on a shared UDP socket, or echo servers: they end by time.
        remaining.store(0, Ordering::SeqCst);
    }

    // Snapshot the counters when the warm-up ends.
    let omit = Duration::from_millis(p.omit_ms);
    let omit_snap = (!omit.is_zero()).then(|| {
        let meters = meters.clone();
        let stop = stop.clone();
        let at = plan.start + omit;
        thread::spawn(move || {
            while Instant::now() < at && !stop.is_set() {
                thread::sleep(
                    (at.saturating_duration_since(Instant::now())).min(Duration::from_millis(20)),
                );
            }
            meters.iter().map(|m| m.bytes()).collect::<Vec<u64>>()
        })
    });

    // Receivers that end by time (UDP) stop after the drain; latency servers with the stream.
    let time_only = jobs.is_empty() && rtt_slot.is_none();
    let until = if p.kind.is_udp() && (time_only || !udp_recv_threads.is_empty()) {
        deadline + UDP_DRAIN
    } else {
        hard_stop
    };
    let info_handles = send_handles;
    let mut rtx = || -> Option<u64> {
        if !matches!(p.kind, TestKind::TcpBw | TestKind::FileTransfer) || info_handles.is_empty() {
            return None;
        }
        Some(
            info_handles
                .iter()
                .filter_map(sys::tcp_info)
                .map(|t| t.retransmits)
                .sum(),
        )
    };
    // Sampling ends when the streams are done (or, for time-bound receivers, at `until`),
    // and at once when the test is aborted.
    let stop_sampling = || stop.is_set() || (!time_only && done.is_set());
    let every = Duration::from_millis(if p.interval_ms == 0 {
        1000
    } else {
        p.interval_ms
    });
    let intervals = if p.kind.is_latency() && !plan.is_client {
        // An echo server has nothing to report per interval; wait for the end.
        while !stop_sampling() && Instant::now() < until && (!done.is_set() || jobs.is_empty()) {
            thread::sleep(Duration::from_millis(20));
        }
        Vec::new()
    } else {
        let mut quiet = |_: &linerate_proto::IntervalSample| {};
        let s: &mut dyn Sink = if p.interval_ms == 0 { &mut quiet } else { sink };
        let sched = Schedule {
            start: plan.start,
            every,
            omit,
            until,
        };
        sample_intervals(&meters, sched, &stop_sampling, &mut rtx, s)
    };
    // Past this point every thread must end: stop flags and socket shutdowns unblock them.
    let timed_out = !done.is_set() && !time_only && Instant::now() >= until;
    udp_stop.set();
    if timed_out || stop.is_set() {
        stop.set();
        for h in &tcp_handles {
            let _ = h.shutdown(Shutdown::Both);
        }
    }
    let mut outcomes: Vec<(u32, StreamOutcome)> = jobs
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
    let mut errors: Vec<String> = Vec::new();
    // CPU of threads that serve every stream at once (UDP receive, echo, latency client).
    let (mut shared_user, mut shared_sys) = (0.0, 0.0);
    let mut udp_state = vec![RecvState::default(); n];
    for t in udp_recv_threads {
        if let Ok(((e, states), u, s)) = t.join() {
            shared_user += u;
            shared_sys += s;
            if let Some(e) = e {
                errors.push(e);
            }
            // A stream's datagrams all arrive on one socket: keep the state that saw them.
            for (merged, st) in udp_state.iter_mut().zip(states) {
                if st.packets > merged.packets {
                    *merged = st;
                }
            }
        }
    }
    let rtt = rtt_slot.and_then(|h| h.join().ok()).map(|((r, e), u, s)| {
        shared_user += u;
        shared_sys += s;
        if let Some(e) = e {
            errors.push(e);
        }
        r
    });
    let snap: Vec<u64> = omit_snap
        .and_then(|h| h.join().ok())
        .unwrap_or_else(|| vec![0; n]);
    let measure_from = plan.start + omit;

    // UDP receivers: outcomes from the shared state.
    if p.kind == TestKind::UdpBw {
        let st = &udp_state;
        for i in 0..n as u32 {
            if !sends(p, i, plan.is_client) {
                let s = &st[i as usize];
                outcomes.push((
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
    outcomes.sort_by_key(|(i, _)| *i);

    let mut user = shared_user;
    let mut system = shared_sys;
    let receivers = outcomes
        .iter()
        .filter(|(i, _)| !sends(p, *i, plan.is_client))
        .count()
        .max(1);
    let mut streams = Vec::new();
    for (i, o) in &outcomes {
        user += o.user_s;
        system += o.system_s;
        if let Some(e) = &o.error {
            errors.push(format!("stream {i}: {e}"));
        }
        let sender = sends(p, *i, plan.is_client);
        let measured = o
            .bytes
            .saturating_sub(snap.get(*i as usize).copied().unwrap_or(0));
        let ended = o.ended.unwrap_or_else(Instant::now);
        let seconds = if sender {
            ended
                .min(deadline)
                .saturating_duration_since(measure_from)
                .as_secs_f64()
        } else {
            ended.saturating_duration_since(measure_from).as_secs_f64()
        };
        streams.push(StreamResult {
            id: *i,
            bytes_sent: if sender { measured } else { 0 },
            bytes_received: if sender { 0 } else { measured },
            seconds,
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
                    (shared_user + shared_sys) / receivers as f64
                },
        });
    }
    if let Some(r) = &rtt {
        if let Some(s) = streams.first_mut() {
            s.seconds = duration.as_secs_f64();
        } else {
            streams.push(StreamResult {
                id: 0,
                seconds: duration.saturating_sub(omit).as_secs_f64(),
                ..StreamResult::default()
            });
        }
        let _ = r;
    }
    let wall = Instant::now()
        .duration_since(plan.start)
        .as_secs_f64()
        .max(1e-9);
    if timed_out {
        errors.push(format!(
            "streams still running {} s after the test should have ended: stopped",
            GRACE.as_secs()
        ));
    }
    errors.dedup();
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
        },
        rtt,
    }
}
