//! What the rules share, computed once ([`Ctx`]): the ends, the judged direction (the slower),
//! the ceiling of the path in each direction and what sets it (the hardware, a shaper, or on a
//! virtual path the host stack's bound), the best results, and whether a test lost packets on
//! the path.

use linerate_facts::{Cause, EndFacts};
use linerate_model::{Ceiling, HostStackCeiling, LimitedBy, StageKind};
use linerate_proto::{Direction, TestKind};
use linerate_units::{bps_to_gbps, fmt_num};
use serde::Serialize;

use super::input::{DiagnoseInput, EndView, Loss, Measured};
use crate::thresholds::CEILING_REACHED_FRACTION;

/// Path ceiling for TCP and what sets it.
#[derive(Debug)]
pub(super) struct PathCeiling {
    pub(super) gbps: Option<f64>,
    pub(super) limited_by: Cause,
    pub(super) why: String,
    /// The ceiling is the host stack's bound for one stream (a path with no hardware ceiling):
    /// one stream is judged by it, not the best of several.
    pub(super) per_stream: bool,
}

/// The words for a hardware ceiling set at `end`.
fn hardware_words(c: &Ceiling, end: &str) -> String {
    match c.limited_by {
        LimitedBy::Pcie => {
            let link = c
                .chain
                .iter()
                .find(|s| s.stage == StageKind::PcieLink)
                .map_or("PCIe".to_string(), |s| {
                    s.explain.split(':').next().unwrap_or("PCIe").to_string()
                });
            format!("the {link} slot on the {end} end")
        }
        LimitedBy::Encoding => format!("the {end} link's 8b/10b line encoding"),
        LimitedBy::Mtu => format!("the {end} MTU"),
        LimitedBy::Link | LimitedBy::PortDown | LimitedBy::NoSubnetManager | LimitedBy::Unknown => {
            format!("the {end} link rate")
        }
    }
}

/// The TCP ceiling of the path in one direction (`Send`: local → remote, `Receive`: back).
/// Hardware ceilings bind both directions; a shaper only limits what leaves its end. With
/// neither, the host stack's bound for one stream, unless a stream beat it.
pub(super) fn path_ceiling(i: &DiagnoseInput, dir: Direction) -> PathCeiling {
    let mut best: Option<(f64, Cause, String)> = None;
    let consider = |best: &mut Option<(f64, Cause, String)>, g: f64, lb: Cause, why: String| {
        if best.as_ref().is_none_or(|b| g < b.0) {
            *best = Some((g, lb, why));
        }
    };
    for (end, f) in
        std::iter::once(("local", &i.local)).chain(i.remote.iter().map(|r| ("remote", r)))
    {
        if let (Some(g), Some(c)) = (f.tcp_ceiling(), &f.ceiling) {
            consider(&mut best, g, c.limited_by.into(), hardware_words(c, end));
        }
        let egress = match dir {
            Direction::Receive => end == "remote" || i.remote.is_none(),
            Direction::Send | Direction::Bidir => end == "local",
        };
        if let Some((g, s)) = f.shaper_goodput().filter(|_| egress) {
            consider(
                &mut best,
                g,
                Cause::Shaper,
                format!(
                    "a {} shaper at {} Gbit/s on the {end} {}",
                    s.kind,
                    fmt_num(bps_to_gbps(s.rate_bps as f64)),
                    f.netdev.as_deref().unwrap_or("interface")
                ),
            );
        }
    }
    if let Some((g, limited_by, why)) = best {
        return PathCeiling {
            gbps: Some(g),
            limited_by,
            why,
            per_stream: false,
        };
    }
    // No hardware ceiling (loopback, veth, bridge): the host stack's bound for one stream. A
    // stream above it proves its input too low; then there is no known ceiling, and
    // `ceiling.exceeded` says so.
    match i.host_stack.as_ref().filter(|_| stack_beaten(i).is_none()) {
        Some(h) => PathCeiling {
            gbps: Some(h.gbps),
            limited_by: Cause::Cpu,
            why: format!(
                "the host's memory copies (a virtual path has no hardware ceiling; {})",
                h.basis
            ),
            per_stream: true,
        },
        None => PathCeiling {
            gbps: None,
            limited_by: Cause::Unknown,
            why: "unknown".into(),
            per_stream: false,
        },
    }
}

