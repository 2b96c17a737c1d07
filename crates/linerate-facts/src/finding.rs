//! Findings: stable id, severity, subject, evidence, message and fix. The rules emit them
//! (`linerate-rules`); probe, doctor, mesh, setup and the renderers read them.

use std::collections::BTreeMap;

use linerate_model::LimitedBy;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "info" => Some(Self::Info),
            "warning" => Some(Self::Warning),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// Where each fact came from → its value (`/sys/class/net/ib0/mode` → `datagram`).
pub type Evidence = BTreeMap<String, String>;

/// What limits a result: the verdict's `limited_by`. The hardware stages are the model's
/// [`LimitedBy`]; the others are what doctor finds on a measured path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Link,
    Encoding,
    Pcie,
    Mtu,
    Shaper,
    Cpu,
    TcpBuffers,
    IpoibMode,
    Retransmits,
    PortDown,
    NoSubnetManager,
    /// A paravirtual NIC: the hypervisor carries the traffic and sets the ceiling.
    Hypervisor,
    Unknown,
}

impl Cause {
    /// The string of `schemas/doctor.schema.json`'s `limited_by`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Link => "link",
            Self::Encoding => "encoding",
            Self::Pcie => "pcie",
            Self::Mtu => "mtu",
            Self::Shaper => "shaper",
            Self::Cpu => "cpu",
            Self::TcpBuffers => "tcp_buffers",
            Self::IpoibMode => "ipoib_mode",
            Self::Retransmits => "retransmits",
            Self::PortDown => "port_down",
            Self::NoSubnetManager => "no_subnet_manager",
            Self::Hypervisor => "hypervisor",
            Self::Unknown => "unknown",
        }
    }
}

impl From<LimitedBy> for Cause {
    fn from(l: LimitedBy) -> Self {
        match l {
            LimitedBy::Link => Self::Link,
            LimitedBy::Encoding => Self::Encoding,
            LimitedBy::Pcie => Self::Pcie,
            LimitedBy::Mtu => Self::Mtu,
            LimitedBy::PortDown => Self::PortDown,
            LimitedBy::NoSubnetManager => Self::NoSubnetManager,
            LimitedBy::Unknown => Self::Unknown,
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One table gives the enum, its string ids, where each comes from and [`FindingId::ALL`], so
/// that no list can miss a variant: a new finding is one line here (then the compiler asks for
/// its `cause`, and the vocabulary tests for its row in docs/findings.md and, for an inventory
/// finding, a fixture that expects it).
macro_rules! finding_ids {
    ($($variant:ident => $id:literal, $origin:ident;)*) => {
        /// Every finding linerate emits. The string id ([`FindingId::as_str`]) is stable: it is
        /// what the JSON documents, `--fail-on` users and docs/findings.md name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FindingId {
            $($variant,)*
        }

        impl FindingId {
            /// Every id, in the table's order, for [`FindingId::parse`] and the tests.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The stable string id, e.g. `pcie.bottleneck`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $id,)*
                }
            }

            /// Which rules emit it.
            pub fn origin(self) -> FindingOrigin {
                match self {
                    $(Self::$variant => FindingOrigin::$origin,)*
                }
            }
        }
    };
}

/// Which rules emit a finding (docs/findings.md has a table for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingOrigin {
    /// The inventory rules: `probe`, and `doctor` on each end. A fixture tree shows each.
    Inventory,
    /// Doctor's rules over measured results (and the storage pyramid).
    Measurement,
}

