//! A physical function's virtual functions as rtnetlink reports them: `RTM_GETLINK` with
//! `IFLA_EXT_MASK` = `RTEXT_FILTER_VF`, answered by `IFLA_VFINFO_LIST` (what `ip link show`
//! prints as `vf N ...`). Attribute numbers and structs are `include/uapi/linux/if_link.h`.

use linerate_facts::{VfInfo, VfLinkState};

use crate::nl::{self, Attrs, NlError};

pub const RTM_GETLINK: u16 = 18;
pub const RTM_NEWLINK: u16 = 16;
const IFLA_IFNAME: u16 = 3;
const IFLA_NUM_VF: u16 = 21;
const IFLA_VFINFO_LIST: u16 = 22;
const IFLA_EXT_MASK: u16 = 29;
const RTEXT_FILTER_VF: u32 = 1;
const IFLA_VF_INFO: u16 = 1;
const IFLA_VF_MAC: u16 = 1;
const IFLA_VF_VLAN: u16 = 2;
const IFLA_VF_TX_RATE: u16 = 3;
const IFLA_VF_SPOOFCHK: u16 = 4;
const IFLA_VF_LINK_STATE: u16 = 5;
const IFLA_VF_RATE: u16 = 6;
const IFLA_VF_TRUST: u16 = 9;
/// `struct ifinfomsg`.
const IFINFOMSG_LEN: usize = 16;

/// The request for `iface`'s link with its VFs.
pub fn request(iface: &str, seq: u32) -> Vec<u8> {
    let mut body = vec![0u8; IFINFOMSG_LEN];
    body.extend(nl::attr_str(IFLA_IFNAME, iface));
    body.extend(nl::attr_u32(IFLA_EXT_MASK, RTEXT_FILTER_VF));
    nl::message(RTM_GETLINK, nl::NLM_F_REQUEST, seq, &body)
}

/// The VFs in a `RTM_NEWLINK` reply: `(IFLA_NUM_VF, each VF)`. A netdev without SR-IOV has
/// neither attribute: `(None, [])`.
pub fn decode(reply: &[u8]) -> Result<(Option<u32>, Vec<VfInfo>), NlError> {
    let msgs = nl::messages(reply)?;
    let m = msgs
        .iter()
        .find(|m| m.kind == RTM_NEWLINK)
        .ok_or_else(|| NlError::Malformed("no RTM_NEWLINK in the reply".into()))?;
    let body = m
        .body
        .get(IFINFOMSG_LEN..)
        .ok_or_else(|| NlError::Malformed("RTM_NEWLINK shorter than its ifinfomsg".into()))?;
    let a = Attrs::parse(body)?;
    let num = a.u32(IFLA_NUM_VF);
    let mut vfs = Vec::new();
    if let Some(list) = a.nested(IFLA_VFINFO_LIST)? {
        for info in list.all(IFLA_VF_INFO) {
            vfs.push(vf(&Attrs::parse(info)?)?);
        }
    }
    vfs.sort_by_key(|v| v.index);
    Ok((num, vfs))
}

/// The `u32` fields of a `struct ifla_vf_*` (each starts with the VF's index).
fn words(p: Option<&[u8]>, n: usize) -> Option<Vec<u32>> {
    let p = p?;
    (0..n).map(|i| nl::u32_at(p, i * 4)).collect()
}

fn vf(a: &Attrs<'_>) -> Result<VfInfo, NlError> {
    let mac = a.get(IFLA_VF_MAC);
    let index = mac
        .and_then(|p| nl::u32_at(p, 0))
        .or_else(|| words(a.get(IFLA_VF_VLAN), 1).map(|w| w[0]))
        .ok_or_else(|| NlError::Malformed("a VF without its index".into()))?;
    let mac = mac.and_then(|p| p.get(4..10)).map(|b| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    });
    let vlan = words(a.get(IFLA_VF_VLAN), 3);
    // A `setting` of -1 means the driver does not report it.
    let setting = |t: u16| {
        words(a.get(t), 2)
            .map(|w| w[1])
            .filter(|s| *s != u32::MAX)
            .map(|s| s != 0)
    };
    let rate = words(a.get(IFLA_VF_RATE), 3);
    let max_tx = rate
        .as_ref()
        .map(|w| w[2])
        .or_else(|| words(a.get(IFLA_VF_TX_RATE), 2).map(|w| w[1]));
    Ok(VfInfo {
        index,
        mac,
        vlan: vlan.as_ref().map(|w| w[1]).filter(|v| *v != 0),
        qos: vlan.as_ref().map(|w| w[2]).filter(|q| *q != 0),
        max_tx_rate_mbps: max_tx.filter(|r| *r != 0),
        min_tx_rate_mbps: rate.as_ref().map(|w| w[1]).filter(|r| *r != 0),
        link_state: words(a.get(IFLA_VF_LINK_STATE), 2).and_then(|w| match w[1] {
            0 => Some(VfLinkState::Auto),
            1 => Some(VfLinkState::Enable),
            2 => Some(VfLinkState::Disable),
            _ => None,
        }),
        spoof_check: setting(IFLA_VF_SPOOFCHK),
        trust: setting(IFLA_VF_TRUST),
    })
}

