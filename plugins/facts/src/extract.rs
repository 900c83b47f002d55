//! Extraction (`extract = "true"`): the auxiliary model reads a finished turn
//! and lists the durable facts in it as JSON lines, which become facts.

use serde_json::Value;
use talaria_plugin_sdk::{Message, Role, auxiliary};

/// The model's instructions.
pub const INSTRUCTIONS: &str = "You pick out durable facts from one turn of a conversation \
between a user and an AI assistant, for a long-term fact store. A durable fact stays true and \
useful in future sessions: the user's preferences, background and habits, decisions made, and \
lasting details of their projects, tools and environment. Skip small talk, one-off requests, \
the progress of the task at hand, what the assistant merely suggested, and secrets (passwords, \
keys, tokens). Write each fact as one short, self-contained sentence in the third person \
(\"The user prefers ...\", \"The project uses ...\"). Answer with one JSON object per line and \
nothing else: {\"content\": \"...\", \"category\": \"user_pref\" or \"project\" or \"tool\" or \
\"general\", \"tags\": [\"...\"]}. If the turn holds no durable fact, answer with nothing.";

/// Most tokens the model may answer with.
pub const MAX_TOKENS: u32 = 600;
/// Most facts taken from one turn.
pub const MAX_FACTS_PER_TURN: usize = 8;
/// Longest message given to the model, in characters (its head).
const MAX_MESSAGE_CHARS: usize = 6000;

/// Asks a model: the auxiliary model in the component, a script in tests.
pub trait Model {
    /// The answer to `prompt` under `instructions`.
    fn complete(&self, instructions: &str, prompt: &str, max_tokens: u32)
    -> Result<String, String>;
}

/// The session's auxiliary model (needs `auxiliary-model = true`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostModel;

impl Model for HostModel {
    fn complete(
        &self,
        instructions: &str,
        prompt: &str,
        max_tokens: u32,
    ) -> Result<String, String> {
        auxiliary::complete(instructions, prompt, max_tokens).map_err(|e| e.to_string())
    }
}

/// A fact the model found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub content: String,
    pub category: Option<String>,
    pub tags: Vec<String>,
}

/// The turn as the model reads it: its user and assistant messages (tool
/// calls and results are working material, not facts). `None` when it has
/// no such text.
pub fn transcript(turn: &[Message]) -> Option<String> {
    let lines: Vec<String> = turn
        .iter()
        .filter_map(|message| {
            let speaker = match message.role {
                Role::User => "User",
                Role::Assistant => "Assistant",
                Role::System | Role::Tool => return None,
            };
            let text = message.content.trim();
            if text.is_empty() {
                return None;
            }
            let text = match text.char_indices().nth(MAX_MESSAGE_CHARS) {
                Some((end, _)) => format!("{} [...]", &text[..end]),
                None => text.to_owned(),
            };
            Some(format!("{speaker}: {text}"))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n\n"))
}

/// The facts in the model's answer: one JSON object per line (a JSON array
/// of them is read too). Lines that are not such an object, or have no
/// content, are skipped; at most [`MAX_FACTS_PER_TURN`].
pub fn parse(answer: &str) -> Vec<Candidate> {
    let values: Vec<Value> = match serde_json::from_str::<Value>(answer.trim()) {
        Ok(Value::Array(items)) => items,
        _ => answer
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
            .flat_map(|value| match value {
                Value::Array(items) => items,
                other => vec![other],
            })
            .collect(),
    };
    values
        .iter()
        .filter_map(candidate)
        .take(MAX_FACTS_PER_TURN)
        .collect()
}

fn candidate(value: &Value) -> Option<Candidate> {
    let content = value.get("content")?.as_str()?.trim();
    if content.is_empty() {
        return None;
    }
    let category = value
        .get("category")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let tags = match value.get("tags") {
        Some(Value::Array(tags)) => tags
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(tags)) => tags.split(',').map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    Some(Candidate {
        content: content.to_owned(),
        category,
        tags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: Role, content: &str) -> Message {
        Message {
            role,
            content: content.into(),
            tool_call_id: None,
            name: None,
        }
    }

    #[test]
    fn the_transcript_keeps_what_the_user_and_assistant_said() {
        let turn = [
            message(Role::User, "I always use pnpm."),
            message(Role::Assistant, ""),
            message(Role::Tool, "{\"files\": 3}"),
            message(Role::Assistant, "Noted: pnpm it is."),
        ];
        assert_eq!(
            transcript(&turn).as_deref(),
            Some("User: I always use pnpm.\n\nAssistant: Noted: pnpm it is.")
        );
        assert_eq!(transcript(&[message(Role::Tool, "x")]), None);
        let long = "x".repeat(MAX_MESSAGE_CHARS + 5);
        let cut = transcript(&[message(Role::User, &long)]).unwrap_or_default();
        assert!(cut.ends_with("x [...]") && cut.len() < long.len() + 20);
    }

    #[test]
    fn json_lines_become_candidates_and_malformed_lines_are_skipped() {
        let answer = r#"{"content": "The user prefers pnpm", "category": "user_pref", "tags": ["js"]}
not json at all
{"content": "   "}
{"category": "project"}
```json
{"content": "The project deploys on Fridays", "tags": "deploy, schedule"}
["not", "an object"]
{"content": 42}"#;
        assert_eq!(
            parse(answer),
            [
                Candidate {
                    content: "The user prefers pnpm".into(),
                    category: Some("user_pref".into()),
                    tags: vec!["js".into()],
                },
                Candidate {
                    content: "The project deploys on Fridays".into(),
                    category: None,
                    tags: vec!["deploy".into(), " schedule".into()],
                },
            ]
        );
    }

    #[test]
    fn an_array_answer_and_an_empty_one_are_read() {
        let answer = "[\n {\"content\": \"a\"},\n {\"content\": \"b\"}\n]";
        assert_eq!(parse(answer).len(), 2);
        assert!(parse("").is_empty());
        assert!(parse("No durable facts here.").is_empty());
    }

    #[test]
    fn at_most_a_few_facts_come_from_one_turn() {
        let answer: String = (0..20)
            .map(|n| format!("{{\"content\": \"fact {n}\"}}\n"))
            .collect();
        assert_eq!(parse(&answer).len(), MAX_FACTS_PER_TURN);
    }
}
