//! The RDMA transport's own losses (rxe's and mlx5's `hw_counters`), per direction: what this
//! end sent and lost (the requester's view: a timeout waiting for an acknowledgement, a NAK for
//! a sequence gap, retries run out) and what was sent to this end and arrived out of sequence
//! or twice (the responder's view: the sender had to retransmit). Which counters are which:
//! the counter table's roles `RdmaSentLost` and `RdmaReceivedLost`, with what rxe counts under
//! loss beside them. And what RoCE's congestion control (DCQCN) did where the device counts it
//! (mlx5's `rp_cnp_handled`, `np_cnp_sent`: roles `CnpHandled`, `CnpSent`): whether a loss
//! happened with ECN acting or without it, and congestion control at work with nothing lost.

use linerate_facts::CounterRole::{CnpHandled, CnpSent, RdmaReceivedLost, RdmaSentLost};

use super::{count, finding, Out};
use crate::port::PortCtx;
use crate::tracker::CounterTrack;
use crate::verdict::{RuleId, Unit};

/// The RDMA transport's own retransmits and sequence errors, per direction: with an error
/// counter of the port moving, the losses are this link's (`retrans_with_errors`); with none,
/// they happened on the path beyond it (`rdma_retransmits`). `errors`: the port's
/// [`error_counters`].
pub(crate) fn rdma_transport(ctx: &PortCtx, errors: &[&CounterTrack], out: &mut Out) {
    let moved = |role| -> Vec<&CounterTrack> { ctx.role(role).filter(|c| c.delta > 0).collect() };
    let moved_error = errors.iter().find(|c| c.delta > 0);
    let rule = if moved_error.is_some() {
        RuleId::RetransWithErrors
    } else {
        RuleId::RdmaRetransmits
    };
    let cc = without_congestion_control(ctx);
    let mut lost = false;
    for (counters, words, cc) in [
        (
            moved(RdmaSentLost),
            "packets this end sent (or their acknowledgements) were lost on the way: this end's send direction",
            cc.as_str(),
        ),
        (
            moved(RdmaReceivedLost),
            "packets sent to this end arrived out of sequence or twice, so its peer retransmitted: this end's receive direction",
            "",
        ),
    ] {
        for c in counters {
            lost = true;
            out.check(rule, Some(c), c.delta as f64, 0.0, Unit::Count, || match moved_error {
                Some(e) => format!(
                    "the RDMA transport counted {} {} while {} moved on this port: {words}, and the losses are this link's",
                    count(c),
                    c.key.name,
                    e.key.name
                ),
                None => format!(
                    "the RDMA transport counted {} {}: {words}; no error counter of this port moved, so they were lost on the path beyond this cable (congestion, a lossy hop, a drop policy), not on it{cc}",
                    count(c),
                    c.key.name
                ),
            });
        }
    }
    congestion_notes(ctx, lost, out);
}

/// Words for a loss of this end's send direction on a device that counts the congestion
/// notifications it handled, none of which it handled: ECN did not act. Empty elsewhere (rxe
/// and InfiniBand count none), or when it did act ([`congestion_notes`] says so).
fn without_congestion_control(ctx: &PortCtx) -> String {
    match ctx.role(CnpHandled).next() {
        Some(c) if c.delta == 0 => format!(
            "; congestion control did not act ({} did not move: no ECN mark reached this end), \
             so on RoCE without PFC on its priority every congestion is a loss (`linerate \
             probe`: `roce.lossy`, `roce.pfc_other_priority`)",
            c.key.name
        ),
        _ => String::new(),
    }
}

/// `rdma_congestion_control`: a note per congestion-notification counter that moved, saying
/// what RoCE's congestion control did: working (the transport lost nothing), or acting while
/// the transport still lost packets (`lost`: more congestion than ECN holds back).
fn congestion_notes(ctx: &PortCtx, lost: bool, out: &mut Out) {
    let outcome = if lost {
        "yet the RDMA transport still lost packets (above): more congestion than ECN holds back, \
         on a priority PFC does not protect"
    } else {
        "and the RDMA transport lost nothing: congestion control working"
    };
    let handled = ctx.role(CnpHandled).map(|c| {
        (
            c,
            "ECN marked this end's packets on the way and it slowed down for them (DCQCN's \
             reaction point)",
        )
    });
    let sent = ctx.role(CnpSent).map(|c| {
        (
            c,
            "packets reached this end marked by ECN and it told their sender to slow down \
             (DCQCN's notification point): the path was congested towards it",
        )
    });
    for (c, what) in handled.chain(sent).filter(|(c, _)| c.delta > 0) {
        out.push(finding(
            RuleId::RdmaCongestionControl,
            Some(c),
            Some(c.delta as f64),
            None,
            Unit::Count,
            format!("{} rose by {}: {what}; {outcome}", c.key.name, count(c)),
        ));
    }
}
