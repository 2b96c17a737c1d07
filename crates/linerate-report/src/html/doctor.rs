//! doctor's HTML report: one self-contained file (inline CSS and SVG, no
//! scripts, no network fetches) with the ceiling waterfall, throughput over
//! time per stream, and the latency distribution.

use std::fmt::Write as _;

use linerate_facts::{Row, Severity};
use linerate_results::DoctorReport;

use super::{css, esc, nice_step, page_start, svg_open};
use crate::bench::num;

/// The pyramid's network row by that name, with its test: `network, best TCP result (TCP
/// send, 2 streams)`.
fn best_tcp_label(net: &Row) -> String {
    match &net.test {
        Some(t) => format!("{} ({t})", crate::BEST_TCP),
        None => crate::BEST_TCP.to_string(),
    }
}

const PALETTE: [&str; 8] = [
    "#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
];

/// Waterfall: each stage of the chain as a bar, then the measured rate.
/// Horizontal room a bar chart needs for its labels: (left margin for the names, room right of
/// the longest bar for its value). SVG text does not wrap or clip, so the chart makes room
/// for the longest text it draws: about 0.62 em per character of the system UI font at 12 px
/// (labels) and 11 px (values), plus padding. Names longer than `MAX_LABEL` characters are
/// shortened with an ellipsis (the bar's tooltip keeps the whole name).
fn bar_layout(labels: &[String], values: &[String]) -> (f64, f64) {
    let longest = |v: &[String]| v.iter().map(|s| s.chars().count()).max().unwrap_or(0) as f64;
    let left = (longest(labels).min(MAX_LABEL as f64) * 7.5 + 16.0).clamp(120.0, 380.0);
    let right = longest(values) * 6.9 + 14.0;
    (left, right)
}

/// The longest bar name drawn whole.
const MAX_LABEL: usize = 48;

fn short_label(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX_LABEL - 1).collect();
        format!("{head}…")
    }
}

