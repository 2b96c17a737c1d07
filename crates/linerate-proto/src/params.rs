//! Test parameters and the server's limits.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    TcpBw,
    UdpBw,
    TcpLat,
    UdpLat,
}

impl TestKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TcpBw => "tcp_bw",
            Self::UdpBw => "udp_bw",
            Self::TcpLat => "tcp_lat",
            Self::UdpLat => "udp_lat",
        }
    }

    pub fn is_udp(self) -> bool {
        matches!(self, Self::UdpBw | Self::UdpLat)
    }

    pub fn is_latency(self) -> bool {
        matches!(self, Self::TcpLat | Self::UdpLat)
    }
}

/// Which way data flows, from the client's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client sends, server receives (iperf3's default).
    Send,
    /// Server sends, client receives (`-R`).
    Receive,
    /// Both at once (`--bidir`): each stream index has one connection each way.
    Bidir,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestParams {
    pub kind: TestKind,
    pub direction: Direction,
    /// Parallel streams (per direction for bidir).
    pub streams: u32,
    pub duration_ms: u64,
    /// Warm-up excluded from the totals.
    pub omit_ms: u64,
    pub interval_ms: u64,
    /// Bytes per write (TCP), datagram payload (UDP) or request/response size (latency).
    pub length: u32,
    /// Socket buffer (SO_SNDBUF/SO_RCVBUF) to request, bytes.
    pub window: Option<u32>,
    /// Target bit rate per stream, bit/s; 0 = as fast as possible.
    pub bitrate_bps: u64,
    /// TCP congestion control algorithm.
    pub congestion: Option<String>,
    /// Send with sendfile(2) from an in-memory file.
    pub zerocopy: bool,
    /// Latency tests: poll this many µs for a reply before blocking (None = 50 µs; 0 = block at once).
    #[serde(default)]
    pub spin_us: Option<u32>,
}

/// What the operator allows (`linerate serve` flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_tests: u32,
    pub max_streams: u32,
    pub max_duration_ms: u64,
    /// Per stream, bit/s; 0 = no limit.
    pub max_udp_bitrate_bps: u64,
    pub max_length: u32,
    pub max_window: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tests: 8,
            max_streams: 64,
            max_duration_ms: 300_000,
            max_udp_bitrate_bps: 0,
            max_length: 1024 * 1024,
            max_window: 256 * 1024 * 1024,
        }
    }
}

