//! The browser Control UI: the files of `web/`, embedded in the binary (no build step).
//!
//! `/` serves the page, `/assets/{name}` its scripts and styles. They need no credential: the
//! page asks for one (or exchanges the one-time code of a `#code=` link for it, see `signin`),
//! proves the server holds it (`proof.js`, the `/health?proof=` check) and then talks to the
//! API with a bearer header. A strict Content-Security-Policy allows only
//! this origin's scripts, styles and connections; the browser panel's frame may show any
//! http or https page. The terminal renderer (`web/vendor/`, `@xterm/xterm`) builds `<style>`
//! elements at run time: each page load gets a fresh nonce that only those may carry (see
//! `docs/SECURITY.md`, "Control UI styles").

use axum::{
    Router,
    extract::Path,
    http::{HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

// The files and their headers are `ax_protocol::web`, shared with the hub.
pub use ax_protocol::web::policy;
#[cfg(test)]
use ax_protocol::web::{ASSETS, CONTENT_SECURITY_POLICY, INDEX, NONCE_SLOT};

/// Routes for `/` and the UI's static assets. They need no credential.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{*name}", get(asset))
}

fn respond(mime: &'static str, body: String) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(mime) {
        h.insert(header::CONTENT_TYPE, v);
    }
    for (name, value) in ax_protocol::web::ASSET_HEADERS {
        h.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    res
}

async fn index() -> Response {
    // 128 bits, fresh per load: a nonce an attacker could predict would be no bound at all.
    let Ok(nonce) = ax_core::random::random_hex(16) else {
        tracing::error!("no randomness for the page's style nonce");
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the backend cannot get random bytes from the operating system",
        )
            .into_response();
    };
    let mut res = respond(
        "text/html; charset=utf-8",
        ax_protocol::web::index_page(&nonce),
    );
    let h = res.headers_mut();
    if let Ok(csp) = HeaderValue::from_str(&policy(&nonce)) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    for (name, value) in ax_protocol::web::PAGE_HEADERS {
        h.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    res
}

async fn asset(Path(name): Path<String>) -> Response {
    match ax_protocol::web::asset(&name) {
        Some(a) => respond(a.mime, a.body.to_owned()),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_page_imports_is_served() {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for line in a.body.lines() {
                if let Some(rest) = line
                    .trim()
                    .strip_prefix("} from './")
                    .or_else(|| line.split(" from './").nth(1))
                {
                    let module = rest.split('\'').next().unwrap_or("");
                    assert!(names.contains(&module), "{} imports {module}", a.name);
                }
            }
        }
        assert!(INDEX.contains("/assets/app.js") && INDEX.contains("/assets/style.css"));
    }

    #[test]
    fn policy_is_strict() {
        assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self';"));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
        assert!(CONTENT_SECURITY_POLICY.contains("frame-src http: https:"));
        let p = policy("0123abcd");
        assert!(p.contains("style-src 'self' 'nonce-0123abcd';"), "{p}");
        assert!(!p.contains('{'));
        // The page carries the slot exactly once, on its stylesheet link.
        assert_eq!(INDEX.matches(NONCE_SLOT).count(), 1);
        assert!(INDEX.contains(&format!(
            "href=\"/assets/style.css\" nonce=\"{NONCE_SLOT}\""
        )));
    }

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
