//! The tools the server offers: their names, descriptions and schemas, and the
//! checked arguments each one takes.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// `run_prompt`.
pub const RUN_PROMPT: &str = "run_prompt";
/// `list_sessions`.
pub const LIST_SESSIONS: &str = "list_sessions";
/// `search_sessions`.
pub const SEARCH_SESSIONS: &str = "search_sessions";
/// `read_session`.
pub const READ_SESSION: &str = "read_session";

/// Most sessions one `list_sessions` call returns.
pub const MAX_LIST: u64 = 200;
/// Most hits one `search_sessions` call returns.
pub const MAX_HITS: u64 = 100;
/// Most messages one `read_session` call returns.
pub const MAX_MESSAGES: u64 = 200;
/// Longest prompt accepted, in bytes (the HTTP body cap bounds it too).
pub const MAX_PROMPT_BYTES: usize = 256 * 1024;

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        // Every schema below is an object literal.
        _ => Arc::new(JsonObject::new()),
    }
}

fn usage_schema() -> Value {
    json!({
        "type": "object",
        "description": "What the run cost: tokens over all its model calls, and USD when prices are known.",
        "properties": {
            "model_calls": {"type": "integer"},
            "input_tokens": {"type": "integer"},
            "output_tokens": {"type": "integer"},
            "cache_read_tokens": {"type": "integer"},
            "cache_write_tokens": {"type": "integer"},
            "cost_usd": {"type": "number"}
        },
        "required": ["model_calls", "input_tokens", "output_tokens", "cost_usd"]
    })
}

fn session_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "title": {"type": ["string", "null"]},
            "source": {"type": "string", "description": "The surface that started it: cli, mcp, cron, …"},
            "model": {"type": "string"},
            "cwd": {"type": ["string", "null"]},
            "parent_session_id": {"type": ["string", "null"]},
            "created_at": {"type": "string", "description": "RFC 3339, UTC"},
            "updated_at": {"type": "string", "description": "RFC 3339, UTC"},
            "message_count": {"type": "integer"},
            "cost_usd": {"type": "number"},
            "preview": {"type": ["string", "null"], "description": "The start of the first user message"}
        },
        "required": ["id", "source", "model", "created_at", "updated_at", "message_count"]
    })
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<Tool> {
    vec![
        run_prompt(),
        list_sessions(),
        search_sessions(),
        read_session(),
    ]
}

fn run_prompt() -> Tool {
    Tool::new(
        RUN_PROMPT,
        "Runs a prompt as a Talaria agent session and returns the agent's final answer. The agent \
         can use its tools (files, terminal, web, memory, skills) in the given working directory; \
         commands that need approval are refused, since nobody is there to approve them. Returns \
         the answer, the session id (pass it as session_id to continue the same conversation) \
         and the usage. Long runs report progress when the request carries a progress token and \
         stop when the request is cancelled.",
        object(json!({
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The task or question for the agent, in plain language."
                },
                "session_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Continue this earlier session (an id from run_prompt, list_sessions or search_sessions; a unique prefix is enough). Omit to start a new session."
                },
                "cwd": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Absolute path of an existing directory the session works in. Default: the directory the server was started in."
                }
            },
            "required": ["prompt"],
            "additionalProperties": false
        })),
    )
    .with_title("Run a prompt")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The agent's final answer (or its summary when a budget ran out)."},
            "session_id": {"type": "string", "description": "The session that holds the conversation; pass it back as session_id to continue."},
            "status": {"type": "string", "enum": ["answered", "budget_exhausted"]},
            "usage": usage_schema(),
            "notices": {
                "type": "array",
                "items": {"type": "string"},
                "description": "What the agent's assembly reported (plugins left out and why, a session that will not be saved, …); absent when there is nothing to say."
            }
        },
        "required": ["answer", "session_id", "status", "usage"]
    })))
    .with_annotations(
        ToolAnnotations::with_title("Run a prompt")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    )
}

fn list_sessions() -> Tool {
    Tool::new(
        LIST_SESSIONS,
        "Lists past Talaria sessions of this profile, most recently active first, with their \
         title or the start of their first message, model, working directory, size and cost.",
        object(json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST, "default": 20, "description": "At most this many sessions."},
                "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Skip this many of the most recent sessions first (for paging)."}
            },
            "additionalProperties": false
        })),
    )
    .with_title("List sessions")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "sessions": {"type": "array", "items": session_schema()},
            "offset": {"type": "integer"},
            "more": {"type": "boolean", "description": "Whether older sessions follow (call again with a larger offset)."}
        },
        "required": ["sessions", "offset", "more"]
    })))
    .with_annotations(read_only("List sessions"))
}

fn search_sessions() -> Tool {
    Tool::new(
        SEARCH_SESSIONS,
        "Searches the messages of past Talaria sessions (full text: every word must match; \
         \"quoted text\" is a phrase). Returns the best matches first, each with its session \
         id, message number and the text around the match (matches wrapped in **).",
        object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Words to find."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS, "default": 20, "description": "At most this many matches."}
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    )
    .with_title("Search sessions")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "hits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "session_id": {"type": "string"},
                        "message_seq": {"type": "integer", "description": "The message's number in its session, from 1 (read_session's offset is this minus 1)."},
                        "role": {"type": "string"},
                        "snippet": {"type": "string"},
                        "created_at": {"type": "string"}
                    },
                    "required": ["session_id", "message_seq", "role", "snippet", "created_at"]
                }
            }
        },
        "required": ["hits"]
    })))
    .with_annotations(read_only("Search sessions"))
}

