//! Exposure rules: the Host and Origin checks every route gets (DNS rebinding, cross-site
//! requests) and the bearer credential every route but `/health`, `/gateway` (whose connect
//! frame carries the token) and the Control UI files needs.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{error::Failure, state::Shared};

/// Checks Host (one of the served names: the bound address and the loopback names with the
/// port, and the names allowed with `--allow-host`) and, when present, Origin (this server's
/// own origin: `http://` + the Host, or for an `--allow-host` name also `https://` + the Host,
/// as a browser behind a TLS-terminating proxy sends it).
pub fn check_host_origin(app: &Shared, headers: &HeaderMap) -> Result<(), Failure> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let Some(host) = host else {
        return Err(Failure::forbidden("a Host header is required"));
    };
    if !app.allowed_hosts.contains(&host) {
        return Err(Failure::forbidden(format!(
            "Host {host:?} is not served here; use one of {}",
            app.allowed_hosts.join(", ")
        )));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let expected = format!("http://{host}");
        let ok = origin.to_str().is_ok_and(|o| {
            o.eq_ignore_ascii_case(&expected)
                || (app.proxied_hosts.contains(&host)
                    && o.strip_prefix("https://")
                        .is_some_and(|rest| rest.eq_ignore_ascii_case(&host)))
        });
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
    scheme.eq_ignore_ascii_case("bearer") && app.token.ct_eq_str(token.trim())
}

/// Layer for the API routes. A connection that carried the credential is the person's: the
/// cap on unauthenticated connections no longer counts or evicts it.
pub async fn bearer(State(app): State<Shared>, request: Request, next: Next) -> Response {
    if has_credential(&app, request.headers()) {
        if let Some(conn) = request.extensions().get::<crate::listen::Conn>() {
            conn.authenticated();
        }
        next.run(request).await
    } else {
        Failure::unauthorized().into_response()
    }
}
