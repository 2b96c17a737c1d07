//! How busy this rank's host is apart from linerate: each rank samples the host's CPU counters
//! (`/proc/stat`), linerate's own CPU time and the time linerate's threads spent runnable but
//! waiting for a CPU (every process named `linerate`, this one included: `/proc/PID/stat` and
//! each thread's `/proc/PID/task/TID/schedstat`) on each heartbeat, and sends the difference
//! since the previous one. The coordinator gives every measurement the load of its two hosts
//! over its round, so that a slow retest on a host whose CPU other programs held, while the
//! test's threads waited for it, confirms nothing (`linerate_mesh::judge`).

use std::path::Path;
use std::time::Instant;

use linerate_mesh::HostLoad;

/// Cumulative CPU counters of this host, seconds.
#[derive(Debug, Clone, Copy)]
pub struct CpuCounters {
    at: Instant,
    cores: u32,
    /// user + nice + system of every process (interrupts left out: on loopback most of them
    /// are the test's own traffic).
    busy_s: f64,
    /// idle + iowait.
    idle_s: f64,
    steal_s: f64,
    /// user + system of every process named `linerate`.
    linerate_s: f64,
    /// Time their threads waited on a run queue; `None` without schedstat (CONFIG_SCHED_INFO).
    waited_s: Option<f64>,
}

/// The `cpu` line of `/proc/stat`: (busy, idle, steal) in clock ticks, and the `cpuN` lines.
fn parse_stat(text: &str) -> Option<(u64, u64, u64, u32)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    let get = |i: usize| v.get(i).copied().unwrap_or(0);
    let cores = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    Some((
        get(0) + get(1) + get(2),
        get(3) + get(4),
        get(7),
        u32::try_from(cores).unwrap_or(u32::MAX),
    ))
}

/// Clock ticks per second of `/proc/stat`: USER_HZ, which the kernel keeps at 100 for user
/// space on every architecture Linux runs on (whatever its internal HZ).
const USER_HZ: f64 = 100.0;

/// This host's counters now; `None` where `/proc/stat` cannot be read.
pub fn sample() -> Option<CpuCounters> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let (busy, idle, steal, cores) = parse_stat(&text)?;
    let hz = USER_HZ;
    let (linerate_s, waited_s) = linerate_processes(Path::new("/proc"));
    Some(CpuCounters {
        at: Instant::now(),
        cores,
        busy_s: busy as f64 / hz,
        idle_s: idle as f64 / hz,
        steal_s: steal as f64 / hz,
        linerate_s,
        waited_s,
    })
}

/// CPU seconds (user + system) of this process and of every process named `linerate` under
/// `proc`, and the seconds their threads waited on a run queue (`None` when no thread has a
/// `schedstat`). At most [`MAX_PROCESSES`] entries of `proc` are looked at.
fn linerate_processes(proc: &Path) -> (f64, Option<f64>) {
    let me = std::process::id().to_string();
    let Ok(rd) = std::fs::read_dir(proc) else {
        return (0.0, None);
    };
    let (mut cpu, mut waited, mut any_wait) = (0.0, 0.0, false);
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
        cpu += (get(11) + get(12)) as f64 / USER_HZ;
        let Ok(tasks) = std::fs::read_dir(e.path().join("task")) else {
            continue;
        };
        for t in tasks.take(MAX_THREADS).flatten() {
            // "on-cpu-ns run-queue-wait-ns timeslices"
            if let Some(w) = std::fs::read_to_string(t.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            {
                waited += w as f64 / 1e9;
                any_wait = true;
            }
        }
    }
    (cpu, any_wait.then_some(waited))
}

/// Bounds on the walk of `/proc` (a host with more processes is not measured more precisely).
const MAX_PROCESSES: usize = 65_536;
const MAX_THREADS: usize = 4096;

