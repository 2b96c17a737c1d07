//! iperf3's control protocol, the server's side (`docs/iperf3.md`): a stock iperf3 client (3.1.3
//! to 3.21) runs its test against `linerate serve` as against `iperf3 -s`, several at once, each
//! under serve's limits. The conversation is `linerate_iperf3::ServerSession`'s; what each end
//! runs is the kind's (`tcp_bw`, `udp_bw`) on this side's engines; what is protocol-neutral
//! (slots, memory, the registry of data connections, running a side) is `super`'s.
//!
//! A connection that opens with an iperf3 cookie is a data connection of the test waiting for
//! that cookie (its streams come after CREATE_STREAMS, each opening with the cookie again), or
//! else a new control connection. Every path answers the client or closes the connection: an
//! iperf3 client reads its state bytes without a timeout.
//!
//! - busy (`--max-tests`, or `--max-memory` once the parameters say what the test needs):
//!   ACCESS_DENIED, which every client prints as "the server is busy running a test";
//! - parameters unreadable, over a limit, or a test this server cannot run: SERVER_ERROR with
//!   the code of the refusal in iperf3's table, or, for a client too old to know it, an old code
//!   that says as much ([`ErrorCode::or_older`]);
//! - `serve --psk-file`: iperf3 has no way to prove it knows the key, so its tests are refused
//!   (IEAUTHTEST, "test authorization failed"; before 3.2, IENEWTEST with EACCES, "unable to
//!   create a new test: Permission denied"), and the log says why;
//! - a stream that does not come within the handshake timeout: SERVER_ERROR IESTREAMACCEPT
//!   with ETIMEDOUT;
//! - a test the client does not end (no TEST_END) within its time and [`LATE`], or within
//!   `--max-duration` for a test without a time (`-t 0`, `-n`, `-k`): its streams are stopped,
//!   and a 3.21 client gets IESERVERTESTDURATIONEXPIRED (older servers close without a word).

use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use linerate_engine::udp::Format;
use linerate_iperf3::params::limits::MAX_STREAMS as IPERF3_MAX_STREAMS;
use linerate_iperf3::results::{SenderRetransmits, StreamResults};

use crate::iperf3_counts::UdpCounts;
use linerate_iperf3::udp::SeqWidth;
use linerate_iperf3::{
    plan, Cookie, DataFlow, ErrorCode, FromClient, Iperf3Params, Protocol, ReportInterval,
    ReportStream, Results, Role, ServerError, ServerLimits, ServerReport, ServerSession,
    SessionError, SessionPhase, State, StreamId, StreamSummary, Test, UdpSummary, Version,
    RESULTS_MAX,
};
use linerate_proto::{defaults, Direction, SideResults, TestKind, TestParams};

use super::{run_side, DataConn, HandshakeSlot, Heard, Port, Shared, TestSlot};
use crate::kind::{self, Ends};
use crate::serverlog::{
    Iperf3Refused, Iperf3TestLog, Outcome, PeerProtocol, ServerLog, TestLog, TestRan,
};
use crate::side::{self, Ending, SidePlan, UdpFlow, Wired};

mod udp;
pub(crate) use udp::UdpPort;

/// How long after its time (`-t` and `-O`) a client's TEST_END may come: the client starts its
/// clock when it reads TEST_START, and its TEST_END crosses a path that the test fills.
const LATE: Duration = Duration::from_secs(5);

/// The largest results a client may send: about 250 bytes a stream, 128 streams each way.
const CLIENT_RESULTS_MAX: u32 = 1 << 20;

/// How long the server waits for the client's IPERF_DONE after its results.
const DONE_WAIT: Duration = Duration::from_secs(5);

/// Socket buffers of a UDP stream when the client asks for none (`-w`): room for bursts at
/// high rates, as linerate's own UDP tests have.
const UDP_BUFFER: usize = 4 * 1024 * 1024;

/// The registry key of an iperf3 test's data connections: the cookie, apart from linerate's
/// keys (hex, without a colon).
fn key(cookie: &Cookie) -> String {
    let mut k = String::from("iperf3:");
    for b in cookie.as_bytes() {
        let _ = write!(k, "{b:02x}");
    }
    k
}

/// A connection that opened with an iperf3 cookie.
pub(crate) struct Conn<'a> {
    pub sock: TcpStream,
    pub peer: &'a str,
    pub cookie: Cookie,
    /// Its place in the order of accepted connections.
    pub arrival: u64,
    /// The listener it came to.
    pub port: &'a Port,
}

/// A data connection of a test that waits for its cookie, or a new test.
pub(super) fn handle(sh: &Shared, conn: Conn<'_>, slot: &mut HandshakeSlot<'_>, deadline: Instant) {
    let Conn {
        sock,
        peer,
        cookie,
        arrival,
        port,
    } = conn;
    let data = DataConn {
        index: 0,
        arrival,
        sock,
    };
    let sock = match sh.deliver(&key(&cookie), data) {
        Ok(()) => {
            slot.release();
            return;
        }
        Err(sock) => sock,
    };
    let Some(mut c) = Control::new(sh, sock, peer, port, deadline, cookie) else {
        return;
    };
    control(&mut c, slot, &cookie);
    c.close();
}

/// Why reading the client's next message failed.
#[derive(Debug)]
enum ReadError {
    /// The client closed the connection (where, when the conversation says).
    Closed(Option<SessionPhase>),
    Timeout,
    Io(std::io::Error),
    /// Bytes the conversation does not allow.
    Protocol(SessionError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed(Some(p)) => write!(f, "the client closed the connection {}", p.describe()),
            Self::Closed(None) => write!(f, "the client closed the connection"),
            Self::Timeout => write!(f, "the client sent nothing in time"),
            Self::Io(e) => write!(f, "reading from the client: {e}"),
            Self::Protocol(e) => write!(f, "{e}"),
        }
    }
}

