//! Probe's lines below a port: the module and its diagnostics, FEC, link modes, rings,
//! channels, coalescing, pause, ring drops, the NIC's sensors, SR-IOV, and what could not be
//! read.

use std::fmt::Write as _;

use linerate_facts::{
    Diagnostics, FecMode, Inventory, Module, PciFunction, PhyQuery, Port, PortPhy, Thresholds,
    UnreadWhy, VfLinkState,
};
use linerate_units::fmt_num;

use crate::Style;

const IND: &str = "    ";

fn row(out: &mut String, style: Style, label: &str, text: &str) {
    let _ = writeln!(out, "{IND}{:<10} {text}", style.dim(label));
}

fn opt(v: Option<u32>) -> String {
    v.map_or("?".into(), |x| x.to_string())
}

/// Every line below port `p` (nothing when nothing was read).
pub fn phy_lines(out: &mut String, inv: &Inventory, p: &Port, style: Style) {
    let phy = p.netdev.as_deref().and_then(|n| inv.phy(n));
    if let Some(ph) = phy {
        if let Some(m) = &ph.module {
            module_lines(out, m, style);
        }
        link_fec(out, ph, style);
        queues(out, ph, style);
        vfs(out, ph, style);
        unread(out, ph, style);
    }
    if let Some(f) = inv.port_pci(p) {
        sensors(out, f, style);
        sriov(out, inv, f, style);
    }
}

fn module_lines(out: &mut String, m: &Module, style: Style) {
    let mut s = format!("{}   {} {}", m.name(), m.form_factor, m.standard.as_str());
    let _ = write!(s, "   {}", m.media.as_str());
    if let Some(w) = m.wavelength_nm {
        let _ = write!(s, " {} nm", fmt_num(w));
    }
    if let Some(l) = m.cable_length_m {
        let _ = write!(s, ", {} m", fmt_num(l));
    }
    if let Some(r) = m.reach_m.values().copied().reduce(f64::max) {
        if m.cable_length_m.is_none() {
            let _ = write!(
                s,
                ", reach {}",
                if r >= 1000.0 {
                    format!("{} km", fmt_num(r / 1000.0))
                } else {
                    format!("{} m", fmt_num(r))
                }
            );
        }
    }
    if let Some(n) = m.nominal_lane_mbd {
        let _ = write!(s, "   {} GBd/lane", fmt_num(f64::from(n) / 1000.0));
    }
    if let Some(g) = m.max_gbps {
        let _ = write!(s, "   up to {} Gb/s", fmt_num(g));
    }
    if let Some(st) = &m.module_state {
        let _ = write!(s, "   {st}");
    }
    row(out, style, "module", &s);
    if !m.interfaces.is_empty() {
        row(out, style, "", &m.interfaces.join(", "));
    }
    if let Some(d) = &m.diagnostics {
        diagnostics(out, d, style);
    }
    if let Some(n) = &m.diagnostics_note {
        row(out, style, "", &style.dim(n));
    }
}

fn warn_of(t: Option<Thresholds>, unit: &str) -> String {
    t.map_or(String::new(), |t| {
        format!(
            " (warn {}-{}{unit})",
            fmt_num(t.low_warning),
            fmt_num(t.high_warning)
        )
    })
}

fn diagnostics(out: &mut String, d: &Diagnostics, style: Style) {
    let mut s = String::new();
    if let Some(t) = d.temperature_c {
        let _ = write!(s, "{t:.2} °C{}", warn_of(d.temperature_thresholds_c, " °C"));
    }
    if let Some(v) = d.supply_v {
        let _ = write!(s, "   {v:.4} V{}", warn_of(d.supply_thresholds_v, " V"));
    }
    if !s.is_empty() {
        row(out, style, "", s.trim_start());
    }
    let dbm = |x: Option<f64>| x.map_or("-inf dBm".to_string(), |d| format!("{d:.2} dBm"));
    for l in &d.lanes {
        let mut s = format!("lane {:<2}", l.lane);
        if let Some(b) = l.tx_bias_ma {
            let _ = write!(s, "  bias {b:.3} mA");
        }
        if let Some(p) = l.tx_power_mw {
            let _ = write!(s, "  Tx {p:.4} mW {}", dbm(l.tx_power_dbm));
        }
        if let Some(p) = l.rx_power_mw {
            let _ = write!(s, "  Rx {p:.4} mW {}", dbm(l.rx_power_dbm));
        }
        row(out, style, "", &s);
    }
    if let Some(t) = d.rx_power_thresholds_mw {
        row(
            out,
            style,
            "",
            &format!(
                "Rx thresholds: low alarm {:.4} mW, low warning {:.4} mW, high warning {:.4} mW",
                t.low_alarm, t.low_warning, t.high_warning
            ),
        );
    }
}

