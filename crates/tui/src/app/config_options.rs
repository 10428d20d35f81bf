//! The open session's config options in the app: `/config`, `/model` and their pickers (the
//! option parsing is `crate::config`).

use crate::app::{App, Effect, Modal, NoticeKind};
use crate::input::{Key, KeyCode};
use ax_protocol::{AgentConfigOption, ConfigKind, ConfigValue};

use crate::config::{ConfigAction, current_label, model_option, parse_config, typed_value};

impl App {
    /// The open session's config options (empty before the agent said any).
    pub fn config_options(&self) -> &[AgentConfigOption] {
        self.open_session()
            .and_then(|s| s.agent_state.as_ref())
            .map_or(&[], |a| a.config_options.as_slice())
    }

    /// The answer to [`Effect::SetConfig`]: the session with the agent's full list, and the
    /// option's value as the agent now says it (an agent may pick another than asked).
    pub fn on_config_set(&mut self, config_id: &str, result: Result<ax_protocol::Session, String>) {
        let said = result.as_ref().ok().and_then(|s| {
            let a = s.agent_state.as_ref()?;
            let o = a.config_options.iter().find(|o| o.id == config_id)?;
            Some(format!(
                "{} is now {}",
                crate::markdown::sanitize(&o.name),
                crate::markdown::sanitize(&current_label(o))
            ))
        });
        self.on_session_changed(result);
        if let Some(text) = said {
            self.notify(NoticeKind::Info, text);
        }
    }

    /// `/config [ID [VALUE]]`.
    pub(crate) fn config_command(&mut self, arg: Option<String>) {
        let action = parse_config(arg.as_deref());
        self.config_act(action);
    }

    /// `/model [ID]`: `/config` on the model option.
    pub(crate) fn model_command(&mut self, arg: Option<String>) {
        let id = model_option(self.config_options())
            .map_or_else(|| "model".to_owned(), |o| o.id.clone());
        let action = match arg.map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()) {
            Some(value) => ConfigAction::Set(id, value),
            None => ConfigAction::Choices(id),
        };
        self.config_act(action);
    }

    fn config_act(&mut self, action: ConfigAction) {
        let Some(s) = self.open_session() else {
            self.notify(NoticeKind::Error, "/config and /model work in a session");
            return;
        };
        if s.agent == "shell" {
            self.notify(NoticeKind::Error, "the shell agent has no options");
            return;
        }
        let (session, agent) = (s.id.clone(), crate::markdown::sanitize(&s.agent));
        let options = self.config_options().to_vec();
        let find = |id: &str| options.iter().find(|o| o.id == id);
        let unknown = || {
            if options.is_empty() {
                format!(
                    "{agent} has not said its options yet: send a prompt, or set one by name \
                     (/model ID, /config ID VALUE) and the agent starts for it"
                )
            } else {
                let ids: Vec<&str> = options.iter().map(|o| o.id.as_str()).collect();
                format!("{agent} offers the options {}", ids.join(", "))
            }
        };
        match action {
            ConfigAction::List if options.is_empty() => {
                let why = unknown();
                self.notify(NoticeKind::Error, why);
            }
            ConfigAction::List => {
                self.modal = Some(Modal::Config {
                    option: None,
                    selected: 0,
                })
            }
            ConfigAction::Choices(id) => match find(&id) {
                Some(o) if o.kind == ConfigKind::Select => {
                    let selected = o
                        .options
                        .iter()
                        .position(|c| ConfigValue::Text(c.value.clone()) == o.current_value)
                        .unwrap_or(0);
                    self.modal = Some(Modal::Config {
                        option: Some(id),
                        selected,
                    });
                }
                Some(o) => {
                    let text = format!("{} is {}: /config {id} on|off", o.name, current_label(o));
                    self.notify(NoticeKind::Info, text);
                }
                None => {
                    let why = unknown();
                    self.notify(NoticeKind::Error, why);
                }
            },
            ConfigAction::Set(id, value) => match typed_value(find(&id), &value) {
                Some(value) => {
                    self.effects.push(Effect::SetConfig {
                        session,
                        config_id: id.clone(),
                        value,
                    });
                    self.notify(NoticeKind::Info, format!("setting {id}…"));
                }
                None => self.notify(
                    NoticeKind::Error,
                    format!("{id} is on or off: /config {id} on|off"),
                ),
            },
        }
    }

    /// Keys of the config picker: ↑↓ choose; on the option list Enter opens a select's
    /// choices or flips a switch; on the choices Enter sets it; Esc goes back, then closes.
    pub(crate) fn config_modal_key(
        &mut self,
        option: Option<String>,
        mut selected: usize,
        key: Key,
    ) -> Option<Modal> {
        let session = self.open_session().map(|s| s.id.clone())?;
        let options = self.config_options().to_vec();
        let shown = match &option {
            None => Some(None),
            Some(id) => options.iter().find(|o| &o.id == id).map(Some),
        };
        let shown = shown?;
        let count = shown.map_or(options.len(), |o| o.options.len());
        if count == 0 {
            return None;
        }
        selected = selected.min(count - 1);
        match key.code {
            KeyCode::Esc if option.is_some() => {
                return Some(Modal::Config {
                    option: None,
                    selected: 0,
                });
            }
            KeyCode::Esc | KeyCode::Char('q') => return None,
            KeyCode::Up => selected = selected.saturating_sub(1),
            KeyCode::Down => selected = (selected + 1).min(count - 1),
            KeyCode::Enter | KeyCode::Char(' ') => match shown {
                Some(o) => {
                    let value = ConfigValue::Text(o.options[selected].value.clone());
                    self.effects.push(Effect::SetConfig {
                        session,
                        config_id: o.id.clone(),
                        value,
                    });
                    return None;
                }
                None => {
                    let o = &options[selected];
                    match (&o.kind, &o.current_value) {
                        (ConfigKind::Boolean, ConfigValue::Bool(b)) => {
                            self.effects.push(Effect::SetConfig {
                                session,
                                config_id: o.id.clone(),
                                value: ConfigValue::Bool(!b),
                            });
                        }
                        _ => {
                            let id = o.id.clone();
                            self.config_act(ConfigAction::Choices(id));
                            return self.modal.take();
                        }
                    }
                }
            },
            _ => {}
        }
        Some(Modal::Config { option, selected })
    }
}
