//! `linerate bench HOST`: the client side of a test.

use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::lat::Rtt;
use linerate_engine::meter::Stop;
use linerate_engine::udp;
use linerate_facts::HostFacts;
use linerate_proto::soak::{End, SoakSample};
use linerate_proto::{
    defaults, random_hex, read_msg, write_msg, FrameError, IntervalSample, Msg, Psk, RefusalKind,
    SideResults, TestKind, TestParams, MAGIC, MAX_RESULTS_FRAME, PROTOCOL_VERSION,
};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use thiserror::Error;

use crate::side::{self, Conn, SidePlan};

#[derive(Clone)]
pub struct ClientConfig {
    pub server: SocketAddr,
    /// Local address to bind (`-B`).
    pub bind: Option<IpAddr>,
    pub params: TestParams,
    pub psk: Option<Psk>,
    /// CPUs to pin stream threads to (`-A`).
    pub affinity: Vec<usize>,
    pub connect_timeout: Duration,
    /// How to describe the local interface the test uses.
    pub inventory: Option<crate::InventoryFn>,
    /// File transfers: the file to send (its size is in `params.file`).
    pub file: Option<Arc<std::fs::File>>,
    /// Soaks: how this host samples its port counters (`params.soak`).
    pub soak: Option<crate::SoakSamplerFn>,
}

impl ClientConfig {
    /// How long a connection to the server may take by default.
    pub const CONNECT_TIMEOUT: Duration = defaults::CONNECT_TIMEOUT;

    /// A client for `params` against `server`: no source address, key, pinning, inventory or
    /// file (set the fields that apply).
    pub fn new(server: SocketAddr, params: TestParams) -> Self {
        Self {
            server,
            bind: None,
            params,
            psk: None,
            affinity: Vec::new(),
            connect_timeout: Self::CONNECT_TIMEOUT,
            inventory: None,
            file: None,
            soak: None,
        }
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("server", &self.server)
            .field("bind", &self.bind)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// Failures before any measurement: nothing to report but the reason.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The control connection could not be made; the message says what to do about it.
    #[error("connecting to {addr}: {err}{}", connect_hint(*.addr, .err, *.timeout))]
    Connect {
        addr: SocketAddr,
        err: std::io::Error,
        /// How long the connection was given (named when it timed out).
        timeout: Duration,
    },
    #[error("the server refused the test: {reason}")]
    Refused { kind: RefusalKind, reason: String },
    #[error("the server said: {0}")]
    Server(String),
    #[error("the server at {0} requires a pre-shared key: pass --psk-file FILE, a file holding the same key as the one given to its `linerate serve --psk-file`")]
    NeedsKey(SocketAddr),
    #[error(
        "the server failed to prove it knows the pre-shared key: refusing to trust its results"
    )]
    ServerProof,
    #[error("the server does not ask for the pre-shared key given with --psk-file: refusing to trust a server that cannot prove it knows it (drop --psk-file to test against an open server)")]
    ServerNoAuth,
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("setting up data connections: {0}")]
    Data(String),
}

