//! libibverbs, loaded at run time: the device list, device contexts and the two queries
//! `ibv_devinfo -v` makes (`ibv_query_device`, `ibv_query_port`).
//!
//! Loaded like libfabric (see the parent module): `dlopen` of `libibverbs.so.1`, then `dlvsym` at
//! the default (`@@`) symbol versions of rdma-core's `objdump -T`, which is what a program
//! compiled against `<infiniband/verbs.h>` links to. `ibv_query_port` in the header is a macro
//! over a `static inline` function; the exported `ibv_query_port@@IBVERBS_1.1` fills the *compat*
//! port attributes (everything up to `flags`), copied out of a full-size temporary the library
//! hands to the provider. We give it a zeroed buffer larger than the whole current
//! `struct ibv_port_attr` anyway and read only the stable prefix.
//!
//! Everything here hands out plain data, errno values, or owning handles that free the device
//! list (`ibv_free_device_list`) and close contexts (`ibv_close_device`) on drop.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::ptr;

use super::{dlerror_text, LoadError};

/// The shared object we load by default.
pub(crate) const LIBRARY: &str = "libibverbs.so.1";

/// The versioned symbols we take from it: the default versions in rdma-core 44's
/// `objdump -T libibverbs.so.1` (each also has a hidden `IBVERBS_1.0` compat version that takes
/// the pre-1.1 structures; those must not be used).
const SYMBOLS: [(&str, &str); 7] = [
    ("ibv_get_device_list", "IBVERBS_1.1"),
    ("ibv_free_device_list", "IBVERBS_1.1"),
    ("ibv_get_device_name", "IBVERBS_1.1"),
    ("ibv_open_device", "IBVERBS_1.1"),
    ("ibv_close_device", "IBVERBS_1.1"),
    ("ibv_query_device", "IBVERBS_1.1"),
    ("ibv_query_port", "IBVERBS_1.1"),
];

/// `struct ibv_device`, only ever behind a pointer.
#[repr(C)]
pub(crate) struct IbvDevice {
    _opaque: [u8; 0],
}

/// `struct ibv_context`, only ever behind a pointer.
#[repr(C)]
pub(crate) struct IbvContext {
    _opaque: [u8; 0],
}

/// `struct ibv_device_attr`, exactly as in `<infiniband/verbs.h>` (rdma-core 44): 232 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct IbvDeviceAttr {
    pub fw_ver: [c_char; 64],
    /// `__be64`: the bytes in network order.
    pub node_guid: u64,
    /// `__be64`: the bytes in network order.
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: u32,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    /// `enum ibv_atomic_cap`: an `int`-sized enum, kept raw.
    pub atomic_cap: u32,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

// The layout gcc gives `struct ibv_device_attr` on x86_64 (sizeof 232, align 8).
const _: () = {
    assert!(std::mem::size_of::<IbvDeviceAttr>() == 232);
    assert!(std::mem::align_of::<IbvDeviceAttr>() == 8);
    assert!(std::mem::offset_of!(IbvDeviceAttr, node_guid) == 64);
    assert!(std::mem::offset_of!(IbvDeviceAttr, vendor_id) == 96);
    assert!(std::mem::offset_of!(IbvDeviceAttr, max_qp) == 108);
    assert!(std::mem::offset_of!(IbvDeviceAttr, atomic_cap) == 164);
    assert!(std::mem::offset_of!(IbvDeviceAttr, max_pkeys) == 224);
    assert!(std::mem::offset_of!(IbvDeviceAttr, phys_port_cnt) == 227);
};

/// `struct ibv_port_attr` as in rdma-core 44 (52 bytes). Every field up to `flags` is the stable
/// compat prefix the exported `ibv_query_port` fills; `port_cap_flags2` is newer and left zero by
/// it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct IbvPortAttr {
    /// `enum ibv_port_state`, raw.
    pub state: u32,
    /// `enum ibv_mtu`, raw.
    pub max_mtu: u32,
    /// `enum ibv_mtu`, raw.
    pub active_mtu: u32,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

// The layout gcc gives rdma-core 44's `struct ibv_port_attr` on x86_64 (sizeof 52, align 4).
const _: () = {
    assert!(std::mem::size_of::<IbvPortAttr>() == 52);
    assert!(std::mem::offset_of!(IbvPortAttr, max_msg_sz) == 20);
    assert!(std::mem::offset_of!(IbvPortAttr, lid) == 34);
    assert!(std::mem::offset_of!(IbvPortAttr, sm_lid) == 36);
    assert!(std::mem::offset_of!(IbvPortAttr, active_width) == 43);
    assert!(std::mem::offset_of!(IbvPortAttr, link_layer) == 46);
    assert!(std::mem::offset_of!(IbvPortAttr, port_cap_flags2) == 48);
};

