use std::io::IsTerminal;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use linerate_bench::client::{iperf3_plan, Iperf3Options, Iperf3Plan};
use linerate_bench::stream::{Side, StreamEvent};
use linerate_bench::{ClientConfig, Event, WireProtocol};
use linerate_proto::{defaults, Direction, FileSpec, IntervalSample, TestKind, TestParams};
use linerate_report::bench::{header, interval_line};
use linerate_report::Style;
use linerate_results::{IntervalOut, TestResult};

use crate::cli::{BenchArgs, RdmaOpArg};
use crate::out::print;

fn kind(a: &BenchArgs) -> TestKind {
    if a.file.is_some() {
        return TestKind::FileTransfer;
    }
    if a.rdma {
        return TestKind::Rdma;
    }
    a.test.unwrap_or(match (a.udp, a.latency) {
        (false, false) => TestKind::TcpBw,
        (true, false) => TestKind::UdpBw,
        (false, true) => TestKind::TcpLat,
        (true, true) => TestKind::UdpLat,
    })
}

/// The source of `--file`: opened, a regular file, not empty. Its size and the name to give it.
pub fn source(a: &BenchArgs) -> anyhow::Result<Option<(std::fs::File, FileSpec)>> {
    let Some(path) = &a.file else {
        return Ok(None);
    };
    let f = std::fs::File::open(path)
        .with_context(|| format!("--file {}: cannot open it", path.display()))?;
    let m = f
        .metadata()
        .with_context(|| format!("--file {}", path.display()))?;
    if !m.is_file() {
        bail!("--file {}: not a regular file", path.display());
    }
    if m.len() == 0 {
        bail!(
            "--file {}: the file is empty: nothing to measure",
            path.display()
        );
    }
    let name = match &a.file_name {
        Some(n) => n.clone(),
        None => path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .with_context(|| {
                format!(
                    "--file {}: its name is not UTF-8; give one with --file-name",
                    path.display()
                )
            })?,
    };
    FileSpec::check_name(&name).map_err(|e| anyhow::anyhow!("--file-name: {e}"))?;
    let spec = FileSpec {
        name,
        size: m.len(),
        fsync: !a.no_fsync,
        remove_after: a.remove_after,
    };
    Ok(Some((f, spec)))
}

/// The test the flags ask for: the kind's defaults where a flag is not given, then the shape
/// check every client and server shares (it names the flag that is wrong).
pub fn params_with(a: &BenchArgs, file: Option<FileSpec>) -> anyhow::Result<TestParams> {
    let kind = kind(a);
    let spec = kind.spec();
    let rdma = a.rdma.then(|| linerate_proto::RdmaSpec {
        op: match a.op {
            RdmaOpArg::Write => linerate_proto::RdmaOp::Write,
            RdmaOpArg::Read => linerate_proto::RdmaOp::Read,
            RdmaOpArg::Send => linerate_proto::RdmaOp::Send,
        },
        latency: a.latency,
        provider: a.provider.clone(),
        window: a.window.unwrap_or(defaults::RDMA_WINDOW),
        qps: a.qps,
        verify: a.verify,
        sweep: a.sweep,
    });
    let mut p = TestParams {
        kind,
        direction: if a.bidir {
            Direction::Bidir
        } else if a.reverse {
            Direction::Receive
        } else {
            Direction::Send
        },
        streams: a.parallel,
        duration_ms: a.time.unwrap_or(spec.facts().default_duration_ms),
        omit_ms: a.omit,
        interval_ms: a.interval.unwrap_or(defaults::INTERVAL_MS),
        length: 0,
        // With --rdma, -w is the RDMA window (in its spec), not a socket buffer.
        window: if a.rdma { None } else { a.window },
        bitrate_bps: a.bitrate.unwrap_or(spec.facts().default_bitrate_bps),
        congestion: a.congestion.clone(),
        zerocopy: a.zerocopy,
        spin_us: Some(a.spin),
        discard: a.discard,
        no_rcvlowat: a.no_rcvlowat,
        file,
        rdma,
        soak: false,
    };
    p.length = a
        .length
        .map_or_else(|| spec.default_length(&p), |l| spec.fit_length(l));
    p.check_shape()
        .map_err(|e| anyhow::anyhow!(e.with_option()))?;
    if a.window.is_none() {
        // The default RDMA window: 16, or fewer so the registered region fits a default
        // server's per-test bound (sends and --verify keep a buffer per outstanding message).
        let bound = linerate_proto::Limits::default().memory_bound();
        while p.server_memory_bytes() > bound {
            match p.rdma.as_mut() {
                Some(r) if r.window > 1 => r.window -= 1,
                _ => break,
            }
        }
    }
    Ok(p)
}

