//! Lazy tool schemas: with many tools, full JSON schemas dominate every
//! request. In lazy mode the model gets each tool's name and first sentence
//! with an open `{"type": "object"}` schema, plus `tool_schema`, which returns
//! full descriptions and schemas on demand. The tool list stays the same all
//! session (the cached prefix is untouched); schemas arrive as tool results.
//! Calls are still checked against the full schema before they run.

use serde::{Deserialize, Serialize};
use talaria_kernel::{ToolCall, ToolResult, ToolSpec, ValidatedCall};

/// The tool that hands out full schemas.
pub const TOOL_SCHEMA: &str = "tool_schema";
/// `auto` turns lazy schemas on from this many offered tools.
pub const AUTO_LAZY_THRESHOLD: usize = 16;
/// Longest one-line description in the compact list.
const SUMMARY_CHARS: usize = 160;

/// How tool schemas are offered (`tools.schemas` in config.yaml).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaMode {
    /// Every tool with its full description and schema (the default).
    #[default]
    Full,
    /// A compact index plus `tool_schema`.
    Lazy,
    /// Lazy from [`AUTO_LAZY_THRESHOLD`] tools on, full below.
    Auto,
}

impl SchemaMode {
    /// Whether `count` offered tools are shown lazily.
    pub fn is_lazy(self, count: usize) -> bool {
        match self {
            Self::Full => false,
            Self::Lazy => true,
            Self::Auto => count >= AUTO_LAZY_THRESHOLD,
        }
    }
}

/// The compact form of `spec`: name, first sentence, open schema.
pub fn compact(spec: &ToolSpec) -> ToolSpec {
    ToolSpec {
        name: spec.name.clone(),
        description: summary(&spec.description),
        parameters: serde_json::json!({ "type": "object" }),
        refunds_iteration: spec.refunds_iteration,
    }
}

fn summary(description: &str) -> String {
    let first_line = description.lines().next().unwrap_or_default().trim();
    let sentence = match first_line.find(". ") {
        Some(end) => &first_line[..=end],
        None => first_line,
    };
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS - 1).collect();
    format!("{cut}…")
}

/// The `tool_schema` tool itself.
pub fn schema_tool() -> ToolSpec {
    ToolSpec {
        name: TOOL_SCHEMA.to_owned(),
        description: "Tools are listed with one line each and no parameter schema, to keep \
                      requests small. Before using a tool for the first time, call this with its \
                      name (several at once if you like) to get its full description and the JSON \
                      schema of its arguments."
            .to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": { "type": "string" },
                    "description": "Tool names"
                }
            },
            "required": ["names"]
        }),
        refunds_iteration: false,
    }
}

/// Answers a `tool_schema` call from the full specs.
pub fn answer(call: &ValidatedCall, full: &[ToolSpec]) -> ToolResult {
    let names: Vec<&str> = call
        .arguments
        .get("names")
        .and_then(|n| n.as_array())
        .map(|names| names.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    if names.is_empty() {
        return ToolResult::error(
            &call.call,
            "Pass the tool names as an array, e.g. {\"names\": [\"read_file\"]}.",
        );
    }
    let mut found = serde_json::Map::new();
    let mut unknown = Vec::new();
    for name in names {
        match full.iter().find(|spec| spec.name == name) {
            Some(spec) => {
                found.insert(
                    spec.name.clone(),
                    serde_json::json!({
                        "description": spec.description,
                        "parameters": spec.parameters,
                    }),
                );
            }
            None => unknown.push(name),
        }
    }
    if !unknown.is_empty() {
        let available: Vec<&str> = full.iter().map(|s| s.name.as_str()).collect();
        found.insert(
            "unknown".to_owned(),
            serde_json::json!({
                "names": unknown,
                "available": available,
            }),
        );
    }
    ToolResult {
        call_id: call.call.id.clone(),
        name: call.call.name.clone(),
        content: serde_json::Value::Object(found).to_string(),
        is_error: false,
    }
}

/// Checks a call against its tool's full schema (the model only saw an open
/// one); the error tells the model how to get the schema.
pub fn check(call: &ToolCall, full: &[ToolSpec]) -> Result<(), String> {
    talaria_kernel::validate::validate_call(call, full)
        .map(|_| ())
        .map_err(|why| {
            format!(
                "{why} Call {TOOL_SCHEMA} with {{\"names\": [\"{}\"]}} for its parameters.",
                call.name
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file with line numbers. Long files are paged.\nMore.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
                "required": ["path"]
            }),
            refunds_iteration: false,
        }
    }

    fn call(name: &str, arguments: serde_json::Value) -> ValidatedCall {
        ValidatedCall {
            call: ToolCall {
                id: "c1".into(),
                name: name.into(),
                arguments: arguments.to_string(),
            },
            arguments,
        }
    }

    #[test]
    fn the_compact_form_keeps_the_first_sentence_and_opens_the_schema() {
        let small = compact(&spec());
        assert_eq!(small.description, "Read a text file with line numbers.");
        assert_eq!(small.parameters, serde_json::json!({"type": "object"}));
        let long = ToolSpec {
            description: "x".repeat(500),
            ..spec()
        };
        assert_eq!(compact(&long).description.chars().count(), SUMMARY_CHARS);
    }

    #[test]
    fn schemas_are_answered_and_unknown_names_listed() {
        let result = answer(
            &call(
                TOOL_SCHEMA,
                serde_json::json!({"names": ["read_file", "nope"]}),
            ),
            &[spec()],
        );
        assert!(!result.is_error);
        let value: serde_json::Value = serde_json::from_str(&result.content).unwrap();
        assert_eq!(value["read_file"]["parameters"]["required"][0], "path");
        assert_eq!(value["unknown"]["names"][0], "nope");
        assert!(answer(&call(TOOL_SCHEMA, serde_json::json!({})), &[spec()]).is_error);
    }

    #[test]
    fn calls_are_checked_against_the_full_schema() {
        let missing = call("read_file", serde_json::json!({"offset": 3}));
        let error = check(&missing.call, &[spec()]).unwrap_err();
        assert!(
            error.contains("path") && error.contains(TOOL_SCHEMA),
            "{error}"
        );
        assert!(
            check(
                &call("read_file", serde_json::json!({"path": "a"})).call,
                &[spec()]
            )
            .is_ok()
        );
    }

    #[test]
    fn auto_is_lazy_only_with_many_tools() {
        assert!(!SchemaMode::Auto.is_lazy(AUTO_LAZY_THRESHOLD - 1));
        assert!(SchemaMode::Auto.is_lazy(AUTO_LAZY_THRESHOLD));
        assert!(SchemaMode::Lazy.is_lazy(1));
        assert!(!SchemaMode::Full.is_lazy(100));
    }
}
