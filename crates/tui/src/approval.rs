//! The approval dialog, honest: the whole request (every line, wrapped, never cut), scrollable
//! when it is taller than the dialog, the files it gets, the answers by name with their keys,
//! and what "always" covers in words. Geometry is computed here once and shared by drawing and the keys, so the
//! scroll bound and what is drawn can never disagree.

use ax_protocol::Permission;
use ratatui::Frame;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthChar;

use ax_protocol::turn::PermissionKind;
use ax_protocol::{PermissionReply, turn::ToolCallPart};

use crate::app::{APPROVAL_CHOICES, App};
use crate::layout::Rect;

/// What the "always" answer covers, said in words (docs/backend.md §2: the session stops
/// asking from then on).
pub const ALWAYS_COVERS: &str = "“Always allow” runs this command and every later command in this session without asking again.";
/// Keys for the dialog.
pub const HINT: &str =
    "↑↓ PgUp/PgDn scroll · ←→ choose · Enter confirm · y once · a always · n reject · Esc later";

/// Attached files listed by name; more are counted ("… and N more").
const FILES_SHOWN: usize = 4;

/// Rows of text around the request: the title line, a blank, the always line(s), a blank, the
/// buttons, the hint (both may wrap), and the scroll indicator.
const MIN_BODY_ROWS: u16 = 3;

/// Where the dialog's parts go on a screen, for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// The dialog with its border.
    pub dialog: Rect,
    /// Rows of the request in the body.
    pub body_rows: Vec<String>,
    /// How many body rows fit.
    pub body_height: usize,
    /// The attached files: a count line, the first few names, "… and N more".
    pub file_rows: Vec<String>,
    /// What “Always allow” covers, wrapped.
    pub always_rows: Vec<String>,
    /// The key hints, wrapped.
    pub hint_rows: Vec<String>,
}

impl Geometry {
    /// The largest useful scroll offset.
    pub fn max_scroll(&self) -> usize {
        self.body_rows.len().saturating_sub(self.body_height)
    }

    /// Whether the request is taller than the dialog.
    pub fn scrolls(&self) -> bool {
        self.body_rows.len() > self.body_height
    }
}

/// Lays out the dialog for `command` (with `attachments`) on a `width`×`height` screen.
pub fn geometry(command: &str, attachments: &[String], width: u16, height: u16) -> Geometry {
    let w = width.saturating_sub(4).clamp(20, 100).min(width);
    let inner_w = w.saturating_sub(2).max(1) as usize;
    let body_rows = request_rows(command, inner_w);
    let file_rows = file_rows(attachments, inner_w);
    let always_rows = wrap_plain(ALWAYS_COVERS, inner_w);
    let hint_rows = wrap_plain(HINT, inner_w);
    // title, (body), scroll indicator, files…, always…, blank, buttons, hint…
    let fixed = 1 + 1 + file_rows.len() + always_rows.len() + 1 + 1 + hint_rows.len();
    let max_h = height.saturating_sub(2).max(MIN_BODY_ROWS + 2) as usize;
    let room = max_h.saturating_sub(fixed + 2).max(MIN_BODY_ROWS as usize);
    let body_height = body_rows.len().clamp(1, room);
    let h = (body_height + fixed + 2).min(height as usize) as u16;
    let screen = Rect::new(0, 0, width, height);
    Geometry {
        dialog: screen.centered(w, h),
        body_rows,
        body_height,
        file_rows,
        always_rows,
        hint_rows,
    }
}

