//! ethtool's generic netlink family (Linux 5.6 and later), without a socket: the bytes of each
//! GET request and the typed data of each reply. Command and attribute numbers are those of
//! `include/uapi/linux/ethtool_netlink.h` (checked against Debian 12's 6.1 headers); the
//! replies' meaning is `Documentation/networking/ethtool-netlink.rst`.

use linerate_facts::{Channels, Coalesce, Fec, FecMode, LinkModes, Pause, Rings};

use crate::nl::{self, Attrs, NlError};

/// `ETHTOOL_GENL_NAME` and `ETHTOOL_GENL_VERSION`.
pub const FAMILY: &str = "ethtool";
pub const VERSION: u8 = 1;
/// The generic netlink controller (`GENL_ID_CTRL`), `CTRL_CMD_GETFAMILY`, and its attributes.
pub const GENL_ID_CTRL: u16 = 16;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

/// `ETHTOOL_A_HEADER_*`, the first attribute (1) of every request and reply.
const A_HEADER: u16 = 1;
const HEADER_DEV_NAME: u16 = 2;
const HEADER_FLAGS: u16 = 3;
/// `ETHTOOL_FLAG_STATS`: ask for the statistics nest (pause, FEC).
pub const FLAG_STATS: u32 = 4;
/// `ETHTOOL_STAT_NOT_SET`: a counter the driver does not have.
const STAT_NOT_SET: u64 = u64::MAX;

/// One GET of the family: its request and reply command numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Get {
    LinkModes,
    Rings,
    Channels,
    Coalesce,
    Pause,
    Fec,
    ModuleEeprom,
}

impl Get {
    /// `ETHTOOL_MSG_*_GET`.
    pub fn cmd(self) -> u8 {
        match self {
            Self::LinkModes => 4,
            Self::Rings => 15,
            Self::Channels => 17,
            Self::Coalesce => 19,
            Self::Pause => 21,
            Self::Fec => 29,
            Self::ModuleEeprom => 31,
        }
    }

    /// `ETHTOOL_MSG_*_GET_REPLY`.
    pub fn reply_cmd(self) -> u8 {
        match self {
            Self::LinkModes => 4,
            Self::Rings => 16,
            Self::Channels => 18,
            Self::Coalesce => 20,
            Self::Pause => 22,
            Self::Fec => 30,
            Self::ModuleEeprom => 32,
        }
    }

    /// The statistics flag where the command takes it (the kernel refuses it elsewhere).
    pub fn flags(self) -> u32 {
        match self {
            Self::Pause | Self::Fec => FLAG_STATS,
            _ => 0,
        }
    }

    /// Its name in the capture files of a `--root` tree (`ethtool/IFACE/NAME`).
    pub fn file_name(self) -> &'static str {
        match self {
            Self::LinkModes => "linkmodes",
            Self::Rings => "rings",
            Self::Channels => "channels",
            Self::Coalesce => "coalesce",
            Self::Pause => "pause",
            Self::Fec => "fec",
            Self::ModuleEeprom => "module-eeprom",
        }
    }
}

/// The generic netlink header and attributes of a message to `family`.
fn genl(family: u16, cmd: u8, seq: u32, attrs: &[u8]) -> Vec<u8> {
    let mut body = vec![cmd, VERSION, 0, 0];
    body.extend_from_slice(attrs);
    nl::message(family, nl::NLM_F_REQUEST, seq, &body)
}

/// The request for the id of the `ethtool` family.
pub fn family_request(seq: u32) -> Vec<u8> {
    let mut body = vec![CTRL_CMD_GETFAMILY, 1, 0, 0];
    body.extend(nl::attr_str(CTRL_ATTR_FAMILY_NAME, FAMILY));
    nl::message(GENL_ID_CTRL, nl::NLM_F_REQUEST, seq, &body)
}

