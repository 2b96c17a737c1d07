//! The metrics endpoint: `GET /metrics` in Prometheus' text format, on a minimal HTTP/1.1
//! server of the standard library's sockets.
//!
//! Why not a crate: the endpoint serves one resource to one kind of client (a scraper), one
//! request per connection; an HTTP crate would bring a parser, keep-alive, chunked bodies and
//! thread pools this needs none of, and its limits would be its own. Here every limit is
//! visible and the operator's: at most `max_clients` connections are served at once (more are
//! answered `503` and closed at once, from the accepting thread, without reading them), each
//! has `timeout` to send its request head (at most [`MAX_REQUEST_BYTES`]: more is `431`) and to
//! read the answer, and the answer is the body the sampler published last, shared, never built
//! for a client. A slow or hostile client holds one thread and 8 KiB until its time is up; it
//! cannot grow the memory or delay the sampling, which never waits for the endpoint.

use std::fmt::Write as _;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;

/// The longest request head read (request line and headers): a scraper's is a few hundred bytes.
pub const MAX_REQUEST_BYTES: usize = 8192;
/// The stack of a connection's thread: it holds the request buffer and little else.
const CONNECTION_STACK: usize = 64 * 1024;
/// How long a refusal may take to write (a fresh socket's buffer takes it at once).
const REFUSAL_TIMEOUT: Duration = Duration::from_millis(200);

/// The operator's limits.
#[derive(Debug, Clone, Copy)]
pub struct ClientLimits {
    pub max_clients: usize,
    pub timeout: Duration,
}

/// A running endpoint: the body it serves is replaced with [`MetricsServer::publish`].
#[derive(Debug)]
pub struct MetricsServer {
    body: Arc<Mutex<Arc<str>>>,
    addr: SocketAddr,
}

/// `--listen`: `PORT` (on 127.0.0.1), `ADDR:PORT`, `[v6]:PORT` or `name:PORT`.
pub fn listen_addr(s: &str) -> anyhow::Result<SocketAddr> {
    let s = s.trim();
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let mut addrs = s.to_socket_addrs().with_context(|| {
        format!("--listen {s}: expected a port (9477, on 127.0.0.1) or ADDR:PORT (0.0.0.0:9477, [::1]:9477)")
    })?;
    addrs
        .next()
        .with_context(|| format!("--listen {s}: the name has no address"))
}

impl MetricsServer {
    /// Binds `addr` and serves from a thread of its own.
    pub fn start(addr: SocketAddr, limits: ClientLimits) -> anyhow::Result<Self> {
        let listener =
            TcpListener::bind(addr).with_context(|| format!("--listen {addr}: cannot listen"))?;
        let addr = listener.local_addr()?;
        let body: Arc<Mutex<Arc<str>>> = Arc::new(Mutex::new(Arc::from("")));
        let shared = Arc::clone(&body);
        thread::Builder::new()
            .name("metrics-accept".into())
            .spawn(move || accept(&listener, &shared, limits))
            .context("cannot start the metrics endpoint's thread")?;
        Ok(Self { body, addr })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The body every request gets from now on.
    pub fn publish(&self, text: String) {
        *self.body.lock().unwrap_or_else(PoisonError::into_inner) = Arc::from(text);
    }
}

fn accept(listener: &TcpListener, body: &Arc<Mutex<Arc<str>>>, limits: ClientLimits) {
    let active = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(stream) = conn else {
            // Out of descriptors or a connection reset before it was taken: try again later
            // rather than spin.
            thread::sleep(Duration::from_millis(20));
            continue;
        };
        if active.load(Ordering::Acquire) >= limits.max_clients {
            refuse(stream, limits.max_clients);
            continue;
        }
        active.fetch_add(1, Ordering::AcqRel);
        let body = Arc::clone(body);
        let held = Arc::clone(&active);
        let spawned = thread::Builder::new()
            .name("metrics-client".into())
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
                serve(stream, &body, limits.timeout);
                held.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn refuse(mut stream: TcpStream, max: usize) {
    let _ = stream.set_write_timeout(Some(REFUSAL_TIMEOUT));
    let text = format!("busy: {max} clients are being served (--max-clients); try again\n");
    let mut r = response_head(
        "503 Service Unavailable",
        text.len(),
        &[("Retry-After", "1")],
    );
    r.push_str(&text);
    let _ = stream.write_all(r.as_bytes());
}

/// A response head, for a body of `body_len` bytes.
fn response_head(status: &str, body_len: usize, extra: &[(&str, &str)]) -> String {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {body_len}\r\nConnection: close\r\n"
    );
    for (k, v) in extra {
        let _ = write!(r, "{k}: {v}\r\n");
    }
    r.push_str("\r\n");
    r
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    Metrics { head: bool },
    Index { head: bool },
    NotFound,
    BadMethod,
    Bad,
}

/// The request line of a head: `GET /metrics HTTP/1.1`.
fn parse(head: &[u8]) -> Request {
    let Ok(text) = std::str::from_utf8(head) else {
        return Request::Bad;
    };
    let line = text.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Bad;
    };
    if !version.starts_with("HTTP/1.") {
        return Request::Bad;
    }
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Request::BadMethod,
    };
    match target.split('?').next().unwrap_or("") {
        "/metrics" => Request::Metrics { head },
        "/" => Request::Index { head },
        _ => Request::NotFound,
    }
}

