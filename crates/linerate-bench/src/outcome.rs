//! What a client knows when a test ends, complete or not: both ends' figures as measured, for
//! a kind's assembly into a result. Plain data, apart from the client that fills it and the
//! kinds that read it.

use std::net::SocketAddr;

use linerate_engine::lat::Rtt;
use linerate_facts::HostFacts;
use linerate_proto::{IntervalSample, SideResults, TestParams};

/// Everything the client knows at the end, complete or not.
#[derive(Debug)]
pub struct ClientRun {
    pub params: TestParams,
    pub server: SocketAddr,
    pub local_addr: Option<SocketAddr>,
    pub local: SideResults,
    pub remote: Option<SideResults>,
    pub remote_intervals: Vec<IntervalSample>,
    pub rtt: Option<Rtt>,
    pub local_inventory: Option<HostFacts>,
    pub remote_inventory: Option<HostFacts>,
    /// RDMA tests: what the client's queue pairs measured.
    pub rdma: Option<crate::rdma::RdmaRun>,
    /// Set when the test did not complete; the results above are what was measured.
    pub error: Option<String>,
}
