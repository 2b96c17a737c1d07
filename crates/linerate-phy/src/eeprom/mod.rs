//! A pluggable module's memory, and its decoders: SFF-8472 (SFP), SFF-8636 and SFF-8436
//! (QSFP), CMIS (QSFP-DD, OSFP, QSFP112). Pure: the memory arrives as 128-byte halves of
//! pages ([`Image`]), read by the caller over ethtool netlink (by page and bank) or taken from
//! the ioctl's flat dump ([`Image::from_flat`]); [`plan`] says what to read next.
//!
//! Monitor units are the specifications' (and ethtool's, `sff-common.c`): big-endian u16;
//! temperature signed in 1/256 °C, supply voltage in 100 µV, laser bias in 2 µA, optical
//! power in 0.1 µW.

mod cmis;
pub mod sff8024;
mod sff8472;
mod sff8636;

use std::collections::BTreeMap;

use linerate_facts::{Module, ModuleStandard, Thresholds};

/// I2C address of a module's memory (SFF-8472's A0h), and of SFF-8472's diagnostics (A2h).
pub const A0: u8 = 0x50;
pub const A2: u8 = 0x51;
/// Bytes in half a page, the most one netlink read returns (`ETHTOOL_A_MODULE_EEPROM_LENGTH`
/// is capped at 128 and may not cross the half at 128).
pub const HALF: usize = 128;

/// One read of the module's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Read {
    pub i2c: u8,
    pub page: u8,
    pub bank: u8,
    /// 0 (the lower half, the same memory whatever the page) or 128 (the page's upper half).
    pub offset: u8,
    pub length: u8,
}

impl Read {
    /// Half a page: the lower half of `i2c` (`upper` false, page and bank 0), or the upper
    /// half of `page`/`bank`.
    pub fn half(i2c: u8, page: u8, bank: u8, upper: bool) -> Self {
        if upper {
            Self {
                i2c,
                page,
                bank,
                offset: 128,
                length: 128,
            }
        } else {
            Self {
                i2c,
                page: 0,
                bank: 0,
                offset: 0,
                length: 128,
            }
        }
    }

    /// Its name in the capture files of a `--root` tree: `a0-p00-b0-lower`.
    pub fn file_name(&self) -> String {
        format!(
            "{:02x}-p{:02x}-b{}-{}",
            self.i2c,
            self.page,
            self.bank,
            if self.offset >= 128 { "upper" } else { "lower" }
        )
    }
}

/// Why a module's memory could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EepromError {
    #[error("no data: the module's lower memory (I2C 0x50, bytes 0-127) was not read")]
    NoLowerPage,
    #[error("the module answered with identifier 0x{0:02x}, which is no SFF-8024 module linerate decodes (expected SFP 0x03, QSFP 0x0c/0x0d/0x11, or CMIS 0x18/0x19/0x1b/0x1e/0x1f/0x20)")]
    UnknownIdentifier(u8),
    #[error("{what}: expected {expected} bytes, got {got}")]
    Truncated {
        what: String,
        expected: usize,
        got: usize,
    },
    #[error("every byte of the module's memory reads 0x{0:02x}: nothing answers at I2C 0x50 (an empty cage, or a module that does not respond)")]
    Blank(u8),
    #[error("a flat dump of {0} bytes matches no layout (256, 512 or 640 bytes)")]
    FlatLength(usize),
    #[error("line {line}: {what}")]
    Hex { line: usize, what: String },
}

/// The halves of pages read so far, by (I2C address, page, bank, upper half).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Image {
    halves: BTreeMap<(u8, u8, u8, bool), Vec<u8>>,
}

impl Image {
    /// Keep the bytes one read returned.
    pub fn insert(&mut self, r: Read, data: &[u8]) -> Result<(), EepromError> {
        if data.len() != HALF || usize::from(r.length) != HALF {
            return Err(EepromError::Truncated {
                what: format!("{} read", r.file_name()),
                expected: HALF,
                got: data.len(),
            });
        }
        let key = (r.i2c, r.page, r.bank, r.offset >= 128);
        let key = if key.3 { key } else { (r.i2c, 0, 0, false) };
        self.halves.insert(key, data.to_vec());
        Ok(())
    }

