//! Exposure rules: the Host and Origin checks every route gets (DNS rebinding, cross-site
//! requests) and the bearer credential every route but `/health`, `/gateway` (whose connect
//! frame carries the token) and the Control UI files needs.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use subtle::ConstantTimeEq;

use crate::{error::Failure, state::Shared};

/// Checks Host (on loopback: one of the served names with the port) and, when present,
/// Origin (must be this server's own origin, `http://` + the Host).
pub fn check_host_origin(app: &Shared, headers: &HeaderMap) -> Result<(), Failure> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let Some(host) = host else {
        return Err(Failure::forbidden("a Host header is required"));
    };
    if let Some(allowed) = &app.allowed_hosts
        && !allowed.contains(&host)
    {
        return Err(Failure::forbidden(format!(
            "Host {host:?} is not served here; use one of {}",
            allowed.join(", ")
        )));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let expected = format!("http://{host}");
        let ok = origin
            .to_str()
            .is_ok_and(|o| o.eq_ignore_ascii_case(&expected));
        if !ok {
            return Err(Failure::forbidden(format!(
                "cross-origin requests are refused; expected Origin {expected}"
            )));
        }
    }
    Ok(())
}

/// Layer for every route.
pub async fn host_origin(State(app): State<Shared>, request: Request, next: Next) -> Response {
    match check_host_origin(&app, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(failure) => failure.into_response(),
    }
}

/// Whether the request carries `Authorization: Bearer <token>` (compared in constant time).
pub fn has_credential(app: &Shared, headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer")
        && bool::from(token.trim().as_bytes().ct_eq(app.token.as_bytes()))
}

/// Layer for the API routes.
pub async fn bearer(State(app): State<Shared>, request: Request, next: Next) -> Response {
    if has_credential(&app, request.headers()) {
        next.run(request).await
    } else {
        Failure::unauthorized().into_response()
    }
}
