//! The properties the `phy_decoders` target checks, on bytes a kernel, a driver or a module
//! sends: a module's memory and ethtool's and rtnetlink's replies. One copy serves the
//! cargo-fuzz target (`fuzz/fuzz_targets/phy_decoders.rs`) and the stable regression test
//! `crates/linerate-phy/tests/fuzz_seeds.rs`, which includes this file with `#[path]`.
//!
//! Keep this file to `linerate_phy`, `linerate_facts` and `std`.

use linerate_facts::Module;
use linerate_phy::eeprom::{self, Image};
use linerate_phy::{ethtool, ioctl, nl, vf};

/// What a seed decoded to, for the regression test's coverage checks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PhyOutcome {
    /// A module decoded, and how many lanes of diagnostics it had.
    pub module_lanes: Option<usize>,
    /// A netlink reply decoded to typed data.
    pub replies: usize,
    /// An error was named.
    pub errors: usize,
}

fn finite(v: Option<f64>) {
    if let Some(x) = v {
        assert!(x.is_finite(), "a decoded figure is not finite: {x}");
    }
}

/// Every figure of a module is finite, and its lanes are numbered 1.. in order.
fn check_module(m: &Module) -> usize {
    finite(m.cable_length_m);
    finite(m.wavelength_nm);
    finite(m.max_gbps);
    let Some(d) = &m.diagnostics else { return 0 };
    finite(d.temperature_c);
    finite(d.supply_v);
    for (i, l) in d.lanes.iter().enumerate() {
        assert_eq!(usize::from(l.lane), i + 1, "lanes out of order");
        for v in [
            l.tx_bias_ma,
            l.tx_power_mw,
            l.rx_power_mw,
            l.tx_power_dbm,
            l.rx_power_dbm,
        ] {
            finite(v);
        }
        // dBm is 10·log10(mW), absent at 0 mW and below.
        if let (Some(mw), Some(dbm)) = (l.rx_power_mw, l.rx_power_dbm) {
            assert!(mw > 0.0 && (10f64.powf(dbm / 10.0) - mw).abs() <= mw * 1e-9);
        }
    }
    assert!(
        d.lanes.len() <= usize::from(m.lanes).max(1),
        "more lanes than the module has"
    );
    d.lanes.len()
}

/// A module image: decoding never panics; the plan asks only for halves the image lacks and
/// converges (reading what it asks for, blank, ends within a few rounds).
fn check_image(img: &Image, out: &mut PhyOutcome) {
    let mut img = img.clone();
    for _ in 0..6 {
        let want = eeprom::plan(&img);
        if want.is_empty() {
            break;
        }
        for r in want {
            assert!(!img.has(r), "the plan asks for a half it holds: {r:?}");
            img.insert(r, &[0u8; eeprom::HALF]).expect("a whole half");
        }
    }
    assert!(eeprom::plan(&img).is_empty(), "the plan does not converge");
    match eeprom::decode(&img) {
        Ok(m) => out.module_lanes = Some(check_module(&m)),
        Err(e) => {
            assert!(!e.to_string().is_empty());
            out.errors += 1;
        }
    }
}

/// `data`: a selector byte, then bytes for one decoder.
pub fn check_phy(data: &[u8]) -> PhyOutcome {
    let mut out = PhyOutcome::default();
    let Some((&sel, rest)) = data.split_first() else {
        return out;
    };
    match sel % 6 {
        // A flat dump (the ioctl's layout, `ethtool -m raw on`).
        0 => match Image::from_flat(rest) {
            Ok(img) => check_image(&img, &mut out),
            Err(e) => {
                assert!(!e.to_string().is_empty());
                out.errors += 1;
            }
        },
        // A hex dump (`ethtool -m hex on`, or halves opened by `@` lines).
        1 => match Image::from_hex(&String::from_utf8_lossy(rest)) {
            Ok(img) => check_image(&img, &mut out),
            Err(_) => out.errors += 1,
        },
        // Halves as ethtool netlink replies, each a u16 length and its bytes, taken in the
        // order the plan asks for them (what a live read gets).
        2 => {
            let mut img = Image::default();
            let mut at = rest;
            for _ in 0..16 {
                let Some(len) = at
                    .get(..2)
                    .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
                else {
                    break;
                };
                let Some(reply) = at.get(2..2 + len) else {
                    out.errors += 1;
                    break;
                };
                at = &at[2 + len..];
                let Some(r) = eeprom::plan(&img).into_iter().next() else {
                    break;
                };
                match ethtool::decode_eeprom(reply) {
                    Ok(d) => {
                        if img.insert(r, &d).is_err() {
                            out.errors += 1;
                        }
                    }
                    Err(_) => out.errors += 1,
                }
            }
            check_image(&img, &mut out);
        }
        // One ethtool GET reply through every decoder (each takes the message of its own
        // command, so a real reply decodes once; concatenated ones may decode more).
        3 => {
            let ok = [
                ethtool::decode_link_modes(rest).is_ok(),
                ethtool::decode_fec(rest).is_ok(),
                ethtool::decode_rings(rest).is_ok(),
                ethtool::decode_channels(rest).is_ok(),
                ethtool::decode_coalesce(rest).is_ok(),
                ethtool::decode_pause(rest).is_ok(),
                ethtool::decode_eeprom(rest).is_ok(),
            ];
            let n = ok.iter().filter(|x| **x).count();
            out.replies += n;
            out.errors += usize::from(n == 0);
            let _ = ethtool::family_id(rest);
            let _ = nl::messages(rest);
        }
        // An rtnetlink reply with VFs: indices ascend and are unique.
        4 => match vf::decode(rest) {
            Ok((_, vfs)) => {
                assert!(vfs.windows(2).all(|w| w[0].index <= w[1].index));
                out.replies += 1;
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                out.errors += 1;
            }
        },
        // The ioctls' structs: any length, never a panic.
        _ => {
            let decoded = [
                ioctl::rings(rest).is_some(),
                ioctl::channels(rest).is_some(),
                ioctl::pause(rest).is_some(),
                ioctl::coalesce(rest).is_some(),
                ioctl::fec(rest).is_some(),
                ioctl::modinfo(rest).is_some(),
            ];
            out.replies += decoded.iter().filter(|x| **x).count();
        }
    }
    out
}
