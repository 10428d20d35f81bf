//! Ringing the terminal when a session the person is not looking at needs them
//! (docs/tui.md §2c): a desktop notification by OSC 9 or OSC 777 where the terminal shows
//! one, else the bell. The mode comes from `AX_CODE_NOTIFY` (or `/notify`); `auto` decides
//! from the environment the terminal sets.

use std::fmt;
use std::str::FromStr;

/// The environment variable that picks the mode.
pub const ENV: &str = "AX_CODE_NOTIFY";
/// Longest title or body sent in a notification, in chars.
const MAX_FIELD: usize = 120;

/// What the person asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyMode {
    /// Never ring.
    Off,
    /// The bell (BEL), which every terminal knows (and tmux marks the window by).
    Bell,
    /// `OSC 9 ; text BEL` (iTerm2, Warp, Ghostty, WezTerm).
    Osc9,
    /// `OSC 777 ; notify ; title ; body BEL` (VTE terminals such as GNOME Terminal, foot,
    /// rxvt-unicode, Ghostty, WezTerm).
    Osc777,
    /// Decide from the environment ([`detect`]).
    #[default]
    Auto,
}

/// How this TUI rings, once `auto` is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ring {
    /// Not at all.
    Off,
    /// BEL.
    Bell,
    /// OSC 9.
    Osc9,
    /// OSC 777.
    Osc777,
}

impl FromStr for NotifyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<NotifyMode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Ok(NotifyMode::Off),
            "bell" => Ok(NotifyMode::Bell),
            "osc9" => Ok(NotifyMode::Osc9),
            "osc777" => Ok(NotifyMode::Osc777),
            "auto" | "" => Ok(NotifyMode::Auto),
            _ => Err(format!(
                "{s:?} is not a notification mode: use off, bell, osc9, osc777 or auto"
            )),
        }
    }
}

impl fmt::Display for NotifyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotifyMode::Off => "off",
            NotifyMode::Bell => "bell",
            NotifyMode::Osc9 => "osc9",
            NotifyMode::Osc777 => "osc777",
            NotifyMode::Auto => "auto",
        })
    }
}

impl fmt::Display for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ring::Off => "off",
            Ring::Bell => "the bell",
            Ring::Osc9 => "OSC 9 notifications",
            Ring::Osc777 => "OSC 777 notifications",
        })
    }
}

impl NotifyMode {
    /// How to ring in the environment `env` (a lookup of variables).
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Ring {
        match self {
            NotifyMode::Off => Ring::Off,
            NotifyMode::Bell => Ring::Bell,
            NotifyMode::Osc9 => Ring::Osc9,
            NotifyMode::Osc777 => Ring::Osc777,
            NotifyMode::Auto => detect(env),
        }
    }
}

/// `auto`: a notification only where the terminal is known to show it, else the bell.
///
/// Inside tmux or screen the sequence would need a passthrough the multiplexer does not
/// allow by default, so the bell it is (tmux marks the window). Then by the terminal's own
/// name: iTerm2 and Warp take OSC 9; WezTerm and Ghostty take OSC 777 (with a title);
/// foot, rxvt-unicode and VTE 0.46 or later (GNOME Terminal and friends, where an unpatched
/// VTE ignores it silently) take OSC 777. Everything else, kitty included (its protocol is
/// OSC 99), gets the bell.
pub fn detect(env: impl Fn(&str) -> Option<String>) -> Ring {
    let term = env("TERM").unwrap_or_default();
    if env("TMUX").is_some_and(|v| !v.is_empty())
        || term.starts_with("screen")
        || term.starts_with("tmux")
    {
        return Ring::Bell;
    }
    match env("TERM_PROGRAM").unwrap_or_default().as_str() {
        "iTerm.app" | "WarpTerminal" => return Ring::Osc9,
        "WezTerm" | "ghostty" => return Ring::Osc777,
        _ => {}
    }
    if term.starts_with("foot") || term.starts_with("rxvt-unicode") {
        return Ring::Osc777;
    }
    if env("VTE_VERSION")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|v| v >= 4600)
    {
        return Ring::Osc777;
    }
    Ring::Bell
}

