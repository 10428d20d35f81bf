//! Schema v13: the replies of the built-in `shell` agent stored before it became an ACP agent
//! (docs/backend.md §3, "One agent model"), rewritten as the turn deltas its ACP turn
//! stores, so a transcript reads the same whenever its commands ran.
//!
//! An old reply is `part` rows: its command's `output` (stdout and stderr in arrival order), a
//! `truncated` marker between the kept head and tail, and how it ended (`exit`, `rejected`,
//! `aborted` or `interrupted`; a restart's recovery may have added one more `interrupted`),
//! with the turn's `permission` row unless the session allowed always. The person's message
//! before it holds the command line (its text parts joined with newlines) and the files.
//! What the `shell` agent (`ax_acp::shell`) and the ACP runtime send for the same turn, and
//! so what the reply becomes:
//!
//! - `tool_call_created`: the call [`CALL_ID`] of kind `execute`, titled with the command
//!   line, `rawInput {command, attachments}`, pending;
//! - `permission_asked` with the options `once`, `always` and `reject`, answered as the row
//!   says (`approved` is `always` when the session's next reply asked nothing, which only
//!   that answer allowed, else `once`);
//! - the run: the call in progress showing terminal [`TERMINAL_ID`] (an agent served inside
//!   the backend leaves no "started a terminal" notice), the output as
//!   `terminal_output` deltas (one stream; a `truncated` part's bytes are dropped bytes of the
//!   output after it, which the card counts with the bytes it does not keep), then
//!   `terminal_exited` and the call `completed` (exit 0) or `failed`, with `rawOutput
//!   {exitCode, signal, truncated}`. A command that could not start (the old run's one
//!   `ax-code: …` line and an empty exit) is a failed call saying why, with no terminal;
//! - rejected: the call failed and the runtime's notice naming what was rejected; aborted:
//!   the call cancelled; interrupted: the call cancelled and the backend's [`CUT_SHORT`]
//!   notice.
//!
//! The reply's `part` rows go; its permission row gets the tool call, the options and the
//! option sent, as an ACP permission's. A reply that still has its `run` row (its backend
//! crashed) keeps its call open and its permission pending, for the recovery that follows to
//! close as it closes any ACP turn. A reply whose rows are not a shell run's (none were
//! written so; a hand-edited file may hold anything) is left as it is, and so is its
//! permission.
//!
//! A permission row belongs to a reply when it is the session's first row not matched yet
//! (in the order rows were written), was created no later than the reply, and asked about the
//! reply's command line and files.

use std::collections::HashSet;

use ax_protocol::{
    MessageId, Permission, PermissionId, PermissionState, SessionId,
    turn::{
        Notice, NoticeKind, PermissionChoice, PermissionKind, PermissionOutcome, PermissionPart,
        TERMINAL_OUTPUT_KEPT, TerminalExit, ToolCallFields, ToolCallPart, ToolContent, ToolKind,
        ToolStatus, TurnDelta,
    },
};
use rusqlite::Connection;
use serde::Deserialize;

use super::{Result, answer_permission, append_deltas};

/// The tool call id of a rewritten reply (one call per reply; the live agent numbers them).
pub(super) const CALL_ID: &str = "cmd-1";
/// The terminal id of a rewritten reply.
pub(super) const TERMINAL_ID: &str = "term-1";
/// The notice a turn ends with when the backend's stop cut it short: the live turn writes it
/// (`turn::acp`), and so does this rewrite for an old run a restart interrupted. Defined
/// here, below the turns, so the store needs nothing from them.
pub const CUT_SHORT: &str = "the backend stopped; the turn was cut short";

/// A part of an old shell reply, as it was stored (kept here as written then: the protocol's
/// own `Part` may lose these variants).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OldPart {
    Output {
        stream: String,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Truncated {
        dropped_bytes: u64,
    },
    Exit {
        #[serde(default)]
        code: Option<i32>,
        #[serde(default)]
        signal: Option<i32>,
    },
    Rejected,
    Aborted,
    Interrupted,
}

/// A part of the person's message before a reply.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PromptPart {
    Text {
        text: String,
    },
    File {
        path: String,
    },
    #[serde(other)]
    Other,
}

struct Row {
    id: String,
    role: String,
    created: i64,
    parts: Vec<String>,
}

