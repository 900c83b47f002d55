//! The schema and its migrations, versioned by `PRAGMA user_version`.
//!
//! Migration `n` (1-based) turns a version `n - 1` database into version `n`.
//! Pending migrations run in one `BEGIN IMMEDIATE` transaction on open, so a
//! crash mid-migration leaves the old version, and several processes opening
//! a fresh file at once apply them exactly once. A file whose version is newer
//! than [`SCHEMA_VERSION`] is refused before anything is written to it.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::config::DbConfig;

use crate::error::{Result, StoreError};
use crate::retry;

/// Version 1: sessions, messages, two FTS5 indexes kept in sync by triggers.
pub(crate) const V1: &str = r#"
CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY NOT NULL,
    title              TEXT,
    source             TEXT NOT NULL,
    model              TEXT NOT NULL,
    cwd                TEXT,
    -- No foreign key: a child must never be refused because its parent is
    -- missing (that would lose a turn); deleting a parent clears the link.
    parent_session_id  TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_updated ON sessions (updated_at);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);
CREATE INDEX sessions_by_parent ON sessions (parent_session_id);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      TEXT NOT NULL,
    reasoning    TEXT,
    tool_calls   TEXT,
    tool_call_id TEXT,
    name         TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);

-- Words (diacritics folded) for ranked search, trigrams for substrings and
-- scripts without spaces. Both index messages.content without a copy of it.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content = 'messages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_trigram USING fts5(
    content, content = 'messages', content_rowid = 'id', tokenize = 'trigram'
);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_trigram (messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_trigram (messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram (rowid, content) VALUES (new.id, new.content);
END;
"#;

/// Version 2: messages are indexed for search in batches ([`crate::indexing`]), not one by one
/// by a trigger: a message's FTS work was most of the cost of writing it. New messages wait in
/// `messages_unindexed`; the delete and update triggers touch the indexes only for messages they
/// hold (ids can be reused after a delete, so "which ids wait" is a table, not a watermark).
pub(crate) const V2: &str = r#"
CREATE TABLE messages_unindexed (id INTEGER PRIMARY KEY);

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;

CREATE TRIGGER messages_unindexed_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_unindexed (id) VALUES (new.id);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content)
        SELECT 'delete', old.id, old.content
        WHERE NOT EXISTS (SELECT 1 FROM messages_unindexed WHERE id = old.id);
    INSERT INTO messages_trigram (messages_trigram, rowid, content)
        SELECT 'delete', old.id, old.content
        WHERE NOT EXISTS (SELECT 1 FROM messages_unindexed WHERE id = old.id);
    DELETE FROM messages_unindexed WHERE id = old.id;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages
WHEN NOT EXISTS (SELECT 1 FROM messages_unindexed WHERE id = old.id) BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_trigram (messages_trigram, rowid, content)
        VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram (rowid, content) VALUES (new.id, new.content);
END;
"#;

/// Version 3: the trigram (substring) index holds the conversation — user, assistant and system
/// messages — and no longer tool results. Tool output (file contents, command output) was most
/// of the indexed text and trigram indexing most of the cost of storing it; tool results stay
/// in the word index. The index reads its text through a view of the conversation, so FTS5's
/// own consistency check still compares it with exactly what it should hold.
const V3: &str = r#"
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
DROP TABLE messages_trigram;

CREATE VIEW messages_conversation AS SELECT id, content FROM messages WHERE role <> 'tool';
CREATE VIRTUAL TABLE messages_trigram USING fts5(
    content, content = 'messages_conversation', content_rowid = 'id', tokenize = 'trigram'
);
INSERT INTO messages_trigram (rowid, content)
    SELECT id, content FROM messages_conversation
    WHERE id NOT IN (SELECT id FROM messages_unindexed);

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content)
        SELECT 'delete', old.id, old.content
        WHERE NOT EXISTS (SELECT 1 FROM messages_unindexed WHERE id = old.id);
    INSERT INTO messages_trigram (messages_trigram, rowid, content)
        SELECT 'delete', old.id, old.content
        WHERE old.role <> 'tool'
          AND NOT EXISTS (SELECT 1 FROM messages_unindexed WHERE id = old.id);
    DELETE FROM messages_unindexed WHERE id = old.id;
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages
WHEN NOT EXISTS (SELECT 1 FROM messages_unindexed WHERE id = old.id) BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram (messages_trigram, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.role <> 'tool';
    INSERT INTO messages_trigram (rowid, content)
        SELECT new.id, new.content WHERE new.role <> 'tool';
END;
"#;

/// Version 4: an assistant message keeps the provider state its wire format needs back on later
/// requests (`Message::provider_state`, JSON `{"wire", "data"}`), such as the OpenAI Responses
/// API's encrypted reasoning items. Older rows have none.
const V4: &str = r#"
ALTER TABLE messages ADD COLUMN provider_state TEXT;
"#;

/// Version 5: a user message keeps the images attached to it (`Message::images`, a JSON list
/// of references: a file in the profile's image store or a URL; never the bytes), so a resumed
/// session sends them again. Older rows have none.
const V5: &str = r#"
ALTER TABLE messages ADD COLUMN images TEXT;
"#;

/// Version 6: every session belongs to a principal (`Principal`: the owner, a chat user or
/// group, an API or MCP client, a webhook route); lookups of anyone but the owner see only
/// their own. Sessions from before belong to the owner.
const V6: &str = r#"
ALTER TABLE sessions ADD COLUMN principal TEXT NOT NULL DEFAULT 'owner';
CREATE INDEX sessions_principal ON sessions (principal, updated_at);
"#;

/// Every migration, oldest first; the schema version is their count.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Sets the per-connection pragmas, refuses newer files and migrates older
/// ones. `path` is only used in error messages.
pub(crate) fn prepare(conn: &mut Connection, path: &Path) -> Result<()> {
    let open_error = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    // Connection settings only: nothing here writes to the file.
    conn.busy_timeout(retry::BUSY_TIMEOUT).map_err(open_error)?;
    // Query plans must not depend on bound values: otherwise SQLite (built with STAT4) re-prepares
    // a statement such as `... WHERE session_id = ?1` each time it is bound anew after a write,
    // which was most of the CPU time of an append.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(open_error)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(open_error)?;
    let found = refuse_newer(conn, path)?;
    // WAL lets readers run beside the one writer; it is a property of the file
    // and switching needs a moment of exclusive access, hence the retry.
    retry::with_retry(|| {
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(StoreError::from)
    })?;
    // In WAL mode NORMAL survives any process crash; only an OS crash or power
    // loss can drop the last commits (the database stays consistent).
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(open_error)?;
    if found < SCHEMA_VERSION {
        migrate(conn, path)?;
    }
    Ok(())
}

/// Fails if the file's schema is newer than this build's.
fn refuse_newer(conn: &Connection, path: &Path) -> Result<i64> {
    let found: i64 =
        retry::with_retry(|| Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(found)
}

/// Applies the pending migrations in one write transaction.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    retry::write(conn, |tx| {
        // Re-read under the write lock: another process may have migrated.
        let current = refuse_newer(tx, path)?;
        for (index, sql) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", index as i64 + 1)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use talaria_kernel::{Message, ProviderState};

    use crate::{NewSession, SessionDb};

    #[test]
    fn a_version_3_file_gains_provider_state_and_its_messages_read_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.sqlite");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            for sql in [super::V1, super::V2, super::V3] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 3;
                 INSERT INTO sessions (id, source, model, created_at, updated_at)
                     VALUES ('s', 'cli', 'm', 0, 0);
                 INSERT INTO messages (session_id, seq, role, content, created_at)
                     VALUES ('s', 1, 'assistant', 'an older answer', 0);",
            )
            .unwrap();
        }
        let db = SessionDb::open(&path).unwrap();
        assert_eq!(
            db.messages("s").unwrap(),
            [Message::assistant("an older answer")]
        );
        let with_state = Message {
            provider_state: Some(ProviderState {
                wire: "openai-responses".into(),
                data: serde_json::json!({"reasoning": [{"type": "reasoning", "id": "rs_1"}]}),
            }),
            ..Message::assistant("a newer answer")
        };
        db.ensure_session(&NewSession {
            id: "s".into(),
            ..NewSession::default()
        })
        .unwrap();
        db.append("s", &with_state).unwrap();
        assert_eq!(db.messages("s").unwrap()[1], with_state);
        assert!(db.integrity_check().unwrap().is_empty());
    }

    #[test]
    fn a_version_4_file_gains_images_and_its_messages_read_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v4.sqlite");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            for sql in [super::V1, super::V2, super::V3, super::V4] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 4;
                 INSERT INTO sessions (id, source, model, created_at, updated_at)
                     VALUES ('s', 'cli', 'm', 0, 0);
                 INSERT INTO messages (session_id, seq, role, content, created_at)
                     VALUES ('s', 1, 'user', 'an older question', 0);",
            )
            .unwrap();
        }
        let db = SessionDb::open(&path).unwrap();
        assert_eq!(
            db.messages("s").unwrap(),
            [Message::user("an older question")]
        );
        let with_image = Message::user_with_images(
            "and this?",
            vec![talaria_kernel::ImageRef::File {
                path: "/home/u/.talaria/images/ab.png".into(),
                media_type: "image/png".into(),
            }],
        );
        db.ensure_session(&NewSession {
            id: "s".into(),
            ..NewSession::default()
        })
        .unwrap();
        db.append("s", &with_image).unwrap();
        assert_eq!(db.messages("s").unwrap()[1], with_image);
        assert!(db.integrity_check().unwrap().is_empty());
    }
}