/// The request as display rows: `$ ` before the first line, `> ` before each further line
/// (the newlines the command really has), two spaces before a row that only wraps. Control
/// characters are shown in caret notation (`^[`, `^M`), so nothing is hidden from the person
/// and nothing reaches the terminal.
pub fn request_rows(command: &str, width: usize) -> Vec<String> {
    let width = width.max(4);
    let mut rows = Vec::new();
    for (n, line) in command.split('\n').enumerate() {
        let mut row = String::from(if n == 0 { "$ " } else { "> " });
        let mut used = 2;
        let push = |rows: &mut Vec<String>, row: &mut String, used: &mut usize, s: &str| {
            let w: usize = s.chars().map(|c| c.width().unwrap_or(0)).sum();
            if *used + w > width && *used > 2 {
                rows.push(std::mem::replace(row, String::from("  ")));
                *used = 2;
            }
            row.push_str(s);
            *used += w;
        };
        for c in line.chars() {
            match c {
                '\t' => push(&mut rows, &mut row, &mut used, "    "),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    let caret = format!("^{}", ((c as u8) ^ 0x40) as char);
                    push(&mut rows, &mut row, &mut used, &caret);
                }
                c if c.is_control() => push(&mut rows, &mut row, &mut used, "\u{fffd}"),
                c => {
                    let mut b = [0; 4];
                    push(&mut rows, &mut row, &mut used, c.encode_utf8(&mut b));
                }
            }
        }
        rows.push(row);
    }
    rows
}

/// The files the command gets are part of what is approved: a count, the first
/// `FILES_SHOWN` names (one row each, control characters in caret notation, cut with `…`
/// only when wider than the dialog), then how many more there are.
pub fn file_rows(attachments: &[String], width: usize) -> Vec<String> {
    if attachments.is_empty() {
        return Vec::new();
    }
    let n = attachments.len();
    let mut rows = vec![format!(
        "with {n} attached file{}:",
        if n == 1 { "" } else { "s" }
    )];
    for path in attachments.iter().take(FILES_SHOWN) {
        let mut escaped = String::new();
        for c in path.chars() {
            match c {
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    escaped.push('^');
                    escaped.push(((c as u8) ^ 0x40) as char);
                }
                c if c.is_control() => escaped.push('\u{fffd}'),
                c => escaped.push(c),
            }
        }
        rows.push(clip_width(&format!("  @ {escaped}"), width));
    }
    if n > FILES_SHOWN {
        rows.push(format!("  … and {} more", n - FILES_SHOWN));
    }
    rows
}

/// Cuts `s` to `width` display columns, ending in `…` when cut.
fn clip_width(s: &str, width: usize) -> String {
    if unicode_width::UnicodeWidthStr::width(s) <= width {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if used + cw + 1 > width {
            break;
        }
        out.push(c);
        used += cw;
    }
    out.push('…');
    out
}

/// Plain word wrap for the dialog's own sentences.
fn wrap_plain(text: &str, width: usize) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::new();
    for word in text.split(' ') {
        let ww = unicode_width::UnicodeWidthStr::width(word);
        let rw = unicode_width::UnicodeWidthStr::width(row.as_str());
        if !row.is_empty() && rw + 1 + ww > width {
            rows.push(std::mem::take(&mut row));
        }
        if !row.is_empty() {
            row.push(' ');
        }
        row.push_str(word);
    }
    rows.push(row);
    rows
}

/// One answer of the dialog: what is sent, its label (the agent's own name for an ACP
/// agent's option), and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What the backend is sent.
    pub reply: PermissionReply,
    /// What the button says.
    pub label: String,
    /// The key that picks it.
    pub key: char,
}

/// The answers for `p`: the agent's options by kind, in the order it gave them, with their
/// own names; for the `shell` agent the three fixed ones.
pub fn choices(p: &Permission) -> Vec<Choice> {
    if p.options.is_empty() {
        return APPROVAL_CHOICES
            .iter()
            .zip(['y', 'a', 'n'])
            .map(|((reply, label), key)| Choice {
                reply: *reply,
                label: (*label).to_owned(),
                key,
            })
            .collect();
    }
    p.options
        .iter()
        .map(|o| {
            let (reply, key) = match o.kind {
                PermissionKind::AllowOnce => (PermissionReply::AllowOnce, 'y'),
                PermissionKind::AllowAlways => (PermissionReply::AllowAlways, 'a'),
                PermissionKind::RejectOnce => (PermissionReply::RejectOnce, 'n'),
                PermissionKind::RejectAlways => (PermissionReply::RejectAlways, 'r'),
            };
            Choice {
                reply,
                label: crate::markdown::sanitize(&o.name),
                key,
            }
        })
        .collect()
}

