//! `disk::run` end to end on tmpfs and on the root filesystem, and the errors that need no root.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{assert_report, disk_dir, quick, stray_files, MIB};
use linerate_results::disk::{DiskTestKind, Engine};
use linerate_storage::{run, DiskErrorKind, DiskEvent, EngineChoice};

const ALL: [DiskTestKind; 4] = DiskTestKind::ALL;

#[test]
fn tmpfs_all_tests() {
    if !Path::new("/dev/shm").is_dir() {
        linerate_testkit::skip("no /dev/shm (tmpfs) on this machine");
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let mut events = Vec::new();
    let r = run(dir.path(), &quick(64 * MIB, 500, &ALL), |e| {
        events.push(match e {
            DiskEvent::Prepared { .. } => "prepared",
            DiskEvent::Filling { .. } => "filling",
            DiskEvent::TestStarted { .. } => "started",
            DiskEvent::TestDone(_) => "done",
        });
    })
    .unwrap();
    assert_report(&r, &ALL);
    assert!(r.filesystem.starts_with("tmpfs"), "{}", r.filesystem);
    assert_eq!(r.file_bytes, 64 * MIB);
    assert_eq!(r.buffer_bytes, 32 * MIB);
    assert!(r.notes.iter().any(|n| n.contains("RAM")), "{:?}", r.notes);
    assert_eq!(events.first(), Some(&"prepared"));
    assert_eq!(events.iter().filter(|e| **e == "done").count(), 4);
    for t in &r.tests {
        // Each test ran about its time (writes add an fdatasync).
        assert!(t.seconds > 0.4 && t.seconds < 5.0, "{t:?}");
        assert_eq!(t.queue_depth, 32);
        assert_eq!(t.block_bytes, if t.kind.is_seq() { MIB } else { 4096 });
    }
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn root_filesystem_read_tests() {
    let dir = disk_dir();
    let kinds = [DiskTestKind::SeqRead, DiskTestKind::RandRead];
    let r = run(dir.path(), &quick(64 * MIB, 500, &kinds), |_| {}).unwrap();
    assert_report(&r, &kinds);
    assert!(!r.filesystem.is_empty() && r.filesystem != "unknown");
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn root_filesystem_write_tests_with_both_engines() {
    let dir = disk_dir();
    let kinds = [DiskTestKind::SeqWrite, DiskTestKind::RandWrite];
    for engine in [EngineChoice::Sync, EngineChoice::Auto] {
        let mut p = quick(64 * MIB, 500, &kinds);
        p.engine = engine;
        p.queue_depth = 8;
        let r = run(dir.path(), &p, |_| {}).unwrap();
        assert_report(&r, &kinds);
        if engine == EngineChoice::Sync {
            assert_eq!(r.engine, Some(Engine::Sync));
            assert!(r.tests.iter().all(|t| t.engine == Engine::Sync));
        }
        assert!(stray_files(dir.path()).is_empty());
    }
}

#[test]
fn buffered_when_asked() {
    let dir = disk_dir();
    let kinds = [DiskTestKind::SeqRead, DiskTestKind::RandWrite];
    let mut p = quick(32 * MIB, 300, &kinds);
    p.direct = false;
    let r = run(dir.path(), &p, |_| {}).unwrap();
    assert_report(&r, &kinds);
    assert!(!r.direct && r.tests.iter().all(|t| !t.direct));
    assert!(
        r.notes.iter().any(|n| n.contains("page cache")),
        "{:?}",
        r.notes
    );
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn not_a_directory_and_missing() {
    let dir = disk_dir();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let e = run(&file, &quick(64 * MIB, 300, &ALL), |_| {}).unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::NotADirectory { .. }), "{e}");
    assert!(e.to_string().contains(&*file.to_string_lossy()), "{e}");
    assert!(e.to_string().contains("not a directory"), "{e}");

    let missing = dir.path().join("nope");
    let e = run(&missing, &quick(64 * MIB, 300, &ALL), |_| {}).unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::NotFound { .. }), "{e}");
    assert!(e.to_string().contains("nope: no such directory"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bad_plans_are_refused_before_touching_anything() {
    let dir = disk_dir();
    let mut p = quick(64 * MIB, 300, &ALL);
    p.seq_block = 1000;
    let e = run(dir.path(), &p, |_| {}).unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::InvalidPlan(_)), "{e}");
    assert!(e.partial.is_none());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn directory_removed_mid_run() {
    let parent = disk_dir();
    let dir = parent.path().join("victim");
    std::fs::create_dir(&dir).unwrap();
    let d2 = dir.clone();
    let remover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        std::fs::remove_dir_all(&d2).unwrap();
    });
    let t = Instant::now();
    let kinds = [DiskTestKind::SeqRead, DiskTestKind::RandRead];
    // Unstopped, this would take the fill plus 2 × 3 s.
    let e = run(&dir, &quick(64 * MIB, 3000, &kinds), |_| {}).unwrap_err();
    remover.join().unwrap();
    assert!(matches!(e.kind, DiskErrorKind::Vanished { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("victim") && msg.contains("removed"), "{msg}");
    let partial = e.partial.expect("partial report");
    assert!(partial.error.is_some());
    // Stopped soon after the removal, not at the end of both tests.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(!dir.exists());
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}

#[test]
fn cancel_stops_and_cleans_up() {
    let dir = disk_dir();
    let cancel = Arc::new(AtomicBool::new(false));
    let c2 = Arc::clone(&cancel);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c2.store(true, Ordering::Relaxed);
    });
    let mut p = quick(64 * MIB, 5000, &ALL);
    p.cancel = Some(cancel);
    let t = Instant::now();
    let e = run(dir.path(), &p, |_| {}).unwrap_err();
    stopper.join().unwrap();
    assert!(matches!(e.kind, DiskErrorKind::Interrupted { .. }), "{e}");
    // Unstopped: the fill plus 4 × 5 s.
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let partial = e.partial.unwrap();
    // The test that was running reports what it measured, with the reason it stopped.
    if let Some(last) = partial.tests.last() {
        assert!(
            last.error.as_deref().unwrap().contains("interrupted"),
            "{last:?}"
        );
    }
    assert!(stray_files(dir.path()).is_empty());
}

#[test]
fn json_has_the_documented_fields() {
    let dir = disk_dir();
    let r = run(
        dir.path(),
        &quick(16 * MIB, 200, &[DiskTestKind::RandRead]),
        |_| {},
    )
    .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    let t = &v["tests"][0];
    assert_eq!(t["kind"], "disk_rand_read");
    for k in [
        "gbps",
        "gb_per_s",
        "iops",
        "block_bytes",
        "queue_depth",
        "direct",
        "file_bytes",
        "engine",
        "seconds",
        "bytes",
        "filesystem",
        "error",
    ] {
        assert!(t.get(k).is_some(), "{k} missing in {t}");
    }
    for k in ["p50", "p90", "p99", "p999", "max", "mean"] {
        assert!(t["latency_us"][k].is_number(), "{k}");
    }
    assert!(t["engine"] == "io_uring" || t["engine"] == "sync");
}
