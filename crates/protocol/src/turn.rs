//! The agent's side of a turn: ordered parts, and the deltas that build them.
//!
//! A turn streams as [`TurnDelta`]s (an appended chunk, a changed field), never the whole part
//! each time, so a long answer costs O(chunk) per event. [`apply`] folds a delta into the parts;
//! the live view and a transcript reloaded from storage are both built by folding the same
//! deltas, so they are equal by construction. See `docs/agents.md` (§4, the turn model).
//!
//! Every shape is strict (`deny_unknown_fields`) and camelCase, like the rest of the API.

use ax_core::ids::PermissionId;
use serde::{Deserialize, Serialize};

/// One ordered piece of the agent's message in a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TurnPart {
    /// The agent's answer; consecutive chunks append to one part.
    Text {
        /// The chunk (consecutive chunks are already joined).
        text: String,
    },
    /// The agent's reasoning, shown dimmed and folded.
    Thought {
        /// The reasoning text so far.
        text: String,
    },
    /// A tool call, keyed by its `toolCallId`.
    ToolCall(ToolCallPart),
    /// The agent's plan; each plan update replaces it.
    Plan {
        /// The whole plan, in the agent's order.
        entries: Vec<PlanEntry>,
    },
    /// The agent asked the person before a tool call.
    Permission(PermissionPart),
    /// Something the person should see that is not the agent's answer.
    Notice(Notice),
}

/// What a tool call is for, as the agent classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files.
    Edit,
    /// Removes files.
    Delete,
    /// Moves or renames files.
    Move,
    /// Looks for something.
    Search,
    /// Runs a command.
    Execute,
    /// The agent's own reasoning step.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Changes the agent's mode.
    SwitchMode,
    /// Anything else, and any kind we do not know.
    #[default]
    Other,
}

/// Where a tool call stands. `cancelled` is ours: the person aborted the turn while it was open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Not started yet.
    #[default]
    Pending,
    /// Running.
    InProgress,
    /// Finished well.
    Completed,
    /// Finished with an error.
    Failed,
    /// The person aborted the turn while the call was open.
    Cancelled,
}

impl ToolStatus {
    /// Whether the tool call may still change (an abort marks these `cancelled`).
    pub fn is_open(self) -> bool {
        matches!(self, ToolStatus::Pending | ToolStatus::InProgress)
    }
}

/// One item of a tool call's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolContent {
    /// Text (other content blocks are shown by a short description).
    Text {
        /// The text as the agent sent it.
        text: String,
    },
    /// A file edit: `oldText` is absent for a new file.
    #[serde(rename_all = "camelCase")]
    Diff {
        /// The edited file, as the agent named it.
        path: String,
        /// The file before; absent for a new file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        /// The file after.
        new_text: String,
        /// The 1-based line of the file where the change starts, found by the backend in the
        /// file itself (a diff carries only fragments); absent when it could not tell (a new
        /// file, a fragment found nowhere or more than once). docs/agents.md §4.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line: Option<u32>,
    },
    /// A terminal the agent created, with its output as it streamed
    /// ([`TurnDelta::TerminalOutput`]): the last [`TERMINAL_OUTPUT_KEPT`] bytes of it.
    #[serde(rename_all = "camelCase")]
    Terminal {
        /// The agent's id for the terminal.
        terminal_id: String,
        /// The end of its output so far (raw: may hold ANSI escapes; never markup).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        output: String,
        /// Bytes of output dropped before `output` to stay within the bound.
        #[serde(default, skip_serializing_if = "is_zero")]
        dropped_bytes: u64,
        /// How the command ended, once it has.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit: Option<TerminalExit>,
    },
}

