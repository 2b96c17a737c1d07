//! `linerate serve`'s log: one JSON object a line on stdout, tagged by `event`
//! (`schemas/serve-log.schema.json`).

use std::io::Write;

use linerate_proto::{Direction, Limits, TestKind, TestParams};
use serde::{Deserialize, Serialize};

/// One event of the server's log.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ServerLog {
    /// The server is up.
    Listening {
        address: String,
        protocol: u32,
        /// linerate's version (`linerate --version`).
        version: &'static str,
        auth: bool,
        limits: Limits,
        max_memory_bytes: u64,
        /// `--write-dir`, if file transfers are allowed.
        write_dir: Option<String>,
        /// Where stock iperf3 clients are served.
        iperf3: Iperf3Listening,
    },
    /// A connection or a test was refused: why, and the test asked for when there was one.
    Refused {
        client: String,
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<TestParams>,
        /// An iperf3 client: what it is and what it was answered.
        #[serde(skip_serializing_if = "Option::is_none")]
        iperf3: Option<Iperf3Refused>,
    },
    /// A connection that misbehaved or timed out in its handshake.
    Dropped { client: String, reason: String },
    /// A client with a wrong pre-shared key.
    AuthFailed { client: String },
    /// A test ended.
    Test(TestLog),
}

/// The wire protocol a client spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerProtocol {
    Linerate,
    Iperf3,
}

/// Where the server takes stock iperf3 clients: every TCP listener (serve's port, and
/// `--iperf3-port`'s), and the UDP sockets on their port numbers for iperf3's UDP streams.
#[derive(Debug, Clone, Serialize)]
pub struct Iperf3Listening {
    pub addresses: Vec<String>,
    pub udp: Vec<String>,
    /// A UDP port that could not be bound, and why (iperf3 UDP tests on it are refused).
    pub udp_errors: Vec<String>,
}

/// What an iperf3 client that was refused is, and what it was told.
#[derive(Debug, Clone, Serialize)]
pub struct Iperf3Refused {
    /// `client_version` from its parameters (escaped), when it got that far and sent one.
    pub client_version: Option<String>,
    /// `access_denied` (iperf3's "busy" state byte) or `server_error`.
    pub answer: &'static str,
    /// With `server_error`: the iperf3 error code sent, and its name.
    pub code: Option<i32>,
    pub code_name: Option<&'static str>,
}

/// An iperf3 client's test.
#[derive(Debug, Clone, Serialize)]
pub struct Iperf3TestLog {
    /// `client_version` from its parameters (escaped).
    pub client_version: Option<String>,
    /// The bytes the client said it moved (its results), both ways, after the warm-up.
    pub client_bytes: Option<u64>,
    /// With SERVER_ERROR: the iperf3 error code sent.
    pub code: Option<i32>,
    /// The client's options this server did not act on (they change nothing the client
    /// measures, or the server cannot apply them), by their iperf3 names (escaped).
    pub ignored: Vec<String>,
}

/// How a test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Error,
}

impl Outcome {
    pub fn of(error: Option<&String>) -> Self {
        if error.is_some() {
            Self::Error
        } else {
            Self::Ok
        }
    }
}

/// The `test` event: its fields depend on how far the test got and what it was.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum TestLog {
    Ran(TestRan),
    Rdma(RdmaRan),
    /// Accepted, but it failed before it started (data connections, start).
    Failed {
        test_id: u64,
        client: String,
        protocol: PeerProtocol,
        /// The test kind (`tcp_bw`, ..., `rdma`).
        kind: String,
        result: Outcome,
        error: String,
    },
}

/// A TCP, UDP, latency or file test that ran.
#[derive(Debug, Clone, Serialize)]
pub struct TestRan {
    pub test_id: u64,
    pub client: String,
    /// The wire protocol the client spoke.
    pub protocol: PeerProtocol,
    pub kind: TestKind,
    pub direction: Direction,
    pub streams: u32,
    pub duration_s: f64,
    /// Bytes both ways, all streams, after the warm-up.
    pub bytes: u64,
    /// `bytes` over the longest stream's seconds, Gb/s.
    pub gbps: f64,
    pub cpu_percent: f64,
    pub memory_bytes: u64,
    pub result: Outcome,
    pub error: Option<String>,
    /// File transfers: the file.
    pub file: Option<FileLog>,
    /// An iperf3 client's test: the client and what the server made of its options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iperf3: Option<Iperf3TestLog>,
}

/// A file transfer's file, once the test ended.
#[derive(Debug, Clone, Serialize)]
pub struct FileLog {
    pub path: String,
    pub size: u64,
    /// Bytes written to the disk.
    pub written: u64,
    /// Complete and kept (not `--remove-after`).
    pub kept: bool,
}

/// An RDMA test that ran (the target's side).
#[derive(Debug, Clone, Serialize)]
pub struct RdmaRan {
    pub test_id: u64,
    pub client: String,
    /// `rdma_write_bw`, ...
    pub kind: &'static str,
    pub provider: String,
    pub domain: String,
    pub qps: u32,
    pub length: u32,
    pub messages: u64,
    pub bytes: u64,
    pub verify_errors: u64,
    pub cpu_percent: f64,
    pub memory_bytes: u64,
    pub result: Outcome,
    pub error: Option<String>,
}

impl ServerLog {
    /// The event as one line of JSON (no newline) stamped with `ts`, seconds since the Unix
    /// epoch. Through a `serde_json::Value`, so the keys come sorted, as they always have.
    pub fn to_line(&self, ts: f64) -> Result<String, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("ts".into(), ts.into());
        }
        Ok(v.to_string())
    }

    /// Write the event as one line on stdout, stamped with the time now. Logging is best
    /// effort: a line that cannot be encoded or written is skipped, the server goes on.
    pub fn print(&self) {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let Ok(line) = self.to_line(ts) else { return };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}
