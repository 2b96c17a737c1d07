//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use linerate_model::spec::{LINK_FORMS, PCIE_FORMS};
use linerate_proto::defaults;

/// Is this link at line rate, and if not, exactly why?
#[derive(Debug, Parser)]
#[command(
    name = "linerate",
    version,
    long_about = LONG_ABOUT,
    after_help = ROOT_AFTER_HELP,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When to colour the terminal output.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
}

const LONG_ABOUT: &str = "Is this link running at line rate, and if not, exactly why?

linerate reads the hardware from sysfs, without root or external tools (ports, PCIe, NUMA, IRQs, \
offloads, shapers), computes the chain of ceilings from the signalling rate to TCP goodput, \
measures what the path really carries (TCP, UDP, latency, RDMA, disks, disk-to-disk copies) against \
a `linerate serve` on the other end, and explains the gap: the stage that limits it, and every \
misconfiguration with its evidence and fix. Each command has its own page: `man linerate-doctor`.";

const ROOT_AFTER_HELP: &str = "Exit status: 0 done, 1 a finding or verdict at or above the \
command's threshold (probe, doctor, soak, mesh), 2 could not run.

Examples:
  # a self-check of this machine: memory, disks, loopback
  linerate doctor
  # why the link to server1 is slow (server1 runs `linerate serve`)
  linerate doctor server1
  # every port of this machine: ceiling chain and findings
  linerate probe";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

// The first paragraph of each doc comment is the `about`: the line `linerate --help` lists and
// the man page's NAME line, which `apropos` shows (`linerate-doctor (1)  - explain ...`, the name
// padded to 20 columns), cut past 80 columns: so at most 57 characters here (tests/generated.rs
// checks). The rest is the page's DESCRIPTION.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory every port with its ceiling chain and findings
    ///
    /// Reads sysfs and procfs, without root or external tools: InfiniBand and RoCE ports,
    /// Ethernet netdevs, the PCI function behind each and its slot, NUMA, host limits and
    /// traffic shapers. For each port it computes the ceiling chain (signalling rate, line
    /// encoding, PCIe link, TCP goodput) and the stage that limits it, and lists the
    /// misconfigurations it finds, each with its evidence and fix.
    Probe(ProbeArgs),
    /// Compute the ceiling chain of hardware you do not have yet
    ///
    /// The ceiling chain `linerate probe` computes, for a link, a PCIe slot and an MTU given on
    /// the command line: what a card will carry before you buy or install it.
    Plan(PlanArgs),
    /// Explain why a link is slower than its hardware
    ///
    /// Explain the gap between what a link carries and what its hardware could: with HOST, the
    /// path to a `linerate serve`; without, a self-check of this machine.
    Doctor(DoctorArgs),
    /// Measure memory bandwidth: copy, read and write
    ///
    /// Memory bandwidth: copy, read and write, one thread and all cores, per NUMA node.
    Mem(MemArgs),
    /// Serve tests to bench, doctor and soak clients
    ///
    /// Serve tests to `linerate bench`, `linerate doctor` and `linerate soak` clients: many at
    /// once, each bounded in memory and time.
    Serve(ServeArgs),
    /// Measure TCP, UDP, RDMA or latency to a linerate server
    ///
    /// Measure TCP or UDP throughput, latency, RDMA (--rdma) or a file copy (--file) against a
    /// host running `linerate serve`, with iperf3's flag names.
    Bench(BenchArgs),
    /// Measure a disk: throughput, IOPS and latency
    ///
    /// Measure a directory's disk (or tmpfs, NFS, SMB mount): sequential and random read/write
    /// throughput, IOPS and latency, in a test file of its own that it deletes.
    Disk(DiskArgs),
    /// Measure every link of a cluster and explain the bad ones
    ///
    /// Measure every link of a cluster and explain the bad ones: one process per node, started
    /// by the launcher the cluster already has (mpirun, srun, a Kubernetes Indexed Job, pdsh).
    Mesh(MeshArgs),
    /// Judge a cable by its error counters under steady traffic
    ///
    /// Is this cable good? Steady traffic to a `linerate serve` while both ends' error counters
    /// are sampled every interval, then a verdict per port and end with its rule and source.
    Soak(SoakArgs),
    /// Show every port live, against its ceiling, errors judged
    ///
    /// Every port live: Ethernet, IPoIB, InfiniBand, RoCE, iWARP and bonds side by side, each
    /// with its rates, a bar of the rate against its ceiling from the ceiling chain and the
    /// stage that sets it, its link state, and its error counters judged as they move by
    /// soak's rules over a rolling window; flaps and downtrains marked with their time. A full
    /// screen on a terminal; one line per port per interval in a pipe; one JSON object per
    /// interval with --json-stream; Prometheus metrics with --listen.
    Watch(WatchArgs),
    /// Write the man pages or a shell's completion script
    ///
    /// Write the man pages, or a shell's completion script, from these same definitions (for
    /// packages and installs from source).
    Generate(GenerateArgs),
    /// Print or write the configuration that makes links fast
    ///
    /// Print (or, with --apply, write) the configuration that makes this machine's links fast:
    /// IPoIB connected mode, a subnet manager, NFS over RDMA, socket buffers, IRQ affinity.
    Setup(SetupArgs),
}

// Every subcommand's `--help` ends with an `Examples:` section: a `# comment` line, then the
// command, for two or three commands that work as written (`server1` stands for a host running
// `linerate serve`). The tests below parse every example with these same definitions.

const GENERATE_EXAMPLES: &str = "Exit status: 0 written, 2 could not write.

Examples:
  # the man pages, where man finds them
  linerate generate man /usr/local/share/man/man1
  # bash completion for this user
  linerate generate completions bash \\
    > ~/.local/share/bash-completion/completions/linerate
  # zsh completion (with ~/.zfunc in fpath)
  linerate generate completions zsh > ~/.zfunc/_linerate";

#[derive(Debug, Args)]
#[command(after_help = GENERATE_EXAMPLES)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: GenerateWhat,
}

