//! The far end of `doctor`, `bench` and `soak`: HOST's addresses (`lookup`, the one place the
//! three resolve it) and `--ssh`, from the command line to the far end that `linerate_ssh`
//! starts (which host to log in to, which address the tests go to, the limits the far end
//! needs), and its end with the run.

use std::io::IsTerminal;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::bail;
use linerate_bench::ClientError;
use linerate_proto::{defaults, Psk, TestParams};
use linerate_ssh::{Copied, CopyMode, FarEnd, FarEndSpec, Iperf3Server, Iperf3Spec, Ssh};

use crate::cli::{SshArgs, SshCopy};

/// Where the tests go, and with `--ssh` where the far end is started.
#[derive(Debug)]
pub struct TestTarget {
    /// The test address (HOST): a name or an address, resolved here.
    pub host: String,
    pub ssh: Option<SshTarget>,
}

/// The far end to start.
#[derive(Debug)]
pub struct SshTarget {
    ssh: Ssh,
    /// `[USER@]SSHHOST`.
    host: String,
    /// `--ssh-command`, when given.
    program: Option<String>,
    /// `--ssh-copy`.
    copy: CopyMode,
}

/// HOST and `--ssh` as given: None when there is no host at all (doctor's self-check, soak
/// `--passive`). `--ssh` without a value logs in to HOST; `--ssh SSHHOST` without HOST tests the
/// address ssh connects to, and so does a HOST that is only an alias of `~/.ssh/config`.
pub fn target(host: Option<&str>, a: &SshArgs) -> anyhow::Result<Option<TestTarget>> {
    let Some(given) = a.ssh.as_deref() else {
        return Ok(host.map(|h| TestTarget {
            host: h.to_string(),
            ssh: None,
        }));
    };
    let ssh = Ssh::from_env();
    let ssh_host = match (given, host) {
        ("", Some(h)) => h.to_string(),
        ("", None) => bail!(
            "--ssh without a value logs in to HOST: give HOST (the far end's test address), or the host to log in to with --ssh [USER@]SSHHOST"
        ),
        (s, _) => s.to_string(),
    };
    let test_host = match host {
        Some(h) if given.is_empty() && !resolves(h) => same_host(&ssh, &ssh_host),
        Some(h) => h.to_string(),
        None => same_host(&ssh, &ssh_host),
    };
    Ok(Some(TestTarget {
        host: test_host,
        ssh: Some(SshTarget {
            ssh,
            host: ssh_host,
            program: a.ssh_command.clone(),
            copy: match a.ssh_copy {
                SshCopy::Never => CopyMode::Never,
                SshCopy::Auto => CopyMode::Auto,
                SshCopy::Always => CopyMode::Always,
            },
        }),
    }))
}

/// The addresses of `host` (a name or an address) at `port`; a name that does not resolve is
/// said as such, with what to check.
pub fn lookup(host: &str, port: u16) -> anyhow::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot resolve the host name `{host}`: {e}; check its spelling and this host's DNS (`getent hosts {host}`), or give its IP address"
            )
        })?
        .collect();
    if addrs.is_empty() {
        bail!("the host name `{host}` resolves to no address; give its IP address");
    }
    Ok(addrs)
}

/// `host` is a name this host resolves (or an address).
fn resolves(host: &str) -> bool {
    std::net::ToSocketAddrs::to_socket_addrs(&(host, 0)).is_ok_and(|mut a| a.next().is_some())
}

/// The test address of a host that is also the SSH host: the name or address ssh connects to
/// (`ssh -G`), so an alias of `~/.ssh/config` reaches the same machine.
fn same_host(ssh: &Ssh, ssh_host: &str) -> String {
    match ssh.config(ssh_host) {
        Some(c) => {
            if let Some(proxy) = &c.proxy {
                eprintln!(
                    "linerate: note: ssh reaches {ssh_host} through `{proxy}`; the tests go straight to {}, never through SSH. If that address cannot be reached from here, give the far end's test address as HOST.",
                    c.hostname
                );
            }
            c.hostname
        }
        None => linerate_ssh::host_part(ssh_host).to_string(),
    }
}

/// What the far end must serve.
#[derive(Debug, Clone, Default)]
pub struct Needs {
    /// The most tests.
    pub tests: u32,
    /// Their time limits in all, seconds.
    pub seconds: f64,
    /// A scratch write directory in this directory of the far end.
    pub write_dir: Option<String>,
    /// `linerate serve` options beyond the defaults, for the tests asked for.
    pub serve_args: Vec<String>,
}

