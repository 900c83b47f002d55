//! Renders a [`ModelRequest`] as an Anthropic Messages request body: strict
//! user/assistant alternation, tool blocks, and `cache_control` breakpoints.

use serde_json::{Map, Value, json};
use talaria_kernel::{Message, ModelError, ModelRequest, Role, ToolChoice, ToolSpec};

use crate::SYSTEM_NOTE_PREFIX;
use crate::images::{WireImage, load_all};

/// Anthropic accepts at most this many `cache_control` breakpoints.
const MAX_BREAKPOINTS: usize = 4;

/// One content block and the index of the request message it came from.
struct Block {
    source: usize,
    value: Value,
}

/// One rendered message: consecutive same-role request messages merged.
struct Turn {
    role: &'static str,
    blocks: Vec<Block>,
}

/// The JSON body for `POST /v1/messages`.
pub(crate) fn render(
    request: &ModelRequest<'_>,
    stream: bool,
    default_max_tokens: u32,
) -> Result<Value, ModelError> {
    let mut body = Map::new();
    body.insert("model".into(), request.model.into());
    body.insert(
        "max_tokens".into(),
        request.max_tokens.unwrap_or(default_max_tokens).into(),
    );
    let cache_system = request.cache.system && !request.system.is_empty();
    if !request.system.is_empty() {
        let mut block = json!({"type": "text", "text": request.system});
        if cache_system {
            block["cache_control"] = ephemeral();
        }
        body.insert("system".into(), json!([block]));
    }
    let budget = MAX_BREAKPOINTS - usize::from(cache_system);
    body.insert(
        "messages".into(),
        render_messages(request.messages, &request.cache.messages, budget)?.into(),
    );
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request.tools.iter().map(render_tool).collect(),
        );
        if request.tool_choice == ToolChoice::None {
            body.insert("tool_choice".into(), json!({"type": "none"}));
        }
    }
    if stream {
        body.insert("stream".into(), true.into());
    }
    Ok(body.into())
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn render_messages(
    messages: &[Message],
    marks: &[usize],
    budget: usize,
) -> Result<Vec<Value>, ModelError> {
    let mut turns: Vec<Turn> = Vec::new();
    for (source, message) in messages.iter().enumerate() {
        let (role, values) = content_blocks(message)?;
        let blocks = values.into_iter().map(|value| Block { source, value });
        match turns.last_mut() {
            Some(turn) if turn.role == role => turn.blocks.extend(blocks),
            _ => {
                let blocks: Vec<Block> = blocks.collect();
                if !blocks.is_empty() {
                    turns.push(Turn { role, blocks });
                }
            }
        }
    }
    // The API wants tool results before any other block of a user message.
    for turn in &mut turns {
        turn.blocks
            .sort_by_key(|block| block.value["type"] != "tool_result");
    }
    for (turn, block) in breakpoints(&turns, marks, budget) {
        if let Some(block) = turns.get_mut(turn).and_then(|t| t.blocks.get_mut(block)) {
            block.value["cache_control"] = ephemeral();
        }
    }
    Ok(turns
        .into_iter()
        .map(|turn| {
            let content: Vec<Value> = turn.blocks.into_iter().map(|block| block.value).collect();
            json!({"role": turn.role, "content": content})
        })
        .collect())
}

/// Positions `(turn, block)` to mark: for each marked message, its last
/// rendered block (or, if it rendered none, the last block before it). At most
/// `budget` positions are kept, the latest ones, since they cache the most.
fn breakpoints(turns: &[Turn], marks: &[usize], budget: usize) -> Vec<(usize, usize)> {
    let positions: Vec<(usize, usize, usize)> = turns
        .iter()
        .enumerate()
        .flat_map(|(t, turn)| {
            turn.blocks
                .iter()
                .enumerate()
                .map(move |(b, block)| (t, b, block.source))
        })
        .collect();
    let mut chosen: Vec<(usize, usize)> = marks
        .iter()
        .filter_map(|&mark| {
            let last_of = |pred: &dyn Fn(usize) -> bool| {
                positions
                    .iter()
                    .filter(|(_, _, source)| pred(*source))
                    .map(|&(t, b, _)| (t, b))
                    .max()
            };
            last_of(&|source| source == mark).or_else(|| last_of(&|source| source < mark))
        })
        .collect();
    chosen.sort_unstable();
    chosen.dedup();
    let excess = chosen.len().saturating_sub(budget);
    chosen.split_off(excess)
}

