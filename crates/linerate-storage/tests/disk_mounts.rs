//! Failures that need a mount of their own (root only; skipped with the reason otherwise):
//! a full filesystem up front and mid-run, a read-only bind mount, a filesystem without O_DIRECT.

mod common;

use std::fs::OpenOptions;

use common::{hog, quick, stray_files, Mount, MIB};
use linerate_results::disk::DiskTestKind;
use linerate_storage::{run, DiskErrorKind, DiskEvent};

#[test]
fn small_tmpfs_refuses_a_big_file_up_front() {
    let Some(m) = Mount::new("small_tmpfs", &["-t", "tmpfs", "-o", "size=32m", "tmpfs"]) else {
        return;
    };
    let mut filled = false;
    let e = run(m.path(), &quick(64 * MIB, 300, &DiskTestKind::ALL), |ev| {
        filled |= matches!(ev, DiskEvent::Filling { .. });
    })
    .unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::NoSpace { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("not enough free space") && msg.contains("64 MiB"),
        "{msg}"
    );
    assert!(msg.contains(&*m.path().to_string_lossy()), "{msg}");
    assert!(!filled, "nothing may be written");
    assert!(stray_files(m.path()).is_empty());
}

#[test]
fn disk_full_while_filling() {
    let Some(m) = Mount::new("full_fill", &["-t", "tmpfs", "-o", "size=16m", "tmpfs"]) else {
        return;
    };
    let dir = m.path().to_path_buf();
    // Something else takes the space after the check and before the fill.
    let e = run(&dir, &quick(12 * MIB, 300, &DiskTestKind::ALL), |ev| {
        if matches!(ev, DiskEvent::Prepared { .. }) {
            hog(&dir);
        }
    })
    .unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::DiskFull { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("filled up while filling the test file"),
        "{msg}"
    );
    assert!(e.partial.unwrap().tests.is_empty());
    assert!(stray_files(&dir).is_empty());
}

#[test]
fn disk_full_mid_run_keeps_what_was_measured() {
    let Some(m) = Mount::new("full_mid", &["-t", "tmpfs", "-o", "size=16m", "tmpfs"]) else {
        return;
    };
    let dir = m.path().to_path_buf();
    let kinds = [DiskTestKind::SeqRead, DiskTestKind::SeqWrite];
    // After the first test, the space under the file goes (like a copy-on-write or thin
    // filesystem running out) and something else takes it.
    let e = run(&dir, &quick(8 * MIB, 300, &kinds), |ev| {
        if let DiskEvent::TestDone(t) = ev {
            if t.kind == DiskTestKind::SeqRead {
                for f in stray_files(&dir) {
                    OpenOptions::new()
                        .write(true)
                        .open(f)
                        .unwrap()
                        .set_len(0)
                        .unwrap();
                }
                hog(&dir);
            }
        }
    })
    .unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::DiskFull { .. }), "{e}");
    assert!(e.to_string().contains("while running seq_write"), "{e}");
    let partial = e.partial.unwrap();
    assert_eq!(partial.tests.len(), 2, "{partial:?}");
    common::assert_sane(&partial.tests[0]);
    let w = &partial.tests[1];
    assert!(w.error.as_deref().unwrap().contains("filled up"), "{w:?}");
    assert_eq!(partial.error.as_deref(), w.error.as_deref());
    assert!(stray_files(&dir).is_empty());
}

#[test]
fn read_only_bind_mount() {
    let src = common::disk_dir();
    let Some(m) = Mount::new("ro_bind", &["--bind", &src.path().to_string_lossy()]) else {
        return;
    };
    assert!(m.run(&["-o", "remount,bind,ro"]), "remount ro");
    let e = run(m.path(), &quick(16 * MIB, 300, &DiskTestKind::ALL), |_| {}).unwrap_err();
    assert!(matches!(e.kind, DiskErrorKind::ReadOnly { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("read-only filesystem"), "{msg}");
    assert!(msg.contains(&*m.path().to_string_lossy()), "{msg}");
    assert_eq!(std::fs::read_dir(src.path()).unwrap().count(), 0);
}

#[test]
fn ramfs_falls_back_to_buffered_io() {
    let Some(m) = Mount::new("ramfs", &["-t", "ramfs", "ramfs"]) else {
        return;
    };
    let kinds = [DiskTestKind::SeqRead, DiskTestKind::RandWrite];
    let r = run(m.path(), &quick(16 * MIB, 300, &kinds), |_| {}).unwrap();
    common::assert_report(&r, &kinds);
    assert!(!r.direct && r.tests.iter().all(|t| !t.direct), "{r:?}");
    assert_eq!(r.filesystem, "ramfs");
    let notes = r.notes.join("\n");
    assert!(notes.contains("refuses O_DIRECT"), "{notes}");
    assert!(notes.contains("does not report its free space"), "{notes}");
    assert!(stray_files(m.path()).is_empty());
}
