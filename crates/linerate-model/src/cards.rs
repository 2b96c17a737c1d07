//! Known network cards: PCI IDs to model names and capabilities.
//!
//! Sources: pciutils `pci.ids` (IDs and names), the kernel's PCI tables
//! (mthca, mlx4 `mlx4_pci_table`, mlx5 `mlx5_core_pci_table`, ice
//! `ice_devids.h`), vendor manuals and datasheets for the link speeds and
//! the PCI Express interface (sysfs-kb §3.3). The capabilities are what the
//! chip can do, used to tell "the cable or switch holds it back" from "this
//! is all it does". A board built on the chip may have fewer or slower ports.
//!
//! Virtual functions (SR-IOV) carry the upper bound of the physical functions
//! that spawn them and no PCI Express link of their own: theirs is the parent's.

use crate::{IbSpeed, PcieGen, PcieLink};

/// One known PCI function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CardInfo {
    pub vendor: u16,
    pub device: u16,
    pub vendor_name: &'static str,
    /// Marketing name with chip, e.g. `ConnectX-3 (MT27500)`.
    pub model: &'static str,
    /// Fastest InfiniBand speed per lane (4X ports), if the card speaks IB.
    pub max_ib: Option<IbSpeed>,
    /// Fastest Ethernet speed of one port in Mb/s, if the card speaks Ethernet.
    pub max_eth_mbps: Option<u32>,
    /// The card's own PCI Express interface.
    pub pcie: Option<PcieLink>,
    /// Ports can run InfiniBand or Ethernet (Mellanox VPI).
    pub vpi: bool,
    /// A virtual function (SR-IOV): its PCI Express link is the parent's.
    pub virtual_function: bool,
}

pub const MELLANOX: u16 = 0x15b3;
pub const INTEL: u16 = 0x8086;
pub const BROADCOM: u16 = 0x14e4;
pub const REALTEK: u16 = 0x10ec;
pub const QLOGIC: u16 = 0x1077;
pub const SOLARFLARE: u16 = 0x1924;
pub const AQUANTIA: u16 = 0x1d6a;
pub const CHELSIO: u16 = 0x1425;

/// Look a PCI function up by vendor and device id.
pub fn lookup(vendor: u16, device: u16) -> Option<&'static CardInfo> {
    CARDS
        .iter()
        .find(|c| c.vendor == vendor && c.device == device)
}

/// Look a Mellanox/NVIDIA card up by the `hca_type` its RDMA device shows in
/// sysfs (`/sys/class/infiniband/<dev>/hca_type`).
///
/// mlx4 and mlx5 print `MT` and the PCI device id in decimal (`MT4099` is
/// 0x1003). mthca prints the chip name, which for the `InfiniHost` parts is the
/// same number (`MT25208` is 0x6278, `MT23108` is 0x5a44).
pub fn lookup_hca_type(hca_type: &str) -> Option<&'static CardInfo> {
    let device = hca_type.trim().strip_prefix("MT")?.parse::<u16>().ok()?;
    lookup(MELLANOX, device)
}

/// Vendor name for vendors we know, even when the device is not in the table.
pub fn vendor_name(vendor: u16) -> Option<&'static str> {
    Some(match vendor {
        MELLANOX => "Mellanox/NVIDIA",
        INTEL => "Intel",
        BROADCOM => "Broadcom",
        REALTEK => "Realtek",
        0x1af4 => "Red Hat (virtio)",
        QLOGIC => "QLogic",
        SOLARFLARE => "Solarflare",
        0x19a2 | 0x10df => "Emulex",
        0x8088 => "Wangxun",
        AQUANTIA => "Aquantia/Marvell",
        0x177d => "Cavium/Marvell",
        0x1dd8 => "AMD Pensando",
        0x1fc9 => "Tehuti",
        0x15ad => "VMware",
        CHELSIO => "Chelsio",
        _ => return None,
    })
}

// Returns `Option` so table rows read `pcie: pcie(Gen3, 8)` next to `pcie: None`.
#[allow(clippy::unnecessary_wraps)]
const fn pcie(gen: PcieGen, width: u8) -> Option<PcieLink> {
    Some(PcieLink { gen, width })
}

/// A physical function with its own PCI Express link.
macro_rules! card {
    ($v:expr, $d:expr, $vn:expr, $m:expr, ib: $ib:expr, eth: $eth:expr, pcie: $p:expr, vpi: $vpi:expr) => {
        CardInfo {
            vendor: $v,
            device: $d,
            vendor_name: $vn,
            model: $m,
            max_ib: $ib,
            max_eth_mbps: $eth,
            pcie: $p,
            vpi: $vpi,
            virtual_function: false,
        }
    };
}

