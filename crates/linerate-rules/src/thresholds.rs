//! doctor's thresholds in one place: every limit its rules judge measured results by, named,
//! with where the value comes from (a measurement, a reference, or the reasoning that sets it).
//! The rules in `diagnose.rs` and `pyramid.rs`, and doctor's plan where it decides from a
//! result (the `--discard` re-run), read them from here; `docs/findings.md` states the same
//! figures in words.
//!
//! Adding one: a constant here with its source in its doc comment, its use in the rule, and the
//! figure in that finding's row of `docs/findings.md`.

/// A result reaches its ceiling at this fraction of it (`ceiling.reached`), and a rule that
/// explains a gap (`cpu.saturated`, `tcp.buffers_small`) looks only at results below it.
/// linerate's own: the model's TCP ceiling takes off the headers and encodings it knows, not
/// what it cannot see (ACKs competing on a half-duplex resource, the NIC's and the switch's own
/// overheads, pacing), so a path that carries what its hardware allows lands a few percent
/// below it; a tenth below is where "reached" ends.
pub const CEILING_REACHED_FRACTION: f64 = 0.9;

/// A stream's thread at this share of a core or more saturates it (`cpu.saturated`). Thread CPU
/// time (getrusage per thread) leaves out the softirq work done on the thread's behalf, which
/// the kernel accounts to the core, not the thread, so a thread at 85 % already has the whole
/// core (linerate's own margin for it). doctor re-runs a single stream whose receiver reached it
/// with `--discard` (`linerate_rules::diagnose::receiver_copy`).
pub const THREAD_SATURATED_PERCENT: f64 = 85.0;

/// The busiest core (`/proc/stat`, interrupts included) at this share or more is saturated:
/// what thread accounting misses (softirq) shows there. Below 100 % because `/proc/stat` ticks
/// at 100 Hz: over a 2 s test one tick is 0.5 %, and a saturated core shows a few idle ticks.
pub const CORE_SATURATED_PERCENT: f64 = 95.0;

/// The busiest core is linerate's (so it can name it saturated) only while other processes used
/// less than this many cores in all: at 0.2 cores, other processes held at most a fifth of any
/// core, so a core busy at 95 % or more was at least 75 % linerate's.
pub const QUIET_OTHER_CORES: f64 = 0.2;

/// Other processes using this many cores or more during a test are contention
/// (`cpu.contended`): the results are then a lower bound. linerate's own: an idle host's
/// housekeeping (timers, kworkers, a monitoring agent) is a few hundredths of a core; a third
/// of a core is a process competing, enough to take a CPU-bound stream's core a third of the
/// time.
pub const CONTENDED_OTHER_CORES: f64 = 0.3;

/// Hypervisor steal of this many cores or more is contention (linerate's own): a tenth of a
/// core taken away is a tenth off a stream bound by that core.
pub const CONTENDED_STEAL_CORES: f64 = 0.1;

/// Other processes holding at least this share of the busiest core held that core (the
/// `cpu.contended` message says so, with the share): with a quarter of it or more gone to them,
/// a stream on that core ran at most three quarters of the time (linerate's own line).
pub const OTHERS_HELD_CORE_PERCENT: f64 = 25.0;

/// A shaper limits a direction when the best result there reaches this fraction of the
/// shaper's goodput (`net.shaper`, and `path.asymmetric` leaves a shaped direction alone).
/// linerate's own: a token bucket delivers its rate minus what TCP loses to its drops and
/// backoff at the bucket's edge; a result within 15 % of the shaper's goodput is the shaper's
/// (the veth tests' 2 Gbit/s tbf is judged by it: `netns_doctor.rs`).
pub const SHAPER_REACHED_FRACTION: f64 = 0.85;

