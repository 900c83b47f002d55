//! The values the session database takes and returns.

use serde::{Deserialize, Serialize};
use talaria_kernel::{Message, Role};

use talaria_kernel::Principal;

/// What a new session is created with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NewSession {
    /// The session id, chosen by the caller.
    pub id: String,
    /// A human title, if one is known yet.
    pub title: Option<String>,
    /// The surface that started it (`cli`, `gateway:telegram`, `cron`, …).
    pub source: String,
    /// The model answering it.
    pub model: String,
    /// The working directory it ran in, for "latest session of this directory".
    pub cwd: Option<String>,
    /// The session this one continues after context compression.
    pub parent_session_id: Option<String>,
    /// Who it belongs to (continuations inherit it).
    pub principal: Principal,
}

/// A stored session with its totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// The session id.
    pub id: String,
    /// Human title.
    pub title: Option<String>,
    /// Surface that started it.
    pub source: String,
    /// Model answering it.
    pub model: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// The session this one continues.
    pub parent_session_id: Option<String>,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Time of the last message or usage record, unix milliseconds.
    pub updated_at: i64,
    /// Summed prompt tokens not served from cache.
    pub input_tokens: u64,
    /// Summed completion tokens.
    pub output_tokens: u64,
    /// Summed prompt tokens read from cache.
    pub cache_read_tokens: u64,
    /// Summed prompt tokens written to cache.
    pub cache_write_tokens: u64,
    /// Summed cost in USD.
    pub cost_usd: f64,
    /// Number of stored messages.
    pub message_count: u64,
    /// Who it belongs to.
    pub principal: Principal,
}

/// One line of a session listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// Human title.
    pub title: Option<String>,
    /// Surface that started it.
    pub source: String,
    /// Model answering it.
    pub model: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// The session this one continues.
    pub parent_session_id: Option<String>,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Last activity, unix milliseconds.
    pub updated_at: i64,
    /// Summed cost in USD.
    pub cost_usd: f64,
    /// Number of stored messages.
    pub message_count: u64,
    /// The start of the first user message, on one line.
    pub preview: Option<String>,
    /// Who it belongs to.
    pub principal: Principal,
}

/// Which sessions [`crate::SessionDb::list`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// At most this many, most recently active first.
    pub limit: usize,
    /// Only sessions that ran in this directory.
    pub cwd: Option<String>,
    /// Only sessions from this surface.
    pub source: Option<String>,
    /// Who asks: anyone but the owner sees only their own sessions.
    pub viewer: Principal,
}

impl Default for ListQuery {
    fn default() -> Self {
        Self {
            limit: 50,
            cwd: None,
            source: None,
            viewer: Principal::owner(),
        }
    }
}

/// A message as stored: its place in the session and when it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Position in the session, from 1, without gaps.
    pub seq: u64,
    /// Write time, unix milliseconds.
    pub created_at: i64,
    /// The message itself.
    #[serde(flatten)]
    pub message: Message,
}

/// How a search hit matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// Whole words (ranked by bm25).
    Word,
    /// Substrings, via the trigram index (newest first).
    Substring,
    /// A plain scan, for terms shorter than a trigram (unranked, newest first).
    Scan,
}

/// One message found by [`crate::SessionDb::search`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The session holding the message.
    pub session_id: String,
    /// The message's position in it.
    pub message_seq: u64,
    /// Its author.
    pub role: Role,
    /// The text around the match, matches wrapped in [`crate::MATCH_START`] /
    /// [`crate::MATCH_END`].
    pub snippet: String,
    /// Write time, unix milliseconds.
    pub created_at: i64,
    /// Relevance of a [`MatchKind::Word`] hit, higher is better (negated
    /// bm25); 0 for substring and scan hits, which come newest first.
    pub score: f64,
    /// How it matched; word hits come before substring hits before scans.
    pub kind: MatchKind,
}

/// One line of [`crate::SessionDb::export_jsonl`]: the session header first,
/// then every message in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExportLine {
    /// The session and its totals.
    Session(SessionRow),
    /// One message.
    Message(StoredMessage),
}

/// A session's messages ready to continue, after [`crate::repair_for_resume`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumedMessages {
    /// Every message, in order, with synthetic results for interrupted calls.
    pub messages: Vec<Message>,
    /// How many synthetic results were added (and persisted) this time.
    pub repaired: usize,
}