/// One `--json-stream` line; a line that cannot be encoded is said on stderr instead.
fn emit(e: &StreamEvent<'_>) {
    match e.to_line() {
        Ok(line) => {
            let _ = print(&format!("{line}\n"));
        }
        Err(err) => eprintln!("linerate: encoding a --json-stream event: {err}"),
    }
}

fn resolve(a: &BenchArgs, host: &str) -> anyhow::Result<SocketAddr> {
    let port = a.port.unwrap_or(if a.iperf3 {
        linerate_iperf3::DEFAULT_PORT
    } else {
        linerate_proto::DEFAULT_PORT
    });
    let addrs: Vec<SocketAddr> = super::far::lookup(host, port)?
        .into_iter()
        .filter(|s| !(a.ipv4 && s.is_ipv6() || a.ipv6 && s.is_ipv4()))
        .collect();
    addrs.first().copied().with_context(|| {
        format!(
            "`{host}` has no {} address; drop {}",
            if a.ipv4 { "IPv4" } else { "IPv6" },
            if a.ipv4 { "-4" } else { "-6" }
        )
    })
}

/// `--ssh`: start the far end for this one test, and point the client at it.
fn start_far_end(
    a: &BenchArgs,
    ssh: &super::far::SshTarget,
    server: &mut SocketAddr,
    p: &TestParams,
) -> anyhow::Result<Far> {
    let needs = super::far::Needs {
        tests: 1,
        seconds: p.duration_ms as f64 / 1000.0,
        write_dir: p
            .file
            .is_some()
            .then(|| a.ssh_disk.clone().unwrap_or_else(|| ".".into())),
        serve_args: super::far::serve_limits([p]),
    };
    let started = ssh.start(server.ip(), a.port, needs)?;
    *server = started.addr;
    Ok(Far::Linerate(Box::new(started)))
}

/// `--iperf3`: the protocol's options (`-n`, `-k`, the far end's release when `--ssh` asked it).
fn iperf3_options(a: &BenchArgs, version: Option<linerate_iperf3::Version>) -> Iperf3Options {
    Iperf3Options {
        bytes: a.bytes,
        blocks: a.blockcount,
        server_version: version,
    }
}

