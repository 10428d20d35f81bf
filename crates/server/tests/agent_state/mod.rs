//! What the agent tells a session about itself, kept in `agentState` and published as
//! `session.updated`: its command list (docs/agents.md §4) and its config options (§3).

use ax_protocol::ConfigValue;

use super::*;

/// The names of a session's agent commands, as stored.
fn command_names(session: &ax_protocol::Session) -> Vec<String> {
    session
        .agent_state
        .as_ref()
        .map(|s| s.commands.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default()
}

/// docs/agents.md §4: the agent's `available_commands_update` is kept in `agentState.commands`
/// (live as `session.updated`, equal after a restart), a prompt `/name args` reaches the agent
/// as its command, and a new list replaces the old one.
pub async fn agent_commands_are_kept_published_and_run() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let accepted = b
        .client
        .prompt_text(&id, "/review the parser")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert_eq!(text_of(&live.parts), "command review: the parser");
    let session = b.client.get_session(&id).await.unwrap();
    assert_eq!(command_names(&session), ["compact", "review"]);
    let json = serde_json::to_value(&session).unwrap();
    assert_eq!(
        json["agentState"]["commands"][1],
        serde_json::json!({"name": "review", "description": "Review the changes", "inputHint": "what to review"})
    );
    assert!(json["agentState"]["commands"][0].get("inputHint").is_none());

    // A new list arrives mid-turn: published (by the task that keeps the agent's offers, so
    // not necessarily before the turn's end), then stored.
    let accepted = b
        .client
        .prompt_text(&id, "commands compact init\ntext done")
        .await
        .unwrap();
    let mut published = None;
    let (mut seen, mut idle) = (false, false);
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            match e.event {
                Event::MessageDelta { message_id, .. } if message_id == accepted.reply_id => {
                    seen = true
                }
                Event::SessionUpdated { session } if session.id == id => {
                    let names = command_names(&session);
                    if names.contains(&"init".to_owned()) {
                        published = Some(names);
                    }
                }
                Event::SessionStatus { session_id, status }
                    if session_id == id && status == SessionStatus::Idle =>
                {
                    idle = seen;
                }
                _ => {}
            }
            if idle && published.is_some() {
                return;
            }
        }
    })
    .await;
    assert_eq!(
        published.as_deref(),
        Some(&["compact".to_owned(), "init".to_owned()][..])
    );
    b.restart().await;
    let again = b.client.get_session(&id).await.unwrap();
    assert_eq!(command_names(&again), ["compact", "init"]);
}

/// docs/agents.md §4: a command list the agent sends between turns (Codex's adapter may send
/// its list after its first prompt ended) is kept and published then, without waiting for
/// another prompt.
pub async fn commands_sent_between_turns_are_kept_at_once() {
    let b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let accepted = b
        .client
        .prompt_text(&id, "later-commands 1000 alpha beta\ntext said")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert_eq!(text_of(&live.parts), "said");
    let before = b.client.get_session(&id).await.unwrap();
    assert_eq!(
        command_names(&before),
        ["compact", "review"],
        "the turn ended before the new list was sent"
    );
    let published = within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            if let Event::SessionUpdated { session } = e.event
                && session.id == id
                && command_names(&session) != ["compact", "review"]
            {
                return command_names(&session);
            }
        }
    })
    .await;
    assert_eq!(published, ["alpha", "beta"]);
    let stored = b.client.get_session(&id).await.unwrap();
    assert_eq!(command_names(&stored), ["alpha", "beta"]);
    assert_eq!(
        stored.status,
        SessionStatus::Idle,
        "no turn was started for it"
    );
}

/// docs/agents.md §4: the title an agent gives its session (`session_info_update`, as
/// Claude's adapter sends after a first turn) replaces one that came from the first prompt,
/// one clean line, published and kept over a restart; once a person renames the session the
/// agent's titles are no longer kept.
pub async fn the_agent_titles_a_session_no_person_named() {
    let mut b = Backend::start("").await;
    let id = b
        .client
        .create_session_with(None, Some("mock"))
        .await
        .unwrap()
        .id;
    let mut events = b.events().await;
    let titled = |want: &'static str| move |e: &Event| matches!(e, Event::SessionUpdated { session } if session.title == want);
    b.client
        .prompt_text(&id, "title Parser \u{202e}fix\ntext ok")
        .await
        .unwrap();
    wait_for(&mut events, titled("Parser  fix")).await;
    assert_eq!(
        b.client.get_session(&id).await.unwrap().title,
        "Parser  fix"
    );
    b.restart().await;
    assert_eq!(
        b.client.get_session(&id).await.unwrap().title,
        "Parser  fix"
    );

    b.client.rename_session(&id, "mine").await.unwrap();
    let mut events = b.events().await;
    // The agent's later title and command list come in this order: once the list is kept, the
    // title was seen and not taken.
    b.client
        .prompt_text(&id, "title Something else\ncommands one two\ntext ok")
        .await
        .unwrap();
    let session = wait_for(&mut events, |e| {
        matches!(e, Event::SessionUpdated { session } if command_names(session) == ["one", "two"])
    })
    .await;
    let Event::SessionUpdated { session } = session else {
        unreachable!()
    };
    assert_eq!(session.title, "mine");
    assert_eq!(b.client.get_session(&id).await.unwrap().title, "mine");
}

