//! `linerate mesh` launched for real by the launchers clusters use: Open MPI's `mpirun` (in the
//! host namespace through its PMIx server; into one network namespace per rank through a
//! wrapper, with `--coordinator`; inside a Slurm allocation, emulated by stale `SLURM_*`
//! values), `pdsh -R exec` with `--hosts`, and the Kubernetes Indexed Job contract
//! (`JOB_COMPLETION_INDEX`, pod host names, `<job>-0.<subdomain>` resolved through per-namespace
//! `/etc/netns/NAME/hosts`).
//!
//! What is checked is functional: every rank joined under the rank its launcher gave it, the
//! coordinator was found, every ordered pair was measured. Not speeds: the links are loopback
//! or veths on a shared 2-core machine (the exit status may be 1 when one was judged slow,
//! never 2). Needs `mpirun` (Debian `openmpi-bin`) and `pdsh`; the namespace tests need root
//! (`ip netns`). Each run is bounded; namespaces, the bridge and the hosts files are removed by
//! name on drop.

mod common;

use linerate_testkit::schema;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::{is_root, run, BIN};
use serde_json::Value;

/// The longest a whole launch may take (2 ranks take ~3 s, 3 ranks ~12 s here).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// What every mesh is given: short tests, a bounded join.
const MESH_ARGS: [&str; 5] = ["--time", "1", "--join-timeout", "30", "--json"];

