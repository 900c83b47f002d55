//! OpenAI Chat Completions over a scripted local HTTP server.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::common::{Conversation, MockServer, Recorder, Reply, crlf};
use serde_json::json;
use talaria_kernel::{
    CancellationToken, FinishReason, Message, ModelError, ModelProvider, ModelResponse, Role,
    StreamEvent, ToolCall, ToolChoice, Usage,
};
use talaria_providers::{OpenAiChat, ProviderConfig};

fn provider(server: &MockServer, stream: bool) -> OpenAiChat {
    let config = ProviderConfig::new(format!("{}/", server.base_url))
        .with_api_key("sk-test")
        .with_stream(stream)
        .with_header("X-Title", "talaria-tests");
    OpenAiChat::new(config).unwrap()
}

async fn run(
    server: &MockServer,
    stream: bool,
    conversation: &Conversation,
    sink: &Recorder,
) -> Result<ModelResponse, ModelError> {
    provider(server, stream)
        .complete(conversation.request(), sink, &CancellationToken::new())
        .await
}

/// A streaming call on a one-message conversation.
async fn stream_hi(server: &MockServer) -> Result<ModelResponse, ModelError> {
    run(
        server,
        true,
        &Conversation::simple("hi"),
        &Recorder::default(),
    )
    .await
}

/// Two calls whose deltas interleave by index, then usage and [DONE].
const INTERLEAVED_TOOL_CALLS: &str = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Par"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": \"CET\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"is\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":42,"total_tokens":1242,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]

"#;

#[tokio::test]
async fn streamed_tool_calls_are_assembled_by_index() {
    let server = MockServer::start(vec![Reply::sse(&crlf(INTERLEAVED_TOOL_CALLS), 7)]).await;
    let sink = Recorder::default();
    let response = run(&server, true, &Conversation::simple("weather?"), &sink)
        .await
        .unwrap();

    assert_eq!(
        response.message.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "get_weather".into(),
                arguments: r#"{"city": "Paris"}"#.into()
            },
            ToolCall {
                id: "call_b".into(),
                name: "get_time".into(),
                arguments: r#"{"tz": "CET"}"#.into()
            },
        ]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(response.message.role, Role::Assistant);
    assert_eq!(response.message.content, "");
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 176,
            output_tokens: 42,
            cache_read_tokens: 1024,
            cache_write_tokens: 0
        }
    );
    let starts: Vec<StreamEvent> = sink
        .tool_events()
        .into_iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
        .collect();
    assert_eq!(
        starts,
        vec![
            StreamEvent::ToolCallStart {
                index: 0,
                id: "call_a".into(),
                name: "get_weather".into()
            },
            StreamEvent::ToolCallStart {
                index: 1,
                id: "call_b".into(),
                name: "get_time".into()
            },
        ]
    );
    assert_eq!(sink.arguments(0), r#"{"city": "Paris"}"#);
    assert_eq!(sink.arguments(1), r#"{"tz": "CET"}"#);

    let request = server.request();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("x-title"), Some("talaria-tests"));
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(
        request.body["messages"][0],
        json!({"role": "system", "content": "You are a test."})
    );
    assert_eq!(request.body["tools"][0]["function"]["name"], "get_weather");
    assert!(request.body.get("tool_choice").is_none());
}

#[tokio::test]
async fn streamed_text_and_reasoning_are_kept_apart() {
    let body = concat!(
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"Think \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"harder.\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Bonjour, \"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"le monde \u{1F30D}\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    // One-byte chunks split the emoji and every line ending.
    let server = MockServer::start(vec![Reply::sse(body, 1)]).await;
    let sink = Recorder::default();
    let response = run(&server, true, &Conversation::simple("hi"), &sink)
        .await
        .unwrap();
    assert_eq!(response.message.content, "Bonjour, le monde \u{1F30D}");
    assert_eq!(response.message.reasoning.as_deref(), Some("Think harder."));
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(sink.text(), response.message.content);
    assert_eq!(sink.reasoning(), "Think harder.");
    assert!(sink.tool_events().is_empty());
}

#[tokio::test]
async fn whole_response_is_parsed_and_echoed_to_the_sink() {
    let body = r#"{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-4o",
        "choices":[{"index":0,"message":{"role":"assistant","content":"Checking.","refusal":null,
            "tool_calls":[{"id":"call_x","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
            "logprobs":null,"finish_reason":"tool_calls"}],
        "usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}"#;
    let server = MockServer::start(vec![Reply::json(200, body)]).await;
    let sink = Recorder::default();
    let response = run(&server, false, &Conversation::simple("weather?"), &sink)
        .await
        .unwrap();
    assert_eq!(response.message.content, "Checking.");
    assert_eq!(
        response.message.tool_calls,
        vec![ToolCall {
            id: "call_x".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Oslo"}"#.into()
        }]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 50,
            output_tokens: 10,
            ..Usage::default()
        }
    );
    assert_eq!(
        sink.events()[0],
        StreamEvent::TextDelta {
            text: "Checking.".into()
        }
    );
    assert!(server.request().body.get("stream").is_none());
}

#[tokio::test]
async fn json_reply_to_a_stream_request_is_accepted() {
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"plain"},"finish_reason":"stop"}]}"#;
    let server = MockServer::start(vec![Reply::json(200, body)]).await;
    let response = stream_hi(&server).await.unwrap();
    assert_eq!(response.message.content, "plain");
}