/// An old reply of a session: its row, the command line and files of the person's message
/// before it, and its permission row (indexes into the session's rows).
struct Reply {
    row: usize,
    prompt: Option<(String, Vec<String>)>,
    permission: Option<usize>,
}

struct OldPermission {
    id: String,
    command: String,
    /// `None` when the column does not read as a list of paths (then no prompt matches it).
    attachments: Option<Vec<String>>,
    state: String,
    created: i64,
}

/// Rewrites every old reply of every `shell` session (see the module's documentation).
pub(super) fn rewrite(conn: &Connection) -> Result<()> {
    let sessions: Vec<(String, bool)> = conn
        .prepare("SELECT id, always_allow FROM session WHERE agent = ?1")?
        .query_map([ax_acp::config::SHELL], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)? != 0))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (session, always_now) in sessions {
        rewrite_session(conn, &session, always_now)?;
    }
    Ok(())
}

/// The command line and files of the person's message (`None`: it is not a prompt a shell
/// turn could have run).
fn prompt_of(bodies: &[String]) -> Option<(String, Vec<String>)> {
    let mut texts = Vec::new();
    let mut files = Vec::new();
    for body in bodies {
        match serde_json::from_str::<PromptPart>(body).ok()? {
            PromptPart::Text { text } => texts.push(text),
            PromptPart::File { path } => files.push(path),
            PromptPart::Other => return None,
        }
    }
    (!texts.is_empty()).then(|| (texts.join("\n"), files))
}

