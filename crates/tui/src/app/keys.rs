//! What keys, pastes and clicks do. Every input goes through [`App::handle_input`].

use crate::app::{App, Modal, NoticeKind, Overlay, Route};
use crate::command::{Command, Invocation, palette_entries};
use crate::composer::Kill;
use crate::input::{Input, Key, KeyCode, Mouse, MouseKind};
use crate::layout::chip_spans;

/// The palette filters by name; longer queries match nothing anyway.
const PALETTE_QUERY_MAX: usize = 64;

impl App {
    /// Applies one parsed input event from the person.
    pub fn handle_input(&mut self, input: Input) {
        match input {
            Input::Key(key) => self.on_key(key),
            Input::Paste(text) => self.on_paste(&text),
            Input::Mouse(m) => self.on_mouse(m),
        }
        self.refresh_picker();
    }

    fn on_key(&mut self, key: Key) {
        match self.overlay {
            Some(Overlay::Exit) => return,
            Some(Overlay::Startup) => {
                if key == Key::ctrl('c') {
                    self.begin_exit();
                }
                return;
            }
            None => {}
        }
        if key == Key::ctrl('c') && !self.recall.searching() && self.find.is_none() {
            self.ctrl_c();
            return;
        }
        if let Some(modal) = self.modal.take() {
            self.modal = self.modal_key(modal, key);
            return;
        }
        if self.pending_approval().is_some() {
            self.approval_key(key);
            return;
        }
        if self.recall.searching() {
            self.recall.search_key(key, &mut self.composer);
            return;
        }
        if self.find.is_some() && self.find_key(key) {
            return;
        }
        if key == Key::ctrl('r') {
            self.start_history_search();
            return;
        }
        if key == Key::ctrl('f') {
            self.open_find(None);
            return;
        }
        if key.code == KeyCode::F(2) {
            self.mouse_command(None);
            return;
        }
        if self.completion_key(key) || self.picker_key(key) {
            return;
        }
        // Esc while the composer holds a queued prompt drops that edit first (it would
        // otherwise abort the turn the prompt waits behind).
        if key == Key::plain(KeyCode::Esc) && self.editing_queued().is_some() {
            self.drop_queued_edit();
            return;
        }
        // ↑ on the draft's first line and ↓ on its last (during a walk) belong to the
        // session's prompt history (docs/tui.md §3a).
        if matches!(self.route, Route::Session(_)) && key.mods == crate::input::Modifiers::NONE {
            let (line, _) = self.composer.cursor_line_col();
            let last = self.composer.line_count() - 1;
            if key.code == KeyCode::Up && line == 0 && self.recall.older(&mut self.composer) {
                return;
            }
            if key.code == KeyCode::Down && line == last && self.recall.newer(&mut self.composer) {
                return;
            }
        }
        if key == Key::ctrl('p') {
            self.modal = Some(Modal::Palette {
                query: String::new(),
                selected: 0,
            });
            return;
        }
        if key == Key::ctrl('n') {
            self.new_session();
            return;
        }
        // Readline's kill and yank, as in Claude Code's prompt: ^W ^U ^K keep what they
        // erase, ^Y puts it back.
        if key == Key::ctrl('w') || key == Key::ctrl('u') || key == Key::ctrl('k') {
            self.composer.kill(match key.code {
                KeyCode::Char('w') => Kill::Word,
                KeyCode::Char('u') => Kill::ToLineStart,
                _ => Kill::ToLineEnd,
            });
            return;
        }
        if key == Key::ctrl('y') {
            self.composer.yank();
            return;
        }
        if key == Key::ctrl('l') {
            self.effects.push(crate::app::Effect::Redraw);
            return;
        }
        if key == Key::ctrl('d') {
            // EOF: on an empty prompt it leaves as Ctrl+C does (asking while a session
            // works); in a draft it deletes forward, as readline does.
            if self.composer.has_draft() {
                self.composer.delete();
            } else if self.any_session_working() {
                self.modal = Some(Modal::ConfirmQuit);
            } else {
                self.begin_exit();
            }
            return;
        }
        if self.composer_edit_key(key) {
            return;
        }
        if key == Key::ctrl('j') || (key.code == KeyCode::Enter && (key.mods.alt || key.mods.shift))
        {
            self.composer.insert('\n');
            return;
        }
        if let Some(c) = key.printable() {
            self.composer.insert(c);
            return;
        }
        match (&self.route, key.code) {
            // Turn parts: Tab/Shift+Tab focus one, Enter (empty prompt) opens and closes it.
            (Route::Session(_), KeyCode::Tab) => self.focus_part(true),
            (Route::Session(_), KeyCode::BackTab) => self.focus_part(false),
            (Route::Session(_), KeyCode::Enter)
                if !self.composer.has_draft()
                    && !self.composer.has_attachments()
                    && self.transcript.focus().is_some() =>
            {
                self.transcript.toggle_focused();
            }
            (Route::Session(_), KeyCode::Enter)
                if !self.composer.has_draft()
                    && !self.composer.has_attachments()
                    && self.deferred_approval().is_some() =>
            {
                self.deferred.clear();
            }
            (_, KeyCode::Enter) => self.enter(),
            (_, KeyCode::Backspace) => self.composer.backspace(),
            (Route::Home, KeyCode::Up) => self.move_selection(-1),
            (Route::Home, KeyCode::Down) => self.move_selection(1),
            (Route::Home, KeyCode::PageUp) => self.move_selection(-(self.list_height() as isize)),
            (Route::Home, KeyCode::PageDown) => self.move_selection(self.list_height() as isize),
            (Route::Home, KeyCode::Home) => self.move_selection(isize::MIN / 2),
            (Route::Home, KeyCode::End) => self.move_selection(isize::MAX / 2),
            (Route::Session(_), KeyCode::Esc) => {
                // Esc interrupts a running turn; a second Esc (or an idle session) goes home.
                if self.open_session_busy() && !self.open_aborting() {
                    self.abort_open();
                } else if self.transcript.focus().is_some() {
                    self.transcript.clear_focus();
                } else {
                    self.go_home();
                }
            }
            (Route::Session(_), KeyCode::Up) => self.scroll_by(1),
            (Route::Session(_), KeyCode::Down) => self.scroll_by(-1),
            (Route::Session(_), KeyCode::PageUp) => {
                self.scroll_by(self.transcript_height().max(2) as isize - 1)
            }
            (Route::Session(_), KeyCode::PageDown) => {
                self.scroll_by(-(self.transcript_height().max(2) as isize - 1))
            }
            (Route::Session(_), KeyCode::Home) => self.scroll_by(isize::MAX / 2),
            (Route::Session(_), KeyCode::End) => self.scroll = 0,
            _ => {}
        }
    }

