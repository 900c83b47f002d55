//! Anthropic Messages rendering: `message` objects, the event stream, errors.

use serde_json::{Value, json};

use crate::render::{ARGS_PIECE, Completion, Finish, SseEvent, TEXT_PIECE, Usage, pieces};

/// Context window quoted in context-overflow errors.
const CONTEXT_LIMIT: u64 = 200_000;
/// Signature attached to thinking blocks.
const SIGNATURE: &str = "c2NyaXB0ZWQtdGhpbmtpbmctc2lnbmF0dXJl";

fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::ToolCalls => "tool_use",
        Finish::Length => "max_tokens",
    }
}

/// Full usage; `input_tokens` excludes the cached part, as the real API reports it.
fn usage(u: &Usage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": u.prompt.saturating_sub(u.cache_read + u.cache_write),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cache_read,
        "output_tokens": output_tokens
    })
}

/// Tool input as an object; arguments that are not JSON are passed on as a string.
fn tool_input(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// A non-streaming `message` object.
pub(crate) fn message(c: &Completion) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = &c.reasoning {
        content.push(json!({"type": "thinking", "thinking": thinking, "signature": SIGNATURE}));
    }
    if let Some(text) = &c.text {
        content.push(json!({"type": "text", "text": text}));
    }
    content.extend(c.tool_calls.iter().map(|call| {
        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(&call.arguments)})
    }));
    json!({
        "id": c.id,
        "type": "message",
        "role": "assistant",
        "model": c.model,
        "content": content,
        "stop_reason": stop_reason(c.finish),
        "stop_sequence": null,
        "usage": usage(&c.usage, c.usage.completion)
    })
}

/// The streamed event sequence: `message_start`, `ping`, one start/deltas/stop group per
/// content block, `message_delta`, `message_stop`.
pub(crate) fn events(c: &Completion) -> Vec<SseEvent> {
    let start = json!({
        "type": "message_start",
        "message": {
            "id": c.id,
            "type": "message",
            "role": "assistant",
            "model": c.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(&c.usage, 1)
        }
    });
    let mut events = vec![
        SseEvent::named("message_start", &start),
        SseEvent::named("ping", &json!({"type": "ping"})),
    ];

    // (opening block, deltas) per content block, in order.
    let mut blocks: Vec<(Value, Vec<Value>)> = Vec::new();
    if let Some(thinking) = &c.reasoning {
        let mut deltas: Vec<Value> = pieces(thinking, TEXT_PIECE)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": SIGNATURE}));
        blocks.push((json!({"type": "thinking", "thinking": ""}), deltas));
    }
    if let Some(text) = &c.text {
        let deltas = pieces(text, TEXT_PIECE)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        blocks.push((json!({"type": "text", "text": ""}), deltas));
    }
    for call in &c.tool_calls {
        let opening = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
        let deltas = std::iter::once("")
            .chain(pieces(&call.arguments, ARGS_PIECE))
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        blocks.push((opening, deltas));
    }

    for (index, (opening, deltas)) in blocks.into_iter().enumerate() {
        events.push(SseEvent::named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": opening}),
        ));
        events.extend(deltas.into_iter().map(|delta| {
            SseEvent::named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        }));
        events.push(SseEvent::named(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }

    events.push(SseEvent::named(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(c.finish), "stop_sequence": null},
            "usage": {"output_tokens": c.usage.completion}
        }),
    ));
    events.push(SseEvent::named(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    events
}

/// `{"type": "error", "error": {"type", "message"}}` with Anthropic's type for `status`.
pub(crate) fn error(status: u16, message: Option<&str>) -> Value {
    let (kind, default) = match status {
        401 => ("authentication_error", "invalid x-api-key"),
        402 => ("billing_error", "Your credit balance is too low."),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => (
            "not_found_error",
            "The requested resource could not be found.",
        ),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        429 => (
            "rate_limit_error",
            "Number of requests has exceeded your rate limit.",
        ),
        504 => ("timeout_error", "Request timed out."),
        529 => ("overloaded_error", "Overloaded"),
        s if s >= 500 => ("api_error", "Internal server error"),
        _ => ("invalid_request_error", "Invalid request."),
    };
    json!({
        "type": "error",
        "error": {"type": kind, "message": message.unwrap_or(default)},
        "request_id": "req_testkit"
    })
}

/// The 400 "prompt is too long" error body.
pub(crate) fn context_overflow(prompt_tokens: u64) -> Value {
    let message = format!(
        "prompt is too long: {} tokens > {CONTEXT_LIMIT} maximum",
        CONTEXT_LIMIT + prompt_tokens
    );
    error(400, Some(&message))
}

/// A stream whose data lines are not JSON.
pub(crate) fn malformed_events() -> Vec<SseEvent> {
    let raw = |event, data: &str| SseEvent {
        event: Some(event),
        data: data.to_owned(),
    };
    vec![
        raw(
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_malformed","#,
        ),
        raw("content_block_delta", "this is not json"),
        raw("message_stop", r#"{"type":"message_stop""#),
    ]
}
