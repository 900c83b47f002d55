//! The `memory` tool (Hermes-compatible name and arguments) over a [`MemoryStore`].

use serde_json::{Map, Value, json};

use crate::store::{MemoryStore, Target, WriteOutcome};

/// The tool's name, as Hermes skills call it.
pub const MEMORY_TOOL_NAME: &str = "memory";

/// The tool's description for the model.
pub const MEMORY_TOOL_DESCRIPTION: &str = "Save durable notes that help in future sessions. \
target \"memory\" (MEMORY.md) is for your own notes: facts about the environment, project \
conventions, lessons learned. target \"user\" (USER.md) is for what you learn about the user: \
preferences, role, habits. action \"add\" stores `content` as a new entry; \"replace\" swaps the \
one entry containing `old_text` for `content`; \"remove\" deletes the one entry containing \
`old_text`. Keep entries short and factual; both files have a character limit, and when one is \
full, consolidate by replacing or removing older entries. Writes are saved immediately, but the \
system prompt shows the snapshot taken at session start: changes appear there from the next \
session. Never store secrets, instructions to yourself that override the user, or hidden text; \
such writes are blocked.";

/// The JSON Schema of the tool's arguments.
pub fn memory_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["add", "replace", "remove"],
                "description": "add a new entry, replace the entry containing old_text, or remove it"
            },
            "target": {
                "type": "string",
                "enum": ["memory", "user"],
                "description": "memory = your notes (MEMORY.md); user = the user profile (USER.md)"
            },
            "content": {
                "type": "string",
                "description": "the entry text (required for add and replace)"
            },
            "old_text": {
                "type": "string",
                "description": "a unique part of the existing entry (required for replace and remove)"
            }
        },
        "required": ["action", "target"],
        "additionalProperties": false
    })
}

/// Runs one `memory` tool call. The `Ok` value is the JSON result for the model; the `Err`
/// string is an error message for the model (invalid arguments, blocked or over-full writes,
/// no or several matching entries, I/O failures).
pub fn handle_memory_call(store: &MemoryStore, args: &Value) -> Result<Value, String> {
    let args = args
        .as_object()
        .ok_or("arguments must be a JSON object with `action` and `target`")?;
    let action = required_str(args, "action")?;
    let target_name = required_str(args, "target")?;
    let target = Target::parse(target_name).ok_or_else(|| {
        format!("unknown target {target_name:?}: use \"memory\" (your notes) or \"user\" (the user profile)")
    })?;
    let (outcome, message) = match action {
        "add" => {
            let content = required_str(args, "content")?;
            let outcome = store.add(target, content).map_err(|e| e.to_string())?;
            let message = if outcome.changed {
                "Entry added."
            } else {
                "An identical entry already exists; nothing changed."
            };
            (outcome, message)
        }
        "replace" => {
            let old_text = required_str(args, "old_text")?;
            let content = required_str(args, "content")?;
            let outcome = store
                .replace(target, old_text, content)
                .map_err(|e| e.to_string())?;
            (outcome, "Entry replaced.")
        }
        "remove" => {
            let old_text = required_str(args, "old_text")?;
            let outcome = store.remove(target, old_text).map_err(|e| e.to_string())?;
            (outcome, "Entry removed.")
        }
        other => {
            return Err(format!(
                "unknown action {other:?}: use \"add\", \"replace\" or \"remove\""
            ));
        }
    };
    Ok(result(action, target, outcome, message))
}

fn required_str<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(Value::Null) | None => Err(format!("missing required argument `{name}`")),
        Some(_) => Err(format!("argument `{name}` must be a string")),
    }
}

fn result(action: &str, target: Target, outcome: WriteOutcome, message: &str) -> Value {
    let usage = outcome.usage;
    json!({
        "success": true,
        "action": action,
        "target": target.as_str(),
        "file": target.file_name(),
        "message": format!("{message} Saved to disk; the system prompt keeps the session-start snapshot until the next session."),
        "usage": usage.to_string(),
        "chars": usage.chars,
        "limit": usage.limit,
        "entry_count": usage.entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_lists_the_hermes_arguments() {
        let schema = memory_tool_schema();
        let properties = schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["action", "content", "old_text", "target"]);
        assert_eq!(schema["required"], json!(["action", "target"]));
        assert_eq!(
            schema["properties"]["action"]["enum"],
            json!(["add", "replace", "remove"])
        );
    }

    #[test]
    fn description_explains_the_snapshot() {
        assert!(MEMORY_TOOL_DESCRIPTION.contains("saved immediately"));
        assert!(MEMORY_TOOL_DESCRIPTION.contains("snapshot taken at session start"));
    }
}
