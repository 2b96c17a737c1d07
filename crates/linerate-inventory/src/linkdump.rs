//! Every link's counters in one rtnetlink dump (RTM_GETLINK with NLM_F_DUMP): `IFLA_STATS64`,
//! `struct rtnl_link_stats64`, the same `dev_get_stats` figures the files of
//! `/sys/class/net/<if>/statistics/` print, and the carrier counts (`IFLA_CARRIER_CHANGES`,
//! `IFLA_CARRIER_UP_COUNT`, `IFLA_CARRIER_DOWN_COUNT`), the same as the files beside them. One
//! dump gives every interface of the caller's network namespace: a soak or a watch reads it
//! once a sample instead of 27 files per interface. Which field is which counter: the counter
//! table's `CounterRead::Stats64` and `CounterRead::LinkAttr`.

use std::collections::HashMap;
use std::io;

use socket2::Socket;

use crate::netlink::{
    attr, attrs, dump_into, dump_request, route_socket, u32_at, u64_at, walk_seq,
};

const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const IFLA_IFNAME: u16 = 3;
const IFLA_STATS64: u16 = 23;
/// The size of `struct ifinfomsg` (family, pad, type, index, flags, change).
const IFINFOMSG_LEN: usize = 16;
/// Reads of one dump at most: 32 KiB each, 1.5 KiB or so per link (8 MiB, 5000 links).
const MAX_READS: usize = 256;

/// One link's counters as the dump gives them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LinkCounters {
    pub ifindex: i32,
    /// The `u64` fields of `struct rtnl_link_stats64` the kernel sent, in its order (23
    /// before Linux 4.6, 24 with `rx_nohandler`, 25 with `rx_otherhost_dropped` since 5.19).
    pub stats64: Vec<u64>,
    /// The `u32` attributes asked for that it sent: (`IFLA_*`, value).
    pub attrs: Vec<(u16, u64)>,
}

/// The counters of one reply's links whose name `keep` keeps into `out` (name → counters), for
/// the `u32` attributes `wanted`. `Ok(true)` at the end of the dump.
pub(crate) fn parse_links(
    b: &[u8],
    seq: u32,
    keep: &dyn Fn(&str) -> bool,
    wanted: &[u16],
    out: &mut HashMap<String, LinkCounters>,
) -> Result<bool, String> {
    walk_seq(b, seq, |ty, body| {
        if ty != RTM_NEWLINK || body.len() < IFINFOMSG_LEN {
            return;
        }
        let a = attrs(&body[IFINFOMSG_LEN..]);
        let Some(name) = attr(&a, IFLA_IFNAME).map(|n| n.strip_suffix(b"\0").unwrap_or(n)) else {
            return;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            return;
        };
        if !keep(name) {
            return;
        }
        let stats64 = attr(&a, IFLA_STATS64)
            .map(|p| (0..p.len() / 8).filter_map(|i| u64_at(p, i * 8)).collect())
            .unwrap_or_default();
        let attrs = wanted
            .iter()
            .filter_map(|t| {
                attr(&a, *t)
                    .and_then(|p| u32_at(p, 0))
                    .map(|v| (*t, u64::from(v)))
            })
            .collect();
        out.insert(
            name.to_string(),
            LinkCounters {
                ifindex: u32_at(body, 4).map_or(0, u32::cast_signed),
                stats64,
                attrs,
            },
        );
    })
}

/// A route socket for the dump, kept open, with its request and buffer.
#[derive(Debug)]
pub(crate) struct LinkDump {
    sock: Socket,
    buf: Vec<u8>,
    seq: u32,
}

impl LinkDump {
    pub fn open() -> io::Result<Self> {
        Ok(Self {
            sock: route_socket()?,
            buf: Vec::new(),
            seq: 0,
        })
    }

    /// The links `keep` keeps, read now: name → counters, with the `u32` attributes `wanted`.
    /// An error when the dump cannot be made or does not end.
    pub fn read(
        &mut self,
        keep: &dyn Fn(&str) -> bool,
        wanted: &[u16],
    ) -> io::Result<HashMap<String, LinkCounters>> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        // struct ifinfomsg: AF_UNSPEC, every type, every index.
        let req = dump_request(RTM_GETLINK, &[0u8; IFINFOMSG_LEN], seq);
        let mut out = HashMap::new();
        let mut done = false;
        dump_into(&self.sock, &req, &mut self.buf, MAX_READS, &mut |b| {
            done = parse_links(b, seq, keep, wanted, &mut out)?;
            Ok(done)
        })?;
        if !done {
            return Err(io::Error::other(format!(
                "the link dump did not end within {MAX_READS} reads"
            )));
        }
        Ok(out)
    }
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

    fn msg(ty: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&[0u8; 2]);
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&[0u8; 4]);
        v.extend_from_slice(body);
        v
    }

    fn link(seq: u32, index: i32, name: &str, stats: &[u64], carrier: Option<u32>) -> Vec<u8> {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&index.to_ne_bytes());
        body.extend_from_slice(&[0u8; 8]);
        body.extend(rtattr(IFLA_IFNAME, format!("{name}\0").as_bytes()));
        let s: Vec<u8> = stats.iter().flat_map(|v| v.to_ne_bytes()).collect();
        body.extend(rtattr(IFLA_STATS64, &s));
        if let Some(c) = carrier {
            body.extend(rtattr(35, &c.to_ne_bytes()));
        }
        msg(RTM_NEWLINK, seq, &body)
    }

    #[test]
    fn a_dump_gives_each_kept_links_fields_and_attributes() {
        let mut b = link(7, 2, "eth0", &[1, 2, 3, 4], Some(5));
        b.extend(link(7, 3, "veth9", &[9; 24], None));
        b.extend(link(7, 1, "lo", &[0; 24], Some(0)));
        // What is left of a dump cut short: another sequence, skipped with its end.
        b.extend(link(6, 4, "eth0", &[100; 24], None));
        b.extend(msg(NLMSG_DONE, 6, &[0u8; 4]));
        let keep = |n: &str| n != "lo";
        let mut out = HashMap::new();
        assert_eq!(parse_links(&b, 7, &keep, &[35, 47], &mut out), Ok(false));
        assert_eq!(out.len(), 2);
        assert_eq!(
            out["eth0"],
            LinkCounters {
                ifindex: 2,
                stats64: vec![1, 2, 3, 4],
                attrs: vec![(35, 5)],
            }
        );
        assert_eq!(out["veth9"].stats64.len(), 24);
        assert!(out["veth9"].attrs.is_empty());
        assert_eq!(
            parse_links(&msg(NLMSG_DONE, 7, &[0u8; 4]), 7, &keep, &[], &mut out),
            Ok(true)
        );
        // The kernel's error ends the dump with it.
        let mut e = msg(2, 7, &(-1i32).to_ne_bytes());
        e.extend(msg(NLMSG_DONE, 7, &[0u8; 4]));
        assert!(parse_links(&e, 7, &keep, &[], &mut out).is_err());
        // A short or lying message is an error, not a panic.
        assert!(parse_links(&[0xff; 20], 7, &keep, &[], &mut out).is_err());
        let mut short = link(7, 2, "eth1", &[1], None);
        short.truncate(30);
        let _ = parse_links(&short, 7, &keep, &[], &mut out);
    }
}
