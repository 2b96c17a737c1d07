//! iperf3's control protocol, the client's side (`linerate bench --iperf3` against a stock
//! `iperf3 -s`, `docs/iperf3.md`): the conversation of [`ClientSession`] on the control
//! connection with every read bounded, the streams opened one after another as iperf3 opens
//! them (senders first), this end's streams run by linerate's engines, the end of the test said
//! by this end (TEST_END at its time, or once `-n`/`-k` is spent), the results exchanged, and the
//! server's own figures kept beside this end's ([`Iperf3Run`]).
//!
//! A stock iperf3 never times out on a state byte, so this end never leaves the server waiting:
//! once the cookie is sent, every way out of the conversation but its end sends
//! CLIENT_TERMINATE and closes ([`Control`]'s drop).

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::meter::{Budget, Stop};
use linerate_engine::{sys, udp};
use linerate_facts::HostFacts;
use linerate_iperf3::params::limits;
use linerate_iperf3::udp::{Magic, ReplyOutcome, ReplyWait, SeqWidth, CONNECT};
use linerate_iperf3::{
    plan, ClientSession, Cookie, DataFlow, ErrorCode, Feature, FromServer, Iperf3Params,
    Iperf3Refusal, Protocol, Results, Role, SenderRetransmits, ServerError, SessionError,
    SessionPhase, State, Stream, StreamResults, Version, VersionRange, RESULTS_MAX,
};
use linerate_proto::{
    defaults, CpuUsage, Direction, SideResults, StreamResult, TestKind, TestParams, UdpStats,
    UdpWarmup,
};

use super::{
    connect, data_socket, local_plan, run_local, stranger, udp_socket, ClientConfig, ClientError,
    ClientRun, Event, Iperf3Options,
};
use crate::iperf3_counts::UdpCounts;
use crate::kind::{self, Ends};
use crate::outcome::Iperf3Run;
use crate::side::{SideRun, UdpFlow, Wired};

/// The test as iperf3's protocol carries it: what this host runs, what the server is asked, and
/// what had to change on the way ([`iperf3_plan`]).
#[derive(Debug, Clone)]
pub struct Iperf3Plan {
    /// The test as this host runs it: its omitted seconds and time in whole seconds (with an
    /// end on data, iperf3's longest test as the bound).
    pub params: TestParams,
    /// The parameters sent to the server.
    pub request: Iperf3Params,
    /// The streams in the order they are opened.
    pub streams: Vec<Stream>,
    /// Seconds after the omitted ones (0: the test ends on data), and the omitted seconds.
    pub time_s: u64,
    pub omit_s: u64,
    /// `-n`, or `-k` in bytes: each way, after the omitted seconds.
    pub budget: Option<u64>,
    /// Where the test differs from what was asked, and why.
    pub notes: Vec<String>,
}

/// Map a test onto iperf3's parameters: the kinds and values iperf3 can carry, its whole
/// seconds (rounded up, said in a note), and what a server of a known release cannot do
/// (refused, or left out with a note). `Err` says why the test cannot run over iperf3.
pub fn iperf3_plan(p: &TestParams, o: &Iperf3Options) -> Result<Iperf3Plan, String> {
    let protocol = protocol_of(p)?;
    if p.soak {
        return Err("a soak needs the far end's port counters, which iperf3's protocol does not carry: run `linerate soak` against `linerate serve`".into());
    }
    if p.streams > limits::MAX_STREAMS {
        return Err(format!(
            "iperf3 allows at most {} parallel streams (-P {})",
            limits::MAX_STREAMS,
            p.streams
        ));
    }
    let direction = flow_of(p.direction, o.server_version)?;
    let mut notes = Vec::new();
    let time = whole_seconds(p, o, &mut notes);
    within_limits(p, protocol, time.time_s, time.omit_s)?;
    let streams = plan(direction, p.streams);
    let asked = server_side(p, &streams, o.server_version, &mut notes);
    let counters_64 = protocol == Protocol::Udp
        && o.server_version
            .is_none_or(|v| v.has(Feature::UdpCounters64));
    let mut params = p.clone();
    params.omit_ms = time.omit_s * 1000;
    let run_s = if time.budget.is_some() {
        u64::from(limits::MAX_TIME_S)
    } else {
        time.time_s
    };
    params.duration_ms = (time.omit_s + run_s) * 1000;
    let request = Iperf3Params {
        omit: time.omit_s.cast_signed(),
        time: Some(time.time_s.cast_signed()),
        num: Some(o.bytes.unwrap_or(0).cast_signed()),
        blockcount: Some(o.blocks.unwrap_or(0).cast_signed()),
        parallel: i64::from(p.streams),
        reverse: direction == DataFlow::Reverse,
        bidirectional: direction == DataFlow::Bidir,
        window: p.window.map(i64::from),
        len: Some(i64::from(p.length)),
        bandwidth: (p.bitrate_bps > 0).then(|| p.bitrate_bps.cast_signed()),
        congestion: p.congestion.clone(),
        // The server's own output comes back in its results: its version, when it runs -J.
        get_server_output: true,
        udp_counters_64bit: counters_64,
        zerocopy: asked.zerocopy.then_some(1),
        skip_rx_copy: asked.skip_rx_copy.then_some(1),
        ..Iperf3Params::new(protocol)
    };
    Ok(Iperf3Plan {
        params,
        request,
        streams,
        time_s: time.time_s,
        omit_s: time.omit_s,
        budget: time.budget,
        notes,
    })
}

/// iperf3's direction for a test's; `Err` when the server's known release cannot run it.
fn flow_of(direction: Direction, known: Option<Version>) -> Result<DataFlow, String> {
    let flow = match direction {
        Direction::Send => DataFlow::Forward,
        Direction::Receive => DataFlow::Reverse,
        Direction::Bidir => DataFlow::Bidir,
    };
    match known {
        Some(v) if flow == DataFlow::Bidir && !v.has(Feature::Bidir) => Err(format!(
            "{}; the far end's iperf3 is {v}: run -R and the default direction one after the other",
            Feature::Bidir.needs()
        )),
        _ => Ok(flow),
    }
}

/// The test's length in iperf3's terms.
struct WholeSeconds {
    /// Omitted seconds, and seconds after them (0: the test ends on data).
    omit_s: u64,
    time_s: u64,
    /// `-n`, or `-k` in bytes.
    budget: Option<u64>,
}

/// The test's times in iperf3's whole seconds, rounded up, each rounding said in `notes`.
fn whole_seconds(p: &TestParams, o: &Iperf3Options, notes: &mut Vec<String>) -> WholeSeconds {
    let secs = |ms: u64| linerate_units::fmt_round(ms as f64 / 1000.0, 3);
    let omit_s = p.omit_ms.div_ceil(1000);
    if omit_s * 1000 != p.omit_ms {
        notes.push(format!(
            "-O {} s is sent as {omit_s} s: iperf3's protocol takes whole seconds",
            secs(p.omit_ms)
        ));
    }
    let budget = o
        .bytes
        .or_else(|| o.blocks.map(|k| k.saturating_mul(u64::from(p.length))));
    let time_s = if budget.is_some() {
        0
    } else {
        let after_omit = p.duration_ms.saturating_sub(p.omit_ms);
        let t = after_omit.div_ceil(1000).max(1);
        if t * 1000 != after_omit {
            notes.push(format!(
                "the {} s after the omitted ones are sent as {t} s: iperf3's protocol takes whole seconds",
                secs(after_omit)
            ));
        }
        t
    };
    WholeSeconds {
        omit_s,
        time_s,
        budget,
    }
}

