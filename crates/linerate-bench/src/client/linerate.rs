//! linerate's control protocol, the client's side (`docs/protocol.md`): hello, authentication,
//! the request, the data connections of the kind's transport, the test with the server's
//! intervals streamed beside this end's, the results.

use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::meter::Stop;
use linerate_engine::udp;
use linerate_facts::HostFacts;
use linerate_proto::soak::{End, SoakSample};
use linerate_proto::{
    defaults, random_hex, read_msg, write_msg, FrameError, IntervalSample, Msg, SideResults,
    TestParams, MAGIC, MAX_RESULTS_FRAME, PROTOCOL_VERSION,
};

use super::{
    connect, data_socket, local_plan, run_local, udp_socket, ClientConfig, ClientError, ClientRun,
    Event,
};
use crate::kind::{self, Ends};
use crate::side::{self, UdpFlow, Wired};

/// The client side of an RDMA test, after `accepted`.
fn run_rdma(
    cfg: &ClientConfig,
    mut ctl: TcpStream,
    listen: &linerate_proto::RdmaListen,
    r: &linerate_proto::RdmaSpec,
    memory: u64,
    (local_addr, local_inventory, remote_inventory): (
        Option<SocketAddr>,
        Option<HostFacts>,
        Option<HostFacts>,
    ),
    events: &mut dyn FnMut(Event),
) -> Result<ClientRun, ClientError> {
    write_msg(&mut ctl, &Msg::Start)?;
    events(Event::Started {
        server_memory_bytes: memory,
    });
    let local_ip = local_addr.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let stop = Stop::new();
    let rr = crate::rdma::run_client(
        crate::rdma::RdmaPath {
            server: cfg.server.ip(),
            local: local_ip,
            device: cfg.rdma_device.as_deref(),
        },
        listen,
        &cfg.params,
        r,
        &stop,
        &mut |s| events(Event::Local(s)),
    );
    let _ = write_msg(&mut ctl, &Msg::Done);
    // The server answers once its targets have ended (bounded by its own deadline).
    let _ = ctl.set_read_timeout(Some(side::GRACE + defaults::CONTROL_TIMEOUT));
    let (remote, reader_err) = match read_msg(&mut ctl, MAX_RESULTS_FRAME) {
        Ok(Msg::Results { results }) => (Some(crate::peer::sanitize(results, 0)), None),
        Ok(Msg::Error { message }) => (None, Some(format!("the server reported: {message}"))),
        Ok(other) => (
            None,
            Some(format!("protocol: expected results, got {}", other.name())),
        ),
        Err(e) => (
            None,
            Some(format!("lost the control connection to the server: {e}")),
        ),
    };
    let _ = ctl.shutdown(Shutdown::Both);
    let mut errors: Vec<String> = rr
        .errors
        .iter()
        .map(|e| format!("this host: {e}"))
        .collect();
    errors.extend(reader_err);
    if let Some(e) = remote.as_ref().and_then(|r| r.error.as_ref()) {
        errors.push(format!("server: {e}"));
    }
    let local = SideResults {
        cpu: rr.cpu,
        intervals: rr.intervals.clone(),
        error: (!rr.errors.is_empty()).then(|| rr.errors.join("; ")),
        ..SideResults::default()
    };
    Ok(ClientRun {
        params: cfg.params.clone(),
        server: cfg.server,
        local_addr,
        local,
        remote,
        remote_intervals: Vec::new(),
        rtt: None,
        local_inventory,
        remote_inventory,
        rdma: Some(rr),
        iperf3: None,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        // RDMA measures no host CPU of its own here.
        far_end_here: false,
    })
}

/// What the server's `accepted` says.
struct Accepted {
    memory: u64,
    cookie: String,
    udp_port: Option<u16>,
    inventory: Option<HostFacts>,
    rdma: Option<linerate_proto::RdmaListen>,
    listen_port: Option<u16>,
}

