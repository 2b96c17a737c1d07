//! How big the test file is: big enough that caches cannot hold it, small enough to fit.
//!
//! Buffered I/O goes through the page cache, so the file must be larger than RAM for reads to
//! reach the medium: 2 × RAM. O_DIRECT bypasses the page cache on a local filesystem, so a few GiB
//! suffice (drive and controller caches are far smaller). A network filesystem keeps a cache on the
//! server that O_DIRECT on the client does not bypass, so it gets the buffered rule. On tmpfs and
//! ramfs the medium *is* memory: 1 GiB is plenty. Every default is capped at 25% of the free space
//! and is at least 256 MiB; the test needs the file size plus a 5% margin free.

use linerate_units::fmt_bytes;
use thiserror::Error;

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
/// The smallest default file.
pub const MIN_DEFAULT: u64 = 256 * MIB;
/// Default for O_DIRECT on a local filesystem.
pub const DIRECT_DEFAULT: u64 = 4 * GIB;
/// Default on a memory filesystem (tmpfs, ramfs).
pub const MEMORY_DEFAULT: u64 = GIB;

/// Where the file's data lives, as far as caching goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    Local,
    Network,
    Memory,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeInput {
    /// `--size`, when given.
    pub requested: Option<u64>,
    pub ram_bytes: u64,
    /// Free bytes for this user (statvfs `f_bavail × f_frsize`); `None` when the filesystem does
    /// not account space (ramfs reports 0 blocks in total).
    pub free_bytes: Option<u64>,
    pub direct: bool,
    pub medium: Medium,
    /// The size is rounded down to a multiple of this (the sequential block).
    pub block_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SizeError {
    #[error("not enough free space: the test file needs {} ({} + 5% margin) but {} is free", fmt_bytes(*need), fmt_bytes(*size), fmt_bytes(*free))]
    NoSpace { size: u64, need: u64, free: u64 },
    #[error("a test file of {} is smaller than one block ({})", fmt_bytes(*size), fmt_bytes(*block))]
    TooSmall { size: u64, block: u64 },
}

/// `size` plus the 5% margin the free space must hold.
pub fn with_margin(size: u64) -> u64 {
    size.saturating_add(size.div_ceil(20))
}

/// The test file size for `input`.
pub fn choose(input: &SizeInput) -> Result<u64, SizeError> {
    let block = input.block_bytes.max(1);
    let size = match input.requested {
        Some(r) => r / block * block,
        None => {
            let want = match input.medium {
                Medium::Memory => MEMORY_DEFAULT,
                Medium::Local if input.direct => DIRECT_DEFAULT,
                Medium::Local | Medium::Network => input.ram_bytes.saturating_mul(2),
            };
            let cap = match (input.free_bytes, input.medium) {
                (Some(free), _) => free / 4,
                // ramfs: every byte written is RAM that cannot be reclaimed.
                (None, Medium::Memory) => input.ram_bytes / 4,
                (None, _) => u64::MAX,
            };
            want.min(cap).max(MIN_DEFAULT) / block * block
        }
    };
    if size == 0 {
        return Err(SizeError::TooSmall {
            size: input.requested.unwrap_or(0),
            block,
        });
    }
    if let Some(free) = input.free_bytes {
        let need = with_margin(size);
        if need > free {
            return Err(SizeError::NoSpace { size, need, free });
        }
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> SizeInput {
        SizeInput {
            requested: None,
            ram_bytes: 24 * GIB,
            free_bytes: Some(73 * GIB),
            direct: false,
            medium: Medium::Local,
            block_bytes: MIB,
        }
    }

    #[test]
    fn buffered_default_is_twice_ram_capped_at_a_quarter_of_free() {
        let mut i = input();
        // 2 × 24 GiB = 48 GiB > 73/4 = 18.25 GiB: the cap wins.
        assert_eq!(choose(&i).unwrap(), 73 * GIB / 4 / MIB * MIB);
        i.free_bytes = Some(1000 * GIB);
        assert_eq!(choose(&i).unwrap(), 48 * GIB);
        i.medium = Medium::Network;
        i.direct = true; // the server's cache is not bypassed
        assert_eq!(choose(&i).unwrap(), 48 * GIB);
    }

    #[test]
    fn direct_and_memory_defaults() {
        let mut i = input();
        i.direct = true;
        assert_eq!(choose(&i).unwrap(), DIRECT_DEFAULT);
        i.medium = Medium::Memory;
        assert_eq!(choose(&i).unwrap(), MEMORY_DEFAULT);
        // ramfs: no space accounting; bounded by RAM.
        i.free_bytes = None;
        i.ram_bytes = 2 * GIB;
        assert_eq!(choose(&i).unwrap(), MIN_DEFAULT.max(GIB / 2));
    }

    #[test]
    fn at_least_256_mib_and_refused_when_that_does_not_fit() {
        let mut i = input();
        i.free_bytes = Some(400 * MIB); // a quarter is 100 MiB
        assert_eq!(choose(&i).unwrap(), MIN_DEFAULT);
        i.free_bytes = Some(260 * MIB);
        assert_eq!(
            choose(&i),
            Err(SizeError::NoSpace {
                size: MIN_DEFAULT,
                need: with_margin(MIN_DEFAULT),
                free: 260 * MIB
            })
        );
    }

    #[test]
    fn requested_size_is_checked_and_rounded() {
        let mut i = input();
        i.requested = Some(64 * MIB + 100);
        assert_eq!(choose(&i).unwrap(), 64 * MIB);
        i.free_bytes = Some(32 * MIB);
        let e = choose(&i).unwrap_err();
        assert!(matches!(e, SizeError::NoSpace { need, .. } if need == with_margin(64 * MIB)));
        assert!(e.to_string().contains("67.2 MiB"), "{e}");
        // Exactly size + 5% fits.
        i.free_bytes = Some(with_margin(64 * MIB));
        assert_eq!(choose(&i).unwrap(), 64 * MIB);
        i.requested = Some(1000);
        assert!(matches!(choose(&i), Err(SizeError::TooSmall { .. })));
        // Small files are allowed when asked for (O_DIRECT needs no more).
        i.requested = Some(MIB);
        assert_eq!(choose(&i).unwrap(), MIB);
    }
}
