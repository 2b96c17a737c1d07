//! libfabric, loaded at run time.
//!
//! `libfabric.so.1` exports only a handful of functions (`fi_getinfo`, `fi_fabric`, `fi_freeinfo`,
//! `fi_dupinfo`, `fi_strerror`, `fi_version`); every other call in the headers is a `static inline`
//! function that dispatches through the ops tables of the object (`fid->ops->close`,
//! `ep->rma->write`, ...). This module loads the exported ones with `dlvsym` at the symbol versions
//! the 1.17 headers link against (so the ABI matches [`bindings`], generated from those headers by
//! `regen-bindings.sh`), and [`conn`] reimplements the inline dispatch over the generated structs.
//!
//! [`verbs`] loads libibverbs the same way, for the device and port queries.
//!
//! This is the only place with `unsafe` code; everything it hands out is plain data or an owning
//! handle that closes its libfabric object on drop.
#![allow(unsafe_code)]

#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    unsafe_op_in_unsafe_fn,
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic
)]
pub(crate) mod bindings;
pub(crate) mod conn;
pub(crate) mod verbs;

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr;
use std::sync::Arc;

use bindings as sys;

/// The API version we ask for: the headers' (1.17).
pub(crate) const API_VERSION: u32 = (1 << 16) | 0x11;

/// The shared object we load, and the versioned symbols we take from it. These are the default
/// (`@@`) versions of libfabric 1.17's `objdump -T`: what a program compiled against the headers
/// in `bindings.rs` would be linked to.
const LIBRARY: &str = "libfabric.so.1";
const SYMBOLS: [(&str, &str); 6] = [
    ("fi_getinfo", "FABRIC_1.3"),
    ("fi_freeinfo", "FABRIC_1.3"),
    ("fi_dupinfo", "FABRIC_1.3"),
    ("fi_fabric", "FABRIC_1.1"),
    ("fi_strerror", "FABRIC_1.0"),
    ("fi_version", "FABRIC_1.0"),
];

type GetInfoFn = unsafe extern "C" fn(
    u32,
    *const c_char,
    *const c_char,
    u64,
    *const sys::fi_info,
    *mut *mut sys::fi_info,
) -> c_int;
type FreeInfoFn = unsafe extern "C" fn(*mut sys::fi_info);
type DupInfoFn = unsafe extern "C" fn(*const sys::fi_info) -> *mut sys::fi_info;
type FabricFn =
    unsafe extern "C" fn(*mut sys::fi_fabric_attr, *mut *mut sys::fid_fabric, *mut c_void) -> c_int;
type StrErrorFn = unsafe extern "C" fn(c_int) -> *const c_char;
type VersionFn = unsafe extern "C" fn() -> u32;

/// The loaded library: its function pointers. Never unloaded (providers start threads and keep
/// state that outlives any one object), so the pointers stay valid for the life of the process.
#[derive(Debug)]
pub(crate) struct Lib {
    getinfo: GetInfoFn,
    freeinfo: FreeInfoFn,
    dupinfo: DupInfoFn,
    fabric: FabricFn,
    strerror: StrErrorFn,
    version: VersionFn,
}

// SAFETY: `Lib` holds only function pointers into a library that is never unloaded; libfabric's
// exported functions are thread safe.
unsafe impl Send for Lib {}
// SAFETY: as above; nothing in `Lib` is mutated after loading.
unsafe impl Sync for Lib {}

/// Why loading failed.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// dlopen failed (the text of dlerror).
    NotFound(String),
    /// A symbol at the expected version is missing (an incompatible libfabric).
    Symbol(&'static str, &'static str),
}

fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a pointer to a NUL-terminated string valid until the next
    // dl* call on this thread; we copy it at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            String::new()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Lib {
    pub(crate) fn load() -> Result<Arc<Lib>, LoadError> {
        // A libfabric installed elsewhere (built from source under /opt, say) can be named.
        let path = std::env::var("LINERATE_LIBFABRIC").unwrap_or_else(|_| LIBRARY.to_string());
        let name = CString::new(path)
            .map_err(|_| LoadError::NotFound("LINERATE_LIBFABRIC contains a NUL byte".into()))?;
        // SAFETY: dlopen with a valid C string; loading libfabric runs its constructors, which
        // only initialise libfabric's own state.
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
                return Err(LoadError::Symbol(sym, ver));
            }
        }
        // SAFETY: each pointer is the named libfabric function at the symbol version whose
        // prototype the headers (and so the types above) declare.
        unsafe {
            Ok(Arc::new(Lib {
                getinfo: std::mem::transmute::<*mut c_void, GetInfoFn>(ptrs[0]),
                freeinfo: std::mem::transmute::<*mut c_void, FreeInfoFn>(ptrs[1]),
                dupinfo: std::mem::transmute::<*mut c_void, DupInfoFn>(ptrs[2]),
                fabric: std::mem::transmute::<*mut c_void, FabricFn>(ptrs[3]),
                strerror: std::mem::transmute::<*mut c_void, StrErrorFn>(ptrs[4]),
                version: std::mem::transmute::<*mut c_void, VersionFn>(ptrs[5]),
            }))
        }
    }

    /// The library's version, packed as `FI_VERSION(major, minor)`.
    pub(crate) fn version(&self) -> u32 {
        // SAFETY: fi_version takes no arguments and has no preconditions.
        unsafe { (self.version)() }
    }

    /// `fi_strerror` of a positive libfabric/errno code.
    pub(crate) fn strerror(&self, err: i32) -> String {
        // SAFETY: fi_strerror returns a pointer to a static NUL-terminated string.
        unsafe {
            let p = (self.strerror)(err.abs());
            if p.is_null() {
                format!("error {err}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// `fi_getinfo` for message endpoints with FI_MSG | FI_RMA and the memory-registration modes
    /// the verbs provider needs, so one code path serves both verbs and tcp.
    pub(crate) fn getinfo(&self, q: &InfoQuery<'_>) -> Result<InfoList, i32> {
        // SAFETY: fi_dupinfo(NULL) is fi_allocinfo: a zeroed fi_info with its attribute structs
        // allocated. We fill it with malloc'd strings/addresses, which fi_freeinfo frees.
        unsafe {
            let hints = (self.dupinfo)(ptr::null());
            if hints.is_null() {
                return Err(libc::ENOMEM);
            }
            let h = &mut *hints;
            h.caps = (sys::FI_MSG | sys::FI_RMA) as u64;
            h.mode = sys::FI_RX_CQ_DATA as u64;
            (*h.ep_attr).type_ = sys::fi_ep_type_FI_EP_MSG;
            let d = &mut *h.domain_attr;
            d.mr_mode = sys::FI_MR_LOCAL
                | sys::FI_MR_VIRT_ADDR
                | sys::FI_MR_ALLOCATED
                | sys::FI_MR_PROV_KEY;
            d.threading = sys::fi_threading_FI_THREAD_DOMAIN;
            if let Some(p) = q.provider {
                let c = CString::new(p).map_err(|_| libc::EINVAL)?;
                (*h.fabric_attr).prov_name = libc::strdup(c.as_ptr());
            }
            if let Some(dname) = q.domain {
                let c = CString::new(dname).map_err(|_| libc::EINVAL)?;
                d.name = libc::strdup(c.as_ptr());
            }
            if let Some(src) = q.src {
                let (addr, len, fmt) = sockaddr_malloc(src);
                h.addr_format = fmt;
                h.src_addr = addr;
                h.src_addrlen = len;
            }
            let node = q
                .node
                .map(|n| CString::new(n).map_err(|_| libc::EINVAL))
                .transpose()?;
            let service = q
                .service
                .map(|s| CString::new(s).map_err(|_| libc::EINVAL))
                .transpose()?;
            let mut out = ptr::null_mut();
            let ret = (self.getinfo)(
                API_VERSION,
                node.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                service.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                if q.source { sys::FI_SOURCE as u64 } else { 0 },
                hints,
                &raw mut out,
            );
            (self.freeinfo)(hints);
            if ret != 0 {
                return Err(-ret);
            }
            Ok(InfoList {
                lib: self.clone_ref(),
                head: out,
            })
        }
    }

    /// Names of every provider that answers `fi_getinfo` without hints (for "tried: ...").
    pub(crate) fn all_providers(&self) -> Vec<String> {
        let mut out = ptr::null_mut();
        // SAFETY: fi_getinfo with NULL hints lists everything; freed below.
        let ret = unsafe {
            (self.getinfo)(
                API_VERSION,
                ptr::null(),
                ptr::null(),
                0,
                ptr::null(),
                &raw mut out,
            )
        };
        if ret != 0 {
            return Vec::new();
        }
        let list = InfoList {
            lib: self.clone_ref(),
            head: out,
        };
        let mut names: Vec<String> = list.iter().map(|i| i.provider()).collect();
        names.sort();
        names.dedup();
        names
    }

    fn clone_ref(&self) -> FreeFn {
        FreeFn(self.freeinfo)
    }
}

/// What to ask `fi_getinfo` for.
#[derive(Debug, Default)]
pub(crate) struct InfoQuery<'a> {
    pub provider: Option<&'a str>,
    /// The domain (device) to use, `hints->domain_attr->name`.
    pub domain: Option<&'a str>,
    pub node: Option<&'a str>,
    pub service: Option<&'a str>,
    /// FI_SOURCE: node/service name the local (listening) address.
    pub source: bool,
    /// Explicit source address for active endpoints.
    pub src: Option<SocketAddr>,
}

#[derive(Debug, Clone, Copy)]
struct FreeFn(FreeInfoFn);

/// An owned `fi_info` list, freed with `fi_freeinfo`.
#[derive(Debug)]
pub(crate) struct InfoList {
    lib: FreeFn,
    head: *mut sys::fi_info,
}

// SAFETY: the list is owned exclusively by this value and only read through it.
unsafe impl Send for InfoList {}

impl Drop for InfoList {
    fn drop(&mut self) {
        if !self.head.is_null() {
            // SAFETY: head came from fi_getinfo (or a CONNREQ event) and is freed once.
            unsafe { (self.lib.0)(self.head) };
        }
    }
}

impl InfoList {
    pub(crate) fn iter(&self) -> impl Iterator<Item = InfoRef<'_>> {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur.is_null() {
                return None;
            }
            // SAFETY: cur is a node of the list we own; it lives as long as &self.
            let r = unsafe { &*cur };
            cur = r.next;
            Some(InfoRef(r))
        })
    }
    pub(crate) fn first(&self) -> Option<InfoRef<'_>> {
        self.iter().next()
    }
}

