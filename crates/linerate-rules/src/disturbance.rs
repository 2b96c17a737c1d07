//! Whether a bench result was disturbed while it ran, and by what: other processes' CPU and the
//! hypervisor's steal on either host (the same lines doctor's `cpu.contended` draws), spans
//! with no progress at all, and intervals far below the run's median. Pure: the measurements
//! come in ([`Observed`]), the judgement goes out ([`judge`]); every limit is a named constant
//! of [`crate::thresholds`].

use linerate_proto::{HostCpuLoad, LinkTraffic, Stalls};
use linerate_results::{Disturbance, DisturbanceCause, DisturbanceKind};
use linerate_units::fmt_round;

use crate::thresholds::{
    COMPETING_TRAFFIC_FRACTION, COMPETING_TRAFFIC_MIN_GBPS, CONTENDED_OTHER_CORES,
    CONTENDED_STEAL_CORES, OTHERS_HELD_CORE_PERCENT, OWN_TRAFFIC_MARGIN, PACED_GAP_S,
    SLOW_INTERVAL_FRACTION, STALLS_DISTURB_FRACTION,
};

/// What was measured during one test.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub local_cpu: Option<HostCpuLoad>,
    /// The server's CPUs, as it reported them.
    pub remote_cpu: Option<HostCpuLoad>,
    /// The server runs on this host: its figures count linerate's client as someone else's,
    /// and this host's already cover it, so they are not judged.
    pub remote_same_host: bool,
    pub local_stalls: Option<Stalls>,
    pub remote_stalls: Option<Stalls>,
    /// Each measured interval (warm-up left out): (seconds, amount moved: bytes or
    /// transactions).
    pub intervals: Vec<(f64, f64)>,
    /// Seconds of the test that were measured (duration minus warm-up).
    pub measured_s: f64,
    /// A paced test: the seconds between one stream's writes at its target rate.
    pub paced_gap_s: Option<f64>,
    /// What the interface of each end's test address carried (all traffic), and the bytes the
    /// test itself moved there (sent and received, warm-up included).
    pub local_link: Option<(LinkTraffic, u64)>,
    pub remote_link: Option<(LinkTraffic, u64)>,
}

/// Other traffic on an interface during a test: bytes beyond the test's own (with its
/// headers), in Gb/s over the interface's window. The busier direction counts: on a wire a
/// test's bytes go one way (and its ACKs the other), on loopback every packet is counted
/// both ways.
pub fn competing_gbps(link: &LinkTraffic, own_bytes: u64) -> f64 {
    let busier = link.rx_bytes.max(link.tx_bytes) as f64;
    let other = (busier - own_bytes as f64 * (1.0 + OWN_TRAFFIC_MARGIN)).max(0.0);
    other * 8.0 / 1e9 / link.seconds.max(1e-3)
}

fn traffic_cause(
    link: &LinkTraffic,
    own_bytes: u64,
    host: &'static str,
    out: &mut Vec<DisturbanceCause>,
) -> f64 {
    let other = competing_gbps(link, own_bytes);
    let own = own_bytes as f64 * 8.0 / 1e9 / link.seconds.max(1e-3);
    if other >= COMPETING_TRAFFIC_MIN_GBPS && other >= COMPETING_TRAFFIC_FRACTION * own {
        let whose = whose(host);
        out.push(DisturbanceCause {
            cause: DisturbanceKind::CompetingTraffic,
            host,
            message: format!(
                "other traffic on {} ({whose}) at {} Gb/s beside this test's {} Gb/s",
                link.interface,
                fmt_round(other, 2),
                fmt_round(own, 2)
            ),
        });
    }
    other
}

/// Whether `h` shows contention, and the causes it gives, for `host` (`local` or `remote`).
fn cpu_causes(h: &HostCpuLoad, host: &'static str, out: &mut Vec<DisturbanceCause>) {
    let whose = whose(host);
    let other = h.other_cores.unwrap_or(0.0);
    let held = h.busiest_core_others_percent.unwrap_or(0.0);
    if other >= CONTENDED_OTHER_CORES || held >= OTHERS_HELD_CORE_PERCENT {
        let of = if h.cores > 0 {
            format!(" of {}", h.cores)
        } else {
            String::new()
        };
        let mut message = format!(
            "other processes on {whose} used {}{of} cores",
            fmt_round(other, 2)
        );
        if held >= OTHERS_HELD_CORE_PERCENT {
            message = format!(
                "{message} and held {} % of the busiest core",
                fmt_round(held, 0)
            );
        }
        out.push(DisturbanceCause {
            cause: DisturbanceKind::CpuContended,
            host,
            message,
        });
    }
    if let Some(s) = h.steal_cores.filter(|s| *s >= CONTENDED_STEAL_CORES) {
        out.push(DisturbanceCause {
            cause: DisturbanceKind::Steal,
            host,
            message: format!(
                "the hypervisor took {} cores from {whose} (steal)",
                fmt_round(s, 2)
            ),
        });
    }
}

/// The rate of each interval, per second.
fn rates(intervals: &[(f64, f64)]) -> Vec<f64> {
    intervals
        .iter()
        .filter(|(secs, _)| *secs > 0.0)
        .map(|(secs, amount)| amount / secs)
        .collect()
}

