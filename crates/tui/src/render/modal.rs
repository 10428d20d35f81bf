//! The modals: help, the palette, confirmations, the agent picker and the session options
//! (docs/tui.md §3). Which modal shows is the state's ([`crate::app::Modal`]).

use ax_protocol::{SessionStatus, time::format_utc_minutes};
use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{ACCENT, DIM, boxed, clip, tr, tray};
use crate::app::{App, Modal};
use crate::command::{self, palette_entries};
use crate::layout::{Rect, agent_picker_box, path_rows};

/// Every key that works, for the help modal.
pub const HELP_KEYS: &[(&str, &str)] = &[
    (
        "Enter, Alt+Enter",
        "send (or open the selected session) · new line (^J)",
    ),
    ("←→ ^←→ Alt+B/F", "move in the prompt by char or word"),
    (
        "Home/End ^A/^E",
        "line start/end · ^W ^U erase word / to line start",
    ),
    (
        "Backspace, ×",
        "empty prompt: remove the last chip · click × removes one",
    ),
    (
        "↑↓ (in the prompt)",
        "walk this session's prompts (your draft comes back) · ^R search them",
    ),
    (
        "↑↓ PgUp/PgDn",
        "sessions: select · transcript: scroll (↑↓ if no history) · mouse wheel",
    ),
    ("Home/End", "first/last session · transcript top/bottom"),
    (
        "Tab, Shift+Tab",
        "focus the next/previous tool call, thought or permission",
    ),
    (
        "Enter (empty), click",
        "open/close the focused part · show all · click its row",
    ),
    (
        "Esc",
        "abort the running turn; otherwise back to the sessions",
    ),
    (
        "^F, /find TEXT",
        "find in the transcript: Enter/^N next · ^P/Shift+Enter previous · Esc close",
    ),
    (
        "^K ^Y, ^L, ^D",
        "erase to line end · put back what ^W ^U ^K erased · redraw · quit (empty prompt)",
    ),
    (
        "F2, /copy",
        "mouse to the terminal (select text) and back · /copy [code|prompt] by OSC 52",
    ),
    ("^C", "close a dialog, clear the prompt, abort, or quit"),
    ("^N ^P", "new session · command palette"),
    (
        "/ then Tab",
        "list ax-code's and the agent's commands · ↑↓ choose · Tab complete · Esc hide",
    ),
    (
        "@ then Tab",
        "pick a project file (fuzzy) · ↑↓ choose · Tab/Enter attach it · Esc hide",
    ),
    (
        "Enter (turn running)",
        "queue the prompt · /queue: edit, send now (stops the turn), cancel, resume",
    ),
    (
        "Esc (editing queued)",
        "leave the queued prompt as it was (Enter saves the edit in its place)",
    ),
    (
        "approval",
        "↑↓ scroll · ←→ Enter or y/a/n/r answer (Enter: allow once) · Esc later",
    ),
];

/// The widest key column of the help modal (longer keys push their description along).
const HELP_KEY_MAX: usize = 22;

/// A help description word-wrapped to `width` (a word longer than a row is cut).
fn help_rows(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut rows = vec![String::new()];
    for word in text.split(' ') {
        let row = rows.last_mut().expect("one row");
        let (rw, ww) = (row.chars().count(), word.chars().count());
        if rw > 0 && rw + 1 + ww > width {
            rows.push(String::new());
        }
        let row = rows.last_mut().expect("one row");
        if !row.is_empty() {
            row.push(' ');
        }
        row.push_str(word);
    }
    rows
}

