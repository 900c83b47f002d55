//! Recorded requests and a neutral view of their conversations.

use std::io::{self, BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Which wire format a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Wire {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages (`/v1/messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI Responses (`/v1/responses`).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl std::fmt::Display for Wire {
    /// `openai`, `anthropic` or `openai-responses`, as in recordings.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::OpenAiResponses => "openai-responses",
        })
    }
}

/// One request the server received, in arrival order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// 0-based position among all recorded requests (and the script step it played).
    pub index: usize,
    /// HTTP method.
    pub method: String,
    /// Request target, including any query string.
    pub path: String,
    /// Headers in the order received, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` if it is not JSON.
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
    /// The wire format of the endpoint.
    pub wire: Wire,
    /// Whether the body asked for a stream (`"stream": true`).
    pub stream: bool,
    /// Which connection carried it: 1 for the first the server accepted, and so on
    /// (a client that reuses its connection sends several requests on one).
    #[serde(default)]
    pub connection: u64,
}

/// A conversation message in a wire-neutral form.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who sent it.
    pub role: Role,
    /// Concatenated text parts.
    pub text: String,
    /// Tool calls made in this message (OpenAI `tool_calls`, Anthropic `tool_use` blocks).
    pub tool_calls: Vec<ToolUse>,
    /// Tool results carried by this message (OpenAI role `tool`, Anthropic `tool_result` blocks).
    pub tool_results: Vec<ToolResult>,
    /// Images in this message, in order (OpenAI `image_url` parts, Anthropic `image` blocks,
    /// Responses `input_image` parts).
    #[serde(default)]
    pub images: Vec<Image>,
}

/// An image seen in a request, in a wire-neutral form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Image {
    /// Inline bytes (a `data:` URL or a base64 source).
    Inline {
        /// MIME type as sent.
        media_type: String,
        /// The base64 text as sent.
        data: String,
    },
    /// A URL for the provider to fetch.
    Url(String),
}

impl Image {
    /// From an OpenAI-style URL: `data:<type>;base64,<data>` or a plain URL.
    fn from_url(url: &str) -> Self {
        url.strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
            .map_or_else(
                || Image::Url(url.to_owned()),
                |(media_type, data)| Image::Inline {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                },
            )
    }
}

/// The images among a content array's parts (OpenAI chat and Responses spellings).
fn openai_images(content: Option<&Value>) -> Vec<Image> {
    content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| match str_field(part, "type") {
            "image_url" => part
                .get("image_url")
                .map(|image| Image::from_url(str_field(image, "url"))),
            "input_image" => Some(Image::from_url(str_field(part, "image_url"))),
            _ => None,
        })
        .collect()
}

/// Message role. OpenAI `developer` messages count as [`Role::System`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// System prompt (OpenAI system/developer message, Anthropic `system` field).
    System,
    /// User turn.
    #[default]
    User,
    /// Assistant turn.
    Assistant,
    /// OpenAI tool-result message.
    Tool,
    /// Any other role, as sent.
    Other(String),
}

/// A tool call seen in a request's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON text (OpenAI: as sent; Anthropic: `input` re-serialised).
    pub arguments: String,
}

/// A tool result seen in a request's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// Concatenated text content.
    pub content: String,
    /// Anthropic `is_error`; always false on OpenAI.
    pub is_error: bool,
}

/// Top-level fields of a request body, borrowed as raw JSON text.
#[derive(Deserialize, Default)]
struct RawTop<'a> {
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
}

