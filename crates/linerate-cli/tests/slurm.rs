//! `linerate mesh` under a real Slurm: a single-node cluster in a temporary directory (munged
//! with its own key and socket, slurmctld and slurmd in the foreground with a generated
//! `slurm.conf`: an oversubscribed partition, `proctrack/linuxproc`, no cgroups), then
//! `srun -n4 --overcommit linerate mesh` under the default, `pmi2` and `pmix` MPI plugins, a
//! rank killed mid-run, and a `scancel` of the job.
//!
//! Checked is what the issue found wrong: every rank joins with the identity its plugin gives,
//! every ordered pair is measured, ranks sharing the host are named `host/rank`, a killed rank's
//! links are unreachable or cut short and never a cable, and `scancel` leaves rank 0's document
//! of what was measured. Not speeds (loopback on a shared machine).
//!
//! Needs root (slurmd runs the tasks as their user; the daemons run as root here) and Debian's
//! `slurm-wlm`, `munge` and `libpmix-dev` (`scripts/setup-tests.sh`); elsewhere each test records
//! a skip. Every daemon is stopped by its PID when the test ends, failed or not; every `srun`
//! is bounded by `timeout(1)`; nothing outside the temporary directory is written.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use linerate_testkit::schema;
use serde_json::Value;

use common::{free_port, is_root, BIN};

/// One cluster at a time in this binary: the machine has few cores.
static ONE: Mutex<()> = Mutex::new(());

/// How long an `srun` of a mesh may take before it is killed.
const SRUN_TIMEOUT_S: u32 = 150;

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        || Path::new("/usr/sbin").join(tool).is_file()
}

fn sbin(tool: &str) -> PathBuf {
    let p = Path::new("/usr/sbin").join(tool);
    if p.is_file() {
        p
    } else {
        PathBuf::from(tool)
    }
}

