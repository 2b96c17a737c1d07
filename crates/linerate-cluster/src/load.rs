//! How busy this rank's host is apart from linerate, and whether this rank had to wait for a
//! CPU: on each heartbeat a rank samples the host's CPU counters (`/proc/stat`), linerate's CPU
//! time (every process named `linerate`, this one included: `/proc/PID/stat`), and this rank's
//! own CPU time and the time its threads spent runnable but waiting for a CPU
//! (`/proc/self/task/TID/schedstat`), and sends the difference since the previous heartbeat.
//! The coordinator gives every measurement the load of its two ranks over its round, so that a
//! slow retest whose rank wanted a CPU that other programs held confirms nothing
//! (`linerate_mesh::judge`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use linerate_mesh::HostLoad;

/// Clock ticks per second of `/proc/stat`: USER_HZ, which the kernel keeps at 100 for user
/// space on every architecture Linux runs on (whatever its internal HZ).
const USER_HZ: f64 = 100.0;

/// Bounds on the walk of `/proc` (a host with more processes is not measured more precisely).
const MAX_PROCESSES: usize = 65_536;
const MAX_THREADS: usize = 4096;

/// The host-wide counters of `/proc/stat`, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Host {
    cores: u32,
    /// user + nice + system of every process (interrupts left out: on loopback most of them
    /// are the test's own traffic).
    busy_s: f64,
    /// idle + iowait.
    idle_s: f64,
    steal_s: f64,
}

/// The `cpu` line of `/proc/stat` and the number of `cpuN` lines.
fn parse_stat(text: &str) -> Option<Host> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    let get = |i: usize| v.get(i).copied().unwrap_or(0) as f64 / USER_HZ;
    let cores = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    Some(Host {
        cores: u32::try_from(cores).unwrap_or(u32::MAX),
        busy_s: get(0) + get(1) + get(2),
        idle_s: get(3) + get(4),
        steal_s: get(7),
    })
}

/// One look at linerate's processes: their CPU seconds (user + system, exited threads
/// included), this process's, and each of this process's live threads' run-queue wait,
/// nanoseconds, by thread id.
#[derive(Debug, Default)]
struct Linerate {
    cpu_s: f64,
    own_cpu_s: f64,
    waits: HashMap<u64, u64>,
}

/// This process and every process named `linerate` under `proc` (at most [`MAX_PROCESSES`]
/// entries, [`MAX_THREADS`] threads each).
fn linerate_processes(proc: &Path) -> Linerate {
    let me = std::process::id().to_string();
    let mut out = Linerate::default();
    let Ok(rd) = std::fs::read_dir(proc) else {
        return out;
    };
    for e in rd.take(MAX_PROCESSES).flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ... utime(14) stime(15): comm may hold spaces, so split after ')'.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if name != me && !head.ends_with("(linerate") {
            continue;
        }
        let f: Vec<&str> = rest.split_whitespace().collect();
        let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        // After ')' the fields start at index 3 (state), so utime is f[11], stime f[12].
        let cpu = (get(11) + get(12)) as f64 / USER_HZ;
        out.cpu_s += cpu;
        if name != me {
            continue;
        }
        out.own_cpu_s = cpu;
        let Ok(tasks) = std::fs::read_dir(e.path().join("task")) else {
            continue;
        };
        for t in tasks.take(MAX_THREADS).flatten() {
            let tid = t.file_name().to_string_lossy().parse::<u64>().ok();
            // "on-cpu-ns run-queue-wait-ns timeslices"
            let wait = std::fs::read_to_string(t.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok());
            if let (Some(tid), Some(wait)) = (tid, wait) {
                out.waits.insert(tid, wait);
            }
        }
    }
    out
}

/// One sample: when, the host's counters, linerate's and this rank's CPU seconds.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    host: Host,
    linerate_s: f64,
    own_s: f64,
}

/// Samples this host on each call and gives the load since the previous one. Threads are
/// followed one by one: a test's threads come and go between samples, and a thread that exits
/// takes its run-queue wait with it, so the wait is the sum of each thread's increase (all of
/// it for a thread new since the previous sample).
#[derive(Debug)]
pub struct Sampler {
    proc: PathBuf,
    last: Option<Sample>,
    waits: HashMap<u64, u64>,
}

