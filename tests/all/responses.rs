//! The OpenAI Responses wire (`model.provider: openai-responses`) end to end: the real binary
//! against the scripted server, a tool call and the answer, reasoning carried between turns
//! and across a resumed session with nothing stored on the provider's side.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers, not production code

use serde_json::{Value, json};
use talaria_testkit::assertions::{assert_prefix_stable, assert_tool_calls_paired};
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall, Wire};

use crate::common::*;

/// The reasoning item the scripted server returns for the first request.
fn first_reasoning_item() -> Value {
    json!({
        "id": "rs_testkit_1",
        "type": "reasoning",
        "encrypted_content": "gAAAAB-testkit-1",
        "summary": [{"type": "summary_text", "text": "The notes are in notes.txt; read them first."}]
    })
}

/// The `input` items of a recorded request.
fn input(body: &Value) -> &Vec<Value> {
    body["input"].as_array().expect("an input list")
}

fn position(items: &[Value], wanted: impl Fn(&Value) -> bool) -> usize {
    items
        .iter()
        .position(wanted)
        .unwrap_or_else(|| panic!("no such item in {items:#?}"))
}

#[test]
fn a_tool_call_and_its_reasoning_go_back_on_the_next_request_and_after_a_resume() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::write(work.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls_with_reasoning(
            [ToolCall::new("read_file", r#"{"path":"notes.txt"}"#).with_id("call_read_1")],
            "The notes are in notes.txt; read them first.",
        ),
        Step::text("The notes say alpha and beta."),
        Step::text("Still alpha and beta."),
    ]))
    .unwrap();
    home.write_config(&format!(
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n\
         model:\n  provider: openai-responses\n  name: gpt-5-codex\n  base_url: {}\n",
        server.openai_base_url()
    ));
    let query = |prompt: &str, extra: &[&str]| {
        let mut args = vec!["-q", prompt];
        args.extend_from_slice(extra);
        let mut command = home.talaria(&args);
        command
            .env("TALARIA_API_KEY", "sk-test")
            .current_dir(work.path());
        command
    };

    let output = run(query("what do my notes say?", &[]));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "The notes say alpha and beta.\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one request per model call");
    for request in &requests {
        assert_eq!(request.wire, Wire::OpenAiResponses);
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(request.model(), Some("gpt-5-codex"));
        let body = &request.body;
        assert_eq!(
            body["store"], false,
            "nothing is stored on the provider's side"
        );
        assert_eq!(body["stream"], true);
        assert!(
            body["include"]
                .as_array()
                .unwrap()
                .contains(&json!("reasoning.encrypted_content")),
            "{}",
            body["include"]
        );
        assert!(!body["instructions"].as_str().unwrap().is_empty());
        let read_file = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == "read_file")
            .expect("read_file is offered");
        assert_eq!(
            (&read_file["type"], &read_file["strict"]),
            (&json!("function"), &json!(false))
        );
    }
    assert!(
        !input(&requests[0].body)
            .iter()
            .any(|item| item["type"] != "message"),
        "the first request is the user's message only"
    );

    let second = input(&requests[1].body);
    let reasoning = position(second, |item| item["type"] == "reasoning");
    let call = position(second, |item| item["type"] == "function_call");
    let result = position(second, |item| item["type"] == "function_call_output");
    assert_eq!(
        second[reasoning],
        first_reasoning_item(),
        "sent back verbatim"
    );
    assert_eq!(
        second[call],
        json!({"type": "function_call", "call_id": "call_read_1", "name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"})
    );
    assert_eq!(second[result]["call_id"], "call_read_1");
    assert!(
        second[result]["output"].as_str().unwrap().contains("alpha"),
        "{}",
        second[result]
    );
    assert!(
        reasoning < call && call < result,
        "the reasoning item just before the call it led to, the result after it: {second:#?}"
    );
    assert_eq!(call, reasoning + 1);
    assert_tool_calls_paired(&requests);
    assert_prefix_stable(&requests);

    // The reasoning item was kept with the session: a resumed session sends it again.
    let output = run(query("and now?", &["--continue"]));
    assert_code(&output, 0);
    assert_eq!(stdout(&output), "Still alpha and beta.\n");
    let requests = server.requests();
    let third = input(&requests[2].body);
    let reasoning = position(third, |item| item["type"] == "reasoning");
    assert_eq!(third[reasoning], first_reasoning_item());
    assert_eq!(third[reasoning + 1]["call_id"], "call_read_1");
    assert_tool_calls_paired(&requests);
}
