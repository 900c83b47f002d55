//! Bot API replies: every method answers `{"ok": true, "result": …}` or
//! `{"ok": false, "error_code": N, "description": "…", "parameters":
//! {"retry_after": S, "migrate_to_chat_id": ID}}`, with the HTTP status
//! equal to `error_code`. Here they become results and send outcomes.

use serde_json::Value;
use talaria_plugin_sdk::chat_types::SendOutcome;

/// Wait suggested when a 429 names no `retry_after`.
const DEFAULT_RETRY_AFTER_MS: u64 = 5_000;

/// A refused or failed Bot API call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiFailure {
    /// The HTTP status (0 when the request never got an answer).
    pub status: u16,
    /// `description`, or what went wrong on the way.
    pub description: String,
    /// `parameters.retry_after`, in seconds.
    pub retry_after_secs: Option<u64>,
    /// `parameters.migrate_to_chat_id`: the group became this supergroup.
    pub migrate_to_chat_id: Option<i64>,
}

impl ApiFailure {
    /// The request got no answer (connection refused, timeout, denied grant).
    pub fn transport(description: impl Into<String>) -> Self {
        Self {
            status: 0,
            description: description.into(),
            retry_after_secs: None,
            migrate_to_chat_id: None,
        }
    }
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            0 => write!(f, "{}", self.description),
            status => write!(f, "Telegram answered {status}: {}", self.description),
        }
    }
}

/// The `result` of a reply, or why there is none.
pub fn parse_reply(status: u16, body: &[u8]) -> Result<Value, ApiFailure> {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let Some(reply) = parsed.filter(Value::is_object) else {
        let text = String::from_utf8_lossy(body);
        let excerpt: String = text.chars().take(200).collect();
        return Err(ApiFailure {
            status,
            description: format!("not a Bot API reply: {excerpt:?}"),
            retry_after_secs: None,
            migrate_to_chat_id: None,
        });
    };
    if reply["ok"] == Value::Bool(true) && (200..300).contains(&status) {
        return Ok(reply.get("result").cloned().unwrap_or(Value::Null));
    }
    // Some Bot API look-alikes (telegram-test-api) answer `{"message": …}`.
    let description = reply["description"]
        .as_str()
        .or_else(|| reply["message"].as_str())
        .unwrap_or("no description")
        .to_owned();
    let code = reply["error_code"]
        .as_u64()
        .and_then(|code| u16::try_from(code).ok());
    Err(ApiFailure {
        status: code
            .filter(|_| (200..300).contains(&status))
            .unwrap_or(status),
        description,
        retry_after_secs: reply["parameters"]["retry_after"].as_u64(),
        migrate_to_chat_id: reply["parameters"]["migrate_to_chat_id"].as_i64(),
    })
}

/// Whether a failure means the bot can never write to that chat: it was
/// blocked, kicked or never let in, the chat is gone, or it moved.
fn is_dead_target(failure: &ApiFailure) -> bool {
    let description = failure.description.to_ascii_lowercase();
    match failure.status {
        // "Forbidden: bot was blocked by the user", "bot was kicked from the
        // group chat", "user is deactivated", "bot is not a member of the
        // channel chat", "bot can't initiate conversation with a user".
        403 => true,
        400 => {
            failure.migrate_to_chat_id.is_some()
                || [
                    "chat not found",
                    "user not found",
                    "chat_write_forbidden",
                    "not enough rights to send",
                    "have no rights to send",
                    "group chat was upgraded",
                    "peer_id_invalid",
                ]
                .iter()
                .any(|phrase| description.contains(phrase))
        }
        _ => false,
    }
}

/// How a send ended: `chat-types.send-outcome`, comparable in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    Sent(Option<String>),
    Retryable(u64),
    DeadTarget(String),
    Failed(String),
}

impl From<Delivery> for SendOutcome {
    fn from(delivery: Delivery) -> Self {
        match delivery {
            Delivery::Sent(id) => Self::Sent(id),
            Delivery::Retryable(ms) => Self::Retryable(ms),
            Delivery::DeadTarget(why) => Self::DeadTarget(why),
            Delivery::Failed(why) => Self::Failed(why),
        }
    }
}

