//! `udp_lat`: the client times request/response round trips (a request unanswered for 200 ms
//! is lost); the server echoes every datagram to where it came from.

use linerate_engine::lat;
use linerate_proto::{Refusal, SideResults, TestParams};
use linerate_results::{LatencyMode, TestResult};

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::transactions;
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::{Streams, UdpFlow};

pub(super) struct UdpLat;

impl Kind for UdpLat {
    fn ends(&self) -> Ends {
        Ends::Udp {
            run: stream,
            register: false,
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
        t.lost_transactions = run.local.latency.map(|l| l.lost);
        t.latency_mode = Some(LatencyMode::new(
            0,
            Some(0),
            "UDP round trips always block (--spin applies to TCP)".into(),
        ));
    }
}

/// The client's round trips, or the server's echo.
fn stream(st: &mut Streams<'_>, idx: u32, flow: UdpFlow) {
    let length = st.params().length as usize;
    let sock = flow.sock;
    if st.plan().is_client {
        let (meter, stop, deadline) = (st.meter(idx), st.stop(), st.deadline());
        st.spawn_round_trips(idx, move |rtt| {
            lat::udp_client(&sock, length, deadline, rtt, &meter, &stop)
        });
    } else {
        st.quiet = true;
        st.spawn_answerer(idx, move |until| lat::udp_echo(&sock, until));
    }
}
