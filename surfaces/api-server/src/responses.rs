//! `POST /v1/responses` (with `previous_response_id` chaining; streaming in
//! the Responses event format), `GET` and `DELETE /v1/responses/{id}`.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use serde_json::{Value, json};
use talaria_kernel::Usage;
use tokio::sync::mpsc;

use crate::Shared;
use crate::auth::KeyId;
use crate::error::ApiError;
use crate::request::{self, Conversation, Started};
use crate::runner::{Finished, RunEvent};

/// What the request asked for besides the input.
struct Options {
    model: String,
    stream: bool,
    store: bool,
    instructions: Option<String>,
    previous: Option<String>,
}

fn parse(body: &Value) -> Result<(Options, Conversation), ApiError> {
    let mut conversation = Conversation::default();
    let instructions = match body.get("instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => return Err(ApiError::bad_request("'instructions' must be a string")),
    };
    if let Some(text) = &instructions {
        conversation.push("system", text.clone())?;
    }
    match body.get("input") {
        Some(Value::String(text)) => conversation.push("user", text.clone())?,
        Some(Value::Array(items)) => {
            for item in items {
                let kind = item
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("message");
                if kind != "message" {
                    // Function calls and their outputs, reasoning: the client's own tools.
                    continue;
                }
                let role = item
                    .get("role")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ApiError::bad_request("every input message needs a 'role'"))?;
                let text = request::content_text(item.get("content").unwrap_or(&Value::Null))?;
                conversation.push(role, text)?;
            }
        }
        _ => {
            return Err(ApiError::bad_request(
                "'input' must be a string or an array of input items",
            ));
        }
    }
    let conversation = conversation.finish()?;
    let flag = |name: &str, default: bool| match body.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::bad_request(format!("'{name}' must be a boolean"))),
    };
    let previous = match body.get("previous_response_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => {
            return Err(ApiError::bad_request(
                "'previous_response_id' must be a string",
            ));
        }
    };
    Ok((
        Options {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("talaria")
                .to_owned(),
            stream: flag("stream", false)?,
            store: flag("store", true)?,
            instructions,
            previous,
        },
        conversation,
    ))
}

/// `work` (on the session map: SQLite) off the async threads; a failure is a 500.
async fn blocking<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::server(e.to_string()))?
        .map_err(|e| ApiError::server(e.to_string()))
}

/// The session a previous response belongs to.
async fn previous_session(state: &Shared, key: &KeyId, id: &str) -> Result<String, ApiError> {
    let found = {
        let state = state.clone();
        let key = key.clone();
        let id = id.to_owned();
        blocking(move || state.runner.map.response(&key, &id)).await?
    };
    found
        .map(|(session, _)| session)
        .ok_or_else(|| ApiError::not_found(format!("no stored response '{id}'")))
}

/// The handler for `POST /v1/responses`.
pub async fn create(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (key, body) = request::read_json(&state, &headers, body).await?;
    let (options, conversation) = parse(&body)?;
    let named = match &options.previous {
        Some(id) => Some(previous_session(&state, &key, id).await?),
        None => request::named_session(&headers),
    };
    let started = request::start(&state, key.clone(), named, conversation).await?;
    let shape = Shape {
        id: request::new_id("resp_"),
        item_id: request::new_id("msg_"),
        created_at: request::now_secs(),
        options,
    };
    if shape.options.stream {
        Ok(stream(state, key, started, shape))
    } else {
        whole(state, key, started, shape).await
    }
}

/// What a response object repeats.
struct Shape {
    id: String,
    item_id: String,
    created_at: u64,
    options: Options,
}

impl Shape {
    fn message(&self, text: &str, status: &str) -> Value {
        json!({
            "type": "message",
            "id": self.item_id,
            "status": status,
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        })
    }

