//! Drawing: a thin, side-effect-free layer that reads [`App`] and writes a ratatui frame.
//!
//! Cost follows what is visible: the transcript hands over only the rows in the window, the
//! session list only the rows that fit.

use ax_protocol::{SessionStatus, time::format_utc_minutes};
use ratatui::Frame;
use ratatui::layout::Rect as TRect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::app::{App, Connection, Modal, NoticeKind, Overlay, Route};
use crate::attention::Attention;
use crate::command;
use crate::command::palette_entries;
use crate::layout::{
    BAR_LABEL, COMPOSER_MAX_ROWS, COPY_LABEL, Layout, REVOKE_LABEL, Rect, STANDING_REVOKE,
    agent_picker_box, chip_label, path_rows, standing_revoke_cols,
};
use crate::progress::{format_duration, spinner};
use crate::transcript::LineStyle;

mod approval;
pub mod bars;
mod tray;

const ACCENT: Color = Color::Cyan;
const DIM: Style = Style::new().fg(Color::DarkGray);

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
        Route::Home => home(frame, app, layout.main),
        Route::Session(_) => session(frame, app, layout.main),
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
                modal(frame, app, m, screen);
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

fn home(frame: &mut Frame, app: &App, r: Rect) {
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
            let mut spans = vec![
                Span::styled(if Some(i) == selected { "▶ " } else { "  " }, ACCENT),
                Span::styled(marker, mstyle),
                Span::raw(" "),
                Span::styled(
                    format!("{:<title_w$}", clip(&title, title_w)),
                    Style::new().bold(),
                ),
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

fn session(frame: &mut Frame, app: &App, r: Rect) {
    let s = app.open_session();
    let (state, sstyle) = session_state(app);
    let meter = s
        .and_then(usage_meter)
        .map(|m| format!(" {m} ·"))
        .unwrap_or_default();
    let title = s.map(|s| s.title.as_str()).filter(|t| !t.is_empty());
    let id = match app.route() {
        Route::Session(id) => id.as_str(),
        Route::Home => "",
    };
    let block = Block::bordered()
        .title(Line::from(vec![
            Span::styled(
                format!(
                    " {} ",
                    crate::markdown::sanitize(title.unwrap_or("(untitled)"))
                ),
                Style::new().bold(),
            ),
            // The ID only where it leaves the title its room (docs/tui.md §2).
            Span::styled(
                if (r.width as usize)
                    > state.chars().count()
                        + meter.chars().count()
                        + title.map_or(10, |t| t.chars().count())
                        + s.map_or(0, |s| s.agent.chars().count())
                        + id.len()
                        + 10
                {
                    format!("{id} ")
                } else {
                    String::new()
                },
                DIM,
            ),
            // After the ID, so "title ses_…" stays together for whoever reads the screen.
            Span::styled(
                format!(
                    "· {} ",
                    crate::markdown::sanitize(s.map(|s| s.agent.as_str()).unwrap_or(""))
                ),
                Style::new().fg(Color::Cyan),
            ),
        ]))
        .title(
            Line::from(vec![
                Span::styled(meter.clone(), DIM),
                Span::styled(format!(" {state} "), sstyle),
            ])
            .right_aligned(),
        )
        .border_style(Style::new().fg(ACCENT));
    frame.render_widget(block, tr(r));
    if app.standing_row()
        && let Some(s) = s
    {
        standing(frame, s, r.inner());
    }
    let inner = app.transcript_area();
    if !app.ready() && app.transcript().line_count() == 0 {
        frame.render_widget(Paragraph::new(Span::styled("Loading…", DIM)), tr(inner));
        return;
    }
    if app.transcript().line_count() == 0 {
        let text = match s.map(|s| s.agent.as_str()) {
            Some("shell") | None => {
                "No messages yet. Type a shell command below and press Enter.".to_owned()
            }
            Some(a) => format!(
                "No messages yet. Ask {} below and press Enter.",
                crate::markdown::sanitize(a)
            ),
        };
        frame.render_widget(Paragraph::new(Span::styled(text, DIM)), tr(inner));
        return;
    }
    let rows = app
        .transcript()
        .visible_indexed(inner.height as usize, app.scroll);
    // A running tool call's first cell turns with the clock (the row itself never changes).
    let frame_char = spinner(
        s.and_then(|s| app.progress().elapsed(&s.id, app.now()))
            .unwrap_or_default(),
    );
    let mut spin_buf = [0u8; 4];
    let spin: &str = frame_char.encode_utf8(&mut spin_buf);
    let find = app.find();
    let current = find.and_then(crate::find::Find::current);
    let lines: Vec<Line> = rows
        .into_iter()
        .map(|row| {
            let base = line_style(row.style);
            let running = row.style == LineStyle::Running;
            let matches = find.map_or(&[][..], |f| f.line_matches(row.line));
            let mut at = row.start;
            let mut spans = Vec::new();
            for (i, (text, ansi)) in row.pieces.into_iter().enumerate() {
                let st = base.patch(ansi);
                let from = at;
                at += text.len();
                // Without a match on this line the piece goes as it is (no allocation).
                let cut = if matches.is_empty() {
                    vec![(text, st, None)]
                } else {
                    bars::cut_at_matches(vec![(text, st)], from, matches, current)
                };
                for (text, _, hit) in cut {
                    let st = match hit {
                        Some(true) => st.patch(bars::CURRENT),
                        Some(false) => st.patch(bars::MATCH),
                        None => st,
                    };
                    match text.strip_prefix(crate::turn_view::SPINNER_SLOT) {
                        // After the focus mark, if the part is focused.
                        Some(rest) if running && i <= 1 => {
                            spans.push(Span::styled(spin, st));
                            spans.push(Span::styled(rest, st));
                        }
                        _ => spans.push(Span::styled(text, st)),
                    }
                }
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), tr(inner));
    if app.scroll > 0 && r.width > 20 {
        let label = format!(" ↓ {} more ", app.scroll);
        let w = label.chars().count() as u16;
        let at = Rect::new(r.x + r.width - w - 2, r.y + r.height - 1, w, 1);
        frame.render_widget(
            Paragraph::new(Span::styled(
                label,
                Style::new().fg(Color::Black).bg(ACCENT),
            )),
            tr(at),
        );
    }
}

/// The session's standing "always" answers, one row, with `[Revoke]` at its right.
fn standing(frame: &mut Frame, s: &ax_protocol::Session, inner: Rect) {
    if inner.height == 0 {
        return;
    }
    let n = s.standing.len();
    let first = s.standing.first().map(|g| g.title.as_str()).unwrap_or("");
    let more = if n > 1 {
        format!(" (+{} more)", n - 1)
    } else {
        String::new()
    };
    let cols = standing_revoke_cols(inner.width);
    let room = cols.start.saturating_sub(1) as usize;
    let text = clip(
        &format!(
            "⚑ always allowed: {}{more} · /revoke",
            crate::markdown::sanitize(first)
        ),
        room,
    );
    let style = Style::new().fg(Color::Black).bg(Color::Yellow);
    frame.render_widget(
        Paragraph::new(Span::styled(text, style)).style(style),
        tr(Rect::new(inner.x, inner.y, inner.width, 1)),
    );
    frame.render_widget(
        Paragraph::new(Span::styled(
            STANDING_REVOKE,
            Style::new().fg(Color::White).bg(Color::Red).bold(),
        )),
        tr(Rect::new(
            inner.x + cols.start,
            inner.y,
            cols.end - cols.start,
            1,
        )),
    );
}

/// Token counts short: `950`, `12.3k`, `200k`, `1.5M`.
fn short_count(n: u64) -> String {
    let (v, unit) = match n {
        0..1_000 => return n.to_string(),
        1_000..1_000_000 => (n as f64 / 1_000.0, "k"),
        _ => (n as f64 / 1_000_000.0, "M"),
    };
    let s = format!("{v:.1}");
    format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s))
}

/// The agent's usage as a meter for the session header: `ctx 12.3k/200k 6% · $0.04`
/// (docs/tui.md §2); `None` when the agent reported none.
pub fn usage_meter(s: &ax_protocol::Session) -> Option<String> {
    let u = s.agent_state.as_ref()?.usage.as_ref()?;
    let pct = if u.size > 0 {
        format!(
            " {}%",
            (u.used as f64 * 100.0 / u.size as f64).round() as u64
        )
    } else {
        String::new()
    };
    let mut out = format!("ctx {}/{}{pct}", short_count(u.used), short_count(u.size));
    if let Some(c) = &u.cost {
        let amount = if c.currency == "USD" {
            if c.amount > 0.0 && c.amount < 0.01 {
                "<$0.01".to_owned()
            } else {
                format!("${:.2}", c.amount)
            }
        } else {
            format!("{:.2} {}", c.amount, crate::markdown::sanitize(&c.currency))
        };
        out.push_str(&format!(" · {amount}"));
    }
    Some(out)
}

/// The open session's state for its header: a spinner and the elapsed time while a turn runs,
/// the last turn's duration when idle.
fn session_state(app: &App) -> (String, Style) {
    let Some(s) = app.open_session() else {
        return ("idle".into(), Style::new().fg(Color::Green));
    };
    if app.is_deleting(&s.id) {
        return ("deleting…".into(), Style::new().fg(Color::Red).bold());
    }
    let elapsed = app.progress().elapsed(&s.id, app.now());
    let timer = |e: Option<std::time::Duration>| {
        e.map(|e| format!("{} {}", spinner(e), format_duration(e)))
            .unwrap_or_default()
    };
    if app.pending_approval().is_none() && app.deferred_approval().is_some() {
        let t = timer(elapsed);
        return (
            format!("waiting for approval {t} · Enter answers").replace("  ", " "),
            Style::new().fg(Color::Magenta).bold(),
        );
    }
    if app.pending_approval().is_some() || s.status == SessionStatus::Pending {
        let t = timer(elapsed);
        return (
            format!("waiting for approval {t}").trim_end().to_owned(),
            Style::new().fg(Color::Magenta),
        );
    }
    match s.status {
        SessionStatus::Busy => (
            format!("busy {} · Esc abort", timer(elapsed)),
            Style::new().fg(Color::Yellow),
        ),
        _ => match app.progress().last_turn(&s.id) {
            Some(d) => (
                format!("idle · last turn {}", format_duration(d)),
                Style::new().fg(Color::Green),
            ),
            None => ("idle".into(), Style::new().fg(Color::Green)),
        },
    }
}

fn line_style(style: LineStyle) -> Style {
    match style {
        LineStyle::UserHeader => Style::new().fg(ACCENT).bold(),
        LineStyle::AgentHeader => Style::new().fg(Color::Green).bold(),
        LineStyle::UserText => Style::new(),
        LineStyle::File => Style::new().fg(Color::Blue),
        LineStyle::Stdout => Style::new(),
        LineStyle::Stderr => Style::new().fg(Color::LightRed),
        LineStyle::ExitOk => Style::new().fg(Color::Green).add_modifier(Modifier::DIM),
        LineStyle::ExitFailed => Style::new().fg(Color::Red),
        LineStyle::Marker => Style::new()
            .fg(Color::Yellow)
            .add_modifier(Modifier::ITALIC),
        LineStyle::Blank | LineStyle::Agent | LineStyle::Running => Style::new(),
        LineStyle::ShowAll => Style::new().fg(ACCENT),
        LineStyle::TurnEnd => DIM,
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

fn modal(frame: &mut Frame, app: &App, m: &Modal, screen: Rect) {
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

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}
