//! Builders shared by the state tests.

#![allow(dead_code)]

use ax_protocol::{
    Event, Message, Part, Permission, PermissionState, Role, Session, SessionId, SessionStatus,
    Stream,
};
use ax_tui::app::{App, Effect, Sharing};
use ax_tui::input::{Input, Key, KeyCode, Mouse, MouseKind};

pub const ENDPOINT: &str = "/tmp/ax-tui-Ab12Cd/endpoint.json";

pub fn sid(n: u32) -> SessionId {
    format!("ses_0000000000{n:02}ABCDEFGHIJKLMN")
        .parse()
        .unwrap()
}

pub fn session(n: u32, title: &str, status: SessionStatus) -> Session {
    Session {
        id: sid(n),
        title: title.into(),
        created: 1_764_450_000_000 + i64::from(n) * 60_000,
        updated: 1_764_450_000_000 + i64::from(n) * 60_000,
        status,
        agent: "shell".into(),
        agent_state: None,
        standing: Vec::new(),
    }
}

/// The `shell` agent's question about `command` in session `n`, as the backend lists it: its
/// `execute` call (the command line and the files) and the options once, always, reject.
pub fn permission(id: &str, n: u32, command: &str) -> Permission {
    use ax_protocol::turn::{ToolCallPart, ToolKind};
    Permission {
        id: id.parse().unwrap(),
        session_id: sid(n),
        command: command.into(),
        attachments: Vec::new(),
        state: PermissionState::Pending,
        created: 1,
        tool_call: Some(ToolCallPart {
            tool_call_id: "cmd-1".into(),
            title: command.into(),
            kind: ToolKind::Execute,
            raw_input: Some(serde_json::json!({"command": command, "attachments": []})),
            ..ToolCallPart::default()
        }),
        options: shell_options(),
        option_id: None,
    }
}

/// The options the `shell` agent offers with every command (`ax_acp::shell`).
pub fn shell_options() -> Vec<ax_protocol::turn::PermissionChoice> {
    use ax_protocol::turn::{PermissionChoice, PermissionKind};
    let choice = |option_id: &str, name: &str, kind| PermissionChoice {
        option_id: option_id.into(),
        name: name.into(),
        kind,
    };
    vec![
        choice("once", "Allow once", PermissionKind::AllowOnce),
        choice(
            "always",
            "Allow always in this session",
            PermissionKind::AllowAlways,
        ),
        choice("reject", "Reject", PermissionKind::RejectOnce),
    ]
}

pub fn message(id: &str, n: u32, role: Role, parts: Vec<Part>) -> Message {
    Message {
        id: id.parse().unwrap(),
        session_id: sid(n),
        role,
        created: 1,
        ended: None,
        deltas: 0,
        parts,
    }
}

pub fn out(text: &str) -> Part {
    Part::Output {
        stream: Stream::Stdout,
        text: text.into(),
    }
}

pub fn key(code: KeyCode) -> Input {
    Input::Key(Key::plain(code))
}

pub fn ctrl(c: char) -> Input {
    Input::Key(Key::ctrl(c))
}

pub fn click(col: u16, row: u16) -> Input {
    Input::Mouse(Mouse {
        kind: MouseKind::Down,
        col,
        row,
    })
}

pub fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.handle_input(key(KeyCode::Char(c)));
    }
}

/// A connected, synced app with the given sessions, 80x24, optionally sharing.
pub fn ready_app(sessions: Vec<Session>, sharing: bool) -> App {
    ready_app_at(sessions, sharing.then_some(ENDPOINT))
}

/// [`ready_app`], sharing with the endpoint at `endpoint` when given.
pub fn ready_app_at(sessions: Vec<Session>, endpoint: Option<&str>) -> App {
    let mut app = App::new(
        "/home/me/project",
        endpoint.map(|path| Sharing {
            endpoint_path: path.into(),
        }),
    );
    app.resize(80, 24);
    app.on_stream_connected();
    let generation = resync_gen(&mut app);
    app.on_synced(generation, Ok((sessions, Vec::new())));
    assert!(app.ready());
    app
}

pub fn resync_gen(app: &mut App) -> u64 {
    app.take_effects()
        .into_iter()
        .find_map(|e| match e {
            Effect::Resync { generation } => Some(generation),
            _ => None,
        })
        .expect("a resync effect")
}

pub fn transcript_gen(effects: &[Effect]) -> u64 {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::LoadTranscript { generation, .. } => Some(*generation),
            _ => None,
        })
        .expect("a transcript load effect")
}

/// Opens session `n` from home and loads its transcript.
pub fn open_loaded(app: &mut App, n: u32, messages: Vec<Message>) {
    app.handle_input(key(KeyCode::Home));
    for _ in 0..app.sessions().len() {
        if app.sessions().iter().position(|s| s.id == sid(n)) == app.selected_index() {
            break;
        }
        app.handle_input(key(KeyCode::Down));
    }
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    app.on_transcript(transcript_gen(&effects), Ok(messages));
}

pub fn ev(app: &mut App, e: Event) {
    app.on_event(e);
}
