//! Agent text as Markdown: parsed with `pulldown-cmark`, laid out as lines of text pieces
//! tagged with their [`Kind`] and wrapped to a width (`render::theme` gives the kinds their
//! look).
//!
//! Headings, paragraphs, nested bullet and numbered lists, task lists, emphasis, strong,
//! strikethrough, inline code, links (their target shown after the text), images (alt text and
//! target), block quotes, rules, tables and fenced code blocks (highlighted by
//! [`crate::highlight`]). Raw HTML is shown as text, never interpreted. Every control
//! character of the agent's text becomes U+FFFD (tabs become spaces), so nothing the agent
//! writes can reach the terminal as an escape sequence.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::highlight::highlight;
use crate::kind::{Kind, MdInline, MdText, MdTint};

const DIM: Kind = Kind::Secondary;

/// A piece of a line: its text and what it is.
pub type Piece = (String, Kind);

/// One laid-out line.
pub type MdLine = Vec<Piece>;

/// Lays `markdown` out into lines of at most `width` cells.
pub fn render(markdown: &str, width: u16) -> Vec<MdLine> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer::new(width.max(8) as usize);
    for event in Parser::new_ext(markdown, options) {
        r.event(event);
    }
    r.flush();
    r.lines
}

/// Replaces control characters (tab: spaces) so agent text can never drive the terminal.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

struct ListLevel {
    /// The next number of a numbered list.
    next: Option<u64>,
    /// Columns the item's text is indented by (the marker's width).
    indent: usize,
}

struct Table {
    rows: Vec<Vec<String>>,
    header_rows: usize,
    cell: String,
}

/// An inline span that encloses text.
#[derive(Clone, Copy)]
enum Enclosing {
    Emphasis,
    Strong,
    Strike,
    Link,
    Image,
}

struct Renderer {
    width: usize,
    lines: Vec<MdLine>,
    /// The current block's inline text, cut at hard breaks.
    inline: Vec<Vec<Piece>>,
    styles: Vec<Enclosing>,
    /// Open links: (target, index in `inline`'s last segment where their text starts).
    links: Vec<(String, usize)>,
    lists: Vec<ListLevel>,
    /// The marker of a list item whose first line is not out yet.
    marker: Option<String>,
    quote: usize,
    code: Option<(String, String)>,
    heading: Option<HeadingLevel>,
    table: Option<Table>,
    gap: bool,
}

impl Renderer {
    fn new(width: usize) -> Renderer {
        Renderer {
            width,
            lines: Vec::new(),
            inline: vec![Vec::new()],
            styles: Vec::new(),
            links: Vec::new(),
            lists: Vec::new(),
            marker: None,
            quote: 0,
            code: None,
            heading: None,
            table: None,
            gap: false,
        }
    }

    /// The kind of inline text here, itself `inline`.
    fn style(&self, inline: MdInline) -> Kind {
        let mut m = MdText {
            quote: self.quote > 0,
            heading: match self.heading {
                None => 0,
                Some(HeadingLevel::H1) => 1,
                Some(HeadingLevel::H2) => 2,
                Some(_) => 3,
            },
            inline,
            ..MdText::default()
        };
        for e in &self.styles {
            match e {
                Enclosing::Emphasis => m.emphasis = true,
                Enclosing::Strong => m.strong = true,
                Enclosing::Strike => m.strike = true,
                Enclosing::Link => {
                    m.link = true;
                    m.tint = Some(MdTint::Link);
                }
                Enclosing::Image => m.tint = Some(MdTint::Image),
            }
        }
        if m == MdText::default() {
            Kind::Plain
        } else if m
            == (MdText {
                inline: MdInline::Aside,
                ..MdText::default()
            })
        {
            DIM
        } else {
            Kind::Markdown(m)
        }
    }

    fn text(&mut self, text: &str, style: Kind) {
        if let Some(t) = &mut self.table {
            t.cell.push_str(&sanitize(text));
            return;
        }
        let seg = self.inline.last_mut().expect("never empty");
        seg.push((sanitize(text), style));
    }