static NEXT: AtomicU32 = AtomicU32::new(0);

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// A command without the launcher variables of whatever runs the tests (a CI job under Slurm
/// would otherwise decide the ranks).
fn command(prog: &str) -> Command {
    let mut c = Command::new(prog);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if [
            "OMPI_",
            "PMIX_",
            "PMI_",
            "SLURM_",
            "JOB_COMPLETION_INDEX",
            "JOB_NAME",
            "SUBDOMAIN",
        ]
        .iter()
        .any(|p| k.starts_with(p))
        {
            c.env_remove(k);
        }
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn drain(mut r: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Waits for `children` within [`RUN_TIMEOUT`]; kills (by their pid) any still running then.
fn wait_all(mut children: Vec<Child>) -> Vec<Output> {
    let readers: Vec<_> = children
        .iter_mut()
        .map(|c| {
            (
                drain(c.stdout.take().unwrap()),
                drain(c.stderr.take().unwrap()),
            )
        })
        .collect();
    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut late = false;
    for c in &mut children {
        while c.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                late = true;
                let _ = c.kill();
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
    let outs: Vec<Output> = children
        .into_iter()
        .zip(readers)
        .map(|(mut c, (o, e))| Output {
            status: c.wait().unwrap(),
            stdout: o.join().unwrap(),
            stderr: e.join().unwrap(),
        })
        .collect();
    assert!(
        !late,
        "a launch ran past {} s: {}",
        RUN_TIMEOUT.as_secs(),
        show(&outs)
    );
    outs
}

fn show(outs: &[Output]) -> String {
    outs.iter()
        .map(|o| {
            format!(
                "[{}]\n{}\n{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The final document in `stdout`, after removing pdsh's `host: ` prefix when given.
fn document(stdout: &[u8], prefix: Option<&str>) -> Value {
    let text = String::from_utf8_lossy(stdout);
    let body: String = match prefix {
        Some(p) => text
            .lines()
            .filter_map(|l| l.strip_prefix(p))
            .collect::<Vec<_>>()
            .join("\n"),
        None => text.to_string(),
    };
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("no JSON document ({e}) in:\n{text}"))
}

/// The document matches its schema, every rank joined, none was lost, and every ordered pair
/// was measured in the rounds.
fn check_mesh(doc: &Value, n: usize) {
    schema::assert_matches("mesh.schema.json", doc);
    assert_eq!(doc["size"], n, "{doc}");
    assert_eq!(doc["lost"], serde_json::json!([]), "{doc}");
    let ranks = doc["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), n, "{doc}");
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i, "{r}");
        assert!(r["data_addr"].is_string(), "rank {i} never joined: {r}");
    }
    let ms = doc["measurements"].as_array().unwrap();
    for tx in 0..n {
        for rx in (0..n).filter(|&rx| rx != tx) {
            let m = ms
                .iter()
                .find(|m| m["phase"] == "round" && m["tx"] == tx && m["rx"] == rx)
                .unwrap_or_else(|| panic!("{tx}→{rx} not measured: {doc}"));
            assert!(m["gbps"].as_f64().is_some_and(|g| g > 0.0), "{m}");
        }
    }
}

/// 0: every link ok; 1: one judged bad on this shared machine. 2 (could not run) fails.
fn check_status(o: &Output) {
    let code = o.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "exit {code:?}: {}",
        show(std::slice::from_ref(o))
    );
}

fn mpirun(np: u32) -> Command {
    let mut c = command("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ]);
    c
}

#[test]
fn mpirun_in_the_host_namespace_finds_rank_0_through_pmix() {
    if !have("mpirun") {
        return linerate_testkit::skip(
            "mpirun not installed (openmpi-bin; scripts/setup-tests.sh)",
        );
    }
    let child = mpirun(3)
        .arg(BIN)
        .arg("mesh")
        .args(MESH_ARGS)
        .spawn()
        .unwrap();
    let out = wait_all(vec![child]).remove(0);
    check_status(&out);
    let doc = document(&out.stdout, None);
    check_mesh(&doc, 3);
    every_rank_from(&doc, "open_mpi");
    found_by(&doc, "pmix", &["flag"]);
}

/// Every rank reported where its number came from, all from the same source.
fn every_rank_from(doc: &Value, source: &str) {
    let ranks = doc["ranks"].as_array().unwrap_or_else(|| panic!("{doc}"));
    assert!(!ranks.is_empty(), "{doc}");
    for r in ranks {
        assert_eq!(r["identity_source"], source, "rank {}: {doc}", r["rank"]);
    }
}

/// The document says how rank 0 found the coordinator, and which methods it passed over first.
fn found_by(doc: &Value, method: &str, skipped: &[&str]) {
    let rv = &doc["rendezvous"];
    assert_eq!(rv["method"], method, "{rv}");
    let got: Vec<&str> = rv["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("{rv}"))
        .iter()
        .map(|k| k["method"].as_str().unwrap())
        .collect();
    assert_eq!(got, skipped, "{rv}");
}

#[test]
fn mpirun_inside_a_slurm_allocation_takes_the_mpi_rank() {
    if !have("mpirun") {
        return linerate_testkit::skip(
            "mpirun not installed (openmpi-bin; scripts/setup-tests.sh)",
        );
    }
    // What `salloc -N1` then `mpirun -np 2` leaves in every rank: the allocation's one task.
    let stale = [
        "SLURM_PROCID=0",
        "SLURM_NTASKS=1",
        "SLURM_JOB_ID=9",
        "SLURM_STEP_ID=0",
        "SLURM_STEP_NODELIST=n[0]",
    ];
    let mut c = mpirun(2);
    for v in stale {
        c.args(["-x", v]);
    }
    let child = c.arg(BIN).arg("mesh").args(MESH_ARGS).spawn().unwrap();
    let out = wait_all(vec![child]).remove(0);
    check_status(&out);
    let doc = document(&out.stdout, None);
    check_mesh(&doc, 2);
    every_rank_from(&doc, "open_mpi");
    assert!(
        doc["notes"].to_string().contains("ignores SLURM_NTASKS=1"),
        "{doc}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("OMPI_COMM_WORLD_RANK=1 ignores SLURM_PROCID=0"),
        "{err}"
    );
}

/// Network namespaces `{prefix}n{i}` on a bridge, `198.18.{100+k}.{10+i}` each, with
/// `/etc/netns/{ns}/hosts` naming every node; all removed by name on drop.
struct Fabric {
    prefix: String,
    k: u32,
    bridge: String,
    n: usize,
}

impl Fabric {
    /// `names(i)`: the host names of node i in every hosts file. None (skip recorded) where
    /// namespaces cannot be made.
    fn new(n: usize, names: &dyn Fn(&Fabric, usize) -> Vec<String>) -> Option<Fabric> {
        if !is_root() || !have("ip") {
            linerate_testkit::skip("needs root and iproute2 for network namespaces");
            return None;
        }
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let f = Fabric {
            prefix: format!("lrl{pid}x{k}"),
            k,
            // Interface names have at most 15 characters.
            bridge: format!("lrl{}b{k}", pid % 1_000_000),
            n,
        };
        if let Err(e) = run("ip", &["link", "add", &f.bridge, "type", "bridge"]) {
            linerate_testkit::skip(format_args!("cannot create a bridge: {e}"));
            return None;
        }
        run("ip", &["link", "set", &f.bridge, "up"]).unwrap();
        let mut hosts = String::from("127.0.0.1 localhost\n");
        for i in 0..n {
            for name in names(&f, i) {
                writeln!(hosts, "{} {name}", f.ip(i)).unwrap();
            }
        }
        for i in 0..n {
            f.add_node(i, &hosts);
        }
        Some(f)
    }

    fn add_node(&self, i: usize, hosts: &str) {
        let ns = self.ns(i);
        let veth = format!("lrl{}h{}v{i}", std::process::id() % 1_000_000, self.k);
        let addr = format!("{}/24", self.ip(i));
        run("ip", &["netns", "add", &ns]).unwrap_or_else(|e| panic!("{e}"));
        for args in [
            vec![
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ],
            vec!["link", "set", &veth, "master", &self.bridge, "up"],
            vec!["-n", &ns, "addr", "add", &addr, "dev", "eth0"],
            vec!["-n", &ns, "link", "set", "eth0", "up"],
            vec!["-n", &ns, "link", "set", "lo", "up"],
        ] {
            run("ip", &args).unwrap_or_else(|e| panic!("setting up {ns}: {e}"));
        }
        let dir = self.etc(i);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hosts"), hosts).unwrap();
    }

    fn ns(&self, i: usize) -> String {
        format!("{}n{i}", self.prefix)
    }

    /// Each fabric its own /24 (they never meet: the bridges carry no host address).
    fn ip(&self, i: usize) -> String {
        format!("198.18.{}.{}", 100 + self.k % 100, 10 + i)
    }

    fn etc(&self, i: usize) -> PathBuf {
        Path::new("/etc/netns").join(self.ns(i))
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        let quiet = |args: &[&str]| {
            let _ = Command::new("ip")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        // Deleting a namespace deletes its eth0 and with it the veth's host end.
        for i in 0..self.n {
            quiet(&["netns", "del", &self.ns(i)]);
            let _ = std::fs::remove_dir_all(self.etc(i));
        }
        quiet(&["link", "del", &self.bridge]);
    }
}

#[test]
fn mpirun_with_a_wrapper_into_each_ranks_namespace_and_coordinator() {
    if !have("mpirun") {
        return linerate_testkit::skip(
            "mpirun not installed (openmpi-bin; scripts/setup-tests.sh)",
        );
    }
    let Some(fab) = Fabric::new(2, &|_, _| Vec::new()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("enter-rank-ns");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec ip netns exec {}n$OMPI_COMM_WORLD_RANK \"$@\"\n",
            fab.prefix
        ),
    )
    .unwrap();
    run("chmod", &["+x", wrapper.to_str().unwrap()]).unwrap();
    let coord = format!("{}:5302", fab.ip(0));
    let child = mpirun(2)
        .arg(&wrapper)
        .args([BIN, "mesh", "--coordinator", &coord])
        .args(MESH_ARGS)
        .spawn()
        .unwrap();
    let out = wait_all(vec![child]).remove(0);
    check_status(&out);
    let doc = document(&out.stdout, None);
    check_mesh(&doc, 2);
    found_by(&doc, "flag", &[]);
    // Each rank's data address is its own namespace's, the one that routes to the coordinator.
    for i in 0..2 {
        let a = doc["ranks"][i]["data_addr"].as_str().unwrap();
        assert!(a.starts_with(&format!("{}:", fab.ip(i))), "rank {i} at {a}");
    }
}

#[test]
fn pdsh_exec_with_hosts_and_self() {
    if !have("pdsh") {
        return linerate_testkit::skip("pdsh not installed (scripts/setup-tests.sh)");
    }
    // The host names are the namespaces' names; each hosts file maps them to their addresses.
    let Some(fab) = Fabric::new(2, &|f, i| vec![f.ns(i)]) else {
        return;
    };
    let list = format!("{}n[0-1]", fab.prefix);
    let child = command("pdsh")
        .args([
            "-R", "exec", "-w", &list, "ip", "netns", "exec", "%h", BIN, "mesh",
        ])
        .args(["--hosts", &list, "--self", "%h"])
        .args(MESH_ARGS)
        .spawn()
        .unwrap();
    let out = wait_all(vec![child]).remove(0);
    let doc = document(&out.stdout, Some(&format!("{}: ", fab.ns(0))));
    check_mesh(&doc, 2);
    every_rank_from(&doc, "host_list");
    found_by(
        &doc,
        "host_list",
        &["flag", "pmix", "directory", "slurm_nodelist", "indexed_job"],
    );
    for i in 0..2 {
        let a = doc["ranks"][i]["data_addr"].as_str().unwrap();
        assert!(a.starts_with(&format!("{}:", fab.ip(i))), "rank {i} at {a}");
    }
}

#[test]
fn kubernetes_indexed_job_contract() {
    if !have("unshare") {
        return linerate_testkit::skip("unshare not installed (util-linux)");
    }
    let job = format!("lrl{}j", std::process::id());
    let sub = "mesh-svc";
    let Some(fab) = Fabric::new(2, &|_, i| {
        vec![format!("{job}-{i}.{sub}"), format!("{job}-{i}")]
    }) else {
        return;
    };
    // Each pod: its namespace, its own host name (`<job>-<i>`), JOB_COMPLETION_INDEX, and the
    // two variables the manifest in docs/mesh-launchers.md sets.
    let children: Vec<Child> = (0..2)
        .map(|i| {
            command("ip")
                .args(["netns", "exec", &fab.ns(i), "unshare", "--uts", "sh", "-c"])
                .arg("echo \"$0\" > /proc/sys/kernel/hostname && exec \"$@\"")
                .args([&format!("{job}-{i}"), BIN, "mesh", "--size", "2"])
                .args(MESH_ARGS)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("JOB_NAME", &job)
                .env("SUBDOMAIN", sub)
                .spawn()
                .unwrap()
        })
        .collect();
    let outs = wait_all(children);
    check_status(&outs[0]);
    assert!(
        outs[1].stdout.is_empty(),
        "rank 1 printed: {}",
        show(&outs[1..])
    );
    let doc = document(&outs[0].stdout, None);
    check_mesh(&doc, 2);
    every_rank_from(&doc, "indexed_job");
    found_by(
        &doc,
        "indexed_job",
        &["flag", "pmix", "directory", "slurm_nodelist"],
    );
    for i in 0..2 {
        assert_eq!(doc["ranks"][i]["host"], format!("{job}-{i}"), "{doc}");
    }
}

#[test]
fn a_shared_directory_with_a_job_name_and_no_launcher() {
    // An ssh loop with a shared directory: rank and size by hand, rank 1 started first.
    let dir = tempfile::tempdir().unwrap();
    let job = format!("launchers-{}", std::process::id());
    let rank = |r: u32| {
        command(BIN)
            .args([
                "mesh",
                "--rank",
                &r.to_string(),
                "--size",
                "2",
                "--bind",
                "127.0.0.1",
            ])
            .arg("--rendezvous-dir")
            .arg(dir.path())
            .args(["--job", &job])
            .args(MESH_ARGS)
            .spawn()
            .unwrap()
    };
    let first = rank(1);
    thread::sleep(Duration::from_millis(500));
    let outs = wait_all(vec![rank(0), first]);
    check_status(&outs[0]);
    assert!(
        outs[1].stdout.is_empty(),
        "rank 1 printed: {}",
        show(&outs[1..])
    );
    let doc = document(&outs[0].stdout, None);
    check_mesh(&doc, 2);
    found_by(&doc, "directory", &["flag", "pmix"]);
    // Rank 0's file is gone with its run.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
