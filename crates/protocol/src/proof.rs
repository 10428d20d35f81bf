//! The two values derived from a backend credential with HMAC-SHA256, computed the same way by
//! the backend (which answers with them) and by its clients (which check them).
//!
//! - The **server proof**: `GET /health?proof=<nonce>` answers HMAC(key = credential,
//!   [`HEALTH_PROOF_PREFIX`] + nonce), so a client can tell the server holds its credential
//!   before sending it (a process squatting a dead backend's port cannot compute it).
//! - The **screen credential**: HMAC(key = credential, [`SCREEN_CREDENTIAL_MESSAGE`]), a
//!   gateway-only credential granting at most `operator.read` and `operator.write`, which is all
//!   `ax-code mcp screen` holds.

use hmac::{Hmac, Mac};

use crate::{HEALTH_PROOF_PREFIX, SCREEN_CREDENTIAL_MESSAGE};

/// Whether `nonce` is a proof nonce: 64 lowercase hex characters (32 random bytes).
pub fn is_nonce(nonce: &str) -> bool {
    nonce.len() == 64
        && nonce
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Lowercase hex of HMAC-SHA256(key = `credential`, message = [`HEALTH_PROOF_PREFIX`] + `nonce`).
pub fn health_proof(credential: &str, nonce: &str) -> String {
    hmac_hex(
        credential,
        &[HEALTH_PROOF_PREFIX.as_bytes(), nonce.as_bytes()],
    )
}

/// Lowercase hex of HMAC-SHA256(key = `credential`, message = [`SCREEN_CREDENTIAL_MESSAGE`]).
pub fn screen_credential(credential: &str) -> String {
    hmac_hex(credential, &[SCREEN_CREDENTIAL_MESSAGE.as_bytes()])
}

/// `bytes` as lowercase hex.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

fn hmac_hex(key: &str, message: &[&[u8]]) -> String {
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key.as_bytes())
        .expect("HMAC takes a key of any length");
    for part in message {
        mac.update(part);
    }
    to_hex(&mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Computed once, independently, with Python's `hmac` module:
    /// `hmac.new(b"test-credential-0123456789",
    ///           b"ax-code-server-proof-v1:" + b"0123456789abcdef" * 4, "sha256").hexdigest()`
    const PROOF_VECTOR: &str = "c254f978416dbc6cf60ed35e7ebb1ef5bbfa6b99f9f6b4d22a0a841be24041f3";

    #[test]
    fn proof_matches_an_independent_vector() {
        let nonce = "0123456789abcdef".repeat(4);
        assert_eq!(
            health_proof("test-credential-0123456789", &nonce),
            PROOF_VECTOR
        );
        assert_ne!(
            health_proof("test-credential-0123456780", &nonce),
            PROOF_VECTOR
        );
        assert_ne!(
            health_proof("test-credential-0123456789", &"0".repeat(64)),
            PROOF_VECTOR
        );
    }

    /// `hmac.new(b"test-credential-0123456789", b"ax-code-screen-credential-v1",
    ///           "sha256").hexdigest()`, computed with Python's `hmac` module.
    const SCREEN_VECTOR: &str = "07d9f49d05802fab2b05f7d127a7861495d2ae18b0853aab57aabae48c02e678";

    #[test]
    fn screen_credential_matches_an_independent_vector() {
        assert_eq!(
            screen_credential("test-credential-0123456789"),
            SCREEN_VECTOR
        );
        assert_ne!(
            screen_credential("test-credential-0123456780"),
            SCREEN_VECTOR
        );
    }

    #[test]
    fn nonces_are_64_lowercase_hex() {
        assert!(is_nonce(&"a".repeat(64)));
        assert!(!is_nonce(&"A".repeat(64)));
        assert!(!is_nonce(&"a".repeat(63)));
        assert!(!is_nonce(&"a".repeat(65)));
        assert!(!is_nonce(&"g".repeat(64)));
        assert!(!is_nonce(&format!("{}g", "a".repeat(63))));
        assert!(!is_nonce(""));
    }

    #[test]
    fn hex_is_lowercase_and_padded() {
        assert_eq!(to_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
