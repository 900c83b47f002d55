//! Renders a [`ModelRequest`] as an OpenAI Chat Completions request body.
//!
//! The body borrows the conversation and is serialised straight to bytes: building a
//! `serde_json::Value` of the whole history first cost a copy and a tree of maps every turn.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use talaria_kernel::{Message, ModelRequest, Role, ToolCall, ToolChoice, ToolSpec};

use crate::SYSTEM_NOTE_PREFIX;

/// The JSON body for `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Debug, Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    /// `null` only for an assistant turn that is nothing but tool calls.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ChatToolCall<'a>>,
}

#[derive(Debug, Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: CalledFunction<'a>,
}

#[derive(Debug, Serialize)]
struct CalledFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct ChatTool<'a> {
    r#type: &'static str,
    function: FunctionSpec<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The body for `request`.
pub(crate) fn render<'a>(
    request: &'a ModelRequest<'a>,
    stream: bool,
    default_max_tokens: Option<u32>,
) -> ChatBody<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(ChatMessage::text("system", request.system));
    }
    messages.extend(request.messages.iter().map(render_message));
    let tools: Vec<ChatTool<'a>> = request.tools.iter().map(render_tool).collect();
    ChatBody {
        model: request.model,
        tool_choice: (!tools.is_empty() && request.tool_choice == ToolChoice::None)
            .then_some("none"),
        messages,
        tools,
        max_tokens: request.max_tokens.or(default_max_tokens),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
    }
}

impl<'a> ChatMessage<'a> {
    fn text(role: &'static str, content: impl Into<Cow<'a, str>>) -> Self {
        Self {
            role,
            tool_call_id: None,
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }
}

fn render_message(message: &Message) -> ChatMessage<'_> {
    match message.role {
        Role::User => ChatMessage::text("user", message.content.as_str()),
        Role::System => {
            ChatMessage::text("user", format!("{SYSTEM_NOTE_PREFIX}{}", message.content))
        }
        Role::Tool => ChatMessage {
            tool_call_id: Some(message.tool_call_id.as_deref().unwrap_or_default()),
            ..ChatMessage::text("tool", message.content.as_str())
        },
        Role::Assistant => ChatMessage {
            content: (!message.content.is_empty() || message.tool_calls.is_empty())
                .then_some(Cow::Borrowed(message.content.as_str())),
            tool_calls: message.tool_calls.iter().map(render_call).collect(),
            ..ChatMessage::text("assistant", "")
        },
    }
}

fn render_call(call: &ToolCall) -> ChatToolCall<'_> {
    let arguments = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    ChatToolCall {
        id: &call.id,
        r#type: "function",
        function: CalledFunction {
            name: &call.name,
            arguments,
        },
    }
}

fn render_tool(tool: &ToolSpec) -> ChatTool<'_> {
    ChatTool {
        r#type: "function",
        function: FunctionSpec {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use talaria_kernel::CacheBreakpoints;

    fn json_of(body: &ChatBody<'_>) -> Value {
        serde_json::to_value(body).expect("serialisable")
    }

    fn request<'a>(
        messages: &'a [Message],
        tools: &'a [ToolSpec],
        cache: &'a CacheBreakpoints,
        tool_choice: ToolChoice,
    ) -> ModelRequest<'a> {
        ModelRequest {
            model: "gpt-test",
            system: "You are helpful.",
            messages,
            tools,
            tool_choice,
            cache,
            max_tokens: None,
        }
    }

    #[test]
    fn renders_conversation_with_tool_calls_and_notes() {
        let messages = vec![
            Message::user("read a.txt"),
            Message {
                role: Role::Assistant,
                reasoning: Some("thinking hard".into()),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: "{\"path\":\"a.txt\"}".into(),
                }],
                ..Message::default()
            },
            Message {
                role: Role::Tool,
                content: "hello".into(),
                tool_call_id: Some("call_1".into()),
                name: Some("read".into()),
                ..Message::default()
            },
            Message {
                role: Role::System,
                content: "3 iterations left".into(),
                ..Message::default()
            },
            Message::assistant("done"),
        ];
        let tools = vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object"}),
            refunds_iteration: false,
        }];
        let cache = CacheBreakpoints::system_and_last_three(messages.len());
        let request = request(&messages, &tools, &cache, ToolChoice::None);
        let body = json_of(&render(&request, true, Some(100)));
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "messages": [
                    {"role": "system", "content": "You are helpful."},
                    {"role": "user", "content": "read a.txt"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
                    {"role": "user", "content": "[System note] 3 iterations left"},
                    {"role": "assistant", "content": "done"},
                ],
                "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}}],
                "tool_choice": "none",
                "max_tokens": 100,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn omits_optional_fields() {
        let messages = vec![Message::user("hi")];
        let cache = CacheBreakpoints::default();
        let mut req = request(&messages, &[], &cache, ToolChoice::None);
        req.system = "";
        let body = json_of(&render(&req, false, None));
        assert_eq!(
            body,
            json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
        );
        req.max_tokens = Some(7);
        assert_eq!(json_of(&render(&req, false, Some(100)))["max_tokens"], 7);
    }
}