/// Output of a terminal kept in its tool call card: the end, this many bytes at most.
pub const TERMINAL_OUTPUT_KEPT: usize = 64 * 1024;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalExit {
    /// The exit status, when it exited on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u32>,
    /// The signal that ended it (e.g. `SIGKILL`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

impl ToolContent {
    /// A terminal item with no output yet (what an agent's `terminal` content becomes).
    pub fn terminal(terminal_id: impl Into<String>) -> ToolContent {
        ToolContent::Terminal {
            terminal_id: terminal_id.into(),
            output: String::new(),
            dropped_bytes: 0,
            exit: None,
        }
    }
}

/// A file a tool call touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolLocation {
    /// The file, as the agent named it.
    pub path: String,
    /// The line it concerns, 1-based, if the agent said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A tool call as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallPart {
    /// The agent's id; later updates name the call by it.
    pub tool_call_id: String,
    /// A one-line summary for the person.
    pub title: String,
    /// What the call is for.
    pub kind: ToolKind,
    /// Where it stands.
    pub status: ToolStatus,
    /// What the call produced so far (text, diffs, terminals).
    #[serde(default)]
    pub content: Vec<ToolContent>,
    /// The files it touches.
    #[serde(default)]
    pub locations: Vec<ToolLocation>,
    /// The tool's full input as the agent sent it (the whole command, the paths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<serde_json::Value>,
    /// The tool's result as the agent sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<serde_json::Value>,
}

/// Changed fields of a tool call; absent fields stay as they were, `content` and `locations`
/// replace the whole list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallFields {
    /// A new title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// A new status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    /// The whole new content list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolContent>>,
    /// The whole new location list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolLocation>>,
    /// The tool's input, when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<serde_json::Value>,
    /// The tool's output, when it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<serde_json::Value>,
}

impl ToolCallFields {
    /// Writes the present fields into `part`.
    pub fn merge_into(&self, part: &mut ToolCallPart) {
        let f = self.clone();
        if let Some(v) = f.title {
            part.title = v;
        }
        if let Some(v) = f.kind {
            part.kind = v;
        }
        if let Some(v) = f.status {
            part.status = v;
        }
        if let Some(v) = f.content {
            part.content = v;
        }
        if let Some(v) = f.locations {
            part.locations = v;
        }
        if let Some(v) = f.raw_input {
            part.raw_input = Some(v);
        }
        if let Some(v) = f.raw_output {
            part.raw_output = Some(v);
        }
    }
}

/// Priority of a plan entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    /// Do this first.
    High,
    /// The agent gave no priority, or a middling one.
    #[default]
    Medium,
    /// Can wait.
    Low,
}

/// Progress of a plan entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One step of the agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanEntry {
    /// What the step is, in the agent's words.
    pub content: String,
    /// How urgent the agent thinks it is.
    pub priority: PlanPriority,
    /// How far it got.
    pub status: PlanStatus,
}

/// The kind of an option the agent offers in a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionKind {
    /// Allow this one call.
    AllowOnce,
    /// Allow this call and every later one like it.
    AllowAlways,
    /// Refuse this one call.
    RejectOnce,
    /// Refuse this call and every later one like it.
    RejectAlways,
}

impl PermissionKind {
    /// The wire name, e.g. `allow_once`.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionKind::AllowOnce => "allow_once",
            PermissionKind::AllowAlways => "allow_always",
            PermissionKind::RejectOnce => "reject_once",
            PermissionKind::RejectAlways => "reject_always",
        }
    }
}

/// One option of a permission request, as the agent named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionChoice {
    /// The agent's id for the option; what the answer sends back.
    pub option_id: String,
    /// The label the agent gave it.
    pub name: String,
    /// What choosing it means, so a reply by kind can pick it.
    pub kind: PermissionKind,
}

/// How a permission request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum PermissionOutcome {
    /// Waiting for the person.
    Pending,
    /// The person chose; `optionId` is what the agent received.
    #[serde(rename_all = "camelCase")]
    Selected {
        /// The chosen option's id, as sent to the agent.
        option_id: String,
        /// The chosen option's kind.
        kind: PermissionKind,
    },
    /// The turn was aborted or ended before an answer.
    Cancelled,
}

