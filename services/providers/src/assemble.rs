//! Builds a [`ModelResponse`] from incremental pieces while forwarding them
//! to the [`StreamSink`], the same way for both wire formats.

use talaria_kernel::{
    FinishReason, Message, ModelResponse, Role, StreamEvent, StreamSink, ToolCall, Usage,
};

/// A tool call being assembled.
struct PendingCall {
    /// The wire format's key for the call (OpenAI `index`, Anthropic block index).
    key: usize,
    id: String,
    name: String,
    arguments: String,
    /// Whether `ToolCallStart` was emitted (arguments are held back until then).
    started: bool,
}

/// Accumulates text, reasoning, tool calls and usage for one response.
pub(crate) struct Assembler<'s> {
    sink: &'s dyn StreamSink,
    text: String,
    reasoning: String,
    calls: Vec<PendingCall>,
    /// Token usage, filled in by the wire decoder.
    pub usage: Usage,
}

impl<'s> Assembler<'s> {
    pub fn new(sink: &'s dyn StreamSink) -> Self {
        Self {
            sink,
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            usage: Usage::default(),
        }
    }

    /// Appends visible text.
    pub fn text(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.text.push_str(delta);
            self.sink.on_event(&StreamEvent::TextDelta {
                text: delta.to_owned(),
            });
        }
    }

    /// Appends reasoning text.
    pub fn reasoning(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.reasoning.push_str(delta);
            self.sink.on_event(&StreamEvent::ReasoningDelta {
                text: delta.to_owned(),
            });
        }
    }

    /// Number of tool calls seen so far.
    pub fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// The id recorded so far for the call with this key (empty if none yet).
    pub fn call_id(&self, key: usize) -> Option<&str> {
        self.calls
            .iter()
            .find(|call| call.key == key)
            .map(|call| call.id.as_str())
    }

    /// Merges a piece of the tool call identified by `key`: the first piece
    /// for a key opens a new call; the id and name are taken from the first
    /// piece carrying them; arguments accumulate. `ToolCallStart` is emitted
    /// once the name is known.
    pub fn tool_call(&mut self, key: usize, id: Option<&str>, name: Option<&str>, arguments: &str) {
        let position = match self.calls.iter().position(|call| call.key == key) {
            Some(position) => position,
            None => {
                self.calls.push(PendingCall {
                    key,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                });
                self.calls.len() - 1
            }
        };
        let sink = self.sink;
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        if let Some(id) = id.filter(|id| !id.is_empty() && call.id.is_empty()) {
            call.id = id.to_owned();
        }
        if let Some(name) = name.filter(|name| !name.is_empty() && call.name.is_empty()) {
            call.name = name.to_owned();
        }
        call.arguments.push_str(arguments);
        if call.started {
            if !arguments.is_empty() {
                let delta = StreamEvent::ToolCallDelta {
                    index: position,
                    arguments: arguments.to_owned(),
                };
                sink.on_event(&delta);
            }
        } else if !call.name.is_empty() {
            start(sink, position, call);
        }
    }

    /// Completes the response. Calls that never got a name are still reported;
    /// missing ids are synthesised and empty arguments become `{}`. A natural
    /// stop that carries tool calls is reported as [`FinishReason::ToolCalls`].
    pub fn finish(self, finish: FinishReason) -> ModelResponse {
        let sink = self.sink;
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(position, mut call)| {
                if !call.started {
                    start(sink, position, &mut call);
                }
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_owned();
                }
                ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                }
            })
            .collect();
        let finish = match finish {
            FinishReason::Stop | FinishReason::Other(_) if !tool_calls.is_empty() => {
                FinishReason::ToolCalls
            }
            other => other,
        };
        let message = Message {
            role: Role::Assistant,
            content: self.text,
            reasoning: Some(self.reasoning).filter(|r| !r.is_empty()),
            tool_calls,
            ..Message::default()
        };
        ModelResponse {
            message,
            finish,
            usage: self.usage,
        }
    }
}

/// Emits `ToolCallStart` (synthesising an id if the server sent none) and any
/// arguments held back until now.
fn start(sink: &dyn StreamSink, position: usize, call: &mut PendingCall) {
    if call.id.is_empty() {
        call.id = format!("call_{position}");
    }
    call.started = true;
    sink.on_event(&StreamEvent::ToolCallStart {
        index: position,
        id: call.id.clone(),
        name: call.name.clone(),
    });
    if !call.arguments.is_empty() {
        sink.on_event(&StreamEvent::ToolCallDelta {
            index: position,
            arguments: call.arguments.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<StreamEvent>>);

    impl StreamSink for Recorder {
        fn on_event(&self, event: &StreamEvent) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn assembles_calls_by_key_and_holds_arguments_until_named() {
        let sink = Recorder::default();
        let mut asm = Assembler::new(&sink);
        asm.text("Let me check.");
        asm.tool_call(5, Some("a"), Some("read"), "");
        asm.tool_call(9, None, None, "{\"x\""); // no name yet: held back
        asm.tool_call(5, None, None, "{\"p\":1}");
        asm.tool_call(9, Some("b"), Some("write"), ":2}");
        let response = asm.finish(FinishReason::Stop);

        assert_eq!(response.finish, FinishReason::ToolCalls);
        assert_eq!(response.message.content, "Let me check.");
        assert_eq!(
            response.message.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "read".into(),
                    arguments: "{\"p\":1}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "write".into(),
                    arguments: "{\"x\":2}".into()
                },
            ]
        );
        let events = sink.0.into_inner().unwrap();
        assert_eq!(
            events[1..],
            [
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "a".into(),
                    name: "read".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"p\":1}".into()
                },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "b".into(),
                    name: "write".into()
                },
                StreamEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{\"x\":2}".into()
                },
            ]
        );
    }

    #[test]
    fn finish_fills_missing_ids_and_arguments() {
        let sink = Recorder::default();
        let mut asm = Assembler::new(&sink);
        asm.tool_call(0, None, Some("now"), "");
        asm.tool_call(1, None, None, "");
        let response = asm.finish(FinishReason::Length);
        assert_eq!(response.finish, FinishReason::Length);
        let calls = response.message.tool_calls;
        assert_eq!(
            (calls[0].id.as_str(), calls[0].arguments.as_str()),
            ("call_0", "{}")
        );
        assert_eq!(
            (calls[1].id.as_str(), calls[1].name.as_str()),
            ("call_1", "")
        );
        assert_eq!(sink.0.into_inner().unwrap().len(), 2);
    }
}
