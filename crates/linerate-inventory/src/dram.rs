//! Installed memory from SMBIOS type 17 records (`/sys/firmware/dmi/entries/17-*/raw`),
//! for the theoretical DRAM bandwidth. Reading them needs root; without them (or in
//! most VMs, where the records carry no speed) the theoretical figure is unknown.

use std::path::Path;

use linerate_facts::Dimm;

/// Parse one raw SMBIOS type 17 structure. `None` for an empty slot or a record without speed.
pub fn parse_type17(raw: &[u8]) -> Option<Dimm> {
    if raw.first() != Some(&17) || raw.len() < 0x17 {
        return None;
    }
    let len = usize::from(*raw.get(1)?);
    let u16_at = |o: usize| -> Option<u16> {
        (o + 2 <= len.min(raw.len())).then(|| u16::from_le_bytes([raw[o], raw[o + 1]]))
    };
    let width = u16_at(0x0a)?;
    let size = u16_at(0x0c)?;
    if size == 0 || size == 0xffff || width == 0 || width == 0xffff {
        return None;
    }
    // Bit 15 set: size in KiB; 0x7fff: the extended size (MiB) at 0x1c.
    let size_mib = if size == 0x7fff {
        u64::from(u32::from_le_bytes(raw.get(0x1c..0x20)?.try_into().ok()?) & 0x7fff_ffff)
    } else if size & 0x8000 != 0 {
        u64::from(size & 0x7fff) / 1024
    } else {
        u64::from(size)
    };
    let rated = u16_at(0x15).filter(|s| *s != 0 && *s != 0xffff);
    let configured = u16_at(0x20).filter(|s| *s != 0 && *s != 0xffff);
    Some(Dimm {
        size_mib,
        data_width_bits: width,
        speed_mts: configured.or(rated)?,
    })
}

/// Installed DIMMs with a known speed.
pub fn dimms(root: &Path) -> Vec<Dimm> {
    let dir = root.join("sys/firmware/dmi/entries");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.take(4096).flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("17-") {
            continue;
        }
        if let Ok(raw) = std::fs::read(e.path().join("raw")) {
            if let Some(d) = parse_type17(&raw) {
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(width: u16, size: u16, speed: u16, configured: u16) -> Vec<u8> {
        let mut r = vec![0u8; 0x28];
        r[0] = 17;
        r[1] = 0x28;
        r[0x0a..0x0c].copy_from_slice(&width.to_le_bytes());
        r[0x0c..0x0e].copy_from_slice(&size.to_le_bytes());
        r[0x15..0x17].copy_from_slice(&speed.to_le_bytes());
        r[0x20..0x22].copy_from_slice(&configured.to_le_bytes());
        r
    }

    #[test]
    fn ddr4_3200_dimm() {
        let d = parse_type17(&record(64, 16_384, 3200, 2933)).unwrap();
        assert_eq!(d.size_mib, 16_384);
        assert_eq!(d.speed_mts, 2933, "the configured speed wins");
        // 2933 MT/s × 8 bytes = 23.464 GB/s
        assert!((d.peak_gb_per_s() - 23.464).abs() < 1e-9);
    }

    #[test]
    fn empty_slots_and_garbage() {
        assert!(parse_type17(&record(64, 0, 3200, 3200)).is_none());
        assert!(
            parse_type17(&record(64, 8192, 0, 0)).is_none(),
            "a VM's record without speed"
        );
        assert!(parse_type17(&[17, 4, 0, 0]).is_none());
        assert!(parse_type17(&[]).is_none());
        assert!(parse_type17(&[16; 64]).is_none());
    }
}
