//! `linerate bench HOST`: the client side of a test, against a far end of some wire protocol.
//!
//! This module is what every protocol's client shares: the configuration, the errors, the
//! events, the run it ends with ([`ClientRun`], which `crate::kind::assemble` takes), the
//! sockets, and running this end's streams. Each wire protocol is a module with a `run` of the
//! same shape, chosen by [`WireProtocol`]: linerate's own is [`linerate`], a stock iperf3
//! server's is [`iperf3`].

use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_engine::hostcpu::{HostCpu, HostCpuMeter};
use linerate_engine::linkload::LinkSnapshot;
use linerate_engine::meter::{Budget, Stop};
use linerate_engine::udp;
use linerate_proto::soak::SoakSample;
use linerate_proto::{defaults, FrameError, IntervalSample, Psk, RefusalKind, TestParams};
use socket2::{Domain, Protocol as IpProtocol, SockAddr, Socket, Type};
use thiserror::Error;

pub use crate::outcome::ClientRun;
use crate::side::{self, Ending, SidePlan, Wired};

mod iperf3;
mod linerate;

pub use iperf3::{iperf3_plan, Iperf3Plan};

/// The wire protocol of the far end: each is a module of this one with its own `run`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WireProtocol {
    /// linerate's own control protocol (`linerate serve`, `docs/protocol.md`).
    #[default]
    Linerate,
    /// iperf3's (a stock `iperf3 -s`, `bench --iperf3`), with what only it takes.
    Iperf3(Iperf3Options),
}

impl WireProtocol {
    /// The protocol's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Linerate => "linerate",
            Self::Iperf3(_) => "iperf3",
        }
    }
}

/// What a test against a stock iperf3 server takes beyond [`TestParams`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Iperf3Options {
    /// `-n`: the test ends once this host has sent or received this many bytes after the
    /// omitted seconds (instead of after its time).
    pub bytes: Option<u64>,
    /// `-k`: the same in blocks of the write size.
    pub blocks: Option<u64>,
    /// The server's release when known before the test (`--ssh` asks it): what it cannot do
    /// is refused, or left out, before the test.
    pub server_version: Option<linerate_iperf3::Version>,
}

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
    pub soak: Option<linerate_inventory::counters::SoakSamplerFn>,
    /// The wire protocol the far end speaks.
    pub protocol: WireProtocol,
    /// RDMA tests: this end's device (libfabric domain); None: the one the route gives.
    pub rdma_device: Option<String>,
    /// This host's CPU meter, with the far end's processes on this host already found (a
    /// caller running many tests against one far end finds them once); None: each test looks
    /// for them ([`HostCpuMeter::with_far_end`]).
    pub cpu_meter: Option<HostCpuMeter>,
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
            protocol: WireProtocol::Linerate,
            rdma_device: None,
            cpu_meter: None,
        }
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("server", &self.server)
            .field("bind", &self.bind)
            .field("params", &self.params)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

/// Failures before any measurement: nothing to report but the reason.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The control connection could not be made; the message says what to do about it.
    #[error("connecting to {addr}: {err}{}", connect_hint(*.addr, .err, *.timeout, *.iperf3))]
    Connect {
        addr: SocketAddr,
        err: std::io::Error,
        /// How long the connection was given (named when it timed out).
        timeout: Duration,
        /// The far end was to be a stock iperf3 server (`--iperf3`).
        iperf3: bool,
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
    /// A stock iperf3 server would not run the test (busy, SERVER_ERROR, a refused stream):
    /// the message says it in linerate's words, with iperf3's code.
    #[error("{message}")]
    Iperf3 {
        refusal: linerate_iperf3::Iperf3Refusal,
        message: String,
    },
    /// The far end does not speak the client's protocol: the message says what it is, and
    /// what to do (another port, or `--iperf3`).
    #[error("{0}")]
    WrongPeer(String),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("setting up data connections: {0}")]
    Data(String),
}

impl ClientError {
    /// The kind of the server's refusal, when the server refused the test.
    pub fn refusal_kind(&self) -> Option<RefusalKind> {
        use linerate_iperf3::Iperf3Refusal as R;
        match self {
            Self::Refused { kind, .. } => Some(*kind),
            Self::Iperf3 { refusal, .. } => Some(match refusal {
                R::Busy => RefusalKind::Busy,
                R::StreamRefused => RefusalKind::Unsupported,
                // Codes below 100 are a parameter out of the server's range; the others its
                // own failures.
                R::ServerError(e) if e.code.0 < 100 => RefusalKind::OverLimit,
                R::ServerError(_) => RefusalKind::ServerError,
            }),
            _ => None,
        }
    }
}

