//! The HTML reports, one self-contained file each (inline CSS and SVG, no scripts, no network
//! fetches): doctor's (`doctor`: the ceiling waterfall, throughput over time, the latency
//! distribution, the findings, tests and pyramid), soak's (`soak`: each end's timeline with its
//! counter events, the verdicts and counters) and mesh's (`mesh`: the heatmap, the per-node
//! bars, the nodes, links and fleet). What they share is here: escaping, the page's head and the
//! rules of its style sheet they have in common, a chart's opening tag and its axis steps.

use std::fmt::Write as _;

pub mod doctor;
pub mod mesh;
pub mod soak;

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Rules of the style sheets, one line each: those every report has, then those two share.
pub(crate) mod css {
    pub const BODY: &str = r#"body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f8fafc;color:#0f172a}"#;
    /// The page's column, 980 pixels at most, and its headings.
    pub const MAIN: &str = "main{max-width:980px;margin:0 auto;padding:24px} h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px}";
    /// The verdict's banner, green.
    pub const VERDICT: &str = ".verdict{padding:16px 20px;border-radius:8px;font-size:18px;font-weight:600;background:#ecfdf5;border-left:6px solid #16a34a}";
    /// The banner of a warning and of an error.
    pub const VERDICT_LEVELS: &str = ".verdict.warning{background:#fffbeb;border-color:#d97706} .verdict.error{background:#fef2f2;border-color:#dc2626}";
    /// A chart the width of the page, its labels and values.
    pub const CHART: &str = ".chart{background:#fff;border:1px solid #e2e8f0;border-radius:8px;width:100%;height:auto} .lbl{font-size:12px;fill:#334155} .val{font-size:11px;fill:#475569}";
    pub const TABLE: &str = "table{border-collapse:collapse;width:100%;background:#fff} td,th{border-bottom:1px solid #e2e8f0;padding:6px 8px;text-align:left;vertical-align:top;font-size:14px}";
}

/// The document up to its `<main>`: the head with `title` (already escaped) and the style sheet
/// of `rules`, one line each.
pub(crate) fn page_start(o: &mut String, title: &str, rules: &[&str]) {
    let _ = write!(
        o,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title><style>
{}
</style></head><body><main>
"#,
        rules.join("\n")
    );
}

/// The opening tag of a chart `w` × `h` pixels: its `id` and its label for a screen reader.
pub(crate) fn svg_open(id: &str, label: &str, w: f64, h: f64) -> String {
    format!(
        r#"<svg class="chart" id="{id}" role="img" aria-label="{label}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">"#
    )
}

/// A "nice" step for about `n` ticks up to `max` (1, 2 or 5 × a power of ten).
pub(crate) fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
