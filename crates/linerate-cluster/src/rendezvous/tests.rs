use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

fn req(rank: u32, size: u32) -> Request {
    Request {
        rank,
        size,
        coordinator: None,
        rendezvous_dir: None,
        job: None,
        hosts: Vec::new(),
        port: DEFAULT_COORDINATOR_PORT,
        advertise: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        timeout: Duration::from_secs(5),
    }
}

fn find(r: &Request, pairs: &[(&str, &str)]) -> Result<Coordinator, RendezvousError> {
    let env = env_of(pairs);
    find_coordinator(r, &|k| env.get(k).cloned())
}

/// A port nothing listens on right now (bound by the kernel, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn host_port_parsing() {
    assert_eq!(parse_host_port("n01:5302", 0), Ok(("n01".into(), 5302)));
    assert_eq!(parse_host_port("n01", 9), Ok(("n01".into(), 9)));
    assert_eq!(parse_host_port("[fd00::1]:7", 0), Ok(("fd00::1".into(), 7)));
    assert_eq!(parse_host_port("[fd00::1]", 9), Ok(("fd00::1".into(), 9)));
    assert_eq!(join_host_port("fd00::1", 7), "[fd00::1]:7");
    assert_eq!(join_host_port("n01", 7), "n01:7");
    for bad in [
        "n01",
        "n01:",
        ":5302",
        "n01:0",
        "n01:70000",
        "fd00::1:5302",
        "[]:1",
        "[x]:1",
        "[fd00::1]7",
        "[fd00::1",
    ] {
        assert!(parse_host_port(bad, 0).is_err(), "{bad} accepted");
    }
}

