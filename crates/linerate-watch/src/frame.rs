//! What one interval shows: every port's rates against its ceiling, its link, the error
//! counters that moved and soak's verdict over the window, and the link events seen. Plain
//! data, serialized as is for `--json-stream` (`schemas/watch-stream.schema.json`); field
//! names are a contract.

use linerate_facts::{CounterSource, RxReading, TempReading};
use linerate_model::LimitedBy;
use linerate_soak::{RuleId, Verdict, VerdictRule};
use serde::{Deserialize, Serialize};

use crate::changes::LinkChange;
use crate::port::{PortId, WatchKind};

/// Which counters a port's rates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountedFrom {
    /// InfiniBand's `port_{rcv,xmit}_{data,packets}` (data × 4: the PMA counts octets ÷ 4):
    /// everything the port carried, RDMA included.
    IbCounters,
    /// The netdev's `statistics/{rx,tx}_{bytes,packets}`: what went through the kernel's stack.
    NetdevStatistics,
}

/// One interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    /// The sample that closed the interval (from 1; the first sample opens the first one).
    pub seq: u64,
    /// Seconds since the watch began, on the monotonic clock.
    pub t_s: f64,
    /// The wall clock, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The interval's length, seconds (0 for the first sample, which has no rates yet).
    pub interval_s: f64,
    /// Seconds of samples the window's verdicts are judged over.
    pub window_s: f64,
    pub ports: Vec<PortFrame>,
    /// Link events seen at this sample.
    pub changes: Vec<LinkChange>,
    /// Problems reading the counters at this sample (a file that vanished, a garbage value).
    pub problems: Vec<String>,
}

/// One port in one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortFrame {
    #[serde(flatten)]
    pub id: PortId,
    pub name: String,
    pub netdev: Option<String>,
    pub kind: WatchKind,
    /// The link can pass traffic.
    pub up: bool,
    pub state: String,
    /// The link's rate as the port reports it (`4X EDR`, `25GbE`).
    pub link: Option<String>,
    /// The PCIe link data crosses (`PCIe 3.0 x8`).
    pub pcie: Option<String>,
    pub numa_node: Option<u32>,
    pub counted_from: Option<CountedFrom>,
    /// Gb/s (10^9 bit/s) received and sent in the interval, headers included as the port
    /// counts them; `None` without counters (or before the first interval).
    pub rx_gbps: Option<f64>,
    pub tx_gbps: Option<f64>,
    /// Packets per second.
    pub rx_pps: Option<f64>,
    pub tx_pps: Option<f64>,
    /// A data counter was at its maximum (32-bit InfiniBand counters stop there): the rate
    /// shown is a lower bound, or none.
    pub rate_saturated: bool,
    /// Gb/s the hardware carries one way, from the ceiling chain; `None` without one.
    pub ceiling_gbps: Option<f64>,
    /// The stage that sets it.
    pub limited_by: LimitedBy,
    /// The larger direction's rate over the ceiling (1 = at the ceiling).
    pub utilisation: Option<f64>,
    /// Health counters (errors, drops, recoveries, link downs, congestion) that moved,
    /// saturated or were reset in this interval.
    pub moved: Vec<Moved>,
    /// soak's verdict over the window, on a port whose health counters moved in it.
    pub window: Option<WindowMark>,
    /// The latest link event of this port.
    pub last_change: Option<LinkChange>,
    /// The temperature nearest its limit below the port (the module's, the NIC's sensors),
    /// as last read (every `linerate_facts::PHY_SAMPLE_PERIOD_S`); `None` where nothing
    /// reports one.
    pub temperature: Option<TempReading>,
    /// The module's weakest lane of received light, as last read; `None` without a module
    /// that measures it (copper, no module).
    pub rx_power: Option<RxReading>,
}

impl PortFrame {
    /// The larger of the two directions, Gb/s.
    pub fn peak_gbps(&self) -> Option<f64> {
        peak_gbps(self.rx_gbps, self.tx_gbps)
    }
}

