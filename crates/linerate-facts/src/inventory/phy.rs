//! Below the port: what ethtool reads under a netdev (the transceiver module and its
//! diagnostics, FEC, link modes, rings, coalescing, channels, pause, the driver's ring-drop
//! counters), the virtual functions a physical function's netdev reports, and the PCI
//! function's own temperature sensors (hwmon) and SR-IOV files.
//!
//! Plain data with the unit in each field's name (`_mw`, `_dbm`, `_ma`, `_c`, `_v`,
//! `_mbps`, `_m`): `linerate-inventory` reads it, `linerate-phy` decodes the bytes,
//! `linerate-rules` judges it, and a soak or watch can sample the same fields over time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Everything read below one netdev. `None` fields were not read: the reason is in `unread`
/// (a driver without the operation, a privilege linerate lacks, a module that does not
/// answer), or the root holds no capture of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortPhy {
    pub netdev: String,
    /// Where the replies came from.
    pub source: PhySource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<Module>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_modes: Option<LinkModes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fec: Option<Fec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rings: Option<Rings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<Coalesce>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Channels>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// The driver's counters of packets dropped because the receive ring had no buffer
    /// (`rx_out_of_buffer`, `rx_missed_errors`, `rx_no_buffer_count`, ...), by name, as read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ring_drops: BTreeMap<String, u64>,
    /// The virtual functions of this physical function, as its netdev reports them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vfs: Vec<VfInfo>,
    /// What could not be read, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<PhyUnread>,
}

impl PortPhy {
    /// Why `what` was not read, if it was tried and failed.
    pub fn unread(&self, what: PhyQuery) -> Option<&PhyUnread> {
        self.unread.iter().find(|u| u.what == what)
    }

    /// The VF of index `index`.
    pub fn vf(&self, index: u32) -> Option<&VfInfo> {
        self.vfs.iter().find(|v| v.index == index)
    }
}

/// How the replies were obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhySource {
    /// ethtool's generic netlink family (Linux 5.6 and later), and rtnetlink for the VFs.
    #[default]
    Netlink,
    /// The SIOCETHTOOL ioctls, on a kernel without ethtool netlink.
    Ioctl,
    /// Replies captured in the files of a `--root` tree (`ethtool/IFACE/`), not a live kernel.
    Capture,
}

/// One ethtool request below a netdev.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhyQuery {
    Module,
    LinkModes,
    Fec,
    Rings,
    Coalesce,
    Channels,
    Pause,
    Statistics,
    Vfs,
}

impl PhyQuery {
    pub const ALL: [Self; 9] = [
        Self::Module,
        Self::LinkModes,
        Self::Fec,
        Self::Rings,
        Self::Coalesce,
        Self::Channels,
        Self::Pause,
        Self::Statistics,
        Self::Vfs,
    ];

    /// Its name in JSON (`link_modes`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Module => "module",
            Self::LinkModes => "link_modes",
            Self::Fec => "fec",
            Self::Rings => "rings",
            Self::Coalesce => "coalesce",
            Self::Channels => "channels",
            Self::Pause => "pause",
            Self::Statistics => "statistics",
            Self::Vfs => "vfs",
        }
    }

    /// The ethtool command that shows the same (`ethtool -m IFACE`).
    pub fn ethtool_command(self, iface: &str) -> String {
        match self {
            Self::Module => format!("ethtool -m {iface}"),
            Self::LinkModes => format!("ethtool {iface}"),
            Self::Fec => format!("ethtool -I --show-fec {iface}"),
            Self::Rings => format!("ethtool -g {iface}"),
            Self::Coalesce => format!("ethtool -c {iface}"),
            Self::Channels => format!("ethtool -l {iface}"),
            Self::Pause => format!("ethtool -I -a {iface}"),
            Self::Statistics => format!("ethtool -S {iface}"),
            Self::Vfs => format!("ip link show {iface}"),
        }
    }
}

