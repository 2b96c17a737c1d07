//! doctor's rules against what Linux 6.1 counted under netem in the lab (two guests of
//! Debian's stock kernel under QEMU TCG, virtio NICs; `crates/linerate-cli/tests/lab_faults.rs`
//! runs the same faults end to end). Each case diagnoses again a real capture,
//! `fixtures/doctor/netem-lab/NAME.json`: `linerate doctor --quick --no-disk --no-rdma --json`
//! run in guest a against `linerate serve` in guest b, trimmed by the `trim.py` beside it to
//! what the rules read, with `capture` saying which netem ran on which guest under which
//! socket buffer limits (issue #30). Where the kernel disagreed with rules tuned on fixture
//! counters, the rules changed: a netem qdisc counts fewer drops than TCP counts retransmits;
//! loss in the other direction is not the verdict's; reordering is named as reordering; the
//! window limits the judged direction, with the bound and the buffers that lift it, sized for
//! what the path carried (a virtual path has no hardware ceiling).

mod common;

use common::{blames_no_cpu, run, with_id};

use std::path::PathBuf;

use linerate_facts::{Cause, EndFacts, QdiscsSeen, Severity, TcpBufferSizes};
use linerate_model::HostStackCeiling;
use linerate_proto::{Direction, HostCpuLoad, RdmaOp, TestKind};
use linerate_rules::{DiagnoseInput, Measured};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A capture and what it was captured under.
struct Capture {
    name: String,
    doc: Value,
}

