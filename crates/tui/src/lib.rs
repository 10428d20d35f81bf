//! The ax-code terminal UI.
//!
//! | module | role |
//! | --- | --- |
//! | [`input`] | our own key, paste and mouse types (no terminal types in the state) |
//! | [`app`] | the UI state: routes, sessions, transcript, composer, modals, overlays, connection |
//! | `keys` | what each input does to the state |
//! | [`transcript`] | display lines of the open session with a row index (draw cost = visible rows) |
//! | [`composer`], [`command`], [`layout`] | the draft and chips, slash commands, screen geometry |
//! | [`render`] | ratatui drawing, side-effect free |
//! | `run` | the owner loop: one task owns state, terminal and TUIMCP controller |
//! | [`term`] | crossterm conversion and terminal restore (also on panic) |
//! | [`share`] | TUIMCP: the router agents navigate through, the session validator |
//!
//! The state is a plain struct: tests feed it [`input::Input`]s and backend results and render
//! it into ratatui's `TestBackend`. I/O leaves the state as [`app::Effect`]s.

pub mod app;
pub mod command;
pub mod composer;
pub mod input;
mod keys;
pub mod layout;
pub mod render;
mod run;
pub mod share;
pub mod term;
pub mod transcript;

pub use app::{App, Effect, Route};
pub use keys::{chip_spans, palette_entries};
pub use run::{Options, run};