/// A borrowed view of one `fi_info`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InfoRef<'a>(&'a sys::fi_info);

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: libfabric's names are NUL-terminated strings owned by the fi_info.
        unsafe { CStr::from_ptr(p).to_string_lossy().into_owned() }
    }
}

impl InfoRef<'_> {
    pub(crate) fn provider(&self) -> String {
        // SAFETY: fabric_attr is allocated for every fi_info libfabric returns.
        unsafe {
            self.0
                .fabric_attr
                .as_ref()
                .map(|f| cstr(f.prov_name))
                .unwrap_or_default()
        }
    }
    pub(crate) fn fabric(&self) -> String {
        // SAFETY: as above.
        unsafe {
            self.0
                .fabric_attr
                .as_ref()
                .map(|f| cstr(f.name))
                .unwrap_or_default()
        }
    }
    pub(crate) fn domain(&self) -> String {
        // SAFETY: domain_attr is allocated for every fi_info libfabric returns.
        unsafe {
            self.0
                .domain_attr
                .as_ref()
                .map(|d| cstr(d.name))
                .unwrap_or_default()
        }
    }
    pub(crate) fn is_msg_rma(self) -> bool {
        let ep_ok = self
            .ep_attr()
            .is_some_and(|e| e.type_ == sys::fi_ep_type_FI_EP_MSG);
        ep_ok && self.0.caps & (sys::FI_RMA | sys::FI_MSG) as u64 != 0
    }
    fn ep_attr(&self) -> Option<&sys::fi_ep_attr> {
        // SAFETY: a valid pointer or NULL inside the fi_info.
        unsafe { self.0.ep_attr.as_ref() }
    }
    pub(crate) fn mr_mode(&self) -> i32 {
        // SAFETY: as above.
        unsafe { self.0.domain_attr.as_ref().map_or(0, |d| d.mr_mode) }
    }
    pub(crate) fn tx_size(&self) -> usize {
        // SAFETY: as above.
        unsafe { self.0.tx_attr.as_ref().map_or(0, |t| t.size) }
    }
    /// The destination address, copied into 8-byte words (empty if none).
    pub(crate) fn dest_addr_words(&self) -> Vec<u64> {
        let len = self.0.dest_addrlen;
        if self.0.dest_addr.is_null() || len == 0 {
            return Vec::new();
        }
        let mut out = vec![0u64; len.div_ceil(8)];
        // SAFETY: dest_addr points at dest_addrlen bytes; out has room for them.
        unsafe {
            ptr::copy_nonoverlapping(
                self.0.dest_addr.cast::<u8>(),
                out.as_mut_ptr().cast::<u8>(),
                len,
            );
        };
        out
    }
    pub(crate) fn src_addr(&self) -> Option<SocketAddr> {
        // SAFETY: src_addr points at src_addrlen bytes of the format addr_format.
        unsafe { sockaddr_read(self.0.src_addr, self.0.src_addrlen) }
    }
    pub(crate) fn raw(&self) -> *mut sys::fi_info {
        ptr::from_ref(self.0).cast_mut()
    }
}

