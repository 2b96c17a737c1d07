//! SFP, SFP+ and SFP28: SFF-8472 Rev 12.x (identity at A0h per SFF-8079, diagnostics at A2h).

use linerate_facts::{
    dbm, Diagnostics, LaneDiagnostics, Media, Module, RxPowerMeasure, Thresholds,
};

use super::{blank, scale, sff8024, EepromPage, Image, A0, A2};

/// Byte 92: diagnostic monitoring type.
const DDM_IMPLEMENTED: u8 = 0x40;
const DDM_EXTERNAL_CAL: u8 = 0x10;
const DDM_RX_AVERAGE: u8 = 0x08;

pub fn decode(img: &Image) -> Module {
    let a0 = img.page(A0, 0, 0);
    let mut m = blank();
    m.vendor = a0.text(20, 16);
    m.oui = a0.oui(37);
    m.part_number = a0.text(40, 16);
    m.revision = a0.text(56, 4);
    m.serial_number = a0.text(68, 16);
    m.date_code = a0.text(84, 8);
    m.connector = a0.byte(2).and_then(sff8024::connector).map(str::to_string);
    m.lanes = 1;
    m.nominal_lane_mbd = match a0.byte(12) {
        Some(0xff) => a0.byte(66).map(|b| u32::from(b) * 250),
        Some(b) => Some(u32::from(b) * 100),
        None => None,
    }
    .filter(|r| *r > 0);
    let ext = a0.byte(36).filter(|c| *c != 0);
    m.extended_compliance = ext;
    let cable = a0.byte(8).unwrap_or(0);
    let passive = cable & 0x04 != 0;
    let active = cable & 0x08 != 0;
    let (media, interfaces) = media(&a0, ext, passive, active);
    m.media = media;
    m.interfaces = interfaces;
    let lengths = [
        (14, "smf", 1000.0),
        (15, "smf", 100.0),
        (16, "om2", 10.0),
        (17, "om1", 10.0),
        (19, "om3", 10.0),
    ];
    for (addr, fibre, unit) in lengths {
        if let Some(b) = a0.byte(addr).filter(|b| *b > 0) {
            let metres = f64::from(b) * unit;
            let e = m.reach_m.entry(fibre.to_string()).or_insert(0.0);
            *e = e.max(metres);
        }
    }
    // Byte 18: copper or active cable length in metres, else OM4 in units of 10 m.
    if let Some(b) = a0.byte(18).filter(|b| *b > 0) {
        if passive || active || media == Media::ActiveOptical {
            m.cable_length_m = Some(f64::from(b));
        } else {
            m.reach_m.insert("om4".into(), f64::from(b) * 10.0);
        }
    }
    // Bytes 60-61: the laser's wavelength; a cable keeps compliance bits there.
    if !passive && !active {
        m.wavelength_nm = a0.u16(60).filter(|w| *w > 0).map(f64::from);
    }
    let ddm = a0.byte(92).unwrap_or(0);
    if ddm & DDM_IMPLEMENTED == 0 {
        m.diagnostics_note = Some(
            "the module implements no digital diagnostics (SFF-8472 byte 92 bit 6 clear)".into(),
        );
    } else {
        let a2 = img.page(A2, 0, 0);
        if a2.byte(96).is_some() {
            m.diagnostics = Some(diagnostics(&a2, ddm));
        } else {
            m.diagnostics_note = Some("the diagnostics page (A2h) was not read".into());
        }
    }
    m
}

/// The media and the interfaces an SFP's codes name: the extended compliance code first (it
/// is the most specific), then the SFP+ cable bits, then 10G and 1G Ethernet codes.
fn media(
    a0: &EepromPage<'_>,
    ext: Option<u8>,
    passive: bool,
    active: bool,
) -> (Media, Vec<String>) {
    let mut names = Vec::new();
    let mut media = Media::Unknown;
    if let Some((name, m)) = ext.and_then(sff8024::extended_compliance) {
        names.push(name.to_string());
        media = m;
    }
    if passive {
        names.push("passive copper cable".into());
        media = Media::PassiveCopper;
    } else if active && media == Media::Unknown {
        names.push("active cable".into());
        media = Media::ActiveCopper;
    }
    let ten_g = a0.byte(3).unwrap_or(0);
    for (bit, name, m) in [
        (0x10, "10GBASE-SR", Media::MultimodeFiber),
        (0x20, "10GBASE-LR", Media::SinglemodeFiber),
        (0x40, "10GBASE-LRM", Media::MultimodeFiber),
        (0x80, "10GBASE-ER", Media::SinglemodeFiber),
    ] {
        if ten_g & bit != 0 {
            names.push(name.to_string());
            if media == Media::Unknown {
                media = m;
            }
        }
    }
    let gbe = a0.byte(6).unwrap_or(0);
    for (bit, name, m) in [
        (0x01, "1000BASE-SX", Media::MultimodeFiber),
        (0x02, "1000BASE-LX", Media::SinglemodeFiber),
        (0x04, "1000BASE-CX", Media::PassiveCopper),
        (0x08, "1000BASE-T", Media::BaseT),
        (0x10, "100BASE-LX/LX10", Media::SinglemodeFiber),
        (0x20, "100BASE-FX", Media::MultimodeFiber),
        (0x40, "BASE-BX10", Media::SinglemodeFiber),
        (0x80, "BASE-PX", Media::SinglemodeFiber),
    ] {
        if gbe & bit != 0 {
            names.push(name.to_string());
            if media == Media::Unknown {
                media = m;
            }
        }
    }
    (media, names)
}

