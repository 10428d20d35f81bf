//! The TUI's own input vocabulary.
//!
//! The state model never sees a terminal type: the front end converts crossterm events into
//! these at the edge (see `term.rs`), and tests build them directly.

/// A key on the keyboard, already decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCode {
    Char(char),
    Enter,
    Backspace,
    Delete,
    Esc,
    Tab,
    BackTab,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    /// Any other key (function keys, media keys): activity, nothing else.
    Other,
}

/// Modifier keys held with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modifiers {
    pub ctrl: bool,
    pub alt: bool,
    pub shift: bool,
}

impl Modifiers {
    pub const NONE: Modifiers = Modifiers {
        ctrl: false,
        alt: false,
        shift: false,
    };
    pub const CTRL: Modifiers = Modifiers {
        ctrl: true,
        alt: false,
        shift: false,
    };
    pub const ALT: Modifiers = Modifiers {
        ctrl: false,
        alt: true,
        shift: false,
    };
}

/// A key press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: Modifiers,
}

impl Key {
    pub fn plain(code: KeyCode) -> Key {
        Key {
            code,
            mods: Modifiers::NONE,
        }
    }

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
    ScrollUp,
    ScrollDown,
    /// Movement or any other button: counts as human activity, does nothing else.
    Other,
}

/// A mouse event at a zero-based terminal cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mouse {
    pub kind: MouseKind,
    pub col: u16,
    pub row: u16,
}

/// One parsed input event from the person at the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Key(Key),
    Paste(String),
    Mouse(Mouse),
}

impl From<Key> for Input {
    fn from(k: Key) -> Input {
        Input::Key(k)
    }
}
