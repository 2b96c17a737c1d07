//! A netdev's DCB state over rtnetlink: `RTM_GETDCB` with `DCB_CMD_IEEE_GET`
//! (include/uapi/linux/dcbnl.h, net/dcb/dcbnl.c): PFC, ETS, the APP table, the trust table and
//! the DCBX mode in one reply. GET commands need no privilege; linerate never sends a SET (mlx5
//! toggles the link when PFC changes).
//!
//! The request and the parser are apart from the socket: the parser takes the reply's bytes, so
//! it is tested on replies built from the kernel's layout, and a `--root` tree holds the reply
//! to replay in `dcb/IFACE/ieee` ([`TREE_DIR`]). The codec is rtnetlink's, in `netlink.rs`.

use std::path::Path;

use linerate_facts::{Dcb, DcbApp, DcbRead, Ets, Pfc};

use socket2::Socket;

use crate::netlink::{
    ask, attr, attrs, put_attr, route_socket, u16_at, u32_at, u64_at, NLMSG_ERROR,
};

/// Where a `--root` tree keeps the kernel's replies: `dcb/IFACE/ieee`, the bytes of the
/// netlink message that answered `DCB_CMD_IEEE_GET` (an `NLMSG_ERROR` for a refusal), beside
/// the PHY readers' `ethtool/IFACE/`.
pub const TREE_DIR: &str = "dcb";
/// The file of the `DCB_CMD_IEEE_GET` reply in [`TREE_DIR`]`/IFACE/`.
pub const TREE_IEEE: &str = "ieee";

const RTM_GETDCB: u16 = 78;
const DCB_CMD_IEEE_GET: u8 = 21;
const DCB_ATTR_IFNAME: u16 = 1;
const DCB_ATTR_IEEE: u16 = 13;
const DCB_ATTR_DCBX: u16 = 14;
const DCB_ATTR_IEEE_ETS: u16 = 1;
const DCB_ATTR_IEEE_PFC: u16 = 2;
const DCB_ATTR_IEEE_APP_TABLE: u16 = 3;
const DCB_ATTR_DCB_APP_TRUST_TABLE: u16 = 11;
/// In the APP table: `DCB_ATTR_IEEE_APP` (IEEE selectors) and `DCB_ATTR_DCB_APP` (PCP, 6.2+).
const DCB_ATTR_IEEE_APP: u16 = 1;
const DCB_ATTR_DCB_APP: u16 = 2;
/// In the trust table: `DCB_ATTR_DCB_APP_TRUST`, one selector (u8) each.
const DCB_ATTR_DCB_APP_TRUST: u16 = 1;
/// `sizeof(struct ieee_ets)`: willing, ets_cap, cbs, then seven arrays of 8 bytes.
const IEEE_ETS_LEN: usize = 59;
/// `sizeof(struct ieee_pfc)` on 64-bit Linux: the u64 arrays start at 8.
const IEEE_PFC_LEN: usize = 136;
/// `EOPNOTSUPP`: the netdev has no `dcbnl_ops`.
const EOPNOTSUPP: i32 = 95;

/// The request: `struct dcbmsg` (family `AF_UNSPEC`, the command) and the interface's name.
pub fn request_body(iface: &str) -> Vec<u8> {
    let mut b = vec![0u8, DCB_CMD_IEEE_GET, 0, 0];
    let mut name = iface.as_bytes().to_vec();
    name.push(0);
    put_attr(&mut b, DCB_ATTR_IFNAME, &name);
    b
}

