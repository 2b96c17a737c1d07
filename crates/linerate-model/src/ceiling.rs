//! The ceiling chain: from signalling rate down to what TCP can carry, and the
//! stage that sets the limit.
//!
//! ```text
//! link signalling ─► line code ─► link data rate ┐
//! PCIe GT/s × lanes ─► line code ─► TLP/DLLP ───►├─ min = ceiling ─► TCP/IP headers ─► goodput
//! ```

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::mtu::IpFraming;
use linerate_units::r2 as round2;

use crate::{EthSpeed, IbRate, MtuInput, PcieLink};

/// A link whose rate is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LinkInput {
    Infiniband(IbRate),
    Ethernet(EthSpeed),
}

impl LinkInput {
    pub fn data_gbps(&self) -> f64 {
        match self {
            Self::Infiniband(r) => r.data_gbps(),
            Self::Ethernet(e) => e.data_gbps(),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Self::Infiniband(r) => r.label(),
            Self::Ethernet(e) => e.label(),
        }
    }
}

/// Whether the port can pass traffic at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "why")]
pub enum Usability {
    Usable,
    /// No link (no cable or peer, disabled, carrier lost). The string says which.
    PortDown(String),
    /// Physical link up, logical state INIT or ARMED: nobody configured the port.
    NoSubnetManager(String),
    /// A virtual or loopback device: the host's CPU and memory are its ceiling.
    Virtual(String),
}

/// An SR-IOV virtual function's place on its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VfInput {
    /// The transmit rate limit its physical function sets on it (`max_tx_rate`), Mb/s; None
    /// when unlimited or not visible from here.
    pub max_tx_rate_mbps: Option<u32>,
    /// The PF's record of this VF was read, so a limit would be seen; false inside a guest
    /// (and on a host whose PF did not say).
    pub pf_visible: bool,
}

/// Everything [`ceiling`] needs, as plain values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingInput {
    pub link: Option<LinkInput>,
    /// The link the PCIe function actually negotiated.
    pub pcie: Option<PcieLink>,
    /// Max payload size in bytes, and whether it was read (true) or assumed.
    pub mps: u32,
    pub mps_known: bool,
    pub mtu: Option<MtuInput>,
    pub usability: Usability,
    /// The port is an SR-IOV virtual function.
    #[serde(default)]
    pub vf: Option<VfInput>,
}

/// Stage identifiers, stable for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    /// Signalling rate of the link (lanes × baud × bits per symbol).
    Signalling,
    /// Data rate of the link after its line code.
    Encoding,
    /// PCIe transfer rate × lanes.
    PcieLink,
    /// PCIe after its line code.
    PcieEncoding,
    /// PCIe after TLP headers and DLLP traffic.
    PciePayload,
    /// An SR-IOV virtual function: its physical function's rate limit (`max_tx_rate`), or the
    /// port it shares with the PF and the other VFs.
    VfRate,
    /// TCP payload after per-packet Ethernet/IPoIB, IP and TCP headers.
    TcpGoodput,
    /// The port state (down, no subnet manager, virtual).
    State,
}

impl StageKind {
    /// The stage's name in JSON and text (`pcie_payload`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signalling => "signalling",
            Self::Encoding => "encoding",
            Self::PcieLink => "pcie_link",
            Self::PcieEncoding => "pcie_encoding",
            Self::PciePayload => "pcie_payload",
            Self::VfRate => "vf_rate",
            Self::TcpGoodput => "tcp_goodput",
            Self::State => "state",
        }
    }
}

/// What limits the ceiling (JSON contract values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    Link,
    Encoding,
    Pcie,
    Mtu,
    PortDown,
    NoSubnetManager,
    Unknown,
}

impl LimitedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Link => "link",
            Self::Encoding => "encoding",
            Self::Pcie => "pcie",
            Self::Mtu => "mtu",
            Self::PortDown => "port_down",
            Self::NoSubnetManager => "no_subnet_manager",
            Self::Unknown => "unknown",
        }
    }
}

/// One step of the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub stage: StageKind,
    /// Rate after this stage, Gb/s.
    pub gbps: f64,
    /// One line, the way an expert would say it.
    pub explain: String,
}

