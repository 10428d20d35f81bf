//! Command output with ANSI escapes, made safe to draw.
//!
//! Programs colour their output with SGR sequences (`ESC [ … m`) and draw progress with `\r`.
//! [`AnsiParser`] turns a byte stream that arrives in arbitrary chunks into [`Op`]s: text runs
//! with a ratatui [`Style`] (16, 256 and true colours, bold, dim, italic, underline, reverse,
//! crossed out), carriage return, backspace, newline and "erase in line". Every other escape
//! sequence (cursor moves, OSC titles and hyperlinks, DCS, APC, …) and every other control
//! character is consumed and dropped, so nothing from a command's output ever reaches the
//! terminal raw. A sequence split between two chunks is carried over in the parser's state.
//!
//! [`AnsiLines`] applies the ops to lines the way a terminal would for one line at a time:
//! `\r` moves back to column 0 and what follows overwrites, so a progress bar ends as one line.

use ratatui::style::{Color, Modifier, Style};

/// Parameter bytes kept for one CSI sequence; longer ones are consumed and ignored.
const MAX_PARAMS_LEN: usize = 64;
/// Text a tab becomes (the transcript has no tab stops).
const TAB: &str = "    ";

/// One thing command output asks for, already sanitized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// Printable text (no control characters) in a style.
    Text(&'a str, Style),
    /// `\n`: end the line.
    Newline,
    /// `\r`: back to column 0 of the current line.
    CarriageReturn,
    /// `\b`: one column back.
    Backspace,
    /// `ESC [ n K`: erase to the end of the line (0), to the cursor (1) or the whole line (2).
    EraseLine(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mode {
    #[default]
    Ground,
    /// After ESC.
    Esc,
    /// After ESC and intermediate bytes (`ESC ( B`): waiting for the final byte.
    EscIntermediate,
    /// Inside `ESC [`.
    Csi,
    /// Inside a string sequence (OSC, DCS, SOS, PM, APC) until BEL or ST.
    Str,
    /// ESC seen inside a string sequence (the start of ST, `ESC \`).
    StrEsc,
}

/// A streaming parser of command output; keep one per output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnsiParser {
    mode: Mode,
    style: Style,
    params: String,
    /// The CSI had a private marker or intermediate byte (`ESC [ ? 25 l`): not SGR.
    private: bool,
}

impl AnsiParser {
    /// A parser in the default state (no style, no pending escape).
    pub fn new() -> AnsiParser {
        AnsiParser::default()
    }

    /// The SGR style in force now.
    pub fn style(&self) -> Style {
        self.style
    }

    /// Parses one chunk, calling `emit` for each op in order.
    pub fn feed<'a>(&mut self, chunk: &'a str, mut emit: impl FnMut(Op<'a>)) {
        let mut run_start: Option<usize> = None;
        for (i, c) in chunk.char_indices() {
            if self.mode == Mode::Ground && !is_special(c) {
                run_start.get_or_insert(i);
                continue;
            }
            if let Some(s) = run_start.take() {
                emit(Op::Text(&chunk[s..i], self.style));
            }
            self.step(c, &mut emit);
        }
        if let Some(s) = run_start {
            emit(Op::Text(&chunk[s..], self.style));
        }
    }

    fn step<'a>(&mut self, c: char, emit: &mut impl FnMut(Op<'a>)) {
        match self.mode {
            Mode::Ground => match c {
                '\u{1b}' => self.mode = Mode::Esc,
                '\u{9b}' => self.start_csi(),
                '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => self.mode = Mode::Str,
                '\n' => emit(Op::Newline),
                '\r' => emit(Op::CarriageReturn),
                '\u{8}' => emit(Op::Backspace),
                '\t' => emit(Op::Text(TAB, self.style)),
                // Bell, NUL and the other controls draw nothing.
                _ => {}
            },
            Mode::Esc => match c {
                '[' => self.start_csi(),
                ']' | 'P' | 'X' | '^' | '_' => self.mode = Mode::Str,
                '\u{20}'..='\u{2f}' => self.mode = Mode::EscIntermediate,
                // ESC ESC: start over.
                '\u{1b}' => {}
                // Any other final byte (ESC 7, ESC =, ESC c, …) ends a two-byte sequence.
                _ => self.mode = Mode::Ground,
            },
            Mode::EscIntermediate => {
                if !('\u{20}'..='\u{2f}').contains(&c) {
                    self.mode = if c == '\u{1b}' {
                        Mode::Esc
                    } else {
                        Mode::Ground
                    };
                }
            }
            Mode::Csi => match c {
                '0'..='9' | ';' | ':' => {
                    if self.params.len() < MAX_PARAMS_LEN {
                        self.params.push(c);
                    } else {
                        self.private = true;
                    }
                }
                '<' | '=' | '>' | '?' | '\u{20}'..='\u{2f}' => self.private = true,
                '\u{40}'..='\u{7e}' => {
                    self.mode = Mode::Ground;
                    if !self.private {
                        self.csi_final(c, emit);
                    }
                }
                '\u{1b}' => self.mode = Mode::Esc,
                // A control inside CSI is executed by terminals; we only keep line breaks.
                '\n' => emit(Op::Newline),
                '\r' => emit(Op::CarriageReturn),
                // Anything else is not a valid CSI byte: abandon the sequence.
                _ => self.mode = Mode::Ground,
            },
            Mode::Str => match c {
                '\u{7}' | '\u{9c}' => self.mode = Mode::Ground,
                '\u{1b}' => self.mode = Mode::StrEsc,
                _ => {}
            },
            Mode::StrEsc => {
                self.mode = match c {
                    '\\' => Mode::Ground,
                    '\u{1b}' => Mode::StrEsc,
                    _ => Mode::Str,
                }
            }
        }
    }

    fn start_csi(&mut self) {
        self.mode = Mode::Csi;
        self.params.clear();
        self.private = false;
    }

    fn csi_final<'a>(&mut self, c: char, emit: &mut impl FnMut(Op<'a>)) {
        match c {
            'm' => self.sgr(),
            'K' => {
                let n = self.params.parse::<u8>().unwrap_or(0);
                if n <= 2 {
                    emit(Op::EraseLine(n));
                }
            }
            // Cursor to column 1 (`ESC [ G`, `ESC [ 1 G`) is how some tools redraw a line.
            'G' if matches!(self.params.as_str(), "" | "1") => emit(Op::CarriageReturn),
            _ => {}
        }
    }

    /// Applies `ESC [ params m`.
    fn sgr(&mut self) {
        // Groups split by `;`; a group may carry `:` sub-parameters (`38:2::r:g:b`).
        let groups: Vec<Vec<u32>> = self
            .params
            .split(';')
            .map(|g| g.split(':').map(|p| p.parse().unwrap_or(0)).collect())
            .collect();
        let num = |i: usize| groups.get(i).map(|g| g[0]);
        let byte = |v: Option<&u32>| v.copied().unwrap_or(0).min(255) as u8;
        let mut s = self.style;
        let mut i = 0;
        while i < groups.len() {
            let g = &groups[i];
            let n = g[0];
            i += 1;
            match n {
                0 => s = Style::default(),
                1 => s = s.add_modifier(Modifier::BOLD),
                2 => s = s.add_modifier(Modifier::DIM),
                3 => s = s.add_modifier(Modifier::ITALIC),
                4 => s = s.add_modifier(Modifier::UNDERLINED),
                7 => s = s.add_modifier(Modifier::REVERSED),
                9 => s = s.add_modifier(Modifier::CROSSED_OUT),
                22 => s.add_modifier.remove(Modifier::BOLD | Modifier::DIM),
                23 => s.add_modifier.remove(Modifier::ITALIC),
                24 => s.add_modifier.remove(Modifier::UNDERLINED),
                27 => s.add_modifier.remove(Modifier::REVERSED),
                29 => s.add_modifier.remove(Modifier::CROSSED_OUT),
                30..=37 => s.fg = Some(base_color(n - 30)),
                39 => s.fg = None,
                40..=47 => s.bg = Some(base_color(n - 40)),
                49 => s.bg = None,
                90..=97 => s.fg = Some(bright_color(n - 90)),
                100..=107 => s.bg = Some(bright_color(n - 100)),
                38 | 48 => {
                    let color = if g.len() > 1 {
                        // Colon form: 38:5:n, 38:2:r:g:b or 38:2:colourspace:r:g:b.
                        match g[1] {
                            5 => Some(Color::Indexed(byte(g.get(2)))),
                            2 => {
                                let at = if g.len() >= 6 { 3 } else { 2 };
                                Some(Color::Rgb(
                                    byte(g.get(at)),
                                    byte(g.get(at + 1)),
                                    byte(g.get(at + 2)),
                                ))
                            }
                            _ => None,
                        }
                    } else {
                        match num(i) {
                            Some(5) => {
                                let c = Color::Indexed(num(i + 1).unwrap_or(0).min(255) as u8);
                                i += 2;
                                Some(c)
                            }
                            Some(2) => {
                                let v = |k: usize| num(i + k).unwrap_or(0).min(255) as u8;
                                let c = Color::Rgb(v(1), v(2), v(3));
                                i += 4;
                                Some(c)
                            }
                            _ => None,
                        }
                    };
                    if let Some(color) = color {
                        if n == 38 {
                            s.fg = Some(color);
                        } else {
                            s.bg = Some(color);
                        }
                    }
                }
                // Blink, fonts, frames, …: ignored.
                _ => {}
            }
        }
        // A style that only removed things is the default style again.
        if s.add_modifier.is_empty() && s.fg.is_none() && s.bg.is_none() {
            s = Style::default();
        }
        self.style = s;
    }
}