/// Why a request is refused: the text goes to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl TestParams {
    /// Directions × streams: the number of data connections.
    pub fn connections(&self) -> u32 {
        if self.kind.is_latency() {
            1
        } else if self.direction == Direction::Bidir {
            self.streams.saturating_mul(2)
        } else {
            self.streams
        }
    }

    /// Buffer memory the server holds for this test, bytes.
    pub fn server_memory_bytes(&self) -> u64 {
        u64::from(self.connections()) * u64::from(self.length.max(64 * 1024))
    }

    /// Check against the server's limits.
    pub fn validate(&self, l: &Limits) -> Result<(), Refusal> {
        let r = |s: String| Err(Refusal(s));
        if self.streams == 0 {
            return r("streams must be at least 1".into());
        }
        if self.streams > l.max_streams {
            return r(format!(
                "{} streams requested; this server allows at most {} (serve --max-streams)",
                self.streams, l.max_streams
            ));
        }
        if self.duration_ms == 0 {
            return r("duration must be positive".into());
        }
        if self.duration_ms > l.max_duration_ms {
            return r(format!(
                "{} s requested; this server allows at most {} s (serve --max-duration)",
                self.duration_ms / 1000,
                l.max_duration_ms / 1000
            ));
        }
        if self.omit_ms >= self.duration_ms {
            return r("--omit must be shorter than the test".into());
        }
        if self.interval_ms != 0 && self.interval_ms < 100 {
            return r("interval must be at least 0.1 s (or 0 for none)".into());
        }
        if self.length == 0 {
            return r("length must be at least 1 byte".into());
        }
        if self.length > l.max_length {
            return r(format!(
                "length {} bytes requested; this server allows at most {} (serve --max-length)",
                self.length, l.max_length
            ));
        }
        if self.kind.is_udp() && self.length > 65_507 {
            return r(format!(
                "UDP length {} bytes exceeds the 65507-byte maximum datagram payload",
                self.length
            ));
        }
        if self.kind == TestKind::UdpBw && self.length < 24 {
            return r(
                "UDP length must be at least 24 bytes (stream, sequence number and timestamp)"
                    .into(),
            );
        }
        if self.kind == TestKind::UdpLat && self.length < 8 {
            return r("UDP request length must be at least 8 bytes (sequence number)".into());
        }
        if let Some(w) = self.window {
            if w > l.max_window {
                return r(format!(
                    "window {w} bytes requested; this server allows at most {}",
                    l.max_window
                ));
            }
        }
        if self.kind == TestKind::UdpBw
            && l.max_udp_bitrate_bps > 0
            && (self.bitrate_bps == 0 || self.bitrate_bps > l.max_udp_bitrate_bps)
        {
            {
                return r(format!(
                    "UDP at {} requested; this server allows at most {} bit/s per stream (serve --max-udp-bitrate)",
                    if self.bitrate_bps == 0 {
                        "unlimited rate".to_string()
                    } else {
                        format!("{} bit/s", self.bitrate_bps)
                    },
                    l.max_udp_bitrate_bps
                ));
            }
        }
        if self.spin_us.is_some_and(|u| u > 10_000) {
            return r("spin must be at most 10000 µs".into());
        }
        if let Some(c) = &self.congestion {
            if c.is_empty()
                || c.len() > 16
                || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return r(format!(
                    "congestion control `{c}` is not a valid algorithm name"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn tcp() -> TestParams {
        TestParams {
            kind: TestKind::TcpBw,
            direction: Direction::Send,
            streams: 1,
            duration_ms: 10_000,
            omit_ms: 0,
            interval_ms: 1000,
            length: 128 * 1024,
            window: None,
            bitrate_bps: 0,
            congestion: None,
            zerocopy: false,
            spin_us: None,
        }
    }

    #[test]
    fn absurd_requests_refused() {
        let l = Limits::default();
        assert!(tcp().validate(&l).is_ok());
        let mut p = tcp();
        p.streams = 100_000;
        assert!(p.validate(&l).unwrap_err().0.contains("--max-streams"));
        let mut p = tcp();
        p.duration_ms = 10 * 365 * 24 * 3600 * 1000;
        assert!(p.validate(&l).unwrap_err().0.contains("--max-duration"));
        let mut p = tcp();
        p.length = u32::MAX;
        assert!(p.validate(&l).is_err());
        let mut p = tcp();
        p.window = Some(u32::MAX);
        assert!(p.validate(&l).is_err());
        let mut p = tcp();
        p.congestion = Some("bbr; rm -rf /".into());
        assert!(p.validate(&l).is_err());
        let mut p = tcp();
        p.omit_ms = 20_000;
        assert!(p.validate(&l).is_err());
    }

    #[test]
    fn udp_bitrate_limit() {
        let l = Limits {
            max_udp_bitrate_bps: 1_000_000_000,
            ..Limits::default()
        };
        let mut p = tcp();
        p.kind = TestKind::UdpBw;
        p.length = 1400;
        p.bitrate_bps = 0;
        assert!(p.validate(&l).is_err());
        p.bitrate_bps = 500_000_000;
        assert!(p.validate(&l).is_ok());
    }

    #[test]
    fn memory_is_bounded_by_limits() {
        let l = Limits::default();
        let mut p = tcp();
        p.streams = l.max_streams;
        p.direction = Direction::Bidir;
        p.length = l.max_length;
        assert!(p.validate(&l).is_ok());
        // 64 streams × 2 directions × 1 MiB = 128 MiB worst case with default limits.
        assert_eq!(p.server_memory_bytes(), 128 * 1024 * 1024);
    }
}