/// The result: the ceiling, the stage that sets it, and the chain that shows why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// Data rate the hardware can carry now, Gb/s; 0 when it cannot pass traffic or is unknown.
    pub gbps: f64,
    pub limited_by: LimitedBy,
    pub chain: Vec<Stage>,
    /// TCP payload rate after per-packet headers, when the MTU is known.
    pub tcp_gbps: Option<f64>,
    /// What the hardware would carry once the port state is fixed (port down, no SM).
    pub potential_gbps: Option<f64>,
    /// The chain in one sentence.
    pub summary: String,
}

/// Below this fraction of goodput, the MTU itself is named as the limit.
pub const MTU_LIMIT_EFFICIENCY: f64 = 0.90;
/// A line code costing at least this share of the signalling rate is named as the limit.
pub const ENCODING_LIMIT_OVERHEAD: f64 = 0.10;

/// Compute the ceiling chain. Pure.
pub fn ceiling(input: &CeilingInput) -> Ceiling {
    let mut chain = Vec::new();
    let mut words: Vec<String> = Vec::new();

    let link_gbps = input.link.map(|l| link_stages(&l, &mut chain, &mut words));
    let pcie_gbps = input
        .pcie
        .map(|p| pcie_stages(p, input.mps, input.mps_known, &mut chain, &mut words));

    // The capacity of the hardware path and what limits it.
    let (capacity, mut limited_by) = match (link_gbps, pcie_gbps) {
        (Some(l), Some(p)) if p < l => (Some(p), LimitedBy::Pcie),
        (Some(l), _) => (Some(l), link_limit(input.link.as_ref())),
        (None, _) => (None, LimitedBy::Unknown),
    };

    let (capacity, vf_limited) = vf_stage(input.vf.as_ref(), capacity, &mut chain, &mut words);
    if vf_limited {
        limited_by = LimitedBy::Link;
    }

    let mut gbps = capacity.unwrap_or(0.0);
    let mut tcp_gbps = None;
    let mut tcp_words = None;
    if let (Some(cap), Some(mtu)) = (capacity, input.mtu) {
        let stage = goodput_stage(cap, mtu);
        tcp_gbps = Some(round2(stage.gbps));
        if let Some(eff) = mtu.efficiency() {
            if eff < MTU_LIMIT_EFFICIENCY {
                gbps = stage.gbps;
                limited_by = LimitedBy::Mtu;
            }
        }
        tcp_words = Some(format!(
            "TCP at MTU {} about {} Gb/s",
            mtu.mtu,
            fmt_num(round2(stage.gbps))
        ));
        chain.push(stage);
    }

    let mut potential = None;
    match &input.usability {
        Usability::Usable => {}
        Usability::PortDown(why) | Usability::NoSubnetManager(why) | Usability::Virtual(why) => {
            let lb = match input.usability {
                Usability::PortDown(_) => LimitedBy::PortDown,
                Usability::NoSubnetManager(_) => LimitedBy::NoSubnetManager,
                _ => LimitedBy::Unknown,
            };
            if capacity.is_some() && lb != LimitedBy::Unknown {
                potential = Some(round2(gbps));
            }
            chain.push(Stage {
                stage: StageKind::State,
                gbps: 0.0,
                explain: why.clone(),
            });
            gbps = 0.0;
            tcp_gbps = None;
            limited_by = lb;
        }
    }

    let mut summary = summarize(&words, gbps, limited_by, &input.usability, potential);
    if vf_limited && limited_by == LimitedBy::Link {
        summary = summary.replace("limited by the link", "limited by the VF's rate limit");
    }
    if let (Some(t), Usability::Usable) = (tcp_words, &input.usability) {
        summary.push_str("; ");
        summary.push_str(&t);
    }
    Ceiling {
        gbps: round2(gbps),
        limited_by,
        chain,
        tcp_gbps,
        potential_gbps: potential,
        summary,
    }
}

