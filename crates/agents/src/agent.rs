//! The agent interface.
//!
//! An agent turns a prompt into one permission request and then a run that streams output.
//! The backend's runner owns everything around it (permissions, storage, events, abort), so
//! another agent (one speaking the Agent Client Protocol) only has to implement [`Agent`].

use std::path::PathBuf;

use ax_protocol::Stream;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{process::ProcessGroup, project::Attachment};

/// What the person asked, resolved.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The prompt's text parts joined with newlines.
    pub text: String,
    /// Canonical project directory; the work runs there.
    pub project_dir: PathBuf,
    /// The attached files as checked when the prompt was sent; an agent checks them again
    /// ([`crate::project::recheck`]) right before it uses them.
    pub attachments: Vec<Attachment>,
    /// Output bytes kept for the reply message.
    pub output_limit: usize,
}

/// What an agent reports while it works, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOutput {
    /// The work runs as this process group (the runner records it so a backend restarted
    /// after a crash can stop what the dead backend left running).
    ProcessGroup(ProcessGroup),
    /// Output text.
    Output {
        /// Which stream.
        stream: Stream,
        /// Whole UTF-8 characters.
        text: String,
    },
    /// Output was dropped here; what follows is the end of it.
    Truncated {
        /// Bytes dropped.
        dropped_bytes: u64,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The work exited.
    Exited {
        /// Exit code, if it exited normally.
        code: Option<i32>,
        /// The signal that ended it, if any.
        signal: Option<i32>,
    },
    /// Stopped through the cancellation token.
    Cancelled,
    /// The work could not start (the message says why).
    Failed(String),
}

/// A session's agent.
pub trait Agent: Send + Sync + 'static {
    /// Short name, e.g. `shell`.
    fn name(&self) -> &'static str;

    /// What the approval request shows the person (for `shell`: the command line).
    fn describe(&self, request: &AgentRequest) -> String;

    /// Does the work. Output (and the process group, if any) goes to `output` in order; when
    /// `cancel` fires the agent stops everything it started and returns [`RunEnd::Cancelled`].
    /// Dropping every clone of `output` tells the runner no more output follows.
    fn run(
        &self,
        request: AgentRequest,
        output: mpsc::Sender<AgentOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, RunEnd>;
}