/// The `linerate serve` limits (beyond its defaults) that `tests` need: the far end serves this
/// run alone, so its limits follow the tests asked for.
pub fn serve_limits<'a>(tests: impl IntoIterator<Item = &'a TestParams>) -> Vec<String> {
    let (mut secs, mut soak_secs, mut streams, mut length, mut spin) = (0, 0, 0, 0, 0);
    for p in tests {
        let s = p.duration_ms.div_ceil(1000);
        if p.soak {
            soak_secs = soak_secs.max(s);
        } else {
            secs = secs.max(s);
        }
        streams = streams.max(p.streams);
        length = length.max(p.length);
        spin = spin.max(p.spin_us.unwrap_or(0));
    }
    let mut v = Vec::new();
    let mut more = |flag: &str, want: u64, default: u64| {
        if want > default {
            v.extend([flag.to_string(), want.to_string()]);
        }
    };
    more("--max-duration", secs, defaults::MAX_DURATION_MS / 1000);
    more(
        "--max-soak-duration",
        soak_secs,
        defaults::MAX_SOAK_DURATION_MS / 1000,
    );
    more(
        "--max-streams",
        u64::from(streams),
        u64::from(defaults::MAX_STREAMS),
    );
    more(
        "--max-length",
        u64::from(length),
        u64::from(defaults::MAX_LENGTH),
    );
    more(
        "--max-spin",
        u64::from(spin),
        u64::from(defaults::SERVE_MAX_SPIN_US),
    );
    v
}

impl SshTarget {
    /// Start the far end for tests to `test_ip`: it listens on `port` (None: one its kernel
    /// picks) on all its addresses of that family, with the limits of `needs`.
    pub fn start(
        &self,
        test_ip: IpAddr,
        port: Option<u16>,
        needs: Needs,
    ) -> anyhow::Result<Started> {
        let spec = FarEndSpec {
            ssh_host: self.host.clone(),
            program: self
                .program
                .clone()
                .unwrap_or_else(|| linerate_ssh::DEFAULT_PROGRAM.to_string()),
            bind: if test_ip.is_ipv6() {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0, 0, 0, 0])
            },
            port: port.unwrap_or(0),
            tests: needs.tests.max(1),
            seconds: needs.seconds,
            write_dir: needs.write_dir,
            serve_args: needs.serve_args,
            copy: self.copy,
        };
        let live = std::io::stderr().is_terminal();
        if live {
            eprintln!(
                "starting `{} serve` on {} through {}",
                spec.program,
                spec.ssh_host,
                self.ssh.describe()
            );
        }
        let far = FarEnd::start(&self.ssh, &spec)?;
        // A copy is said whether or not anyone watches: it ran a program on the far end.
        if let Some(c) = far.copied() {
            eprintln!("linerate: {}", c.describe(far.host()));
        }
        if live {
            eprintln!(
                "far end: linerate {} on {}, port {}, for this run only (ends with it, or {} s from now at the latest)",
                far.version().unwrap_or("?"),
                far.host(),
                far.port(),
                far.deadline().as_secs()
            );
        }
        Ok(Started {
            addr: SocketAddr::new(test_ip, far.port()),
            psk: far.psk().clone(),
            copied: far.copied().map(|c| copy_out(c, far.host())),
            far: Some(far),
        })
    }
}

impl SshTarget {
    /// `--iperf3 --ssh`: start a stock `iperf3 -s -1` for one test to `test_ip` on the far end
    /// (its iperf3, or `--ssh-command`), on `port` or the first of iperf3's it finds free,
    /// alive at most `seconds` of test and a minute more.
    /// A stock `iperf3 -s` on the SSH host for tests of `seconds` in all: one test (`-1`,
    /// bench) or several (`one_off` false, doctor), ended with the run either way.
    pub fn start_iperf3(
        &self,
        test_ip: IpAddr,
        port: Option<u16>,
        seconds: f64,
        one_off: bool,
    ) -> anyhow::Result<StartedIperf3> {
        let spec = Iperf3Spec {
            program: self.program.clone().unwrap_or_else(|| "iperf3".to_string()),
            ports: port.map(|p| vec![p]).unwrap_or_default(),
            one_off,
            ..Iperf3Spec::one_test(&self.host, Duration::from_secs_f64(seconds.max(0.0) + 60.0))
        };
        let live = std::io::stderr().is_terminal();
        if live {
            eprintln!(
                "starting `{} -s{}` on {} through {}",
                spec.program,
                if one_off { " -1" } else { "" },
                spec.ssh_host,
                self.ssh.describe()
            );
        }
        let server = Iperf3Server::start(&self.ssh, &spec)?;
        if live {
            eprintln!(
                "far end: iperf3 {} on {}, port {}, for {} (ended by {})",
                server.remote().version,
                server.host(),
                server.port(),
                if one_off { "one test" } else { "this run" },
                server.bounds().join(", ")
            );
        }
        Ok(StartedIperf3 {
            addr: SocketAddr::new(test_ip, server.port()),
            version: linerate_iperf3::Version::parse(&server.remote().version),
            one_off,
            server: Some(server),
        })
    }
}