impl Capture {
    fn load(name: &str) -> Capture {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/doctor/netem-lab")
            .join(format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let doc: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(doc["capture"]["name"], name, "{}", path.display());
        Capture {
            name: name.to_string(),
            doc,
        }
    }

    fn field<T: DeserializeOwned>(&self, v: &Value, what: &str) -> T {
        serde_json::from_value(v.clone())
            .unwrap_or_else(|e| panic!("{}: {what}: {e}: {v}", self.name))
    }

    /// The rules' input, as `linerate_doctor::assemble` builds it: both ends' facts, the
    /// qdiscs' counters and the host stack's bound from `path`, and each test as
    /// `assemble::measured` takes it, with this host's CPU during it from the test's own
    /// measurement of it (`disturbance.local_cpu`: doctor's is taken around the same test).
    fn input(&self) -> DiagnoseInput {
        let path = &self.doc["path"];
        let host_stack = path["stack_ceiling_gbps"].as_f64().map(|gbps| {
            let basis = path["stack_basis"].as_str().unwrap_or_default().to_string();
            HostStackCeiling {
                gbps,
                copies_per_core: if basis.starts_with("one ") { 1 } else { 2 },
                explain: format!("{basis}: at most {gbps} Gb/s"),
                basis,
            }
        });
        DiagnoseInput {
            local: self.field::<EndFacts>(&path["local"], "path.local"),
            remote: Some(self.field::<EndFacts>(&path["remote"], "path.remote")),
            tests: self.doc["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| self.measured(t))
                .collect(),
            host_stack,
            counter_deltas: self.field(&path["counter_deltas"], "path.counter_deltas"),
            qdiscs: self.field::<QdiscsSeen>(&path["qdiscs"], "path.qdiscs"),
        }
    }

    fn measured(&self, t: &Value) -> Measured {
        let f = |v: &Value| v.as_f64();
        let params = &t["params"];
        let kind: TestKind = self.field(&params["kind"], "params.kind");
        let rdma: Option<RdmaOp> = self.field(&params["rdma"]["op"], "params.rdma.op");
        let local_cpu: Option<HostCpuLoad> =
            self.field(&t["disturbance"]["local_cpu"], "disturbance.local_cpu");
        let limited = &t["tcp_limited"];
        Measured {
            kind,
            direction: self.field(&t["direction"], "direction"),
            rdma,
            latency: params["rdma"]["latency"]
                .as_bool()
                .unwrap_or(kind.is_latency()),
            streams: self.field(&t["streams"], "streams"),
            gbps: f(&t["gbps"]).unwrap(),
            sender_cpu_percent: f(&t["sender"]["cpu_percent"]),
            receiver_cpu_percent: f(&t["receiver"]["cpu_percent"]),
            max_stream_cpu_percent: t["per_stream"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| [f(&s["sender_cpu_percent"]), f(&s["receiver_cpu_percent"])])
                .flatten()
                .reduce(f64::max),
            busiest_core_percent: local_cpu.and_then(|h| h.busiest_core_percent),
            busiest_core_others_percent: local_cpu.and_then(|h| h.busiest_core_others_percent),
            other_cores: local_cpu.and_then(|h| h.other_cores),
            steal_cores: local_cpu.and_then(|h| h.steal_cores),
            retransmits: t["retransmits"].as_u64(),
            segments: t["segments"].as_u64(),
            spurious_retransmits: t["spurious_retransmits"].as_u64(),
            rtt_us: f(&t["rtt_us"]),
            tcp_busy_percent: f(&limited["busy_percent"]),
            rwnd_limited_percent: f(&limited["receive_window_percent"]),
            sndbuf_limited_percent: f(&limited["send_buffer_percent"]),
            loss_percent: f(&t["loss_percent"]),
            lost_packets: None,
            receiver_udp: None,
            error: t["error"].as_str().map(str::to_string),
            discard: params["discard"].as_bool().unwrap_or(false),
            remote_cpu: self.field(&t["disturbance"]["remote_cpu"], "disturbance.remote_cpu"),
        }
    }
}

/// The best TCP bandwidth result of the capture, either direction.
fn best_tcp(i: &DiagnoseInput) -> f64 {
    i.tests
        .iter()
        .filter(|t| t.kind == TestKind::TcpBw && !t.discard)
        .map(|t| t.gbps)
        .fold(0.0, f64::max)
}

#[test]
fn netem_loss_counts_fewer_drops_than_tcp_counts_retransmits() {
    // `netem loss 1%` on b's egress: the qdisc counted 28 drops of 13 839 packets while the
    // receive test retransmitted 100 of 10 195 segments (a lost segment is sent again more
    // than once). The send direction was the slower (0.013 Gb/s: the guests' CPUs were shared).
    let c = Capture::load("loss1b");
    let mut i = c.input();
    let d = run("netem loss 1% on the remote egress", &i);
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].severity, Severity::Warning, "{}", q[0].message);
    assert_eq!(q[0].subject, "remote:enp1s0");
    assert!(
        q[0].message.starts_with(
            "the netem qdisc 8009 on the remote enp1s0 dropped 28 packets it sent (the receive direction)"
        ),
        "{}",
        q[0].message
    );
    let r: Vec<_> = with_id(&d, "net.retransmits")
        .into_iter()
        .filter(|f| f.subject.starts_with("test:tcp_bw"))
        .collect();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].subject, "test:tcp_bw receive 1 stream(s)");
    assert!(
        r[0].message
            .contains("the netem qdisc 8009 on the remote enp1s0 dropped 28 packets")
            && !r[0].message.contains("no qdisc of either end"),
        "{}",
        r[0].message
    );
    // The UDP test (the send direction) lost 0.97% with TCP in that direction losing nothing:
    // the receiving guest's, a note.
    let u = with_id(&d, "net.retransmits")
        .into_iter()
        .find(|f| f.subject == "test:udp_bw send 1 stream(s)")
        .unwrap();
    assert_eq!(u.severity, Severity::Info, "{}", u.message);
    // The verdict is about the send direction, which lost nothing: it does not quote the loss.
    assert!(
        d.verdict.summary.contains("send direction"),
        "{}",
        d.verdict.summary
    );
    assert_ne!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    assert!(!d.verdict.summary.contains("loss"), "{}", d.verdict.summary);

    // Had the receive direction been the slower, the verdict would name the qdisc.
    for t in &mut i.tests {
        if t.direction == Direction::Send && t.kind == TestKind::TcpBw {
            t.gbps = 0.09 * f64::from(t.streams);
        }
    }
    let d = run("the lossy direction judged", &i);
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict.summary.starts_with(
            "limited by packet loss and retransmissions (the netem qdisc 8009 on the remote enp1s0 dropped 28 packets it sent (the receive direction)): receive direction"
        ),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn a_handful_of_netem_drops_is_named_but_not_accused() {
    // `netem loss 0.1%` on a's egress: 4 drops of 16 577 packets; the send test retransmitted
    // 23 segments (below `RETRANSMITS_MIN`), the UDP test lost 0.03%.
    let c = Capture::load("loss01a");
    let d = run("netem loss 0.1% on the local egress", &c.input());
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].severity, Severity::Info, "{}", q[0].message);
    assert_eq!(q[0].subject, "local:enp1s0");
    assert!(
        q[0].message.starts_with(
            "the netem qdisc 8002 on the local enp1s0 dropped 4 packets it sent (the send direction)"
        ) && q[0].message.contains("too few to cost a stream its rate"),
        "{}",
        q[0].message
    );
    assert!(with_id(&d, "net.retransmits").is_empty());
    assert_ne!(d.verdict.limited_by, Cause::Retransmits);
    assert!(!d.verdict.summary.contains("loss"), "{}", d.verdict.summary);
}

