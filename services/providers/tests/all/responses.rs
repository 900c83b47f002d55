//! OpenAI Responses over a scripted local HTTP server: the request on the wire, a streamed
//! turn whose reasoning item goes back verbatim on the next one, whole responses, and errors
//! inside a 200 stream.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::common::{Conversation, MockServer, Recorder, Reply};
use serde_json::json;
use talaria_kernel::{
    CancellationToken, FinishReason, Message, ModelError, ModelProvider, ModelResponse, Role,
};
use talaria_providers::{OpenAiResponses, ProviderConfig};

fn provider(server: &MockServer, stream: bool) -> OpenAiResponses {
    let config = ProviderConfig::new(format!("{}/v1", server.base_url))
        .with_api_key("sk-test")
        .with_stream(stream);
    OpenAiResponses::new(config).unwrap()
}

async fn run(
    server: &MockServer,
    stream: bool,
    conversation: &Conversation,
) -> Result<ModelResponse, ModelError> {
    provider(server, stream)
        .complete(
            conversation.request(),
            &Recorder::default(),
            &CancellationToken::new(),
        )
        .await
}

/// A reasoning item, then a call, then `response.completed` (shapes as the API streams them).
const CALL: &str = r#"event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Weather needs a call."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAAB-secret-1","summary":[{"type":"summary_text","text":"Weather needs a call."}]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_w","name":"get_weather"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":1,"delta":"{\"city\":\"Paris\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":6,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_w","name":"get_weather"}}

event: response.completed
data: {"type":"response.completed","sequence_number":7,"response":{"id":"resp_1","object":"response","status":"completed","output":[],"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":70}}}

"#;

const ANSWER: &str = r#"event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":0,"item_id":"msg_2","output_index":0,"content_index":0,"delta":"Sunny."}

event: response.completed
data: {"type":"response.completed","sequence_number":1,"response":{"id":"resp_2","object":"response","status":"completed","output":[],"usage":{"input_tokens":80,"output_tokens":2}}}

"#;

#[tokio::test]
async fn a_call_and_its_reasoning_go_back_verbatim_on_the_next_request() {
    let server = MockServer::start(vec![Reply::sse(CALL, 9), Reply::sse(ANSWER, 9)]).await;
    let mut conversation = Conversation::simple("weather in Paris?");
    let first = run(&server, true, &conversation).await.unwrap();
    assert_eq!(first.finish, FinishReason::ToolCalls);
    assert_eq!(first.message.tool_calls[0].id, "call_w");
    assert_eq!(
        first.message.reasoning.as_deref(),
        Some("Weather needs a call.")
    );

    conversation.messages.push(first.message);
    conversation.messages.push(Message {
        role: Role::Tool,
        content: "sunny".into(),
        tool_call_id: Some("call_w".into()),
        name: Some("get_weather".into()),
        ..Message::default()
    });
    let second = run(&server, true, &conversation).await.unwrap();
    assert_eq!(second.message.content, "Sunny.");
    assert_eq!(second.finish, FinishReason::Stop);

    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("POST", "/v1/responses")
    );
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    let body = &requests[0].body;
    assert_eq!(body["instructions"], "You are a test.");
    assert_eq!(
        (&body["stream"], &body["store"], &body["include"]),
        (
            &json!(true),
            &json!(false),
            &json!(["reasoning.encrypted_content"])
        )
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "get_weather", "description": "Weather for a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
               "strict": false})
    );
    assert_eq!(
        requests[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]},
            {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAAB-secret-1",
             "summary": [{"type": "summary_text", "text": "Weather needs a call."}]},
            {"type": "function_call", "call_id": "call_w", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "call_w", "output": "sunny"},
        ])
    );
}

#[tokio::test]
async fn whole_responses_and_in_stream_errors() {
    let whole = json!({
        "id": "resp_3", "object": "response", "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"id": "msg_3", "type": "message", "role": "assistant", "status": "incomplete",
                    "content": [{"type": "output_text", "annotations": [], "text": "Cut"}]}],
        "usage": {"input_tokens": 9, "output_tokens": 16},
    });
    let overflow = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":1,\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\",\"param\":\"input\"}\n\n";
    let server = MockServer::start(vec![
        Reply::json(200, &whole.to_string()),
        Reply::sse(overflow, 11),
    ])
    .await;
    let conversation = Conversation::simple("hi");
    let response = run(&server, false, &conversation).await.unwrap();
    assert_eq!(response.finish, FinishReason::Length);
    assert_eq!(response.message.content, "Cut");
    assert_eq!(server.requests()[0].body["stream"], false);
    let error = run(&server, true, &conversation).await.unwrap_err();
    assert!(
        matches!(error, ModelError::ContextOverflow { .. }),
        "{error:?}"
    );
}
