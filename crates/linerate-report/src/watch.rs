//! `linerate watch` off the screen: one text line per port per interval (for a log or a pipe),
//! one JSON object per interval (`schemas/watch-stream.schema.json`), and the metrics endpoint's
//! Prometheus text (format 0.0.4). Pure: a frame or a watcher in, text out.
//!
//! The metrics are named `linerate_watch_*` with node_exporter's labels, so they join its
//! series: `device` and `port` are the infiniband collector's (`mlx5_0`, `1`), and for a port
//! without an RDMA device `device` is the interface, as the netclass and netdev collectors name
//! it (`eth0`); `netdev` names the interface of an RDMA port (`ib0`). Never `node_*`: a
//! duplicate series would fail node_exporter's gather where both run.

use std::fmt::Write as _;

use linerate_facts::Tool;
use linerate_soak::{PortReport, Threshold};
use linerate_units::{fmt_num, fmt_sig, fmt_utc, fmt_utc_time};
use linerate_watch::{Frame, PortFrame, PortId, RateUnit, Tick, Watcher};
use serde::Serialize;

/// A rate for people: three significant digits in the largest unit below it (`9.41 Gb/s`,
/// `812 Mb/s`; `1.18 GB/s` in bytes). Gb/s = 10^9 bit/s, GB/s = 10^9 byte/s.
pub fn fmt_rate(gbps: f64, unit: RateUnit) -> String {
    let (v, suffix) = match unit {
        RateUnit::Bits => (gbps * 1e9, "b/s"),
        RateUnit::Bytes => (gbps * 1e9 / 8.0, "B/s"),
    };
    let (x, prefix) = scale(v);
    format!("{} {prefix}{suffix}", fmt_sig(x))
}

/// Packets per second: `3.10 Mp/s`, `812 kp/s`, `12 p/s`.
pub fn fmt_pps(pps: f64) -> String {
    let (x, prefix) = scale(pps);
    format!("{} {prefix}p/s", fmt_sig(x))
}

fn scale(v: f64) -> (f64, &'static str) {
    let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
    // Rounded to three significant digits first, so 999.7 M is written 1.00 G.
    let sig = |x: f64| fmt_sig(x).parse::<f64>().unwrap_or(x);
    for (f, p) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        let x = sig(v / f);
        if x >= 1.0 {
            return (x, p);
        }
    }
    (v, "")
}

/// The ceiling for people: `40 Gb/s (link)`, `no ceiling`.
pub fn ceiling_words(p: &PortFrame, unit: RateUnit) -> String {
    match p.ceiling_gbps {
        Some(g) => format!("{} ({})", fmt_rate(g, unit), p.limited_by.as_str()),
        None => match p.limited_by.as_str() {
            "unknown" => "no ceiling".into(),
            stage => format!("no ceiling ({stage})"),
        },
    }
}

/// The errors of a port for people: soak's verdict over the window and the counters that moved
/// in it (`bad: port_rcv_errors +53, link_downed +1`; `insufficient: symbol_error reset`), or
/// `None` when none moved.
pub fn error_words(p: &PortFrame) -> Option<String> {
    let w = p.window.as_ref()?;
    let counters: Vec<String> = w
        .counters
        .iter()
        .map(|c| {
            let mut s = c.counter.clone();
            if c.increase > 0 {
                let _ = write!(s, " +{}{}", c.increase, if c.at_least { "+" } else { "" });
            }
            if c.resets > 0 {
                s.push_str(" reset");
            }
            if c.saturated {
                s.push_str(" saturated");
            }
            s
        })
        .collect();
    Some(format!("{}: {}", w.verdict, counters.join(", ")))
}

/// One line per port: the time, the port, its state, both directions' rates and packets, its
/// share of the ceiling, the errors judged over the window and the latest link event.
pub fn watch_lines(f: &Frame, unit: RateUnit) -> String {
    let mut out = String::new();
    let time = fmt_utc(f.unix_ms);
    for p in &f.ports {
        let rate = |g: Option<f64>, pps: Option<f64>| match (g, pps) {
            (Some(g), Some(n)) => format!("{} {}", fmt_rate(g, unit), fmt_pps(n)),
            (Some(g), None) => fmt_rate(g, unit),
            _ => "-".into(),
        };
        let _ = write!(
            out,
            "{time} {} {} rx {} tx {}",
            p.name,
            p.state.replace(' ', "_"),
            rate(p.rx_gbps, p.rx_pps),
            rate(p.tx_gbps, p.tx_pps)
        );
        if p.rate_saturated {
            out.push_str(" (a data counter is saturated)");
        }
        match p.utilisation {
            Some(u) => {
                let _ = write!(
                    out,
                    " {}% of {}",
                    fmt_sig(u * 100.0),
                    ceiling_words(p, unit)
                );
            }
            None => {
                let _ = write!(out, " {}", ceiling_words(p, unit));
            }
        }
        if let Some(e) = error_words(p) {
            let _ = write!(out, " errors {e}");
        }
        if let Some(c) = &p.last_change {
            let _ = write!(out, " changed {} at {}", c.words(), fmt_utc_time(c.unix_ms));
        }
        out.push('\n');
    }
    out
}

