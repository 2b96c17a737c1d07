//! Connection rate (netperf's TCP_CRR): each transaction is a TCP connection of its own.
//!
//! The client connects, sends a `length`-byte request, reads the `length`-byte response, waits
//! for the server's close and closes; it times the whole transaction and starts the next. The
//! server accepts, reads the request, answers and closes first, as an HTTP/1.0 server does: the
//! TIME_WAIT state then stays on the server, whose port is fixed, and the client's ephemeral
//! port comes free at once, so a fast test does not run out of local ports.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::lat::Rtt;
use crate::meter::{Meter, Stop};

/// How long a connect, a request or a response may take before the transaction fails: far
/// beyond a handshake retransmitted for a full SYN queue (1 s, then 3 s).
pub const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a server thread blocked in `accept` looks at its stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(100);

/// A client's loop.
#[derive(Debug, Clone, Copy)]
pub struct ClientPlan {
    /// The server's listener for the test.
    pub server: SocketAddr,
    /// The local address to connect from (`-B`); None: the kernel's choice.
    pub bind: Option<IpAddr>,
    /// Bytes of request and of response.
    pub length: usize,
    /// Transactions are started until here.
    pub deadline: Instant,
    /// Transactions that start before this (the warm-up) are counted in the meter but not in
    /// the latency samples.
    pub record_from: Instant,
}

/// Why a transaction failed, in words that say what to look at.
fn failure(step: &str, e: &std::io::Error, server: SocketAddr) -> String {
    match e.kind() {
        ErrorKind::ConnectionRefused => format!(
            "{step}: {server} refused the connection (its listener is gone or its accept queue overflowed)"
        ),
        ErrorKind::AddrNotAvailable => format!(
            "{step}: no local port left for a new connection to {server}: {e} (the ephemeral port range, net.ipv4.ip_local_port_range, is exhausted)"
        ),
        ErrorKind::WouldBlock | ErrorKind::TimedOut => format!(
            "{step}: no answer from {server} within {} s",
            TRANSACTION_TIMEOUT.as_secs()
        ),
        ErrorKind::UnexpectedEof => format!("{step}: {server} closed the connection early"),
        _ => format!("{step}: {e}"),
    }
}

/// One transaction: connect, request, response, the server's close, close.
fn transaction(
    plan: &ClientPlan,
    req: &[u8],
    resp: &mut [u8],
) -> Result<(), (&'static str, std::io::Error)> {
    let sock = Socket::new(
        Domain::for_address(plan.server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| ("opening a socket", e))?;
    if let Some(ip) = plan.bind {
        sock.bind(&SockAddr::from(SocketAddr::new(ip, 0)))
            .map_err(|e| ("binding the local address", e))?;
    }
    sock.connect_timeout(&SockAddr::from(plan.server), TRANSACTION_TIMEOUT)
        .map_err(|e| ("connecting", e))?;
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(TRANSACTION_TIMEOUT))
        .map_err(|e| ("setting a timeout", e))?;
    s.write_all(req).map_err(|e| ("sending the request", e))?;
    s.read_exact(resp)
        .map_err(|e| ("reading the response", e))?;
    // The server closes first: wait for its FIN, so this end does not hold TIME_WAIT.
    let mut extra = [0u8; 64];
    loop {
        match s.read(&mut extra) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(("waiting for the server's close", e)),
        }
    }
}

/// The client's loop: transactions one after another until the deadline; each one's time goes
/// to `rtt` (from `record_from`) and a count of one to `meter`. Returns the first failure, which
/// ends the loop.
pub fn client(plan: &ClientPlan, rtt: &mut Rtt, meter: &Meter, stop: &Stop) -> Option<String> {
    let req = vec![0x22u8; plan.length.max(1)];
    let mut resp = vec![0u8; plan.length.max(1)];
    let mut t0 = Instant::now();
    while !stop.is_set() && t0 < plan.deadline {
        if let Err((step, e)) = transaction(plan, &req, &mut resp) {
            return Some(failure(step, &e, plan.server));
        }
        let t1 = Instant::now();
        if t0 >= plan.record_from {
            rtt.record(t1 - t0);
        }
        meter.add(1);
        t0 = t1;
    }
    None
}

