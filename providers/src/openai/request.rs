//! Renders a [`ModelRequest`] as an OpenAI Chat Completions request body.

use serde_json::{Map, Value, json};
use talaria_kernel::{Message, ModelRequest, Role, ToolChoice, ToolSpec};

use crate::SYSTEM_NOTE_PREFIX;

/// The JSON body for `POST /chat/completions`.
pub(crate) fn render(
    request: &ModelRequest<'_>,
    stream: bool,
    default_max_tokens: Option<u32>,
) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    messages.extend(request.messages.iter().map(render_message));

    let mut body = Map::new();
    body.insert("model".into(), request.model.into());
    body.insert("messages".into(), messages.into());
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request.tools.iter().map(render_tool).collect(),
        );
        if request.tool_choice == ToolChoice::None {
            body.insert("tool_choice".into(), "none".into());
        }
    }
    if let Some(max_tokens) = request.max_tokens.or(default_max_tokens) {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    body.into()
}

fn render_message(message: &Message) -> Value {
    match message.role {
        Role::User => json!({"role": "user", "content": message.content}),
        Role::System => {
            json!({"role": "user", "content": format!("{SYSTEM_NOTE_PREFIX}{}", message.content)})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Assistant if message.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": message.content})
        }
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    let arguments = if call.arguments.trim().is_empty() {
                        "{}"
                    } else {
                        &call.arguments
                    };
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments},
                    })
                })
                .collect();
            let content = Some(&message.content).filter(|c| !c.is_empty());
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
    }
}

fn render_tool(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use talaria_kernel::{CacheBreakpoints, ToolCall};

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
        }];
        let cache = CacheBreakpoints::system_and_last_three(messages.len());
        let body = render(
            &request(&messages, &tools, &cache, ToolChoice::None),
            true,
            Some(100),
        );
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
        let body = render(&req, false, None);
        assert_eq!(
            body,
            json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
        );
        req.max_tokens = Some(7);
        assert_eq!(render(&req, false, Some(100))["max_tokens"], 7);
    }
}
