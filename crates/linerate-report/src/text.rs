//! The terminal view: a block per port, its ceiling chain, and findings by subject.

use std::fmt::Write as _;
use std::path::Path;

use linerate_facts::{
    Analysis, DcbRead, Finding, GidFamily, IbDevice, IbPort, Inventory, IpoibMode, LinkLayer,
    MtuSource, Port, PortKind, PortQos, RoceVersion, RoceView, Severity, Trust, APP_SEL_DSCP,
};
use linerate_model::firmware::FirmwareState;
use linerate_model::{Ceiling, CeilingInput, LimitedBy, LinkInput};
use linerate_units::fmt_num;

use crate::Style;

const BAR: usize = 24;

fn bar(style: Style, frac: f64) -> String {
    let n = (frac.clamp(0.0, 1.0) * BAR as f64).round() as usize;
    style.dim(&format!("{}{}", "█".repeat(n), "·".repeat(BAR - n)))
}

fn limited_by_words(l: LimitedBy) -> &'static str {
    match l {
        LimitedBy::Link => "limited by the link",
        LimitedBy::Encoding => "limited by the link's line encoding",
        LimitedBy::Pcie => "limited by PCIe",
        LimitedBy::Mtu => "limited by the MTU",
        LimitedBy::PortDown => "port down",
        LimitedBy::NoSubnetManager => "no subnet manager",
        LimitedBy::Unknown => "unknown",
    }
}

/// The chain as aligned lines with bars scaled to its first stage.
pub fn render_chain(out: &mut String, c: &Ceiling, style: Style, indent: &str) {
    let top = c.chain.iter().map(|s| s.gbps).fold(0.0_f64, f64::max);
    for s in &c.chain {
        let stage = s.stage.as_str();
        let frac = if top > 0.0 { s.gbps / top } else { 0.0 };
        let _ = writeln!(
            out,
            "{indent}{:>8} Gb/s {} {:<13} {}",
            fmt_num(s.gbps),
            bar(style, frac),
            stage,
            s.explain
        );
    }
}

fn ceiling_line(c: &Ceiling, style: Style) -> String {
    let mut s = match c.limited_by {
        LimitedBy::PortDown | LimitedBy::NoSubnetManager => style.severity(
            Severity::Error,
            &format!("0 Gb/s: {}", limited_by_words(c.limited_by)),
        ),
        LimitedBy::Unknown => style.dim("no hardware ceiling"),
        // A VF's rate limit below its link is named as such (the model says `link`).
        LimitedBy::Link
            if c.chain.iter().any(|s| {
                s.stage == linerate_model::StageKind::VfRate && (s.gbps - c.gbps).abs() < 0.005
            }) && c.summary.contains("VF's rate limit") =>
        {
            format!(
                "{}  limited by the VF's rate limit",
                style.bold(&format!("{} Gb/s", fmt_num(c.gbps)))
            )
        }
        l => format!(
            "{}  {}",
            style.bold(&format!("{} Gb/s", fmt_num(c.gbps))),
            limited_by_words(l)
        ),
    };
    if let Some(t) = c.tcp_gbps {
        let _ = write!(s, "   (TCP goodput ≈ {} Gb/s)", fmt_num(t));
    }
    if let Some(p) = c.potential_gbps {
        let _ = write!(s, "   (once fixed: {} Gb/s)", fmt_num(p));
    }
    s
}

pub fn render_finding(out: &mut String, f: &Finding, style: Style, indent: &str) {
    let mark = match f.severity {
        Severity::Error => "✖ error  ",
        Severity::Warning => "▲ warning",
        Severity::Info => "● info   ",
    };
    let _ = writeln!(
        out,
        "{indent}{} {} {}",
        style.severity(f.severity, mark),
        style.bold(f.id.as_str()),
        f.message
    );
    let pad = format!("{indent}           ");
    for (k, v) in &f.evidence {
        let _ = writeln!(out, "{pad}{}", style.dim(&format!("{k} = {v}")));
    }
    if !f.fix.is_empty() {
        let _ = writeln!(out, "{pad}{} {}", style.good("fix:"), f.fix);
    }
}