/// Why a query gave nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnreadWhy {
    /// The driver does not implement it (EOPNOTSUPP): nothing to read, not a fault.
    Unsupported,
    /// The kernel wants a privilege this process lacks (module EEPROM: CAP_NET_ADMIN).
    Privilege,
    /// The module (or the NIC's path to it) did not answer: an I/O error, a timeout, no
    /// module in the cage.
    NoAnswer,
    /// It answered with bytes that do not decode (the detail says what was wrong).
    Malformed,
    /// Another error (the detail has the kernel's words).
    Failed,
}

impl UnreadWhy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unsupported => "unsupported",
            Self::Privilege => "privilege",
            Self::NoAnswer => "no_answer",
            Self::Malformed => "malformed",
            Self::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhyUnread {
    pub what: PhyQuery,
    pub why: UnreadWhy,
    /// The error as the kernel or the decoder said it.
    pub detail: String,
}

/// Which management interface the module's memory follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleStandard {
    /// SFP, SFP+, SFP28 (SFF-8472 over SFF-8079's A0h).
    Sff8472,
    /// QSFP28 and later QSFP+ (SFF-8636).
    Sff8636,
    /// QSFP+ (SFF-8436; the same map as SFF-8636 for what is read here).
    Sff8436,
    /// QSFP-DD, OSFP, QSFP112, QSFP+ with CMIS (OIF CMIS 3.0 to 5.x).
    Cmis,
}

impl ModuleStandard {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sff8472 => "SFF-8472",
            Self::Sff8636 => "SFF-8636",
            Self::Sff8436 => "SFF-8436",
            Self::Cmis => "CMIS",
        }
    }
}

/// What carries the signal between the two ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Media {
    /// A passive direct-attach copper cable (DAC).
    PassiveCopper,
    /// An active copper cable (ACC, AEC).
    ActiveCopper,
    /// An active optical cable: optics sealed onto the fibre.
    ActiveOptical,
    /// A transceiver for multimode fibre (SR, SWDM).
    MultimodeFiber,
    /// A transceiver for single-mode fibre (LR, ER, CWDM4, DR, FR).
    SinglemodeFiber,
    /// Twisted pair (BASE-T in an SFP).
    BaseT,
    Unknown,
}

impl Media {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PassiveCopper => "passive copper (DAC)",
            Self::ActiveCopper => "active copper",
            Self::ActiveOptical => "active optical cable (AOC)",
            Self::MultimodeFiber => "multimode fibre",
            Self::SinglemodeFiber => "single-mode fibre",
            Self::BaseT => "BASE-T copper",
            Self::Unknown => "unknown media",
        }
    }

    /// A module with a laser whose light power means something (not copper).
    pub fn is_optical(self) -> bool {
        matches!(
            self,
            Self::ActiveOptical | Self::MultimodeFiber | Self::SinglemodeFiber
        )
    }
}

/// A transceiver or cable as its EEPROM describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Module {
    pub standard: ModuleStandard,
    /// SFF-8024 identifier (byte 0): 0x03 SFP, 0x11 QSFP28, 0x18 QSFP-DD ...
    pub identifier: u8,
    /// The identifier's name: `SFP/SFP+/SFP28`, `QSFP28`, `QSFP-DD` ...
    pub form_factor: String,
    pub vendor: Option<String>,
    pub part_number: Option<String>,
    pub serial_number: Option<String>,
    pub revision: Option<String>,
    /// `YYMMDD` and the vendor's lot code, as stored.
    pub date_code: Option<String>,
    /// The vendor's IEEE OUI, `00:02:c9`.
    pub oui: Option<String>,
    /// `LC`, `MPO 1x12`, `No separable connector` ...
    pub connector: Option<String>,
    pub media: Media,
    /// The interface the module says it implements, in its standard's words
    /// (`10G Base-SR`, `100GBASE-SR4 or 25GBASE-SR`, `400GBASE-DR4 (Cl 124)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<String>,
    /// SFF-8024 extended compliance code (SFP byte 36, QSFP byte 192), when set.
    pub extended_compliance: Option<u8>,
    /// The cable assembly's length for copper and AOC, metres.
    pub cable_length_m: Option<f64>,
    /// The longest fibre reach it is specified for, metres, and on which fibre (`smf`,
    /// `om3` ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reach_m: BTreeMap<String, f64>,
    pub wavelength_nm: Option<f64>,
    /// Lanes (channels) the module carries.
    pub lanes: u8,
    /// Nominal signalling rate of one lane, MBd (SFF-8472 byte 12/66, SFF-8636 byte 140/222).
    pub nominal_lane_mbd: Option<u32>,
    /// The fastest rate it advertises, Gb/s (CMIS: its host interface applications).
    pub max_gbps: Option<f64>,
    /// CMIS module state: `ModuleReady`, `ModuleLowPwr`, `ModuleFault` ...
    pub module_state: Option<String>,
    /// Revision of the management interface (`CMIS 4.0`, `SFF-8636 Rev 2.10a`).
    pub spec_revision: Option<String>,
    pub diagnostics: Option<Diagnostics>,
    /// Why `diagnostics` is empty or partial (no monitoring implemented, flat memory).
    pub diagnostics_note: Option<String>,
}

