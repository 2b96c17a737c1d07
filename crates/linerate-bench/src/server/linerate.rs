//! linerate's control protocol, the server's side (`docs/protocol.md`): a control connection's
//! hello, authentication, request and admission, its data connections, the test, the results.
//! Everything protocol-neutral (slots, memory, the registry of tests waiting for data
//! connections, running a side) is `super`'s; what each kind runs is `crate::kind`'s.

use linerate_engine::hostcpu::{HostCpu, HostCpuMeter};
use linerate_engine::linkload::LinkSnapshot;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::meter::Stop;
use linerate_engine::udp;
use linerate_proto::{
    defaults, random_hex, read_msg, write_msg, FrameError, Msg, RefusalKind, SideResults,
    TestParams, MAGIC, MAX_CONTROL_FRAME, PROTOCOL_VERSION,
};

use super::{
    collect_tcp, new_cookie, run_side, watch, DataConn, Deadline, HandshakeSlot, Heard, Shared,
    TestSlot,
};
use crate::kind::{self, Ends, Held};
use crate::serverlog::{FileLog, Outcome, PeerProtocol, RdmaRan, ServerLog, TestLog, TestRan};
use crate::side::{self, Ending, SidePlan, UdpFlow, Wired};

fn read_by(sock: &TcpStream, at: Instant) -> Result<Msg, FrameError> {
    read_msg(&mut Deadline { sock, at }, MAX_CONTROL_FRAME)
}

/// A connection whose first byte is a frame's: its first message says what it is.
pub(super) fn handle(
    sh: &Shared,
    mut sock: TcpStream,
    peer: &str,
    slot: &mut HandshakeSlot<'_>,
    deadline: Instant,
) {
    let peer_s = peer.to_string();
    match read_by(&sock, deadline) {
        Ok(Msg::DataHello { cookie, stream }) => {
            slot.release();
            let conn = DataConn {
                index: stream,
                arrival: 0,
                sock,
            };
            if let Err(mut sock) = sh.deliver(&cookie, conn) {
                let _ = write_msg(
                    &mut sock,
                    &Msg::Error {
                        message: "unknown test cookie".into(),
                    },
                );
            }
        }
        Ok(Msg::Hello {
            magic,
            protocol,
            version,
            nonce,
        }) => {
            if magic != MAGIC {
                let _ = write_msg(
                    &mut sock,
                    &Msg::Error {
                        message: "not a linerate client".into(),
                    },
                );
                sh.log(&ServerLog::Refused {
                    client: peer_s,
                    reason: "bad magic".into(),
                    params: None,
                    iperf3: None,
                });
                return;
            }
            if protocol != PROTOCOL_VERSION {
                let message = format!(
                    "protocol version {protocol} (linerate {version}) is not supported: this server (linerate {}) speaks version {PROTOCOL_VERSION}; use matching linerate versions",
                    env!("CARGO_PKG_VERSION")
                );
                let _ = write_msg(
                    &mut sock,
                    &Msg::Error {
                        message: message.clone(),
                    },
                );
                sh.log(&ServerLog::Refused {
                    client: peer_s,
                    reason: message,
                    params: None,
                    iperf3: None,
                });
                return;
            }
            if nonce.len() > 128 {
                return;
            }
            control(sh, sock, peer, &nonce, slot, deadline);
        }
        Ok(other) => {
            let _ = write_msg(
                &mut sock,
                &Msg::Error {
                    message: "expected hello".into(),
                },
            );
            sh.log(&ServerLog::Refused {
                client: peer_s,
                reason: format!("unexpected first message {}", other.name()),
                params: None,
                iperf3: None,
            });
        }
        Err(e) => {
            sh.log(&ServerLog::Dropped {
                client: peer_s,
                reason: e.to_string(),
            });
        }
    }
}

/// A control connection past its hello: the socket, who is on the other end, and the
/// handshake's deadline.
struct Control<'a> {
    sh: &'a Shared,
    sock: TcpStream,
    peer: &'a str,
    deadline: Instant,
}

