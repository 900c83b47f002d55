//! Files sent with a chat message: fetched through the account's connection,
//! saved under the session (`sessions/<id>/attachments/`) and named to the
//! agent by path, so its file tools can read them when it needs to. Those whose
//! bytes are images are also listed, for the runner to attach to the message.

use std::path::{Path, PathBuf};

use crate::driver::Outbox;
use crate::ports::Attachment;

/// Largest file fetched (Telegram lets bots download up to 20 MB).
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// Most files of one message fetched; the rest are only named.
pub const MAX_ATTACHMENTS: usize = 10;

/// What [`save_attachments`] did.
#[derive(Debug, Default)]
pub struct Saved {
    /// A line for each attachment, to append to the message: where it was saved, or why not.
    pub lines: String,
    /// The saved files whose bytes are an image (PNG, JPEG, GIF or WebP).
    pub images: Vec<PathBuf>,
}

/// Fetches `attachments` into `dir`.
pub async fn save_attachments(outbox: &Outbox, dir: &Path, attachments: &[Attachment]) -> Saved {
    // Numbered after the session's earlier files: platforms reuse names
    // (every Telegram photo is `photo.jpg`). Turns of a session never overlap.
    let earlier = std::fs::read_dir(dir).map_or(0, Iterator::count);
    let mut lines = Vec::new();
    let mut images = Vec::new();
    for (index, attachment) in attachments.iter().enumerate() {
        let name = &attachment.name;
        if index >= MAX_ATTACHMENTS {
            lines.push(format!(
                "[attachment {name:?} ({}): not fetched, more than {MAX_ATTACHMENTS} files]",
                attachment.mime
            ));
            continue;
        }
        let line = match fetch_and_save(outbox, dir, earlier + index, attachment).await {
            Ok((path, size, image)) => {
                let line = format!(
                    "[attached file {name:?} ({}, {size} bytes) saved at {}]",
                    attachment.mime,
                    path.display()
                );
                if image {
                    images.push(path);
                }
                line
            }
            Err(reason) => format!("[attachment {name:?} ({}): {reason}]", attachment.mime),
        };
        lines.push(line);
    }
    Saved {
        lines: lines.join("\n"),
        images,
    }
}

async fn fetch_and_save(
    outbox: &Outbox,
    dir: &Path,
    index: usize,
    attachment: &Attachment,
) -> Result<(PathBuf, usize, bool), String> {
    if let Some(size) = attachment.size.filter(|size| *size > MAX_ATTACHMENT_BYTES) {
        return Err(format!(
            "not fetched, {size} bytes is over the limit of {MAX_ATTACHMENT_BYTES}"
        ));
    }
    let bytes = outbox
        .fetch_attachment(&attachment.id, MAX_ATTACHMENT_BYTES)
        .await
        .map_err(|error| format!("could not be fetched: {error}"))?;
    let path = dir.join(file_name(index, &attachment.name));
    // Plain writes (at most 20 MB, once per file): a blocking-pool hop would
    // let paused-time tests race ahead of them.
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("could not be saved in {}: {error}", dir.display()))?;
    std::fs::write(&path, &bytes)
        .map_err(|error| format!("could not be saved at {}: {error}", path.display()))?;
    // By content, not by the platform's MIME type or name.
    let image = talaria_agent::images::sniff(&bytes).is_some();
    Ok((path, bytes.len(), image))
}

/// A safe local name: the platform's name cut to plain characters, never a
/// path or a hidden file, numbered so two files of one name both stay.
fn file_name(index: usize, name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut clean: String = base
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    clean = clean.trim_start_matches('.').to_owned();
    if clean.is_empty() {
        clean = "file".to_owned();
    }
    format!("{}-{clean}", index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_leave_the_directory_or_hide() {
        assert_eq!(file_name(0, "report.pdf"), "1-report.pdf");
        assert_eq!(file_name(1, "../../etc/passwd"), "2-passwd");
        assert_eq!(file_name(2, "..\\win.ini"), "3-win.ini");
        assert_eq!(file_name(3, ".bashrc"), "4-bashrc");
        assert_eq!(file_name(4, ""), "5-file");
        assert_eq!(file_name(5, "a b;c.txt"), "6-a_b_c.txt");
        assert_eq!(file_name(6, "фото.jpg"), "7-фото.jpg");
        assert!(file_name(7, &"x".repeat(500)).len() < 110);
    }
}