impl Module {
    /// `FS QSFP28-SR4-100G (SN C1812155461)`
    pub fn name(&self) -> String {
        let name = format!(
            "{} {}",
            self.vendor.as_deref().unwrap_or("?"),
            self.part_number.as_deref().unwrap_or("?")
        );
        match &self.serial_number {
            Some(sn) => format!("{name} (SN {sn})"),
            None => name,
        }
    }
}

/// A module's own alarm and warning thresholds for one monitor, in the monitor's unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub high_alarm: f64,
    pub low_alarm: f64,
    pub high_warning: f64,
    pub low_warning: f64,
}

/// Where a reading stands against its thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Normal,
    LowWarning,
    HighWarning,
    LowAlarm,
    HighAlarm,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::LowWarning => "below its low warning",
            Self::HighWarning => "above its high warning",
            Self::LowAlarm => "below its low alarm",
            Self::HighAlarm => "above its high alarm",
        }
    }

    pub fn is_alarm(self) -> bool {
        matches!(self, Self::LowAlarm | Self::HighAlarm)
    }
}

impl Thresholds {
    /// Where `v` stands. Thresholds that do not order (a module that leaves them all zero, or
    /// stores them out of order) judge nothing.
    pub fn level(&self, v: f64) -> Level {
        if !self.is_ordered() {
            return Level::Normal;
        }
        if v > self.high_alarm {
            Level::HighAlarm
        } else if v < self.low_alarm {
            Level::LowAlarm
        } else if v > self.high_warning {
            Level::HighWarning
        } else if v < self.low_warning {
            Level::LowWarning
        } else {
            Level::Normal
        }
    }

    /// low alarm ≤ low warning < high warning ≤ high alarm, and not all equal: thresholds a
    /// module actually set.
    pub fn is_ordered(&self) -> bool {
        self.low_alarm <= self.low_warning
            && self.low_warning < self.high_warning
            && self.high_warning <= self.high_alarm
    }
}

/// Whether the Rx power monitor measures average power or OMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RxPowerMeasure {
    Average,
    Oma,
}

/// The module's digital diagnostics (DOM/DDM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    pub temperature_c: Option<f64>,
    pub temperature_thresholds_c: Option<Thresholds>,
    pub supply_v: Option<f64>,
    pub supply_thresholds_v: Option<Thresholds>,
    pub lanes: Vec<LaneDiagnostics>,
    pub tx_bias_thresholds_ma: Option<Thresholds>,
    pub tx_power_thresholds_mw: Option<Thresholds>,
    pub rx_power_thresholds_mw: Option<Thresholds>,
    pub rx_power_measure: RxPowerMeasure,
}

/// One lane's monitors. Power is in mW, and in dBm (10·log10(mW); absent at 0 mW).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneDiagnostics {
    /// 1-based, as the module numbers its channels.
    pub lane: u8,
    pub tx_bias_ma: Option<f64>,
    pub tx_power_mw: Option<f64>,
    pub tx_power_dbm: Option<f64>,
    pub rx_power_mw: Option<f64>,
    pub rx_power_dbm: Option<f64>,
}

/// 10·log10(mW), the way ethtool prints it; None at or below 0 mW (ethtool's `-inf`).
pub fn dbm(mw: f64) -> Option<f64> {
    (mw > 0.0).then(|| 10.0 * mw.log10())
}

