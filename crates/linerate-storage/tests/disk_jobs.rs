//! `--jobs`, `--hipri` and `--sqpoll` end to end: the jobs' figures add up to the test's, each job
//! keeps to its own region, every completion's latency is counted, the job search stops, and the
//! polled options are refused with their reason where the file or the plan cannot have them.

mod common;

use std::path::Path;

use common::{assert_report, disk_dir, quick, stray_files, MIB};
use linerate_results::disk::{DiskTestKind, DiskTestResult};
use linerate_storage::{run, DiskErrorKind, DiskPlan, EngineChoice};

const READS: [DiskTestKind; 2] = [DiskTestKind::SeqRead, DiskTestKind::RandRead];

/// The jobs of `t` add up to it, keep to disjoint regions of the file, and every completed
/// operation's latency was recorded.
fn assert_jobs_add_up(t: &DiskTestResult, jobs: u32) {
    assert_eq!(t.jobs, jobs, "{t:?}");
    assert_eq!(t.per_job.len(), jobs as usize, "{t:?}");
    let ops: u64 = t.per_job.iter().map(|j| j.ops).sum();
    let bytes: u64 = t.per_job.iter().map(|j| j.bytes).sum();
    assert_eq!(ops, t.ops, "{t:?}");
    assert_eq!(bytes, t.bytes, "{t:?}");
    assert_eq!(t.latency_samples, t.ops, "no sampling: {t:?}");
    let longest = t.per_job.iter().map(|j| j.seconds).fold(0.0, f64::max);
    assert!(t.seconds >= longest, "{t:?}");
    let mut end = 0;
    for (k, j) in t.per_job.iter().enumerate() {
        assert_eq!(j.job as usize, k);
        assert!(j.ops > 0 && j.iops > 0.0, "job {k} did nothing: {t:?}");
        assert!(j.latency_us.is_some(), "{t:?}");
        assert!(j.region_start >= end, "regions overlap: {t:?}");
        assert_eq!(j.region_bytes % t.block_bytes, 0);
        end = j.region_start + j.region_bytes;
    }
    assert!(end <= t.file_bytes, "{t:?}");
    assert!(
        t.cpu_percent > 0.0 && t.cpu_us_per_io.is_some_and(|c| c > 0.0),
        "{t:?}"
    );
}

fn jobs_plan(jobs: u32, engine: EngineChoice) -> DiskPlan {
    DiskPlan {
        jobs,
        engine,
        queue_depth: 4,
        ..quick(32 * MIB, 300, &READS)
    }
}