#[derive(Debug, Subcommand)]
pub enum GenerateWhat {
    /// Write the man pages into a directory
    ///
    /// Write linerate.1 and one page per subcommand (linerate-doctor.1, ...) into DIR, creating
    /// it if needed; existing pages of the same names are replaced.
    #[command(
        after_help = "Exit status: 0 every page written, 2 could not create DIR or write a page.

Examples:
  # system-wide, where man finds them
  linerate generate man /usr/local/share/man/man1
  # into ./man, to read one with `man -l man/linerate-doctor.1`
  linerate generate man man"
    )]
    Man {
        /// The directory to write the pages to (e.g. /usr/local/share/man/man1).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Print a shell's completion script
    ///
    /// Print the completion script for SHELL on standard output, to be saved where that shell
    /// loads completions from (see the examples).
    #[command(after_help = "Exit status: 0 printed, 2 could not write it.

Examples:
  # bash, for this user
  linerate generate completions bash \\
    > ~/.local/share/bash-completion/completions/linerate
  # fish, for this user
  linerate generate completions fish \\
    > ~/.config/fish/completions/linerate.fish")]
    Completions {
        /// The shell to complete in.
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
#[command(
    after_help = "Every process is one rank; rank 0 runs the coordinator, which admits the ranks, runs the \
schedule round by round and gathers the measurements. A rank that never joins or dies is reported \
unreachable; when rank 0 dies, every other rank ends with exit status 2 and what it measured.

Exit status: 0 every link measured, 1 a link or node bad or unreachable, 2 could not run.

Examples:
  # 8 ranks by hand: rank 0 on 10.0.0.1, the others pointed at it
  linerate mesh --rank 0 --size 8 --coordinator 10.0.0.1:5302
  # under `mpirun -np 16 --map-by ppr:1:node` or `srun`: rank and size from the launcher
  linerate mesh --coordinator node01:5302 --json-stream
  # under `pdsh -w node[01-16]`: the rank is this host's position in --hosts
  linerate mesh --hosts node[01-16] --psk-file /etc/linerate/key"
)]
#[allow(clippy::struct_excessive_bools)]
pub struct MeshArgs {
    /// This process's rank (0..size); default: from the launcher's environment.
    #[arg(long)]
    pub rank: Option<u32>,
    /// How many ranks the run has; default: from the launcher's environment or --hosts.
    #[arg(long)]
    pub size: Option<u32>,
    /// The hosts of the run, in rank order, as a Slurm host list (`node[01-16]`).
    #[arg(long, value_name = "HOSTLIST")]
    pub hosts: Option<String>,
    /// This host's name in --hosts, when its host name is not.
    #[arg(long = "self", value_name = "NAME")]
    pub self_name: Option<String>,
    /// Where rank 0's coordinator listens (HOST or HOST:PORT, default port 5302): rank 0 listens
    /// on that port, the others connect to it.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: Option<String>,
    /// A directory every rank sees (NFS, a shared volume) to exchange the coordinator's address.
    #[arg(long, value_name = "DIR")]
    pub rendezvous_dir: Option<PathBuf>,
    /// With --rendezvous-dir: the run's name, the same on every rank and new for each run
    /// (default: SLURM_JOB_ID.SLURM_STEP_ID or PMIX_NAMESPACE).
    #[arg(long, value_name = "NAME", requires = "rendezvous_dir")]
    pub job: Option<String>,
    /// This rank's data address (default: the local address that routes to the coordinator).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// This rank's data server port (default: one the kernel picks; the coordinator tells the
    /// others).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub data_port: u16,
    /// Pre-shared key file: authenticates every rank to the coordinator and to the others' data
    /// servers (challenge-response; the key never crosses the wire). Give every rank the same.
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Which links in which round: pairwise (every ordered pair), ring, quick (n/2 links),
    /// incast:K (K senders to one receiver) or file:PATH (`<round> <rank-or-host> <rank-or-host>` lines).
    #[arg(long, value_name = "SCHEDULE", default_value = "pairwise")]
    pub schedule: String,
    /// Seconds each bandwidth test runs (each direction of each link).
    #[arg(short = 't', long = "time", value_name = "SECS", default_value = "2", value_parser = secs)]
    pub time: u64,
    /// At most this many flows at once (protects oversubscribed fabrics); default: a whole round.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent_pairs: Option<u32>,
    /// Run the flows on the RDMA engine (libfabric) instead of TCP.
    #[arg(long)]
    pub rdma: bool,
    /// With --rdma: the libfabric provider (verbs, tcp, ...); default: the first that offers RMA.
    #[arg(long, value_name = "NAME", requires = "rdma")]
    pub provider: Option<String>,
    /// Print the final document as JSON on rank 0's standard output.
    #[arg(long)]
    pub json: bool,
    /// One JSON line per measurement as it happens, on rank 0's standard output.
    #[arg(long)]
    pub json_stream: bool,
    /// Write the matrix as CSV to FILE (rank 0).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write an HTML report to FILE (rank 0).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Seconds the ranks have to join; the missing ones are then unreachable.
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = secs)]
    pub join_timeout: u64,
    /// Seconds a rank (or the coordinator) may stay silent before it counts as gone.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = secs)]
    pub heartbeat_timeout: u64,
    /// Rank 0: the most ranks its coordinator admits; a larger --size is refused at start, and
    /// so is a join from a rank or size beyond it.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_ranks: u32,
    /// Data server: the longest test it accepts, seconds (default: serve's 300, or --time if
    /// longer); below --time is refused at start.
    #[arg(long, value_name = "SECS", value_parser = secs)]
    pub max_duration: Option<u64>,
    /// Data server: most tests running at once (default: serve's 8, or --size if more, so
    /// every other rank can send to this one at once).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_tests: Option<u32>,
    /// Data server: total buffer memory of all its running tests (as serve's).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = size)]
    pub max_memory: u32,
}

fn rate(s: &str) -> Result<u64, String> {
    crate::units::parse_rate(s)
}

fn size(s: &str) -> Result<u32, String> {
    crate::units::parse_size(s)
}

fn bytes(s: &str) -> Result<u64, String> {
    crate::units::parse_bytes(s)
}

fn secs(s: &str) -> Result<u64, String> {
    crate::units::parse_secs(s)
}

#[derive(Debug, Args)]
#[command(
    after_help = "The server writes one JSON line per event on stdout (listening, test, refused, dropped).
Data connections use the same TCP port as control; UDP tests use an ephemeral UDP port per test.
Without --once it serves until it is stopped (SIGTERM, SIGINT).

Exit status: 0 --once served its test, 2 could not start (the port taken, an unreadable
--psk-file or --write-dir).

