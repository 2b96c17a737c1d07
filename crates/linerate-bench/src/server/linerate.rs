//! linerate's control protocol, the server's side (`docs/protocol.md`): a control connection's
//! hello, authentication, request and admission, its data connections, the test, the results.
//! Everything protocol-neutral (slots, memory, the registry of tests waiting for data
//! connections, running a side) is `super`'s; what each kind runs is `crate::kind`'s.

use linerate_engine::hostcpu::{HostCpu, HostCpuMeter};
use linerate_engine::linkload::LinkSnapshot;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use linerate_engine::meter::Stop;
use linerate_engine::udp;
use linerate_proto::session::{
    Acceptance, ControlServer, ServerAction, ServerEnd, ServerEvent, ServerSetup, Session,
};
use linerate_proto::{defaults, random_hex, Refusal, RefusalKind, SideResults, TestParams};

use super::{
    collect_tcp, new_cookie, run_side, watch, DataConn, HandshakeSlot, Heard, Shared, TestSlot,
};
use crate::kind::{self, Ends, Held};
use crate::serverlog::{FileLog, Outcome, PeerProtocol, RdmaRan, ServerLog, TestLog, TestRan};
use crate::side::{self, Ending, SidePlan, UdpFlow, Wired};
use crate::wire::{Got, Wire};

/// A connection whose first byte is a frame's: its first message says what it is.
pub(super) fn handle(
    sh: &Shared,
    sock: TcpStream,
    peer: &str,
    slot: &mut HandshakeSlot<'_>,
    deadline: Instant,
) {
    let session = ControlServer::new(ServerSetup {
        psk: sh.cfg.psk.clone(),
        nonce: random_hex(16),
        version: env!("CARGO_PKG_VERSION").into(),
        limits: sh.cfg.limits.clone(),
        deadline,
    });
    let mut c = Control {
        sh,
        wire: Wire::new(sock),
        session,
        peer,
    };
    match c.next() {
        Some(ServerAction::Data { cookie, stream }) => {
            slot.release();
            let conn = DataConn {
                index: stream,
                arrival: 0,
                sock: c.wire.into_sock(),
            };
            if let Err(sock) = sh.deliver(&cookie, conn) {
                c.wire = Wire::new(sock);
                c.event(ServerEvent::NoSuchTest);
                c.next();
            }
        }
        Some(ServerAction::Admit(params)) => control(c, &params, slot),
        _ => {}
    }
}

/// A connection that opened with a frame: the socket, its conversation, and who is on the
/// other end.
struct Control<'a> {
    sh: &'a Shared,
    wire: Wire,
    session: ControlServer,
    peer: &'a str,
}