/// The family id in the controller's reply. `ENOENT` from the kernel means it has no ethtool
/// netlink (before 5.6, or built without `CONFIG_ETHTOOL_NETLINK`).
pub fn family_id(reply: &[u8]) -> Result<u16, NlError> {
    for m in nl::messages(reply)? {
        if m.kind == GENL_ID_CTRL {
            let a = Attrs::parse(m.body.get(4..).unwrap_or(&[]))?;
            if let Some(id) = a.get(CTRL_ATTR_FAMILY_ID).and_then(|p| nl::u16_at(p, 0)) {
                return Ok(id);
            }
        }
    }
    Err(NlError::Malformed(
        "the controller's reply has no family id".into(),
    ))
}

fn header(iface: &str, flags: u32) -> Vec<u8> {
    let mut h = nl::attr_str(HEADER_DEV_NAME, iface);
    if flags != 0 {
        h.extend(nl::attr_u32(HEADER_FLAGS, flags));
    }
    nl::nest(A_HEADER, &h)
}

/// The request of `get` for `iface` (not the module EEPROM: see [`eeprom_request`]).
pub fn request(family: u16, get: Get, iface: &str, seq: u32) -> Vec<u8> {
    genl(family, get.cmd(), seq, &header(iface, get.flags()))
}

/// One read of the module's memory: `length` bytes at `offset` of `page` (and `bank`) of the
/// module at I2C address `i2c` (0x50, or 0x51 for SFF-8472's diagnostics).
pub fn eeprom_request(family: u16, iface: &str, seq: u32, r: crate::eeprom::Read) -> Vec<u8> {
    let mut a = header(iface, 0);
    a.extend(nl::attr_u32(2, u32::from(r.offset)));
    a.extend(nl::attr_u32(3, u32::from(r.length)));
    a.extend(nl::attr_u8(4, r.page));
    a.extend(nl::attr_u8(5, r.bank));
    a.extend(nl::attr_u8(6, r.i2c));
    genl(family, Get::ModuleEeprom.cmd(), seq, &a)
}

/// The attributes of the one reply of `get` in `reply`.
pub fn reply_attrs(reply: &[u8], get: Get) -> Result<Attrs<'_>, NlError> {
    let msgs = nl::messages(reply)?;
    let m = msgs
        .iter()
        .find(|m| m.body.first() == Some(&get.reply_cmd()))
        .ok_or_else(|| {
            NlError::Malformed(format!(
                "no reply of command {} among {} message(s)",
                get.reply_cmd(),
                msgs.len()
            ))
        })?;
    Attrs::parse(m.body.get(4..).unwrap_or(&[]))
}

/// The data of a module EEPROM reply.
pub fn decode_eeprom(reply: &[u8]) -> Result<Vec<u8>, NlError> {
    let a = reply_attrs(reply, Get::ModuleEeprom)?;
    a.get(7)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| NlError::Malformed("module EEPROM reply without data".into()))
}

/// The bits of a bitset: each one's index and name.
type Bits = Vec<(u32, String)>;

/// A bitset (`ETHTOOL_A_BITSET_*`) in its verbose form: each bit's index, name and whether it
/// is set; or in its compact form (values only, no names). `(set, mask)`: the names (or
/// `bit N`) of the bits set, and of the bits in the mask (all listed bits when `NOMASK`).
fn bitset(a: &Attrs<'_>) -> Result<(Bits, Bits), NlError> {
    const NOMASK: u16 = 1;
    const SIZE: u16 = 2;
    const BITS: u16 = 3;
    const VALUE: u16 = 4;
    const MASK: u16 = 5;
    let nomask = a.flag(NOMASK);
    let mut set = Vec::new();
    let mut mask = Vec::new();
    if let Some(bits) = a.nested(BITS)? {
        for bit in bits.all(1) {
            let b = Attrs::parse(bit)?;
            let Some(index) = b.u32(1) else { continue };
            let name = b.string(2).unwrap_or_else(|| format!("bit {index}"));
            if nomask || b.flag(3) {
                set.push((index, name.clone()));
            }
            mask.push((index, name));
        }
        return Ok((set, mask));
    }
    let size = a.u32(SIZE).unwrap_or(0).min(4096);
    let word = |p: Option<&[u8]>, i: u32| {
        p.and_then(|p| nl::u32_at(p, (i / 32) as usize * 4))
            .is_some_and(|w| w & (1 << (i % 32)) != 0)
    };
    for i in 0..size {
        if word(a.get(VALUE), i) {
            set.push((i, format!("bit {i}")));
        }
        if nomask && word(a.get(VALUE), i) || word(a.get(MASK), i) {
            mask.push((i, format!("bit {i}")));
        }
    }
    Ok((set, mask))
}