/// What a server thread did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    /// Transactions answered.
    pub transactions: u64,
    /// Connections from another address than the test's client, closed at once.
    pub strangers: u64,
    /// Connections that failed (no request, a reset): the client's loop reports its own.
    pub failed: u64,
}

/// Answer one connection: read the request, send the response, close first.
fn answer(mut s: TcpStream, buf: &mut [u8]) -> std::io::Result<()> {
    s.set_read_timeout(Some(TRANSACTION_TIMEOUT))?;
    s.set_write_timeout(Some(TRANSACTION_TIMEOUT))?;
    s.read_exact(buf)?;
    s.write_all(buf)
    // Dropped here: the close, and the FIN the client waits for.
}

/// A server thread: accept connections on `listener` (shared by the test's threads) from
/// `client` only, answer each, until `stop`. `length`: the request and response size.
pub fn serve(listener: &TcpListener, client: IpAddr, length: usize, stop: &Stop) -> Served {
    let _ = socket2::SockRef::from(listener).set_read_timeout(Some(ACCEPT_POLL));
    let mut buf = vec![0u8; length.max(1)];
    let mut served = Served::default();
    while !stop.is_set() {
        match listener.accept() {
            Ok((s, from)) if from.ip() == client => match answer(s, &mut buf) {
                Ok(()) => served.transactions += 1,
                Err(_) => served.failed += 1,
            },
            Ok(_) => served.strangers += 1,
            // Timeouts (the poll), signals, connections reset in the queue, and no file
            // descriptor left (wait for one to close): none ends the test.
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => {}
        }
    }
    served
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_and_a_server_count_the_same_transactions() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = l.local_addr().unwrap();
        let stop = Stop::new();
        let s_stop = stop.clone();
        let srv = std::thread::spawn(move || serve(&l, server.ip(), 3, &s_stop));
        let start = Instant::now();
        let plan = ClientPlan {
            server,
            bind: None,
            length: 3,
            deadline: start + Duration::from_millis(300),
            record_from: start,
        };
        let (mut rtt, meter) = (Rtt::new(), Meter::new());
        assert_eq!(client(&plan, &mut rtt, &meter, &Stop::new()), None);
        stop.set();
        let served = srv.join().unwrap();
        assert!(meter.bytes() > 0, "no transaction");
        assert_eq!(meter.bytes(), rtt.count());
        assert_eq!(served.transactions, meter.bytes());
        assert_eq!(served.strangers, 0);
    }

    #[test]
    fn connections_from_another_address_are_closed_unanswered() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = l.local_addr().unwrap();
        let stop = Stop::new();
        let s_stop = stop.clone();
        // The test's client is 127.0.0.2; this connection comes from 127.0.0.1.
        let srv = std::thread::spawn(move || serve(&l, [127, 0, 0, 2].into(), 1, &s_stop));
        let mut s = TcpStream::connect(server).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(b"x");
        let mut b = [0u8; 1];
        assert!(
            matches!(s.read(&mut b), Ok(0) | Err(_)),
            "answered a stranger"
        );
        stop.set();
        let served = srv.join().unwrap();
        assert_eq!((served.transactions, served.strangers), (0, 1));
    }

    #[test]
    fn a_gone_server_is_a_clear_failure() {
        // A port nothing listens on: bind one, learn it, close it.
        let server = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let start = Instant::now();
        let plan = ClientPlan {
            server,
            bind: None,
            length: 1,
            deadline: start + Duration::from_secs(5),
            record_from: start,
        };
        let (mut rtt, meter) = (Rtt::new(), Meter::new());
        let e = client(&plan, &mut rtt, &meter, &Stop::new()).expect("a failure");
        assert!(e.contains("refused the connection"), "{e}");
        assert_eq!(meter.bytes(), 0);
    }
}