/// The client's side of the control connection as read: the conversation and the bytes it has
/// not taken yet. Shared with the watcher while the test runs.
struct Reader {
    session: ServerSession,
    sock: TcpStream,
    inbuf: Vec<u8>,
}

impl Reader {
    /// The client's next message, waiting until `until` at most.
    fn next(&mut self, until: Instant) -> Result<FromClient, ReadError> {
        loop {
            if !self.inbuf.is_empty() {
                let (used, event) = self
                    .session
                    .receive(&self.inbuf)
                    .map_err(ReadError::Protocol)?;
                self.inbuf.drain(..used);
                if let Some(e) = event {
                    return Ok(e);
                }
                if used > 0 {
                    continue;
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadError::Timeout);
            }
            self.sock
                .set_read_timeout(Some(left))
                .map_err(ReadError::Io)?;
            let mut buf = [0u8; 16 * 1024];
            match self.sock.read(&mut buf) {
                Ok(0) => {
                    return Err(ReadError::Closed(
                        self.session.closed().err().and_then(|e| e.closed_in()),
                    ))
                }
                Ok(n) => self.inbuf.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(ReadError::Timeout)
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset
                            | ErrorKind::ConnectionAborted
                            | ErrorKind::BrokenPipe
                    ) =>
                {
                    return Err(ReadError::Closed(None))
                }
                Err(e) => return Err(ReadError::Io(e)),
            }
        }
    }
}

/// A control connection past its cookie.
struct Control<'a> {
    sh: &'a Shared,
    sock: TcpStream,
    peer: &'a str,
    port: &'a Port,
    deadline: Instant,
    reader: Arc<Mutex<Reader>>,
    /// The client's version, once its parameters say it.
    version: Option<Version>,
    /// Its `client_version`, escaped for the log.
    client_version: Option<String>,
}

/// A string of the client's, fit for a log line: escaped, and at most 64 characters.
fn escaped(s: &str) -> String {
    let e: String = s.escape_debug().collect();
    e.chars().take(64).collect()
}

impl<'a> Control<'a> {
    fn new(
        sh: &'a Shared,
        sock: TcpStream,
        peer: &'a str,
        port: &'a Port,
        deadline: Instant,
        cookie: Cookie,
    ) -> Option<Control<'a>> {
        let mut session = ServerSession::new(CLIENT_RESULTS_MAX);
        // The cookie is in: the conversation moves on to the server's answer.
        let _ = session.receive(cookie.as_bytes());
        let reader = Reader {
            session,
            sock: sock.try_clone().ok()?,
            inbuf: Vec::new(),
        };
        Some(Control {
            sh,
            sock,
            peer,
            port,
            deadline,
            reader: Arc::new(Mutex::new(reader)),
            version: None,
            client_version: None,
        })
    }

    fn reader(&self) -> MutexGuard<'_, Reader> {
        self.reader.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read(&self, until: Instant) -> Result<FromClient, ReadError> {
        self.reader().next(until)
    }

    /// Write to the client; false when it cannot be written (the client is gone).
    fn send(&mut self, bytes: &[u8]) -> bool {
        self.sock.write_all(bytes).is_ok()
    }

    /// Send what the conversation allows now: false when it does not, or the write failed.
    fn send_with<const N: usize>(
        &mut self,
        msg: impl FnOnce(&mut ServerSession) -> Result<[u8; N], SessionError>,
    ) -> bool {
        let bytes = msg(&mut self.reader().session);
        bytes.is_ok_and(|b| self.send(&b))
    }

    /// The code to send for a refusal: `code` for a client that knows it, else IENEWTEST
    /// ("unable to create a new test") with the system's word for what was wrong (`errno`).
    fn code_for(&self, code: ErrorCode, errno: i32) -> (ErrorCode, i32) {
        match code.or_older(self.version, ErrorCode::IENEWTEST) {
            c if c == code => (code, if code.appends_errno() { errno } else { 0 }),
            older => (older, errno),
        }
    }

    /// SERVER_ERROR with `code` (adapted to the client's version) and `errno`, logged as
    /// refused with `reason`.
    fn refuse(&mut self, code: ErrorCode, errno: i32, reason: &str, params: Option<&TestParams>) {
        let (code, errno) = self.code_for(code, errno);
        let e = ServerError { code, errno };
        let bytes = self.reader().session.server_error(e);
        self.send(&bytes);
        self.sh.log(&ServerLog::Refused {
            client: self.peer.into(),
            reason: reason.into(),
            params: params.cloned(),
            iperf3: Some(Iperf3Refused {
                client_version: self.client_version.clone(),
                answer: "server_error",
                code: Some(code.0),
                code_name: code.name(),
            }),
        });
    }

    /// ACCESS_DENIED: busy, for `reason`.
    fn deny(&mut self, reason: &str, params: Option<&TestParams>) {
        let denied = self.reader().session.deny_busy();
        if let Ok(b) = denied {
            let _ = self.sock.write_all(&b);
        }
        self.sh.log(&ServerLog::Refused {
            client: self.peer.into(),
            reason: reason.into(),
            params: params.cloned(),
            iperf3: Some(Iperf3Refused {
                client_version: self.client_version.clone(),
                answer: "access_denied",
                code: None,
                code_name: None,
            }),
        });
    }

    fn dropped(&self, reason: String) {
        self.sh.log(&ServerLog::Dropped {
            client: self.peer.into(),
            reason,
        });
    }

    /// Close so that what was written is read: the client closes once it has read it (wait for
    /// that, at most a second and 64 KiB), so the last message is not cut off by a reset.
    fn close(&self) {
        let _ = self.sock.shutdown(Shutdown::Write);
        let mut r = self.reader();
        let until = Instant::now() + Duration::from_secs(1);
        let mut sink = [0u8; 4096];
        let mut taken = 0;
        while taken < 64 * 1024 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || r.sock.set_read_timeout(Some(left)).is_err() {
                break;
            }
            match r.sock.read(&mut sink) {
                Ok(n) if n > 0 => taken += n,
                _ => break,
            }
        }
    }

    /// The local address of the control connection: the address the client reached.
    fn local_ip(&self) -> IpAddr {
        self.sock
            .local_addr()
            .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip())
    }

    fn peer_addr(&self) -> Option<SocketAddr> {
        self.sock.peer_addr().ok()
    }
}

