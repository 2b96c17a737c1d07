//! `--apply` and `--rollback`: the only code of `setup` that writes. Every file is written
//! under `root`; before the first write, each file that will change is copied into a backup
//! directory with a manifest; if a write fails, the files already written are restored (and
//! the ones created removed) before the error is returned. Nothing else is touched.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use linerate_facts::{FileChange, RolledBack};

/// Where backups go, as on the target.
pub const BACKUP_DIR: &str = "/var/backups/linerate-setup";

#[derive(Debug, Error)]
pub enum ApplyError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("writing {path} failed ({cause}); the {restored} file(s) already written were restored, nothing was changed")]
    RolledBackAfter {
        path: String,
        cause: String,
        restored: usize,
    },
    #[error("writing {path} failed ({cause}), and restoring the files already written failed too: {restore}; restore them from {backup}")]
    RestoreFailed {
        path: String,
        cause: String,
        restore: String,
        backup: String,
    },
    #[error(
        "rollback id {0:?}: expected the id `setup --apply` printed (digits, letters and `-`)"
    )]
    BadId(String),
    #[error("rollback id {id}: no backup at {dir} (the ids under that root are listed by `ls {dir_parent}`)")]
    NoBackup {
        id: String,
        dir: String,
        dir_parent: String,
    },
    #[error("backup manifest {path}: {detail}")]
    BadManifest { path: String, detail: String },
    #[error("{0}")]
    NotRoot(String),
}

/// One file in a backup.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// The path on the target.
    path: String,
    /// Whether it existed before `apply` (else `rollback` removes it).
    existed: bool,
    /// Its permission bits before.
    mode: Option<u32>,
    /// The backup copy's file name inside the backup directory.
    copy: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    id: String,
    files: Vec<Entry>,
    /// Directories `apply` created (removed again by `rollback` when empty), deepest last.
    created_dirs: Vec<String>,
}

fn host(root: &Path, target: &str) -> PathBuf {
    root.join(target.trim_start_matches('/'))
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ApplyError {
    let path = path.display().to_string();
    move |source| ApplyError::Io { what, path, source }
}

/// Refuse to write the live system without root: the files are root's.
pub fn check_privileges(root: &Path) -> Result<(), ApplyError> {
    let live = root.canonicalize().is_ok_and(|p| p == Path::new("/"));
    if live && !rustix::process::geteuid().is_root() {
        return Err(ApplyError::NotRoot(
            "--apply and --rollback on this machine (--root /) write /etc: run them as root (sudo linerate setup ...), or pass --root DIR to write a copy".to_string(),
        ));
    }
    Ok(())
}

/// A new backup id: seconds since the epoch and the process id, unique under `base`.
fn new_id(base: &Path) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stem = format!("{secs}-{}", std::process::id());
    let mut id = stem.clone();
    let mut n = 1;
    while base.join(&id).exists() {
        n += 1;
        id = format!("{stem}-{n}");
    }
    id
}

fn write_atomic(path: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.linerate-{}", std::process::id()));
    let r = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(content)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        match fs::rename(&tmp, path) {
            // A file bind-mounted over (a container's /etc/hosts, a VM's generated
            // /etc/fstab) cannot be replaced, only rewritten: in place, the backup taken.
            Err(e) if e.kind() == std::io::ErrorKind::ResourceBusy => {
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(path)?;
                f.write_all(content)?;
                f.sync_all()?;
                fs::remove_file(&tmp)
            }
            r => r,
        }
    })();
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

/// Parent directories of `path` (as on the target) that do not exist yet, outermost first.
fn missing_dirs(root: &Path, target: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = Path::new(target).parent();
    while let Some(d) = cur {
        if d == Path::new("/") || host(root, &d.display().to_string()).exists() {
            break;
        }
        out.push(d.display().to_string());
        cur = d.parent();
    }
    out.reverse();
    out
}

