//! `tcp_crr`: the server listens on a port of its own for the test, with one accepting thread
//! per stream that answers the test's client only; the client runs one loop per stream, each
//! opening a connection per transaction (`linerate_engine::crr`). The result is the client's:
//! connections per second and the latency of each, like a latency test's.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use linerate_engine::crr;
use linerate_proto::{Refusal, SideResults, TestParams};
use linerate_results::TestResult;

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::transactions;
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::Streams;

pub(super) struct TcpCrr;

impl Kind for TcpCrr {
    fn ends(&self) -> Ends {
        Ends::Listener {
            listen: answer,
            connect,
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
    }
}

/// A server thread: answer the client's connections until it is done.
fn answer(st: &mut Streams<'_>, idx: u32, listener: &Arc<TcpListener>, client: IpAddr) {
    let length = st.params().length as usize;
    let listener = Arc::clone(listener);
    st.quiet = true;
    st.spawn_answerer(idx, move |until| {
        let served = crr::serve(&listener, client, length, until);
        (served.transactions == 0 && served.failed > 0).then(|| {
            format!(
                "none of the {} connections the client opened completed its request",
                served.failed
            )
        })
    });
}

/// A client loop: a connection per transaction until the deadline.
fn connect(st: &mut Streams<'_>, idx: u32, server: SocketAddr, bind: Option<IpAddr>) {
    let p = st.params();
    let plan = crr::ClientPlan {
        server,
        bind,
        length: p.length as usize,
        deadline: st.deadline(),
        record_from: st.plan().start + Duration::from_millis(p.omit_ms),
    };
    let (meter, stop) = (st.meter(idx), st.stop());
    st.spawn_round_trips(idx, move |rtt| crr::client(&plan, rtt, &meter, &stop));
}
