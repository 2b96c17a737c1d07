//! Detection, pure over a [`Snapshot`]: the distribution, the network renderer in charge of an
//! interface, and the package versions that decide what syntax is available.

use linerate_facts::{Distro, Family};
use serde::{Deserialize, Serialize};

use crate::edit::{ifcfg, ifupdown, ini, netplan};
use crate::snapshot::Snapshot;

/// Parse an os-release file (shell-style `KEY=value`, values optionally quoted).
pub fn distro(s: &Snapshot) -> Distro {
    let text = s
        .file("/etc/os-release")
        .or_else(|| s.file("/usr/lib/os-release"))
        .unwrap_or("");
    let get = |k: &str| ifcfg::get(text, k);
    let id = get("ID").unwrap_or_else(|| "unknown".to_string());
    let like = get("ID_LIKE").unwrap_or_default();
    let words: Vec<&str> = std::iter::once(id.as_str())
        .chain(like.split_whitespace())
        .collect();
    let family = if words.iter().any(|w| matches!(*w, "debian" | "ubuntu")) {
        Family::Debian
    } else if words
        .iter()
        .any(|w| matches!(*w, "rhel" | "fedora" | "centos"))
    {
        Family::RedHat
    } else {
        Family::Other
    };
    Distro {
        id,
        version_id: get("VERSION_ID"),
        pretty_name: get("PRETTY_NAME"),
        family,
    }
}

/// The version of an installed package from dpkg's status database (`None` when there is no
/// database, the package is absent, or not installed). RPM's database is binary: on Red Hat
/// systems versions are unknown and the plan says so.
pub fn dpkg_version(s: &Snapshot, package: &str) -> Option<String> {
    let db = s.file("/var/lib/dpkg/status")?;
    for para in db.split("\n\n") {
        let mut name = None;
        let mut status = None;
        let mut version = None;
        for line in para.lines() {
            if let Some(v) = line.strip_prefix("Package:") {
                name = Some(v.trim());
            } else if let Some(v) = line.strip_prefix("Status:") {
                status = Some(v.trim());
            } else if let Some(v) = line.strip_prefix("Version:") {
                version = Some(v.trim());
            }
        }
        if name == Some(package) && status.is_some_and(|st| st.ends_with(" installed")) {
            return version.map(str::to_string);
        }
    }
    None
}

/// Whether a Debian version string is at least `min` (numeric dotted parts, epoch and
/// Debian revision ignored: `0.106-2+deb12u1` ≥ `0.105`, `252.39-1` ≥ `250`).
pub fn version_at_least(version: &str, min: &[u32]) -> bool {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.split(['-', '+', '~']).next().unwrap_or("");
    let parts: Vec<u32> = upstream
        .split('.')
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect();
    for (i, m) in min.iter().enumerate() {
        let v = parts.get(i).copied().unwrap_or(0);
        if v != *m {
            return v > *m;
        }
    }
    true
}

/// A network configuration system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Renderer {
    Netplan,
    NetworkManager,
    Networkd,
    Ifupdown,
    Ifcfg,
}

impl Renderer {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Netplan => "netplan",
            Self::NetworkManager => "networkmanager",
            Self::Networkd => "networkd",
            Self::Ifupdown => "ifupdown",
            Self::Ifcfg => "ifcfg",
        }
    }
}

/// Who is in charge of one interface, and why `setup` thinks so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InCharge {
    pub renderer: Renderer,
    /// For netplan: the backend it renders for (`networkd` or `networkmanager`).
    pub backend: Option<Renderer>,
    /// The file that configures the interface (`None`: no file mentions it).
    pub file: Option<String>,
    /// The facts the choice rests on.
    pub evidence: Vec<String>,
}

const NM_DIR: &str = "/etc/NetworkManager/system-connections";
const NETWORKD_DIR: &str = "/etc/systemd/network";
const IFCFG_DIR: &str = "/etc/sysconfig/network-scripts";
const NETWORKD_LINK: &str = "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service";
const NM_LINK: &str = "/etc/systemd/system/multi-user.target.wants/NetworkManager.service";

/// The netplan file that configures `iface`, and its renderer.
fn netplan_for(s: &Snapshot, iface: &str) -> Option<InCharge> {
    for (path, text) in s.files_in("/etc/netplan") {
        let ext = std::path::Path::new(path)
            .extension()
            .and_then(|e| e.to_str());
        if !ext.is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml")) {
            continue;
        }
        let Ok(doc) = netplan::Doc::parse(text) else {
            continue;
        };
        if doc.find_interface(iface).is_some() {
            let backend = match doc.renderer(iface).as_deref() {
                Some("NetworkManager") => Renderer::NetworkManager,
                _ => Renderer::Networkd,
            };
            return Some(InCharge {
                renderer: Renderer::Netplan,
                backend: Some(backend),
                file: Some(path.to_string()),
                evidence: vec![format!(
                    "{path} configures {iface} (renderer: {})",
                    doc.renderer(iface)
                        .unwrap_or_else(|| "networkd, netplan's default".to_string())
                )],
            });
        }
    }
    None
}

