//! The open session's transcript as display lines, with a row index.
//!
//! Parts stream in and are appended as logical lines; each line's wrapped row count is kept in
//! a cumulative index (`rows_end`), so drawing finds the visible window by binary search and
//! touches only the lines on screen. A very long line is split at [`MAX_LINE_CHARS`] when it
//! is appended, so one line can never make a frame expensive.

use std::collections::HashMap;

use ax_protocol::turn::{ToolContent, ToolKind, TurnDelta, TurnPart};
use ax_protocol::{Message, Part, Role, Stream};
use unicode_width::UnicodeWidthChar;

use crate::ansi::{AnsiParser, Op};
use crate::kind::{Kind, LineStyle, Tone};
use crate::turn_view::{self, Fold, Row, Terminals};

/// Logical lines longer than this are continued on a new line.
pub const MAX_LINE_CHARS: usize = 2048;

#[derive(Debug, Clone)]
struct TextLine {
    style: LineStyle,
    text: String,
    /// Display width in cells.
    width: u32,
    /// Every char is exactly one cell wide, so rows are a division.
    uniform: bool,
    chars: u32,
    /// What runs of the line are (command output's ANSI styles, the parts of an agent's
    /// turn): (byte offset, tone) where each run starts. `None` for a line drawn entirely in
    /// its [`LineStyle`], which is most lines.
    runs: Option<Vec<(u32, Tone)>>,
}

#[derive(Debug, Clone)]
struct MessageCursor {
    id: String,
    parts: u32,
    /// The first line after the message's header (its body starts here).
    first_line: usize,
    /// An output line still waiting for its newline.
    open_line: Option<usize>,
    /// Char column in the open line after a `\r` or backspace; `None` at its end.
    open_col: Option<u32>,
    /// Escape-sequence state per stream (stdout, stderr), carried across chunks.
    ansi: [AnsiParser; 2],
    role: Role,
    /// When the message was created (ms since the epoch), for its turn's duration.
    created: i64,
    /// An agent's turn parts (its text and the ACP parts), folded from parts and deltas.
    turn: Vec<TurnPart>,
    /// The [`Block`] of each turn part, by part index.
    blocks: Vec<usize>,
    /// `message.delta`s applied so far (a loaded message starts at its `deltas`); `None` when
    /// unknown.
    seq: Option<u64>,
}

/// The lines of one turn part: where they are, and (for agent text) how much of the Markdown
/// is final.
#[derive(Debug, Clone)]
struct Block {
    first: usize,
    len: usize,
    message: usize,
    part: usize,
    /// Agent text: the byte end of its final segments, their line count, and whether a code
    /// fence is open there (see [`md_safe_points`]).
    md: Option<(usize, usize, bool)>,
}

/// What happened to a streamed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartOutcome {
    /// The part was added to the transcript.
    Applied,
    /// Already seen (replayed after a resync): ignored.
    Duplicate,
    /// A gap or an unknown message: the transcript must be reloaded.
    NeedsReload,
}

/// The line that ends a turn: how long it took (`took_ms`) and when it ended (`ended`, ms
/// since the epoch).
pub fn turn_end_text(took_ms: i64, ended: i64) -> String {
    format!(
        "── turn took {} · ended {} UTC",
        crate::progress::format_duration(std::time::Duration::from_millis(took_ms.max(0) as u64)),
        ax_protocol::time::format_utc_minutes(ended)
    )
}

/// One visible row with where it comes from, see [`Transcript::visible_indexed`].
#[derive(Debug, Clone)]
pub struct IndexedRow<'a> {
    /// The logical line.
    pub line: usize,
    /// Byte offset of the row in that line.
    pub start: usize,
    /// How the line is drawn.
    pub style: LineStyle,
    /// The row cut into (text, tone) pieces.
    pub pieces: Vec<(&'a str, Tone)>,
}

/// Display lines of one session.
#[derive(Debug, Clone)]
pub struct Transcript {
    lines: Vec<TextLine>,
    rows_end: Vec<usize>,
    wrap: u16,
    messages: Vec<MessageCursor>,
    blocks: Vec<Block>,
    /// Fold state of the parts the person opened, by (message id, part index).
    folds: HashMap<(String, usize), Fold>,
    /// The part the keyboard acts on (Tab, Enter).
    focus: Option<(String, usize)>,
    /// A delta was applied to a loaded message whose delta count was unknown, so it may have
    /// been in the load already; the owner reloads once the turn ends.
    uncertain: bool,
    /// The end line of turns seen ending here, by the message they follow (kept by reloads).
    turn_ends: HashMap<String, String>,
    /// How tool calls' terminals show: as runs in a `shell` session.
    terminals: Terminals,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::new(80)
    }
}

impl Transcript {
    /// An empty transcript wrapped at `wrap` columns.
    pub fn new(wrap: u16) -> Transcript {
        Transcript {
            lines: Vec::new(),
            rows_end: Vec::new(),
            wrap: wrap.max(1),
            messages: Vec::new(),
            blocks: Vec::new(),
            folds: HashMap::new(),
            focus: None,
            uncertain: false,
            turn_ends: HashMap::new(),
            terminals: Terminals::InCard,
        }
    }

    /// Shows tool calls' terminals as `terminals` says (a `shell` session's as runs); set
    /// before messages are added (a reload keeps it).
    pub fn set_terminals(&mut self, terminals: Terminals) {
        if self.terminals != terminals {
            self.terminals = terminals;
            self.rerender_all();
        }
    }

    /// Like [`Transcript::from_messages`], keeping the fold states and focus of `old` (a
    /// reload of the same session).
    pub fn reloaded(messages: &[Message], wrap: u16, old: &Transcript) -> Transcript {
        let mut t = Transcript::new(wrap);
        t.folds = old.folds.clone();
        t.focus = old.focus.clone();
        t.turn_ends = old.turn_ends.clone();
        t.terminals = old.terminals;
        for m in messages {
            t.end_of_turn_line();
            t.add_message(m);
        }
        t.end_of_turn_line();
        t
    }

