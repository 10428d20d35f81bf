//! Several machines, one Control UI: backends join a hub over NATS with JetStream
//! (docs/hub.md).
//!
//! A backend started with `ax-code serve --join nats://HOST:PORT` runs [`join::Join`]: it
//! connects *out* to NATS, publishes its machine record, a snapshot of its sessions and every
//! event of its own `/event` stream on subjects under `ax.<machine>.`, kept in JetStream
//! streams, and answers requests the hub sends on `ax.req.<machine>` by calling its own
//! backend's HTTP API on loopback. The backend's SQLite store stays the source of truth: when
//! NATS is away the backend works as before, and the join buffers (bounded) and catches up.
//!
//! `ax-code hub --nats nats://HOST:PORT` runs [`hub::start`]: an HTTP API over every joined
//! backend (machines, sessions per machine, messages, prompt, abort, permission answers, and
//! live events as server-sent events replayed from JetStream). It keeps nothing but caches, so
//! several hubs can serve at once and any of them can stop.

mod api_error;
pub mod hub;
pub mod join;
pub mod nats;
pub mod screen;
pub mod subject;
pub mod terminal;
#[cfg(feature = "test-support")]
pub mod testing;
pub mod ui;
pub mod web;
pub mod wire;

pub use subject::MachineName;
