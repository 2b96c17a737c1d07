//! What doctor's rules are given: each measured result ([`Measured`]), both ends' facts
//! ([`EndFacts`], from [`end_facts`]) and the counters, together a [`DiagnoseInput`]; and what
//! the rules read off one result or one end.

use linerate_facts::{
    CounterDelta, EndFacts, FecEnd, FecMode, FindingId, Inventory, OpticsEnd, PortKind, QdiscsSeen,
    Severity, ShaperFact, UdpReceive,
};
use linerate_model::{HostStackCeiling, LimitedBy};
use linerate_proto::{Direction, HostCpuLoad, RdmaOp, TestKind, TestParams};
use linerate_units::bps_to_gbps;
use serde::{Deserialize, Serialize};

use crate::thresholds::{RETRANSMITS_MIN, RETRANSMIT_RATE, UDP_LOSS_PERCENT};

/// One measured result, reduced to what the rules need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub kind: TestKind,
    /// From this host's point of view: `Send` is local → remote.
    pub direction: Direction,
    /// RDMA tests: the operation (None for the other kinds).
    #[serde(default)]
    pub rdma: Option<RdmaOp>,
    /// A latency test (ping-pong) rather than a bandwidth test: `tcp_lat`, `udp_lat`, and RDMA
    /// `*_lat`.
    #[serde(default)]
    pub latency: bool,
    pub streams: u32,
    /// Receiver Gb/s.
    pub gbps: f64,
    pub sender_cpu_percent: Option<f64>,
    pub receiver_cpu_percent: Option<f64>,
    /// Highest CPU use of a single stream's thread, either end.
    pub max_stream_cpu_percent: Option<f64>,
    /// Busiest core of this host during the test (user + system + interrupts, from /proc/stat).
    #[serde(default)]
    pub busiest_core_percent: Option<f64>,
    /// Of that core's time, the share other processes held at least (its task time beyond all
    /// of linerate's CPU time: `linerate_engine::hostcpu`), percent.
    #[serde(default)]
    pub busiest_core_others_percent: Option<f64>,
    /// Cores' worth of CPU that other processes on this host used during the test
    /// (user + system not spent by linerate), and stolen by the hypervisor.
    #[serde(default)]
    pub other_cores: Option<f64>,
    #[serde(default)]
    pub steal_cores: Option<f64>,
    pub retransmits: Option<u64>,
    /// Of the retransmits, those TCP itself found spurious (D-SACK: the receiver already had
    /// the segment): not loss. None when the sender did not report it.
    #[serde(default)]
    pub spurious_retransmits: Option<u64>,
    /// Segments the sender sent (≈ bytes / MSS), to put retransmits in proportion.
    pub segments: Option<u64>,
    pub rtt_us: Option<f64>,
    /// TCP_INFO's chrono times (None before Linux 4.10): % of the test the senders had data
    /// queued or in flight, and of that time, % spent waiting on the receiver's window and on
    /// their own send buffer.
    #[serde(default)]
    pub tcp_busy_percent: Option<f64>,
    #[serde(default)]
    pub rwnd_limited_percent: Option<f64>,
    #[serde(default)]
    pub sndbuf_limited_percent: Option<f64>,
    pub loss_percent: Option<f64>,
    /// UDP: the datagrams lost of those sent (after the warm-up).
    #[serde(default)]
    pub lost_packets: Option<u64>,
    /// UDP: what the receiving end's host counted on UDP receive during the test (host-wide);
    /// None when that end did not read it (an older server, a stock iperf3 server) or the
    /// test went both ways.
    #[serde(default)]
    pub receiver_udp: Option<UdpReceive>,
    pub error: Option<String>,
    /// A diagnostic run whose receiver dropped the data in the kernel (`bench --discard`):
    /// not a rate an application gets, so no rule judges the path by it; it only tells what
    /// the receiver's copy costs ([`super::receiver_copy`]).
    #[serde(default)]
    pub discard: bool,
    /// The far end's CPUs during the test, as it reported them (None: an older server, a stock
    /// iperf3 server, or a far end on this host, whose CPU this host's figures cover).
    #[serde(default)]
    pub remote_cpu: Option<HostCpuLoad>,
}

impl Measured {
    /// A TCP bandwidth test in direction `d` (not a `--discard` diagnostic run).
    pub(super) fn is_tcp_bw(&self, d: Direction) -> bool {
        self.kind == TestKind::TcpBw && self.direction == d && !self.discard
    }

    /// A TCP bandwidth result of one direction that counts as "best TCP": not `--discard`,
    /// not failed.
    pub(super) fn is_tcp_result(&self) -> bool {
        (self.is_tcp_bw(Direction::Send) || self.is_tcp_bw(Direction::Receive))
            && self.error.is_none()
    }

