//! PCIe rules: downtrained links, narrow slots, PCIe as the bottleneck, missing link data.

use linerate_facts::{
    Finding, FindingId, Inventory, PciFunction, PortAnalysis, PortKind, Severity,
};
use linerate_model::pcie::ASSUMED_MPS;
use linerate_model::{LimitedBy, PcieLink};
use linerate_units::fmt_num;

fn attr(f: &PciFunction, name: &str) -> String {
    format!("/sys/bus/pci/devices/{}/{name}", f.address)
}

/// A speed file's value as the kernel printed it (`5.0 GT/s PCIe`, or `5 GT/s` before v5.7);
/// the parsed speed only if the text was not kept.
fn speed_evidence(verbatim: Option<&String>, l: PcieLink) -> String {
    verbatim.map_or_else(
        || format!("{} GT/s", fmt_num(l.gen.gt_per_s())),
        String::clone,
    )
}

fn link_evidence(mut x: Finding, f: &PciFunction) -> Finding {
    let files = &f.link.verbatim;
    if let Some(l) = f.link.current() {
        x = x
            .evidence(
                attr(f, "current_link_speed"),
                speed_evidence(files.current_speed.as_ref(), l),
            )
            .evidence(attr(f, "current_link_width"), l.width);
    }
    if let Some(m) = f.link.max() {
        x = x
            .evidence(
                attr(f, "max_link_speed"),
                speed_evidence(files.max_speed.as_ref(), m),
            )
            .evidence(attr(f, "max_link_width"), m.width);
    }
    if let Some((s, addr)) = f.slot_max() {
        let slot_speed = f
            .upstream_port(addr)
            .and_then(|u| u.link.verbatim.max_speed.as_ref());
        x = x
            .evidence(
                format!("/sys/bus/pci/devices/{addr}/max_link_speed"),
                speed_evidence(slot_speed, s),
            )
            .evidence(
                format!("/sys/bus/pci/devices/{addr}/max_link_width"),
                s.width,
            );
    }
    x
}

/// The highest link data rate among the function's ports that have a physical link.
fn port_link_rates<'a>(
    inv: &'a Inventory,
    analysis: &'a [PortAnalysis],
    f: &PciFunction,
) -> Vec<(&'a str, f64)> {
    inv.ports
        .iter()
        .zip(analysis)
        .filter(|(p, _)| p.pci.as_deref() == Some(f.address.as_str()))
        .filter_map(|(p, a)| {
            let c = &a.ceiling;
            // data rate of the link stage (encoding stage gbps), if the physical link is up
            let link_up = matches!(
                c.limited_by,
                LimitedBy::Link
                    | LimitedBy::Encoding
                    | LimitedBy::Pcie
                    | LimitedBy::Mtu
                    | LimitedBy::NoSubnetManager
            );
            let data = c
                .chain
                .iter()
                .find(|s| s.stage == linerate_model::StageKind::Encoding)?
                .gbps;
            link_up.then_some((p.name.as_str(), data))
        })
        .collect()
}

/// A PCI function with no physical-link ports to speak for (a virtual function, or only
/// paravirtual and software ports): no PCIe rule applies.
fn skipped(inv: &Inventory, f: &PciFunction) -> bool {
    if f.is_virtual_function() {
        return true;
    }
    inv.ports
        .iter()
        .filter(|p| p.pci.as_deref() == Some(f.address.as_str()))
        .all(|p| {
            matches!(p.kind, PortKind::Paravirtual | PortKind::Virtual)
                // A soft RDMA device over a paravirtual NIC: the NIC speaks for the function.
                || inv.port_netdev(p).is_some_and(|n| n.paravirtual)
        })
}

/// `sysfs.unreadable`: no link attributes at all.
fn no_link_files(f: &PciFunction) -> Finding {
    Finding::new(FindingId::SysfsUnreadable, Severity::Info, &f.address)
        .evidence(attr(f, "current_link_speed"), "missing")
        .message(format!(
            "{} has no PCIe link attributes: they appeared in Linux 4.13 (commit 56c1af4606f0), so the kernel is older or this is not a PCIe device; the PCIe stage of the ceiling is unknown",
            f.address
        ))
        .fix("Read the link with `lspci -vv -s ADDRESS | grep Lnk` (as root), or use a newer kernel.")
}

