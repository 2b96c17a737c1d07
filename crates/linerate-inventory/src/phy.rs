//! Below each netdev: the module's EEPROM, link modes, FEC, rings, coalescing, channels and
//! pause through ethtool's generic netlink family, the VFs through rtnetlink, and the driver's
//! ring-drop counters through SIOCETHTOOL; on a kernel without ethtool netlink (before 5.6)
//! the SIOCETHTOOL ioctls instead. The bytes go to `linerate_phy`'s decoders.
//!
//! On a `--root` tree there is no kernel to ask: the replies are read from files the tree
//! holds, `ethtool/IFACE/NAME` ([`Captured`]): each the bytes of the kernel's reply (netlink
//! messages, an `NLMSG_ERROR` for a refusal), and `statistics` in `ethtool -S`'s words. A tree
//! without them says nothing below the port, which is no finding. See
//! `fixtures/sysfs/README.md`.

use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use linerate_facts::{
    Channels, Coalesce, Fec, Module, Netdev, NetdevKind, Pause, PhyQuery, PhySource, PhyUnread,
    PortPhy, Rings, UnreadWhy,
};
use linerate_phy::eeprom::{self, Image};
use linerate_phy::ethtool::{self as nlethtool, Get};
use linerate_phy::nl::NlError;
use linerate_phy::{ioctl, vf};
use socket2::{Domain, Protocol, Socket, Type};

use crate::ethtool::Ethtool;

/// The driver counters that count packets dropped because the receive ring had no free
/// descriptor, by driver: mlx5 `rx_out_of_buffer` (Documentation/networking/device_drivers/
/// ethernet/mellanox/mlx5/counters.rst: "no software buffers allocated"), ixgbe
/// `rx_no_dma_resources` (RQDPC) and `rx_missed_errors` (MPC), igb and e1000e
/// `rx_no_buffer_count` (RNBC) and `rx_missed_errors`, i40e and ice `port.rx_dropped`
/// (RDPC: "no descriptors"), and the netdev's `rx_missed_errors` / `rx_fifo_errors`.
pub const RING_DROP_STATS: &[&str] = &[
    "rx_out_of_buffer",
    "rx_no_dma_resources",
    "rx_no_buffer_count",
    "rx_missed_errors",
    "rx_fifo_errors",
    "port.rx_dropped",
];
/// Most EEPROM reads for one module: the lower page, page 00h, and CMIS's 01h, 02h and page
/// 11h of four banks (a bound on what a lying module can make us read).
const MAX_EEPROM_READS: usize = 12;

/// An answer to one query.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    Got(T),
    /// Nothing to say: a capture without this file.
    Absent,
    /// The kernel refused, with its errno and message.
    Refused {
        errno: i32,
        detail: String,
    },
    /// The reply could not be read or decoded.
    Broken(String),
}

impl<T> Answer<T> {
    fn map<U>(self, f: impl FnOnce(T) -> Result<U, NlError>) -> Answer<U> {
        match self {
            Self::Got(t) => match f(t) {
                Ok(u) => Answer::Got(u),
                Err(NlError::Kernel { errno, message }) => Answer::Refused {
                    errno,
                    detail: NlError::Kernel { errno, message }.to_string(),
                },
                Err(e) => Answer::Broken(e.to_string()),
            },
            Self::Absent => Answer::Absent,
            Self::Refused { errno, detail } => Answer::Refused { errno, detail },
            Self::Broken(s) => Answer::Broken(s),
        }
    }
}

/// Where the replies come from: the live kernel, or a tree's files.
pub trait Replies {
    fn kind(&self) -> PhySource;
    /// The reply to one ethtool GET (not the module EEPROM).
    fn get(&mut self, iface: &str, get: Get) -> Answer<Vec<u8>>;
    /// The reply to one module EEPROM read.
    fn eeprom(&mut self, iface: &str, r: eeprom::Read) -> Answer<Vec<u8>>;
    /// The rtnetlink reply with `iface`'s VFs.
    fn vfs(&mut self, iface: &str) -> Answer<Vec<u8>>;
    /// The driver's statistics, by name.
    fn stats(&mut self, iface: &str) -> Answer<Vec<(String, u64)>>;
}

