//! mesh's HTML report: one self-contained file like doctor's (inline CSS and SVG, no scripts):
//! the heatmap and per-node bars as inline SVG, the nodes, the worst links with their
//! explanations, the fleet findings.

use std::fmt::Write as _;

use linerate_mesh::judge::SLOW_FRACTION;
use linerate_mesh::{LinkStatus, LinkVerdict, MeshReport, NodeStatus};
use linerate_units::fmt_sig;

use super::{css, esc, page_start, svg_open};
use crate::mesh::{gbps, lower, shades, Shade, WORST_LINKS};

/// The most heatmap cells the HTML report draws one by one (the rest are in the JSON and CSV).
const MAX_SVG_CELLS: usize = 20_000;

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
    page_start(
        &mut o,
        &format!("linerate mesh: {}", esc(&title)),
        &[
            css::BODY,
            "main{max-width:1100px;margin:0 auto;padding:24px} h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px}",
            css::VERDICT,
            ".verdict.error{background:#fef2f2;border-color:#dc2626}",
            ".chart{background:#fff;border:1px solid #e2e8f0;border-radius:8px;max-width:100%;height:auto} .lbl{font-size:11px;fill:#334155} .val{font-size:11px;fill:#475569}",
            css::TABLE,
            ".bad{color:#dc2626;font-weight:600} .warn{color:#b45309;font-weight:600} .good{color:#166534} .muted{color:#64748b;font-size:13px}",
        ],
    );
    let _ = write!(
        o,
        r#"<h1>linerate mesh — {t}</h1><p class="muted">linerate {ver} · {tr} · {d} s per test · reference {rf} Gb/s (upper quartile of the links)</p>
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
    let mut s = svg_open("heatmap", "matrix heatmap", w, h);
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
    let mut s = svg_open("node-bars", "per-node tx and rx", w, h);
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
