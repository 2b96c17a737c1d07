//! rtnetlink, the one codec: a route socket, a dump request and its replies walked message by
//! message, and the attributes of a message. `qdisc.rs` (qdiscs, classes, filters) and
//! `linkdump.rs` (every link's statistics) speak it; their parsers take bytes, so they are
//! tested on captured replies.

use std::io::{self, Read, Write};

use socket2::{Domain, Protocol, Socket, Type};

const NETLINK_ROUTE: i32 = 0;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
pub(crate) const NLMSG_ERROR: u16 = 2;
pub(crate) const NLMSG_DONE: u16 = 3;
/// The size of `struct nlmsghdr`.
const NLMSG_HDRLEN: usize = 16;
/// The receive buffer: a dump reply is at most 32 KiB per read (the kernel's
/// `netlink_dump` grows its skb to the reader's buffer up to that).
const RECV_BYTES: usize = 64 * 1024;

pub(crate) fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

pub(crate) fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

pub(crate) fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// Iterate rtattrs: (type, payload).
pub(crate) fn attrs(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let (Some(len), Some(ty)) = (u16_at(b, 0), u16_at(b, 2)) else {
            break;
        };
        let len = len as usize;
        if len < 4 || len > b.len() {
            break;
        }
        out.push((ty & 0x3fff, &b[4..len]));
        let next = (len + 3) & !3;
        if next >= b.len() {
            break;
        }
        b = &b[next..];
    }
    out
}

/// The payload of the first attribute of type `t` in `a`.
pub(crate) fn attr<'a>(a: &[(u16, &'a [u8])], t: u16) -> Option<&'a [u8]> {
    a.iter().find(|(ty, _)| *ty == t).map(|(_, p)| *p)
}

/// Walk the messages of a netlink dump reply, handing each one's type and body to `each`:
/// `Ok(true)` at NLMSG_DONE (the dump is complete), the kernel's error at NLMSG_ERROR.
pub(crate) fn walk(mut b: &[u8], mut each: impl FnMut(u16, &[u8])) -> Result<bool, String> {
    while b.len() >= NLMSG_HDRLEN {
        let len = u32_at(b, 0).ok_or("short header")? as usize;
        let ty = u16_at(b, 4).ok_or("short header")?;
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(format!("netlink message length {len} out of range"));
        }
        let body = &b[NLMSG_HDRLEN..len];
        match ty {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let code = u32_at(body, 0).map_or(0, u32::cast_signed);
                if code != 0 {
                    return Err(io::Error::from_raw_os_error(-code).to_string());
                }
            }
            _ => each(ty, body),
        }
        let next = (len + 3) & !3;
        if next >= b.len() {
            break;
        }
        b = &b[next..];
    }
    Ok(false)
}

/// [`walk`] for the reply to request `seq` only: a message of another sequence (what is left
/// of an earlier dump cut short) is skipped, and so is its end.
pub(crate) fn walk_seq(
    mut b: &[u8],
    seq: u32,
    mut each: impl FnMut(u16, &[u8]),
) -> Result<bool, String> {
    while b.len() >= NLMSG_HDRLEN {
        let len = u32_at(b, 0).ok_or("short header")? as usize;
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(format!("netlink message length {len} out of range"));
        }
        if u32_at(b, 8) == Some(seq) && walk(&b[..len], &mut each)? {
            return Ok(true);
        }
        let next = (len + 3) & !3;
        if next >= b.len() {
            break;
        }
        b = &b[next..];
    }
    Ok(false)
}

/// A socket to the kernel's rtnetlink, reads bounded in time.
pub(crate) fn route_socket() -> io::Result<Socket> {
    let sock = Socket::new(
        Domain::from(libc::AF_NETLINK),
        Type::RAW.cloexec(),
        Some(Protocol::from(NETLINK_ROUTE)),
    )?;
    sock.set_read_timeout(Some(std::time::Duration::from_secs(2)))?;
    Ok(sock)
}

/// The dump request for message type `ty` with its family header `header` (`struct tcmsg`,
/// `struct ifinfomsg`), sequence `seq`.
pub(crate) fn dump_request(ty: u16, header: &[u8], seq: u32) -> Vec<u8> {
    let len = NLMSG_HDRLEN + header.len();
    let mut req = Vec::with_capacity(len);
    req.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_ne_bytes());
    req.extend_from_slice(&ty.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(header);
    req
}

/// Sends one dump request and feeds each reply to `parse` until it reports the dump
/// complete, at most `max_reads` reads (a reply that never ends is cut there: `parse` never
/// saw its end).
pub(crate) fn dump(
    sock: &Socket,
    ty: u16,
    header: &[u8],
    seq: u32,
    max_reads: usize,
    mut parse: impl FnMut(&[u8]) -> Result<bool, String>,
) -> io::Result<()> {
    let mut buf = vec![0u8; RECV_BYTES];
    dump_into(
        sock,
        &dump_request(ty, header, seq),
        &mut buf,
        max_reads,
        &mut parse,
    )
}

/// [`dump`] with the request made and a buffer of the caller's (a sampler keeps both).
pub(crate) fn dump_into(
    sock: &Socket,
    req: &[u8],
    buf: &mut Vec<u8>,
    max_reads: usize,
    parse: &mut impl FnMut(&[u8]) -> Result<bool, String>,
) -> io::Result<()> {
    if buf.len() < RECV_BYTES {
        buf.resize(RECV_BYTES, 0);
    }
    // An unbound netlink socket sends to the kernel (port id 0) and is bound on first use.
    (&*sock).write_all(req)?;
    for _ in 0..max_reads {
        let n = (&*sock).read(buf)?;
        if n == 0 || parse(&buf[..n]).map_err(io::Error::other)? {
            return Ok(());
        }
    }
    Ok(())
}

/// Send one request that is not a dump (`NLM_F_REQUEST` only: a `doit` such as
/// `RTM_GETDCB`) with its family header and attributes `body`, and return the reply of
/// sequence `seq`: the kernel answers with one message, or an `NLMSG_ERROR` (read with
/// [`walk`]). A late answer to an earlier request is skipped; at most 16 reads.
pub(crate) fn ask(sock: &Socket, ty: u16, body: &[u8], seq: u32) -> io::Result<Vec<u8>> {
    let len = u32::try_from(16 + body.len()).map_err(io::Error::other)?;
    let mut req = Vec::with_capacity(16 + body.len());
    req.extend_from_slice(&len.to_ne_bytes());
    req.extend_from_slice(&ty.to_ne_bytes());
    req.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(body);
    (&*sock).write_all(&req)?;
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..16 {
        let n = (&*sock).read(&mut buf)?;
        if n >= 16 && u32_at(&buf, 8) == Some(seq) {
            return Ok(buf[..n].to_vec());
        }
    }
    Err(io::Error::other(format!(
        "no netlink reply with sequence number {seq}"
    )))
}

/// An attribute of type `ty` with payload `p`, padded to 4 bytes (`struct rtattr`).
pub(crate) fn put_attr(out: &mut Vec<u8>, ty: u16, p: &[u8]) {
    let len = u16::try_from(4 + p.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&ty.to_ne_bytes());
    out.extend_from_slice(p);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}
