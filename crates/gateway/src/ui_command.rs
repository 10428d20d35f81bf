//! `ui.command`: typed layout and navigation commands for the Control UIs.

use serde::{Deserialize, Serialize};

use crate::{
    SessionDirectory,
    ui_layout::{Target, check_target},
};

/// `Dock` lives in `ui_layout`, which reports where each panel docks; a command names it
/// through this re-export, so `ui_layout` needs nothing from this module.
pub use crate::ui_layout::Dock;

/// Longest session key accepted before asking the directory (session IDs are 30 bytes).
const MAX_SESSION_KEY: usize = 128;
/// Longest `reason` a UI may give in `ui.command.result`.
pub const MAX_REASON: usize = 512;

/// Params of `ui.command`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiCommandParams {
    /// What to do.
    pub command: UiCommand,
    /// The agent's own (source) session: which pane to split beside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// Wait (at most 2 s) for each UI's `ui.command.result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// The layout revision the agent saw; a UI whose layout changed since refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<u64>,
    /// Which UIs: every one (the default) or the requester of the session's turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// One UI, by the `uiId` of `ui.layout`; not with `target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui_id: Option<String>,
}

/// One command. `sessionKey` absent means the current session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum UiCommand {
    /// Split beside the session's pane.
    Split {
        /// Where the new pane goes.
        direction: SplitDirection,
        /// The session whose pane is split.
        #[serde(
            rename = "sessionKey",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        session_key: Option<String>,
        /// The pane (a `paneId` of `ui.layout`); it wins over the session's pane.
        #[serde(rename = "paneId", default, skip_serializing_if = "Option::is_none")]
        pane_id: Option<String>,
    },
    /// Close the session's pane.
    ClosePane {
        /// The session whose pane closes.
        #[serde(
            rename = "sessionKey",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        session_key: Option<String>,
        /// The pane (a `paneId` of `ui.layout`); it wins over the session's pane.
        #[serde(rename = "paneId", default, skip_serializing_if = "Option::is_none")]
        pane_id: Option<String>,
    },
    /// Focus the session's pane.
    Focus {
        /// The session to focus.
        #[serde(
            rename = "sessionKey",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        session_key: Option<String>,
        /// The pane (a `paneId` of `ui.layout`); it wins over the session's pane.
        #[serde(rename = "paneId", default, skip_serializing_if = "Option::is_none")]
        pane_id: Option<String>,
    },
    /// Show the session in the focused pane.
    Navigate {
        /// The session to show.
        #[serde(
            rename = "sessionKey",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        session_key: Option<String>,
        /// The pane (a `paneId` of `ui.layout`); it wins over the session's pane.
        #[serde(rename = "paneId", default, skip_serializing_if = "Option::is_none")]
        pane_id: Option<String>,
    },
    /// Show or hide the sidebar.
    Sidebar {
        /// Shown when true.
        visible: bool,
    },
    /// Open or close a panel.
    Panel {
        /// Which panel.
        panel: PanelKind,
        /// Opened when true.
        open: bool,
        /// Where to dock it; only when opening.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dock: Option<Dock>,
    },
    /// A whole arrangement in one act: a built-in preset or a layout the person saved.
    ApplyLayout {
        /// A built-in preset; exactly one of `preset` and `name`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preset: Option<Preset>,
        /// A layout the person saved by this name in the Control UI.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The sessions the preset shows, in order (default: those the UI shows).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sessions: Option<Vec<String>>,
    },
    /// Short-lived labels or arrows pointing at parts of the UI.
    Annotate {
        /// One to [`MAX_ANNOTATIONS`].
        annotations: Vec<Annotation>,
        /// Seconds until they go ([`MIN_TTL`] to [`MAX_TTL`]).
        #[serde(rename = "ttlSeconds")]
        ttl_seconds: u32,
    },
    /// Remove every annotation.
    AnnotationsClear,
}

/// Annotations one command may place.
pub const MAX_ANNOTATIONS: usize = 4;
/// Longest annotation text, in characters.
pub const MAX_ANNOTATION_TEXT: usize = 60;
/// Shortest and longest life of an annotation, in seconds.
pub const MIN_TTL: u32 = 3;
/// See [`MIN_TTL`].
pub const MAX_TTL: u32 = 120;
/// Longest saved layout name, in characters.
pub const MAX_LAYOUT_NAME: usize = 40;
/// Sessions a preset may show (`grid`: four).
pub const MAX_PRESET_SESSIONS: usize = 4;

