//! A stock `iperf3 -s` on a far end that has iperf3 but no linerate (a NAS, a router, a VM),
//! started over ssh for the tests of one run and ended the same way.
//!
//! iperf3 does not watch its stdin, so its lifelines are others: a terminal (`ssh -tt`) that
//! hangs up when the ssh ends (iperf3 exits on SIGHUP), `-1` (one test, then exit), GNU
//! `timeout` as a hard deadline where the far end has it, and `--idle-timeout` from iperf3
//! 3.10 (a one-off server exits on it from 3.11). When this process is killed outright its
//! ssh lives on, so the far end then ends at the end of its test, its idle time-out or its
//! deadline, whichever comes first.

use std::time::{Duration, Instant};

use crate::error::{classify, ssh_error, Failure, Said, SshError};
use crate::session::{found_by, probe, Found, Session};
use crate::ssh::{check_host, remote_command, Ssh, Tty};
use crate::{START_TIMEOUT, STOP_TIMEOUT};

/// iperf3's own default port, tried first.
pub const IPERF3_PORT: u16 = 5201;
/// How many ports are tried when the one before is in use.
const PORT_TRIES: usize = 5;

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iperf3Spec {
    /// `[USER@]HOST` to log in to.
    pub ssh_host: String,
    /// The iperf3 program there (`iperf3` on the PATH of a non-interactive shell, or a path).
    pub program: String,
    /// The ports to try, in order, while the one before is in use there; empty: 5201, then
    /// random ones in 5202-5299.
    pub ports: Vec<u16>,
    /// The hard deadline (GNU `timeout` on the far end, when it has it).
    pub deadline: Duration,
    /// `--idle-timeout`, for iperf3 3.10 and later.
    pub idle_timeout: Duration,
    /// `-1`: serve one test, then exit.
    pub one_off: bool,
}

impl Iperf3Spec {
    /// A one-test server on `ssh_host` that lives at most `deadline`.
    pub fn one_test(ssh_host: &str, deadline: Duration) -> Self {
        Self {
            ssh_host: ssh_host.into(),
            program: "iperf3".into(),
            ports: Vec::new(),
            deadline,
            idle_timeout: Duration::from_secs(30),
            one_off: true,
        }
    }

    /// The ports to try, in order.
    fn ports(&self) -> Vec<u16> {
        if !self.ports.is_empty() {
            return self.ports.clone();
        }
        let mut v = vec![IPERF3_PORT];
        while v.len() < PORT_TRIES {
            let r = u16::from_str_radix(&linerate_proto::random_hex(2), 16).unwrap_or(0);
            let p = IPERF3_PORT + 1 + r % 98;
            if !v.contains(&p) {
                v.push(p);
            }
        }
        v
    }
}

/// What the far end has: iperf3's version, and whether its `timeout` is GNU's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iperf3Host {
    /// `3.12`, `3.1.3`, ... as `iperf3 --version` says it.
    pub version: String,
    /// (major, minor) of `version`, when it reads as one.
    pub release: Option<(u32, u32)>,
    /// GNU coreutils' `timeout` is there (`timeout -k 5 SECS`).
    pub gnu_timeout: bool,
}

impl Iperf3Host {
    /// `--idle-timeout` exists (3.10).
    pub fn has_idle_timeout(&self) -> bool {
        self.release.is_some_and(|r| r >= (3, 10))
    }

    /// A one-off server (`-1`) exits when its idle time-out passes (3.11).
    pub fn one_off_exits_idle(&self) -> bool {
        self.release.is_some_and(|r| r >= (3, 11))
    }
}

/// `iperf 3.12 (cJSON 1.7.15)` → `3.12`, (3, 12).
fn parse_version(text: &str) -> Option<(String, Option<(u32, u32)>)> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("iperf "))?;
    let v = line.split_whitespace().nth(1)?.to_string();
    let mut parts = v.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .ok()
    });
    let release = match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    Some((v, release))
}

/// What a line of the server's output means here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ServerLine {
    Listening(u16),
    InUse,
    Error(String),
}

fn server_line(line: &str) -> Option<ServerLine> {
    let l = line.trim();
    if let Some(rest) = l.strip_prefix("Server listening on ") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return digits.parse().ok().map(ServerLine::Listening);
    }
    if l.contains("Address already in use") {
        return Some(ServerLine::InUse);
    }
    (l.starts_with("iperf3: ") || l.contains("unrecognized option"))
        .then(|| ServerLine::Error(l.to_string()))
}

/// A stock iperf3 server started over ssh.
#[derive(Debug)]
pub struct Iperf3Server {
    session: Session,
    host: String,
    port: u16,
    remote: Iperf3Host,
    bounds: Vec<String>,
}

