//! `/` lists ax-code's commands and the open session's agent commands as the person types,
//! Tab completes, and `/name ARGS` that is not ax-code's goes to an ACP agent as a prompt
//! (docs/tui.md §3e).

mod util;

use ax_protocol::{AgentCommand, AgentState, Event, PromptPart, SessionStatus};
use ax_tui::app::{Effect, NoticeKind};
use ax_tui::complete::Source;
use ax_tui::input::KeyCode;
use ratatui::{Terminal, backend::TestBackend};
use util::*;

fn cmd(name: &str, hint: Option<&str>) -> AgentCommand {
    AgentCommand {
        name: name.into(),
        description: format!("agent {name}"),
        input_hint: hint.map(str::to_owned),
    }
}

fn acp_session(commands: Vec<AgentCommand>) -> ax_protocol::Session {
    let mut s = session(1, "work", SessionStatus::Idle);
    s.agent = "mock".into();
    s.agent_state = Some(AgentState {
        commands,
        ..Default::default()
    });
    s
}

fn app_with(commands: Vec<AgentCommand>) -> ax_tui::App {
    let mut app = ready_app(vec![acp_session(commands)], false);
    open_loaded(&mut app, 1, vec![]);
    app.take_effects();
    app
}

fn names(app: &ax_tui::App) -> Vec<String> {
    app.completions().into_iter().map(|c| c.name).collect()
}

fn sent_text(effects: &[Effect]) -> Option<String> {
    effects.iter().find_map(|e| match e {
        Effect::Submit { parts, .. } => parts.iter().find_map(|p| match p {
            PromptPart::Text { text } => Some(text.clone()),
            _ => None,
        }),
        _ => None,
    })
}

#[test]
fn slash_lists_both_and_narrows_as_the_person_types() {
    let mut app = app_with(vec![
        cmd("review", Some("what to review")),
        cmd("compact", None),
    ]);
    typed(&mut app, "/");
    let all = names(&app);
    assert!(all.contains(&"/new".to_owned()) && all.contains(&"/compact".to_owned()));
    assert_eq!(
        all.last().map(String::as_str),
        Some("/compact"),
        "the agent's come last"
    );
    typed(&mut app, "re");
    assert_eq!(names(&app), ["/rename", "/revoke", "/review"]);
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| ax_tui::render::draw(f, &app)).unwrap();
    let s = term.backend().to_string();
    let row = s.lines().find(|l| l.contains("/review")).expect("listed");
    assert!(
        row.contains("[what to review]") && row.contains("agent"),
        "{s}"
    );
    // Arguments started: the list goes.
    typed(&mut app, "view x");
    assert!(app.completions().is_empty());
}

#[test]
fn tab_completes_and_the_agent_gets_its_command_as_a_prompt() {
    let mut app = app_with(vec![cmd("review", Some("what to review"))]);
    typed(&mut app, "/re");
    app.handle_input(key(KeyCode::Down));
    app.handle_input(key(KeyCode::Down));
    assert_eq!(app.completion_selected(), 2);
    app.handle_input(key(KeyCode::Tab));
    assert_eq!(app.composer().draft(), "/review ");
    assert!(app.completions().is_empty());
    typed(&mut app, "the diff");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    assert_eq!(
        sent_text(&effects).as_deref(),
        Some("/review the diff"),
        "{effects:?}"
    );

    // Enter on a partial name completes it and runs it.
    let mut app = app_with(vec![cmd("compact", None)]);
    typed(&mut app, "/comp");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(sent_text(&app.take_effects()).as_deref(), Some("/compact"));
    // And an ax-code command the same way.
    let mut app = app_with(vec![]);
    typed(&mut app, "/he");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.modal().is_some(), "/help opened");
}

#[test]
fn ax_codes_command_wins_and_shell_or_home_refuse_unknown_names() {
    let mut app = app_with(vec![cmd("help", None)]);
    typed(&mut app, "/hel");
    let list = app.completions();
    assert_eq!(list[1].source, Source::Agent { shadowed: true });
    app.handle_input(ctrl('c'));

    // An unknown name for an ACP agent is the agent's to judge.
    typed(&mut app, "/unknown-thing now");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        sent_text(&app.take_effects()).as_deref(),
        Some("/unknown-thing now")
    );

    let mut shell = ready_app(vec![session(1, "sh", SessionStatus::Idle)], false);
    open_loaded(&mut shell, 1, vec![]);
    shell.take_effects();
    typed(&mut shell, "/compact x");
    shell.handle_input(key(KeyCode::Enter));
    assert!(sent_text(&shell.take_effects()).is_none());
    assert_eq!(shell.notice().unwrap().kind, NoticeKind::Error);

    let mut home = ready_app(vec![acp_session(vec![])], false);
    typed(&mut home, "/compact x");
    home.handle_input(key(KeyCode::Enter));
    assert!(sent_text(&home.take_effects()).is_none());
    assert!(home.notice().unwrap().text.contains("unknown command"));
}

#[test]
fn the_list_follows_the_agents_updates_and_esc_hides_it() {
    let mut app = app_with(vec![]);
    typed(&mut app, "/rev");
    assert_eq!(names(&app), ["/revoke"]);
    ev(
        &mut app,
        Event::SessionUpdated {
            session: acp_session(vec![cmd("review", None)]),
        },
    );
    assert_eq!(names(&app), ["/revoke", "/review"]);
    app.handle_input(key(KeyCode::Esc));
    assert!(app.completions().is_empty());
    assert_eq!(app.composer().draft(), "/rev", "Esc only hides the list");
    assert_eq!(app.route(), &ax_tui::Route::Session(sid(1)), "and stays");
    typed(&mut app, "i");
    assert_eq!(names(&app), ["/review"], "typing shows it again");
}