    pub fn has(&self, r: Read) -> bool {
        let upper = r.offset >= 128;
        let key = if upper {
            (r.i2c, r.page, r.bank, true)
        } else {
            (r.i2c, 0, 0, false)
        };
        self.halves.contains_key(&key)
    }

    /// Every half held, with the read that gives it.
    pub fn reads(&self) -> Vec<(Read, &[u8])> {
        self.halves
            .iter()
            .map(|((i2c, page, bank, upper), d)| {
                (Read::half(*i2c, *page, *bank, *upper), d.as_slice())
            })
            .collect()
    }

    /// 128 bytes: the lower half of `i2c`, or the upper half of `page` (bank `bank`).
    fn half(&self, i2c: u8, page: u8, bank: u8, upper: bool) -> Option<&[u8]> {
        let key = if upper {
            (i2c, page, bank, true)
        } else {
            (i2c, 0, 0, false)
        };
        self.halves.get(&key).map(Vec::as_slice)
    }

    /// A view of one page (0-255): its lower half is the shared one.
    pub fn page(&self, i2c: u8, page: u8, bank: u8) -> EepromPage<'_> {
        EepromPage {
            lower: self.half(i2c, 0, 0, false),
            upper: self.half(i2c, page, bank, true),
        }
    }

    /// A flat dump, as the ioctl (`ETHTOOL_GMODULEEEPROM`) and `ethtool -m raw on` lay it out:
    /// SFF-8472 is A0h (256 bytes) then A2h (256); SFF-8636/8436 and CMIS are the lower half,
    /// then page N's upper half at 128·N + 128 (so 640 bytes reach page 3).
    pub fn from_flat(raw: &[u8]) -> Result<Self, EepromError> {
        let mut img = Self::default();
        if raw.len() < 2 * HALF || !raw.len().is_multiple_of(HALF) || raw.len() > 16 * HALF {
            return Err(EepromError::FlatLength(raw.len()));
        }
        let sfp = matches!(raw[0], 0x01..=0x03);
        for (i, chunk) in raw.chunks_exact(HALF).enumerate() {
            let r = if sfp {
                match i {
                    0 | 1 => Read::half(A0, 0, 0, i == 1),
                    2 | 3 => Read::half(A2, 0, 0, i == 3),
                    _ => return Err(EepromError::FlatLength(raw.len())),
                }
            } else if i == 0 {
                Read::half(A0, 0, 0, false)
            } else {
                Read::half(A0, u8::try_from(i - 1).unwrap_or(u8::MAX), 0, true)
            };
            img.insert(r, chunk)?;
        }
        Ok(img)
    }

    /// A dump written as hex: `ethtool -m IFACE hex on` output (`0x0000:  03 04 ...`), or bare
    /// hex digits, laid out flat ([`Image::from_flat`]); or, for pages a flat dump cannot
    /// reach (CMIS page 11h and its banks), halves each opened by a line `@ 50-p11-b0-upper`
    /// (a [`Read::file_name`]) and holding its 128 bytes. `#` starts a comment line.
    pub fn from_hex(text: &str) -> Result<Self, EepromError> {
        let mut flat = Vec::new();
        let mut halves: Vec<(Read, Vec<u8>)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty()
                || line.starts_with('#')
                || line.starts_with("Offset")
                || line.starts_with("---")
            {
                continue;
            }
            if let Some(name) = line.strip_prefix('@') {
                let r = parse_half(name.trim()).ok_or_else(|| EepromError::Hex {
                    line: n + 1,
                    what: format!(
                        "`{}` names no half page (expected `50-p11-b0-upper`)",
                        name.trim()
                    ),
                })?;
                halves.push((r, Vec::new()));
                continue;
            }
            let data = match line.split_once(':') {
                Some((off, rest)) if off.trim_start().starts_with("0x") => rest,
                _ => line,
            };
            // Characters, not bytes: a multi-byte character is named, never sliced through
            // (the fuzzer's first find).
            let digits: Vec<char> = data.chars().filter(|c| !c.is_whitespace()).collect();
            if !digits.len().is_multiple_of(2) {
                return Err(EepromError::Hex {
                    line: n + 1,
                    what: "an odd number of hex digits".into(),
                });
            }
            let out = match halves.last_mut() {
                Some((_, v)) => v,
                None => &mut flat,
            };
            for pair in digits.chunks_exact(2) {
                match (pair[0].to_digit(16), pair[1].to_digit(16)) {
                    (Some(hi), Some(lo)) => out.push(u8::try_from(hi * 16 + lo).unwrap_or(0)),
                    _ => {
                        return Err(EepromError::Hex {
                            line: n + 1,
                            what: format!("`{}{}` is not a hex byte", pair[0], pair[1]),
                        })
                    }
                }
            }
        }
        if halves.is_empty() {
            return Self::from_flat(&flat);
        }
        if !flat.is_empty() {
            return Err(EepromError::Hex {
                line: 1,
                what: "bytes before the first `@` half".into(),
            });
        }
        let mut img = Self::default();
        for (r, data) in halves {
            img.insert(r, &data)?;
        }
        Ok(img)
    }
}