#[test]
fn the_flag_wins_and_rank_0_listens_there() {
    let port = free_port();
    let mut r = req(0, 2);
    r.coordinator = Some(format!("127.0.0.1:{port}"));
    r.rendezvous_dir = Some(PathBuf::from("/nonexistent"));
    r.hosts = vec!["other".into()];
    let c = find(&r, &[("SLURM_STEP_NODELIST", "n[0-1]")]).unwrap();
    assert_eq!(c.method, Method::Flag);
    assert_eq!(c.addr, format!("127.0.0.1:{port}"));
    assert!(c.listens());
    let bound = c.listener.as_ref().unwrap().local_addr().unwrap();
    assert_eq!(bound, SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    assert_eq!(c.resolve(Duration::from_secs(1)).unwrap(), bound);

    let mut r1 = req(1, 2);
    r1.coordinator = r.coordinator.clone();
    let c1 = find(&r1, &[]).unwrap();
    assert!(!c1.listens());
    assert_eq!(c1.addr, c.addr);
    TcpStream::connect(c1.resolve(Duration::from_secs(1)).unwrap()).expect("rank 0 listens");
}

#[test]
fn a_flag_address_that_is_not_ours_is_served_on_every_address() {
    // 192.0.2.1 (TEST-NET-1) is not a local address: rank 0 keeps the port, any address.
    let port = free_port();
    let mut r = req(0, 2);
    r.coordinator = Some(format!("192.0.2.1:{port}"));
    let c = find(&r, &[]).unwrap();
    let bound = c.listener.as_ref().unwrap().local_addr().unwrap();
    assert!(bound.ip().is_unspecified(), "{bound}");
    assert_eq!(bound.port(), port);
}

#[test]
fn a_bad_flag_names_itself() {
    let mut r = req(1, 2);
    r.coordinator = Some("node01:http".into());
    let e = find(&r, &[]).unwrap_err().to_string();
    assert!(
        e.contains("--coordinator \"node01:http\"") && e.contains("port \"http\""),
        "{e}"
    );
    r.coordinator = Some("node01".into());
    assert_eq!(find(&r, &[]).unwrap().addr, "node01:5302");
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut r = req(0, 2);
    r.coordinator = Some(taken.local_addr().unwrap().to_string());
    let e = find(&r, &[]).unwrap_err();
    assert!(matches!(e, RendezvousError::Bind { .. }), "{e}");
    assert!(e.to_string().contains("cannot listen"), "{e}");
}

#[test]
fn slurm_nodelist_then_indexed_job_then_hosts() {
    let mut r = req(1, 4);
    r.hosts = vec!["h0".into(), "h1".into()];
    let slurm = [("SLURM_STEP_NODELIST", "rack[1-2]-n[07-08]")];
    let c = find(&r, &slurm).unwrap();
    assert_eq!(
        (c.method, c.addr.as_str()),
        (Method::SlurmNodelist, "rack1-n07:5302")
    );
    assert!(!c.listens());
    let why: Vec<Method> = c.skipped.iter().map(|s| s.method).collect();
    assert_eq!(why, [Method::Flag, Method::Pmix, Method::Directory]);

    let k8s = [
        ("JOB_COMPLETION_INDEX", "1"),
        ("JOB_NAME", "mesh"),
        ("SUBDOMAIN", "fabric"),
    ];
    let c = find(&r, &k8s).unwrap();
    assert_eq!(
        (c.method, c.addr.as_str()),
        (Method::IndexedJob, "mesh-0.fabric:5302")
    );
    assert_eq!(c.skipped.last().unwrap().method, Method::SlurmNodelist);

    let c = find(&r, &[]).unwrap();
    assert_eq!((c.method, c.addr.as_str()), (Method::HostList, "h0:5302"));
    assert_eq!(c.skipped.len(), 5);
}

#[test]
fn rank_0_of_a_host_derived_method_listens_on_the_port() {
    let mut r = req(0, 2);
    r.port = free_port();
    r.hosts = vec!["localhost".into(), "b".into()];
    let c = find(&r, &[]).unwrap();
    assert_eq!(c.method, Method::HostList);
    let bound = c.listener.as_ref().unwrap().local_addr().unwrap();
    assert_eq!(bound.port(), r.port);
    TcpStream::connect(c.resolve(Duration::from_secs(2)).unwrap()).expect("rank 0 listens");

    r.port = 0;
    let e = find(&r, &[]).unwrap_err();
    assert!(matches!(e, RendezvousError::NoPort { .. }), "{e}");
}

#[test]
fn nothing_to_go_on_lists_every_method_tried() {
    let e = find(&req(2, 4), &[]).unwrap_err().to_string();
    for m in [
        "--coordinator",
        "PMIx",
        "--rendezvous-dir",
        "SLURM_STEP_NODELIST",
        "JOB_NAME",
        "--hosts",
    ] {
        assert!(e.contains(m), "{m} missing from: {e}");
    }
}

#[test]
fn a_malformed_nodelist_is_an_error_naming_it() {
    let e = find(&req(1, 2), &[("SLURM_STEP_NODELIST", "n[3-")]).unwrap_err();
    assert!(e.to_string().contains("SLURM_STEP_NODELIST"), "{e}");
}

#[test]
fn job_keys_and_file_names() {
    let env = env_of(&[
        ("SLURM_JOB_ID", "42"),
        ("SLURM_STEP_ID", "3"),
        ("PMIX_NAMESPACE", "ns"),
    ]);
    let get = |k: &str| env.get(k).cloned();
    assert_eq!(job_key(Some("mine"), &get), Some(("mine".into(), "--job")));
    assert_eq!(job_key(None, &get).unwrap().0, "42.3");
    let env = env_of(&[("PMIX_NAMESPACE", "801767425")]);
    assert_eq!(
        job_key(None, &|k| env.get(k).cloned()).unwrap().0,
        "801767425"
    );
    assert_eq!(job_key(None, &|_| None), None);
    let f = coordinator_file(Path::new("/shared"), "../etc/x y");
    assert_eq!(f, Path::new("/shared/linerate-mesh-.._etc_x_y.coord"));
}

fn dir_req(rank: u32, dir: &Path, job: &str) -> Request {
    let mut r = req(rank, 3);
    r.rendezvous_dir = Some(dir.to_path_buf());
    r.job = Some(job.into());
    r.port = 0;
    r
}

#[test]
fn the_directory_carries_rank_0s_address_to_ranks_that_started_first() {
    let d = tempfile::tempdir().unwrap();
    let job = format!("t{}", std::process::id());
    let r1 = dir_req(1, d.path(), &job);
    let waiting = std::thread::spawn(move || find(&r1, &[]).map(|c| (c.addr, c.method)));
    std::thread::sleep(Duration::from_millis(300));
    let c0 = find(&dir_req(0, d.path(), &job), &[]).unwrap();
    assert_eq!(c0.method, Method::Directory);
    let port = c0.listener.as_ref().unwrap().local_addr().unwrap().port();
    assert_ne!(port, 0);
    assert_eq!(c0.addr, format!("127.0.0.1:{port}"));
    let path = coordinator_file(d.path(), &job);
    assert!(path.exists());
    let (addr, method) = waiting.join().unwrap().unwrap();
    assert_eq!(
        (addr.as_str(), method),
        (c0.addr.as_str(), Method::Directory)
    );
    // A rank that starts after rank 0 finds it too, and reaches it.
    let late = find(&dir_req(2, d.path(), &job), &[]).unwrap();
    let mut s = TcpStream::connect(late.resolve(Duration::from_secs(1)).unwrap()).unwrap();
    let (mut a, _) = c0.listener.as_ref().unwrap().accept().unwrap();
    s.write_all(b"2").unwrap();
    let mut b = [0u8; 1];
    a.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"2");
    // No temp file is left, and the file goes with rank 0's coordinator.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    drop(c0);
    assert!(!path.exists());
}

