//! Search indexing in batches. Inserting a message only records its id in `messages_unindexed`
//! (schema version 2); the waiting messages enter both FTS5 indexes together — before a search,
//! when a session ends, or once [`INDEX_BATCH`] are waiting — so a turn's writes stay cheap and
//! the indexes get one segment per batch instead of one per message.

use rusqlite::Transaction;

use crate::db::SessionDb;
use crate::error::Result;

/// How many messages may wait before an append indexes them in its own transaction.
pub const INDEX_BATCH: i64 = 64;

impl SessionDb {
    /// Indexes every waiting message for search; returns how many there were. Searches and
    /// the integrity check do this themselves; call it when a session ends.
    pub fn index_pending(&self) -> Result<usize> {
        // Asked before every search: when nothing waits, no write lock is taken (it could make a
        // search wait for another process's writes).
        if self.read(waiting)? == 0 {
            return Ok(0);
        }
        self.write(index_waiting)
    }
}

/// Every waiting message, by words. `CROSS JOIN` keeps the waiting ids the outer loop: without
/// it SQLite's planner scanned every message in the database to find the few waiting ones.
const INDEX_WORDS: &str = "INSERT INTO messages_fts (rowid, content)
    SELECT m.id, m.content FROM messages_unindexed u CROSS JOIN messages m ON m.id = u.id";

/// The waiting conversation (not tool results, see schema version 3), by trigrams.
const INDEX_TRIGRAMS: &str = "INSERT INTO messages_trigram (rowid, content)
    SELECT m.id, m.content FROM messages_unindexed u CROSS JOIN messages m ON m.id = u.id
    WHERE m.role <> 'tool'";

/// Indexes the waiting messages inside `tx`.
pub(crate) fn index_waiting(tx: &Transaction<'_>) -> Result<usize> {
    tx.prepare_cached(INDEX_WORDS)?.execute([])?;
    tx.prepare_cached(INDEX_TRIGRAMS)?.execute([])?;
    Ok(tx
        .prepare_cached("DELETE FROM messages_unindexed")?
        .execute([])?)
}

/// Indexes the waiting messages if a batch is full (called by appends).
pub(crate) fn index_if_batch_full(tx: &Transaction<'_>) -> Result<()> {
    if waiting(tx)? >= INDEX_BATCH {
        index_waiting(tx)?;
    }
    Ok(())
}

