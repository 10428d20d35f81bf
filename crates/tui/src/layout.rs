//! Screen geometry, shared by drawing and mouse hit-testing so they can never disagree.

/// A rectangle of terminal cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    /// Leftmost column.
    pub x: u16,
    /// Top row.
    pub y: u16,
    /// Width in cells.
    pub width: u16,
    /// Height in rows.
    pub height: u16,
}

impl Rect {
    /// A rectangle at (`x`, `y`) of the given size.
    pub fn new(x: u16, y: u16, width: u16, height: u16) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    /// Whether the cell (`col`, `row`) lies inside.
    pub fn contains(&self, col: u16, row: u16) -> bool {
        col >= self.x
            && row >= self.y
            && (col - self.x) < self.width
            && (row - self.y) < self.height
    }

    /// The area inside a one-cell border.
    pub fn inner(&self) -> Rect {
        Rect::new(
            self.x.saturating_add(1),
            self.y.saturating_add(1),
            self.width.saturating_sub(2),
            self.height.saturating_sub(2),
        )
    }

    /// A centered box of at most `w` by `h`.
    pub fn centered(&self, w: u16, h: u16) -> Rect {
        let w = w.min(self.width);
        let h = h.min(self.height);
        Rect::new(
            self.x + (self.width - w) / 2,
            self.y + (self.height - h) / 2,
            w,
            h,
        )
    }
}

/// The label of the revoke button in the TUIMCP bar.
pub const REVOKE_LABEL: &str = "[Revoke]";
/// The label of the button that copies the MCP client configuration.
pub const COPY_LABEL: &str = "[Copy config]";
/// What the TUIMCP bar starts with.
pub const BAR_LABEL: &str = " TUIMCP on: ";

/// The endpoint path cut into rows of at most `width` display columns, never inside a char
/// (a zero-width mark stays with its letter). Drawing and layout both use it.
pub fn path_rows(path: &str, width: u16) -> Vec<&str> {
    let width = usize::from(width.max(2));
    let mut rows = Vec::new();
    let (mut start, mut used) = (0, 0);
    for (i, ch) in path.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
        if used + w > width && i > start {
            rows.push(&path[start..i]);
            (start, used) = (i, 0);
        }
        used += w;
    }
    if start < path.len() || rows.is_empty() {
        rows.push(&path[start..]);
    }
    rows
}
/// Most text rows the composer grows to before it scrolls.
pub const COMPOSER_MAX_ROWS: usize = 6;

/// Where everything goes on a screen of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The top row: project and connection.
    pub header: Rect,
    /// The TUIMCP bar, only while sharing: one row, or more when the endpoint path does not
    /// fit beside the label and the buttons (the path then gets rows of its own).
    pub bar: Option<Rect>,
    /// Where the endpoint path is drawn inside the bar: beside the label, or on the rows
    /// below it, cut by [`path_rows`] at this width. Never under a button.
    pub bar_path: Option<Rect>,
    /// The `[Copy config]` button inside the bar.
    pub copy: Option<Rect>,
    /// The `[Revoke]` button inside the bar.
    pub revoke: Option<Rect>,
    /// Session list or transcript, with its border.
    pub main: Rect,
    /// The attachment chips above the composer, when there are attachments.
    pub chips: Option<Rect>,
    /// The tray between the main area and the chips: the queued prompts (`render/tray.rs`).
    pub tray: Option<Rect>,
    /// The prompt editor.
    pub composer: Rect,
    /// The bottom row: notices and hints.
    pub status: Rect,
}