    /// An empty transcript that keeps the turn end lines seen by `old` (they are not stored
    /// by the backend; message ids are unique, so one map serves every session).
    pub fn keeping_turn_ends(wrap: u16, old: &Transcript) -> Transcript {
        let mut t = Transcript::new(wrap);
        t.turn_ends = old.turn_ends.clone();
        t
    }

    /// The turn end line of the last message, if one was seen.
    fn end_of_turn_line(&mut self) {
        if let Some(text) = self
            .messages
            .last()
            .and_then(|m| self.turn_ends.get(&m.id))
            .cloned()
        {
            self.push(LineStyle::TurnEnd, &text);
        }
    }

    /// Builds the lines of a loaded transcript.
    pub fn from_messages(messages: &[Message], wrap: u16) -> Transcript {
        Transcript::reloaded(messages, wrap, &Transcript::new(wrap))
    }

    /// Logical lines (before wrapping).
    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// Screen rows at the current wrap width.
    pub fn total_rows(&self) -> usize {
        self.rows_end.last().copied().unwrap_or(0)
    }

    /// Messages seen.
    pub fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// Re-wraps for a new width. Costs one pass over the lines; only on resize.
    pub fn set_wrap(&mut self, wrap: u16) {
        let wrap = wrap.max(1);
        if wrap == self.wrap {
            return;
        }
        self.wrap = wrap;
        if !self.blocks.is_empty() {
            self.rerender_all();
            return;
        }
        let mut acc = 0;
        for (i, line) in self.lines.iter().enumerate() {
            acc += rows_of(line, wrap);
            self.rows_end[i] = acc;
        }
    }

    /// Renders every turn part again (a new width): one pass over the lines.
    fn rerender_all(&mut self) {
        let old = std::mem::take(&mut self.lines);
        let open_last = old.len().checked_sub(1);
        let mut old = old.into_iter().enumerate().peekable();
        let mut lines = Vec::with_capacity(old.len());
        for b in 0..self.blocks.len() {
            let Block { first, len, .. } = self.blocks[b];
            while old.peek().is_some_and(|(i, _)| *i < first) {
                lines.push(old.next().expect("peeked").1);
            }
            while old.peek().is_some_and(|(i, _)| *i < first + len) {
                old.next();
            }
            self.blocks[b].md = None;
            let new_first = lines.len();
            let (_, rendered) = self.render_block(b);
            self.blocks[b].first = new_first;
            self.blocks[b].len = rendered.len();
            lines.extend(rendered);
        }
        lines.extend(old.map(|(_, l)| l));
        for m in &mut self.messages {
            // Only the last line can be open; it stays the last line.
            if m.open_line.is_some() && m.open_line == open_last {
                m.open_line = lines.len().checked_sub(1);
            } else {
                m.open_line = None;
            }
        }
        self.lines = lines;
        self.rows_end.clear();
        let mut acc = 0;
        for line in &self.lines {
            acc += rows_of(line, self.wrap);
            self.rows_end.push(acc);
        }
    }

    /// Adds a new message with the parts it already has. A message seen before is ignored.
    pub fn add_message(&mut self, m: &Message) -> PartOutcome {
        if self.messages.iter().rev().any(|c| c.id == m.id.as_str()) {
            // Replayed: apply any parts we do not have yet.
            let mut outcome = PartOutcome::Duplicate;
            for (i, part) in m.parts.iter().enumerate() {
                match self.apply_part(m.id.as_str(), i as u32, part) {
                    PartOutcome::NeedsReload => return PartOutcome::NeedsReload,
                    PartOutcome::Applied => outcome = PartOutcome::Applied,
                    PartOutcome::Duplicate => {}
                }
            }
            return outcome;
        }
        if !self.lines.is_empty() {
            self.push(LineStyle::Blank, "");
        }
        match m.role {
            Role::User => self.push(LineStyle::UserHeader, "you"),
            Role::Assistant => self.push(LineStyle::AgentHeader, "agent"),
        }
        self.messages.push(MessageCursor {
            id: m.id.to_string(),
            parts: 0,
            first_line: self.lines.len(),
            open_line: None,
            open_col: None,
            ansi: Default::default(),
            role: m.role,
            created: m.created,
            turn: Vec::new(),
            blocks: Vec::new(),
            // The backend says how many deltas its parts hold: later ones apply on top.
            seq: Some(m.deltas),
        });
        if let Some(ended) = m.ended {
            // The stored end is the truth, also for turns that ended before we started.
            self.turn_ends
                .insert(m.id.to_string(), turn_end_text(ended - m.created, ended));
        }
        for (i, part) in m.parts.iter().enumerate() {
            self.apply_part(m.id.as_str(), i as u32, part);
        }
        PartOutcome::Applied
    }

