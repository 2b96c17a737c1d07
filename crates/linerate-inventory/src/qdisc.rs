//! Traffic shapers on an interface, and what its qdiscs count, read over rtnetlink (no `tc`
//! binary, no root).
//!
//! A dump of qdiscs (RTM_GETQDISC) and classes (RTM_GETTCLASS) for one
//! interface; the rate limits of tbf, htb, fq (maxrate), cake and netem (`rate`) are decoded.
//! Each qdisc's statistics (TCA_STATS2: packets, drops, overlimits, requeues; TCA_STATS from
//! kernels before it) are read before and after a test by [`QdiscWatch`], which also reads the
//! ifb devices the interface's ingress redirects to: a full queue, netem's losses and a
//! policer's drops all count as drops of the qdisc that made them.
//! The parsers are separate from the socket so they are tested on captured bytes; the socket,
//! the messages and the attributes are `crate::netlink`'s.

use std::io;

use linerate_facts::{QdiscDelta, QdiscSide};
use serde::Serialize;
use socket2::Socket;

use crate::netlink::{self, attr, attrs, route_socket, u32_at, u64_at, walk};

const RTM_GETQDISC: u16 = 38;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETTCLASS: u16 = 42;
const RTM_NEWTCLASS: u16 = 40;
const RTM_GETTFILTER: u16 = 46;
const RTM_NEWTFILTER: u16 = 44;
/// `TC_H_MAKE(TC_H_INGRESS, TC_H_MIN_INGRESS)`: the parent of an interface's ingress filters,
/// and of its `ingress` and `clsact` qdiscs (`TC_H_INGRESS`).
const TC_H_INGRESS_PARENT: u32 = 0xFFFF_FFF1;
/// `TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)`: the parent of clsact's ingress filters.
const TC_H_CLSACT_INGRESS: u32 = 0xFFFF_FFF2;
/// `TC_H_ROOT`: the parent of an interface's root qdisc.
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
/// `struct tc_stats` (kernels before TCA_STATS2, which still send it beside).
const TCA_STATS: u16 = 3;
/// Nested: TCA_STATS_BASIC (1: bytes u64, packets u32), TCA_STATS_QUEUE (3: qlen, backlog,
/// drops, requeues, overlimits, u32 each), TCA_STATS_PKT64 (8: packets u64).
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TCA_STATS_PKT64: u16 = 8;

/// A rate limit found on an interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shaper {
    /// `tbf`, `htb`, `fq`, `cake`, `netem` (its `rate`).
    pub kind: String,
    /// `qdisc` or `class`.
    pub object: &'static str,
    /// `1:` / `1:10`.
    pub handle: String,
    /// Limit in bit/s.
    pub rate_bps: u64,
}

fn handle_str(h: u32) -> String {
    let (maj, min) = (h >> 16, h & 0xffff);
    if min == 0 {
        format!("{maj:x}:")
    } else {
        format!("{maj:x}:{min:x}")
    }
}

/// A qdisc's or class's kind (TCA_KIND: `tbf`, `netem`) from its message's attributes `a`.
fn kind_of(a: &[(u16, &[u8])]) -> Option<String> {
    attr(a, TCA_KIND).map(|p| {
        String::from_utf8_lossy(p)
            .trim_end_matches('\0')
            .to_string()
    })
}

/// Rate in bit/s from a qdisc's or class's options.
fn rate_of(kind: &str, opts: &[u8]) -> Option<u64> {
    let a = attrs(opts);
    let find = |t: u16| attr(&a, t);
    let bytes_per_s = match kind {
        // TCA_TBF_PARMS (struct tc_tbf_qopt: rate.rate at offset 8), TCA_TBF_RATE64 = 4
        "tbf" => find(4)
            .and_then(|p| u64_at(p, 0))
            .or_else(|| find(1).and_then(|p| u32_at(p, 8)).map(u64::from)),
        // TCA_HTB_PARMS (struct tc_htb_opt: rate.rate at 8), TCA_HTB_RATE64 = 6; the ceil is the hard limit:
        // TCA_HTB_CEIL64 = 7, ceil.rate at 12 + 8 = 20.
        "htb" => find(7)
            .and_then(|p| u64_at(p, 0))
            .or_else(|| find(1).and_then(|p| u32_at(p, 20)).map(u64::from))
            .or_else(|| find(6).and_then(|p| u64_at(p, 0)))
            .or_else(|| find(1).and_then(|p| u32_at(p, 8)).map(u64::from)),
        // TCA_FQ_FLOW_MAX_RATE = 7 (u32 bytes/s; ~0 = unlimited)
        "fq" => find(7)
            .and_then(|p| u32_at(p, 0))
            .filter(|r| *r != u32::MAX)
            .map(u64::from),
        // TCA_CAKE_BASE_RATE64 = 2
        "cake" => find(2).and_then(|p| u64_at(p, 0)),
        // netem's options are a struct tc_netem_qopt (6 u32, 24 bytes) and then its attributes:
        // TCA_NETEM_RATE = 6 (struct tc_netem_rate, rate u32 first; ~0 when RATE64 carries it),
        // TCA_NETEM_RATE64 = 8.
        "netem" => {
            let a = attrs(opts.get(24..)?);
            let find = |t: u16| attr(&a, t);
            find(8).and_then(|p| u64_at(p, 0)).or_else(|| {
                find(6)
                    .and_then(|p| u32_at(p, 0))
                    .filter(|r| *r != u32::MAX)
                    .map(u64::from)
            })
        }
        _ => None,
    }?;
    (bytes_per_s > 0).then_some(bytes_per_s * 8)
}