#[derive(Serialize)]
struct StreamLine<'a> {
    schema_version: u32,
    tool: Tool,
    #[serde(flatten)]
    frame: &'a Frame,
}

/// One `--json-stream` line (no newline): the interval with the document header.
pub fn watch_json_line(f: &Frame) -> Result<String, serde_json::Error> {
    serde_json::to_string(&StreamLine {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        frame: f,
    })
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A number as the text format writes it.
fn value(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// The metric families, written in order, each with its HELP and TYPE.
struct Families {
    out: String,
}

impl Families {
    fn family(&mut self, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            if labels.is_empty() {
                let _ = writeln!(self.out, "{name} {}", value(*v));
            } else {
                let _ = writeln!(self.out, "{name}{{{labels}}} {}", value(*v));
            }
        }
    }
}

/// The labels of one port: `device`, `port` and `netdev`.
fn port_labels(id: &PortId, netdev: Option<&str>) -> String {
    format!(
        r#"device="{}",port="{}",netdev="{}""#,
        label(&id.device),
        label(&id.port),
        label(netdev.unwrap_or(""))
    )
}

/// Every metric family of the endpoint, from the watcher after the sample at `at`, with soak's
/// verdict over the window on each port (`verdicts`, as `Watcher::verdicts` gives them).
/// Counters count from the start of the watch; gauges are the last sample's.
#[allow(clippy::too_many_lines)] // one family after another: a list, not logic
pub fn watch_metrics(w: &Watcher, verdicts: &[(PortId, Option<PortReport>)], at: Tick) -> String {
    let mut f = Families { out: String::new() };
    let mut info = Vec::new();
    let mut traffic: [Vec<(String, f64)>; 4] = Default::default();
    let mut errors = Vec::new();
    let mut saturated = Vec::new();
    let mut up = Vec::new();
    let mut ceiling = Vec::new();
    let mut stage = Vec::new();
    let mut changes = Vec::new();
    let mut phy = PhyFamilies::default();
    for p in w.ports() {
        let l = port_labels(&p.id, p.netdev.as_deref());
        if let Some(g) = w.phy(&p.id) {
            phy.add(&l, g);
        }
        info.push((
            format!(
                r#"{l},name="{}",kind="{}""#,
                label(&p.name),
                p.kind.as_str()
            ),
            1.0,
        ));
        up.push((l.clone(), f64::from(u8::from(p.link.up))));
        if let Some(g) = p.ceiling.gbps {
            ceiling.push((l.clone(), g * 1e9 / 8.0));
        }
        stage.push((
            format!(r#"{l},stage="{}""#, p.ceiling.limited_by.as_str()),
            1.0,
        ));
        let Some(t) = w.totals(&p.id) else { continue };
        if t.counted_from.is_some() {
            for (i, v) in [t.rx_bytes, t.tx_bytes, t.rx_packets, t.tx_packets]
                .into_iter()
                .enumerate()
            {
                traffic[i].push((l.clone(), v as f64));
            }
        }
        for (src, by_name) in &t.health {
            let src = serde_json::to_value(src)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            for (name, (increase, pegged)) in by_name {
                let cl = format!(r#"{l},source="{src}",counter="{}""#, label(name));
                errors.push((cl.clone(), *increase as f64));
                saturated.push((cl, f64::from(u8::from(*pegged))));
            }
        }
        for (what, n) in &t.changes {
            changes.push((format!(r#"{l},what="{}""#, what.as_str()), *n as f64));
        }
    }
    f.family(
        "linerate_watch_port_info",
        "gauge",
        "A port linerate watch samples: 1, with its name (the interface, else device/port) and kind.",
        &info,
    );
    for (i, (name, help)) in [
        ("linerate_watch_receive_bytes_total", "Bytes the port received since linerate watch started, as its counters count them (InfiniBand port_rcv_data x 4, else the interface's rx_bytes), through saturation and resets."),
        ("linerate_watch_transmit_bytes_total", "Bytes the port sent since linerate watch started (InfiniBand port_xmit_data x 4, else the interface's tx_bytes)."),
        ("linerate_watch_receive_packets_total", "Packets the port received since linerate watch started."),
        ("linerate_watch_transmit_packets_total", "Packets the port sent since linerate watch started."),
    ]
    .into_iter()
    .enumerate()
    {
        f.family(name, "counter", help, &traffic[i]);
    }
    f.family(
        "linerate_watch_errors_total",
        "counter",
        "Increase of each health counter (errors, drops, link recoveries and downs, congestion) since linerate watch started, as soak's tracker counts it: a saturated counter stops, a reset one counts on from its new value.",
        &errors,
    );
    f.family(
        "linerate_watch_saturated",
        "gauge",
        "1 while the health counter is at its maximum (2^width-1): it counts no further until cleared.",
        &saturated,
    );
    f.family(
        "linerate_watch_link_up",
        "gauge",
        "1 when the link can pass traffic (InfiniBand ACTIVE, an interface up with carrier).",
        &up,
    );
    f.family(
        "linerate_watch_ceiling_bytes_per_second",
        "gauge",
        "The port's ceiling from linerate's ceiling chain (link, line code, PCIe, MTU), bytes per second one way (Prometheus' base unit; x 8 for bits); absent without a hardware ceiling.",
        &ceiling,
    );
    f.family(
        "linerate_watch_ceiling_stage_info",
        "gauge",
        "The stage of the ceiling chain that sets the ceiling: link, encoding, pcie, mtu, port_down, no_subnet_manager or unknown.",
        &stage,
    );
    f.family(
        "linerate_watch_link_changes_total",
        "counter",
        "Link events seen since linerate watch started: state, rate, width, pcie, mtu, flap (the link-down counters moved), appeared, gone.",
        &changes,
    );
    phy.write(&mut f);
    verdict_families(&mut f, w, verdicts);
    f.family(
        "linerate_watch_window_seconds",
        "gauge",
        "Seconds of samples the verdicts are judged over (between half the window and all of it).",
        &[(String::new(), w.window().span_s())],
    );
    let jp = w.judge_params();
    let thresholds: Vec<(String, f64)> = Threshold::ALL
        .iter()
        .map(|t| (format!(r#"name="{t}""#), t.get(jp)))
        .collect();
    f.family(
        "linerate_watch_threshold",
        "gauge",
        "Every threshold of soak's judge the verdicts use (docs/soak.md, Thresholds).",
        &thresholds,
    );
    f.family(
        "linerate_watch_samples_total",
        "counter",
        "Samples taken since linerate watch started.",
        &[(String::new(), w.samples() as f64)],
    );
    f.family(
        "linerate_watch_last_sample_timestamp_seconds",
        "gauge",
        "When the last sample was taken, seconds since the Unix epoch: a stalled sampler shows here.",
        &[(String::new(), at.unix_ms as f64 / 1000.0)],
    );
    f.out
}

/// The PHY families, in the order of [`PhyFamilies`]' arrays: hwmon's input, max, crit; the
/// module's temperature and its warning; the light received, sent, and the low warning.
const PHY_FAMILIES: [(&str, &str); 8] = [
    (
        "linerate_watch_hwmon_temp_celsius",
        "The NIC's own temperature sensor (hwmon tempN_input), degrees Celsius, as last read (every 10 s); labels as node_exporter's node_hwmon_temp_celsius, with the port's.",
    ),
    (
        "linerate_watch_hwmon_temp_max_celsius",
        "The sensor's limit for normal operation (tempN_max), degrees Celsius.",
    ),
    (
        "linerate_watch_hwmon_temp_crit_celsius",
        "The sensor's critical limit (tempN_crit; mlx5 puts its warning threshold there), degrees Celsius.",
    ),
    (
        "linerate_watch_module_temperature_celsius",
        "The transceiver module's temperature (ethtool -m), degrees Celsius, as last read (every 10 s).",
    ),
    (
        "linerate_watch_module_temperature_high_warning_celsius",
        "The module's own high temperature warning threshold, degrees Celsius.",
    ),
    (
        "linerate_watch_module_rx_power_watts",
        "Optical power the module receives on each lane (ethtool -m), watts (dBm = 10*log10(W*1000)), as last read (every 10 s).",
    ),
    (
        "linerate_watch_module_tx_power_watts",
        "Optical power the module transmits on each lane, watts.",
    ),
    (
        "linerate_watch_module_rx_power_low_warning_watts",
        "The module's own low warning threshold for received power, watts: a lane under it receives too little light.",
    ),
];

/// The PHY gauges of every port, as last read: the NIC's hwmon sensors with node_exporter's
/// `chip` and `sensor` labels (its `node_hwmon_temp_celsius` family), and the module's
/// temperature and per lane light, each with the module's own threshold beside it, in
/// Prometheus' base units (watts, not dBm).
#[derive(Default)]
struct PhyFamilies {
    hwmon: [Vec<(String, f64)>; 3],
    module_temp: [Vec<(String, f64)>; 2],
    light: [Vec<(String, f64)>; 3],
}

impl PhyFamilies {
    fn add(&mut self, l: &str, g: &linerate_facts::PhyGauges) {
        for s in &g.sensors {
            let sl = format!(
                r#"{l},chip="{}",sensor="{}""#,
                label(s.chip.as_deref().unwrap_or("")),
                label(&s.sensor)
            );
            for (i, v) in [s.input_c, s.max_c, s.crit_c].into_iter().enumerate() {
                if let Some(v) = v {
                    self.hwmon[i].push((sl.clone(), v));
                }
            }
        }
        let Some(d) = &g.module else { return };
        if let Some(c) = d.temperature_c {
            self.module_temp[0].push((l.to_string(), c));
        }
        if let Some(t) = d
            .temperature_thresholds_c
            .filter(linerate_facts::Thresholds::is_ordered)
        {
            self.module_temp[1].push((l.to_string(), t.high_warning));
        }
        for lane in &d.lanes {
            let ll = format!(r#"{l},lane="{}""#, lane.lane);
            if let Some(mw) = lane.rx_power_mw {
                self.light[0].push((ll.clone(), mw / 1000.0));
            }
            if let Some(mw) = lane.tx_power_mw {
                self.light[1].push((ll, mw / 1000.0));
            }
        }
        if let Some(t) = d
            .rx_power_thresholds_mw
            .filter(linerate_facts::Thresholds::is_ordered)
        {
            self.light[2].push((l.to_string(), t.low_warning / 1000.0));
        }
    }

    fn write(&self, f: &mut Families) {
        let samples = self
            .hwmon
            .iter()
            .chain(&self.module_temp)
            .chain(&self.light);
        for ((name, help), s) in PHY_FAMILIES.iter().zip(samples) {
            f.family(name, "gauge", help, s);
        }
    }
}

/// `linerate_watch_verdict` and `_verdict_rule_info`: soak's numbers (0 clean, 1 insufficient,
/// 2 congested, 3 marginal, 4 bad), on every port judged.
fn verdict_families(f: &mut Families, w: &Watcher, verdicts: &[(PortId, Option<PortReport>)]) {
    let mut verdict = Vec::new();
    let mut rule = Vec::new();
    for (id, r) in verdicts {
        let Some(r) = r else { continue };
        let netdev = w.port(id).and_then(|p| p.netdev.as_deref());
        let l = port_labels(id, netdev);
        verdict.push((l.clone(), f64::from(r.verdict.metric_value())));
        rule.push((format!(r#"{l},rule="{}""#, r.rule.as_str()), 1.0));
    }
    f.family(
        "linerate_watch_verdict",
        "gauge",
        "soak's verdict on the port over the window: 0 clean, 1 insufficient, 2 congested, 3 marginal, 4 bad (the numbers of linerate_soak_verdict).",
        &verdict,
    );
    f.family(
        "linerate_watch_verdict_rule_info",
        "gauge",
        "The rule behind each port's verdict over the window: 1.",
        &rule,
    );
}

/// `12.3 s` or `2.5 min`: a span for people.
pub fn span_words(s: f64) -> String {
    if s >= 120.0 {
        format!("{} min", fmt_num(linerate_units::round(s / 60.0, 1)))
    } else {
        format!("{} s", fmt_num(linerate_units::round(s, 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_in_bits_and_bytes() {
        assert_eq!(fmt_rate(9.414, RateUnit::Bits), "9.41 Gb/s");
        assert_eq!(fmt_rate(0.8123, RateUnit::Bits), "812 Mb/s");
        assert_eq!(fmt_rate(0.9997, RateUnit::Bits), "1.00 Gb/s");
        assert_eq!(fmt_rate(8.0, RateUnit::Bytes), "1.00 GB/s");
        assert_eq!(fmt_rate(0.0, RateUnit::Bits), "0 b/s");
        assert_eq!(fmt_rate(400.0, RateUnit::Bits), "400 Gb/s");
        assert_eq!(fmt_rate(1600.0, RateUnit::Bits), "1.60 Tb/s");
        assert_eq!(fmt_pps(3_100_000.0), "3.10 Mp/s");
        assert_eq!(fmt_pps(12.0), "12.0 p/s");
    }
}