fn waterfall(r: &DoctorReport) -> String {
    let mut bars: Vec<(String, f64, &str)> = Vec::new();
    let chain = r
        .path
        .local
        .ceiling
        .as_ref()
        .filter(|c| c.gbps > 0.0 || c.potential_gbps.is_some())
        .map(|c| c.chain.clone())
        .unwrap_or_default();
    if chain.is_empty() {
        // A virtual path: the host stack's bound comes from one core copying the stream's
        // writes (cache-sized buffers), not from the large-buffer copy.
        if let Some(m) = r
            .memory
            .iter()
            .filter(|m| m.threads == 1)
            .min_by_key(|m| m.buffer_bytes)
        {
            bars.push((
                format!("memory copy, 1 core, {} KiB buffers", m.buffer_bytes >> 10),
                m.gbps,
                "#64748b",
            ));
        }
        if let Some(s) = r.path.stack_ceiling_gbps {
            // A bound a measured stream beat is drawn as what it is, not as a ceiling.
            let beaten = r.stack_bound_beaten();
            bars.push(if beaten {
                (
                    "host TCP stack bound (beaten: see ceiling.exceeded)".into(),
                    s,
                    "#fca5a5",
                )
            } else {
                ("host TCP stack bound, 1 stream".into(), s, "#94a3b8")
            });
        }
    } else {
        for s in &chain {
            bars.push((s.stage.as_str().to_string(), s.gbps, "#94a3b8"));
        }
    }
    let ends = std::iter::once(("local", &r.path.local))
        .chain(r.path.remote.iter().map(|f| ("remote", f)));
    for (end, f) in ends {
        for s in &f.shapers {
            bars.push((
                format!(
                    "{} shaper ({end} {})",
                    s.kind,
                    f.netdev.as_deref().unwrap_or("?")
                ),
                linerate_units::bps_to_gbps(s.rate_bps as f64),
                "#f59e0b",
            ));
        }
    }
    if r.verdict.ceiling_gbps > 0.0 {
        bars.push((
            "ceiling of the path (TCP)".into(),
            r.verdict.ceiling_gbps,
            "#475569",
        ));
    }
    // The verdict's figure, set against the ceiling, named by its test (the best TCP result of
    // all is the pyramid's network row, which may be larger: several streams).
    bars.push((
        r.verdict
            .test
            .as_deref()
            .map_or("measured".into(), |t| format!("measured: {t}")),
        r.verdict.gbps,
        "#2563eb",
    ));
    bars.dedup_by(|a, b| a.0 == b.0);
    let max = bars.iter().map(|b| b.1).fold(0.0_f64, f64::max).max(1e-9);
    let values: Vec<String> = bars.iter().map(|b| format!("{} Gb/s", num(b.1))).collect();
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let (left, right) = bar_layout(&labels, &values);
    let (w, row) = (760.0, 30.0);
    let h = row * bars.len() as f64 + 20.0;
    let mut s = svg_open("waterfall", "ceiling waterfall", w, h);
    for (i, (label, g, color)) in bars.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        let bw = ((w - left - right) * g / max).max(1.0);
        let _ = write!(
            s,
            r#"<text x="{x}" y="{ty}" text-anchor="end" class="lbl">{sl}</text><rect x="{left}" y="{y}" width="{bw:.1}" height="{bh}" fill="{color}" rx="3"><title>{l}: {v} Gb/s</title></rect><text x="{vx:.1}" y="{ty}" class="val">{v} Gb/s</text>"#,
            x = left - 8.0,
            ty = y + 15.0,
            sl = esc(&short_label(label)),
            l = esc(label),
            bh = row - 8.0,
            v = num(*g),
            vx = left + bw + 6.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// The pyramid as bars on a log scale (memory and a disk differ a hundredfold),
/// the layer that limits a copy in red.
fn pyramid_chart(r: &DoctorReport) -> String {
    let rows = &r.pyramid.rows;
    if rows.is_empty() {
        return String::new();
    }
    let max = rows
        .iter()
        .map(|x| x.gbps)
        .fold(0.0_f64, f64::max)
        .max(1e-3);
    let min = rows
        .iter()
        .map(|x| x.gbps)
        .filter(|g| *g > 0.0)
        .fold(max, f64::min);
    let lo = (min.log10().floor() - 0.3).min(max.log10() - 1.0);
    let hi = max.log10() + 0.05;
    let label = |x: &Row| {
        if x.layer == "network" {
            return best_tcp_label(x);
        }
        format!(
            "{}{}{} {}",
            x.layer.replace('_', " "),
            if x.durable { " (durable)" } else { "" },
            if x.host == "remote" { " (server)" } else { "" },
            x.subject
        )
    };
    let value = |x: &Row| format!("{} Gb/s ({} GB/s)", num(x.gbps), num(x.gbps / 8.0));
    let labels: Vec<String> = rows.iter().map(label).collect();
    let values: Vec<String> = rows.iter().map(value).collect();
    let (left, right) = bar_layout(&labels, &values);
    let (w, row) = (760.0, 30.0);
    let h = row * rows.len() as f64 + 20.0;
    let mut s = svg_open("pyramid-chart", "storage pyramid, log scale", w, h);
    for (i, x) in rows.iter().enumerate() {
        let slow = r
            .pyramid
            .copy
            .as_ref()
            .is_some_and(|c| c.limited_by.same_place(x));
        let color = match x.layer.as_str() {
            _ if slow => "#dc2626",
            "memory" => "#64748b",
            "network" => "#2563eb",
            "file_copy" => "#7c3aed",
            _ => "#0d9488",
        };
        let frac = ((x.gbps.max(1e-9).log10() - lo) / (hi - lo)).clamp(0.0, 1.0);
        let bw = ((w - left - right) * frac).max(1.0);
        let y = 10.0 + row * i as f64;
        let _ = write!(
            s,
            r#"<text x="{lx}" y="{ty}" text-anchor="end" class="lbl">{sl}</text><rect x="{left}" y="{y}" width="{bw:.1}" height="{bh}" fill="{color}" rx="3"><title>{l}: {v} Gb/s</title></rect><text x="{vx:.1}" y="{ty}" class="val">{val}</text>"#,
            lx = left - 8.0,
            ty = y + 15.0,
            sl = esc(&short_label(&labels[i])),
            l = esc(&labels[i]),
            val = esc(&values[i]),
            bh = row - 8.0,
            v = num(x.gbps),
            vx = left + bw + 6.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// Throughput over time as steps (the rate is constant within an interval), one line per stream.
fn timeline(r: &DoctorReport) -> String {
    let t = r
        .tests
        .iter()
        .filter(|t| t.kind == "tcp_bw" && !t.intervals.is_empty())
        .max_by_key(|t| t.streams);
    let Some(t) = t else {
        return "<p>No throughput test completed.</p>".into();
    };
    let frame = TimeFrame::new(&t.intervals);
    let (w, h) = (frame.w, frame.h);
    let mut s = svg_open("timeline", "throughput over time", w, h);
    timeline_axes(&mut s, &frame);
    timeline_lines(&mut s, &frame, &t.intervals);
    s.push_str("</svg>");
    let _ = write!(
        s,
        "<p class=\"cap\">{}: {} Gb/s in total</p>",
        esc(&t.params.describe()),
        num(t.gbps)
    );
    s
}

/// The timeline's geometry: the SVG size, its left and bottom margins, and the data range
/// (seconds on x, Gb/s on y) rounded out to whole tick steps on y.
struct TimeFrame {
    w: f64,
    h: f64,
    l: f64,
    b: f64,
    tmax: f64,
    gmax: f64,
    xstep: f64,
    ystep: f64,
}

impl TimeFrame {
    fn new(intervals: &[linerate_results::IntervalOut]) -> Self {
        // Both maxima stay above zero so an all-zero test still has a scale to divide by.
        let tmax = intervals
            .iter()
            .map(|i| i.end_s)
            .fold(0.0_f64, f64::max)
            .max(1e-9);
        let gtop = intervals
            .iter()
            .flat_map(|i| i.streams.iter().copied().chain(std::iter::once(i.gbps)))
            .fold(0.0_f64, f64::max)
            .max(1e-9);
        let ystep = nice_step(gtop, 4.0);
        Self {
            w: 760.0,
            h: 280.0,
            l: 60.0,
            b: 40.0,
            tmax,
            gmax: (gtop / ystep).ceil() * ystep,
            xstep: nice_step(tmax, 6.0),
            ystep,
        }
    }

    /// Seconds to the SVG x coordinate.
    fn x(&self, s: f64) -> f64 {
        self.l + (self.w - self.l - 20.0) * s / self.tmax
    }

    /// Gb/s to the SVG y coordinate.
    fn y(&self, g: f64) -> f64 {
        self.h - self.b - (self.h - self.b - 25.0) * g / self.gmax
    }
}

/// Both axes, the Gb/s grid and ticks, the seconds ticks, and the axis names.
fn timeline_axes(s: &mut String, f: &TimeFrame) {
    let TimeFrame { w, h, l, b, .. } = *f;
    let _ = write!(
        s,
        r##"<line x1="{l}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#334155"/><line x1="{l}" y1="25" x2="{l}" y2="{y0}" stroke="#334155"/>"##,
        y0 = h - b,
        x1 = w - 20.0
    );
    let mut g = 0.0;
    while g <= f.gmax + 1e-9 {
        let _ = write!(
            s,
            r##"<text x="{tx}" y="{ty:.1}" text-anchor="end" class="val">{v}</text><line x1="{l}" y1="{ty2:.1}" x2="{x1}" y2="{ty2:.1}" stroke="#e2e8f0"/>"##,
            tx = l - 6.0,
            ty = f.y(g) + 4.0,
            v = linerate_units::fmt_num(linerate_units::r3(g)),
            ty2 = f.y(g),
            x1 = w - 20.0
        );
        g += f.ystep;
    }
    let mut ts = 0.0;
    while ts <= f.tmax + 1e-9 {
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" y1="{y0}" x2="{xx:.1}" y2="{y1}" stroke="#334155"/><text x="{xx:.1}" y="{ty}" text-anchor="middle" class="val">{v}</text>"##,
            xx = f.x(ts),
            y0 = h - b,
            y1 = h - b + 4.0,
            ty = h - b + 16.0,
            v = linerate_units::fmt_num(linerate_units::r3(ts))
        );
        ts += f.xstep;
    }
    let _ = write!(
        s,
        r#"<text x="{cx}" y="{ly}" text-anchor="middle" class="lbl">seconds</text><text x="14" y="{my}" class="lbl" transform="rotate(-90 14 {my})" text-anchor="middle">Gb/s</text>"#,
        cx = f64::midpoint(w, l),
        ly = h - 6.0,
        my = h / 2.0
    );
}

/// The series to draw: one per stream, plus the total when there is more than one stream.
fn timeline_series(
    intervals: &[linerate_results::IntervalOut],
) -> Vec<(String, Vec<f64>, &'static str)> {
    let n = intervals.iter().map(|i| i.streams.len()).max().unwrap_or(0);
    let mut series: Vec<(String, Vec<f64>, &str)> = (0..n)
        .map(|k| {
            (
                format!("stream {k}"),
                intervals
                    .iter()
                    .map(|i| i.streams.get(k).copied().unwrap_or(0.0))
                    .collect(),
                PALETTE[k % PALETTE.len()],
            )
        })
        .collect();
    if n > 1 {
        series.push((
            "total".into(),
            intervals.iter().map(|i| i.gbps).collect(),
            "#0f172a",
        ));
    }
    series
}

/// Each series as a step line, with its legend entry along the top.
fn timeline_lines(s: &mut String, f: &TimeFrame, intervals: &[linerate_results::IntervalOut]) {
    for (k, (name, vals, color)) in timeline_series(intervals).iter().enumerate() {
        let pts: Vec<String> = intervals
            .iter()
            .zip(vals)
            .flat_map(|(i, g)| {
                [
                    format!("{:.1},{:.1}", f.x(i.start_s), f.y(*g)),
                    format!("{:.1},{:.1}", f.x(i.end_s), f.y(*g)),
                ]
            })
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            pts.join(" "),
            esc(name)
        );
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="{ly}" width="12" height="3" fill="{color}"/><text x="{tx}" y="{ty}" class="val">{}</text>"#,
            esc(name),
            lx = f.l + 10.0 + 90.0 * k as f64,
            ly = 8.0,
            tx = f.l + 26.0 + 90.0 * k as f64,
            ty = 13.0
        );
    }
}

/// Latency distribution: transactions per log-spaced bucket, on a log count scale so the tail shows.
fn latency(r: &DoctorReport) -> String {
    let Some(t) = r.tests.iter().find(|t| {
        t.latency_histogram
            .as_ref()
            .is_some_and(|h| h.iter().any(|b| b.1 > 0))
    }) else {
        return "<p>No latency test completed.</p>".into();
    };
    let all = t.latency_histogram.clone().unwrap_or_default();
    // Keep empty buckets between the first and last non-empty one, so the axis stays log-spaced.
    let first = all.iter().position(|b| b.1 > 0).unwrap_or(0);
    let last = all.iter().rposition(|b| b.1 > 0).unwrap_or(0);
    let hist = &all[first..=last];
    let cmax = hist.iter().map(|h| h.1).max().unwrap_or(1).max(1);
    let scale = |c: u64| (c as f64 + 1.0).log10() / (cmax as f64 + 1.0).log10();
    let (w, h, l, b) = (760.0, 260.0, 60.0, 56.0);
    let bw = ((w - l - 20.0) / hist.len().max(1) as f64).max(2.0);
    let mut s = svg_open("latency", "latency distribution", w, h);
    let _ = write!(
        s,
        r##"<line x1="{l}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#334155"/>"##,
        y0 = h - b,
        x1 = w - 20.0
    );
    for c in [1u64, 10, 100, 1000, 10_000, 100_000, 1_000_000] {
        if c > cmax {
            break;
        }
        let yy = h - b - (h - b - 15.0) * scale(c);
        let _ = write!(
            s,
            r##"<text x="{tx}" y="{ty:.1}" text-anchor="end" class="val">{c}</text><line x1="{l}" y1="{yy:.1}" x2="{x1}" y2="{yy:.1}" stroke="#e2e8f0"/>"##,
            tx = l - 6.0,
            ty = yy + 4.0,
            x1 = w - 20.0
        );
    }
    let label_every = (hist.len() / 10).max(1);
    for (i, (us, c)) in hist.iter().enumerate() {
        let x = l + bw * i as f64;
        if *c > 0 {
            let bh = ((h - b - 15.0) * scale(*c)).max(1.5);
            let _ = write!(
                s,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{ww:.1}" height="{bh:.1}" fill="#9333ea"><title>≤ {v} µs: {c}</title></rect>"##,
                y = h - b - bh,
                ww = (bw - 1.0).max(1.0),
                v = num(*us)
            );
        }
        if i % label_every == 0 {
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{ty}" class="val" transform="rotate(35 {x:.1} {ty})">{v}</text>"#,
                ty = h - b + 14.0,
                v = num(*us)
            );
        }
    }
    let _ = write!(
        s,
        r#"<text x="{cx}" y="{ly}" text-anchor="middle" class="lbl">round trip, µs (log-spaced buckets; counts on a log scale)</text>"#,
        cx = f64::midpoint(w, l),
        ly = h - 6.0
    );
    s.push_str("</svg>");
    if let Some(l) = &t.latency_us {
        let _ = write!(s, "<p class=\"cap\">p50 {} µs · p90 {} · p99 {} · p99.9 {} · max {} · mean {} µs · {} transactions/s</p>", num(l.p50), num(l.p90), num(l.p99), num(l.p999), num(l.max), num(l.mean), num(t.transactions_per_s.unwrap_or(0.0)));
    }
    if let Some(m) = &t.latency_mode {
        let _ = write!(
            s,
            "<p class=\"cap\">{}: {}</p>",
            esc(m.label()),
            esc(&m.reason)
        );
    }
    s
}

fn sev_class(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// The report as one HTML document.
pub fn doctor_html(r: &DoctorReport) -> String {
    let mut o = String::new();
    html_head(&mut o, r);
    let _ = write!(
        o,
        "<h2>From the signalling rate down to what was measured</h2>{}",
        waterfall(r)
    );
    let _ = write!(
        o,
        "<h2>Throughput over time, per stream</h2>{}",
        timeline(r)
    );
    let _ = write!(o, "<h2>Latency distribution</h2>{}", latency(r));
    findings_table(&mut o, r);
    tests_table(&mut o, r);
    pyramid_table(&mut o, r);
    copy_notes(&mut o, r);
    let _ = writeln!(
        o,
        "<p class=\"muted\">Checked: {}</p></main></body></html>",
        esc(&r.checked.join("; "))
    );
    o
}

/// The document head, its style sheet, the title and the verdict banner.
fn html_head(o: &mut String, r: &DoctorReport) {
    let title = if r.mode == "self_check" {
        "self-check of this machine".to_string()
    } else {
        format!("path to {}", r.server)
    };
    let worst = r.findings.iter().map(|f| f.severity).max();
    page_start(
        o,
        &format!("linerate doctor: {}", esc(&title)),
        &[
            css::BODY,
            css::MAIN,
            css::VERDICT,
            css::VERDICT_LEVELS,
            css::CHART,
            css::TABLE,
            ".sev{font-weight:700;text-transform:uppercase;font-size:12px} .error .sev{color:#dc2626} .warning .sev{color:#d97706} .info .sev{color:#0891b2}",
            ".ev{color:#64748b;font-size:12px;font-family:ui-monospace,monospace} .fix{color:#166534} .cap{color:#475569;font-size:13px;margin:4px 0 0} .muted{color:#64748b;font-size:13px}",
        ],
    );
    let _ = write!(
        o,
        r#"<h1>linerate doctor — {t}</h1><p class="muted">linerate {ver} · {secs} s · server {srv}</p>
<div class="verdict {cls}" id="verdict">{v}</div>"#,
        t = esc(&title),
        ver = esc(&r.tool.version),
        secs = num(r.seconds),
        srv = esc(&r.server),
        cls = worst.map_or("ok", |w| if w >= Severity::Warning {
            sev_class(w)
        } else {
            "ok"
        }),
        v = esc(&r.verdict.summary),
    );
}

/// The findings, one row each with the evidence and the fix.
fn findings_table(o: &mut String, r: &DoctorReport) {
    let _ = write!(o, "<h2>Findings</h2><table id=\"findings\"><tr><th>severity</th><th>finding</th><th>what and why</th></tr>");
    for f in &r.findings {
        let ev: Vec<String> = f
            .evidence
            .iter()
            .map(|(k, v)| format!("{} = {}", esc(k), esc(v)))
            .collect();
        let _ = write!(
            o,
            "<tr class=\"{c}\"><td class=\"sev\">{c}</td><td><b>{id}</b><br><span class=\"muted\">{subj}</span></td><td>{m}<div class=\"ev\">{ev}</div><div class=\"fix\">fix: {fix}</div></td></tr>",
            c = sev_class(f.severity),
            id = esc(f.id.as_str()),
            subj = esc(&f.subject),
            m = esc(&f.message),
            ev = ev.join("<br>"),
            fix = esc(&f.fix)
        );
    }
    o.push_str("</table>");
}

/// One row per test: what ran, its result, the CPU of both ends.
fn tests_table(o: &mut String, r: &DoctorReport) {
    let _ = write!(o, "<h2>Tests</h2><table id=\"tests\"><tr><th>test</th><th>result</th><th>CPU sender / receiver</th></tr>");
    for t in &r.tests {
        let res = test_result_cell(t);
        let cpu = cpu_cell(t);
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.params.describe()),
            esc(&res),
            esc(&cpu)
        );
    }
    // Steps the far end's protocol cannot express (a stock iperf3 server: latency, RDMA, the
    // copy), with the reason.
    for k in &r.far_end.skipped {
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"muted\">skipped: {}</td><td></td></tr>",
            esc(&k.step),
            esc(&k.reason)
        );
    }
    o.push_str("</table>");
}