/// Characters that end a plain text run in [`Mode::Ground`].
fn is_special(c: char) -> bool {
    c.is_control()
}

fn base_color(n: u32) -> Color {
    [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
    ][n as usize & 7]
}

fn bright_color(n: u32) -> Color {
    [
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ][n as usize & 7]
}

/// Styled lines built from command output, one terminal line at a time: `\r` and backspace
/// move a cursor inside the current line and later text overwrites from there.
#[derive(Debug, Clone, Default)]
pub struct AnsiLines {
    parser: AnsiParser,
    /// Finished lines, each a list of (char, style) cells.
    pub lines: Vec<Vec<(char, Style)>>,
    current: Vec<(char, Style)>,
    col: usize,
}

impl AnsiLines {
    /// No lines yet.
    pub fn new() -> AnsiLines {
        AnsiLines::default()
    }

    /// Feeds one chunk of output.
    pub fn feed(&mut self, chunk: &str) {
        let mut parser = std::mem::take(&mut self.parser);
        parser.feed(chunk, |op| self.apply(op));
        self.parser = parser;
    }

    fn apply(&mut self, op: Op<'_>) {
        match op {
            Op::Text(t, style) => {
                for c in t.chars() {
                    if self.col < self.current.len() {
                        self.current[self.col] = (c, style);
                    } else {
                        self.current.push((c, style));
                    }
                    self.col += 1;
                }
            }
            Op::Newline => {
                self.lines.push(std::mem::take(&mut self.current));
                self.col = 0;
            }
            Op::CarriageReturn => self.col = 0,
            Op::Backspace => self.col = self.col.saturating_sub(1),
            Op::EraseLine(n) => erase(&mut self.current, self.col, n),
        }
    }