/// Back up, then write every file; on a failure restore what was written. Returns the backup
/// id and its directory (as on the target).
pub fn apply(root: &Path, files: &[FileChange]) -> Result<(String, String), ApplyError> {
    let base = host(root, BACKUP_DIR);
    fs::create_dir_all(&base).map_err(io("creating the backup directory", &base))?;
    let id = new_id(&base);
    let dir = base.join(&id);
    fs::create_dir(&dir).map_err(io("creating the backup directory", &dir))?;
    let mut manifest = Manifest {
        id: id.clone(),
        files: Vec::new(),
        created_dirs: Vec::new(),
    };
    for (i, f) in files.iter().enumerate() {
        let p = host(root, &f.path);
        let entry = match fs::symlink_metadata(&p) {
            Ok(m) => {
                let copy = format!(
                    "{i}-{}",
                    p.file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                );
                fs::copy(&p, dir.join(&copy)).map_err(io("backing up", &p))?;
                Entry {
                    path: f.path.clone(),
                    existed: true,
                    mode: Some(m.permissions().mode() & 0o7777),
                    copy: Some(copy),
                }
            }
            Err(_) => Entry {
                path: f.path.clone(),
                existed: false,
                mode: None,
                copy: None,
            },
        };
        manifest.files.push(entry);
        for d in missing_dirs(root, &f.path) {
            if !manifest.created_dirs.contains(&d) {
                manifest.created_dirs.push(d);
            }
        }
    }
    save_manifest(&dir, &manifest)?;
    let shown_dir = format!("{BACKUP_DIR}/{id}");
    for (i, f) in files.iter().enumerate() {
        let p = host(root, &f.path);
        let r = p
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| write_atomic(&p, f.content.as_bytes(), f.mode));
        if let Err(e) = r {
            let partial = Manifest {
                files: manifest.files[..i].to_vec(),
                ..manifest.clone()
            };
            return Err(match restore(root, &dir, &partial) {
                Ok(_) => {
                    let _ = fs::remove_dir_all(&dir);
                    ApplyError::RolledBackAfter {
                        path: f.path.clone(),
                        cause: e.to_string(),
                        restored: i,
                    }
                }
                Err(re) => ApplyError::RestoreFailed {
                    path: f.path.clone(),
                    cause: e.to_string(),
                    restore: re.to_string(),
                    backup: shown_dir,
                },
            });
        }
    }
    Ok((id, shown_dir))
}

fn save_manifest(dir: &Path, m: &Manifest) -> Result<(), ApplyError> {
    let p = dir.join("manifest.json");
    let text = serde_json::to_string_pretty(m).map_err(|e| ApplyError::BadManifest {
        path: p.display().to_string(),
        detail: e.to_string(),
    })?;
    write_atomic(&p, text.as_bytes(), 0o600).map_err(io("writing", &p))
}

/// Put every file of `m` back as it was; remove the ones that did not exist and the
/// directories apply created (when empty).
fn restore(root: &Path, dir: &Path, m: &Manifest) -> Result<RolledBack, ApplyError> {
    let mut out = RolledBack {
        id: m.id.clone(),
        restored: Vec::new(),
        removed: Vec::new(),
    };
    for e in &m.files {
        let p = host(root, &e.path);
        match (&e.copy, e.existed) {
            (Some(copy), true) => {
                let bytes = fs::read(dir.join(copy)).map_err(io("reading the backup of", &p))?;
                if let Some(parent) = p.parent() {
                    fs::create_dir_all(parent).map_err(io("creating", parent))?;
                }
                write_atomic(&p, &bytes, e.mode.unwrap_or(0o644)).map_err(io("restoring", &p))?;
                out.restored.push(e.path.clone());
            }
            _ => match fs::remove_file(&p) {
                Ok(()) => out.removed.push(e.path.clone()),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(io("removing", &p)(err)),
            },
        }
    }
    for d in m.created_dirs.iter().rev() {
        // Only when empty: something else may have put files there since.
        let _ = fs::remove_dir(host(root, d));
    }
    Ok(out)
}

