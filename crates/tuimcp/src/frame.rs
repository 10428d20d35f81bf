//! Frames on the socket: UTF-8 JSON ending in one `\n` that is the last byte, at most
//! [`MAX_FRAME`] bytes. One frame per direction per connection.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::protocol::MAX_FRAME;

/// Why no frame could be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Over [`MAX_FRAME`] bytes before the newline.
    #[error("frame longer than {MAX_FRAME} bytes")]
    TooLarge,
    /// Bytes followed the frame's newline (one frame per direction).
    #[error("data after the frame")]
    Trailing,
    /// The peer closed mid-frame.
    #[error("connection closed before the end of the frame")]
    Eof,
    /// The read itself failed; the source error is kept for the log.
    #[error("read failed")]
    Io(#[from] std::io::Error),
}

/// Checks a complete buffer: one frame, nothing after it. Returns the JSON bytes (without
/// the `\n`).
pub fn split_frame(bytes: &[u8]) -> Result<&[u8], FrameError> {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(end) if end + 1 > MAX_FRAME => Err(FrameError::TooLarge),
        Some(end) if end + 1 < bytes.len() => Err(FrameError::Trailing),
        Some(end) => Ok(&bytes[..end]),
        None if bytes.len() >= MAX_FRAME => Err(FrameError::TooLarge),
        None => Err(FrameError::Eof),
    }
}

/// Reads one frame. Bytes that arrive in the same read after the `\n` are `Trailing`; the
/// caller watches the connection afterwards for anything later.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = reader.read(&mut chunk).await?;
        if n == 0 {
            return Err(FrameError::Eof);
        }
        let start = buf.len();
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            if end + 1 > MAX_FRAME {
                return Err(FrameError::TooLarge);
            }
            if end + 1 < buf.len() {
                return Err(FrameError::Trailing);
            }
            buf.truncate(end);
            return Ok(buf);
        }
        if buf.len() >= MAX_FRAME {
            return Err(FrameError::TooLarge);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split() {
        assert_eq!(split_frame(b"{}\n").unwrap(), &b"{}"[..]);
        assert!(matches!(split_frame(b"{}\n\n"), Err(FrameError::Trailing)));
        assert!(matches!(split_frame(b"{}\nx"), Err(FrameError::Trailing)));
        assert!(matches!(split_frame(b"{}"), Err(FrameError::Eof)));
        let mut big = vec![b' '; MAX_FRAME - 1];
        big.push(b'\n');
        assert!(split_frame(&big).is_ok());
        big.insert(0, b' ');
        assert!(matches!(split_frame(&big), Err(FrameError::TooLarge)));
    }

    /// A reader whose read fails with a given error.
    struct Broken;

    impl AsyncRead for Broken {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "peer reset the connection",
            )))
        }
    }

    #[tokio::test]
    async fn a_read_error_keeps_its_source() {
        let err = read_frame(&mut Broken).await.unwrap_err();
        let FrameError::Io(source) = &err else {
            panic!("expected Io, got {err:?}");
        };
        assert_eq!(source.kind(), std::io::ErrorKind::ConnectionReset);
        let chained = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(chained.as_deref(), Some("peer reset the connection"));
    }

    #[tokio::test]
    async fn read_limits() {
        let mut exact = vec![b' '; MAX_FRAME - 1];
        exact.push(b'\n');
        assert_eq!(
            read_frame(&mut &exact[..]).await.unwrap().len(),
            MAX_FRAME - 1
        );
        let mut over = vec![b' '; MAX_FRAME];
        over.push(b'\n');
        assert!(matches!(
            read_frame(&mut &over[..]).await,
            Err(FrameError::TooLarge)
        ));
        assert!(matches!(
            read_frame(&mut &b"{}\n{}\n"[..]).await,
            Err(FrameError::Trailing)
        ));
        assert!(matches!(
            read_frame(&mut &b"{}"[..]).await,
            Err(FrameError::Eof)
        ));
    }
}
