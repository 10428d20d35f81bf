//! The tray: rows between the transcript and the composer that belong to the prompt being
//! written — the open session's queued prompts (docs/tui.md §3d) — and the `/queue` list
//! modal. Drawing only; what the rows say comes from the state (`queue.rs`).

use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{boxed, tr};
use crate::app::App;
use crate::complete::{Completion, Source, window_start};
use crate::layout::Rect;
use crate::queue::QueueRow;

const ACCENT: Color = Color::Cyan;
const DIM: Style = Style::new().fg(Color::DarkGray);
const QUEUED: Style = Style::new().fg(Color::Black).bg(Color::Yellow);
const EDITING: Style = Style::new().fg(Color::Black).bg(Color::LightMagenta);

/// Draws the tray into `r` (its rows as [`App::tray_rows`] counts them).
pub(crate) fn draw(frame: &mut Frame, app: &App, r: Rect) {
    let list = app.completions();
    let files = app.picker_files();
    let rows = usize::from(r.height);
    let lines: Vec<Line> = if !list.is_empty() {
        completion_lines(&list, app.completion_selected(), rows)
    } else if !files.is_empty() {
        file_lines(&files, app.picker_selected(), rows, app.picker_truncated())
    } else {
        app.queue_rows().into_iter().map(queue_line).collect()
    };
    frame.render_widget(Paragraph::new(lines), tr(r));
}

/// The `@` picker: the files, best first; Tab or Enter attaches the highlighted one.
fn file_lines(files: &[&str], selected: usize, rows: usize, truncated: bool) -> Vec<Line<'static>> {
    let from = window_start(selected, files.len(), rows.max(1));
    files
        .iter()
        .enumerate()
        .skip(from)
        .take(rows)
        .map(|(i, f)| {
            let style = if i == selected {
                Style::new().fg(Color::Black).bg(ACCENT)
            } else {
                Style::new()
            };
            let tail = if i == selected {
                if truncated {
                    "  Tab attach · the project has more files than listed"
                } else {
                    "  Tab attach · Esc hide"
                }
            } else {
                ""
            };
            Line::from(vec![
                Span::styled(format!(" @ {} ", crate::markdown::sanitize(f)), style),
                Span::styled(tail, DIM),
            ])
        })
        .collect()
}

/// The `/` list: name, what it does, the agent's input hint, and whose it is.
fn completion_lines(list: &[Completion], selected: usize, rows: usize) -> Vec<Line<'static>> {
    let from = window_start(selected, list.len(), rows.max(1));
    let width = list
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0);
    list.iter()
        .enumerate()
        .skip(from)
        .take(rows)
        .map(|(i, c)| {
            let style = if i == selected {
                Style::new().fg(Color::Black).bg(ACCENT)
            } else {
                Style::new()
            };
            let hint = c
                .hint
                .as_ref()
                .map(|h| format!(" [{h}]"))
                .unwrap_or_default();
            let whose = match c.source {
                Source::Tui => "",
                Source::Agent { shadowed: false } => "  · agent",
                Source::Agent { shadowed: true } => "  · agent (ax-code's runs)",
            };
            Line::from(vec![
                Span::styled(format!(" {:<width$}  ", c.name), style),
                Span::raw(c.description.clone()),
                Span::styled(hint, DIM),
                Span::styled(whose, Style::new().fg(Color::Magenta)),
            ])
        })
        .collect()
}

fn queue_line(row: QueueRow) -> Line<'static> {
    match row {
        QueueRow::Paused(text) => {
            Line::styled(format!(" ⏸ {text}"), Style::new().fg(Color::Yellow).bold())
        }
        QueueRow::Item {
            position,
            text,
            editing,
        } => {
            let (label, style) = if editing {
                (format!(" editing {position} "), EDITING)
            } else {
                (format!(" queued {position} "), QUEUED)
            };
            Line::from(vec![
                Span::raw(" "),
                Span::styled(label, style),
                Span::raw(" "),
                Span::raw(text),
            ])
        }
        QueueRow::More(n) => Line::styled(format!("   … and {n} more queued (/queue)"), DIM),
    }
}