/// Reads one request head within the deadline; `Err(status)` when it cannot be answered.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Vec<u8>, Option<&'static str>> {
    let mut buf = vec![0u8; MAX_REQUEST_BYTES];
    let mut n = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Some("408 Request Timeout"));
        }
        let _ = stream.set_read_timeout(Some(left.min(Duration::from_secs(1))));
        match stream.read(&mut buf[n..]) {
            Ok(0) => return Err(None),
            Ok(k) => n += k,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => return Err(None),
        }
        let got = &buf[..n];
        if got.windows(4).any(|w| w == b"\r\n\r\n") || got.windows(2).any(|w| w == b"\n\n") {
            buf.truncate(n);
            return Ok(buf);
        }
        if n == buf.len() {
            return Err(Some("431 Request Header Fields Too Large"));
        }
    }
}

/// Writes all of `head`, then all of `body`, before `deadline`, or gives up. The two go out
/// in one write while the head is not all sent (one segment for a small answer, as when they
/// were one buffer), and the body is written from where it lies: a metrics body is the one the
/// sampler published, never copied for a client.
fn write_within(stream: &mut TcpStream, head: &[u8], body: &[u8], deadline: Instant) {
    let mut sent = 0;
    while sent < head.len() + body.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_write_timeout(Some(left)).is_err() {
            return;
        }
        let wrote = match head.get(sent..).filter(|h| !h.is_empty()) {
            Some(h) => stream.write_vectored(&[IoSlice::new(h), IoSlice::new(body)]),
            None => stream.write(&body[sent - head.len()..]),
        };
        match wrote {
            Ok(0) => return,
            Ok(k) => sent += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn serve(mut stream: TcpStream, body: &Mutex<Arc<str>>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let shared: Arc<str>;
    let refused: String;
    let (status, text, extra, head_only): (&str, &str, &[(&str, &str)], bool) =
        match read_head(&mut stream, deadline) {
            Ok(head) => match parse(&head) {
                Request::Metrics { head } => {
                    shared = Arc::clone(&body.lock().unwrap_or_else(PoisonError::into_inner));
                    ("200 OK", &*shared, &[], head)
                }
                Request::Index { head } => (
                    "200 OK",
                    "linerate watch: the metrics are at /metrics\n",
                    &[],
                    head,
                ),
                Request::NotFound => (
                    "404 Not Found",
                    "not found: the metrics are at /metrics\n",
                    &[],
                    false,
                ),
                Request::BadMethod => (
                    "405 Method Not Allowed",
                    "only GET and HEAD\n",
                    &[("Allow", "GET, HEAD")],
                    false,
                ),
                Request::Bad => (
                    "400 Bad Request",
                    "expected an HTTP/1.x request line\n",
                    &[],
                    false,
                ),
            },
            Err(Some(status)) => {
                refused = format!("{status}\n");
                (status, refused.as_str(), &[], false)
            }
            Err(None) => return,
        };
    let head = response_head(status, text.len(), extra);
    let text = if head_only { "" } else { text };
    write_within(&mut stream, head.as_bytes(), text.as_bytes(), deadline);
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_told_apart() {
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics { head: false }
        );
        assert_eq!(
            parse(b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n"),
            Request::Metrics { head: true }
        );
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\n\r\n"),
            Request::Index { head: false }
        );
        assert_eq!(parse(b"GET /other HTTP/1.1\r\n\r\n"), Request::NotFound);
        assert_eq!(parse(b"POST /metrics HTTP/1.1\r\n\r\n"), Request::BadMethod);
        assert_eq!(parse(b"GET /metrics\r\n\r\n"), Request::Bad);
        assert_eq!(parse(b"GET /metrics SPDY/3\r\n\r\n"), Request::Bad);
        assert_eq!(parse(b"\xff\xfe\r\n\r\n"), Request::Bad);
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            listen_addr("9477").unwrap(),
            "127.0.0.1:9477".parse().unwrap()
        );
        assert_eq!(
            listen_addr(":9477").unwrap(),
            "127.0.0.1:9477".parse().unwrap()
        );
        assert_eq!(
            listen_addr("0.0.0.0:1").unwrap(),
            "0.0.0.0:1".parse().unwrap()
        );
        assert_eq!(listen_addr("[::1]:2").unwrap(), "[::1]:2".parse().unwrap());
        let e = listen_addr("nonsense").unwrap_err().to_string();
        assert!(
            e.contains("--listen nonsense") && e.contains("expected"),
            "{e}"
        );
    }

    #[test]
    fn the_head_ends_with_a_blank_line_and_counts_the_body() {
        let r = response_head("200 OK", 3, &[("Retry-After", "1")]);
        assert!(
            r.ends_with("\r\n\r\n") && r.contains("Content-Length: 3"),
            "{r}"
        );
        assert!(r.contains("\r\nRetry-After: 1\r\n"), "{r}");
    }
}