impl ClientError {
    /// The kind of the server's refusal, when the server refused the test.
    pub fn refusal_kind(&self) -> Option<RefusalKind> {
        match self {
            Self::Refused { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// What to do about a failed connection, after the OS error: the cases a first-time user meets.
fn connect_hint(addr: SocketAddr, err: &std::io::Error, timeout: Duration) -> String {
    use std::io::ErrorKind as K;
    let (ip, port) = (addr.ip(), addr.port());
    match err.kind() {
        K::ConnectionRefused if port == linerate_proto::DEFAULT_PORT => format!(
            ": no `linerate serve` listens on port {port} of {ip}; start one there with `linerate serve`, or pass -p PORT if it listens on another port"
        ),
        K::ConnectionRefused => format!(
            ": no `linerate serve` listens on port {port} of {ip}; start one there with `linerate serve -p {port}`, or pass the port it listens on with -p PORT (default {})",
            linerate_proto::DEFAULT_PORT
        ),
        // A SYN that gets no answer at all: a firewall that drops rather than rejects is by
        // far the most common cause; a host that is down or a wrong address are the others.
        K::TimedOut | K::WouldBlock => format!(
            ": no answer within {} s; packets to TCP port {port} are probably dropped by a firewall on {ip} or on the way (or the host is down): open TCP port {port} there, or run the server on a port that is open and pass it with -p PORT",
            linerate_units::fmt_round(timeout.as_secs_f64(), 1)
        ),
        K::HostUnreachable | K::NetworkUnreachable => format!(
            ": this host has no route to {ip}; check the address, and the route with `ip route get {ip}`"
        ),
        K::AddrNotAvailable => {
            ": the local address given with -B is not an address of this host".to_string()
        }
        K::PermissionDenied => format!(
            ": a firewall rule or security policy on this host forbids connecting to {addr}"
        ),
        _ => String::new(),
    }
}

impl From<FrameError> for ClientError {
    fn from(e: FrameError) -> Self {
        Self::Protocol(e.to_string())
    }
}

/// What the client shows while a test runs.
#[derive(Debug, Clone)]
pub enum Event {
    /// The test is accepted and about to start.
    Started { server_memory_bytes: u64 },
    /// An interval measured on this host.
    Local(IntervalSample),
    /// An interval measured on the server, streamed over the control connection.
    Remote(IntervalSample),
    /// A soak: this host's port counters (at the start, then after each local interval).
    LocalSoak(SoakSample),
    /// A soak: the server's port counters, streamed over the control connection.
    RemoteSoak(SoakSample),
}

/// Everything the client knows at the end, complete or not.
#[derive(Debug)]
pub struct ClientRun {
    pub params: TestParams,
    pub server: SocketAddr,
    pub local_addr: Option<SocketAddr>,
    pub local: SideResults,
    pub remote: Option<SideResults>,
    pub remote_intervals: Vec<IntervalSample>,
    pub rtt: Option<Rtt>,
    pub local_inventory: Option<HostFacts>,
    pub remote_inventory: Option<HostFacts>,
    /// RDMA tests: what the client's queue pairs measured.
    pub rdma: Option<crate::rdma::RdmaRun>,
    /// Set when the test did not complete; the results above are what was measured.
    pub error: Option<String>,
}

/// The client side of an RDMA test, after `accepted`.
fn run_rdma(
    cfg: &ClientConfig,
    mut ctl: TcpStream,
    listen: &linerate_proto::RdmaListen,
    r: &linerate_proto::RdmaSpec,
    memory: u64,
    (local_addr, local_inventory, remote_inventory): (
        Option<SocketAddr>,
        Option<HostFacts>,
        Option<HostFacts>,
    ),
    events: &mut dyn FnMut(Event),
) -> Result<ClientRun, ClientError> {
    write_msg(&mut ctl, &Msg::Start)?;
    events(Event::Started {
        server_memory_bytes: memory,
    });
    let local_ip = local_addr.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let stop = Stop::new();
    let rr = crate::rdma::run_client(
        cfg.server.ip(),
        local_ip,
        listen,
        &cfg.params,
        r,
        &stop,
        &mut |s| events(Event::Local(s)),
    );
    let _ = write_msg(&mut ctl, &Msg::Done);
    // The server answers once its targets have ended (bounded by its own deadline).
    let _ = ctl.set_read_timeout(Some(side::GRACE + defaults::CONTROL_TIMEOUT));
    let (remote, reader_err) = match read_msg(&mut ctl, MAX_RESULTS_FRAME) {
        Ok(Msg::Results { results }) => (Some(crate::peer::sanitize(results, 0)), None),
        Ok(Msg::Error { message }) => (None, Some(format!("the server reported: {message}"))),
        Ok(other) => (
            None,
            Some(format!("protocol: expected results, got {}", other.name())),
        ),
        Err(e) => (
            None,
            Some(format!("lost the control connection to the server: {e}")),
        ),
    };
    let _ = ctl.shutdown(Shutdown::Both);
    let mut errors: Vec<String> = rr
        .errors
        .iter()
        .map(|e| format!("this host: {e}"))
        .collect();
    errors.extend(reader_err);
    if let Some(e) = remote.as_ref().and_then(|r| r.error.as_ref()) {
        errors.push(format!("server: {e}"));
    }
    let local = SideResults {
        cpu: rr.cpu,
        intervals: rr.intervals.clone(),
        error: (!rr.errors.is_empty()).then(|| rr.errors.join("; ")),
        ..SideResults::default()
    };
    Ok(ClientRun {
        params: cfg.params.clone(),
        server: cfg.server,
        local_addr,
        local,
        remote,
        remote_intervals: Vec::new(),
        rtt: None,
        local_inventory,
        remote_inventory,
        rdma: Some(rr),
        error: (!errors.is_empty()).then(|| errors.join("; ")),
    })
}

fn connect(cfg: &ClientConfig) -> Result<TcpStream, ClientError> {
    let err = |e: std::io::Error| ClientError::Connect {
        addr: cfg.server,
        err: e,
        timeout: cfg.connect_timeout,
    };
    let s = Socket::new(
        Domain::for_address(cfg.server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(err)?;
    if let Some(ip) = cfg.bind {
        s.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(err)?;
    }
    s.connect_timeout(&SockAddr::from(cfg.server), cfg.connect_timeout)
        .map_err(err)?;
    Ok(s.into())
}

fn data_socket(cfg: &ClientConfig) -> Result<TcpStream, ClientError> {
    let p = &cfg.params;
    let s = Socket::new(
        Domain::for_address(cfg.server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| ClientError::Data(e.to_string()))?;
    if let Some(ip) = cfg.bind {
        s.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(|e| ClientError::Data(format!("binding {ip}: {e}")))?;
    }
    if let Some(w) = p.window {
        // Before connect, so the window scale is negotiated for it.
        let _ = s.set_send_buffer_size(w as usize);
        let _ = s.set_recv_buffer_size(w as usize);
    }
    if let Some(c) = &p.congestion {
        s.set_tcp_congestion(c.as_bytes())
            .map_err(|e| ClientError::Data(format!("congestion control `{c}`: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)")))?;
    }
    if p.kind == TestKind::TcpLat {
        let _ = s.set_nodelay(true);
    }
    s.connect_timeout(&SockAddr::from(cfg.server), cfg.connect_timeout)
        .map_err(|e| {
            ClientError::Data(format!("connecting a data stream to {}: {e}", cfg.server))
        })?;
    Ok(s.into())
}

/// What the server's `accepted` says.
struct Accepted {
    memory: u64,
    cookie: String,
    udp_port: Option<u16>,
    inventory: Option<HostFacts>,
    rdma: Option<linerate_proto::RdmaListen>,
}

fn handshake(cfg: &ClientConfig, ctl: &mut TcpStream) -> Result<Accepted, ClientError> {
    let nonce = random_hex(16);
    write_msg(
        ctl,
        &Msg::Hello {
            magic: MAGIC.into(),
            protocol: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
            nonce: nonce.clone(),
        },
    )?;
    let hello = read_msg(ctl, MAX_RESULTS_FRAME).map_err(|e| match e {
        // A server over its `--max-pending` closes new connections before any answer.
        FrameError::Closed => ClientError::Protocol(format!(
            "the server at {} closed the connection before answering: it is busy with other connections (serve --max-pending), or it is not a linerate server; try again shortly",
            cfg.server
        )),
        e => e.into(),
    })?;
    let (auth, server_nonce) = match hello {
        Msg::ServerHello { protocol, auth, nonce, .. } if protocol == PROTOCOL_VERSION => (auth, nonce),
        Msg::ServerHello { protocol, version, .. } => {
            return Err(ClientError::Protocol(format!(
                "the server at {} runs linerate {version} (protocol {protocol}), this host linerate {} (protocol {PROTOCOL_VERSION}): install the same linerate version on both hosts",
                cfg.server,
                env!("CARGO_PKG_VERSION")
            )))
        }
        Msg::Error { message } => return Err(ClientError::Server(message)),
        other => return Err(ClientError::Protocol(format!("unexpected {other:?}"))),
    };
    if !auth && cfg.psk.is_some() {
        return Err(ClientError::ServerNoAuth);
    }
    if auth {
        let psk = cfg.psk.as_ref().ok_or(ClientError::NeedsKey(cfg.server))?;
        write_msg(
            ctl,
            &Msg::Auth {
                proof: psk.client_proof(&server_nonce, &nonce),
            },
        )?;
        match read_msg(ctl, MAX_RESULTS_FRAME)? {
            Msg::AuthOk { proof } if psk.verify_server(&nonce, &server_nonce, &proof) => {}
            Msg::AuthOk { .. } => return Err(ClientError::ServerProof),
            // The only error a server sends here is a wrong key.
            Msg::Error { message } => {
                return Err(ClientError::Server(format!(
                    "{message}; --psk-file must hold the same key as the one given to the server's `linerate serve --psk-file`"
                )))
            }
            other => return Err(ClientError::Protocol(format!("unexpected {other:?}"))),
        }
    }
    write_msg(
        ctl,
        &Msg::Request {
            params: cfg.params.clone(),
        },
    )?;
    match read_msg(ctl, MAX_RESULTS_FRAME)? {
        Msg::Accepted {
            memory_bytes,
            cookie,
            udp_port,
            inventory,
            rdma,
            ..
        } => Ok(Accepted {
            memory: memory_bytes,
            cookie,
            udp_port,
            inventory: inventory.map(|b| *b),
            rdma,
        }),
        Msg::Refused { reason, kind } => Err(ClientError::Refused { kind, reason }),
        Msg::Error { message } => Err(ClientError::Server(message)),
        other => Err(ClientError::Protocol(format!("unexpected {other:?}"))),
    }
}

fn open_data(
    cfg: &ClientConfig,
    cookie: &str,
    udp_port: Option<u16>,
    local: IpAddr,
) -> Result<Vec<Conn>, ClientError> {
    let p = &cfg.params;
    let n = p.connections();
    let mut conns = Vec::new();
    if p.kind.is_udp() {
        let port = udp_port
            .ok_or_else(|| ClientError::Protocol("no UDP port in the server's answer".into()))?;
        let dest = SocketAddr::new(cfg.server.ip(), port);
        let tag = udp::tag(cookie);
        for i in 0..n {
            let u = UdpSocket::bind(SocketAddr::new(local, 0))
                .map_err(|e| ClientError::Data(format!("UDP socket: {e}")))?;
            u.connect(dest)
                .map_err(|e| ClientError::Data(format!("UDP to {dest}: {e}")))?;
            let r = socket2::SockRef::from(&u);
            let _ = r.set_recv_buffer_size(p.window.map_or(8 << 20, |w| w as usize));
            let _ = r.set_send_buffer_size(p.window.map_or(8 << 20, |w| w as usize));
            if p.kind == TestKind::UdpBw && side::sends(p, i, false) {
                udp::register(&u, tag, i, 30).map_err(ClientError::Data)?;
            }
            conns.push(Conn::Udp {
                sock: Arc::new(u),
                peer: None,
            });
        }
    } else {
        for i in 0..n {
            let mut s = data_socket(cfg)?;
            write_msg(
                &mut s,
                &Msg::DataHello {
                    cookie: cookie.to_string(),
                    stream: i,
                },
            )?;
            conns.push(Conn::Tcp(s));
        }
    }
    Ok(conns)
}

/// What the control reader ends with: the server's results, or why there are none.
type ReaderEnd = (Option<SideResults>, Option<String>);

/// Read the control connection while the test runs: the server's intervals go to `tx`, its
/// results end the thread. A server that misbehaves or goes away sets `abort`.
fn control_reader(
    ctl: &TcpStream,
    params: &TestParams,
    start: Instant,
    tx: mpsc::Sender<IntervalSample>,
    soak_tx: mpsc::Sender<SoakSample>,
    abort: &Stop,
) -> Result<thread::JoinHandle<ReaderEnd>, ClientError> {
    let limit = Duration::from_millis(params.duration_ms) + side::GRACE + defaults::CONTROL_TIMEOUT;
    let mut reader = ctl
        .try_clone()
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
    let reader_abort = abort.clone();
    // A server may stream at most this many intervals, each for exactly our connections.
    let conns_n = params.connections() as usize;
    let every = params.interval_ms.max(100);
    let max_samples = 2 * params.duration_ms / every + 10;
    let soak = params.soak;
    Ok(thread::spawn(move || -> ReaderEnd {
        let _ = reader.set_read_timeout(Some(Duration::from_millis(250)));
        let mut samples: u64 = 0;
        let mut soak_samples: u64 = 0;
        loop {
            match read_msg(&mut reader, MAX_RESULTS_FRAME) {
                // Only a soak streams counters: one baseline, then one per interval.
                Ok(Msg::SoakSample { mut sample }) if soak => {
                    soak_samples += 1;
                    if soak_samples > max_samples + 1 {
                        reader_abort.set();
                        return (None, Some(format!("protocol: the server sent {soak_samples} soak samples; expected at most {}", max_samples + 1)));
                    }
                    // The server is the remote end, whatever it wrote.
                    sample.end = End::Remote;
                    let _ = soak_tx.send(sample);
                }
                Ok(Msg::Interval { sample }) => {
                    samples += 1;
                    if sample.bytes.len() != conns_n || samples > max_samples {
                        reader_abort.set();
                        return (None, Some(format!("protocol: the server sent {samples} interval(s), the last for {} streams; expected at most {max_samples} for {conns_n}", sample.bytes.len())));
                    }
                    let _ = tx.send(sample);
                }
                Ok(Msg::Results { results }) => {
                    return (Some(crate::peer::sanitize(results, conns_n)), None)
                }
                Ok(Msg::Error { message }) => {
                    reader_abort.set();
                    return (None, Some(format!("the server reported: {message}")));
                }
                Ok(_) => {}
                Err(FrameError::Timeout) if start.elapsed() < limit => {}
                Err(FrameError::Timeout) => {
                    return (None, Some("the server sent no results in time".into()))
                }
                Err(e) => {
                    reader_abort.set();
                    return (
                        None,
                        Some(format!("lost the control connection to the server: {e}")),
                    );
                }
            }
        }
    }))
}

/// Pass on what the control reader has received from the server so far.
fn drain_remote(
    rx: &mpsc::Receiver<IntervalSample>,
    soak_rx: &mpsc::Receiver<SoakSample>,
    remote_intervals: &mut Vec<IntervalSample>,
    events: &mut dyn FnMut(Event),
) {
    while let Ok(r) = rx.try_recv() {
        remote_intervals.push(r.clone());
        events(Event::Remote(r));
    }
    while let Ok(r) = soak_rx.try_recv() {
        events(Event::RemoteSoak(r));
    }
}

/// Run one test against a server. `Err` only when nothing could be measured.
pub fn run(cfg: &ClientConfig, events: &mut dyn FnMut(Event)) -> Result<ClientRun, ClientError> {
    let mut ctl = connect(cfg)?;
    let _ = ctl.set_nodelay(true);
    let _ = ctl.set_read_timeout(Some(defaults::CONTROL_TIMEOUT));
    let _ = ctl.set_write_timeout(Some(defaults::CONTROL_TIMEOUT));
    let acc = handshake(cfg, &mut ctl)?;
    let (memory, cookie, udp_port, remote_inventory) =
        (acc.memory, acc.cookie, acc.udp_port, acc.inventory);
    let local_addr = ctl.local_addr().ok();
    let local_ip = local_addr.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let local_inventory = cfg.inventory.as_ref().and_then(|f| f(local_ip));
    if let Some(r) = cfg.params.rdma.as_ref() {
        let listen = acc.rdma.ok_or_else(|| {
            ClientError::Protocol("the server's answer has no RDMA listeners".into())
        })?;
        return run_rdma(
            cfg,
            ctl,
            &listen,
            r,
            memory,
            (local_addr, local_inventory, remote_inventory),
            events,
        );
    }
    let conns = open_data(cfg, &cookie, udp_port, local_ip)?;
    write_msg(&mut ctl, &Msg::Start)?;
    let start = Instant::now();
    events(Event::Started {
        server_memory_bytes: memory,
    });

    // The control reader: remote intervals, then the server's results.
    let (tx, rx) = mpsc::channel::<IntervalSample>();
    let (soak_tx, soak_rx) = mpsc::channel::<SoakSample>();
    let abort = Stop::new();
    let reader_thread = control_reader(&ctl, &cfg.params, start, tx, soak_tx, &abort)?;

    let plan = SidePlan {
        params: cfg.params.clone(),
        is_client: true,
        tag: udp::tag(&cookie),
        start,
        affinity: cfg.affinity.clone(),
        file: cfg.file.clone(),
    };
    let mut remote_intervals = Vec::new();
    let mut soak = cfg
        .soak
        .as_ref()
        .filter(|_| cfg.params.soak)
        .map(|f| side::Soak::new(f(local_ip), &plan));
    if let Some(k) = soak.as_mut() {
        events(Event::LocalSoak(k.first()));
    }
    let run = {
        let mut sink = |s: &IntervalSample| {
            events(Event::Local(s.clone()));
            if let Some(k) = soak.as_mut() {
                events(Event::LocalSoak(k.after(s)));
            }
            drain_remote(&rx, &soak_rx, &mut remote_intervals, events);
        };
        side::run(&plan, conns, &mut sink, &abort)
    };
    let _ = write_msg(&mut ctl, &Msg::Done);
    let (remote, reader_err) = reader_thread
        .join()
        .unwrap_or((None, Some("control reader failed".into())));
    drain_remote(&rx, &soak_rx, &mut remote_intervals, events);
    let _ = ctl.shutdown(Shutdown::Both);
    let mut errors: Vec<String> = Vec::new();
    if let Some(e) = &run.results.error {
        errors.push(format!("this host: {e}"));
    }
    if let Some(e) = reader_err {
        errors.push(e);
    }
    if let Some(e) = remote.as_ref().and_then(|r| r.error.as_ref()) {
        errors.push(format!("server: {e}"));
    }
    Ok(ClientRun {
        params: cfg.params.clone(),
        server: cfg.server,
        local_addr,
        local: run.results,
        remote,
        remote_intervals,
        rtt: run.rtt,
        local_inventory,
        remote_inventory,
        rdma: None,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
    })
}
