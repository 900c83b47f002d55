//! The assertion helpers pass good conversations and catch broken ones, on every wire.
// Test helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use crate::common::post_blocking;
use serde_json::{Value, json};
use talaria_testkit::assertions::{
    assert_prefix_stable, assert_tool_calls_paired, check_prefix_stable, check_tool_calls_paired,
};
use talaria_testkit::{RecordedRequest, ScriptedServer, ServerOptions, Step, Wire};

/// Sends each body to the server (its wire's endpoint) and returns the recordings.
fn record(bodies: &[(Wire, Value)]) -> Vec<RecordedRequest> {
    let options = ServerOptions {
        loop_script: true,
        ..ServerOptions::default()
    };
    let server = ScriptedServer::spawn_with(vec![Step::text("ok")], options).unwrap();
    for (wire, body) in bodies {
        let path = match wire {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAiResponses => "/v1/responses",
        };
        assert_eq!(post_blocking(server.addr(), path, body).status, 200);
    }
    server.requests()
}

fn openai(messages: Value) -> (Wire, Value) {
    (
        Wire::OpenAi,
        json!({
            "model": "gpt-test",
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
            "messages": messages
        }),
    )
}

fn anthropic(system: &str, messages: Value) -> (Wire, Value) {
    (
        Wire::Anthropic,
        json!({"model": "claude-test", "max_tokens": 100, "system": system, "messages": messages}),
    )
}

fn responses(instructions: &str, input: Value) -> (Wire, Value) {
    (
        Wire::OpenAiResponses,
        json!({
            "model": "gpt-test", "instructions": instructions, "input": input,
            "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": false}],
            "store": false
        }),
    )
}

/// A reasoning item and the calls it led to, as a Responses client sends them back.
fn function_calls(ids: &[&str]) -> Vec<Value> {
    let reasoning =
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"});
    std::iter::once(reasoning)
        .chain(ids.iter().map(
            |id| json!({"type": "function_call", "call_id": id, "name": "read", "arguments": "{}"}),
        ))
        .collect()
}

fn call_output(id: &str) -> Value {
    json!({"type": "function_call_output", "call_id": id, "output": "result"})
}

fn input_text(role: &str, text: &str) -> Value {
    let part = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    json!({"type": "message", "role": role, "content": [{"type": part, "text": text}]})
}

fn assistant_calls(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}))
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

fn tool(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "result"})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn system() -> Value {
    json!({"role": "system", "content": "You are a test."})
}

fn tool_use(id: &str) -> Value {
    json!({"role": "assistant", "content": [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": id, "name": "read", "input": {"path": "a"}}
    ]})
}

fn tool_result(id: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "data"}]})
}

fn good_conversation() -> Vec<RecordedRequest> {
    record(&[
        openai(json!([system(), user("hi")])),
        openai(json!([
            system(),
            user("hi"),
            assistant_calls(&["c1", "c2"]),
            tool("c1"),
            tool("c2")
        ])),
        openai(json!([
            system(), user("hi"), assistant_calls(&["c1", "c2"]), tool("c2"), tool("c1"),
            {"role": "assistant", "content": "done"}, user("thanks")
        ])),
        anthropic(
            "sys",
            json!([{"role": "user", "content": "hi"}, tool_use("t1"), tool_result("t1")]),
        ),
        responses("sys", {
            let mut input = vec![
                input_text("user", "hi"),
                input_text("assistant", "Reading."),
            ];
            input.extend(function_calls(&["f1", "f2"]));
            input.extend([
                call_output("f1"),
                call_output("f2"),
                input_text("user", "thanks"),
            ]);
            input.into()
        }),
    ])
}

#[test]
fn paired_tool_calls_pass() {
    let requests = good_conversation();
    assert_eq!(check_tool_calls_paired(&requests), Ok(()));
    assert_tool_calls_paired(&requests);
}

fn problems(bodies: &[(Wire, Value)]) -> String {
    check_tool_calls_paired(&record(bodies)).unwrap_err()
}

#[test]
fn missing_tool_result_is_caught() {
    let p = problems(&[openai(json!([
        user("hi"),
        assistant_calls(&["c1", "c2"]),
        tool("c1")
    ]))]);
    assert_eq!(
        p,
        r#"requests()[0] (openai): tool call "c2" (read) in messages()[1] has no tool result"#
    );
    let p = problems(&[anthropic(
        "s",
        json!([{"role": "user", "content": "hi"}, tool_use("t1")]),
    )]);
    assert_eq!(
        p,
        r#"requests()[0] (anthropic): tool call "t1" (read) in messages()[2] has no tool result"#
    );
    let mut input = vec![input_text("user", "hi")];
    input.extend(function_calls(&["f1", "f2"]));
    input.push(call_output("f2"));
    let p = problems(&[responses("s", input.into())]);
    assert_eq!(
        p,
        r#"requests()[0] (openai-responses): tool call "f1" (read) in messages()[2] has no tool result"#
    );
}