/// A permission request in the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionPart {
    /// Our id for the request (the API answers it by this id); minted by the ACP runtime when
    /// the agent asks, so the agent's request, the stored row and the UIs share one id.
    pub permission_id: PermissionId,
    /// The tool call it is about: the stored one merged with the request's own fields (some
    /// agents send no `tool_call` before asking).
    pub tool_call: ToolCallPart,
    /// What the person may choose from, as the agent offered it.
    pub options: Vec<PermissionChoice>,
    /// Pending until answered or cancelled.
    pub outcome: PermissionOutcome,
}

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// Token or cost usage.
    Usage,
    /// The agent's mode changed.
    Mode,
    /// The agent needs authentication.
    Auth,
    /// Something failed.
    Error,
    /// The turn stopped for a reason other than `end_turn`.
    Stop,
    /// Anything else worth showing (e.g. the agent's own context was not restored).
    Info,
}

/// A line the person should see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Notice {
    /// What it is about (the view styles it by this).
    pub kind: NoticeKind,
    /// One line for the person.
    pub message: String,
}

/// One change to a turn's parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TurnDelta {
    /// Appends to the last part if it is text, else starts a text part.
    TextAppended {
        /// The chunk to append.
        text: String,
    },
    /// Appends to the last part if it is a thought, else starts a thought part.
    ThoughtAppended {
        /// The chunk to append.
        text: String,
    },
    /// A new tool call (a repeated id replaces the stored call).
    #[serde(rename_all = "camelCase")]
    ToolCallCreated {
        /// The call as the agent sent it.
        tool_call: ToolCallPart,
    },
    /// Fields of a tool call changed (an unknown id starts a tool call part).
    #[serde(rename_all = "camelCase")]
    ToolCallUpdated {
        /// The call that changed.
        tool_call_id: String,
        /// What changed.
        fields: ToolCallFields,
    },
    /// The plan, whole (replaces the turn's plan part, or starts one).
    PlanReplaced {
        /// The whole plan.
        entries: Vec<PlanEntry>,
    },
    /// The agent asks the person.
    PermissionAsked {
        /// The request, `pending`.
        permission: PermissionPart,
    },
    /// A permission request was answered or cancelled.
    #[serde(rename_all = "camelCase")]
    PermissionAnswered {
        /// The request, by [`PermissionPart::permission_id`].
        permission_id: PermissionId,
        /// How it ended.
        outcome: PermissionOutcome,
    },
    /// A notice.
    Notice {
        /// What to show.
        notice: Notice,
    },
    /// Output of a terminal appended to its tool call card (coalesced by the backend).
    #[serde(rename_all = "camelCase")]
    TerminalOutput {
        /// The terminal, as a tool call's `terminal` content names it.
        terminal_id: String,
        /// The new output.
        text: String,
        /// Output the backend dropped before `text` (it came faster than it was sent).
        #[serde(default, skip_serializing_if = "is_zero")]
        dropped_bytes: u64,
    },
    /// A terminal's command ended.
    #[serde(rename_all = "camelCase")]
    TerminalExited {
        /// The terminal.
        terminal_id: String,
        /// How it ended.
        exit: TerminalExit,
    },
}