impl<'a> Control<'a> {
    /// Tell the client why its test is refused, and log it.
    fn refuse(&mut self, kind: RefusalKind, reason: &str, params: &TestParams) {
        let _ = write_msg(
            &mut self.sock,
            &Msg::Refused {
                reason: reason.into(),
                kind,
            },
        );
        self.sh.log(&ServerLog::Refused {
            client: self.peer.into(),
            reason: reason.into(),
            params: Some(params.clone()),
            iperf3: None,
        });
    }

    /// Send the server's hello and, when the server has a key, check the client's proof and
    /// prove the server's. False: the connection is done (refused or gone).
    fn authenticate(&mut self, client_nonce: &str) -> bool {
        let server_nonce = random_hex(16);
        let hello = Msg::ServerHello {
            protocol: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
            auth: self.sh.cfg.psk.is_some(),
            nonce: server_nonce.clone(),
        };
        if write_msg(&mut self.sock, &hello).is_err() {
            return false;
        }
        let Some(psk) = &self.sh.cfg.psk else {
            return true;
        };
        match read_by(&self.sock, self.deadline) {
            Ok(Msg::Auth { proof }) if psk.verify_client(&server_nonce, client_nonce, &proof) => {
                let ok = Msg::AuthOk {
                    proof: psk.server_proof(client_nonce, &server_nonce),
                };
                write_msg(&mut self.sock, &ok).is_ok()
            }
            Ok(_) => {
                // Wait a moment so guessing keys is slow, then refuse.
                thread::sleep(Duration::from_millis(200));
                let _ = write_msg(
                    &mut self.sock,
                    &Msg::Error {
                        message: "authentication failed: wrong pre-shared key".into(),
                    },
                );
                self.sh.log(&ServerLog::AuthFailed {
                    client: self.peer.into(),
                });
                false
            }
            Err(e) => {
                self.sh.log(&ServerLog::Dropped {
                    client: self.peer.into(),
                    reason: format!("during authentication: {e}"),
                });
                false
            }
        }
    }

    /// The client's request, fitted to the server's limits (not yet validated).
    fn read_request(&mut self) -> Option<TestParams> {
        match read_by(&self.sock, self.deadline) {
            Ok(Msg::Request { mut params }) => {
                params.fit(&self.sh.cfg.limits);
                Some(params)
            }
            Ok(other) => {
                let _ = write_msg(
                    &mut self.sock,
                    &Msg::Error {
                        message: format!("expected request, got {}", other.name()),
                    },
                );
                None
            }
            Err(e) => {
                self.sh.log(&ServerLog::Dropped {
                    client: self.peer.into(),
                    reason: format!("waiting for a request: {e}"),
                });
                None
            }
        }
    }

