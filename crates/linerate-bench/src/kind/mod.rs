//! What each end of a test does, one module per kind behind [`Kind`], registered in [`of`]:
//! the threads each end runs on its data connections and the transport those use ([`Ends`]),
//! what the server checks and holds beyond the generic limits, and how both ends' figures
//! become the result. What a pure crate can say about a kind (defaults, shape, limits, memory,
//! words) is its `linerate_proto::kind` module's.
//!
//! A new kind: a module here implementing [`Kind`] (no method has a default, so the compiler
//! lists them), its arm in [`of`], and its `linerate_proto::kind` module. The wire protocols
//! (`crate::server`, `crate::client`) match on [`Ends`] without a catch-all: a kind on a new
//! transport makes the compiler name every protocol that must learn it.

use std::sync::Arc;

use linerate_proto::{Refusal, SideResults, TestKind, TestParams};
use linerate_results::TestResult;

use crate::outcome::ClientRun;
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
pub(crate) use crate::side::{ConnectEnd, ListenEnd, TcpEnd, UdpEnd};

use crate::writedir::NewFile;

mod file_transfer;
mod rdma;
mod tcp_bw;
mod tcp_crr;
mod tcp_lat;
mod udp_bw;
mod udp_lat;

/// What each end runs, and so the transport its data connections use. A wire protocol sets up
/// the connections of the transport and hands them with the function to `side::run`.
#[derive(Debug, Clone, Copy)]
pub enum Ends {
    /// One TCP connection per stream for the whole test (`nodelay`: set TCP_NODELAY on it
    /// before it connects).
    Tcp { run: TcpEnd, nodelay: bool },
    /// One UDP flow per stream. `register`: before the start, the server learns the client's
    /// address of each stream it sends on (a bandwidth test; an echo answers where the
    /// requests come from).
    Udp { run: UdpEnd, register: bool },
    /// A TCP listener of the server's own for the test, on which the client opens a
    /// connection per transaction.
    Listener {
        listen: ListenEnd,
        connect: ConnectEnd,
    },
    /// RDMA queue pairs through libfabric, which the engine of `linerate-rdma` connects
    /// itself (`crate::rdma`).
    Rdma,
}

/// What a server holds for a test while it runs (a file transfer: the file it writes).
#[derive(Debug, Default)]
pub struct Held {
    pub file: Option<NewFile>,
}

/// One kind of test, as the ends run it. Implemented once per kind; no method has a default.
pub trait Kind: Sync {
    /// What each end runs, on which transport.
    fn ends(&self) -> Ends;
    /// Server: what this kind needs of the server beyond the limits every kind shares,
    /// checked before a test slot is reserved (a soak needs a counter sampler, a file transfer
    /// a write directory).
    fn admit(&self, p: &TestParams, cfg: &ServerConfig) -> Result<(), Refusal>;
    /// Server: what the test holds while it runs, made once its slot is reserved and before
    /// the client is answered, so a refusal says why before anything is sent.
    fn prepare(&self, p: &TestParams, cfg: &ServerConfig) -> Result<Held, Refusal>;
    /// Server: settle what the test held once this end ran (a copy made durable and kept, or
    /// removed); what the log says of it.
    fn finish(&self, held: Held, p: &TestParams, results: &mut SideResults) -> Option<FileLog>;
    /// Both ends' figures → the result (`t` holds the test's own figures already).
    fn assemble(&self, t: &mut TestResult, run: &ClientRun);
}

/// Assemble the result of a finished (or interrupted) run: the test's own figures, both
/// ends' interfaces, then what its kind makes of the measurements.
pub fn assemble(run: &ClientRun) -> TestResult {
    let p = &run.params;
    let mut t = TestResult {
        server: run.server.to_string(),
        local: run
            .local_inventory
            .as_ref()
            .map(linerate_facts::HostFacts::interface_view),
        remote: run
            .remote_inventory
            .as_ref()
            .map(linerate_facts::HostFacts::interface_view),
        error: run.error.clone(),
        ..TestResult::new(p.clone())
    };
    of(p.kind).assemble(&mut t, run);
    if let Some(i) = &run.iperf3 {
        crate::results::iperf3(&mut t, run, i);
    }
    t.disturbance = crate::results::disturbance(&t, run);
    t.qdiscs = crate::results::qdiscs(run);
    t.udp_receive = crate::results::udp_receive(run);
    t
}

/// The registration of every kind: its module.
pub fn of(kind: TestKind) -> &'static dyn Kind {
    match kind {
        TestKind::TcpBw => &tcp_bw::TcpBw,
        TestKind::UdpBw => &udp_bw::UdpBw,
        TestKind::TcpLat => &tcp_lat::TcpLat,
        TestKind::UdpLat => &udp_lat::UdpLat,
        TestKind::FileTransfer => &file_transfer::FileTransfer,
        TestKind::Rdma => &rdma::Rdma,
        TestKind::TcpCrr => &tcp_crr::TcpCrr,
    }
}

impl Held {
    /// The file this end reads or writes, for its streams.
    pub fn file(&self) -> Option<Arc<std::fs::File>> {
        self.file.as_ref().map(|f| Arc::clone(&f.file))
    }
}

/// Nothing held.
fn nothing_held() -> Result<Held, Refusal> {
    Ok(Held::default())
}