/// Ask everything below each hardware netdev of `netdevs`. `pf` says which have SR-IOV (their
/// VFs are asked for).
pub fn read(
    src: &mut dyn Replies,
    netdevs: &[Netdev],
    pf: &dyn Fn(&Netdev) -> bool,
) -> Vec<PortPhy> {
    netdevs
        .iter()
        .filter(|n| !n.is_virtual && matches!(n.kind, NetdevKind::Ethernet | NetdevKind::Ipoib))
        .map(|n| read_port(src, &n.name, pf(n), !n.paravirtual))
        .filter(|p| !is_empty(p))
        .collect()
}

fn is_empty(p: &PortPhy) -> bool {
    p.module.is_none()
        && p.link_modes.is_none()
        && p.fec.is_none()
        && p.rings.is_none()
        && p.coalesce.is_none()
        && p.channels.is_none()
        && p.pause.is_none()
        && p.ring_drops.is_empty()
        && p.vfs.is_empty()
        && p.unread.is_empty()
}

/// Everything below one netdev: its VFs when `sriov`, its module when `cage` (a paravirtual
/// NIC has no cage to read: virtio answers EOPNOTSUPP as root, and EPERM to anyone else,
/// which would only be noise).
pub fn read_port(src: &mut dyn Replies, iface: &str, sriov: bool, cage: bool) -> PortPhy {
    let mut p = PortPhy {
        netdev: iface.to_string(),
        source: src.kind(),
        ..PortPhy::default()
    };
    let mut unread = Vec::new();
    let mut note = |what: PhyQuery, a: &Answer<()>| {
        if let Some(u) = unread_of(what, a) {
            unread.push(u);
        }
    };
    p.link_modes = keep(
        src.get(iface, Get::LinkModes)
            .map(|b| nlethtool::decode_link_modes(&b)),
        PhyQuery::LinkModes,
        &mut note,
    );
    p.fec = keep(
        src.get(iface, Get::Fec).map(|b| nlethtool::decode_fec(&b)),
        PhyQuery::Fec,
        &mut note,
    );
    p.rings = keep(
        src.get(iface, Get::Rings)
            .map(|b| nlethtool::decode_rings(&b)),
        PhyQuery::Rings,
        &mut note,
    );
    p.coalesce = keep(
        src.get(iface, Get::Coalesce)
            .map(|b| nlethtool::decode_coalesce(&b)),
        PhyQuery::Coalesce,
        &mut note,
    );
    p.channels = keep(
        src.get(iface, Get::Channels)
            .map(|b| nlethtool::decode_channels(&b)),
        PhyQuery::Channels,
        &mut note,
    );
    p.pause = keep(
        src.get(iface, Get::Pause)
            .map(|b| nlethtool::decode_pause(&b)),
        PhyQuery::Pause,
        &mut note,
    );
    if let Some(stats) = keep(src.stats(iface), PhyQuery::Statistics, &mut note) {
        p.ring_drops = stats
            .into_iter()
            .filter(|(n, _)| RING_DROP_STATS.contains(&n.as_str()))
            .collect();
    }
    if sriov {
        p.vfs = keep(
            src.vfs(iface).map(|b| vf::decode(&b).map(|(_, v)| v)),
            PhyQuery::Vfs,
            &mut note,
        )
        .unwrap_or_default();
    }
    if cage {
        p.module = keep(module(src, iface), PhyQuery::Module, &mut note);
    }
    p.unread = unread;
    p
}

/// The value of an answer; a refusal or a broken reply is noted.
fn keep<T>(
    a: Answer<T>,
    what: PhyQuery,
    note: &mut impl FnMut(PhyQuery, &Answer<()>),
) -> Option<T> {
    match a {
        Answer::Got(t) => Some(t),
        Answer::Absent => None,
        Answer::Refused { errno, detail } => {
            note(what, &Answer::Refused { errno, detail });
            None
        }
        Answer::Broken(s) => {
            note(what, &Answer::Broken(s));
            None
        }
    }
}

