//! doctor's local steps: memory bandwidth and the disks, before any network test.

use std::path::PathBuf;
use std::time::Duration;

use linerate_engine::mem::{self, MemOp};
use linerate_results::disk::DiskReport;
use linerate_storage::disk::JOB_GAIN;

use crate::options::Progress;
use crate::plan::Depth;

/// What the memory step measured.
#[derive(Debug)]
pub struct Memory {
    /// Copy over buffers far larger than the caches: one thread, then every core.
    pub one: mem::MemResult,
    pub all: mem::MemResult,
    /// Copy at the size a TCP stream copies per call (its write size), one thread: the rate
    /// one core copies the stream's data when it stays in the caches, as it does on a
    /// loopback or veth path.
    pub stream: mem::MemResult,
}

/// Memory: the host stack's own bound for a virtual path, and the top of the pyramid.
pub fn measure_memory(cpus: usize) -> Memory {
    // Best of three short runs: a capability, so a busy moment should not lower it.
    let best_of = |threads: usize, bytes: usize| {
        (0..3)
            .map(|_| mem::measure(MemOp::Copy, threads, bytes, Duration::from_millis(200)))
            .max_by(|a, b| a.gb_per_s().total_cmp(&b.gb_per_s()))
            .expect("three runs")
    };
    let stream_bytes = linerate_proto::defaults::default_length(1, false) as usize;
    Memory {
        one: best_of(1, 64 << 20),
        all: best_of(cpus, 64 << 20),
        stream: best_of(1, stream_bytes),
    }
}

