//! The OpenAI Responses wire format, every step kind, streaming and not.
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common::{RawResponse, post, post_with, responses_body, server};
use serde_json::{Value, json};
use talaria_testkit::{Role, Step, StepKind, ToolCall, Wire};

const PATH: &str = "/v1/responses";

/// Plays `step` for a streaming request.
async fn stream_of(step: Step) -> RawResponse {
    let s = server([step]).await;
    post(s.addr(), PATH, &responses_body(true)).await
}

/// Plays `step` for a non-streaming request.
async fn body_of(step: Step) -> Value {
    let s = server([step]).await;
    let r = post(s.addr(), PATH, &responses_body(false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    r.json()
}

/// The events' `type`s, each checked against its `event:` line and its place in the sequence.
fn types(r: &RawResponse) -> Vec<String> {
    r.sse()
        .iter()
        .enumerate()
        .map(|(n, (event, data))| {
            let data: Value = serde_json::from_str(data).unwrap();
            assert_eq!(event.as_deref(), data["type"].as_str());
            assert_eq!(data["sequence_number"], n);
            data["type"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// The concatenated `delta`s of the events of type `kind`.
fn deltas(r: &RawResponse, kind: &str) -> String {
    r.sse_json()
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["delta"].as_str().unwrap().to_owned())
        .collect()
}

/// The `response` of the last event.
fn last_response(r: &RawResponse) -> Value {
    r.sse_json().last().unwrap()["response"].clone()
}

#[tokio::test]
async fn text_stream() {
    let text = "Hello there, this is a streamed answer ✓";
    let r = stream_of(Step::text(text)).await;
    assert_eq!(r.status, 200);
    assert!(r.complete && r.chunks.iter().all(|&n| n <= 11));
    let types = types(&r);
    assert_eq!(
        types[..3],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added"
        ]
    );
    assert_eq!(types.last().unwrap(), "response.completed");
    assert!(
        types
            .iter()
            .filter(|t| *t == "response.output_text.delta")
            .count()
            > 4
    );
    assert_eq!(deltas(&r, "response.output_text.delta"), text);
    let created = &r.sse_json()[0]["response"];
    assert_eq!(
        (&created["status"], &created["output"]),
        (&json!("in_progress"), &json!([]))
    );
    let done = last_response(&r);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], text);
    assert!(done["usage"]["input_tokens"].as_u64().unwrap() > 10);
    assert_eq!(
        done["usage"]["output_tokens_details"]["reasoning_tokens"],
        0
    );
}

#[tokio::test]
async fn text_non_stream() {
    let b = body_of(Step::text("Hello there")).await;
    assert_eq!(
        (b["object"].as_str(), b["status"].as_str()),
        (Some("response"), Some("completed"))
    );
    assert!(b["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(b["model"], "gpt-test");
    let message = &b["output"][0];
    assert_eq!(
        (message["type"].as_str(), message["role"].as_str()),
        (Some("message"), Some("assistant"))
    );
    assert_eq!(
        message["content"][0],
        json!({"type": "output_text", "annotations": [], "logprobs": [], "text": "Hello there"})
    );
    assert_eq!(b["usage"]["output_tokens"], 3);
}

#[tokio::test]
async fn reasoning_is_an_item_with_encrypted_content() {
    let step = Step::text_with_reasoning("The answer is 4.", "2 + 2 makes four, obviously");
    let r = stream_of(step.clone()).await;
    assert_eq!(
        deltas(&r, "response.reasoning_summary_text.delta"),
        "2 + 2 makes four, obviously"
    );
    let types = types(&r);
    let first_text = types
        .iter()
        .position(|t| t == "response.output_text.delta")
        .unwrap();
    let last_summary = types
        .iter()
        .rposition(|t| t == "response.reasoning_summary_text.delta")
        .unwrap();
    assert!(last_summary < first_text, "reasoning comes first");
    let added = &r.sse_json()[2];
    assert_eq!(added["item"]["type"], "reasoning");
    assert_eq!(added["item"]["summary"], json!([]));
    let item = &last_response(&r)["output"][0];
    assert_eq!(
        item,
        &json!({"id": "rs_testkit_1", "type": "reasoning", "encrypted_content": "gAAAAB-testkit-1",
                "summary": [{"type": "summary_text", "text": "2 + 2 makes four, obviously"}]})
    );
    assert!(
        last_response(&r)["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    let b = body_of(step).await;
    assert_eq!(b["output"][0]["encrypted_content"], "gAAAAB-testkit-1");
    assert_eq!(b["output"][1]["content"][0]["text"], "The answer is 4.");
}

fn tool_step() -> Step {
    StepKind::ToolCalls {
        text: Some("Let me look.".into()),
        calls: vec![
            ToolCall::new("read_file", r#"{"path":"src/main.rs","limit":100}"#).with_id("call_abc"),
            ToolCall::new("broken", r#"{"unterminated": "#),
        ],
        reasoning: Some("Read it first.".into()),
    }
    .into()
}

#[tokio::test]
async fn tool_calls_stream() {
    let r = stream_of(tool_step()).await;
    assert!(r.complete);
    let events = r.sse_json();
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["type"] == "response.output_item.added" && e["item"]["type"] == "function_call"
        })
        .map(|e| &e["item"])
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0]["call_id"].as_str(), calls[0]["name"].as_str()),
        (Some("call_abc"), Some("read_file"))
    );
    assert_eq!(calls[0]["arguments"], "");
    assert!(calls[1]["call_id"].as_str().unwrap().starts_with("call_"));
    // Reassemble the arguments by output index, as a client must.
    let arguments = |index: u64| -> (String, usize) {
        let pieces: Vec<&str> = events
            .iter()
            .filter(|e| {
                e["type"] == "response.function_call_arguments.delta" && e["output_index"] == index
            })
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        (pieces.concat(), pieces.len())
    };
    let (first, pieces) = arguments(2);
    assert_eq!(first, r#"{"path":"src/main.rs","limit":100}"#);
    assert!(pieces > 2, "arguments split over several events");
    assert_eq!(arguments(3).0, r#"{"unterminated": "#);
    assert_eq!(deltas(&r, "response.output_text.delta"), "Let me look.");
    let output = &last_response(&r)["output"];
    let kinds: Vec<&str> = output
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["reasoning", "message", "function_call", "function_call"]
    );
    assert_eq!(last_response(&r)["status"], "completed");
}

#[tokio::test]
async fn truncated_is_incomplete() {
    let r = stream_of(Step::truncated("This answer was cut")).await;
    assert_eq!(types(&r).last().unwrap(), "response.incomplete");
    let response = last_response(&r);
    assert_eq!(response["status"], "incomplete");
    assert_eq!(
        response["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(
        deltas(&r, "response.output_text.delta"),
        "This answer was cut"
    );
    let b = body_of(Step::truncated("cut")).await;
    assert_eq!(b["incomplete_details"]["reason"], "max_output_tokens");
}

#[tokio::test]
async fn errors_overflow_and_malformed() {
    let s = server([
        Step::rate_limited(Some("7")),
        Step::context_overflow(),
        Step::malformed_sse(),
        Step::drop_mid_stream(),
    ])
    .await;
    let r = post(s.addr(), PATH, &responses_body(true)).await;
    assert_eq!((r.status, r.header("retry-after")), (429, Some("7")));
    assert_eq!(r.json()["error"]["code"], "rate_limit_exceeded");

    let r = post(s.addr(), PATH, &responses_body(true)).await;
    assert_eq!(r.status, 400);
    let e = &r.json()["error"];
    assert_eq!(
        (e["code"].as_str(), e["param"].as_str()),
        (Some("context_length_exceeded"), Some("input"))
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Your input exceeds the context window")
    );

    let r = post(s.addr(), PATH, &responses_body(true)).await;
    assert_eq!(r.status, 200);
    let bad = r
        .sse()
        .iter()
        .filter(|(_, d)| serde_json::from_str::<Value>(d).is_err())
        .count();
    assert!(bad >= 2);

    let r = post_with(
        s.addr(),
        PATH,
        &responses_body(true),
        Duration::from_secs(10),
    )
    .await;
    assert!(r.closed && !r.complete);
    assert!(deltas(&r, "response.output_text.delta").len() > 10);
    assert!(types(&r).iter().all(|t| t != "response.completed"));
}

#[tokio::test]
async fn recorded_as_the_responses_wire() {
    let s = server([Step::text("a"), Step::text("b")]).await;
    let mut body = responses_body(false);
    post(s.addr(), "/responses", &body).await;
    body["input"] = json!([
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
    ]);
    let second = post(s.addr(), PATH, &body).await.json();
    let requests = s.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.wire == Wire::OpenAiResponses && !r.stream)
    );
    assert_eq!(requests[0].system_prompt_raw(), r#""You are a test.""#);
    let messages = requests[1].messages();
    let roles: Vec<Role> = messages.iter().map(|m| m.role.clone()).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool]
    );
    assert_eq!(messages[2].tool_calls[0].id, "c1");
    assert_eq!(messages[3].tool_results[0].content, "a.txt");
    assert!(
        second["usage"]["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            > 0,
        "the instructions seen before are cached"
    );
}
