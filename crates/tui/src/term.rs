//! The terminal edge: crossterm events in, our [`Input`]s out; entering and always leaving
//! raw mode, the alternate screen, mouse capture and bracketed paste.

use std::io::{self, Stdout, Write};
use std::sync::Once;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, Event as CtEvent, KeyCode as CtKey, KeyEventKind,
    KeyModifiers, MouseButton, MouseEventKind,
};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};

use crate::input::{Input, Key, KeyCode, Modifiers, Mouse, MouseKind};

/// What a terminal event means to the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermEvent {
    /// Human input: it also counts as activity for TUIMCP.
    Input(Input),
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
    /// The terminal gained (`true`) or lost the focus.
    Focus(bool),
    /// Focus changes, key releases: nothing to do.
    Ignored,
}

/// Converts one crossterm event.
pub fn convert(event: CtEvent) -> TermEvent {
    match event {
        CtEvent::Key(k) if k.kind == KeyEventKind::Release => TermEvent::Ignored,
        CtEvent::Key(k) => {
            let mods = Modifiers {
                ctrl: k.modifiers.contains(KeyModifiers::CONTROL),
                alt: k.modifiers.contains(KeyModifiers::ALT),
                shift: k.modifiers.contains(KeyModifiers::SHIFT),
            };
            let code = match k.code {
                CtKey::Char(c) => KeyCode::Char(if mods.ctrl { c.to_ascii_lowercase() } else { c }),
                CtKey::Enter => KeyCode::Enter,
                CtKey::Backspace => KeyCode::Backspace,
                CtKey::Delete => KeyCode::Delete,
                CtKey::Esc => KeyCode::Esc,
                CtKey::Tab => KeyCode::Tab,
                CtKey::BackTab => KeyCode::BackTab,
                CtKey::Up => KeyCode::Up,
                CtKey::Down => KeyCode::Down,
                CtKey::Left => KeyCode::Left,
                CtKey::Right => KeyCode::Right,
                CtKey::Home => KeyCode::Home,
                CtKey::End => KeyCode::End,
                CtKey::PageUp => KeyCode::PageUp,
                CtKey::PageDown => KeyCode::PageDown,
                CtKey::F(n) => KeyCode::F(n),
                // Any other key is still a person at the keyboard.
                _ => KeyCode::Other,
            };
            TermEvent::Input(Input::Key(Key { code, mods }))
        }
        CtEvent::Paste(text) => TermEvent::Input(Input::Paste(text)),
        CtEvent::Mouse(m) => {
            let kind = match m.kind {
                MouseEventKind::Down(MouseButton::Left) => MouseKind::Down,
                MouseEventKind::Up(MouseButton::Left) => MouseKind::Up,
                MouseEventKind::ScrollUp => MouseKind::ScrollUp,
                MouseEventKind::ScrollDown => MouseKind::ScrollDown,
                _ => MouseKind::Other,
            };
            TermEvent::Input(Input::Mouse(Mouse {
                kind,
                col: m.column,
                row: m.row,
            }))
        }
        CtEvent::Resize(w, h) => TermEvent::Resize(w, h),
        CtEvent::FocusGained => TermEvent::Focus(true),
        CtEvent::FocusLost => TermEvent::Focus(false),
    }
}

/// Puts the terminal back the way we found it. Safe to call more than once.
pub fn restore() {
    let _ = disable_raw_mode();
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        DisableFocusChange,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = out.flush();
}

/// Owns the terminal while the TUI runs; dropping it restores the terminal, also on error
/// paths. A panic hook restores it before the panic message prints.
pub struct TerminalGuard {
    /// The terminal to draw on.
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Takes over the terminal: raw mode, the alternate screen, mouse and paste reporting.
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = execute!(
            out,
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste,
            EnableFocusChange
        ) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::{KeyEvent, MouseEvent};

    #[test]
    fn converts_keys_and_clicks() {
        let e = CtEvent::Key(KeyEvent::new(CtKey::Char('P'), KeyModifiers::CONTROL));
        assert_eq!(convert(e), TermEvent::Input(Input::Key(Key::ctrl('p'))));
        let m = CtEvent::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 5,
            row: 1,
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(
            convert(m),
            TermEvent::Input(Input::Mouse(Mouse {
                kind: MouseKind::Down,
                col: 5,
                row: 1
            }))
        );
        let moved = CtEvent::Mouse(MouseEvent {
            kind: MouseEventKind::Moved,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        });
        assert!(
            matches!(convert(moved), TermEvent::Input(_)),
            "movement is activity"
        );
        assert_eq!(convert(CtEvent::FocusLost), TermEvent::Focus(false));
    }
}
