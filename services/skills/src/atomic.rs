//! Atomic file writes: a temp file in the same directory, then rename.

use std::fs;
use std::io::Write;
use std::path::Path;

use tempfile::NamedTempFile;

use crate::error::SkillError;

/// Writes `data` to `path` so readers see the old or the new content, never
/// a mix. Keeps an existing file's permissions (a script stays executable);
/// a new file gets the usual 0644 rather than the temp file's 0600.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<(), SkillError> {
    let parent = path
        .parent()
        .ok_or_else(|| SkillError::Argument(format!("{} has no parent", path.display())))?;
    let mut temp =
        NamedTempFile::new_in(parent).map_err(|e| SkillError::io("create", parent, e))?;
    temp.write_all(data)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| SkillError::io("write", temp.path().to_path_buf(), e))?;
    let permissions = match fs::metadata(path) {
        Ok(existing) => Some(existing.permissions()),
        Err(_) => default_permissions(temp.as_file()),
    };
    if let Some(permissions) = permissions {
        temp.as_file()
            .set_permissions(permissions)
            .map_err(|e| SkillError::io("set permissions on", path, e))?;
    }
    temp.persist(path)
        .map_err(|e| SkillError::io("replace", path, e.error))?;
    Ok(())
}

#[cfg(unix)]
fn default_permissions(file: &fs::File) -> Option<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = file.metadata().ok()?.permissions();
    permissions.set_mode(0o644);
    Some(permissions)
}

#[cfg(not(unix))]
fn default_permissions(_file: &fs::File) -> Option<fs::Permissions> {
    None
}
