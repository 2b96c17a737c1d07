//! What libibverbs says about every RDMA device and port: `ibv_query_device` and
//! `ibv_query_port`, the numbers `ibv_devinfo -v` prints, as plain data.
//!
//! libibverbs (`libibverbs.so.1`, Debian package `libibverbs1` from rdma-core) is loaded at run
//! time, once per process, and never unloaded: programs using this module build and run on
//! machines without it and get [`VerbsError::NotFound`] there. A kernel without RDMA verbs
//! (no `/sys/class/infiniband_verbs`: no RDMA hardware driver, or `ib_uverbs` not loaded) has no
//! devices: [`query`] returns an empty list, as it does when the list is empty.
//!
//! Raw values are kept raw (the enums of `<infiniband/verbs.h>` as numbers) except the MTUs,
//! which are converted to bytes; [`port_state_name`], [`phys_state_name`], [`link_layer_name`],
//! [`width_name`], [`speed_name`] and [`guid_string`] name them for people.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::ffi::verbs::{IbvDeviceAttr, IbvPortAttr, Verbs, LIBRARY};
use crate::ffi::LoadError;

/// One RDMA device as libibverbs sees it (`ibv_query_device` + `ibv_query_port` per port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerbsDevice {
    /// `ibv_get_device_name`: the kernel's name (`mlx5_0`, `rxe0`).
    pub name: String,
    /// `ibv_device_attr.fw_ver` as the provider wrote it (may be empty; soft-RoCE writes
    /// `0.0.0`).
    pub fw_ver: String,
    /// The node GUID in host order: [`guid_string`] prints it as `ibv_devinfo` does
    /// (`5054:00ff:fe1a:0000`).
    pub node_guid: u64,
    /// The system image GUID in host order.
    pub sys_image_guid: u64,
    /// The IEEE vendor ID (`0x02c9` Mellanox/NVIDIA).
    pub vendor_id: u32,
    /// The vendor's part ID (`4123` ConnectX-6).
    pub vendor_part_id: u32,
    /// The hardware revision.
    pub hw_ver: u32,
    /// How many physical ports the device has; [`VerbsDevice::ports`] holds one entry each.
    pub phys_port_cnt: u8,
    /// Ports `1..=phys_port_cnt`, in order.
    pub ports: Vec<VerbsPort>,
}

/// One port of a [`VerbsDevice`] (`ibv_query_port`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerbsPort {
    /// The port number (1-based).
    pub number: u8,
    /// `enum ibv_port_state`, raw (4 = ACTIVE): see [`port_state_name`].
    pub state: u32,
    /// The largest MTU the port supports, in bytes (0 if the value is not one of `enum ibv_mtu`).
    pub max_mtu_bytes: u32,
    /// The MTU in use, in bytes (0 if the value is not one of `enum ibv_mtu`).
    pub active_mtu_bytes: u32,
    /// The GID table's length.
    pub gid_tbl_len: i32,
    /// `IBV_PORT_*` capability bits.
    pub port_cap_flags: u32,
    /// The largest message, in bytes.
    pub max_msg_sz: u32,
    /// The port's LID (InfiniBand; 0 on Ethernet).
    pub lid: u16,
    /// The subnet manager's LID (InfiniBand; 0 on Ethernet).
    pub sm_lid: u16,
    /// Link width, raw (1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X): see [`width_name`].
    pub active_width: u8,
    /// Per-lane speed, raw (1 SDR, 2 DDR, 4 QDR, 8 FDR10, 16 FDR, 32 EDR, 64 HDR, 128 NDR): see
    /// [`speed_name`].
    pub active_speed: u8,
    /// Physical state, raw (5 = LinkUp): see [`phys_state_name`].
    pub phys_state: u8,
    /// Link layer, raw (1 InfiniBand, 2 Ethernet; 0 unspecified, which means InfiniBand): see
    /// [`link_layer_name`].
    pub link_layer: u8,
}

