//! The Anthropic Messages wire format, every step kind, streaming and not.
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common::{
    RawResponse, anthropic_body, exchange, post, post_with, request_bytes, server,
};
use serde_json::{Value, json};
use talaria_testkit::{
    LineEnding, Script, ScriptedServer, ServerOptions, Step, StepKind, ToolCall,
};

const PATH: &str = "/v1/messages";

async fn stream_of(step: Step) -> RawResponse {
    let s = server([step]).await;
    post(s.addr(), PATH, &anthropic_body(true)).await
}

async fn body_of(step: Step) -> Value {
    let s = server([step]).await;
    let r = post(s.addr(), PATH, &anthropic_body(false)).await;
    assert_eq!(r.status, 200);
    assert!(r.complete);
    r.json()
}

/// Event names, checking each `event:` line matches its data's `type`.
fn event_names(r: &RawResponse) -> Vec<String> {
    r.sse()
        .into_iter()
        .map(|(event, data)| {
            let event = event.unwrap_or_else(|| panic!("unnamed event: {data}"));
            let data: Value = serde_json::from_str(&data).unwrap();
            assert_eq!(data["type"], event.as_str());
            event
        })
        .collect()
}

/// Concatenated deltas of `delta_type`, read from field `field`, for block `index`.
fn deltas(r: &RawResponse, index: u64, delta_type: &str, field: &str) -> (String, usize) {
    let parts: Vec<String> = r
        .sse_json()
        .into_iter()
        .filter(|e| e["type"] == "content_block_delta" && e["index"] == index)
        .filter(|e| e["delta"]["type"] == delta_type)
        .map(|e| e["delta"][field].as_str().unwrap().to_owned())
        .collect();
    (parts.concat(), parts.len())
}

fn event(r: &RawResponse, name: &str) -> Value {
    r.sse_json()
        .into_iter()
        .find(|e| e["type"] == name)
        .unwrap()
}

