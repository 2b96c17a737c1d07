//! `linerate mesh`'s renderers: terminal text with a heatmap, the CSV matrix, and the HTML
//! report (heatmap and per-node bars as inline SVG, the worst links with their explanations,
//! the fleet findings). Pure: a [`MeshReport`] in, text out.

use std::fmt::Write as _;

use linerate_facts::Severity;
use linerate_mesh::judge::SLOW_FRACTION;
use linerate_mesh::{LinkStatus, LinkVerdict, MeshReport, NodeStatus};
use linerate_units::fmt_sig;

use crate::html::esc;
use crate::style::Style;

/// The largest fleet drawn as a heatmap in the terminal (one column per node).
pub const HEATMAP_MAX_NODES: u32 = 64;

/// The largest fleet whose matrix is also printed in Gb/s figures.
const FIGURES_MAX_NODES: u32 = 12;

/// The most heatmap cells the HTML report draws one by one (the rest are in the JSON and CSV).
const MAX_SVG_CELLS: usize = 20_000;

/// How many bad links the text and HTML reports list.
const WORST_LINKS: usize = 12;

/// One heatmap cell's shade: how close a link came to the fleet's reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shade {
    /// At least [`SLOW_FRACTION`] of the reference: a healthy link.
    Full,
    /// 60 % to the slow threshold.
    High,
    /// 40–60 %.
    Mid,
    /// Below 40 %.
    Low,
    /// Measured nothing (an error).
    Failed,
    /// Not measured (the diagonal, or not in the schedule).
    None,
}

impl Shade {
    fn of(gbps: Option<f64>, failed: bool, reference: Option<f64>) -> Self {
        match (gbps, reference) {
            (None, _) if failed => Shade::Failed,
            (None, _) => Shade::None,
            (Some(_), None) => Shade::Full,
            (Some(g), Some(r)) => {
                let f = if r > 0.0 { g / r } else { 1.0 };
                if f >= SLOW_FRACTION {
                    Shade::Full
                } else if f >= 0.6 {
                    Shade::High
                } else if f >= 0.4 {
                    Shade::Mid
                } else {
                    Shade::Low
                }
            }
        }
    }

    fn glyph(self, unicode: bool) -> char {
        match (self, unicode) {
            (Shade::Full, true) => '█',
            (Shade::High, true) => '▓',
            (Shade::Mid, true) => '▒',
            (Shade::Low, true) => '░',
            (Shade::Failed, true) => '×',
            (Shade::Full, false) => '#',
            (Shade::High, false) => '+',
            (Shade::Mid, false) => '-',
            (Shade::Low, false) => '.',
            (Shade::Failed, false) => 'x',
            (Shade::None, _) => ' ',
        }
    }

    /// The fill of an HTML heatmap cell.
    fn color(self) -> &'static str {
        match self {
            Shade::Full => "#16a34a",
            Shade::High => "#facc15",
            Shade::Mid => "#f97316",
            Shade::Low => "#dc2626",
            Shade::Failed => "#0f172a",
            Shade::None => "#e2e8f0",
        }
    }

    fn paint(self, s: &str, style: Style) -> String {
        match self {
            Shade::Full => style.good(s),
            Shade::High | Shade::Mid => style.severity(Severity::Warning, s),
            Shade::Low | Shade::Failed => style.severity(Severity::Error, s),
            Shade::None => s.to_string(),
        }
    }
}

/// An enum's name as its JSON spells it (`pairwise`, `tcp`).
fn lower(x: impl std::fmt::Debug) -> String {
    format!("{x:?}").to_lowercase()
}

fn gbps(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), fmt_sig)
}

/// Each cell's shade, `[tx][rx]`.
fn shades(r: &MeshReport) -> Vec<Vec<Shade>> {
    let n = r.size as usize;
    let mut out = vec![vec![Shade::None; n]; n];
    for l in &r.links {
        if let Some(cell) = out
            .get_mut(l.tx as usize)
            .and_then(|row| row.get_mut(l.rx as usize))
        {
            let failed = matches!(l.status, LinkStatus::Unreachable | LinkStatus::CutShort);
            *cell = Shade::of(l.gbps.or(l.retest_gbps), failed, r.reference_gbps);
        }
    }
    out
}

