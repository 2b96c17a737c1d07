//! The window and the buffers: `tcp.buffers_small`, where the TCP window (what the socket
//! buffer limits allow in flight over the round trip), not the path, sets a test's rate: from
//! the kernel's own accounting (TCP_INFO) when it has it, else from the measured round trip;
//! with the bound the verdict quotes and the buffers `linerate setup sysctl` writes to lift it.

use linerate_facts::{Finding, FindingId, Severity, TcpBufferSizes, SYSCTL_FILE};
use linerate_proto::Direction;
use linerate_units::{fmt_num, fmt_round};

use super::context::Ctx;
use super::input::{dir_name, DiagnoseInput, Measured};
use super::registry::{rule, FromFacts, Output};
use crate::thresholds::{BUFFER_MARGIN, CEILING_REACHED_FRACTION};

/// A test the TCP window may explain, and how strongly (higher wins): from 1 up when the
/// kernel counted the wait, negative (closeness of bytes in flight to the limit) when estimated.
pub(super) struct WindowCandidate<'a> {
    score: f64,
    test: &'a Measured,
    inflight: f64,
    wmem: Option<u64>,
    rmem: Option<u64>,
}

/// The share of its busy time a sender waited on the receive window or its send buffer
/// (TCP_INFO) from which the window, not the path, sets the rate. With 16 KiB buffers on a
/// veth pair the kernel counts 47-53%; healthy paths 0-2%.
pub const WINDOW_LIMITED_PERCENT: f64 = 25.0;

/// Below this share (and busy ≥ 90% of the test) the window is ruled out.
pub const WINDOW_CLEAR_PERCENT: f64 = 5.0;

/// The test the TCP window explains best, if any: of direction `only` when given.
pub(super) fn window_candidate<'a>(
    c: &Ctx<'a>,
    only: Option<Direction>,
) -> Option<WindowCandidate<'a>> {
    let i = c.i;
    let mut candidate: Option<WindowCandidate<'a>> = None;
    for t in i
        .tests
        .iter()
        .filter(|t| t.is_tcp_bw(Direction::Send) || t.is_tcp_bw(Direction::Receive))
        .filter(|t| only.is_none_or(|d| t.direction == d))
    {
        let Some(rtt) = t.rtt_us.filter(|r| *r > 0.0) else {
            continue;
        };
        let (snd, rcv) = if t.direction == Direction::Send {
            (Some(&i.local), i.remote.as_ref())
        } else {
            (i.remote.as_ref(), Some(&i.local))
        };
        let wmem = snd.and_then(|e| e.sockets.tcp_wmem).map(|w| w[2]);
        let rmem = rcv.and_then(|e| e.sockets.tcp_rmem).map(|r| r[2]);
        // Linux gives about half of the receive buffer to the window.
        let limit = [wmem, rmem.map(|r| r / 2)].into_iter().flatten().min();
        let per_stream = t.gbps / f64::from(t.streams.max(1));
        let inflight = per_stream * 1e9 / 8.0 * rtt * 1e-6;
        let below_ceiling =
            c.pc.gbps
                .is_none_or(|g| t.gbps < CEILING_REACHED_FRACTION * g);
        let ratio = limit.filter(|l| *l > 0).map(|l| inflight / l as f64);
        let estimate = || {
            // The test whose bytes in flight sit closest to what the buffer limits allow,
            // between 0.25 (small buffers) or 0.5 (large) and 3 times the limit. Socket buffers
            // also pay for skb overhead, so a window of a quarter of a small buffer can be the
            // limit; a large buffer holds 64 KiB segments with little overhead. Smoothed RTT
            // samples are inflated by queueing and hypervisor stalls; far above the limit the
            // window cannot be what holds the rate.
            limit.zip(ratio).and_then(|(limit, ratio)| {
                let low = if limit < 256 * 1024 { 0.25 } else { 0.5 };
                (low..=3.0).contains(&ratio).then(|| -ratio.ln().abs())
            })
        };
        let score = match (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
            // TCP_INFO counted the sender waiting on the receive window or its send buffer, with
            // the window near what the limits allow: a receiver that does not read fast enough
            // also closes the window, and then in flight stays far below the limit.
            (Some(r), Some(s))
                if r + s >= WINDOW_LIMITED_PERCENT && ratio.is_none_or(|x| x >= 0.1) =>
            {
                Some(1.0 + (r + s) / 100.0)
            }
            // Waiting on neither, with buffers of 256 KiB or more (or busy nearly all the
            // test): whatever limits the rate, it is not the window, however large the RTT
            // makes it look. A loaded host inflates the smoothed RTT (1.4 ms measured on a
            // healthy veth path with the other core busy) and leaves a stream's queue empty
            // while its thread waits for a core, which lowers the busy share; neither makes a
            // multi-megabyte window the limit.
            (Some(r), Some(s))
                if r + s < WINDOW_CLEAR_PERCENT
                    && (limit.is_some_and(|l| l >= 256 * 1024)
                        || t.tcp_busy_percent.is_some_and(|b| b >= 90.0)) =>
            {
                None
            }
            // In between, or an idle sender (with tiny buffers on a short path the socket
            // drains before the sender is scheduled again, which the kernel counts as idle, not
            // limited), or no figures: the estimate decides.
            _ => estimate(),
        };
        if let Some(score) = score.filter(|_| below_ceiling) {
            if candidate.as_ref().is_none_or(|x| score > x.score) {
                candidate = Some(WindowCandidate {
                    score,
                    test: t,
                    inflight,
                    wmem,
                    rmem,
                });
            }
        }
    }
    candidate
}

