//! Attached images: every surface (the CLI's `--image`, the REPL, ACP prompts, gateway
//! attachments, `vision_analyze`) prepares an image here, once, when it is attached.
//!
//! Preparing reads the bytes, sniffs the real type (PNG, JPEG, GIF or WebP; anything else is
//! refused, naming the file), decodes it (a corrupt file is refused now, not by the provider
//! later), scales it down when it is over the limits the model APIs set, and stores it as
//! `<store>/<sha256>.<ext>`. Messages keep only the reference ([`ImageRef`]); doing the work at
//! attach time keeps every later request byte-stable.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageFormat, ImageReader};
use sha2::{Digest, Sha256};
pub use talaria_kernel::ImageRef;

/// Largest file sent as it is: Anthropic refuses an image over 5 MiB of base64, which is this
/// many bytes before encoding. The other APIs take at least as much.
pub const MAX_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;

/// Longest side Anthropic accepts (larger images are refused, not scaled).
pub const MAX_SIDE: u32 = 8000;

/// Largest file read at all: a bigger one is refused before it is decoded.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Attempts at re-encoding smaller before giving up.
const SCALE_ATTEMPTS: usize = 6;

/// Why an image cannot be attached. Each message names the image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file cannot be read.
    #[error("cannot read the image {name}: {source}")]
    Read {
        /// The file as given.
        name: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not one of the four formats the model APIs take.
    #[error(
        "{name} is not an image that can be sent to a model ({found}); attach a PNG, JPEG, GIF or WebP file"
    )]
    Unsupported {
        /// The file as given.
        name: String,
        /// What it looks like instead.
        found: String,
    },
    /// It claims to be an image but does not decode.
    #[error("the image {name} is damaged and cannot be read: {reason}")]
    Corrupt {
        /// The file as given.
        name: String,
        /// The decoder's complaint.
        reason: String,
    },
    /// Too big to bring under the limits.
    #[error("the image {name} is too large to send: {reason}")]
    TooLarge {
        /// The file as given.
        name: String,
        /// Its size and the limit.
        reason: String,
    },
    /// The store could not keep it.
    #[error("cannot store the image {name} in {dir}: {source}")]
    Store {
        /// The file as given.
        name: String,
        /// The image store.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A URL that is not http(s).
    #[error("{0} is not an http(s) URL")]
    BadUrl(String),
}

/// One of the four formats the model APIs take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `image/png`
    Png,
    /// `image/jpeg`
    Jpeg,
    /// `image/gif`
    Gif,
    /// `image/webp`
    Webp,
}

impl Format {
    /// The MIME type.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::Webp => "image/webp",
        }
    }

    /// The file extension the store uses.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpg",
            Format::Gif => "gif",
            Format::Webp => "webp",
        }
    }

    fn codec(self) -> ImageFormat {
        match self {
            Format::Png => ImageFormat::Png,
            Format::Jpeg => ImageFormat::Jpeg,
            Format::Gif => ImageFormat::Gif,
            Format::Webp => ImageFormat::WebP,
        }
    }
}

/// The format of `bytes` by their magic numbers (never by a file name), if it is one of ours.
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Format::Png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(Format::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(Format::Gif)
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some(Format::Webp)
    } else {
        None
    }
}

/// What an attached image became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// The reference a message carries.
    pub image: ImageRef,
    /// When it was scaled down: a line for the user saying so.
    pub note: Option<String>,
}

/// The profile's image store: `$TALARIA_HOME/images/` (from `ProfileHome::images_dir`).
#[derive(Debug, Clone)]
pub struct ImageStore {
    dir: PathBuf,
}

impl ImageStore {
    /// A store in `dir` (created on first use).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Where it keeps images.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Prepares the file at `path` (relative paths are taken from the working directory).
    pub fn attach_file(&self, path: &Path) -> Result<Attached, ImageError> {
        let name = path.display().to_string();
        let read_error = |source| ImageError::Read {
            name: name.clone(),
            source,
        };
        let size = std::fs::metadata(path).map_err(read_error)?.len();
        if size > MAX_INPUT_BYTES {
            return Err(ImageError::TooLarge {
                name,
                reason: format!("{size} bytes, over the {MAX_INPUT_BYTES} bytes read at most"),
            });
        }
        let bytes = std::fs::read(path).map_err(read_error)?;
        self.attach_bytes(&bytes, &name)
    }

    /// Prepares image bytes received whole (an editor's or a chat's attachment); `name` says
    /// where they came from in messages.
    pub fn attach_bytes(&self, bytes: &[u8], name: &str) -> Result<Attached, ImageError> {
        let (bytes, format, note) = prepare(bytes, name)?;
        let path = self.store(&bytes, format, name)?;
        Ok(Attached {
            image: ImageRef::File {
                path,
                media_type: format.media_type().to_owned(),
            },
            note,
        })
    }

    /// Writes `bytes` under their SHA-256 (once: the same image attached again is one file).
    fn store(&self, bytes: &[u8], format: Format, name: &str) -> Result<PathBuf, ImageError> {
        let store_error = |source| ImageError::Store {
            name: name.to_owned(),
            dir: self.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(store_error)?;
        let dir = std::path::absolute(&self.dir).map_err(store_error)?;
        let digest = hex::encode(Sha256::digest(bytes));
        let path = dir.join(format!("{digest}.{}", format.extension()));
        if path.is_file() {
            return Ok(path);
        }
        // Written whole or not at all: a reader never sees half an image.
        let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(store_error)?;
        file.write_all(bytes).map_err(store_error)?;
        file.persist(&path)
            .map_err(|error| store_error(error.error))?;
        Ok(path)
    }
}

/// An http(s) URL as an image reference (the provider fetches it; we never do).
pub fn url_image(url: &str) -> Result<ImageRef, ImageError> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://"))
        || url.contains(char::is_whitespace)
    {
        return Err(ImageError::BadUrl(url.to_owned()));
    }
    Ok(ImageRef::Url {
        url: url.to_owned(),
    })
}