/// A stock iperf3 server started over ssh: where it goes, and its release. Dropping it ends
/// it: a one-test server is given a moment to end after its test first.
#[derive(Debug)]
pub struct StartedIperf3 {
    pub addr: SocketAddr,
    pub version: Option<linerate_iperf3::Version>,
    one_off: bool,
    server: Option<Iperf3Server>,
}

impl Drop for StartedIperf3 {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            // A one-off server exits after its test; one that did not get to it is ended.
            if !self.one_off || !s.wait(Duration::from_secs(3)) {
                s.stop();
            }
        }
    }
}

/// A far end started for this run: where its tests go and its key. Dropping it ends it.
#[derive(Debug)]
pub struct Started {
    pub addr: SocketAddr,
    pub psk: Psk,
    /// What was copied to the far end to run it (`--ssh-copy`).
    pub copied: Option<linerate_facts::FarEndCopy>,
    far: Option<FarEnd>,
}

/// A copy to the far end as the JSON documents carry it (`far_end_copy`).
fn copy_out(c: &Copied, host: &str) -> linerate_facts::FarEndCopy {
    linerate_facts::FarEndCopy {
        host: host.to_string(),
        reason: c.reason.clone(),
        bytes: c.bytes,
        sha256: c.sha256.clone(),
        seconds: c.seconds,
        directory: c.directory.clone(),
        machine: c.machine.clone(),
        libc: c.libc.clone(),
        noexec: c.noexec.clone(),
    }
}

/// A failed connection to a far end started over ssh, said for what it is: the far end does
/// listen, on all its addresses, on a port its kernel picked (unless -p gave one).
pub fn connect_failed(e: &ClientError) -> Option<String> {
    let ClientError::Connect { addr, err, .. } = e else {
        return None;
    };
    Some(format!(
        "connecting to {addr}, where the far end started over ssh listens: {err}. It listens on every address of its host: check that {} is one of them (give the far end's test address as HOST), and that no firewall there drops TCP port {} (else pass -p PORT with a port it lets through)",
        addr.ip(),
        addr.port()
    ))
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(warning) = self.far.take().and_then(FarEnd::finish) {
            eprintln!("linerate: warning: {warning}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_proto::{Direction, TestKind};

    #[test]
    fn limits_are_raised_only_where_the_tests_need_it() {
        let short = TestParams::new(TestKind::TcpBw, Direction::Send);
        assert!(serve_limits([&short]).is_empty());
        let long = TestParams {
            duration_ms: 600_500,
            streams: 100,
            ..short.clone()
        };
        let soak = TestParams {
            duration_ms: 7_200_000,
            soak: true,
            ..short.clone()
        };
        assert_eq!(
            serve_limits([&short, &long, &soak]).join(" "),
            "--max-duration 601 --max-soak-duration 7200 --max-streams 100"
        );
    }

    #[test]
    fn ssh_without_a_value_needs_host() {
        let a = SshArgs {
            ssh: Some(String::new()),
            ssh_command: None,
            ssh_copy: SshCopy::Auto,
        };
        assert!(target(None, &a).is_err());
        let none = SshArgs {
            ssh: None,
            ssh_command: None,
            ssh_copy: SshCopy::Auto,
        };
        assert!(target(None, &none).unwrap().is_none());
        let t = target(Some("10.0.0.2"), &none).unwrap().unwrap();
        assert_eq!(t.host, "10.0.0.2");
        assert!(t.ssh.is_none());
        let given = SshArgs {
            ssh: Some("admin@mgmt".into()),
            ssh_command: None,
            ssh_copy: SshCopy::Never,
        };
        let t = target(Some("10.0.0.2"), &given).unwrap().unwrap();
        assert_eq!(t.host, "10.0.0.2");
        let ssh = t.ssh.unwrap();
        assert_eq!(ssh.host, "admin@mgmt");
        assert_eq!(ssh.copy, CopyMode::Never);
    }
}
