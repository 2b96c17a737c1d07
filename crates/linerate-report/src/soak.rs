//! `linerate soak`'s renderers: the live line per interval, the final table per port and end,
//! the JSON document, the Prometheus/OpenMetrics text file for node_exporter's textfile
//! collector, and the HTML timeline. Pure: data in, text out (the atomic write of the text file
//! is the command's).

use std::fmt::Write as _;

use linerate_proto::soak::{End, SoakPortKind};
use linerate_soak::{
    CounterOut, JudgeParams, PortReport, SoakInterval, SoakReport, Threshold, Verdict,
};
use linerate_units::{fmt_num, fmt_sig};

use crate::html::esc;
use crate::style::Style;

fn end_word(e: End) -> &'static str {
    match e {
        End::Local => "local",
        End::Remote => "remote",
    }
}

/// `mlx4_0/1`, or the interface name alone for a netdev without an RDMA port.
fn port_name(device: &str, port: &str) -> String {
    if port.is_empty() {
        device.to_string()
    } else {
        format!("{device}/{port}")
    }
}

/// The live line of one interval of one end: the rate through the end, the retransmits and
/// the health counters that moved.
pub fn soak_live_line(i: &SoakInterval) -> String {
    let dt = i.end_s - i.start_s;
    let span = format!(
        "{}-{} s",
        fmt_num(linerate_units::r1(i.start_s)),
        fmt_num(linerate_units::r1(i.end_s))
    );
    let mut s = format!(
        "{:<6} {span:>15} {:>8} Gb/s (tx {}, rx {})",
        end_word(i.end),
        fmt_sig(i.gbps),
        fmt_sig(linerate_units::gbps(i.bytes_sent, dt)),
        fmt_sig(linerate_units::gbps(i.bytes_received, dt)),
    );
    if let Some(r) = i.tcp_retrans.filter(|r| *r > 0) {
        let _ = write!(s, "  retrans {r}");
    }
    if !i.moved.is_empty() {
        let moved: Vec<String> = i
            .moved
            .iter()
            .map(|m| {
                let mut w = format!("{} {} +{}", port_name(&m.device, &m.port), m.name, m.delta);
                if m.saturated {
                    w.push_str(" (saturated)");
                }
                if m.reset {
                    w.push_str(" (reset)");
                }
                w
            })
            .collect();
        let _ = write!(s, "  moved: {}", moved.join(", "));
        if i.moved_dropped > 0 {
            let _ = write!(s, " and {} more", i.moved_dropped);
        }
    }
    s
}

fn verdict_styled(v: Verdict, style: Style) -> String {
    let word = v.as_str().to_uppercase();
    match v {
        Verdict::Clean => style.good(&word),
        Verdict::Insufficient | Verdict::Congested => style.dim(&word),
        Verdict::Marginal | Verdict::Bad => style.bold(&word),
    }
}

fn kind_words(k: &SoakPortKind) -> String {
    match k {
        SoakPortKind::Infiniband {
            speed,
            signalling_gbps,
        } => {
            let speed = speed.as_deref().unwrap_or("InfiniBand");
            signalling_gbps.map_or_else(
                || speed.to_string(),
                |g| format!("{speed}, {} Gb/s signalling", fmt_num(g)),
            )
        }
        SoakPortKind::Ethernet { speed_mbps, roce } => {
            let name = if *roce { "RoCE" } else { "Ethernet" };
            speed_mbps.map_or_else(
                || name.to_string(),
                |m| format!("{name}, {} Gb/s", fmt_num(m as f64 / 1000.0)),
            )
        }
    }
}

/// `375 GB` (10^9 bytes).
fn gb_words(b: u64) -> String {
    format!("{} GB", fmt_sig(b as f64 / 1e9))
}

/// `12`, `>= 15`.
fn delta_words(c: &CounterOut) -> String {
    if c.at_least {
        format!(">= {}", c.delta)
    } else {
        c.delta.to_string()
    }
}