/// What the window allows a path and what would lift it, for the verdict's words: the window
/// the buffer limits allow one stream, the round trip, the rate that window allows, and the
/// buffers `linerate setup sysctl --rtt-ms R --gbps G` writes for the path's ceiling.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WindowBound {
    /// Bytes one stream may keep in flight under the limits (send buffer max, half the
    /// receive buffer max), when both ends' limits are known.
    window: Option<u64>,
    rtt_us: f64,
    /// `window` / RTT, Gb/s per stream.
    bound_gbps: Option<f64>,
    /// The round trip and rate the buffers are sized for (setup's `--rtt-ms`, `--gbps`).
    rtt_ms: u64,
    target_gbps: f64,
    sizes: TcpBufferSizes,
}

impl WindowBound {
    /// `linerate setup sysctl --rtt-ms 21 --gbps 25`: the command that writes the sizes.
    fn setup_command(&self) -> String {
        format!(
            "linerate setup sysctl --rtt-ms {} --gbps {} --apply",
            self.rtt_ms,
            fmt_num(self.target_gbps)
        )
    }

    /// The verdict's words (no colon: the verdict reads `limited by WHY: figures`).
    pub(super) fn words(&self) -> String {
        let now = match (self.window, self.bound_gbps) {
            (Some(w), Some(g)) => format!(
                "a window of at most {w} bytes over a {} ms round trip allows {} Gb/s per stream",
                fmt_round(self.rtt_us / 1000.0, 1),
                fmt_round(g, 3)
            ),
            _ => format!(
                "window / RTT at a {} ms round trip",
                fmt_round(self.rtt_us / 1000.0, 1)
            ),
        };
        format!(
            "TCP socket buffer limits ({now}; buffers of {} bytes on both ends, which `{}` writes, allow {} Gb/s)",
            self.sizes.tcp_rmem[2],
            self.setup_command(),
            fmt_num(self.target_gbps)
        )
    }
}

/// The best TCP bandwidth result of any direction (not a `--discard` run, not a failed one).
fn best_tcp_gbps(i: &DiagnoseInput) -> f64 {
    i.tests
        .iter()
        .filter(|t| t.is_tcp_result())
        .map(|t| t.gbps)
        .fold(0.0, f64::max)
}

/// `tcp.buffers_small`'s output: its finding, the direction of the test it explains, and the
/// bound the verdict quotes when that is the judged direction.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WindowLimit {
    pub(super) finding: Finding,
    pub(super) dir: Direction,
    pub(super) bound: WindowBound,
}

impl Output for Option<WindowLimit> {
    fn findings(&self) -> &[Finding] {
        self.as_ref()
            .map_or(&[], |w| std::slice::from_ref(&w.finding))
    }
}

/// `tcp.buffers_small`: the kernel's own accounting when it has it, else the measured RTT.
/// The judged direction's test first (the verdict names the window only for it), else the
/// other's ([`WindowLimit`]).
impl FromFacts for rule::TcpBuffersSmall {
    type Output = Option<WindowLimit>;

