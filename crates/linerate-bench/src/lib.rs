//! `linerate serve` and `linerate bench`: the server, the client, and the
//! assembly of both sides' measurements into one result.

pub mod client;
pub mod peer;
pub mod rdma;
pub mod results;
pub mod server;
pub mod serverlog;
pub mod shutdown;
pub mod side;
pub mod stream;
pub mod writedir;

pub use client::{run as run_client, ClientConfig, ClientError, ClientRun, Event};
pub use results::assemble;
pub use server::{serve, serve_on, ServerConfig};
pub use shutdown::ShutdownTrigger;
pub use writedir::WriteDir;

/// Builds a soak's counter sampler for the local address a test uses: called once per soak;
/// the sampler it returns is called at the start and after every interval with the sample's
/// sequence number and seconds since the start (bytes are filled in by the caller).
pub type SoakSamplerFn = std::sync::Arc<
    dyn Fn(std::net::IpAddr) -> Box<dyn FnMut(u64, f64) -> linerate_proto::soak::SoakSample + Send>
        + Send
        + Sync,
>;

/// Says what this host knows about itself and the interface holding the local address a test
/// uses (`None` when nothing can be said).
pub type InventoryFn =
    std::sync::Arc<dyn Fn(std::net::IpAddr) -> Option<linerate_facts::HostFacts> + Send + Sync>;
