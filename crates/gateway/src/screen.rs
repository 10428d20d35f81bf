//! The `screen` MCP tool: arranges every connected Control UI through the gateway.
//!
//! [`ScreenServer`] is an rmcp [`ServerHandler`] with one tool. It is parameterised by
//! - a [`Connector`] that opens a [`GatewayClient`] per call (the CLI's finds and proves the
//!   backend first; the credential is limited to `operator.write`);
//! - an optional default session (the agent's own): the target of session actions when the
//!   call names none, and the pane to split beside; sent only with actions that use a session;
//! - a [`ScreenGate`]: always on (`ax-code mcp screen`), or switched per turn (an agent in a
//!   session may arrange the screen only while the turn came from a Control UI). While off,
//!   the tool is not listed and a call is refused with a clear error.
//!
//! The actions are one enum, [`ScreenAction`]; the input and output schemas are derived.

use std::{future::Future, sync::Arc, time::Duration};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::common::{schema_for_output, schema_for_type},
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
        ToolAnnotations,
    },
    service::{NotificationContext, RequestContext},
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::{
    client::{ClientError, GatewayClient},
    frame::ErrorCode,
    ui_command::{UiCommandResponse, UiOutcome},
    ui_layout::UiLayout,
};

use crate::screen_args::is_session_id;
pub use crate::screen_args::{ScreenAction, ScreenInput, command_params, layout_params};
// `ScreenError` lives in `screen_error`, which both this module and `screen_args` build on,
// so `screen_args` needs nothing from here; this re-export keeps its path `screen::ScreenError`.
pub use crate::screen_error::ScreenError;

/// The MCP server name.
pub const SERVER_NAME: &str = "ax-code-screen";
/// The tool's name.
pub const TOOL_NAME: &str = "screen";
/// One call, connection included, takes at most this long.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

const INSTRUCTIONS: &str = "Arranges the AX Code Control UI (browser) for the person: read \
each UI's layout back (pane IDs, sessions, a revision), split, focus, close or navigate \
session panes (by sessionKey or paneId), show or hide the sidebar, the operator terminal and \
the browser panel, apply a whole layout (a preset or one the person saved) and point at \
things with short-lived labels. Every connected Control UI applies a command unless target \
\"requester\" or uiId picks one; the result says what each did and its new layout revision. \
Session IDs come from `ax-code session list`. It changes presentation only: it cannot read \
the screen, click, type, or approve anything.";

const DESCRIPTION: &str = "Change the layout of every connected AX Code Control UI. \
Actions: split_right / split_down (open the target session in a new pane beside or below \
the pane of the agent's own session, else the active pane), close_pane (close the pane \
showing the target session; the last pane stays), focus (activate the pane showing the \
target session), navigate (show the target session in the active pane), sidebar_show / \
sidebar_hide, terminal_show / terminal_hide and browser_show / browser_hide (the operator \
terminal and browser panels; dock \"bottom\" or \"right\" only when showing). sessionKey (a \
session ID, ses_…) is the target for split, close_pane, focus and navigate; it defaults to \
the current session; paneId (from layout) names the pane instead. layout (read only) answers \
each UI's uiId, revision, panes (paneId, sessionId, column, row, active, size), sidebar and \
panels. expectedRevision (from layout): a UI whose layout changed since refuses with its \
current revision. apply_layout: preset focus | review | pair | grid (sessions: the ones to \
show) or name (a layout the person saved); panes the person is using are left alone and \
listed in notApplied. annotate: up to four annotations {text, arrow?, one of paneId, \
sessionKey (its sidebar row) or panel}, gone after ttlSeconds (3-120, default 10) or the \
person's first click or key; annotations_clear removes them. target \"requester\" (the \
Control UI that started the current turn) or uiId sends to one UI; default: every UI. The \
result lists, per UI (connId), outcome applied, ignored (with a reason) or no_answer, and its \
revision. Fails with UNAVAILABLE when no (such) Control UI is connected.";

/// What a disabled tool answers.
const DISABLED: &str = "the screen tool is not enabled for this turn: only a turn started from \
a Control UI (a client that advertises ui-commands) may arrange the screen";

/// The error part of a failed call's result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenErrorBody {
    /// The gateway's error code, or the same vocabulary for a local cause.
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
}

