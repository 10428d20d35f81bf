//! [`Secret`]: the one type for credentials and tokens.
//!
//! Printing a `Secret` (`{:?}` or `{}`) shows `<redacted>`, so a secret inside any struct that
//! derives `Debug` stays out of logs and error messages. Equality runs in constant time, so a
//! comparison does not tell an attacker how many leading bytes matched. The text is zeroed when
//! the last copy is dropped. The only way to the text is [`Secret::expose`], which is easy to
//! find in review.
//!
//! `Serialize` writes the real text and `Deserialize` reads it. Both exist because some wire
//! shapes and files *are* the secret's transport: the `servers/` and credential records, the
//! sign-in code and grant, the gateway's connect frame. Typing those fields as `Secret` keeps
//! the value redacted everywhere else (a `Debug` of the request, an error, a log field), and
//! only the serializer of the record that must carry it ever writes the text. Never serialise
//! a `Secret` into a log line.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::random::{RandomError, random_hex};

/// A credential or token; see the module docs.
#[derive(Clone)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps `text`; the caller's copy moves in and is zeroed with the secret.
    pub fn new(text: String) -> Self {
        Self(Zeroizing::new(text))
    }

    /// A fresh secret of `bytes` random bytes in lowercase hex.
    pub fn generate(bytes: usize) -> Result<Self, RandomError> {
        random_hex(bytes).map(Self::new)
    }

    /// The secret's text. Every call site is a place where the secret leaves this type.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison with text that came from outside (a header, a frame).
    pub fn ct_eq_str(&self, other: &str) -> bool {
        self.0.as_bytes().ct_eq(other.as_bytes()).into()
    }

    /// Whether the secret is the empty string (an unset variable, usually).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq_str(other.expose())
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

/// A copy, for APIs that take `impl Into<Secret>` (the copy is zeroed on drop too).
impl From<&Secret> for Secret {
    fn from(secret: &Secret) -> Self {
        secret.clone()
    }
}

impl From<&String> for Secret {
    fn from(text: &String) -> Self {
        Self::new(text.clone())
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Self::new(text.to_owned())
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.expose())
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)] // read through Debug only
    struct Holder {
        name: &'static str,
        token: Secret,
    }

    #[test]
    fn printing_never_shows_the_text() {
        let holder = Holder {
            name: "backend",
            token: Secret::new("s3cr3t-value".to_owned()),
        };
        let debug = format!("{holder:?} {holder:#?}");
        assert!(!debug.contains("s3cr3t"), "{debug}");
        assert!(debug.contains("<redacted>"));
        assert_eq!(holder.token.to_string(), "<redacted>");
        assert_eq!(holder.token.expose(), "s3cr3t-value");
    }

    #[test]
    fn equality_compares_the_whole_text() {
        let a = Secret::new("abcdef".to_owned());
        assert_eq!(a, Secret::new("abcdef".to_owned()));
        assert_ne!(a, Secret::new("abcdeg".to_owned()));
        assert_ne!(a, Secret::new("abcde".to_owned()));
        assert!(a.ct_eq_str("abcdef"));
        assert!(!a.ct_eq_str("abcdef0"));
        assert!(!a.ct_eq_str(""));
    }

    #[test]
    fn generated_secrets_are_hex_of_the_asked_size_and_differ() {
        let a = Secret::generate(32).unwrap();
        let b = Secret::generate(32).unwrap();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn serde_carries_the_real_text_for_records() {
        let s = Secret::new("tok".to_owned());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, "\"tok\"");
        assert_eq!(serde_json::from_str::<Secret>(&json).unwrap(), s);
    }
}