/// `linerate disk` of each directory given; a disk that fails keeps what it measured. Each
/// disk measured is handed to `progress` as it is (the caller says its figures).
pub fn measure_disks(
    dirs: &[PathBuf],
    depth: Depth,
    progress: &mut dyn FnMut(Progress<'_>),
    errors: &mut Vec<String>,
) -> Vec<DiskReport> {
    let mut disks = Vec::new();
    for path in dirs {
        progress(Progress::Line(&format!("disk {}", path.display())));
        match linerate_storage::run(path, &disk_plan(depth), |_| {}) {
            Ok(r) => {
                progress(Progress::Disk(&r));
                disks.push(r);
            }
            Err(e) => {
                progress(Progress::Line(&format!("  → failed: {e}")));
                errors.push(format!("disk {}: {e}", path.display()));
                if let Some(p) = e.partial {
                    disks.push(*p);
                }
            }
        }
    }
    disks
}

/// The short disk plan of each depth: sequential reads and writes, random reads beyond quick.
fn disk_plan(depth: Depth) -> linerate_storage::DiskPlan {
    use linerate_results::disk::DiskTestKind as K;
    let (secs, size, tests) = match depth {
        Depth::Quick => (1, 256u64 << 20, vec![K::SeqRead, K::SeqWrite]),
        Depth::Normal => (2, 512 << 20, vec![K::SeqRead, K::RandRead, K::SeqWrite]),
        Depth::Thorough => (
            3,
            1 << 30,
            vec![K::SeqRead, K::RandRead, K::SeqWrite, K::RandWrite],
        ),
    };
    // As many jobs as it takes to reach the device's maximum: one more while it adds 5%, at
    // most one per CPU (and within the plan's 1 GiB of buffers).
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let plan = linerate_storage::DiskPlan {
        size: Some(size),
        duration: Duration::from_secs(secs),
        tests,
        scale_jobs: true,
        ..linerate_storage::DiskPlan::default()
    };
    let fit = linerate_storage::disk::MAX_BUFFER_BYTES / plan.buffer_bytes().max(1);
    linerate_storage::DiskPlan {
        jobs: u32::try_from(cpus)
            .unwrap_or(u32::MAX)
            .min(u32::try_from(fit).unwrap_or(u32::MAX))
            .clamp(1, linerate_storage::disk::MAX_JOBS),
        ..plan
    }
}

/// What the search for the number of jobs found, one line per test of a disk: the jobs each
/// number gave, the one kept and why the search stopped.
pub fn job_notes(r: &DiskReport) -> Vec<String> {
    r.tests
        .iter()
        .filter(|t| !t.job_scaling.is_empty())
        .map(|t| {
            let unit = |iops: f64, gb: f64| {
                if t.kind.is_seq() {
                    format!("{gb:.2} GB/s")
                } else {
                    format!("{iops:.0} IOPS")
                }
            };
            let tried: Vec<String> = t
                .job_scaling
                .iter()
                .map(|s| format!("{} → {}", s.jobs, unit(s.iops, s.gb_per_s)))
                .collect();
            let steps = &t.job_scaling;
            let (last, before) = steps
                .split_last()
                .map_or((None, &[][..]), |(l, b)| (Some(l), b));
            let best_before = before.iter().map(|s| s.iops).fold(0.0, f64::max);
            let why = match last {
                _ if t.error.is_some() => "the test stopped".to_string(),
                Some(l) if !before.is_empty() && l.iops < best_before * (1.0 + JOB_GAIN) => {
                    format!("job {} added under {:.0}%", l.jobs, JOB_GAIN * 100.0)
                }
                _ => "one job per CPU".to_string(),
            };
            format!(
                "disk {} {}: {} job{} ({}; stopped adding: {why})",
                r.path.display(),
                t.kind.short(),
                t.jobs,
                if t.jobs == 1 { "" } else { "s" },
                tried.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_results::disk::{DiskJobStep, DiskTestKind, DiskTestResult, Engine};

    fn test(kind: DiskTestKind, jobs: u32, steps: &[(u32, f64)]) -> DiskTestResult {
        DiskTestResult {
            kind,
            gbps: 1.0,
            gb_per_s: 0.125,
            iops: 1.0,
            latency_us: None,
            block_bytes: 4096,
            queue_depth: 32,
            direct: true,
            file_bytes: 1 << 20,
            engine: Engine::IoUring,
            seconds: 1.0,
            bytes: 4096,
            ops: 1,
            filesystem: "tmpfs".into(),
            error: None,
            jobs,
            per_job: Vec::new(),
            latency_samples: 1,
            cpu_percent: 1.0,
            cpu_us_per_io: Some(1.0),
            job_scaling: steps
                .iter()
                .map(|&(jobs, iops)| DiskJobStep {
                    jobs,
                    iops,
                    gb_per_s: iops * 4096.0 / 1e9,
                    cpu_us_per_io: Some(2.0),
                })
                .collect(),
        }
    }

    #[test]
    fn job_notes_say_what_each_count_gave_and_why_the_search_stopped() {
        let report = DiskReport {
            path: "/d".into(),
            filesystem: "tmpfs".into(),
            mount_point: None,
            file_bytes: 1 << 20,
            buffer_bytes: 0,
            direct: true,
            engine: Some(Engine::IoUring),
            hipri: false,
            sqpoll: false,
            tests: vec![
                test(DiskTestKind::RandRead, 2, &[(1, 400_000.0), (2, 800_000.0)]),
                test(DiskTestKind::SeqRead, 1, &[(1, 5000.0), (2, 5100.0)]),
                test(DiskTestKind::SeqWrite, 1, &[]),
            ],
            notes: Vec::new(),
            error: None,
        };
        let n = job_notes(&report);
        assert_eq!(n.len(), 2, "{n:?}");
        assert_eq!(
            n[0],
            "disk /d rand_read: 2 jobs (1 → 400000 IOPS, 2 → 800000 IOPS; stopped adding: one job per CPU)"
        );
        assert!(
            n[1].starts_with("disk /d seq_read: 1 job (1 → 0.02 GB/s"),
            "{}",
            n[1]
        );
        assert!(
            n[1].ends_with("stopped adding: job 2 added under 5%)"),
            "{}",
            n[1]
        );
    }
}
