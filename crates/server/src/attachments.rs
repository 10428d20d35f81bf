//! What a prompt carries beside its text, as the agent receives it (docs/agents.md §11):
//! files of the project as ACP resource links, or embedded as text resources when the agent
//! advertises `promptCapabilities.embeddedContext`, and images as ACP image blocks for an
//! agent that advertises `promptCapabilities.image`. Images are checked here (base64, size,
//! magic bytes), stored with the person's message and served back by
//! `GET /session/{id}/message/{mid}/image/{index}`.

use std::{io::Read, path::Path};

use ax_agents::project::{self, Attachment};
use ax_protocol::Part;
use axum::{
    Router,
    extract::{Path as UrlPath, State},
    http::header,
    response::{IntoResponse, Response},
    routing::get,
};
use base64::Engine as _;

use crate::{error::Failure, state::Shared, store, turn_error::TurnError};

/// A file up to this size (and valid UTF-8) is embedded; a larger one goes as a link, which
/// the agent reads with `fs/read_text_file` if it wants.
pub const EMBED_FILE_BYTES: u64 = 256 * 1024;
/// Most text embedded in one prompt; the files beyond it go as links.
pub const EMBED_TOTAL_BYTES: u64 = 1024 * 1024;
/// Longest image name, in characters.
pub const IMAGE_NAME_CHARS: usize = 200;

pub use ax_core::image::{IMAGE_TYPES, sniff};

/// An image of a prompt, checked: its type as its bytes say, and the bytes.
pub struct CheckedImage {
    pub mime: &'static str,
    pub data: Vec<u8>,
    /// `data` as it came, base64: what the agent receives.
    pub base64: String,
    pub name: Option<String>,
}

/// The refusal of a prompt with images for an agent that takes none.
pub fn images_not_supported(agent: &str) -> TurnError {
    TurnError::ImagesNotSupported(format!(
        "the agent `{}` does not take images (it does not advertise \
         promptCapabilities.image); send the prompt without them",
        ax_core::text::escape_controls(agent)
    ))
}

fn bad_image(message: impl Into<String>) -> TurnError {
    TurnError::BadImage(message.into())
}

