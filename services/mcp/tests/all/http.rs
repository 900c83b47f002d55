//! A streamable-HTTP server written with the Python `mcp` SDK, on 127.0.0.1.

use std::time::{Duration, Instant};

use serde_json::json;
use talaria_kernel::{CancellationToken, ToolCall, ToolContext, ValidatedCall};
use talaria_mcp::{McpError, McpServer, McpToolSource, ServerTools};
use talaria_tools::ToolSource;

use crate::common::{self, HttpPeer, run};

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

fn context() -> ToolContext {
    ToolContext {
        session_id: "s".into(),
    }
}

#[test]
fn initialize_list_and_call_over_streamable_http() {
    let Some(peers) = common::peers() else { return };
    let url = common::shared_http(&peers);
    let server = McpServer::new(common::spec("pyhttp", common::http(&url)));
    run(async {
        let started = Instant::now();
        let info = server.connect().await.unwrap();
        eprintln!(
            "Python HTTP server: connect + initialize took {:?}",
            started.elapsed()
        );
        assert_eq!(info.protocol_version, "2025-11-25");
        assert_eq!(info.name.as_deref(), Some("talaria-test-http"));
        assert_eq!(info.instructions.as_deref(), Some("A test server."));
        assert!(info.tools && info.resources && info.prompts, "{info:?}");
        let offer = server.list_tools().await.unwrap();
        let mut names: Vec<&str> = offer.tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["add", "echo", "fail", "whoami"]);
        let started = Instant::now();
        let sum = server
            .call_tool("add", json!({"a": 2, "b": 3}).as_object().cloned())
            .await
            .unwrap();
        eprintln!("Python HTTP server: one call took {:?}", started.elapsed());
        assert_eq!(talaria_mcp::flatten_result(&sum), "5");
        let resource = server.read_resource("test://greeting").await.unwrap();
        assert_eq!(resource.contents.len(), 1);
        let prompt = server
            .get_prompt("review", json!({"code": "x = 1"}).as_object().cloned())
            .await
            .unwrap();
        assert!(format!("{prompt:?}").contains("Please review: x = 1"));
        server.shutdown().await;
    });
}

#[test]
fn headers_are_sent_and_stripped_from_what_the_model_reads() {
    let Some(peers) = common::peers() else { return };
    let url = common::shared_http(&peers);
    let mut config = common::http(&url);
    config.headers.insert(
        "Authorization".into(),
        "Bearer plain-secret-token-1234".into(),
    );
    let server = McpServer::new(common::spec("authed", config.clone()));
    run(async {
        let raw = server.call_tool("whoami", None).await.unwrap();
        let raw = talaria_mcp::flatten_result(&raw);
        assert!(
            raw.contains("authorization=Bearer plain-secret-token-1234"),
            "{raw}"
        );
        server.shutdown().await;

        let offer: ServerTools = server.list_tools().await.unwrap();
        let source = McpToolSource::new(vec![(std::sync::Arc::new(server), offer)]);
        let cancel = CancellationToken::new();
        let seen = source
            .call(&call("mcp_authed_whoami", json!({})), &context(), &cancel)
            .await;
        assert!(
            !seen.is_error && !seen.content.contains("plain-secret-token"),
            "{seen:?}"
        );
        let failed = source
            .call(&call("mcp_authed_fail", json!({})), &context(), &cancel)
            .await;
        assert!(failed.is_error, "{failed:?}");
        assert!(failed.content.contains("refused credentials"), "{failed:?}");
        assert!(!failed.content.contains("plain-secret-token"), "{failed:?}");
        source.shutdown().await;
    });
}

#[test]
fn an_expired_session_is_initialised_again() {
    let Some(peers) = common::peers() else { return };
    let port = common::free_port();
    let peer = HttpPeer::start(&peers, port);
    let server = McpServer::new(common::spec("restarting", common::http(&peer.url())));
    let peer = run(async {
        let before = server.call_tool("whoami", None).await.unwrap();
        let before = talaria_mcp::flatten_result(&before);
        // A new server process knows no session: the old id answers 404.
        drop(peer);
        let peer = HttpPeer::start(&peers, port);
        let started = Instant::now();
        let mut after = server.call_tool("whoami", None).await;
        if after.is_err() {
            // The transport gave up (e.g. its event stream broke first): the next call
            // reconnects.
            eprintln!("first call after the restart: {:?}", after.as_ref().err());
            after = server.call_tool("whoami", None).await;
        }
        let after = talaria_mcp::flatten_result(&after.unwrap());
        eprintln!(
            "session re-established in {:?} with {} client connection(s): {before} -> {after}",
            started.elapsed(),
            server.connections()
        );
        assert!(before.starts_with("session=") && after.starts_with("session="));
        assert_ne!(before, after, "a new session");
        server.shutdown().await;
        peer
    });
    drop(peer);
}

#[test]
fn nothing_listening_is_an_initialize_error_naming_the_server() {
    let url = format!("http://127.0.0.1:{}/mcp", common::free_port());
    let mut config = common::http(&url);
    config.connect_timeout = Some(10.0);
    let server = McpServer::new(common::spec("nowhere", config));
    run(async {
        let started = Instant::now();
        let error = server.connect().await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(error, McpError::Initialize { .. }), "{error:?}");
        assert!(
            error
                .to_string()
                .starts_with("MCP server nowhere: initialize failed")
        );
    });
}
