//! The environment a started process gets: built from an allowlist of the parent's variables,
//! never by removing known secrets, so a credential we add later (or one the person exported
//! under any name) cannot leak by being forgotten in a deny list.

use std::ffi::{OsStr, OsString};

/// Exact names passed through from the parent.
const EXACT: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR",
];
/// Name prefixes passed through from the parent (locale and XDG base directories).
const PREFIXES: &[&str] = &["LC_", "XDG_"];

/// Whether a parent variable of this name reaches a started process.
pub fn is_allowed(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    EXACT.contains(&name)
        || PREFIXES
            .iter()
            .any(|p| name.starts_with(p) && name.len() > p.len())
}

/// The allowlisted subset of `parent` (pass `std::env::vars_os()`).
pub fn allowlisted(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    parent
        .into_iter()
        .filter(|(name, _)| is_allowed(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(vars: &[(&str, &str)]) -> Vec<String> {
        allowlisted(
            vars.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .into_iter()
        .map(|(k, _)| k.into_string().unwrap())
        .collect()
    }

    #[test]
    fn only_the_allowlist_passes() {
        let kept = names(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("XDG_CONFIG_HOME", "/c"),
            ("AX_CODE_SERVER_PASSWORD", "secret"),
            ("GITHUB_TOKEN", "secret"),
            ("LD_PRELOAD", "/evil.so"),
            ("PATHX", "no"),
            ("LC_", "no"),
            ("path", "no"),
        ]);
        assert_eq!(kept, ["PATH", "HOME", "LC_ALL", "XDG_CONFIG_HOME"]);
    }
}