/// What a peer that does not speak the client's protocol sent first, in words: an HTTP or SSH
/// server by its first line, other text as it is (escaped, cut), anything else in hex.
pub(crate) fn stranger(bytes: &[u8]) -> String {
    let line: Vec<u8> = bytes
        .iter()
        .copied()
        .take_while(|b| *b != b'\r' && *b != b'\n')
        .take(60)
        .collect();
    let text = line.escape_ascii().to_string();
    if bytes.starts_with(b"HTTP/") {
        format!("an HTTP server (it answered `{text}`)")
    } else if bytes.starts_with(b"SSH-") {
        format!("an SSH server (its banner: `{text}`)")
    } else if !line.is_empty() && line.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("a server that answered `{text}`")
    } else {
        let hex: Vec<String> = bytes.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!(
            "a server that answered bytes neither protocol sends ({}{})",
            hex.join(" "),
            if bytes.len() > 16 { " …" } else { "" }
        )
    }
}

/// What to do about a failed connection, after the OS error: the cases a first-time user meets.
fn connect_hint(addr: SocketAddr, err: &std::io::Error, timeout: Duration, iperf3: bool) -> String {
    use std::io::ErrorKind as K;
    let (ip, port) = (addr.ip(), addr.port());
    match err.kind() {
        K::ConnectionRefused if iperf3 => format!(
            ": no iperf3 server listens on port {port} of {ip}; start one there with `iperf3 -s -p {port}` (or `iperf3 -s` and leave out -p: it listens on {} by default), or pass the port it listens on with -p PORT",
            linerate_iperf3::DEFAULT_PORT
        ),
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

/// Open the control connection to `cfg.server` (from `-B` when given), within the connect
/// timeout; the error says what to do about it.
pub(crate) fn connect(cfg: &ClientConfig) -> Result<TcpStream, ClientError> {
    let err = |e: std::io::Error| ClientError::Connect {
        addr: cfg.server,
        err: e,
        timeout: cfg.connect_timeout,
        iperf3: matches!(cfg.protocol, WireProtocol::Iperf3(_)),
    };
    let s = Socket::new(
        Domain::for_address(cfg.server),
        Type::STREAM,
        Some(IpProtocol::TCP),
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

/// A TCP data connection to `to`: from `-B` when given, with the test's socket buffer (set
/// before connecting, so the window scale is negotiated for it), congestion control and, when
/// asked, TCP_NODELAY.
pub(crate) fn data_socket(
    cfg: &ClientConfig,
    to: SocketAddr,
    nodelay: bool,
) -> Result<TcpStream, ClientError> {
    let p = &cfg.params;
    let s = Socket::new(Domain::for_address(to), Type::STREAM, Some(IpProtocol::TCP))
        .map_err(|e| ClientError::Data(e.to_string()))?;
    if let Some(ip) = cfg.bind {
        s.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(|e| ClientError::Data(format!("binding {ip}: {e}")))?;
    }
    if let Some(w) = p.window {
        let _ = s.set_send_buffer_size(w as usize);
        let _ = s.set_recv_buffer_size(w as usize);
    }
    if let Some(c) = &p.congestion {
        s.set_tcp_congestion(c.as_bytes())
            .map_err(|e| ClientError::Data(format!("congestion control `{c}`: {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)")))?;
    }
    if nodelay {
        let _ = s.set_nodelay(true);
    }
    s.connect_timeout(&SockAddr::from(to), cfg.connect_timeout)
        .map_err(|e| ClientError::Data(format!("connecting a data stream to {to}: {e}")))?;
    Ok(s.into())
}

/// A UDP flow's socket: on `local`, connected to `dest`, with the test's socket buffer (8 MiB
/// by default: room for bursts at high rates).
pub(crate) fn udp_socket(
    cfg: &ClientConfig,
    local: IpAddr,
    dest: SocketAddr,
) -> Result<UdpSocket, ClientError> {
    let u = UdpSocket::bind(SocketAddr::new(local, 0))
        .map_err(|e| ClientError::Data(format!("UDP socket: {e}")))?;
    u.connect(dest)
        .map_err(|e| ClientError::Data(format!("UDP to {dest}: {e}")))?;
    let r = socket2::SockRef::from(&u);
    let buffer = cfg.params.window.map_or(8 << 20, |w| w as usize);
    let _ = r.set_recv_buffer_size(buffer);
    let _ = r.set_send_buffer_size(buffer);
    Ok(u)
}

/// This end's plan of a test that starts now (`datagrams`: the header of its UDP datagrams;
/// `budget`: the end of a test that ends on data).
pub(crate) fn local_plan(
    cfg: &ClientConfig,
    datagrams: udp::Format,
    budget: Option<Arc<Budget>>,
) -> SidePlan {
    SidePlan {
        params: cfg.params.clone(),
        is_client: true,
        datagrams,
        start: Instant::now(),
        affinity: cfg.affinity.clone(),
        file: cfg.file.clone(),
        budget,
        ending: Ending::Time,
    }
}

/// Passes on what the far end sent meanwhile, as events.
pub(crate) type Between<'a> = &'a mut dyn FnMut(&mut dyn FnMut(Event));

/// Run this end's streams on `wired`: each interval goes to `events` (with this host's soak
/// sample after it, in a soak, for the interface of `local_ip`), then `between` passes on what
/// the far end sent meanwhile. `abort` ends the streams at once (the far end went away).
pub(crate) fn run_local(
    cfg: &ClientConfig,
    plan: &SidePlan,
    local_ip: IpAddr,
    wired: Wired,
    abort: &Stop,
    events: &mut dyn FnMut(Event),
    between: Between<'_>,
) -> side::SideRun {
    let mut soak = cfg
        .soak
        .as_ref()
        .filter(|_| cfg.params.soak)
        .map(|f| side::Soak::new(f(local_ip), plan));
    if let Some(k) = soak.as_mut() {
        events(Event::LocalSoak(k.first()));
    }
    let mut sink = |s: &IntervalSample| {
        events(Event::Local(s.clone()));
        if let Some(k) = soak.as_mut() {
            events(Event::LocalSoak(k.after(s)));
        }
        between(events);
    };
    // What this host's CPUs did meanwhile; a far end on this host is linerate's own work.
    let scanned;
    let cpu = match &cfg.cpu_meter {
        Some(m) => m,
        None => {
            scanned = HostCpuMeter::with_far_end(cfg.server);
            &scanned
        }
    };
    let before = cpu.snapshot();
    // And what the interface carried, this test's traffic and anyone else's, and what its
    // qdiscs dropped.
    let link = LinkSnapshot::of(local_ip);
    let qdiscs = crate::qdiscs::watch(local_ip);
    // (Its UDP receive counters the wire protocol reads around the whole conversation: the
    // far end's last datagrams arrive after this end's streams ended.)
    // This end never answers the far end's transactions: nothing tells it the far end is done.
    let mut run = side::run(plan, wired, &mut sink, abort, &Stop::new());
    run.results.host_load = Some(Box::new(HostCpu::between(&before, &cpu.snapshot()).into()));
    run.results.link = link.and_then(|l| l.since()).map(Box::new);
    run.results.qdiscs = qdiscs.and_then(|q| q.finish());
    run.far_end_here = cpu.has_far_end();
    run
}

/// Run one test against the far end `cfg.server`, in the far end's protocol. `Err` only when
/// nothing could be measured.
pub fn run(cfg: &ClientConfig, events: &mut dyn FnMut(Event)) -> Result<ClientRun, ClientError> {
    match cfg.protocol {
        WireProtocol::Linerate => linerate::run(cfg, events),
        WireProtocol::Iperf3(o) => iperf3::run(cfg, &o, events),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strangers_are_named_by_what_they_sent() {
        let http = stranger(b"HTTP/1.1 400 Bad Request\r\nServer: x\r\n\r\n");
        assert_eq!(
            http,
            "an HTTP server (it answered `HTTP/1.1 400 Bad Request`)"
        );
        let ssh = stranger(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
        assert!(
            ssh.starts_with("an SSH server (its banner: `SSH-2.0-OpenSSH_9.2p1"),
            "{ssh}"
        );
        assert_eq!(
            stranger(b"+OK ready\r\n"),
            "a server that answered `+OK ready`"
        );
        let bin = stranger(&[0x42, 0x13, 0, 0xff]);
        assert!(bin.contains("42 13 00 ff"), "{bin}");
        let long = stranger(&[0xfe; 40]);
        assert!(long.ends_with("fe …)"), "{long}");
        // A hostile peer cannot write a line of its own into the message.
        let forged = stranger(b"HTTP/1.1 200\x1b[2Jok");
        assert!(!forged.contains('\x1b'), "{forged}");
    }
}