/// A test the server accepted: iperf3's reading of it, linerate's, and what it does not act on.
struct Admitted {
    test: Test,
    /// What runs: the kind, directions, streams, and the bound of the run (`duration_ms`).
    params: TestParams,
    ignored: Vec<String>,
    /// The CPU the client asked the server to use (`-A n,m`), for the test's streams.
    affinity: Vec<usize>,
}

/// A refusal: the iperf3 code, `errno`, and the reason for the log.
type Refusal3 = (ErrorCode, i32, String);

/// The control connection, from the cookie to the end of the test.
fn control(c: &mut Control<'_>, slot: &mut HandshakeSlot<'_>, cookie: &Cookie) {
    let sh = c.sh;
    let _ = c.sock.set_nodelay(true);
    if sh.tests_running() >= sh.cfg.limits.max_tests {
        c.deny(
            &format!(
                "iperf3 client: server busy: {} tests running, the limit is {} (serve --max-tests)",
                sh.tests_running(),
                sh.cfg.limits.max_tests
            ),
            None,
        );
        return;
    }
    if !c.send_with(ServerSession::param_exchange) {
        return;
    }
    let params = match c.read(c.deadline) {
        Ok(FromClient::Params(p)) => p,
        Ok(_) => return,
        Err(ReadError::Protocol(SessionError::Params(e))) => {
            let errno = if matches!(
                e,
                linerate_iperf3::DecodeError::Frame(
                    linerate_iperf3::JsonFrameError::TooLarge { .. }
                )
            ) {
                libc_errno::EMSGSIZE
            } else {
                libc_errno::EINVAL
            };
            c.refuse(
                ErrorCode::IERECVPARAMS,
                errno,
                &format!("iperf3 client: its parameters cannot be read: {e}"),
                None,
            );
            return;
        }
        Err(e) => {
            c.dropped(format!("iperf3 client, waiting for its parameters: {e}"));
            return;
        }
    };
    c.version = params.client_version();
    c.client_version = params.client_version.as_deref().map(escaped);
    if sh.cfg.psk.is_some() {
        c.refuse(
            ErrorCode::IEAUTHTEST,
            libc_errno::EACCES,
            "iperf3 client refused: this server requires a pre-shared key (serve --psk-file), \
             which an iperf3 client cannot prove it knows; measure with `linerate bench \
             --psk-file` instead",
            None,
        );
        return;
    }
    let a = match admit(c, &params) {
        Ok(a) => a,
        Err((code, errno, reason)) => {
            c.refuse(code, errno, &format!("iperf3 client: {reason}"), None);
            return;
        }
    };
    let test_slot = match sh.reserve(a.params.server_memory_bytes()) {
        Ok(s) => s,
        Err(reason) => {
            c.deny(&format!("iperf3 client: {reason}"), Some(&a.params));
            return;
        }
    };
    run_test(c, &a, slot, test_slot, cookie);
}

/// serve's limits in iperf3's terms: at most its own 128 streams, `--max-duration` for a test
/// with its warm-up (a test without a time of its own is bounded by it), its window.
fn server_limits(sh: &Shared) -> ServerLimits {
    let l = &sh.cfg.limits;
    ServerLimits {
        max_streams: l.max_streams.min(IPERF3_MAX_STREAMS),
        max_duration_s: Some(
            u32::try_from(l.max_duration_ms / 1000)
                .unwrap_or(u32::MAX)
                .max(1),
        ),
        max_window: l.max_window,
        max_total_bitrate_bps: None,
        open_ended: true,
        sctp: false,
    }
}

/// Check the client's parameters against iperf3's limits, serve's, and what this server can
/// run, and read them into the test that runs.
fn admit(c: &Control<'_>, p: &Iperf3Params) -> Result<Admitted, Refusal3> {
    let sh = c.sh;
    let l = &sh.cfg.limits;
    let errno = libc_errno::EINVAL;
    let test = p
        .check(&server_limits(sh))
        .map_err(|v| (v.code, errno, v.to_string()))?;
    let affinity = check_serve(c, p, &test)?;
    let udp = test.protocol == Protocol::Udp;
    let kind = if udp {
        TestKind::UdpBw
    } else {
        TestKind::TcpBw
    };
    let params = test_params(&test, kind, l);
    // The shape of an iperf3 datagram was checked by iperf3's rules (16 bytes at least);
    // linerate's (24, for its own header) does not apply to it.
    let mut shaped = params.clone();
    if udp {
        shaped.length = shaped.length.max(defaults::UDP_BW_MIN_LENGTH);
    }
    shaped
        .validate(l)
        .map_err(|r| (ErrorCode::IENEWTEST, errno, r.reason))?;
    kind::of(kind)
        .admit(&params, &sh.cfg)
        .map_err(|r| (ErrorCode::IENEWTEST, errno, r.reason))?;
    let mut params = params;
    // The run's bound: the client keeps the time and ends the test.
    if test.duration_s > 0 {
        params.duration_ms += LATE.as_millis() as u64;
    }
    Ok(Admitted {
        ignored: ignored(p, &test),
        test,
        params,
        affinity,
    })
}

