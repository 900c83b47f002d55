//! Decodes OpenAI Chat Completions responses: streamed chunks (`data:` JSON,
//! `[DONE]`) and whole responses share one decoder, since a whole response's
//! `message` has the shape of a single all-in-one `delta`.

use serde::Deserialize;
use serde_json::Value;
use talaria_kernel::{FinishReason, ModelError, ModelResponse, StreamSink, Usage};

use crate::assemble::Assembler;
use crate::errors::{self, malformed};
use crate::http::Decoder;
use crate::sse::SseEvent;

/// A streamed chunk, a whole response, or an error event.
#[derive(Deserialize)]
struct Chunk {
    choices: Option<Vec<Choice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    index: Option<u64>,
    #[serde(alias = "message")]
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<Value>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
    /// Anthropic's name for tokens written to the cache, passed through by some proxies.
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    /// Tokens written to the prompt cache (OpenRouter, for providers that bill writes).
    cache_write_tokens: Option<u64>,
}

/// Decoder for one Chat Completions response.
pub(crate) struct ChatDecoder<'s> {
    asm: Assembler<'s>,
    finish: Option<FinishReason>,
    saw_choice: bool,
    /// Wire `index` -> assembler key, latest last.
    index_keys: Vec<(usize, usize)>,
}

impl<'s> ChatDecoder<'s> {
    pub fn new(sink: &'s dyn StreamSink) -> Self {
        Self {
            asm: Assembler::new(sink),
            finish: None,
            saw_choice: false,
            index_keys: Vec::new(),
        }
    }

    fn apply(&mut self, chunk: Chunk) -> Result<(), ModelError> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let event = Value::Object([("error".to_owned(), error)].into_iter().collect());
            return Err(errors::from_error_event(&event));
        }
        if let Some(usage) = chunk.usage {
            self.asm.usage = map_usage(&usage);
        }
        // Only the first choice matters (we never ask for `n` > 1).
        for choice in chunk
            .choices
            .into_iter()
            .flatten()
            .filter(|c| c.index.unwrap_or(0) == 0)
        {
            self.saw_choice = true;
            if let Some(delta) = choice.delta {
                self.apply_delta(delta);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(map_finish(&reason));
            }
        }
        Ok(())
    }

    fn apply_delta(&mut self, delta: Delta) {
        // Some servers send both names for the same text; prefer one.
        if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning) {
            self.asm.reasoning(&reasoning);
        }
        if let Some(content) = delta.content {
            self.asm.text(&content_text(content));
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let key = self.key_for(call.index, call.id.as_deref());
            let (name, arguments) = match call.function {
                Some(f) => (f.name, f.arguments.map(arguments_text).unwrap_or_default()),
                None => (None, String::new()),
            };
            self.asm
                .tool_call(key, call.id.as_deref(), name.as_deref(), &arguments);
        }
    }

    /// The assembler key (= call position) for a tool-call delta. A delta
    /// continues the call last opened under its `index` (or, for servers that
    /// omit `index`, the latest call) unless it carries a different id, which
    /// opens a new call: some servers send every whole call with index 0.
    fn key_for(&mut self, index: Option<usize>, id: Option<&str>) -> usize {
        let count = self.asm.call_count();
        let current = match index {
            Some(index) => self
                .index_keys
                .iter()
                .rev()
                .find(|(i, _)| *i == index)
                .map(|&(_, key)| key),
            None => count.checked_sub(1),
        };
        let same_call = |key: usize| match (id.filter(|id| !id.is_empty()), self.asm.call_id(key)) {
            (Some(id), Some(known)) => known.is_empty() || known == id,
            _ => true,
        };
        match current {
            Some(key) if same_call(key) => key,
            _ => {
                self.index_keys.push((index.unwrap_or(count), count));
                count
            }
        }
    }
}

impl Decoder for ChatDecoder<'_> {
    fn on_event(&mut self, event: SseEvent) -> Result<bool, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            return Ok(true);
        }
        // Straight into the typed chunk: no `Value` tree per event.
        let chunk = serde_json::from_str(data).map_err(|e| {
            if e.is_data() {
                malformed(format!("unexpected chunk shape: {e}"))
            } else {
                malformed(format!("invalid JSON in stream: {e}"))
            }
        })?;
        self.apply(chunk)?;
        Ok(false)
    }

    fn may_end(&self) -> bool {
        self.finish.is_some()
    }

    fn on_whole(&mut self, body: Value) -> Result<(), ModelError> {
        let chunk = serde_json::from_value(body)
            .map_err(|e| malformed(format!("unexpected response shape: {e}")))?;
        self.apply(chunk)?;
        if !self.saw_choice {
            return Err(malformed("response has no choices"));
        }
        Ok(())
    }

    fn finish(self) -> ModelResponse {
        self.asm.finish(self.finish.unwrap_or_default())
    }
}

