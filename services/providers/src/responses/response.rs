//! Decodes OpenAI Responses responses: the streamed events (`response.created` ...
//! `response.completed`) and whole `response` objects, which share the handling of output
//! items (a whole response's `output` is what the stream's `response.output_item.done`
//! events carry one by one).
//!
//! Event and item shapes: the Responses API reference ("Streaming events") and the openai-python
//! types under `src/openai/types/responses/` (`ResponseOutputItemAddedEvent`,
//! `ResponseTextDeltaEvent`, `ResponseFunctionCallArgumentsDeltaEvent`,
//! `ResponseReasoningSummaryTextDeltaEvent`, `ResponseCompletedEvent`, `ResponseErrorEvent`,
//! `ResponseReasoningItem`, `ResponseUsage`).

use serde::Deserialize;
use serde_json::{Map, Value, json};
use talaria_kernel::{FinishReason, ModelError, ModelResponse, ProviderState, StreamSink, Usage};

use super::{OUTPUT, WIRE};
use crate::assemble::Assembler;
use crate::errors::{self, malformed};
use crate::http::Decoder;
use crate::sse::SseEvent;

/// One streamed event; `error` events are told apart before this is parsed.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event {
    #[serde(rename = "response.output_item.added")]
    ItemAdded {
        #[serde(default)]
        output_index: usize,
        item: Value,
    },
    #[serde(rename = "response.output_item.done")]
    ItemDone {
        #[serde(default)]
        output_index: usize,
        item: Value,
    },
    #[serde(
        rename = "response.output_text.delta",
        alias = "response.refusal.delta"
    )]
    TextDelta {
        #[serde(default)]
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta {
        #[serde(default)]
        output_index: usize,
        delta: String,
    },
    /// The reasoning summary OpenAI's models show; `reasoning_text` is the raw reasoning some
    /// other servers stream instead.
    #[serde(
        rename = "response.reasoning_summary_text.delta",
        alias = "response.reasoning_text.delta"
    )]
    ReasoningDelta {
        #[serde(default)]
        output_index: usize,
        #[serde(default, alias = "content_index")]
        summary_index: usize,
        delta: String,
    },
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Finished { response: WireResponse },
    #[serde(rename = "response.failed")]
    Failed { response: WireResponse },
    #[serde(other)]
    Other, // response.created, *.done, content parts, in_progress, ...
}

/// The parts of a `response` object this decoder reads.
#[derive(Deserialize)]
struct WireResponse {
    status: Option<String>,
    #[serde(default)]
    output: Vec<Value>,
    usage: Option<WireUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

/// `output_tokens` includes `output_tokens_details.reasoning_tokens`, as the kernel counts.
#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

/// Where one output item goes back on the next request.
enum Placed {
    /// A reasoning item, kept verbatim.
    Reasoning(Value),
    Message,
    Call(String),
}

/// Decoder for one Responses response.
pub(crate) struct ResponsesDecoder<'s> {
    asm: Assembler<'s>,
    finish: Option<FinishReason>,
    /// Output indexes whose content arrived as deltas (their `done` item repeats it).
    streamed: Vec<usize>,
    /// The reasoning part last streamed, to separate the next one from it.
    last_reasoning: Option<(usize, usize)>,
    /// The message item whose text came last, likewise.
    last_text: Option<usize>,
    /// Finished output items by output index.
    placed: Vec<(usize, Placed)>,
}

impl<'s> ResponsesDecoder<'s> {
    pub fn new(sink: &'s dyn StreamSink) -> Self {
        Self {
            asm: Assembler::new(sink),
            finish: None,
            streamed: Vec::new(),
            last_reasoning: None,
            last_text: None,
            placed: Vec::new(),
        }
    }