/// Before linerate's answer is read as a frame, its first bytes, to tell another server from
/// a linerate one within the handshake: a linerate frame starts with 0 (its length is below
/// 16 MiB); an iperf3 server answers any 37 bytes with a state byte (PARAM_EXCHANGE, or
/// ACCESS_DENIED when busy); other servers say what they are (`HTTP/1.1 400`, `SSH-2.0-…`) or
/// nothing at all.
fn check_answer(ctl: &TcpStream, server: SocketAddr) -> Result<(), ClientError> {
    use linerate_iperf3::State;
    let first = match super::peek_first(
        ctl,
        defaults::CONTROL_TIMEOUT,
        32,
        Duration::from_millis(200),
    ) {
        Ok(b) => b,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            return Err(ClientError::WrongPeer(format!(
                "no answer from the server at {server} within {} s of linerate's hello: it does not speak linerate's protocol (a server waiting for its own client's first words, or a silent listener); check HOST and -p (`linerate serve` listens on {} by default)",
                defaults::CONTROL_TIMEOUT.as_secs(),
                linerate_proto::DEFAULT_PORT
            )))
        }
        // The read below says what went wrong.
        Err(_) => return Ok(()),
    };
    let Some(&b) = first.first() else {
        return Ok(());
    };
    if b == 0 {
        return Ok(());
    }
    let iperf3 = |said: &str| {
        ClientError::WrongPeer(format!(
            "the server at {server} is an iperf3 server, not `linerate serve` (it answered linerate's hello with iperf3's {said}): add --iperf3 to measure against it{}",
            if server.port() == linerate_proto::DEFAULT_PORT {
                format!(
                    " (keep -p {}: with --iperf3 the port is iperf3's {} unless given)",
                    server.port(),
                    linerate_iperf3::DEFAULT_PORT
                )
            } else {
                String::new()
            }
        ))
    };
    if b == State::ParamExchange.to_byte() {
        return Err(iperf3("PARAM_EXCHANGE"));
    }
    if b == State::AccessDenied.to_byte() {
        return Err(iperf3("ACCESS_DENIED: it is running another test"));
    }
    if b == linerate_iperf3::ServerError::BYTE {
        return Err(iperf3("SERVER_ERROR"));
    }
    Err(ClientError::WrongPeer(format!(
        "the server at {server} does not speak linerate's protocol: it is {}; check HOST and -p (`linerate serve` listens on {} by default)",
        super::stranger(&first),
        linerate_proto::DEFAULT_PORT
    )))
}

fn handshake(cfg: &ClientConfig, ctl: &mut TcpStream) -> Result<Accepted, ClientError> {
    let nonce = random_hex(16);
    write_msg(
        ctl,
        &Msg::Hello {
            magic: MAGIC.into(),
            protocol: PROTOCOL_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
            nonce: nonce.clone(),
        },
    )?;
    check_answer(ctl, cfg.server)?;
    let hello = read_msg(ctl, MAX_RESULTS_FRAME).map_err(|e| match e {
        // A server over its `--max-pending` closes new connections before any answer.
        FrameError::Closed => ClientError::Protocol(format!(
            "the server at {} closed the connection before answering: it is busy with other connections (serve --max-pending), or it is not a linerate server; try again shortly",
            cfg.server
        )),
        e => e.into(),
    })?;
    let (auth, server_nonce, server_version) = match hello {
        Msg::ServerHello { protocol, auth, nonce, version } if protocol == PROTOCOL_VERSION => (auth, nonce, version),
        Msg::ServerHello { protocol, version, .. } => {
            return Err(ClientError::Protocol(format!(
                "the server at {} runs linerate {version} (protocol {protocol}), this host linerate {} (protocol {PROTOCOL_VERSION}): install the same linerate version on both hosts",
                cfg.server,
                env!("CARGO_PKG_VERSION")
            )))
        }
        Msg::Error { message } => return Err(ClientError::Server(message)),
        other => return Err(ClientError::Protocol(format!("unexpected {other:?}"))),
    };
    if !auth && cfg.psk.is_some() {
        return Err(ClientError::ServerNoAuth);
    }
    if auth {
        let psk = cfg.psk.as_ref().ok_or(ClientError::NeedsKey(cfg.server))?;
        write_msg(
            ctl,
            &Msg::Auth {
                proof: psk.client_proof(&server_nonce, &nonce),
            },
        )?;
        match read_msg(ctl, MAX_RESULTS_FRAME)? {
            Msg::AuthOk { proof } if psk.verify_server(&nonce, &server_nonce, &proof) => {}
            Msg::AuthOk { .. } => return Err(ClientError::ServerProof),
            // The only error a server sends here is a wrong key.
            Msg::Error { message } => {
                return Err(ClientError::Server(format!(
                    "{message}; --psk-file must hold the same key as the one given to the server's `linerate serve --psk-file`"
                )))
            }
            other => return Err(ClientError::Protocol(format!("unexpected {other:?}"))),
        }
    }
    write_msg(
        ctl,
        &Msg::Request {
            params: cfg.params.clone(),
        },
    )?;
    let answer = read_msg(ctl, MAX_RESULTS_FRAME).map_err(|e| match e {
        // A server drops a request it cannot read: one older than this client does so with a
        // kind of test (or a field) it does not know.
        FrameError::Closed if server_version != env!("CARGO_PKG_VERSION") => ClientError::Protocol(format!(
            "the server at {} closed the connection on the request without an answer: a server of another version (linerate {server_version} there, {} here) does so with a kind of test it does not know ({}); use the same version on both hosts, or see its log",
            cfg.server,
            env!("CARGO_PKG_VERSION"),
            cfg.params.kind
        )),
        FrameError::Closed => ClientError::Protocol(format!(
            "the server at {} closed the connection on the request without an answer: it stopped, or dropped the request (see its log)",
            cfg.server
        )),
        e => e.into(),
    })?;
    match answer {
        Msg::Accepted {
            memory_bytes,
            cookie,
            udp_port,
            inventory,
            rdma,
            listen_port,
            ..
        } => Ok(Accepted {
            memory: memory_bytes,
            cookie,
            udp_port,
            inventory: inventory.map(|b| *b),
            rdma,
            listen_port,
        }),
        Msg::Refused { reason, kind } => Err(ClientError::Refused { kind, reason }),
        Msg::Error { message } => Err(ClientError::Server(message)),
        other => Err(ClientError::Protocol(format!("unexpected {other:?}"))),
    }
}