/// The best single TCP stream in either direction when it beat the host stack's bound: the
/// bound's input (one core's copy rate) was measured too low, so the bound cannot be used.
pub(super) fn stack_beaten(i: &DiagnoseInput) -> Option<(&Measured, &HostStackCeiling)> {
    let h = i.host_stack.as_ref()?;
    i.tests
        .iter()
        .filter(|t| t.is_single_stream(Direction::Send) || t.is_single_stream(Direction::Receive))
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .filter(|t| t.gbps > h.gbps)
        .map(|t| (t, h))
}

/// Everything the rules share, computed once.
#[derive(Debug)]
pub(super) struct Ctx<'a> {
    pub(super) i: &'a DiagnoseInput,
    pub(super) ends: Vec<(&'static str, &'a EndFacts)>,
    /// Directions with a TCP bandwidth result (send, then receive).
    pub(super) dirs: Vec<Direction>,
    /// The judged direction: the slower (what the user feels), each against its own ceiling.
    pub(super) dir: Direction,
    /// The judged direction's ceiling.
    pub(super) pc: PathCeiling,
    /// Its best TCP result (one stream when the ceiling is the host stack's).
    pub(super) best: Option<&'a Measured>,
    /// Both ends without a physical link: no NIC, no cable.
    pub(super) virtual_path: bool,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(i: &'a DiagnoseInput) -> Self {
        let ends: Vec<(&'static str, &EndFacts)> = std::iter::once(("local", &i.local))
            .chain(i.remote.iter().map(|r| ("remote", r)))
            .collect();
        let dirs: Vec<Direction> = [Direction::Send, Direction::Receive]
            .into_iter()
            .filter(|d| i.tests.iter().any(|t| t.is_tcp_bw(*d)))
            .collect();
        let pick = |d: Direction| -> (PathCeiling, Option<&'a Measured>) {
            let pc = path_ceiling(i, d);
            let best = i
                .tests
                .iter()
                .filter(|t| t.is_tcp_bw(d) && (!pc.per_stream || t.streams == 1))
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps));
            (pc, best)
        };
        let (pc, best, dir) = dirs
            .iter()
            .map(|d| {
                let (pc, b) = pick(*d);
                (pc, b, *d)
            })
            .min_by(|a, b| {
                let g = |x: Option<&Measured>| x.map_or(0.0, |t| t.gbps);
                g(a.1).total_cmp(&g(b.1))
            })
            .unwrap_or_else(|| {
                let (pc, b) = pick(Direction::Send);
                (pc, b, Direction::Send)
            });
        let virtual_path =
            i.local.is_virtual() && i.remote.as_ref().is_none_or(EndFacts::is_virtual);
        Self {
            i,
            ends,
            dirs,
            dir,
            pc,
            best,
            virtual_path,
        }
    }

    pub(super) fn best_gbps(&self) -> f64 {
        self.best.map_or(0.0, |t| t.gbps)
    }

    /// The judged result reaches its ceiling ([`CEILING_REACHED_FRACTION`] of it).
    pub(super) fn reached(&self) -> bool {
        let b = self.best_gbps();
        self.pc
            .gbps
            .is_some_and(|c| b >= CEILING_REACHED_FRACTION * c)
    }

    /// The best multi-stream TCP result in direction `d`.
    pub(super) fn multi(&self, d: Direction) -> Option<&'a Measured> {
        self.i
            .tests
            .iter()
            .filter(|m| m.is_tcp_bw(d) && m.streams > 1)
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
    }

    /// Some end is down or waits for a subnet manager: no traffic can pass.
    pub(super) fn any_port_down(&self) -> bool {
        self.ends.iter().any(|(_, f)| f.port_down())
    }
}

/// The best TCP result in direction `d` reaches that direction's ceiling.
pub(super) fn direction_reached(c: &Ctx<'_>, d: Direction) -> bool {
    let pc = path_ceiling(c.i, d);
    let best =
        c.i.tests
            .iter()
            .filter(|t| t.is_tcp_bw(d) && t.error.is_none() && (!pc.per_stream || t.streams == 1))
            .map(|t| t.gbps)
            .fold(0.0_f64, f64::max);
    pc.gbps
        .is_some_and(|g| g > 0.0 && best >= CEILING_REACHED_FRACTION * g)
}