/// Restore the files of backup `id` byte for byte.
pub fn rollback(root: &Path, id: &str) -> Result<RolledBack, ApplyError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(ApplyError::BadId(id.to_string()));
    }
    let base = host(root, BACKUP_DIR);
    let dir = base.join(id);
    let mp = dir.join("manifest.json");
    let text = fs::read_to_string(&mp).map_err(|_| ApplyError::NoBackup {
        id: id.to_string(),
        dir: format!("{BACKUP_DIR}/{id}"),
        dir_parent: base.display().to_string(),
    })?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| ApplyError::BadManifest {
        path: mp.display().to_string(),
        detail: e.to_string(),
    })?;
    if m.files.iter().any(|e| {
        !e.path.starts_with('/')
            || e.path.split('/').any(|c| c == "..")
            || e.copy.as_deref().is_some_and(|c| c.contains('/'))
    }) {
        return Err(ApplyError::BadManifest {
            path: mp.display().to_string(),
            detail: "a path is not absolute or climbs out with `..`".to_string(),
        });
    }
    restore(root, &dir, &m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::FileAction;

    fn change(path: &str, content: &str) -> FileChange {
        FileChange {
            path: path.into(),
            mode: 0o644,
            action: FileAction::Modify,
            content: content.into(),
        }
    }

    #[test]
    fn apply_then_rollback_is_byte_identical() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        fs::create_dir_all(r.join("etc/a")).unwrap();
        fs::write(r.join("etc/a/one.conf"), b"old\x00bytes\n").unwrap();
        fs::set_permissions(r.join("etc/a/one.conf"), fs::Permissions::from_mode(0o600)).unwrap();
        let files = [
            change("/etc/a/one.conf", "new\n"),
            change("/etc/b/c/two.conf", "two\n"),
        ];
        let (id, dir) = apply(r, &files).unwrap();
        assert!(dir.ends_with(&id));
        assert_eq!(fs::read(r.join("etc/a/one.conf")).unwrap(), b"new\n");
        assert_eq!(fs::read(r.join("etc/b/c/two.conf")).unwrap(), b"two\n");
        let rb = rollback(r, &id).unwrap();
        assert_eq!(rb.restored, vec!["/etc/a/one.conf".to_string()]);
        assert_eq!(rb.removed, vec!["/etc/b/c/two.conf".to_string()]);
        assert_eq!(
            fs::read(r.join("etc/a/one.conf")).unwrap(),
            b"old\x00bytes\n"
        );
        let mode = fs::metadata(r.join("etc/a/one.conf"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert!(
            !r.join("etc/b").exists(),
            "the directories apply created are gone"
        );
    }

    #[test]
    fn a_failed_write_restores_the_ones_before() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        fs::create_dir_all(r.join("etc/a")).unwrap();
        fs::write(r.join("etc/a/one.conf"), "original\n").unwrap();
        // A regular file where the second write needs a directory: creating it fails.
        fs::write(r.join("etc/blocker"), "not a directory\n").unwrap();
        let files = [
            change("/etc/a/one.conf", "changed\n"),
            change("/etc/blocker/two.conf", "x\n"),
        ];
        let e = apply(r, &files).unwrap_err();
        assert!(
            matches!(e, ApplyError::RolledBackAfter { restored: 1, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("/etc/blocker/two.conf"), "{e}");
        assert_eq!(
            fs::read_to_string(r.join("etc/a/one.conf")).unwrap(),
            "original\n"
        );
        assert_eq!(
            fs::read_to_string(r.join("etc/blocker")).unwrap(),
            "not a directory\n"
        );
        let left: Vec<_> = fs::read_dir(r.join("var/backups/linerate-setup"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "the backup of a failed apply is removed");
    }

    #[test]
    fn bad_ids_are_refused() {
        let t = tempfile::tempdir().unwrap();
        assert!(matches!(
            rollback(t.path(), "../../etc"),
            Err(ApplyError::BadId(_))
        ));
        assert!(matches!(
            rollback(t.path(), "123-4"),
            Err(ApplyError::NoBackup { .. })
        ));
    }
}
