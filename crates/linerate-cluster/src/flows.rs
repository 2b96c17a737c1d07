//! One rank's side of a round: each flow it sends runs the existing bench client against the
//! receiver's data server (`linerate_bench::server::serve_on`), and becomes a
//! [`LinkMeasurement`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use linerate_bench::ClientConfig;
use linerate_mesh::{Flow, LinkMeasurement, MeshLatency, Phase, Transport};
use linerate_proto::{defaults, Direction, Psk, RdmaOp, RdmaSpec, TestKind, TestParams};

/// A latency ping-pong's length: a fraction of the bandwidth test, at least 200 ms (thousands
/// of round trips on any LAN) and at most 1 s.
pub fn latency_ms(duration_ms: u64) -> u64 {
    (duration_ms / 2).clamp(200, 1000)
}

/// How every flow of a run is measured.
#[derive(Debug, Clone)]
pub struct FlowConfig {
    pub transport: Transport,
    pub duration_ms: u64,
    pub psk: Option<Psk>,
    /// The sender's source address (its data address).
    pub bind: Option<IpAddr>,
    /// RDMA: the libfabric provider (`tcp`, `verbs`); None: the first that offers RMA.
    pub rdma_provider: Option<String>,
}

/// Where a flow runs: round, phase, and how many flows share it.
#[derive(Debug, Clone, Copy)]
pub struct FlowContext {
    pub round: u32,
    pub phase: Phase,
    pub concurrency: u32,
}

fn params(cfg: &FlowConfig, latency: bool) -> TestParams {
    let mut p = match (cfg.transport, latency) {
        (Transport::Tcp, false) => TestParams::new(TestKind::TcpBw, Direction::Send),
        (Transport::Tcp, true) => TestParams::new(TestKind::TcpLat, Direction::Send),
        (Transport::Rdma, lat) => {
            let mut p = TestParams::new(TestKind::Rdma, Direction::Send);
            p.rdma = Some(RdmaSpec {
                op: if lat { RdmaOp::Send } else { RdmaOp::Write },
                latency: lat,
                provider: cfg.rdma_provider.clone(),
                window: defaults::RDMA_WINDOW,
                qps: 1,
                verify: false,
                sweep: false,
            });
            if lat {
                p.length = defaults::RDMA_LATENCY_LENGTH;
            }
            // The window that fits a default server's per-test memory bound, as bench does.
            let bound = linerate_proto::Limits::default().memory_bound();
            while p.server_memory_bytes() > bound {
                match p.rdma.as_mut() {
                    Some(r) if r.window > 1 => r.window -= 1,
                    _ => break,
                }
            }
            p
        }
    };
    p.duration_ms = if latency {
        latency_ms(cfg.duration_ms)
    } else {
        cfg.duration_ms
    };
    p.interval_ms = p.duration_ms.max(defaults::MIN_INTERVAL_MS);
    p
}

fn client(cfg: &FlowConfig, dest: SocketAddr, latency: bool) -> ClientConfig {
    let mut c = ClientConfig::new(dest, params(cfg, latency));
    c.psk.clone_from(&cfg.psk);
    c.bind = cfg.bind;
    c.connect_timeout = Duration::from_secs(5);
    c
}

/// A client error as a mesh says it: a rank's data server that does not answer is a rank
/// that died or stopped (the coordinator names it), not a `linerate serve` to start, so bench's
/// advice for a refused or dropped connection is left out.
fn client_error(e: &linerate_bench::ClientError) -> String {
    match e {
        linerate_bench::ClientError::Connect { addr, err, .. } => {
            format!("connecting to {addr}: {err}: the receiving rank's data server did not answer")
        }
        e => e.to_string(),
    }
}

