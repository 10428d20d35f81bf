//! A tool call's input as the person reads it before approving (docs/tui.md §3): the command
//! first (`$ ` and `> ` lines; an array joined shell-quoted), then *every* other field the agent
//! sent as `key: value` (nested JSON compact), each bounded, control characters made visible.
//! The open card in the transcript shows the same rows.

use serde_json::Value;

/// Characters of one field's value shown before the rest is counted ("… N more chars").
pub const FIELD_CHARS: usize = 2_000;
/// Fields shown before the rest is counted ("… and N more fields").
pub const FIELDS_SHOWN: usize = 48;

/// The keys whose value is the command itself, in the order they are looked for.
const COMMAND_KEYS: [&str; 2] = ["command", "cmd"];

/// One row of the input: what kind of row it is and its text (already made visible, not yet
/// wrapped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputLine {
    /// A line of the command: `first` for its first line (`$ `), else a further one (`> `).
    Command {
        /// The first line of the command.
        first: bool,
        /// The line's text.
        text: String,
    },
    /// `key: value` (a single-line value), or `key:` alone before [`InputLine::More`] rows.
    Field {
        /// The field's name.
        key: String,
        /// Its value on the same row (empty when it follows on rows of its own).
        value: String,
    },
    /// A further line of a multi-line string value.
    More(String),
    /// A note from the TUI (bounds, values shown elsewhere).
    Note(String),
}

/// Shows control characters: C0 and DEL in caret notation (`^[`, `^M`), tab as spaces, other
/// control characters (C1, bidi overrides and the like) as `<U+XXXX>`; so nothing is hidden
/// and nothing reaches the terminal.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push('^');
                out.push(((c as u8) ^ 0x40) as char);
            }
            c if c.is_control() || is_format_char(c) => {
                out.push_str(&format!("<U+{:04X}>", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Invisible characters that reorder or hide text (bidi controls, zero-width joiners).
fn is_format_char(c: char) -> bool {
    matches!(c as u32, 0x200b..=0x200f | 0x202a..=0x202e | 0x2066..=0x2069 | 0xfeff)
}

/// `args` as one shell line: each argument as is when it is plain, else single-quoted.
pub fn shell_join<'a>(args: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for a in args {
        if !out.is_empty() {
            out.push(' ');
        }
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
        if plain {
            out.push_str(a);
        } else {
            out.push('\'');
            out.push_str(&a.replace('\'', r"'\''"));
            out.push('\'');
        }
    }
    out
}

/// The command a value holds: a string as is, an array of strings joined shell-quoted.
fn command_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let args: Option<Vec<&str>> = items.iter().map(|i| i.as_str()).collect();
            args.map(shell_join)
        }
        _ => None,
    }
}

/// Cuts `s` to [`FIELD_CHARS`] characters, saying how many were left out.
fn bounded(s: &str) -> (String, Option<String>) {
    let n = s.chars().count();
    if n <= FIELD_CHARS {
        return (s.to_owned(), None);
    }
    let cut: String = s.chars().take(FIELD_CHARS).collect();
    (cut, Some(format!("… {} more chars", n - FIELD_CHARS)))
}

/// What the card draws elsewhere, so the input names it instead of repeating it: an edit's
/// old and new text and the paths of its diffs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shown<'a> {
    /// Texts drawn as a diff.
    pub texts: &'a [&'a str],
    /// Paths whose diff is drawn.
    pub paths: &'a [&'a str],
}

/// The rows of `input`. String values drawn elsewhere ([`Shown`]) are named, not repeated; a
/// `changes` map of paths (Codex's edits: `{path: {type, unified_diff, move_path}}`) reads as
/// one row per file, with its diff unless the card draws it already.
pub fn input_lines(input: &Value, shown: Shown<'_>) -> Vec<InputLine> {
    let shown_elsewhere = shown.texts;
    let mut out = Vec::new();
    let Value::Object(map) = input else {
        if !input.is_null() {
            push_field(&mut out, "input", input, shown_elsewhere);
        }
        return out;
    };
    let command_key = COMMAND_KEYS
        .iter()
        .find(|k| map.get(**k).and_then(command_text).is_some());
    if let Some(k) = command_key {
        let text = map.get(*k).and_then(command_text).unwrap_or_default();
        let (text, more) = bounded(&text);
        for (i, line) in text.split('\n').enumerate() {
            out.push(InputLine::Command {
                first: i == 0,
                text: visible(line),
            });
        }
        if let Some(more) = more {
            out.push(InputLine::Note(more));
        }
    }
    let rest: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| Some(&k.as_str()) != command_key)
        .collect();
    for (k, v) in rest.iter().take(FIELDS_SHOWN) {
        if k.as_str() == "changes"
            && let Some(changes) = file_changes(v)
        {
            push_changes(&mut out, changes, shown.paths);
            continue;
        }
        push_field(&mut out, k, v, shown_elsewhere);
    }
    if rest.len() > FIELDS_SHOWN {
        out.push(InputLine::Note(format!(
            "… and {} more fields",
            rest.len() - FIELDS_SHOWN
        )));
    }
    out
}