/// The VF stage: the PF's rate limit when it is below the capacity (then it is the limit,
/// returned as true), else the port shared with the PF and the other VFs.
fn vf_stage(
    vf: Option<&VfInput>,
    capacity: Option<f64>,
    chain: &mut Vec<Stage>,
    words: &mut Vec<String>,
) -> (Option<f64>, bool) {
    let (Some(vf), Some(cap)) = (vf, capacity) else {
        return (capacity, false);
    };
    let limit = vf.max_tx_rate_mbps.map(|m| f64::from(m) / 1000.0);
    let (gbps, limited, explain) = match (limit, vf.pf_visible) {
        (Some(l), _) if l < cap => (
            l,
            true,
            format!(
                "SR-IOV virtual function: its physical function caps what it sends at max_tx_rate {} Mb/s ({} Gb/s), below the port's {} Gb/s",
                vf.max_tx_rate_mbps.unwrap_or(0),
                fmt_num(l),
                fmt_num(cap)
            ),
        ),
        (_, true) => (
            cap,
            false,
            format!(
                "SR-IOV virtual function with no rate limit below the port's: it shares {} Gb/s with its physical function and the other VFs",
                fmt_num(cap)
            ),
        ),
        (_, false) => (
            cap,
            false,
            format!(
                "SR-IOV virtual function: it shares its physical port's {} Gb/s with the PF and the other VFs, and a rate limit set on its PF (max_tx_rate) cannot be seen from here (inside a guest, never)",
                fmt_num(cap)
            ),
        ),
    };
    chain.push(Stage {
        stage: StageKind::VfRate,
        gbps: round2(gbps),
        explain,
    });
    if limited {
        words.push(format!("VF rate limit {} Gb/s", fmt_num(gbps)));
    }
    (Some(gbps), limited)
}

fn link_limit(link: Option<&LinkInput>) -> LimitedBy {
    match link {
        Some(LinkInput::Infiniband(r))
            if r.speed.encoding().overhead_percent() / 100.0 >= ENCODING_LIMIT_OVERHEAD =>
        {
            LimitedBy::Encoding
        }
        _ => LimitedBy::Link,
    }
}

fn link_stages(link: &LinkInput, chain: &mut Vec<Stage>, words: &mut Vec<String>) -> f64 {
    match link {
        LinkInput::Infiniband(r) => {
            let sig = r.signalling_gbps();
            let data = r.data_gbps();
            let enc = r.speed.encoding();
            chain.push(Stage {
                stage: StageKind::Signalling,
                gbps: round2(sig),
                explain: format!(
                    "{}: {} lanes × {} Gb/s = {} Gb/s signalling",
                    r.label(),
                    r.width,
                    fmt_num(r.speed.lane_signalling_gbps()),
                    fmt_num(sig)
                ),
            });
            chain.push(Stage {
                stage: StageKind::Encoding,
                gbps: round2(data),
                explain: format!(
                    "{} line code keeps {:.1}% of the bits: {} Gb/s of data",
                    enc.name(),
                    enc.efficiency() * 100.0,
                    fmt_num(data)
                ),
            });
            words.push(format!("{} Gb/s signalling", fmt_num(sig)));
            words.push(format!("{} Gb/s after {}", fmt_num(data), enc.name()));
            data
        }
        LinkInput::Ethernet(e) => {
            let data = e.data_gbps();
            if let (Some(sig), Some(enc), Some(lanes)) = (e.signalling_gbps(), e.encoding, e.lanes)
            {
                chain.push(Stage {
                    stage: StageKind::Signalling,
                    gbps: round2(sig),
                    explain: format!(
                        "{}: typically {} lane(s) × {} Gb/s = {} Gb/s signalling",
                        e.label(),
                        lanes,
                        fmt_num(e.lane_signalling_gbps.unwrap_or(0.0)),
                        fmt_num(sig)
                    ),
                });
                chain.push(Stage {
                    stage: StageKind::Encoding,
                    gbps: round2(data),
                    explain: format!(
                        "{} line code below the MAC: {} Gb/s of data, the advertised speed",
                        enc.name(),
                        fmt_num(data)
                    ),
                });
            } else {
                let explain = match e.phy_note() {
                    Some(phy) => format!(
                        "{}: {phy}; either way {} Gb/s of data at the MAC, the advertised speed",
                        e.label(),
                        fmt_num(data)
                    ),
                    None => format!("Ethernet link at {} Gb/s (MAC data rate)", fmt_num(data)),
                };
                chain.push(Stage {
                    stage: StageKind::Encoding,
                    gbps: round2(data),
                    explain,
                });
            }
            words.push(format!("{} link {} Gb/s", e.label(), fmt_num(data)));
            data
        }
    }
}

