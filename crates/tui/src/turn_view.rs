//! How the parts of an agent's turn look in the transcript (docs/tui.md §2a).
//!
//! Pure functions of (part, fold state, focus, width) to styled rows; the transcript keeps
//! their output per part and replaces it in place when a delta or a fold changes the part, so
//! a frame never renders a part. Agent text is Markdown ([`crate::markdown`]); thoughts are
//! dimmed and folded; a tool call is a one-line card (status, kind, title) that opens to its
//! locations, input and content: a coloured unified diff for an edit ([`unified_diff`]),
//! command output through the ANSI renderer, text. Long content folds behind "show all".

use crate::kind::{Kind, LineStyle, Tone};
use ax_protocol::turn::{
    NoticeKind, PermissionKind, PermissionOutcome, PermissionPart, PlanStatus, ToolCallPart,
    ToolContent, ToolKind, ToolStatus, TurnPart,
};

/// Content rows shown by an open card before the rest folds behind "show all".
pub const FOLD_ROWS: usize = 16;

/// How much of a foldable part shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fold {
    /// The header line only (the default).
    #[default]
    Collapsed,
    /// The content, long content cut at [`FOLD_ROWS`] rows.
    Open,
    /// Everything.
    Full,
}

impl Fold {
    /// The next state for Enter: collapsed → open → (all, when cut) → collapsed.
    pub fn next(self, long: bool) -> Fold {
        match self {
            Fold::Collapsed => Fold::Open,
            Fold::Open if long => Fold::Full,
            Fold::Open | Fold::Full => Fold::Collapsed,
        }
    }
}

/// One row: how it is drawn and its pieces, each with what it is.
pub type Row = (LineStyle, Vec<(String, Tone)>);

const DIM: Kind = Kind::Secondary;
const THOUGHT: Kind = Kind::Thought;

/// Whether a part opens and closes (thoughts and tool calls; permissions open to the request).
pub fn foldable(part: &TurnPart) -> bool {
    matches!(
        part,
        TurnPart::Thought { .. } | TurnPart::ToolCall(_) | TurnPart::Permission(_)
    )
}

/// The placeholder the first cell of a [`LineStyle::Running`] row holds; drawing puts the
/// current spinner frame there.
pub const SPINNER_SLOT: char = '⠋';

/// How a tool call's terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Terminals {
    /// In the card, with its other content (every agent's turn).
    #[default]
    InCard,
    /// As a command's run: its output and how it ended, with no card header (the person's
    /// message above says the command) and whatever the card's fold (a `shell` session, whose
    /// turn is one command; docs/tui.md §2a).
    AsRun,
}

/// The rows of a part other than agent text (see [`crate::markdown`] for that).
pub fn render(part: &TurnPart, fold: Fold, focused: bool, width: u16) -> Vec<Row> {
    render_with(part, fold, focused, width, Terminals::InCard)
}

/// [`render`], with the tool calls' terminals shown as `terminals` says.
pub fn render_with(
    part: &TurnPart,
    fold: Fold,
    focused: bool,
    width: u16,
    terminals: Terminals,
) -> Vec<Row> {
    let width = width.max(8) as usize;
    let mut rows = match part {
        TurnPart::Text { text } => markdown_rows(text, width as u16),
        TurnPart::Thought { text } => thought(text, fold, width),
        TurnPart::ToolCall(t) if terminals == Terminals::AsRun && shows_run(t) => run_rows(t),
        TurnPart::ToolCall(t) => tool_call(t, fold, width),
        TurnPart::Plan { entries } => {
            let mut rows = vec![row(LineStyle::Agent, "Plan", Kind::Title)];
            for e in entries {
                let (mark, style) = match e.status {
                    PlanStatus::Completed => ("[x] ", Kind::PlanDone),
                    PlanStatus::InProgress => ("[~] ", Kind::PlanActive),
                    PlanStatus::Pending => ("[ ] ", Kind::Plain),
                };
                let content = crate::markdown::sanitize(&e.content);
                let text_style = if e.status == PlanStatus::Completed {
                    Kind::PlanDoneText
                } else {
                    style
                };
                wrap_into(&mut rows, &content, width, "  ", mark, style, text_style);
            }
            rows
        }
        TurnPart::Permission(p) => permission(p, fold, width),
        // Usage is a meter in the session header (docs/tui.md §2), not transcript lines; a
        // stored usage notice from before the meter draws nothing.
        TurnPart::Notice(n) if n.kind == NoticeKind::Usage => Vec::new(),
        TurnPart::Notice(n) => {
            let (label, style) = match n.kind {
                NoticeKind::Usage => ("usage", Kind::NoticeInfo),
                NoticeKind::Mode => ("mode", Kind::NoticeInfo),
                NoticeKind::Auth => ("needs auth", Kind::Failed),
                NoticeKind::Error => ("error", Kind::Failed),
                NoticeKind::Stop => ("stopped", Kind::NoticeStop),
                NoticeKind::Info => ("note", Kind::NoticeInfo),
            };
            let mut rows = Vec::new();
            for (i, line) in n.message.split('\n').enumerate() {
                let lead = if i == 0 {
                    format!("│ {label}: ")
                } else {
                    "│   ".into()
                };
                let cont = "│   ";
                wrap_into(
                    &mut rows,
                    &crate::markdown::sanitize(line),
                    width,
                    cont,
                    &lead,
                    style,
                    Kind::Plain,
                );
            }
            if n.kind == NoticeKind::Auth {
                wrap_into(
                    &mut rows,
                    "what to do: set the variable the agent names in its `env` in the agents \
                     configuration (config.toml; /agent shows the methods), then send the prompt \
                     again",
                    width,
                    "│   ",
                    "│   ",
                    style,
                    DIM,
                );
            }
            rows
        }
    };
    if focused && let Some((_, pieces)) = rows.first_mut() {
        for (_, s) in pieces.iter_mut() {
            s.focused = true;
        }
        let mark = Tone {
            kind: Kind::FocusMark,
            focused: true,
        };
        pieces.insert(0, ("▶".into(), mark));
    }
    rows
}