/// Checks one image of a prompt: `data` is base64 of at most `max` bytes (`total` counts what
/// the prompt's images hold so far, at most `max_total`), of a type in [`IMAGE_TYPES`] that
/// matches `mime_type`; `name` is short and has no control or bidi characters.
pub fn check_image(
    mime_type: &str,
    data: String,
    name: Option<String>,
    (max, max_total): (usize, usize),
    total: &mut usize,
) -> Result<CheckedImage, TurnError> {
    // base64 is 4 characters per 3 bytes: refuse by length before decoding anything.
    if data.len() / 4 * 3 > max + 2 {
        return Err(TurnError::too_large(format!(
            "an image is limited to {max} bytes"
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&data)
        .map_err(|_| bad_image("an image's data must be base64 (standard alphabet, padded)"))?;
    if bytes.len() > max {
        return Err(TurnError::too_large(format!(
            "an image is limited to {max} bytes"
        )));
    }
    *total += bytes.len();
    if *total > max_total {
        return Err(TurnError::too_large(format!(
            "the images of a prompt are limited to {max_total} bytes in all"
        )));
    }
    let Some(mime) = sniff(&bytes) else {
        return Err(bad_image(format!(
            "an image must be one of {} (its bytes say it is none of them)",
            IMAGE_TYPES.join(", ")
        )));
    };
    if mime != mime_type {
        return Err(bad_image(format!(
            "the image's bytes are {mime}, not the {} it was sent as",
            ax_core::text::escape_controls(mime_type)
        )));
    }
    if let Some(n) = &name
        && (n.is_empty()
            || n.chars().count() > IMAGE_NAME_CHARS
            || n.chars().any(ax_core::text::is_unsafe_char))
    {
        return Err(bad_image(format!(
            "an image name has 1 to {IMAGE_NAME_CHARS} characters without control or bidi \
             characters"
        )));
    }
    Ok(CheckedImage {
        mime,
        data: bytes,
        base64: data,
        name,
    })
}

/// The stored part for image `index`.
pub fn image_part(index: u32, image: &CheckedImage) -> Part {
    Part::Image {
        index,
        mime_type: image.mime.to_owned(),
        bytes: image.data.len() as u64,
        name: image.name.clone(),
    }
}

/// Whether the agent's `agentCapabilities` (as it sent them) set
/// `promptCapabilities.<what>`.
pub fn prompt_capability(capabilities: &serde_json::Value, what: &str) -> bool {
    capabilities
        .pointer(&format!("/promptCapabilities/{what}"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// What a prompt sends beside its text, kept until the agent's capabilities are known.
#[derive(Clone)]
pub struct PromptContent {
    pub text: String,
    pub attachments: Vec<Attachment>,
    /// MIME type and base64 data, as the agent receives them.
    pub images: Vec<(&'static str, String)>,
}

/// The text of a file to embed: UTF-8, at most `limit` bytes, checked again right before it
/// is read ([`project::recheck`]); `None` sends it as a link instead.
fn embeddable(project_dir: &Path, attachment: &Attachment, limit: u64) -> Option<String> {
    let path = project::recheck(project_dir, attachment).ok()?;
    let mut file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > limit {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The ACP blocks of a prompt for an agent with `capabilities`: the text, then each file as
/// an embedded text resource (with `embeddedContext`, within [`EMBED_FILE_BYTES`] and
/// [`EMBED_TOTAL_BYTES`]) or else a resource link, then the images. Reads files: call it off
/// the async threads.
pub fn blocks(
    project_dir: &Path,
    content: &PromptContent,
    capabilities: &serde_json::Value,
) -> Vec<ax_acp::schema::ContentBlock> {
    use ax_acp::schema;
    let embed = prompt_capability(capabilities, "embeddedContext");
    let mut blocks = vec![schema::ContentBlock::Text(schema::TextContent::new(
        content.text.clone(),
    ))];
    let mut embedded = 0u64;
    for a in &content.attachments {
        let uri = format!("file://{}", a.resolved.display());
        let budget = EMBED_FILE_BYTES.min(EMBED_TOTAL_BYTES - embedded);
        match embed.then(|| embeddable(project_dir, a, budget)).flatten() {
            Some(text) => {
                embedded += text.len() as u64;
                blocks.push(schema::ContentBlock::Resource(
                    schema::EmbeddedResource::new(
                        schema::EmbeddedResourceResource::TextResourceContents(
                            schema::TextResourceContents::new(text, uri),
                        ),
                    ),
                ));
            }
            None => blocks.push(schema::ContentBlock::ResourceLink(
                schema::ResourceLink::new(a.shown.clone(), uri),
            )),
        }
    }
    for (mime, data) in &content.images {
        blocks.push(schema::ContentBlock::Image(schema::ImageContent::new(
            data.clone(),
            *mime,
        )));
    }
    blocks
}

/// The routes of this module, merged into the protected API.
pub fn routes() -> Router<Shared> {
    Router::new().route(
        "/session/{id}/message/{mid}/image/{index}",
        get(serve_image),
    )
}

/// `GET /session/{id}/message/{mid}/image/{index}`: the image's bytes with their checked
/// type; never rendered as anything else (`nosniff`), private to the credential's holder.
async fn serve_image(
    State(app): State<Shared>,
    UrlPath((id, mid, index)): UrlPath<(String, String, String)>,
) -> Result<Response, Failure> {
    let id: ax_protocol::SessionId = id
        .parse()
        .map_err(|e: ax_protocol::IdError| Failure::bad_request(e.to_string()))?;
    let mid: ax_protocol::MessageId = mid
        .parse()
        .map_err(|e: ax_protocol::IdError| Failure::bad_request(e.to_string()))?;
    let index: u32 = index
        .parse()
        .map_err(|_| Failure::bad_request("an image index is a number from 0"))?;
    let project = app.project_id;
    let (sid, m) = (id.to_string(), mid.to_string());
    let found = app
        .store
        .read(move |c| store::image(c, project, &sid, &m, index))
        .await?;
    let Some((mime, data)) = found else {
        return Err(Failure::not_found(format!(
            "no image {index} in message {mid} of session {id}"
        )));
    };
    Ok((
        [
            (header::CONTENT_TYPE, mime),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::CACHE_CONTROL, "private, max-age=86400".to_owned()),
        ],
        data,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn checks_type_size_and_total() {
        let mut total = 0;
        let ok = check_image("image/png", b64(PNG), None, (64, 100), &mut total).unwrap();
        assert_eq!(
            (ok.mime, ok.data.len(), total),
            ("image/png", PNG.len(), PNG.len())
        );
        let lied = check_image("image/gif", b64(PNG), None, (64, 100), &mut 0);
        assert_eq!(
            lied.err().map(|e| crate::error::Failure::from(e).code),
            Some("bad_image")
        );
        let svg = check_image("image/svg+xml", b64(b"<svg/>"), None, (64, 100), &mut 0);
        assert_eq!(
            svg.err().map(|e| crate::error::Failure::from(e).code),
            Some("bad_image")
        );
        let big = check_image("image/png", b64(&[0; 100]), None, (64, 100), &mut 0);
        assert_eq!(
            big.err().map(|e| crate::error::Failure::from(e).code),
            Some("too_large")
        );
        let mut total = 90;
        let over = check_image("image/png", b64(PNG), None, (64, 100), &mut total);
        assert_eq!(
            over.err().map(|e| crate::error::Failure::from(e).code),
            Some("too_large")
        );
        let junk = check_image("image/png", "not base64!".into(), None, (64, 100), &mut 0);
        assert_eq!(
            junk.err().map(|e| crate::error::Failure::from(e).code),
            Some("bad_image")
        );
        let named = check_image(
            "image/png",
            b64(PNG),
            Some("a\u{202e}b".into()),
            (64, 100),
            &mut 0,
        );
        assert_eq!(
            named.err().map(|e| crate::error::Failure::from(e).code),
            Some("bad_image")
        );
    }

    #[test]
    fn reads_prompt_capabilities() {
        let caps = serde_json::json!({"promptCapabilities": {"image": true}});
        assert!(prompt_capability(&caps, "image"));
        assert!(!prompt_capability(&caps, "embeddedContext"));
        assert!(!prompt_capability(&serde_json::Value::Null, "image"));
    }
}
