//! `linerate soak`'s renderers: the live line per interval, the final table per port and end,
//! the JSON document, the Prometheus/OpenMetrics text file for node_exporter's textfile
//! collector; its HTML is `html::soak`'s. Pure: data in, text out (the atomic write of the
//! text file is the command's).

use std::fmt::Write as _;

use linerate_proto::soak::{End, SoakPortKind};
use linerate_soak::{
    CounterOut, JudgeParams, PortReport, SoakInterval, SoakReport, Threshold, Verdict,
};
use linerate_units::{fmt_num, fmt_sig};

use crate::style::Style;

pub(crate) fn end_word(e: End) -> &'static str {
    match e {
        End::Local => "local",
        End::Remote => "remote",
    }
}

/// `mlx4_0/1`, or the interface name alone for a netdev without an RDMA port.
pub(crate) fn port_name(device: &str, port: &str) -> String {
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

pub(crate) fn kind_words(k: &SoakPortKind) -> String {
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
pub(crate) fn delta_words(c: &CounterOut) -> String {
    if c.at_least {
        format!(">= {}", c.delta)
    } else {
        c.delta.to_string()
    }
}

/// The rate per hour over the time observed: `>= 332100` where the counter pegged while
/// observed, `-` where no time was.
pub(crate) fn per_hour_words(c: &CounterOut) -> String {
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
pub(crate) fn all_ports(r: &SoakReport) -> impl Iterator<Item = (End, &PortReport)> {
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
