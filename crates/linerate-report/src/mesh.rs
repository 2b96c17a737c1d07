//! `linerate mesh`'s renderers: terminal text with a heatmap and the CSV matrix (its HTML is
//! `html::mesh`'s), and the heatmap's shades both draw. Pure: a [`MeshReport`] in, text out.

use std::fmt::Write as _;

use linerate_facts::Severity;
use linerate_mesh::judge::SLOW_FRACTION;
use linerate_mesh::{LinkStatus, LinkVerdict, MeshReport, NodeStatus};
use linerate_units::fmt_sig;

use crate::style::Style;

/// The largest fleet drawn as a heatmap in the terminal (one column per node).
pub const HEATMAP_MAX_NODES: u32 = 64;

/// The largest fleet whose matrix is also printed in Gb/s figures.
const FIGURES_MAX_NODES: u32 = 12;

/// How many bad links the text and HTML reports list.
pub(crate) const WORST_LINKS: usize = 12;

/// One heatmap cell's shade: how close a link came to the fleet's reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shade {
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
    pub(crate) fn of(gbps: Option<f64>, failed: bool, reference: Option<f64>) -> Self {
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
    pub(crate) fn color(self) -> &'static str {
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
pub(crate) fn lower(x: impl std::fmt::Debug) -> String {
    format!("{x:?}").to_lowercase()
}

pub(crate) fn gbps(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), fmt_sig)
}

/// Each cell's shade, `[tx][rx]`.
pub(crate) fn shades(r: &MeshReport) -> Vec<Vec<Shade>> {
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
