//! `GET /machine/{m}/session/{id}/message/{mid}/image/{index}`: an image a person attached to
//! a message, through the hub (docs/hub.md §4). An image is up to 5 MiB and a NATS message
//! 1 MiB, so the hub asks the machine for it in pieces (`Request::ImagePiece`), each answered
//! from the backend's own image route (its rules: the session must be the machine's, the
//! message must carry that image), and serves it whole, as the backend does, once its bytes
//! read as the type it was served with.

use ax_core::image::{IMAGE_TYPES, MAX_IMAGE_BYTES, sniff};
use ax_protocol::{MessageId, SessionId};
use axum::{
    extract::{Path, State},
    http::header,
    response::{IntoResponse, Response},
};
use base64::Engine as _;

use super::{ApiError, S};
use crate::{
    MachineName,
    wire::{IMAGE_PIECE_BYTES, ImagePiece, Reply, Request},
};

/// What one piece's answer may add around the piece: the reply's JSON, its fields.
const ANSWER_OVERHEAD: usize = 1024;

pub(super) async fn image(
    State(shared): S,
    Path((m, session, message, index)): Path<(String, SessionId, MessageId, u32)>,
) -> Response {
    let machine = match MachineName::new(&m) {
        Ok(m) => m,
        Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
    };
    // A server with a smaller payload limit than NATS' default gets smaller pieces.
    let room = shared
        .nats
        .server_info()
        .max_payload
        .saturating_sub(ANSWER_OVERHEAD)
        / 4
        * 3;
    let length = IMAGE_PIECE_BYTES
        .min(u32::try_from(room).unwrap_or(u32::MAX))
        .max(1);
    let mut image = Image::default();
    loop {
        let request = Request::ImagePiece {
            session: session.clone(),
            message: message.clone(),
            index,
            offset: image.bytes.len() as u64,
            length,
        };
        let piece = match shared.request::<ImagePiece>(&machine, &request).await {
            Ok(Reply::Ok(piece)) => piece,
            Ok(Reply::Error(e)) => {
                return ApiError::new(e.status, &e.code, e.message).into_response();
            }
            Err(e) => return e.into_response(),
        };
        match image.add(piece, length) {
            Ok(true) => break,
            Ok(false) => {}
            Err(why) => {
                let why = format!("machine {machine} sent a bad image: {why}");
                return ApiError::new(502, "bad_reply", why).into_response();
            }
        }
    }
    let Some(mime_type) = image.mime_type else {
        return ApiError::internal(&"an image without a type").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, mime_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::CACHE_CONTROL, "private, max-age=86400".to_owned()),
        ],
        image.bytes,
    )
        .into_response()
}

/// An image as its pieces come, checked as they come.
#[derive(Default)]
struct Image {
    mime_type: Option<String>,
    total: u64,
    bytes: Vec<u8>,
}

impl Image {
    /// Adds the next piece, asked as `length` bytes; true once the image is whole. Refuses a
    /// type or size that changes or is not an image's, a piece longer than asked, an empty
    /// one before the end, and whole bytes that are not of the type named.
    fn add(&mut self, piece: ImagePiece, length: u32) -> Result<bool, String> {
        match &self.mime_type {
            None => {
                if !IMAGE_TYPES.contains(&piece.mime_type.as_str()) {
                    return Err(format!("{:?} is not an image type", piece.mime_type));
                }
                if piece.total > MAX_IMAGE_BYTES as u64 {
                    return Err(format!("{} bytes is over the image bound", piece.total));
                }
                self.total = piece.total;
                self.bytes.reserve_exact(piece.total as usize);
                self.mime_type = Some(piece.mime_type);
            }
            Some(known) if *known != piece.mime_type || self.total != piece.total => {
                return Err("the image changed while it was read".to_owned());
            }
            Some(_) => {}
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(&piece.data)
            .map_err(|e| format!("a piece is not base64: {e}"))?;
        let left = self.total - self.bytes.len() as u64;
        if data.len() > length as usize || data.len() as u64 > left {
            return Err("a piece is longer than asked".to_owned());
        }
        if data.is_empty() && left > 0 {
            return Err("a piece is empty before the end".to_owned());
        }
        self.bytes.extend_from_slice(&data);
        if (self.bytes.len() as u64) < self.total {
            return Ok(false);
        }
        if sniff(&self.bytes) != self.mime_type.as_deref() {
            return Err("its bytes are not of its type".to_owned());
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn piece(mime: &str, total: usize, data: &[u8]) -> ImagePiece {
        ImagePiece {
            mime_type: mime.into(),
            total: total as u64,
            data: base64::engine::general_purpose::STANDARD.encode(data),
        }
    }

    #[test]
    fn an_image_is_whole_once_its_pieces_add_up_to_its_type() {
        let mut image = Image::default();
        assert_eq!(
            image.add(piece("image/png", PNG.len(), &PNG[..8]), 8),
            Ok(false)
        );
        assert_eq!(
            image.add(piece("image/png", PNG.len(), &PNG[8..]), 8),
            Ok(true)
        );
        assert_eq!(image.bytes, PNG);
        // An empty image is whole at once, and is no PNG.
        assert!(Image::default().add(piece("image/png", 0, b""), 8).is_err());
    }

    #[test]
    fn a_piece_that_does_not_fit_is_refused() {
        let refused = |first: Option<ImagePiece>, next: ImagePiece| {
            let mut image = Image::default();
            if let Some(first) = first {
                assert_eq!(image.add(first, 8), Ok(false));
            }
            image.add(next, 8).unwrap_err()
        };
        let head = || Some(piece("image/png", PNG.len(), &PNG[..8]));
        assert!(refused(None, piece("text/html", 4, b"<b>x")).contains("not an image type"));
        assert!(refused(None, piece("image/png", MAX_IMAGE_BYTES + 1, PNG)).contains("bound"));
        assert!(refused(head(), piece("image/gif", PNG.len(), &PNG[8..])).contains("changed"));
        assert!(refused(head(), piece("image/png", 99, &PNG[8..])).contains("changed"));
        assert!(refused(None, piece("image/png", PNG.len(), &PNG[..9])).contains("longer"));
        assert!(refused(head(), piece("image/png", PNG.len(), b"")).contains("empty"));
        let not_png = piece("image/png", 4, b"GIF8");
        assert!(refused(None, not_png).contains("not of its type"));
        let mut bad = piece("image/png", 4, b"");
        bad.data = "!!".into();
        assert!(refused(None, bad).contains("base64"));
    }
}
