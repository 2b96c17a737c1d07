//! The newest glibc symbol version an ELF executable needs: the `GLIBC_2.x` names of its
//! version-needs section (`.gnu.version_r`, `SHT_GNU_verneed`), as `objdump -T` lists them. What
//! a far end's C library must be, at least, to run a copy of this binary.

use std::fmt;

/// A glibc release: `2.28` is `Glibc(2, 28)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Glibc(pub u32, pub u32);

impl fmt::Display for Glibc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl Glibc {
    /// `2.31`, `2.31-13+deb11u5` (a package's version): the first two numbers.
    pub fn parse(s: &str) -> Option<Glibc> {
        let mut it = s.split(|c: char| !c.is_ascii_digit());
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(Glibc(major, minor))
    }
}

/// Why an executable's glibc needs could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a 64-bit little-endian ELF executable this linerate can read: {0}")]
pub struct ElfError(&'static str);

const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;

/// `len` bytes at `base + off` of `b`, every sum checked.
fn field(b: &[u8], base: usize, off: usize, len: usize) -> Result<&[u8], ElfError> {
    let at = base
        .checked_add(off)
        .ok_or(ElfError("an offset overflows"))?;
    let end = at.checked_add(len).ok_or(ElfError("an offset overflows"))?;
    b.get(at..end)
        .ok_or(ElfError("a field lies past the end of the file"))
}

fn u16_at(b: &[u8], base: usize, off: usize) -> Result<u16, ElfError> {
    field(b, base, off, 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], base: usize, off: usize) -> Result<u32, ElfError> {
    field(b, base, off, 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// A 32-bit offset or count, as usize.
fn usize32_at(b: &[u8], base: usize, off: usize) -> Result<usize, ElfError> {
    usize::try_from(u32_at(b, base, off)?).map_err(|_| ElfError("an offset does not fit in memory"))
}

fn u64_at(b: &[u8], base: usize, off: usize) -> Result<usize, ElfError> {
    let s = field(b, base, off, 8)?;
    let v = u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
    usize::try_from(v).map_err(|_| ElfError("an offset does not fit in memory"))
}

/// The NUL-terminated string at `at` of `strtab`.
fn str_at(strtab: &[u8], at: usize) -> Result<&str, ElfError> {
    let rest = strtab
        .get(at..)
        .ok_or(ElfError("a name lies past its string table"))?;
    let end = rest
        .iter()
        .position(|&c| c == 0)
        .ok_or(ElfError("a name is not terminated"))?;
    std::str::from_utf8(&rest[..end]).map_err(|_| ElfError("a name is not UTF-8"))
}

/// A section's bytes, from its header at `sh`.
fn section(b: &[u8], sh: usize) -> Result<&[u8], ElfError> {
    let off = u64_at(b, sh, 0x18)?;
    let size = u64_at(b, sh, 0x20)?;
    b.get(off..off.saturating_add(size))
        .ok_or(ElfError("a section lies past the end of the file"))
}

/// The newest `GLIBC_x.y` version `elf` needs (None: it needs no versioned glibc symbol, as a
/// static executable). Bounded by the file: at most as many entries as fit in it.
pub fn glibc_needed(elf: &[u8]) -> Result<Option<Glibc>, ElfError> {
    if elf.get(..4) != Some(b"\x7fELF") {
        return Err(ElfError("no ELF magic"));
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err(ElfError("not 64-bit little-endian"));
    }
    let shoff = u64_at(elf, 0, 0x28)?;
    let shentsize = usize::from(u16_at(elf, 0, 0x3a)?);
    let shnum = usize::from(u16_at(elf, 0, 0x3c)?);
    if shentsize < 0x40 {
        return Err(ElfError("section headers too small"));
    }
    let header = |i: usize| shoff.checked_add(i.checked_mul(shentsize)?);
    let mut newest = None;
    for i in 0..shnum {
        let sh = header(i).ok_or(ElfError("section header offset overflows"))?;
        if u32_at(elf, sh, 4)? != SHT_GNU_VERNEED {
            continue;
        }
        let data = section(elf, sh)?;
        // sh_link: the string table of the names; sh_info: the number of entries.
        let link = usize32_at(elf, sh, 0x28)?;
        let count = u32_at(elf, sh, 0x2c)?;
        let strtab = section(
            elf,
            header(link).ok_or(ElfError("section header offset overflows"))?,
        )?;
        let mut at = 0usize;
        for _ in 0..count.min(u32::try_from(data.len()).unwrap_or(u32::MAX)) {
            // Elf64_Verneed: vn_version u16, vn_cnt u16, vn_file u32, vn_aux u32, vn_next u32.
            let cnt = u16_at(data, at, 2)?;
            let aux = usize32_at(data, at, 8)?;
            let next = usize32_at(data, at, 12)?;
            let mut a = at
                .checked_add(aux)
                .ok_or(ElfError("an entry offset overflows"))?;
            for _ in 0..cnt {
                // Elf64_Vernaux: hash u32, flags u16, other u16, name u32, next u32.
                let name = usize32_at(data, a, 8)?;
                if let Some(v) = str_at(strtab, name)?
                    .strip_prefix("GLIBC_")
                    .and_then(Glibc::parse)
                {
                    newest = newest.max(Some(v));
                }
                let n = usize32_at(data, a, 12)?;
                if n == 0 {
                    break;
                }
                a = a
                    .checked_add(n)
                    .ok_or(ElfError("an entry offset overflows"))?;
            }
            if next == 0 {
                break;
            }
            at = at
                .checked_add(next)
                .ok_or(ElfError("an entry offset overflows"))?;
        }
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(Glibc::parse("2.31"), Some(Glibc(2, 31)));
        assert_eq!(Glibc::parse("2.31-13+deb11u5"), Some(Glibc(2, 31)));
        assert_eq!(Glibc::parse("2"), None);
        assert_eq!(Glibc::parse("x"), None);
        assert!(Glibc(2, 28) < Glibc(2, 31));
        assert!(Glibc(2, 9) < Glibc(2, 17));
        assert_eq!(Glibc(2, 28).to_string(), "2.28");
    }

    /// The same answer as `objdump -T` on this test's own executable.
    #[test]
    fn this_executable_needs_what_objdump_says() {
        let exe = std::fs::read("/proc/self/exe").expect("reading /proc/self/exe");
        let ours = glibc_needed(&exe).expect("this executable reads");
        let Ok(out) = std::process::Command::new("objdump")
            .arg("-T")
            .arg("/proc/self/exe")
            .output()
        else {
            // binutils (scripts/setup-tests.sh) is what CI has; the comparison needs it.
            assert!(ours.is_some());
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .filter_map(|w| w.strip_prefix("GLIBC_").and_then(Glibc::parse))
            .max();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn anything_else_is_an_error_not_a_panic() {
        assert!(glibc_needed(b"").is_err());
        assert!(glibc_needed(b"#!/bin/sh\n").is_err());
        let exe = std::fs::read("/proc/self/exe").expect("reading /proc/self/exe");
        // Every truncation, and garbage in the header: an answer or an error, never a panic.
        for cut in [64, 100, 4096, exe.len() / 2, exe.len() - 1] {
            let _ = glibc_needed(&exe[..cut.min(exe.len())]);
        }
        let mut bad = exe[..4096.min(exe.len())].to_vec();
        for b in bad.iter_mut().skip(0x28).take(0x18) {
            *b = 0xff;
        }
        let _ = glibc_needed(&bad);
    }
}