    /// The `--discard` twin of a single stream in direction `d`, if doctor ran one.
    pub(super) fn is_discard_twin(&self, d: Direction) -> bool {
        self.kind == TestKind::TcpBw
            && self.discard
            && self.direction == d
            && self.streams == 1
            && self.error.is_none()
    }

    /// One TCP stream in one direction: what the host stack's ceiling is about.
    pub(super) fn is_single_stream(&self, d: Direction) -> bool {
        self.is_tcp_bw(d) && self.streams == 1
    }

    /// An RDMA bandwidth test that completed.
    pub(super) fn is_rdma_bw(&self) -> bool {
        self.kind == TestKind::Rdma && !self.latency && self.error.is_none()
    }

    /// The test in the words every output names it by (`TCP send, 1 stream`):
    /// `TestParams::words`, the one describer of a test.
    pub fn words(&self) -> String {
        TestParams {
            streams: self.streams,
            discard: self.discard,
            ..TestParams::new(self.kind, self.direction)
        }
        .words()
    }

    /// The result's kind as bench names it (`tcp_bw`, `rdma_write_bw`), for subjects and evidence.
    pub(super) fn kind_name(&self) -> &'static str {
        match (self.kind, self.rdma, self.latency) {
            (TestKind::Rdma, Some(RdmaOp::Write), false) => "rdma_write_bw",
            (TestKind::Rdma, Some(RdmaOp::Read), false) => "rdma_read_bw",
            (TestKind::Rdma, Some(RdmaOp::Send), false) => "rdma_send_bw",
            (TestKind::Rdma, Some(RdmaOp::Write), true) => "rdma_write_lat",
            (TestKind::Rdma, Some(RdmaOp::Read), true) => "rdma_read_lat",
            (TestKind::Rdma, Some(RdmaOp::Send), true) => "rdma_send_lat",
            (k, _, _) => k.as_str(),
        }
    }
}

/// `send`, `receive`, `bidir`: the direction as results and findings name it.
pub(super) fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Receive => "receive",
        Direction::Bidir => "bidir",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnoseInput {
    pub local: EndFacts,
    /// None for the self-check.
    pub remote: Option<EndFacts>,
    pub tests: Vec<Measured>,
    /// The host stack's upper bound for one TCP stream (`linerate_model::host`): the ceiling of a
    /// path with no hardware ceiling. None when the copy rate was not measured.
    pub host_stack: Option<HostStackCeiling>,
    pub counter_deltas: Vec<CounterDelta>,
    /// What the qdiscs of each end counted during the tests (drops, overlimits, requeues).
    #[serde(default)]
    pub qdiscs: QdiscsSeen,
}

/// Facts of one end from its inventory, for the interface named `netdev`.
pub fn end_facts(inv: &Inventory, netdev: Option<&str>, shapers: Vec<ShaperFact>) -> EndFacts {
    let port = netdev.and_then(|n| inv.ports.iter().find(|p| p.netdev.as_deref() == Some(n)));
    let nd = netdev.and_then(|n| inv.netdev(n));
    let pci = port.and_then(|p| inv.port_pci(p));
    let analysis = crate::analyze(inv);
    let findings = analysis
        .findings
        .iter()
        .filter(|f| {
            f.subject == "host"
                || port.is_some_and(|p| {
                    f.subject == p.name || p.pci.as_deref() == Some(f.subject.as_str())
                })
        })
        .filter(|f| f.id != FindingId::SysfsUnreadable || f.severity > Severity::Info)
        .cloned()
        .collect();
    EndFacts {
        netdev: netdev.map(str::to_string),
        port_kind: port.map(|p| p.kind),
        mtu: nd.and_then(|n| n.mtu),
        ipoib_mode: nd.and_then(|n| n.ipoib.as_ref()).and_then(|i| i.mode),
        ceiling: port.map(|p| crate::port_ceiling(inv, p)),
        numa_node: pci.and_then(|f| f.numa_node),
        cpus: inv.host.cpus.len(),
        sockets: inv.host.sockets.clone(),
        shapers,
        findings,
        paravirtual: nd
            .filter(|n| n.paravirtual)
            .map(|n| n.driver.clone().unwrap_or_else(|| "paravirtual".into())),
        optics: netdev.and_then(|n| optics_of(inv, n)),
        fec: netdev.and_then(|n| fec_of(inv, n)),
    }
}