/// External calibration constants (A2h bytes 56-91): Rx power polynomial, then slope (u8.8)
/// and offset (s16) for bias, Tx power, temperature and Vcc.
struct Calibration {
    rx: [f64; 5],
    bias: (f64, f64),
    tx: (f64, f64),
    temp: (f64, f64),
    vcc: (f64, f64),
}

impl Calibration {
    fn read(a2: &EepromPage<'_>) -> Option<Self> {
        let float = |addr: usize| -> Option<f64> {
            let b: [u8; 4] = a2.bytes(addr, 4)?.try_into().ok()?;
            let v = f64::from(f32::from_be_bytes(b));
            Some(if v.is_finite() { v } else { 0.0 })
        };
        let pair = |addr: usize| -> Option<(f64, f64)> {
            Some((
                f64::from(a2.u16(addr)?) / 256.0,
                f64::from(a2.i16(addr + 2)?),
            ))
        };
        // Indexed by power of the A/D value: Rx_PWR(0) is at 72, Rx_PWR(4) at 56.
        let rx = [float(72)?, float(68)?, float(64)?, float(60)?, float(56)?];
        Some(Self {
            rx,
            bias: pair(76)?,
            tx: pair(80)?,
            temp: pair(84)?,
            vcc: pair(88)?,
        })
    }

    fn linear((slope, offset): (f64, f64), raw: f64) -> f64 {
        slope * raw + offset
    }

    /// Rx power in 0.1 µW from the A/D value: Σ Rx_PWR(i)·raw^i (SFF-8472 §9.3).
    fn rx(&self, raw: u16) -> f64 {
        let r = f64::from(raw);
        self.rx
            .iter()
            .enumerate()
            .map(|(i, c)| c * r.powi(i32::try_from(i).unwrap_or(0)))
            .sum::<f64>()
            .max(0.0)
    }
}

fn diagnostics(a2: &EepromPage<'_>, ddm: u8) -> Diagnostics {
    let cal = (ddm & DDM_EXTERNAL_CAL != 0)
        .then(|| Calibration::read(a2))
        .flatten();
    let temp = |raw: u16| -> f64 {
        let r = f64::from(raw.cast_signed());
        match &cal {
            Some(c) => Calibration::linear(c.temp, r) / 256.0,
            None => r / 256.0,
        }
    };
    let vcc = |raw: u16| match &cal {
        Some(c) => Calibration::linear(c.vcc, f64::from(raw)) / 10_000.0,
        None => scale::supply_v(raw),
    };
    let bias = |raw: u16| match &cal {
        Some(c) => Calibration::linear(c.bias, f64::from(raw)) * 0.002,
        None => scale::bias_ma(raw),
    };
    let tx = |raw: u16| match &cal {
        Some(c) => Calibration::linear(c.tx, f64::from(raw)) / 10_000.0,
        None => scale::power_mw(raw),
    };
    let rx = |raw: u16| match &cal {
        Some(c) => c.rx(raw) / 10_000.0,
        None => scale::power_mw(raw),
    };
    let th = |addr: usize, f: &dyn Fn(u16) -> f64| -> Option<Thresholds> {
        super::thresholds(a2, addr, f)
    };
    let tx_mw = a2.u16(102).map(tx);
    let rx_mw = a2.u16(104).map(rx);
    Diagnostics {
        temperature_c: a2.u16(96).map(temp),
        temperature_thresholds_c: th(0, &temp),
        supply_v: a2.u16(98).map(vcc),
        supply_thresholds_v: th(8, &vcc),
        lanes: vec![LaneDiagnostics {
            lane: 1,
            tx_bias_ma: a2.u16(100).map(bias),
            tx_power_mw: tx_mw,
            tx_power_dbm: tx_mw.and_then(dbm),
            rx_power_mw: rx_mw,
            rx_power_dbm: rx_mw.and_then(dbm),
        }],
        tx_bias_thresholds_ma: th(16, &bias),
        tx_power_thresholds_mw: th(24, &tx),
        rx_power_thresholds_mw: th(32, &rx),
        rx_power_measure: if ddm & DDM_RX_AVERAGE != 0 {
            RxPowerMeasure::Average
        } else {
            RxPowerMeasure::Oma
        },
    }
}
