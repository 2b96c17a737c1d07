//! Bench results for people (interval lines, summary) and scripts (JSON).

use std::fmt::Write as _;

use linerate_proto::{Direction, EndsBy, TestKind, TestParams, Transaction};
use linerate_results::{DirStats, FileTransferOut, IntervalOut, Iperf3Out, TestResult};
use serde::Serialize;

use crate::Style;
use linerate_facts::{FarEndCopy, Tool, SCHEMA_VERSION, TOOL};

#[derive(Debug, Serialize)]
pub struct BenchDoc<'a> {
    pub schema_version: u32,
    pub tool: Tool,
    pub tests: &'a [TestResult],
    /// What `--ssh-copy` sent to the far end to run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub far_end_copy: Option<FarEndCopy>,
}

pub fn bench_doc(tests: &[TestResult]) -> BenchDoc<'_> {
    BenchDoc {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        tests,
        far_end_copy: None,
    }
}

/// `  round trip  p50 … µs   p90 …   mean … µs (σ …)` (`each`: what the figures are of).
fn round_trip_line(
    out: &mut String,
    each: Transaction,
    l: &linerate_stats::LatencyUs,
    style: Style,
) {
    let _ = writeln!(
        out,
        "  {}  p50 {} µs   p90 {}   p99 {}   p99.9 {}   max {}   mean {} µs{}",
        each.noun(),
        style.bold(&num(l.p50)),
        num(l.p90),
        num(l.p99),
        num(l.p999),
        num(l.max),
        style.bold(&num(l.mean)),
        l.stddev
            .map_or_else(String::new, |s| format!(" (σ {})", num(s)))
    );
}

/// An RDMA result: provider and device, the rate or the latency, the sweep table.
fn rdma_block(out: &mut String, t: &TestResult, r: &linerate_results::RdmaOut, style: Style) {
    let _ = writeln!(out, "  provider {}, device {}", r.provider, r.device);
    if let Some(l) = &t.latency_us {
        round_trip_line(out, Transaction::RoundTrip, l, style);
        if let (Some(p50), Some(mean)) = (r.perftest_p50_us, r.perftest_mean_us) {
            let how = match r.perftest_convention.as_deref() {
                Some("completion") => format!(
                    "ib_{}_lat's figure: a read's whole completion, not halved",
                    r.op
                ),
                _ => format!("ib_{}_lat's figure: half the round trip", r.op),
            };
            let _ = writeln!(
                out,
                "  as perftest reports it ({how})  t_typical {} µs   t_avg {} µs",
                num(p50),
                num(mean)
            );
        } else if let (Some(p50), Some(mean)) = (r.one_way_p50_us, r.one_way_mean_us) {
            // A result of an earlier release: its one-way figures.
            let _ = writeln!(
                out,
                "  one way (half the round trip)  p50 {} µs   mean {} µs",
                num(p50),
                num(mean)
            );
        }
        let _ = writeln!(
            out,
            "  {} transactions/s",
            num(t.transactions_per_s.unwrap_or(0.0))
        );
    } else if r.sizes.len() > 1 {
        let _ = writeln!(
            out,
            "  {:>10}  {:>10}  {:>10}  {:>14}",
            "size", "Gb/s", "GB/s", "messages/s"
        );
        for row in &r.sizes {
            let _ = writeln!(
                out,
                "  {:>10}  {:>10}  {:>10}  {:>14}",
                linerate_units::fmt_bytes(row.size_bytes as u64),
                num(row.gbps),
                num(row.gbps / 8.0),
                num(row.messages_per_s)
            );
        }
    } else {
        let _ = writeln!(
            out,
            "  {} Gb/s ({} GB/s)   {} messages/s   {}",
            style.bold(&num(t.gbps)),
            num(t.gbps / 8.0),
            num(r.messages_per_s.unwrap_or(0.0)),
            bytes(t.bytes)
        );
    }
    if r.verify {
        let _ = writeln!(
            out,
            "  verified: {}",
            if r.verify_errors == 0 {
                "every byte matched".to_string()
            } else {
                format!("{} bytes did NOT match", r.verify_errors)
            }
        );
    }
    if !r.device_counters.is_empty() {
        let moved: Vec<String> = r
            .device_counters
            .iter()
            .map(|c| {
                format!(
                    "{} {}{}",
                    c.name.rsplit(' ').next().unwrap_or(&c.name),
                    if c.at_least { "≥ " } else { "" },
                    c.delta
                )
            })
            .collect();
        let device = r.device_counters[0]
            .name
            .split(' ')
            .next()
            .unwrap_or(&r.device);
        let _ = writeln!(out, "  {device} counted: {}", moved.join(", "));
    }
    if let (Some(s), Some(rc)) = (&t.sender, &t.receiver) {
        let _ = writeln!(
            out,
            "  CPU {}% (this host), {}% (server)",
            num(s.cpu_percent),
            num(rc.cpu_percent)
        );
    }
}