#[test]
fn two_jobs_add_up_with_both_engines() {
    let dir = disk_dir();
    for engine in [EngineChoice::Auto, EngineChoice::Sync] {
        let r = run(dir.path(), &jobs_plan(2, engine), |_| {}).unwrap();
        assert_report(&r, &READS);
        assert_eq!(r.buffer_bytes, 2 * 4 * MIB);
        for t in &r.tests {
            assert_jobs_add_up(t, 2);
            // Two equal halves of the file.
            assert_eq!(t.per_job[1].region_start, 16 * MIB, "{t:?}");
        }
    }
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn one_job_is_the_whole_file() {
    let dir = disk_dir();
    let r = run(dir.path(), &jobs_plan(1, EngineChoice::Auto), |_| {}).unwrap();
    for t in &r.tests {
        assert_jobs_add_up(t, 1);
        assert_eq!(
            (t.per_job[0].region_start, t.per_job[0].region_bytes),
            (0, 32 * MIB)
        );
        assert!(t.job_scaling.is_empty());
    }
}

#[test]
fn job_search_reports_each_count_tried() {
    let dir = disk_dir();
    let plan = DiskPlan {
        scale_jobs: true,
        tests: vec![DiskTestKind::RandRead],
        ..jobs_plan(3, EngineChoice::Auto)
    };
    let r = run(dir.path(), &plan, |_| {}).unwrap();
    let t = &r.tests[0];
    let tried: Vec<u32> = t.job_scaling.iter().map(|s| s.jobs).collect();
    // 1, then 2, then 3 only while each added 5%: a prefix of 1..=3, the kept count among them.
    assert!(!tried.is_empty() && tried.len() <= 3, "{tried:?}");
    assert!(
        tried.iter().enumerate().all(|(i, &n)| n as usize == i + 1),
        "{tried:?}"
    );
    assert!(tried.contains(&t.jobs), "{t:?}");
    for w in t.job_scaling.windows(2) {
        assert!(
            w[1].iops >= w[0].iops * 1.05 || w[1].jobs == *tried.last().unwrap(),
            "{t:?}"
        );
    }
    assert_jobs_add_up(t, t.jobs);
    let kept = t.job_scaling.iter().find(|s| s.jobs == t.jobs).unwrap();
    assert!((kept.iops - t.iops).abs() < 1.0, "{t:?}");
}

#[test]
fn more_jobs_than_the_file_has_blocks_is_an_error() {
    let dir = disk_dir();
    let plan = DiskPlan {
        jobs: 8,
        queue_depth: 1,
        tests: vec![DiskTestKind::SeqRead],
        seq_block: 1 << 20,
        ..quick(4 * MIB, 100, &[DiskTestKind::SeqRead])
    };
    let e = run(dir.path(), &plan, |_| {}).unwrap_err();
    assert!(
        e.to_string()
            .contains("8 jobs need a test file of at least 8 MiB"),
        "{e}"
    );
    assert!(e.partial.is_some_and(|p| p.tests.len() == 1));
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn plans_that_cannot_poll_are_refused_up_front() {
    let dir = disk_dir();
    let bad = |p: DiskPlan| {
        let e = run(dir.path(), &p, |_| {}).unwrap_err();
        assert!(matches!(e.kind, DiskErrorKind::InvalidPlan(_)), "{e:?}");
        e.to_string()
    };
    let base = quick(4 * MIB, 100, &[DiskTestKind::RandRead]);
    let m = bad(DiskPlan {
        hipri: true,
        direct: false,
        ..base.clone()
    });
    assert!(m.contains("--hipri") && m.contains("--buffered"), "{m}");
    for (hipri, sqpoll, flag) in [(true, false, "--hipri"), (false, true, "--sqpoll")] {
        let m = bad(DiskPlan {
            hipri,
            sqpoll,
            engine: EngineChoice::Sync,
            ..base.clone()
        });
        assert!(m.contains(flag) && m.contains("--engine sync"), "{m}");
    }
    let m = bad(DiskPlan {
        jobs: 0,
        ..base.clone()
    });
    assert!(m.contains("jobs 0"), "{m}");
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn tmpfs_refuses_polled_io_with_the_reason() {
    if !Path::new("/dev/shm").is_dir() {
        linerate_testkit::skip("no /dev/shm (tmpfs) on this machine");
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let plan = DiskPlan {
        hipri: true,
        ..quick(4 * MIB, 100, &[DiskTestKind::RandRead])
    };
    let e = run(dir.path(), &plan, |_| {}).unwrap_err();
    let m = e.to_string();
    match &e.kind {
        // The kernel polls: tmpfs's first operation said EOPNOTSUPP (or it refused O_DIRECT).
        DiskErrorKind::Unsupported { option, .. } => {
            assert_eq!(*option, "--hipri");
            assert!(m.contains("tmpfs"), "{m}");
        }
        // No io_uring at all here (seccomp, io_uring_disabled).
        DiskErrorKind::EngineUnavailable { .. } => {}
        _ => panic!("{e:?}"),
    }
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn sqpoll_runs_or_is_refused_with_the_reason() {
    let dir = disk_dir();
    let plan = DiskPlan {
        sqpoll: true,
        queue_depth: 4,
        ..quick(8 * MIB, 200, &[DiskTestKind::RandRead])
    };
    match run(dir.path(), &plan, |_| {}) {
        Ok(r) => {
            // An SQPOLL thread competing for a busy machine's cores can be slow: functional
            // facts only (a rate may round to 0.000 GB/s).
            assert!(r.sqpoll && r.error.is_none(), "{r:?}");
            assert_eq!(r.tests.len(), 1);
            assert!(r.tests[0].error.is_none() && r.tests[0].ops > 0, "{r:?}");
            assert_jobs_add_up(&r.tests[0], 1);
        }
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.contains("--sqpoll refused") && m.contains("SQPOLL"),
                "{m}"
            );
        }
    }
    assert!(stray_files(dir.path()).is_empty());
}