/// Decode the kernel's reply to `DCB_CMD_IEEE_GET` (one netlink message).
pub fn parse_reply(b: &[u8]) -> DcbRead {
    let (Some(len), Some(ty)) = (u32_at(b, 0), u16_at(b, 4)) else {
        return DcbRead::Failed(format!(
            "a netlink reply of {} bytes: shorter than its header",
            b.len()
        ));
    };
    let len = len as usize;
    if len < 16 || len > b.len() {
        return DcbRead::Failed(format!(
            "a netlink message of length {len} in a reply of {} bytes",
            b.len()
        ));
    }
    let body = &b[16..len];
    if ty == NLMSG_ERROR {
        let code = u32_at(body, 0).map_or(0, u32::cast_signed);
        return match -code {
            0 => DcbRead::Failed("the kernel acknowledged without a reply".into()),
            EOPNOTSUPP => DcbRead::Unsupported,
            e => DcbRead::Failed(format!(
                "RTM_GETDCB refused: {}",
                std::io::Error::from_raw_os_error(e)
            )),
        };
    }
    if ty != RTM_GETDCB || body.len() < 4 {
        return DcbRead::Failed(format!(
            "a netlink message of type {ty} ({} bytes) where RTM_GETDCB's reply was expected",
            body.len()
        ));
    }
    let top = attrs(&body[4..]);
    let Some(ieee) = attr(&top, DCB_ATTR_IEEE) else {
        return DcbRead::Failed("RTM_GETDCB's reply has no DCB_ATTR_IEEE".into());
    };
    let a = attrs(ieee);
    let mut dcb = Dcb {
        dcbx: attr(&top, DCB_ATTR_DCBX).and_then(|p| p.first().copied()),
        ..Dcb::default()
    };
    if let Some(p) = attr(&a, DCB_ATTR_IEEE_PFC) {
        match pfc(p) {
            Some(x) => dcb.pfc = Some(x),
            None => return bad("DCB_ATTR_IEEE_PFC", p.len(), IEEE_PFC_LEN),
        }
    }
    if let Some(p) = attr(&a, DCB_ATTR_IEEE_ETS) {
        match ets(p) {
            Some(x) => dcb.ets = Some(x),
            None => return bad("DCB_ATTR_IEEE_ETS", p.len(), IEEE_ETS_LEN),
        }
    }
    if let Some(t) = attr(&a, DCB_ATTR_IEEE_APP_TABLE) {
        for (ty, p) in attrs(t) {
            if !matches!(ty, DCB_ATTR_IEEE_APP | DCB_ATTR_DCB_APP) {
                continue;
            }
            match (p.first(), p.get(1), u16_at(p, 2)) {
                (Some(&selector), Some(&priority), Some(protocol)) => dcb.apps.push(DcbApp {
                    selector,
                    priority,
                    protocol,
                }),
                _ => return bad("an APP table entry", p.len(), 4),
            }
        }
    }
    if let Some(t) = attr(&a, DCB_ATTR_DCB_APP_TRUST_TABLE) {
        dcb.trust = Some(
            attrs(t)
                .into_iter()
                .filter(|(ty, _)| *ty == DCB_ATTR_DCB_APP_TRUST)
                .filter_map(|(_, p)| p.first().copied())
                .collect(),
        );
    }
    DcbRead::Read(dcb)
}

fn bad(what: &str, got: usize, want: usize) -> DcbRead {
    DcbRead::Failed(format!(
        "{what} of {got} bytes: expected at least {want} (the kernel's struct)"
    ))
}

fn pfc(p: &[u8]) -> Option<Pfc> {
    if p.len() < IEEE_PFC_LEN {
        return None;
    }
    let arr = |at: usize| (0..8).map(|i| u64_at(p, at + 8 * i).unwrap_or(0)).collect();
    Some(Pfc {
        cap: p[0],
        enabled: p[1],
        mbc: p[2],
        delay: u16_at(p, 4)?,
        requests: arr(8),
        indications: arr(72),
    })
}

fn ets(p: &[u8]) -> Option<Ets> {
    if p.len() < IEEE_ETS_LEN {
        return None;
    }
    let arr = |at: usize| p[at..at + 8].to_vec();
    Some(Ets {
        willing: p[0] != 0,
        ets_cap: p[1],
        cbs: p[2] != 0,
        tc_tx_bw: arr(3),
        tc_tsa: arr(19),
        prio_tc: arr(27),
    })
}

