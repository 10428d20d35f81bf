//! Typed identifiers: one newtype per kind, one parser per kind.
//!
//! Every ID is a four-character prefix (`ses_`, `msg_`, `per_`) followed by 26 ASCII
//! alphanumerics. The backend mints 12 lowercase hex digits of a monotonic value
//! (milliseconds × 16 + a counter, so IDs sort by creation) and 14 random characters of
//! `[0-9A-Za-z]`. Parsing is looser on purpose: any 26 alphanumerics after the prefix parse, so a
//! well-formed but unknown ID is "not found" and anything else is a bad request.

use std::{
    fmt,
    str::FromStr,
    sync::Mutex,
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Deserializer, Serialize};

use crate::random::{RandomError, random_alnum};

/// Characters after the prefix.
const BODY_LEN: usize = 26;
/// Random characters at the end of a minted ID.
const RANDOM_LEN: usize = 14;

/// A string that is not an ID of the expected kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} ID: expected `{prefix}` followed by 26 characters of [0-9A-Za-z]")]
pub struct IdError {
    kind: &'static str,
    prefix: &'static str,
}

/// Whether `s` is `prefix` followed by 26 ASCII alphanumerics. Checks without allocating.
fn has_shape(prefix: &str, s: &str) -> bool {
    s.len() == prefix.len() + BODY_LEN
        && s.starts_with(prefix)
        && s.as_bytes()[prefix.len()..]
            .iter()
            .all(u8::is_ascii_alphanumeric)
}

/// Last ordinal handed out; a std mutex because it is held for a few instructions only.
static LAST_ORDINAL: Mutex<u64> = Mutex::new(0);

/// A 48-bit value that grows with every call, even within one millisecond.
fn next_ordinal() -> u64 {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut last = LAST_ORDINAL.lock().unwrap_or_else(|e| e.into_inner());
    let value = (now_ms << 4).max(*last + 1) & 0xffff_ffff_ffff;
    *last = value;
    value
}

fn mint(prefix: &str) -> Result<String, RandomError> {
    Ok(format!(
        "{prefix}{:012x}{}",
        next_ordinal(),
        random_alnum(RANDOM_LEN)?
    ))
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The prefix every ID of this kind starts with.
            pub const PREFIX: &'static str = $prefix;

            /// Whether `s` has this kind's shape (nothing about existence).
            pub fn is_valid(s: &str) -> bool {
                has_shape($prefix, s)
            }

            /// A fresh ID that sorts after every ID minted before it by this process.
            pub fn mint() -> Result<Self, RandomError> {
                mint($prefix).map(Self)
            }

            /// The ID as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;

            fn from_str(s: &str) -> Result<Self, IdError> {
                if Self::is_valid(s) {
                    Ok(Self(s.to_owned()))
                } else {
                    Err(IdError { kind: $kind, prefix: $prefix })
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(s: String) -> Result<Self, IdError> {
                if Self::is_valid(&s) {
                    Ok(Self(s))
                } else {
                    Err(IdError { kind: $kind, prefix: $prefix })
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::try_from(s).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// A project session: `ses_` followed by 26 characters of `[0-9A-Za-z]`.
    SessionId,
    "ses_",
    "session"
);
id_type!(
    /// A message in a session's transcript: `msg_` + 26 characters of `[0-9A-Za-z]`.
    MessageId,
    "msg_",
    "message"
);
id_type!(
    /// A permission an agent asked for: `per_` + 26 characters of `[0-9A-Za-z]`.
    PermissionId,
    "per_",
    "permission"
);
id_type!(
    /// A prompt waiting in a session's queue: `que_` + 26 characters of `[0-9A-Za-z]`.
    QueuedId,
    "que_",
    "queued prompt"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_shape_only() {
        assert!(SessionId::is_valid("ses_0193a1b2c3d4aZ09xYqwertyui"));
        assert!(!SessionId::is_valid("ses_0193a1b2c3d4aZ09xYqwertyu")); // 25
        assert!(!SessionId::is_valid("ses_0193a1b2c3d4aZ09xYqwertyuio")); // 27
        assert!(!SessionId::is_valid("SES_0193a1b2c3d4aZ09xYqwertyui"));
        assert!(!SessionId::is_valid("ses_0193a1b2c3d4aZ09xYqwerty-i"));
        assert!(!SessionId::is_valid("ses_0193a1b2c3d4aZ09xYqwertyé"));
        assert!(!MessageId::is_valid("ses_0193a1b2c3d4aZ09xYqwertyui"));
        assert!(serde_json::from_str::<SessionId>(r#""ses_x""#).is_err());
    }

    #[test]
    fn the_error_names_the_kind_and_the_expected_form() {
        let err = "per_nope".parse::<PermissionId>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid permission ID: expected `per_` followed by 26 characters of [0-9A-Za-z]"
        );
    }

    #[test]
    fn minted_ids_have_the_documented_shape_and_sort_by_creation() {
        let ids: Vec<String> = (0..500)
            .map(|_| SessionId::mint().unwrap().to_string())
            .collect();
        for id in &ids {
            assert!(SessionId::is_valid(id), "{id}");
            assert!(
                id[4..16]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
                "{id}"
            );
        }
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ids, "minted IDs are unique and in creation order");
        assert!(MessageId::is_valid(MessageId::mint().unwrap().as_str()));
        assert!(PermissionId::is_valid(
            PermissionId::mint().unwrap().as_str()
        ));
    }

    #[test]
    fn serde_round_trips_and_refuses_other_kinds() {
        let id = MessageId::mint().unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<MessageId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<PermissionId>(&json).is_err());
    }

    proptest::proptest! {
        #[test]
        fn parsing_agrees_with_the_shape_check(s in "\\PC{0,40}") {
            proptest::prop_assert_eq!(s.parse::<SessionId>().is_ok(), SessionId::is_valid(&s));
        }
    }
}