/// What a refusal means: EOPNOTSUPP is a driver without the operation; EPERM and EACCES a
/// privilege (module EEPROM reads need CAP_NET_ADMIN: `GENL_UNS_ADMIN_PERM` in
/// net/ethtool/netlink.c); for the module, I/O errors and timeouts are a module that does not
/// answer (or an empty cage).
fn unread_of(what: PhyQuery, a: &Answer<()>) -> Option<PhyUnread> {
    let (why, detail) = match a {
        Answer::Refused { errno, detail } => {
            let why = match (*errno, what) {
                (95, _) => UnreadWhy::Unsupported,
                (1 | 13, _) => UnreadWhy::Privilege,
                (5 | 6 | 19 | 61 | 62 | 110 | 121, PhyQuery::Module) => UnreadWhy::NoAnswer,
                _ => UnreadWhy::Failed,
            };
            (why, detail.clone())
        }
        Answer::Broken(s) => (UnreadWhy::Malformed, s.clone()),
        Answer::Got(()) | Answer::Absent => return None,
    };
    Some(PhyUnread { what, why, detail })
}

/// Read the module's memory half a page at a time, as [`eeprom::plan`] asks, and decode it.
/// A later page that fails leaves it out (the decoder says what is missing); the lower page
/// failing is the module's answer.
fn module(src: &mut dyn Replies, iface: &str) -> Answer<Module> {
    let mut img = Image::default();
    let mut failed: Vec<eeprom::Read> = Vec::new();
    let mut reads = 0;
    loop {
        let want: Vec<eeprom::Read> = eeprom::plan(&img)
            .into_iter()
            .filter(|r| !failed.contains(r))
            .collect();
        if want.is_empty() || reads >= MAX_EEPROM_READS {
            break;
        }
        for r in want {
            reads += 1;
            match src.eeprom(iface, r).map(|b| nlethtool::decode_eeprom(&b)) {
                Answer::Got(data) => {
                    if let Err(e) = img.insert(r, &data) {
                        return Answer::Broken(e.to_string());
                    }
                }
                other if r.offset == 0 && r.i2c == eeprom::A0 => {
                    return match other {
                        Answer::Absent => Answer::Absent,
                        Answer::Refused { errno, detail } => Answer::Refused { errno, detail },
                        Answer::Broken(s) => Answer::Broken(s),
                        Answer::Got(_) => unreachable!("handled above"),
                    };
                }
                _ => failed.push(r),
            }
        }
    }
    match eeprom::decode(&img) {
        Ok(m) => Answer::Got(m),
        // Every byte 0x00 or 0xff: nothing answers at 0x50.
        Err(eeprom::EepromError::Blank(b)) => Answer::Refused {
            errno: 5,
            detail: eeprom::EepromError::Blank(b).to_string(),
        },
        Err(e) => Answer::Broken(e.to_string()),
    }
}

/// The module's diagnostics alone, read as probe reads the module, for soak and watch to
/// sample: `Ok(None)` when the module reports none (copper) or the source has nothing (a tree
/// without the capture); an error names why a module that answered before did not now.
pub fn module_diagnostics(
    src: &mut dyn Replies,
    iface: &str,
) -> Result<Option<linerate_facts::Diagnostics>, String> {
    match module(src, iface) {
        Answer::Got(m) => Ok(m.diagnostics),
        Answer::Absent => Ok(None),
        Answer::Refused { detail, .. } | Answer::Broken(detail) => Err(detail),
    }
}

/// The live kernel of this network namespace.
#[derive(Debug)]
pub struct Live {
    /// The ethtool family's socket and id; None on a kernel without ethtool netlink.
    genl: Option<(Socket, u16)>,
    route: Option<Socket>,
    ioctl: Option<Ethtool>,
    seq: u32,
    /// Flat dumps read through the ioctl, by interface (one dump serves every half).
    flat: Vec<(String, Answer<Image>)>,
}

fn netlink_socket(protocol: i32) -> io::Result<Socket> {
    let sock = Socket::new(
        Domain::from(libc::AF_NETLINK),
        Type::RAW.cloexec(),
        Some(Protocol::from(protocol)),
    )?;
    sock.set_read_timeout(Some(Duration::from_secs(3)))?;
    Ok(sock)
}

