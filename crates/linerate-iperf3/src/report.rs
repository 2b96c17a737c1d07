//! The server's own report as `iperf3 -s` prints it, for `--get-server-output`: a server that
//! runs without `-J` sends it to the client as `server_output_text`, and the client prints it
//! under "Server output:".
//!
//! The lines are iperf3's (`iperf_locale.c`: `report_accepted`, `report_connected`, the `bw`
//! headers and formats, `report_bw_separator`), with its units (`unit_snprintf`: bytes in
//! 1024-based `KBytes`/`MBytes`/`GBytes`, rates in 1000-based `Kbits/sec`/`Mbits/sec`/...) and its
//! number formats (`%6.2f-%-6.2f`, `%5.3f ms`, `%.2g%%`). Interval lines carry the transfer and
//! the bitrate only: a figure the server did not measure per interval (TCP's retransmissions and
//! window, UDP's jitter and loss) appears in the summary, which has them per stream, and nowhere
//! else. The column iperf3 fills with a socket number shows the stream's id.

use std::fmt::Write as _;

use crate::params::Protocol;
use crate::streams::{Role, StreamId};

/// What the server did in one test, in its own figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    /// The control connection's peer: host (as text) and port.
    pub client: (String, u16),
    pub protocol: Protocol,
    /// A `--bidir` test: lines carry the stream's role (`[RX-S]`, `[TX-S]`).
    pub bidir: bool,
    /// In the order they were accepted.
    pub streams: Vec<ReportStream>,
    pub intervals: Vec<ReportInterval>,
    /// The test's figures after the omitted seconds, per stream in the order of `streams`.
    pub summary: Vec<StreamSummary>,
}

/// One stream's connection.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportStream {
    pub id: StreamId,
    /// What the server does on it.
    pub role: Role,
    pub local: (String, u16),
    pub remote: (String, u16),
}

/// One interval: seconds since the start of the test, or of the measured part once the omitted
/// seconds are over (as iperf3 counts them).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportInterval {
    pub start: f64,
    pub end: f64,
    /// Within the omitted seconds (`-O`): marked `(omitted)`.
    pub omitted: bool,
    /// Bytes per stream, in the order of [`ServerReport::streams`].
    pub bytes: Vec<u64>,
}

/// One stream over the measured part of the test.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSummary {
    /// Seconds from the end of the omitted seconds to the stream's end.
    pub seconds: f64,
    pub bytes: u64,
    /// A TCP sender's retransmissions; `None` when the server only receives on it or has no
    /// count.
    pub retransmits: Option<u64>,
    /// UDP: what the server counted on it.
    pub udp: Option<UdpSummary>,
}

/// A UDP stream's counts, by iperf3's definitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UdpSummary {
    /// Seconds (a sender says 0).
    pub jitter: f64,
    /// Datagrams lost, gap-based (a sender says 0).
    pub lost: i64,
    /// Datagrams: the highest sequence number seen (receiver) or sent (sender).
    pub total: i64,
}

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";