/// The outcome of `sendMessage` / `editMessageText`. `edited` is the message
/// being edited, which is its id afterwards too.
pub fn send_outcome(reply: Result<Value, ApiFailure>, edited: Option<&str>) -> Delivery {
    match reply {
        Ok(result) => {
            // A sent or edited message answers with the Message; an edit of
            // an inline message answers `true`.
            let id = result["message_id"]
                .as_i64()
                .map(|id| id.to_string())
                .or_else(|| edited.map(str::to_owned));
            Delivery::Sent(id)
        }
        Err(failure) if failure.status == 429 => Delivery::Retryable(
            failure
                .retry_after_secs
                .map_or(DEFAULT_RETRY_AFTER_MS, |secs| secs.saturating_mul(1_000)),
        ),
        // Editing to the same text: the message already reads as wanted.
        Err(failure)
            if edited.is_some()
                && failure.status == 400
                && failure.description.contains("message is not modified") =>
        {
            Delivery::Sent(edited.map(str::to_owned))
        }
        Err(failure) if is_dead_target(&failure) => {
            let mut why = failure.to_string();
            if let Some(new_id) = failure.migrate_to_chat_id {
                why.push_str(&format!(" (the group is now the supergroup {new_id})"));
            }
            Delivery::DeadTarget(why)
        }
        Err(failure) => Delivery::Failed(failure.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn outcome(status: u16, body: &str) -> Delivery {
        send_outcome(parse_reply(status, body.as_bytes()), None)
    }

    #[test]
    fn ok_replies_give_their_result() {
        let result = parse_reply(200, br#"{"ok":true,"result":{"message_id":7}}"#).unwrap();
        assert_eq!(result["message_id"], 7);
        assert_eq!(
            outcome(200, r#"{"ok":true,"result":{"message_id":7}}"#),
            Delivery::Sent(Some("7".into()))
        );
    }

    #[test]
    fn too_many_requests_is_retryable_after_retry_after() {
        let body = r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}"#;
        assert_eq!(outcome(429, body), Delivery::Retryable(3_000));
        let bare = r#"{"ok":false,"error_code":429,"description":"Too Many Requests"}"#;
        assert_eq!(
            outcome(429, bare),
            Delivery::Retryable(DEFAULT_RETRY_AFTER_MS)
        );
    }

    #[test]
    fn blocked_kicked_and_unknown_chats_are_dead_targets() {
        for (status, description) in [
            (403, "Forbidden: bot was blocked by the user"),
            (403, "Forbidden: bot was kicked from the supergroup chat"),
            (400, "Bad Request: chat not found"),
            (
                400,
                "Bad Request: not enough rights to send text messages to the chat",
            ),
        ] {
            let body =
                format!(r#"{{"ok":false,"error_code":{status},"description":"{description}"}}"#);
            match outcome(status, &body) {
                Delivery::DeadTarget(why) => assert!(why.contains(description), "{why}"),
                other => panic!("{description}: {other:?}"),
            }
        }
        let moved = r#"{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1001234}}"#;
        match outcome(400, moved) {
            Delivery::DeadTarget(why) => assert!(why.contains("-1001234"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_client_errors_server_errors_and_garbage_fail() {
        let too_long =
            r#"{"ok":false,"error_code":400,"description":"Bad Request: message is too long"}"#;
        assert!(matches!(outcome(400, too_long), Delivery::Failed(_)));
        let busy = r#"{"ok":false,"error_code":502,"description":"Bad Gateway"}"#;
        assert_eq!(
            outcome(502, busy),
            Delivery::Failed("Telegram answered 502: Bad Gateway".into())
        );
        match outcome(502, "<html>nginx</html>") {
            Delivery::Failed(why) => assert!(why.contains("502") && why.contains("nginx")),
            other => panic!("{other:?}"),
        }
        let emulator = r#"{"message":"API method 'sendChatAction' is not supported."}"#;
        match outcome(500, emulator) {
            Delivery::Failed(why) => assert!(why.contains("not supported"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            send_outcome(Err(ApiFailure::transport("connection refused")), None),
            Delivery::Failed(_)
        ));
    }

    #[test]
    fn edits_keep_the_edited_id() {
        assert_eq!(
            send_outcome(
                parse_reply(200, br#"{"ok":true,"result":true}"#),
                Some("41")
            ),
            Delivery::Sent(Some("41".into()))
        );
        let same = r#"{"ok":false,"error_code":400,"description":"Bad Request: message is not modified: specified new message content and reply markup are exactly the same"}"#;
        assert_eq!(
            send_outcome(parse_reply(400, same.as_bytes()), Some("41")),
            Delivery::Sent(Some("41".into()))
        );
    }
}
