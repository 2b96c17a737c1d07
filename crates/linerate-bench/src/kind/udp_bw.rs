//! `udp_bw`: a paced sender per stream; a receiver for every stream of the server's shared
//! socket (the client: one per stream). In iperf3's datagrams (a test of an iperf3 peer) every
//! stream has a connected socket of its own at both ends, so each has its own receiver, which
//! also counts by iperf3's definitions (`udp::RecvState::iperf3`).

use std::time::Duration;

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

/// Send stream `idx` at its rate, or receive it, in the test's datagrams.
fn stream(st: &mut Streams<'_>, idx: u32, flow: UdpFlow) {
    let (length, bitrate_bps, omit_ms) = {
        let p = st.params();
        (p.length as usize, p.bitrate_bps, p.omit_ms)
    };
    let UdpFlow { sock, peer } = flow;
    let format = st.plan().datagrams;
    let budget = st.plan().budget.clone();
    if st.sends(idx) {
        let plan = udp::DatagramPlan {
            length,
            bitrate_bps,
            deadline: st.deadline(),
            budget,
        };
        let (meter, stop) = (st.meter(idx), st.stop());
        let f: StreamFn =
            Box::new(move || udp::send(&sock, peer, format, idx, &plan, &meter, &stop));
        st.spawn_job(idx, f);
    } else if st.plan().is_client
        || !st.shared_receiver
        || matches!(format, udp::Format::Iperf3 { .. })
    {
        // A receiver per socket: the client's and iperf3's streams each have their own; a
        // server in linerate's datagrams has one shared socket, received by one thread.
        st.shared_receiver = true;
        let meters = st.meters();
        let omit_until = (omit_ms > 0).then(|| st.plan().start + Duration::from_millis(omit_ms));
        st.spawn_receiver(idx, move |until| {
            udp::recv(
                &sock,
                format,
                idx,
                &meters,
                (budget.as_deref(), omit_until),
                until,
            )
        });
    }
}
