//! `linerate serve`: many clients and tests at once, each bounded in memory and time.
//!
//! This module is what every wire protocol shares: the accept loop and its shedding, the
//! handshake slots and deadline, the test slots and memory accounting, the registry of tests
//! waiting for their data connections, the served count, the log, and running a side with a
//! watcher on its control connection. A connection's protocol is told apart by its first bytes
//! ([`Opening`]): linerate's control protocol is the module [`linerate`], iperf3's the module
//! [`iperf3`]; a client of another protocol is one more arm of [`handle`] and one more module.
//!
//! Every listener (serve's port, and `--iperf3-port`'s) serves both protocols, and has a UDP
//! socket on its port number for iperf3's UDP streams ([`iperf3::UdpPort`]).

use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::meter::{Sink, Stop};
use linerate_iperf3::{Cookie, Sniff, COOKIE_LEN};
use linerate_proto::{random_hex, FrameError, TestParams, PROTOCOL_VERSION};

pub use crate::serverconfig::ServerConfig;
use crate::serverlog::{Iperf3Listening, ServerLog};
use crate::shutdown::ShutdownTrigger;
use crate::side::{self, SidePlan, Wired};

mod iperf3;
mod linerate;

/// A data connection as it arrives.
#[derive(Debug)]
pub(crate) struct DataConn {
    /// The stream index it says it is (linerate's `data_hello`); 0 for a protocol whose data
    /// connections say none (iperf3's: their order of arrival gives their roles).
    pub index: u32,
    /// Its place in the order the listener accepted connections: a client that opens its
    /// streams one after another (iperf3's) has them accepted in that order, whatever order
    /// the threads reading their first bytes finish in.
    pub arrival: u64,
    pub sock: TcpStream,
}

/// Reads that share one deadline: a client dripping a byte at a time cannot
/// stretch its handshake past `--handshake-timeout`.
pub(crate) struct Deadline<'a> {
    pub sock: &'a TcpStream,
    pub at: Instant,
}