    fn apply(&mut self, event: Event) -> Result<(), ModelError> {
        match event {
            Event::ItemAdded { output_index, item } => {
                if str_field(&item, "type") == Some("function_call") {
                    let (id, name) = (str_field(&item, "call_id"), str_field(&item, "name"));
                    self.asm.tool_call(output_index, id, name, "");
                }
            }
            Event::ItemDone { output_index, item } => self.item_done(output_index, item),
            Event::TextDelta {
                output_index,
                delta,
            } => {
                self.mark_streamed(output_index);
                self.text(output_index, &delta);
            }
            Event::ArgumentsDelta {
                output_index,
                delta,
            } => {
                self.mark_streamed(output_index);
                self.asm.tool_call(output_index, None, None, &delta);
            }
            Event::ReasoningDelta {
                output_index,
                summary_index,
                delta,
            } => {
                self.mark_streamed(output_index);
                self.reasoning((output_index, summary_index), &delta);
            }
            Event::Finished { response } => self.finished(response),
            Event::Failed { response } => return Err(failure(response.error)),
            Event::Other => {}
        }
        Ok(())
    }

    fn mark_streamed(&mut self, output_index: usize) {
        if !self.streamed.contains(&output_index) {
            self.streamed.push(output_index);
        }
    }

    /// Appends reasoning; a new summary part starts a new paragraph.
    fn reasoning(&mut self, part: (usize, usize), text: &str) {
        if text.is_empty() {
            return;
        }
        match self.last_reasoning.replace(part) {
            Some(last) if last != part => self.asm.reasoning("\n\n"),
            _ => {}
        }
        self.asm.reasoning(text);
    }

    /// Appends visible text; another message item's text starts a new paragraph.
    fn text(&mut self, index: usize, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.last_text.replace(index) {
            Some(last) if last != index => self.asm.text("\n\n"),
            _ => {}
        }
        self.asm.text(text);
    }

    /// A finished output item: what was not streamed is taken from it, and its place noted.
    fn item_done(&mut self, index: usize, item: Value) {
        let streamed = self.streamed.contains(&index);
        match str_field(&item, "type") {
            Some("reasoning") => {
                if !streamed {
                    let parts = ["summary", "content"]
                        .into_iter()
                        .filter_map(|key| item.get(key).and_then(Value::as_array))
                        .find(|parts| !parts.is_empty());
                    for (part, text) in parts.into_iter().flatten().enumerate() {
                        if let Some(text) = str_field(text, "text") {
                            self.reasoning((index, part), text);
                        }
                    }
                }
                // Without its encrypted content a reasoning item cannot be sent back when the
                // provider stores nothing.
                if item.get("encrypted_content").is_some_and(Value::is_string) {
                    self.placed.push((index, Placed::Reasoning(item)));
                }
            }
            Some("message") => {
                if !streamed {
                    let parts = item.get("content").and_then(Value::as_array);
                    for part in parts.into_iter().flatten() {
                        let text = str_field(part, "text").or(str_field(part, "refusal"));
                        self.text(index, text.unwrap_or_default());
                    }
                }
                self.placed.push((index, Placed::Message));
            }
            Some("function_call") => {
                let id = str_field(&item, "call_id");
                let name = str_field(&item, "name");
                let arguments = if streamed {
                    ""
                } else {
                    str_field(&item, "arguments").unwrap_or_default()
                };
                self.asm.tool_call(index, id, name, arguments);
                let id = self.asm.call_id(index).unwrap_or_default().to_owned();
                self.placed.push((index, Placed::Call(id)));
            }
            _ => {} // web search calls and other items of hosted tools are never requested
        }
    }

    /// `response.completed` or `response.incomplete`: usage and why it ended.
    fn finished(&mut self, response: WireResponse) {
        if let Some(usage) = &response.usage {
            self.asm.usage = map_usage(usage);
        }
        let reason = response.incomplete_details.and_then(|d| d.reason);
        self.finish = Some(match (response.status.as_deref(), reason.as_deref()) {
            (_, Some("max_output_tokens")) => FinishReason::Length,
            (_, Some("content_filter")) => FinishReason::ContentFilter,
            (Some("incomplete"), reason) => {
                FinishReason::Other(reason.unwrap_or("incomplete").to_owned())
            }
            _ => FinishReason::Stop,
        });
    }

    /// The reasoning items and the places of the other items, for the next request.
    fn provider_state(&mut self) -> Option<ProviderState> {
        if !self
            .placed
            .iter()
            .any(|(_, placed)| matches!(placed, Placed::Reasoning(_)))
        {
            return None;
        }
        let mut placed = std::mem::take(&mut self.placed);
        placed.sort_by_key(|(index, _)| *index);
        let output: Vec<Value> = placed
            .into_iter()
            .map(|(_, placed)| match placed {
                Placed::Reasoning(item) => item,
                Placed::Message => json!({"type": "message"}),
                Placed::Call(id) => json!({"type": "function_call", "call_id": id}),
            })
            .collect();
        let mut data = Map::new();
        data.insert(OUTPUT.into(), output.into());
        Some(ProviderState {
            wire: WIRE.into(),
            data: data.into(),
        })
    }
}

fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// The error of a failed response (`{"code", "message"}`), classified like any error event.
fn failure(error: Option<Value>) -> ModelError {
    let error = error
        .filter(|e| !e.is_null())
        .unwrap_or_else(|| json!({"message": "the response failed without an error"}));
    errors::from_error_event(&json!({ "error": error }))
}

fn parse_event(value: Value) -> Result<Event, ModelError> {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        // `{"type": "error", "code", "message", "param"}`; some servers nest an `error` object.
        return Err(errors::from_error_event(&value));
    }
    serde_json::from_value(value).map_err(|e| malformed(format!("unexpected event shape: {e}")))
}

impl Decoder for ResponsesDecoder<'_> {
    fn on_event(&mut self, event: SseEvent) -> Result<bool, ModelError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let value = serde_json::from_str(&event.data)
            .map_err(|e| malformed(format!("invalid JSON in stream: {e}")))?;
        self.apply(parse_event(value)?)?;
        Ok(self.finish.is_some())
    }

    fn may_end(&self) -> bool {
        false // only `response.completed` or `response.incomplete` completes a stream
    }

    fn on_whole(&mut self, body: Value) -> Result<(), ModelError> {
        if body.get("output").is_none() {
            return Err(if body.get("error").is_some_and(|e| !e.is_null()) {
                errors::from_error_event(&body)
            } else {
                malformed("response has no output")
            });
        }
        let mut response: WireResponse = serde_json::from_value(body)
            .map_err(|e| malformed(format!("unexpected response shape: {e}")))?;
        if response.status.as_deref() == Some("failed") {
            return Err(failure(response.error));
        }
        let items = std::mem::take(&mut response.output);
        self.finished(response);
        for (index, item) in items.into_iter().enumerate() {
            self.item_done(index, item);
        }
        Ok(())
    }

    fn finish(mut self) -> ModelResponse {
        let state = self.provider_state();
        let mut response = self.asm.finish(self.finish.unwrap_or_default());
        response.message.provider_state = state;
        response
    }
}

fn map_usage(usage: &WireUsage) -> Usage {
    let input = usage.input_tokens.unwrap_or(0);
    let cached = usage
        .input_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0);
    Usage {
        input_tokens: input.saturating_sub(cached),
        output_tokens: usage.output_tokens.unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;
    use std::sync::Mutex;
    use talaria_kernel::{NullSink, StreamEvent, ToolCall};

    /// A reasoning model's streamed reply with a summary, a call and usage, in the shape the API
    /// sends (the "Streaming events" reference; ids, sequence numbers and the encrypted content
    /// shortened).
    const CALL_STREAM: &str = r#"event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_68a1","object":"response","created_at":1755000000,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"You are helpful.","max_output_tokens":null,"model":"gpt-5-codex","output":[],"parallel_tool_calls":true,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"tool_choice":"auto","tools":[],"usage":null}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_68a1","object":"response","status":"in_progress","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_68a1","type":"reasoning","encrypted_content":"gAAAAABoo-1","summary":[]}}

event: response.reasoning_summary_part.added
data: {"type":"response.reasoning_summary_part.added","sequence_number":3,"item_id":"rs_68a1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_68a1","output_index":0,"summary_index":0,"delta":"**Reading the file**"}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":5,"item_id":"rs_68a1","output_index":0,"summary_index":0,"delta":" first."}

event: response.reasoning_summary_text.done
data: {"type":"response.reasoning_summary_text.done","sequence_number":6,"item_id":"rs_68a1","output_index":0,"summary_index":0,"text":"**Reading the file** first."}

event: response.reasoning_summary_part.added
data: {"type":"response.reasoning_summary_part.added","sequence_number":7,"item_id":"rs_68a1","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":8,"item_id":"rs_68a1","output_index":0,"summary_index":1,"delta":"Then answer."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":9,"output_index":0,"item":{"id":"rs_68a1","type":"reasoning","encrypted_content":"gAAAAABoo-1","summary":[{"type":"summary_text","text":"**Reading the file** first."},{"type":"summary_text","text":"Then answer."}]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":10,"output_index":1,"item":{"id":"msg_68a1","type":"message","status":"in_progress","content":[],"role":"assistant"}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":11,"item_id":"msg_68a1","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_68a1","output_index":1,"content_index":0,"delta":"Let me ","logprobs":[]}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":13,"item_id":"msg_68a1","output_index":1,"content_index":0,"delta":"look.","logprobs":[]}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":14,"item_id":"msg_68a1","output_index":1,"content_index":0,"text":"Let me look.","logprobs":[]}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":15,"output_index":1,"item":{"id":"msg_68a1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Let me look."}],"role":"assistant"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":16,"output_index":2,"item":{"id":"fc_68a1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_Xy1","name":"read_file"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":17,"item_id":"fc_68a1","output_index":2,"delta":"{\"path\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":18,"item_id":"fc_68a1","output_index":2,"delta":"\"a.txt\"}"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":19,"item_id":"fc_68a1","output_index":2,"arguments":"{\"path\":\"a.txt\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":20,"output_index":2,"item":{"id":"fc_68a1","type":"function_call","status":"completed","arguments":"{\"path\":\"a.txt\"}","call_id":"call_Xy1","name":"read_file"}}

