//! Test plugin `hooks-probe`: hooks on every event, driven by the manifest's
//! `[config]` (`tag`, `priority`, `context`, `fail`, `bad-rewrite`), plus the
//! tool `probe_echo`. Tests install copies with different configs to check
//! ordering, vetoes, rewrites, transforms and failure isolation.
//!
//! - pre-tool: vetoes calls whose arguments contain "forbidden"; rewrites a
//!   `probe_echo` text of "rewrite-me" to "rewritten by TAG".
//! - post-tool: appends " [TAG]" to the result text.
//! - pre-llm: returns "[TAG] CONTEXT" when `context` is set.
//! - session-start, session-end, post-llm: log one info line each.

use schemars::JsonSchema;
use serde::Deserialize;
use talaria_plugin_sdk::{
    CallContext, HookEvent, Hooks, Message, SessionInfo, Subscription, Tool, ToolError, ToolFlags,
    Value, Verdict, config, json, log,
};

fn setting(name: &str) -> String {
    config::get(name).ok().flatten().unwrap_or_default()
}

fn tag() -> String {
    let tag = setting("tag");
    if tag.is_empty() { "probe".into() } else { tag }
}

/// Panics when the manifest says this event's hook fails.
fn maybe_fail(event: &str) {
    if setting("fail") == event {
        panic!("{} fails on {event} as configured", tag());
    }
}

fn note(event: &str, session: &SessionInfo, extra: &str) {
    maybe_fail(event);
    log::info(format!(
        "{} {event} session={} surface={} model={}{extra}",
        tag(),
        session.session_id,
        session.surface,
        session.model
    ));
}

#[derive(Default)]
pub struct Probe;

impl Hooks for Probe {
    fn subscriptions() -> Vec<Subscription> {
        let priority = setting("priority").parse().unwrap_or(0);
        [
            HookEvent::SessionStart,
            HookEvent::SessionEnd,
            HookEvent::PreLlm,
            HookEvent::PostLlm,
            HookEvent::PreTool,
            HookEvent::PostTool,
        ]
        .into_iter()
        .map(|event| Subscription { event, priority })
        .collect()
    }

    fn session_start(session: SessionInfo) {
        note("session-start", &session, "");
    }

    fn session_end(session: SessionInfo) {
        note("session-end", &session, "");
    }

    fn pre_llm(_session: SessionInfo, _last_user_message: String) -> Option<String> {
        maybe_fail("pre-llm");
        let context = setting("context");
        (!context.is_empty()).then(|| format!("[{}] {context}", tag()))
    }

    fn post_llm(session: SessionInfo, reply: Message) {
        note("post-llm", &session, &format!(" reply={:?}", reply.content));
    }

    fn pre_tool(_session: SessionInfo, tool: String, arguments: Value) -> Verdict {
        maybe_fail("pre-tool");
        if setting("bad-rewrite") == "yes" {
            return Verdict::Rewrite(json!(42));
        }
        if arguments.to_string().contains("forbidden") {
            return Verdict::Veto(format!("{}: forbidden content", tag()));
        }
        if tool == "probe_echo" && arguments["text"] == "rewrite-me" {
            return Verdict::Rewrite(json!({ "text": format!("rewritten by {}", tag()) }));
        }
        Verdict::Proceed
    }

    fn post_tool(
        _session: SessionInfo,
        _tool: String,
        _arguments: Value,
        result: Result<String, ToolError>,
    ) -> Option<String> {
        maybe_fail("post-tool");
        let text = match result {
            Ok(text) => text,
            Err(err) => err.to_string(),
        };
        Some(format!("{text} [{}]", tag()))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to return.
    text: String,
}

/// `probe_echo`: returns its text.
#[derive(Default)]
pub struct ProbeEcho;

impl Tool for ProbeEcho {
    const NAME: &'static str = "probe_echo";
    const DESCRIPTION: &'static str = "Returns the text it is given";
    type Args = EchoArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only()
    }

    fn call(&self, args: EchoArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        Ok(json!({ "echo": args.text }))
    }
}

talaria_plugin_sdk::export_tools!(ProbeEcho);
talaria_plugin_sdk::export_hooks!(Probe);