/// Send one request and read datagrams until the reply of that sequence number (a late answer
/// to an earlier request that timed out is skipped). Bounded: 16 reads of at most 3 s.
fn exchange(sock: &Socket, req: &[u8], seq: u32) -> Answer<Vec<u8>> {
    if let Err(e) = (&*sock).write_all(req) {
        return Answer::Broken(format!("sending a netlink request: {e}"));
    }
    let mut buf = vec![0u8; 256 * 1024];
    for _ in 0..16 {
        let n = match (&*sock).read(&mut buf) {
            Ok(n) => n,
            Err(e) => return Answer::Broken(format!("reading the netlink reply: {e}")),
        };
        let b = &buf[..n];
        let got = b
            .get(8..12)
            .map(|s| u32::from_ne_bytes(s.try_into().unwrap_or([0; 4])));
        if got == Some(seq) {
            return Answer::Got(b.to_vec());
        }
    }
    Answer::Broken("no netlink reply with our sequence number".into())
}

impl Live {
    /// Open the sockets. A kernel without the `ethtool` family (ENOENT) gets the ioctls.
    pub fn new() -> Self {
        let genl = netlink_socket(libc::NETLINK_GENERIC).ok().and_then(|s| {
            let req = nlethtool::family_request(1);
            match exchange(&s, &req, 1) {
                Answer::Got(b) => nlethtool::family_id(&b).ok().map(|id| (s, id)),
                _ => None,
            }
        });
        Self {
            genl,
            route: netlink_socket(libc::NETLINK_ROUTE).ok(),
            ioctl: Ethtool::new().ok(),
            seq: 100,
            flat: Vec::new(),
        }
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// One ioctl query, encoded and decoded by `linerate_phy::ioctl`, as netlink-free data.
    fn ioctl_get(&mut self, iface: &str, get: Get) -> Answer<IoctlData> {
        let Some(e) = &self.ioctl else {
            return Answer::Broken("no socket for SIOCETHTOOL".into());
        };
        let (cmd, name, len) = match get {
            Get::Rings => (
                ioctl::GRINGPARAM,
                "ETHTOOL_GRINGPARAM",
                ioctl::RINGPARAM_LEN,
            ),
            Get::Channels => (ioctl::GCHANNELS, "ETHTOOL_GCHANNELS", ioctl::CHANNELS_LEN),
            Get::Pause => (
                ioctl::GPAUSEPARAM,
                "ETHTOOL_GPAUSEPARAM",
                ioctl::PAUSEPARAM_LEN,
            ),
            Get::Coalesce => (ioctl::GCOALESCE, "ETHTOOL_GCOALESCE", ioctl::COALESCE_LEN),
            Get::Fec => (ioctl::GFECPARAM, "ETHTOOL_GFECPARAM", ioctl::FECPARAM_LEN),
            Get::LinkModes | Get::ModuleEeprom => return Answer::Absent,
        };
        let mut buf = ioctl::query(cmd, len);
        match e.query(iface, name, &mut buf) {
            Ok(()) => Answer::Got(IoctlData { get, buf }),
            Err(err) => refused(&err),
        }
    }
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}

/// A filled ioctl struct and what it answers.
#[derive(Debug)]
pub struct IoctlData {
    get: Get,
    buf: Vec<u8>,
}

fn refused(err: &crate::ethtool::EthtoolError) -> Answer<IoctlData> {
    match err.errno() {
        Some(errno) => Answer::Refused {
            errno,
            detail: err.to_string(),
        },
        None => Answer::Broken(err.to_string()),
    }
}

/// The ioctl struct as the netlink reply the decoders take: ioctl answers are decoded here
/// and carried as typed data through [`Live::typed`].
impl Live {
    /// Rings, channels, pause, coalescing or FEC through the ioctl (kernels before 5.6).
    pub fn typed(&mut self, iface: &str, get: Get) -> Answer<Typed> {
        match self.ioctl_get(iface, get) {
            Answer::Got(d) => {
                let t = match d.get {
                    Get::Rings => ioctl::rings(&d.buf).map(Typed::Rings),
                    Get::Channels => ioctl::channels(&d.buf).map(Typed::Channels),
                    Get::Pause => ioctl::pause(&d.buf).map(Typed::Pause),
                    Get::Coalesce => ioctl::coalesce(&d.buf).map(Typed::Coalesce),
                    Get::Fec => ioctl::fec(&d.buf).map(Typed::Fec),
                    Get::LinkModes | Get::ModuleEeprom => None,
                };
                t.map_or_else(
                    || Answer::Broken("a short ioctl struct".into()),
                    Answer::Got,
                )
            }
            Answer::Absent => Answer::Absent,
            Answer::Refused { errno, detail } => Answer::Refused { errno, detail },
            Answer::Broken(s) => Answer::Broken(s),
        }
    }

