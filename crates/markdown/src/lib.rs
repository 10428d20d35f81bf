//! Agent Markdown as a small, closed tree of plain data, for the Control UI (`POST /markdown`
//! of a backend and of a hub: docs/backend.md §3, docs/hub.md §4). Shared so that both serve
//! the same tree under the same rules.
//!
//! The page never builds HTML from agent text. This parses with `pulldown-cmark` (the TUI's
//! parser too, so both UIs read Markdown alike) and answers a small, closed set of node kinds;
//! the page makes one element per node with `createElement` and puts every string in with
//! `textContent` (`web/markdown.js`). Raw HTML in the text comes back as text. A link keeps its
//! target only when it is `http`, `https` or `mailto`; an image is never an image, only its
//! alt text and (safe) target, so nothing is loaded from an address an agent wrote.
//!
//! Bounded: at most [`MAX_TEXT_BYTES`] of text; containers nested deeper than [`MAX_DEPTH`]
//! are flattened into their parent, so the answer's depth (and the recursion that serialises
//! it and builds it in the page) stays small whatever the input; past [`MAX_NODES`] nodes the
//! rest is text. [`parse`] is CPU work: a server runs it off its async workers.
//!
//! ```
//! let blocks = ax_markdown::parse("**hi** <b>x</b> [no](javascript:alert(1))");
//! let json = serde_json::to_string(&blocks).unwrap();
//! assert!(json.contains(r#""t":"strong""#) && json.contains("<b>x</b>"));
//! assert!(!json.contains("javascript"));
//! ```

use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag};
use serde::{Deserialize, Serialize};

/// The largest text one request may ask to render (an agent's answer is rarely 10 KiB).
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// Containers (lists, quotes, emphasis, …) nested deeper than this are flattened.
pub const MAX_DEPTH: usize = 32;
/// Past this many nodes the rest of the text stays plain (its markup as text), so the answer
/// stays within a small multiple of the text (`*a*` repeated would otherwise be 16 times it).
pub const MAX_NODES: usize = 20_000;

/// `POST /markdown` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkdownRequest {
    /// The agent's Markdown.
    pub text: String,
}

/// `POST /markdown` answer: the document's blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MarkdownTree {
    /// The top-level nodes, in order.
    pub blocks: Vec<Node>,
}

/// Alignment of a table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    /// As the page's default.
    None,
    /// `:--`.
    Left,
    /// `:-:`.
    Center,
    /// `--:`.
    Right,
}

/// One node of the tree. Children are `c`; every string is text to show, never markup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case", deny_unknown_fields)]
pub enum Node {
    /// Plain text (raw HTML in the agent's text arrives as this too).
    Text {
        /// The text.
        text: String,
    },
    /// Inline code.
    Code {
        /// The code, as text.
        text: String,
    },
    /// A hard line break.
    Br,
    /// Emphasis.
    Em {
        /// Its content.
        c: Vec<Node>,
    },
    /// Strong emphasis.
    Strong {
        /// Its content.
        c: Vec<Node>,
    },
    /// Strikethrough.
    Del {
        /// Its content.
        c: Vec<Node>,
    },
    /// A link; `href` is absent when the target is not `http`, `https` or `mailto` (the text
    /// is then shown without a link).
    Link {
        /// The target, when safe ([`safe_href`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        href: Option<String>,
        /// Its title, if any.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        title: String,
        /// Its text.
        c: Vec<Node>,
    },
    /// An image, never loaded: its alt text, and its target when that is a safe link.
    Image {
        /// The target, when safe ([`safe_href`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        href: Option<String>,
        /// Its alt text.
        alt: String,
    },
    /// A paragraph.
    P {
        /// Its content.
        c: Vec<Node>,
    },
    /// A heading.
    Heading {
        /// 1 to 6.
        level: u8,
        /// Its content.
        c: Vec<Node>,
    },
    /// A block quote.
    Quote {
        /// Its blocks.
        c: Vec<Node>,
    },
    /// A code block; `lang` is the fence's first word, if any.
    CodeBlock {
        /// The fence's first word (at most 32 characters).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lang: Option<String>,
        /// The code, as text.
        text: String,
    },
    /// A block of raw HTML, shown as text.
    HtmlBlock {
        /// The HTML, as text.
        text: String,
    },
    /// A list; `start` is present for a numbered one.
    List {
        /// The first number of a numbered list.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
        /// Its items.
        c: Vec<Node>,
    },
    /// A list item; `checked` is present for a task-list item.
    Item {
        /// A task-list item's state.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checked: Option<bool>,
        /// Its content.
        c: Vec<Node>,
    },
    /// A thematic break.
    Rule,
    /// A table.
    Table {
        /// Each column's alignment.
        align: Vec<Align>,
        /// Its rows.
        c: Vec<Node>,
    },
    /// A table row (`head` for the header row); its children are cells.
    Row {
        /// Whether it is the header row.
        head: bool,
        /// Its cells.
        c: Vec<Node>,
    },
    /// A table cell.
    Cell {
        /// Its content.
        c: Vec<Node>,
    },
}

