//! One-time sign-in codes, shared by the backend and the hub (docs/control-ui.md,
//! docs/hub.md §4): a code is printed on the terminal (never the credential), and the Control
//! UI exchanges it once for the credential. Transport-free, so both servers use this one store.
//!
//! At most [`MAX_LIVE_CODES`] codes live at once; minting more drops the oldest. Codes are
//! compared in constant time.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::Secret;

/// Live codes kept at most; the oldest goes first.
pub const MAX_LIVE_CODES: usize = 16;
/// Characters of a code (`[0-9A-Za-z]`, about 190 bits).
pub const CODE_LEN: usize = 32;

/// Whether `code` has the shape of a code ([`CODE_LEN`] characters of `[0-9A-Za-z]`), checked
/// before a lookup so a malformed one gets a clear "bad request" rather than "unknown".
pub fn well_formed(code: &str) -> bool {
    code.len() == CODE_LEN && code.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The live codes of one server (redacted in `Debug`, zeroed when dropped).
#[derive(Debug)]
pub struct Codes {
    ttl: Duration,
    live: Mutex<Vec<(Secret, Instant)>>,
}

impl Codes {
    /// An empty store whose codes live for `ttl`.
    pub fn new(ttl: Duration) -> Codes {
        Codes {
            ttl,
            live: Mutex::new(Vec::new()),
        }
    }

    /// How long a code lives.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Vec<(Secret, Instant)>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh code, valid from `now` for the TTL and for one [`Codes::redeem`].
    pub fn mint(&self, now: Instant) -> Result<Secret, crate::RandomError> {
        let code = Secret::new(crate::random::random_alnum(CODE_LEN)?);
        let mut live = self.live();
        live.retain(|(_, expires)| *expires > now);
        if live.len() >= MAX_LIVE_CODES {
            live.remove(0);
        }
        live.push((code.clone(), now + self.ttl));
        Ok(code)
    }

    /// Whether `code` is live at `now`; a live code is used up by this call.
    pub fn redeem(&self, code: &str, now: Instant) -> bool {
        let mut live = self.live();
        live.retain(|(_, expires)| *expires > now);
        // Compare with every entry, so the time taken does not depend on which one matched.
        let mut found = None;
        for (i, (candidate, _)) in live.iter().enumerate() {
            if candidate.ct_eq_str(code) {
                found = Some(i);
            }
        }
        match found {
            Some(i) => {
                live.remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_and_only_until_it_expires() {
        let codes = Codes::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let a = codes.mint(t0).unwrap();
        let a = a.expose();
        assert_eq!(a.len(), CODE_LEN);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert!(codes.redeem(a, t0 + Duration::from_secs(59)));
        assert!(!codes.redeem(a, t0 + Duration::from_secs(59)), "second use");

        let b = codes.mint(t0).unwrap();
        assert!(
            !codes.redeem(b.expose(), t0 + Duration::from_secs(60)),
            "expired"
        );
        let c = codes.mint(t0).unwrap();
        assert!(!codes.redeem(c.expose(), t0 + Duration::from_secs(61)));
        assert!(
            !codes.redeem(c.expose(), t0),
            "an expired code is gone for good"
        );
    }

    #[test]
    fn unknown_and_near_miss_codes_are_refused() {
        let codes = Codes::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let a = codes.mint(t0).unwrap();
        let a = a.expose();
        let mut near = a.as_bytes().to_vec();
        near[CODE_LEN - 1] = if near[CODE_LEN - 1] == b'a' {
            b'b'
        } else {
            b'a'
        };
        assert!(!codes.redeem(std::str::from_utf8(&near).unwrap(), t0));
        assert!(!codes.redeem(&a[..CODE_LEN - 1], t0));
        assert!(!codes.redeem("", t0));
        assert!(codes.redeem(a, t0), "the misses did not use the code up");
        assert!(
            !format!("{codes:?}").contains(a),
            "Debug shows no live code"
        );
    }

    #[test]
    fn at_most_sixteen_codes_live_and_the_oldest_goes_first() {
        let codes = Codes::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let minted: Vec<Secret> = (0..=MAX_LIVE_CODES)
            .map(|_| codes.mint(t0).unwrap())
            .collect();
        assert!(
            !codes.redeem(minted[0].expose(), t0),
            "the oldest was dropped"
        );
        for code in &minted[1..] {
            assert!(codes.redeem(code.expose(), t0));
        }
    }
}
