//! The processes ax-code's agents and terminals start.
//!
//! - [`process`]: the one process module (process groups, an allowlisted environment, ordered
//!   bounded output, kill on end/abort/drop, crash cleanup). The operator terminal and agents'
//!   terminals (the built-in `shell` agent's commands included: it is an ACP agent,
//!   `ax_acp::shell`) all start their commands through it.
//! - [`project`]: paths confined to the project directory (attachments); it is
//!   `ax_core::project`, the one "inside the project" check, re-exported here.
//!
//! Of ax-code's crates it depends on `ax-protocol` only (see the code map in the README).

#![warn(missing_docs)]

pub mod process;
pub use ax_core::project;