Examples:
  # port 5301 on all addresses
  linerate serve
  # only clients with the key in ./key (make one: `head -c 32 /dev/urandom | base64 > key`)
  linerate serve --psk-file key --max-tests 4
  # also accept `bench --file` copies, into /srv/incoming and nowhere else
  linerate serve --write-dir /srv/incoming"
)]
pub struct ServeArgs {
    /// TCP port for control and data connections.
    #[arg(short, long, default_value_t = linerate_proto::DEFAULT_PORT)]
    pub port: u16,
    /// Address to listen on (`::` for IPv6 and IPv4).
    #[arg(short = 'B', long, value_name = "ADDR", default_value = "0.0.0.0")]
    pub bind: std::net::IpAddr,
    /// Listen on this port too (e.g. 5201, iperf3's), for stock iperf3 clients that cannot be
    /// told another port; both ports serve both protocols, and take iperf3's UDP streams.
    #[arg(long, value_name = "PORT")]
    pub iperf3_port: Option<u16>,
    /// Most tests running at once.
    #[arg(long, default_value_t = defaults::MAX_TESTS, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_tests: u32,
    /// Most streams per test (per direction).
    #[arg(long, default_value_t = defaults::MAX_STREAMS, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub max_streams: u32,
    /// Longest test, seconds.
    #[arg(long, value_name = "SECS", default_value_t = defaults::MAX_DURATION_MS / 1000, value_parser = secs)]
    pub max_duration: u64,
    /// Longest soak (`linerate soak`), seconds: the one test meant to run long.
    #[arg(long, value_name = "SECS", default_value_t = defaults::MAX_SOAK_DURATION_MS / 1000, value_parser = secs)]
    pub max_soak_duration: u64,
    /// Highest UDP rate per stream (e.g. 10G); 0 = no limit.
    #[arg(long, value_name = "RATE", default_value_t = defaults::MAX_UDP_BITRATE_BPS, value_parser = rate)]
    pub max_udp_bitrate: u64,
    /// Largest read/write length a client may ask for.
    #[arg(long, value_name = "BYTES", default_value = "1M", value_parser = size)]
    pub max_length: u32,
    /// Total buffer memory of all running tests.
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = size)]
    pub max_memory: u32,
    /// Require clients to prove they know the key in this file (challenge-response; the key never crosses the wire).
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Seconds a new connection has to complete its handshake.
    #[arg(long, value_name = "SECS", default_value_t = defaults::HANDSHAKE_TIMEOUT.as_secs(), value_parser = secs)]
    pub handshake_timeout: u64,
    /// Most connections in their handshake at once; more are closed immediately.
    #[arg(long, default_value_t = defaults::MAX_PENDING, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_pending: u32,
    /// Exit after serving one test.
    #[arg(long)]
    pub once: bool,
    /// Exit after serving this many tests.
    #[arg(long, value_name = "N", conflicts_with = "once", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_served: Option<u64>,
    /// Exit this long after starting, tests running or not (`90s`, `10m`, or seconds): the hard
    /// deadline of a temporary server.
    #[arg(long, value_name = "TIME", value_parser = duration)]
    pub exit_after: Option<std::time::Duration>,
    /// Exit when standard input closes: the lifeline of a server started over ssh (`--ssh`),
    /// which then ends with the ssh session however its client ended, even killed.
    #[arg(long)]
    pub exit_on_stdin_close: bool,
    /// Read the pre-shared key from the first line of standard input, so it appears in no
    /// command line, environment or file (`--ssh` passes a fresh key this way).
    #[arg(long, conflicts_with = "psk_file")]
    pub psk_stdin: bool,
    /// Accept file transfers (`bench --file`) into this directory, and nowhere else: names are
    /// single path components, existing files are never overwritten, incomplete copies removed.
    /// The packaged service's directory, /var/lib/linerate, is deleted with the copies in it
    /// when the package is purged (`dpkg --purge linerate`).
    #[arg(long, value_name = "DIR", group = "files")]
    pub write_dir: Option<PathBuf>,
    /// Accept file transfers into a new directory made in PARENT, removed with its contents
    /// when the server exits (`--ssh` uses it for doctor's copy and `bench --file`).
    #[arg(
        long,
        value_name = "PARENT",
        group = "files",
        conflicts_with = "write_dir"
    )]
    pub scratch_write_dir: Option<PathBuf>,
    /// Largest file a client may send (with --write-dir or --scratch-write-dir); 0 = bounded by
    /// free space only.
    #[arg(long, value_name = "BYTES", default_value_t = defaults::MAX_FILE_BYTES, value_parser = file_size, requires = "files")]
    pub max_file_size: u64,
    /// Latency tests: the longest busy-poll per wait the echo grants a client's `--spin`, µs;
    /// more is capped to it and the client is told; 0 = always block.
    #[arg(long, value_name = "US", default_value_t = defaults::SERVE_MAX_SPIN_US, value_parser = clap::value_parser!(u32).range(0..=i64::from(defaults::MAX_SPIN_US)))]
    pub max_spin: u32,
    /// Read the port counters a soak samples under this directory instead of `/` (a copy or a
    /// fixture tree; the ethtool statistics are read only from the live system).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
}

/// `10m`, `90s`, `1h30m`, or plain seconds (`600`): a duration for --duration and --interval.
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return t
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e9)
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| {
                format!("`{s}` is not a duration: expected e.g. 10m, 90s, 1h30m or seconds")
            });
    }
    humantime::parse_duration(t).map_err(|e| {
        format!("`{s}` is not a duration ({e}): expected e.g. 10m, 90s, 1h30m or seconds")
    })
}

/// `--ssh`: a temporary `linerate serve` this run starts on the far end through ssh
/// (`doctor`, `bench`, `soak`).
#[derive(Debug, Clone, Args)]
pub struct SshArgs {
    /// Start a temporary `linerate serve` on SSHHOST through ssh for this run, and end it with
    /// the run (default SSHHOST: HOST). Only the start goes through SSH: the tests go straight
    /// to HOST, which may be another address of the same machine.
    #[arg(long, value_name = "[USER@]SSHHOST", num_args = 0..=1, default_missing_value = "", conflicts_with = "psk_file")]
    pub ssh: Option<String>,
    /// With --ssh: the program on SSHHOST, `linerate` (with --iperf3: `iperf3`) by default,
    /// looked up on the PATH of a non-interactive shell there; a path starting with `~/` is in
    /// the login's home.
    #[arg(long, value_name = "PATH", requires = "ssh")]
    pub ssh_command: Option<String>,
    /// With --ssh: when this linerate copies itself to SSHHOST for the run. auto: when SSHHOST
    /// has no `linerate` (or one of an older protocol; not with --ssh-command); always; never.
    /// The copy goes over the same ssh session into a private directory (0700) in
    /// $XDG_RUNTIME_DIR or the temporary directory (another when that one is noexec), is checked
    /// by its SHA-256, and is removed there as soon as its server has started. A far end of
    /// another machine or an older glibc is refused, naming both.
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = SshCopy::Auto, requires = "ssh")]
    pub ssh_copy: SshCopy,
}

/// `--ssh-copy`: when the far end gets a copy of this binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SshCopy {
    Never,
    Auto,
    Always,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 every port clean (or congested, or too little traffic to judge: the
verdict says which), 1 a port marginal or bad, 2 the soak could not run or stopped early (what was
measured until then is still reported).

