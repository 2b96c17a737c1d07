//! QSFP+ and QSFP28: SFF-8636 Rev 2.10a, and SFF-8436 Rev 4.9 (the same lower page, page 00h
//! and page 03h for everything read here).

use linerate_facts::{dbm, Diagnostics, LaneDiagnostics, Media, Module, RxPowerMeasure};

use super::{blank, scale, sff8024, thresholds, Image, A0};

/// Byte 220: diagnostic monitoring type.
const DIAG_RX_AVERAGE: u8 = 0x08;
const DIAG_TX_POWER: u8 = 0x04;

fn revision(b: u8) -> Option<&'static str> {
    Some(match b {
        0x01 => "SFF-8436 Rev 4.8 or earlier",
        0x02 => "SFF-8436 Rev 4.8 or earlier, with some 8636 fields",
        0x03 => "SFF-8636 Rev 1.3 or earlier",
        0x04 => "SFF-8636 Rev 1.4",
        0x05 => "SFF-8636 Rev 1.5",
        0x06 => "SFF-8636 Rev 2.0",
        0x07 => "SFF-8636 Rev 2.5, 2.6 or 2.7",
        0x08 => "SFF-8636 Rev 2.8, 2.9 or 2.10",
        _ => return None,
    })
}

pub fn decode(img: &Image) -> Module {
    let p0 = img.page(A0, 0, 0);
    let mut m = blank();
    m.spec_revision = p0.byte(1).and_then(revision).map(str::to_string);
    m.connector = p0
        .byte(130)
        .and_then(sff8024::connector)
        .map(str::to_string);
    m.vendor = p0.text(148, 16);
    m.oui = p0.oui(165);
    m.part_number = p0.text(168, 16);
    m.revision = p0.text(184, 2);
    m.serial_number = p0.text(196, 16);
    m.date_code = p0.text(212, 8);
    m.lanes = 4;
    m.nominal_lane_mbd = match p0.byte(140) {
        Some(0xff) => p0.byte(222).map(|b| u32::from(b) * 250),
        Some(b) => Some(u32::from(b) * 100),
        None => None,
    }
    .filter(|r| *r > 0);
    let eth = p0.byte(131).unwrap_or(0);
    let ext = (eth & 0x80 != 0)
        .then(|| p0.byte(192))
        .flatten()
        .filter(|c| *c != 0);
    m.extended_compliance = ext;
    let tech = p0.byte(147).map(|b| b >> 4);
    let tech_media = tech.and_then(sff8024::transmitter).map(|(_, m)| m);
    let mut names = Vec::new();
    let mut media = Media::Unknown;
    if let Some((name, em)) = ext.and_then(sff8024::extended_compliance) {
        names.push(name.to_string());
        media = em;
    }
    for (bit, name, bm) in [
        (0x01, "40G active cable (XLPPI)", Media::ActiveOptical),
        (0x02, "40GBASE-LR4", Media::SinglemodeFiber),
        (0x04, "40GBASE-SR4", Media::MultimodeFiber),
        (0x08, "40GBASE-CR4", Media::PassiveCopper),
        (0x10, "10GBASE-SR", Media::MultimodeFiber),
        (0x20, "10GBASE-LR", Media::SinglemodeFiber),
        (0x40, "10GBASE-LRM", Media::MultimodeFiber),
    ] {
        if eth & bit != 0 {
            names.push(name.to_string());
            if media == Media::Unknown {
                media = bm;
            }
        }
    }
    // The transmitter technology says whether a copper cable is passive or active, which the
    // compliance codes (CR4 covers both) do not.
    match tech_media {
        Some(t @ (Media::PassiveCopper | Media::ActiveCopper)) => media = t,
        Some(t) if media == Media::Unknown => media = t,
        _ => {}
    }
    m.media = media;
    m.interfaces = names;
    let copper = matches!(media, Media::PassiveCopper | Media::ActiveCopper);
    for (addr, fibre, unit) in [
        (142, "smf", 1000.0),
        (143, "om3", 2.0),
        (144, "om2", 1.0),
        (145, "om1", 1.0),
    ] {
        if let Some(b) = p0.byte(addr).filter(|b| *b > 0) {
            m.reach_m.insert(fibre.into(), f64::from(b) * unit);
        }
    }
    // Byte 146: a cable assembly's length in metres, else OM4 in units of 2 m.
    if let Some(b) = p0.byte(146).filter(|b| *b > 0) {
        if copper || media == Media::ActiveOptical {
            m.cable_length_m = Some(f64::from(b));
        } else {
            m.reach_m.insert("om4".into(), f64::from(b) * 2.0);
        }
    }
    // Bytes 186-187: wavelength in units of 0.05 nm (copper attenuation on a cable).
    if !copper {
        m.wavelength_nm = p0.u16(186).filter(|w| *w > 0).map(|w| f64::from(w) * 0.05);
    }
    m.diagnostics = diagnostics(img, copper);
    if m.diagnostics.is_none() {
        m.diagnostics_note =
            Some("a passive copper cable: no monitors (byte 220 implements none)".into());
    } else if !img.page(A0, 3, 0).has_upper() {
        m.diagnostics_note = Some(
            "flat memory (byte 2 bit 2) or page 03h not read: no alarm and warning thresholds"
                .into(),
        );
    }
    m
}

fn diagnostics(img: &Image, copper: bool) -> Option<Diagnostics> {
    let p0 = img.page(A0, 0, 0);
    let diag = p0.byte(220).unwrap_or(0);
    if copper && diag == 0 {
        return None;
    }
    let p3 = img.page(A0, 3, 0);
    let p3 = p3.has_upper().then_some(p3);
    let tx_power = diag & DIAG_TX_POWER != 0;
    let lanes = (0..4u8)
        .map(|i| {
            let at = |base: usize| p0.u16(base + 2 * usize::from(i));
            let rx = at(34).map(scale::power_mw);
            let tx = at(50).filter(|_| tx_power).map(scale::power_mw);
            LaneDiagnostics {
                lane: i + 1,
                tx_bias_ma: at(42).map(scale::bias_ma),
                tx_power_mw: tx,
                tx_power_dbm: tx.and_then(dbm),
                rx_power_mw: rx,
                rx_power_dbm: rx.and_then(dbm),
            }
        })
        .collect();
    let th = |addr: usize, f: &dyn Fn(u16) -> f64| p3.as_ref().and_then(|p| thresholds(p, addr, f));
    Some(Diagnostics {
        temperature_c: p0.i16(22).map(scale::temperature_c),
        temperature_thresholds_c: th(128, &|r| scale::temperature_c(r.cast_signed())),
        supply_v: p0.u16(26).map(scale::supply_v),
        supply_thresholds_v: th(144, &scale::supply_v),
        lanes,
        tx_bias_thresholds_ma: th(184, &scale::bias_ma),
        tx_power_thresholds_mw: if tx_power {
            th(192, &scale::power_mw)
        } else {
            None
        },
        rx_power_thresholds_mw: th(176, &scale::power_mw),
        rx_power_measure: if diag & DIAG_RX_AVERAGE != 0 {
            RxPowerMeasure::Average
        } else {
            RxPowerMeasure::Oma
        },
    })
}