fn node_status(s: NodeStatus, style: Style) -> String {
    match s {
        NodeStatus::Ok => style.good(s.as_str()),
        NodeStatus::Unreachable => style.severity(Severity::Error, s.as_str()),
        NodeStatus::Unconfirmed => style.severity(Severity::Info, s.as_str()),
        NodeStatus::TxDegraded | NodeStatus::RxDegraded | NodeStatus::Both => {
            style.severity(Severity::Warning, s.as_str())
        }
    }
}

/// The verdict line: healthy or not, with what was left undecided and whether the run ended.
fn verdict_text(r: &MeshReport) -> (bool, String) {
    let bad_nodes = r.nodes.iter().filter(|n| n.status.is_bad()).count();
    let bad_links = r.links.iter().filter(|l| l.status.is_bad()).count();
    let unconfirmed = r
        .links
        .iter()
        .filter(|l| l.status == LinkStatus::Unconfirmed)
        .count();
    let mut text = if r.healthy {
        "HEALTHY: every node and link within the fleet's rate".to_string()
    } else if bad_nodes + bad_links == 0 {
        "UNHEALTHY: nothing judged bad in what was measured, but the run did not complete"
            .to_string()
    } else {
        format!("UNHEALTHY: {bad_nodes} node(s) and {bad_links} link(s) bad")
    };
    if unconfirmed > 0 {
        let _ = write!(
            text,
            " ({unconfirmed} link(s) slow in their round left unconfirmed: see below)"
        );
    }
    (r.healthy, text)
}