/// A forward error correction mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FecMode {
    /// No FEC (`None`, or `Off` in the ioctl's words).
    None,
    /// Reed-Solomon (Clause 91/108/119/134).
    Rs,
    /// BASE-R / Fire Code (Clause 74).
    Baser,
    /// Low-latency RS (25G/50G consortium).
    Llrs,
    /// Chosen by the driver from the module and link mode.
    Auto,
}

impl FecMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Rs => "RS",
            Self::Baser => "BASE-R",
            Self::Llrs => "LLRS",
            Self::Auto => "auto",
        }
    }
}

/// FEC as the driver reports it (`ethtool --show-fec`, with its statistics).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fec {
    /// What runs on the link now.
    pub active: Option<FecMode>,
    /// What is configured (the modes allowed).
    pub configured: Vec<FecMode>,
    pub auto: Option<bool>,
    /// Blocks corrected by FEC since the driver's counters started (total of all lanes).
    pub corrected_blocks: Option<u64>,
    /// Blocks FEC could not correct: each one is a corrupted frame.
    pub uncorrectable_blocks: Option<u64>,
    pub corrected_bits: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrected_blocks_per_lane: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncorrectable_blocks_per_lane: Vec<u64>,
}

/// Link modes and autonegotiation (`ethtool IFACE`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkModes {
    pub autoneg: Option<bool>,
    pub speed_mbps: Option<u32>,
    pub duplex: Option<String>,
    pub lanes: Option<u32>,
    /// Link mode names as the kernel spells them (`25000baseSR/Full`).
    pub supported: Vec<String>,
    pub advertised: Vec<String>,
    /// What the link partner advertised (empty without autonegotiation).
    pub partner: Vec<String>,
}

/// Descriptor rings (`ethtool -g`): current and the device's maximum, in descriptors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rings {
    pub rx: Option<u32>,
    pub rx_max: Option<u32>,
    pub rx_mini: Option<u32>,
    pub rx_mini_max: Option<u32>,
    pub rx_jumbo: Option<u32>,
    pub rx_jumbo_max: Option<u32>,
    pub tx: Option<u32>,
    pub tx_max: Option<u32>,
    /// Bytes per receive buffer, where the driver says.
    pub rx_buf_len: Option<u32>,
    /// Completion queue entry size, bytes.
    pub cqe_size: Option<u32>,
}

/// Interrupt coalescing (`ethtool -c`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coalesce {
    pub rx_usecs: Option<u32>,
    pub rx_max_frames: Option<u32>,
    pub tx_usecs: Option<u32>,
    pub tx_max_frames: Option<u32>,
    pub adaptive_rx: Option<bool>,
    pub adaptive_tx: Option<bool>,
}

/// Queues (`ethtool -l`): current counts and the device's maximum.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channels {
    pub rx: Option<u32>,
    pub rx_max: Option<u32>,
    pub tx: Option<u32>,
    pub tx_max: Option<u32>,
    pub other: Option<u32>,
    pub other_max: Option<u32>,
    pub combined: Option<u32>,
    pub combined_max: Option<u32>,
}

impl Channels {
    /// Queues that receive: the combined ones plus the rx-only ones.
    pub fn rx_queues(&self) -> Option<u32> {
        match (self.combined, self.rx) {
            (None, None) => None,
            (c, r) => Some(c.unwrap_or(0) + r.unwrap_or(0)),
        }
    }

    /// The most receive queues the device allows.
    pub fn rx_queues_max(&self) -> Option<u32> {
        match (self.combined_max, self.rx_max) {
            (None, None) => None,
            (c, r) => Some(c.unwrap_or(0) + r.unwrap_or(0)),
        }
    }
}

/// 802.3x link-level pause (`ethtool -a`, with `-I` its frame counters).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    pub autoneg: Option<bool>,
    pub rx: Option<bool>,
    pub tx: Option<bool>,
    pub rx_frames: Option<u64>,
    pub tx_frames: Option<u64>,
}

/// A VF's link state as the PF forces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VfLinkState {
    /// Follows the physical port.
    Auto,
    /// Forced up.
    Enable,
    /// Forced down: the VF has no link whatever the port does.
    Disable,
}

