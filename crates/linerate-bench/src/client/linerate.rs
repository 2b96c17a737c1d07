//! linerate's control protocol, the client's side (`docs/protocol.md`): hello, authentication,
//! the request, the data connections of the kind's transport, the test with the server's
//! intervals streamed beside this end's, the results. The conversation is
//! `linerate_proto::session::ControlClient`'s; this module reads and writes it on the sockets.

use std::net::{IpAddr, Shutdown, SocketAddr};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Instant;

use linerate_engine::meter::Stop;
use linerate_engine::udp;
use linerate_facts::HostFacts;
use linerate_proto::session::{
    self, Acceptance, ClientAction, ClientEvent, ClientSetup, ControlClient, HandshakeError,
    Session,
};
use linerate_proto::soak::SoakSample;
use linerate_proto::{defaults, random_hex, IntervalSample, SideResults};

use super::{
    connect, data_socket, local_plan, run_local, udp_socket, ClientConfig, ClientError, ClientRun,
    Event,
};
use crate::kind::{self, Ends};
use crate::side::{UdpFlow, Wired};
use crate::wire::{Got, Wire};

/// The conversation, shared by the thread that reads the server and the one that says `done`:
/// each takes every action its step makes under one lock.
type Shared = Arc<Mutex<ControlClient>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, ControlClient> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This end's event, and the bytes it makes, written.
fn say(wire: &mut Wire, s: &Shared, ev: ClientEvent) -> Result<(), ClientError> {
    let mut bytes = Vec::new();
    {
        let mut c = lock(s);
        let _ = c.handle(Instant::now(), ev);
        while let Some(a) = c.poll() {
            if let ClientAction::Send(b) = a {
                bytes.extend(b);
            }
        }
    }
    wire.send(&bytes).map_err(ClientError::from)
}

