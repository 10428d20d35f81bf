//! The `connect` request and the `hello-ok` answer.

use ax_core::Secret;
use serde::{Deserialize, Serialize};

use crate::scope::Scope;

/// Capability a Control UI advertises to receive `ui.command` events.
pub const CAP_UI_COMMANDS: &str = "ui-commands";

const MAX_CAPS: usize = 16;
const MAX_SHORT: usize = 128;

/// Params of the first request, `connect`. Its `Debug` never shows the token (a [`Secret`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectParams {
    /// The lowest protocol version the client speaks.
    pub min_protocol: u32,
    /// The highest protocol version the client speaks; the range must include [`PROTOCOL`](crate::PROTOCOL).
    pub max_protocol: u32,
    /// Who is connecting.
    pub client: ClientInfo,
    /// Capabilities the client advertises, e.g. `ui-commands`.
    #[serde(default)]
    pub caps: Vec<String>,
    /// Always `operator`.
    pub role: Role,
    /// The scopes asked for; the grant is these ∩ what the credential allows.
    pub scopes: Vec<Scope>,
    /// The credential.
    pub auth: ConnectAuth,
}

impl ConnectParams {
    /// Size bounds the schema cannot express.
    pub fn check_bounds(&self) -> Result<(), String> {
        let c = &self.client;
        for (name, value) in [
            ("client.id", &c.id),
            ("client.version", &c.version),
            ("client.platform", &c.platform),
        ] {
            if value.len() > MAX_SHORT {
                return Err(format!("{name} is longer than {MAX_SHORT} bytes"));
            }
        }
        if self.caps.len() > MAX_CAPS || self.caps.iter().any(|c| c.len() > MAX_SHORT) {
            return Err(format!(
                "caps: at most {MAX_CAPS} entries of at most {MAX_SHORT} bytes"
            ));
        }
        if self.auth.token.expose().len() > 1024 {
            return Err("auth.token is too long".into());
        }
        Ok(())
    }
}

/// Who is connecting.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientInfo {
    /// The client's name for itself (logs, outcomes).
    pub id: String,
    /// The client's version (logs).
    pub version: String,
    /// The client's OS (logs).
    pub platform: String,
    /// What kind of client it is.
    pub mode: ClientMode,
}

/// The kind of client; only `ui` clients receive `ui.command` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientMode {
    /// A Control UI page: receives `ui.command` events.
    Ui,
    /// A command-line client.
    Cli,
    /// An agent's tool, e.g. `ax-code mcp screen`.
    Agent,
    /// A test client.
    Test,
}

/// The literal `"operator"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The one role: a person's tools acting for the person.
    Operator,
}

/// `auth {token}`. The frame carries the token's text; its `Debug` never shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectAuth {
    /// The backend credential or a limited one; compared in constant time.
    pub token: Secret,
}

/// Payload of the successful `connect` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloOk {
    /// The protocol version the connection speaks.
    pub protocol: u32,
    /// Who answers.
    pub server: ServerInfo,
    /// What the connection may call and will receive.
    pub features: Features,
    /// What was granted.
    pub auth: HelloAuth,
    /// Limits the client must keep to.
    pub policy: Policy,
}

/// The gateway that answered the handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerInfo {
    /// The backend's version.
    pub version: String,
    /// Names this connection (e.g. in `ui.command` outcomes).
    pub conn_id: String,
}

/// What this gateway offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Features {
    /// Method names the gateway serves.
    pub methods: Vec<String>,
    /// Event names the gateway may send.
    pub events: Vec<String>,
}

/// The role and the scopes actually granted (asked ∩ allowed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloAuth {
    /// Always `operator`.
    pub role: Role,
    /// The scopes granted.
    pub scopes: Vec<Scope>,
}

/// Limits of the connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Largest frame accepted after the handshake, in bytes.
    pub max_payload: usize,
    /// How often the gateway sends `tick`; a client that hears nothing for longer can assume the connection is dead.
    pub tick_interval_ms: u64,
}

/// Params of `session.check` (closed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCheckParams {
    /// The session ID to look up.
    pub session_key: String,
}

impl SessionCheckParams {
    /// Session IDs are short; a longer key is not asked of the directory at all.
    pub fn is_well_formed(&self) -> bool {
        !self.session_key.is_empty() && self.session_key.len() <= MAX_SHORT
    }
}

/// The `session.check` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCheckResponse {
    /// Whether the session exists in the served project.
    pub exists: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> serde_json::Value {
        json!({
            "minProtocol": 1, "maxProtocol": 1,
            "client": {"id": "t", "version": "1", "platform": "linux", "mode": "ui"},
            "caps": ["ui-commands"], "role": "operator",
            "scopes": ["operator.read"], "auth": {"token": "secret-value"}
        })
    }

    #[test]
    fn connect_params_are_closed() {
        assert!(serde_json::from_value::<ConnectParams>(sample()).is_ok());
        let mut extra = sample();
        extra["client"]["extra"] = json!(1);
        assert!(serde_json::from_value::<ConnectParams>(extra).is_err());
        let mut bad_mode = sample();
        bad_mode["client"]["mode"] = json!("robot");
        assert!(serde_json::from_value::<ConnectParams>(bad_mode).is_err());
        let mut bad_scope = sample();
        bad_scope["scopes"] = json!(["operator.root"]);
        assert!(serde_json::from_value::<ConnectParams>(bad_scope).is_err());
    }

    #[test]
    fn debug_hides_the_token() {
        let p: ConnectParams = serde_json::from_value(sample()).unwrap();
        assert!(!format!("{p:?} {p:#?}").contains("secret-value"));
        assert_eq!(p.auth.token.expose(), "secret-value");
        // The frame still carries the token, byte for byte.
        assert_eq!(serde_json::to_value(&p).unwrap(), sample());
        assert!(!format!("{:?}", p.auth).contains("secret-value"));
    }
}