    fn run(self, c: &Ctx<'_>) -> Option<WindowLimit> {
        let WindowCandidate {
            test: t,
            inflight,
            wmem,
            rmem,
            ..
        } = window_candidate(c, Some(c.dir)).or_else(|| window_candidate(c, None))?;
        let rtt = t.rtt_us.unwrap_or(0.0);
        let per_stream = t.gbps / f64::from(t.streams.max(1));
        // Unacknowledged data stays in the send buffer, so no more than it can be in flight: an
        // estimate above it (rate × a smoothed RTT inflated by stalls) is shown as the buffer.
        let inflight = wmem.map_or(inflight, |w| inflight.min(w as f64));
        // Sized for the path's hardware ceiling at the round trip measured, in whole milliseconds
        // up: the sizes `linerate setup sysctl` writes for them. A path with no hardware ceiling
        // (virtio, veth, a bridge) is sized for what it was seen to carry, with a margin: its
        // ceiling is only the host stack's bound, which may be far above what the hypervisor's
        // path carries (17-25 Gb/s of memory copies on a 0.13 Gb/s emulated link would ask for
        // 128-256 MiB of buffers).
        let target = match c.pc.gbps {
            Some(g) if !c.pc.per_stream => g,
            bound => {
                let seen = best_tcp_gbps(c.i) * BUFFER_MARGIN;
                bound.map_or(seen, |b| seen.min(b))
            }
        }
        .max(t.gbps);
        let target = if target >= 1.0 {
            target.ceil()
        } else {
            (target * 1000.0).ceil() / 1000.0
        };
        let rtt_ms = (rtt / 1000.0).ceil().max(1.0) as u64;
        let sizes = TcpBufferSizes::for_path(target, rtt_ms as f64);
        let window = wmem.zip(rmem).map(|(w, r)| linerate_facts::window_of(w, r));
        let bound = WindowBound {
            window,
            rtt_us: rtt,
            bound_gbps: window
                .filter(|_| rtt > 0.0)
                .map(|w| w as f64 * 8.0 / (rtt * 1e-6) / 1e9),
            rtt_ms,
            target_gbps: target,
            sizes,
        };
        let kernel = match (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
            (Some(r), Some(s)) => format!(
                "; of the time it had data to send, the kernel counted the sender waiting {}% on the receiver's window and {}% on its own send buffer",
                fmt_num(r.round()),
                fmt_num(s.round())
            ),
            _ => String::new(),
        };
        let mut f = Finding::new(
            FindingId::TcpBuffersSmall,
            Severity::Warning,
            format!(
                "test:tcp_bw {} {} stream(s)",
                dir_name(t.direction),
                t.streams
            ),
        )
        .evidence("rtt_us", fmt_num(rtt))
        .evidence("gbps_per_stream", fmt_round(per_stream, 3))
        .evidence("bytes_in_flight", format!("{inflight:.0}"));
        if let (Some(r), Some(s)) = (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
            f = f
                .evidence(
                    "receive-window-limited % (TCP_INFO tcpi_rwnd_limited / busy)",
                    fmt_num(r),
                )
                .evidence(
                    "send-buffer-limited % (TCP_INFO tcpi_sndbuf_limited / busy)",
                    fmt_num(s),
                );
        }
        let f = f
            .evidence("sender tcp_wmem max", wmem.map_or("?".into(), |w| w.to_string()))
            .evidence("receiver tcp_rmem max", rmem.map_or("?".into(), |r| r.to_string()))
            .message(format!(
                "each stream keeps about {} bytes in flight at a {} µs round trip, near what the socket buffer limits allow (send {} / receive {} bytes max){kernel}: the TCP window, not the path, sets the rate ({} Gb/s per stream = window / RTT)",
                inflight as u64,
                fmt_round(rtt, 1),
                wmem.map_or("?".into(), |w| w.to_string()),
                rmem.map_or("?".into(), |r| r.to_string()),
                fmt_round(per_stream, 2)
            ))
            .fix(format!(
                "On both ends: `{}` writes buffers for {} Gb/s at a {} ms round trip to {SYSCTL_FILE}, which load at boot, and `sysctl -p {SYSCTL_FILE}` loads them now (or now only, without the file: {})",
                bound.setup_command(),
                fmt_num(bound.target_gbps),
                bound.rtt_ms,
                sizes.sysctl_w()
            ));
        let f = match bound.bound_gbps {
            Some(g) => f.evidence("window_bound_gbps", fmt_round(g, 4)),
            None => f,
        }
        .evidence("buffers_for_gbps", fmt_num(bound.target_gbps))
        .evidence("buffers_for_rtt_ms", bound.rtt_ms)
        .evidence("net.ipv4.tcp_rmem max", sizes.tcp_rmem[2])
        .evidence("net.ipv4.tcp_wmem max", sizes.tcp_wmem[2])
        .evidence("net.core.rmem_max", sizes.core_max);
        Some(WindowLimit {
            finding: f,
            dir: t.direction,
            bound,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic};
    use linerate_facts::EndFacts;

    /// A 10 Gb/s NIC whose TCP buffers allow 4 MiB to send and 6 MiB to receive.
    fn buffered(netdev: &str) -> EndFacts {
        let mut e = nic(netdev, 10.0);
        e.sockets.tcp_wmem = Some([4096, 16_384, 4 << 20]);
        e.sockets.tcp_rmem = Some([4096, 131_072, 6 << 20]);
        e
    }

    /// One stream at `gbps` over a `rtt_ms` round trip, the sender waiting `waited` % of its busy
    /// time on the receive window (None: the kernel did not count).
    fn stream(direction: Direction, gbps: f64, rtt_ms: f64, waited: Option<f64>) -> Measured {
        Measured {
            rtt_us: Some(rtt_ms * 1000.0),
            tcp_busy_percent: waited.map(|_| 99.0),
            rwnd_limited_percent: waited,
            sndbuf_limited_percent: waited.map(|_| 0.0),
            ..crate::diagnose::testing::tcp(direction, 1, gbps)
        }
    }

    fn window(tests: Vec<Measured>) -> Option<WindowLimit> {
        let i = input(buffered("eth0"), Some(buffered("eth1")), tests);
        rule::TcpBuffersSmall.run(&Ctx::new(&i))
    }

    #[test]
    fn the_kernels_count_of_waiting_on_the_window_names_it() {
        // 1 Gb/s over 20 ms keeps 2.5 MB in flight, near the 3 MiB the buffers allow.
        let w = window(vec![stream(Direction::Send, 1.0, 20.0, Some(40.0))]).expect("the window");
        assert_eq!(w.dir, Direction::Send);
        assert_eq!(w.finding.subject, "test:tcp_bw send 1 stream(s)");
        assert!(
            w.finding
                .message
                .contains("waiting 40% on the receiver's window"),
            "{}",
            w.finding.message
        );
        // Half the receive buffer is the window: 3 MiB.
        assert_eq!(w.bound.window, Some(3 << 20));
        // Sized for the path's 9.4 Gb/s ceiling, in whole Gb/s, at the round trip measured.
        assert_eq!((w.bound.rtt_ms, w.bound.target_gbps), (20, 10.0));
        let words = w.bound.words();
        assert!(
            words.contains("`linerate setup sysctl --rtt-ms 20 --gbps 10 --apply`"),
            "{words}"
        );
        assert!(
            !words.contains(':'),
            "the verdict reads `limited by WHY: figures`: {words}"
        );
    }

    #[test]
    fn waiting_on_neither_with_large_buffers_rules_the_window_out() {
        assert!(window(vec![stream(Direction::Send, 1.0, 20.0, Some(1.0))]).is_none());
    }

    #[test]
    fn without_the_kernels_count_the_round_trip_decides() {
        assert!(window(vec![stream(Direction::Send, 1.0, 20.0, None)]).is_some());
        // 12 KB in flight is far below what the buffers allow: not the window.
        assert!(window(vec![stream(Direction::Send, 1.0, 0.1, None)]).is_none());
    }

    #[test]
    fn at_the_ceiling_the_window_explains_nothing() {
        assert!(window(vec![stream(Direction::Send, 9.0, 20.0, Some(40.0))]).is_none());
    }

    #[test]
    fn the_judged_directions_test_comes_first() {
        // The send test waited more, but the receive direction is the slower, the verdict's.
        let w = window(vec![
            stream(Direction::Send, 2.0, 20.0, Some(80.0)),
            stream(Direction::Receive, 1.0, 20.0, Some(30.0)),
        ])
        .expect("the window");
        assert_eq!(w.dir, Direction::Receive);
        // With no candidate in the judged direction, the other's.
        let w = window(vec![
            stream(Direction::Send, 2.0, 20.0, Some(80.0)),
            stream(Direction::Receive, 1.0, 0.1, None),
        ])
        .expect("the window");
        assert_eq!(w.dir, Direction::Send);
    }
}
