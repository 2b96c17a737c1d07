//! QSFP-DD, OSFP, QSFP112 and other CMIS modules: OIF CMIS 4.0/5.x. Lower memory (module
//! state, temperature, Vcc, media type, applications), page 00h (identity), page 01h
//! (lengths, wavelength, banks, which monitors exist), page 02h (thresholds), page 11h per
//! bank of eight lanes (Tx power, bias, Rx power).

use linerate_facts::{dbm, Diagnostics, LaneDiagnostics, Media, Module, RxPowerMeasure};

use super::{blank, scale, sff8024, thresholds, Image, A0};

fn state(b: u8) -> Option<&'static str> {
    Some(match (b >> 1) & 7 {
        1 => "ModuleLowPwr",
        2 => "ModulePwrUp",
        3 => "ModuleReady",
        4 => "ModulePwrDn",
        5 => "ModuleFault",
        _ => return None,
    })
}

/// The applications the module advertises (lower bytes 86-117): host interface, and the
/// host and media lane counts.
fn applications(img: &Image) -> Vec<(u8, u8, u8)> {
    let lower = img.page(A0, 0, 0);
    let mut out = Vec::new();
    for k in 0..8 {
        let at = 86 + 4 * k;
        let Some(host) = lower.byte(at) else { break };
        if host == 0xff || host == 0 {
            break;
        }
        let lanes = lower.byte(at + 2).unwrap_or(0);
        out.push((host, lanes >> 4, lanes & 0x0f));
    }
    out
}

pub fn decode(img: &Image) -> Module {
    let lower = img.page(A0, 0, 0);
    let p0 = img.page(A0, 0, 0);
    let p1 = img.page(A0, 1, 0);
    let mut m = blank();
    m.spec_revision = lower
        .byte(1)
        .map(|b| format!("CMIS {}.{}", b >> 4, b & 0x0f));
    m.module_state = lower.byte(3).and_then(state).map(str::to_string);
    m.vendor = p0.text(129, 16);
    m.oui = p0.oui(145);
    m.part_number = p0.text(148, 16);
    m.revision = p0.text(164, 2);
    m.serial_number = p0.text(166, 16);
    m.date_code = p0.text(182, 8);
    m.connector = p0
        .byte(203)
        .and_then(sff8024::connector)
        .map(str::to_string);
    let apps = applications(img);
    m.interfaces = apps
        .iter()
        .filter_map(|(h, _, _)| sff8024::host_interface(*h).map(|(n, _)| n.to_string()))
        .collect();
    m.max_gbps = apps
        .iter()
        .filter_map(|(h, _, _)| sff8024::host_interface(*h).map(|(_, g)| g))
        .reduce(f64::max);
    let from_apps = apps
        .first()
        .map(|(_, host, media)| if *media > 0 { *media } else { *host })
        .filter(|l| *l > 0);
    m.lanes = from_apps.unwrap_or(match lower.byte(0) {
        Some(0x18 | 0x19) => 8,
        Some(0x1e | 0x1b) => 4,
        Some(0x1f) => 2,
        _ => 1,
    });
    // EepromPage 01h byte 142 bits 1-0: more than one bank of eight lanes (two or four).
    let banks = match p1.byte(142).map(|b| b & 3) {
        Some(1) => 2,
        Some(2) => 4,
        _ => 1,
    };
    if banks > 1 {
        m.lanes = m.lanes.max(8 * banks);
    }
    let tech = p0.byte(212).and_then(sff8024::transmitter);
    m.media = match lower.byte(85) {
        Some(1) => Media::MultimodeFiber,
        Some(2) => Media::SinglemodeFiber,
        Some(3) => Media::PassiveCopper,
        Some(4) => match tech.map(|(_, t)| t) {
            Some(Media::ActiveCopper | Media::PassiveCopper) => Media::ActiveCopper,
            _ => Media::ActiveOptical,
        },
        Some(5) => Media::BaseT,
        _ => tech.map_or(Media::Unknown, |(_, t)| t),
    };
    let cable = matches!(
        m.media,
        Media::PassiveCopper | Media::ActiveCopper | Media::ActiveOptical
    );
    // Byte 202: cable assembly length, bits 7-6 the multiplier (0.1, 1, 10, 100 m).
    if cable {
        m.cable_length_m = p0.byte(202).filter(|b| b & 0x3f != 0).map(|b| {
            let unit = [0.1, 1.0, 10.0, 100.0][usize::from(b >> 6)];
            f64::from(b & 0x3f) * unit
        });
    }
    if p1.has_upper() {
        // Byte 132: SMF length, bits 7-6 the multiplier (0.1 km or 1 km).
        if let Some(b) = p1.byte(132).filter(|b| b & 0x3f != 0) {
            let unit = if b >> 6 == 0 { 100.0 } else { 1000.0 };
            m.reach_m.insert("smf".into(), f64::from(b & 0x3f) * unit);
        }
        for (addr, fibre, unit) in [
            (133, "om5", 2.0),
            (134, "om4", 2.0),
            (135, "om3", 2.0),
            (136, "om2", 1.0),
        ] {
            if let Some(b) = p1.byte(addr).filter(|b| *b > 0) {
                m.reach_m.insert(fibre.into(), f64::from(b) * unit);
            }
        }
        if !cable || m.media == Media::ActiveOptical {
            m.wavelength_nm = p1.u16(138).filter(|w| *w > 0).map(|w| f64::from(w) * 0.05);
        }
    }
    let flat = lower.byte(2).is_some_and(|b| b & 0x80 != 0);
    m.diagnostics = Some(diagnostics(img, m.lanes));
    if flat {
        m.diagnostics_note = Some(
            "flat memory (byte 2 bit 7): module temperature and voltage only, no lane monitors or thresholds"
                .into(),
        );
    } else if !p1.has_upper() || !img.page(A0, 0x11, 0).has_upper() {
        m.diagnostics_note = Some("pages 01h, 02h or 11h were not read".into());
    }
    m
}