/// What the server's side is asked beyond the test itself.
struct ServerAsked {
    zerocopy: bool,
    skip_rx_copy: bool,
}

/// `-Z` and `--discard` for the server's side of the streams: asked when it sends (or
/// receives) on one, unless its known release cannot, which `notes` then says.
fn server_side(
    p: &TestParams,
    streams: &[Stream],
    known: Option<Version>,
    notes: &mut Vec<String>,
) -> ServerAsked {
    let server_sends = streams.iter().any(|s| s.server() == Role::Sender);
    let server_receives = streams.iter().any(|s| s.server() == Role::Receiver);
    let mut ask = |wanted: bool, feature: Feature, what: &str| -> bool {
        match known {
            Some(v) if wanted && !v.has(feature) => {
                notes.push(format!(
                    "{what} is not asked of the server: {}, and the far end's is {v}",
                    feature.needs()
                ));
                false
            }
            _ => wanted,
        }
    };
    ServerAsked {
        zerocopy: ask(
            p.zerocopy && server_sends,
            Feature::ServerZerocopy,
            "zero copy on the server's side (-Z)",
        ),
        skip_rx_copy: ask(
            p.discard && server_receives,
            Feature::SkipRxCopy,
            "a receive without copy on the server's side (--discard, iperf3's --skip-rx-copy)",
        ),
    }
}

/// iperf3's protocol for a test kind; `Err` names the kinds it cannot carry.
fn protocol_of(p: &TestParams) -> Result<Protocol, String> {
    match p.kind {
        TestKind::TcpBw => Ok(Protocol::Tcp),
        TestKind::UdpBw => Ok(Protocol::Udp),
        k => Err(format!(
                "iperf3's protocol carries TCP and UDP bandwidth tests only, not {} ({}): run it against `linerate serve`, without --iperf3",
                k.as_str(),
                p.words()
            )),
    }
}
/// iperf3's own bounds on what a client may ask (its iperf_api.c checks), so that a stock server
/// is never sent a test it refuses.
fn within_limits(
    p: &TestParams,
    protocol: Protocol,
    time_s: u64,
    omit_s: u64,
) -> Result<(), String> {
    if time_s > u64::from(limits::MAX_TIME_S) {
        return Err(format!(
            "iperf3 allows a test of at most {} s (-t)",
            limits::MAX_TIME_S
        ));
    }
    if omit_s > u64::from(limits::MAX_OMIT_S) {
        return Err(format!(
            "iperf3 allows at most {} omitted seconds (-O)",
            limits::MAX_OMIT_S
        ));
    }
    if p.window.is_some_and(|w| w > limits::MAX_WINDOW) {
        return Err(format!(
            "iperf3 allows a socket buffer of at most {} bytes (-w)",
            limits::MAX_WINDOW
        ));
    }
    let (min_len, max_len) = match protocol {
        Protocol::Udp => (limits::MIN_UDP_LEN, limits::MAX_UDP_LEN),
        _ => (1, limits::MAX_TCP_LEN),
    };
    if !(min_len..=max_len).contains(&p.length) {
        return Err(format!(
            "iperf3 allows -l of {min_len} to {max_len} bytes for {}",
            if protocol == Protocol::Udp {
                "UDP"
            } else {
                "TCP"
            }
        ));
    }
    Ok(())
}

/// How long a stock server may take over each answer before the test: as long as a linerate
/// server may.
const ANSWER: Duration = defaults::CONTROL_TIMEOUT;
/// How long the server may take, after TEST_END, to stop its streams and ask for the results
/// (iperf3 joins its stream threads first; the control connection may share a full path).
const END: Duration = Duration::from_secs(defaults::GRACE.as_secs() + ANSWER.as_secs());
/// How long the end of a stream setup may wait for the server's first data before the streams
/// start anyway (see [`refused_streams`]).
const FIRST_DATA: Duration = Duration::from_secs(2);

/// The control connection: the session, the bytes read and not yet taken, the server's name.
/// Dropped before the test's end, it sends CLIENT_TERMINATE and closes, so the server never
/// waits for this end.
struct Control {
    sock: TcpStream,
    session: ClientSession,
    pending: Vec<u8>,
    /// `HOST:PORT` as the user gave it, for messages.
    server: String,
    /// The parameters went out: the server has heard what test this is.
    params_sent: bool,
}

/// What waiting on the control connection came to.
enum Heard {
    Event(FromServer),
    Timeout,
    Closed,
}

impl Control {
    fn write(&mut self, bytes: &[u8], what: &str) -> Result<(), String> {
        self.sock.write_all(bytes).map_err(|e| {
            format!(
                "sending {what} to the iperf3 server at {}: {e}",
                self.server
            )
        })
    }