fn rewrite_session(conn: &Connection, session: &str, always_now: bool) -> Result<()> {
    let mut rows: Vec<Row> = conn
        .prepare_cached("SELECT id, role, created FROM message WHERE session_id = ?1 ORDER BY seq")?
        .query_map([session], |r| {
            Ok(Row {
                id: r.get(0)?,
                role: r.get(1)?,
                created: r.get(2)?,
                parts: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    if rows.is_empty() {
        return Ok(());
    }
    let index: std::collections::HashMap<String, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.clone(), i))
        .collect();
    {
        let mut stmt = conn.prepare_cached(
            "SELECT p.message_id, p.body FROM part p JOIN message m ON m.id = p.message_id \
             WHERE m.session_id = ?1 ORDER BY m.seq, p.idx",
        )?;
        let mut found = stmt.query([session])?;
        while let Some(r) = found.next()? {
            let id: String = r.get(0)?;
            if let Some(&i) = index.get(&id) {
                rows[i].parts.push(r.get(1)?);
            }
        }
    }
    let with_deltas: HashSet<String> = conn
        .prepare_cached(
            "SELECT DISTINCT d.message_id FROM delta d JOIN message m ON m.id = d.message_id \
             WHERE m.session_id = ?1",
        )?
        .query_map([session], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let running: HashSet<String> = conn
        .prepare_cached("SELECT message_id FROM run WHERE session_id = ?1")?
        .query_map([session], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let permissions: Vec<OldPermission> = conn
        .prepare_cached(
            "SELECT id, command, attachments, state, created FROM permission \
             WHERE session_id = ?1 AND detail IS NULL ORDER BY rowid",
        )?
        .query_map([session], |r| {
            let attachments: String = r.get(2)?;
            Ok(OldPermission {
                id: r.get(0)?,
                command: r.get(1)?,
                attachments: serde_json::from_str(&attachments).ok(),
                state: r.get(3)?,
                created: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    // Each old reply with its prompt and its permission row, in order.
    let mut replies: Vec<Reply> = Vec::new();
    let mut next = 0;
    for (i, row) in rows.iter().enumerate() {
        if row.role != "assistant" || with_deltas.contains(&row.id) {
            continue;
        }
        let prompt = i
            .checked_sub(1)
            .map(|p| &rows[p])
            .filter(|p| p.role == "user")
            .and_then(|p| prompt_of(&p.parts));
        let matched = permissions.get(next).is_some_and(|p| {
            p.created <= row.created
                && prompt.as_ref().is_none_or(|(command, files)| {
                    p.command == *command && p.attachments.as_ref() == Some(files)
                })
        });
        replies.push(Reply {
            row: i,
            prompt,
            permission: matched.then_some(next),
        });
        if matched {
            next += 1;
        }
    }

    let sid: Option<SessionId> = session.parse().ok();
    for (k, reply) in replies.iter().enumerate() {
        let Reply {
            row,
            prompt,
            permission,
        } = reply;
        let row = &rows[*row];
        let Ok(parts) = row
            .parts
            .iter()
            .map(|b| serde_json::from_str::<OldPart>(b))
            .collect::<Result<Vec<_>, _>>()
        else {
            continue;
        };
        let Ok(message) = row.id.parse::<MessageId>() else {
            continue;
        };
        let old = permission.map(|p| &permissions[p]);
        let (command, attachments) = match (prompt, old) {
            (Some((command, files)), _) => (command.clone(), files.clone()),
            (None, Some(p)) => (p.command.clone(), p.attachments.clone().unwrap_or_default()),
            (None, None) => (String::new(), Vec::new()),
        };
        let asked = match old {
            None => None,
            Some(p) => {
                let (Ok(id), Ok(state), Some(sid)) = (
                    p.id.parse::<PermissionId>(),
                    p.state.parse::<PermissionState>(),
                    sid.as_ref(),
                ) else {
                    continue;
                };
                // "Always" is the only answer after which the next command was not asked
                // about; the session's last answer, if the session still allows always.
                let always = match replies.get(k + 1) {
                    Some(next) => next.permission.is_none(),
                    None => always_now && permission.is_some_and(|p| p + 1 == permissions.len()),
                };
                Some((id, state, always, p, sid))
            }
        };
        let plan = Plan {
            command: &command,
            attachments: &attachments,
            permission: asked
                .as_ref()
                .map(|(id, state, always, ..)| (id, *state, *always)),
            parts: &parts,
            running: running.contains(&row.id),
        };
        let Some(Replayed { deltas, outcome }) = replay(&plan) else {
            continue;
        };
        append_deltas(
            conn,
            &message,
            deltas.iter().enumerate().map(|(n, d)| (n as u64 + 1, d)),
        )?;
        conn.prepare_cached("DELETE FROM part WHERE message_id = ?1")?
            .execute([&row.id])?;
        if let Some((id, state, _, p, sid)) = asked {
            let (state, option_id) = match outcome {
                Some(PermissionOutcome::Selected { option_id, kind }) => (
                    match kind {
                        PermissionKind::AllowOnce | PermissionKind::AllowAlways => {
                            PermissionState::Approved
                        }
                        PermissionKind::RejectOnce | PermissionKind::RejectAlways => {
                            PermissionState::Rejected
                        }
                    },
                    Some(option_id),
                ),
                Some(_) => (PermissionState::Cancelled, None),
                None => (state, None),
            };
            answer_permission(
                conn,
                &Permission {
                    id,
                    session_id: sid.clone(),
                    command: p.command.clone(),
                    attachments: p.attachments.clone().unwrap_or_default(),
                    state,
                    created: p.created,
                    tool_call: Some(call(&command, &attachments)),
                    options: options(),
                    option_id,
                },
            )?;
        }
    }
    Ok(())
}

/// One old reply, read.
struct Plan<'a> {
    command: &'a str,
    attachments: &'a [String],
    /// The permission asked: its id, its stored state, and whether an approval was "always".
    permission: Option<(&'a PermissionId, PermissionState, bool)>,
    parts: &'a [OldPart],
    /// Its `run` row is still there (a backend crashed during it).
    running: bool,
}

/// What a reply becomes: its deltas, and how its permission was answered (`None`: pending).
struct Replayed {
    deltas: Vec<TurnDelta>,
    outcome: Option<PermissionOutcome>,
}

/// How an old run ended (its last part before a recovery's `interrupted`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    Open,
    Exit(Option<i32>, Option<i32>),
    Rejected,
    Aborted,
}

/// The call as the `shell` agent creates it.
fn call(command: &str, attachments: &[String]) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: CALL_ID.into(),
        title: command.into(),
        kind: ToolKind::Execute,
        status: ToolStatus::Pending,
        content: Vec::new(),
        locations: Vec::new(),
        raw_input: Some(serde_json::json!({ "command": command, "attachments": attachments })),
        raw_output: None,
    }
}

/// The options the `shell` agent offers.
fn options() -> Vec<PermissionChoice> {
    let choice = |id: &str, name: &str, kind| PermissionChoice {
        option_id: id.into(),
        name: name.into(),
        kind,
    };
    vec![
        choice(
            ax_acp::shell::ALLOW_ONCE,
            "Allow once",
            PermissionKind::AllowOnce,
        ),
        choice(
            ax_acp::shell::ALLOW_ALWAYS,
            "Allow always in this session",
            PermissionKind::AllowAlways,
        ),
        choice(ax_acp::shell::REJECT, "Reject", PermissionKind::RejectOnce),
    ]
}

fn selected(option_id: &str, kind: PermissionKind) -> PermissionOutcome {
    PermissionOutcome::Selected {
        option_id: option_id.into(),
        kind,
    }
}

fn status(status: ToolStatus) -> TurnDelta {
    update(ToolCallFields {
        status: Some(status),
        ..ToolCallFields::default()
    })
}

fn update(fields: ToolCallFields) -> TurnDelta {
    TurnDelta::ToolCallUpdated {
        tool_call_id: CALL_ID.into(),
        fields,
    }
}

fn notice(kind: NoticeKind, message: String) -> TurnDelta {
    TurnDelta::Notice {
        notice: Notice { kind, message },
    }
}

/// The runtime's notice when an agent ends its turn after the person rejected its call
/// (titled with the command; with its id when the command is empty, as the runtime does).
fn rejected_notice(title: &str) -> String {
    let title = if title.is_empty() { CALL_ID } else { title };
    ax_acp::runtime::rejected_notice(&[title.to_string()])
}

/// The reason an old run could not start its command: its only output is the run's own
/// `ax-code: …` line on stderr, and its exit has neither code nor signal.
fn could_not_start(output: &[OldPart], ending: Ending) -> Option<String> {
    let [OldPart::Output { stream, text }] = output else {
        return None;
    };
    let why = text.strip_prefix("ax-code: ")?.strip_suffix('\n')?;
    (stream == "stderr" && ending == Ending::Exit(None, None)).then(|| why.to_string())
}

/// The output as terminal output deltas, each at most what a card keeps (a larger piece goes
/// alone); a `truncated` part's bytes go with the output after it.
fn terminal_output(output: &[OldPart], deltas: &mut Vec<TurnDelta>) {
    let mut text = String::new();
    let mut dropped = 0;
    let flush = |text: &mut String, dropped: &mut u64, deltas: &mut Vec<TurnDelta>| {
        if !text.is_empty() || *dropped > 0 {
            deltas.push(TurnDelta::TerminalOutput {
                terminal_id: TERMINAL_ID.into(),
                text: std::mem::take(text),
                dropped_bytes: std::mem::take(dropped),
            });
        }
    };
    for part in output {
        match part {
            OldPart::Output { text: piece, .. } => {
                if !text.is_empty() && text.len() + piece.len() > TERMINAL_OUTPUT_KEPT {
                    flush(&mut text, &mut dropped, deltas);
                }
                text.push_str(piece);
            }
            OldPart::Truncated { dropped_bytes } => {
                if !text.is_empty() {
                    flush(&mut text, &mut dropped, deltas);
                }
                dropped += dropped_bytes;
            }
            _ => {}
        }
    }
    flush(&mut text, &mut dropped, deltas);
}

/// The deltas of one old reply, or `None` when its rows are not a shell run's.
fn replay(plan: &Plan<'_>) -> Option<Replayed> {
    // Output (with at most one `truncated`), at most one ending, and a recovery's
    // `interrupted`.
    let body = plan
        .parts
        .iter()
        .take_while(|p| matches!(p, OldPart::Output { .. } | OldPart::Truncated { .. }))
        .count();
    let (output, rest) = plan.parts.split_at(body);
    let truncated = output
        .iter()
        .filter(|p| matches!(p, OldPart::Truncated { .. }))
        .count();
    if truncated > 1 {
        return None;
    }
    let ending_of = |p: &OldPart| match p {
        OldPart::Exit { code, signal } => Some(Ending::Exit(*code, *signal)),
        OldPart::Rejected => Some(Ending::Rejected),
        OldPart::Aborted => Some(Ending::Aborted),
        _ => None,
    };
    let (ending, interrupted) = match rest {
        [] => (Ending::Open, false),
        [OldPart::Interrupted] => (Ending::Open, true),
        [last] => (ending_of(last)?, false),
        [last, OldPart::Interrupted] => (ending_of(last)?, true),
        _ => return None,
    };
    let ran_parts = !output.is_empty() || matches!(ending, Ending::Exit(..));
    let ran = match plan.permission {
        None => ending != Ending::Rejected,
        Some((_, PermissionState::Approved, _)) => ending != Ending::Rejected,
        Some((_, PermissionState::Rejected, _)) => {
            if !matches!(ending, Ending::Rejected | Ending::Open) {
                return None;
            }
            false
        }
        Some(_) => {
            if ending == Ending::Rejected {
                return None;
            }
            false
        }
    };
    if ran_parts && !ran {
        return None;
    }
    if ending == Ending::Rejected
        && plan
            .permission
            .is_some_and(|p| p.1 == PermissionState::Approved)
    {
        return None;
    }

    let created = call(plan.command, plan.attachments);
    let mut deltas = vec![TurnDelta::ToolCallCreated {
        tool_call: created.clone(),
    }];
    let mut current = ToolStatus::Pending;
    let mut outcome = None;
    let mut rejected = ending == Ending::Rejected;
    if let Some((id, state, always)) = plan.permission {
        deltas.push(TurnDelta::PermissionAsked {
            permission: PermissionPart {
                permission_id: id.clone(),
                tool_call: created,
                options: options(),
                outcome: PermissionOutcome::Pending,
            },
        });
        outcome = match state {
            PermissionState::Approved if always => Some(selected(
                ax_acp::shell::ALLOW_ALWAYS,
                PermissionKind::AllowAlways,
            )),
            PermissionState::Approved => Some(selected(
                ax_acp::shell::ALLOW_ONCE,
                PermissionKind::AllowOnce,
            )),
            PermissionState::Rejected => {
                rejected = true;
                Some(selected(ax_acp::shell::REJECT, PermissionKind::RejectOnce))
            }
            PermissionState::Cancelled => Some(PermissionOutcome::Cancelled),
            // Still waiting when its backend crashed: the recovery after this cancels it.
            PermissionState::Pending if plan.running && ending == Ending::Open && !interrupted => {
                None
            }
            PermissionState::Pending => Some(PermissionOutcome::Cancelled),
        };
        if let Some(outcome) = &outcome {
            deltas.push(TurnDelta::PermissionAnswered {
                permission_id: id.clone(),
                outcome: outcome.clone(),
            });
        }
    }
    if rejected {
        deltas.push(status(ToolStatus::Failed));
        current = ToolStatus::Failed;
        if ending == Ending::Rejected {
            deltas.push(notice(NoticeKind::Stop, rejected_notice(plan.command)));
        }
    } else if ran {
        if let Some(why) = could_not_start(output, ending) {
            deltas.push(update(ToolCallFields {
                status: Some(ToolStatus::Failed),
                content: Some(vec![ToolContent::Text { text: why }]),
                ..ToolCallFields::default()
            }));
            current = ToolStatus::Failed;
        } else {
            deltas.push(update(ToolCallFields {
                status: Some(ToolStatus::InProgress),
                content: Some(vec![ToolContent::terminal(TERMINAL_ID)]),
                ..ToolCallFields::default()
            }));
            current = ToolStatus::InProgress;
            terminal_output(output, &mut deltas);
            if let Ending::Exit(code, signal) = ending {
                let exit_code = code.and_then(|c| u32::try_from(c).ok());
                let signal = signal.map(ax_acp::agent_terminal::signal_name);
                deltas.push(TurnDelta::TerminalExited {
                    terminal_id: TERMINAL_ID.into(),
                    exit: TerminalExit {
                        exit_code,
                        signal: signal.clone(),
                    },
                });
                current = if exit_code == Some(0) && signal.is_none() {
                    ToolStatus::Completed
                } else {
                    ToolStatus::Failed
                };
                deltas.push(update(ToolCallFields {
                    status: Some(current),
                    raw_output: Some(serde_json::json!({
                        "exitCode": exit_code,
                        "signal": signal,
                        "truncated": truncated > 0,
                    })),
                    ..ToolCallFields::default()
                }));
            }
        }
    }
    // An abort, a stop, or a turn that ended without saying how: nothing runs any more.
    let over = ending == Ending::Aborted || interrupted || !plan.running;
    if over && current.is_open() {
        deltas.push(status(ToolStatus::Cancelled));
    }
    if interrupted {
        deltas.push(notice(NoticeKind::Info, CUT_SHORT.into()));
    }
    Some(Replayed { deltas, outcome })
}

#[cfg(test)]
mod tests;
