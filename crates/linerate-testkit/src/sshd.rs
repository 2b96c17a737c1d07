//! A real OpenSSH server for the `--ssh` tests, started by the test itself: its own host key,
//! client key, authorized keys, known_hosts and ssh config in a temporary directory, listening
//! on 127.0.0.1 on a high port of its own. The client reaches it through `LINERATE_SSH_COMMAND`
//! (`ssh -F DIR/ssh_config`), never through the user's `~/.ssh`.
//!
//! sshd needs root (privilege separation) and its directory `/run/sshd`, which this module
//! makes when it is missing and removes again when the last server is gone. One server at a
//! time, across test processes too (a lock file): `/run/sshd` is shared. Where it cannot run
//! (not root, no sshd), [`Sshd::start`] records the skip and returns None.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::Duration;

/// Where Debian's openssh-server installs sshd (it must be run by its absolute path).
const SSHD: &str = "/usr/sbin/sshd";
/// sshd's privilege separation directory (compiled in).
const PRIVSEP_DIR: &str = "/run/sshd";
/// How long sshd has to say it listens.
const START_WAIT: Duration = Duration::from_secs(20);

/// A running sshd for one test; stopped, with every session it started, on drop.
#[derive(Debug)]
pub struct Sshd {
    dir: tempfile::TempDir,
    host: String,
    port: u16,
    child: Child,
    log: Arc<Mutex<String>>,
    made_privsep_dir: bool,
    _lock: Option<std::fs::File>,
}

