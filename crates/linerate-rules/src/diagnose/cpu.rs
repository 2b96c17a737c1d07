//! CPU and contention: `cpu.saturated` (one stream kept a core of linerate's busy below the
//! ceiling), `cpu.contended` (other processes took the CPU while it measured), `cpu.steal` (the
//! hypervisor did), what the receiver's copy
//! costs a stream (said in `checked`), and whether a receiver fell behind for want of CPU (which
//! the loss rules read).

use std::fmt::Write as _;

use linerate_facts::{Finding, FindingId, IpoibMode, PortKind, Severity};
use linerate_proto::{Direction, HostCpuLoad};
use linerate_units::fmt_round;

use super::context::Ctx;
use super::input::{dir_name, Measured};
use super::registry::{rule, FromFacts, Output};
use crate::thresholds::{
    CEILING_REACHED_FRACTION, CONTENDED_OTHER_CORES, CONTENDED_STEAL_CORES, COPY_VISIBLE_RATIO,
    CORE_SATURATED_PERCENT, OTHERS_HELD_CORE_PERCENT, QUIET_OTHER_CORES, THREAD_SATURATED_PERCENT,
};

/// The subject of `cpu.saturated` for one stream in direction `d`.
pub(super) fn one_stream_subject(d: Direction) -> String {
    format!("test:tcp_bw {} 1 stream", dir_name(d))
}

