//! The agent's session options in the TUI (docs/tui.md §3f): `agentState.configOptions`
//! (model, reasoning effort, switches; docs/agents.md §3) shown and changed with `/config`
//! and `/model`, through `POST /session/{id}/config`.
//!
//! With no argument both open a picker over the options the session holds. By name
//! (`/model ID`, `/config ID VALUE`) a change is sent even when the session has no options
//! yet: before the first prompt the backend starts the agent for it and checks the value
//! against what the agent offers, answering with the offered values when it is not one.

use ax_protocol::{AgentConfigOption, ConfigKind, ConfigValue};

/// What `/config ARG` or `/model ARG` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigAction {
    /// The list of options.
    List,
    /// The choices of one option (`/config ID`, `/model`).
    Choices(String),
    /// Set option ID to VALUE (`/config ID VALUE`, `/model VALUE`).
    Set(String, String),
}

/// Parses `/config`'s argument.
pub fn parse_config(arg: Option<&str>) -> ConfigAction {
    let arg = arg.map(str::trim).unwrap_or_default();
    match arg.split_once(char::is_whitespace) {
        _ if arg.is_empty() => ConfigAction::List,
        None => ConfigAction::Choices(arg.to_owned()),
        Some((id, value)) => ConfigAction::Set(id.to_owned(), value.trim().to_owned()),
    }
}

/// A typed value for `option`: a boolean's `on`/`off` (also `true`/`false`, `yes`/`no`),
/// else the select's value id as typed. `None` for a boolean given anything else.
pub fn typed_value(option: Option<&AgentConfigOption>, value: &str) -> Option<ConfigValue> {
    match option.map(|o| o.kind) {
        Some(ConfigKind::Boolean) => match value.to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Some(ConfigValue::Bool(true)),
            "off" | "false" | "no" | "0" => Some(ConfigValue::Bool(false)),
            _ => None,
        },
        _ => Some(ConfigValue::Text(value.to_owned())),
    }
}

/// An option's current value as the person reads it: a choice's name, `on` or `off`.
pub fn current_label(option: &AgentConfigOption) -> String {
    match &option.current_value {
        ConfigValue::Bool(b) => if *b { "on" } else { "off" }.to_owned(),
        ConfigValue::Text(v) => option
            .options
            .iter()
            .find(|c| &c.value == v)
            .map_or_else(|| v.clone(), |c| c.name.clone()),
    }
}

/// The model option: the one of category `model`, else the one named `model`.
pub fn model_option(options: &[AgentConfigOption]) -> Option<&AgentConfigOption> {
    options
        .iter()
        .find(|o| o.category.as_deref() == Some("model"))
        .or_else(|| options.iter().find(|o| o.id == "model"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ax_protocol::AgentConfigChoice;

    fn select(id: &str, category: Option<&str>) -> AgentConfigOption {
        AgentConfigOption {
            id: id.into(),
            name: id.to_uppercase(),
            description: None,
            category: category.map(str::to_owned),
            kind: ConfigKind::Select,
            current_value: ConfigValue::Text("b".into()),
            options: vec![
                AgentConfigChoice {
                    value: "a".into(),
                    name: "Alpha".into(),
                    description: None,
                },
                AgentConfigChoice {
                    value: "b".into(),
                    name: "Beta".into(),
                    description: None,
                },
            ],
        }
    }

    #[test]
    fn arguments_parse_into_list_choices_or_set() {
        assert_eq!(parse_config(None), ConfigAction::List);
        assert_eq!(parse_config(Some(" ")), ConfigAction::List);
        assert_eq!(
            parse_config(Some("model")),
            ConfigAction::Choices("model".into())
        );
        assert_eq!(
            parse_config(Some("fast  on ")),
            ConfigAction::Set("fast".into(), "on".into())
        );
    }

    #[test]
    fn values_are_typed_by_the_option() {
        let mut fast = select("fast", None);
        fast.kind = ConfigKind::Boolean;
        assert_eq!(
            typed_value(Some(&fast), "ON"),
            Some(ConfigValue::Bool(true))
        );
        assert_eq!(
            typed_value(Some(&fast), "no"),
            Some(ConfigValue::Bool(false))
        );
        assert_eq!(typed_value(Some(&fast), "maybe"), None);
        assert_eq!(
            typed_value(None, "gpt-x"),
            Some(ConfigValue::Text("gpt-x".into()))
        );
        assert_eq!(current_label(&select("m", None)), "Beta");
        fast.current_value = ConfigValue::Bool(false);
        assert_eq!(current_label(&fast), "off");
    }

    #[test]
    fn the_model_option_is_found_by_category_first() {
        let opts = [select("model", None), select("llm", Some("model"))];
        assert_eq!(model_option(&opts).unwrap().id, "llm");
        assert_eq!(model_option(&opts[..1]).unwrap().id, "model");
        assert!(model_option(&[]).is_none());
    }
}
