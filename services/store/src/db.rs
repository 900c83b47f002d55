//! The database handle: opening, and running read and write transactions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rusqlite::{Connection, Transaction};

use crate::error::{Result, StoreError};
use crate::{retry, schema};

/// The session database: one SQLite file shared by every Talaria process of a
/// profile.
///
/// One connection per handle, behind a mutex: SQLite runs one writer at a time
/// anyway, calls are short, and a long-lived connection keeps its prepared
/// statements and page cache warm. Other processes get their own handles;
/// WAL lets their reads run beside our writes.
#[derive(Debug)]
pub struct SessionDb {
    conn: Mutex<Connection>,
    path: PathBuf,
}

type Opened = HashMap<PathBuf, ((u64, u64), Arc<SessionDb>)>;

/// The handles [`SessionDb::shared`] gave out, by path.
fn opened() -> &'static Mutex<Opened> {
    static OPENED: OnceLock<Mutex<Opened>> = OnceLock::new();
    OPENED.get_or_init(Mutex::default)
}

impl SessionDb {
    /// Opens (creating it and its parent directories if needed) and migrates
    /// the database at `path`. A database from a newer Talaria is refused and
    /// left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_owned();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            private::create_dir(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_owned(),
                source,
            })?;
        }
        let open_error = |source| StoreError::Private {
            path: path.clone(),
            source,
        };
        // Transcripts are private: the file is created 0600 before SQLite opens
        // it (SQLite then gives its -wal and -shm files the same mode).
        private::create_file(&path).map_err(open_error)?;
        let mut conn = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        schema::prepare(&mut conn, &path)?;
        // Journal files left by an older version keep their mode: tighten them.
        for suffix in ["-wal", "-shm"] {
            let mut journal = path.clone().into_os_string();
            journal.push(suffix);
            private::tighten(Path::new(&journal)).map_err(open_error)?;
        }
        Ok(Self {
            conn: Mutex::new(conn),
            path,
        })
    }

    /// The database at `path` as this process shares it: opened (and migrated) by the first
    /// session that asks, then the same handle for every later one while the file is the same
    /// (a file deleted or replaced since is opened again). Sessions of one process then take
    /// turns on one connection instead of meeting as rival writers, whose `SQLITE_BUSY`
    /// retries sleep: with four batch workers that made four slower than one.
    pub fn shared(path: impl AsRef<Path>) -> Result<Arc<Self>> {
        let identity = |path: &Path| {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
        };
        let path = path.as_ref();
        let mut opened = opened().lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((id, db)) = opened.get(path)
            && identity(path) == Some(*id)
        {
            return Ok(db.clone());
        }
        let db = Arc::new(Self::open(path)?);
        match identity(path) {
            Some(id) => {
                opened.insert(path.to_path_buf(), (id, db.clone()));
            }
            None => {
                opened.remove(path);
            }
        }
        Ok(db)
    }

    /// Lets go of the process's shared handles (at exit: the last connection to close
    /// checkpoints the write-ahead log and removes it, so the next start has none to replay).
    pub fn release_shared() {
        opened()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// A private database in memory, for tests and throw-away sessions.
    pub fn open_in_memory() -> Result<Self> {
        let path = PathBuf::from(":memory:");
        let mut conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        schema::prepare(&mut conn, &path)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path,
        })
    }

    /// Where the database lives (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs SQLite's and both FTS indexes' consistency checks; returns the
    /// problems found (none means healthy).
    pub fn integrity_check(&self) -> Result<Vec<String>> {
        self.write(|tx| {
            // The check compares the indexes with every message, waiting ones included.
            crate::indexing::index_waiting(tx)?;
            let mut problems: Vec<String> = tx
                .prepare("PRAGMA integrity_check")?
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<_>>()?;
            problems.retain(|line| line != "ok");
            for table in ["messages_fts", "messages_trigram"] {
                // Compares the index with messages.content; fails if they differ.
                let check =
                    format!("INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)");
                if let Err(error) = tx.execute(&check, []) {
                    problems.push(format!("{table}: {error}"));
                }
            }
            Ok(problems)
        })
    }

    /// Runs `body` in a write transaction (see [`retry::write`]).
    pub(crate) fn write<T>(&self, body: impl FnMut(&Transaction<'_>) -> Result<T>) -> Result<T> {
        retry::write(&mut self.lock(), body)
    }

    /// Runs `body` in a read transaction, so several queries see one snapshot.
    pub(crate) fn read<T>(&self, mut body: impl FnMut(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        retry::with_retry(|| {
            let tx = conn.transaction()?;
            let value = body(&tx)?;
            tx.finish()?;
            Ok(value)
        })
    }

    /// The connection. A panic while it was held leaves no open transaction
    /// (dropping one rolls it back), so a poisoned lock is still usable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Owner-only modes for the database and its directory, whatever the umask.
mod private {
    use std::io;
    use std::path::Path;

    /// Creates `dir` and missing parents, 0700.
    pub fn create_dir(dir: &Path) -> io::Result<()> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)
    }

    /// Creates `path` empty and 0600 unless it exists; an existing one is tightened.
    pub fn create_file(path: &Path) -> io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(path)?;
        tighten(path)
    }

    /// Takes other users' access away from `path`, if it exists.
    pub fn tighten(path: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = match std::fs::metadata(path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            let mode = meta.permissions().mode();
            if mode & 0o077 != 0 {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7700))?;
            }
        }
        #[cfg(not(unix))]
        let _ = path;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)] // test helper outside #[test]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_database_and_its_journal_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/sessions.sqlite");
        let db = SessionDb::open(&path).unwrap();
        db.write(|tx| {
            tx.execute_batch("CREATE TABLE IF NOT EXISTS t (x); INSERT INTO t VALUES (1);")?;
            Ok(())
        })
        .unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        for journal in ["sessions.sqlite-wal", "sessions.sqlite-shm"] {
            assert_eq!(
                mode(&dir.path().join("state").join(journal)),
                0o600,
                "{journal}"
            );
        }
        drop(db);

        // An old, readable file is tightened when opened.
        for file in ["sessions.sqlite", "sessions.sqlite-wal"] {
            let p = dir.path().join("state").join(file);
            if p.exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
        let _db = SessionDb::open(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_process_shares_one_handle_per_file_until_it_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.sqlite");
        let first = SessionDb::shared(&path).unwrap();
        let again = SessionDb::shared(&path).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "a second handle was opened");
        let other = SessionDb::shared(dir.path().join("other.sqlite")).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));

        // Deleted (and made again by the next open): a new handle on the new file.
        drop((first, again));
        std::fs::remove_file(&path).unwrap();
        let fresh = SessionDb::shared(&path).unwrap();
        assert!(path.exists());
        let last = SessionDb::shared(&path).unwrap();
        assert!(Arc::ptr_eq(&fresh, &last));
        drop((fresh, last));
        assert!(
            dir.path().join("sessions.sqlite-wal").exists(),
            "the shared handle is open until released"
        );
        SessionDb::release_shared();
        assert!(
            !dir.path().join("sessions.sqlite-wal").exists(),
            "released handles left the database open"
        );
    }
}
