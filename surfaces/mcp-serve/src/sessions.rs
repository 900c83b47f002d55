//! `list_sessions`, `search_sessions` and `read_session`: the profile's session
//! database, read through talaria-store's own queries.

use serde_json::{Value, json};
use talaria_kernel::{Message, Principal};
use talaria_profile::ProfileHome;
use talaria_store::{ListQuery, SessionDb, SessionRow, SessionSummary, StoreError};

use crate::tools::{Arguments, BadArguments, MAX_HITS, MAX_LIST, MAX_MESSAGES};

/// Characters of one message's text `read_session` returns; the rest is cut
/// with a note (a tool result can be megabytes).
const MAX_MESSAGE_CHARS: usize = 16_000;

/// Why a sessions tool could not answer.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// The arguments do not fit the schema.
    #[error(transparent)]
    Arguments(#[from] BadArguments),
    /// The database refused.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// RFC 3339 (UTC, seconds) of unix milliseconds.
pub fn rfc3339(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0).unsigned_abs());
    humantime::format_rfc3339_seconds(time).to_string()
}

fn summary(s: SessionSummary) -> Value {
    json!({
        "id": s.id,
        "title": s.title,
        "source": s.source,
        "model": s.model,
        "cwd": s.cwd,
        "parent_session_id": s.parent_session_id,
        "created_at": rfc3339(s.created_at),
        "updated_at": rfc3339(s.updated_at),
        "message_count": s.message_count,
        "cost_usd": s.cost_usd,
        "preview": s.preview,
    })
}

fn row(s: SessionRow) -> Value {
    json!({
        "id": s.id,
        "title": s.title,
        "source": s.source,
        "model": s.model,
        "cwd": s.cwd,
        "parent_session_id": s.parent_session_id,
        "created_at": rfc3339(s.created_at),
        "updated_at": rfc3339(s.updated_at),
        "message_count": s.message_count,
        "cost_usd": s.cost_usd,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
    })
}

/// Reads the sessions of one profile home.
#[derive(Debug, Clone)]
pub struct Sessions {
    home: ProfileHome,
}

impl Sessions {
    pub fn new(home: ProfileHome) -> Self {
        Self { home }
    }

    /// The process's handle ([`SessionDb::shared`]); other Talaria processes have their own.
    fn open(&self) -> Result<std::sync::Arc<SessionDb>, SessionsError> {
        Ok(SessionDb::shared(self.home.session_db())?)
    }

    /// Whether secrets are redacted in what `read_session` returns: the
    /// profile's `security.redact_secrets`, on when the config cannot be read.
    fn redact(&self) -> bool {
        talaria_profile::load_profile(&self.home)
            .map_or(true, |(_, config)| config.security.redact_secrets)
    }

    /// `list_sessions`.
    pub fn list(&self, args: &Arguments<'_>, viewer: &Principal) -> Result<Value, SessionsError> {
        let limit = args.integer("limit", 20, 1, MAX_LIST)?;
        let offset = args.integer("offset", 0, 0, 1_000_000)?;
        let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        // The store lists from the newest; a page is the tail of one more than it holds.
        let query = ListQuery {
            limit: as_usize(offset.saturating_add(limit).saturating_add(1)),
            viewer: viewer.clone(),
            ..ListQuery::default()
        };
        let mut sessions: Vec<SessionSummary> = self
            .open()?
            .list(&query)?
            .into_iter()
            .skip(as_usize(offset))
            .collect();
        let more = sessions.len() > as_usize(limit);
        sessions.truncate(as_usize(limit));
        Ok(json!({
            "sessions": sessions.into_iter().map(summary).collect::<Vec<_>>(),
            "offset": offset,
            "more": more,
        }))
    }

    /// `search_sessions`.
    pub fn search(&self, args: &Arguments<'_>, viewer: &Principal) -> Result<Value, SessionsError> {
        let query = args.required_string("query")?;
        let limit = args.integer("limit", 20, 1, MAX_HITS)?;
        let hits =
            self.open()?
                .search(&query, usize::try_from(limit).unwrap_or(usize::MAX), viewer)?;
        Ok(json!({
            "hits": hits.into_iter().map(|hit| json!({
                "session_id": hit.session_id,
                "message_seq": hit.message_seq,
                "role": hit.role.as_str(),
                "snippet": hit.snippet,
                "created_at": rfc3339(hit.created_at),
            })).collect::<Vec<_>>(),
        }))
    }

    /// `read_session`.
    pub fn read(&self, args: &Arguments<'_>, viewer: &Principal) -> Result<Value, SessionsError> {
        let prefix = args.required_string("session_id")?;
        let offset = args.integer("offset", 0, 0, u64::from(u32::MAX))?;
        let limit = args.integer("limit", 50, 1, MAX_MESSAGES)?;
        let db = self.open()?;
        let id = db.resolve_id(&prefix, viewer)?;
        let session = db
            .session(&id)?
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let stored = db.stored_messages(&id)?;
        let total = stored.len();
        let redact = self.redact();
        let page: Vec<Value> = stored
            .into_iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|stored| message(stored.seq, stored.created_at, stored.message, redact))
            .collect();
        let shown = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .saturating_add(page.len());
        Ok(json!({
            "session": row(session),
            "messages": page,
            "offset": offset,
            "total": total,
            "more": shown < total,
        }))
    }
}

fn message(seq: u64, created_at: i64, message: Message, redact: bool) -> Value {
    let clean = |text: String| -> String {
        let text = if redact {
            talaria_redact::redact(&text).into_owned()
        } else {
            text
        };
        cut(text)
    };
    let mut value = json!({
        "seq": seq,
        "role": message.role.as_str(),
        "content": clean(message.content),
        "created_at": rfc3339(created_at),
    });
    if !message.tool_calls.is_empty() {
        value["tool_calls"] = message
            .tool_calls
            .into_iter()
            .map(|call| json!({"id": call.id, "name": call.name, "arguments": clean(call.arguments)}))
            .collect();
    }
    if let Some(name) = message.name {
        value["tool_name"] = json!(name);
    }
    if message.is_error {
        value["is_error"] = json!(true);
    }
    value
}

/// `text` cut to [`MAX_MESSAGE_CHARS`], saying how much was left out.
fn cut(text: String) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => text,
        Some((end, _)) => {
            let left = text[end..].chars().count();
            format!("{}… [{left} more characters not shown]", &text[..end])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let text = "é".repeat(MAX_MESSAGE_CHARS + 3);
        let shortened = cut(text);
        assert!(
            shortened.ends_with("… [3 more characters not shown]"),
            "{shortened}"
        );
        assert_eq!(cut("short".into()), "short");
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(1_796_001_390_123), "2026-11-30T01:16:30Z");
    }
}
