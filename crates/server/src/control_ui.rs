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

// The files, their headers and the routes are `ax_protocol::web`, shared with the hub.
pub use ax_protocol::web::serve::router;
#[cfg(test)]
use ax_protocol::web::{ASSETS, CONTENT_SECURITY_POLICY, INDEX, NONCE_SLOT, policy};

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
}