/// Folds `delta` into `parts`.
///
/// Pure and total: any sequence of deltas gives a well-formed transcript, so a stored stream
/// replays to exactly what was shown live.
pub fn apply(parts: &mut Vec<TurnPart>, delta: TurnDelta) {
    match delta {
        TurnDelta::TextAppended { text } => match parts.last_mut() {
            Some(TurnPart::Text { text: last }) => last.push_str(&text),
            _ => parts.push(TurnPart::Text { text }),
        },
        TurnDelta::ThoughtAppended { text } => match parts.last_mut() {
            Some(TurnPart::Thought { text: last }) => last.push_str(&text),
            _ => parts.push(TurnPart::Thought { text }),
        },
        TurnDelta::ToolCallCreated { mut tool_call } => {
            match find_tool_call(parts, &tool_call.tool_call_id) {
                Some(existing) => {
                    carry_terminals(&existing.content, &mut tool_call.content);
                    *existing = tool_call;
                }
                None => parts.push(TurnPart::ToolCall(tool_call)),
            }
        }
        TurnDelta::ToolCallUpdated {
            tool_call_id,
            fields,
        } => match find_tool_call(parts, &tool_call_id) {
            Some(existing) => {
                let old = std::mem::take(&mut existing.content);
                fields.merge_into(existing);
                if fields.content.is_none() {
                    existing.content = old;
                } else {
                    carry_terminals(&old, &mut existing.content);
                }
            }
            None => {
                let mut part = ToolCallPart {
                    tool_call_id,
                    ..ToolCallPart::default()
                };
                fields.merge_into(&mut part);
                parts.push(TurnPart::ToolCall(part));
            }
        },
        TurnDelta::PlanReplaced { entries } => {
            let plan = parts.iter_mut().rev().find_map(|p| match p {
                TurnPart::Plan { entries } => Some(entries),
                _ => None,
            });
            match plan {
                Some(existing) => *existing = entries,
                None => parts.push(TurnPart::Plan { entries }),
            }
        }
        TurnDelta::PermissionAsked { permission } => {
            parts.push(TurnPart::Permission(permission));
        }
        TurnDelta::PermissionAnswered {
            permission_id,
            outcome,
        } => {
            if let Some(p) = parts.iter_mut().rev().find_map(|p| match p {
                TurnPart::Permission(p) if p.permission_id == permission_id => Some(p),
                _ => None,
            }) {
                p.outcome = outcome;
            }
        }
        TurnDelta::Notice { notice } => parts.push(TurnPart::Notice(notice)),
        TurnDelta::TerminalOutput {
            terminal_id,
            text,
            dropped_bytes: dropped,
        } => {
            if let Some(ToolContent::Terminal {
                output,
                dropped_bytes,
                ..
            }) = find_terminal(parts, &terminal_id)
            {
                *dropped_bytes = dropped_bytes.saturating_add(dropped);
                output.push_str(&text);
                if output.len() > TERMINAL_OUTPUT_KEPT {
                    let mut cut = output.len() - TERMINAL_OUTPUT_KEPT;
                    while !output.is_char_boundary(cut) {
                        cut += 1;
                    }
                    output.drain(..cut);
                    *dropped_bytes = dropped_bytes.saturating_add(cut as u64);
                }
            }
        }
        TurnDelta::TerminalExited {
            terminal_id,
            exit: ended,
        } => {
            if let Some(ToolContent::Terminal { exit, .. }) = find_terminal(parts, &terminal_id) {
                *exit = Some(ended);
            }
        }
    }
}

/// Whether a tool call in `parts` shows terminal `id` (where its output goes).
pub fn shows_terminal(parts: &[TurnPart], id: &str) -> bool {
    parts.iter().any(|p| {
        matches!(p, TurnPart::ToolCall(t) if t.content.iter().any(
            |c| matches!(c, ToolContent::Terminal { terminal_id, .. } if terminal_id == id)))
    })
}

/// The terminal item with this id in the last tool call that shows it.
fn find_terminal<'a>(parts: &'a mut [TurnPart], id: &str) -> Option<&'a mut ToolContent> {
    parts.iter_mut().rev().find_map(|p| match p {
        TurnPart::ToolCall(t) => t
            .content
            .iter_mut()
            .find(|c| matches!(c, ToolContent::Terminal { terminal_id, .. } if terminal_id == id)),
        _ => None,
    })
}

