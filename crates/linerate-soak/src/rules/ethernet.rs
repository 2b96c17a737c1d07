//! Ethernet after FEC, link downs on any port (the carrier's, the PHY's), and the pre-FEC BER
//! estimate.

use linerate_facts::CounterRole::PostFec;

use super::{count, link_downs, Out};
use crate::port::PortCtx;
use crate::report::BerEstimate;
use crate::verdict::{RuleId, Unit};

/// Ethernet after FEC, link downs on any port, and the pre-FEC BER estimate.
pub(crate) fn ethernet_rules(ctx: &PortCtx, ber: Option<&BerEstimate>, out: &mut Out) {
    for c in ctx.role(PostFec) {
        out.check(
            RuleId::PostFecErrors,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                    "{} rose by {}: errors FEC did not correct, traffic is lost (replace the \
                     cable or transceiver)",
                    c.key.name,
                    count(c)
                )
            },
        );
    }
    for c in link_downs(ctx) {
        out.check(
            RuleId::LinkDown,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || format!("{} rose by {}: the link went down", c.key.name, count(c)),
        );
    }
    let limit = ctx.jp.pre_fec_ber;
    if let Some((pre, estimate)) = ber.and_then(|b| b.pre_fec.map(|p| (p, b.estimate))) {
        out.check(RuleId::PreFecBer, None, pre, limit, Unit::Ber, || {
            let label = if estimate {
                " (an estimate: corrected bits over rate × time, the driver exposes no rx_bits_phy)"
            } else {
                ""
            };
            format!("pre-FEC BER {pre:.2e}, above {limit:.0e}{label}")
        });
    }
}