impl RecordedRequest {
    fn raw_top(&self) -> RawTop<'_> {
        serde_json::from_str(&self.raw_body).unwrap_or_default()
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `model` field of the body.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// The exact JSON text of the system part: on OpenAI the leading system/developer
    /// messages (joined by `,`), on Anthropic the `system` field, on Responses the
    /// `instructions` field. Empty when absent.
    pub fn system_prompt_raw(&self) -> String {
        let top = self.raw_top();
        match self.wire {
            Wire::Anthropic => top.system.map(|s| s.get().to_owned()).unwrap_or_default(),
            Wire::OpenAiResponses => top
                .instructions
                .map(|s| s.get().to_owned())
                .unwrap_or_default(),
            Wire::OpenAi => {
                #[derive(Deserialize)]
                struct RoleOnly {
                    role: String,
                }
                let messages = top.messages.unwrap_or_default();
                let leading: Vec<&str> = messages
                    .iter()
                    .take_while(|m| {
                        serde_json::from_str::<RoleOnly>(m.get())
                            .is_ok_and(|r| r.role == "system" || r.role == "developer")
                    })
                    .map(|m| m.get())
                    .collect();
                leading.join(",")
            }
        }
    }

    /// The exact JSON text of the `tools` field; empty when absent.
    pub fn tools_raw(&self) -> String {
        self.raw_top()
            .tools
            .map(|t| t.get().to_owned())
            .unwrap_or_default()
    }

    /// The conversation in a wire-neutral form, the system prompt first (as [`Role::System`]).
    /// On Responses each `message` item is a message, a run of `function_call` items joins the
    /// assistant message before it, each `function_call_output` is a [`Role::Tool`] message, and
    /// `reasoning` items are left out (read them from `body["input"]`).
    pub fn messages(&self) -> Vec<Message> {
        let key = match self.wire {
            Wire::OpenAiResponses => "input",
            Wire::OpenAi | Wire::Anthropic => "messages",
        };
        let listed = self.body.get(key).and_then(Value::as_array);
        let listed = listed.map(Vec::as_slice).unwrap_or_default();
        match self.wire {
            Wire::OpenAi => listed.iter().map(openai_message).collect(),
            Wire::OpenAiResponses => {
                let instructions = self.body.get("instructions").map(|s| Message {
                    role: Role::System,
                    text: text_of(s),
                    ..Message::default()
                });
                let mut messages: Vec<Message> = instructions.into_iter().collect();
                for item in listed {
                    responses_item(item, &mut messages);
                }
                messages
            }
            Wire::Anthropic => {
                let system = self.body.get("system").map(|s| Message {
                    role: Role::System,
                    text: text_of(s),
                    ..Message::default()
                });
                system
                    .into_iter()
                    .chain(listed.iter().map(anthropic_message))
                    .collect()
            }
        }
    }
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Text of a content value: a string, or the `text` of an array of parts/blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(|p| str_field(p, "text")).collect(),
        _ => String::new(),
    }
}

fn role_of(name: &str) -> Role {
    match name {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => Role::Other(other.to_owned()),
    }
}

fn openai_message(message: &Value) -> Message {
    let role = role_of(str_field(message, "role"));
    let text = message.get("content").map(text_of).unwrap_or_default();
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| {
            let function = call.get("function").unwrap_or(&Value::Null);
            ToolUse {
                id: str_field(call, "id").to_owned(),
                name: str_field(function, "name").to_owned(),
                arguments: str_field(function, "arguments").to_owned(),
            }
        })
        .collect();
    let tool_results = match (&role, message.get("tool_call_id")) {
        (Role::Tool, Some(id)) => vec![ToolResult {
            call_id: id.as_str().unwrap_or_default().to_owned(),
            content: text.clone(),
            is_error: false,
        }],
        _ => Vec::new(),
    };
    Message {
        role,
        text,
        tool_calls,
        tool_results,
        images: openai_images(message.get("content")),
    }
}