pub(super) fn draw(frame: &mut Frame, app: &App, m: &Modal, screen: Rect) {
    match m {
        Modal::Help => {
            // Keys first (no heading), then commands; each description wraps under itself
            // so nothing is cut at 80 columns, and the box scrolls when taller than the
            // screen.
            let area_w = screen.width.saturating_sub(2).min(78);
            let text_w = (area_w.saturating_sub(2) as usize).max(24);
            let mut lines = Vec::new();
            let commands: Vec<_> = command::available(app.sharing().is_some()).collect();
            // The key column fits the longest key or command (and a space after it).
            let key_w = HELP_KEYS
                .iter()
                .map(|(k, _)| k.chars().count())
                .chain(commands.iter().map(|c| c.name().chars().count()))
                .max()
                .unwrap_or(0)
                .min(HELP_KEY_MAX)
                + 3;
            let entry = |lines: &mut Vec<Line<'static>>, k: &str, what: &str, key_style| {
                for (i, row) in help_rows(what, text_w.saturating_sub(key_w))
                    .into_iter()
                    .enumerate()
                {
                    let lead = if i == 0 {
                        format!("  {k:<w$}", w = key_w - 2)
                    } else {
                        " ".repeat(key_w)
                    };
                    lines.push(Line::from(vec![
                        Span::styled(lead, key_style),
                        Span::raw(row),
                    ]));
                }
            };
            for (k, what) in HELP_KEYS {
                entry(&mut lines, k, what, Style::new().fg(ACCENT));
            }
            lines.push(Line::styled("Commands", Style::new().bold()));
            for c in commands {
                entry(&mut lines, c.name(), c.help(), Style::new());
            }
            let want = lines.len() as u16 + 2;
            let area = screen.centered(area_w, want);
            let visible = area.height.saturating_sub(2) as usize;
            let max = lines.len().saturating_sub(visible);
            let from = app.help_scroll().min(max);
            let title = if max > 0 {
                "Help (↑↓ PgDn scroll, Esc close)"
            } else {
                "Help (Esc close)"
            };
            let inner = boxed(frame, area, title, ACCENT);
            let shown: Vec<Line> = lines.into_iter().skip(from).collect();
            frame.render_widget(Paragraph::new(shown), tr(inner));
        }
        Modal::ConfirmQuit => {
            let inner = boxed(frame, screen.centered(62, 8), "Quit?", Color::Yellow);
            let working = app
                .sessions()
                .iter()
                .filter(|s| s.status != SessionStatus::Idle)
                .count();
            let lines = vec![
                Line::styled(
                    format!("{working} session(s) still working."),
                    Style::new().bold(),
                ),
                Line::raw("If this TUI started the backend, quitting stops their work;"),
                Line::raw("with `ax-code attach` the backend keeps running them."),
                Line::raw(""),
                Line::from(vec![
                    Span::styled(
                        " [y] Quit ",
                        Style::new().fg(Color::Black).bg(Color::Yellow),
                    ),
                    Span::raw("  "),
                    Span::styled(" [n] Stay ", Style::new().fg(Color::Yellow)),
                    Span::styled("   Enter quits · Esc stays", DIM),
                ]),
            ];
            frame.render_widget(Paragraph::new(lines), tr(inner));
        }
        Modal::McpConfig => {
            let Some(config) = app.mcp_config() else {
                return;
            };
            let width = screen.width.saturating_sub(4).clamp(20, 100);
            // Long lines (the path) wrap inside the box rather than being cut.
            let text_w = width.saturating_sub(2);
            let mut lines = vec![
                Line::raw("Add this to your MCP client's configuration:"),
                Line::raw(""),
            ];
            for line in config.lines() {
                for row in path_rows(line, text_w) {
                    lines.push(Line::styled(row.to_owned(), Style::new().bold()));
                }
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "c copy (OSC 52) · Esc close · never share the endpoint file's content",
                DIM,
            ));
            let h = lines.len() as u16 + 2;
            let inner = boxed(
                frame,
                screen.centered(width, h),
                "TUIMCP client config",
                ACCENT,
            );
            frame.render_widget(Paragraph::new(lines), tr(inner));
        }
        Modal::ConfirmDelete { session, title } => {
            let inner = boxed(frame, screen.centered(64, 7), "Delete session?", Color::Red);
            let name = if title.is_empty() {
                "(untitled)"
            } else {
                title
            };
            let lines = vec![
                Line::styled(clip(name, 60), Style::new().bold()),
                Line::styled(session.to_string(), DIM),
                Line::raw("Its transcript is deleted too; a running command is stopped."),
                Line::styled("y or Enter: delete · n or Esc: keep", DIM),
            ];
            frame.render_widget(Paragraph::new(lines), tr(inner));
        }
        Modal::AgentPicker {
            agents,
            default,
            selected,
        } => {
            let inner = boxed(
                frame,
                agent_picker_box(screen, agents.len()),
                "New session: which agent?",
                ACCENT,
            );
            let mut lines = Vec::new();
            for (i, a) in agents.iter().enumerate() {
                let style = if i == *selected {
                    Style::new().fg(Color::Black).bg(ACCENT)
                } else {
                    Style::new()
                };
                let mark = if &a.name == default { " (default)" } else { "" };
                lines.push(Line::styled(
                    format!(
                        " {:<16} {:<6} {}{mark}",
                        clip(&a.name, 16),
                        a.kind.as_str(),
                        a.origin.as_str()
                    ),
                    style,
                ));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "↑↓ choose · Enter or click create · Esc cancel",
                DIM,
            ));
            frame.render_widget(Paragraph::new(lines), tr(inner));
        }
        Modal::AgentInfo => {
            let Some(s) = app.open_session() else {
                return;
            };
            let mut lines = vec![Line::from(vec![
                Span::raw("agent: "),
                Span::styled(s.agent.clone(), Style::new().bold()),
                Span::styled(format!("  ({})", s.status), DIM),
            ])];
            let state = s.agent_state.as_ref();
            match state.and_then(|a| a.modes.as_ref()) {
                Some(m) => {
                    lines.push(Line::raw("modes (m switches):"));
                    for mode in &m.available {
                        let cur = mode.id == m.current;
                        lines.push(Line::styled(
                            format!(
                                " {} {} — {}",
                                if cur { "●" } else { " " },
                                mode.id,
                                mode.name
                            ),
                            if cur {
                                Style::new().bold()
                            } else {
                                Style::new()
                            },
                        ));
                    }
                }
                None if s.agent == "shell" => {
                    lines.push(Line::styled("runs each prompt as one shell command", DIM))
                }
                None => lines.push(Line::styled(
                    "modes: none offered (or the agent has not started yet)",
                    DIM,
                )),
            }
            if s.status == SessionStatus::NeedsAuth
                || state.is_some_and(|a| !a.auth_methods.is_empty())
            {
                lines.push(Line::styled(
                    "needs authentication; the agent offers:",
                    Style::new().fg(Color::Red).bold(),
                ));
                for m in state.map(|a| a.auth_methods.as_slice()).unwrap_or_default() {
                    let desc = m.description.as_deref().unwrap_or("");
                    lines.push(Line::raw(format!(
                        " - {} ({}) {}",
                        crate::markdown::sanitize(&m.name),
                        crate::markdown::sanitize(&m.id),
                        crate::markdown::sanitize(desc)
                    )));
                }
                lines.push(Line::styled(
                    "set what it asks for in the agent's `env` in the agents configuration, \
                     then prompt again",
                    DIM,
                ));
            }
            if !s.standing.is_empty() {
                lines.push(Line::raw("standing “always” answers (r revokes them all):"));
                for g in &s.standing {
                    lines.push(Line::raw(format!(
                        " - {} (since {} UTC)",
                        crate::markdown::sanitize(&g.title),
                        format_utc_minutes(g.granted)
                    )));
                }
            }
            lines.push(Line::styled("Esc close", DIM));
            let width = screen.width.saturating_sub(4).clamp(20, 90);
            let h = lines.len() as u16 + 2;
            let inner = boxed(frame, screen.centered(width, h), "Agent", ACCENT);
            frame.render_widget(
                Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
                tr(inner),
            );
        }
        Modal::Modes { selected } => {
            let modes = app
                .open_session()
                .and_then(|s| s.agent_state.as_ref())
                .and_then(|a| a.modes.as_ref());
            let Some(m) = modes else {
                return;
            };
            let h = m.available.len() as u16 + 4;
            let inner = boxed(frame, screen.centered(64, h), "Mode", ACCENT);
            let mut lines = Vec::new();
            for (i, mode) in m.available.iter().enumerate() {
                let style = if i == *selected {
                    Style::new().fg(Color::Black).bg(ACCENT)
                } else {
                    Style::new()
                };
                let cur = if mode.id == m.current {
                    " (current)"
                } else {
                    ""
                };
                lines.push(Line::styled(
                    format!(" {} — {}{cur}", mode.id, mode.name),
                    style,
                ));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled("↑↓ choose · Enter switch · Esc cancel", DIM));
            frame.render_widget(Paragraph::new(lines), tr(inner));
        }
        Modal::Queue { selected } => tray::queue_modal(frame, app, *selected, screen),
        Modal::Approvals { selected } => tray::inbox_modal(frame, app, *selected, screen),
        Modal::Config { option, selected } => {
            tray::config_modal(frame, app, option.as_deref(), *selected, screen)
        }
        Modal::Palette { query, selected } => {
            let entries = palette_entries(query, app.sharing().is_some());
            // More commands than rows: the list scrolls with the selection.
            let rows = usize::from(screen.height.saturating_sub(6)).max(1);
            let from = crate::complete::window_start(*selected, entries.len(), rows);
            let h = entries.len().clamp(1, rows) as u16 + 4;
            let inner = boxed(frame, screen.centered(52, h), "Commands", ACCENT);
            let mut lines = vec![
                Line::from(vec![
                    Span::styled("> ", Style::new().fg(ACCENT)),
                    Span::raw(query.clone()),
                ]),
                Line::raw(""),
            ];
            if entries.is_empty() {
                lines.push(Line::styled("no match", DIM));
            }
            for (i, c) in entries.iter().enumerate().skip(from).take(rows) {
                let (name, help) = (c.name(), c.help());
                let style = if i == *selected {
                    Style::new().fg(Color::Black).bg(ACCENT)
                } else {
                    Style::new()
                };
                lines.push(Line::styled(format!(" {name:<16} {help}"), style));
            }
            frame.render_widget(Paragraph::new(lines), tr(inner));
        }
    }
}