/// Decode a netlink dump reply (one or more messages) into shapers of `ifindex`.
/// Returns `Ok(true)` in the second field when the dump is complete.
fn parse_dump(b: &[u8], ifindex: i32, out: &mut Vec<Shaper>) -> Result<bool, String> {
    walk(b, |ty, body| {
        if matches!(ty, RTM_NEWQDISC | RTM_NEWTCLASS) && body.len() >= 20 {
            let idx = u32_at(body, 4).map_or(0, u32::cast_signed);
            let handle = u32_at(body, 8).unwrap_or(0);
            if idx == ifindex {
                let a = attrs(&body[20..]);
                if let (Some(kind), Some(opts)) = (kind_of(&a), attr(&a, TCA_OPTIONS)) {
                    if let Some(rate_bps) = rate_of(&kind, opts) {
                        out.push(Shaper {
                            kind,
                            object: if ty == RTM_NEWQDISC { "qdisc" } else { "class" },
                            handle: handle_str(handle),
                            rate_bps,
                        });
                    }
                }
            }
        }
    })
}

/// Send one dump request (`struct tcmsg` for `ifindex` and `parent`) and feed each reply to
/// `parse` until it reports the dump complete.
fn request(
    sock: &Socket,
    ty: u16,
    (ifindex, parent): (i32, u32),
    seq: u32,
    parse: impl FnMut(&[u8]) -> Result<bool, String>,
) -> io::Result<()> {
    // struct tcmsg: family, pad, pad, ifindex, handle, parent, info
    let mut tcmsg = Vec::with_capacity(20);
    tcmsg.extend_from_slice(&[0u8; 4]);
    tcmsg.extend_from_slice(&ifindex.to_ne_bytes());
    tcmsg.extend_from_slice(&0u32.to_ne_bytes());
    tcmsg.extend_from_slice(&parent.to_ne_bytes());
    tcmsg.extend_from_slice(&0u32.to_ne_bytes());
    // Bounded: a dump of one interface is small; give up after 256 reads.
    netlink::dump(sock, ty, &tcmsg, seq, 256, parse)
}

fn dump(sock: &Socket, ty: u16, ifindex: i32, seq: u32, out: &mut Vec<Shaper>) -> io::Result<()> {
    request(sock, ty, (ifindex, 0), seq, |b| parse_dump(b, ifindex, out))
}

