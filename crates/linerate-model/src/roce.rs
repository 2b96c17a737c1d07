//! RoCE arithmetic: the InfiniBand MTU a RoCE port uses at a given Ethernet MTU, the netdev MTU
//! that lifts it, and the priority its traffic goes out on. Pure.
//!
//! A RoCE packet carries its InfiniBand headers inside the Ethernet frame, so the port's active
//! MTU is the largest InfiniBand MTU (256, 512, 1024, 2048, 4096 bytes) that fits in the
//! netdev's MTU less those headers. The kernel's `iboe_get_mtu()` (include/rdma/ib_addr.h, used
//! by mlx4, mlx5, bnxt_re, qedr, hns and by rdma_cm for the path) subtracts 96 bytes: GRH 40 +
//! UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 (include/rdma/ib_pack.h). Soft-RoCE
//! (`rxe_set_mtu()`, drivers/infiniband/sw/rxe) subtracts `RXE_MAX_HDR_LENGTH`, 80 bytes.
//! So 1500 gives 1024 on both; 4096 needs 4192 on mlx5 and 4176 on rxe.

/// The InfiniBand MTUs, smallest first, in bytes.
pub const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// The largest InfiniBand MTU, and what RoCE ports support.
pub const IB_MTU_MAX: u32 = 4096;
/// Headers `iboe_get_mtu()` keeps room for: GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4.
pub const IBOE_HEADROOM: u32 = 96;
/// Soft-RoCE's `RXE_MAX_HDR_LENGTH`.
pub const RXE_HEADROOM: u32 = 80;
/// The jumbo frame size most switches and guides use for RoCE (NVIDIA's RoCE configuration
/// guides set 9000): room for the largest InfiniBand MTU with more to spare.
pub const JUMBO_MTU: u32 = 9000;

/// The bytes of a netdev's MTU a RoCE port of this driver family keeps for its headers
/// (`rxe`: 80; every hardware driver through `iboe_get_mtu()`: 96).
pub fn headroom(family: &str) -> u32 {
    if family == "rxe" {
        RXE_HEADROOM
    } else {
        IBOE_HEADROOM
    }
}

/// The InfiniBand MTU a RoCE port uses over a netdev of `netdev_mtu` bytes, at most `max`
/// (the port's largest), with `headroom` bytes of headers; `None` below 256 (no RoCE at all).
pub fn active_mtu(netdev_mtu: u32, headroom: u32, max: u32) -> Option<u32> {
    let room = netdev_mtu.checked_sub(headroom)?;
    IB_MTUS.iter().copied().rfind(|m| *m <= room && *m <= max)
}

/// The smallest netdev MTU that gives a port the InfiniBand MTU `ib_mtu`.
pub fn netdev_mtu_for(ib_mtu: u32, headroom: u32) -> u32 {
    ib_mtu + headroom
}

/// The IPv4 ToS octet's DSCP (its upper six bits).
pub fn dscp_of_tos(tos: u8) -> u8 {
    tos >> 2
}

/// The ToS octet that carries `dscp` with ECN-capable transport (ECT(0), `0b10`), as RoCE v2
/// sends it with ECN on: DSCP 26 → 106.
pub fn tos_of_dscp(dscp: u8) -> u8 {
    ((dscp & 0x3f) << 2) | 0b10
}

/// The priority mlx5 gives a DSCP without an entry in the port's DSCP map: its upper three
/// bits (`mlx5e_dcbnl_init_app` fills the default map with `dscp >> 3`).
pub fn default_dscp_priority(dscp: u8) -> u8 {
    (dscp & 0x3f) >> 3
}

/// The kernel's `rt_tos2priority()` (include/net/route.h, `ip_tos2prio`): the skb priority of
/// an IPv4 ToS, which a VLAN's egress map turns into the 802.1p priority of RoCE over a VLAN
/// (`iboe_tos_to_sl`). TC_PRIO_BESTEFFORT 0, BULK 2, INTERACTIVE_BULK 4,
/// INTERACTIVE 6 (`ECN_OR_COST(class)` is the class itself).
pub fn tos_to_skb_priority(tos: u8) -> u8 {
    const IP_TOS2PRIO: [u8; 16] = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];
    // IPTOS_TOS(tos) >> 1: the four TOS bits 0x1e.
    IP_TOS2PRIO[usize::from((tos & 0x1e) >> 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// roce-phy.md's table: the netdev MTU each InfiniBand MTU needs, per driver.
    #[test]
    fn the_headroom_table() {
        for (ib, mlx5, rxe) in [
            (256, 352, 336),
            (512, 608, 592),
            (1024, 1120, 1104),
            (2048, 2144, 2128),
            (4096, 4192, 4176),
        ] {
            assert_eq!(netdev_mtu_for(ib, headroom("mlx5")), mlx5);
            assert_eq!(netdev_mtu_for(ib, headroom("rxe")), rxe);
            assert_eq!(active_mtu(mlx5, IBOE_HEADROOM, 4096), Some(ib));
            assert_eq!(active_mtu(rxe, RXE_HEADROOM, 4096), Some(ib));
            if ib > 256 {
                assert!(active_mtu(mlx5 - 1, IBOE_HEADROOM, 4096) < Some(ib));
            }
        }
        assert_eq!(active_mtu(1500, IBOE_HEADROOM, 4096), Some(1024));
        assert_eq!(active_mtu(1500, RXE_HEADROOM, 4096), Some(1024));
        assert_eq!(active_mtu(9000, IBOE_HEADROOM, 4096), Some(4096));
        assert_eq!(active_mtu(9000, IBOE_HEADROOM, 2048), Some(2048));
        assert_eq!(active_mtu(300, IBOE_HEADROOM, 4096), None);
        assert_eq!(active_mtu(68, IBOE_HEADROOM, 4096), None);
    }

    #[test]
    fn tos_dscp_and_priorities() {
        assert_eq!(dscp_of_tos(106), 26);
        assert_eq!(tos_of_dscp(26), 106);
        assert_eq!(default_dscp_priority(26), 3);
        assert_eq!(default_dscp_priority(48), 6);
        // ToS 0 is best effort; the interactive bits (0x10) map to 6 as in ip_tos2prio.
        assert_eq!(tos_to_skb_priority(0), 0);
        assert_eq!(tos_to_skb_priority(0x10), 6);
        assert_eq!(tos_to_skb_priority(0x08), 2);
        assert_eq!(tos_to_skb_priority(106), 2);
    }
}
