//! The browser Control UI: the files of `web/`, embedded in the binary (no build step).
//!
//! `/` serves the page, `/assets/{name}` its scripts and styles. They need no credential: the
//! page asks for one (or exchanges the one-time code of a `#code=` link for it, see `signin`),
//! proves the server holds it (`proof.js`, the `/health?proof=` check) and then talks to the
//! API with a bearer header. A strict Content-Security-Policy allows only
//! this origin's scripts, styles and connections; the browser panel's frame may show any
//! http or https page.

use axum::{
    Router,
    extract::Path,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

/// The page's Content-Security-Policy.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src http: https:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

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
    asset!("api.js", JS),
    asset!("diff.js", JS),
    asset!("dom.js", JS),
    asset!("gateway.js", JS),
    asset!("layout.js", JS),
    asset!("markdown.js", JS),
    asset!("panels.js", JS),
    asset!("panes.js", JS),
    asset!("proof.js", JS),
    asset!("style.css", CSS),
    asset!("turn.js", JS),
    asset!("turns.js", JS),
];

/// Routes for `/` and the UI's static assets. They need no credential.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
}

fn respond(mime: &'static str, body: &'static str) -> Response {
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
    let mut res = respond("text/html; charset=utf-8", INDEX);
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
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
        assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
        assert!(CONTENT_SECURITY_POLICY.contains("frame-src http: https:"));
    }
}
