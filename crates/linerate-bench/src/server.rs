//! `linerate serve`: many clients and tests at once, each bounded in memory and time.

use std::collections::HashMap;
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket,
};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::meter::Stop;
use linerate_engine::udp;
use linerate_proto::{
    defaults, random_hex, read_msg, write_msg, FrameError, Limits, Msg, Psk, RefusalKind,
    SideResults, TestKind, TestParams, MAGIC, MAX_CONTROL_FRAME, PROTOCOL_VERSION,
};

use crate::serverlog::{FileLog, Outcome, RdmaRan, ServerLog, TestLog, TestRan};
use crate::shutdown::ShutdownTrigger;
use crate::side::{self, Conn, SidePlan};
use crate::writedir::NewFile;

/// Operator settings.
#[derive(Clone)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    pub limits: Limits,
    pub psk: Option<Psk>,
    /// Time a new connection has to complete its handshake (and a test to get its data connections).
    pub handshake_timeout: Duration,
    /// Most connections in the handshake phase at once; more are closed at once.
    pub max_pending: u32,
    /// Total buffer memory all running tests may hold.
    pub max_memory_bytes: u64,
    /// Stop after this many tests (for scripts and tests); None = forever.
    pub max_served: Option<u64>,
    /// How to describe the interface a test runs on (sent to the client).
    pub inventory: Option<crate::InventoryFn>,
    /// Write one JSON log line per event on stdout.
    pub log: bool,
    /// The only directory file transfers may write into (`--write-dir`); None refuses them.
    pub write_dir: Option<Arc<crate::writedir::WriteDir>>,
    /// How this host samples its port counters during a soak (under `serve --root`); None
    /// refuses soaks.
    pub soak: Option<crate::SoakSamplerFn>,
    /// Ends the server early when triggered (a temporary far end's stdin closed, a signal).
    pub shutdown: Option<ShutdownTrigger>,
    /// A hard deadline from the start of `serve_on` (`serve --exit-after`): the server ends then,
    /// tests running or not.
    pub exit_after: Option<Duration>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("limits", &self.limits)
            .field("auth", &self.psk.is_some())
            .field("handshake_timeout", &self.handshake_timeout)
            .field("max_pending", &self.max_pending)
            .field("max_memory_bytes", &self.max_memory_bytes)
            .field("write_dir", &self.write_dir.as_ref().map(|w| w.path()))
            .field("soak", &self.soak.is_some())
            .field("shutdown", &self.shutdown)
            .field("exit_after", &self.exit_after)
            .finish_non_exhaustive()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([0, 0, 0, 0], defaults::PORT)),
            limits: Limits::default(),
            psk: None,
            handshake_timeout: defaults::HANDSHAKE_TIMEOUT,
            max_pending: defaults::MAX_PENDING,
            max_memory_bytes: defaults::MAX_MEMORY_BYTES,
            max_served: None,
            inventory: None,
            log: true,
            write_dir: None,
            soak: None,
            shutdown: None,
            exit_after: None,
        }
    }
}

type DataConn = (u32, TcpStream);

/// Reads that share one deadline: a client dripping a byte at a time cannot
/// stretch its handshake past `--handshake-timeout`.
struct Deadline<'a> {
    sock: &'a TcpStream,
    at: Instant,
}

impl std::io::Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "handshake deadline passed",
            ));
        }
        self.sock.set_read_timeout(Some(left))?;
        std::io::Read::read(&mut self.sock, buf)
    }
}

fn read_by(sock: &TcpStream, at: Instant) -> Result<Msg, FrameError> {
    read_msg(&mut Deadline { sock, at }, MAX_CONTROL_FRAME)
}

struct Shared {
    cfg: ServerConfig,
    pending: Mutex<HashMap<String, SyncSender<DataConn>>>,
    handshaking: AtomicU32,
    tests: AtomicU32,
    memory: AtomicU64,
    next_id: AtomicU64,
    served: AtomicU64,
    /// Where the accept loop listens, to wake it when the last test allowed has run.
    wake: Option<SocketAddr>,
}

