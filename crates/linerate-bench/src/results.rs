//! Both sides' measurements → one test result (the `bench --json` shape): the pieces each
//! kind's `assemble` (`crate::kind`) puts together.

use linerate_proto::{
    Direction, IntervalSample, LatencyStats, SideResults, StreamResult, TestParams,
};
use linerate_results::{
    DirStats, Endpoint, FileTransferOut, IntervalOut, Iperf3Out, Iperf3StreamOut, Layer, RdmaOut,
    StreamOut, TcpLimitedOut, TestResult,
};
use linerate_stats::LatencyUs;

use linerate_units::{gbps, r1, r3};

use crate::outcome::{ClientRun, Iperf3Run};

/// Bytes of headers per TCP segment on an Ethernet wire as a shaper counts them
/// (Ethernet 14, IPv4 20, TCP 20, timestamps 12); IPv6 adds 20.
pub const TCP_L2_OVERHEAD_V4: f64 = 66.0;
/// Per UDP datagram: Ethernet 14, IPv4 20, UDP 8.
pub const UDP_L2_OVERHEAD_V4: f64 = 42.0;

/// Sum the senders' chrono times over a test of `secs` seconds per stream; `None` when no
/// sender reported them.
pub fn tcp_limited(stats: &[linerate_proto::TcpStats], secs: f64) -> Option<TcpLimitedOut> {
    let l: Vec<_> = stats.iter().filter_map(|t| t.limited).collect();
    if l.is_empty() {
        return None;
    }
    let busy = ssum(l.iter().map(|x| x.busy_us));
    let pct1 = |x: f64| r1(x.clamp(0.0, 1.0) * 100.0);
    // Figures from a peer are not trusted to be consistent: a part is at most the whole.
    let pct = |part: u64| {
        if busy == 0 {
            0.0
        } else {
            pct1(part.min(busy) as f64 / busy as f64)
        }
    };
    let span = secs * 1e6 * l.len() as f64;
    Some(TcpLimitedOut {
        busy_s: r3(busy as f64 / 1e6),
        busy_percent: if span > 0.0 {
            pct1(busy as f64 / span)
        } else {
            0.0
        },
        receive_window_percent: pct(ssum(l.iter().map(|x| x.rwnd_us))),
        send_buffer_percent: pct(ssum(l.iter().map(|x| x.sndbuf_us))),
    })
}

/// Each side's disk and network times → the layers of a copy.
pub fn file_transfer(
    p: &TestParams,
    local: &SideResults,
    remote: Option<&SideResults>,
) -> Option<FileTransferOut> {
    let spec = p.file.as_ref()?;
    let n = f64::from(p.streams.max(1));
    let sum = |s: Option<&SideResults>, f: &dyn Fn(&linerate_proto::StreamResult) -> f64| {
        s.map_or(0.0, |s| s.streams.iter().map(f).sum::<f64>())
    };
    let disk = |s: &linerate_proto::StreamResult| s.file.map_or(0.0, |f| f.disk_s);
    let wait = |s: &linerate_proto::StreamResult| s.file.map_or(0.0, |f| f.net_wait_s);
    let read_bytes = ssum(
        local
            .streams
            .iter()
            .map(|s| s.file.map_or(0, |f| f.disk_bytes)),
    );
    let written = remote.map_or(0, |r| {
        ssum(r.streams.iter().map(|s| s.file.map_or(0, |f| f.disk_bytes)))
    });
    let received = remote.map_or(0, |r| ssum(r.streams.iter().map(|s| s.bytes_received)));
    let sent = ssum(local.streams.iter().map(|s| s.bytes_sent));
    let longest = |s: &SideResults| s.streams.iter().map(|x| x.seconds).fold(0.0_f64, f64::max);
    let transfer_s = longest(remote.unwrap_or(local));
    let fsync_s = remote.and_then(|r| r.fsync_s);
    let total_s = transfer_s + fsync_s.unwrap_or(0.0);
    let mean_stream_s = (sum(remote.or(Some(local)), &|s| s.seconds) / n).max(1e-9);
    let mut layers = Vec::new();
    let mut layer = |name: &'static str, bytes: u64, busy: f64| {
        if busy > 0.0 && bytes > 0 {
            layers.push(Layer {
                layer: name,
                gbps: r3(gbps(bytes, busy)),
                busy_s: r3(busy),
                busy_percent: r3((busy / total_s.max(1e-9) * 100.0).min(100.0)),
            });
        }
    };
    layer("source_read", read_bytes, sum(Some(local), &disk) / n);
    // The network worked whenever neither end waited for its disk.
    let waits = (sum(Some(local), &wait) + sum(remote, &wait)) / n;
    let net_busy = (mean_stream_s - waits).max(mean_stream_s * 0.01);
    layer("network", received.max(sent), net_busy);
    layer(
        "destination_write",
        written,
        sum(remote, &disk) / n + fsync_s.unwrap_or(0.0),
    );
    let bottleneck = layers
        .iter()
        .min_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .map(|l| l.layer);
    Some(FileTransferOut {
        name: spec.name.clone(),
        size_bytes: spec.size,
        written_bytes: written,
        block_bytes: p.length,
        buffer_bytes: u64::from(p.streams)
            * u64::from(linerate_proto::FILE_BUFFERS)
            * u64::from(p.length),
        fsync: spec.fsync,
        transfer_s: r3(transfer_s),
        fsync_s: fsync_s.map(r3),
        end_to_end_gbps: r3(gbps(written, total_s)),
        layers,
        bottleneck,
    })
}

