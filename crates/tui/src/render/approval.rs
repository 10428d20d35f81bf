//! Drawing of the approval dialog (docs/tui.md §3). Its geometry and its answers are the
//! state's (`approval.rs`), shared with the keys, so what is drawn and what a key or a click
//! does can never disagree.

use ax_protocol::Permission;
use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{boxed, tr};
use crate::app::App;
use crate::approval::{clip_width, heading, permission_geometry, title_rows};

/// Draws the dialog for `p`.
pub(crate) fn draw(frame: &mut Frame, app: &App, p: &Permission) {
    let g = permission_geometry(p, app.is_shell(&p.session_id), app.size.0, app.size.1);
    let inner = boxed(frame, g.dialog, "Approval needed", Color::Magenta);
    let dim = Style::new().fg(Color::DarkGray);
    let scroll = app.approval_scroll().min(g.max_scroll());
    let head = heading(p, app.workspace());
    let inner_w = g.dialog.width.saturating_sub(2).max(1) as usize;
    let mut lines = vec![Line::raw(clip_width(
        &if g.scrolls() {
            match p.tool_call {
                None => format!(
                    "{head} ({} lines, scroll to read all):",
                    p.command.split('\n').count()
                ),
                Some(_) => format!("{head} ({} rows, scroll to read all):", g.body_rows.len()),
            }
        } else {
            format!("{head}:")
        },
        inner_w,
    ))];
    let title_rows = title_rows(p, inner_w).len();
    for (i, row) in g
        .body_rows
        .iter()
        .enumerate()
        .skip(scroll)
        .take(g.body_height)
    {
        // The request's own text bold; an edit's diff in its colours.
        let style = if i < title_rows {
            Style::new().bold()
        } else if row.starts_with("  +") && !row.starts_with("  +++") {
            Style::new().fg(Color::Green)
        } else if row.starts_with("  -") && !row.starts_with("  ---") {
            Style::new().fg(Color::Red)
        } else if row.starts_with("  @@") {
            Style::new().fg(Color::Cyan)
        } else {
            Style::new()
        };
        lines.push(Line::styled(row.clone(), style));
    }
    let below = g.body_rows.len().saturating_sub(scroll + g.body_height);
    lines.push(if below > 0 {
        Line::styled(
            format!("▼ {below} more rows below (↓ PgDn End)"),
            Style::new().fg(Color::Yellow),
        )
    } else if scroll > 0 {
        Line::styled(format!("▲ {scroll} rows above · end of the request"), dim)
    } else {
        Line::raw("")
    });
    for (i, r) in g.file_rows.iter().enumerate() {
        let style = match i {
            0 => Style::new(),
            _ if r.starts_with("  @ ") => Style::new().bold(),
            _ => dim,
        };
        lines.push(Line::styled(r.clone(), style));
    }
    for r in &g.always_rows {
        lines.push(Line::styled(r.clone(), dim));
    }
    lines.push(Line::raw(""));
    let highlighted = app.approval_choice();
    for row in &g.button_rows {
        let mut buttons = Vec::new();
        for (i, text) in row {
            let style = if Some(*i) == highlighted {
                Style::new().fg(Color::Black).bg(Color::Magenta).bold()
            } else {
                Style::new().fg(Color::Magenta)
            };
            if !buttons.is_empty() {
                buttons.push(Span::raw(" "));
            }
            buttons.push(Span::styled(text.clone(), style));
        }
        lines.push(Line::from(buttons));
    }
    for r in &g.hint_rows {
        lines.push(Line::styled(r.clone(), dim));
    }
    frame.render_widget(Paragraph::new(lines), tr(inner));
}
