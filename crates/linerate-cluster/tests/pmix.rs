//! The PMIx rendezvous for real: `mpirun --oversubscribe -np 4` runs this test binary's
//! ignored `rank` test as each rank, in the host namespace on loopback (mpirun's PMIx server
//! listens on the host's loopback, which a rank inside a network namespace cannot reach).
//! Needs Open MPI's `mpirun` (Debian `openmpi-bin`, which brings `libpmix2`); skipped without.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use linerate_cluster::rendezvous::{find_coordinator, pmix_probe, Request};
use linerate_mesh::launch::{identify, LaunchArgs};
use serde_json::Value;

/// Each rank's bound on the exchange; the whole mpirun is bounded at twice that.
const TIMEOUT: Duration = Duration::from_secs(20);
/// What the parent asks each rank to do (`probe`, `find`, `find:DIR`).
const MODE: &str = "LINERATE_TEST_RANK_MODE";

fn mpirun() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("mpirun"))
            .find(|f| f.is_file())
    })
}

/// Runs `np` ranks of this binary's `rank` test under mpirun with `extra` mpirun options;
/// returns each rank's JSON line, or the skip reason.
fn launch(np: u32, mode: &str, extra: &[&str]) -> Result<Vec<Value>, String> {
    let Some(mpirun) = mpirun() else {
        return Err("mpirun not installed (Debian openmpi-bin; scripts/setup-tests.sh)".into());
    };
    let me = std::env::current_exe().unwrap();
    let mut cmd = Command::new(mpirun);
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ])
    .args(["-x", MODE])
    .args(extra)
    .arg(&me)
    .args([
        "--ignored",
        "--exact",
        "rank",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(MODE, mode)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start mpirun");
    let deadline = Instant::now() + 2 * TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun did not end within {} s", (2 * TIMEOUT).as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // mpirun fails a job whose rank ends without PMIx (the lonely test's rank 1), by design.
    assert!(
        out.status.success() || mode == "lonely",
        "mpirun failed ({}): {stdout}\n{stderr}",
        out.status
    );
    let mut lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| l.split_once("RANK ").map(|(_, json)| json))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by_key(|v| v["rank"].as_u64());
    assert_eq!(lines.len(), np as usize, "{stdout}\n{stderr}");
    Ok(lines)
}

#[test]
fn every_rank_reads_the_value_rank_0_put() {
    let lines = match launch(4, "probe", &[]) {
        Ok(l) => l,
        Err(why) => return linerate_testkit::skip(why),
    };
    for (i, v) in lines.iter().enumerate() {
        assert_eq!(v["rank"], i, "{v}");
        assert_eq!(v["from_rank_0"], "value-of-0", "{v}");
        assert_eq!(v["own"], format!("value-of-{i}"), "{v}");
    }
}

#[test]
fn pmix_rendezvous_brings_every_rank_to_rank_0() {
    let lines = match launch(4, "find", &[]) {
        Ok(l) => l,
        Err(why) => return linerate_testkit::skip(why),
    };
    let addr = &lines[0]["addr"];
    for v in &lines {
        assert_eq!(v["method"], "pmix", "{v}");
        assert_eq!(&v["addr"], addr, "{v}");
        assert_eq!(v["listens"], v["rank"] == 0, "{v}");
    }
    // Rank 0 heard each other rank on the address they were given.
    assert_eq!(lines[0]["heard"], serde_json::json!([1, 2, 3]));
}

