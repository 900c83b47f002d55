//! The OpenAI Chat Completions wire format, every step kind, streaming and not.
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common::{RawResponse, exchange, openai_body, post, post_with, request_bytes, server};
use serde_json::{Value, json};
use talaria_testkit::{
    LineEnding, Script, ScriptedServer, ServerOptions, Step, StepKind, ToolCall,
};

const PATH: &str = "/v1/chat/completions";

/// Plays `step` for a streaming request.
async fn stream_of(step: Step) -> RawResponse {
    let s = server([step]).await;
    post(s.addr(), PATH, &openai_body(true)).await
}

/// Plays `step` for a non-streaming request.
async fn body_of(step: Step) -> Value {
    let s = server([step]).await;
    let r = post(s.addr(), PATH, &openai_body(false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.complete);
    r.json()
}

/// Chunks with a choice (not the usage chunk).
fn choice_chunks(r: &RawResponse) -> Vec<Value> {
    r.sse_json()
        .into_iter()
        .filter(|c| !c["choices"].as_array().unwrap().is_empty())
        .collect()
}

fn streamed(r: &RawResponse, field: &str) -> String {
    choice_chunks(r)
        .iter()
        .filter_map(|c| c["choices"][0]["delta"][field].as_str().map(str::to_owned))
        .collect()
}

fn finish_reasons(r: &RawResponse) -> Vec<String> {
    choice_chunks(r)
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn text_non_stream() {
    let b = body_of(Step::text("Hello there")).await;
    assert_eq!(b["object"], "chat.completion");
    assert_eq!(b["model"], "gpt-test");
    let choice = &b["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello there");
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"].get("tool_calls").is_none());
    let usage = &b["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 10);
    assert_eq!(usage["completion_tokens"], 3);
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["prompt_tokens"].as_u64().unwrap() + 3)
    );
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
    assert_eq!(r.header("connection"), Some("close"));
    assert!(r.complete && r.closed);
    assert!(r.chunks.len() > 20, "{} chunks", r.chunks.len());
    assert!(r.chunks.iter().all(|&n| n <= 11));
    assert!(!r.text().contains('\r'));

    let events = r.sse();
    assert!(events.iter().all(|(event, _)| event.is_none()));
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks = r.sse_json();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(streamed(&r, "content"), text);
    assert!(
        choice_chunks(&r).len() > 4,
        "text arrives in several deltas"
    );
    assert_eq!(finish_reasons(&r), ["stop"]);

    // include_usage: every chunk has usage null except the last, which has no choices.
    let (usage_chunk, rest) = chunks.split_last().unwrap();
    assert!(rest.iter().all(|c| c["usage"].is_null()));
    assert_eq!(usage_chunk["choices"], json!([]));
    assert!(usage_chunk["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(usage_chunk["usage"]["completion_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn stream_without_include_usage_has_no_usage() {
    let s = server([Step::text("hi")]).await;
    let mut body = openai_body(true);
    body.as_object_mut().unwrap().remove("stream_options");
    let r = post(s.addr(), PATH, &body).await;
    let chunks = r.sse_json();
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"].as_array().unwrap().len() == 1)
    );
    assert_eq!(r.sse().last().unwrap().1, "[DONE]");
}

#[tokio::test]
async fn reasoning() {
    let step = Step::text_with_reasoning("The answer is 4.", "2 + 2 makes four, obviously");
    let r = stream_of(step.clone()).await;
    assert_eq!(
        streamed(&r, "reasoning_content"),
        "2 + 2 makes four, obviously"
    );
    assert_eq!(streamed(&r, "content"), "The answer is 4.");
    let usage = r.sse_json().last().unwrap()["usage"].clone();
    assert!(
        usage["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    let b = body_of(step).await;
    assert_eq!(
        b["choices"][0]["message"]["reasoning_content"],
        "2 + 2 makes four, obviously"
    );
    assert_eq!(b["choices"][0]["message"]["content"], "The answer is 4.");
}

fn tool_step() -> Step {
    StepKind::ToolCalls {
        text: Some("Let me look.".into()),
        calls: vec![
            ToolCall::new("read_file", r#"{"path":"src/main.rs","limit":100}"#).with_id("call_abc"),
            ToolCall::new("broken", r#"{"unterminated": "#),
        ],
        reasoning: None,
    }
    .into()
}

#[tokio::test]
async fn tool_calls_stream() {
    let r = stream_of(tool_step()).await;
    assert!(r.complete);
    assert_eq!(streamed(&r, "content"), "Let me look.");
    assert_eq!(finish_reasons(&r), ["tool_calls"]);

    // Reassemble the calls by index, as a client must.
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    for chunk in choice_chunks(&r) {
        for part in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = part["index"].as_u64().unwrap() as usize;
            if let Some(id) = part["id"].as_str() {
                assert_eq!(index, calls.len());
                assert_eq!(part["type"], "function");
                assert_eq!(part["function"]["arguments"], "");
                let name = part["function"]["name"].as_str().unwrap();
                calls.push((id.to_owned(), name.to_owned(), String::new(), 0));
            } else {
                assert!(part.get("type").is_none() && part["function"].get("name").is_none());
                let call = &mut calls[index];
                call.2
                    .push_str(part["function"]["arguments"].as_str().unwrap());
                call.3 += 1;
            }
        }
    }
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_abc");
    assert_eq!(calls[0].1, "read_file");
    assert_eq!(calls[0].2, r#"{"path":"src/main.rs","limit":100}"#);
    assert!(calls[0].3 > 2, "arguments split over several chunks");
    assert!(calls[1].0.starts_with("call_") && calls[1].0 != "call_abc");
    assert_eq!(calls[1].2, r#"{"unterminated": "#);
}

#[tokio::test]
async fn tool_calls_non_stream() {
    let b = body_of(tool_step()).await;
    let choice = &b["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me look.");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["id"], "call_abc");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    assert_eq!(
        calls[0]["function"]["arguments"],
        r#"{"path":"src/main.rs","limit":100}"#
    );
    assert_eq!(calls[1]["function"]["arguments"], r#"{"unterminated": "#);

    let b = body_of(Step::tool_call("ls", "{}")).await;
    assert!(b["choices"][0]["message"]["content"].is_null());
}

#[tokio::test]
async fn truncated() {
    let r = stream_of(Step::truncated("This answer was cut")).await;
    assert_eq!(finish_reasons(&r), ["length"]);
    assert_eq!(streamed(&r, "content"), "This answer was cut");
    let b = body_of(Step::truncated("cut")).await;
    assert_eq!(b["choices"][0]["finish_reason"], "length");
}

#[tokio::test]
async fn errors() {
    let s = server([
        Step::rate_limited(Some("7")),
        Step::server_error(),
        Step::error(401, "bad key"),
    ])
    .await;
    let r = post(s.addr(), PATH, &openai_body(true)).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("7"));
    let e = &r.json()["error"];
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str()),
        (Some("requests"), Some("rate_limit_exceeded"))
    );
    assert!(e["message"].as_str().unwrap().contains("Rate limit"));

    let r = post(s.addr(), PATH, &openai_body(false)).await;
    assert_eq!(r.status, 500);
    assert!(r.header("retry-after").is_none());
    assert_eq!(r.json()["error"]["type"], "server_error");
    assert!(r.json()["error"]["code"].is_null());

    let r = post(s.addr(), PATH, &openai_body(false)).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["message"], "bad key");
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");
}

#[tokio::test]
async fn context_overflow() {
    let s = server([Step::context_overflow()]).await;
    let r = post(s.addr(), PATH, &openai_body(true)).await;
    assert_eq!(r.status, 400);
    let e = &r.json()["error"];
    assert_eq!(e["code"], "context_length_exceeded");
    assert_eq!(e["type"], "invalid_request_error");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("This model's maximum context length is 128000 tokens.")
    );
}

#[tokio::test]
async fn malformed() {
    let r = stream_of(Step::malformed_sse()).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let bad = r
        .sse()
        .iter()
        .filter(|(_, d)| d != "[DONE]" && serde_json::from_str::<Value>(d).is_err())
        .count();
    assert!(bad >= 2);

    let s = server([Step::malformed_sse()]).await;
    let r = post(s.addr(), PATH, &openai_body(false)).await;
    assert_eq!(r.status, 200);
    assert!(r.complete);
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
}

#[tokio::test]
async fn stall_stream_sends_one_chunk_then_silence() {
    let s = server([Step::stall(Duration::from_secs(30))]).await;
    let r = post_with(
        s.addr(),
        PATH,
        &openai_body(true),
        Duration::from_millis(400),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(!r.closed && !r.complete);
    assert_eq!(r.chunks, [11]);
}

#[tokio::test]
async fn stall_ends_by_closing() {
    let s = server([
        Step::stall(Duration::from_millis(300)),
        Step::stall(Duration::from_millis(300)),
    ])
    .await;
    let started = Instant::now();
    let r = post(s.addr(), PATH, &openai_body(true)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(r.closed && !r.complete);

    // Non-stream: nothing at all, then close.
    let started = Instant::now();
    let request = request_bytes(s.addr(), PATH, &openai_body(false));
    let (raw, closed) = exchange(s.addr(), &request, Duration::from_secs(10)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(closed && raw.is_empty());
}

#[tokio::test]
async fn stall_stops_at_shutdown() {
    let s = server([Step::stall(Duration::from_secs(60))]).await;
    let addr = s.addr();
    let client = tokio::spawn(async move { post(addr, PATH, &openai_body(true)).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    drop(s);
    let r = client.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(r.closed && !r.complete);
}

#[tokio::test]
async fn drop_mid_stream() {
    let r = stream_of(Step::drop_mid_stream()).await;
    assert_eq!(r.status, 200);
    assert!(r.closed && !r.complete);
    assert!(streamed(&r, "content").len() > 10);
    assert!(finish_reasons(&r).is_empty());
    assert!(r.sse().iter().all(|(_, d)| d != "[DONE]"));

    let s = server([Step::drop_mid_stream()]).await;
    let r = post(s.addr(), PATH, &openai_body(false)).await;
    assert!(r.closed && !r.complete);
    assert!(!r.body.is_empty());
}

#[tokio::test]
async fn exhausted_script() {
    let s = server([Step::text("only")]).await;
    post(s.addr(), PATH, &openai_body(false)).await;
    let r = post(s.addr(), PATH, &openai_body(true)).await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.json()["error"]["message"],
        "scripted server: script exhausted (request 2)"
    );
    assert_eq!(s.requests().len(), 2);
}

#[tokio::test]
async fn alias_path_crlf_and_chunk_size() {
    let options = ServerOptions {
        chunk_size: 5,
        line_ending: LineEnding::CrLf,
        ..ServerOptions::default()
    };
    let s = ScriptedServer::start(Script::new([Step::text("crlf text")]), options)
        .await
        .unwrap();
    let r = post(s.addr(), "/chat/completions", &openai_body(true)).await;
    assert!(r.complete);
    assert!(r.chunks.iter().all(|&n| n <= 5));
    let text = r.text();
    assert!(text.contains("\r\n\r\n") && !text.replace("\r\n", "").contains('\n'));
    assert_eq!(streamed(&r, "content"), "crlf text");
}

#[tokio::test]
async fn cached_tokens_when_the_system_prompt_repeats() {
    let s = server([Step::text("a"), Step::text("b")]).await;
    let cached = |b: Value| {
        b["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
    };
    let first = post(s.addr(), PATH, &openai_body(false)).await.json();
    let second = post(s.addr(), PATH, &openai_body(false)).await.json();
    assert_eq!(cached(first), 0);
    assert!(cached(second) > 0);
}

#[tokio::test]
async fn chunk_size_zero_sends_one_chunk_per_event() {
    let options = ServerOptions {
        chunk_size: 0,
        line_ending: LineEnding::CrLf,
        ..ServerOptions::default()
    };
    let s = ScriptedServer::start(Script::new([Step::text("Hello there")]), options)
        .await
        .unwrap();
    let r = post(s.addr(), PATH, &openai_body(true)).await;
    assert!(r.complete);
    let events = r.sse();
    assert_eq!(events.last().unwrap().1, "[DONE]");
    assert_eq!(r.chunks.len(), events.len(), "{:?}", r.chunks);
    let mut offset = 0;
    for size in &r.chunks {
        offset += size;
        assert!(r.body[..offset].ends_with(b"\r\n\r\n"));
    }
}