    /// Cursor movement and erasing inside the draft. Home/End and Up/Down only belong to the
    /// composer while it holds text (Up/Down: several lines); otherwise they keep their route
    /// meaning. Returns whether the key was used.
    fn composer_edit_key(&mut self, key: Key) -> bool {
        let c = &mut self.composer;
        let text = c.has_draft();
        let multi = c.line_count() > 1;
        let m = key.mods;
        match key.code {
            KeyCode::Char('a') if m.ctrl && !m.alt => c.move_home(),
            KeyCode::Char('e') if m.ctrl && !m.alt => c.move_end(),
            KeyCode::Char('b') if m.alt && !m.ctrl => c.move_word_left(),
            KeyCode::Char('f') if m.alt && !m.ctrl => c.move_word_right(),
            KeyCode::Left if m.ctrl || m.alt => c.move_word_left(),
            KeyCode::Right if m.ctrl || m.alt => c.move_word_right(),
            KeyCode::Left => c.move_left(),
            KeyCode::Right => c.move_right(),
            KeyCode::Delete => c.delete(),
            KeyCode::Home if text => c.move_home(),
            KeyCode::End if text => c.move_end(),
            KeyCode::Up if multi => c.move_up(),
            KeyCode::Down if multi => c.move_down(),
            _ => return false,
        }
        true
    }

    fn enter(&mut self) {
        if self.route == Route::Home
            && !self.composer.has_draft()
            && !self.composer.has_attachments()
        {
            if let Some(id) = self.selected.clone()
                && self.selected_index().is_some()
            {
                self.open(id);
            }
            return;
        }
        self.submit();
    }

    /// Ctrl+C, in order: never quits past an open approval; closes a modal; clears a draft;
    /// aborts the open session's running turn; asks before quitting while any session works;
    /// otherwise quits.
    fn ctrl_c(&mut self) {
        if self.modal.is_none() && self.pending_approval().is_some() {
            self.notify(
                NoticeKind::Info,
                "an approval is open: answer it (y/a/n) or press Esc to leave it for later",
            );
        } else if self.modal.is_some() {
            self.modal = None;
        } else if self.composer.has_draft() {
            self.composer.clear_draft();
        } else if self.open_session_busy() && !self.open_aborting() {
            self.abort_open();
        } else if self.any_session_working() {
            self.modal = Some(Modal::ConfirmQuit);
        } else {
            self.begin_exit();
        }
    }