/// The client side of an RDMA test, after `accepted`.
fn run_rdma(
    cfg: &ClientConfig,
    (mut wire, session): (Wire, Shared),
    listen: &linerate_proto::RdmaListen,
    r: &linerate_proto::RdmaSpec,
    memory: u64,
    (local_addr, remote_inventory): (Option<SocketAddr>, Option<HostFacts>),
    events: &mut dyn FnMut(Event),
) -> Result<ClientRun, ClientError> {
    say(&mut wire, &session, ClientEvent::DataReady)?;
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
    let local_inventory = cfg.inventory.as_ref().and_then(|f| f(local_ip));
    // The server answers once its targets have ended (bounded by its own deadline).
    let _ = say(&mut wire, &session, ClientEvent::LocalDone);
    let (remote, reader_err) = read_results(&mut wire, &session, 0, &mut |_| {}, &Stop::new());
    let _ = wire.sock().shutdown(Shutdown::Both);
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

/// A server whose first bytes are not a linerate frame's, named: a linerate frame starts with
/// 0 (its length is below 16 MiB); an iperf3 server answers any 37 bytes with a state byte
/// (PARAM_EXCHANGE, or ACCESS_DENIED when busy); other servers say what they are
/// (`HTTP/1.1 400`, `SSH-2.0-…`).
fn wrong_peer(server: SocketAddr, first: &[u8]) -> ClientError {
    use linerate_iperf3::State;
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
    match first.first() {
        Some(&b) if b == State::ParamExchange.to_byte() => iperf3("PARAM_EXCHANGE"),
        Some(&b) if b == State::AccessDenied.to_byte() => {
            iperf3("ACCESS_DENIED: it is running another test")
        }
        Some(&b) if b == linerate_iperf3::ServerError::BYTE => iperf3("SERVER_ERROR"),
        _ => ClientError::WrongPeer(format!(
            "the server at {server} does not speak linerate's protocol: it is {}; check HOST and -p (`linerate serve` listens on {} by default)",
            super::stranger(first),
            linerate_proto::DEFAULT_PORT
        )),
    }
}

/// Why there is no test, in words that say what to do.
fn handshake_error(cfg: &ClientConfig, e: HandshakeError) -> ClientError {
    let here = env!("CARGO_PKG_VERSION");
    match e {
        HandshakeError::Silent => ClientError::WrongPeer(format!(
            "no answer from the server at {} within {} s of linerate's hello: it does not speak linerate's protocol (a server waiting for its own client's first words, or a silent listener); check HOST and -p (`linerate serve` listens on {} by default)",
            cfg.server,
            defaults::CONTROL_TIMEOUT.as_secs(),
            linerate_proto::DEFAULT_PORT
        )),
        HandshakeError::NotLinerate(first) => wrong_peer(cfg.server, &first),
        // A server over its `--max-pending` closes new connections before any answer.
        HandshakeError::ClosedBeforeAnswer => ClientError::Protocol(format!(
            "the server at {} closed the connection before answering: it is busy with other connections (serve --max-pending), or it is not a linerate server; try again shortly",
            cfg.server
        )),
        HandshakeError::Wire(e) => ClientError::Protocol(e),
        HandshakeError::OtherVersion { protocol, version } => ClientError::Protocol(format!(
            "the server at {} runs linerate {version} (protocol {protocol}), this host linerate {here} (protocol {}): install the same linerate version on both hosts",
            cfg.server,
            linerate_proto::PROTOCOL_VERSION
        )),
        HandshakeError::Server(message) => ClientError::Server(message),
        HandshakeError::Unexpected(other) => ClientError::Protocol(format!("unexpected {other:?}")),
        HandshakeError::NoAuth => ClientError::ServerNoAuth,
        HandshakeError::NeedsKey => ClientError::NeedsKey(cfg.server),
        HandshakeError::BadProof => ClientError::ServerProof,
        HandshakeError::AuthRefused(message) => ClientError::Server(format!(
            "{message}; --psk-file must hold the same key as the one given to the server's `linerate serve --psk-file`"
        )),
        // A server drops a request it cannot read: one older than this client does so with a
        // kind of test (or a field) it does not know.
        HandshakeError::ClosedOnRequest { server_version } if server_version != here => ClientError::Protocol(format!(
            "the server at {} closed the connection on the request without an answer: a server of another version (linerate {server_version} there, {here} here) does so with a kind of test it does not know ({}); use the same version on both hosts, or see its log",
            cfg.server,
            cfg.params.kind
        )),
        HandshakeError::ClosedOnRequest { .. } => ClientError::Protocol(format!(
            "the server at {} closed the connection on the request without an answer: it stopped, or dropped the request (see its log)",
            cfg.server
        )),
        HandshakeError::Refused { kind, reason } => ClientError::Refused { kind, reason },
    }
}

/// The conversation up to the server's `accepted`.
fn handshake(
    cfg: &ClientConfig,
    wire: &mut Wire,
    session: &mut ControlClient,
) -> Result<Acceptance, ClientError> {
    loop {
        while let Some(a) = session.poll() {
            match a {
                ClientAction::Send(bytes) => wire.send(&bytes)?,
                ClientAction::Accepted(acc) => return Ok(*acc),
                ClientAction::Failed(e) => return Err(handshake_error(cfg, e)),
                _ => {}
            }
        }
        if !wire.pump(session, None) {
            return Err(ClientError::Protocol(format!(
                "the conversation stopped {}",
                session.phase().describe()
            )));
        }
    }
}

/// Open the data connections of the kind's transport, as `accepted` says.
fn open_data(
    cfg: &ClientConfig,
    ends: Ends,
    acc: &Acceptance,
    local: IpAddr,
) -> Result<Wired, ClientError> {
    let p = &cfg.params;
    let n = p.connections();
    match ends {
        Ends::Tcp { run, nodelay } => {
            let mut conns = Vec::new();
            for i in 0..n {
                let mut s = Wire::new(data_socket(cfg, cfg.server, nodelay)?);
                s.send(&session::data_hello(&acc.cookie, i))?;
                conns.push(s.into_sock());
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

/// Read the server until its results come, or until it is said why they will not: its
/// intervals and soak samples go to `forward`; a server that misbehaves or goes away sets
/// `abort`. Results are kept within what `connections` streams can produce.
fn read_results(
    wire: &mut Wire,
    session: &Shared,
    connections: usize,
    forward: &mut dyn FnMut(ClientAction),
    abort: &Stop,
) -> ReaderEnd {
    loop {
        let (limit, deadline) = {
            let mut c = lock(session);
            wire.feed(&mut *c);
            while let Some(a) = c.poll() {
                match a {
                    ClientAction::Finished(Ok(r)) => {
                        return (Some(crate::peer::sanitize(*r, connections)), None)
                    }
                    ClientAction::Finished(Err(e)) => return (None, Some(e.to_string())),
                    ClientAction::Abort => abort.set(),
                    a => forward(a),
                }
            }
            (c.read_limit(), c.deadline())
        };
        if limit == 0 {
            return (None, Some("control reader failed".into()));
        }
        let got = wire.read(limit, deadline);
        let mut c = lock(session);
        match got {
            Got::Bytes => {}
            Got::Timeout => c.timeout(Instant::now()),
            Got::Gone(why) => c.gone(Instant::now(), why),
        }
    }
}

/// Read the control connection while the test runs, on a thread of its own: the server's
/// intervals go to `tx`, its soak samples to `soak_tx`, its results end the thread.
fn control_reader(
    mut wire: Wire,
    session: &Shared,
    connections: usize,
    (tx, soak_tx): (mpsc::Sender<IntervalSample>, mpsc::Sender<SoakSample>),
    abort: &Stop,
) -> thread::JoinHandle<ReaderEnd> {
    let session = Arc::clone(session);
    let abort = abort.clone();
    thread::spawn(move || {
        let mut forward = |a: ClientAction| match a {
            ClientAction::Remote(sample) => {
                let _ = tx.send(sample);
            }
            ClientAction::RemoteSoak(sample) => {
                let _ = soak_tx.send(*sample);
            }
            _ => {}
        };
        read_results(&mut wire, &session, connections, &mut forward, &abort)
    })
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
    let ctl = connect(cfg)?;
    let _ = ctl.set_nodelay(true);
    let _ = ctl.set_write_timeout(Some(defaults::CONTROL_TIMEOUT));
    let mut wire = Wire::new(ctl);
    let mut session = ControlClient::new(
        Instant::now(),
        ClientSetup {
            params: cfg.params.clone(),
            psk: cfg.psk.clone(),
            nonce: random_hex(16),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    );
    let acc = handshake(cfg, &mut wire, &mut session)?;
    let session: Shared = Arc::new(Mutex::new(session));
    let local_addr = wire.sock().local_addr().ok();
    let local_ip = local_addr.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    // This host's inventory is read once the test ran: it takes seconds on a slow host,
    // longer than the server waits for the data connections, the start and the queue pairs.
    let remote_inventory = acc.inventory.clone().map(|b| *b);
    let ends = kind::of(cfg.params.kind).ends();
    if let (Ends::Rdma, Some(r)) = (ends, cfg.params.rdma.as_ref()) {
        let listen = acc.rdma.clone().ok_or_else(|| {
            ClientError::Protocol("the server's answer has no RDMA listeners".into())
        })?;
        return run_rdma(
            cfg,
            (wire, session),
            &listen,
            r,
            acc.memory_bytes,
            (local_addr, remote_inventory),
            events,
        );
    }
    // This host's UDP receive counters from before the server can send until its results
    // came (it sends them once its streams stopped), the sockets held open until then: the
    // datagrams that reach this host after its receivers stopped are dropped here, as a full
    // buffer, and the test counts them lost.
    let udp = crate::udp_receive::watch(cfg.params.kind);
    let wired = open_data(cfg, ends, &acc, local_ip)?;
    let held = wired.udp_sockets();
    say(&mut wire, &session, ClientEvent::DataReady)?;
    let plan = local_plan(
        cfg,
        udp::Format::Linerate {
            tag: udp::tag(&acc.cookie),
        },
        None,
    );
    events(Event::Started {
        server_memory_bytes: acc.memory_bytes,
    });

    // The control reader: remote intervals, then the server's results.
    let (tx, rx) = mpsc::channel::<IntervalSample>();
    let (soak_tx, soak_rx) = mpsc::channel::<SoakSample>();
    let abort = Stop::new();
    let mut writer = Wire::new(
        wire.sock()
            .try_clone()
            .map_err(|e| ClientError::Protocol(e.to_string()))?,
    );
    let connections = cfg.params.connections() as usize;
    let reader_thread = control_reader(wire, &session, connections, (tx, soak_tx), &abort);
    let mut remote_intervals = Vec::new();
    let mut run = run_local(cfg, &plan, local_ip, wired, &abort, events, &mut |ev| {
        drain_remote(&rx, &soak_rx, &mut remote_intervals, ev);
    });
    let _ = say(&mut writer, &session, ClientEvent::LocalDone);
    let (remote, reader_err) = reader_thread
        .join()
        .unwrap_or((None, Some("control reader failed".into())));
    run.results.udp_receive = udp.and_then(crate::udp_receive::UdpWatch::finish);
    drop(held);
    drain_remote(&rx, &soak_rx, &mut remote_intervals, events);
    let _ = writer.sock().shutdown(Shutdown::Both);
    let local_inventory = cfg.inventory.as_ref().and_then(|f| f(local_ip));
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
        remote_inventory,
        rdma: None,
        iperf3: None,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        far_end_here: run.far_end_here,
    })
}