/// Why the devices could not be listed or queried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerbsError {
    /// libibverbs could not be loaded.
    #[error("libibverbs not found ({library}): install the Debian package libibverbs1 (from rdma-core) ({detail})")]
    NotFound {
        /// The library asked for (`libibverbs.so.1`).
        library: String,
        /// dlopen's message.
        detail: String,
    },
    /// libibverbs is there but lacks a function at the version this module was written for.
    #[error("{library} has no {symbol}@{version}: an incompatible libibverbs (rdma-core's IBVERBS_1.1 ABI expected)")]
    Symbol {
        /// The library loaded.
        library: String,
        /// The function.
        symbol: String,
        /// The symbol version asked for.
        version: String,
    },
    /// `ibv_get_device_list` failed (other than for a kernel without RDMA verbs).
    #[error("ibv_get_device_list failed: {text}")]
    DeviceList {
        /// The errno.
        errno: i32,
        /// Its text.
        text: String,
    },
    /// `ibv_open_device` failed.
    #[error("ibv_open_device {device} failed: {text}")]
    Open {
        /// The device's name.
        device: String,
        /// The errno.
        errno: i32,
        /// Its text.
        text: String,
    },
    /// `ibv_query_device` failed.
    #[error("ibv_query_device {device} failed: {text}")]
    QueryDevice {
        /// The device's name.
        device: String,
        /// The errno.
        errno: i32,
        /// Its text.
        text: String,
    },
    /// `ibv_query_port` failed.
    #[error("ibv_query_port {device} port {port} failed: {text}")]
    QueryPort {
        /// The device's name.
        device: String,
        /// The port number.
        port: u8,
        /// The errno.
        errno: i32,
        /// Its text.
        text: String,
    },
}

/// An errno's text, e.g. "Permission denied (os error 13)".
fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

/// Loads `library` (normally `libibverbs.so.1`). Not cached: [`lib`] is.
fn load(library: &str) -> Result<Verbs, VerbsError> {
    Verbs::load(library).map_err(|e| match e {
        LoadError::NotFound(detail) => VerbsError::NotFound {
            library: library.to_string(),
            detail,
        },
        LoadError::Symbol(symbol, version) => VerbsError::Symbol {
            library: library.to_string(),
            symbol: symbol.to_string(),
            version: version.to_string(),
        },
    })
}

/// The process's libibverbs, loaded on first use (a failure is remembered too).
fn lib() -> Result<&'static Verbs, VerbsError> {
    static LIB: OnceLock<Result<Verbs, VerbsError>> = OnceLock::new();
    LIB.get_or_init(|| load(LIBRARY))
        .as_ref()
        .map_err(Clone::clone)
}

/// Every RDMA device and each of its ports, in libibverbs' order. No devices (or a kernel
/// without RDMA verbs): an empty list. The first call loads libibverbs.
pub fn query() -> Result<Vec<VerbsDevice>, VerbsError> {
    query_with(lib()?)
}

fn query_with(lib: &Verbs) -> Result<Vec<VerbsDevice>, VerbsError> {
    let list = match lib.devices() {
        Ok(list) => list,
        // No /sys/class/infiniband_verbs: the kernel has no RDMA verbs, so no devices.
        Err(libc::ENOSYS) => return Ok(Vec::new()),
        Err(errno) => {
            return Err(VerbsError::DeviceList {
                errno,
                text: errno_text(errno),
            })
        }
    };
    let mut out = Vec::new();
    for dev in list.iter() {
        let name = dev.name();
        let ctx = dev.open().map_err(|errno| VerbsError::Open {
            device: name.clone(),
            errno,
            text: errno_text(errno),
        })?;
        let attr = ctx
            .query_device()
            .map_err(|errno| VerbsError::QueryDevice {
                device: name.clone(),
                errno,
                text: errno_text(errno),
            })?;
        let mut ports = Vec::with_capacity(usize::from(attr.phys_port_cnt));
        for number in 1..=attr.phys_port_cnt {
            let p = ctx
                .query_port(number)
                .map_err(|errno| VerbsError::QueryPort {
                    device: name.clone(),
                    port: number,
                    errno,
                    text: errno_text(errno),
                })?;
            ports.push(port(number, &p));
        }
        out.push(device(name, &attr, ports));
    }
    Ok(out)
}

fn device(name: String, a: &IbvDeviceAttr, ports: Vec<VerbsPort>) -> VerbsDevice {
    VerbsDevice {
        name,
        fw_ver: c_chars(&a.fw_ver),
        node_guid: u64::from_be(a.node_guid),
        sys_image_guid: u64::from_be(a.sys_image_guid),
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        phys_port_cnt: a.phys_port_cnt,
        ports,
    }
}