fn diagnostics(img: &Image, lanes: u8) -> Diagnostics {
    let lower = img.page(A0, 0, 0);
    let p1 = img.page(A0, 1, 0);
    let p2 = img.page(A0, 2, 0);
    let p2 = p2.has_upper().then_some(p2);
    // EepromPage 01h byte 160: which lane monitors exist, and the bias monitor's multiplier. The
    // spec scales the bias LSB by it (2 µA × 1, 2 or 4); ethtool 6.x shifts the other way.
    let adv = p1.byte(160).unwrap_or(0);
    let (has_bias, has_tx, has_rx) = (adv & 1 != 0, adv & 2 != 0, adv & 4 != 0);
    let bias_mul = f64::from(1u8 << ((adv >> 3) & 3).min(2));
    let bias = move |raw: u16| scale::bias_ma(raw) * bias_mul;
    let mut out = Vec::new();
    for lane in 0..lanes {
        let bank = lane / 8;
        let p11 = img.page(A0, 0x11, bank);
        if !p11.has_upper() {
            break;
        }
        let at = |base: usize| p11.u16(base + 2 * usize::from(lane % 8));
        let tx = at(154).filter(|_| has_tx).map(scale::power_mw);
        let rx = at(186).filter(|_| has_rx).map(scale::power_mw);
        out.push(LaneDiagnostics {
            lane: lane + 1,
            tx_bias_ma: at(170).filter(|_| has_bias).map(bias),
            tx_power_mw: tx,
            tx_power_dbm: tx.and_then(dbm),
            rx_power_mw: rx,
            rx_power_dbm: rx.and_then(dbm),
        });
    }
    let th = |addr: usize, f: &dyn Fn(u16) -> f64| p2.as_ref().and_then(|p| thresholds(p, addr, f));
    Diagnostics {
        temperature_c: lower.i16(14).map(scale::temperature_c),
        temperature_thresholds_c: th(128, &|r| scale::temperature_c(r.cast_signed())),
        supply_v: lower.u16(16).map(scale::supply_v),
        supply_thresholds_v: th(136, &scale::supply_v),
        lanes: out,
        tx_bias_thresholds_ma: if has_bias { th(184, &bias) } else { None },
        tx_power_thresholds_mw: if has_tx {
            th(176, &scale::power_mw)
        } else {
            None
        },
        rx_power_thresholds_mw: if has_rx {
            th(192, &scale::power_mw)
        } else {
            None
        },
        // EepromPage 01h byte 151 bit 4: the Rx monitor measures average power (else OMA).
        rx_power_measure: if p1.byte(151).is_some_and(|b| b & 0x10 != 0) {
            RxPowerMeasure::Average
        } else {
            RxPowerMeasure::Oma
        },
    }
}
