//! Per-packet header arithmetic: TCP goodput as a fraction of the link data rate.

use serde::{Deserialize, Serialize};

/// IPv4 (20) + TCP (20) + TCP timestamps option (12): what Linux sends by default.
pub const IP_TCP_HEADERS: u32 = 52;
/// Ethernet on the wire around each IP packet: header 14, FCS 4, preamble/SFD 8, inter-frame gap 12.
pub const ETH_FRAME_OVERHEAD: u32 = 38;
/// IPoIB encapsulation header in front of each IP packet.
pub const IPOIB_HEADER: u32 = 4;
/// InfiniBand headers per packet on a reliable connection: LRH 8 + BTH 12 + ICRC 4 + VCRC 2.
pub const IB_RC_PACKET_OVERHEAD: u32 = 26;
/// Unreliable datagram adds the DETH (8).
pub const IB_UD_PACKET_OVERHEAD: u32 = 34;
/// IB MTU assumed under connected-mode IPoIB (the active MTU is not in sysfs).
pub const ASSUMED_IB_MTU: u32 = 4096;

/// How IP packets are carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IpFraming {
    Ethernet,
    /// IPoIB datagram mode: one IP packet per UD packet (IB MTU = IP MTU + 4).
    IpoibDatagram,
    /// IPoIB connected mode: IP packets up to 65520 B over RC, cut into IB-MTU packets.
    IpoibConnected,
}

/// The input to the goodput stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MtuInput {
    pub mtu: u32,
    pub transport: IpFraming,
}

impl MtuInput {
    /// TCP payload per IP packet and bytes on the link per IP packet.
    /// `None` when the MTU cannot carry a TCP segment.
    pub fn bytes_per_packet(&self) -> Option<(u32, u32)> {
        let payload = self.mtu.checked_sub(IP_TCP_HEADERS).filter(|p| *p > 0)?;
        let wire = match self.transport {
            IpFraming::Ethernet => self.mtu + ETH_FRAME_OVERHEAD,
            IpFraming::IpoibDatagram => self.mtu + IPOIB_HEADER + IB_UD_PACKET_OVERHEAD,
            IpFraming::IpoibConnected => {
                let msg = self.mtu + IPOIB_HEADER;
                let packets = msg.div_ceil(ASSUMED_IB_MTU);
                msg + packets * IB_RC_PACKET_OVERHEAD
            }
        };
        Some((payload, wire))
    }

    /// Fraction of the link data rate left for TCP payload.
    pub fn efficiency(&self) -> Option<f64> {
        let (p, w) = self.bytes_per_packet()?;
        Some(f64::from(p) / f64::from(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_1500_is_1448_of_1538() {
        let m = MtuInput {
            mtu: 1500,
            transport: IpFraming::Ethernet,
        };
        assert_eq!(m.bytes_per_packet(), Some((1448, 1538)));
        // sysfs-kb F2: 40 Gb/s at MTU 1500 → ≈ 37.7 Gb/s of TCP.
        assert!((40.0 * m.efficiency().unwrap() - 37.66).abs() < 0.01);
        let j = MtuInput {
            mtu: 9000,
            transport: IpFraming::Ethernet,
        };
        assert!((j.efficiency().unwrap() - 8948.0 / 9038.0).abs() < 1e-12);
    }

    #[test]
    fn ipoib() {
        let dg = MtuInput {
            mtu: 2044,
            transport: IpFraming::IpoibDatagram,
        };
        assert_eq!(dg.bytes_per_packet(), Some((1992, 2082)));
        let cm = MtuInput {
            mtu: 65520,
            transport: IpFraming::IpoibConnected,
        };
        // 65524 B message → 16 IB packets of ≤ 4096 B.
        assert_eq!(cm.bytes_per_packet(), Some((65468, 65524 + 16 * 26)));
        assert!(cm.efficiency().unwrap() > 0.99);
    }

    #[test]
    fn tiny_mtu_has_no_goodput() {
        let m = MtuInput {
            mtu: 40,
            transport: IpFraming::Ethernet,
        };
        assert_eq!(m.efficiency(), None);
    }
}