    /// The server's next message, waiting until `until` at most.
    fn next(&mut self, until: Instant) -> Result<Heard, SessionError> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            if !self.pending.is_empty() {
                let (used, event) = self.session.receive(&self.pending)?;
                self.pending.drain(..used);
                if let Some(e) = event {
                    return Ok(Heard::Event(e));
                }
                if used > 0 {
                    continue;
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Heard::Timeout);
            }
            let _ = self
                .sock
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match self.sock.read(&mut buf) {
                Ok(0) => return Ok(Heard::Closed),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // A reset is the server gone, as a close is.
                Err(_) => return Ok(Heard::Closed),
            }
        }
    }

    /// The server's refusal, in linerate's words.
    fn refused(&self, refusal: Iperf3Refusal) -> ClientError {
        ClientError::Iperf3 {
            refusal,
            message: refusal.explain(&self.server),
        }
    }

    /// Wait for `want`: the answer to what was just sent, before the test.
    fn expect(&mut self, want: State, after: &str) -> Result<(), ClientError> {
        match self.next(Instant::now() + ANSWER) {
            Ok(Heard::Event(FromServer::State(s))) if s == want => Ok(()),
            Ok(Heard::Event(FromServer::Busy)) => Err(self.refused(Iperf3Refusal::Busy)),
            Ok(Heard::Event(FromServer::ServerError(e))) => Err(self.server_error(e)),
            Ok(Heard::Event(other)) => Err(ClientError::Protocol(format!(
                "the iperf3 server at {} sent {} after {after}, where iperf3 sends {}",
                self.server,
                heard(&other),
                want.name()
            ))),
            Ok(Heard::Timeout) => Err(self.silent(want, after)),
            Ok(Heard::Closed) => Err(self.closed(after)),
            Err(SessionError::UnknownState(_))
                if self.session.phase() == SessionPhase::Cookie =>
            {
                Err(ClientError::WrongPeer(format!(
                    "the server at {} does not speak iperf3: it is {}; check HOST and -p (iperf3 listens on {} by default)",
                    self.server,
                    stranger(&self.pending),
                    linerate_iperf3::DEFAULT_PORT
                )))
            }
            Err(e) => Err(ClientError::Protocol(format!(
                "the iperf3 server at {}: {e}",
                self.server
            ))),
        }
    }

    /// SERVER_ERROR in linerate's words. Right after the cookie, IEMESSAGE is a `linerate
    /// serve` that does not speak iperf3 (a stock server never sends it there).
    fn server_error(&self, e: ServerError) -> ClientError {
        if e.code == ErrorCode::IEMESSAGE && !self.params_sent {
            return ClientError::WrongPeer(format!(
                "the server at {} is a `linerate serve` that does not speak iperf3 (it answered iperf3's cookie with IEMESSAGE): drop --iperf3, or update linerate there",
                self.server
            ));
        }
        self.refused(Iperf3Refusal::ServerError(e))
    }

    fn silent(&self, want: State, after: &str) -> ClientError {
        ClientError::WrongPeer(format!(
            "no answer from the server at {} within {} s after {after} (iperf3 answers {} at once): it is not an iperf3 server, or a stuck one; check HOST and -p",
            self.server,
            ANSWER.as_secs(),
            want.name()
        ))
    }

    fn closed(&self, after: &str) -> ClientError {
        if self.session.phase() == SessionPhase::CreateStreams {
            return ClientError::Protocol(format!(
                "the iperf3 server at {} closed the control connection after CREATE_STREAMS without a word: iperf3 3.9 to 3.20 do so when a test is over their --server-bitrate-limit (3.21 says so); ask for a lower -b or fewer streams",
                self.server
            ));
        }
        ClientError::Protocol(format!(
            "the server at {} closed the control connection after {after} without answering: it is not an iperf3 server, or it stopped (its log says why)",
            self.server
        ))
    }

    /// After IPERF_DONE: close the sending side and read what the server still sends (a 3.21
    /// server's late SERVER_ERROR), briefly, so the close sends no reset.
    fn finish(&mut self) {
        let _ = self.sock.shutdown(Shutdown::Write);
        let until = Instant::now() + Duration::from_secs(1);
        let mut buf = [0u8; 512];
        while Instant::now() < until {
            let _ = self.sock.set_read_timeout(Some(
                until
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ));
            match self.sock.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
}

impl Drop for Control {
    /// Once the server has the test's parameters, every end but the conversation's own sends
    /// CLIENT_TERMINATE first; before, a close is all a server (or a stranger) is owed.
    fn drop(&mut self) {
        if self.params_sent
            && !matches!(
                self.session.phase(),
                SessionPhase::Done | SessionPhase::Ended
            )
        {
            let bytes = self.session.terminate();
            let _ = self.sock.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = self.sock.write_all(&bytes);
        }
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

/// Open the control connection, send the cookie and the parameters, and wait for
/// CREATE_STREAMS: the server has taken the test.
fn open_control(
    cfg: &ClientConfig,
    plan: &Iperf3Plan,
    cookie: &Cookie,
) -> Result<Control, ClientError> {
    let sock = connect(cfg)?;
    let _ = sock.set_nodelay(true);
    let _ = sock.set_write_timeout(Some(ANSWER));
    let mut c = Control {
        sock,
        session: ClientSession::new(RESULTS_MAX),
        pending: Vec::new(),
        server: cfg.server.to_string(),
        params_sent: false,
    };
    let bytes = c.session.cookie(cookie).map_err(|e| protocol(&e))?;
    c.write(&bytes, "the cookie")
        .map_err(ClientError::Protocol)?;
    c.expect(State::ParamExchange, "iperf3's cookie")?;
    let bytes = c.session.params(&plan.request).map_err(|e| protocol(&e))?;
    c.write(&bytes, "the test's parameters")
        .map_err(ClientError::Protocol)?;
    c.params_sent = true;
    c.expect(State::CreateStreams, "the test's parameters")?;
    Ok(c)
}

fn protocol(e: &SessionError) -> ClientError {
    ClientError::Protocol(e.to_string())
}

/// This end's data connections, opened one after another in the plan's order (iperf3's server
/// gives them their roles in the order they arrive), with what this end runs on each; the UDP
/// sockets also kept apart, to stay open until the test's end; the server's UDP reply.
struct Streams {
    wired: Wired,
    udp: Vec<Arc<UdpSocket>>,
    reply: Option<Magic>,
}

fn open_streams(
    cfg: &ClientConfig,
    plan: &Iperf3Plan,
    cookie: &Cookie,
    local: IpAddr,
) -> Result<Streams, ClientError> {
    match kind::of(plan.params.kind).ends() {
        Ends::Tcp { run, nodelay } => {
            let mut conns = Vec::with_capacity(plan.streams.len());
            for s in &plan.streams {
                let mut c = data_socket(cfg, cfg.server, nodelay)?;
                c.write_all(cookie.as_bytes()).map_err(|e| {
                    ClientError::Data(format!("sending the cookie on stream {}: {e}", s.id))
                })?;
                conns.push(c);
            }
            Ok(Streams {
                wired: Wired::Tcp(run, conns),
                udp: Vec::new(),
                reply: None,
            })
        }
        Ends::Udp { run, .. } => {
            let mut flows = Vec::with_capacity(plan.streams.len());
            let mut reply = None;
            for s in &plan.streams {
                let u = Arc::new(udp_socket(cfg, local, cfg.server)?);
                let wait = ReplyWait::new(s.client == Role::Receiver, plan.params.length);
                reply = Some(udp_handshake(&u, wait, *s, &cfg.server.to_string())?);
                flows.push(UdpFlow {
                    sock: u,
                    peer: None,
                });
            }
            let udp = flows.iter().map(|f| Arc::clone(&f.sock)).collect();
            Ok(Streams {
                wired: Wired::Udp(run, flows),
                udp,
                reply,
            })
        }
        Ends::Listener { .. } | Ends::Rdma => Err(ClientError::Protocol(
            "iperf3's protocol carries TCP and UDP streams only".into(),
        )),
    }
}

/// iperf3's UDP stream setup: the connect datagram, then the server's reply within
/// [`ANSWER`]. Sent once: iperf3 takes any datagram as a stream's connect, so a second one
/// could become the next stream.
fn udp_handshake(
    u: &UdpSocket,
    mut wait: ReplyWait,
    s: Stream,
    server: &str,
) -> Result<Magic, ClientError> {
    u.send(&CONNECT).map_err(|e| {
        ClientError::Data(format!(
            "sending stream {}'s UDP handshake to {server}: {e}",
            s.id
        ))
    })?;
    let until = Instant::now() + ANSWER;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ClientError::Data(format!(
                "no reply from the iperf3 server at {server} to stream {}'s UDP handshake within {} s: a firewall drops UDP to that port, or the server did not take the stream",
                s.id,
                ANSWER.as_secs()
            )));
        }
        let _ = u.set_read_timeout(Some(left.max(Duration::from_millis(1))));
        match u.recv(&mut buf) {
            Ok(n) => match wait.on_datagram(&buf[..n]) {
                ReplyOutcome::Accepted(m) => return Ok(m),
                ReplyOutcome::Skipped => {}
                ReplyOutcome::Failed => {
                    return Err(ClientError::Data(format!(
                        "the iperf3 server at {server} answered stream {}'s UDP handshake with {} bytes that are no reply ({})",
                        s.id,
                        n,
                        stranger(&buf[..n.min(16)])
                    )))
                }
            },
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(ClientError::Data(format!(
                    "stream {}'s UDP handshake with {server}: {e} (nothing listens on that UDP port, or a firewall refuses it)",
                    s.id
                )))
            }
        }
    }
}

