//! Small file helpers: atomic writes, the install lock and checksums.

use std::fs::File;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::error::RegistryError;

/// Writes `bytes` to `path` through a temporary file and a rename, so a reader
/// sees the old content or the new, never half of it. The file's mode follows
/// the umask: for what is published to others (an index, its archives).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    write_atomic_with_mode(path, bytes, 0o666)
}

/// [`write_atomic`] for a file of the profile home (lockfile, index
/// settings): created 0600, readable by its user only.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> Result<(), RegistryError> {
    write_atomic_with_mode(path, bytes, 0o600)
}

fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), RegistryError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(RegistryError::io(parent))?;
    }
    let temp = path.with_extension(format!("tmp.{}", std::process::id()));
    // A leftover would keep its old mode.
    let _ = std::fs::remove_file(&temp);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&temp)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(RegistryError::io(&temp))?;
    std::fs::rename(&temp, path).map_err(|source| {
        let _ = std::fs::remove_file(&temp);
        RegistryError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An exclusive lock on a profile's plugin installs: the short critical part
/// of an install (swapping directories, writing the lockfile and grants)
/// happens under it, so concurrent installs serialise only there.
#[derive(Debug)]
pub struct InstallLock {
    file: File,
}

impl InstallLock {
    /// Blocks until the lock at `path` is held.
    pub fn acquire(path: &Path) -> Result<Self, RegistryError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(RegistryError::io(parent))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(RegistryError::io(path))?;
        file.lock().map_err(RegistryError::io(path))?;
        Ok(Self { file })
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock too; this only makes it prompt.
        let _ = self.file.unlock();
    }
}
