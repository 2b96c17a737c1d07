//! The counters a soak reads every interval, under a root directory (`/` or a fixture tree):
//! for each watched port its IB `counters/*` and `hw_counters/*`, its netdev's `statistics/*`
//! and carrier counts, the driver statistics through SIOCETHTOOL (live root only), and the
//! host's `TcpRetransSegs`. Raw values, never reset; a file that is bad or vanished becomes a
//! named entry in the sample's `problems`, never a failure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use linerate_facts::{Inventory, LinkLayer, NetdevKind, Port, PortKind};
use linerate_model::IbRate;
use linerate_proto::soak::{CounterSource, End, PortSample, SoakPortKind, SoakSample};

use crate::ethtool::Ethtool;
use crate::fs::{DirReader, Root};

/// Carrier counters of a netdev (`/sys/class/net/<if>/…`).
const CARRIER_FILES: [&str; 3] = ["carrier_changes", "carrier_up_count", "carrier_down_count"];
/// `hw_counters` entries that are settings, not counters.
const HW_NOT_COUNTERS: [&str; 1] = ["lifespan"];

/// The error counters of a netdev's `statistics/` that the inventory reports (non-zero) and
/// doctor watches during its tests: errors and drops on either side, and the receive errors
/// that point at the wire or the NIC (CRC, missed, FIFO).
pub const NETDEV_ERROR_STATS: [&str; 8] = [
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
    "rx_crc_errors",
    "rx_missed_errors",
    "rx_fifo_errors",
    "tx_carrier_errors",
];

