//! The Agent Client Protocol (ACP) client runtime of ax-code.
//!
//! ax-code is the ACP *client*; each agent (Claude Code's, Codex's and Gemini CLI's ACP
//! adapters, or any other ACP agent) runs as a subprocess speaking JSON-RPC over its
//! stdin/stdout. This crate owns:
//!
//! - [`config`]: the named agents (built-in presets and the user's `config.toml`);
//! - [`client`]: one agent process, its connection and session: handshake, turns as typed
//!   deltas ([`ax_protocol::turn`]), permissions parked until the person answers, cancel with
//!   a watchdog, stop, crash handling and reopening;
//! - [`fs`]: the agent's file requests, confined to the project;
//! - [`guard`]: the trace every served write and terminal leaves, and which writes ask first;
//! - [`terminal`]: the agent's terminals, behind the [`terminal::Terminals`] trait;
//! - [`process`]: spawning with an allowlisted environment, bounded output;
//! - [`shell`]: the built-in `shell` agent, an ACP agent served inside the process over the
//!   in-memory transport ([`AgentHandle::start_in_memory`]).

pub mod client;
pub mod config;
pub mod fs;
pub mod guard;
mod map;
pub mod process;
pub mod shell;
pub mod terminal;

pub use agent_client_protocol::v1::schema;
pub use client::{
    AcpEvent, AgentHandle, AgentInfo, AgentOffers, AnswerError, Mode, Modes, PermissionResponder,
    PromptError, ReplayItem, Restored, SessionError, SessionInfo, StartError, StartOptions,
    StoredHistory,
};
pub use config::{AgentEntry, AgentKind, AgentSpec, AgentsConfig, ConfigError};
pub use map::pick as pick_option;