fn run(prog: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{prog} {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A new ed25519 key pair at `path` (and `path.pub`), no passphrase.
fn keygen(path: &Path) {
    let p = path.to_str().expect("a UTF-8 temporary path");
    run("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f", p])
        .unwrap_or_else(|e| panic!("making a test key: {e}"));
}

/// `type base64` of a public key file.
fn public_key(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("reading a public key");
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

impl Sshd {
    /// Start one; None (after recording the skip) where it cannot run.
    pub fn start() -> Option<Sshd> {
        Self::start_with_env(&[])
    }

    /// Start one whose sessions get `env` (sshd's `SetEnv`: it wins over the PATH sshd sets),
    /// as a far end whose login has another PATH or temporary directory.
    pub fn start_with_env(env: &[(&str, &str)]) -> Option<Sshd> {
        if !crate::is_root() {
            crate::skip("needs root to run sshd (privilege separation)");
            return None;
        }
        if !Path::new(SSHD).exists() || !Path::new("/usr/bin/ssh-keygen").exists() {
            crate::skip(format_args!(
                "needs OpenSSH's server and client ({SSHD}, ssh-keygen): apt install openssh-server openssh-client (scripts/setup-tests.sh)"
            ));
            return None;
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(std::env::temp_dir().join("linerate-test-sshd.lock"))
            .expect("the sshd tests' lock file");
        lock.lock().expect("locking the sshd tests' lock file");
        let made_privsep_dir = !Path::new(PRIVSEP_DIR).exists();
        if made_privsep_dir {
            std::fs::create_dir_all(PRIVSEP_DIR).expect("making /run/sshd");
        }
        let dir = tempfile::Builder::new()
            .prefix("linerate-sshd-")
            .tempdir()
            .expect("a temporary directory");
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        keygen(&d.join("other_host_key"));
        keygen(&d.join("stranger_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys"))
            .expect("authorized_keys");
        let mut last_log = String::new();
        // A free port can be taken between looking and sshd's bind: a few tries.
        for _ in 0..3 {
            let port = free_port();
            write(&d.join("sshd_config"), &sshd_config(d, port, env));
            let mut child = Command::new(SSHD)
                .args(["-D", "-e", "-f"])
                .arg(d.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starting sshd");
            let log = Arc::default();
            if wait_listening(&mut child, &log) {
                let sshd = Sshd {
                    dir,
                    host: "127.0.0.1".into(),
                    port,
                    child,
                    log,
                    made_privsep_dir,
                    _lock: Some(lock),
                };
                sshd.write_client_files();
                return Some(sshd);
            }
            let _ = child.kill();
            let _ = child.wait();
            last_log.clone_from(&log.lock().unwrap_or_else(PoisonError::into_inner));
        }
        if made_privsep_dir {
            let _ = std::fs::remove_dir(PRIVSEP_DIR);
        }
        panic!("sshd did not start listening on 127.0.0.1 in 3 tries: {last_log}");
    }

    /// An sshd of `root`'s own (its OpenSSH, its shell and C library), chrooted there inside
    /// the network namespace `ns`, listening on the namespace's address, port 22; its keys and
    /// config in `root/etc/linerate-test`. `root` is an overlay of the test's own
    /// (`crate::debian::Overlay`): nothing of this reaches the cached root.
    pub fn start_in(root: &Path, ns: &crate::debian::Netns) -> Sshd {
        let dir = tempfile::Builder::new()
            .prefix("linerate-sshd-")
            .tempdir()
            .expect("a temporary directory");
        let d = dir.path();
        for k in ["host_key", "client_key", "other_host_key", "stranger_key"] {
            keygen(&d.join(k));
        }
        let etc = root.join("etc/linerate-test");
        std::fs::create_dir_all(&etc).expect("the far end's sshd directory");
        std::fs::create_dir_all(root.join("run/sshd")).expect("the far end's /run/sshd");
        std::fs::copy(d.join("host_key"), etc.join("host_key")).expect("the host key");
        std::fs::copy(d.join("client_key.pub"), etc.join("authorized_keys"))
            .expect("authorized_keys");
        let config = format!(
            "Port 22\nListenAddress {}\nHostKey /etc/linerate-test/host_key\nPidFile none\nAuthorizedKeysFile /etc/linerate-test/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nPrintMotd no\n",
            ns.there
        );
        write(&etc.join("sshd_config"), &config);
        let mut child = ns
            .chroot(
                root,
                &[
                    "/usr/sbin/sshd",
                    "-D",
                    "-e",
                    "-f",
                    "/etc/linerate-test/sshd_config",
                ],
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the far end's sshd");
        let log = Arc::default();
        if !wait_listening(&mut child, &log) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the far end's sshd did not start: {}",
                log.lock().unwrap_or_else(PoisonError::into_inner)
            );
        }
        let sshd = Sshd {
            dir,
            host: ns.there.clone(),
            port: 22,
            child,
            log,
            made_privsep_dir: false,
            _lock: None,
        };
        sshd.write_client_files();
        sshd
    }

    /// The client's config and known_hosts files, right and wrong.
    fn write_client_files(&self) {
        let d = self.dir.path();
        let name = if self.port == 22 {
            self.host.clone()
        } else {
            format!("[{}]:{}", self.host, self.port)
        };
        let known = |key: &str| format!("{name} {}\n", public_key(&d.join(key)));
        write(&d.join("known_hosts"), &known("host_key.pub"));
        write(&d.join("known_hosts_changed"), &known("other_host_key.pub"));
        write(&d.join("known_hosts_empty"), "");
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        for (name, key, known) in [
            ("ssh_config", "client_key", "known_hosts"),
            ("ssh_config_changed", "client_key", "known_hosts_changed"),
            ("ssh_config_unknown", "client_key", "known_hosts_empty"),
            ("ssh_config_stranger", "stranger_key", "known_hosts"),
        ] {
            write(
                &d.join(name),
                &format!(
                    "Host *\n  Port {port}\n  User {user}\n  IdentityFile {key}\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n  UpdateHostKeys no\n  ControlMaster no\n  LogLevel ERROR\n",
                    port = self.port,
                    key = d.join(key).display(),
                    known = d.join(known).display(),
                ),
            );
        }
    }

    /// The address it listens on.
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its temporary directory (keys, configs; a test may add files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `LINERATE_SSH_COMMAND` that logs in to it.
    pub fn ssh_command(&self) -> String {
        self.command("ssh_config")
    }

    /// The same, with known_hosts holding another key for it: its key "changed".
    pub fn ssh_command_changed_key(&self) -> String {
        self.command("ssh_config_changed")
    }

    /// The same, with known_hosts empty: its key never seen.
    pub fn ssh_command_unknown_key(&self) -> String {
        self.command("ssh_config_unknown")
    }

    /// The same, with a client key it does not authorize.
    pub fn ssh_command_stranger(&self) -> String {
        self.command("ssh_config_stranger")
    }

    fn command(&self, config: &str) -> String {
        format!("ssh -F {}", self.dir.path().join(config).display())
    }

    /// What sshd logged so far.
    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The processes sshd started (one per connection), still running.
    pub fn sessions(&self) -> Vec<u32> {
        children_of(self.child.id())
    }

    /// Wait until sshd has no session left, polling for at most `limit`: the ones left then.
    pub fn wait_sessions_gone(&self, limit: Duration) -> Vec<u32> {
        poll_until_empty(|| self.sessions(), limit)
    }
}

/// Read sshd's log until it says it listens (true) or it ends (false); keep draining it.
fn wait_listening(child: &mut Child, log: &Arc<Mutex<String>>) -> bool {
    let Some(err) = child.stderr.take() else {
        return false;
    };
    let log = Arc::clone(log);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if line.starts_with("Server listening on") {
                let _ = tx.send(());
            }
            let mut l = log.lock().unwrap_or_else(PoisonError::into_inner);
            if l.len() < 1 << 20 {
                l.push_str(&line);
                l.push('\n');
            }
        }
    });
    rx.recv_timeout(START_WAIT).is_ok()
}

fn sshd_config(d: &Path, port: u16, env: &[(&str, &str)]) -> String {
    let mut c = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile none\nAuthorizedKeysFile {auth}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nPrintMotd no\nSubsystem sftp internal-sftp\n",
        host_key = d.join("host_key").display(),
        auth = d.join("authorized_keys").display(),
    );
    if !env.is_empty() {
        let words: Vec<String> = env.iter().map(|(k, v)| format!("\"{k}={v}\"")).collect();
        c.push_str("SetEnv ");
        c.push_str(&words.join(" "));
        c.push('\n');
    }
    c
}

