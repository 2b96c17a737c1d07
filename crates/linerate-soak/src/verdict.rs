//! The words of a judgement: verdicts, the rules that give them, and the sources the rules
//! come from. Kept apart from the rules themselves (`judge.rs`) so the renderers and the JSON
//! schema share one list.

use serde::{Deserialize, Serialize};

/// What a port (or an end, or the whole soak) is judged to be. Ordered from best to worst:
/// the verdict of a group is the worst of its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Enough traffic and time, and no rule fired.
    Clean,
    /// Not enough traffic or time to judge the error budget (or a counter pegged from the
    /// start): the link is not called clean.
    Insufficient,
    /// Only congestion counters moved, or only errors that come from elsewhere in the fabric:
    /// not this cable.
    Congested,
    /// Errors that predict trouble: symbol errors with link recoveries, pre-FEC BER over the
    /// budget.
    Marginal,
    /// Errors that lose traffic or the link: replace or reseat the cable or transceiver.
    Bad,
}

impl Verdict {
    pub const ALL: [Verdict; 5] = [
        Verdict::Clean,
        Verdict::Insufficient,
        Verdict::Congested,
        Verdict::Marginal,
        Verdict::Bad,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clean => "clean",
            Self::Insufficient => "insufficient",
            Self::Congested => "congested",
            Self::Marginal => "marginal",
            Self::Bad => "bad",
        }
    }

    /// The number the Prometheus text file exports (`linerate_soak_verdict`): 0 clean,
    /// 1 insufficient, 2 congested, 3 marginal, 4 bad, so that `> 2` alerts on the cable.
    pub fn metric_value(self) -> u8 {
        match self {
            Self::Clean => 0,
            Self::Insufficient => 1,
            Self::Congested => 2,
            Self::Marginal => 3,
            Self::Bad => 4,
        }
    }
}

/// Where a rule's threshold comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// NVIDIA NVSentinel's nic-health-monitor (link-counter-detection.md).
    Nvsentinel,
    /// infiniband-diags: `IBswcountlimits.pm` and `etc/error_thresholds`.
    InfinibandDiags,
    /// The IBTA's BER 1e-12, as ibdiagnet applies it (`--ber_thresh` default 1e12).
    Ibta,
    /// The kernel's mlx5 `counters.rst`.
    Mlx5Counters,
    /// NVIDIA UFM telemetry bring-up criteria.
    Ufm,
    /// linerate's own reading of this soak (no outside threshold).
    Linerate,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nvsentinel => "nvsentinel",
            Self::InfinibandDiags => "infiniband_diags",
            Self::Ibta => "ibta",
            Self::Mlx5Counters => "mlx5_counters",
            Self::Ufm => "ufm",
            Self::Linerate => "linerate",
        }
    }

    /// The citation, for people.
    pub fn cite(self) -> &'static str {
        match self {
            Self::Nvsentinel => "NVIDIA NVSentinel nic-health-monitor, link-counter-detection",
            Self::InfinibandDiags => "infiniband-diags IBswcountlimits.pm / error_thresholds",
            Self::Ibta => "IBTA BER 1e-12 (ibdiagnet --ber_thresh default)",
            Self::Mlx5Counters => "Linux mlx5 counters.rst",
            Self::Ufm => "NVIDIA UFM telemetry bring-up (Link_Down: delta > 0)",
            Self::Linerate => "linerate: this soak's own measurement",
        }
    }
}

/// A rule of the judge. The string (`as_str`) is stable: scripts and dashboards match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleId {
    LinkDowned,
    LocalLinkIntegrity,
    ExcessiveBufferOverrun,
    SymbolErrorBudget,
    PortRcvErrorsRate,
    LinkErrorRecoveryRate,
    PostFecErrors,
    LinkDown,
    RetransWithErrors,
    SymbolWithRecovery,
    PreFecBer,
    XmitCongestion,
    RemotePhysicalErrors,
    Pam4SymbolErrors,
    PeggedFromStart,
    Saturated,
    CounterReset,
    InsufficientTraffic,
    NoCounters,
}

