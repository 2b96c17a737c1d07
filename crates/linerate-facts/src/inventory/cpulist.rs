//! CPU lists in the kernel's list format (`0-7,16-23`), and the serde forms of the inventory's
//! numbers: PCI ids in hex, CPU lists as kernel lists. Each writer has its reader, so a
//! document read back (a peer's probe) gives the same values.

/// Parse a kernel CPU list (`0-7,16-23`). Bounded: refuses lists naming more than 65536 CPUs.
pub fn parse_cpulist(s: &str) -> Option<Vec<u32>> {
    let s = s.trim();
    let mut out = Vec::new();
    if s.is_empty() {
        return Some(out);
    }
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let a = part.parse::<u32>().ok()?;
                (a, a)
            }
        };
        if b < a || out.len() + (b - a) as usize >= 65536 {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

/// `[0,1,2,3,8]` → `"0-3,8"`
pub fn cpulist_string(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// `0x15b3` → 0x15b3
pub fn parse_hex_u32(s: &str) -> Option<u32> {
    let h = s.trim().strip_prefix("0x")?;
    u32::from_str_radix(h, 16).ok()
}

pub fn parse_hex_u16(s: &str) -> Option<u16> {
    parse_hex_u32(s).and_then(|v| u16::try_from(v).ok())
}

/// Serde helpers: ids in hex, CPU lists in the kernel's list format.
/// (serde's `serialize_with` passes `&T`, hence the allowed lints.)
#[allow(clippy::ref_option, clippy::trivially_copy_pass_by_ref)]
pub(crate) mod ser {
    use std::collections::BTreeMap;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{cpulist_string, parse_cpulist, parse_hex_u32};

    pub fn hex16<S: Serializer>(v: &Option<u16>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&format!("{v:#06x}")),
            None => s.serialize_none(),
        }
    }

    pub fn hex32<S: Serializer>(v: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&format!("{v:#08x}")),
            None => s.serialize_none(),
        }
    }

    pub fn de_hex16<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
        de_hex32(d)?
            .map(|v| {
                u16::try_from(v).map_err(|_| D::Error::custom(format!("{v:#x} is not a 16-bit id")))
            })
            .transpose()
    }

    pub fn de_hex32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| {
                parse_hex_u32(&s)
                    .ok_or_else(|| D::Error::custom(format!("`{s}` is not a hex id like `0x15b3`")))
            })
            .transpose()
    }

    pub fn cpulist<S: Serializer>(v: &[u32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&cpulist_string(v))
    }

    fn parse<E: serde::de::Error>(s: &str) -> Result<Vec<u32>, E> {
        parse_cpulist(s).ok_or_else(|| E::custom(format!("`{s}` is not a CPU list like `0-7`")))
    }

    pub fn de_cpulist<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        parse(&String::deserialize(d)?)
    }

    pub fn opt_cpulist<S: Serializer>(v: &Option<Vec<u32>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&cpulist_string(v)),
            None => s.serialize_none(),
        }
    }

    pub fn de_opt_cpulist<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u32>>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| parse(&s))
            .transpose()
    }

    pub fn cpulist_map<S: Serializer>(
        v: &BTreeMap<String, Vec<u32>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, cpus) in v {
            m.serialize_entry(k, &cpulist_string(cpus))?;
        }
        m.end()
    }

    pub fn de_cpulist_map<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Vec<u32>>, D::Error> {
        BTreeMap::<String, String>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| Ok((k, parse(&v)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpulist("").unwrap(), Vec::<u32>::new());
        assert!(parse_cpulist("3-1").is_none());
        assert!(parse_cpulist("0-4000000000").is_none());
        assert!(parse_cpulist("a-b").is_none());
    }

    #[test]
    fn cpulists_compress() {
        assert_eq!(cpulist_string(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpulist_string(&[]), "");
    }

    #[test]
    fn hex() {
        assert_eq!(parse_hex_u16("0x15b3"), Some(0x15b3));
        assert_eq!(parse_hex_u16("15b3"), None);
        assert_eq!(parse_hex_u16("0x1ffff"), None);
    }
}
