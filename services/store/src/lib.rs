//! Talaria's session database: every session and message in one SQLite file
//! per profile, written one message at a time as the conversation happens.
//!
//! - [`SessionDb`] opens (and migrates) the file and is the whole API:
//!   create/append/usage/title/delete, session rows and listings, messages,
//!   full-text search, JSON-lines export, short-id resolution, resume repair.
//! - [`SqliteSessionStore`] is the kernel's [`talaria_kernel::SessionStore`]
//!   port over it.
//! - [`repair_for_resume`] makes a conversation cut off mid-tool valid to send
//!   again.
//!
//! Several processes may write the same file at once (WAL, `BEGIN IMMEDIATE`,
//! jittered retry); a process killed at any point loses nothing it had
//! committed.

#![warn(missing_docs)]

mod codec;
mod db;
mod error;
mod export;
mod indexing;
mod list;
mod port;
mod query;
mod read;
mod resume;
mod retry;
mod rows;
mod schema;
mod search;
mod snippet;
mod write;

pub use db::SessionDb;

/// A new session id: the Unix time `now` in seconds and 48 random bits. Sessions of many
/// chats start in the same second (a gateway's burst); 24 random bits let two of them meet
/// about once in a thousand-chat burst, and the second chat's turn was then lost.
pub fn session_id_at(now: u64) -> String {
    format!("{now}_{:012x}", fastrand::u64(..1 << 48))
}

/// [`session_id_at`] now.
pub fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    session_id_at(now.as_secs())
}
pub use error::{Result, StoreError};
pub use port::SqliteSessionStore;
pub use resume::{INTERRUPTED_RESULT, repair_for_resume};
pub use rows::{
    ExportLine, ListQuery, MatchKind, NewSession, ResumedMessages, SearchHit, SessionRow,
    SessionSummary, StoredMessage,
};
pub use schema::SCHEMA_VERSION;
pub use search::{MATCH_END, MATCH_START};
pub use talaria_kernel::Principal;
