//! The RDMA transport's own losses (rxe's and mlx5's `hw_counters`), per direction: what this
//! end sent and lost (the requester's view: a timeout waiting for an acknowledgement, a NAK for
//! a sequence gap, retries run out) and what was sent to this end and arrived out of sequence
//! or twice (the responder's view: the sender had to retransmit). Which counters are which:
//! the counter table's roles `RdmaSentLost` and `RdmaReceivedLost`, with what rxe counts under
//! loss beside them.

use linerate_facts::CounterRole::{RdmaReceivedLost, RdmaSentLost};

use super::{count, Out};
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
    for (counters, words) in [
        (
            moved(RdmaSentLost),
            "packets this end sent (or their acknowledgements) were lost on the way: this end's send direction",
        ),
        (
            moved(RdmaReceivedLost),
            "packets sent to this end arrived out of sequence or twice, so its peer retransmitted: this end's receive direction",
        ),
    ] {
        for c in counters {
            out.check(rule, Some(c), c.delta as f64, 0.0, Unit::Count, || match moved_error {
                Some(e) => format!(
                    "the RDMA transport counted {} {} while {} moved on this port: {words}, and the losses are this link's",
                    count(c),
                    c.key.name,
                    e.key.name
                ),
                None => format!(
                    "the RDMA transport counted {} {}: {words}; no error counter of this port moved, so they were lost on the path beyond this cable (congestion, a lossy hop, a drop policy), not on it",
                    count(c),
                    c.key.name
                ),
            });
        }
    }
}
