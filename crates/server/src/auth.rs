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

// `<label>.localhost:PORT`, the origin of a sign-in link: one rule for the backend and the hub.
pub(crate) use ax_protocol::web::link_host;

/// Checks Host (one of the served names: the bound address and the loopback names with the
/// port, and the names allowed with `--allow-host`) and, when present, Origin (this server's
/// own origin: `http://` + the Host, or for an `--allow-host` name also `https://` + the Host,
/// as a browser behind a TLS-terminating proxy sends it). A backend that serves `localhost`
/// also serves `<label>.localhost` on its port: every sign-in link opens a fresh origin
/// (docs/SECURITY.md, "a squatter's code never runs in a later real page").
pub fn check_host_origin(app: &Shared, headers: &HeaderMap) -> Result<(), Failure> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let Some(host) = host else {
        return Err(Failure::forbidden("a Host header is required"));
    };
    if !app.allowed_hosts.contains(&host) && !link_host(&host, &app.allowed_hosts) {
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
        if let Some(conn) = request.extensions().get::<ax_listen::Conn>() {
            conn.authenticated();
        }
        next.run(request).await
    } else {
        Failure::unauthorized().into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::link_host;

    #[test]
    fn link_hosts_are_a_label_on_a_served_localhost_port() {
        let allowed = vec!["localhost:4096".to_owned(), "127.0.0.1:4096".to_owned()];
        assert!(link_host("k3j4a9.localhost:4096", &allowed));
        for refused in [
            "k3j4a9.localhost:4097",
            "k3j4a9.localhost",
            ".localhost:4096",
            "a.b.localhost:4096",
            "a-b.localhost:4096",
            "k3j4a9.127.0.0.1:4096",
            "evil.example:4096",
            "localhost.evil.example:4096",
        ] {
            assert!(!link_host(refused, &allowed), "{refused}");
        }
        assert!(!link_host(
            &format!("{}.localhost:4096", "a".repeat(64)),
            &allowed
        ));
        // Not served over loopback names (a remote bind without them): no link hosts.
        assert!(!link_host(
            "k3j4a9.localhost:4096",
            &["192.0.2.1:4096".to_owned()]
        ));
    }
}
