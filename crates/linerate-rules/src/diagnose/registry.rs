//! The table of doctor's rules: every rule once, in the order the rules run and list what they
//! found (before ranking) and what they checked.
//!
//! A row names the rule (its variant of [`Rule`] and its type in [`rule`]), the field of its
//! output and its line in `Diagnosis::checked`; [`Rule::of`] names the rule of each finding id.
//! The rule itself is an `impl FromFacts for rule::NAME` (or `FromFindings`) in the module of
//! its family, beside its tests. A rule missing from the table names a type that does not
//! exist, a row without its rule leaves the trait unimplemented, and a finding id without its
//! rule leaves `Rule::of` non-exhaustive: none of them builds. Each rule returns its own typed
//! output ([`Output`]: its findings, and what the verdict reads of it), one field per rule of
//! [`FactOutputs`] or [`FindingsOutputs`].
//!
//! Two stages: the rules over the facts see the context only (none reads another's output);
//! then the named edits of one rule's output by another's (`super::edits`); then the rules over
//! the findings judge what the first stage found and checked.

use linerate_facts::{Finding, FindingId, FindingOrigin};

use super::context::Ctx;

/// A rule over the facts: a pure function of the context.
pub(super) trait FromFacts {
    /// What it produces: its findings, and what the verdict reads of it.
    type Output: Output;
    fn run(self, c: &Ctx<'_>) -> Self::Output;
}

/// A rule over the findings: a pure function of the context and of what the rules over the
/// facts found (after the edits) and checked.
pub(super) trait FromFindings {
    type Output: Output;
    fn run(self, c: &Ctx<'_>, found: &Found) -> Self::Output;
}

/// What a rule's output gives the diagnosis.
pub(super) trait Output {
    /// Its findings, in the order the rule made them.
    fn findings(&self) -> &[Finding];

