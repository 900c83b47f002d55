//! Attached images as the wires send them: a file reference is read and inlined as base64 on
//! every request (the bytes were checked and sized when the image was attached, so the same
//! file gives the same request bytes each turn); a URL is passed on for the provider to fetch.

use base64::Engine;
use talaria_kernel::{ImageRef, ModelError};

/// An image ready for a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WireImage {
    /// Inline bytes, base64-encoded.
    Data {
        /// MIME type.
        media_type: String,
        /// Base64 of the file.
        data: String,
    },
    /// A URL the provider fetches.
    Url(String),
}

impl WireImage {
    /// A `data:` URL for inline bytes, or the URL itself (the OpenAI wires' one field).
    pub fn url(&self) -> String {
        match self {
            WireImage::Data { media_type, data } => format!("data:{media_type};base64,{data}"),
            WireImage::Url(url) => url.clone(),
        }
    }
}

/// Reads every image of a message, in order; a file that is gone is an error naming it.
pub(crate) fn load_all(images: &[ImageRef]) -> Result<Vec<WireImage>, ModelError> {
    images.iter().map(load).collect()
}

fn load(image: &ImageRef) -> Result<WireImage, ModelError> {
    match image {
        ImageRef::Url { url } => Ok(WireImage::Url(url.clone())),
        ImageRef::File { path, media_type } => {
            let bytes = std::fs::read(path).map_err(|error| ModelError::Attachment {
                message: format!(
                    "cannot read {}: {error}. The image was attached earlier in this session \
                     and its file is gone from the image store; start a new session or attach \
                     it again",
                    path.display()
                ),
            })?;
            Ok(WireImage::Data {
                media_type: media_type.clone(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_inlined_urls_passed_and_a_missing_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.png");
        std::fs::write(&path, b"\x89PNG").unwrap();
        let images = [
            ImageRef::File {
                path: path.clone(),
                media_type: "image/png".into(),
            },
            ImageRef::Url {
                url: "https://example.com/b.jpg".into(),
            },
        ];
        let loaded = load_all(&images).unwrap();
        assert_eq!(loaded[0].url(), "data:image/png;base64,iVBORw==");
        assert_eq!(loaded[1].url(), "https://example.com/b.jpg");
        std::fs::remove_file(&path).unwrap();
        let error = load_all(&images).unwrap_err();
        assert_eq!(error.class(), "attachment");
        assert!(error.to_string().contains("a.png"), "{error}");
        assert!(!error.is_retryable() && !error.may_fall_back());
    }
}