/// Agent text as rows: its Markdown rendered to `width`.
pub fn markdown_rows(text: &str, width: u16) -> Vec<Row> {
    crate::markdown::render(text, width)
        .into_iter()
        .map(|l| {
            (
                LineStyle::Agent,
                l.into_iter().map(|(t, k)| (t, Tone::from(k))).collect(),
            )
        })
        .collect()
}

/// Whether the part's open content is longer than [`FOLD_ROWS`] (so "show all" applies).
pub fn is_long(part: &TurnPart, width: u16) -> bool {
    content_rows(part, width.max(8) as usize).len() > FOLD_ROWS
}

fn row(style: LineStyle, text: &str, s: Kind) -> Row {
    (style, vec![(text.to_owned(), s.into())])
}

/// Word-wraps `text` to `width` with `first` before the first row and `cont` before the
/// others.
fn wrap_into(
    rows: &mut Vec<Row>,
    text: &str,
    width: usize,
    cont: &str,
    first: &str,
    lead_style: Kind,
    text_style: Kind,
) {
    let mut lead = first.to_owned();
    let mut rest = text;
    loop {
        let room = width.saturating_sub(unicode_width::UnicodeWidthStr::width(lead.as_str()));
        let cut = cut_at(rest, room.max(1));
        rows.push((
            LineStyle::Agent,
            vec![
                (lead.clone(), lead_style.into()),
                (rest[..cut].to_owned(), text_style.into()),
            ],
        ));
        rest = rest[cut..].trim_start_matches(' ');
        if rest.is_empty() {
            break;
        }
        lead = cont.to_owned();
    }
}

/// The byte index to cut `s` at so the first part fits `room` cells, preferring a space.
fn cut_at(s: &str, room: usize) -> usize {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    let mut last_space = None;
    for (i, c) in s.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            return match last_space {
                Some(sp) if sp > 0 => sp,
                _ if i == 0 => c.len_utf8(),
                _ => i,
            };
        }
        if c == ' ' {
            last_space = Some(i);
        }
        used += w;
    }
    s.len()
}

fn thought(text: &str, fold: Fold, width: usize) -> Vec<Row> {
    let lines: Vec<&str> = text.trim_end().split('\n').collect();
    let n = lines.len();
    match fold {
        Fold::Collapsed => vec![row(
            LineStyle::Agent,
            &format!("✻ Thought ({n} line{}) ▸", if n == 1 { "" } else { "s" }),
            THOUGHT,
        )],
        Fold::Open | Fold::Full => {
            let mut rows = vec![row(LineStyle::Agent, "✻ Thought ▾", THOUGHT)];
            for l in lines {
                wrap_into(
                    &mut rows,
                    &crate::markdown::sanitize(l),
                    width,
                    "  ",
                    "  ",
                    THOUGHT,
                    THOUGHT,
                );
            }
            rows
        }
    }
}

/// A short word for the kind of tool call.
pub fn kind_label(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "run",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "mode",
        ToolKind::Other => "tool",
    }
}