/// Saturating sum of byte counters (a hostile peer cannot overflow them).
fn ssum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0u64, u64::saturating_add)
}

fn side_of(run: &ClientRun, client: bool) -> Option<&SideResults> {
    if client {
        Some(&run.local)
    } else {
        run.remote.as_ref()
    }
}

/// The intervals of one side restricted to some streams, none much shorter than `every_s`
/// (`IntervalSample::merge_short`).
fn intervals_for(samples: &[IntervalSample], ids: &[u32], every_s: f64) -> Vec<IntervalOut> {
    IntervalSample::merge_short(samples, every_s)
        .iter()
        .map(|s| {
            let secs = (s.end_s - s.start_s).max(1e-9);
            let per: Vec<u64> = ids
                .iter()
                .map(|i| s.bytes.get(*i as usize).copied().unwrap_or(0))
                .collect();
            let bytes: u64 = ssum(per.iter().copied());
            IntervalOut {
                start_s: r3(s.start_s),
                end_s: r3(s.end_s),
                bytes,
                gbps: r3(gbps(bytes, secs)),
                streams: per.iter().map(|b| r3(gbps(*b, secs))).collect(),
                retransmits: s.retransmits,
                lost: s.lost,
                omitted: s.omitted,
            }
        })
        .collect()
}

/// Which transport figures a throughput test's senders and receivers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportStats {
    /// TCP_INFO of the senders: retransmits (per interval too), RTT, window, segments.
    Tcp,
    /// Datagrams: sent, lost, out of order, jitter.
    Udp,
    /// Neither (a file copy: its layers say more).
    None,
}

/// The seconds a throughput test's CPU time is spread over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuSpan {
    /// The test's duration: stream threads run for all of it, warm-up included.
    Duration,
    /// The longest stream: a test that ends with its data (a copy) ends before its time limit.
    LongestStream,
}

fn dir_stats(run: &ClientRun, dir: Direction, stats: TransportStats, span: CpuSpan) -> DirStats {
    let p = &run.params;
    let sender_is_client = dir == Direction::Send;
    let ids = stream_ids(p, sender_is_client);
    let snd = side_of(run, sender_is_client);
    let rcv = side_of(run, !sender_is_client);
    let duration = cpu_duration(p, span, snd, rcv);
    let ss = streams_of(snd, &ids);
    let rs = streams_of(rcv, &ids);
    let sent: u64 = ssum(ss.iter().map(|s| s.bytes_sent));
    let sent_secs = longest(&ss);
    let recv: u64 = ssum(rs.iter().map(|s| s.bytes_received));
    let recv_secs = longest(&rs);
    let cpu =
        |v: &[StreamResult]| v.iter().map(|s| s.cpu_s).sum::<f64>() / duration.max(1e-9) * 100.0;
    let sender = Endpoint {
        host: if sender_is_client { "local" } else { "remote" },
        bytes: sent,
        gbps: r3(gbps(sent, sent_secs)),
        cpu_percent: r1(cpu(&ss)),
    };
    let have_rcv = !rs.is_empty();
    let receiver = have_rcv.then(|| Endpoint {
        host: if sender_is_client { "remote" } else { "local" },
        bytes: recv,
        gbps: r3(gbps(recv, recv_secs)),
        cpu_percent: r1(cpu(&rs)),
    });
    let (bytes, head) = if have_rcv {
        (recv, gbps(recv, recv_secs))
    } else {
        (sent, gbps(sent, sent_secs))
    };
    let v6 = run.server.is_ipv6();
    let mut out = DirStats {
        bytes,
        gbps: r3(head),
        sender,
        receiver,
        ..DirStats::new(dir)
    };
    match stats {
        TransportStats::Tcp => tcp_stats(&mut out, p, &ss, sent, head, v6),
        TransportStats::Udp => udp_stats(&mut out, &ss, &rs, (recv, recv_secs), v6),
        TransportStats::None => {}
    }
    let snd_intervals: &[IntervalSample] = snd.map_or(&[], |s| s.intervals.as_slice());
    // The receiver's intervals; the sender's when the receiver streamed none (a stock iperf3
    // server sends none).
    let rcv_samples: &[IntervalSample] = if !have_rcv {
        snd_intervals
    } else if sender_is_client && !run.remote_intervals.is_empty() {
        &run.remote_intervals
    } else {
        rcv.map(|s| s.intervals.as_slice())
            .filter(|i| !i.is_empty())
            .unwrap_or(snd_intervals)
    };
    // The interval the samples were taken at (the sampler's default when none was asked).
    let every_s = if p.interval_ms == 0 {
        1.0
    } else {
        p.interval_ms as f64 / 1000.0
    };
    out.intervals = intervals_for(rcv_samples, &ids, every_s);
    // Retransmits happen at the sender: take them from the sender's samples of the same interval.
    if stats == TransportStats::Tcp {
        let snd_samples = IntervalSample::merge_short(snd_intervals, every_s);
        for (k, i) in out.intervals.iter_mut().enumerate() {
            i.retransmits = snd_samples.get(k).and_then(|s| s.retransmits);
        }
    }
    out.per_stream = ids
        .iter()
        .map(|id| {
            let s = ss.iter().find(|x| x.id == *id);
            let r = rs.iter().find(|x| x.id == *id);
            stream_out(*id, s, r, duration)
        })
        .collect();
    out
}