/// Replies as the kernel sends them, for tests and fixture captures.
pub mod build {
    use super::nl;

    /// One VF: index, MAC, VLAN, (min, max) Mb/s, link state (0 auto, 1 enable, 2 disable).
    #[derive(Debug, Clone, Copy)]
    pub struct Vf {
        pub index: u32,
        pub mac: [u8; 6],
        pub vlan: u32,
        pub rate: (u32, u32),
        pub link_state: u32,
    }

    fn words(kind: u16, w: &[u32]) -> Vec<u8> {
        let p: Vec<u8> = w.iter().flat_map(|x| x.to_ne_bytes()).collect();
        nl::attr(kind, &p)
    }

    /// `RTM_NEWLINK` of `iface` (index `ifindex`) with `vfs`.
    pub fn reply(iface: &str, ifindex: i32, vfs: &[Vf]) -> Vec<u8> {
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&ifindex.to_ne_bytes());
        body.extend_from_slice(&[0u8; 8]);
        body.extend(nl::attr_str(super::IFLA_IFNAME, iface));
        if !vfs.is_empty() {
            body.extend(nl::attr_u32(super::IFLA_NUM_VF, vfs.len() as u32));
            let mut list = Vec::new();
            for v in vfs {
                let mut mac = v.index.to_ne_bytes().to_vec();
                mac.extend_from_slice(&v.mac);
                mac.resize(36, 0);
                let mut i = nl::attr(super::IFLA_VF_MAC, &mac);
                i.extend(words(super::IFLA_VF_VLAN, &[v.index, v.vlan, 0]));
                i.extend(words(super::IFLA_VF_TX_RATE, &[v.index, v.rate.1]));
                i.extend(words(super::IFLA_VF_SPOOFCHK, &[v.index, 1]));
                i.extend(words(super::IFLA_VF_LINK_STATE, &[v.index, v.link_state]));
                i.extend(words(super::IFLA_VF_RATE, &[v.index, v.rate.0, v.rate.1]));
                i.extend(words(super::IFLA_VF_TRUST, &[v.index, 0]));
                list.extend(nl::nest(super::IFLA_VF_INFO, &i));
            }
            body.extend(nl::nest(super::IFLA_VFINFO_LIST, &list));
        }
        nl::message(super::RTM_NEWLINK, 0, 1, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::build::{reply, Vf};
    use super::*;

    #[test]
    fn vfs_with_rates_vlans_and_forced_states() {
        let vfs = [
            Vf {
                index: 0,
                mac: [0x02, 0, 0, 0, 0, 1],
                vlan: 100,
                rate: (0, 10_000),
                link_state: 0,
            },
            Vf {
                index: 1,
                mac: [0x02, 0, 0, 0, 0, 2],
                vlan: 0,
                rate: (0, 0),
                link_state: 2,
            },
        ];
        let (n, got) = decode(&reply("enp4s0f0np0", 4, &vfs)).unwrap();
        assert_eq!(n, Some(2));
        assert_eq!(got[0].mac.as_deref(), Some("02:00:00:00:00:01"));
        assert_eq!(got[0].vlan, Some(100));
        assert_eq!(got[0].max_tx_rate_mbps, Some(10_000));
        assert_eq!(got[0].link_state, Some(VfLinkState::Auto));
        assert_eq!(got[0].spoof_check, Some(true));
        assert_eq!(got[0].trust, Some(false));
        assert_eq!((got[1].vlan, got[1].max_tx_rate_mbps), (None, None));
        assert_eq!(got[1].link_state, Some(VfLinkState::Disable));
        // A netdev without SR-IOV.
        assert_eq!(decode(&reply("eth0", 2, &[])).unwrap(), (None, vec![]));
    }

    #[test]
    fn the_request_asks_for_vfs_by_name() {
        let r = request("eth0", 3);
        let m = &nl::messages(&r).unwrap()[0];
        assert_eq!(m.kind, RTM_GETLINK);
        let a = Attrs::parse(&m.body[16..]).unwrap();
        assert_eq!(a.string(IFLA_IFNAME).as_deref(), Some("eth0"));
        assert_eq!(a.u32(IFLA_EXT_MASK), Some(RTEXT_FILTER_VF));
    }

    #[test]
    fn truncated_replies_are_errors() {
        let r = reply(
            "e",
            2,
            &[Vf {
                index: 0,
                mac: [0; 6],
                vlan: 0,
                rate: (0, 0),
                link_state: 0,
            }],
        );
        for cut in 0..r.len() {
            let _ = decode(&r[..cut]);
        }
        assert!(decode(&nl::error_message(19, 1)).is_err());
    }
}