/// An amount of data as it was most likely typed: whole GiB, MiB or KiB, else bytes.
fn amount(b: u64) -> String {
    [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")]
        .into_iter()
        .find(|(shift, _)| b >= 1 << shift && b.is_multiple_of(1 << shift))
        .map_or_else(
            || format!("{b} bytes"),
            |(shift, unit)| format!("{} {unit}", b >> shift),
        )
}

/// The first line of a test against a stock iperf3 server: its time in whole seconds, or the
/// data that ends it.
fn iperf3_header(plan: &Iperf3Plan, server: &str) -> String {
    let p = &plan.params;
    let omitted = if plan.omit_s > 0 {
        format!(" (first {} s omitted)", plan.omit_s)
    } else {
        String::new()
    };
    let end = match plan.budget {
        Some(b) => format!(
            "until {} sent or received after the omitted seconds",
            amount(b)
        ),
        None => format!("{} s", plan.time_s + plan.omit_s),
    };
    format!(
        "linerate bench --iperf3 → {server}: {}, {end}{omitted}",
        p.words()
    )
}

/// Live output: which samples are the headline for this test, and how to print them.
struct Live {
    kind: TestKind,
    direction: Direction,
    streams: u32,
    /// The far end streams no intervals (a stock iperf3 server): this host's are shown, the
    /// sender's included.
    local_only: bool,
    lines: bool,
    stream_json: bool,
    bar: Option<indicatif::ProgressBar>,
}

impl Live {
    fn show(&self, sample: &IntervalSample, remote: bool) {
        let n = self.streams;
        let (ids, label): (Vec<u32>, &str) = match (self.direction, remote) {
            // A transaction test's intervals count every stream's transactions.
            _ if self.kind.is_latency() => ((0..sample.bytes.len() as u32).collect(), ""),
            (Direction::Send, true) => ((0..n).collect(), "receiver"),
            (Direction::Send, false) if self.local_only => ((0..n).collect(), "sender"),
            (Direction::Receive, false) => ((0..n).collect(), "receiver"),
            (Direction::Bidir, false) => ((0..2 * n).collect(), "send+recv"),
            _ => return,
        };
        let secs = (sample.end_s - sample.start_s).max(1e-9);
        let per: Vec<u64> = ids
            .iter()
            .map(|i| sample.bytes.get(*i as usize).copied().unwrap_or(0))
            .collect();
        let bytes: u64 = per.iter().sum();
        let i = IntervalOut {
            start_s: sample.start_s,
            end_s: sample.end_s,
            bytes,
            gbps: bytes as f64 * 8.0 / secs / 1e9,
            streams: if self.direction == Direction::Bidir {
                Vec::new()
            } else {
                per.iter().map(|b| *b as f64 * 8.0 / secs / 1e9).collect()
            },
            retransmits: sample.retransmits,
            lost: sample.lost,
            omitted: sample.omitted,
        };
        if self.stream_json {
            let side = if remote { Side::Remote } else { Side::Local };
            emit(&StreamEvent::Interval { side, interval: &i });
        } else if let Some(b) = &self.bar {
            b.set_message(interval_line(self.kind, "", &i));
            b.set_position((sample.end_s * 1000.0) as u64);
        } else if self.lines {
            let _ = print(&format!("{}\n", interval_line(self.kind, label, &i)));
        }
    }
}

/// The client's configuration: the parameters, `-B`, the key, `-A`, the file.
fn client_config(
    a: &BenchArgs,
    server: SocketAddr,
    p: &TestParams,
    file: Option<std::sync::Arc<std::fs::File>>,
) -> anyhow::Result<ClientConfig> {
    let psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    Ok(ClientConfig {
        bind: a.bind,
        psk,
        affinity: a
            .affinity
            .as_deref()
            .map(crate::units::parse_cpus)
            .transpose()
            .map_err(|e| anyhow::anyhow!("-A: {e}"))?
            .unwrap_or_default(),
        inventory: Some(crate::iface::provider()),
        file,
        connect_timeout: Duration::from_millis(a.connect_timeout.max(1)),
        rdma_device: match &a.device {
            Some(d) => {
                check_device(d, server, a.bind)?;
                Some(d.clone())
            }
            None => None,
        },
        ..ClientConfig::new(server, p.clone())
    })
}

/// The terminal's progress bar over the test's duration (ms).
fn progress_bar(duration_ms: u64) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(duration_ms);
    b.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed:>3} [{bar:30}] {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b.enable_steady_tick(Duration::from_millis(200));
    b
}

/// The result as asked: one JSON document, the stream's last line, or the terminal view.
fn print_result(
    a: &BenchArgs,
    tests: &[TestResult; 1],
    copied: Option<linerate_facts::FarEndCopy>,
    style: Style,
) -> anyhow::Result<()> {
    if a.json {
        let mut doc = linerate_report::bench_doc(tests);
        doc.far_end_copy = copied;
        let mut s = serde_json::to_string_pretty(&doc)?;
        s.push('\n');
        print(&s)?;
    } else if a.json_stream {
        let line = StreamEvent::End { result: &tests[0] }.to_line()?;
        print(&format!("{line}\n"))?;
    } else {
        print(&linerate_report::render_bench(&tests[0], style))?;
    }
    Ok(())
}

