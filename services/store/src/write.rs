//! Everything that changes the database: sessions, messages, usage, deletion.
//! Each call is one transaction, committed before it returns.

use rusqlite::{OptionalExtension, Transaction, params};
use talaria_kernel::{Message, Usage};

use crate::codec::{
    encode_images, encode_provider_state, encode_tool_calls, now_ms, role_name, to_sql_int,
};
use crate::db::SessionDb;
use crate::error::{Result, StoreError};
use crate::rows::NewSession;
use talaria_kernel::Principal;

impl SessionDb {
    /// Creates a session; fails with [`StoreError::AlreadyExists`] if the id is taken.
    pub fn create_session(&self, session: &NewSession) -> Result<()> {
        let now = now_ms();
        self.write(|tx| {
            if insert_session(tx, session, now)? {
                Ok(())
            } else {
                Err(StoreError::AlreadyExists(session.id.clone()))
            }
        })
    }

    /// Creates the session unless it exists; returns whether it was created.
    pub fn ensure_session(&self, session: &NewSession) -> Result<bool> {
        let now = now_ms();
        self.write(|tx| insert_session(tx, session, now))
    }

    /// Persists one message at the end of a session and returns its sequence
    /// number (1 for the first). Fails with [`StoreError::NotFound`] if the
    /// session does not exist.
    pub fn append(&self, session_id: &str, message: &Message) -> Result<u64> {
        self.append_batch(session_id, std::slice::from_ref(message))
    }

    /// Like [`SessionDb::append`], creating the session first (in the same
    /// transaction) if it does not exist yet.
    pub fn append_or_create(&self, session: &NewSession, message: &Message) -> Result<u64> {
        let encoded = encode_all(std::slice::from_ref(message))?;
        let now = now_ms();
        self.write(|tx| insert_one_creating(tx, session, message, &encoded, now))
    }

    /// Appends several messages in one transaction (imports, fixtures);
    /// returns the sequence number of the last message of the session.
    pub fn append_batch(&self, session_id: &str, messages: &[Message]) -> Result<u64> {
        let encoded = encode_all(messages)?;
        let now = now_ms();
        self.write(|tx| insert_messages(tx, session_id, messages, &encoded, now))
    }

    /// Adds one model call's usage and cost to the session's totals.
    pub fn record_usage(&self, session_id: &str, usage: &Usage, cost_usd: f64) -> Result<()> {
        let now = now_ms();
        self.write(|tx| add_usage(tx, session_id, usage, cost_usd, now))
    }

    /// Appends a model's reply and adds its call's usage and cost to the totals,
    /// in one transaction, creating the session first if needed; returns the
    /// reply's sequence number.
    pub fn append_reply_or_create(
        &self,
        session: &NewSession,
        message: &Message,
        usage: &Usage,
        cost_usd: f64,
    ) -> Result<u64> {
        let encoded = encode_all(std::slice::from_ref(message))?;
        let now = now_ms();
        self.write(|tx| {
            let seq = insert_one_creating(tx, session, message, &encoded, now)?;
            add_usage(tx, &session.id, usage, cost_usd, now)?;
            Ok(seq)
        })
    }

    /// Sets (or with `None` clears) a session's title.
    pub fn set_title(&self, session_id: &str, title: Option<&str>) -> Result<()> {
        self.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE sessions SET title = ?2 WHERE id = ?1")?
                .execute(params![session_id, title])?;
            if changed == 0 {
                return Err(StoreError::NotFound(session_id.to_owned()));
            }
            Ok(())
        })
    }

    /// Keeps the first `keep` messages of a session and deletes the rest
    /// (`/undo`, `/retry`); returns how many were deleted.
    pub fn truncate(&self, session_id: &str, keep: u64) -> Result<usize> {
        let keep = to_sql_int(keep);
        self.write(|tx| {
            // Row by row so the FTS triggers remove the index entries too.
            Ok(tx
                .prepare_cached("DELETE FROM messages WHERE session_id = ?1 AND seq > ?2")?
                .execute(params![session_id, keep])?)
        })
    }

    /// Gives `principal` a session the gateway started for it before sessions had principals
    /// (stored as the owner's, from a `gateway:` source); any other session is left alone.
    /// Returns whether it was given.
    pub fn claim_legacy_chat_session(
        &self,
        session_id: &str,
        principal: &Principal,
    ) -> Result<bool> {
        self.write(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE sessions SET principal = ?2
                     WHERE id = ?1 AND principal = 'owner' AND source LIKE 'gateway:%'",
                )?
                .execute(params![session_id, principal.as_str()])?;
            Ok(changed > 0)
        })
    }

    /// Deletes a session, its messages and their search entries; sessions that
    /// continued it lose their parent link. Returns whether it existed.
    pub fn delete(&self, session_id: &str) -> Result<bool> {
        self.write(|tx| {
            // Row by row so the FTS triggers remove the index entries too.
            tx.execute("DELETE FROM messages WHERE session_id = ?1", [session_id])?;
            tx.execute(
                "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?1",
                [session_id],
            )?;
            Ok(tx.execute("DELETE FROM sessions WHERE id = ?1", [session_id])? > 0)
        })
    }
}

/// Tool calls as JSON, encoded once before the (possibly retried) transaction.
fn encode_all(messages: &[Message]) -> Result<Vec<Option<String>>> {
    messages
        .iter()
        .map(|message| encode_tool_calls(&message.tool_calls))
        .collect()
}

