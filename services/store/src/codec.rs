//! Converting between kernel values and SQLite columns.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Row;
use talaria_kernel::{Message, Role, ToolCall};

use crate::error::{Result, StoreError};
use crate::rows::StoredMessage;

/// The columns [`RawMessage::from_row`] reads, in order.
pub(crate) const MESSAGE_COLUMNS: &str = "seq, created_at, role, content, reasoning, tool_calls, tool_call_id, name, is_error, \
     provider_state, images";

/// Current time in unix milliseconds (0 if the clock is before 1970).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// SQLite integers are signed; counters saturate rather than fail.
pub(crate) fn to_sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Counters read back; a negative value (never written by us) reads as 0.
pub(crate) fn from_sql_int(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The stored spelling of a role.
pub(crate) fn role_name(role: Role) -> &'static str {
    role.as_str()
}

/// A role from its stored spelling.
pub(crate) fn parse_role(name: &str) -> Option<Role> {
    match name {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        _ => None,
    }
}

/// Tool calls as stored: JSON text, or NULL when there are none.
pub(crate) fn encode_tool_calls(calls: &[ToolCall]) -> Result<Option<String>> {
    if calls.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string(calls)?))
}

/// A message's provider state as stored: JSON text, or NULL when it has none.
pub(crate) fn encode_provider_state(message: &Message) -> Result<Option<String>> {
    match &message.provider_state {
        Some(state) => Ok(Some(serde_json::to_string(state)?)),
        None => Ok(None),
    }
}

/// A message's image references as stored: JSON text, or NULL when it has none.
pub(crate) fn encode_images(message: &Message) -> Result<Option<String>> {
    if message.images.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string(&message.images)?))
}

/// A message row as read, before it is checked.
pub(crate) struct RawMessage {
    seq: i64,
    created_at: i64,
    role: String,
    content: String,
    reasoning: Option<String>,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
    name: Option<String>,
    is_error: bool,
    provider_state: Option<String>,
    images: Option<String>,
}

impl RawMessage {
    /// Reads the [`MESSAGE_COLUMNS`] from a row.
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: row.get(0)?,
            created_at: row.get(1)?,
            role: row.get(2)?,
            content: row.get(3)?,
            reasoning: row.get(4)?,
            tool_calls: row.get(5)?,
            tool_call_id: row.get(6)?,
            name: row.get(7)?,
            is_error: row.get(8)?,
            provider_state: row.get(9)?,
            images: row.get(10)?,
        })
    }

    /// The kernel message, or why the row cannot be one.
    pub(crate) fn decode(self, session_id: &str) -> Result<StoredMessage> {
        let corrupt = |reason: String| StoreError::Corrupt {
            session_id: session_id.to_owned(),
            seq: self.seq,
            reason,
        };
        let role = parse_role(&self.role)
            .ok_or_else(|| corrupt(format!("unknown role {:?}", self.role)))?;
        let tool_calls = match &self.tool_calls {
            Some(json) => serde_json::from_str(json)
                .map_err(|error| corrupt(format!("tool_calls is not valid JSON: {error}")))?,
            None => Vec::new(),
        };
        let provider_state =
            match &self.provider_state {
                Some(json) => Some(serde_json::from_str(json).map_err(|error| {
                    corrupt(format!("provider_state is not valid JSON: {error}"))
                })?),
                None => None,
            };
        let images = match &self.images {
            Some(json) => serde_json::from_str(json)
                .map_err(|error| corrupt(format!("images is not valid JSON: {error}")))?,
            None => Vec::new(),
        };
        Ok(StoredMessage {
            seq: from_sql_int(self.seq),
            created_at: self.created_at,
            message: Message {
                role,
                content: self.content,
                reasoning: self.reasoning,
                tool_calls,
                tool_call_id: self.tool_call_id,
                name: self.name,
                is_error: self.is_error,
                provider_state,
                images,
            },
        })
    }
}

/// `text` on one line (whitespace runs collapsed), cut to `max_chars` with an
/// ellipsis.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        if !out.is_empty() {
            if chars >= max_chars {
                out.push('…');
                return out;
            }
            out.push(' ');
            chars += 1;
        }
        for ch in word.chars() {
            if chars >= max_chars {
                out.push('…');
                return out;
            }
            out.push(ch);
            chars += 1;
        }
    }
    out
}