/// One field of a notification: control characters (C0, DEL and C1, so nothing can end the
/// sequence early) dropped, `;` (the field separator of OSC 777) turned into `,`, bounded.
fn field(text: &str) -> String {
    let mut out: String = text
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if c == ';' { ',' } else { c })
        .take(MAX_FIELD)
        .collect();
    if text.chars().filter(|c| !c.is_control()).count() > MAX_FIELD {
        out.push('…');
    }
    out
}

/// The bytes that ring the terminal `ring`'s way with `title` and `body`; `None` when off.
pub fn sequence(ring: Ring, title: &str, body: &str) -> Option<String> {
    match ring {
        Ring::Off => None,
        Ring::Bell => Some("\x07".to_owned()),
        // A text that starts with a digit could be read as a ConEmu OSC 9 command: it
        // starts with the name.
        Ring::Osc9 => Some(format!("\x1b]9;{}: {}\x07", field(title), field(body))),
        Ring::Osc777 => Some(format!(
            "\x1b]777;notify;{};{}\x07",
            field(title),
            field(body)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn modes_parse_strictly() {
        assert_eq!("OSC9".parse(), Ok(NotifyMode::Osc9));
        assert_eq!(" off ".parse(), Ok(NotifyMode::Off));
        assert_eq!("".parse(), Ok(NotifyMode::Auto));
        let e = "loud".parse::<NotifyMode>().unwrap_err();
        assert!(e.contains("off, bell, osc9, osc777 or auto"), "{e}");
        for m in ["off", "bell", "osc9", "osc777", "auto"] {
            assert_eq!(m.parse::<NotifyMode>().unwrap().to_string(), m);
        }
    }

    #[test]
    fn auto_picks_by_terminal_and_falls_back_to_the_bell() {
        let cases: [(&[(&str, &str)], Ring); 10] = [
            (&[("TERM_PROGRAM", "iTerm.app")], Ring::Osc9),
            (&[("TERM_PROGRAM", "WarpTerminal")], Ring::Osc9),
            (&[("TERM_PROGRAM", "WezTerm")], Ring::Osc777),
            (&[("TERM_PROGRAM", "ghostty")], Ring::Osc777),
            (&[("TERM", "foot")], Ring::Osc777),
            (
                &[("TERM", "xterm-256color"), ("VTE_VERSION", "7402")],
                Ring::Osc777,
            ),
            (
                &[("TERM", "xterm-256color"), ("VTE_VERSION", "4200")],
                Ring::Bell,
            ),
            (&[("TERM", "xterm-kitty")], Ring::Bell),
            (
                &[
                    ("TERM_PROGRAM", "iTerm.app"),
                    ("TMUX", "/tmp/tmux-0/default,1,0"),
                ],
                Ring::Bell,
            ),
            (&[], Ring::Bell),
        ];
        for (vars, want) in cases {
            assert_eq!(NotifyMode::Auto.resolve(env(vars)), want, "{vars:?}");
        }
        assert_eq!(NotifyMode::Off.resolve(env(&[])), Ring::Off);
        assert_eq!(
            NotifyMode::Osc9.resolve(env(&[("TMUX", "x")])),
            Ring::Osc9,
            "an explicit mode is obeyed"
        );
    }

    #[test]
    fn sequences_carry_no_control_characters_from_the_text() {
        assert_eq!(sequence(Ring::Off, "t", "b"), None);
        assert_eq!(sequence(Ring::Bell, "t", "b").unwrap(), "\x07");
        assert_eq!(
            sequence(Ring::Osc9, "ax-code", "“fix”; done").unwrap(),
            "\x1b]9;ax-code: “fix”, done\x07"
        );
        let evil = "a\x07b\x1b]0;pwned\x1b\\c\u{9c}d";
        let s = sequence(Ring::Osc777, "ax-code", evil).unwrap();
        assert_eq!(s, "\x1b]777;notify;ax-code;ab]0,pwned\\cd\x07");
        let long = sequence(Ring::Osc9, "t", &"x".repeat(500)).unwrap();
        assert!(long.chars().count() < 140, "{}", long.len());
    }
}
