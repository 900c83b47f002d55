//! Where a command runs relative to the session's working directory.
//!
//! A sandbox only protects what it does not bind: bwrap binds the command's
//! working directory read-write, so a command whose directory is outside the
//! session's could change files there. The gate therefore resolves the
//! directory once, compares it with the session's, and runs the command in
//! the resolved directory (so a symlink swapped in later cannot redirect it).

use std::path::{Component, Path, PathBuf};

use crate::ExecError;
use crate::backend::CwdKind;

/// A request's working directory after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The directory the command runs in (resolved for host directories).
    pub(crate) cwd: PathBuf,
    /// `Some(workspace)` when `cwd` is outside the session's working
    /// directory `workspace` (as resolved for the comparison).
    pub(crate) outside: Option<PathBuf>,
}

/// Resolves `cwd` as `kind` says and checks it against `workspace`.
///
/// Host directories are canonicalised (symlinks and `..` resolved); one that
/// cannot be resolved is an error, since it could not be checked. Remote
/// paths are normalised lexically (`.` and `..`). A `Fixed` directory is the
/// backend's own and is never outside.
pub(crate) fn place(cwd: &Path, workspace: &Path, kind: CwdKind) -> Result<Placement, ExecError> {
    if kind == CwdKind::Fixed {
        return Ok(Placement {
            cwd: cwd.to_owned(),
            outside: None,
        });
    }
    if !cwd.is_absolute() {
        return Err(ExecError::Failed(format!(
            "the working directory must be absolute: {}",
            cwd.display()
        )));
    }
    let (cwd, workspace) = match kind {
        CwdKind::Host => {
            let resolved = cwd.canonicalize().map_err(|e| {
                ExecError::Failed(format!(
                    "cannot resolve the working directory {}: {e}",
                    cwd.display()
                ))
            })?;
            // A workspace that vanished still bounds lexically.
            let workspace = workspace
                .canonicalize()
                .unwrap_or_else(|_| lexical(workspace));
            (resolved, workspace)
        }
        CwdKind::Remote | CwdKind::Fixed => (lexical(cwd), lexical(workspace)),
    };
    // `starts_with` compares whole components: /work/a is not inside /work/ab's.
    let outside = (!cwd.starts_with(&workspace)).then_some(workspace);
    Ok(Placement { cwd, outside })
}

/// `path` with `.` dropped and `..` applied to what precedes it (never above `/`).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_paths_apply_dot_dot() {
        assert_eq!(lexical(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(lexical(Path::new("/a/../../..")), Path::new("/"));
    }

    #[test]
    fn remote_paths_are_compared_lexically() {
        let place = |cwd: &str| place(Path::new(cwd), Path::new("/srv/app"), CwdKind::Remote);
        assert_eq!(place("/srv/app/src/..").unwrap().outside, None);
        assert_eq!(
            place("/srv/app/sub").unwrap().cwd,
            Path::new("/srv/app/sub")
        );
        assert_eq!(
            place("/srv/app/../other").unwrap().outside,
            Some(PathBuf::from("/srv/app"))
        );
        assert!(place("/srv/application").unwrap().outside.is_some());
        assert!(place("relative").is_err());
    }

    #[test]
    fn fixed_directories_are_never_outside() {
        let placed = place(Path::new("/elsewhere"), Path::new("/srv"), CwdKind::Fixed).unwrap();
        assert_eq!(placed.outside, None);
    }

    #[test]
    fn host_directories_resolve_symlinks_and_dot_dot() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, work.join("link")).unwrap();
        let place = |cwd: &Path| place(cwd, &work, CwdKind::Host).unwrap();
        assert_eq!(place(&work.join("sub")).outside, None);
        assert!(place(&work.join("sub/../..")).outside.is_some());
        let through_link = place(&work.join("link"));
        assert!(through_link.outside.is_some());
        assert_eq!(through_link.cwd, outside.canonicalize().unwrap());
        assert!(place(&outside).outside.is_some());
        assert!(place(Path::new("/")).outside.is_some());
        let missing = super::place(&work.join("missing"), &work, CwdKind::Host);
        assert!(matches!(missing, Err(ExecError::Failed(m)) if m.contains("missing")));
    }
}
