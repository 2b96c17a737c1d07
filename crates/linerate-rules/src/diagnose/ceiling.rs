//! The ceiling: `ceiling.exceeded` (a stream beat the host stack's bound, so it is not judged
//! against it), and the judgement over the other rules' findings: `ceiling.reached` when the
//! judged result reaches its ceiling, else `unexplained` when nothing found explains the gap
//! (`net.paravirtual` in its place when a paravirtual NIC carries the path).

use linerate_facts::{Cause, Finding, FindingId, Severity};
use linerate_units::fmt_round;

use super::context::{stack_beaten, Ctx};
use super::input::dir_name;
use super::loss::loss_elsewhere;
use super::rdma::ip_stack_explains;
use super::registry::{rule, Found, FromFacts, FromFindings};

/// `ceiling.exceeded`: a stream beat the host stack's bound, which holds by construction
/// (each core copies each byte at most at its copy rate), so the copy rate fed into it was
/// measured too low. Said out loud, and the result is judged as having no known ceiling.
impl FromFacts for rule::CeilingExceeded {
    type Output = Option<Finding>;

    fn run(self, c: &Ctx<'_>) -> Option<Finding> {
        if c.pc.gbps.is_some() {
            // The judged direction has a hardware or shaper ceiling: the bound was not used.
            return None;
        }
        let (t, h) = stack_beaten(c.i)?;
        Some(
            Finding::new(FindingId::CeilingExceeded, Severity::Info, "path")
                .evidence("measured (Gb/s)", fmt_round(t.gbps, 2))
                .evidence("host stack bound (Gb/s)", fmt_round(h.gbps, 2))
                .evidence("basis", &h.explain)
                .message(format!(
                    "one TCP stream ({} direction) carried {} Gb/s, above the {} Gb/s the host stack's memory copies allow ({}): the copy rate was measured too low (a busy moment), so the result is not judged against it",
                    dir_name(t.direction),
                    fmt_round(t.gbps, 2),
                    fmt_round(h.gbps, 2),
                    h.basis
                ))
                .fix("Run doctor again on an idle machine for a ceiling to judge against; nothing on the path needs fixing."),
        )
    }
}

/// `ceiling.reached` when the judged result reaches its ceiling; `unexplained` when it stays
/// below and no finding explains the gap. Nothing when a port is down (its finding says it all).
impl FromFindings for rule::CeilingOrUnexplained {
    type Output = Option<Finding>;

    fn run(self, c: &Ctx<'_>, found: &Found) -> Option<Finding> {
        let (out, checked) = (&found.findings, &found.checked);
        if c.any_port_down() {
            return None;
        }
        let attributed = out.iter().any(|f| {
            f.severity >= Severity::Warning && f.id.explains_gap() && !loss_elsewhere(c, f)
                || ip_stack_explains(f)
        });
        let pc = &c.pc;
        if let Some(f) = paravirtual(c, attributed, checked) {
            return Some(f);
        }
        match (pc.gbps, c.best) {
            (Some(g), Some(t)) if c.reached() => Some(
                Finding::new(FindingId::CeilingReached, Severity::Info, "path")
                    .evidence("gbps", fmt_round(t.gbps, 2))
                    .evidence("ceiling_gbps", fmt_round(g, 2))
                    .message(format!(
                        "{} of {} Gb/s ({:.0}%), limited by {}",
                        fmt_round(t.gbps, 2),
                        fmt_round(g, 2),
                        t.gbps / g * 100.0,
                        pc.why
                    ))
                    .fix(if pc.per_stream {
                        "Nothing to fix for one stream: this is what one core pushes through the host's TCP stack; use more streams for more."
                    } else if pc.limited_by == Cause::Shaper {
                        "The traffic shaper sets this rate: raise or remove it if that is not intended (see net.shaper)."
                    } else {
                        "Nothing to fix in software: this is what the hardware carries."
                    }),
            ),
            (Some(g), Some(t)) if !attributed => Some(
                Finding::new(
                    FindingId::Unexplained,
                    // A virtual path's ceiling is an upper bound: missing it is worth a note, not a warning.
                    if pc.per_stream { Severity::Info } else { Severity::Warning },
                    "path",
                )
                    .evidence("gbps", fmt_round(t.gbps, 2))
                    .evidence("ceiling_gbps", fmt_round(g, 2))
                    .message(format!(
                        "{} Gb/s is {:.0}% of the {} Gb/s ceiling and no check explains the gap. Checked: {}",
                        fmt_round(t.gbps, 2),
                        t.gbps / g * 100.0,
                        fmt_round(g, 2),
                        checked.join("; ")
                    ))
                    .fix("Look at the switch (port counters, congestion, other traffic), the NIC's firmware and offloads (`ethtool -k`, `ethtool -S`), IRQ placement (`/proc/interrupts`), and run doctor --thorough."),
            ),
            // `ceiling.exceeded` already says why there is no ceiling to judge against.
            (None, Some(t))
                if t.gbps > 0.0
                    && !attributed
                    && !out.iter().any(|f| f.id == FindingId::CeilingExceeded) =>
            {
                Some(
                    Finding::new(FindingId::Unexplained, Severity::Info, "path")
                        .message(format!(
                            "no ceiling is known for this path, so the result cannot be judged against one. Checked: {}",
                            checked.join("; ")
                        ))
                        .fix("Run probe on both ends; a virtual interface has no hardware ceiling."),
                )
            }
            _ => None,
        }
    }
}

