//! The counters a soak or a watch reads every interval, under a root directory (`/` or a
//! fixture tree): for each watched port its IB `counters/*` and `hw_counters/*`, its netdev's
//! statistics and carrier counts, the driver statistics through SIOCETHTOOL (live root only),
//! and the host's counters of `/proc/net/snmp`. Which counter is what: the counter table
//! (`linerate_facts::CounterDef`).
//!
//! What it costs: on the live root the statistics and carrier counts of every netdev come from
//! one rtnetlink dump a sample (`linkdump`: the same `dev_get_stats` figures as their files,
//! for every port at once); every other file is opened once and read again with `pread`
//! (`fs::OpenDir`), its directory listed again every [`RELIST_EVERY`] samples; the link files a
//! watch reads anyway (`rate`, `speed`) are taken from its [`LinkWatch`], not read twice. A
//! fixture root has no rtnetlink: the same counters come from its files, in the same order, so
//! the samples of the two paths are the same (`tests/soak_counters.rs` compares them on a veth
//! pair). Raw values, never reset; a file that is bad or vanished becomes a named entry in the
//! sample's `problems`, never a failure.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use linerate_facts::{CounterClass, CounterDef, CounterRead, CounterSource};
use linerate_facts::{
    Inventory, LinkLayer, NetdevKind, PhyGauges, Port, PortKind, PHY_SAMPLE_PERIOD_S,
};
use linerate_model::IbRate;
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};

use crate::ethtool::Ethtool;
use crate::fs::{CounterFile, OpenDir, Root};
use crate::linkdump::{LinkCounters, LinkDump};
use crate::links::LinkWatch;
use crate::phy;

/// One port a soak watches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SoakTarget {
    /// IB device (`mlx4_0`), else the interface name.
    pub device: String,
    /// IB port number, else empty.
    pub port: String,
    pub netdev: Option<String>,
    /// The port has an RDMA device (`/sys/class/infiniband/<device>/ports/<port>`).
    pub rdma: bool,
    /// The port's link layer is InfiniBand (else Ethernet: plain, RoCE, or a virtual netdev).
    pub infiniband: bool,
    /// The PCI function whose hwmon temperature sensors are the port's NIC's, when the
    /// inventory found any.
    pub hwmon_pci: Option<String>,
    /// The port's module reported its diagnostics to the inventory: they are sampled too.
    pub module_diagnostics: bool,
}

/// The ports a soak watches: every physical port of the inventory (InfiniBand, RoCE,
/// Ethernet), and the netdevs named in `path_netdevs` (the interfaces carrying the soak's
/// traffic, which may be virtual, a veth in tests) when the inventory has them.
pub fn soak_targets(inv: &Inventory, path_netdevs: &[String]) -> Vec<SoakTarget> {
    targets_where(inv, |p| {
        let on_path = p.netdev.as_ref().is_some_and(|n| path_netdevs.contains(n));
        let physical = matches!(
            p.kind,
            PortKind::Infiniband | PortKind::Roce | PortKind::Ethernet
        );
        physical || on_path
    })
}

/// The target of each port of the inventory that `keep` keeps (`linerate watch`: every port
/// but loopback), one per RDMA port or netdev.
pub fn targets_where(inv: &Inventory, keep: impl Fn(&Port) -> bool) -> Vec<SoakTarget> {
    let mut out: Vec<SoakTarget> = Vec::new();
    for p in &inv.ports {
        if !keep(p) {
            continue;
        }
        let hwmon_pci = p
            .pci
            .clone()
            .filter(|a| inv.pci(a).is_some_and(|f| !f.hwmon.is_empty()));
        let module_diagnostics = p.netdev.as_deref().is_some_and(|n| {
            inv.phy(n)
                .and_then(|ph| ph.module.as_ref())
                .is_some_and(|m| m.diagnostics.is_some())
        });
        let t = match (&p.device, p.port) {
            (Some(dev), Some(n)) => SoakTarget {
                device: dev.clone(),
                port: n.to_string(),
                netdev: p.netdev.clone(),
                rdma: true,
                infiniband: p.link_layer == LinkLayer::Infiniband,
                hwmon_pci,
                module_diagnostics,
            },
            _ => {
                let Some(nd) = p.netdev.clone() else { continue };
                SoakTarget {
                    device: nd.clone(),
                    port: String::new(),
                    netdev: Some(nd),
                    rdma: false,
                    infiniband: inv
                        .netdev(&p.name)
                        .is_some_and(|n| n.kind == NetdevKind::Ipoib),
                    hwmon_pci,
                    module_diagnostics,
                }
            }
        };
        // An RDMA port with several netdevs is one port for its counters: keep the first.
        if !out.iter().any(|o| o.device == t.device && o.port == t.port) {
            out.push(t);
        }
    }
    out
}

