//! Pre-shared key challenge-response: the key never crosses the wire.

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;

type HmacSha256 = Hmac<Sha256>;

/// Minimum key length: 16 bytes (128 bits).
pub const MIN_PSK_BYTES: usize = 16;

#[derive(Clone)]
pub struct Psk(Vec<u8>);

impl std::fmt::Debug for Psk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Psk(<redacted>)")
    }
}

#[derive(Debug, Error)]
pub enum PskError {
    #[error("--psk-file {path}: {err}{}", read_hint(.err))]
    Read { path: String, err: std::io::Error },
    #[error("--psk-file {path}: the key is {len} bytes; at least {MIN_PSK_BYTES} are needed (e.g. `head -c 32 /dev/urandom | base64 > FILE`)")]
    Short { path: String, len: usize },
    #[error("--psk-file {path}: larger than 4096 bytes; expected a short secret")]
    Long { path: String },
}

/// What to do when the key file cannot be read, after the OS error.
fn read_hint(err: &std::io::Error) -> &'static str {
    match err.kind() {
        std::io::ErrorKind::NotFound => "; create a key with `head -c 32 /dev/urandom | base64 > FILE` and give a copy of the same file to the server and its clients",
        std::io::ErrorKind::PermissionDenied => "; the user running linerate must be able to read it (and, for a secret, no one else: `chmod 600 FILE` as its owner)",
        _ => "",
    }
}

/// Read a key file: its content, surrounding whitespace removed.
pub fn load_psk(path: &Path) -> Result<Psk, PskError> {
    let p = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|err| PskError::Read {
        path: p.clone(),
        err,
    })?;
    if meta.len() > 4096 {
        return Err(PskError::Long { path: p });
    }
    let raw = std::fs::read(path).map_err(|err| PskError::Read {
        path: p.clone(),
        err,
    })?;
    let key = raw.trim_ascii().to_vec();
    if key.len() < MIN_PSK_BYTES {
        return Err(PskError::Short {
            path: p,
            len: key.len(),
        });
    }
    Ok(Psk(key))
}

impl Psk {
    pub fn from_bytes(b: &[u8]) -> Self {
        Self(b.to_vec())
    }

    fn mac(&self, role: &str, a: &str, b: &str) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(role.as_bytes());
        m.update(a.as_bytes());
        m.update(b.as_bytes());
        m
    }

    /// The client's proof.
    pub fn client_proof(&self, server_nonce: &str, client_nonce: &str) -> String {
        hex::encode(
            self.mac("linerate-client", server_nonce, client_nonce)
                .finalize()
                .into_bytes(),
        )
    }

    /// The server's proof.
    pub fn server_proof(&self, client_nonce: &str, server_nonce: &str) -> String {
        hex::encode(
            self.mac("linerate-server", client_nonce, server_nonce)
                .finalize()
                .into_bytes(),
        )
    }

    /// Constant-time check of a client's proof.
    pub fn verify_client(&self, server_nonce: &str, client_nonce: &str, proof: &str) -> bool {
        let Ok(p) = hex::decode(proof) else {
            return false;
        };
        self.mac("linerate-client", server_nonce, client_nonce)
            .verify_slice(&p)
            .is_ok()
    }

    /// Constant-time check of the server's proof.
    pub fn verify_server(&self, client_nonce: &str, server_nonce: &str, proof: &str) -> bool {
        let Ok(p) = hex::decode(proof) else {
            return false;
        };
        self.mac("linerate-server", client_nonce, server_nonce)
            .verify_slice(&p)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_and_differ_by_role() {
        let k = Psk::from_bytes(b"0123456789abcdef0123");
        let c = k.client_proof("sn", "cn");
        assert!(k.verify_client("sn", "cn", &c));
        assert!(
            !k.verify_server("cn", "sn", &c),
            "a client proof is not a server proof"
        );
        assert!(!k.verify_client("sn", "other", &c));
        assert!(!k.verify_client("sn", "cn", "zz"));
        let wrong = Psk::from_bytes(b"another key of 16+ bytes");
        assert!(!wrong.verify_client("sn", "cn", &c));
        assert!(!c.contains("0123456789abcdef"));
    }

    #[test]
    fn key_files() {
        let d = std::env::temp_dir().join(format!("linerate-psk-{}", std::process::id()));
        std::fs::write(&d, "short\n").unwrap();
        assert!(matches!(load_psk(&d), Err(PskError::Short { len: 5, .. })));
        std::fs::write(&d, "  a-long-enough-secret-key \n").unwrap();
        assert!(load_psk(&d).is_ok());
        std::fs::remove_file(&d).unwrap();
        assert!(matches!(load_psk(&d), Err(PskError::Read { .. })));
    }
}