#[test]
fn without_libpmix_the_directory_is_next() {
    let dir = tempfile::tempdir().unwrap();
    let mode = format!("find:{}", dir.path().display());
    let bad = [
        "-x",
        "LINERATE_LIBPMIX=/nonexistent/linerate-test-libpmix.so",
    ];
    let lines = match launch(3, &mode, &bad) {
        Ok(l) => l,
        Err(why) => return linerate_testkit::skip(why),
    };
    for v in &lines {
        assert_eq!(v["method"], "directory", "{v}");
        let skipped = v["skipped"].to_string();
        assert!(
            skipped.contains("PMIx: cannot load libpmix")
                && skipped.contains("linerate-test-libpmix.so"),
            "{v}"
        );
    }
    assert_eq!(lines[0]["heard"], serde_json::json!([1, 2]));
    // Rank 0's file went with it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_rank_missing_at_the_fence_is_an_error_within_the_timeout() {
    let start = Instant::now();
    let lines = match launch(2, "lonely", &[]) {
        Ok(l) => l,
        Err(why) => return linerate_testkit::skip(why),
    };
    let e = lines[0]["error"].as_str().expect("rank 0 failed");
    // The server's fence timeout (Open MPI 4.1 honours it) or, where a server does not, ours.
    assert!(e.starts_with("PMIx rendezvous: "), "{e}");
    assert!(e.contains("linerate mesh with the same options"), "{e}");
    // Bounded by the 2 s timeout (plus the margin of the PMIx thread and mpirun's start).
    assert!(start.elapsed() < TIMEOUT, "took {:?}", start.elapsed());
}

/// Rank 0 looks for the coordinator with a 2 s timeout; rank 1 never joins the fence.
fn lonely() -> Value {
    let env = |k: &str| std::env::var(k).ok();
    let id = identify(&LaunchArgs::default(), &env, "").expect("rank from mpirun's environment");
    if id.rank != 0 {
        std::thread::sleep(Duration::from_secs(6));
        return serde_json::json!({"rank": id.rank});
    }
    let req = Request {
        rank: 0,
        size: id.size,
        coordinator: None,
        rendezvous_dir: None,
        job: None,
        hosts: Vec::new(),
        port: 0,
        advertise: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        timeout: Duration::from_secs(2),
    };
    // Rank 0 publishes and fences: it is the fence that waits for rank 1.
    let error = find_coordinator(&req, &env).err().map(|e| e.to_string());
    serde_json::json!({"rank": 0, "error": error})
}

/// One rank, run by the tests above under mpirun (ignored when the suite runs).
#[test]
#[ignore = "a rank of the mpirun tests above, run by them"]
fn rank() {
    let mode = std::env::var(MODE).expect("run by the mpirun tests");
    let line = if mode == "probe" {
        probe()
    } else if mode == "lonely" {
        lonely()
    } else {
        find(mode.strip_prefix("find:").map(PathBuf::from))
    };
    println!("RANK {line}");
    std::io::stdout().flush().unwrap();
}

fn probe() -> Value {
    let rank = std::env::var("PMIX_RANK").expect("PMIX_RANK under mpirun");
    let p = pmix_probe(&format!("value-of-{rank}"), TIMEOUT).expect("PMIx probe");
    serde_json::json!({"rank": p.pmix_rank, "from_rank_0": p.from_rank_0, "own": p.own})
}

fn find(dir: Option<PathBuf>) -> Value {
    let env = |k: &str| std::env::var(k).ok();
    let id = identify(&LaunchArgs::default(), &env, "").expect("rank from mpirun's environment");
    let req = Request {
        rank: id.rank,
        size: id.size,
        coordinator: None,
        rendezvous_dir: dir,
        job: None,
        hosts: Vec::new(),
        port: 0,
        advertise: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        timeout: TIMEOUT,
    };
    let c = find_coordinator(&req, &env).expect("rendezvous");
    let mut heard = Vec::new();
    if let Some(l) = &c.listener {
        l.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + TIMEOUT;
        while heard.len() + 1 < id.size as usize {
            match l.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    s.set_read_timeout(Some(TIMEOUT)).unwrap();
                    let mut line = String::new();
                    BufReader::new(s).read_line(&mut line).unwrap();
                    heard.push(line.trim().parse::<u32>().unwrap());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "heard only {heard:?}");
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
        heard.sort_unstable();
    } else {
        let a = c.resolve(TIMEOUT).unwrap();
        let mut s = TcpStream::connect_timeout(&a, TIMEOUT).unwrap();
        writeln!(s, "{}", id.rank).unwrap();
    }
    let skipped: Vec<String> = c.skipped.iter().map(ToString::to_string).collect();
    serde_json::json!({
        "rank": id.rank, "method": c.method, "addr": c.addr,
        "listens": c.listens(), "heard": heard, "skipped": skipped,
    })
}