/// A `POST /markdown` body as a JSON object `{"text"}` and nothing else (serde alone would also
/// take `["…"]`); the error is what a 400 answer says. The text's size is the caller's to
/// check against [`MAX_TEXT_BYTES`] (a 413).
pub fn parse_request(value: serde_json::Value) -> Result<MarkdownRequest, String> {
    if !value.is_object() {
        return Err(r#"expected a JSON object {"text": "…"}"#.to_owned());
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Whether a link target may be followed from the page: `http:`, `https:` or `mailto:`
/// (any case), nothing else (no `javascript:`, `data:`, relative or scheme-less targets).
pub fn safe_href(url: &str) -> Option<String> {
    let url = url.trim();
    let (scheme, _) = url.split_once(':')?;
    let ok = ["http", "https", "mailto"]
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s));
    // A control character or space anywhere could be read differently by a browser.
    (ok && !url.chars().any(|c| c.is_control() || c == ' ')).then(|| url.to_owned())
}

/// What an open container becomes when it ends.
enum Open {
    Paragraph,
    Heading(u8),
    Quote,
    CodeBlock(Option<String>),
    HtmlBlock,
    List(Option<u64>),
    Item(Option<bool>),
    Table(Vec<Align>),
    Row(bool),
    Cell,
    Em,
    Strong,
    Del,
    Link {
        href: Option<String>,
        title: String,
    },
    Image {
        href: Option<String>,
    },
    /// Too deep, or a kind we do not show as such: its children join the parent.
    Flat,
}

struct Frame {
    open: Open,
    c: Vec<Node>,
    /// The text of a code or HTML block.
    text: String,
}

/// Parses `markdown` (tables, strikethrough and task lists on, like the TUI) into blocks.
pub fn parse(markdown: &str) -> Vec<Node> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut b = Builder {
        stack: vec![Frame {
            open: Open::Flat,
            c: Vec::new(),
            text: String::new(),
        }],
        nodes: 0,
    };
    for event in Parser::new_ext(markdown, options) {
        b.event(event);
    }
    while b.stack.len() > 1 {
        b.close();
    }
    b.stack.pop().map(|f| f.c).unwrap_or_default()
}

struct Builder {
    stack: Vec<Frame>,
    /// Nodes made so far (see [`MAX_NODES`]).
    nodes: usize,
}

impl Builder {
    fn top(&mut self) -> &mut Frame {
        // The root frame is never popped before the end.
        let last = self.stack.len() - 1;
        &mut self.stack[last]
    }

    fn text(&mut self, s: &str) {
        let top = self.top();
        if matches!(top.open, Open::CodeBlock(_) | Open::HtmlBlock) {
            top.text.push_str(s);
            return;
        }
        match top.c.last_mut() {
            Some(Node::Text { text }) => text.push_str(s),
            _ => top.c.push(Node::Text { text: s.to_owned() }),
        }
    }

