//! `linerate serve` and `linerate bench`: the server, the client, and the
//! assembly of both sides' measurements into one result.
//!
//! Two seams shape it. Each kind of test is a module of `kind` (what each end runs, on which
//! transport, what the server checks and holds, how the result is assembled), registered in
//! `kind::of`. Each wire protocol is a module of [`server`] and of [`client`] on the
//! protocol-neutral machinery there (slots, memory, the registry of data connections, running
//! a side; the client's sockets and run), chosen by a connection's first bytes on the server
//! and by [`client::WireProtocol`] on the client.

pub mod client;
mod iperf3_counts;
mod kind;
mod outcome;
pub mod peer;
mod qdiscs;
pub mod rdma;
pub mod results;
pub mod server;
mod serverconfig;
pub mod serverlog;
pub mod shutdown;
mod side;
pub mod stream;
mod udp_receive;
mod wire;
pub mod writedir;

pub use client::{run as run_client, ClientConfig, ClientError, ClientRun, Event, WireProtocol};
pub use kind::assemble;
pub use server::{serve, serve_on, ServerConfig};
pub use shutdown::ShutdownTrigger;
pub use writedir::WriteDir;

/// Says what this host knows about itself and the interface holding the local address a test
/// uses (`None` when nothing can be said).
pub type InventoryFn =
    std::sync::Arc<dyn Fn(std::net::IpAddr) -> Option<linerate_facts::HostFacts> + Send + Sync>;
