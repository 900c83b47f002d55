//! One finished item as a line of the output: the conversation in ShareGPT
//! form as Hermes writes it for training (`system`, `human`, `gpt` turns,
//! tool calls as `<tool_call>` blocks in the `gpt` turn, results as `tool`
//! turns of `<tool_response>` blocks; `tools` the offered tools as a JSON
//! string), with what evaluation needs beside it: the exit, the error,
//! tokens, cost, model calls and time.

use serde::{Deserialize, Serialize};
use serde_json::json;
use talaria_kernel::{Message, Role, ToolSpec, Usage};

/// One turn of a ShareGPT conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// `system`, `human`, `gpt` or `tool`.
    pub from: String,
    pub value: String,
}

/// How an item ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// The model answered.
    Final,
    /// A budget ran out (iterations, time or cost); the answer is its summary.
    Budget,
    /// It ran longer than the item's time limit.
    Timeout,
    /// It failed: the agent could not be built or the model kept failing.
    Error,
}

/// Tokens of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl From<Usage> for Tokens {
    fn from(usage: Usage) -> Self {
        Self {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cache_read: usage.cache_read_tokens,
            cache_write: usage.cache_write_tokens,
        }
    }
}

/// One line of `trajectories.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    pub id: String,
    /// Whether the model gave its final answer.
    pub completed: bool,
    pub exit: ExitReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last answer (or budget summary), empty when there is none.
    pub answer: String,
    pub conversations: Vec<Turn>,
    /// The tools offered, as the JSON text of their function specs.
    pub tools: String,
    pub model: String,
    pub tokens: Tokens,
    pub cost_usd: f64,
    /// Model calls.
    pub api_calls: u32,
    pub tool_calls: u32,
    pub duration_ms: u64,
    /// The stored session (`talaria session show ID`).
    pub session_id: String,
    pub source: String,
}

/// The conversation of a session as ShareGPT turns.
pub fn sharegpt(system: &str, messages: &[Message]) -> Vec<Turn> {
    let mut turns = vec![Turn {
        from: "system".into(),
        value: system.to_owned(),
    }];
    let mut pending_results: Vec<String> = Vec::new();
    for message in messages {
        if message.role != Role::Tool && !pending_results.is_empty() {
            turns.push(tool_turn(&mut pending_results));
        }
        match message.role {
            Role::System => {}
            Role::User => turns.push(Turn {
                from: "human".into(),
                value: message.content.clone(),
            }),
            Role::Assistant => turns.push(Turn {
                from: "gpt".into(),
                value: gpt_value(message),
            }),
            Role::Tool => pending_results.push(tool_response(message)),
        }
    }
    if !pending_results.is_empty() {
        turns.push(tool_turn(&mut pending_results));
    }
    turns
}

/// The assistant's reasoning, text and calls, as Hermes writes them.
fn gpt_value(message: &Message) -> String {
    let mut parts = Vec::new();
    if let Some(reasoning) = message.reasoning.as_deref().filter(|r| !r.is_empty()) {
        parts.push(format!("<think>\n{reasoning}\n</think>"));
    }
    if !message.content.is_empty() {
        parts.push(message.content.clone());
    }
    for call in &message.tool_calls {
        // Arguments the model sent as JSON are nested as JSON; anything else as text.
        let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .unwrap_or_else(|_| json!(call.arguments));
        let block = json!({"name": call.name, "arguments": arguments});
        parts.push(format!("<tool_call>\n{block}\n</tool_call>"));
    }
    parts.join("\n")
}

fn tool_response(message: &Message) -> String {
    let block = json!({
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "content": message.content,
    });
    format!("<tool_response>\n{block}\n</tool_response>")
}

/// The results of one round of calls: one `tool` turn.
fn tool_turn(results: &mut Vec<String>) -> Turn {
    Turn {
        from: "tool".into(),
        value: std::mem::take(results).join("\n"),
    }
}

/// The offered tools as OpenAI function specs, as JSON text.
pub fn tools_json(tools: &[ToolSpec]) -> String {
    let specs: Vec<serde_json::Value> = tools
        .iter()
        .map(|tool| {
            json!({"type": "function", "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }})
        })
        .collect();
    serde_json::Value::Array(specs).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use talaria_kernel::{ToolCall, ToolResult};

    use super::*;

    #[test]
    fn a_session_becomes_sharegpt_turns_with_calls_and_results_in_hermes_blocks() {
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: r#"{"path": "a.txt"}"#.into(),
        };
        let mut asking = Message::assistant("Let me look.");
        asking.reasoning = Some("Two files to read.".into());
        asking.tool_calls = vec![call("c1", "read_file"), call("c2", "read_file")];
        let messages = vec![
            Message::user("What is in a.txt?"),
            asking,
            Message::tool_result(&ToolResult::ok(&call("c1", "read_file"), "hello")),
            Message::tool_result(&ToolResult::error(&call("c2", "read_file"), "no such file")),
            Message::assistant("It says hello."),
        ];
        let turns = sharegpt("You are Talaria.", &messages);
        let froms: Vec<&str> = turns.iter().map(|t| t.from.as_str()).collect();
        assert_eq!(froms, ["system", "human", "gpt", "tool", "gpt"]);
        let gpt = &turns[2].value;
        assert!(
            gpt.starts_with("<think>\nTwo files to read.\n</think>\nLet me look.\n<tool_call>\n"),
            "{gpt}"
        );
        let calls: Vec<serde_json::Value> = gpt
            .split("<tool_call>\n")
            .skip(1)
            .map(|block| {
                let json = block.split("</tool_call>").next().unwrap();
                serde_json::from_str(json.trim()).unwrap()
            })
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0],
            json!({"name": "read_file", "arguments": {"path": "a.txt"}})
        );
        let results = turns[3].value.matches("<tool_response>").count();
        assert_eq!(results, 2, "both results in one tool turn");
        assert!(turns[3].value.contains(r#""content":"no such file""#));
        assert!(turns[3].value.contains(r#""tool_call_id":"c2""#));
        assert_eq!(turns[4].value, "It says hello.");
    }
}
