//! Parsing rates and sizes typed by people, iperf3-style.

/// `1G`, `500M`, `2.5g`, `100000`, `0` → bit/s (decimal multiples: K = 10^3).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || {
        format!("`{s}` is not a rate; expected a number of bit/s with an optional K, M, G or T suffix (e.g. 1G, 500M, 0 for unlimited)")
    };
    let (num, mult) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1e3,
                'M' => 1e6,
                'G' => 1e9,
                'T' => 1e12,
                _ => return Err(err()),
            };
            (&t[..t.len() - 1], m)
        }
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| err())?;
    if !v.is_finite() || v < 0.0 || v * mult > 1e15 {
        return Err(err());
    }
    Ok((v * mult).round() as u64)
}

/// `128K`, `1M`, `1400` → bytes (binary multiples: K = 1024, as iperf3).
pub fn parse_size(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let err = || {
        format!("`{s}` is not a size; expected bytes with an optional K, M or G suffix (K = 1024), e.g. 128K")
    };
    let (num, mult) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(err()),
            };
            (&t[..t.len() - 1], m)
        }
        _ => (t, 1),
    };
    let v: f64 = num.parse().map_err(|_| err())?;
    let b = v * mult as f64;
    if !b.is_finite() || b < 1.0 || b > f64::from(u32::MAX) {
        return Err(format!("`{s}`: must be between 1 byte and 4 GiB"));
    }
    Ok(b.round() as u32)
}

/// `10G`, `500M`, `1000000` → bytes for an amount of data (binary multiples: K = 1024, as
/// iperf3's `-n`), at least 1 byte and at most 1 EiB.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || {
        format!("`{s}` is not an amount of data; expected bytes with an optional K, M, G or T suffix (K = 1024), e.g. 10G")
    };
    let (num, mult) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(err()),
            };
            (&t[..t.len() - 1], m)
        }
        _ => (t, 1),
    };
    let v: f64 = num.parse().map_err(|_| err())?;
    let b = v * mult as f64;
    if !b.is_finite() || !(1.0..=(1u64 << 60) as f64).contains(&b) {
        return Err(format!("`{s}`: must be between 1 byte and 1 EiB"));
    }
    Ok(b.round() as u64)
}

/// Seconds as a float → milliseconds, bounded to ten years.
pub fn parse_secs(s: &str) -> Result<u64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !v.is_finite() || !(0.0..=315_360_000.0).contains(&v) {
        return Err(format!("`{s}`: seconds must be between 0 and 315360000"));
    }
    Ok((v * 1000.0).round() as u64)
}

/// `0,1` → CPUs.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .map(|c| {
            c.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n < 1024)
                .ok_or_else(|| format!("`{s}` is not a CPU list; expected numbers like 0 or 0,1"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1G").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("2.5g").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("0").unwrap(), 0);
        assert_eq!(parse_rate("100").unwrap(), 100);
        for bad in ["", "G", "1X", "-1G", "nanG", "1e300"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128K").unwrap(), 131_072);
        assert_eq!(parse_size("1M").unwrap(), 1_048_576);
        assert_eq!(parse_size("1400").unwrap(), 1400);
        for bad in ["", "0", "1T", "5G", "abc", "-1"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn amounts_of_data() {
        assert_eq!(parse_bytes("10G").unwrap(), 10 << 30);
        assert_eq!(parse_bytes("2T").unwrap(), 2 << 40);
        assert_eq!(parse_bytes("1500").unwrap(), 1500);
        for bad in ["", "0", "0.4", "1P", "abc", "-1", "2000000000T"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secs_and_cpus() {
        assert_eq!(parse_secs("1.5").unwrap(), 1500);
        assert!(parse_secs("1e12").is_err());
        assert_eq!(parse_cpus("0,1").unwrap(), vec![0, 1]);
        assert!(parse_cpus("a").is_err());
    }
}
