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
}
