//! What each line and each run of transcript text is, without saying how it looks.
//!
//! The transcript, the turn view, the Markdown renderer and the code highlighter produce text
//! tagged with a [`Kind`] (a card's title, a failed status, a diff's added line, a keyword,
//! command output in the colours the command chose, …). No terminal type is kept in the
//! state: `render::theme` is the one place that gives each kind (and each [`LineStyle`]) its
//! colours and attributes.

use crate::ansi::Sgr;

/// How a line is drawn: what a whole line is, as [`Kind`] is what a run in it is.
///
/// It lives here, not in the transcript that keeps the lines, because the turn view makes
/// rows of it too and the transcript builds on the turn view (docs/architecture.md, "Imports
/// inside a crate").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    /// The person's message header.
    UserHeader,
    /// The agent's message header.
    AgentHeader,
    /// Text the person wrote.
    UserText,
    /// An attachment line.
    File,
    /// Command output on stdout.
    Stdout,
    /// Command output on stderr.
    Stderr,
    /// A zero exit status.
    ExitOk,
    /// A failed exit (non-zero or a signal).
    ExitFailed,
    /// A bracketed note such as `[rejected: nothing ran]`.
    Marker,
    /// An empty separator line.
    Blank,
    /// A row of an agent's turn part, drawn entirely by its style runs.
    Agent,
    /// Like [`LineStyle::Agent`], and its first cell is the spinner of a running tool call.
    Running,
    /// The "show all" row of a folded long content: a click shows everything.
    ShowAll,
    /// The end of a turn: its duration and time.
    TurnEnd,
}

/// What a run of text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Kind {
    /// Ordinary text, drawn in the line's own style.
    #[default]
    Plain,
    /// Secondary text: gutters, rules, locations, link targets, a cancelled state, hints.
    Secondary,
    /// The agent's thought.
    Thought,
    /// A name that stands out: a card's title, the plan's heading, the command the agent
    /// runs, a table's header row.
    Title,
    /// The mark in front of the focused part's header row.
    FocusMark,
    /// A tool call's kind in brackets (`[run]`).
    ToolKind,
    /// A tool call that is pending or running.
    ToolBusy,
    /// A tool call that completed.
    ToolDone,
    /// Something that failed or needs the person: a failed call, an error or auth notice.
    Failed,
    /// The label of an informational notice (mode, note, usage).
    NoticeInfo,
    /// The label of a stop notice.
    NoticeStop,
    /// A plan entry's mark once it is done.
    PlanDone,
    /// A plan entry's mark and text while it is in progress.
    PlanActive,
    /// A done plan entry's text.
    PlanDoneText,
    /// The "show all" row of folded content.
    ShowAll,
    /// A permission request still waiting for an answer (its icon and state).
    PermissionWaiting,
    /// The "permission:" label of a permission row.
    PermissionLabel,
    /// A permission that was allowed (its icon and state).
    PermissionAllowed,
    /// A permission that was rejected (its icon and state).
    PermissionRejected,
    /// A diff's file header (`--- a`, `+++ b`).
    DiffFile,
    /// A diff's hunk header (`@@ … @@`).
    DiffHunk,
    /// A line a diff adds.
    DiffAdded,
    /// A line a diff removes.
    DiffRemoved,
    /// A keyword in a code block.
    CodeKeyword,
    /// A string literal in a code block.
    CodeString,
    /// A comment in a code block.
    CodeComment,
    /// A number in a code block.
    CodeNumber,
    /// A Markdown list item's marker.
    ListMarker,
    /// A ticked task list marker (`[x]`).
    TaskDone,
    /// Inline Markdown text with what encloses it.
    Markdown(MdText),
    /// Command output in the SGR style the command chose.
    Output(Sgr),
}

/// Where a piece of Markdown inline text sits: the blocks and spans around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MdText {
    /// Inside a block quote.
    pub quote: bool,
    /// Inside a heading of this level (1, 2, or 3 for any deeper level); 0 outside.
    pub heading: u8,
    /// Inside emphasis.
    pub emphasis: bool,
    /// Inside strong emphasis.
    pub strong: bool,
    /// Inside strikethrough.
    pub strike: bool,
    /// Inside a link.
    pub link: bool,
    /// The innermost of the open links and images (its colour wins).
    pub tint: Option<MdTint>,
    /// What the text itself is.
    pub inline: MdInline,
}

/// A link or an image, whichever encloses the text most closely.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MdTint {
    /// A link's text.
    Link,
    /// An image's alt text.
    Image,
}

/// What a piece of inline Markdown is itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MdInline {
    /// Text.
    #[default]
    Text,
    /// Inline code or math.
    Code,
    /// Text shown as it is but set back: raw HTML, a footnote reference.
    Aside,
}

/// A run's kind and whether it is on the header row of the focused part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Tone {
    /// What the text is.
    pub kind: Kind,
    /// On the focused part's header row (drawn on the focus background).
    pub focused: bool,
}

impl From<Kind> for Tone {
    fn from(kind: Kind) -> Tone {
        Tone {
            kind,
            focused: false,
        }
    }
}

impl Kind {
    /// Command output in `sgr`: plain when the command set no style.
    pub fn output(sgr: Sgr) -> Kind {
        if sgr == Sgr::default() {
            Kind::Plain
        } else {
            Kind::Output(sgr)
        }
    }
}
