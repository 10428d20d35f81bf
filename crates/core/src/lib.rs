//! Leaf types that every ax-code crate shares and that depend on nothing of ours.
//!
//! - [`ids`]: typed identifiers (`SessionId`, `MessageId`, `PermissionId`): one parser per
//!   kind, so a string that was checked once never has to be re-parsed by another crate.
//! - [`secret`]: [`Secret`], the one type for credentials and tokens: redacted when printed,
//!   compared in constant time, zeroed when dropped.
//! - [`random`]: the one source of randomness for tokens, nonces and ID suffixes. A failure to
//!   get randomness is an error; there is never a predictable fallback.
//! - [`signin`]: the one-time sign-in codes the backend and the hub print and the Control UI
//!   exchanges once for the credential.
//! - [`text`]: which characters may never be shown raw (control and bidi characters) and the
//!   one escaping that makes them visible in terminals, logs and labels.
//! - [`image`]: the image types a prompt may carry, known by their magic bytes, and their
//!   size bounds.
//! - [`project`]: the one "is this path inside the project" check, and the rules a path the
//!   person names (an attachment, `/attach`) must meet; the backend, the ACP file service and
//!   the TUI all use it.
//!
//! ```
//! use ax_core::{Secret, ids::SessionId};
//!
//! let id: SessionId = "ses_0123456789abABCDEFGHIJ0123".parse().unwrap();
//! assert_eq!(id.as_str(), "ses_0123456789abABCDEFGHIJ0123");
//!
//! let token = Secret::new("hunter2".to_owned());
//! assert_eq!(format!("{token:?}"), "Secret(<redacted>)");
//! assert!(token.ct_eq_str("hunter2"));
//! ```

pub mod ids;
pub mod image;
pub mod project;
pub mod random;
pub mod secret;
pub mod signin;
pub mod text;

pub use random::RandomError;
pub use secret::Secret;