/// The `/queue` list: every queued prompt, the keys that act on the highlighted one.
pub(crate) fn queue_modal(frame: &mut Frame, app: &App, selected: usize, screen: Rect) {
    let Some(q) = app.open_queue() else {
        return;
    };
    let paused = u16::from(q.paused.is_some());
    let h = (q.items.len() as u16).saturating_add(4 + paused);
    let inner = boxed(frame, screen.centered(76, h), "Queued prompts", ACCENT);
    let mut lines = Vec::new();
    if let Some(why) = &q.paused {
        lines.push(Line::styled(
            format!(" ⏸ paused: {}", crate::markdown::sanitize(why)),
            Style::new().fg(Color::Yellow).bold(),
        ));
    }
    for (i, item) in q.items.iter().enumerate() {
        let style = if i == selected.min(q.items.len().saturating_sub(1)) {
            Style::new().fg(Color::Black).bg(ACCENT)
        } else {
            Style::new()
        };
        lines.push(Line::styled(
            format!(" {}. {}", i + 1, crate::queue::summary(&item.prompt)),
            style,
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "↑↓ choose · Enter edit · s send now · x cancel · r resume · Esc close",
        DIM,
    ));
    frame.render_widget(Paragraph::new(lines), tr(inner));
}

/// The config picker: the options with their current values, or one option's choices.
pub(crate) fn config_modal(
    frame: &mut Frame,
    app: &App,
    option: Option<&str>,
    selected: usize,
    screen: Rect,
) {
    let options = app.config_options();
    let (title, rows): (String, Vec<(String, bool)>) = match option {
        None => (
            "Agent options".into(),
            options
                .iter()
                .map(|o| {
                    let kind = match o.kind {
                        ax_protocol::ConfigKind::Boolean => "Enter switches",
                        ax_protocol::ConfigKind::Select => "Enter chooses",
                    };
                    let text = format!(
                        " {}: {}  ({kind})",
                        crate::markdown::sanitize(&o.name),
                        crate::markdown::sanitize(&crate::config::current_label(o))
                    );
                    (text, false)
                })
                .collect(),
        ),
        Some(id) => {
            let Some(o) = options.iter().find(|o| o.id == id) else {
                return;
            };
            let rows = o
                .options
                .iter()
                .map(|c| {
                    let current =
                        o.current_value == ax_protocol::ConfigValue::Text(c.value.clone());
                    let desc = c
                        .description
                        .as_deref()
                        .map(|d| format!(" — {}", crate::markdown::sanitize(d)))
                        .unwrap_or_default();
                    let text = format!(" {}{desc}", crate::markdown::sanitize(&c.name));
                    (text, current)
                })
                .collect();
            (crate::markdown::sanitize(&o.name), rows)
        }
    };
    let visible = usize::from(screen.height.saturating_sub(6)).max(1);
    let from = crate::complete::window_start(selected, rows.len(), visible);
    let h = (rows.len().min(visible) as u16).saturating_add(4);
    let inner = boxed(frame, screen.centered(72, h), &title, ACCENT);
    let mut lines = Vec::new();
    for (i, (text, current)) in rows.iter().enumerate().skip(from).take(visible) {
        let style = if i == selected {
            Style::new().fg(Color::Black).bg(ACCENT)
        } else {
            Style::new()
        };
        let mark = if *current { " (current)" } else { "" };
        lines.push(Line::styled(format!("{text}{mark}"), style));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("↑↓ choose · Enter set · Esc back", DIM));
    frame.render_widget(Paragraph::new(lines), tr(inner));
}

/// The approvals inbox: every waiting approval, newest first (`inbox.rs`).
pub(crate) fn inbox_modal(frame: &mut Frame, app: &App, selected: usize, screen: Rect) {
    let rows = app.inbox_rows();
    let visible = usize::from(screen.height.saturating_sub(6)).max(1);
    let selected = selected.min(rows.len().saturating_sub(1));
    let from = crate::complete::window_start(selected, rows.len(), visible);
    let h = (rows.len().clamp(1, visible) as u16).saturating_add(4);
    let inner = boxed(frame, screen.centered(96, h), "Approvals waiting", ACCENT);
    let mut lines = Vec::new();
    if rows.is_empty() {
        lines.push(Line::raw(format!(" {}", crate::inbox::EMPTY)));
    }
    for (i, row) in rows.iter().enumerate().skip(from).take(visible) {
        let style = if i == selected {
            Style::new().fg(Color::Black).bg(ACCENT)
        } else {
            Style::new()
        };
        lines.push(Line::styled(
            format!(" {} · {} · {}", row.title, row.agent, row.summary),
            style,
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "↑↓ choose · Enter open its session · Esc close",
        DIM,
    ));
    frame.render_widget(Paragraph::new(lines), tr(inner));
}