Examples:
  # ten minutes of traffic both ways to server1 (which runs `linerate serve`)
  linerate soak server1
  # five minutes as JSON, receive errors held to 1 per 10^13 bits
  linerate soak server1 -t 5m --json \\
    --threshold rcv_errors_per_bit=1e-13
  # the local ports only, no traffic, for a link that carries production load
  linerate soak --passive --duration 2m"
)]
#[allow(clippy::struct_excessive_bools)]
pub struct SoakArgs {
    /// The host running `linerate serve` (omit with --passive); with --ssh, its test address.
    #[arg(required_unless_present_any = ["passive", "ssh"], conflicts_with = "passive")]
    pub host: Option<String>,
    /// The server's TCP port [default: 5301; with --ssh, one the far end's kernel picks].
    #[arg(short, long)]
    pub port: Option<u16>,
    /// Refused: a soak judges both ends' port counters, which iperf3's protocol does not
    /// carry; soak against `linerate serve` (--ssh starts one for the run).
    #[arg(long)]
    pub iperf3: bool,
    /// How long to soak (`10m`, `90s`, `1h`, or seconds).
    #[arg(short = 't', long, value_name = "TIME", default_value = "10m", value_parser = duration)]
    pub duration: std::time::Duration,
    /// How often both ends sample their counters (`1s`, `500ms`; at least 100 ms).
    #[arg(short, long, value_name = "TIME", default_value = "1s", value_parser = duration)]
    pub interval: std::time::Duration,
    /// TCP streams per direction.
    #[arg(short = 'P', long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub parallel: u32,
    /// Traffic both ways at once, so both ends receive (the default).
    #[arg(long, conflicts_with_all = ["one_way", "reverse"])]
    pub both_ways: bool,
    /// Traffic one way only: this host sends, the server receives.
    #[arg(long, conflicts_with = "reverse")]
    pub one_way: bool,
    /// Traffic one way only: the server sends, this host receives.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Also run RDMA traffic beside the TCP streams (as `bench --rdma`); automatic when the
    /// route to HOST leaves through an InfiniBand or RoCE port.
    #[arg(long, conflicts_with = "no_rdma")]
    pub rdma: bool,
    /// TCP streams only, also on an InfiniBand or RoCE path.
    #[arg(long)]
    pub no_rdma: bool,
    /// The RDMA traffic's writes in flight (default 16). On a lossy path without flow control
    /// (RoCE without PFC) the transport goes back N on each loss and a large window can stall
    /// it; a smaller one keeps it moving, and the soak still judges what the device counted.
    #[arg(long, value_name = "N", conflicts_with = "no_rdma", value_parser = clap::value_parser!(u32).range(1..=i64::from(linerate_proto::RDMA_MAX_WINDOW)))]
    pub rdma_window: Option<u32>,
    /// Sample the local ports only, without traffic (no BER verdict without traffic).
    #[arg(long, conflicts_with_all = ["rdma", "rdma_window", "both_ways", "one_way", "reverse", "psk_file", "ssh"])]
    pub passive: bool,
    /// Print one JSON document (schemas/soak.schema.json) instead of the terminal view.
    #[arg(long, conflicts_with = "json_stream")]
    pub json: bool,
    /// Print one JSON line per event (schemas/soak-event.schema.json): start, intervals, end.
    #[arg(long)]
    pub json_stream: bool,
    /// Also write a self-contained HTML report with the timeline to this file.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also write `linerate_soak.prom` into this directory for node_exporter's textfile
    /// collector (atomically: a temporary file in DIR, then a rename).
    #[arg(long, value_name = "DIR")]
    pub textfile: Option<PathBuf>,
    /// Read this host's counters under this directory instead of `/` (a copy or a fixture tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Pre-shared key file, when the server requires one.
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Set a threshold of the judge (repeatable, each at most once): ber, pre_fec_ber,
    /// min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min,
    /// xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c. Defaults,
    /// ranges and sources: docs/soak.md (Thresholds); the ones set are printed with the verdict
    /// and listed in the JSON.
    #[arg(long = "threshold", value_name = "NAME=VALUE", value_parser = soak_threshold)]
    pub threshold: Vec<(linerate_soak::Threshold, f64)>,
    #[command(flatten)]
    pub ssh: SshArgs,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Keys on the screen: arrows or j/k move, Enter details, s sort (rate, utilisation,
errors, name), / filter, b bits or bytes, p pause, ? help, q, Esc or Ctrl-C quit.

Exit status: 0 ended (q, --count, Ctrl-C, SIGTERM, SIGHUP), 2 could not run.

Examples:
  # every port on a full screen, refreshed each second
  linerate watch
  # ten intervals of 100 ms as JSON lines, for a script
  linerate watch -i 100ms --count 10 --json-stream
  # Prometheus metrics on 127.0.0.1:9477/metrics, no screen
  linerate watch --listen 9477"
)]
#[allow(clippy::struct_excessive_bools)]
pub struct WatchArgs {
    /// Ports to show: interface names (`eth0`, `ib0`), RDMA ports (`mlx5_0/1`) or RDMA devices
    /// (`mlx5_0`); every port but loopback when none is given.
    #[arg(value_name = "PORT")]
    pub ports: Vec<String>,
    /// How often to sample (`1s`, `250ms`; at least 100 ms).
    #[arg(short, long, value_name = "TIME", default_value = "1s", value_parser = duration)]
    pub interval: std::time::Duration,
    /// Stop after N intervals.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// One JSON object per interval (schemas/watch-stream.schema.json) instead of the screen.
    #[arg(long)]
    pub json_stream: bool,
    /// One line per port per interval instead of the screen (what a pipe or a file gets).
    #[arg(long, conflicts_with = "json_stream")]
    pub plain: bool,
    /// Rates in bytes (GB/s = 10^9 byte/s) instead of bits (Gb/s = 10^9 bit/s).
    #[arg(long)]
    pub bytes: bool,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics while it runs, and no screen
    /// (a port alone listens on 127.0.0.1; give an address to listen elsewhere).
    #[arg(long, value_name = "[ADDR:]PORT")]
    pub listen: Option<String>,
    /// With --listen: the most clients served at once; more are answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 8, requires = "listen",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_clients: u32,
    /// With --listen: the time a client has to send its request and read the answer.
    #[arg(long, value_name = "TIME", default_value = "10s", requires = "listen", value_parser = duration)]
    pub client_timeout: std::time::Duration,
    /// How far back the error counters are judged: soak's verdict over the last TIME (between
    /// half of it and all of it).
    #[arg(long, value_name = "TIME", default_value = "5m", value_parser = duration)]
    pub window: std::time::Duration,
    /// Read the ports under this directory instead of `/` (a copy or a fixture tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Set a threshold of soak's judge (repeatable, each at most once): ber, pre_fec_ber,
    /// min_bits, rcv_errors_per_bit, port_rcv_errors_per_s, link_error_recovery_per_min,
    /// xmit_wait_ticks, dip_fraction, tcp_retrans_fraction or temperature_rise_c (docs/soak.md,
    /// Thresholds).
    #[arg(long = "threshold", value_name = "NAME=VALUE", value_parser = soak_threshold)]
    pub threshold: Vec<(linerate_soak::Threshold, f64)>,
}