event: response.completed
data: {"type":"response.completed","sequence_number":21,"response":{"id":"resp_68a1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[],"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},"output_tokens":90,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":1290}}}

"#;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<StreamEvent>>);

    impl StreamSink for Recorder {
        fn on_event(&self, event: &StreamEvent) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    /// Feeds `stream` in 7-byte pieces; the flag says whether the end marker came.
    fn decode(stream: &str, sink: &dyn StreamSink) -> (Result<ModelResponse, ModelError>, bool) {
        let mut decoder = ResponsesDecoder::new(sink);
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = stream
            .as_bytes()
            .chunks(7)
            .flat_map(|chunk| parser.push(chunk))
            .collect();
        events.extend(parser.finish());
        for event in events {
            match decoder.on_event(event) {
                Ok(true) => return (Ok(decoder.finish()), true),
                Ok(false) => {}
                Err(error) => return (Err(error), false),
            }
        }
        (Ok(decoder.finish()), false)
    }

    fn events(lines: &[Value]) -> String {
        lines
            .iter()
            .map(|event| {
                format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn a_recorded_stream_gives_text_reasoning_the_call_usage_and_the_state() {
        let sink = Recorder::default();
        let (response, ended) = decode(CALL_STREAM, &sink);
        assert!(ended, "response.completed ends the stream");
        let response = response.unwrap();
        assert_eq!(response.finish, FinishReason::ToolCalls);
        assert_eq!(response.message.content, "Let me look.");
        assert_eq!(
            response.message.reasoning.as_deref(),
            Some("**Reading the file** first.\n\nThen answer.")
        );
        assert_eq!(
            response.message.tool_calls,
            [ToolCall {
                id: "call_Xy1".into(),
                name: "read_file".into(),
                arguments: "{\"path\":\"a.txt\"}".into()
            }]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 176,
                output_tokens: 90,
                cache_read_tokens: 1024,
                cache_write_tokens: 0
            }
        );
        let state = response.message.provider_state.unwrap();
        assert_eq!(state.wire, "openai-responses");
        assert_eq!(
            state.data,
            json!({"output": [
                {"id": "rs_68a1", "type": "reasoning", "encrypted_content": "gAAAAABoo-1", "summary": [
                    {"type": "summary_text", "text": "**Reading the file** first."},
                    {"type": "summary_text", "text": "Then answer."},
                ]},
                {"type": "message"},
                {"type": "function_call", "call_id": "call_Xy1"},
            ]})
        );
        let streamed = sink.0.into_inner().unwrap();
        assert_eq!(
            streamed.first(),
            Some(&StreamEvent::ReasoningDelta {
                text: "**Reading the file**".into()
            })
        );
        assert!(streamed.contains(&StreamEvent::TextDelta {
            text: "Let me ".into()
        }));
        assert!(streamed.contains(&StreamEvent::ToolCallStart {
            index: 0,
            id: "call_Xy1".into(),
            name: "read_file".into()
        }));
        assert_eq!(
            streamed.last(),
            Some(&StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "\"a.txt\"}".into()
            })
        );
    }

    #[test]
    fn items_that_were_not_streamed_are_taken_from_their_done_events() {
        let stream = events(&[
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Short."}]}}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}}),
            json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{\"tz\":\"UTC\"}"}}),
            json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
        ]);
        let (response, _) = decode(&stream, &NullSink);
        let response = response.unwrap();
        assert_eq!(response.message.reasoning.as_deref(), Some("Short."));
        assert_eq!(response.message.content, "Hi.");
        assert_eq!(response.message.tool_calls[0].arguments, "{\"tz\":\"UTC\"}");
        assert_eq!(
            response.message.provider_state, None,
            "a reasoning item without encrypted content cannot be sent back"
        );
    }

    #[test]
    fn the_texts_of_two_message_items_are_two_paragraphs() {
        let stream = events(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Checking."}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "content": [{"type": "output_text", "text": "Done."}]}}),
            json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
        ]);
        let (response, _) = decode(&stream, &NullSink);
        assert_eq!(response.unwrap().message.content, "Checking.\n\nDone.");
    }

    #[test]
    fn incomplete_responses_say_why() {
        for (reason, finish) in [
            ("max_output_tokens", FinishReason::Length),
            ("content_filter", FinishReason::ContentFilter),
        ] {
            let stream = events(&[
                json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Partial"}),
                json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": reason}, "output": [], "usage": {"input_tokens": 5, "output_tokens": 7}}}),
            ]);
            let (response, ended) = decode(&stream, &NullSink);
            let response = response.unwrap();
            assert!(ended);
            assert_eq!(response.finish, finish);
            assert_eq!(response.message.content, "Partial");
            assert_eq!(response.usage.output_tokens, 7);
        }
    }

    #[test]
    fn a_stream_without_its_end_is_not_complete() {
        let stream = events(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Half"}),
        ]);
        let (_, ended) = decode(&stream, &NullSink);
        assert!(!ended);
        assert!(!ResponsesDecoder::new(&NullSink).may_end());
    }

    #[test]
    fn error_events_and_failed_responses_are_classified() {
        let overflow = events(&[
            json!({"type": "error", "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model.", "param": "input", "sequence_number": 2}),
        ]);
        assert!(matches!(
            decode(&overflow, &NullSink).0,
            Err(ModelError::ContextOverflow { .. })
        ));
        let limited = events(&[
            json!({"type": "response.failed", "response": {"status": "failed", "output": [], "error": {"code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 2s."}}}),
        ]);
        assert!(matches!(
            decode(&limited, &NullSink).0,
            Err(ModelError::RateLimited { .. })
        ));
        let server = events(&[
            json!({"type": "response.failed", "response": {"status": "failed", "output": [], "error": {"code": "server_error", "message": "The server had an error."}}}),
        ]);
        assert!(matches!(
            decode(&server, &NullSink).0,
            Err(ModelError::Server { status: 500, .. })
        ));
        assert!(matches!(
            decode("data: {not json\n\n", &NullSink).0,
            Err(ModelError::Malformed { .. })
        ));
    }

    #[test]
    fn a_whole_response_is_read_like_the_stream() {
        let mut decoder = ResponsesDecoder::new(&NullSink);
        decoder
            .on_whole(json!({
                "id": "resp_1", "object": "response", "status": "completed",
                "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
                    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{}"},
                ],
                "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3},
            }))
            .unwrap();
        let response = decoder.finish();
        assert_eq!(response.finish, FinishReason::ToolCalls);
        assert_eq!(response.message.tool_calls[0].id, "call_1");
        assert_eq!(response.usage.input_tokens, 10);
        let state = response.message.provider_state.unwrap();
        assert_eq!(state.data["output"][0]["encrypted_content"], "enc");
        assert_eq!(state.data["output"][1]["call_id"], "call_1");

        let mut failed = ResponsesDecoder::new(&NullSink);
        let error = failed
            .on_whole(json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}))
            .unwrap_err();
        assert!(matches!(error, ModelError::RateLimited { .. }), "{error:?}");
    }
}
