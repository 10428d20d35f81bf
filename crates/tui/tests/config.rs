//! The agent's session options in the TUI (docs/tui.md §3f): `/config` and `/model` pickers
//! over `agentState.configOptions`, and changes by name also before the agent said any.

mod util;

use ax_protocol::{
    AgentConfigChoice, AgentConfigOption, AgentState, ConfigKind, ConfigValue, SessionStatus,
};
use ax_tui::app::{Effect, Modal, NoticeKind};
use ax_tui::input::KeyCode;
use ratatui::{Terminal, backend::TestBackend};
use util::*;

fn choice(value: &str, name: &str) -> AgentConfigChoice {
    AgentConfigChoice {
        value: value.into(),
        name: name.into(),
        description: None,
    }
}

/// Shaped as the mock agent's (Codex's): a model select and a boolean.
fn options() -> Vec<AgentConfigOption> {
    vec![
        AgentConfigOption {
            id: "model".into(),
            name: "Model".into(),
            description: None,
            category: Some("model".into()),
            kind: ConfigKind::Select,
            current_value: ConfigValue::Text("mock-large".into()),
            options: vec![
                choice("mock-large", "Mock Large"),
                choice("mock-small", "Mock Small"),
            ],
        },
        AgentConfigOption {
            id: "fast".into(),
            name: "Fast".into(),
            description: None,
            category: None,
            kind: ConfigKind::Boolean,
            current_value: ConfigValue::Bool(false),
            options: vec![],
        },
    ]
}

fn app_with(config_options: Vec<AgentConfigOption>) -> ax_tui::App {
    let mut s = session(1, "work", SessionStatus::Idle);
    s.agent = "mock".into();
    s.agent_state = Some(AgentState {
        config_options,
        ..Default::default()
    });
    let mut app = ready_app(vec![s], false);
    open_loaded(&mut app, 1, vec![]);
    app.take_effects();
    app
}

fn command(app: &mut ax_tui::App, line: &str) -> Vec<Effect> {
    typed(app, line);
    // Enter on a complete name runs it (the `/` list completes only partial names).
    app.handle_input(key(KeyCode::Enter));
    app.take_effects()
}

fn set(config_id: &str, value: ConfigValue) -> Effect {
    Effect::SetConfig {
        session: sid(1),
        config_id: config_id.into(),
        value,
    }
}

#[test]
fn config_lists_the_options_and_switches_or_chooses() {
    let mut app = app_with(options());
    assert!(command(&mut app, "/config").is_empty());
    assert_eq!(
        app.modal(),
        Some(&Modal::Config {
            option: None,
            selected: 0
        })
    );
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| ax_tui::render::draw(f, &app)).unwrap();
    let s = term.backend().to_string();
    assert!(s.contains("Model: Mock Large"), "{s}");
    assert!(s.contains("Fast: off"), "{s}");

    // A switch flips at once and the list stays.
    app.handle_input(key(KeyCode::Down));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.take_effects(), [set("fast", ConfigValue::Bool(true))]);
    assert!(matches!(
        app.modal(),
        Some(Modal::Config { option: None, .. })
    ));

    // A select opens its choices, the current one highlighted; Enter sets one.
    app.handle_input(key(KeyCode::Up));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        app.modal(),
        Some(&Modal::Config {
            option: Some("model".into()),
            selected: 0
        })
    );
    term.draw(|f| ax_tui::render::draw(f, &app)).unwrap();
    assert!(term.backend().to_string().contains("Mock Large (current)"));
    app.handle_input(key(KeyCode::Down));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        app.take_effects(),
        [set("model", ConfigValue::Text("mock-small".into()))]
    );
    assert_eq!(app.modal(), None);
}

#[test]
fn model_opens_the_model_choices_or_sets_by_name() {
    let mut app = app_with(options());
    command(&mut app, "/model");
    assert_eq!(
        app.modal(),
        Some(&Modal::Config {
            option: Some("model".into()),
            selected: 0
        })
    );
    app.handle_input(key(KeyCode::Esc));
    assert!(
        matches!(app.modal(), Some(Modal::Config { option: None, .. })),
        "back"
    );
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.modal(), None);

    assert_eq!(
        command(&mut app, "/model mock-small"),
        [set("model", ConfigValue::Text("mock-small".into()))]
    );
    assert_eq!(
        command(&mut app, "/config fast on"),
        [set("fast", ConfigValue::Bool(true))]
    );
    assert!(command(&mut app, "/config fast maybe").is_empty());
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Error);
    // The answer says what the agent now holds.
    let mut changed = app.open_session().unwrap().clone();
    changed.agent_state.as_mut().unwrap().config_options[0].current_value =
        ConfigValue::Text("mock-small".into());
    app.on_config_set("model", Ok(changed));
    assert_eq!(app.notice().unwrap().text, "Model is now Mock Small");
    assert_eq!(
        app.config_options()[0].current_value,
        ConfigValue::Text("mock-small".into())
    );
    // The backend's refusal (an unknown value names the offered ones) is shown.
    app.on_session_changed(Err("model not changed: 400 offered: mock-large".into()));
    assert!(app.notice().unwrap().text.contains("offered"));
}

#[test]
fn before_the_agent_said_its_options_they_are_set_by_name() {
    let mut app = app_with(vec![]);
    assert!(command(&mut app, "/config").is_empty());
    let notice = app.notice().unwrap();
    assert!(notice.text.contains("/model ID"), "{notice:?}");
    // The backend starts the agent for it and checks the value.
    assert_eq!(
        command(&mut app, "/model mock-small"),
        [set("model", ConfigValue::Text("mock-small".into()))]
    );

    let mut shell = ready_app(vec![session(1, "sh", SessionStatus::Idle)], false);
    open_loaded(&mut shell, 1, vec![]);
    shell.take_effects();
    assert!(command(&mut shell, "/model x").is_empty());
    assert!(shell.notice().unwrap().text.contains("no options"));
}
