//! A driver's statistics (`ethtool -S`) through the SIOCETHTOOL ioctl: ETHTOOL_GSSET_INFO for
//! the number of ETH_SS_STATS strings, ETHTOOL_GSTRINGS for their names, ETHTOOL_GSTATS for
//! the values. The kernel lets anyone run these three (`__dev_ethtool` in
//! net/ethtool/ioctl.c: "Allow some commands to be done by anyone"), so no root is needed.
//!
//! Also the queries of kernels without ethtool netlink (before 5.6): a fixed struct in, the
//! same struct filled ([`Ethtool::query`]: rings, channels, pause, coalescing, FEC), the module
//! EEPROM as one flat dump ([`Ethtool::module_eeprom`]: GMODULEINFO then GMODULEEEPROM, which
//! need CAP_NET_ADMIN), and a ring size set now ([`Ethtool::set`], for `setup --apply`).
//!
//! This reads the live kernel of the calling thread's network namespace, never a fixture
//! root. The names are read once per interface and kept: a soak asks for the values every
//! interval, and the names change only when the driver's count does.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;

use socket2::{Domain, Socket, Type};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
/// `IFNAMSIZ`: an interface name with its NUL.
const IFNAMSIZ: usize = 16;
/// Most statistics one driver may report. mlx5 with many channels reports a few thousand;
/// a count beyond this is a driver fault or a lie, and the buffers it would need are refused.
pub const MAX_STATS: u32 = 65_536;

/// `struct ifreq` with the `ifr_data` member of its union (40 bytes on 64-bit Linux).
#[repr(C)]
struct IfreqData {
    name: [libc::c_char; IFNAMSIZ],
    data: *mut libc::c_void,
    /// The rest of the union (`struct ifmap` is the largest member, 24 bytes).
    _pad: [u8; 24 - std::mem::size_of::<*mut libc::c_void>()],
}

/// `struct ethtool_sset_info` asking for one set, with room for its one answer.
#[repr(C)]
struct SsetInfo {
    cmd: u32,
    reserved: u32,
    sset_mask: u64,
    data: [u32; 1],
}

/// Why the statistics of an interface could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EthtoolError {
    #[error("interface name {0:?}: expected 1 to 15 bytes without NUL or '/'")]
    BadName(String),
    #[error("{iface}: SIOCETHTOOL {cmd}: {err}")]
    Ioctl {
        iface: String,
        cmd: &'static str,
        err: io::Error,
    },
    #[error("{iface}: the driver reports {count} statistics (at most {MAX_STATS} accepted)")]
    TooMany { iface: String, count: u32 },
    #[error("{iface}: the driver reported {got} statistics after announcing {expected}")]
    Changed {
        iface: String,
        expected: u32,
        got: u32,
    },
    #[error("opening a socket for SIOCETHTOOL: {0}")]
    Socket(io::Error),
}

impl EthtoolError {
    /// The errno of a refused ioctl.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::Ioctl { err, .. } | Self::Socket(err) => err.raw_os_error(),
            _ => None,
        }
    }
}

/// A socket for the ioctls, and the names read so far per interface.
#[derive(Debug)]
pub struct Ethtool {
    sock: Socket,
    names: Vec<(String, Vec<String>)>,
}

impl Ethtool {
    pub fn new() -> Result<Self, EthtoolError> {
        let sock = Socket::new(Domain::IPV4, Type::DGRAM, None).map_err(EthtoolError::Socket)?;
        Ok(Self {
            sock,
            names: Vec::new(),
        })
    }

    /// The statistics of `iface`, (name, value) in the driver's order. An interface without
    /// driver statistics (EOPNOTSUPP) gives an error: the caller names it once.
    pub fn stats(&mut self, iface: &str) -> Result<Vec<(String, u64)>, EthtoolError> {
        let name = ifname(iface)?;
        let count = self.count(iface, &name)?;
        let cached = self
            .names
            .iter()
            .position(|(n, names)| n == iface && names.len() == count as usize);
        let idx = if let Some(i) = cached {
            i
        } else {
            let names = self.strings(iface, &name, count)?;
            self.names.retain(|(n, _)| n != iface);
            self.names.push((iface.to_string(), names));
            self.names.len() - 1
        };
        let values = self.values(iface, &name, count)?;
        Ok(self.names[idx].1.iter().cloned().zip(values).collect())
    }

