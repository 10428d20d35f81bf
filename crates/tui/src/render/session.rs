//! The session route: the header's meter and state, the standing "always" row and the
//! transcript window (docs/tui.md §2, §2a).

use ax_protocol::SessionStatus;
use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::theme::{line_style, tone};
use super::{ACCENT, DIM, bars, clip, tr};
use crate::app::{App, Route};
use crate::kind::LineStyle;
use crate::layout::{Rect, STANDING_REVOKE};
use crate::progress::{format_duration, spinner};

pub(super) fn draw(frame: &mut Frame, app: &App, r: Rect) {
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
    let area = app.session_area();
    if let (Some(row), Some(button), Some(s)) = (area.standing, area.standing_revoke, s) {
        standing(frame, s, row, button);
    }
    let inner = area.transcript;
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
            for (i, (text, piece)) in row.pieces.into_iter().enumerate() {
                let st = base.patch(tone(piece));
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

/// The session's standing "always" answers on `row`, with `[Revoke]` on `button` at its
/// right.
fn standing(frame: &mut Frame, s: &ax_protocol::Session, row: Rect, button: Rect) {
    let n = s.standing.len();
    let first = s.standing.first().map(|g| g.title.as_str()).unwrap_or("");
    let more = if n > 1 {
        format!(" (+{} more)", n - 1)
    } else {
        String::new()
    };
    let room = (button.x - row.x).saturating_sub(1) as usize;
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
        tr(row),
    );
    frame.render_widget(
        Paragraph::new(Span::styled(
            STANDING_REVOKE,
            Style::new().fg(Color::White).bg(Color::Red).bold(),
        )),
        tr(button),
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