    fn flat_image(&mut self, iface: &str) -> Answer<Image> {
        if let Some((_, a)) = self.flat.iter().find(|(n, _)| n == iface) {
            return a.clone();
        }
        let a = match &self.ioctl {
            None => Answer::Broken("no socket for SIOCETHTOOL".into()),
            Some(e) => match e.module_eeprom(iface) {
                Ok((_, raw)) => match Image::from_flat(&raw) {
                    Ok(img) => Answer::Got(img),
                    Err(err) => Answer::Broken(err.to_string()),
                },
                Err(err) => match err.errno() {
                    Some(errno) => Answer::Refused {
                        errno,
                        detail: err.to_string(),
                    },
                    None => Answer::Broken(err.to_string()),
                },
            },
        };
        self.flat.push((iface.to_string(), a.clone()));
        a
    }
}

/// One typed answer of the ioctl path.
#[derive(Debug, Clone)]
pub enum Typed {
    Rings(Rings),
    Channels(Channels),
    Pause(Pause),
    Coalesce(Coalesce),
    Fec(Fec),
}

impl Replies for Live {
    fn kind(&self) -> PhySource {
        if self.genl.is_some() {
            PhySource::Netlink
        } else {
            PhySource::Ioctl
        }
    }

    fn get(&mut self, iface: &str, get: Get) -> Answer<Vec<u8>> {
        let seq = self.next_seq();
        if let Some((sock, family)) = &self.genl {
            return exchange(sock, &nlethtool::request(*family, get, iface, seq), seq);
        }
        // No ethtool netlink: the ioctl's answer, re-encoded as the netlink reply the
        // decoders take, so both paths meet in one decoder.
        match self.typed(iface, get) {
            Answer::Got(t) => Answer::Got(as_reply(iface, &t)),
            Answer::Absent => Answer::Absent,
            Answer::Refused { errno, detail } => Answer::Refused { errno, detail },
            Answer::Broken(s) => Answer::Broken(s),
        }
    }

    fn eeprom(&mut self, iface: &str, r: eeprom::Read) -> Answer<Vec<u8>> {
        let seq = self.next_seq();
        if let Some((sock, family)) = &self.genl {
            return exchange(
                sock,
                &nlethtool::eeprom_request(*family, iface, seq, r),
                seq,
            );
        }
        match self.flat_image(iface) {
            Answer::Got(img) => match img.reads().into_iter().find(|(h, _)| *h == r) {
                Some((_, data)) => Answer::Got(eeprom_reply(iface, data)),
                None => Answer::Refused {
                    errno: 22,
                    detail: format!("the ioctl's flat dump has no {}", r.file_name()),
                },
            },
            Answer::Absent => Answer::Absent,
            Answer::Refused { errno, detail } => Answer::Refused { errno, detail },
            Answer::Broken(s) => Answer::Broken(s),
        }
    }

    fn vfs(&mut self, iface: &str) -> Answer<Vec<u8>> {
        let seq = self.next_seq();
        match &self.route {
            Some(sock) => exchange(sock, &vf::request(iface, seq), seq),
            None => Answer::Broken("no rtnetlink socket".into()),
        }
    }