/// The rate per hour over the time observed: `>= 332100` where the counter pegged while
/// observed, `-` where no time was.
fn per_hour_words(c: &CounterOut) -> String {
    match c.per_hour {
        Some(h) if c.observed_at_least => format!(">= {}", fmt_sig(h)),
        Some(h) => fmt_sig(h),
        None => "-".into(),
    }
}

fn counter_row(out: &mut String, c: &CounterOut) {
    let per_hour = per_hour_words(c);
    let mut notes = Vec::new();
    if let Some(s) = c.saturations.first() {
        notes.push(format!(
            "saturated at {} from sample {} ({} s){}",
            s.value,
            s.since.seq,
            fmt_num(linerate_units::r1(s.since.t_s)),
            if s.from_start { ", from the start" } else { "" }
        ));
    }
    if c.resets_total > 0 {
        notes.push(format!("reset {} time(s)", c.resets_total));
    }
    let _ = writeln!(
        out,
        "    {:<34} {:>12} {:>10} {:>9} {:>6}  {}",
        c.name,
        delta_words(c),
        per_hour,
        linerate_soak::fmt_duration(c.observed_s),
        c.width,
        notes.join("; ")
    );
}

/// The symbol-error budget line: the budget, and the limit that applied when the floor raised
/// it; or why it is not judged. Nothing for a port without a `symbol_error` counter.
fn budget_line(out: &mut String, p: &PortReport, ber: f64) {
    let Some(b) = &p.symbol_budget else {
        return;
    };
    if !p.counters.iter().any(|c| c.name == "symbol_error") {
        return;
    }
    let applied = match b.limit_per_hour {
        _ if b.pam4 => " (PAM4 with FEC: not judged alone)".to_string(),
        Some(l) if l > b.per_hour => format!(
            "; {}/h applied over the time observed (at least {} errors)",
            fmt_sig(l),
            fmt_num(b.floor)
        ),
        Some(_) => String::new(),
        None => " (not judged: symbol_error never observed over an interval)".to_string(),
    };
    let _ = writeln!(
        out,
        "    symbol_error budget at BER {ber:e}: {}/h{applied}",
        fmt_sig(b.per_hour)
    );
}

fn port_block(out: &mut String, p: &PortReport, ber: f64, style: Style) {
    let _ = writeln!(
        out,
        "  {} ({}{}): {} [{}]",
        style.bold(&port_name(&p.device, &p.port)),
        kind_words(&p.kind),
        p.netdev
            .as_deref()
            .map_or(String::new(), |n| format!(", {n}")),
        verdict_styled(p.verdict, style),
        p.rule
    );
    budget_line(out, p, ber);
    if !p.counters.is_empty() {
        let _ = writeln!(
            out,
            "    {:<34} {:>12} {:>10} {:>9} {:>6}  saturation, resets",
            "counter", "delta", "per hour", "observed", "bits"
        );
        for c in &p.counters {
            counter_row(out, c);
        }
    }
    for f in &p.findings {
        let _ = writeln!(
            out,
            "    {} {}: {} [{}]",
            if f.verdict > Verdict::Clean { "!" } else { "-" },
            f.rule.as_str(),
            f.text,
            f.source.cite()
        );
    }
}

/// `thresholds: the defaults (docs/soak.md)`, or the ones the operator set with their
/// defaults beside them.
pub fn thresholds_words(jp: &JudgeParams) -> String {
    let changed = jp.changed();
    if changed.is_empty() {
        return "thresholds: the defaults (docs/soak.md)".into();
    }
    let set: Vec<String> = changed
        .iter()
        .map(|t| {
            format!(
                "{t}={} (default {})",
                t.fmt_value(t.get(jp)),
                t.fmt_value(t.default_value())
            )
        })
        .collect();
    format!("thresholds set: {}; the rest default", set.join(", "))
}