impl Control<'_> {
    /// Write what the conversation says until it asks something else of the server, reading
    /// the client meanwhile; its end is logged. None: it waits on the server, or the client
    /// could not be written to (nothing more to say to it).
    fn next(&mut self) -> Option<ServerAction> {
        loop {
            while let Some(a) = self.session.poll() {
                match a {
                    ServerAction::Send(bytes) => {
                        if self.wire.send(&bytes).is_err() {
                            // The client is gone: only how the conversation ended is left.
                            return std::iter::from_fn(|| self.session.poll())
                                .find(|a| matches!(a, ServerAction::Close(_)))
                                .and_then(|a| self.ended(a));
                        }
                    }
                    a => return self.ended(a),
                }
            }
            if !self.wire.pump(&mut self.session, None) {
                return None;
            }
        }
    }

    /// Log how the conversation ended, when `a` says it did; the action otherwise.
    fn ended(&self, a: ServerAction) -> Option<ServerAction> {
        let ServerAction::Close(end) = a else {
            return Some(a);
        };
        let client = self.peer.to_string();
        match end {
            ServerEnd::Dropped(reason) => self.sh.log(&ServerLog::Dropped { client, reason }),
            ServerEnd::Refused { reason, params } => self.sh.log(&ServerLog::Refused {
                client,
                reason,
                params: params.map(|p| *p),
                iperf3: None,
            }),
            ServerEnd::AuthFailed => self.sh.log(&ServerLog::AuthFailed { client }),
            // A test that did not start, or ran: its caller logs it with its id.
            ServerEnd::NotStarted(_) | ServerEnd::Served => return Some(ServerAction::Close(end)),
            ServerEnd::Quiet => {}
        }
        None
    }

    /// An event of this end; the conversation takes every one the driver below sends.
    fn event(&mut self, ev: ServerEvent<'_>) {
        let taken = self.session.handle(Instant::now(), ev);
        debug_assert!(taken.is_ok(), "{taken:?}");
    }

    /// Tell the client why its test is refused, and log it.
    fn refuse(&mut self, kind: RefusalKind, reason: &str) {
        self.event(ServerEvent::Refuse(Refusal::new(kind, reason)));
        self.next();
    }

    /// Check what its kind needs of this server, and reserve a test slot and its memory; None:
    /// refused.
    fn admit<'s>(&mut self, sh: &'s Shared, params: &TestParams) -> Option<TestSlot<'s>> {
        if let Err(r) = kind::of(params.kind).admit(params, &sh.cfg) {
            self.refuse(r.kind, &r.reason);
            return None;
        }
        match sh.reserve(params.server_memory_bytes()) {
            Ok(slot) => Some(slot),
            Err(reason) => {
                self.refuse(RefusalKind::Busy, &reason);
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
                self.refuse(r.kind, &r.reason);
                None
            }
        }
    }

    /// UDP tests use a socket of their own on the control connection's address. None: refused.
    fn udp_socket(&mut self, local_ip: IpAddr) -> Option<Arc<UdpSocket>> {
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
                );
                None
            }
        }
    }

    /// Tests whose client connects per transaction get a listener of their own on the control
    /// connection's address. None: refused.
    fn listener(&mut self, local_ip: IpAddr) -> Option<Arc<TcpListener>> {
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
                );
                None
            }
        }
    }

    /// Send `accepted`; false: the client is gone.
    fn accept(&mut self, accepted: Acceptance, setup: Duration) -> bool {
        self.event(ServerEvent::Accept {
            accepted: Box::new(accepted),
            setup,
        });
        match self.session.poll() {
            Some(ServerAction::Send(bytes)) => self.wire.send(&bytes).is_ok(),
            _ => false,
        }
    }

    /// The test's data connections, collected by the handshake's deadline; or why not.
    fn collect(&mut self, params: &TestParams, data: Data) -> Result<Wired, String> {
        let left = self
            .session
            .handshake_deadline()
            .saturating_duration_since(Instant::now());
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
                    .wire
                    .sock()
                    .peer_addr()
                    .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip()),
                streams: params.connections(),
            }),
        };
        if wired.is_ok() {
            self.event(ServerEvent::DataReady);
        }
        wired
    }

    /// The end of a test that did not start, logged with its id; true when it did start.
    fn not_started(&mut self, id: u64, kind: &str) -> bool {
        match self.next() {
            Some(ServerAction::Start) => true,
            Some(ServerAction::Close(ServerEnd::NotStarted(error))) => {
                self.log_failed(id, kind, &error);
                false
            }
            _ => false,
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

    /// Wait for the client's `start`; false (logged) if something else came.
    fn wait_start(&mut self, id: u64, kind: &str) -> bool {
        self.not_started(id, kind)
    }

    /// The test runs: the conversation, shared by the thread that writes this end's intervals
    /// and the one that reads the client's `done`.
    fn running(self) -> Running {
        let writer = self.wire.sock().try_clone().ok().map(Wire::new);
        Running {
            session: Arc::new(Mutex::new(self.session)),
            reader: Some(self.wire),
            writer,
        }
    }
}

/// A running test's conversation.
struct Running {
    session: Arc<Mutex<ControlServer>>,
    /// The control connection as read; taken by the watcher of `done`.
    reader: Option<Wire>,
    /// The same socket, written by one thread at a time: the sink while the test runs, then
    /// the results.
    writer: Option<Wire>,
}

/// Handle `ev` and take the bytes it makes: under one lock, so no other thread takes them.
fn step(session: &Mutex<ControlServer>, ev: ServerEvent<'_>) -> (Vec<u8>, bool) {
    let mut s = session.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = s.handle(Instant::now(), ev);
    let mut bytes = Vec::new();
    let mut served = false;
    while let Some(a) = s.poll() {
        match a {
            ServerAction::Send(b) => bytes.extend(b),
            ServerAction::Close(ServerEnd::Served) => served = true,
            _ => {}
        }
    }
    (bytes, served)
}

impl Running {
    /// Send this side's results and close the writing half.
    fn send_results(&mut self, results: &SideResults) {
        let (bytes, served) = step(&self.session, ServerEvent::Finished(results));
        if let Some(w) = self.writer.as_mut() {
            let _ = w.sock().set_write_timeout(Some(defaults::RESULTS_TIMEOUT));
            let _ = w.send(&bytes);
            if served {
                let _ = w.sock().shutdown(Shutdown::Write);
            }
        }
    }

    /// Read a running test's control connection for the client's `done`: anything else, or a
    /// close, means the client went away or misbehaved.
    fn listen_for_done(&mut self) -> impl FnMut() -> Heard + Send + 'static {
        let session = Arc::clone(&self.session);
        let mut reader = self.reader.take();
        move || {
            let Some(r) = reader.as_mut() else {
                return Heard::Gone;
            };
            let heard = |s: &mut ControlServer| {
                let mut heard = Heard::Nothing;
                while let Some(a) = s.poll() {
                    match a {
                        ServerAction::PeerDone => heard = Heard::Done,
                        ServerAction::PeerGone(_) => heard = Heard::Gone,
                        _ => {}
                    }
                }
                heard
            };
            let lock = || session.lock().unwrap_or_else(PoisonError::into_inner);
            {
                let mut s = lock();
                if r.feed(&mut *s) > 0 {
                    return heard(&mut s);
                }
                if s.read_limit() == 0 {
                    return Heard::Gone;
                }
            }
            let got = r.read(usize::MAX, Some(Instant::now() + LISTEN_SLICE));
            let mut s = lock();
            match got {
                Got::Bytes => {
                    r.feed(&mut *s);
                }
                Got::Timeout => return Heard::Nothing,
                Got::Gone(why) => s.gone(Instant::now(), why),
            }
            heard(&mut s)
        }
    }
}

