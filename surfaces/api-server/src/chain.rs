//! Which stored session a resent chat history continues. Chat Completions
//! clients send the whole conversation each time; the server keeps, per API
//! key, a hash chain over each session's user and assistant texts, one entry
//! at the end of every turn: hash of the texts so far → (session, stored
//! message count). A request whose history (all but its last user message)
//! hashes to an entry of a session that has not moved on continues it; else a
//! new session forks from the longest matching prefix, so two chats that both
//! open with "hi" never share a session.
//!
//! The table lives in its own SQLite file in the profile home, not in the
//! session database: it is an index the server can lose (a lost entry only
//! costs a fork), and the session schema stays the store's alone.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use talaria_kernel::{Message, Role};

use crate::auth::{KeyId, hex};

/// The mapping database failed.
#[derive(Debug, thiserror::Error)]
#[error("the API server's session map ({path}): {source}")]
pub struct MapError {
    path: PathBuf,
    source: rusqlite::Error,
}

/// One text of a conversation as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    /// User or assistant.
    pub role: Role,
    /// The text, as sent or answered.
    pub text: String,
}

impl Text {
    /// A user text.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            text: text.into(),
        }
    }

    /// An assistant text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            text: text.into(),
        }
    }
}

/// The chain over `texts`: one hash per text, each covering all before it.
pub fn chain(key: &KeyId, texts: &[Text]) -> Vec<String> {
    let mut state: [u8; 32] = Sha256::digest(key.digest.as_bytes()).into();
    texts
        .iter()
        .map(|text| {
            let mut hasher = Sha256::new();
            hasher.update(state);
            hasher.update(text.role.as_str().as_bytes());
            hasher.update([0]);
            // Whitespace at the ends differs between clients that trim and those that do not.
            hasher.update(text.text.trim().as_bytes());
            state = hasher.finalize().into();
            hex(&state)
        })
        .collect()
}

/// A stored session's texts as a client saw them (each user message and the
/// last assistant text before the next one), with the stored message count at
/// the end of each turn.
pub fn stored_turns(messages: &[Message]) -> (Vec<Text>, Vec<(usize, usize)>) {
    let mut texts = Vec::new();
    // (index into texts of the turn's assistant text, stored count after it).
    let mut ends = Vec::new();
    let mut answer: Option<(String, usize)> = None;
    let mut close = |texts: &mut Vec<Text>, answer: &mut Option<(String, usize)>| {
        if let Some((text, count)) = answer.take() {
            texts.push(Text::assistant(text));
            ends.push((texts.len(), count));
        }
    };
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::User => {
                close(&mut texts, &mut answer);
                texts.push(Text::user(message.content.clone()));
            }
            Role::Assistant if !message.content.trim().is_empty() => {
                answer = Some((message.content.clone(), index + 1));
            }
            _ => {}
        }
    }
    close(&mut texts, &mut answer);
    (texts, ends)
}

/// Where a request's conversation goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Continue this session.
    Continue(String),
    /// A new session: the first `keep` stored messages of `parent` (none when
    /// there is no parent), then `seed` (the client's texts beyond the match).
    Fork {
        /// The session the match was found in.
        parent: Option<String>,
        /// How many of its stored messages to copy.
        keep: usize,
        /// The client's texts after the matched prefix.
        seed: Vec<Text>,
    },
}

/// The mapping table.
#[derive(Debug)]
pub struct SessionMap {
    path: PathBuf,
}

