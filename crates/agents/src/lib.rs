//! Agents for ax-code sessions and the processes they start.
//!
//! - [`process`]: the one process module (process groups, an allowlisted environment, ordered
//!   bounded output, kill on end/abort/drop, crash cleanup). The `shell` agent, the operator
//!   terminal and ACP terminals all start their commands through it.
//! - [`agent`]: the [`Agent`] interface the backend's runner drives.
//! - [`shell`]: the built-in `shell` agent.
//! - [`project`]: paths confined to the project directory (attachments); it is
//!   `ax_core::project`, the one "inside the project" check, re-exported here.
//!
//! Of ax-code's crates it depends on `ax-protocol` only (see the code map in the README).

#![warn(missing_docs)]

pub mod agent;
pub mod process;
pub use ax_core::project;
pub mod shell;

pub use agent::{Agent, AgentOutput, AgentRequest, RunEnd};
pub use shell::ShellAgent;