/// A built-in arrangement.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    // One pane, no sidebar.
    Focus,
    // The session's pane and the terminal docked right.
    Review,
    // Two sessions side by side.
    Pair,
    // Up to four sessions, two by two.
    Grid,
}

/// One label or arrow, on exactly one of a pane, a panel or a session row of the sidebar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Annotation {
    /// What it says (1 to 60 characters, one line).
    pub text: String,
    /// Drawn as an arrow pointing at the part rather than a label.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub arrow: bool,
    /// On this pane (a `paneId` of `ui.layout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    /// On this session's row of the sidebar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^ses_[0-9A-Za-z]{26}$"))]
    pub session_key: Option<String>,
    /// On this panel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel: Option<PanelKind>,
}

impl Annotation {
    fn check(&self) -> Result<(), String> {
        let n = self.text.chars().count();
        if n == 0 || n > MAX_ANNOTATION_TEXT || self.text.chars().any(char::is_control) {
            return Err(format!(
                "an annotation's text is one line of 1 to {MAX_ANNOTATION_TEXT} characters"
            ));
        }
        let on = [
            self.pane_id.is_some(),
            self.session_key.is_some(),
            self.panel.is_some(),
        ];
        if on.iter().filter(|b| **b).count() != 1 {
            return Err("an annotation is on exactly one of paneId, sessionKey or panel".into());
        }
        check_pane_id(self.pane_id.as_deref())
    }
}

/// A pane ID: 1 to 32 letters, digits, `-` or `_`.
pub fn check_pane_id(id: Option<&str>) -> Result<(), String> {
    match id {
        Some(id)
            if id.is_empty()
                || id.len() > crate::ui_layout::MAX_PANE_ID
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Err("paneId must be a paneId from the layout".into())
        }
        _ => Ok(()),
    }
}

impl UiCommand {
    /// The target session, if the command names one.
    pub fn session_key(&self) -> Option<&str> {
        match self {
            UiCommand::Split { session_key, .. }
            | UiCommand::ClosePane { session_key, .. }
            | UiCommand::Focus { session_key, .. }
            | UiCommand::Navigate { session_key, .. } => session_key.as_deref(),
            _ => None,
        }
    }

    /// The pane the command names, if any.
    pub fn pane_id(&self) -> Option<&str> {
        match self {
            UiCommand::Split { pane_id, .. }
            | UiCommand::ClosePane { pane_id, .. }
            | UiCommand::Focus { pane_id, .. }
            | UiCommand::Navigate { pane_id, .. } => pane_id.as_deref(),
            _ => None,
        }
    }

    /// Every session key the command carries besides `sessionKey`.
    fn other_sessions(&self) -> Vec<&str> {
        match self {
            UiCommand::ApplyLayout {
                sessions: Some(s), ..
            } => s.iter().map(String::as_str).collect(),
            UiCommand::Annotate { annotations, .. } => annotations
                .iter()
                .filter_map(|a| a.session_key.as_deref())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Checks what serde cannot say: `dock` only when opening, and the v2 commands.
    fn check_shape(&self) -> Result<(), String> {
        if let UiCommand::Panel {
            open: false,
            dock: Some(_),
            ..
        } = self
        {
            return Err("dock is allowed only when opening a panel".into());
        }
        check_pane_id(self.pane_id())?;
        match self {
            UiCommand::ApplyLayout {
                preset,
                name,
                sessions,
            } => {
                if preset.is_some() == name.is_some() {
                    return Err("apply-layout takes exactly one of preset and name".into());
                }
                if let Some(n) = name {
                    let len = n.chars().count();
                    if len == 0 || len > MAX_LAYOUT_NAME || n.chars().any(char::is_control) {
                        return Err(format!(
                            "a layout name is 1 to {MAX_LAYOUT_NAME} characters"
                        ));
                    }
                    if sessions.is_some() {
                        return Err("sessions go only with a preset".into());
                    }
                }
                if sessions
                    .as_ref()
                    .is_some_and(|s| s.is_empty() || s.len() > MAX_PRESET_SESSIONS)
                {
                    return Err(format!(
                        "sessions lists 1 to {MAX_PRESET_SESSIONS} sessions"
                    ));
                }
                Ok(())
            }
            UiCommand::Annotate {
                annotations,
                ttl_seconds,
            } => {
                if annotations.is_empty() || annotations.len() > MAX_ANNOTATIONS {
                    return Err(format!(
                        "annotate places 1 to {MAX_ANNOTATIONS} annotations"
                    ));
                }
                if !(MIN_TTL..=MAX_TTL).contains(ttl_seconds) {
                    return Err(format!("ttlSeconds is from {MIN_TTL} to {MAX_TTL}"));
                }
                annotations.iter().try_for_each(Annotation::check)
            }
            _ => Ok(()),
        }
    }
}

/// Where a split puts the new pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitDirection {
    /// Beside, to the right.
    Right,
    /// Below.
    Down,
}

/// A panel of the Control UI.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PanelKind {
    // The operator terminal.
    Terminal,
    // The embedded browser.
    Browser,
}

