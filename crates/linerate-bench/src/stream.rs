//! `linerate bench --json-stream`: one JSON object a line, tagged by `event`
//! (`schemas/bench-stream.schema.json`).

use linerate_proto::TestParams;
use serde::Serialize;

use linerate_results::{IntervalOut, TestResult};

/// Which host measured an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// This host (the client).
    Local,
    /// The server, streamed over the control connection.
    Remote,
}

/// One line of `--json-stream`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent<'a> {
    /// The server accepted the test; it starts now.
    Start {
        server: String,
        params: &'a TestParams,
        server_memory_bytes: u64,
    },
    /// One interval, from either side.
    Interval {
        side: Side,
        interval: &'a IntervalOut,
    },
    /// The test could not run; nothing follows.
    Error { error: String },
    /// The test's result (the `tests[]` element of `bench --json`); the last line.
    End { result: &'a TestResult },
}

impl StreamEvent<'_> {
    /// The event as one line of JSON (no newline). Through a `serde_json::Value`, so the keys
    /// come sorted at every level, as they always have on this stream.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_value(self).map(|v| v.to_string())
    }
}
