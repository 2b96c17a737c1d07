//! RDMA: `rdma.vs_tcp`, RDMA and TCP on the same path side by side with the ceiling: what the
//! IP stack costs, and whether the hardware holds both back.

use std::fmt::Write as _;

use linerate_facts::{Finding, FindingId, Severity};
use linerate_proto::Direction;
use linerate_units::fmt_round;

use super::context::{path_ceiling, Ctx};
use super::registry::{rule, FromFacts};
use crate::thresholds::{
    IP_STACK_EXPLAINS_PERCENT, IP_STACK_VISIBLE_PERCENT, IP_STACK_WARNING_PERCENT,
    RDMA_NEAR_CEILING_FRACTION,
};

/// Evidence key of `rdma.vs_tcp`: how much slower TCP is than RDMA, %.
const IP_STACK_COST: &str = "ip_stack_cost_percent";

/// Does this finding put TCP's gap down to the IP stack (TCP ≥ 10% below RDMA on the path)?
pub(super) fn ip_stack_explains(f: &Finding) -> bool {
    f.id == FindingId::RdmaVsTcp
        && f.evidence
            .get(IP_STACK_COST)
            .and_then(|c| c.parse::<f64>().ok())
            .is_some_and(|c| c >= IP_STACK_EXPLAINS_PERCENT)
}

/// RDMA and TCP on the same path, side by side with the ceiling: what the IP stack costs,
/// and whether the hardware holds both back. None without an RDMA bandwidth result.
impl FromFacts for rule::RdmaVsTcp {
    type Output = Option<Finding>;

    fn run(self, c: &Ctx<'_>) -> Option<Finding> {
        let i = c.i;
        let rdma = i
            .tests
            .iter()
            .filter(|t| t.is_rdma_bw())
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
        let tcp = i
            .tests
            .iter()
            .filter(|t| t.is_tcp_bw(Direction::Send))
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
        let pc = path_ceiling(i, Direction::Send);
        let (r, t) = (rdma.gbps, tcp.gbps);
        if r <= 0.0 {
            return None;
        }
        let cost = (1.0 - t / r) * 100.0;
        // The conclusion first (the verdict quotes what precedes the first colon).
        let mut msg = if cost >= IP_STACK_VISIBLE_PERCENT {
            format!("the IP stack and CPU, which cost {cost:.0}%")
        } else {
            "TCP keeps up with RDMA on this path".to_string()
        };
        let _ = write!(
            msg,
            ": RDMA {} Gb/s, TCP {} Gb/s ({} stream{})",
            fmt_round(r, 2),
            fmt_round(t, 2),
            tcp.streams,
            if tcp.streams == 1 { "" } else { "s" }
        );
        let near = pc
            .gbps
            .filter(|c| *c > 0.0 && r >= RDMA_NEAR_CEILING_FRACTION * c);
        match (pc.gbps, near) {
            (Some(c), Some(_)) => {
                let _ = write!(msg, "; {} caps both near {}", pc.why, fmt_round(c, 1));
            }
            (Some(_), None) if pc.per_stream => {
                msg.push_str("; the path has no hardware ceiling to set RDMA against");
            }
            (Some(c), None) if c > 0.0 => {
                let _ = write!(
                    msg,
                    "; RDMA itself reaches {:.0}% of the {} Gb/s ceiling, so the hardware path (link, PCIe, cable, switch) falls short too",
                    r / c * 100.0,
                    fmt_round(c, 1)
                );
            }
            _ => {}
        }
        let severity = if cost > IP_STACK_WARNING_PERCENT {
            Severity::Warning
        } else {
            Severity::Info
        };
        let fix = if cost > IP_STACK_WARNING_PERCENT {
            "TCP leaves much of what the hardware does unused: more streams (-P), IPoIB connected mode with MTU 65520 or jumbo frames, IRQs and threads on the NIC's NUMA node; or use RDMA directly (NFS over RDMA, MPI, ...)"
        } else if pc.per_stream {
            "nothing to fix in the IP stack"
        } else {
            "nothing to fix in the IP stack; the gap to the ceiling, if any, is in the hardware path"
        };
        Some(
            Finding::new(FindingId::RdmaVsTcp, severity, "path")
                .evidence("rdma (Gb/s)", format!("{r:.2}"))
                .evidence("rdma test", rdma.kind_name())
                .evidence("tcp (Gb/s)", format!("{t:.2}"))
                .evidence(IP_STACK_COST, format!("{cost:.1}"))
                .evidence(
                    "ceiling (Gb/s)",
                    pc.gbps.map_or("unknown".into(), |c| format!("{c:.2}")),
                )
                .message(msg)
                .fix(fix),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic, rdma, tcp};

    fn vs(rdma_gbps: f64, tcp_gbps: f64) -> Option<Finding> {
        let i = input(
            nic("ib0", 100.0),
            Some(nic("ib0", 100.0)),
            vec![rdma(rdma_gbps), tcp(Direction::Send, 1, tcp_gbps)],
        );
        rule::RdmaVsTcp.run(&Ctx::new(&i))
    }

    #[test]
    fn tcp_far_below_rdma_is_the_ip_stacks_cost() {
        let f = vs(90.0, 40.0).expect("both results");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.starts_with(
                "the IP stack and CPU, which cost 56%: RDMA 90 Gb/s, TCP 40 Gb/s (1 stream)"
            ),
            "{}",
            f.message
        );
        // RDMA near the 94 Gb/s ceiling: the hardware caps both.
        assert!(
            f.message.contains("the local link rate caps both near 94"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence[IP_STACK_COST], "55.6");
        assert!(ip_stack_explains(&f));
    }

    #[test]
    fn tcp_close_to_rdma_keeps_up() {
        let f = vs(90.0, 89.5).expect("both results");
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.starts_with("TCP keeps up with RDMA on this path"),
            "{}",
            f.message
        );
        assert!(!ip_stack_explains(&f));
        // A cost between visible and explaining: said, but not what explains a gap.
        let f = vs(90.0, 85.0).expect("both results");
        assert!(
            f.message.starts_with("the IP stack and CPU, which cost 6%"),
            "{}",
            f.message
        );
        assert!(!ip_stack_explains(&f));
    }

    #[test]
    fn rdma_far_below_the_ceiling_says_the_hardware_falls_short() {
        let f = vs(50.0, 45.0).expect("both results");
        assert!(
            f.message
                .contains("RDMA itself reaches 53% of the 94 Gb/s ceiling"),
            "{}",
            f.message
        );
    }

    #[test]
    fn without_both_results_nothing_is_said() {
        let only_tcp = input(nic("ib0", 100.0), None, vec![tcp(Direction::Send, 1, 40.0)]);
        assert!(rule::RdmaVsTcp.run(&Ctx::new(&only_tcp)).is_none());
        let only_rdma = input(nic("ib0", 100.0), None, vec![rdma(90.0)]);
        assert!(rule::RdmaVsTcp.run(&Ctx::new(&only_rdma)).is_none());
    }
}