/// The streams of one direction: those its sender sends on (in a bidir test, the client
/// sends on the first `streams` connections and receives on the rest).
fn stream_ids(p: &TestParams, sender_is_client: bool) -> Vec<u32> {
    (0..p.connections())
        .filter(|i| {
            p.sends_on(*i, sender_is_client)
                && (p.direction != Direction::Bidir || (*i < p.streams) == sender_is_client)
        })
        .collect()
}

/// The seconds CPU time is spread over.
fn cpu_duration(
    p: &TestParams,
    span: CpuSpan,
    snd: Option<&SideResults>,
    rcv: Option<&SideResults>,
) -> f64 {
    match span {
        CpuSpan::Duration => p.duration_ms as f64 / 1000.0,
        CpuSpan::LongestStream => [snd, rcv]
            .into_iter()
            .flatten()
            .flat_map(|s| s.streams.iter().map(|x| x.seconds))
            .fold(0.0_f64, f64::max),
    }
}

/// One side's results of the streams `ids`; none when the side did not report.
fn streams_of(side: Option<&SideResults>, ids: &[u32]) -> Vec<StreamResult> {
    side.map(|s| {
        s.streams
            .iter()
            .filter(|x| ids.contains(&x.id))
            .cloned()
            .collect()
    })
    .unwrap_or_default()
}

/// The longest of the streams' times.
fn longest(streams: &[StreamResult]) -> f64 {
    streams.iter().map(|s| s.seconds).fold(0.0_f64, f64::max)
}

/// TCP figures of a direction from its senders' TCP_INFO (`head`: its headline Gb/s).
fn tcp_stats(
    out: &mut DirStats,
    p: &TestParams,
    ss: &[StreamResult],
    sent: u64,
    head: f64,
    v6: bool,
) {
    let tcp: Vec<_> = ss.iter().filter_map(|s| s.tcp).collect();
    if tcp.is_empty() {
        return;
    }
    out.retransmits = Some(ssum(tcp.iter().map(|t| t.retransmits)));
    // Known only when every sender reported it; never more than were retransmitted.
    out.spurious_retransmits = tcp
        .iter()
        .try_fold(0_u64, |a, t| t.dsack_dups.map(|d| a.saturating_add(d)))
        .zip(out.retransmits)
        .map(|(d, r)| d.min(r));
    out.rtt_us = Some(r3(
        tcp.iter().map(|t| f64::from(t.rtt_us)).sum::<f64>() / tcp.len() as f64
    ));
    out.cwnd = tcp.iter().map(|t| t.cwnd).max();
    out.tcp_limited = tcp_limited(&tcp, p.duration_ms as f64 / 1000.0);
    out.mss = tcp.iter().map(|t| t.mss).max();
    let segs: u64 = ssum(tcp.iter().map(|t| t.data_segs_out));
    out.segments = (segs > 0).then_some(segs);
    if segs > 0 && sent > 0 {
        let hdr = if v6 {
            TCP_L2_OVERHEAD_V4 + 20.0
        } else {
            TCP_L2_OVERHEAD_V4
        };
        // TCP_INFO counts segments over the whole test: relate them to all bytes sent.
        let total_sent: u64 = ssum(ss.iter().map(|s| s.total_bytes.max(s.bytes_sent)));
        let factor = 1.0 + hdr * segs as f64 / total_sent.max(1) as f64;
        out.l2_gbps = Some(r3(head * factor.min(2.0)));
    }
}