fn status_mark(status: ToolStatus) -> (char, &'static str, Kind) {
    match status {
        ToolStatus::Pending => (SPINNER_SLOT, "pending", Kind::ToolBusy),
        ToolStatus::InProgress => (SPINNER_SLOT, "running", Kind::ToolBusy),
        ToolStatus::Completed => ('✓', "", Kind::ToolDone),
        ToolStatus::Failed => ('✗', "failed", Kind::Failed),
        ToolStatus::Cancelled => ('⊘', "cancelled", Kind::Secondary),
    }
}

/// How a finished command failed, when its tool call still says "completed": its terminal's
/// non-zero exit status or signal, or a non-zero `exit_code` in its raw output.
pub fn failed_exit(t: &ToolCallPart) -> Option<String> {
    for c in &t.content {
        if let ToolContent::Terminal { exit: Some(e), .. } = c {
            match (&e.signal, e.exit_code) {
                (Some(sig), _) => {
                    return Some(format!("killed by {}", crate::markdown::sanitize(sig)));
                }
                (None, Some(code)) if code != 0 => return Some(format!("exit {code}")),
                _ => {}
            }
        }
    }
    let out = t.raw_output.as_ref()?;
    // Claude's Bash reports a failed command as output starting "Exit code N".
    let from_text = || {
        let s = out.as_str()?.strip_prefix("Exit code ")?;
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<i64>().ok()
    };
    ["exit_code", "exitCode"]
        .iter()
        .find_map(|k| out.get(k).and_then(|v| v.as_i64()))
        .or_else(|| (t.kind == ToolKind::Execute).then(from_text).flatten())
        .filter(|code| *code != 0)
        .map(|code| format!("exit {code}"))
}

fn card_header(t: &ToolCallPart, fold: Fold, width: usize, has_body: bool) -> Row {
    let (mark, word, mstyle) = status_mark(t.status);
    // A command that failed says how: "exit 2" rather than "failed".
    let failed = match t.status {
        ToolStatus::Completed | ToolStatus::Failed => failed_exit(t),
        _ => None,
    };
    let (mark, word, mstyle) = match &failed {
        Some(why) => ('✗', why.as_str(), Kind::Failed),
        None => (mark, word, mstyle),
    };
    let kind = kind_label(t.kind);
    let title = if t.title.is_empty() {
        t.tool_call_id.as_str()
    } else {
        t.title.as_str()
    };
    let title = one_line(title);
    let arrow = match (has_body, fold) {
        (false, _) => "",
        (true, Fold::Collapsed) => " ▸",
        (true, _) => " ▾",
    };
    let word = if word.is_empty() {
        String::new()
    } else {
        format!(" · {word}")
    };
    let fixed = 2 + kind.len() + 3 + word.chars().count() + arrow.chars().count();
    let title = clip(&title, width.saturating_sub(fixed).max(4));
    let style = if t.status.is_open() {
        LineStyle::Running
    } else {
        LineStyle::Agent
    };
    (
        style,
        vec![
            (format!("{mark} "), mstyle.into()),
            (format!("[{kind}] "), Kind::ToolKind.into()),
            (title, Kind::Title.into()),
            (word, mstyle.into()),
            (arrow.to_owned(), DIM.into()),
        ],
    )
}

/// Whether a tool call is a command's run: an `execute` call, or any call with a terminal.
fn shows_run(t: &ToolCallPart) -> bool {
    t.kind == ToolKind::Execute
        || t.content
            .iter()
            .any(|c| matches!(c, ToolContent::Terminal { .. }))
}

