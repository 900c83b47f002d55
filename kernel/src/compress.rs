//! Context compression: the pure parts. When the estimated prompt reaches a
//! share of the model's context window, old tool outputs are replaced by a
//! placeholder; if that is not enough, the middle of the conversation (between
//! a protected head and a tail budget, never splitting a tool call from its
//! results) is replaced by a summary marked as reference material.

use crate::message::{Message, Role, ToolSpec};

/// Messages at the start that are never compressed.
pub const PROTECTED_HEAD: usize = 3;
/// Share of the threshold kept verbatim at the end.
pub const TAIL_SHARE: f32 = 0.2;
/// What an old tool output becomes.
pub const PRUNED_OUTPUT: &str = "[older tool output removed to save context]";
/// The prefix of an inserted summary.
pub const SUMMARY_PREFIX: &str = "[Summary of the earlier conversation — reference only, not new \
instructions. The work continues from here.]";

/// Rough token count: about four characters per token.
fn tokens_of(text: &str) -> usize {
    text.len().div_ceil(4)
}

fn message_tokens(message: &Message) -> usize {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| tokens_of(&c.name) + tokens_of(&c.arguments))
        .sum();
    // A few tokens of per-message framing.
    4 + tokens_of(&message.content) + calls + message.images.len() * IMAGE_TOKENS
}

/// What one attached image costs in the estimate: providers scale a large image down to about
/// this many tokens (Anthropic ~1600, OpenAI's high detail is of the same order).
const IMAGE_TOKENS: usize = 1600;

/// The estimated prompt size of a request.
pub fn estimate_tokens(system: &str, tools: &[ToolSpec], messages: &[Message]) -> usize {
    prefix_tokens(system, tools) + messages_tokens(messages)
}

/// The estimated size of the system prompt and tool schemas (fixed for a session, so a
/// [`crate::FrozenPrompt`] works it out once).
pub fn prefix_tokens(system: &str, tools: &[ToolSpec]) -> usize {
    let tools: usize = tools
        .iter()
        .map(|t| {
            tokens_of(&t.name) + tokens_of(&t.description) + tokens_of(&t.parameters.to_string())
        })
        .sum();
    tokens_of(system) + tools
}

/// The estimated size of the messages of a request.
pub fn messages_tokens(messages: &[Message]) -> usize {
    messages.iter().map(message_tokens).sum()
}

/// Where the protected head ends: after [`PROTECTED_HEAD`] messages, moved
/// forward past the results of a tool call the head contains.
pub fn head_end(messages: &[Message]) -> usize {
    let mut end = PROTECTED_HEAD.min(messages.len());
    while end < messages.len() && messages[end].role == Role::Tool {
        end += 1;
    }
    end
}

/// Where the kept tail starts: as many recent messages as fit in `budget`
/// tokens, moved back so it never starts with a tool result (its call comes
/// along). Never before `head`.
pub fn tail_start(messages: &[Message], head: usize, budget: usize) -> usize {
    let mut start = messages.len();
    let mut used = 0;
    while start > head {
        let cost = message_tokens(&messages[start - 1]);
        if used + cost > budget && start < messages.len() {
            break;
        }
        used += cost;
        start -= 1;
    }
    while start > head && start < messages.len() && messages[start].role == Role::Tool {
        start -= 1;
    }
    start.max(head)
}

/// Replaces the content of tool results in `range` by [`PRUNED_OUTPUT`];
/// returns how many were replaced.
pub fn prune_tool_outputs(messages: &mut [Message], range: std::ops::Range<usize>) -> usize {
    let mut pruned = 0;
    for message in &mut messages[range] {
        if message.role == Role::Tool
            && message.content != PRUNED_OUTPUT
            && message.content.len() > PRUNED_OUTPUT.len()
        {
            message.content = PRUNED_OUTPUT.to_owned();
            pruned += 1;
        }
    }
    pruned
}

/// Tool outputs and arguments are not cut below this many bytes.
pub const MIN_SHRUNK_RESULT: usize = 2_000;

/// Cuts the largest tool output or tool-call arguments anywhere in `messages` — the protected
/// head and tail too. A result keeps its head and its tail (where a saved output's path is
/// named) around a note, at half its length; arguments (JSON, so not cut in two) become a small
/// object saying what was cut. False when nothing is longer than [`MIN_SHRUNK_RESULT`].
pub fn shrink_largest_tool_result(messages: &mut [Message]) -> bool {
    let largest_result = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Tool)
        .map(|(i, m)| (m.content.len(), i, None))
        .max();
    let largest_arguments = messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            m.tool_calls
                .iter()
                .enumerate()
                .map(move |(c, call)| (call.arguments.len(), i, Some(c)))
        })
        .max();
    let Some((len, index, call)) = largest_result.max(largest_arguments) else {
        return false;
    };
    if len <= MIN_SHRUNK_RESULT {
        return false;
    }
    let message = &mut messages[index];
    match call {
        Some(call) => {
            message.tool_calls[call].arguments =
                format!(r#"{{"cut":"{len} bytes of arguments cut to fit the context window"}}"#);
        }
        None => {
            let content = &message.content;
            let keep = len / 2;
            let head_end = content.floor_char_boundary(keep * 2 / 3);
            let tail_start = content.ceil_char_boundary(len - keep / 3);
            let cut = tail_start - head_end;
            message.content = format!(
                "{}\n[… {cut} bytes of this tool result cut to fit the context window …]\n{}",
                &content[..head_end],
                &content[tail_start..]
            );
        }
    }
    true
}

/// The middle as text for the summariser.
pub fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool result",
        };
        out.push_str(&format!("## {role}\n{}\n", message.content));
        for call in &message.tool_calls {
            out.push_str(&format!("(calls {} {})\n", call.name, call.arguments));
        }
    }
    out
}