fn names(v: Vec<(u32, String)>) -> Vec<String> {
    v.into_iter().map(|(_, n)| n).collect()
}

/// `ETHTOOL_MSG_LINKMODES_GET_REPLY`.
pub fn decode_link_modes(reply: &[u8]) -> Result<LinkModes, NlError> {
    let a = reply_attrs(reply, Get::LinkModes)?;
    let (advertised, supported) = match a.nested(3)? {
        Some(b) => bitset(&b)?,
        None => (Vec::new(), Vec::new()),
    };
    let partner = match a.nested(4)? {
        Some(b) => bitset(&b)?.0,
        None => Vec::new(),
    };
    Ok(LinkModes {
        autoneg: a.u8(2).map(|v| v != 0),
        // SPEED_UNKNOWN is -1.
        speed_mbps: a.u32(5).filter(|s| *s != u32::MAX && *s != 0),
        duplex: a.u8(6).and_then(|d| match d {
            0 => Some("half".to_string()),
            1 => Some("full".to_string()),
            _ => None,
        }),
        lanes: a.u32(9).filter(|l| *l > 0),
        supported: names(supported),
        advertised: names(advertised),
        partner: names(partner),
    })
}

/// A FEC mode from its link mode bit (`ETHTOOL_LINK_MODE_FEC_*_BIT`) or, failing that, its
/// name as the kernel's link mode table spells it.
fn fec_mode(index: u32, name: &str) -> Option<FecMode> {
    match (index, name) {
        (49, _) | (_, "None") => Some(FecMode::None),
        (50, _) | (_, "RS") => Some(FecMode::Rs),
        (51, _) | (_, "BASER") => Some(FecMode::Baser),
        (74, _) | (_, "LLRS") => Some(FecMode::Llrs),
        _ => None,
    }
}

/// A FEC statistic: a u64 array of the total then each lane; `ETHTOOL_STAT_NOT_SET` entries
/// are counters the driver lacks.
fn fec_stat(p: Option<&[u8]>) -> (Option<u64>, Vec<u64>) {
    let Some(p) = p else {
        return (None, Vec::new());
    };
    let vals: Vec<u64> = p.chunks_exact(8).filter_map(|c| nl::u64_at(c, 0)).collect();
    let total = vals.first().copied().filter(|v| *v != STAT_NOT_SET);
    let lanes = vals
        .iter()
        .skip(1)
        .copied()
        .take_while(|v| *v != STAT_NOT_SET)
        .collect();
    (total, lanes)
}

/// `ETHTOOL_MSG_FEC_GET_REPLY`, with its statistics when the driver has them.
pub fn decode_fec(reply: &[u8]) -> Result<Fec, NlError> {
    let a = reply_attrs(reply, Get::Fec)?;
    let configured = match a.nested(2)? {
        Some(b) => bitset(&b)?
            .0
            .iter()
            .filter_map(|(i, n)| fec_mode(*i, n))
            .collect(),
        None => Vec::new(),
    };
    let stats = a.nested(5)?;
    let get = |t: u16| fec_stat(stats.as_ref().and_then(|s| s.get(t)));
    let (corrected, corrected_lanes) = get(2);
    let (uncorr, uncorr_lanes) = get(3);
    let (bits, _) = get(4);
    Ok(Fec {
        active: a.u32(4).and_then(|i| fec_mode(i, "")),
        configured,
        auto: a.u8(3).map(|v| v != 0),
        corrected_blocks: corrected,
        uncorrectable_blocks: uncorr,
        corrected_bits: bits,
        corrected_blocks_per_lane: corrected_lanes,
        uncorrectable_blocks_per_lane: uncorr_lanes,
    })
}