/// A command's run as the `shell` agent's runs always showed, under the person's message that
/// already says the command: its output (colours kept, not indented, not folded), then how it
/// ended, once — `exit N`, `killed by signal S`, `[aborted]` when the call was cancelled,
/// `[nothing ran]` when it failed before it ran (rejected) — and why a call that could not
/// start failed. While the call is open, a first row says so (`⠋ running`).
fn run_rows(t: &ToolCallPart) -> Vec<Row> {
    let mut rows = Vec::new();
    if t.status.is_open() {
        let (mark, word, mstyle) = status_mark(t.status);
        rows.push((
            LineStyle::Running,
            vec![(format!("{mark} {word}"), mstyle.into())],
        ));
    }
    let mut ended = None;
    for c in &t.content {
        match c {
            ToolContent::Terminal {
                output,
                dropped_bytes,
                exit,
                ..
            } => {
                if *dropped_bytes > 0 {
                    rows.push(row(
                        LineStyle::Marker,
                        &format!("[output truncated: {dropped_bytes} bytes dropped]"),
                        Kind::Plain,
                    ));
                }
                let mut lines = crate::ansi::AnsiLines::new();
                lines.feed(output);
                for l in lines.runs() {
                    rows.push((
                        LineStyle::Stdout,
                        l.into_iter()
                            .map(|(text, sgr)| (text, Tone::from(Kind::output(sgr))))
                            .collect(),
                    ));
                }
                if exit.is_some() {
                    ended = exit.clone();
                }
            }
            ToolContent::Text { text } => {
                for l in strip_fence(text).trim_end().split('\n') {
                    rows.push(row(
                        LineStyle::Marker,
                        &crate::markdown::sanitize(l),
                        Kind::Plain,
                    ));
                }
            }
            ToolContent::Diff { .. } => {}
        }
    }
    let (style, text) = match (t.status, ended) {
        (ToolStatus::Cancelled, _) => (LineStyle::Marker, "[aborted]".to_owned()),
        (_, Some(e)) => match (e.signal, e.exit_code) {
            (Some(sig), _) => (
                LineStyle::ExitFailed,
                format!("killed by signal {}", crate::markdown::sanitize(&sig)),
            ),
            (None, Some(0)) => (LineStyle::ExitOk, "exit 0".to_owned()),
            (None, Some(code)) => (LineStyle::ExitFailed, format!("exit {code}")),
            (None, None) => (LineStyle::ExitFailed, "exited".to_owned()),
        },
        // Ended without a terminal exit: the exit in its raw output, if any.
        (ToolStatus::Completed | ToolStatus::Failed, None) => match raw_exit(t) {
            Some(0) => (LineStyle::ExitOk, "exit 0".to_owned()),
            Some(code) => (LineStyle::ExitFailed, format!("exit {code}")),
            None if t.status == ToolStatus::Failed && rows.is_empty() => {
                (LineStyle::Marker, "[nothing ran]".to_owned())
            }
            None if rows.is_empty() => (LineStyle::ExitOk, "done".to_owned()),
            None => return rows,
        },
        _ => return rows,
    };
    rows.push(row(style, &text, Kind::Plain));
    rows
}

/// The exit status a call's raw output reports (`exitCode`, or `exit_code`).
fn raw_exit(t: &ToolCallPart) -> Option<i64> {
    let out = t.raw_output.as_ref()?;
    ["exit_code", "exitCode"]
        .iter()
        .find_map(|k| out.get(k).and_then(|v| v.as_i64()))
}

/// A title on one row: its line breaks shown as ` ↵ ` (the whole text is in the open card).
fn one_line(s: &str) -> String {
    crate::markdown::sanitize(&s.trim_end().replace("\r\n", "\n").replace('\n', " ↵ "))
}

fn clip(s: &str, max: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    let mut out = String::new();
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max {
            out.pop();
            out.push('…');
            return out;
        }
        used += w;
        out.push(c);
    }
    out
}

/// Whether an open card would show anything (without building it: a collapsed card is
/// rendered on every update of its tool call).
fn has_body(t: &ToolCallPart) -> bool {
    !t.locations.is_empty()
        || !t.content.is_empty()
        || t.raw_output.is_some()
        || t.raw_input.as_ref().is_some_and(|v| match v {
            serde_json::Value::Null => false,
            serde_json::Value::Object(m) => !m.is_empty(),
            _ => true,
        })
}

fn tool_call(t: &ToolCallPart, fold: Fold, width: usize) -> Vec<Row> {
    let mut rows = vec![card_header(t, fold, width, has_body(t))];
    if fold != Fold::Collapsed {
        let body = content_rows(&TurnPart::ToolCall(t.clone()), width);
        push_body(&mut rows, body, fold);
    }
    rows
}

fn push_body(rows: &mut Vec<Row>, body: Vec<Row>, fold: Fold) {
    match fold {
        Fold::Collapsed => {}
        Fold::Full => rows.extend(body),
        Fold::Open => {
            let n = body.len();
            rows.extend(body.into_iter().take(FOLD_ROWS));
            if n > FOLD_ROWS {
                rows.push(row(
                    LineStyle::ShowAll,
                    &format!(
                        "  … {} more rows · show all (Enter, or click here)",
                        n - FOLD_ROWS
                    ),
                    Kind::ShowAll,
                ));
            }
        }
    }
}

/// What an open card or permission shows under its header.
fn content_rows(part: &TurnPart, width: usize) -> Vec<Row> {
    match part {
        TurnPart::ToolCall(t) => request_rows(t, width),
        TurnPart::Permission(p) => request_rows(&p.tool_call, width),
        _ => Vec::new(),
    }
}