/// The final table: per end, each port's counters (delta, rate over the time observed,
/// width, saturation, resets), its verdict and rule, the findings with their sources; then the
/// dips and the verdict.
pub fn render_soak(r: &SoakReport, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}: {} sampled",
        style.bold("linerate soak"),
        r.params.host.as_deref().unwrap_or("(passive)"),
        linerate_soak::fmt_duration(r.duration_s)
    );
    let _ = writeln!(out, "{}", thresholds_words(&r.thresholds));
    for e in &r.ends {
        let _ = writeln!(
            out,
            "\n{} end: {} samples, {} Gb/s mean, {} Gb/s median, {} received{}",
            end_word(e.end),
            e.samples,
            fmt_sig(e.mean_gbps),
            fmt_sig(e.median_gbps),
            gb_words(e.bytes_received),
            e.tcp_retrans
                .map_or(String::new(), |t| format!(", {t} TCP retransmits"))
        );
        for p in &e.ports {
            port_block(&mut out, p, r.thresholds.ber, style);
        }
        for problem in &e.problems {
            let _ = writeln!(out, "  problem: {problem}");
        }
    }
    if r.dips_total > 0 {
        let _ = writeln!(
            out,
            "\nthroughput dips (below {}% of the median): {}",
            fmt_num(r.thresholds.dip_fraction * 100.0),
            r.dips_total
        );
        for d in r.dips.iter().take(20) {
            let moved: Vec<String> = d
                .moved
                .iter()
                .map(|m| format!("{} {} +{}", port_name(&m.device, &m.port), m.name, m.delta))
                .collect();
            let _ = writeln!(
                out,
                "  {} {}-{} s: {} Gb/s (median {}){}",
                end_word(d.end),
                fmt_num(linerate_units::r1(d.start_s)),
                fmt_num(linerate_units::r1(d.end_s)),
                fmt_sig(d.gbps),
                fmt_sig(d.median_gbps),
                if moved.is_empty() {
                    String::new()
                } else {
                    format!(", with {}", moved.join(", "))
                }
            );
        }
    }
    if let Some(e) = &r.error {
        let _ = writeln!(out, "\nstopped early: {e}");
    }
    let _ = writeln!(
        out,
        "\nverdict: {} ({})",
        verdict_styled(r.verdict, style),
        r.rule
    );
    out
}

/// The JSON document (`schemas/soak.schema.json`), pretty-printed.
pub fn soak_json(r: &SoakReport) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(r)
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// The labels of one port: `end` (`local`/`remote`), then `device` and `port` as
/// node_exporter's infiniband collector names them, so dashboards can join on them.
fn port_labels(end: End, p: &PortReport) -> String {
    format!(
        r#"end="{}",device="{}",port="{}""#,
        end_word(end),
        label(&p.device),
        label(&p.port)
    )
}

/// One metric family: HELP, TYPE gauge, and its samples.
fn family(out: &mut String, name: &str, help: &str, samples: &[(String, f64)]) {
    if samples.is_empty() {
        return;
    }
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (labels, v) in samples {
        let value = if v.is_finite() {
            format!("{v}")
        } else {
            "NaN".into()
        };
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    }
}

/// Every (end, port) of the report.
fn all_ports(r: &SoakReport) -> impl Iterator<Item = (End, &PortReport)> {
    r.ends
        .iter()
        .flat_map(|e| e.ports.iter().map(move |p| (e.end, p)))
}

