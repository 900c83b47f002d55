//! Anthropic Messages over a scripted local HTTP server.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::common::{Conversation, MockServer, Recorder, Reply, crlf};
use serde_json::json;
use talaria_kernel::{
    CacheBreakpoints, CancellationToken, FinishReason, Message, ModelError, ModelProvider,
    ModelResponse, Role, StreamEvent, ToolCall, ToolChoice, Usage,
};
use talaria_providers::{AnthropicMessages, ProviderConfig};

fn config(server: &MockServer, stream: bool) -> ProviderConfig {
    ProviderConfig::new(&server.base_url)
        .with_api_key("sk-ant-test")
        .with_stream(stream)
}

async fn run_with(
    config: ProviderConfig,
    conversation: &Conversation,
    sink: &Recorder,
) -> Result<ModelResponse, ModelError> {
    let provider = AnthropicMessages::new(config).unwrap();
    provider
        .complete(conversation.request(), sink, &CancellationToken::new())
        .await
}

/// Thinking, text, a tool call with streamed input, and a tool call with empty input.
const THINKING_TEXT_AND_TOOLS: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":100,"cache_read_input_tokens":2048,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"the weather."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me check "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"São Paulo."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"S"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ão Paulo\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

#[tokio::test]
async fn streamed_thinking_text_and_tool_input_are_assembled() {
    let server = MockServer::start(vec![Reply::sse(&crlf(THINKING_TEXT_AND_TOOLS), 3)]).await;
    let sink = Recorder::default();
    let response = run_with(
        config(&server, true),
        &Conversation::simple("weather?"),
        &sink,
    )
    .await
    .unwrap();

    assert_eq!(response.message.content, "Let me check São Paulo.");
    assert_eq!(
        response.message.reasoning.as_deref(),
        Some("The user wants the weather.")
    );
    assert_eq!(
        response.message.tool_calls,
        vec![
            ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: r#"{"city": "São Paulo"}"#.into(),
            },
            ToolCall {
                id: "toolu_02".into(),
                name: "get_time".into(),
                arguments: "{}".into()
            },
        ]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 472,
            output_tokens: 89,
            cache_read_tokens: 2048,
            cache_write_tokens: 100
        }
    );
    assert_eq!(sink.text(), "Let me check São Paulo.");
    assert_eq!(sink.reasoning(), "The user wants the weather.");
    // Tool positions count tool calls, not content blocks.
    assert_eq!(
        sink.tool_events(),
        vec![
            StreamEvent::ToolCallStart {
                index: 0,
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into()
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"city\": \"S".into()
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "ão Paulo\"}".into()
            },
            StreamEvent::ToolCallStart {
                index: 1,
                id: "toolu_02".into(),
                name: "get_time".into()
            },
        ]
    );

    let request = server.request();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["max_tokens"], 8192);
}

#[tokio::test]
async fn base_url_with_v1_and_bearer_auth() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let server = MockServer::start_with_prefix(vec![Reply::sse(body, 10)], "/v1").await;
    let mut config = config(&server, true);
    config.bearer_auth = true;
    config.default_max_tokens = Some(1000);
    let response = run_with(config, &Conversation::simple("hi"), &Recorder::default())
        .await
        .unwrap();
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(response.usage.input_tokens, 1);
    let request = server.request();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("authorization"), Some("Bearer sk-ant-test"));
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(request.body["max_tokens"], 1000);
}

#[tokio::test]
async fn request_body_renders_blocks_alternation_and_cache_control() {
    let mut conversation = Conversation::simple("weather in Paris and time?");
    conversation.tool_choice = ToolChoice::None;
    conversation.messages.extend([
        Message {
            role: Role::Assistant,
            content: "Checking both.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "toolu_a".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Paris"}"#.into(),
                },
                ToolCall {
                    id: "toolu_b".into(),
                    name: "get_time".into(),
                    arguments: "{broken".into(),
                },
            ],
            ..Message::default()
        },
        Message {
            role: Role::Tool,
            content: "18C".into(),
            tool_call_id: Some("toolu_a".into()),
            ..Message::default()
        },
        Message {
            role: Role::Tool,
            content: "bad arguments".into(),
            tool_call_id: Some("toolu_b".into()),
            is_error: true,
            ..Message::default()
        },
        Message {
            role: Role::System,
            content: "one iteration left".into(),
            ..Message::default()
        },
    ]);
    conversation.cache = CacheBreakpoints::system_and_last_three(conversation.messages.len());
    let body = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let server = MockServer::start(vec![Reply::sse(body, 100)]).await;
    run_with(config(&server, true), &conversation, &Recorder::default())
        .await
        .unwrap();

    let sent = server.request().body;
    assert_eq!(
        sent["system"],
        json!([{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "weather in Paris and time?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18C", "is_error": false,
                 "cache_control": {"type": "ephemeral"}},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "bad arguments", "is_error": true,
                 "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "[System note] one iteration left", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
    assert_eq!(sent["tool_choice"], json!({"type": "none"}));
    assert_eq!(
        sent["tools"],
        json!([{"name": "get_weather", "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}])
    );
}

#[tokio::test]
async fn whole_response_is_parsed() {
    let body = r#"{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5",
        "content":[{"type":"text","text":"Hello!"}],"stop_reason":"max_tokens","stop_sequence":null,
        "usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":8}}"#;
    let server = MockServer::start(vec![Reply::json(200, body)]).await;
    let sink = Recorder::default();
    let response = run_with(config(&server, false), &Conversation::simple("hi"), &sink)
        .await
        .unwrap();
    assert_eq!(response.message.content, "Hello!");
    assert_eq!(response.finish, FinishReason::Length);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 8,
            cache_read_tokens: 5,
            cache_write_tokens: 0
        }
    );
    assert_eq!(sink.text(), "Hello!");
    assert!(server.request().body.get("stream").is_none());
}

#[tokio::test]
async fn in_stream_error_events_are_classified() {
    let overloaded = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n\
        event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let limited = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Slow down\"}}\n\n";
    let server = MockServer::start(vec![Reply::sse(overloaded, 11), Reply::sse(limited, 11)]).await;
    let conversation = Conversation::simple("hi");
    let err = run_with(config(&server, true), &conversation, &Recorder::default())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::Overloaded {
            status: 529,
            message: "Overloaded".into(),
            retry_after: None
        }
    );
    let err = run_with(config(&server, true), &conversation, &Recorder::default())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::RateLimited {
            message: "Slow down".into(),
            retry_after: None
        }
    );
}

#[tokio::test]
async fn stream_without_message_stop_is_malformed() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n\
        event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n";
    let server = MockServer::start(vec![Reply::sse(body, 13)]).await;
    let err = run_with(
        config(&server, true),
        &Conversation::simple("hi"),
        &Recorder::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        ModelError::StreamInterrupted {
            message: "stream ended before completion".into()
        }
    );
}

#[tokio::test]
async fn malformed_event_json_is_malformed() {
    let body =
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\n\n";
    let server = MockServer::start(vec![Reply::sse(body, 13)]).await;
    let err = run_with(
        config(&server, true),
        &Conversation::simple("hi"),
        &Recorder::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
}