/// On a path with no hardware ceiling where an end is a paravirtual NIC, the result below the
/// host stack's bound that nothing in the guests explains: the hypervisor carries the traffic
/// and sets the ceiling (its device emulation, the host's CPUs and its other guests), which the
/// guests cannot see. Said instead of `unexplained`.
fn paravirtual(c: &Ctx<'_>, attributed: bool, checked: &[String]) -> Option<Finding> {
    let drivers: Vec<(&str, &str)> = c
        .ends
        .iter()
        .filter_map(|(end, f)| f.paravirtual.as_deref().map(|d| (*end, d)))
        .collect();
    let t = c.best.filter(|t| t.gbps > 0.0)?;
    let hardware = c.pc.gbps.is_some() && !c.pc.per_stream;
    if drivers.is_empty() || hardware || attributed || c.reached() {
        return None;
    }
    let which = match drivers.as_slice() {
        [(_, d)] if c.ends.len() == 1 => format!("{d} on this host"),
        [(_, a), (_, b)] if a == b => format!("{a} on both ends"),
        _ => drivers
            .iter()
            .map(|(end, d)| format!("{d} on the {end} end"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut f = Finding::new(FindingId::NetParavirtual, Severity::Warning, "path")
        .evidence("gbps", fmt_round(t.gbps, 2));
    for (end, d) in &drivers {
        f = f.evidence(format!("{end} driver"), *d);
    }
    let bound = match c.pc.gbps {
        Some(g) => {
            f = f.evidence("host stack bound (Gb/s)", fmt_round(g, 2));
            format!(
                ", {:.0}% of the {} Gb/s the host's TCP stack could carry,",
                t.gbps / g * 100.0,
                fmt_round(g, 2)
            )
        }
        None => String::new(),
    };
    Some(
        f.message(format!(
            "the hypervisor's paravirtual NIC ({which}): it carries this path's traffic and sets its ceiling, which no guest can read; {} Gb/s{bound} and no check inside the guests explains the gap. Checked: {}",
            fmt_round(t.gbps, 2),
            checked.join("; ")
        ))
        .fix("Measure on the host that runs the guests: its CPUs and other guests during the test, vhost-net (`-netdev tap,vhost=on`) and multiqueue virtio (`queues=N`) rather than emulation in QEMU's main thread, the host bridge or switch; under pure emulation (QEMU TCG, no KVM) every packet costs host CPU the guests do not see."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{guest, input, nic, one, run, tcp, veth, with_id};
    use crate::diagnose::{DiagnoseInput, Measured};
    use linerate_model::{HostStackCeiling, LimitedBy};
    use linerate_proto::Direction;

    fn nics(tests: Vec<Measured>) -> DiagnoseInput {
        input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), tests)
    }

    fn stack(mut i: DiagnoseInput, gbps: f64) -> DiagnoseInput {
        i.host_stack = Some(HostStackCeiling {
            gbps,
            copies_per_core: 1,
            basis: "one memory copy per byte on each of 2 cores at 2.5 GB/s".into(),
            explain: format!("at most {gbps} Gb/s"),
        });
        i
    }

    #[test]
    fn a_result_at_its_ceiling_names_what_limits_it() {
        let d = run(&nics(vec![tcp(Direction::Send, 1, 9.0)]));
        let f = one(&d, FindingId::CeilingReached);
        assert_eq!(
            f.message,
            "9 of 9.4 Gb/s (96%), limited by the local link rate"
        );
        assert_eq!(
            f.fix,
            "Nothing to fix in software: this is what the hardware carries."
        );
        assert!(with_id(&d, FindingId::Unexplained).is_empty());
    }

    #[test]
    fn below_it_with_nothing_found_is_unexplained_with_what_was_checked() {
        let d = run(&nics(vec![tcp(Direction::Send, 1, 5.0)]));
        let f = one(&d, FindingId::Unexplained);
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message
                .starts_with("5 Gb/s is 53% of the 9.4 Gb/s ceiling"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .ends_with(&format!("Checked: {}", d.checked.join("; "))),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_warning_that_explains_the_gap_leaves_nothing_unexplained() {
        let busy = Measured {
            sender_cpu_percent: Some(99.0),
            ..tcp(Direction::Send, 1, 5.0)
        };
        let d = run(&nics(vec![busy]));
        assert_eq!(with_id(&d, FindingId::CpuSaturated).len(), 1);
        assert!(with_id(&d, FindingId::Unexplained).is_empty());
        assert!(with_id(&d, FindingId::CeilingReached).is_empty());
    }

    #[test]
    fn a_port_down_is_left_to_its_own_finding() {
        let mut down = nic("eth0", 0.0);
        down.ceiling.as_mut().unwrap().limited_by = LimitedBy::PortDown;
        let i = input(
            down,
            Some(nic("eth1", 10.0)),
            vec![tcp(Direction::Send, 1, 0.0)],
        );
        let c = Ctx::new(&i);
        assert!(rule::CeilingOrUnexplained
            .run(&c, &Found::default())
            .is_none());
    }

    #[test]
    fn a_stream_that_beat_the_bound_is_said_not_judged() {
        let d = run(&stack(
            input(veth("veth0"), None, vec![tcp(Direction::Send, 1, 25.0)]),
            20.0,
        ));
        let f = one(&d, FindingId::CeilingExceeded);
        assert!(
            f.message
                .starts_with("one TCP stream (send direction) carried 25 Gb/s, above the 20 Gb/s"),
            "{}",
            f.message
        );
        // `ceiling.exceeded` already says why there is no ceiling to judge against.
        assert!(with_id(&d, FindingId::Unexplained).is_empty());
        // A path with a hardware ceiling never used the bound.
        let nic_path = stack(nics(vec![tcp(Direction::Send, 1, 9.0)]), 5.0);
        assert!(rule::CeilingExceeded.run(&Ctx::new(&nic_path)).is_none());
    }

    #[test]
    fn a_paravirtual_nic_below_the_stacks_bound_is_the_hypervisors() {
        let i = stack(
            input(
                guest("enp1s0"),
                Some(guest("enp1s0")),
                vec![tcp(Direction::Send, 1, 2.0)],
            ),
            20.0,
        );
        let d = run(&i);
        let f = one(&d, FindingId::NetParavirtual);
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message
                .starts_with("the hypervisor's paravirtual NIC (virtio_net on both ends)"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains(", 10% of the 20 Gb/s the host's TCP stack could carry,"),
            "{}",
            f.message
        );
        assert!(with_id(&d, FindingId::Unexplained).is_empty());
        // A veth path below the bound is a note: the bound is an upper bound.
        let veths = stack(
            input(
                veth("veth0"),
                Some(veth("veth1")),
                vec![tcp(Direction::Send, 1, 2.0)],
            ),
            20.0,
        );
        assert_eq!(
            one(&run(&veths), FindingId::Unexplained).severity,
            Severity::Info
        );
    }
}
