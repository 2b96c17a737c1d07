//! `udp_bw`: a paced sender per stream; a receiver for every stream of the server's shared
//! socket (the client: one per stream). In iperf3's datagrams (a test of an iperf3 peer), a
//! receiver per stream on the stream's own socket, each counting by iperf3's definitions.

use std::net::UdpSocket;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use linerate_engine::{iperf3_udp, udp};
use linerate_iperf3::udp::SeqWidth;
use linerate_proto::{Refusal, SideResults, TestParams};
use linerate_results::TestResult;

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::{throughput, CpuSpan, TransportStats};
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::{Datagrams, StreamFn, Streams, UdpFlow};

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

/// Send stream `idx` at its rate, or receive it, in the datagrams its flow is framed in.
fn stream(st: &mut Streams<'_>, idx: u32, flow: UdpFlow) {
    let UdpFlow {
        sock,
        peer,
        datagrams,
    } = flow;
    if let Datagrams::Iperf3 { width, counts } = datagrams {
        iperf3_stream(st, idx, sock, width, counts);
        return;
    }
    let p = st.params();
    if st.sends(idx) {
        let (tag, length, rate) = (st.plan().tag, p.length as usize, p.bitrate_bps);
        let (meter, stop, deadline) = (st.meter(idx), st.stop(), st.deadline());
        let f: StreamFn = Box::new(move || {
            udp::send(&sock, peer, tag, idx, length, rate, deadline, &meter, &stop)
        });
        st.spawn_job(idx, f);
    } else if st.plan().is_client || !st.shared_receiver {
        // Server: one thread on the shared socket receives every stream.
        st.shared_receiver = true;
        let (tag, meters) = (st.plan().tag, st.meters());
        st.spawn_receiver(idx, move |until| udp::recv(&sock, tag, &meters, until));
    }
}

/// A stream in iperf3's datagrams on a connected socket of its own: a paced sender, or a
/// receiver that runs until the test is stopped; either leaves its counts in `counts`.
fn iperf3_stream(
    st: &mut Streams<'_>,
    idx: u32,
    sock: Arc<UdpSocket>,
    width: SeqWidth,
    counts: Arc<Mutex<Option<iperf3_udp::Counts>>>,
) {
    let p = st.params();
    let omit_until = (p.omit_ms > 0).then(|| st.plan().start + Duration::from_millis(p.omit_ms));
    let (meter, stop) = (st.meter(idx), st.stop());
    let keep = move |c: iperf3_udp::Counts| {
        *counts.lock().unwrap_or_else(PoisonError::into_inner) = Some(c);
    };
    let f: StreamFn = if st.sends(idx) {
        let plan = iperf3_udp::SendPlan {
            width,
            length: p.length as usize,
            bitrate_bps: p.bitrate_bps,
            deadline: st.deadline(),
            omit_until,
        };
        Box::new(move || {
            let (out, c) = iperf3_udp::send(&sock, &plan, &meter, &stop);
            keep(c);
            out
        })
    } else {
        Box::new(move || {
            let (out, c) = iperf3_udp::recv(&sock, width, omit_until, &meter, &stop);
            keep(c);
            out
        })
    };
    st.spawn_job(idx, f);
}
