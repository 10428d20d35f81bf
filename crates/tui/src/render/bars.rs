//! The bars that take the composer's place: the Ctrl+R history search (docs/tui.md §3a) and
//! the find bar (§3b), and the highlighting of find's matches in the transcript rows.

use ratatui::Frame;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::tr;
use crate::app::App;
use crate::find::{Find, Match};
use crate::history::Search;
use crate::layout::Rect;

const ACCENT: Color = Color::Cyan;
const DIM: Style = Style::new().fg(Color::DarkGray);
/// Every match on screen.
pub const MATCH: Style = Style::new().fg(Color::Black).bg(Color::Yellow);
/// The current match.
pub const CURRENT: Style = Style::new()
    .fg(Color::Black)
    .bg(Color::LightMagenta)
    .add_modifier(Modifier::BOLD);

/// The composer during a Ctrl+R search: the query, and the prompt it found (its first line),
/// or that nothing matches.
pub fn history_search(frame: &mut Frame, app: &App, search: &Search, r: Rect) {
    let block = Block::bordered()
        .title(" History search · ^R older · Enter take · Esc cancel ")
        .border_style(Style::new().fg(ACCENT));
    frame.render_widget(block, tr(r));
    let found = match app.history_search_found() {
        Some(text) => {
            let first = text.lines().next().unwrap_or_default();
            let more = if text.contains('\n') { " …" } else { "" };
            Span::raw(format!("{first}{more}"))
        }
        None if search.query.is_empty() => Span::styled("type to search the prompts", DIM),
        None => Span::styled("no match", Style::new().fg(Color::Red)),
    };
    let line = Line::from(vec![
        Span::styled(
            format!("search: {}", search.query),
            Style::new().fg(ACCENT).bold(),
        ),
        Span::styled(" → ", DIM),
        found,
    ]);
    frame.render_widget(Paragraph::new(line), tr(r.inner()));
}

/// The find bar: the query and where the current match stands ("3/17", "no match").
pub fn find(frame: &mut Frame, find: &Find, r: Rect) {
    let block = Block::bordered()
        .title(" Find · Enter/^N next · ^P/S-Enter previous · Esc close ")
        .border_style(Style::new().fg(Color::Yellow));
    frame.render_widget(block, tr(r));
    let status = match find.status() {
        s if s.is_empty() => Span::styled("type to find in the transcript", DIM),
        s if s == "no match" => Span::styled(s, Style::new().fg(Color::Red)),
        s => Span::styled(s, Style::new().fg(Color::Yellow).bold()),
    };
    let line = Line::from(vec![
        Span::styled(
            format!("find: {}", find.query()),
            Style::new().fg(Color::Yellow).bold(),
        ),
        Span::raw("  "),
        status,
    ]);
    frame.render_widget(Paragraph::new(line), tr(r.inner()));
}

/// The pieces of one row (which starts at byte `row_start` of its line) cut where find's
/// `matches` in that line begin and end, the matched pieces marked: `Some(true)` for the
/// current match, `Some(false)` for another.
pub fn cut_at_matches<'a>(
    pieces: Vec<(&'a str, Style)>,
    row_start: usize,
    matches: &[Match],
    current: Option<&Match>,
) -> Vec<(&'a str, Style, Option<bool>)> {
    if matches.is_empty() {
        return pieces.into_iter().map(|(t, s)| (t, s, None)).collect();
    }
    let mut out = Vec::new();
    let mut at = row_start;
    for (text, style) in pieces {
        let (start, end) = (at, at + text.len());
        at = end;
        let mut cut = start;
        for m in matches {
            let (a, b) = (m.range.start.max(start), m.range.end.min(end));
            if a >= b {
                continue;
            }
            // Match ranges are char boundaries of the line, so of the piece too.
            if a > cut {
                out.push((&text[cut - start..a - start], style, None));
            }
            out.push((&text[a - start..b - start], style, Some(Some(m) == current)));
            cut = b;
        }
        if cut < end {
            out.push((&text[cut - start..], style, None));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_cut_at_matches_across_pieces() {
        let m = |a, b| Match {
            line: 0,
            range: a..b,
        };
        let matches = [m(2, 5), m(7, 11)];
        // The row starts at byte 1 of its line: "bcdefghijklm" as two pieces.
        let pieces = vec![("bcdefgh", Style::new()), ("ijklm", Style::new().bold())];
        let out = cut_at_matches(pieces, 1, &matches, Some(&matches[1]));
        let shown: Vec<(&str, Option<bool>)> = out.iter().map(|(t, _, h)| (*t, *h)).collect();
        assert_eq!(
            shown,
            [
                ("b", None),
                ("cde", Some(false)),
                ("fg", None),
                ("h", Some(true)),
                ("ijk", Some(true)),
                ("lm", None)
            ]
        );
        assert_eq!(out[4].1, Style::new().bold(), "the piece keeps its style");
    }
}
