//! The words of a judgement: verdicts, the rules that give them, the sources the rules come
//! from and the units of their figures. Kept apart from the rules themselves (`rules.rs`) so
//! the renderers and the JSON schema share one list; every list here is generated with its
//! enum (`string_enum!`), and `tests/vocabulary.rs` checks the schema's enums against it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

string_enum! {
    /// What a port (or an end, or the whole soak) is judged to be. Ordered from best to worst:
    /// the verdict of a group is the worst of its members.
    pub enum Verdict {
        /// Enough traffic and time, and no rule fired.
        Clean = "clean",
        /// Not enough traffic or time to judge the error budget (or a counter pegged from the
        /// start): the link is not called clean.
        Insufficient = "insufficient",
        /// Only congestion counters moved, errors that come from elsewhere in the fabric, or
        /// packets this host did not take in time: not this cable.
        Congested = "congested",
        /// Errors that predict trouble or lose a little: symbol errors with link recoveries,
        /// pre-FEC BER or receive errors over their budget.
        Marginal = "marginal",
        /// Errors that lose traffic or the link: replace or reseat the cable or transceiver.
        Bad = "bad",
    }
}

impl Verdict {
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

string_enum! {
    /// Where a rule's threshold comes from (the constants and their citations are in
    /// [`crate::thresholds`]).
    pub enum Source {
        /// NVIDIA NVSentinel's nic-health-monitor (link-counter-detection.md).
        Nvsentinel = "nvsentinel",
        /// infiniband-diags: `IBswcountlimits.pm` and `etc/error_thresholds`.
        InfinibandDiags = "infiniband_diags",
        /// The IBTA's BER 1e-12, as ibdiagnet applies it (`--ber_thresh` default 1e12).
        Ibta = "ibta",
        /// IEEE 802.3's BER objective of 1e-12 at the MAC/PLS service interface (802.3ba for
        /// 40/100G; 1000BASE-X and 10G before it).
        Ieee8023 = "ieee_802_3",
        /// The kernel's mlx5 `counters.rst`.
        Mlx5Counters = "mlx5_counters",
        /// NVIDIA UFM telemetry bring-up criteria.
        Ufm = "ufm",
        /// The kernel's interface statistics (`Documentation/networking/statistics.rst`,
        /// `struct rtnl_link_stats64`).
        KernelStatistics = "kernel_statistics",
        /// linerate's own reading of this soak (no outside threshold).
        Linerate = "linerate",
        /// The device's own alarm and warning thresholds: a module's (SFF-8472, SFF-8636,
        /// CMIS), a NIC sensor's hwmon `_max` and `_crit`.
        Device = "device",
    }
}

impl Source {
    /// The citation, for people.
    pub fn cite(self) -> &'static str {
        match self {
            Self::Nvsentinel => "NVIDIA NVSentinel nic-health-monitor, link-counter-detection",
            Self::InfinibandDiags => "infiniband-diags IBswcountlimits.pm / error_thresholds",
            Self::Ibta => "IBTA BER 1e-12 (ibdiagnet --ber_thresh default)",
            Self::Ieee8023 => "IEEE 802.3 BER 1e-12 objective at the MAC/PLS service interface",
            Self::Mlx5Counters => "Linux mlx5 counters.rst",
            Self::Ufm => "NVIDIA UFM telemetry bring-up (Link_Down: delta > 0)",
            Self::KernelStatistics => {
                "Linux statistics.rst: rx_missed_errors, the host not keeping up"
            }
            Self::Linerate => "linerate: this soak's own measurement",
            Self::Device => {
                "the device's own thresholds: the module's (SFF-8472/8636, CMIS), the sensor's hwmon _max/_crit"
            }
        }
    }
}

string_enum! {
    /// The unit of a finding's or a check's figures.
    pub enum Unit {
        Count = "count",
        PerS = "per_s",
        PerMin = "per_min",
        PerHour = "per_hour",
        Ber = "ber",
        Bits = "bits",
        /// A share of a whole (retransmitted segments per segment sent).
        Fraction = "fraction",
        /// Degrees Celsius.
        Celsius = "celsius",
        /// Decibels (light under a threshold: 10·log10(threshold ÷ reading)).
        Db = "db",
    }
}