/// A tool call's locations, input command, content (an edit's diff, text, a terminal) and raw
/// output, as rows (the open card; the approval dialog shows the same).
pub fn request_rows(t: &ToolCallPart, width: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for l in &t.locations {
        let at = match l.line {
            Some(n) => format!("  @ {}:{n}", crate::markdown::sanitize(&l.path)),
            None => format!("  @ {}", crate::markdown::sanitize(&l.path)),
        };
        rows.push(row(LineStyle::Agent, &clip(&at, width), DIM));
    }
    if let Some(input) = &t.raw_input {
        input_rows(&mut rows, input, t, width);
    }
    for c in &t.content {
        match c {
            // Claude repeats its Bash description as content: the input row shows it.
            ToolContent::Text { text } if repeats_input(t, text) => {}
            ToolContent::Text { text } => ansi_rows(&mut rows, strip_fence(text), width),
            ToolContent::Diff {
                path,
                old_text,
                new_text,
                line,
            } => diff_rows(
                &mut rows,
                path,
                old_text.as_deref(),
                new_text,
                line.unwrap_or(1),
                width,
            ),
            ToolContent::Terminal {
                terminal_id,
                output,
                dropped_bytes,
                exit,
            } => {
                let state = match exit {
                    None => "running".to_owned(),
                    Some(e) => match (&e.signal, e.exit_code) {
                        (Some(sig), _) => format!("killed by {}", crate::markdown::sanitize(sig)),
                        (None, Some(code)) => format!("exit {code}"),
                        (None, None) => "ended".to_owned(),
                    },
                };
                rows.push(row(
                    LineStyle::Agent,
                    &format!(
                        "  terminal {} · {state}",
                        crate::markdown::sanitize(terminal_id)
                    ),
                    DIM,
                ));
                if *dropped_bytes > 0 {
                    rows.push(row(
                        LineStyle::Agent,
                        &format!("  [… {dropped_bytes} earlier bytes not kept …]"),
                        DIM,
                    ));
                }
                // Through the ANSI renderer: colours kept, `\r` overwrites, other escapes
                // dropped.
                ansi_rows(&mut rows, output, width);
            }
        }
    }
    if let Some(out) = t.raw_output.as_ref().filter(|o| !only_exit(o)) {
        let text = match out {
            serde_json::Value::String(s) => s.clone(),
            other => match ["output", "stdout", "formatted_output"]
                .iter()
                .find_map(|k| other.get(k).and_then(|v| v.as_str()))
            {
                Some(s) => s.to_owned(),
                None => serde_json::to_string_pretty(other).unwrap_or_default(),
            },
        };
        // Shown once: not again when the content already has it (fenced or not).
        if !text.trim().is_empty()
            && !t.content.iter().any(
                |c| matches!(c, ToolContent::Text { text: tt } if strip_fence(tt).trim() == text.trim()),
            )
        {
            ansi_rows(&mut rows, &text, width);
        }
    }
    rows
}

/// Whether a raw output says only how a command ended (`{exitCode, signal, truncated}`, the
/// `shell` agent's): the header and the terminal show that, so it is not shown as JSON.
pub fn only_exit(out: &serde_json::Value) -> bool {
    out.as_object().is_some_and(|m| {
        !m.is_empty()
            && m.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "exitCode" | "exit_code" | "signal" | "truncated"
                )
            })
    })
}

/// The agent's input, every field (`crate::tool_input`): the command as `$ `/`> ` lines,
/// then `key: value` rows; an edit's old and new text are named, not repeated.
fn input_rows(rows: &mut Vec<Row>, input: &serde_json::Value, t: &ToolCallPart, width: usize) {
    use crate::tool_input::InputLine;
    let (mut texts, mut paths): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for c in &t.content {
        if let ToolContent::Diff {
            path,
            old_text,
            new_text,
            ..
        } = c
        {
            texts.push(new_text);
            texts.extend(old_text.as_deref());
            paths.push(path);
        }
    }
    let shown = crate::tool_input::Shown {
        texts: &texts,
        paths: &paths,
    };
    for line in crate::tool_input::input_lines(input, shown) {
        match line {
            InputLine::Command { first, text } => {
                let lead = if first { "  $ " } else { "  > " };
                wrap_into(rows, &text, width, "    ", lead, DIM, Kind::Title);
            }
            InputLine::Field { key, value } => {
                wrap_into(
                    rows,
                    &value,
                    width,
                    "    ",
                    &format!("  {key}: "),
                    DIM,
                    Kind::Plain,
                );
            }
            InputLine::More(text) => {
                wrap_into(rows, &text, width, "    │ ", "    │ ", DIM, Kind::Plain)
            }
            InputLine::Note(text) => rows.push(row(LineStyle::Agent, &format!("  {text}"), DIM)),
        }
    }
}