/// Open the data connections of the kind's transport, as `accepted` says.
fn open_data(
    cfg: &ClientConfig,
    ends: Ends,
    acc: &Accepted,
    local: IpAddr,
) -> Result<Wired, ClientError> {
    let p = &cfg.params;
    let n = p.connections();
    match ends {
        Ends::Tcp { run, nodelay } => {
            let mut conns = Vec::new();
            for i in 0..n {
                let mut s = data_socket(cfg, cfg.server, nodelay)?;
                write_msg(
                    &mut s,
                    &Msg::DataHello {
                        cookie: acc.cookie.clone(),
                        stream: i,
                    },
                )?;
                conns.push(s);
            }
            Ok(Wired::Tcp(run, conns))
        }
        Ends::Udp { run, register } => {
            let port = acc.udp_port.ok_or_else(|| {
                ClientError::Protocol("no UDP port in the server's answer".into())
            })?;
            let dest = SocketAddr::new(cfg.server.ip(), port);
            let tag = udp::tag(&acc.cookie);
            let mut flows = Vec::new();
            for i in 0..n {
                let u = udp_socket(cfg, local, dest)?;
                if register && p.sends_on(i, false) {
                    udp::register(&u, tag, i, 30).map_err(ClientError::Data)?;
                }
                flows.push(UdpFlow {
                    sock: Arc::new(u),
                    peer: None,
                });
            }
            Ok(Wired::Udp(run, flows))
        }
        Ends::Listener { connect, .. } => {
            let port = acc.listen_port.ok_or_else(|| {
                ClientError::Protocol("no listening port in the server's answer".into())
            })?;
            Ok(Wired::Connect {
                run: connect,
                server: SocketAddr::new(cfg.server.ip(), port),
                bind: cfg.bind,
                streams: n,
            })
        }
        // `run` takes RDMA tests on their own path before.
        Ends::Rdma => Err(ClientError::Protocol(
            "an RDMA test has no data connections of its own".into(),
        )),
    }
}

/// What the control reader ends with: the server's results, or why there are none.
type ReaderEnd = (Option<SideResults>, Option<String>);

/// Read the control connection while the test runs: the server's intervals go to `tx`, its
/// results end the thread. A server that misbehaves or goes away sets `abort`.
fn control_reader(
    ctl: &TcpStream,
    params: &TestParams,
    start: Instant,
    tx: mpsc::Sender<IntervalSample>,
    soak_tx: mpsc::Sender<SoakSample>,
    abort: &Stop,
) -> Result<thread::JoinHandle<ReaderEnd>, ClientError> {
    let limit = Duration::from_millis(params.duration_ms) + side::GRACE + defaults::CONTROL_TIMEOUT;
    let mut reader = ctl
        .try_clone()
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
    let reader_abort = abort.clone();
    // A server may stream at most this many intervals, each for exactly our connections.
    let conns_n = params.connections() as usize;
    let every = params.interval_ms.max(100);
    let max_samples = 2 * params.duration_ms / every + 10;
    let soak = params.soak;
    Ok(thread::spawn(move || -> ReaderEnd {
        let _ = reader.set_read_timeout(Some(Duration::from_millis(250)));
        let mut samples: u64 = 0;
        let mut soak_samples: u64 = 0;
        loop {
            match read_msg(&mut reader, MAX_RESULTS_FRAME) {
                // Only a soak streams counters: one baseline, then one per interval.
                Ok(Msg::SoakSample { mut sample }) if soak => {
                    soak_samples += 1;
                    if soak_samples > max_samples + 1 {
                        reader_abort.set();
                        return (None, Some(format!("protocol: the server sent {soak_samples} soak samples; expected at most {}", max_samples + 1)));
                    }
                    // The server is the remote end, whatever it wrote.
                    sample.end = End::Remote;
                    let _ = soak_tx.send(sample);
                }
                Ok(Msg::Interval { sample }) => {
                    samples += 1;
                    if sample.bytes.len() != conns_n || samples > max_samples {
                        reader_abort.set();
                        return (None, Some(format!("protocol: the server sent {samples} interval(s), the last for {} streams; expected at most {max_samples} for {conns_n}", sample.bytes.len())));
                    }
                    let _ = tx.send(sample);
                }
                Ok(Msg::Results { results }) => {
                    return (Some(crate::peer::sanitize(results, conns_n)), None)
                }
                Ok(Msg::Error { message }) => {
                    reader_abort.set();
                    return (None, Some(format!("the server reported: {message}")));
                }
                Ok(_) => {}
                Err(FrameError::Timeout) if start.elapsed() < limit => {}
                Err(FrameError::Timeout) => {
                    return (None, Some("the server sent no results in time".into()))
                }
                Err(e) => {
                    reader_abort.set();
                    return (
                        None,
                        Some(format!("lost the control connection to the server: {e}")),
                    );
                }
            }
        }
    }))
}