fn nm_for(s: &Snapshot, iface: &str) -> Option<String> {
    s.files_in(NM_DIR)
        .find(|(_, text)| ini::get(text, "connection", "interface-name").as_deref() == Some(iface))
        .map(|(p, _)| p.to_string())
}

fn networkd_for(s: &Snapshot, iface: &str) -> Option<String> {
    s.files_in(NETWORKD_DIR)
        .find(|(p, text)| {
            p.ends_with(".network")
                && ini::get(text, "Match", "Name")
                    .is_some_and(|n| n.split_whitespace().any(|w| w == iface))
        })
        .map(|(p, _)| p.to_string())
}

fn ifcfg_for(s: &Snapshot, iface: &str) -> Option<String> {
    let p = format!("{IFCFG_DIR}/ifcfg-{iface}");
    s.file(&p).map(|_| p)
}

fn ifupdown_for(s: &Snapshot, iface: &str) -> Option<String> {
    std::iter::once("/etc/network/interfaces")
        .filter_map(|p| s.file(p).map(|t| (p, t)))
        .chain(s.files_in("/etc/network/interfaces.d"))
        .find(|(_, t)| ifupdown::has_stanza(t, iface))
        .map(|(p, _)| p.to_string())
}

/// The renderer in charge of `iface`: the one whose file configures it, in the order a
/// system reads them (netplan generates NetworkManager and networkd files, so it comes
/// first). `forced` limits the search to one renderer (`--renderer`).
pub fn in_charge(s: &Snapshot, iface: &str, forced: Option<Renderer>) -> Option<InCharge> {
    let want = |r: Renderer| forced.is_none_or(|f| f == r);
    if want(Renderer::Netplan) {
        if let Some(c) = netplan_for(s, iface) {
            return Some(c);
        }
    }
    let found = |r: Renderer, file: Option<String>, why: &str| {
        file.filter(|_| want(r)).map(|f| InCharge {
            renderer: r,
            backend: None,
            evidence: vec![format!("{f} {why} {iface}")],
            file: Some(f),
        })
    };
    found(
        Renderer::NetworkManager,
        nm_for(s, iface),
        "is a NetworkManager keyfile with interface-name",
    )
    .or_else(|| found(Renderer::Ifcfg, ifcfg_for(s, iface), "configures"))
    .or_else(|| {
        found(
            Renderer::Networkd,
            networkd_for(s, iface),
            "is a systemd-networkd file matching",
        )
    })
    .or_else(|| {
        found(
            Renderer::Ifupdown,
            ifupdown_for(s, iface),
            "has a stanza for",
        )
    })
}

/// Which renderers look active on this system, without regard to an interface: for the
/// message when no file configures the interface.
pub fn active_renderers(s: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    if s.files_in("/etc/netplan").next().is_some() {
        let bad: Vec<String> = s
            .files_in("/etc/netplan")
            .filter_map(|(p, t)| netplan::Doc::parse(t).err().map(|e| format!("{p}: {e}")))
            .collect();
        out.push(if bad.is_empty() {
            "netplan (/etc/netplan has files)".to_string()
        } else {
            format!(
                "netplan (/etc/netplan has files; unreadable: {})",
                bad.join("; ")
            )
        });
    }
    if s.links.contains_key(NM_LINK) || s.has_dir("/run/NetworkManager") {
        out.push("NetworkManager (enabled or running)".to_string());
    }
    if s.links.contains_key(NETWORKD_LINK) {
        out.push(format!("systemd-networkd (enabled: {NETWORKD_LINK})"));
    }
    if s.file("/etc/network/interfaces").is_some() {
        out.push("ifupdown (/etc/network/interfaces)".to_string());
    }
    if s.has_dir(IFCFG_DIR) {
        out.push(format!("ifcfg ({IFCFG_DIR})"));
    }
    out
}

/// Whether systemd-networkd is enabled (its enablement symlink).
pub fn networkd_enabled(s: &Snapshot) -> bool {
    s.links.contains_key(NETWORKD_LINK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(version_at_least("0.106-2+deb12u1", &[0, 105]));
        assert!(version_at_least("0.105", &[0, 105]));
        assert!(!version_at_least("0.104-0ubuntu2", &[0, 105]));
        assert!(!version_at_least("0.99", &[0, 105]));
        assert!(version_at_least("1:2.6.2-4", &[2, 6]));
        assert!(version_at_least("252.39-1~deb12u2", &[250]));
        assert!(!version_at_least("249.11-0ubuntu3", &[250]));
    }

    #[test]
    fn os_release_and_dpkg() {
        let s = Snapshot::from_files([
            (
                "/etc/os-release",
                "PRETTY_NAME=\"Rocky Linux 9.4 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\n",
            ),
            (
                "/var/lib/dpkg/status",
                "Package: netplan.io\nStatus: install ok installed\nVersion: 0.106-2\n\nPackage: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n",
            ),
        ]);
        let d = distro(&s);
        assert_eq!(d.id, "rocky");
        assert_eq!(d.family, Family::RedHat);
        assert_eq!(d.major(), Some(9));
        assert_eq!(dpkg_version(&s, "netplan.io").as_deref(), Some("0.106-2"));
        assert_eq!(dpkg_version(&s, "gone"), None);
        assert_eq!(dpkg_version(&s, "absent"), None);
    }
}
