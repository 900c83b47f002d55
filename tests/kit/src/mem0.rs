//! A fake mem0 REST API (version 1) on loopback, for testing memory
//! providers without mem0's platform. It keeps memories in memory and
//! records every request.
//!
//! The endpoints, as mem0 documents them:
//! - `POST /v1/memories/` `{messages: [{role, content}], user_id, agent_id?,
//!   metadata?}` answers the events it caused, `[{id, event: "ADD", data:
//!   {memory}}]`. mem0 infers memories with a model; the fake keeps each
//!   user message as one memory (the same text twice for a user is kept once,
//!   as mem0's `NOOP`);
//! - `POST /v1/memories/search/` `{query, user_id, limit?}` answers a list of
//!   `{id, memory, user_id, agent_id, metadata, score}`, best first: the
//!   score is the share of the query's words (case-insensitive runs of
//!   letters and digits) the memory contains; memories sharing no word are
//!   left out; `limit` defaults to 10;
//! - `GET /v1/memories/?user_id=…` answers the user's memories, oldest first;
//! - `DELETE /v1/memories/{id}/` answers `{"message": "Memory deleted
//!   successfully!"}`, or 404 for an unknown id.
//!
//! Every request needs `Authorization: Token <key>`; without it, or with
//! another key, the answer is 401 `{"detail": "…"}`. A body that is not
//! JSON, or lacks a required field, is 400 `{"detail": "…"}`; an unknown
//! path is 404, a known path with another method 405. Paths end with `/` as
//! mem0's do.

use std::collections::HashSet;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::http::{Ending, Request, Response, Running};

/// The key [`FakeMem0::spawn`] expects.
pub const DEFAULT_KEY: &str = "mem0-test-key";
/// Search results unless the request's `limit` says otherwise.
const DEFAULT_SEARCH_LIMIT: usize = 10;

/// A request the fake received, in order, whatever it answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Mem0Request {
    /// `GET`, `POST`, `DELETE`…
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string without `?` (empty when none).
    pub query: String,
    /// The `Authorization` header as sent.
    pub authorization: Option<String>,
    /// The JSON body; `null` when there was none or it was not JSON.
    pub body: Value,
}

#[derive(Clone, Debug)]
struct StoredMemory {
    id: String,
    user_id: String,
    agent_id: Option<String>,
    text: String,
    metadata: Value,
}

impl StoredMemory {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "memory": self.text,
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "metadata": self.metadata,
        })
    }
}

#[derive(Default)]
struct State {
    memories: Vec<StoredMemory>,
    requests: Vec<Mem0Request>,
    next_id: u64,
    delay: Duration,
}

impl State {
    fn remember(
        &mut self,
        user_id: &str,
        agent_id: Option<&str>,
        text: &str,
        metadata: Value,
    ) -> Option<String> {
        let known = self
            .memories
            .iter()
            .any(|m| m.user_id == user_id && m.text == text);
        if known {
            return None;
        }
        self.next_id += 1;
        let id = format!("mem-{}", self.next_id);
        self.memories.push(StoredMemory {
            id: id.clone(),
            user_id: user_id.to_owned(),
            agent_id: agent_id.map(str::to_owned),
            text: text.to_owned(),
            metadata,
        });
        Some(id)
    }
}

struct Shared {
    key: String,
    state: Mutex<State>,
    stop: watch::Receiver<bool>,
}

/// A running fake mem0 server on 127.0.0.1. Dropping it shuts it down.
pub struct FakeMem0 {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _running: Running,
}

impl std::fmt::Debug for FakeMem0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeMem0")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeMem0 {
    /// Starts a server expecting the key [`DEFAULT_KEY`].
    pub fn spawn() -> io::Result<Self> {
        Self::spawn_with_key(DEFAULT_KEY)
    }

    /// Starts a server expecting `Authorization: Token <key>`, on a
    /// background thread with its own runtime.
    pub fn spawn_with_key(key: &str) -> io::Result<Self> {
        let (shutdown, stop) = watch::channel(false);
        let shared = Arc::new(Shared {
            key: key.to_owned(),
            state: Mutex::new(State::default()),
            stop,
        });
        let (addr, running) = crate::http::spawn_api("mem0-fake", Arc::clone(&shared), shutdown)?;
        Ok(Self {
            addr,
            shared,
            _running: running,
        })
    }

    /// `http://127.0.0.1:PORT`: the provider's `base_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The key it expects.
    pub fn key(&self) -> &str {
        &self.shared.key
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Mem0Request> {
        self.shared.lock().requests.clone()
    }

    /// The stored memories, oldest first: `(id, user_id, text)`.
    pub fn memories(&self) -> Vec<(String, String, String)> {
        let state = self.shared.lock();
        state
            .memories
            .iter()
            .map(|m| (m.id.clone(), m.user_id.clone(), m.text.clone()))
            .collect()
    }

    /// Stores a memory of `user_id` directly, as if mem0 had inferred it;
    /// returns its id (the existing one for a text the user already has).
    pub fn remember(&self, user_id: &str, text: &str) -> String {
        let mut state = self.shared.lock();
        match state.remember(user_id, None, text, json!({})) {
            Some(id) => id,
            None => state
                .memories
                .iter()
                .find(|m| m.user_id == user_id && m.text == text)
                .map(|m| m.id.clone())
                .unwrap_or_default(),
        }
    }

    /// Holds every later answer for `delay` (zero: answer at once), for
    /// timeout tests.
    pub fn set_delay(&self, delay: Duration) {
        self.shared.lock().delay = delay;
    }
}

fn answer(status: u16, body: &Value) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        chunked: false,
        ending: Ending::Complete,
    }
}

