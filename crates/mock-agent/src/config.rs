//! Session config options, shaped as the real adapters offer them (docs/agents.md §10):
//! Codex's `mode`, `model` and `reasoning_effort` selects (categories `mode`, `model`,
//! `thought_level`), Claude's `mode` and `model`, plus one boolean option, `fast`, which no
//! observed adapter offers yet but the protocol allows. `mode` mirrors the session's ACP mode,
//! as both adapters do: setting one changes the other.

use agent_client_protocol::v1::schema;

/// The models the mock offers; the first is the default.
const MODELS: [(&str, &str); 3] = [
    ("mock-large", "Mock Large"),
    ("mock-small", "Mock Small"),
    ("mock-fast", "Mock Fast"),
];
const EFFORTS: [&str; 4] = ["low", "medium", "high", "xhigh"];
/// The modes of `crate::modes`, with their names.
const MODES: [(&str, &str); 3] = [
    ("default", "Default"),
    ("acceptEdits", "Accept Edits"),
    ("bypassPermissions", "Bypass Permissions"),
];

/// A session's option values other than its mode.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    model: String,
    effort: String,
    fast: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: MODELS[0].0.to_owned(),
            effort: "medium".to_owned(),
            fast: false,
        }
    }
}

fn select(
    id: &str,
    name: &str,
    category: schema::SessionConfigOptionCategory,
    current: &str,
    values: impl IntoIterator<Item = (&'static str, &'static str)>,
) -> schema::SessionConfigOption {
    let options: Vec<schema::SessionConfigSelectOption> = values
        .into_iter()
        .map(|(value, name)| schema::SessionConfigSelectOption::new(value, name))
        .collect();
    schema::SessionConfigOption::select(id.to_owned(), name.to_owned(), current.to_owned(), options)
        .category(category)
}

/// The full option list, as `session/new` and `session/set_config_option` answer it.
pub(crate) fn options(mode: &str, config: &Config) -> Vec<schema::SessionConfigOption> {
    use schema::SessionConfigOptionCategory as C;
    vec![
        select("mode", "Mode", C::Mode, mode, MODES),
        select("model", "Model", C::Model, &config.model, MODELS),
        select(
            "reasoning_effort",
            "Reasoning Effort",
            C::ThoughtLevel,
            &config.effort,
            EFFORTS.map(|e| (e, e)),
        ),
        schema::SessionConfigOption::boolean("fast", "Fast replies", config.fast)
            .description("Answer quickly, think less".to_owned()),
    ]
}

/// Applies `session/set_config_option`; `Err` says what was wrong (sent as invalid params).
pub(crate) fn set(
    mode: &mut String,
    config: &mut Config,
    id: &str,
    value: &schema::SessionConfigOptionValue,
) -> Result<(), String> {
    fn pick(value: &schema::SessionConfigOptionValue, allowed: &[&str]) -> Result<String, String> {
        let Some(v) = value.as_value_id() else {
            return Err("this option takes a value id, not a boolean".into());
        };
        if allowed.contains(&&*v.0) {
            Ok(v.0.to_string())
        } else {
            Err(format!("unknown value {:?}", &*v.0))
        }
    }
    match id {
        "mode" => *mode = pick(value, &MODES.map(|(v, _)| v))?,
        "model" => config.model = pick(value, &MODELS.map(|(v, _)| v))?,
        "reasoning_effort" => config.effort = pick(value, &EFFORTS)?,
        "fast" => {
            config.fast = value
                .as_bool()
                .ok_or("`fast` is a boolean option".to_owned())?
        }
        other => return Err(format!("unknown config option {other:?}")),
    }
    Ok(())
}

/// What the `config` script command reports.
pub(crate) fn describe(mode: &str, config: &Config) -> String {
    format!(
        "config: mode={mode} model={} reasoning_effort={} fast={}",
        config.model, config.effort, config.fast
    )
}

/// `config-set ID VALUE` in a script: the agent changes an option itself (as an adapter does
/// when it falls back to another model) and tells the client with `config_option_update`.
pub(crate) fn set_from_script(
    mode: &mut String,
    config: &mut Config,
    id: &str,
    raw: &str,
) -> Result<(), String> {
    let value = match (id, raw) {
        ("fast", "true") => schema::SessionConfigOptionValue::boolean(true),
        ("fast", "false") => schema::SessionConfigOptionValue::boolean(false),
        (_, raw) => schema::SessionConfigOptionValue::value_id(raw.to_owned()),
    };
    set(mode, config, id, &value)
}