    /// Handles a key inside a modal; returns the modal if it stays open.
    fn modal_key(&mut self, modal: Modal, key: Key) -> Option<Modal> {
        match modal {
            Modal::Help => match key.code {
                KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => None,
                KeyCode::Up => {
                    self.help_scroll = self.help_scroll.saturating_sub(1);
                    Some(Modal::Help)
                }
                KeyCode::Down | KeyCode::PageDown => {
                    self.help_scroll += if key.code == KeyCode::Down { 1 } else { 10 };
                    Some(Modal::Help)
                }
                KeyCode::PageUp | KeyCode::Home => {
                    self.help_scroll = 0;
                    Some(Modal::Help)
                }
                _ => Some(Modal::Help),
            },
            Modal::ConfirmQuit => match key.code {
                KeyCode::Char('y') | KeyCode::Enter => {
                    self.begin_exit();
                    None
                }
                KeyCode::Char('n') | KeyCode::Esc => None,
                _ => Some(Modal::ConfirmQuit),
            },
            Modal::McpConfig => match key.code {
                KeyCode::Char('c') | KeyCode::Char('y') => {
                    self.copy_mcp_config();
                    None
                }
                KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => None,
                _ => Some(Modal::McpConfig),
            },
            Modal::ConfirmDelete { session, title } => match key.code {
                KeyCode::Char('y') | KeyCode::Enter => {
                    // Until the backend says it is gone, the list and the header say so.
                    self.deleting.insert(session.clone());
                    let name = if title.is_empty() {
                        "(untitled)"
                    } else {
                        &title
                    };
                    self.notify(
                        NoticeKind::Info,
                        format!("deleting “{}”…", crate::markdown::sanitize(name)),
                    );
                    self.effects
                        .push(crate::app::Effect::DeleteSession { session });
                    None
                }
                KeyCode::Char('n') | KeyCode::Esc => None,
                _ => Some(Modal::ConfirmDelete { session, title }),
            },
            Modal::AgentPicker {
                agents,
                default,
                mut selected,
            } => {
                match key.code {
                    KeyCode::Esc => return None,
                    KeyCode::Up | KeyCode::BackTab => selected = selected.saturating_sub(1),
                    KeyCode::Down | KeyCode::Tab => {
                        selected = (selected + 1).min(agents.len().saturating_sub(1))
                    }
                    KeyCode::Home => selected = 0,
                    KeyCode::End => selected = agents.len().saturating_sub(1),
                    KeyCode::Enter => {
                        let agent = agents.get(selected).map(|a| a.name.clone());
                        self.create_session(agent);
                        return None;
                    }
                    _ => {}
                }
                Some(Modal::AgentPicker {
                    agents,
                    default,
                    selected,
                })
            }
            Modal::AgentInfo => match key.code {
                KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => None,
                KeyCode::Char('m') => {
                    self.mode_command(None);
                    self.modal.take()
                }
                KeyCode::Char('r') => {
                    self.revoke_standing();
                    None
                }
                _ => Some(Modal::AgentInfo),
            },
            Modal::Modes { mut selected } => {
                let modes: Vec<String> = self
                    .open_session()
                    .and_then(|s| s.agent_state.as_ref())
                    .and_then(|a| a.modes.as_ref())
                    .map(|m| m.available.iter().map(|m| m.id.clone()).collect())
                    .unwrap_or_default();
                match key.code {
                    KeyCode::Esc => return None,
                    KeyCode::Up => selected = selected.saturating_sub(1),
                    KeyCode::Down => selected = (selected + 1).min(modes.len().saturating_sub(1)),
                    KeyCode::Enter => {
                        if let Some(id) = modes.get(selected) {
                            self.mode_command(Some(id.clone()));
                        }
                        return None;
                    }
                    _ => {}
                }
                Some(Modal::Modes { selected })
            }
            Modal::Queue { selected } => self.queue_modal_key(selected, key),
            Modal::Approvals { selected } => self.inbox_key(selected, key),
            Modal::Config { option, selected } => self.config_modal_key(option, selected, key),
            Modal::Palette {
                mut query,
                mut selected,
            } => {
                let sharing = self.sharing.is_some();
                let count = palette_entries(&query, sharing).len();
                match key.code {
                    KeyCode::Esc => return None,
                    KeyCode::Up => selected = selected.saturating_sub(1),
                    KeyCode::Down => selected = (selected + 1).min(count.saturating_sub(1)),
                    KeyCode::Backspace => {
                        query.pop();
                        selected = 0;
                    }
                    KeyCode::Enter => {
                        let Some(entry) = palette_entries(&query, sharing).get(selected).copied()
                        else {
                            return Some(Modal::Palette { query, selected });
                        };
                        self.run_palette_entry(entry);
                        return None;
                    }
                    _ => {
                        if let Some(c) = key.printable()
                            && query.chars().count() < PALETTE_QUERY_MAX
                        {
                            query.push(c);
                            selected = 0;
                        }
                    }
                }
                Some(Modal::Palette { query, selected })
            }
        }
    }