#[test]
fn orphaned_and_early_results_are_caught() {
    let p = problems(&[
        openai(json!([user("hi")])),
        openai(json!([
            user("hi"),
            assistant_calls(&["c1"]),
            tool("c1"),
            tool("ghost")
        ])),
    ]);
    assert_eq!(
        p,
        r#"requests()[1] (openai): tool result for "ghost" in messages()[3] is orphaned: no earlier tool call has that id"#
    );
    // A result placed before its call is orphaned, and the call is left unanswered.
    let p = problems(&[anthropic(
        "s",
        json!([tool_result("t1"), tool_use("t1"), {"role": "user", "content": "go on"}]),
    )]);
    assert!(
        p.contains(r#"tool result for "t1" in messages()[1] is orphaned"#),
        "{p}"
    );
    assert!(
        p.contains(
            r#"tool call "t1" (read) in messages()[2] is not answered before messages()[3]"#
        ),
        "{p}"
    );
}

#[test]
fn results_after_an_intervening_message_are_caught() {
    let p = problems(&[openai(json!([
        user("hi"),
        assistant_calls(&["c1"]),
        user("are you there?"),
        tool("c1")
    ]))]);
    assert_eq!(
        p,
        r#"requests()[0] (openai): tool call "c1" (read) in messages()[1] is not answered before messages()[2]"#
    );
}

#[test]
fn duplicate_results_and_ids_are_caught() {
    let p = problems(&[openai(json!([
        user("hi"),
        assistant_calls(&["c1"]),
        tool("c1"),
        tool("c1")
    ]))]);
    assert!(
        p.contains(r#"tool call "c1" (read) in messages()[1] has more than one tool result"#),
        "{p}"
    );
    let p = problems(&[openai(json!([
        user("hi"),
        assistant_calls(&["c1"]),
        tool("c1"),
        assistant_calls(&["c1"]),
        tool("c1")
    ]))]);
    assert!(
        p.contains(r#"tool call id "c1" (read) in messages()[3] repeats the id"#),
        "{p}"
    );
}

#[test]
#[should_panic(expected = "tool call \"c9\" (read) in messages()[1] has no tool result")]
fn assert_tool_calls_paired_panics() {
    assert_tool_calls_paired(&record(&[openai(json!([
        user("hi"),
        assistant_calls(&["c9"])
    ]))]));
}

#[test]
fn stable_prefix_passes() {
    let requests = good_conversation();
    assert_eq!(check_prefix_stable(&requests[..3]), Ok(()));
    assert_prefix_stable(&requests[..3]);
    assert_eq!(check_prefix_stable(&[]), Ok(()));
}

#[test]
fn changed_tools_or_system_prompt_are_caught() {
    let mut changed_tools = openai(json!([system(), user("again")]));
    changed_tools.1["tools"][0]["function"]["description"] = json!("now described");
    let requests = record(&[
        openai(json!([system(), user("hi")])),
        changed_tools,
        openai(json!([{"role": "system", "content": "You are a test!"}, user("hi")])),
    ]);
    let p = check_prefix_stable(&requests).unwrap_err();
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines.len(), 2, "{p}");
    assert!(lines[0].starts_with("requests()[1] (openai): tool list differs from requests()[0] (openai): first difference at byte"), "{p}");
    assert!(lines[1].starts_with("requests()[2] (openai): system prompt differs from requests()[0] (openai): first difference at byte"), "{p}");

    let requests = record(&[
        anthropic(
            "You are Talaria.",
            json!([{"role": "user", "content": "hi"}]),
        ),
        anthropic(
            "You are Talaria. Today is Monday.",
            json!([{"role": "user", "content": "hi"}]),
        ),
    ]);
    let p = check_prefix_stable(&requests).unwrap_err();
    assert!(
        p.contains("requests()[1] (anthropic): system prompt differs"),
        "{p}"
    );
    assert!(p.contains("first difference at byte 17"), "{p}");

    let hi = || json!([input_text("user", "hi")]);
    let requests = record(&[responses("Be brief.", hi()), responses("Be brief!", hi())]);
    let p = check_prefix_stable(&requests).unwrap_err();
    assert!(
        p.contains("requests()[1] (openai-responses): system prompt differs"),
        "{p}"
    );
}

#[test]
#[should_panic(expected = "prompt prefix is not stable")]
fn assert_prefix_stable_panics() {
    assert_prefix_stable(&record(&[
        anthropic("a", json!([{"role": "user", "content": "hi"}])),
        anthropic("b", json!([{"role": "user", "content": "hi"}])),
    ]));
}