impl Layout {
    /// `bar_path` is the endpoint path while sharing; `tray` the rows the tray asks for
    /// (it gets at most a third of the screen).
    pub fn compute(
        width: u16,
        height: u16,
        bar_path: Option<&str>,
        chips: bool,
        draft_rows: usize,
        tray: u16,
    ) -> Layout {
        let mut y = 0u16;
        let mut take = |h: u16, avail: &mut u16| {
            let h = h.min(*avail);
            let r = Rect::new(0, y, width, h);
            y += h;
            *avail -= h;
            r
        };
        let mut avail = height;
        let header = take(1, &mut avail);
        // The buttons sit at the right of the bar's first row: `[Copy config] [Revoke] `.
        let revoke_w = REVOKE_LABEL.len() as u16;
        let copy_w = COPY_LABEL.len() as u16;
        let label_w = BAR_LABEL.len() as u16;
        let buttons_w = copy_w + 1 + revoke_w + 1;
        let inline_w = width.saturating_sub(label_w + 1 + buttons_w);
        let (bar_rows, path_inline) = match bar_path {
            None => (0, true),
            Some(path) => {
                let path_w = unicode_width::UnicodeWidthStr::width(path);
                if path_w <= usize::from(inline_w) {
                    (1, true)
                } else {
                    // The path on rows of its own, at most a third of the screen.
                    let rows = path_rows(path, width).len() as u16;
                    (1 + rows.min((height / 3).saturating_sub(1).max(1)), false)
                }
            }
        };
        let bar = bar_path.map(|_| take(bar_rows, &mut avail));
        // Reserve the bottom parts first; the main area gets what is left.
        let composer_h = (draft_rows.clamp(1, COMPOSER_MAX_ROWS) as u16) + 2;
        let tray = tray.min(height / 3);
        let bottom = composer_h + 1 + u16::from(chips) + tray;
        let main_h = avail.saturating_sub(bottom);
        let main = take(main_h, &mut avail);
        let tray = (tray > 0).then(|| take(tray, &mut avail));
        let chips = chips.then(|| take(1, &mut avail));
        let composer = take(composer_h, &mut avail);
        let status = take(1, &mut avail);
        let revoke = bar.and_then(|b| {
            (b.width > revoke_w + 1).then(|| Rect::new(b.width - revoke_w - 1, b.y, revoke_w, 1))
        });
        let copy = revoke.and_then(|r| {
            (r.x > label_w + copy_w).then(|| Rect::new(r.x - 1 - copy_w, r.y, copy_w, 1))
        });
        let bar_path = bar.and_then(|b| {
            if path_inline {
                (b.height > 0).then(|| Rect::new(label_w, b.y, inline_w, 1))
            } else {
                (b.height > 1).then(|| Rect::new(0, b.y + 1, b.width, b.height - 1))
            }
        });
        Layout {
            header,
            bar,
            bar_path,
            copy,
            revoke,
            main,
            chips,
            tray,
            composer,
            status,
        }
    }
}

/// The label of the button that revokes a session's standing "always" answers.
pub const STANDING_REVOKE: &str = "[Revoke]";

/// Columns (from the transcript's left edge) of [`STANDING_REVOKE`] on the standing row; the
/// mouse handler uses the same.
pub fn standing_revoke_cols(width: u16) -> std::ops::Range<u16> {
    let w = STANDING_REVOKE.len() as u16;
    let start = width.saturating_sub(w);
    start..width
}

/// The inside of an open session's main box: the standing "always" row when it shows, its
/// [`STANDING_REVOKE`] button, and the transcript below. Drawing and the mouse use the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionArea {
    /// The standing row (the box's first inner row), when it shows.
    pub standing: Option<Rect>,
    /// The standing row's [`STANDING_REVOKE`] button.
    pub standing_revoke: Option<Rect>,
    /// Where the transcript is drawn.
    pub transcript: Rect,
}

/// The areas inside `main` (the session's box, border included); `standing_row` says whether
/// the session shows its standing "always" answers.
pub fn session_area(main: Rect, standing_row: bool) -> SessionArea {
    let inner = main.inner();
    let mut transcript = inner;
    if standing_row && transcript.height > 1 {
        transcript.y += 1;
        transcript.height -= 1;
    }
    let standing =
        (standing_row && inner.height > 0).then(|| Rect::new(inner.x, inner.y, inner.width, 1));
    let standing_revoke = standing.map(|row| {
        let cols = standing_revoke_cols(row.width);
        Rect::new(row.x + cols.start, row.y, cols.end - cols.start, 1)
    });
    SessionArea {
        standing,
        standing_revoke,
        transcript,
    }
}

/// Where the agent picker's box is drawn for `agents` rows; its inner rows are the agents,
/// top first (the mouse maps a click back through the same box).
pub fn agent_picker_box(screen: Rect, agents: usize) -> Rect {
    let h = u16::try_from(agents).unwrap_or(u16::MAX).saturating_add(5);
    screen.centered(60, h)
}

