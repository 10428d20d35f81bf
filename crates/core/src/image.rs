//! Which images a prompt may carry (docs/agents.md §11): the four types agents take, known by
//! their magic bytes (never by a name or a declared type), and the size bounds. The backend
//! refuses anything else; the TUI checks the same before it sends.

/// Largest image, in bytes.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Largest total of one prompt's images, in bytes.
pub const MAX_PROMPT_IMAGE_BYTES: usize = 10 * 1024 * 1024;
/// The types accepted.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The type of `bytes` by its magic bytes, if it is one of [`IMAGE_TYPES`].
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_four_types_and_nothing_else() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some("image/png"));
        assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"GIF87a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff(b"<svg xmlns"), None);
        assert_eq!(sniff(b"\x89PNG"), None);
        assert_eq!(sniff(b""), None);
    }
}