/// The devices a `mirred` action sends packets to (egress redirect or mirror, so they pass
/// the target's root qdisc), found anywhere in nested attributes `b` (at most 8 deep).
fn mirred_targets(b: &[u8], depth: u32, out: &mut Vec<i32>) {
    // TCA_ACT_KIND = 1, TCA_ACT_OPTIONS = 2; TCA_MIRRED_PARMS = 2 (struct tc_mirred: tc_gen
    // of 20 bytes, eaction i32, ifindex u32); TCA_EGRESS_REDIR = 1, TCA_EGRESS_MIRROR = 2.
    if depth > 8 {
        return;
    }
    let a = attrs(b);
    if attr(&a, 1).is_some_and(|k| k.strip_suffix(b"\0").unwrap_or(k) == b"mirred") {
        if let Some(p) = attr(&a, 2).and_then(|o| attr(&attrs(o), 2)) {
            let eaction = u32_at(p, 20).map(u32::cast_signed);
            let target = u32_at(p, 24).map(u32::cast_signed);
            if let (Some(1 | 2), Some(t)) = (eaction, target) {
                if t > 0 && !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        return;
    }
    for (_, p) in a {
        if p.len() >= 4 {
            mirred_targets(p, depth + 1, out);
        }
    }
}

/// Decode a filter dump reply: the devices `ifindex`'s filters redirect or mirror packets to.
/// Returns `Ok(true)` when the dump is complete.
fn parse_redirects(b: &[u8], ifindex: i32, out: &mut Vec<i32>) -> Result<bool, String> {
    walk(b, |ty, body| {
        if ty == RTM_NEWTFILTER
            && body.len() >= 20
            && u32_at(body, 4).map(u32::cast_signed) == Some(ifindex)
        {
            if let Some(opts) = attr(&attrs(&body[20..]), TCA_OPTIONS) {
                mirred_targets(opts, 0, out);
            }
        }
    })
}

/// The interfaces that `ifindex`'s ingress filters (of an `ingress` or a `clsact` qdisc)
/// redirect packets to (an `ifb` device that shapes what the interface receives), by index.
/// The kernel refuses a dump for a hook the interface does not have: only an error on both is
/// one.
fn ingress_redirects(ifindex: i32) -> io::Result<Vec<i32>> {
    let sock = route_socket()?;
    let mut out = Vec::new();
    let mut first_err = None;
    let mut any = false;
    for (seq, parent) in [(3, TC_H_INGRESS_PARENT), (4, TC_H_CLSACT_INGRESS)] {
        match request(&sock, RTM_GETTFILTER, (ifindex, parent), seq, |b| {
            parse_redirects(b, ifindex, &mut out)
        }) {
            Ok(()) => any = true,
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) if !any => Err(e),
        _ => Ok(out),
    }
}

/// Every rate limit on interface `ifindex` (qdiscs and classes).
fn shapers(ifindex: i32) -> io::Result<Vec<Shaper>> {
    let sock = route_socket()?;
    let mut out = Vec::new();
    dump(&sock, RTM_GETQDISC, ifindex, 1, &mut out)?;
    dump(&sock, RTM_GETTCLASS, ifindex, 2, &mut out)?;
    Ok(out)
}

/// The index of interface `name`, from sysfs under `root`.
fn ifindex_of(root: &std::path::Path, name: &str) -> io::Result<i32> {
    std::fs::read_to_string(root.join("sys/class/net").join(name).join("ifindex"))?
        .trim()
        .parse()
        .map_err(|_| io::Error::other(format!("/sys/class/net/{name}/ifindex is not a number")))
}

/// Shapers of the interface `name` (its index from sysfs under `root`).
pub fn shapers_of(root: &std::path::Path, name: &str) -> io::Result<Vec<Shaper>> {
    shapers(ifindex_of(root, name)?)
}

/// The interfaces (by name, from sysfs under `root`) that the ingress filters of `name`
/// redirect its received packets to: where a shaper of what `name` receives sits.
pub fn ingress_redirects_of(root: &std::path::Path, name: &str) -> io::Result<Vec<String>> {
    redirect_names(root, ifindex_of(root, name)?)
}

/// [`ingress_redirects_of`] the interface of index `ifindex`.
fn redirect_names(root: &std::path::Path, ifindex: i32) -> io::Result<Vec<String>> {
    let targets = ingress_redirects(ifindex)?;
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let class = root.join("sys/class/net");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&class)?.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if ifindex_of(root, &n).is_ok_and(|i| targets.contains(&i)) {
            out.push(n);
        }
    }
    out.sort();
    Ok(out)
}

/// One qdisc's counters at one instant, as the kernel dumps them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct QdiscStat {
    pub ifindex: i32,
    pub kind: String,
    pub handle: u32,
    pub parent: u32,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// netem configured to reorder ([`netem_reorders`]).
    pub reorders: bool,
}

/// A netem qdisc's options make it reorder: `reorder P%` (TCA_NETEM_REORDER = 3, struct
/// tc_netem_reorder: probability u32 first), a `gap` (struct tc_netem_qopt's fourth u32), or
/// delay jitter without a rate (`delay 20ms 5ms`: the qopt's sixth u32, or TCA_NETEM_JITTER64
/// = 11 in ns): netem queues each packet by its own time to send, so one given less delay
/// leaves before one sent earlier; with a `rate` each waits for the one before it.
fn netem_reorders(opts: &[u8]) -> bool {
    let gap = u32_at(opts, 12).is_some_and(|g| g > 0);
    let a = opts.get(24..).map(attrs).unwrap_or_default();
    let probability = a
        .iter()
        .any(|(t, p)| *t == 3 && u32_at(p, 0).is_some_and(|x| x > 0));
    let jitter = u32_at(opts, 20).is_some_and(|j| j > 0)
        || a.iter()
            .any(|(t, p)| *t == 11 && u64_at(p, 0).is_some_and(|x| x > 0 && x < 1 << 63));
    gap || probability || (jitter && rate_of("netem", opts).is_none())
}

impl QdiscStat {
    /// `root`, `ingress`, or the class it hangs from (`1:10`).
    fn parent_str(&self) -> String {
        match self.parent {
            TC_H_ROOT => "root".into(),
            TC_H_INGRESS_PARENT => "ingress".into(),
            p => handle_str(p),
        }
    }

    /// Which traffic of its interface it sees; an ifb's qdiscs see what the redirecting
    /// interface receives.
    fn side(&self, ifb: bool) -> QdiscSide {
        match (ifb, self.kind.as_str(), self.parent) {
            (true, ..) => QdiscSide::Ingress,
            (false, "clsact", _) => QdiscSide::Both,
            (false, _, TC_H_INGRESS_PARENT) => QdiscSide::Ingress,
            _ => QdiscSide::Egress,
        }
    }
}