/// Pass on what the control reader has received from the server so far.
fn drain_remote(
    rx: &mpsc::Receiver<IntervalSample>,
    soak_rx: &mpsc::Receiver<SoakSample>,
    remote_intervals: &mut Vec<IntervalSample>,
    events: &mut dyn FnMut(Event),
) {
    while let Ok(r) = rx.try_recv() {
        remote_intervals.push(r.clone());
        events(Event::Remote(r));
    }
    while let Ok(r) = soak_rx.try_recv() {
        events(Event::RemoteSoak(r));
    }
}

/// Run one test against a linerate server. `Err` only when nothing could be measured.
pub(super) fn run(
    cfg: &ClientConfig,
    events: &mut dyn FnMut(Event),
) -> Result<ClientRun, ClientError> {
    let mut ctl = connect(cfg)?;
    let _ = ctl.set_nodelay(true);
    let _ = ctl.set_read_timeout(Some(defaults::CONTROL_TIMEOUT));
    let _ = ctl.set_write_timeout(Some(defaults::CONTROL_TIMEOUT));
    let acc = handshake(cfg, &mut ctl)?;
    let local_addr = ctl.local_addr().ok();
    let local_ip = local_addr.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let local_inventory = cfg.inventory.as_ref().and_then(|f| f(local_ip));
    let ends = kind::of(cfg.params.kind).ends();
    if let (Ends::Rdma, Some(r)) = (ends, cfg.params.rdma.as_ref()) {
        let listen = acc.rdma.clone().ok_or_else(|| {
            ClientError::Protocol("the server's answer has no RDMA listeners".into())
        })?;
        return run_rdma(
            cfg,
            ctl,
            &listen,
            r,
            acc.memory,
            (local_addr, local_inventory, acc.inventory),
            events,
        );
    }
    let wired = open_data(cfg, ends, &acc, local_ip)?;
    write_msg(&mut ctl, &Msg::Start)?;
    let plan = local_plan(
        cfg,
        udp::Format::Linerate {
            tag: udp::tag(&acc.cookie),
        },
        None,
    );
    events(Event::Started {
        server_memory_bytes: acc.memory,
    });

    // The control reader: remote intervals, then the server's results.
    let (tx, rx) = mpsc::channel::<IntervalSample>();
    let (soak_tx, soak_rx) = mpsc::channel::<SoakSample>();
    let abort = Stop::new();
    let reader_thread = control_reader(&ctl, &cfg.params, plan.start, tx, soak_tx, &abort)?;
    let mut remote_intervals = Vec::new();
    let run = run_local(cfg, &plan, local_ip, wired, &abort, events, &mut |ev| {
        drain_remote(&rx, &soak_rx, &mut remote_intervals, ev);
    });
    let _ = write_msg(&mut ctl, &Msg::Done);
    let (remote, reader_err) = reader_thread
        .join()
        .unwrap_or((None, Some("control reader failed".into())));
    drain_remote(&rx, &soak_rx, &mut remote_intervals, events);
    let _ = ctl.shutdown(Shutdown::Both);
    let mut errors: Vec<String> = Vec::new();
    if let Some(e) = &run.results.error {
        errors.push(format!("this host: {e}"));
    }
    if let Some(e) = reader_err {
        errors.push(e);
    }
    if let Some(e) = remote.as_ref().and_then(|r| r.error.as_ref()) {
        errors.push(format!("server: {e}"));
    }
    Ok(ClientRun {
        params: cfg.params.clone(),
        server: cfg.server,
        local_addr,
        local: run.results,
        remote,
        remote_intervals,
        rtt: run.rtt,
        local_inventory,
        remote_inventory: acc.inventory,
        rdma: None,
        iperf3: None,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        far_end_here: run.far_end_here,
    })
}
