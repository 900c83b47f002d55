//! Renders a [`ModelRequest`] as an OpenAI Responses request body: the system prompt as
//! `instructions`, the conversation as `input` items, reasoning items replayed verbatim.
//!
//! Item shapes: the Responses API reference ("Create a model response", `input` item list) and
//! the openai-python types `ResponseInputItemParam` (`EasyInputMessageParam`,
//! `ResponseFunctionToolCallParam`, `FunctionCallOutput`, `ResponseReasoningItemParam`).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use talaria_kernel::{Message, ModelError, ModelRequest, Role, ToolCall, ToolChoice, ToolSpec};

use super::{OUTPUT, WIRE};
use crate::SYSTEM_NOTE_PREFIX;
use crate::images::load_all;

/// What the request asks to get back beyond the default: each reasoning item's encrypted
/// content, the only way to carry reasoning between turns with `store: false`.
const INCLUDE: [&str; 1] = ["reasoning.encrypted_content"];

/// The JSON body for `POST /responses`.
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesBody<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    stream: bool,
    /// Nothing is kept on the provider's side: every request carries the whole conversation.
    store: bool,
    include: [&'static str; 1],
}

/// One `input` item.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    Message(MessageItem<'a>),
    Call(CallItem<'a>),
    Output(OutputItem<'a>),
    /// A reasoning item exactly as the model returned it.
    Verbatim(&'a Value),
}

#[derive(Debug, Serialize)]
struct MessageItem<'a> {
    r#type: &'static str,
    role: &'static str,
    content: Vec<ContentPart<'a>>,
}

/// `input_text` in user messages, `output_text` in the model's own; `input_image` for an
/// attached image (a `data:` URL of its bytes, or the URL the provider fetches).
#[derive(Debug, Serialize)]
struct ContentPart<'a> {
    r#type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_url: Option<String>,
    /// The API's default, spelled out: older SDK types require the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct CallItem<'a> {
    r#type: &'static str,
    call_id: &'a str,
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct OutputItem<'a> {
    r#type: &'static str,
    call_id: &'a str,
    output: &'a str,
}

#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    r#type: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

/// The body for `request`.
pub(crate) fn render<'a>(
    request: &'a ModelRequest<'a>,
    stream: bool,
    default_max_tokens: Option<u32>,
) -> Result<ResponsesBody<'a>, ModelError> {
    let mut input = Vec::with_capacity(request.messages.len());
    for message in request.messages {
        render_message(message, &mut input)?;
    }
    let tools: Vec<FunctionTool<'a>> = request.tools.iter().map(render_tool).collect();
    let tool_choice = (!tools.is_empty()).then_some(match request.tool_choice {
        ToolChoice::Auto => "auto",
        ToolChoice::None => "none",
    });
    Ok(ResponsesBody {
        model: request.model,
        instructions: request.system,
        input,
        tools,
        tool_choice,
        max_output_tokens: request.max_tokens.or(default_max_tokens),
        stream,
        store: false,
        include: INCLUDE,
    })
}

fn text_message<'a>(role: &'static str, text: impl Into<Cow<'a, str>>) -> InputItem<'a> {
    let part = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    InputItem::Message(MessageItem {
        r#type: "message",
        role,
        content: vec![text_part(part, text)],
    })
}

fn text_part<'a>(r#type: &'static str, text: impl Into<Cow<'a, str>>) -> ContentPart<'a> {
    ContentPart {
        r#type,
        text: Some(text.into()),
        image_url: None,
        detail: None,
    }
}

/// A user message with images: its text (when there is any), then one `input_image` each.
fn user_with_images(message: &Message) -> Result<InputItem<'_>, ModelError> {
    let text =
        (!message.content.is_empty()).then(|| text_part("input_text", message.content.as_str()));
    let images = load_all(&message.images)?
        .into_iter()
        .map(|image| ContentPart {
            r#type: "input_image",
            text: None,
            image_url: Some(image.url()),
            detail: Some("auto"),
        });
    Ok(InputItem::Message(MessageItem {
        r#type: "message",
        role: "user",
        content: text.into_iter().chain(images).collect(),
    }))
}

