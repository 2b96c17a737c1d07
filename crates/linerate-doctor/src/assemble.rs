//! The report: everything measured set against the rules (`linerate_rules::diagnose`, the
//! storage pyramid), in doctor's document. Plain data in, the document out.

use std::path::Path;

use linerate_engine::hostcpu::HostCpu;
use linerate_engine::mem;
use linerate_facts::{
    CounterDelta, EndFacts, Finding, HostFacts, Inventories, Inventory, MemOut, PathFacts,
    ProbeDoc, Pyramid, QdiscDelta, QdiscsSeen, Unread,
};
use linerate_model::{host_stack_ceiling, HostStackCeiling, HostStackInput};
use linerate_proto::Direction;
use linerate_results::disk::DiskReport;
use linerate_results::{DoctorReport, FarEndOut, FarEndProcess, JudgedFrom, TestResult};
use linerate_rules::diagnose::BestTcp;
use linerate_rules::{diagnose, DiagnoseInput, Measured};

use crate::far::FarEndProtocol;
use crate::local::Memory;
use crate::steps::Runs;

/// What [`assemble`] takes besides the runs.
#[derive(Debug)]
pub struct Assembly<'a> {
    /// Root of this host's sysfs (for the DIMMs).
    pub root: &'a Path,
    /// Where the tests went, and what it speaks.
    pub server: std::net::SocketAddr,
    pub protocol: FarEndProtocol,
    /// What the far end told of its release (`FarEndClient::version`).
    pub far_version: Option<String>,
    pub self_check: bool,
    pub before: &'a Inventory,
    pub memory: &'a Memory,
    pub disks: Vec<DiskReport>,
    pub copy: Option<(TestResult, String)>,
    pub pyramid_notes: Vec<String>,
    pub counter_deltas: Vec<CounterDelta>,
    /// The far end's processes on this host (pid, program).
    pub far_end_here: Vec<(u32, String)>,
    pub seconds: f64,
}

/// A result as the rules take it, with this host's CPU during it.
pub fn measured(t: &TestResult, h: HostCpu) -> Measured {
    let per_cpu = t
        .per_stream
        .iter()
        .flat_map(|s| [Some(s.sender_cpu_percent), s.receiver_cpu_percent])
        .flatten()
        .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
    Measured {
        kind: t.params.kind,
        direction: t.direction,
        rdma: t.params.rdma.as_ref().map(|r| r.op),
        latency: t
            .params
            .rdma
            .as_ref()
            .map_or(t.params.kind.is_latency(), |r| r.latency),
        streams: t.streams,
        gbps: t.gbps,
        sender_cpu_percent: t.sender.as_ref().map(|e| e.cpu_percent),
        receiver_cpu_percent: t.receiver.as_ref().map(|e| e.cpu_percent),
        max_stream_cpu_percent: per_cpu,
        busiest_core_percent: h.busiest_core_percent,
        busiest_core_others_percent: h.busiest_core_others_percent,
        other_cores: h.other_cores,
        steal_cores: h.steal_cores,
        retransmits: t.retransmits,
        segments: t.segments,
        spurious_retransmits: t.spurious_retransmits,
        rtt_us: t.rtt_us,
        tcp_busy_percent: t.tcp_limited.map(|l| l.busy_percent),
        rwnd_limited_percent: t.tcp_limited.map(|l| l.receive_window_percent),
        sndbuf_limited_percent: t.tcp_limited.map(|l| l.send_buffer_percent),
        loss_percent: t.loss_percent,
        lost_packets: t.lost_packets,
        receiver_udp: t.udp_receive.and_then(|u| match t.direction {
            Direction::Send => u.remote,
            Direction::Receive => u.local,
            Direction::Bidir => None,
        }),
        error: t.error.clone(),
        discard: t.params.discard,
        remote_cpu: t.disturbance.as_ref().and_then(|d| d.remote_cpu),
    }
}

/// What each end's qdiscs counted over the tests: each qdisc once per end, its counters summed
/// and the tests it counted in named. An end whose qdiscs no test read is `None`.
pub fn qdiscs_over(tests: &[TestResult]) -> QdiscsSeen {
    let mut seen = QdiscsSeen::default();
    for t in tests {
        let Some(q) = &t.qdiscs else { continue };
        let words = t.params.words();
        for (mine, theirs) in [(&mut seen.local, &q.local), (&mut seen.remote, &q.remote)] {
            let Some(theirs) = theirs else { continue };
            let all = mine.get_or_insert_with(Vec::new);
            for d in theirs {
                match all.iter_mut().find(|x| x.same_qdisc(d)) {
                    Some(x) => {
                        x.add(d);
                        if !x.tests.contains(&words) {
                            x.tests.push(words.clone());
                        }
                    }
                    None => all.push(QdiscDelta {
                        tests: vec![words.clone()],
                        ..d.clone()
                    }),
                }
            }
        }
    }
    for end in [&mut seen.local, &mut seen.remote].into_iter().flatten() {
        end.sort_by_key(|q| std::cmp::Reverse(q.drops));
    }
    seen
}

