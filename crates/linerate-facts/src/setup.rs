//! `linerate setup`'s plan: plain data from the plan builders (`linerate-setup`) to the
//! renderers and to `apply`, and the distribution it was made for.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::FindingId;

/// What `linerate setup` can configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topic {
    Ipoib,
    Opensm,
    NfsRdma,
    Sysctl,
    Irq,
    Governor,
    /// The RDMA software stack: modules at boot, locked-memory limits.
    RdmaStack,
    /// Receive rings that dropped packets, grown and kept across reboots.
    Rings,
    /// A RoCE port: its netdev's MTU, and lossless Ethernet (PFC, DSCP trust, ECN, ToS).
    Roce,
}

impl Topic {
    pub const ALL: [Topic; 9] = [
        Topic::Ipoib,
        Topic::Opensm,
        Topic::NfsRdma,
        Topic::Sysctl,
        Topic::Irq,
        Topic::Governor,
        Topic::RdmaStack,
        Topic::Rings,
        Topic::Roce,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ipoib => "ipoib",
            Self::Opensm => "opensm",
            Self::NfsRdma => "nfs-rdma",
            Self::Sysctl => "sysctl",
            Self::Irq => "irq",
            Self::Governor => "governor",
            Self::RdmaStack => "rdma-stack",
            Self::Rings => "rings",
            Self::Roce => "roce",
        }
    }
}

/// Whether a file is new or an edit of one that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    Create,
    Modify,
}

/// One file to write: its path on the target system (absolute, as under `/`), its full new
/// content, and its permission bits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    /// Permission bits (`0o644`); an edited file keeps its own.
    pub mode: u32,
    pub action: FileAction,
    pub content: String,
}

/// When a command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// After the files are written, to make them take effect without touching the network
    /// (`sysctl --system`, `systemctl enable`): run by the operator, printed by `setup`.
    AfterApply,
    /// Restarts the interface concerned: may cut the connection the operator is typing in.
    /// Only `--restart` runs it.
    Restart,
    /// Checks that the change took effect.
    Check,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanCommand {
    pub run: String,
    pub when: When,
    pub why: String,
}

/// Why a step is proposed: the finding it fixes (when it comes from one) and its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Why {
    /// The finding (`ipoib.datagram_mode`), or `None` for a step no finding asks for.
    pub finding: Option<FindingId>,
    pub text: String,
    /// Where each fact came from → its value.
    pub evidence: BTreeMap<String, String>,
}

/// One change for one subject (an interface, the host, a fabric port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub topic: Topic,
    pub subject: String,
    pub summary: String,
    pub why: Vec<Why>,
    pub files: Vec<FileChange>,
    pub commands: Vec<PlanCommand>,
    /// How to undo it by hand (besides `linerate setup --rollback ID`).
    pub undo: Vec<String>,
}

/// A change `setup` will not make, with the reason and what would make it possible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupRefusal {
    pub topic: Topic,
    pub subject: String,
    pub reason: String,
    pub would_change: Option<String>,
}

/// A fact about this machine's configuration that the plan rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub topic: Topic,
    pub text: String,
}

/// Everything `setup` proposes for one machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub topics: Vec<Topic>,
    pub steps: Vec<Step>,
    pub refusals: Vec<SetupRefusal>,
    pub notes: Vec<Note>,
}

impl Plan {
    pub fn new(topics: Vec<Topic>) -> Self {
        Self {
            topics,
            steps: Vec::new(),
            refusals: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Every file of every step, in order.
    pub fn files(&self) -> Vec<&FileChange> {
        self.steps.iter().flat_map(|s| &s.files).collect()
    }

    /// The restart commands of every step.
    pub fn restarts(&self) -> Vec<&PlanCommand> {
        self.steps
            .iter()
            .flat_map(|s| &s.commands)
            .filter(|c| c.when == When::Restart)
            .collect()
    }

    /// Nothing to write and nothing to run.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn note(&mut self, topic: Topic, text: impl Into<String>) {
        self.notes.push(Note {
            topic,
            text: text.into(),
        });
    }

    pub fn refuse(
        &mut self,
        topic: Topic,
        subject: &str,
        reason: impl Into<String>,
        would_change: Option<String>,
    ) {
        self.refusals.push(SetupRefusal {
            topic,
            subject: subject.to_string(),
            reason: reason.into(),
            would_change,
        });
    }
}

impl Why {
    pub fn new(finding: Option<FindingId>, text: impl Into<String>) -> Self {
        Self {
            finding,
            text: text.into(),
            evidence: BTreeMap::new(),
        }
    }

    #[must_use]
    pub fn evidence(mut self, k: impl Into<String>, v: &impl ToString) -> Self {
        self.evidence.insert(k.into(), v.to_string());
        self
    }
}

impl PlanCommand {
    pub fn new(run: impl Into<String>, when: When, why: impl Into<String>) -> Self {
        Self {
            run: run.into(),
            when,
            why: why.into(),
        }
    }
}

/// The result of `--apply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The backup id for `linerate setup --rollback ID`; `None` when nothing was written.
    pub id: Option<String>,
    /// The directory (as on the target) holding the backups and the manifest.
    pub backup_dir: Option<String>,
    /// The files written, as on the target.
    pub written: Vec<String>,
    /// The restart commands run (`--restart`), each with its exit status.
    pub restarted: Vec<RestartRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartRun {
    pub run: String,
    pub status: Option<i32>,
}

/// The result of `--rollback ID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolledBack {
    pub id: String,
    /// Files restored to their saved bytes.
    pub restored: Vec<String>,
    /// Files `apply` had created, now removed.
    pub removed: Vec<String>,
}

/// The distribution, from `os-release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distro {
    /// `ID` (`debian`, `ubuntu`, `rhel`), `unknown` without an os-release file.
    pub id: String,
    /// `VERSION_ID` (`12`, `24.04`, `9.4`).
    pub version_id: Option<String>,
    pub pretty_name: Option<String>,
    pub family: Family,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Debian, Ubuntu and derivatives (`ID_LIKE` has `debian`).
    Debian,
    /// RHEL, Fedora, Rocky, Alma, CentOS (`ID_LIKE` has `rhel` or `fedora`).
    RedHat,
    Other,
}

impl Distro {
    /// The major version (`9` of `9.4`, `24` of `24.04`).
    pub fn major(&self) -> Option<u32> {
        self.version_id.as_deref()?.split('.').next()?.parse().ok()
    }
}