/// Judge what was measured during a test.
pub fn judge(o: &Observed) -> Disturbance {
    let mut causes = Vec::new();
    // Stalls first: a run with time that moved nothing explains itself best by that.
    let paced = o.paced_gap_s.is_some_and(|g| g >= PACED_GAP_S);
    let worst = [("local", &o.local_stalls), ("remote", &o.remote_stalls)]
        .into_iter()
        .filter_map(|(h, s)| Some((h, s.as_ref()?)))
        .max_by(|a, b| a.1.seconds.total_cmp(&b.1.seconds));
    if let Some((host, s)) = worst.filter(|_| !paced && o.measured_s > 0.0) {
        if s.seconds >= STALLS_DISTURB_FRACTION * o.measured_s {
            out_stalls(host, s, o.measured_s, &mut causes);
        }
    }
    let rates = rates(&o.intervals);
    let median = linerate_stats::median(&rates);
    let slow = median.map_or(0, |m| {
        rates
            .iter()
            .filter(|r| **r < SLOW_INTERVAL_FRACTION * m)
            .count()
    });
    if slow > 0 && !paced {
        causes.push(DisturbanceCause {
            cause: DisturbanceKind::SlowIntervals,
            host: "both",
            message: format!(
                "{slow} of {} intervals below {} % of the run's median",
                rates.len(),
                fmt_round(SLOW_INTERVAL_FRACTION * 100.0, 0)
            ),
        });
    }
    let mut competing: Option<f64> = None;
    let links = [("local", &o.local_link), ("remote", &o.remote_link)];
    for (host, l) in links {
        if host == "remote" && o.remote_same_host {
            continue;
        }
        if let Some((link, own)) = l {
            let g = traffic_cause(link, *own, host, &mut causes);
            competing = Some(competing.map_or(g, |c| c.max(g)));
        }
    }
    if let Some(h) = &o.local_cpu {
        cpu_causes(h, "local", &mut causes);
    }
    if let Some(h) = o.remote_cpu.as_ref().filter(|_| !o.remote_same_host) {
        cpu_causes(h, "remote", &mut causes);
    }
    Disturbance {
        disturbed: !causes.is_empty(),
        causes,
        local_cpu: o.local_cpu,
        remote_cpu: o.remote_cpu.filter(|_| !o.remote_same_host),
        remote_same_host: o.remote_same_host,
        local_stalls: o.local_stalls.clone(),
        remote_stalls: o.remote_stalls.clone(),
        slow_intervals: u32::try_from(slow).unwrap_or(u32::MAX),
        median_interval_rate: median,
        local_link: o.local_link.as_ref().map(|(l, _)| l.clone()),
        remote_link: o
            .remote_link
            .as_ref()
            .filter(|_| !o.remote_same_host)
            .map(|(l, _)| l.clone()),
        competing_gbps: competing,
    }
}

/// Which end `host` (`local` or `remote`) is, in a sentence.
fn whose(host: &str) -> &'static str {
    if host == "local" {
        "this host"
    } else {
        "the server"
    }
}