/// The role a message is sent under and its content blocks (possibly none).
fn content_blocks(message: &Message) -> Result<(&'static str, Vec<Value>), ModelError> {
    let text = |text: &str| json!({"type": "text", "text": text});
    Ok(match message.role {
        // Images before the text: Anthropic's guidance for the best answers.
        Role::User if !message.images.is_empty() => {
            let mut blocks: Vec<Value> = load_all(&message.images)?
                .into_iter()
                .map(image_block)
                .collect();
            if !message.content.trim().is_empty() {
                blocks.push(text(&message.content));
            }
            ("user", blocks)
        }
        Role::User if message.content.trim().is_empty() => ("user", Vec::new()),
        Role::User => ("user", vec![text(&message.content)]),
        Role::System => (
            "user",
            vec![text(&format!("{SYSTEM_NOTE_PREFIX}{}", message.content))],
        ),
        Role::Tool => {
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
                "is_error": message.is_error,
            });
            if !message.content.is_empty() {
                block["content"] = message.content.as_str().into();
            }
            ("user", vec![block])
        }
        Role::Assistant => {
            let mut blocks = Vec::with_capacity(message.tool_calls.len() + 1);
            if !message.content.trim().is_empty() {
                blocks.push(text(&message.content));
            }
            blocks.extend(message.tool_calls.iter().map(|call| {
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(&call.arguments)})
            }));
            ("assistant", blocks)
        }
    })
}

/// An `image` block: inline base64, or a URL Anthropic fetches.
fn image_block(image: WireImage) -> Value {
    let source = match image {
        WireImage::Data { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        WireImage::Url(url) => json!({"type": "url", "url": url}),
    };
    json!({"type": "image", "source": source})
}

/// Stored arguments as an `input` object; anything but a JSON object becomes `{}`.
fn tool_input(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

fn render_tool(tool: &ToolSpec) -> Value {
    json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters})
}