fn port(number: u8, p: &IbvPortAttr) -> VerbsPort {
    VerbsPort {
        number,
        state: p.state,
        max_mtu_bytes: mtu_bytes(p.max_mtu),
        active_mtu_bytes: mtu_bytes(p.active_mtu),
        gid_tbl_len: p.gid_tbl_len,
        port_cap_flags: p.port_cap_flags,
        max_msg_sz: p.max_msg_sz,
        lid: p.lid,
        sm_lid: p.sm_lid,
        active_width: p.active_width,
        active_speed: p.active_speed,
        phys_state: p.phys_state,
        link_layer: p.link_layer,
    }
}

/// A fixed-size C string field: up to its first NUL (all of it if there is none), lossily.
fn c_chars(field: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .map(|&c| c.to_ne_bytes()[0])
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `enum ibv_mtu` in bytes: 1 → 256, 2 → 512, 3 → 1024, 4 → 2048, 5 → 4096; anything else 0.
pub fn mtu_bytes(raw: u32) -> u32 {
    match raw {
        1..=5 => 128 << raw,
        _ => 0,
    }
}

/// `enum ibv_port_state` as `ibv_devinfo` prints it (`PORT_ACTIVE`); `None` for other values.
pub fn port_state_name(raw: u32) -> Option<&'static str> {
    Some(match raw {
        0 => "PORT_NOP",
        1 => "PORT_DOWN",
        2 => "PORT_INIT",
        3 => "PORT_ARMED",
        4 => "PORT_ACTIVE",
        5 => "PORT_ACTIVE_DEFER",
        _ => return None,
    })
}

/// The physical port state as sysfs names it (`LinkUp`); `None` for other values.
pub fn phys_state_name(raw: u8) -> Option<&'static str> {
    Some(match raw {
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "PhyTest",
        _ => return None,
    })
}

/// The link layer as `ibv_devinfo` prints it: 0 (unspecified) and 1 `InfiniBand`, 2
/// `Ethernet`; `None` for other values.
pub fn link_layer_name(raw: u8) -> Option<&'static str> {
    match raw {
        0 | 1 => Some("InfiniBand"),
        2 => Some("Ethernet"),
        _ => None,
    }
}

/// The active width as lanes (`4X`); `None` for other values.
pub fn width_name(raw: u8) -> Option<&'static str> {
    Some(match raw {
        1 => "1X",
        2 => "4X",
        4 => "8X",
        8 => "12X",
        16 => "2X",
        _ => return None,
    })
}

/// The active per-lane speed's InfiniBand name (`EDR`); `None` for other values.
pub fn speed_name(raw: u8) -> Option<&'static str> {
    Some(match raw {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        8 => "FDR10",
        16 => "FDR",
        32 => "EDR",
        64 => "HDR",
        128 => "NDR",
        _ => return None,
    })
}

