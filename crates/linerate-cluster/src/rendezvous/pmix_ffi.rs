//! libpmix, loaded at run time (`dlopen`), nothing linked: the few client calls a rendezvous
//! needs (`PMIx_Init`, `PMIx_Put`, `PMIx_Commit`, `PMIx_Fence`, `PMIx_Get`, `PMIx_Finalize`).
//!
//! The struct layouts below are those of PMIx 4.2 (`pmix_common.h` of Debian 12's `libpmix-dev`
//! 4.2.2, which Open MPI 4.1's `mpirun` serves); they have been stable since PMIx 3
//! (`libpmix.so.2`), checked with `sizeof`/`offsetof` against the headers:
//! `pmix_proc_t` 260 bytes (rank at 256), `pmix_value_t` 32 (data at 8),
//! `pmix_info_t` 552 (flags at 512, value at 520).
//!
//! This is the only module of the crate with `unsafe` code; what it hands out is plain data.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;

/// The shared object we load; `LINERATE_LIBPMIX` names another (a PMIx under /opt, say).
const LIBRARY: &str = "libpmix.so.2";

const PMIX_MAX_NSLEN: usize = 255;
const PMIX_MAX_KEYLEN: usize = 511;
/// `PMIX_RANK_WILDCARD`: every process of a namespace.
const PMIX_RANK_WILDCARD: u32 = u32::MAX - 1;
const PMIX_SUCCESS: c_int = 0;
/// Data types of `pmix_value_t`.
const PMIX_BOOL: u16 = 1;
const PMIX_STRING: u16 = 3;
const PMIX_INT: u16 = 6;
/// `PMIX_GLOBAL`: share with every process, local and remote.
const PMIX_GLOBAL: u8 = 3;
/// Info keys of the fence and the get.
const PMIX_COLLECT_DATA: &str = "pmix.collect";
const PMIX_TIMEOUT: &str = "pmix.timeout";

/// `pmix_proc_t`: a namespace and a rank.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixProc {
    nspace: [c_char; PMIX_MAX_NSLEN + 1],
    rank: u32,
}

/// The union of `pmix_value_t`: 24 bytes (its largest member, `pmix_envar_t`), 8-aligned. We
/// use three of its members.
#[repr(C)]
#[derive(Clone, Copy)]
union PmixData {
    flag: bool,
    integer: c_int,
    string: *mut c_char,
    raw: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct PmixValue {
    type_: u16,
    data: PmixData,
}

/// `pmix_info_t`.
#[repr(C)]
struct PmixInfo {
    key: [c_char; PMIX_MAX_KEYLEN + 1],
    flags: u32,
    value: PmixValue,
}

const _: () = assert!(std::mem::size_of::<PmixProc>() == 260);
const _: () = assert!(std::mem::size_of::<PmixValue>() == 32);
const _: () = assert!(std::mem::size_of::<PmixInfo>() == 552);
const _: () = assert!(std::mem::offset_of!(PmixInfo, value) == 520);

type InitFn = unsafe extern "C" fn(*mut PmixProc, *mut PmixInfo, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const PmixInfo, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut PmixValue) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const PmixProc, usize, *const PmixInfo, usize) -> c_int;
type GetFn = unsafe extern "C" fn(
    *const PmixProc,
    *const c_char,
    *const PmixInfo,
    usize,
    *mut *mut PmixValue,
) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
type ValueDestructFn = unsafe extern "C" fn(*mut PmixValue);
type GetVersionFn = unsafe extern "C" fn() -> *const c_char;

/// Why a PMIx call failed: text for the rendezvous error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PmixError {
    /// dlopen failed (the text of dlerror).
    NotFound(String),
    /// The library lacks a function we need (not a PMIx client library, or too old).
    Symbol(&'static str),
    /// A call returned an error status: the call, the status and PMIx's text for it.
    Call {
        call: &'static str,
        status: i32,
        text: String,
    },
    /// An argument we pass holds a NUL byte, or a value was not what we put.
    Value(String),
}

impl std::fmt::Display for PmixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PmixError::NotFound(e) => write!(f, "cannot load libpmix: {e}"),
            PmixError::Symbol(s) => write!(f, "{LIBRARY} has no function {s}"),
            PmixError::Call { call, status, text } => write!(f, "{call} failed: {text} ({status})"),
            PmixError::Value(e) => f.write_str(e),
        }
    }
}

/// The loaded library: its function pointers. Never unloaded (PMIx starts a progress thread
/// that outlives any call), so the pointers stay valid for the life of the process.
struct Lib {
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    error_string: ErrorStringFn,
    value_destruct: ValueDestructFn,
    get_version: GetVersionFn,
}

const SYMBOLS: [&str; 9] = [
    "PMIx_Init",
    "PMIx_Finalize",
    "PMIx_Put",
    "PMIx_Commit",
    "PMIx_Fence",
    "PMIx_Get",
    "PMIx_Error_string",
    "PMIx_Value_destruct",
    "PMIx_Get_version",
];

fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a pointer to a NUL-terminated string valid until the next
    // dl* call on this thread; we copy it at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl Lib {
    fn load() -> Result<Lib, PmixError> {
        let path = std::env::var("LINERATE_LIBPMIX").unwrap_or_else(|_| LIBRARY.to_string());
        Lib::load_from(&path)
    }

    fn load_from(path: &str) -> Result<Lib, PmixError> {
        let name = CString::new(path)
            .map_err(|_| PmixError::NotFound("LINERATE_LIBPMIX contains a NUL byte".into()))?;
        // SAFETY: dlopen with a valid C string; loading libpmix runs its constructors, which
        // only initialise libpmix's own state. RTLD_GLOBAL: libpmix dlopens its own plugins
        // (mca components), which resolve symbols against it.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            return Err(PmixError::NotFound(dlerror_text()));
        }
        let mut ptrs = [ptr::null_mut::<c_void>(); SYMBOLS.len()];
        for (slot, sym) in ptrs.iter_mut().zip(SYMBOLS) {
            let s = CString::new(sym).expect("symbol names hold no NUL");
            // SAFETY: handle is a live dlopen handle; s is a valid C string.
            *slot = unsafe { libc::dlsym(handle, s.as_ptr()) };
            if slot.is_null() {
                return Err(PmixError::Symbol(sym));
            }
        }
        // SAFETY: each pointer is the named PMIx function, whose prototype in pmix.h (4.2, and
        // unchanged since PMIx 3) the types above declare.
        unsafe {
            Ok(Lib {
                init: std::mem::transmute::<*mut c_void, InitFn>(ptrs[0]),
                finalize: std::mem::transmute::<*mut c_void, FinalizeFn>(ptrs[1]),
                put: std::mem::transmute::<*mut c_void, PutFn>(ptrs[2]),
                commit: std::mem::transmute::<*mut c_void, CommitFn>(ptrs[3]),
                fence: std::mem::transmute::<*mut c_void, FenceFn>(ptrs[4]),
                get: std::mem::transmute::<*mut c_void, GetFn>(ptrs[5]),
                error_string: std::mem::transmute::<*mut c_void, ErrorStringFn>(ptrs[6]),
                value_destruct: std::mem::transmute::<*mut c_void, ValueDestructFn>(ptrs[7]),
                get_version: std::mem::transmute::<*mut c_void, GetVersionFn>(ptrs[8]),
            })
        }
    }

    fn check(&self, call: &'static str, status: c_int) -> Result<(), PmixError> {
        if status == PMIX_SUCCESS {
            return Ok(());
        }
        // SAFETY: PMIx_Error_string returns a pointer to a static NUL-terminated string.
        let text = unsafe {
            let p = (self.error_string)(status);
            if p.is_null() {
                String::from("unknown PMIx status")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(PmixError::Call { call, status, text })
    }
}

fn c_string(what: &str, s: &str) -> Result<CString, PmixError> {
    CString::new(s).map_err(|_| PmixError::Value(format!("PMIx {what} {s:?} contains a NUL byte")))
}

/// Copies `s` into a fixed, NUL-terminated C char array (PMIx keys and namespaces).
fn fill<const N: usize>(dst: &mut [c_char; N], s: &str) -> Result<(), PmixError> {
    if s.len() >= N || s.as_bytes().contains(&0) {
        return Err(PmixError::Value(format!(
            "PMIx name {s:?} is longer than {} bytes or holds a NUL byte",
            N - 1
        )));
    }
    dst.fill(0);
    for (d, b) in dst.iter_mut().zip(s.bytes()) {
        *d = c_char::from_ne_bytes([b]);
    }
    Ok(())
}

fn info(key: &str, value: PmixValue) -> Result<PmixInfo, PmixError> {
    let mut i = PmixInfo {
        key: [0; PMIX_MAX_KEYLEN + 1],
        flags: 0,
        value,
    };
    fill(&mut i.key, key)?;
    Ok(i)
}

/// An initialised PMIx client: finalized on drop.
pub(crate) struct Client {
    lib: Lib,
    me: PmixProc,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("pmix::Client")
            .field("namespace", &self.namespace())
            .field("rank", &self.me.rank)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Loads libpmix and connects to the launcher's PMIx server (`PMIx_Init`).
    pub(crate) fn init() -> Result<Client, PmixError> {
        let lib = Lib::load()?;
        let mut me = PmixProc {
            nspace: [0; PMIX_MAX_NSLEN + 1],
            rank: 0,
        };
        // SAFETY: `me` is a valid, writable pmix_proc_t; no info array (NULL, 0).
        let status = unsafe { (lib.init)(&raw mut me, ptr::null_mut(), 0) };
        lib.check("PMIx_Init", status)?;
        Ok(Client { lib, me })
    }

    /// The library's version string (`PMIx_Get_version`).
    pub(crate) fn version(&self) -> String {
        // SAFETY: PMIx_Get_version returns a pointer to a static NUL-terminated string.
        unsafe {
            let p = (self.lib.get_version)();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// This process's rank in its PMIx namespace.
    pub(crate) fn rank(&self) -> u32 {
        self.me.rank
    }

    /// This process's PMIx namespace (the launcher's job).
    pub(crate) fn namespace(&self) -> String {
        let bytes: Vec<u8> = self
            .me
            .nspace
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c.to_ne_bytes()[0])
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// `PMIx_Put` of a string with global scope; visible to the others after
    /// [`Client::commit`] and a [`Client::fence`].
    pub(crate) fn put(&self, key: &str, value: &str) -> Result<(), PmixError> {
        let k = c_string("key", key)?;
        let v = c_string("value", value)?;
        let mut val = PmixValue {
            type_: PMIX_STRING,
            data: PmixData {
                string: v.as_ptr().cast_mut(),
            },
        };
        // SAFETY: k and v are valid C strings that outlive the call; PMIx_Put copies the value
        // (it never frees or keeps the caller's string).
        let status = unsafe { (self.lib.put)(PMIX_GLOBAL, k.as_ptr(), &raw mut val) };
        self.lib.check("PMIx_Put", status)
    }

    /// `PMIx_Commit`: push what was put to the local PMIx server.
    pub(crate) fn commit(&self) -> Result<(), PmixError> {
        // SAFETY: no arguments; the client is initialised.
        let status = unsafe { (self.lib.commit)() };
        self.lib.check("PMIx_Commit", status)
    }

    /// `PMIx_Fence` over every process of our namespace, collecting the data they put, with a
    /// timeout in seconds the server enforces (where it supports `pmix.timeout`).
    pub(crate) fn fence(&self, timeout_s: i32) -> Result<(), PmixError> {
        let mut all = self.me;
        all.rank = PMIX_RANK_WILDCARD;
        let infos = [
            info(
                PMIX_COLLECT_DATA,
                PmixValue {
                    type_: PMIX_BOOL,
                    data: PmixData { flag: true },
                },
            )?,
            info(
                PMIX_TIMEOUT,
                PmixValue {
                    type_: PMIX_INT,
                    data: PmixData { integer: timeout_s },
                },
            )?,
        ];
        // SAFETY: `all` and `infos` are valid for the call (one proc, two infos whose values
        // hold no pointers).
        let status = unsafe { (self.lib.fence)(&raw const all, 1, infos.as_ptr(), infos.len()) };
        self.lib.check("PMIx_Fence", status)
    }

    /// `PMIx_Get` of a string `key` that process `rank` of our namespace put. The server waits
    /// at most `timeout_s` for it.
    pub(crate) fn get(&self, rank: u32, key: &str, timeout_s: i32) -> Result<String, PmixError> {
        let mut who = self.me;
        who.rank = rank;
        let k = c_string("key", key)?;
        let infos = [info(
            PMIX_TIMEOUT,
            PmixValue {
                type_: PMIX_INT,
                data: PmixData { integer: timeout_s },
            },
        )?];
        let mut out: *mut PmixValue = ptr::null_mut();
        // SAFETY: all pointers are valid for the call; on success PMIx allocates *out, which
        // we destruct and free below.
        let status = unsafe {
            (self.lib.get)(
                &raw const who,
                k.as_ptr(),
                infos.as_ptr(),
                infos.len(),
                &raw mut out,
            )
        };
        self.lib.check("PMIx_Get", status)?;
        if out.is_null() {
            return Err(PmixError::Value(format!(
                "PMIx_Get of {key:?} from rank {rank} returned no value"
            )));
        }
        // SAFETY: `out` is the pmix_value_t PMIx allocated (malloc) for us; we read it by its
        // type tag, then release it as PMIX_VALUE_RELEASE does (destruct, then free).
        unsafe {
            let v = &*out;
            let text = if v.type_ == PMIX_STRING && !v.data.string.is_null() {
                Ok(CStr::from_ptr(v.data.string).to_string_lossy().into_owned())
            } else {
                Err(PmixError::Value(format!(
                    "PMIx value {key:?} of rank {rank} is of type {}, expected a string ({PMIX_STRING})",
                    v.type_
                )))
            };
            (self.lib.value_destruct)(out);
            libc::free(out.cast());
            text
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: the client was initialised by PMIx_Init; no info array.
        let _ = unsafe { (self.lib.finalize)(ptr::null(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_too_long_or_with_nul_are_refused() {
        let mut key = [0 as c_char; PMIX_MAX_KEYLEN + 1];
        assert!(fill(&mut key, "linerate.coord").is_ok());
        assert_eq!(key[0], c_char::from_ne_bytes([b'l']));
        assert_eq!(key[14], 0);
        assert!(fill(&mut key, &"k".repeat(PMIX_MAX_KEYLEN)).is_ok());
        assert!(fill(&mut key, &"k".repeat(PMIX_MAX_KEYLEN + 1)).is_err());
        assert!(fill(&mut key, "a\0b").is_err());
        assert!(c_string("value", "a\0b").is_err());
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_crash() {
        let err = Lib::load_from("/nonexistent/libpmix-linerate-test.so")
            .err()
            .expect("no such library");
        assert!(matches!(err, PmixError::NotFound(_)), "{err}");
        assert!(
            err.to_string().contains("libpmix-linerate-test.so"),
            "{err}"
        );
    }
}