finding_ids! {
    SysfsUnreadable => "sysfs.unreadable", Inventory;
    PcieLinkDown => "pcie.link_down", Inventory;
    PcieDowntrained => "pcie.downtrained", Inventory;
    PcieSlotLimited => "pcie.slot_limited", Inventory;
    PcieBottleneck => "pcie.bottleneck", Inventory;
    NumaMismatch => "numa.mismatch", Inventory;
    CpuPowersave => "cpu.powersave", Inventory;
    CpuSaturated => "cpu.saturated", Measurement;
    CpuContended => "cpu.contended", Measurement;
    CpuSteal => "cpu.steal", Measurement;
    TcpSpuriousRetransmits => "tcp.spurious_retransmits", Measurement;
    TcpBuffersSmall => "tcp.buffers_small", Inventory;
    IbNoSubnetManager => "ib.no_subnet_manager", Inventory;
    IbPortDown => "ib.port_down", Inventory;
    IbRateBelowCapability => "ib.rate_below_capability", Inventory;
    IbXmitDiscards => "ib.xmit_discards", Inventory;
    VpiEthernetMode => "vpi.ethernet_mode", Inventory;
    LinkErrors => "link.errors", Inventory;
    LinkDown => "link.down", Inventory;
    IpoibDatagramMode => "ipoib.datagram_mode", Inventory;
    MtuSmall => "mtu.small", Inventory;
    MtuMismatch => "mtu.mismatch", Measurement;
    OpticsLightLost => "optics.light_lost", Measurement;
    FecMismatch => "fec.mismatch", Measurement;
    NetShaper => "net.shaper", Measurement;
    NetRetransmits => "net.retransmits", Measurement;
    NetQdiscDrops => "net.qdisc_drops", Measurement;
    NetReordering => "net.reordering", Measurement;
    PathAsymmetric => "path.asymmetric", Measurement;
    RdmaVsTcp => "rdma.vs_tcp", Measurement;
    CeilingReached => "ceiling.reached", Measurement;
    CeilingExceeded => "ceiling.exceeded", Measurement;
    Unexplained => "unexplained", Measurement;
    NetParavirtual => "net.paravirtual", Measurement;
    StorageDiskLimitsCopy => "storage.disk_limits_copy", Measurement;
    RdmaDriverMissing => "rdma.driver_missing", Inventory;
    RdmaNoUverbs => "rdma.no_uverbs", Inventory;
    RdmaNoRdmaCm => "rdma.no_rdma_cm", Inventory;
    RdmaNoVerbsProvider => "rdma.no_verbs_provider", Inventory;
    RdmaNoLibfabricVerbs => "rdma.no_libfabric_verbs", Inventory;
    RdmaMemlockLow => "rdma.memlock_low", Inventory;
    IbNoOpensm => "ib.no_opensm", Inventory;
    IpoibNotLoaded => "ipoib.not_loaded", Inventory;
    IpoibNoInterface => "ipoib.no_interface", Inventory;
    NfsNoRpcrdma => "nfs.no_rpcrdma", Inventory;
    NfsNoRdmaListener => "nfs.no_rdma_listener", Inventory;
    NfsOverTcp => "nfs.over_tcp", Inventory;
    NfsMountFails => "nfs.mount_fails", Inventory;
    FwOutdated => "fw.outdated", Inventory;
    FwOem => "fw.oem", Inventory;
    FwEndOfLife => "fw.end_of_life", Inventory;
    ModuleRxPowerLow => "module.rx_power_low", Inventory;
    ModuleTxOutOfRange => "module.tx_out_of_range", Inventory;
    ModuleTemperatureHigh => "module.temperature_high", Inventory;
    ModuleRateBelowPort => "module.rate_below_port", Inventory;
    ModuleNoAnswer => "module.no_answer", Inventory;
    ModuleNeedsPrivilege => "module.needs_privilege", Inventory;
    FecMissing => "fec.missing", Inventory;
    NicTemperatureHigh => "nic.temperature_high", Inventory;
    RingDrops => "ring.drops", Inventory;
    NicChannelsFew => "nic.channels_few", Inventory;
    VfRateLimited => "vf.rate_limited", Inventory;
    VfLinkDown => "vf.link_down", Inventory;
    VfSharedPort => "vf.shared_port", Inventory;
    RoceMtuSmall => "roce.mtu_small", Inventory;
    RoceNoV2Gid => "roce.no_v2_gid", Inventory;
    RoceV1Only => "roce.v1_only", Inventory;
    RoceLossy => "roce.lossy", Inventory;
    RocePfcOtherPriority => "roce.pfc_other_priority", Inventory;
}