impl RuleId {
    pub const ALL: [RuleId; 19] = [
        RuleId::LinkDowned,
        RuleId::LocalLinkIntegrity,
        RuleId::ExcessiveBufferOverrun,
        RuleId::SymbolErrorBudget,
        RuleId::PortRcvErrorsRate,
        RuleId::LinkErrorRecoveryRate,
        RuleId::PostFecErrors,
        RuleId::LinkDown,
        RuleId::RetransWithErrors,
        RuleId::SymbolWithRecovery,
        RuleId::PreFecBer,
        RuleId::XmitCongestion,
        RuleId::RemotePhysicalErrors,
        RuleId::Pam4SymbolErrors,
        RuleId::PeggedFromStart,
        RuleId::Saturated,
        RuleId::CounterReset,
        RuleId::InsufficientTraffic,
        RuleId::NoCounters,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::LinkDowned => "link_downed",
            Self::LocalLinkIntegrity => "local_link_integrity",
            Self::ExcessiveBufferOverrun => "excessive_buffer_overrun",
            Self::SymbolErrorBudget => "symbol_error_budget",
            Self::PortRcvErrorsRate => "port_rcv_errors_rate",
            Self::LinkErrorRecoveryRate => "link_error_recovery_rate",
            Self::PostFecErrors => "post_fec_errors",
            Self::LinkDown => "link_down",
            Self::RetransWithErrors => "retrans_with_errors",
            Self::SymbolWithRecovery => "symbol_with_recovery",
            Self::PreFecBer => "pre_fec_ber",
            Self::XmitCongestion => "xmit_congestion",
            Self::RemotePhysicalErrors => "remote_physical_errors",
            Self::Pam4SymbolErrors => "pam4_symbol_errors",
            Self::PeggedFromStart => "pegged_from_start",
            Self::Saturated => "saturated",
            Self::CounterReset => "counter_reset",
            Self::InsufficientTraffic => "insufficient_traffic",
            Self::NoCounters => "no_counters",
        }
    }

    /// The verdict the rule gives when it fires. `Clean` marks a note: it is reported and
    /// changes nothing.
    pub fn verdict(self) -> Verdict {
        match self {
            Self::LinkDowned
            | Self::LocalLinkIntegrity
            | Self::ExcessiveBufferOverrun
            | Self::SymbolErrorBudget
            | Self::PortRcvErrorsRate
            | Self::LinkErrorRecoveryRate
            | Self::PostFecErrors
            | Self::LinkDown
            | Self::RetransWithErrors => Verdict::Bad,
            Self::SymbolWithRecovery | Self::PreFecBer => Verdict::Marginal,
            Self::XmitCongestion | Self::RemotePhysicalErrors => Verdict::Congested,
            Self::PeggedFromStart | Self::InsufficientTraffic | Self::NoCounters => {
                Verdict::Insufficient
            }
            Self::Pam4SymbolErrors | Self::Saturated | Self::CounterReset => Verdict::Clean,
        }
    }

    /// Where its threshold comes from.
    pub fn source(self) -> Source {
        match self {
            Self::LinkDowned
            | Self::LocalLinkIntegrity
            | Self::ExcessiveBufferOverrun
            | Self::LinkErrorRecoveryRate
            | Self::Pam4SymbolErrors => Source::Nvsentinel,
            Self::SymbolErrorBudget | Self::InsufficientTraffic => Source::Ibta,
            Self::PortRcvErrorsRate
            | Self::SymbolWithRecovery
            | Self::XmitCongestion
            | Self::RemotePhysicalErrors
            | Self::PeggedFromStart
            | Self::Saturated => Source::InfinibandDiags,
            Self::PostFecErrors | Self::PreFecBer => Source::Mlx5Counters,
            Self::LinkDown => Source::Ufm,
            Self::RetransWithErrors | Self::CounterReset | Self::NoCounters => Source::Linerate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_the_serde_names() {
        for r in RuleId::ALL {
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::from(r.as_str())
            );
            let s = r.source();
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::Value::from(s.as_str())
            );
            assert!(!s.cite().is_empty());
        }
        for v in Verdict::ALL {
            assert_eq!(
                serde_json::to_value(v).unwrap(),
                serde_json::Value::from(v.as_str())
            );
        }
    }

    #[test]
    fn verdicts_order_worst_last_and_number_the_same_way() {
        let mut sorted = Verdict::ALL;
        sorted.sort();
        assert_eq!(sorted, Verdict::ALL);
        let numbers: Vec<u8> = Verdict::ALL.iter().map(|v| v.metric_value()).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4]);
    }
}