/// Samples between two listings of a counter directory (and between two tries to open one
/// that was missing): a listing costs as much as several reads, and the files of a port change
/// only with its driver. A file that vanished has its directory opened and listed again at the
/// next sample.
const RELIST_EVERY: u32 = 10;

/// A counter directory, opened once, with its names as last listed and each one's row of the
/// counter table.
#[derive(Debug)]
struct Listed {
    dir: OpenDir,
    source: CounterSource,
    names: Vec<(String, &'static CounterDef)>,
    age: u32,
}

impl Listed {
    fn open(path: &Path, source: CounterSource) -> Option<Self> {
        let mut l = Self {
            dir: OpenDir::open(path)?,
            source,
            names: Vec::new(),
            age: 0,
        };
        l.list();
        Some(l)
    }

    fn list(&mut self) {
        let source = self.source;
        self.names = self
            .dir
            .names()
            .into_iter()
            .map(|n| {
                let def = CounterDef::of(source, &n);
                (n, def)
            })
            .collect();
        self.age = 0;
    }

    /// Starts a sample: lists the directory again when due.
    fn tick(&mut self) {
        self.age += 1;
        if self.age >= RELIST_EVERY {
            self.list();
        }
        self.dir.begin();
    }
}

/// The directories of one port, opened once.
#[derive(Debug, Default)]
struct PortDirs {
    /// `sys/class/infiniband/<device>/ports/<port>` (its `rate`).
    ib: Option<OpenDir>,
    counters: Option<Listed>,
    hw_counters: Option<Listed>,
    /// `sys/class/net/<netdev>` (its `speed` and carrier counts).
    net: Option<OpenDir>,
    statistics: Option<Listed>,
    /// The carrier files the netdev had when its directory was listed.
    carrier: Vec<&'static str>,
    /// The netdev's index (`ifindex`), read once on the live root: its entry of the link dump
    /// must be the same interface.
    ifindex: Option<i32>,
    /// Opened (or tried) at this sample; opened again when due or when a file vanished.
    opened_at: Option<u64>,
    stale: bool,
}

/// What the link dump read of each watched netdev this sample.
type Dumped = HashMap<String, LinkCounters>;

/// What every port of one sample reads with: the sample's number, the link dump, the link
/// files read this interval, and the ports read so far.
#[derive(Clone, Copy)]
struct Round<'a> {
    n: u64,
    dumped: &'a Dumped,
    links: Option<&'a LinkWatch>,
    done: &'a [PortSample],
}

/// Reads the samples of one end: built once, asked every interval.
#[derive(Debug)]
pub struct CounterSampler {
    root: PathBuf,
    targets: Vec<SoakTarget>,
    dirs: Vec<PortDirs>,
    /// The rtnetlink dump of every link, on a live root only.
    dump: Option<LinkDump>,
    /// The ioctl socket, on a live root only.
    ethtool: Option<Ethtool>,
    /// Said once why the driver statistics are not read (a fixture root, no socket).
    ethtool_note: Option<String>,
    /// Interfaces whose driver statistics failed, named once each.
    ethtool_failed: Vec<String>,
    /// The counters each target had in the previous sample: one gone since is named.
    seen: Vec<Vec<(CounterSource, String)>>,
    /// `proc/net`, for `snmp`.
    proc_net: Option<OpenDir>,
    samples: u64,
    /// Where the modules' diagnostics are asked: the live kernel, or a tree's captures.
    phy: PhySource,
    /// When the PHY gauges were last read (`t_s`), every [`PHY_SAMPLE_PERIOD_S`].
    phy_read_at: Option<f64>,
    /// Modules whose diagnostics failed, named once each.
    phy_failed: Vec<String>,
    /// For each target, an earlier target with the same netdev (whose statistics and carrier
    /// counts it takes from that one's in the same sample).
    shares: Vec<Option<usize>>,
    /// This sample: where each target's netdev counters are in its counters, when it read them.
    netdev_span: Vec<Option<(usize, usize)>>,
    /// The watched netdevs, whose entries of the link dump are kept.
    dump_names: HashSet<String>,
    /// The carrier counts' attributes in the link dump.
    carrier_attrs: Vec<u16>,
}

