//! What this host's CPUs did while a test ran: the busiest core, linerate's own share of the
//! CPU, other processes' share, and the hypervisor's steal. doctor judges its results by it
//! (`cpu.saturated`, `cpu.contended`); bench reports what disturbed a run the same way.
//!
//! Two snapshots, before and after ([`CpuSnapshot::now`]): the per-core jiffies of
//! `/proc/stat` and the CPU time of linerate's own processes (this one through getrusage, and a
//! far end on this host through `/proc/PID/stat`). The arithmetic between them is pure
//! ([`HostCpu::between`]), so it is tested on numbers.
//!
//! What is whose. `/proc/stat` splits each core's time into user, nice, system (time spent in
//! tasks), irq and softirq (interrupts), idle, iowait and steal (taken by the hypervisor). A
//! process's own CPU time (getrusage, `/proc/PID/stat`) is task time, so other processes' share
//! is the host's task time minus linerate's, never the interrupts (on a fast path the receive
//! softirq is linerate's traffic). The busiest core's share that other processes held is only
//! known as a lower bound: which of linerate's threads ran on which core is not recorded, so
//! at most all of linerate's CPU time ran there; what the core spent in tasks beyond that was
//! someone else's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// One core's jiffies from `/proc/stat`, split the way [`HostCpu`] needs them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreTicks {
    /// user + nice + system: time in tasks.
    pub task: u64,
    /// irq + softirq.
    pub irq: u64,
    /// Taken by the hypervisor.
    pub steal: u64,
    /// Everything, idle and iowait included.
    pub total: u64,
}

impl CoreTicks {
    /// Busy: everything but idle and iowait.
    fn busy(self) -> u64 {
        self.task + self.irq + self.steal
    }

    fn since(self, before: CoreTicks) -> CoreTicks {
        CoreTicks {
            task: self.task.saturating_sub(before.task),
            irq: self.irq.saturating_sub(before.irq),
            steal: self.steal.saturating_sub(before.steal),
            total: self.total.saturating_sub(before.total),
        }
    }
}

/// The per-core lines (`cpu0 …`) of `/proc/stat`. A line that does not parse is left out.
pub fn parse_proc_stat(text: &str) -> Vec<CoreTicks> {
    text.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .filter_map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .map_while(|x| x.parse().ok())
                .collect();
            // user nice system idle iowait irq softirq steal (guest time is inside user).
            let get = |i: usize| v.get(i).copied().unwrap_or(0);
            (v.len() >= 4).then(|| CoreTicks {
                task: get(0) + get(1) + get(2),
                irq: get(5) + get(6),
                steal: get(7),
                total: v.iter().take(8).sum(),
            })
        })
        .collect()
}

/// The cores of this host now; empty when `/proc/stat` cannot be read.
pub fn core_ticks() -> Vec<CoreTicks> {
    std::fs::read_to_string("/proc/stat")
        .map(|s| parse_proc_stat(&s))
        .unwrap_or_default()
}

/// How many cores were idle over `window` (the sum over the cores of each one's idle share;
/// `/proc/stat` ticks at USER_HZ, so a window under 0.2 s is too coarse). None when
/// `/proc/stat` cannot be read.
pub fn idle_cores(window: Duration) -> Option<f64> {
    let before = core_ticks();
    std::thread::sleep(window);
    let after = core_ticks();
    if before.is_empty() || before.len() != after.len() {
        return None;
    }
    let idle = before
        .iter()
        .zip(&after)
        .filter_map(|(b, a)| {
            let d = a.since(*b);
            (d.total > 0).then(|| 1.0 - (d.busy() as f64 / d.total as f64).min(1.0))
        })
        .sum();
    Some(idle)
}

/// Everything [`HostCpu::between`] needs, at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuSnapshot {
    pub at: Instant,
    /// Per core, from `/proc/stat` (empty when it could not be read).
    pub cores: Vec<CoreTicks>,
    /// Clock ticks per second of `/proc/stat` (USER_HZ).
    pub ticks_per_s: f64,
    /// CPU seconds (user + system) of linerate's processes: this one and its far end when
    /// that runs on this host.
    pub own_s: f64,
}