    fn run_palette_entry(&mut self, command: Command) {
        if command.takes_arg() && !command.optional_arg() {
            // Needs an argument: start typing it in the composer.
            if !self.composer.has_draft() {
                self.composer.paste(&format!("{} ", command.name()));
            }
            return;
        }
        self.run_command(Invocation { command, arg: None });
    }

    /// Sends `c`; an option that asks for feedback leaves the composer waiting for it.
    pub(crate) fn answer(&mut self, c: crate::approval::Choice) {
        let session = self.pending_approval().map(|p| p.session_id.clone());
        self.reply(c.reply, c.option_id);
        if c.feedback {
            self.feedback_for = session;
            self.notify(
                NoticeKind::Info,
                "type what the agent should do differently and press Enter",
            );
        }
    }

    pub(crate) fn defer_approval(&mut self) {
        if let Some(p) = self.pending_approval() {
            let id = p.id.clone();
            self.deferred.insert(id);
            self.approval.clear_choice();
            self.notify(
                NoticeKind::Info,
                "approval left for later: Enter on an empty prompt answers it",
            );
        }
    }

    fn on_paste(&mut self, text: &str) {
        if self.overlay.is_some() {
            return;
        }
        let approval = self.pending_approval().is_some();
        match &mut self.modal {
            Some(Modal::Palette { query, selected }) => {
                let room = PALETTE_QUERY_MAX.saturating_sub(query.chars().count());
                query.extend(text.chars().filter(|c| !c.is_control()).take(room));
                *selected = 0;
            }
            Some(
                Modal::Help
                | Modal::ConfirmQuit
                | Modal::McpConfig
                | Modal::ConfirmDelete { .. }
                | Modal::AgentPicker { .. }
                | Modal::AgentInfo
                | Modal::Modes { .. }
                | Modal::Queue { .. }
                | Modal::Approvals { .. }
                | Modal::Config { .. },
            ) => {}
            None if approval => {}
            None if self.recall.searching() => self.recall.search_paste(text),
            None if self.find.is_some() => self.find_paste(text),
            None => self.composer.paste(text),
        }
    }

    fn on_mouse(&mut self, m: Mouse) {
        if self.overlay.is_some() {
            return;
        }
        let layout = self.layout();
        if m.kind == MouseKind::Down
            && let Some(r) = layout.revoke
            && r.contains(m.col, m.row)
        {
            self.revoke_sharing();
            return;
        }
        // Anywhere else on the bar (the path, [Copy config]) copies the MCP client config.
        if m.kind == MouseKind::Down && layout.bar.is_some_and(|b| b.contains(m.col, m.row)) {
            self.copy_mcp_config();
            return;
        }
        if matches!(self.modal, Some(Modal::Help)) {
            match m.kind {
                MouseKind::ScrollUp => self.help_scroll = self.help_scroll.saturating_sub(3),
                MouseKind::ScrollDown => self.help_scroll += 3,
                _ => {}
            }
            return;
        }
        if self.modal.is_none() && self.pending_approval().is_some() {
            match m.kind {
                MouseKind::ScrollUp => self.scroll_approval(-3),
                MouseKind::ScrollDown => self.scroll_approval(3),
                _ => {}
            }
            return;
        }
        if let Some(Modal::AgentPicker { .. }) = self.modal {
            self.on_agent_picker_mouse(m);
            return;
        }
        if self.modal.is_some() {
            return;
        }
        let inner = layout.main.inner();
        let session = self.session_area();
        if m.kind == MouseKind::Down
            && session
                .standing_revoke
                .is_some_and(|b| b.contains(m.col, m.row))
        {
            self.revoke_standing();
            return;
        }
        let area = session.transcript;
        match m.kind {
            MouseKind::ScrollUp if layout.main.contains(m.col, m.row) => match self.route {
                Route::Home => self.move_selection(-1),
                Route::Session(_) => self.scroll_by(3),
            },
            MouseKind::ScrollDown if layout.main.contains(m.col, m.row) => match self.route {
                Route::Home => self.move_selection(1),
                Route::Session(_) => self.scroll_by(-3),
            },
            MouseKind::Down
                if matches!(self.route, Route::Session(_)) && area.contains(m.col, m.row) =>
            {
                let h = area.height as usize;
                let row = self.transcript.window_start(h, self.scroll) + (m.row - area.y) as usize;
                let before = self.transcript.total_rows();
                if self.transcript.click_row(row) && self.scroll > 0 {
                    // Keep the clicked row where it is: rows below it grew or shrank.
                    let grown = self.transcript.total_rows() as isize - before as isize;
                    self.scroll = (self.scroll as isize + grown).max(0) as usize;
                }
            }
            MouseKind::Down if self.route == Route::Home && inner.contains(m.col, m.row) => {
                let i = self.list_offset + (m.row - inner.y) as usize;
                if let Some(s) = self.sessions.get(i) {
                    let id = s.id.clone();
                    self.open(id);
                }
            }
            MouseKind::Down if layout.chips.is_some_and(|c| c.contains(m.col, m.row)) => {
                let col = m.col as usize;
                if let Some(i) = chip_spans(self.composer.attachments())
                    .iter()
                    .position(|(a, b)| (*a..*b).contains(&col))
                {
                    self.composer.remove_attachment(i);
                }
            }
            _ => {}
        }
    }