    /// Appends part `index` of a message. Parts are idempotent by index.
    pub fn apply_part(&mut self, message_id: &str, index: u32, part: &Part) -> PartOutcome {
        let Some(pos) = self.messages.iter().rposition(|c| c.id == message_id) else {
            return PartOutcome::NeedsReload;
        };
        let have = self.messages[pos].parts;
        if index < have {
            return PartOutcome::Duplicate;
        }
        // A gap, or a part for an earlier message (lines are append-only): reload.
        if index > have || pos + 1 != self.messages.len() {
            return PartOutcome::NeedsReload;
        }
        self.messages[pos].parts += 1;
        let agent = self.messages[pos].role == Role::Assistant;
        match part {
            Part::Output { stream, text } => self.append_output(pos, *stream, text),
            Part::Text { text } if agent => {
                self.messages[pos].open_line = None;
                self.push_turn_part(pos, TurnPart::Text { text: text.clone() });
            }
            Part::Turn(p) => {
                self.messages[pos].open_line = None;
                self.push_turn_part(pos, p.clone());
            }
            other => {
                self.messages[pos].open_line = None;
                self.messages[pos].open_col = None;
                match other {
                    Part::Text { text } => {
                        for l in text.split('\n') {
                            self.push(LineStyle::UserText, l);
                        }
                    }
                    Part::File { path } => self.push(LineStyle::File, &format!("attached {path}")),
                    Part::Image {
                        index,
                        mime_type,
                        bytes,
                        name,
                    } => self.push(
                        LineStyle::File,
                        &crate::attach::image_chip(*index, mime_type, *bytes, name),
                    ),
                    Part::Truncated { dropped_bytes } => self.push(
                        LineStyle::Marker,
                        &format!("[output truncated: {dropped_bytes} bytes dropped]"),
                    ),
                    Part::Exit { code, signal } => match (code, signal) {
                        (Some(0), _) => self.push(LineStyle::ExitOk, "exit 0"),
                        (Some(c), _) => self.push(LineStyle::ExitFailed, &format!("exit {c}")),
                        (None, Some(s)) => {
                            self.push(LineStyle::ExitFailed, &format!("killed by signal {s}"))
                        }
                        (None, None) => self.push(LineStyle::ExitFailed, "exited"),
                    },
                    Part::Rejected => self.push(LineStyle::Marker, "[rejected: nothing ran]"),
                    Part::Aborted => self.push(LineStyle::Marker, "[aborted]"),
                    Part::Interrupted => {
                        self.push(LineStyle::Marker, "[interrupted by a backend restart]")
                    }
                    Part::Output { .. } | Part::Turn(_) => unreachable!("handled above"),
                }
            }
        }
        PartOutcome::Applied
    }

    // ---- agent turns ---------------------------------------------------------------------

    /// Appends a turn part to message `pos` (the last message) as a new block.
    fn push_turn_part(&mut self, pos: usize, part: TurnPart) {
        let part_idx = self.messages[pos].turn.len();
        self.messages[pos].turn.push(part);
        let b = self.blocks.len();
        self.blocks.push(Block {
            first: self.lines.len(),
            len: 0,
            message: pos,
            part: part_idx,
            md: None,
        });
        self.messages[pos].blocks.push(b);
        self.refresh_block(b);
    }

    /// Folds a `message.delta` into its message. Idempotent by `seq`; a gap, an unknown
    /// message, or a new part for a message that is not the last asks for a reload.
    pub fn apply_delta(&mut self, message_id: &str, seq: u64, delta: TurnDelta) -> PartOutcome {
        let Some(pos) = self.messages.iter().rposition(|c| c.id == message_id) else {
            return PartOutcome::NeedsReload;
        };
        match self.messages[pos].seq {
            Some(have) if seq <= have => return PartOutcome::Duplicate,
            Some(have) if seq > have + 1 => return PartOutcome::NeedsReload,
            Some(_) => {}
            None => self.uncertain = true,
        }
        let turn = &self.messages[pos].turn;
        let last = turn.len().checked_sub(1);
        let find_tool = |id: &str| {
            turn.iter()
                .rposition(|p| matches!(p, TurnPart::ToolCall(t) if t.tool_call_id == id))
        };
        let target = match &delta {
            TurnDelta::TextAppended { .. } => {
                last.filter(|&i| matches!(turn[i], TurnPart::Text { .. }))
            }
            TurnDelta::ThoughtAppended { .. } => {
                last.filter(|&i| matches!(turn[i], TurnPart::Thought { .. }))
            }
            TurnDelta::ToolCallCreated { tool_call } => find_tool(&tool_call.tool_call_id),
            TurnDelta::ToolCallUpdated { tool_call_id, .. } => find_tool(tool_call_id),
            TurnDelta::PlanReplaced { .. } => turn
                .iter()
                .rposition(|p| matches!(p, TurnPart::Plan { .. })),
            TurnDelta::PermissionAnswered { permission_id, .. } => {
                match turn.iter().rposition(
                    |p| matches!(p, TurnPart::Permission(x) if &x.permission_id == permission_id),
                ) {
                    Some(i) => Some(i),
                    // Nothing to change (apply ignores it too).
                    None => {
                        self.messages[pos].seq = Some(seq);
                        return PartOutcome::Applied;
                    }
                }
            }
            TurnDelta::TerminalOutput { terminal_id, .. }
            | TurnDelta::TerminalExited { terminal_id, .. } => {
                match turn.iter().rposition(|p| {
                    matches!(p, TurnPart::ToolCall(t) if t.content.iter().any(|c| matches!(
                        c, ToolContent::Terminal { terminal_id: id, .. } if id == terminal_id)))
                }) {
                    Some(i) => Some(i),
                    // No card shows it: nothing changes (apply ignores it too).
                    None => {
                        self.messages[pos].seq = Some(seq);
                        return PartOutcome::Applied;
                    }
                }
            }
            TurnDelta::PermissionAsked { .. } | TurnDelta::Notice { .. } => None,
        };
        if target.is_none() && pos + 1 != self.messages.len() {
            return PartOutcome::NeedsReload;
        }
        self.messages[pos].seq = Some(seq);
        let before = self.messages[pos].turn.len();
        ax_protocol::turn::apply(&mut self.messages[pos].turn, delta);
        match target {
            Some(i) => {
                let b = self.messages[pos].blocks[i];
                self.refresh_block(b);
            }
            None => {
                // `apply` pushed exactly one part.
                let part = self.messages[pos].turn.pop().expect("a new part");
                debug_assert_eq!(self.messages[pos].turn.len(), before);
                self.messages[pos].open_line = None;
                self.push_turn_part(pos, part);
            }
        }
        PartOutcome::Applied
    }

    /// Whether a delta may have been applied twice (see the field); cleared by a reload.
    pub fn uncertain(&self) -> bool {
        self.uncertain
    }

