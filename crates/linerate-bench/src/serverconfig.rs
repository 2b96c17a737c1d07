//! The server's operator settings (`linerate serve`'s flags): what the server and each kind's
//! admission read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use linerate_proto::{defaults, Limits, Psk};

use crate::shutdown::ShutdownTrigger;

/// Operator settings.
#[derive(Clone)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// One more listening port, on the same address, for stock iperf3 clients that cannot be
    /// told another port (`--iperf3-port`, e.g. 5201). It serves both protocols, as `bind` does.
    pub iperf3_port: Option<u16>,
    pub limits: Limits,
    pub psk: Option<Psk>,
    /// Time a new connection has to complete its handshake (and a test to get its data connections).
    pub handshake_timeout: Duration,
    /// Most connections in the handshake phase at once; more are closed at once.
    pub max_pending: u32,
    /// Total buffer memory all running tests may hold.
    pub max_memory_bytes: u64,
    /// Stop after this many tests (for scripts and tests); None = forever.
    pub max_served: Option<u64>,
    /// How to describe the interface a test runs on (sent to the client).
    pub inventory: Option<crate::InventoryFn>,
    /// Write one JSON log line per event on stdout.
    pub log: bool,
    /// The only directory file transfers may write into (`--write-dir`); None refuses them.
    pub write_dir: Option<Arc<crate::writedir::WriteDir>>,
    /// How this host samples its port counters during a soak (under `serve --root`); None
    /// refuses soaks.
    pub soak: Option<linerate_inventory::counters::SoakSamplerFn>,
    /// Ends the server early when triggered (a temporary far end's stdin closed, a signal).
    pub shutdown: Option<ShutdownTrigger>,
    /// A hard deadline from the start of `serve_on` (`serve --exit-after`): the server ends then,
    /// tests running or not.
    pub exit_after: Option<Duration>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("iperf3_port", &self.iperf3_port)
            .field("limits", &self.limits)
            .field("auth", &self.psk.is_some())
            .field("handshake_timeout", &self.handshake_timeout)
            .field("max_pending", &self.max_pending)
            .field("max_memory_bytes", &self.max_memory_bytes)
            .field("write_dir", &self.write_dir.as_ref().map(|w| w.path()))
            .field("soak", &self.soak.is_some())
            .field("shutdown", &self.shutdown)
            .field("exit_after", &self.exit_after)
            .finish_non_exhaustive()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([0, 0, 0, 0], defaults::PORT)),
            iperf3_port: None,
            limits: Limits::default(),
            psk: None,
            handshake_timeout: defaults::HANDSHAKE_TIMEOUT,
            max_pending: defaults::MAX_PENDING,
            max_memory_bytes: defaults::MAX_MEMORY_BYTES,
            max_served: None,
            inventory: None,
            log: true,
            write_dir: None,
            soak: None,
            shutdown: None,
            exit_after: None,
        }
    }
}
