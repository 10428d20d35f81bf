//! Minting IDs that sort by creation: a prefix, 12 lowercase hex digits of a monotonic
//! (milliseconds × 16 + counter) value, then 14 random characters of `[0-9A-Za-z]`.

use std::{
    sync::Mutex,
    time::{SystemTime, UNIX_EPOCH},
};

use ax_protocol::{Millis, SessionId};

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LEN: usize = 14;

/// Last value handed out; a std mutex because it is held for a few instructions only.
static LAST: Mutex<u64> = Mutex::new(0);

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

fn next_ordinal() -> u64 {
    let candidate = (now_ms().max(0) as u64) << 4;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let value = candidate.max(*last + 1) & 0xffff_ffff_ffff;
    *last = value;
    value
}

/// `len` characters of `[0-9A-Za-z]`, uniformly (rejection sampling avoids modulo bias).
pub fn random_alnum(len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        getrandom::fill(&mut buf).expect("the OS random source failed");
        for &b in &buf {
            // 248 = 62 * 4: bytes at or above it would bias the distribution.
            if b < 248 && out.len() < len {
                out.push(ALPHABET[(b % 62) as usize] as char);
            }
        }
    }
    out
}

fn mint(prefix: &str) -> String {
    format!(
        "{prefix}{:012x}{}",
        next_ordinal(),
        random_alnum(RANDOM_LEN)
    )
}

pub fn session_id() -> SessionId {
    mint("ses_")
        .parse()
        .expect("minted session IDs are well formed")
}

pub fn message_id() -> String {
    mint("msg_")
}

pub fn permission_id() -> String {
    mint("per_")
}

/// Whether `s` has the shape of IDs minted with `prefix` (for path parameters).
pub fn is_valid(prefix: &str, s: &str) -> bool {
    s.len() == prefix.len() + 26
        && s.starts_with(prefix)
        && s.as_bytes()[prefix.len()..]
            .iter()
            .all(u8::is_ascii_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_have_the_documented_shape_and_sort_by_creation() {
        let ids: Vec<String> = (0..200).map(|_| session_id().to_string()).collect();
        for id in &ids {
            assert_eq!(id.len(), 30, "{id}");
            assert!(
                id[4..16]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
            assert!(id[16..].bytes().all(|b| b.is_ascii_alphanumeric()));
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
        assert!(is_valid("msg_", &message_id()));
        assert!(!is_valid("msg_", &permission_id()));
    }
}
