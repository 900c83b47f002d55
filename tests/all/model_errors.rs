//! How the real binary meets a provider's failures and accounting: a payload the provider
//! rejects, a reply cut mid-stream, cache writes a router reports. (A used-up key skipped by
//! the next session of the process is in `repl.rs`: it needs `/new`.)

use crate::cli::{openai_args, query};
use crate::common::*;
use serde_json::Value;
use talaria_testkit::{Script, ScriptedServer, Step};

/// The text `Step::drop_mid_stream` cuts off half-way.
const DROP_TEXT: &str = "This reply is cut off mid-stream: the server hangs up before it ends.";

/// The scripted server's OpenAI endpoint, serving `model`.
fn endpoint(server: &ScriptedServer, model: &str) -> Vec<String> {
    let mut args = openai_args(server);
    if let Some(name) = args.iter().position(|a| a == "--model").map(|at| at + 1) {
        args[name] = model.to_owned();
    }
    args
}

fn json_events(output: &std::process::Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[test]
fn a_payload_the_provider_rejects_is_not_retried_and_its_shape_is_shown() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([Step::error(
        400,
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding \
         message with 'tool_calls'.",
    )]))
    .unwrap();
    let output = run(query(
        &home,
        "secret question",
        &endpoint(&server, "test-model"),
    ));
    assert_code(&output, 1);
    assert_eq!(server.requests().len(), 1, "not retried");
    let err = stderr(&output);
    assert!(err.contains("rejected the request (400)"), "{err}");
    assert!(err.contains("messages (user (15 bytes))"), "{err}");
    assert!(
        err.contains("It was not retried"),
        "the explanation says what happened: {err}"
    );
    assert!(
        !err.contains("secret question"),
        "the shape has no content: {err}"
    );
}

#[test]
fn a_reply_cut_mid_stream_is_streamed_once() {
    let home = Home::new();
    let server = ScriptedServer::spawn(Script::new([
        Step::drop_mid_stream(),
        Step::text(DROP_TEXT),
    ]))
    .unwrap();
    let mut args = endpoint(&server, "test-model");
    args.push("--json".into());
    let output = run(query(&home, "hi", &args));
    assert_code(&output, 0);
    assert_eq!(server.requests().len(), 2);
    let events = json_events(&output);
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(streamed, DROP_TEXT, "{}", stdout(&output));
    assert!(
        events.iter().any(|e| e["type"] == "retrying"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn cache_writes_a_router_reports_are_counted_in_usage_and_cost() {
    let home = Home::new();
    home.write_config(
        "model:\n  pricing: {input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75}\n",
    );
    let server = ScriptedServer::spawn(Script::new([Step::text("hi")])).unwrap();
    let mut args = endpoint(&server, "anthropic/claude-sonnet-4.5");
    args.push("--json".into());
    let output = run(query(&home, "hello", &args));
    assert_code(&output, 0);
    let event = json_events(&output)
        .into_iter()
        .find(|event| event.get("usage").is_some())
        .expect("a usage event");
    let usage = &event["usage"];
    let tokens = |field: &str| usage[field].as_u64().unwrap_or_default();
    assert!(tokens("cache_write_tokens") > 0, "{event}");
    let request_tokens = (server.requests()[0].raw_body.len() as u64).div_ceil(4);
    assert_eq!(
        tokens("input_tokens") + tokens("cache_write_tokens"),
        request_tokens,
        "the written part is not counted twice: {event}"
    );
    let expected = (tokens("input_tokens") as f64 * 3.0
        + tokens("output_tokens") as f64 * 15.0
        + tokens("cache_write_tokens") as f64 * 3.75)
        / 1_000_000.0;
    let cost = event["cost_usd"].as_f64().unwrap_or_default();
    assert!(
        (cost - expected).abs() < 1e-12,
        "{cost} != {expected}: {event}"
    );
}

#[test]
fn fallbacks_repeating_the_model_with_another_key_form_a_pool_that_rotates_on_a_rate_limit() {
    let home = Home::new();
    home.write_config(
        "fallback:\n  - name: test-model\n    api_key: sk-second-key-2222\n  - name: other-model\n",
    );
    let server = ScriptedServer::spawn(Script::new([
        Step::rate_limited(Some("30")),
        Step::text("served"),
    ]))
    .unwrap();
    let mut args = endpoint(&server, "test-model");
    args.push("--json".into());
    let output = run(query(&home, "hi", &args));
    assert_code(&output, 0);
    let requests = server.requests();
    let keys: Vec<&str> = requests
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default())
        .collect();
    assert_eq!(
        keys,
        ["Bearer sk-test", "Bearer sk-second-key-2222"],
        "no waiting for the throttled key while the pool has another"
    );
    let events = json_events(&output);
    assert!(
        !events.iter().any(|e| e["type"] == "retrying"),
        "{}",
        stdout(&output)
    );
    let usage = events
        .iter()
        .find(|e| e["type"] == "usage")
        .expect("a usage event");
    assert_eq!(usage["served_by"], "test-model (key …2222)", "{usage}");
}