/// What serve adds to iperf3's checks: its length and UDP rate limits, a UDP port, the socket
/// buffers this system gives, the CPU asked for (returned, to pin the streams to).
fn check_serve(c: &Control<'_>, p: &Iperf3Params, test: &Test) -> Result<Vec<usize>, Refusal3> {
    let l = &c.sh.cfg.limits;
    let errno = libc_errno::EINVAL;
    let udp = test.protocol == Protocol::Udp;
    if test.len > l.max_length {
        let code = if udp {
            ErrorCode::IEUDPBLOCKSIZE
        } else {
            ErrorCode::IEBLOCKSIZE
        };
        return Err((
            code,
            errno,
            format!(
                "writes of {} bytes (-l) asked for; this server allows at most {} (serve --max-length)",
                test.len, l.max_length
            ),
        ));
    }
    if let Some(why) = udp
        .then(|| l.udp_bitrate_refusal(test.bitrate_bps))
        .flatten()
    {
        return Err((
            ErrorCode::IETOTALRATE,
            errno,
            format!("{why} (iperf3's -b)"),
        ));
    }
    if udp && c.port.udp.is_none() {
        return Err((
            ErrorCode::IESTREAMLISTEN,
            libc_errno::EADDRINUSE,
            format!(
                "a UDP test, and this server could not bind UDP port {} (see the `listening` line)",
                c.port.addr.port()
            ),
        ));
    }
    if let Some(w) = test.window {
        if !window_fits(w) {
            return Err((
                ErrorCode::IESETBUF2.or_older(c.version, ErrorCode::IESETBUF),
                libc_errno::ENOBUFS,
                format!(
                    "a socket buffer of {w} bytes (-w) asked for; this system allows less \
                     (net.core.rmem_max, net.core.wmem_max)"
                ),
            ));
        }
    }
    let mut affinity = Vec::new();
    if let Some(cpu) = p.server_affinity {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        match usize::try_from(cpu) {
            Ok(c) if c < cpus => affinity.push(c),
            _ => {
                return Err((
                    ErrorCode::IEAFFINITY,
                    errno,
                    format!("the server's CPU {cpu} asked for (-A); this host has {cpus}"),
                ))
            }
        }
    }
    Ok(affinity)
}

/// The test as linerate runs it (its `duration_ms` the time asked for with the warm-up, or
/// `--max-duration` for a test without a time of its own).
fn test_params(test: &Test, kind: TestKind, l: &linerate_proto::Limits) -> TestParams {
    let udp = test.protocol == Protocol::Udp;
    let direction = match test.direction {
        DataFlow::Forward => Direction::Send,
        DataFlow::Reverse => Direction::Receive,
        DataFlow::Bidir => Direction::Bidir,
    };
    let mut params = TestParams::new(kind, direction);
    params.streams = test.streams;
    params.duration_ms = if test.duration_s == 0 {
        l.max_duration_ms
    } else {
        (u64::from(test.duration_s) + u64::from(test.omit_s)) * 1000
    };
    params.omit_ms = u64::from(test.omit_s) * 1000;
    params.interval_ms = 1000;
    params.length = test.len;
    params.window = test.window;
    params.bitrate_bps = test.bitrate_bps;
    if !udp {
        params.congestion.clone_from(&test.congestion);
        params.zerocopy = test.zerocopy;
        params.discard = test.skip_rx_copy;
    }
    params.fit(l);
    params
}

/// Whether this system gives a TCP socket buffers of `w` bytes (iperf3 reads them back and
/// fails with IESETBUF2 when they come out smaller).
fn window_fits(w: u32) -> bool {
    let Ok(s) = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None) else {
        return true;
    };
    let w = w as usize;
    let _ = s.set_recv_buffer_size(w);
    let _ = s.set_send_buffer_size(w);
    s.recv_buffer_size().is_ok_and(|r| r >= w) && s.send_buffer_size().is_ok_and(|r| r >= w)
}

/// The client's options this server does not act on, by their names in the parameters.
fn ignored(p: &Iperf3Params, t: &Test) -> Vec<String> {
    let udp = t.protocol == Protocol::Udp;
    let mut out: Vec<String> = [
        ("repeating_payload", p.repeating_payload),
        ("burst", p.burst.is_some_and(|b| b > 0)),
        ("flowlabel", p.flowlabel.is_some_and(|f| f > 0)),
        ("dont_fragment", p.dont_fragment.is_some_and(|d| d != 0)),
        ("mptcp", p.mptcp),
        ("authtoken", p.authtoken.is_some()),
        ("zerocopy", udp && t.zerocopy),
        ("skip_rx_copy", udp && t.skip_rx_copy),
        ("no_fq_socket_pacing", p.no_fq_socket_pacing),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(k, _)| k.to_string())
    .collect();
    out.extend(p.unknown.keys().take(8).map(|k| escaped(k)));
    out
}

/// The errno values this module sends (Linux's numbering, which every iperf3 client prints
/// through its own C library: the common ones agree on Linux, the BSDs and Cygwin).
mod libc_errno {
    pub const EACCES: i32 = 13;
    pub const EINVAL: i32 = 22;
    pub const EMSGSIZE: i32 = 90;
    pub const EADDRINUSE: i32 = 98;
    pub const ENOBUFS: i32 = 105;
    pub const ETIMEDOUT: i32 = 110;
}

/// How the client's side ended the run.
#[derive(Debug, Clone)]
enum ClientEnd {
    /// TEST_END, read at this moment: the results follow.
    TestEnd(Instant),
    /// CLIENT_TERMINATE or IPERF_DONE before the end.
    Terminated(State),
    /// It closed the connection, or sent what the conversation does not allow.
    Gone(String),
}