    fn part_key(&self, b: usize) -> (String, usize) {
        let blk = &self.blocks[b];
        (self.messages[blk.message].id.clone(), blk.part)
    }

    fn block_part(&self, b: usize) -> &TurnPart {
        let blk = &self.blocks[b];
        &self.messages[blk.message].turn[blk.part]
    }

    /// The lines of block `b` as they should be now, and how many of its current leading
    /// lines stay as they are.
    fn render_block(&mut self, b: usize) -> (usize, Vec<TextLine>) {
        let key = self.part_key(b);
        let fold = self.folds.get(&key).copied().unwrap_or_default();
        let focused = self.focus.as_ref() == Some(&key);
        let wrap = self.wrap;
        let blk = &self.blocks[b];
        let part = &self.messages[blk.message].turn[blk.part];
        if let TurnPart::Text { text } = part {
            // Markdown in final segments plus a tail: only the tail is rendered again.
            let (mut end, mut keep, mut fence) = blk.md.unwrap_or((0, 0, false));
            if end > text.len() {
                (end, keep, fence) = (0, 0, false);
            }
            let (points, fence_at_last) = md_safe_points(text, end, fence);
            let mut new = Vec::new();
            let mut from = end;
            for p in &points {
                let seg = md_lines(&text[from..*p], wrap);
                if !seg.is_empty() {
                    new.extend(seg);
                    new.push(blank_line());
                }
                from = *p;
            }
            let stable = keep + new.len();
            new.extend(md_lines(&text[from..], wrap));
            if let Some(&last) = points.last() {
                (end, fence) = (last, fence_at_last);
            }
            self.blocks[b].md = Some((end, stable, fence));
            return (keep, new);
        }
        (
            0,
            rows_to_lines(turn_view::render_with(
                part,
                fold,
                focused,
                wrap,
                self.terminals,
            )),
        )
    }

    /// Brings block `b`'s lines up to date, in place.
    fn refresh_block(&mut self, b: usize) {
        let (keep, new) = self.render_block(b);
        let Block { first, len, .. } = self.blocks[b];
        let keep = keep.min(len);
        let at = first + keep;
        let old_len = len - keep;
        let new_len = new.len();
        let tail_end = at + old_len;
        self.lines.splice(at..tail_end, new);
        self.blocks[b].len = keep + new_len;
        let shift = new_len as isize - old_len as isize;
        if shift != 0 {
            for blk in &mut self.blocks[b + 1..] {
                blk.first = (blk.first as isize + shift) as usize;
            }
            for m in &mut self.messages {
                if let Some(l) = m.open_line
                    && l >= tail_end
                {
                    m.open_line = Some((l as isize + shift) as usize);
                }
            }
        }
        // Row index: only from the first changed line on (nothing after it for a part
        // streaming at the end).
        self.rows_end.truncate(at);
        let mut acc = at.checked_sub(1).map_or(0, |i| self.rows_end[i]);
        for line in &self.lines[at..] {
            acc += rows_of(line, self.wrap);
            self.rows_end.push(acc);
        }
    }

    /// Foldable parts in transcript order: (message id, part index).
    fn foldable_blocks(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        (0..self.blocks.len()).filter(|&b| turn_view::foldable(self.block_part(b)))
    }

    fn block_of(&self, key: &(String, usize)) -> Option<usize> {
        let pos = self.messages.iter().rposition(|m| m.id == key.0)?;
        self.messages[pos].blocks.get(key.1).copied()
    }

    /// The focused part, if any.
    pub fn focus(&self) -> Option<&(String, usize)> {
        self.focus.as_ref()
    }

    /// Moves the focus to the next (`forward`) or previous foldable part; from no focus, to
    /// the newest one. Returns the focused block's first row, to scroll it into view.
    pub fn move_focus(&mut self, forward: bool) -> Option<usize> {
        let cur = self.focus.as_ref().and_then(|k| self.block_of(k));
        let next = match cur {
            None => self.foldable_blocks().next_back(),
            Some(c) if forward => self.foldable_blocks().find(|&b| b > c),
            Some(c) => self.foldable_blocks().rev().find(|&b| b < c),
        }
        .or(cur)?;
        self.set_focus(Some(next));
        Some(self.row_of_line(self.blocks[next].first))
    }

    /// Clears the focus.
    pub fn clear_focus(&mut self) {
        self.set_focus(None);
    }

    fn set_focus(&mut self, b: Option<usize>) {
        let old = self.focus.as_ref().and_then(|k| self.block_of(k));
        self.focus = b.map(|b| self.part_key(b));
        for x in [old, b].into_iter().flatten() {
            self.refresh_block(x);
        }
    }

    /// Opens or closes the focused part (collapsed → open → all → collapsed).
    pub fn toggle_focused(&mut self) -> bool {
        match self.focus.as_ref().and_then(|k| self.block_of(k)) {
            Some(b) => {
                self.cycle(b);
                true
            }
            None => false,
        }
    }

    fn cycle(&mut self, b: usize) {
        let key = self.part_key(b);
        let fold = self.folds.get(&key).copied().unwrap_or_default();
        let long = turn_view::is_long(self.block_part(b), self.wrap);
        self.set_fold(b, fold.next(long));
    }

    fn set_fold(&mut self, b: usize, fold: Fold) {
        let key = self.part_key(b);
        if fold == Fold::Collapsed {
            self.folds.remove(&key);
        } else {
            self.folds.insert(key, fold);
        }
        self.refresh_block(b);
    }