    /// What it saw, in its own words: its lines of `checked` when its row says [`Checked::Said`].
    fn said(&self) -> Vec<String> {
        Vec::new()
    }
}

impl Output for Vec<Finding> {
    fn findings(&self) -> &[Finding] {
        self
    }
}

impl Output for Option<Finding> {
    fn findings(&self) -> &[Finding] {
        self.as_slice()
    }
}

/// A rule's line in `Diagnosis::checked` (which `unexplained` quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checked {
    /// What it looks at, listed whatever it found.
    Always(&'static str),
    /// Listed when it found something: it needs a result not every run has.
    WhenFound(&'static str),
    /// What it saw, in its own words ([`Output::said`]), a line each.
    Said,
    /// Nothing: it judges the path or the others' findings rather than checking a cause.
    Nothing,
}

/// What the rules over the facts found, after the edits, and what they checked: what the rules
/// over the findings read.
#[derive(Debug, Clone, Default)]
pub(super) struct Found {
    pub(super) findings: Vec<Finding>,
    pub(super) checked: Vec<String>,
}

/// The lines of `checked` of these outputs, in their order, as their rows say.
pub(super) fn checked(outputs: &[(Rule, &dyn Output)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (rule, out) in outputs {
        match rule.checked() {
            Checked::Always(s) => lines.push(s.to_string()),
            Checked::WhenFound(s) if !out.findings().is_empty() => lines.push(s.to_string()),
            Checked::Said => lines.extend(out.said()),
            Checked::WhenFound(_) | Checked::Nothing => {}
        }
    }
    lines
}

/// The table's shape: each row gives the rule's variant, its output's field and its `checked`
/// line, under the stage it belongs to. From it: [`Rule`] (`ALL`, each row's name and line),
/// the types in [`rule`], and the outputs with their dispatch.
macro_rules! registry {
    (
        over_facts {
            $( $(#[$fdoc:meta])* $fv:ident => $ff:ident, checked $fc:expr; )*
        }
        over_findings {
            $( $(#[$jdoc:meta])* $jv:ident => $jf:ident, checked $jc:expr; )*
        }
    ) => {
        /// Every rule of doctor's, in the table's order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum Rule {
            $( $(#[$fdoc])* $fv, )*
            $( $(#[$jdoc])* $jv, )*
        }

        #[cfg_attr(
            not(test),
            expect(dead_code, reason = "the table's tests and `testing::run` read them")
        )]
        impl Rule {
            /// Every rule, in the table's order.
            pub(super) const ALL: &'static [Self] = &[$(Self::$fv,)* $(Self::$jv,)*];

            /// Its name: the field of its output.
            pub(super) fn name(self) -> &'static str {
                match self {
                    $(Self::$fv => stringify!($ff),)*
                    $(Self::$jv => stringify!($jf),)*
                }
            }
        }

        impl Rule {
            /// Its line in `checked`.
            pub(super) fn checked(self) -> Checked {
                match self {
                    $(Self::$fv => $fc,)*
                    $(Self::$jv => $jc,)*
                }
            }
        }

        /// One type per rule, named as its variant of [`Rule`]: a rule is the `FromFacts` or
        /// `FromFindings` impl of its type, so one that is not in the table does not build.
        pub(super) mod rule {
            $( $(#[$fdoc])* #[derive(Debug, Clone, Copy)] pub(in crate::diagnose) struct $fv; )*
            $( $(#[$jdoc])* #[derive(Debug, Clone, Copy)] pub(in crate::diagnose) struct $jv; )*
        }

        /// What the rules over the facts produced, one typed field per rule.
        pub(super) struct FactOutputs {
            $( pub(super) $ff: <rule::$fv as FromFacts>::Output, )*
        }

        impl FactOutputs {
            /// Every rule over the facts, over `c`, in the table's order.
            pub(super) fn run(c: &Ctx<'_>) -> Self {
                Self {
                    $( $ff: FromFacts::run(rule::$fv, c), )*
                }
            }

            /// Each rule with its output, in the table's order.
            pub(super) fn each(&self) -> Vec<(Rule, &dyn Output)> {
                vec![$( (Rule::$fv, &self.$ff as &dyn Output), )*]
            }
        }

        /// What the rules over the findings produced, one typed field per rule.
        pub(super) struct FindingsOutputs {
            $( pub(super) $jf: <rule::$jv as FromFindings>::Output, )*
        }

        impl FindingsOutputs {
            /// Every rule over the findings, over `c` and `found`, in the table's order.
            pub(super) fn run(c: &Ctx<'_>, found: &Found) -> Self {
                Self {
                    $( $jf: FromFindings::run(rule::$jv, c, found), )*
                }
            }

            /// Each rule with its output, in the table's order.
            pub(super) fn each(&self) -> Vec<(Rule, &dyn Output)> {
                vec![$( (Rule::$jv, &self.$jf as &dyn Output), )*]
            }
        }
    };
}

registry! {
    over_facts {
        /// Both ends' inventory findings, each subject prefixed with its end (`path`).
        Inventory => inventory,
            checked Checked::Always("inventory of both ends (PCIe, link state and rate, IPoIB mode, MTU, NUMA, governor, error counters)");
        /// `mtu.mismatch`: the two ends use different MTUs (`path`).
        MtuMismatch => mtu_mismatch,
            checked Checked::Always("MTU of both ends");
        /// `optics.light_lost`: where the light an end's optic misses went, from both ends'
        /// optics (`optics`).
        OpticsLightLost => optics_light_lost,
            checked Checked::WhenFound("both ends' optics: one end's Rx power against the other's Tx");
        /// `fec.mismatch`: the two ends' ports run different FEC modes (`fec`).
        FecMismatch => fec_mismatch,
            checked Checked::WhenFound("both ends' FEC modes");
        /// `net.shaper`: every qdisc with a rate on either end (`path`).
        Shapers => shapers,
            checked Checked::Always("traffic shapers (qdiscs with a rate) on both interfaces");
        /// `cpu.saturated`: one stream kept a core of linerate's busy below the ceiling (`cpu`).
        CpuSaturated => cpu_saturated,
            checked Checked::Always("CPU use of the sending and receiving threads");
        /// What the receiving application's copy costs one stream, against its `--discard`
        /// twin: said in `checked`, no finding (`cpu`).
        ReceiverCopy => receiver_copy,
            checked Checked::Said;
        /// `cpu.contended`: other processes took CPU during the tests (`cpu`).
        CpuContended => cpu_contended,
            checked Checked::Always("other processes' CPU during the tests");
        /// `cpu.steal`: the hypervisor took CPU during the tests (`cpu`).
        CpuSteal => cpu_steal,
            checked Checked::Always("hypervisor steal during the tests");
        /// `tcp.buffers_small`: the TCP window, not the path, sets a test's rate (`window`).
        TcpBuffersSmall => tcp_buffers_small,
            checked Checked::Always("socket buffer limits against the measured bandwidth-delay product");
        /// `net.retransmits`: loss during the tests, with where it was counted; and
        /// `tcp.spurious_retransmits`, retransmits TCP found spurious, which are not loss (`loss`).
        Retransmits => retransmits,
            checked Checked::Always("TCP retransmits, UDP loss, and error counters during the tests");
        /// `net.reordering`: a netem qdisc reordered packets (`qdisc`).
        Reordering => reordering,
            checked Checked::Always("packets reordered by the qdiscs of both ends (netem `reorder`)");
        /// `net.qdisc_drops`: each qdisc of either end that dropped packets (`qdisc`).
        QdiscDrops => qdisc_drops,
            checked Checked::Always("drops counted by the qdiscs of both ends (netem, shapers, policers, full queues)");
        /// `path.asymmetric`: one direction carries far less than the other (`path`).
        PathAsymmetric => path_asymmetric,
            checked Checked::Always("both directions of the path");
        /// `rdma.vs_tcp`: RDMA and TCP on the same path, what the IP stack costs (`rdma`).
        RdmaVsTcp => rdma_vs_tcp,
            checked Checked::WhenFound("RDMA against TCP on the same path");
        /// `ceiling.exceeded`: a stream beat the host stack's bound (`ceiling`).
        CeilingExceeded => ceiling_exceeded,
            checked Checked::Nothing;
    }
    over_findings {
        /// `ceiling.reached`, or below the ceiling with nothing found to explain the gap,
        /// `unexplained` (`net.paravirtual` on a paravirtual NIC) (`ceiling`).
        CeilingOrUnexplained => ceiling_or_unexplained,
            checked Checked::Nothing;
    }
}

#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "its match is a check at build time; the tests read it"
    )
)]
impl Rule {
    /// The rule of doctor's that emits `id`. Exhaustive, without a catch-all: a new finding does
    /// not build until it names its rule here (or `None`: the inventory's rules emit it, which
    /// `Inventory` brings from each end, or the storage pyramid does).
    pub(super) fn of(id: FindingId) -> Option<Self> {
        use FindingId as F;
        match id {
            F::MtuMismatch => Some(Self::MtuMismatch),
            F::OpticsLightLost => Some(Self::OpticsLightLost),
            F::FecMismatch => Some(Self::FecMismatch),
            F::NetShaper => Some(Self::Shapers),
            F::CpuSaturated => Some(Self::CpuSaturated),
            F::CpuContended => Some(Self::CpuContended),
            F::CpuSteal => Some(Self::CpuSteal),
            // The inventory's rules emit it too, on the configured limits alone.
            F::TcpBuffersSmall => Some(Self::TcpBuffersSmall),
            F::NetRetransmits | F::TcpSpuriousRetransmits => Some(Self::Retransmits),
            F::NetReordering => Some(Self::Reordering),
            F::NetQdiscDrops => Some(Self::QdiscDrops),
            F::PathAsymmetric => Some(Self::PathAsymmetric),
            F::RdmaVsTcp => Some(Self::RdmaVsTcp),
            F::CeilingExceeded => Some(Self::CeilingExceeded),
            F::CeilingReached | F::Unexplained | F::NetParavirtual => {
                Some(Self::CeilingOrUnexplained)
            }
            // The storage pyramid's (`crate::pyramid`).
            F::StorageDiskLimitsCopy => None,
            F::SysfsUnreadable
            | F::PcieLinkDown
            | F::PcieDowntrained
            | F::PcieSlotLimited
            | F::PcieBottleneck
            | F::NumaMismatch
            | F::CpuPowersave
            | F::IbNoSubnetManager
            | F::IbPortDown
            | F::IbRateBelowCapability
            | F::IbXmitDiscards
            | F::VpiEthernetMode
            | F::LinkErrors
            | F::LinkDown
            | F::IpoibDatagramMode
            | F::MtuSmall
            | F::RdmaDriverMissing
            | F::RdmaNoUverbs
            | F::RdmaNoRdmaCm
            | F::RdmaNoVerbsProvider
            | F::RdmaNoLibfabricVerbs
            | F::RdmaMemlockLow
            | F::IbNoOpensm
            | F::IpoibNotLoaded
            | F::IpoibNoInterface
            | F::NfsNoRpcrdma
            | F::NfsNoRdmaListener
            | F::NfsOverTcp
            | F::NfsMountFails
            | F::FwOutdated
            | F::FwOem
            | F::FwEndOfLife
            | F::ModuleRxPowerLow
            | F::ModuleTxOutOfRange
            | F::ModuleTemperatureHigh
            | F::ModuleRateBelowPort
            | F::ModuleNoAnswer
            | F::ModuleNeedsPrivilege
            | F::FecMissing
            | F::NicTemperatureHigh
            | F::RingDrops
            | F::NicChannelsFew
            | F::VfRateLimited
            | F::VfLinkDown
            | F::VfSharedPort => None,
            F::RoceMtuSmall
            | F::RoceNoV2Gid
            | F::RoceV1Only
            | F::RoceLossy
            | F::RocePfcOtherPriority => None,
        }
    }

    /// May it emit `id`? `Inventory` brings each end's inventory findings, whatever their id.
    pub(super) fn emits(self, id: FindingId) -> bool {
        match self {
            Self::Inventory => id.origin() == FindingOrigin::Inventory,
            rule => Self::of(id) == Some(rule),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_finding_of_doctors_names_its_rule_and_each_rule_a_finding() {
        for &id in FindingId::ALL {
            let rule = Rule::of(id);
            match id.origin() {
                FindingOrigin::Measurement if id == FindingId::StorageDiskLimitsCopy => {
                    assert_eq!(rule, None);
                }
                FindingOrigin::Measurement => assert!(rule.is_some(), "{id}"),
                FindingOrigin::Inventory if id == FindingId::TcpBuffersSmall => {
                    assert_eq!(rule, Some(Rule::TcpBuffersSmall));
                }
                FindingOrigin::Inventory => assert_eq!(rule, None, "{id}"),
            }
            if let Some(r) = rule {
                assert!(r.emits(id), "{id}");
            }
        }
        // Every rule but the inventory's and the receiver's copy (which only says what it saw)
        // is some finding's.
        for &r in Rule::ALL {
            let ids = FindingId::ALL
                .iter()
                .filter(|&&id| Rule::of(id) == Some(r))
                .count();
            match r {
                Rule::Inventory | Rule::ReceiverCopy => assert_eq!(ids, 0, "{}", r.name()),
                _ => assert!(ids > 0, "{}", r.name()),
            }
        }
        assert!(Rule::Inventory.emits(FindingId::PcieDowntrained));
        assert!(!Rule::Inventory.emits(FindingId::CpuSaturated));
    }

    #[test]
    fn every_line_of_checked_is_one_rules() {
        let lines: Vec<&str> = Rule::ALL
            .iter()
            .filter_map(|r| match r.checked() {
                Checked::Always(s) | Checked::WhenFound(s) => Some(s),
                Checked::Said | Checked::Nothing => None,
            })
            .collect();
        let mut unique = lines.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), lines.len(), "{lines:?}");
        assert!(lines.iter().all(|l| !l.is_empty() && !l.contains(';')));
    }

    #[test]
    fn checked_follows_each_rows_kind() {
        let some = Some(Finding::new(
            FindingId::RdmaVsTcp,
            linerate_facts::Severity::Info,
            "path",
        ));
        let none: Option<Finding> = None;
        let said = Said(vec!["one".into(), "two".into()]);
        let outputs: [(Rule, &dyn Output); 4] = [
            (Rule::MtuMismatch, &none),
            (Rule::RdmaVsTcp, &none),
            (Rule::ReceiverCopy, &said),
            (Rule::CeilingExceeded, &some),
        ];
        assert_eq!(checked(&outputs), ["MTU of both ends", "one", "two"]);
        let outputs: [(Rule, &dyn Output); 1] = [(Rule::RdmaVsTcp, &some)];
        assert_eq!(checked(&outputs), ["RDMA against TCP on the same path"]);
    }

    struct Said(Vec<String>);

    impl Output for Said {
        fn findings(&self) -> &[Finding] {
            &[]
        }
        fn said(&self) -> Vec<String> {
            self.0.clone()
        }
    }
}