fn port_header(inv: &Inventory, p: &Port) -> String {
    // The JSON kind of an iWARP port stays `roce` (an RDMA-capable Ethernet port); people are told which.
    let iwarp = inv.ib_port(p).is_some_and(|(d, _)| d.is_iwarp());
    let kind = match p.kind {
        PortKind::Infiniband => "InfiniBand",
        PortKind::Roce if iwarp => "iWARP (Ethernet)",
        PortKind::Roce => "RoCE (Ethernet)",
        PortKind::Ethernet => "Ethernet",
        PortKind::Paravirtual => "paravirtual NIC",
        PortKind::Virtual => "virtual",
        PortKind::Loopback => "loopback",
        PortKind::Other => "other",
    };
    let mut s = kind.to_string();
    if let (Some(d), Some(n)) = (&p.device, p.port) {
        let _ = write!(s, "  {d} port {n}");
    }
    if let Some(parent) = inv.ib_port(p).and_then(|(d, _)| d.soft_parent.as_deref()) {
        let _ = write!(s, "  software RDMA over {parent}");
    }
    if let Some(f) = inv.port_pci(p) {
        if let Some(m) = &f.model {
            let _ = write!(s, "  {m}");
        } else if let (Some(v), Some(d)) = (f.vendor, f.device) {
            let _ = write!(
                s,
                "  {} [{v:04x}:{d:04x}]",
                f.vendor_name.as_deref().unwrap_or("unknown vendor")
            );
        }
    }
    if let Some((d, _)) = inv.ib_port(p) {
        if let Some(fw) = &d.fw_ver {
            let _ = write!(s, "  fw {fw}");
            let pci = inv.port_pci(p);
            let st = linerate_model::firmware::judge(
                pci.and_then(|f| f.vendor),
                pci.and_then(|f| f.device),
                Some(fw),
                d.board_id.as_deref(),
            );
            match (
                st.status,
                st.newest_known.as_deref(),
                st.psid_owner.as_deref(),
            ) {
                (FirmwareState::Outdated, Some(n), _) => {
                    let _ = write!(s, " (older than {n})");
                }
                (FirmwareState::Current, _, _) => s.push_str(" (newest known)"),
                (FirmwareState::Oem, _, Some(o)) => {
                    let _ = write!(s, " ({o} image)");
                }
                _ => {}
            }
        }
        if let Some(b) = &d.board_id {
            let _ = write!(s, "  PSID {b}");
        }
    }
    s
}

/// The RDMA port's lines: states and rate, MTUs, GIDs, the driver's counters that moved.
fn rdma_port_lines(
    out: &mut String,
    dev: &IbDevice,
    ib: &IbPort,
    p: &Port,
    roce: Option<&RoceView>,
    style: Style,
) {
    let ind = "    ";
    let mut s = format!(
        "{} / {}",
        ib.state.map_or("?", |x| x.name()),
        ib.phys_state.map_or("?", |x| x.name())
    );
    // The rate file as read; said plainly when it is not the link's rate.
    if let (Some(_), Some(raw)) = (ib.rate, &ib.verbatim.rate) {
        let note = if dev.is_iwarp() {
            " (made up by the iWARP driver: the netdev's speed is the link rate)"
        } else if dev.is_soft() {
            " (nominal: a software device copies its netdev's speed, or says 1X SDR when that is unknown)"
        } else if ib.link_rate().is_none() {
            " (a driver placeholder: the port is not up)"
        } else {
            ""
        };
        let _ = write!(s, "   {raw}{note}");
    }
    if p.link_layer == LinkLayer::Infiniband {
        if let Some(l) = ib.lid {
            let _ = write!(s, "   LID {l:#x}");
        }
        if let Some(l) = ib.sm_lid {
            let _ = write!(s, "   SM LID {l:#x}");
        }
    }
    if let Some(a) = ib.active_mtu {
        let _ = write!(s, "   active MTU {a}");
        if let Some(m) = ib.max_mtu {
            let _ = write!(s, " of {m}");
        }
    }
    let _ = writeln!(out, "{ind}{:<10} {s}", style.dim("port"));
    if let Some(v) = roce {
        roce_lines(out, dev, ib, v, style);
    }
    for g in ib.gids.iter().filter(|_| roce.is_none()) {
        let mut line = format!("{:>3} {}", g.index, g.gid);
        if let Some(k) = &g.kind {
            let _ = write!(line, "   {k}");
        }
        if let Some(n) = &g.ndev {
            let _ = write!(line, "   {n}");
        }
        let _ = writeln!(out, "{ind}{:<10} {line}", style.dim("gid"));
    }
    let moved: Vec<String> = ib
        .hw_counters
        .iter()
        .filter(|c| c.value > 0)
        .map(|c| format!("{} {}", c.name, c.value))
        .collect();
    if !moved.is_empty() {
        let _ = writeln!(
            out,
            "{ind}{:<10} {}",
            style.dim("hw count"),
            moved.join("   ")
        );
    }
}