/// Where a sampler asks for the modules' diagnostics.
#[derive(Debug)]
enum PhySource {
    Live(Box<phy::Live>),
    Captured(phy::Captured),
}

impl PhySource {
    fn replies(&mut self) -> &mut dyn phy::Replies {
        match self {
            Self::Live(l) => l.as_mut(),
            Self::Captured(c) => c,
        }
    }
}

impl CounterSampler {
    /// `root` is `/` on a live system: only then are the driver statistics read (the ioctl
    /// asks the kernel, which knows nothing of a fixture tree) and the netdevs' statistics
    /// taken from rtnetlink.
    pub fn new(root: &Path, targets: Vec<SoakTarget>) -> Self {
        let live = std::fs::canonicalize(root).is_ok_and(|p| p == Path::new("/"));
        let (ethtool, ethtool_note) = if live {
            match Ethtool::new() {
                Ok(e) => (Some(e), None),
                Err(e) => (None, Some(format!("ethtool statistics not read: {e}"))),
            }
        } else {
            let note = format!(
                "ethtool statistics not read: --root {} is not the live system (the ioctl reads the kernel, not a tree)",
                root.display()
            );
            (None, Some(note))
        };
        // Without rtnetlink (a sandbox that refuses the socket) the files are read.
        let dump = if live { LinkDump::open().ok() } else { None };
        let dirs = targets.iter().map(|_| PortDirs::default()).collect();
        let mut first: HashMap<&str, usize> = HashMap::new();
        let shares = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let nd = t.netdev.as_deref()?;
                let j = *first.entry(nd).or_insert(i);
                (j != i).then_some(j)
            })
            .collect();
        let dump_names = targets.iter().filter_map(|t| t.netdev.clone()).collect();
        Self {
            root: root.to_path_buf(),
            targets,
            dirs,
            dump,
            ethtool,
            ethtool_note,
            ethtool_failed: Vec::new(),
            seen: Vec::new(),
            proc_net: OpenDir::open(&root.join("proc/net")),
            samples: 0,
            // The sockets are opened only when a target has a module to ask.
            phy: PhySource::Captured(phy::Captured::new(root)),
            phy_read_at: None,
            phy_failed: Vec::new(),
            shares,
            netdev_span: Vec::new(),
            dump_names,
            carrier_attrs: CounterDef::exact_rows(CounterSource::Carrier)
                .filter_map(|d| match d.read {
                    CounterRead::LinkAttr(a) => Some(a),
                    _ => None,
                })
                .collect(),
        }
        .live_phy(live)
    }

    fn live_phy(mut self, live: bool) -> Self {
        if live && self.targets.iter().any(|t| t.module_diagnostics) {
            self.phy = PhySource::Live(Box::default());
        }
        self
    }

    /// The NIC's temperatures and the module's diagnostics of target `i`, read now.
    fn phy_gauges(
        &mut self,
        r: &mut Root,
        i: usize,
        problems: &mut Vec<String>,
    ) -> Option<PhyGauges> {
        let t = &self.targets[i];
        let sensors = match &t.hwmon_pci {
            Some(a) => crate::hwmon::read(r, &self.root.join("sys/bus/pci/devices").join(a), a),
            None => Vec::new(),
        };
        let mut module = None;
        if let (true, Some(nd)) = (t.module_diagnostics, t.netdev.as_deref()) {
            match phy::module_diagnostics(self.phy.replies(), nd) {
                Ok(d) => module = d,
                Err(e) => {
                    if !self.phy_failed.iter().any(|f| f == nd) {
                        self.phy_failed.push(nd.to_string());
                        problems.push(format!("{nd}: module diagnostics not read: {e}"));
                    }
                }
            }
        }
        (!sensors.is_empty() || module.is_some()).then_some(PhyGauges { sensors, module })
    }

    /// Reads every netdev counter from its file, as on a fixture root, even on the live one:
    /// the other way of reading the same counters, for comparing the two.
    #[must_use]
    pub fn without_netlink(mut self) -> Self {
        self.dump = None;
        self
    }

    /// Whether the netdevs' statistics come from rtnetlink.
    pub fn reads_netlink(&self) -> bool {
        self.dump.is_some()
    }

    pub fn targets(&self) -> &[SoakTarget] {
        &self.targets
    }

    /// Read everything once. Bytes are left at 0: the caller knows its engines' traffic.
    pub fn sample(&mut self, end: End, seq: u64, t_s: f64) -> SoakSample {
        self.sample_with(end, seq, t_s, None)
    }

    /// [`CounterSampler::sample`], with the link files `links` read this interval (a watch
    /// reads them anyway to know when the inventory is stale): the ports' `rate` and `speed`
    /// are taken from there rather than read again.
    pub fn sample_with(
        &mut self,
        end: End,
        seq: u64,
        t_s: f64,
        links: Option<&LinkWatch>,
    ) -> SoakSample {
        let mut r = Root::new(&self.root);
        let mut s = SoakSample::new(end, seq, t_s);
        if let Some(note) = self.ethtool_note.take() {
            s.problems.push(note);
        }
        let dumped = self.dump_links();
        let n = self.samples;
        self.samples += 1;
        let phy_due = self
            .phy_read_at
            .is_none_or(|at| t_s - at >= PHY_SAMPLE_PERIOD_S || t_s < at);
        if phy_due {
            self.phy_read_at = Some(t_s);
        }
        self.netdev_span.clear();
        self.netdev_span.resize(self.targets.len(), None);
        for i in 0..self.targets.len() {
            let round = Round {
                n,
                dumped: &dumped,
                links,
                done: &s.ports,
            };
            let mut port = self.port(&mut r, i, &round, &mut s.problems);
            if phy_due {
                port.phy = self.phy_gauges(&mut r, i, &mut s.problems);
            }
            s.ports.push(port);
        }
        let ports = std::mem::take(&mut s.ports);
        self.note_vanished(&ports, &mut s.problems);
        s.ports = ports;
        self.host_counters(&mut r, &mut s);
        s.problems.extend(
            r.problems
                .into_iter()
                .map(|p| format!("{}: {}", p.path, p.detail)),
        );
        s
    }

    /// The watched netdevs' entries of one link dump; empty without rtnetlink or when the
    /// dump fails (the files are read then).
    fn dump_links(&mut self) -> Dumped {
        let Some(dump) = self.dump.as_mut() else {
            return Dumped::new();
        };
        if self.dump_names.is_empty() {
            return Dumped::new();
        }
        let names = &self.dump_names;
        dump.read(&|n| names.contains(n), &self.carrier_attrs)
            .unwrap_or_default()
    }

    /// Opens the directories of target `i` (again) when due.
    fn open_dirs(&mut self, i: usize, n: u64) {
        let t = &self.targets[i];
        let d = &mut self.dirs[i];
        let due = match d.opened_at {
            None => true,
            Some(at) => d.stale || n.saturating_sub(at) >= u64::from(RELIST_EVERY),
        };
        let missing = (t.rdma && (d.ib.is_none() || d.counters.is_none()))
            || (t.netdev.is_some() && d.net.is_none());
        // Open what is missing, at most every RELIST_EVERY samples; everything after a file
        // vanished.
        if !(d.opened_at.is_none() || d.stale || (due && missing)) {
            return;
        }
        let root = &self.root;
        if t.rdma {
            let dir = root.join(format!(
                "sys/class/infiniband/{}/ports/{}",
                t.device, t.port
            ));
            d.ib = OpenDir::open(&dir);
            d.counters = d
                .ib
                .as_ref()
                .and_then(|p| Listed::open(&p.path().join("counters"), CounterSource::IbCounters));
            d.hw_counters = d.ib.as_ref().and_then(|p| {
                Listed::open(&p.path().join("hw_counters"), CounterSource::IbHwCounters)
            });
        }
        if let Some(nd) = &t.netdev {
            let dir = root.join(format!("sys/class/net/{nd}"));
            d.net = OpenDir::open(&dir);
            d.statistics = d.net.as_ref().and_then(|p| {
                Listed::open(
                    &p.path().join("statistics"),
                    CounterSource::NetdevStatistics,
                )
            });
            let names = d.net.as_mut().map(OpenDir::names).unwrap_or_default();
            d.carrier = CounterDef::exact_rows(CounterSource::Carrier)
                .filter_map(|c| c.name.exact())
                .filter(|c| names.iter().any(|n| n == c))
                .collect();
            if self.dump.is_some() {
                d.ifindex = d
                    .net
                    .as_mut()
                    .and_then(|n| n.read_raw("ifindex").ok().flatten())
                    .and_then(|v| v.parse().ok());
            }
        }
        d.opened_at = Some(n);
        d.stale = false;
    }

    /// One port's counters: sample `n` of this sampler.
    fn port(
        &mut self,
        r: &mut Root,
        i: usize,
        round: &Round<'_>,
        problems: &mut Vec<String>,
    ) -> PortSample {
        let Round {
            n,
            dumped,
            links,
            done,
        } = *round;
        self.open_dirs(i, n);
        let t = self.targets[i].clone();
        let d = &mut self.dirs[i];
        let mut counters = Vec::new();
        let mut kind = SoakPortKind::Ethernet {
            speed_mbps: None,
            roce: t.rdma && !t.infiniband,
        };
        if t.rdma {
            if let Some(ib) = d.ib.as_mut() {
                ib.begin();
                if t.infiniband {
                    let raw = link_file(links, ib, "rate");
                    // The file's path is made only to name a bad value.
                    let parsed = raw
                        .as_ref()
                        .ok()
                        .and_then(|v| v.as_deref())
                        .and_then(IbRate::parse);
                    let rate = match parsed {
                        Some(rate) => Some(rate),
                        None => r.opt_parse_raw(
                            raw,
                            &ib.path().join("rate"),
                            &t.device,
                            "`40 Gb/sec (4X QDR)`",
                            IbRate::parse,
                        ),
                    };
                    kind = SoakPortKind::Infiniband {
                        speed: rate.map(|r| r.speed.name().to_string()),
                        signalling_gbps: rate.map(|r| r.signalling_gbps()),
                    };
                }
                for l in [d.counters.as_mut(), d.hw_counters.as_mut()]
                    .into_iter()
                    .flatten()
                {
                    d.stale |= read_listed(r, l, None, &mut counters);
                }
            } else if t.infiniband {
                kind = SoakPortKind::Infiniband {
                    speed: None,
                    signalling_gbps: None,
                };
            }
        }
        if let Some(nd) = &t.netdev {
            if let Some(net) = d.net.as_mut() {
                net.begin();
                if let SoakPortKind::Ethernet { speed_mbps, .. } = &mut kind {
                    *speed_mbps = link_file(links, net, "speed")
                        .ok()
                        .flatten()
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|&s| s > 0 && s < u64::from(u32::MAX));
                }
                // A netdev an earlier port of this sample read already (an RDMA device whose
                // ports share one interface): its statistics and carrier counts as read then,
                // not read again.
                let earlier = self.shares[i].and_then(|j| Some((j, self.netdev_span[j]?)));
                let start = counters.len();
                if let Some((j, (a, b))) = earlier {
                    counters.extend_from_slice(&done[j].counters[a..b]);
                } else {
                    netdev_files(r, d, nd, n, dumped, &mut counters);
                    self.netdev_span[i] = Some((start, counters.len()));
                }
            }
            if !t.infiniband {
                self.ethtool_counters(nd, problems, &mut counters);
            }
        }
        PortSample {
            phy: None,
            device: t.device,
            port: t.port,
            netdev: t.netdev,
            kind,
            counters,
        }
    }

    /// Name the counters a port had in the previous sample and lacks now (a file removed, a
    /// driver reloaded): the judge sees a gap, the reader sees why.
    fn note_vanished(&mut self, ports: &[PortSample], problems: &mut Vec<String>) {
        // A port's counters are the same names in the same order sample after sample: only a
        // port whose list changed is looked at, and its list kept again (no copy per sample).
        self.seen.resize_with(ports.len(), Vec::new);
        for (before, p) in self.seen.iter_mut().zip(ports) {
            let same = before.len() == p.counters.len()
                && before
                    .iter()
                    .zip(&p.counters)
                    .all(|((s, n), (s2, n2, _))| s == s2 && n == n2);
            if same {
                continue;
            }
            let at = if p.port.is_empty() {
                p.device.clone()
            } else {
                format!("{}/{}", p.device, p.port)
            };
            for (src, name) in before
                .iter()
                .filter(|(s, n)| !p.counters.iter().any(|(s2, n2, _)| s2 == s && n2 == n))
            {
                problems.push(format!(
                    "{at}: counter {name} ({}) vanished since the previous sample",
                    src.short()
                ));
            }
            *before = p.counters.iter().map(|(s, n, _)| (*s, n.clone())).collect();
        }
    }

    fn ethtool_counters(
        &mut self,
        nd: &str,
        problems: &mut Vec<String>,
        out: &mut Vec<(CounterSource, String, u64)>,
    ) {
        let Some(e) = self.ethtool.as_mut() else {
            return;
        };
        match e.stats(nd) {
            Ok(stats) => out.extend(
                stats
                    .into_iter()
                    .map(|(n, v)| (CounterSource::Ethtool, n, v)),
            ),
            Err(err) => {
                if !self.ethtool_failed.iter().any(|f| f == nd) {
                    self.ethtool_failed.push(nd.to_string());
                    problems.push(format!("ethtool statistics: {err}"));
                }
            }
        }
    }

    /// The host-wide counters of the table (`/proc/net/snmp`'s columns, and
    /// `/proc/net/netstat`'s for the `…Ext` groups), into `s`. Without the `Tcp:` lines
    /// (their `RetransSegs`) none is read, and the file is named. `netstat` is optional: a
    /// tree without it (a fixture) has none of its counters, and no problem is said; one that
    /// cannot be read is named.
    fn host_counters(&mut self, r: &mut Root, s: &mut SoakSample) {
        let p = self.root.join("proc/net/snmp");
        let text = match self.proc_net.as_mut().map(|d| d.read_raw("snmp")) {
            Some(Ok(Some(t))) => t,
            Some(Err(e)) => {
                r.problem(&p, "host", linerate_facts::ProblemKind::Unreadable, e);
                return;
            }
            _ => return,
        };
        let rows: Vec<(&'static str, &'static str, &'static str)> =
            CounterDef::exact_rows(CounterSource::Snmp)
                .filter_map(|d| match (d.name.exact(), d.read) {
                    (Some(n), CounterRead::Snmp { group, column }) => Some((n, group, column)),
                    _ => None,
                })
                .collect();
        let netstat = if rows
            .iter()
            .any(|(_, g, _)| CounterRead::snmp_file(g) == "netstat")
        {
            match self.proc_net.as_mut().map(|d| d.read_raw("netstat")) {
                Some(Ok(Some(t))) => t,
                Some(Err(e)) => {
                    let p = self.root.join("proc/net/netstat");
                    r.problem(&p, "host", linerate_facts::ProblemKind::Unreadable, e);
                    String::new()
                }
                _ => String::new(),
            }
        } else {
            String::new()
        };
        let values: Vec<Option<u64>> = rows
            .iter()
            .map(|(_, group, column)| {
                let text = match CounterRead::snmp_file(group) {
                    "netstat" => &netstat,
                    _ => &text,
                };
                parse_snmp(text, group, column)
            })
            .collect();
        let basis = rows
            .iter()
            .zip(&values)
            .find(|((n, ..), _)| *n == "TcpRetransSegs")
            .and_then(|(_, v)| *v);
        if basis.is_none() {
            r.bad_value(
                &p,
                "host",
                "(no usable Tcp: lines)",
                "a `Tcp:` header line with `RetransSegs` and a `Tcp:` value line",
            );
            return;
        }
        for ((name, ..), v) in rows.iter().zip(values) {
            if let Some(v) = v {
                s.set_host(CounterSource::Snmp, name, v);
            }
        }
    }
}