/// What "always" covers for an ACP agent's request, in words.
fn acp_always(p: &Permission) -> Option<String> {
    let o = p
        .options
        .iter()
        .find(|o| o.kind == PermissionKind::AllowAlways)?;
    Some(format!(
        "“{}” lets the agent do this again without asking, as far as the agent scopes it \
         (for this kind of tool call in this session); /revoke forgets it.",
        crate::markdown::sanitize(&o.name)
    ))
}

/// The whole request: the title's lines, then for an ACP agent the tool call's kind, its
/// locations, input command and content (an edit's diff), as the transcript's open card shows
/// them.
fn request_text_rows(p: &Permission, width: usize) -> Vec<String> {
    let mut rows = request_rows(&p.command, width);
    if let Some(t) = &p.tool_call {
        rows.extend(tool_rows(t, width));
    }
    rows
}

fn tool_rows(t: &ToolCallPart, width: usize) -> Vec<String> {
    let mut rows = vec![format!("  kind: {}", crate::turn_view::kind_label(t.kind))];
    for (_, pieces) in crate::turn_view::request_rows(t, width) {
        rows.push(pieces.into_iter().map(|(text, _)| text).collect());
    }
    rows
}

/// Lays out the dialog for a permission.
pub fn permission_geometry(p: &Permission, width: u16, height: u16) -> Geometry {
    let mut g = geometry(&p.command, &p.attachments, width, height);
    if p.tool_call.is_none() && p.options.is_empty() {
        return g;
    }
    let inner_w = g.dialog.width.saturating_sub(2).max(1) as usize;
    g.body_rows = request_text_rows(p, inner_w);
    if let Some(always) = acp_always(p) {
        g.always_rows = wrap_plain(&always, inner_w);
    } else {
        g.always_rows = wrap_plain("The agent offers no “always” answer here.", inner_w);
    }
    let labels: Vec<String> = choices(p)
        .iter()
        .map(|c| format!("{} {}", c.key, c.label))
        .collect();
    g.hint_rows = wrap_plain(
        &format!(
            "↑↓ PgUp/PgDn scroll · ←→ choose · Enter confirm · {} · Esc later",
            labels.join(" · ")
        ),
        inner_w,
    );
    // Recompute the height with the new rows.
    let fixed = 1 + 1 + g.file_rows.len() + g.always_rows.len() + 1 + 1 + g.hint_rows.len();
    let max_h = height.saturating_sub(2).max(MIN_BODY_ROWS + 2) as usize;
    let room = max_h.saturating_sub(fixed + 2).max(MIN_BODY_ROWS as usize);
    g.body_height = g.body_rows.len().clamp(1, room);
    let h = (g.body_height + fixed + 2).min(height as usize) as u16;
    g.dialog = Rect::new(0, 0, width, height).centered(g.dialog.width, h);
    g
}

impl App {
    /// The approval dialog's layout for the pending approval, if one shows.
    pub fn approval_geometry(&self) -> Option<Geometry> {
        let p = self.pending_approval()?;
        Some(permission_geometry(p, self.size.0, self.size.1))
    }

    /// The answers of the pending approval.
    pub fn approval_choices(&self) -> Vec<Choice> {
        self.pending_approval().map(choices).unwrap_or_default()
    }

    /// Rows of the request scrolled out of view above (0 for a request not scrolled yet).
    pub fn approval_scroll(&self) -> usize {
        match self.pending_approval() {
            Some(p) if p.id.as_str() == self.approval_scroll.0 => self.approval_scroll.1,
            _ => 0,
        }
    }

    /// Scrolls the request by `delta` rows (clamped).
    pub(crate) fn scroll_approval(&mut self, delta: isize) {
        let (Some(g), Some(p)) = (self.approval_geometry(), self.pending_approval()) else {
            return;
        };
        let max = g.max_scroll() as isize;
        let rows = (self.approval_scroll() as isize + delta).clamp(0, max) as usize;
        self.approval_scroll = (p.id.to_string(), rows);
    }

