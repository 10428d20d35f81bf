//! The session ID newtype.
//!
//! The backend mints `ses_` + 12 lowercase hex digits (creation time in ms and a counter, so
//! IDs sort by creation) + 14 characters of `[0-9A-Za-z]`. Accepting input is looser on
//! purpose: any `ses_` followed by 26 ASCII alphanumerics parses (the TUIMCP contract's shape),
//! so a well-formed but unknown ID is "not found", and anything else is a bad request.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize};

const PREFIX: &str = "ses_";
const BODY_LEN: usize = 26;

/// A syntactically valid session ID.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

/// Why a string is not a session ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid session ID: expected `ses_` followed by 26 characters of [0-9A-Za-z]")]
pub struct SessionIdError;

impl SessionId {
    /// Checks the shape without allocating.
    pub fn is_valid(s: &str) -> bool {
        s.len() == PREFIX.len() + BODY_LEN
            && s.starts_with(PREFIX)
            && s.as_bytes()[PREFIX.len()..]
                .iter()
                .all(u8::is_ascii_alphanumeric)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for SessionId {
    type Err = SessionIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if Self::is_valid(s) {
            Ok(SessionId(s.to_owned()))
        } else {
            Err(SessionIdError)
        }
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionIdError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        if Self::is_valid(&s) {
            Ok(SessionId(s))
        } else {
            Err(SessionIdError)
        }
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SessionId::try_from(s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

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
        assert!(serde_json::from_str::<SessionId>(r#""ses_x""#).is_err());
    }
}