    /// Validate the request, check what its kind needs of this server, and reserve a test slot
    /// and its memory; None: refused.
    fn admit(&mut self, params: &TestParams) -> Option<TestSlot<'a>> {
        let sh = self.sh;
        if let Err(r) = params.validate(&sh.cfg.limits) {
            self.refuse(r.kind, &r.reason, params);
            return None;
        }
        if let Err(r) = kind::of(params.kind).admit(params, &sh.cfg) {
            self.refuse(r.kind, &r.reason, params);
            return None;
        }
        match sh.reserve(params.server_memory_bytes()) {
            Ok(slot) => Some(slot),
            Err(reason) => {
                self.refuse(RefusalKind::Busy, &reason, params);
                None
            }
        }
    }

    /// What the test holds while it runs, made now so a refusal says why before anything is
    /// sent. None: refused.
    fn prepare(&mut self, params: &TestParams) -> Option<Held> {
        match kind::of(params.kind).prepare(params, &self.sh.cfg) {
            Ok(h) => Some(h),
            Err(r) => {
                self.refuse(r.kind, &r.reason, params);
                None
            }
        }
    }

    /// UDP tests use a socket of their own on the control connection's address. None: refused.
    fn udp_socket(&mut self, params: &TestParams, local_ip: IpAddr) -> Option<Arc<UdpSocket>> {
        match UdpSocket::bind(SocketAddr::new(local_ip, 0)) {
            Ok(u) => {
                let s2 = socket2::SockRef::from(&u);
                let _ = s2.set_recv_buffer_size(UDP_SOCKET_BUFFER);
                let _ = s2.set_send_buffer_size(UDP_SOCKET_BUFFER);
                Some(Arc::new(u))
            }
            Err(e) => {
                self.refuse(
                    RefusalKind::ServerError,
                    &format!("cannot open a UDP socket: {e}"),
                    params,
                );
                None
            }
        }
    }

    /// Tests whose client connects per transaction get a listener of their own on the control
    /// connection's address. None: refused.
    fn listener(&mut self, params: &TestParams, local_ip: IpAddr) -> Option<Arc<TcpListener>> {
        let listen = || -> std::io::Result<TcpListener> {
            let s = socket2::Socket::new(
                socket2::Domain::for_address(SocketAddr::new(local_ip, 0)),
                socket2::Type::STREAM,
                Some(socket2::Protocol::TCP),
            )?;
            s.bind(&SocketAddr::new(local_ip, 0).into())?;
            // Room for the connections a fast client opens while the server's threads answer.
            s.listen(LISTEN_BACKLOG)?;
            Ok(s.into())
        };
        match listen() {
            Ok(l) => Some(Arc::new(l)),
            Err(e) => {
                self.refuse(
                    RefusalKind::ServerError,
                    &format!("cannot listen for the test's connections: {e}"),
                    params,
                );
                None
            }
        }
    }

    /// Log a test that ended before it started.
    /// The test's data connections, collected within the handshake's time; on failure the
    /// client is told why, the log says so, and None.
    fn collect(&mut self, params: &TestParams, data: Data, id: u64) -> Option<Wired> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let wired = match data {
            Data::Tcp(run, rx) => {
                collect_tcp(params, &rx, left).map(|conns| Wired::Tcp(run, conns))
            }
            Data::Udp(run, u, register) => {
                collect_udp(params, &u, register, left).map(|flows| Wired::Udp(run, flows))
            }
            Data::Listen(run, listener) => Ok(Wired::Listen {
                run,
                listener,
                client: self
                    .sock
                    .peer_addr()
                    .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip()),
                streams: params.connections(),
            }),
        };
        match wired {
            Ok(w) => Some(w),
            Err(reason) => {
                let _ = write_msg(
                    &mut self.sock,
                    &Msg::Error {
                        message: reason.clone(),
                    },
                );
                self.log_failed(id, params.kind.as_str(), &reason);
                None
            }
        }
    }

    fn log_failed(&self, id: u64, kind: &str, error: &str) {
        self.sh.log(&ServerLog::Test(TestLog::Failed {
            test_id: id,
            client: self.peer.into(),
            protocol: PeerProtocol::Linerate,
            kind: kind.into(),
            result: Outcome::Error,
            error: error.into(),
        }));
    }

    /// Wait for the client's Start; false (logged) if something else came.
    fn wait_start(&self, id: u64, kind: &str) -> bool {
        match read_by(&self.sock, self.deadline) {
            Ok(Msg::Start) => true,
            other => {
                self.log_failed(id, kind, &format!("expected start, got {other:?}"));
                false
            }
        }
    }

    /// Send this side's results and close the writing half.
    fn send_results(&mut self, results: &SideResults) {
        let _ = self.sock.set_write_timeout(Some(defaults::RESULTS_TIMEOUT));
        let _ = write_msg(
            &mut self.sock,
            &Msg::Results {
                results: results.clone(),
            },
        );
        let _ = self.sock.shutdown(Shutdown::Write);
    }
}

/// Socket buffers of a UDP test's server socket: room for bursts at high rates.
const UDP_SOCKET_BUFFER: usize = 8 * 1024 * 1024;

/// The accept queue of a test's own listener (the kernel caps it at `net.core.somaxconn`).
const LISTEN_BACKLOG: i32 = 1024;

