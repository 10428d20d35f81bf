//! The Control UI's files (`web/`), embedded at build time, and the headers they are served
//! with: one table for every server that serves the page (the backend's `control_ui` and the
//! hub's `web`), so the page, its Content-Security-Policy and the cache rules cannot drift
//! apart. Transport-free, but for the axum routes of the feature `serve` ([`serve::router`]),
//! which both servers mount.

#[cfg(feature = "serve")]
pub mod serve;

/// The page's Content-Security-Policy; `{nonce}` is replaced per response ([`policy`]).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'nonce-{nonce}'; img-src 'self' data:; connect-src 'self'; \
     frame-src http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Where `index.html` carries the style nonce (on its stylesheet link, read by `panels.js`).
pub const NONCE_SLOT: &str = "{{STYLE_NONCE}}";

/// The policy for one response with style nonce `nonce`.
pub fn policy(nonce: &str) -> String {
    CONTENT_SECURITY_POLICY.replace("{nonce}", nonce)
}

/// One embedded file of `web/`.
pub struct Asset {
    /// Its path under `/assets/`.
    pub name: &'static str,
    /// Its `Content-Type`.
    pub mime: &'static str,
    /// Its text.
    pub body: &'static str,
}

/// `web/index.html`, with [`NONCE_SLOT`] still in it.
pub const INDEX: &str = include_str!("../../../web/index.html");

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

/// Scripts.
pub const JS: &str = "text/javascript; charset=utf-8";
/// Styles.
pub const CSS: &str = "text/css; charset=utf-8";

/// Every file the page may load.
pub const ASSETS: &[Asset] = &[
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
    asset!("hubapi.js", JS),
    asset!("hubterm.js", JS),
    asset!("hubui.js", JS),
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
    asset!("sessions.js", JS),
    asset!("sidebar.js", JS),
    asset!("signin.js", JS),
    asset!("style.css", CSS),
    asset!("turn.js", JS),
    asset!("turns.js", JS),
    asset!("watch.js", JS),
    asset!("vendor/xterm.mjs", JS),
    asset!("vendor/addon-fit.mjs", JS),
    asset!("vendor/xterm.css", CSS),
];

/// The page for one load, its style nonce filled in.
pub fn index_page(nonce: &str) -> String {
    INDEX.replace(NONCE_SLOT, nonce)
}

/// The embedded file `name` (a path under `/assets/`), if it is one.
pub fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

/// Headers of every file served: revalidated, never sniffed, no referrer.
pub const ASSET_HEADERS: &[(&str, &str)] = &[
    ("cache-control", "no-cache"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

/// Headers the page itself adds (after [`ASSET_HEADERS`], replacing `cache-control`), besides
/// the [`policy`]: never framed and never stored; whatever the browser cached for this origin
/// (another user may have held the port and served scripts "immutable" for a year) is dropped
/// before the page loads its scripts (docs/SECURITY.md).
pub const PAGE_HEADERS: &[(&str, &str)] = &[
    ("x-frame-options", "DENY"),
    ("cache-control", "no-store"),
    ("clear-site-data", "\"cache\""),
];

/// Whether `host` is `<label>.localhost:PORT` (the origin of a sign-in link, see
/// `ax_server::sign_in_link`) for a server that serves `localhost:PORT`: a label of 1 to 63
/// lowercase letters and digits. Browsers resolve every `*.localhost` name to loopback
/// themselves, never through DNS, so such a name cannot be rebound to another machine.
pub fn link_host(host: &str, allowed: &[String]) -> bool {
    let Some((label, rest)) = host.split_once('.') else {
        return false;
    };
    (1..=63).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && rest.starts_with("localhost:")
        && allowed.iter().any(|a| a == rest)
}
