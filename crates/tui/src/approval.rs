//! The approval dialog, honest: the whole request (every line, wrapped, never cut), scrollable
//! when it is taller than the dialog, the files it gets, the answers by name with their keys,
//! and what "always" covers in words. Geometry is computed here once and shared by drawing and the keys, so the
//! scroll bound and what is drawn can never disagree.

use ax_protocol::{Permission, PermissionId};
use unicode_width::UnicodeWidthChar;

use ax_protocol::turn::{PermissionKind, ToolContent, ToolKind};
use ax_protocol::{PermissionReply, turn::ToolCallPart};

use crate::input::{Key, KeyCode};
use crate::layout::Rect;

/// What the `shell` agent's "always" answer (named `name`) covers, said in words
/// (docs/backend.md §2: the session stops asking from then on).
pub fn shell_always(name: &str) -> String {
    format!(
        "With “{}”, every later command in this session runs without asking again, this one \
         included; /revoke forgets it.",
        crate::markdown::sanitize(name)
    )
}

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
    /// The answers' buttons, in rows that fit (see [`button_rows`]).
    pub button_rows: Vec<Vec<(usize, String)>>,
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

/// Lays out the dialog's request for `command` (with `attachments`) on a `width`×`height`
/// screen, before the answers are known ([`permission_geometry`] adds them).
pub fn geometry(command: &str, attachments: &[String], width: u16, height: u16) -> Geometry {
    let w = width.saturating_sub(4).clamp(20, 100).min(width);
    let inner_w = w.saturating_sub(2).max(1) as usize;
    let mut g = Geometry {
        dialog: Rect::new(0, 0, w, 0),
        body_rows: request_rows(command, inner_w),
        body_height: 0,
        file_rows: file_rows(attachments, inner_w),
        always_rows: Vec::new(),
        hint_rows: Vec::new(),
        button_rows: Vec::new(),
    };
    fit(&mut g, width, height);
    g
}

/// Sizes the body and the dialog for the rows `g` holds: everything but the body always
/// shows (title, scroll indicator, files, always, blank, buttons, hints); the body gets the
/// rest and scrolls.
fn fit(g: &mut Geometry, width: u16, height: u16) {
    let fixed = 1
        + 1
        + g.file_rows.len()
        + g.always_rows.len()
        + 1
        + g.button_rows.len().max(1)
        + g.hint_rows.len();
    let max_h = height.saturating_sub(2).max(MIN_BODY_ROWS + 2) as usize;
    let room = max_h.saturating_sub(fixed + 2).max(MIN_BODY_ROWS as usize);
    g.body_height = g.body_rows.len().clamp(1, room);
    let h = (g.body_height + fixed + 2).min(height as usize) as u16;
    g.dialog = Rect::new(0, 0, width, height).centered(g.dialog.width, h);
}

/// The request as display rows: `$ ` before the first line, `> ` before each further line
/// (the newlines the command really has), two spaces before a row that only wraps. Control
/// characters are shown in caret notation (`^[`, `^M`), so nothing is hidden from the person
/// and nothing reaches the terminal.
pub fn request_rows(command: &str, width: usize) -> Vec<String> {
    prefixed_rows(command, width, ["$ ", "> "])
}

