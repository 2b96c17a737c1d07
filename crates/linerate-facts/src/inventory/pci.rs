//! PCI functions behind network ports, their PCIe links and the slot above them.

use linerate_model::cards;
use linerate_model::{PcieLink, PcieSpeed};
use serde::{Deserialize, Serialize};

/// The four PCIe link attribute files, as parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PcieLinkFiles {
    pub current_speed: Option<PcieSpeed>,
    pub current_width: Option<u8>,
    pub max_speed: Option<PcieSpeed>,
    pub max_width: Option<u8>,
    /// The attribute files exist at all (PCIe function on a kernel that has them).
    pub present: bool,
    /// A Root Complex Integrated Endpoint: a PCIe function on the root bus with no link of its
    /// own (its link registers are reserved: the kernel prints `Unknown`, widths 0 and 255).
    /// Common in VMs (QEMU's q35 devices on `pcie.0`) and for on-die devices.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub integrated: bool,
    /// The speed files as read, quoted by evidence. Not serialized: the JSON keeps its shape.
    #[serde(skip)]
    pub verbatim: PcieSpeedFiles,
}

/// `current_link_speed` and `max_link_speed` exactly as the kernel printed them
/// (`8.0 GT/s PCIe` since v5.7, `8 GT/s` before).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PcieSpeedFiles {
    pub current_speed: Option<String>,
    pub max_speed: Option<String>,
}

impl PcieLinkFiles {
    /// The negotiated link, when speed is known and the width non-zero.
    pub fn current(&self) -> Option<PcieLink> {
        let gen = self.current_speed?.gen()?;
        let w = self.current_width.filter(|w| *w > 0)?;
        Some(PcieLink::new(gen, w))
    }

    /// What this end is capable of.
    pub fn max(&self) -> Option<PcieLink> {
        let gen = self.max_speed?.gen()?;
        let w = self.max_width.filter(|w| *w > 0)?;
        Some(PcieLink::new(gen, w))
    }
}

/// A bridge above the function: root port, or switch upstream/downstream port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamPort {
    pub address: String,
    pub link: PcieLinkFiles,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PciFunction {
    pub address: String,
    #[serde(
        serialize_with = "super::cpulist::ser::hex16",
        deserialize_with = "super::cpulist::ser::de_hex16"
    )]
    pub vendor: Option<u16>,
    #[serde(
        serialize_with = "super::cpulist::ser::hex16",
        deserialize_with = "super::cpulist::ser::de_hex16"
    )]
    pub device: Option<u16>,
    #[serde(
        serialize_with = "super::cpulist::ser::hex16",
        deserialize_with = "super::cpulist::ser::de_hex16"
    )]
    pub subsystem_vendor: Option<u16>,
    #[serde(
        serialize_with = "super::cpulist::ser::hex16",
        deserialize_with = "super::cpulist::ser::de_hex16"
    )]
    pub subsystem_device: Option<u16>,
    #[serde(
        serialize_with = "super::cpulist::ser::hex32",
        deserialize_with = "super::cpulist::ser::de_hex32"
    )]
    pub class: Option<u32>,
    pub vendor_name: Option<String>,
    pub model: Option<String>,
    pub driver: Option<String>,
    /// `None` when the kernel has no NUMA information (`-1`).
    pub numa_node: Option<u32>,
    #[serde(
        serialize_with = "super::cpulist::ser::opt_cpulist",
        deserialize_with = "super::cpulist::ser::de_opt_cpulist"
    )]
    pub local_cpus: Option<Vec<u32>>,
    pub link: PcieLinkFiles,
    /// Bridges from the nearest (the slot) up to the root port.
    pub upstream: Vec<UpstreamPort>,
    pub msi_irqs: Vec<u32>,
    /// mlx4 VPI port types: port number → `ib` | `eth` | `auto (ib)` ...
    pub mlx4_port_types: std::collections::BTreeMap<u32, String>,
    /// The function's own temperature sensors (`hwmon/hwmonN/temp*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hwmon: Vec<super::HwmonSensor>,
    /// A physical function's SR-IOV files (`sriov_totalvfs`, `sriov_numvfs`, `virtfnN`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sriov: Option<super::Sriov>,
    /// A virtual function's physical function (`physfn`), when this host has it: absent in
    /// a guest the VF was passed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physfn: Option<String>,
}

impl PciFunction {
    pub fn card(&self) -> Option<&'static cards::CardInfo> {
        cards::lookup(self.vendor?, self.device?)
    }

    /// An SR-IOV virtual function: its `physfn` link (on the host), or a device id the card
    /// table knows as a VF (in a guest, where the link is absent).
    pub fn is_virtual_function(&self) -> bool {
        self.physfn.is_some() || self.card().is_some_and(|c| c.virtual_function)
    }

    /// The slot's capability: the minimum of every upstream port's maximum,
    /// and the address that sets it.
    pub fn slot_max(&self) -> Option<(PcieLink, &str)> {
        let mut best: Option<(PcieLink, &str)> = None;
        for u in &self.upstream {
            if let Some(m) = u.link.max() {
                best = Some(match best {
                    None => (m, u.address.as_str()),
                    Some((b, a)) => {
                        let n = b.min(m);
                        if n == b {
                            (b, a)
                        } else {
                            (n, u.address.as_str())
                        }
                    }
                });
            }
        }
        best
    }

    /// The bridge above this function at `address`, if any.
    pub fn upstream_port(&self, address: &str) -> Option<&UpstreamPort> {
        self.upstream.iter().find(|u| u.address == address)
    }

    /// The link data actually crosses: this function's link, narrowed by any
    /// upstream link that negotiated lower (a switch uplink).
    pub fn effective_link(&self) -> Option<PcieLink> {
        let mut l = self.link.current()?;
        for u in &self.upstream {
            if let Some(c) = u.link.current() {
                l = l.min(c);
            }
        }
        Some(l)
    }
}
