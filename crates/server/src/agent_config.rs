//! `POST /session/{id}/config`: the agent's session options (model, reasoning effort,
//! switches), changed with `session/set_config_option` (docs/agents.md §3). The value is
//! checked against what the agent offered before it is sent, so a wrong one is a 400 that
//! names the choices; the agent's answer is its full option list, stored and published.

use ax_protocol::{AgentConfigOption, ConfigKind, ConfigValue, Session, SessionId};

use crate::{state::Shared, turn_error::TurnError};

/// Checks `value` for the option `config_id` of `offered`; the error names what is offered.
pub(crate) fn check(
    offered: &[AgentConfigOption],
    config_id: &str,
    value: &ConfigValue,
) -> Result<(), TurnError> {
    if offered.is_empty() {
        return Err(TurnError::invalid("this agent offers no config options"));
    }
    let Some(option) = offered.iter().find(|o| o.id == config_id) else {
        let ids: Vec<&str> = offered.iter().map(|o| o.id.as_str()).collect();
        return Err(TurnError::invalid(format!(
            "unknown config option {:?}; the agent offers: {}",
            ax_core::text::escape_controls(config_id),
            ids.join(", ")
        )));
    };
    match (option.kind, value) {
        (ConfigKind::Boolean, ConfigValue::Bool(_)) => Ok(()),
        (ConfigKind::Boolean, ConfigValue::Text(_)) => Err(TurnError::invalid(format!(
            "`{}` is a boolean option: its value is true or false",
            option.id
        ))),
        (ConfigKind::Select, ConfigValue::Text(v))
            if option.options.iter().any(|c| &c.value == v) =>
        {
            Ok(())
        }
        (ConfigKind::Select, _) => {
            let values: Vec<&str> = option.options.iter().map(|c| c.value.as_str()).collect();
            Err(TurnError::invalid(format!(
                "`{}` takes one of: {}",
                option.id,
                values.join(", ")
            )))
        }
    }
}

/// Changes one of the agent's config options; an agent that does not run is started first,
/// exactly as for a mode change.
pub async fn set_config(
    app: &Shared,
    id: &SessionId,
    config_id: &str,
    value: &ConfigValue,
) -> Result<Session, TurnError> {
    let (slot, _held) =
        crate::turn::acp::running_agent(app, id, "config options", "its options can be changed")
            .await?;
    check(&slot.handle.config_options(), config_id, value)?;
    let options = slot
        .handle
        .set_config_option(config_id, value)
        .await
        .map_err(|e| TurnError::not_now(format!("the agent refused the option: {e}")))?;
    // An agent's `mode` option and its ACP mode are one (docs/agents.md §10).
    let mode = options
        .iter()
        .find_map(|o| match (&o.category, &o.current_value) {
            (Some(c), ConfigValue::Text(v)) if c == "mode" => Some(v.clone()),
            _ => None,
        });
    app.update_agent_state(id, move |state| {
        if let (Some(mode), Some(modes)) = (mode, state.modes.as_mut())
            && modes.available.iter().any(|m| m.id == mode)
        {
            modes.current = mode;
        }
        state.config_options = options;
    })
    .await?
    .ok_or_else(|| TurnError::session_not_found(id.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ax_protocol::AgentConfigChoice;

    fn offered() -> Vec<AgentConfigOption> {
        vec![
            AgentConfigOption {
                id: "model".into(),
                name: "Model".into(),
                description: None,
                category: Some("model".into()),
                kind: ConfigKind::Select,
                current_value: ConfigValue::Text("a".into()),
                options: ["a", "b"]
                    .map(|v| AgentConfigChoice {
                        value: v.into(),
                        name: v.to_uppercase(),
                        description: None,
                    })
                    .to_vec(),
            },
            AgentConfigOption {
                id: "fast".into(),
                name: "Fast".into(),
                description: None,
                category: None,
                kind: ConfigKind::Boolean,
                current_value: ConfigValue::Bool(false),
                options: Vec::new(),
            },
        ]
    }

    fn refusal(id: &str, value: ConfigValue) -> String {
        check(&offered(), id, &value).unwrap_err().to_string()
    }

    #[test]
    fn a_value_is_checked_against_what_the_agent_offers() {
        assert!(check(&offered(), "model", &ConfigValue::Text("b".into())).is_ok());
        assert!(check(&offered(), "fast", &ConfigValue::Bool(true)).is_ok());
        let unknown = refusal("speed", ConfigValue::Bool(true));
        assert!(unknown.contains("model, fast"), "{unknown}");
        let wrong = refusal("model", ConfigValue::Text("c".into()));
        assert!(wrong.contains("a, b"), "{wrong}");
        assert!(refusal("model", ConfigValue::Bool(true)).contains("a, b"));
        assert!(refusal("fast", ConfigValue::Text("yes".into())).contains("true or false"));
        let none = check(&[], "model", &ConfigValue::Text("a".into())).unwrap_err();
        assert!(none.to_string().contains("no config options"));
    }
}
