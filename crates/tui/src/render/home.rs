//! The home route: the session list, what needs the person first (docs/tui.md §2, §2b).

use ax_protocol::{SessionStatus, time::format_utc_minutes};
use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::{ACCENT, DIM, clip, tr};
use crate::app::App;
use crate::attention::Attention;
use crate::layout::Rect;

pub(super) fn draw(frame: &mut Frame, app: &App, r: Rect) {
    let (needs, unread) = app.attention_counts();
    let mut title = format!(" Sessions ({}) ", app.sessions().len());
    if needs > 0 {
        let verb = if needs == 1 { "needs" } else { "need" };
        title.push_str(&format!("· {needs} {verb} you "));
    }
    if unread > 0 {
        title.push_str(&format!("· {unread} unread "));
    }
    let block = Block::bordered()
        .title(Span::styled(title, Style::new().bold()))
        .border_style(Style::new().fg(ACCENT));
    frame.render_widget(block, tr(r));
    let inner = r.inner();
    if app.sessions().is_empty() {
        let text = if app.ready() {
            "No sessions yet. Type a prompt and press Enter, or press Ctrl+N."
        } else {
            "Loading sessions…"
        };
        frame.render_widget(Paragraph::new(Span::styled(text, DIM)), tr(inner));
        return;
    }
    let selected = app.selected_index();
    let cols = list_columns(app.sessions(), inner.width as usize);
    let lines: Vec<Line> = app
        .sessions()
        .iter()
        .enumerate()
        .skip(app.list_offset)
        .take(inner.height as usize)
        .map(|(i, s)| {
            let attention = app.attention(s);
            let marker = attention.marker(s.status);
            let (marker, mstyle) = match attention {
                _ if app.is_deleting(&s.id) => ("deleting…", Style::new().fg(Color::Red)),
                Attention::NeedsYou if s.status == SessionStatus::NeedsAuth => {
                    (marker, Style::new().fg(Color::Red))
                }
                Attention::NeedsYou => (marker, Style::new().fg(Color::Magenta).bold()),
                Attention::Working => (marker, Style::new().fg(Color::Yellow)),
                Attention::Unread => (marker, Style::new().fg(Color::Green).bold()),
                Attention::Failed => (marker, Style::new().fg(Color::Red).bold()),
                Attention::Idle => (marker, Style::new()),
            };
            let title = if s.title.is_empty() {
                "(untitled)".to_owned()
            } else {
                crate::markdown::sanitize(&s.title)
            };
            let agent = crate::markdown::sanitize(&s.agent);
            let (title_w, agent_w) = (cols.title, cols.agent);
            // The queue's mark takes the end of the title's column, never the other columns.
            let mark = queue_mark(app.queues.get(&s.id)).unwrap_or_default();
            let mark = clip(&mark, title_w / 2);
            let mark_w = mark.chars().count();
            let shown = clip(&title, title_w.saturating_sub(mark_w));
            let pad = title_w.saturating_sub(shown.chars().count());
            let mut spans = vec![
                Span::styled(if Some(i) == selected { "▶ " } else { "  " }, ACCENT),
                Span::styled(marker, mstyle),
                Span::raw(" "),
                Span::styled(shown, Style::new().bold()),
                Span::styled(format!("{mark:<pad$}"), Style::new().fg(Color::Yellow)),
                Span::styled(
                    format!(" {:<agent_w$}", clip(&agent, agent_w)),
                    Style::new().fg(Color::Cyan),
                ),
                // Last activity: the list is sorted by it.
                Span::styled(format!(" {}", format_utc_minutes(s.updated)), DIM),
            ];

            if cols.id {
                spans.push(Span::styled(format!("  {}", s.id), DIM));
            }
            let row = Line::from(spans);
            if Some(i) == selected {
                row.style(Style::new().bg(Color::Indexed(236)))
            } else {
                row
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), tr(inner));
}

/// What waits in a session's queue, as heard (`queue.updated` events and the queues loaded
/// for shown sessions): ` · 2 queued`, with `, paused` when the queue waits for the person.
fn queue_mark(queue: Option<&ax_protocol::queue::PromptQueue>) -> Option<String> {
    let queue = queue?;
    let paused = queue.paused.is_some();
    match queue.items.len() {
        0 if paused => Some(" · queue paused".to_owned()),
        0 => None,
        n if paused => Some(format!(" · {n} queued, paused")),
        n => Some(format!(" · {n} queued")),
    }
}

/// Widths of the session list's columns: the agent column fits the longest agent name (at
/// most 12), the ID shows only where the title still gets [`TITLE_MIN`] columns, and the
/// title gets the rest.
pub struct ListColumns {
    /// Columns for the title.
    pub title: usize,
    /// Columns for the agent's name.
    pub agent: usize,
    /// Whether the session ID shows.
    pub id: bool,
}

/// The title's columns below which the ID gives way.
pub const TITLE_MIN: usize = 40;

/// See [`ListColumns`].
pub fn list_columns(sessions: &[ax_protocol::Session], width: usize) -> ListColumns {
    let agent = sessions
        .iter()
        .map(|s| unicode_width::UnicodeWidthStr::width(s.agent.as_str()))
        .max()
        .unwrap_or(5)
        .clamp(5, 12);
    // "▶ " + marker + " " + title + " " + agent + " " + time (16).
    let fixed = 2 + 9 + 1 + 1 + agent + 1 + 16;
    let id_w = 2 + 30;
    let id = width >= fixed + TITLE_MIN + id_w;
    let title = width
        .saturating_sub(fixed + if id { id_w } else { 0 })
        .max(8);
    ListColumns { title, agent, id }
}
