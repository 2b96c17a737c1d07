//! libfabric objects as owning handles, and the headers' inline dispatch (`fi_domain`,
//! `fi_endpoint`, `fi_mr_reg`, `fi_write`, `fi_cq_read`, `fi_eq_sread`, ...) as safe methods.
//!
//! Every wait here is bounded: `fi_eq_sread` is called with a timeout, and completion queues are
//! only polled (`fi_cq_read`), never waited on.
#![allow(unsafe_code)]

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ffi::{c_int, c_void};
use std::net::SocketAddr;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bindings as sys;
use super::{InfoList, InfoQuery, Lib};

/// A failed libfabric call: its name, the (positive) error code and fi_strerror's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FiError {
    pub call: &'static str,
    pub code: i32,
    pub text: String,
}

impl FiError {
    pub(crate) fn new(lib: &Lib, call: &'static str, ret: isize) -> FiError {
        let code = i32::try_from(ret.unsigned_abs()).unwrap_or(i32::MAX);
        FiError {
            call,
            code,
            text: lib.strerror(code),
        }
    }
    pub(crate) fn timeout(call: &'static str) -> FiError {
        FiError {
            call,
            code: sys::FI_ETIMEDOUT,
            text: "timed out".into(),
        }
    }
}

fn check(lib: &Lib, call: &'static str, ret: c_int) -> Result<(), FiError> {
    if ret == 0 {
        Ok(())
    } else {
        Err(FiError::new(lib, call, ret as isize))
    }
}

/// Owns one libfabric object (any `fid_*` struct, whose first member is a `struct fid`) and
/// closes it on drop (`fi_close`).
#[derive(Debug)]
struct Handle<T>(*mut T);

impl<T> Handle<T> {
    fn fid(&self) -> *mut sys::fid {
        self.0.cast()
    }
}

impl<T> Drop for Handle<T> {
    fn drop(&mut self) {
        if self.0.is_null() {
            return;
        }
        // SAFETY: every fid_* struct starts with `struct fid`, whose ops table has `close`
        // (fi_close in fabric.h). The object was opened by us and is closed exactly once.
        unsafe {
            let fid = self.fid();
            if let Some(close) = (*(*fid).ops).close {
                close(fid);
            }
        }
    }
}

/// Page-aligned, zeroed memory that the provider reads and writes behind our back: only ever
/// accessed through raw pointers, never as a long-lived Rust reference.
#[derive(Debug)]
struct Region {
    ptr: *mut u8,
    len: usize,
}

impl Region {
    fn new(len: usize) -> Region {
        let layout = Layout::from_size_align(len.max(1), 4096).expect("region layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(
            !ptr.is_null(),
            "out of memory allocating a {len}-byte RDMA region"
        );
        Region { ptr, len }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len.max(1), 4096).expect("region layout");
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr, layout) };
    }
}

/// One completion read from the completion queue.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Completion {
    pub ctx: u64,
    pub flags: u64,
    pub len: usize,
    pub data: u64,
}

/// An error completion (`fi_cq_readerr`).
#[derive(Debug, Clone)]
pub(crate) struct CqError {
    pub err: FiError,
}

/// An event queue event we care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EqEvent {
    Connected,
    Shutdown,
    Other(u32),
}

/// What the peer tells in its connection request or accept: the CM private data.
#[derive(Debug)]
pub(crate) struct ConnReq {
    info: InfoList,
    pub data: Vec<u8>,
}

const CM_BUF: usize = 512;

/// An event, the fi_info of a CONNREQ, and the CM private data.
type EqRead = Option<(u32, Option<InfoList>, Vec<u8>)>;

#[allow(clippy::cast_possible_wrap)] // FI_EAVAIL is 259
const EAVAIL: isize = sys::FI_EAVAIL as isize;

