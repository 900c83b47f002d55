//! `McpToolSource`: tools from the cache or a fresh list, names, toolsets, filters, helpers,
//! and calls that always end in a result the model can read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use talaria_kernel::{CancellationToken, ToolCall, ToolContext, ValidatedCall};
use talaria_mcp::{McpServer, McpToolSource, Origin, Target};
use talaria_profile::McpToolsConfig;
use talaria_tools::ToolSource;

use crate::common::{self, run};

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

fn names(source: &McpToolSource) -> Vec<String> {
    source.tools().into_iter().map(|t| t.spec.name).collect()
}

#[test]
fn a_second_session_starts_from_the_cache_without_connecting() {
    let Some(peers) = common::peers() else { return };
    let url = common::shared_http(&peers);
    let cache = tempfile::tempdir().unwrap();
    run(async {
        let specs = || vec![common::spec("cached", common::http(&url))];
        let started = Instant::now();
        let (first, origins, errors) = McpToolSource::start(specs(), cache.path()).await;
        eprintln!(
            "cold start (connect + list + cache write): {:?}",
            started.elapsed()
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(origins, [("cached".to_string(), Origin::Listed)]);
        let files: Vec<_> = std::fs::read_dir(cache.path()).unwrap().flatten().collect();
        assert_eq!(files.len(), 1);
        assert!(
            files[0]
                .file_name()
                .to_string_lossy()
                .starts_with("cached.")
        );

        let started = Instant::now();
        let (second, origins, errors) = McpToolSource::start(specs(), cache.path()).await;
        eprintln!("warm start (from the cache): {:?}", started.elapsed());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(origins, [("cached".to_string(), Origin::Cache)]);
        assert_eq!(
            second.tools(),
            first.tools(),
            "the same tools, byte for byte"
        );
        let server = second.server("cached").unwrap().clone();
        assert_eq!(server.connections(), 0, "not contacted");
        let result = second
            .call(
                &call("mcp_cached_echo", json!({"message": "lazy"})),
                &context(),
                &CancellationToken::new(),
            )
            .await;
        assert!(
            !result.is_error && result.content == "Echo: lazy",
            "{result:?}"
        );
        assert_eq!(server.connections(), 1, "connected on the first call");
        // A refresh lists again and rewrites the cache (for the next session).
        assert!(second.refresh_caches(cache.path()).await.is_empty());
        assert_eq!(
            second.tools(),
            first.tools(),
            "this session's list stays as it was"
        );
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1);
        first.shutdown().await;
        second.shutdown().await;
    });
}

#[test]
fn tools_are_named_grouped_filtered_and_helped() {
    let Some(peers) = common::peers() else { return };
    let server = common::shared_everything(&peers);
    run(async {
        let offer = server.list_tools().await.unwrap();
        let source = McpToolSource::new(vec![(server.clone(), offer.clone())]);
        let all = names(&source);
        assert_eq!(all.len(), 13 + 4, "{all:?}");
        for helper in [
            "list_resources",
            "read_resource",
            "list_prompts",
            "get_prompt",
        ] {
            assert!(all.contains(&format!("mcp_everything_{helper}")), "{all:?}");
        }
        assert!(
            all.contains(&"mcp_everything_get-sum".to_string()),
            "{all:?}"
        );
        assert!(source.tools().iter().all(|t| t.toolset == "mcp-everything"));
        assert_eq!(
            source.names().get("mcp_everything_get-sum"),
            Some(&Target::Tool {
                server: "everything".into(),
                tool: "get-sum".into()
            })
        );

        // include (globs) wins over exclude; no resources or prompts helpers.
        let mut config = common::everything(&peers);
        config.tools = McpToolsConfig {
            include: Some(vec!["echo".into(), "get-*".into()]),
            exclude: vec!["echo".into()],
            resources: false,
            prompts: false,
        };
        let filtered = Arc::new(McpServer::new(common::spec("everything", config)));
        let source = McpToolSource::new(vec![(filtered, offer.clone())]);
        let mut kept = names(&source);
        kept.sort();
        assert_eq!(
            kept,
            [
                "mcp_everything_echo",
                "mcp_everything_get-annotated-message",
                "mcp_everything_get-env",
                "mcp_everything_get-resource-links",
                "mcp_everything_get-resource-reference",
                "mcp_everything_get-structured-content",
                "mcp_everything_get-sum",
                "mcp_everything_get-tiny-image",
            ]
        );
        let mut config = common::everything(&peers);
        config.tools.exclude = vec!["*".into()];
        let nothing = Arc::new(McpServer::new(common::spec("everything", config)));
        let source = McpToolSource::new(vec![(nothing, offer)]);
        assert_eq!(names(&source).len(), 4, "only the helpers are left");
    });
}