    /// All lines as ratatui lines, the unfinished one last (if it has text).
    pub fn to_lines(&self) -> Vec<ratatui::text::Line<'static>> {
        let mut all: Vec<&Vec<(char, Style)>> = self.lines.iter().collect();
        if !self.current.is_empty() {
            all.push(&self.current);
        }
        all.into_iter().map(|cells| cells_to_line(cells)).collect()
    }
}

/// "Erase in line" on a row of cells with the cursor at `col`.
pub fn erase(cells: &mut Vec<(char, Style)>, col: usize, mode: u8) {
    match mode {
        0 => cells.truncate(col),
        1 => {
            for cell in cells.iter_mut().take(col + 1) {
                *cell = (' ', Style::default());
            }
        }
        _ => {
            cells.clear();
            cells.resize(col, (' ', Style::default()));
        }
    }
}

/// Joins cells of equal style into spans.
pub fn cells_to_line(cells: &[(char, Style)]) -> ratatui::text::Line<'static> {
    let mut spans: Vec<ratatui::text::Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for &(c, s) in cells {
        if style.is_some_and(|cur| cur != s) {
            spans.push(ratatui::text::Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(s);
        text.push(c);
    }
    if !text.is_empty() {
        spans.push(ratatui::text::Span::styled(text, style.unwrap_or_default()));
    }
    ratatui::text::Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(chunks: &[&str]) -> Vec<String> {
        let mut p = AnsiParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |op| out.push(format!("{op:?}")));
        }
        out
    }

    fn text_of(chunks: &[&str]) -> String {
        let mut p = AnsiParser::new();
        let mut out = String::new();
        for c in chunks {
            p.feed(c, |op| match op {
                Op::Text(t, _) => out.push_str(t),
                Op::Newline => out.push('\n'),
                Op::CarriageReturn => out.push_str("<CR>"),
                Op::Backspace => out.push_str("<BS>"),
                Op::EraseLine(n) => out.push_str(&format!("<EL{n}>")),
            });
        }
        out
    }

    fn styles(chunks: &[&str]) -> Vec<(String, Style)> {
        let mut p = AnsiParser::new();
        let mut out: Vec<(String, Style)> = Vec::new();
        for c in chunks {
            p.feed(c, |op| {
                if let Op::Text(t, s) = op {
                    match out.last_mut() {
                        Some((text, st)) if *st == s => text.push_str(t),
                        _ => out.push((t.to_owned(), s)),
                    }
                }
            });
        }
        out
    }

    #[test]
    fn sgr_colours_and_bold() {
        let got = styles(&["\x1b[1;31mred\x1b[0m plain \x1b[38;5;208mo\x1b[38;2;1;2;3mt\x1b[m"]);
        assert_eq!(
            got,
            vec![
                ("red".into(), Style::new().fg(Color::Red).bold()),
                (" plain ".into(), Style::new()),
                ("o".into(), Style::new().fg(Color::Indexed(208))),
                ("t".into(), Style::new().fg(Color::Rgb(1, 2, 3))),
            ]
        );
        let got = styles(&["\x1b[92;104mx\x1b[39my\x1b[49;22mz"]);
        assert_eq!(
            got[0].1,
            Style::new().fg(Color::LightGreen).bg(Color::LightBlue)
        );
        assert_eq!(got[1].1, Style::new().bg(Color::LightBlue));
        assert_eq!(got[2].1, Style::new());
        // Colon sub-parameters.
        let got = styles(&["\x1b[38:2::10:20:30mx"]);
        assert_eq!(got[0].1.fg, Some(Color::Rgb(10, 20, 30)));
    }

    #[test]
    fn a_sequence_split_between_chunks_is_carried_over() {
        let got = styles(&["a\x1b", "[3", "2", "mgreen\x1b[", "0mz"]);
        assert_eq!(
            got,
            vec![
                ("a".into(), Style::new()),
                ("green".into(), Style::new().fg(Color::Green)),
                ("z".into(), Style::new()),
            ]
        );
        assert_eq!(text_of(&["x\x1b]0;ti", "tle\x07y"]), "xy");
        assert_eq!(
            text_of(&["x\x1b]8;;http://h\x1b", "\\link\x1b]8;;\x1b\\"]),
            "xlink"
        );
    }

    #[test]
    fn every_other_sequence_is_stripped() {
        assert_eq!(
            text_of(&["a\x1b[2J\x1b[H\x1b[?25l\x1b[10;20Hb\x1b(Bc\x1b7d\x1bPdata\x1b\\e"]),
            "abcde"
        );
        assert_eq!(text_of(&["\u{9b}31mx\u{9d}title\u{9c}y"]), "xy");
        assert_eq!(text_of(&["bell\x07nul\0del\x7f"]), "bellnuldel");
        assert_eq!(text_of(&["a\tb"]), "a    b");
        assert_eq!(
            text_of(&["1\r2\x08\x1b[K\x1b[2K\x1b[1G"]),
            "1<CR>2<BS><EL0><EL2><CR>"
        );
        // A private CSI never changes the style.
        assert_eq!(styles(&["\x1b[?1mx"])[0].1, Style::new());
        // A huge parameter list is consumed, not kept.
        let long = format!("\x1b[{}mx", "1;".repeat(10_000));
        assert_eq!(text_of(&[&long]), "x");
        assert_eq!(
            ops(&["\x1b[5Kx"]),
            vec!["Text(\"x\", Style::new())".to_owned()]
        );
    }

    #[test]
    fn carriage_return_overwrites_the_line() {
        let mut l = AnsiLines::new();
        l.feed("progress 10%\rprogress 5");
        l.feed("0%\rprogress 100%\ndone\r\n");
        l.feed("abc\x08\x08X\n12345\r\x1b[Kok\n");
        let text: Vec<String> = l
            .to_lines()
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, ["progress 100%", "done", "aXc", "ok"]);
    }
}