/// The far end this run started over ssh: a `linerate serve`, or with --iperf3 a stock
/// `iperf3 -s`. Dropping it ends it.
enum Far {
    Linerate(Box<super::far::Started>),
    Iperf3(super::far::StartedIperf3),
}

impl Far {
    /// What `--ssh-copy` sent to start it, for the JSON.
    fn copied(far: Option<&Far>) -> Option<linerate_facts::FarEndCopy> {
        match far {
            Some(Far::Linerate(f)) => f.copied.clone(),
            _ => None,
        }
    }
}

/// The far end's protocol on `cfg` (a started far end's key, or iperf3's options), and what
/// the first line and the stream's start say of the test: with `--iperf3`, the test as
/// iperf3's whole seconds carry it.
fn protocol_for(
    a: &BenchArgs,
    p: &TestParams,
    far: Option<&Far>,
    cfg: &mut ClientConfig,
) -> anyhow::Result<(String, TestParams)> {
    let server = cfg.server.to_string();
    if let Some(Far::Linerate(f)) = far {
        cfg.psk = Some(f.psk.clone());
    }
    if !a.iperf3 {
        return Ok((header(p, &server), p.clone()));
    }
    let version = match far {
        Some(Far::Iperf3(f)) => f.version,
        _ => None,
    };
    let o = iperf3_options(a, version);
    let plan = iperf3_plan(p, &o).map_err(|e| anyhow::anyhow!("--iperf3: {e}"))?;
    cfg.protocol = WireProtocol::Iperf3(o);
    Ok((iperf3_header(&plan, &server), plan.params))
}

pub fn run(a: &BenchArgs, style: Style) -> anyhow::Result<u8> {
    let src = source(a)?;
    let (file, spec) = src.map_or((None, None), |(f, s)| {
        (Some(std::sync::Arc::new(f)), Some(s))
    });
    let p = params_with(a, spec)?;
    // What iperf3 cannot carry is said before anything starts.
    if a.iperf3 {
        iperf3_plan(&p, &iperf3_options(a, None)).map_err(|e| anyhow::anyhow!("--iperf3: {e}"))?;
    }
    let target = super::far::target(a.host.as_deref(), &a.ssh)?.context(if a.iperf3 {
        "give HOST, the host running `iperf3 -s`"
    } else {
        "give HOST, the host running `linerate serve`"
    })?;
    let mut server = resolve(a, &target.host)?;
    let far = match &target.ssh {
        Some(ssh) if a.iperf3 => {
            let f = ssh.start_iperf3(server.ip(), a.port, p.duration_ms as f64 / 1000.0, true)?;
            server = f.addr;
            Some(Far::Iperf3(f))
        }
        Some(ssh) => Some(start_far_end(a, ssh, &mut server, &p)?),
        None => None,
    };
    let mut cfg = client_config(a, server, &p, file)?;
    let (first_line, shown) = protocol_for(a, &p, far.as_ref(), &mut cfg)?;
    let human = !a.json && !a.json_stream;
    let bar = (human
        && std::io::stdout().is_terminal()
        && a.interval.is_none()
        && a.bytes.is_none()
        && a.blockcount.is_none())
    .then(|| progress_bar(shown.duration_ms));
    let live = Live {
        kind: p.kind,
        direction: p.direction,
        streams: p.streams,
        local_only: a.iperf3,
        lines: human && p.interval_ms > 0,
        stream_json: a.json_stream,
        bar,
    };
    if human {
        print(&format!("{first_line}\n"))?;
    }
    let mut on_event = |e: Event| match e {
        Event::Started {
            server_memory_bytes,
        } => {
            if a.json_stream {
                emit(&StreamEvent::Start {
                    server: server.to_string(),
                    params: &shown,
                    server_memory_bytes,
                });
            }
        }
        Event::Local(s) => live.show(&s, false),
        Event::Remote(s) => live.show(&s, true),
        // bench asks for no soak: none come.
        Event::LocalSoak(_) | Event::RemoteSoak(_) => {}
    };
    // What this end's RDMA device itself counts during the test.
    let watch = p
        .rdma
        .as_ref()
        .filter(|_| !a.iperf3)
        .and_then(|_| rdma_watch(server, a.bind));
    let run = linerate_bench::run_client(&cfg, &mut on_event);
    if let Some(b) = &live.bar {
        b.finish_and_clear();
    }
    let explained = match (&run, &far) {
        (Err(e), Some(_)) => super::far::connect_failed(e),
        _ => None,
    };
    let copied = Far::copied(far.as_ref());
    // The far end's work is done: it ends now, before the result is printed.
    drop(far);
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            let error = explained.unwrap_or_else(|| e.to_string());
            if a.json_stream {
                emit(&StreamEvent::Error {
                    error: error.clone(),
                });
            }
            bail!("{error}");
        }
    };
    let mut tests = [linerate_bench::assemble(&run)];
    if let (Some(w), Some(r)) = (watch, tests[0].rdma.as_mut()) {
        r.device_counters = finish_watch(w);
    }
    print_result(a, &tests, copied, style)?;
    if tests[0].error.is_some() {
        eprintln!(
            "linerate: the test did not complete: {}",
            tests[0].error.as_deref().unwrap_or("")
        );
        return Ok(super::EXIT_CANNOT_RUN);
    }
    Ok(0)
}