/// A `sockaddr_in`/`sockaddr_in6` allocated with malloc (fi_freeinfo frees it).
fn sockaddr_malloc(a: SocketAddr) -> (*mut c_void, usize, u32) {
    // SAFETY: we allocate exactly the size of the struct we write, zeroed by calloc.
    unsafe {
        match a {
            SocketAddr::V4(v4) => {
                let n = std::mem::size_of::<libc::sockaddr_in>();
                let p = libc::calloc(1, n).cast::<libc::sockaddr_in>();
                (*p).sin_family = libc::AF_INET as libc::sa_family_t;
                (*p).sin_port = v4.port().to_be();
                (*p).sin_addr.s_addr = u32::from_ne_bytes(v4.ip().octets());
                (p.cast(), n, sys::FI_SOCKADDR_IN)
            }
            SocketAddr::V6(v6) => {
                let n = std::mem::size_of::<libc::sockaddr_in6>();
                let p = libc::calloc(1, n).cast::<libc::sockaddr_in6>();
                (*p).sin6_family = libc::AF_INET6 as libc::sa_family_t;
                (*p).sin6_port = v6.port().to_be();
                (*p).sin6_addr.s6_addr = v6.ip().octets();
                (*p).sin6_scope_id = v6.scope_id();
                (p.cast(), n, sys::FI_SOCKADDR_IN6)
            }
        }
    }
}

/// Reads a sockaddr of `len` bytes, if it is IPv4 or IPv6.
///
/// # Safety
/// `p` is NULL or points at `len` readable bytes.
unsafe fn sockaddr_read(p: *const c_void, len: usize) -> Option<SocketAddr> {
    if p.is_null() || len < std::mem::size_of::<libc::sa_family_t>() {
        return None;
    }
    let family = c_int::from(*p.cast::<libc::sa_family_t>());
    if family == libc::AF_INET && len >= std::mem::size_of::<libc::sockaddr_in>() {
        let s = p.cast::<libc::sockaddr_in>().read_unaligned();
        let ip = Ipv4Addr::from(s.sin_addr.s_addr.to_ne_bytes());
        Some(SocketAddr::V4(SocketAddrV4::new(
            ip,
            u16::from_be(s.sin_port),
        )))
    } else if family == libc::AF_INET6 && len >= std::mem::size_of::<libc::sockaddr_in6>() {
        let s = p.cast::<libc::sockaddr_in6>().read_unaligned();
        let ip = Ipv6Addr::from(s.sin6_addr.s6_addr);
        Some(SocketAddr::V6(SocketAddrV6::new(
            ip,
            u16::from_be(s.sin6_port),
            s.sin6_flowinfo,
            s.sin6_scope_id,
        )))
    } else {
        None
    }
}

/// This process's soft `RLIMIT_MEMLOCK` in bytes; `None` when unlimited (or unreadable).
pub(crate) fn memlock_soft_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we own.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &raw mut r) };
    (ret == 0 && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}