/// Adds one Responses `input` item to `messages`.
fn responses_item(item: &Value, messages: &mut Vec<Message>) {
    // A plain `{"role", "content"}` without `type` is a message too.
    match item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
    {
        "message" => messages.push(Message {
            role: role_of(str_field(item, "role")),
            text: item.get("content").map(text_of).unwrap_or_default(),
            images: openai_images(item.get("content")),
            ..Message::default()
        }),
        "function_call" => {
            let call = ToolUse {
                id: str_field(item, "call_id").to_owned(),
                name: str_field(item, "name").to_owned(),
                arguments: str_field(item, "arguments").to_owned(),
            };
            match messages.last_mut() {
                Some(last) if last.role == Role::Assistant && last.tool_results.is_empty() => {
                    last.tool_calls.push(call);
                }
                _ => messages.push(Message {
                    role: Role::Assistant,
                    tool_calls: vec![call],
                    ..Message::default()
                }),
            }
        }
        "function_call_output" => {
            let content = item.get("output").map(text_of).unwrap_or_default();
            messages.push(Message {
                role: Role::Tool,
                text: content.clone(),
                tool_results: vec![ToolResult {
                    call_id: str_field(item, "call_id").to_owned(),
                    content,
                    is_error: false,
                }],
                ..Message::default()
            });
        }
        _ => {} // reasoning items, and items of hosted tools
    }
}

fn anthropic_message(message: &Value) -> Message {
    let mut out = Message {
        role: role_of(str_field(message, "role")),
        ..Message::default()
    };
    match message.get("content") {
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match str_field(block, "type") {
                    "text" => out.text.push_str(str_field(block, "text")),
                    "tool_use" => out.tool_calls.push(ToolUse {
                        id: str_field(block, "id").to_owned(),
                        name: str_field(block, "name").to_owned(),
                        arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
                    }),
                    "image" => {
                        let source = block.get("source").unwrap_or(&Value::Null);
                        out.images.push(match str_field(source, "type") {
                            "url" => Image::Url(str_field(source, "url").to_owned()),
                            _ => Image::Inline {
                                media_type: str_field(source, "media_type").to_owned(),
                                data: str_field(source, "data").to_owned(),
                            },
                        });
                    }
                    "tool_result" => out.tool_results.push(ToolResult {
                        call_id: str_field(block, "tool_use_id").to_owned(),
                        content: block.get("content").map(text_of).unwrap_or_default(),
                        is_error: block.get("is_error").and_then(Value::as_bool) == Some(true),
                    }),
                    _ => {}
                }
            }
        }
        Some(content) => out.text = text_of(content),
        None => {}
    }
    out
}

/// Appends `request` to a JSONL file (one JSON object per line).
pub(crate) fn append_jsonl(path: &Path, request: &RecordedRequest) -> io::Result<()> {
    let mut line = serde_json::to_string(request)?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(line.as_bytes())
}

