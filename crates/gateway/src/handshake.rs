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
    pub min_protocol: u32,
    pub max_protocol: u32,
    pub client: ClientInfo,
    #[serde(default)]
    pub caps: Vec<String>,
    pub role: Role,
    pub scopes: Vec<Scope>,
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
    pub id: String,
    pub version: String,
    pub platform: String,
    pub mode: ClientMode,
}

/// The kind of client; only `ui` clients receive `ui.command` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientMode {
    Ui,
    Cli,
    Agent,
    Test,
}

/// The literal `"operator"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Operator,
}

/// `auth {token}`. The frame carries the token's text; its `Debug` never shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectAuth {
    pub token: Secret,
}

/// Payload of the successful `connect` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloOk {
    pub protocol: u32,
    pub server: ServerInfo,
    pub features: Features,
    pub auth: HelloAuth,
    pub policy: Policy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerInfo {
    pub version: String,
    pub conn_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Features {
    pub methods: Vec<String>,
    pub events: Vec<String>,
}

/// The role and the scopes actually granted (asked ∩ allowed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloAuth {
    pub role: Role,
    pub scopes: Vec<Scope>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Largest frame accepted after the handshake, in bytes.
    pub max_payload: usize,
    pub tick_interval_ms: u64,
}

/// Params of `session.check` (closed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCheckParams {
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