/// A map of path → change object (each with a string `type`), if `v` is one.
fn file_changes(v: &Value) -> Option<&serde_json::Map<String, Value>> {
    let map = v.as_object()?;
    let all = map
        .values()
        .all(|c| c.get("type").is_some_and(|t| t.is_string()));
    (all && !map.is_empty()).then_some(map)
}

fn push_changes(
    out: &mut Vec<InputLine>,
    changes: &serde_json::Map<String, Value>,
    shown_paths: &[&str],
) {
    for (path, change) in changes.iter().take(FIELDS_SHOWN) {
        let kind = change.get("type").and_then(Value::as_str).unwrap_or("");
        let moved = change
            .get("move_path")
            .and_then(Value::as_str)
            .map(|to| format!(" → {}", visible(to)))
            .unwrap_or_default();
        let drawn = shown_paths.contains(&path.as_str());
        out.push(InputLine::Field {
            key: visible(kind),
            value: format!(
                "{}{moved}{}",
                visible(path),
                if drawn { " (diff below)" } else { "" }
            ),
        });
        if !drawn && let Some(diff) = change.get("unified_diff").and_then(Value::as_str) {
            let (diff, more) = bounded(diff);
            out.extend(diff.lines().map(|l| InputLine::More(visible(l))));
            if let Some(more) = more {
                out.push(InputLine::Note(more));
            }
        }
    }
}

fn push_field(out: &mut Vec<InputLine>, key: &str, v: &Value, shown_elsewhere: &[&str]) {
    let key = visible(key);
    let text = match v {
        Value::String(s) if !s.is_empty() && shown_elsewhere.contains(&s.as_str()) => {
            out.push(InputLine::Field {
                key,
                value: "(shown in the diff below)".into(),
            });
            return;
        }
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    let (text, more) = bounded(&text);
    let mut lines = text.split('\n');
    if text.contains('\n') {
        out.push(InputLine::Field {
            key,
            value: String::new(),
        });
        out.extend(lines.map(|l| InputLine::More(visible(l))));
    } else {
        out.push(InputLine::Field {
            key,
            value: visible(lines.next().unwrap_or("")),
        });
    }
    if let Some(more) = more {
        out.push(InputLine::Note(more));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codex_changes_read_as_files_with_their_diffs() {
        let input = json!({
            "call_id": "call_1",
            "changes": {
                "/p/a.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-alpha\n+omega\n", "move_path": null},
                "/p/b.txt": {"type": "add", "content": "x"}
            }
        });
        let rows = input_lines(
            &input,
            Shown {
                texts: &[],
                paths: &["/p/b.txt"],
            },
        );
        assert_eq!(
            rows,
            [
                InputLine::Field {
                    key: "call_id".into(),
                    value: "call_1".into()
                },
                InputLine::Field {
                    key: "update".into(),
                    value: "/p/a.txt".into()
                },
                InputLine::More("@@ -1 +1 @@".into()),
                InputLine::More("-alpha".into()),
                InputLine::More("+omega".into()),
                InputLine::Field {
                    key: "add".into(),
                    value: "/p/b.txt (diff below)".into()
                },
            ]
        );
    }

    #[test]
    fn arrays_are_shell_quoted_and_every_field_is_kept() {
        let rows = input_lines(
            &json!({
                "command": ["bash", "-lc", "echo 'hi' > /tmp/x"],
                "cwd": "/work/p",
                "dangerouslyDisableSandbox": true,
                "env": {"A": "1"},
            }),
            Shown::default(),
        );
        assert_eq!(
            rows[0],
            InputLine::Command {
                first: true,
                text: r"bash -lc 'echo '\''hi'\'' > /tmp/x'".into()
            }
        );
        let fields: Vec<String> = rows[1..]
            .iter()
            .map(|r| match r {
                InputLine::Field { key, value } => format!("{key}: {value}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            fields,
            [
                "cwd: /work/p",
                "dangerouslyDisableSandbox: true",
                r#"env: {"A":"1"}"#
            ]
        );
    }

    #[test]
    fn controls_are_visible_and_values_bounded() {
        assert_eq!(
            visible("a\x1b[2J\rb\u{202e}c\u{9b}"),
            "a^[[2J^Mb<U+202E>c<U+009B>"
        );
        let long = "x".repeat(FIELD_CHARS + 5);
        let rows = input_lines(&json!({"cmd": "ls", "note": long}), Shown::default());
        assert_eq!(rows.last(), Some(&InputLine::Note("… 5 more chars".into())));
        assert!(matches!(&rows[0], InputLine::Command { text, .. } if text == "ls"));
    }
}