/// The larger of two directions' rates, or the one known.
pub(crate) fn peak_gbps(rx: Option<f64>, tx: Option<f64>) -> Option<f64> {
    match (rx, tx) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A health counter in one interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    pub source: CounterSource,
    pub counter: String,
    /// The increase counted (after a reset, the value read: counted since the reset).
    pub delta: u64,
    /// It reached its maximum in this interval: it counts no further.
    pub saturated: bool,
    /// It went down: reset by someone else (`perfquery -R`, a driver reload). No burst.
    pub reset: bool,
}

/// soak's judgement of a port over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowMark {
    pub verdict: Verdict,
    pub rule: VerdictRule,
    /// Seconds judged.
    pub span_s: f64,
    /// The health counters that moved in the window.
    pub counters: Vec<WindowCounter>,
    /// What the rules said (those that fired, and the notes).
    pub findings: Vec<WindowFinding>,
}

/// One health counter over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowCounter {
    pub source: CounterSource,
    pub counter: String,
    /// The increase over the window (a lower bound when `at_least`).
    pub increase: u64,
    pub at_least: bool,
    /// At its maximum now.
    pub saturated: bool,
    /// Resets by someone else in the window.
    pub resets: u64,
}

/// One finding of soak's rules over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowFinding {
    pub rule: RuleId,
    pub verdict: Verdict,
    pub text: String,
}

/// One counter of a port with its rate, for the detail pane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRate {
    pub source: CounterSource,
    pub counter: String,
    /// The raw value last read.
    pub value: u64,
    /// Increase in the last interval.
    pub delta: u64,
    pub per_s: Option<f64>,
    /// A health counter (errors, drops, recoveries, congestion), not traffic.
    pub health: bool,
    pub saturated: bool,
    pub reset: bool,
}

