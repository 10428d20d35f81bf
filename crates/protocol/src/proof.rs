//! The two values derived from a backend credential with HMAC-SHA256, computed the same way by
//! the backend (which answers with them) and by its clients (which check them).
//!
//! - The **server proof**: `GET /health?proof=<nonce>` answers HMAC(key = credential,
//!   [`HEALTH_PROOF_PREFIX`] + nonce + `@` + the server's socket address), so a client can tell
//!   the server holds its credential before sending it (a process squatting a dead backend's
//!   port cannot compute it). The address is the one the client connected to, as the server
//!   sees it on the accepted socket (see [`proof_address`]): a squatter that relays the check to
//!   the real backend gets a proof for the backend's address, not for its own, so the client
//!   (which checks against the peer address it actually connected to) refuses it.
//! - The **screen credential**: HMAC(key = credential, [`SCREEN_CREDENTIAL_MESSAGE`]), a
//!   gateway-only credential granting at most `operator.read` and `operator.write`, which is all
//!   `ax-code mcp screen` holds.

use std::net::SocketAddr;

use ax_core::Secret;
use hmac::{Hmac, Mac};

use crate::{HEALTH_PROOF_PREFIX, SCREEN_CREDENTIAL_MESSAGE};

/// Whether `nonce` is a proof nonce: 64 lowercase hex characters (32 random bytes).
pub fn is_nonce(nonce: &str) -> bool {
    nonce.len() == 64
        && nonce
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The socket address as the proof binds it: `127.0.0.1:4096`, `[::1]:4096`. IPv4-mapped IPv6
/// addresses (a dual-stack socket) are written as IPv4, and the IPv6 scope and flow label are
/// left out, so the server's local address and the client's peer address of one connection
/// always give the same text.
pub fn proof_address(addr: SocketAddr) -> String {
    canonical(addr).to_string()
}

/// Lowercase hex of HMAC-SHA256(key = `credential`, message = [`HEALTH_PROOF_PREFIX`] + `nonce` +
/// `@` + [`proof_address`]`(server)`), where `server` is the server's address on the connection
/// that carried the check (the client's peer address, the server's local address).
pub fn health_proof(credential: &str, nonce: &str, server: SocketAddr) -> String {
    let mut mac = new_mac(credential);
    mac.update(HEALTH_PROOF_PREFIX.as_bytes());
    mac.update(nonce.as_bytes());
    mac.update(b"@");
    // The address text goes straight into the MAC, without an allocation.
    let _ = std::fmt::Write::write_fmt(
        &mut MacWriter(&mut mac),
        format_args!("{}", canonical(server)),
    );
    to_hex(&mac.finalize().into_bytes())
}

/// The address [`proof_address`] writes: IPv4-mapped as IPv4, no scope or flow label.
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// Feeds formatted text into a MAC.
struct MacWriter<'a>(&'a mut Hmac<sha2::Sha256>);

impl std::fmt::Write for MacWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

/// Lowercase hex of HMAC-SHA256(key = `credential`, message = [`SCREEN_CREDENTIAL_MESSAGE`]):
/// itself a credential, so a [`Secret`].
pub fn screen_credential(credential: &str) -> Secret {
    Secret::new(hmac_hex(
        credential,
        &[SCREEN_CREDENTIAL_MESSAGE.as_bytes()],
    ))
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

fn new_mac(key: &str) -> Hmac<sha2::Sha256> {
    <Hmac<sha2::Sha256> as Mac>::new_from_slice(key.as_bytes())
        .expect("HMAC takes a key of any length")
}

fn hmac_hex(key: &str, message: &[&[u8]]) -> String {
    let mut mac = new_mac(key);
    for part in message {
        mac.update(part);
    }
    to_hex(&mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Computed once, independently, with Python's `hmac` module:
    /// `hmac.new(b"test-credential-0123456789", b"ax-code-server-proof-v2:"
    ///           + b"0123456789abcdef" * 4 + b"@127.0.0.1:4096", "sha256").hexdigest()`
    const PROOF_VECTOR: &str = "ed6ea7ef6bdbdfbce059644fe5a374773776108f3010ff2bd41d4420a4cdf15c";
    /// The same with `b"@[::1]:4096"`.
    const PROOF_VECTOR_V6: &str =
        "703e8217f3aaa6f6c30e621b9251432d4943ab600020ae24683c6dd851668335";

    #[test]
    fn proof_matches_an_independent_vector() {
        let nonce = "0123456789abcdef".repeat(4);
        let v4: SocketAddr = "127.0.0.1:4096".parse().unwrap();
        let v6: SocketAddr = "[::1]:4096".parse().unwrap();
        let key = "test-credential-0123456789";
        assert_eq!(health_proof(key, &nonce, v4), PROOF_VECTOR);
        assert_eq!(health_proof(key, &nonce, v6), PROOF_VECTOR_V6);
        assert_ne!(
            health_proof("test-credential-0123456780", &nonce, v4),
            PROOF_VECTOR
        );
        assert_ne!(health_proof(key, &"0".repeat(64), v4), PROOF_VECTOR);
        // Bound to the address: the same nonce at another port or address is another proof.
        assert_ne!(
            health_proof(key, &nonce, "127.0.0.1:4097".parse().unwrap()),
            PROOF_VECTOR
        );
        assert_ne!(
            health_proof(key, &nonce, "127.0.0.2:4096".parse().unwrap()),
            PROOF_VECTOR
        );
    }

    #[test]
    fn proof_addresses_are_canonical() {
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:4096".parse().unwrap();
        assert_eq!(proof_address(mapped), "127.0.0.1:4096");
        let scoped = SocketAddr::V6(std::net::SocketAddrV6::new(
            std::net::Ipv6Addr::LOCALHOST,
            4096,
            7,
            3,
        ));
        assert_eq!(proof_address(scoped), "[::1]:4096");
    }

    /// `hmac.new(b"test-credential-0123456789", b"ax-code-screen-credential-v1",
    ///           "sha256").hexdigest()`, computed with Python's `hmac` module.
    const SCREEN_VECTOR: &str = "07d9f49d05802fab2b05f7d127a7861495d2ae18b0853aab57aabae48c02e678";

    #[test]
    fn screen_credential_matches_an_independent_vector() {
        assert_eq!(
            screen_credential("test-credential-0123456789").expose(),
            SCREEN_VECTOR
        );
        assert_ne!(
            screen_credential("test-credential-0123456780").expose(),
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
