//! `tcp_bw`: a sender or a receiver thread per connection; TCP_INFO from the senders.

use std::net::TcpStream;

use linerate_engine::tcp;
use linerate_proto::{Refusal, RefusalKind, SideResults, TestParams};
use linerate_results::TestResult;

use super::{nothing_held, Ends, Held, Kind};
use crate::outcome::ClientRun;
use crate::results::{throughput, CpuSpan, TransportStats};
use crate::serverconfig::ServerConfig;
use crate::serverlog::FileLog;
use crate::side::{StreamFn, Streams, IDLE};

pub(super) struct TcpBw;

impl Kind for TcpBw {
    fn ends(&self) -> Ends {
        Ends::Tcp {
            run: stream,
            nodelay: false,
        }
    }

    fn admit(&self, p: &TestParams, cfg: &ServerConfig) -> Result<(), Refusal> {
        if p.soak && cfg.soak.is_none() {
            return Err(Refusal::new(
                RefusalKind::Unsupported,
                "this server does not sample its counters: it cannot run a soak",
            ));
        }
        Ok(())
    }

    fn prepare(&self, _: &TestParams, _: &ServerConfig) -> Result<Held, Refusal> {
        nothing_held()
    }

    fn finish(&self, _: Held, _: &TestParams, _: &mut SideResults) -> Option<FileLog> {
        None
    }

    fn assemble(&self, t: &mut TestResult, run: &ClientRun) {
        throughput(t, run, TransportStats::Tcp, CpuSpan::Duration);
    }
}

/// Send or receive on connection `idx` until the deadline or the end of the stream.
fn stream(st: &mut Streams<'_>, idx: u32, s: TcpStream) -> Result<(), String> {
    let p = st.params();
    let sender = st.sends(idx);
    let length = p.length as usize;
    let discard = p.discard;
    let wake = if p.no_rcvlowat {
        tcp::Wake::EachArrival
    } else {
        tcp::Wake::Batched {
            cap: p.window.map(|w| w as usize / 2),
        }
    };
    let (bitrate_bps, zerocopy) = (p.bitrate_bps, p.zerocopy);
    let budget = st.plan().budget.clone();
    st.keep_tcp(idx, &s, sender);
    let (meter, stop) = (st.meter(idx), st.stop());
    let f: StreamFn = if sender {
        let plan = tcp::SendPlan {
            length,
            deadline: st.deadline(),
            bitrate_bps,
            zerocopy,
            budget,
        };
        Box::new(move || tcp::send(&s, &plan, &meter, &stop))
    } else {
        let plan = tcp::RecvPlan {
            length,
            how: if discard {
                tcp::Receive::Discard
            } else {
                tcp::Receive::Copy
            },
            wake,
            idle: IDLE,
            budget,
        };
        Box::new(move || tcp::recv(&s, &plan, &meter, &stop))
    };
    st.spawn_job(idx, f);
    Ok(())
}
