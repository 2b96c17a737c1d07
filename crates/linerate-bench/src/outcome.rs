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
    /// Tests against a stock iperf3 server: what iperf3's protocol adds.
    pub iperf3: Option<Iperf3Run>,
    /// Set when the test did not complete; the results above are what was measured.
    pub error: Option<String>,
    /// The far end runs on this host (its processes were found by the listening socket they
    /// hold, in this network namespace or another): this end's CPU figures cover both ends, and
    /// the far end's count this end as someone else's.
    pub far_end_here: bool,
}

/// A test against a stock iperf3 server (`bench --iperf3`): the test as iperf3's protocol
/// carried it, and the server's own figures.
#[derive(Debug, Clone)]
pub struct Iperf3Run {
    /// The test's streams in the order they were opened (stream `i` of the run is `streams[i]`).
    pub streams: Vec<linerate_iperf3::Stream>,
    /// The server's results as it sent them; none when the exchange did not complete.
    pub server: Option<linerate_iperf3::Results>,
    /// What is known of the server's release, and what told it (see
    /// `linerate_results::Iperf3Out::version_from`).
    pub version: linerate_iperf3::VersionRange,
    pub version_from: Vec<&'static str>,
    /// Whole seconds, as sent.
    pub time_s: u64,
    pub omit_s: u64,
    pub end_bytes: Option<u64>,
    pub end_blocks: Option<u64>,
    /// Where the test differs from what was asked, and why.
    pub notes: Vec<String>,
}
