//! The TUI's own input vocabulary.
//!
//! The state model never sees a terminal type: the front end converts crossterm events into
//! these at the edge (see `term.rs`), and tests build them directly.

/// A key on the keyboard, already decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCode {
    /// A character key (with Shift already applied).
    Char(char),
    /// Enter / Return.
    Enter,
    /// Backspace.
    Backspace,
    /// Delete (forward).
    Delete,
    /// Escape.
    Esc,
    /// Tab.
    Tab,
    /// Shift+Tab.
    BackTab,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Home.
    Home,
    /// End.
    End,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// A function key, F1 to F12 (F2 hands the mouse to the terminal).
    F(u8),
    /// Any other key (media keys and the like): activity, nothing else.
    Other,
}

/// Modifier keys held with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modifiers {
    /// Control held.
    pub ctrl: bool,
    /// Alt (Option) held.
    pub alt: bool,
    /// Shift held.
    pub shift: bool,
}

impl Modifiers {
    /// No modifier.
    pub const NONE: Modifiers = Modifiers {
        ctrl: false,
        alt: false,
        shift: false,
    };
    /// Control alone.
    pub const CTRL: Modifiers = Modifiers {
        ctrl: true,
        alt: false,
        shift: false,
    };
    /// Alt alone.
    pub const ALT: Modifiers = Modifiers {
        ctrl: false,
        alt: true,
        shift: false,
    };
}

/// A key press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Which key.
    pub code: KeyCode,
    /// The modifiers held with it.
    pub mods: Modifiers,
}

impl Key {
    /// A key with no modifier.
    pub fn plain(code: KeyCode) -> Key {
        Key {
            code,
            mods: Modifiers::NONE,
        }
    }

    /// Ctrl plus a character, e.g. `Key::ctrl('c')`.
    pub fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            mods: Modifiers::CTRL,
        }
    }

    /// A key that types text into whatever has focus.
    pub fn printable(&self) -> Option<char> {
        match self.code {
            KeyCode::Char(c) if !self.mods.ctrl && !self.mods.alt && !c.is_control() => Some(c),
            _ => None,
        }
    }
}

/// What the mouse did, at a zero-based cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    /// Left button pressed.
    Down,
    /// Left button released.
    Up,
    /// Wheel up.
    ScrollUp,
    /// Wheel down.
    ScrollDown,
    /// Movement or any other button: counts as human activity, does nothing else.
    Other,
}

/// A mouse event at a zero-based terminal cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mouse {
    /// What happened.
    pub kind: MouseKind,
    /// The column, from 0 at the left.
    pub col: u16,
    /// The row, from 0 at the top.
    pub row: u16,
}

/// One parsed input event from the person at the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A key press.
    Key(Key),
    /// Pasted text (bracketed paste), inserted whole.
    Paste(String),
    /// A mouse event.
    Mouse(Mouse),
}

impl From<Key> for Input {
    fn from(k: Key) -> Input {
        Input::Key(k)
    }
}
