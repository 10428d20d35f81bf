//! The prompt queue with an ACP agent (docs/agents.md §4): the turn-end hook is the one every
//! session kind shares, so queued prompts follow an agent's turns as they follow `shell` runs.
//! The mock agent advertises Claude's `promptQueueing` here (`AX_MOCK_QUEUE`); ax-code keeps
//! its own queue all the same, so each item stays editable and cancellable.

use ax_protocol::{Prompt, PromptPart, Role, queue::QueueAnswer};

use super::*;

fn text(t: &str) -> Prompt {
    Prompt {
        parts: vec![PromptPart::Text { text: t.into() }],
    }
}

/// Each reply's text, in order, once the session ran `n` prompts and nothing waits.
///
/// Settled is judged on the transcript it returns, never on a status read in another
/// request: a transcript read first and an idle status read after it may straddle a whole
/// turn (its reply read still empty, then the turn started and ended before the status
/// was read; seen under load). A reply's end is stored in the transaction that ends its
/// turn, after the turn's last delta (docs/backend.md §2 and `turn::core::end_turn`), so
/// a reply read as ended is complete. The queue is read before the transcript: a queued
/// prompt leaves the queue only once its turn is stored ("Queue and steer"), so every
/// prompt that was queued then is in the transcript read after it.
async fn replies_when_settled(b: &Backend, id: &SessionId, n: usize) -> Vec<String> {
    within(async {
        loop {
            let queue = b.client.prompt_queue(id).await.unwrap();
            let messages = b.client.messages(id).await.unwrap();
            let users = messages.iter().filter(|m| m.role == Role::User).count();
            let ended = messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .all(|m| m.ended.is_some());
            if users >= n && ended && queue.items.is_empty() {
                return messages
                    .iter()
                    .filter(|m| m.role == Role::Assistant)
                    .map(|m| {
                        m.parts
                            .iter()
                            .filter_map(|p| match p {
                                Part::Text { text } => Some(text.as_str()),
                                _ => None,
                            })
                            .collect()
                    })
                    .collect();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Queued prompts go one at a time after the agent's turn; "send now" cancels the running
/// turn (`session/cancel`) and its prompt goes next; a failed turn pauses the queue.
pub async fn an_agent_session_queues_steers_and_pauses() {
    let b = Backend::start(", AX_MOCK_QUEUE = \"1\"").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let QueueAnswer::Sent { accepted } = b
        .client
        .queue_prompt(&id, &text("text working\nwait-cancel"))
        .await
        .unwrap()
    else {
        panic!("a free session sends at once")
    };
    first_delta(&mut events, &accepted.reply_id).await;
    let queued = async |t: &str| match b.client.queue_prompt(&id, &text(t)).await.unwrap() {
        QueueAnswer::Queued { item, .. } => item,
        other => panic!("{other:?}"),
    };
    let a = queued("text answer a").await;
    let now = queued("text answer now").await;
    let q = b.client.send_queued_now(&id, &now.id).await.unwrap();
    assert_eq!(q.items[0].id, now.id);
    assert_eq!(q.items[1].id, a.id);
    let replies = replies_when_settled(&b, &id, 3).await;
    assert_eq!(replies, ["working", "answer now", "answer a"]);

    // The agent crashes mid-turn: what waits behind it is kept, paused, until resumed.
    let crashed = b
        .client
        .prompt_text(&id, "text before\nsleep 300\ncrash")
        .await
        .unwrap();
    queued("text after the crash").await;
    within(async {
        loop {
            let q = b.client.prompt_queue(&id).await.unwrap();
            if let Some(reason) = q.paused {
                assert!(reason.contains("failed"), "{reason}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let messages = b.client.messages(&id).await.unwrap();
    assert_eq!(
        messages.last().unwrap().id,
        crashed.reply_id,
        "nothing more sent"
    );
    b.client.resume_queue(&id).await.unwrap();
    let replies = replies_when_settled(&b, &id, 5).await;
    assert_eq!(replies.last().unwrap(), "after the crash");
}
