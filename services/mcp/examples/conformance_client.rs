//! Talaria's MCP client as the MCP conformance suite's client scenarios drive it:
//! `conformance_client URL` (the suite appends the URL of its test server and names the
//! scenario in `MCP_CONFORMANCE_SCENARIO`). It does what a session does with a server: connect
//! (`initialize`), list the tools, and call each one with example arguments built from its
//! schema, printing what happened. Exits non-zero when the server cannot be used.

use std::process::ExitCode;

use serde_json::{Map, Value, json};
use talaria_mcp::{McpServer, ServerSpec, flatten_result};
use talaria_profile::McpServerConfig;

/// Seconds allowed to connect and for each call (the suite's own limit is 30 s).
const LIMIT_SECS: f64 = 20.0;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} against {url}");
    let config = McpServerConfig {
        url: Some(url),
        timeout: Some(LIMIT_SECS),
        connect_timeout: Some(LIMIT_SECS),
        ..McpServerConfig::default()
    };
    let spec = match ServerSpec::new("conformance", config) {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let server = McpServer::new(spec);
    let offer = match server.list_tools().await {
        Ok(offer) => offer,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "connected: protocol {}, {} tools",
        offer.info.protocol_version,
        offer.tools.len()
    );
    for tool in &offer.tools {
        let arguments = example_arguments(&tool.input_schema);
        match server.call_tool(&tool.name, Some(arguments)).await {
            Ok(result) => println!("{}: {}", tool.name, flatten_result(&result)),
            Err(error) => println!("{}: error: {error}", tool.name),
        }
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// Arguments for an object schema: each property's default, else an example of its type.
fn example_arguments(schema: &Value) -> Map<String, Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Map::new();
    };
    properties
        .iter()
        .map(|(name, property)| (name.clone(), example(property)))
        .collect()
}

fn example(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("number" | "integer") => json!(2),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => Value::Object(example_arguments(property)),
        _ => json!("example"),
    }
}