/// A RoCE port's MTU against its netdev's, its GIDs as `show_gids` lists them with the index
/// to use, and the path of its traffic (ToS, trust, priority, PFC, ECN).
fn roce_lines(out: &mut String, dev: &IbDevice, ib: &IbPort, v: &RoceView, style: Style) {
    let ind = "    ";
    let m = &v.mtu;
    let mut s = match m.active {
        Some(a) => format!("{a} of {}", m.max),
        None => format!("unknown (at most {})", m.max),
    };
    if let (Some(n), Some(nm)) = (&m.netdev, m.netdev_mtu) {
        let how = match m.source {
            MtuSource::Verbs => "libibverbs",
            MtuSource::Derived => "derived",
        };
        let _ = write!(
            s,
            " ({how}; {n} MTU {nm} less {} bytes of RoCE headers; {} needs {})",
            m.headroom, m.max, m.netdev_mtu_for_max
        );
    }
    let _ = writeln!(out, "{ind}{:<10} {s}", style.dim("roce mtu"));
    if !v.gids.is_empty() {
        // show_gids' columns: DEV PORT INDEX GID IPv4 VER DEV.
        let _ = writeln!(
            out,
            "{ind}{:<10} {:<8} {:<4} {:<5} {:<39} {:<15} {:<3} DEV",
            style.dim("gids"),
            "DEV",
            "PORT",
            "INDEX",
            "GID",
            "IPv4",
            "VER"
        );
        for g in &v.gids {
            let ipv4 = match (g.family, &g.address) {
                (Some(GidFamily::Ipv4), Some(a)) => a.as_str(),
                _ => "",
            };
            let ver = match g.version {
                Some(RoceVersion::V1) => "v1",
                Some(RoceVersion::V2) => "v2",
                None => "?",
            };
            let mut nd = g.netdev.clone().unwrap_or_default();
            if let Some(vid) = g.vlan {
                let _ = write!(nd, " (VLAN {vid})");
            }
            let _ = writeln!(
                out,
                "{ind}{:<10} {:<8} {:<4} {:<5} {:<39} {:<15} {:<3} {nd}",
                "", dev.name, ib.number, g.index, g.gid, ipv4, ver
            );
        }
    }
    let use_line = match v.use_gid.and_then(|i| v.gids.iter().find(|g| g.index == i)) {
        Some(g) => format!(
            "index {} ({}, RoCE v2): `ib_write_bw -x {}`, NCCL_IB_GID_INDEX={}",
            g.index,
            g.address.as_deref().unwrap_or("?"),
            g.index,
            g.index
        ),
        None => "none: no RoCE v2 GID for an IP address".to_string(),
    };
    let _ = writeln!(out, "{ind}{:<10} {use_line}", style.dim("use gid"));
    if let Some(t) = &v.traffic {
        let trust = match t.trust {
            Trust::Dscp => "dscp",
            Trust::Pcp => "pcp",
        };
        let mut s = format!(
            "ToS {} ({}) · trust {trust} · priority {} · {}",
            t.tos,
            t.tos_source,
            t.priority,
            t.protection_words()
        );
        if let Some(mode) = &t.mode {
            let _ = write!(s, " · rdma_cm default {mode}");
        }
        let _ = writeln!(out, "{ind}{:<10} {s}", style.dim("traffic"));
        let _ = writeln!(out, "{ind}{:<10} {}", "", style.dim(&t.priority_why));
    }
}