#[tokio::test]
async fn text_stream() {
    let text = "Hello there, this is a streamed answer ✓";
    let r = stream_of(Step::text(text)).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert!(r.complete && r.closed);
    assert!(r.chunks.iter().all(|&n| n <= 11) && r.chunks.len() > 20);

    let names = event_names(&r);
    assert_eq!(
        &names[..3],
        ["message_start", "ping", "content_block_start"]
    );
    assert_eq!(
        &names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );

    let start = event(&r, "message_start");
    assert_eq!(start["message"]["type"], "message");
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(start["message"]["model"], "claude-test");
    assert_eq!(start["message"]["content"], json!([]));
    assert!(start["message"]["stop_reason"].is_null());
    assert!(start["message"]["usage"]["input_tokens"].as_u64().unwrap() > 0);

    let block = event(&r, "content_block_start");
    assert_eq!(block["index"], 0);
    assert_eq!(block["content_block"], json!({"type": "text", "text": ""}));
    let (streamed, count) = deltas(&r, 0, "text_delta", "text");
    assert_eq!(streamed, text);
    assert!(count > 3);

    let delta = event(&r, "message_delta");
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert!(delta["delta"]["stop_sequence"].is_null());
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn text_non_stream() {
    let b = body_of(Step::text("Hello there")).await;
    assert_eq!(b["type"], "message");
    assert_eq!(b["role"], "assistant");
    assert_eq!(b["model"], "claude-test");
    assert_eq!(
        b["content"],
        json!([{"type": "text", "text": "Hello there"}])
    );
    assert_eq!(b["stop_reason"], "end_turn");
    assert!(b["stop_sequence"].is_null());
    assert!(b["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(b["usage"]["output_tokens"], 3);
}

#[tokio::test]
async fn thinking() {
    let step = Step::text_with_reasoning("The answer is 4.", "2 + 2 makes four, obviously");
    let r = stream_of(step.clone()).await;
    let starts: Vec<Value> = r
        .sse_json()
        .into_iter()
        .filter(|e| e["type"] == "content_block_start")
        .map(|e| e["content_block"]["type"].clone())
        .collect();
    assert_eq!(starts, [json!("thinking"), json!("text")]);
    assert_eq!(
        deltas(&r, 0, "thinking_delta", "thinking").0,
        "2 + 2 makes four, obviously"
    );
    assert_eq!(deltas(&r, 0, "signature_delta", "signature").1, 1);
    assert_eq!(deltas(&r, 1, "text_delta", "text").0, "The answer is 4.");

    let b = body_of(step).await;
    assert_eq!(b["content"][0]["type"], "thinking");
    assert_eq!(b["content"][0]["thinking"], "2 + 2 makes four, obviously");
    assert!(b["content"][0]["signature"].is_string());
    assert_eq!(b["content"][1]["text"], "The answer is 4.");
}

fn tool_step() -> Step {
    StepKind::ToolCalls {
        text: Some("Let me look.".into()),
        calls: vec![
            ToolCall::new("read_file", r#"{"path":"src/main.rs","limit":100}"#)
                .with_id("toolu_abc"),
            ToolCall::new("broken", r#"{"unterminated": "#),
        ],
        reasoning: None,
    }
    .into()
}

#[tokio::test]
async fn tool_use_stream() {
    let r = stream_of(tool_step()).await;
    assert!(r.complete);
    assert_eq!(deltas(&r, 0, "text_delta", "text").0, "Let me look.");
    let blocks: Vec<Value> = r
        .sse_json()
        .into_iter()
        .filter(|e| e["type"] == "content_block_start")
        .map(|e| e["content_block"].clone())
        .collect();
    assert_eq!(blocks.len(), 3);
    assert_eq!(
        blocks[1],
        json!({"type": "tool_use", "id": "toolu_abc", "name": "read_file", "input": {}})
    );
    assert_eq!(blocks[2]["name"], "broken");
    let generated = blocks[2]["id"].as_str().unwrap();
    assert!(generated.starts_with("toolu_") && generated != "toolu_abc");

    let (json, count) = deltas(&r, 1, "input_json_delta", "partial_json");
    assert_eq!(json, r#"{"path":"src/main.rs","limit":100}"#);
    assert!(count > 2, "input split over several deltas");
    assert_eq!(
        deltas(&r, 2, "input_json_delta", "partial_json").0,
        r#"{"unterminated": "#
    );
    assert_eq!(
        event(&r, "message_delta")["delta"]["stop_reason"],
        "tool_use"
    );
    let stops = r
        .sse_json()
        .into_iter()
        .filter(|e| e["type"] == "content_block_stop")
        .count();
    assert_eq!(stops, 3);
}

#[tokio::test]
async fn tool_use_non_stream() {
    let b = body_of(tool_step()).await;
    assert_eq!(b["stop_reason"], "tool_use");
    assert_eq!(
        b["content"][0],
        json!({"type": "text", "text": "Let me look."})
    );
    assert_eq!(
        b["content"][1],
        json!({"type": "tool_use", "id": "toolu_abc", "name": "read_file", "input": {"path": "src/main.rs", "limit": 100}})
    );
    // Invalid arguments cannot be an object: they come through as a string.
    assert_eq!(b["content"][2]["input"], r#"{"unterminated": "#);
}

#[tokio::test]
async fn truncated() {
    let r = stream_of(Step::truncated("This answer was cut")).await;
    assert_eq!(
        event(&r, "message_delta")["delta"]["stop_reason"],
        "max_tokens"
    );
    assert_eq!(
        body_of(Step::truncated("cut")).await["stop_reason"],
        "max_tokens"
    );
}

#[tokio::test]
async fn errors() {
    let s = server([
        Step::rate_limited(Some("3")),
        Step::server_error(),
        Step::error(529, "Overloaded right now"),
    ])
    .await;
    let r = post(s.addr(), PATH, &anthropic_body(true)).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("3"));
    assert_eq!(r.json()["type"], "error");
    assert_eq!(r.json()["error"]["type"], "rate_limit_error");

    let r = post(s.addr(), PATH, &anthropic_body(false)).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["error"]["type"], "api_error");

    let r = post(s.addr(), PATH, &anthropic_body(false)).await;
    assert_eq!(r.status, 529);
    assert_eq!(
        r.json()["error"],
        json!({"type": "overloaded_error", "message": "Overloaded right now"})
    );
}

#[tokio::test]
async fn context_overflow() {
    let s = server([Step::context_overflow()]).await;
    let r = post(s.addr(), PATH, &anthropic_body(false)).await;
    assert_eq!(r.status, 400);
    let b = r.json();
    assert_eq!(b["type"], "error");
    assert_eq!(b["error"]["type"], "invalid_request_error");
    let message = b["error"]["message"].as_str().unwrap();
    let (tokens, max) = message
        .strip_prefix("prompt is too long: ")
        .and_then(|m| m.strip_suffix(" maximum"))
        .and_then(|m| m.split_once(" tokens > "))
        .unwrap();
    assert!(tokens.parse::<u64>().unwrap() > max.parse::<u64>().unwrap());
}

#[tokio::test]
async fn malformed() {
    let r = stream_of(Step::malformed_sse()).await;
    assert_eq!(r.status, 200);
    let events = r.sse();
    assert!(events.iter().all(|(e, _)| e.is_some()));
    assert!(
        events
            .iter()
            .all(|(_, d)| serde_json::from_str::<Value>(d).is_err())
    );

    let s = server([Step::malformed_sse()]).await;
    let r = post(s.addr(), PATH, &anthropic_body(false)).await;
    assert_eq!(r.status, 200);
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
}

#[tokio::test]
async fn stall() {
    let s = server([
        Step::stall(Duration::from_secs(30)),
        Step::stall(Duration::from_millis(200)),
    ])
    .await;
    let r = post_with(
        s.addr(),
        PATH,
        &anthropic_body(true),
        Duration::from_millis(400),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(!r.closed && !r.complete);
    assert_eq!(r.chunks, [11]);

    let request = request_bytes(s.addr(), PATH, &anthropic_body(false));
    let (raw, closed) = exchange(s.addr(), &request, Duration::from_secs(10)).await;
    assert!(closed && raw.is_empty());
}

#[tokio::test]
async fn drop_mid_stream() {
    let r = stream_of(Step::drop_mid_stream()).await;
    assert!(r.closed && !r.complete);
    let names = event_names(&r);
    assert_eq!(
        &names[..3],
        ["message_start", "ping", "content_block_start"]
    );
    assert!(names.iter().filter(|n| *n == "content_block_delta").count() >= 2);
    assert!(
        !names
            .iter()
            .any(|n| n == "message_stop" || n == "message_delta")
    );
}

#[tokio::test]
async fn alias_path_crlf_and_exhaustion() {
    let options = ServerOptions {
        line_ending: LineEnding::CrLf,
        ..ServerOptions::default()
    };
    let s = ScriptedServer::start(Script::new([Step::text("crlf")]), options)
        .await
        .unwrap();
    let r = post(s.addr(), "/messages", &anthropic_body(true)).await;
    assert!(
        r.text()
            .contains("event: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\n")
    );
    assert_eq!(deltas(&r, 0, "text_delta", "text").0, "crlf");

    let r = post(s.addr(), PATH, &anthropic_body(false)).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["type"], "error");
    assert_eq!(
        r.json()["error"]["message"],
        "scripted server: script exhausted (request 2)"
    );
}

#[tokio::test]
async fn cache_usage_when_the_system_prompt_repeats() {
    let s = server([Step::text("a"), Step::text("b")]).await;
    let first = post(s.addr(), PATH, &anthropic_body(false)).await.json();
    let second = post(s.addr(), PATH, &anthropic_body(false)).await.json();
    assert!(
        first["usage"]["cache_creation_input_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(first["usage"]["cache_read_input_tokens"], 0);
    assert!(second["usage"]["cache_read_input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(second["usage"]["cache_creation_input_tokens"], 0);
    // input_tokens excludes the cached part; the three add up to the same prompt.
    let total = |b: &Value| {
        [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ]
        .iter()
        .map(|k| b["usage"][k].as_u64().unwrap())
        .sum::<u64>()
    };
    assert_eq!(total(&first), total(&second));
}
