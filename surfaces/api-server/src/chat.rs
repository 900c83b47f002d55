//! `POST /v1/chat/completions`, streaming or not.

use axum::body::Body;
use axum::extract::State;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use serde_json::{Value, json};
use talaria_kernel::Usage;
use tokio::sync::mpsc;

use crate::Shared;
use crate::error::ApiError;
use crate::request::{self, Conversation, Started};
use crate::runner::{Finished, RunEvent};

/// What the request asked for besides the messages.
struct Options {
    model: String,
    stream: bool,
    include_usage: bool,
}

fn parse(body: &Value) -> Result<(Options, Conversation), ApiError> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::bad_request("'messages' must be an array of messages"))?;
    let mut conversation = Conversation::default();
    for message in messages {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::bad_request("every message needs a 'role' string"))?;
        let text = request::content_text(message.get("content").unwrap_or(&Value::Null))?;
        conversation.push(role, text)?;
    }
    let conversation = conversation.finish()?;
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::bad_request("'stream' must be a boolean")),
    };
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("talaria")
        .to_owned();
    Ok((
        Options {
            model,
            stream,
            include_usage,
        },
        conversation,
    ))
}

fn usage_json(usage: &Usage) -> Value {
    let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
    })
}

/// The handler.
pub async fn completions(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (key, body) = request::read_json(&state, &headers, body).await?;
    let (options, conversation) = parse(&body)?;
    let started =
        request::start(&state, key, request::named_session(&headers), conversation).await?;
    let id = request::new_id("chatcmpl-");
    if options.stream {
        Ok(stream(
            started,
            id,
            options,
            request::wants_progress(&headers),
        ))
    } else {
        whole(started, id, options).await
    }
}

async fn whole(mut started: Started, id: String, options: Options) -> Result<Response, ApiError> {
    let finished = loop {
        match started.events.recv().await {
            Some(RunEvent::Done(outcome)) => break outcome?,
            Some(_) => {}
            None => return Err(ApiError::server("the run ended without an answer")),
        }
    };
    let body = json!({
        "id": id,
        "object": "chat.completion",
        "created": request::now_secs(),
        "model": options.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": finished.answer},
            "finish_reason": finished.finish_reason,
        }],
        "usage": usage_json(&finished.usage),
    });
    Ok((
        request::session_header(&finished.session_id),
        axum::Json(body),
    )
        .into_response())
}

fn stream(started: Started, id: String, options: Options, progress: bool) -> Response {
    let Started {
        session_id,
        mut events,
        cancel,
    } = started;
    let (out, body) = mpsc::unbounded_channel::<Event>();
    let include_usage = options.include_usage;
    let chunks = Chunks {
        id,
        created: request::now_secs(),
        model: options.model,
    };
    let chunk = move |delta: Value, finish: Option<&str>| chunks.chunk(delta, finish);
    tokio::spawn(async move {
        let _ = out.send(event(chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )));
        let mut sent_text = false;
        let finished: Result<Finished, ApiError> = loop {
            match events.recv().await {
                Some(RunEvent::Text(text)) => {
                    sent_text |= !text.is_empty();
                    let _ = out.send(event(chunk(json!({"content": text}), None)));
                }
                Some(RunEvent::ToolStarted { name }) if progress => {
                    let _ = out.send(progress_event(&name, "started"));
                }
                Some(RunEvent::ToolFinished { name, is_error }) if progress => {
                    let status = if is_error { "failed" } else { "finished" };
                    let _ = out.send(progress_event(&name, status));
                }
                Some(RunEvent::Done(outcome)) => break outcome,
                Some(_) => {}
                None => break Err(ApiError::server("the run ended without an answer")),
            }
        };
        match finished {
            Ok(finished) => {
                // A model that does not stream gives its answer only at the end.
                if !sent_text {
                    let _ = out.send(event(chunk(json!({"content": finished.answer}), None)));
                }
                let _ = out.send(event(chunk(json!({}), Some(finished.finish_reason))));
                if include_usage {
                    let mut last = chunk(json!({}), None);
                    last["choices"] = json!([]);
                    last["usage"] = usage_json(&finished.usage);
                    let _ = out.send(crate::sse::data(&last));
                }
            }
            Err(error) => {
                let _ = out.send(crate::sse::data(&error.body()));
            }
        }
        let _ = out.send(Event::default().data("[DONE]"));
    });
    (
        request::session_header(&session_id),
        crate::sse::stream(body, cancel),
    )
        .into_response()
}

/// What every chunk of one completion repeats.
struct Chunks {
    id: String,
    created: u64,
    model: String,
}

impl Chunks {
    /// One chunk with `delta`.
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    }
}

fn event(chunk: Value) -> Event {
    crate::sse::data(&chunk)
}

/// A named event, sent only to clients that asked for it.
fn progress_event(tool: &str, status: &str) -> Event {
    Event::default()
        .event("talaria.tool.progress")
        .data(json!({"tool": tool, "status": status}).to_string())
}