fn pcie_stages(
    p: PcieLink,
    mps: u32,
    mps_known: bool,
    chain: &mut Vec<Stage>,
    words: &mut Vec<String>,
) -> f64 {
    let raw = p.raw_gbps();
    let enc = p.encoded_gbps();
    let payload = p.payload_gbps(mps);
    chain.push(Stage {
        stage: StageKind::PcieLink,
        gbps: round2(raw),
        explain: format!(
            "{}: {} lanes × {} GT/s = {} GT/s",
            p.label(),
            p.width,
            fmt_num(p.gen.gt_per_s()),
            fmt_num(raw)
        ),
    });
    chain.push(Stage {
        stage: StageKind::PcieEncoding,
        gbps: round2(enc),
        explain: format!(
            "{} on PCIe: {} Gb/s per direction",
            p.gen.encoding().name(),
            fmt_num(enc)
        ),
    });
    let mps_note = if mps_known {
        format!("max payload {mps} B")
    } else {
        format!("max payload {mps} B assumed: reading it needs root")
    };
    chain.push(Stage {
        stage: StageKind::PciePayload,
        gbps: round2(payload),
        explain: format!(
            "TLP headers ({} B per packet) and DLLP/flow-control traffic ({mps_note}): about {} Gb/s of payload",
            crate::pcie::TLP_OVERHEAD_BYTES,
            fmt_num(payload)
        ),
    });
    words.push(format!(
        "{} carries about {} Gb/s of payload",
        p.label(),
        fmt_num(payload)
    ));
    payload
}

fn goodput_stage(capacity: f64, mtu: MtuInput) -> Stage {
    let how = match mtu.transport {
        IpFraming::Ethernet => "Ethernet",
        IpFraming::IpoibDatagram => "IPoIB datagram mode",
        IpFraming::IpoibConnected => "IPoIB connected mode",
    };
    match mtu.bytes_per_packet() {
        Some((payload, wire)) => {
            let g = capacity * f64::from(payload) / f64::from(wire);
            Stage {
                stage: StageKind::TcpGoodput,
                gbps: round2(g),
                explain: format!(
                    "MTU {} over {how}: {payload} B of TCP payload per {wire} B on the link: {} Gb/s of TCP goodput",
                    mtu.mtu,
                    fmt_num(g)
                ),
            }
        }
        None => Stage {
            stage: StageKind::TcpGoodput,
            gbps: 0.0,
            explain: format!("MTU {} cannot carry a TCP segment", mtu.mtu),
        },
    }
}

fn summarize(
    words: &[String],
    gbps: f64,
    limited_by: LimitedBy,
    usability: &Usability,
    potential: Option<f64>,
) -> String {
    let mut s = words.join(" → ");
    if !s.is_empty() {
        s.push_str(" → ");
    }
    match usability {
        Usability::Usable => {
            let what = match limited_by {
                LimitedBy::Link => "the link",
                LimitedBy::Encoding => "the link's line encoding",
                LimitedBy::Pcie => "PCIe",
                LimitedBy::Mtu => "the MTU",
                _ => "an unknown stage",
            };
            if limited_by == LimitedBy::Unknown {
                s.push_str("ceiling unknown: the link rate is not reported");
            } else {
                let _ = write!(s, "ceiling about {} Gb/s, limited by {what}", fmt_num(gbps));
            }
        }
        Usability::PortDown(why) | Usability::NoSubnetManager(why) | Usability::Virtual(why) => {
            let _ = write!(s, "{why}");
            if let Some(p) = potential {
                let _ = write!(s, " (once fixed: about {} Gb/s)", fmt_num(p));
            }
        }
    }
    s
}

