//! End-to-end tests of the backend over real HTTP: a real server on 127.0.0.1 port 0, a real
//! SQLite file in a temp data directory, real `sh` processes.

mod auth;
mod events;
mod files;
mod gateway;
mod input;
mod manage;
mod pty;
mod queue;
mod runs;
mod sessions;
mod terminal;
mod util;