/// Where DCB replies come from: the live kernel, or a tree's files.
pub trait DcbSource {
    fn ieee(&mut self, iface: &str) -> DcbRead;
}

/// The live kernel of this network namespace, over one route socket (opened at the first
/// request, kept for the others).
#[derive(Debug, Default)]
pub struct LiveDcb {
    seq: u32,
    sock: Option<Socket>,
}

impl DcbSource for LiveDcb {
    fn ieee(&mut self, iface: &str) -> DcbRead {
        self.seq = self.seq.wrapping_add(1);
        let sock = match self.sock.take().map_or_else(route_socket, Ok) {
            Ok(s) => s,
            Err(e) => return DcbRead::Failed(format!("RTM_GETDCB for {iface}: {e}")),
        };
        let reply = ask(&sock, RTM_GETDCB, &request_body(iface), self.seq);
        self.sock = Some(sock);
        match reply {
            Ok(b) => parse_reply(&b),
            Err(e) => DcbRead::Failed(format!("RTM_GETDCB for {iface}: {e}")),
        }
    }
}

/// A `--root` tree: `dcb/IFACE/ieee` under it.
#[derive(Debug)]
pub struct Tree<'a> {
    pub root: &'a Path,
}

impl DcbSource for Tree<'_> {
    fn ieee(&mut self, iface: &str) -> DcbRead {
        let p = self.root.join(TREE_DIR).join(iface).join(TREE_IEEE);
        match std::fs::read(&p) {
            Ok(b) => parse_reply(&b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => DcbRead::NotAsked,
            Err(e) => DcbRead::Failed(format!("{}: {e}", p.display())),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A reply as the kernel builds it (dcbnl_ieee_fill): IFNAME, the IEEE nest with ETS, PFC
    /// and the APP table, then DCBX.
    pub(crate) fn reply(
        iface: &str,
        pfc_en: u8,
        apps: &[(u8, u8, u16)],
        trust: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut ieee = Vec::new();
        let mut ets = vec![0u8; IEEE_ETS_LEN];
        ets[1] = 8;
        ets[3..11].copy_from_slice(&[13, 13, 13, 13, 12, 12, 12, 12]);
        ets[19..27].copy_from_slice(&[2; 8]);
        ets[27..35].copy_from_slice(&[0, 1, 2, 3, 4, 5, 6, 7]);
        put_attr(&mut ieee, DCB_ATTR_IEEE_ETS, &ets);
        let mut pfc = vec![0u8; IEEE_PFC_LEN];
        pfc[0] = 8;
        pfc[1] = pfc_en;
        pfc[4..6].copy_from_slice(&7u16.to_ne_bytes());
        pfc[8 + 3 * 8..8 + 4 * 8].copy_from_slice(&1234u64.to_ne_bytes());
        pfc[72 + 3 * 8..72 + 4 * 8].copy_from_slice(&567u64.to_ne_bytes());
        put_attr(&mut ieee, DCB_ATTR_IEEE_PFC, &pfc);
        let mut table = Vec::new();
        for &(sel, prio, proto) in apps {
            let mut e = vec![sel, prio];
            e.extend_from_slice(&proto.to_ne_bytes());
            put_attr(&mut table, DCB_ATTR_IEEE_APP, &e);
        }
        put_attr(&mut ieee, DCB_ATTR_IEEE_APP_TABLE, &table);
        if let Some(t) = trust {
            let mut tt = Vec::new();
            for s in t {
                put_attr(&mut tt, DCB_ATTR_DCB_APP_TRUST, &[*s]);
            }
            put_attr(&mut ieee, DCB_ATTR_DCB_APP_TRUST_TABLE, &tt);
        }
        let mut body = vec![0u8, DCB_CMD_IEEE_GET, 0, 0];
        let mut name = iface.as_bytes().to_vec();
        name.push(0);
        put_attr(&mut body, DCB_ATTR_IFNAME, &name);
        put_attr(&mut body, DCB_ATTR_IEEE | 0x8000, &ieee);
        put_attr(&mut body, DCB_ATTR_DCBX, &[0x0a]);
        message(RTM_GETDCB, &body)
    }

    pub(crate) fn message(ty: u16, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&u32::try_from(16 + body.len()).unwrap().to_ne_bytes());
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&7u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        m
    }

    pub(crate) fn error(errno: i32) -> Vec<u8> {
        let mut body = (-errno).to_ne_bytes().to_vec();
        body.extend_from_slice(&[0u8; 16]);
        message(NLMSG_ERROR, &body)
    }

    #[test]
    fn a_reply_decodes_pfc_ets_apps_and_dcbx() {
        let b = reply("enp1s0f0np0", 0b0000_1000, &[(5, 3, 26), (5, 6, 48)], None);
        let DcbRead::Read(d) = parse_reply(&b) else {
            panic!("{:?}", parse_reply(&b))
        };
        let p = d.pfc.clone().unwrap();
        assert_eq!((p.cap, p.enabled, p.delay), (8, 8, 7));
        assert_eq!(p.priorities(), [3]);
        assert_eq!((p.requests[3], p.indications[3]), (1234, 567));
        assert_eq!(d.ets.as_ref().unwrap().prio_tc, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(d.ets.as_ref().unwrap().tc_tsa, [2; 8]);
        assert_eq!(d.dcbx, Some(0x0a));
        assert_eq!(d.dscp_priority(26), Some(3));
        assert_eq!(d.dscp_priority(10), None);
        assert!(d.trusts_dscp());
        assert_eq!(d.trust, None);
    }

    #[test]
    fn a_trust_table_decides_the_trust() {
        let b = reply("swp1", 0, &[(5, 3, 26)], Some(&[255, 5]));
        let DcbRead::Read(d) = parse_reply(&b) else {
            panic!()
        };
        assert_eq!(d.trust.as_deref(), Some(&[255u8, 5][..]));
        assert!(!d.trusts_dscp());
        let b = reply("swp1", 0, &[], None);
        let DcbRead::Read(d) = parse_reply(&b) else {
            panic!()
        };
        assert!(!d.trusts_dscp() && d.apps.is_empty());
    }

    #[test]
    fn refusals_and_garbage_are_named() {
        assert_eq!(parse_reply(&error(95)), DcbRead::Unsupported);
        let DcbRead::Failed(e) = parse_reply(&error(19)) else {
            panic!()
        };
        assert!(e.contains("No such device"), "{e}");
        let DcbRead::Failed(e) = parse_reply(&[1, 2, 3]) else {
            panic!()
        };
        assert!(e.contains("shorter than its header"), "{e}");
        // A PFC attribute cut short.
        let mut ieee = Vec::new();
        put_attr(&mut ieee, DCB_ATTR_IEEE_PFC, &[8, 8, 0, 0]);
        let mut body = vec![0u8, DCB_CMD_IEEE_GET, 0, 0];
        put_attr(&mut body, DCB_ATTR_IEEE, &ieee);
        let DcbRead::Failed(e) = parse_reply(&message(RTM_GETDCB, &body)) else {
            panic!()
        };
        assert!(e.contains("DCB_ATTR_IEEE_PFC of 4 bytes"), "{e}");
        // A length beyond the bytes.
        let mut m = reply("x", 0, &[], None);
        m.truncate(40);
        assert!(matches!(parse_reply(&m), DcbRead::Failed(_)));
    }

    #[test]
    fn the_request_names_the_interface() {
        let b = request_body("eth0");
        assert_eq!(&b[..4], &[0, DCB_CMD_IEEE_GET, 0, 0]);
        assert_eq!(u16_at(&b, 4), Some(9));
        assert_eq!(u16_at(&b, 6), Some(DCB_ATTR_IFNAME));
        assert_eq!(&b[8..13], b"eth0\0");
        assert_eq!(b.len() % 4, 0);
    }
}
