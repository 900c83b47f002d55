//! The script model: an ordered list of steps, one played per request.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// An ordered list of [`Step`]s. Each request to either endpoint plays the next step.
///
/// Serialises as a JSON array of steps; [`Script::from_json`] also accepts
/// `{"steps": [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Script {
    /// The steps, in the order they are played.
    pub steps: Vec<Step>,
}

/// Failure to load a [`Script`].
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script file could not be read.
    #[error("cannot read script {path}: {source}")]
    Io {
        /// The file that was read.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The script is not valid script JSON.
    #[error("invalid script JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl Script {
    /// A script playing `steps` in order.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            steps: steps.into_iter().collect(),
        }
    }

    /// Appends a step (builder style).
    #[must_use]
    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the script has no steps.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Parses a script: a JSON array of steps, or an object `{"steps": [...]}`.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let mut value: Value = serde_json::from_str(text)?;
        if let Some(steps) = value.as_object_mut().and_then(|o| o.remove("steps")) {
            value = steps;
        }
        Ok(serde_json::from_value(value)?)
    }

    /// Reads and parses a script file (see [`Script::from_json`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// The script as pretty-printed JSON (the format [`Script::from_json`] reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl From<Vec<Step>> for Script {
    fn from(steps: Vec<Step>) -> Self {
        Self { steps }
    }
}

impl FromIterator<Step> for Script {
    fn from_iter<I: IntoIterator<Item = Step>>(iter: I) -> Self {
        Self::new(iter)
    }
}

/// One scripted response: what to do ([`StepKind`]) and an optional delay before doing it.
///
/// In JSON a step is its kind's object with an optional `delay_ms` beside `kind`,
/// e.g. `{"kind": "text", "text": "hi", "delay_ms": 50}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub struct Step {
    /// What the server answers.
    pub kind: StepKind,
    /// Milliseconds to wait (silently, before sending anything) after reading the request.
    pub delay_ms: Option<u64>,
}

/// What a [`Step`] answers. JSON: internally tagged by `kind` (snake_case).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum StepKind {
    /// A final answer (finish_reason `stop` / stop_reason `end_turn`), optionally with reasoning
    /// (OpenAI `reasoning_content`, Anthropic `thinking` block).
    Text {
        /// The answer text.
        text: String,
        /// Reasoning streamed before the answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
    },
    /// Tool calls (finish_reason `tool_calls` / stop_reason `tool_use`), optionally preceded by
    /// reasoning and text.
    ToolCalls {
        /// The calls, in order.
        calls: Vec<ToolCall>,
        /// Text sent before the calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Reasoning streamed first, as for [`StepKind::Text`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
    },
    /// A reply cut off by the output limit (finish_reason `length` / stop_reason `max_tokens`).
    Truncated {
        /// The partial text.
        text: String,
    },
    /// An HTTP error with the provider's error body.
    Error {
        /// HTTP status code.
        status: u16,
        /// Error message; a provider-typical default when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Value of the `Retry-After` header, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
    },
    /// The provider's 400 "context length exceeded" / "prompt is too long" error.
    ContextOverflow,
    /// 200 with an SSE stream whose data lines are not JSON (or an invalid JSON body when
    /// the request is not streaming).
    MalformedSse,
    /// Sends the head and first chunk of a valid stream (nothing for a non-stream request),
    /// stays silent for `seconds` (less if the server shuts down), then closes the connection.
    Stall {
        /// How long to stay silent.
        seconds: f64,
    },
    /// Sends part of a valid reply (some text deltas) then closes the connection without
    /// finishing it (no terminating chunk; a short body for a non-stream request).
    DropMidStream,
}

impl StepKind {
    /// The `kind` tag of this step in JSON, e.g. `"tool_calls"`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::ToolCalls { .. } => "tool_calls",
            Self::Truncated { .. } => "truncated",
            Self::Error { .. } => "error",
            Self::ContextOverflow => "context_overflow",
            Self::MalformedSse => "malformed_sse",
            Self::Stall { .. } => "stall",
            Self::DropMidStream => "drop_mid_stream",
        }
    }
}

/// One tool call in a [`StepKind::ToolCalls`] step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Call id; generated when absent (`call_N` on OpenAI, `toolu_N` on Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Raw JSON text of the arguments, sent as-is (it may be deliberately invalid).
    /// In a script file a JSON object is accepted too and taken as its compact text.
    #[serde(deserialize_with = "raw_json_text")]
    pub arguments: String,
}

fn raw_json_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

impl ToolCall {
    /// A call of `name` with raw JSON `arguments` and a generated id.
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// Sets an explicit call id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

impl From<StepKind> for Step {
    fn from(kind: StepKind) -> Self {
        Self {
            kind,
            delay_ms: None,
        }
    }
}

impl Step {
    /// A final answer.
    pub fn text(text: impl Into<String>) -> Self {
        StepKind::Text {
            text: text.into(),
            reasoning: None,
        }
        .into()
    }

    /// A final answer preceded by reasoning.
    pub fn text_with_reasoning(text: impl Into<String>, reasoning: impl Into<String>) -> Self {
        StepKind::Text {
            text: text.into(),
            reasoning: Some(reasoning.into()),
        }
        .into()
    }