impl SessionMap {
    /// The map in `path` (created on first use).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    fn fail(&self, source: rusqlite::Error) -> MapError {
        MapError {
            path: self.path.clone(),
            source,
        }
    }

    /// Opened per call: runs happen on their own threads, and opening is cheap.
    fn open(&self) -> Result<Connection, MapError> {
        open(&self.path).map_err(|e| self.fail(e))
    }

    /// Where `history` (the client's texts before its last user message)
    /// goes. `current` tells a session's stored message count now, and
    /// whether it may be continued (it is not busy).
    pub fn place(
        &self,
        key: &KeyId,
        history: &[Text],
        current: impl Fn(&str) -> Option<(usize, bool)>,
    ) -> Result<Placement, MapError> {
        let hashes = chain(key, history);
        let connection = self.open()?;
        let mut query = connection
            .prepare_cached(
                "SELECT session_id, count FROM chain WHERE key_id = ?1 AND hash = ?2 \
                 ORDER BY created_at DESC, rowid DESC",
            )
            .map_err(|e| self.fail(e))?;
        // Only prefixes ending with an assistant text are turn boundaries.
        for end in (1..=history.len()).rev() {
            if history[end - 1].role != Role::Assistant {
                continue;
            }
            let rows: Vec<(String, i64)> = query
                .query_map(params![key.digest, hashes[end - 1]], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .and_then(Iterator::collect)
                .map_err(|e| self.fail(e))?;
            let rows: Vec<(String, usize)> = rows
                .into_iter()
                .map(|(id, count)| (id, usize::try_from(count).unwrap_or(0)))
                .filter(|(id, _)| current(id).is_some())
                .collect();
            if end == history.len()
                && let Some((id, _)) = rows
                    .iter()
                    .find(|(id, count)| current(id) == Some((*count, true)))
            {
                return Ok(Placement::Continue(id.clone()));
            }
            if let Some((id, count)) = rows.into_iter().next() {
                return Ok(Placement::Fork {
                    parent: Some(id),
                    keep: count,
                    seed: history[end..].to_vec(),
                });
            }
        }
        Ok(Placement::Fork {
            parent: None,
            keep: 0,
            seed: history.to_vec(),
        })
    }

    /// Records every turn boundary of `session` (its stored `messages`).
    pub fn record(&self, key: &KeyId, session: &str, messages: &[Message]) -> Result<(), MapError> {
        let (texts, ends) = stored_turns(messages);
        let hashes = chain(key, &texts);
        let mut connection = self.open()?;
        let tx = connection.transaction().map_err(|e| self.fail(e))?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO chain (key_id, hash, session_id, count, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.fail(e))?;
            let now = now_ms();
            for (end, count) in ends {
                let count = i64::try_from(count).unwrap_or(i64::MAX);
                insert
                    .execute(params![key.digest, hashes[end - 1], session, count, now])
                    .map_err(|e| self.fail(e))?;
            }
        }
        tx.commit().map_err(|e| self.fail(e))
    }

    /// Stores a Responses API object.
    pub fn put_response(
        &self,
        key: &KeyId,
        id: &str,
        session: &str,
        body: &serde_json::Value,
    ) -> Result<(), MapError> {
        self.open()?
            .execute(
                "INSERT OR REPLACE INTO responses (id, key_id, session_id, body, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, key.digest, session, body.to_string(), now_ms()],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    /// A stored response of this key: its session and object.
    pub fn response(
        &self,
        key: &KeyId,
        id: &str,
    ) -> Result<Option<(String, serde_json::Value)>, MapError> {
        let row: Option<(String, String)> = self
            .open()?
            .query_row(
                "SELECT session_id, body FROM responses WHERE id = ?1 AND key_id = ?2",
                params![id, key.digest],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|(session, body)| {
            let body = serde_json::from_str(&body).unwrap_or(serde_json::Value::Null);
            (session, body)
        }))
    }

    /// Deletes a stored response of this key; whether there was one.
    pub fn delete_response(&self, key: &KeyId, id: &str) -> Result<bool, MapError> {
        self.open()?
            .execute(
                "DELETE FROM responses WHERE id = ?1 AND key_id = ?2",
                params![id, key.digest],
            )
            .map(|n| n > 0)
            .map_err(|e| self.fail(e))
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    // Private before SQLite opens it (its journals then get the same mode), whatever the umask.
    talaria_profile::home_modes::create_private_file(path).map_err(|e| {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("cannot create {}: {e}", path.display())),
        )
    })?;
    let connection = Connection::open(path)?;
    talaria_profile::home_modes::tighten_sqlite_journals(path);
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE IF NOT EXISTS chain (
             key_id TEXT NOT NULL, hash TEXT NOT NULL, session_id TEXT NOT NULL,
             count INTEGER NOT NULL, created_at INTEGER NOT NULL,
             PRIMARY KEY (key_id, hash, session_id));
         CREATE TABLE IF NOT EXISTS responses (
             id TEXT PRIMARY KEY, key_id TEXT NOT NULL, session_id TEXT NOT NULL,
             body TEXT NOT NULL, created_at INTEGER NOT NULL);",
    )?;
    Ok(connection)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key() -> KeyId {
        KeyId {
            digest: "k1".into(),
            principal: talaria_kernel::Principal::owner(),
        }
    }

    fn conversation(texts: &[&str]) -> Vec<Message> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i % 2 == 0 {
                    Message::user(*t)
                } else {
                    Message::assistant(*t)
                }
            })
            .collect()
    }

    fn texts(texts: &[&str]) -> Vec<Text> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i % 2 == 0 {
                    Text::user(*t)
                } else {
                    Text::assistant(*t)
                }
            })
            .collect()
    }

    fn map() -> (tempfile::TempDir, SessionMap) {
        let dir = tempfile::tempdir().unwrap();
        let map = SessionMap::new(dir.path().join("api.db"));
        (dir, map)
    }

    #[test]
    fn the_chain_depends_on_the_key_and_every_text_before() {
        let a = chain(&key(), &texts(&["hi", "hello", "more"]));
        let b = chain(
            &KeyId {
                digest: "k2".into(),
                principal: talaria_kernel::Principal::owner(),
            },
            &texts(&["hi", "hello", "more"]),
        );
        let c = chain(&key(), &texts(&["hey", "hello", "more"]));
        assert_eq!(a.len(), 3);
        assert_ne!(a[0], b[0]);
        assert_ne!(a[1], c[1]);
        assert_eq!(a, chain(&key(), &texts(&[" hi", "hello\n", "more"])));
    }

    #[test]
    fn stored_turns_take_each_turns_last_assistant_text() {
        let mut messages = conversation(&["q1"]);
        messages.push(Message::assistant("thinking aloud"));
        messages.push(Message::assistant("a1"));
        messages.extend(conversation(&["q2", "a2"]));
        let (texts, ends) = stored_turns(&messages);
        assert_eq!(texts, super::tests::texts(&["q1", "a1", "q2", "a2"]));
        assert_eq!(ends, vec![(2, 3), (4, 5)]);
    }

    #[test]
    fn a_resent_history_continues_its_session_and_a_new_chat_forks_fresh() {
        let (_dir, map) = map();
        let stored = conversation(&["hi", "hello"]);
        map.record(&key(), "s1", &stored).unwrap();
        let counts: HashMap<&str, (usize, bool)> = [("s1", (2, true))].into();
        let current = |id: &str| counts.get(id).copied();
        assert_eq!(
            map.place(&key(), &texts(&["hi", "hello"]), current)
                .unwrap(),
            Placement::Continue("s1".into())
        );
        // A new chat that opens with "hi" too has no history: a session of its own.
        assert_eq!(
            map.place(&key(), &[], current).unwrap(),
            Placement::Fork {
                parent: None,
                keep: 0,
                seed: vec![]
            }
        );
        // Another key never sees this key's sessions.
        assert!(matches!(
            map.place(
                &KeyId {
                    digest: "other".into(),
                    principal: talaria_kernel::Principal::owner(),
                },
                &texts(&["hi", "hello"]),
                current
            )
            .unwrap(),
            Placement::Fork { parent: None, .. }
        ));
    }

    #[test]
    fn an_edited_or_regenerated_turn_forks_from_the_longest_matching_prefix() {
        let (_dir, map) = map();
        map.record(
            &key(),
            "s1",
            &conversation(&["q1", "a1", "q2", "a2", "q3", "a3"]),
        )
        .unwrap();
        let counts: HashMap<&str, (usize, bool)> = [("s1", (6, true))].into();
        let current = |id: &str| counts.get(id).copied();
        // Turn 2 regenerated: the client's answer differs from the stored one.
        assert_eq!(
            map.place(&key(), &texts(&["q1", "a1", "q2", "other"]), current)
                .unwrap(),
            Placement::Fork {
                parent: Some("s1".into()),
                keep: 2,
                seed: texts(&["q2", "other"]),
            }
        );
        // The session moved on beyond the matched turn: fork with what it had then.
        assert_eq!(
            map.place(&key(), &texts(&["q1", "a1", "q2", "a2"]), current)
                .unwrap(),
            Placement::Fork {
                parent: Some("s1".into()),
                keep: 4,
                seed: vec![]
            }
        );
        // A busy session is forked rather than shared.
        let busy = |id: &str| (id == "s1").then_some((6, false));
        assert!(matches!(
            map.place(&key(), &texts(&["q1", "a1", "q2", "a2", "q3", "a3"]), busy)
                .unwrap(),
            Placement::Fork { keep: 6, .. }
        ));
        // A deleted session is no match.
        assert!(matches!(
            map.place(&key(), &texts(&["q1", "a1"]), |_| None).unwrap(),
            Placement::Fork {
                parent: None,
                keep: 0,
                ..
            }
        ));
    }

    #[test]
    fn responses_are_kept_per_key() {
        let (_dir, map) = map();
        let body = serde_json::json!({"id": "resp_1"});
        map.put_response(&key(), "resp_1", "s1", &body).unwrap();
        assert_eq!(
            map.response(&key(), "resp_1").unwrap(),
            Some(("s1".into(), body))
        );
        assert_eq!(
            map.response(
                &KeyId {
                    digest: "k2".into(),
                    principal: talaria_kernel::Principal::owner(),
                },
                "resp_1"
            )
            .unwrap(),
            None
        );
        assert!(
            !map.delete_response(
                &KeyId {
                    digest: "k2".into(),
                    principal: talaria_kernel::Principal::owner(),
                },
                "resp_1"
            )
            .unwrap()
        );
        assert!(map.delete_response(&key(), "resp_1").unwrap());
        assert_eq!(map.response(&key(), "resp_1").unwrap(), None);
    }
}
