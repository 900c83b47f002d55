//! Test plugin `legacy`: the tool `legacy_echo`, written against the frozen
//! `talaria:plugin@0.1.0` WIT with raw `wit-bindgen` bindings. It also logs
//! through the 0.1.0 `log` import, so both directions cross versions.

// Only the generated component glue is unsafe; nothing here is written by hand.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    world: "tool-plugin",
    path: "../../../wit/versions/0.1.0",
});

use exports::talaria::plugin::tool_provider::{CallContext, Guest, ToolError, ToolSpec};
use talaria::plugin::log::{Level, log};
use talaria::plugin::types::ToolFlags;

struct Legacy;

impl Guest for Legacy {
    fn list_tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "legacy_echo".into(),
            description: "Returns its text, from a talaria:plugin@0.1.0 component".into(),
            parameters:
                r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#
                    .into(),
            flags: ToolFlags {
                never_parallel: false,
                read_only: true,
                path_argument: None,
            },
        }]
    }

    fn call_tool(
        name: String,
        arguments: String,
        _context: CallContext,
    ) -> Result<String, ToolError> {
        if name != "legacy_echo" {
            return Err(ToolError::InvalidArguments(format!("unknown tool {name}")));
        }
        log(Level::Info, "legacy_echo called");
        // The arguments are a JSON object; echo them back under "echo".
        Ok(format!("{{\"echo\":{arguments}}}"))
    }
}

export!(Legacy);
