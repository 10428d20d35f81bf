//! Usage is a meter in the session header (docs/tui.md §2), from `agentState.usage`, not
//! lines in the transcript; an edit's hunks carry the file's line numbers.

mod util;

use ax_protocol::turn::{Notice, NoticeKind, ToolContent, TurnPart};
use ax_protocol::{AgentCost, AgentState, AgentUsage, Event, Part, Role, SessionStatus};
use ax_tui::app::App;
use ax_tui::render::draw;
use ax_tui::turn_view::{Fold, render};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

fn with_usage(used: u64, size: u64, cost: Option<f64>) -> ax_protocol::Session {
    let mut s = session(1, "fix it", SessionStatus::Idle);
    s.agent = "claude".into();
    s.agent_state = Some(AgentState {
        usage: Some(AgentUsage {
            used,
            size,
            cost: cost.map(|amount| AgentCost {
                amount,
                currency: "USD".into(),
            }),
        }),
        ..AgentState::default()
    });
    s
}

#[test]
fn usage_shows_in_the_header_and_stored_notices_do_not() {
    let mut app = ready_app(vec![with_usage(12_345, 200_000, Some(0.0412))], false);
    let stored = message(
        "msg_00000000000000000000000002",
        1,
        Role::Assistant,
        vec![
            Part::Text {
                text: "done".into(),
            },
            Part::Turn(TurnPart::Notice(Notice {
                kind: NoticeKind::Usage,
                message: "1,234 tokens".into(),
            })),
        ],
    );
    open_loaded(&mut app, 1, vec![stored]);
    let s = screen(&app);
    let header = s.lines().nth(1).unwrap();
    assert!(header.contains("ctx 12.3k/200k 6% · $0.04"), "{header}");
    assert!(s.contains("done") && !s.contains("usage:"), "{s}");
    // The meter follows session.updated.
    app.on_event(Event::SessionUpdated {
        session: with_usage(150_000, 200_000, Some(0.001)),
    });
    let header = screen(&app).lines().nth(1).unwrap().to_owned();
    assert!(header.contains("ctx 150k/200k 75% · <$0.01"), "{header}");
}

#[test]
fn hunks_are_numbered_from_the_line_the_backend_found() {
    let t = ax_protocol::turn::ToolCallPart {
        tool_call_id: "t".into(),
        title: "Edit calc.py".into(),
        content: vec![ToolContent::Diff {
            path: "calc.py".into(),
            old_text: Some("    return a - b".into()),
            new_text: "    return a + b".into(),
            line: Some(5),
        }],
        ..Default::default()
    };
    let rows: Vec<String> = render(&TurnPart::ToolCall(t), Fold::Open, false, 80)
        .into_iter()
        .map(|(_, p)| p.into_iter().map(|(t, _)| t).collect())
        .collect();
    assert!(
        rows.iter().any(|r| r.trim() == "@@ -5,1 +5,1 @@"),
        "{rows:#?}"
    );
}