impl Shared {
    /// Count a test that ran; past `max_served`, wake the accept loop (blocked in `accept`)
    /// with a connection of our own, so `serve --once` ends when its test does rather than at
    /// the next client.
    fn served_one(&self) {
        let n = self.served.fetch_add(1, Ordering::SeqCst) + 1;
        if self.cfg.max_served.is_some_and(|max| n >= max) {
            if let Some(addr) = self.wake {
                let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
            }
        }
    }

    fn log(&self, event: &ServerLog) {
        if self.cfg.log {
            event.print();
        }
    }
}

/// An address that reaches a listener bound to `addr`: the wildcard addresses are not
/// connectable, their loopback is.
fn wake_address(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(v) if v.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v) if v.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// Bind and serve until `max_served` tests have run (forever by default).
pub fn serve(cfg: ServerConfig) -> std::io::Result<()> {
    let listener = TcpListener::bind(cfg.bind).map_err(|e| {
        let hint = bind_hint(cfg.bind, &e);
        std::io::Error::new(e.kind(), format!("binding {}: {e}{hint}", cfg.bind))
    })?;
    serve_on(&listener, cfg)
}

/// What to do when the listening socket cannot be bound, after the OS error.
fn bind_hint(bind: SocketAddr, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let port = bind.port();
    match e.kind() {
        K::AddrInUse => format!(
            "; another program (perhaps another `linerate serve`) already listens on port {port}: stop it, or listen on another port with -p PORT (clients then pass the same -p PORT)"
        ),
        K::PermissionDenied if port < 1024 => format!(
            "; port {port} is privileged (below 1024): run as root or with CAP_NET_BIND_SERVICE, or pick a port above 1023 with -p PORT"
        ),
        K::AddrNotAvailable => format!(
            "; {} is not an address of this host: give one of its addresses with -B ADDR, or leave -B out to listen on all of them",
            bind.ip()
        ),
        _ => String::new(),
    }
}

/// How long tests still running may take to end once the server is ended early.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Serve on an already bound listener.
pub fn serve_on(listener: &TcpListener, cfg: ServerConfig) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    if cfg.log {
        ServerLog::Listening {
            address: addr.to_string(),
            protocol: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION"),
            auth: cfg.psk.is_some(),
            limits: cfg.limits.clone(),
            max_memory_bytes: cfg.max_memory_bytes,
            write_dir: cfg
                .write_dir
                .as_ref()
                .map(|w| w.path().display().to_string()),
        }
        .print();
    }
    // A deadline is a trigger of its own, pulled by a thread that sleeps until then.
    let shutdown = match (&cfg.shutdown, cfg.exit_after) {
        (None, None) => None,
        (s, after) => {
            let s = s.clone().unwrap_or_default();
            if let Some(after) = after {
                s.trigger_at(
                    Instant::now() + after,
                    format!("its deadline (--exit-after {} s)", after.as_secs()),
                );
            }
            s.arm(wake_address(addr));
            Some(s)
        }
    };
    let shared = Arc::new(Shared {
        cfg,
        pending: Mutex::new(HashMap::new()),
        handshaking: AtomicU32::new(0),
        tests: AtomicU32::new(0),
        memory: AtomicU64::new(0),
        next_id: AtomicU64::new(1),
        served: AtomicU64::new(0),
        wake: Some(wake_address(addr)),
    });
    for conn in listener.incoming() {
        if shutdown.as_ref().is_some_and(ShutdownTrigger::is_triggered) {
            break;
        }
        if let Some(max) = shared.cfg.max_served {
            if shared.served.load(Ordering::SeqCst) >= max {
                break;
            }
        }
        let Ok(sock) = conn else { continue };
        if shared.handshaking.load(Ordering::SeqCst) >= shared.cfg.max_pending {
            // Shed load: a flood of idle connections cannot pin threads or memory.
            let _ = sock.shutdown(Shutdown::Both);
            continue;
        }
        shared.handshaking.fetch_add(1, Ordering::SeqCst);
        let sh = Arc::clone(&shared);
        let spawned = thread::Builder::new().name("conn".into()).spawn(move || {
            let peer = sock.peer_addr().ok();
            handle(&sh, sock, peer);
        });
        if spawned.is_err() {
            shared.handshaking.fetch_sub(1, Ordering::SeqCst);
        }
        if let Some(max) = shared.cfg.max_served {
            if shared.served.load(Ordering::SeqCst) >= max {
                break;
            }
        }
    }
    // Let running tests finish (bounded by their own deadlines); when ended early, give them
    // only a moment: the client is gone, or the deadline has passed.
    let grace = if shutdown.as_ref().is_some_and(ShutdownTrigger::is_triggered) {
        SHUTDOWN_GRACE
    } else {
        Duration::from_secs(30)
    };
    let until = Instant::now() + grace;
    while shared.tests.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Releases the handshake slot once, when the connection leaves the handshake phase.
