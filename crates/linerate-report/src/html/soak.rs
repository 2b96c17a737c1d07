//! soak's HTML report: one self-contained file (inline CSS and SVG, no scripts): the verdict,
//! per end the throughput per interval with the counter events and dips marked, the verdict
//! table and the counters.

use std::fmt::Write as _;

use linerate_proto::soak::End;
use linerate_soak::{SoakInterval, SoakReport, Verdict};
use linerate_units::{fmt_num, fmt_sig};

use super::{css, esc, nice_step, page_start, svg_open};
use crate::soak::{
    all_ports, delta_words, end_word, kind_words, per_hour_words, port_name, thresholds_words,
};

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
    let ystep = nice_step(f.gmax, 4.0);
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
    let xstep = nice_step(f.tmax - f.t0, 6.0);
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
    let ystep = nice_step(gtop, 4.0);
    let f = Frame {
        w: 760.0,
        h: 260.0,
        l: 60.0,
        b: 40.0,
        t0: first.0,
        tmax: last.1.max(first.0 + 1e-9),
        gmax: (gtop / ystep).ceil() * ystep,
    };
    let e = end_word(end);
    let mut s = svg_open(
        &format!("timeline-{e}"),
        &format!("{e} end throughput per interval"),
        f.w,
        f.h,
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
    let mut o = String::new();
    page_start(
        &mut o,
        &format!("linerate soak: {}", esc(title)),
        &[
            css::BODY,
            css::MAIN,
            css::VERDICT,
            css::VERDICT_LEVELS,
            css::CHART,
            css::TABLE,
            ".sev{font-weight:700;text-transform:uppercase;font-size:12px} .error .sev{color:#dc2626} .warning .sev{color:#d97706} .ok .sev{color:#16a34a}",
            ".ev{color:#64748b;font-size:12px} .cap{color:#475569;font-size:13px;margin:4px 0 0} .muted{color:#64748b;font-size:13px}",
        ],
    );
    let _ = write!(
        o,
        r#"<h1>linerate soak — {t}</h1><p class="muted">linerate {ver} · {dur} sampled</p>
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
