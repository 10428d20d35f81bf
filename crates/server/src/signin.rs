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

use ax_protocol::{
    SignInExchange,
    signin::{granted, minted, no_store},
};
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State, rejection::JsonRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::post,
};

use crate::{auth, error::Failure, state::Shared};

pub use ax_core::signin::Codes;
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

fn invalid_code() -> Failure {
    Failure::new(
        StatusCode::UNAUTHORIZED,
        "invalid_code",
        "this sign-in code is unknown, used or expired: run `ax-code link` for a fresh link",
    )
}

async fn exchange(
    State(s): State<SignIn>,
    input: Result<Json<serde_json::Value>, JsonRejection>,
) -> Response {
    let input = match input.map(|Json(v)| SignInExchange::from_body(v)) {
        Ok(Ok(input)) => input,
        Ok(Err(message)) => return Failure::bad_request(message).into_response(),
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Failure::too_large("a sign-in body is one short code").into_response();
        }
        Err(rejection) => return Failure::bad_request(rejection.body_text()).into_response(),
    };
    if !s.codes.redeem(input.code.expose(), Instant::now()) {
        return no_store(invalid_code().into_response());
    }
    tracing::info!("a sign-in code was exchanged for the credential");
    granted(s.app.token.clone())
}

async fn mint(State(s): State<SignIn>, request: axum::extract::Request) -> Response {
    // Only the full credential mints: the screen credential is refused like on every API route.
    if !auth::has_credential(&s.app, request.headers()) {
        return Failure::unauthorized().into_response();
    }
    match minted(&s.codes, Instant::now()) {
        Ok(answer) => answer,
        Err(e) => Failure::from(crate::ids::no_randomness(e)).into_response(),
    }
}