/// How many messages wait to be indexed.
pub(crate) fn waiting(tx: &Transaction<'_>) -> Result<i64> {
    Ok(tx
        .prepare_cached("SELECT count(*) FROM messages_unindexed")?
        .query_row([], |row| row.get(0))?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use talaria_kernel::Message;

    use super::*;
    use crate::rows::NewSession;

    fn session(id: &str) -> NewSession {
        NewSession {
            id: id.into(),
            ..NewSession::default()
        }
    }

    fn waiting_now(db: &SessionDb) -> i64 {
        db.read(waiting).unwrap()
    }

    fn found(db: &SessionDb, query: &str) -> usize {
        db.search(query, 10, &crate::Principal::owner())
            .unwrap()
            .len()
    }

    #[test]
    fn indexing_visits_only_the_waiting_messages() {
        let db = SessionDb::open_in_memory().unwrap();
        for n in 0..10 {
            db.append_or_create(&session("s"), &Message::user(format!("note {n}")))
                .unwrap();
        }
        let conn = db.lock();
        for sql in [INDEX_WORDS, INDEX_TRIGRAMS] {
            let select = &sql[sql.find("SELECT").unwrap()..];
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {select}"))
                .unwrap()
                .query_map([], |row| row.get(3))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert_eq!(plan[0], "SCAN u", "{plan:?}");
            assert!(
                plan[1].starts_with("SEARCH m USING INTEGER PRIMARY KEY"),
                "{plan:?}"
            );
        }
    }

    #[test]
    fn appends_wait_and_a_search_indexes_them_first() {
        let db = SessionDb::open_in_memory().unwrap();
        db.append_or_create(&session("s"), &Message::user("the zebra crossing"))
            .unwrap();
        db.append_or_create(&session("s"), &Message::assistant("noted"))
            .unwrap();
        assert_eq!(waiting_now(&db), 2);
        assert_eq!(found(&db, "zebra"), 1);
        assert_eq!(waiting_now(&db), 0);
        // Substring search goes through the trigram index, also filled.
        assert_eq!(found(&db, "ebra cross"), 1);
        assert!(db.integrity_check().unwrap().is_empty());
    }

    #[test]
    fn a_full_batch_is_indexed_by_the_append_that_fills_it() {
        let db = SessionDb::open_in_memory().unwrap();
        for n in 0..INDEX_BATCH - 1 {
            db.append_or_create(&session("s"), &Message::user(format!("note {n}")))
                .unwrap();
        }
        assert_eq!(waiting_now(&db), INDEX_BATCH - 1);
        db.append_or_create(&session("s"), &Message::user("the last one"))
            .unwrap();
        assert_eq!(waiting_now(&db), 0);
        assert_eq!(db.index_pending().unwrap(), 0);
    }

    #[test]
    fn deleting_waiting_and_indexed_messages_keeps_the_indexes_consistent() {
        let db = SessionDb::open_in_memory().unwrap();
        db.append_or_create(&session("old"), &Message::user("walrus one"))
            .unwrap();
        db.append_or_create(&session("old"), &Message::user("walrus two"))
            .unwrap();
        assert_eq!(db.index_pending().unwrap(), 2);
        db.append_or_create(&session("old"), &Message::user("walrus three"))
            .unwrap();
        // One indexed message and one waiting go with their session; the next message reuses
        // a freed id, which must be indexed as new, not taken for an indexed one.
        db.truncate("old", 1).unwrap();
        db.append_or_create(&session("new"), &Message::user("otter"))
            .unwrap();
        assert!(db.integrity_check().unwrap().is_empty());
        assert_eq!(found(&db, "walrus"), 1);
        assert_eq!(found(&db, "otter"), 1);
        assert!(db.delete("old").unwrap());
        assert!(db.delete("new").unwrap());
        assert_eq!(found(&db, "walrus"), 0);
        assert!(db.integrity_check().unwrap().is_empty());
    }

    fn tool_output(text: &str) -> Message {
        Message {
            role: talaria_kernel::Role::Tool,
            content: text.into(),
            tool_call_id: Some("call_1".into()),
            name: Some("read_file".into()),
            ..Message::default()
        }
    }

    fn kinds(db: &SessionDb, query: &str) -> Vec<crate::MatchKind> {
        db.search(query, 10, &crate::Principal::owner())
            .unwrap()
            .iter()
            .map(|hit| hit.kind)
            .collect()
    }

    #[test]
    fn tool_results_are_found_by_words_and_the_conversation_by_substrings_too() {
        use crate::MatchKind::{Substring, Word};
        let db = SessionDb::open_in_memory().unwrap();
        db.append_or_create(&session("s"), &Message::user("look at the flamingo"))
            .unwrap();
        db.append_or_create(&session("s"), &tool_output("pelican and flamingo"))
            .unwrap();
        assert_eq!(kinds(&db, "pelican"), [Word]);
        assert_eq!(kinds(&db, "flamingo"), [Word, Word]);
        // Parts of words: the user's message only.
        assert_eq!(kinds(&db, "laming"), [Substring]);
        assert_eq!(kinds(&db, "elica"), []);
        assert!(db.integrity_check().unwrap().is_empty());
        // Deleting either keeps both indexes consistent, also for the id reused next.
        db.truncate("s", 1).unwrap();
        db.append_or_create(&session("s"), &tool_output("heron"))
            .unwrap();
        assert!(db.integrity_check().unwrap().is_empty());
        db.truncate("s", 0).unwrap();
        assert!(db.integrity_check().unwrap().is_empty());
        assert_eq!(kinds(&db, "flamingo"), []);
    }

    #[test]
    fn a_version_2_file_drops_tool_results_from_the_substring_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.sqlite");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(crate::schema::V1).unwrap();
            conn.execute_batch(crate::schema::V2).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 2;
                 INSERT INTO sessions (id, source, model, created_at, updated_at)
                     VALUES ('s', 'cli', 'm', 0, 0);
                 INSERT INTO messages (session_id, seq, role, content, created_at)
                     VALUES ('s', 1, 'user', 'an older heron', 0),
                            ('s', 2, 'tool', 'egrets output', 0),
                            ('s', 3, 'user', 'a waiting ibis', 0);
                 DELETE FROM messages_unindexed WHERE id < 3;
                 INSERT INTO messages_fts (rowid, content)
                     SELECT id, content FROM messages WHERE id < 3;
                 INSERT INTO messages_trigram (rowid, content)
                     SELECT id, content FROM messages WHERE id < 3;",
            )
            .unwrap();
        }
        let db = SessionDb::open(&path).unwrap();
        assert_eq!(waiting_now(&db), 1, "the waiting message still waits");
        assert!(db.integrity_check().unwrap().is_empty());
        assert_eq!(kinds(&db, "lder her"), [crate::MatchKind::Substring]);
        assert_eq!(kinds(&db, "aiting ib"), [crate::MatchKind::Substring]);
        assert_eq!(kinds(&db, "egrets"), [crate::MatchKind::Word]);
        assert_eq!(kinds(&db, "gret"), []);
    }

    #[test]
    fn a_version_1_file_keeps_its_index_and_indexes_new_messages_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(crate::schema::V1).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 1;
                 INSERT INTO sessions (id, source, model, created_at, updated_at)
                     VALUES ('s', 'cli', 'm', 0, 0);
                 INSERT INTO messages (session_id, seq, role, content, created_at)
                     VALUES ('s', 1, 'user', 'an older heron', 0);",
            )
            .unwrap();
        }
        let db = SessionDb::open(&path).unwrap();
        assert_eq!(
            waiting_now(&db),
            0,
            "version 1 messages are indexed already"
        );
        assert_eq!(found(&db, "heron"), 1);
        db.append_or_create(&session("s"), &Message::user("a newer heron"))
            .unwrap();
        assert_eq!(waiting_now(&db), 1);
        assert_eq!(found(&db, "heron"), 2);
        assert!(db.integrity_check().unwrap().is_empty());
    }
}