/// `pcie.link_down`: the link reports no speed or zero width.
fn link_down(f: &PciFunction) -> Option<Finding> {
    let down = !f.link.integrated && f.link.current_width == Some(0)
        || f.link.current_speed == Some(linerate_model::PcieSpeed::Unknown);
    down.then(|| {
        link_evidence(Finding::new(FindingId::PcieLinkDown, Severity::Warning, &f.address), f)
            .evidence(attr(f, "current_link_width"), f.link.current_width.map_or("?".into(), |w| w.to_string()))
            .message(format!("{}: the PCIe link reports no speed or zero width: the device is powered down (D3) or its link failed", f.address))
            .fix("Check `lspci -vv` as root and dmesg for AER errors; reseat the card; disable runtime power management for it (echo on > power/control).")
    })
}

/// The link of one PCI function with both its current and maximum link known.
struct Link<'a> {
    f: &'a PciFunction,
    cur: PcieLink,
    /// What the card can do.
    max: PcieLink,
    /// The slot's maximum and the slot's address, when the slot is known.
    slot: Option<(PcieLink, &'a str)>,
    /// The link in effect (the narrowest hop up to the root port).
    eff: PcieLink,
    /// Payload Gb/s of the link in effect.
    payload: f64,
    /// Link data rate of each of the function's ports that has a physical link.
    rates: Vec<(&'a str, f64)>,
    /// A single port's link carries more than PCIe.
    is_bottleneck: bool,
}

/// `pcie.downtrained`: the link trained below what both the card and the slot can do.
fn downtrained(l: &Link<'_>) -> Option<Finding> {
    let possible = l.slot.map_or(l.max, |(s, _)| l.max.min(s));
    let (f, cur) = (l.f, l.cur);
    (cur.width < possible.width || cur.gen < possible.gen).then(|| {
        link_evidence(Finding::new(FindingId::PcieDowntrained, Severity::Warning, &f.address), f)
            .message(format!(
                "{} negotiated {} although the card and the slot both support {}: the link trained below its capability (about {} Gb/s of payload instead of {})",
                f.address,
                cur.label(),
                possible.label(),
                fmt_num(cur.payload_gbps(ASSUMED_MPS)),
                fmt_num(possible.payload_gbps(ASSUMED_MPS)),
            ))
            .fix("Reseat the card; check or replace the riser or M.2 adapter; clean the edge connector; check the slot's BIOS setting (link speed, bifurcation); look for AER errors in dmesg.")
    })
}

/// `pcie.slot_limited`: the card runs at its slot's narrower or slower maximum.
fn slot_limited(l: &Link<'_>) -> Option<Finding> {
    let (s, addr) = l.slot?;
    let (f, cur, max) = (l.f, l.cur, l.max);
    let narrower = max.width > s.width && cur.width == s.width;
    let slower = max.gen > s.gen && cur.gen == s.gen;
    if !(narrower || slower) {
        return None;
    }
    let sev = if l.is_bottleneck {
        Severity::Warning
    } else {
        Severity::Info
    };
    let what = match (narrower, slower) {
        (true, true) => "narrower and slower",
        (true, false) => "narrower",
        _ => "slower",
    };
    Some(
        link_evidence(Finding::new(FindingId::PcieSlotLimited, sev, &f.address), f)
            .message(format!(
                "the card can do {} but its slot ({addr}) is {what}: {}. {}",
                max.label(),
                s.label(),
                if l.is_bottleneck {
                    format!("This caps the port at about {} Gb/s.", fmt_num(l.payload))
                } else {
                    format!("PCIe still carries about {} Gb/s, more than the link needs.", fmt_num(l.payload))
                }
            ))
            .fix(format!(
                "Move the card to a slot wired for {} (check the board manual: many x16-sized slots are wired x4 or hang off the chipset); an M.2 adapter gives at most x4.",
                max.label()
            )),
    )
}

/// `pcie.bottleneck`: PCIe carries less than one port's link (warning), or than all the
/// card's ports together (info).
fn bottleneck(l: &Link<'_>) -> Option<Finding> {
    let (f, eff, payload) = (l.f, l.eff, l.payload);
    if l.is_bottleneck {
        let (port, link) = l
            .rates
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .copied()
            .unwrap_or(("?", 0.0));
        return Some(
            link_evidence(Finding::new(FindingId::PcieBottleneck, Severity::Warning, &f.address), f)
                .evidence("ceiling.link_gbps", fmt_num(link))
                .evidence("ceiling.pcie_payload_gbps", fmt_num(payload))
                .message(format!(
                    "{} carries about {} Gb/s of payload (max payload {} B assumed), below the {} Gb/s the link of {port} carries: PCIe caps it at {:.0}% of the link",
                    eff.label(),
                    fmt_num(payload),
                    ASSUMED_MPS,
                    fmt_num(link),
                    payload / link * 100.0
                ))
                .fix(pcie_fix(link, eff, l.max)),
        );
    }
    let total: f64 = l.rates.iter().map(|(_, r)| r).sum();
    (l.rates.len() > 1 && total > payload).then(|| {
        link_evidence(Finding::new(FindingId::PcieBottleneck, Severity::Info, &f.address), f)
            .evidence("ceiling.ports_total_gbps", fmt_num(total))
            .evidence("ceiling.pcie_payload_gbps", fmt_num(payload))
            .message(format!(
                "each port alone fits, but all {} ports at once ({} Gb/s) exceed the {} Gb/s of payload {} carries",
                l.rates.len(),
                fmt_num(total),
                fmt_num(payload),
                eff.label()
            ))
            .fix("Expect the ports to share PCIe when driven together; use one port per card for full rate, or a card with a wider PCIe interface.")
    })
}

pub fn rules(inv: &Inventory, analysis: &[PortAnalysis], out: &mut Vec<Finding>) {
    for f in &inv.pci {
        if skipped(inv, f) {
            continue;
        }
        if !f.link.present {
            out.push(no_link_files(f));
            continue;
        }
        let (Some(cur), Some(max)) = (f.link.current(), f.link.max()) else {
            out.extend(link_down(f));
            continue;
        };
        let rates = port_link_rates(inv, analysis, f);
        let best_link = rates.iter().map(|(_, r)| *r).fold(0.0_f64, f64::max);
        let eff = f.effective_link().unwrap_or(cur);
        let payload = eff.payload_gbps(ASSUMED_MPS);
        let link = Link {
            f,
            cur,
            max,
            slot: f.slot_max(),
            eff,
            payload,
            rates,
            is_bottleneck: best_link > payload,
        };
        out.extend(downtrained(&link));
        out.extend(slot_limited(&link));
        out.extend(bottleneck(&link));
    }
}

fn pcie_fix(link_gbps: f64, have: PcieLink, card: PcieLink) -> String {
    let card_payload = card.payload_gbps(ASSUMED_MPS);
    if card_payload < link_gbps {
        let best = if have == card {
            String::new()
        } else {
            format!(" Its best is a slot wired for {} or better.", card.label())
        };
        return format!(
            "The card's own interface, {}, carries about {} Gb/s, below its link rate: this card cannot reach line rate in any slot.{best} Nothing in software recovers PCIe bandwidth.",
            card.label(),
            fmt_num(linerate_units::r1(card_payload))
        );
    }
    // The smallest link of the card's generation that carries the link rate.
    let need = [1u8, 2, 4, 8, 16, 32]
        .into_iter()
        .map(|w| PcieLink::new(card.gen.min(have.gen.max(card.gen)), w))
        .find(|l| l.width <= card.width && l.payload_gbps(ASSUMED_MPS) >= link_gbps);
    match need {
        Some(l) => format!(
            "Put the card in a slot wired for at least {} (the card supports {}); nothing in software recovers PCIe bandwidth.",
            l.label(),
            card.label()
        ),
        None => format!(
            "Put the card in a slot wired for {}; nothing in software recovers PCIe bandwidth.",
            card.label()
        ),
    }
}