impl ServerReport {
    /// The report as `iperf3 -s` prints it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Accepted connection from {}, port {}",
            self.client.0, self.client.1
        );
        for s in &self.streams {
            let _ = writeln!(
                out,
                "[{:>3}] local {} port {} connected to {} port {}",
                s.id.0, s.local.0, s.local.1, s.remote.0, s.remote.1
            );
        }
        out.push_str(self.header(false));
        let several = self.streams.len() > 1;
        for i in &self.intervals {
            self.interval(&mut out, i);
            if several {
                out.push_str(SEPARATOR);
            }
        }
        if !several || self.intervals.is_empty() {
            out.push_str(SEPARATOR);
        }
        out.push_str(self.header(true));
        self.summary(&mut out);
        out
    }

    fn header(&self, summary: bool) -> &'static str {
        let udp = self.protocol == Protocol::Udp;
        let sends = self.streams.iter().any(|s| s.role == Role::Sender);
        match (self.bidir, summary, udp, sends) {
            (false, true, true, _) => {
                "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
            }
            (true, true, true, _) => {
                "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
            }
            (false, true, false, true) => {
                "[ ID] Interval           Transfer     Bitrate         Retr\n"
            }
            (true, true, false, true) => {
                "[ ID][Role] Interval           Transfer     Bitrate         Retr\n"
            }
            (false, ..) => "[ ID] Interval           Transfer     Bitrate\n",
            (true, ..) => "[ ID][Role] Interval           Transfer     Bitrate\n",
        }
    }

    fn role(&self, s: &ReportStream) -> &'static str {
        match (self.bidir, s.role) {
            (false, _) => "",
            (true, Role::Receiver) => "[RX-S]",
            (true, Role::Sender) => "[TX-S]",
        }
    }

    fn interval(&self, out: &mut String, i: &ReportInterval) {
        let seconds = i.end - i.start;
        let omitted = if i.omitted { "(omitted)" } else { "" };
        for (s, bytes) in self.streams.iter().zip(&i.bytes) {
            let _ = writeln!(
                out,
                "[{:>3}]{} {:6.2}-{:<6.2} sec  {}s  {}s/sec                  {omitted}",
                s.id.0,
                self.role(s),
                i.start,
                i.end,
                transfer(*bytes),
                bitrate(*bytes, seconds),
            );
        }
        if self.streams.len() > 1 {
            for role in self.roles() {
                let bytes: u64 = self
                    .streams
                    .iter()
                    .zip(&i.bytes)
                    .filter(|(s, _)| s.role == role)
                    .map(|(_, b)| *b)
                    .sum();
                let _ = writeln!(
                    out,
                    "[SUM]{} {:6.2}-{:<6.2} sec  {}s  {}s/sec                  {omitted}",
                    self.sum_role(role),
                    i.start,
                    i.end,
                    transfer(bytes),
                    bitrate(bytes, seconds),
                );
            }
        }
    }

    /// The roles with a `[SUM]` line: one per role in a `--bidir` test, else one.
    fn roles(&self) -> Vec<Role> {
        let mut roles: Vec<Role> = Vec::new();
        for s in &self.streams {
            if !roles.contains(&s.role) {
                roles.push(s.role);
            }
        }
        if !self.bidir {
            roles.truncate(1);
        }
        roles
    }

    fn sum_role(&self, role: Role) -> &'static str {
        match (self.bidir, role) {
            (false, _) => "",
            (true, Role::Receiver) => "[RX-S]",
            (true, Role::Sender) => "[TX-S]",
        }
    }

    fn summary(&self, out: &mut String) {
        for (s, m) in self.streams.iter().zip(&self.summary) {
            let words = side_word(s.role);
            let head = format!(
                "[{:>3}]{} {:6.2}-{:<6.2} sec  {}s  {}s/sec",
                s.id.0,
                self.role(s),
                0.0,
                m.seconds,
                transfer(m.bytes),
                bitrate(m.bytes, m.seconds),
            );
            let _ = match (&m.udp, m.retransmits) {
                (Some(u), _) => writeln!(
                    out,
                    "{head}  {:5.3} ms  {}/{} ({}%)  {words}",
                    u.jitter * 1000.0,
                    u.lost,
                    u.total,
                    percent_g(u.lost, u.total),
                ),
                (None, Some(r)) => writeln!(out, "{head}  {r:>3}            {words}"),
                (None, None) => writeln!(out, "{head}                  {words}"),
            };
        }
        if self.streams.len() < 2 {
            return;
        }
        for role in self.roles() {
            let members: Vec<&StreamSummary> = self
                .streams
                .iter()
                .zip(&self.summary)
                .filter(|(s, _)| !self.bidir || s.role == role)
                .map(|(_, m)| m)
                .collect();
            let bytes: u64 = members.iter().map(|m| m.bytes).sum();
            let seconds = members.iter().map(|m| m.seconds).fold(0.0_f64, f64::max);
            let words = side_word(role);
            let head = format!(
                "[SUM]{} {:6.2}-{:<6.2} sec  {}s  {}s/sec",
                self.sum_role(role),
                0.0,
                seconds,
                transfer(bytes),
                bitrate(bytes, seconds),
            );
            let udp: Vec<&UdpSummary> = members.iter().filter_map(|m| m.udp.as_ref()).collect();
            let retransmits: Vec<u64> = members.iter().filter_map(|m| m.retransmits).collect();
            let _ = if udp.is_empty() {
                if retransmits.is_empty() {
                    writeln!(out, "{head}                  {words}")
                } else {
                    let r: u64 = retransmits.iter().sum();
                    writeln!(out, "{head}  {r:>3}             {words}")
                }
            } else {
                // iperf3's sum: the streams' mean jitter, their losses and totals added.
                let jitter = udp.iter().map(|u| u.jitter).sum::<f64>() / udp.len() as f64;
                let lost: i64 = udp.iter().map(|u| u.lost).sum();
                let total: i64 = udp.iter().map(|u| u.total).sum();
                writeln!(
                    out,
                    "{head}  {:5.3} ms  {lost}/{total} ({}%)  {words}",
                    jitter * 1000.0,
                    percent_g(lost, total),
                )
            };
        }
    }
}

