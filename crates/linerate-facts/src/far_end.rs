//! What `--ssh-copy` sent to the far end to run it: said in the JSON of `doctor`, `bench` and
//! `soak` (`far_end.copied`, `far_end_copy`).

use serde::Serialize;

/// A copy of this linerate, sent over ssh to a far end that had none (or one of an older
/// protocol), run there and removed as soon as its server had started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FarEndCopy {
    /// The SSH host it went to (`[USER@]HOST`).
    pub host: String,
    /// Why: `--ssh-copy always`, `no linerate on its PATH`, or the far end's own linerate and
    /// why it could not serve.
    pub reason: String,
    /// The binary's size, bytes.
    pub bytes: u64,
    /// Its SHA-256 (hex), checked by the far end before it ran it.
    pub sha256: String,
    /// From the first byte sent to the far end's check of the last, seconds.
    pub seconds: f64,
    /// The private directory (mode 0700) it ran from on the far end; removed.
    pub directory: String,
    /// The far end's machine (`uname -m`).
    pub machine: String,
    /// The far end's C library as it said it (`glibc 2.31`).
    pub libc: String,
    /// Directories passed over because they are mounted `noexec`.
    pub noexec: Vec<String>,
}