/// Column ranges of the attachment chips, as drawn: ` name ×` separated by one space.
pub fn chip_spans(attachments: &[String]) -> Vec<(usize, usize)> {
    let mut x = 0;
    attachments
        .iter()
        .map(|a| {
            let w = chip_label(a).chars().count();
            let span = (x, x + w);
            x += w + 1;
            span
        })
        .collect()
}

/// The text of one chip.
pub fn chip_label(path: &str) -> String {
    let short: String = if path.chars().count() > 40 {
        let tail: String = path.chars().rev().take(39).collect();
        format!("…{}", tail.chars().rev().collect::<String>())
    } else {
        path.to_owned()
    };
    format!(" {short} × ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: &str = "/tmp/ax-tui-Ab12Cd/endpoint.json";

    #[test]
    fn the_bar_takes_one_row_and_gives_it_back() {
        let shared = Layout::compute(80, 24, Some(SHORT), false, 1, 0);
        let plain = Layout::compute(80, 24, None, false, 1, 0);
        assert_eq!(shared.bar, Some(Rect::new(0, 1, 80, 1)));
        assert_eq!(shared.main.height + 1, plain.main.height);
        assert_eq!(plain.bar, None);
        assert_eq!(shared.revoke, Some(Rect::new(71, 1, 8, 1)));
        assert_eq!(shared.copy, Some(Rect::new(57, 1, 13, 1)));
        assert_eq!(shared.bar_path, Some(Rect::new(12, 1, 44, 1)));
        assert_eq!(plain.status, Rect::new(0, 23, 80, 1));
    }

    #[test]
    fn a_long_path_gets_rows_of_its_own_and_no_button_covers_it() {
        // macOS's temp root alone is ~49 bytes; this one is 101 with the file name.
        let long =
            "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/ax-tui-Ab12Cd/x/y/endpoint.json";
        let long = format!("/private{long}-0123456789");
        for width in [40u16, 80, 100] {
            let l = Layout::compute(width, 24, Some(&long), false, 1, 0);
            let bar = l.bar.unwrap();
            let path = l.bar_path.unwrap();
            let rows = path_rows(&long, path.width);
            assert_eq!(rows.concat(), long, "the whole path, in order");
            assert_eq!(
                path.height as usize,
                rows.len(),
                "every row is shown at {width}"
            );
            assert_eq!(bar.height, 1 + path.height);
            for button in [l.revoke, l.copy].into_iter().flatten() {
                assert!(button.y < path.y, "buttons stay on the label row");
            }
            assert_eq!(l.main.y, bar.y + bar.height);
        }
    }

    #[test]
    fn path_rows_never_split_a_char() {
        assert_eq!(path_rows("/a/日本/b", 4), ["/a/", "日本", "/b"]);
        assert_eq!(path_rows("/e\u{301}x", 2), ["/e\u{301}", "x"]);
        assert_eq!(path_rows("", 10), [""]);
    }

    #[test]
    fn the_tray_sits_above_the_chips_and_gets_at_most_a_third() {
        let plain = Layout::compute(80, 24, None, true, 1, 0);
        let l = Layout::compute(80, 24, None, true, 1, 3);
        let tray = l.tray.unwrap();
        assert_eq!(tray, Rect::new(0, l.main.y + l.main.height, 80, 3));
        assert_eq!(l.chips.unwrap().y, tray.y + 3);
        assert_eq!(l.main.height + 3, plain.main.height);
        assert_eq!(plain.tray, None);
        assert_eq!(
            Layout::compute(80, 24, None, false, 1, 50)
                .tray
                .unwrap()
                .height,
            8
        );
    }

    #[test]
    fn tiny_screens_do_not_underflow() {
        let l = Layout::compute(3, 2, Some(SHORT), true, 10, 0);
        assert!(l.status.y <= 2);
        assert_eq!(l.revoke, None);
        let l = Layout::compute(3, 30, Some(SHORT), true, 10, 0);
        assert!(l.bar.unwrap().height <= 10);
    }
}