    /// A click on transcript row `row` (counted from the top of the whole transcript): on a
    /// foldable part's first row it opens or closes it, on "show all" it shows everything.
    /// Returns whether it did something.
    pub fn click_row(&mut self, row: usize) -> bool {
        let line = self.rows_end.partition_point(|&e| e <= row);
        if line >= self.lines.len() {
            return false;
        }
        let b = self.blocks.partition_point(|blk| blk.first <= line);
        let Some(b) = b.checked_sub(1) else {
            return false;
        };
        let blk = &self.blocks[b];
        if line >= blk.first + blk.len || !turn_view::foldable(self.block_part(b)) {
            return false;
        }
        self.set_focus(Some(b));
        if self.lines[line].style == LineStyle::ShowAll {
            self.set_fold(b, Fold::Full);
            true
        } else if line == self.blocks[b].first {
            let key = self.part_key(b);
            let fold = self.folds.get(&key).copied().unwrap_or_default();
            let next = if fold == Fold::Collapsed {
                Fold::Open
            } else {
                Fold::Collapsed
            };
            self.set_fold(b, next);
            true
        } else {
            true
        }
    }

    /// Whether the person opened a part (it then holds their attention; see docs/tui.md §4).
    pub fn any_expanded(&self) -> bool {
        !self.folds.is_empty()
    }

    /// The first row (from the top) of line `line`.
    fn row_of_line(&self, line: usize) -> usize {
        line.checked_sub(1).map_or(0, |i| self.rows_end[i])
    }

    /// The first row of the window [`Transcript::visible`] shows for these arguments.
    pub fn window_start(&self, height: usize, scroll: usize) -> usize {
        let end = self
            .total_rows()
            .saturating_sub(scroll.min(self.max_scroll(height)));
        end.saturating_sub(height)
    }

    /// Appends the end of a turn as this TUI's clock measured it, unless the turn's stored
    /// end ([`Transcript::end_turn`]) is already shown.
    pub fn push_turn_end(&mut self, text: &str) {
        let Some(m) = self.messages.last_mut() else {
            return;
        };
        m.open_line = None;
        let id = m.id.clone();
        if let std::collections::hash_map::Entry::Vacant(e) = self.turn_ends.entry(id) {
            e.insert(text.to_owned());
            self.push(LineStyle::TurnEnd, text);
        }
    }

    /// The backend stored `ended` as the end of message `id`'s turn (`message.ended`): its end
    /// line shows that, as a reload would. Drawn at once when it is the last message, else
    /// kept for the next rebuild.
    pub fn end_turn(&mut self, id: &str, ended: i64) {
        if self.turn_ends.contains_key(id) {
            return;
        }
        let Some(i) = self.messages.iter().rposition(|m| m.id == id) else {
            return;
        };
        let text = turn_end_text(ended - self.messages[i].created, ended);
        if i + 1 == self.messages.len() {
            self.push_turn_end(&text);
        } else {
            self.turn_ends.insert(id.to_owned(), text);
        }
    }

    /// The turn parts of every message, for tests and snapshots of the state model.
    pub fn turn_parts(&self) -> Vec<(&str, &[TurnPart])> {
        self.messages
            .iter()
            .filter(|m| !m.turn.is_empty())
            .map(|m| (m.id.as_str(), m.turn.as_slice()))
            .collect()
    }

    /// The turn part focused with Tab, if any.
    pub fn focused_part(&self) -> Option<&TurnPart> {
        let (id, part) = self.focus.as_ref()?;
        self.messages
            .iter()
            .rev()
            .find(|m| &m.id == id)?
            .turn
            .get(*part)
    }