/// What lifts a CPU-bound stream, for the path it is on. On a virtual path only the host
/// matters: there is no NIC whose interrupts, NUMA node or frame size could be changed.
fn cpu_saturated_fix(c: &Ctx<'_>) -> String {
    if c.virtual_path {
        // Each core copies each byte once (`linerate_model::host`): more streams use more
        // cores; zero copy on the sender leaves the receiver's copy, which alone sets the bound.
        return "Use several streams (`-P 4`): one stream's copies run on one core at each end. Keep the two ends on different idle cores (`-A`) and set the performance governor. `--zerocopy` does not raise the bound of a virtual path: the receiver still copies every byte.".into();
    }
    let ethernet = c.ends.iter().any(|(_, f)| {
        matches!(f.port_kind, Some(PortKind::Ethernet | PortKind::Roce))
            && f.mtu.is_none_or(|m| m < 9000)
    });
    let datagram_ib = c.ends.iter().any(|(_, f)| {
        f.port_kind == Some(PortKind::Infiniband) && f.ipoib_mode != Some(IpoibMode::Connected)
    });
    // Bigger packets cut the per-packet work (interrupts, headers, wake-ups) per byte.
    let per_packet: Vec<&str> = [
        ethernet.then_some("jumbo frames"),
        datagram_ib.then_some("IPoIB connected mode"),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!(
        "Use several streams (`-P 4`), pin the stream to the NIC's NUMA node and away from its interrupt core (`-A`), send with `--zerocopy`{}, and set the performance governor.",
        if per_packet.is_empty() {
            String::new()
        } else {
            format!(", use {} to cut per-packet work", per_packet.join(" or "))
        }
    )
}

/// What the receiving application's copy costs one stream in direction `d`: its rate against
/// its `--discard` twin's (the data dropped in the kernel), in words; None without a twin.
pub fn receiver_copy(tests: &[Measured], d: Direction) -> Option<String> {
    let copy = tests
        .iter()
        .find(|t| t.is_single_stream(d) && t.error.is_none())?;
    let twin = tests.iter().find(|t| t.is_discard_twin(d))?;
    if copy.gbps <= 0.0 || twin.gbps <= 0.0 {
        return None;
    }
    let ratio = twin.gbps / copy.gbps;
    let head = format!(
        "the receiver's copy ({} direction): one stream {} Gb/s copying into the application, {} Gb/s with the data dropped in the kernel (`bench --discard`, recv with MSG_TRUNC)",
        dir_name(d),
        fmt_round(copy.gbps, 2),
        fmt_round(twin.gbps, 2)
    );
    // Runs of the same test differ by a few percent; within that the copy costs nothing visible.
    Some(if ratio >= COPY_VISIBLE_RATIO {
        format!(
            "{head}: the copy to user space holds the stream back by {}% (×{} without it)",
            fmt_round((1.0 - 1.0 / ratio) * 100.0, 0),
            fmt_round(ratio, 2)
        )
    } else {
        format!("{head}: not faster without the copy, so the receiver's protocol work (softirq, wake-ups), not its copy, is what its core spends")
    })
}

/// What the receiver's copy cost one stream of each direction, in words ([`receiver_copy`]):
/// lines of `checked`, no finding.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CopyCosts(Vec<String>);

impl Output for CopyCosts {
    fn findings(&self) -> &[Finding] {
        &[]
    }

    fn said(&self) -> Vec<String> {
        self.0.clone()
    }
}

/// The receiver's copy, send then receive, where doctor ran a `--discard` twin.
impl FromFacts for rule::ReceiverCopy {
    type Output = CopyCosts;

    fn run(self, c: &Ctx<'_>) -> CopyCosts {
        CopyCosts(
            [Direction::Send, Direction::Receive]
                .into_iter()
                .filter_map(|d| receiver_copy(&c.i.tests, d))
                .collect(),
        )
    }
}

/// The busiest core of a test was linerate's to name: other processes were quiet and could
/// have held at most a sliver of it ([`QUIET_OTHER_CORES`]; what they held of it at least stays
/// below what separates saturated from busy).
fn busiest_core_is_ours(t: &Measured) -> bool {
    t.other_cores.is_none_or(|o| o < QUIET_OTHER_CORES)
        && t.busiest_core_others_percent
            .is_none_or(|o| o < 100.0 - CORE_SATURATED_PERCENT)
}

/// `cpu.saturated`: one stream kept a core busy below the ceiling. Only a core linerate's own
/// threads saturated: a thread at [`THREAD_SATURATED_PERCENT`] of a core, or the busiest core at
/// [`CORE_SATURATED_PERCENT`] while it was linerate's ([`busiest_core_is_ours`]); a core other
/// processes kept busy is contention (`cpu.contended` says so), never this.
impl FromFacts for rule::CpuSaturated {
    type Output = Vec<Finding>;

    fn run(self, c: &Ctx<'_>) -> Vec<Finding> {
        let mut out = Vec::new();
        for t in c.i.tests.iter().filter(|t| {
            t.is_single_stream(Direction::Send) || t.is_single_stream(Direction::Receive)
        }) {
            let cpus = [
                t.sender_cpu_percent,
                t.receiver_cpu_percent,
                t.max_stream_cpu_percent,
            ];
            let cpu = cpus.into_iter().flatten().fold(0.0_f64, f64::max);
            let below =
                c.pc.gbps
                    .is_none_or(|g| t.gbps < CEILING_REACHED_FRACTION * g);
            let busy_core = busiest_core_is_ours(t)
                && t.busiest_core_percent
                    .is_some_and(|b| b >= CORE_SATURATED_PERCENT);
            let thread_busy = cpus
                .into_iter()
                .flatten()
                .any(|p| p >= THREAD_SATURATED_PERCENT);
            if !((thread_busy || busy_core) && below) {
                continue;
            }
            let side = if t.sender_cpu_percent >= t.receiver_cpu_percent {
                "sending"
            } else {
                "receiving"
            };
            // Name the figure that shows it: the busiest core (interrupts included) when the
            // threads' own accounting, which leaves softirq work out, stays lower.
            let kept = match t.busiest_core_percent.filter(|b| busy_core && *b > cpu) {
                Some(b) => format!(
                    "kept this host's busiest core at {b:.0}% (interrupts included; other processes were idle, so the core was linerate's: its {side} thread {cpu:.0}% and the softirq work done for it)"
                ),
                None => format!("kept the {side} core at {cpu:.0}%"),
            };
            let more = c.multi(t.direction).map_or(String::new(), |m| {
                format!(
                    "; with {} streams the path carried {} Gb/s",
                    m.streams,
                    fmt_round(m.gbps, 2)
                )
            });
            let more = match (side, receiver_copy(&c.i.tests, t.direction)) {
                ("receiving", Some(copy)) => format!("{more}; {copy}"),
                _ => more,
            };
            out.push(
                Finding::new(FindingId::CpuSaturated, Severity::Warning, one_stream_subject(t.direction))
                    .evidence("gbps", fmt_round(t.gbps, 2))
                    .evidence("sender_cpu_percent", t.sender_cpu_percent.map_or("?".into(), |p| format!("{p:.0}")))
                    .evidence("receiver_cpu_percent", t.receiver_cpu_percent.map_or("?".into(), |p| format!("{p:.0}")))
                    .evidence("busiest_core_percent (this host, incl. interrupts)", t.busiest_core_percent.map_or("?".into(), |p| format!("{p:.0}")))
                    .message(format!(
                        "one stream ({} direction) {kept}: a single CPU core, not the network, limits one TCP stream at {} Gb/s{more}",
                        dir_name(t.direction),
                        fmt_round(t.gbps, 2)
                    ))
                    .fix(cpu_saturated_fix(c)),
            );
        }
        out
    }
}

/// Other processes took the CPU while a test ran: [`CONTENDED_OTHER_CORES`] cores or more, or
/// [`OTHERS_HELD_CORE_PERCENT`] of the busiest core.
fn others_took(other: Option<f64>, busiest_others: Option<f64>) -> bool {
    other.is_some_and(|o| o >= CONTENDED_OTHER_CORES)
        || busiest_others.is_some_and(|o| o >= OTHERS_HELD_CORE_PERCENT)
}

/// The hypervisor took the CPU while a test ran: [`CONTENDED_STEAL_CORES`] of steal or more.
fn steal_took(steal: Option<f64>) -> bool {
    steal.is_some_and(|s| s >= CONTENDED_STEAL_CORES)
}

/// Other processes or the hypervisor took the CPU (the lines of `cpu.contended` and
/// `cpu.steal`).
fn cpu_taken(other: Option<f64>, steal: Option<f64>, busiest_others: Option<f64>) -> bool {
    others_took(other, busiest_others) || steal_took(steal)
}

/// `cpu.contended` or `cpu.steal`: the finding, and the verdict's words when what it measured
/// explains the gap: the test's own threads lost at least [`OTHERS_HELD_CORE_PERCENT`] of
/// their time to it (the same line `cpu.contended` draws for a core other processes held).
/// Below that line it is said, as a note, and the verdict looks further.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Contention {
    pub(super) finding: Option<Finding>,
    /// The verdict's cause in words, when it explains the gap.
    pub(super) explains: Option<String>,
}