/// The data connections of a test, collected.
enum Collected {
    Tcp(Vec<TcpStream>),
    Udp(Vec<(UdpSocket, SocketAddr)>),
}

/// How an accepted test waits for its streams, registered before CREATE_STREAMS (the client
/// opens them as soon as it reads it).
enum Waiting {
    Tcp(Receiver<DataConn>),
    Udp(udp::UdpWait),
}

/// Register for the test's streams, send CREATE_STREAMS, take them; `None` when they did not
/// come (logged, and the client told when it is still there).
fn open_streams(
    c: &mut Control<'_>,
    a: &Admitted,
    id: u64,
    slot: &mut HandshakeSlot<'_>,
    test_slot: &mut TestSlot<'_>,
    cookie: &Cookie,
) -> Option<Collected> {
    let n = a.params.connections() as usize;
    let waiting = if a.test.protocol == Protocol::Udp {
        let port = c.port.udp.clone()?;
        let client = c.peer_addr().map_or(IpAddr::from([0, 0, 0, 0]), |p| p.ip());
        if let Some(w) = port.expect(client, n, c.deadline) {
            Waiting::Udp(w)
        } else {
            c.deny(
                "iperf3 client: another UDP test from the same address is still setting up \
                 its streams (UDP streams are told apart by address only)",
                Some(&a.params),
            );
            return None;
        }
    } else {
        Waiting::Tcp(test_slot.expect_data(&key(cookie), n))
    };
    // The test holds a test slot; its data connections need handshake slots of their own.
    slot.release();
    if !c.send_with(ServerSession::create_streams) {
        return None;
    }
    let collected = match &waiting {
        Waiting::Tcp(rx) => collect_tcp(c, rx, n).map(Collected::Tcp),
        Waiting::Udp(w) => collect_udp(c, w, n, a.test.window).map(Collected::Udp),
    };
    match collected {
        Ok(x) => Some(x),
        Err(Collect::Gone(reason)) => {
            log_failed(c, id, a, &reason);
            None
        }
        Err(Collect::Failed(reason, errno)) => {
            c.refuse(
                ErrorCode::IESTREAMACCEPT,
                errno,
                &format!("iperf3 client: {reason}"),
                Some(&a.params),
            );
            log_failed(c, id, a, &reason);
            None
        }
    }
}

/// An accepted test: register for its streams, take them, run, exchange results.
fn run_test(
    c: &mut Control<'_>,
    a: &Admitted,
    slot: &mut HandshakeSlot<'_>,
    mut test_slot: TestSlot<'_>,
    cookie: &Cookie,
) {
    let sh = c.sh;
    let id = sh.next_test_id();
    let Some(collected) = open_streams(c, a, id, slot, &mut test_slot, cookie) else {
        return;
    };
    // The streams in the order they came, with what the server does on each.
    let roles = plan(a.test.direction, a.test.streams);
    let report_streams = describe_streams(&collected, &roles);
    let (wired, congestion_used) = match wire(&a.params, &a.test, collected) {
        Ok(w) => w,
        Err(reason) => {
            c.refuse(
                ErrorCode::IEPROTOCOL,
                0,
                &format!("iperf3 client: {reason}"),
                Some(&a.params),
            );
            return;
        }
    };
    if !c.send_with(ServerSession::test_start_running) {
        log_failed(c, id, a, "the client went away before the test started");
        return;
    }
    let _ = c.sock.set_write_timeout(Some(defaults::RESULTS_TIMEOUT));
    let plan = SidePlan {
        params: a.params.clone(),
        is_client: false,
        start: Instant::now(),
        affinity: a.affinity.clone(),
        file: None,
        datagrams: Format::Iperf3 {
            width: SeqWidth::from_64bit_flag(a.test.udp_counters_64bit),
        },
        budget: None,
        ending: Ending::Peer,
    };
    let end: Arc<Mutex<Option<ClientEnd>>> = Arc::new(Mutex::new(None));
    let listen = listen_for_end(Arc::clone(&c.reader), Arc::clone(&end));
    let mut sink = |_: &linerate_proto::IntervalSample| {};
    let mut run = run_side(&plan, wired, &mut sink, listen);
    let how = end.lock().unwrap_or_else(PoisonError::into_inner).take();
    // The streams are done and their buffers freed: the slot goes before the results
    // exchange, so a client that starts its next test the moment it has them is not busy.
    let memory = test_slot.memory;
    drop(test_slot);
    if let Some(ClientEnd::TestEnd(at)) = how {
        // The streams' time ends when the client ended the test (iperf3's server stops its
        // clock on TEST_END), not when their threads noticed.
        let measured = at
            .saturating_duration_since(plan.start + Duration::from_millis(a.params.omit_ms))
            .as_secs_f64();
        for s in &mut run.results.streams {
            s.seconds = s.seconds.min(measured);
        }
    }
    let figures = Figures {
        a,
        run: &run,
        roles: &roles,
        congestion_used,
    };
    let mut log = Iperf3TestLog {
        client_version: c.client_version.clone(),
        client_bytes: None,
        code: None,
        ignored: a.ignored.clone(),
    };
    let error = match how {
        Some(ClientEnd::TestEnd(_)) => exchange_results(c, &figures, &report_streams, &mut log),
        Some(ClientEnd::Terminated(s)) => Some(format!(
            "the client ended the test early ({}): iperf3's Ctrl-C, or it gave up",
            s.name()
        )),
        Some(ClientEnd::Gone(why)) => Some(format!("the client went away mid-test: {why}")),
        None => {
            // No TEST_END within the bound: what a 3.21 server says; older ones close.
            let code = ErrorCode::IESERVERTESTDURATIONEXPIRED;
            if c.version.is_some_and(|v| code.understood_by(v)) {
                let bytes = c
                    .reader()
                    .session
                    .server_error(ServerError { code, errno: 0 });
                c.send(&bytes);
                log.code = Some(code.0);
            }
            Some(format!(
                "the client did not end the test within {:.0} s (its time and warm-up, and {} s \
                 more; or serve --max-duration): stopped",
                a.params.duration_ms as f64 / 1000.0,
                LATE.as_secs()
            ))
        }
    };
    log_test(c, id, &figures, error, log, memory);
    sh.served_one();
}

