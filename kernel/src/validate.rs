//! Checks a model's tool calls before dispatch, turning every mistake into a
//! result text that tells the model exactly what to fix.

use crate::message::{ToolCall, ToolResult, ToolSpec};
use crate::ports::{HookSession, HookVerdict, Hooks, ValidatedCall};

/// Gives every call of one reply its own id: a repeated (or empty) id becomes
/// `id-2`, `id-3`, … (`call-1`, … for empty ones), so each call is paired with
/// exactly one result. Models do repeat ids; without this both calls ran but
/// only one result reached the conversation. Returns whether anything changed.
pub fn dedupe_call_ids(calls: &mut [ToolCall]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut changed = false;
    for i in 0..calls.len() {
        let Some(call) = calls.get(i) else { break };
        if !call.id.is_empty() && seen.insert(call.id.clone()) {
            continue;
        }
        let base = if call.id.is_empty() {
            "call"
        } else {
            call.id.as_str()
        };
        // Later calls' original ids are taken too, so a rename never collides with one.
        let taken = |id: &str| seen.contains(id) || calls.iter().any(|c| c.id == id);
        let mut n = if call.id.is_empty() { 1 } else { 2 };
        let id = loop {
            let candidate = format!("{base}-{n}");
            if !taken(&candidate) {
                break candidate;
            }
            n += 1;
        };
        seen.insert(id.clone());
        if let Some(call) = calls.get_mut(i) {
            call.id = id;
        }
        changed = true;
    }
    changed
}

/// What the pre-tool hooks make of a validated call: the call to run (a
/// rewrite is validated like the model's own arguments) or its error result.
/// The loop and every other route to the tools (scripts, sub-agents) share it,
/// so a veto means the same wherever a call comes from.
pub async fn apply_pre_tool(
    hooks: &dyn Hooks,
    session: HookSession<'_>,
    valid: ValidatedCall,
    tools: &[ToolSpec],
) -> Result<ValidatedCall, ToolResult> {
    match hooks.pre_tool(session, &valid).await {
        HookVerdict::Continue => Ok(valid),
        HookVerdict::Block(reason) => {
            Err(ToolResult::error(&valid.call, format!("Blocked: {reason}")))
        }
        HookVerdict::Rewrite(arguments) => {
            let call = ToolCall {
                arguments: arguments.to_string(),
                ..valid.call.clone()
            };
            validate_call(&call, tools).map_err(|why| {
                ToolResult::error(&valid.call, format!("A hook rewrote the arguments: {why}"))
            })
        }
    }
}

/// Puts each of `runnable`'s results from `done` into the slot whose call id
/// (`slot_ids`, in the same order as `slots`) matches; a call the tools gave
/// no result for gets an error result.
pub fn place_results(
    slots: &mut [Option<ToolResult>],
    slot_ids: &[&str],
    runnable: &[ValidatedCall],
    mut done: Vec<ToolResult>,
) {
    for valid in runnable {
        let index = slot_ids.iter().position(|id| *id == valid.call.id);
        let found = done.iter().position(|r| r.call_id == valid.call.id);
        let result = match found {
            Some(at) => done.swap_remove(at),
            None => ToolResult::error(&valid.call, "the tool returned no result"),
        };
        if let Some(slot) = index.and_then(|i| slots.get_mut(i)) {
            *slot = Some(result);
        }
    }
}

/// Validates one call against the session's tool list. `Err` holds the text of
/// the error result to send back to the model.
pub fn validate_call(call: &ToolCall, tools: &[ToolSpec]) -> Result<ValidatedCall, String> {
    let Some(spec) = tools.iter().find(|t| t.name == call.name) else {
        let available: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let available = if available.is_empty() {
            "(none)".to_owned()
        } else {
            available.join(", ")
        };
        return Err(format!(
            "Unknown tool '{}'. Available tools: {available}. Call one of these by its exact name.",
            call.name
        ));
    };
    let text = call.arguments.trim();
    // Many models send "" for a tool without arguments.
    let arguments = if text.is_empty() {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str::<serde_json::Value>(text).map_err(|err| {
            format!(
                "Invalid JSON in the arguments of tool '{}': {err}. Send the arguments as one \
                 JSON object matching the tool's schema.",
                call.name
            )
        })?
    };
    let Some(object) = arguments.as_object() else {
        return Err(format!(
            "The arguments of tool '{}' must be a JSON object, not {}.",
            call.name,
            json_kind(&arguments)
        ));
    };
    let missing: Vec<&str> = spec
        .parameters
        .get("required")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str())
        .filter(|name| !object.contains_key(*name))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "Missing required argument(s) for tool '{}': {}.",
            call.name,
            missing.join(", ")
        ));
    }
    Ok(ValidatedCall {
        call: call.clone(),
        arguments,
    })
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "read_file".into(),
            description: "read".into(),
            parameters: json!({"type": "object", "required": ["path"]}),
            refunds_iteration: false,
        }]
    }

    fn with_ids(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                ..call("read_file", "{}")
            })
            .collect()
    }

    fn ids(calls: &[ToolCall]) -> Vec<&str> {
        calls.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn repeated_and_empty_call_ids_are_renamed_uniquely() {
        let mut calls = with_ids(&["a", "b"]);
        assert!(!dedupe_call_ids(&mut calls), "distinct ids stay");
        assert_eq!(ids(&calls), ["a", "b"]);

        let mut calls = with_ids(&["a", "a", "a", "b"]);
        assert!(dedupe_call_ids(&mut calls));
        assert_eq!(ids(&calls), ["a", "a-2", "a-3", "b"]);

        // A rename never takes an id a later call already has.
        let mut calls = with_ids(&["a", "a", "a-2"]);
        dedupe_call_ids(&mut calls);
        assert_eq!(ids(&calls), ["a", "a-3", "a-2"]);

        let mut calls = with_ids(&["", "", "call-1"]);
        dedupe_call_ids(&mut calls);
        assert_eq!(ids(&calls), ["call-2", "call-3", "call-1"]);
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn unknown_tool_lists_available_names() {
        let err = validate_call(&call("rm_everything", "{}"), &tools()).unwrap_err();
        assert!(err.contains("Unknown tool 'rm_everything'"), "{err}");
        assert!(err.contains("Available tools: read_file"), "{err}");
    }

    #[test]
    fn invalid_json_and_non_objects_are_explained() {
        let err = validate_call(&call("read_file", "{\"path\": "), &tools()).unwrap_err();
        assert!(
            err.starts_with("Invalid JSON in the arguments of tool 'read_file'"),
            "{err}"
        );
        let err = validate_call(&call("read_file", "[1]"), &tools()).unwrap_err();
        assert!(err.contains("must be a JSON object, not an array"), "{err}");
    }

    #[test]
    fn missing_required_arguments_are_named() {
        let err = validate_call(&call("read_file", "{\"offset\": 3}"), &tools()).unwrap_err();
        assert_eq!(
            err,
            "Missing required argument(s) for tool 'read_file': path."
        );
    }

    #[test]
    fn good_calls_are_parsed_and_empty_arguments_mean_empty_object() {
        let ok = validate_call(&call("read_file", "{\"path\": \"a\"}"), &tools()).unwrap();
        assert_eq!(ok.arguments, json!({"path": "a"}));
        let no_required = vec![ToolSpec {
            name: "todo".into(),
            description: "t".into(),
            parameters: json!({"type": "object"}),
            refunds_iteration: false,
        }];
        let ok = validate_call(&call("todo", "  "), &no_required).unwrap();
        assert_eq!(ok.arguments, json!({}));
    }
}
