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

/// The page's Content-Security-Policy; `{nonce}` is replaced per response ([`policy`]).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'nonce-{nonce}'; img-src 'self' data:; connect-src 'self'; \
     frame-src http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Where `index.html` carries the style nonce (on its stylesheet link, read by `panels.js`).
const NONCE_SLOT: &str = "{{STYLE_NONCE}}";

/// The policy for one response with style nonce `nonce`.
pub fn policy(nonce: &str) -> String {
    CONTENT_SECURITY_POLICY.replace("{nonce}", nonce)
}

struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static str,
}

const INDEX: &str = include_str!("../../../web/index.html");

/// One file of `web/`, embedded at build time.
macro_rules! asset {
    ($name:literal, $mime:expr) => {
        Asset {
            name: $name,
            mime: $mime,
            body: include_str!(concat!("../../../web/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

const ASSETS: &[Asset] = &[
    asset!("app.js", JS),
    asset!("commands.js", JS),
    asset!("config.js", JS),
    asset!("copy.js", JS),
    asset!("api.js", JS),
    asset!("attach.js", JS),
    asset!("attachments.js", JS),
    asset!("attention.js", JS),
    asset!("diff.js", JS),
    asset!("dom.js", JS),
    asset!("gateway.js", JS),
    asset!("history.js", JS),
    asset!("inbox.js", JS),
    asset!("layout.js", JS),
    asset!("listkey.js", JS),
    asset!("markdown.js", JS),
    asset!("notify.js", JS),
    asset!("panels.js", JS),
    asset!("panes.js", JS),
    asset!("present.js", JS),
    asset!("proof.js", JS),
    asset!("queue.js", JS),
    asset!("queueview.js", JS),
    asset!("recall.js", JS),
    asset!("screen.js", JS),
    asset!("signin.js", JS),
    asset!("style.css", CSS),
    asset!("turn.js", JS),
    asset!("turns.js", JS),
    asset!("watch.js", JS),
    asset!("vendor/xterm.mjs", JS),
    asset!("vendor/addon-fit.mjs", JS),
    asset!("vendor/xterm.css", CSS),
];

/// Routes for `/` and the UI's static assets. They need no credential.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{*name}", get(asset))
}

fn respond(mime: &'static str, body: &'static str) -> Response {
    respond_owned(mime, body.to_owned())
}

fn respond_owned(mime: &'static str, body: String) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
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
    let mut res = respond_owned(
        "text/html; charset=utf-8",
        INDEX.replace(NONCE_SLOT, &nonce),
    );
    let h = res.headers_mut();
    if let Ok(csp) = HeaderValue::from_str(&policy(&nonce)) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Whatever the browser cached for this origin (another user may have held the port and
    // served scripts "immutable" for a year) is dropped before the page loads its scripts;
    // the page itself is never stored (docs/SECURITY.md).
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        HeaderName::from_static("clear-site-data"),
        HeaderValue::from_static("\"cache\""),
    );
    res
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => respond(a.mime, a.body),
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