/// What listens on the control connection while the streams run: each call waits a moment
/// for the client's TEST_END (or a hang-up), and leaves in `end` how the client ended the test.
fn listen_for_end(
    reader: Arc<Mutex<Reader>>,
    end: Arc<Mutex<Option<ClientEnd>>>,
) -> impl FnMut() -> Heard + Send + 'static {
    move || {
        let mut r = reader.lock().unwrap_or_else(PoisonError::into_inner);
        let heard = match r.next(Instant::now() + Duration::from_millis(200)) {
            Err(ReadError::Timeout) => return Heard::Nothing,
            Ok(FromClient::State(State::TestEnd)) => ClientEnd::TestEnd(Instant::now()),
            Ok(FromClient::State(s)) => ClientEnd::Terminated(s),
            Ok(_) => ClientEnd::Gone("an unexpected message".into()),
            Err(e) => ClientEnd::Gone(e.to_string()),
        };
        let done = matches!(heard, ClientEnd::TestEnd(_));
        *end.lock().unwrap_or_else(PoisonError::into_inner) = Some(heard);
        if done {
            Heard::Done
        } else {
            Heard::Gone
        }
    }
}

enum Collect {
    /// The client went away or spoke out of turn: nothing more to say to it.
    Gone(String),
    /// The streams did not come: the reason and the errno to send.
    Failed(String, i32),
}

/// While waiting for streams: what the control connection says, without waiting.
fn control_now(c: &Control<'_>) -> Option<String> {
    match c.read(Instant::now() + Duration::from_millis(1)) {
        Err(ReadError::Timeout) => None,
        Ok(FromClient::State(s)) => Some(format!(
            "the client sent {} while its streams were set up",
            s.name()
        )),
        Ok(_) => Some("the client sent a message out of turn".into()),
        Err(e) => Some(e.to_string()),
    }
}

/// Take the test's `n` streams of `what` (`"TCP streams came"`) from `rx` until the handshake
/// deadline: each arrival is offered to `take`, which keeps it or not (a repeat); the client's
/// leaving the control connection ends the wait at once.
fn gather<T, U>(
    c: &Control<'_>,
    rx: &Receiver<T>,
    n: usize,
    what: &str,
    mut take: impl FnMut(T, &[U]) -> Result<Option<U>, Collect>,
) -> Result<Vec<U>, Collect> {
    let mut got: Vec<U> = Vec::with_capacity(n);
    while got.len() < n {
        let left = c.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Collect::Failed(
                format!(
                    "only {} of the test's {n} {what} within the handshake timeout ({:.1} s)",
                    got.len(),
                    c.sh.cfg.handshake_timeout.as_secs_f64()
                ),
                libc_errno::ETIMEDOUT,
            ));
        }
        match rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(x) => {
                if let Some(u) = take(x, &got)? {
                    got.push(u);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Some(why) = control_now(c) {
                    return Err(Collect::Gone(why));
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Collect::Gone("the test's registration ended".into()))
            }
        }
    }
    Ok(got)
}

/// Take the test's `n` TCP data connections, in the order the listener accepted them (which is
/// the order the client opened them, one after another).
fn collect_tcp(
    c: &Control<'_>,
    rx: &Receiver<DataConn>,
    n: usize,
) -> Result<Vec<TcpStream>, Collect> {
    let mut got = gather(c, rx, n, "TCP streams came", |d, _| Ok(Some(d)))?;
    got.sort_by_key(|d| d.arrival);
    Ok(got.into_iter().map(|d| d.sock).collect())
}

/// Take the test's `n` UDP streams: a connect from the client's address each, answered from a
/// socket of the stream's own.
fn collect_udp(
    c: &Control<'_>,
    w: &udp::UdpWait,
    n: usize,
    window: Option<u32>,
) -> Result<Vec<(UdpSocket, SocketAddr)>, Collect> {
    let local = c.local_ip();
    let buffer = window.map_or(UDP_BUFFER, |w| w as usize);
    gather(c, &w.rx, n, "UDP streams connected", |k, got| {
        // A repeat of a connect already taken is not another stream.
        if got.iter().any(|(_, from)| *from == k.from) {
            return Ok(None);
        }
        match w.open_stream(local, &k, buffer) {
            Ok(s) => Ok(Some((s, k.from))),
            Err(e) => Err(Collect::Failed(
                format!("cannot open the socket of a UDP stream: {e}"),
                e.raw_os_error().unwrap_or(libc_errno::EINVAL),
            )),
        }
    })
}

/// The streams as the server's report names them.
fn describe_streams(collected: &Collected, roles: &[linerate_iperf3::Stream]) -> Vec<ReportStream> {
    let host = |a: SocketAddr| (a.ip().to_canonical().to_string(), a.port());
    let addrs: Vec<(Option<SocketAddr>, Option<SocketAddr>)> = match collected {
        Collected::Tcp(v) => v
            .iter()
            .map(|s| (s.local_addr().ok(), s.peer_addr().ok()))
            .collect(),
        Collected::Udp(v) => v
            .iter()
            .map(|(s, from)| (s.local_addr().ok(), Some(*from)))
            .collect(),
    };
    roles
        .iter()
        .zip(addrs)
        .map(|(r, (local, remote))| ReportStream {
            id: r.id,
            role: r.server(),
            local: local.map_or(("?".into(), 0), host),
            remote: remote.map_or(("?".into(), 0), host),
        })
        .collect()
}

