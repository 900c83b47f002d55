//! A probe of the Extism tool ABI: `describe` lists the tools, `call` runs one.
//! Its tools exercise what the host must handle: config, HTTP through the
//! host's allow-list, tool errors, panics, runaway loops and memory hogs, and
//! (built for wasm32-wasip1) files in the granted directories.

use extism_pdk::{Error, FnResult, HttpRequest, WithReturnCode, config, http, plugin_fn};
use serde::Deserialize;
use serde_json::{Value, json};

/// The `call` input.
#[derive(Deserialize)]
struct Call {
    tool: String,
    arguments: Value,
    session_id: String,
    cwd: Option<String>,
}

fn string_arg(args: &Value, name: &str) -> Result<String, WithReturnCode<Error>> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| tool_error(format!("missing string argument `{name}`")))
}

fn tool_error(message: String) -> WithReturnCode<Error> {
    WithReturnCode::new(Error::msg(message), 1)
}

#[plugin_fn]
pub fn describe() -> FnResult<String> {
    let object = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required });
    let text = json!({ "type": "string" });
    Ok(json!([
        {
            "name": "probe_echo",
            "description": "Echoes its text with the configured greeting",
            "parameters": object(json!({ "text": text }), &["text"]),
            "read_only": true
        },
        {
            "name": "probe_fail",
            "description": "Always refuses (a tool error)",
            "parameters": object(json!({}), &[])
        },
        {
            "name": "probe_fetch",
            "description": "GETs a URL through the host and returns the status and body",
            "parameters": object(json!({ "url": text }), &["url"])
        },
        {
            "name": "probe_panic",
            "description": "Panics",
            "parameters": object(json!({}), &[])
        },
        {
            "name": "probe_spin",
            "description": "Never returns",
            "parameters": object(json!({}), &[])
        },
        {
            "name": "probe_hog",
            "description": "Allocates `mb` MiB",
            "parameters": object(json!({ "mb": { "type": "integer" } }), &["mb"])
        },
        {
            "name": "probe_read",
            "description": "Reads a file (WASI builds only)",
            "parameters": object(json!({ "path": text }), &["path"]),
            "read_only": true,
            "path_argument": "path"
        },
        {
            "name": "probe_write",
            "description": "Writes a file (WASI builds only)",
            "parameters": object(json!({ "path": text, "content": text }), &["path", "content"]),
            "path_argument": "path"
        }
    ])
    .to_string())
}

#[plugin_fn]
pub fn call(input: String) -> FnResult<String> {
    let call: Call =
        serde_json::from_str(&input).map_err(|e| tool_error(format!("bad call input: {e}")))?;
    let args = &call.arguments;
    match call.tool.as_str() {
        "probe_echo" => {
            let greeting = config::get("greeting")?.unwrap_or_default();
            Ok(json!({
                "echo": string_arg(args, "text")?,
                "greeting": greeting,
                "session": call.session_id,
                "cwd": call.cwd,
            })
            .to_string())
        }
        "probe_fail" => Err(tool_error("probe refused: it always does".into())),
        "probe_fetch" => {
            let url = string_arg(args, "url")?;
            let response = http::request::<()>(&HttpRequest::new(&url), None)
                .map_err(|e| tool_error(format!("fetching {url} failed: {e}")))?;
            let body = String::from_utf8_lossy(&response.body()).into_owned();
            Ok(json!({ "status": response.status_code(), "body": body }).to_string())
        }
        "probe_panic" => panic!("boom"),
        "probe_spin" => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        "probe_hog" => {
            let mb = args.get("mb").and_then(Value::as_u64).unwrap_or(1);
            let size = usize::try_from(mb << 20).unwrap_or(usize::MAX);
            let block = std::hint::black_box(vec![1u8; size]);
            Ok(json!({ "allocated": block.len() }).to_string())
        }
        "probe_read" => files::read(&string_arg(args, "path")?).map_err(tool_error),
        "probe_write" => {
            files::write(&string_arg(args, "path")?, &string_arg(args, "content")?)
                .map_err(tool_error)?;
            Ok(json!({ "written": true }).to_string())
        }
        other => Err(tool_error(format!("unknown tool {other}"))),
    }
}

#[cfg(target_os = "wasi")]
mod files {
    pub fn read(path: &str) -> Result<String, String> {
        std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))
    }

    pub fn write(path: &str, content: &str) -> Result<(), String> {
        std::fs::write(path, content).map_err(|e| format!("writing {path}: {e}"))
    }
}

#[cfg(not(target_os = "wasi"))]
mod files {
    pub fn read(_: &str) -> Result<String, String> {
        Err("no filesystem in this build (wasm32-unknown-unknown)".into())
    }

    pub fn write(_: &str, _: &str) -> Result<(), String> {
        Err("no filesystem in this build (wasm32-unknown-unknown)".into())
    }
}