/// [`RuleId`] from its rows: each rule once, with its string, the verdict it gives when it
/// fires and the source of its threshold, so a rule cannot exist without either.
macro_rules! rule_ids {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $s:literal => $verdict:ident, $source:ident; )+
        }
    ) => {
        string_enum! {
            $(#[$meta])*
            $vis enum $name {
                $( $(#[$vmeta])* $variant = $s, )+
            }
        }

        impl $name {
            /// The verdict the rule gives when it fires. `Clean` marks a note: it is reported
            /// and changes nothing.
            pub fn verdict(self) -> Verdict {
                match self {
                    $( Self::$variant => Verdict::$verdict, )+
                }
            }

            /// Where its threshold comes from (the judge names NVSentinel instead for a symbol
            /// budget without a signalling rate, and IEEE 802.3 for an Ethernet receive-error
            /// budget).
            pub fn source(self) -> Source {
                match self {
                    $( Self::$variant => Source::$source, )+
                }
            }
        }
    };
}

rule_ids! {
    /// A rule of the judge: its string, its verdict, its source. The string is stable: scripts
    /// and dashboards match on it. The order is the tie-break between rules of the same verdict
    /// (the earlier one names the port's verdict). The rules themselves are `rules/`, one
    /// module per family of `linerate_facts::SoakFamily`.
    pub enum RuleId {
        LinkDowned = "link_downed" => Bad, Nvsentinel;
        LocalLinkIntegrity = "local_link_integrity" => Bad, Nvsentinel;
        ExcessiveBufferOverrun = "excessive_buffer_overrun" => Bad, Nvsentinel;
        SymbolErrorBudget = "symbol_error_budget" => Bad, Ibta;
        /// A receive-error counter (`port_rcv_errors` or an Ethernet equivalent, named in the
        /// finding) above its rate.
        PortRcvErrorsRate = "port_rcv_errors_rate" => Bad, InfinibandDiags;
        LinkErrorRecoveryRate = "link_error_recovery_rate" => Bad, Nvsentinel;
        PostFecErrors = "post_fec_errors" => Bad, Mlx5Counters;
        LinkDown = "link_down" => Bad, Ufm;
        /// A temperature below the port (the module's, the NIC's own sensor) reached its alarm
        /// (the module's high alarm, the sensor's `_crit`).
        TemperatureAlarm = "temperature_alarm" => Bad, Device;
        /// The module's weakest lane received less light than its low alarm.
        RxPowerAlarm = "rx_power_alarm" => Bad, Device;
        RetransWithErrors = "retrans_with_errors" => Bad, Linerate;
        SymbolWithRecovery = "symbol_with_recovery" => Marginal, InfinibandDiags;
        PreFecBer = "pre_fec_ber" => Marginal, Mlx5Counters;
        /// A temperature below the port passed its warning (the module's high warning, the
        /// sensor's `_max`; mlx5's `_crit`, which is its warning).
        TemperatureWarning = "temperature_warning" => Marginal, Device;
        /// The module's weakest lane received less light than its low warning.
        RxPowerWarning = "rx_power_warning" => Marginal, Device;
        /// A receive-error counter over the receive-error budget for the bits received.
        RcvErrorsBudget = "rcv_errors_budget" => Marginal, Ibta;
        XmitCongestion = "xmit_congestion" => Congested, InfinibandDiags;
        RemotePhysicalErrors = "remote_physical_errors" => Congested, InfinibandDiags;
        /// Pause frames received (the peer asked this end to stop sending) or sent (this end
        /// asked its peer to stop) while the direction they slow carried less than
        /// `dip_fraction` of what it carried without them.
        PauseFrames = "pause_frames" => Congested, Mlx5Counters;
        /// `rx_missed_errors` rose: the host did not take packets off the ring in time.
        RxMissed = "rx_missed" => Congested, KernelStatistics;
        /// The RDMA transport retransmitted, or received out of sequence, while no error counter
        /// of the port moved: packets were lost on the path beyond this cable.
        RdmaRetransmits = "rdma_retransmits" => Congested, Linerate;
        /// TCP retransmitted more than `tcp_retrans_fraction` of the segments this end sent,
        /// while no error counter of the port moved: its send direction lost packets on the
        /// path beyond this cable.
        TcpRetransmits = "tcp_retransmits" => Congested, Linerate;
        Pam4SymbolErrors = "pam4_symbol_errors" => Clean, Nvsentinel;
        /// A receive-error counter rose within its budget: the packets lost, said.
        RcvErrors = "rcv_errors" => Clean, Ibta;
        /// TCP's retransmitted share was over `tcp_retrans_fraction` only with the retransmits
        /// TCP itself found spurious (D-SACKed): the sender's timer fired early, nothing lost.
        TcpSpuriousRetransmits = "tcp_spurious_retransmits" => Clean, Linerate;
        /// RoCE's congestion control counted notifications (`rp_cnp_handled`, `np_cnp_sent`):
        /// working when the transport lost nothing, overrun when it lost packets anyway.
        RdmaCongestionControl = "rdma_congestion_control" => Clean, Mlx5Counters;
        /// A temperature below the port rose by more than `temperature_rise_c` over the soak,
        /// under its warning.
        TemperatureRise = "temperature_rise" => Clean, Linerate;
        /// The light the module received just before and after each time the link went down:
        /// light lost (the far transmitter, the fibre) or not (a reset, the far end).
        LinkDownLight = "link_down_light" => Clean, Linerate;
        PeggedFromStart = "pegged_from_start" => Insufficient, InfinibandDiags;
        /// Pegged when the soak began, cleared by someone during it: judged over the rest.
        PeggedThenCleared = "pegged_then_cleared" => Clean, InfinibandDiags;
        Saturated = "saturated" => Clean, InfinibandDiags;
        CounterReset = "counter_reset" => Clean, Linerate;
        InsufficientTraffic = "insufficient_traffic" => Insufficient, Ibta;
        NoCounters = "no_counters" => Insufficient, Linerate;
    }
}

/// The rule behind a verdict (a port's, or the soak's): the rule of the worst finding, or
/// `clean` when none fired. In JSON and the text file it is one string: `clean` or the rule's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerdictRule {
    Clean,
    Rule(RuleId),
}

impl VerdictRule {
    /// The string of [`VerdictRule::Clean`].
    pub const CLEAN: &'static str = "clean";

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clean => Self::CLEAN,
            Self::Rule(r) => r.as_str(),
        }
    }

    /// Every value: `clean`, then every rule.
    pub fn all() -> impl Iterator<Item = VerdictRule> {
        std::iter::once(Self::Clean).chain(RuleId::ALL.iter().map(|r| Self::Rule(*r)))
    }
}