struct HandshakeSlot<'a>(&'a Shared, bool);

impl HandshakeSlot<'_> {
    fn release(&mut self) {
        if !self.1 {
            self.1 = true;
            self.0.handshaking.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for HandshakeSlot<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

fn handle(sh: &Shared, mut sock: TcpStream, peer: Option<SocketAddr>) {
    let mut slot = HandshakeSlot(sh, false);
    let peer_s = peer.map_or("?".into(), |p| p.to_string());
    // One deadline for the whole handshake, from accept to start.
    let deadline = Instant::now() + sh.cfg.handshake_timeout;
    let _ = sock.set_write_timeout(Some(sh.cfg.handshake_timeout));
    let first = read_by(&sock, deadline);
    match first {
        Ok(Msg::DataHello { cookie, stream }) => {
            slot.release();
            let tx = sh
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&cookie)
                .cloned();
            match tx {
                Some(tx) => {
                    let _ = tx.try_send((stream, sock));
                }
                None => {
                    let _ = write_msg(
                        &mut sock,
                        &Msg::Error {
                            message: "unknown test cookie".into(),
                        },
                    );
                }
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
                });
                return;
            }
            if nonce.len() > 128 {
                return;
            }
            control(sh, sock, &peer_s, &nonce, &mut slot, deadline);
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

/// Releases a test's slot and memory when dropped.
struct TestSlot<'a> {
    sh: &'a Shared,
    memory: u64,
    cookie: String,
}

impl Drop for TestSlot<'_> {
    fn drop(&mut self) {
        self.sh.tests.fetch_sub(1, Ordering::SeqCst);
        self.sh.memory.fetch_sub(self.memory, Ordering::SeqCst);
        self.sh
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.cookie);
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

    /// Validate the request and reserve a test slot and its memory; None: refused.
    fn admit(&mut self, params: &TestParams) -> Option<TestSlot<'a>> {
        let sh = self.sh;
        if let Err(r) = params.validate(&sh.cfg.limits) {
            self.refuse(r.kind, &r.reason, params);
            return None;
        }
        if params.soak && sh.cfg.soak.is_none() {
            self.refuse(
                RefusalKind::Unsupported,
                "this server does not sample its counters: it cannot run a soak",
                params,
            );
            return None;
        }
        let memory = params.server_memory_bytes();
        // Reserve a test slot and its memory atomically enough: check after increment.
        let running = sh.tests.fetch_add(1, Ordering::SeqCst) + 1;
        let used = sh.memory.fetch_add(memory, Ordering::SeqCst) + memory;
        let test_slot = TestSlot {
            sh,
            memory,
            cookie: random_hex(16),
        };
        let limit = sh.cfg.limits.max_tests;
        if running > limit {
            self.refuse(RefusalKind::Busy, &format!("server busy: {} tests running, the limit is {limit} (serve --max-tests); try again shortly", running - 1), params);
            return None;
        }
        let max = sh.cfg.max_memory_bytes;
        if used > max {
            self.refuse(RefusalKind::Busy, &format!("server busy: this test needs {memory} bytes of buffers and only {} of {max} are free (serve --max-memory)", max.saturating_sub(used - memory)), params);
            return None;
        }
        Some(test_slot)
    }

    /// A file transfer's file, created now so a refusal says why before anything is sent.
    /// Ok(None): not a file transfer; Err: refused.
    fn create_file(&mut self, params: &TestParams) -> Result<Option<NewFile>, ()> {
        match (&params.file, &self.sh.cfg.write_dir) {
            (None, _) => Ok(None),
            (Some(_), None) => {
                self.refuse(RefusalKind::NoWriteDir, "this server accepts no files: its operator can allow them with `linerate serve --write-dir DIR`", params);
                Err(())
            }
            (Some(spec), Some(dir)) => dir.create(spec).map(Some).map_err(|e| {
                self.refuse(RefusalKind::FileRefused, &e, params);
            }),
        }
    }

    /// UDP tests use a socket of their own on the control connection's address.
    /// Ok(None): not a UDP test; Err: refused.
    fn udp_socket(
        &mut self,
        params: &TestParams,
        local_ip: IpAddr,
    ) -> Result<Option<Arc<UdpSocket>>, ()> {
        if !params.kind.is_udp() {
            return Ok(None);
        }
        match UdpSocket::bind(SocketAddr::new(local_ip, 0)) {
            Ok(u) => {
                let s2 = socket2::SockRef::from(&u);
                let _ = s2.set_recv_buffer_size(UDP_SOCKET_BUFFER);
                let _ = s2.set_send_buffer_size(UDP_SOCKET_BUFFER);
                Ok(Some(Arc::new(u)))
            }
            Err(e) => {
                self.refuse(
                    RefusalKind::ServerError,
                    &format!("cannot open a UDP socket: {e}"),
                    params,
                );
                Err(())
            }
        }
    }

    /// Log a test that ended before it started.
    fn log_failed(&self, id: u64, kind: &str, error: &str) {
        self.sh.log(&ServerLog::Test(TestLog::Failed {
            test_id: id,
            client: self.peer.into(),
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
    if let (TestKind::Rdma, Some(r)) = (params.kind, params.rdma.clone()) {
        rdma_test(&mut c, &params, &r, slot, test_slot.memory);
    } else {
        run_test(&mut c, &params, slot, &test_slot);
    }
    drop(test_slot);
}

/// A TCP, UDP, latency or file test, once admitted: accept it, collect its data
/// connections, run this side, exchange results.
fn run_test(
    c: &mut Control<'_>,
    params: &TestParams,
    slot: &mut HandshakeSlot<'_>,
    test_slot: &TestSlot<'_>,
) {
    let sh = c.sh;
    let Ok(new_file) = c.create_file(params) else {
        return;
    };
    let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
    let local_ip = c
        .sock
        .local_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let cookie = &test_slot.cookie;
    let tag = udp::tag(cookie);
    let Ok(udp_sock) = c.udp_socket(params, local_ip) else {
        return;
    };
    let (tx, rx) = mpsc::sync_channel::<DataConn>(params.connections() as usize);
    if matches!(
        params.kind,
        TestKind::TcpBw | TestKind::TcpLat | TestKind::FileTransfer
    ) {
        sh.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(cookie.clone(), tx);
    }
    let accepted = Msg::Accepted {
        test_id: id,
        cookie: cookie.clone(),
        udp_port: udp_sock
            .as_ref()
            .and_then(|u| u.local_addr().ok())
            .map(|a| a.port()),
        memory_bytes: test_slot.memory,
        inventory: inventory(sh, local_ip),
        rdma: None,
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
    let left = c.deadline.saturating_duration_since(Instant::now());
    let conns = match collect(params, &rx, udp_sock.as_ref(), left) {
        Ok(conns) => conns,
        Err(reason) => {
            let _ = write_msg(
                &mut c.sock,
                &Msg::Error {
                    message: reason.clone(),
                },
            );
            c.log_failed(id, params.kind.as_str(), &reason);
            return;
        }
    };
    if !c.wait_start(id, params.kind.as_str()) {
        return;
    }
    let plan = SidePlan {
        params: params.clone(),
        is_client: false,
        tag,
        start: Instant::now(),
        affinity: Vec::new(),
        file: new_file.as_ref().map(|f| Arc::clone(&f.file)),
    };
    let soak = params
        .soak
        .then(|| sh.cfg.soak.as_ref().map(|f| f(local_ip)))
        .flatten();
    let mut run = run_side(&c.sock, &plan, conns, soak);
    let file_log = new_file.and_then(|f| finish_file(f, params, &mut run.results));
    c.send_results(&run.results);
    log_test(c, id, params, test_slot.memory, &run.results, file_log);
    sh.served_one();
}

/// Run the server's side of a started test: intervals go out on the control connection;
/// Done, an error or a close come in. When the client goes away, its data connections are
/// shut down so the streams end at once. A soak's counter samples follow: one at the start,
/// then one after each interval, written by the same thread so frames never interleave.
fn run_side(
    sock: &TcpStream,
    plan: &SidePlan,
    conns: Vec<Conn>,
    soak: Option<side::SoakSampler>,
) -> side::SideRun {
    let stop = Stop::new();
    let data_handles: Vec<TcpStream> = conns
        .iter()
        .filter_map(|c| match c {
            Conn::Tcp(t) => t.try_clone().ok(),
            Conn::Udp { .. } => None,
        })
        .collect();
    let watcher = watch_control(
        sock,
        plan.start,
        Duration::from_millis(plan.params.duration_ms) + side::GRACE,
        &stop,
        move || {
            for h in &data_handles {
                let _ = h.shutdown(Shutdown::Both);
            }
        },
    );
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
    let run = side::run(plan, conns, &mut sink, &stop);
    let _ = watcher.join();
    run
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
    })));
}