/// A `--bidir` test against a server before 3.7: it ignores `bidirectional`, takes the first
/// `-P` connections as the whole test, and answers the others with ACCESS_DENIED and a close.
/// After TEST_RUNNING, the first bytes of each stream this end receives on tell it: one 0xff
/// and the peer's close, a close, or a reset, before any data (3.1.3 resets). Nothing is taken
/// off the sockets (`peek`). Waits at most
/// [`FIRST_DATA`] in all; a stream that stays silent that long is left to the test.
fn refused_streams(wired: &Wired, plan: &Iperf3Plan) -> Vec<linerate_iperf3::StreamId> {
    let Wired::Tcp(_, conns) = wired else {
        return Vec::new();
    };
    let until = Instant::now() + FIRST_DATA;
    let mut refused = Vec::new();
    for (c, s) in conns.iter().zip(&plan.streams) {
        if s.client != Role::Receiver {
            continue;
        }
        let mut buf = [0u8; 2];
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let _ = c.set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match c.peek(&mut buf) {
                Ok(0) => {
                    refused.push(s.id);
                    break;
                }
                Ok(1) if buf[0] == State::AccessDenied.to_byte() => {
                    if sys::tcp_peer_closed(c) {
                        refused.push(s.id);
                        break;
                    }
                    thread::sleep(Duration::from_millis(10));
                }
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Reset before any data: the server closed it unread (3.1.3 does).
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                    ) =>
                {
                    refused.push(s.id);
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = c.set_read_timeout(None);
    }
    refused
}

/// What the control connection's thread hands back when the test's time is over.
struct Ended {
    ctl: Control,
    /// When this end said TEST_END (the test's end).
    at: Instant,
    /// Why the test did not end as it should, if it did not.
    error: Option<String>,
    /// A test that ends on data stopped moving before its end: what is known of why.
    stalled: Option<String>,
}

/// The control connection while the test runs: the server's messages (a SERVER_ERROR or
/// SERVER_TERMINATE ends this end's streams at once), the budget armed at the end of the
/// omitted seconds, TEST_END once the test's end came (its time, its budget spent, or this
/// end's streams ended), then EXCHANGE_RESULTS.
fn during_test(
    mut ctl: Control,
    start: Instant,
    plan: &Iperf3Plan,
    budget: Option<&Budget>,
    abort: &Stop,
    local_done: &Stop,
) -> Ended {
    let end_at = start + Duration::from_millis(plan.params.duration_ms);
    let mut watch = DataWatch::new(budget, start, plan.params.omit_ms);
    let mut said_end: Option<Instant> = None;
    loop {
        let now = Instant::now();
        watch.tick(now);
        let over = now >= end_at || watch.over() || local_done.is_set() || abort.is_set();
        if over && said_end.is_none() {
            let sent = ctl
                .session
                .test_end()
                .map_err(|e| format!("protocol: {e}"))
                .and_then(|bytes| ctl.write(&bytes, "TEST_END"));
            if let Err(e) = sent {
                abort.set();
                return Ended::failed(ctl, now, e);
            }
            said_end = Some(now);
        }
        let until = match said_end {
            Some(t) => t + END,
            None if !watch.armed => (now + Duration::from_millis(100)).min(watch.armed_at.max(now)),
            None => (now + Duration::from_millis(100)).min(end_at.max(now)),
        };
        let at = said_end.unwrap_or(now);
        let message = ctl.next(until);
        match while_running(&ctl, message, said_end.is_some()) {
            None => {}
            Some(Ok(())) => {
                return Ended {
                    ctl,
                    at,
                    error: None,
                    stalled: watch.stalled,
                }
            }
            Some(Err(m)) => {
                abort.set();
                return Ended::failed(ctl, at, m);
            }
        }
    }
}

impl Ended {
    fn failed(ctl: Control, at: Instant, error: String) -> Self {
        Self {
            ctl,
            at,
            error: Some(error),
            stalled: None,
        }
    }
}

/// The budget of a test that ends on data, while it runs: armed at the end of the omitted
/// seconds, and an end that never comes told (the server stops sending at its own count of
/// -n, so datagrams lost on the way leave this end short of it).
struct DataWatch<'a> {
    budget: Option<&'a Budget>,
    armed_at: Instant,
    /// Without omitted seconds the budget was armed before the streams started.
    armed: bool,
    /// The bytes counted when they last moved, and when.
    counted: (u64, u64),
    moved: Instant,
    stalled: Option<String>,
}

impl<'a> DataWatch<'a> {
    fn new(budget: Option<&'a Budget>, start: Instant, omit_ms: u64) -> Self {
        Self {
            budget,
            armed_at: start + Duration::from_millis(omit_ms),
            armed: omit_ms == 0,
            counted: (0, 0),
            moved: start,
            stalled: None,
        }
    }

    fn tick(&mut self, now: Instant) {
        let Some(b) = self.budget else { return };
        if !self.armed && now >= self.armed_at {
            b.arm();
            self.armed = true;
        }
        let c = b.counted();
        if c != self.counted || !self.armed {
            (self.counted, self.moved) = (c, now);
        } else if self.stalled.is_none() && now.duration_since(self.moved) >= defaults::IDLE {
            self.stalled = Some(format!(
                "no data moved for {} s before the test's end on data came (this host counted {} bytes sent and {} received of the {}): the test ended there",
                defaults::IDLE.as_secs(),
                c.0,
                c.1,
                b.limit()
            ));
        }
    }

    /// The budget is spent, or the data stopped moving.
    fn over(&self) -> bool {
        self.budget.is_some_and(|b| b.over().is_set()) || self.stalled.is_some()
    }
}

/// What the server said while the test ran: `None` to go on, `Ok` for EXCHANGE_RESULTS (the
/// test is over), `Err` for an end the test should not have had.
fn while_running(
    ctl: &Control,
    message: Result<Heard, SessionError>,
    said_end: bool,
) -> Option<Result<(), String>> {
    let server = &ctl.server;
    let error = match message {
        Ok(Heard::Event(FromServer::State(State::ExchangeResults))) => return Some(Ok(())),
        Ok(Heard::Timeout) if !said_end => return None,
        Ok(Heard::Event(FromServer::ServerError(e))) => {
            ctl.refused(Iperf3Refusal::ServerError(e)).to_string()
        }
        Ok(Heard::Event(FromServer::State(State::ServerTerminate))) => format!(
            "the iperf3 server at {server} was stopped during the test (SERVER_TERMINATE)"
        ),
        Ok(Heard::Event(other)) => format!(
            "protocol: the iperf3 server at {server} sent {} during the test",
            heard(&other)
        ),
        Ok(Heard::Timeout) => format!(
            "the iperf3 server at {server} did not ask for the results (EXCHANGE_RESULTS) within {} s of TEST_END",
            END.as_secs()
        ),
        Ok(Heard::Closed) => format!(
            "the iperf3 server at {server} closed the control connection during the test"
        ),
        Err(e) => format!("protocol: the iperf3 server at {server}: {e}"),
    };
    Some(Err(error))
}

/// A server message, named for an error.
fn heard(e: &FromServer) -> String {
    match e {
        FromServer::State(s) => s.name().to_string(),
        FromServer::Busy => State::AccessDenied.name().to_string(),
        FromServer::ServerError(e) => format!("SERVER_ERROR {}", e.code.cite()),
        FromServer::Results(_) => "its results".into(),
    }
}