/// A control connection: authentication, the request, admission, then the test.
fn control(
    sh: &Shared,
    sock: TcpStream,
    peer: &str,
    client_nonce: &str,
    slot: &mut HandshakeSlot<'_>,
    deadline: Instant,
) {
    let mut c = Control {
        sh,
        sock,
        peer,
        deadline,
    };
    if !c.authenticate(client_nonce) {
        return;
    }
    let Some(params) = c.read_request() else {
        return;
    };
    let Some(test_slot) = c.admit(&params) else {
        return;
    };
    match kind::of(params.kind).ends() {
        Ends::Rdma => {
            if let Some(r) = params.rdma.clone() {
                rdma_test(&mut c, &params, &r, slot, test_slot);
            }
        }
        ends => run_test(&mut c, &params, ends, slot, test_slot),
    }
}

/// How the data connections of a test come, set up before `accepted` goes out.
enum Data {
    /// TCP connections, each with a `data_hello` and the test's cookie.
    Tcp(crate::kind::TcpEnd, Receiver<DataConn>),
    /// UDP flows on the test's socket; `register`: the client's address of each stream the
    /// server sends on comes in a registration datagram.
    Udp(crate::kind::UdpEnd, Arc<UdpSocket>, bool),
    /// The client connects per transaction to the test's listener.
    Listen(crate::kind::ListenEnd, Arc<TcpListener>),
}

/// A test whose data connections are TCP, UDP or the test's listener, once admitted: accept
/// it, collect its data connections, run this side, exchange results.
fn run_test(
    c: &mut Control<'_>,
    params: &TestParams,
    ends: Ends,
    slot: &mut HandshakeSlot<'_>,
    mut test_slot: TestSlot<'_>,
) {
    let sh = c.sh;
    let Some(held) = c.prepare(params) else {
        return;
    };
    let id = sh.next_test_id();
    let local_ip = c
        .sock
        .local_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let cookie = new_cookie();
    let tag = udp::tag(&cookie);
    let data = match ends {
        Ends::Tcp { run, .. } => Data::Tcp(
            run,
            test_slot.expect_data(&cookie, params.connections() as usize),
        ),
        Ends::Udp { run, register } => match c.udp_socket(params, local_ip) {
            Some(u) => Data::Udp(run, u, register),
            None => return,
        },
        Ends::Listener { listen, .. } => match c.listener(params, local_ip) {
            Some(l) => Data::Listen(listen, l),
            None => return,
        },
        // `control` runs RDMA tests on their own path.
        Ends::Rdma => return,
    };
    let port_of = |a: std::io::Result<SocketAddr>| a.ok().map(|a| a.port());
    let accepted = Msg::Accepted {
        test_id: id,
        cookie: cookie.clone(),
        udp_port: match &data {
            Data::Udp(_, u, _) => port_of(u.local_addr()),
            Data::Tcp(..) | Data::Listen(..) => None,
        },
        memory_bytes: test_slot.memory,
        inventory: sh.inventory(local_ip),
        rdma: None,
        listen_port: match &data {
            Data::Listen(_, l) => port_of(l.local_addr()),
            Data::Tcp(..) | Data::Udp(..) => None,
        },
    };
    // The test now holds a test slot; its data connections need handshake slots of their own.
    // Released before `accepted` goes out: the client opens its data connections as soon as
    // it reads it, and with few slots (`--max-pending`) they would be shed while this
    // connection still held one.
    slot.release();
    if write_msg(&mut c.sock, &accepted).is_err() {
        return;
    }
    // Collect the data connections, then wait for Start; all within the handshake timeout.
    let Some(wired) = c.collect(params, data, id) else {
        return;
    };
    if !c.wait_start(id, params.kind.as_str()) {
        return;
    }
    let plan = SidePlan {
        params: params.clone(),
        is_client: false,
        datagrams: udp::Format::Linerate { tag },
        start: Instant::now(),
        affinity: Vec::new(),
        file: held.file(),
        budget: None,
        ending: Ending::Time,
    };
    let soak = params
        .soak
        .then(|| sh.cfg.soak.as_ref().map(|f| f(local_ip)))
        .flatten();
    // What this host's CPUs did during the test, for the client to judge the run by.
    let cpu = HostCpuMeter::new();
    let before = cpu.snapshot();
    let link = LinkSnapshot::of(local_ip);
    let qdiscs = crate::qdiscs::watch(local_ip);
    let mut run = run_linerate_side(&c.sock, &plan, wired, soak);
    run.results.host_load = Some(Box::new(HostCpu::between(&before, &cpu.snapshot()).into()));
    run.results.link = link.and_then(|l| l.since()).map(Box::new);
    run.results.qdiscs = qdiscs.and_then(|q| q.finish());
    let file_log = kind::of(params.kind).finish(held, params, &mut run.results);
    // The run is over and its buffers are freed: the slot goes before the results do, so a
    // client that starts its next test the moment it has them is not refused as busy.
    let memory = test_slot.memory;
    drop(test_slot);
    c.send_results(&run.results);
    log_test(c, id, params, memory, &run.results, file_log);
    sh.served_one();
}