/// Whether `text` is only a string field of the call's input, already shown as its row.
fn repeats_input(t: &ToolCallPart, text: &str) -> bool {
    let text = text.trim();
    !text.is_empty()
        && t.raw_input
            .as_ref()
            .and_then(|v| v.as_object())
            .is_some_and(|m| m.values().any(|v| v.as_str().map(str::trim) == Some(text)))
}

/// Output an agent wrapped in a Markdown code fence (Claude's run card: ```` ```console ````)
/// without the fence: it is shown as output, once.
pub fn strip_fence(text: &str) -> &str {
    let t = text.trim_end();
    let Some(rest) = t.strip_prefix("```") else {
        return text;
    };
    let Some((lang, body)) = rest.split_once('\n') else {
        return text;
    };
    if lang.contains('`') || lang.contains(' ') {
        return text;
    }
    match body.strip_suffix("```") {
        Some(inner) if !inner.contains("\n```") => inner.strip_suffix('\n').unwrap_or(inner),
        _ => text,
    }
}

/// Command output through the ANSI renderer (colours kept, `\r` overwrites), cut to width.
fn ansi_rows(rows: &mut Vec<Row>, text: &str, width: usize) {
    let mut lines = crate::ansi::AnsiLines::new();
    lines.feed(text);
    for l in lines.runs() {
        let mut pieces = vec![("  ".to_owned(), Tone::default())];
        let mut used = 2;
        for (content, sgr) in l {
            let tone = Tone::from(Kind::output(sgr));
            let mut piece = String::new();
            for c in content.chars() {
                let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                if used + w > width {
                    pieces.push((std::mem::take(&mut piece), tone));
                    rows.push((LineStyle::Agent, std::mem::take(&mut pieces)));
                    pieces.push(("  ".to_owned(), Tone::default()));
                    used = 2;
                }
                piece.push(c);
                used += w;
            }
            pieces.push((piece, tone));
        }
        rows.push((LineStyle::Agent, pieces));
    }
}

/// An edit's diff; `first_line` is where the fragment starts in the file (the backend finds
/// it, docs/agents.md §4), so hunks carry the file's line numbers, not the fragment's.
fn diff_rows(
    rows: &mut Vec<Row>,
    path: &str,
    old: Option<&str>,
    new: &str,
    first_line: u32,
    width: usize,
) {
    let path = crate::markdown::sanitize(path);
    let head = Kind::DiffFile;
    match old {
        Some(_) => rows.push(row(
            LineStyle::Agent,
            &clip(&format!("  --- {path}"), width),
            head,
        )),
        None => rows.push(row(
            LineStyle::Agent,
            &clip(&format!("  --- (new file) {path}"), width),
            head,
        )),
    }
    rows.push(row(
        LineStyle::Agent,
        &clip(&format!("  +++ {path}"), width),
        head,
    ));
    for line in unified_diff_at(old.unwrap_or(""), new, 3, first_line as usize) {
        let (style, text) = match line {
            DiffLine::Hunk(h) => (Kind::DiffHunk, h),
            DiffLine::Same(s) => (Kind::Plain, format!(" {s}")),
            DiffLine::Added(s) => (Kind::DiffAdded, format!("+{s}")),
            DiffLine::Removed(s) => (Kind::DiffRemoved, format!("-{s}")),
        };
        let text = crate::markdown::sanitize(&text);
        let mut rest = text.as_str();
        loop {
            let cut = hard_cut(rest, width.saturating_sub(2).max(1));
            rows.push((
                LineStyle::Agent,
                vec![
                    ("  ".into(), Tone::default()),
                    (rest[..cut].to_owned(), style.into()),
                ],
            ));
            rest = &rest[cut..];
            if rest.is_empty() {
                break;
            }
        }
    }
}

/// The byte index where `s` stops fitting `room` cells (at least one char).
fn hard_cut(s: &str, room: usize) -> usize {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room && i > 0 {
            return i;
        }
        used += w;
    }
    s.len()
}