/// Builds a soak's counter sampler for the local address a test uses: called once per soak;
/// the sampler it returns is called at the start and after every interval with the sample's
/// sequence number and seconds since the start (bytes are filled in by the caller). `serve`
/// hands one to the server (`linerate_bench::ServerConfig::soak`), `soak` to the client.
pub type SoakSamplerFn =
    Arc<dyn Fn(IpAddr) -> Box<dyn FnMut(u64, f64) -> SoakSample + Send> + Send + Sync>;

/// CPU time spent sampling counters on this host, and how many samples: the cost of a soak's
/// sampling, separate from the engines'.
#[derive(Debug, Default)]
pub struct SamplingCost {
    cpu_ns: AtomicU64,
    samples: AtomicU64,
}

impl SamplingCost {
    /// CPU seconds spent sampling, and the samples taken.
    pub fn totals(&self) -> (f64, u64) {
        (
            self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9,
            self.samples.load(Ordering::Relaxed),
        )
    }
}

/// A sampler factory for `end` reading under `root`: the ports of the inventory there, plus
/// the interface holding the test's local address when it is in that inventory (a veth on a
/// live root). Every call's thread CPU time goes into `cost`.
pub fn sampler_fn(root: PathBuf, end: End, cost: Arc<SamplingCost>) -> SoakSamplerFn {
    Arc::new(move |ip: IpAddr| {
        let mut sampler = build_sampler(&root, Some(ip));
        let cost = Arc::clone(&cost);
        Box::new(move |seq, t_s| {
            let (u0, s0) = linerate_engine::sys::thread_cpu();
            let s = sampler(end, seq, t_s);
            let (u1, s1) = linerate_engine::sys::thread_cpu();
            let ns = ((u1 - u0 + s1 - s0).max(0.0) * 1e9) as u64;
            cost.cpu_ns.fetch_add(ns, Ordering::Relaxed);
            cost.samples.fetch_add(1, Ordering::Relaxed);
            s
        })
    })
}

