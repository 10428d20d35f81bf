//! The one source of randomness for tokens, nonces and ID suffixes.
//!
//! Everything here returns an error when the operating system cannot supply random bytes: a
//! credential or nonce that could be guessed is worse than a refusal to start.

/// The operating system's random source failed.
#[derive(Debug, thiserror::Error)]
#[error("the operating system's random source failed: {0}")]
pub struct RandomError(getrandom::Error);

impl RandomError {
    /// The error an unusable OS source gives. Lets callers test the path that must refuse
    /// (fail a start, close a connection) when there is no randomness.
    pub fn unavailable() -> Self {
        Self(getrandom::Error::UNSUPPORTED)
    }
}

/// Fills `buf` from the operating system's random source.
pub fn fill(buf: &mut [u8]) -> Result<(), RandomError> {
    getrandom::fill(buf).map_err(RandomError)
}

/// `bytes` random bytes as lowercase hex (`2 * bytes` characters).
pub fn random_hex(bytes: usize) -> Result<String, RandomError> {
    let mut buf = vec![0u8; bytes];
    fill(&mut buf)?;
    let mut out = String::with_capacity(bytes * 2);
    for b in &buf {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` characters of `[0-9A-Za-z]`, uniformly distributed.
pub fn random_alnum(len: usize) -> Result<String, RandomError> {
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        fill(&mut buf)?;
        for &b in &buf {
            // 248 = 62 * 4: bytes at or above it would bias the distribution (rejection sampling).
            if b < 248 && out.len() < len {
                out.push(char::from(ALPHABET[usize::from(b % 62)]));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_alnum_have_the_asked_length_and_alphabet() {
        let hex = random_hex(32).unwrap();
        assert_eq!(hex.len(), 64);
        assert!(hex.bytes().all(|b| HEX.contains(&b)));
        let alnum = random_alnum(100).unwrap();
        assert_eq!(alnum.len(), 100);
        assert!(alnum.bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    #[test]
    fn two_draws_differ() {
        assert_ne!(random_hex(16).unwrap(), random_hex(16).unwrap());
    }

    #[test]
    fn alnum_uses_the_whole_alphabet() {
        // 62 symbols over 20,000 draws: every one appears unless the sampling is broken.
        let s = random_alnum(20_000).unwrap();
        for &c in ALPHABET {
            assert!(s.as_bytes().contains(&c), "{} never drawn", char::from(c));
        }
    }
}
