//! Drawing: a thin, side-effect-free layer that reads [`App`] and writes a ratatui frame.
//!
//! Cost follows what is visible: the transcript hands over only the rows in the window, the
//! session list only the rows that fit.

use ratatui::Frame;
use ratatui::layout::Rect as TRect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::app::{App, Connection, NoticeKind, Overlay, Route};
use crate::layout::{
    BAR_LABEL, COMPOSER_MAX_ROWS, COPY_LABEL, Layout, REVOKE_LABEL, Rect, chip_label, path_rows,
};

mod approval;
pub mod bars;
mod home;
mod modal;
mod session;
pub mod theme;
mod tray;

pub use home::{ListColumns, TITLE_MIN, list_columns};
pub use modal::HELP_KEYS;
pub use session::usage_meter;

pub(super) const ACCENT: Color = Color::Cyan;
pub(super) const DIM: Style = Style::new().fg(Color::DarkGray);

pub(crate) fn tr(r: Rect) -> TRect {
    TRect::new(r.x, r.y, r.width, r.height)
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    let layout = app.layout();
    header(frame, app, layout.header);
    if let Some(bar) = layout.bar {
        sharing_bar(frame, app, bar, &layout);
    }
    match app.route() {
        Route::Home => home::draw(frame, app, layout.main),
        Route::Session(_) => session::draw(frame, app, layout.main),
    }
    if let Some(tray) = layout.tray {
        tray::draw(frame, app, tray);
    }
    if let Some(chips) = layout.chips {
        chips_row(frame, app, chips);
    }
    composer(frame, app, layout.composer);
    status_line(frame, app, layout.status);
    let screen = Rect::new(0, 0, area.width, area.height);
    match app.overlay() {
        Some(o) => overlay(frame, app, o, screen),
        None => {
            if let Some(m) = app.modal() {
                modal::draw(frame, app, m, screen);
            } else if app.pending_approval().is_some() {
                approval(frame, app, screen);
            }
        }
    }
}

fn header(frame: &mut Frame, app: &App, r: Rect) {
    let (conn, style) = match app.connection() {
        Connection::Connected => ("● connected".to_owned(), Style::new().fg(Color::Green)),
        Connection::Connecting => ("◌ connecting…".to_owned(), Style::new().fg(Color::Yellow)),
        Connection::Reconnecting { down_for } => (
            format!("◌ reconnecting… (down {}s)", down_for.as_secs()),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
    };
    let left = Line::from(vec![
        Span::styled(" ax-code ", Style::new().fg(Color::Black).bg(ACCENT).bold()),
        Span::raw(" "),
        Span::styled(app.workspace().to_owned(), DIM),
    ]);
    frame.render_widget(Paragraph::new(left), tr(r));
    // While the mouse is the terminal's, say so and how to get it back (docs/tui.md §3c).
    let (conn, style) = if app.mouse_capture() {
        (conn, style)
    } else {
        (format!("mouse off · F2  {conn}"), style)
    };
    let w = conn.chars().count() as u16 + 1;
    if r.width > w {
        let cr = Rect::new(r.x + r.width - w, r.y, w, 1);
        frame.render_widget(Paragraph::new(Span::styled(conn, style)), tr(cr));
    }
}

/// The TUIMCP bar: the label and the buttons on its first row, the whole endpoint path beside
/// the label or, when it does not fit there, on rows of its own (never clipped, never under a
/// button).
fn sharing_bar(frame: &mut Frame, app: &App, r: Rect, layout: &Layout) {
    let Some(sharing) = app.sharing() else {
        return;
    };
    let bar = Style::new().fg(Color::Black).bg(Color::Yellow);
    frame.render_widget(Paragraph::new("").style(bar), tr(r));
    let label = Rect::new(r.x, r.y, r.width, 1);
    frame.render_widget(
        Paragraph::new(Span::styled(BAR_LABEL, bar.bold())),
        tr(label),
    );
    if let Some(p) = layout.bar_path {
        let lines: Vec<Line> = path_rows(&sharing.endpoint_path, p.width)
            .into_iter()
            .take(p.height as usize)
            .map(|row| Line::styled(row.to_owned(), bar))
            .collect();
        frame.render_widget(Paragraph::new(lines), tr(p));
    }
    if let Some(b) = layout.copy {
        let button = Style::new().fg(Color::Black).bg(Color::White).bold();
        frame.render_widget(Paragraph::new(Span::styled(COPY_LABEL, button)), tr(b));
    }
    if let Some(b) = layout.revoke {
        let button = Style::new().fg(Color::White).bg(Color::Red).bold();
        frame.render_widget(Paragraph::new(Span::styled(REVOKE_LABEL, button)), tr(b));
    }
}

fn chips_row(frame: &mut Frame, app: &App, r: Rect) {
    let chip = Style::new().fg(Color::Black).bg(Color::Blue);
    let mut spans = Vec::new();
    for a in app.composer().attachments() {
        spans.push(Span::styled(chip_label(a), chip));
        spans.push(Span::raw(" "));
    }
    for i in app.composer().images() {
        let name = crate::attach::file_name(&i.path).unwrap_or_default();
        let label = crate::attach::image_chip(0, i.mime, i.bytes, &Some(name));
        spans.push(Span::styled(format!(" {label} "), chip));
        spans.push(Span::raw(" "));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), tr(r));
}