/// `50-p11-b0-upper` back into its read.
fn parse_half(name: &str) -> Option<Read> {
    let mut it = name.split('-');
    let i2c = u8::from_str_radix(it.next()?, 16).ok()?;
    let page = u8::from_str_radix(it.next()?.strip_prefix('p')?, 16).ok()?;
    let bank = it.next()?.strip_prefix('b')?.parse().ok()?;
    let upper = match it.next()? {
        "upper" => true,
        "lower" => false,
        _ => return None,
    };
    it.next()
        .is_none()
        .then(|| Read::half(i2c, page, bank, upper))
}

/// A page of 256 bytes, either half possibly missing.
#[derive(Debug, Clone, Copy)]
pub struct EepromPage<'a> {
    lower: Option<&'a [u8]>,
    upper: Option<&'a [u8]>,
}

impl<'a> EepromPage<'a> {
    pub fn has_upper(&self) -> bool {
        self.upper.is_some()
    }

    pub fn byte(&self, addr: usize) -> Option<u8> {
        if addr < HALF {
            self.lower?.get(addr).copied()
        } else {
            self.upper?.get(addr - HALF).copied()
        }
    }

    pub fn bytes(&self, addr: usize, len: usize) -> Option<&'a [u8]> {
        if addr < HALF && addr + len <= HALF {
            self.lower?.get(addr..addr + len)
        } else if addr >= HALF {
            self.upper?.get(addr - HALF..addr - HALF + len)
        } else {
            None
        }
    }

    pub fn u16(&self, addr: usize) -> Option<u16> {
        Some(u16::from_be_bytes(self.bytes(addr, 2)?.try_into().ok()?))
    }

    pub fn i16(&self, addr: usize) -> Option<i16> {
        self.u16(addr).map(u16::cast_signed)
    }

    /// A space-padded ASCII field, trimmed; None when empty or not text.
    pub fn text(&self, addr: usize, len: usize) -> Option<String> {
        let b = self.bytes(addr, len)?;
        let s: String = b
            .iter()
            .map(|&c| {
                if (0x20..0x7f).contains(&c) {
                    c as char
                } else {
                    ' '
                }
            })
            .collect();
        let s = s.trim().to_string();
        (!s.is_empty()).then_some(s)
    }

    /// `00:02:c9`
    pub fn oui(&self, addr: usize) -> Option<String> {
        let b = self.bytes(addr, 3)?;
        Some(format!("{:02x}:{:02x}:{:02x}", b[0], b[1], b[2]))
    }
}

/// Monitor scales (SFF-8472 §9.2, SFF-8636 §6.2.4, CMIS §8.2.5).
pub mod scale {
    pub fn temperature_c(raw: i16) -> f64 {
        f64::from(raw) / 256.0
    }
    pub fn supply_v(raw: u16) -> f64 {
        f64::from(raw) / 10_000.0
    }
    pub fn bias_ma(raw: u16) -> f64 {
        f64::from(raw) * 0.002
    }
    pub fn power_mw(raw: u16) -> f64 {
        f64::from(raw) / 10_000.0
    }
}