/// This end's results as iperf3 sends them: each stream by its role, whole-process CPU.
fn our_results(plan: &Iperf3Plan, run: &SideRun, cpu: [f64; 3]) -> Results {
    let udp = plan.params.kind == TestKind::UdpBw;
    let sends = plan.streams.iter().any(|s| s.client == Role::Sender);
    let streams = plan
        .streams
        .iter()
        .zip(0u32..)
        .map(|(s, i)| {
            let mine = run.results.streams.iter().find(|r| r.id == i);
            let seconds = mine.map_or(0.0, |r| r.seconds);
            let mut e = StreamResults {
                id: s.id,
                bytes: 0,
                retransmits: -1,
                jitter: 0.0,
                errors: 0,
                omitted: None,
                packets: 0,
                start_time: Some(0.0),
                end_time: Some(seconds),
            };
            let Some(r) = mine else { return e };
            let sends = s.client == Role::Sender;
            if sends {
                e.bytes = r.bytes_sent;
                if let Some(t) = r.tcp {
                    e.retransmits = t.retransmits.min(i64::MAX as u64).cast_signed();
                }
            } else {
                e.bytes = r.bytes_received;
            }
            if udp {
                // The engine counted this end's streams by iperf3's definitions, as serve does.
                let counts = UdpCounts::of(run, i as usize, sends, plan.params.length);
                counts.unwrap_or_default().fill(&mut e);
            }
            e
        })
        .collect();
    Results {
        cpu_util_total: cpu[0],
        cpu_util_user: cpu[1],
        cpu_util_system: cpu[2],
        sender_has_retransmits: match (sends, udp) {
            (false, _) => SenderRetransmits::Receiver,
            (true, true) => SenderRetransmits::Unknown,
            (true, false) => SenderRetransmits::Known,
        },
        congestion_used: None,
        server_output_json: None,
        server_output_text: None,
        streams,
        unknown: serde_json::Map::new(),
    }
}

/// The results exchange, after EXCHANGE_RESULTS: this end's results, the server's, then
/// DISPLAY_RESULTS, IPERF_DONE and the close.
fn exchange(ctl: &mut Control, ours: &Results) -> Result<Results, String> {
    let bytes = ctl
        .session
        .results(ours, RESULTS_MAX)
        .map_err(|e| format!("protocol: {e}"))?;
    ctl.write(&bytes, "this host's results")?;
    let until = Instant::now() + ANSWER;
    let mut theirs = None;
    loop {
        match ctl.next(until) {
            Ok(Heard::Event(FromServer::Results(r))) => theirs = Some(*r),
            Ok(Heard::Event(FromServer::State(State::DisplayResults))) => break,
            Ok(Heard::Event(FromServer::ServerError(e))) => {
                return Err(ctl.refused(Iperf3Refusal::ServerError(e)).to_string())
            }
            Ok(Heard::Event(other)) => {
                return Err(format!(
                    "protocol: the iperf3 server at {} sent {} after this host's results",
                    ctl.server,
                    heard(&other)
                ))
            }
            Ok(Heard::Timeout) => {
                return Err(format!(
                    "the iperf3 server at {} sent no results within {} s of this host's",
                    ctl.server,
                    ANSWER.as_secs()
                ))
            }
            Ok(Heard::Closed) => {
                return Err(format!(
                    "the iperf3 server at {} closed the control connection after this host's results, without its own (its log says why: an older server refuses results for streams it did not take)",
                    ctl.server
                ))
            }
            Err(e) => return Err(format!("protocol: the iperf3 server at {}: {e}", ctl.server)),
        }
    }
    let done = ctl
        .session
        .iperf_done()
        .map_err(|e| format!("protocol: {e}"))?;
    ctl.write(&done, "IPERF_DONE")?;
    ctl.finish();
    theirs.ok_or_else(|| {
        format!(
            "protocol: the iperf3 server at {} sent DISPLAY_RESULTS without its results",
            ctl.server
        )
    })
}

/// What is known of the server's release, and what told it.
#[derive(Debug, Clone)]
struct Evidence {
    range: VersionRange,
    from: Vec<&'static str>,
}

impl Evidence {
    fn new(known: Option<Version>) -> Self {
        match known {
            Some(v) => Self {
                range: VersionRange::exactly(v),
                from: vec!["ssh"],
            },
            None => Self {
                range: VersionRange::ANY,
                from: Vec::new(),
            },
        }
    }

    /// Add a fact; one that contradicts what is known already is left out.
    fn add(&mut self, range: VersionRange, what: &'static str) {
        if let Some(r) = self.range.and(range) {
            if r != self.range {
                self.range = r;
                self.from.push(what);
            }
        }
    }
}

/// The server's results as the other side of the run: each stream it lists by the position
/// the plan gives its id, its whole-process CPU spread evenly over the streams (iperf3 says no
/// more), its UDP receive counts by linerate's definitions (datagrams received, taken from the
/// highest sequence seen less iperf3's loss). iperf3's datagram counts run from the start of
/// the test, warm-up included, as linerate's do on the wire; where a receiving server says
/// where its warm-up ended (3.14+), that becomes the stream's `warmup`, which the results
/// take off both ends' counts (before 3.14 both are taken whole).
fn remote_side(plan: &Iperf3Plan, r: &Results, secs: f64) -> SideResults {
    let fix = |x: f64| if x.is_finite() && x >= 0.0 { x } else { 0.0 };
    let udp = plan.params.kind == TestKind::UdpBw;
    let percent = fix(r.cpu_util_total);
    let cpu_s = percent / 100.0 * secs / plan.streams.len().max(1) as f64;
    let count = |v: i64| u64::try_from(v).unwrap_or(0);
    let streams = plan
        .streams
        .iter()
        .zip(0u32..)
        .filter_map(|(s, i)| {
            let e = r.stream(s.id)?;
            // The server's time on the stream (3.2+), which ends when it took in TEST_END, a
            // little after this end's; else the test's own.
            let seconds = match (e.start_time, e.end_time) {
                (Some(a), Some(b))
                    if (b - a).is_finite()
                        && b >= a
                        && b - a <= secs + defaults::GRACE.as_secs_f64() =>
                {
                    b - a
                }
                _ => (secs - plan.omit_s as f64).max(0.0),
            };
            let sender = s.server() == Role::Sender;
            let stats = udp.then(|| {
                if sender {
                    UdpStats {
                        packets: count(e.packets),
                        ..UdpStats::default()
                    }
                } else {
                    let lost = count(e.errors);
                    // 3.14 and later say where their warm-up ended: the highest sequence
                    // number then (iperf3's are from 1, so also the datagrams sent by then)
                    // and the loss by then.
                    let warmup = e.omitted.filter(|_| plan.omit_s > 0).map(|o| {
                        let seq = count(o.packets);
                        UdpWarmup {
                            seq,
                            packets: seq.saturating_sub(count(o.errors)),
                        }
                    });
                    UdpStats {
                        packets: count(e.packets).saturating_sub(lost),
                        lost,
                        jitter_us: fix(e.jitter) * 1e6,
                        warmup,
                        ..UdpStats::default()
                    }
                }
            });
            Some(StreamResult {
                id: i,
                bytes_sent: if sender { e.bytes } else { 0 },
                bytes_received: if sender { 0 } else { e.bytes },
                seconds,
                udp: stats,
                total_bytes: e.bytes,
                cpu_s,
                ..StreamResult::default()
            })
        })
        .collect();
    SideResults {
        streams,
        cpu: CpuUsage {
            user_s: fix(r.cpu_util_user) / 100.0 * secs,
            system_s: fix(r.cpu_util_system) / 100.0 * secs,
            wall_s: secs,
            percent,
        },
        ..SideResults::default()
    }
}