type SampleFn = Box<dyn FnMut(End, u64, f64) -> SoakSample + Send>;

/// The counter sampler under `root`; when the root cannot be read, every sample says why.
fn build_sampler(root: &Path, ip: Option<IpAddr>) -> SampleFn {
    let path: Vec<String> = ip
        .and_then(linerate_engine::sys::interface_of)
        .into_iter()
        .collect();
    match crate::probe(root) {
        Ok(inv) => {
            let mut s = CounterSampler::new(root, soak_targets(&inv, &path));
            Box::new(move |end, seq, t_s| s.sample(end, seq, t_s))
        }
        Err(e) => {
            let why = e.to_string();
            Box::new(move |end, seq, t_s| {
                let mut s = SoakSample::new(end, seq, t_s);
                s.problems.push(format!("no counters read: {why}"));
                s
            })
        }
    }
}

/// A netdev's statistics and carrier counts, read from its files (each from the link dump's
/// entry `dumped` has of it where the table gives its field there): sample `n`.
fn netdev_files(
    r: &mut Root,
    d: &mut PortDirs,
    nd: &str,
    n: u64,
    dumped: &Dumped,
    counters: &mut Vec<(CounterSource, String, u64)>,
) {
    let Some(net) = d.net.as_mut() else {
        return;
    };
    // The link dump's entry of this very interface (its index as sysfs has it).
    let entry = dumped
        .get(nd)
        .filter(|e| d.ifindex.is_some_and(|i| i == e.ifindex));
    if let Some(l) = d.statistics.as_mut() {
        d.stale |= read_listed(r, l, entry, counters);
    }
    // A carrier file the netdev did not have when it was listed is tried when its directory
    // changed lately (a fixture written while it is read) and every RELIST_EVERY samples, not
    // at every sample.
    let unlisted_due = n.is_multiple_of(u64::from(RELIST_EVERY)) || net.changed_lately();
    for f in CounterDef::exact_rows(CounterSource::Carrier).filter_map(|c| c.name.exact()) {
        // From the dump for a file the netdev had when it was listed; any other is tried as a
        // file.
        let listed = d.carrier.contains(&f);
        if !listed && !unlisted_due {
            continue;
        }
        let from_dump = entry.filter(|_| listed).and_then(|e| {
            let CounterRead::LinkAttr(a) = CounterDef::of(CounterSource::Carrier, f).read else {
                return None;
            };
            e.attrs.iter().find(|(t, _)| *t == a).map(|(_, v)| *v)
        });
        let value = from_dump.or_else(|| net.counter(r, f, f).value());
        if let Some(value) = value {
            counters.push((CounterSource::Carrier, f.to_string(), value));
        }
    }
}

