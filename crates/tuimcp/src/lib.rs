//! TUIMCP: share one running TUI with an external agent over MCP (contract: `docs/tuimcp.md`).
//!
//! | module | role |
//! | --- | --- |
//! | [`protocol`] | strict wire types: requests, responses, the view, every rejection code |
//! | [`controller`] | the only authority over navigation: identity, revision, guard, receipts, single flight |
//! | [`server`] | the private endpoint inside the TUI: directory, socket, `endpoint.json`, authentication |
//! | [`sharing`] | a ready-made driver for the task that owns the UI state |
//! | `fake` | a fake TUI (owner loop + fake sessions) for tests and benchmarks (feature `test-support`) |
//! | [`client`] | the adapter's side of the socket, with honest failure mapping |
//! | [`adapter`] | the stdio MCP server of `ax-code mcp tui` |
//! | [`stdio`] | its JSON-RPC line transport, which answers every malformed line |
//!
//! Nothing here knows about terminals, and the crate depends on nothing else of ours.
//!
//! # Integrating it into the TUI
//!
//! One tokio task owns the UI state. It owns a [`Sharing`] (or, for full control, a
//! [`Controller`] plus an [`Endpoint`]) and, in its `select!` loop:
//!
//! - after **every** state mutation, calls [`Sharing::observe`] with freshly built
//!   [`GuardInputs`] (route, session, readiness, each blocker as a boolean, workspace): any
//!   change bumps the revision (the epoch);
//! - for every parsed keyboard, paste or mouse event, calls [`Sharing::human_input`]
//!   (counted once per activity episode, never per keystroke);
//! - awaits [`Sharing::next`] as one branch and hands its [`Step`] to [`Sharing::apply`]
//!   with its router (a [`Navigator`]); `apply` never awaits, so guard, navigate and re-read
//!   are one step. A returned [`Commit::Applied`] is the cue for the "an agent navigated"
//!   notice;
//! - on `[Revoke]`, `/tui-mcp-revoke` or exit, calls [`Sharing::revoke`] (fences at once)
//!   and awaits or spawns the future it returns (removes the directory).
//!
//! Validation runs through your cloneable [`SessionValidator`], as a future that
//! [`Sharing::next`] polls in the owner task (no extra task); its result comes back as a
//! [`Step`] from [`Sharing::next`].
//!
//! ```no_run
//! use ax_tuimcp::{
//!     Commit, EndpointOptions, GuardInputs, Location, Navigator, SessionId, SessionValidator,
//!     Sharing, ValidationOutcome,
//! };
//!
//! #[derive(Clone)]
//! struct Backend; // the TUI's authenticated backend client
//!
//! impl SessionValidator for Backend {
//!     async fn validate(&self, _session: SessionId) -> ValidationOutcome {
//!         ValidationOutcome::Valid // ask the backend; NotFound / Unavailable otherwise
//!     }
//! }
//!
//! struct App {
//!     inputs: GuardInputs,
//! }
//!
//! impl Navigator for App {
//!     type Error = String;
//!     fn navigate(&mut self, session: &SessionId) -> Result<GuardInputs, String> {
//!         self.inputs.location = Location::Session(session.clone());
//!         self.inputs.route_loaded = false; // loading starts now
//!         Ok(self.inputs.clone())
//!     }
//! }
//!
//! # async fn run(mut keys: tokio::sync::mpsc::Receiver<char>) -> anyhow::Result<()> {
//! let mut app = App { inputs: GuardInputs::ready_home("/work/project") };
//! let mut sharing = Sharing::start(app.inputs.clone(), Backend, EndpointOptions::default()).await?;
//! println!("TUIMCP on: {}", sharing.endpoint_path().display());
//! loop {
//!     tokio::select! {
//!         Some(_key) = keys.recv() => {
//!             sharing.human_input();
//!             // ... update app state from the key ...
//!             sharing.observe(app.inputs.clone());
//!         }
//!         step = sharing.next() => {
//!             if let Some(Commit::Applied(_view)) = sharing.apply(step, &mut app) {
//!                 // show "an agent navigated to this session"
//!             }
//!             sharing.observe(app.inputs.clone());
//!         }
//!     }
//! #   break;
//! }
//! sharing.revoke().await;
//! # Ok(())
//! # }
//! ```

pub mod adapter;
pub mod client;
pub mod controller;
pub mod endpoint_file;
#[cfg(feature = "test-support")]
pub mod fake;
pub mod frame;
pub mod protocol;
pub mod server;
pub mod sharing;
pub mod stdio;

pub use controller::{
    Blockers, Commit, Controller, GuardInputs, Identity, Location, Navigator, QUIET_PERIOD,
    RECEIPT_LIMIT, Reply, Ticket, VALIDATION_DEADLINE, Validation, ValidationOutcome,
};
pub use protocol::{Code, Request, Response, Route, SelectSession, SessionId, View, WireUuid};
pub use server::{Endpoint, EndpointError, EndpointOptions, Inbound};
pub use sharing::{SessionValidator, Sharing, Step};