#[test]
fn heavy_netem_loss_is_the_verdict_named_with_its_qdisc() {
    // `netem loss 5%` on b's egress under 64 KiB / 128 KiB buffer limits: 133 drops of 3 554
    // packets, 181 segments retransmitted by the receive test, the slower direction.
    let c = Capture::load("loss5b");
    let d = run("netem loss 5% on the remote egress", &c.input());
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].severity, Severity::Warning);
    assert_eq!(q[0].subject, "remote:enp1s0");
    assert_eq!(q[0].evidence["drops"], "133");
    let r = with_id(&d, "net.retransmits");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].subject, "test:tcp_bw receive 1 stream(s)");
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict.summary.starts_with(
            "limited by packet loss and retransmissions (the netem qdisc 8006 on the remote enp1s0 dropped 133 packets it sent (the receive direction)): receive direction"
        ),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn netem_reordering_is_named_as_reordering_not_loss() {
    // `netem delay 10ms reorder 25% 50%` on b's egress: 195 requeues (netem's count of the
    // packets it sent ahead of their turn), nothing dropped; the receive test retransmitted 106
    // segments and carried a third of the send direction. Before #30, `path.asymmetric` said
    // this host receives slower.
    let c = Capture::load("reorder2");
    let d = run("netem reorder", &c.input());
    assert!(with_id(&d, "path.asymmetric").is_empty());
    assert!(with_id(&d, "net.qdisc_drops").is_empty());
    let r = with_id(&d, "net.reordering");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].severity, Severity::Warning);
    assert_eq!(r[0].subject, "remote:enp1s0");
    assert!(
        r[0].message.starts_with(
            "the netem qdisc 8001 on the remote enp1s0 sent 195 packets out of their order (the receive direction;"
        ) && r[0].message.contains("reordered, not lost"),
        "{}",
        r[0].message
    );
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict.summary.starts_with("limited by packet reordering, which TCP takes for loss (the netem qdisc 8001 on the remote enp1s0 sent 195 packets out of their order (the receive direction)): receive direction"),
        "{}",
        d.verdict.summary
    );
    blames_no_cpu(&d);

    // `netem delay 1ms` alone: 299 requeues from a full virtio ring, no reordering asked for.
    let c = Capture::load("delay1");
    let i = c.input();
    assert_eq!(i.qdiscs.remote.as_ref().unwrap()[0].requeues, 299);
    let d = run("netem delay, requeues of a full ring", &i);
    assert!(with_id(&d, "net.reordering").is_empty());
    assert!(with_id(&d, "net.qdisc_drops").is_empty());
    assert_ne!(d.verdict.limited_by, Cause::Retransmits);
}

