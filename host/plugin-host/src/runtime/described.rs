//! The tool list of plugins that are not components (Extism modules and
//! native libraries), which describe their tools as JSON:
//!
//! ```json
//! [{"name": "word_count", "description": "Counts words",
//!   "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
//!   "read_only": true, "never_parallel": false, "path_argument": null}]
//! ```
//!
//! `description` and the three scheduling flags are optional. Unknown keys
//! are errors, so a typo in a flag is not silently ignored.

use serde::Deserialize;
use talaria_kernel::ToolSpec;
use talaria_tools::ToolFlags;

use crate::error::LoadError;
use crate::kinds::tool_specs::validate_tools;
use crate::loaded::ToolInfo;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Described {
    name: String,
    #[serde(default)]
    description: String,
    parameters: serde_json::Value,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    never_parallel: bool,
    #[serde(default)]
    path_argument: Option<String>,
}

/// Parses and validates a plugin's JSON tool list.
pub(crate) fn parse_tools(plugin: &str, json: &[u8]) -> Result<Vec<ToolInfo>, LoadError> {
    let described: Vec<Described> =
        serde_json::from_slice(json).map_err(|e| LoadError::ListTools {
            plugin: plugin.to_owned(),
            message: format!("its tool list is not valid: {e}"),
        })?;
    let tools = described
        .into_iter()
        .map(|d| ToolInfo {
            spec: ToolSpec {
                name: d.name,
                description: d.description,
                parameters: d.parameters,
                refunds_iteration: false,
            },
            flags: ToolFlags {
                never_parallel: d.never_parallel,
                read_only: d.read_only,
                path_argument: d.path_argument,
            },
        })
        .collect();
    validate_tools(plugin, tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tools_with_optional_flags() {
        let tools = parse_tools(
            "p",
            br#"[{"name":"a","parameters":{"type":"object"},"read_only":true,"path_argument":"path"},
                 {"name":"b","description":"B","parameters":{"type":"object"}}]"#,
        )
        .unwrap();
        assert_eq!(tools.len(), 2);
        assert!(tools[0].flags.read_only);
        assert_eq!(tools[0].flags.path_argument.as_deref(), Some("path"));
        assert_eq!(tools[1].spec.description, "B");
        assert!(!tools[1].flags.read_only);
    }

    #[test]
    fn rejects_bad_lists() {
        for (json, expected) in [
            (&br#"{"name":"a"}"#[..], "its tool list is not valid"),
            (
                br#"[{"name":"a","parameters":{},"readonly":true}]"#,
                "unknown field `readonly`",
            ),
            (br#"[{"name":"a b","parameters":{}}]"#, "invalid tool name"),
            (
                br#"[{"name":"a","parameters":[]}]"#,
                "must be a JSON Schema object",
            ),
            (
                br#"[{"name":"a","parameters":{}},{"name":"a","parameters":{}}]"#,
                "listed twice",
            ),
        ] {
            let error = parse_tools("p", json).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