/// The tool's result: the gateway's `ui.command` answer, or `ok: false` with an error.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenOutput {
    /// False when the call failed; `error` says why.
    pub ok: bool,
    /// Control UIs the command was sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered: Option<usize>,
    /// What each Control UI did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<Vec<UiOutcome>>,
    /// The layout action's answer: each targeted UI's layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uis: Option<Vec<UiLayout>>,
    /// Why the call failed, when `ok` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ScreenErrorBody>,
}

/// Opens a gateway connection for one call.
pub trait Connector: Send + Sync + 'static {
    /// A fresh, handshaken connection, or why there is none.
    fn connect(&self) -> impl Future<Output = Result<GatewayClient, ScreenError>> + Send;

    /// Brings a [`ScreenGate::Switch`] up to date before the tools are listed or called (the
    /// session-scoped server asks the gateway, so a turn that just began is seen at once).
    /// Nothing by default.
    fn refresh_gate(&self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
}

/// Whether the tool is offered.
#[derive(Debug, Clone)]
pub enum ScreenGate {
    /// Always listed and callable.
    Always,
    /// Listed and callable while the value is `true`; each change is announced to the MCP
    /// client with `notifications/tools/list_changed`.
    Switch(watch::Receiver<bool>),
}

impl ScreenGate {
    fn enabled(&self) -> bool {
        match self {
            ScreenGate::Always => true,
            ScreenGate::Switch(rx) => *rx.borrow(),
        }
    }
}

fn tool() -> Tool {
    Tool::new(TOOL_NAME, DESCRIPTION, schema_for_type::<ScreenInput>())
        .with_title("Arrange the Control UI")
        .with_raw_output_schema(schema_for_output::<ScreenOutput>())
        .with_annotations(
            ToolAnnotations::with_title("Arrange the Control UI")
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        )
}

fn success(res: UiCommandResponse) -> ScreenOutput {
    ScreenOutput {
        ok: res.ok,
        delivered: Some(res.delivered),
        outcomes: res.outcomes,
        uis: None,
        error: None,
    }
}

fn result_of(out: Result<ScreenOutput, ScreenError>) -> CallToolResult {
    let (out, failed) = match out {
        Ok(o) => (o, false),
        Err(e) => (
            ScreenOutput {
                ok: false,
                delivered: None,
                outcomes: None,
                uis: None,
                error: Some(ScreenErrorBody {
                    code: e.code,
                    message: e.message,
                }),
            },
            true,
        ),
    };
    let value = serde_json::to_value(&out).unwrap_or(Value::Null);
    if failed {
        CallToolResult::structured_error(value)
    } else {
        CallToolResult::structured(value)
    }
}

/// The `screen` MCP server.
pub struct ScreenServer<C> {
    connector: Arc<C>,
    default_session: Option<String>,
    gate: ScreenGate,
}

impl<C: Connector> ScreenServer<C> {
    /// A server that opens a connection per call through `connector`; `default_session` is the target when the agent names none.
    pub fn new(connector: C, default_session: Option<String>, gate: ScreenGate) -> Self {
        ScreenServer {
            connector: Arc::new(connector),
            default_session,
            gate,
        }
    }

    /// Checks the default session against the backend: a session of another project or one
    /// that no longer exists is refused here with a clear message, not by every later call.
    pub async fn check_default_session(&self) -> Result<(), ScreenError> {
        let Some(session) = &self.default_session else {
            return Ok(());
        };
        if !is_session_id(session) {
            return Err(ScreenError::invalid(format!(
                "{session:?} is not a session ID (ses_ followed by 26 letters or digits)"
            )));
        }
        let exists = tokio::time::timeout(CALL_TIMEOUT, async {
            let client = self.connector.connect().await?;
            let exists = client.session_exists(session).await;
            client.close().await;
            Ok::<bool, ScreenError>(exists?)
        })
        .await
        .map_err(|_| ScreenError::from(ClientError::Timeout))??;
        if exists {
            Ok(())
        } else {
            Err(ScreenError::invalid(format!(
                "session {session} is not a session of this backend's project (deleted, or of \
                 another project): pick one from `ax-code session list`"
            )))
        }
    }

    /// The tools to list: `screen` while the gate is open, none otherwise.
    pub fn tools(&self) -> Vec<Tool> {
        if self.gate.enabled() {
            vec![tool()]
        } else {
            Vec::new()
        }
    }