fn map_finish(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn map_usage(usage: &WireUsage) -> Usage {
    let prompt = usage.prompt_tokens.unwrap_or(0);
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .or(usage.prompt_cache_hit_tokens)
        .unwrap_or(0);
    let written = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cache_write_tokens)
        .or(usage.cache_creation_input_tokens)
        .unwrap_or(0);
    // `prompt_tokens` counts every prompt token, cached or not, on this wire.
    Usage {
        input_tokens: prompt.saturating_sub(cached).saturating_sub(written),
        output_tokens: usage.completion_tokens.unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: written,
    }
}

/// Message content is normally a string; some servers send content parts.
fn content_text(content: Value) -> String {
    match content {
        Value::String(text) => text,
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Arguments are JSON text; a few servers send the object itself.
fn arguments_text(arguments: Value) -> String {
    match arguments {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use talaria_kernel::{NullSink, ToolCall};

    fn decode_stream(chunks: &[Value]) -> Result<ModelResponse, ModelError> {
        let mut decoder = ChatDecoder::new(&NullSink);
        for chunk in chunks {
            let event = SseEvent {
                data: chunk.to_string(),
                ..SseEvent::default()
            };
            decoder.on_event(event)?;
        }
        Ok(decoder.finish())
    }

    #[test]
    fn calls_without_index_are_split_by_id() {
        let response = decode_stream(&[
            json!({"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{\"n\":"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":{"m":2}}}]}, "finish_reason":"stop"}]}),
        ])
        .unwrap();
        assert_eq!(
            response.message.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "x".into(),
                    arguments: "{\"n\":1}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "y".into(),
                    arguments: "{\"m\":2}".into()
                },
            ]
        );
        assert_eq!(response.finish, FinishReason::ToolCalls);
    }

    #[test]
    fn whole_calls_reusing_index_zero_are_kept_apart() {
        let response = decode_stream(&[
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{\"k\":1}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}, "finish_reason":"tool_calls"}]}),
        ])
        .unwrap();
        let ids: Vec<_> = response
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(ids, vec![("a", "{}"), ("b", "{\"k\":1}")]);
    }

    #[test]
    fn usage_subtracts_cached_tokens() {
        let response = decode_stream(&[json!({"choices":[],"usage":{
            "prompt_tokens": 1000, "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 800}}})])
        .unwrap();
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 200,
                output_tokens: 50,
                cache_read_tokens: 800,
                cache_write_tokens: 0
            }
        );
    }

    #[test]
    fn usage_counts_cache_writes_reported_by_routers() {
        // OpenRouter's usage accounting (docs: use-cases/usage-accounting).
        let openrouter = decode_stream(&[json!({"choices":[],"usage":{
            "prompt_tokens": 194, "completion_tokens": 2, "cost": 0.95,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100, "audio_tokens": 0}}})])
        .unwrap();
        assert_eq!(
            openrouter.usage,
            Usage {
                input_tokens: 94,
                output_tokens: 2,
                cache_read_tokens: 0,
                cache_write_tokens: 100
            }
        );
        // A proxy passing Anthropic's field through.
        let proxied = decode_stream(&[json!({"choices":[],"usage":{
            "prompt_tokens": 3000, "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 1000},
            "cache_creation_input_tokens": 1500}})])
        .unwrap();
        assert_eq!(proxied.usage.input_tokens, 500);
        assert_eq!(proxied.usage.cache_read_tokens, 1000);
        assert_eq!(proxied.usage.cache_write_tokens, 1500);
    }

    #[test]
    fn whole_response_without_choices_is_malformed() {
        let mut decoder = ChatDecoder::new(&NullSink);
        assert!(matches!(
            decoder.on_whole(json!({"id": "x"})),
            Err(ModelError::Malformed { .. })
        ));
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(map_finish("length"), FinishReason::Length);
        assert_eq!(map_finish("content_filter"), FinishReason::ContentFilter);
        assert_eq!(map_finish("weird"), FinishReason::Other("weird".into()));
    }
}