/// One direction below this fraction of the other is asymmetric (`path.asymmetric`): single
/// streams of one path differ by a few percent between runs (`docs/ceiling-model.md`: 43.2-47.1
/// Gb/s in alternating runs); a quarter less is a difference of the ends, not noise
/// (linerate's own margin).
pub const ASYMMETRIC_FRACTION: f64 = 0.75;

/// The receiver's copy costs something visible when the `--discard` twin is this many times
/// faster: runs of the same test differ by a few percent (`bench/host_stack.sh`'s alternating
/// runs: 43.2-47.1 Gb/s), within which the copy costs nothing that can be told.
pub const COPY_VISIBLE_RATIO: f64 = 1.05;

/// RDMA within this fraction of the ceiling is at it: the hardware, not TCP, caps both
/// (`rdma.vs_tcp`). linerate's own: RDMA moves the payload with no CPU copy and no per-packet
/// software, so only the hardware path holds it back; 80 % leaves room for the message size and
/// the PCIe read requests the model does not count.
pub const RDMA_NEAR_CEILING_FRACTION: f64 = 0.8;

/// TCP this much below RDMA on the same path (percent) puts the gap down to the IP stack: the
/// verdict names it (`rdma.vs_tcp` explains the gap). linerate's own: within a tenth, the two
/// are as close as two runs of one test on a fast path.
pub const IP_STACK_EXPLAINS_PERCENT: f64 = 10.0;

/// TCP more than this much below RDMA (percent) is a warning: a quarter of what the hardware
/// carries left unused (linerate's own line between worth knowing and worth fixing).
pub const IP_STACK_WARNING_PERCENT: f64 = 25.0;

/// Below this difference (percent) TCP keeps up with RDMA: within a percent, the two figures
/// are the same measurement.
pub const IP_STACK_VISIBLE_PERCENT: f64 = 1.0;

/// Retransmits count only from this many, and above [`RETRANSMIT_RATE`] of the segments sent
/// (`net.retransmits`): TCP retransmits a few segments on every busy path (shapers and switch
/// buffers drop at the edge of the window). A tenth of a percent of loss already costs a fast
/// single stream much of its rate, and doctor has one path, no fleet to compare it with. (Mesh
/// judges a link against its fleet, and from 1 %: its `LOSSY_MIN_RATE`, where a real kernel's
/// TCP through a tbf shaper retransmitted up to 0.7 % of a healthy path's packets.)
pub const RETRANSMITS_MIN: u64 = 50;

/// See [`RETRANSMITS_MIN`].
pub const RETRANSMIT_RATE: f64 = 0.001;

/// A qdisc that dropped at least this many packets during doctor's tests, and more than
/// [`RETRANSMIT_RATE`] of what it passed, lost enough to cost a stream its rate
/// (`net.qdisc_drops` is then a warning, and `net.retransmits` names it): the same line as
/// retransmits, for the same reason. Fewer is the edge of a window a queue clipped once or
/// twice (info).
pub const QDISC_DROPS_MIN: u64 = 50;

/// UDP loss above this percentage at a rate the path should carry is loss (`net.retransmits`):
/// doctor's UDP test runs at half the best TCP result, which a healthy path carries; linerate's
/// own margin of half a percent is for a receiver that wakes late once or twice.
pub const UDP_LOSS_PERCENT: f64 = 0.5;

/// A disk below this fraction of the network's rate limits file copies
/// (`storage.disk_limits_copy`): at half, the copy takes twice as long as the network needs.
pub const DISK_LIMITS_COPY_FRACTION: f64 = 0.5;

/// The host stack's bound (one memory copy per byte per core) is quoted in the verdict only for
/// a single stream that reached at least 1/this of it. It is an upper bound, not an estimate:
/// on an idle machine a single loopback stream reaches 8.5-15.6 % of it (factors 6.4-11.8;
/// `docs/ceiling-model.md`, `bench/host_stack.sh`), so a stream within 12 times the bound is
/// where an idle machine's would be, and the bound says what the stack allows it. A stream
/// further below (6.46 of 402.6 Gb/s, 62 times, on a busy host) is held by something else, and
/// the bound tells the reader nothing: the verdict then gives the rate measured on the spot with
/// the receiver's copy left out (`--discard`) when doctor ran it, or no bound.
pub const STACK_BOUND_SHOWN_WITHIN: f64 = 12.0;