/// Reads one event from `eq`, waiting at most `timeout` (fi_eq_sread). Returns the event, the
/// fi_info of a CONNREQ (owned), and the CM data.
fn eq_sread(lib: &Arc<Lib>, eq: *mut sys::fid_eq, timeout: Duration) -> Result<EqRead, FiError> {
    #[repr(C, align(8))]
    struct Buf([u8; CM_BUF]);
    let mut buf = Buf([0; CM_BUF]);
    let mut event: u32 = 0;
    let ms = c_int::try_from(timeout.as_millis())
        .unwrap_or(c_int::MAX)
        .max(0);
    // SAFETY: eq is a live EQ; the buffer holds a fi_eq_cm_entry plus CM data and is 8-aligned.
    let ret = unsafe {
        let sread = (*(*eq).ops).sread.expect("fi_eq_sread");
        sread(eq, &raw mut event, buf.0.as_mut_ptr().cast(), CM_BUF, ms, 0)
    };
    eq_result(lib, eq, ret, event, &buf.0)
}

/// fi_eq_read without waiting.
fn eq_read(lib: &Arc<Lib>, eq: *mut sys::fid_eq) -> Result<EqRead, FiError> {
    #[repr(C, align(8))]
    struct Buf([u8; CM_BUF]);
    let mut buf = Buf([0; CM_BUF]);
    let mut event: u32 = 0;
    // SAFETY: as in eq_sread.
    let ret = unsafe {
        let read = (*(*eq).ops).read.expect("fi_eq_read");
        read(eq, &raw mut event, buf.0.as_mut_ptr().cast(), CM_BUF, 0)
    };
    eq_result(lib, eq, ret, event, &buf.0)
}

fn eq_result(
    lib: &Arc<Lib>,
    eq: *mut sys::fid_eq,
    ret: isize,
    event: u32,
    buf: &[u8],
) -> Result<EqRead, FiError> {
    let hdr = std::mem::size_of::<sys::fi_eq_cm_entry>();
    if ret == -(sys::FI_EAGAIN as isize) || ret == -(sys::FI_ETIMEDOUT as isize) {
        return Ok(None);
    }
    if ret == -EAVAIL {
        // SAFETY: a zeroed fi_eq_err_entry is a valid argument to fi_eq_readerr.
        let mut e: sys::fi_eq_err_entry = unsafe { std::mem::zeroed() };
        // SAFETY: eq is live; e is a valid out-parameter.
        let r = unsafe { ((*(*eq).ops).readerr.expect("fi_eq_readerr"))(eq, &raw mut e, 0) };
        if r < 0 {
            return Err(FiError::new(lib, "fi_eq_readerr", r));
        }
        return Err(FiError::new(lib, "fi_eq_sread", e.err as isize));
    }
    if ret < 0 {
        return Err(FiError::new(lib, "fi_eq_sread", ret));
    }
    let n = usize::try_from(ret).unwrap_or(0).min(buf.len());
    let mut info = None;
    let mut data = Vec::new();
    if n >= hdr {
        // SAFETY: the provider wrote a fi_eq_cm_entry at the start of the 8-aligned buffer.
        let entry = unsafe { buf.as_ptr().cast::<sys::fi_eq_cm_entry>().read_unaligned() };
        if event == sys::FI_CONNREQ && !entry.info.is_null() {
            info = Some(InfoList {
                lib: lib.clone_ref(),
                head: entry.info,
            });
        }
        data = buf[hdr..n].to_vec();
    }
    Ok(Some((event, info, data)))
}

fn open_fabric(
    lib: &Arc<Lib>,
    info: *mut sys::fi_info,
) -> Result<Handle<sys::fid_fabric>, FiError> {
    let mut fabric = ptr::null_mut();
    // SAFETY: info is a valid fi_info from fi_getinfo; fi_fabric allocates the fabric.
    let ret = unsafe { (lib.fabric)((*info).fabric_attr, &raw mut fabric, ptr::null_mut()) };
    check(lib, "fi_fabric", ret)?;
    Ok(Handle(fabric))
}

fn open_eq(lib: &Lib, fabric: &Handle<sys::fid_fabric>) -> Result<Handle<sys::fid_eq>, FiError> {
    // SAFETY: a zeroed fi_eq_attr is valid; we set the fields we need.
    let mut attr: sys::fi_eq_attr = unsafe { std::mem::zeroed() };
    attr.size = 64;
    attr.wait_obj = sys::fi_wait_obj_FI_WAIT_UNSPEC;
    let mut eq = ptr::null_mut();
    // SAFETY: fi_eq_open(fabric, attr, eq, ctx) = fabric->ops->eq_open(...).
    let ret = unsafe {
        ((*(*fabric.0).ops).eq_open.expect("eq_open"))(
            fabric.0,
            &raw mut attr,
            &raw mut eq,
            ptr::null_mut(),
        )
    };
    check(lib, "fi_eq_open", ret)?;
    Ok(Handle(eq))
}