    /// The agent's replies, newest first, as text to copy: an ACP agent's answer is its text
    /// parts (Markdown, as the agent wrote it); a `shell` session's reply is its command's
    /// output (its `execute` call's terminal, escapes removed); a stored reply of the old
    /// shape (output parts) is its display lines, the turn's end line left out.
    pub fn replies(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, m) in self.messages.iter().enumerate().rev() {
            if m.role != Role::Assistant {
                continue;
            }
            let text: Vec<&str> = m
                .turn
                .iter()
                .filter_map(|p| match p {
                    TurnPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if !text.is_empty() {
                out.push(text.join("\n\n"));
                continue;
            }
            // A `shell` session's reply is its command's run: the terminal's output.
            if self.terminals == Terminals::AsRun {
                let runs: Vec<String> = m
                    .turn
                    .iter()
                    .filter(|p| matches!(p, TurnPart::ToolCall(t) if t.kind == ToolKind::Execute))
                    .filter_map(crate::copy::part_text)
                    .collect();
                let run = runs.join("\n");
                if !run.trim().is_empty() {
                    out.push(run.trim_end().to_owned());
                    continue;
                }
            }
            if !m.turn.is_empty() || !m.blocks.is_empty() {
                continue;
            }
            // The next message's blank line and header end this one.
            let end = self
                .messages
                .get(i + 1)
                .map_or(self.lines.len(), |n| n.first_line.saturating_sub(2));
            let lines: Vec<&str> = self.lines[m.first_line.min(end)..end]
                .iter()
                .filter(|l| l.style != LineStyle::TurnEnd)
                .map(|l| l.text.as_str())
                .collect();
            let text = lines.join("\n");
            if !text.trim().is_empty() {
                out.push(text.trim_end().to_owned());
            }
        }
        out
    }

    /// The text of every row, for tests.
    pub fn all_rows(&self) -> Vec<String> {
        self.visible(self.total_rows(), 0)
            .into_iter()
            .map(|(_, s)| s.to_owned())
            .collect()
    }

    /// Command output: ANSI styles become runs, `\r` and backspace overwrite within the open
    /// line, every other escape is dropped (see `ansi.rs`).
    fn append_output(&mut self, pos: usize, stream: Stream, text: &str) {
        let (style, which) = match stream {
            Stream::Stdout => (LineStyle::Stdout, 0),
            Stream::Stderr => (LineStyle::Stderr, 1),
        };
        let mut parser = std::mem::take(&mut self.messages[pos].ansi[which]);
        parser.feed(text, |op| match op {
            Op::Text(t, ansi) => self.output_text(pos, style, t, Kind::output(ansi).into()),
            Op::Newline => {
                if self.open_line_of(pos).is_none() {
                    // An empty line.
                    self.push(style, "");
                }
                let cur = &mut self.messages[pos];
                cur.open_line = None;
                cur.open_col = None;
            }
            Op::CarriageReturn => {
                if self.open_line_of(pos).is_some() {
                    self.messages[pos].open_col = Some(0);
                }
            }
            Op::Backspace => {
                if let Some(idx) = self.open_line_of(pos) {
                    let end = self.lines[idx].chars;
                    let col = self.messages[pos].open_col.unwrap_or(end);
                    self.messages[pos].open_col = Some(col.saturating_sub(1));
                }
            }
            Op::EraseLine(mode) => {
                if let Some(idx) = self.open_line_of(pos) {
                    let col = self.messages[pos].open_col.unwrap_or(self.lines[idx].chars);
                    self.edit_last(|cells| crate::ansi::erase(cells, col as usize, mode));
                    self.messages[pos].open_col = (col < self.lines[idx].chars).then_some(col);
                }
            }
        });
        self.messages[pos].ansi[which] = parser;
    }

    /// The open output line of message `pos`, if it is still the last line.
    fn open_line_of(&self, pos: usize) -> Option<usize> {
        self.messages[pos]
            .open_line
            .filter(|&idx| idx + 1 == self.lines.len())
    }

    fn output_text(&mut self, pos: usize, style: LineStyle, text: &str, ansi: Tone) {
        match (self.open_line_of(pos), self.messages[pos].open_col) {
            (Some(idx), Some(col)) => {
                // Overwrite from the cursor, like a terminal after `\r`.
                let mut new_col = col as usize;
                self.edit_last(|cells| {
                    for c in text.chars() {
                        if new_col >= MAX_LINE_CHARS {
                            break;
                        }
                        if new_col < cells.len() {
                            cells[new_col] = (c, ansi);
                        } else {
                            cells.push((c, ansi));
                        }
                        new_col += 1;
                    }
                });
                let end = self.lines[idx].chars as usize;
                self.messages[pos].open_col = (new_col < end).then_some(new_col as u32);
            }
            (Some(_), None) => self.extend_last(text, ansi),
            (None, _) => self.push_styled(style, text, ansi),
        }
        // Only the last line can be open.
        self.messages[pos].open_line = Some(self.lines.len() - 1);
    }

    /// Rewrites the last line cell by cell (bounded by [`MAX_LINE_CHARS`]).
    fn edit_last(&mut self, f: impl FnOnce(&mut Vec<(char, Tone)>)) {
        let Some(line) = self.lines.pop() else {
            return;
        };
        self.rows_end.pop();
        let mut cells: Vec<(char, Tone)> = Vec::with_capacity(line.chars as usize);
        let mut runs = line.runs.as_deref().unwrap_or(&[]);
        let mut cur = Tone::default();
        for (i, c) in line.text.char_indices() {
            while let Some(((at, s), rest)) = runs.split_first()
                && *at as usize <= i
            {
                cur = *s;
                runs = rest;
            }
            cells.push((c, cur));
        }
        f(&mut cells);
        let mut rebuilt = TextLine {
            style: line.style,
            text: String::new(),
            width: 0,
            uniform: true,
            chars: 0,
            runs: None,
        };
        for (c, s) in cells {
            let start = rebuilt.text.len();
            push_char(&mut rebuilt, c);
            note_run(&mut rebuilt, start, s);
        }
        self.commit_new(rebuilt);
    }

    fn push_styled(&mut self, style: LineStyle, raw: &str, ansi: Tone) {
        let mut line = TextLine {
            style,
            text: String::new(),
            width: 0,
            uniform: true,
            chars: 0,
            runs: None,
        };
        let rest = fill(&mut line, raw);
        note_run(&mut line, 0, ansi);
        self.commit_new(line);
        if let Some(rest) = rest {
            self.push_styled(style, rest, ansi);
        }
    }

    fn push(&mut self, style: LineStyle, raw: &str) {
        self.push_styled(style, raw, Tone::default());
    }

    fn extend_last(&mut self, raw: &str, ansi: Tone) {
        let Some(mut line) = self.lines.pop() else {
            self.push_styled(LineStyle::Stdout, raw, ansi);
            return;
        };
        self.rows_end.pop();
        let style = line.style;
        let start = line.text.len();
        let rest = fill(&mut line, raw);
        note_run(&mut line, start, ansi);
        self.commit_new(line);
        if let Some(rest) = rest {
            self.push_styled(style, rest, ansi);
        }
    }

    fn commit_new(&mut self, line: TextLine) {
        let before = self.total_rows();
        self.rows_end.push(before + rows_of(&line, self.wrap));
        self.lines.push(line);
    }

    /// The rows to draw in a window of `height` rows, `scroll` rows above the bottom.
    /// Returns at most `height` rows, oldest first.
    pub fn visible(&self, height: usize, scroll: usize) -> Vec<(LineStyle, &str)> {
        self.window(height, scroll)
            .map(|(_, line, row)| (line.style, row))
            .collect()
    }

    /// Like [`Transcript::visible_spans`], each row with the index of its logical line and the
    /// byte offset where the row starts in it (so find can highlight its matches).
    pub fn visible_indexed(&self, height: usize, scroll: usize) -> Vec<IndexedRow<'_>> {
        self.window(height, scroll)
            .map(|(i, line, row)| IndexedRow {
                line: i,
                start: row.as_ptr() as usize - line.text.as_ptr() as usize,
                style: line.style,
                pieces: split_runs(line, row),
            })
            .collect()
    }

    /// The logical line that shows screen row `row` (counted from the top).
    pub fn line_at_row(&self, row: usize) -> usize {
        self.rows_end.partition_point(|&e| e <= row)
    }

    /// The text of every logical line, in order (what find searches).
    pub fn line_texts(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(|l| l.text.as_str())
    }