    fn full(&self) -> bool {
        self.nodes >= MAX_NODES
    }

    fn push(&mut self, node: Node) {
        if self.full() {
            match node {
                Node::Code { text } => self.text(&format!("`{text}`")),
                Node::Br => self.text("\n"),
                Node::Rule => self.text("\n---\n"),
                other => {
                    let text = plain_text(std::slice::from_ref(&other));
                    self.text(&text);
                }
            }
            return;
        }
        self.nodes += 1;
        self.top().c.push(node);
    }

    fn open(&mut self, open: Open) {
        // Code and HTML blocks hold only text, so they may always open.
        let deep = (self.stack.len() > MAX_DEPTH || self.full())
            && !matches!(open, Open::CodeBlock(_) | Open::HtmlBlock);
        self.stack.push(Frame {
            open: if deep { Open::Flat } else { open },
            c: Vec::new(),
            text: String::new(),
        });
    }

    fn close(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        let c = frame.c;
        let node = match frame.open {
            Open::Paragraph => Node::P { c },
            Open::Heading(level) => Node::Heading { level, c },
            Open::Quote => Node::Quote { c },
            Open::CodeBlock(lang) => Node::CodeBlock {
                lang,
                text: frame.text,
            },
            Open::HtmlBlock => Node::HtmlBlock { text: frame.text },
            Open::List(start) => Node::List { start, c },
            Open::Item(checked) => Node::Item { checked, c },
            Open::Table(align) => Node::Table { align, c },
            Open::Row(head) => Node::Row { head, c },
            Open::Cell => Node::Cell { c },
            Open::Em => Node::Em { c },
            Open::Strong => Node::Strong { c },
            Open::Del => Node::Del { c },
            Open::Link { href, title } => Node::Link { href, title, c },
            Open::Image { href } => Node::Image {
                href,
                alt: plain_text(&c),
            },
            Open::Flat => {
                for node in c {
                    match node {
                        Node::Text { text } => self.text(&text),
                        // Already counted when it was made.
                        other => self.top().c.push(other),
                    }
                }
                return;
            }
        };
        self.push(node);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.open(match tag {
                Tag::Paragraph => Open::Paragraph,
                Tag::Heading { level, .. } => Open::Heading(level as u8),
                Tag::BlockQuote(_) => Open::Quote,
                Tag::CodeBlock(CodeBlockKind::Fenced(info)) => Open::CodeBlock(
                    info.split_whitespace()
                        .next()
                        .map(|l| l.chars().take(32).collect()),
                ),
                Tag::CodeBlock(CodeBlockKind::Indented) => Open::CodeBlock(None),
                Tag::HtmlBlock => Open::HtmlBlock,
                Tag::List(start) => Open::List(start),
                Tag::Item => Open::Item(None),
                Tag::Table(align) => Open::Table(
                    align
                        .iter()
                        .map(|a| match a {
                            Alignment::None => Align::None,
                            Alignment::Left => Align::Left,
                            Alignment::Center => Align::Center,
                            Alignment::Right => Align::Right,
                        })
                        .collect(),
                ),
                Tag::TableHead => Open::Row(true),
                Tag::TableRow => Open::Row(false),
                Tag::TableCell => Open::Cell,
                Tag::Emphasis => Open::Em,
                Tag::Strong => Open::Strong,
                Tag::Strikethrough => Open::Del,
                Tag::Link {
                    dest_url, title, ..
                } => Open::Link {
                    href: safe_href(&dest_url),
                    title: title.into_string(),
                },
                Tag::Image { dest_url, .. } => Open::Image {
                    href: safe_href(&dest_url),
                },
                _ => Open::Flat,
            }),
            Event::End(_) => {
                // The root frame stays; an end without its start (never from the parser)
                // would otherwise close it.
                if self.stack.len() > 1 {
                    self.close();
                }
            }
            Event::Text(t) => self.text(&t),
            Event::Code(t) => self.push(Node::Code {
                text: t.into_string(),
            }),
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
            Event::FootnoteReference(t) => self.text(&format!("[^{t}]")),
            Event::SoftBreak => self.text("\n"),
            Event::HardBreak => self.push(Node::Br),
            Event::Rule => self.push(Node::Rule),
            Event::TaskListMarker(checked) => {
                if let Some(item) = self
                    .stack
                    .iter_mut()
                    .rev()
                    .find(|f| matches!(f.open, Open::Item(_)))
                {
                    item.open = Open::Item(Some(checked));
                }
            }
        }
    }
}

