//! Everything the session database can fail with.

use std::path::PathBuf;

/// A failure of the session database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The directory that should hold the database could not be created.
    #[error("cannot create directory {path} for the session database: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database file could not be created private, or its mode not tightened.
    #[error("cannot create session database {path} readable by its owner only: {source}")]
    Private {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database file could not be opened or prepared.
    #[error("cannot open session database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// The file was written by a newer Talaria; it is left untouched.
    #[error(
        "session database {path} has schema version {found}, but this build only understands \
         versions up to {supported}; upgrade Talaria to use it (the file was not modified)"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The file's `user_version`.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// Other writers held the write lock for longer than the retry budget.
    #[error(
        "session database stayed locked by other writers for {waited_ms} ms ({attempts} attempts)"
    )]
    Busy {
        /// Attempts made.
        attempts: u32,
        /// Time spent waiting, in milliseconds.
        waited_ms: u128,
    },
    /// No session has this id (or id prefix).
    #[error("no session matches {0:?}")]
    NotFound(String),
    /// A session with this id exists already.
    #[error("session {0:?} already exists")]
    AlreadyExists(String),
    /// Several sessions start with this prefix. The message counts them without naming
    /// them (an error may reach someone who must not learn other sessions' ids); a caller
    /// that may show them (the owner's command line) reads `candidates`.
    #[error(
        "session id prefix {prefix:?} is ambiguous: it matches {} sessions; give more of the id",
        candidates.len()
    )]
    Ambiguous {
        /// The prefix asked for.
        prefix: String,
        /// Matching ids (at most a handful, then "… and N more").
        candidates: Vec<String>,
    },
    /// A stored row cannot be turned back into a message.
    #[error("stored message {seq} of session {session_id:?} is malformed: {reason}")]
    Corrupt {
        /// The session.
        session_id: String,
        /// The message's sequence number.
        seq: i64,
        /// What is wrong with it.
        reason: String,
    },
    /// SQLite reported an error.
    #[error("session database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Writing an export failed.
    #[error("cannot write the session export: {0}")]
    Io(#[from] std::io::Error),
    /// Encoding a value as JSON failed.
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The blocking task running a database call failed (panicked or was cancelled).
    #[error("session database task failed: {0}")]
    Task(String),
}

impl StoreError {
    /// Whether this is SQLite's "database is busy/locked", the one failure a
    /// write retries.
    pub fn is_busy(&self) -> bool {
        match self {
            Self::Sqlite(error) | Self::Open { source: error, .. } => matches!(
                error.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ),
            _ => false,
        }
    }
}

/// The kernel's port speaks a plain message; the detail survives as text.
impl From<StoreError> for talaria_kernel::StoreError {
    fn from(error: StoreError) -> Self {
        talaria_kernel::StoreError(error.to_string())
    }
}

/// Results of the session database.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