    /// The screen row (counted from the top of the transcript) that shows byte `byte` of
    /// logical line `line`.
    pub fn row_of(&self, line: usize, byte: usize) -> usize {
        let Some(l) = self.lines.get(line) else {
            return self.total_rows();
        };
        let first = line.checked_sub(1).map_or(0, |i| self.rows_end[i]);
        let mut at = 0;
        let within = wrap_rows(&l.text, self.wrap)
            .take_while(|row| {
                at += row.len();
                at <= byte
            })
            .count();
        first + within.min(rows_of(l, self.wrap).saturating_sub(1))
    }

    /// Like [`Transcript::visible`], with each row cut into (text, tone) pieces; drawing
    /// puts the tone's look over the row's [`LineStyle`].
    pub fn visible_spans(
        &self,
        height: usize,
        scroll: usize,
    ) -> Vec<(LineStyle, Vec<(&str, Tone)>)> {
        self.window(height, scroll)
            .map(|(_, line, row)| (line.style, split_runs(line, row)))
            .collect()
    }

    /// The wrapped rows of the window, each with its line: the first visible line is found by
    /// binary search on the row index and only the visible lines are wrapped.
    fn window(
        &self,
        height: usize,
        scroll: usize,
    ) -> impl Iterator<Item = (usize, &TextLine, &str)> {
        let total = self.total_rows();
        let end = total.saturating_sub(scroll.min(self.max_scroll(height)));
        let start = if height == 0 {
            end
        } else {
            end.saturating_sub(height)
        };
        let first = self.rows_end.partition_point(|&e| e <= start);
        let first_row = first.checked_sub(1).map_or(0, |i| self.rows_end[i]);
        let first = first.min(self.lines.len());
        self.lines[first..]
            .iter()
            .enumerate()
            .flat_map(move |(i, line)| {
                wrap_rows(&line.text, self.wrap).map(move |row| (first + i, line, row))
            })
            .skip(start - first_row)
            .take(end - start)
    }

    /// The largest useful scroll offset for a window of `height` rows.
    pub fn max_scroll(&self, height: usize) -> usize {
        self.total_rows().saturating_sub(height)
    }
}

fn blank_line() -> TextLine {
    TextLine {
        style: LineStyle::Blank,
        text: String::new(),
        width: 0,
        uniform: true,
        chars: 0,
        runs: None,
    }
}

/// Styled rows as transcript lines (a row longer than [`MAX_LINE_CHARS`] continues on the
/// next line; control characters become U+FFFD).
fn rows_to_lines(rows: Vec<Row>) -> Vec<TextLine> {
    let mut out = Vec::with_capacity(rows.len());
    for (style, pieces) in rows {
        let mut line = TextLine {
            style,
            ..blank_line()
        };
        for (text, s) in pieces {
            let mut start = line.text.len();
            for c in text.chars() {
                if line.chars as usize >= MAX_LINE_CHARS {
                    note_run(&mut line, start, s);
                    out.push(std::mem::replace(
                        &mut line,
                        TextLine {
                            style,
                            ..blank_line()
                        },
                    ));
                    start = 0;
                }
                push_char(&mut line, if c.is_control() { '\u{fffd}' } else { c });
            }
            note_run(&mut line, start, s);
        }
        out.push(line);
    }
    out
}

fn md_lines(text: &str, wrap: u16) -> Vec<TextLine> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    rows_to_lines(turn_view::markdown_rows(text, wrap))
}

/// Where agent Markdown can be cut into segments rendered on their own: the start of a line
/// after a blank line, outside a code fence, that starts a new block (not indented, not a list
/// item that could continue a list). Scans from byte `from` (a line start, with the fence
/// state there) and returns the points found and the fence state at the last one. The points
/// of a text never change as it grows, so rendering segment by segment while it streams gives
/// exactly the lines of rendering the whole text the same way.
pub fn md_safe_points(text: &str, from: usize, mut fence: bool) -> (Vec<usize>, bool) {
    let mut points = Vec::new();
    let mut fence_at_last = fence;
    let mut prev_blank = false;
    let mut at = from;
    while at < text.len() {
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let line = &text[at..end];
        let complete = end < text.len();
        let first = line.chars().next();
        if prev_blank
            && !fence
            && at > from
            && first.is_some_and(|c| !c.is_whitespace() && !"-*+>|0123456789".contains(c))
        {
            points.push(at);
            fence_at_last = fence;
        }
        let trimmed = line.trim_start();
        if complete && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            fence = !fence;
        }
        prev_blank = complete && line.trim().is_empty();
        if !complete {
            break;
        }
        at = end + 1;
    }
    (points, fence_at_last)
}

/// Appends sanitized text to `line`; returns what did not fit under the length cap.
fn fill<'a>(line: &mut TextLine, raw: &'a str) -> Option<&'a str> {
    let mut chars = raw.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if line.chars as usize >= MAX_LINE_CHARS {
            return Some(&raw[i..]);
        }
        match c {
            '\r' => {}
            '\t' => {
                for _ in 0..4 {
                    push_char(line, ' ');
                }
            }
            '\u{1b}' => {
                // Drop a CSI escape sequence (colors, cursor moves) from command output.
                if matches!(chars.peek(), Some((_, '['))) {
                    chars.next();
                    for (_, c) in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c if c.is_control() => push_char(line, '\u{fffd}'),
            c => push_char(line, c),
        }
    }
    None
}

/// Records that text from byte `start` on is drawn in `style`.
fn note_run(line: &mut TextLine, start: usize, style: Tone) {
    if start >= line.text.len() {
        return;
    }
    let current = line
        .runs
        .as_ref()
        .and_then(|r| r.last())
        .map(|(_, s)| *s)
        .unwrap_or_default();
    if current != style {
        line.runs
            .get_or_insert_with(Default::default)
            .push((start as u32, style));
    }
}

