//! The one place where what transcript text is ([`Kind`], [`LineStyle`], command output's
//! [`Sgr`]) becomes how it looks: ratatui colours and attributes.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::{ACCENT, DIM};
use crate::ansi::{AnsiLines, Colour, Sgr};
use crate::kind::{Kind, LineStyle, MdInline, MdText, MdTint, Tone};
use crate::transcript::Transcript;

/// The background of the focused part's header row.
const FOCUS_BG: Color = Color::Indexed(236);

/// The style of a whole transcript line; its pieces' looks go over it.
pub fn line_style(style: LineStyle) -> Style {
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

/// The look of a piece: its kind's, on the focus background when focused.
pub fn tone(t: Tone) -> Style {
    let s = kind(t.kind);
    if t.focused { s.bg(FOCUS_BG) } else { s }
}

/// The look of a kind of text.
pub fn kind(k: Kind) -> Style {
    let s = Style::new();
    match k {
        Kind::Plain => s,
        Kind::Secondary => DIM,
        Kind::Thought => s.fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
        Kind::Title | Kind::DiffFile => s.bold(),
        Kind::FocusMark => s.fg(Color::Cyan).bold(),
        Kind::ToolKind | Kind::ShowAll | Kind::DiffHunk | Kind::ListMarker => s.fg(Color::Cyan),
        Kind::ToolBusy | Kind::NoticeStop => s.fg(Color::Yellow),
        Kind::ToolDone => s.fg(Color::Green).bold(),
        Kind::Failed => s.fg(Color::Red).bold(),
        Kind::NoticeInfo => s.fg(Color::Blue),
        Kind::PlanDone
        | Kind::PermissionAllowed
        | Kind::DiffAdded
        | Kind::TaskDone
        | Kind::CodeString => s.fg(Color::Green),
        Kind::PlanActive => s.fg(Color::Yellow).bold(),
        Kind::PlanDoneText => DIM.add_modifier(Modifier::CROSSED_OUT),
        Kind::PermissionWaiting => s.fg(Color::Magenta).bold(),
        Kind::PermissionLabel | Kind::CodeKeyword => s.fg(Color::Magenta),
        Kind::PermissionRejected | Kind::DiffRemoved => s.fg(Color::Red),
        Kind::CodeComment => s.fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
        Kind::CodeNumber => s.fg(Color::Yellow),
        Kind::Markdown(m) => markdown(m),
        Kind::Output(o) => sgr(o),
    }
}

/// Inline Markdown: the quote's look, then the heading's, the enclosing spans', the text's.
fn markdown(m: MdText) -> Style {
    let mut s = if m.quote {
        Style::new().fg(Color::Gray).add_modifier(Modifier::ITALIC)
    } else {
        Style::new()
    };
    s = match m.heading {
        0 => s,
        1 => s
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        2 => s.fg(Color::Cyan).add_modifier(Modifier::BOLD),
        _ => s.add_modifier(Modifier::BOLD),
    };
    for (on, m) in [
        (m.emphasis, Modifier::ITALIC),
        (m.strong, Modifier::BOLD),
        (m.strike, Modifier::CROSSED_OUT),
        (m.link, Modifier::UNDERLINED),
    ] {
        if on {
            s = s.add_modifier(m);
        }
    }
    s = match m.tint {
        None => s,
        Some(MdTint::Link) => s.fg(Color::Blue),
        Some(MdTint::Image) => s.fg(Color::DarkGray),
    };
    match m.inline {
        MdInline::Text => s,
        MdInline::Code => s.fg(Color::Yellow),
        MdInline::Aside => s.fg(Color::DarkGray),
    }
}

/// Command output's own style.
pub fn sgr(o: Sgr) -> Style {
    let mut s = Style::new();
    s.fg = o.fg.map(colour);
    s.bg = o.bg.map(colour);
    for (bit, m) in [
        (Sgr::BOLD, Modifier::BOLD),
        (Sgr::DIM, Modifier::DIM),
        (Sgr::ITALIC, Modifier::ITALIC),
        (Sgr::UNDERLINED, Modifier::UNDERLINED),
        (Sgr::REVERSED, Modifier::REVERSED),
        (Sgr::CROSSED_OUT, Modifier::CROSSED_OUT),
    ] {
        if o.attrs & bit != 0 {
            s = s.add_modifier(m);
        }
    }
    s
}

fn colour(c: Colour) -> Color {
    const BASE: [Color; 8] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
    ];
    const BRIGHT: [Color; 8] = [
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    match c {
        Colour::Base(n) => BASE[n as usize & 7],
        Colour::Bright(n) => BRIGHT[n as usize & 7],
        Colour::Indexed(n) => Color::Indexed(n),
        Colour::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

/// Markdown laid out by [`crate::markdown::render`], as ratatui lines.
pub fn markdown_lines(markdown: &str, width: u16) -> Vec<Line<'static>> {
    crate::markdown::render(markdown, width)
        .into_iter()
        .map(|l| {
            Line::from(
                l.into_iter()
                    .map(|(t, k)| Span::styled(t, kind(k)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// Command output's lines as ratatui lines.
pub fn ansi_lines(lines: &AnsiLines) -> Vec<Line<'static>> {
    lines
        .runs()
        .into_iter()
        .map(|l| {
            Line::from(
                l.into_iter()
                    .map(|(t, o)| Span::styled(t, sgr(o)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// [`Transcript::visible_spans`] with each piece's look (to go over the row's
/// [`line_style`]).
pub fn visible_spans(
    t: &Transcript,
    height: usize,
    scroll: usize,
) -> Vec<(LineStyle, Vec<(&str, Style)>)> {
    t.visible_spans(height, scroll)
        .into_iter()
        .map(|(l, pieces)| (l, pieces.into_iter().map(|(s, t)| (s, tone(t))).collect()))
        .collect()
}