/// The DCB state and the driver's pause and discard counters of a RoCE port's netdev.
fn qos_lines(out: &mut String, q: &PortQos, style: Style) {
    let ind = "    ";
    let list = |v: &[u8]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
        }
    };
    let s = match &q.dcb {
        DcbRead::Read(d) => {
            let mut s = match &d.pfc {
                Some(p) => format!("PFC on {} (cap {})", list(&p.priorities()), p.cap),
                None => "no PFC state".to_string(),
            };
            if let Some(e) = &d.ets {
                let _ = write!(s, " · priority→TC {}", list(&e.prio_tc));
            }
            let dscp: Vec<String> = d
                .apps
                .iter()
                .filter(|a| a.selector == APP_SEL_DSCP)
                .map(|a| format!("{}→{}", a.protocol, a.priority))
                .collect();
            if !dscp.is_empty() {
                let _ = write!(s, " · DSCP map {}", dscp.join(" "));
            }
            if let Some(t) = &d.trust {
                let _ = write!(s, " · trust table {}", list(t));
            }
            if let Some(x) = d.dcbx {
                let _ = write!(s, " · DCBX {x:#04x}");
            }
            if let Some(p) = &d.pfc {
                let sent: u64 = p.requests.iter().sum();
                let got: u64 = p.indications.iter().sum();
                if sent + got > 0 {
                    let _ = write!(s, " · PFC frames sent {sent}, received {got}");
                }
            }
            s
        }
        DcbRead::Unsupported => format!("{} has no DCB (no PFC, no ETS)", q.netdev),
        DcbRead::Failed(e) => format!("not read: {e}"),
        DcbRead::NotAsked => "not read".to_string(),
    };
    let _ = writeln!(out, "{ind}{:<10} {s}", style.dim("dcb"));
    let moved: Vec<String> = q
        .counters
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !moved.is_empty() {
        let _ = writeln!(
            out,
            "{ind}{:<10} {}",
            style.dim("qos count"),
            moved.join("   ")
        );
    }
}

fn port_facts(out: &mut String, inv: &Inventory, p: &Port, roce: Option<&RoceView>, style: Style) {
    let ind = "    ";
    if let Some((dev, ib)) = inv.ib_port(p) {
        rdma_port_lines(out, dev, ib, p, roce, style);
    }
    if let Some(q) = p.netdev.as_deref().and_then(|n| inv.qos(n)) {
        qos_lines(out, q, style);
    }
    if let Some(n) = inv.port_netdev(p) {
        let mut s = n.name.clone();
        if let Some(m) = n.mtu {
            let _ = write!(s, "   MTU {m}");
        }
        if let Some(i) = &n.ipoib {
            let mode = match i.mode {
                Some(IpoibMode::Connected) => "connected mode",
                Some(IpoibMode::Datagram) => "datagram mode",
                None => "mode unknown (no connected-mode support)",
            };
            let _ = write!(s, "   {mode}");
        }
        if let Some(sp) = n.speed_mbps {
            let _ = write!(s, "   {sp} Mb/s");
        }
        if let Some(o) = &n.operstate {
            let _ = write!(s, "   {o}");
        }
        if let Some(d) = &n.driver {
            let _ = write!(s, "   driver {d}");
        }
        let _ = writeln!(out, "{ind}{:<10} {s}", style.dim("netdev"));
    }
    if let Some(f) = inv.port_pci(p) {
        let mut s = f.address.clone();
        match f.link.current() {
            Some(c) => {
                let _ = write!(s, "   {}", c.label());
            }
            None if f.link.integrated => {
                s.push_str("   integrated in the root complex: no PCIe link of its own");
            }
            None if f.link.present => s.push_str("   link unknown"),
            None => s.push_str("   no PCIe link attributes"),
        }
        let mut caps = Vec::new();
        if let Some(m) = f.link.max() {
            caps.push(format!("card {}", m.label()));
        }
        if let Some((sl, a)) = f.slot_max() {
            caps.push(format!("slot {} at {a}", sl.label()));
        }
        if !caps.is_empty() {
            let _ = write!(s, " ({})", caps.join(", "));
        }
        if let Some(n) = f.numa_node {
            let _ = write!(s, "   NUMA {n}");
        }
        let virt = inv.port_netdev(p).filter(|n| n.paravirtual);
        if let Some(n) = virt {
            let _ = write!(
                s,
                "   (emulated for the paravirtual {}: limits nothing)",
                n.driver.as_deref().unwrap_or("NIC")
            );
        }
        let _ = writeln!(out, "{ind}{:<10} {s}", style.dim("pci"));
    }
    crate::phy_text::phy_lines(out, inv, p, style);
}

