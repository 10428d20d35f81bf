//! `/image PATH` (docs/tui.md): the image is read and checked (size, magic bytes), shown as a
//! chip, sent as an image part; a stored image part is a named chip in the transcript.

mod util;

use ax_protocol::{Part, PromptPart, Role, SessionStatus};
use ax_tui::app::{App, Effect, NoticeKind};
use ax_tui::input::KeyCode;
use ax_tui::render::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01";

fn screen(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

/// Runs `/image PATH` and answers its effect by reading the file as the TUI does.
fn image_command(app: &mut App, workspace: &std::path::Path, path: &str) {
    typed(app, &format!("/image {path}"));
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::LoadImage { path: asked, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    assert_eq!(asked, path);
    app.on_image_loaded(path, ax_tui::attach::load_image(workspace, path));
}

#[test]
fn an_image_is_read_checked_shown_and_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shot.png"), PNG).unwrap();
    std::fs::write(dir.path().join("fake.png"), b"<svg/>").unwrap();
    std::fs::write(dir.path().join("huge.png"), vec![0u8; 5 * 1024 * 1024 + 1]).unwrap();
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);

    for (path, says) in [
        ("fake.png", "not a PNG, JPEG, GIF or WebP image"),
        ("huge.png", "limited to 5 MiB"),
        ("missing.png", "no such file"),
    ] {
        image_command(&mut app, dir.path(), path);
        let notice = app.notice().expect("a refusal is said");
        assert_eq!(notice.kind, NoticeKind::Error);
        assert!(notice.text.contains(says), "{path}: {}", notice.text);
        assert!(app.composer().images().is_empty(), "{path} makes no chip");
    }

    image_command(&mut app, dir.path(), "shot.png");
    assert_eq!(app.composer().images().len(), 1);
    assert!(
        screen(&app).contains(&format!("image shot.png ({} B)", PNG.len())),
        "{}",
        screen(&app)
    );
    typed(&mut app, "what is this");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::Submit { parts, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    use base64::Engine as _;
    assert_eq!(
        parts,
        &[
            PromptPart::Text {
                text: "what is this".into()
            },
            PromptPart::Image {
                mime_type: "image/png".into(),
                data: base64::engine::general_purpose::STANDARD.encode(PNG),
                name: Some("shot.png".into()),
            }
        ]
    );
}

#[test]
fn a_stored_image_is_a_named_chip_in_the_transcript() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0001",
            1,
            Role::User,
            vec![
                Part::Text {
                    text: "look".into(),
                },
                Part::Image {
                    index: 0,
                    mime_type: "image/png".into(),
                    bytes: 12 * 1024,
                    name: Some("shot.png".into()),
                },
                Part::Image {
                    index: 1,
                    mime_type: "image/webp".into(),
                    bytes: 3 * 1024 * 1024,
                    name: None,
                },
            ],
        )],
    );
    let s = screen(&app);
    assert!(s.contains("image shot.png (12 KiB)"), "{s}");
    assert!(s.contains("image 2 (image/webp, 3.0 MiB)"), "{s}");
}
