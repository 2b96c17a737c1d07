//! What a peer reports is not trusted: its results are kept within what the test can produce
//! before anything adds them up.

use linerate_proto::SideResults;

/// Keep a peer's results within what this test can produce: stream ids below
/// `connections`, each once, finite non-negative times and CPU figures.
pub fn sanitize(mut r: SideResults, connections: usize) -> SideResults {
    let mut seen = vec![false; connections];
    r.streams.retain(|s| {
        let ok = (s.id as usize) < connections && !seen[s.id as usize];
        if ok {
            seen[s.id as usize] = true;
        }
        ok
    });
    let fix = |x: f64| if x.is_finite() && x >= 0.0 { x } else { 0.0 };
    for s in &mut r.streams {
        s.seconds = fix(s.seconds);
        s.cpu_s = fix(s.cpu_s);
        if let Some(u) = &mut s.udp {
            u.jitter_us = fix(u.jitter_us);
        }
        if let Some(f) = &mut s.file {
            f.disk_s = fix(f.disk_s);
            f.net_wait_s = fix(f.net_wait_s);
        }
    }
    r.fsync_s = r.fsync_s.map(fix);
    r.cpu.percent = fix(r.cpu.percent);
    r.intervals
        .retain(|i| i.bytes.len() == connections && i.start_s.is_finite() && i.end_s.is_finite());
    r
}