/// The best TCP result of all: every stream count, both directions, not a `--discard` run,
/// not one that failed. The one figure every output calls "network, best TCP result" (the
/// pyramid's network row), chosen here only; the verdict's own figure (`DoctorVerdict::test`:
/// one stream on a virtual path, the slower direction) is named by its test and may be smaller.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestTcp {
    pub gbps: f64,
    /// The test whose result it is, in words (`TCP send, 2 streams`).
    pub test: String,
    /// What the path can carry in that test's direction, Gb/s, when known.
    pub ceiling_gbps: Option<f64>,
}

/// The best TCP result of all ([`BestTcp`]); `None` when no TCP test completed.
pub fn best_tcp(i: &DiagnoseInput) -> Option<BestTcp> {
    i.tests
        .iter()
        .filter(|t| t.is_tcp_result())
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .map(|t| BestTcp {
            gbps: t.gbps,
            test: t.words(),
            ceiling_gbps: path_ceiling(i, t.direction).gbps,
        })
}

/// A UDP test's loss that the path did not cause: every TCP test of the same direction
/// retransmitted under a tenth of its loss rate (and under the line of [`RETRANSMITS_MIN`] and
/// [`RETRANSMIT_RATE`]), one of them at least at its rate. What the path carries for TCP it
/// carries for UDP; a UDP sender is not paced by its receiver as TCP's is, so a slow receiver
/// (the lab's emulated guests: 3% of datagrams with TCP losing none) overflows its socket
/// buffer or its receive ring. Returns the fastest such TCP test.
pub(super) fn udp_loss_at_receiver<'a>(c: &Ctx<'a>, t: &Measured) -> Option<&'a Measured> {
    let loss = t.loss_percent.filter(|_| t.kind == TestKind::UdpBw)?;
    let tcp: Vec<&Measured> =
        c.i.tests
            .iter()
            .filter(|x| x.is_tcp_bw(t.direction) && x.error.is_none())
            .collect();
    let clean = |x: &Measured| {
        let l = Loss::of(x);
        !l.rtx_over && l.rtx.is_some_and(|(_, rate)| rate * 100.0 < loss / 10.0)
    };
    if !tcp.iter().all(|x| clean(x)) {
        return None;
    }
    tcp.into_iter()
        .filter(|x| x.gbps >= t.gbps)
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
}

/// A UDP test's loss that the receiving host counted itself: its datagrams dropped for a full
/// socket buffer (`RcvbufErrors`, host-wide, over the test) are at least half of those lost.
/// The figure it counted; None for other tests, or where the receiver did not read it.
pub(super) fn udp_rcvbuf_drops(t: &Measured) -> Option<u64> {
    if t.kind != TestKind::UdpBw {
        return None;
    }
    let drops = t.receiver_udp?.rcvbuf_errors;
    let lost = t.lost_packets?;
    (drops > 0 && drops.saturating_mul(2) >= lost).then_some(drops)
}

