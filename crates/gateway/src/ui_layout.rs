//! `ui.layout`: what each Control UI reports of its layout, and how a command is targeted.
//!
//! A Control UI sends `ui.layout.report` after every change of its layout (and once after it
//! connects); the gateway keeps the latest report per connection and answers `ui.layout`
//! (`operator.read`) from those. A report holds the arrangement only (pane IDs, session IDs,
//! positions, relative sizes, the sidebar and panels): nothing the page shows
//! (docs/gateway.md §3).

use serde::{Deserialize, Serialize};

/// Panes a report may list (the Control UI holds at most 16).
pub const MAX_PANES: usize = 16;
/// Longest pane ID.
pub const MAX_PANE_ID: usize = 32;
/// Longest session key accepted in a report (session IDs are 30 bytes).
const MAX_SESSION: usize = 128;

/// Params of `ui.layout.report` (from a Control UI) and the body of one UI's layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayoutReport {
    /// Grows by one with every change of this UI's layout (by the person or an agent).
    pub revision: u64,
    /// The panes in reading order (columns left to right, each top to bottom).
    pub panes: Vec<PaneReport>,
    /// The session sidebar.
    pub sidebar: SidebarReport,
    /// The operator terminal panel.
    pub terminal: PanelReport,
    /// The browser panel.
    pub browser: PanelReport,
}

/// One pane of a layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaneReport {
    /// The pane's ID in this UI (what `paneId` names).
    pub pane_id: String,
    /// The session it shows; none for an empty pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Column index, from the left, from 0.
    pub column: u32,
    /// Row index within the column, from the top, from 0.
    pub row: u32,
    /// Whether it is the active pane.
    pub active: bool,
    /// Its share of the pane area, from 0 to 1.
    pub size: f64,
}

/// The sidebar of a layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SidebarReport {
    /// Whether it is shown.
    pub shown: bool,
}

/// A panel of a layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelReport {
    /// Whether it is shown.
    pub shown: bool,
    /// Where it docks (also while hidden: where it will show).
    pub dock: Dock,
}

// `Dock` lives here, with the layout that reports it; `ui_command` (whose `panel` command
// takes one) imports it from here, so imports go one way, command to layout. (A plain
// comment: the doc comment below is the schema's description.)
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

impl LayoutReport {
    /// What serde cannot check: bounded counts and sizes, unique pane IDs, one active pane.
    pub fn validate(&self) -> Result<(), String> {
        if self.panes.is_empty() || self.panes.len() > MAX_PANES {
            return Err(format!("a layout has 1 to {MAX_PANES} panes"));
        }
        let mut ids = std::collections::HashSet::new();
        for p in &self.panes {
            if p.pane_id.is_empty() || p.pane_id.len() > MAX_PANE_ID || !ids.insert(&p.pane_id) {
                return Err("pane IDs are unique, 1 to 32 bytes".into());
            }
            if p.session_id
                .as_ref()
                .is_some_and(|s| s.is_empty() || s.len() > MAX_SESSION)
            {
                return Err("sessionId must be a session ID".into());
            }
            if !(p.size.is_finite() && (0.0..=1.0).contains(&p.size)) {
                return Err("size is a share from 0 to 1".into());
            }
        }
        if self.panes.iter().filter(|p| p.active).count() != 1 {
            return Err("exactly one pane is active".into());
        }
        Ok(())
    }
}

/// One Control UI's layout in a `ui.layout` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UiLayout {
    /// The UI's connection (what `uiId` names; the `connId` of its acknowledgements).
    pub ui_id: String,
    /// Its layout.
    #[serde(flatten)]
    pub layout: LayoutReport,
}

/// Which Control UIs a command or a `ui.layout` request is for.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    // Every connected Control UI (v1's broadcast, the default).
    All,
    // The Control UI that started the current turn of the session.
    Requester,
}

/// Params of `ui.layout`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiLayoutParams {
    /// Default: every UI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// One UI (a `uiId` of an earlier answer); not with `target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui_id: Option<String>,
    /// The session whose requester `target: "requester"` means (a session's own screen
    /// credential needs none: it is its session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
}

/// The `ui.layout` response payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiLayoutResponse {
    /// Each targeted UI that has reported its layout.
    pub uis: Vec<UiLayout>,
}

/// Checks a `target` / `uiId` pair.
pub fn check_target(target: Option<Target>, ui_id: Option<&str>) -> Result<(), String> {
    if let Some(id) = ui_id {
        if id.is_empty() || id.len() > crate::frame::MAX_ID_LEN {
            return Err("uiId must be a uiId from ui.layout".into());
        }
        if target.is_some() {
            return Err("give target or uiId, not both".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(v: serde_json::Value) -> Result<LayoutReport, String> {
        let r: LayoutReport = serde_json::from_value(v).map_err(|e| e.to_string())?;
        r.validate().map(|()| r)
    }

    fn pane(id: &str, active: bool) -> serde_json::Value {
        json!({"paneId": id, "column": 0, "row": 0, "active": active, "size": 0.5})
    }

    fn with(panes: Vec<serde_json::Value>) -> serde_json::Value {
        json!({"revision": 3, "panes": panes, "sidebar": {"shown": true},
               "terminal": {"shown": false, "dock": "bottom"},
               "browser": {"shown": true, "dock": "right"}})
    }

    #[test]
    fn reports_are_closed_and_checked() {
        assert!(report(with(vec![pane("p1", true), pane("p2", false)])).is_ok());
        assert!(
            report(with(vec![pane("p1", false)])).is_err(),
            "no active pane"
        );
        assert!(
            report(with(vec![pane("p1", true), pane("p1", false)])).is_err(),
            "dup IDs"
        );
        assert!(report(with(vec![])).is_err());
        let mut v = with(vec![pane("p1", true)]);
        v["title"] = json!("page content");
        assert!(report(v).is_err(), "nothing but the arrangement");
        let mut v = with(vec![pane("p1", true)]);
        v["panes"][0]["size"] = json!(2.0);
        assert!(report(v).is_err());
    }

    #[test]
    fn a_layout_answer_is_flat() {
        let r = report(with(vec![pane("p1", true)])).unwrap();
        let v = serde_json::to_value(UiLayout {
            ui_id: "conn_1".into(),
            layout: r,
        })
        .unwrap();
        assert_eq!(v["uiId"], "conn_1");
        assert_eq!(v["revision"], 3);
        assert_eq!(v["panes"][0]["paneId"], "p1");
        let back: UiLayout = serde_json::from_value(v).unwrap();
        assert_eq!(back.ui_id, "conn_1");
    }

    #[test]
    fn target_and_ui_id_exclude_each_other() {
        assert!(check_target(Some(Target::Requester), None).is_ok());
        assert!(check_target(None, Some("conn_1")).is_ok());
        assert!(check_target(Some(Target::All), Some("conn_1")).is_err());
        assert!(check_target(None, Some("")).is_err());
    }
}
