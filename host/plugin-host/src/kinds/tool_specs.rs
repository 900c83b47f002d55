//! The tools a plugin lists, converted from the WIT types and checked.

use talaria_kernel::ToolSpec;
use talaria_tools::ToolFlags;

use crate::error::LoadError;
use crate::loaded::ToolInfo;

pub(crate) fn convert_specs(
    plugin: &str,
    specs: Vec<crate::bindings::ToolSpec>,
) -> Result<Vec<ToolInfo>, LoadError> {
    let mut tools = Vec::with_capacity(specs.len());
    for spec in specs {
        let parameters: serde_json::Value =
            serde_json::from_str(&spec.parameters).map_err(|e| LoadError::ListTools {
                plugin: plugin.to_owned(),
                message: format!("tool {}: parameters are not JSON: {e}", spec.name),
            })?;
        tools.push(ToolInfo {
            spec: ToolSpec {
                name: spec.name,
                description: spec.description,
                parameters,
                refunds_iteration: false,
            },
            flags: ToolFlags {
                never_parallel: spec.flags.never_parallel,
                read_only: spec.flags.read_only,
                path_argument: spec.flags.path_argument,
            },
        });
    }
    validate_tools(plugin, tools)
}

/// Checks the tools a plugin lists: valid and distinct names, parameters
/// that are JSON Schema objects.
pub(crate) fn validate_tools(
    plugin: &str,
    tools: Vec<ToolInfo>,
) -> Result<Vec<ToolInfo>, LoadError> {
    let mut valid: Vec<ToolInfo> = Vec::with_capacity(tools.len());
    for tool in tools {
        let bad = |message: String| LoadError::ListTools {
            plugin: plugin.to_owned(),
            message,
        };
        let name = &tool.spec.name;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(bad(format!("invalid tool name {name:?}")));
        }
        if valid.iter().any(|t| t.spec.name == *name) {
            return Err(bad(format!("tool {name} is listed twice")));
        }
        if !tool.spec.parameters.is_object() {
            return Err(bad(format!(
                "tool {name}: parameters must be a JSON Schema object"
            )));
        }
        valid.push(tool);
    }
    Ok(valid)
}
