//! ACP schema types → our turn parts.

use agent_client_protocol::v1::schema;
use ax_protocol::turn::{
    AuthMethod, PermissionChoice, PermissionKind, PlanEntry, PlanPriority, PlanStatus,
    ToolCallFields, ToolCallPart, ToolContent, ToolKind, ToolLocation, ToolStatus,
};
use ax_protocol::{AgentCommand, AgentConfigChoice, AgentConfigOption, ConfigKind, ConfigValue};

/// A content block as text (non-text blocks by a short description).
pub fn block_text(block: &schema::ContentBlock) -> String {
    match block {
        schema::ContentBlock::Text(t) => t.text.clone(),
        schema::ContentBlock::Image(_) => "[image]".into(),
        schema::ContentBlock::Audio(_) => "[audio]".into(),
        schema::ContentBlock::ResourceLink(l) => format!("[{}]", l.uri),
        schema::ContentBlock::Resource(_) => "[resource]".into(),
        _ => "[content]".into(),
    }
}

pub fn kind(k: &schema::ToolKind) -> ToolKind {
    match k {
        schema::ToolKind::Read => ToolKind::Read,
        schema::ToolKind::Edit => ToolKind::Edit,
        schema::ToolKind::Delete => ToolKind::Delete,
        schema::ToolKind::Move => ToolKind::Move,
        schema::ToolKind::Search => ToolKind::Search,
        schema::ToolKind::Execute => ToolKind::Execute,
        schema::ToolKind::Think => ToolKind::Think,
        schema::ToolKind::Fetch => ToolKind::Fetch,
        schema::ToolKind::SwitchMode => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

pub fn status(s: &schema::ToolCallStatus) -> ToolStatus {
    match s {
        schema::ToolCallStatus::Pending => ToolStatus::Pending,
        schema::ToolCallStatus::InProgress => ToolStatus::InProgress,
        schema::ToolCallStatus::Completed => ToolStatus::Completed,
        schema::ToolCallStatus::Failed => ToolStatus::Failed,
        #[allow(unreachable_patterns)]
        _ => ToolStatus::Pending,
    }
}

fn content(c: &schema::ToolCallContent) -> Option<ToolContent> {
    Some(match c {
        schema::ToolCallContent::Content(c) => ToolContent::Text {
            text: block_text(&c.content),
        },
        schema::ToolCallContent::Diff(d) => ToolContent::Diff {
            path: d.path.to_string_lossy().into_owned(),
            old_text: d.old_text.clone(),
            new_text: d.new_text.clone(),
            line: None,
        },
        schema::ToolCallContent::Terminal(t) => ToolContent::terminal(t.terminal_id.0.to_string()),
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

fn contents(list: &[schema::ToolCallContent]) -> Vec<ToolContent> {
    list.iter().filter_map(content).collect()
}

fn locations(list: &[schema::ToolCallLocation]) -> Vec<ToolLocation> {
    list.iter()
        .map(|l| ToolLocation {
            path: l.path.to_string_lossy().into_owned(),
            line: l.line,
        })
        .collect()
}

pub fn tool_call(tc: &schema::ToolCall) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: tc.tool_call_id.0.to_string(),
        title: tc.title.clone(),
        kind: kind(&tc.kind),
        status: status(&tc.status),
        content: contents(&tc.content),
        locations: locations(&tc.locations),
        raw_input: tc.raw_input.clone(),
        raw_output: tc.raw_output.clone(),
    }
}

pub fn fields(f: &schema::ToolCallUpdateFields) -> ToolCallFields {
    ToolCallFields {
        title: f.title.clone(),
        kind: f.kind.as_ref().map(kind),
        status: f.status.as_ref().map(status),
        content: f.content.as_deref().map(contents),
        locations: f.locations.as_deref().map(locations),
        raw_input: f.raw_input.clone(),
        raw_output: f.raw_output.clone(),
    }
}

pub fn plan(p: &schema::Plan) -> Vec<PlanEntry> {
    p.entries
        .iter()
        .map(|e| PlanEntry {
            content: e.content.clone(),
            priority: match e.priority {
                schema::PlanEntryPriority::High => PlanPriority::High,
                schema::PlanEntryPriority::Low => PlanPriority::Low,
                _ => PlanPriority::Medium,
            },
            status: match e.status {
                schema::PlanEntryStatus::InProgress => PlanStatus::InProgress,
                schema::PlanEntryStatus::Completed => PlanStatus::Completed,
                _ => PlanStatus::Pending,
            },
        })
        .collect()
}

pub fn option(o: &schema::PermissionOption) -> Option<PermissionChoice> {
    let kind = match o.kind {
        schema::PermissionOptionKind::AllowOnce => PermissionKind::AllowOnce,
        schema::PermissionOptionKind::AllowAlways => PermissionKind::AllowAlways,
        schema::PermissionOptionKind::RejectOnce => PermissionKind::RejectOnce,
        schema::PermissionOptionKind::RejectAlways => PermissionKind::RejectAlways,
        _ => return None,
    };
    Some(PermissionChoice {
        option_id: o.option_id.0.to_string(),
        name: o.name.clone(),
        kind,
    })
}

/// The option to send for an answer of `kind`: that kind, else the narrower one of the same
/// direction (`allow_always` → `allow_once`, `reject_always` → `reject_once`), since agents
/// differ in what they offer (Codex has no `reject_always`).
pub fn pick(options: &[PermissionChoice], kind: PermissionKind) -> Option<&PermissionChoice> {
    let fallback = match kind {
        PermissionKind::AllowAlways => Some(PermissionKind::AllowOnce),
        PermissionKind::RejectAlways => Some(PermissionKind::RejectOnce),
        _ => None,
    };
    options
        .iter()
        .find(|o| o.kind == kind)
        .or_else(|| fallback.and_then(|f| options.iter().find(|o| o.kind == f)))
}

/// Auth methods as shown, whatever their variant.
pub fn auth_methods(methods: &[schema::AuthMethod]) -> Vec<AuthMethod> {
    methods
        .iter()
        .filter_map(|m| {
            let v = serde_json::to_value(m).ok()?;
            Some(AuthMethod {
                id: v.get("id")?.as_str()?.to_string(),
                name: v
                    .get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or_default()
                    .to_string(),
                description: v
                    .get("description")
                    .and_then(|d| d.as_str())
                    .map(str::to_string),
            })
        })
        .collect()
}

/// Whether a mode lets the agent act without asking (never where a new session starts).
pub fn is_bypass_mode(id: &str, name: &str) -> bool {
    let text = format!("{id} {name}").to_ascii_lowercase();
    [
        "bypass",
        "yolo",
        "dangerous",
        "full-access",
        "full_access",
        "full access",
        "dontask",
        "don't ask",
        "accept",
        "auto",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// How long an agent's session title may be (then an ellipsis).
pub const SESSION_TITLE_CHARS: usize = 80;

/// The title in an agent's `session_info_update`, as a session may show it: its first line,
/// controls and bidi controls turned into spaces, at most [`SESSION_TITLE_CHARS`]; `None`
/// when the update carries no title, clears it, or gives only blanks.
pub fn session_title(update: &schema::SessionInfoUpdate) -> Option<String> {
    match &update.title {
        agent_client_protocol::schema::MaybeUndefined::Value(title) => {
            ax_core::text::one_line_label(title, SESSION_TITLE_CHARS)
        }
        _ => None,
    }
}

/// The agent's command list as a session keeps it (docs/agents.md §4): a command whose name
/// is empty, too long, or holds whitespace or a control character is dropped (it could not
/// be typed as `/name`, or could disguise itself); descriptions and hints have their controls
/// escaped and are cut to [`AgentCommand::MAX_TEXT`]; at most [`AgentCommand::MAX_COUNT`]
/// are kept, and a repeated name keeps its first entry.
pub fn commands(list: &[schema::AvailableCommand]) -> Vec<AgentCommand> {
    let mut out: Vec<AgentCommand> = Vec::new();
    for c in list {
        if out.len() == AgentCommand::MAX_COUNT {
            tracing::warn!(
                sent = list.len(),
                "the agent sent more commands than are kept"
            );
            break;
        }
        let name = c.name.strip_prefix('/').unwrap_or(&c.name);
        let typable = !name.is_empty()
            && name.len() <= AgentCommand::MAX_NAME
            && !name
                .chars()
                .any(|ch| ch.is_whitespace() || ax_core::text::is_unsafe_char(ch));
        if !typable {
            tracing::warn!(
                name = %ax_core::text::escape_controls(&c.name),
                "skipped an agent command that cannot be typed as /name"
            );
            continue;
        }
        if out.iter().any(|o| o.name == name) {
            continue;
        }
        let hint = match &c.input {
            Some(schema::AvailableCommandInput::Unstructured(u)) => Some(shown(&u.hint)),
            _ => None,
        };
        out.push(AgentCommand {
            name: name.to_owned(),
            description: shown(&c.description),
            input_hint: hint.filter(|h| !h.is_empty()),
        });
    }
    out
}

/// The agent's config options as a session keeps them (docs/agents.md §3): grouped choices
/// flattened in order; an option or choice whose id is empty, longer than 128 bytes or holds a
/// control character is dropped (it is sent back verbatim, so it is never rewritten); labels
/// have their controls escaped and are bounded; at most [`AgentConfigOption::MAX_COUNT`]
/// options, and as many choices each.
pub fn config_options(list: &[schema::SessionConfigOption]) -> Vec<AgentConfigOption> {
    let id_ok = |id: &str| {
        !id.is_empty() && id.len() <= 128 && !id.chars().any(ax_core::text::is_unsafe_char)
    };
    let mut out = Vec::new();
    for o in list.iter().take(AgentConfigOption::MAX_COUNT) {
        let id = o.id.0.to_string();
        if !id_ok(&id) {
            tracing::warn!(id = %ax_core::text::escape_controls(&id), "skipped a config option with an unusable id");
            continue;
        }
        let (kind, current_value, options) = match &o.kind {
            schema::SessionConfigKind::Select(sel) => {
                let flat: Vec<&schema::SessionConfigSelectOption> = match &sel.options {
                    schema::SessionConfigSelectOptions::Ungrouped(v) => v.iter().collect(),
                    schema::SessionConfigSelectOptions::Grouped(g) => {
                        g.iter().flat_map(|g| g.options.iter()).collect()
                    }
                    _ => Vec::new(),
                };
                let choices = flat
                    .into_iter()
                    .filter(|c| id_ok(&c.value.0))
                    .take(AgentConfigOption::MAX_COUNT)
                    .map(|c| AgentConfigChoice {
                        value: c.value.0.to_string(),
                        name: shown(&c.name),
                        description: c.description.as_deref().map(shown),
                    })
                    .collect();
                (
                    ConfigKind::Select,
                    ConfigValue::Text(sel.current_value.0.to_string()),
                    choices,
                )
            }
            schema::SessionConfigKind::Boolean(b) => (
                ConfigKind::Boolean,
                ConfigValue::Bool(b.current_value),
                Vec::new(),
            ),
            _ => continue,
        };
        let category = o.category.as_ref().map(|c| match c {
            schema::SessionConfigOptionCategory::Mode => "mode".to_owned(),
            schema::SessionConfigOptionCategory::Model => "model".to_owned(),
            schema::SessionConfigOptionCategory::ModelConfig => "model_config".to_owned(),
            schema::SessionConfigOptionCategory::ThoughtLevel => "thought_level".to_owned(),
            schema::SessionConfigOptionCategory::Other(other) => shown(other),
            _ => "other".to_owned(),
        });
        out.push(AgentConfigOption {
            id,
            name: shown(&o.name),
            description: o.description.as_deref().map(shown),
            category,
            kind,
            current_value,
            options,
        });
    }
    out
}

/// Agent text for a label: controls escaped, cut at a character boundary to the bound.
fn shown(text: &str) -> String {
    let text = ax_core::text::escape_controls(text.trim());
    let mut end = text.len().min(AgentCommand::MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(id: &str, kind: PermissionKind) -> PermissionChoice {
        PermissionChoice {
            option_id: id.into(),
            name: id.into(),
            kind,
        }
    }

    #[test]
    fn answers_by_kind_with_a_narrower_fallback() {
        let codex = [
            choice("approved", PermissionKind::AllowOnce),
            choice("approved-for-session", PermissionKind::AllowAlways),
            choice("abort", PermissionKind::RejectOnce),
        ];
        assert_eq!(
            pick(&codex, PermissionKind::RejectAlways)
                .unwrap()
                .option_id,
            "abort"
        );
        assert_eq!(
            pick(&codex, PermissionKind::AllowAlways).unwrap().option_id,
            "approved-for-session"
        );
        let only_allow = [choice("ok", PermissionKind::AllowAlways)];
        assert!(pick(&only_allow, PermissionKind::AllowOnce).is_none());
        assert!(pick(&only_allow, PermissionKind::RejectOnce).is_none());
    }

    #[test]
    fn bypass_modes_are_recognised() {
        assert!(is_bypass_mode("bypassPermissions", "Bypass Permissions"));
        assert!(is_bypass_mode("acceptEdits", "Accept Edits"));
        assert!(is_bypass_mode("yolo", "YOLO"));
        assert!(!is_bypass_mode("default", "Default"));
        assert!(!is_bypass_mode("plan", "Plan Mode"));
    }

    #[test]
    fn commands_are_bounded_and_untypable_ones_dropped() {
        let hinted = schema::AvailableCommand::new("review", "Review\x1b[2J the changes").input(
            schema::AvailableCommandInput::Unstructured(schema::UnstructuredCommandInput::new(
                "what to review",
            )),
        );
        let mut list = vec![
            hinted,
            schema::AvailableCommand::new("/compact", "Summarize"),
            schema::AvailableCommand::new("two words", "x"),
            schema::AvailableCommand::new("bad\u{202e}name", "x"),
            schema::AvailableCommand::new("", "x"),
            schema::AvailableCommand::new("n".repeat(AgentCommand::MAX_NAME + 1), "x"),
            schema::AvailableCommand::new("compact", "a second compact"),
            schema::AvailableCommand::new("long", "é".repeat(AgentCommand::MAX_TEXT)),
        ];
        let kept = commands(&list);
        let names: Vec<&str> = kept.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["review", "compact", "long"]);
        assert_eq!(kept[0].description, "Review\\x1b[2J the changes");
        assert_eq!(kept[0].input_hint.as_deref(), Some("what to review"));
        assert_eq!(kept[1].description, "Summarize");
        assert!(kept[2].description.len() <= AgentCommand::MAX_TEXT);
        assert!(kept[2].description.chars().all(|c| c == 'é'));
        list.extend(
            (0..AgentCommand::MAX_COUNT + 5)
                .map(|i| schema::AvailableCommand::new(format!("c{i}"), "")),
        );
        assert_eq!(commands(&list).len(), AgentCommand::MAX_COUNT);
    }
}
