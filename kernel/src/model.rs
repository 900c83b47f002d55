//! The model port: a provider-neutral request, streamed events, the assembled
//! response and a classified error the loop can act on.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::message::{Message, ToolCall, ToolSpec, Usage};

/// Whether the model may call tools in this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// Tools stay listed (so the cached prefix is unchanged) but must not be called.
    None,
}

/// Where prompt-cache breakpoints go, independent of wire format: each provider
/// renders them its own way (Anthropic `cache_control`, others ignore or map them).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheBreakpoints {
    /// Mark the end of the system prompt.
    pub system: bool,
    /// Indices into `ModelRequest::messages` whose last content block is marked.
    pub messages: Vec<usize>,
}

impl CacheBreakpoints {
    /// The standard policy: the system prompt plus the last three messages.
    pub fn system_and_last_three(message_count: usize) -> Self {
        Self {
            system: true,
            messages: (message_count.saturating_sub(3)..message_count).collect(),
        }
    }
}

/// One call to a model.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// Model name as the provider knows it.
    pub model: &'a str,
    /// The frozen system prompt (byte-identical across a session).
    pub system: &'a str,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// Tools the model may see (byte-identical across a session).
    pub tools: &'a [ToolSpec],
    /// Whether tools may be called.
    pub tool_choice: ToolChoice,
    /// Cache breakpoints to render.
    pub cache: &'a CacheBreakpoints,
    /// Output token cap, if any.
    pub max_tokens: Option<u32>,
}

/// An incremental event from a streaming provider, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Visible text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Reasoning text (kept apart from visible text).
    ReasoningDelta {
        /// The new reasoning text.
        text: String,
    },
    /// A tool call began.
    ToolCallStart {
        /// Position of the call in the response.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More argument JSON for a tool call.
    ToolCallDelta {
        /// Position of the call in the response.
        index: usize,
        /// The new argument text.
        arguments: String,
    },
}

/// Receives stream events as they arrive. Implementations use interior
/// mutability so a sink can be shared with the surface rendering it.
pub trait StreamSink: Send + Sync {
    /// Called for each event, in order.
    fn on_event(&self, event: &StreamEvent);
}

/// A sink that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl StreamSink for NullSink {
    fn on_event(&self, _event: &StreamEvent) {}
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    #[default]
    Stop,
    /// The model wants tool results.
    ToolCalls,
    /// Output was cut at the token limit.
    Length,
    /// A provider filter stopped the output.
    ContentFilter,
    /// Anything else, verbatim.
    Other(String),
}

/// The assembled result of one model call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelResponse {
    /// The assistant message (text, reasoning, tool calls).
    pub message: Message,
    /// Why generation stopped.
    pub finish: FinishReason,
    /// Tokens used.
    pub usage: Usage,
}

impl ModelResponse {
    /// The tool calls the model asked for.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.message.tool_calls
    }
}

