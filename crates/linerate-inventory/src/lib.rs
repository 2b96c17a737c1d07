//! Inventory of a machine's network ports, read from sysfs and procfs.
//!
//! [`probe`] reads under a root directory (`/` on a live system, a fixture
//! tree in tests) and returns plain data. It needs no privileges and runs no
//! external tool. A missing or malformed value never aborts it: the value is
//! `None` and the file is named in [`Inventory::problems`].

pub mod counters;
pub mod dram;
pub mod ethtool;
mod fs;
mod host;
mod ib;
mod net;
mod pci;
mod ports;
pub mod qdisc;

use std::path::Path;

use serde::Serialize;
use thiserror::Error;

pub use fs::ser::cpulist_string;
pub use fs::{parse_cpulist, Problem, ProblemKind};
pub use host::{Host, NumaNode, SocketLimits};
pub use ib::{Counter, IbDevice, IbPort, IbPortFiles, LinkLayer};
pub use net::{IpoibInfo, IpoibMode, Netdev, NetdevKind};
pub use pci::{PciFunction, PcieLinkFiles, PcieSpeedFiles, UpstreamPort};
pub use ports::{Port, PortKind};

/// Everything probe found.
#[derive(Debug, Clone, Serialize)]
pub struct Inventory {
    pub host: Host,
    pub ports: Vec<Port>,
    pub ib_devices: Vec<IbDevice>,
    pub netdevs: Vec<Netdev>,
    pub pci: Vec<PciFunction>,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Error)]
pub enum ProbeError {
    #[error("--root {0}: no such directory")]
    RootMissing(String),
    #[error("--root {0}: not a directory (expected the root of a filesystem tree holding sys/ and proc/)")]
    RootNotDir(String),
    #[error("--root {0}: no sys/ directory in it (expected a filesystem root such as / or a copy of one)")]
    NoSys(String),
}

/// Read the inventory under `root`.
pub fn probe(root: &Path) -> Result<Inventory, ProbeError> {
    let shown = root.display().to_string();
    match std::fs::metadata(root) {
        Err(_) => return Err(ProbeError::RootMissing(shown)),
        Ok(m) if !m.is_dir() => return Err(ProbeError::RootNotDir(shown)),
        Ok(_) => {}
    }
    if !root.join("sys").is_dir() {
        return Err(ProbeError::NoSys(shown));
    }
    let mut r = fs::Root::new(root);
    let host = host::read(&mut r);
    let mut pcis = pci::Registry::default();
    let ib_devices = ib::read_all(&mut r, &mut pcis);
    let netdevs = net::read_all(&mut r, &mut pcis);
    let ports = ports::assemble(&ib_devices, &netdevs);
    Ok(Inventory {
        host,
        ports,
        ib_devices,
        netdevs,
        pci: pcis.into_vec(),
        problems: r.problems,
    })
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

    pub fn port_netdev(&self, port: &Port) -> Option<&Netdev> {
        self.netdev(port.netdev.as_deref()?)
    }
}