impl FindingId {
    /// The id of a stable string id; None for a string linerate does not emit.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|id| id.as_str() == s)
    }

    /// Does a warning of this kind explain why a result stays below its ceiling? The others
    /// describe the ceiling itself (a PCIe bottleneck or a narrow slot), the port state (which the
    /// verdict names on its own), or the judgement (reached, unexplained).
    pub fn explains_gap(self) -> bool {
        // A finding explains a gap exactly when it names a cause: one list, so the two never
        // disagree.
        self.cause().is_some()
    }

    /// The cause the verdict names when this finding is what explains a gap; None for the
    /// findings that explain none ([`FindingId::explains_gap`]).
    pub fn cause(self) -> Option<Cause> {
        match self {
            Self::MtuSmall | Self::MtuMismatch => Some(Cause::Mtu),
            Self::NetRetransmits
            | Self::NetQdiscDrops
            | Self::NetReordering
            | Self::LinkErrors => {
                Some(Cause::Retransmits)
            }
            Self::IbRateBelowCapability => Some(Cause::Link),
            Self::PcieDowntrained => Some(Cause::Pcie),
            Self::TcpBuffersSmall => Some(Cause::TcpBuffers),
            Self::NetShaper => Some(Cause::Shaper),
            Self::IpoibDatagramMode => Some(Cause::IpoibMode),
            // The hypervisor: a paravirtual NIC it carries, or the CPU time it gave other guests.
            Self::NetParavirtual | Self::CpuSteal => Some(Cause::Hypervisor),
            // What costs CPU time per byte: the IP stack (against RDMA), a core at its limit,
            // other processes, a slow governor, memory on the far NUMA node, a slower end.
            Self::RdmaVsTcp
            | Self::CpuSaturated
            | Self::CpuContended
            | Self::CpuPowersave
            | Self::PathAsymmetric
            | Self::NumaMismatch => Some(Cause::Cpu),
            Self::SysfsUnreadable
            | Self::PcieLinkDown
            | Self::PcieSlotLimited
            | Self::PcieBottleneck
            | Self::IbNoSubnetManager
            | Self::IbPortDown
            // Congestion in the fabric: what it costs a measured path shows as retransmits,
            // which `net.retransmits` judges.
            | Self::IbXmitDiscards
            | Self::VpiEthernetMode
            | Self::LinkDown
            | Self::CeilingReached
            | Self::CeilingExceeded
            | Self::Unexplained
            | Self::StorageDiskLimitsCopy
            // Not loss: the receiver had the segments (D-SACK); what stalled the sender's timer
            // is the cpu findings' or a queue's to say.
            | Self::TcpSpuriousRetransmits
            // The software stack decides whether a test runs at all, not how fast it goes.
            | Self::RdmaDriverMissing
            | Self::RdmaNoUverbs
            | Self::RdmaNoRdmaCm
            | Self::RdmaNoVerbsProvider
            | Self::RdmaNoLibfabricVerbs
            | Self::RdmaMemlockLow
            | Self::IbNoOpensm
            | Self::IpoibNotLoaded
            | Self::IpoibNoInterface
            | Self::NfsNoRpcrdma
            | Self::NfsNoRdmaListener
            | Self::NfsOverTcp
            | Self::NfsMountFails
            | Self::FwOutdated
            | Self::FwOem
            | Self::FwEndOfLife
            // Below the port: what a measured path loses to a weak optic, a missing FEC or a
            // full ring shows as errors, drops and retransmits, which their own findings judge;
            // a VF's rate limit is a stage of its ceiling, not a cause beside it.
            | Self::ModuleRxPowerLow
            | Self::OpticsLightLost
            | Self::FecMismatch
            | Self::ModuleTxOutOfRange
            | Self::ModuleTemperatureHigh
            | Self::ModuleRateBelowPort
            | Self::ModuleNoAnswer
            | Self::ModuleNeedsPrivilege
            | Self::FecMissing
            | Self::NicTemperatureHigh
            | Self::RingDrops
            | Self::NicChannelsFew
            | Self::VfRateLimited
            | Self::VfLinkDown
            | Self::VfSharedPort => None,
            // RoCE's setup decides how RDMA fares, which doctor's RDMA verdict says; the
            // TCP verdict's gap is not theirs.
            | Self::RoceMtuSmall
            | Self::RoceNoV2Gid
            | Self::RoceV1Only
            | Self::RoceLossy
            | Self::RocePfcOtherPriority => None,
        }
    }
}

impl std::fmt::Display for FindingId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for FindingId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FindingId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown finding id `{s}`")))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, e.g. `pcie.downtrained` (serialized as that string).
    pub id: FindingId,
    pub severity: Severity,
    /// A port name, a PCI address, or `host`.
    pub subject: String,
    pub evidence: Evidence,
    pub message: String,
    pub fix: String,
}

impl Finding {
    pub fn new(id: FindingId, severity: Severity, subject: impl Into<String>) -> Self {
        Self {
            id,
            severity,
            subject: subject.into(),
            evidence: Evidence::new(),
            message: String::new(),
            fix: String::new(),
        }
    }

    #[must_use]
    pub fn evidence(mut self, key: impl Into<String>, value: impl std::fmt::Display) -> Self {
        self.evidence.insert(key.into(), value.to_string());
        self
    }

    #[must_use]
    pub fn message(mut self, m: impl Into<String>) -> Self {
        self.message = m.into();
        self
    }

    #[must_use]
    pub fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix = f.into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_as_their_strings() {
        for &id in FindingId::ALL {
            assert_eq!(FindingId::parse(id.as_str()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{}\"", id.as_str()));
            assert_eq!(serde_json::from_str::<FindingId>(&json).unwrap(), id);
        }
        assert_eq!(FindingId::parse("no.such_id"), None);
        assert!(serde_json::from_str::<FindingId>("\"no.such_id\"").is_err());
    }

    #[test]
    fn a_finding_names_a_cause_exactly_when_it_explains_a_gap() {
        for &id in FindingId::ALL {
            assert_eq!(id.explains_gap(), id.cause().is_some(), "{id}");
        }
        assert_eq!(FindingId::PcieDowntrained.cause(), Some(Cause::Pcie));
        assert_eq!(FindingId::CeilingExceeded.cause(), None);
    }

    #[test]
    fn causes_serialize_as_their_strings() {
        for c in [Cause::TcpBuffers, Cause::NoSubnetManager, Cause::IpoibMode] {
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.as_str())
            );
        }
        assert_eq!(Cause::from(LimitedBy::PortDown), Cause::PortDown);
    }
}
