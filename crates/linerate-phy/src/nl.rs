//! Netlink framing without a socket: the messages of a reply, their attributes, and the bytes
//! of a request. Native byte order throughout, as netlink is (`NLA_*` payloads are host order
//! except where a family says otherwise; ethtool and rtnetlink do not).

use std::fmt;

/// `NLMSG_ERROR`: an acknowledgement (error 0) or a failure (a negative errno).
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`: the end of a dump.
pub const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 1;
pub const NLM_F_ACK: u16 = 4;
/// The nested-attribute flag of `nla_type`.
pub const NLA_F_NESTED: u16 = 0x8000;
const NLMSG_HDRLEN: usize = 16;

/// Why a reply could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NlError {
    /// The kernel refused the request: the errno it sent (positive), and its extended ack
    /// message when it gave one.
    Kernel { errno: i32, message: Option<String> },
    /// The bytes are not netlink messages as the kernel writes them.
    Malformed(String),
}

impl fmt::Display for NlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kernel { errno, message } => {
                write!(f, "{}", errno_name(*errno))?;
                if let Some(m) = message {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
            Self::Malformed(what) => write!(f, "malformed netlink reply: {what}"),
        }
    }
}

impl std::error::Error for NlError {}

/// The name and words of the errnos a reply may carry (`EOPNOTSUPP (operation not supported)`).
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        1 => "EPERM (operation not permitted)",
        2 => "ENOENT (no such entry)",
        5 => "EIO (input/output error)",
        6 => "ENXIO (no such device or address)",
        11 => "EAGAIN (try again)",
        13 => "EACCES (permission denied)",
        16 => "EBUSY (device busy)",
        19 => "ENODEV (no such device)",
        22 => "EINVAL (invalid argument)",
        34 => "ERANGE (out of range)",
        61 => "ENODATA (no data available)",
        62 => "ETIME (timer expired)",
        95 => "EOPNOTSUPP (operation not supported)",
        110 => "ETIMEDOUT (timed out)",
        121 => "EREMOTEIO (remote I/O error)",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// One netlink message of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NlMsg<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    pub body: &'a [u8],
}

pub fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

pub fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

pub fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// The messages of `b` up to `NLMSG_DONE`. An `NLMSG_ERROR` with a non-zero code is the
/// kernel's refusal and ends the reply; one with code 0 is an acknowledgement and is skipped.
pub fn messages(mut b: &[u8]) -> Result<Vec<NlMsg<'_>>, NlError> {
    let mut out = Vec::new();
    while !b.is_empty() {
        if b.len() < NLMSG_HDRLEN {
            return Err(NlError::Malformed(format!(
                "{} trailing bytes, less than a 16-byte header",
                b.len()
            )));
        }
        let len = u32_at(b, 0).unwrap_or(0) as usize;
        let kind = u16_at(b, 4).unwrap_or(0);
        let flags = u16_at(b, 6).unwrap_or(0);
        let seq = u32_at(b, 8).unwrap_or(0);
        if len < NLMSG_HDRLEN || len > b.len() {
            return Err(NlError::Malformed(format!(
                "message length {len} out of range (16 to {})",
                b.len()
            )));
        }
        let body = &b[NLMSG_HDRLEN..len];
        match kind {
            NLMSG_DONE => return Ok(out),
            NLMSG_ERROR => {
                let code = u32_at(body, 0)
                    .map(u32::cast_signed)
                    .ok_or_else(|| NlError::Malformed("NLMSG_ERROR without its code".into()))?;
                if code != 0 {
                    return Err(NlError::Kernel {
                        errno: code.saturating_neg(),
                        message: ext_ack_message(body, flags),
                    });
                }
            }
            _ => out.push(NlMsg {
                kind,
                flags,
                seq,
                body,
            }),
        }
        let next = (len + 3) & !3;
        if next >= b.len() {
            break;
        }
        b = &b[next..];
    }
    Ok(out)
}

/// The extended ack's message (`NLMSGERR_ATTR_MSG` = 1) of an `NLMSG_ERROR` body: after the
/// code comes the offending request's header (16 bytes), or all of the request unless
/// `NLM_F_CAPPED` (0x100) says only its header was echoed; then the attributes when
/// `NLM_F_ACK_TLVS` (0x200) is set.
fn ext_ack_message(body: &[u8], flags: u16) -> Option<String> {
    if flags & 0x200 == 0 {
        return None;
    }
    let echoed = if flags & 0x100 != 0 {
        NLMSG_HDRLEN
    } else {
        u32_at(body, 4)? as usize
    };
    let tlvs = body.get(4 + echoed..)?;
    let a = Attrs::parse(tlvs).ok()?;
    a.string(1)
}

/// The attributes of one level, in order: (type without the nested flag, payload).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs<'a> {
    items: Vec<(u16, &'a [u8])>,
}

impl<'a> Attrs<'a> {
    /// Attributes laid end to end, each padded to 4 bytes. A length that runs past the end is
    /// an error, not a short read.
    pub fn parse(mut b: &'a [u8]) -> Result<Self, NlError> {
        let mut items = Vec::new();
        while b.len() >= 4 {
            let len = u16_at(b, 0).unwrap_or(0) as usize;
            let kind = u16_at(b, 2).unwrap_or(0) & !(NLA_F_NESTED | 0x4000);
            if len < 4 || len > b.len() {
                return Err(NlError::Malformed(format!(
                    "attribute {kind} of length {len} in {} bytes",
                    b.len()
                )));
            }
            items.push((kind, &b[4..len]));
            let next = (len + 3) & !3;
            if next >= b.len() {
                b = &[];
                break;
            }
            b = &b[next..];
        }
        if !b.is_empty() {
            return Err(NlError::Malformed(format!(
                "{} bytes left after the attributes",
                b.len()
            )));
        }
        Ok(Self { items })
    }

    pub fn get(&self, kind: u16) -> Option<&'a [u8]> {
        self.items.iter().find(|(k, _)| *k == kind).map(|(_, p)| *p)
    }

    /// Every attribute of `kind` (arrays are repeated attributes).
    pub fn all(&self, kind: u16) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.items
            .iter()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, p)| *p)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u16, &'a [u8])> + '_ {
        self.items.iter().copied()
    }

    pub fn nested(&self, kind: u16) -> Result<Option<Attrs<'a>>, NlError> {
        self.get(kind).map(Attrs::parse).transpose()
    }

    pub fn u8(&self, kind: u16) -> Option<u8> {
        self.get(kind)?.first().copied()
    }

    pub fn u32(&self, kind: u16) -> Option<u32> {
        u32_at(self.get(kind)?, 0)
    }

    pub fn u64(&self, kind: u16) -> Option<u64> {
        u64_at(self.get(kind)?, 0)
    }

    pub fn flag(&self, kind: u16) -> bool {
        self.get(kind).is_some()
    }

    /// A string attribute without its NUL.
    pub fn string(&self, kind: u16) -> Option<String> {
        let p = self.get(kind)?;
        let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
        Some(String::from_utf8_lossy(&p[..end]).into_owned())
    }
}

/// One attribute's bytes: header, payload, padding to 4.
pub fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
    let len = 4 + payload.len();
    let mut v = Vec::with_capacity((len + 3) & !3);
    v.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_ne_bytes());
    v.extend_from_slice(&kind.to_ne_bytes());
    v.extend_from_slice(payload);
    v.resize((len + 3) & !3, 0);
    v
}

/// A nested attribute.
pub fn nest(kind: u16, inner: &[u8]) -> Vec<u8> {
    attr(kind | NLA_F_NESTED, inner)
}

pub fn attr_u8(kind: u16, v: u8) -> Vec<u8> {
    attr(kind, &[v])
}

pub fn attr_u32(kind: u16, v: u32) -> Vec<u8> {
    attr(kind, &v.to_ne_bytes())
}

pub fn attr_str(kind: u16, s: &str) -> Vec<u8> {
    let mut p = s.as_bytes().to_vec();
    p.push(0);
    attr(kind, &p)
}

/// A whole message: the 16-byte header around `body`.
pub fn message(kind: u16, flags: u16, seq: u32, body: &[u8]) -> Vec<u8> {
    let len = NLMSG_HDRLEN + body.len();
    let mut v = Vec::with_capacity((len + 3) & !3);
    v.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_ne_bytes());
    v.extend_from_slice(&kind.to_ne_bytes());
    v.extend_from_slice(&flags.to_ne_bytes());
    v.extend_from_slice(&seq.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    v.extend_from_slice(body);
    v.resize((len + 3) & !3, 0);
    v
}

/// An `NLMSG_ERROR` carrying `errno` (positive), as the kernel answers a refused request.
pub fn error_message(errno: i32, seq: u32) -> Vec<u8> {
    let mut body = (-errno).to_ne_bytes().to_vec();
    body.extend_from_slice(&message(0, 0, seq, &[]));
    message(NLMSG_ERROR, 0x100, seq, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_and_nest() {
        let mut inner = attr_u32(2, 7);
        inner.extend(attr_str(3, "eth0"));
        let mut b = nest(1, &inner);
        b.extend(attr_u8(4, 1));
        let a = Attrs::parse(&b).unwrap();
        let n = a.nested(1).unwrap().unwrap();
        assert_eq!(n.u32(2), Some(7));
        assert_eq!(n.string(3).as_deref(), Some("eth0"));
        assert_eq!(a.u8(4), Some(1));
        assert!(!a.flag(9));
    }

    #[test]
    fn a_refusal_is_the_kernels_errno() {
        let mut b = message(20, 0, 1, &[1, 2, 3, 4]);
        b.extend(error_message(95, 1));
        let e = messages(&b).unwrap_err();
        assert_eq!(
            e,
            NlError::Kernel {
                errno: 95,
                message: None
            }
        );
        assert!(e.to_string().contains("EOPNOTSUPP"), "{e}");
    }

    #[test]
    fn an_extended_ack_message_is_kept() {
        // NLM_F_CAPPED | NLM_F_ACK_TLVS, then NLMSGERR_ATTR_MSG.
        let mut body = (-22i32).to_ne_bytes().to_vec();
        body.extend_from_slice(&message(20, 0, 1, &[]));
        body.extend(attr_str(1, "page must be > 0 with offset >= 128"));
        let b = message(NLMSG_ERROR, 0x300, 1, &body);
        match messages(&b).unwrap_err() {
            NlError::Kernel { errno, message } => {
                assert_eq!(errno, 22);
                assert_eq!(
                    message.as_deref(),
                    Some("page must be > 0 with offset >= 128")
                );
            }
            e @ NlError::Malformed(_) => panic!("{e}"),
        }
    }

    #[test]
    fn truncated_and_garbage_input_is_an_error_not_a_panic() {
        let good = message(20, 0, 1, &attr_u32(2, 5));
        for cut in 0..good.len() {
            let _ = messages(&good[..cut]);
        }
        assert!(messages(&[0xff; 40]).is_err());
        assert!(Attrs::parse(&[8, 0, 1, 0, 1]).is_err());
        assert!(Attrs::parse(&[2, 0, 1, 0]).is_err());
        // An acknowledgement is not a failure; a dump ends at NLMSG_DONE.
        let mut b = message(NLMSG_ERROR, 0, 1, &[0; 20]);
        b.extend(message(NLMSG_DONE, 0, 1, &[0; 4]));
        assert_eq!(messages(&b).unwrap(), vec![]);
    }
}