fn bind(
    lib: &Lib,
    call: &'static str,
    fid: *mut sys::fid,
    to: *mut sys::fid,
    flags: u64,
) -> Result<(), FiError> {
    // SAFETY: fi_ep_bind/fi_pep_bind = fid->ops->bind(fid, bfid, flags); both objects are live.
    let ret = unsafe { ((*(*fid).ops).bind.expect("bind"))(fid, to, flags) };
    check(lib, call, ret)
}

/// A listening passive endpoint.
#[derive(Debug)]
pub(crate) struct Passive {
    pep: Handle<sys::fid_pep>,
    eq: Handle<sys::fid_eq>,
    fabric: Handle<sys::fid_fabric>,
    lib: Arc<Lib>,
    pub provider: String,
    pub domain: String,
}

// SAFETY: the handles are owned by this value alone; libfabric objects may be used from any
// thread as long as calls on one domain are not concurrent (FI_THREAD_DOMAIN), which `&mut`/
// ownership guarantees.
unsafe impl Send for Passive {}

impl Passive {
    /// fi_getinfo(FI_SOURCE) at `bind`, fi_fabric, fi_eq_open, fi_passive_ep, fi_pep_bind,
    /// fi_listen.
    pub(crate) fn listen(
        lib: &Arc<Lib>,
        provider: Option<&str>,
        bind_addr: SocketAddr,
    ) -> Result<Passive, FiError> {
        let node = bind_addr.ip().to_string();
        let service = bind_addr.port().to_string();
        let infos = lib
            .getinfo(&InfoQuery {
                provider,
                domain: None,
                node: Some(&node),
                service: Some(&service),
                source: true,
                src: None,
            })
            .map_err(|e| FiError::new(lib, "fi_getinfo", e as isize))?;
        let info = infos
            .first()
            .ok_or_else(|| FiError::new(lib, "fi_getinfo", sys::FI_ENODATA as isize))?;
        let fabric = open_fabric(lib, info.raw())?;
        let eq = open_eq(lib, &fabric)?;
        let mut pep = ptr::null_mut();
        // SAFETY: fi_passive_ep(fabric, info, pep, ctx) = fabric->ops->passive_ep(...).
        let ret = unsafe {
            ((*(*fabric.0).ops).passive_ep.expect("passive_ep"))(
                fabric.0,
                info.raw(),
                &raw mut pep,
                ptr::null_mut(),
            )
        };
        check(lib, "fi_passive_ep", ret)?;
        let pep = Handle(pep);
        bind(lib, "fi_pep_bind", pep.fid(), eq.fid(), 0)?;
        // SAFETY: fi_listen(pep) = pep->cm->listen(pep).
        let ret = unsafe { ((*(*pep.0).cm).listen.expect("listen"))(pep.0) };
        check(lib, "fi_listen", ret)?;
        Ok(Passive {
            provider: info.provider(),
            domain: info.domain(),
            pep,
            eq,
            fabric,
            lib: lib.clone(),
        })
    }

    /// fi_getname: the address (and so the port) we listen on.
    pub(crate) fn local_addr(&self) -> Result<SocketAddr, FiError> {
        let mut buf = [0u64; 16];
        let mut len: usize = std::mem::size_of_val(&buf);
        // SAFETY: fi_getname(&pep->fid, addr, len) = pep->cm->getname(fid, addr, len); the
        // buffer is 128 bytes, enough for any sockaddr.
        let ret = unsafe {
            ((*(*self.pep.0).cm).getname.expect("getname"))(
                self.pep.fid(),
                buf.as_mut_ptr().cast(),
                &raw mut len,
            )
        };
        check(&self.lib, "fi_getname", ret)?;
        // SAFETY: the provider wrote `len` bytes of a sockaddr into buf.
        unsafe { super::sockaddr_read(buf.as_ptr().cast(), len) }
            .ok_or_else(|| FiError::new(&self.lib, "fi_getname", sys::FI_EINVAL as isize))
    }

