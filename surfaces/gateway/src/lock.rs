//! One gateway per profile: two would sign in twice (two IRC nicks, Telegram
//! answering 409 to both long-polls). The running gateway holds an exclusive
//! lock on `gateway.pid` in the profile's gateway directory and writes its
//! pid there; the lock ends with the process, however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name in the gateway directory.
pub const PID_FILE: &str = "gateway.pid";

/// Why the lock could not be had or read.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another gateway of this profile runs.
    #[error(
        "a gateway of this profile is already running (pid {pid}); stop it with `talaria gateway stop`"
    )]
    Running {
        /// Its process id, as it wrote it (0 when unreadable).
        pid: u32,
    },
    /// The file could not be opened, locked or written.
    #[error("{path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Held while the gateway runs.
#[derive(Debug)]
pub struct GatewayLock {
    _file: File,
    path: PathBuf,
}

impl GatewayLock {
    /// Takes the lock in `dir` (created 0700 when missing) and records this
    /// process's id, or says which gateway holds it.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let path = dir.join(PID_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        create_private_dir(dir).map_err(io)?;
        let mut file = open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Running {
                    pid: read_pid(&mut file).unwrap_or(0),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.flush())
            .map_err(io)?;
        Ok(Self { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The pid of the gateway running for the profile whose gateway directory
/// is `dir`, if one runs.
pub fn running(dir: &Path) -> Result<Option<u32>, LockError> {
    let path = dir.join(PID_FILE);
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(LockError::Io { path, source }),
    };
    match file.try_lock_shared() {
        // Nobody holds it: the file is left from a gateway that ended.
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(Some(read_pid(&mut file).unwrap_or(0))),
        Err(TryLockError::Error(source)) => Err(LockError::Io { path, source }),
    }
}

fn open(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_gateway_of_the_profile_is_refused_until_the_first_ends() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("gateway");
        assert_eq!(running(&dir).unwrap(), None);
        let first = GatewayLock::acquire(&dir).unwrap();
        assert_eq!(running(&dir).unwrap(), Some(std::process::id()));
        // A lock is per open file, so a second acquire in this process
        // stands for a second process.
        match GatewayLock::acquire(&dir) {
            Err(LockError::Running { pid }) => assert_eq!(pid, std::process::id()),
            other => panic!("expected Running, got {other:?}"),
        }
        drop(first);
        assert_eq!(
            running(&dir).unwrap(),
            None,
            "a stale pid file is not a gateway"
        );
        let again = GatewayLock::acquire(&dir).unwrap();
        assert!(again.path().ends_with(PID_FILE));
    }

    #[cfg(unix)]
    #[test]
    fn the_lock_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("gateway");
        let lock = GatewayLock::acquire(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(lock.path()), 0o600);
    }
}
