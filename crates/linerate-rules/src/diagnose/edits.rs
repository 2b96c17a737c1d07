//! The rules' edits of each other's output, each named, with the rule whose findings it edits
//! and the output that decides it. They apply once every rule over the facts has run, before
//! the rules over the findings judge what is left. The verdict reads each rule's output as the
//! rule made it (`cpu.saturated` fired, whatever an edit dropped of it).

use linerate_facts::{Finding, FindingId};

use super::cpu::one_stream_subject;
use super::registry::{FactOutputs, Rule};

/// An edit of one rule's findings by another rule's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Edit {
    /// The window explains the test: drop `cpu.saturated` of that test (`tcp.buffers_small`'s
    /// subject, one stream of its direction). A busy core on it is a symptom, not the cause.
    WindowExplainsItsTest,
}

impl Edit {
    /// Every edit, in the order they apply.
    pub(super) const ALL: &'static [Self] = &[Self::WindowExplainsItsTest];

    /// The rule whose findings it edits.
    pub(super) fn of(self) -> Rule {
        match self {
            Self::WindowExplainsItsTest => Rule::CpuSaturated,
        }
    }

    /// Does it drop `f`, a finding of [`Edit::of`]'s?
    fn drops(self, facts: &FactOutputs, f: &Finding) -> bool {
        match self {
            Self::WindowExplainsItsTest => facts.tcp_buffers_small.as_ref().is_some_and(|w| {
                f.id == FindingId::CpuSaturated && f.subject == one_stream_subject(w.dir)
            }),
        }
    }
}

/// The findings of the rules over the facts, in the table's order, less what the edits drop.
pub(super) fn apply(facts: &FactOutputs) -> Vec<Finding> {
    let mut out = Vec::new();
    for (rule, output) in facts.each() {
        out.extend(
            output
                .findings()
                .iter()
                .filter(|f| {
                    !Edit::ALL
                        .iter()
                        .any(|e| e.of() == rule && e.drops(facts, f))
                })
                .cloned(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::context::Ctx;
    use crate::diagnose::testing::{input, nic, tcp};
    use crate::diagnose::verdict::Reading;
    use crate::diagnose::{DiagnoseInput, Measured};
    use linerate_proto::Direction;

    /// Two 10 Gb/s NICs; one stream each way, both senders' threads at a full core; the send
    /// test over a 20 ms round trip waited on the receive window, the receive test is slower.
    fn window_and_cores() -> DiagnoseInput {
        let mut local = nic("eth0", 10.0);
        local.sockets.tcp_wmem = Some([4096, 16_384, 4 << 20]);
        let mut remote = nic("eth1", 10.0);
        remote.sockets.tcp_rmem = Some([4096, 131_072, 6 << 20]);
        let busy = |t: Measured| Measured {
            sender_cpu_percent: Some(99.0),
            ..t
        };
        let windowed = Measured {
            rtt_us: Some(20_000.0),
            tcp_busy_percent: Some(99.0),
            rwnd_limited_percent: Some(40.0),
            sndbuf_limited_percent: Some(0.0),
            ..busy(tcp(Direction::Send, 1, 1.0))
        };
        input(
            local,
            Some(remote),
            vec![windowed, busy(tcp(Direction::Receive, 1, 0.9))],
        )
    }

    #[test]
    fn the_window_takes_back_the_busy_core_of_its_test_only() {
        let i = window_and_cores();
        let c = Ctx::new(&i);
        let facts = FactOutputs::run(&c);
        assert_eq!(facts.cpu_saturated.len(), 2);
        assert_eq!(
            facts.tcp_buffers_small.as_ref().map(|w| w.dir),
            Some(Direction::Send)
        );
        let kept: Vec<String> = apply(&facts)
            .into_iter()
            .filter(|f| f.id == FindingId::CpuSaturated)
            .map(|f| f.subject)
            .collect();
        assert_eq!(kept, ["test:tcp_bw receive 1 stream"]);
        // The verdict still reads that a core limited a stream, and the window (of the send
        // direction) is not the judged direction's.
        let r = Reading::of(&c, &facts);
        assert!(r.cpu_limited && r.window.is_none());
    }

    #[test]
    fn without_the_window_nothing_is_taken_back() {
        let mut i = window_and_cores();
        i.tests[0].rtt_us = None;
        let c = Ctx::new(&i);
        let facts = FactOutputs::run(&c);
        assert!(facts.tcp_buffers_small.is_none());
        let kept = apply(&facts)
            .iter()
            .filter(|f| f.id == FindingId::CpuSaturated)
            .count();
        assert_eq!(kept, 2);
        assert_eq!(Edit::WindowExplainsItsTest.of(), Rule::CpuSaturated);
    }
}