/// Hand the streams to the kind's functions with this test's socket options; and the TCP
/// congestion control in use.
fn wire(p: &TestParams, t: &Test, collected: Collected) -> Result<(Wired, Option<String>), String> {
    match (kind::of(p.kind).ends(), collected) {
        (Ends::Tcp { run, .. }, Collected::Tcp(socks)) => {
            for s in &socks {
                tcp_options(s, t);
            }
            let congestion = socks.first().and_then(|s| {
                socket2::SockRef::from(s).tcp_congestion().ok().map(|c| {
                    String::from_utf8_lossy(&c)
                        .trim_end_matches('\0')
                        .to_string()
                })
            });
            Ok((Wired::Tcp(run, socks), congestion))
        }
        (Ends::Udp { run, .. }, Collected::Udp(socks)) => {
            let flows = socks
                .into_iter()
                .map(|(s, _)| {
                    udp_options(&s, t);
                    UdpFlow {
                        sock: Arc::new(s),
                        peer: None,
                    }
                })
                .collect();
            Ok((Wired::Udp(run, flows), None))
        }
        _ => Err(format!(
            "a {} test cannot run over iperf3's streams",
            p.kind.as_str()
        )),
    }
}

/// A data connection's options, as iperf3's server sets them on its streams: socket buffers
/// (`-w`), TCP_NODELAY (`-N`), the congestion control (`-C`: a name this host lacks is only a
/// warning to iperf3, and nothing here), the TOS (`-S`), fair-queue pacing (`--fq-rate`).
fn tcp_options(s: &TcpStream, t: &Test) {
    let r = socket2::SockRef::from(s);
    let _ = s.set_read_timeout(None);
    let _ = s.set_write_timeout(None);
    if let Some(w) = t.window {
        let _ = r.set_recv_buffer_size(w as usize);
        let _ = r.set_send_buffer_size(w as usize);
    }
    if t.nodelay {
        let _ = s.set_nodelay(true);
    }
    if let Some(c) = &t.congestion {
        let _ = r.set_tcp_congestion(c.as_bytes());
    }
    tos(&r, s.local_addr().ok(), t.tos);
    if let Some(rate) = t.fq_rate_bps {
        let _ = linerate_engine::sys::set_max_pacing_rate(s, rate / 8);
    }
}

fn udp_options(s: &UdpSocket, t: &Test) {
    let r = socket2::SockRef::from(s);
    tos(&r, s.local_addr().ok(), t.tos);
    if let Some(rate) = t.fq_rate_bps {
        let _ = linerate_engine::sys::set_max_pacing_rate(s, rate / 8);
    }
}

fn tos(r: &socket2::SockRef<'_>, local: Option<SocketAddr>, tos: Option<u8>) {
    if let Some(tos) = tos {
        match local {
            Some(SocketAddr::V6(a)) if a.ip().to_ipv4_mapped().is_none() => {
                let _ = r.set_tclass_v6(u32::from(tos));
            }
            _ => {
                let _ = r.set_tos(u32::from(tos));
            }
        }
    }
}

/// Everything the results and the log are made of.
struct Figures<'r> {
    a: &'r Admitted,
    run: &'r side::SideRun,
    roles: &'r [linerate_iperf3::Stream],
    congestion_used: Option<String>,
}

impl Figures<'_> {
    fn results(&self) -> &SideResults {
        &self.run.results
    }

    /// UDP stream `i`'s counts by iperf3's definitions (`None` for a TCP test).
    fn udp(&self, i: usize) -> Option<UdpCounts> {
        if self.a.test.protocol != Protocol::Udp {
            return None;
        }
        let sends = self.roles.get(i)?.server() == Role::Sender;
        UdpCounts::of(self.run, i, sends, self.a.params.length)
    }

    /// A TCP sender's retransmissions after the warm-up.
    fn retransmits(&self, i: usize) -> Option<u64> {
        let s = self.results().streams.get(i)?;
        let total = s.tcp?.retransmits;
        let before = self
            .run
            .omit_marks
            .as_ref()
            .and_then(|m| m.get(i))
            .and_then(|m| m.retransmits)
            .unwrap_or(0);
        Some(total.saturating_sub(before))
    }

    /// The server's results, in iperf3's terms.
    fn iperf3_results(&self, report: Option<String>) -> Results {
        let udp = self.a.test.protocol == Protocol::Udp;
        let sends = self.roles.iter().any(|r| r.server() == Role::Sender);
        let sender_has_retransmits = if !sends {
            SenderRetransmits::Receiver
        } else if udp {
            SenderRetransmits::Unknown
        } else {
            SenderRetransmits::Known
        };
        let cpu = &self.results().cpu;
        let wall = cpu.wall_s.max(1e-9);
        let streams = self
            .roles
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let s = self.results().streams.get(i).cloned().unwrap_or_default();
                let sender = r.server() == Role::Sender;
                let mut e = StreamResults {
                    id: r.id,
                    bytes: if sender {
                        s.bytes_sent
                    } else {
                        s.bytes_received
                    },
                    retransmits: if sender && !udp {
                        self.retransmits(i).map_or(-1, u64::cast_signed)
                    } else {
                        -1
                    },
                    jitter: 0.0,
                    errors: 0,
                    omitted: None,
                    packets: 0,
                    start_time: Some(0.0),
                    end_time: Some(s.seconds),
                };
                self.udp(i).unwrap_or_default().fill(&mut e);
                e
            })
            .collect();
        Results {
            cpu_util_total: (cpu.user_s + cpu.system_s) / wall * 100.0,
            cpu_util_user: cpu.user_s / wall * 100.0,
            cpu_util_system: cpu.system_s / wall * 100.0,
            sender_has_retransmits,
            congestion_used: self.congestion_used.clone(),
            server_output_json: None,
            server_output_text: report,
            streams,
            unknown: serde_json::Map::new(),
        }
    }

    /// The server's report, as `iperf3 -s` prints it.
    fn report(&self, client: Option<SocketAddr>, streams: &[ReportStream]) -> ServerReport {
        let omit = self.a.params.omit_ms as f64 / 1000.0;
        let udp = self.a.test.protocol == Protocol::Udp;
        let intervals = self
            .results()
            .intervals
            .iter()
            .map(|i| {
                // After the warm-up, iperf3 counts from its end.
                let shift = if i.omitted { 0.0 } else { omit };
                ReportInterval {
                    start: (i.start_s - shift).max(0.0),
                    end: (i.end_s - shift).max(0.0),
                    omitted: i.omitted,
                    bytes: i.bytes.clone(),
                }
            })
            .collect();
        let summary = streams
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let r = self.results().streams.get(i).cloned().unwrap_or_default();
                let sender = s.role == Role::Sender;
                let counts = self.udp(i).unwrap_or_default();
                StreamSummary {
                    seconds: r.seconds,
                    bytes: if sender {
                        r.bytes_sent
                    } else {
                        r.bytes_received
                    },
                    retransmits: (sender && !udp).then(|| self.retransmits(i)).flatten(),
                    udp: udp.then(|| {
                        let (p0, e0) = counts.omitted.unwrap_or((0, 0));
                        UdpSummary {
                            jitter: if sender { 0.0 } else { counts.jitter },
                            lost: counts.errors - e0,
                            total: (counts.packets - p0).cast_signed(),
                        }
                    }),
                }
            })
            .collect();
        ServerReport {
            client: client.map_or(("?".into(), 0), |a| {
                (a.ip().to_canonical().to_string(), a.port())
            }),
            protocol: self.a.test.protocol,
            bidir: self.a.test.direction == DataFlow::Bidir,
            streams: streams.to_vec(),
            intervals,
            summary,
        }
    }
}