/// Spans with no progress at all totalling this share of a test's measured time or more
/// disturb its result (bench's `stalls`). Alternating single-stream runs of one path differ by
/// a few percent (`docs/ceiling-model.md`: 43.2-47.1 Gb/s, about ±4 %); time with no data
/// beyond 5 % takes more off the average than that spread, so it explains a low figure.
pub const STALLS_DISTURB_FRACTION: f64 = 0.05;

/// A paced test (`-b`) whose writes are this far apart or more has gaps of its own between
/// them: its spans with no progress are its pacing, not stalls, and are not judged. It is the
/// stall watch's resolution (`linerate_engine::meter::STALL_MIN`, 100 ms) halved: a gap of
/// half of it can already merge two looks into one still span.
pub const PACED_GAP_S: f64 = 0.05;

/// An interval whose rate is below this fraction of the run's median interval rate is slow
/// (bench's `slow_intervals`). TCP's own backoff cuts a window to half (Reno) or 0.7 (CUBIC) of
/// what it was, so an interval below a quarter of the median is not congestion control at
/// work on a steady path: something stopped the stream for most of that interval.
pub const SLOW_INTERVAL_FRACTION: f64 = 0.25;

/// Of what a test's interface carried, this much beyond the test's own payload is still the
/// test's (bench's `competing_traffic`): TCP/IP headers (66 bytes per 1448-byte segment on a
/// 1500-byte MTU, 4.6 %), the ACKs going the other way (one per two segments, 2.3 % of the
/// payload counted on the other side) and the control connection; a tenth covers them.
pub const OWN_TRAFFIC_MARGIN: f64 = 0.1;

/// Other traffic on a test's interface of at least this share of the test's own bytes
/// competed with it (bench's `competing_traffic`): on a wire for its bandwidth, on loopback for
/// the CPU that carries every flow's packets. linerate's own line: a tenth more traffic is a
/// tenth of the path's capacity not available to the test, beyond run-to-run spread.
pub const COMPETING_TRAFFIC_FRACTION: f64 = 0.1;

/// Other traffic below this rate is the host's own chatter (ssh, monitoring, name lookups),
/// never a competitor worth naming, whatever the test's rate: 10 Mb/s.
pub const COMPETING_TRAFFIC_MIN_GBPS: f64 = 0.01;

/// `tcp.buffers_small` on a path with no hardware ceiling (virtio, veth, a bridge) sizes the
/// buffers it quotes for this many times the best TCP rate measured on it (either direction,
/// any number of streams), at most the host stack's bound: room for the rate to grow once the
/// window no longer holds it, where the host stack's bound alone (17-25 Gb/s of memory copies
/// in the lab's guests, whose emulated path carries 0.13 Gb/s) would ask for 128-256 MiB of
/// buffers. linerate's own margin; below 10 Gb/s perfSONAR's 32 MiB tier is the floor anyway.
pub const BUFFER_MARGIN: f64 = 4.0;

/// Decibels lost between one end's optic's Tx and the other's Rx above which doctor says the
/// light was lost on the way (`optics.light_lost`): a direct link loses a few tenths of a dB
/// per mated connector (0.3-0.75 dB each) and little in the fibre itself (about 0.4 dB/km
/// single-mode at 1310 nm, 3 dB/km multimode at 850 nm), within the 1.5-2 dB that IEEE 802.3
/// budgets for a short-reach channel's connections; 3 dB, half the light, is a dirty or damaged
/// connector, a bent or broken fibre, or a patch panel between.
pub const LIGHT_LOST_DB: f64 = 3.0;
