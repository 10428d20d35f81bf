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
//! The code store itself is `ax_core::signin` (the hub uses it too): at most
//! `MAX_LIVE_CODES` live codes, compared in constant time.

use std::{sync::Arc, time::Instant};

use ax_protocol::{SignInCode, SignInExchange, SignInGrant};
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State, rejection::JsonRejection},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};

use crate::{auth, error::Failure, state::Shared};

pub use ax_core::signin::{CODE_LEN, Codes};
/// A sign-in body is `{"code":"<32 chars>"}`; anything much bigger is not one.
const MAX_BODY: usize = 1024;

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
    if !ax_core::signin::well_formed(code) {
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
