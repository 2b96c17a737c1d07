//! `linerate disk`'s terminal text, and the one-line summary of a disk doctor prints.

use std::fmt::Write as _;
use std::path::Path;

use linerate_results::disk::{DiskReport, DiskTestResult};
use linerate_stats::LatencyUs;
use linerate_units::fmt_bytes;

use crate::Style;

/// What the first line of `linerate disk` says about the run.
#[derive(Debug, Clone, Copy)]
pub struct DiskHeading<'a> {
    pub path: &'a Path,
    pub filesystem: &'a str,
    pub file_bytes: u64,
    pub direct: bool,
    /// `io_uring` or `sync`.
    pub engine: &'a str,
    pub hipri: bool,
    pub sqpoll: bool,
    pub queue_depth: u32,
    pub jobs: u32,
    pub seconds_per_test: f64,
    /// Buffers in all (queue depth × block × jobs).
    pub buffer_bytes: u64,
}

/// `linerate disk PATH: ext4, test file 4 GiB, O_DIRECT, io_uring, QD 32, 5 s per test, …`.
pub fn heading(h: &DiskHeading<'_>) -> String {
    format!(
        "linerate disk {}: {}, test file {}, {}, {}{}{}, QD {}{}, {} s per test, {} of buffers\n",
        h.path.display(),
        h.filesystem,
        fmt_bytes(h.file_bytes),
        if h.direct { "O_DIRECT" } else { "buffered" },
        h.engine,
        if h.hipri { " polled (hipri)" } else { "" },
        if h.sqpoll { " with SQPOLL" } else { "" },
        h.queue_depth,
        if h.jobs > 1 {
            format!(" × {} jobs", h.jobs)
        } else {
            String::new()
        },
        h.seconds_per_test,
        fmt_bytes(h.buffer_bytes),
    )
}

/// `850 ns`, `105 µs`, `6.21 ms`, `1.20 s`: three significant digits.
pub fn fmt_us(us: f64) -> String {
    let (v, unit) = if us < 1.0 {
        (us * 1000.0, "ns")
    } else if us < 1000.0 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// `1,234,567`.
pub fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line per test, then its jobs, the job counts it tried, and why it stopped.
pub fn test_line(r: &DiskTestResult, style: Style) -> String {
    let (p50, p99) = r
        .latency_us
        .as_ref()
        .map_or(("-".into(), "-".into()), |l: &LatencyUs| {
            (fmt_us(l.p50), fmt_us(l.p99))
        });
    let mut line = format!(
        "  {:<10} {:>7}  {}  {:>9} Gb/s  {:>11} IOPS   p50 {:>8}   p99 {:>8}   {:<8} {}",
        r.kind.short(),
        fmt_bytes(r.block_bytes),
        style.bold(&format!("{:>7.2} GB/s", r.gb_per_s)),
        format!("{:.2}", r.gbps),
        thousands(r.iops),
        p50,
        p99,
        if r.direct { "direct" } else { "buffered" },
        r.engine.as_str(),
    );
    if let Some(cpu) = r.cpu_us_per_io {
        let _ = write!(
            line,
            "   CPU {:.0}% ({} per I/O)",
            r.cpu_percent,
            fmt_us(cpu)
        );
    }
    if r.jobs > 1 {
        for j in &r.per_job {
            let _ = write!(
                line,
                "\n    job {:<3} {:>7.2} GB/s  {:>11} IOPS   p50 {:>8}   p99 {:>8}",
                j.job,
                j.gb_per_s,
                thousands(j.iops),
                j.latency_us.map_or_else(|| "-".into(), |l| fmt_us(l.p50)),
                j.latency_us.map_or_else(|| "-".into(), |l| fmt_us(l.p99)),
            );
        }
    }
    for step in &r.job_scaling {
        let _ = write!(
            line,
            "\n    tried {} job{}: {} IOPS, {:.2} GB/s",
            step.jobs,
            if step.jobs == 1 { "" } else { "s" },
            thousands(step.iops),
            step.gb_per_s
        );
    }
    if let Some(e) = &r.error {
        let _ = write!(line, "\n    {} {e}", style.bold("stopped:"));
    }
    line.push('\n');
    line
}

/// A disk in one line, as doctor's progress says it: `seq_read 1.69 GB/s (2 jobs), … (ext4)`.
pub fn summary(r: &DiskReport) -> String {
    let parts: Vec<String> = r
        .tests
        .iter()
        .map(|t| {
            let jobs = if t.jobs > 1 {
                format!(" ({} jobs)", t.jobs)
            } else {
                String::new()
            };
            if t.kind.is_seq() {
                format!("{} {:.2} GB/s{jobs}", t.kind.short(), t.gb_per_s)
            } else {
                format!("{} {:.0} IOPS{jobs}", t.kind.short(), t.iops)
            }
        })
        .collect();
    format!("{} ({})", parts.join(", "), r.filesystem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_us(0.85), "850 ns");
        assert_eq!(fmt_us(105.2), "105 µs");
        assert_eq!(fmt_us(6210.0), "6.21 ms");
        assert_eq!(fmt_us(1_200_000.0), "1.20 s");
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(0.0), "0");
    }

    #[test]
    fn the_heading_names_the_setup() {
        let h = heading(&DiskHeading {
            path: Path::new("/data"),
            filesystem: "ext4",
            file_bytes: 4 << 30,
            direct: true,
            engine: "io_uring",
            hipri: false,
            sqpoll: true,
            queue_depth: 32,
            jobs: 2,
            seconds_per_test: 2.5,
            buffer_bytes: 64 << 20,
        });
        assert_eq!(
            h,
            "linerate disk /data: ext4, test file 4 GiB, O_DIRECT, io_uring with SQPOLL, QD 32 × 2 jobs, 2.5 s per test, 64 MiB of buffers\n"
        );
    }
}
