//! The few system calls the standard library and socket2 do not wrap:
//! TCP_INFO, per-thread CPU time, sendfile, memfd, the clock tick. Every `unsafe` block is here.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use linerate_proto::TcpStats;

/// `struct tcp_info` of Linux up to `tcpi_dsack_dups` (kernel ≥ 4.19; the busy and limited
/// times appeared in 4.10, `data_segs_out` in 4.6, `dsack_dups` in 4.19). The kernel copies min(our size,
/// its size) bytes and reports how many; fields past what it wrote stay 0.
#[repr(C)]
#[derive(Default)]
struct TcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    /// µs the connection had data to send (tcp_chrono busy).
    busy_time: u64,
    /// µs of that limited by the peer's receive window.
    rwnd_limited: u64,
    /// µs of that limited by this socket's send buffer.
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    /// Segments the receiver reported by D-SACK as duplicates: retransmits it already had.
    dsack_dups: u32,
}

/// Bytes of `struct tcp_info` up to and including `tcpi_sndbuf_limited`.
const CHRONO_END: usize = std::mem::offset_of!(TcpInfo, delivered);
/// Bytes of `struct tcp_info` up to and including `tcpi_dsack_dups`.
const DSACK_END: usize = std::mem::offset_of!(TcpInfo, dsack_dups) + std::mem::size_of::<u32>();

/// TCP_INFO of a socket, or `None` when the kernel refuses.
pub fn tcp_info(fd: &impl AsRawFd) -> Option<TcpStats> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `info` is a plain repr(C) struct of integers, valid for `len` bytes;
    // the kernel writes at most `len` bytes and updates `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::from_mut(&mut info).cast(),
            &raw mut len,
        )
    };
    (rc == 0).then(|| TcpStats {
        retransmits: u64::from(info.total_retrans),
        rtt_us: info.rtt,
        rttvar_us: info.rttvar,
        cwnd: info.snd_cwnd,
        mss: info.snd_mss,
        data_segs_out: u64::from(info.data_segs_out),
        // Older kernels write less: no figures rather than zeros that read as "never limited".
        limited: (len as usize >= CHRONO_END).then_some(linerate_proto::TcpLimited {
            busy_us: info.busy_time,
            rwnd_us: info.rwnd_limited,
            sndbuf_us: info.sndbuf_limited,
        }),
        // Linux < 4.19 writes no D-SACK count: unknown, not "none spurious".
        dsack_dups: (len as usize >= DSACK_END).then_some(u64::from(info.dsack_dups)),
    })
}

/// Whether the peer of a TCP connection is gone: it closed its side (CLOSE_WAIT: its FIN
/// arrived) or reset the connection (CLOSE), from TCP_INFO's state; data it sent before may
/// still be queued. False when the kernel does not say.
pub fn tcp_peer_closed(fd: &impl AsRawFd) -> bool {
    /// `TCP_CLOSE` and `TCP_CLOSE_WAIT` of the kernel's `enum tcp_state`.
    const CLOSE: u8 = 7;
    const CLOSE_WAIT: u8 = 8;
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: as in `tcp_info`: a plain repr(C) struct of integers, valid for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::from_mut(&mut info).cast(),
            &raw mut len,
        )
    };
    rc == 0 && matches!(info.state, CLOSE | CLOSE_WAIT)
}

/// CPU time of the calling thread, seconds: (user, system).
pub fn thread_cpu() -> (f64, f64) {
    rusage(libc::RUSAGE_THREAD)
}

/// CPU time of the whole process, seconds: (user, system).
pub fn process_cpu() -> (f64, f64) {
    rusage(libc::RUSAGE_SELF)
}

fn rusage(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(who, &raw mut u) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(u.ru_utime), tv(u.ru_stime))
}