impl UiCommandParams {
    /// Checks what the schema cannot: `dock` only when opening, and that sessions exist.
    pub fn validate(&self, sessions: &dyn SessionDirectory) -> Result<(), String> {
        self.command.check_shape()?;
        check_target(self.target, self.ui_id.as_deref())?;
        for key in [self.session_key.as_deref(), self.command.session_key()]
            .into_iter()
            .flatten()
            .chain(self.command.other_sessions())
        {
            if key.is_empty() || key.len() > MAX_SESSION_KEY {
                return Err("sessionKey must be a session ID".into());
            }
            if !sessions.contains(key) {
                return Err(format!("unknown session: {key}"));
            }
        }
        Ok(())
    }
}

/// The `ui.command` event payload: the params (without `wait`) plus a `commandId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiCommandEvent {
    /// The command.
    pub command: UiCommand,
    /// The agent's own (source) session, as in the params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// Names the command; the UI's `ui.command.result` repeats it.
    pub command_id: String,
    /// As in the params: the UI refuses the command if its layout revision differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<u64>,
}

impl UiCommandEvent {
    /// What can be checked of a command another gateway accepted, without its sessions: a
    /// `commandId` of 1 to 128 bytes and the command's shape (as in
    /// [`UiCommandParams::validate`]).
    pub(crate) fn check_relayed(&self) -> Result<(), String> {
        if self.command_id.is_empty() || self.command_id.len() > crate::frame::MAX_ID_LEN {
            return Err("commandId is 1 to 128 bytes".into());
        }
        self.command.check_shape()
    }
}

/// A part of a command a UI could not apply, and why (said per pane where it is a pane).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotApplied {
    /// The pane concerned, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    /// Why (at most [`MAX_REASON`] bytes).
    pub reason: String,
}

/// Parts a UI may list as not applied.
pub const MAX_NOT_APPLIED: usize = 16;

/// What a UI did with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckOutcome {
    /// The UI did it.
    Applied,
    /// The UI did not (the `reason` says why).
    Ignored,
}

/// Params of `ui.command.result`, sent by a UI for each command it handled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiCommandResultParams {
    /// The event's `commandId`.
    pub command_id: String,
    /// What the UI did.
    pub outcome: AckOutcome,
    /// Why it ignored the command (at most [`MAX_REASON`] bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its layout revision after the command (the current one when it refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// What it could not apply of an applied command (at most [`MAX_NOT_APPLIED`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<Vec<NotApplied>>,
}

impl UiCommandResultParams {
    /// Bounded sizes.
    pub fn is_bounded(&self) -> bool {
        self.command_id.len() <= crate::frame::MAX_ID_LEN
            && self.reason.as_ref().is_none_or(|r| r.len() <= MAX_REASON)
            && self.not_applied.as_ref().is_none_or(|n| {
                n.len() <= MAX_NOT_APPLIED
                    && n.iter().all(|x| {
                        x.reason.len() <= MAX_REASON && check_pane_id(x.pane_id.as_deref()).is_ok()
                    })
            })
    }
}

/// One UI's outcome in a waited `ui.command` response.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    // The UI did it.
    Applied,
    // The UI did not.
    Ignored,
    // The UI did not answer within the wait.
    NoAnswer,
}

impl From<AckOutcome> for Outcome {
    fn from(a: AckOutcome) -> Self {
        match a {
            AckOutcome::Applied => Outcome::Applied,
            AckOutcome::Ignored => Outcome::Ignored,
        }
    }
}

/// One Control UI's answer to a command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiOutcome {
    /// The UI's connection (from its `hello-ok`).
    pub conn_id: String,
    /// What it did.
    pub outcome: Outcome,
    /// Why it ignored the command, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The UI's layout revision after the command (the current one when it refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// What it could not apply of an applied command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<Vec<NotApplied>>,
}