/// Process ids whose parent is `ppid`.
pub fn children_of(ppid: u32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
                    let rest = &s[s.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(ppid)
        })
        .collect()
}

/// Process ids whose command line contains `needle` (this process excluded).
pub fn pids_with(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let text = String::from_utf8_lossy(&c).replace('\0', " ");
                text.contains(needle)
            })
        })
        .collect()
}

/// Wait until no process's command line contains `needle`, polling for at most `limit`: the
/// ones left then.
pub fn wait_gone(needle: &str, limit: Duration) -> Vec<u32> {
    poll_until_empty(|| pids_with(needle), limit)
}

fn poll_until_empty(f: impl Fn() -> Vec<u32>, limit: Duration) -> Vec<u32> {
    let step = Duration::from_millis(100);
    let tries = (limit.as_millis() / step.as_millis()).max(1);
    for _ in 0..tries {
        let left = f();
        if left.is_empty() {
            return left;
        }
        std::thread::sleep(step);
    }
    f()
}

fn kill(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // The sessions first (a test that failed may have left one), then the listener.
        for pid in self.sessions() {
            kill(pid, "-TERM");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.made_privsep_dir {
            let _ = std::fs::remove_dir(PRIVSEP_DIR);
        }
    }
}

/// A path for a test's far-end program: a symbolic link to `target` under a name of its own,
/// so the processes started through it are found by their command line alone.
pub fn marked_program(dir: &Path, name: &str, target: &Path) -> PathBuf {
    let p = dir.join(name);
    std::os::unix::fs::symlink(target, &p)
        .unwrap_or_else(|e| panic!("linking {} to {}: {e}", p.display(), target.display()));
    p
}
