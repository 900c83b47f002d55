//! Reading one session: its row, its messages, its id from a prefix.

use rusqlite::{OptionalExtension, Row, Transaction};
use talaria_kernel::Message;

use crate::codec::{MESSAGE_COLUMNS, RawMessage, from_sql_int};
use crate::db::SessionDb;
use crate::error::{Result, StoreError};
use crate::rows::{SessionRow, StoredMessage};
use talaria_kernel::Principal;

/// How many candidates an ambiguous prefix error names.
const MAX_CANDIDATES: usize = 8;

impl SessionDb {
    /// The session with this exact id, with its totals.
    pub fn session(&self, session_id: &str) -> Result<Option<SessionRow>> {
        self.read(|tx| session_row(tx, session_id))
    }

    /// The session's messages in order, tool calls restored. Fails with
    /// [`StoreError::NotFound`] for an unknown session.
    pub fn messages(&self, session_id: &str) -> Result<Vec<Message>> {
        Ok(self
            .stored_messages(session_id)?
            .into_iter()
            .map(|stored| stored.message)
            .collect())
    }

    /// Like [`SessionDb::messages`], with each message's sequence number and
    /// write time.
    pub fn stored_messages(&self, session_id: &str) -> Result<Vec<StoredMessage>> {
        self.read(|tx| {
            require_session(tx, session_id)?;
            stored_messages(tx, session_id)
        })
    }

    /// The session with this exact id, if `viewer` may see it (the owner sees every one);
    /// another principal's session is as absent as a missing one.
    pub fn session_as(&self, session_id: &str, viewer: &Principal) -> Result<Option<SessionRow>> {
        Ok(self
            .session(session_id)?
            .filter(|row| viewer.sees(row.principal.as_str())))
    }

    /// The full id of the one session `viewer` may see whose id is `prefix` or starts with
    /// it. An exact match wins; several matches are [`StoreError::Ambiguous`] (naming only
    /// sessions the viewer may see), none is [`StoreError::NotFound`].
    pub fn resolve_id(&self, prefix: &str, viewer: &Principal) -> Result<String> {
        let filter = viewer.filter();
        self.read(|tx| {
            let exact = tx
                .prepare_cached(
                    "SELECT id FROM sessions WHERE id = ?1 AND (?2 IS NULL OR principal = ?2)",
                )?
                .query_row(rusqlite::params![prefix, filter], |row| {
                    row.get::<_, String>(0)
                })
                .optional()?;
            if let Some(id) = exact {
                return Ok(id);
            }
            let mut statement = tx.prepare_cached(
                "SELECT id FROM sessions WHERE substr(id, 1, length(?1)) = ?1
                   AND (?2 IS NULL OR principal = ?2)
                 ORDER BY updated_at DESC, id",
            )?;
            let mut matches: Vec<String> = statement
                .query_map(rusqlite::params![prefix, filter], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            match matches.len() {
                0 => Err(StoreError::NotFound(prefix.to_owned())),
                1 => Ok(matches.remove(0)),
                count => {
                    matches.truncate(MAX_CANDIDATES);
                    if count > MAX_CANDIDATES {
                        matches.push(format!("… and {} more", count - MAX_CANDIDATES));
                    }
                    Err(StoreError::Ambiguous {
                        prefix: prefix.to_owned(),
                        candidates: matches,
                    })
                }
            }
        })
    }

    /// Where the conversation of session `id` goes on now: its newest
    /// continuation after a compression (a child of the same source; a
    /// delegated task's child has source `child`), followed to the end;
    /// `id` itself when it has none.
    pub fn latest_continuation(&self, id: &str) -> Result<String> {
        self.read(|tx| {
            let mut statement = tx.prepare_cached(
                "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
                 WHERE p.id = ?1 AND c.source = p.source
                 ORDER BY c.created_at DESC, c.id DESC LIMIT 1",
            )?;
            let mut current = id.to_owned();
            // Bounded: a corrupted store must not loop forever.
            for _ in 0..10_000 {
                match statement
                    .query_row([&current], |row| row.get::<_, String>(0))
                    .optional()?
                {
                    Some(next) if next != current => current = next,
                    _ => break,
                }
            }
            Ok(current)
        })
    }
}

/// The columns [`session_from_row`] reads, for a `sessions s` alias.
const SESSION_COLUMNS: &str = "s.id, s.title, s.source, s.model, s.cwd, s.parent_session_id,
    s.created_at, s.updated_at, s.input_tokens, s.output_tokens, s.cache_read_tokens,
    s.cache_write_tokens, s.cost_usd,
    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id), s.principal";

fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: row.get(0)?,
        title: row.get(1)?,
        source: row.get(2)?,
        model: row.get(3)?,
        cwd: row.get(4)?,
        parent_session_id: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        input_tokens: from_sql_int(row.get(8)?),
        output_tokens: from_sql_int(row.get(9)?),
        cache_read_tokens: from_sql_int(row.get(10)?),
        cache_write_tokens: from_sql_int(row.get(11)?),
        cost_usd: row.get(12)?,
        message_count: from_sql_int(row.get(13)?),
        principal: Principal::from_stored(row.get::<_, String>(14)?),
    })
}

/// The session row, if it exists.
pub(crate) fn session_row(tx: &Transaction<'_>, session_id: &str) -> Result<Option<SessionRow>> {
    let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?1");
    Ok(tx
        .prepare_cached(&sql)?
        .query_row([session_id], session_from_row)
        .optional()?)
}

/// Fails with [`StoreError::NotFound`] unless the session exists.
pub(crate) fn require_session(tx: &Transaction<'_>, session_id: &str) -> Result<()> {
    tx.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .query_row([session_id], |_| Ok(()))
        .optional()?
        .ok_or_else(|| StoreError::NotFound(session_id.to_owned()))
}

/// Every message of the session, in order.
pub(crate) fn stored_messages(
    tx: &Transaction<'_>,
    session_id: &str,
) -> Result<Vec<StoredMessage>> {
    let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 ORDER BY seq");
    let raw: Vec<RawMessage> = tx
        .prepare_cached(&sql)?
        .query_map([session_id], RawMessage::from_row)?
        .collect::<rusqlite::Result<_>>()?;
    raw.into_iter().map(|row| row.decode(session_id)).collect()
}