impl Iperf3Server {
    /// Learn the far end's iperf3 (one round trip), then start it on the first port free, and
    /// wait for `Server listening on P`.
    pub fn start(ssh: &Ssh, spec: &Iperf3Spec) -> Result<Self, SshError> {
        check_host(&spec.ssh_host)?;
        let remote = Self::probe(ssh, spec)?;
        let ports = spec.ports();
        for &port in &ports {
            if let Some(server) = Self::launch(ssh, spec, &remote, port)? {
                return Ok(server);
            }
        }
        Err(SshError::PortsInUse {
            host: spec.ssh_host.clone(),
            ports: ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// `iperf3 --version` and `timeout --version` on the far end.
    fn probe(ssh: &Ssh, spec: &Iperf3Spec) -> Result<Iperf3Host, SshError> {
        let script = "command -v \"$1\" >/dev/null 2>&1 || { echo \"$1: not found\" >&2; exit 127; }; \"$1\" --version 2>&1; timeout --version 2>/dev/null | head -n 1; exit 0";
        let remote = remote_command(&["exec", "sh", "-c", script, "sh", &spec.program])?;
        let host = spec.ssh_host.clone();
        let p = probe(
            ssh.command(&Ssh::args(&host, Tty::None, remote)),
            START_TIMEOUT,
        )
        .map_err(|err| SshError::Spawn {
            program: ssh.describe(),
            err,
        })?;
        let said = Said::new(&p.stderr);
        let Some(status) = p.status else {
            return Err(SshError::NoAnswer {
                host,
                program: spec.program.clone(),
                secs: START_TIMEOUT.as_secs(),
                connect: crate::ssh::CONNECT_TIMEOUT_S,
                said,
            });
        };
        let f = classify(status.code(), &said);
        if let Some(e) = ssh_error(f, &host, said.clone()) {
            return Err(e);
        }
        if f == Failure::NotFound {
            return Err(SshError::NotFound {
                host,
                program: spec.program.clone(),
                said,
                install: "Install iperf3 there (Debian and Ubuntu: `apt install iperf3`; TrueNAS and most NAS systems ship it), or give its path.".into(),
            });
        }
        let Some((version, release)) = parse_version(&p.stdout) else {
            return Err(SshError::Exited {
                host,
                program: spec.program.clone(),
                status: "without saying its version".into(),
                said: Said::new(&format!("{}{}", p.stdout, p.stderr)),
            });
        };
        Ok(Iperf3Host {
            version,
            release,
            gnu_timeout: p.stdout.contains("coreutils"),
        })
    }

    /// Start it on `port`: the server, or None when the port is in use there.
    fn launch(
        ssh: &Ssh,
        spec: &Iperf3Spec,
        remote: &Iperf3Host,
        port: u16,
    ) -> Result<Option<Self>, SshError> {
        let (words, bounds) = Self::words(spec, remote, port);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let host = spec.ssh_host.clone();
        // A terminal: its hang-up is how the server learns this end is gone.
        let args = Ssh::args(&host, Tty::Forced, remote_command(&words)?);
        let (mut session, found) = Session::spawn(ssh.command(&args), server_line, String::new())
            .map_err(|err| SshError::Spawn {
            program: ssh.describe(),
            err,
        })?;
        match found_by(&found, Instant::now() + START_TIMEOUT) {
            Some(Found::Line(ServerLine::Listening(p))) if p == port => Ok(Some(Iperf3Server {
                session,
                host,
                port,
                remote: remote.clone(),
                bounds,
            })),
            Some(Found::Line(ServerLine::InUse)) => {
                session.hang_up();
                Ok(None)
            }
            None => {
                session.hang_up();
                Err(SshError::NoAnswer {
                    host,
                    program: spec.program.clone(),
                    secs: START_TIMEOUT.as_secs(),
                    connect: crate::ssh::CONNECT_TIMEOUT_S,
                    said: Said::new(&session.stdout_text(Duration::from_secs(1))),
                })
            }
            Some(other) => {
                let status = if matches!(other, Found::Line(_)) {
                    session.hang_up();
                    None
                } else {
                    session.end(STOP_TIMEOUT)
                };
                let grace = Duration::from_secs(1);
                let text = format!(
                    "{}{}",
                    session.stdout_text(grace),
                    session.stderr_text(grace)
                );
                let said = Said::new(&text);
                let f = classify(status.and_then(|s| s.code()), &said);
                Err(
                    ssh_error(f, &host, said.clone()).unwrap_or(SshError::Exited {
                        host,
                        program: spec.program.clone(),
                        status: status.map_or_else(|| "with an error".into(), |s| s.to_string()),
                        said,
                    }),
                )
            }
        }
    }

    /// The far end's command, and the bounds it has, in words.
    fn words(spec: &Iperf3Spec, remote: &Iperf3Host, port: u16) -> (Vec<String>, Vec<String>) {
        let mut w = vec!["exec".to_string()];
        let mut bounds = vec!["its terminal's hang-up when this end's ssh ends".to_string()];
        if remote.gnu_timeout {
            let secs = spec.deadline.as_secs().max(1).to_string();
            w.extend(["timeout".into(), "-k".into(), "5".into(), secs.clone()]);
            bounds.push(format!("a deadline of {secs} s (GNU timeout)"));
        }
        w.extend([spec.program.clone(), "-s".into()]);
        if spec.one_off {
            w.push("-1".into());
            bounds.push("one test (-1)".into());
        }
        w.extend(["-p".into(), port.to_string()]);
        if remote.has_idle_timeout() {
            let secs = spec.idle_timeout.as_secs().max(1).to_string();
            w.extend(["--idle-timeout".into(), secs.clone()]);
            if remote.one_off_exits_idle() || !spec.one_off {
                bounds.push(format!("{secs} s idle (--idle-timeout)"));
            }
        }
        (w, bounds)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the far end has: iperf3's version (what its protocol can do depends on it).
    pub fn remote(&self) -> &Iperf3Host {
        &self.remote
    }

    /// The SSH host it runs on.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// What ends it if this end cannot: for a note when one is missing.
    pub fn bounds(&self) -> &[String] {
        &self.bounds
    }

    /// What it has printed so far (its last 16 KiB, terminal line ends included).
    pub fn output(&self) -> String {
        self.session.stdout_text(Duration::ZERO)
    }

    /// Wait up to `timeout` for it to end on its own (a one-off server after its test): true
    /// when it has.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        self.session.wait(timeout).is_some()
    }

    /// End it: this end's ssh ends, so the far end's terminal hangs up and iperf3 gets SIGHUP.
    /// What it printed.
    pub fn stop(mut self) -> String {
        self.session.hang_up();
        self.session.stdout_text(Duration::from_secs(1))
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        self.session.hang_up();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(version: &str, gnu_timeout: bool) -> Iperf3Host {
        let (version, release) =
            parse_version(&format!("iperf {version} (cJSON 1.7.15)\n")).unwrap();
        Iperf3Host {
            version,
            release,
            gnu_timeout,
        }
    }

    #[test]
    fn versions_are_read() {
        assert_eq!(
            parse_version("iperf 3.12 (cJSON 1.7.15)\nLinux x 6.1\n"),
            Some(("3.12".into(), Some((3, 12))))
        );
        assert_eq!(
            parse_version("iperf 3.1.3\n").map(|v| v.1),
            Some(Some((3, 1)))
        );
        assert_eq!(
            parse_version("iperf 3.9+\n").map(|v| v.1),
            Some(Some((3, 9)))
        );
        assert_eq!(parse_version("nonsense\n"), None);
        assert!(host("3.10.1", true).has_idle_timeout());
        assert!(!host("3.10.1", true).one_off_exits_idle());
        assert!(!host("3.9", true).has_idle_timeout());
    }

    #[test]
    fn the_command_has_the_bounds_the_far_end_allows() {
        let spec = Iperf3Spec::one_test("nas", Duration::from_secs(90));
        let (w, b) = Iperf3Server::words(&spec, &host("3.12", true), 5201);
        assert_eq!(
            w.join(" "),
            "exec timeout -k 5 90 iperf3 -s -1 -p 5201 --idle-timeout 30"
        );
        assert_eq!(b.len(), 4, "{b:?}");
        let (w, b) = Iperf3Server::words(&spec, &host("3.1.3", false), 5202);
        assert_eq!(w.join(" "), "exec iperf3 -s -1 -p 5202");
        assert_eq!(b.len(), 2, "{b:?}");
    }

    #[test]
    fn ports_start_at_iperf3s_and_stay_in_range() {
        let mut spec = Iperf3Spec::one_test("nas", Duration::from_secs(9));
        let p = spec.ports();
        assert_eq!(p[0], IPERF3_PORT);
        assert_eq!(p.len(), PORT_TRIES);
        assert!(p[1..].iter().all(|p| (5202..=5299).contains(p)));
        spec.ports = vec![6000, 6001];
        assert_eq!(spec.ports(), vec![6000, 6001]);
    }

    #[test]
    fn server_lines_are_told_apart() {
        assert_eq!(
            server_line("Server listening on 5201 (test #1)\r"),
            Some(ServerLine::Listening(5201))
        );
        assert_eq!(
            server_line(
                "iperf3: error - unable to start listener for connections: Address already in use"
            ),
            Some(ServerLine::InUse)
        );
        assert!(matches!(
            server_line("iperf3: unrecognized option '--idle-timeout'"),
            Some(ServerLine::Error(_))
        ));
        assert_eq!(
            server_line("-----------------------------------------------------------"),
            None
        );
    }
}
