//! doctor's terminal report: the verdict first, then the evidence.

use std::fmt::Write as _;

use linerate_facts::{EndFacts, MemOut, PortKind, Row, Severity};
use linerate_results::{DoctorReport, JudgedFrom};

use crate::bench::num;
use crate::text::render_finding;
use crate::Style;

/// `memory copy, 1 thread` over buffers larger than the caches, `cache copy, 1 thread` over
/// cache-sized ones.
fn memory_label(m: &MemOut) -> String {
    format!(
        "{} copy, {} thread{}",
        if m.buffer_bytes >= 64 << 20 {
            "memory"
        } else {
            "cache"
        },
        m.threads,
        if m.threads == 1 { "" } else { "s" }
    )
}

fn copy_layer_label(l: &Row) -> &'static str {
    match l.layer.as_str() {
        "disk_read" => "source read",
        "network" => "network",
        "disk_write" if l.host == "remote" => "server's durable write",
        "disk_write" => "durable write",
        _ => "other",
    }
}

/// One line per disk: its reads, its writes, and the durable write a copy made on it.
fn render_disks(out: &mut String, r: &DoctorReport, style: Style) {
    let mut disks: Vec<(&str, &str)> = Vec::new();
    for row in r
        .pyramid
        .rows
        .iter()
        .filter(|x| x.layer.starts_with("disk_"))
    {
        if !disks.contains(&(row.host.as_str(), row.subject.as_str())) {
            disks.push((row.host.as_str(), row.subject.as_str()));
        }
    }
    for (host, subject) in disks {
        let mut parts = Vec::new();
        let mut slowest = false;
        for row in r
            .pyramid
            .rows
            .iter()
            .filter(|x| x.host == host && x.subject == subject && x.layer.starts_with("disk_"))
        {
            let what = match (row.layer.as_str(), row.durable) {
                ("disk_read", _) => "read",
                (_, true) => "durable write",
                _ => "write",
            };
            parts.push(format!(
                "{what} {} Gb/s ({} GB/s)",
                num(row.gbps),
                num(row.gbps / 8.0)
            ));
            slowest |= r
                .pyramid
                .copy
                .as_ref()
                .is_some_and(|c| c.limited_by.same_place(row));
        }
        let name = if host == "remote" {
            format!("server disk, {subject}")
        } else {
            format!("disk {subject}")
        };
        let line = format!("    {name:<26} {}", parts.join(" · "));
        if slowest {
            let _ = writeln!(out, "{}  ← slowest for a copy", style.bold(&line));
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
}

fn test_line(t: &linerate_results::TestResult) -> (String, String) {
    let mut parts = t.summary_parts().into_iter();
    let first = parts.next().unwrap_or_default();
    let rest: Vec<String> = parts.collect();
    let mut r = format!("{first:>13}");
    if !rest.is_empty() {
        r.push_str("   ");
        r.push_str(&rest.join("   "));
    }
    (t.params.describe(), r)
}

/// The whole report for a terminal.
pub fn render_doctor(r: &DoctorReport, style: Style) -> String {
    let mut out = String::new();
    title_and_verdict(&mut out, r, style);
    tests_section(&mut out, r, style);
    pyramid_section(&mut out, r, style);
    findings_section(&mut out, r, style);
    path_section(&mut out, r, style);
    footer(&mut out, r, style);
    out
}

/// The title (self-check or the server, and the local interface), then the verdict coloured by
/// the most severe finding.
fn title_and_verdict(out: &mut String, r: &DoctorReport, style: Style) {
    let title = if r.mode == "self_check" {
        format!(
            "linerate doctor: self-check of this machine{}",
            r.path
                .local_interface
                .as_deref()
                .map_or(String::new(), |i| format!(" ({i})"))
        )
    } else {
        format!(
            "linerate doctor → {}{}",
            r.server,
            r.path
                .local_interface
                .as_deref()
                .map_or(String::new(), |i| format!(" via {i}"))
        )
    };
    let _ = writeln!(out, "{}\n", style.bold(&title));
    let worst = r.findings.iter().map(|f| f.severity).max();
    let verdict_style = |s: &str| match worst {
        Some(Severity::Error) => style.severity(Severity::Error, s),
        Some(Severity::Warning) => style.severity(Severity::Warning, s),
        _ => style.good(s),
    };
    let _ = writeln!(
        out,
        "  {} {}\n",
        verdict_style("VERDICT"),
        style.bold(&r.verdict.summary)
    );
}

/// One line per test run, then the tests that did not complete.
fn tests_section(out: &mut String, r: &DoctorReport, style: Style) {
    let _ = writeln!(out, "{}", style.bold("tests"));
    for t in &r.tests {
        let (a, b) = test_line(t);
        let _ = writeln!(out, "    {a:<34} {b}");
    }
    for e in &r.errors {
        let _ = writeln!(
            out,
            "    {} {e}",
            style.severity(Severity::Warning, "not completed:")
        );
    }
    out.push('\n');
}

/// The layers from memory up to the file copy, all in Gb/s so they compare.
fn pyramid_section(out: &mut String, r: &DoctorReport, style: Style) {
    let _ = writeln!(
        out,
        "{}",
        style.bold("the pyramid (Gb/s, so the layers compare)")
    );
    memory_rows(out, r);
    ceiling_rows(out, r);
    // The best TCP result of all, under the one name every output gives it; the verdict's own
    // figure (one stream on a virtual path, the slower direction) is named by its test.
    if let Some(net) = r.pyramid.rows.iter().find(|x| x.layer == "network") {
        let _ = writeln!(
            out,
            "    {}   {:>9} Gb/s{}",
            crate::BEST_TCP,
            num(net.gbps),
            net.test
                .as_deref()
                .map_or(String::new(), |t| format!("   ({t})"))
        );
    }
    render_disks(out, r, style);
    for line in crate::text::nfs_lines(&r.inventory.local.nfs) {
        let _ = writeln!(out, "    NFS {line}");
    }
    file_copy_row(out, r);
    if let Some(c) = &r.pyramid.copy {
        let _ = writeln!(out, "    {}", c.sentence);
    }
    for n in &r.pyramid.notes {
        let _ = writeln!(out, "    {}", style.dim(n));
    }
    out.push('\n');
}

/// One row per memory-copy measurement.
fn memory_rows(out: &mut String, r: &DoctorReport) {
    for m in &r.memory {
        let _ = writeln!(
            out,
            "    {:<26} {:>9} Gb/s   ({} GB/s{})",
            memory_label(m),
            num(m.gbps),
            num(m.gb_per_s),
            if m.buffer_bytes < 64 << 20 {
                format!(
                    "; {} KiB buffers, the size of a stream's writes",
                    m.buffer_bytes >> 10
                )
            } else {
                String::new()
            }
        );
    }
}

/// The host TCP stack's upper bound and the port ceilings of both ends, where known.
fn ceiling_rows(out: &mut String, r: &DoctorReport) {
    if let Some(s) = r.path.stack_ceiling_gbps {
        let basis = r
            .path
            .stack_basis
            .as_deref()
            .unwrap_or("the memory copies of each byte");
        let beaten = r.stack_bound_beaten();
        let _ = writeln!(
            out,
            "    host TCP stack, 1 stream   ≤{:>8} Gb/s   ({basis}; {})",
            num(s),
            if beaten {
                "a measured stream beat it, so it is no ceiling here: see ceiling.exceeded"
            } else {
                "an upper bound: protocol work costs more"
            }
        );
    }
    if let Some(c) = r.path.local.ceiling.as_ref().filter(|c| c.gbps > 0.0) {
        let _ = writeln!(
            out,
            "    local port ceiling         {:>9} Gb/s   ({})",
            num(c.gbps),
            c.limited_by.as_str()
        );
    }
    if let Some(c) = r
        .path
        .remote
        .as_ref()
        .and_then(|f| f.ceiling.as_ref())
        .filter(|c| c.gbps > 0.0)
    {
        let _ = writeln!(
            out,
            "    remote port ceiling        {:>9} Gb/s   ({})",
            num(c.gbps),
            c.limited_by.as_str()
        );
    }
}

/// The measured file copy and, when known, the layers it went through.
fn file_copy_row(out: &mut String, r: &DoctorReport) {
    if let Some(copy) = r.pyramid.rows.iter().find(|x| x.layer == "file_copy") {
        let layers = r.pyramid.copy.as_ref().map_or(String::new(), |c| {
            c.layers
                .iter()
                .map(|l| format!("{} {} Gb/s", copy_layer_label(l), num(l.gbps)))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let _ = writeln!(
            out,
            "    {:<26} {:>9} Gb/s   ({} GB/s; {}){}",
            "file copy, measured",
            num(copy.gbps),
            num(copy.gbps / 8.0),
            copy.subject,
            if layers.is_empty() {
                String::new()
            } else {
                format!("\n        its layers: {layers}")
            }
        );
    }
}

/// The findings, most severe first.
fn findings_section(out: &mut String, r: &DoctorReport, style: Style) {
    let _ = writeln!(out, "{}", style.bold("findings (most severe first)"));
    if r.findings.is_empty() {
        let _ = writeln!(out, "    none");
    }
    for f in &r.findings {
        render_finding(out, f, style, "    ");
    }
    out.push('\n');
}

/// Both ends of the path, then the counters that rose during the tests.
fn path_section(out: &mut String, r: &DoctorReport, style: Style) {
    let _ = writeln!(out, "{}", style.bold("path"));
    path_end(out, "local", &r.path.local, style);
    if let Some(rm) = &r.path.remote {
        path_end(out, "remote", rm, style);
    }
    far_end_lines(out, r, style);
    for c in &r.path.counter_deltas {
        let _ = writeln!(
            out,
            "    counter {} rose by {} during the tests",
            c.name, c.delta
        );
    }
    for (end, q) in r.path.qdiscs.ends() {
        let _ = writeln!(
            out,
            "    qdisc {} {} on {end} {} ({}) dropped {} of {} packets, overlimits {}, requeues {} during the tests{}",
            q.kind,
            q.handle,
            q.interface,
            q.side.as_str(),
            q.drops,
            q.passed(),
            q.overlimits,
            q.requeues,
            if q.reset { " (at least: replaced meanwhile)" } else { "" }
        );
    }
}

/// What the far end is when it is not `linerate serve`, or did not describe its host; and the
/// steps its protocol could not express, each with the reason.
fn far_end_lines(out: &mut String, r: &DoctorReport, style: Style) {
    let f = &r.far_end;
    if f.judged_from == JudgedFrom::ThisEnd || f.protocol != "linerate" {
        let what = match f.protocol {
            "iperf3" => "a stock iperf3 server".to_string(),
            p => format!("{p}'s server"),
        };
        let version = f
            .version
            .as_deref()
            .map_or(String::new(), |v| format!(" ({v})"));
        let judged = if f.hardware_known {
            String::new()
        } else {
            ": its hardware is unknown; judged from this end only".into()
        };
        let _ = writeln!(out, "    {:<7} {what}{version}{judged}", "remote");
    }
    if let Some(c) = &f.copied {
        let _ = writeln!(
            out,
            "    {:<7} this linerate ({:.1} MiB, sha256 {}…) to {}:{} in {:.2} s ({}; {} {}), removed there once its server started",
            "copied",
            c.bytes as f64 / f64::from(1u32 << 20),
            c.sha256.get(..12).unwrap_or(&c.sha256),
            c.host,
            c.directory,
            c.seconds,
            c.reason,
            c.machine,
            c.libc
        );
    }
    if !f.on_this_host.is_empty() {
        let procs: Vec<String> = f
            .on_this_host
            .iter()
            .map(|p| format!("{} (pid {})", p.program, p.pid))
            .collect();
        let _ = writeln!(
            out,
            "    {} {}: its CPU is counted as the far end's, not as other processes competing",
            style.dim("far end on this host:"),
            procs.join(", ")
        );
    }
    for s in &f.skipped {
        let _ = writeln!(
            out,
            "    {} {}: {}",
            style.dim("skipped:"),
            s.step,
            style.dim(&s.reason)
        );
    }
}

/// One end of the path: interface, port kind, MTU, IPoIB mode, shapers, and its ceiling.
fn path_end(out: &mut String, label: &str, f: &EndFacts, style: Style) {
    let _ = writeln!(
        out,
        "    {label:<7} {} ({})   MTU {}{}{}",
        f.netdev.as_deref().unwrap_or("?"),
        f.port_kind.map_or("?", PortKind::as_str),
        f.mtu.map_or("?".into(), |m| m.to_string()),
        f.ipoib_mode
            .map_or(String::new(), |m| format!("   IPoIB {}", m.as_str())),
        shapers_words(f)
    );
    if let Some(c) = &f.ceiling {
        let _ = writeln!(out, "            {}", style.dim(&c.summary));
    }
}

/// "   shaper tbf 5 Gbit/s, ..." or nothing when no shaper limits this end.
fn shapers_words(f: &EndFacts) -> String {
    if f.shapers.is_empty() {
        return String::new();
    }
    format!(
        "   shaper {}",
        f.shapers
            .iter()
            .map(|s| format!(
                "{} {} Gbit/s",
                s.kind,
                num(linerate_units::bps_to_gbps(s.rate_bps as f64))
            ))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// What was checked, and how long doctor took.
fn footer(out: &mut String, r: &DoctorReport, style: Style) {
    let _ = writeln!(
        out,
        "\n{} {}",
        style.dim("checked:"),
        style.dim(&r.checked.join("; "))
    );
    let _ = writeln!(
        out,
        "{}",
        style.dim(&format!("doctor took {} s", num(r.seconds)))
    );
}
