//! What `linerate probe` finds on a machine, as plain data: ports, InfiniBand devices, netdevs,
//! PCI functions, host limits, and the values it could not use. `linerate-inventory` reads it
//! from sysfs and procfs; everything else (the rules, the renderers, setup, mesh, doctor)
//! takes it from here.

mod bond;
mod cpulist;
mod host;
mod ib;
mod net;
mod pci;
mod phy;
mod ports;
mod problem;
mod qos;
mod stack;

use serde::{Deserialize, Serialize};

pub use bond::Bond;
pub use cpulist::{cpulist_string, parse_cpulist, parse_hex_u16, parse_hex_u32};
pub use host::{Dimm, Host, NumaNode, SocketLimits};
pub use ib::{Counter, Gid, GidFamily, IbDevice, IbPort, IbPortFiles, LinkLayer, RoceVersion};
pub use net::{IpoibInfo, IpoibMode, Netdev, NetdevKind};
pub use pci::{PciFunction, PcieLinkFiles, PcieSpeedFiles, UpstreamPort};
pub use phy::{
    dbm, Channels, Coalesce, Diagnostics, Fec, FecMode, HwmonSensor, LaneDiagnostics, Level,
    LinkModes, Media, Module, ModuleStandard, Pause, PhyGauges, PhyQuery, PhySource, PhyUnread,
    PortPhy, Rings, RxPowerMeasure, RxReading, Sriov, SriovVf, TempReading, Thresholds, UnreadWhy,
    VfInfo, VfLinkState, PHY_SAMPLE_PERIOD_S,
};
pub use ports::{Port, PortKind};
pub use problem::{Problem, ProblemKind};
pub use qos::{
    Dcb, DcbApp, DcbRead, EcnSwitches, Ets, Pfc, PortQos, RdmaCmDefaults, APP_SEL_DSCP,
    APP_SEL_PCP, PRIORITIES,
};
pub use stack::{
    LibfabricFacts, LimitsLine, MemlockLimit, NfsFstab, NfsMount, OsFamily, RdmaKnock, RdmaStack,
    Route,
};

/// Everything probe found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    pub host: Host,
    pub ports: Vec<Port>,
    pub ib_devices: Vec<IbDevice>,
    pub netdevs: Vec<Netdev>,
    pub pci: Vec<PciFunction>,
    pub problems: Vec<Problem>,
    /// The software that makes RDMA usable here: modules, device nodes, providers, limits.
    #[serde(default)]
    pub rdma_stack: RdmaStack,
    /// What ethtool reads below each netdev (module, FEC, rings, ...), by netdev.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phy: Vec<PortPhy>,
    /// Lossless Ethernet per netdev under a RoCE port: DCB, ECN, pause and discard counters.
    #[serde(default)]
    pub qos: Vec<PortQos>,
}

impl Inventory {
    pub fn pci(&self, address: &str) -> Option<&PciFunction> {
        self.pci.iter().find(|p| p.address == address)
    }

    pub fn netdev(&self, name: &str) -> Option<&Netdev> {
        self.netdevs.iter().find(|n| n.name == name)
    }

    pub fn ib_device(&self, name: &str) -> Option<&IbDevice> {
        self.ib_devices.iter().find(|d| d.name == name)
    }

    /// The IB device and port behind a port, if it has one.
    pub fn ib_port(&self, port: &Port) -> Option<(&IbDevice, &IbPort)> {
        let dev = self.ib_device(port.device.as_deref()?)?;
        let n = port.port?;
        dev.ports.iter().find(|p| p.number == n).map(|p| (dev, p))
    }

    /// The PCI function behind a port, if it has one.
    pub fn port_pci(&self, port: &Port) -> Option<&PciFunction> {
        self.pci(port.pci.as_deref()?)
    }

    /// What ethtool read below the netdev `netdev`.
    pub fn phy(&self, netdev: &str) -> Option<&PortPhy> {
        self.phy.iter().find(|p| p.netdev == netdev)
    }

    /// The physical function of a virtual function `vf` and the VF's index on it, when this
    /// host sees both (`physfn`, `virtfnN`).
    pub fn vf_parent(&self, vf: &PciFunction) -> Option<(&PciFunction, u32)> {
        let pf = self.pci(vf.physfn.as_deref()?)?;
        let index = pf
            .sriov
            .as_ref()?
            .vfs
            .iter()
            .find(|v| v.address == vf.address)?
            .index;
        Some((pf, index))
    }

    pub fn port_netdev(&self, port: &Port) -> Option<&Netdev> {
        self.netdev(port.netdev.as_deref()?)
    }

    /// The port whose netdev is `netdev`.
    pub fn port_of_netdev(&self, netdev: &str) -> Option<&Port> {
        self.ports
            .iter()
            .find(|p| p.netdev.as_deref() == Some(netdev))
    }

    /// The lossless-Ethernet state of `netdev`, where it was read.
    pub fn qos(&self, netdev: &str) -> Option<&PortQos> {
        self.qos.iter().find(|q| q.netdev == netdev)
    }

    /// The RDMA port (an InfiniBand, RoCE or iWARP device's port) whose netdev is `netdev`.
    pub fn rdma_port_of_netdev(&self, netdev: &str) -> Option<&Port> {
        self.ports
            .iter()
            .find(|p| p.netdev.as_deref() == Some(netdev) && p.port.is_some())
    }
}