/// A test lost packets on the path (not only at a UDP receiver: [`udp_loss_at_receiver`],
/// [`udp_rcvbuf_drops`]).
pub(super) fn path_lossy(c: &Ctx<'_>, t: &Measured) -> bool {
    let l = Loss::of(t);
    l.rtx_over
        || (l.udp_over && udp_loss_at_receiver(c, t).is_none() && udp_rcvbuf_drops(t).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic, tcp, udp, veth};
    use linerate_facts::ShaperFact;

    fn stack(gbps: f64) -> HostStackCeiling {
        HostStackCeiling {
            gbps,
            copies_per_core: 1,
            basis: "one memory copy per byte on each of 2 cores".into(),
            explain: format!("at most {gbps} Gb/s"),
        }
    }

    fn shaped(mut e: EndFacts, rate_bps: u64) -> EndFacts {
        e.shapers.push(ShaperFact {
            kind: "tbf".into(),
            handle: "8001:".into(),
            rate_bps,
        });
        e
    }

    #[test]
    fn the_lowest_hardware_ceiling_of_either_end_sets_the_path() {
        let i = input(nic("eth0", 100.0), Some(nic("eth1", 25.0)), Vec::new());
        for d in [Direction::Send, Direction::Receive] {
            let pc = path_ceiling(&i, d);
            assert!((pc.gbps.unwrap() - 23.5).abs() < 1e-9, "{pc:?}");
            assert_eq!(pc.limited_by, Cause::Link);
            assert_eq!(pc.why, "the remote link rate");
            assert!(!pc.per_stream);
        }
    }

    #[test]
    fn a_shaper_limits_only_what_leaves_its_end() {
        let i = input(
            shaped(nic("eth0", 100.0), 1_000_000_000),
            Some(nic("eth1", 100.0)),
            Vec::new(),
        );
        let send = path_ceiling(&i, Direction::Send);
        assert_eq!(send.limited_by, Cause::Shaper);
        assert_eq!(send.why, "a tbf shaper at 1 Gbit/s on the local eth0");
        assert_eq!(path_ceiling(&i, Direction::Receive).limited_by, Cause::Link);
        // A self-check's one interface carries both directions.
        let alone = input(shaped(nic("lo", 100.0), 1_000_000_000), None, Vec::new());
        assert_eq!(
            path_ceiling(&alone, Direction::Receive).limited_by,
            Cause::Shaper
        );
    }

    #[test]
    fn a_virtual_path_has_the_host_stacks_bound_until_a_stream_beats_it() {
        let mut i = input(
            veth("veth0"),
            Some(veth("veth1")),
            vec![tcp(Direction::Send, 1, 10.0), tcp(Direction::Send, 4, 30.0)],
        );
        i.host_stack = Some(stack(20.0));
        let pc = path_ceiling(&i, Direction::Send);
        assert_eq!(
            (pc.gbps, pc.limited_by, pc.per_stream),
            (Some(20.0), Cause::Cpu, true)
        );
        // The bound is for one stream: four streams above it beat nothing.
        assert!(stack_beaten(&i).is_none());
        // One stream judged by it, not the best of several.
        assert_eq!(Ctx::new(&i).best.map(|t| t.streams), Some(1));
        i.tests[0].gbps = 25.0;
        assert_eq!(stack_beaten(&i).map(|(t, _)| t.gbps), Some(25.0));
        let pc = path_ceiling(&i, Direction::Send);
        assert_eq!((pc.gbps, pc.limited_by), (None, Cause::Unknown));
    }

    #[test]
    fn the_judged_direction_is_the_slower() {
        let i = input(
            nic("eth0", 10.0),
            Some(nic("eth1", 10.0)),
            vec![
                tcp(Direction::Send, 1, 9.0),
                tcp(Direction::Receive, 1, 5.0),
                tcp(Direction::Send, 4, 9.3),
            ],
        );
        let c = Ctx::new(&i);
        assert_eq!(c.dirs, [Direction::Send, Direction::Receive]);
        assert_eq!(c.dir, Direction::Receive);
        assert_eq!(c.best_gbps(), 5.0);
        assert!(!c.reached());
        assert_eq!(c.multi(Direction::Send).map(|t| t.streams), Some(4));
        assert!(c.multi(Direction::Receive).is_none());
        assert!(!c.virtual_path && !c.any_port_down());
        assert!(direction_reached(&c, Direction::Send));
        assert!(!direction_reached(&c, Direction::Receive));
    }

    #[test]
    fn the_best_tcp_result_is_any_directions_completed_run() {
        let mut failed = tcp(Direction::Receive, 8, 40.0);
        failed.error = Some("reset".into());
        let i = input(
            nic("eth0", 10.0),
            Some(nic("eth1", 10.0)),
            vec![
                tcp(Direction::Send, 1, 9.0),
                tcp(Direction::Receive, 2, 9.2),
                failed,
            ],
        );
        let b = best_tcp(&i).expect("a TCP result");
        assert_eq!((b.gbps, b.test.as_str()), (9.2, "TCP receive, 2 streams"));
        assert!((b.ceiling_gbps.unwrap() - 9.4).abs() < 1e-9);
        assert_eq!(best_tcp(&input(veth("veth0"), None, Vec::new())), None);
    }

    #[test]
    fn udp_loss_that_tcp_does_not_see_is_the_receivers() {
        let mut i = input(
            nic("eth0", 10.0),
            Some(nic("eth1", 10.0)),
            vec![tcp(Direction::Send, 1, 2.0), udp(Direction::Send, 1.0, 3.0)],
        );
        let c = Ctx::new(&i);
        let u = &i.tests[1];
        assert_eq!(udp_loss_at_receiver(&c, u).map(|t| t.gbps), Some(2.0));
        assert!(!path_lossy(&c, u));
        // TCP losing packets too: the path loses them.
        i.tests[0].retransmits = Some(2_000);
        let c = Ctx::new(&i);
        assert!(udp_loss_at_receiver(&c, &i.tests[1]).is_none());
        assert!(path_lossy(&c, &i.tests[1]) && path_lossy(&c, &i.tests[0]));
    }
}