/// One port a soak watches.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        let t = match (&p.device, p.port) {
            (Some(dev), Some(n)) => SoakTarget {
                device: dev.clone(),
                port: n.to_string(),
                netdev: p.netdev.clone(),
                rdma: true,
                infiniband: p.link_layer == LinkLayer::Infiniband,
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

/// Reads the samples of one end: built once, asked every interval.
#[derive(Debug)]
pub struct CounterSampler {
    root: PathBuf,
    targets: Vec<SoakTarget>,
    /// The ioctl socket, on a live root only.
    ethtool: Option<Ethtool>,
    /// Said once why the driver statistics are not read (a fixture root, no socket).
    ethtool_note: Option<String>,
    /// Interfaces whose driver statistics failed, named once each.
    ethtool_failed: Vec<String>,
    /// The counters each target had in the previous sample: one gone since is named.
    seen: Vec<Vec<(CounterSource, String)>>,
    listings: Listings,
}

impl CounterSampler {
    /// `root` is `/` on a live system: only then are the driver statistics read (the ioctl
    /// asks the kernel, which knows nothing of a fixture tree).
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
        Self {
            root: root.to_path_buf(),
            targets,
            ethtool,
            ethtool_note,
            ethtool_failed: Vec::new(),
            seen: Vec::new(),
            listings: Listings::default(),
        }
    }

    pub fn targets(&self) -> &[SoakTarget] {
        &self.targets
    }

    /// Read everything once. Bytes are left at 0: the caller knows its engines' traffic.
    pub fn sample(&mut self, end: End, seq: u64, t_s: f64) -> SoakSample {
        let mut r = Root::new(&self.root);
        let mut problems = Vec::new();
        if let Some(note) = self.ethtool_note.take() {
            problems.push(note);
        }
        let targets = std::mem::take(&mut self.targets);
        let ports: Vec<PortSample> = targets
            .iter()
            .map(|t| self.port(&mut r, t, &mut problems))
            .collect();
        self.targets = targets;
        self.note_vanished(&ports, &mut problems);
        let (tcp_retrans_segs, tcp_out_segs) = tcp_segs(&mut r);
        problems.extend(
            r.problems
                .into_iter()
                .map(|p| format!("{}: {}", p.path, p.detail)),
        );
        SoakSample {
            end,
            seq,
            t_s,
            ports,
            tcp_retrans_segs,
            tcp_out_segs,
            bytes_sent: 0,
            bytes_received: 0,
            problems,
        }
    }

    /// One port's counters. Each directory is opened once and its files read by name: the
    /// port's directory (through its class symlink) is looked up once per sample.
    fn port(&mut self, r: &mut Root, t: &SoakTarget, problems: &mut Vec<String>) -> PortSample {
        let mut counters = Vec::new();
        let mut kind = SoakPortKind::Ethernet {
            speed_mbps: None,
            roce: t.rdma && !t.infiniband,
        };
        if t.rdma {
            let dir = r.path(&format!(
                "sys/class/infiniband/{}/ports/{}",
                t.device, t.port
            ));
            if let Some(d) = DirReader::open(&dir) {
                if t.infiniband {
                    let rate = r.opt_parse_at(
                        &d,
                        "rate",
                        &t.device,
                        "`40 Gb/sec (4X QDR)`",
                        IbRate::parse,
                    );
                    kind = SoakPortKind::Infiniband {
                        speed: rate.map(|r| r.speed.name().to_string()),
                        signalling_gbps: rate.map(|r| r.signalling_gbps()),
                    };
                }
                read_dir_counters(
                    r,
                    &mut self.listings,
                    d.child("counters"),
                    CounterSource::IbCounters,
                    &mut counters,
                );
                read_dir_counters(
                    r,
                    &mut self.listings,
                    d.child("hw_counters"),
                    CounterSource::IbHwCounters,
                    &mut counters,
                );
            } else if t.infiniband {
                kind = SoakPortKind::Infiniband {
                    speed: None,
                    signalling_gbps: None,
                };
            }
        }
        if let Some(nd) = &t.netdev {
            if let Some(d) = DirReader::open(&r.path(&format!("sys/class/net/{nd}"))) {
                if let SoakPortKind::Ethernet { speed_mbps, .. } = &mut kind {
                    *speed_mbps = d
                        .read_raw("speed")
                        .ok()
                        .flatten()
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|&s| s > 0 && s < u64::from(u32::MAX));
                }
                read_dir_counters(
                    r,
                    &mut self.listings,
                    d.child("statistics"),
                    CounterSource::NetdevStatistics,
                    &mut counters,
                );
                for f in CARRIER_FILES {
                    if let Some(value) = r.counter_at(&d, f, f) {
                        counters.push((CounterSource::Carrier, f.to_string(), value));
                    }
                }
            }
            if !t.infiniband {
                self.ethtool_counters(nd, problems, &mut counters);
            }
        }
        PortSample {
            device: t.device.clone(),
            port: t.port.clone(),
            netdev: t.netdev.clone(),
            kind,
            counters,
        }
    }

    /// Name the counters a port had in the previous sample and lacks now (a file removed, a
    /// driver reloaded): the judge sees a gap, the reader sees why.
    fn note_vanished(&mut self, ports: &[PortSample], problems: &mut Vec<String>) {
        let now: Vec<Vec<(CounterSource, String)>> = ports
            .iter()
            .map(|p| p.counters.iter().map(|(s, n, _)| (*s, n.clone())).collect())
            .collect();
        for ((before, after), p) in self.seen.iter().zip(&now).zip(ports) {
            for (src, name) in before.iter().filter(|k| !after.contains(k)) {
                let at = if p.port.is_empty() {
                    p.device.clone()
                } else {
                    format!("{}/{}", p.device, p.port)
                };
                problems.push(format!(
                    "{at}: counter {name} ({}) vanished since the previous sample",
                    source_name(*src)
                ));
            }
        }
        self.seen = now;
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
}

fn source_name(s: CounterSource) -> &'static str {
    match s {
        CounterSource::IbCounters => "counters/",
        CounterSource::IbHwCounters => "hw_counters/",
        CounterSource::NetdevStatistics => "statistics/",
        CounterSource::Carrier => "carrier",
        CounterSource::Ethtool => "ethtool",
    }
}