/// Per-counter families: rate per hour, increase, saturated, resets.
fn counter_families(out: &mut String, r: &SoakReport) {
    let mut per_hour = Vec::new();
    let mut increase = Vec::new();
    let mut saturated = Vec::new();
    let mut resets = Vec::new();
    let mut observed = Vec::new();
    for (end, p) in all_ports(r) {
        for c in &p.counters {
            let l = format!(r#"{},counter="{}""#, port_labels(end, p), label(&c.name));
            if let Some(h) = c.per_hour {
                per_hour.push((l.clone(), h));
            }
            observed.push((l.clone(), c.observed_s));
            increase.push((l.clone(), c.delta as f64));
            saturated.push((l.clone(), f64::from(u8::from(!c.saturations.is_empty()))));
            resets.push((l, c.resets_total as f64));
        }
    }
    family(
        out,
        "linerate_soak_errors_per_hour",
        "Increase of each health counter per hour of the time it was observed in the last soak (linerate_soak_observed_seconds; a lower bound where linerate_soak_saturated is 1).",
        &per_hour,
    );
    family(
        out,
        "linerate_soak_observed_seconds",
        "Seconds of the last soak over which each health counter could show an increase (read at both ends of an interval, not pegged, not reset): its rate is over this.",
        &observed,
    );
    family(
        out,
        "linerate_soak_increase",
        "Increase of each health counter over the last soak (a lower bound where saturated or reset).",
        &increase,
    );
    family(
        out,
        "linerate_soak_saturated",
        "1 when the counter was at its maximum (2^width-1) during the last soak: it counts no further.",
        &saturated,
    );
    family(
        out,
        "linerate_soak_foreign_resets",
        "Times the counter was reset by someone else during the last soak.",
        &resets,
    );
}

/// The Prometheus text file for node_exporter's textfile collector (text format 0.0.4: HELP
/// and TYPE lines, gauges only, no timestamps). Every figure is a result of the last soak, so
/// every family is a gauge. `linerate_soak_verdict`: 0 clean, 1 insufficient, 2 congested,
/// 3 marginal, 4 bad.
pub fn soak_textfile(r: &SoakReport) -> String {
    let mut out = String::new();
    let verdicts: Vec<(String, f64)> = all_ports(r)
        .map(|(e, p)| (port_labels(e, p), f64::from(p.verdict.metric_value())))
        .collect();
    family(
        &mut out,
        "linerate_soak_verdict",
        "Verdict of the last soak per port and end: 0 clean, 1 insufficient, 2 congested, 3 marginal, 4 bad.",
        &verdicts,
    );
    let rules: Vec<(String, f64)> = all_ports(r)
        .map(|(e, p)| (format!(r#"{},rule="{}""#, port_labels(e, p), p.rule), 1.0))
        .collect();
    family(
        &mut out,
        "linerate_soak_rule_info",
        "The rule behind each port's verdict (clean when none fired); always 1.",
        &rules,
    );
    family(
        &mut out,
        "linerate_soak_overall_verdict",
        "Verdict of the last soak over both ends and every port (numbers as linerate_soak_verdict).",
        &[(String::new(), f64::from(r.verdict.metric_value()))],
    );
    counter_families(&mut out, r);
    let mut ber = Vec::new();
    let mut budget = Vec::new();
    for (end, p) in all_ports(r) {
        if let Some(b) = &p.ber {
            for (kind, v) in [("pre_fec", b.pre_fec), ("post_fec", b.post_fec)] {
                if let Some(v) = v {
                    let l = format!(
                        r#"{},kind="{kind}",estimate="{}""#,
                        port_labels(end, p),
                        b.estimate
                    );
                    ber.push((l, v));
                }
            }
        }
        if let Some(b) = p.symbol_budget.as_ref().filter(|b| !b.pam4) {
            budget.push((port_labels(end, p), b.per_hour));
        }
    }
    family(
        &mut out,
        "linerate_soak_ber_estimate",
        "Bit error rate over the last soak: pre_fec from corrected bits, post_fec from uncorrected (or InfiniBand symbol) errors; estimate=\"true\" where the bits are rate x time.",
        &ber,
    );
    family(
        &mut out,
        "linerate_soak_symbol_error_budget_per_hour",
        "symbol_error per hour allowed at the ber threshold at the port's signalling rate, before the floor of min_bits x ber errors; absent where symbol errors are not judged alone (PAM4). The limit that applied: linerate_soak_check_limit{rule=\"symbol_error_budget\"}.",
        &budget,
    );
    check_families(&mut out, r);
    end_families(&mut out, r);
    threshold_family(&mut out, r);
    out
}

/// Every check the judge evaluated: the figure and the limit, with the same labels, so that
/// `linerate_soak_check_value > linerate_soak_check_limit` fires exactly on the rules that fired.
fn check_families(out: &mut String, r: &SoakReport) {
    let mut values = Vec::new();
    let mut limits = Vec::new();
    for (end, p) in all_ports(r) {
        for c in &p.checks {
            let l = format!(
                r#"{},rule="{}",counter="{}",verdict="{}",unit="{}""#,
                port_labels(end, p),
                c.rule,
                label(c.counter.as_deref().unwrap_or("")),
                c.verdict,
                c.unit
            );
            values.push((l.clone(), c.value));
            limits.push((l, c.limit));
        }
    }
    family(
        out,
        "linerate_soak_check_value",
        "The figure each rule compared on each port in the last soak, in unit; the rule fired where it is above linerate_soak_check_limit (same labels). verdict is the rule's when it fires.",
        &values,
    );
    family(
        out,
        "linerate_soak_check_limit",
        "The limit each rule applied on each port in the last soak, in unit (floors included); absent where the rule does not apply.",
        &limits,
    );
}

/// The thresholds the soak was judged with (`--threshold`, docs/soak.md).
fn threshold_family(out: &mut String, r: &SoakReport) {
    let samples: Vec<(String, f64)> = Threshold::ALL
        .iter()
        .map(|t| (format!(r#"name="{t}""#), t.get(&r.thresholds)))
        .collect();
    family(
        out,
        "linerate_soak_threshold",
        "The thresholds the last soak was judged with, by name (docs/soak.md).",
        &samples,
    );
}

/// Duration and bytes per end.
fn end_families(out: &mut String, r: &SoakReport) {
    let per_end = |f: &dyn Fn(&linerate_soak::EndReport) -> f64| -> Vec<(String, f64)> {
        r.ends
            .iter()
            .map(|e| (format!(r#"end="{}""#, end_word(e.end)), f(e)))
            .collect()
    };
    family(
        out,
        "linerate_soak_duration_seconds",
        "Seconds each end sampled in the last soak.",
        &per_end(&|e| e.duration_s),
    );
    family(
        out,
        "linerate_soak_received_bytes",
        "Bytes each end's traffic engines received in the last soak.",
        &per_end(&|e| e.bytes_received as f64),
    );
    family(
        out,
        "linerate_soak_sent_bytes",
        "Bytes each end's traffic engines sent in the last soak.",
        &per_end(&|e| e.bytes_sent as f64),
    );
}

/// Points a timeline draws at most; longer soaks are merged into buckets (bytes over time).
const MAX_POINTS: usize = 1500;
/// Counter events marked on one chart at most (the caption counts the rest).
const MAX_MARKS: usize = 400;

/// (start_s, end_s, Gb/s) of the end's intervals, merged into at most `MAX_POINTS` buckets.
fn chart_points(intervals: &[&SoakInterval]) -> Vec<(f64, f64, f64)> {
    let per = intervals.len().div_ceil(MAX_POINTS).max(1);
    intervals
        .chunks(per)
        .filter_map(|c| {
            let (first, last) = (c.first()?, c.last()?);
            let bytes: u64 = c
                .iter()
                .map(|i| i.bytes_sent.saturating_add(i.bytes_received))
                .sum();
            let g = linerate_units::gbps(bytes, last.end_s - first.start_s);
            Some((first.start_s, last.end_s, g))
        })
        .collect()
}

/// The chart's scales: seconds to x, Gb/s to y.
struct Frame {
    w: f64,
    h: f64,
    l: f64,
    b: f64,
    t0: f64,
    tmax: f64,
    gmax: f64,
}

impl Frame {
    fn x(&self, s: f64) -> f64 {
        self.l + (self.w - self.l - 20.0) * (s - self.t0) / (self.tmax - self.t0).max(1e-9)
    }
    fn y(&self, g: f64) -> f64 {
        self.h - self.b - (self.h - self.b - 20.0) * g / self.gmax
    }
}

fn chart_axes(s: &mut String, f: &Frame) {
    let ystep = crate::html::nice_step(f.gmax, 4.0);
    let mut g = 0.0;
    while g <= f.gmax + 1e-9 {
        let _ = write!(
            s,
            r##"<line x1="{l}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e2e8f0"/><text x="{tx}" y="{ty:.1}" text-anchor="end" class="val">{v}</text>"##,
            l = f.l,
            y = f.y(g),
            x1 = f.w - 20.0,
            tx = f.l - 6.0,
            ty = f.y(g) + 4.0,
            v = fmt_num(linerate_units::r3(g))
        );
        g += ystep;
    }
    let xstep = crate::html::nice_step(f.tmax - f.t0, 6.0);
    let mut t = (f.t0 / xstep).ceil() * xstep;
    while t <= f.tmax + 1e-9 {
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{y}" text-anchor="middle" class="val">{v}</text>"#,
            x = f.x(t),
            y = f.h - f.b + 16.0,
            v = fmt_num(linerate_units::r3(t))
        );
        t += xstep;
    }
    let _ = write!(
        s,
        r##"<line x1="{l}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#334155"/><text x="{cx}" y="{ly}" text-anchor="middle" class="lbl">seconds on this end's clock</text><text x="14" y="{my}" class="lbl" transform="rotate(-90 14 {my})" text-anchor="middle">Gb/s</text>"##,
        l = f.l,
        y0 = f.h - f.b,
        x1 = f.w - 20.0,
        cx = f64::midpoint(f.w, f.l),
        ly = f.h - 6.0,
        my = f.h / 2.0
    );
}

/// Dips shaded, counter events as vertical marks (red: moved; purple: saturated or reset),
/// each with a tooltip naming the counters.
fn chart_marks(s: &mut String, f: &Frame, r: &SoakReport, end: End) -> usize {
    for d in r.dips.iter().filter(|d| d.end == end) {
        let _ = write!(
            s,
            r##"<rect class="dip" x="{x:.1}" y="20" width="{w:.1}" height="{h:.1}" fill="#fed7aa"><title>dip: {g} Gb/s (median {m})</title></rect>"##,
            x = f.x(d.start_s),
            w = (f.x(d.end_s) - f.x(d.start_s)).max(1.0),
            h = f.h - f.b - 20.0,
            g = fmt_sig(d.gbps),
            m = fmt_sig(d.median_gbps)
        );
    }
    let events: Vec<&SoakInterval> = r
        .timeline
        .iter()
        .filter(|i| i.end == end && !i.moved.is_empty())
        .collect();
    for i in events.iter().take(MAX_MARKS) {
        let special = i.moved.iter().any(|m| m.saturated || m.reset);
        let names: Vec<String> = i
            .moved
            .iter()
            .map(|m| {
                let what = if m.saturated {
                    " saturated"
                } else if m.reset {
                    " reset"
                } else {
                    ""
                };
                format!(
                    "{} {} +{}{what}",
                    port_name(&m.device, &m.port),
                    m.name,
                    m.delta
                )
            })
            .collect();
        let _ = write!(
            s,
            r#"<g class="event" stroke="{c}"><title>{t} s: {n}</title><line x1="{x:.1}" y1="20" x2="{x:.1}" y2="{y0}" stroke-width="1" stroke-opacity="0.3"/><line x1="{x:.1}" y1="8" x2="{x:.1}" y2="20" stroke-width="2"/></g>"#,
            x = f.x(f64::midpoint(i.start_s, i.end_s)),
            y0 = f.h - f.b,
            c = if special { "#9333ea" } else { "#dc2626" },
            t = fmt_num(linerate_units::r1(i.end_s)),
            n = esc(&names.join(", "))
        );
    }
    events.len()
}

/// One end's throughput per interval, with its dips and counter events marked.
fn end_chart(r: &SoakReport, end: End) -> String {
    let intervals: Vec<&SoakInterval> = r.timeline.iter().filter(|i| i.end == end).collect();
    let points = chart_points(&intervals);
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return "<p>No interval was measured on this end.</p>".into();
    };
    let gtop = points.iter().map(|p| p.2).fold(0.0_f64, f64::max).max(1e-9);
    let ystep = crate::html::nice_step(gtop, 4.0);
    let f = Frame {
        w: 760.0,
        h: 260.0,
        l: 60.0,
        b: 40.0,
        t0: first.0,
        tmax: last.1.max(first.0 + 1e-9),
        gmax: (gtop / ystep).ceil() * ystep,
    };
    let mut s = format!(
        r#"<svg class="chart" id="timeline-{e}" role="img" aria-label="{e} end throughput per interval" viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">"#,
        e = end_word(end),
        w = f.w,
        h = f.h
    );
    chart_axes(&mut s, &f);
    let marks = chart_marks(&mut s, &f, r, end);
    let pts: Vec<String> = points
        .iter()
        .flat_map(|(a, b, g)| {
            [
                format!("{:.1},{:.1}", f.x(*a), f.y(*g)),
                format!("{:.1},{:.1}", f.x(*b), f.y(*g)),
            ]
        })
        .collect();
    let _ = write!(
        s,
        r##"<polyline fill="none" stroke="#2563eb" stroke-width="2" points="{}"><title>Gb/s per interval</title></polyline></svg>"##,
        pts.join(" ")
    );
    let _ = write!(
        s,
        "<p class=\"cap\">{} intervals{}; {} with counter events{}; shaded: below {}% of the median</p>",
        intervals.len(),
        if points.len() < intervals.len() {
            format!(", drawn as {} buckets", points.len())
        } else {
            String::new()
        },
        marks,
        if marks > MAX_MARKS {
            format!(" (the first {MAX_MARKS} marked)")
        } else {
            String::new()
        },
        fmt_num(r.thresholds.dip_fraction * 100.0)
    );
    s
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Clean => "ok",
        Verdict::Insufficient | Verdict::Congested => "warning",
        Verdict::Marginal | Verdict::Bad => "error",
    }
}

/// Per end and port: verdict, rule, and every finding with its numbers and source.
fn verdict_table(o: &mut String, r: &SoakReport) {
    o.push_str("<h2>Verdict per port and end</h2><table id=\"verdicts\"><tr><th>end</th><th>port</th><th>verdict</th><th>rule</th><th>findings</th></tr>");
    for (end, p) in all_ports(r) {
        let findings: Vec<String> = p
            .findings
            .iter()
            .map(|f| {
                format!(
                    "<div><b>{}</b>: {} <span class=\"ev\">[{}]</span></div>",
                    esc(f.rule.as_str()),
                    esc(&f.text),
                    esc(f.source.cite())
                )
            })
            .collect();
        let _ = write!(
            o,
            "<tr class=\"{cls}\"><td>{e}</td><td>{port}<div class=\"ev\">{kind}</div></td><td class=\"sev\">{v}</td><td>{rule}</td><td>{f}</td></tr>",
            cls = verdict_class(p.verdict),
            e = end_word(end),
            port = esc(&port_name(&p.device, &p.port)),
            kind = esc(&kind_words(&p.kind)),
            v = p.verdict.as_str(),
            rule = esc(p.rule.as_str()),
            f = findings.join("")
        );
    }
    o.push_str("</table>");
}

/// Per end and port: every reported counter.
fn counters_table(o: &mut String, r: &SoakReport) {
    o.push_str("<h2>Counters</h2><table id=\"counters\"><tr><th>end</th><th>port</th><th>counter</th><th>delta</th><th>per hour</th><th>observed</th><th>bits</th><th>saturation, resets</th></tr>");
    for (end, p) in all_ports(r) {
        for c in &p.counters {
            let mut notes = Vec::new();
            if let Some(s) = c.saturations.first() {
                notes.push(format!(
                    "saturated at {} from {} s",
                    s.value,
                    fmt_num(linerate_units::r1(s.since.t_s))
                ));
            }
            if c.resets_total > 0 {
                notes.push(format!("reset {}×", c.resets_total));
            }
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                end_word(end),
                esc(&port_name(&p.device, &p.port)),
                esc(&c.name),
                esc(&delta_words(c)),
                esc(&per_hour_words(c)),
                esc(&linerate_soak::fmt_duration(c.observed_s)),
                esc(&c.width),
                esc(&notes.join("; "))
            );
        }
    }
    o.push_str("</table>");
}

/// The soak as one self-contained HTML document (inline CSS and SVG, no scripts): the verdict,
/// per end the throughput per interval with the counter events and dips marked, the verdict
/// table and the counters.
pub fn soak_html(r: &SoakReport) -> String {
    let title = r.params.host.as_deref().unwrap_or("passive");
    let mut o = format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>linerate soak: {t}</title><style>
body{{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f8fafc;color:#0f172a}}
main{{max-width:980px;margin:0 auto;padding:24px}} h1{{font-size:20px;margin:0 0 4px}} h2{{font-size:16px;margin:28px 0 8px}}
.verdict{{padding:16px 20px;border-radius:8px;font-size:18px;font-weight:600;background:#ecfdf5;border-left:6px solid #16a34a}}
.verdict.warning{{background:#fffbeb;border-color:#d97706}} .verdict.error{{background:#fef2f2;border-color:#dc2626}}
.chart{{background:#fff;border:1px solid #e2e8f0;border-radius:8px;width:100%;height:auto}} .lbl{{font-size:12px;fill:#334155}} .val{{font-size:11px;fill:#475569}}
table{{border-collapse:collapse;width:100%;background:#fff}} td,th{{border-bottom:1px solid #e2e8f0;padding:6px 8px;text-align:left;vertical-align:top;font-size:14px}}
.sev{{font-weight:700;text-transform:uppercase;font-size:12px}} .error .sev{{color:#dc2626}} .warning .sev{{color:#d97706}} .ok .sev{{color:#16a34a}}
.ev{{color:#64748b;font-size:12px}} .cap{{color:#475569;font-size:13px;margin:4px 0 0}} .muted{{color:#64748b;font-size:13px}}
</style></head><body><main>
<h1>linerate soak — {t}</h1><p class="muted">linerate {ver} · {dur} sampled</p>
<div class="verdict {cls}" id="verdict">{v} ({rule})</div><p class="muted" id="thresholds">{th}</p>"#,
        t = esc(title),
        ver = esc(&r.tool.version),
        dur = esc(&linerate_soak::fmt_duration(r.duration_s)),
        cls = verdict_class(r.verdict),
        v = r.verdict.as_str(),
        rule = esc(r.rule.as_str()),
        th = esc(&thresholds_words(&r.thresholds))
    );
    if let Some(e) = &r.error {
        let _ = write!(o, "<p id=\"error\"><b>Stopped early:</b> {}</p>", esc(e));
    }
    for e in &r.ends {
        let _ = write!(
            o,
            "<h2>{} end: throughput per interval and counter events</h2>{}",
            end_word(e.end),
            end_chart(r, e.end)
        );
    }
    verdict_table(&mut o, r);
    counters_table(&mut o, r);
    o.push_str("<p class=\"muted\">Each end's times are on its own clock; the two are not compared. Red marks: health counters that moved in that interval; purple: a counter saturated or was reset.</p></main></body></html>\n");
    o
}
