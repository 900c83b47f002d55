//! Path arguments compared the way the filesystem sees them.

use std::path::{Component, Path, PathBuf};

/// `path` (relative to `cwd` unless absolute) with `.` and `..` resolved and
/// symlinks of its longest existing ancestor followed, so two spellings of
/// one file compare equal. Paths that do not exist yet (a file about to be
/// written) keep their not-yet-existing tail.
pub fn normalize_path(cwd: &Path, path: &str) -> PathBuf {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    let mut lexical = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut tail = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            out.extend(tail.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

/// Whether two normalised paths overlap: the same path, or one inside the other.
pub fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_path_agree() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir(cwd.join("src")).unwrap();
        let a = normalize_path(cwd, "src/main.rs");
        assert_eq!(a, normalize_path(cwd, "./src/../src/main.rs"));
        assert_eq!(
            a,
            normalize_path(cwd, &cwd.join("src/main.rs").to_string_lossy())
        );
        assert!(a.is_absolute());
        assert!(overlaps(&normalize_path(cwd, "src"), &a));
        assert!(!overlaps(&normalize_path(cwd, "srcx"), &a));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_resolve_to_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir(cwd.join("real")).unwrap();
        std::os::unix::fs::symlink(cwd.join("real"), cwd.join("link")).unwrap();
        assert_eq!(
            normalize_path(cwd, "link/new.txt"),
            normalize_path(cwd, "real/new.txt")
        );
    }
}
