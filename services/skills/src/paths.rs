//! Confining caller-supplied paths to a skill's directory.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::SkillError;

fn invalid(path: &str, reason: &str) -> SkillError {
    SkillError::InvalidPath {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Checks a `file_path` argument without touching the disk: relative, no
/// `..`, no NUL, `/` as separator. Returns it normalised (no `.` parts).
pub(crate) fn relative(path: &str) -> Result<PathBuf, SkillError> {
    if path.trim().is_empty() {
        return Err(invalid(path, "it is empty"));
    }
    if path.contains('\0') {
        return Err(invalid(path, "it contains a NUL byte"));
    }
    // A backslash is a separator on Windows and a filename byte elsewhere;
    // refusing it keeps the check the same everywhere.
    if path.contains('\\') {
        return Err(invalid(path, "use '/' as the separator"));
    }
    let drive = path.as_bytes().get(1) == Some(&b':');
    if path.starts_with('/') || drive || Path::new(path).is_absolute() {
        return Err(invalid(
            path,
            "absolute paths are not allowed; give a path relative to the skill directory",
        ));
    }
    let mut normal = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(invalid(path, "'..' is not allowed; stay inside the skill"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(invalid(path, "absolute paths are not allowed"));
            }
        }
    }
    if normal.as_os_str().is_empty() {
        return Err(invalid(path, "it names the skill directory itself"));
    }
    Ok(normal)
}

/// Resolves an existing file for reading. Symlinks are followed but the
/// result must still be inside the skill directory.
pub(crate) fn resolve_for_read(dir: &Path, rel: &Path, shown: &str) -> Result<PathBuf, SkillError> {
    let base = dir
        .canonicalize()
        .map_err(|e| SkillError::io("resolve", dir, e))?;
    let target = match dir.join(rel).canonicalize() {
        Ok(target) => target,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(invalid(
                shown,
                "no such file in this skill; skill_view(name) lists its files",
            ));
        }
        Err(error) => return Err(SkillError::io("resolve", dir.join(rel), error)),
    };
    if !target.starts_with(&base) {
        return Err(invalid(shown, "it resolves outside the skill directory"));
    }
    Ok(target)
}

/// For writes and removals: no existing part of the path below the skill
/// directory may be a symlink, so nothing written can land outside it.
pub(crate) fn refuse_symlinks(dir: &Path, rel: &Path, shown: &str) -> Result<(), SkillError> {
    let mut current = dir.to_path_buf();
    for component in rel.components() {
        current.push(component);
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(invalid(shown, "it goes through a symbolic link"));
            }
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => break,
            Err(error) => return Err(SkillError::io("inspect", current, error)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::relative;

    #[test]
    fn normalises_plain_relative_paths() {
        assert_eq!(
            relative("./references/a.md").unwrap(),
            PathBuf::from("references/a.md")
        );
    }

    #[test]
    fn refuses_escapes() {
        for path in [
            "",
            " ",
            "..",
            "../x",
            "references/../../x",
            "/etc/passwd",
            "C:/x",
            "c:x",
            "references\\..\\x",
            "a\0b",
            ".",
            "./",
        ] {
            assert!(relative(path).is_err(), "{path:?}");
        }
    }
}
