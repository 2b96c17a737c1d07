//! What changes when a link flaps or retrains, or a port comes or goes: a few files per port,
//! read every interval by `linerate watch` to know when to read the inventory again. The
//! values are compared as read (no parsing): any difference, or a name appearing in or leaving
//! `/sys/class/net` or `/sys/class/infiniband`, means the inventory is stale. Reading the whole
//! inventory every interval would cost a hundred files per port; this costs about ten.

use std::path::{Path, PathBuf};

use linerate_facts::{Bond, Inventory, NetdevKind};

use crate::fs::{DirReader, Root};

/// The files of a port whose change changes its link or its ceiling.
const IB_PORT_FILES: [&str; 3] = ["state", "phys_state", "rate"];
const NETDEV_FILES: [&str; 4] = ["operstate", "carrier", "speed", "mtu"];
const PCI_FILES: [&str; 2] = ["current_link_speed", "current_link_width"];
const BOND_FILES: [&str; 2] = ["slaves", "active_slave"];
/// The class directories whose names are the ports.
const CLASSES: [&str; 2] = ["sys/class/net", "sys/class/infiniband"];

/// The link files of an inventory's ports, and what they held at the last read.
#[derive(Debug)]
pub struct LinkWatch {
    root: PathBuf,
    /// Directories and the files read in each (each directory opened once per read).
    files: Vec<(PathBuf, &'static [&'static str])>,
    values: Vec<Option<String>>,
    names: Vec<Vec<String>>,
}

impl LinkWatch {
    /// The files to watch for `inv` (read under `root`), read once now.
    pub fn new(root: &Path, inv: &Inventory, bonds: &[Bond]) -> Self {
        let r = Root::new(root);
        let mut files: Vec<(PathBuf, &'static [&'static str])> = Vec::new();
        for d in &inv.ib_devices {
            for p in &d.ports {
                let dir = r.path(&format!(
                    "sys/class/infiniband/{}/ports/{}",
                    d.name, p.number
                ));
                files.push((dir, &IB_PORT_FILES));
            }
        }
        for n in inv
            .netdevs
            .iter()
            .filter(|n| n.kind != NetdevKind::Loopback)
        {
            files.push((r.path(&format!("sys/class/net/{}", n.name)), &NETDEV_FILES));
        }
        for f in &inv.pci {
            for addr in std::iter::once(&f.address).chain(f.upstream.iter().map(|u| &u.address)) {
                files.push((r.path(&format!("sys/bus/pci/devices/{addr}")), &PCI_FILES));
            }
        }
        for b in bonds {
            files.push((
                r.path(&format!("sys/class/net/{}/bonding", b.name)),
                &BOND_FILES,
            ));
        }
        files.sort();
        files.dedup();
        let mut w = Self {
            root: root.to_path_buf(),
            values: Vec::new(),
            names: Vec::new(),
            files,
        };
        w.values = w.read_values();
        w.names = w.read_names();
        w
    }

    fn read_values(&self) -> Vec<Option<String>> {
        // A file that cannot be read (EINVAL from `speed` on a link that is down) reads as
        // `None`, like a missing one: what matters is that it differs from before.
        let mut out = Vec::with_capacity(self.values.len());
        for (dir, names) in &self.files {
            let d = DirReader::open(dir);
            out.extend(
                names
                    .iter()
                    .map(|n| d.as_ref().and_then(|d| d.read_raw(n).ok().flatten())),
            );
        }
        out
    }

    fn read_names(&self) -> Vec<Vec<String>> {
        CLASSES
            .iter()
            .map(|c| Root::list(&self.root.join(c)))
            .collect()
    }

    /// Reads every watched file and class directory again: true when anything differs from
    /// the previous read.
    pub fn changed(&mut self) -> bool {
        let values = self.read_values();
        let names = self.read_names();
        let changed = values != self.values || names != self.names;
        self.values = values;
        self.names = names;
        changed
    }
}

/// Every bonding interface under `root` (`/sys/class/net/*/bonding/`), with its mode, members
/// and active member. Unreadable files leave their field empty; no error.
pub fn bonds(root: &Path) -> Vec<Bond> {
    let r = Root::new(root);
    let class = r.path("sys/class/net");
    Root::list(&class)
        .into_iter()
        .filter_map(|name| {
            let dir = class.join(&name).join("bonding");
            if !dir.is_dir() {
                return None;
            }
            let read = |f: &str| {
                Root::read_raw(&dir.join(f))
                    .ok()
                    .flatten()
                    .filter(|v| !v.is_empty())
            };
            // `mode` reads `802.3ad 4`: the name, then the number.
            let mode = read("mode").and_then(|m| m.split_whitespace().next().map(str::to_string));
            let members = read("slaves")
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default();
            Some(Bond {
                name,
                mode,
                members,
                active: read("active_slave"),
            })
        })
        .collect()
}
