//! Tool call and permission cards as real agents fill them (docs/tui.md §2a): output shown
//! once without Markdown fences, a run that exited non-zero marked failed, an answered
//! permission showing its answer, the agent's whole input in the open card.

use ax_protocol::PermissionId;
use ax_protocol::turn::{
    PermissionChoice, PermissionKind, PermissionOutcome, PermissionPart, TerminalExit,
    ToolCallPart, ToolContent, ToolKind, ToolStatus, TurnPart,
};
use ax_tui::turn_view::{Fold, render};

fn text(part: &TurnPart, fold: Fold) -> Vec<String> {
    render(part, fold, false, 100)
        .into_iter()
        .map(|(_, pieces)| pieces.into_iter().map(|(t, _)| t).collect::<String>())
        .collect()
}

fn run(status: ToolStatus) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: "toolu_1".into(),
        title: "python3 -m pytest -q".into(),
        kind: ToolKind::Execute,
        status,
        ..ToolCallPart::default()
    }
}

/// Claude's Bash card: the output as a ```console fence in its content and again, plain, as
/// its raw output.
#[test]
fn fenced_output_shows_once_without_its_fence() {
    let mut t = run(ToolStatus::Completed);
    t.raw_input =
        Some(serde_json::json!({"command": "python3 -m pytest -q", "description": "Run tests"}));
    t.content = vec![ToolContent::Text {
        text: "```console\n3 passed in 0.01s\n```".into(),
    }];
    t.raw_output = Some(serde_json::json!("3 passed in 0.01s"));
    let rows = text(&TurnPart::ToolCall(t), Fold::Open);
    let joined = rows.join("\n");
    assert_eq!(joined.matches("3 passed in 0.01s").count(), 1, "{joined}");
    assert!(!joined.contains("```"), "{joined}");
    assert!(joined.contains("$ python3 -m pytest -q"), "{joined}");
    assert!(joined.contains("description: Run tests"), "{joined}");
}

#[test]
fn a_run_that_exited_non_zero_is_marked_failed() {
    let mut t = run(ToolStatus::Completed);
    t.content = vec![ToolContent::Terminal {
        terminal_id: "term_1".into(),
        output: "1 failed\n".into(),
        dropped_bytes: 0,
        exit: Some(TerminalExit {
            exit_code: Some(1),
            signal: None,
        }),
    }];
    let header = &text(&TurnPart::ToolCall(t.clone()), Fold::Collapsed)[0];
    assert!(
        header.starts_with("✗ [run]") && header.contains("exit 1"),
        "{header}"
    );
    // A raw output that carries the exit code (Codex) says the same.
    let mut codex = run(ToolStatus::Completed);
    codex.raw_output = Some(serde_json::json!({"exit_code": 2, "stdout": "", "stderr": "E"}));
    let header = &text(&TurnPart::ToolCall(codex), Fold::Collapsed)[0];
    assert!(
        header.starts_with("✗ [run]") && header.contains("exit 2"),
        "{header}"
    );
    // Claude's Bash says it in its output.
    let mut claude = run(ToolStatus::Completed);
    claude.raw_output = Some(serde_json::json!("Exit code 1\nFAILED tests/test_calc.py"));
    let header = &text(&TurnPart::ToolCall(claude), Fold::Collapsed)[0];
    assert!(
        header.starts_with("✗ [run]") && header.contains("exit 1"),
        "{header}"
    );
    // Exit 0 stays ✓.
    if let ToolContent::Terminal { exit, .. } = &mut t.content[0] {
        *exit = Some(TerminalExit {
            exit_code: Some(0),
            signal: None,
        });
    }
    let header = &text(&TurnPart::ToolCall(t), Fold::Collapsed)[0];
    assert!(header.starts_with("✓ [run]"), "{header}");
}

