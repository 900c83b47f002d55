//! Decodes Anthropic Messages responses: the streamed event sequence
//! (`message_start` ... `message_stop`) and whole `message` objects.

use serde::Deserialize;
use serde_json::Value;
use talaria_kernel::{FinishReason, ModelError, ModelResponse, StreamSink};

use crate::assemble::Assembler;
use crate::errors::{self, malformed};
use crate::http::Decoder;
use crate::sse::SseEvent;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    #[serde(other)]
    Other, // ping and event types added later
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<WireBlock>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Option<Value>,
    },
    #[serde(other)]
    Other, // redacted thinking, server tools, ...
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other, // signature_delta, citations_delta, ...
}

#[derive(Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// A tool-use block still receiving its input.
struct OpenTool {
    index: usize,
    /// The `input` given at block start, used if no `input_json_delta` follows.
    initial: Option<String>,
}

/// Decoder for one Messages response.
pub(crate) struct MessagesDecoder<'s> {
    asm: Assembler<'s>,
    finish: Option<FinishReason>,
    /// Tool-use blocks by content-block index (other blocks are not tool calls).
    tools: Vec<OpenTool>,
}

impl<'s> MessagesDecoder<'s> {
    pub fn new(sink: &'s dyn StreamSink) -> Self {
        Self {
            asm: Assembler::new(sink),
            finish: None,
            tools: Vec::new(),
        }
    }

    fn apply(&mut self, event: Event) {
        match event {
            Event::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.apply_usage(&usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.open_block(index, content_block),
            Event::ContentBlockDelta { index, delta } => match delta {
                WireDelta::TextDelta { text } => self.asm.text(&text),
                WireDelta::ThinkingDelta { thinking } => self.asm.reasoning(&thinking),
                WireDelta::InputJsonDelta { partial_json } => {
                    if let Some(tool) = self.tools.iter_mut().find(|t| t.index == index) {
                        tool.initial = None;
                        self.asm.tool_call(index, None, None, &partial_json);
                    }
                }
                WireDelta::Other => {}
            },
            Event::ContentBlockStop { index } => {
                let initial = self
                    .tools
                    .iter_mut()
                    .find(|t| t.index == index)
                    .and_then(|t| t.initial.take());
                if let Some(input) = initial {
                    self.asm.tool_call(index, None, None, &input);
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.finish = Some(map_stop_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.apply_usage(&usage);
                }
            }
            Event::MessageStop | Event::Other => {}
        }
    }

    fn open_block(&mut self, index: usize, block: WireBlock) {
        match block {
            WireBlock::Text { text } => self.asm.text(&text),
            WireBlock::Thinking { thinking } => self.asm.reasoning(&thinking),
            WireBlock::ToolUse { id, name, input } => {
                self.asm.tool_call(index, Some(&id), Some(&name), "");
                let initial = input.filter(|i| i.as_object().is_some_and(|o| !o.is_empty()));
                self.tools.push(OpenTool {
                    index,
                    initial: initial.map(|i| i.to_string()),
                });
            }
            WireBlock::Other => {}
        }
    }

    /// Usage fields arrive in `message_start` and (cumulatively) in `message_delta`.
    fn apply_usage(&mut self, usage: &WireUsage) {
        let target = &mut self.asm.usage;
        let fields = [
            (&mut target.input_tokens, usage.input_tokens),
            (&mut target.output_tokens, usage.output_tokens),
            (&mut target.cache_read_tokens, usage.cache_read_input_tokens),
            (
                &mut target.cache_write_tokens,
                usage.cache_creation_input_tokens,
            ),
        ];
        for (slot, value) in fields {
            if let Some(value) = value {
                *slot = value;
            }
        }
    }
}

fn parse_event(value: Value) -> Result<Event, ModelError> {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(errors::from_error_event(&value));
    }
    serde_json::from_value(value).map_err(|e| malformed(format!("unexpected event shape: {e}")))
}

impl Decoder for MessagesDecoder<'_> {
    fn on_event(&mut self, event: SseEvent) -> Result<bool, ModelError> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        let value = serde_json::from_str(&event.data)
            .map_err(|e| malformed(format!("invalid JSON in stream: {e}")))?;
        let event = parse_event(value)?;
        let stop = matches!(event, Event::MessageStop);
        self.apply(event);
        Ok(stop)
    }

    fn may_end(&self) -> bool {
        false // only `message_stop` completes a stream
    }

    fn on_whole(&mut self, body: Value) -> Result<(), ModelError> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return Err(errors::from_error_event(&body));
        }
        let message: WireMessage = serde_json::from_value(body)
            .map_err(|e| malformed(format!("unexpected response shape: {e}")))?;
        for (index, block) in message.content.into_iter().enumerate() {
            if let WireBlock::ToolUse { id, name, input } = block {
                let input = input.map(|i| i.to_string()).unwrap_or_default();
                self.asm.tool_call(index, Some(&id), Some(&name), &input);
            } else {
                self.open_block(index, block);
            }
        }
        if let Some(usage) = message.usage {
            self.apply_usage(&usage);
        }
        self.finish = message.stop_reason.as_deref().map(map_stop_reason);
        Ok(())
    }

    fn finish(self) -> ModelResponse {
        self.asm.finish(self.finish.unwrap_or_default())
    }
}

fn map_stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use talaria_kernel::{NullSink, ToolCall, Usage};

    fn usage_of(value: Value) -> Usage {
        let mut decoder = MessagesDecoder::new(&NullSink);
        let usage: WireUsage = serde_json::from_value(value).unwrap();
        decoder.apply_usage(&usage);
        decoder.asm.usage
    }

    #[test]
    fn usage_maps_cache_fields() {
        let usage = usage_of(json!({
            "input_tokens": 12, "output_tokens": 3,
            "cache_read_input_tokens": 900, "cache_creation_input_tokens": 40,
        }));
        assert_eq!(
            usage,
            Usage {
                input_tokens: 12,
                output_tokens: 3,
                cache_read_tokens: 900,
                cache_write_tokens: 40
            }
        );
    }

    #[test]
    fn whole_message_with_thinking_and_tools() {
        let mut decoder = MessagesDecoder::new(&NullSink);
        decoder
            .on_whole(json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                "content": [
                    {"type": "thinking", "thinking": "Let me see.", "signature": "sig"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 10, "output_tokens": 20},
            }))
            .unwrap();
        let response = decoder.finish();
        assert_eq!(response.finish, FinishReason::ToolCalls);
        assert_eq!(response.message.content, "Checking.");
        assert_eq!(response.message.reasoning.as_deref(), Some("Let me see."));
        assert_eq!(
            response.message.tool_calls,
            vec![
                ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    arguments: "{\"path\":\"a\"}".into()
                },
                ToolCall {
                    id: "toolu_2".into(),
                    name: "now".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(response.usage.output_tokens, 20);
    }

    #[test]
    fn whole_error_body_is_classified() {
        let mut decoder = MessagesDecoder::new(&NullSink);
        let err = decoder
            .on_whole(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
            .unwrap_err();
        assert!(matches!(err, ModelError::Overloaded { status: 529, .. }));
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(map_stop_reason("end_turn"), FinishReason::Stop);
        assert_eq!(map_stop_reason("stop_sequence"), FinishReason::Stop);
        assert_eq!(map_stop_reason("max_tokens"), FinishReason::Length);
        assert_eq!(
            map_stop_reason("pause_turn"),
            FinishReason::Other("pause_turn".into())
        );
    }
}