/// `ETHTOOL_MSG_RINGS_GET_REPLY`.
pub fn decode_rings(reply: &[u8]) -> Result<Rings, NlError> {
    let a = reply_attrs(reply, Get::Rings)?;
    Ok(Rings {
        rx_max: a.u32(2),
        rx_mini_max: a.u32(3),
        rx_jumbo_max: a.u32(4),
        tx_max: a.u32(5),
        rx: a.u32(6),
        rx_mini: a.u32(7),
        rx_jumbo: a.u32(8),
        tx: a.u32(9),
        rx_buf_len: a.u32(10).filter(|v| *v > 0),
        cqe_size: a.u32(12).filter(|v| *v > 0),
    })
}

/// `ETHTOOL_MSG_CHANNELS_GET_REPLY`.
pub fn decode_channels(reply: &[u8]) -> Result<Channels, NlError> {
    let a = reply_attrs(reply, Get::Channels)?;
    Ok(Channels {
        rx_max: a.u32(2),
        tx_max: a.u32(3),
        other_max: a.u32(4),
        combined_max: a.u32(5),
        rx: a.u32(6),
        tx: a.u32(7),
        other: a.u32(8),
        combined: a.u32(9),
    })
}

/// `ETHTOOL_MSG_COALESCE_GET_REPLY`: the settings most drivers have.
pub fn decode_coalesce(reply: &[u8]) -> Result<Coalesce, NlError> {
    let a = reply_attrs(reply, Get::Coalesce)?;
    Ok(Coalesce {
        rx_usecs: a.u32(2),
        rx_max_frames: a.u32(3),
        tx_usecs: a.u32(6),
        tx_max_frames: a.u32(7),
        adaptive_rx: a.u8(11).map(|v| v != 0),
        adaptive_tx: a.u8(12).map(|v| v != 0),
    })
}

/// `ETHTOOL_MSG_PAUSE_GET_REPLY`, with the 802.3x frame counters when the driver has them.
pub fn decode_pause(reply: &[u8]) -> Result<Pause, NlError> {
    let a = reply_attrs(reply, Get::Pause)?;
    let stats = a.nested(5)?;
    let stat = |t: u16| {
        stats
            .as_ref()
            .and_then(|s| s.u64(t))
            .filter(|v| *v != STAT_NOT_SET)
    };
    Ok(Pause {
        autoneg: a.u8(2).map(|v| v != 0),
        rx: a.u8(3).map(|v| v != 0),
        tx: a.u8(4).map(|v| v != 0),
        tx_frames: stat(2),
        rx_frames: stat(3),
    })
}

/// Replies as the kernel would send them, for tests and fixture captures: each takes the
/// attributes after the header and wraps them in a reply message.
pub mod build {
    use super::{nl, Get};

    /// A reply of `get` carrying `attrs` (after a header naming `iface`).
    pub fn reply(family: u16, get: Get, iface: &str, attrs: &[u8]) -> Vec<u8> {
        let mut body = vec![get.reply_cmd(), super::VERSION, 0, 0];
        body.extend(nl::nest(
            super::A_HEADER,
            &nl::attr_str(super::HEADER_DEV_NAME, iface),
        ));
        body.extend_from_slice(attrs);
        nl::message(family, 0, 1, &body)
    }

    /// A verbose bitset of (index, name, set) bits; `nomask` lists only set bits.
    pub fn bitset(bits: &[(u32, &str, bool)], nomask: bool) -> Vec<u8> {
        let mut list = Vec::new();
        for (i, n, v) in bits {
            let mut b = nl::attr_u32(1, *i);
            b.extend(nl::attr_str(2, n));
            if *v {
                b.extend(nl::attr(3, &[]));
            }
            list.extend(nl::nest(1, &b));
        }
        let mut out = Vec::new();
        if nomask {
            out.extend(nl::attr(1, &[]));
        }
        out.extend(nl::attr_u32(2, 128));
        out.extend(nl::nest(3, &list));
        out
    }