/// What the server's results say that is wrong with them: streams the test does not have, or
/// lacks (a `--bidir` test against a server before 3.7 lists half of them).
fn stream_mismatch(plan: &Iperf3Plan, r: &Results, server: &str) -> Option<String> {
    let ids: Vec<_> = plan.streams.iter().map(|s| s.id).collect();
    let m = r.match_streams(&ids).err()?;
    let list = |v: &[linerate_iperf3::StreamId]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !m.missing.is_empty() {
        parts.push(format!("no figures for stream(s) {}", list(&m.missing)));
    }
    if !m.unknown.is_empty() {
        parts.push(format!(
            "figures for stream(s) {} the test does not have",
            list(&m.unknown)
        ));
    }
    if !m.repeated.is_empty() {
        parts.push(format!("stream(s) {} more than once", list(&m.repeated)));
    }
    let bidir = if plan.request.bidirectional && !m.missing.is_empty() {
        format!(
            ": it ran half the test; {} (an older server ignores it)",
            Feature::Bidir.needs()
        )
    } else {
        String::new()
    };
    Some(format!(
        "the iperf3 server at {server} sent {} of the test's {} streams, with {}{bidir}",
        r.streams.len(),
        ids.len(),
        parts.join(", ")
    ))
}

/// What the server was asked that its release may have ignored, by what is known of it.
fn honoured(plan: &Iperf3Plan, range: VersionRange) -> Vec<String> {
    let mut notes = Vec::new();
    let mut check = |asked: bool, feature: Feature, what: &str| {
        if !asked {
            return;
        }
        match range.has(feature) {
            Some(true) => {}
            Some(false) => notes.push(format!(
                "{what}: the server ({range}) ignored it: {}",
                feature.needs()
            )),
            None => notes.push(format!(
                "{what}: whether the server did is not known ({range}; {})",
                feature.needs()
            )),
        }
    };
    check(
        plan.request.skip_rx_copy.is_some(),
        Feature::SkipRxCopy,
        "--discard asked the server to receive without copying (skip_rx_copy)",
    );
    check(
        plan.request.zerocopy.is_some(),
        Feature::ServerZerocopy,
        "-Z asked the server to send with zero copy",
    );
    notes
}

/// Run one test against a stock iperf3 server. `Err` only when nothing could be measured.
pub(super) fn run(
    cfg: &ClientConfig,
    o: &Iperf3Options,
    events: &mut dyn FnMut(Event),
) -> Result<ClientRun, ClientError> {
    let plan = iperf3_plan(&cfg.params, o).map_err(ClientError::Protocol)?;
    let cfg = ClientConfig {
        params: plan.params.clone(),
        ..cfg.clone()
    };
    // This host's UDP receive counters from before the server can send until the results
    // were exchanged (the server stops its streams at TEST_END), the sockets open until then.
    let udp = crate::udp_receive::watch(cfg.params.kind);
    let opened = open_test(&cfg, &plan, o.server_version)?;
    let Opened {
        ctl,
        local_addr,
        local_ip,
        local_inventory,
        streams,
        mut evidence,
    } = opened;
    let measured = measure(&cfg, &plan, ctl, local_ip, streams.wired, events);
    let (mut side, concluded) = conclude(&plan, measured, &mut evidence);
    side.results.udp_receive = udp.and_then(crate::udp_receive::UdpWatch::finish);
    let mut errors: Vec<String> = side
        .results
        .error
        .iter()
        .map(|e| format!("this host: {e}"))
        .collect();
    errors.extend(concluded.error);
    // The UDP sockets stay open until the conversation ended: a closed one answers the
    // server's last datagrams with ICMP, which servers up to 3.12 took for an error.
    drop(streams.udp);
    let server = concluded.server;
    let secs = concluded.params.duration_ms as f64 / 1000.0;
    let remote = server.as_ref().map(|r| remote_side(&plan, r, secs));
    if let Some(r) = &server {
        if let Some(v) = r
            .server_output_json
            .as_ref()
            .and_then(VersionRange::from_server_output)
        {
            evidence.add(v, "server_output");
        }
        if let Some(m) = stream_mismatch(&plan, r, &cfg.server.to_string()) {
            if plan.request.bidirectional {
                evidence.add(VersionRange::without(Feature::Bidir), "refused_stream");
            }
            errors.push(m);
        }
    }
    let mut notes = plan.notes.clone();
    notes.extend(concluded.stalled);
    notes.extend(honoured(&plan, evidence.range));
    Ok(ClientRun {
        params: concluded.params,
        server: cfg.server,
        local_addr,
        local: side.results,
        remote,
        remote_intervals: Vec::new(),
        rtt: None,
        local_inventory,
        remote_inventory: None,
        rdma: None,
        iperf3: Some(Iperf3Run {
            streams: plan.streams.clone(),
            server,
            version: evidence.range,
            version_from: evidence.from,
            time_s: plan.time_s,
            omit_s: plan.omit_s,
            end_bytes: o.bytes,
            end_blocks: o.blocks,
            notes,
        }),
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        far_end_here: side.far_end_here,
    })
}

/// A test the server has taken, its streams open and running.
struct Opened {
    ctl: Control,
    local_addr: Option<SocketAddr>,
    local_ip: IpAddr,
    local_inventory: Option<HostFacts>,
    streams: Streams,
    evidence: Evidence,
}

/// The conversation up to TEST_RUNNING: the control connection, the parameters, the streams;
/// a `--bidir` test that a server of unknown release ran in half is refused here.
fn open_test(
    cfg: &ClientConfig,
    plan: &Iperf3Plan,
    known: Option<Version>,
) -> Result<Opened, ClientError> {
    let cookie = Cookie::generate()
        .map_err(|e| ClientError::Protocol(format!("the system's random source: {e}")))?;
    let mut ctl = open_control(cfg, plan, &cookie)?;
    let local_addr = ctl.sock.local_addr().ok();
    let local_ip = local_addr.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let local_inventory = cfg.inventory.as_ref().and_then(|f| f(local_ip));
    let streams = open_streams(cfg, plan, &cookie, local_ip)?;
    ctl.expect(State::TestStart, "the test's streams")?;
    ctl.expect(State::TestRunning, "TEST_START")?;
    let mut evidence = Evidence::new(known);
    if let Some(r) = streams.reply.and_then(VersionRange::from_udp_reply) {
        evidence.add(r, "udp_reply");
    }
    if plan.request.bidirectional
        && evidence.range.has(Feature::Bidir) != Some(true)
        && !refused_streams(&streams.wired, plan).is_empty()
    {
        return Err(ctl.refused(Iperf3Refusal::StreamRefused));
    }
    Ok(Opened {
        ctl,
        local_addr,
        local_ip,
        local_inventory,
        streams,
        evidence,
    })
}

/// The test itself: this end's streams, and the control connection beside them.
struct Measured {
    side: SideRun,
    /// When this end's streams started.
    start: Instant,
    ended: thread::Result<Ended>,
    /// This process's CPU over the test: (user, system) seconds.
    cpu: (f64, f64),
}

