//! What doctor is asked to do, and how it fails.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use linerate_bench::InventoryFn;
use linerate_iperf3::Version;
use linerate_proto::{Psk, TestParams};
use linerate_results::disk::DiskReport;
use thiserror::Error;

use crate::plan::Depth;

#[derive(Clone)]
pub struct DoctorOptions {
    /// A host running `linerate serve` (with `iperf3`: `iperf3 -s`); None = self-check of this
    /// machine.
    pub server: Option<SocketAddr>,
    /// The far end is a stock iperf3 server (`doctor --iperf3`): the tests its protocol carries
    /// run, the others are skipped with the reason.
    pub iperf3: bool,
    pub bind: Option<IpAddr>,
    pub psk: Option<Psk>,
    pub depth: Depth,
    /// Root of the local sysfs/procfs (`/`).
    pub root: PathBuf,
    /// Describes an interface of this host (probe, port, facts); also given to the self-check server.
    pub inventory: InventoryFn,
    /// Directories whose disks join the pyramid (the first also holds the copy's source file).
    pub disks: Vec<PathBuf>,
    /// Whether to measure RDMA beside TCP.
    pub rdma: RdmaMode,
    /// `doctor --ssh`: starts the far end when the network tests begin (after the local disks,
    /// so its deadline covers the network tests alone); `server` and `psk` are then its own.
    pub far_end: Option<StartFarEnd>,
}

impl std::fmt::Debug for DoctorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoctorOptions")
            .field("server", &self.server)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

/// Starts a far end for doctor's network tests, given what they need.
pub type StartFarEnd =
    std::sync::Arc<dyn Fn(&FarEndNeeds) -> Result<StartedFarEnd, String> + Send + Sync>;

/// What doctor's network tests need of a far end it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FarEndNeeds {
    /// The tests doctor may run, at most.
    pub tests: Vec<TestParams>,
    /// Doctor will copy a file to it: it needs a write directory.
    pub write_dir: bool,
}

impl FarEndNeeds {
    /// The tests' time limits in all, seconds.
    pub fn seconds(&self) -> f64 {
        self.tests
            .iter()
            .map(|t| t.duration_ms as f64 / 1000.0)
            .sum()
    }
}

/// A far end started for doctor: where it listens, what it speaks, and what ends it when
/// dropped.
pub struct StartedFarEnd {
    pub addr: SocketAddr,
    pub speaks: StartedProtocol,
    pub guard: Box<dyn std::any::Any + Send>,
}

/// What a started far end speaks.
#[derive(Debug, Clone)]
pub enum StartedProtocol {
    /// `linerate serve`, with the key it was given.
    Linerate { psk: Psk },
    /// A stock `iperf3 -s`, of the release its `--version` said (None: unreadable).
    Iperf3 { version: Option<Version> },
}

impl std::fmt::Debug for StartedFarEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedFarEnd")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// What doctor says while it runs, for its caller to show: plain data, the caller renders it.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A step begins (`memory bandwidth`, `TCP send, 1 stream, 2 s`), or how it ended
    /// (`  → skipped: ...`, `  → failed: ...`): one line of words.
    Line(&'a str),
    /// A disk was measured: its results, as the pyramid will hold them.
    Disk(&'a DiskReport),
}

/// When doctor measures RDMA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdmaMode {
    /// When this end of the path is an InfiniBand or RoCE port (provider verbs).
    Auto,
    Off,
    /// Always, with this libfabric provider (`tcp` exercises it on any path).
    Provider(String),
}

#[derive(Debug, Error)]
pub enum DoctorError {
    #[error(transparent)]
    Probe(#[from] linerate_inventory::ProbeError),
    #[error("cannot start the local test server: {0}")]
    LocalServer(std::io::Error),
    #[error(transparent)]
    Client(#[from] linerate_bench::ClientError),
    /// `--iperf3` names a far end: doctor has no iperf3 server of its own.
    #[error("--iperf3 needs HOST, the host running `iperf3 -s` (doctor's self-check runs its own linerate server)")]
    Iperf3WithoutServer,
    /// The far end of `--ssh` could not be started (the message says why and what to do).
    #[error("{0}")]
    FarEnd(String),
}