/// [`request_rows`] with other prefixes for the first and the further lines (two columns).
fn prefixed_rows(command: &str, width: usize, prefixes: [&str; 2]) -> Vec<String> {
    let width = width.max(4);
    let mut rows = Vec::new();
    for (n, line) in command.split('\n').enumerate() {
        let mut row = String::from(if n == 0 { prefixes[0] } else { prefixes[1] });
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
        let mut b = [0; 4];
        for c in line.chars() {
            let shown = crate::tool_input::visible(c.encode_utf8(&mut b));
            // One visible unit at a time, so a caret pair never splits across rows.
            push(&mut rows, &mut row, &mut used, &shown);
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
pub(crate) fn clip_width(s: &str, width: usize) -> String {
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
    /// The option asks the person to tell the agent what to do instead: after it is sent the
    /// composer waits for that feedback as the next prompt.
    pub feedback: bool,
    /// The exact option sent (an agent may offer several of one kind, docs/agents.md §5).
    pub option_id: String,
}

/// Display order by kind: allow once, allow always, reject once, reject always.
fn kind_rank(kind: PermissionKind) -> u8 {
    match kind {
        PermissionKind::AllowOnce => 0,
        PermissionKind::AllowAlways => 1,
        PermissionKind::RejectOnce => 2,
        PermissionKind::RejectAlways => 3,
    }
}

/// Whether an option's name asks for feedback ("No, and tell Codex what to do differently").
pub fn asks_feedback(name: &str) -> bool {
    let n = name.to_lowercase();
    n.contains("feedback") || n.contains("differently") || n.contains("what to do")
}

/// The answers for `p`, always in one order by kind (allow once, allow always, reject once,
/// reject always), whatever order the agent sent them in: agents put "always" first, and the
/// highlighted answer must never be a standing grant. Every option the agent sent is shown
/// (the agent's order within a kind) and answers with its own id, so several options of one
/// kind (Codex's) each get a button (docs/agents.md §5). The first option of a kind has the
/// kind's letter, a further one the digit of its position. Labels are the agent's own names
/// (the `shell` agent's too: "Allow once", "Allow always in this session", "Reject").
pub fn choices(p: &Permission) -> Vec<Choice> {
    let mut options: Vec<_> = p.options.iter().collect();
    // Stable: the agent's order within a kind is kept.
    options.sort_by_key(|o| kind_rank(o.kind));
    options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let (reply, letter, word) = match o.kind {
                PermissionKind::AllowOnce => (PermissionReply::AllowOnce, 'y', "Allow once"),
                PermissionKind::AllowAlways => (PermissionReply::AllowAlways, 'a', "Always allow"),
                PermissionKind::RejectOnce => (PermissionReply::RejectOnce, 'n', "Reject"),
                PermissionKind::RejectAlways => {
                    (PermissionReply::RejectAlways, 'r', "Always reject")
                }
            };
            let first_of_kind = i == 0 || options[i - 1].kind != o.kind;
            let key = if first_of_kind {
                letter
            } else {
                // Past nine: chosen with ←→ and Enter only.
                u32::try_from(i + 1)
                    .ok()
                    .and_then(|d| char::from_digit(d, 10))
                    .unwrap_or('·')
            };
            let name = crate::tool_input::visible(o.name.trim());
            Choice {
                reply,
                label: if name.is_empty() {
                    word.to_owned()
                } else {
                    name
                },
                key,
                feedback: asks_feedback(&o.name),
                option_id: o.option_id.clone(),
            }
        })
        .collect()
}

/// The answer highlighted before the person moves: allow once, never an "always"; `None`
/// when the agent offers no allow-once (then Enter does nothing).
pub fn default_choice(choices: &[Choice]) -> Option<usize> {
    choices
        .iter()
        .position(|c| matches!(c.reply, PermissionReply::Once | PermissionReply::AllowOnce))
}

/// The buttons laid out in rows that fit `width`: (index into the choices, text) per button;
/// a new row starts where the next button would not fit, so every answer and its key shows.
pub fn button_rows(choices: &[Choice], width: usize) -> Vec<Vec<(usize, String)>> {
    let mut rows: Vec<Vec<(usize, String)>> = Vec::new();
    let mut used = 0;
    for (i, c) in choices.iter().enumerate() {
        let text = format!(" [{}] {} ", c.key, c.label);
        let w = unicode_width::UnicodeWidthStr::width(text.as_str());
        if w > width {
            // Wider than the dialog: the button takes rows of its own, its label wrapped
            // (never cut: the name is what the person agrees to).
            for (n, piece) in wrap_plain(
                &format!("[{}] {}", c.key, c.label),
                width.saturating_sub(6).max(4),
            )
            .into_iter()
            .enumerate()
            {
                let lead = if n == 0 { " " } else { "     " };
                rows.push(vec![(i, clip_width(&format!("{lead}{piece} "), width))]);
            }
            used = width;
            continue;
        }
        match rows.last_mut() {
            Some(row) if used + 1 + w <= width => {
                row.push((i, text));
                used += 1 + w;
            }
            _ => {
                rows.push(vec![(i, text)]);
                used = w;
            }
        }
    }
    rows
}

/// The first line of the dialog: what the agent wants, by the kind of its tool call (an
/// edit names its files, relative to the project `workspace` when inside it).
pub fn heading(p: &Permission, workspace: &str) -> String {
    let relative = |path: &str| -> String {
        let base = workspace.trim_end_matches('/');
        let rel = path
            .strip_prefix(base)
            .and_then(|r| r.strip_prefix('/'))
            .filter(|r| !base.is_empty() && !r.is_empty());
        crate::tool_input::visible(rel.unwrap_or(path))
    };
    let Some(t) = &p.tool_call else {
        return "The agent wants to run".to_owned();
    };
    let verb = match t.kind {
        ToolKind::Execute => "run",
        ToolKind::Edit => "edit",
        ToolKind::Read => "read",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Fetch => "fetch",
        ToolKind::Think => "think",
        ToolKind::SwitchMode => "switch its mode",
        ToolKind::Other => "use a tool",
    };
    let mut paths: Vec<String> = Vec::new();
    if t.kind != ToolKind::Execute {
        for c in &t.content {
            if let ToolContent::Diff { path, .. } = c {
                paths.push(path.clone());
            }
        }
        if paths.is_empty() {
            paths = t.locations.iter().map(|l| l.path.clone()).collect();
        }
        paths.dedup();
    }
    match paths.as_slice() {
        [] => format!("The agent wants to {verb}"),
        [one] => format!("The agent wants to {verb} {}", relative(one)),
        [one, rest @ ..] => format!(
            "The agent wants to {verb} {} and {} more",
            relative(one),
            rest.len()
        ),
    }
}

/// Whether the request's first rows are a command (`$ `): the `shell` agent's, and an ACP
/// agent's tool call that runs something; other kinds show their title as is.
fn title_is_command(p: &Permission) -> bool {
    p.tool_call
        .as_ref()
        .is_none_or(|t| t.kind == ToolKind::Execute)
}

/// What "always" covers, in words: for the `shell` agent every later command of the
/// session, for an ACP agent what it scopes the answer to.
fn always_words(p: &Permission, shell: bool) -> Option<String> {
    let o = p
        .options
        .iter()
        .find(|o| o.kind == PermissionKind::AllowAlways)?;
    if shell {
        return Some(shell_always(&o.name));
    }
    Some(format!(
        "“{}” lets the agent do this again without asking, as far as the agent scopes it \
         (for this kind of tool call in this session); /revoke forgets it.",
        crate::markdown::sanitize(&o.name)
    ))
}

/// The whole request: the title's lines, then for an ACP agent the tool call's kind, its
/// locations, its whole input and content (an edit's diff), as the transcript's open card
/// shows them.
fn request_text_rows(p: &Permission, width: usize) -> Vec<String> {
    let mut rows = title_rows(p, width);
    if let Some(t) = &p.tool_call {
        rows.extend(tool_rows(t, width));
    }
    rows
}

/// The request's own title rows: a command (`$ `) or, for other kinds, the title as is.
pub(crate) fn title_rows(p: &Permission, width: usize) -> Vec<String> {
    if title_is_command(p) {
        request_rows(&p.command, width)
    } else {
        prefixed_rows(&p.command, width, ["  ", "  "])
    }
}

fn tool_rows(t: &ToolCallPart, width: usize) -> Vec<String> {
    let mut rows = vec![format!("  kind: {}", crate::turn_view::kind_label(t.kind))];
    for (_, pieces) in crate::turn_view::request_rows(t, width) {
        rows.push(pieces.into_iter().map(|(text, _)| text).collect());
    }
    rows
}

/// Lays out the dialog for a permission; `shell` says it is the `shell` agent's (its
/// "always" covers every later command of the session).
pub fn permission_geometry(p: &Permission, shell: bool, width: u16, height: u16) -> Geometry {
    let mut g = geometry(&p.command, &p.attachments, width, height);
    let inner_w = g.dialog.width.saturating_sub(2).max(1) as usize;
    // The `shell` agent's call is the command line and the files: shown as such already.
    if !shell {
        g.body_rows = request_text_rows(p, inner_w);
    }
    if let Some(always) = always_words(p, shell) {
        g.always_rows = wrap_plain(&always, inner_w);
    } else {
        g.always_rows = wrap_plain("The agent offers no “always” answer here.", inner_w);
    }
    let choices = choices(p);
    // The kinds' letters; a further option of a kind is named by its digit (1–N).
    let keys: Vec<String> = choices
        .iter()
        .filter(|c| c.key.is_ascii_alphabetic())
        .map(|c| c.key.to_string())
        .collect();
    g.hint_rows = wrap_plain(
        &format!(
            "↑↓ PgUp/PgDn scroll · ←→ choose · Enter confirm · {} or 1–{} answer · Esc later",
            keys.join("/"),
            choices.len()
        ),
        inner_w,
    );
    g.button_rows = button_rows(&choices, inner_w);
    fit(&mut g, width, height);
    g
}

/// The dialog's own state: the answer the person moved to and how far the request is
/// scrolled, each kept with the request it was made on, so neither carries over to another
/// request.
#[derive(Debug, Clone, Default)]
pub struct Dialog {
    /// The answer moved to; `None` until the person moves (then the default shows: allow
    /// once, never an "always").
    choice: Option<(PermissionId, usize)>,
    /// Rows of the request scrolled out of view above.
    scroll: Option<(PermissionId, usize)>,
}

/// What a key in the dialog asks of the rest of the TUI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialogKey {
    /// Nothing more: the key scrolled, moved the highlight, or was not the dialog's.
    Done,
    /// Send this answer.
    Answer(Choice),
    /// Leave the request for later (Esc): the dialog closes, the transcript stays.
    Later,
}