fn write_record(path: &Path, rec: &dir_record::Record) {
    std::fs::write(path, serde_json::to_vec(rec).unwrap()).unwrap();
}

mod dir_record {
    /// The file's shape, as another run would have written it.
    #[derive(serde::Serialize)]
    pub struct Record {
        pub job: String,
        pub size: u32,
        pub addr: String,
        pub host: String,
        pub pid: u32,
        pub written_unix_ms: u64,
    }
}

#[test]
fn a_stale_or_foreign_file_is_refused_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let job = "stale";
    let path = coordinator_file(d.path(), job);
    let now_ms = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut r = dir_req(1, d.path(), job);
    r.timeout = Duration::from_millis(400);
    let cases = [
        (job, 3, now_ms - 3_600_000, "older run"),
        (job, 8, now_ms, "run of 8 ranks"),
    ];
    for (j, size, at, expect) in cases {
        let rec = dir_record::Record {
            job: j.into(),
            size,
            addr: "10.0.0.1:1".into(),
            host: "old".into(),
            pid: 1,
            written_unix_ms: at,
        };
        write_record(&path, &rec);
        let e = find(&r, &[]).unwrap_err().to_string();
        assert!(e.contains(expect) && e.contains("was refused"), "{e}");
    }
    std::fs::write(&path, b"garbage").unwrap();
    let e = find(&r, &[]).unwrap_err().to_string();
    assert!(e.contains("not a linerate rendezvous file"), "{e}");
    std::fs::remove_file(&path).unwrap();
    let e = find(&r, &[]).unwrap_err().to_string();
    assert!(
        e.contains("did not write") && e.contains("linerate-mesh-stale.coord"),
        "{e}"
    );
}

#[test]
fn the_directory_needs_a_job_key_and_a_directory() {
    let d = tempfile::tempdir().unwrap();
    let mut r = dir_req(1, d.path(), "x");
    r.job = None;
    let e = find(&r, &[]).unwrap_err().to_string();
    assert!(e.contains("--job"), "{e}");
    // Slurm's job id keys the file: rank 1 waits for it (and times out here).
    r.timeout = Duration::from_millis(200);
    let e = find(&r, &[("SLURM_JOB_ID", "9")]).unwrap_err().to_string();
    assert!(e.contains("linerate-mesh-9.coord"), "{e}");
    r.rendezvous_dir = Some(d.path().join("missing"));
    let e = find(&r, &[("SLURM_JOB_ID", "9")]).unwrap_err().to_string();
    assert!(e.contains("not a directory"), "{e}");
}

#[test]
fn a_published_address_moves_off_a_taken_port() {
    let taken = TcpListener::bind("0.0.0.0:0").unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut r = dir_req(0, d.path(), "taken");
    r.port = taken.local_addr().unwrap().port();
    let c = find(&r, &[]).unwrap();
    let port = c.listener.as_ref().unwrap().local_addr().unwrap().port();
    assert_ne!(port, r.port);
    assert_eq!(c.addr, format!("127.0.0.1:{port}"));
}
