//! The database handle: opening, and running read and write transactions.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

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

impl SessionDb {
    /// Opens (creating it and its parent directories if needed) and migrates
    /// the database at `path`. A database from a newer Talaria is refused and
    /// left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_owned();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_owned(),
                source,
            })?;
        }
        let mut conn = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        schema::prepare(&mut conn, &path)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path,
        })
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
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
