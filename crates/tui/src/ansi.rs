//! Command output with ANSI escapes, made safe to draw.
//!
//! Programs colour their output with SGR sequences (`ESC [ … m`) and draw progress with `\r`.
//! [`AnsiParser`] turns a byte stream that arrives in arbitrary chunks into [`Op`]s: text runs
//! with an [`Sgr`] style (16, 256 and true colours, bold, dim, italic, underline, reverse,
//! crossed out), carriage return, backspace, newline and "erase in line". Every other escape
//! sequence (cursor moves, OSC titles and hyperlinks, DCS, APC, …) and every other control
//! character is consumed and dropped, so nothing from a command's output ever reaches the
//! terminal raw. A sequence split between two chunks is carried over in the parser's state.
//!
//! [`AnsiLines`] applies the ops to lines the way a terminal would for one line at a time:
//! `\r` moves back to column 0 and what follows overwrites, so a progress bar ends as one line.

/// A colour command output asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Colour {
    /// One of the eight base colours (`30`–`37`, `40`–`47`): 0 black … 7 white.
    Base(u8),
    /// One of the eight bright colours (`90`–`97`, `100`–`107`): 0 dark grey … 7 white.
    Bright(u8),
    /// An entry of the 256-colour palette (`38;5;n`).
    Indexed(u8),
    /// A true colour (`38;2;r;g;b`).
    Rgb(u8, u8, u8),
}

/// The SGR style in force for a run of command output: colours and attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sgr {
    /// Foreground colour; `None` is the terminal's default.
    pub fg: Option<Colour>,
    /// Background colour; `None` is the terminal's default.
    pub bg: Option<Colour>,
    /// Attributes, a set of the `Sgr::BOLD` … `Sgr::CROSSED_OUT` bits.
    pub attrs: u8,
}

impl Sgr {
    /// Bold (`1`).
    pub const BOLD: u8 = 1;
    /// Dim (`2`).
    pub const DIM: u8 = 2;
    /// Italic (`3`).
    pub const ITALIC: u8 = 4;
    /// Underlined (`4`).
    pub const UNDERLINED: u8 = 8;
    /// Reversed (`7`).
    pub const REVERSED: u8 = 16;
    /// Crossed out (`9`).
    pub const CROSSED_OUT: u8 = 32;
}

/// Parameter bytes kept for one CSI sequence; longer ones are consumed and ignored.
const MAX_PARAMS_LEN: usize = 64;
/// Text a tab becomes (the transcript has no tab stops).
const TAB: &str = "    ";

/// One thing command output asks for, already sanitized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// Printable text (no control characters) in a style.
    Text(&'a str, Sgr),
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
    style: Sgr,
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
    pub fn style(&self) -> Sgr {
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
                0 => s = Sgr::default(),
                1 => s.attrs |= Sgr::BOLD,
                2 => s.attrs |= Sgr::DIM,
                3 => s.attrs |= Sgr::ITALIC,
                4 => s.attrs |= Sgr::UNDERLINED,
                7 => s.attrs |= Sgr::REVERSED,
                9 => s.attrs |= Sgr::CROSSED_OUT,
                22 => s.attrs &= !(Sgr::BOLD | Sgr::DIM),
                23 => s.attrs &= !Sgr::ITALIC,
                24 => s.attrs &= !Sgr::UNDERLINED,
                27 => s.attrs &= !Sgr::REVERSED,
                29 => s.attrs &= !Sgr::CROSSED_OUT,
                30..=37 => s.fg = Some(Colour::Base((n - 30) as u8)),
                39 => s.fg = None,
                40..=47 => s.bg = Some(Colour::Base((n - 40) as u8)),
                49 => s.bg = None,
                90..=97 => s.fg = Some(Colour::Bright((n - 90) as u8)),
                100..=107 => s.bg = Some(Colour::Bright((n - 100) as u8)),
                38 | 48 => {
                    let color = if g.len() > 1 {
                        // Colon form: 38:5:n, 38:2:r:g:b or 38:2:colourspace:r:g:b.
                        match g[1] {
                            5 => Some(Colour::Indexed(byte(g.get(2)))),
                            2 => {
                                let at = if g.len() >= 6 { 3 } else { 2 };
                                Some(Colour::Rgb(
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
                                let c = Colour::Indexed(num(i + 1).unwrap_or(0).min(255) as u8);
                                i += 2;
                                Some(c)
                            }
                            Some(2) => {
                                let v = |k: usize| num(i + k).unwrap_or(0).min(255) as u8;
                                let c = Colour::Rgb(v(1), v(2), v(3));
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
        if s.attrs == 0 && s.fg.is_none() && s.bg.is_none() {
            s = Sgr::default();
        }
        self.style = s;
    }
}

/// Characters that end a plain text run in [`Mode::Ground`].
fn is_special(c: char) -> bool {
    c.is_control()
}

/// Styled lines built from command output, one terminal line at a time: `\r` and backspace
/// move a cursor inside the current line and later text overwrites from there.
#[derive(Debug, Clone, Default)]
pub struct AnsiLines {
    parser: AnsiParser,
    /// Finished lines, each a list of (char, style) cells.
    pub lines: Vec<Vec<(char, Sgr)>>,
    current: Vec<(char, Sgr)>,
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

    /// All lines as runs of equal style, the unfinished one last (if it has text).
    pub fn runs(&self) -> Vec<Vec<(String, Sgr)>> {
        let mut all: Vec<&Vec<(char, Sgr)>> = self.lines.iter().collect();
        if !self.current.is_empty() {
            all.push(&self.current);
        }
        all.into_iter().map(|cells| cells_to_runs(cells)).collect()
    }
}

/// "Erase in line" on a row of cells with the cursor at `col`.
pub fn erase<S: Copy + Default>(cells: &mut Vec<(char, S)>, col: usize, mode: u8) {
    match mode {
        0 => cells.truncate(col),
        1 => {
            for cell in cells.iter_mut().take(col + 1) {
                *cell = (' ', S::default());
            }
        }
        _ => {
            cells.clear();
            cells.resize(col, (' ', S::default()));
        }
    }
}

/// Joins cells of equal style into runs.
pub fn cells_to_runs(cells: &[(char, Sgr)]) -> Vec<(String, Sgr)> {
    let mut runs: Vec<(String, Sgr)> = Vec::new();
    for &(c, s) in cells {
        match runs.last_mut() {
            Some((text, style)) if *style == s => text.push(c),
            _ => runs.push((c.to_string(), s)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Style};

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
                    let s = crate::render::theme::sgr(s);
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
            vec!["Text(\"x\", Sgr { fg: None, bg: None, attrs: 0 })".to_owned()]
        );
    }

    #[test]
    fn carriage_return_overwrites_the_line() {
        let mut l = AnsiLines::new();
        l.feed("progress 10%\rprogress 5");
        l.feed("0%\rprogress 100%\ndone\r\n");
        l.feed("abc\x08\x08X\n12345\r\x1b[Kok\n");
        let text: Vec<String> = l
            .runs()
            .iter()
            .map(|line| line.iter().map(|(t, _)| t.as_str()).collect())
            .collect();
        assert_eq!(text, ["progress 100%", "done", "aXc", "ok"]);
    }
}
