//! Hooks plugins through the kernel's `Hooks` port: subscriptions, priority
//! order, veto, rewrite, transforms, and failing hooks skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use talaria_kernel::{
    HookSession, HookVerdict, Hooks, Message, ModelResponse, ToolCall, ToolResult, ValidatedCall,
};
use talaria_plugin_host::{HookEvent, LoadedPlugin, PluginHooks, PluginTools};

const SESSION: HookSession<'static> = HookSession {
    session_id: "s1",
    model: "test-model",
};

fn validated(tool: &str, args: serde_json::Value) -> ValidatedCall {
    ValidatedCall {
        call: ToolCall {
            id: "c1".into(),
            name: tool.into(),
            arguments: args.to_string(),
        },
        arguments: args,
    }
}

async fn probes(root: &std::path::Path, configs: &[(&str, &[(&str, &str)])]) -> Vec<LoadedPlugin> {
    let host = cached_host(root);
    let mut loaded = Vec::new();
    for (name, config) in configs {
        let dir = probe_variant(&root.join("packages"), name, config);
        loaded.push(load_all(&host, &dir).await);
    }
    loaded
}

fn logged(plugin: &LoadedPlugin) -> Vec<String> {
    plugin
        .log()
        .lines()
        .into_iter()
        .map(|l| l.message)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_component_provides_tools_and_hooks() {
    let root = tempfile::tempdir().unwrap();
    let plugins = probes(root.path(), &[("probe", &[])]).await;
    let plugin = &plugins[0];
    assert_eq!(plugin.tools().len(), 1);
    assert_eq!(plugin.hook_subscriptions().len(), 6);
    let tools = PluginTools::new(plugins.clone(), root.path()).unwrap();
    let out = call(
        &tools,
        "s1",
        "probe_echo",
        serde_json::json!({"text": "hi"}),
    )
    .await;
    assert_eq!(out.content, r#"{"echo":"hi"}"#);
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_run_by_priority_and_see_the_session() {
    let root = tempfile::tempdir().unwrap();
    let plugins = probes(
        root.path(),
        &[
            (
                "low",
                &[("tag", "low"), ("priority", "-5"), ("context", "from low")],
            ),
            (
                "high",
                &[
                    ("tag", "high"),
                    ("priority", "10"),
                    ("context", "from high"),
                ],
            ),
            ("mid", &[("tag", "mid"), ("priority", "0")]),
        ],
    )
    .await;
    let hooks = PluginHooks::new(plugins.clone(), root.path(), "cli").unwrap();
    assert_eq!(hooks.order(HookEvent::PostTool), ["high", "mid", "low"]);

    hooks.session_start(SESSION).await;
    let context = hooks.pre_llm(SESSION, "hello").await;
    assert_eq!(
        context.as_deref(),
        Some("[high] from high\n\n[low] from low"),
        "in priority order; a hook returning nothing adds nothing"
    );
    let call = validated("probe_echo", serde_json::json!({"text": "x"}));
    let mut result = ToolResult::ok(&call.call, "out");
    hooks.post_tool(SESSION, &call.call, &mut result).await;
    assert_eq!(
        result.content, "out [high] [mid] [low]",
        "each transform sees the previous one"
    );
    hooks
        .post_llm(
            SESSION,
            &ModelResponse {
                message: Message::assistant("the reply"),
                finish: talaria_kernel::FinishReason::Stop,
                usage: Default::default(),
            },
        )
        .await;
    hooks.session_end(SESSION).await;

    let high = logged(&plugins[1]);
    for expected in [
        "high session-start session=s1 surface=cli model=test-model",
        "high post-llm session=s1 surface=cli model=test-model reply=\"the reply\"",
        "high session-end session=s1 surface=cli model=test-model",
    ] {
        assert!(
            high.iter().any(|l| l == expected),
            "{expected:?} not in {high:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_tool_vetoes_and_rewrites() {
    let root = tempfile::tempdir().unwrap();
    let plugins = probes(root.path(), &[("guard", &[("tag", "guard")])]).await;
    let hooks = PluginHooks::new(plugins, root.path(), "cli").unwrap();

    let verdict = hooks
        .pre_tool(
            SESSION,
            &validated("write_file", serde_json::json!({"path": "forbidden.txt"})),
        )
        .await;
    assert_eq!(
        verdict,
        HookVerdict::Block("guard: forbidden content (vetoed by plugin guard)".into())
    );
    let verdict = hooks
        .pre_tool(
            SESSION,
            &validated("probe_echo", serde_json::json!({"text": "rewrite-me"})),
        )
        .await;
    assert_eq!(
        verdict,
        HookVerdict::Rewrite(serde_json::json!({"text": "rewritten by guard"}))
    );
    let verdict = hooks
        .pre_tool(
            SESSION,
            &validated("probe_echo", serde_json::json!({"text": "fine"})),
        )
        .await;
    assert_eq!(verdict, HookVerdict::Continue);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_hook_is_logged_and_skipped_then_disabled() {
    let root = tempfile::tempdir().unwrap();
    let plugins = probes(
        root.path(),
        &[
            (
                "broken",
                &[("tag", "broken"), ("priority", "5"), ("fail", "post-tool")],
            ),
            ("bad-rewrite", &[("tag", "bad"), ("bad-rewrite", "yes")]),
            ("fine", &[("tag", "fine"), ("priority", "-1")]),
        ],
    )
    .await;
    let hooks = PluginHooks::new(plugins.clone(), root.path(), "cli").unwrap();
    let call = validated("probe_echo", serde_json::json!({"text": "x"}));
    for round in 1..=4 {
        let mut result = ToolResult::ok(&call.call, "out");
        hooks.post_tool(SESSION, &call.call, &mut result).await;
        assert_eq!(
            result.content, "out [bad] [fine]",
            "round {round}: the panicking hook is skipped"
        );
    }
    let broken = logged(&plugins[0]);
    assert!(
        broken
            .iter()
            .any(|l| l.contains("post-tool hook skipped") && l.contains("fails on post-tool")),
        "{broken:#?}"
    );
    assert_eq!(
        broken
            .iter()
            .filter(|l| l.contains("post-tool hook skipped"))
            .count(),
        3,
        "not called again once disabled: {broken:#?}"
    );
    assert!(
        broken
            .iter()
            .any(|l| l.contains("disabled for session s1 after 3 failures"))
    );

    let verdict = hooks
        .pre_tool(
            SESSION,
            &validated("probe_echo", serde_json::json!({"text": "rewrite-me"})),
        )
        .await;
    assert_eq!(
        verdict,
        HookVerdict::Rewrite(serde_json::json!({"text": "rewritten by fine"})),
        "an invalid rewrite is ignored; the next hook still runs"
    );
    let bad = logged(&plugins[1]);
    assert!(
        bad.iter()
            .any(|l| l.contains("rewritten arguments must be a JSON object")),
        "{bad:#?}"
    );
}
