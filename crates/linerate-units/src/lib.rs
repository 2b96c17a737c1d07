//! Units, rates and rounding: the one place every crate takes them from.
//!
//! - Gb/s is 10^9 bit/s and GB/s is 10^9 byte/s (what NIC and link rates use);
//! - GiB is 2^30 bytes, MiB 2^20, KiB 2^10 (buffer and file sizes).
//!
//! Computations keep full precision. Rounding happens only where a value is serialized or
//! printed: [`round`] (and the [`r1`], [`r2`], [`r3`] shorthands) for JSON, [`fmt_num`] for text.

/// Bits in a byte.
pub const BITS_PER_BYTE: f64 = 8.0;
/// 10^9: one giga (Gb/s, GB/s).
pub const GIGA: f64 = 1e9;
/// 2^10, 2^20, 2^30 bytes.
pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// `bytes` moved in `secs` seconds, in Gb/s (10^9 bit/s); 0 for no time or a time that is not a
/// number.
pub fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 && secs.is_finite() {
        bytes as f64 * BITS_PER_BYTE / secs / GIGA
    } else {
        0.0
    }
}

/// `bytes` moved in `secs` seconds, in GB/s (10^9 byte/s); 0 for no time.
pub fn gb_per_s(bytes: u64, secs: f64) -> f64 {
    gbps(bytes, secs) / BITS_PER_BYTE
}

/// Gb/s to GB/s.
pub fn gbps_to_gb_per_s(gbps: f64) -> f64 {
    gbps / BITS_PER_BYTE
}

/// GB/s to Gb/s.
pub fn gb_per_s_to_gbps(gb_per_s: f64) -> f64 {
    gb_per_s * BITS_PER_BYTE
}

/// Bits per second to Gb/s.
pub fn bps_to_gbps(bps: f64) -> f64 {
    bps / GIGA
}

/// Round to `decimals` places (half away from zero), for JSON documents and stable output.
/// Not a number and infinities are returned as they are.
pub fn round(x: f64, decimals: u32) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(i32::try_from(decimals.min(15)).unwrap_or(15));
    (x * scale).round() / scale
}

/// One decimal place.
pub fn r1(x: f64) -> f64 {
    round(x, 1)
}

/// Two decimal places.
pub fn r2(x: f64) -> f64 {
    round(x, 2)
}

/// Three decimal places.
pub fn r3(x: f64) -> f64 {
    round(x, 3)
}

/// A field of `/proc/meminfo` in bytes (`MemTotal`, `MemAvailable`, ...). The kernel writes
/// "kB" there but means KiB (`show_val_kb`: pages << (PAGE_SHIFT - 10)), so the value is
/// multiplied by 1024; the one parser, so no caller reads it as 1000. `None` when the field is
/// missing or not a number.
pub fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        kib.checked_mul(KIB)
    })
}

/// A number as people write it: no trailing zeros, at most five decimals where it has them
/// (`40`, `13.17`, `10.3125`), else two (`0.33`).
pub fn fmt_num(x: f64) -> String {
    for p in 0..=5 {
        let scale = 10f64.powi(p);
        if ((x * scale).round() - x * scale).abs() < 1e-6 {
            return format!("{x:.*}", p as usize);
        }
    }
    format!("{x:.2}")
}

/// A measured figure for people to read: three significant digits (`37.0`, `4.82`, `0.573`,
/// `171`), `0` for zero. [`fmt_num`] is for exact figures (rate tables, evidence) where every
/// digit counts; this one is for measurements, where the fourth digit is noise.
pub fn fmt_sig(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A number rounded to `decimals` places, then written as [`fmt_num`] does (`37.02`, `40`).
pub fn fmt_round(x: f64, decimals: u32) -> String {
    fmt_num(round(x, decimals))
}

/// A size in binary units, the one byte formatter of the workspace: `64 KiB`, `8 MiB`,
/// `1.50 GiB`, `1500 B`. A whole number of the largest unit it reaches is written whole;
/// otherwise three significant digits, except below 10 KiB, where a size that is not a whole
/// number of KiB is written in bytes (packet and message sizes read best so: `1500 B`).
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(GIB << 10, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    for (u, name) in UNITS {
        if b < u {
            continue;
        }
        if b.is_multiple_of(u) {
            return format!("{} {name}", b / u);
        }
        if b < 10 * KIB {
            break;
        }
        let v = b as f64 / u as f64;
        return if v < 10.0 {
            format!("{v:.2} {name}")
        } else if v < 100.0 {
            format!("{v:.1} {name}")
        } else {
            format!("{v:.0} {name}")
        };
    }
    format!("{b} B")
}

/// A wall-clock time in UTC, ISO 8601 with milliseconds (`2026-11-29T06:40:01.123Z`), from
/// milliseconds since the Unix epoch (Howard Hinnant's civil-from-days, proleptic Gregorian).
pub fn fmt_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{}.{:03}Z",
        fmt_utc_time(unix_ms),
        unix_ms % 1000
    )
}

