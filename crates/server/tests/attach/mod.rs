//! What a prompt carries beside its text (docs/agents.md §11): project files as resource
//! links or embedded text, images as image blocks, each checked when the prompt arrives.
//! The mock agent's `blocks` command reports the blocks it was sent.

use ax_protocol::{Prompt, PromptPart};
use base64::Engine as _;

use super::*;

/// A tiny PNG's first bytes: enough for the magic-byte check.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn text(t: &str) -> PromptPart {
    PromptPart::Text { text: t.into() }
}

fn file(path: &str) -> PromptPart {
    PromptPart::File { path: path.into() }
}

fn image(mime: &str, bytes: &[u8], name: Option<&str>) -> PromptPart {
    PromptPart::Image {
        mime_type: mime.into(),
        data: b64(bytes),
        name: name.map(str::to_owned),
    }
}

/// Sends `parts` and follows the turn; answers the reply's text and the stored user message.
async fn blocks_of(b: &Backend, id: &SessionId, parts: Vec<PromptPart>) -> (String, Message) {
    let mut events = b.events().await;
    let accepted = within(b.client.prompt(id, &Prompt { parts }))
        .await
        .expect("the prompt is accepted");
    let live = follow(b, &mut events, id, &accepted.reply_id, |_| None).await;
    (text_of(&live.parts), accepted.message)
}