/// Four thresholds at `addr`: high alarm, low alarm, high warning, low warning, each a u16 (or
/// i16 for temperature) converted by `f`.
fn thresholds(p: &EepromPage<'_>, addr: usize, f: impl Fn(u16) -> f64) -> Option<Thresholds> {
    Some(Thresholds {
        high_alarm: f(p.u16(addr)?),
        low_alarm: f(p.u16(addr + 2)?),
        high_warning: f(p.u16(addr + 4)?),
        low_warning: f(p.u16(addr + 6)?),
    })
}

/// The reads still needed to decode the module, given what `img` holds: the lower memory
/// first, then what its identifier and paging bits call for. Call again after each round
/// until it is empty (at most three rounds: lower, then pages, then CMIS banks).
pub fn plan(img: &Image) -> Vec<Read> {
    let lower = img.page(A0, 0, 0);
    let (Some(id), Some(rev)) = (lower.byte(0), lower.byte(1)) else {
        return vec![Read::half(A0, 0, 0, false)];
    };
    let Some((_, standard)) = sff8024::identifier(id, rev) else {
        return Vec::new();
    };
    // SFF-8472 keeps everything in A0h's lower half (bytes 128-255 are vendor space); the
    // others keep their identity in page 00h's upper half.
    let mut want = Vec::new();
    if standard != ModuleStandard::Sff8472 {
        want.push(Read::half(A0, 0, 0, true));
    }
    match standard {
        ModuleStandard::Sff8472 => {
            // Byte 92 bit 6: digital diagnostics implemented, at A2h.
            if lower.byte(92).is_some_and(|b| b & 0x40 != 0) {
                want.push(Read::half(A2, 0, 0, false));
            }
        }
        ModuleStandard::Sff8636 | ModuleStandard::Sff8436 => {
            // Byte 2 bit 2: flat memory, no page 03h of thresholds.
            if lower.byte(2).is_some_and(|b| b & 0x04 == 0) {
                want.push(Read::half(A0, 3, 0, true));
            }
        }
        ModuleStandard::Cmis => {
            // Byte 2 bit 7: flat memory (passive copper), no pages 01h, 02h, 11h.
            if lower.byte(2).is_some_and(|b| b & 0x80 == 0) {
                want.push(Read::half(A0, 1, 0, true));
                want.push(Read::half(A0, 2, 0, true));
                want.push(Read::half(A0, 0x11, 0, true));
                // EepromPage 01h byte 142 bits 1-0: banks beyond 0 (one more, or three more).
                let p1 = img.page(A0, 1, 0);
                let extra = match p1.byte(142).map(|b| b & 3) {
                    Some(1) => 1,
                    Some(2) => 3,
                    _ => 0,
                };
                for bank in 1..=extra {
                    want.push(Read::half(A0, 0x11, bank, true));
                }
            }
        }
    }
    want.retain(|r| !img.has(*r));
    want
}

/// Decode the module in `img`.
pub fn decode(img: &Image) -> Result<Module, EepromError> {
    let lower = img.page(A0, 0, 0);
    let id = lower.byte(0).ok_or(EepromError::NoLowerPage)?;
    if let Some(b) = lower.bytes(0, HALF) {
        if b.iter().all(|&x| x == b[0]) && (b[0] == 0x00 || b[0] == 0xff) {
            return Err(EepromError::Blank(b[0]));
        }
    }
    let rev = lower.byte(1).unwrap_or(0);
    let (form, standard) =
        sff8024::identifier(id, rev).ok_or(EepromError::UnknownIdentifier(id))?;
    let upper = img.page(A0, 0, 0);
    if standard != ModuleStandard::Sff8472 && !upper.has_upper() {
        return Err(EepromError::Truncated {
            what: "the module's page 00h (bytes 128-255)".into(),
            expected: HALF,
            got: 0,
        });
    }
    let mut m = match standard {
        ModuleStandard::Sff8472 => sff8472::decode(img),
        ModuleStandard::Sff8636 | ModuleStandard::Sff8436 => sff8636::decode(img),
        ModuleStandard::Cmis => cmis::decode(img),
    };
    m.standard = standard;
    m.identifier = id;
    m.form_factor = form.to_string();
    Ok(m)
}

