//! The page and its assets as axum routes (feature `serve`), one implementation for the
//! backend and the hub: `/` with a fresh style nonce in its Content-Security-Policy per load,
//! `/assets/{name}` from the embedded table. They need no credential (see docs/SECURITY.md,
//! "Control UI styles", for why the nonce).

use axum::{
    Router,
    extract::Path,
    http::{HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

/// Routes for `/` and the UI's static assets.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{*name}", get(asset))
}

fn with_headers(mut res: Response, headers: &[(&'static str, &'static str)]) -> Response {
    let h = res.headers_mut();
    for (name, value) in headers {
        h.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    res
}

fn respond(mime: &'static str, body: String) -> Response {
    let mut res = body.into_response();
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    with_headers(res, super::ASSET_HEADERS)
}

async fn index() -> Response {
    // 128 bits, fresh per load: a nonce an attacker could predict would be no bound at all.
    let Ok(nonce) = ax_core::random::random_hex(16) else {
        tracing::error!("no randomness for the page's style nonce");
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server cannot get random bytes from the operating system",
        )
            .into_response();
    };
    let mut res = respond("text/html; charset=utf-8", super::index_page(&nonce));
    if let Ok(csp) = HeaderValue::from_str(&super::policy(&nonce)) {
        res.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    with_headers(res, super::PAGE_HEADERS)
}

async fn asset(Path(name): Path<String>) -> Response {
    match super::asset(&name) {
        Some(a) => respond(a.mime, a.body.to_owned()),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::NONCE_SLOT;

    #[tokio::test]
    async fn every_load_gets_its_own_nonce_in_header_and_page() {
        let mut seen = Vec::new();
        for _ in 0..2 {
            let res = index().await;
            let csp = res.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .to_owned();
            let body = axum::body::to_bytes(res.into_body(), usize::MAX)
                .await
                .unwrap();
            let body = String::from_utf8(body.to_vec()).unwrap();
            let nonce = csp
                .split("'nonce-")
                .nth(1)
                .and_then(|r| r.split('\'').next())
                .unwrap()
                .to_owned();
            assert_eq!(nonce.len(), 32);
            assert!(body.contains(&format!("nonce=\"{nonce}\"")));
            assert!(!body.contains(NONCE_SLOT));
            seen.push(nonce);
        }
        assert_ne!(seen[0], seen[1]);
    }

    #[tokio::test]
    async fn vendor_assets_are_served_and_nothing_else_under_assets() {
        for name in [
            "vendor/xterm.mjs",
            "vendor/addon-fit.mjs",
            "vendor/xterm.css",
        ] {
            let res = asset(Path(name.to_owned())).await;
            assert_eq!(res.status(), StatusCode::OK, "{name}");
        }
        for name in [
            "vendor/xterm.LICENSE",
            "vendor/../style.css",
            "../Cargo.toml",
            "vendor/",
        ] {
            let res = asset(Path(name.to_owned())).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{name}");
        }
    }
}