/// `--threshold NAME=VALUE`: a known threshold and a value in its range.
fn soak_threshold(s: &str) -> Result<(linerate_soak::Threshold, f64), String> {
    linerate_soak::Threshold::parse_assignment(s)
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 healthy, 1 a finding at or above --fail-on, 2 could not run.

Examples:
  # a self-check of this machine: memory, disks, loopback
  linerate doctor
  # the path to 10.0.0.2, its server started for the run through ssh to admin@node2
  linerate doctor 10.0.0.2 --ssh admin@node2
  # the path to a NAS that runs a stock `iperf3 -s` (judged from this end only)
  linerate doctor nas --iperf3"
)]
#[allow(clippy::struct_excessive_bools)]
pub struct DoctorArgs {
    /// A host running `linerate serve` (with --iperf3: `iperf3 -s`; with --ssh: the far end's
    /// test address); without it, doctor checks this machine alone.
    pub host: Option<String>,
    /// Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end's kernel
    /// picks, with --iperf3 the first of 5201-5299 free there].
    #[arg(short, long)]
    pub port: Option<u16>,
    /// The far end is a stock iperf3 server (`iperf3 -s`, 3.1 or later; with --ssh, one started
    /// there for the run): its TCP and UDP tests run in iperf3's protocol; latency, RDMA, the
    /// disk-to-disk copy and the far end's inventory are skipped with the reason, and the
    /// verdict is judged from this end only.
    #[arg(long, conflicts_with_all = ["psk_file", "ssh_disk", "rdma_provider"])]
    pub iperf3: bool,
    /// A shorter plan (about 10 s).
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// A longer plan (about a minute): longer runs, reverse multi-stream, bidirectional, UDP latency.
    #[arg(long)]
    pub thorough: bool,
    /// Print one JSON document (schemas/doctor.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report with charts.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Exit with status 1 when a finding of at least this severity is present.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Local address to test from.
    #[arg(short = 'B', long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Pre-shared key file, when the server requires one.
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// A directory whose disk joins the storage pyramid (repeatable; default: the current
    /// directory). The first also holds the source of a disk-to-disk copy through the path.
    #[arg(long, value_name = "PATH", conflicts_with = "no_disk")]
    pub disk: Vec<PathBuf>,
    /// Leave disks out: memory and network only.
    #[arg(long)]
    pub no_disk: bool,
    /// Measure RDMA beside TCP with this libfabric provider (by default doctor does so with
    /// `verbs` when this end of the path is an InfiniBand or RoCE port).
    #[arg(long, value_name = "NAME", conflicts_with = "no_rdma")]
    pub rdma_provider: Option<String>,
    /// Do not measure RDMA.
    #[arg(long)]
    pub no_rdma: bool,
    #[command(flatten)]
    pub ssh: SshArgs,
    /// With --ssh: the directory on SSHHOST whose disk receives the disk-to-disk copy, in a
    /// scratch directory the far end makes there and removes (default: the login directory).
    #[arg(long, value_name = "DIR", requires = "ssh")]
    pub ssh_disk: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 measured, 2 could not run.

Examples:
  # copy, read and write bandwidth: one thread, all cores, each NUMA node
  linerate mem
  # 3 s per test with 4 threads, as JSON
  linerate mem -t 3 --threads 4 --json")]
pub struct MemArgs {
    /// Seconds per test.
    #[arg(short = 't', long = "time", value_name = "SECS", default_value = "1", value_parser = secs)]
    pub time: u64,
    /// Bytes per buffer (each thread has two for copy); far larger than the caches.
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = size)]
    pub size: u32,
    /// Threads for the all-cores tests (default: every online CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `--test KIND`: every kind whose test needs no spec of its own (a file transfer has `--file`,
/// RDMA `--rdma`), by its name with hyphens as clap spells values (`tcp-lat`), or as results
/// and JSON spell it (`tcp_lat`). A new kind is offered here without a change.
fn test_kind() -> impl clap::builder::TypedValueParser<Value = linerate_proto::TestKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    use linerate_proto::TestKind;
    let by_test = |k: &TestKind| {
        let t = k.spec().facts().takes;
        !t.file && !t.rdma
    };
    PossibleValuesParser::new(
        TestKind::ALL
            .into_iter()
            .filter(by_test)
            .map(|k| PossibleValue::new(k.as_str().replace('_', "-")).alias(k.as_str())),
    )
    .map(|s| TestKind::from_name(&s.replace('-', "_")).expect("a value of the possible values"))
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 the test completed, 2 could not run or the test did not complete.