/// A tool call's new content list keeps what its terminals streamed (agents send
/// `terminal {terminalId}` again with every update; the output is ours).
fn carry_terminals(old: &[ToolContent], new: &mut [ToolContent]) {
    for item in new.iter_mut() {
        let ToolContent::Terminal {
            terminal_id,
            output,
            dropped_bytes,
            exit,
        } = item
        else {
            continue;
        };
        let before = old.iter().find_map(|c| match c {
            ToolContent::Terminal {
                terminal_id: id,
                output,
                dropped_bytes,
                exit,
            } if id == terminal_id => Some((output, dropped_bytes, exit)),
            _ => None,
        });
        if let Some((o, d, e)) = before
            && output.is_empty()
            && exit.is_none()
        {
            *output = o.clone();
            *dropped_bytes = *d;
            *exit = e.clone();
        }
    }
}

fn find_tool_call<'a>(parts: &'a mut [TurnPart], id: &str) -> Option<&'a mut ToolCallPart> {
    parts.iter_mut().rev().find_map(|p| match p {
        TurnPart::ToolCall(t) if t.tool_call_id == id => Some(t),
        _ => None,
    })
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum TurnEnd {
    /// The agent answered the prompt; `stopReason` as the agent said (`end_turn`, `max_tokens`,
    /// `max_turn_requests`, `refusal`).
    #[serde(rename_all = "camelCase")]
    Completed {
        /// Why the agent stopped, in its words.
        stop_reason: String,
    },
    /// The person aborted the turn.
    Cancelled,
    /// The agent needs authentication before it can work.
    #[serde(rename_all = "camelCase")]
    NeedsAuth {
        /// The ways to authenticate the agent offers.
        auth_methods: Vec<AuthMethod>,
    },
    /// The agent failed or exited mid-turn; `stderrTail` is the end of its error output.
    #[serde(rename_all = "camelCase")]
    Failed {
        /// What failed, for the person.
        message: String,
        /// The end of the agent's error output, for diagnosis.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        stderr_tail: String,
    },
}