    /// Waits (bounded) for a connection request.
    pub(crate) fn wait_connreq(
        &self,
        deadline: Instant,
        stop: &dyn Fn() -> bool,
    ) -> Result<ConnReq, FiError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stop() {
                return Err(FiError::timeout(
                    "fi_eq_sread (waiting for a connection request)",
                ));
            }
            match eq_sread(&self.lib, self.eq.0, left.min(Duration::from_millis(100)))? {
                Some((ev, Some(info), data)) if ev == sys::FI_CONNREQ => {
                    return Ok(ConnReq { info, data })
                }
                _ => {}
            }
        }
    }

    /// fi_reject: refuses a connection request (the initiator sees "Connection refused").
    pub(crate) fn reject(&self, req: &ConnReq) {
        let Some(info) = req.info.first() else { return };
        // SAFETY: fi_reject(pep, handle, param, len) = pep->cm->reject(...); the handle comes
        // from the CONNREQ event's fi_info, which we still own.
        unsafe {
            if let Some(reject) = (*(*self.pep.0).cm).reject {
                reject(self.pep.0, (*info.raw()).handle, ptr::null(), 0);
            }
        }
    }

    /// Opens the domain, completion queue, endpoint and memory region for an incoming request.
    /// Call [`Conn::accept`] after posting receives.
    pub(crate) fn prepare(self, req: &ConnReq, region_len: usize) -> Result<Conn, FiError> {
        let info = req.info.first().expect("CONNREQ carries an fi_info");
        let (domain, cq, ep) =
            open_endpoint(&self.lib, &self.fabric, info.raw(), &self.eq, region_len)?;
        let (mr, region, desc, key, base) =
            register(&self.lib, &domain, info.mr_mode(), region_len)?;
        Ok(Conn {
            ep,
            mr,
            cq,
            domain,
            pep: Some(self.pep),
            eq: self.eq,
            fabric: self.fabric,
            region,
            desc,
            key,
            base,
            lib: self.lib,
            provider: info.provider(),
            domain_name: info.domain(),
            tx_size: info.tx_size(),
            cq_buf: vec![
                sys::fi_cq_data_entry {
                    op_context: ptr::null_mut(),
                    flags: 0,
                    len: 0,
                    buf: ptr::null_mut(),
                    data: 0
                };
                32
            ],
            dest: Vec::new(),
        })
    }
}

type Opened = (
    Handle<sys::fid_domain>,
    Handle<sys::fid_cq>,
    Handle<sys::fid_ep>,
);

fn open_endpoint(
    lib: &Lib,
    fabric: &Handle<sys::fid_fabric>,
    info: *mut sys::fi_info,
    eq: &Handle<sys::fid_eq>,
    _region_len: usize,
) -> Result<Opened, FiError> {
    let mut domain = ptr::null_mut();
    // SAFETY: fi_domain(fabric, info, domain, ctx) = fabric->ops->domain(...).
    let ret = unsafe {
        ((*(*fabric.0).ops).domain.expect("domain"))(
            fabric.0,
            info,
            &raw mut domain,
            ptr::null_mut(),
        )
    };
    check(lib, "fi_domain", ret)?;
    let domain = Handle(domain);
    // SAFETY: a zeroed fi_cq_attr is valid; we set what we need.
    let mut attr: sys::fi_cq_attr = unsafe { std::mem::zeroed() };
    // SAFETY: info is valid; tx_attr/rx_attr are allocated by libfabric.
    attr.size = unsafe { (*(*info).tx_attr).size + (*(*info).rx_attr).size };
    attr.format = sys::fi_cq_format_FI_CQ_FORMAT_DATA;
    attr.wait_obj = sys::fi_wait_obj_FI_WAIT_NONE;
    let mut cq = ptr::null_mut();
    // SAFETY: fi_cq_open(domain, attr, cq, ctx) = domain->ops->cq_open(...).
    let ret = unsafe {
        ((*(*domain.0).ops).cq_open.expect("cq_open"))(
            domain.0,
            &raw mut attr,
            &raw mut cq,
            ptr::null_mut(),
        )
    };
    check(lib, "fi_cq_open", ret)?;
    let cq = Handle(cq);
    let mut ep = ptr::null_mut();
    // SAFETY: fi_endpoint(domain, info, ep, ctx) = domain->ops->endpoint(...).
    let ret = unsafe {
        ((*(*domain.0).ops).endpoint.expect("endpoint"))(
            domain.0,
            info,
            &raw mut ep,
            ptr::null_mut(),
        )
    };
    check(lib, "fi_endpoint", ret)?;
    let ep = Handle(ep);
    bind(lib, "fi_ep_bind", ep.fid(), eq.fid(), 0)?;
    bind(
        lib,
        "fi_ep_bind",
        ep.fid(),
        cq.fid(),
        (sys::FI_TRANSMIT | sys::FI_RECV) as u64,
    )?;
    // SAFETY: fi_enable(ep) = ep->fid.ops->control(&ep->fid, FI_ENABLE, NULL).
    let ret = unsafe {
        ((*(*ep.fid()).ops).control.expect("control"))(
            ep.fid(),
            sys::FI_ENABLE.cast_signed(),
            ptr::null_mut(),
        )
    };
    check(lib, "fi_enable", ret)?;
    Ok((domain, cq, ep))
}

