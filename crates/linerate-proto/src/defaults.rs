//! Every default of a test and of a server, in one place: the CLI, doctor's plan and the
//! server use these names instead of their own literals.

use std::time::Duration;

/// The TCP port of `linerate serve` (control and TCP data connections); iperf3 has 5201,
/// so the two can run side by side.
pub const PORT: u16 = 5301;

/// A test's length: iperf3's default, long enough for TCP to leave slow start on any path
/// a single host can fill.
pub const DURATION_MS: u64 = 10_000;
/// A file transfer's time limit: the copy ends when the file is sent, so this is only a
/// bound; five minutes copies 30 GB at 1 GB/s.
pub const FILE_DURATION_MS: u64 = 300_000;
/// No warm-up is left out unless asked: the figures then match iperf3's.
pub const OMIT_MS: u64 = 0;
/// One interval report a second, as iperf3 prints them.
pub const INTERVAL_MS: u64 = 1000;
/// The shortest interval the server samples at: shorter ones cost more than they show.
pub const MIN_INTERVAL_MS: u64 = 100;
/// No interval shorter than this fraction of the requested one gets a rate of its own: it is
/// merged with its neighbour. A rate over a few milliseconds is the burst one read or write
/// happened to move (a 55 Gb/s spike from a few-millisecond interval in a 6 Gb/s run on a busy
/// host, where the sampler woke late and the next sample was due just after); at half the
/// requested length the burst weighs at most twice what it does in a full interval.
pub const MIN_INTERVAL_FRACTION: f64 = 0.5;

/// UDP's rate per stream when none is given: unpaced UDP overruns any receiver and
/// measures only the loss, so UDP is paced by default, at a rate gigabit paths carry.
pub const UDP_BITRATE_BPS: u64 = 1_000_000_000;
/// TCP's rate when none is given: as fast as possible.
pub const TCP_BITRATE_BPS: u64 = 0;
/// A UDP datagram's payload: fits a 1500-byte Ethernet MTU with IPv6 and tunnel headers
/// to spare, so no datagram is fragmented.
pub const UDP_LENGTH: u32 = 1400;
/// A latency test's request and response: one byte measures the path, not the copy.
pub const LATENCY_LENGTH: u32 = 1;
/// A file transfer's block: the disk's best sequential size and few system calls.
pub const FILE_LENGTH: u32 = 1024 * 1024;
/// An RDMA bandwidth test's message: large enough that the per-message work is small against
/// its time on the wire (64 KiB is 5 µs at 100 Gb/s), small enough that the window stays small.
pub const RDMA_LENGTH: u32 = 64 * 1024;
/// An RDMA latency test's message: perftest's `*_lat` default (a few bytes, inline).
pub const RDMA_LATENCY_LENGTH: u32 = 8;
/// An RDMA sweep's largest message: perftest's `-a` goes to 8 MiB.
pub const RDMA_SWEEP_LENGTH: u32 = 8 << 20;
/// RDMA operations outstanding per queue pair: 16 × 64 KiB = 1 MiB in flight covers the
/// bandwidth-delay product of 100 Gb/s up to 80 µs of round trip; the CLI lowers it to fit
/// a server's per-test memory bound.
pub const RDMA_WINDOW: u32 = 16;

/// The largest UDP payload: 65535 less the IPv4 and UDP headers.
pub const UDP_MAX_LENGTH: u32 = 65_507;
/// A UDP bandwidth datagram's header: stream, sequence number and timestamp.
pub const UDP_BW_MIN_LENGTH: u32 = 24;
/// A UDP latency request's header: its sequence number.
pub const UDP_LAT_MIN_LENGTH: u32 = 8;
/// Latency tests' busy-poll before blocking, µs: the most a client may ask for (10 ms
/// of a core per round trip is already more than any path needs).
pub const MAX_SPIN_US: u32 = 10_000;
/// The busy-poll a server grants a latency test's echo by default (`serve --max-spin`), µs per
/// wait: enough to cover a round trip on any LAN (loopback busy-polled is about 5 µs, a switched
/// 25G path 10-30 µs), so doctor's latency test measures the path and not the server's wake-up.
/// A larger request is capped to it (the client is told); 0 makes the server always block.
/// What a test can burn stays bounded by its duration (`--max-duration`) and `--max-tests`.
pub const SERVE_MAX_SPIN_US: u32 = 200;
/// The busy-poll doctor asks for when this host has a core to spare for each polling end: the
/// same LAN round trip, so both ends skip the wake-up on any path where it matters.
pub const DOCTOR_SPIN_US: u32 = 200;