#[test]
fn an_answered_permission_shows_its_answer() {
    let options = vec![
        PermissionChoice {
            option_id: "allow".into(),
            name: "Allow".into(),
            kind: PermissionKind::AllowOnce,
        },
        PermissionChoice {
            option_id: "reject".into(),
            name: "Reject".into(),
            kind: PermissionKind::RejectOnce,
        },
    ];
    let part = |outcome| {
        TurnPart::Permission(PermissionPart {
            permission_id: "per_00000000000000000000000031"
                .parse::<PermissionId>()
                .unwrap(),
            tool_call: run(ToolStatus::Pending),
            options: options.clone(),
            outcome,
        })
    };
    let header = |outcome| text(&part(outcome), Fold::Collapsed)[0].clone();
    assert!(header(PermissionOutcome::Pending).starts_with("? permission"));
    let allowed = header(PermissionOutcome::Selected {
        option_id: "allow".into(),
        kind: PermissionKind::AllowOnce,
    });
    assert!(
        allowed.starts_with("✓ permission") && allowed.contains("allowed once (“Allow”)"),
        "{allowed}"
    );
    let rejected = header(PermissionOutcome::Selected {
        option_id: "reject".into(),
        kind: PermissionKind::RejectOnce,
    });
    assert!(
        rejected.starts_with("✗ permission") && rejected.contains("rejected"),
        "{rejected}"
    );
    let cancelled = header(PermissionOutcome::Cancelled);
    assert!(
        cancelled.starts_with("⊘ permission") && cancelled.contains("cancelled"),
        "{cancelled}"
    );
}

/// Codex's edit card once applied: the diff and the file, not its input's JSON.
#[test]
fn a_codex_edit_card_reads_as_a_diff() {
    let path = "/p/notes.txt";
    let t = ToolCallPart {
        tool_call_id: "call_edit_1".into(),
        title: format!("Edit {path}"),
        kind: ToolKind::Edit,
        status: ToolStatus::Completed,
        content: vec![ToolContent::Diff {
            path: path.into(),
            old_text: Some("alpha\n".into()),
            new_text: "omega\n".into(),
            line: None,
        }],
        raw_input: Some(serde_json::json!({
            "call_id": "call_edit_1",
            "changes": {path: {"type": "update", "unified_diff": "@@ -1 +1 @@\n-alpha\n+omega\n", "move_path": null}}
        })),
        raw_output: Some(serde_json::json!({
            "stdout": "Success. Updated the following files:\nM notes.txt\n",
            "stderr": "",
            "success": true,
            "changes": {path: {"type": "update", "unified_diff": "@@ -1 +1 @@\n-alpha\n+omega\n", "move_path": null}},
            "status": "completed"
        })),
        ..ToolCallPart::default()
    };
    let rows = text(&TurnPart::ToolCall(t), Fold::Full);
    let joined = rows.join("\n");
    for want in [
        "update: /p/notes.txt (diff below)",
        "-alpha",
        "+omega",
        "M notes.txt",
    ] {
        assert!(joined.contains(want), "missing {want:?}:\n{joined}");
    }
    assert!(
        !joined.contains("unified_diff") && !joined.contains("{\""),
        "{joined}"
    );
    assert_eq!(joined.matches("+omega").count(), 1, "{joined}");
}

/// Claude's Read card: the output in a bare ``` fence and again as its raw output.
#[test]
fn a_bare_fence_is_stripped_too() {
    let mut t = run(ToolStatus::Completed);
    t.kind = ToolKind::Read;
    t.content = vec![ToolContent::Text {
        text: "```\n     1→alpha\n     2→\n```".into(),
    }];
    t.raw_output = Some(serde_json::json!("     1→alpha\n     2→\n"));
    let joined = text(&TurnPart::ToolCall(t), Fold::Open).join("\n");
    assert_eq!(joined.matches("1→alpha").count(), 1, "{joined}");
    assert!(!joined.contains("```"), "{joined}");
}

/// Claude's Bash card repeats its input's description as content: shown once, as the input.
#[test]
fn a_description_repeated_as_content_shows_once() {
    let mut t = run(ToolStatus::Pending);
    t.raw_input = Some(serde_json::json!({
        "command": "for i in 1 2 3; do sleep 10; done",
        "description": "Run the command"
    }));
    t.content = vec![ToolContent::Text {
        text: "Run the command".into(),
    }];
    let joined = text(&TurnPart::ToolCall(t), Fold::Open).join("\n");
    assert_eq!(joined.matches("Run the command").count(), 1, "{joined}");
    assert!(joined.contains("description: Run the command"), "{joined}");
}