impl CpuSnapshot {
    /// Now, counting the processes `peers` (a far end on this host) as linerate's own.
    pub fn now(peers: impl IntoIterator<Item = u32>) -> Self {
        let (u, s) = crate::sys::process_cpu();
        let ticks = crate::sys::clock_ticks_per_s();
        let peers_s: f64 = peers
            .into_iter()
            .filter_map(|p| process_ticks(Path::new(&format!("/proc/{p}/stat"))))
            .map(|t| t as f64 / ticks)
            .sum();
        CpuSnapshot {
            at: Instant::now(),
            cores: core_ticks(),
            ticks_per_s: ticks,
            own_s: u + s + peers_s,
        }
    }
}

/// utime + stime of `/proc/PID/stat`, in clock ticks.
fn process_ticks(stat: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(stat).ok()?;
    parse_process_ticks(&text)
}

/// utime + stime from the text of `/proc/PID/stat` (the command may hold spaces and
/// parentheses: the fields are counted after the last `)`).
fn parse_process_ticks(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After `)` come state (field 3) …: utime is field 14, stime 15, so indices 11 and 12.
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(get(11)? + get(12)?)
}

/// This host's CPU during one test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HostCpu {
    /// Seconds between the two snapshots.
    pub seconds: f64,
    /// Cores seen in `/proc/stat`.
    pub cores: usize,
    /// The busiest core, % of its time busy (tasks, interrupts and steal).
    pub busiest_core_percent: Option<f64>,
    /// Of the busiest core's time, the % other processes held at least: its task time beyond
    /// all of linerate's CPU time (a lower bound: see the module documentation).
    pub busiest_core_others_percent: Option<f64>,
    /// Cores' worth of CPU linerate's own processes used (this one, and a far end on this host).
    pub own_cores: Option<f64>,
    /// Cores' worth of task time other processes used.
    pub other_cores: Option<f64>,
    /// Cores' worth the hypervisor took.
    pub steal_cores: Option<f64>,
}

impl HostCpu {
    /// What happened between two snapshots. Figures that `/proc/stat` could not give (it was
    /// unreadable, or the cores changed between the two) are None.
    pub fn between(before: &CpuSnapshot, after: &CpuSnapshot) -> HostCpu {
        let seconds = after.at.duration_since(before.at).as_secs_f64();
        let wall = seconds.max(1e-3);
        let own_s = (after.own_s - before.own_s).max(0.0);
        let own_cores = own_s / wall;
        let same = !before.cores.is_empty() && before.cores.len() == after.cores.len();
        if !same {
            return HostCpu {
                seconds,
                cores: after.cores.len(),
                own_cores: Some(own_cores),
                ..HostCpu::default()
            };
        }
        let d: Vec<CoreTicks> = after
            .cores
            .iter()
            .zip(&before.cores)
            .map(|(a, b)| a.since(*b))
            .collect();
        let hz = after.ticks_per_s.max(1.0);
        let task_s = d.iter().map(|c| c.task).sum::<u64>() as f64 / hz;
        let steal_s = d.iter().map(|c| c.steal).sum::<u64>() as f64 / hz;
        let busiest = d
            .iter()
            .filter(|c| c.total > 0)
            .max_by(|a, b| share(a.busy(), a.total).total_cmp(&share(b.busy(), b.total)));
        HostCpu {
            seconds,
            cores: d.len(),
            busiest_core_percent: busiest.map(|c| share(c.busy(), c.total) * 100.0),
            busiest_core_others_percent: busiest
                .map(|c| ((share(c.task, c.total) - own_cores.min(1.0)) * 100.0).max(0.0)),
            own_cores: Some(own_cores),
            other_cores: Some(((task_s - own_s) / wall).max(0.0)),
            steal_cores: Some(steal_s / wall),
        }
    }
}

impl From<HostCpu> for linerate_proto::HostCpuLoad {
    /// The figures as a peer reports them in its results.
    fn from(h: HostCpu) -> Self {
        Self {
            seconds: h.seconds,
            cores: u32::try_from(h.cores).unwrap_or(u32::MAX),
            busiest_core_percent: h.busiest_core_percent,
            busiest_core_others_percent: h.busiest_core_others_percent,
            own_cores: h.own_cores,
            other_cores: h.other_cores,
            steal_cores: h.steal_cores,
        }
    }
}

fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        (part as f64 / total as f64).min(1.0)
    }
}

/// Measures this host's CPU around tests, counting a far end that runs on this host (its
/// process ids) as linerate's own.
#[derive(Debug, Clone, Default)]
pub struct HostCpuMeter {
    /// The far end's processes on this host, with their program names.
    peers: Vec<(u32, String)>,
}

impl HostCpuMeter {
    /// Only this process is linerate's (a self-check, whose server runs in it, or a far end on
    /// another host).
    pub fn new() -> Self {
        Self::default()
    }

    /// This process and the processes on this host that serve `far_end` (found by the
    /// listening socket they hold: [`far_end_processes`]): a `linerate serve`, an `iperf3 -s`
    /// or any other server beside the client does the far end's work, not contention.
    pub fn with_far_end(far_end: SocketAddr) -> Self {
        Self {
            peers: far_end_processes(far_end),
        }
    }

    /// Processes besides this one are counted as linerate's (a far end on this host).
    pub fn has_far_end(&self) -> bool {
        !self.peers.is_empty()
    }

    /// The processes counted as linerate's besides this one, each with its program name
    /// (`iperf3`).
    pub fn peer_programs(&self) -> &[(u32, String)] {
        &self.peers
    }

    pub fn snapshot(&self) -> CpuSnapshot {
        CpuSnapshot::now(self.peers.iter().map(|(pid, _)| *pid))
    }

    /// Runs `f` and says what this host's CPUs did meanwhile.
    pub fn during<T>(&self, f: impl FnOnce() -> T) -> (T, HostCpu) {
        let before = self.snapshot();
        let out = f();
        (out, HostCpu::between(&before, &self.snapshot()))
    }
}

/// Processes scanned at most, sockets read per table, and descriptors read per process.
const MAX_PROCESSES: usize = 65_536;
const MAX_SOCKET_LINES: usize = 65_536;
const MAX_FDS: usize = 65_536;

/// The programs taken at their word when their files cannot be read (another user's
/// processes, to a linerate without root): `linerate serve`, or a stock `iperf3 -s`. Any other
/// program is recognised by the listening socket it holds.
const FAR_END_PROGRAMS: &[&str] = &["linerate", "iperf3"];

/// The processes on this host that hold the far end's listening socket (`far_end`'s port, on
/// its address or on any address while the address is one of that network namespace's own,
/// IPv4 through an IPv6 socket too): a `linerate serve`, a stock `iperf3 -s` or any other
/// server beside this one, or in another namespace of this host as in the tests. Their CPU is
/// the far end's, not contention. None on another host.
///
/// Each network namespace's socket tables are read once (through the first process seen in
/// it), and only in a namespace that has such a listener are the processes' descriptors
/// looked at: a far end on another host costs one link read per process. A process whose
/// namespace cannot be read (another user's, without root) has unreadable descriptors too:
/// then a far-end program ([`FAR_END_PROGRAMS`]) whose namespace listens there counts.
///
/// Each process with its program name (`/proc/PID/comm`).
pub fn far_end_processes(far_end: SocketAddr) -> Vec<(u32, String)> {
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // Per network namespace (its `net:[inode]`), the inodes of the sockets listening for
    // `far_end` there.
    let mut listening: HashMap<String, Vec<u64>> = HashMap::new();
    let mut out = Vec::new();
    for e in rd.take(MAX_PROCESSES).flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let dir = e.path();
        let comm = || {
            std::fs::read_to_string(dir.join("comm"))
                .unwrap_or_default()
                .trim_end()
                .to_string()
        };
        match std::fs::read_link(dir.join("ns/net")) {
            Ok(ns) => {
                let socks = listening
                    .entry(ns.to_string_lossy().into_owned())
                    .or_insert_with(|| listeners_for(&dir, far_end));
                if !socks.is_empty() && holds_socket(&dir, socks) {
                    out.push((pid, comm()));
                }
            }
            Err(_) => {
                let c = comm();
                if FAR_END_PROGRAMS.contains(&c.as_str())
                    && !listeners_for(&dir, far_end).is_empty()
                {
                    out.push((pid, c));
                }
            }
        }
    }
    out
}

