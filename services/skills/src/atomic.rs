//! Atomic file writes: a temp file in the same directory, then rename.

use std::fs;
use std::io::Write;
use std::path::Path;

use tempfile::NamedTempFile;

use crate::error::SkillError;

/// Writes `data` to `path` so readers see the old or the new content, never
/// a mix. Keeps an existing file's permissions (a script stays executable);
/// a new file keeps the temp file's 0600 (the profile home is private, whatever the umask).
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), SkillError> {
    let parent = path
        .parent()
        .ok_or_else(|| SkillError::Argument(format!("{} has no parent", path.display())))?;
    let mut temp =
        NamedTempFile::new_in(parent).map_err(|e| SkillError::io("create", parent, e))?;
    temp.write_all(data)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| SkillError::io("write", temp.path().to_path_buf(), e))?;
    if let Ok(existing) = fs::metadata(path) {
        temp.as_file()
            .set_permissions(existing.permissions())
            .map_err(|e| SkillError::io("set permissions on", path, e))?;
    }
    temp.persist(path)
        .map_err(|e| SkillError::io("replace", path, e.error))?;
    Ok(())
}
