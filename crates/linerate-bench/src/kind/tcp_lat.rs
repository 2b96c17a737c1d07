//! `tcp_lat`: the client times request/response round trips on one connection; the server
//! echoes them. Both ends busy-poll for `--spin` µs before blocking (the server at most its
//! `--max-spin`).

use std::net::TcpStream;
use std::time::{Duration, Instant};

use linerate_engine::{lat, StreamOutcome};
use linerate_proto::{Refusal, SideResults, TestParams};
use linerate_results::{LatencyMode, TestResult};

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::transactions;
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::{spin_of, StreamFn, Streams, IDLE};

pub(super) struct TcpLat;

impl Kind for TcpLat {
    fn ends(&self) -> Ends {
        Ends::Tcp {
            run: stream,
            nodelay: true,
        }
    }

    fn admit(&self, _: &TestParams, _: &ServerConfig) -> Result<(), Refusal> {
        Ok(())
    }

    fn prepare(&self, _: &TestParams, _: &ServerConfig) -> Result<Held, Refusal> {
        nothing_held()
    }

    fn finish(&self, _: Held, _: &TestParams, _: &mut SideResults) -> Option<FileLog> {
        None
    }

    fn assemble(&self, t: &mut TestResult, run: &ClientRun) {
        transactions(t, run);
        t.latency_mode = Some(latency_mode(run));
    }
}

/// The client's round trips, or the server's echo.
fn stream(st: &mut Streams<'_>, idx: u32, s: TcpStream) -> Result<(), String> {
    let p = st.params();
    let spin = spin_of(p);
    let length = p.length as usize;
    let idle = IDLE + Duration::from_millis(p.duration_ms);
    st.spin = Some(spin);
    st.keep_tcp(idx, &s, false);
    let (meter, stop, deadline) = (st.meter(idx), st.stop(), st.deadline());
    if st.plan().is_client {
        st.spawn_round_trips(idx, move |rtt| {
            lat::tcp_client(&s, length, spin, deadline, rtt, &meter, &stop)
        });
    } else {
        st.quiet = true;
        let f: StreamFn = Box::new(move || StreamOutcome {
            error: lat::tcp_echo(&s, length, spin, idle, &stop),
            ended: Some(Instant::now()),
            ..StreamOutcome::default()
        });
        st.spawn_job(idx, f);
    }
    Ok(())
}

/// How the test waited, from both sides' reports (bench's reason; doctor gives its own).
fn latency_mode(run: &ClientRun) -> LatencyMode {
    let p = &run.params;
    let client = run.local.spin_us.or(p.spin_us).unwrap_or(0);
    let server = run.remote.as_ref().and_then(|r| r.spin_us);
    let reason = if client > 0 {
        format!("--spin {client}: both ends poll up to {client} µs per wait before blocking")
    } else {
        "bench's default: both ends block (--spin US busy-polls)".into()
    };
    LatencyMode::new(client, server, reason)
}
