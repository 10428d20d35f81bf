//! `ui.command`: typed layout and navigation commands for the Control UIs.

use serde::{Deserialize, Serialize};

use crate::SessionDirectory;

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
}

impl UiCommand {
    /// The target session, if the command names one.
    pub fn session_key(&self) -> Option<&str> {
        match self {
            UiCommand::Split { session_key, .. }
            | UiCommand::ClosePane { session_key }
            | UiCommand::Focus { session_key }
            | UiCommand::Navigate { session_key } => session_key.as_deref(),
            UiCommand::Sidebar { .. } | UiCommand::Panel { .. } => None,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PanelKind {
    /// The operator terminal.
    Terminal,
    /// The embedded browser.
    Browser,
}

/// Where a panel docks.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dock {
    // Along the bottom.
    Bottom,
    // Along the right side.
    Right,
}

impl UiCommandParams {
    /// Checks what the schema cannot: `dock` only when opening, and that sessions exist.
    pub fn validate(&self, sessions: &dyn SessionDirectory) -> Result<(), String> {
        if let UiCommand::Panel {
            open: false,
            dock: Some(_),
            ..
        } = self.command
        {
            return Err("dock is allowed only when opening a panel".into());
        }
        for key in [self.session_key.as_deref(), self.command.session_key()]
            .into_iter()
            .flatten()
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
}

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
}