/// A test's result cell: percentiles and rate for latency, Gb/s with loss or retransmits otherwise.
fn test_result_cell(t: &linerate_results::TestResult) -> String {
    match &t.latency_us {
        Some(l) => format!(
            "p50 {} µs, p99 {} µs, {} transactions/s{}",
            num(l.p50),
            num(l.p99),
            num(t.transactions_per_s.unwrap_or(0.0)),
            t.latency_mode
                .as_ref()
                .map_or(String::new(), |m| format!(", {}", m.label()))
        ),
        None => {
            let mut s = format!("{} Gb/s", num(t.gbps));
            if let Some(l) = t.loss_percent {
                let _ = write!(s, ", loss {}%", num(l));
            }
            if let Some(x) = t.retransmits {
                let _ = write!(s, ", {x} retransmits");
            }
            s
        }
    }
}

/// "sender% / receiver%", with "?" for an end that did not report.
fn cpu_cell(t: &linerate_results::TestResult) -> String {
    format!(
        "{} / {}",
        t.sender
            .as_ref()
            .map_or("?".into(), |e| format!("{}%", num(e.cpu_percent))),
        t.receiver
            .as_ref()
            .map_or("?".into(), |e| format!("{}%", num(e.cpu_percent)))
    )
}

/// The pyramid as a table (memory, network, disks, copy), then as a chart.
fn pyramid_table(o: &mut String, r: &DoctorReport) {
    let _ = write!(o, "<h2>The pyramid</h2><table id=\"pyramid\">");
    for m in &r.memory {
        let _ = write!(
            o,
            "<tr><td>memory copy, {} thread(s), {} KiB buffers</td><td>{} GB/s = {} Gb/s</td></tr>",
            m.threads,
            m.buffer_bytes >> 10,
            num(m.gb_per_s),
            num(m.gbps)
        );
    }
    if let Some(net) = r.pyramid.rows.iter().find(|x| x.layer == "network") {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{} Gb/s</td></tr>",
            esc(&best_tcp_label(net)),
            num(net.gbps)
        );
    }
    for row in r
        .pyramid
        .rows
        .iter()
        .filter(|x| x.layer != "memory" && x.layer != "network")
    {
        let _ = write!(
            o,
            "<tr><td>{}{} ({}) {}</td><td>{} GB/s = {} Gb/s</td></tr>",
            esc(&row.layer.replace('_', " ")),
            if row.durable { " (durable, fsync)" } else { "" },
            esc(&row.host),
            esc(&row.subject),
            num(row.gbps / 8.0),
            num(row.gbps)
        );
    }
    o.push_str("</table>");
    o.push_str(&pyramid_chart(r));
}