fn composer(frame: &mut Frame, app: &App, r: Rect) {
    let c = app.composer();
    if let Some(search) = app.history_search() {
        bars::history_search(frame, app, search, r);
        return;
    }
    if let Some(find) = app.find() {
        bars::find(frame, find, r);
        return;
    }
    let title = match (c.submitting, app.editing_queued().is_some()) {
        (true, _) => " Prompt (sending…) ",
        (false, true) => " Editing a queued prompt · Enter saves · Esc leaves it as it was ",
        (false, false) if app.should_queue() => " Prompt · Enter queues it ",
        (false, false) => " Prompt ",
    };
    let block = Block::bordered()
        .title(title)
        .border_style(Style::new().fg(Color::Gray));
    frame.render_widget(block, tr(r));
    let inner = r.inner();
    if inner.height == 0 {
        return;
    }
    if c.draft().is_empty() {
        let hint = composer_hint(app);
        let style = if app.awaiting_feedback() {
            Style::new().fg(Color::Magenta)
        } else {
            DIM
        };
        frame.render_widget(Paragraph::new(Span::styled(hint, style)), tr(inner));
    } else {
        // The draft wraps; show the rows around the cursor (the tail unless it is above).
        let w = (inner.width as usize).max(1);
        let all = c.visual_rows(w);
        let rows = COMPOSER_MAX_ROWS.min(inner.height as usize).max(1);
        let (cur_row, cur_col) = c.cursor_visual(w);
        let from = all.len().saturating_sub(rows).min(cur_row);
        let lines: Vec<Line> = all[from..(from + rows).min(all.len())]
            .iter()
            .map(|&(a, b)| Line::raw(&c.draft()[a..b]))
            .collect();
        frame.render_widget(Paragraph::new(lines), tr(inner));
        if app.overlay().is_none() && app.modal().is_none() && app.pending_approval().is_none() {
            let x = inner.x + cur_col.min(w.saturating_sub(1)) as u16;
            let y = inner.y + (cur_row - from) as u16;
            frame.set_cursor_position((x, y));
        }
    }
}

/// The empty composer's placeholder, naming the open session's agent (the `shell` agent
/// takes a command); after an option that asks for feedback, it asks for that.
pub fn composer_hint(app: &App) -> String {
    let agent = app
        .open_session()
        .map(|s| crate::markdown::sanitize(&s.agent));
    match (app.route(), agent) {
        (Route::Home, _) => "Type a prompt to start a new session, or / for commands".into(),
        (Route::Session(_), Some(a)) if app.awaiting_feedback() => {
            format!("Tell {a} what to do differently, then press Enter")
        }
        (Route::Session(_), Some(a)) if a == "shell" => {
            "Type a shell command for the agent, or / for commands".into()
        }
        (Route::Session(_), Some(a)) => format!("Ask {a}…, or / for commands"),
        (Route::Session(_), None) => "Type a prompt, or / for commands".into(),
    }
}