fn layer_words(layer: &str) -> &'static str {
    match layer {
        "source_read" => "reading the source (this host)",
        "network" => "the network",
        "destination_write" => "writing on the server",
        _ => "?",
    }
}

/// A file transfer: the copy end to end, then each layer with the slowest marked.
fn file_block(out: &mut String, f: &FileTransferOut, style: Style) {
    let _ = writeln!(
        out,
        "  copied {} in {} s{}: {} Gb/s ({} GB/s) end to end",
        bytes(f.written_bytes),
        num(f.transfer_s),
        f.fsync_s
            .map_or(String::new(), |s| format!(" + fsync {} s", num(s))),
        style.bold(&num(f.end_to_end_gbps)),
        num(f.end_to_end_gbps / 8.0)
    );
    for l in &f.layers {
        let slowest = f.bottleneck == Some(l.layer);
        let line = format!(
            "  {:<32} {:>8} Gb/s ({:>6} GB/s)  busy {:>5.1} %",
            layer_words(l.layer),
            num(l.gbps),
            num(l.gbps / 8.0),
            l.busy_percent
        );
        if slowest && f.layers.len() > 1 {
            let _ = writeln!(out, "{}  ← the slowest layer", style.bold(&line));
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = writeln!(
        out,
        "  buffers {} per side ({} × {} blocks of {})",
        bytes(f.buffer_bytes),
        f.buffer_bytes / u64::from(linerate_proto::FILE_BUFFERS) / u64::from(f.block_bytes.max(1)),
        linerate_proto::FILE_BUFFERS,
        bytes(u64::from(f.block_bytes))
    );
}

/// Numbers with three significant digits where that reads well.
pub(crate) use linerate_units::fmt_sig as num;

fn bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

/// The first line: what runs, where.
pub fn header(p: &TestParams, server: &str) -> String {
    format!(
        "linerate bench → {server}: {}, {}{} s{}",
        p.words(),
        if p.kind.spec().facts().ends_by == EndsBy::Data {
            "time limit "
        } else {
            ""
        },
        num(p.duration_ms as f64 / 1000.0),
        if p.omit_ms > 0 {
            format!(" (first {} s omitted)", num(p.omit_ms as f64 / 1000.0))
        } else {
            String::new()
        }
    )
}

/// One live interval line.
pub fn interval_line(kind: TestKind, label: &str, i: &IntervalOut) -> String {
    let span = format!("[{:6.2}-{:6.2} s]", i.start_s, i.end_s);
    let omit = if i.omitted { "  (omitted)" } else { "" };
    if let Some(each) = kind.transaction() {
        let tps = i.bytes as f64 / (i.end_s - i.start_s).max(1e-9);
        return format!("{span} {:>10} {}{omit}", num(tps), each.rate_unit());
    }
    let mut s = format!("{span} {label}{:>9} Gb/s", num(i.gbps));
    if i.streams.len() > 1 {
        let per: Vec<String> = i.streams.iter().map(|g| num(*g)).collect();
        let _ = write!(s, "  [{}]", per.join(" "));
    }
    if let Some(r) = i.retransmits {
        let _ = write!(s, "  retr {r}");
    }
    if let Some(l) = i.lost {
        let _ = write!(s, "  lost {l}");
    }
    s.push_str(omit);
    s
}

fn dir_block(out: &mut String, d: &DirStats, style: Style, indent: &str) {
    let where_ = |h: &str| if h == "local" { "this host" } else { "server" };
    if let Some(r) = &d.receiver {
        let _ = writeln!(
            out,
            "{indent}receiver {}   {:>9}   CPU {:>5}% ({})",
            style.bold(&format!("{:>9} Gb/s", num(r.gbps))),
            bytes(r.bytes),
            num(r.cpu_percent),
            where_(r.host)
        );
    }
    let mut s = format!(
        "{indent}sender   {:>9} Gb/s   {:>9}   CPU {:>5}% ({})",
        num(d.sender.gbps),
        bytes(d.sender.bytes),
        num(d.sender.cpu_percent),
        where_(d.sender.host)
    );
    if let Some(r) = d.retransmits {
        let _ = write!(s, "   retransmits {r}");
    }
    if let Some(r) = d.rtt_us {
        let _ = write!(s, "   RTT {} µs", num(r));
    }
    if let Some(c) = d.cwnd {
        let _ = write!(s, "   cwnd {c}");
    }
    let _ = writeln!(out, "{s}");
    if let Some(l) = d.tcp_limited {
        // Only worth a line when the window held the sender back for a noticeable share.
        if l.receive_window_percent + l.send_buffer_percent >= 10.0 {
            let _ = writeln!(
                out,
                "{indent}the sender waited on the receive window {}% and on its send buffer {}% of the {} s it had data to send (TCP_INFO)",
                num(l.receive_window_percent),
                num(l.send_buffer_percent),
                num(l.busy_s)
            );
        }
    }
    if let (Some(lp), Some(pk)) = (d.loss_percent, d.packets) {
        let _ = writeln!(
            out,
            "{indent}datagrams {pk} sent, {} lost ({}%), {}jitter {} µs",
            d.lost_packets.unwrap_or(0),
            num(lp),
            d.out_of_order
                .map_or(String::new(), |o| format!("{o} out of order, ")),
            num(d.jitter_us.unwrap_or(0.0))
        );
    }
    if let Some(l2) = d.l2_gbps {
        let _ = writeln!(
            out,
            "{indent}on the wire ≈ {} Gb/s (payload plus per-packet Ethernet/IP/transport headers)",
            num(l2)
        );
    }
    let single = d.per_stream.len() == 1;
    let busy = d
        .receiver
        .iter()
        .chain(std::iter::once(&d.sender))
        .any(|e| e.cpu_percent >= 90.0);
    if single && busy {
        let _ = writeln!(out, "{indent}{}", style.dim("one core was nearly saturated by one stream: the CPU may be the limit (try -P, -A, or --zerocopy)"));
    }
}

/// The summary of a finished test.
pub fn render_bench(t: &TestResult, style: Style) -> String {
    let mut out = String::new();
    title_line(&mut out, t, style);
    if let Some(r) = &t.rdma {
        rdma_block(&mut out, t, r, style);
    } else if let Some(f) = &t.file {
        file_summary(&mut out, t, f, style);
    } else if let Some(l) = &t.latency_us {
        latency_summary(&mut out, t, l, style);
    } else if t.directions.is_empty() {
        dir_block(&mut out, &flat_direction(t), style, "  ");
    } else {
        directions_summary(&mut out, t, style);
    }
    streams_line(&mut out, t);
    if let Some(i) = &t.iperf3 {
        iperf3_block(&mut out, i, style);
    }
    disturbance_line(&mut out, t, style);
    qdisc_lines(&mut out, t, style);
    udp_drop_lines(&mut out, t, style);
    error_line(&mut out, t, style);
    out
}

/// The UDP datagrams each end's host dropped on receive during a UDP test, when it dropped any:
/// "udp: the local host dropped 92526 datagrams on receive, 92526 of them for a full socket
/// buffer (RcvbufErrors, host-wide)". A server on this host counts this host's: said once.
fn udp_drop_lines(out: &mut String, t: &TestResult, style: Style) {
    let Some(u) = &t.udp_receive else { return };
    let remote = u
        .remote
        .filter(|_| !(u.local.is_some() && u.local == u.remote));
    for (end, d) in [("local", u.local), ("remote", remote)] {
        let Some(d) = d.filter(|d| d.in_errors > 0 || d.rcvbuf_errors > 0) else {
            continue;
        };
        let _ = writeln!(
            out,
            "  {} the {end} host dropped {} datagrams on receive, {} of them for a full socket buffer (InErrors, RcvbufErrors; host-wide, during the test)",
            style.severity(linerate_facts::Severity::Warning, "udp:"),
            d.in_errors.max(d.rcvbuf_errors),
            d.rcvbuf_errors
        );
    }
}

/// The qdiscs that dropped packets during the test, each with its end, interface and counter:
/// "qdisc netem 8001: on local eth0 (egress) dropped 755 of 40000 packets".
fn qdisc_lines(out: &mut String, t: &TestResult, style: Style) {
    let Some(q) = &t.qdiscs else { return };
    for (end, d) in q.ends().filter(|(_, d)| d.drops > 0) {
        let _ = writeln!(
            out,
            "  {} {} {} on {end} {} ({}) dropped {} of {} packets during the test",
            style.severity(linerate_facts::Severity::Warning, "qdisc:"),
            d.kind,
            d.handle,
            d.interface,
            d.side.as_str(),
            d.drops,
            d.passed()
        );
    }
}

/// A test against a stock iperf3 server: what the server counted, by iperf3's definitions,
/// summed by what it did; its CPU; what is known of its release; the notes.
fn iperf3_block(out: &mut String, i: &Iperf3Out, style: Style) {
    let _ = writeln!(
        out,
        "  {} ({}; from its results, by iperf3's definitions):",
        style.bold("the iperf3 server's own figures"),
        i.server_version
    );
    if i.streams.is_empty() {
        let _ = writeln!(out, "    none: its results did not come");
    }
    for role in ["receiver", "sender"] {
        let v: Vec<_> = i.streams.iter().filter(|s| s.server == role).collect();
        if v.is_empty() {
            continue;
        }
        let bytes_sum = v.iter().fold(0u64, |a, s| a.saturating_add(s.bytes));
        let secs = v.iter().filter_map(|s| s.seconds).fold(0.0_f64, f64::max);
        let mut line = format!(
            "    {} {:>9}",
            if role == "receiver" {
                "received"
            } else {
                "sent    "
            },
            bytes(bytes_sum)
        );
        if secs > 0.0 {
            let _ = write!(
                line,
                " in {} s, {} Gb/s",
                num(secs),
                num(linerate_units::gbps(bytes_sum, secs))
            );
        }
        if v.len() > 1 {
            let _ = write!(line, " ({} streams)", v.len());
        }
        let sum = |f: fn(&&linerate_results::Iperf3StreamOut) -> Option<u64>| {
            v.iter()
                .map(f)
                .try_fold(0u64, |a, x| x.map(|x| a.saturating_add(x)))
        };
        if let Some(r) = sum(|s| s.retransmits) {
            let _ = write!(line, ", retransmits {r}");
        }
        if let (Some(lost), Some(highest)) = (sum(|s| s.lost_packets), sum(|s| s.packets)) {
            let jitter: Vec<f64> = v.iter().filter_map(|s| s.jitter_us).collect();
            let _ = write!(
                line,
                ", {lost} of {highest} datagrams lost (gaps in the sequence)"
            );
            if !jitter.is_empty() {
                let _ = write!(
                    line,
                    ", jitter {} µs",
                    num(jitter.iter().sum::<f64>() / jitter.len() as f64)
                );
            }
        } else if role == "sender" {
            if let Some(p) = sum(|s| s.packets) {
                let _ = write!(line, ", {p} datagrams");
            }
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(c) = i.server_cpu_percent {
        let _ = writeln!(
            out,
            "    CPU {}% of a core for its whole process (user {}%, system {}%){}",
            num(c),
            num(i.server_cpu_user_percent.unwrap_or(0.0)),
            num(i.server_cpu_system_percent.unwrap_or(0.0)),
            i.server_congestion
                .as_deref()
                .map_or(String::new(), |c| format!(", congestion control {c}"))
        );
    }
    for n in &i.notes {
        let _ = writeln!(out, "  {} {n}", style.dim("note:"));
    }
}

/// What disturbed the test, when something did: "disturbed: 3 stalls, 1.8 s with no data;
/// other processes on this host used 1.2 of 2 cores and held 62 % of the busiest core".
fn disturbance_line(out: &mut String, t: &TestResult, style: Style) {
    let Some(d) = t.disturbance.as_ref().filter(|d| d.disturbed) else {
        return;
    };
    let causes: Vec<&str> = d.causes.iter().map(|c| c.message.as_str()).collect();
    let _ = writeln!(
        out,
        "  {} {}\n  {}",
        style.severity(linerate_facts::Severity::Warning, "disturbed:"),
        causes.join("; "),
        style.dim("(the figures above are a lower bound of what the path carries)")
    );
}

/// "TCP → server via eth0": what ran, where to, and through which local interface.
fn title_line(out: &mut String, t: &TestResult, style: Style) {
    let via = t
        .local
        .as_ref()
        .and_then(linerate_facts::InterfaceView::name)
        .map_or(String::new(), |n| format!(" via {n}"));
    let _ = writeln!(
        out,
        "{}{via}",
        style.bold(&format!("{} → {}", t.params.words(), t.server))
    );
}

/// A file transfer: the file block, then the network side of it.
fn file_summary(out: &mut String, t: &TestResult, f: &FileTransferOut, style: Style) {
    file_block(out, f, style);
    if let (Some(s), Some(r)) = (&t.sender, &t.receiver) {
        let _ = writeln!(
            out,
            "  network {} Gb/s received; CPU {}% (this host), {}% (server)",
            num(r.gbps),
            num(s.cpu_percent),
            num(r.cpu_percent)
        );
    }
}

/// A latency test: round trips, transaction rate and lost transactions, CPU.
fn latency_summary(out: &mut String, t: &TestResult, l: &linerate_stats::LatencyUs, style: Style) {
    let each = t
        .params
        .kind
        .transaction()
        .unwrap_or(Transaction::RoundTrip);
    round_trip_line(out, each, l, style);
    if let Some(m) = &t.latency_mode {
        let _ = writeln!(out, "  {}: {}", style.bold(m.label()), m.reason);
    }
    let _ = writeln!(
        out,
        "  {} {}{}",
        num(t.transactions_per_s.unwrap_or(0.0)),
        each.rate_unit(),
        t.lost_transactions
            .filter(|l| *l > 0)
            .map_or(String::new(), |l| format!(
                ", {l} lost (no reply in 200 ms)"
            ))
    );
    if let (Some(s), Some(r)) = (&t.sender, &t.receiver) {
        let _ = writeln!(
            out,
            "  CPU {}% (this host), {}% (server)",
            num(s.cpu_percent),
            num(r.cpu_percent)
        );
    }
}

/// One direction: rebuild its block from the flat fields of the result.
fn flat_direction(t: &TestResult) -> DirStats {
    DirStats {
        direction: t.direction,
        bytes: t.bytes,
        gbps: t.gbps,
        l2_gbps: t.l2_gbps,
        sender: t.sender.clone().unwrap_or(linerate_results::Endpoint {
            host: "local",
            bytes: 0,
            gbps: 0.0,
            cpu_percent: 0.0,
        }),
        receiver: t.receiver.clone(),
        retransmits: t.retransmits,
        segments: t.segments,
        spurious_retransmits: t.spurious_retransmits,
        rtt_us: t.rtt_us,
        cwnd: t.cwnd,
        mss: None,
        tcp_limited: t.tcp_limited,
        packets: t.packets,
        lost_packets: t.lost_packets,
        loss_percent: t.loss_percent,
        out_of_order: t.out_of_order,
        jitter_us: t.jitter_us,
        intervals: Vec::new(),
        per_stream: t.per_stream.clone(),
    }
}

/// Both directions (bidirectional test): one block each, then the total.
fn directions_summary(out: &mut String, t: &TestResult, style: Style) {
    for d in &t.directions {
        let _ = writeln!(
            out,
            "  {}:",
            if d.direction == Direction::Send {
                "this host → server"
            } else {
                "server → this host"
            }
        );
        dir_block(out, d, style, "    ");
    }
    let _ = writeln!(out, "  total {} Gb/s", style.bold(&num(t.gbps)));
}

/// Per-stream rates, only when there was more than one stream.
fn streams_line(out: &mut String, t: &TestResult) {
    if t.per_stream.len() > 1 {
        let per: Vec<String> = t
            .per_stream
            .iter()
            .map(|s| {
                format!(
                    "#{} {} Gb/s (CPU {}%)",
                    s.id,
                    num(s.gbps),
                    num(s.sender_cpu_percent)
                )
            })
            .collect();
        let _ = writeln!(out, "  streams  {}", per.join(", "));
    }
}

/// The error that ended the test early, if any.
fn error_line(out: &mut String, t: &TestResult, style: Style) {
    if let Some(e) = &t.error {
        let _ = writeln!(
            out,
            "{} {e}\n  (the figures above are what was measured until then)",
            style.severity(linerate_facts::Severity::Error, "error:")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_proto::{Direction, TestKind, TestParams};
    use linerate_results::{Disturbance, DisturbanceCause, DisturbanceKind};

    fn result(disturbed: bool) -> TestResult {
        let mut t = TestResult::new(TestParams::new(TestKind::TcpBw, Direction::Send));
        t.gbps = 0.56;
        t.disturbance = Some(Disturbance {
            disturbed,
            causes: if disturbed {
                vec![
                    DisturbanceCause {
                        cause: DisturbanceKind::Stalls,
                        host: "remote",
                        message: "3 stalls, 1.8 s with no data".into(),
                    },
                    DisturbanceCause {
                        cause: DisturbanceKind::CpuContended,
                        host: "local",
                        message: "other processes on this host used 1.2 of 2 cores and held 62 % of the busiest core".into(),
                    },
                ]
            } else {
                Vec::new()
            },
            local_cpu: None,
            remote_cpu: None,
            remote_same_host: false,
            local_stalls: None,
            remote_stalls: None,
            slow_intervals: 0,
            median_interval_rate: None,
            local_link: None,
            remote_link: None,
            competing_gbps: None,
        });
        t
    }

    #[test]
    fn a_disturbed_result_says_what_disturbed_it() {
        let text = render_bench(&result(true), Style::PLAIN);
        assert!(
            text.contains("disturbed: 3 stalls, 1.8 s with no data; other processes on this host used 1.2 of 2 cores and held 62 % of the busiest core"),
            "{text}"
        );
        assert!(text.contains("lower bound"), "{text}");
        let quiet = render_bench(&result(false), Style::PLAIN);
        assert!(!quiet.contains("disturbed"), "{quiet}");
    }

    #[test]
    fn a_qdisc_that_dropped_is_named_with_its_end_and_counter() {
        let mut t = result(false);
        let q = |kind: &str, drops: u64| linerate_facts::QdiscDelta {
            interface: "eth0".into(),
            kind: kind.into(),
            handle: "8001:".into(),
            parent: "root".into(),
            side: linerate_facts::QdiscSide::Egress,
            packets: 39_245,
            drops,
            overlimits: 0,
            requeues: 0,
            reset: false,
            reorders: false,
            tests: Vec::new(),
        };
        t.qdiscs = Some(linerate_facts::QdiscsSeen {
            local: Some(vec![q("netem", 755)]),
            // Overlimits only (a shaper at work): nothing dropped, nothing said.
            remote: Some(vec![q("tbf", 0)]),
        });
        let text = render_bench(&t, Style::PLAIN);
        assert!(
            text.contains("qdisc: netem 8001: on local eth0 (egress) dropped 755 of 40000 packets during the test"),
            "{text}"
        );
        assert!(!text.contains("tbf"), "{text}");
    }

    #[test]
    fn udp_receive_drops_are_named_with_their_end() {
        let mut t = result(false);
        let d = |rcvbuf: u64| linerate_facts::UdpReceive {
            in_datagrams: 85_513,
            rcvbuf_errors: rcvbuf,
            in_errors: rcvbuf + 3,
        };
        t.udp_receive = Some(linerate_facts::UdpReceiveSeen {
            local: Some(d(92_526)),
            remote: None,
        });
        let text = render_bench(&t, Style::PLAIN);
        assert!(
            text.contains("udp: the local host dropped 92529 datagrams on receive, 92526 of them for a full socket buffer"),
            "{text}"
        );
        assert!(!text.contains("remote host"), "{text}");
        // A server on this host: the same counters, said once; nothing dropped, nothing said.
        t.udp_receive = Some(linerate_facts::UdpReceiveSeen {
            local: Some(d(5)),
            remote: Some(d(5)),
        });
        let text = render_bench(&t, Style::PLAIN);
        assert_eq!(text.matches("udp:").count(), 1, "{text}");
        let quiet = linerate_facts::UdpReceive {
            in_datagrams: 10,
            rcvbuf_errors: 0,
            in_errors: 0,
        };
        t.udp_receive = Some(linerate_facts::UdpReceiveSeen {
            local: Some(quiet),
            remote: Some(quiet),
        });
        assert!(!render_bench(&t, Style::PLAIN).contains("udp:"));
    }
}
