//! The hub's Control UI and sign-in (docs/hub.md §4): the same page as a backend's, signed in
//! to the same way.
//!
//! - `/` and `/assets/{name}` serve the files of `web/` with their headers and
//!   Content-Security-Policy, from the one table both servers use (`ax_protocol::web`).
//! - `GET /health?proof=<nonce>` answers `{"ok", "hub": true, "version", "proof"}`: the proof is
//!   `ax_protocol::proof::health_proof` of the hub's credential, bound to the hub's listening
//!   address, which the page checks (`web/proof.js`) before it sends the credential. `hub:
//!   true` is how the page knows it talks to a hub (`web/hubapi.js`).
//! - `POST /signin/code` (bearer credential) mints a one-time code, `POST /signin`
//!   `{"code"}` (no credential) exchanges it once for the credential: the backend's store of
//!   codes (`ax_core::signin`), one per hub process. Codes are not shared between hubs: a
//!   code printed by one hub signs in to that hub only, and the credential it gives is the
//!   hub's (several hubs on one machine may share it through `$AX_CODE_HUB_PASSWORD`).
//! - Every route checks Host (`127.0.0.1:PORT`, `localhost:PORT` or a sign-in link's
//!   `<label>.localhost:PORT`) and, when sent, Origin (`http://` + that Host), against DNS
//!   rebinding and cross-site requests, as the backend does.

use std::{net::SocketAddr, sync::Arc, time::Instant};

use ax_core::{Secret, signin::Codes};
use ax_protocol::{
    SignInExchange, proof,
    signin::{granted, minted, no_store},
};
use axum::{
    Json, Router,
    extract::{
        DefaultBodyLimit, Query, Request, State,
        rejection::{JsonRejection, QueryRejection},
    },
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;

/// A sign-in body is `{"code":"<32 chars>"}`; anything much bigger is not one.
const MAX_SIGNIN_BODY: usize = 1024;

/// `GET /health` of a hub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HubHealth {
    /// Always `true`.
    pub ok: bool,
    /// Always `true`: this server is a hub (the page uses the hub's routes).
    pub hub: bool,
    /// The hub's version.
    pub version: String,
    /// The answer to `?proof=<nonce>`; absent without a nonce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<String>,
}

/// What the page's routes and the Host check need of the hub, and all they get: the hub
/// holds one and hands it to them as their state, so `web` needs nothing of `hub`.
pub(crate) struct Access {
    /// The hub's credential: what `/health` proves and a sign-in code is exchanged for.
    pub(crate) token: Secret,
    /// This hub's listening address: what its `/health` proof is bound to.
    addr: SocketAddr,
    /// The names the Host check accepts ([`served_hosts`]).
    hosts: Vec<String>,
    /// The live one-time sign-in codes of this hub process.
    codes: Arc<Codes>,
}

impl Access {
    /// The hub listening on `addr` with `token`, its sign-in codes kept in `codes`.
    pub(crate) fn new(token: Secret, addr: SocketAddr, codes: Arc<Codes>) -> Access {
        Access {
            token,
            addr,
            hosts: served_hosts(addr),
            codes,
        }
    }
}

/// The routes that need no credential: the page, its assets, `/health`, `POST /signin`.
pub(crate) fn public<S: Clone + Send + Sync + 'static>(access: Arc<Access>) -> Router<S> {
    ax_protocol::web::serve::router()
        .route("/health", get(health))
        .route(
            "/signin",
            post(exchange).layer(DefaultBodyLimit::max(MAX_SIGNIN_BODY)),
        )
        .with_state(access)
}

/// `POST /signin/code`, behind the bearer credential (the hub's API layers it on).
pub(crate) fn minting<S: Clone + Send + Sync + 'static>(access: Arc<Access>) -> Router<S> {
    Router::new()
        .route("/signin/code", post(mint))
        .with_state(access)
}

/// The names this hub answers to, for the Host check.
fn served_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![proof::proof_address(addr), format!("localhost:{port}")];
    if addr.ip().is_loopback() && addr.is_ipv4() {
        hosts.push(format!("[::1]:{port}"));
    }
    hosts
}

/// The Host and Origin checks, as the backend's (`ax_server`'s `auth::check_host_origin`).
pub(crate) async fn host_origin(
    State(access): State<Arc<Access>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let Some(host) = host else {
        return ApiError::new(403, "forbidden", "a Host header is required".to_owned())
            .into_response();
    };
    let hosts = &access.hosts;
    if !hosts.contains(&host) && !ax_protocol::web::link_host(&host, hosts) {
        return ApiError::new(
            403,
            "forbidden",
            format!(
                "Host {host:?} is not served here; use one of {}",
                hosts.join(", ")
            ),
        )
        .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let expected = format!("http://{host}");
        if !origin
            .to_str()
            .is_ok_and(|o| o.eq_ignore_ascii_case(&expected))
        {
            return ApiError::new(
                403,
                "forbidden",
                format!("cross-origin requests are refused; expected Origin {expected}"),
            )
            .into_response();
        }
    }
    next.run(request).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HealthQuery {
    proof: Option<String>,
}

async fn health(
    State(access): State<Arc<Access>>,
    query: Result<Query<HealthQuery>, QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(q)) => q,
        Err(r) => return ApiError::new(400, "bad_request", r.body_text()).into_response(),
    };
    let proof = match query.proof {
        None => None,
        Some(nonce) if proof::is_nonce(&nonce) => Some(proof::health_proof(
            access.token.expose(),
            &nonce,
            access.addr,
        )),
        Some(_) => {
            return ApiError::new(
                400,
                "bad_request",
                "invalid proof nonce: expected 64 lowercase hex characters".to_owned(),
            )
            .into_response();
        }
    };
    Json(HubHealth {
        ok: true,
        hub: true,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        proof,
    })
    .into_response()
}

async fn exchange(
    State(access): State<Arc<Access>>,
    input: Result<Json<serde_json::Value>, JsonRejection>,
) -> Response {
    let input = match input.map(|Json(v)| SignInExchange::from_body(v)) {
        Ok(Ok(input)) => input,
        Ok(Err(message)) => return ApiError::new(400, "bad_request", message).into_response(),
        Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::new(413, "too_large", "a sign-in body is one short code".into())
                .into_response();
        }
        Err(r) => return ApiError::new(400, "bad_request", r.body_text()).into_response(),
    };
    if !access.codes.redeem(input.code.expose(), Instant::now()) {
        let message = "this sign-in code is unknown, used or expired: restart `ax-code hub` \
                       or ask it for a fresh code (POST /signin/code)";
        return no_store(ApiError::new(401, "invalid_code", message.to_owned()).into_response());
    }
    tracing::info!("hub: a sign-in code was exchanged for the credential");
    granted(access.token.clone())
}

async fn mint(State(access): State<Arc<Access>>) -> Response {
    match minted(&access.codes, Instant::now()) {
        Ok(answer) => answer,
        Err(e) => ApiError::internal(&e).into_response(),
    }
}