/// The server's side of a started test: intervals go out on the control connection; `done`,
/// an error or a close come in. A soak's counter samples follow: one at the start, then one
/// after each interval, written by the same thread so frames never interleave.
fn run_linerate_side(
    sock: &TcpStream,
    plan: &SidePlan,
    wired: Wired,
    soak: Option<side::SoakSampler>,
) -> side::SideRun {
    let mut writer = sock.try_clone().ok();
    let mut soak = soak.map(|f| side::Soak::new(f, plan));
    if let (Some(s), Some(w)) = (soak.as_mut(), writer.as_mut()) {
        let _ = write_msg(w, &Msg::SoakSample { sample: s.first() });
    }
    let mut sink = move |s: &linerate_proto::IntervalSample| {
        if let Some(w) = writer.as_mut() {
            let _ = write_msg(w, &Msg::Interval { sample: s.clone() });
            if let Some(k) = soak.as_mut() {
                let _ = write_msg(w, &Msg::SoakSample { sample: k.after(s) });
            }
        }
    };
    run_side(plan, wired, &mut sink, listen_for_done(sock))
}

/// Read a running test's control connection for the client's `done`: anything else, or a
/// close, means the client went away or misbehaved.
fn listen_for_done(sock: &TcpStream) -> impl FnMut() -> Heard + Send + 'static {
    let mut r = sock.try_clone().ok();
    if let Some(r) = &r {
        let _ = r.set_read_timeout(Some(Duration::from_millis(200)));
    }
    move || {
        let Some(r) = r.as_mut() else {
            return Heard::Gone;
        };
        match read_msg(r, MAX_CONTROL_FRAME) {
            Ok(Msg::Done) => Heard::Done,
            Err(FrameError::Timeout) => Heard::Nothing,
            _ => Heard::Gone,
        }
    }
}

/// The log line of a test that ran.
fn log_test(
    c: &Control<'_>,
    id: u64,
    params: &TestParams,
    memory: u64,
    results: &SideResults,
    file_log: Option<FileLog>,
) {
    let bytes: u64 = results
        .streams
        .iter()
        .map(|s| s.bytes_received + s.bytes_sent)
        .sum();
    let secs = results
        .streams
        .iter()
        .map(|s| s.seconds)
        .fold(0.0_f64, f64::max);
    c.sh.log(&ServerLog::Test(TestLog::Ran(TestRan {
        test_id: id,
        client: c.peer.into(),
        protocol: PeerProtocol::Linerate,
        kind: params.kind,
        direction: params.direction,
        streams: params.streams,
        duration_s: params.duration_ms as f64 / 1000.0,
        bytes,
        gbps: linerate_units::gbps(bytes, secs),
        cpu_percent: results.cpu.percent,
        memory_bytes: memory,
        result: Outcome::of(results.error.as_ref()),
        error: results.error.clone(),
        file: file_log,
        iperf3: None,
    })));
}