/// The FEC netdev `n`'s port runs (`EndFacts::fec`); None where the driver reports no active
/// mode, or only `auto` (a configuration, not what runs).
fn fec_of(inv: &Inventory, n: &str) -> Option<FecEnd> {
    let f = inv.phy(n)?.fec.as_ref()?;
    let active = f.active.filter(|m| *m != FecMode::Auto)?;
    Some(FecEnd {
        active,
        speed_mbps: inv
            .netdev(n)
            .and_then(linerate_facts::Netdev::link_speed_mbps),
        uncorrectable_blocks: f.uncorrectable_blocks,
    })
}

/// The optic of netdev `n`'s port with the light it measures (`EndFacts::optics`).
fn optics_of(inv: &Inventory, n: &str) -> Option<OpticsEnd> {
    let m = inv.phy(n)?.module.as_ref()?;
    let d = m.diagnostics.as_ref()?;
    d.lanes
        .iter()
        .any(|l| l.tx_power_mw.is_some() || l.rx_power_mw.is_some())
        .then(|| OpticsEnd {
            module: m.name(),
            lanes: d.lanes.clone(),
            tx_power_thresholds_mw: d.tx_power_thresholds_mw,
            rx_power_thresholds_mw: d.rx_power_thresholds_mw,
        })
}

/// What the rules read off an end's facts.
pub(super) trait EndView {
    fn is_virtual(&self) -> bool;
    fn tcp_ceiling(&self) -> Option<f64>;
    fn shaper_goodput(&self) -> Option<(f64, &ShaperFact)>;
    fn port_down(&self) -> bool;
}

impl EndView for EndFacts {
    /// No physical link behind this end (loopback, veth, bridge, paravirtual), or no port known.
    fn is_virtual(&self) -> bool {
        self.port_kind.is_none_or(PortKind::is_virtual) || self.paravirtual.is_some()
    }

    /// The hardware TCP ceiling of this end's port, Gb/s, when known.
    fn tcp_ceiling(&self) -> Option<f64> {
        let c = self.ceiling.as_ref()?;
        if c.gbps <= 0.0 {
            return None;
        }
        Some(c.tcp_gbps.unwrap_or(c.gbps))
    }

    /// The lowest shaper, as TCP goodput at this MTU (shapers count whole frames).
    fn shaper_goodput(&self) -> Option<(f64, &ShaperFact)> {
        let s = self.shapers.iter().min_by_key(|s| s.rate_bps)?;
        let mtu = f64::from(self.mtu.unwrap_or(1500).clamp(576, 65_536));
        Some((
            bps_to_gbps(s.rate_bps as f64) * (mtu - 52.0) / (mtu + 14.0),
            s,
        ))
    }

    /// The port state stops all traffic (port down, no subnet manager).
    fn port_down(&self) -> bool {
        self.ceiling.as_ref().is_some_and(|c| {
            matches!(
                c.limited_by,
                LimitedBy::PortDown | LimitedBy::NoSubnetManager
            )
        })
    }
}

/// A test's loss: its retransmits for loss (count, share of the segments sent) when TCP counted
/// them, less those TCP itself found spurious (D-SACK: the receiver had the segment, so the
/// sender's timer fired early), and whether they or the UDP loss cross the rule's lines
/// ([`RETRANSMITS_MIN`] and [`RETRANSMIT_RATE`], [`UDP_LOSS_PERCENT`]). Spurious retransmits
/// are never loss: they count toward no line.
pub(super) struct Loss {
    pub(super) rtx: Option<(u64, f64)>,
    /// The retransmits TCP found spurious (at most all of them), when the sender reported it.
    pub(super) spurious: Option<u64>,
    pub(super) rtx_over: bool,
    /// All retransmits, spurious ones too, would have crossed the lines: spurious ones alone
    /// kept the test under them.
    pub(super) spurious_over: bool,
    pub(super) udp_over: bool,
}

impl Loss {
    pub(super) fn of(t: &Measured) -> Self {
        let over = |(r, rate): (u64, f64)| r >= RETRANSMITS_MIN && rate > RETRANSMIT_RATE;
        let spurious = t
            .spurious_retransmits
            .zip(t.retransmits)
            .map(|(d, r)| d.min(r));
        let share = |r: u64| match t.segments {
            Some(s) if s > 0 => Some((r, r as f64 / s as f64)),
            _ => None,
        };
        let all = t.retransmits.and_then(share);
        let rtx = t
            .retransmits
            .map(|r| r - spurious.unwrap_or(0))
            .and_then(share);
        let rtx_over = rtx.is_some_and(over);
        Self {
            rtx,
            spurious,
            rtx_over,
            spurious_over: !rtx_over && spurious.is_some_and(|d| d > 0) && all.is_some_and(over),
            udp_over: t.kind == TestKind::UdpBw
                && t.loss_percent.is_some_and(|l| l > UDP_LOSS_PERCENT),
        }
    }

