//! The wire-neutral reply model that the OpenAI, Responses and Anthropic renderers turn into
//! bytes.

use serde_json::Value;

use crate::recorder::Wire;
use crate::{anthropic, openai, responses};

/// Characters per streamed text/reasoning delta.
pub(crate) const TEXT_PIECE: usize = 8;
/// Characters per streamed tool-argument delta (so arguments always span several deltas).
pub(crate) const ARGS_PIECE: usize = 6;

/// A successful model reply, before rendering.
#[derive(Clone, Debug)]
pub(crate) struct Completion {
    /// Response/message id.
    pub id: String,
    /// Echoed model name.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
    pub reasoning: Option<String>,
    pub text: Option<String>,
    pub tool_calls: Vec<Call>,
    pub finish: Finish,
    pub usage: Usage,
}

/// A tool call with its id resolved.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Why the reply ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    Stop,
    ToolCalls,
    Length,
}

/// Token accounting derived from the request and reply sizes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Usage {
    /// Whole prompt, cached part included.
    pub prompt: u64,
    pub completion: u64,
    pub reasoning: u64,
    /// Prompt tokens served from cache (system prompt seen before).
    pub cache_read: u64,
    /// Prompt tokens written to cache (system prompt seen for the first time).
    pub cache_write: u64,
}

/// Roughly four bytes per token.
pub(crate) fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// One server-sent event; `event` is the `event:` line (Anthropic and Responses only).
#[derive(Clone, Debug)]
pub(crate) struct SseEvent {
    pub event: Option<&'static str>,
    pub data: String,
}

impl SseEvent {
    pub(crate) fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    pub(crate) fn named(event: &'static str, data: &Value) -> Self {
        Self {
            event: Some(event),
            data: data.to_string(),
        }
    }

    /// The event's wire text, terminated by a blank line, using `eol` as line ending.
    pub(crate) fn encode(&self, eol: &str) -> String {
        let event = self
            .event
            .map(|e| format!("event: {e}{eol}"))
            .unwrap_or_default();
        format!("{event}data: {}{eol}{eol}", self.data)
    }
}

/// Splits `text` into pieces of at most `max_chars` characters (none for empty text).
pub(crate) fn pieces(text: &str, max_chars: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .nth(max_chars.max(1))
            .map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

impl Wire {
    /// Non-streaming response body.
    pub(crate) fn completion_body(self, c: &Completion) -> Value {
        match self {
            Wire::OpenAi => openai::completion(c),
            Wire::OpenAiResponses => responses::completion(c),
            Wire::Anthropic => anthropic::message(c),
        }
    }

    /// Streaming response events.
    pub(crate) fn completion_events(self, c: &Completion, include_usage: bool) -> Vec<SseEvent> {
        match self {
            Wire::OpenAi => openai::chunks(c, include_usage),
            Wire::OpenAiResponses => responses::events(c),
            Wire::Anthropic => anthropic::events(c),
        }
    }

    /// Error body for `status`; `message` defaults to a provider-typical one.
    pub(crate) fn error_body(self, status: u16, message: Option<&str>) -> Value {
        match self {
            // The Responses API answers errors as Chat Completions does.
            Wire::OpenAi | Wire::OpenAiResponses => openai::error(status, message),
            Wire::Anthropic => anthropic::error(status, message),
        }
    }

    /// The provider's context-overflow error body (status 400) for a prompt of `prompt_tokens`.
    pub(crate) fn context_overflow_body(self, prompt_tokens: u64) -> Value {
        match self {
            Wire::OpenAi => openai::context_overflow(prompt_tokens),
            Wire::OpenAiResponses => responses::context_overflow(prompt_tokens),
            Wire::Anthropic => anthropic::context_overflow(prompt_tokens),
        }
    }

    /// SSE events whose data is not valid JSON.
    pub(crate) fn malformed_events(self) -> Vec<SseEvent> {
        match self {
            Wire::OpenAi => openai::malformed_chunks(),
            Wire::OpenAiResponses => responses::malformed_events(),
            Wire::Anthropic => anthropic::malformed_events(),
        }
    }

    /// A truncated, invalid JSON body.
    pub(crate) fn malformed_body(self) -> String {
        match self {
            Wire::OpenAi => r#"{"id":"chatcmpl-malformed","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"unterminated"#.into(),
            Wire::OpenAiResponses => r#"{"id":"resp_malformed","object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"unterminated"#.into(),
            Wire::Anthropic => r#"{"id":"msg_malformed","type":"message","content":[{"type":"text","text":"unterminated"#.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_respect_char_boundaries() {
        assert!(pieces("", 3).is_empty());
        assert_eq!(pieces("abcdefg", 3), ["abc", "def", "g"]);
        assert_eq!(pieces("héllo wörld", 4), ["héll", "o wö", "rld"]);
    }

    #[test]
    fn sse_encoding() {
        let e = SseEvent::named("ping", &serde_json::json!({"type": "ping"}));
        assert_eq!(e.encode("\n"), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
        assert_eq!(
            SseEvent::data("[DONE]").encode("\r\n"),
            "data: [DONE]\r\n\r\n"
        );
    }
}