fn permission(p: &PermissionPart, fold: Fold, width: usize) -> Vec<Row> {
    let title = if p.tool_call.title.is_empty() {
        kind_label(p.tool_call.kind).to_owned()
    } else {
        one_line(&p.tool_call.title)
    };
    // The icon says the answer: `?` only while it waits.
    let (icon, state, style) = match &p.outcome {
        PermissionOutcome::Pending => ("?", "waiting for you".to_owned(), Kind::PermissionWaiting),
        PermissionOutcome::Cancelled => ("⊘", "cancelled".to_owned(), DIM),
        PermissionOutcome::Selected { option_id, kind } => {
            let name = p
                .options
                .iter()
                .find(|o| &o.option_id == option_id)
                .map(|o| crate::markdown::sanitize(&o.name))
                .unwrap_or_else(|| crate::markdown::sanitize(option_id));
            let (icon, word, s) = match kind {
                PermissionKind::AllowOnce => ("✓", "allowed once", Kind::PermissionAllowed),
                PermissionKind::AllowAlways => ("✓", "always allowed", Kind::PermissionAllowed),
                PermissionKind::RejectOnce => ("✗", "rejected", Kind::PermissionRejected),
                PermissionKind::RejectAlways => ("✗", "always rejected", Kind::PermissionRejected),
            };
            (icon, format!("{word} (“{name}”)"), s)
        }
    };
    let body = if fold == Fold::Collapsed {
        Vec::new()
    } else {
        content_rows(&TurnPart::Permission(p.clone()), width)
    };
    let arrow = match (!has_body(&p.tool_call), fold) {
        (true, _) => "",
        (false, Fold::Collapsed) => " ▸",
        (false, _) => " ▾",
    };
    let fixed = 14 + state.chars().count() + arrow.chars().count();
    let mut rows = vec![(
        LineStyle::Agent,
        vec![
            (format!("{icon} "), style.into()),
            ("permission: ".to_owned(), Kind::PermissionLabel.into()),
            (
                clip(&title, width.saturating_sub(fixed).max(4)),
                Kind::Title.into(),
            ),
            (format!(" — {state}"), style.into()),
            (arrow.to_owned(), DIM.into()),
        ],
    )];
    push_body(&mut rows, body, fold);
    rows
}

/// One line of a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffLine {
    /// `@@ -a,b +c,d @@`
    Hunk(String),
    /// A line both sides have.
    Same(String),
    /// A line only the new text has.
    Added(String),
    /// A line only the old text has.
    Removed(String),
}

/// Largest table the line diff fills before it treats the changed middle as replaced whole.
const DIFF_CELLS: usize = 4_000_000;

/// A unified line diff of `old` → `new` with `context` lines around each change.
///
/// Common leading and trailing lines are taken off first; the changed middle is aligned by a
/// longest-common-subsequence table, or, when that table would exceed `DIFF_CELLS`, shown as
/// removed then added (still a correct diff, only less minimal).
pub fn unified_diff(old: &str, new: &str, context: usize) -> Vec<DiffLine> {
    unified_diff_at(old, new, context, 1)
}