fn link_fec(out: &mut String, ph: &PortPhy, style: Style) {
    if let Some(l) = &ph.link_modes {
        let mut s = String::new();
        if let Some(sp) = l.speed_mbps {
            let _ = write!(s, "{sp} Mb/s");
        }
        if let Some(n) = l.lanes {
            let _ = write!(s, " over {n} lane(s)");
        }
        if let Some(a) = l.autoneg {
            let _ = write!(s, "   autoneg {}", if a { "on" } else { "off" });
        }
        if !l.advertised.is_empty() {
            let _ = write!(s, "   advertised {}", l.advertised.join(" "));
        }
        if !l.partner.is_empty() {
            let _ = write!(s, "   partner {}", l.partner.join(" "));
        }
        if !s.is_empty() {
            row(out, style, "link modes", s.trim_start());
        }
    }
    if let Some(f) = &ph.fec {
        let mut s = match f.active {
            Some(FecMode::None) => "no FEC active".to_string(),
            Some(m) => format!("{} active", m.as_str()),
            None => "active FEC unknown".to_string(),
        };
        if !f.configured.is_empty() {
            let c: Vec<&str> = f.configured.iter().map(|m| m.as_str()).collect();
            let _ = write!(s, " (configured {})", c.join(", "));
        }
        if let Some(c) = f.corrected_blocks {
            let _ = write!(s, "   {c} corrected");
        }
        if let Some(u) = f.uncorrectable_blocks {
            let _ = write!(s, ", {u} uncorrectable blocks");
        }
        row(out, style, "fec", &s);
    }
}

fn queues(out: &mut String, ph: &PortPhy, style: Style) {
    let mut s = String::new();
    if let Some(r) = &ph.rings {
        let _ = write!(
            s,
            "rings rx {}/{} tx {}/{}",
            opt(r.rx),
            opt(r.rx_max),
            opt(r.tx),
            opt(r.tx_max)
        );
    }
    if let Some(c) = &ph.channels {
        let _ = write!(
            s,
            "   queues {}/{}",
            opt(c.rx_queues()),
            opt(c.rx_queues_max())
        );
    }
    if let Some(c) = &ph.coalesce {
        let adaptive = if c.adaptive_rx == Some(true) {
            " adaptive"
        } else {
            ""
        };
        let _ = write!(s, "   rx coalesce {} µs{adaptive}", opt(c.rx_usecs));
    }
    if let Some(p) = &ph.pause {
        let on = |b: Option<bool>| match b {
            Some(true) => "on",
            Some(false) => "off",
            None => "?",
        };
        let _ = write!(s, "   pause rx {} tx {}", on(p.rx), on(p.tx));
        if let (Some(r), Some(t)) = (p.rx_frames, p.tx_frames) {
            let _ = write!(s, " ({r} received, {t} sent)");
        }
    }
    if !s.is_empty() {
        row(out, style, "queues", s.trim_start());
    }
    let drops: Vec<String> = ph
        .ring_drops
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !drops.is_empty() {
        row(out, style, "ring drops", &drops.join(", "));
    }
}

fn vfs(out: &mut String, ph: &PortPhy, style: Style) {
    for v in &ph.vfs {
        let mut s = format!("vf {}", v.index);
        if let Some(m) = &v.mac {
            let _ = write!(s, "  {m}");
        }
        if let Some(vl) = v.vlan {
            let _ = write!(s, "  vlan {vl}");
        }
        if let Some(r) = v.max_tx_rate_mbps {
            let _ = write!(s, "  max_tx_rate {r} Mb/s");
        }
        match v.link_state {
            Some(VfLinkState::Disable) => s.push_str("  link forced down"),
            Some(VfLinkState::Enable) => s.push_str("  link forced up"),
            _ => {}
        }
        row(out, style, "vf", &s);
    }
}

fn unread(out: &mut String, ph: &PortPhy, style: Style) {
    for u in &ph.unread {
        let what = match u.why {
            UnreadWhy::Unsupported => "the driver does not implement it".to_string(),
            UnreadWhy::Privilege if u.what == PhyQuery::Module => {
                format!(
                    "needs CAP_NET_ADMIN: `sudo {}`",
                    u.what.ethtool_command(&ph.netdev)
                )
            }
            _ => u.detail.clone(),
        };
        row(
            out,
            style,
            "",
            &style.dim(&format!("{} not read: {what}", u.what.as_str())),
        );
    }
}

fn sensors(out: &mut String, f: &PciFunction, style: Style) {
    for s in &f.hwmon {
        let Some(t) = s.input_c else { continue };
        let mut line = format!(
            "{} {}{} {t:.1} °C",
            s.chip.as_deref().unwrap_or("hwmon"),
            s.sensor,
            s.label
                .as_deref()
                .map_or(String::new(), |l| format!(" ({l})"))
        );
        if let Some(m) = s.max_c {
            let _ = write!(line, "  max {m:.1}");
        }
        if let Some(c) = s.crit_c {
            let _ = write!(line, "  crit {c:.1}");
        }
        if let Some(h) = s.highest_c {
            let _ = write!(line, "  highest {h:.1}");
        }
        row(out, style, "sensor", &line);
    }
}

fn sriov(out: &mut String, inv: &Inventory, f: &PciFunction, style: Style) {
    if let Some(s) = &f.sriov {
        row(
            out,
            style,
            "sr-iov",
            &format!(
                "{} of {} VFs enabled{}",
                opt(s.num_vfs),
                opt(s.total_vfs),
                if s.vfs.is_empty() {
                    String::new()
                } else {
                    format!(
                        ": {}",
                        s.vfs
                            .iter()
                            .map(|v| format!("vf {} {}", v.index, v.address))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
        );
    }
    if let Some((pf, index)) = inv.vf_parent(f) {
        row(
            out,
            style,
            "sr-iov",
            &format!("virtual function {index} of {}", pf.address),
        );
    } else if f.is_virtual_function() {
        row(
            out,
            style,
            "sr-iov",
            "virtual function (its physical function is not on this host)",
        );
    }
}