/// The counters of a qdisc message's attributes: TCA_STATS2 where the kernel sends it, else
/// TCA_STATS. (packets, drops, overlimits, requeues).
fn stats_of(a: &[(u16, &[u8])]) -> Option<(u64, u64, u64, u64)> {
    if let Some(s2) = attr(a, TCA_STATS2) {
        let n = attrs(s2);
        let get = |t: u16| attr(&n, t);
        let basic = get(TCA_STATS_BASIC);
        let queue = get(TCA_STATS_QUEUE)?;
        let packets = get(TCA_STATS_PKT64)
            .and_then(|p| u64_at(p, 0))
            .or_else(|| basic.and_then(|b| u32_at(b, 8)).map(u64::from))
            .unwrap_or(0);
        return Some((
            packets,
            u64::from(u32_at(queue, 8)?),
            u64::from(u32_at(queue, 16)?),
            u64::from(u32_at(queue, 12)?),
        ));
    }
    // struct tc_stats: bytes u64, packets u32, drops u32, overlimits u32, bps, pps, qlen, backlog.
    let s = attr(a, TCA_STATS)?;
    Some((
        u64::from(u32_at(s, 8)?),
        u64::from(u32_at(s, 12)?),
        u64::from(u32_at(s, 16)?),
        0,
    ))
}

/// Decode a qdisc dump reply: every qdisc of the interfaces `ifindexes` with its counters.
/// Returns `Ok(true)` when the dump is complete.
fn parse_stats(b: &[u8], ifindexes: &[i32], out: &mut Vec<QdiscStat>) -> Result<bool, String> {
    walk(b, |ty, body| {
        if ty != RTM_NEWQDISC || body.len() < 20 {
            return;
        }
        let ifindex = u32_at(body, 4).map_or(0, u32::cast_signed);
        if !ifindexes.contains(&ifindex) || out.len() >= MAX_QDISCS {
            return;
        }
        let a = attrs(&body[20..]);
        let kind = kind_of(&a).map(|k| k.chars().take(MAX_KIND_CHARS).collect::<String>());
        if let (Some(kind), Some((packets, drops, overlimits, requeues))) = (kind, stats_of(&a)) {
            let reorders = kind == "netem" && attr(&a, TCA_OPTIONS).is_some_and(netem_reorders);
            out.push(QdiscStat {
                reorders,
                ifindex,
                kind,
                handle: u32_at(body, 8).unwrap_or(0),
                parent: u32_at(body, 12).unwrap_or(0),
                packets,
                drops,
                overlimits,
                requeues,
            });
        }
    })
}

/// Most qdiscs read per snapshot (a multi-queue NIC has one per queue under its `mq`), and
/// most reported per test.
const MAX_QDISCS: usize = 1024;
pub const MAX_QDISCS_REPORTED: usize = 32;
/// Longest qdisc kind kept (the kernel's are at most 15 bytes: `IFNAMSIZ`).
const MAX_KIND_CHARS: usize = 16;

/// The qdiscs of the interfaces `ifindexes`, with their counters.
fn qdisc_stats(ifindexes: &[i32]) -> io::Result<Vec<QdiscStat>> {
    let sock = route_socket()?;
    let mut out = Vec::new();
    request(&sock, RTM_GETQDISC, (0, 0), 5, |b| {
        parse_stats(b, ifindexes, &mut out)
    })?;
    Ok(out)
}

/// The qdiscs of one interface (and of the ifb devices its ingress redirects to) at the start
/// of a test; [`QdiscWatch::finish`] reads them again and says what each counted meanwhile.
#[derive(Debug, Clone)]
pub struct QdiscWatch {
    /// (ifindex, name, an ifb its ingress redirects to).
    interfaces: Vec<(i32, String, bool)>,
    before: Vec<QdiscStat>,
}

impl QdiscWatch {
    /// The qdiscs of interface `name` now (its index and the ifb devices from sysfs under
    /// `/`). None when rtnetlink or the interface cannot be read.
    pub fn start(name: &str) -> Option<Self> {
        let root = std::path::Path::new("/");
        let ifindex = ifindex_of(root, name).ok()?;
        let mut interfaces = vec![(ifindex, name.to_string(), false)];
        for ifb in redirect_names(root, ifindex).unwrap_or_default() {
            if let Ok(i) = ifindex_of(root, &ifb) {
                interfaces.push((i, ifb, true));
            }
        }
        let idx: Vec<i32> = interfaces.iter().map(|i| i.0).collect();
        let before = qdisc_stats(&idx).ok()?;
        Some(Self { interfaces, before })
    }

    /// What each qdisc counted since [`QdiscWatch::start`]; None when they cannot be read now.
    pub fn finish(&self) -> Option<Vec<QdiscDelta>> {
        let idx: Vec<i32> = self.interfaces.iter().map(|i| i.0).collect();
        let after = qdisc_stats(&idx).ok()?;
        Some(deltas(&self.interfaces, &self.before, &after))
    }
}

