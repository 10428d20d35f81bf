//! The tray: rows between the transcript and the composer that belong to the prompt being
//! written — the open session's queued prompts (docs/tui.md §3d) — and the `/queue` list
//! modal. Drawing only; what the rows say comes from the state (`queue.rs`).

use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::App;
use crate::layout::Rect;
use crate::queue::QueueRow;
use crate::render::{boxed, tr};

const ACCENT: Color = Color::Cyan;
const DIM: Style = Style::new().fg(Color::DarkGray);
const QUEUED: Style = Style::new().fg(Color::Black).bg(Color::Yellow);
const EDITING: Style = Style::new().fg(Color::Black).bg(Color::LightMagenta);

impl App {
    /// Rows the tray takes above the composer now (0: none).
    pub fn tray_rows(&self) -> u16 {
        u16::try_from(self.queue_rows().len()).unwrap_or(0)
    }
}

/// Draws the tray into `r` (its rows as [`App::tray_rows`] counts them).
pub(crate) fn draw(frame: &mut Frame, app: &App, r: Rect) {
    let lines: Vec<Line> = app.queue_rows().into_iter().map(queue_line).collect();
    frame.render_widget(Paragraph::new(lines), tr(r));
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
