//! The ax-code terminal UI.
//!
//! | module | role |
//! | --- | --- |
//! | [`input`] | our own key, paste and mouse types (no terminal types in the state) |
//! | [`app`] | the UI state: routes, sessions, transcript, composer, modals, overlays, connection |
//! | `keys` | what each input does to the state |
//! | `sync` | backend side of the state: connection, resync, streamed events, job answers |
//! | [`ansi`] | command output: SGR styles kept, `\r` overwrites, every other escape dropped |
//! | [`markdown`], [`highlight`] | agent text as Markdown, code blocks highlighted |
//! | [`approval`], [`progress`], [`attach`] | the honest approval dialog (its state and keys: [`approval::Dialog`]); turn timing and spinner; `/attach` checked at once |
//! | [`clock`] | the only time in the state: set by [`App::tick`], wall times derived from it |
//! | [`transcript`], [`kind`] | display lines of the open session with a row index (draw cost = visible rows); what each run of their text is (no styles in the state) |
//! | [`composer`], [`command`], [`layout`] | the draft, chips and kill buffer; slash commands and the palette's entries; screen geometry shared by drawing and the mouse |
//! | [`history`], [`recall`], [`find`], `find_bar`, [`render::bars`] | prompt history (↑/↓, Ctrl+R) and its keys ([`recall::Recall`] owns them); find in the transcript; the bars that take the composer's place |
//! | [`complete`] | `/` lists ax-code's and the agent's commands as the person types; Tab completes |
//! | [`config`] | the agent's session options (`/config`, `/model`): pickers and changes by name |
//! | [`picker`] | the `@` file picker: fuzzy matching, the list, attaching the chosen file |
//! | [`inbox`] | the approvals inbox: every waiting approval across the sessions (`/approvals`) |
//! | [`queue`] | the open session's prompt queue: shown above the composer, edited, cancelled, sent now |
//! | [`attention`], [`notify`] | each session's state for the list (needs you first); ringing the terminal (bell, OSC 9, OSC 777) |
//! | [`copy`] | `/copy` by OSC 52, mouse capture on and off |
//! | [`render`] | ratatui drawing, side-effect free: the screen's regions, the modals, the approval dialog, the bars and the tray; [`render::theme`] gives the transcript's kinds their look |
//! | `run` | the owner loop: one task owns state, terminal and TUIMCP controller |
//! | [`term`] | crossterm conversion and terminal restore (also on panic) |
//! | [`share`] | TUIMCP: the router agents navigate through, the session validator |
//!
//! The state is a plain struct: tests feed it [`input::Input`]s and backend results and render
//! it into ratatui's `TestBackend`. I/O leaves the state as [`app::Effect`]s; the owner loop
//! ([`run()`]) performs them and hands the answers back through the `on_*` methods.
//!
//! ```
//! use ax_tui::app::{App, Effect};
//! use ax_tui::input::{Input, Key, KeyCode};
//! use ratatui::{Terminal, backend::TestBackend};
//!
//! let mut app = App::new("/home/me/project", None);
//! app.resize(60, 12);
//! app.on_stream_connected();
//! let Some(Effect::Resync { generation }) = app.take_effects().pop() else { unreachable!() };
//! app.on_synced(generation, Ok((vec![], vec![])));
//! assert!(app.ready());
//!
//! for c in "ls".chars() {
//!     app.handle_input(Input::Key(Key::plain(KeyCode::Char(c))));
//! }
//! assert!(app.blocked_inputs().draft); // a draft blocks agent navigation
//! app.handle_input(Input::Key(Key::plain(KeyCode::Enter)));
//! assert!(matches!(app.take_effects()[..], [Effect::Submit { session: None, .. }]));
//!
//! let mut term = Terminal::new(TestBackend::new(60, 12)).unwrap();
//! term.draw(|f| ax_tui::render::draw(f, &app)).unwrap();
//! assert!(term.backend().to_string().contains("Sessions (0)"));
//! ```

pub mod ansi;
pub mod app;
pub mod approval;
pub mod attach;
pub mod attention;
pub mod clock;
pub mod command;
pub mod complete;
pub mod composer;
pub mod config;
pub mod copy;
pub mod find;
pub mod highlight;
pub mod history;
pub mod inbox;
pub mod input;
pub mod kind;
pub mod layout;
pub mod markdown;
pub mod notify;
pub mod picker;
pub mod progress;
pub mod queue;
pub mod recall;
pub mod render;
mod run;
pub mod share;
pub mod term;
pub mod tool_input;
pub mod transcript;
pub mod turn_view;

pub use app::{App, Effect, Route};
pub use command::palette_entries;
pub use layout::chip_spans;
pub use run::{CredentialSource, Options, run};