/// A way to authenticate that the agent offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthMethod {
    /// The agent's id for the method.
    pub id: String,
    /// The label shown to the person.
    pub name: String,
    /// The agent's explanation, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(id: &str, title: &str) -> ToolCallPart {
        ToolCallPart {
            tool_call_id: id.into(),
            title: title.into(),
            ..ToolCallPart::default()
        }
    }

    fn fold(deltas: &[TurnDelta]) -> Vec<TurnPart> {
        let mut parts = Vec::new();
        for d in deltas {
            apply(&mut parts, d.clone());
        }
        parts
    }

    #[test]
    fn text_chunks_append_to_one_part_until_something_else_comes() {
        let parts = fold(&[
            TurnDelta::TextAppended { text: "Hel".into() },
            TurnDelta::TextAppended { text: "lo".into() },
            TurnDelta::ThoughtAppended { text: "hm".into() },
            TurnDelta::ThoughtAppended { text: "m".into() },
            TurnDelta::TextAppended { text: "!".into() },
        ]);
        assert_eq!(
            parts,
            vec![
                TurnPart::Text {
                    text: "Hello".into()
                },
                TurnPart::Thought { text: "hmm".into() },
                TurnPart::Text { text: "!".into() },
            ]
        );
    }

    #[test]
    fn tool_call_fields_merge_and_lists_are_replaced() {
        let mut first = tool("t1", "Run ls");
        first.content = vec![ToolContent::Text { text: "a".into() }];
        first.locations = vec![ToolLocation {
            path: "/p/a".into(),
            line: None,
        }];
        let parts = fold(&[
            TurnDelta::ToolCallCreated { tool_call: first },
            TurnDelta::ToolCallUpdated {
                tool_call_id: "t1".into(),
                fields: ToolCallFields {
                    status: Some(ToolStatus::InProgress),
                    content: Some(vec![ToolContent::terminal("term1")]),
                    ..ToolCallFields::default()
                },
            },
            TurnDelta::ToolCallUpdated {
                tool_call_id: "t1".into(),
                fields: ToolCallFields {
                    status: Some(ToolStatus::Completed),
                    locations: Some(vec![]),
                    ..ToolCallFields::default()
                },
            },
        ]);
        let [TurnPart::ToolCall(t)] = parts.as_slice() else {
            panic!("one tool call expected: {parts:?}");
        };
        assert_eq!(t.title, "Run ls", "absent fields stay");
        assert_eq!(t.status, ToolStatus::Completed);
        assert_eq!(
            t.content,
            vec![ToolContent::terminal("term1")],
            "content is replaced, not appended"
        );
        assert!(t.locations.is_empty(), "locations are replaced");
    }

    #[test]
    fn update_for_an_unknown_tool_call_starts_one_and_plan_is_replaced() {
        let entry = |c: &str| PlanEntry {
            content: c.into(),
            priority: PlanPriority::High,
            status: PlanStatus::Pending,
        };
        let parts = fold(&[
            TurnDelta::PlanReplaced {
                entries: vec![entry("a"), entry("b")],
            },
            TurnDelta::ToolCallUpdated {
                tool_call_id: "x".into(),
                fields: ToolCallFields {
                    title: Some("Edit".into()),
                    ..ToolCallFields::default()
                },
            },
            TurnDelta::PlanReplaced {
                entries: vec![entry("c")],
            },
        ]);
        assert_eq!(parts.len(), 2);
        assert_eq!(
            parts[0],
            TurnPart::Plan {
                entries: vec![entry("c")]
            }
        );
        assert!(matches!(&parts[1], TurnPart::ToolCall(t) if t.title == "Edit"));
    }

    #[test]
    fn permission_is_asked_then_answered_once_by_id() {
        let perm = |id: &str| PermissionPart {
            permission_id: id.parse().unwrap(),
            tool_call: tool("t", "Write"),
            options: vec![PermissionChoice {
                option_id: "allow".into(),
                name: "Allow".into(),
                kind: PermissionKind::AllowOnce,
            }],
            outcome: PermissionOutcome::Pending,
        };
        let parts = fold(&[
            TurnDelta::PermissionAsked {
                permission: perm("per_00000000000000000000000001"),
            },
            TurnDelta::PermissionAsked {
                permission: perm("per_00000000000000000000000002"),
            },
            TurnDelta::PermissionAnswered {
                permission_id: "per_00000000000000000000000001".parse().unwrap(),
                outcome: PermissionOutcome::Selected {
                    option_id: "allow".into(),
                    kind: PermissionKind::AllowOnce,
                },
            },
            TurnDelta::PermissionAnswered {
                permission_id: "per_00000000000000000000000002".parse().unwrap(),
                outcome: PermissionOutcome::Cancelled,
            },
        ]);
        let outcomes: Vec<_> = parts
            .iter()
            .map(|p| match p {
                TurnPart::Permission(p) => p.outcome.clone(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            outcomes,
            vec![
                PermissionOutcome::Selected {
                    option_id: "allow".into(),
                    kind: PermissionKind::AllowOnce
                },
                PermissionOutcome::Cancelled
            ]
        );
    }

    #[test]
    fn wire_shapes_are_strict_camel_case_and_round_trip() {
        let d = TurnDelta::ToolCallUpdated {
            tool_call_id: "t1".into(),
            fields: ToolCallFields {
                raw_input: Some(serde_json::json!({"command": "ls\n-la"})),
                ..ToolCallFields::default()
            },
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["type"], "tool_call_updated");
        assert_eq!(v["toolCallId"], "t1");
        assert_eq!(v["fields"]["rawInput"]["command"], "ls\n-la");
        assert_eq!(serde_json::from_value::<TurnDelta>(v).unwrap(), d);
        let bad = serde_json::json!({"type": "text_appended", "text": "a", "extra": 1});
        assert!(serde_json::from_value::<TurnDelta>(bad).is_err());
        let bad = serde_json::json!({"type": "tool_call_updated", "toolCallId": "t",
            "fields": {"colour": "red"}});
        assert!(serde_json::from_value::<TurnDelta>(bad).is_err());
        let end = TurnEnd::Failed {
            message: "exited".into(),
            stderr_tail: "boom".into(),
        };
        let v = serde_json::to_value(&end).unwrap();
        assert_eq!(v["state"], "failed");
        assert_eq!(v["stderrTail"], "boom");
        let reloaded: Vec<TurnPart> =
            serde_json::from_str(&serde_json::to_string(&fold(&[d])).unwrap()).unwrap();
        assert_eq!(
            reloaded,
            fold(&[TurnDelta::ToolCallUpdated {
                tool_call_id: "t1".into(),
                fields: ToolCallFields {
                    raw_input: Some(serde_json::json!({"command": "ls\n-la"})),
                    ..ToolCallFields::default()
                },
            }])
        );
    }

    /// Terminal output folds into the card that shows the terminal, keeps only its end, and
    /// survives the agent sending the content list again; unknown terminals change nothing.
    #[test]
    fn terminal_output_folds_bounded_into_its_card_and_survives_updates() {
        let mut call = tool("t1", "Run");
        call.content = vec![ToolContent::terminal("term-1")];
        let big = "x".repeat(TERMINAL_OUTPUT_KEPT);
        let deltas = vec![
            TurnDelta::TerminalOutput {
                terminal_id: "term-1".into(),
                text: "lost: no card yet".into(),
                dropped_bytes: 0,
            },
            TurnDelta::ToolCallCreated { tool_call: call },
            TurnDelta::TerminalOutput {
                terminal_id: "term-1".into(),
                text: "\u{1b}[31mred\u{1b}[0m\n".into(),
                dropped_bytes: 0,
            },
            TurnDelta::ToolCallUpdated {
                tool_call_id: "t1".into(),
                fields: ToolCallFields {
                    status: Some(ToolStatus::InProgress),
                    content: Some(vec![ToolContent::terminal("term-1")]),
                    ..ToolCallFields::default()
                },
            },
            TurnDelta::TerminalOutput {
                terminal_id: "term-1".into(),
                text: big.clone(),
                dropped_bytes: 5,
            },
            TurnDelta::TerminalOutput {
                terminal_id: "other".into(),
                text: "nowhere".into(),
                dropped_bytes: 0,
            },
            TurnDelta::TerminalExited {
                terminal_id: "term-1".into(),
                exit: TerminalExit {
                    exit_code: Some(2),
                    signal: None,
                },
            },
        ];
        let parts = fold(&deltas);
        let [TurnPart::ToolCall(t)] = parts.as_slice() else {
            panic!("one tool call: {parts:?}");
        };
        let [
            ToolContent::Terminal {
                output,
                dropped_bytes,
                exit,
                ..
            },
        ] = t.content.as_slice()
        else {
            panic!("one terminal: {:?}", t.content);
        };
        assert_eq!(output, &big, "only the last {TERMINAL_OUTPUT_KEPT} bytes");
        assert_eq!(*dropped_bytes, 5 + "\u{1b}[31mred\u{1b}[0m\n".len() as u64);
        assert_eq!(exit.as_ref().and_then(|e| e.exit_code), Some(2));
        // The wire shapes: camelCase, strict, and a reload folds equal.
        let v = serde_json::to_value(&deltas[6]).unwrap();
        assert_eq!(v["type"], "terminal_exited");
        assert_eq!(v["terminalId"], "term-1");
        assert_eq!(v["exit"]["exitCode"], 2);
        let v = serde_json::to_value(&deltas[4]).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["droppedBytes"].as_u64()),
            (Some("terminal_output"), Some(5))
        );
        let v = serde_json::to_value(&parts).unwrap();
        assert_eq!(v[0]["content"][0]["droppedBytes"], *dropped_bytes);
        assert_eq!(serde_json::from_value::<Vec<TurnPart>>(v).unwrap(), parts);
        let bad = serde_json::json!({"type": "terminal_output", "terminalId": "t", "text": "", "html": 1});
        assert!(serde_json::from_value::<TurnDelta>(bad).is_err());
    }
}