/// An anonymous in-memory file holding `len` bytes of `fill`, for sendfile.
pub fn memfd_with(len: usize, fill: u8) -> io::Result<OwnedFd> {
    // SAFETY: the name is a valid NUL-terminated string.
    let fd = unsafe { libc::memfd_create(c"linerate-zerocopy".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut f = std::fs::File::from(owned);
    io::Write::write_all(&mut f, &vec![fill; len])?;
    Ok(OwnedFd::from(f))
}

/// sendfile(2) from `file` at `offset` into `sock`: bytes sent.
pub fn sendfile(sock: RawFd, file: RawFd, offset: i64, len: usize) -> io::Result<usize> {
    let mut off: libc::off_t = offset;
    // SAFETY: both descriptors are open for the duration of the call; `off` is ours.
    let n = unsafe { libc::sendfile(sock, file, &raw mut off, len) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Pin the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; the call reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "CPU number too large",
            ));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The name of the interface that holds `ip` (getifaddrs), e.g. `lo` for 127.0.0.1.
// getifaddrs hands out malloc'ed sockaddrs, aligned for any sockaddr type.
#[allow(clippy::cast_ptr_alignment)]
pub fn interface_of(ip: std::net::IpAddr) -> Option<String> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we walk read-only and free once.
    unsafe {
        if libc::getifaddrs(&raw mut head) != 0 {
            return None;
        }
        let mut found = None;
        let mut cur = head;
        while !cur.is_null() {
            let ifa = &*cur;
            if !ifa.ifa_addr.is_null() {
                let fam = i32::from((*ifa.ifa_addr).sa_family);
                let addr = if fam == libc::AF_INET {
                    let sin = &*ifa.ifa_addr.cast::<libc::sockaddr_in>();
                    Some(std::net::IpAddr::from(
                        u32::from_be(sin.sin_addr.s_addr).to_be_bytes(),
                    ))
                } else if fam == libc::AF_INET6 {
                    let sin6 = &*ifa.ifa_addr.cast::<libc::sockaddr_in6>();
                    Some(std::net::IpAddr::from(sin6.sin6_addr.s6_addr))
                } else {
                    None
                };
                if addr == Some(ip) && !ifa.ifa_name.is_null() {
                    found = Some(
                        std::ffi::CStr::from_ptr(ifa.ifa_name)
                            .to_string_lossy()
                            .into_owned(),
                    );
                    break;
                }
            }
            cur = ifa.ifa_next;
        }
        libc::freeifaddrs(head);
        found
    }
}

/// `MemAvailable` from /proc/meminfo, bytes.
pub fn available_memory_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    linerate_units::meminfo_bytes(&s, "MemAvailable")
}

/// Clock ticks per second of `/proc/stat` and `/proc/PID/stat` (USER_HZ; 100 on Linux when
/// sysconf cannot say).
pub fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant of the C library.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// recv(2) with MSG_DONTWAIT: `WouldBlock` when nothing is queued (used to spin briefly
/// before blocking, so a reply that arrives within microseconds costs no wake-up).
pub fn recv_nowait(fd: &impl AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// SO_RCVLOWAT: poll(2) reports the socket readable, and the kernel wakes a waiting reader,
/// only once `bytes` are queued (or at end of stream, on an error, or when the receive buffer is
/// nearly full: `tcp_epollin_ready`). Linux 4.18 and later also grow an automatically sized
/// receive buffer to twice the mark.
pub fn set_rcvlowat(fd: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes)
        .unwrap_or(libc::c_int::MAX)
        .max(1);
    // SAFETY: the option value is a c_int that lives across the call, its size passed with it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            std::ptr::from_ref(&v).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// FIONREAD (SIOCINQ): the bytes queued on a socket that no read has taken yet (tcp(7),
/// udp(7): for UDP, the next datagram's).
pub fn unread_bytes(fd: &impl AsRawFd) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which lives across the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, std::ptr::from_mut(&mut n)) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

/// SO_MAX_PACING_RATE: the kernel paces the socket's sending to `bytes_per_s` (with the fq
/// qdisc, or TCP's own pacing), as iperf3's `--fq-rate` asks (socket(7)).
pub fn set_max_pacing_rate(fd: &impl AsRawFd, bytes_per_s: u64) -> io::Result<()> {
    // SAFETY: the option value is a u64 that lives across the call, its size passed with it
    // (the kernel takes 32 or 64 bits).
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            std::ptr::from_ref(&bytes_per_s).cast(),
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// recv(2) with MSG_TRUNC on a TCP socket: the kernel takes up to `len` bytes off the receive
/// queue and drops them without copying them to user space (tcp(7)), returning how many it
/// took; 0 at end of stream. `buf` is never written by the kernel for TCP, but a real buffer of
/// `len` bytes is passed so that a kernel which did copy would stay in bounds.
pub fn recv_discard(fd: &impl AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_TRUNC,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