/// UDP figures of a direction: packets sent, and with the receiver's report, loss, order,
/// jitter and the L2 rate (`received`: bytes and seconds of the receivers). Datagrams are
/// counted after the warm-up where the receiver says where it ended (`UdpStats::warmup`, cut
/// at the same sequence number for both ends); else from the start, at both ends.
fn udp_stats(
    out: &mut DirStats,
    ss: &[StreamResult],
    rs: &[StreamResult],
    received: (u64, f64),
    v6: bool,
) {
    let sent_all: u64 = ssum(ss.iter().filter_map(|s| s.udp).map(|u| u.packets));
    if rs.is_empty() {
        out.packets = Some(sent_all);
        return;
    }
    let warmup_sent: u64 = ssum(rs.iter().filter_map(|s| s.udp?.warmup).map(|w| w.seq));
    let sent_pk = sent_all.saturating_sub(warmup_sent);
    let got_pk: u64 = ssum(
        rs.iter()
            .filter_map(|s| s.udp)
            .map(|u| u.packets_after_warmup()),
    );
    out.packets = Some(sent_pk);
    let lost = sent_pk.saturating_sub(got_pk);
    out.lost_packets = Some(lost);
    out.loss_percent = Some(if sent_pk == 0 {
        0.0
    } else {
        r3(lost as f64 / sent_pk as f64 * 100.0)
    });
    out.out_of_order = Some(ssum(
        rs.iter().filter_map(|s| s.udp).map(|u| u.out_of_order),
    ));
    let j: Vec<f64> = rs
        .iter()
        .filter_map(|s| s.udp)
        .map(|u| u.jitter_us)
        .collect();
    out.jitter_us = (!j.is_empty()).then(|| r3(j.iter().sum::<f64>() / j.len() as f64));
    let hdr = if v6 {
        UDP_L2_OVERHEAD_V4 + 20.0
    } else {
        UDP_L2_OVERHEAD_V4
    };
    let (recv, recv_secs) = received;
    out.l2_gbps = Some(r3(gbps(
        recv.saturating_add((got_pk as f64 * hdr) as u64),
        recv_secs,
    )));
}

/// One stream's line: the receiver's count when it reported, else the sender's.
fn stream_out(
    id: u32,
    s: Option<&StreamResult>,
    r: Option<&StreamResult>,
    duration: f64,
) -> StreamOut {
    let (b, secs) = match r {
        Some(r) => (r.bytes_received, r.seconds),
        None => s.map_or((0, 0.0), |s| (s.bytes_sent, s.seconds)),
    };
    let u_s = s.and_then(|s| s.udp);
    let u_r = r.and_then(|r| r.udp);
    StreamOut {
        id,
        bytes: b,
        gbps: r3(gbps(b, secs)),
        sender_cpu_percent: s.map_or(0.0, |s| r1(s.cpu_s / duration.max(1e-9) * 100.0)),
        receiver_cpu_percent: r.map(|r| r1(r.cpu_s / duration.max(1e-9) * 100.0)),
        retransmits: s.and_then(|s| s.tcp).map(|t| t.retransmits),
        rtt_us: s.and_then(|s| s.tcp).map(|t| t.rtt_us),
        cwnd: s.and_then(|s| s.tcp).map(|t| t.cwnd),
        loss_percent: u_s.zip(u_r).map(|(a, b)| {
            let sent = a.packets.saturating_sub(b.warmup.map_or(0, |w| w.seq));
            if sent == 0 {
                0.0
            } else {
                let got = b.packets_after_warmup();
                r3(sent.saturating_sub(got) as f64 / sent as f64 * 100.0)
            }
        }),
        jitter_us: u_r.map(|u| r3(u.jitter_us)),
    }
}

/// The client's round-trip statistics (full precision on the wire) for the document.
fn latency_us(l: &LatencyStats) -> LatencyUs {
    LatencyUs {
        p50: l.p50,
        p90: l.p90,
        p99: l.p99,
        p999: l.p999,
        max: l.max,
        min: Some(l.min),
        mean: l.mean,
        stddev: Some(l.stddev),
    }
    .rounded()
}

