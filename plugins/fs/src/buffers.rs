//! Where file text comes from and goes to: the user's editor when the session
//! runs in one that serves files (so reads see unsaved buffers and edits land
//! in them, where the user sees and can undo them), otherwise the filesystem.
//! Directories, metadata, searching and deleting always use the filesystem.

use std::fs::{self, Metadata};

use talaria_plugin_sdk::{ToolError, editor};

use crate::files::{self, Written};
use crate::paths::{self, Target};
use crate::text;

/// Whether an editor serves files in this call's session.
pub fn in_editor() -> bool {
    editor::serves_files()
}

/// The path as the host names it to the editor.
fn editor_path(target: &Target) -> Result<&str, ToolError> {
    target.full.to_str().ok_or_else(|| {
        ToolError::failed(format!(
            "cannot open {} in the editor: its path is not valid UTF-8",
            target.shown
        ))
    })
}

/// The text of `target`, an existing regular file, for `verb`ing it (binary,
/// non-UTF-8 and oversized files are refused with a message naming `verb`).
pub fn read_text(verb: &str, target: &Target) -> Result<String, ToolError> {
    let bytes = if in_editor() {
        editor::read_text_file(editor_path(target)?)?.into_bytes()
    } else {
        fs::read(&target.full).map_err(|e| paths::io_error("read", target, &e))?
    };
    text::as_text(bytes)
        .map_err(|why| ToolError::failed(format!("cannot {verb} {}: {why}", target.shown)))
}

/// The text of `target` as the editor has it, when an editor serves files.
pub fn editor_text(target: &Target) -> Result<Option<String>, ToolError> {
    if !in_editor() {
        return Ok(None);
    }
    Ok(Some(editor::read_text_file(editor_path(target)?)?))
}

/// Writes `content` to `target` (`meta`: the existing file's, `None` when it
/// is new): into the editor's buffer, or to disk with [`files::write`].
pub fn write_text(
    target: &Target,
    content: &str,
    meta: Option<&Metadata>,
) -> Result<Written, ToolError> {
    if in_editor() {
        editor::write_text_file(editor_path(target)?, content)?;
        return Ok(Written::InPlace);
    }
    files::write(target, content.as_bytes(), meta)
}

/// What `target` holds now, to put back if a later step fails; `None` when
/// it is not a readable file.
pub fn snapshot(target: &Target) -> Option<Vec<u8>> {
    if in_editor() {
        return editor_text(target).ok().flatten().map(String::into_bytes);
    }
    fs::read(&target.full).ok()
}

/// Puts back a [`snapshot`] (`None`: the file did not exist, so it is removed).
pub fn restore(target: &Target, before: Option<Vec<u8>>) {
    match before {
        Some(bytes) => {
            let through_editor = in_editor()
                .then(|| std::str::from_utf8(&bytes).ok())
                .flatten()
                .map(|text| write_text(target, text, None));
            if !matches!(through_editor, Some(Ok(_))) {
                let _ = fs::write(&target.full, &bytes);
            }
        }
        None => {
            let _ = fs::remove_file(&target.full);
        }
    }
}