/// Link file `name` of directory `dir`: as `links` read it this interval when it watches it,
/// else read now.
fn link_file(
    links: Option<&LinkWatch>,
    dir: &mut OpenDir,
    name: &str,
) -> Result<Option<String>, String> {
    match links.and_then(|l| l.value(dir.path(), name)) {
        Some(v) => v.clone(),
        None => dir.read_raw(name),
    }
}

/// Every counter of a listed directory, in its order, each from the link dump's entry
/// `dumped` where the table gives its field there, else from its file. `N/A (no PMA)` on old
/// kernels is no counter, not a fault. True when a file vanished since the listing (the
/// directory is opened and listed again at the next sample).
fn read_listed(
    r: &mut Root,
    l: &mut Listed,
    dumped: Option<&LinkCounters>,
    out: &mut Vec<(CounterSource, String, u64)>,
) -> bool {
    l.tick();
    let source = l.source;
    let mut vanished = false;
    for (name, def) in &l.names {
        // A setting among the counters (`hw_counters/lifespan`) is not read.
        if def.class == CounterClass::Setting {
            continue;
        }
        let from_dump = match (dumped, def.read) {
            (Some(e), CounterRead::Stats64(i)) if def.name.exact() == Some(name.as_str()) => {
                e.stats64.get(i).copied()
            }
            _ => None,
        };
        let value = match from_dump {
            Some(v) => Some(v),
            None => match l.dir.counter(r, name, name) {
                CounterFile::Missing => {
                    vanished = true;
                    None
                }
                c => c.value(),
            },
        };
        if let Some(v) = value {
            out.push((source, name.clone(), v));
        }
    }
    vanished
}