impl Dialog {
    /// The highlighted answer for request `id` (an index into its `choices`): the one the
    /// person moved to, else allow once; `None` when there is no allow-once and the person
    /// has not chosen (Enter does nothing).
    pub fn choice(&self, id: &PermissionId, choices: &[Choice]) -> Option<usize> {
        match &self.choice {
            Some((on, i)) if on == id => Some(*i),
            _ => default_choice(choices),
        }
    }

    /// Forgets the answer moved to (the request was answered, left, or another shows).
    pub fn clear_choice(&mut self) {
        self.choice = None;
    }

    /// Rows of request `id` scrolled out of view above (0 for a request not scrolled yet).
    pub fn scroll(&self, id: &PermissionId) -> usize {
        match &self.scroll {
            Some((on, rows)) if on == id => *rows,
            _ => 0,
        }
    }

    /// Scrolls request `id` by `delta` rows, kept within `0..=max`.
    pub fn scroll_by(&mut self, id: &PermissionId, max: usize, delta: isize) {
        let rows = (self.scroll(id) as isize + delta).clamp(0, max as isize) as usize;
        self.scroll = Some((id.clone(), rows));
    }

    /// A key while the dialog for request `id` shows, with its `choices` laid out in `g`:
    /// ↑↓, PgUp/PgDn (or Space), Home and End scroll; ←→ (Tab) move the highlight; Enter
    /// answers with it, a button's key or position (1, 2, 3, …) with that button; Esc leaves
    /// the request for later.
    pub fn key(
        &mut self,
        key: Key,
        id: &PermissionId,
        choices: &[Choice],
        g: &Geometry,
    ) -> DialogKey {
        let page = g.body_height.saturating_sub(1).max(1) as isize;
        let max = g.max_scroll();
        match key.code {
            KeyCode::Up => self.scroll_by(id, max, -1),
            KeyCode::Down => self.scroll_by(id, max, 1),
            KeyCode::PageUp => self.scroll_by(id, max, -page),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll_by(id, max, page),
            KeyCode::Home => self.scroll_by(id, max, isize::MIN / 2),
            KeyCode::End => self.scroll_by(id, max, isize::MAX / 2),
            KeyCode::Left | KeyCode::BackTab => {
                let i = self.choice(id, choices).map_or(0, |i| i.saturating_sub(1));
                self.choice = Some((id.clone(), i));
            }
            KeyCode::Right | KeyCode::Tab => {
                let n = choices.len();
                let i = self
                    .choice(id, choices)
                    .map_or(0, |i| (i + 1).min(n.saturating_sub(1)));
                self.choice = Some((id.clone(), i));
            }
            // The highlighted answer: allow once unless the person moved; nothing when the
            // agent offers no allow-once and nothing is highlighted.
            KeyCode::Enter => {
                if let Some(c) = self.choice(id, choices).and_then(|i| choices.get(i)) {
                    return DialogKey::Answer(c.clone());
                }
            }
            // By the key shown on the button, or by its position (1, 2, 3, 4).
            KeyCode::Char(k) if !key.mods.ctrl && !key.mods.alt => {
                let by_digit = k
                    .to_digit(10)
                    .and_then(|d| (d as usize).checked_sub(1))
                    .and_then(|i| choices.get(i));
                if let Some(c) = choices.iter().find(|c| c.key == k).or(by_digit) {
                    return DialogKey::Answer(c.clone());
                }
            }
            // Later: the dialog closes, the transcript stays (docs/tui.md §3).
            KeyCode::Esc => return DialogKey::Later,
            _ => {}
        }
        DialogKey::Done
    }
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