#[tokio::test]
async fn whole_conversation_is_rendered_on_the_wire() {
    let mut conversation = Conversation::simple("read it");
    conversation.tool_choice = ToolChoice::None;
    conversation.max_tokens = Some(256);
    conversation.messages.extend([
        Message {
            role: Role::Assistant,
            reasoning: Some("private".into()),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "get_weather".into(),
                arguments: "{}".into(),
            }],
            ..Message::default()
        },
        Message {
            role: Role::Tool,
            content: "sunny".into(),
            tool_call_id: Some("c1".into()),
            ..Message::default()
        },
        Message {
            role: Role::System,
            content: "wrap up".into(),
            ..Message::default()
        },
    ]);
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = MockServer::start(vec![Reply::sse(body, 64)]).await;
    run(&server, true, &conversation, &Recorder::default())
        .await
        .unwrap();
    let sent = server.request().body;
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "user", "content": "[System note] wrap up"},
        ])
    );
    assert_eq!(sent["tool_choice"], "none");
    assert_eq!(sent["max_tokens"], 256);
    assert_eq!(sent["model"], "test-model");
}

#[tokio::test]
async fn in_stream_error_chunk_is_classified() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
        "data: {\"error\":{\"message\":\"Rate limit exceeded upstream\",\"code\":429}}\n\n",
    );
    let server = MockServer::start(vec![Reply::sse(body, 16)]).await;
    let err = stream_hi(&server).await.unwrap_err();
    assert_eq!(
        err,
        ModelError::RateLimited {
            message: "Rate limit exceeded upstream".into(),
            retry_after: None
        }
    );
}

#[tokio::test]
async fn malformed_json_in_stream_is_malformed() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\": [oops\n\n";
    let server = MockServer::start(vec![Reply::sse(body, 5)]).await;
    let err = stream_hi(&server).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Malformed { message } if message.contains("invalid JSON")),
        "{err:?}"
    );
}

#[tokio::test]
async fn invalid_whole_json_is_malformed() {
    let server = MockServer::start(vec![Reply::json(200, "{\"choices\": [")]).await;
    let err = run(
        &server,
        false,
        &Conversation::simple("hi"),
        &Recorder::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
}

#[tokio::test]
async fn stream_cut_mid_way_is_interrupted() {
    let body =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\ndata: {\"choi";
    // No terminating chunk: the connection just closes.
    let server = MockServer::start(vec![Reply::chunked("text/event-stream").chunks(body, 9)]).await;
    let sink = Recorder::default();
    let err = run(&server, true, &Conversation::simple("hi"), &sink)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::StreamInterrupted { message } if message.starts_with("stream ended before completion: ")),
        "{err:?}"
    );
    assert_eq!(sink.text(), "partial");
}

#[tokio::test]
async fn clean_end_without_done_needs_a_finish_reason() {
    let unfinished = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n";
    let finished = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"length\"}]}\n\n";
    let server = MockServer::start(vec![Reply::sse(unfinished, 8), Reply::sse(finished, 8)]).await;
    let err = stream_hi(&server).await.unwrap_err();
    assert_eq!(
        err,
        ModelError::StreamInterrupted {
            message: "stream ended before completion".into()
        }
    );
    let response = stream_hi(&server).await.unwrap();
    assert_eq!(response.finish, FinishReason::Length);
    assert_eq!(response.message.content, "a");
}