/// An RDMA test: the rate per message size or the latency, both ends' CPU, verification.
pub fn rdma(
    t: &mut TestResult,
    spec: &linerate_proto::RdmaSpec,
    rr: &crate::rdma::RdmaRun,
    run: &ClientRun,
) {
    t.kind = spec.kind();
    let head = rr.rows.last();
    t.bytes = head.map_or(0, |r| r.bytes);
    t.gbps = head.map_or(0.0, |r| r3(r.gbps));
    let cpu = |s: Option<&SideResults>| s.map(|s| r1(s.cpu.percent));
    t.sender = Some(Endpoint {
        host: "local",
        bytes: t.bytes,
        gbps: t.gbps,
        cpu_percent: cpu(Some(&run.local)).unwrap_or(0.0),
    });
    t.receiver = cpu(run.remote.as_ref()).map(|c| Endpoint {
        host: "remote",
        bytes: run
            .remote
            .as_ref()
            .and_then(|r| r.rdma.as_ref())
            .map_or(0, |x| x.bytes),
        gbps: 0.0,
        cpu_percent: c,
    });
    if let Some(l) = &rr.latency {
        t.latency_us = Some(
            LatencyUs {
                p50: l.p50_us,
                p90: l.p90_us,
                p99: l.p99_us,
                p999: l.p999_us,
                max: l.max_us,
                min: Some(l.min_us),
                mean: l.mean_us,
                stddev: Some(l.stddev_us),
            }
            .rounded(),
        );
        t.transactions_per_s = Some(l.transactions_per_s.round());
    }
    t.intervals = rr
        .intervals
        .iter()
        .map(|s| {
            let b = ssum(s.bytes.iter().copied());
            IntervalOut {
                start_s: r3(s.start_s),
                end_s: r3(s.end_s),
                bytes: b,
                gbps: r3(gbps(b, (s.end_s - s.start_s).max(1e-9))),
                streams: Vec::new(),
                retransmits: None,
                lost: None,
                omitted: false,
            }
        })
        .collect();
    let remote_errors = run
        .remote
        .as_ref()
        .and_then(|r| r.rdma.as_ref())
        .map_or(0, |x| x.verify_errors);
    // A read has no one way: its figure is its completion.
    let one_way = rr
        .latency
        .as_ref()
        .filter(|l| l.convention == linerate_rdma::LatencyConvention::HalfRoundTrip);
    t.rdma = Some(RdmaOut {
        op: spec.op.as_str(),
        provider: rr.provider.clone(),
        device: rr.domain.clone(),
        window: spec.window,
        qps: spec.qps,
        verify: spec.verify,
        verify_errors: rr.verify_errors.saturating_add(remote_errors),
        messages_per_s: head.map(|r| r.messages_per_s.round()),
        one_way_p50_us: one_way.map(|l| r3(l.p50_us / 2.0)),
        one_way_mean_us: one_way.map(|l| r3(l.mean_us / 2.0)),
        perftest_p50_us: rr.latency.as_ref().map(|l| r3(l.perftest_p50_us)),
        perftest_mean_us: rr.latency.as_ref().map(|l| r3(l.perftest_mean_us)),
        perftest_convention: rr
            .latency
            .as_ref()
            .map(|l| l.convention.as_str().to_string()),
        sizes: rr.rows.clone(),
        device_counters: Vec::new(),
    });
    if spec.verify && t.error.is_none() {
        if let Some(x) = t.rdma.as_ref().filter(|x| x.verify_errors > 0) {
            t.error = Some(format!(
                "data verification failed: {} bytes did not match",
                x.verify_errors
            ));
        }
    }
}

/// A transaction test (latency, connection rate): the client's latency statistics and
/// histogram, transactions per second and per interval, each side's CPU.
pub fn transactions(t: &mut TestResult, run: &ClientRun) {
    let p = &run.params;
    if let Some(l) = &run.local.latency {
        t.latency_us = Some(latency_us(l));
        let secs = run
            .local
            .streams
            .first()
            .map_or(p.duration_ms as f64 / 1000.0, |s| s.seconds)
            .max(1e-9);
        t.transactions_per_s = Some((l.transactions as f64 / secs).round());
    }
    t.latency_histogram = run.rtt.as_ref().map(linerate_engine::lat::Rtt::buckets);
    t.intervals = run
        .local
        .intervals
        .iter()
        .map(|s| IntervalOut {
            start_s: r3(s.start_s),
            end_s: r3(s.end_s),
            bytes: 0,
            gbps: 0.0,
            streams: Vec::new(),
            retransmits: None,
            lost: None,
            omitted: s.omitted,
        })
        .collect();
    // Interval "bytes" of a latency test count transactions; expose them as such.
    for (o, s) in t.intervals.iter_mut().zip(&run.local.intervals) {
        o.bytes = ssum(s.bytes.iter().copied());
    }
    let cpu = |s: Option<&SideResults>| s.map(|s| r1(s.cpu.percent));
    t.sender = Some(Endpoint {
        host: "local",
        bytes: 0,
        gbps: 0.0,
        cpu_percent: cpu(Some(&run.local)).unwrap_or(0.0),
    });
    t.receiver = cpu(run.remote.as_ref()).map(|c| Endpoint {
        host: "remote",
        bytes: 0,
        gbps: 0.0,
        cpu_percent: c,
    });
}

/// A throughput test (or the network side of a file copy): each direction's figures and
/// their totals.
pub fn throughput(t: &mut TestResult, run: &ClientRun, stats: TransportStats, span: CpuSpan) {
    let p = &run.params;
    let dirs: Vec<DirStats> = match p.direction {
        Direction::Bidir => vec![
            dir_stats(run, Direction::Send, stats, span),
            dir_stats(run, Direction::Receive, stats, span),
        ],
        d => vec![dir_stats(run, d, stats, span)],
    };
    // The totals: one direction's own figures, or both directions merged (`+=`).
    let mut total = dirs[0].clone();
    for d in &dirs[1..] {
        total += d;
    }
    set_totals(t, total);
    if dirs.len() > 1 {
        t.directions = dirs;
    }
}

/// The headline figures of the result: the totals over its directions, rounded.
fn set_totals(t: &mut TestResult, total: DirStats) {
    let endpoint = |e: Endpoint| Endpoint {
        gbps: r3(e.gbps),
        cpu_percent: r1(e.cpu_percent),
        ..e
    };
    t.bytes = total.bytes;
    t.gbps = r3(total.gbps);
    t.l2_gbps = total.l2_gbps.map(r3);
    t.sender = Some(endpoint(total.sender));
    t.receiver = total.receiver.map(endpoint);
    t.retransmits = total.retransmits;
    t.spurious_retransmits = total.spurious_retransmits;
    t.segments = total.segments;
    t.rtt_us = total.rtt_us;
    t.cwnd = total.cwnd;
    // One direction: its figures; bidir: each direction keeps its own (in `directions`).
    t.tcp_limited = total.tcp_limited;
    t.packets = total.packets;
    t.lost_packets = total.lost_packets;
    t.loss_percent = total.loss_percent.map(r3);
    t.out_of_order = total.out_of_order;
    t.jitter_us = total.jitter_us;
    t.intervals = total
        .intervals
        .into_iter()
        .map(|i| IntervalOut {
            gbps: r3(i.gbps),
            ..i
        })
        .collect();
    t.per_stream = total.per_stream;
}

