//! What a `shell` session's reply holds: the command's `execute` call, its terminal (output,
//! the bytes dropped before it, the exit) and the question asked about it.

use ax_protocol::{
    Part,
    turn::{PermissionPart, TerminalExit, ToolCallPart, ToolContent, ToolKind, TurnPart},
};

/// The `execute` call of a `shell` turn's reply.
pub fn shell_call(parts: &[Part]) -> &ToolCallPart {
    parts
        .iter()
        .find_map(|p| match p {
            Part::Turn(TurnPart::ToolCall(t)) if t.kind == ToolKind::Execute => Some(t),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no execute call in {parts:?}"))
}

/// The command's terminal: its kept output, the bytes dropped before it and its exit;
/// `None` when the command did not start.
pub fn shell_terminal(parts: &[Part]) -> Option<(&str, u64, Option<&TerminalExit>)> {
    shell_call(parts).content.iter().find_map(|c| match c {
        ToolContent::Terminal {
            output,
            dropped_bytes,
            exit,
            ..
        } => Some((output.as_str(), *dropped_bytes, exit.as_ref())),
        _ => None,
    })
}

/// What the command printed (stdout and stderr are one stream in a terminal).
pub fn shell_output(parts: &[Part]) -> String {
    shell_terminal(parts)
        .map(|(o, _, _)| o.to_owned())
        .unwrap_or_default()
}

/// How the command exited: `(code, signal)`, if it ended on its own.
pub fn shell_exit(parts: &[Part]) -> Option<(Option<u32>, Option<String>)> {
    shell_terminal(parts)
        .and_then(|(_, _, e)| e)
        .map(|e| (e.exit_code, e.signal.clone()))
}

/// The question asked about the command.
pub fn shell_permission(parts: &[Part]) -> &PermissionPart {
    parts
        .iter()
        .find_map(|p| match p {
            Part::Turn(TurnPart::Permission(p)) => Some(p),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no permission in {parts:?}"))
}