    /// A u64 array attribute (FEC statistics).
    pub fn u64s(kind: u16, vals: &[u64]) -> Vec<u8> {
        let p: Vec<u8> = vals.iter().flat_map(|v| v.to_ne_bytes()).collect();
        nl::attr(kind, &p)
    }
}

#[cfg(test)]
mod tests {
    use super::build::{bitset, reply, u64s};
    use super::*;

    #[test]
    fn requests_name_the_interface_and_ask_for_statistics() {
        let r = request(27, Get::Fec, "enp1s0", 9);
        let m = &nl::messages(&r).unwrap()[0];
        assert_eq!((m.kind, m.seq, m.body[0]), (27, 9, 29));
        let a = Attrs::parse(&m.body[4..]).unwrap();
        let h = a.nested(1).unwrap().unwrap();
        assert_eq!(h.string(2).as_deref(), Some("enp1s0"));
        assert_eq!(h.u32(3), Some(FLAG_STATS));
        // Rings take no statistics flag: the kernel refuses it there.
        let r = request(27, Get::Rings, "enp1s0", 1);
        let m = &nl::messages(&r).unwrap()[0];
        let a = Attrs::parse(&m.body[4..]).unwrap();
        assert_eq!(a.nested(1).unwrap().unwrap().u32(3), None);
    }

    #[test]
    fn family_id_from_the_controller() {
        let mut body = vec![1, 2, 0, 0];
        body.extend(nl::attr_str(2, "ethtool"));
        body.extend(nl::attr(1, &27u16.to_ne_bytes()));
        let r = nl::message(GENL_ID_CTRL, 0, 1, &body);
        assert_eq!(family_id(&r).unwrap(), 27);
        // A kernel without the family answers ENOENT.
        let e = family_id(&nl::error_message(2, 1)).unwrap_err();
        assert!(e.to_string().contains("ENOENT"), "{e}");
    }

    #[test]
    fn link_modes_with_names_from_the_kernel() {
        let mut a = nl::attr_u8(2, 1);
        a.extend(nl::nest(
            3,
            &bitset(
                &[
                    (57, "25000baseCR/Full", true),
                    (58, "25000baseKR/Full", false),
                    (59, "25000baseSR/Full", true),
                ],
                false,
            ),
        ));
        a.extend(nl::nest(
            4,
            &bitset(&[(57, "25000baseCR/Full", true)], true),
        ));
        a.extend(nl::attr_u32(5, 25_000));
        a.extend(nl::attr_u8(6, 1));
        a.extend(nl::attr_u32(9, 1));
        let m = decode_link_modes(&reply(27, Get::LinkModes, "eth0", &a)).unwrap();
        assert_eq!(m.autoneg, Some(true));
        assert_eq!(m.speed_mbps, Some(25_000));
        assert_eq!(m.duplex.as_deref(), Some("full"));
        assert_eq!(m.lanes, Some(1));
        assert_eq!(m.advertised, ["25000baseCR/Full", "25000baseSR/Full"]);
        assert_eq!(m.supported.len(), 3);
        assert_eq!(m.partner, ["25000baseCR/Full"]);
        // Unknown speed (-1) and duplex (0xff) are unknown.
        let mut a = nl::attr_u32(5, u32::MAX);
        a.extend(nl::attr_u8(6, 0xff));
        let m = decode_link_modes(&reply(27, Get::LinkModes, "eth0", &a)).unwrap();
        assert_eq!((m.speed_mbps, m.duplex), (None, None));
    }