/// What we hand `ibv_query_port`: the attributes plus room for fields later rdma-cores append
/// (`active_speed_ex`, ...), should a library or provider write them.
#[repr(C)]
struct PortAttrBuf {
    attr: IbvPortAttr,
    _spare: [u64; 16],
}

type GetDeviceListFn = unsafe extern "C" fn(*mut c_int) -> *mut *mut IbvDevice;
type FreeDeviceListFn = unsafe extern "C" fn(*mut *mut IbvDevice);
type GetDeviceNameFn = unsafe extern "C" fn(*mut IbvDevice) -> *const c_char;
type OpenDeviceFn = unsafe extern "C" fn(*mut IbvDevice) -> *mut IbvContext;
type CloseDeviceFn = unsafe extern "C" fn(*mut IbvContext) -> c_int;
type QueryDeviceFn = unsafe extern "C" fn(*mut IbvContext, *mut IbvDeviceAttr) -> c_int;
/// The last argument is `struct _compat_ibv_port_attr *`, a prefix of `struct ibv_port_attr`.
type QueryPortFn = unsafe extern "C" fn(*mut IbvContext, u8, *mut IbvPortAttr) -> c_int;

/// The loaded libibverbs: its function pointers. Never unloaded (providers are `dlopen`ed by
/// libibverbs and keep their state), so the pointers stay valid for the life of the process.
#[derive(Debug)]
pub(crate) struct Verbs {
    get_device_list: GetDeviceListFn,
    free_device_list: FreeDeviceListFn,
    get_device_name: GetDeviceNameFn,
    open_device: OpenDeviceFn,
    close_device: CloseDeviceFn,
    query_device: QueryDeviceFn,
    query_port: QueryPortFn,
}

/// The calling thread's errno.
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn clear_errno() {
    // SAFETY: __errno_location returns a valid pointer to this thread's errno.
    unsafe { *libc::__errno_location() = 0 };
}

/// The errno of a failed `int`-returning verbs call: rdma-core returns a positive errno, some
/// providers a negative one, older ones -1 with errno set. Never 0.
fn call_errno(rc: c_int) -> i32 {
    let e = if rc == -1 {
        errno()
    } else {
        rc.checked_abs().unwrap_or(0)
    };
    if e == 0 {
        libc::EIO
    } else {
        e
    }
}

impl Verbs {
    /// Loads `library` (normally [`LIBRARY`]) and takes its symbols at the pinned versions.
    pub(crate) fn load(library: &str) -> Result<Verbs, LoadError> {
        let name = CString::new(library)
            .map_err(|_| LoadError::NotFound(format!("{library:?} contains a NUL byte")))?;
        // SAFETY: dlopen with a valid C string; loading libibverbs runs its constructors, which
        // only initialise libibverbs' own state (providers are loaded later, on first use).
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(LoadError::NotFound(dlerror_text()));
        }
        let mut ptrs = [ptr::null_mut::<c_void>(); SYMBOLS.len()];
        for (slot, (sym, ver)) in ptrs.iter_mut().zip(SYMBOLS) {
            let s = CString::new(sym).expect("no NUL");
            let v = CString::new(ver).expect("no NUL");
            // SAFETY: handle is a live dlopen handle; both strings are valid C strings.
            *slot = unsafe { libc::dlvsym(handle, s.as_ptr(), v.as_ptr()) };
            if slot.is_null() {
                // SAFETY: handle came from dlopen above and nothing from it is in use.
                unsafe { libc::dlclose(handle) };
                return Err(LoadError::Symbol(sym, ver));
            }
        }
        // SAFETY: each pointer is the named libibverbs function at the symbol version whose
        // prototype verbs.h (and so the types above) declares.
        unsafe {
            Ok(Verbs {
                get_device_list: std::mem::transmute::<*mut c_void, GetDeviceListFn>(ptrs[0]),
                free_device_list: std::mem::transmute::<*mut c_void, FreeDeviceListFn>(ptrs[1]),
                get_device_name: std::mem::transmute::<*mut c_void, GetDeviceNameFn>(ptrs[2]),
                open_device: std::mem::transmute::<*mut c_void, OpenDeviceFn>(ptrs[3]),
                close_device: std::mem::transmute::<*mut c_void, CloseDeviceFn>(ptrs[4]),
                query_device: std::mem::transmute::<*mut c_void, QueryDeviceFn>(ptrs[5]),
                query_port: std::mem::transmute::<*mut c_void, QueryPortFn>(ptrs[6]),
            })
        }
    }

    /// `ibv_get_device_list`: the devices, or the errno it failed with (`ENOSYS` when the kernel
    /// has no `/sys/class/infiniband_verbs`, i.e. no RDMA support or `ib_uverbs` not loaded).
    pub(crate) fn devices(&self) -> Result<DeviceList<'_>, i32> {
        let mut num: c_int = 0;
        clear_errno();
        // SAFETY: ibv_get_device_list takes an optional out-pointer to an int; the list it
        // returns is owned by the DeviceList and freed with ibv_free_device_list on drop.
        let list = unsafe { (self.get_device_list)(&raw mut num) };
        if list.is_null() {
            let e = errno();
            return Err(if e == 0 { libc::EIO } else { e });
        }
        Ok(DeviceList {
            lib: self,
            list,
            len: usize::try_from(num).unwrap_or(0),
        })
    }
}