impl Output for Contention {
    fn findings(&self) -> &[Finding] {
        self.finding.as_slice()
    }
}

/// ` of N` after a count of cores, when the host's count is known.
fn of_cores(cores: usize) -> String {
    match cores {
        0 => String::new(),
        n => format!(" of {n}"),
    }
}

/// A share of this host's CPU time, %: `cores` of `total`.
fn share(cores: f64, total: usize) -> Option<f64> {
    (total > 0).then(|| cores / total as f64 * 100.0)
}

/// `cpu.contended`: other processes used the CPU while linerate measured, with the cores they
/// used and, when they held the busiest core, the share they held at least. The hypervisor's
/// steal is `cpu.steal`'s, never this.
impl FromFacts for rule::CpuContended {
    type Output = Contention;

    fn run(self, c: &Ctx<'_>) -> Contention {
        let cores = c.i.local.cpus;
        let busy: Vec<&Measured> =
            c.i.tests
                .iter()
                .filter(|t| others_took(t.other_cores, t.busiest_core_others_percent))
                .collect();
        if busy.is_empty() {
            return Contention {
                finding: None,
                explains: None,
            };
        }
        let other = busy
            .iter()
            .filter_map(|t| t.other_cores)
            .fold(0.0_f64, f64::max);
        let held = busy
            .iter()
            .filter_map(|t| Some((t.busiest_core_others_percent?, *t)))
            .filter(|(o, _)| *o >= OTHERS_HELD_CORE_PERCENT)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let spread = share(other, cores).filter(|s| *s >= OTHERS_HELD_CORE_PERCENT);
        let mut f = Finding::new(FindingId::CpuContended, Severity::Warning, "local:host")
            .evidence("other_processes_cores", format!("{other:.2}"))
            .evidence("tests_affected", busy.len());
        let mut msg = format!(
            "while linerate measured, other processes on this host used up to {other:.1}{} cores",
            of_cores(cores)
        );
        let mut why = Vec::new();
        if let Some((held, t)) = held {
            f = f
                .evidence(
                    "busiest_core_others_percent (at least, during the test below)",
                    format!("{held:.0}"),
                )
                .evidence(
                    "busiest_core_test",
                    format!(
                        "{} {} {} stream(s)",
                        t.kind_name(),
                        dir_name(t.direction),
                        t.streams
                    ),
                );
            let _ = write!(
                msg,
                ", and held the busiest core: at least {held:.0}% of its time during the {} test ({} direction, {} stream{}), time linerate's own threads did not have",
                t.kind_name(),
                dir_name(t.direction),
                t.streams,
                if t.streams == 1 { "" } else { "s" }
            );
            why.push(format!("they held at least {held:.0}% of the busiest core"));
        }
        if let Some(s) = spread {
            why.push(format!(
                "they used {other:.1}{} cores, {s:.0}% of this host's CPU time",
                of_cores(cores)
            ));
        }
        let explains = (!why.is_empty()).then(|| {
            format!(
                "other processes competing for the CPU ({}; the results are a lower bound)",
                why.join(", and ")
            )
        });
        if explains.is_some() {
            msg.push_str(": the results are lower than this machine can do");
        } else {
            f.severity = Severity::Info;
            let _ = write!(
                msg,
                ": less than {OTHERS_HELD_CORE_PERCENT:.0}% of any core's time, too little to explain the results"
            );
        }
        Contention {
            finding: Some(
                f.message(msg)
                    .fix("Run doctor again on an idle machine (check `top`), or pin linerate to idle cores with `bench -A`."),
            ),
            explains,
        }
    }
}