fn read_session() -> Tool {
    Tool::new(
        READ_SESSION,
        "Reads one past Talaria session: its details and its messages in order (user prompts, \
         assistant answers and tool calls, tool results), a page at a time. Secrets in the \
         text are redacted unless the profile turned redaction off.",
        object(json!({
            "type": "object",
            "properties": {
                "session_id": {"type": "string", "minLength": 1, "description": "The session's id (a unique prefix is enough)."},
                "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Skip this many messages first."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_MESSAGES, "default": 50, "description": "At most this many messages."}
            },
            "required": ["session_id"],
            "additionalProperties": false
        })),
    )
    .with_title("Read a session")
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "session": session_schema(),
            "messages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "seq": {"type": "integer"},
                        "role": {"type": "string", "enum": ["system", "user", "assistant", "tool"]},
                        "content": {"type": "string"},
                        "tool_calls": {"type": "array", "items": {"type": "object"}},
                        "tool_name": {"type": "string"},
                        "is_error": {"type": "boolean"},
                        "created_at": {"type": "string"}
                    },
                    "required": ["seq", "role", "content", "created_at"]
                }
            },
            "offset": {"type": "integer"},
            "total": {"type": "integer", "description": "Messages in the session."},
            "more": {"type": "boolean"}
        },
        "required": ["session", "messages", "offset", "total", "more"]
    })))
    .with_annotations(read_only("Read a session"))
}

fn read_only(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// Arguments that do not fit a tool's schema: the message says which and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadArguments(pub String);

/// A tool's arguments, read with the checks its schema states (clients need not
/// validate before sending).
pub struct Arguments<'a> {
    tool: &'a str,
    map: JsonObject,
}

impl<'a> Arguments<'a> {
    /// Checks that only `known` names are present.
    pub fn new(
        tool: &'a str,
        map: Option<JsonObject>,
        known: &[&str],
    ) -> Result<Self, BadArguments> {
        let map = map.unwrap_or_default();
        if let Some(unknown) = map.keys().find(|key| !known.contains(&key.as_str())) {
            return Err(BadArguments(format!(
                "{tool}: unknown argument '{unknown}' (it takes: {})",
                known.join(", ")
            )));
        }
        Ok(Self { tool, map })
    }

    /// A string argument; absent or null is `None`, an empty or non-string value an error.
    pub fn string(&self, name: &str) -> Result<Option<String>, BadArguments> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text.clone())),
            Some(Value::String(_)) => Err(BadArguments(format!(
                "{}: '{name}' must not be empty",
                self.tool
            ))),
            Some(other) => Err(BadArguments(format!(
                "{}: '{name}' must be a string, not {}",
                self.tool,
                kind(other)
            ))),
        }
    }

    /// A required string argument.
    pub fn required_string(&self, name: &str) -> Result<String, BadArguments> {
        self.string(name)?
            .ok_or_else(|| BadArguments(format!("{}: '{name}' is required", self.tool)))
    }

    /// An integer argument within `min..=max`, `default` when absent.
    pub fn integer(
        &self,
        name: &str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, BadArguments> {
        let value = match self.map.get(name) {
            None | Some(Value::Null) => return Ok(default),
            Some(value) => value,
        };
        // 5.0 is accepted as 5: some clients send every number as a float.
        let number = value
            .as_u64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| {
                BadArguments(format!(
                    "{}: '{name}' must be a whole number from {min} to {max}, not {value}",
                    self.tool
                ))
            })?;
        if !(min..=max).contains(&number) {
            return Err(BadArguments(format!(
                "{}: '{name}' must be from {min} to {max}, not {number}",
                self.tool
            )));
        }
        Ok(number)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Option<JsonObject> {
        match value {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn arguments_are_checked_with_clear_messages() {
        let unknown = Arguments::new("t", args(json!({"x": 1})), &["a"]).err();
        assert_eq!(
            unknown,
            Some(BadArguments("t: unknown argument 'x' (it takes: a)".into()))
        );
        let a = Arguments::new(
            "t",
            args(json!({"a": 5.0, "s": 3, "e": " "})),
            &["a", "s", "e"],
        )
        .map_err(|e| e.0);
        let Ok(a) = a else {
            panic!("valid arguments");
        };
        assert_eq!(a.integer("a", 1, 1, 10), Ok(5));
        assert_eq!(a.integer("missing", 7, 1, 10), Ok(7));
        assert!(a.integer("a", 1, 6, 10).is_err());
        assert_eq!(
            a.string("s").err().map(|e| e.0),
            Some("t: 's' must be a string, not a number".into())
        );
        assert_eq!(
            a.required_string("e").err().map(|e| e.0),
            Some("t: 'e' must not be empty".into())
        );
        assert_eq!(
            a.required_string("nope").err().map(|e| e.0),
            Some("t: 'nope' is required".into())
        );
    }

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        for tool in all() {
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 40));
            assert!(tool.output_schema.is_some());
        }
    }
}
