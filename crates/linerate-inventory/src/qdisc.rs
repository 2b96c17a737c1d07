//! Traffic shapers on an interface, read over rtnetlink (no `tc` binary, no root).
//!
//! A dump of qdiscs (RTM_GETQDISC) and classes (RTM_GETTCLASS) for one
//! interface; the rate limits of tbf, htb, fq (maxrate) and cake are decoded.
//! The parser is separate from the socket so it is tested on captured bytes.

use std::io::{self, Read, Write};

use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};

const NETLINK_ROUTE: i32 = 0;
const RTM_GETQDISC: u16 = 38;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETTCLASS: u16 = 42;
const RTM_NEWTCLASS: u16 = 40;
const RTM_GETTFILTER: u16 = 46;
const RTM_NEWTFILTER: u16 = 44;
/// `TC_H_MAKE(TC_H_INGRESS, TC_H_MIN_INGRESS)`: the parent of an interface's ingress filters.
const TC_H_INGRESS_PARENT: u32 = 0xFFFF_FFF1;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;

/// A rate limit found on an interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shaper {
    /// `tbf`, `htb`, `fq`, `cake`.
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

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// Iterate rtattrs: (type, payload).
fn attrs(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let (Some(len), Some(ty)) = (u16_at(b, 0), u16_at(b, 2)) else {
            break;
        };
        let len = len as usize;
        if len < 4 || len > b.len() {
            break;
        }
        out.push((ty & 0x3fff, &b[4..len]));
        let next = (len + 3) & !3;
        if next >= b.len() {
            break;
        }
        b = &b[next..];
    }
    out
}

/// Rate in bit/s from a qdisc's or class's options.
fn rate_of(kind: &str, opts: &[u8]) -> Option<u64> {
    let a = attrs(opts);
    let find = |t: u16| a.iter().find(|(ty, _)| *ty == t).map(|(_, p)| *p);
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
        _ => None,
    }?;
    (bytes_per_s > 0).then_some(bytes_per_s * 8)
}

/// Decode a netlink dump reply (one or more messages) into shapers of `ifindex`.
/// Returns `Ok(true)` in the second field when the dump is complete.
pub fn parse_dump(b: &[u8], ifindex: i32, out: &mut Vec<Shaper>) -> Result<bool, String> {
    walk(b, |ty, body| {
        if matches!(ty, RTM_NEWQDISC | RTM_NEWTCLASS) && body.len() >= 20 {
            let idx = u32_at(body, 4).map_or(0, u32::cast_signed);
            let handle = u32_at(body, 8).unwrap_or(0);
            if idx == ifindex {
                let a = attrs(&body[20..]);
                let kind = a.iter().find(|(t, _)| *t == TCA_KIND).map(|(_, p)| {
                    String::from_utf8_lossy(p)
                        .trim_end_matches('\0')
                        .to_string()
                });
                let opts = a.iter().find(|(t, _)| *t == TCA_OPTIONS).map(|(_, p)| *p);
                if let (Some(kind), Some(opts)) = (kind, opts) {
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
    mut parse: impl FnMut(&[u8]) -> Result<bool, String>,
) -> io::Result<()> {
    let mut req = Vec::with_capacity(36);
    req.extend_from_slice(&36u32.to_ne_bytes());
    req.extend_from_slice(&ty.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    // struct tcmsg: family, pad, pad, ifindex, handle, parent, info
    req.extend_from_slice(&[0u8; 4]);
    req.extend_from_slice(&ifindex.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&parent.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    // An unbound netlink socket sends to the kernel (port id 0) and is bound on first use.
    (&*sock).write_all(&req)?;
    let mut buf = vec![0u8; 64 * 1024];
    // Bounded: a dump of one interface is small; give up after 256 reads.
    for _ in 0..256 {
        let n = (&*sock).read(&mut buf)?;
        if n == 0 || parse(&buf[..n]).map_err(io::Error::other)? {
            return Ok(());
        }
    }
    Ok(())
}

fn dump(sock: &Socket, ty: u16, ifindex: i32, seq: u32, out: &mut Vec<Shaper>) -> io::Result<()> {
    request(sock, ty, (ifindex, 0), seq, |b| parse_dump(b, ifindex, out))
}

fn route_socket() -> io::Result<Socket> {
    let sock = Socket::new(
        Domain::from(libc::AF_NETLINK),
        Type::RAW.cloexec(),
        Some(Protocol::from(NETLINK_ROUTE)),
    )?;
    sock.set_read_timeout(Some(std::time::Duration::from_secs(2)))?;
    Ok(sock)
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
    let kind = a.iter().find(|(t, _)| *t == 1).map(|(_, p)| *p);
    if kind.is_some_and(|k| k.strip_suffix(b"\0").unwrap_or(k) == b"mirred") {
        let parms = a
            .iter()
            .find(|(t, _)| *t == 2)
            .and_then(|(_, o)| attrs(o).into_iter().find(|(t, _)| *t == 2))
            .map(|(_, p)| p);
        if let Some(p) = parms {
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
pub fn parse_redirects(b: &[u8], ifindex: i32, out: &mut Vec<i32>) -> Result<bool, String> {
    walk(b, |ty, body| {
        if ty == RTM_NEWTFILTER
            && body.len() >= 20
            && u32_at(body, 4).map(u32::cast_signed) == Some(ifindex)
        {
            let a = attrs(&body[20..]);
            if let Some((_, opts)) = a.iter().find(|(t, _)| *t == TCA_OPTIONS) {
                mirred_targets(opts, 0, out);
            }
        }
    })
}

/// Walk the messages of a netlink dump reply, handing each one's type and body to `each`:
/// `Ok(true)` at NLMSG_DONE (the dump is complete), the kernel's error at NLMSG_ERROR.
fn walk(mut b: &[u8], mut each: impl FnMut(u16, &[u8])) -> Result<bool, String> {
    while b.len() >= 16 {
        let len = u32_at(b, 0).ok_or("short header")? as usize;
        let ty = u16_at(b, 4).ok_or("short header")?;
        if len < 16 || len > b.len() {
            return Err(format!("netlink message length {len} out of range"));
        }
        let body = &b[16..len];
        match ty {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let code = u32_at(body, 0).map_or(0, u32::cast_signed);
                if code != 0 {
                    return Err(io::Error::from_raw_os_error(-code).to_string());
                }
            }
            _ => each(ty, body),
        }
        let next = (len + 3) & !3;
        if next >= b.len() {
            break;
        }
        b = &b[next..];
    }
    Ok(false)
}

/// The interfaces that `ifindex`'s ingress filters redirect packets to (an `ifb` device that
/// shapes what the interface receives), by index.
pub fn ingress_redirects(ifindex: i32) -> io::Result<Vec<i32>> {
    let sock = route_socket()?;
    let mut out = Vec::new();
    request(
        &sock,
        RTM_GETTFILTER,
        (ifindex, TC_H_INGRESS_PARENT),
        3,
        |b| parse_redirects(b, ifindex, &mut out),
    )?;
    Ok(out)
}

/// Every rate limit on interface `ifindex` (qdiscs and classes).
pub fn shapers(ifindex: i32) -> io::Result<Vec<Shaper>> {
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
    let targets = ingress_redirects(ifindex_of(root, name)?)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