/// `cpu.steal`: the hypervisor gave this guest's CPUs to others (steal in `/proc/stat`) while
/// linerate measured. Named as what it is: not other processes of this host, which `top` in
/// the guest would show, but other guests on the host, which only the host can change.
impl FromFacts for rule::CpuSteal {
    type Output = Contention;

    fn run(self, c: &Ctx<'_>) -> Contention {
        let cores = c.i.local.cpus;
        let stolen: Vec<&Measured> =
            c.i.tests
                .iter()
                .filter(|t| steal_took(t.steal_cores))
                .collect();
        let Some(worst) = stolen.iter().max_by(|a, b| {
            a.steal_cores
                .unwrap_or(0.0)
                .total_cmp(&b.steal_cores.unwrap_or(0.0))
        }) else {
            return Contention {
                finding: None,
                explains: None,
            };
        };
        let steal = worst.steal_cores.unwrap_or(0.0);
        let each = share(steal, cores);
        let mut f = Finding::new(FindingId::CpuSteal, Severity::Warning, "local:host")
            .evidence("hypervisor_steal_cores", format!("{steal:.2}"))
            .evidence("tests_affected", stolen.len())
            .evidence(
                "worst_test",
                format!(
                    "{} {} {} stream(s)",
                    worst.kind_name(),
                    dir_name(worst.direction),
                    worst.streams
                ),
            );
        if let Some(e) = each {
            f = f.evidence("steal_percent_of_each_core", format!("{e:.1}"));
        }
        let taken = format!(
            "the hypervisor took {steal:.2}{} cores from this guest (steal: its CPUs ran other guests){}",
            of_cores(cores),
            each.map_or(String::new(), |e| format!(", {e:.0}% of each core's time"))
        );
        let explains = each.filter(|e| *e >= OTHERS_HELD_CORE_PERCENT).map(|e| {
            format!(
                "the hypervisor's steal (other guests took {e:.0}% of each core's time, {steal:.2}{} cores; the results are a lower bound)",
                of_cores(cores)
            )
        });
        let msg = if explains.is_some() {
            format!("while linerate measured, {taken}: its threads ran for that much less of the time, so the results are lower than this guest's share of the host can do")
        } else {
            f.severity = Severity::Info;
            format!("while linerate measured, {taken}: less than {OTHERS_HELD_CORE_PERCENT:.0}%, too little to explain the results")
        };
        Contention {
            finding: Some(f.message(msg).fix(
                "Steal is the host's: other guests on its cores. Run again when the host is quieter, or ask for dedicated (pinned) vCPUs; nothing inside this guest changes it (`top` shows it as `st`).",
            )),
            explains,
        }
    }
}