fn measure(
    cfg: &ClientConfig,
    plan: &Iperf3Plan,
    ctl: Control,
    local_ip: IpAddr,
    wired: Wired,
    events: &mut dyn FnMut(Event),
) -> Measured {
    let budget = plan.budget.map(Budget::new);
    let format = udp::Format::Iperf3 {
        width: SeqWidth::from_64bit_flag(plan.request.udp_counters_64bit),
    };
    let side = local_plan(cfg, format, budget.clone());
    if let Some(b) = budget.as_ref().filter(|_| plan.omit_s == 0) {
        b.arm();
    }
    events(Event::Started {
        server_memory_bytes: 0,
    });
    let cpu0 = sys::process_cpu();
    let (abort, local_done) = (Stop::new(), Stop::new());
    let (run, ended) = thread::scope(|sc| {
        let control = sc.spawn(|| {
            during_test(
                ctl,
                side.start,
                plan,
                budget.as_deref(),
                &abort,
                &local_done,
            )
        });
        let run = run_local(cfg, &side, local_ip, wired, &abort, events, &mut |_| {});
        local_done.set();
        (run, control.join())
    });
    let cpu1 = sys::process_cpu();
    Measured {
        side: run,
        start: side.start,
        ended,
        cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
    }
}

/// The end of the conversation.
struct Concluded {
    /// The test as it ran (an end on data: its time, from the start to TEST_END).
    params: TestParams,
    server: Option<Results>,
    error: Option<String>,
    stalled: Option<String>,
}

