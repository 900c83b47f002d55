//! Which stored session a chat message continues. A session key names where
//! the message was written (profile, platform, chat, thread, and the user in
//! groups that give each member a session); the key maps to a session id kept
//! in `<home>/gateway.db`, so a restarted gateway continues the same sessions.
//! A key quiet for longer than the idle reset gets a fresh session; `/new`
//! gives one at once.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use talaria_kernel::Principal;
use talaria_profile::GroupSessions;

use crate::ports::{ChatKind, InboundMessage};

/// Where a conversation happens (one session at a time per key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey(String);

/// Whom a conversation is with: in a direct message the sender's id (as the
/// adapter identified them: an IRC DM's chat is the nick, which someone else
/// can hold tomorrow), elsewhere the chat's id.
pub fn conversation_id(message: &InboundMessage) -> &str {
    if message.chat.kind == ChatKind::Dm {
        &message.sender.id
    } else {
        &message.chat.id
    }
}

impl SessionKey {
    /// The key of `message` on `platform` in `profile`.
    pub fn for_message(
        profile: &str,
        platform: &str,
        message: &InboundMessage,
        group_sessions: GroupSessions,
    ) -> Self {
        let chat = &message.chat;
        let per_user = chat.kind != ChatKind::Dm && group_sessions == GroupSessions::PerUser;
        let parts = [
            Some(profile),
            Some(platform),
            Some(conversation_id(message)),
            chat.thread.as_deref(),
            per_user.then_some(message.sender.id.as_str()),
        ];
        // JSON keeps the parts apart whatever characters the platform's ids use.
        Self(serde_json::Value::from(parts.to_vec()).to_string())
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whom the sessions of `message`'s conversation belong to: in a direct message the sender;
/// in a group the group (or thread), unless each member has sessions of their own there.
/// What a chat may find of other sessions (`/sessions`, `/resume`, `session_search`) and
/// whose memory it uses follow from it.
pub fn principal_for(
    platform: &str,
    message: &InboundMessage,
    group_sessions: GroupSessions,
) -> Principal {
    let chat = &message.chat;
    if chat.kind == ChatKind::Dm || group_sessions == GroupSessions::PerUser {
        Principal::chat_user(platform, &message.sender.id)
    } else {
        Principal::chat_group(platform, &chat.id, chat.thread.as_deref())
    }
}

/// The mapping database failed.
#[derive(Debug, thiserror::Error)]
#[error("the gateway's session map ({path}): {source}")]
pub struct MapError {
    path: PathBuf,
    source: rusqlite::Error,
}

/// Session keys → session ids, with when each was last active.
#[derive(Debug, Clone)]
pub struct Router {
    path: PathBuf,
    /// 0: never reset.
    idle_reset_secs: u64,
}

impl Router {
    /// The map in `path` (created on first use); keys quiet for
    /// `idle_reset_hours` (0: never) get a fresh session.
    pub fn new(path: impl Into<PathBuf>, idle_reset_hours: u32) -> Self {
        Self {
            path: path.into(),
            idle_reset_secs: u64::from(idle_reset_hours) * 3600,
        }
    }

    fn fail(&self, source: rusqlite::Error) -> MapError {
        MapError {
            path: self.path.clone(),
            source,
        }
    }

    fn open(&self) -> Result<Connection, MapError> {
        open(&self.path).map_err(|e| self.fail(e))
    }

    /// The session `key` continues now (a new one when it has none or was
    /// idle too long), marked active at `now` (Unix seconds).
    pub fn resolve(&self, key: &SessionKey, now: u64) -> Result<String, MapError> {
        let connection = self.open()?;
        let found: Option<(String, i64)> = connection
            .query_row(
                "SELECT session_id, last_active FROM sessions WHERE key = ?1",
                params![key.as_str()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|e| self.fail(e))?;
        let session = match found {
            Some((session, last_active))
                if self.idle_reset_secs == 0
                    || now.saturating_sub(u64::try_from(last_active).unwrap_or(0))
                        < self.idle_reset_secs =>
            {
                session
            }
            _ => new_session_id(now),
        };
        self.store(&connection, key, &session, now)?;
        Ok(session)
    }

    /// A fresh session for `key` (`/new`).
    pub fn reset(&self, key: &SessionKey, now: u64) -> Result<String, MapError> {
        let session = new_session_id(now);
        self.point(key, &session, now)?;
        Ok(session)
    }

    /// `key` continues `session` from now on (`/resume`, or a session that
    /// compression continued in a new one).
    pub fn point(&self, key: &SessionKey, session: &str, now: u64) -> Result<(), MapError> {
        let connection = self.open()?;
        self.store(&connection, key, session, now)
    }

    /// `key` moves from `old` to `new` (compression continued the
    /// conversation in a new session), unless it was pointed elsewhere
    /// meanwhile (`/new` during the turn wins).
    pub fn replace(
        &self,
        key: &SessionKey,
        old: &str,
        new: &str,
        now: u64,
    ) -> Result<(), MapError> {
        self.open()?
            .execute(
                "UPDATE sessions SET session_id = ?3, last_active = ?4 \
                 WHERE key = ?1 AND session_id = ?2",
                params![
                    key.as_str(),
                    old,
                    new,
                    i64::try_from(now).unwrap_or(i64::MAX)
                ],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn store(
        &self,
        connection: &Connection,
        key: &SessionKey,
        session: &str,
        now: u64,
    ) -> Result<(), MapError> {
        connection
            .execute(
                "INSERT INTO sessions (key, session_id, last_active) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(key) DO UPDATE SET session_id = ?2, last_active = ?3",
                params![
                    key.as_str(),
                    session,
                    i64::try_from(now).unwrap_or(i64::MAX)
                ],
            )
            .map(drop)
            .map_err(|e| self.fail(e))
    }
}

/// The gateway's database at `path` (the webhook's delivery log shares it).
pub(crate) fn open(path: &Path) -> Result<Connection, rusqlite::Error> {
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
        "CREATE TABLE IF NOT EXISTS sessions (
             key TEXT PRIMARY KEY,
             session_id TEXT NOT NULL,
             last_active INTEGER NOT NULL
         );",
    )?;
    Ok(connection)
}

/// A session id in the agent's format (Unix seconds, random suffix).
pub(crate) fn new_session_id(now: u64) -> String {
    talaria_store::session_id_at(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{Chat, Sender, SenderIdentity};

    fn message(chat: &str, thread: Option<&str>, kind: ChatKind, user: &str) -> InboundMessage {
        InboundMessage {
            chat: Chat {
                id: chat.into(),
                thread: thread.map(Into::into),
                kind,
                title: None,
            },
            sender: Sender {
                id: user.into(),
                name: user.into(),
                is_bot: false,
                identity: SenderIdentity::default(),
            },
            text: "hi".into(),
            message_id: None,
            reply_to: None,
            addressed: true,
            attachments: Vec::new(),
            edit_of: None,
            raw: "null".into(),
        }
    }

    #[test]
    fn keys_separate_chats_threads_and_group_members_only_when_per_user() {
        let key = |chat, thread, kind, user, mode| {
            SessionKey::for_message("default", "irc", &message(chat, thread, kind, user), mode)
        };
        let per_user = GroupSessions::PerUser;
        let shared = GroupSessions::Shared;
        assert_ne!(
            key("#a", None, ChatKind::Group, "ann", per_user),
            key("#a", None, ChatKind::Group, "bob", per_user)
        );
        assert_eq!(
            key("#a", None, ChatKind::Group, "ann", shared),
            key("#a", None, ChatKind::Group, "bob", shared)
        );
        assert_ne!(
            key("#a", Some("t1"), ChatKind::Thread, "ann", shared),
            key("#a", Some("t2"), ChatKind::Thread, "ann", shared)
        );
        assert_eq!(
            key("ann", None, ChatKind::Dm, "ann", per_user),
            key("ann", None, ChatKind::Dm, "ann", shared)
        );
        // Ids with separators in them cannot collide.
        assert_ne!(
            key("a:b", None, ChatKind::Dm, "u", per_user),
            key("a", Some("b"), ChatKind::Dm, "u", per_user)
        );
        let other_profile = SessionKey::for_message(
            "work",
            "irc",
            &message("#a", None, ChatKind::Dm, "u"),
            per_user,
        );
        assert_ne!(other_profile, key("#a", None, ChatKind::Dm, "u", per_user));
    }

    #[test]
    fn a_direct_conversation_is_keyed_by_who_writes_not_by_the_chat() {
        let key = |chat, user| {
            SessionKey::for_message(
                "default",
                "irc",
                &message(chat, None, ChatKind::Dm, user),
                GroupSessions::PerUser,
            )
        };
        // An IRC DM's chat is the nick: whoever holds it next has another id.
        assert_ne!(
            key("alice", "alice!alice@h"),
            key("alice", "alice!mallory@x")
        );
        assert_eq!(key("alice", "$a:alice"), key("alice2", "$a:alice"));
        let dm = message("alice", None, ChatKind::Dm, "$a:alice");
        assert_eq!(conversation_id(&dm), "$a:alice");
        let group = message("#a", None, ChatKind::Group, "$a:alice");
        assert_eq!(conversation_id(&group), "#a");
    }

    #[test]
    fn a_restarted_router_continues_the_same_session() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        let key = SessionKey("k".into());
        let first = Router::new(&path, 24).resolve(&key, 1000).unwrap();
        assert_eq!(Router::new(&path, 24).resolve(&key, 2000).unwrap(), first);
        let other = Router::new(&path, 24)
            .resolve(&SessionKey("other".into()), 2000)
            .unwrap();
        assert_ne!(other, first);
    }

    #[test]
    fn idle_reset_starts_over_after_the_quiet_hours_and_zero_never_does() {
        let dir = tempfile::tempdir().unwrap();
        let key = SessionKey("k".into());
        let router = Router::new(dir.path().join("a.db"), 1);
        let first = router.resolve(&key, 10_000).unwrap();
        // Activity keeps it alive: each resolve marks it active.
        assert_eq!(router.resolve(&key, 10_000 + 3599).unwrap(), first);
        assert_eq!(router.resolve(&key, 10_000 + 2 * 3599).unwrap(), first);
        let after_idle = router.resolve(&key, 10_000 + 3 * 3599 + 3600).unwrap();
        assert_ne!(after_idle, first);

        let never = Router::new(dir.path().join("b.db"), 0);
        let kept = never.resolve(&key, 10_000).unwrap();
        assert_eq!(never.resolve(&key, 10_000 + 365 * 86_400).unwrap(), kept);
    }

    #[test]
    fn reset_and_point_change_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let router = Router::new(dir.path().join("g.db"), 24);
        let key = SessionKey("k".into());
        let first = router.resolve(&key, 100).unwrap();
        let fresh = router.reset(&key, 101).unwrap();
        assert_ne!(fresh, first);
        assert_eq!(router.resolve(&key, 102).unwrap(), fresh);
        router.point(&key, &first, 103).unwrap();
        assert_eq!(router.resolve(&key, 104).unwrap(), first);
        router.replace(&key, &first, "chained", 105).unwrap();
        assert_eq!(router.resolve(&key, 106).unwrap(), "chained");
        router.replace(&key, &first, "stale", 107).unwrap();
        assert_eq!(router.resolve(&key, 108).unwrap(), "chained");
    }
}