#[cfg(test)]
mod tests {
    use super::*;
    use talaria_kernel::{CacheBreakpoints, ToolCall};

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: arguments.into(),
        }
    }

    fn tool(id: &str, content: &str, is_error: bool) -> Message {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_call_id: Some(id.into()),
            name: Some("read".into()),
            is_error,
            ..Message::default()
        }
    }

    fn system_note(text: &str) -> Message {
        Message {
            role: Role::System,
            content: text.into(),
            ..Message::default()
        }
    }

    fn render_with(messages: &[Message], cache: &CacheBreakpoints, system: &str) -> Value {
        let tools = [ToolSpec {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
            refunds_iteration: false,
        }];
        let request = ModelRequest {
            model: "claude-test",
            system,
            messages,
            tools: &tools,
            tool_choice: ToolChoice::None,
            cache,
            max_tokens: None,
        };
        render(&request, true, 8192).unwrap()
    }

    #[test]
    fn merges_roles_and_renders_tool_blocks() {
        let messages = vec![
            Message::user("read both"),
            system_note("be brief"),
            Message {
                role: Role::Assistant,
                content: "Reading.".into(),
                reasoning: Some("hmm".into()),
                tool_calls: vec![
                    call("t1", "{\"path\":\"a\"}"),
                    call("t2", "not json"),
                    call("t3", "[1]"),
                ],
                ..Message::default()
            },
            system_note("2 iterations left"),
            tool("t1", "A", false),
            tool("t2", "", true),
            tool("t3", "C", false),
            Message::assistant(" "),
            Message::user("thanks"),
        ];
        let body = render_with(&messages, &CacheBreakpoints::default(), "Be helpful.");
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 8192,
                "system": [{"type": "text", "text": "Be helpful."}],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "read both"},
                        {"type": "text", "text": "[System note] be brief"},
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                        {"type": "tool_use", "id": "t2", "name": "read", "input": {}},
                        {"type": "tool_use", "id": "t3", "name": "read", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "A", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "t2", "is_error": true},
                        {"type": "tool_result", "tool_use_id": "t3", "content": "C", "is_error": false},
                        {"type": "text", "text": "[System note] 2 iterations left"},
                        {"type": "text", "text": "thanks"},
                    ]},
                ],
                "tools": [{"name": "read", "description": "Read", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "none"},
                "stream": true,
            })
        );
    }

    fn marked(body: &Value) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (t, message) in body["messages"].as_array().unwrap().iter().enumerate() {
            for (b, block) in message["content"].as_array().unwrap().iter().enumerate() {
                if block.get("cache_control").is_some() {
                    assert_eq!(block["cache_control"], json!({"type": "ephemeral"}));
                    out.push((t, b));
                }
            }
        }
        out
    }

    #[test]
    fn cache_breakpoints_follow_merged_messages() {
        let messages = vec![
            Message::user("q1"), // 0 -> turn 0
            Message {
                role: Role::Assistant,
                tool_calls: vec![call("t1", "{}")],
                ..Message::default()
            }, // 1 -> turn 1
            tool("t1", "r1", false), // 2 -> turn 2 block 0
            Message::user("q2"), // 3 -> turn 2 block 1
            Message::assistant(""), // 4 -> renders nothing
        ];
        let cache = CacheBreakpoints {
            system: true,
            messages: vec![2, 4],
        };
        let body = render_with(&messages, &cache, "sys");
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        // Message 4 rendered nothing: its mark falls back to the block before it.
        assert_eq!(marked(&body), vec![(2, 0), (2, 1)]);
    }

    #[test]
    fn at_most_four_breakpoints_keeping_the_latest() {
        let messages: Vec<Message> = (0..8)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user(format!("u{i}"))
                } else {
                    Message::assistant(format!("a{i}"))
                }
            })
            .collect();
        let cache = CacheBreakpoints {
            system: true,
            messages: (0..8).collect(),
        };
        let body = render_with(&messages, &cache, "sys");
        assert_eq!(marked(&body), vec![(5, 0), (6, 0), (7, 0)]);

        let body = render_with(&messages, &cache, "");
        assert!(body.get("system").is_none());
        assert_eq!(marked(&body), vec![(4, 0), (5, 0), (6, 0), (7, 0)]);
    }

    #[test]
    fn system_note_before_tool_results_is_moved_after_them() {
        let messages = vec![
            Message::user("go"),
            Message {
                role: Role::Assistant,
                tool_calls: vec![call("t1", "{}")],
                ..Message::default()
            },
            system_note("hurry"),
            tool("t1", "ok", false),
        ];
        let cache = CacheBreakpoints {
            system: false,
            messages: vec![2],
        };
        let body = render_with(&messages, &cache, "sys");
        let last = &body["messages"][2]["content"];
        assert_eq!(last[0]["type"], "tool_result");
        assert_eq!(last[1]["text"], "[System note] hurry");
        assert_eq!(marked(&body), vec![(2, 1)]);
    }

    #[test]
    fn images_come_before_the_text_as_base64_or_url_sources() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jpg");
        std::fs::write(&path, [0xFF, 0xD8, 0xFF]).unwrap();
        let images = vec![
            talaria_kernel::ImageRef::File {
                path: path.clone(),
                media_type: "image/jpeg".into(),
            },
            talaria_kernel::ImageRef::Url {
                url: "https://example.com/b.png".into(),
            },
        ];
        let messages = vec![Message::user_with_images("compare", images)];
        let cache = CacheBreakpoints {
            system: false,
            messages: vec![0],
        };
        let body = render_with(&messages, &cache, "sys");
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/b.png"}},
                {"type": "text", "text": "compare", "cache_control": {"type": "ephemeral"}},
            ])
        );
        std::fs::remove_file(&path).unwrap();
        let request = ModelRequest {
            model: "claude-test",
            system: "",
            messages: &messages,
            tools: &[],
            tool_choice: ToolChoice::Auto,
            cache: &cache,
            max_tokens: None,
        };
        assert_eq!(
            render(&request, false, 10).unwrap_err().class(),
            "attachment"
        );
    }
}
