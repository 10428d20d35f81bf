//! The `screen` tool's arguments: the actions, the closed input, and how an input maps to
//! the gateway's `ui.command` or `ui.layout` params (docs/gateway.md §4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    screen_error::ScreenError,
    ui_command::{Annotation, Dock, PanelKind, Preset, SplitDirection, UiCommand, UiCommandParams},
    ui_layout::{Target, UiLayoutParams},
};

/// One action of the tool. The wire names (snake_case) exist only here.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum ScreenAction {
    // Split beside the session's pane, to the right.
    SplitRight,
    // Split beside the session's pane, below.
    SplitDown,
    // Close the session's pane.
    ClosePane,
    // Focus the session's pane.
    Focus,
    // Show the session in the focused pane.
    Navigate,
    // Show the sidebar.
    SidebarShow,
    // Hide the sidebar.
    SidebarHide,
    // Open the terminal panel.
    TerminalShow,
    // Close the terminal panel.
    TerminalHide,
    // Open the browser panel.
    BrowserShow,
    // Close the browser panel.
    BrowserHide,
    // Read each UI's layout (read only).
    Layout,
    // Apply a preset or a saved layout.
    ApplyLayout,
    // Place short-lived labels or arrows.
    Annotate,
    // Remove every annotation.
    AnnotationsClear,
}

impl ScreenAction {
    /// Every action, in the order the schema lists them.
    pub const ALL: [ScreenAction; 15] = [
        ScreenAction::SplitRight,
        ScreenAction::SplitDown,
        ScreenAction::ClosePane,
        ScreenAction::Focus,
        ScreenAction::Navigate,
        ScreenAction::SidebarShow,
        ScreenAction::SidebarHide,
        ScreenAction::TerminalShow,
        ScreenAction::TerminalHide,
        ScreenAction::BrowserShow,
        ScreenAction::BrowserHide,
        ScreenAction::Layout,
        ScreenAction::ApplyLayout,
        ScreenAction::Annotate,
        ScreenAction::AnnotationsClear,
    ];

    /// Whether the action acts on a session (and so takes `sessionKey`, `paneId` and the
    /// default session).
    pub fn uses_session(self) -> bool {
        matches!(
            self,
            ScreenAction::SplitRight
                | ScreenAction::SplitDown
                | ScreenAction::ClosePane
                | ScreenAction::Focus
                | ScreenAction::Navigate
        )
    }

    /// Whether `dock` applies (showing a panel).
    pub fn takes_dock(self) -> bool {
        matches!(self, ScreenAction::TerminalShow | ScreenAction::BrowserShow)
    }

    /// The gateway command for this action; none for `layout` (a read).
    pub fn command(self, input: &ScreenInput) -> Option<UiCommand> {
        let session_key = input.session_key.clone();
        let pane_id = input.pane_id.clone();
        let panel = |panel, open| UiCommand::Panel {
            panel,
            open,
            dock: if open { input.dock } else { None },
        };
        Some(match self {
            ScreenAction::SplitRight => UiCommand::Split {
                direction: SplitDirection::Right,
                session_key,
                pane_id,
            },
            ScreenAction::SplitDown => UiCommand::Split {
                direction: SplitDirection::Down,
                session_key,
                pane_id,
            },
            ScreenAction::ClosePane => UiCommand::ClosePane {
                session_key,
                pane_id,
            },
            ScreenAction::Focus => UiCommand::Focus {
                session_key,
                pane_id,
            },
            ScreenAction::Navigate => UiCommand::Navigate {
                session_key,
                pane_id,
            },
            ScreenAction::SidebarShow => UiCommand::Sidebar { visible: true },
            ScreenAction::SidebarHide => UiCommand::Sidebar { visible: false },
            ScreenAction::TerminalShow => panel(PanelKind::Terminal, true),
            ScreenAction::TerminalHide => panel(PanelKind::Terminal, false),
            ScreenAction::BrowserShow => panel(PanelKind::Browser, true),
            ScreenAction::BrowserHide => panel(PanelKind::Browser, false),
            ScreenAction::Layout => return None,
            ScreenAction::ApplyLayout => UiCommand::ApplyLayout {
                preset: input.preset,
                name: input.name.clone(),
                sessions: input.sessions.clone(),
            },
            ScreenAction::Annotate => UiCommand::Annotate {
                annotations: input.annotations.clone().unwrap_or_default(),
                ttl_seconds: input.ttl_seconds.unwrap_or(DEFAULT_TTL),
            },
            ScreenAction::AnnotationsClear => UiCommand::AnnotationsClear,
        })
    }