/// How long the watcher of a running test waits for the client's `done` at a time.
const LISTEN_SLICE: Duration = Duration::from_millis(200);

/// Socket buffers of a UDP test's server socket: room for bursts at high rates.
const UDP_SOCKET_BUFFER: usize = 8 * 1024 * 1024;

/// The accept queue of a test's own listener (the kernel caps it at `net.core.somaxconn`).
const LISTEN_BACKLOG: i32 = 1024;

/// A control connection past its request, fitted to the limits and valid: admission, then
/// the test.
fn control(mut c: Control<'_>, params: &TestParams, slot: &mut HandshakeSlot<'_>) {
    let sh = c.sh;
    let Some(test_slot) = c.admit(sh, params) else {
        return;
    };
    match kind::of(params.kind).ends() {
        Ends::Rdma => {
            if let Some(r) = params.rdma.clone() {
                rdma_test(c, params, &r, slot, test_slot);
            }
        }
        ends => run_test(c, params, ends, slot, test_slot),
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

/// The local address of the control connection: the address the client reached.
fn local_ip(c: &Control<'_>) -> IpAddr {
    c.wire
        .sock()
        .local_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip())
}

/// A test whose data connections are TCP, UDP or the test's listener, once admitted: accept
/// it, collect its data connections, run this side, exchange results.
fn run_test(
    mut c: Control<'_>,
    params: &TestParams,
    ends: Ends,
    slot: &mut HandshakeSlot<'_>,
    mut test_slot: TestSlot<'_>,
) {
    let (sh, peer) = (c.sh, c.peer);
    let Some(held) = c.prepare(params) else {
        return;
    };
    let id = sh.next_test_id();
    let local_ip = local_ip(&c);
    let cookie = new_cookie();
    let tag = udp::tag(&cookie);
    let data = match ends {
        Ends::Tcp { run, .. } => Data::Tcp(
            run,
            test_slot.expect_data(&cookie, params.connections() as usize),
        ),
        Ends::Udp { run, register } => match c.udp_socket(local_ip) {
            Some(u) => Data::Udp(run, u, register),
            None => return,
        },
        Ends::Listener { listen, .. } => match c.listener(local_ip) {
            Some(l) => Data::Listen(listen, l),
            None => return,
        },
        // `control` runs RDMA tests on their own path.
        Ends::Rdma => return,
    };
    let port_of = |a: std::io::Result<SocketAddr>| a.ok().map(|a| a.port());
    // Reading this host's inventory takes seconds on a slow or emulated host: this server's
    // work, not the client's time, so the handshake's deadline moves by it (as by RDMA's setup).
    let setup = Instant::now();
    let inventory = sh.inventory(local_ip);
    let setup = setup.elapsed();
    let accepted = Acceptance {
        test_id: id,
        cookie,
        udp_port: match &data {
            Data::Udp(_, u, _) => port_of(u.local_addr()),
            Data::Tcp(..) | Data::Listen(..) => None,
        },
        memory_bytes: test_slot.memory,
        inventory,
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
    if !c.accept(accepted, setup) {
        return;
    }
    // Collect the data connections, then wait for Start; all within the handshake timeout.
    let wired = match c.collect(params, data) {
        Ok(w) => w,
        Err(reason) => {
            // The test is over: its slot goes before the client is told, so a client that
            // tries again at once is not refused as busy.
            drop(test_slot);
            c.event(ServerEvent::DataFailed(reason));
            c.not_started(id, params.kind.as_str());
            return;
        }
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
    let udp = crate::udp_receive::watch(params.kind);
    let mut running = c.running();
    let mut run = run_linerate_side(&mut running, &plan, wired, soak);
    run.results.host_load = Some(Box::new(HostCpu::between(&before, &cpu.snapshot()).into()));
    run.results.link = link.and_then(|l| l.since()).map(Box::new);
    run.results.qdiscs = qdiscs.and_then(|q| q.finish());
    run.results.udp_receive = udp.and_then(crate::udp_receive::UdpWatch::finish);
    let file_log = kind::of(params.kind).finish(held, params, &mut run.results);
    // The run is over and its buffers are freed: the slot goes before the results do, so a
    // client that starts its next test the moment it has them is not refused as busy.
    let memory = test_slot.memory;
    drop(test_slot);
    running.send_results(&run.results);
    log_test((sh, peer), id, params, memory, &run.results, file_log);
    sh.served_one();
}

/// The server's side of a started test: intervals go out on the control connection; `done`,
/// an error or a close come in. A soak's counter samples follow: one at the start, then one
/// after each interval, written by the same thread so frames never interleave.
fn run_linerate_side(
    running: &mut Running,
    plan: &SidePlan,
    wired: Wired,
    soak: Option<side::SoakSampler>,
) -> side::SideRun {
    let mut writer = running
        .writer
        .as_ref()
        .and_then(|w| w.sock().try_clone().ok())
        .map(Wire::new);
    let session = Arc::clone(&running.session);
    let mut soak = soak.map(|f| side::Soak::new(f, plan));
    let mut write = move |ev: ServerEvent<'_>| {
        let (bytes, _) = step(&session, ev);
        if let Some(w) = writer.as_mut() {
            let _ = w.send(&bytes);
        }
    };
    if let Some(s) = soak.as_mut() {
        write(ServerEvent::SoakSample(&s.first()));
    }
    let mut sink = move |s: &linerate_proto::IntervalSample| {
        write(ServerEvent::Interval(s));
        if let Some(k) = soak.as_mut() {
            write(ServerEvent::SoakSample(&k.after(s)));
        }
    };
    run_side(plan, wired, &mut sink, running.listen_for_done())
}

/// The log line of a test that ran.
fn log_test(
    (sh, peer): (&Shared, &str),
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
    sh.log(&ServerLog::Test(TestLog::Ran(TestRan {
        test_id: id,
        client: peer.into(),
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
    mut c: Control<'_>,
    params: &TestParams,
    r: &linerate_proto::RdmaSpec,
    slot: &mut HandshakeSlot<'_>,
    test_slot: TestSlot<'_>,
) {
    let (sh, peer) = (c.sh, c.peer);
    let id = sh.next_test_id();
    let memory = test_slot.memory;
    let local_ip = local_ip(&c);
    let setup = Instant::now();
    let listeners = match crate::rdma::listen(local_ip, r) {
        Ok(l) => l,
        Err(reason) => {
            c.refuse(RefusalKind::Unsupported, &reason);
            return;
        }
    };
    let inventory = sh.inventory(local_ip);
    let setup = setup.elapsed();
    let accepted = Acceptance {
        test_id: id,
        cookie: random_hex(16),
        udp_port: None,
        memory_bytes: memory,
        inventory,
        rdma: Some(listeners.listen.clone()),
        listen_port: None,
    };
    // This server's own setup (loading libfabric and its provider, a listener per queue pair,
    // this host's inventory: seconds the first time on a slow or emulated host) is not the
    // client's time to answer:
    // the handshake's deadline moves by it, so the client still has what was left for Start.
    // Still bounded per peer: the setup's time is this host's work, not the client's.
    if !c.accept(accepted, setup) {
        return;
    }
    slot.release();
    c.event(ServerEvent::DataReady);
    if !c.wait_start(id, "rdma") {
        return;
    }
    let start = Instant::now();
    let limit = Duration::from_millis(params.duration_ms) + side::GRACE;
    let stop = Stop::new();
    let mut running = c.running();
    // The engine's targets end when the initiators are done; a client gone stops them.
    let watcher = watch(
        running.listen_for_done(),
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
    running.send_results(&results);
    let t = results.rdma.clone().unwrap_or_default();
    sh.log(&ServerLog::Test(TestLog::Rdma(RdmaRan {
        test_id: id,
        client: peer.into(),
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