    /// Page size for PageUp/PageDown in the dialog.
    pub(crate) fn approval_page(&self) -> isize {
        self.approval_geometry()
            .map_or(1, |g| g.body_height.saturating_sub(1).max(1) as isize)
    }
}

/// Draws the dialog for `p`.
pub(crate) fn draw(frame: &mut Frame, app: &App, p: &Permission) {
    let g = permission_geometry(p, app.size.0, app.size.1);
    let inner = crate::render::boxed(frame, g.dialog, "Approval needed", Color::Magenta);
    let dim = Style::new().fg(Color::DarkGray);
    let scroll = app.approval_scroll().min(g.max_scroll());
    let mut lines = vec![Line::raw(if g.scrolls() {
        format!(
            "The agent wants to run ({} lines, scroll to read all):",
            p.command.split('\n').count()
        )
    } else {
        "The agent wants to run:".to_owned()
    })];
    let title_rows =
        request_rows(&p.command, g.dialog.width.saturating_sub(2).max(1) as usize).len();
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
    let mut buttons = Vec::new();
    for (i, c) in choices(p).iter().enumerate() {
        let style = if i == app.approval_choice() {
            Style::new().fg(Color::Black).bg(Color::Magenta).bold()
        } else {
            Style::new().fg(Color::Magenta)
        };
        buttons.push(Span::styled(format!(" [{}] {} ", c.key, c.label), style));
        buttons.push(Span::raw(" "));
    }
    lines.push(Line::from(buttons));
    for r in &g.hint_rows {
        lines.push(Line::styled(r.clone(), dim));
    }
    frame.render_widget(Paragraph::new(lines), crate::render::tr(inner));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_and_every_char_is_kept() {
        let rows = request_rows("echo a\necho b; touch /tmp/x\n\necho c", 12);
        assert_eq!(
            rows,
            ["$ echo a", "> echo b; to", "  uch /tmp/x", "> ", "> echo c"]
        );
        let joined: String = rows.iter().map(|r| &r[2..]).collect();
        assert_eq!(joined, "echo aecho b; touch /tmp/xecho c");
        let rows = request_rows("a\rb\x1b[2Jc", 40);
        assert_eq!(rows, ["$ a^Mb^[[2Jc"]);
    }

    #[test]
    fn a_tall_request_scrolls_inside_the_screen() {
        let cmd: String = (0..100).map(|i| format!("echo {i}\n")).collect();
        let g = geometry(&cmd, &[], 80, 24);
        assert!(g.dialog.height <= 24 && g.dialog.width <= 80);
        assert!(g.scrolls());
        assert_eq!(g.body_rows.len(), 101);
        assert_eq!(g.max_scroll(), 101 - g.body_height);
        let small = geometry("ls", &[], 80, 24);
        assert!(!small.scrolls());
        assert_eq!(small.body_height, 1);
    }

    #[test]
    fn attached_files_are_listed_and_counted_in_the_height() {
        let files: Vec<String> = (0..6).map(|i| format!("src/f{i}.rs")).collect();
        let without = geometry("ls", &[], 80, 24);
        let with = geometry("ls", &files, 80, 24);
        assert_eq!(
            with.file_rows,
            [
                "with 6 attached files:",
                "  @ src/f0.rs",
                "  @ src/f1.rs",
                "  @ src/f2.rs",
                "  @ src/f3.rs",
                "  … and 2 more"
            ]
        );
        assert_eq!(with.dialog.height, without.dialog.height + 6);
        let one = file_rows(&["a\x1b[2J\nb".to_owned()], 40);
        assert_eq!(one, ["with 1 attached file:", "  @ a^[[2J^Jb"]);
        let long = file_rows(&["x".repeat(100)], 20);
        assert_eq!(long[1].chars().count(), 20);
        assert!(long[1].ends_with('…'));
    }
}
