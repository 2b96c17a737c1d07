//! The output data of `linerate disk` (and of doctor's disk steps): the report of a run and of
//! each test, the test kinds and the engine that ran. Plain data, so that renderers need not
//! depend on `linerate-storage` (io_uring, signal handlers); the measuring stays there, and
//! `linerate_storage` re-exports these types under their old paths.
//! Field names are a contract (`schemas/disk.schema.json`).

use std::fmt;
use std::path::PathBuf;

use linerate_stats::LatencyUs;
use serde::{Deserialize, Serialize};

/// One test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DiskTestKind {
    #[serde(rename = "disk_seq_read")]
    SeqRead,
    #[serde(rename = "disk_seq_write")]
    SeqWrite,
    #[serde(rename = "disk_rand_read")]
    RandRead,
    #[serde(rename = "disk_rand_write")]
    RandWrite,
}

impl DiskTestKind {
    pub const ALL: [Self; 4] = [
        Self::SeqRead,
        Self::SeqWrite,
        Self::RandRead,
        Self::RandWrite,
    ];

    /// `disk_seq_read`, ...: the `kind` of the JSON result.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SeqRead => "disk_seq_read",
            Self::SeqWrite => "disk_seq_write",
            Self::RandRead => "disk_rand_read",
            Self::RandWrite => "disk_rand_write",
        }
    }

    /// `seq_read`, ...: the name on the command line.
    pub fn short(self) -> &'static str {
        &self.as_str()["disk_".len()..]
    }

    pub fn is_write(self) -> bool {
        matches!(self, Self::SeqWrite | Self::RandWrite)
    }

    pub fn is_seq(self) -> bool {
        matches!(self, Self::SeqRead | Self::SeqWrite)
    }
}

impl fmt::Display for DiskTestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// The engine that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Engine {
    #[serde(rename = "io_uring")]
    IoUring,
    #[serde(rename = "sync")]
    Sync,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IoUring => "io_uring",
            Self::Sync => "sync",
        }
    }
}

/// One test's result (`linerate disk --json`: `tests[]`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DiskTestResult {
    pub kind: DiskTestKind,
    /// 10^9 bit/s.
    pub gbps: f64,
    /// 10^9 byte/s.
    pub gb_per_s: f64,
    /// Operations per second.
    pub iops: f64,
    /// `None` when no operation completed.
    pub latency_us: Option<LatencyUs>,
    pub block_bytes: u64,
    pub queue_depth: u32,
    /// O_DIRECT (true) or through the page cache (false).
    pub direct: bool,
    pub file_bytes: u64,
    pub engine: Engine,
    /// Measured time, s (writes include the final fdatasync).
    pub seconds: f64,
    pub bytes: u64,
    pub ops: u64,
    /// The mount holding the path: `ext4 /dev/vda`, `tmpfs`, `nfs4 server:/export`.
    pub filesystem: String,
    /// Set when the test stopped early; the figures are what was measured until then.
    pub error: Option<String>,
    /// Jobs that ran at once, each on its own thread (and ring) in its own region of the file;
    /// the figures above are their sum (bytes, operations) over the longest job's time.
    pub jobs: u32,
    /// Each job's figures (one entry for one job).
    pub per_job: Vec<DiskJobResult>,
    /// Operations whose latency went into `latency_us`: every completed one (the clock is
    /// read once per batch of completions, not per operation, so nothing is sampled).
    pub latency_samples: u64,
    /// CPU time of the whole process (the kernel's io_uring workers and SQPOLL thread
    /// included) over the test's time, % of one core.
    pub cpu_percent: f64,
    /// That CPU time per operation, µs; `None` when no operation completed.
    pub cpu_us_per_io: Option<f64>,
    /// When the number of jobs was searched for (doctor): each number tried, in order; the
    /// figures above are the best of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub job_scaling: Vec<DiskJobStep>,
}

/// One job of a test (`tests[].per_job[]`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DiskJobResult {
    /// 0, 1, ...
    pub job: u32,
    /// The job's region of the test file: from this byte, this many bytes.
    pub region_start: u64,
    pub region_bytes: u64,
    pub bytes: u64,
    pub ops: u64,
    pub seconds: f64,
    pub iops: f64,
    /// 10^9 byte/s.
    pub gb_per_s: f64,
    pub latency_us: Option<LatencyUs>,
}

/// One number of jobs tried (`tests[].job_scaling[]`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct DiskJobStep {
    pub jobs: u32,
    pub iops: f64,
    /// 10^9 byte/s.
    pub gb_per_s: f64,
    /// CPU time per operation, µs.
    pub cpu_us_per_io: Option<f64>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DiskReport {
    /// The directory measured (as given).
    pub path: PathBuf,
    pub filesystem: String,
    pub mount_point: Option<PathBuf>,
    /// 0 when the run stopped before the size was chosen.
    pub file_bytes: u64,
    /// Bytes of I/O buffers held (`queue_depth × largest block`).
    pub buffer_bytes: u64,
    pub direct: bool,
    pub engine: Option<Engine>,
    /// Polled completions (`--hipri`, IORING_SETUP_IOPOLL).
    pub hipri: bool,
    /// A kernel thread takes submissions (`--sqpoll`, IORING_SETUP_SQPOLL).
    pub sqpoll: bool,
    pub tests: Vec<DiskTestResult>,
    /// What a reader needs to interpret the figures (buffered I/O, memory filesystem, ...).
    pub notes: Vec<String>,
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(DiskTestKind::RandWrite.as_str(), "disk_rand_write");
        assert_eq!(DiskTestKind::SeqRead.short(), "seq_read");
        assert_eq!(DiskTestKind::RandRead.to_string(), "rand_read");
        assert!(DiskTestKind::SeqWrite.is_seq() && DiskTestKind::SeqWrite.is_write());
        assert!(!DiskTestKind::RandRead.is_seq() && !DiskTestKind::RandRead.is_write());
        assert_eq!(
            serde_json::to_string(&DiskTestKind::RandRead).unwrap(),
            "\"disk_rand_read\""
        );
        assert_eq!(
            serde_json::to_string(&Engine::IoUring).unwrap(),
            "\"io_uring\""
        );
        assert_eq!(Engine::Sync.as_str(), "sync");
    }
}