fn status_line(frame: &mut Frame, app: &App, r: Rect) {
    let line = match app.notice() {
        Some(n) => {
            let style = match n.kind {
                NoticeKind::Info => Style::new().fg(Color::Black).bg(Color::Gray),
                NoticeKind::Error => Style::new().fg(Color::White).bg(Color::Red).bold(),
                NoticeKind::Agent => Style::new().fg(Color::Black).bg(Color::Magenta).bold(),
            };
            Line::from(Span::styled(format!(" {} ", n.text), style))
        }
        None if app.connection() != Connection::Connected && app.down_cause().is_some() => {
            // While the backend does not answer: where, and why.
            Line::from(Span::styled(
                format!(
                    " {}: {} ",
                    app.backend_url(),
                    app.down_cause().unwrap_or_default()
                ),
                Style::new().fg(Color::Yellow),
            ))
        }
        None => {
            let hints: &[(&str, &str)] = match app.route() {
                Route::Home => &[
                    ("↑↓", "select"),
                    ("Enter", "open/send"),
                    ("^N", "new"),
                    ("^P", "commands"),
                    ("^C", "quit"),
                ],
                Route::Session(_) if app.find().is_some() => &[
                    ("Enter/^N", "next"),
                    ("^P", "previous"),
                    ("PgUp/Dn", "scroll"),
                    ("Esc", "close find"),
                ],
                Route::Session(_) if app.pending_approval().is_some() => &[
                    ("Enter", "confirm"),
                    ("←→", "choose"),
                    ("y/a/n/r", "answer"),
                    ("Esc", "later"),
                ],
                Route::Session(_) if app.deferred_approval().is_some() => &[
                    ("Enter", "answer the approval"),
                    ("PgUp/Dn", "scroll"),
                    ("Esc", "sessions"),
                ],
                Route::Session(_) if app.open_session_busy() => &[
                    ("Esc", "abort the turn"),
                    ("PgUp/Dn", "scroll"),
                    ("/sessions", "leave it running"),
                    ("^P", "commands"),
                ],
                Route::Session(_) if app.transcript().focus().is_some() => &[
                    ("Enter", "open/close"),
                    ("Tab/S-Tab", "next/previous part"),
                    ("Esc", "unfocus"),
                    ("PgUp/Dn", "scroll"),
                ],
                Route::Session(_) => &[
                    ("Esc", "sessions"),
                    ("↑↓ PgUp/Dn", "scroll"),
                    ("Tab", "parts"),
                    ("Enter", "send"),
                    ("^P", "commands"),
                ],
            };
            let mut spans = Vec::new();
            for (k, what) in hints {
                spans.push(Span::styled(
                    format!(" {k}"),
                    Style::new().fg(ACCENT).bold(),
                ));
                spans.push(Span::styled(format!(" {what} "), DIM));
            }
            Line::from(spans)
        }
    };
    frame.render_widget(Paragraph::new(line), tr(r));
}

pub(crate) fn boxed(frame: &mut Frame, r: Rect, title: &str, color: Color) -> Rect {
    frame.render_widget(Clear, tr(r));
    let block = Block::bordered()
        .title(Span::styled(format!(" {title} "), Style::new().bold()))
        .border_style(Style::new().fg(color));
    frame.render_widget(block, tr(r));
    r.inner()
}

fn approval(frame: &mut Frame, app: &App, _screen: Rect) {
    if let Some(p) = app.pending_approval() {
        approval::draw(frame, app, p);
    }
}

fn overlay(frame: &mut Frame, app: &App, o: Overlay, screen: Rect) {
    frame.render_widget(Clear, tr(screen));
    let (title, text) = match o {
        Overlay::Startup => (
            "ax-code",
            match app.connection() {
                Connection::Connected => "Loading sessions…".to_owned(),
                Connection::Connecting => "Connecting to the backend…".to_owned(),
                Connection::Reconnecting { down_for } => {
                    format!("Backend unreachable for {}s; retrying…", down_for.as_secs())
                }
            },
        ),
        Overlay::Exit => ("ax-code", "Shutting down…".to_owned()),
    };
    let detailed = o == Overlay::Startup && !app.backend_url().is_empty();
    let width = if detailed {
        screen.width.saturating_sub(4).clamp(44, 100)
    } else {
        44
    };
    let mut lines = vec![Line::raw(""), Line::raw(text).centered()];
    if detailed {
        lines.push(Line::styled(clip(app.backend_url(), width as usize - 2), DIM).centered());
        if let Some(cause) = app.down_cause() {
            lines.push(
                Line::styled(
                    clip(cause, width as usize - 2),
                    Style::new().fg(Color::Yellow),
                )
                .centered(),
            );
        }
    }
    let inner = boxed(
        frame,
        screen.centered(width, lines.len() as u16 + 3),
        title,
        ACCENT,
    );
    frame.render_widget(Paragraph::new(lines), tr(inner));
}

pub(super) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}
