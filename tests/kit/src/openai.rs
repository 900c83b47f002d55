//! OpenAI Chat Completions rendering: `chat.completion`, `chat.completion.chunk`, errors.

use serde_json::{Value, json};

use crate::render::{ARGS_PIECE, Completion, Finish, SseEvent, TEXT_PIECE, Usage, pieces};

/// Context window quoted in context-overflow errors.
const CONTEXT_LIMIT: u64 = 128_000;
const FINGERPRINT: &str = "fp_testkit";

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::ToolCalls => "tool_calls",
        Finish::Length => "length",
    }
}

fn usage(u: &Usage) -> Value {
    let mut prompt_details = json!({"cached_tokens": u.cache_read, "audio_tokens": 0});
    if u.cache_write > 0 {
        // OpenRouter's field for prompt-cache writes (docs: use-cases/usage-accounting).
        prompt_details["cache_write_tokens"] = json!(u.cache_write);
    }
    json!({
        "prompt_tokens": u.prompt,
        "completion_tokens": u.completion,
        "total_tokens": u.prompt + u.completion,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {
            "reasoning_tokens": u.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    })
}

/// A non-streaming `chat.completion` object.
pub(crate) fn completion(c: &Completion) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": c.text,
        "refusal": null,
        "annotations": []
    });
    if let Some(reasoning) = &c.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    if !c.tool_calls.is_empty() {
        message["tool_calls"] = c
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments}
                })
            })
            .collect();
    }
    json!({
        "id": c.id,
        "object": "chat.completion",
        "created": c.created,
        "model": c.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(c.finish)
        }],
        "usage": usage(&c.usage),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT
    })
}

/// The `chat.completion.chunk` stream, ending with the usage chunk (when asked for) and `[DONE]`.
pub(crate) fn chunks(c: &Completion, include_usage: bool) -> Vec<SseEvent> {
    let chunk = |choices: Value| {
        let mut chunk = json!({
            "id": c.id,
            "object": "chat.completion.chunk",
            "created": c.created,
            "model": c.model,
            "service_tier": "default",
            "system_fingerprint": FINGERPRINT,
            "choices": choices
        });
        if include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    };
    let delta = |delta: Value, finish: Option<&str>| {
        let choice = json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish});
        SseEvent::data(chunk(json!([choice])).to_string())
    };

    let mut events = vec![delta(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    let reasoning = c.reasoning.as_deref().unwrap_or_default();
    events.extend(
        pieces(reasoning, TEXT_PIECE)
            .into_iter()
            .map(|p| delta(json!({"reasoning_content": p}), None)),
    );
    let text = c.text.as_deref().unwrap_or_default();
    events.extend(
        pieces(text, TEXT_PIECE)
            .into_iter()
            .map(|p| delta(json!({"content": p}), None)),
    );
    for (index, call) in c.tool_calls.iter().enumerate() {
        let opening = json!({
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""}
        });
        events.push(delta(json!({"tool_calls": [opening]}), None));
        events.extend(pieces(&call.arguments, ARGS_PIECE).into_iter().map(|p| {
            let part = json!({"index": index, "function": {"arguments": p}});
            delta(json!({"tool_calls": [part]}), None)
        }));
    }
    events.push(delta(json!({}), Some(finish_reason(c.finish))));
    if include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = usage(&c.usage);
        events.push(SseEvent::data(last.to_string()));
    }
    events.push(SseEvent::data("[DONE]"));
    events
}

/// `{"error": {"message", "type", "param", "code"}}` with OpenAI's type/code for `status`.
pub(crate) fn error(status: u16, message: Option<&str>) -> Value {
    let (kind, code, default) = match status {
        400 => ("invalid_request_error", None, "Invalid request."),
        401 => (
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided.",
        ),
        403 => (
            "invalid_request_error",
            Some("unsupported_country_region_territory"),
            "Country, region, or territory not supported.",
        ),
        404 => (
            "invalid_request_error",
            Some("model_not_found"),
            "The model does not exist or you do not have access to it.",
        ),
        429 => (
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests. Please try again later.",
        ),
        503 => (
            "server_error",
            None,
            "The engine is currently overloaded, please try again later.",
        ),
        s if s >= 500 => (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        _ => ("invalid_request_error", None, "Request failed."),
    };
    json!({
        "error": {
            "message": message.unwrap_or(default),
            "type": kind,
            "param": null,
            "code": code
        }
    })
}

/// The 400 `context_length_exceeded` error body.
pub(crate) fn context_overflow(prompt_tokens: u64) -> Value {
    let message = format!(
        "This model's maximum context length is {CONTEXT_LIMIT} tokens. However, your messages \
         resulted in {} tokens. Please reduce the length of the messages.",
        CONTEXT_LIMIT + prompt_tokens
    );
    json!({
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded"
        }
    })
}

/// A stream whose data lines are not JSON, still terminated by `[DONE]`.
pub(crate) fn malformed_chunks() -> Vec<SseEvent> {
    vec![
        SseEvent::data(
            r#"{"id":"chatcmpl-malformed","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"unterminated"#,
        ),
        SseEvent::data("this is not json"),
        SseEvent::data("[DONE]"),
    ]
}