fn render_host(out: &mut String, inv: &Inventory, style: Style) {
    let h = &inv.host;
    let mut s = format!("{} CPUs", h.cpus.len());
    if h.numa_nodes.len() > 1 {
        let _ = write!(s, ", {} NUMA nodes", h.numa_nodes.len());
    }
    if h.governors.is_empty() {
        s.push_str(", no cpufreq");
    } else {
        let g: Vec<String> = h
            .governors
            .iter()
            .map(|(k, v)| format!("{k} ×{}", v.len()))
            .collect();
        let _ = write!(s, ", governor {}", g.join(", "));
    }
    let _ = writeln!(out, "{} {s}", style.bold("host"));
    let k = &h.sockets;
    let fmt3 = |t: Option<[u64; 3]>| t.map_or("?".into(), |[a, b, c]| format!("{a} {b} {c}"));
    let fmtn = |t: Option<u64>| t.map_or("?".into(), |v| v.to_string());
    let _ = writeln!(
        out,
        "    {:<10} tcp_rmem {}   tcp_wmem {}   rmem_max {}   wmem_max {}",
        style.dim("buffers"),
        fmt3(k.tcp_rmem),
        fmt3(k.tcp_wmem),
        fmtn(k.rmem_max),
        fmtn(k.wmem_max)
    );
}

fn summary_line(findings: &[Finding], style: Style) -> String {
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let (e, w, i) = (
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    );
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let text = format!(
        "{}, {}, {}",
        plural(e, "error"),
        plural(w, "warning"),
        plural(i, "note")
    );
    if e > 0 {
        style.severity(Severity::Error, &text)
    } else if w > 0 {
        style.severity(Severity::Warning, &text)
    } else {
        style.good(&text)
    }
}

/// Whose sysfs the report describes: the live host, or the tree under `--root`
/// (a capture or a fixture, whose hostname file names the machine it came from).
fn subject(hostname: Option<&str>, root: &Path) -> String {
    let live = root == Path::new("/");
    match (live, hostname) {
        (true, Some(h)) => h.to_string(),
        (true, None) => "this host".to_string(),
        (false, Some(h)) => format!("{h}, sysfs under {}", root.display()),
        (false, None) => format!("sysfs under {}", root.display()),
    }
}