/// Watch a running test's control connection until the client's `Done`, the test's time
/// limit, or `stop`. When the client goes away or misbehaves, set `stop` and run `abort`.
fn watch_control(
    sock: &TcpStream,
    start: Instant,
    limit: Duration,
    stop: &Stop,
    abort: impl FnOnce() + Send + 'static,
) -> thread::JoinHandle<()> {
    let stop = stop.clone();
    let mut r = sock.try_clone().ok();
    thread::spawn(move || {
        let Some(r) = r.as_mut() else { return };
        let _ = r.set_read_timeout(Some(Duration::from_millis(200)));
        loop {
            match read_msg(r, MAX_CONTROL_FRAME) {
                Ok(Msg::Done) => return,
                Err(FrameError::Timeout) => {
                    if start.elapsed() > limit || stop.is_set() {
                        return;
                    }
                }
                // The client went away or misbehaved: stop the test.
                _ => {
                    stop.set();
                    abort();
                    return;
                }
            }
        }
    })
}

/// An RDMA test: libfabric listeners instead of data connections, the engine's target
/// threads instead of stream threads; the same handshake, watcher and results.
fn rdma_test(
    c: &mut Control<'_>,
    params: &TestParams,
    r: &linerate_proto::RdmaSpec,
    slot: &mut HandshakeSlot<'_>,
    memory: u64,
) {
    let sh = c.sh;
    let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
    let local_ip = c
        .sock
        .local_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let listeners = match crate::rdma::listen(local_ip, r) {
        Ok(l) => l,
        Err(reason) => {
            c.refuse(RefusalKind::Unsupported, &reason, params);
            return;
        }
    };
    let accepted = Msg::Accepted {
        test_id: id,
        cookie: random_hex(16),
        udp_port: None,
        memory_bytes: memory,
        inventory: inventory(sh, local_ip),
        rdma: Some(listeners.listen.clone()),
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
    let watcher = watch_control(&c.sock, start, limit, &stop, || {});
    let results = crate::rdma::serve(listeners, params, r, &stop, start + limit);
    stop.set();
    let _ = watcher.join();
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

/// End a file transfer: make a complete file durable (when asked) and keep it;
/// remove an incomplete one. What happened, for the log line.
fn finish_file(
    f: crate::writedir::NewFile,
    params: &linerate_proto::TestParams,
    results: &mut linerate_proto::SideResults,
) -> Option<FileLog> {
    let spec = params.file.as_ref()?;
    let written: u64 = results
        .streams
        .iter()
        .filter_map(|s| s.file.map(|f| f.disk_bytes))
        .sum();
    let mut complete = results.error.is_none() && written == spec.size;
    if results.error.is_none() && written != spec.size {
        results.error = Some(format!("wrote {written} of the file's {} bytes", spec.size));
    }
    if complete && !f.still_there() {
        results.error = Some(format!(
            "`{}` was removed or replaced in the write directory during the transfer",
            f.name()
        ));
        complete = false;
    }
    if complete && spec.fsync {
        let t = Instant::now();
        match f.file.sync_all() {
            Ok(()) => results.fsync_s = Some(t.elapsed().as_secs_f64()),
            Err(e) => {
                results.error = Some(format!("fsync of the received file: {e}"));
                complete = false;
            }
        }
    }
    let path = f.path().display().to_string();
    let kept = complete && !spec.remove_after;
    if kept {
        f.keep();
    } else {
        drop(f);
    }
    Some(FileLog {
        path,
        size: spec.size,
        written,
        kept,
    })
}

/// Wait for the test's data connections (TCP) or UDP registrations.
fn collect(
    p: &linerate_proto::TestParams,
    rx: &Receiver<DataConn>,
    udp_sock: Option<&Arc<UdpSocket>>,
    timeout: Duration,
) -> Result<Vec<Conn>, String> {
    let n = p.connections() as usize;
    if let Some(u) = udp_sock {
        // The client registers each stream by datagram; learn the addresses now.
        let mut peers: Vec<Option<SocketAddr>> = vec![None; n];
        let deadline = Instant::now() + timeout;
        let needs_peer =
            |i: usize| p.kind == TestKind::UdpBw && crate::side::sends(p, i as u32, false);
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
        return Ok(peers
            .into_iter()
            .map(|peer| Conn::Udp {
                sock: Arc::clone(u),
                peer,
            })
            .collect());
    }
    let mut slots: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let deadline = Instant::now() + timeout;
    let mut have = 0;
    while have < n {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "only {have} of {n} data connections arrived within {:.1} s",
                timeout.as_secs_f64()
            ));
        }
        match rx.recv_timeout(left) {
            Ok((i, s)) if (i as usize) < n && slots[i as usize].is_none() => {
                let _ = s.set_read_timeout(None);
                let _ = s.set_write_timeout(None);
                if let Some(w) = p.window {
                    let r = socket2::SockRef::from(&s);
                    let _ = r.set_recv_buffer_size(w as usize);
                    let _ = r.set_send_buffer_size(w as usize);
                }
                if let Some(c) = &p.congestion {
                    let _ = socket2::SockRef::from(&s).set_tcp_congestion(c.as_bytes());
                }
                slots[i as usize] = Some(s);
                have += 1;
            }
            Ok(_) => {}
            Err(_) => {
                return Err(format!(
                    "only {have} of {n} data connections arrived within {:.1} s",
                    timeout.as_secs_f64()
                ))
            }
        }
    }
    Ok(slots.into_iter().flatten().map(Conn::Tcp).collect())
}

/// This host's inventory for the interface holding `ip`. Not cached: shapers,
/// MTU and counters change between tests.
fn inventory(sh: &Shared, ip: IpAddr) -> Option<Box<linerate_facts::HostFacts>> {
    sh.cfg.inventory.as_ref().and_then(|f| f(ip)).map(Box::new)
}