impl Deadline<'_> {
    /// The time left, or a timeout error when there is none.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "handshake deadline passed",
            ));
        }
        Ok(left)
    }

    /// Look at the first byte without taking it.
    fn peek_one(&self) -> std::io::Result<Option<u8>> {
        self.sock.set_read_timeout(Some(self.left()?))?;
        let mut b = [0u8; 1];
        loop {
            match self.sock.peek(&mut b) {
                Ok(0) => return Ok(None),
                Ok(_) => return Ok(Some(b[0])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl std::io::Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.sock.set_read_timeout(Some(self.left()?))?;
        std::io::Read::read(&mut self.sock, buf)
    }
}

/// The state every connection and test of one server shares.
pub(crate) struct Shared {
    pub cfg: ServerConfig,
    /// Tests waiting for their data connections, by cookie.
    pending: Mutex<HashMap<String, SyncSender<DataConn>>>,
    handshaking: AtomicU32,
    tests: AtomicU32,
    memory: AtomicU64,
    next_id: AtomicU64,
    served: AtomicU64,
    /// Where the accept loop listens, to wake it when the last test allowed has run.
    wake: Option<SocketAddr>,
    /// Connections accepted so far, on every listener (each one's arrival number).
    accepted: AtomicU64,
    /// The server is ending: the accept loops of the other listeners and the UDP sockets'
    /// readers stop.
    closing: AtomicBool,
}

impl Shared {
    /// Count a test that ran; past `max_served`, wake the accept loop (blocked in `accept`)
    /// with a connection of our own, so `serve --once` ends when its test does rather than at
    /// the next client.
    pub fn served_one(&self) {
        let n = self.served.fetch_add(1, Ordering::SeqCst) + 1;
        if self.cfg.max_served.is_some_and(|max| n >= max) {
            if let Some(addr) = self.wake {
                let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
            }
        }
    }

    pub fn log(&self, event: &ServerLog) {
        if self.cfg.log {
            event.print();
        }
    }

    /// The id of a test the server accepts.
    pub fn next_test_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }

    /// Reserve a test slot and `memory` bytes of buffers, against `--max-tests` and
    /// `--max-memory`; the reason names the limit when the server is busy.
    pub fn reserve(&self, memory: u64) -> Result<TestSlot<'_>, String> {
        // Reserve atomically enough: check after the increment.
        let running = self.tests.fetch_add(1, Ordering::SeqCst) + 1;
        let used = self.memory.fetch_add(memory, Ordering::SeqCst) + memory;
        let slot = TestSlot {
            sh: self,
            memory,
            cookie: None,
        };
        let limit = self.cfg.limits.max_tests;
        if running > limit {
            return Err(format!("server busy: {} tests running, the limit is {limit} (serve --max-tests); try again shortly", running - 1));
        }
        let max = self.cfg.max_memory_bytes;
        if used > max {
            return Err(format!("server busy: this test needs {memory} bytes of buffers and only {} of {max} are free (serve --max-memory)", max.saturating_sub(used - memory)));
        }
        Ok(slot)
    }

    /// Hand a data connection to the test waiting for `cookie`; the socket back when no test
    /// waits for it. A test that has all its connections already drops one more (closing it).
    pub fn deliver(&self, cookie: &str, conn: DataConn) -> Result<(), TcpStream> {
        let tx = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(cookie)
            .cloned();
        match tx {
            Some(tx) => {
                let _ = tx.try_send(conn);
                Ok(())
            }
            None => Err(conn.sock),
        }
    }

    /// Tests running or being set up now (each holds a slot).
    pub fn tests_running(&self) -> u32 {
        self.tests.load(Ordering::SeqCst)
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// This host's inventory for the interface holding `ip`. Not cached: shapers, MTU and
    /// counters change between tests.
    pub fn inventory(&self, ip: IpAddr) -> Option<Box<linerate_facts::HostFacts>> {
        self.cfg
            .inventory
            .as_ref()
            .and_then(|f| f(ip))
            .map(Box::new)
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
    let listener = bind(cfg.bind)?;
    serve_on(&listener, cfg)
}

/// Bind a listener, or say why not and what to do.
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).map_err(|e| {
        let hint = bind_hint(addr, &e);
        std::io::Error::new(e.kind(), format!("binding {addr}: {e}{hint}"))
    })
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

/// One listening port: the TCP listener's address, and the UDP socket on its port number for
/// iperf3's UDP streams (None when it could not be bound: iperf3 UDP tests are then refused).
pub(crate) struct Port {
    pub addr: SocketAddr,
    pub udp: Option<Arc<iperf3::UdpPort>>,
}

/// Each listener's port, with its UDP socket for iperf3's UDP streams; the UDP ports that
/// could not be bound, and why.
fn ports_of(listeners: &[&TcpListener]) -> std::io::Result<(Vec<Arc<Port>>, Vec<String>)> {
    let mut ports = Vec::new();
    let mut udp_errors = Vec::new();
    for l in listeners {
        let a = l.local_addr()?;
        let udp = match iperf3::UdpPort::bind(a) {
            Ok(u) => Some(Arc::new(u)),
            Err(e) => {
                udp_errors.push(e);
                None
            }
        };
        ports.push(Arc::new(Port { addr: a, udp }));
    }
    Ok((ports, udp_errors))
}

/// The first line of the log: where the server listens, and on what terms.
fn log_listening(
    cfg: &ServerConfig,
    addr: SocketAddr,
    ports: &[Arc<Port>],
    udp_errors: Vec<String>,
) {
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
        iperf3: Iperf3Listening {
            addresses: ports.iter().map(|p| p.addr.to_string()).collect(),
            udp: ports
                .iter()
                .filter_map(|p| p.udp.as_ref().map(|u| u.addr().to_string()))
                .collect(),
            udp_errors,
        },
    }
    .print();
}