/// A single-node Slurm cluster in a temporary directory; its daemons are stopped by PID on drop.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    _one: MutexGuard<'static, ()>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd first (it ends its steps), then slurmctld, then munged: SIGTERM, then SIGKILL.
        for (_, c) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Cluster {
    /// `None` (after recording the skip) where the cluster cannot be made here.
    fn start() -> Option<Cluster> {
        let one = ONE.lock().unwrap_or_else(PoisonError::into_inner);
        if !is_root() {
            linerate_testkit::skip("needs root to run slurmd and munged");
            return None;
        }
        for tool in ["munged", "slurmctld", "slurmd", "srun", "sinfo", "scancel"] {
            if !have(tool) {
                linerate_testkit::skip(format!(
                    "{tool} not installed (slurm-wlm, munge: scripts/setup-tests.sh)"
                ));
                return None;
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // munged wants every directory on its socket's path searchable by all, its key private.
        chmod(d, 0o755);
        for sub in ["munge", "key", "state", "spool", "log"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        chmod(&d.join("munge"), 0o755);
        chmod(&d.join("key"), 0o700);
        let mut key = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut key)
            .unwrap();
        std::fs::write(d.join("key/munge.key"), key).unwrap();
        chmod(&d.join("key/munge.key"), 0o400);
        // slurmd and slurmctld know themselves by the short host name.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        let cpus = thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let conf = d.join("slurm.conf");
        std::fs::write(&conf, slurm_conf(d, &host, cpus)).unwrap();
        let mut c = Cluster {
            conf,
            daemons: Vec::new(),
            dir,
            _one: one,
        };
        let d = c.dir.path().to_path_buf();
        c.daemon(
            "munged",
            Command::new(sbin("munged"))
                .arg("-F")
                .arg(format!("--key-file={}", d.join("key/munge.key").display()))
                .arg(format!("--socket={}", d.join("munge/munge.sock").display()))
                .arg(format!(
                    "--pid-file={}",
                    d.join("munge/munged.pid").display()
                ))
                .arg(format!("--log-file={}", d.join("log/munged.log").display()))
                .arg(format!(
                    "--seed-file={}",
                    d.join("key/munged.seed").display()
                )),
        );
        if !wait_until(Duration::from_secs(10), || {
            d.join("munge/munge.sock").exists()
        }) {
            panic!("munged did not start: {}", c.logs());
        }
        let conf = c.conf.clone();
        c.daemon(
            "slurmctld",
            Command::new(sbin("slurmctld"))
                .arg("-D")
                .arg("-f")
                .arg(&conf),
        );
        c.daemon(
            "slurmd",
            Command::new(sbin("slurmd"))
                .args(["-D", "-N", &host, "-f"])
                .arg(&conf),
        );
        let up = wait_until(Duration::from_secs(60), || {
            c.cmd("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        assert!(up, "the node never became idle: {}", c.logs());
        Some(c)
    }

    fn daemon(&mut self, name: &'static str, cmd: &mut Command) {
        let log = std::fs::File::create(self.dir.path().join(format!("log/{name}.out"))).unwrap();
        let child = cmd
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        self.daemons.push((name, child));
    }

    /// A Slurm client command against this cluster, without the launcher variables of whatever
    /// runs the tests.
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if ["OMPI_", "PMIX_", "PMI_", "SLURM_"]
                .iter()
                .any(|p| k.starts_with(p))
            {
                c.env_remove(k);
            }
        }
        c.env("SLURM_CONF", &self.conf)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        c
    }

    /// `srun -n4 --overcommit [--mpi=M] sh -c 'note pid and job; exec linerate mesh ...'`,
    /// under `timeout`, started.
    fn srun_mesh(&self, mpi: Option<&str>, mesh: &[&str]) -> Child {
        let mut c = self.cmd("timeout");
        c.args([
            "-k",
            "10",
            &SRUN_TIMEOUT_S.to_string(),
            "srun",
            "-n4",
            "--overcommit",
        ]);
        if let Some(m) = mpi {
            c.arg(format!("--mpi={m}"));
        }
        c.args([
            "sh",
            "-c",
            r#"echo $$ > "$0/rank$SLURM_PROCID.pid"; echo "$SLURM_JOB_ID" > "$0/job"; exec "$@""#,
        ])
        .arg(self.dir.path())
        .args([BIN, "mesh", "--join-timeout", "30"])
        .args(mesh)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn srun")
    }

    /// What a file the ranks write says, once it is there (bounded).
    fn wait_file(&self, name: &str) -> String {
        let p = self.dir.path().join(name);
        let mut s = String::new();
        wait_until(Duration::from_secs(60), || {
            s = std::fs::read_to_string(&p).unwrap_or_default();
            !s.trim().is_empty()
        });
        assert!(
            !s.trim().is_empty(),
            "{name} never written: {}",
            self.logs()
        );
        s.trim().to_string()
    }

    fn logs(&self) -> String {
        [
            "munged.out",
            "slurmctld.log",
            "slurmd.log",
            "slurmctld.out",
            "slurmd.out",
        ]
        .iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(self.dir.path().join("log").join(f)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            format!(
                "--- {f}\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    }
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(200));
    }
    false
}

/// A single node on loopback: its own ports, state, spool, logs and munge socket; root runs
/// the daemons and the tasks; the partition oversubscribes its CPUs (`srun --overcommit` puts
/// four ranks on any machine); no cgroups, no accounting.
fn slurm_conf(d: &Path, host: &str, cpus: usize) -> String {
    let p = |x: &str| d.join(x).display().to_string();
    format!(
        "ClusterName=lrtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={d_pid}
SlurmctldLogFile={ctld_log}
SlurmdLogFile={d_log}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=10
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=lr Nodes={host} Default=YES OverSubscribe=FORCE:8 MaxTime=10 State=UP
",
        ctld = free_port(),
        slurmd = free_port(),
        sock = p("munge/munge.sock"),
        state = p("state"),
        spool = p("spool"),
        ctld_pid = p("slurmctld.pid"),
        d_pid = p("slurmd.pid"),
        ctld_log = p("log/slurmctld.log"),
        d_log = p("log/slurmd.log"),
    )
}

/// Waits for `srun` (bounded by its `timeout`); its output.
fn finish(c: Child) -> Output {
    let out = c.wait_with_output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(124),
        "srun ran past {SRUN_TIMEOUT_S} s: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn document(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no document ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// No link or node verdict blames hardware on loopback; links of `lost` ranks are unreachable,
/// cut short, fine before the loss, or unconfirmed because of it.
fn nothing_blamed(doc: &Value, lost: &[u64]) {
    let retests: Vec<&Value> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["phase"] == "retest")
        .collect();
    for l in doc["links"].as_array().unwrap() {
        let e = l["explanation"].as_str().unwrap();
        assert!(
            !["slow", "lossy"].contains(&l["status"].as_str().unwrap())
                && !e.contains("suspect this link"),
            "hardware blamed on loopback: {l}\nretests: {retests:#?}"
        );
        let ends = [l["tx"].as_u64().unwrap(), l["rx"].as_u64().unwrap()];
        if ends.iter().any(|r| lost.contains(r)) {
            let ok = match l["status"].as_str().unwrap() {
                "unreachable" | "cut_short" => true,
                "ok" => l["error"].is_null(),
                _ => false,
            };
            assert!(ok, "a link of a lost rank: {l}");
        }
    }
}

#[test]
fn srun_under_the_default_pmi2_and_pmix_plugins() {
    let Some(c) = Cluster::start() else { return };
    for (mpi, source, method) in [
        (None, "slurm", "slurm_nodelist"),
        (Some("pmi2"), "pmi", "slurm_nodelist"),
        (Some("pmix"), "pmix", "pmix"),
    ] {
        let out = finish(c.srun_mesh(mpi, &["-t", "0.5", "--json"]));
        let err = String::from_utf8_lossy(&out.stderr);
        if mpi == Some("pmix") && err.contains("Couldn't load specified plugin") {
            return linerate_testkit::skip(format!(
                "Slurm's PMIx plugin cannot load libpmix (libpmix-dev): {err}"
            ));
        }
        let what = format!("--mpi={}", mpi.unwrap_or("(default)"));
        // 0: every link fine, 1: one judged bad; never 2 (could not run).
        assert!(matches!(out.status.code(), Some(0 | 1)), "{what}: {err}");
        let doc = document(&out);
        schema::assert_matches("mesh.schema.json", &doc);
        assert_eq!(doc["size"], 4, "{what}");
        assert_eq!(doc["lost"], serde_json::json!([]), "{what}: {err}");
        assert_eq!(
            doc["rendezvous"]["method"], method,
            "{what}: {}",
            doc["rendezvous"]
        );
        for (i, r) in doc["ranks"].as_array().unwrap().iter().enumerate() {
            assert_eq!(r["rank"], i, "{what}");
            assert_eq!(r["identity_source"], source, "{what}: {r}");
        }
        // Four ranks on one host: `host/rank`.
        for n in doc["nodes"].as_array().unwrap() {
            let label = n["label"].as_str().unwrap();
            assert_eq!(
                label,
                format!("{}/{}", n["host"].as_str().unwrap(), n["rank"]),
                "{what}"
            );
        }
        let ms = doc["measurements"].as_array().unwrap();
        for tx in 0..4u64 {
            for rx in (0..4u64).filter(|&rx| rx != tx) {
                let m = ms
                    .iter()
                    .find(|m| m["phase"] == "round" && m["tx"] == tx && m["rx"] == rx)
                    .unwrap_or_else(|| panic!("{what}: {tx}→{rx} not measured"));
                assert!(m["gbps"].as_f64().is_some_and(|g| g > 0.0), "{what}: {m}");
            }
        }
        nothing_blamed(&doc, &[]);
    }
}

#[test]
fn a_rank_killed_mid_run_is_unreachable_and_scancel_leaves_what_was_measured() {
    let Some(c) = Cluster::start() else { return };
    // Rank 2 is killed once the run is under way (six rounds of 1 s tests).
    let run = c.srun_mesh(None, &["-t", "1", "--json"]);
    let pid = c.wait_file("rank2.pid");
    thread::sleep(Duration::from_secs(4));
    let _ = Command::new("kill").args(["-KILL", &pid]).status();
    let out = finish(run);
    let err = String::from_utf8_lossy(&out.stderr);
    let doc = document(&out);
    schema::assert_matches("mesh.schema.json", &doc);
    assert_eq!(doc["lost"], serde_json::json!([2]), "{err}");
    assert_eq!(doc["healthy"], false);
    assert!(err.contains("rank 2 unreachable"), "{err}");
    assert!(
        !err.contains("linerate serve"),
        "bench's advice in a mesh: {err}"
    );
    let nodes = doc["nodes"].as_array().unwrap();
    for n in nodes {
        let want = if n["rank"] == 2 { "unreachable" } else { "ok" };
        let status = n["status"].as_str().unwrap();
        assert!(
            status == want || (want == "ok" && status == "unconfirmed"),
            "{n}"
        );
    }
    nothing_blamed(&doc, &[2]);
    for f in ["rank0.pid", "rank1.pid", "rank2.pid", "rank3.pid", "job"] {
        let _ = std::fs::remove_file(c.dir.path().join(f));
    }
    // scancel: every task gets SIGTERM; rank 0 writes what was measured and says so.
    let run = c.srun_mesh(None, &["-t", "1", "--json"]);
    let job = c.wait_file("job");
    c.wait_file("rank0.pid");
    thread::sleep(Duration::from_secs(5));
    let cancelled = c.cmd("scancel").arg(&job).status().unwrap();
    assert!(cancelled.success(), "scancel {job}");
    let out = finish(run);
    let err = String::from_utf8_lossy(&out.stderr);
    let doc = document(&out);
    schema::assert_matches("mesh.schema.json", &doc);
    assert!(
        doc["interrupted"]
            .as_str()
            .is_some_and(|s| s.starts_with("rank 0 was stopped by SIGTERM")),
        "{}\n{err}",
        doc["interrupted"]
    );
    assert_eq!(doc["healthy"], false);
    assert!(!doc["measurements"].as_array().unwrap().is_empty(), "{err}");
    assert!(err.contains("task 0: Exited with exit code 2"), "{err}");
    nothing_blamed(&doc, &[]);
}

#[test]
fn a_paused_rank_is_unreachable_never_a_cable() {
    let Some(c) = Cluster::start() else { return };
    // Rank 3 is stopped (SIGSTOP) mid-run: its connections stay open and it answers nothing.
    let run = c.srun_mesh(None, &["-t", "1", "--heartbeat-timeout", "2", "--json"]);
    let paused = c.wait_file("rank3.pid");
    let rank0 = c.wait_file("rank0.pid");
    thread::sleep(Duration::from_secs(4));
    let _ = Command::new("kill").args(["-STOP", &paused]).status();
    // Rank 0 ends by itself; the stopped rank is then killed by its PID (srun waits for it).
    let done = wait_until(Duration::from_secs(120), || {
        !Path::new(&format!("/proc/{rank0}")).exists()
    });
    let _ = Command::new("kill").args(["-KILL", &paused]).status();
    assert!(done, "rank 0 never ended: {}", c.logs());
    let out = finish(run);
    let err = String::from_utf8_lossy(&out.stderr);
    let doc = document(&out);
    schema::assert_matches("mesh.schema.json", &doc);
    assert_eq!(doc["lost"], serde_json::json!([3]), "{err}");
    assert!(err.contains("rank 3 unreachable: no heartbeat"), "{err}");
    nothing_blamed(&doc, &[3]);
    for n in doc["nodes"].as_array().unwrap() {
        let status = n["status"].as_str().unwrap();
        if n["rank"] == 3 {
            assert_eq!(status, "unreachable", "{n}");
        } else {
            assert!(["ok", "unconfirmed"].contains(&status), "{n}");
        }
    }
}
