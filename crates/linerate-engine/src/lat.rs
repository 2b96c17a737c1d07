//! Request/response latency: the client times each round trip with the
//! monotonic clock and records it in linerate-stats' histogram (ns, 3 significant digits).

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use linerate_proto::LatencyStats;
use linerate_stats::LatencyHistogram;

use crate::meter::{Meter, Stop};

/// A UDP request unanswered for this long counts as lost.
pub const UDP_TIMEOUT: Duration = Duration::from_millis(200);

/// Before blocking for a reply, poll for this long (`bench --spin US`): a reply that arrives
/// within it costs no scheduler wake-up, so the round trip measures the network path rather
/// than the wake-up latency of two idle threads. Off by default: polling costs a core at each
/// end for the whole test, and the peers (netperf, sockperf) block too; doctor turns it on when
/// the host has the idle cores for it. The poll yields between attempts, so two ends the
/// scheduler put on one core still take turns. Measured on a loaded 2-core host (load average
/// 9): p50 6.5 µs polling with the ends pinned to separate cores, 13.5 µs unpinned (one core
/// shared), 12 µs blocking; before the yield, unpinned polling took the whole spin (213 µs).
pub const DEFAULT_SPIN: Duration = Duration::ZERO;

/// Read exactly `buf.len()` bytes, polling without blocking for up to `spin` first.
fn read_exact_spin(mut sock: &TcpStream, buf: &mut [u8], spin: Duration) -> std::io::Result<()> {
    let mut got = 0;
    if !spin.is_zero() {
        let t0 = Instant::now();
        while got < buf.len() {
            match crate::sys::recv_nowait(sock, &mut buf[got..]) {
                Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if t0.elapsed() >= spin {
                        break;
                    }
                    // Yield rather than spin on the CPU: when the scheduler has put the other
                    // end on this same core (it wakes the peer where the waker runs), a pure
                    // spin kept it from running until the spin ran out, and every round trip
                    // took the whole spin (measured: p50 213 µs with --spin 200 on a loaded
                    // 2-core host, against 12 µs blocking). On an idle core of its own the
                    // yield returns at once (nothing else is runnable there).
                    std::thread::yield_now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    sock.read_exact(&mut buf[got..])
}

/// Round-trip samples, and the requests that got no reply.
#[derive(Debug, Default)]
pub struct Rtt {
    hist: LatencyHistogram,
    pub lost: u64,
}

impl Rtt {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&mut self, d: Duration) {
        self.hist.record(d);
    }

    pub fn count(&self) -> u64 {
        self.hist.count()
    }

    /// Percentiles in µs, at full precision (the wire carries them so; documents round).
    pub fn stats(&self) -> LatencyStats {
        let Some(l) = self.hist.summary() else {
            return LatencyStats {
                lost: self.lost,
                ..LatencyStats::default()
            };
        };
        LatencyStats {
            p50: l.p50,
            p90: l.p90,
            p99: l.p99,
            p999: l.p999,
            max: l.max,
            min: l.min.unwrap_or(0.0),
            mean: l.mean,
            stddev: l.stddev.unwrap_or(0.0),
            transactions: self.hist.count(),
            lost: self.lost,
        }
    }

    /// Counts per bucket for plotting: (upper bound µs, count), log-spaced.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        self.hist.buckets()
    }
}

/// Samples of several threads of one test together (connection-rate streams).
impl std::ops::AddAssign<&Rtt> for Rtt {
    fn add_assign(&mut self, o: &Rtt) {
        self.hist += &o.hist;
        self.lost = self.lost.saturating_add(o.lost);
    }
}

/// Client side of a TCP round-trip test.
pub fn tcp_client(
    mut sock: &TcpStream,
    length: usize,
    spin: Duration,
    deadline: Instant,
    rtt: &mut Rtt,
    meter: &Meter,
    stop: &Stop,
) -> Option<String> {
    let _ = sock.set_nodelay(true);
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let req = vec![0x11u8; length.max(1)];
    let mut resp = vec![0u8; length.max(1)];
    let mut err = None;
    // Two clock reads per round trip: the reply's time stamp is also the deadline check.
    let mut t0 = Instant::now();
    while !stop.is_set() && t0 < deadline {
        if let Err(e) = sock.write_all(&req) {
            err = Some(format!("sending a request: {e}"));
            break;
        }
        if let Err(e) = read_exact_spin(sock, &mut resp, spin) {
            err = Some(match e.kind() {
                ErrorKind::UnexpectedEof => "the server closed the connection".to_string(),
                ErrorKind::WouldBlock | ErrorKind::TimedOut => "no response for 10 s".to_string(),
                _ => format!("reading a response: {e}"),
            });
            break;
        }
        let t1 = Instant::now();
        rtt.record(t1 - t0);
        meter.add(1);
        t0 = Instant::now();
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    err
}

/// Server side of a TCP round-trip test: echo `length`-byte requests until end of stream.
pub fn tcp_echo(
    mut sock: &TcpStream,
    length: usize,
    spin: Duration,
    idle: Duration,
    stop: &Stop,
) -> Option<String> {
    let _ = sock.set_nodelay(true);
    let _ = sock.set_read_timeout(Some(idle));
    let mut buf = vec![0u8; length.max(1)];
    while !stop.is_set() {
        match read_exact_spin(sock, &mut buf, spin) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return None,
            Err(e) => return Some(format!("reading a request: {e}")),
        }
        if let Err(e) = sock.write_all(&buf) {
            return Some(format!("sending a response: {e}"));
        }
    }
    None
}

/// Client side of a UDP round-trip test on a connected socket.
pub fn udp_client(
    sock: &UdpSocket,
    length: usize,
    deadline: Instant,
    rtt: &mut Rtt,
    meter: &Meter,
    stop: &Stop,
) -> Option<String> {
    let _ = sock.set_read_timeout(Some(UDP_TIMEOUT));
    let mut req = vec![0u8; length.max(8)];
    let mut resp = vec![0u8; length.max(8) + 64];
    let mut seq: u64 = 0;
    while !stop.is_set() && Instant::now() < deadline {
        seq += 1;
        req[..8].copy_from_slice(&seq.to_le_bytes());
        let t0 = Instant::now();
        if let Err(e) = sock.send(&req) {
            return Some(format!("sending a request: {e}"));
        }
        // Wait for the matching reply; stale replies of lost requests are skipped.
        loop {
            match sock.recv(&mut resp) {
                Ok(n) if n >= 8 && resp[..8] == seq.to_le_bytes() => {
                    rtt.record(t0.elapsed());
                    meter.add(1);
                    break;
                }
                Ok(_) => {
                    if t0.elapsed() > UDP_TIMEOUT {
                        rtt.lost += 1;
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    rtt.lost += 1;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    return Some("the server's UDP port refused the request".into());
                }
                Err(e) => return Some(format!("reading a response: {e}")),
            }
        }
    }
    None
}

/// Server side of a UDP round-trip test: echo every datagram from the registered peer.
pub fn udp_echo(sock: &UdpSocket, stop: &Stop) -> Option<String> {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; 65_536];
    while !stop.is_set() {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let _ = sock.send_to(&buf[..n], from);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock
                        | ErrorKind::TimedOut
                        | ErrorKind::Interrupted
                        | ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => return Some(format!("echoing UDP: {e}")),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_from_a_real_histogram() {
        let mut r = Rtt::new();
        for us in 1..=1000u64 {
            r.record(Duration::from_micros(us));
        }
        let s = r.stats();
        assert_eq!(s.transactions, 1000);
        assert!((s.p50 - 500.0).abs() / 500.0 < 0.002, "{}", s.p50);
        assert!((s.p99 - 990.0).abs() / 990.0 < 0.002, "{}", s.p99);
        assert!((s.max - 1000.0).abs() / 1000.0 < 0.002);
        assert!((s.mean - 500.5).abs() < 1.0);
        assert!(r.buckets().iter().map(|b| b.1).sum::<u64>() == 1000);
    }

    #[test]
    fn samples_of_several_threads_merge() {
        let (mut a, mut b) = (Rtt::new(), Rtt::new());
        a.record(Duration::from_micros(10));
        b.record(Duration::from_micros(30));
        b.lost = 2;
        a += &b;
        let s = a.stats();
        assert_eq!((s.transactions, s.lost), (2, 2));
        assert!((s.mean - 20.0).abs() < 0.1, "{}", s.mean);
    }
}
