//! Renders a [`ModelRequest`] as an OpenAI Chat Completions request body.
//!
//! The body borrows the conversation and is serialised straight to bytes: building a
//! `serde_json::Value` of the whole history first cost a copy and a tree of maps every turn.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use talaria_kernel::{Message, ModelError, ModelRequest, Role, ToolCall, ToolChoice, ToolSpec};

use crate::SYSTEM_NOTE_PREFIX;
use crate::images::load_all;

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
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ChatToolCall<'a>>,
}

/// A message's content: plain text, one text part marked as a prompt-cache breakpoint, or the
/// parts of a user message with images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Marked([CachedPart<'a>; 1]),
    Parts(Vec<Part<'a>>),
}

/// A `text` or `image_url` content part.
#[derive(Debug, Serialize)]
struct Part<'a> {
    r#type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_url: Option<ImageUrl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheMark>,
}

/// A `data:` URL of the image's bytes, or the URL the provider fetches.
#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

/// A text part with `cache_control`, the shape OpenRouter passes on to Anthropic.
#[derive(Debug, Serialize)]
struct CachedPart<'a> {
    r#type: &'static str,
    text: Cow<'a, str>,
    cache_control: CacheMark,
}

#[derive(Debug, Serialize)]
struct CacheMark {
    r#type: &'static str,
}

/// Anthropic (behind a router) accepts at most this many breakpoints.
const MAX_BREAKPOINTS: usize = 4;

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

/// The body for `request`; with `cache_control`, the request's cache breakpoints (the system
/// prompt, the last messages) are marked as Anthropic's wire marks them.
pub(crate) fn render<'a>(
    request: &'a ModelRequest<'a>,
    stream: bool,
    default_max_tokens: Option<u32>,
    cache_control: bool,
) -> Result<ChatBody<'a>, ModelError> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let has_system = !request.system.is_empty();
    if has_system {
        messages.push(ChatMessage::text("system", request.system));
    }
    for message in request.messages {
        messages.push(render_message(message)?);
    }
    if cache_control {
        let system = (has_system && request.cache.system).then_some(0);
        let budget = MAX_BREAKPOINTS - usize::from(system.is_some());
        let marks = request.cache.messages.iter().rev().take(budget);
        let positions = system
            .into_iter()
            .chain(marks.map(|index| index + usize::from(has_system)));
        for position in positions {
            if let Some(message) = messages.get_mut(position) {
                message.mark();
            }
        }
    }
    let tools: Vec<ChatTool<'a>> = request.tools.iter().map(render_tool).collect();
    Ok(ChatBody {
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
    })
}

impl<'a> ChatMessage<'a> {
    fn text(role: &'static str, content: impl Into<Cow<'a, str>>) -> Self {
        Self {
            role,
            tool_call_id: None,
            content: Some(Content::Text(content.into())),
            tool_calls: Vec::new(),
        }
    }

    /// Marks the message's text as a cache breakpoint (a message with no text, an assistant
    /// turn of tool calls only, is left as it is; a message of parts has its last part marked).
    fn mark(&mut self) {
        if let Some(Content::Parts(parts)) = &mut self.content {
            if let Some(last) = parts.last_mut() {
                last.cache_control = Some(CacheMark {
                    r#type: "ephemeral",
                });
            }
            return;
        }
        if let Some(Content::Text(text)) = self
            .content
            .take_if(|c| matches!(c, Content::Text(t) if !t.is_empty()))
        {
            self.content = Some(Content::Marked([CachedPart {
                r#type: "text",
                text,
                cache_control: CacheMark {
                    r#type: "ephemeral",
                },
            }]));
        }
    }
}

fn render_message(message: &Message) -> Result<ChatMessage<'_>, ModelError> {
    Ok(match message.role {
        Role::User if !message.images.is_empty() => ChatMessage {
            content: Some(Content::Parts(user_parts(message)?)),
            ..ChatMessage::text("user", "")
        },
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
                .then_some(Content::Text(Cow::Borrowed(message.content.as_str()))),
            tool_calls: message.tool_calls.iter().map(render_call).collect(),
            ..ChatMessage::text("assistant", "")
        },
    })
}

/// The text part (when there is text), then one `image_url` part per image.
fn user_parts(message: &Message) -> Result<Vec<Part<'_>>, ModelError> {
    let part = |r#type, text, image_url| Part {
        r#type,
        text,
        image_url,
        cache_control: None,
    };
    let text = (!message.content.is_empty()).then(|| part("text", Some(&*message.content), None));
    let images = load_all(&message.images)?;
    Ok(text
        .into_iter()
        .chain(
            images
                .iter()
                .map(|image| part("image_url", None, Some(ImageUrl { url: image.url() }))),
        )
        .collect())
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
        let body = json_of(&render(&request, true, Some(100), false).unwrap());
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
        let body = json_of(&render(&req, false, None, false).unwrap());
        assert_eq!(
            body,
            json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
        );
        req.max_tokens = Some(7);
        assert_eq!(
            json_of(&render(&req, false, Some(100), false).unwrap())["max_tokens"],
            7
        );
    }

    #[test]
    fn cache_breakpoints_are_content_parts_only_when_asked() {
        let messages = vec![
            Message::user("first"),
            Message::assistant("second"),
            Message::user("third"),
            Message::assistant("fourth"),
            Message::user("fifth"),
        ];
        let cache = CacheBreakpoints::system_and_last_three(messages.len());
        let req = request(&messages, &[], &cache, ToolChoice::Auto);
        let plain = json_of(&render(&req, false, None, false).unwrap());
        assert!(
            plain["messages"]
                .as_array()
                .unwrap()
                .iter()
                .all(|m| m["content"].is_string())
        );
        let marked = json_of(&render(&req, false, None, true).unwrap());
        let mark = json!([{"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}]);
        assert_eq!(marked["messages"][0]["content"], mark, "the system prompt");
        let marked_texts: Vec<&str> = marked["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["content"].is_array())
            .map(|m| m["content"][0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            marked_texts,
            ["You are helpful.", "third", "fourth", "fifth"]
        );
        assert_eq!(
            marked["messages"][1]["content"], "first",
            "older turns stay text"
        );
    }

    #[test]
    fn images_are_parts_after_the_text_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.png");
        std::fs::write(&path, b"\x89PNG").unwrap();
        let images = vec![
            talaria_kernel::ImageRef::File {
                path: path.clone(),
                media_type: "image/png".into(),
            },
            talaria_kernel::ImageRef::Url {
                url: "https://example.com/b.jpg".into(),
            },
        ];
        let messages = vec![Message::user_with_images("what is this?", images)];
        let cache = CacheBreakpoints::system_and_last_three(1);
        let req = request(&messages, &[], &cache, ToolChoice::Auto);
        let body = json_of(&render(&req, false, None, false).unwrap());
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/b.jpg"}},
            ])
        );
        let marked = json_of(&render(&req, false, None, true).unwrap());
        assert_eq!(
            marked["messages"][1]["content"][2]["cache_control"],
            json!({"type": "ephemeral"})
        );
        std::fs::remove_file(&path).unwrap();
        let error = render(&req, false, None, false).unwrap_err();
        assert_eq!(error.class(), "attachment");
    }
}