fn render_message<'a>(
    message: &'a Message,
    input: &mut Vec<InputItem<'a>>,
) -> Result<(), ModelError> {
    match message.role {
        Role::User if !message.images.is_empty() => input.push(user_with_images(message)?),
        Role::User => input.push(text_message("user", message.content.as_str())),
        Role::System => input.push(text_message(
            "user",
            format!("{SYSTEM_NOTE_PREFIX}{}", message.content),
        )),
        Role::Tool => input.push(InputItem::Output(OutputItem {
            r#type: "function_call_output",
            call_id: message.tool_call_id.as_deref().unwrap_or_default(),
            output: &message.content,
        })),
        Role::Assistant => render_assistant(message, input),
    }
    Ok(())
}

/// The model's turn: its output items in their original order when the message carries this
/// wire's provider state (reasoning items verbatim), else its text then its calls.
fn render_assistant<'a>(message: &'a Message, input: &mut Vec<InputItem<'a>>) {
    let start = input.len();
    let mut text_sent = message.content.is_empty();
    let mut calls_sent = vec![false; message.tool_calls.len()];
    let layout = message
        .provider_state
        .as_ref()
        .and_then(|state| state.for_wire(WIRE))
        .and_then(|data| data.get(OUTPUT))
        .and_then(Value::as_array);
    for item in layout.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => input.push(InputItem::Verbatim(item)),
            Some("message") if !text_sent => {
                text_sent = true;
                input.push(text_message("assistant", message.content.as_str()));
            }
            Some("function_call") => {
                let id = item.get("call_id").and_then(Value::as_str);
                let found = message
                    .tool_calls
                    .iter()
                    .zip(&mut calls_sent)
                    .find(|(call, sent)| !**sent && Some(call.id.as_str()) == id);
                if let Some((call, sent)) = found {
                    *sent = true;
                    input.push(render_call(call));
                }
            }
            _ => {}
        }
    }
    if !text_sent {
        input.push(text_message("assistant", message.content.as_str()));
    }
    for (call, sent) in message.tool_calls.iter().zip(calls_sent) {
        if !sent {
            input.push(render_call(call));
        }
    }
    // A reasoning item must be followed by the item it led to; one whose item is gone (calls
    // dropped, an empty answer) is left out rather than refused by the API.
    while input.len() > start && matches!(input.last(), Some(InputItem::Verbatim(_))) {
        input.pop();
    }
}

fn render_call(call: &ToolCall) -> InputItem<'_> {
    let arguments = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    };
    InputItem::Call(CallItem {
        r#type: "function_call",
        call_id: &call.id,
        name: &call.name,
        arguments,
    })
}