/// Serve on an already bound listener (and, with `--iperf3-port`, one more on that port).
pub fn serve_on(listener: &TcpListener, cfg: ServerConfig) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let extra = match cfg.iperf3_port {
        Some(port) => Some(bind(SocketAddr::new(addr.ip(), port))?),
        None => None,
    };
    let mut listeners = vec![listener];
    listeners.extend(extra.as_ref());
    let (ports, udp_errors) = ports_of(&listeners)?;
    if cfg.log {
        log_listening(&cfg, addr, &ports, udp_errors);
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
        accepted: AtomicU64::new(0),
        closing: AtomicBool::new(false),
    });
    let readers: Vec<_> = ports
        .iter()
        .filter_map(|p| p.udp.clone())
        .map(|u| {
            let sh = Arc::clone(&shared);
            thread::Builder::new()
                .name("iperf3-udp".into())
                .spawn(move || u.read(&sh))
        })
        .collect();
    // The other listeners' accept loops run on threads of their own; the first on this one.
    let others: Vec<_> = match extra {
        Some(l) => {
            let (sh, port, stop) = (Arc::clone(&shared), Arc::clone(&ports[1]), shutdown.clone());
            vec![thread::Builder::new()
                .name("accept".into())
                .spawn(move || accept_loop(&l, &sh, &port, stop.as_ref()))]
        }
        None => Vec::new(),
    };
    accept_loop(listener, &shared, &ports[0], shutdown.as_ref());
    // Wake and end the others.
    shared.closing.store(true, Ordering::SeqCst);
    for p in &ports[1..] {
        let _ = TcpStream::connect_timeout(&wake_address(p.addr), Duration::from_secs(1));
    }
    for t in others.into_iter().flatten() {
        let _ = t.join();
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
    for t in readers.into_iter().flatten() {
        let _ = t.join();
    }
    Ok(())
}

/// Accept connections on one listener until the server ends (the tests allowed have run, it
/// was ended early, or another listener's loop ended it), each on a thread of its own.
fn accept_loop(
    listener: &TcpListener,
    shared: &Arc<Shared>,
    port: &Arc<Port>,
    shutdown: Option<&ShutdownTrigger>,
) {
    let ended = |sh: &Shared| {
        sh.is_closing()
            || shutdown.is_some_and(ShutdownTrigger::is_triggered)
            || sh
                .cfg
                .max_served
                .is_some_and(|max| sh.served.load(Ordering::SeqCst) >= max)
    };
    for conn in listener.incoming() {
        if ended(shared) {
            break;
        }
        let Ok(sock) = conn else { continue };
        let arrival = shared.accepted.fetch_add(1, Ordering::SeqCst);
        if shared.handshaking.load(Ordering::SeqCst) >= shared.cfg.max_pending {
            // Shed load: a flood of idle connections cannot pin threads or memory.
            let _ = sock.shutdown(Shutdown::Both);
            continue;
        }
        shared.handshaking.fetch_add(1, Ordering::SeqCst);
        let sh = Arc::clone(shared);
        let port = Arc::clone(port);
        let spawned = thread::Builder::new().name("conn".into()).spawn(move || {
            let peer = sock.peer_addr().ok();
            handle(&sh, sock, peer, arrival, &port);
        });
        if spawned.is_err() {
            shared.handshaking.fetch_sub(1, Ordering::SeqCst);
        }
        if ended(shared) {
            break;
        }
    }
}

/// Releases the handshake slot once, when the connection leaves the handshake phase.
pub(crate) struct HandshakeSlot<'a>(&'a Shared, bool);

impl HandshakeSlot<'_> {
    pub fn release(&mut self) {
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

/// What a new connection's first bytes say it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opening {
    /// linerate's control protocol: a frame, whose big-endian length (at most 64 KiB from a
    /// client) starts with a 0 byte. Nothing was taken from the socket.
    Linerate,
    /// An iperf3 client's control or data connection: its cookie, taken from the socket.
    Iperf3(Cookie),
    /// Neither: the bytes that said so, taken from the socket.
    Unknown(Vec<u8>),
}

