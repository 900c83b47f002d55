//! mem0's REST API, version 1, as far as this plugin uses it:
//!
//! - `POST /v1/memories/` `{messages: [{role, content}], user_id, agent_id,
//!   metadata}`: mem0 infers memories from the messages (answers the events);
//! - `POST /v1/memories/search/` `{query, user_id, limit}` → a list of
//!   `{id, memory, score?}` (newer servers wrap it: `{results: […]}`);
//! - `GET /v1/memories/?user_id=…` → the user's memories, likewise;
//! - `DELETE /v1/memories/{id}/`.
//!
//! Every request carries `Authorization: Token <key>`, the key written as a
//! secret placeholder the host fills in. Errors are JSON such as
//! `{"detail": "…"}` or `{"error": "…", "details": {"message": "…"}}`.

use serde_json::{Value, json};
use talaria_plugin_sdk::HostError;
use talaria_plugin_sdk::http::{self, secret};

use crate::settings::Settings;

/// The secret holding the API key.
pub const API_KEY_SECRET: &str = "MEM0_API_KEY";
/// How long a search may take: it runs before the turn, on its path.
pub const SEARCH_TIMEOUT_MS: u64 = 10_000;
/// How long other requests may take.
pub const WRITE_TIMEOUT_MS: u64 = 25_000;
/// Longest message sent, in characters (its head): memories come from what
/// was said, not from pasted files.
pub const MAX_MESSAGE_CHARS: usize = 8000;

/// A request to send.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiRequest {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Value>,
    pub timeout_ms: u64,
}

/// What the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiResponse {
    pub status: u16,
    pub body: String,
}

/// Sends requests: the host's HTTP in the component, a script in tests.
pub trait Transport {
    fn send(&self, request: &ApiRequest) -> Result<ApiResponse, HostError>;
}

/// Outgoing HTTP through the host (the manifest grants only `base_url`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostHttp;

impl Transport for HostHttp {
    fn send(&self, request: &ApiRequest) -> Result<ApiResponse, HostError> {
        let mut outgoing =
            http::Request::new(request.method, request.url.as_str()).timeout_ms(request.timeout_ms);
        for (name, value) in &request.headers {
            outgoing = outgoing.header(name.as_str(), value.as_str());
        }
        if let Some(body) = &request.body {
            outgoing = outgoing.json(body);
        }
        let response = outgoing.send()?;
        Ok(ApiResponse {
            status: response.status,
            body: response.text(),
        })
    }
}

/// A message to learn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Said<'a> {
    /// `user` or `assistant`.
    pub role: &'static str,
    pub content: &'a str,
}

/// A memory mem0 returned.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    pub id: String,
    pub text: String,
    /// Relevance, on search results.
    pub score: Option<f64>,
}

fn request(method: &'static str, url: String, body: Option<Value>, timeout_ms: u64) -> ApiRequest {
    ApiRequest {
        method,
        url,
        headers: vec![
            (
                "authorization".into(),
                format!("Token {}", secret(API_KEY_SECRET)),
            ),
            ("accept".into(), "application/json".into()),
        ],
        body,
        timeout_ms,
    }
}

fn head(text: &str) -> &str {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `POST /v1/memories/`: mem0 learns from `messages`, for the settings'
/// user and agent, with `metadata`.
pub fn add(settings: &Settings, messages: &[Said<'_>], metadata: Value) -> ApiRequest {
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| json!({ "role": m.role, "content": head(m.content) }))
        .collect();
    let body = json!({
        "messages": messages,
        "user_id": settings.user_id,
        "agent_id": settings.agent_id,
        "metadata": metadata,
    });
    let url = format!("{}/v1/memories/", settings.base_url);
    request("POST", url, Some(body), WRITE_TIMEOUT_MS)
}

/// `POST /v1/memories/search/`: the user's memories relevant to `query`.
pub fn search(settings: &Settings, query: &str, limit: usize) -> ApiRequest {
    let body = json!({ "query": head(query), "user_id": settings.user_id, "limit": limit });
    let url = format!("{}/v1/memories/search/", settings.base_url);
    request("POST", url, Some(body), SEARCH_TIMEOUT_MS)
}

/// `GET /v1/memories/?user_id=…`: every memory of the user.
pub fn list(settings: &Settings) -> ApiRequest {
    let url = format!(
        "{}/v1/memories/?user_id={}",
        settings.base_url,
        percent_encode(&settings.user_id)
    );
    request("GET", url, None, WRITE_TIMEOUT_MS)
}

/// `DELETE /v1/memories/{id}/`.
pub fn delete(settings: &Settings, id: &str) -> ApiRequest {
    let url = format!("{}/v1/memories/{}/", settings.base_url, percent_encode(id));
    request("DELETE", url, None, WRITE_TIMEOUT_MS)
}

/// `text` safe in a URL's path segment or query value: everything but
/// unreserved characters percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Sends `request`; the body of a 2xx answer, else an error saying what
/// failed: the status and the service's own message, or why the request
/// did not get through.
pub fn call(transport: &dyn Transport, request: &ApiRequest) -> Result<String, String> {
    let response = transport.send(request).map_err(|e| match e {
        HostError::Denied(why) => format!(
            "mem0 at {} is not reachable: the host denied the request ({why})",
            origin(&request.url)
        ),
        other => format!(
            "mem0 at {} is not reachable: {}",
            origin(&request.url),
            other.message()
        ),
    })?;
    if (200..300).contains(&response.status) {
        return Ok(response.body);
    }
    let hint = match response.status {
        401 | 403 => " (check MEM0_API_KEY)",
        _ => "",
    };
    Err(format!(
        "mem0 answered {} to {} {}: {}{hint}",
        response.status,
        request.method,
        path(&request.url),
        service_message(&response.body)
    ))
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

/// The path (and query) of a URL.
fn path(url: &str) -> &str {
    &url[origin(url).len()..]
}

/// The message of an error answer: mem0's `detail`, `details.message`,
/// `error` or `message`, else the body's head.
fn service_message(body: &str) -> String {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let text = |pointer: &str| {
        parsed
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    let found = ["/detail", "/details/message", "/error", "/message"]
        .iter()
        .find_map(|p| text(p));
    match found {
        Some(message) => message.to_owned(),
        None if body.trim().is_empty() => "no message".to_owned(),
        None => body.trim().chars().take(300).collect(),
    }
}

/// The memories of a search or list answer: a JSON list, or an object with
/// the list under `results` (or `memories`). Items without text are
/// skipped.
pub fn parse_memories(body: &str) -> Result<Vec<Memory>, String> {
    let answer: Value =
        serde_json::from_str(body).map_err(|e| format!("mem0's answer is not JSON: {e}"))?;
    let items = match &answer {
        Value::Array(items) => items,
        Value::Object(fields) => match fields.get("results").or_else(|| fields.get("memories")) {
            Some(Value::Array(items)) => items,
            _ => return Err("mem0's answer has no list of memories".to_owned()),
        },
        _ => return Err("mem0's answer has no list of memories".to_owned()),
    };
    Ok(items.iter().filter_map(memory).collect())
}

fn memory(item: &Value) -> Option<Memory> {
    let text = item
        .get("memory")
        .or_else(|| item.pointer("/data/memory"))
        .and_then(Value::as_str)?
        .trim();
    if text.is_empty() {
        return None;
    }
    let id = match item.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    Some(Memory {
        id,
        text: text.to_owned(),
        score: item.get("score").and_then(Value::as_f64),
    })
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