/// A frame with every field set, and the test that ties it to its schema.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::changes::ChangeKind;
    use linerate_facts::Level;
    use linerate_testkit::schema;
    use serde_json::{json, Value};

    /// Every `Level`, as the PHY readings carry it.
    const LEVELS: [Level; 5] = [
        Level::Normal,
        Level::LowWarning,
        Level::HighWarning,
        Level::LowAlarm,
        Level::HighAlarm,
    ];

    /// A link event of `what` on the example port.
    fn change(what: ChangeKind) -> LinkChange {
        LinkChange {
            id: PortId::new("mlx5_0", "1"),
            name: "ib0".into(),
            what,
            from: Some("4X".into()),
            to: Some("1X".into()),
            seq: 7,
            t_s: 7.0,
            unix_ms: 1_800_000_007_000,
        }
    }

    /// A port with every field set: every `Option` `Some`, every list with an element. A field
    /// added to `PortFrame` gets its value here (the literal does not build without it), and
    /// `every_field_of_the_frame_is_in_the_schema` fails until the schema names it.
    pub(crate) fn example_port() -> PortFrame {
        PortFrame {
            id: PortId::new("mlx5_0", "1"),
            name: "ib0".into(),
            netdev: Some("ib0".into()),
            kind: WatchKind::Infiniband,
            up: true,
            state: "active".into(),
            link: Some("4X EDR".into()),
            pcie: Some("PCIe 3.0 x16".into()),
            numa_node: Some(1),
            counted_from: Some(CountedFrom::IbCounters),
            rx_gbps: Some(97.5),
            tx_gbps: Some(12.25),
            rx_pps: Some(2.4e6),
            tx_pps: Some(3.0e5),
            rate_saturated: true,
            ceiling_gbps: Some(100.0),
            limited_by: LimitedBy::Link,
            utilisation: Some(0.975),
            moved: vec![Moved {
                source: CounterSource::IbCounters,
                counter: "symbol_error".into(),
                delta: 3,
                saturated: true,
                reset: true,
            }],
            window: Some(WindowMark {
                verdict: Verdict::Bad,
                rule: VerdictRule::Rule(RuleId::ALL[0]),
                span_s: 30.0,
                counters: vec![WindowCounter {
                    source: CounterSource::IbCounters,
                    counter: "symbol_error".into(),
                    increase: 3,
                    at_least: true,
                    saturated: true,
                    resets: 1,
                }],
                findings: vec![WindowFinding {
                    rule: RuleId::ALL[0],
                    verdict: Verdict::Bad,
                    text: "symbol_error +3 in 30 s".into(),
                }],
            }),
            last_change: Some(change(ChangeKind::Width)),
            temperature: Some(TempReading {
                what: "module".into(),
                c: 71.5,
                limit_c: Some(70.0),
                level: Level::HighWarning,
            }),
            rx_power: Some(RxReading {
                lane: 3,
                mw: 0.02,
                low_warning_mw: Some(0.0316),
                level: Level::LowWarning,
            }),
        }
    }

    /// A frame of `ports` with every field set.
    fn example_frame(ports: Vec<PortFrame>) -> Frame {
        Frame {
            seq: 7,
            t_s: 7.0,
            unix_ms: 1_800_000_007_000,
            interval_s: 1.0,
            window_s: 30.0,
            ports,
            changes: vec![change(ChangeKind::Width)],
            problems: vec!["mlx5_0/1 symbol_error: `x` is not a number".into()],
        }
    }

    /// The `--json-stream` line of `f`: the frame under the document header, as
    /// `linerate_report::watch_json_line` writes it.
    fn line(f: &Frame) -> Value {
        let mut v = serde_json::to_value(f).unwrap();
        v["schema_version"] = json!(linerate_facts::SCHEMA_VERSION);
        v["tool"] = serde_json::to_value(linerate_facts::TOOL).unwrap();
        v
    }

    /// Every variant of the enums a frame carries that keep no list of their own. A variant
    /// added to one of them fails to build in the match below until it is listed here.
    fn watch_kinds() -> Vec<WatchKind> {
        use WatchKind as K;
        let all = vec![
            K::Infiniband,
            K::Roce,
            K::Iwarp,
            K::Ethernet,
            K::Bond,
            K::Paravirtual,
            K::Virtual,
        ];
        for k in &all {
            match k {
                K::Infiniband
                | K::Roce
                | K::Iwarp
                | K::Ethernet
                | K::Bond
                | K::Paravirtual
                | K::Virtual => {}
            }
        }
        all
    }

    fn counted_froms() -> Vec<CountedFrom> {
        let all = vec![CountedFrom::IbCounters, CountedFrom::NetdevStatistics];
        for c in &all {
            match c {
                CountedFrom::IbCounters | CountedFrom::NetdevStatistics => {}
            }
        }
        all
    }

    fn limited_bys() -> Vec<LimitedBy> {
        use LimitedBy as L;
        let all = vec![
            L::Link,
            L::Encoding,
            L::Pcie,
            L::Mtu,
            L::PortDown,
            L::NoSubnetManager,
            L::Unknown,
        ];
        for l in &all {
            match l {
                L::Link
                | L::Encoding
                | L::Pcie
                | L::Mtu
                | L::PortDown
                | L::NoSubnetManager
                | L::Unknown => {}
            }
        }
        all
    }

    fn change_kinds() -> Vec<ChangeKind> {
        use ChangeKind as C;
        let all = vec![
            C::Appeared,
            C::Gone,
            C::State,
            C::Rate,
            C::Width,
            C::Pcie,
            C::Mtu,
            C::Flap,
        ];
        for c in &all {
            match c {
                C::Appeared
                | C::Gone
                | C::State
                | C::Rate
                | C::Width
                | C::Pcie
                | C::Mtu
                | C::Flap => {}
            }
        }
        all
    }

    fn counter_sources() -> Vec<CounterSource> {
        use CounterSource as S;
        let all = S::ALL.to_vec();
        for s in &all {
            match s {
                S::IbCounters
                | S::IbHwCounters
                | S::NetdevStatistics
                | S::Carrier
                | S::Ethtool
                | S::Snmp => {}
            }
        }
        all
    }

    /// The example port once per variant of every enum it carries (and once with every
    /// `Option` `None` and every list empty).
    fn every_variant() -> Vec<PortFrame> {
        let base = example_port();
        let mut out = vec![
            base.clone(),
            PortFrame {
                netdev: None,
                link: None,
                pcie: None,
                numa_node: None,
                counted_from: None,
                rx_gbps: None,
                tx_gbps: None,
                rx_pps: None,
                tx_pps: None,
                ceiling_gbps: None,
                utilisation: None,
                moved: Vec::new(),
                window: None,
                last_change: None,
                temperature: None,
                rx_power: None,
                ..base.clone()
            },
        ];
        let with = |f: &dyn Fn(&mut PortFrame)| {
            let mut p = base.clone();
            f(&mut p);
            p
        };
        out.extend(watch_kinds().into_iter().map(|k| with(&|p| p.kind = k)));
        out.extend(
            counted_froms()
                .into_iter()
                .map(|c| with(&|p| p.counted_from = Some(c))),
        );
        out.extend(
            limited_bys()
                .into_iter()
                .map(|l| with(&|p| p.limited_by = l)),
        );
        out.extend(
            change_kinds()
                .into_iter()
                .map(|c| with(&|p| p.last_change = Some(change(c)))),
        );
        out.extend(counter_sources().into_iter().map(|s| {
            with(&|p| {
                p.moved[0].source = s;
                p.window.as_mut().unwrap().counters[0].source = s;
            })
        }));
        out.extend(Verdict::ALL.iter().map(|&v| {
            with(&|p| {
                let w = p.window.as_mut().unwrap();
                w.verdict = v;
                w.findings[0].verdict = v;
            })
        }));
        out.extend(VerdictRule::all().map(|r| with(&|p| p.window.as_mut().unwrap().rule = r)));
        out.extend(LEVELS.iter().map(|&l| {
            with(&|p| {
                p.temperature.as_mut().unwrap().level = l;
                p.rx_power.as_mut().unwrap().level = l;
            })
        }));
        out.extend(
            RuleId::ALL
                .iter()
                .map(|&r| with(&|p| p.window.as_mut().unwrap().findings[0].rule = r)),
        );
        out
    }

    /// The property names of the schema object `s`.
    fn properties(s: &Value) -> Vec<String> {
        let mut keys: Vec<String> = s["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no properties in {s}"))
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    fn keys(v: &Value) -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    }

    #[test]
    fn every_field_of_the_frame_is_in_the_schema() {
        let v = schema::validator("watch-stream.schema.json");
        let ports = every_variant();
        assert!(ports.len() > 40, "{}", ports.len());
        for p in ports {
            let doc = line(&example_frame(vec![p.clone()]));
            let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{p:?}:\n{}", errors.join("\n"));
        }
        // And the schema names nothing the frame does not write: each object's properties are
        // the fields serialized.
        let s: Value =
            serde_json::from_str(include_str!("../../../schemas/watch-stream.schema.json"))
                .unwrap();
        let doc = line(&example_frame(vec![example_port()]));
        let port = &doc["ports"][0];
        let window = &port["window"];
        for (what, instance, schema) in [
            ("the line", &doc, &s),
            ("tool", &doc["tool"], &s["properties"]["tool"]),
            ("a port", port, &s["$defs"]["port"]),
            ("a moved counter", &port["moved"][0], &s["$defs"]["moved"]),
            ("a window", window, &s["$defs"]["window"]),
            (
                "a window's counter",
                &window["counters"][0],
                &s["$defs"]["window"]["properties"]["counters"]["items"],
            ),
            (
                "a window's finding",
                &window["findings"][0],
                &s["$defs"]["window"]["properties"]["findings"]["items"],
            ),
            ("a change", &doc["changes"][0], &s["$defs"]["change"]),
        ] {
            assert_eq!(keys(instance), properties(schema), "{what}");
            assert_eq!(schema["additionalProperties"], json!(false), "{what}");
        }
    }

    #[test]
    fn the_schema_test_is_no_rubber_stamp() {
        // A field the schema does not name is refused, wherever it appears (a name no field of
        // the frame will have).
        let v = schema::validator("watch-stream.schema.json");
        let doc = line(&example_frame(vec![example_port()]));
        for at in [
            "",
            "/tool",
            "/ports/0",
            "/ports/0/moved/0",
            "/ports/0/window",
            "/ports/0/window/counters/0",
            "/ports/0/window/findings/0",
            "/ports/0/last_change",
            "/changes/0",
        ] {
            let mut bad = doc.clone();
            bad.pointer_mut(at)
                .and_then(Value::as_object_mut)
                .unwrap_or_else(|| panic!("no object at `{at}`"))
                .insert("not_in_the_schema".into(), json!(9000));
            assert!(!v.is_valid(&bad), "a new field at `{at}` passed");
        }
        assert!(v.is_valid(&doc));
    }
}