impl Node {
    /// The node's children, for the kinds that have them.
    fn children(&self) -> Option<&[Node]> {
        match self {
            Node::Em { c }
            | Node::Strong { c }
            | Node::Del { c }
            | Node::Link { c, .. }
            | Node::P { c }
            | Node::Heading { c, .. }
            | Node::Quote { c }
            | Node::List { c, .. }
            | Node::Item { c, .. }
            | Node::Table { c, .. }
            | Node::Row { c, .. }
            | Node::Cell { c } => Some(c),
            _ => None,
        }
    }
}

/// The text of `nodes` without their markup (an image's alt text).
fn plain_text(nodes: &[Node]) -> String {
    let mut out = String::new();
    fn walk(nodes: &[Node], out: &mut String) {
        for n in nodes {
            if let Some(c) = n.children() {
                walk(c, out);
                continue;
            }
            match n {
                Node::Text { text } | Node::Code { text } => out.push_str(text),
                Node::Image { alt, .. } => out.push_str(alt),
                Node::Br => out.push(' '),
                Node::CodeBlock { text, .. } | Node::HtmlBlock { text } => out.push_str(text),
                _ => {}
            }
        }
    }
    walk(nodes, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(md: &str) -> serde_json::Value {
        serde_json::to_value(MarkdownTree { blocks: parse(md) }).unwrap()
    }

    fn depth(nodes: &[Node]) -> usize {
        nodes
            .iter()
            .map(|n| n.children().map_or(1, |c| 1 + depth(c)))
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn common_markdown_becomes_a_small_closed_tree() {
        let v = tree(
            "# Title\n\nSome *em* and **strong** and ~~gone~~ and `code`.  \nnext\n\n\
             - a\n- [x] done\n\n3. three\n\n> quoted\n\n```rust extra\nfn main() {}\n```\n\n\
             ---\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n",
        );
        let blocks = v["blocks"].as_array().unwrap();
        assert_eq!(
            blocks[0],
            json!({"t": "heading", "level": 1, "c": [{"t": "text", "text": "Title"}]})
        );
        let p = &blocks[1]["c"];
        assert_eq!(p[1], json!({"t": "em", "c": [{"t": "text", "text": "em"}]}));
        assert_eq!(p[3]["t"], "strong");
        assert_eq!(p[5]["t"], "del");
        assert_eq!(p[7], json!({"t": "code", "text": "code"}));
        assert_eq!(p[9], json!({"t": "br"}));
        assert_eq!(blocks[2]["t"], "list");
        assert!(
            blocks[2].get("start").is_none(),
            "a bullet list has no start"
        );
        assert_eq!(blocks[2]["c"][1]["checked"], true);
        assert!(blocks[2]["c"][0].get("checked").is_none());
        assert_eq!(blocks[3]["start"], 3);
        assert_eq!(blocks[4]["t"], "quote");
        assert_eq!(
            blocks[5],
            json!({"t": "code_block", "lang": "rust", "text": "fn main() {}\n"})
        );
        assert_eq!(blocks[6], json!({"t": "rule"}));
        assert_eq!(blocks[7]["t"], "table");
        assert_eq!(blocks[7]["align"], json!(["left", "right"]));
        assert_eq!(blocks[7]["c"][0]["head"], true);
        assert_eq!(blocks[7]["c"][1]["c"][1]["c"][0]["text"], "2");
        // The answer reads back under the same strict shape.
        let back: MarkdownTree = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(back).unwrap(), v);
    }

    #[test]
    fn html_stays_text_and_only_safe_links_keep_their_target() {
        let v = tree(
            "<script>alert(1)</script>\n\nhi <img src=x onerror=alert(2)> \
             [x](javascript:alert(3)) [y](JaVaScRiPt:alert(4)) [z](data:text/html,hi) \
             [rel](/session) [ok](https://example.com/a?b) [m](mailto:a@b.c) \
             ![pic](http://example.com/p.png) ![evil](javascript:alert(5))",
        );
        let s = v.to_string();
        assert_eq!(
            v["blocks"][0],
            json!({"t": "html_block", "text": "<script>alert(1)</script>\n"})
        );
        let p = v["blocks"][1]["c"].as_array().unwrap();
        assert!(p.iter().any(|n| {
            n["t"] == "text"
                && n["text"]
                    .as_str()
                    .unwrap()
                    .contains("<img src=x onerror=alert(2)>")
        }));
        let links: Vec<&serde_json::Value> = p.iter().filter(|n| n["t"] == "link").collect();
        assert_eq!(links.len(), 6);
        for l in &links[..4] {
            assert!(l.get("href").is_none(), "{l}");
        }
        assert_eq!(links[4]["href"], "https://example.com/a?b");
        assert_eq!(links[5]["href"], "mailto:a@b.c");
        let images: Vec<&serde_json::Value> = p.iter().filter(|n| n["t"] == "image").collect();
        assert_eq!(
            images[0],
            &json!({"t": "image", "href": "http://example.com/p.png", "alt": "pic"})
        );
        assert_eq!(images[1], &json!({"t": "image", "alt": "evil"}));
        assert!(!s.contains("\"href\":\"javascript"), "{s}");
        assert!(!s.contains("\"href\":\"data"), "{s}");
        for bad in [
            "java\tscript:x",
            " javascript:x",
            "http://a b",
            "//evil",
            "x",
            "",
        ] {
            assert_eq!(safe_href(bad), None, "{bad:?}");
        }
        assert_eq!(safe_href(" HTTP://x "), Some("HTTP://x".into()));
    }

    #[test]
    fn deep_nesting_is_flattened_and_text_kept() {
        let md = format!("{}deep", "> ".repeat(5000));
        let blocks = parse(&md);
        assert!(depth(&blocks) <= MAX_DEPTH + 1, "depth {}", depth(&blocks));
        assert_eq!(plain_text(&blocks), "deep");
        let md = format!("{}x{}", "*a ".repeat(3000), " a*".repeat(3000));
        let blocks = parse(&md);
        assert!(depth(&blocks) <= MAX_DEPTH + 1);
        let md = format!("{}item", "- ".repeat(3000));
        assert!(depth(&parse(&md)) <= MAX_DEPTH + 1);
    }

    #[test]
    fn the_answer_stays_a_small_multiple_of_the_text() {
        for md in [
            "*a".repeat(MAX_TEXT_BYTES / 2),
            "`a``".repeat(MAX_TEXT_BYTES / 4),
            "a  \n".repeat(MAX_TEXT_BYTES / 4),
            "---\n\n".repeat(MAX_TEXT_BYTES / 5),
        ] {
            let blocks = parse(&md);
            let json = serde_json::to_string(&blocks).unwrap();
            assert!(
                json.len() < 6 * md.len(),
                "{} bytes of JSON for {} of text ({:?}…)",
                json.len(),
                md.len(),
                &md[..8]
            );
            // Nothing of the text is lost, markup past the bound included.
            assert_eq!(
                plain_text(&blocks).matches('a').count(),
                md.matches('a').count()
            );
        }
    }
}
