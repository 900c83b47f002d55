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