/// What the qdiscs of each end's test interface counted during the test. None when neither side
/// read them. A server on this host reads the same interfaces as this end (loopback): its
/// figures are this end's, so it counts none of its own.
pub fn qdiscs(run: &ClientRun) -> Option<linerate_facts::QdiscsSeen> {
    let local = run.local.qdiscs.clone();
    let remote = run.remote.as_ref().and_then(|r| r.qdiscs.clone());
    let remote = if same_interfaces(run) {
        remote.map(|_| Vec::new())
    } else {
        remote
    };
    (local.is_some() || remote.is_some()).then_some(linerate_facts::QdiscsSeen { local, remote })
}

/// What each end's host counted on UDP receive during a UDP test. None when neither side read
/// them (another kind of test). A server on this host counts this host's counters: its figures
/// are this end's, whatever it sent.
pub fn udp_receive(run: &ClientRun) -> Option<linerate_facts::UdpReceiveSeen> {
    let local = run.local.udp_receive;
    let remote = if same_interfaces(run) {
        local.filter(|_| run.remote.is_some())
    } else {
        run.remote.as_ref().and_then(|r| r.udp_receive)
    };
    (local.is_some() || remote.is_some())
        .then_some(linerate_facts::UdpReceiveSeen { local, remote })
}

/// What disturbed the test, judged (`linerate_rules::disturbance`): both hosts' CPUs, both
/// sides' spans with no progress, and the result's intervals after the warm-up. None when
/// neither side measured its host or its progress (an older server and an RDMA test).
pub fn disturbance(t: &TestResult, run: &ClientRun) -> Option<linerate_results::Disturbance> {
    let p = &run.params;
    let remote = run.remote.as_ref();
    let local_cpu = run.local.host_load.as_deref().copied();
    let local_stalls = run.local.stalls.as_deref().cloned();
    let remote_cpu = remote.and_then(|r| r.host_load.as_deref().copied());
    let remote_stalls = remote.and_then(|r| r.stalls.as_deref().cloned());
    if local_cpu.is_none()
        && local_stalls.is_none()
        && remote_cpu.is_none()
        && remote_stalls.is_none()
    {
        return None;
    }
    let measured_s = p.duration_ms.saturating_sub(p.omit_ms) as f64 / 1000.0;
    // Intervals count bytes (rates in Gb/s), or transactions in a latency test.
    let transactions = t.latency_us.is_some();
    let amount = |b: u64| {
        if transactions {
            b as f64
        } else {
            b as f64 * 8.0 / 1e9
        }
    };
    // A stream paced at its target rate (per stream) writes `length` bytes at a time.
    let paced_gap_s = (p.bitrate_bps > 0).then(|| f64::from(p.length) * 8.0 / p.bitrate_bps as f64);
    let observed = linerate_rules::disturbance::Observed {
        local_cpu,
        remote_cpu,
        remote_same_host: same_host(run),
        local_stalls,
        remote_stalls,
        intervals: t
            .intervals
            .iter()
            .filter(|i| !i.omitted)
            .map(|i| (i.end_s - i.start_s, amount(i.bytes)))
            .collect(),
        measured_s,
        paced_gap_s,
        local_link: run
            .local
            .link
            .as_deref()
            .map(|l| (l.clone(), own_bytes(&run.local))),
        remote_link: remote.and_then(|r| Some((r.link.as_deref()?.clone(), own_bytes(r)))),
    };
    Some(linerate_rules::disturbance::judge(&observed))
}

/// The bytes a side's streams moved over the whole test (warm-up included), both ways.
fn own_bytes(side: &SideResults) -> u64 {
    ssum(side.streams.iter().map(|s| {
        if s.bytes_sent > 0 {
            s.total_bytes.max(s.bytes_sent)
        } else {
            s.total_bytes.max(s.bytes_received)
        }
    }))
}

/// Whether the server runs on this host: a loopback address, the client's own address, or a
/// far end whose processes were found here (in another network namespace, say).
fn same_host(run: &ClientRun) -> bool {
    same_interfaces(run) || run.far_end_here
}

/// The server reads the interfaces this end does: its address is loopback or this end's own.
/// (A far end in another network namespace of this host has interfaces of its own.)
fn same_interfaces(run: &ClientRun) -> bool {
    let ip = run.server.ip();
    ip.is_loopback() || run.local_addr.is_some_and(|a| a.ip() == ip)
}