/// The `ui.command` response payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiCommandResponse {
    /// Always `true` (a failure is an error response).
    pub ok: bool,
    /// How many Control UIs the command was sent to.
    pub delivered: usize,
    /// Each UI's answer, when the request asked to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<Vec<UiOutcome>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Known;
    impl SessionDirectory for Known {
        fn contains(&self, id: &str) -> bool {
            id == "ses_known"
        }
    }

    fn parse(v: serde_json::Value) -> Result<UiCommandParams, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn commands_are_closed() {
        assert!(parse(json!({"command": {"kind": "split", "direction": "right"}})).is_ok());
        assert!(parse(json!({"command": {"kind": "split", "direction": "left"}})).is_err());
        assert!(parse(json!({"command": {"kind": "focus", "extra": 1}})).is_err());
        assert!(parse(json!({"command": {"kind": "sidebar"}})).is_err());
        assert!(parse(json!({"command": {"kind": "zoom"}})).is_err());
        assert!(parse(json!({"command": {"kind": "focus"}, "other": 1})).is_err());
        let p = parse(json!({"command": {"kind": "close-pane", "sessionKey": "ses_known"}}));
        assert_eq!(p.unwrap().command.session_key(), Some("ses_known"));
    }

    #[test]
    fn dock_only_when_opening() {
        let open = parse(
            json!({"command": {"kind": "panel", "panel": "terminal", "open": true, "dock": "right"}}),
        );
        assert!(open.unwrap().validate(&Known).is_ok());
        let close = parse(
            json!({"command": {"kind": "panel", "panel": "browser", "open": false, "dock": "right"}}),
        );
        assert!(close.unwrap().validate(&Known).is_err());
    }

    #[test]
    fn unknown_sessions_are_refused() {
        let p = parse(json!({"command": {"kind": "focus", "sessionKey": "ses_other"}})).unwrap();
        assert!(p.validate(&Known).unwrap_err().contains("unknown session"));
        let p = parse(json!({"command": {"kind": "focus"}, "sessionKey": "ses_nope"})).unwrap();
        assert!(p.validate(&Known).is_err());
        let p = parse(json!({"command": {"kind": "focus"}, "sessionKey": "ses_known"})).unwrap();
        assert!(p.validate(&Known).is_ok());
    }

    #[test]
    fn v2_commands_are_checked() {
        let ok = |v| parse(v).unwrap().validate(&Known);
        assert!(
            ok(json!({"command": {"kind": "focus", "paneId": "p3"}, "expectedRevision": 4}))
                .is_ok()
        );
        assert!(ok(json!({"command": {"kind": "focus", "paneId": "p 3"}})).is_err());
        assert!(ok(json!({"command": {"kind": "apply-layout", "preset": "grid"}})).is_ok());
        assert!(ok(json!({"command": {"kind": "apply-layout"}})).is_err());
        assert!(
            ok(json!({"command": {"kind": "apply-layout", "preset": "pair", "name": "x"}}))
                .is_err()
        );
        assert!(ok(json!({"command": {"kind": "apply-layout", "preset": "pair", "sessions": ["ses_other"]}})).is_err());
        assert!(ok(json!({"command": {"kind": "apply-layout", "name": "mine"}})).is_ok());
        assert!(parse(json!({"command": {"kind": "apply-layout", "preset": "tiles"}})).is_err());
        let note = |t: u32, n: usize| {
            json!({"command": {"kind": "annotate", "ttlSeconds": t,
            "annotations": vec![json!({"text": "here", "paneId": "p1"}); n]}})
        };
        assert!(ok(note(3, 4)).is_ok());
        assert!(ok(note(2, 1)).is_err());
        assert!(ok(note(121, 1)).is_err());
        assert!(ok(note(10, 5)).is_err());
        assert!(
            ok(json!({"command": {"kind": "annotate", "ttlSeconds": 5,
            "annotations": [{"text": "x", "paneId": "p1", "panel": "terminal"}]}}))
            .is_err()
        );
        assert!(
            ok(json!({"command": {"kind": "annotate", "ttlSeconds": 5,
            "annotations": [{"text": "x", "sessionKey": "ses_other"}]}}))
            .is_err()
        );
        assert!(ok(json!({"command": {"kind": "annotations-clear"}})).is_ok());
        assert!(ok(json!({"command": {"kind": "sidebar", "visible": true}, "target": "requester", "uiId": "c"})).is_err());
    }
}
