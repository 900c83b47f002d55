//! The image blocks of a prompt (`promptCapabilities.image`): base64 data (and a MIME type,
//! which is not trusted: the bytes are sniffed) prepared like any attached image, or an
//! http(s) URI alone, passed to the model as a URL.

use agent_client_protocol::v1::schema::ContentBlock;
use base64::Engine;
use talaria_agent::images::{ImageRef, ImageStore, url_image};

/// One image block as received.
pub(super) struct PromptImage {
    data: String,
    uri: Option<String>,
    /// Its place among the prompt's images, from 1 (for messages).
    number: usize,
}

/// The prompt's image blocks, in order.
pub(super) fn image_blocks(blocks: &[ContentBlock]) -> Vec<PromptImage> {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => Some((image.data.clone(), image.uri.clone())),
            _ => None,
        })
        .enumerate()
        .map(|(index, (data, uri))| PromptImage {
            data,
            uri,
            number: index + 1,
        })
        .collect()
}

/// The images prepared into `store`; `Err` says which one cannot be used, and why.
pub(super) fn prepare(
    images: Vec<PromptImage>,
    store: &ImageStore,
) -> Result<Vec<ImageRef>, String> {
    images
        .into_iter()
        .map(|image| {
            let name = image
                .uri
                .clone()
                .unwrap_or_else(|| format!("image {} of the prompt", image.number));
            if image.data.trim().is_empty() {
                let uri = image.uri.unwrap_or_default();
                return url_image(&uri)
                    .map_err(|_| format!("{name} has no data and no http(s) URI"));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(image.data.trim())
                .map_err(|e| format!("{name} is not valid base64: {e}"))?;
            store
                .attach_bytes(&bytes, &name)
                .map(|attached| attached.image)
                .map_err(|e| e.to_string())
        })
        .collect()
}
