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
            // No more of the warm-up received than received at all.
            if let Some(w) = &mut u.warmup {
                w.packets = w.packets.min(u.packets);
            }
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
    if let Some(h) = &mut r.host_load {
        h.seconds = fix(h.seconds);
        let pct = |x: Option<f64>| x.map(|x| fix(x).min(100.0));
        h.busiest_core_percent = pct(h.busiest_core_percent);
        h.busiest_core_others_percent = pct(h.busiest_core_others_percent);
        // A host has at most `cores` cores' worth of anything.
        let cores = f64::from(h.cores.max(1));
        let c = |x: Option<f64>| x.map(|x| fix(x).min(cores));
        h.own_cores = c(h.own_cores);
        h.other_cores = c(h.other_cores);
        h.steal_cores = c(h.steal_cores);
    }
    // Names are the kernel's: an interface at most 15 bytes (IFNAMSIZ), a kind as short, a
    // handle `ffff:ffff`; anything longer is not one.
    let cut = |s: &mut String, n: usize| {
        if s.len() > n {
            *s = s.chars().take(n).collect();
        }
    };
    if let Some(l) = &mut r.link {
        cut(&mut l.interface, 15);
        l.seconds = fix(l.seconds);
    }
    if let Some(q) = &mut r.qdiscs {
        q.truncate(linerate_inventory::qdisc::MAX_QDISCS_REPORTED);
        for d in q.iter_mut() {
            cut(&mut d.interface, 15);
            cut(&mut d.kind, 16);
            cut(&mut d.handle, 10);
            cut(&mut d.parent, 10);
            d.tests.clear();
        }
    }
    if let Some(st) = &mut r.stalls {
        st.spans.truncate(linerate_proto::MAX_STALL_SPANS);
        st.spans
            .retain(|(a, b)| a.is_finite() && b.is_finite() && *a >= 0.0 && b >= a);
        st.seconds = fix(st.seconds);
        st.longest_s = fix(st.longest_s).min(st.seconds);
    }
    r
}