#[test]
fn the_window_limits_the_judged_direction_with_its_bound_and_buffers_sized_for_the_path() {
    // `netem delay 20ms 5ms` on b's egress, tcp_wmem max 64 KiB and tcp_rmem max 128 KiB on
    // both guests: the send test waited on the window 63% (TCP_INFO); the receive test, the
    // slower (jitter reorders its data), 9%, with 52 kB in flight at 32 ms.
    let c = Capture::load("delay20s");
    let i = c.input();
    let d = run("netem delay 20ms 5ms, 64 KiB buffers", &i);
    assert!(with_id(&d, "path.asymmetric").is_empty());
    let w = with_id(&d, "tcp.buffers_small");
    assert_eq!(w.len(), 1);
    // The finding is about the judged (slower) direction's test.
    assert_eq!(w[0].subject, "test:tcp_bw receive 1 stream(s)");
    assert_eq!(d.verdict.limited_by, Cause::TcpBuffers);
    // A virtual path: the buffers are sized for what it carried with a margin, not for the
    // host stack's bound (17.6 Gb/s here, which asked for 128 MiB).
    let stack = i.host_stack.as_ref().unwrap().gbps;
    let target = best_tcp(&i) * linerate_rules::thresholds::BUFFER_MARGIN;
    assert!(target < stack / 10.0, "{target} vs {stack}");
    let target = (target * 1000.0).ceil() / 1000.0;
    let sizes = TcpBufferSizes::for_path(target, 33.0);
    let want = format!(
        "limited by TCP socket buffer limits (a window of at most 65536 bytes over a 32.5 ms round trip allows 0.016 Gb/s per stream; buffers of {} bytes on both ends, which `linerate setup sysctl --rtt-ms 33 --gbps {target} --apply` writes, allow {target} Gb/s): receive direction (the slower): one TCP stream 0.01 Gb/s",
        sizes.tcp_rmem[2]
    );
    assert!(
        d.verdict.summary.starts_with(&want),
        "{}\n{want}",
        d.verdict.summary
    );
    assert_eq!(w[0].evidence["buffers_for_gbps"], target.to_string());
    assert_eq!(w[0].evidence["buffers_for_rtt_ms"], "33");
    assert_eq!(
        w[0].evidence["net.ipv4.tcp_rmem max"],
        sizes.tcp_rmem[2].to_string()
    );
    assert_eq!(
        w[0].evidence["net.core.rmem_max"],
        sizes.core_max.to_string()
    );
    assert!(
        w[0].fix.contains(&format!(
            "`linerate setup sysctl --rtt-ms 33 --gbps {target} --apply` writes buffers"
        )) && w[0]
            .fix
            .contains("sysctl -p /etc/sysctl.d/90-linerate.conf"),
        "{:?}",
        w[0].fix
    );
}

#[test]
fn netem_rate_is_named_as_the_shaper_that_limits() {
    // `netem rate 20Mbit` on b's egress: the receive direction carried 0.019 Gb/s.
    let c = Capture::load("rate2");
    let d = run("netem rate 20Mbit on the remote egress", &c.input());
    assert_eq!(d.verdict.limited_by, Cause::Shaper, "{}", d.verdict.summary);
    assert!(
        d.verdict.summary.starts_with(
            "limited by a netem shaper at 0.02 Gbit/s on the remote enp1s0: receive direction"
        ),
        "{}",
        d.verdict.summary
    );
    let s = with_id(&d, "net.shaper");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].subject, "remote:enp1s0");
    assert!(with_id(&d, "tcp.buffers_small").is_empty());
}

#[test]
fn a_clean_link_names_no_loss_reordering_or_shaper() {
    // No netem; 64 KiB / 128 KiB buffer limits on both guests, so the window is what limits.
    let c = Capture::load("clean");
    let d = run("no netem", &c.input());
    for id in ["net.qdisc_drops", "net.reordering", "net.shaper"] {
        assert!(with_id(&d, id).is_empty(), "{id}");
    }
    // TCP lost nothing. The UDP test lost 3.2% of its datagrams at 0.033 Gb/s while TCP in
    // the same direction carried 0.054 and 0.07 Gb/s and retransmitted none: the guest receiving them
    // dropped them, not the path (a note, not a warning, and not the verdict's).
    let r = with_id(&d, "net.retransmits");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].subject, "test:udp_bw send 1 stream(s)");
    assert_eq!(r[0].severity, Severity::Info);
    assert!(
        r[0].message.starts_with("3.19% of datagrams were lost")
            && r[0].message.contains(
                "TCP in the same direction carried 0.07 Gb/s and retransmitted 0 segments"
            )
            && r[0]
                .message
                .contains("the receiving end dropped them, not the path"),
        "{}",
        r[0].message
    );
    assert_eq!(
        d.verdict.limited_by,
        Cause::TcpBuffers,
        "{}",
        d.verdict.summary
    );
}