type Registered = (Handle<sys::fid_mr>, Region, *mut c_void, u64, u64);

fn register(
    lib: &Lib,
    domain: &Handle<sys::fid_domain>,
    mr_mode: i32,
    len: usize,
) -> Result<Registered, FiError> {
    let region = Region::new(len);
    let access = (sys::FI_READ
        | sys::FI_WRITE
        | sys::FI_REMOTE_READ
        | sys::FI_REMOTE_WRITE
        | sys::FI_SEND
        | sys::FI_RECV) as u64;
    let mut mr = ptr::null_mut();
    // SAFETY: fi_mr_reg(domain, buf, len, access, offset, requested_key, flags, mr, ctx) =
    // domain->mr->reg(&domain->fid, ...); the region outlives the MR (field order in Conn).
    let ret = unsafe {
        ((*(*domain.0).mr).reg.expect("mr reg"))(
            domain.fid(),
            region.ptr.cast(),
            region.len,
            access,
            0,
            0x011e_7a7e,
            0,
            &raw mut mr,
            ptr::null_mut(),
        )
    };
    check(lib, "fi_mr_reg", ret)?;
    let mr = Handle(mr);
    // SAFETY: fi_mr_desc(mr) = mr->mem_desc, fi_mr_key(mr) = mr->key.
    let (desc, key) = unsafe { ((*mr.0).mem_desc, (*mr.0).key) };
    let base = if mr_mode & sys::FI_MR_VIRT_ADDR != 0 {
        region.ptr as u64
    } else {
        0
    };
    Ok((mr, region, desc, key, base))
}

/// A connected (or about to be) message endpoint with its registered region. Fields drop (and
/// so close) in declaration order: endpoint, MR, CQ, domain, listener, EQ, fabric, then memory.
#[derive(Debug)]
#[allow(dead_code)] // mr, domain and fabric are held only to be closed in this order
pub(crate) struct Conn {
    ep: Handle<sys::fid_ep>,
    mr: Handle<sys::fid_mr>,
    cq: Handle<sys::fid_cq>,
    domain: Handle<sys::fid_domain>,
    pep: Option<Handle<sys::fid_pep>>,
    eq: Handle<sys::fid_eq>,
    fabric: Handle<sys::fid_fabric>,
    region: Region,
    desc: *mut c_void,
    key: u64,
    base: u64,
    lib: Arc<Lib>,
    pub provider: String,
    pub domain_name: String,
    pub tx_size: usize,
    cq_buf: Vec<sys::fi_cq_data_entry>,
    /// The peer's address (active side), copied from the fi_info, for fi_connect.
    dest: Vec<u64>,
}

// SAFETY: as for Passive: owned exclusively, used from one thread at a time.
unsafe impl Send for Conn {}