/// Cuts one wrapped row (a slice of `line.text`) into pieces of equal tone.
fn split_runs<'a>(line: &'a TextLine, row: &'a str) -> Vec<(&'a str, Tone)> {
    let Some(runs) = line.runs.as_deref() else {
        return vec![(row, Tone::default())];
    };
    let from = row.as_ptr() as usize - line.text.as_ptr() as usize;
    let to = from + row.len();
    let mut out = Vec::new();
    let mut style = Tone::default();
    let mut at = from;
    for &(start, s) in runs {
        let start = start as usize;
        if start <= from {
            style = s;
            continue;
        }
        if start >= to {
            break;
        }
        if start > at {
            out.push((&line.text[at..start], style));
        }
        at = start;
        style = s;
    }
    if at < to || out.is_empty() {
        out.push((&line.text[at..to], style));
    }
    out
}

fn push_char(line: &mut TextLine, c: char) {
    let w = c.width().unwrap_or(0);
    if w != 1 {
        line.uniform = false;
    }
    line.width += w as u32;
    line.chars += 1;
    line.text.push(c);
}

fn rows_of(line: &TextLine, wrap: u16) -> usize {
    let wrap = wrap as usize;
    if line.uniform {
        (line.width as usize).div_ceil(wrap).max(1)
    } else {
        wrap_rows(&line.text, wrap as u16).count().max(1)
    }
}

/// Splits a line into rows of at most `wrap` cells (never splitting a wide char).
pub fn wrap_rows(text: &str, wrap: u16) -> impl Iterator<Item = &str> {
    let wrap = wrap.max(1) as usize;
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let s = rest?;
        let mut used = 0;
        for (i, c) in s.char_indices() {
            let w = c.width().unwrap_or(0);
            if used + w > wrap && i > 0 {
                rest = Some(&s[i..]);
                return Some(&s[..i]);
            }
            used += w;
        }
        rest = None;
        Some(s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ax_protocol::SessionId;

    fn sid() -> SessionId {
        "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap()
    }

    const M1: &str = "msg_0123456789abABCDEFGHIJK001";
    const M: &str = "msg_0123456789abABCDEFGHIJK000";

    fn msg(id: &str, role: Role, parts: Vec<Part>) -> Message {
        Message {
            id: id.parse().unwrap(),
            session_id: sid(),
            role,
            created: 0,
            ended: None,
            deltas: 0,
            parts,
        }
    }

    fn out(text: &str) -> Part {
        Part::Output {
            stream: Stream::Stdout,
            text: text.into(),
        }
    }

    fn rows(t: &Transcript, h: usize, scroll: usize) -> Vec<String> {
        t.visible(h, scroll)
            .into_iter()
            .map(|(_, s)| s.to_owned())
            .collect()
    }

    #[test]
    fn output_chunks_continue_open_lines() {
        let mut t = Transcript::new(40);
        t.add_message(&msg(M1, Role::Assistant, vec![]));
        assert_eq!(t.apply_part(M1, 0, &out("hel")), PartOutcome::Applied);
        assert_eq!(t.apply_part(M1, 1, &out("lo\nwor")), PartOutcome::Applied);
        assert_eq!(t.apply_part(M1, 2, &out("ld\n")), PartOutcome::Applied);
        t.apply_part(
            M1,
            3,
            &Part::Exit {
                code: Some(0),
                signal: None,
            },
        );
        assert_eq!(rows(&t, 10, 0), vec!["agent", "hello", "world", "exit 0"]);
    }

    #[test]
    fn parts_are_idempotent_and_gaps_ask_for_reload() {
        let mut t = Transcript::new(40);
        t.add_message(&msg(M1, Role::Assistant, vec![out("a\n")]));
        assert_eq!(t.apply_part(M1, 0, &out("a\n")), PartOutcome::Duplicate);
        assert_eq!(t.apply_part(M1, 2, &out("c\n")), PartOutcome::NeedsReload);
        assert_eq!(t.apply_part("zz", 0, &out("c\n")), PartOutcome::NeedsReload);
        assert_eq!(rows(&t, 10, 0), vec!["agent", "a"]);
    }

    #[test]
    fn wraps_and_windows_by_rows() {
        let mut t = Transcript::new(4);
        t.add_message(&msg(
            M1,
            Role::User,
            vec![Part::Text {
                text: "abcdefghij".into(),
            }],
        ));
        // "you", "abcd", "efgh", "ij"
        assert_eq!(t.total_rows(), 4);
        assert_eq!(rows(&t, 2, 0), vec!["efgh", "ij"]);
        assert_eq!(rows(&t, 2, 1), vec!["abcd", "efgh"]);
        assert_eq!(rows(&t, 2, 99), vec!["you", "abcd"]);
        t.set_wrap(5);
        assert_eq!(rows(&t, 3, 0), vec!["you", "abcde", "fghij"]);
    }

    #[test]
    fn wide_chars_never_split() {
        let rows: Vec<_> = wrap_rows("日本語", 3).collect();
        assert_eq!(rows, vec!["日", "本", "語"]);
        let mut t = Transcript::new(3);
        t.add_message(&msg(
            M,
            Role::User,
            vec![Part::Text {
                text: "日本語".into(),
            }],
        ));
        assert_eq!(t.total_rows(), 4);
    }

    #[test]
    fn escapes_and_controls_are_neutralised() {
        let mut t = Transcript::new(40);
        t.add_message(&msg(
            M,
            Role::Assistant,
            vec![out("\u{1b}[31mred\u{1b}[0m\u{7}\n")],
        ));
        assert_eq!(rows(&t, 5, 0), vec!["agent", "red"]);
    }

    #[test]
    fn long_lines_are_split_at_the_cap() {
        let mut t = Transcript::new(100);
        let long = "x".repeat(MAX_LINE_CHARS * 2 + 5);
        t.add_message(&msg(M, Role::Assistant, vec![out(&long)]));
        assert_eq!(t.line_count(), 1 + 3);
    }
}
