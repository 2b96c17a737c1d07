//! What changes when a link flaps or retrains, or a port comes or goes: a few files per port,
//! read every interval by `linerate watch` to know when to read the inventory again. The
//! values are compared as read (no parsing): any difference, or a name appearing in or leaving
//! `/sys/class/net` or `/sys/class/infiniband`, means the inventory is stale. Reading the whole
//! inventory every interval would cost a hundred files per port; this costs about ten, each
//! opened once and read again with `pread`. The counter sampler takes the ports' `rate` and
//! `speed` from here ([`LinkWatch::value`]) rather than read them twice.

use std::path::{Path, PathBuf};

use linerate_facts::{Bond, Inventory, NetdevKind};

use crate::fs::{OpenDir, Root};

/// The files of a port whose change changes its link or its ceiling.
const IB_PORT_FILES: [&str; 3] = ["state", "phys_state", "rate"];
const NETDEV_FILES: [&str; 4] = ["operstate", "carrier", "speed", "mtu"];
const PCI_FILES: [&str; 2] = ["current_link_speed", "current_link_width"];
const BOND_FILES: [&str; 2] = ["slaves", "active_slave"];
/// The class directories whose names are the ports.
const CLASSES: [&str; 2] = ["sys/class/net", "sys/class/infiniband"];

/// A file as read: its value, `None` when missing, or why it could not be read.
type Read = Result<Option<String>, String>;

/// A file's value as a change is judged: one that cannot be read is as one missing.
fn seen(x: &Read) -> Option<&str> {
    x.as_ref().ok().and_then(|v| v.as_deref())
}

/// The link files of an inventory's ports, and what they held at the last read. Each
/// directory is opened once and its files read again with `pread` (`fs::OpenDir`).
#[derive(Debug)]
pub struct LinkWatch {
    root: PathBuf,
    /// Directories and the files read in each.
    files: Vec<(PathBuf, &'static [&'static str])>,
    /// Each directory, opened (again, while it is missing) at every read.
    dirs: Vec<Option<OpenDir>>,
    /// What each file held at the last read, `files` order.
    values: Vec<Read>,
    /// (directory, file) → its place in `values`.
    /// Each directory's files: where their values start in `values`, and their names.
    index: std::collections::HashMap<PathBuf, Vec<(usize, &'static [&'static str])>>,
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
        let mut index: std::collections::HashMap<PathBuf, Vec<_>> =
            std::collections::HashMap::new();
        let mut at = 0;
        for (dir, names) in &files {
            index.entry(dir.clone()).or_default().push((at, *names));
            at += names.len();
        }
        let mut w = Self {
            root: root.to_path_buf(),
            dirs: files.iter().map(|_| None).collect(),
            index,
            values: Vec::new(),
            names: Vec::new(),
            files,
        };
        w.values = w.read_values();
        w.names = w.read_names();
        w
    }

    fn read_values(&mut self) -> Vec<Read> {
        let mut out = Vec::with_capacity(self.files.iter().map(|(_, n)| n.len()).sum());
        for ((dir, names), open) in self.files.iter().zip(&mut self.dirs) {
            if open.is_none() {
                *open = OpenDir::open(dir);
            }
            match open.as_mut() {
                Some(d) => {
                    d.begin();
                    out.extend(names.iter().map(|n| d.read_raw(n)));
                }
                None => out.extend(names.iter().map(|_| Ok(None))),
            }
        }
        out
    }

    /// Reads every file again into `values` (a value that did not change is not copied):
    /// whether a value seen changed.
    fn reread_values(&mut self) -> bool {
        let mut changed = false;
        let mut values = self.values.iter_mut();
        for ((dir, names), open) in self.files.iter().zip(&mut self.dirs) {
            if open.is_none() {
                *open = OpenDir::open(dir);
            }
            match open.as_mut() {
                Some(d) => {
                    d.begin();
                    for (n, v) in names.iter().zip(&mut values) {
                        changed |= d.read_raw_into(n, v);
                    }
                }
                None => {
                    for v in values.by_ref().take(names.len()) {
                        changed |= seen(v).is_some();
                        *v = Ok(None);
                    }
                }
            }
        }
        changed
    }

    /// The names in each class directory, in byte order (compared, never shown).
    fn read_names(&self) -> Vec<Vec<String>> {
        CLASSES
            .iter()
            .map(|c| Root::list_bytewise(&self.root.join(c)))
            .collect()
    }

    /// Reads every watched file and class directory again: true when anything differs from
    /// the previous read. A file that cannot be read (EINVAL from `speed` on a link that is
    /// down) reads as missing: what matters is that it differs from before.
    pub fn changed(&mut self) -> bool {
        let changed = self.reread_values();
        let names = self.read_names();
        let changed = changed || names != self.names;
        self.names = names;
        changed
    }

    /// File `name` of directory `dir` as the last read found it, when it is watched: a
    /// sampler that needs it (a port's `rate`, `speed`) takes it from here.
    pub fn value(&self, dir: &Path, name: &str) -> Option<&Read> {
        if !IB_PORT_FILES.contains(&name) && !NETDEV_FILES.contains(&name) {
            return None;
        }
        let (at, names) = self
            .index
            .get(dir)?
            .iter()
            .find(|(_, n)| n.contains(&name))?;
        let k = names.iter().position(|n| *n == name)?;
        self.values.get(at + k)
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
