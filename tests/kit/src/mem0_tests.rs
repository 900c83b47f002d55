#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

const KEY: &str = "k-123";

/// One request on a fresh connection with `authorization` (if any): the
/// status and the JSON body (`null` when it is not JSON).
fn send(
    fake: &FakeMem0,
    method: &str,
    target: &str,
    authorization: Option<&str>,
    body: &[u8],
) -> io::Result<(u16, Value)> {
    let mut stream = TcpStream::connect(fake.addr())?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: api.mem0.test\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(value) = authorization {
        head.push_str(&format!("Authorization: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("no response head"))?;
    let status_line = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {status_line:?}")))?;
    let body = serde_json::from_slice(&answer[split + 4..]).unwrap_or(Value::Null);
    Ok((status, body))
}

/// An authorised request with a JSON body.
fn call(fake: &FakeMem0, method: &str, target: &str, body: &Value) -> (u16, Value) {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    send(fake, method, target, Some(&format!("Token {KEY}")), &bytes).unwrap()
}

fn add(fake: &FakeMem0, user_id: &str, messages: Value) -> (u16, Value) {
    call(
        fake,
        "POST",
        "/v1/memories/",
        &json!({"messages": messages, "user_id": user_id, "agent_id": "talaria",
                "metadata": {"source": "test"}}),
    )
}

fn search(fake: &FakeMem0, user_id: &str, query: &str, limit: Option<u64>) -> Vec<String> {
    let mut body = json!({"query": query, "user_id": user_id});
    if let Some(limit) = limit {
        body["limit"] = json!(limit);
    }
    let (status, answer) = call(fake, "POST", "/v1/memories/search/", &body);
    assert_eq!(status, 200, "{answer}");
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn added_user_messages_become_memories_once() {
    let fake = FakeMem0::spawn_with_key(KEY).unwrap();
    let (status, events) = add(
        &fake,
        "ada",
        json!([
            {"role": "user", "content": "I moved to Lisbon"},
            {"role": "assistant", "content": "Welcome to Lisbon!"},
            {"role": "user", "content": "  "}
        ]),
    );
    assert_eq!(status, 200);
    assert_eq!(
        events,
        json!([{"id": "mem-1", "event": "ADD", "data": {"memory": "I moved to Lisbon"}}])
    );
    let (_, again) = add(
        &fake,
        "ada",
        json!([{"role": "user", "content": "I moved to Lisbon"}]),
    );
    assert_eq!(again, json!([]));
    add(
        &fake,
        "bob",
        json!([{"role": "user", "content": "I moved to Lisbon"}]),
    );
    assert_eq!(
        fake.memories(),
        [
            ("mem-1".into(), "ada".into(), "I moved to Lisbon".into()),
            ("mem-2".into(), "bob".into(), "I moved to Lisbon".into()),
        ]
    );
}

#[test]
fn search_ranks_by_shared_words_within_the_users_memories() {
    let fake = FakeMem0::spawn_with_key(KEY).unwrap();
    fake.remember("ada", "Lives in Lisbon");
    fake.remember("ada", "Drinks green TEA every morning");
    fake.remember("ada", "Prefers tea over coffee");
    fake.remember("bob", "Drinks tea");
    assert_eq!(
        search(&fake, "ada", "green tea?", None),
        ["Drinks green TEA every morning", "Prefers tea over coffee"]
    );
    assert_eq!(
        search(&fake, "ada", "tea", Some(1)),
        ["Drinks green TEA every morning"]
    );
    assert!(search(&fake, "ada", "weather forecast", None).is_empty());
    let (_, answer) = call(
        &fake,
        "POST",
        "/v1/memories/search/",
        &json!({"query": "lisbon", "user_id": "ada"}),
    );
    let hit = &answer[0];
    assert_eq!(hit["id"], "mem-1");
    assert_eq!(hit["user_id"], "ada");
    assert_eq!(hit["score"], 1.0);
}

#[test]
fn list_and_delete() {
    let fake = FakeMem0::spawn_with_key(KEY).unwrap();
    let first = fake.remember("ada lovelace", "Lives in Lisbon");
    fake.remember("ada lovelace", "Likes tea");
    fake.remember("bob", "Likes coffee");
    let (status, listed) = call(
        &fake,
        "GET",
        "/v1/memories/?user_id=ada%20lovelace",
        &Value::Null,
    );
    assert_eq!(status, 200);
    let texts: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Lives in Lisbon", "Likes tea"]);

    let target = format!("/v1/memories/{first}/");
    let (status, answer) = call(&fake, "DELETE", &target, &Value::Null);
    assert_eq!((status, answer["message"].is_string()), (200, true));
    assert_eq!(fake.memories().len(), 2);
    let (status, _) = call(&fake, "DELETE", &target, &Value::Null);
    assert_eq!(status, 404);
    let (status, _) = call(&fake, "GET", "/v1/memories/", &Value::Null);
    assert_eq!(status, 400);
}

#[test]
fn requests_without_the_key_are_unauthorized_and_recorded() {
    let fake = FakeMem0::spawn_with_key(KEY).unwrap();
    let body = br#"{"query": "x", "user_id": "ada"}"#;
    let (status, answer) = send(&fake, "POST", "/v1/memories/search/", None, body).unwrap();
    assert_eq!(status, 401);
    assert!(answer["detail"].is_string());
    let wrong = Some("Token other");
    let (status, _) = send(&fake, "POST", "/v1/memories/search/", wrong, body).unwrap();
    assert_eq!(status, 401);
    let bearer = Some("Bearer k-123");
    let (status, _) = send(&fake, "POST", "/v1/memories/search/", bearer, body).unwrap();
    assert_eq!(status, 401);

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0],
        Mem0Request {
            method: "POST".into(),
            path: "/v1/memories/search/".into(),
            query: String::new(),
            authorization: None,
            body: json!({"query": "x", "user_id": "ada"}),
        }
    );
    assert_eq!(requests[1].authorization.as_deref(), Some("Token other"));
    assert_eq!(FakeMem0::spawn().unwrap().key(), DEFAULT_KEY);
}

#[test]
fn malformed_bodies_unknown_paths_and_wrong_methods_are_refused() {
    let fake = FakeMem0::spawn_with_key(KEY).unwrap();
    let auth = Some("Token k-123");
    let (status, answer) = send(&fake, "POST", "/v1/memories/", auth, b"{not json").unwrap();
    assert_eq!(status, 400);
    assert!(answer["detail"].as_str().unwrap().contains("JSON"));
    assert_eq!(fake.requests()[0].body, Value::Null);
    let (status, answer) = add(&fake, "ada", json!([]));
    assert_eq!(status, 400, "{answer}");
    let (status, _) = call(
        &fake,
        "POST",
        "/v1/memories/",
        &json!({"messages": [
        {"role": "user", "content": "no user"}]}),
    );
    assert_eq!(status, 400);
    let (status, _) = call(
        &fake,
        "POST",
        "/v1/memories/search/",
        &json!({"user_id": "a"}),
    );
    assert_eq!(status, 400);
    let (status, _) = call(&fake, "POST", "/v2/memories/", &json!({}));
    assert_eq!(status, 404);
    let (status, _) = call(&fake, "GET", "/v1/memories/search/", &Value::Null);
    assert_eq!(status, 405);
    assert!(fake.memories().is_empty());
}

#[test]
fn a_delay_holds_answers_until_it_is_lifted() {
    let fake = FakeMem0::spawn_with_key(KEY).unwrap();
    fake.set_delay(Duration::from_millis(400));
    let mut stream = TcpStream::connect(fake.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    stream
        .write_all(
            b"GET /v1/memories/?user_id=ada HTTP/1.1\r\nAuthorization: Token k-123\r\n\
              Connection: close\r\n\r\n",
        )
        .unwrap();
    let mut byte = [0; 1];
    let early = stream.read(&mut byte).unwrap_err();
    assert!(
        matches!(
            early.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
        "{early}"
    );
    // The held answer still comes.
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    fake.set_delay(Duration::ZERO);
    let started = Instant::now();
    let (status, _) = call(&fake, "GET", "/v1/memories/?user_id=ada", &Value::Null);
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_millis(300));
}
