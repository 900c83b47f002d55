//! Reading skill files within size limits, telling text from binary.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::SkillError;
use crate::limits::MAX_SKILL_MD_READ_BYTES;

/// A file's content as shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileContent {
    /// UTF-8 text.
    Text(String),
    /// Anything else: only its size is reported.
    Binary { size: u64 },
}

/// Reads at most `limit` bytes; a larger file is an error, checked before
/// reading and again while reading (the file may grow in between).
pub(crate) fn read_capped(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, SkillError> {
    let file = File::open(path).map_err(|e| SkillError::io("open", path, e))?;
    let size = file
        .metadata()
        .map_err(|e| SkillError::io("inspect", path, e))?
        .len();
    let too_large = |size| SkillError::TooLarge {
        what: what.to_owned(),
        size,
        limit,
    };
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| SkillError::io("read", path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Text unless it has a NUL byte or is not UTF-8.
pub(crate) fn classify(bytes: Vec<u8>) -> FileContent {
    let size = bytes.len() as u64;
    if bytes.contains(&0) {
        return FileContent::Binary { size };
    }
    match String::from_utf8(bytes) {
        Ok(text) => FileContent::Text(text),
        Err(_) => FileContent::Binary { size },
    }
}

/// A `SKILL.md`, which must be text within [`MAX_SKILL_MD_READ_BYTES`].
pub(crate) fn read_skill_md(path: &Path) -> Result<String, SkillError> {
    let bytes = read_capped(path, MAX_SKILL_MD_READ_BYTES, "SKILL.md")?;
    match classify(bytes) {
        FileContent::Text(text) => Ok(text),
        FileContent::Binary { .. } => Err(SkillError::InvalidSkill(
            "the file is not UTF-8 text (binary content)".to_owned(),
        )),
    }
}

/// A supporting file that is about to be patched: text within `limit`.
pub(crate) fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, SkillError> {
    match classify(read_capped(path, limit, what)?) {
        FileContent::Text(text) => Ok(text),
        FileContent::Binary { .. } => Err(SkillError::Argument(format!(
            "{what} is a binary file; only text files can be patched"
        ))),
    }
}

/// A file for level 2: text within `limit`, or binary of any size (only the
/// size is reported, so a large image is not an error).
pub(crate) fn read_for_view(
    path: &Path,
    limit: u64,
    what: &str,
) -> Result<FileContent, SkillError> {
    match read_capped(path, limit, what) {
        Ok(bytes) => Ok(classify(bytes)),
        Err(SkillError::TooLarge { size, .. }) if looks_binary(path) => {
            Ok(FileContent::Binary { size })
        }
        Err(error) => Err(error),
    }
}

/// Sniffs the first 8 KiB: a NUL byte or invalid UTF-8 (not merely a
/// character cut at the end of the sample) means binary.
fn looks_binary(path: &Path) -> bool {
    let mut sample = Vec::new();
    let read = File::open(path).and_then(|file| file.take(8192).read_to_end(&mut sample));
    if read.is_err() {
        return false;
    }
    sample.contains(&0)
        || std::str::from_utf8(&sample).is_err_and(|error| error.error_len().is_some())
}