/// A GUID in host order as `ibv_devinfo` prints it: four groups of four hex digits
/// (`5054:00ff:fe1a:0000`).
pub fn guid_string(guid: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (guid >> 48) & 0xffff,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_lists_the_devices_here() {
        // libibverbs1 comes with rdma-core and libfabric1 (scripts/setup-tests.sh): fail, never
        // skip, without it.
        let devices = query().unwrap_or_else(|e| panic!("{e}"));
        if !std::path::Path::new("/sys/class/infiniband_verbs").exists() {
            assert_eq!(devices, Vec::new(), "no RDMA verbs in this kernel");
        }
        for d in &devices {
            assert!(!d.name.is_empty());
            assert_eq!(d.ports.len(), usize::from(d.phys_port_cnt));
            let numbers: Vec<u8> = d.ports.iter().map(|p| p.number).collect();
            assert_eq!(numbers, (1..=d.phys_port_cnt).collect::<Vec<_>>());
        }
        // Loaded once: a second query uses the same library and answers the same.
        assert_eq!(query().map(|d| d.len()), Ok(devices.len()));
        assert!(std::ptr::eq(lib().unwrap(), lib().unwrap()));
    }

    #[test]
    fn a_missing_library_names_the_package() {
        let e = load("libibverbs-linerate-missing.so.1").unwrap_err();
        assert!(matches!(e, VerbsError::NotFound { .. }), "{e:?}");
        let text = e.to_string();
        assert!(text.contains("libibverbs not found"), "{text}");
        assert!(text.contains("libibverbs-linerate-missing.so.1"), "{text}");
        assert!(text.contains("libibverbs1"), "{text}");
        assert!(text.contains("rdma-core"), "{text}");
    }

    #[test]
    fn a_library_without_the_symbols_is_incompatible() {
        // libc has none of the verbs: the first symbol is reported at its pinned version.
        let e = load("libc.so.6").unwrap_err();
        assert_eq!(
            e.to_string(),
            "libc.so.6 has no ibv_get_device_list@IBVERBS_1.1: an incompatible libibverbs \
             (rdma-core's IBVERBS_1.1 ABI expected)"
        );
    }

    #[test]
    fn errors_name_the_call_device_and_port() {
        let e = VerbsError::QueryPort {
            device: "mlx5_0".into(),
            port: 2,
            errno: libc::EPERM,
            text: errno_text(libc::EPERM),
        };
        assert_eq!(
            e.to_string(),
            "ibv_query_port mlx5_0 port 2 failed: Operation not permitted (os error 1)"
        );
    }

    #[test]
    fn mtus_in_bytes() {
        let got: Vec<u32> = (0..=6).map(mtu_bytes).collect();
        assert_eq!(got, [0, 256, 512, 1024, 2048, 4096, 0]);
        assert_eq!(mtu_bytes(u32::MAX), 0);
    }

    #[test]
    fn enum_names() {
        assert_eq!(port_state_name(4), Some("PORT_ACTIVE"));
        assert_eq!(port_state_name(1), Some("PORT_DOWN"));
        assert_eq!(port_state_name(6), None);
        assert_eq!(phys_state_name(5), Some("LinkUp"));
        assert_eq!(phys_state_name(3), Some("Disabled"));
        assert_eq!(phys_state_name(0), None);
        assert_eq!(link_layer_name(0), Some("InfiniBand"));
        assert_eq!(link_layer_name(1), Some("InfiniBand"));
        assert_eq!(link_layer_name(2), Some("Ethernet"));
        assert_eq!(link_layer_name(3), None);
        let widths: Vec<_> = [1, 2, 4, 8, 16, 3, 0].into_iter().map(width_name).collect();
        assert_eq!(
            widths,
            [
                Some("1X"),
                Some("4X"),
                Some("8X"),
                Some("12X"),
                Some("2X"),
                None,
                None
            ]
        );
        let speeds: Vec<_> = (0..8).map(|i| speed_name(1 << i).unwrap()).collect();
        assert_eq!(
            speeds,
            ["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR"]
        );
        assert_eq!(speed_name(0), None);
        assert_eq!(speed_name(3), None);
    }

    #[test]
    fn guids_and_attrs_convert() {
        assert_eq!(guid_string(0x5054_00ff_fe1a_0000), "5054:00ff:fe1a:0000");
        // The attr holds the GUID's bytes in network order, whatever the host's order.
        let mut fw = [0; 64];
        for (d, s) in fw.iter_mut().zip(b"0.0.0") {
            *d = std::ffi::c_char::from_ne_bytes([*s]);
        }
        let attr = IbvDeviceAttr {
            fw_ver: fw,
            node_guid: u64::from_ne_bytes([0x50, 0x54, 0x00, 0xff, 0xfe, 0x1a, 0x00, 0x00]),
            sys_image_guid: u64::from_ne_bytes([0x50, 0x54, 0x00, 0xff, 0xfe, 0x1a, 0x00, 0x01]),
            ..zeroed_attr()
        };
        let d = device("rxe0".into(), &attr, Vec::new());
        assert_eq!(d.fw_ver, "0.0.0");
        assert_eq!(guid_string(d.node_guid), "5054:00ff:fe1a:0000");
        assert_eq!(d.sys_image_guid, 0x5054_00ff_fe1a_0001);
        // A firmware string without a NUL is taken whole, never overrun.
        let full = IbvDeviceAttr {
            fw_ver: [std::ffi::c_char::from_ne_bytes([b'7']); 64],
            ..zeroed_attr()
        };
        assert_eq!(
            device(String::new(), &full, Vec::new()).fw_ver,
            "7".repeat(64)
        );
        // Bytes that are not UTF-8 are replaced, not trusted.
        let mut odd = zeroed_attr();
        odd.fw_ver[0] = std::ffi::c_char::from_ne_bytes([0xff]);
        assert_eq!(device(String::new(), &odd, Vec::new()).fw_ver, "\u{fffd}");
    }

    #[test]
    fn ports_convert_any_value() {
        let p = IbvPortAttr {
            state: 4,
            max_mtu: 5,
            active_mtu: 3,
            gid_tbl_len: 1024,
            port_cap_flags: 0x0401_0000,
            max_msg_sz: 0x80_0000,
            bad_pkey_cntr: 0,
            qkey_viol_cntr: 0,
            pkey_tbl_len: 1,
            lid: 0,
            sm_lid: 0,
            lmc: 0,
            max_vl_num: 1,
            sm_sl: 0,
            subnet_timeout: 0,
            init_type_reply: 0,
            active_width: 1,
            active_speed: 1,
            phys_state: 5,
            link_layer: 2,
            flags: 0,
            port_cap_flags2: 0,
        };
        let v = port(1, &p);
        assert_eq!((v.max_mtu_bytes, v.active_mtu_bytes), (4096, 1024));
        assert_eq!((v.state, v.phys_state, v.link_layer), (4, 5, 2));
        let junk = IbvPortAttr {
            state: u32::MAX,
            max_mtu: 99,
            active_mtu: 0,
            gid_tbl_len: -1,
            active_width: 0xff,
            active_speed: 0xff,
            ..p
        };
        let v = port(255, &junk);
        assert_eq!((v.max_mtu_bytes, v.active_mtu_bytes), (0, 0));
        assert_eq!((v.number, v.state, v.gid_tbl_len), (255, u32::MAX, -1));
        assert_eq!(width_name(v.active_width), None);
    }

    #[test]
    fn serializes_as_plain_json() {
        let d = VerbsDevice {
            name: "rxe0".into(),
            fw_ver: "0.0.0".into(),
            node_guid: 0x5054_00ff_fe1a_0000,
            sys_image_guid: 0,
            vendor_id: 0x00ff_ffff,
            vendor_part_id: 0,
            hw_ver: 0,
            phys_port_cnt: 1,
            ports: vec![VerbsPort {
                number: 1,
                state: 4,
                max_mtu_bytes: 4096,
                active_mtu_bytes: 1024,
                gid_tbl_len: 1024,
                port_cap_flags: 0x0001_0000,
                max_msg_sz: 0x80_0000,
                lid: 0,
                sm_lid: 0,
                active_width: 1,
                active_speed: 1,
                phys_state: 5,
                link_layer: 2,
            }],
        };
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains(r#""active_mtu_bytes":1024"#), "{json}");
        let back: VerbsDevice = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
    }

    fn zeroed_attr() -> IbvDeviceAttr {
        IbvDeviceAttr {
            fw_ver: [0; 64],
            node_guid: 0,
            sys_image_guid: 0,
            max_mr_size: 0,
            page_size_cap: 0,
            vendor_id: 0,
            vendor_part_id: 0,
            hw_ver: 0,
            max_qp: 0,
            max_qp_wr: 0,
            device_cap_flags: 0,
            max_sge: 0,
            max_sge_rd: 0,
            max_cq: 0,
            max_cqe: 0,
            max_mr: 0,
            max_pd: 0,
            max_qp_rd_atom: 0,
            max_ee_rd_atom: 0,
            max_res_rd_atom: 0,
            max_qp_init_rd_atom: 0,
            max_ee_init_rd_atom: 0,
            atomic_cap: 0,
            max_ee: 0,
            max_rdd: 0,
            max_mw: 0,
            max_raw_ipv6_qp: 0,
            max_raw_ethy_qp: 0,
            max_mcast_grp: 0,
            max_mcast_qp_attach: 0,
            max_total_mcast_qp_attach: 0,
            max_ah: 0,
            max_fmr: 0,
            max_map_per_fmr: 0,
            max_srq: 0,
            max_srq_wr: 0,
            max_srq_sge: 0,
            max_pkeys: 0,
            local_ca_ack_delay: 0,
            phys_port_cnt: 0,
        }
    }
}