    fn ioctl(
        &self,
        iface: &str,
        name: &[libc::c_char; IFNAMSIZ],
        cmd: &'static str,
        data: *mut libc::c_void,
    ) -> Result<(), EthtoolError> {
        let mut ifr = IfreqData {
            name: *name,
            data,
            _pad: [0; 24 - std::mem::size_of::<*mut libc::c_void>()],
        };
        // SAFETY: `ifr` is a valid `struct ifreq` whose `ifr_data` points to a buffer the
        // caller sized for the command (checked in each caller: the header plus the count the
        // kernel announced); the fd is our open socket; the kernel writes only inside them.
        let rc = unsafe {
            libc::ioctl(
                self.sock.as_raw_fd(),
                SIOCETHTOOL,
                std::ptr::addr_of_mut!(ifr),
            )
        };
        if rc < 0 {
            return Err(EthtoolError::Ioctl {
                iface: iface.to_string(),
                cmd,
                err: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// One fixed-size query: `buf` holds the struct with its command word set (the pure
    /// encoders of `linerate_phy::ioctl`); the kernel fills it in place.
    pub fn query(
        &self,
        iface: &str,
        cmd: &'static str,
        buf: &mut [u8],
    ) -> Result<(), EthtoolError> {
        let name = ifname(iface)?;
        // A u64 buffer keeps the struct aligned for its u32 words.
        let mut aligned: Vec<u64> = buf
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_ne_bytes(w)
            })
            .collect();
        self.ioctl(iface, &name, cmd, aligned.as_mut_ptr().cast())?;
        let filled: Vec<u8> = aligned.iter().flat_map(|w| w.to_ne_bytes()).collect();
        buf.copy_from_slice(&filled[..buf.len()]);
        Ok(())
    }

    /// Set a struct (`ETHTOOL_SRINGPARAM`): the same call as [`Ethtool::query`], named for
    /// what it does; the kernel wants CAP_NET_ADMIN.
    pub fn set(&self, iface: &str, cmd: &'static str, buf: &mut [u8]) -> Result<(), EthtoolError> {
        self.query(iface, cmd, buf)
    }

    /// The module's memory as one flat dump (`ethtool -m raw on` on an old kernel): its type
    /// (`ETH_MODULE_SFF_*`) and bytes. At most 640 bytes, the largest layout the kernel has.
    pub fn module_eeprom(&self, iface: &str) -> Result<(u32, Vec<u8>), EthtoolError> {
        use linerate_phy::ioctl::{modinfo, query, GMODULEEEPROM, GMODULEINFO, MODINFO_LEN};
        let mut info = query(GMODULEINFO, MODINFO_LEN);
        self.query(iface, "ETHTOOL_GMODULEINFO", &mut info)?;
        let (kind, len) = modinfo(&info).unwrap_or((0, 0));
        let len = len.min(640) as usize;
        // struct ethtool_eeprom: cmd, magic, offset, len, then the data.
        let mut buf = vec![0u8; 16 + len];
        buf[0..4].copy_from_slice(&GMODULEEEPROM.to_ne_bytes());
        buf[12..16].copy_from_slice(&(len as u32).to_ne_bytes());
        self.query(iface, "ETHTOOL_GMODULEEEPROM", &mut buf)?;
        Ok((kind, buf[16..].to_vec()))
    }

    fn count(&self, iface: &str, name: &[libc::c_char; IFNAMSIZ]) -> Result<u32, EthtoolError> {
        let mut info = SsetInfo {
            cmd: ETHTOOL_GSSET_INFO,
            reserved: 0,
            sset_mask: 1 << ETH_SS_STATS,
            data: [0],
        };
        self.ioctl(
            iface,
            name,
            "ETHTOOL_GSSET_INFO",
            std::ptr::addr_of_mut!(info).cast(),
        )?;
        // The kernel clears the bits of the sets the driver does not have.
        if info.sset_mask & (1 << ETH_SS_STATS) == 0 {
            return Ok(0);
        }
        check_count(iface, info.data[0])
    }

    fn strings(
        &self,
        iface: &str,
        name: &[libc::c_char; IFNAMSIZ],
        count: u32,
    ) -> Result<Vec<String>, EthtoolError> {
        // struct ethtool_gstrings: cmd, string_set, len, then len × 32 bytes. A u64 buffer
        // keeps it aligned for the header's u32s.
        let bytes = 12 + count as usize * ETH_GSTRING_LEN;
        let mut buf = vec![0u64; bytes.div_ceil(8)];
        let head = [ETHTOOL_GSTRINGS, ETH_SS_STATS, count];
        write_u32s(&mut buf, &head);
        self.ioctl(iface, name, "ETHTOOL_GSTRINGS", buf.as_mut_ptr().cast())?;
        let raw: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let got = u32::from_ne_bytes(raw[8..12].try_into().expect("4 bytes"));
        if got != count {
            return Err(EthtoolError::Changed {
                iface: iface.to_string(),
                expected: count,
                got,
            });
        }
        Ok(raw[12..bytes]
            .chunks_exact(ETH_GSTRING_LEN)
            .map(|s| {
                let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                String::from_utf8_lossy(&s[..end]).into_owned()
            })
            .collect())
    }

    fn values(
        &self,
        iface: &str,
        name: &[libc::c_char; IFNAMSIZ],
        count: u32,
    ) -> Result<Vec<u64>, EthtoolError> {
        // struct ethtool_stats: cmd, n_stats, then n_stats u64s (8-byte aligned after the header).
        let mut buf = vec![0u64; 1 + count as usize];
        write_u32s(&mut buf, &[ETHTOOL_GSTATS, count]);
        self.ioctl(iface, name, "ETHTOOL_GSTATS", buf.as_mut_ptr().cast())?;
        let got = (buf[0].to_ne_bytes()[4..8])
            .try_into()
            .map(u32::from_ne_bytes)
            .expect("4 bytes");
        if got != count {
            return Err(EthtoolError::Changed {
                iface: iface.to_string(),
                expected: count,
                got,
            });
        }
        Ok(buf[1..].to_vec())
    }
}

/// A driver's count of statistics, refused above [`MAX_STATS`] before any buffer is sized by it.
fn check_count(iface: &str, count: u32) -> Result<u32, EthtoolError> {
    if count > MAX_STATS {
        return Err(EthtoolError::TooMany {
            iface: iface.to_string(),
            count,
        });
    }
    Ok(count)
}

/// Lay u32s at the start of a u64 buffer in native byte order.
fn write_u32s(buf: &mut [u64], vals: &[u32]) {
    let mut bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    for (i, v) in vals.iter().enumerate() {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
    for (w, c) in buf.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
    }
}

fn ifname(iface: &str) -> Result<[libc::c_char; IFNAMSIZ], EthtoolError> {
    let b = iface.as_bytes();
    if b.is_empty() || b.len() >= IFNAMSIZ || b.contains(&0) || b.contains(&b'/') {
        return Err(EthtoolError::BadName(iface.to_string()));
    }
    let mut name = [0 as libc::c_char; IFNAMSIZ];
    for (d, s) in name.iter_mut().zip(b) {
        *d = libc::c_char::from_ne_bytes([*s]);
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(ifname("eth0").is_ok());
        assert!(ifname("").is_err());
        assert!(ifname("a-very-long-name0").is_err());
        assert!(ifname("a/b").is_err());
        assert!(ifname("a\0b").is_err());
    }

    #[test]
    fn absurd_counts_are_refused_before_allocating() {
        assert_eq!(check_count("eth0", 0).unwrap(), 0);
        assert_eq!(check_count("eth0", MAX_STATS).unwrap(), MAX_STATS);
        let e = check_count("eth0", u32::MAX).unwrap_err().to_string();
        assert!(e.contains("eth0") && e.contains("4294967295"), "{e}");
    }

    #[test]
    fn header_words_land_in_order() {
        let mut buf = vec![0u64; 2];
        write_u32s(&mut buf, &[1, 2, 3]);
        let raw: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(u32::from_ne_bytes(raw[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(raw[4..8].try_into().unwrap()), 2);
        assert_eq!(u32::from_ne_bytes(raw[8..12].try_into().unwrap()), 3);
    }

    #[test]
    fn a_missing_interface_is_a_named_error() {
        let mut e = Ethtool::new().unwrap();
        let err = e.stats("nosuchif9z").unwrap_err().to_string();
        assert!(err.contains("nosuchif9z"), "{err}");
    }

    #[test]
    fn loopback_has_no_driver_statistics_or_says_so() {
        // lo has no ETH_SS_STATS: either a count of 0 or EOPNOTSUPP, never a panic.
        let mut e = Ethtool::new().unwrap();
        match e.stats("lo") {
            Ok(s) => assert!(s.is_empty(), "{s:?}"),
            Err(err) => assert!(err.to_string().contains("lo"), "{err}"),
        }
    }
}