/// A module with nothing decoded yet, for the decoders to fill.
fn blank() -> Module {
    Module {
        standard: ModuleStandard::Sff8472,
        identifier: 0,
        form_factor: String::new(),
        vendor: None,
        part_number: None,
        serial_number: None,
        revision: None,
        date_code: None,
        oui: None,
        connector: None,
        media: linerate_facts::Media::Unknown,
        interfaces: Vec::new(),
        extended_compliance: None,
        cable_length_m: None,
        reach_m: BTreeMap::new(),
        wavelength_nm: None,
        lanes: 1,
        nominal_lane_mbd: None,
        max_gbps: None,
        module_state: None,
        spec_revision: None,
        diagnostics: None,
        diagnostics_note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_follows_the_identifier_and_the_paging_bits() {
        let mut img = Image::default();
        assert_eq!(plan(&img), vec![Read::half(A0, 0, 0, false)]);
        // An SFP with diagnostics (byte 92 bit 6).
        let mut lower = vec![0u8; 128];
        lower[0] = 0x03;
        lower[92] = 0x68;
        img.insert(Read::half(A0, 0, 0, false), &lower).unwrap();
        assert_eq!(plan(&img), vec![Read::half(A2, 0, 0, false)]);
        // A paged CMIS module with two banks asks for page 11h of bank 1 once it has page 01h.
        let mut img = Image::default();
        let mut lower = vec![0u8; 128];
        lower[0] = 0x18;
        lower[1] = 0x40;
        img.insert(Read::half(A0, 0, 0, false), &lower).unwrap();
        assert_eq!(plan(&img).len(), 4);
        let mut p1 = vec![0u8; 128];
        p1[142 - 128] = 1;
        img.insert(Read::half(A0, 1, 0, true), &p1).unwrap();
        assert!(plan(&img).contains(&Read::half(A0, 0x11, 1, true)));
        // Flat CMIS memory (passive copper): page 00h only.
        let mut img = Image::default();
        lower[2] = 0x80;
        img.insert(Read::half(A0, 0, 0, false), &lower).unwrap();
        assert_eq!(plan(&img), vec![Read::half(A0, 0, 0, true)]);
        // An identifier nobody decodes: nothing more to read.
        let mut img = Image::default();
        lower[0] = 0x77;
        img.insert(Read::half(A0, 0, 0, false), &lower).unwrap();
        assert!(plan(&img).is_empty());
    }

    #[test]
    fn flat_layouts_and_hex() {
        let mut raw = vec![0u8; 640];
        raw[0] = 0x11;
        raw[512] = 0x50;
        let img = Image::from_flat(&raw).unwrap();
        assert_eq!(img.page(A0, 3, 0).byte(128), Some(0x50));
        let mut sfp = vec![0u8; 512];
        sfp[0] = 0x03;
        sfp[256 + 96] = 0x22;
        let img = Image::from_flat(&sfp).unwrap();
        assert_eq!(img.page(A2, 0, 0).byte(96), Some(0x22));
        assert!(matches!(
            Image::from_flat(&[0u8; 300]),
            Err(EepromError::FlatLength(300))
        ));
        let text = "Offset\t\tValues\n------\t\t------\n0x0000:\t\t11 07 02 00 00 00 00 00 00 00 00 00 00 00 00 00\n";
        let e = Image::from_hex(text).unwrap_err();
        assert!(matches!(e, EepromError::FlatLength(16)), "{e}");
        assert!(Image::from_hex("0x0000: 0g").is_err());
        // A multi-byte character where a digit belongs is named, not sliced through.
        let e = Image::from_hex("0x0000: \u{e9}0 11").unwrap_err();
        assert!(e.to_string().contains("not a hex byte"), "{e}");
    }

    #[test]
    fn blank_and_unknown_modules_are_named() {
        let img = Image::from_flat(&[0xff; 256]).unwrap();
        assert_eq!(decode(&img), Err(EepromError::Blank(0xff)));
        let mut raw = vec![0u8; 256];
        raw[0] = 0x42;
        raw[5] = 1;
        let e = decode(&Image::from_flat(&raw).unwrap()).unwrap_err();
        assert!(e.to_string().contains("0x42"), "{e}");
        assert_eq!(decode(&Image::default()), Err(EepromError::NoLowerPage));
    }
}
