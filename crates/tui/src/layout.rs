//! Screen geometry, shared by drawing and mouse hit-testing so they can never disagree.

/// A rectangle of terminal cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub x: u16,
    pub y: u16,
    pub width: u16,
    pub height: u16,
}

impl Rect {
    pub fn new(x: u16, y: u16, width: u16, height: u16) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

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
/// Most text rows the composer grows to before it scrolls.
pub const COMPOSER_MAX_ROWS: usize = 6;

/// Where everything goes on a screen of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub header: Rect,
    /// The one-row TUIMCP bar, only while sharing.
    pub bar: Option<Rect>,
    /// The `[Revoke]` button inside the bar.
    pub revoke: Option<Rect>,
    /// Session list or transcript, with its border.
    pub main: Rect,
    pub chips: Option<Rect>,
    pub composer: Rect,
    pub status: Rect,
}

impl Layout {
    pub fn compute(
        width: u16,
        height: u16,
        sharing: bool,
        chips: bool,
        draft_rows: usize,
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
        let bar = sharing.then(|| take(1, &mut avail));
        // Reserve the bottom parts first; the main area gets what is left.
        let composer_h = (draft_rows.clamp(1, COMPOSER_MAX_ROWS) as u16) + 2;
        let bottom = composer_h + 1 + u16::from(chips);
        let main_h = avail.saturating_sub(bottom);
        let main = take(main_h, &mut avail);
        let chips = chips.then(|| take(1, &mut avail));
        let composer = take(composer_h, &mut avail);
        let status = take(1, &mut avail);
        let revoke = bar.and_then(|b| {
            let w = REVOKE_LABEL.len() as u16;
            (b.width > w + 1).then(|| Rect::new(b.width - w - 1, b.y, w, 1))
        });
        Layout {
            header,
            bar,
            revoke,
            main,
            chips,
            composer,
            status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_takes_one_row_and_gives_it_back() {
        let shared = Layout::compute(80, 24, true, false, 1);
        let plain = Layout::compute(80, 24, false, false, 1);
        assert_eq!(shared.bar, Some(Rect::new(0, 1, 80, 1)));
        assert_eq!(shared.main.height + 1, plain.main.height);
        assert_eq!(plain.bar, None);
        assert_eq!(shared.revoke, Some(Rect::new(71, 1, 8, 1)));
        assert_eq!(plain.status, Rect::new(0, 23, 80, 1));
    }

    #[test]
    fn tiny_screens_do_not_underflow() {
        let l = Layout::compute(3, 2, true, true, 10);
        assert!(l.status.y <= 2);
        assert_eq!(l.revoke, None);
    }
}
