//! Terminal notifications in the app: the mode, and ringing when a session needs the person
//! (the modes and escape sequences are `crate::notify`).

use crate::app::{App, Effect, NoticeKind};
use crate::notify::{ENV, NotifyMode, Ring, sequence};

impl App {
    /// The notification mode and how it rings here.
    pub fn notifications(&self) -> (NotifyMode, Ring) {
        (self.notify_mode, self.ring)
    }

    /// Sets the mode; `auto` is what [`NotifyMode::Auto`] resolved to in this terminal (the
    /// owner reads the environment once, so the state stays pure).
    pub fn set_notifications(&mut self, mode: NotifyMode, auto: Ring) {
        self.ring_auto = auto;
        self.notify_mode = mode;
        self.ring = match mode {
            NotifyMode::Auto => auto,
            other => other.resolve(|_| None),
        };
    }

    /// The terminal gained or lost the focus (focus reporting, where the terminal sends it).
    pub fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// Rings the terminal about `what` (one line), unless notifications are off.
    pub(crate) fn ring(&mut self, what: &str) {
        if let Some(sequence) = sequence(self.ring, "ax-code", what) {
            self.effects.push(Effect::Ring { sequence });
        }
    }

    /// `/notify [MODE]`: says how the TUI rings, or switches it for this run.
    pub(crate) fn notify_command(&mut self, arg: Option<String>) {
        if let Some(arg) = arg {
            match arg.parse::<NotifyMode>() {
                Ok(mode) => self.set_notifications(mode, self.ring_auto),
                Err(e) => {
                    self.notify(NoticeKind::Error, e);
                    return;
                }
            }
        }
        let text = format!(
            "notifications: {} (rings with {}); /notify off|bell|osc9|osc777|auto, or {ENV}",
            self.notify_mode, self.ring
        );
        self.notify(NoticeKind::Info, text);
    }
}
