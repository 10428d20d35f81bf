//! The Agent Client Protocol (ACP) client runtime of ax-code.
//!
//! ax-code is the ACP *client*; each agent (Claude Code's, Codex's and Gemini CLI's ACP
//! adapters, or any other ACP agent) runs as a subprocess speaking JSON-RPC over its
//! stdin/stdout. This crate owns:
//!
//! - [`config`]: the named agents (built-in presets and the user's `config.toml`);
//! - [`runtime`]: one agent process, its connection and session: handshake, turns as typed
//!   deltas ([`ax_protocol::turn`]), permission requests handed to the turn as handles answered once, cancel with
//!   a watchdog, stop, crash handling and reopening;
//! - [`fs`]: the agent's file requests, confined to the project;
//! - [`guard`]: the trace every served write and terminal leaves, and which writes ask first;
//! - [`agent_terminal`]: the agent's terminals, behind the [`agent_terminal::Terminals`] trait;
//! - [`process`]: spawning with an allowlisted environment, bounded output;
//! - [`shell`]: the built-in `shell` agent, an ACP agent served inside the process over the
//!   in-memory transport ([`AgentHandle::start_in_memory`]).

pub mod agent_terminal;
pub mod config;
pub mod fs;
pub mod guard;
mod map;
pub mod process;
pub mod runtime;
pub mod shell;

pub use agent_client_protocol::v1::schema;
pub use config::{AgentEntry, AgentKind, AgentSpec, AgentsConfig, ConfigError};
pub use map::pick as pick_option;
pub use runtime::{
    AcpEvent, AgentHandle, AgentInfo, AgentOffers, AnswerError, Mode, Modes, PermissionResponder,
    PromptError, ReplayItem, Restored, SessionError, SessionInfo, StartError, StartOptions,
    StoredHistory,
};