impl Conn {
    /// fi_getinfo for `server` with the explicit source address `local` (port 0), then the
    /// fabric, event queue, domain, completion queue, endpoint and memory region. Call
    /// [`Conn::connect`] after posting receives.
    pub(crate) fn prepare_active(
        lib: &Arc<Lib>,
        provider: Option<&str>,
        domain: Option<&str>,
        local: SocketAddr,
        server: SocketAddr,
        region_len: usize,
    ) -> Result<Conn, FiError> {
        let node = server.ip().to_string();
        let service = server.port().to_string();
        let infos = lib
            .getinfo(&InfoQuery {
                provider,
                domain,
                node: Some(&node),
                service: Some(&service),
                source: false,
                src: Some(local),
            })
            .map_err(|e| FiError::new(lib, "fi_getinfo", e as isize))?;
        let info = infos
            .first()
            .ok_or_else(|| FiError::new(lib, "fi_getinfo", sys::FI_ENODATA as isize))?;
        let fabric = open_fabric(lib, info.raw())?;
        let eq = open_eq(lib, &fabric)?;
        let (domain, cq, ep) = open_endpoint(lib, &fabric, info.raw(), &eq, region_len)?;
        let (mr, region, desc, key, base) = register(lib, &domain, info.mr_mode(), region_len)?;
        Ok(Conn {
            ep,
            mr,
            cq,
            domain,
            pep: None,
            eq,
            fabric,
            region,
            desc,
            key,
            base,
            lib: lib.clone(),
            provider: info.provider(),
            domain_name: info.domain(),
            tx_size: info.tx_size(),
            cq_buf: vec![
                sys::fi_cq_data_entry {
                    op_context: ptr::null_mut(),
                    flags: 0,
                    len: 0,
                    buf: ptr::null_mut(),
                    data: 0
                };
                32
            ],
            dest: info.dest_addr_words(),
        })
    }

    /// Address the peer uses for RMA into our region (its virtual address or 0), and the key.
    pub(crate) fn remote_base(&self) -> (u64, u64) {
        (self.base, self.key)
    }

    pub(crate) fn region_len(&self) -> usize {
        self.region.len
    }

    /// fi_connect with `data` as CM private data; waits (bounded) for FI_CONNECTED and returns
    /// the peer's accept data.
    pub(crate) fn connect(&mut self, data: &[u8], timeout: Duration) -> Result<Vec<u8>, FiError> {
        let dest = if self.dest.is_empty() {
            ptr::null()
        } else {
            self.dest.as_ptr().cast()
        };
        // SAFETY: fi_connect(ep, addr, param, len) = ep->cm->connect(...); the address is the
        // fi_info's dest_addr (copied, 8-aligned); data is valid for len bytes.
        let ret = unsafe {
            ((*(*self.ep.0).cm).connect.expect("connect"))(
                self.ep.0,
                dest,
                data.as_ptr().cast(),
                data.len(),
            )
        };
        check(&self.lib, "fi_connect", ret)?;
        self.wait_connected("fi_connect", timeout)
    }

    /// fi_accept with `data` as CM private data; waits (bounded) for FI_CONNECTED.
    pub(crate) fn accept(&mut self, data: &[u8], timeout: Duration) -> Result<(), FiError> {
        // SAFETY: fi_accept(ep, param, len) = ep->cm->accept(...).
        let ret = unsafe {
            ((*(*self.ep.0).cm).accept.expect("accept"))(
                self.ep.0,
                data.as_ptr().cast(),
                data.len(),
            )
        };
        check(&self.lib, "fi_accept", ret)?;
        self.wait_connected("fi_accept", timeout)?;
        // The listener is no longer needed: close it so its port is free again.
        self.pep = None;
        Ok(())
    }