Examples:
  # TCP for 10 s, this host sending to server1 (which runs `linerate serve`)
  linerate bench server1
  # copy a file into server1's `serve --write-dir`, timing disk, network and disk
  linerate bench server1 --file big.iso
  # 4 streams, reverse, from 10.0.0.2, its server started over ssh
  linerate bench 10.0.0.2 --ssh node2 -P 4 -R"
)]
#[allow(clippy::struct_excessive_bools)]
pub struct BenchArgs {
    /// The host running `linerate serve` (with --iperf3: `iperf3 -s`; with --ssh: the far
    /// end's test address).
    #[arg(required_unless_present = "ssh")]
    pub host: Option<String>,
    /// Server port [default: 5301, with --iperf3 5201; with --ssh, one the far end's kernel
    /// picks, with --iperf3 the first of 5201-5299 free there].
    #[arg(short, long)]
    pub port: Option<u16>,
    /// Measure against a stock iperf3 server (`iperf3 -s`, 3.1 or later) in iperf3's own
    /// protocol: TCP or UDP bandwidth tests, this host's side measured by linerate, the
    /// server's own figures beside.
    #[arg(long, conflicts_with_all = ["rdma", "file", "latency", "psk_file"])]
    pub iperf3: bool,
    /// Seconds to run (default 10; with --file, the time limit of the copy, default 300).
    #[arg(short = 't', long = "time", value_name = "SECS", value_parser = secs)]
    pub time: Option<u64>,
    /// With --iperf3: end the test once this host has sent or received BYTES after -O
    /// (K, M, G, T: 1024), instead of after -t.
    #[arg(short = 'n', long = "bytes", value_name = "BYTES", value_parser = bytes, requires = "iperf3", conflicts_with = "time")]
    pub bytes: Option<u64>,
    /// With --iperf3: the same in blocks of -l bytes.
    #[arg(short = 'k', long = "blockcount", value_name = "N", requires = "iperf3", conflicts_with_all = ["time", "bytes"], value_parser = clap::value_parser!(u64).range(1..))]
    pub blockcount: Option<u64>,
    /// Parallel streams, one thread each.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub parallel: u32,
    /// Reverse: the server sends, this host receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Seconds of warm-up to leave out of the totals.
    #[arg(short = 'O', long, value_name = "SECS", default_value = "0", value_parser = secs)]
    pub omit: u64,
    /// Seconds between interval reports (0 = none).
    #[arg(short, long, value_name = "SECS", value_parser = secs)]
    pub interval: Option<u64>,
    /// Bytes per write (TCP, default 1M for one connection, 256K for 2-8, 128K beyond; the receiver reads up to 1M), per datagram (UDP, default 1400) or per request (latency, default 1).
    #[arg(short, long, value_name = "BYTES", value_parser = size)]
    pub length: Option<u32>,
    /// Socket buffer size to request (SO_SNDBUF/SO_RCVBUF); with --rdma, the number of
    /// operations outstanding per queue pair (default 16).
    #[arg(short, long, value_name = "BYTES|N", value_parser = size)]
    pub window: Option<u32>,
    /// UDP instead of TCP.
    #[arg(short, long)]
    pub udp: bool,
    /// Target rate per stream, bit/s with K/M/G suffix; 0 = as fast as possible (UDP default 1G, TCP default 0).
    #[arg(short, long, value_name = "RATE", value_parser = rate)]
    pub bitrate: Option<u64>,
    /// Local address to send from.
    #[arg(short = 'B', long, value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub ipv6: bool,
    /// TCP congestion control algorithm (e.g. cubic, bbr).
    #[arg(short = 'C', long, value_name = "ALGO")]
    pub congestion: Option<String>,
    /// Pin this host's stream threads to these CPUs, round robin (e.g. 1 or 0,1).
    #[arg(short = 'A', long, value_name = "CPUS")]
    pub affinity: Option<String>,
    /// Send with sendfile(2) from an in-memory file (no copy from user space).
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
    /// Measure request/response round trips (same as --test tcp_lat, or udp_lat with -u).
    #[arg(long)]
    pub latency: bool,
    /// Latency: poll this many µs for each reply before blocking (both ends), so replies that
    /// come quickly cost no scheduler wake-up. Needs idle cores on both hosts; 0 (the default)
    /// blocks at once, as netperf and sockperf do.
    #[arg(long, value_name = "US", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(linerate_proto::defaults::MAX_SPIN_US)))]
    pub spin: u32,
    /// TCP: the receiver drops the data in the kernel (recv with MSG_TRUNC) instead of copying
    /// it to user space: a diagnostic of how much of the rate the receiving copy costs.
    #[arg(long, conflicts_with_all = ["udp", "latency", "file", "rdma"])]
    pub discard: bool,
    /// TCP: wake the receiver on every arrival, as iperf3's is, instead of once about 1 ms of
    /// data has queued (SO_RCVLOWAT): what a plain application sees, wake-ups included.
    #[arg(long, conflicts_with_all = ["udp", "latency", "file", "rdma"])]
    pub no_rcvlowat: bool,
    /// The test to run.
    #[arg(long, value_name = "KIND", value_parser = test_kind())]
    pub test: Option<linerate_proto::TestKind>,
    /// Print one JSON document at the end (schemas/bench.schema.json).
    #[arg(short = 'J', long, conflicts_with = "json_stream")]
    pub json: bool,
    /// Print one JSON object per line as events happen.
    #[arg(long)]
    pub json_stream: bool,
    /// Pre-shared key file, when the server requires one.
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// Seconds to wait for the server to answer the connection (a firewall that drops the
    /// port shows as this time-out).
    #[arg(long, value_name = "SECS", default_value_t = defaults::CONNECT_TIMEOUT.as_secs(), value_parser = secs)]
    pub connect_timeout: u64,
    /// Copy this file to the server's write directory (`serve --write-dir`): disk → network →
    /// disk, with the time of each layer, to tell which one held the copy back.
    #[arg(long, value_name = "SRC", conflicts_with_all = ["udp", "latency", "test", "reverse", "bidir", "zerocopy", "bitrate"])]
    pub file: Option<PathBuf>,
    /// The name to give the copy on the server (default: SRC's file name).
    #[arg(long, value_name = "NAME", requires = "file")]
    pub file_name: Option<String>,
    /// Do not make the copy durable (fsync) on the server before measuring the end.
    #[arg(long, requires = "file")]
    pub no_fsync: bool,
    /// Ask the server to delete the copy once measured (for repeated benchmarks).
    #[arg(long, requires = "file")]
    pub remove_after: bool,
    /// RDMA through libfabric (bandwidth; with --latency, latency), negotiated with the server
    /// over the control connection.
    #[arg(long, conflicts_with_all = ["udp", "test", "reverse", "bidir", "zerocopy", "bitrate", "file", "congestion"])]
    pub rdma: bool,
    /// libfabric provider: verbs (InfiniBand/RoCE), tcp, ... (default: the first offering RMA).
    #[arg(long, value_name = "NAME", requires = "rdma")]
    pub provider: Option<String>,
    /// This end's RDMA device (mlx5_0, rxe0; with the tcp provider, the interface), like
    /// perftest's -d (default: the one carrying the route to HOST). It must carry that route.
    #[arg(long, value_name = "NAME", requires = "rdma")]
    pub device: Option<String>,
    /// RDMA operation.
    #[arg(long, value_enum, default_value_t = RdmaOpArg::Write, requires = "rdma")]
    pub op: RdmaOpArg,
    /// Every message size from 2 bytes to -l (default 8M) in powers of two, like perftest's -a.
    #[arg(long, requires = "rdma", conflicts_with = "latency")]
    pub sweep: bool,
    /// Queue pairs (connections), each on its own thread.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "rdma", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub qps: u32,
    /// Check every byte of every RDMA message against a pattern (counts mismatches).
    #[arg(long, requires = "rdma")]
    pub verify: bool,
    #[command(flatten)]
    pub ssh: SshArgs,
    /// With --ssh and --file: the directory on SSHHOST the copy is written to, in a scratch
    /// directory the far end makes there and removes when it ends (default: the login directory).
    #[arg(long, value_name = "DIR", requires = "ssh")]
    pub ssh_disk: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RdmaOpArg {
    Write,
    Read,
    Send,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 no finding at or above --fail-on (never, by default), 1 a finding at or
above it, 2 could not run.

Examples:
  # every port of this machine: ceiling chain and findings
  linerate probe
  # as JSON, exit status 1 on any warning or error (for scripts)
  linerate probe --json --fail-on warning"
)]
pub struct ProbeArgs {
    /// Read sysfs and procfs under this directory instead of `/` (a copy or a fixture tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Print one JSON document (schemas/probe.schema.json) instead of the terminal view.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a finding of at least this severity is present.
    #[arg(long, value_enum, default_value_t = FailOn::Never)]
    pub fail_on: FailOn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IpoibModeArg {
    Connected,
    Datagram,
}

#[derive(Debug, Args)]
#[command(after_help = format!("LINK forms: {LINK_FORMS}

PCIE forms: {PCIE_FORMS}

Exit status: 0 done, 2 could not run (a LINK or PCIE it does not know, an MTU out of range).

Examples:
  # what will a ConnectX-3 (FDR) give in an M.2 gen3 x4 slot?
  linerate plan --link 4x-fdr --pcie gen3x4 --mtu 65520
  # 100 GbE in a PCIe 3.0 x16 slot with jumbo frames, as JSON
  linerate plan --link 100gbe --pcie gen3x16 --mtu 9000 --json"))]
pub struct PlanArgs {
    /// The link: `4x-qdr`, `4x-fdr`, `hdr`, `1x-edr`, `10gbe`, `100gbe`, ...
    #[arg(long, value_name = "LINK")]
    pub link: String,
    /// The PCIe link the card gets: `gen2x4`, `gen3x16`, ... (omit to ignore PCIe).
    #[arg(long, value_name = "PCIE")]
    pub pcie: Option<String>,
    /// MTU of the IP interface, to add the TCP goodput stage.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub mtu: Option<u32>,
    /// IPoIB mode for an InfiniBand link with --mtu (default: connected above 4092, else datagram).
    #[arg(long, value_enum)]
    pub ipoib: Option<IpoibModeArg>,
    /// PCIe max payload size in bytes, if you know it (`lspci -vv` as root: DevCtl MaxPayload).
    #[arg(long, value_name = "BYTES", value_parser = ["128", "256", "512", "1024", "2048", "4096"])]
    pub mps: Option<String>,
    /// Print one JSON object with the ceiling instead of the terminal view.
    #[arg(long)]
    pub json: bool,
}

/// A test file size: `parse_size`'s grammar (K, M, G = 2^10, 2^20, 2^30), plus `T` and sizes
/// above 4 GiB (G and T are read as MiB, then scaled).
fn file_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    // In MiB, then scaled: up to 4 PiB.
    let scaled = |num: &str, mult: u64| {
        crate::units::parse_size(&format!("{num}M")).map(|v| u64::from(v) * mult)
    };
    let r = match t.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'t') => scaled(&t[..i], 1 << 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => scaled(&t[..i], 1 << 10),
        _ if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            t.parse::<u64>().map_err(|e| e.to_string())
        }
        _ => crate::units::parse_size(t).map(u64::from),
    };
    r.map_err(|_| {
        format!("`{s}` is not a size; expected bytes with an optional K, M, G or T suffix (K = 1024), e.g. 64M or 20G")
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiskTestArg {
    #[value(name = "seq_read")]
    SeqRead,
    #[value(name = "seq_write")]
    SeqWrite,
    #[value(name = "rand_read")]
    RandRead,
    #[value(name = "rand_write")]
    RandWrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiskEngineArg {
    Auto,
    #[value(name = "io_uring")]
    IoUring,
    Sync,
}

#[derive(Debug, Args)]
#[command(
    after_help = "The test file (.linerate-disk-<pid>-<random>) is deleted at the end, on error and on Ctrl-C.
Default size: min(2 x RAM, 25% of free space), at least 256 MiB; 4 GiB with O_DIRECT on a local disk; 1 GiB on tmpfs.
GB/s = 10^9 bytes/s, Gb/s = 10^9 bits/s.

Exit status: 0 done, 2 could not run or a test stopped early.

Examples:
  # the disk holding /var/tmp, all four tests
  linerate disk /var/tmp
  # sequential reads and writes only, in a 1 GiB file, 10 s each, as JSON
  linerate disk /var/tmp --tests seq_read,seq_write --size 1G -t 10 \\
    --json
  # 4K random reads from 2 threads (fio's numjobs), each with its own ring and half of the file
  linerate disk /dev/shm --tests rand_read --jobs 2"
)]
pub struct DiskArgs {
    /// The directory to test in: a local disk, tmpfs, an NFS or SMB mount.
    pub path: PathBuf,
    /// Test file size (e.g. 64M, 20G); refused if it does not fit with a 5% margin.
    #[arg(long, value_name = "BYTES", value_parser = file_size)]
    pub size: Option<u64>,
    /// Seconds per test.
    #[arg(short = 't', long = "time", value_name = "SECS", default_value = "5", value_parser = secs)]
    pub time: u64,
    /// Block of the sequential tests (a multiple of 4K); random tests use 4K.
    #[arg(long, value_name = "BYTES", default_value = "1M", value_parser = size)]
    pub block: u32,
    /// Operations in flight (io_uring) or threads (sync).
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub qd: u32,
    /// Tests to run, in order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "seq_read,rand_read,seq_write,rand_write"
    )]
    pub tests: Vec<DiskTestArg>,
    /// I/O engine: io_uring, a pool of threads doing pread/pwrite, or io_uring when available.
    #[arg(long, value_enum, default_value_t = DiskEngineArg::Auto)]
    pub engine: DiskEngineArg,
    /// Do not try O_DIRECT: measure through the page cache.
    #[arg(long)]
    pub buffered: bool,
    /// Jobs at once (fio's numjobs): each a thread with its own ring (or thread pool) and its
    /// own region of the test file; figures are per job and in total.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Polled I/O (IORING_SETUP_IOPOLL): needs O_DIRECT and a device with poll queues (NVMe
    /// with nvme.poll_queues); refused with the reason elsewhere (tmpfs, virtio).
    #[arg(long)]
    pub hipri: bool,
    /// A kernel thread takes submissions from the ring (IORING_SETUP_SQPOLL); it keeps a CPU
    /// busy while the test runs.
    #[arg(long)]
    pub sqpoll: bool,
    /// Print one JSON document: {schema_version, tests: [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn parse() -> Cli {
    Cli::parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::man::AfterHelp;
    use clap::CommandFactory;

    /// Every subcommand's path (`["bench"]`, `["generate", "man"]`, ...), clap's `help` aside.
    fn subcommand_paths(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            subcommand_paths(sub, &path, out);
            out.push(path);
        }
    }

    /// The command at `path` under the root.
    fn find<'a>(root: &'a clap::Command, path: &[String]) -> &'a clap::Command {
        path.iter().fold(root, |c, name| {
            c.find_subcommand(name)
                .unwrap_or_else(|| panic!("no subcommand {name}"))
        })
    }

    /// Every command's `after_help` follows the convention its man page is made from
    /// (`man::AfterHelp`): an `Exit status:` paragraph, then two or three examples, each a
    /// command of that command whose arguments these definitions accept, in lines a man page
    /// shows within 80 columns; `--help` ends with them.
    #[test]
    fn every_command_has_an_exit_status_and_examples_that_parse() {
        let root = Cli::command();
        let mut paths = vec![Vec::new()];
        subcommand_paths(&root, &[], &mut paths);
        assert!(paths.len() >= 11, "{paths:?}");
        for path in paths {
            let cmd = find(&root, &path);
            let after = cmd
                .get_after_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            let a = AfterHelp::parse(&after).unwrap_or_else(|e| panic!("{path:?}: {e}\n{after}"));
            assert!(!a.exit_status.is_empty(), "{path:?}: no exit status");
            assert!(
                (2..=3).contains(&a.examples.len()),
                "{path:?}: {} examples",
                a.examples.len()
            );
            let mut args = vec!["linerate".to_string()];
            args.extend(path.iter().cloned());
            args.push("--help".into());
            let err = Cli::try_parse_from(&args).expect_err("--help ends parsing");
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{path:?}");
            let help = err.to_string();
            let last = a.examples.last().unwrap().lines.last().unwrap().trim();
            assert!(
                help.trim_end().ends_with(last),
                "{path:?}: --help does not end with the examples:\n{help}"
            );
            for ex in &a.examples {
                for line in &ex.lines {
                    assert!(
                        line.chars().count() <= crate::man::EXAMPLE_WIDTH,
                        "{path:?}: `{line}` is wider than {} characters: continue it on \
                         the next line after ` \\`",
                        crate::man::EXAMPLE_WIDTH
                    );
                }
                let cmdline = ex.command();
                // The command's own words: a redirection or pipe belongs to the shell.
                let words: Vec<&str> = cmdline
                    .split_whitespace()
                    .take_while(|w| !matches!(*w, ">" | ">>" | "|"))
                    .collect();
                assert!(
                    words.get(1..=path.len()).is_some_and(|w| w == path),
                    "{path:?}: `{cmdline}` is not an example of `linerate {}`",
                    path.join(" ")
                );
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{path:?}: the example `{cmdline}` does not parse: {e}");
                }
            }
        }
    }

    /// The check above can fail: a section without examples, an example that is not a
    /// `linerate` command, or one that does not parse, is refused.
    #[test]
    fn examples_check_refuses_bad_sections() {
        assert!(AfterHelp::parse("usage\n").is_err());
        assert!(AfterHelp::parse("x\nExamples:\n  linerate probe\n").is_err());
        assert!(AfterHelp::parse("x\nExamples:\n  # one\n  ls\n").is_err());
        assert!(AfterHelp::parse("x\nExamples:\n  # one\n  linerate probe --nope\n").is_ok());
        assert!(Cli::try_parse_from(["linerate", "probe", "--nope"]).is_err());
    }

    /// The defaults written as text for `--help` ("1M", "1G") are proto's defaults.
    #[test]
    fn serve_defaults_are_protos() {
        let Command::Serve(a) = Cli::try_parse_from(["linerate", "serve"]).unwrap().command else {
            panic!("not serve");
        };
        assert_eq!(a.port, defaults::PORT);
        assert_eq!(a.max_tests, defaults::MAX_TESTS);
        assert_eq!(a.max_streams, defaults::MAX_STREAMS);
        assert_eq!(a.max_duration, defaults::MAX_DURATION_MS);
        assert_eq!(a.max_soak_duration, defaults::MAX_SOAK_DURATION_MS);
        assert_eq!(a.max_udp_bitrate, defaults::MAX_UDP_BITRATE_BPS);
        assert_eq!(a.max_length, defaults::MAX_LENGTH);
        assert_eq!(u64::from(a.max_memory), defaults::MAX_MEMORY_BYTES);
        assert_eq!(
            a.handshake_timeout,
            u64::try_from(defaults::HANDSHAKE_TIMEOUT.as_millis()).unwrap()
        );
        assert_eq!(a.max_pending, defaults::MAX_PENDING);
        assert_eq!(a.max_file_size, defaults::MAX_FILE_BYTES);
        assert_eq!(a.max_spin, defaults::SERVE_MAX_SPIN_US);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SetupTopicArg {
    Ipoib,
    Opensm,
    NfsRdma,
    Sysctl,
    Irq,
    Governor,
    RdmaStack,
    Rings,
    Roce,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RendererArg {
    Auto,
    Netplan,
    Networkmanager,
    Networkd,
    Ifupdown,
    Ifcfg,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Nothing is changed without --apply. --apply backs up every file it changes and prints the
id for --rollback; it never restarts networking unless --restart is given (that can cut the
SSH connection you are typing in).

Exit status: 0 printed, written or rolled back, 2 could not run, or a --restart command failed.

Examples:
  # what would make this machine's links fast (prints files and commands, changes nothing)
  linerate setup
  # write IPoIB connected mode for ib0 (as root), in the syntax of the renderer in charge
  linerate setup ipoib --iface ib0 --apply
  # undo that: the id is the one --apply printed
  linerate setup --rollback 1764000000-4242"
)]
pub struct SetupArgs {
    /// What to configure.
    #[arg(value_enum, default_value_t = SetupTopicArg::All)]
    pub topic: SetupTopicArg,
    /// Only this interface.
    #[arg(long, value_name = "IF")]
    pub iface: Option<String>,
    /// The network configuration system to edit; auto finds the one in charge of the interface.
    #[arg(long, value_enum, default_value_t = RendererArg::Auto)]
    pub renderer: RendererArg,
    /// Read and write under this directory instead of `/` (a copy or a fixture tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Write the files (root needed for `/`): backups first, all or nothing.
    #[arg(long, conflicts_with = "rollback")]
    pub apply: bool,
    /// With --apply: also run the restart command of each interface concerned.
    #[arg(long, requires = "apply")]
    pub restart: bool,
    /// Restore the files of an earlier --apply, byte for byte.
    #[arg(long, value_name = "ID")]
    pub rollback: Option<String>,
    /// The round-trip time the TCP buffers are sized for (sysctl), in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10.0)]
    pub rtt_ms: f64,
    /// The rate the TCP buffers are sized for (sysctl), in Gb/s (10^9 bit/s) [default: the
    /// fastest port's ceiling]; `linerate doctor` quotes it with the round trip it measured.
    #[arg(long, value_name = "GBPS")]
    pub gbps: Option<f64>,
    /// This node runs the subnet manager (opensm): only then does setup plan one.
    #[arg(long)]
    pub sm_node: bool,
    /// NFS over RDMA: the server's export (`server:/export`) for a client's mount and fstab line.
    #[arg(long, value_name = "SERVER:/PATH")]
    pub nfs_mount: Option<String>,
    /// RoCE: the 802.1p priority its traffic is to use, with PFC on it (0-7).
    #[arg(long, value_name = "P", default_value_t = linerate_setup::roce::DEFAULT_PRIORITY, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub roce_priority: u8,
    /// RoCE: the DSCP its traffic is to carry, mapped to that priority (0-63); rdma_cm's
    /// default ToS carries it with ECN-capable transport (26 → ToS 106).
    #[arg(long, value_name = "DSCP", default_value_t = linerate_setup::roce::DEFAULT_DSCP, value_parser = clap::value_parser!(u8).range(0..=63))]
    pub roce_dscp: u8,
    /// Print one JSON document (schemas/setup.schema.json) instead of the terminal view.
    #[arg(long)]
    pub json: bool,
}