/// The measured copy's layers and its sentence, then the pyramid's notes.
fn copy_notes(o: &mut String, r: &DoctorReport) {
    if let Some(c) = &r.pyramid.copy {
        if !c.layers.is_empty() {
            let layers: Vec<String> = c
                .layers
                .iter()
                .map(|l| {
                    format!(
                        "{}{} {} Gb/s",
                        l.layer.replace('_', " "),
                        if l.durable { " (durable)" } else { "" },
                        num(l.gbps)
                    )
                })
                .collect();
            let _ = write!(
                o,
                "<p class=\"muted\">The measured copy's own layers: {}.</p>",
                esc(&layers.join(", "))
            );
        }
        let _ = write!(o, "<p><b>{}</b></p>", esc(&c.sentence));
    }
    for n in &r.pyramid.notes {
        let _ = write!(o, "<p class=\"muted\">{}</p>", esc(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_cell_says_how_the_ends_waited() {
        use linerate_proto::{Direction, TestKind, TestParams};
        let mut t =
            linerate_results::TestResult::new(TestParams::new(TestKind::TcpLat, Direction::Send));
        t.latency_us = Some(linerate_stats::LatencyUs {
            p50: 5.0,
            p90: 6.0,
            p99: 9.0,
            p999: 12.0,
            max: 20.0,
            min: Some(4.0),
            mean: 5.5,
            stddev: Some(1.0),
        });
        t.latency_mode = Some(linerate_results::LatencyMode::new(
            200,
            Some(200),
            "idle cores".into(),
        ));
        assert!(
            test_result_cell(&t).ends_with(", busy-polled"),
            "{}",
            test_result_cell(&t)
        );
        t.latency_mode = Some(linerate_results::LatencyMode::new(0, Some(0), "x".into()));
        assert!(test_result_cell(&t).ends_with(", blocking"));
    }

    #[test]
    fn the_longest_texts_fit_in_the_chart() {
        // The value of the longest bar ends before the right edge, and a long name fits the
        // left margin (shortened beyond MAX_LABEL characters), at the estimated glyph widths.
        let labels = vec![
            "memory copy, all cores".to_string(),
            "disk write (durable) /srv/data/linerate-test-directory (xfs on nvme0n1p3)".to_string(),
        ];
        let values = vec!["111 Gb/s (13.8 GB/s)".to_string(), "0.5 Gb/s".to_string()];
        let (left, right) = bar_layout(&labels, &values);
        let w = 760.0;
        let bar = w - left - right;
        assert!(bar > 200.0, "bars get {bar} px");
        let value_end = left + bar + 6.0 + 20.0 * 6.9;
        assert!(value_end <= w, "value ends at {value_end}");
        let shown = short_label(&labels[1]);
        assert_eq!(shown.chars().count(), MAX_LABEL);
        assert!(shown.ends_with('…'));
        assert!(MAX_LABEL as f64 * 7.5 <= left - 8.0, "left margin {left}");
    }
}