/// What each qdisc of `after` counted since `before`: those whose drops, overlimits or
/// requeues rose (at most [`MAX_QDISCS_REPORTED`], the most drops first). A qdisc that was not
/// there before counts from zero; a counter that went back (the qdisc was replaced under the
/// same handle) counts from where it restarted, and says so (`reset`). An aggregate `mq` or
/// `mqprio`, which only sums its children's counters, is left out: the child that dropped is
/// named.
fn deltas(
    interfaces: &[(i32, String, bool)],
    before: &[QdiscStat],
    after: &[QdiscStat],
) -> Vec<QdiscDelta> {
    let mut out: Vec<QdiscDelta> = Vec::new();
    for a in after {
        if matches!(a.kind.as_str(), "mq" | "mqprio") {
            continue;
        }
        let Some((_, name, ifb)) = interfaces.iter().find(|i| i.0 == a.ifindex) else {
            continue;
        };
        let b = before.iter().find(|b| {
            b.ifindex == a.ifindex
                && b.handle == a.handle
                && b.parent == a.parent
                && b.kind == a.kind
        });
        let mut reset = false;
        let mut rise = |after: u64, before: Option<u64>| match before {
            Some(b) if after >= b => after - b,
            Some(_) => {
                reset = true;
                after
            }
            None => after,
        };
        let d = QdiscDelta {
            interface: name.clone(),
            kind: a.kind.clone(),
            handle: handle_str(a.handle),
            parent: a.parent_str(),
            side: a.side(*ifb),
            packets: rise(a.packets, b.map(|b| b.packets)),
            drops: rise(a.drops, b.map(|b| b.drops)),
            overlimits: rise(a.overlimits, b.map(|b| b.overlimits)),
            requeues: rise(a.requeues, b.map(|b| b.requeues)),
            reset,
            reorders: a.reorders,
            tests: Vec::new(),
        };
        // A netem that reorders and passed packets is kept though it counted nothing: what its
        // jitter reorders, no counter counts.
        if d.drops > 0 || d.overlimits > 0 || d.requeues > 0 || (d.reorders && d.packets > 0) {
            out.push(d);
        }
    }
    out.sort_by_key(|x| std::cmp::Reverse(x.drops));
    out.truncate(MAX_QDISCS_REPORTED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::NLMSG_DONE;

    fn rtattr(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn msg(ty: u16, ifindex: i32, handle: u32, attrs: &[u8]) -> Vec<u8> {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&ifindex.to_ne_bytes());
        body.extend_from_slice(&handle.to_ne_bytes());
        body.extend_from_slice(&[0u8; 8]);
        body.extend_from_slice(attrs);
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&[0u8; 10]);
        v.extend_from_slice(&body);
        v
    }

    #[test]
    fn tbf_rate_from_parms_and_rate64() {
        // struct tc_tbf_qopt: rate (12 B, rate u32 at offset 8), peakrate (12 B), limit, buffer, mtu.
        let mut parms = vec![0u8; 36];
        parms[8..12].copy_from_slice(&125_000_000u32.to_ne_bytes()); // 1 Gbit/s
        let opts = rtattr(1, &parms);
        let mut a = rtattr(TCA_KIND, b"tbf\0");
        a.extend(rtattr(TCA_OPTIONS, &opts));
        let mut dump = msg(RTM_NEWQDISC, 7, 0x8001_0000, &a);
        // Another interface's qdisc is ignored; a 10 Gbit tbf needs RATE64 only above 34 Gbit.
        dump.extend(msg(RTM_NEWQDISC, 3, 0x1_0000, &a));
        dump.extend(msg(NLMSG_DONE, 0, 0, &[]));
        let mut out = Vec::new();
        assert_eq!(parse_dump(&dump, 7, &mut out), Ok(true));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, "tbf");
        assert_eq!(out[0].rate_bps, 1_000_000_000);
        assert_eq!(out[0].handle, "8001:");

        let mut opts = rtattr(1, &parms);
        opts.extend(rtattr(4, &(12_500_000_000u64).to_ne_bytes())); // 100 Gbit/s
        let mut a = rtattr(TCA_KIND, b"tbf\0");
        a.extend(rtattr(TCA_OPTIONS, &opts));
        let mut out = Vec::new();
        parse_dump(&msg(RTM_NEWQDISC, 7, 0x1_0000, &a), 7, &mut out).unwrap();
        assert_eq!(out[0].rate_bps, 100_000_000_000);
    }

    #[test]
    fn netem_reorder_is_read_from_its_options() {
        // `netem delay 10ms reorder 25% 50%` on Linux 6.1: gap 1 in the qopt and
        // TCA_NETEM_REORDER (probability 25% of u32::MAX, correlation).
        let mut qopt = vec![0u8; 24];
        qopt[12..16].copy_from_slice(&1u32.to_ne_bytes());
        let mut reorder = vec![0u8; 8];
        reorder[0..4].copy_from_slice(&(u32::MAX / 4).to_ne_bytes());
        let mut opts = qopt.clone();
        opts.extend(rtattr(3, &reorder));
        assert!(netem_reorders(&opts));
        // Delay only (`netem delay 1ms`): no gap, no reorder attribute.
        assert!(!netem_reorders(&[0u8; 24]));
        // A reorder attribute with probability 0 and no gap is no reordering; a gap alone is.
        let mut opts = vec![0u8; 24];
        opts.extend(rtattr(3, &[0u8; 8]));
        assert!(!netem_reorders(&opts));
        assert!(netem_reorders(&qopt));
        // Truncated options are read as none.
        assert!(!netem_reorders(&[1u8; 5]));
        // `netem delay 20ms 5ms`: jitter in the qopt (and TCA_NETEM_JITTER64 in ns) reorders;
        // with a rate (TCA_NETEM_RATE) each packet waits for the one before it, and it does not.
        let mut qopt = vec![0u8; 24];
        qopt[20..24].copy_from_slice(&5_000u32.to_ne_bytes());
        let mut opts = qopt.clone();
        opts.extend(rtattr(11, &5_000_000u64.to_ne_bytes()));
        assert!(netem_reorders(&opts));
        let mut only64 = vec![0u8; 24];
        only64.extend(rtattr(11, &5_000_000u64.to_ne_bytes()));
        assert!(netem_reorders(&only64));
        let mut rate = vec![0u8; 16];
        rate[0..4].copy_from_slice(&2_500_000u32.to_ne_bytes());
        opts.extend(rtattr(6, &rate));
        assert!(!netem_reorders(&opts));
    }

    #[test]
    fn netem_rate_after_its_qopt() {
        // `tc qdisc add dev enp1s0 root netem rate 20mbit` on Linux 6.1: struct tc_netem_qopt
        // (latency, limit 1000, loss, gap, duplicate, jitter), then TCA_NETEM_RATE (rate in
        // bytes/s, packet_overhead, cell_size, cell_overhead).
        let mut qopt = vec![0u8; 24];
        qopt[4..8].copy_from_slice(&1000u32.to_ne_bytes());
        let mut rate = vec![0u8; 16];
        rate[0..4].copy_from_slice(&2_500_000u32.to_ne_bytes());
        let mut opts = qopt.clone();
        opts.extend(rtattr(6, &rate));
        let mut a = rtattr(TCA_KIND, b"netem\0");
        a.extend(rtattr(TCA_OPTIONS, &opts));
        let mut out = Vec::new();
        parse_dump(&msg(RTM_NEWQDISC, 2, 0x8005_0000, &a), 2, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].kind.as_str(), out[0].rate_bps),
            ("netem", 20_000_000)
        );
        // Above 4 GB/s the rate is in TCA_NETEM_RATE64 and the u32 reads ~0.
        rate[0..4].copy_from_slice(&u32::MAX.to_ne_bytes());
        let mut opts = qopt.clone();
        opts.extend(rtattr(6, &rate));
        opts.extend(rtattr(8, &(12_500_000_000u64).to_ne_bytes()));
        let mut a = rtattr(TCA_KIND, b"netem\0");
        a.extend(rtattr(TCA_OPTIONS, &opts));
        let mut out = Vec::new();
        parse_dump(&msg(RTM_NEWQDISC, 2, 0x8005_0000, &a), 2, &mut out).unwrap();
        assert_eq!(out[0].rate_bps, 100_000_000_000);
        // Delay or loss only: no rate, no shaper; a truncated qopt is no shaper either.
        for opts in [qopt.clone(), qopt[..10].to_vec()] {
            let mut a = rtattr(TCA_KIND, b"netem\0");
            a.extend(rtattr(TCA_OPTIONS, &opts));
            let mut out = Vec::new();
            parse_dump(&msg(RTM_NEWQDISC, 2, 0x8005_0000, &a), 2, &mut out).unwrap();
            assert!(out.is_empty(), "{out:?}");
        }
    }

    #[test]
    fn unshaped_and_garbage() {
        let mut a = rtattr(TCA_KIND, b"fq_codel\0");
        a.extend(rtattr(TCA_OPTIONS, &rtattr(1, &[0u8; 4])));
        let mut out = Vec::new();
        parse_dump(&msg(RTM_NEWQDISC, 1, 0, &a), 1, &mut out).unwrap();
        assert!(out.is_empty());
        // Truncated and nonsense input: an error or nothing, never a panic.
        for junk in [
            &[0xffu8; 3][..],
            &[0xff; 40],
            &[16, 0, 0, 0, 36, 0, 0, 0],
            &[200, 0, 0, 0, 36, 0],
        ] {
            let _ = parse_dump(junk, 1, &mut out);
        }
    }

    #[test]
    fn mirred_redirect_target_in_a_u32_filter() {
        // u32 options > TCA_U32_ACT (7) > action 1 > kind "mirred", options > TCA_MIRRED_PARMS.
        let mut parms = vec![0u8; 28];
        parms[20..24].copy_from_slice(&1i32.to_ne_bytes()); // TCA_EGRESS_REDIR
        parms[24..28].copy_from_slice(&9u32.to_ne_bytes());
        let mut act = rtattr(1, b"mirred\0");
        act.extend(rtattr(2, &rtattr(2, &parms)));
        let u32_opts = rtattr(7, &rtattr(1, &act));
        let mut a = rtattr(TCA_KIND, b"u32\0");
        a.extend(rtattr(TCA_OPTIONS, &u32_opts));
        let mut dump = msg(RTM_NEWTFILTER, 4, 0, &a);
        dump.extend(msg(RTM_NEWTFILTER, 5, 0, &a)); // another interface's filter
        dump.extend(msg(NLMSG_DONE, 0, 0, &[]));
        let mut out = Vec::new();
        assert_eq!(parse_redirects(&dump, 4, &mut out), Ok(true));
        assert_eq!(out, [9]);
        // An ingress redirect (3) does not pass the target's root qdisc: not a shaper's place.
        parms[20..24].copy_from_slice(&3i32.to_ne_bytes());
        let mut act = rtattr(1, b"mirred\0");
        act.extend(rtattr(2, &rtattr(2, &parms)));
        let mut a = rtattr(TCA_KIND, b"u32\0");
        a.extend(rtattr(TCA_OPTIONS, &rtattr(7, &rtattr(1, &act))));
        let mut out = Vec::new();
        parse_redirects(&msg(RTM_NEWTFILTER, 4, 0, &a), 4, &mut out).unwrap();
        assert!(out.is_empty());
        for junk in [&[0xffu8; 40][..], &[16, 0, 0, 0, 44, 0, 0, 0]] {
            let _ = parse_redirects(junk, 4, &mut out);
        }
    }

    /// A qdisc message with `kind`, parent and statistics attributes `stats`.
    fn qdisc_msg(ifindex: i32, handle: u32, parent: u32, kind: &str, stats: &[u8]) -> Vec<u8> {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&ifindex.to_ne_bytes());
        body.extend_from_slice(&handle.to_ne_bytes());
        body.extend_from_slice(&parent.to_ne_bytes());
        body.extend_from_slice(&[0u8; 4]);
        body.extend(rtattr(TCA_KIND, format!("{kind}\0").as_bytes()));
        body.extend_from_slice(stats);
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&RTM_NEWQDISC.to_ne_bytes());
        v.extend_from_slice(&[0u8; 10]);
        v.extend_from_slice(&body);
        v
    }

    /// TCA_STATS2 with basic (packets as u32) and queue counters, and optionally PKT64.
    fn stats2(
        packets: u32,
        drops: u32,
        requeues: u32,
        overlimits: u32,
        pkt64: Option<u64>,
    ) -> Vec<u8> {
        let mut basic = vec![0u8; 16];
        basic[8..12].copy_from_slice(&packets.to_ne_bytes());
        let mut queue = vec![0u8; 20];
        queue[8..12].copy_from_slice(&drops.to_ne_bytes());
        queue[12..16].copy_from_slice(&requeues.to_ne_bytes());
        queue[16..20].copy_from_slice(&overlimits.to_ne_bytes());
        let mut nested = rtattr(TCA_STATS_BASIC, &basic);
        nested.extend(rtattr(TCA_STATS_QUEUE, &queue));
        if let Some(p) = pkt64 {
            nested.extend(rtattr(TCA_STATS_PKT64, &p.to_ne_bytes()));
        }
        rtattr(TCA_STATS2, &nested)
    }

    #[test]
    fn qdisc_counters_from_stats2_and_the_old_stats() {
        // `tc -s qdisc` of a netem that lost 755 packets, a tbf, an ingress qdisc, and another
        // interface's pfifo (left out).
        let mut dump = qdisc_msg(
            7,
            0x8001_0000,
            TC_H_ROOT,
            "netem",
            &stats2(40_000, 755, 3, 0, None),
        );
        dump.extend(qdisc_msg(
            7,
            0x1_0000,
            0x8001_0001,
            "tbf",
            &stats2(1, 2, 0, 9, Some(5_000_000_000)),
        ));
        dump.extend(qdisc_msg(
            7,
            0xFFFF_0000,
            TC_H_INGRESS_PARENT,
            "ingress",
            &stats2(10, 4, 0, 0, None),
        ));
        dump.extend(qdisc_msg(
            3,
            0x1_0000,
            TC_H_ROOT,
            "pfifo",
            &stats2(1, 1, 0, 0, None),
        ));
        // A kernel before TCA_STATS2: struct tc_stats only.
        let mut old = vec![0u8; 36];
        old[8..12].copy_from_slice(&500u32.to_ne_bytes());
        old[12..16].copy_from_slice(&6u32.to_ne_bytes());
        old[16..20].copy_from_slice(&8u32.to_ne_bytes());
        dump.extend(qdisc_msg(
            9,
            0x2_0000,
            TC_H_ROOT,
            "htb",
            &rtattr(TCA_STATS, &old),
        ));
        dump.extend(msg(NLMSG_DONE, 0, 0, &[]));
        let mut out = Vec::new();
        assert_eq!(parse_stats(&dump, &[7, 9], &mut out), Ok(true));
        let got: Vec<(&str, u64, u64, u64, u64)> = out
            .iter()
            .map(|q| {
                (
                    q.kind.as_str(),
                    q.packets,
                    q.drops,
                    q.overlimits,
                    q.requeues,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("netem", 40_000, 755, 0, 3),
                ("tbf", 5_000_000_000, 2, 9, 0),
                ("ingress", 10, 4, 0, 0),
                ("htb", 500, 6, 8, 0)
            ]
        );
        assert_eq!(out[1].parent_str(), "8001:1");
        assert_eq!(out[2].parent_str(), "ingress");
        assert_eq!(out[2].side(false), QdiscSide::Ingress);
        assert_eq!(out[0].side(false), QdiscSide::Egress);
        assert_eq!(out[0].side(true), QdiscSide::Ingress);
        // Truncated and nonsense input: an error or nothing, never a panic.
        for junk in [
            &[0xffu8; 40][..],
            &[16, 0, 0, 0, 36, 0, 0, 0],
            &dump[..dump.len() / 2],
        ] {
            let _ = parse_stats(junk, &[7], &mut out);
        }
    }

    fn stat(
        ifindex: i32,
        kind: &str,
        handle: u32,
        parent: u32,
        c: (u64, u64, u64, u64),
    ) -> QdiscStat {
        QdiscStat {
            ifindex,
            kind: kind.into(),
            handle,
            parent,
            packets: c.0,
            drops: c.1,
            overlimits: c.2,
            requeues: c.3,
            reorders: false,
        }
    }

    #[test]
    fn what_each_qdisc_counted_during_a_test() {
        let ifs = [
            (4, "veth0".to_string(), false),
            (9, "ifb0".to_string(), true),
        ];
        let before = [
            stat(4, "tbf", 0x8001_0000, TC_H_ROOT, (1000, 10, 50, 0)),
            stat(
                4,
                "ingress",
                0xFFFF_0000,
                TC_H_INGRESS_PARENT,
                (500, 0, 0, 0),
            ),
            stat(9, "pfifo", 0x1_0000, TC_H_ROOT, (300, 7, 0, 0)),
            stat(4, "mq", 0x2_0000, 0x8001_0001, (0, 0, 0, 0)),
        ];
        let after = [
            stat(4, "tbf", 0x8001_0000, TC_H_ROOT, (9000, 765, 80, 0)),
            // Nothing but packets moved: not reported.
            stat(
                4,
                "ingress",
                0xFFFF_0000,
                TC_H_INGRESS_PARENT,
                (900, 0, 0, 0),
            ),
            // Replaced under the same handle: counted from its restart, and said.
            stat(9, "pfifo", 0x1_0000, TC_H_ROOT, (40, 3, 0, 0)),
            // Only sums its children: never named.
            stat(4, "mq", 0x2_0000, 0x8001_0001, (0, 99, 0, 0)),
            // New since the start: counted from zero.
            stat(4, "fq_codel", 0x3_0000, 0x2_0001, (10, 0, 0, 2)),
        ];
        let d = deltas(&ifs, &before, &after);
        let got: Vec<String> = d
            .iter()
            .map(|q| {
                format!(
                    "{} {} {} {} drops {} overlimits {} requeues {} reset {}",
                    q.interface,
                    q.kind,
                    q.parent,
                    q.side.as_str(),
                    q.drops,
                    q.overlimits,
                    q.requeues,
                    q.reset
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "veth0 tbf root egress drops 755 overlimits 30 requeues 0 reset false",
                "ifb0 pfifo root ingress drops 3 overlimits 0 requeues 0 reset true",
                "veth0 fq_codel 2:1 egress drops 0 overlimits 0 requeues 2 reset false",
            ]
        );
        assert_eq!(d[0].handle, "8001:");
        assert_eq!(d[0].packets, 8000);
        assert_eq!(d[0].words("local"), "the tbf qdisc 8001 on the local veth0");
    }

    /// The real socket: loopback normally has no shaper, and the call works without root.
    /// A real tbf is read through this dump by the namespace tests (`netns_doctor`'s
    /// shaper scenarios install `tbf rate 2gbit` and check doctor's `shapers[].rate_bps`).
    #[test]
    fn live_dump() {
        let out = shapers(1).expect("rtnetlink dump works");
        assert!(out.iter().all(|s| s.rate_bps > 0));
        // Loopback has no ingress qdisc: the kernel answers the filter dump with an error or
        // nothing, never a redirect.
        assert!(ingress_redirects(1).map_or(true, |r| r.is_empty()));
        // Loopback's qdiscs are read (`noqueue` counts nothing), and nothing moves on it here.
        let w = QdiscWatch::start("lo").expect("rtnetlink dump of qdiscs");
        assert!(w.finish().is_some());
        assert!(qdisc_stats(&[1]).is_ok());
        assert!(QdiscWatch::start("no-such-if0").is_none());
    }
}