/// The column `column` of the `group:` header and value lines of `/proc/net/snmp`.
fn parse_snmp(text: &str, group: &str, column: &str) -> Option<u64> {
    let mut lines = text
        .lines()
        .filter(|l| l.split_once(':').is_some_and(|(g, _)| g == group));
    let (header, values) = (lines.next()?, lines.next()?);
    let col = header.split_whitespace().position(|h| h == column)?;
    values.split_whitespace().nth(col)?.parse().ok()
}

/// The `RetransSegs` column of the two `Tcp:` lines (header, then values).
pub fn parse_snmp_retrans(text: &str) -> Option<u64> {
    parse_snmp_tcp(text, "RetransSegs")
}

/// This host's UDP receive counters under `root` (`/` for the live system: the network
/// namespace of the reading process): `/proc/net/snmp`'s `Udp:` lines, with
/// `/proc/net/snmp6`'s `Udp6InDatagrams`, `Udp6RcvbufErrors` and `Udp6InErrors` added where
/// IPv6 is on. None when the `Udp:` lines cannot be read or lack one of the three.
pub fn udp_receive(root: &Path) -> Option<linerate_facts::UdpReceive> {
    let v4 = Root::read_raw(&root.join("proc/net/snmp")).ok()??;
    let col = |c: &str| parse_snmp(&v4, "Udp", c);
    let mut u = linerate_facts::UdpReceive {
        in_datagrams: col("InDatagrams")?,
        rcvbuf_errors: col("RcvbufErrors")?,
        in_errors: col("InErrors")?,
    };
    if let Ok(Some(v6)) = Root::read_raw(&root.join("proc/net/snmp6")) {
        let get = |name: &str| -> u64 {
            v6.lines()
                .find_map(|l| {
                    let mut w = l.split_whitespace();
                    (w.next()? == name).then(|| w.next()?.parse().ok())?
                })
                .unwrap_or(0)
        };
        u.in_datagrams = u.in_datagrams.saturating_add(get("Udp6InDatagrams"));
        u.rcvbuf_errors = u.rcvbuf_errors.saturating_add(get("Udp6RcvbufErrors"));
        u.in_errors = u.in_errors.saturating_add(get("Udp6InErrors"));
    }
    Some(u)
}