    /// In the agent picker a click on an agent creates the session with it (as Enter on that
    /// row would), the wheel moves the highlight, a click outside the box cancels.
    fn on_agent_picker_mouse(&mut self, m: Mouse) {
        let Some(Modal::AgentPicker {
            agents, selected, ..
        }) = &mut self.modal
        else {
            return;
        };
        let screen = crate::layout::Rect::new(0, 0, self.size.0, self.size.1);
        let area = crate::layout::agent_picker_box(screen, agents.len());
        match m.kind {
            MouseKind::ScrollUp => *selected = selected.saturating_sub(1),
            MouseKind::ScrollDown => {
                *selected = (*selected + 1).min(agents.len().saturating_sub(1))
            }
            MouseKind::Down if !area.contains(m.col, m.row) => self.modal = None,
            MouseKind::Down => {
                let inner = area.inner();
                let row = usize::from(m.row.saturating_sub(inner.y));
                if m.row >= inner.y
                    && let Some(agent) = agents.get(row)
                {
                    let agent = agent.name.clone();
                    self.modal = None;
                    self.create_session(Some(agent));
                }
            }
            _ => {}
        }
    }

    /// Whether an abort of the open session's turn is already on its way.
    fn open_aborting(&self) -> bool {
        self.open_session()
            .is_some_and(|s| self.aborting.contains(&s.id))
    }

    fn move_selection(&mut self, delta: isize) {
        if self.sessions.is_empty() {
            return;
        }
        let cur = self.selected_index().unwrap_or(0) as isize;
        let next = (cur + delta).clamp(0, self.sessions.len() as isize - 1) as usize;
        self.selected = Some(self.sessions[next].id.clone());
        self.keep_selection_visible();
    }

    /// Focuses the next or previous foldable turn part and scrolls it into view.
    fn focus_part(&mut self, forward: bool) {
        let before = self.transcript.total_rows();
        let Some(row) = self.transcript.move_focus(forward) else {
            self.notify(
                NoticeKind::Info,
                "nothing to open here (no tool calls or thoughts)",
            );
            return;
        };
        // Rendering the focus mark changes no row counts; keep the math simple anyway.
        let total = self.transcript.total_rows().max(before);
        let h = self.transcript_height().max(1);
        let start = self.transcript.window_start(h, self.scroll);
        if row < start || row >= start + h {
            // Put the part's first row a third of the way down the window.
            let want_start = row.saturating_sub(h / 3);
            let max = self.transcript.max_scroll(h);
            self.scroll = total.saturating_sub(want_start + h).min(max);
        }
    }

    fn scroll_by(&mut self, delta: isize) {
        let max = self.transcript.max_scroll(self.transcript_height()) as isize;
        self.scroll = (self.scroll as isize + delta).clamp(0, max) as usize;
    }

    /// Reports an unavailable action without changing anything else.
    pub fn refuse(&mut self, why: &str) {
        self.notify(NoticeKind::Error, why.to_owned());
    }
}
