//! PCI functions behind network ports, their PCIe links and the slot above them.

use std::path::{Path, PathBuf};

use linerate_facts::{PciFunction, PcieLinkFiles, PcieSpeedFiles, UpstreamPort};
use linerate_model::{cards, PcieSpeed};

use crate::fs::Root;
use linerate_facts::{parse_hex_u16, parse_hex_u32};

/// PCI functions seen so far, by address.
#[derive(Debug, Default)]
pub struct Registry {
    items: Vec<PciFunction>,
}

impl Registry {
    pub fn get(&self, address: &str) -> Option<&PciFunction> {
        self.items.iter().find(|p| p.address == address)
    }

    pub fn into_vec(self) -> Vec<PciFunction> {
        self.items
    }

    /// Read the function at `dir` (a canonical path) once; return its address.
    pub fn ensure(&mut self, r: &mut Root, dir: &Path) -> Option<String> {
        let address = dir.file_name()?.to_str()?.to_string();
        if !is_bdf(&address) {
            return None;
        }
        if self.get(&address).is_none() {
            let f = read_function(r, dir, &address);
            let physfn = f.physfn.is_some();
            self.items.push(f);
            // A VF's PF holds its rate limit and its place among the VFs: read it too.
            if physfn {
                if let Ok(pf) = std::fs::canonicalize(dir.join("physfn")) {
                    self.ensure(r, &pf);
                }
            }
        }
        Some(address)
    }
}

/// `0000:04:00.0`
pub fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && s.chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// Walk up from a device directory to the nearest PCI function directory
/// (a virtio device sits one level below its PCI function).
pub fn nearest_function(dir: &Path) -> Option<PathBuf> {
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.file_name().and_then(|n| n.to_str()).is_some_and(is_bdf) {
            return Some(p.to_path_buf());
        }
        d = p.parent();
    }
    None
}

fn read_link_files(r: &mut Root, dir: &Path, subject: &str) -> PcieLinkFiles {
    let speed_exp = "`8.0 GT/s PCIe`, `8 GT/s` or `Unknown`";
    let width_exp = "a lane count (1-32)";
    let width = |s: &str| s.parse::<u8>().ok().filter(|w| *w <= 32);
    let present = dir.join("current_link_speed").exists() || dir.join("max_link_speed").exists();
    if !present {
        return PcieLinkFiles::default();
    }
    // A function right below the host bridge whose link capability reads `Unknown` is
    // integrated in the root complex: its widths (0, 255) are reserved bits, not a link.
    let on_root_bus = dir
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pci"));
    let max_unknown = Root::read_raw(&dir.join("max_link_speed"))
        .ok()
        .flatten()
        .is_some_and(|v| v == "Unknown" || v == "Unknown speed");
    if on_root_bus && max_unknown {
        return PcieLinkFiles {
            present: true,
            integrated: true,
            ..PcieLinkFiles::default()
        };
    }
    let (current_speed, current_raw) = r.req_parse_verbatim(
        &dir.join("current_link_speed"),
        subject,
        speed_exp,
        PcieSpeed::parse,
    );
    let current_width = r.req_parse(&dir.join("current_link_width"), subject, width_exp, width);
    let (max_speed, max_raw) = r.req_parse_verbatim(
        &dir.join("max_link_speed"),
        subject,
        speed_exp,
        PcieSpeed::parse,
    );
    PcieLinkFiles {
        current_speed,
        current_width,
        max_speed,
        max_width: r.req_parse(&dir.join("max_link_width"), subject, width_exp, width),
        present: true,
        integrated: false,
        verbatim: PcieSpeedFiles {
            current_speed: current_raw,
            max_speed: max_raw,
        },
    }
}