    fn stats(&mut self, iface: &str) -> Answer<Vec<(String, u64)>> {
        let Some(e) = &mut self.ioctl else {
            return Answer::Broken("no socket for SIOCETHTOOL".into());
        };
        match e.stats(iface) {
            Ok(s) => Answer::Got(s),
            Err(err) => match err.errno() {
                Some(errno) => Answer::Refused {
                    errno,
                    detail: err.to_string(),
                },
                None => Answer::Broken(err.to_string()),
            },
        }
    }
}

/// A module EEPROM reply carrying `data`.
fn eeprom_reply(iface: &str, data: &[u8]) -> Vec<u8> {
    nlethtool::build::reply(
        0,
        Get::ModuleEeprom,
        iface,
        &linerate_phy::nl::attr(7, data),
    )
}

/// An ioctl answer as the netlink reply of the same GET.
fn as_reply(iface: &str, t: &Typed) -> Vec<u8> {
    use linerate_phy::nl::{attr_u32, attr_u8};
    let u32s = |pairs: &[(u16, Option<u32>)]| -> Vec<u8> {
        pairs
            .iter()
            .filter_map(|(k, v)| v.map(|v| attr_u32(*k, v)))
            .flatten()
            .collect()
    };
    let b8 = |k: u16, v: Option<bool>| v.map(|v| attr_u8(k, u8::from(v))).unwrap_or_default();
    let (get, attrs) = match t {
        Typed::Rings(r) => (
            Get::Rings,
            u32s(&[
                (2, r.rx_max),
                (3, r.rx_mini_max),
                (4, r.rx_jumbo_max),
                (5, r.tx_max),
                (6, r.rx),
                (7, r.rx_mini),
                (8, r.rx_jumbo),
                (9, r.tx),
            ]),
        ),
        Typed::Channels(c) => (
            Get::Channels,
            u32s(&[
                (2, c.rx_max),
                (3, c.tx_max),
                (4, c.other_max),
                (5, c.combined_max),
                (6, c.rx),
                (7, c.tx),
                (8, c.other),
                (9, c.combined),
            ]),
        ),
        Typed::Pause(p) => {
            let mut a = b8(2, p.autoneg);
            a.extend(b8(3, p.rx));
            a.extend(b8(4, p.tx));
            (Get::Pause, a)
        }
        Typed::Coalesce(c) => {
            let mut a = u32s(&[
                (2, c.rx_usecs),
                (3, c.rx_max_frames),
                (6, c.tx_usecs),
                (7, c.tx_max_frames),
            ]);
            a.extend(b8(11, c.adaptive_rx));
            a.extend(b8(12, c.adaptive_tx));
            (Get::Coalesce, a)
        }
        Typed::Fec(f) => {
            let bit = |m: linerate_facts::FecMode| match m {
                linerate_facts::FecMode::None => Some(49),
                linerate_facts::FecMode::Rs => Some(50),
                linerate_facts::FecMode::Baser => Some(51),
                linerate_facts::FecMode::Llrs => Some(74),
                linerate_facts::FecMode::Auto => None,
            };
            let mut a = b8(3, f.auto);
            if let Some(i) = f.active.and_then(bit) {
                a.extend(attr_u32(4, i));
            }
            let bits: Vec<(u32, &str, bool)> = f
                .configured
                .iter()
                .filter_map(|m| bit(*m).map(|i| (i, "", true)))
                .collect();
            a.extend(linerate_phy::nl::nest(
                2,
                &nlethtool::build::bitset(&bits, true),
            ));
            (Get::Fec, a)
        }
    };
    nlethtool::build::reply(0, get, iface, &attrs)
}

/// A `--root` tree's files: `ethtool/IFACE/NAME`.
#[derive(Debug)]
pub struct Captured {
    dir: PathBuf,
}

/// Largest capture file read (a verbose link modes reply is a few KiB).
const MAX_CAPTURE_BYTES: u64 = 1024 * 1024;

impl Captured {
    pub fn new(root: &Path) -> Self {
        Self {
            dir: root.join("ethtool"),
        }
    }