    fn object(
        &self,
        status: &str,
        output: Vec<Value>,
        usage: Option<&Usage>,
        error: Value,
    ) -> Value {
        let usage = usage.map(|usage| {
            let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
            json!({
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + usage.output_tokens,
            })
        });
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": error,
            "incomplete_details": null,
            "instructions": self.options.instructions,
            "max_output_tokens": null,
            "model": self.options.model,
            "output": output,
            "parallel_tool_calls": false,
            "previous_response_id": self.options.previous,
            "store": self.options.store,
            "temperature": null,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": null,
            "truncation": "disabled",
            "usage": usage,
            "metadata": {},
        })
    }

    fn done(&self, finished: &Finished) -> Value {
        let status = if finished.finish_reason == "length" {
            "incomplete"
        } else {
            "completed"
        };
        let mut object = self.object(
            status,
            vec![self.message(&finished.answer, "completed")],
            Some(&finished.usage),
            Value::Null,
        );
        if status == "incomplete" {
            object["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        object
    }
}

/// Keeps the response (when the client asked for storing) for GET and chaining.
async fn keep(state: &Shared, key: &KeyId, session: &str, object: &Value, store: bool) {
    if !store {
        return;
    }
    let state = state.clone();
    let key = key.clone();
    let session = session.to_owned();
    let object = object.clone();
    let id = object["id"].as_str().unwrap_or_default().to_owned();
    let kept = tokio::task::spawn_blocking(move || {
        state.runner.map.put_response(&key, &id, &session, &object)
    })
    .await;
    if let Ok(Err(error)) = kept {
        crate::log(format_args!("warning: cannot store a response: {error}"));
    }
}

async fn whole(
    state: Shared,
    key: KeyId,
    mut started: Started,
    shape: Shape,
) -> Result<Response, ApiError> {
    let finished = loop {
        match started.events.recv().await {
            Some(RunEvent::Done(outcome)) => break outcome?,
            Some(_) => {}
            None => return Err(ApiError::server("the run ended without an answer")),
        }
    };
    let object = shape.done(&finished);
    keep(
        &state,
        &key,
        &finished.session_id,
        &object,
        shape.options.store,
    )
    .await;
    Ok((
        request::session_header(&finished.session_id),
        axum::Json(object),
    )
        .into_response())
}

/// Numbers the events of one stream.
struct Events {
    out: mpsc::UnboundedSender<Event>,
    sequence: u64,
}

impl Events {
    fn send(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        let _ = self
            .out
            .send(Event::default().event(kind).data(data.to_string()));
    }
}

fn stream(state: Shared, key: KeyId, started: Started, shape: Shape) -> Response {
    let Started {
        session_id,
        mut events,
        cancel,
    } = started;
    let (out, body) = mpsc::unbounded_channel::<Event>();
    let header = request::session_header(&session_id);
    tokio::spawn(async move {
        let mut sse = Events { out, sequence: 0 };
        let item = |text: &str, status: &str| shape.message(text, status);
        sse.send(
            "response.created",
            json!({"response": shape.object("in_progress", vec![], None, Value::Null)}),
        );
        sse.send(
            "response.in_progress",
            json!({"response": shape.object("in_progress", vec![], None, Value::Null)}),
        );
        let mut item_open = false;
        let mut text = String::new();
        let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
        let finished = loop {
            match events.recv().await {
                Some(RunEvent::Text(delta)) if !delta.is_empty() => {
                    if !item_open {
                        open_item(&mut sse, &shape, &item("", "in_progress"), &part(""));
                        item_open = true;
                    }
                    text.push_str(&delta);
                    sse.send(
                        "response.output_text.delta",
                        json!({
                            "item_id": shape.item_id, "output_index": 0, "content_index": 0,
                            "delta": delta, "logprobs": [],
                        }),
                    );
                }
                Some(RunEvent::Done(outcome)) => break outcome,
                Some(_) => {}
                None => break Err(ApiError::server("the run ended without an answer")),
            }
        };
        match finished {
            Ok(finished) => {
                if !item_open {
                    open_item(&mut sse, &shape, &item("", "in_progress"), &part(""));
                    sse.send(
                        "response.output_text.delta",
                        json!({
                            "item_id": shape.item_id, "output_index": 0, "content_index": 0,
                            "delta": finished.answer, "logprobs": [],
                        }),
                    );
                    text.clone_from(&finished.answer);
                }
                sse.send(
                    "response.output_text.done",
                    json!({
                        "item_id": shape.item_id, "output_index": 0, "content_index": 0,
                        "text": text, "logprobs": [],
                    }),
                );
                sse.send(
                    "response.content_part.done",
                    json!({
                        "item_id": shape.item_id, "output_index": 0, "content_index": 0,
                        "part": part(&text),
                    }),
                );
                sse.send(
                    "response.output_item.done",
                    json!({
                        "output_index": 0, "item": item(&text, "completed"),
                    }),
                );
                let object = shape.done(&finished);
                keep(
                    &state,
                    &key,
                    &finished.session_id,
                    &object,
                    shape.options.store,
                )
                .await;
                let kind = if object["status"] == "incomplete" {
                    "response.incomplete"
                } else {
                    "response.completed"
                };
                sse.send(kind, json!({"response": object}));
            }
            Err(error) => {
                let failure = json!({"code": "server_error", "message": error.message});
                sse.send(
                    "response.failed",
                    json!({"response": shape.object("failed", vec![], None, failure)}),
                );
            }
        }
    });
    (header, crate::sse::stream(body, cancel)).into_response()
}

fn open_item(sse: &mut Events, shape: &Shape, item: &Value, part: &Value) {
    let mut item = item.clone();
    item["content"] = json!([]);
    sse.send(
        "response.output_item.added",
        json!({"output_index": 0, "item": item}),
    );
    sse.send(
        "response.content_part.added",
        json!({
            "item_id": shape.item_id, "output_index": 0, "content_index": 0, "part": part,
        }),
    );
}

/// `GET /v1/responses/{id}`.
pub async fn fetch(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let key = state.gate.check(&headers)?;
    let found = blocking({
        let id = id.clone();
        move || state.runner.map.response(&key, &id)
    })
    .await?;
    match found {
        Some((session, object)) => {
            Ok((request::session_header(&session), axum::Json(object)).into_response())
        }
        None => Err(ApiError::not_found(format!("no stored response '{id}'"))),
    }
}

/// `DELETE /v1/responses/{id}` (the session stays; only the response goes).
pub async fn delete(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let key = state.gate.check(&headers)?;
    let deleted = blocking({
        let id = id.clone();
        move || state.runner.map.delete_response(&key, &id)
    })
    .await?;
    if !deleted {
        return Err(ApiError::not_found(format!("no stored response '{id}'")));
    }
    Ok(
        axum::Json(json!({"id": id, "object": "response.deleted", "deleted": true}))
            .into_response(),
    )
}
