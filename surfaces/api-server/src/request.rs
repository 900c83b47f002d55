//! What both POST endpoints share: reading the body (limit, timeout, JSON),
//! the conversation headers, message text, and starting a run.

use axum::body::Body;
use http::HeaderMap;
use serde_json::Value;
use talaria_kernel::CancellationToken;
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;

use crate::Shared;
use crate::auth::KeyId;
use crate::chain::Text;
use crate::error::ApiError;
use crate::runner::{RunEvent, RunRequest, Target};

/// Names the session a request continues (and is set on every reply).
pub const SESSION_HEADER: &str = "x-talaria-session-id";
/// Asks for tool progress events in a stream (off: stock SDKs reject unknown events).
pub const PROGRESS_HEADER: &str = "x-talaria-tool-progress";
/// Hermes Agent's spellings of the same headers.
const HERMES_SESSION_HEADER: &str = "x-hermes-session-id";
const HERMES_PROGRESS_HEADER: &str = "x-hermes-tool-progress";

/// Checks the key, then reads the body as a JSON object.
pub async fn read_json(
    state: &Shared,
    headers: &HeaderMap,
    body: Body,
) -> Result<(KeyId, Value), ApiError> {
    let key = state.gate.check(headers)?;
    let limit = state.max_body_bytes;
    // A declared length over the limit is refused before reading anything.
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX)) {
        return Err(ApiError::too_large(limit));
    }
    let bytes = tokio::time::timeout(state.read_timeout, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| ApiError::timeout())?
        .map_err(|error| {
            let over = std::error::Error::source(&error)
                .is_some_and(<dyn std::error::Error>::is::<http_body_util::LengthLimitError>)
                || error.to_string().contains("length limit");
            if over {
                ApiError::too_large(limit)
            } else {
                ApiError::bad_request(format!("cannot read the request body: {error}"))
            }
        })?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok((key, value))
}

/// A header by its name or Hermes's alias.
fn header<'a>(headers: &'a HeaderMap, name: &str, alias: &str) -> Option<&'a str> {
    headers
        .get(name)
        .or_else(|| headers.get(alias))
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The session the client named, if any.
pub fn named_session(headers: &HeaderMap) -> Option<String> {
    header(headers, SESSION_HEADER, HERMES_SESSION_HEADER).map(str::to_owned)
}

/// Whether the client asked for tool progress events.
pub fn wants_progress(headers: &HeaderMap) -> bool {
    header(headers, PROGRESS_HEADER, HERMES_PROGRESS_HEADER)
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// The text of a message's `content`: a string, or the text parts of an array.
pub fn content_text(content: &Value) -> Result<String, ApiError> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text" | "input_text" | "output_text") => {
                        texts.push(part.get("text").and_then(Value::as_str).ok_or_else(|| {
                            ApiError::bad_request("a text content part has no 'text' string")
                        })?)
                    }
                    Some(other) => {
                        return Err(ApiError::bad_request(format!(
                            "content parts of type '{other}' are not supported (text only)"
                        )));
                    }
                    None => return Err(ApiError::bad_request("a content part has no 'type'")),
                }
            }
            Ok(texts.join("\n"))
        }
        _ => Err(ApiError::bad_request(
            "'content' must be a string or an array of content parts",
        )),
    }
}

/// A conversation as sent: system texts, the texts before the last user
/// message, and that message.
#[derive(Debug, Default)]
pub struct Conversation {
    pub system: Vec<String>,
    pub history: Vec<Text>,
    pub prompt: String,
}

impl Conversation {
    /// Adds one message by role; tool and function messages are the client's
    /// own business and are left out of the agent's view.
    pub fn push(&mut self, role: &str, text: String) -> Result<(), ApiError> {
        match role {
            "system" | "developer" => {
                if !text.trim().is_empty() {
                    self.system.push(text);
                }
            }
            "user" => self.history.push(Text::user(text)),
            "assistant" => {
                if !text.trim().is_empty() {
                    self.history.push(Text::assistant(text));
                }
            }
            "tool" | "function" => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown message role '{other}'"
                )));
            }
        }
        Ok(())
    }

    /// Splits off the last user message as the prompt.
    pub fn finish(mut self) -> Result<Self, ApiError> {
        match self.history.pop() {
            Some(last) if last.role == talaria_kernel::Role::User => {
                if last.text.trim().is_empty() {
                    return Err(ApiError::bad_request("the last user message is empty"));
                }
                self.prompt = last.text;
                Ok(self)
            }
            _ => Err(ApiError::bad_request(
                "the conversation must end with a user message",
            )),
        }
    }

    /// The system texts as one layer.
    pub fn system_text(&self) -> Option<String> {
        (!self.system.is_empty()).then(|| self.system.join("\n\n"))
    }
}

/// A run in progress: its session, its events, and the guard that cancels it
/// when the client goes away.
pub struct Started {
    pub session_id: String,
    pub events: mpsc::UnboundedReceiver<RunEvent>,
    pub cancel: DropGuard,
}

/// Where the conversation goes: the named session, else the hash chain.
pub fn target(
    state: &Shared,
    key: &KeyId,
    named: Option<String>,
    history: &[Text],
) -> Result<Target, ApiError> {
    if let Some(named) = named {
        return Ok(Target::Named(named));
    }
    let runner = &state.runner;
    let db = talaria_store::SessionDb::shared(runner_home_db(state))
        .map_err(|e| ApiError::server(format!("the session database: {e}")))?;
    let placement = runner
        .map
        .place(key, history, |id| runner.current(&db, id))
        .map_err(|e| ApiError::server(e.to_string()))?;
    Ok(Target::Placed(placement))
}

fn runner_home_db(state: &Shared) -> std::path::PathBuf {
    state.runner.session_db()
}

/// Takes a run slot (429 when none is free), places the session and starts
/// the run.
pub async fn start(
    state: &Shared,
    key: KeyId,
    named: Option<String>,
    conversation: Conversation,
) -> Result<Started, ApiError> {
    let permit = state
        .runs
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::busy(state.max_runs))?;
    let prepared = {
        let state = state.clone();
        let key = key.clone();
        let history = conversation.history.clone();
        tokio::task::spawn_blocking(move || {
            let target = target(&state, &key, named, &history)?;
            state.runner.prepare(target, &key.principal)
        })
        .await
        .map_err(|e| ApiError::server(format!("the request's setup failed: {e}")))??
    };
    let session_id = prepared.session_id.clone();
    let cancel = CancellationToken::new();
    let request = RunRequest {
        key,
        system: conversation.system_text(),
        prompt: conversation.prompt,
    };
    let events = state
        .runner
        .start(prepared, request, cancel.clone(), permit);
    Ok(Started {
        session_id,
        events,
        cancel: cancel.drop_guard(),
    })
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `prefix` and 24 random hex digits.
pub fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = fastrand::u128(..).to_le_bytes()[..12]
            .try_into()
            .unwrap_or([0; 12]);
    }
    format!("{prefix}{}", crate::auth::hex(&bytes))
}

/// The session header on a reply.
pub fn session_header(session_id: &str) -> [(http::HeaderName, http::HeaderValue); 1] {
    [(
        http::HeaderName::from_static(SESSION_HEADER),
        http::HeaderValue::from_str(session_id).unwrap_or(http::HeaderValue::from_static("")),
    )]
}