    /// One tool call with raw arguments.
    pub async fn call(&self, arguments: Option<JsonObject>) -> Result<ScreenOutput, ScreenError> {
        self.connector.refresh_gate().await;
        if !self.gate.enabled() {
            return Err(ScreenError::new(ErrorCode::Forbidden, DISABLED));
        }
        let input: ScreenInput =
            serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
                .map_err(|e| ScreenError::invalid(format!("invalid screen arguments: {e}")))?;
        if input.action == ScreenAction::Layout {
            let params = layout_params(&input, self.default_session.as_deref())?;
            return tokio::time::timeout(CALL_TIMEOUT, async {
                let client = self.connector.connect().await?;
                let uis = client.ui_layout(&params).await;
                client.close().await;
                Ok(ScreenOutput {
                    ok: true,
                    delivered: None,
                    outcomes: None,
                    uis: Some(uis?),
                    error: None,
                })
            })
            .await
            .map_err(|_| ScreenError::from(ClientError::Timeout))?;
        }
        let params = command_params(&input, self.default_session.as_deref())?;
        tokio::time::timeout(CALL_TIMEOUT, async {
            let client = self.connector.connect().await?;
            let res = client.ui_command(&params).await;
            client.close().await;
            Ok(success(res?))
        })
        .await
        .map_err(|_| ScreenError::from(ClientError::Timeout))?
    }
}

