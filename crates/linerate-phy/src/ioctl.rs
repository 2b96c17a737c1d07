//! The SIOCETHTOOL structs of the queries a kernel without ethtool netlink (before 5.6)
//! answers, as plain bytes in and typed data out: `struct ethtool_ringparam`,
//! `ethtool_channels`, `ethtool_pauseparam`, `ethtool_coalesce`, `ethtool_fecparam` and
//! `ethtool_modinfo` (`include/uapi/linux/ethtool.h`). Every field is a native-endian u32
//! after the `cmd` word.

use linerate_facts::{Channels, Coalesce, Fec, FecMode, Pause, Rings};

/// Command numbers (`ETHTOOL_G*`) and each struct's size in bytes.
pub const GCOALESCE: u32 = 0x0e;
pub const GRINGPARAM: u32 = 0x10;
pub const SRINGPARAM: u32 = 0x11;
pub const GPAUSEPARAM: u32 = 0x12;
pub const GCHANNELS: u32 = 0x3c;
pub const GMODULEINFO: u32 = 0x42;
pub const GMODULEEEPROM: u32 = 0x43;
pub const GFECPARAM: u32 = 0x50;
pub const RINGPARAM_LEN: usize = 36;
pub const CHANNELS_LEN: usize = 36;
pub const PAUSEPARAM_LEN: usize = 16;
pub const COALESCE_LEN: usize = 92;
pub const FECPARAM_LEN: usize = 16;
pub const MODINFO_LEN: usize = 44;

/// The `n`th u32 of a struct (0 is `cmd`).
fn word(b: &[u8], n: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        b.get(n * 4..n * 4 + 4)?.try_into().ok()?,
    ))
}

/// A zeroed struct of `len` bytes with its command word set.
pub fn query(cmd: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    b[..4].copy_from_slice(&cmd.to_ne_bytes());
    b
}

pub fn rings(b: &[u8]) -> Option<Rings> {
    Some(Rings {
        rx_max: word(b, 1),
        rx_mini_max: word(b, 2),
        rx_jumbo_max: word(b, 3),
        tx_max: word(b, 4),
        rx: word(b, 5),
        rx_mini: word(b, 6),
        rx_jumbo: word(b, 7),
        tx: Some(word(b, 8)?),
        rx_buf_len: None,
        cqe_size: None,
    })
}

/// `ETHTOOL_SRINGPARAM`'s struct: the current rings with `rx` and `tx` replaced.
pub fn set_rings(current: &Rings, rx: Option<u32>, tx: Option<u32>) -> Vec<u8> {
    let mut b = query(SRINGPARAM, RINGPARAM_LEN);
    let vals = [
        current.rx_max,
        current.rx_mini_max,
        current.rx_jumbo_max,
        current.tx_max,
        rx.or(current.rx),
        current.rx_mini,
        current.rx_jumbo,
        tx.or(current.tx),
    ];
    for (i, v) in vals.iter().enumerate() {
        b[4 + i * 4..8 + i * 4].copy_from_slice(&v.unwrap_or(0).to_ne_bytes());
    }
    b
}

pub fn channels(b: &[u8]) -> Option<Channels> {
    Some(Channels {
        rx_max: word(b, 1),
        tx_max: word(b, 2),
        other_max: word(b, 3),
        combined_max: word(b, 4),
        rx: word(b, 5),
        tx: word(b, 6),
        other: word(b, 7),
        combined: Some(word(b, 8)?),
    })
}

pub fn pause(b: &[u8]) -> Option<Pause> {
    Some(Pause {
        autoneg: word(b, 1).map(|v| v != 0),
        rx: word(b, 2).map(|v| v != 0),
        tx: Some(word(b, 3)? != 0),
        rx_frames: None,
        tx_frames: None,
    })
}

pub fn coalesce(b: &[u8]) -> Option<Coalesce> {
    Some(Coalesce {
        rx_usecs: word(b, 1),
        rx_max_frames: word(b, 2),
        tx_usecs: word(b, 5),
        tx_max_frames: word(b, 6),
        adaptive_rx: word(b, 10).map(|v| v != 0),
        adaptive_tx: Some(word(b, 11)? != 0),
    })
}

/// The `ETHTOOL_FEC_*` bits: NONE 1, AUTO 2, OFF 4, RS 8, BASER 16, LLRS 32.
fn fec_modes(bits: u32) -> Vec<FecMode> {
    let mut v = Vec::new();
    for (bit, m) in [
        (1, FecMode::None),
        (2, FecMode::Auto),
        (4, FecMode::None),
        (8, FecMode::Rs),
        (16, FecMode::Baser),
        (32, FecMode::Llrs),
    ] {
        if bits & bit != 0 && !v.contains(&m) {
            v.push(m);
        }
    }
    v
}

pub fn fec(b: &[u8]) -> Option<Fec> {
    let active = word(b, 1)?;
    let configured = word(b, 2)?;
    Some(Fec {
        active: fec_modes(active).into_iter().find(|m| *m != FecMode::Auto),
        configured: fec_modes(configured),
        auto: Some(configured & 2 != 0),
        ..Fec::default()
    })
}

/// `struct ethtool_modinfo`: the module's type (`ETH_MODULE_SFF_8079` 1, `_8472` 2, `_8636`
/// 3, `_8436` 4) and the bytes its flat dump holds.
pub fn modinfo(b: &[u8]) -> Option<(u32, u32)> {
    Some((word(b, 1)?, word(b, 2)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn structs_decode_field_by_field() {
        let r = rings(&words(&[GRINGPARAM, 4096, 0, 0, 4096, 256, 0, 0, 256])).unwrap();
        assert_eq!(
            (r.rx, r.rx_max, r.tx, r.tx_max),
            (Some(256), Some(4096), Some(256), Some(4096))
        );
        let set = set_rings(&r, Some(4096), None);
        assert_eq!(rings(&set).unwrap().rx, Some(4096));
        assert_eq!(rings(&set).unwrap().tx, Some(256));
        assert_eq!(word(&set, 0), Some(SRINGPARAM));
        let c = channels(&words(&[GCHANNELS, 0, 0, 1, 63, 0, 0, 1, 8])).unwrap();
        assert_eq!((c.combined, c.combined_max), (Some(8), Some(63)));
        let p = pause(&words(&[GPAUSEPARAM, 0, 1, 1])).unwrap();
        assert_eq!((p.rx, p.tx), (Some(true), Some(true)));
        let mut co = vec![0u32; 23];
        co[0] = GCOALESCE;
        co[1] = 3;
        co[10] = 1;
        let c = coalesce(&words(&co)).unwrap();
        assert_eq!((c.rx_usecs, c.adaptive_rx), (Some(3), Some(true)));
        let f = fec(&words(&[GFECPARAM, 8, 2 | 8, 0])).unwrap();
        assert_eq!(f.active, Some(FecMode::Rs));
        assert_eq!(f.configured, [FecMode::Auto, FecMode::Rs]);
        assert_eq!(modinfo(&words(&[GMODULEINFO, 3, 640])), Some((3, 640)));
        // Short structs decode to nothing rather than panicking.
        for n in 0..36 {
            let _ = rings(&vec![0u8; n]);
            let _ = channels(&vec![0u8; n]);
            let _ = coalesce(&vec![0u8; n]);
        }
        assert!(rings(&[0u8; 12]).is_none());
    }
}