/// Measure `flow` (this rank is its sender) against the receiver's data server at `dest`:
/// the bandwidth test, then the latency ping-pong when the flow asks for one. Never fails:
/// what went wrong is the measurement's `error`.
pub fn run_flow(
    cfg: &FlowConfig,
    ctx: FlowContext,
    flow: &Flow,
    dest: SocketAddr,
) -> LinkMeasurement {
    let mut m = LinkMeasurement {
        phase: ctx.phase,
        round: ctx.round,
        tx: flow.tx,
        rx: flow.rx,
        transport: cfg.transport,
        concurrency: ctx.concurrency,
        gbps: None,
        latency: None,
        retransmits: None,
        error: None,
        tx_load: None,
        rx_load: None,
    };
    let mut errors = Vec::new();
    match linerate_bench::run_client(&client(cfg, dest, false), &mut |_| {}) {
        Ok(run) => {
            let t = linerate_bench::assemble(&run);
            if t.bytes > 0 || t.error.is_none() {
                m.gbps = Some(t.gbps);
            }
            m.retransmits = t.retransmits;
            if let Some(e) = t.error {
                errors.push(format!("bandwidth test to {dest}: {e}"));
            }
        }
        Err(e) => errors.push(format!("bandwidth test to {dest}: {}", client_error(&e))),
    }
    if flow.latency {
        match linerate_bench::run_client(&client(cfg, dest, true), &mut |_| {}) {
            Ok(run) => {
                let t = linerate_bench::assemble(&run);
                m.latency = t.latency_us.map(|l| MeshLatency {
                    p50_us: l.p50,
                    p99_us: l.p99,
                });
                if let Some(e) = t.error {
                    errors.push(format!("latency test to {dest}: {e}"));
                }
            }
            Err(e) => errors.push(format!("latency test to {dest}: {}", client_error(&e))),
        }
    }
    if !errors.is_empty() {
        m.error = Some(errors.join("; "));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_a_bounded_share_of_the_test() {
        assert_eq!(latency_ms(100), 200);
        assert_eq!(latency_ms(1000), 500);
        assert_eq!(latency_ms(10_000), 1000);
    }

    #[test]
    fn a_rank_that_does_not_answer_is_not_told_to_start_a_serve() {
        let addr: SocketAddr = "127.0.0.1:46605".parse().unwrap();
        let e = linerate_bench::ClientError::Connect {
            addr,
            err: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            timeout: Duration::from_secs(5),
            iperf3: false,
        };
        // bench's own message advises starting a server there: wrong inside a mesh.
        assert!(e.to_string().contains("linerate serve"), "{e}");
        let m = client_error(&e);
        assert!(
            !m.contains("linerate serve") && !m.contains("-p PORT"),
            "{m}"
        );
        assert!(
            m.starts_with("connecting to 127.0.0.1:46605: ")
                && m.ends_with("the receiving rank's data server did not answer"),
            "{m}"
        );
        let other = linerate_bench::ClientError::Server("busy".into());
        assert_eq!(client_error(&other), other.to_string());
    }

    #[test]
    fn params_follow_the_transport_and_fit_the_server() {
        let mut cfg = FlowConfig {
            transport: Transport::Tcp,
            duration_ms: 1500,
            psk: None,
            bind: None,
            rdma_provider: None,
        };
        let p = params(&cfg, false);
        assert_eq!((p.kind, p.duration_ms), (TestKind::TcpBw, 1500));
        assert!(p.check_shape().is_ok());
        let p = params(&cfg, true);
        assert_eq!((p.kind, p.duration_ms), (TestKind::TcpLat, 750));
        cfg.transport = Transport::Rdma;
        cfg.rdma_provider = Some("tcp".into());
        let p = params(&cfg, false);
        assert_eq!(p.kind, TestKind::Rdma);
        assert!(p.check_shape().is_ok());
        assert!(p.server_memory_bytes() <= linerate_proto::Limits::default().memory_bound());
        let r = p.rdma.unwrap();
        assert_eq!(
            (r.op, r.latency, r.provider.as_deref()),
            (RdmaOp::Write, false, Some("tcp"))
        );
        let p = params(&cfg, true);
        assert!(p.rdma.unwrap().latency);
    }
}
