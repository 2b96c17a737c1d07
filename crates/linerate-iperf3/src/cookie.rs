//! The cookie: 37 bytes a client sends first on its control connection and again first on each
//! TCP data connection, so the server can tell which test a data connection belongs to.
//!
//! Since 3.2 a client makes it from 36 random characters of `abcdefghijklmnopqrstuvwxyz234567`
//! and a NUL (`make_cookie`). 3.0 and 3.1 made `hostname.sec.usec.random…` cut to 36 characters
//! (e.g. `SVR028.1555493204.059114.5f55c3f5` from a 3.1.3 client in esnet/iperf#819), and the
//! 3.0 betas a UUID. A server therefore accepts any 37 bytes as a cookie; it only has to find
//! the same 37 bytes again on the data connections. iperf3 compares them with `strncmp`, which
//! stops at the first NUL; [`Cookie`]'s equality compares all 37 bytes, which no real client
//! can tell apart (every client ends its cookie at byte 36).

use std::fmt;

/// The cookie's length on the wire (`COOKIE_SIZE`).
pub const COOKIE_LEN: usize = 37;

/// The characters of a 3.2+ cookie.
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A test's cookie: any 37 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie(pub [u8; COOKIE_LEN]);

impl Cookie {
    /// A fresh cookie as iperf3 3.2+ makes them, from the operating system's random source.
    pub fn generate() -> Result<Cookie, getrandom::Error> {
        let mut entropy = [0u8; COOKIE_LEN - 1];
        getrandom::fill(&mut entropy)?;
        Ok(Cookie::from_entropy(entropy))
    }

    /// The cookie made from 36 random bytes: each picks one of the 32 characters (its low five
    /// bits, so every character is equally likely), then the NUL.
    pub fn from_entropy(entropy: [u8; COOKIE_LEN - 1]) -> Cookie {
        let mut out = [0u8; COOKIE_LEN];
        for (o, e) in out.iter_mut().zip(entropy) {
            *o = COOKIE_ALPHABET[usize::from(e & 31)];
        }
        Cookie(out)
    }

    /// The 37 bytes as received.
    pub fn from_bytes(bytes: [u8; COOKIE_LEN]) -> Cookie {
        Cookie(bytes)
    }

    /// The cookie at the start of `buf`, if it holds 37 bytes.
    pub fn from_prefix(buf: &[u8]) -> Option<Cookie> {
        buf.get(..COOKIE_LEN)?.try_into().ok().map(Cookie)
    }

    pub fn as_bytes(&self) -> &[u8; COOKIE_LEN] {
        &self.0
    }

    /// Whether it has the 3.2+ form: 36 characters of the alphabet and a NUL.
    pub fn is_random_form(&self) -> bool {
        self.0[COOKIE_LEN - 1] == 0
            && self.0[..COOKIE_LEN - 1]
                .iter()
                .all(|b| COOKIE_ALPHABET.contains(b))
    }
}

impl fmt::Debug for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cookie({self})")
    }
}

/// The cookie as text for logs: the bytes before the first NUL, with anything unprintable
/// escaped, so a hostile cookie cannot forge log lines.
impl fmt::Display for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.split(|b| *b == 0).next().unwrap_or_default();
        write!(f, "{}", text.escape_ascii())
    }
}

/// What the first bytes of a connection say: an iperf3 cookie, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sniff {
    /// 37 bytes of an iperf3 cookie.
    Cookie,
    /// Not a cookie: the first byte that rules it out is at this offset.
    NotCookie { at: usize },
    /// Every byte so far fits; more are needed to be sure.
    NeedMore,
}

