//! File plumbing for the store: atomic, durable replacement and a cross-process lock.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use crate::error::MemoryError;

/// Name of the lock file kept next to MEMORY.md and USER.md.
const LOCK_FILE: &str = ".memory.lock";

/// Replaces `path` with `text`: written to a temporary file in the same directory, flushed to
/// disk, then renamed over the target, so a reader never sees a half-written file and a crash
/// leaves either the old or the new content.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), MemoryError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(|e| MemoryError::io(dir, e))?;
    temp.write_all(text.as_bytes())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| MemoryError::io(temp.path(), e))?;
    temp.persist(path)
        .map_err(|e| MemoryError::io(path, e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Flushes the directory entry of a rename. Best effort: not every platform can open a
/// directory, and the data itself is already synced.
fn sync_dir(dir: &Path) {
    if cfg!(unix)
        && let Ok(handle) = File::open(dir)
    {
        let _ = handle.sync_all();
    }
}

/// Holds an exclusive lock on the store directory for one read-modify-write, so two processes
/// on the same profile (CLI and gateway) cannot lose each other's entries.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Creates the directory if needed and blocks until the lock is held.
    pub(crate) fn acquire(dir: &Path) -> Result<Self, MemoryError> {
        // Private whatever the umask, as the profile home is (0700 directories, 0600 files).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| MemoryError::io(dir, e))?;
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| MemoryError::io(&path, e))?;
        file.lock().map_err(|e| MemoryError::io(&path, e))?;
        // The lock is released when the file is closed (on drop).
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MEMORY.md");
        write_atomic(&path, "first, longer text").unwrap();
        write_atomic(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn lock_creates_the_directory_and_can_be_taken_again_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        drop(DirLock::acquire(&nested).unwrap());
        let _again = DirLock::acquire(&nested).unwrap();
        assert!(nested.join(LOCK_FILE).exists());
    }
}