impl Sampler {
    /// A sampler of this host, with its first sample taken.
    pub fn new() -> Self {
        Self::at(Path::new("/proc"))
    }

    fn at(proc: &Path) -> Self {
        let mut s = Sampler {
            proc: proc.to_path_buf(),
            last: None,
            waits: HashMap::new(),
        };
        let _ = s.since_last();
        s
    }

    /// The load since the previous call; `None` where `/proc/stat` cannot be read, or for an
    /// interval too short for its counters (they tick at USER_HZ).
    pub fn since_last(&mut self) -> Option<HostLoad> {
        // The host's counters before and after the walk, averaged: the walk takes a while on a
        // busy host, and both figures must cover the same interval.
        let read = || {
            std::fs::read_to_string(self.proc.join("stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
        };
        let before = read();
        let lr = linerate_processes(&self.proc);
        let after = read();
        let host = match (before, after) {
            (Some(a), Some(b)) => Host {
                cores: b.cores,
                busy_s: f64::midpoint(a.busy_s, b.busy_s),
                idle_s: f64::midpoint(a.idle_s, b.idle_s),
                steal_s: f64::midpoint(a.steal_s, b.steal_s),
            },
            _ => {
                self.last = None;
                return None;
            }
        };
        let waited_ns: u64 = lr
            .waits
            .iter()
            .map(|(tid, w)| w.saturating_sub(self.waits.get(tid).copied().unwrap_or(0)))
            .sum();
        let any_wait = !lr.waits.is_empty() || !self.waits.is_empty();
        self.waits = lr.waits;
        let now = Sample {
            at: Instant::now(),
            host,
            linerate_s: lr.cpu_s,
            own_s: lr.own_cpu_s,
        };
        let load = self
            .last
            .and_then(|a| between(&a, &now, any_wait.then_some(waited_ns as f64 / 1e9)));
        self.last = Some(now);
        load
    }
}

impl Default for Sampler {
    fn default() -> Self {
        Self::new()
    }
}

/// The load between two samples, with this rank's threads' wait over it (seconds).
fn between(a: &Sample, b: &Sample, waited_s: Option<f64>) -> Option<HostLoad> {
    let secs = b.at.saturating_duration_since(a.at).as_secs_f64();
    if secs < 0.2 {
        return None;
    }
    let cores = f64::from(b.host.cores.max(1));
    let per = |x: f64| (x / secs).clamp(0.0, cores);
    Some(HostLoad {
        cores: b.host.cores,
        other_cores: per(b.host.busy_s - a.host.busy_s - (b.linerate_s - a.linerate_s)),
        steal_cores: per(b.host.steal_s - a.host.steal_s),
        idle_cores: per(b.host.idle_s - a.host.idle_s),
        rank_cores: Some(per(b.own_s - a.own_s)),
        waited_cores: waited_s.map(|w| (w / secs).max(0.0)),
        seconds: secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn proc_stat_is_read_by_column() {
        let text = "cpu  100 20 30 400 5 6 7 8 0 0\ncpu0 50 10 15 200 2 3 3 4 0 0\ncpu1 50 10 15 200 3 3 4 4 0 0\nintr 1\n";
        let h = parse_stat(text).unwrap();
        assert_eq!(h.cores, 2);
        assert!((h.busy_s - 1.5).abs() < 1e-9 && (h.idle_s - 4.05).abs() < 1e-9);
        assert!((h.steal_s - 0.08).abs() < 1e-9);
        assert_eq!(parse_stat("intr 1\n"), None);
        assert_eq!(parse_stat("cpu  1 2 x\n"), None);
    }

    #[test]
    fn the_load_is_what_others_took_per_second() {
        let t0 = Instant::now();
        let host = Host {
            cores: 2,
            busy_s: 10.0,
            idle_s: 5.0,
            steal_s: 1.0,
        };
        let a = Sample {
            at: t0,
            host,
            linerate_s: 3.0,
            own_s: 1.0,
        };
        let b = Sample {
            at: t0 + Duration::from_secs(2),
            host: Host {
                busy_s: 13.0,
                idle_s: 5.4,
                steal_s: 1.2,
                ..host
            },
            linerate_s: 4.0,
            own_s: 1.6,
        };
        let l = between(&a, &b, Some(1.0)).unwrap();
        assert!((l.rank_cores.unwrap() - 0.3).abs() < 1e-9, "{l:?}");
        assert!((l.other_cores - 1.0).abs() < 1e-9, "{l:?}");
        assert!((l.steal_cores - 0.1).abs() < 1e-9, "{l:?}");
        assert!((l.idle_cores - 0.2).abs() < 1e-9, "{l:?}");
        assert!((l.waited_cores.unwrap() - 0.5).abs() < 1e-9, "{l:?}");
        assert_eq!((l.cores, l.seconds), (2, 2.0));
        // Too short to say; never negative, never above the host's cores.
        let c = Sample {
            at: t0 + Duration::from_millis(50),
            ..a
        };
        assert!(between(&a, &c, None).is_none());
        let d = Sample {
            linerate_s: 9.0,
            ..b
        };
        assert_eq!(between(&a, &d, None).unwrap().other_cores, 0.0);
        let e = Sample {
            linerate_s: -30.0,
            ..b
        };
        assert_eq!(between(&a, &e, None).unwrap().other_cores, 2.0);
    }

    fn write(p: &Path, path: &str, text: &str) {
        let f = p.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    }

    #[test]
    fn linerate_processes_and_this_ones_threads_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        // This process (whatever its name), another linerate, another program, junk: every
        // linerate's CPU, this process's threads' waits.
        let me = std::process::id();
        let stat = |pid: u32, comm: &str, utime: u32| {
            format!("{pid} ({comm}) S 1 1 1 0 -1 0 0 0 0 0 {utime} 50 0 0")
        };
        write(p, &format!("{me}/stat"), &stat(me, "cargo test", 250));
        write(p, &format!("{me}/task/{me}/schedstat"), "5 2000000000 9\n");
        write(p, &format!("{me}/task/7/schedstat"), "5 500000000 9\n");
        write(p, "200/stat", &stat(200, "linerate", 50));
        write(p, "200/task/200/schedstat", "5 4000000000 9\n");
        write(p, "300/stat", &stat(300, "stress-ng (x)", 900));
        write(p, "300/task/300/schedstat", "5 9000000000 9\n");
        write(p, "self/stat", "garbage");
        let l = linerate_processes(p);
        assert!((l.cpu_s - 4.0).abs() < 1e-9, "{l:?}");
        assert!((l.own_cpu_s - 3.0).abs() < 1e-9, "{l:?}");
        assert_eq!(
            l.waits,
            HashMap::from([(u64::from(me), 2_000_000_000), (7, 500_000_000)])
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(linerate_processes(empty.path()).waits.is_empty());
    }

    #[test]
    fn a_thread_that_exits_does_not_take_the_others_wait_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let me = std::process::id();
        let stat = |busy: u64| {
            format!("cpu  {busy} 0 0 100 0 0 0 0 0 0\ncpu0 {busy} 0 0 100 0 0 0 0 0 0\n")
        };
        let task = |tid: u32| format!("{me}/task/{tid}/schedstat");
        write(p, "stat", &stat(100));
        write(
            p,
            &format!("{me}/stat"),
            &format!("{me} (linerate) S 1 1 1 0 -1 0 0 0 0 0 10 0 0 0"),
        );
        write(p, &task(100), "5 1000000000 9\n");
        write(p, &task(101), "5 3000000000 9\n");
        let mut s = Sampler::at(p);
        // Thread 101 ends; thread 100 waits 0.2 s more; thread 102 starts and waits 0.1 s.
        std::fs::remove_dir_all(p.join(format!("{me}/task/101"))).unwrap();
        write(p, &task(100), "5 1200000000 9\n");
        write(p, &task(102), "5 100000000 9\n");
        write(p, "stat", &stat(150));
        std::thread::sleep(Duration::from_millis(300));
        let l = s.since_last().expect("a load");
        let w = l.waited_cores.unwrap() * l.seconds;
        assert!((w - 0.3).abs() < 1e-6, "{l:?}");
        assert!(l.other_cores > 0.0, "{l:?}");
    }

    #[test]
    fn this_host_can_be_sampled() {
        let mut s = Sampler::new();
        std::thread::sleep(Duration::from_millis(300));
        let l = s.since_last().expect("/proc/stat");
        assert!(l.cores >= 1 && l.seconds >= 0.2, "{l:?}");
        assert!(l.other_cores >= 0.0 && l.idle_cores >= 0.0, "{l:?}");
    }
}