/// `linerate probe` for people; `root` is the filesystem root the inventory was read under.
pub fn render_probe(inv: &Inventory, analysis: &Analysis, root: &Path, style: Style) -> String {
    let mut out = String::new();
    let h = &inv.host;
    let _ = writeln!(
        out,
        "{} {}{}\n",
        style.bold("linerate probe:"),
        subject(h.hostname.as_deref(), root),
        h.kernel
            .as_deref()
            .map_or(String::new(), |k| format!(", Linux {k}"))
    );
    let mut used: Vec<usize> = Vec::new();
    let mut compact = Vec::new();
    for (p, a) in inv.ports.iter().zip(&analysis.ports) {
        // Findings about this port, or about its PCI function.
        let mine: Vec<(usize, &Finding)> = analysis
            .findings
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                !used.contains(i)
                    && (f.subject == p.name || p.pci.as_deref() == Some(f.subject.as_str()))
            })
            .collect();
        let hardware = matches!(
            p.kind,
            PortKind::Infiniband | PortKind::Roce | PortKind::Ethernet
        );
        if !hardware && mine.is_empty() {
            compact.push((p, a));
            continue;
        }
        let _ = writeln!(out, "{}  {}", style.bold(&p.name), port_header(inv, p));
        port_facts(&mut out, inv, p, a.roce.as_ref(), style);
        let _ = writeln!(
            out,
            "    {:<10} {}",
            style.dim("ceiling"),
            ceiling_line(&a.ceiling, style)
        );
        render_chain(&mut out, &a.ceiling, style, "      ");
        for (i, f) in mine {
            used.push(i);
            render_finding(&mut out, f, style, "    ");
        }
        out.push('\n');
    }
    if !compact.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            style.bold("other interfaces (no hardware link to model)")
        );
        for (p, _) in compact {
            let n = inv.port_netdev(p);
            let kind = match p.kind {
                PortKind::Loopback => "loopback".to_string(),
                PortKind::Paravirtual => format!(
                    "paravirtual ({})",
                    n.and_then(|n| n.driver.as_deref()).unwrap_or("?")
                ),
                PortKind::Virtual => "virtual".to_string(),
                _ => "other".to_string(),
            };
            let mtu = n
                .and_then(|n| n.mtu)
                .map_or(String::new(), |m| format!("MTU {m}"));
            let st = n.and_then(|n| n.operstate.clone()).unwrap_or_default();
            let _ = writeln!(out, "    {:<16} {:<24} {:<10} {st}", p.name, kind, mtu);
        }
        out.push('\n');
    }
    render_host(&mut out, inv, style);
    render_nfs(&mut out, inv, style);
    for (i, f) in analysis.findings.iter().enumerate() {
        if !used.contains(&i) {
            render_finding(&mut out, f, style, "    ");
        }
    }
    out.push('\n');
    if inv.ports.is_empty() {
        let _ = writeln!(out, "No network interfaces found under this root (no /sys/class/net entries, no /sys/class/infiniband devices).");
    }
    let _ = writeln!(out, "{}", summary_line(&analysis.findings, style));
    out
}

/// The NFS mounts: their transport, and the interface (and RDMA device) that reaches the server.
fn render_nfs(out: &mut String, inv: &Inventory, style: Style) {
    let mounts = linerate_facts::NfsDoc::of(inv);
    if mounts.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", style.bold("NFS mounts"));
    for line in nfs_lines(&mounts) {
        let _ = writeln!(out, "    {line}");
    }
}

/// One line per NFS mount: `/mnt/data  nfs4 server:/export   over RDMA (port 20049)   via ib0
/// (mlx5_0)` (probe's NFS section, doctor's pyramid).
pub fn nfs_lines(mounts: &[linerate_facts::NfsDoc]) -> Vec<String> {
    mounts
        .iter()
        .map(|d| {
            let m = &d.mount;
            let transport = match (m.proto.as_deref(), m.port) {
                (Some("rdma"), Some(p)) => format!("over RDMA (port {p})"),
                (Some("rdma"), None) => "over RDMA".to_string(),
                (Some(p), _) => format!("over {}", p.to_uppercase()),
                (None, _) => "transport unknown".to_string(),
            };
            let via = match (&d.via, &d.rdma_device) {
                (Some(v), Some(dev)) => format!("   via {v} ({dev})"),
                (Some(v), None) => format!("   via {v}"),
                _ => String::new(),
            };
            format!(
                "{:<16} {} {}   {transport}{via}",
                m.mountpoint, m.fstype, m.source
            )
        })
        .collect()
}