    fn file(&self, iface: &str, name: &str) -> Answer<Vec<u8>> {
        if iface.contains('/') || iface.starts_with('.') {
            return Answer::Absent;
        }
        let p = self.dir.join(iface).join(name);
        match std::fs::File::open(&p) {
            Ok(f) => {
                let mut b = Vec::new();
                match f.take(MAX_CAPTURE_BYTES).read_to_end(&mut b) {
                    Ok(_) => Answer::Got(b),
                    Err(e) => Answer::Broken(format!("{}: {e}", p.display())),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Answer::Absent,
            Err(e) => Answer::Broken(format!("{}: {e}", p.display())),
        }
    }
}

impl Replies for Captured {
    fn kind(&self) -> PhySource {
        PhySource::Capture
    }

    fn get(&mut self, iface: &str, get: Get) -> Answer<Vec<u8>> {
        self.file(iface, get.file_name())
    }

    fn eeprom(&mut self, iface: &str, r: eeprom::Read) -> Answer<Vec<u8>> {
        self.file(iface, &format!("module-eeprom/{}", r.file_name()))
    }

    fn vfs(&mut self, iface: &str) -> Answer<Vec<u8>> {
        self.file(iface, "vfs")
    }

    /// `ethtool -S` output: `NIC statistics:` then `name: value` lines.
    fn stats(&mut self, iface: &str) -> Answer<Vec<(String, u64)>> {
        match self.file(iface, "statistics") {
            Answer::Got(b) => {
                let text = String::from_utf8_lossy(&b);
                let mut out = Vec::new();
                for (n, line) in text.lines().enumerate() {
                    let line = line.trim();
                    if line.is_empty() || line.ends_with("statistics:") {
                        continue;
                    }
                    let parsed = line
                        .rsplit_once(':')
                        .and_then(|(k, v)| Some((k.trim().to_string(), v.trim().parse().ok()?)));
                    match parsed {
                        Some(kv) => out.push(kv),
                        None => {
                            return Answer::Broken(format!(
                                "ethtool/{iface}/statistics line {}: expected `name: value`",
                                n + 1
                            ))
                        }
                    }
                }
                Answer::Got(out)
            }
            Answer::Absent => Answer::Absent,
            Answer::Refused { errno, detail } => Answer::Refused { errno, detail },
            Answer::Broken(s) => Answer::Broken(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_phy::nl;

    /// A source answering from a table, for the reader's logic.
    struct Table {
        gets: Vec<(Get, Answer<Vec<u8>>)>,
        eeprom: Vec<(eeprom::Read, Answer<Vec<u8>>)>,
        asked: Vec<String>,
    }

    impl Replies for Table {
        fn kind(&self) -> PhySource {
            PhySource::Capture
        }
        fn get(&mut self, _: &str, get: Get) -> Answer<Vec<u8>> {
            self.gets
                .iter()
                .find(|(g, _)| *g == get)
                .map_or(Answer::Absent, |(_, a)| a.clone())
        }
        fn eeprom(&mut self, _: &str, r: eeprom::Read) -> Answer<Vec<u8>> {
            self.asked.push(r.file_name());
            self.eeprom
                .iter()
                .find(|(x, _)| *x == r)
                .map_or(Answer::Absent, |(_, a)| a.clone())
        }
        fn vfs(&mut self, _: &str) -> Answer<Vec<u8>> {
            Answer::Absent
        }
        fn stats(&mut self, _: &str) -> Answer<Vec<(String, u64)>> {
            Answer::Got(vec![
                ("rx_out_of_buffer".into(), 7),
                ("rx_packets".into(), 99),
            ])
        }
    }

    fn half(data: &[u8]) -> Answer<Vec<u8>> {
        Answer::Got(eeprom_reply("eth0", data))
    }

    #[test]
    fn refusals_are_named_by_what_they_mean() {
        let mut t = Table {
            gets: vec![
                (Get::Fec, Answer::Got(nl::error_message(95, 1))),
                (Get::Rings, Answer::Got(vec![1, 2, 3])),
            ],
            eeprom: vec![(
                eeprom::Read::half(0x50, 0, 0, false),
                Answer::Got(nl::error_message(1, 1)),
            )],
            asked: Vec::new(),
        };
        let p = read_port(&mut t, "eth0", false, true);
        let why = |q| p.unread(q).map(|u| u.why);
        assert_eq!(why(PhyQuery::Fec), Some(UnreadWhy::Unsupported));
        assert_eq!(why(PhyQuery::Rings), Some(UnreadWhy::Malformed));
        assert_eq!(why(PhyQuery::Module), Some(UnreadWhy::Privilege));
        assert!(p.unread(PhyQuery::Module).unwrap().detail.contains("EPERM"));
        // Nothing captured is nothing said.
        assert_eq!(why(PhyQuery::Channels), None);
        assert_eq!(p.ring_drops.get("rx_out_of_buffer"), Some(&7));
        assert!(!p.ring_drops.contains_key("rx_packets"));
    }

    #[test]
    fn the_module_is_read_as_the_plan_asks_and_a_silent_one_is_named() {
        let mut lower = vec![0u8; 128];
        lower[0] = 0x11;
        lower[1] = 0x07;
        lower[2] = 0x04; // flat memory: no page 03h
        let mut upper = vec![0x20u8; 128];
        upper[0] = 0x11;
        let mut t = Table {
            gets: Vec::new(),
            eeprom: vec![
                (eeprom::Read::half(0x50, 0, 0, false), half(&lower)),
                (eeprom::Read::half(0x50, 0, 0, true), half(&upper)),
            ],
            asked: Vec::new(),
        };
        let p = read_port(&mut t, "eth0", false, true);
        assert_eq!(
            p.module.as_ref().map(|m| m.form_factor.as_str()),
            Some("QSFP28")
        );
        assert_eq!(t.asked, ["50-p00-b0-lower", "50-p00-b0-upper"]);
        // Every byte 0xff: an empty cage or a module that does not answer.
        let mut t = Table {
            gets: Vec::new(),
            eeprom: vec![(eeprom::Read::half(0x50, 0, 0, false), half(&[0xff; 128]))],
            asked: Vec::new(),
        };
        let p = read_port(&mut t, "eth0", false, true);
        assert_eq!(
            p.unread(PhyQuery::Module).map(|u| u.why),
            Some(UnreadWhy::NoAnswer)
        );
        // EIO from the driver: the same.
        let mut t = Table {
            gets: Vec::new(),
            eeprom: vec![(
                eeprom::Read::half(0x50, 0, 0, false),
                Answer::Got(nl::error_message(5, 1)),
            )],
            asked: Vec::new(),
        };
        let p = read_port(&mut t, "eth0", false, true);
        assert_eq!(
            p.unread(PhyQuery::Module).map(|u| u.why),
            Some(UnreadWhy::NoAnswer)
        );
    }

    #[test]
    fn ioctl_answers_meet_the_netlink_decoders() {
        let r = Rings {
            rx: Some(256),
            rx_max: Some(4096),
            tx: Some(512),
            tx_max: Some(4096),
            ..Rings::default()
        };
        let back = nlethtool::decode_rings(&as_reply("e", &Typed::Rings(r.clone()))).unwrap();
        assert_eq!(back, r);
        let f = Fec {
            active: Some(linerate_facts::FecMode::Rs),
            configured: vec![linerate_facts::FecMode::Rs],
            auto: Some(false),
            ..Fec::default()
        };
        let back = nlethtool::decode_fec(&as_reply("e", &Typed::Fec(f.clone()))).unwrap();
        assert_eq!(
            (back.active, back.configured, back.auto),
            (f.active, f.configured, f.auto)
        );
    }

    #[test]
    fn captured_statistics_are_ethtools_words() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("ethtool/eth0");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("statistics"),
            "NIC statistics:\n     rx_out_of_buffer: 12\n     rx_packets: 3\n",
        )
        .unwrap();
        let mut c = Captured::new(dir.path());
        assert_eq!(
            c.stats("eth0"),
            Answer::Got(vec![
                ("rx_out_of_buffer".into(), 12),
                ("rx_packets".into(), 3)
            ])
        );
        std::fs::write(d.join("statistics"), "rx_out_of_buffer twelve\n").unwrap();
        assert!(matches!(c.stats("eth0"), Answer::Broken(_)));
        assert_eq!(c.get("eth1", Get::Rings), Answer::Absent);
        assert_eq!(c.get("../x", Get::Rings), Answer::Absent);
    }

    /// The live kernel: loopback is skipped (virtual), and asking a missing interface is a
    /// named refusal, never a hang or a panic. Runs without privileges.
    #[test]
    fn live_queries_name_their_failures() {
        let mut live = Live::new();
        match live
            .get("nosuchif9z", Get::Rings)
            .map(|b| nlethtool::decode_rings(&b))
        {
            Answer::Refused { errno, .. } => assert_eq!(errno, 19, "ENODEV"),
            other => panic!("{other:?}"),
        }
        let p = read_port(&mut live, "lo", false, true);
        assert_eq!(p.netdev, "lo");
    }
}