/// The time of day in UTC, `06:40:01`, from milliseconds since the Unix epoch.
pub fn fmt_utc_time(unix_ms: u64) -> String {
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(fmt_bytes(64 * MIB), "64 MiB");
        assert_eq!(fmt_bytes(3 * GIB / 2), "1.50 GiB");
        assert_eq!(fmt_bytes(4096), "4 KiB");
        assert_eq!(fmt_bytes(100), "100 B");
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(1500), "1500 B");
        assert_eq!(fmt_bytes(MIB * 1000 + 1), "1000 MiB");
        assert_eq!(fmt_bytes(212_992), "208 KiB");
        assert_eq!(fmt_bytes(1_250_000), "1.19 MiB");
        assert_eq!(fmt_bytes(1536 * KIB), "1.50 MiB");
        assert_eq!(fmt_bytes(GIB << 10), "1 TiB");
        assert_eq!(fmt_bytes(u64::MAX), "16777216 TiB");
    }

    #[test]
    fn rates() {
        assert_eq!(gbps(1_250_000_000, 1.0), 10.0);
        assert_eq!(gb_per_s(1_250_000_000, 1.0), 1.25);
        assert_eq!(gbps(1, 0.0), 0.0);
        assert_eq!(gbps(1, f64::NAN), 0.0);
        assert_eq!(gbps(1, -1.0), 0.0);
        assert_eq!(gbps_to_gb_per_s(8.0), 1.0);
        assert_eq!(gb_per_s_to_gbps(1.0), 8.0);
        assert_eq!(bps_to_gbps(2e9), 2.0);
    }

    #[test]
    fn rounding() {
        assert_eq!(r1(1.25), 1.3);
        assert_eq!(r2(13.1749), 13.17);
        assert_eq!(r3(0.12345), 0.123);
        assert_eq!(round(-1.5, 0), -2.0);
        assert!(round(f64::NAN, 2).is_nan());
        assert_eq!(round(f64::INFINITY, 2), f64::INFINITY);
    }

    #[test]
    fn meminfo() {
        let t = "MemTotal:       24684096 kB\nMemFree:        21294092 kB\nMemAvailable:   1 kB\n";
        assert_eq!(meminfo_bytes(t, "MemTotal"), Some(24_684_096 * 1024));
        assert_eq!(meminfo_bytes(t, "MemAvailable"), Some(1024));
        // A field whose name starts another's is not it; missing, garbage and overflow are None.
        assert_eq!(meminfo_bytes(t, "Mem"), None);
        assert_eq!(meminfo_bytes("nothing", "MemTotal"), None);
        assert_eq!(meminfo_bytes("MemTotal: lots kB", "MemTotal"), None);
        assert_eq!(
            meminfo_bytes("MemTotal: 18446744073709551615 kB", "MemTotal"),
            None
        );
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_num(40.0), "40");
        assert_eq!(fmt_num(13.17), "13.17");
        assert_eq!(fmt_num(10.3125), "10.3125");
        assert_eq!(fmt_num(1.0 / 3.0), "0.33");
        assert_eq!(fmt_round(37.021, 2), "37.02");
        assert_eq!(fmt_round(40.0, 2), "40");
        assert_eq!(fmt_sig(0.0), "0");
        assert_eq!(fmt_sig(171.4), "171");
        assert_eq!(fmt_sig(37.04), "37.0");
        assert_eq!(fmt_sig(4.8249), "4.82");
        assert_eq!(fmt_sig(0.5734), "0.573");
    }

    #[test]
    fn utc_times() {
        assert_eq!(fmt_utc(0), "1970-01-01T00:00:00.000Z");
        // 2024-02-29 (a leap day) 23:59:59.999 UTC.
        assert_eq!(fmt_utc(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(fmt_utc(1_709_251_200_000), "2024-03-01T00:00:00.000Z");
        assert_eq!(fmt_utc_time(1_709_251_199_999), "23:59:59");
    }
}