/// An RDMA test: libfabric listeners instead of data connections, the engine's target
/// threads instead of stream threads; the same handshake, watcher and results.
fn rdma_test(
    c: &mut Control<'_>,
    params: &TestParams,
    r: &linerate_proto::RdmaSpec,
    slot: &mut HandshakeSlot<'_>,
    test_slot: TestSlot<'_>,
) {
    let sh = c.sh;
    let id = sh.next_test_id();
    let memory = test_slot.memory;
    let local_ip = c
        .sock
        .local_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let setup = Instant::now();
    let listeners = match crate::rdma::listen(local_ip, r) {
        Ok(l) => l,
        Err(reason) => {
            c.refuse(RefusalKind::Unsupported, &reason, params);
            return;
        }
    };
    // This server's own setup (loading libfabric and its provider, a listener per queue pair:
    // seconds the first time on a slow or emulated host) is not the client's time to answer:
    // the handshake's deadline moves by it, so the client still has what was left for Start.
    // Still bounded per peer: the setup's time is this host's work, not the client's.
    c.deadline += setup.elapsed();
    let accepted = Msg::Accepted {
        test_id: id,
        cookie: random_hex(16),
        udp_port: None,
        memory_bytes: memory,
        inventory: sh.inventory(local_ip),
        rdma: Some(listeners.listen.clone()),
        listen_port: None,
    };
    if write_msg(&mut c.sock, &accepted).is_err() {
        return;
    }
    slot.release();
    if !c.wait_start(id, "rdma") {
        return;
    }
    let start = Instant::now();
    let limit = Duration::from_millis(params.duration_ms) + side::GRACE;
    let stop = Stop::new();
    // The engine's targets end when the initiators are done; a client gone stops them.
    let watcher = watch(
        listen_for_done(&c.sock),
        start,
        limit,
        (&stop, &Stop::new()),
        false,
        || {},
    );
    let results = crate::rdma::serve(listeners, params, r, &stop, start + limit);
    stop.set();
    let _ = watcher.join();
    // Over, its memory freed: the slot goes before the results (see `run_test`).
    drop(test_slot);
    c.send_results(&results);
    let t = results.rdma.clone().unwrap_or_default();
    sh.log(&ServerLog::Test(TestLog::Rdma(RdmaRan {
        test_id: id,
        client: c.peer.into(),
        kind: r.kind(),
        provider: t.provider,
        domain: t.domain,
        qps: r.qps,
        length: params.length,
        messages: t.messages,
        bytes: t.bytes,
        verify_errors: t.verify_errors,
        cpu_percent: results.cpu.percent,
        memory_bytes: memory,
        result: Outcome::of(results.error.as_ref()),
        error: results.error,
    })));
    sh.served_one();
}

/// Wait for a UDP test's registrations: the client's address of each stream the server sends
/// on (`register`), each in a datagram with the stream's index and the registration sequence
/// number, echoed back. A test that sends nothing to the client needs none.
fn collect_udp(
    p: &TestParams,
    u: &Arc<UdpSocket>,
    register: bool,
    timeout: Duration,
) -> Result<Vec<UdpFlow>, String> {
    let n = p.connections() as usize;
    // The client registers each stream by datagram; learn the addresses now.
    let mut peers: Vec<Option<SocketAddr>> = vec![None; n];
    let deadline = Instant::now() + timeout;
    let needs_peer = |i: usize| register && p.sends_on(i as u32, false);
    let mut buf = [0u8; 64];
    let _ = u.set_read_timeout(Some(Duration::from_millis(50)));
    while (0..n).any(|i| needs_peer(i) && peers[i].is_none()) {
        if Instant::now() >= deadline {
            return Err(format!(
                "the client did not register its UDP streams within {} s",
                timeout.as_secs_f64()
            ));
        }
        if let Ok((len, from)) = u.recv_from(&mut buf) {
            if let Some(h) = udp::Header::read(&buf[..len]) {
                if h.seq == udp::REGISTER_SEQ && (h.stream as usize) < n {
                    peers[h.stream as usize] = Some(from);
                    let _ = u.send_to(&buf[..len], from);
                }
            }
        }
    }
    Ok(peers
        .into_iter()
        .map(|peer| UdpFlow {
            sock: Arc::clone(u),
            peer,
        })
        .collect())
}