/// Inserts the session row unless the id exists; returns whether it did.
fn insert_session(tx: &Transaction<'_>, session: &NewSession, now: i64) -> Result<bool> {
    let inserted = tx
        .prepare_cached(
            "INSERT INTO sessions (id, title, source, model, cwd, parent_session_id, created_at,
                                   updated_at, principal)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)
             ON CONFLICT (id) DO NOTHING",
        )?
        .execute(params![
            session.id,
            session.title,
            session.source,
            session.model,
            session.cwd,
            session.parent_session_id,
            now,
            session.principal.as_str(),
        ])?;
    Ok(inserted > 0)
}

/// Appends one message, creating its session first if needed; returns its seq.
fn insert_one_creating(
    tx: &Transaction<'_>,
    session: &NewSession,
    message: &Message,
    tool_calls: &[Option<String>],
    now: i64,
) -> Result<u64> {
    insert_session(tx, session, now)?;
    insert_messages(
        tx,
        &session.id,
        std::slice::from_ref(message),
        tool_calls,
        now,
    )
}

/// The session's last sequence number (0 before the first message).
const LAST_SEQ: &str = "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?1";

/// Appends `messages` after the session's last one; returns the last seq.
pub(crate) fn insert_messages(
    tx: &Transaction<'_>,
    session_id: &str,
    messages: &[Message],
    tool_calls: &[Option<String>],
    now: i64,
) -> Result<u64> {
    touch(tx, session_id, now)?;
    // Safe without a race: BEGIN IMMEDIATE holds the write lock until commit.
    let last: i64 = tx
        .prepare_cached(LAST_SEQ)?
        .query_row([session_id], |row| row.get(0))?;
    let mut seq = last;
    for (message, calls) in messages.iter().zip(tool_calls) {
        seq += 1;
        insert_message_at(tx, session_id, seq, message, calls.as_deref(), now)?;
    }
    crate::indexing::index_if_batch_full(tx)?;
    Ok(u64::try_from(seq).unwrap_or(0))
}

/// Inserts one message with a given sequence number.
pub(crate) fn insert_message_at(
    tx: &Transaction<'_>,
    session_id: &str,
    seq: i64,
    message: &Message,
    tool_calls: Option<&str>,
    now: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO messages
             (session_id, seq, role, content, reasoning, tool_calls, tool_call_id, name, is_error,
              created_at, provider_state, images)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        session_id,
        seq,
        role_name(message.role),
        message.content,
        message.reasoning,
        tool_calls,
        message.tool_call_id,
        message.name,
        message.is_error,
        now,
        // Encoded here rather than before the transaction like the tool calls: only assistant
        // messages of some wire formats have any.
        encode_provider_state(message)?,
        encode_images(message)?,
    ])?;
    Ok(())
}

/// Marks the session active now; fails if it does not exist.
fn touch(tx: &Transaction<'_>, session_id: &str, now: i64) -> Result<()> {
    let found = tx
        .prepare_cached(
            "UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1 RETURNING 1",
        )?
        .query_row(params![session_id, now], |_| Ok(()))
        .optional()?;
    found.ok_or_else(|| StoreError::NotFound(session_id.to_owned()))
}

/// Adds usage and cost to the totals and marks the session active now; fails
/// if it does not exist.
fn add_usage(
    tx: &Transaction<'_>,
    session_id: &str,
    usage: &Usage,
    cost_usd: f64,
    now: i64,
) -> Result<()> {
    let found = tx
        .prepare_cached(
            "UPDATE sessions SET
                 input_tokens = input_tokens + ?2,
                 output_tokens = output_tokens + ?3,
                 cache_read_tokens = cache_read_tokens + ?4,
                 cache_write_tokens = cache_write_tokens + ?5,
                 cost_usd = cost_usd + ?6,
                 updated_at = max(updated_at, ?7)
             WHERE id = ?1 RETURNING 1",
        )?
        .query_row(
            params![
                session_id,
                to_sql_int(usage.input_tokens),
                to_sql_int(usage.output_tokens),
                to_sql_int(usage.cache_read_tokens),
                to_sql_int(usage.cache_write_tokens),
                // NaN or infinity would poison the total forever.
                if cost_usd.is_finite() { cost_usd } else { 0.0 },
                now
            ],
            |_| Ok(()),
        )
        .optional()?;
    found.ok_or_else(|| StoreError::NotFound(session_id.to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rusqlite::StatementStatus;

    use super::*;

    /// The cached statements of an append are compiled once per connection, not again
    /// at every append (see the query planner setting in `schema::prepare`).
    #[test]
    fn appends_reuse_their_compiled_statements() {
        let db = SessionDb::open_in_memory().unwrap();
        let session = NewSession {
            id: "s".into(),
            ..NewSession::default()
        };
        for _ in 0..4 {
            db.append_or_create(&session, &Message::user("x")).unwrap();
        }
        let conn = db.lock();
        let mut last_seq = conn.prepare_cached(LAST_SEQ).unwrap();
        let seq: i64 = last_seq.query_row(["s"], |row| row.get(0)).unwrap();
        assert_eq!(seq, 4);
        assert_eq!(last_seq.get_status(StatementStatus::RePrepare), 0);
    }
}
