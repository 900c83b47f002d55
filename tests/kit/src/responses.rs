//! OpenAI Responses rendering: `response` objects, the event stream, errors.
//!
//! Shapes follow the Responses API reference ("The response object", "Streaming events") and
//! the openai-python types under `src/openai/types/responses/`. A scripted reasoning text
//! becomes a `reasoning` output item whose summary is that text, with id `rs_testkit_N` and
//! encrypted content `gAAAAB-testkit-N` (N: the request's 1-based position), so a test can
//! check that the client sends it back.

use serde_json::{Value, json};

use crate::render::{ARGS_PIECE, Completion, Finish, SseEvent, TEXT_PIECE, Usage, pieces};

/// Context window quoted in context-overflow errors.
const CONTEXT_LIMIT: u64 = 400_000;

/// The `N` of a completion id `resp_testkit_N`.
fn number(c: &Completion) -> &str {
    c.id.rsplit('_').next().unwrap_or_default()
}

fn usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.prompt,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.completion,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.prompt + u.completion
    })
}

/// The output items of a finished reply, in order: reasoning, message, function calls.
fn output_items(c: &Completion) -> Vec<Value> {
    let n = number(c);
    let mut items = Vec::new();
    if let Some(reasoning) = &c.reasoning {
        items.push(json!({
            "id": format!("rs_testkit_{n}"),
            "type": "reasoning",
            "encrypted_content": format!("gAAAAB-testkit-{n}"),
            "summary": [{"type": "summary_text", "text": reasoning}]
        }));
    }
    if let Some(text) = &c.text {
        items.push(json!({
            "id": format!("msg_testkit_{n}"),
            "type": "message",
            "status": status(c.finish),
            "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]
        }));
    }
    items.extend(c.tool_calls.iter().enumerate().map(|(i, call)| {
        json!({
            "id": format!("fc_testkit_{n}_{i}"),
            "type": "function_call",
            "status": "completed",
            "arguments": call.arguments,
            "call_id": call.id,
            "name": call.name
        })
    }));
    items
}

fn status(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop | Finish::ToolCalls => "completed",
        Finish::Length => "incomplete",
    }
}

/// A `response` object: `in_progress` with no output and no usage, or finished.
fn response(c: &Completion, finished: bool) -> Value {
    let (status, output, usage) = if finished {
        (status(c.finish), output_items(c), usage(&c.usage))
    } else {
        ("in_progress", Vec::new(), Value::Null)
    };
    let incomplete =
        (finished && c.finish == Finish::Length).then(|| json!({"reason": "max_output_tokens"}));
    json!({
        "id": c.id,
        "object": "response",
        "created_at": c.created,
        "status": status,
        "error": null,
        "incomplete_details": incomplete,
        "model": c.model,
        "output": output,
        "parallel_tool_calls": true,
        "store": false,
        "usage": usage
    })
}

/// A non-streaming `response` object.
pub(crate) fn completion(c: &Completion) -> Value {
    response(c, true)
}

/// The event stream: `response.created`, `response.in_progress`, each output item's
/// added/delta/done events, then `response.completed` (`response.incomplete` when cut off).
pub(crate) fn events(c: &Completion) -> Vec<SseEvent> {
    let mut out = Stream::default();
    out.push("response.created", json!({"response": response(c, false)}));
    out.push(
        "response.in_progress",
        json!({"response": response(c, false)}),
    );
    for (index, item) in output_items(c).into_iter().enumerate() {
        let id = item["id"].clone();
        let at = json!({"item_id": id, "output_index": index});
        let mut added = item.clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                added["summary"] = json!([]);
                out.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                let part =
                    json!({"summary_index": 0, "part": {"type": "summary_text", "text": ""}});
                out.push_at("response.reasoning_summary_part.added", &at, part);
                for piece in pieces(text, TEXT_PIECE) {
                    let delta = json!({"summary_index": 0, "delta": piece});
                    out.push_at("response.reasoning_summary_text.delta", &at, delta);
                }
                let done = json!({"summary_index": 0, "text": text});
                out.push_at("response.reasoning_summary_text.done", &at, done);
                let part =
                    json!({"summary_index": 0, "part": {"type": "summary_text", "text": text}});
                out.push_at("response.reasoning_summary_part.done", &at, part);
            }
            Some("message") => {
                added["status"] = json!("in_progress");
                added["content"] = json!([]);
                out.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                let part = |text: &str| json!({"content_index": 0, "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": text}});
                out.push_at("response.content_part.added", &at, part(""));
                for piece in pieces(text, TEXT_PIECE) {
                    let delta = json!({"content_index": 0, "delta": piece, "logprobs": []});
                    out.push_at("response.output_text.delta", &at, delta);
                }
                let done = json!({"content_index": 0, "text": text, "logprobs": []});
                out.push_at("response.output_text.done", &at, done);
                out.push_at("response.content_part.done", &at, part(text));
            }
            _ => {
                added["status"] = json!("in_progress");
                added["arguments"] = json!("");
                out.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for piece in pieces(arguments, ARGS_PIECE) {
                    out.push_at(
                        "response.function_call_arguments.delta",
                        &at,
                        json!({"delta": piece}),
                    );
                }
                let done = json!({"arguments": arguments});
                out.push_at("response.function_call_arguments.done", &at, done);
            }
        }
        out.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
    let last = match c.finish {
        Finish::Length => "response.incomplete",
        Finish::Stop | Finish::ToolCalls => "response.completed",
    };
    out.push(last, json!({"response": response(c, true)}));
    out.events
}

/// Events under construction, numbered in order (`sequence_number`).
#[derive(Default)]
struct Stream {
    events: Vec<SseEvent>,
}

impl Stream {
    fn push(&mut self, kind: &'static str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.events.len());
        self.events.push(SseEvent::named(kind, &fields));
    }

    /// An event about one item: `at` (its `item_id` and `output_index`) plus `fields`.
    fn push_at(&mut self, kind: &'static str, at: &Value, mut fields: Value) {
        if let (Some(fields), Some(at)) = (fields.as_object_mut(), at.as_object()) {
            for (key, value) in at {
                fields.insert(key.clone(), value.clone());
            }
        }
        self.push(kind, fields);
    }
}

/// The 400 error body of a prompt over the context window.
pub(crate) fn context_overflow(prompt_tokens: u64) -> Value {
    let message = format!(
        "Your input exceeds the context window of this model ({} > {CONTEXT_LIMIT} tokens). \
         Please adjust your input and try again.",
        CONTEXT_LIMIT + prompt_tokens
    );
    json!({
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded"
        }
    })
}

/// A stream whose data lines are not JSON.
pub(crate) fn malformed_events() -> Vec<SseEvent> {
    let raw = |event, data: &str| SseEvent {
        event: Some(event),
        data: data.to_owned(),
    };
    vec![
        raw(
            "response.created",
            r#"{"type":"response.created","response":{"id":"resp_malformed","#,
        ),
        raw("response.output_text.delta", "this is not json"),
        raw("response.completed", r#"{"type":"response.completed""#),
    ]
}
