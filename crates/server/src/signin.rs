//! One-time sign-in codes for the Control UI, so the credential never appears in a URL (a link
//! stays in the browser's history even after the page rewrites its address).
//!
//! - `POST /signin/code` (bearer credential) mints a code: 32 random characters, valid for
//!   [`crate::ServerConfig::sign_in_ttl`] (60 s by default) and for one exchange.
//!   `ax-code serve` prints a link with a fresh one; `ax-code link` asks for another.
//! - `POST /signin` `{"code": "…"}` (no credential; the Host/Origin checks of every route
//!   apply) answers `{"token": "…"}` once; a second use, an expired or an unknown code is 401
//!   `invalid_code`. The Control UI reads the code from its `#code=` fragment.
//!
//! At most [`MAX_LIVE_CODES`] codes live at once; minting more drops the oldest. Codes are
//! compared in constant time.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use ax_core::Secret;
use ax_protocol::{SignInCode, SignInExchange, SignInGrant};
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State, rejection::JsonRejection},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};

use crate::{auth, error::Failure, state::Shared};

/// Live codes kept at most; the oldest goes first.
pub const MAX_LIVE_CODES: usize = 16;
/// Characters of a code (`[0-9A-Za-z]`, about 190 bits).
pub const CODE_LEN: usize = 32;
/// A sign-in body is `{"code":"<32 chars>"}`; anything much bigger is not one.
const MAX_BODY: usize = 1024;

/// The live codes of one backend (redacted in `Debug`, zeroed when dropped).
#[derive(Debug)]
pub struct Codes {
    ttl: Duration,
    live: Mutex<Vec<(Secret, Instant)>>,
}

impl Codes {
    pub fn new(ttl: Duration) -> Codes {
        Codes {
            ttl,
            live: Mutex::new(Vec::new()),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Vec<(Secret, Instant)>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh code, valid from `now` for the TTL and for one [`Codes::redeem`].
    pub fn mint(&self, now: Instant) -> Result<Secret, ax_core::RandomError> {
        let code = Secret::new(ax_core::random::random_alnum(CODE_LEN)?);
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

#[derive(Clone)]
struct SignIn {
    app: Shared,
    codes: Arc<Codes>,
}

/// `POST /signin` and `POST /signin/code`; both get the Host/Origin layer of the whole router.
pub fn router<S: Clone + Send + Sync + 'static>(app: Shared, codes: Arc<Codes>) -> Router<S> {
    Router::new()
        .route("/signin", post(exchange))
        .route("/signin/code", post(mint))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(SignIn { app, codes })
}

/// The answers carry a secret (a code or the credential): never stored by a cache.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn invalid_code() -> Failure {
    Failure::new(
        StatusCode::UNAUTHORIZED,
        "invalid_code",
        "this sign-in code is unknown, used or expired: run `ax-code link` for a fresh link",
    )
}

/// The body as a JSON object with the one field `code`: serde would also take `["…"]`.
fn parse_exchange(value: serde_json::Value) -> Result<SignInExchange, Failure> {
    if !value.is_object() {
        return Err(Failure::bad_request(
            r#"expected a JSON object {"code": "…"}"#,
        ));
    }
    serde_json::from_value(value).map_err(|e| Failure::bad_request(e.to_string()))
}

async fn exchange(
    State(s): State<SignIn>,
    input: Result<Json<serde_json::Value>, JsonRejection>,
) -> Response {
    let input = match input.map(|Json(v)| parse_exchange(v)) {
        Ok(Ok(input)) => input,
        Ok(Err(failure)) => return failure.into_response(),
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Failure::too_large("a sign-in body is one short code").into_response();
        }
        Err(rejection) => return Failure::bad_request(rejection.body_text()).into_response(),
    };
    let code = input.code.expose();
    if code.len() != CODE_LEN || !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Failure::bad_request(format!(
            "a sign-in code is {CODE_LEN} characters of [0-9A-Za-z]"
        ))
        .into_response();
    }
    if !s.codes.redeem(code, Instant::now()) {
        return no_store(invalid_code().into_response());
    }
    tracing::info!("a sign-in code was exchanged for the credential");
    no_store(
        Json(SignInGrant {
            token: s.app.token.clone(),
        })
        .into_response(),
    )
}

async fn mint(State(s): State<SignIn>, request: axum::extract::Request) -> Response {
    // Only the full credential mints: the screen credential is refused like on every API route.
    if !auth::has_credential(&s.app, request.headers()) {
        return Failure::unauthorized().into_response();
    }
    let code = match s.codes.mint(Instant::now()) {
        Ok(code) => code,
        Err(e) => return Failure::from(crate::ids::no_randomness(e)).into_response(),
    };
    let expires_in_ms = u64::try_from(s.codes.ttl().as_millis()).unwrap_or(u64::MAX);
    no_store(
        (
            StatusCode::CREATED,
            Json(SignInCode {
                code,
                expires_in_ms,
            }),
        )
            .into_response(),
    )
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