/// The column `name` of the two `Tcp:` lines of `/proc/net/snmp` (header, then values).
pub fn parse_snmp_tcp(text: &str, name: &str) -> Option<u64> {
    parse_snmp(text, "Tcp", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
        Tcp: 1 200 120000 -1 10 5 0 0 2 1000 900 42 0 3 0\n";

    #[test]
    fn udp_receive_adds_ipv6_to_ipv4() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("proc/net");
        std::fs::create_dir_all(&net).unwrap();
        assert_eq!(udp_receive(dir.path()), None);
        std::fs::write(
            net.join("snmp"),
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
             Udp: 100 0 7 50 5 0\n",
        )
        .unwrap();
        let v4 = linerate_facts::UdpReceive {
            in_datagrams: 100,
            rcvbuf_errors: 5,
            in_errors: 7,
        };
        assert_eq!(udp_receive(dir.path()), Some(v4));
        std::fs::write(
            net.join("snmp6"),
            "Ip6InReceives 9\nUdp6InDatagrams                 \t20\nUdp6InErrors 3\n\
             Udp6RcvbufErrors 2\nUdpLite6InErrors 99\n",
        )
        .unwrap();
        let both = udp_receive(dir.path()).unwrap();
        assert_eq!(
            (both.in_datagrams, both.rcvbuf_errors, both.in_errors),
            (120, 7, 10)
        );
        // A `Udp:` header without RcvbufErrors (a hostile tree): not read.
        std::fs::write(net.join("snmp"), "Udp: InDatagrams InErrors\nUdp: 1 2\n").unwrap();
        assert_eq!(udp_receive(dir.path()), None);
    }

    #[test]
    fn retrans_segs_is_found_by_column_name() {
        assert_eq!(parse_snmp_retrans(SNMP), Some(42));
        assert_eq!(parse_snmp_tcp(SNMP, "OutSegs"), Some(900));
        assert_eq!(parse_snmp_retrans("Tcp: RetransSegs\n"), None);
        assert_eq!(parse_snmp_retrans("Tcp: RetransSegs\nTcp: x\n"), None);
        assert_eq!(parse_snmp_retrans(""), None);
    }
}