/// One virtual function as its physical function's netdev reports it
/// (`ip link show PF`: `vf N link/ether ... vlan ... max_tx_rate ...`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VfInfo {
    pub index: u32,
    pub mac: Option<String>,
    /// VLAN the PF tags the VF's traffic with (none when 0).
    pub vlan: Option<u32>,
    pub qos: Option<u32>,
    /// Transmit rate limit, Mb/s (none when 0: unlimited).
    pub max_tx_rate_mbps: Option<u32>,
    pub min_tx_rate_mbps: Option<u32>,
    pub link_state: Option<VfLinkState>,
    pub spoof_check: Option<bool>,
    pub trust: Option<bool>,
}

/// One hwmon temperature sensor of a PCI function (`hwmon/hwmonN/tempK_*`), °C.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HwmonSensor {
    /// The chip's `name` (`mlx5`, `ice`, `bnxt_en`).
    pub chip: Option<String>,
    /// `temp1`.
    pub sensor: String,
    /// `tempN_label` (`asic`, `sensor0`, a module's name).
    pub label: Option<String>,
    pub input_c: Option<f64>,
    /// `_max`: the device's limit for normal operation.
    pub max_c: Option<f64>,
    /// `_crit`: the device's critical limit (mlx5 puts its warning threshold here).
    pub crit_c: Option<f64>,
    /// `_highest`: the highest reading since the history was reset.
    pub highest_c: Option<f64>,
    /// The sensor's directory as it would be on a live system
    /// (`/sys/bus/pci/devices/0000:04:00.0/hwmon/hwmon3`).
    pub path: String,
}

impl HwmonSensor {
    /// Where its reading stands: at or above `_crit`, an alarm (mlx5 puts its warning
    /// threshold there, `mlx5/core/hwmon.c`: a warning); at or above `_max`, a warning.
    pub fn level(&self) -> Option<Level> {
        let now = self.input_c?;
        let mlx5 = self.chip.as_deref() == Some("mlx5");
        Some(match (self.crit_c, self.max_c) {
            (Some(c), _) if now >= c && !mlx5 => Level::HighAlarm,
            (Some(c), _) if now >= c => Level::HighWarning,
            (_, Some(m)) if now >= m => Level::HighWarning,
            _ => Level::Normal,
        })
    }

    /// `mlx5 asic` (the chip and the label, else the sensor).
    pub fn name(&self) -> String {
        let label = self.label.as_deref().unwrap_or(&self.sensor);
        match &self.chip {
            Some(c) => format!("{c} {label}"),
            None => label.to_string(),
        }
    }
}

/// What changes below a port over time, as soak and watch sample it (at most every
/// [`PHY_SAMPLE_PERIOD_S`]): the NIC's own temperature sensors and the module's diagnostics,
/// each with the device's own thresholds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhyGauges {
    /// The PCI function's hwmon temperature sensors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensors: Vec<HwmonSensor>,
    /// The module's diagnostics (temperature, per lane power), with its thresholds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<Diagnostics>,
}

/// Seconds between two readings of a port's [`PhyGauges`]: a module's EEPROM is read over
/// I2C by the NIC's firmware (milliseconds per page, on the driver's lock), and temperatures
/// and light change over minutes, not within a refresh.
pub const PHY_SAMPLE_PERIOD_S: f64 = 10.0;

/// One temperature of [`PhyGauges`] and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TempReading {
    /// `module`, or the NIC's sensor (`mlx5 asic`).
    pub what: String,
    pub c: f64,
    /// The limit it is judged against, °C: the module's high warning, the sensor's `_max`
    /// (else `_crit`).
    pub limit_c: Option<f64>,
    pub level: Level,
}

/// The weakest lane's received light of [`PhyGauges`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RxReading {
    pub lane: u8,
    pub mw: f64,
    /// The module's low warning, mW.
    pub low_warning_mw: Option<f64>,
    pub level: Level,
}