/// [`unified_diff`] of fragments that start at line `first_line` (1-based) of the file: the
/// hunks are numbered as in the file.
pub fn unified_diff_at(old: &str, new: &str, context: usize, first_line: usize) -> Vec<DiffLine> {
    let shift = first_line.max(1) - 1;
    let a: Vec<&str> = if old.is_empty() {
        Vec::new()
    } else {
        old.lines().collect()
    };
    let b: Vec<&str> = if new.is_empty() {
        Vec::new()
    } else {
        new.lines().collect()
    };
    // Edit script: (op, index in a, index in b); op 0 same, 1 removed, 2 added.
    let mut ops: Vec<(u8, usize, usize)> = Vec::with_capacity(a.len().max(b.len()));
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    for i in 0..pre {
        ops.push((0, i, i));
    }
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    if (am.len() + 1).saturating_mul(bm.len() + 1) <= DIFF_CELLS {
        // lcs[i][j] = LCS length of am[i..], bm[j..].
        let w = bm.len() + 1;
        let mut lcs = vec![0u32; (am.len() + 1) * w];
        for i in (0..am.len()).rev() {
            for j in (0..bm.len()).rev() {
                lcs[i * w + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < am.len() || j < bm.len() {
            if i < am.len() && j < bm.len() && am[i] == bm[j] {
                ops.push((0, pre + i, pre + j));
                i += 1;
                j += 1;
            } else if i < am.len() && (j == bm.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])
            {
                // Removed before added, as `diff -u` shows a change.
                ops.push((1, pre + i, pre + j));
                i += 1;
            } else {
                ops.push((2, pre + i, pre + j));
                j += 1;
            }
        }
    } else {
        for i in 0..am.len() {
            ops.push((1, pre + i, pre));
        }
        for j in 0..bm.len() {
            ops.push((2, pre + am.len(), pre + j));
        }
    }
    for k in 0..suf {
        ops.push((0, a.len() - suf + k, b.len() - suf + k));
    }
    // Group into hunks: changes with up to `context` same lines around them.
    let mut out = Vec::new();
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != 0).collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(context);
        let mut end = changed[k] + 1;
        while k < changed.len() && changed[k] <= end + 2 * context {
            end = changed[k] + 1;
            k += 1;
        }
        let end = (end + context).min(ops.len());
        let (a0, b0) = (ops[start].1, ops[start].2);
        let a_n = ops[start..end].iter().filter(|o| o.0 != 2).count();
        let b_n = ops[start..end].iter().filter(|o| o.0 != 1).count();
        out.push(DiffLine::Hunk(format!(
            "@@ -{},{a_n} +{},{b_n} @@",
            shift + if a_n == 0 { a0 } else { a0 + 1 },
            shift + if b_n == 0 { b0 } else { b0 + 1 }
        )));
        for &(op, i, j) in &ops[start..end] {
            out.push(match op {
                0 => DiffLine::Same(a[i].to_owned()),
                1 => DiffLine::Removed(a[i].to_owned()),
                _ => DiffLine::Added(b[j].to_owned()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(d: &[DiffLine]) -> Vec<String> {
        d.iter()
            .map(|l| match l {
                DiffLine::Hunk(h) => h.clone(),
                DiffLine::Same(s) => format!(" {s}"),
                DiffLine::Added(s) => format!("+{s}"),
                DiffLine::Removed(s) => format!("-{s}"),
            })
            .collect()
    }

    #[test]
    fn a_small_edit_is_one_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\n";
        assert_eq!(
            text(&unified_diff(old, new, 3)),
            [
                "@@ -1,7 +1,7 @@",
                " a",
                " b",
                " c",
                "-d",
                "+D",
                " e",
                " f",
                " g"
            ]
        );
    }

    #[test]
    fn hunks_carry_the_files_line_numbers() {
        assert_eq!(
            text(&unified_diff_at("x = 1", "x = 2", 3, 5)),
            ["@@ -5,1 +5,1 @@", "-x = 1", "+x = 2"]
        );
        assert_eq!(text(&unified_diff_at("a", "b", 3, 0))[0], "@@ -1,1 +1,1 @@");
    }

    #[test]
    fn new_files_and_far_apart_changes() {
        assert_eq!(
            text(&unified_diff("", "x\ny", 3)),
            ["@@ -0,0 +1,2 @@", "+x", "+y"]
        );
        let old: String = (0..20).map(|i| format!("{i}\n")).collect();
        let new: String = (0..20)
            .map(|i| match i {
                2 => "two\n".to_owned(),
                17 => "seventeen\n".to_owned(),
                i => format!("{i}\n"),
            })
            .collect();
        let d = text(&unified_diff(&old, &new, 1));
        assert_eq!(
            d,
            [
                "@@ -2,3 +2,3 @@",
                " 1",
                "-2",
                "+two",
                " 3",
                "@@ -17,3 +17,3 @@",
                " 16",
                "-17",
                "+seventeen",
                " 18"
            ]
        );
        assert!(unified_diff("same\n", "same\n", 3).is_empty());
    }

    #[test]
    fn folds_cycle_and_long_content_shows_all() {
        assert_eq!(Fold::Collapsed.next(false), Fold::Open);
        assert_eq!(Fold::Open.next(false), Fold::Collapsed);
        assert_eq!(Fold::Open.next(true), Fold::Full);
        assert_eq!(Fold::Full.next(true), Fold::Collapsed);
        let t = ToolCallPart {
            tool_call_id: "t".into(),
            title: "Run".into(),
            content: vec![ToolContent::Text {
                text: (0..40).map(|i| format!("line {i}\n")).collect(),
            }],
            ..ToolCallPart::default()
        };
        let part = TurnPart::ToolCall(t);
        assert!(is_long(&part, 80));
        assert_eq!(render(&part, Fold::Collapsed, false, 80).len(), 1);
        let open = render(&part, Fold::Open, false, 80);
        assert_eq!(open.len(), 1 + FOLD_ROWS + 1);
        assert_eq!(open.last().unwrap().0, LineStyle::ShowAll);
        assert_eq!(render(&part, Fold::Full, false, 80).len(), 1 + 40);
    }
}