fn read_function(r: &mut Root, dir: &Path, address: &str) -> PciFunction {
    let s = address;
    let hex = "a hex id like `0x15b3`";
    let vendor = r.req_parse(&dir.join("vendor"), s, hex, parse_hex_u16);
    let device = r.req_parse(&dir.join("device"), s, hex, parse_hex_u16);
    let subsystem_vendor = r.opt_parse(&dir.join("subsystem_vendor"), s, hex, parse_hex_u16);
    let subsystem_device = r.opt_parse(&dir.join("subsystem_device"), s, hex, parse_hex_u16);
    let class = r.opt_parse(
        &dir.join("class"),
        s,
        "a class like `0x020000`",
        parse_hex_u32,
    );
    let numa_node = r
        .opt_parse(&dir.join("numa_node"), s, "a node number or -1", |v| {
            v.parse::<i64>().ok().filter(|n| *n >= -1 && *n < 65536)
        })
        .and_then(|n| u32::try_from(n).ok());
    let local_cpus = r.opt_parse(
        &dir.join("local_cpulist"),
        s,
        "a CPU list like `0-7`",
        linerate_facts::parse_cpulist,
    );
    let link = read_link_files(r, dir, s);
    let card = vendor.zip(device).and_then(|(v, d)| cards::lookup(v, d));
    let vendor_name = card
        .map(|c| c.vendor_name)
        .or_else(|| vendor.and_then(cards::vendor_name))
        .map(str::to_string);
    let mut upstream = Vec::new();
    let mut up = dir.parent();
    while let Some(p) = up {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            break;
        };
        if !is_bdf(name) {
            break;
        }
        let link = read_link_files(r, p, name);
        upstream.push(UpstreamPort {
            address: name.to_string(),
            link,
        });
        up = p.parent();
    }
    let mut msi_irqs: Vec<u32> = Root::list(&dir.join("msi_irqs"))
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    msi_irqs.sort_unstable();
    let mut mlx4_port_types = std::collections::BTreeMap::new();
    for n in 1..=2u32 {
        if let Some(t) = r.opt(&dir.join(format!("mlx4_port{n}")), s) {
            mlx4_port_types.insert(n, t);
        }
    }
    let hwmon = crate::hwmon::read(r, dir, s);
    let sriov = read_sriov(r, dir, s);
    let physfn = Root::link_name(&dir.join("physfn")).filter(|a| is_bdf(a));
    PciFunction {
        address: address.to_string(),
        vendor,
        device,
        subsystem_vendor,
        subsystem_device,
        class,
        vendor_name,
        model: card.map(|c| c.model.to_string()),
        driver: Root::link_name(&dir.join("driver")),
        numa_node,
        local_cpus,
        link,
        upstream,
        msi_irqs,
        mlx4_port_types,
        hwmon,
        sriov,
        physfn,
    }
}

/// A physical function's SR-IOV files; None for a function without them.
fn read_sriov(r: &mut Root, dir: &Path, subject: &str) -> Option<linerate_facts::Sriov> {
    let count = "a count of VFs";
    let total = r.opt_parse(&dir.join("sriov_totalvfs"), subject, count, |v| {
        v.parse::<u32>().ok()
    });
    let num = r.opt_parse(&dir.join("sriov_numvfs"), subject, count, |v| {
        v.parse::<u32>().ok()
    });
    if total.is_none() && num.is_none() {
        return None;
    }
    let mut vfs: Vec<linerate_facts::SriovVf> = Root::list(dir)
        .into_iter()
        .filter_map(|n| {
            let index = n.strip_prefix("virtfn")?.parse::<u32>().ok()?;
            let address = Root::link_name(&dir.join(&n)).filter(|a| is_bdf(a))?;
            Some(linerate_facts::SriovVf { index, address })
        })
        .collect();
    vfs.sort_by_key(|v| v.index);
    Some(linerate_facts::Sriov {
        total_vfs: total,
        num_vfs: num,
        vfs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdf() {
        assert!(is_bdf("0000:04:00.0"));
        assert!(is_bdf("0000:af:1f.7"));
        assert!(!is_bdf("pci0000:00"));
        assert!(!is_bdf("virtio2"));
        assert!(!is_bdf("0000:04:00:0"));
    }
}