    /// A blank line between blocks (not before the first one).
    fn block_start(&mut self) {
        self.flush();
        if self.gap && !self.lines.is_empty() {
            let (prefix, _) = self.prefix(false);
            self.lines.push(prefix);
        }
        self.gap = false;
    }

    fn block_end(&mut self) {
        self.flush();
        self.gap = true;
    }

    /// The prefix of a line: quote bars and list indentation, with the pending item marker
    /// on an item's first line.
    fn prefix(&mut self, first: bool) -> (Vec<Piece>, usize) {
        let mut spans = Vec::new();
        let mut w = 0;
        for _ in 0..self.quote {
            spans.push(("│ ".to_owned(), DIM));
            w += 2;
        }
        let levels = self.lists.len();
        for (i, l) in self.lists.iter().enumerate() {
            if i + 1 == levels && first && self.marker.is_some() {
                let m = self.marker.take().expect("checked");
                w += m.width();
                spans.push((m, Kind::ListMarker));
            } else {
                w += l.indent;
                spans.push((" ".repeat(l.indent), Kind::Plain));
            }
        }
        (spans, w)
    }

    /// Wraps the pending inline text into lines.
    fn flush(&mut self) {
        let segments = std::mem::replace(&mut self.inline, vec![Vec::new()]);
        if segments.iter().all(|s| s.is_empty()) && self.marker.is_none() {
            return;
        }
        let mut first = true;
        for seg in segments {
            let (p1, w1) = self.prefix(first);
            let (pn, wn) = self.prefix(false);
            first = false;
            wrap_into(&mut self.lines, seg, (p1, w1), (pn, wn), self.width);
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((lang, buf)) = &mut self.code {
            match event {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, buf) = (lang.clone(), std::mem::take(buf));
                    self.code = None;
                    self.code_block(&lang, &buf);
                    self.block_end();
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                let s = self.style(MdInline::Text);
                self.text(&t, s);
            }
            Event::Code(t) => {
                let s = self.style(MdInline::Code);
                self.text(&t, s);
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                // Shown as the text it is; a terminal has nothing to interpret.
                let s = self.style(MdInline::Aside);
                for (i, l) in t.trim_end_matches('\n').split('\n').enumerate() {
                    if i > 0 {
                        self.inline.push(Vec::new());
                    }
                    self.text(l, s);
                }
            }
            Event::SoftBreak => {
                let s = self.style(MdInline::Text);
                self.text(" ", s);
            }
            Event::HardBreak => self.inline.push(Vec::new()),
            Event::Rule => {
                self.block_start();
                let (mut prefix, w) = self.prefix(false);
                prefix.push(("─".repeat(self.width.saturating_sub(w).max(1)), DIM));
                self.lines.push(prefix);
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                let s = if done { Kind::TaskDone } else { DIM };
                self.text(if done { "[x] " } else { "[ ] " }, s);
            }
            Event::FootnoteReference(t) => {
                let s = self.style(MdInline::Aside);
                self.text(&format!("[^{t}]"), s);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let s = self.style(MdInline::Code);
                self.text(&t, s);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            // A paragraph right after an item's marker starts on the marker's line.
            Tag::Paragraph if self.marker.is_some() => {}
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                self.heading = Some(level);
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.flush();
                }
                let indent = match start {
                    Some(n) => format!("{n}. ").width(),
                    None => 2,
                };
                self.lists.push(ListLevel {
                    next: start,
                    indent,
                });
            }
            Tag::Item => {
                self.flush();
                self.gap = false;
                if let Some(l) = self.lists.last_mut() {
                    let m = match &mut l.next {
                        Some(n) => {
                            let m = format!("{n}. ");
                            *n += 1;
                            m
                        }
                        None => "• ".to_owned(),
                    };
                    // Wider numbers push the text right; keep the marker's own width.
                    l.indent = l.indent.max(m.width());
                    self.marker = Some(format!("{m:<w$}", w = l.indent));
                }
            }
            Tag::Emphasis => self.styles.push(Enclosing::Emphasis),
            Tag::Strong => self.styles.push(Enclosing::Strong),
            Tag::Strikethrough => self.styles.push(Enclosing::Strike),
            Tag::Link { dest_url, .. } => {
                let at = self.inline.last().map_or(0, |s| s.len());
                self.links.push((dest_url.to_string(), at));
                self.styles.push(Enclosing::Link);
            }
            Tag::Image { dest_url, .. } => {
                let at = self.inline.last().map_or(0, |s| s.len());
                self.links.push((dest_url.to_string(), at));
                let s = self.style(MdInline::Aside);
                self.text("[image: ", s);
                self.styles.push(Enclosing::Image);
            }
            Tag::Table(_) => {
                self.block_start();
                self.table = Some(Table {
                    rows: Vec::new(),
                    header_rows: 0,
                    cell: String::new(),
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {}
            // Footnote definitions, metadata, definition lists, …: their text flows inline.
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                if self.lists.is_empty() {
                    self.block_end();
                } else {
                    self.flush();
                    self.gap = true;
                }
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.heading = None;
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.gap = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush();
                self.marker = None;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((dest, at)) = self.links.pop() {
                    let text: String = self
                        .inline
                        .last()
                        .map(|s| s.iter().skip(at).map(|(t, _)| t.as_str()).collect())
                        .unwrap_or_default();
                    // An autolink shows its target already.
                    if !dest.is_empty() && text != dest && format!("mailto:{text}") != dest {
                        self.text(&format!(" ({dest})"), DIM);
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                if let Some((dest, _)) = self.links.pop() {
                    self.text(&format!("] ({dest})"), DIM);
                }
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    if let Some(row) = t.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.draw_table(t);
                }
                self.gap = true;
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let (prefix, w) = self.prefix(false);
        let lang_label = lang.split(',').next().unwrap_or("").trim();
        if !lang_label.is_empty() {
            let mut l = prefix.clone();
            l.push((format!("  {}", sanitize(lang_label)), DIM));
            self.lines.push(l);
        }
        let avail = self.width.saturating_sub(w + 2).max(1);
        for pieces in highlight(lang, code) {
            // Hard-wrapped: code keeps its spacing.
            let mut row: Vec<Piece> = Vec::new();
            let mut used = 0;
            let mut rows = Vec::new();
            for (text, style) in pieces {
                let mut buf = String::new();
                for c in sanitize(&text).chars() {
                    let cw = c.width().unwrap_or(0);
                    if used + cw > avail && used > 0 {
                        if !buf.is_empty() {
                            row.push((std::mem::take(&mut buf), style));
                        }
                        rows.push(std::mem::take(&mut row));
                        used = 0;
                    }
                    buf.push(c);
                    used += cw;
                }
                if !buf.is_empty() {
                    row.push((buf, style));
                }
            }
            rows.push(row);
            for r in rows {
                let mut l = prefix.clone();
                l.push(("▏ ".to_owned(), DIM));
                l.extend(r);
                self.lines.push(l);
            }
        }
    }

    fn draw_table(&mut self, t: Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; cols];
        for row in &t.rows {
            for (i, c) in row.iter().enumerate() {
                widths[i] = widths[i].max(c.width());
            }
        }
        let (prefix, pw) = self.prefix(false);
        for (r, row) in t.rows.iter().enumerate() {
            let mut spans = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    spans.push((" │ ".to_owned(), DIM));
                }
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(cell.width());
                let style = if r < t.header_rows {
                    Kind::Title
                } else {
                    Kind::Plain
                };
                spans.push((format!("{cell}{}", " ".repeat(pad)), style));
            }
            wrap_into(
                &mut self.lines,
                spans,
                (prefix.clone(), pw),
                (prefix.clone(), pw),
                self.width,
            );
            if r + 1 == t.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let mut l = prefix.clone();
                l.push((rule.join("─┼─"), DIM));
                self.lines.push(l);
            }
        }
    }
}