/// Reads the requests a server recorded to a JSONL file (`ServerOptions::record_path`,
/// `--record`), e.g. to run the [`assertions`](crate::assertions) on them.
pub fn read_jsonl(path: impl AsRef<Path>) -> io::Result<Vec<RecordedRequest>> {
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut requests = Vec::new();
    for line in file.lines() {
        let line = line?;
        if !line.trim().is_empty() {
            requests.push(serde_json::from_str(&line)?);
        }
    }
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(wire: Wire, raw: &str) -> RecordedRequest {
        RecordedRequest {
            index: 0,
            method: "POST".into(),
            path: "/".into(),
            headers: vec![("X-Api-Key".into(), "k".into())],
            body: serde_json::from_str(raw).unwrap_or(Value::Null),
            raw_body: raw.into(),
            wire,
            stream: false,
            connection: 1,
        }
    }

    #[test]
    fn openai_raw_parts_and_messages() {
        let raw = r#"{"model":"m","tools":[ {"type":"function"} ],"messages":[{"role":"system","content":"S"},{"role":"developer","content":[{"type":"text","text":"D"}]},{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"out"}]}"#;
        let r = request(Wire::OpenAi, raw);
        assert_eq!(r.header("x-api-key"), Some("k"));
        assert_eq!(r.model(), Some("m"));
        assert_eq!(
            r.system_prompt_raw(),
            r#"{"role":"system","content":"S"},{"role":"developer","content":[{"type":"text","text":"D"}]}"#
        );
        assert_eq!(r.tools_raw(), r#"[ {"type":"function"} ]"#);
        let m = r.messages();
        assert_eq!(m.len(), 5);
        assert_eq!((m[1].role.clone(), m[1].text.as_str()), (Role::System, "D"));
        assert_eq!(m[3].tool_calls[0].id, "c1");
        assert_eq!(m[4].tool_results[0].call_id, "c1");
        assert_eq!(m[4].tool_results[0].content, "out");
    }

    #[test]
    fn anthropic_raw_parts_and_messages() {
        let raw = r#"{"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}],"is_error":true}]}]}"#;
        let r = request(Wire::Anthropic, raw);
        assert!(
            r.system_prompt_raw()
                .starts_with(r#"[{"type":"text","text":"S""#)
        );
        assert_eq!(r.tools_raw(), "");
        let m = r.messages();
        assert_eq!(m[0].role, Role::System);
        assert_eq!(m[0].text, "S");
        assert_eq!(m[2].tool_calls[0].arguments, json!({"a":1}).to_string());
        assert!(m[3].tool_results[0].is_error);
        assert_eq!(m[3].tool_results[0].content, "r");
    }

    #[test]
    fn responses_raw_parts_and_messages() {
        let raw = r#"{"model":"m","instructions":"S","tools":[{"type":"function","name":"f"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"f","arguments":"{\"a\":1}"},{"type":"function_call_output","call_id":"c1","output":"r1"},{"type":"function_call_output","call_id":"c2","output":"r2"}],"store":false}"#;
        let r = request(Wire::OpenAiResponses, raw);
        assert_eq!(r.system_prompt_raw(), r#""S""#);
        assert_eq!(r.tools_raw(), r#"[{"type":"function","name":"f"}]"#);
        let m = r.messages();
        assert_eq!(m.len(), 5, "{m:?}");
        assert_eq!((m[0].role.clone(), m[0].text.as_str()), (Role::System, "S"));
        assert_eq!(
            (m[2].role.clone(), m[2].text.as_str()),
            (Role::Assistant, "ok")
        );
        let ids: Vec<&str> = m[2].tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2"]);
        assert_eq!(m[4].tool_results[0].call_id, "c2");
        assert_eq!(m[4].tool_results[0].content, "r2");
        assert!(crate::assertions::check_tool_calls_paired(&[r]).is_ok());
    }

    #[test]
    fn jsonl_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let r = request(Wire::Anthropic, r#"{"a":1}"#);
        append_jsonl(&path, &r).unwrap();
        append_jsonl(&path, &r).unwrap();
        assert_eq!(read_jsonl(&path).unwrap(), vec![r.clone(), r]);
    }

    #[test]
    fn images_read_the_same_on_every_wire() {
        let inline = Image::Inline {
            media_type: "image/png".into(),
            data: "iVBORw==".into(),
        };
        let url = Image::Url("https://example.com/a.jpg".into());
        let openai = r#"{"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}},{"type":"image_url","image_url":{"url":"https://example.com/a.jpg"}}]}]}"#;
        let anthropic = r#"{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}},{"type":"text","text":"see"}]}]}"#;
        let responses = r#"{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw==","detail":"auto"},{"type":"input_image","image_url":"https://example.com/a.jpg"}]}]}"#;
        for (wire, raw) in [
            (Wire::OpenAi, openai),
            (Wire::Anthropic, anthropic),
            (Wire::OpenAiResponses, responses),
        ] {
            let messages = request(wire, raw).messages();
            let user = messages.iter().find(|m| m.role == Role::User).unwrap();
            assert_eq!(user.text, "see", "{wire}");
            assert_eq!(user.images, [inline.clone(), url.clone()], "{wire}");
        }
    }
}