/// Whether a connection's first bytes look like an iperf3 cookie: 36 bytes of text (no
/// control character, space or NUL; bytes above 0x7F are allowed after the first, for
/// hostnames in 3.0/3.1 cookies), then a NUL. The first is an ASCII letter or digit in every
/// generation (3.2+'s `[a-z2-7]`, a 3.0 beta's UUID, a 3.0/3.1 host name, which RFC 1123 starts
/// with one), so a binary frame (a length of 0xFFFFFFFF) is ruled out at its first byte. Decides as early as the bytes allow: a linerate control frame starts
/// with 0x00 (its length's high byte), TLS with 0x16, an HTTP request has a space within its
/// first 8 bytes, an SSH banner a CR LF; each is ruled out at that byte.
pub fn sniff(prefix: &[u8]) -> Sniff {
    for (i, &b) in prefix.iter().take(COOKIE_LEN).enumerate() {
        let fits = if i == COOKIE_LEN - 1 {
            b == 0
        } else if i == 0 {
            b.is_ascii_alphanumeric()
        } else {
            b > b' ' && b != 0x7f
        };
        if !fits {
            return Sniff::NotCookie { at: i };
        }
    }
    if prefix.len() >= COOKIE_LEN {
        Sniff::Cookie
    } else {
        Sniff::NeedMore
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_cookies_have_iperf3s_form() {
        let a = Cookie::generate().unwrap();
        let b = Cookie::generate().unwrap();
        assert_ne!(a, b, "random");
        for c in [a, b] {
            assert!(c.is_random_form(), "{c}");
            assert_eq!(sniff(c.as_bytes()), Sniff::Cookie);
            assert_eq!(c.to_string().len(), 36);
        }
        // Each entropy byte picks by its low five bits: all 32 characters are reachable and
        // equally likely (256 is a multiple of 32).
        let mut entropy = [0u8; 36];
        for (i, e) in entropy.iter_mut().enumerate() {
            *e = (i as u8).wrapping_mul(37);
        }
        let c = Cookie::from_entropy(entropy);
        assert_eq!(c.0[0], b'a');
        assert_eq!(c.0[1], COOKIE_ALPHABET[37 % 32]);
        assert_eq!(Cookie::from_entropy([255; 36]).0[..36], [b'7'; 36]);
    }

    #[test]
    fn any_37_bytes_are_a_cookie() {
        // 3.1.3's form, from esnet/iperf#819, padded as iperf3 did.
        let mut old = *b"SVR028.1555493204.059114.5f55c3f5123\0";
        let c = Cookie::from_bytes(old);
        assert!(!c.is_random_form());
        assert_eq!(sniff(&old), Sniff::Cookie);
        assert_eq!(c.to_string(), "SVR028.1555493204.059114.5f55c3f5123");
        old[3] = 0xff;
        assert_eq!(
            Cookie::from_bytes(old).to_string(),
            "SVR\\xff28.1555493204.059114.5f55c3f5123"
        );
        assert_eq!(Cookie::from_prefix(&old[..36]), None);
        assert_eq!(Cookie::from_prefix(&[7u8; 40]), Some(Cookie([7u8; 37])));
        // A hostile cookie cannot break a log line.
        let evil = Cookie::from_bytes(*b"a\nb\x1b[31mc\0                           ");
        assert_eq!(evil.to_string(), "a\\nb\\x1b[31mc");
    }

    #[test]
    fn sniffing_first_bytes() {
        let cookie = b"4ibxgyz4qdakhxpbkdgzqkn4ig4pj2ijuw4b\0";
        for n in 0..COOKIE_LEN {
            assert_eq!(sniff(&cookie[..n]), Sniff::NeedMore, "{n} bytes");
        }
        assert_eq!(sniff(cookie), Sniff::Cookie);
        // Whatever follows the cookie (a params frame) does not matter.
        let mut more = cookie.to_vec();
        more.extend_from_slice(&[0, 0, 0, 0x7b]);
        assert_eq!(sniff(&more), Sniff::Cookie);
        // What else reaches a port, ruled out as early as possible.
        assert_eq!(
            sniff(&[0, 0, 0, 40]),
            Sniff::NotCookie { at: 0 },
            "a linerate frame"
        );
        assert_eq!(sniff(&[0x16, 3, 1]), Sniff::NotCookie { at: 0 }, "TLS");
        assert_eq!(sniff(b"GET / HTTP/1.1\r\n"), Sniff::NotCookie { at: 3 });
        assert_eq!(
            sniff(b"SSH-2.0-OpenSSH_9.2\r\n"),
            Sniff::NotCookie { at: 19 }
        );
        assert_eq!(
            sniff(&[0xff]),
            Sniff::NotCookie { at: 0 },
            "no cookie starts with it"
        );
        assert_eq!(
            sniff(&[b'S', 0xff]),
            Sniff::NeedMore,
            "could be a 3.0 hostname byte"
        );
        assert_eq!(sniff(b"{\"a\":1}"), Sniff::NotCookie { at: 0 }, "JSON");
        // 37 printable bytes without the NUL.
        assert_eq!(sniff(&[b'a'; 40]), Sniff::NotCookie { at: 36 });
        assert_eq!(sniff(&[]), Sniff::NeedMore);
    }
}