/// After the test: the results exchanged (when it ended as it should), the test's time.
fn conclude(
    plan: &Iperf3Plan,
    measured: Measured,
    evidence: &mut Evidence,
) -> (SideRun, Concluded) {
    let Measured {
        side,
        start,
        ended,
        cpu: (user, system),
    } = measured;
    let mut done = Concluded {
        params: plan.params.clone(),
        server: None,
        error: None,
        stalled: None,
    };
    let Ok(Ended {
        mut ctl,
        at,
        error,
        stalled,
    }) = ended
    else {
        done.error = Some("the control connection's thread failed".into());
        return (side, done);
    };
    done.stalled = stalled;
    let wall = at.saturating_duration_since(start).as_secs_f64();
    if plan.budget.is_some() {
        done.params.duration_ms = (wall * 1000.0).ceil() as u64;
    }
    if let Some(e) = error {
        done.error = Some(e);
        return (side, done);
    }
    let pct = |s: f64| s / wall.max(1e-9) * 100.0;
    let ours = our_results(plan, &side, [pct(user + system), pct(user), pct(system)]);
    match exchange(&mut ctl, &ours) {
        Ok(r) => done.server = Some(r),
        Err(e) => done.error = Some(e),
    }
    if let Some(r) = ctl.session.results_shape() {
        evidence.add(r, "results");
    }
    (side, done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kind: TestKind, direction: Direction) -> TestParams {
        let mut p = TestParams::new(kind, direction);
        p.length = kind.spec().default_length(&p);
        p
    }

    fn options() -> Iperf3Options {
        Iperf3Options::default()
    }

    #[test]
    fn a_plain_test_is_what_an_iperf3_client_asks() {
        let p = params(TestKind::TcpBw, Direction::Send);
        let plan = iperf3_plan(&p, &options()).unwrap();
        let r = &plan.request;
        assert_eq!((r.time, r.omit, r.parallel), (Some(10), 0, 1));
        assert!(!r.reverse && !r.bidirectional && r.get_server_output);
        assert_eq!(r.len, Some(i64::from(p.length)));
        assert_eq!(r.bandwidth, None, "unpaced TCP sends no bandwidth");
        assert!(!r.udp_counters_64bit);
        assert!(plan.notes.is_empty(), "{:?}", plan.notes);
        assert_eq!(plan.params.duration_ms, 10_000);
        assert_eq!(plan.streams.len(), 1);
        // What goes on the wire holds no false flag (an old server reads presence as true).
        let body = String::from_utf8(r.encode().unwrap()[4..].to_vec()).unwrap();
        assert!(!body.contains("false"), "{body}");
    }

    #[test]
    fn whole_seconds_round_up_and_say_so() {
        let mut p = params(TestKind::UdpBw, Direction::Receive);
        p.duration_ms = 2_500;
        p.omit_ms = 300;
        let plan = iperf3_plan(&p, &options()).unwrap();
        assert_eq!((plan.omit_s, plan.time_s), (1, 3), "0.3 s and 2.2 s");
        assert_eq!(
            (plan.params.omit_ms, plan.params.duration_ms),
            (1_000, 4_000)
        );
        assert_eq!(plan.notes.len(), 2, "{:?}", plan.notes);
        assert!(
            plan.notes[0].contains("-O 0.3 s is sent as 1 s"),
            "{:?}",
            plan.notes
        );
        assert!(plan.notes[1].contains("2.2 s"), "{:?}", plan.notes);
        let r = &plan.request;
        assert!(r.reverse && r.udp_counters_64bit);
        assert_eq!(r.bandwidth, Some(p.bitrate_bps.cast_signed()));
    }

    #[test]
    fn an_end_on_data_sends_no_time() {
        let p = params(TestKind::TcpBw, Direction::Bidir);
        let o = Iperf3Options {
            blocks: Some(10),
            ..options()
        };
        let plan = iperf3_plan(&p, &o).unwrap();
        assert_eq!(plan.request.time, Some(0));
        assert_eq!(plan.request.blockcount, Some(10));
        assert_eq!(plan.budget, Some(10 * u64::from(p.length)));
        assert_eq!(
            plan.params.duration_ms,
            u64::from(limits::MAX_TIME_S) * 1000,
            "bounded by iperf3's longest test"
        );
        assert_eq!(plan.streams.len(), 2);
        assert!(plan.request.bidirectional);
    }

    #[test]
    fn what_iperf3_cannot_carry_is_refused_with_the_reason() {
        for kind in [TestKind::TcpLat, TestKind::UdpLat, TestKind::TcpCrr] {
            let e = iperf3_plan(&params(kind, Direction::Send), &options()).unwrap_err();
            assert!(e.contains("TCP and UDP bandwidth tests only"), "{e}");
        }
        let mut soak = params(TestKind::TcpBw, Direction::Bidir);
        soak.soak = true;
        assert!(iperf3_plan(&soak, &options())
            .unwrap_err()
            .contains("port counters"));
        let mut many = params(TestKind::TcpBw, Direction::Send);
        many.streams = 129;
        assert!(iperf3_plan(&many, &options()).unwrap_err().contains("128"));
        let mut long = params(TestKind::TcpBw, Direction::Send);
        long.duration_ms = 86_401_000;
        assert!(iperf3_plan(&long, &options())
            .unwrap_err()
            .contains("86400"));
        let mut tiny = params(TestKind::UdpBw, Direction::Send);
        tiny.length = 15;
        assert!(iperf3_plan(&tiny, &options())
            .unwrap_err()
            .contains("16 to 65507"));
    }

    #[test]
    fn a_known_old_server_is_asked_only_what_it_can_do() {
        let old = Iperf3Options {
            server_version: Some(Version::new(3, 1, 3)),
            ..options()
        };
        let e = iperf3_plan(&params(TestKind::TcpBw, Direction::Bidir), &old).unwrap_err();
        assert!(e.starts_with("--bidir needs iperf3 3.7 or later"), "{e}");
        assert!(e.contains("3.1.3"), "{e}");
        let mut p = params(TestKind::TcpBw, Direction::Send);
        p.discard = true;
        let plan = iperf3_plan(&p, &old).unwrap();
        assert_eq!(plan.request.skip_rx_copy, None);
        assert!(plan.notes[0].contains("3.19"), "{:?}", plan.notes);
        // Unknown release: asked, and said afterwards by what the evidence shows.
        let plan = iperf3_plan(&p, &options()).unwrap();
        assert_eq!(plan.request.skip_rx_copy, Some(1));
        let n = honoured(&plan, VersionRange::ANY);
        assert!(n[0].contains("not known"), "{n:?}");
        assert!(honoured(&plan, VersionRange::with(Feature::SkipRxCopy)).is_empty());
        let n = honoured(&plan, VersionRange::without(Feature::ServerMaxDuration));
        assert!(n[0].contains("not known"), "{n:?}");
        let n = honoured(&plan, VersionRange::without(Feature::SkipRxCopy));
        assert!(n[0].contains("ignored it"), "{n:?}");
        // -Z in reverse asks the sending server for zero copy.
        let mut z = params(TestKind::TcpBw, Direction::Receive);
        z.zerocopy = true;
        assert_eq!(
            iperf3_plan(&z, &options()).unwrap().request.zerocopy,
            Some(1)
        );
        z.direction = Direction::Send;
        assert_eq!(iperf3_plan(&z, &options()).unwrap().request.zerocopy, None);
    }

    fn stream(id: u32, bytes: u64) -> StreamResult {
        StreamResult {
            id,
            bytes_sent: bytes,
            bytes_received: bytes,
            seconds: 2.0,
            ..StreamResult::default()
        }
    }

    #[test]
    fn this_ends_results_by_role() {
        let mut p = params(TestKind::UdpBw, Direction::Bidir);
        p.streams = 1;
        let plan = iperf3_plan(&p, &options()).unwrap();
        let mut sent = stream(0, 1000);
        sent.udp = Some(UdpStats {
            packets: 10,
            ..UdpStats::default()
        });
        let mut got = stream(1, 700);
        got.udp = Some(UdpStats {
            packets: 7,
            ..UdpStats::default()
        });
        // The received stream as the engine counted it: sequences 0..10 less 3, 5 and 8, 4
        // late and 6 twice (1..=10 on iperf3's wire); 2 ms apart on the sender's clock,
        // 2.1 ms on this one's. iperf3 counts 4 gaps' worth (3 after 3, 1 after 8) less one
        // for each datagram that came late or twice: 2 lost, its highest 10. (linerate's own
        // count, below, says 7 packets and nothing lost: not what an iperf3 peer is told.)
        let mut rx = udp::RecvState::new(udp::Format::Iperf3 {
            width: linerate_iperf3::udp::SeqWidth::Bits32,
        });
        let now = std::time::Instant::now();
        for (k, seq) in [0u64, 1, 2, 6, 4, 6, 7, 9].into_iter().enumerate() {
            let h = udp::Header {
                tag: 0,
                stream: 1,
                seq,
                send_ns: seq * 2_000_000,
            };
            rx.on_packet(&h, 100, k as u64 * 2_100_000, now);
        }
        let iperf3 = rx.iperf3.as_ref().expect("iperf3's counts");
        let (highest, errors, jitter) = (iperf3.packets(), iperf3.errors(), iperf3.jitter());
        assert_eq!((highest, errors), (10, 2), "iperf3's definitions");
        assert!(jitter > 0.0);
        let run = SideRun {
            results: SideResults {
                streams: vec![sent, got],
                ..SideResults::default()
            },
            rtt: None,
            omit_marks: None,
            udp_received: Some(vec![udp::RecvState::default(), rx]),
            far_end_here: false,
        };
        let r = our_results(&plan, &run, [12.0, 2.0, 10.0]);
        assert_eq!(r.sender_has_retransmits, SenderRetransmits::Unknown);
        assert_eq!(r.streams.len(), 2);
        let (a, b) = (&r.streams[0], &r.streams[1]);
        assert_eq!(
            (a.id.0, a.bytes, a.packets, a.retransmits),
            (1, 1000, 10, -1)
        );
        // iperf3's definitions, not linerate's: the highest sequence and the gaps.
        assert_eq!((b.id.0, b.bytes, b.packets, b.errors), (3, 700, 10, 2));
        assert!(
            (b.jitter - jitter).abs() < 1e-12,
            "seconds, as the engine counted"
        );
        assert_eq!(
            b.omitted.map(|o| (o.packets, o.errors)),
            Some((0, 0)),
            "no warm-up"
        );
        assert_eq!(b.end_time, Some(2.0));
        // It encodes as iperf3 reads it.
        let body = r.encode(RESULTS_MAX).unwrap();
        assert_eq!(Results::decode(&body[4..]).unwrap(), r);
    }

    #[test]
    fn the_servers_results_become_the_far_side() {
        let mut p = params(TestKind::UdpBw, Direction::Bidir);
        p.streams = 1;
        p.duration_ms = 2_000;
        let plan = iperf3_plan(&p, &options()).unwrap();
        let body = br#"{"cpu_util_total":40,"cpu_util_user":10,"cpu_util_system":30,"sender_has_retransmits":0,"streams":[
            {"id":1,"bytes":5000,"retransmits":-1,"jitter":0.0001,"errors":3,"packets":50,"start_time":0,"end_time":1.5},
            {"id":3,"bytes":6000,"retransmits":-1,"jitter":0,"errors":0,"packets":60,"start_time":0,"end_time":99}]}"#;
        let r = Results::decode(body).unwrap();
        let side = remote_side(&plan, &r, 2.0);
        assert_eq!(side.cpu.percent, 40.0);
        let (rx, tx) = (&side.streams[0], &side.streams[1]);
        // Stream 1: this end sent, the server received 47 of the highest 50.
        assert_eq!((rx.id, rx.bytes_received, rx.bytes_sent), (0, 5000, 0));
        let u = rx.udp.unwrap();
        assert_eq!((u.packets, u.lost), (47, 3));
        assert!((u.jitter_us - 100.0).abs() < 1e-9);
        assert_eq!(rx.seconds, 1.5);
        // Stream 3: the server sent 60; its absurd time gives way to the test's.
        assert_eq!(
            (tx.id, tx.bytes_sent, tx.udp.unwrap().packets),
            (1, 6000, 60)
        );
        assert_eq!(tx.seconds, 2.0);
        // Its CPU over both streams, all of it.
        let cpu: f64 = side.streams.iter().map(|s| s.cpu_s).sum();
        assert!((cpu - 0.8).abs() < 1e-9, "{cpu}");
        assert!(stream_mismatch(&plan, &r, "h:1").is_none());
        let half = Results::decode(
            br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":5,"retransmits":-1,"jitter":0,"errors":0,"packets":1}]}"#,
        )
        .unwrap();
        let m = stream_mismatch(&plan, &half, "h:1").unwrap();
        assert!(m.contains("no figures for stream(s) 3"), "{m}");
        assert!(m.contains("--bidir needs iperf3 3.7"), "{m}");
    }

    #[test]
    fn evidence_keeps_what_agrees() {
        let mut e = Evidence::new(None);
        e.add(VersionRange::with(Feature::TextUdpMagic), "udp_reply");
        e.add(VersionRange::without(Feature::StreamTimes), "results");
        assert_eq!(e.from, vec!["udp_reply"], "a contradiction is left out");
        e.add(
            VersionRange::exactly(Version::new(3, 12, 0)),
            "server_output",
        );
        assert_eq!(e.range.to_string(), "iperf3 3.12");
        let known = Evidence::new(Some(Version::new(3, 9, 0)));
        assert_eq!(known.from, vec!["ssh"]);
    }
}