impl<C: Connector> ServerHandler for ScreenServer<C> {
    fn get_info(&self) -> ServerConfig {
        let tools = ServerCapabilities::builder().enable_tools();
        let capabilities = match self.gate {
            ScreenGate::Always => tools.build(),
            ScreenGate::Switch(_) => tools.enable_tool_list_changed().build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let ScreenGate::Switch(rx) = &self.gate else {
            return;
        };
        let mut rx = rx.clone();
        let peer = context.peer;
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.connector.refresh_gate().await;
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name.as_ref() != TOOL_NAME {
            let shown: String = request.name.chars().take(64).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {shown}"),
                None,
            ));
        }
        Ok(result_of(self.call(request.arguments).await).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui_command::{Dock, PanelKind, Preset, SplitDirection, UiCommand, UiCommandParams};
    use serde_json::json;

    const S: &str = "ses_0123456789abABCDEFGHIJKLMN";

    fn params(v: Value, default: Option<&str>) -> Result<UiCommandParams, String> {
        let i: ScreenInput = serde_json::from_value(v).map_err(|e| e.to_string())?;
        command_params(&i, default).map_err(|e| e.message)
    }

    #[test]
    fn every_action_maps_to_its_command() {
        let p = params(json!({"action": "split_down", "sessionKey": S}), None).unwrap();
        assert_eq!(
            p.command,
            UiCommand::Split {
                direction: SplitDirection::Down,
                session_key: Some(S.into()),
                pane_id: None,
            }
        );
        let p = params(json!({"action": "terminal_show", "dock": "right"}), None).unwrap();
        assert_eq!(
            p.command,
            UiCommand::Panel {
                panel: PanelKind::Terminal,
                open: true,
                dock: Some(Dock::Right)
            }
        );
        for a in ScreenAction::ALL {
            let needs = matches!(
                a,
                ScreenAction::Layout | ScreenAction::ApplyLayout | ScreenAction::Annotate
            );
            assert_eq!(params(json!({"action": a}), None).is_ok(), !needs, "{a:?}");
        }
        let p = params(
            json!({"action": "focus", "paneId": "p2", "expectedRevision": 7, "uiId": "c1"}),
            None,
        )
        .unwrap();
        assert_eq!(p.command.pane_id(), Some("p2"));
        assert_eq!(
            (p.expected_revision, p.ui_id.as_deref()),
            (Some(7), Some("c1"))
        );
        let p = params(
            json!({"action": "annotate", "annotations": [{"text": "here", "panel": "terminal"}]}),
            None,
        )
        .unwrap();
        assert!(matches!(
            p.command,
            UiCommand::Annotate {
                ttl_seconds: 10,
                ..
            }
        ));
        let p = params(
            json!({"action": "apply_layout", "preset": "pair", "sessions": [S, S]}),
            None,
        )
        .unwrap();
        assert!(matches!(
            p.command,
            UiCommand::ApplyLayout {
                preset: Some(Preset::Pair),
                ..
            }
        ));
    }

    #[test]
    fn the_layout_read_takes_only_a_target() {
        let input = |v| serde_json::from_value::<ScreenInput>(v).unwrap();
        let p = layout_params(
            &input(json!({"action": "layout", "target": "requester"})),
            Some(S),
        )
        .unwrap();
        assert_eq!(p.session_key.as_deref(), Some(S));
        assert!(layout_params(&input(json!({"action": "layout", "paneId": "p1"})), None).is_err());
        assert!(
            layout_params(
                &input(json!({"action": "layout", "target": "all", "uiId": "x"})),
                None
            )
            .is_err()
        );
    }

    #[test]
    fn the_default_session_goes_only_with_session_actions() {
        let p = params(json!({"action": "sidebar_hide"}), Some(S)).unwrap();
        assert_eq!(p.session_key, None);
        let p = params(json!({"action": "terminal_show"}), Some(S)).unwrap();
        assert_eq!(p.session_key, None);
        let p = params(json!({"action": "focus"}), Some(S)).unwrap();
        assert_eq!(p.session_key.as_deref(), Some(S));
        assert_eq!(p.wait, Some(true));
    }

    #[test]
    fn bad_inputs_are_refused() {
        for bad in [
            json!({"action": "terminal_hide", "dock": "right"}),
            json!({"action": "focus", "dock": "right"}),
            json!({"action": "sidebar_show", "sessionKey": S}),
            json!({"action": "focus", "sessionKey": "nope"}),
            json!({"action": "zoom"}),
            json!({"action": "focus", "extra": 1}),
            json!({"action": "browser_show", "dock": "left"}),
            json!({"action": "sidebar_show", "paneId": "p1"}),
            json!({"action": "layout", "expectedRevision": 1}),
            json!({"action": "focus", "preset": "grid"}),
            json!({"action": "apply_layout", "preset": "grid", "name": "x"}),
            json!({"action": "apply_layout", "preset": "grid", "sessions": ["nope"]}),
            json!({"action": "annotate", "annotations": [], "ttlSeconds": 5}),
            json!({"action": "annotate", "annotations": [{"text": "x", "paneId": "p1"}], "ttlSeconds": 500}),
            json!({"action": "focus", "target": "requester", "uiId": "c"}),
            json!({"action": "focus", "target": "mine"}),
        ] {
            assert!(params(bad.clone(), None).is_err(), "{bad}");
        }
    }

    /// A connector for tests that never reaches a gateway.
    struct NoGateway;
    impl Connector for NoGateway {
        async fn connect(&self) -> Result<GatewayClient, ScreenError> {
            Err(ScreenError::unavailable("no gateway in this test"))
        }
    }

    #[tokio::test]
    async fn a_closed_gate_hides_the_tool_and_refuses_calls_before_connecting() {
        let (open, gate) = watch::channel(false);
        let server = ScreenServer::new(NoGateway, Some(S.into()), ScreenGate::Switch(gate));
        let args = || json!({"action": "sidebar_show"}).as_object().cloned();
        assert!(server.tools().is_empty());
        let err = server.call(args()).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        assert!(err.message.contains("not enabled"), "{err}");

        open.send(true).unwrap();
        assert_eq!(server.tools().len(), 1);
        // Now the call goes on to the connector.
        let err = server.call(args()).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::Unavailable);
        assert_eq!(err.message, "no gateway in this test");
        // Bad arguments are refused before connecting, also with the gate open.
        let err = server
            .call(json!({"action": "zoom"}).as_object().cloned())
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn the_schema_is_derived_closed_and_lists_the_actions_once() {
        let schema = Value::Object(tool().input_schema.as_ref().clone());
        assert_eq!(schema["additionalProperties"], false, "{schema}");
        let names: Vec<String> = ScreenAction::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(schema["properties"]["action"]["enum"], json!(names));
        assert_eq!(schema["required"], json!(["action"]));
        let out = Value::Object(tool().output_schema.unwrap().as_ref().clone());
        assert_eq!(out["additionalProperties"], false, "{out}");
        assert_eq!(out["required"], json!(["ok"]));
    }
}