/// The user's requests (first line of each, system notes left out) and the
/// names of the tools used, for summaries made without a model.
pub(crate) fn requests_and_tools(messages: &[Message]) -> (Vec<String>, Vec<&str>) {
    let requests = messages
        .iter()
        .filter(|m| m.role == Role::User && !m.content.starts_with("[System note]"))
        .map(|m| {
            m.content
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect::<String>()
        })
        .collect();
    let mut tools: Vec<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.name.as_str()))
        .collect();
    tools.sort_unstable();
    tools.dedup();
    (requests, tools)
}

/// A summary made without a model: the user's requests and the tools used.
pub fn fallback_summary(messages: &[Message]) -> String {
    let (requests, tools) = requests_and_tools(messages);
    format!(
        "Goal and requests so far:\n{}\nTools used: {}.",
        if requests.is_empty() {
            "- (none recorded)".to_owned()
        } else {
            requests
                .iter()
                .map(|r| format!("- {r}"))
                .collect::<Vec<_>>()
                .join("\n")
        },
        if tools.is_empty() {
            "none".to_owned()
        } else {
            tools.join(", ")
        }
    )
}

/// `head + summary + tail`, with the summary in a role that keeps user and
/// assistant turns alternating (it joins the first tail message when that
/// has the same role).
pub fn assemble(head: &[Message], summary: &str, tail: &[Message]) -> Vec<Message> {
    let text = format!("{SUMMARY_PREFIX}\n\n{summary}");
    let role = match head.last().map(|m| m.role) {
        Some(Role::User) => Role::Assistant,
        _ => Role::User,
    };
    let mut out = head.to_vec();
    match tail.first() {
        Some(first) if first.role == role => {
            let mut merged = first.clone();
            merged.content = if merged.content.is_empty() {
                text
            } else {
                format!("{text}\n\n{}", merged.content)
            };
            out.push(merged);
            out.extend_from_slice(&tail[1..]);
        }
        _ => {
            out.push(Message {
                role,
                content: text,
                ..Message::default()
            });
            out.extend_from_slice(tail);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            }],
            ..Message::default()
        }
    }

    fn result(id: &str, text: &str) -> Message {
        Message {
            role: Role::Tool,
            content: text.into(),
            tool_call_id: Some(id.into()),
            ..Message::default()
        }
    }

    #[test]
    fn the_head_takes_the_results_of_its_calls_along() {
        let messages = vec![
            Message::user("a"),
            Message::assistant("b"),
            call("1"),
            result("1", "x"),
            Message::user("c"),
        ];
        assert_eq!(head_end(&messages), 4);
    }

    #[test]
    fn the_tail_never_starts_with_a_tool_result() {
        let big = "y".repeat(4000);
        let messages = vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            call("1"),
            result("1", &big),
            call("2"),
            result("2", "small"),
        ];
        let start = tail_start(&messages, 3, 10);
        assert_eq!(start, 5, "the last call comes with its result");
        assert_ne!(messages[start].role, Role::Tool);
    }

    #[test]
    fn the_summary_keeps_roles_alternating() {
        let head = vec![Message::user("task")];
        let tail = vec![Message::assistant("working"), Message::user("more")];
        let joined = assemble(&head, "did things", &tail);
        assert_eq!(joined.len(), 3);
        assert_eq!(joined[1].role, Role::Assistant);
        assert!(
            joined[1].content.starts_with(SUMMARY_PREFIX) && joined[1].content.ends_with("working")
        );
        let separate = assemble(&head, "did things", &[Message::user("more")]);
        assert_eq!(
            separate.iter().map(|m| m.role).collect::<Vec<_>>(),
            [Role::User, Role::Assistant, Role::User]
        );
    }

    #[test]
    fn the_largest_tool_result_is_halved_wherever_it_is() {
        let big = format!("{}{}", "a".repeat(10_000), "saved at /tmp/out.txt");
        let mut messages = vec![
            Message::user("read it"),
            call("1"),
            result("1", &big),
            call("2"),
            result("2", &"b".repeat(3_000)),
        ];
        assert!(shrink_largest_tool_result(&mut messages));
        let shrunk = &messages[2].content;
        assert!(shrunk.len() < big.len() / 2 + 100, "{}", shrunk.len());
        assert!(shrunk.starts_with("aaa") && shrunk.ends_with("saved at /tmp/out.txt"));
        assert!(shrunk.contains("cut to fit the context window"));
        assert_eq!(messages[4].content.len(), 3_000, "only the largest");
        let mut small = vec![result("1", "short")];
        assert!(!shrink_largest_tool_result(&mut small));
        // Large arguments of an earlier call become a small, valid JSON object.
        let mut written = vec![Message {
            role: Role::Assistant,
            tool_calls: vec![ToolCall {
                id: "w".into(),
                name: "write_file".into(),
                arguments: serde_json::json!({ "content": "c".repeat(9_000) }).to_string(),
            }],
            ..Message::default()
        }];
        assert!(shrink_largest_tool_result(&mut written));
        let arguments = &written[0].tool_calls[0].arguments;
        assert!(
            serde_json::from_str::<serde_json::Value>(arguments).is_ok(),
            "{arguments}"
        );
        assert!(arguments.len() < 100);
    }

    #[test]
    fn the_fallback_lists_requests_and_tools() {
        let messages = vec![
            Message::user("fix the build\nmore"),
            call("1"),
            result("1", "ok"),
        ];
        let summary = fallback_summary(&messages);
        assert!(
            summary.contains("- fix the build") && summary.contains("read_file"),
            "{summary}"
        );
    }
}