/// The terminal report: the verdict line, the nodes, the heatmap (up to
/// [`HEATMAP_MAX_NODES`]), the worst links with their explanations, the fleet findings.
/// `unicode` false draws the heatmap in plain ASCII.
pub fn render_mesh(r: &MeshReport, style: Style, unicode: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "linerate mesh: {} ranks, {} schedule over {}, {} links measured, reference {} Gb/s",
        r.size,
        lower(r.schedule),
        lower(r.transport),
        r.links.len(),
        gbps(r.reference_gbps)
    );
    if let Some(rv) = &r.rendezvous {
        let _ = writeln!(o, "  {}", rv.line());
    }
    if let Some(ids) = identity_line(r) {
        let _ = writeln!(o, "  {ids}");
    }
    let (healthy, text) = verdict_text(r);
    let verdict = if healthy {
        style.good(&text)
    } else {
        style.severity(Severity::Error, &text)
    };
    let _ = writeln!(o, "\n  VERDICT {verdict}");
    if let Some(why) = &r.interrupted {
        let _ = writeln!(
            o,
            "  {}",
            style.severity(
                Severity::Error,
                &format!("INTERRUPTED: {why}; what follows is what was measured until then")
            )
        );
    }
    o.push('\n');
    nodes_text(&mut o, r, style);
    if r.size <= HEATMAP_MAX_NODES && r.size >= 2 {
        heatmap_text(&mut o, r, style, unicode);
    }
    if r.size <= FIGURES_MAX_NODES && r.size >= 2 {
        figures_text(&mut o, r);
    }
    let worst = r.worst_links();
    if !worst.is_empty() {
        let _ = writeln!(o, "\nworst links (of {})", worst.len());
        for l in worst.iter().take(WORST_LINKS) {
            let _ = writeln!(
                o,
                "    {:<28} {:<11} {}",
                format!("{} → {}", r.host(l.tx), r.host(l.rx)),
                l.status.as_str(),
                l.explanation
            );
        }
    }
    let unconfirmed: Vec<&LinkVerdict> = r
        .links
        .iter()
        .filter(|l| l.status == LinkStatus::Unconfirmed)
        .collect();
    if !unconfirmed.is_empty() {
        let _ = writeln!(
            o,
            "\nunconfirmed (of {}): slow in their round, not decided alone; not faults",
            unconfirmed.len()
        );
        for l in unconfirmed.iter().take(WORST_LINKS) {
            let _ = writeln!(
                o,
                "    {:<28} {}",
                format!("{} → {}", r.host(l.tx), r.host(l.rx)),
                l.explanation
            );
        }
    }
    let contention = r
        .links
        .iter()
        .filter(|l| l.status == LinkStatus::Contention)
        .count();
    if contention > 0 {
        let _ = writeln!(
            o,
            "\n{contention} link(s) slow in their round but fine alone: contention in the fabric, not faults"
        );
    }
    if !r.fleet.is_empty() {
        let _ = writeln!(o, "\nfleet findings");
        for f in &r.fleet {
            let _ = writeln!(o, "    {:<26} {}", f.id.as_str(), f.message);
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// `rank numbers from open_mpi (7), flags (1)`: where the ranks' numbers came from, as each
/// rank said; `None` when no rank said.
fn identity_line(r: &MeshReport) -> Option<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for e in &r.ranks {
        let k = e.identity_source.map_or("not reported", |s| s.as_str());
        *counts.entry(k).or_default() += 1;
    }
    if counts.keys().all(|k| *k == "not reported") {
        return None;
    }
    let mut parts: Vec<(&str, usize)> = counts.into_iter().collect();
    parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = parts.iter().map(|(k, n)| format!("{k} ({n})")).collect();
    Some(format!("rank numbers from {}", parts.join(", ")))
}

fn nodes_text(o: &mut String, r: &MeshReport, style: Style) {
    let width = r
        .nodes
        .iter()
        .map(|n| n.label.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        o,
        "nodes (Gb/s: median of the node's links as sender and as receiver)"
    );
    let _ = writeln!(
        o,
        "    {:>5}  {:<width$}  {:>8}  {:>8}  verdict",
        "rank", "host", "tx", "rx"
    );
    for n in &r.nodes {
        let _ = write!(
            o,
            "    {:>5}  {:<width$}  {:>8}  {:>8}  {}",
            n.rank,
            n.label,
            gbps(n.tx_median_gbps),
            gbps(n.rx_median_gbps),
            node_status(n.status, style)
        );
        if n.explanation.is_empty() {
            o.push('\n');
        } else {
            // The explanation starts with the host and verdict already printed.
            let prefix = format!("{} {}: ", n.label, n.status.as_str());
            let why = n
                .explanation
                .strip_prefix(&prefix)
                .unwrap_or(&n.explanation);
            let _ = writeln!(o, ": {why}");
        }
    }
}

fn heatmap_text(o: &mut String, r: &MeshReport, style: Style, unicode: bool) {
    let cells = shades(r);
    let n = r.size as usize;
    let width = (0..r.size)
        .map(|i| r.host(i).chars().count())
        .max()
        .unwrap_or(4)
        .min(20);
    let _ = writeln!(
        o,
        "\nheatmap: sender rows × receiver columns, shade by fraction of the reference {} Gb/s",
        gbps(r.reference_gbps)
    );
    // Column numbers, tens over units.
    if n > 10 {
        let tens: String = (0..n)
            .map(|c| {
                if c % 10 == 0 {
                    char::from_digit((c / 10 % 10) as u32, 10).unwrap_or(' ')
                } else {
                    ' '
                }
            })
            .flat_map(|c| [c, ' '])
            .collect();
        let _ = writeln!(o, "    {:>width$}  {}", "", tens.trim_end());
    }
    let units: String = (0..n)
        .flat_map(|c| [char::from_digit((c % 10) as u32, 10).unwrap_or(' '), ' '])
        .collect();
    let _ = writeln!(o, "    {:>width$}  {}", "", units.trim_end());
    for (i, row) in cells.iter().enumerate() {
        let label: String = r.host(i as u32).chars().take(width).collect();
        let mut line = String::new();
        for s in row {
            let g = s.glyph(unicode);
            line.push_str(&s.paint(&format!("{g}{g}"), style));
        }
        let _ = writeln!(o, "    {label:>width$}  {line}");
    }
    let legend: Vec<String> = [
        (Shade::Full, format!("≥ {:.0}%", SLOW_FRACTION * 100.0)),
        (Shade::High, "60-80%".into()),
        (Shade::Mid, "40-60%".into()),
        (Shade::Low, "< 40%".into()),
        (Shade::Failed, "nothing measured".into()),
    ]
    .iter()
    .map(|(s, t)| format!("{} {t}", s.glyph(unicode)))
    .collect();
    let _ = writeln!(o, "    {:>width$}  {}", "", legend.join("   "));
}

fn figures_text(o: &mut String, r: &MeshReport) {
    let _ = writeln!(o, "\nmatrix, Gb/s (sender rows × receiver columns)");
    let _ = write!(o, "    {:>8}", "tx \\ rx");
    for c in 0..r.size {
        let _ = write!(o, " {c:>7}");
    }
    o.push('\n');
    for (i, row) in r.matrix.iter().enumerate() {
        let _ = write!(o, "    {i:>8}");
        for (j, cell) in row.iter().enumerate() {
            let text = if i == j {
                "·".to_string()
            } else {
                gbps(*cell)
            };
            let _ = write!(o, " {text:>7}");
        }
        o.push('\n');
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The matrix as CSV: a header of receiver hosts, one row per sender host, Gb/s figures
/// (empty where nothing was measured and on the diagonal).
pub fn mesh_csv(r: &MeshReport) -> String {
    let mut o = String::from("tx\\rx");
    for c in 0..r.size {
        o.push(',');
        o.push_str(&csv_field(&r.host(c)));
    }
    o.push('\n');
    for (i, row) in r.matrix.iter().enumerate() {
        o.push_str(&csv_field(&r.host(i as u32)));
        for cell in row {
            o.push(',');
            if let Some(g) = cell {
                o.push_str(&linerate_units::fmt_num(linerate_units::r3(*g)));
            }
        }
        o.push('\n');
    }
    o
}

/// The HTML report: one self-contained file like doctor's (inline CSS and SVG, no scripts).
pub fn mesh_html(r: &MeshReport) -> String {
    let mut o = String::new();
    let title = format!("{} ranks, {} schedule", r.size, lower(r.schedule));
    let (cls, mut verdict) = if r.healthy {
        (
            "ok",
            "Healthy: every node and link within the fleet's rate".to_string(),
        )
    } else {
        let bad_nodes: Vec<String> = r
            .nodes
            .iter()
            .filter(|n| n.status.is_bad())
            .map(|n| format!("{} {}", n.label, n.status.as_str()))
            .collect();
        let bad_links = r.links.iter().filter(|l| l.status.is_bad()).count();
        (
            "error",
            format!(
                "Unhealthy: {} bad link(s){}{}",
                bad_links,
                if bad_nodes.is_empty() { "" } else { "; " },
                bad_nodes.join(", ")
            ),
        )
    };
    if let Some(why) = &r.interrupted {
        let _ = write!(
            verdict,
            ". Interrupted: {why}; this report holds what was measured until then"
        );
    }
    let _ = write!(
        o,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>linerate mesh: {t}</title><style>
body{{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f8fafc;color:#0f172a}}
main{{max-width:1100px;margin:0 auto;padding:24px}} h1{{font-size:20px;margin:0 0 4px}} h2{{font-size:16px;margin:28px 0 8px}}
.verdict{{padding:16px 20px;border-radius:8px;font-size:18px;font-weight:600;background:#ecfdf5;border-left:6px solid #16a34a}}
.verdict.error{{background:#fef2f2;border-color:#dc2626}}
.chart{{background:#fff;border:1px solid #e2e8f0;border-radius:8px;max-width:100%;height:auto}} .lbl{{font-size:11px;fill:#334155}} .val{{font-size:11px;fill:#475569}}
table{{border-collapse:collapse;width:100%;background:#fff}} td,th{{border-bottom:1px solid #e2e8f0;padding:6px 8px;text-align:left;vertical-align:top;font-size:14px}}
.bad{{color:#dc2626;font-weight:600}} .warn{{color:#b45309;font-weight:600}} .good{{color:#166534}} .muted{{color:#64748b;font-size:13px}}
</style></head><body><main>
<h1>linerate mesh — {t}</h1><p class="muted">linerate {ver} · {tr} · {d} s per test · reference {rf} Gb/s (upper quartile of the links)</p>
<div class="verdict {cls}" id="verdict">{v}</div>"#,
        t = esc(&title),
        ver = esc(&r.tool.version),
        tr = lower(r.transport),
        d = fmt_sig(r.duration_s),
        rf = gbps(r.reference_gbps),
        v = esc(&verdict),
    );
    let _ = write!(
        o,
        "<h2>Matrix: sender rows × receiver columns</h2>{}",
        heatmap_svg(r)
    );
    let _ = write!(
        o,
        "<h2>Each node as sender and as receiver</h2>{}",
        bars_svg(r)
    );
    nodes_table(&mut o, r);
    worst_table(&mut o, r);
    fleet_table(&mut o, r);
    for n in &r.notes {
        let _ = write!(o, "<p class=\"muted\">{}</p>", esc(n));
    }
    o.push_str("</main></body></html>\n");
    o
}

fn heatmap_svg(r: &MeshReport) -> String {
    let n = r.size as usize;
    let cells = shades(r);
    let cell = if n <= 16 {
        28.0
    } else if n <= 64 {
        12.0
    } else {
        (900.0 / n as f64).max(1.0)
    };
    let labels = n <= 64;
    let left = if labels { 130.0 } else { 10.0 };
    let top = if labels { 40.0 } else { 10.0 };
    let size = cell * n as f64;
    let (w, h) = (left + size + 10.0, top + size + 10.0);
    let mut s = format!(
        r#"<svg class="chart" id="heatmap" role="img" aria-label="matrix heatmap" viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    let hosts: Vec<String> = (0..r.size).map(|i| r.host(i)).collect();
    if labels {
        for (i, host) in hosts.iter().enumerate() {
            let y = top + cell * i as f64 + cell / 2.0 + 4.0;
            let short: String = host.chars().take(18).collect();
            let _ = write!(
                s,
                r#"<text x="{}" y="{y:.1}" text-anchor="end" class="lbl">{}</text>"#,
                left - 6.0,
                esc(&short)
            );
            let x = left + cell * i as f64 + cell / 2.0;
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{}" text-anchor="middle" class="lbl">{i}</text>"#,
                top - 8.0
            );
        }
    }
    let verdicts: std::collections::BTreeMap<(u32, u32), &LinkVerdict> =
        r.links.iter().map(|l| ((l.tx, l.rx), l)).collect();
    // Above the labelled size, one green square stands for the healthy links and only the
    // others are drawn: a thousand nodes would otherwise be a million elements.
    let every_cell = labels;
    if !every_cell {
        let _ = write!(
            s,
            r#"<rect x="{left}" y="{top}" width="{size:.1}" height="{size:.1}" fill="{}"><title>every cell not drawn over: at least {:.0}% of the reference</title></rect>"#,
            Shade::Full.color(),
            SLOW_FRACTION * 100.0
        );
    }
    let mut drawn = 0usize;
    for (i, row) in cells.iter().enumerate() {
        for (j, shade) in row.iter().enumerate() {
            if i == j || (!every_cell && *shade == Shade::Full) {
                continue;
            }
            drawn += 1;
            if drawn > MAX_SVG_CELLS {
                break;
            }
            let tip = verdicts.get(&(i as u32, j as u32)).map_or_else(
                || "not measured".to_string(),
                |l| format!("{}: {}", l.status.as_str(), l.explanation),
            );
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{c:.1}" height="{c:.1}" fill="{}"><title>{} → {}: {}</title></rect>"#,
                left + cell * j as f64,
                top + cell * i as f64,
                shade.color(),
                esc(&hosts[i]),
                esc(&hosts[j]),
                esc(&tip),
                c = (cell - 1.0).max(0.5),
            );
        }
    }
    s.push_str("</svg>");
    if drawn > MAX_SVG_CELLS {
        let _ = write!(
            s,
            "<p class=\"muted\">{MAX_SVG_CELLS} cells drawn; the others are in the JSON document and the CSV matrix.</p>"
        );
    }
    let _ = write!(
        s,
        "<p class=\"muted\">Green: at least {:.0}% of the reference; yellow 60-80%; orange 40-60%; red below 40%; black: nothing measured. Hover a cell for its verdict.</p>",
        SLOW_FRACTION * 100.0
    );
    s
}

fn bars_svg(r: &MeshReport) -> String {
    let max = r
        .nodes
        .iter()
        .flat_map(|n| [n.tx_median_gbps, n.rx_median_gbps])
        .flatten()
        .chain(r.reference_gbps)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let (left, right, row) = (150.0, 80.0, 26.0);
    let w = 760.0;
    let h = row * r.nodes.len() as f64 + 30.0;
    let span = w - left - right;
    let mut s = format!(
        r#"<svg class="chart" id="node-bars" role="img" aria-label="per-node tx and rx" viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">"#
    );
    for (i, n) in r.nodes.iter().enumerate() {
        let y = 10.0 + row * i as f64;
        let short: String = n.label.chars().take(20).collect();
        let _ = write!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end" class="lbl">{}</text>"#,
            left - 8.0,
            y + 14.0,
            esc(&short)
        );
        for (k, (v, color, what)) in [
            (n.tx_median_gbps, "#2563eb", "tx"),
            (n.rx_median_gbps, "#0891b2", "rx"),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(v) = v else { continue };
            let by = y + 2.0 + 10.0 * k as f64;
            let bw = (span * v / max).max(1.0);
            let _ = write!(
                s,
                r#"<rect x="{left}" y="{by:.1}" width="{bw:.1}" height="9" fill="{color}"><title>{} {what}: {} Gb/s</title></rect><text x="{:.1}" y="{:.1}" class="val">{what} {}</text>"#,
                esc(&n.label),
                fmt_sig(v),
                left + bw + 4.0,
                by + 8.0,
                fmt_sig(v)
            );
        }
    }
    if let Some(rf) = r.reference_gbps {
        let x = left + span * rf / max;
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="4" x2="{x:.1}" y2="{:.1}" stroke="#475569" stroke-dasharray="4 3"><title>reference {} Gb/s</title></line>"##,
            h - 6.0,
            fmt_sig(rf)
        );
        let xs = left + span * rf * SLOW_FRACTION / max;
        let _ = write!(
            s,
            r##"<line x1="{xs:.1}" y1="4" x2="{xs:.1}" y2="{:.1}" stroke="#dc2626" stroke-dasharray="2 3"><title>slow below {} Gb/s</title></line>"##,
            h - 6.0,
            fmt_sig(rf * SLOW_FRACTION)
        );
    }
    s.push_str("</svg>");
    s.push_str("<p class=\"muted\">Median of each node's links as sender (tx, blue) and as receiver (rx, teal); the dashed grey line is the fleet's reference, the red one the slow threshold.</p>");
    s
}

fn status_class(bad: bool, ok: bool) -> &'static str {
    if ok {
        "good"
    } else if bad {
        "bad"
    } else {
        "warn"
    }
}

fn nodes_table(o: &mut String, r: &MeshReport) {
    o.push_str("<h2>Nodes</h2><table id=\"nodes\"><tr><th>rank</th><th>host</th><th>tx Gb/s</th><th>rx Gb/s</th><th>verdict</th><th>why</th></tr>");
    for n in &r.nodes {
        let cls = status_class(n.status.is_bad(), n.status == NodeStatus::Ok);
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{cls}\">{}</td><td>{}</td></tr>",
            n.rank,
            esc(&n.label),
            gbps(n.tx_median_gbps),
            gbps(n.rx_median_gbps),
            n.status.as_str(),
            esc(&n.explanation)
        );
    }
    o.push_str("</table>");
}

fn worst_table(o: &mut String, r: &MeshReport) {
    let worst = r.worst_links();
    let contention: Vec<&LinkVerdict> = r
        .links
        .iter()
        .filter(|l| matches!(l.status, LinkStatus::Unconfirmed | LinkStatus::Contention))
        .collect();
    if worst.is_empty() && contention.is_empty() {
        o.push_str(
            "<h2>Links</h2><p id=\"worst-links\">Every link measured within the fleet's rate.</p>",
        );
        return;
    }
    let _ = write!(o, "<h2>Worst links ({} bad)</h2><table id=\"worst-links\"><tr><th>link</th><th>Gb/s</th><th>alone</th><th>ceiling</th><th>verdict</th><th>explanation</th></tr>", worst.len());
    for l in worst
        .iter()
        .take(WORST_LINKS)
        .chain(contention.iter().take(WORST_LINKS))
    {
        let _ = write!(
            o,
            "<tr><td>{} → {}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&r.host(l.tx)),
            esc(&r.host(l.rx)),
            gbps(l.gbps),
            gbps(l.retest_gbps),
            gbps(l.ceiling_gbps),
            status_class(l.status.is_bad(), false),
            l.status.as_str(),
            esc(&l.explanation)
        );
    }
    o.push_str("</table>");
}

fn fleet_table(o: &mut String, r: &MeshReport) {
    if r.fleet.is_empty() {
        o.push_str("<h2>Fleet</h2><p id=\"fleet\">The nodes' inventories agree, and probe found nothing on any node.</p>");
        return;
    }
    o.push_str("<h2>Fleet findings</h2><table id=\"fleet\"><tr><th>finding</th><th>nodes</th><th>what</th></tr>");
    for f in &r.fleet {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(f.id.as_str()),
            f.ranks.len(),
            esc(&f.message)
        );
    }
    o.push_str("</table>");
}