    /// The wire name (snake_case).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// The tool's arguments (closed).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenInput {
    /// What to change.
    pub action: ScreenAction,
    /// The target session (ses_ and 26 letters or digits) for split_right, split_down,
    /// close_pane, focus and navigate; default: the current session.
    #[serde(default)]
    #[schemars(regex(pattern = r"^ses_[0-9A-Za-z]{26}$"))]
    pub session_key: Option<String>,
    /// Where to dock the panel; only with terminal_show or browser_show.
    #[serde(default)]
    pub dock: Option<Dock>,
    /// The pane (a paneId from layout) for split_right, split_down, close_pane, focus and
    /// navigate; it wins over sessionKey's pane.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,32}$"))]
    pub pane_id: Option<String>,
    /// The layout revision (from layout) the arrangement is based on; a UI whose layout
    /// changed since refuses with its current revision.
    #[serde(default)]
    pub expected_revision: Option<u64>,
    /// "requester": only the Control UI that started the current turn; "all" (default).
    #[serde(default)]
    pub target: Option<Target>,
    /// Only this UI (a uiId from layout); not with target.
    #[serde(default)]
    pub ui_id: Option<String>,
    /// apply_layout: a built-in preset.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// apply_layout: a layout the person saved by this name in the Control UI.
    #[serde(default)]
    pub name: Option<String>,
    /// apply_layout with a preset: the sessions to show, in order (at most four).
    #[serde(default)]
    pub sessions: Option<Vec<String>>,
    /// annotate: one to four labels or arrows.
    #[serde(default)]
    pub annotations: Option<Vec<Annotation>>,
    /// annotate: seconds until they go (3 to 120, default 10).
    #[serde(default)]
    pub ttl_seconds: Option<u32>,
}

/// An annotation's life when the call gives none.
const DEFAULT_TTL: u32 = 10;

/// Whether `key` is a session ID (`ses_` and 26 letters or digits).
pub(crate) fn is_session_id(key: &str) -> bool {
    key.len() == 30
        && key.starts_with("ses_")
        && key[4..].bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Checks an input against what the schema cannot say and maps it to the gateway params.
/// `default_session` is sent (as the source session) only with actions that use a session.
pub fn command_params(
    input: &ScreenInput,
    default_session: Option<&str>,
) -> Result<UiCommandParams, ScreenError> {
    let action = input.action;
    if let Some(key) = &input.session_key {
        if !is_session_id(key) {
            return Err(ScreenError::invalid(
                "sessionKey must be a session ID (ses_ followed by 26 letters or digits)",
            ));
        }
        if !action.uses_session() {
            return Err(ScreenError::invalid(format!(
                "sessionKey does not apply to {}",
                action.name()
            )));
        }
    }
    if input.dock.is_some() && !action.takes_dock() {
        return Err(ScreenError::invalid(
            "dock is allowed only with terminal_show or browser_show",
        ));
    }
    let only = |given: bool, what: &str, with: ScreenAction| {
        if given && action != with {
            Err(ScreenError::invalid(format!(
                "{what} applies only to {}",
                with.name()
            )))
        } else {
            Ok(())
        }
    };
    only(input.preset.is_some(), "preset", ScreenAction::ApplyLayout)?;
    only(input.name.is_some(), "name", ScreenAction::ApplyLayout)?;
    only(
        input.sessions.is_some(),
        "sessions",
        ScreenAction::ApplyLayout,
    )?;
    only(
        input.annotations.is_some(),
        "annotations",
        ScreenAction::Annotate,
    )?;
    only(
        input.ttl_seconds.is_some(),
        "ttlSeconds",
        ScreenAction::Annotate,
    )?;
    if input.pane_id.is_some() && !action.uses_session() {
        return Err(ScreenError::invalid(format!(
            "paneId does not apply to {}",
            action.name()
        )));
    }
    if input.expected_revision.is_some() && action == ScreenAction::Layout {
        return Err(ScreenError::invalid(
            "expectedRevision does not apply to layout",
        ));
    }
    for key in input.sessions.iter().flatten().chain(
        input
            .annotations
            .iter()
            .flatten()
            .filter_map(|a| a.session_key.as_ref()),
    ) {
        if !is_session_id(key) {
            return Err(ScreenError::invalid(format!(
                "{key:?} is not a session ID (ses_ followed by 26 letters or digits)"
            )));
        }
    }
    let requester = input.target == Some(Target::Requester);
    let command = action
        .command(input)
        .ok_or_else(|| ScreenError::invalid("layout is a read, not a command"))?;
    let params = UiCommandParams {
        command,
        session_key: default_session
            .filter(|_| action.uses_session() || requester)
            .map(str::to_string),
        wait: Some(true),
        expected_revision: input.expected_revision,
        target: input.target,
        ui_id: input.ui_id.clone(),
    };
    // The gateway checks the rest too; here a bad call is refused before connecting.
    params.validate(&AnySession).map_err(ScreenError::invalid)?;
    Ok(params)
}

/// Session existence is the gateway's to check; this side checks only the shapes.
struct AnySession;
impl crate::SessionDirectory for AnySession {
    fn contains(&self, _session_id: &str) -> bool {
        true
    }
}

/// The `ui.layout` params of a layout call.
pub fn layout_params(
    input: &ScreenInput,
    default_session: Option<&str>,
) -> Result<UiLayoutParams, ScreenError> {
    let stray = input.session_key.is_some()
        || input.dock.is_some()
        || input.pane_id.is_some()
        || input.expected_revision.is_some()
        || input.preset.is_some()
        || input.name.is_some()
        || input.sessions.is_some()
        || input.annotations.is_some()
        || input.ttl_seconds.is_some();
    if stray {
        return Err(ScreenError::invalid("layout takes only target or uiId"));
    }
    crate::ui_layout::check_target(input.target, input.ui_id.as_deref())
        .map_err(ScreenError::invalid)?;
    Ok(UiLayoutParams {
        target: input.target,
        ui_id: input.ui_id.clone(),
        session_key: default_session
            .filter(|_| input.target == Some(Target::Requester))
            .map(str::to_string),
    })
}