/// Tell a connection's protocol from its first bytes, read within the handshake deadline. A
/// byte that cannot belong to an iperf3 cookie ([`linerate_iperf3::sniff`]) ends the reading at
/// once, so a stray client of another protocol is told apart without waiting for more.
fn first_bytes(sock: &TcpStream, at: Instant) -> Result<Opening, FrameError> {
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => FrameError::Timeout,
        std::io::ErrorKind::UnexpectedEof
        | std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted
        | std::io::ErrorKind::BrokenPipe => FrameError::Closed,
        _ => FrameError::Io(e),
    };
    let mut r = Deadline { sock, at };
    match r.peek_one().map_err(io)? {
        None => return Err(FrameError::Closed),
        Some(0) => return Ok(Opening::Linerate),
        Some(_) => {}
    }
    let mut cookie = [0u8; COOKIE_LEN];
    let mut got = 0;
    while got < COOKIE_LEN {
        match r.read(&mut cookie[got..]) {
            Ok(0) => {
                return Err(FrameError::Truncated {
                    got,
                    len: COOKIE_LEN as u32,
                })
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
        if let Sniff::NotCookie { .. } = linerate_iperf3::sniff(&cookie[..got]) {
            return Ok(Opening::Unknown(cookie[..got].to_vec()));
        }
    }
    Ok(Opening::Iperf3(Cookie::from_bytes(cookie)))
}

/// A few bytes for a log line: hex, and as text where printable.
fn show_bytes(b: &[u8]) -> String {
    let b = &b[..b.len().min(16)];
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let text: String = b
        .iter()
        .map(|&x| {
            if x.is_ascii_graphic() || x == b' ' {
                x as char
            } else {
                '.'
            }
        })
        .collect();
    format!("{} (\"{text}\")", hex.join(" "))
}

/// A new connection: tell its protocol apart, then hand it to that protocol's module.
fn handle(sh: &Shared, sock: TcpStream, peer: Option<SocketAddr>, arrival: u64, port: &Port) {
    let mut slot = HandshakeSlot(sh, false);
    let peer_s = peer.map_or("?".into(), |p| p.to_string());
    // One deadline for the whole handshake, from accept to start.
    let deadline = Instant::now() + sh.cfg.handshake_timeout;
    let _ = sock.set_write_timeout(Some(sh.cfg.handshake_timeout));
    match first_bytes(&sock, deadline) {
        Ok(Opening::Linerate) => linerate::handle(sh, sock, &peer_s, &mut slot, deadline),
        Ok(Opening::Iperf3(cookie)) => iperf3::handle(
            sh,
            iperf3::Conn {
                sock,
                peer: &peer_s,
                cookie,
                arrival,
                port,
            },
            &mut slot,
            deadline,
        ),
        Ok(Opening::Unknown(bytes)) => sh.log(&ServerLog::Dropped {
            client: peer_s,
            reason: format!(
                "not a linerate or iperf3 client: it opened with {}",
                show_bytes(&bytes)
            ),
        }),
        Err(e) => sh.log(&ServerLog::Dropped {
            client: peer_s,
            reason: e.to_string(),
        }),
    }
}

/// Releases a test's slot, its memory and its place in the registry when dropped.
pub(crate) struct TestSlot<'a> {
    sh: &'a Shared,
    pub memory: u64,
    cookie: Option<String>,
}

impl TestSlot<'_> {
    /// Register the test for its data connections under `cookie`: they come on the receiver
    /// (at most `n`), until the slot is dropped.
    pub fn expect_data(&mut self, cookie: &str, n: usize) -> Receiver<DataConn> {
        let (tx, rx) = mpsc::sync_channel::<DataConn>(n);
        self.sh
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(cookie.to_string(), tx);
        self.cookie = Some(cookie.to_string());
        rx
    }
}

impl Drop for TestSlot<'_> {
    fn drop(&mut self) {
        self.sh.tests.fetch_sub(1, Ordering::SeqCst);
        self.sh.memory.fetch_sub(self.memory, Ordering::SeqCst);
        if let Some(c) = &self.cookie {
            self.sh
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(c);
        }
    }
}