/// EXCHANGE_RESULTS, the client's results, the server's, DISPLAY_RESULTS, and the client's
/// IPERF_DONE. The error of the exchange, if any.
fn exchange_results(
    c: &mut Control<'_>,
    f: &Figures<'_>,
    streams: &[ReportStream],
    log: &mut Iperf3TestLog,
) -> Option<String> {
    if !c.send_with(ServerSession::exchange_results) {
        return Some("the client went away before the results".into());
    }
    let theirs = match c.read(Instant::now() + defaults::RESULTS_TIMEOUT) {
        Ok(FromClient::Results(r)) => r,
        Ok(_) => return Some("the client sent something else than its results".into()),
        Err(ReadError::Protocol(e)) => {
            let e = format!("the client's results cannot be read: {e}");
            c.refuse(
                ErrorCode::IERECVRESULTS,
                libc_errno::EINVAL,
                &format!("iperf3 client: {e}"),
                None,
            );
            log.code = Some(ErrorCode::IERECVRESULTS.0);
            return Some(e);
        }
        Err(e) => return Some(format!("waiting for the client's results: {e}")),
    };
    log.client_bytes = Some(theirs.streams.iter().map(|s| s.bytes).sum());
    let ids: Vec<StreamId> = f.roles.iter().map(|r| r.id).collect();
    let mismatch = theirs.match_streams(&ids).err();
    let report =
        f.a.test
            .get_server_output
            .then(|| f.report(c.peer_addr(), streams).text());
    let ours = f.iperf3_results(report);
    let bytes = c.reader().session.results_and_display(&ours, RESULTS_MAX);
    match bytes {
        Ok(b) if c.send(&b) => {}
        Ok(_) => return Some("the client went away while the server sent its results".into()),
        Err(e) => return Some(format!("the server's results: {e}")),
    }
    // The client's IPERF_DONE (or its close) ends the test.
    let _ = c.read(Instant::now() + DONE_WAIT);
    let run_error = f.results().error.clone();
    match (run_error, mismatch) {
        (Some(e), _) => Some(e),
        (None, Some(m)) => Some(format!(
            "the client's results list other streams than the test's (unknown {:?}, missing {:?}, repeated {:?})",
            m.unknown, m.missing, m.repeated
        )),
        (None, None) => None,
    }
}

fn log_failed(c: &Control<'_>, id: u64, a: &Admitted, error: &str) {
    c.sh.log(&ServerLog::Test(TestLog::Failed {
        test_id: id,
        client: c.peer.into(),
        protocol: PeerProtocol::Iperf3,
        kind: a.params.kind.as_str().into(),
        result: Outcome::Error,
        error: error.into(),
    }));
}

fn log_test(
    c: &Control<'_>,
    id: u64,
    f: &Figures<'_>,
    error: Option<String>,
    log: Iperf3TestLog,
    memory: u64,
) {
    let r = f.results();
    let bytes: u64 = r
        .streams
        .iter()
        .map(|s| s.bytes_received + s.bytes_sent)
        .sum();
    let secs = r.streams.iter().map(|s| s.seconds).fold(0.0_f64, f64::max);
    let t = &f.a.test;
    c.sh.log(&ServerLog::Test(TestLog::Ran(TestRan {
        test_id: id,
        client: c.peer.into(),
        protocol: PeerProtocol::Iperf3,
        kind: f.a.params.kind,
        direction: f.a.params.direction,
        streams: t.streams,
        duration_s: if t.duration_s > 0 {
            f64::from(t.duration_s)
        } else {
            secs
        },
        bytes,
        gbps: linerate_units::gbps(bytes, secs),
        cpu_percent: r.cpu.percent,
        memory_bytes: memory,
        result: Outcome::of(error.as_ref()),
        error,
        file: None,
        iperf3: Some(log),
    })));
}