/// `linerate plan` for people.
pub fn render_plan(input: &CeilingInput, c: &Ceiling, style: Style) -> String {
    let mut out = String::new();
    let link = input.link.as_ref().map_or("?".into(), LinkInput::label);
    let pcie = input.pcie.map_or("no PCIe limit".into(), |p| p.label());
    let _ = writeln!(out, "{}  {link} on {pcie}", style.bold("plan"));
    let _ = writeln!(
        out,
        "    {:<10} {}",
        style.dim("ceiling"),
        ceiling_line(c, style)
    );
    render_chain(&mut out, c, style, "      ");
    let _ = writeln!(out, "\n{}", c.summary);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(case: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sysfs")
            .join(case)
    }

    fn render(case: &str, edit: impl FnOnce(&mut Inventory)) -> (String, std::path::PathBuf) {
        let root = fixture(case);
        let mut inv = linerate_inventory::probe(&root).expect("fixture probes");
        edit(&mut inv);
        let a = linerate_rules::analyze(&inv);
        (render_probe(&inv, &a, &root, Style::PLAIN), root)
    }

    /// Each NFS mount with its transport and the port (and RDMA device) on its server's route:
    /// probe's section and doctor's pyramid lines.
    #[test]
    fn nfs_mounts_name_their_transport() {
        let root = fixture("nfs-rdma-not-ready");
        let mut inv = linerate_inventory::probe(&root).expect("fixture probes");
        let mut rdma = inv.rdma_stack.nfs_mounts[0].clone();
        rdma.mountpoint = "/mnt/fast".into();
        rdma.proto = Some("rdma".into());
        rdma.port = Some(20049);
        inv.rdma_stack.nfs_mounts.push(rdma);
        let lines = nfs_lines(&linerate_facts::NfsDoc::of(&inv));
        assert_eq!(
            lines,
            [
                "/mnt/data        nfs4 storage1:/export/data   over TCP   via ib0 (mlx5_0)",
                "/mnt/fast        nfs4 storage1:/export/data   over RDMA (port 20049)   via ib0 (mlx5_0)",
            ]
        );
        let a = linerate_rules::analyze(&inv);
        let text = render_probe(&inv, &a, &root, Style::PLAIN);
        assert!(text.contains("NFS mounts\n    /mnt/data "), "{text}");
    }

    /// Under `--root` the header names the tree it read, not "this host".
    #[test]
    fn header_names_the_root() {
        let (text, root) = render("realtek-1g", |_| {});
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "linerate probe: desk, sysfs under {}, Linux 6.1.0-18-amd64",
                root.display()
            )
        );
        let (text, root) = render("realtek-1g", |inv| inv.host.hostname = None);
        let first = text.lines().next().unwrap();
        assert!(
            first.contains(&format!("sysfs under {}", root.display())),
            "{first}"
        );
        assert!(!text.contains("this host"), "{text}");
        assert_eq!(subject(None, Path::new("/")), "this host");
        assert_eq!(subject(Some("node01"), Path::new("/")), "node01");
    }

    /// The rate file is quoted as read, and a placeholder or made-up rate is called one.
    #[test]
    fn rate_file_is_quoted_and_placeholders_named() {
        let (text, _) = render("mlx5-roce-no-protocol", |_| {});
        assert!(
            text.contains("40 Gb/sec (4X QDR) (a driver placeholder: the port is not up)"),
            "{text}"
        );
        let (text, _) = render("chelsio-t5-iwarp", |_| {});
        assert!(text.contains("enp2s0f4  iWARP (Ethernet)"), "{text}");
        assert!(
            text.contains("20 Gb/sec (4X DDR) (made up by the iWARP driver"),
            "{text}"
        );
        let (text, _) = render("mthca-infinihost-sdr-oldkernel", |_| {});
        assert!(text.contains("10 Gb/sec (4X)"), "{text}");
    }
}