/// The first event `matches` accepts (within the test's bound).
async fn wait_for(events: &mut EventStream, matches: impl Fn(&Event) -> bool) -> Event {
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            if matches(&e.event) {
                return e.event;
            }
        }
    })
    .await
}

/// The current value of `config_id` in the session's stored options.
fn config_value(session: &ax_protocol::Session, config_id: &str) -> Option<ConfigValue> {
    session
        .agent_state
        .as_ref()?
        .config_options
        .iter()
        .find(|o| o.id == config_id)
        .map(|o| o.current_value.clone())
}

async fn refused(b: &Backend, id: &SessionId, body: serde_json::Value) -> (u16, String) {
    let answer = reqwest::Client::new()
        .post(format!(
            "{}/session/{id}/config",
            b.server.as_ref().unwrap().url()
        ))
        .bearer_auth(b.server.as_ref().unwrap().token().expose())
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.text().await.unwrap())
}

/// docs/agents.md §3: the agent's `configOptions` are kept in `agentState.configOptions`;
/// `POST /session/{id}/config` changes one also before the first prompt (starting the agent
/// as a mode change does), answers the agent's full list, refuses an unknown option or value
/// with a 400 naming what is offered; the agent's own `config_option_update` is kept too.
pub async fn config_options_are_chosen_before_and_after_prompts() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let set = b
        .client
        .set_config(&id, "model", ConfigValue::Text("mock-small".into()))
        .await
        .unwrap();
    assert_eq!(
        config_value(&set, "model"),
        Some(ConfigValue::Text("mock-small".into()))
    );
    let ids: Vec<String> = set
        .agent_state
        .as_ref()
        .unwrap()
        .config_options
        .iter()
        .map(|o| o.id.clone())
        .collect();
    assert_eq!(ids, ["mode", "model", "reasoning_effort", "fast"]);
    let json = serde_json::to_value(&set).unwrap();
    assert_eq!(json["agentState"]["configOptions"][3]["type"], "boolean");
    assert_eq!(
        json["agentState"]["configOptions"][1]["options"][1]["value"],
        "mock-small"
    );
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            if let Event::SessionUpdated { session } = e.event
                && session.id == id
                && config_value(&session, "model") == Some(ConfigValue::Text("mock-small".into()))
            {
                return;
            }
        }
    })
    .await;
    let set = b
        .client
        .set_config(&id, "fast", ConfigValue::Bool(true))
        .await
        .unwrap();
    assert_eq!(config_value(&set, "fast"), Some(ConfigValue::Bool(true)));

    for (body, names) in [
        (
            serde_json::json!({"configId": "speed", "value": true}),
            "mode, model, reasoning_effort, fast",
        ),
        (
            serde_json::json!({"configId": "model", "value": "gpt-9"}),
            "mock-large, mock-small, mock-fast",
        ),
        (
            serde_json::json!({"configId": "fast", "value": "yes"}),
            "true or false",
        ),
    ] {
        let (status, text) = refused(&b, &id, body.clone()).await;
        assert_eq!(status, 400, "{body} → {text}");
        assert!(text.contains(names), "{body} → {text}");
    }
    for body in [
        serde_json::json!({"configId": "fast", "value": true, "extra": 1}),
        serde_json::json!({"configId": "model", "value": 3}),
        serde_json::json!({"configId": "model"}),
    ] {
        let (status, text) = refused(&b, &id, body.clone()).await;
        assert_eq!(status, 400, "a strict body: {body} → {text}");
    }

    // The agent took the changes, and changes an option by itself.
    let accepted = b
        .client
        .prompt_text(&id, "config\nconfig-set model mock-fast")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert_eq!(
        text_of(&live.parts),
        "config: mode=default model=mock-small reasoning_effort=medium fast=true"
    );
    let session = b.client.get_session(&id).await.unwrap();
    assert_eq!(
        config_value(&session, "model"),
        Some(ConfigValue::Text("mock-fast".into()))
    );
    b.restart().await;
    let again = b.client.get_session(&id).await.unwrap();
    assert_eq!(
        config_value(&again, "model"),
        Some(ConfigValue::Text("mock-fast".into())),
        "kept across a restart"
    );
    // After the restart the agent is started again for the change.
    let set = b
        .client
        .set_config(&id, "reasoning_effort", ConfigValue::Text("high".into()))
        .await
        .unwrap();
    assert_eq!(
        config_value(&set, "reasoning_effort"),
        Some(ConfigValue::Text("high".into()))
    );
    let shell = b.client.create_session(None).await.unwrap();
    match b
        .client
        .set_config(&shell.id, "model", ConfigValue::Text("x".into()))
        .await
    {
        Err(ClientError::Api { status, .. }) => assert_eq!(status, 400),
        other => panic!("{other:?}"),
    }
}