#[test]
fn calls_through_the_source_always_end_in_a_result() {
    let Some(peers) = common::peers() else { return };
    let server = common::shared_everything(&peers);
    run(async {
        let offer = server.list_tools().await.unwrap();
        let source = McpToolSource::new(vec![(server.clone(), offer)]);
        let cancel = CancellationToken::new();
        let echo = source
            .call(
                &call("mcp_everything_echo", json!({"message": "hi"})),
                &context(),
                &cancel,
            )
            .await;
        assert_eq!((echo.content.as_str(), echo.is_error), ("Echo: hi", false));
        let image = source
            .call(
                &call("mcp_everything_get-tiny-image", json!({})),
                &context(),
                &cancel,
            )
            .await;
        assert!(image.content.contains("[image: image/png, "), "{image:?}");
        let bad = source
            .call(
                &call("mcp_everything_get-sum", json!({"a": "x", "b": 1})),
                &context(),
                &cancel,
            )
            .await;
        assert!(bad.is_error, "{bad:?}");
        let not_object = source
            .call(
                &call("mcp_everything_echo", json!([1, 2])),
                &context(),
                &cancel,
            )
            .await;
        assert!(not_object.is_error && not_object.content.contains("JSON object"));
        let unknown = source
            .call(
                &call("mcp_everything_nothing", json!({})),
                &context(),
                &cancel,
            )
            .await;
        assert!(unknown.is_error && unknown.content.contains("unknown MCP tool"));
        let listed = source
            .call(
                &call("mcp_everything_list_resources", json!({})),
                &context(),
                &cancel,
            )
            .await;
        assert!(
            !listed.is_error && listed.content.contains("\"uri\""),
            "{listed:?}"
        );
        let missing = source
            .call(
                &call("mcp_everything_read_resource", json!({})),
                &context(),
                &cancel,
            )
            .await;
        assert!(
            missing.is_error && missing.content.contains("uri"),
            "{missing:?}"
        );

        // An interrupted call answers at once.
        cancel.cancel();
        let started = Instant::now();
        let cancelled = source
            .call(
                &call(
                    "mcp_everything_trigger-long-running-operation",
                    json!({"duration": 30, "steps": 3}),
                ),
                &context(),
                &cancel,
            )
            .await;
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(
            cancelled.is_error && cancelled.content.starts_with("cancelled"),
            "{cancelled:?}"
        );
    });
}

#[test]
fn a_call_that_outlives_its_timeout_is_an_error_naming_the_server() {
    let Some(peers) = common::peers() else { return };
    let mut config = common::everything(&peers);
    config.timeout = Some(0.5);
    let server = Arc::new(McpServer::new(common::spec("slowcall", config)));
    run(async {
        let offer = server.list_tools().await.unwrap();
        let source = McpToolSource::new(vec![(server.clone(), offer)]);
        let started = Instant::now();
        let result = source
            .call(
                &call(
                    "mcp_slowcall_trigger-long-running-operation",
                    json!({"duration": 5, "steps": 2}),
                ),
                &context(),
                &CancellationToken::new(),
            )
            .await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(result.is_error, "{result:?}");
        assert_eq!(
            result.content,
            "MCP server slowcall: tools/call trigger-long-running-operation timed out after 0.5 s"
        );
        // The session survives a timed-out call.
        let echo = source
            .call(
                &call("mcp_slowcall_echo", json!({"message": "still here"})),
                &context(),
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(echo.content, "Echo: still here");
        source.shutdown().await;
    });
}
