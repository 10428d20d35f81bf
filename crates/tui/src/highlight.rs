//! A small keyword highlighter for code blocks in agent text.
//!
//! Why not a grammar-based crate: `syntect` (the usual choice, Sublime grammars; features
//! `default-syntaxes`, `default-themes`, `regex-fancy`) took 361 s for a clean debug build of
//! a one-line program on this project's shared 2-core machine (load ~15), against 60 s for
//! `pulldown-cmark` alone, and its binary was 17 MB larger (grammar and theme dumps), for code
//! blocks that only need to be readable. This lexer knows comments,
//! strings, numbers and keywords of the languages agents write most, line by line, with block
//! comments carried across lines; anything else is drawn plain. It never fails and costs
//! O(length) per line.

use crate::kind::Kind;

const KEYWORD: Kind = Kind::CodeKeyword;
const STRING: Kind = Kind::CodeString;
const COMMENT: Kind = Kind::CodeComment;
const NUMBER: Kind = Kind::CodeNumber;
const PLAIN: Kind = Kind::Plain;

/// What one language looks like to the lexer.
struct Lang {
    /// Its keywords, separated by spaces.
    keywords: &'static str,
    line_comments: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    quotes: &'static [char],
}

const RUST: Lang = Lang {
    keywords: "as async await break const continue crate dyn else enum extern false fn for if impl \
         in let loop match mod move mut pub ref return self Self static struct super trait \
         true type unsafe use where while Some None Ok Err",
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"'],
};

const PYTHON: Lang = Lang {
    keywords: "and as assert async await break class continue def del elif else except False \
         finally for from global if import in is lambda None nonlocal not or pass raise \
         return True try while with yield",
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
};

const JS: Lang = Lang {
    keywords: "async await break case catch class const continue default delete do else export \
         extends false finally for from function if import in instanceof interface let new \
         null of return static super switch this throw true try type typeof undefined var \
         void while yield",
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\'', '`'],
};

const SHELL: Lang = Lang {
    keywords: "if then else elif fi for while until do done case esac in function return export \
         local set unset echo cd exit source",
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
};

const GO: Lang = Lang {
    keywords: "break case chan const continue default defer else false for func go goto if import \
         interface map nil package range return select struct switch true type var",
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '`', '\''],
};

const C: Lang = Lang {
    keywords: "auto bool break case char class const continue default delete do double else enum \
         extern false float for if include define int long namespace new nullptr private \
         public return short signed sizeof static struct switch template true typedef union \
         unsigned using void while",
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\''],
};

const DATA: Lang = Lang {
    keywords: "true false null yes no",
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
};

fn lang(name: &str) -> Option<&'static Lang> {
    // Info strings may carry more after the name (```rust,ignore).
    let name = name
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    Some(match name.as_str() {
        "rust" | "rs" => &RUST,
        "python" | "py" | "python3" => &PYTHON,
        "javascript" | "js" | "jsx" | "typescript" | "ts" | "tsx" | "mjs" => &JS,
        "sh" | "bash" | "shell" | "zsh" | "console" | "shellsession" => &SHELL,
        "go" | "golang" => &GO,
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "java" | "kotlin" | "csharp" | "cs" => &C,
        "json" | "toml" | "yaml" | "yml" | "ini" => &DATA,
        _ => return None,
    })
}

/// Highlights `code` written in `lang` (a fenced block's info string): one list of
/// (text, kind) pieces per line. Unknown languages come back plain.
pub fn highlight(lang_name: &str, code: &str) -> Vec<Vec<(String, Kind)>> {
    let lines = code.strip_suffix('\n').unwrap_or(code).split('\n');
    let is_diff = matches!(
        lang_name.split(',').next().unwrap_or("").trim(),
        "diff" | "patch"
    );
    if is_diff {
        return lines.map(|l| vec![(l.to_owned(), diff_style(l))]).collect();
    }
    let Some(lang) = lang(lang_name) else {
        return lines.map(|l| vec![(l.to_owned(), PLAIN)]).collect();
    };
    let mut in_block = false;
    lines.map(|l| line(lang, l, &mut in_block)).collect()
}

