//! The `@` file picker in the app: when to ask the backend for files, and the keys while it
//! shows (the picker's state and ranking are `crate::picker`).

use crate::app::{App, Effect, NoticeKind};
use crate::input::{Key, KeyCode};
use crate::picker::{FilePicker, at_token};

impl App {
    /// The files the picker lists now, best first (empty: no picker).
    pub fn picker_files(&self) -> Vec<&str> {
        match self.picker_query() {
            Some(q) => self.picker.ranked(q),
            None => Vec::new(),
        }
    }

    /// The highlighted file's index in [`App::picker_files`].
    pub fn picker_selected(&self) -> usize {
        self.picker.selected(self.picker_files().len())
    }

    /// Whether the backend said the project has more files than it lists.
    pub fn picker_truncated(&self) -> bool {
        self.picker.truncated()
    }

    /// The query the picker is open for: an `@word` at the cursor not dismissed, with the
    /// keys not taken by a bar or modal.
    fn picker_query(&self) -> Option<&str> {
        let (start, q) = at_token(self.composer.draft(), self.composer.cursor())?;
        let dismissed = self.picker.is_dismissed(start, q);
        let busy = self.modal.is_some()
            || self.recall.searching()
            || self.find.is_some()
            || self.overlay.is_some();
        (!dismissed && !busy).then_some(q)
    }

    /// After every input: asks for the files of a new `@` query; forgets the picker when no
    /// `@word` is under the cursor.
    pub(crate) fn refresh_picker(&mut self) {
        let Some(query) = self.picker_query().map(str::to_owned) else {
            if at_token(self.composer.draft(), self.composer.cursor()).is_none() {
                self.picker = FilePicker::default();
            }
            return;
        };
        let generation = self.next_gen();
        if self.picker.ask(&query, generation) {
            self.effects.push(Effect::FindFiles { query, generation });
        }
    }

    /// The answer to [`Effect::FindFiles`]: the files, and whether the list was cut.
    pub fn on_files_found(&mut self, generation: u64, result: Result<(Vec<String>, bool), String>) {
        if !self.picker.is_current(generation) {
            return;
        }
        match result {
            Ok((files, truncated)) => self.picker.answered(files, truncated),
            Err(e) => self.notify(NoticeKind::Error, format!("file search failed: {e}")),
        }
    }

    /// Keys while the picker shows: ↑↓ choose, Tab or Enter attach, Esc hides it. Returns
    /// whether the key was taken.
    pub(crate) fn picker_key(&mut self, key: Key) -> bool {
        if key.mods.ctrl || key.mods.alt {
            return false;
        }
        let files: Vec<String> = self.picker_files().into_iter().map(str::to_owned).collect();
        let Some((start, query)) =
            at_token(self.composer.draft(), self.composer.cursor()).map(|(s, q)| (s, q.to_owned()))
        else {
            return false;
        };
        if self.picker_query().is_none() {
            return false;
        }
        let selected = self.picker_selected();
        match key.code {
            KeyCode::Esc => self.picker.dismiss(start, query),
            KeyCode::Up if !files.is_empty() => self.picker.step(false, files.len()),
            KeyCode::Down if !files.is_empty() => self.picker.step(true, files.len()),
            KeyCode::Tab | KeyCode::Enter if !key.mods.shift && !files.is_empty() => {
                let end = self.composer.cursor();
                self.composer.replace_range(start..end, "");
                self.picker = FilePicker::default();
                self.attach(files[selected].clone());
            }
            _ => return false,
        }
        true
    }
}