/// The names of a directory's counter files, listed again every [`RELIST_EVERY`] samples and
/// at once after a file vanished: a listing costs as much as several reads, and the files of a
/// port change only with its driver.
#[derive(Debug, Default)]
struct Listings {
    by_dir: HashMap<PathBuf, (Vec<String>, u32)>,
}

/// Samples between two listings of a counter directory.
const RELIST_EVERY: u32 = 10;

impl Listings {
    fn names(&mut self, d: &DirReader) -> Vec<String> {
        match self.by_dir.get_mut(d.path()) {
            Some((names, age)) if *age < RELIST_EVERY => {
                *age += 1;
                names.clone()
            }
            _ => {
                let names = d.names();
                self.by_dir
                    .insert(d.path().to_path_buf(), (names.clone(), 1));
                names
            }
        }
    }

    fn stale(&mut self, d: &DirReader) {
        self.by_dir.remove(d.path());
    }
}

/// Every counter file of a directory, in natural order, read by name. A missing directory is
/// silent (not every port has `hw_counters`); `N/A (no PMA)` on old kernels is no counter, not
/// a fault.
fn read_dir_counters(
    r: &mut Root,
    listings: &mut Listings,
    dir: Option<DirReader>,
    source: CounterSource,
    out: &mut Vec<(CounterSource, String, u64)>,
) {
    let Some(d) = dir else {
        return;
    };
    for name in listings.names(&d) {
        if HW_NOT_COUNTERS.contains(&name.as_str()) {
            continue;
        }
        let raw = d.read_raw(&name);
        if matches!(raw, Ok(None)) {
            // Gone since the listing: list again next time.
            listings.stale(&d);
            continue;
        }
        if let Some(value) = r.counter_value(raw, || d.path().join(&name), &name) {
            out.push((source, name, value));
        }
    }
}

/// `TcpRetransSegs` and `TcpOutSegs` from the `Tcp:` header and value lines of
/// `/proc/net/snmp`.
fn tcp_segs(r: &mut Root) -> (Option<u64>, Option<u64>) {
    let p = r.path("proc/net/snmp");
    let Some(text) = r.opt(&p, "host") else {
        return (None, None);
    };
    let [retrans, out] = parse_snmp_tcp_columns(&text, ["RetransSegs", "OutSegs"]);
    if retrans.is_none() {
        r.bad_value(
            &p,
            "host",
            "(no usable Tcp: lines)",
            "a `Tcp:` header line with `RetransSegs` and a `Tcp:` value line",
        );
    }
    (retrans, retrans.and(out))
}

/// The `RetransSegs` column of the two `Tcp:` lines (header, then values).
pub fn parse_snmp_retrans(text: &str) -> Option<u64> {
    parse_snmp_tcp(text, "RetransSegs")
}

/// The column `name` of the two `Tcp:` lines of `/proc/net/snmp` (header, then values).
pub fn parse_snmp_tcp(text: &str, name: &str) -> Option<u64> {
    let [v] = parse_snmp_tcp_columns(text, [name]);
    v
}

/// The columns `names` of the two `Tcp:` lines of `/proc/net/snmp`, found in one pass over
/// the text.
fn parse_snmp_tcp_columns<const N: usize>(text: &str, names: [&str; N]) -> [Option<u64>; N] {
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (Some(header), Some(values)) = (tcp.next(), tcp.next()) else {
        return [None; N];
    };
    names.map(|name| {
        let col = header.split_whitespace().position(|h| h == name)?;
        values.split_whitespace().nth(col)?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
        Tcp: 1 200 120000 -1 10 5 0 0 2 1000 900 42 0 3 0\n";

    #[test]
    fn retrans_segs_is_found_by_column_name() {
        assert_eq!(parse_snmp_retrans(SNMP), Some(42));
        assert_eq!(parse_snmp_tcp(SNMP, "OutSegs"), Some(900));
        assert_eq!(parse_snmp_retrans("Tcp: RetransSegs\n"), None);
        assert_eq!(parse_snmp_retrans("Tcp: RetransSegs\nTcp: x\n"), None);
        assert_eq!(parse_snmp_retrans(""), None);
    }
}
