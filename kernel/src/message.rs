//! The typed values that cross every arrow of the loop: messages, tool calls,
//! tool specs, tool results and token usage. Provider-neutral by design.

use serde::{Deserialize, Serialize};

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the harness (only used inside conversations for injected notes).
    System,
    /// The human (or a surface speaking for them).
    #[default]
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl Role {
    /// Its name as the wire and the store spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id; every call gets exactly one result with this id.
    pub id: String,
    /// Tool name as the model wrote it (may be unknown to us).
    pub name: String,
    /// Arguments exactly as the model produced them: JSON text, possibly invalid.
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Visible text (for tool messages: the tool result text).
    pub content: String,
    /// Model reasoning, kept apart from the visible text and never re-sent as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For tool messages: the id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For tool messages: the tool's name (some wire formats want it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For tool messages: whether the result reports an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// For assistant messages: what the wire format that produced the message needs back
    /// verbatim on later requests (opaque to everything else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_state: Option<ProviderState>,
    /// Images attached to a user message, by reference: the bytes stay in the profile's image
    /// store (or at a URL) so a stored session, and every request's prefix, stays small and
    /// byte-stable. Absent from older sessions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
}

/// An image a message carries: where its bytes are, never the bytes themselves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageRef {
    /// A prepared file (type checked, within size limits), usually in the profile's
    /// content-addressed image store; providers read and inline it on each request.
    File {
        /// Absolute path of the file.
        path: std::path::PathBuf,
        /// Its MIME type (`image/png`, `image/jpeg`, `image/gif` or `image/webp`).
        media_type: String,
    },
    /// An http(s) URL the provider fetches itself.
    Url {
        /// The URL.
        url: String,
    },
}

/// Provider state carried on a message between turns without the provider storing anything,
/// such as the OpenAI Responses API's encrypted reasoning items. Only the wire format named in
/// `wire` reads it; any other (a fallback route on another wire) ignores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderState {
    /// The wire format that produced it, e.g. `"openai-responses"`.
    pub wire: String,
    /// The data, in whatever shape that wire format wants it back.
    pub data: serde_json::Value,
}

impl ProviderState {
    /// The data if it was made by `wire`.
    pub fn for_wire(&self, wire: &str) -> Option<&serde_json::Value> {
        (self.wire == wire).then_some(&self.data)
    }
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: text.into(),
            ..Self::default()
        }
    }

    /// A user message with images attached.
    pub fn user_with_images(text: impl Into<String>, images: Vec<ImageRef>) -> Self {
        Self {
            images,
            ..Self::user(text)
        }
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: text.into(),
            ..Self::default()
        }
    }

    /// A tool result message answering `result.call_id`.
    pub fn tool_result(result: &ToolResult) -> Self {
        Self {
            role: Role::Tool,
            content: result.content.clone(),
            tool_call_id: Some(result.call_id.clone()),
            name: Some(result.name.clone()),
            is_error: result.is_error,
            ..Self::default()
        }
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    /// A turn whose calls all go to such tools gives its iteration back (a
    /// tool that runs many tool calls itself, such as a script, is one step).
    /// Never sent to a model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refunds_iteration: bool,
}

/// The outcome of one tool call, always returned to the model as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Id of the call this answers.
    pub call_id: String,
    /// Tool name.
    pub name: String,
    /// Result text (JSON by convention).
    pub content: String,
    /// Whether the call failed; the model still reads `content`.
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(call: &ToolCall, content: impl Into<String>) -> Self {
        Self {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error: false,
        }
    }

    /// An error result the model can read and act on.
    pub fn error(call: &ToolCall, content: impl Into<String>) -> Self {
        Self {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// Token usage reported by a provider for one call (or summed over several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens not served from cache.
    pub input_tokens: u64,
    /// Completion tokens (including reasoning).
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}