impl From<RuleId> for VerdictRule {
    fn from(r: RuleId) -> Self {
        Self::Rule(r)
    }
}

impl std::str::FromStr for VerdictRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == Self::CLEAN {
            return Ok(Self::Clean);
        }
        s.parse::<RuleId>()
            .map(Self::Rule)
            .map_err(|e| format!("{e}, or {}", Self::CLEAN))
    }
}

impl std::fmt::Display for VerdictRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for VerdictRule {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for VerdictRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for VerdictRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_the_serde_names_and_parse_back() {
        for r in RuleId::ALL {
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::from(r.as_str())
            );
            assert_eq!(r.as_str().parse::<RuleId>(), Ok(*r));
            assert!(!r.source().cite().is_empty());
        }
        for s in Source::ALL {
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::Value::from(s.as_str())
            );
        }
        for v in Verdict::ALL {
            assert_eq!(
                serde_json::to_value(v).unwrap(),
                serde_json::Value::from(v.as_str())
            );
        }
        let e = "fine".parse::<Verdict>().unwrap_err();
        assert!(
            e.contains("`fine`: expected one of clean, insufficient"),
            "{e}"
        );
    }

    #[test]
    fn verdict_rule_is_one_string_both_ways() {
        for v in VerdictRule::all() {
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json, serde_json::Value::from(v.as_str()));
            assert_eq!(serde_json::from_value::<VerdictRule>(json).unwrap(), v);
        }
        assert_eq!(VerdictRule::all().count(), RuleId::ALL.len() + 1);
        assert!(serde_json::from_str::<VerdictRule>("\"fine\"").is_err());
        assert_eq!(VerdictRule::Clean, "clean");
        assert_eq!(VerdictRule::Rule(RuleId::LinkDown), "link_down");
    }

    #[test]
    fn verdicts_order_worst_last_and_number_the_same_way() {
        let mut sorted = Verdict::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, Verdict::ALL);
        let numbers: Vec<u8> = Verdict::ALL.iter().map(|v| v.metric_value()).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4]);
    }
}