#[test]
fn netem_loss_on_this_ends_egress_is_the_send_directions_and_udp_lost_it_too() {
    // `netem loss 5%` on a's egress: 195 drops of 6 874 packets; the send tests retransmitted
    // 86 and 191 segments and the UDP test (send) lost 5.4%: TCP lost as much, so the path
    // (the qdisc) lost the datagrams, not the receiving guest.
    let c = Capture::load("loss5a");
    let d = run("netem loss 5% on the local egress", &c.input());
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].severity, Severity::Warning);
    assert_eq!(q[0].subject, "local:enp1s0");
    assert!(
        q[0].message.starts_with(
            "the netem qdisc 8001 on the local enp1s0 dropped 195 packets it sent (the send direction)"
        ),
        "{}",
        q[0].message
    );
    let r = with_id(&d, "net.retransmits");
    assert_eq!(r.len(), 3, "{r:?}");
    for f in r {
        assert_eq!(f.severity, Severity::Warning, "{}", f.message);
        assert!(f.subject.contains(" send "), "{}", f.subject);
        assert!(
            f.message
                .contains("the netem qdisc 8001 on the local enp1s0 dropped 195 packets"),
            "{}",
            f.message
        );
    }
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict.summary.starts_with(
            "limited by packet loss and retransmissions (the netem qdisc 8001 on the local enp1s0 dropped 195 packets it sent (the send direction)): send direction"
        ),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn a_shaper_on_the_far_ends_egress_is_no_verdict_for_the_send_direction() {
    // `netem rate 20mbit` on b's egress with the machine loaded (load average 5-7 on 2 cores):
    // stalls brought both directions to 0.015 Gb/s and the send direction was judged. The
    // shaper is named on b, but it limits only what b sends: before, the verdict put the send
    // direction down to it.
    let c = Capture::load("rate-loaded");
    let d = run("netem rate on the remote egress, send judged", &c.input());
    assert!(
        d.verdict.summary.contains(": send direction (the slower)"),
        "{}",
        d.verdict.summary
    );
    let s = with_id(&d, "net.shaper");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].subject, "remote:enp1s0");
    assert_ne!(d.verdict.limited_by, Cause::Shaper, "{}", d.verdict.summary);
    assert!(
        !d.verdict.summary.contains("netem"),
        "{}",
        d.verdict.summary
    );

    // Judged on the receive direction (the send one faster), it is the verdict.
    let mut i = c.input();
    for t in &mut i.tests {
        if t.kind == TestKind::TcpBw && t.direction == Direction::Send {
            t.gbps = 0.05;
        }
    }
    let d = run("the shaped direction judged", &i);
    assert_eq!(d.verdict.limited_by, Cause::Shaper, "{}", d.verdict.summary);
    // Below the shaper's rate the verdict quotes the finding's noun (it once read "limited by
    // a netem qdisc limits enp1s0 ...").
    assert!(
        d.verdict.summary.starts_with(
            "limited by a netem shaper at 0.02 Gbit/s on the wire on the remote enp1s0 (see the `net.shaper` finding): "
        ) && d
            .verdict
            .summary
            .contains(": receive direction (the slower)"),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn netem_delay_jitter_is_named_as_reordering() {
    // `netem delay 20ms 5ms` on b's egress under 128 KiB / 256 KiB buffer limits: netem sends
    // each packet at its own time, so the jitter reorders what b sends; it counted no requeue,
    // and b reported the qdisc for its options (`reorders`) with 6 142 packets passed. The
    // receive test retransmitted 23 segments. Before, the receive direction was put on a slower
    // end (`path.asymmetric`: "this host receives slower").
    let c = Capture::load("delay20-jitter");
    let i = c.input();
    let q = &i.qdiscs.remote.as_ref().unwrap()[0];
    assert!(q.reorders && q.requeues == 0 && q.drops == 0, "{q:?}");
    let d = run("netem delay 20ms 5ms on the remote egress", &i);
    assert!(with_id(&d, "path.asymmetric").is_empty());
    assert!(with_id(&d, "net.qdisc_drops").is_empty());
    let r = with_id(&d, "net.reordering");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].severity, Severity::Warning);
    assert_eq!(r[0].subject, "remote:enp1s0");
    assert!(
        r[0].message.starts_with(
            "the netem qdisc 8007 on the remote enp1s0 reordered what it sent by its delay jitter (the receive direction;"
        ) && r[0].message.contains("retransmitted 23 segments"),
        "{}",
        r[0].message
    );
    blames_no_cpu(&d);
    // The kernel counted the receive test waiting on the window (16% + 1%, 75 kB of a 128 KiB
    // window in flight): the window is the verdict, with the reordering named beside it.
    assert_eq!(
        d.verdict.limited_by,
        Cause::TcpBuffers,
        "{}",
        d.verdict.summary
    );
}