/// An owned device list, freed with `ibv_free_device_list`.
#[derive(Debug)]
pub(crate) struct DeviceList<'a> {
    lib: &'a Verbs,
    list: *mut *mut IbvDevice,
    /// The count `ibv_get_device_list` reported; the array is also NULL-terminated.
    len: usize,
}

impl Drop for DeviceList<'_> {
    fn drop(&mut self) {
        // SAFETY: list came from ibv_get_device_list, is non-NULL and is freed once. Contexts
        // opened from its devices borrow it, so they are closed before this runs.
        unsafe { (self.lib.free_device_list)(self.list) };
    }
}

impl DeviceList<'_> {
    /// The devices, in the library's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Device<'_>> {
        let mut i = 0;
        std::iter::from_fn(move || {
            if i >= self.len {
                return None;
            }
            // SAFETY: the array holds len device pointers followed by a NULL; i < len.
            let dev = unsafe { *self.list.add(i) };
            if dev.is_null() {
                return None;
            }
            i += 1;
            Some(Device {
                lib: self.lib,
                dev,
                _list: PhantomData,
            })
        })
    }
}

/// One device of a [`DeviceList`], valid while the list is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Device<'a> {
    lib: &'a Verbs,
    dev: *mut IbvDevice,
    _list: PhantomData<&'a DeviceList<'a>>,
}

impl<'a> Device<'a> {
    /// `ibv_get_device_name` (the kernel's name, e.g. `mlx5_0`, `rxe0`).
    pub(crate) fn name(&self) -> String {
        // SAFETY: dev is a live device of the list; the name is a NUL-terminated array inside
        // it (or NULL, never in practice), copied at once.
        unsafe {
            let p = (self.lib.get_device_name)(self.dev);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// `ibv_open_device`, or the errno it failed with.
    pub(crate) fn open(&self) -> Result<Context<'a>, i32> {
        clear_errno();
        // SAFETY: dev is a live device of the list; the context is closed by Context's drop.
        let ctx = unsafe { (self.lib.open_device)(self.dev) };
        if ctx.is_null() {
            let e = errno();
            return Err(if e == 0 { libc::EIO } else { e });
        }
        Ok(Context {
            lib: self.lib,
            ctx,
            _list: PhantomData,
        })
    }
}

/// An open device context, closed with `ibv_close_device` on drop.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    lib: &'a Verbs,
    ctx: *mut IbvContext,
    _list: PhantomData<&'a DeviceList<'a>>,
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: ctx came from ibv_open_device, is non-NULL and is closed once. (It always
        // returns 0 in rdma-core; there is nothing to do about a failure here.)
        unsafe { (self.lib.close_device)(self.ctx) };
    }
}

impl Context<'_> {
    /// `ibv_query_device`, or the errno it failed with.
    pub(crate) fn query_device(&self) -> Result<IbvDeviceAttr, i32> {
        let mut attr = std::mem::MaybeUninit::<IbvDeviceAttr>::zeroed();
        clear_errno();
        // SAFETY: ctx is open; attr is a zeroed struct ibv_device_attr of the exact layout the
        // call writes.
        let rc = unsafe { (self.lib.query_device)(self.ctx, attr.as_mut_ptr()) };
        if rc != 0 {
            return Err(call_errno(rc));
        }
        // SAFETY: every field is an integer or integer array, valid for any bytes (and the
        // whole struct was zeroed before the call).
        Ok(unsafe { attr.assume_init() })
    }

    /// `ibv_query_port@IBVERBS_1.1` of port `port` (1-based), or the errno it failed with.
    pub(crate) fn query_port(&self, port: u8) -> Result<IbvPortAttr, i32> {
        let mut buf = std::mem::MaybeUninit::<PortAttrBuf>::zeroed();
        clear_errno();
        // SAFETY: ctx is open; buf is zeroed and larger than both the compat struct the call
        // fills and the current struct ibv_port_attr a provider could write.
        let rc = unsafe { (self.lib.query_port)(self.ctx, port, buf.as_mut_ptr().cast()) };
        if rc != 0 {
            return Err(call_errno(rc));
        }
        // SAFETY: as for query_device: integers only, and zeroed before the call.
        Ok(unsafe { buf.assume_init() }.attr)
    }
}