impl PhyGauges {
    /// Every temperature read: the module's, then the NIC's sensors.
    pub fn temperatures(&self) -> Vec<TempReading> {
        let mut out = Vec::new();
        if let Some(d) = &self.module {
            if let Some(c) = d.temperature_c {
                let t = d.temperature_thresholds_c.filter(Thresholds::is_ordered);
                out.push(TempReading {
                    what: "module".into(),
                    c,
                    limit_c: t.map(|t| t.high_warning),
                    level: t.map_or(Level::Normal, |t| t.level(c)),
                });
            }
        }
        for s in &self.sensors {
            let (Some(c), Some(level)) = (s.input_c, s.level()) else {
                continue;
            };
            out.push(TempReading {
                what: s.name(),
                c,
                limit_c: s.max_c.or(s.crit_c),
                level,
            });
        }
        out
    }

    /// The temperature nearest trouble: the worst level, then the highest reading.
    pub fn hottest(&self) -> Option<TempReading> {
        self.temperatures()
            .into_iter()
            .max_by(|a, b| a.level.cmp(&b.level).then(a.c.total_cmp(&b.c)))
    }

    /// The lane receiving the least light, with where it stands against the module's
    /// thresholds (none for a module without Rx monitors: copper).
    pub fn weakest_rx(&self) -> Option<RxReading> {
        let d = self.module.as_ref()?;
        let t = d.rx_power_thresholds_mw.filter(Thresholds::is_ordered);
        d.lanes
            .iter()
            .filter_map(|l| Some((l.lane, l.rx_power_mw?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(lane, mw)| RxReading {
                lane,
                mw,
                low_warning_mw: t.map(|t| t.low_warning),
                level: t.map_or(Level::Normal, |t| t.level(mw)),
            })
    }
}

/// A physical function's SR-IOV files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sriov {
    /// `sriov_totalvfs`: the most VFs the device can have.
    pub total_vfs: Option<u32>,
    /// `sriov_numvfs`: VFs enabled now.
    pub num_vfs: Option<u32>,
    /// Each enabled VF (`virtfnN`): its index and PCI address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vfs: Vec<SriovVf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SriovVf {
    pub index: u32,
    pub address: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_judge_in_order_of_gravity() {
        // A typical 10G LR's Rx power thresholds (mW).
        let t = Thresholds {
            high_alarm: 1.0,
            low_alarm: 0.0158,
            high_warning: 0.7943,
            low_warning: 0.0316,
        };
        assert_eq!(t.level(0.3), Level::Normal);
        assert_eq!(t.level(0.02), Level::LowWarning);
        assert_eq!(t.level(0.0), Level::LowAlarm);
        assert_eq!(t.level(0.9), Level::HighWarning);
        assert_eq!(t.level(1.2), Level::HighAlarm);
        // Thresholds a module left at zero judge nothing.
        let zero = Thresholds {
            high_alarm: 0.0,
            low_alarm: 0.0,
            high_warning: 0.0,
            low_warning: 0.0,
        };
        assert_eq!(zero.level(5.0), Level::Normal);
        assert!(Level::LowAlarm.is_alarm() && !Level::LowWarning.is_alarm());
    }

    #[test]
    fn dbm_is_ethtools() {
        assert!((dbm(1.0).unwrap()).abs() < 1e-12);
        assert!((dbm(0.5012).unwrap() + 3.0).abs() < 0.001);
        assert_eq!(dbm(0.0), None);
    }

    #[test]
    fn names_are_the_serde_names() {
        for q in PhyQuery::ALL {
            assert_eq!(
                serde_json::to_value(q).unwrap(),
                serde_json::Value::from(q.as_str())
            );
        }
        for w in [
            UnreadWhy::Unsupported,
            UnreadWhy::Privilege,
            UnreadWhy::NoAnswer,
            UnreadWhy::Malformed,
            UnreadWhy::Failed,
        ] {
            assert_eq!(
                serde_json::to_value(w).unwrap(),
                serde_json::Value::from(w.as_str())
            );
        }
    }

    #[test]
    fn channels_count_receive_queues() {
        let c = Channels {
            combined: Some(8),
            combined_max: Some(63),
            ..Channels::default()
        };
        assert_eq!((c.rx_queues(), c.rx_queues_max()), (Some(8), Some(63)));
        assert_eq!(Channels::default().rx_queues(), None);
    }
}
