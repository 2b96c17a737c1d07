//! The directory `serve --write-dir` lets clients write files into, and nothing outside it.
//!
//! The directory is opened once when the server starts and every file is
//! created relative to that handle (`openat`) under a name of one plain path
//! component ([`FileSpec::check_name`]), with `O_CREAT | O_EXCL | O_NOFOLLOW`:
//! no path traversal, no following a symlink planted in the directory, no
//! overwriting. A file that does not complete is removed; before removing,
//! the server checks the name still refers to the file it created.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use linerate_proto::FileSpec;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// Free space a transfer must leave on the filesystem, bytes.
pub const RESERVE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug)]
pub struct WriteDir {
    path: PathBuf,
    fd: OwnedFd,
    reserve: u64,
}

impl WriteDir {
    /// Open `path`, which must be an existing directory this process can write into.
    pub fn open(path: &Path) -> Result<Self, String> {
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOENT => format!(
                "--write-dir {0}: no such directory; create it first (`mkdir -p {0}`), writable by the user running `linerate serve`",
                path.display()
            ),
            Errno::NOTDIR => format!(
                "--write-dir {}: not a directory; give the directory the copies go into",
                path.display()
            ),
            Errno::ACCESS | Errno::PERM => format!(
                "--write-dir {}: {e}: the user running `linerate serve` cannot open it; give it access (chown or chmod), or choose a directory it owns",
                path.display()
            ),
            e => format!("--write-dir {}: {e}", path.display()),
        })?;
        rustix::fs::accessat(&fd, ".", rustix::fs::Access::WRITE_OK, AtFlags::empty()).map_err(
            |e| {
                format!(
                    "--write-dir {}: cannot write into it ({e}); it must be writable by the user running `linerate serve` (chown or chmod it, or choose a directory that user owns)",
                    path.display()
                )
            },
        )?;
        Ok(Self {
            path: path.to_path_buf(),
            fd,
            reserve: RESERVE_BYTES,
        })
    }

    /// Free space every transfer must leave (default [`RESERVE_BYTES`]).
    #[must_use]
    pub fn with_reserve(mut self, bytes: u64) -> Self {
        self.reserve = bytes;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes an unprivileged writer can still use on the directory's filesystem.
    pub fn free_bytes(&self) -> Result<u64, String> {
        let s = rustix::fs::fstatvfs(&self.fd)
            .map_err(|e| format!("reading the free space of {}: {e}", self.path.display()))?;
        Ok(s.f_bavail.saturating_mul(s.f_frsize))
    }

    /// Create `spec.name` for writing, refusing what the operator would not want.
    pub fn create(self: &Arc<Self>, spec: &FileSpec) -> Result<NewFile, String> {
        FileSpec::check_name(&spec.name)?;
        let free = self.free_bytes()?;
        if spec.size.saturating_add(self.reserve) > free {
            return Err(format!(
                "not enough space: the file is {} bytes and the server's write directory has {free} bytes free (keeping {} in reserve)",
                spec.size, self.reserve
            ));
        }
        let fd = rustix::fs::openat(
            &self.fd,
            spec.name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| match e {
            Errno::EXIST => format!(
                "`{}` already exists in the server's write directory: refusing to overwrite it (choose another name with --file-name)",
                spec.name
            ),
            e => format!("creating `{}` in the server's write directory: {e}", spec.name),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| format!("fstat: {e}"))?;
        Ok(NewFile {
            dir: Arc::clone(self),
            name: spec.name.clone(),
            ino: (st.st_dev, st.st_ino),
            file: Arc::new(File::from(fd)),
            keep: false,
        })
    }
}

/// A file being written: removed on drop unless [`NewFile::keep`] was called.
#[derive(Debug)]
pub struct NewFile {
    dir: Arc<WriteDir>,
    name: String,
    ino: (u64, u64),
    pub file: Arc<File>,
    keep: bool,
}

impl NewFile {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The full path, for logs.
    pub fn path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }

    /// Keep the file when this is dropped.
    pub fn keep(mut self) {
        self.keep = true;
    }

    /// Does the name still refer to the file created (not removed or replaced meanwhile)?
    pub fn still_there(&self) -> bool {
        rustix::fs::statat(
            self.dir.fd.as_fd(),
            self.name.as_str(),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .is_ok_and(|st| (st.st_dev, st.st_ino) == self.ino)
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        // Remove only the file this server created, not one put in its place.
        if self.still_there() {
            let _ = rustix::fs::unlinkat(self.dir.fd.as_fd(), self.name.as_str(), AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, size: u64) -> FileSpec {
        FileSpec {
            name: name.into(),
            size,
            fsync: false,
            remove_after: false,
        }
    }

    #[test]
    fn refuses_traversal_symlinks_and_overwrites() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("in");
        std::fs::create_dir(&dir).unwrap();
        let w = Arc::new(WriteDir::open(&dir).unwrap());
        for bad in ["../escape", "/etc/passwd", "..", ".hidden", "a/b"] {
            assert!(w.create(&spec(bad, 1)).is_err(), "{bad}");
        }
        assert!(!root.path().join("escape").exists());
        // A symlink planted in the directory, pointing out of it.
        std::os::unix::fs::symlink(root.path().join("target"), dir.join("link")).unwrap();
        assert!(w
            .create(&spec("link", 1))
            .unwrap_err()
            .contains("refusing to overwrite"));
        assert!(!root.path().join("target").exists());
        std::fs::write(dir.join("old"), b"precious").unwrap();
        assert!(w
            .create(&spec("old", 1))
            .unwrap_err()
            .contains("refusing to overwrite"));
        assert_eq!(std::fs::read(dir.join("old")).unwrap(), b"precious");
    }

    #[test]
    fn unfinished_files_are_removed_finished_kept() {
        let d = tempfile::tempdir().unwrap();
        let w = Arc::new(WriteDir::open(d.path()).unwrap());
        let f = w.create(&spec("a", 10)).unwrap();
        assert!(d.path().join("a").exists());
        drop(f);
        assert!(!d.path().join("a").exists());
        let f = w.create(&spec("b", 10)).unwrap();
        f.keep();
        assert!(d.path().join("b").exists());
        // A file replaced behind the server's back is not removed.
        let f = w.create(&spec("c", 10)).unwrap();
        std::fs::remove_file(d.path().join("c")).unwrap();
        std::fs::write(d.path().join("c"), b"someone else's").unwrap();
        drop(f);
        assert!(d.path().join("c").exists());
    }

    #[test]
    fn space_and_bad_directories() {
        let d = tempfile::tempdir().unwrap();
        let w = Arc::new(WriteDir::open(d.path()).unwrap());
        let e = w.create(&spec("huge", u64::MAX / 2)).unwrap_err();
        assert!(e.contains("not enough space"), "{e}");
        assert!(WriteDir::open(&d.path().join("missing"))
            .unwrap_err()
            .contains("no such directory"));
        let file = d.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        assert!(WriteDir::open(&file)
            .unwrap_err()
            .contains("not a directory"));
    }
}
