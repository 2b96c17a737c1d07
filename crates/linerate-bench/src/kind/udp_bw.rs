//! `udp_bw`: a paced sender per stream; a receiver for every stream of the server's shared
//! socket (the client: one per stream).

use linerate_engine::udp;
use linerate_proto::{Refusal, SideResults, TestParams};
use linerate_results::TestResult;

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::{throughput, CpuSpan, TransportStats};
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::{StreamFn, Streams, UdpFlow};

pub(super) struct UdpBw;

impl Kind for UdpBw {
    fn ends(&self) -> Ends {
        Ends::Udp {
            run: stream,
            register: true,
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
        throughput(t, run, TransportStats::Udp, CpuSpan::Duration);
    }
}

/// Send stream `idx` at its rate, or receive it.
fn stream(st: &mut Streams<'_>, idx: u32, flow: UdpFlow) {
    let p = st.params();
    let UdpFlow { sock, peer } = flow;
    let format = st.plan().datagrams;
    let budget = st.plan().budget.clone();
    if st.sends(idx) {
        let plan = udp::SendPlan {
            length: p.length as usize,
            bitrate_bps: p.bitrate_bps,
            deadline: st.deadline(),
            budget,
        };
        let (meter, stop) = (st.meter(idx), st.stop());
        let f: StreamFn =
            Box::new(move || udp::send(&sock, peer, format, idx, &plan, &meter, &stop));
        st.spawn_job(idx, f);
    } else if st.plan().is_client || !st.shared_receiver {
        // Server: one thread on the shared socket receives every stream.
        st.shared_receiver = true;
        let meters = st.meters();
        st.spawn_receiver(idx, move |until| {
            udp::recv(&sock, format, idx, &meters, budget.as_deref(), until)
        });
    }
}