fn render_tool(tool: &ToolSpec) -> FunctionTool<'_> {
    FunctionTool {
        r#type: "function",
        name: &tool.name,
        description: &tool.description,
        parameters: &tool.parameters,
        strict: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use talaria_kernel::{CacheBreakpoints, ProviderState};

    fn json_of(body: &ResponsesBody<'_>) -> Value {
        serde_json::to_value(body).expect("serialisable")
    }

    fn request<'a>(
        messages: &'a [Message],
        tools: &'a [ToolSpec],
        cache: &'a CacheBreakpoints,
    ) -> ModelRequest<'a> {
        ModelRequest {
            model: "gpt-test",
            system: "You are helpful.",
            messages,
            tools,
            tool_choice: ToolChoice::Auto,
            cache,
            max_tokens: None,
        }
    }

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: arguments.into(),
        }
    }

    fn tool_result(id: &str, content: &str) -> Message {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_call_id: Some(id.into()),
            name: Some("read".into()),
            ..Message::default()
        }
    }

    fn reasoning_item(id: &str) -> Value {
        json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": format!("enc-{id}")})
    }

    fn state(output: Value) -> Option<ProviderState> {
        Some(ProviderState {
            wire: WIRE.into(),
            data: json!({ OUTPUT: output }),
        })
    }

    #[test]
    fn renders_instructions_items_tools_and_the_fixed_fields() {
        let messages = vec![
            Message::user("read a.txt"),
            Message {
                role: Role::Assistant,
                reasoning: Some("Plan.".into()),
                tool_calls: vec![call("call_1", "{\"path\":\"a.txt\"}"), call("call_2", "")],
                provider_state: state(json!([
                    reasoning_item("rs_1"),
                    {"type": "function_call", "call_id": "call_1"},
                    {"type": "function_call", "call_id": "call_2"},
                ])),
                ..Message::default()
            },
            tool_result("call_1", "hello"),
            tool_result("call_2", "world"),
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
        let cache = CacheBreakpoints::default();
        let request = request(&messages, &tools, &cache);
        let body = json_of(&render(&request, true, Some(100)).unwrap());
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "instructions": "You are helpful.",
                "input": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a.txt"}]},
                    reasoning_item("rs_1"),
                    {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.txt\"}"},
                    {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
                    {"type": "function_call_output", "call_id": "call_2", "output": "world"},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "[System note] 3 iterations left"}]},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
                ],
                "tools": [{"type": "function", "name": "read", "description": "Read a file", "parameters": {"type": "object"}, "strict": false}],
                "tool_choice": "auto",
                "max_output_tokens": 100,
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
            })
        );
    }

    #[test]
    fn reasoning_items_keep_their_places_between_text_and_calls() {
        let messages = vec![Message {
            tool_calls: vec![call("call_a", "{}"), call("call_b", "{}")],
            provider_state: state(json!([
                reasoning_item("rs_1"),
                {"type": "message"},
                reasoning_item("rs_2"),
                {"type": "function_call", "call_id": "call_b"},
                {"type": "function_call", "call_id": "gone"},
            ])),
            ..Message::assistant("Reading both.")
        }];
        let cache = CacheBreakpoints::default();
        let body = json_of(&render(&request(&messages, &[], &cache), true, None).unwrap());
        let kinds: Vec<String> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                let id = item.get("id").or(item.get("call_id"));
                format!(
                    "{}:{}",
                    item["type"].as_str().unwrap(),
                    id.map_or("", |v| v.as_str().unwrap())
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "reasoning:rs_1",
                "message:",
                "reasoning:rs_2",
                "function_call:call_b",
                "function_call:call_a",
            ],
            "the call not placed by the layout comes after the placed ones"
        );
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    #[test]
    fn reasoning_with_nothing_after_it_and_other_wires_state_are_left_out() {
        let mut other_wire = state(json!([reasoning_item("rs_x"), {"type": "message"}]));
        if let Some(state) = &mut other_wire {
            state.wire = "anthropic".into();
        }
        let messages = vec![
            Message {
                provider_state: state(
                    json!([reasoning_item("rs_1"), {"type": "function_call", "call_id": "cleared"}]),
                ),
                ..Message::assistant("")
            },
            Message {
                provider_state: other_wire,
                ..Message::assistant("text")
            },
        ];
        let cache = CacheBreakpoints::default();
        let mut req = request(&messages, &[], &cache);
        req.system = "";
        let body = json_of(&render(&req, false, None).unwrap());
        assert_eq!(
            body,
            json!({
                "model": "gpt-test",
                "input": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "text"}]}],
                "stream": false,
                "store": false,
                "include": ["reasoning.encrypted_content"],
            })
        );
    }

    #[test]
    fn images_are_input_image_parts_after_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.gif");
        std::fs::write(&path, b"GIF89a").unwrap();
        let messages = vec![Message::user_with_images(
            "",
            vec![talaria_kernel::ImageRef::File {
                path: path.clone(),
                media_type: "image/gif".into(),
            }],
        )];
        let cache = CacheBreakpoints::default();
        let req = request(&messages, &[], &cache);
        let body = json_of(&render(&req, false, None).unwrap());
        assert_eq!(
            body["input"],
            json!([{"type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/gif;base64,R0lGODlh", "detail": "auto"},
            ]}])
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(render(&req, false, None).unwrap_err().class(), "attachment");
    }
}