    fn wait_connected(
        &mut self,
        call: &'static str,
        timeout: Duration,
    ) -> Result<Vec<u8>, FiError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(FiError::timeout(call));
            }
            match eq_sread(&self.lib, self.eq.0, left.min(Duration::from_millis(100))) {
                Ok(Some((ev, _, data))) if ev == sys::FI_CONNECTED => return Ok(data),
                Ok(Some((ev, _, _))) if ev == sys::FI_SHUTDOWN => {
                    return Err(FiError::new(&self.lib, call, sys::FI_ECONNRESET as isize))
                }
                Ok(_) => {}
                Err(mut e) => {
                    e.call = call;
                    return Err(e);
                }
            }
        }
    }

    /// Non-blocking fi_eq_read: a shutdown or other connection event, if any.
    pub(crate) fn poll_eq(&self) -> Result<Option<EqEvent>, FiError> {
        Ok(eq_read(&self.lib, self.eq.0)?.map(|(ev, _, _)| match ev {
            sys::FI_CONNECTED => EqEvent::Connected,
            sys::FI_SHUTDOWN => EqEvent::Shutdown,
            other => EqEvent::Other(other),
        }))
    }

    /// fi_shutdown.
    pub(crate) fn shutdown(&self) {
        // SAFETY: fi_shutdown(ep, flags) = ep->cm->shutdown(ep, flags).
        unsafe { ((*(*self.ep.0).cm).shutdown.expect("shutdown"))(self.ep.0, 0) };
    }

    fn local(&self, off: usize, len: usize) -> *mut c_void {
        assert!(
            off.checked_add(len)
                .is_some_and(|end| end <= self.region.len),
            "{off}+{len} beyond the {}-byte region",
            self.region.len
        );
        // SAFETY: in bounds, checked above.
        unsafe { self.region.ptr.add(off).cast() }
    }

    fn posted(ret: isize, lib: &Lib, call: &'static str) -> Result<bool, FiError> {
        if ret == 0 {
            Ok(true)
        } else if ret == -(sys::FI_EAGAIN as isize) {
            Ok(false)
        } else {
            Err(FiError::new(lib, call, ret))
        }
    }

    /// fi_send / fi_senddata from our region. Ok(false) is -FI_EAGAIN: drive progress and retry.
    pub(crate) fn post_send(
        &self,
        off: usize,
        len: usize,
        data: Option<u64>,
        ctx: u64,
    ) -> Result<bool, FiError> {
        let buf = self.local(off, len);
        // SAFETY: fi_send/fi_senddata = ep->msg->send/senddata; buf is inside our registered
        // region, desc is its MR descriptor; ctx is an opaque value the provider hands back.
        let ret = unsafe {
            let msg = &*(*self.ep.0).msg;
            match data {
                Some(d) => (msg.senddata.expect("senddata"))(
                    self.ep.0,
                    buf,
                    len,
                    self.desc,
                    d,
                    0,
                    ctx as *mut c_void,
                ),
                None => {
                    (msg.send.expect("send"))(self.ep.0, buf, len, self.desc, 0, ctx as *mut c_void)
                }
            }
        };
        Self::posted(
            ret,
            &self.lib,
            if data.is_some() {
                "fi_senddata"
            } else {
                "fi_send"
            },
        )
    }

    /// fi_recv into our region.
    pub(crate) fn post_recv(&self, off: usize, len: usize, ctx: u64) -> Result<bool, FiError> {
        let buf = self.local(off, len);
        // SAFETY: fi_recv = ep->msg->recv; as for post_send.
        let ret = unsafe {
            ((*(*self.ep.0).msg).recv.expect("recv"))(
                self.ep.0,
                buf,
                len,
                self.desc,
                0,
                ctx as *mut c_void,
            )
        };
        Self::posted(ret, &self.lib, "fi_recv")
    }

    /// fi_write / fi_writedata from our region to the peer's `raddr` (under `rkey`).
    pub(crate) fn post_write(
        &self,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u64,
        data: Option<u64>,
        ctx: u64,
    ) -> Result<bool, FiError> {
        let buf = self.local(off, len);
        // SAFETY: fi_write/fi_writedata = ep->rma->write/writedata; the remote side checks the
        // remote range against its registration.
        let ret = unsafe {
            let rma = &*(*self.ep.0).rma;
            match data {
                Some(d) => (rma.writedata.expect("writedata"))(
                    self.ep.0,
                    buf,
                    len,
                    self.desc,
                    d,
                    0,
                    raddr,
                    rkey,
                    ctx as *mut c_void,
                ),
                None => (rma.write.expect("write"))(
                    self.ep.0,
                    buf,
                    len,
                    self.desc,
                    0,
                    raddr,
                    rkey,
                    ctx as *mut c_void,
                ),
            }
        };
        Self::posted(
            ret,
            &self.lib,
            if data.is_some() {
                "fi_writedata"
            } else {
                "fi_write"
            },
        )
    }

    /// fi_read from the peer's `raddr` into our region.
    pub(crate) fn post_read(
        &self,
        off: usize,
        len: usize,
        raddr: u64,
        rkey: u64,
        ctx: u64,
    ) -> Result<bool, FiError> {
        let buf = self.local(off, len);
        // SAFETY: fi_read = ep->rma->read; as for post_write.
        let ret = unsafe {
            ((*(*self.ep.0).rma).read.expect("read"))(
                self.ep.0,
                buf,
                len,
                self.desc,
                0,
                raddr,
                rkey,
                ctx as *mut c_void,
            )
        };
        Self::posted(ret, &self.lib, "fi_read")
    }

    /// fi_cq_read (which also drives progress for manual-progress providers such as tcp):
    /// appends what completed to `out`. An error completion is returned as Err.
    pub(crate) fn poll_cq(&mut self, out: &mut Vec<Completion>) -> Result<usize, CqError> {
        let cq = self.cq.0;
        // SAFETY: fi_cq_read(cq, buf, count) = cq->ops->read(...); cq_buf holds `count`
        // FI_CQ_FORMAT_DATA entries, the format the CQ was opened with.
        let ret = unsafe {
            ((*(*cq).ops).read.expect("cq read"))(
                cq,
                self.cq_buf.as_mut_ptr().cast(),
                self.cq_buf.len(),
            )
        };
        if ret > 0 {
            let n = usize::try_from(ret).unwrap_or(0);
            out.extend(self.cq_buf[..n].iter().map(|e| Completion {
                ctx: e.op_context as u64,
                flags: e.flags,
                len: e.len,
                data: e.data,
            }));
            return Ok(n);
        }
        if ret == -(sys::FI_EAGAIN as isize) {
            return Ok(0);
        }
        if ret == -EAVAIL {
            // SAFETY: a zeroed fi_cq_err_entry is a valid out-parameter (err_data NULL/0 asks
            // the provider for its own buffer).
            let mut e: sys::fi_cq_err_entry = unsafe { std::mem::zeroed() };
            // SAFETY: fi_cq_readerr(cq, buf, flags) = cq->ops->readerr(...).
            let r = unsafe { ((*(*cq).ops).readerr.expect("cq readerr"))(cq, &raw mut e, 0) };
            if r < 0 {
                return Err(CqError {
                    err: FiError::new(&self.lib, "fi_cq_readerr", r),
                });
            }
            return Err(CqError {
                err: FiError::new(&self.lib, "fi_cq_read", e.err as isize),
            });
        }
        Err(CqError {
            err: FiError::new(&self.lib, "fi_cq_read", ret),
        })
    }

    /// Runs `f` on `len` bytes of our region at `off`. Only for ranges with no operation in
    /// flight (the caller's protocol guarantees the provider is not writing them).
    pub(crate) fn with_bytes<R>(&self, off: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let p = self.local(off, len);
        // SAFETY: in bounds; the caller guarantees no operation targets the range meanwhile.
        f(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
    }

    /// Runs `f` on `len` writable bytes of our region at `off` (same rule as [`Conn::with_bytes`]).
    pub(crate) fn with_bytes_mut<R>(
        &mut self,
        off: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        let p = self.local(off, len);
        // SAFETY: in bounds and exclusive (&mut self); no operation targets the range meanwhile.
        f(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
    }

    /// A volatile load of one byte the peer may be writing (latency polling).
    pub(crate) fn load_byte(&self, off: usize) -> u8 {
        let p = self.local(off, 1);
        // SAFETY: in bounds; volatile because the provider/NIC writes it behind our back.
        unsafe { ptr::read_volatile(p.cast::<u8>()) }
    }

    /// A volatile store of one byte.
    pub(crate) fn store_byte(&self, off: usize, v: u8) {
        let p = self.local(off, 1);
        // SAFETY: in bounds; a single-byte volatile store.
        unsafe { ptr::write_volatile(p.cast::<u8>(), v) };
    }
}