/// The counters of the RDMA port behind the interface the kernel routes `server` through.
fn rdma_watch(
    server: std::net::SocketAddr,
    bind: Option<std::net::IpAddr>,
) -> Option<linerate_doctor::counters::CounterWatch> {
    let netdev = linerate_doctor::host::route_interface(server, bind)?;
    let root = std::path::Path::new("/");
    let inv = linerate_inventory::probe(root).ok()?;
    linerate_doctor::counters::CounterWatch::start(root, &inv, &netdev)
}

/// `--device NAME` names an RDMA device (or, for the tcp provider, an interface) of this host
/// that carries the route to the server: said before anything starts, with what would.
fn check_device(
    name: &str,
    server: std::net::SocketAddr,
    bind: Option<std::net::IpAddr>,
) -> anyhow::Result<()> {
    let root = std::path::Path::new("/");
    let inv = linerate_inventory::probe(root)?;
    let route = linerate_doctor::host::route_interface(server, bind);
    let devices: Vec<&str> = inv.ib_devices.iter().map(|d| d.name.as_str()).collect();
    if !devices.contains(&name) {
        if inv.netdev(name).is_some() {
            // The tcp provider's domains are interfaces.
            return Ok(());
        }
        bail!(
            "--device {name}: no such RDMA device on this host ({})",
            if devices.is_empty() {
                "it has none: /sys/class/infiniband is empty".to_string()
            } else {
                format!("its devices: {}", devices.join(", "))
            }
        );
    }
    let carries: Vec<&str> = inv
        .ports
        .iter()
        .filter(|p| p.device.as_deref() == Some(name))
        .filter_map(|p| p.netdev.as_deref())
        .collect();
    match route {
        Some(r) if !carries.contains(&r.as_str()) => {
            let other = inv
                .rdma_port_of_netdev(&r)
                .and_then(|p| p.device.as_deref());
            bail!(
                "--device {name} does not carry the path to {}: the kernel routes it through {r}{}; {name} runs over {}. Test from an address of {name}'s interface (-B ADDRESS), or use {}",
                server.ip(),
                other.map_or_else(String::new, |o| format!(", which carries {o}")),
                if carries.is_empty() {
                    "no interface with an address".to_string()
                } else {
                    carries.join(", ")
                },
                other.map_or_else(|| "the device on that interface".to_string(), |o| format!("--device {o}"))
            )
        }
        _ => Ok(()),
    }
}

/// The RDMA device's counters that moved; what could not be read is said on stderr.
fn finish_watch(w: linerate_doctor::counters::CounterWatch) -> Vec<linerate_facts::CounterDelta> {
    let (moved, problems) = w.finish_rdma();
    for p in problems {
        eprintln!("linerate: {p}");
    }
    moved
}