/// The load between two samples; `None` for an interval too short for the counters (they
/// tick at USER_HZ).
pub fn between(a: &CpuCounters, b: &CpuCounters) -> Option<HostLoad> {
    let secs = b.at.saturating_duration_since(a.at).as_secs_f64();
    if secs < 0.2 {
        return None;
    }
    let per = |x: f64| (x / secs).max(0.0);
    Some(HostLoad {
        cores: b.cores,
        other_cores: per(b.busy_s - a.busy_s - (b.linerate_s - a.linerate_s)),
        steal_cores: per(b.steal_s - a.steal_s),
        idle_cores: per(b.idle_s - a.idle_s),
        // A thread that ended between the samples takes its wait with it: never below zero.
        waited_cores: a.waited_s.zip(b.waited_s).map(|(x, y)| per(y - x)),
        seconds: secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_is_read_by_column() {
        let text = "cpu  100 20 30 400 5 6 7 8 0 0\ncpu0 50 10 15 200 2 3 3 4 0 0\ncpu1 50 10 15 200 3 3 4 4 0 0\nintr 1\n";
        assert_eq!(parse_stat(text), Some((150, 405, 8, 2)));
        assert_eq!(parse_stat("intr 1\n"), None);
        assert_eq!(parse_stat("cpu  1 2 x\n"), None);
    }

    #[test]
    fn the_load_is_what_others_took_per_second() {
        let t0 = Instant::now();
        let a = CpuCounters {
            at: t0,
            cores: 2,
            busy_s: 10.0,
            idle_s: 5.0,
            steal_s: 1.0,
            linerate_s: 3.0,
            waited_s: Some(7.0),
        };
        let b = CpuCounters {
            at: t0 + std::time::Duration::from_secs(2),
            busy_s: 13.0,
            idle_s: 5.4,
            steal_s: 1.2,
            linerate_s: 4.0,
            waited_s: Some(8.0),
            ..a
        };
        let l = between(&a, &b).unwrap();
        assert!((l.other_cores - 1.0).abs() < 1e-9, "{l:?}");
        assert!((l.steal_cores - 0.1).abs() < 1e-9, "{l:?}");
        assert!((l.idle_cores - 0.2).abs() < 1e-9, "{l:?}");
        assert!((l.waited_cores.unwrap() - 0.5).abs() < 1e-9, "{l:?}");
        assert_eq!((l.cores, l.seconds), (2, 2.0));
        // Too short to say, and never negative.
        let c = CpuCounters {
            at: t0 + std::time::Duration::from_millis(50),
            ..a
        };
        assert!(between(&a, &c).is_none());
        let d = CpuCounters {
            linerate_s: 9.0,
            ..b
        };
        assert_eq!(between(&a, &d).unwrap().other_cores, 0.0);
    }

    #[test]
    fn this_host_can_be_sampled() {
        let a = sample().expect("/proc/stat");
        assert!(a.cores >= 1);
        assert!(a.linerate_s >= 0.0 && a.busy_s > 0.0);
    }

    #[test]
    fn linerate_processes_and_their_threads_waits_are_summed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let write = |path: &str, text: &str| {
            let f = p.join(path);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        // Two linerate processes (one with a space in nothing else), another program, junk.
        write(
            "100/stat",
            "100 (linerate) S 1 1 1 0 -1 0 0 0 0 0 250 50 0 0",
        );
        write("100/task/100/schedstat", "5 2000000000 9\n");
        write("100/task/101/schedstat", "5 500000000 9\n");
        write(
            "200/stat",
            "200 (linerate) R 1 1 1 0 -1 0 0 0 0 0 100 0 0 0",
        );
        write(
            "300/stat",
            "300 (stress-ng (x)) R 1 1 1 0 -1 0 0 0 0 0 900 0 0 0",
        );
        write("300/task/300/schedstat", "5 9000000000 9\n");
        write("self/stat", "garbage");
        let (cpu, waited) = linerate_processes(p);
        assert!((cpu - 4.0).abs() < 1e-9, "{cpu}");
        assert!((waited.unwrap() - 2.5).abs() < 1e-9, "{waited:?}");
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(linerate_processes(empty.path()), (0.0, None));
    }
}