/// The API error code and message of a refused prompt.
async fn refused(b: &Backend, id: &SessionId, parts: Vec<PromptPart>) -> (u16, String, String) {
    match within(b.client.prompt(id, &Prompt { parts })).await {
        Err(ClientError::Api { status, error }) => (status, error.code, error.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Files go as embedded text to an agent with `embeddedContext` (a file over the embedding
/// bound as a link), as links to one without; the stored message keeps the file parts.
pub async fn files_go_as_links_or_embedded_text() {
    let b = Backend::start("").await;
    let root = b.project_dir.canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "hello notes").unwrap();
    std::fs::write(root.join("big.txt"), "x".repeat(300 * 1024)).unwrap();
    let id = b.mock_session().await;
    let (said, stored) = blocks_of(
        &b,
        &id,
        vec![text("blocks"), file("notes.txt"), file("big.txt")],
    )
    .await;
    assert_eq!(
        said,
        format!(
            "blocks: resource file://{0}/notes.txt 11; link big.txt file://{0}/big.txt",
            root.display()
        )
    );
    assert_eq!(
        stored.parts[1..],
        [
            Part::File {
                path: "notes.txt".into()
            },
            Part::File {
                path: "big.txt".into()
            }
        ]
    );
    let messages = b.client.messages(&id).await.unwrap();
    assert_eq!(
        messages[0].parts, stored.parts,
        "the stored prompt keeps its files"
    );

    let plain = Backend::start(", AX_MOCK_NO_IMAGE = \"1\"").await;
    let root = plain.project_dir.canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "hello notes").unwrap();
    let id = plain.mock_session().await;
    let (said, _) = blocks_of(&plain, &id, vec![text("blocks"), file("notes.txt")]).await;
    assert_eq!(
        said,
        format!("blocks: link notes.txt file://{}/notes.txt", root.display())
    );
}

/// A path that does not exist, leaves the project or is not a file is refused at once with
/// `bad_attachment`, and nothing is stored.
pub async fn bad_attachment_paths_are_refused_at_once() {
    let b = Backend::start("").await;
    let root = b.project_dir.canonicalize().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "no").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt")).unwrap();
    std::fs::create_dir(root.join("dir")).unwrap();
    let id = b.mock_session().await;
    let absolute = outside.path().join("secret.txt").display().to_string();
    for (path, says) in [
        ("missing.txt", "no such file"),
        ("../secret.txt", "`..`"),
        (absolute.as_str(), "outside the project"),
        ("link.txt", "outside the project"),
        ("dir", "not a regular file"),
    ] {
        let (status, code, message) = refused(&b, &id, vec![text("blocks"), file(path)]).await;
        assert_eq!((status, code.as_str()), (400, "bad_attachment"), "{path}");
        assert!(message.contains(says), "{path}: {message}");
    }
    assert!(b.client.messages(&id).await.unwrap().is_empty());
}

/// An image goes to the agent as an image block, is stored with the person's message and
/// served back with its type, also after a restart; bad images are refused with a clear
/// code before anything is stored.
pub async fn images_are_sent_stored_and_served() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let (said, stored) = blocks_of(
        &b,
        &id,
        vec![text("blocks"), image("image/png", PNG, Some("shot.png"))],
    )
    .await;
    assert_eq!(said, format!("blocks: image image/png {}", PNG.len()));
    assert_eq!(
        stored.parts[1],
        Part::Image {
            index: 0,
            mime_type: "image/png".into(),
            bytes: PNG.len() as u64,
            name: Some("shot.png".into()),
        }
    );
    let served = b.client.image(&id, &stored.id, 0).await.unwrap();
    assert_eq!(served, ("image/png".to_owned(), PNG.to_vec()));
    for missing in [
        b.client.image(&id, &stored.id, 1).await,
        b.client.image(&b.mock_session().await, &stored.id, 0).await,
    ] {
        assert!(
            matches!(missing, Err(ClientError::Api { status: 404, .. })),
            "{missing:?}"
        );
    }

    // A large image passes the request bound of other routes (512 KiB).
    let mut big = PNG.to_vec();
    big.resize(4 * 1024 * 1024, 7);
    let (said, stored_big) = blocks_of(
        &b,
        &id,
        vec![text("blocks"), image("image/png", &big, None)],
    )
    .await;
    assert_eq!(said, format!("blocks: image image/png {}", big.len()));

    let gif = b"GIF89a\x01\0\x01\0";
    let mut over = PNG.to_vec();
    over.resize(5 * 1024 * 1024 + 1, 0);
    // Three of these are over the prompt's 10 MiB of images, yet their request stays under
    // the prompt route's body bound (14 MiB, base64 included), so the prompt's own check
    // answers: a body over the HTTP bound may be cut off before the client finished writing
    // it, which a client sees as a broken pipe rather than as the 413 (seen in CI).
    let mut large = PNG.to_vec();
    large.resize(3 * 1024 * 1024 + 460 * 1024, 0);
    let cases: Vec<(Vec<PromptPart>, u16, &str)> = vec![
        (
            vec![text("x"), image("image/png", b"not an image", None)],
            400,
            "bad_image",
        ),
        (
            vec![text("x"), image("image/svg+xml", b"<svg/>", None)],
            400,
            "bad_image",
        ),
        (
            vec![text("x"), image("image/jpeg", gif, None)],
            400,
            "bad_image",
        ),
        (
            vec![text("x"), image("image/png", PNG, Some("a\u{1b}[2Jb"))],
            400,
            "bad_image",
        ),
        (
            vec![text("x"), image("image/png", &over, None)],
            413,
            "too_large",
        ),
        (
            vec![
                text("x"),
                image("image/png", &large, None),
                image("image/png", &large, None),
                image("image/png", &large, None),
            ],
            413,
            "too_large",
        ),
    ];
    for (parts, want_status, want_code) in cases {
        let (status, code, message) = refused(&b, &id, parts).await;
        assert_eq!(
            (status, code.as_str()),
            (want_status, want_code),
            "{message}"
        );
    }
    assert_eq!(
        b.client.messages(&id).await.unwrap().len(),
        4,
        "nothing more stored"
    );

    b.restart().await;
    let served = b.client.image(&id, &stored_big.id, 0).await.unwrap();
    assert_eq!(served.1, big);
    let messages = b.client.messages(&id).await.unwrap();
    assert_eq!(messages[0].parts, stored.parts);
}

/// An agent that does not advertise `promptCapabilities.image`, and the shell agent, refuse
/// a prompt with an image at once, naming the agent; nothing is stored.
pub async fn images_are_refused_for_agents_without_them() {
    let b = Backend::start(", AX_MOCK_NO_IMAGE = \"1\"").await;
    let id = b.mock_session().await;
    let (status, code, message) =
        refused(&b, &id, vec![text("blocks"), image("image/png", PNG, None)]).await;
    assert_eq!((status, code.as_str()), (400, "images_not_supported"));
    assert!(message.contains("`mock`"), "{message}");
    assert!(b.client.messages(&id).await.unwrap().is_empty());
    // The agent it started to learn that serves the next prompt.
    let (said, _) = blocks_of(&b, &id, vec![text("blocks")]).await;
    assert_eq!(said, "blocks: none");

    let shell = b.client.create_session(Some("sh")).await.unwrap().id;
    let (status, code, message) = refused(
        &b,
        &shell,
        vec![text("true"), image("image/png", PNG, None)],
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "images_not_supported"));
    assert!(message.contains("`shell`"), "{message}");
}