fn side_word(role: Role) -> &'static str {
    match role {
        Role::Sender => "sender",
        Role::Receiver => "receiver",
    }
}

/// `unit_snprintf` of a byte count with `'A'`: 1024-based, the label without its `s` (the
/// format adds it): `280 MByte`, `1.82 GByte`.
pub fn transfer(bytes: u64) -> String {
    adaptive(
        bytes as f64,
        1024.0,
        &["Byte", "KByte", "MByte", "GByte", "TByte"],
    )
}

/// `unit_snprintf` of a rate with `'a'`: bits, 1000-based, without its `s`: `2.35 Gbit`.
pub fn bitrate(bytes: u64, seconds: f64) -> String {
    let bits = if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    };
    adaptive(bits, 1000.0, &["bit", "Kbit", "Mbit", "Gbit", "Tbit"])
}

fn adaptive(mut v: f64, step: f64, labels: &[&str; 5]) -> String {
    let mut i = 0;
    while v >= step && i < labels.len() - 1 {
        v /= step;
        i += 1;
    }
    let n = if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    };
    format!("{n} {}", labels[i])
}

/// `lost / total × 100` as C's `%.2g` prints it (`0`, `0.52`, `12`, `1e+02`).
fn percent_g(lost: i64, total: i64) -> String {
    let p = if total > 0 {
        lost as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    format_g(p, 2)
}

/// C's `%.{precision}g`: `precision` significant digits, the shorter of fixed and exponent
/// notation by C's rule (exponent when it is below −4 or at least `precision`), trailing zeros
/// removed.
pub fn format_g(v: f64, precision: u8) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let precision = precision.max(1);
    // The exponent after rounding to `precision` digits.
    let sci = format!("{:.*e}", usize::from(precision - 1), v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let p = i32::from(precision);
    if exp < -4 || exp >= p {
        let m = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = usize::try_from(p - 1 - exp).unwrap_or(0);
        trim_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_as_iperf3_prints_them() {
        assert_eq!(transfer(297_662_763), " 284 MByte");
        assert_eq!(transfer(4_194_304), "4.00 MByte");
        assert_eq!(transfer(1_954_210_000), "1.82 GByte");
        assert_eq!(transfer(0), "0.00 Byte");
        assert_eq!(bitrate(297_662_763, 1.019_39), "2.34 Gbit");
        assert_eq!(bitrate(1_280_000, 1.0), "10.2 Mbit");
        assert_eq!(bitrate(1, 0.0), "0.00 bit");
    }

    #[test]
    fn percent_like_printf_g() {
        for (v, s) in [
            (0.0, "0"),
            (0.5, "0.5"),
            (0.523, "0.52"),
            (5.0, "5"),
            (12.3, "12"),
            (99.6, "1e+02"),
            (100.0, "1e+02"),
            (0.000_012, "1.2e-05"),
            (0.000_1, "0.0001"),
        ] {
            assert_eq!(format_g(v, 2), s, "{v}");
        }
        assert_eq!(percent_g(0, 0), "0");
        assert_eq!(percent_g(2, 39), "5.1");
    }

    fn stream(id: u32, role: Role, port: u16) -> ReportStream {
        ReportStream {
            id: StreamId(id),
            role,
            local: ("127.0.0.1".into(), 5201),
            remote: ("127.0.0.1".into(), port),
        }
    }

    /// The lines of a 3.12 server's text output (tests/transcripts/3.12/server-output-text.txt),
    /// given that server's figures.
    #[test]
    fn a_tcp_receiver_reads_as_iperf3s() {
        let r = ServerReport {
            client: ("127.0.0.1".into(), 50024),
            protocol: Protocol::Tcp,
            bidir: false,
            streams: vec![stream(5, Role::Receiver, 50038)],
            intervals: vec![
                ReportInterval {
                    start: 0.0,
                    end: 1.0,
                    omitted: false,
                    bytes: vec![293_601_280],
                },
                ReportInterval {
                    start: 1.0,
                    end: 1.02,
                    omitted: false,
                    bytes: vec![4_194_304],
                },
            ],
            summary: vec![StreamSummary {
                seconds: 1.019_39,
                bytes: 297_662_763,
                retransmits: None,
                udp: None,
            }],
        };
        let want = "Accepted connection from 127.0.0.1, port 50024\n\
[  5] local 127.0.0.1 port 5201 connected to 127.0.0.1 port 50038\n\
[ ID] Interval           Transfer     Bitrate\n\
[  5]   0.00-1.00   sec   280 MBytes  2.35 Gbits/sec                  \n\
[  5]   1.00-1.02   sec  4.00 MBytes  1.68 Gbits/sec                  \n\
- - - - - - - - - - - - - - - - - - - - - - - - -\n\
[ ID] Interval           Transfer     Bitrate\n\
[  5]   0.00-1.02   sec   284 MBytes  2.34 Gbits/sec                  receiver\n";
        assert_eq!(r.text(), want);
    }

    #[test]
    fn udp_parallel_and_bidir_lines() {
        let udp = |lost, total| StreamSummary {
            seconds: 2.0,
            bytes: 2_527_000,
            retransmits: None,
            udp: Some(UdpSummary {
                jitter: 0.000_022,
                lost,
                total,
            }),
        };
        let r = ServerReport {
            client: ("10.0.0.1".into(), 45286),
            protocol: Protocol::Udp,
            bidir: false,
            streams: vec![
                stream(1, Role::Receiver, 51974),
                stream(3, Role::Receiver, 48701),
            ],
            intervals: vec![ReportInterval {
                start: 0.0,
                end: 1.0,
                omitted: true,
                bytes: vec![1_279_000, 1_279_000],
            }],
            summary: vec![udp(0, 77), udp(2, 77)],
        };
        let text = r.text();
        assert!(
            text.contains(
                "[  1]   0.00-1.00   sec  1.22 MBytes  10.2 Mbits/sec                  (omitted)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("[SUM]   0.00-1.00   sec  2.44 MBytes  20.5 Mbits/sec                  (omitted)\n- - -"),
            "{text}"
        );
        assert!(
            text.contains("[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"),
            "{text}"
        );
        assert!(
            text.contains("[  3]   0.00-2.00   sec  2.41 MBytes  10.1 Mbits/sec  0.022 ms  2/77 (2.6%)  receiver\n"),
            "{text}"
        );
        assert!(
            text.ends_with("[SUM]   0.00-2.00   sec  4.82 MBytes  20.2 Mbits/sec  0.022 ms  2/154 (1.3%)  receiver\n"),
            "{text}"
        );

        let r = ServerReport {
            client: ("10.0.0.1".into(), 45328),
            protocol: Protocol::Tcp,
            bidir: true,
            streams: vec![
                stream(1, Role::Receiver, 45332),
                stream(3, Role::Sender, 45338),
            ],
            intervals: vec![],
            summary: vec![
                StreamSummary {
                    seconds: 1.01,
                    bytes: 1_105_000_000,
                    retransmits: None,
                    udp: None,
                },
                StreamSummary {
                    seconds: 1.01,
                    bytes: 760_000_000,
                    retransmits: Some(6),
                    udp: None,
                },
            ],
        };
        let text = r.text();
        assert!(
            text.contains("[ ID][Role] Interval           Transfer     Bitrate         Retr\n"),
            "{text}"
        );
        assert!(
            text.contains("[  1][RX-S]   0.00-1.01   sec  1.03 GBytes  8.75 Gbits/sec                  receiver\n"),
            "{text}"
        );
        assert!(
            text.contains("[  3][TX-S]   0.00-1.01   sec   725 MBytes  6.02 Gbits/sec    6            sender\n"),
            "{text}"
        );
        assert!(
            text.contains("[SUM][TX-S]   0.00-1.01   sec   725 MBytes  6.02 Gbits/sec    6             sender\n"),
            "{text}"
        );
    }
}