/// Whether the process whose `/proc` directory is `dir` holds one of the sockets `inodes`.
fn holds_socket(dir: &Path, inodes: &[u64]) -> bool {
    let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
        return false;
    };
    fds.take(MAX_FDS).flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .ok()
            .and_then(|l| socket_inode(&l.to_string_lossy()))
            .is_some_and(|i| inodes.contains(&i))
    })
}

/// The inode of a descriptor's link `socket:[12345]`.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The inodes of the sockets listening for `addr` in the network namespace of the process
/// whose `/proc` directory is `dir` (its threads share it, so the process's own tables
/// answer). An IPv4 address is also served by an IPv6 socket bound to any address (a
/// dual-stack `::`, as iperf3 listens by default) or to its mapped form (`::ffff:a.b.c.d`).
fn listeners_for(dir: &Path, addr: SocketAddr) -> Vec<u64> {
    let mut tables = vec![(true, "net/tcp6")];
    if addr.is_ipv4() {
        tables.insert(0, (false, "net/tcp"));
    }
    let mut local: Option<Vec<std::net::IpAddr>> = None;
    let mut here = |ip: std::net::IpAddr| -> bool {
        ip.is_loopback()
            || local
                .get_or_insert_with(|| namespace_addresses(dir, ip.is_ipv6()))
                .contains(&ip)
    };
    let mut out = Vec::new();
    for (v6, table) in tables {
        let Some(text) = listening_part(&dir.join(table)) else {
            continue;
        };
        for l in parse_listeners(&text, v6) {
            if l.port == addr.port() && serves(l.ip, addr.ip(), &mut here) {
                out.push(l.inode);
            }
        }
    }
    out
}

/// Whether a socket bound to `bound` accepts connections to `to`; `here` says whether an
/// address is one of the namespace's own.
fn serves(
    bound: std::net::IpAddr,
    to: std::net::IpAddr,
    here: &mut impl FnMut(std::net::IpAddr) -> bool,
) -> bool {
    use std::net::IpAddr;
    let mapped = match bound {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    // An unspecified address takes any of the namespace's own; `::` IPv4 too (dual stack).
    bound == to || mapped == Some(to) || (bound.is_unspecified() && here(to))
}

/// The addresses of the network namespace of the process whose `/proc` directory is `dir`.
fn namespace_addresses(dir: &Path, v6: bool) -> Vec<std::net::IpAddr> {
    if v6 {
        std::fs::read_to_string(dir.join("net/if_inet6"))
            .map(|t| parse_if_inet6(&t))
            .unwrap_or_default()
    } else {
        std::fs::read_to_string(dir.join("net/fib_trie"))
            .map(|t| parse_fib_trie_local(&t))
            .unwrap_or_default()
    }
}

/// The head of a `/proc/net/tcp` or `tcp6` table up to its listening sockets: the kernel
/// lists those first (`tcp_seq_start`: the listening hash, then the established one), so the
/// read stops at the first line in another state. A busy host holds tens of thousands of
/// connections (TIME_WAIT above all) whose lines the kernel would otherwise format, taking tens
/// of milliseconds per table, before a test. Old kernels list a listener's half-open
/// connections (SYN_RECV, `03`) under it: those are read through.
fn listening_part(path: &Path) -> Option<String> {
    use std::io::BufRead as _;
    let f = std::fs::File::open(path).ok()?;
    let mut out = String::new();
    for (i, line) in std::io::BufReader::new(f)
        .lines()
        .take(MAX_SOCKET_LINES)
        .enumerate()
    {
        let line = line.ok()?;
        let state = line.split_whitespace().nth(3).unwrap_or("");
        if i > 0 && state != "0A" && state != "03" {
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    Some(out)
}

/// A listening socket of a `/proc/net/tcp` or `tcp6` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Listener {
    ip: std::net::IpAddr,
    port: u16,
    inode: u64,
}

/// The listening sockets (state 0A) of a `/proc/net/tcp` or `tcp6` table.
fn parse_listeners(text: &str, v6: bool) -> Vec<Listener> {
    text.lines()
        .skip(1)
        .take(MAX_SOCKET_LINES)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(3) != Some(&"0A") {
                return None;
            }
            let (ip, port) = f.get(1)?.split_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let inode = f.get(9).and_then(|i| i.parse().ok()).unwrap_or(0);
            Some(Listener {
                ip: parse_proc_ip(ip, v6)?,
                port,
                inode,
            })
        })
        .collect()
}