/// Wait for a test's `n` TCP data connections (each says its stream index, below `n`), until
/// `timeout`; each gets the test's socket buffer and congestion control.
pub(crate) fn collect_tcp(
    p: &TestParams,
    rx: &Receiver<DataConn>,
    timeout: Duration,
) -> Result<Vec<TcpStream>, String> {
    let n = p.connections() as usize;
    let mut slots: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let deadline = Instant::now() + timeout;
    let mut have = 0;
    let missing = |have: usize| {
        format!(
            "only {have} of {n} data connections arrived within {:.1} s",
            timeout.as_secs_f64()
        )
    };
    while have < n {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(missing(have));
        }
        match rx.recv_timeout(left) {
            Ok(DataConn {
                index: i, sock: s, ..
            }) if (i as usize) < n && slots[i as usize].is_none() => {
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
            Err(_) => return Err(missing(have)),
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// What a protocol's control connection said, read by [`run_side`]'s watcher while a test
/// runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    /// Nothing yet (a read timed out).
    Nothing,
    /// The client's part is finished.
    Done,
    /// The client went away or misbehaved: the test stops.
    Gone,
}

/// Run the server's side of a started test while a thread watches the control connection with
/// `listen` (called until the client is done, goes away, or the test outlives its time). When
/// the client goes away, the data connections are shut down so the streams end at once; when
/// it is done, the threads that answer it end, and in a test the peer ends
/// ([`side::Ending::Peer`]) the streams stop then, once a receiving side has taken in what was
/// already on its way (`side::run`).
pub(crate) fn run_side(
    plan: &SidePlan,
    wired: Wired,
    sink: &mut dyn Sink,
    listen: impl FnMut() -> Heard + Send + 'static,
) -> side::SideRun {
    let stop = Stop::new();
    let peer_done = Stop::new();
    let data_handles = wired.tcp_handles();
    // A side that sends stops the moment the peer ends the test: what it sent later the peer
    // would not count. One that only receives takes in what is on its way first (side::run).
    let sends = (0..plan.params.connections()).any(|i| plan.params.sends_on(i, false));
    let watcher = watch(
        listen,
        plan.start,
        Duration::from_millis(plan.params.duration_ms) + side::GRACE,
        (&stop, &peer_done),
        plan.ending == side::Ending::Peer && sends,
        move || {
            for h in &data_handles {
                let _ = h.shutdown(Shutdown::Both);
            }
        },
    );
    let run = side::run(plan, wired, sink, &stop, &peer_done);
    let _ = watcher.join();
    run
}

/// Watch a running test's control connection with `listen` until the client is done (set
/// `peer_done`, and `stop` too when `done_stops`: the streams end that moment), the test's time
/// limit, or `stop`. When the client goes away or misbehaves, set `stop` and run
/// `abort`.
pub(crate) fn watch(
    mut listen: impl FnMut() -> Heard + Send + 'static,
    start: Instant,
    limit: Duration,
    (stop, peer_done): (&Stop, &Stop),
    done_stops: bool,
    abort: impl FnOnce() + Send + 'static,
) -> thread::JoinHandle<()> {
    let (stop, peer_done) = (stop.clone(), peer_done.clone());
    thread::spawn(move || loop {
        match listen() {
            Heard::Done => {
                peer_done.set();
                if done_stops {
                    stop.set();
                }
                return;
            }
            Heard::Nothing => {
                if start.elapsed() > limit || stop.is_set() {
                    return;
                }
            }
            Heard::Gone => {
                stop.set();
                abort();
                return;
            }
        }
    })
}

/// A cookie for a test's data connections.
pub(crate) fn new_cookie() -> String {
    random_hex(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_in_the_log_are_hex_and_text() {
        assert_eq!(
            show_bytes(b"GET /\r\n"),
            "47 45 54 20 2f 0d 0a (\"GET /..\")"
        );
    }
}
