//! The reader of a machine's inventory: sysfs and procfs under a root directory, shapers over
//! rtnetlink, driver statistics over SIOCETHTOOL, DIMMs from SMBIOS, and a soak's counters.
//!
//! [`probe`] reads under a root directory (`/` on a live system, a fixture tree in tests) and
//! returns `linerate_facts::Inventory`, plain data. It needs no privileges and runs no external
//! tool. A missing or malformed value never aborts it: the value is `None` and the file is
//! named in `Inventory::problems`.

pub mod counters;
pub mod dcb;
pub mod dram;
pub mod ethtool;
mod fs;
mod host;
mod hwmon;
mod ib;
mod linkdump;
pub mod links;
mod net;
mod netlink;
mod pci;
pub mod phy;
mod ports;
pub mod qdisc;
pub mod roce;
pub mod stack;

use std::path::Path;

use linerate_facts::Inventory;
use thiserror::Error;

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
    let mut ib_devices = ib::read_all(&mut r, &mut pcis);
    roce::annotate_ports(&r, &mut ib_devices);
    let netdevs = net::read_all(&mut r, &mut pcis);
    let ports = ports::assemble(&ib_devices, &netdevs);
    let phy = read_phy(root, &netdevs);
    let mut inv = Inventory {
        host,
        ports,
        ib_devices,
        netdevs,
        pci: pcis.into_vec(),
        rdma_stack: stack::read(&r),
        problems: Vec::new(),
        phy,
        qos: Vec::new(),
    };
    inv.qos = roce::read(&r, &inv);
    inv.problems = r.problems;
    Ok(inv)
}

/// `/` is the live system; any other root is a tree whose replies are files.
pub(crate) fn is_live(root: &Path) -> bool {
    std::fs::canonicalize(root).is_ok_and(|p| p == Path::new("/"))
}

fn read_phy(root: &Path, netdevs: &[linerate_facts::Netdev]) -> Vec<linerate_facts::PortPhy> {
    // Every hardware netdev is asked for its VFs: one unprivileged RTM_GETLINK, answered
    // without IFLA_VFINFO_LIST where there are none (a PCI function's `sriov_totalvfs` would
    // miss a PF that is not PCI, netdevsim's).
    if is_live(root) {
        phy::read(&mut phy::Live::new(), netdevs, &|_| true)
    } else {
        phy::read(&mut phy::Captured::new(root), netdevs, &|_| true)
    }
}