/// An address as `/proc/net/tcp*` prints it: the 32-bit words in host (little-endian) order.
fn parse_proc_ip(hex: &str, v6: bool) -> Option<std::net::IpAddr> {
    let words = if v6 { 4 } else { 1 };
    if hex.len() != words * 8 {
        return None;
    }
    let mut bytes = Vec::with_capacity(words * 4);
    for w in 0..words {
        let word = u32::from_str_radix(&hex[w * 8..w * 8 + 8], 16).ok()?;
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    Some(if v6 {
        let a: [u8; 16] = bytes.try_into().ok()?;
        std::net::IpAddr::from(a)
    } else {
        let a: [u8; 4] = bytes.try_into().ok()?;
        std::net::IpAddr::from(a)
    })
}

/// The IPv4 addresses of a namespace: the `/32 host LOCAL` leaves of `/proc/net/fib_trie`.
fn parse_fib_trie_local(text: &str) -> Vec<std::net::IpAddr> {
    let mut out = Vec::new();
    let mut last: Option<std::net::IpAddr> = None;
    for l in text.lines().take(MAX_SOCKET_LINES) {
        let t = l.trim_start_matches([' ', '|', '+', '-']).trim();
        if let Ok(ip) = t.parse::<std::net::Ipv4Addr>() {
            last = Some(ip.into());
        } else if t.starts_with("/32 host LOCAL") {
            if let Some(ip) = last.filter(|ip| !out.contains(ip)) {
                out.push(ip);
            }
        }
    }
    out
}

/// The IPv6 addresses of a namespace (`/proc/net/if_inet6`: 32 hex digits first on each line).
fn parse_if_inet6(text: &str) -> Vec<std::net::IpAddr> {
    text.lines()
        .take(MAX_SOCKET_LINES)
        .filter_map(|l| {
            let hex = l.split_whitespace().next()?;
            if hex.len() != 32 {
                return None;
            }
            let mut a = [0u8; 16];
            for (i, b) in a.iter_mut().enumerate() {
                *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
            }
            Some(std::net::IpAddr::from(a))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(at: Instant, cores: &[(u64, u64, u64, u64)], own_s: f64) -> CpuSnapshot {
        CpuSnapshot {
            at,
            cores: cores
                .iter()
                .map(|&(task, irq, steal, total)| CoreTicks {
                    task,
                    irq,
                    steal,
                    total,
                })
                .collect(),
            ticks_per_s: 100.0,
            own_s,
        }
    }

    #[test]
    fn proc_stat_lines_split_into_tasks_interrupts_and_steal() {
        let text = "cpu  10 0 0 0\ncpu0 100 5 20 800 10 3 4 2 0 0\ncpu1 1 2 3 4\nintr 5\ncpuX 1\n";
        let c = parse_proc_stat(text);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(
            c[0],
            CoreTicks {
                task: 125,
                irq: 7,
                steal: 2,
                total: 944
            }
        );
        // Old kernels print fewer columns: what is there is used.
        assert_eq!(c[1].total, 10);
        assert_eq!(c[1].irq, 0);
        assert!(parse_proc_stat("cpu0 x y\n").is_empty());
    }

    #[test]
    fn a_busy_core_held_by_others_is_theirs() {
        // Two cores for 2 s (200 ticks each): core 0 all busy in tasks, core 1 half; linerate
        // used 0.4 s (0.2 cores). Others: 300 ticks = 3 s of tasks, minus 0.4 s, over 2 s.
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(2);
        let a = snap(t0, &[(0, 0, 0, 0), (0, 0, 0, 0)], 1.0);
        let b = snap(t1, &[(200, 0, 0, 200), (100, 0, 0, 200)], 1.4);
        let h = HostCpu::between(&a, &b);
        assert_eq!(h.cores, 2);
        assert!((h.own_cores.unwrap() - 0.2).abs() < 1e-9, "{h:?}");
        assert!((h.other_cores.unwrap() - 1.3).abs() < 1e-9, "{h:?}");
        assert_eq!(h.busiest_core_percent, Some(100.0));
        // At most 20% of that core was linerate's: at least 80% someone else's.
        assert!(
            (h.busiest_core_others_percent.unwrap() - 80.0).abs() < 1e-9,
            "{h:?}"
        );
        assert_eq!(h.steal_cores, Some(0.0));
    }

    #[test]
    fn a_core_linerate_saturated_is_not_others() {
        // One core busy, half of it in softirq (linerate's traffic), linerate's threads used a
        // whole core: nothing left for others.
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let a = snap(t0, &[(0, 0, 0, 0), (0, 0, 0, 0)], 0.0);
        let b = snap(t1, &[(50, 50, 0, 100), (50, 0, 10, 100)], 1.0);
        let h = HostCpu::between(&a, &b);
        assert_eq!(h.busiest_core_percent, Some(100.0));
        assert_eq!(h.busiest_core_others_percent, Some(0.0));
        assert_eq!(h.other_cores, Some(0.0));
        assert!((h.steal_cores.unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn unreadable_or_changed_cores_give_no_figures() {
        let t0 = Instant::now();
        let a = snap(t0, &[], 0.0);
        let b = snap(t0 + Duration::from_secs(1), &[(1, 0, 0, 2)], 0.5);
        let h = HostCpu::between(&a, &b);
        assert_eq!(
            (h.busiest_core_percent, h.other_cores, h.steal_cores),
            (None, None, None)
        );
        assert_eq!(h.own_cores, Some(0.5));
        // The live reading works on this machine (Linux, /proc mounted).
        let (x, live) = HostCpuMeter::new().during(|| 7);
        assert_eq!(x, 7);
        assert!(live.cores >= 1, "{live:?}");
    }

    #[test]
    fn process_stat_fields_are_counted_after_the_command() {
        let line = "42 (linerate (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(parse_process_ticks(line), Some(300));
        assert_eq!(parse_process_ticks("42 linerate S"), None);
    }

    #[test]
    fn only_the_listening_head_of_a_socket_table_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tcp");
        let mut text = String::from("  sl  local_address rem_address   st\n");
        text.push_str("   0: 00000000:14B5 00000000:0000 0A 0\n");
        text.push_str("   1: 0100007F:14B5 0100007F:9C40 03 0\n");
        text.push_str("   2: 0100007F:14B6 00000000:0000 0A 0\n");
        for _ in 0..1000 {
            text.push_str("   3: 0100007F:9C40 0100007F:14B5 06 0\n");
        }
        text.push_str("9999: 0100007F:0016 00000000:0000 0A 0\n");
        std::fs::write(&path, text).unwrap();
        let head = listening_part(&path).unwrap();
        assert_eq!(head.lines().count(), 4, "{head}");
        assert_eq!(parse_listeners(&head, false).len(), 2);
    }

    #[test]
    fn listening_sockets_and_local_addresses_are_read() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue\n\
           0: 00000000:14B5 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 1 1\n\
           1: 0100007F:9C40 0100007F:14B5 01 00000000:00000000 00:00000000 00000000     0 0 2 1\n\
           2: 020012C6:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 3 1\n";
        let l: Vec<(std::net::IpAddr, u16, u64)> = parse_listeners(tcp, false)
            .into_iter()
            .map(|l| (l.ip, l.port, l.inode))
            .collect();
        assert_eq!(
            l,
            vec![
                ("0.0.0.0".parse().unwrap(), 5301, 1),
                ("198.18.0.2".parse().unwrap(), 22, 3)
            ]
        );
        let tcp6 = "sl local\n 0: 00000000000000000000000001000000:14B5 00000000000000000000000000000000:0000 0A\n";
        let l = parse_listeners(tcp6, true);
        assert_eq!(
            (l[0].ip, l[0].port, l[0].inode),
            ("::1".parse().unwrap(), 5301, 0)
        );
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 198.18.0.2\n        /32 host LOCAL\n     |-- 198.18.0.255\n        /32 link BROADCAST\nLocal:\n     |-- 198.18.0.2\n        /32 host LOCAL\n";
        assert_eq!(
            parse_fib_trie_local(trie),
            vec!["198.18.0.2".parse::<std::net::IpAddr>().unwrap()]
        );
        let inet6 = "00000000000000000000000000000001 01 80 10 80       lo\nfe80000000000000020000fffe000001 02 40 20 80     veth0\nbad\n";
        assert_eq!(parse_if_inet6(inet6).len(), 2);
        // Nothing listens on port 1 on this machine.
        assert!(far_end_processes("127.0.0.1:1".parse().unwrap()).is_empty());
    }

    #[test]
    fn which_bound_address_serves_which_destination() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        let mut ours = |a: std::net::IpAddr| a == ip("198.18.0.2") || a == ip("fd00::2");
        for (bound, to, yes) in [
            ("198.18.0.2", "198.18.0.2", true),
            ("0.0.0.0", "198.18.0.2", true),
            ("0.0.0.0", "192.0.2.9", false),
            // iperf3's default: one dual-stack socket on `::` takes IPv4 as well.
            ("::", "198.18.0.2", true),
            ("::", "fd00::2", true),
            ("::", "192.0.2.9", false),
            ("::ffff:198.18.0.2", "198.18.0.2", true),
            ("::ffff:198.18.0.3", "198.18.0.2", false),
            ("10.0.0.1", "198.18.0.2", false),
        ] {
            assert_eq!(serves(ip(bound), ip(to), &mut ours), yes, "{bound} → {to}");
        }
        assert_eq!(socket_inode("socket:[691775]"), Some(691_775));
        assert_eq!(socket_inode("pipe:[12]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    /// The variable that makes [`listener_child`] listen (it does nothing otherwise).
    const LISTENER_CHILD_ENV: &str = "LINERATE_HOSTCPU_LISTENER_CHILD";

    /// A program that is neither linerate nor iperf3 (this test binary, run again) listening
    /// the way a stock `iperf3 -s` does, on a dual-stack `[::]` socket (`0.0.0.0` where this
    /// host has no IPv6): found as the far end of `127.0.0.1:PORT` by the socket it holds.
    #[test]
    fn any_program_listening_on_the_far_ends_port_is_the_far_end() {
        use std::io::BufRead as _;
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = std::process::Command::new(exe)
            .args(["--exact", "hostcpu::tests::listener_child", "--ignored"])
            .args(["--nocapture", "--test-threads=1"])
            .env(LISTENER_CHILD_ENV, "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting the listening child");
        let stdout = child.stdout.take().expect("its stdout");
        let port: Option<u16> = std::io::BufReader::new(stdout)
            .lines()
            .take(100)
            .map_while(Result::ok)
            // The harness prints the test's name on the same line first.
            .find_map(|l| {
                l.split_once("@@ port=")
                    .and_then(|(_, p)| p.trim().parse().ok())
            });
        let found = port.map(|p| far_end_processes(SocketAddr::from(([127, 0, 0, 1], p))));
        // Its stdin closing ends it.
        drop(child.stdin.take());
        let _ = child.wait();
        let port = port.expect("the child listened and said its port");
        let found = found.unwrap_or_default();
        let pids: Vec<u32> = found.iter().map(|(p, _)| *p).collect();
        assert_eq!(pids, vec![child.id()], "{found:?}");
        assert!(
            !FAR_END_PROGRAMS.contains(&found[0].1.as_str()),
            "{found:?}"
        );
        // Gone with its socket.
        assert!(far_end_processes(SocketAddr::from(([127, 0, 0, 1], port))).is_empty());
    }

    /// The child of the test above: listens, says its port, and waits for its stdin to close
    /// (at most 30 s).
    #[test]
    #[ignore = "run by any_program_listening_on_the_far_ends_port_is_the_far_end"]
    fn listener_child() {
        use std::io::Read as _;
        if std::env::var_os(LISTENER_CHILD_ENV).is_none() {
            return;
        }
        let l = std::net::TcpListener::bind("[::]:0")
            .or_else(|_| std::net::TcpListener::bind("0.0.0.0:0"))
            .expect("a listening socket");
        println!("@@ port={}", l.local_addr().unwrap().port());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(Duration::from_secs(30));
        drop(l);
    }
}