/// A word (its styled pieces: a word may change style midway, `**bold**ness`) or a run of
/// spaces.
enum Token {
    Word(Vec<Piece>),
    Space(String, Kind),
}

fn tokens(spans: Vec<Piece>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::new();
    for (content, style) in spans {
        for c in content.chars() {
            match (c == ' ', out.last_mut()) {
                (true, Some(Token::Space(t, st))) if *st == style => t.push(c),
                (true, _) => out.push(Token::Space(c.to_string(), style)),
                (false, Some(Token::Word(parts))) => match parts.last_mut() {
                    Some((t, st)) if *st == style => t.push(c),
                    _ => parts.push((c.to_string(), style)),
                },
                (false, _) => out.push(Token::Word(vec![(c.to_string(), style)])),
            }
        }
    }
    out
}

/// Appends to a line, joining a piece to the last span when the style is the same.
fn push_piece(line: &mut Vec<Piece>, text: &str, style: Kind) {
    if text.is_empty() {
        return;
    }
    match line.last_mut() {
        Some((t, s)) if *s == style => t.push_str(text),
        _ => line.push((text.to_owned(), style)),
    }
}

/// Word-wraps styled spans to `width` with a first-line and a continuation prefix. Words
/// longer than a line are cut by character (never inside a wide char).
fn wrap_into(
    out: &mut Vec<MdLine>,
    spans: Vec<Piece>,
    first: (Vec<Piece>, usize),
    rest: (Vec<Piece>, usize),
    width: usize,
) {
    let (mut line, mut used) = (first.0, first.1);
    let mut start_w = used;
    let break_line = |out: &mut Vec<MdLine>, line: &mut Vec<Piece>| {
        out.push(std::mem::replace(line, rest.0.clone()));
        rest.1
    };
    for token in tokens(spans) {
        match token {
            Token::Space(text, style) => {
                let w = text.width();
                if used > start_w && used + w <= width {
                    push_piece(&mut line, &text, style);
                    used += w;
                } else if used > start_w {
                    used = break_line(out, &mut line);
                    start_w = used;
                }
            }
            Token::Word(parts) => {
                let w: usize = parts.iter().map(|(t, _)| t.width()).sum();
                if used + w > width && used > start_w {
                    used = break_line(out, &mut line);
                    start_w = used;
                }
                if used + w <= width {
                    for (t, st) in &parts {
                        push_piece(&mut line, t, *st);
                    }
                    used += w;
                    continue;
                }
                // A word longer than the line: cut it.
                for (t, st) in parts {
                    for c in t.chars() {
                        let cw = c.width().unwrap_or(0);
                        if used + cw > width && used > start_w {
                            used = break_line(out, &mut line);
                            start_w = used;
                        }
                        let mut b = [0; 4];
                        push_piece(&mut line, c.encode_utf8(&mut b), st);
                        used += cw;
                    }
                }
            }
        }
    }
    out.push(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[MdLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|(t, _)| t.as_str()).collect())
            .collect()
    }

    #[test]
    fn wraps_to_the_width() {
        let lines = render("one two three four five six seven", 12);
        for l in plain(&lines) {
            assert!(l.trim_end().width() <= 12, "{l:?}");
        }
        assert_eq!(
            plain(&lines)
                .iter()
                .map(|l| l.trim_end())
                .collect::<Vec<_>>(),
            ["one two", "three four", "five six", "seven"]
        );
    }

    #[test]
    fn control_characters_never_pass() {
        let lines = render(
            "a\x1b[31mred\x07 `c\x1bd`\n\n```sh\necho \x1b]0;t\x07\n```\n[x](\x1b)",
            40,
        );
        for l in &lines {
            for (content, _) in l {
                assert!(!content.chars().any(|c| c.is_control()), "{content:?}");
            }
        }
    }

    #[test]
    fn lists_number_and_nest() {
        let lines = plain(&render(
            "1. one\n2. two\n   - inner\n     - deeper\n3. three",
            40,
        ));
        assert_eq!(
            lines.iter().map(|l| l.trim_end()).collect::<Vec<_>>(),
            [
                "1. one",
                "2. two",
                "   • inner",
                "     • deeper",
                "3. three"
            ]
        );
    }
}