/// The receiver of `t` fell behind for want of CPU, in words with the evidence: its thread
/// had a whole core, or other processes or the hypervisor (each named) took the CPUs of the host it runs
/// on (this host for a receive; the far end's figures for a send, or this host's when the far
/// end sent none on a virtual path, where both ends share this host or its hypervisor). None
/// when the figures show room.
pub(super) fn receiver_starved(c: &Ctx<'_>, t: &Measured) -> Option<String> {
    if let Some(p) = t
        .receiver_cpu_percent
        .filter(|p| *p >= THREAD_SATURATED_PERCENT)
    {
        return Some(format!("its receiving thread used {p:.0}% of a core"));
    }
    let taken = |other: Option<f64>, steal: Option<f64>, busiest: Option<f64>, whose: &str| {
        cpu_taken(other, steal, busiest).then(|| {
            let mut who = Vec::new();
            if others_took(other, busiest) {
                who.push(format!(
                    "other processes took {} cores of {whose}",
                    fmt_round(other.unwrap_or(0.0), 2)
                ));
            }
            if steal_took(steal) {
                who.push(format!(
                    "the hypervisor took {} cores of {whose} (steal)",
                    fmt_round(steal.unwrap_or(0.0), 2)
                ));
            }
            who.join(" and ")
        })
    };
    let here = || {
        taken(
            t.other_cores,
            t.steal_cores,
            t.busiest_core_others_percent,
            "this host",
        )
    };
    let there = |h: &HostCpuLoad| {
        taken(
            h.other_cores,
            h.steal_cores,
            h.busiest_core_others_percent,
            "the far end",
        )
    };
    let far = || match (&t.remote_cpu, c.i.remote.is_some()) {
        (Some(h), _) => there(h),
        (None, false) => here(),
        (None, true) if c.virtual_path => here(),
        (None, true) => None,
    };
    match t.direction {
        Direction::Receive => here(),
        Direction::Send => far(),
        Direction::Bidir => here().or_else(far),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{guest, input, nic, tcp, veth};
    use crate::diagnose::DiagnoseInput;

    fn saturated(i: &DiagnoseInput) -> Vec<Finding> {
        rule::CpuSaturated.run(&Ctx::new(i))
    }

    fn busy_sender(direction: Direction, gbps: f64) -> Measured {
        Measured {
            sender_cpu_percent: Some(99.0),
            max_stream_cpu_percent: Some(99.0),
            ..tcp(direction, 1, gbps)
        }
    }

    #[test]
    fn a_thread_at_a_full_core_below_the_ceiling_is_saturation() {
        let i = input(
            nic("eth0", 100.0),
            Some(nic("eth1", 100.0)),
            vec![
                busy_sender(Direction::Send, 30.0),
                tcp(Direction::Send, 4, 80.0),
            ],
        );
        let [f] = saturated(&i).try_into().expect("one finding");
        assert_eq!(f.subject, "test:tcp_bw send 1 stream");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("kept the sending core at 99%"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("with 4 streams the path carried 80 Gb/s"),
            "{}",
            f.message
        );
        // A NIC with 1500-byte frames: bigger ones cut the work per byte.
        assert!(f.fix.contains("jumbo frames"), "{}", f.fix);
    }

    #[test]
    fn a_busy_core_at_the_ceiling_or_a_quiet_one_is_no_saturation() {
        let at_ceiling = input(
            nic("eth0", 10.0),
            Some(nic("eth1", 10.0)),
            vec![busy_sender(Direction::Send, 9.0)],
        );
        assert!(saturated(&at_ceiling).is_empty());
        let quiet = input(nic("eth0", 10.0), None, vec![tcp(Direction::Send, 1, 3.0)]);
        assert!(saturated(&quiet).is_empty());
    }

    #[test]
    fn a_core_other_processes_held_is_contention_not_saturation() {
        let t = Measured {
            busiest_core_percent: Some(100.0),
            busiest_core_others_percent: Some(60.0),
            other_cores: Some(1.0),
            sender_cpu_percent: Some(50.0),
            ..tcp(Direction::Send, 1, 3.0)
        };
        let i = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), vec![t]);
        assert!(saturated(&i).is_empty());
        let out = rule::CpuContended.run(&Ctx::new(&i));
        let f = out.finding.expect("contention");
        assert_eq!(f.severity, Severity::Warning);
        assert!(out
            .explains
            .unwrap()
            .contains("at least 60% of the busiest core"));
        assert_eq!(f.subject, "local:host");
        assert!(
            f.message.contains("held the busiest core: at least 60% of its time during the tcp_bw test (send direction, 1 stream)"),
            "{}",
            f.message
        );
        assert!(f.message.contains("of 16 cores"), "{}", f.message);
        let quiet = input(nic("eth0", 10.0), None, vec![tcp(Direction::Send, 1, 3.0)]);
        assert!(rule::CpuContended.run(&Ctx::new(&quiet)).finding.is_none());
    }

    #[test]
    fn on_a_virtual_path_the_fix_is_the_hosts() {
        let i = input(
            veth("veth0"),
            Some(veth("veth1")),
            vec![busy_sender(Direction::Send, 3.0)],
        );
        let [f] = saturated(&i).try_into().expect("one finding");
        assert!(
            f.fix.contains("`--zerocopy` does not raise the bound"),
            "{}",
            f.fix
        );
        assert!(!f.fix.contains("jumbo"), "{}", f.fix);
    }

    #[test]
    fn the_receivers_copy_is_set_against_its_discard_twin() {
        let twin = |gbps| Measured {
            discard: true,
            ..tcp(Direction::Receive, 1, gbps)
        };
        let tests = vec![tcp(Direction::Receive, 1, 10.0), twin(20.0)];
        let words = receiver_copy(&tests, Direction::Receive).expect("a twin");
        assert!(words.contains("holds the stream back by 50%"), "{words}");
        assert_eq!(receiver_copy(&tests, Direction::Send), None);
        // Within what runs of the same test differ by, the copy costs nothing visible.
        let close = vec![tcp(Direction::Receive, 1, 10.0), twin(10.2)];
        let words = receiver_copy(&close, Direction::Receive).expect("a twin");
        assert!(words.contains("not faster without the copy"), "{words}");
        // Said in `checked`, never a finding.
        let i = input(veth("veth0"), None, tests);
        let out = rule::ReceiverCopy.run(&Ctx::new(&i));
        assert!(out.findings().is_empty());
        assert_eq!(out.said().len(), 1);
    }

    #[test]
    fn a_receiver_short_of_cpu_is_named_with_whose_cpu() {
        let receiving = Measured {
            receiver_cpu_percent: Some(95.0),
            ..tcp(Direction::Receive, 1, 3.0)
        };
        let sending = tcp(Direction::Send, 1, 3.0);
        let i = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), vec![]);
        let c = Ctx::new(&i);
        assert_eq!(
            receiver_starved(&c, &receiving).as_deref(),
            Some("its receiving thread used 95% of a core")
        );
        // The far end said nothing of its CPUs: nothing to blame.
        assert_eq!(receiver_starved(&c, &sending), None);
        let busy_far_end = Measured {
            remote_cpu: Some(HostCpuLoad {
                seconds: 10.0,
                cores: 4,
                busiest_core_percent: Some(90.0),
                busiest_core_others_percent: Some(40.0),
                own_cores: Some(0.5),
                other_cores: Some(1.5),
                steal_cores: Some(0.0),
            }),
            ..sending.clone()
        };
        let words = receiver_starved(&c, &busy_far_end).expect("the far end was busy");
        assert!(words.ends_with("took 1.5 cores of the far end"), "{words}");
        // On a virtual path the far end shares this host's CPUs: this host's figures count.
        let guests = input(guest("enp1s0"), Some(guest("enp1s0")), vec![]);
        let busy_here = Measured {
            other_cores: Some(1.0),
            ..sending
        };
        let words = receiver_starved(&Ctx::new(&guests), &busy_here).expect("this host was busy");
        assert!(words.ends_with("of this host"), "{words}");
    }

    /// The cloud VM of issue #37: other processes idle, the hypervisor taking 0.12 of 2 cores.
    /// It is steal, named as steal, and too little (6% of each core) to be the verdict.
    #[test]
    fn steal_is_the_hypervisors_and_the_verdict_only_when_it_explains_the_gap() {
        let stolen = |steal: f64| Measured {
            other_cores: Some(0.0),
            steal_cores: Some(steal),
            sender_cpu_percent: Some(60.0),
            ..tcp(Direction::Send, 1, 3.0)
        };
        let vm = |steal| {
            let mut i = input(guest("enp1s0"), Some(guest("enp1s0")), vec![stolen(steal)]);
            i.local.cpus = 2;
            i
        };
        let i = vm(0.12);
        assert!(rule::CpuContended.run(&Ctx::new(&i)).finding.is_none());
        let out = rule::CpuSteal.run(&Ctx::new(&i));
        let f = out.finding.expect("steal");
        assert_eq!((f.id, f.severity), (FindingId::CpuSteal, Severity::Info));
        assert!(
            f.message.contains("the hypervisor took 0.12 of 2 cores"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("6% of each core's time"),
            "{}",
            f.message
        );
        assert!(!f.message.contains("other processes"), "{}", f.message);
        assert_eq!(out.explains, None);
        let d = crate::diagnose::diagnose(&i);
        assert!(
            !d.verdict.summary.contains("other processes"),
            "{}",
            d.verdict.summary
        );
        assert!(
            !d.verdict.summary.contains("steal"),
            "{}",
            d.verdict.summary
        );
        // Six tenths of two cores: 30% of each core's time went to other guests.
        let i = vm(0.6);
        let out = rule::CpuSteal.run(&Ctx::new(&i));
        assert_eq!(out.finding.unwrap().severity, Severity::Warning);
        let d = crate::diagnose::diagnose(&i);
        assert!(
            d.verdict.summary.starts_with("limited by the hypervisor's steal (other guests took 30% of each core's time, 0.60 of 2 cores"),
            "{}",
            d.verdict.summary
        );
        assert_eq!(d.verdict.limited_by, linerate_facts::Cause::Hypervisor);
        // Other processes at 0.3 of 16 cores, holding no core: said, not the verdict.
        let light = Measured {
            other_cores: Some(0.3),
            busiest_core_others_percent: Some(5.0),
            ..tcp(Direction::Send, 1, 3.0)
        };
        let i = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), vec![light]);
        let out = rule::CpuContended.run(&Ctx::new(&i));
        assert_eq!(out.finding.unwrap().severity, Severity::Info);
        assert_eq!(out.explains, None);
    }
}