/// An error answer the way mem0's API framework writes them.
fn detail(status: u16, message: &str) -> Response {
    answer(status, &json!({ "detail": message }))
}

/// The lower-case words of `text`.
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The value of `name` in a query string, percent-decoded.
fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| percent_decode(value))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                i += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                i += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// A required string field of a request body.
fn required_str<'a>(body: &'a Value, field: &str) -> Result<&'a str, Response> {
    body.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| detail(400, &format!("{field} is required")))
}

impl crate::http::FakeApi for Shared {
    fn stopped(&self) -> impl std::future::Future<Output = ()> + Send {
        Shared::stopped(self)
    }

    fn respond(&self, request: Request) -> impl std::future::Future<Output = Response> + Send {
        Shared::respond(self, request)
    }

    fn bad_request(&self, error: &str) -> Response {
        detail(400, &format!("bad request: {error}"))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn stopped(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|stopped| *stopped).await;
    }

    async fn respond(&self, request: Request) -> Response {
        let parsed: Option<Value> = if request.body.is_empty() {
            None
        } else {
            serde_json::from_slice(&request.body).ok()
        };
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((&request.target, ""));
        let delay = {
            let mut state = self.lock();
            state.requests.push(Mem0Request {
                method: request.method.clone(),
                path: path.to_owned(),
                query: query.to_owned(),
                authorization: request.header("authorization").map(str::to_owned),
                body: parsed.clone().unwrap_or(Value::Null),
            });
            state.delay
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let expected = format!("Token {}", self.key);
        match request.header("authorization") {
            None => return detail(401, "Authentication credentials were not provided."),
            Some(given) if given.trim() != expected => return detail(401, "Invalid API key."),
            Some(_) => {}
        }
        if !request.body.is_empty() && parsed.is_none() {
            return detail(400, "JSON parse error: the body is not valid JSON");
        }
        let body = parsed.unwrap_or(Value::Null);
        let method = request.method.as_str();
        let outcome = match path {
            "/v1/memories/" => match method {
                "POST" => self.add(&body),
                "GET" => self.list(query),
                _ => Err(detail(405, &format!("Method \"{method}\" not allowed."))),
            },
            "/v1/memories/search/" => match method {
                "POST" => self.search(&body),
                _ => Err(detail(405, &format!("Method \"{method}\" not allowed."))),
            },
            _ => match path
                .strip_prefix("/v1/memories/")
                .and_then(|rest| rest.strip_suffix('/'))
                .filter(|id| !id.is_empty() && !id.contains('/'))
            {
                Some(id) if method == "DELETE" => self.delete(&percent_decode(id)),
                Some(_) => Err(detail(405, &format!("Method \"{method}\" not allowed."))),
                None => Err(detail(404, "Not found.")),
            },
        };
        outcome.unwrap_or_else(|error| error)
    }

    fn add(&self, body: &Value) -> Result<Response, Response> {
        let user_id = required_str(body, "user_id")?;
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| detail(400, "messages must be a non-empty list"))?;
        let mut said = Vec::new();
        for message in messages {
            let role = required_str(message, "role")?;
            let content = message
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| detail(400, "every message needs a content"))?;
            if role == "user" && !content.trim().is_empty() {
                said.push(content.trim().to_owned());
            }
        }
        let agent_id = body.get("agent_id").and_then(Value::as_str);
        let metadata = body.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let mut state = self.lock();
        let events: Vec<Value> = said
            .iter()
            .filter_map(|text| {
                let id = state.remember(user_id, agent_id, text, metadata.clone())?;
                Some(json!({"id": id, "event": "ADD", "data": {"memory": text}}))
            })
            .collect();
        Ok(answer(200, &Value::Array(events)))
    }

    fn search(&self, body: &Value) -> Result<Response, Response> {
        let query = required_str(body, "query")?;
        let user_id = required_str(body, "user_id")?;
        let limit = match body.get("limit") {
            None | Some(Value::Null) => DEFAULT_SEARCH_LIMIT,
            Some(limit) => limit
                .as_u64()
                .and_then(|l| usize::try_from(l).ok())
                .ok_or_else(|| detail(400, "limit must be a positive integer"))?,
        };
        let wanted = words(query);
        let state = self.lock();
        let mut found: Vec<(f64, &StoredMemory)> = state
            .memories
            .iter()
            .filter(|m| m.user_id == user_id)
            .filter_map(|m| {
                let shared = words(&m.text).intersection(&wanted).count();
                (shared > 0).then(|| (shared as f64 / wanted.len() as f64, m))
            })
            .collect();
        // Stable: equally scored memories stay oldest first.
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        let results: Vec<Value> = found
            .into_iter()
            .take(limit)
            .map(|(score, m)| {
                let mut item = m.to_json();
                item["score"] = json!(score);
                item
            })
            .collect();
        Ok(answer(200, &Value::Array(results)))
    }

    fn list(&self, query: &str) -> Result<Response, Response> {
        let user_id = query_value(query, "user_id")
            .filter(|u| !u.is_empty())
            .ok_or_else(|| detail(400, "user_id is required"))?;
        let state = self.lock();
        let memories: Vec<Value> = state
            .memories
            .iter()
            .filter(|m| m.user_id == user_id)
            .map(StoredMemory::to_json)
            .collect();
        Ok(answer(200, &Value::Array(memories)))
    }

    fn delete(&self, id: &str) -> Result<Response, Response> {
        let mut state = self.lock();
        let before = state.memories.len();
        state.memories.retain(|m| m.id != id);
        if state.memories.len() == before {
            return Err(detail(404, "Memory not found."));
        }
        Ok(answer(
            200,
            &json!({"message": "Memory deleted successfully!"}),
        ))
    }
}

#[cfg(test)]
#[path = "mem0_tests.rs"]
mod tests;