    #[test]
    fn compact_bitsets_give_indices() {
        let mut b = nl::attr_u32(2, 64);
        b.extend(nl::attr(4, &[0b101, 0, 0, 0, 0, 0, 0, 0]));
        b.extend(nl::attr(5, &[0b111, 0, 0, 0, 0, 0, 0, 0]));
        let (set, mask) = super::bitset(&Attrs::parse(&b).unwrap()).unwrap();
        assert_eq!(set.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(mask.len(), 3);
    }

    #[test]
    fn fec_with_statistics_per_lane() {
        // mlx5 on RS-FEC at 100G: totals; netdevsim 6.12: corrected 123, uncorrectable 4.
        let mut a = nl::nest(
            2,
            &bitset(
                &[(49, "None", false), (50, "RS", true), (51, "BASER", false)],
                false,
            ),
        );
        a.extend(nl::attr_u8(3, 0));
        a.extend(nl::attr_u32(4, 50));
        let mut s = u64s(2, &[123, 100, 23]);
        s.extend(u64s(3, &[4]));
        a.extend(nl::nest(5, &s));
        let f = decode_fec(&reply(27, Get::Fec, "eth0", &a)).unwrap();
        assert_eq!(f.active, Some(FecMode::Rs));
        assert_eq!(f.configured, [FecMode::Rs]);
        assert_eq!(f.auto, Some(false));
        assert_eq!(f.corrected_blocks, Some(123));
        assert_eq!(f.corrected_blocks_per_lane, [100, 23]);
        assert_eq!(f.uncorrectable_blocks, Some(4));
        assert_eq!(f.corrected_bits, None);
        // No FEC active, counters the driver lacks.
        let mut a = nl::attr_u32(4, 49);
        a.extend(nl::nest(5, &u64s(2, &[u64::MAX])));
        let f = decode_fec(&reply(27, Get::Fec, "eth0", &a)).unwrap();
        assert_eq!((f.active, f.corrected_blocks), (Some(FecMode::None), None));
    }

    #[test]
    fn rings_channels_coalesce_pause() {
        let mut a = nl::attr_u32(2, 4096);
        a.extend(nl::attr_u32(5, 4096));
        a.extend(nl::attr_u32(6, 256));
        a.extend(nl::attr_u32(9, 256));
        let r = decode_rings(&reply(27, Get::Rings, "e", &a)).unwrap();
        assert_eq!(
            (r.rx, r.rx_max, r.tx, r.tx_max),
            (Some(256), Some(4096), Some(256), Some(4096))
        );
        let mut a = nl::attr_u32(5, 63);
        a.extend(nl::attr_u32(9, 8));
        let c = decode_channels(&reply(27, Get::Channels, "e", &a)).unwrap();
        assert_eq!((c.combined, c.combined_max), (Some(8), Some(63)));
        let mut a = nl::attr_u32(2, 8);
        a.extend(nl::attr_u8(11, 1));
        let c = decode_coalesce(&reply(27, Get::Coalesce, "e", &a)).unwrap();
        assert_eq!((c.rx_usecs, c.adaptive_rx), (Some(8), Some(true)));
        let mut a = nl::attr_u8(3, 1);
        a.extend(nl::attr_u8(4, 0));
        let mut s = nl::attr(1, &[]);
        s.extend(nl::attr(2, &2u64.to_ne_bytes()));
        s.extend(nl::attr(3, &1u64.to_ne_bytes()));
        a.extend(nl::nest(5, &s));
        let p = decode_pause(&reply(27, Get::Pause, "e", &a)).unwrap();
        assert_eq!(
            (p.rx, p.tx, p.tx_frames, p.rx_frames),
            (Some(true), Some(false), Some(2), Some(1))
        );
    }

    #[test]
    fn a_reply_of_another_command_or_garbage_is_an_error() {
        let r = reply(27, Get::Rings, "e", &[]);
        assert!(decode_channels(&r).is_err());
        assert!(decode_rings(&nl::error_message(95, 1))
            .unwrap_err()
            .to_string()
            .contains("EOPNOTSUPP"));
        for cut in 0..r.len() {
            let _ = decode_rings(&r[..cut]);
        }
    }
}