    pub(super) fn lossy(&self) -> bool {
        self.rtx_over || self.udp_over
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{guest, nic, rdma, tcp, udp, veth};

    #[test]
    fn a_discard_run_or_a_failed_one_is_no_tcp_result() {
        let t = tcp(Direction::Send, 1, 5.0);
        assert!(t.is_tcp_result());
        assert!(t.is_single_stream(Direction::Send) && !t.is_single_stream(Direction::Receive));
        let discard = Measured {
            discard: true,
            ..t.clone()
        };
        assert!(!discard.is_tcp_result() && !discard.is_tcp_bw(Direction::Send));
        assert!(discard.is_discard_twin(Direction::Send));
        let failed = Measured {
            error: Some("connection refused".into()),
            ..t
        };
        assert!(!failed.is_tcp_result() && failed.is_tcp_bw(Direction::Send));
    }

    #[test]
    fn results_are_named_as_bench_names_them() {
        let w = rdma(50.0);
        assert_eq!(w.kind_name(), "rdma_write_bw");
        assert!(w.is_rdma_bw());
        let lat = Measured {
            latency: true,
            rdma: Some(RdmaOp::Read),
            ..w
        };
        assert_eq!(lat.kind_name(), "rdma_read_lat");
        assert!(!lat.is_rdma_bw());
        assert_eq!(tcp(Direction::Send, 1, 1.0).kind_name(), "tcp_bw");
        assert_eq!(
            tcp(Direction::Receive, 2, 1.0).words(),
            "TCP receive, 2 streams"
        );
    }

    #[test]
    fn the_lowest_shaper_is_goodput_at_the_mtu_of_its_end() {
        let mut e = veth("veth0");
        for rate_bps in [1_000_000_000, 500_000_000] {
            e.shapers.push(ShaperFact {
                kind: "tbf".into(),
                handle: "8001:".into(),
                rate_bps,
            });
        }
        let (g, s) = e.shaper_goodput().expect("a shaper");
        assert_eq!(s.rate_bps, 500_000_000);
        // Frames of 1500 bytes plus a 14-byte Ethernet header carry 1448 bytes of payload.
        assert!((g - 0.5 * 1448.0 / 1514.0).abs() < 1e-12, "{g}");
        assert!(veth("veth1").shaper_goodput().is_none());
    }

    #[test]
    fn an_end_is_virtual_without_a_nic_or_behind_a_paravirtual_one() {
        assert!(!nic("eth0", 100.0).is_virtual());
        assert!(veth("veth0").is_virtual());
        assert!(guest("enp1s0").is_virtual());
        let unknown = EndFacts {
            port_kind: None,
            ..nic("eth0", 100.0)
        };
        assert!(unknown.is_virtual());
    }

    #[test]
    fn a_port_that_passes_no_traffic_has_no_tcp_ceiling() {
        let up = nic("eth0", 100.0);
        assert!((up.tcp_ceiling().unwrap() - 94.0).abs() < 1e-9);
        assert!(!up.port_down());
        let mut down = nic("eth0", 0.0);
        down.ceiling.as_mut().unwrap().limited_by = LimitedBy::PortDown;
        assert_eq!(down.tcp_ceiling(), None);
        assert!(down.port_down());
        assert_eq!(veth("veth0").tcp_ceiling(), None);
    }

    #[test]
    fn loss_crosses_its_line_by_count_and_by_rate() {
        let rtx = |retransmits, segments| Measured {
            retransmits: Some(retransmits),
            segments: Some(segments),
            spurious_retransmits: None,
            ..tcp(Direction::Send, 1, 1.0)
        };
        // Too few to count, however large their share.
        assert!(!Loss::of(&rtx(RETRANSMITS_MIN - 1, 1_000)).lossy());
        // Many, but too small a share.
        assert!(!Loss::of(&rtx(1_000, 10_000_000)).lossy());
        let l = Loss::of(&rtx(100, 10_000));
        assert!(l.lossy() && l.rtx_over && !l.udp_over);
        assert_eq!(l.rtx, Some((100, 0.01)));
        assert!(Loss::of(&udp(Direction::Send, 1.0, UDP_LOSS_PERCENT + 0.1)).udp_over);
        assert!(!Loss::of(&udp(Direction::Send, 1.0, UDP_LOSS_PERCENT)).lossy());
        // No segments counted: no rate to judge by.
        assert_eq!(Loss::of(&rtx(100, 0)).rtx, None);
    }
}