/// The bytes to store, their format, and a note when they were scaled down.
fn prepare(bytes: &[u8], name: &str) -> Result<(Vec<u8>, Format, Option<String>), ImageError> {
    let Some(format) = sniff(bytes) else {
        return Err(ImageError::Unsupported {
            name: name.to_owned(),
            found: describe(bytes),
        });
    };
    let corrupt = |error: image::ImageError| ImageError::Corrupt {
        name: name.to_owned(),
        reason: error.to_string(),
    };
    // Decoded whole even when it is sent as it is: a damaged file is refused here, with its
    // name, rather than by the provider mid-conversation.
    let mut reader = ImageReader::new(Cursor::new(bytes));
    reader.set_format(format.codec());
    let decoded = reader.decode().map_err(corrupt)?;
    let (width, height) = (decoded.width(), decoded.height());
    if bytes.len() <= MAX_BYTES && width <= MAX_SIDE && height <= MAX_SIDE {
        return Ok((bytes.to_vec(), format, None));
    }
    let (scaled, scaled_format) = scale_down(&decoded, bytes.len()).map_err(corrupt)?;
    let Some(scaled) = scaled else {
        return Err(ImageError::TooLarge {
            name: name.to_owned(),
            reason: format!(
                "{width}x{height} px, {} bytes, and still over {MAX_BYTES} bytes after scaling down",
                bytes.len()
            ),
        });
    };
    let (new_width, new_height) = scaled.1;
    let note = format!(
        "{name} was scaled down from {width}x{height} px ({} bytes) to {new_width}x{new_height} px \
         ({} bytes) to fit the model's image limits",
        bytes.len(),
        scaled.0.len()
    );
    Ok((scaled.0, scaled_format, Some(note)))
}

/// Encoded bytes and their size in pixels.
type Encoded = (Vec<u8>, (u32, u32));

/// Smaller encodings of `image` until one fits: JPEG for opaque images (photos and screenshots
/// compress far better), PNG when transparency must survive. `None` when nothing fits.
fn scale_down(
    image: &DynamicImage,
    original_len: usize,
) -> Result<(Option<Encoded>, Format), image::ImageError> {
    let format = if image.color().has_alpha() {
        Format::Png
    } else {
        Format::Jpeg
    };
    let (width, height) = (image.width(), image.height());
    let longest = width.max(height).max(1);
    let mut scale = (f64::from(MAX_SIDE) / f64::from(longest)).min(1.0);
    // A first guess from the byte size: bytes grow with the pixel count.
    if original_len > MAX_BYTES {
        scale = scale.min((MAX_BYTES as f64 / original_len as f64).sqrt());
    }
    for _ in 0..SCALE_ATTEMPTS {
        let new_width = ((f64::from(width) * scale).round() as u32).max(1);
        let new_height = ((f64::from(height) * scale).round() as u32).max(1);
        let resized = image.resize(new_width, new_height, image::imageops::FilterType::Triangle);
        let encoded = encode(&resized, format)?;
        if encoded.len() <= MAX_BYTES {
            return Ok((Some((encoded, (resized.width(), resized.height()))), format));
        }
        scale *= (MAX_BYTES as f64 / encoded.len() as f64).sqrt() * 0.9;
        if new_width.max(new_height) <= 16 {
            break;
        }
    }
    Ok((None, format))
}

fn encode(image: &DynamicImage, format: Format) -> Result<Vec<u8>, image::ImageError> {
    let mut out = Cursor::new(Vec::new());
    match format {
        Format::Jpeg => {
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
            image.to_rgb8().write_with_encoder(encoder)?;
        }
        _ => image.write_to(&mut out, ImageFormat::Png)?,
    }
    Ok(out.into_inner())
}

/// A short guess at what non-image bytes are, for the refusal.
fn describe(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(512)];
    if bytes.is_empty() {
        "the file is empty".into()
    } else if head.starts_with(b"%PDF") {
        "it is a PDF document".into()
    } else if head.starts_with(b"<svg") || head.starts_with(b"<?xml") {
        "it is SVG/XML text; vector images are not supported".into()
    } else if head.len() >= 12 && &head[4..8] == b"ftyp" {
        "it is a HEIC/AVIF or video file".into()
    } else if head.starts_with(b"BM") || head.starts_with(b"II*\0") || head.starts_with(b"MM\0*") {
        "it is a BMP or TIFF image".into()
    } else if std::str::from_utf8(head).is_ok() {
        "it is text".into()
    } else {
        "its contents are not PNG, JPEG, GIF or WebP".into()
    }
}

/// A path the user pasted or dropped into a terminal, if `text` is nothing but the path of an
/// existing file with an image extension: terminals paste dropped files as a path, sometimes
/// quoted or with spaces escaped (`'/a b.png'`, `/a\ b.png`, `file:///a.png`).
pub fn dropped_image_path(text: &str, cwd: &Path) -> Option<PathBuf> {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let unquoted = ["'", "\""]
        .iter()
        .find_map(|q| text.strip_prefix(q).and_then(|t| t.strip_suffix(q)))
        .map_or_else(|| text.replace("\\ ", " "), str::to_owned);
    let unquoted = unquoted.strip_prefix("file://").unwrap_or(&unquoted);
    let lower = unquoted.to_ascii_lowercase();
    let is_image_name = [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| lower.ends_with(ext));
    if !is_image_name {
        return None;
    }
    let path = Path::new(unquoted);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests;