/// A classified provider failure. The class decides what the loop does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Credentials rejected (401/403): never retried.
    #[error("authentication failed: {message}")]
    Auth {
        /// Provider's explanation.
        message: String,
    },
    /// Too many requests (429).
    #[error("rate limited: {message}")]
    RateLimited {
        /// Provider's explanation.
        message: String,
        /// Delay the provider asked for (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// The key's credit or quota is used up (402, `insufficient_quota`, a spend limit):
    /// waiting seconds will not help, so the next credential or fallback is tried at once.
    #[error("quota or credit exhausted: {message}")]
    QuotaExhausted {
        /// Provider's explanation.
        message: String,
        /// When the provider says the quota comes back, if it says.
        retry_after: Option<Duration>,
    },
    /// The provider is short of capacity for everyone (529, 503): back off, then fall back.
    #[error("provider overloaded ({status}): {message}")]
    Overloaded {
        /// HTTP status.
        status: u16,
        /// Provider's explanation.
        message: String,
        /// Delay the provider asked for (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// The provider does not serve the model asked for: another route may.
    #[error("model not found: {message}")]
    ModelNotFound {
        /// Provider's explanation.
        message: String,
    },
    /// A provider's content filter or moderation refused the prompt or the reply.
    #[error("refused by the provider's content filter: {message}")]
    ContentFiltered {
        /// Provider's explanation.
        message: String,
    },
    /// The connection dropped while the reply was streaming.
    #[error("the reply stream was cut off: {message}")]
    StreamInterrupted {
        /// What happened.
        message: String,
    },
    /// The provider failed (5xx).
    #[error("server error {status}: {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// Provider's explanation.
        message: String,
        /// Delay the provider asked for (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// The prompt does not fit the model's context window.
    #[error("context length exceeded: {message}")]
    ContextOverflow {
        /// Provider's explanation.
        message: String,
    },
    /// The prompt fits, but not with the requested output budget on top (Anthropic: "input
    /// length and `max_tokens` exceed context limit: 188240 + 21333 > 200000").
    #[error("the prompt and the output budget exceed the context window: {message}")]
    OutputBudgetTooLarge {
        /// Output tokens that still fit after the prompt.
        available: u32,
        /// Provider's explanation.
        message: String,
    },
    /// The request was rejected as invalid (other 4xx): retrying won't help.
    #[error("request rejected ({status}): {message}")]
    InvalidRequest {
        /// HTTP status.
        status: u16,
        /// Provider's explanation.
        message: String,
    },
    /// Could not connect or the connection failed before a response.
    #[error("connection failed: {message}")]
    Connect {
        /// What failed.
        message: String,
    },
    /// No data arrived within the idle timeout.
    #[error("timed out: {message}")]
    Timeout {
        /// What timed out.
        message: String,
    },
    /// The response could not be understood, or the stream ended before its end marker.
    #[error("malformed response: {message}")]
    Malformed {
        /// What was wrong.
        message: String,
    },
    /// The prompt or the reply is over a configured size cap: never retried,
    /// since the same request would hit the same cap.
    #[error("too large: {message}")]
    TooLarge {
        /// Which cap, and the setting that raises it.
        message: String,
    },
    /// An image the conversation refers to cannot be sent (its file is gone or unreadable):
    /// never retried, and no other route would do better.
    #[error("an attached image cannot be sent: {message}")]
    Attachment {
        /// Which image, and why.
        message: String,
    },
    /// The call was interrupted by the user.
    #[error("interrupted")]
    Cancelled,
}

impl ModelError {
    /// Whether the same request may succeed if sent again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Server { .. }
                | ModelError::Overloaded { .. }
                | ModelError::StreamInterrupted { .. }
                | ModelError::Connect { .. }
                | ModelError::Timeout { .. }
                | ModelError::Malformed { .. }
        )
    }

    /// Delay the provider asked for before retrying, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after, .. }
            | ModelError::Server { retry_after, .. }
            | ModelError::Overloaded { retry_after, .. }
            | ModelError::QuotaExhausted { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether another route (the next key of a pool, or a fallback model) may succeed
    /// where this one failed. A prompt that is too long is shrunk instead: every model
    /// would get the same prompt.
    pub fn may_fall_back(&self) -> bool {
        !matches!(
            self,
            ModelError::ContextOverflow { .. }
                | ModelError::OutputBudgetTooLarge { .. }
                | ModelError::TooLarge { .. }
                | ModelError::Attachment { .. }
                | ModelError::Cancelled
        )
    }

    /// A stable name for the class, for logs and `--json` output.
    pub fn class(&self) -> &'static str {
        match self {
            ModelError::Auth { .. } => "auth",
            ModelError::QuotaExhausted { .. } => "quota_exhausted",
            ModelError::RateLimited { .. } => "rate_limited",
            ModelError::Overloaded { .. } => "overloaded",
            ModelError::Server { .. } => "server_error",
            ModelError::ContextOverflow { .. } => "context_overflow",
            ModelError::OutputBudgetTooLarge { .. } => "output_budget_too_large",
            ModelError::ModelNotFound { .. } => "model_not_found",
            ModelError::ContentFiltered { .. } => "content_filtered",
            ModelError::InvalidRequest { .. } => "invalid_request",
            ModelError::Connect { .. } => "connect",
            ModelError::Timeout { .. } => "timeout",
            ModelError::StreamInterrupted { .. } => "stream_interrupted",
            ModelError::Malformed { .. } => "malformed_response",
            ModelError::TooLarge { .. } => "too_large",
            ModelError::Attachment { .. } => "attachment",
            ModelError::Cancelled => "cancelled",
        }
    }
}

/// A model endpoint speaking one wire format. One call = one request; retries,
/// fallback and budgets are the loop's business.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// Short name for logs and errors (e.g. "openai", "anthropic").
    fn name(&self) -> &str;

    /// Sends the request, reports events to `sink` as they arrive, and returns
    /// the assembled response. Must return `ModelError::Cancelled` promptly when
    /// `cancel` fires, aborting any in-flight transfer.
    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &dyn StreamSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError>;
}
