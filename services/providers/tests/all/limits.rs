//! The size caps: a reply over `max_reply_bytes` stops being read and a request
//! over `max_prompt_bytes` is never sent, each with an error naming its setting.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::common::{Conversation, MockServer, Recorder, Reply};
use talaria_kernel::{CancellationToken, ModelError, ModelProvider, ModelResponse};
use talaria_providers::{AnthropicMessages, OpenAiChat, ProviderConfig};

const CAP: usize = 1024;

fn config(server: &MockServer, stream: bool) -> ProviderConfig {
    ProviderConfig::new(&server.base_url)
        .with_api_key("sk-test")
        .with_stream(stream)
        .with_max_reply_bytes(CAP)
        .with_max_prompt_bytes(CAP)
}

async fn openai(
    server: &MockServer,
    stream: bool,
    conversation: &Conversation,
) -> Result<ModelResponse, ModelError> {
    OpenAiChat::new(config(server, stream))
        .unwrap()
        .complete(
            conversation.request(),
            &Recorder::default(),
            &CancellationToken::new(),
        )
        .await
}

/// A complete, valid OpenAI stream of `deltas` content chunks (about 150 bytes each).
fn openai_stream(deltas: usize) -> String {
    let mut body = String::new();
    for _ in 0..deltas {
        body.push_str(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"0123456789012345678901234567890123456789\"},\"finish_reason\":null}]}\n\n",
        );
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    body
}

fn assert_too_large(result: Result<ModelResponse, ModelError>, setting: &str) {
    match result {
        Err(ModelError::TooLarge { message }) => {
            assert!(message.contains(setting), "names the setting: {message}");
            assert!(
                message.contains(&CAP.to_string()),
                "names the cap: {message}"
            );
        }
        other => panic!("expected TooLarge naming {setting}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_streamed_reply_over_the_cap_is_cut_off() {
    let small = MockServer::start(vec![Reply::sse(&openai_stream(2), 64)]).await;
    let fine = openai(&small, true, &Conversation::simple("hi")).await;
    assert!(fine.is_ok(), "a reply under the cap passes: {fine:?}");

    let server = MockServer::start(vec![Reply::sse(&openai_stream(40), 64)]).await;
    let result = openai(&server, true, &Conversation::simple("hi")).await;
    assert_too_large(result, "model.max_reply_bytes");
    assert!(
        !ModelError::TooLarge {
            message: String::new()
        }
        .is_retryable()
    );
}

#[tokio::test]
async fn a_whole_reply_over_the_cap_is_refused() {
    let content = "x".repeat(2 * CAP);
    let body = format!(
        r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"{content}"}},"finish_reason":"stop"}}]}}"#
    );
    let server = MockServer::start(vec![Reply::json(200, &body)]).await;
    let result = openai(&server, false, &Conversation::simple("hi")).await;
    assert_too_large(result, "model.max_reply_bytes");
}

#[tokio::test]
async fn an_anthropic_stream_over_the_cap_is_cut_off() {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for _ in 0..40 {
        body.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"0123456789012345678901234567890123456789\"}}\n\n");
    }
    body.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    let server = MockServer::start(vec![Reply::sse(&body, 64)]).await;
    let result = AnthropicMessages::new(config(&server, true))
        .unwrap()
        .complete(
            Conversation::simple("hi").request(),
            &Recorder::default(),
            &CancellationToken::new(),
        )
        .await;
    assert_too_large(result, "model.max_reply_bytes");
}

#[tokio::test]
async fn a_request_over_the_cap_is_not_sent() {
    let server = MockServer::start(vec![Reply::sse(&openai_stream(1), 64)]).await;
    let big = "y".repeat(2 * CAP);
    let result = openai(&server, true, &Conversation::simple(&big)).await;
    assert_too_large(result, "model.max_prompt_bytes");
    assert!(server.requests().is_empty(), "nothing reached the server");
}