    /// A single tool call with a generated id.
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self::tool_calls([ToolCall::new(name, arguments)])
    }

    /// Several tool calls in one reply.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        StepKind::ToolCalls {
            calls: calls.into_iter().collect(),
            text: None,
            reasoning: None,
        }
        .into()
    }

    /// Tool calls preceded by reasoning (on the Responses wire, a reasoning item with
    /// encrypted content the client must send back).
    pub fn tool_calls_with_reasoning(
        calls: impl IntoIterator<Item = ToolCall>,
        reasoning: impl Into<String>,
    ) -> Self {
        StepKind::ToolCalls {
            calls: calls.into_iter().collect(),
            text: None,
            reasoning: Some(reasoning.into()),
        }
        .into()
    }

    /// A reply cut off by the output limit.
    pub fn truncated(text: impl Into<String>) -> Self {
        StepKind::Truncated { text: text.into() }.into()
    }

    /// An HTTP error with `status` and `message`.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        StepKind::Error {
            status,
            message: Some(message.into()),
            retry_after: None,
        }
        .into()
    }

    /// A 429 rate-limit error, with a `Retry-After` header when `retry_after` is given.
    pub fn rate_limited(retry_after: Option<&str>) -> Self {
        StepKind::Error {
            status: 429,
            message: None,
            retry_after: retry_after.map(str::to_owned),
        }
        .into()
    }

    /// A 500 internal server error.
    pub fn server_error() -> Self {
        StepKind::Error {
            status: 500,
            message: None,
            retry_after: None,
        }
        .into()
    }

    /// The provider's context-overflow 400.
    pub fn context_overflow() -> Self {
        StepKind::ContextOverflow.into()
    }

    /// A 200 stream (or body) that is not valid JSON.
    pub fn malformed_sse() -> Self {
        StepKind::MalformedSse.into()
    }

    /// A connection that goes silent for `duration`.
    pub fn stall(duration: Duration) -> Self {
        StepKind::Stall {
            seconds: duration.as_secs_f64(),
        }
        .into()
    }

    /// A reply cut off mid-stream by closing the connection.
    pub fn drop_mid_stream() -> Self {
        StepKind::DropMidStream.into()
    }

    /// Waits `ms` milliseconds before responding.
    #[must_use]
    pub fn delayed(mut self, ms: u64) -> Self {
        self.delay_ms = Some(ms);
        self
    }
}

impl TryFrom<Value> for Step {
    type Error = serde_json::Error;

    fn try_from(mut value: Value) -> Result<Self, Self::Error> {
        let delay_ms = match value.as_object_mut().and_then(|o| o.remove("delay_ms")) {
            Some(delay) => Some(serde_json::from_value(delay)?),
            None => None,
        };
        Ok(Self {
            kind: serde_json::from_value(value)?,
            delay_ms,
        })
    }
}

impl From<Step> for Value {
    fn from(step: Step) -> Self {
        let mut value = serde_json::to_value(&step.kind).unwrap_or_default();
        if let (Some(delay), Some(object)) = (step.delay_ms, value.as_object_mut()) {
            object.insert("delay_ms".into(), delay.into());
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_of_every_kind() {
        let script = Script::new([
            Step::text("hi"),
            Step::text_with_reasoning("answer", "thinking").delayed(5),
            Step::tool_calls([
                ToolCall::new("read", r#"{"path":"a"}"#).with_id("x1"),
                ToolCall::new("bad", "{not json"),
            ]),
            Step::tool_calls_with_reasoning([ToolCall::new("ls", "{}")], "look first"),
            Step::truncated("partial"),
            Step::rate_limited(Some("2")),
            Step::server_error(),
            Step::context_overflow(),
            Step::malformed_sse(),
            Step::stall(Duration::from_millis(1500)),
            Step::drop_mid_stream(),
        ]);
        let parsed = Script::from_json(&script.to_json()).unwrap();
        assert_eq!(parsed, script);
    }

    #[test]
    fn parses_the_documented_format() {
        let script = Script::from_json(
            r#"{"steps": [
                {"kind": "tool_calls", "calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
                {"kind": "text", "text": "done", "delay_ms": 20},
                {"kind": "error", "status": 429, "retry_after": "1"},
                {"kind": "context_overflow"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(script.len(), 4);
        assert_eq!(
            script.steps[0].kind,
            StepKind::ToolCalls {
                calls: vec![ToolCall::new("read", r#"{"path":"a.txt"}"#)],
                text: None,
                reasoning: None
            }
        );
        assert_eq!(script.steps[1].delay_ms, Some(20));
    }

    #[test]
    fn rejects_unknown_kinds_and_fields() {
        assert!(Script::from_json(r#"[{"kind": "nope"}]"#).is_err());
        assert!(
            Script::from_json(r#"[{"kind": "text", "text": "a", "reasoning_content": "b"}]"#)
                .is_err()
        );
        assert!(Script::from_json(r#"[{"kind": "text"}]"#).is_err());
    }
}
