//! The npm reference server `@modelcontextprotocol/server-everything` over stdio.

use std::time::{Duration, Instant};

use serde_json::json;
use talaria_mcp::McpServer;

use crate::common::{self, eventually, run};

#[test]
fn initialize_and_list_its_tools() {
    let Some(peers) = common::peers() else { return };
    let server = common::shared_everything(&peers);
    run(async {
        let info = server.connect().await.unwrap();
        assert_eq!(info.protocol_version, "2025-11-25");
        assert!(info.tools && info.resources && info.prompts, "{info:?}");
        assert!(
            info.name
                .as_deref()
                .is_some_and(|n| n.contains("everything")),
            "{info:?}"
        );
        let offer = server.list_tools().await.unwrap();
        let names: Vec<&str> = offer.tools.iter().map(|t| t.name.as_str()).collect();
        eprintln!("server-everything tools: {names:?}");
        assert_eq!(offer.tools.len(), 13, "{names:?}");
        assert!(
            names.contains(&"echo") && names.contains(&"get-sum"),
            "{names:?}"
        );
        let echo = offer.tools.iter().find(|t| t.name == "echo").unwrap();
        assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
        assert_eq!(echo.read_only_hint, Some(true));
    });
}

#[test]
fn echo_answers_with_its_text() {
    let Some(peers) = common::peers() else { return };
    let server = common::shared_everything(&peers);
    run(async {
        let arguments = json!({"message": "hello from Talaria"});
        let started = Instant::now();
        let result = server
            .call_tool("echo", arguments.as_object().cloned())
            .await
            .unwrap();
        eprintln!("server-everything: echo call took {:?}", started.elapsed());
        assert_eq!(
            talaria_mcp::flatten_result(&result),
            "Echo: hello from Talaria"
        );
        assert_ne!(result.is_error, Some(true));
    });
}

#[test]
fn a_tool_error_is_an_error_result_and_an_unknown_tool_an_error() {
    let Some(peers) = common::peers() else { return };
    let server = common::shared_everything(&peers);
    run(async {
        // Arguments that fail the tool's own validation.
        let bad = json!({"a": "one", "b": 2});
        let result = server.call_tool("get-sum", bad.as_object().cloned()).await;
        let failure = match result {
            Ok(result) => {
                assert_eq!(result.is_error, Some(true), "{result:?}");
                talaria_mcp::flatten_result(&result)
            }
            Err(error) => error.to_string(),
        };
        assert!(!failure.is_empty());
        eprintln!("get-sum with a string argument: {failure}");
        let unknown = server.call_tool("no-such-tool", None).await;
        let text = match unknown {
            Ok(result) => {
                assert_eq!(result.is_error, Some(true), "{result:?}");
                talaria_mcp::flatten_result(&result)
            }
            Err(error) => {
                let text = error.to_string();
                assert!(
                    text.starts_with("MCP server everything: tools/call no-such-tool failed"),
                    "{text}"
                );
                text
            }
        };
        assert!(text.contains("no-such-tool"), "{text}");
    });
}

#[test]
fn images_resources_and_prompts() {
    let Some(peers) = common::peers() else { return };
    let server = common::shared_everything(&peers);
    run(async {
        let image = server.call_tool("get-tiny-image", None).await.unwrap();
        let text = talaria_mcp::flatten_result(&image);
        assert!(text.contains("[image: image/png, "), "{text}");
        let resources = server.list_resources().await.unwrap();
        assert!(!resources.is_empty());
        let first = resources[0].uri.clone();
        let read = server.read_resource(&first).await.unwrap();
        assert!(!read.contents.is_empty(), "{first}");
        let prompts = server.list_prompts().await.unwrap();
        assert!(!prompts.is_empty());
    });
}

#[test]
fn tools_list_changed_is_noted() {
    let Some(peers) = common::peers() else { return };
    // A session of its own: the flag is per server.
    let server = McpServer::new(common::spec("everything", common::everything(&peers)));
    run(async {
        server.list_tools().await.unwrap();
        // server-everything sends notifications/tools/list_changed unsolicited, after it
        // registers the tools that depend on the client's capabilities.
        let noted = eventually(Duration::from_secs(10), || server.tools_list_changed()).await;
        assert!(noted, "no notifications/tools/list_changed within 10 s");
        server.list_tools().await.unwrap();
        assert!(
            !server.tools_list_changed(),
            "listing again clears the flag"
        );
        server.shutdown().await;
    });
}

#[test]
fn a_killed_server_is_reconnected_on_the_next_call() {
    let Some(peers) = common::peers() else { return };
    let server = McpServer::new(common::spec("everything", common::everything(&peers)));
    run(async {
        let started = Instant::now();
        server.connect().await.unwrap();
        eprintln!(
            "server-everything: spawn + initialize took {:?}",
            started.elapsed()
        );
        let pid = server.process_id().await.unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let mut closed = false;
        for _ in 0..100 {
            if !server.is_connected().await {
                closed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(closed, "the client did not notice the server died");
        let started = Instant::now();
        let echo = json!({"message": "again"});
        let result = server
            .call_tool("echo", echo.as_object().cloned())
            .await
            .unwrap();
        eprintln!(
            "server-everything: reconnect + call took {:?}",
            started.elapsed()
        );
        assert_eq!(talaria_mcp::flatten_result(&result), "Echo: again");
        assert_eq!(server.connections(), 2);
        assert_ne!(server.process_id().await, Some(pid));
        server.shutdown().await;
    });
}