pub fn mem_out(r: &mem::MemResult) -> MemOut {
    MemOut {
        kind: r.op.as_str(),
        threads: r.threads,
        buffer_bytes: r.buffer_bytes,
        gb_per_s: linerate_units::r2(r.gb_per_s()),
        gbps: linerate_units::r1(linerate_units::gb_per_s_to_gbps(r.gb_per_s())),
    }
}

/// An end's facts from what it said about itself. What could not be read of it is said in
/// `errors` (the end is then judged without it), never dropped in silence: the facts or a part
/// of the probe document, each finding left out, and in one line the fields of a newer
/// version that were ignored.
pub fn facts_of(h: Option<&HostFacts>, whose: &str, errors: &mut Vec<String>) -> Option<EndFacts> {
    let h = h?;
    let mut fields = Vec::new();
    for u in &h.unread {
        match u {
            Unread::Part { part, error } if part == "facts" => errors.push(format!(
                "the {whose} end's facts could not be read ({error}): judged without them"
            )),
            Unread::Field(path) => fields.push(path.as_str()),
            other => errors.push(format!("the {whose} end's host facts: {other}")),
        }
    }
    if let Some((first, _)) = fields.split_first() {
        let more = match fields.len() - 1 {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        errors.push(format!(
            "the {whose} end sent fields this version does not know (`{first}`{more}): ignored"
        ));
    }
    h.facts.clone()
}

/// The host stack's bound for one TCP stream on a path without hardware (loopback, veth): one
/// core's copy rate at the size of a stream's writes, and the cores the two copies of each byte
/// may run on. Against a server the receiver's copy runs on the other host, so each core copies
/// each byte once; in a self-check both ends share this process's CPUs (its affinity:
/// `taskset -c 0` leaves one, and both copies then share it).
fn host_stack(m: &Memory, two_hosts: bool) -> Option<HostStackCeiling> {
    let cores = if two_hosts {
        2
    } else {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    };
    host_stack_ceiling(&HostStackInput {
        copy_gb_per_s: m.stream.gb_per_s(),
        cores,
    })
}

fn disk_in(r: &DiskReport) -> linerate_rules::pyramid::DiskIn {
    use linerate_results::disk::DiskTestKind as K;
    let get = |k: K| {
        r.tests
            .iter()
            .find(|t| t.kind == k && t.error.is_none())
            .map(|t| t.gbps)
    };
    linerate_rules::pyramid::DiskIn {
        host: "local".into(),
        path: r.path.display().to_string(),
        filesystem: r.filesystem.clone(),
        read_gbps: get(K::SeqRead),
        write_gbps: get(K::SeqWrite),
        rand_read_iops: r
            .tests
            .iter()
            .find(|t| t.kind == K::RandRead && t.error.is_none())
            .map(|t| t.iops),
    }
}

fn copy_in(t: &TestResult, to: &str) -> Option<linerate_rules::pyramid::CopyIn> {
    let f = t.file.as_ref()?;
    let layer = |n: &str| f.layers.iter().find(|l| l.layer == n).map(|l| l.gbps);
    (f.written_bytes == f.size_bytes).then(|| linerate_rules::pyramid::CopyIn {
        to: to.to_string(),
        end_to_end_gbps: f.end_to_end_gbps,
        source_read_gbps: layer("source_read"),
        network_gbps: layer("network"),
        destination_write_gbps: layer("destination_write"),
        bottleneck: f.bottleneck.map(str::to_string),
    })
}

/// Memory, the disks, the network and the copy side by side (`linerate_rules::pyramid`); the
/// network row is the rules' best TCP result of all.
fn storage_pyramid(
    a: &Assembly<'_>,
    runs: &Runs,
    best: Option<&BestTcp>,
) -> (Pyramid, Vec<Finding>) {
    let dimm_peak: f64 = linerate_inventory::dram::dimms(a.root)
        .iter()
        .map(linerate_facts::Dimm::peak_gb_per_s)
        .sum();
    linerate_rules::pyramid::pyramid(&linerate_rules::pyramid::PyramidInput {
        memory_gbps: Some(linerate_units::gb_per_s_to_gbps(a.memory.all.gb_per_s())),
        memory_ceiling_gbps: (dimm_peak > 0.0)
            .then_some(linerate_units::gb_per_s_to_gbps(dimm_peak)),
        disks: a.disks.iter().map(disk_in).collect(),
        network_gbps: best.map(|b| b.gbps),
        network_ceiling_gbps: best.and_then(|b| b.ceiling_gbps),
        network_subject: runs.local_if.clone().unwrap_or_else(|| "loopback".into()),
        network_test: best.map(|b| b.test.clone()),
        copy: a.copy.as_ref().and_then(|(t, to)| copy_in(t, to)),
        notes: a.pyramid_notes.clone(),
    })
}

/// The far end as the report says it: a far end that described its host (or this host, in a
/// self-check) lets both ends be judged; one that did not leaves the verdict to this end's
/// facts and the path's measurements.
fn far_end_out(a: &Assembly<'_>, remote_known: bool, runs: &Runs) -> FarEndOut {
    let hardware_known = a.self_check || remote_known;
    FarEndOut {
        protocol: a.protocol.name(),
        version: a.far_version.clone(),
        hardware_known,
        judged_from: if hardware_known {
            JudgedFrom::BothEnds
        } else {
            JudgedFrom::ThisEnd
        },
        skipped: runs.skipped.clone(),
        on_this_host: a
            .far_end_here
            .iter()
            .map(|(pid, program)| FarEndProcess {
                pid: *pid,
                program: program.clone(),
            })
            .collect(),
        // The command knows what it copied to start the far end; it fills this in.
        copied: None,
    }
}

/// What was checked, when the far end's facts are unknown: the rules' words for both ends name
/// this end only.
fn this_end_only(checked: &mut [String]) {
    for c in checked {
        *c = c
            .replace("of both ends", "of this end only")
            .replace("on both interfaces", "on this end's interface only");
    }
}

/// The rules over everything measured, and the report.
pub fn assemble(a: Assembly<'_>, mut runs: Runs) -> DoctorReport {
    let two = !a.self_check;
    let local = facts_of(runs.local_inv.as_ref(), "local", &mut runs.errors).unwrap_or_else(|| {
        linerate_rules::end_facts(a.before, runs.local_if.as_deref(), Vec::new())
    });
    let remote = if two {
        facts_of(runs.remote_inv.as_ref(), "remote", &mut runs.errors)
    } else {
        None
    };
    let far_end = far_end_out(&a, remote.is_some(), &runs);
    let host_stack = host_stack(a.memory, two);
    let stack_ceiling_gbps = host_stack.as_ref().map(|h| linerate_units::r2(h.gbps));
    let stack_basis = host_stack.as_ref().map(|h| h.basis.clone());
    let input = DiagnoseInput {
        local: local.clone(),
        remote: remote.clone(),
        tests: runs
            .tests
            .iter()
            .zip(&runs.cpu)
            .map(|(t, b)| measured(t, *b))
            .collect(),
        host_stack,
        counter_deltas: a.counter_deltas.clone(),
        qdiscs: qdiscs_over(&runs.tests),
    };
    let mut d = diagnose(&input);
    if far_end.judged_from == JudgedFrom::ThisEnd {
        let words = a.protocol.judged_from_this_end().unwrap_or(
            "the far end did not describe its host, so this is judged from this end only",
        );
        d.verdict.summary = format!("{} ({words})", d.verdict.summary);
        this_end_only(&mut d.checked);
    }
    let (pyramid, pyramid_findings) = storage_pyramid(&a, &runs, d.best_tcp.as_ref());
    d.findings.extend(pyramid_findings);
    if !a.disks.is_empty() {
        d.checked.push("the storage pyramid: memory, disk reads and writes, the network, and a disk-to-disk copy through the tested path".into());
    }
    if let Some((t, _)) = a.copy {
        runs.tests.push(t);
    }
    let before_analysis = linerate_rules::analyze(a.before);
    let local_probe = ProbeDoc::new(a.before, &before_analysis, &a.root.display().to_string());
    let remote_interface = runs
        .remote_inv
        .as_ref()
        .and_then(|h| h.name.clone())
        .filter(|_| two);
    DoctorReport {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        mode: if two { "two_hosts" } else { "self_check" },
        server: a.server.to_string(),
        far_end,
        verdict: d.verdict,
        findings: d.findings,
        tests: runs.tests,
        inventory: Inventories {
            local: local_probe,
            remote: runs
                .remote_inv
                .as_ref()
                .and_then(|h| h.probe.clone())
                .filter(|_| two),
        },
        path: PathFacts {
            local,
            remote,
            local_interface: runs.local_if,
            remote_interface,
            counter_deltas: a.counter_deltas,
            qdiscs: input.qdiscs.clone(),
            stack_ceiling_gbps,
            stack_basis,
        },
        memory: vec![
            mem_out(&a.memory.one),
            mem_out(&a.memory.stream),
            mem_out(&a.memory.all),
        ],
        disks: a.disks,
        pyramid,
        checked: d.checked,
        errors: runs.errors,
        seconds: linerate_units::r1(a.seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_checked_names_this_end_alone_when_the_far_end_is_unknown() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sysfs/realtek-1g");
        let before = linerate_inventory::probe(&root).expect("the fixture");
        let d = diagnose(&DiagnoseInput {
            local: linerate_rules::end_facts(&before, None, Vec::new()),
            remote: None,
            tests: Vec::new(),
            host_stack: None,
            counter_deltas: Vec::new(),
            qdiscs: QdiscsSeen::default(),
        });
        let mut checked = d.checked;
        assert!(
            checked.iter().any(|c| c.contains("both ends")),
            "{checked:?}"
        );
        this_end_only(&mut checked);
        let all = checked.join("; ");
        assert!(
            !all.contains("both ends") && !all.contains("both interfaces"),
            "{all}"
        );
        assert!(all.contains("inventory of this end only"), "{all}");
        assert!(all.contains("on this end's interface only"), "{all}");
    }
}