/// A virtual function: no PCI Express link of its own (it is the parent's).
macro_rules! vf {
    ($v:expr, $d:expr, $vn:expr, $m:expr, ib: $ib:expr, eth: $eth:expr, vpi: $vpi:expr) => {
        CardInfo {
            vendor: $v,
            device: $d,
            vendor_name: $vn,
            model: $m,
            max_ib: $ib,
            max_eth_mbps: $eth,
            pcie: None,
            vpi: $vpi,
            virtual_function: true,
        }
    };
}

use IbSpeed::{Ddr, Edr, Fdr, Hdr, Ndr, Qdr, Sdr, Xdr};
use PcieGen::{Gen1, Gen2, Gen3, Gen4, Gen5, Gen6};

/// The table, grouped by vendor.
#[rustfmt::skip]
pub static CARDS: &[CardInfo] = &[
    // ---- Mellanox/NVIDIA ------------------------------------------------
    // InfiniHost (mthca). IDs: pci.ids and the kernel's mthca table.
    // MT23108 is a PCI-X 133 MHz part: it has no PCIe link at all.
    card!(MELLANOX, 0x5a44, "Mellanox", "InfiniHost (MT23108)", ib: Some(Sdr), eth: None, pcie: None, vpi: false),
    // InfiniHost III Lx: single port, PCIe 1.x x8 (x4 on the SDR boards).
    card!(MELLANOX, 0x5e8c, "Mellanox", "InfiniHost III Lx (MT24204)", ib: Some(Ddr), eth: None, pcie: pcie(Gen1, 8), vpi: false),
    card!(MELLANOX, 0x6274, "Mellanox", "InfiniHost III Lx (MT25204)", ib: Some(Ddr), eth: None, pcie: pcie(Gen1, 8), vpi: false),
    // InfiniHost III Ex: dual port SDR/DDR, PCIe 1.x x8. 0x6278 is the same
    // chip running in InfiniHost (Tavor) compatibility mode.
    card!(MELLANOX, 0x6278, "Mellanox", "InfiniHost III Ex, Tavor compatibility mode (MT25208)", ib: Some(Ddr), eth: None, pcie: pcie(Gen1, 8), vpi: false),
    card!(MELLANOX, 0x6282, "Mellanox", "InfiniHost III Ex (MT25208)", ib: Some(Ddr), eth: None, pcie: pcie(Gen1, 8), vpi: false),
    // ConnectX "Hermon" (mlx4). pci.ids: "... PCIe 2.0 x8 2.5GT/s" for the
    // first three, "5.0GT/s" for the Gen2 parts. hca_type = MT + decimal id.
    card!(MELLANOX, 0x6340, "Mellanox", "ConnectX IB SDR (MT25408)", ib: Some(Sdr), eth: Some(10_000), pcie: pcie(Gen1, 8), vpi: true),
    card!(MELLANOX, 0x634a, "Mellanox", "ConnectX IB DDR (MT25418)", ib: Some(Ddr), eth: Some(10_000), pcie: pcie(Gen1, 8), vpi: true),
    // 0x6354 is in the kernel's mlx4 table ("Hermon QDR") but not in pci.ids.
    card!(MELLANOX, 0x6354, "Mellanox", "ConnectX IB QDR (MT25428)", ib: Some(Qdr), eth: Some(10_000), pcie: pcie(Gen1, 8), vpi: true),
    card!(MELLANOX, 0x6368, "Mellanox", "ConnectX EN 10GigE (MT25448)", ib: None, eth: Some(10_000), pcie: pcie(Gen1, 8), vpi: false),
    card!(MELLANOX, 0x6372, "Mellanox", "ConnectX EN 10GBASE-T (MT25458)", ib: None, eth: Some(10_000), pcie: pcie(Gen1, 8), vpi: false),
    card!(MELLANOX, 0x6732, "Mellanox", "ConnectX IB DDR, PCIe 2.0 (MT26418)", ib: Some(Ddr), eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: true),
    card!(MELLANOX, 0x673c, "Mellanox", "ConnectX-2 VPI QDR (MT26428)", ib: Some(Qdr), eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: true),
    // The kernel's comment calls 0x6746 "EN 40GigE"; pci.ids and the HP
    // NC543i boards built on it say VPI, IB QDR / 10GigE.
    card!(MELLANOX, 0x6746, "Mellanox", "ConnectX-2 VPI QDR, virtualization (MT26438)", ib: Some(Qdr), eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: true),
    card!(MELLANOX, 0x6750, "Mellanox", "ConnectX-2 EN 10GigE (MT26448)", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    card!(MELLANOX, 0x675a, "Mellanox", "ConnectX EN 10GBASE-T, PCIe 2.0 (MT26458)", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    card!(MELLANOX, 0x6764, "Mellanox", "ConnectX-2 EN 10GigE, virtualization (MT26468)", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    // 40GbE on a Gen2 x8 link (32 Gb/s): the slot, not the port, is the limit.
    card!(MELLANOX, 0x676e, "Mellanox", "ConnectX-2 EN 40GigE (MT26478)", ib: None, eth: Some(40_000), pcie: pcie(Gen2, 8), vpi: false),
    card!(MELLANOX, 0x6778, "Mellanox", "ConnectX-2 VPI DDR, virtualization (MT26488)", ib: Some(Ddr), eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: true),
    vf!(MELLANOX, 0x1002, "Mellanox", "ConnectX-2 Virtual Function (MT25400)", ib: Some(Qdr), eth: Some(40_000), vpi: true),
    // ConnectX-3 (mlx4). 56GbE is Mellanox-to-Mellanox only.
    card!(MELLANOX, 0x1003, "Mellanox", "ConnectX-3 (MT27500)", ib: Some(Fdr), eth: Some(56_000), pcie: pcie(Gen3, 8), vpi: true),
    vf!(MELLANOX, 0x1004, "Mellanox", "ConnectX-3/ConnectX-3 Pro Virtual Function (MT27500/MT27520)", ib: Some(Fdr), eth: Some(56_000), vpi: true),
    card!(MELLANOX, 0x1007, "Mellanox", "ConnectX-3 Pro (MT27520)", ib: Some(Fdr), eth: Some(56_000), pcie: pcie(Gen3, 8), vpi: true),
    // Connect-IB and ConnectX-4 onwards (mlx5).
    card!(MELLANOX, 0x1011, "Mellanox", "Connect-IB (MT27600)", ib: Some(Fdr), eth: None, pcie: pcie(Gen3, 16), vpi: false),
    vf!(MELLANOX, 0x1012, "Mellanox", "Connect-IB Virtual Function (MT27600)", ib: Some(Fdr), eth: None, vpi: false),
    card!(MELLANOX, 0x1013, "Mellanox", "ConnectX-4 (MT27700)", ib: Some(Edr), eth: Some(100_000), pcie: pcie(Gen3, 16), vpi: true),
    vf!(MELLANOX, 0x1014, "Mellanox", "ConnectX-4 Virtual Function (MT27700)", ib: Some(Edr), eth: Some(100_000), vpi: true),
    card!(MELLANOX, 0x1015, "Mellanox", "ConnectX-4 Lx (MT27710)", ib: None, eth: Some(50_000), pcie: pcie(Gen3, 8), vpi: false),
    vf!(MELLANOX, 0x1016, "Mellanox", "ConnectX-4 Lx Virtual Function (MT27710)", ib: None, eth: Some(50_000), vpi: false),
    card!(MELLANOX, 0x1017, "Mellanox", "ConnectX-5 (MT27800)", ib: Some(Edr), eth: Some(100_000), pcie: pcie(Gen3, 16), vpi: true),
    vf!(MELLANOX, 0x1018, "Mellanox", "ConnectX-5 Virtual Function (MT27800)", ib: Some(Edr), eth: Some(100_000), vpi: true),
    card!(MELLANOX, 0x1019, "Mellanox", "ConnectX-5 Ex (MT28800)", ib: Some(Edr), eth: Some(100_000), pcie: pcie(Gen4, 16), vpi: true),
    vf!(MELLANOX, 0x101a, "Mellanox", "ConnectX-5 Ex Virtual Function (MT28800)", ib: Some(Edr), eth: Some(100_000), vpi: true),
    card!(MELLANOX, 0x101b, "Mellanox", "ConnectX-6 (MT28908)", ib: Some(Hdr), eth: Some(200_000), pcie: pcie(Gen4, 16), vpi: true),
    vf!(MELLANOX, 0x101c, "Mellanox", "ConnectX-6 Virtual Function (MT28908)", ib: Some(Hdr), eth: Some(200_000), vpi: true),
    card!(MELLANOX, 0x101d, "Mellanox", "ConnectX-6 Dx (MT2892)", ib: None, eth: Some(200_000), pcie: pcie(Gen4, 16), vpi: false),
    // The VF id shared by ConnectX-6 Dx/Lx, ConnectX-7 and later and the
    // BlueField-2/3 controllers: the bound is the fastest of those.
    vf!(MELLANOX, 0x101e, "Mellanox", "ConnectX Family mlx5Gen Virtual Function", ib: Some(Xdr), eth: Some(800_000), vpi: true),
    card!(MELLANOX, 0x101f, "Mellanox", "ConnectX-6 Lx (MT2894)", ib: None, eth: Some(50_000), pcie: pcie(Gen4, 8), vpi: false),
    card!(MELLANOX, 0x1021, "NVIDIA", "ConnectX-7 (MT2910)", ib: Some(Ndr), eth: Some(400_000), pcie: pcie(Gen5, 16), vpi: true),
    // ConnectX-8 firmware notes: "800Gb/s or XDR IB or 2 x 400GbE link
    // speeds. 800GbE link speed is not supported on a single port."
    card!(MELLANOX, 0x1023, "NVIDIA", "ConnectX-8 (MT4131)", ib: Some(Xdr), eth: Some(400_000), pcie: pcie(Gen6, 16), vpi: true),
    // ConnectX-9: the id is in pci.ids ("CX9 Family [ConnectX-9]") and the
    // mlx5 table, but no datasheet was public when this was written. The
    // capabilities are the best-known public figures (1.6 Tb/s class SuperNIC,
    // PCIe Gen6), NOT verified: IB is capped at XDR (our fastest enum value),
    // Ethernet at 800GbE per port, PCIe at Gen6 x16.
    card!(MELLANOX, 0x1025, "NVIDIA", "ConnectX-9 (MT4133)", ib: Some(Xdr), eth: Some(800_000), pcie: pcie(Gen6, 16), vpi: true),
    // BlueField DPUs: the host-facing network controller of each generation
    // (the SoC and management functions are not network ports). NVIDIA's
    // driver notes: BlueField IB to EDR / Eth to 100GbE; BlueField-2 IB to
    // HDR; BlueField-3 B3140L/B3240 "400GbE / NDR IB ... PCIe Gen5.0 x16".
    card!(MELLANOX, 0xa2d2, "Mellanox", "BlueField integrated ConnectX-5 (MT416842)", ib: Some(Edr), eth: Some(100_000), pcie: pcie(Gen4, 16), vpi: true),
    vf!(MELLANOX, 0xa2d3, "Mellanox", "BlueField integrated ConnectX-5 Virtual Function (MT416842)", ib: Some(Edr), eth: Some(100_000), vpi: true),
    card!(MELLANOX, 0xa2d6, "Mellanox", "BlueField-2 integrated ConnectX-6 Dx (MT42822)", ib: Some(Hdr), eth: Some(200_000), pcie: pcie(Gen4, 16), vpi: true),
    card!(MELLANOX, 0xa2dc, "NVIDIA", "BlueField-3 integrated ConnectX-7 (MT43244)", ib: Some(Ndr), eth: Some(400_000), pcie: pcie(Gen5, 16), vpi: true),

    // ---- Intel ------------------------------------------------------------
    // 1 GbE
    card!(INTEL, 0x10c9, "Intel", "82576 Gigabit Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 4), vpi: false),
    card!(INTEL, 0x10e6, "Intel", "82576 Gigabit Network Connection (fiber)", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 4), vpi: false),
    card!(INTEL, 0x10e7, "Intel", "82576 Gigabit Network Connection (SerDes)", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 4), vpi: false),
    card!(INTEL, 0x10e8, "Intel", "82576 Gigabit Network Connection (quad port)", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 4), vpi: false),
    card!(INTEL, 0x10d3, "Intel", "82574L Gigabit Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x1521, "Intel", "I350 Gigabit", ib: None, eth: Some(1_000), pcie: pcie(Gen2, 4), vpi: false),
    card!(INTEL, 0x1522, "Intel", "I350 Gigabit Fiber", ib: None, eth: Some(1_000), pcie: pcie(Gen2, 4), vpi: false),
    card!(INTEL, 0x1523, "Intel", "I350 Gigabit Backplane", ib: None, eth: Some(1_000), pcie: pcie(Gen2, 4), vpi: false),
    card!(INTEL, 0x1524, "Intel", "I350 Gigabit Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen2, 4), vpi: false),
    vf!(INTEL, 0x1520, "Intel", "I350 Virtual Function", ib: None, eth: Some(1_000), vpi: false),
    // I210/I211: PCIe v2.1 but 2.5 GT/s only, one lane.
    card!(INTEL, 0x1533, "Intel", "I210 Gigabit Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x1536, "Intel", "I210 Gigabit Fiber Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x1537, "Intel", "I210 Gigabit Backplane Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x1538, "Intel", "I210 Gigabit Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x157b, "Intel", "I210 Gigabit Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x157c, "Intel", "I210 Gigabit Backplane Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(INTEL, 0x1539, "Intel", "I211 Gigabit Network Connection", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    // 2.5 GbE: I225/I226, PCIe 2.1 x1 at 5 GT/s.
    card!(INTEL, 0x15f2, "Intel", "Ethernet Controller I225-LM", ib: None, eth: Some(2_500), pcie: pcie(Gen2, 1), vpi: false),
    card!(INTEL, 0x15f3, "Intel", "Ethernet Controller I225-V", ib: None, eth: Some(2_500), pcie: pcie(Gen2, 1), vpi: false),
    card!(INTEL, 0x125b, "Intel", "Ethernet Controller I226-LM", ib: None, eth: Some(2_500), pcie: pcie(Gen2, 1), vpi: false),
    card!(INTEL, 0x125c, "Intel", "Ethernet Controller I226-V", ib: None, eth: Some(2_500), pcie: pcie(Gen2, 1), vpi: false),
    // 10 GbE: 82599 (X520) and X540 are PCIe 2.x x8, X550 is PCIe 3.0 x4.
    card!(INTEL, 0x10f8, "Intel", "82599 10 Gigabit Dual Port Backplane Connection", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    card!(INTEL, 0x10fb, "Intel", "82599ES 10-Gigabit SFI/SFP+ (X520)", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    card!(INTEL, 0x1557, "Intel", "82599 10 Gigabit Network Connection (82599EN)", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    vf!(INTEL, 0x10ed, "Intel", "82599 Virtual Function", ib: None, eth: Some(10_000), vpi: false),
    card!(INTEL, 0x1528, "Intel", "Ethernet Controller 10-Gigabit X540-AT2", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    vf!(INTEL, 0x1515, "Intel", "X540 Virtual Function", ib: None, eth: Some(10_000), vpi: false),
    card!(INTEL, 0x1563, "Intel", "Ethernet Controller X550", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 4), vpi: false),
    // 700 series (i40e): PCIe 3.0 x8.
    card!(INTEL, 0x1572, "Intel", "Ethernet Controller X710 for 10GbE SFP+", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x1581, "Intel", "Ethernet Controller X710 for 10GbE backplane", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x1583, "Intel", "Ethernet Controller XL710 for 40GbE QSFP+", ib: None, eth: Some(40_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x1584, "Intel", "Ethernet Controller XL710 for 40GbE QSFP+", ib: None, eth: Some(40_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x1585, "Intel", "Ethernet Controller X710 for 10GbE QSFP+", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x1586, "Intel", "Ethernet Controller X710 for 10GBASE-T", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x1589, "Intel", "Ethernet Controller X710/X557-AT 10GBASE-T", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(INTEL, 0x158b, "Intel", "Ethernet Controller XXV710 for 25GbE SFP28", ib: None, eth: Some(25_000), pcie: pcie(Gen3, 8), vpi: false),
    vf!(INTEL, 0x154c, "Intel", "Ethernet Virtual Function 700 Series", ib: None, eth: Some(40_000), vpi: false),
    // X722: the MAC is inside the C620 (Lewisburg) PCH, so the function
    // has no card-level PCIe link to compare against.
    card!(INTEL, 0x37ce, "Intel", "Ethernet Connection X722 for 10GbE backplane", ib: None, eth: Some(10_000), pcie: None, vpi: false),
    card!(INTEL, 0x37cf, "Intel", "Ethernet Connection X722 for 10GbE QSFP+", ib: None, eth: Some(10_000), pcie: None, vpi: false),
    card!(INTEL, 0x37d0, "Intel", "Ethernet Connection X722 for 10GbE SFP+", ib: None, eth: Some(10_000), pcie: None, vpi: false),
    card!(INTEL, 0x37d1, "Intel", "Ethernet Connection X722 for 1GbE", ib: None, eth: Some(1_000), pcie: None, vpi: false),
    card!(INTEL, 0x37d2, "Intel", "Ethernet Connection X722 for 10GBASE-T", ib: None, eth: Some(10_000), pcie: None, vpi: false),
    card!(INTEL, 0x37d3, "Intel", "Ethernet Connection X722 for 10GbE SFP+", ib: None, eth: Some(10_000), pcie: None, vpi: false),
    // 800 series (ice). E810-C: PCIe 4.0 x16, 100 Gb/s for the whole chip
    // (Intel: "Total throughput of the adapter is 100GbE for all
    // configurations"). E810-XXV: PCIe 4.0 x8, 25 GbE ports.
    card!(INTEL, 0x1591, "Intel", "Ethernet Controller E810-C for backplane", ib: None, eth: Some(100_000), pcie: pcie(Gen4, 16), vpi: false),
    card!(INTEL, 0x1592, "Intel", "Ethernet Controller E810-C for QSFP", ib: None, eth: Some(100_000), pcie: pcie(Gen4, 16), vpi: false),
    card!(INTEL, 0x1593, "Intel", "Ethernet Controller E810-C for SFP", ib: None, eth: Some(25_000), pcie: pcie(Gen4, 16), vpi: false),
    card!(INTEL, 0x1599, "Intel", "Ethernet Controller E810-XXV for backplane", ib: None, eth: Some(25_000), pcie: pcie(Gen4, 8), vpi: false),
    card!(INTEL, 0x159a, "Intel", "Ethernet Controller E810-XXV for QSFP", ib: None, eth: Some(25_000), pcie: pcie(Gen4, 8), vpi: false),
    card!(INTEL, 0x159b, "Intel", "Ethernet Controller E810-XXV for SFP", ib: None, eth: Some(25_000), pcie: pcie(Gen4, 8), vpi: false),
    // Adaptive VF (iavf): spawned by E810 (and by 700 series in AVF mode).
    vf!(INTEL, 0x1889, "Intel", "Ethernet Adaptive Virtual Function", ib: None, eth: Some(100_000), vpi: false),

    // ---- Broadcom ---------------------------------------------------------
    // NetXtreme (tg3). BCM5720 LnkCap reads "Speed 5GT/s, Width x2".
    card!(BROADCOM, 0x165f, "Broadcom", "NetXtreme BCM5720 Gigabit Ethernet PCIe", ib: None, eth: Some(1_000), pcie: pcie(Gen2, 2), vpi: false),
    card!(BROADCOM, 0x1657, "Broadcom", "NetXtreme BCM5719 Gigabit Ethernet PCIe", ib: None, eth: Some(1_000), pcie: pcie(Gen2, 4), vpi: false),
    // NetXtreme II (bnx2x).
    card!(BROADCOM, 0x168e, "Broadcom", "NetXtreme II BCM57810 10GbE", ib: None, eth: Some(10_000), pcie: pcie(Gen2, 8), vpi: false),
    // NetXtreme-E (bnxt_en): BCM574xx PCIe 3.0 x8, BCM575xx PCIe 4.0 x16.
    card!(BROADCOM, 0x16d6, "Broadcom", "BCM57412 NetXtreme-E 10Gb RDMA", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(BROADCOM, 0x16d7, "Broadcom", "BCM57414 NetXtreme-E 10/25GbE", ib: None, eth: Some(25_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(BROADCOM, 0x16d8, "Broadcom", "BCM57416 NetXtreme-E Dual-Media 10G RDMA", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(BROADCOM, 0x1750, "Broadcom", "BCM57508 NetXtreme-E 10/25/40/50/100/200GbE", ib: None, eth: Some(200_000), pcie: pcie(Gen4, 16), vpi: false),
    // pci.ids names the whole BCM575xx family "...100Gb/200Gb"; the
    // BCM57504 itself is a quad 25G / single 100G part.
    card!(BROADCOM, 0x1751, "Broadcom", "BCM57504 NetXtreme-E 10/25/50/100GbE", ib: None, eth: Some(100_000), pcie: pcie(Gen4, 16), vpi: false),

    // ---- Realtek ----------------------------------------------------------
    card!(REALTEK, 0x8168, "Realtek", "RTL8111/8168 PCIe Gigabit Ethernet", ib: None, eth: Some(1_000), pcie: pcie(Gen1, 1), vpi: false),
    card!(REALTEK, 0x8125, "Realtek", "RTL8125 2.5GbE", ib: None, eth: Some(2_500), pcie: pcie(Gen2, 1), vpi: false),
    // RTL8126-CG: PCIe 3.0 x1 (5 GbE does not fit in a Gen2 lane).
    card!(REALTEK, 0x8126, "Realtek", "RTL8126 5GbE", ib: None, eth: Some(5_000), pcie: pcie(Gen3, 1), vpi: false),

    // ---- Others -----------------------------------------------------------
    // Aquantia/Marvell AQtion AQC107: PCIe 3.0 x4 (pci.ids lists three ids).
    card!(AQUANTIA, 0x07b1, "Aquantia/Marvell", "AQC107 NBase-T 10GbE [AQtion]", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 4), vpi: false),
    card!(AQUANTIA, 0x87b1, "Aquantia/Marvell", "AQC107 NBase-T 10GbE [AQtion]", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 4), vpi: false),
    card!(AQUANTIA, 0xd107, "Aquantia/Marvell", "AQC107 NBase-T 10GbE [AQtion]", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 4), vpi: false),
    // Solarflare (sfc): SFN7000 series, PCIe 3.0 x8.
    card!(SOLARFLARE, 0x0903, "Solarflare", "SFC9120 10G Ethernet Controller", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    vf!(SOLARFLARE, 0x1903, "Solarflare", "SFC9120 10G Ethernet Controller (Virtual Function)", ib: None, eth: Some(10_000), vpi: false),
    card!(SOLARFLARE, 0x0923, "Solarflare", "SFC9140 10/40G Ethernet Controller", ib: None, eth: Some(40_000), pcie: pcie(Gen3, 8), vpi: false),
    // QLogic/Cavium/Marvell FastLinQ (qede).
    card!(QLOGIC, 0x1634, "QLogic", "FastLinQ QL45000 Series 40GbE Controller", ib: None, eth: Some(40_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(QLOGIC, 0x1644, "QLogic", "FastLinQ QL45000 Series 100GbE Controller", ib: None, eth: Some(100_000), pcie: pcie(Gen3, 16), vpi: false),
    card!(QLOGIC, 0x1656, "QLogic", "FastLinQ QL45000 Series 25GbE Controller", ib: None, eth: Some(25_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(QLOGIC, 0x8070, "QLogic", "FastLinQ QL41000 Series 10/25GbE Controller", ib: None, eth: Some(25_000), pcie: pcie(Gen3, 8), vpi: false),
    // Chelsio (cxgb4 binds physical function 4: device ids 0x54xx for T5,
    // 0x64xx for T6). T5 is PCIe 3.0 x8, T6 100G boards PCIe 3.0 x16.
    card!(CHELSIO, 0x5401, "Chelsio", "T520-CR Unified Wire Ethernet Controller (T5)", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(CHELSIO, 0x5403, "Chelsio", "T540-CR Unified Wire Ethernet Controller (T5)", ib: None, eth: Some(10_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(CHELSIO, 0x540d, "Chelsio", "T580-CR Unified Wire Ethernet Controller (T5)", ib: None, eth: Some(40_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(CHELSIO, 0x5410, "Chelsio", "T580-LP-CR Unified Wire Ethernet Controller (T5)", ib: None, eth: Some(40_000), pcie: pcie(Gen3, 8), vpi: false),
    card!(CHELSIO, 0x6407, "Chelsio", "T62100-LP-CR Unified Wire Ethernet Controller (T6)", ib: None, eth: Some(100_000), pcie: pcie(Gen3, 16), vpi: false),
    card!(CHELSIO, 0x6408, "Chelsio", "T62100-SO-CR Unified Wire Ethernet Controller (T6)", ib: None, eth: Some(100_000), pcie: pcie(Gen3, 16), vpi: false),
    card!(CHELSIO, 0x640d, "Chelsio", "T62100-CR Unified Wire Ethernet Controller (T6)", ib: None, eth: Some(100_000), pcie: pcie(Gen3, 16), vpi: false),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every Mellanox/NVIDIA device id in sysfs-kb §3.3.
    const KB_MELLANOX: &[u16] = &[
        0x6340, 0x634a, 0x6354, 0x6732, 0x673c, 0x6746, 0x6750, 0x6764, 0x676e, 0x1002, 0x1003,
        0x1004, 0x1007, 0x1011, 0x1013, 0x1015, 0x1017, 0x1019, 0x101b, 0x101d, 0x101f, 0x1021,
        0x1023, 0x1025, 0x1012, 0x1014, 0x1016, 0x1018, 0x101a, 0x101c, 0x101e,
    ];

    /// Virtual functions named as such in pci.ids or the kernel tables.
    const KNOWN_VFS: &[(u16, u16)] = &[
        (MELLANOX, 0x1002),
        (MELLANOX, 0x1004),
        (MELLANOX, 0x1012),
        (MELLANOX, 0x1014),
        (MELLANOX, 0x1016),
        (MELLANOX, 0x1018),
        (MELLANOX, 0x101a),
        (MELLANOX, 0x101c),
        (MELLANOX, 0x101e),
        (MELLANOX, 0xa2d3),
        (INTEL, 0x10ed),
        (INTEL, 0x1515),
        (INTEL, 0x1520),
        (INTEL, 0x154c),
        (INTEL, 0x1889),
        (SOLARFLARE, 0x1903),
    ];

    /// Physical functions that have no card-level PCI Express link.
    const NO_PCIE_LINK: &[(u16, u16)] = &[
        (MELLANOX, 0x5a44), // InfiniHost: PCI-X
        (INTEL, 0x37ce),    // X722: inside the PCH
        (INTEL, 0x37cf),
        (INTEL, 0x37d0),
        (INTEL, 0x37d1),
        (INTEL, 0x37d2),
        (INTEL, 0x37d3),
    ];

    #[test]
    fn lookups() {
        let c = lookup(MELLANOX, 0x673c).unwrap();
        assert_eq!(c.max_ib, Some(Qdr));
        assert!(lookup(MELLANOX, 0xffff).is_none());
        let x520 = lookup(INTEL, 0x10fb).unwrap();
        assert_eq!(x520.max_eth_mbps, Some(10_000));
        assert_eq!(x520.pcie, pcie(Gen2, 8));
        assert!(lookup(CHELSIO, 0x6408).unwrap().model.contains("T62100"));
    }

    #[test]
    fn table_unique() {
        for (i, a) in CARDS.iter().enumerate() {
            for b in &CARDS[i + 1..] {
                assert!(
                    (a.vendor, a.device) != (b.vendor, b.device),
                    "{:04x}:{:04x} twice",
                    a.vendor,
                    a.device
                );
            }
        }
    }

    #[test]
    fn every_card_has_a_link_type() {
        for c in CARDS {
            assert!(
                c.max_ib.is_some() || c.max_eth_mbps.is_some(),
                "{}",
                c.model
            );
        }
    }

    #[test]
    fn every_kb_mellanox_device_resolves() {
        for &d in KB_MELLANOX {
            let c = lookup(MELLANOX, d).unwrap_or_else(|| panic!("15b3:{d:04x} missing"));
            assert!(
                c.vendor_name == "Mellanox" || c.vendor_name == "NVIDIA",
                "15b3:{d:04x} vendor {}",
                c.vendor_name
            );
        }
    }

    #[test]
    fn vfs_are_marked_and_have_no_link() {
        for &(v, d) in KNOWN_VFS {
            let c = lookup(v, d).unwrap_or_else(|| panic!("{v:04x}:{d:04x} missing"));
            assert!(c.virtual_function, "{}", c.model);
        }
        for c in CARDS {
            if c.virtual_function {
                assert_eq!(c.pcie, None, "{}", c.model);
                assert!(
                    KNOWN_VFS.contains(&(c.vendor, c.device)),
                    "{:04x}:{:04x} is a VF not listed in KNOWN_VFS",
                    c.vendor,
                    c.device
                );
            }
        }
    }

    #[test]
    fn physical_functions_have_a_link() {
        for c in CARDS.iter().filter(|c| !c.virtual_function) {
            let exempt = NO_PCIE_LINK.contains(&(c.vendor, c.device));
            assert_eq!(c.pcie.is_none(), exempt, "{}", c.model);
            if let Some(link) = c.pcie {
                assert!([1, 2, 4, 8, 16].contains(&link.width), "{}", c.model);
            }
        }
    }

    #[test]
    fn vpi_cards_speak_both() {
        for c in CARDS.iter().filter(|c| c.vpi) {
            assert!(
                c.max_ib.is_some() && c.max_eth_mbps.is_some(),
                "{}",
                c.model
            );
        }
        // Spot checks: the Ethernet-only and IB-only families are not VPI.
        for d in [0x1011, 0x1015, 0x101d, 0x101f, 0x6750, 0x6282] {
            assert!(!lookup(MELLANOX, d).unwrap().vpi, "15b3:{d:04x}");
        }
    }

    #[test]
    fn vf_bounds_cover_their_parents() {
        // (VF, its physical functions)
        let families: &[(u16, &[u16])] = &[
            (0x1004, &[0x1003, 0x1007]),
            (0x1012, &[0x1011]),
            (0x1014, &[0x1013]),
            (0x1016, &[0x1015]),
            (0x1018, &[0x1017]),
            (0x101a, &[0x1019]),
            (0x101c, &[0x101b]),
            (
                0x101e,
                &[0x101d, 0x101f, 0x1021, 0x1023, 0x1025, 0xa2d6, 0xa2dc],
            ),
            (0xa2d3, &[0xa2d2]),
        ];
        for &(vf, parents) in families {
            let v = lookup(MELLANOX, vf).unwrap();
            for &p in parents {
                let p = lookup(MELLANOX, p).unwrap();
                assert!(v.max_ib >= p.max_ib, "{} < {}", v.model, p.model);
                assert!(
                    v.max_eth_mbps >= p.max_eth_mbps,
                    "{} < {}",
                    v.model,
                    p.model
                );
            }
        }
    }

    #[test]
    fn every_vendor_is_named() {
        for c in CARDS {
            assert!(vendor_name(c.vendor).is_some(), "{:04x}", c.vendor);
        }
        assert_eq!(vendor_name(0x1425), Some("Chelsio"));
        assert_eq!(vendor_name(0xdead), None);
    }

    #[test]
    fn hca_type_is_the_decimal_device_id() {
        assert_eq!(lookup_hca_type("MT4099").unwrap().device, 0x1003);
        assert_eq!(lookup_hca_type("MT4115\n").unwrap().device, 0x1013);
        assert_eq!(lookup_hca_type("MT4123").unwrap().device, 0x101b);
        assert_eq!(lookup_hca_type("MT26428").unwrap().device, 0x673c);
        // mthca prints the chip name, which is the same number.
        assert_eq!(lookup_hca_type("MT25208").unwrap().device, 0x6278);
        assert_eq!(lookup_hca_type("MT23108").unwrap().device, 0x5a44);
        assert!(lookup_hca_type("MT99999").is_none());
        assert!(lookup_hca_type("bogus").is_none());
    }
}