fn out_stalls(host: &'static str, s: &Stalls, measured_s: f64, out: &mut Vec<DisturbanceCause>) {
    let whose = whose(host);
    out.push(DisturbanceCause {
        cause: DisturbanceKind::Stalls,
        host,
        message: format!(
            "{} stall{}, {} s with no data ({} % of the test, longest {} s, seen by {whose})",
            s.count,
            if s.count == 1 { "" } else { "s" },
            fmt_round(s.seconds, 1),
            fmt_round(s.seconds / measured_s * 100.0, 0),
            fmt_round(s.longest_s, 1)
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(other: f64, held: f64, steal: f64) -> HostCpuLoad {
        HostCpuLoad {
            seconds: 3.0,
            cores: 2,
            busiest_core_percent: Some(100.0),
            busiest_core_others_percent: Some(held),
            own_cores: Some(1.0),
            other_cores: Some(other),
            steal_cores: Some(steal),
        }
    }

    fn stalls(count: u32, seconds: f64) -> Stalls {
        Stalls {
            count,
            seconds,
            longest_s: seconds / f64::from(count.max(1)),
            spans: Vec::new(),
        }
    }

    fn steady() -> Vec<(f64, f64)> {
        vec![(1.0, 5e9), (1.0, 5.2e9), (1.0, 4.9e9)]
    }

    #[test]
    fn a_quiet_run_is_not_disturbed() {
        let d = judge(&Observed {
            local_cpu: Some(load(0.05, 3.0, 0.0)),
            remote_cpu: Some(load(0.1, 5.0, 0.0)),
            local_stalls: Some(Stalls::default()),
            intervals: steady(),
            measured_s: 3.0,
            ..Observed::default()
        });
        assert!(!d.disturbed, "{d:?}");
        assert!(d.causes.is_empty());
        assert_eq!(d.slow_intervals, 0);
        assert_eq!(d.median_interval_rate, Some(5e9));
    }

    #[test]
    fn stalls_and_a_held_core_explain_a_collapse() {
        // "3 stalls, 1.8 s with no data; other processes held 62 % of the busiest core".
        let d = judge(&Observed {
            local_cpu: Some(load(1.2, 62.0, 0.0)),
            remote_stalls: Some(stalls(3, 1.8)),
            local_stalls: Some(stalls(1, 0.2)),
            intervals: vec![(1.0, 5e9), (1.0, 0.1e9), (1.0, 4.0e9)],
            measured_s: 3.0,
            ..Observed::default()
        });
        assert!(d.disturbed);
        let c: Vec<(DisturbanceKind, &str)> = d.causes.iter().map(|c| (c.cause, c.host)).collect();
        assert_eq!(
            c,
            [
                (DisturbanceKind::Stalls, "remote"),
                (DisturbanceKind::SlowIntervals, "both"),
                (DisturbanceKind::CpuContended, "local")
            ]
        );
        assert!(
            d.causes[0]
                .message
                .starts_with("3 stalls, 1.8 s with no data"),
            "{}",
            d.causes[0].message
        );
        assert!(
            d.causes[2]
                .message
                .contains("held 62 % of the busiest core"),
            "{}",
            d.causes[2].message
        );
        assert_eq!(d.slow_intervals, 1);
    }

    #[test]
    fn short_stalls_steal_and_the_same_host() {
        // Under 5 % of the test with no data: not a disturbance. Steal is. A server on this
        // host is not judged by its own figures (they count this client as someone else).
        let d = judge(&Observed {
            local_cpu: Some(load(0.0, 0.0, 0.15)),
            remote_cpu: Some(load(1.5, 90.0, 0.0)),
            remote_same_host: true,
            local_stalls: Some(stalls(1, 0.1)),
            intervals: steady(),
            measured_s: 3.0,
            ..Observed::default()
        });
        let c: Vec<(DisturbanceKind, &str)> = d.causes.iter().map(|c| (c.cause, c.host)).collect();
        assert_eq!(c, [(DisturbanceKind::Steal, "local")]);
        assert!(d.remote_cpu.is_none());
        // Just over the line: 0.16 s of 3 s is 5.3 %.
        let d = judge(&Observed {
            local_stalls: Some(stalls(1, 0.16)),
            measured_s: 3.0,
            ..Observed::default()
        });
        assert_eq!(d.causes.len(), 1, "{d:?}");
    }

    #[test]
    fn other_traffic_on_the_interface_competed() {
        // Loopback over 3 s: the test moved 0.75 GB (2 Gb/s); lo counted 4.5 GB each way.
        let lo = LinkTraffic {
            interface: "lo".into(),
            seconds: 3.0,
            rx_bytes: 4_500_000_000,
            tx_bytes: 4_500_000_000,
        };
        let d = judge(&Observed {
            local_link: Some((lo.clone(), 750_000_000)),
            // The same lo, seen by a server on this host: not counted twice.
            remote_link: Some((lo, 750_000_000)),
            remote_same_host: true,
            measured_s: 3.0,
            ..Observed::default()
        });
        let c: Vec<(DisturbanceKind, &str)> = d.causes.iter().map(|c| (c.cause, c.host)).collect();
        assert_eq!(c, [(DisturbanceKind::CompetingTraffic, "local")], "{d:?}");
        assert!(
            d.causes[0].message.starts_with(
                "other traffic on lo (this host) at 9.8 Gb/s beside this test's 2 Gb/s"
            ),
            "{}",
            d.causes[0].message
        );
        assert!(d.remote_link.is_none());
        // A wire carrying the test's bytes and their headers, nothing else: no cause.
        let eth = LinkTraffic {
            interface: "eth0".into(),
            seconds: 3.0,
            rx_bytes: 20_000_000,
            tx_bytes: 1_040_000_000,
        };
        let d = judge(&Observed {
            remote_link: Some((eth, 1_000_000_000)),
            measured_s: 3.0,
            ..Observed::default()
        });
        assert!(!d.disturbed, "{d:?}");
        assert_eq!(d.competing_gbps, Some(0.0));
    }

    #[test]
    fn a_paced_test_has_gaps_of_its_own() {
        // 1 Mb/s in 128 KiB writes: a write a second. Its still spans are its pacing.
        let d = judge(&Observed {
            local_stalls: Some(stalls(3, 2.5)),
            intervals: vec![(1.0, 131_072.0), (1.0, 0.0), (1.0, 131_072.0)],
            measured_s: 3.0,
            paced_gap_s: Some(1.05),
            ..Observed::default()
        });
        assert!(!d.disturbed, "{d:?}");
        // A contended host is still said.
        let d = judge(&Observed {
            remote_cpu: Some(load(0.5, 10.0, 0.0)),
            paced_gap_s: Some(1.05),
            ..Observed::default()
        });
        assert_eq!(d.causes[0].cause, DisturbanceKind::CpuContended);
        assert_eq!(d.causes[0].host, "remote");
        assert!(
            d.causes[0]
                .message
                .starts_with("other processes on the server used 0.5 of 2 cores"),
            "{}",
            d.causes[0].message
        );
    }
}
