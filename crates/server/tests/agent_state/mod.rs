//! What the agent tells a session about itself, kept in `agentState` and published as
//! `session.updated` (docs/agents.md §4): its command list.

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

    // A new list arrives mid-turn: published before the turn ends, then stored.
    let accepted = b
        .client
        .prompt_text(&id, "commands compact init\ntext done")
        .await
        .unwrap();
    let mut published = None;
    let mut seen = false;
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
                    if seen && session_id == id && status == SessionStatus::Idle =>
                {
                    return;
                }
                _ => {}
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