/// The default bytes per write for a TCP bulk test of `streams` streams (twice as many
/// connections with `bidir`): 1 MiB for one connection, 256 KiB for two to eight, 128 KiB beyond
/// (at most about 2 MiB of user buffer across the connections).
///
/// Chosen by benchmark, alternating runs of 3 s on loopback and on veth between two namespaces
/// (2 vCPUs, Linux 6.18), since receivers are woken per millisecond of data rather than per
/// arrival (`linerate_engine::tcp::Wake`): 2 streams moved 108 Gb/s with 256 KiB writes against
/// 62 with 1 MiB on loopback, 85 against 43 on veth (medians of 5); 4 streams 91 against 71
/// (512 KiB) on loopback, 47 against 49 on veth; 8 streams 90 against 72 (1 MiB) and 65 (512 KiB)
/// on loopback. Two senders copying 1 MiB each, with their receivers' 1 MiB reads, no longer
/// keep their buffers in cache. One stream alone differed by path and run (loopback 1 MiB 59,
/// 256 KiB 65; veth 1 MiB 30, 256 KiB 26, 512 KiB 45) and keeps 1 MiB: a quarter of the system
/// calls of 256 KiB.
pub fn default_length(streams: u32, bidir: bool) -> u32 {
    const BUDGET: u32 = 2 << 20;
    let connections = streams.saturating_mul(if bidir { 2 } else { 1 });
    if connections <= 1 {
        return 1 << 20;
    }
    let per = (BUDGET / connections).clamp(128 << 10, 256 << 10);
    1 << per.ilog2()
}

/// Tests running at once on a server: a few clients at a time, each with threads of its own;
/// tests that share a host's cores measure each other, so more would only mislead.
pub const MAX_TESTS: u32 = 8;
/// Streams per test and direction: more than any NIC has queues to spread them on.
pub const MAX_STREAMS: u32 = 64;
/// The longest test a server runs: a hung or hostile client holds a slot no longer.
pub const MAX_DURATION_MS: u64 = 300_000;
/// The longest soak a server runs (`serve --max-soak-duration`): a soak is the one test meant to
/// run long (ibdiagnet's method waits 5-10 minutes, `linerate soak` defaults to 10), so it has a
/// limit of its own instead of every test being allowed an hour.
pub const MAX_SOAK_DURATION_MS: u64 = 3_600_000;
/// UDP rate per stream a server allows; 0: no limit (the operator sets one on shared links).
pub const MAX_UDP_BITRATE_BPS: u64 = 0;
/// The longest write a client may ask for: 1 MiB, the best TCP write size (see
/// [`default_length`]); bounds the server's memory per stream.
pub const MAX_LENGTH: u32 = 1024 * 1024;
/// The read buffer of a TCP receiver woken in batches (SO_RCVLOWAT, the default; see
/// `linerate_engine::tcp::Wake`), and its largest mark: it takes up to this much per read
/// whatever the sender's write size, so a server accounts this much per receiving stream.
pub const RECV_BATCH_BYTES: u32 = 1024 * 1024;
/// The largest socket buffer a client may ask for: the kernel caps it further
/// (`net.core.rmem_max`).
pub const MAX_WINDOW: u32 = 256 * 1024 * 1024;
/// The largest file a client may send; 0: bounded by free space only.
pub const MAX_FILE_BYTES: u64 = 0;
/// Buffer memory all running tests may hold together: 1 GiB, eight worst-case tests.
pub const MAX_MEMORY_BYTES: u64 = 1 << 30;
/// Connections in their handshake at once; a flood beyond this is closed at once.
pub const MAX_PENDING: u32 = 64;
/// Time a new connection has to complete its handshake (and a test to get its data
/// connections): a LAN handshake takes milliseconds, so 5 s is generous yet frees a slot soon.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client's connection to the server may take: as long as a server waits.
pub const CONNECT_TIMEOUT: Duration = HANDSHAKE_TIMEOUT;
/// How long a client waits for each answer of the server on the control connection, and for
/// its results past the test's end and grace: twice [`HANDSHAKE_TIMEOUT`], so a server that
/// gives up on a slow handshake says so before the client gives up on it.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);
/// After the test's duration, a side waits at most this long for its streams to end (a last
/// write still in a full socket buffer, a receiver draining it); a side still running then
/// stops its streams and reports what it measured until then.
pub const GRACE: Duration = Duration::from_secs(10);
/// UDP receivers keep listening this long after the senders' deadline, so datagrams still in
/// flight at the end are not counted as lost: far above a LAN's queueing delay, short enough
/// not to pad the test.
pub const UDP_DRAIN: Duration = Duration::from_millis(500);
/// A TCP receiver with no data for this long gives up: the sender is gone or stuck.
pub const IDLE: Duration = Duration::from_secs(10);
/// How long a server waits before it answers a wrong proof of the pre-shared key: guessing
/// keys one connection at a time is then slow.
pub const AUTH_FAILURE_DELAY: Duration = Duration::from_millis(200);
/// How long a side may take to send its results at the end.
pub const RESULTS_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::default_length;

    #[test]
    fn default_length_shrinks_with_the_number_of_connections() {
        assert_eq!(default_length(0, false), 1 << 20);
        assert_eq!(default_length(1, false), 1 << 20);
        assert_eq!(default_length(1, true), 256 << 10);
        assert_eq!(default_length(2, false), 256 << 10);
        assert_eq!(default_length(3, false), 256 << 10);
        assert_eq!(default_length(2, true), 256 << 10);
        assert_eq!(default_length(4, false), 256 << 10);
        assert_eq!(default_length(8, false), 256 << 10);
        assert_eq!(default_length(4, true), 256 << 10);
        assert_eq!(default_length(9, false), 128 << 10);
        assert_eq!(default_length(16, false), 128 << 10);
        assert_eq!(default_length(u32::MAX, true), 128 << 10);
    }
}