use linerate_units::fmt_num;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_are_their_json_names() {
        for k in [
            StageKind::Signalling,
            StageKind::Encoding,
            StageKind::PcieLink,
            StageKind::PcieEncoding,
            StageKind::PciePayload,
            StageKind::VfRate,
            StageKind::TcpGoodput,
            StageKind::State,
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
    use crate::{IbSpeed, PcieGen};

    fn ib(speed: IbSpeed, width: u8) -> Option<LinkInput> {
        Some(LinkInput::Infiniband(IbRate::new(speed, width)))
    }

    fn input(link: Option<LinkInput>, pcie: Option<PcieLink>) -> CeilingInput {
        CeilingInput {
            link,
            pcie,
            mps: 256,
            mps_known: false,
            mtu: None,
            usability: Usability::Usable,
            vf: None,
        }
    }

    #[test]
    fn a_vf_rate_limit_is_a_stage_and_the_limit() {
        let mut i = input(
            Some(LinkInput::Ethernet(EthSpeed::from_mbps(100_000))),
            None,
        );
        i.vf = Some(VfInput {
            max_tx_rate_mbps: Some(10_000),
            pf_visible: true,
        });
        i.mtu = Some(MtuInput {
            mtu: 9000,
            transport: IpFraming::Ethernet,
        });
        let c = ceiling(&i);
        assert!((c.gbps - 10.0).abs() < 1e-9, "{}", c.gbps);
        assert_eq!(c.limited_by, LimitedBy::Link);
        let vf = c
            .chain
            .iter()
            .find(|s| s.stage == StageKind::VfRate)
            .unwrap();
        assert!(
            vf.explain.contains("max_tx_rate 10000 Mb/s"),
            "{}",
            vf.explain
        );
        assert!(
            c.summary.contains("limited by the VF's rate limit"),
            "{}",
            c.summary
        );
        assert!(c.tcp_gbps.unwrap() < 10.0);
        // A limit above the port's rate limits nothing; a guest's VF says what it cannot see.
        i.vf = Some(VfInput {
            max_tx_rate_mbps: Some(200_000),
            pf_visible: true,
        });
        assert!((ceiling(&i).gbps - 100.0).abs() < 1e-9);
        i.vf = Some(VfInput {
            max_tx_rate_mbps: None,
            pf_visible: false,
        });
        let c = ceiling(&i);
        assert!((c.gbps - 100.0).abs() < 1e-9);
        let vf = c
            .chain
            .iter()
            .find(|s| s.stage == StageKind::VfRate)
            .unwrap();
        assert!(vf.explain.contains("cannot be seen"), "{}", vf.explain);
    }

    #[test]
    fn qdr_on_gen2x4_is_pcie_limited() {
        let c = ceiling(&input(
            ib(IbSpeed::Qdr, 4),
            Some(PcieLink::new(PcieGen::Gen2, 4)),
        ));
        assert_eq!(c.limited_by, LimitedBy::Pcie);
        assert!((c.gbps - 13.17).abs() < 0.01, "{}", c.gbps);
        assert!(c.summary.contains("40 Gb/s signalling"), "{}", c.summary);
        assert!(c.summary.contains("32 Gb/s after 8b/10b"), "{}", c.summary);
        assert!(c.summary.contains("limited by PCIe"), "{}", c.summary);
    }

    #[test]
    fn qdr_on_gen3x8_is_encoding_limited() {
        let c = ceiling(&input(
            ib(IbSpeed::Qdr, 4),
            Some(PcieLink::new(PcieGen::Gen3, 8)),
        ));
        assert_eq!(c.limited_by, LimitedBy::Encoding);
        assert!((c.gbps - 32.0).abs() < 1e-9);
    }

    /// Every IB speed at 4X behind a PCIe link wide enough: the ceiling is the data rate.
    #[test]
    fn every_ib_speed_hand_computed() {
        let expect = [
            (IbSpeed::Sdr, 8.0, LimitedBy::Encoding),
            (IbSpeed::Ddr, 16.0, LimitedBy::Encoding),
            (IbSpeed::Qdr, 32.0, LimitedBy::Encoding),
            (IbSpeed::Fdr10, 40.0, LimitedBy::Link),
            (IbSpeed::Fdr, 54.55, LimitedBy::Link),
            (IbSpeed::Edr, 100.0, LimitedBy::Link),
            (IbSpeed::Hdr, 200.0, LimitedBy::Link),
            (IbSpeed::Ndr, 400.0, LimitedBy::Link),
            (IbSpeed::Xdr, 800.0, LimitedBy::Link),
        ];
        for (speed, gbps, lb) in expect {
            let c = ceiling(&input(ib(speed, 4), Some(PcieLink::new(PcieGen::Gen6, 32))));
            assert!((c.gbps - gbps).abs() < 0.01, "{speed:?}: {}", c.gbps);
            assert_eq!(c.limited_by, lb, "{speed:?}");
        }
    }

    /// Every PCIe generation at x16 behind an XDR link: PCIe payload, hand computed.
    #[test]
    fn every_pcie_gen_hand_computed() {
        let eff = 0.9 * 256.0 / 280.0;
        let expect = [
            (PcieGen::Gen1, 16.0 * 2.0 * eff),
            (PcieGen::Gen2, 16.0 * 4.0 * eff),
            (PcieGen::Gen3, 16.0 * 8.0 * 128.0 / 130.0 * eff),
            (PcieGen::Gen4, 16.0 * 16.0 * 128.0 / 130.0 * eff),
            (PcieGen::Gen5, 16.0 * 32.0 * 128.0 / 130.0 * eff),
            (PcieGen::Gen6, 16.0 * 64.0 * 242.0 / 256.0 * eff),
        ];
        for (gen, gbps) in expect {
            let c = ceiling(&input(ib(IbSpeed::Xdr, 4), Some(PcieLink::new(gen, 16))));
            assert!(
                (c.gbps - round2(gbps)).abs() < 1e-9,
                "{gen:?}: {} vs {gbps}",
                c.gbps
            );
            assert_eq!(c.limited_by, LimitedBy::Pcie);
        }
    }

    #[test]
    fn ethernet_with_mtu() {
        let mut i = input(
            Some(LinkInput::Ethernet(EthSpeed::from_mbps(40_000))),
            Some(PcieLink::new(PcieGen::Gen3, 8)),
        );
        i.mtu = Some(MtuInput {
            mtu: 1500,
            transport: IpFraming::Ethernet,
        });
        let c = ceiling(&i);
        assert_eq!(c.limited_by, LimitedBy::Link);
        assert!((c.gbps - 40.0).abs() < 1e-9);
        assert!((c.tcp_gbps.unwrap() - 37.66).abs() < 0.01);
        assert_eq!(c.chain.last().unwrap().stage, StageKind::TcpGoodput);
    }

    /// The 1GbE chain names no line code it cannot know (copper has no 8b/10b).
    #[test]
    fn one_gbe_chain_is_generic() {
        let c = ceiling(&input(
            Some(LinkInput::Ethernet(EthSpeed::from_mbps(1000))),
            Some(PcieLink::new(PcieGen::Gen1, 1)),
        ));
        assert_eq!(c.limited_by, LimitedBy::Link);
        assert!((c.gbps - 1.0).abs() < 1e-9);
        assert!(!c.chain.iter().any(|s| s.stage == StageKind::Signalling));
        let enc = c
            .chain
            .iter()
            .find(|s| s.stage == StageKind::Encoding)
            .unwrap();
        assert!(
            enc.explain.contains("1000BASE-T or 1000BASE-X"),
            "{}",
            enc.explain
        );
        assert!(!c.summary.contains("8b/10b"), "{}", c.summary);
    }

    #[test]
    fn tiny_mtu_becomes_the_limit() {
        let mut i = input(Some(LinkInput::Ethernet(EthSpeed::from_mbps(10_000))), None);
        i.mtu = Some(MtuInput {
            mtu: 300,
            transport: IpFraming::Ethernet,
        });
        let c = ceiling(&i);
        assert_eq!(c.limited_by, LimitedBy::Mtu);
        assert!(c.gbps < 8.0);
    }

    #[test]
    fn down_port_has_zero_and_a_potential() {
        let mut i = input(ib(IbSpeed::Edr, 4), Some(PcieLink::new(PcieGen::Gen3, 16)));
        i.usability = Usability::NoSubnetManager("no subnet manager".into());
        let c = ceiling(&i);
        assert_eq!(c.gbps, 0.0);
        assert_eq!(c.limited_by, LimitedBy::NoSubnetManager);
        assert_eq!(c.potential_gbps, Some(100.0));
    }

    #[test]
    fn virtual_device_unknown() {
        let mut i = input(None, None);
        i.usability = Usability::Virtual("loopback: no hardware ceiling".into());
        let c = ceiling(&i);
        assert_eq!(c.gbps, 0.0);
        assert_eq!(c.limited_by, LimitedBy::Unknown);
        assert_eq!(c.potential_gbps, None);
    }

    #[test]
    fn unknown_link_is_unknown_even_with_pcie() {
        let c = ceiling(&input(None, Some(PcieLink::new(PcieGen::Gen3, 8))));
        assert_eq!(c.limited_by, LimitedBy::Unknown);
        assert_eq!(c.gbps, 0.0);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(40.0), "40");
        assert_eq!(fmt_num(14.4), "14.4");
        assert_eq!(fmt_num(54.545_454), "54.55");
        assert_eq!(fmt_num(25.781_25), "25.78125");
        assert_eq!(fmt_num(13.165_714), "13.17");
        assert_eq!(fmt_num(10.3125), "10.3125");
        assert_eq!(fmt_num(2.5), "2.5");
    }
}
