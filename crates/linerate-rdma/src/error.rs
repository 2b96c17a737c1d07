//! The crate's one error type.

use std::time::Duration;

/// Everything that can go wrong, each naming the thing and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RdmaError {
    /// libfabric is not installed (or not loadable).
    #[error("RDMA unavailable: {0}")]
    Unavailable(String),
    /// libfabric is there but no provider offers message endpoints with RMA here.
    #[error("no RDMA provider/device (tried: {tried}){detail}")]
    NoProvider { tried: String, detail: String },
    /// Bad parameters, rejected before anything was opened or sent.
    #[error("invalid RDMA parameters: {0}")]
    InvalidParams(String),
    /// A libfabric call failed: e.g. "fi_connect to 127.0.0.1:40123 (provider tcp): Connection refused".
    #[error("{call} {target} (provider {provider}): {text}")]
    Call {
        call: String,
        target: String,
        provider: String,
        text: String,
        code: i32,
    },
    /// A bounded wait ran out.
    #[error("timed out after {:.1} s {what}", after.as_secs_f64())]
    Timeout { what: String, after: Duration },
    /// The peer went away (disconnected, or its endpoint was closed) before the end.
    #[error("peer disconnected: {0}")]
    PeerGone(String),
    /// The peer sent something we did not expect.
    #[error("RDMA protocol error: {0}")]
    Protocol(String),
    /// The caller's stop flag was set.
    #[error("stopped")]
    Stopped,
    /// Pinning memory failed (ENOMEM) under a locked-memory limit: the limit, not the machine's
    /// memory, is what ran out.
    #[error("{call} failed (Cannot allocate memory) registering {}: this process may lock at most {} of memory (RLIMIT_MEMLOCK, `ulimit -l`) and RDMA pins what it registers; raise the limit: `* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.d/ (log in again), `LimitMEMLOCK=infinity` for a systemd service, `ulimit -l unlimited` as root (`linerate setup rdma-stack --apply` writes the first two)", fmt_bytes(*bytes), fmt_bytes(*limit))]
    Memlock {
        call: String,
        bytes: u64,
        limit: u64,
    },
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} bytes")
    }
}