/// A test against a stock iperf3 server: the server's own figures as a part of the result
/// (`iperf3`), and what iperf3's results change in linerate's: a server that sent TCP says its
/// retransmissions (its TCP_INFO), which become its direction's; a server that received UDP
/// does not count datagrams out of order, so its direction says none rather than 0.
pub fn iperf3(t: &mut TestResult, run: &ClientRun, i: &Iperf3Run) {
    let udp = run.params.kind == linerate_proto::TestKind::UdpBw;
    let theirs = |idx: u32| {
        let s = i.streams.get(idx as usize)?;
        i.server.as_ref()?.stream(s.id)
    };
    let fix = |d: Direction,
               retransmits: &mut Option<u64>,
               ooo: &mut Option<u64>,
               per: &mut [StreamOut]| {
        if udp && d == Direction::Send {
            *ooo = None;
        }
        if !udp && d == Direction::Receive {
            for s in per.iter_mut() {
                s.retransmits = theirs(s.id).and_then(|e| u64::try_from(e.retransmits).ok());
            }
            *retransmits = per
                .iter()
                .map(|s| s.retransmits)
                .try_fold(0u64, |a, r| r.map(|r| a.saturating_add(r)));
        }
    };
    if t.directions.is_empty() {
        fix(
            t.direction,
            &mut t.retransmits,
            &mut t.out_of_order,
            &mut t.per_stream,
        );
    } else {
        for d in &mut t.directions {
            fix(
                d.direction,
                &mut d.retransmits,
                &mut d.out_of_order,
                &mut d.per_stream,
            );
        }
        let known = |f: fn(&DirStats) -> Option<u64>| {
            t.directions
                .iter()
                .map(f)
                .try_fold(0u64, |a, v| v.map(|v| a.saturating_add(v)))
        };
        t.retransmits = known(|d| d.retransmits);
        t.out_of_order = known(|d| d.out_of_order);
        t.per_stream = t
            .directions
            .iter()
            .flat_map(|d| d.per_stream.clone())
            .collect();
    }
    let fin = |x: f64| x.is_finite().then_some(x.max(0.0));
    let server = i.server.as_ref();
    let streams = server.map_or_else(Vec::new, |r| {
        i.streams
            .iter()
            .filter_map(|s| {
                let e = r.stream(s.id)?;
                let seconds = e.start_time.zip(e.end_time).and_then(|(a, b)| fin(b - a));
                let sender = s.server() == linerate_iperf3::Role::Sender;
                let count = |v: i64| u64::try_from(v).ok();
                Some(Iperf3StreamOut {
                    id: s.id.0,
                    server: if sender { "sender" } else { "receiver" },
                    bytes: e.bytes,
                    seconds: seconds.map(r3),
                    gbps: seconds.filter(|s| *s > 0.0).map(|s| r3(gbps(e.bytes, s))),
                    retransmits: (sender && !udp).then(|| count(e.retransmits)).flatten(),
                    jitter_us: (udp && !sender)
                        .then(|| fin(e.jitter * 1e6).map(r3))
                        .flatten(),
                    lost_packets: (udp && !sender).then(|| count(e.errors)).flatten(),
                    packets: udp.then(|| count(e.packets)).flatten(),
                })
            })
            .collect()
    });
    t.iperf3 = Some(Iperf3Out {
        server_version: i.version.to_string(),
        version_from: i.version_from.clone(),
        time_s: i.time_s,
        omit_s: i.omit_s,
        end_bytes: i.end_bytes,
        end_blocks: i.end_blocks,
        server_cpu_percent: server.and_then(|r| fin(r.cpu_util_total)).map(r1),
        server_cpu_user_percent: server.and_then(|r| fin(r.cpu_util_user)).map(r1),
        server_cpu_system_percent: server.and_then(|r| fin(r.cpu_util_system)).map(r1),
        server_congestion: server.and_then(|r| r.congestion_used.clone()),
        streams,
        notes: i.notes.clone(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assemble;
    use linerate_iperf3::{plan, DataFlow, Results as Iperf3Results, VersionRange};
    use linerate_proto::{SideResults, TcpStats, TestKind, UdpStats, UdpWarmup};

    fn run(
        kind: TestKind,
        direction: Direction,
        local: SideResults,
        remote: SideResults,
        server: &str,
    ) -> ClientRun {
        let mut params = TestParams::new(kind, direction);
        params.duration_ms = 2_000;
        let flow = match direction {
            Direction::Send => DataFlow::Forward,
            Direction::Receive => DataFlow::Reverse,
            Direction::Bidir => DataFlow::Bidir,
        };
        ClientRun {
            params,
            server: "10.0.0.2:5201".parse().unwrap(),
            local_addr: None,
            local,
            remote: Some(remote),
            remote_intervals: Vec::new(),
            rtt: None,
            local_inventory: None,
            remote_inventory: None,
            rdma: None,
            iperf3: Some(Iperf3Run {
                streams: plan(flow, 1),
                server: Some(Iperf3Results::decode(server.as_bytes()).unwrap()),
                version: VersionRange::ANY,
                version_from: Vec::new(),
                time_s: 2,
                omit_s: 0,
                end_bytes: None,
                end_blocks: None,
                notes: vec!["a note".into()],
            }),
            error: None,
            far_end_here: false,
        }
    }

    fn side(s: StreamResult) -> SideResults {
        SideResults {
            streams: vec![s],
            ..SideResults::default()
        }
    }

    #[test]
    fn a_reverse_tcp_test_takes_the_servers_retransmissions() {
        let got = StreamResult {
            bytes_received: 2_000_000,
            seconds: 2.0,
            tcp: Some(TcpStats::default()),
            ..StreamResult::default()
        };
        let sent = StreamResult {
            bytes_sent: 2_000_000,
            seconds: 2.0,
            ..StreamResult::default()
        };
        let server = r#"{"cpu_util_total":30,"cpu_util_user":5,"cpu_util_system":25,"sender_has_retransmits":1,"congestion_used":"cubic","streams":[{"id":1,"bytes":2000000,"retransmits":17,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.0}]}"#;
        let t = assemble(&run(
            TestKind::TcpBw,
            Direction::Receive,
            side(got),
            side(sent),
            server,
        ));
        assert_eq!(t.retransmits, Some(17));
        assert_eq!(t.per_stream[0].retransmits, Some(17));
        let i = t.iperf3.as_ref().unwrap();
        assert_eq!(i.server_cpu_percent, Some(30.0));
        assert_eq!(i.server_congestion.as_deref(), Some("cubic"));
        assert_eq!(i.streams[0].server, "sender");
        assert_eq!(i.streams[0].retransmits, Some(17));
        assert_eq!(i.streams[0].gbps, Some(0.008));
        assert_eq!(i.notes, vec!["a note".to_string()]);
    }

    #[test]
    fn a_server_receiving_udp_says_nothing_of_the_order() {
        let sent = StreamResult {
            bytes_sent: 14_000,
            seconds: 2.0,
            udp: Some(UdpStats {
                packets: 10,
                ..UdpStats::default()
            }),
            ..StreamResult::default()
        };
        let got = StreamResult {
            bytes_received: 11_200,
            seconds: 2.0,
            udp: Some(UdpStats {
                packets: 8,
                lost: 1,
                jitter_us: 12.0,
                ..UdpStats::default()
            }),
            ..StreamResult::default()
        };
        let server = r#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":11200,"retransmits":-1,"jitter":1.2e-05,"errors":1,"packets":9}]}"#;
        let t = assemble(&run(
            TestKind::UdpBw,
            Direction::Send,
            side(sent),
            side(got),
            server,
        ));
        assert_eq!(t.out_of_order, None);
        assert_eq!(
            t.lost_packets,
            Some(2),
            "sent 10, 8 arrived by the server's count"
        );
        let s = &t.iperf3.as_ref().unwrap().streams[0];
        assert_eq!(
            (s.lost_packets, s.packets, s.jitter_us),
            (Some(1), Some(9), Some(12.0))
        );
        assert_eq!(s.seconds, None, "3.1 says no time");
    }

    /// With a warm-up, both ends' datagrams are counted from the receiver's cut: the sender's
    /// whole count less the datagrams numbered below it, the receiver's less those of them it
    /// received. From a receiver that names no cut (before it was sent), both are whole.
    #[test]
    fn udp_counts_leave_out_the_warm_up_at_one_sequence_number() {
        let sent = StreamResult {
            bytes_sent: 1_400_000_000,
            seconds: 2.0,
            udp: Some(UdpStats {
                packets: 1_000_000,
                ..UdpStats::default()
            }),
            ..StreamResult::default()
        };
        let got = |warmup| StreamResult {
            bytes_received: 728_000_000,
            seconds: 2.0,
            udp: Some(UdpStats {
                packets: 900_000,
                lost: 100_000,
                warmup,
                ..UdpStats::default()
            }),
            ..StreamResult::default()
        };
        let linerate = |warmup| {
            let mut r = run(
                TestKind::UdpBw,
                Direction::Send,
                side(sent.clone()),
                side(got(warmup)),
                r#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":-1,"streams":[]}"#,
            );
            r.iperf3 = None;
            assemble(&r)
        };
        let t = linerate(Some(UdpWarmup {
            seq: 400_000,
            packets: 380_000,
        }));
        // 600,000 sent after the cut, 520,000 of them arrived.
        assert_eq!((t.packets, t.lost_packets), (Some(600_000), Some(80_000)));
        assert_eq!(t.loss_percent, Some(13.333));
        assert_eq!(t.per_stream[0].loss_percent, Some(13.333));
        let whole = linerate(None);
        assert_eq!(
            (whole.packets, whole.lost_packets),
            (Some(1_000_000), Some(100_000))
        );
        assert_eq!(whole.loss_percent, Some(10.0));
        // The headers on the wire are those of the datagrams after the cut.
        let l2 = |t: &linerate_results::TestResult| t.l2_gbps.unwrap() - t.gbps;
        assert!(l2(&t) < l2(&whole), "{} {}", l2(&t), l2(&whole));
    }
}
