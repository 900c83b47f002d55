//! Results as text for the model: text blocks as they are, images and audio summarised,
//! resources named (a text resource's text follows its name).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The blocks of a tool result, one after another; the structured content when there are no
/// blocks.
pub fn flatten_result(result: &CallToolResult) -> String {
    if result.content.is_empty() {
        return result
            .structured_content
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
    }
    flatten(&result.content)
}

/// Content blocks as text, separated by newlines.
pub fn flatten(blocks: &[ContentBlock]) -> String {
    blocks.iter().map(block).collect::<Vec<_>>().join("\n")
}

fn block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!(
                "[image: {}, {} bytes]",
                image.mime_type,
                decoded_len(&image.data)
            )
        }
        ContentBlock::Audio(audio) => {
            format!(
                "[audio: {}, {} bytes]",
                audio.mime_type,
                decoded_len(&audio.data)
            )
        }
        ContentBlock::Resource(embedded) => resource(&embedded.resource),
        ContentBlock::ResourceLink(link) => format!("[resource: {}]", link.uri),
        _ => "[content of a kind Talaria does not show]".into(),
    }
}

/// A resource's contents: a text one's name and text, a binary one summarised.
pub fn resource(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource: {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource: {uri}, {}, {} bytes]",
            mime_type.as_deref().unwrap_or("binary"),
            decoded_len(blob)
        ),
        _ => "[resource of a kind Talaria does not show]".into(),
    }
}

/// The size of base64 data once decoded.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{AudioContent, ImageContent};

    use super::*;

    #[test]
    fn blocks_become_text_and_summaries() {
        let blocks = vec![
            ContentBlock::text("hello"),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
            ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav")),
            ContentBlock::Resource(rmcp::model::EmbeddedResource::new(
                ResourceContents::TextResourceContents {
                    uri: "file:///a.txt".into(),
                    mime_type: None,
                    text: "inside".into(),
                    meta: None,
                },
            )),
        ];
        assert_eq!(
            flatten(&blocks),
            "hello\n[image: image/png, 8 bytes]\n[audio: audio/wav, 3 bytes]\n\
             [resource: file:///a.txt]\ninside"
        );
    }

    #[test]
    fn decoded_sizes_follow_padding() {
        for (data, len) in [
            ("", 0),
            ("QQ==", 1),
            ("QUI=", 2),
            ("QUJD", 3),
            ("QUJDRA", 4),
        ] {
            assert_eq!(decoded_len(data), len, "{data}");
        }
    }
}
