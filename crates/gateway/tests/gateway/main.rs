//! The gateway over real WebSockets: a tiny axum router on 127.0.0.1:0 and
//! tokio-tungstenite clients.

mod fanout;
mod layout;
mod limited;
mod protocol;
mod security;
mod session_screens;
mod terminal;
mod util;