fn diff_style(line: &str) -> Kind {
    if line.starts_with("+++") || line.starts_with("---") {
        Kind::DiffFile
    } else if line.starts_with('+') {
        Kind::DiffAdded
    } else if line.starts_with('-') {
        Kind::DiffRemoved
    } else if line.starts_with("@@") {
        Kind::DiffHunk
    } else {
        PLAIN
    }
}

fn push(out: &mut Vec<(String, Kind)>, text: &str, style: Kind) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some((t, s)) if *s == style => t.push_str(text),
        _ => out.push((text.to_owned(), style)),
    }
}

/// Lexes one line; `in_block` carries an open block comment to the next line.
fn line(lang: &Lang, text: &str, in_block: &mut bool) -> Vec<(String, Kind)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if *in_block {
            let (_, close) = lang.block_comment.expect("only set for languages with one");
            match rest.find(close) {
                Some(at) => {
                    push(&mut out, &rest[..at + close.len()], COMMENT);
                    i += at + close.len();
                    *in_block = false;
                }
                None => {
                    push(&mut out, rest, COMMENT);
                    break;
                }
            }
            continue;
        }
        if lang.line_comments.iter().any(|c| rest.starts_with(c)) {
            push(&mut out, rest, COMMENT);
            break;
        }
        if let Some((open, _)) = lang.block_comment
            && rest.starts_with(open)
        {
            push(&mut out, open, COMMENT);
            i += open.len();
            *in_block = true;
            continue;
        }
        let c = rest.chars().next().expect("rest is not empty");
        if lang.quotes.contains(&c) {
            let end = string_end(rest, c);
            push(&mut out, &rest[..end], STRING);
            i += end;
            continue;
        }
        if c.is_ascii_digit() {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(rest.len());
            push(&mut out, &rest[..end], NUMBER);
            i += end;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let end = rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            let style = if lang.keywords.split(' ').any(|k| k == word) {
                KEYWORD
            } else {
                PLAIN
            };
            push(&mut out, word, style);
            i += end;
            continue;
        }
        push(&mut out, &rest[..c.len_utf8()], PLAIN);
        i += c.len_utf8();
    }
    out
}

/// Byte length of a string literal starting at `s` (quote `q`), up to the line's end.
fn string_end(s: &str, q: char) -> usize {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            return i + c.len_utf8();
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_tokens() {
        let l = highlight("rust", "let x = \"a\\\"b\"; // hi\n");
        assert_eq!(
            l[0],
            vec![
                ("let".into(), KEYWORD),
                (" x = ".into(), PLAIN),
                ("\"a\\\"b\"".into(), STRING),
                ("; ".into(), PLAIN),
                ("// hi".into(), COMMENT),
            ]
        );
    }

    /// The keyword tables are strings continued over lines: the words on either side of a
    /// break are still words of their own.
    #[test]
    fn keywords_on_both_sides_of_a_table_line_break_count() {
        let words = [
            ("rust", "impl"),
            ("rust", "in"),
            ("js", "export"),
            ("js", "extends"),
            ("go", "import"),
            ("go", "interface"),
            ("c", "enum"),
            ("c", "extern"),
        ];
        for (lang, word) in words {
            assert_eq!(
                highlight(lang, word)[0],
                vec![(word.into(), KEYWORD)],
                "{lang} {word}"
            );
        }
        assert_eq!(highlight("rust", "im")[0], vec![("im".into(), PLAIN)]);
    }

    #[test]
    fn block_comments_span_lines_and_unknown_is_plain() {
        let l = highlight("c", "a /* b\nc */ 42");
        assert_eq!(l[0][1], ("/* b".into(), COMMENT));
        assert_eq!(l[1][0], ("c */".into(), COMMENT));
        assert_eq!(l[1][2], ("42".into(), NUMBER));
        assert_eq!(
            highlight("brainfuck", "+-"),
            vec![vec![("+-".into(), PLAIN)]]
        );
        assert_eq!(
            crate::render::theme::kind(highlight("diff", "+a\n-b")[1][0].1),
            ratatui::style::Style::new().fg(ratatui::style::Color::Red)
        );
    }
}
