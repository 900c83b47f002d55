//! The session's tool hooks for calls that do not come from the agent loop's
//! own turn (a script's calls in `execute_code`) and for sub-agents' loops:
//! a hooks plugin's veto ("never run `terminal`") must hold on every route,
//! at every depth.

use std::sync::Arc;

use async_trait::async_trait;
use talaria_kernel::validate::{apply_pre_tool, place_results};
use talaria_kernel::{
    CancellationToken, HookSession, HookVerdict, Hooks, ToolCall, ToolContext, ToolDispatcher,
    ToolResult, ToolSpec, ValidatedCall,
};

/// A [`ToolDispatcher`] that runs `pre_tool` (veto, rewrite) and `post_tool`
/// (transform) around each call, as the loop does for the model's calls.
pub struct HookedTools {
    inner: Arc<dyn ToolDispatcher>,
    hooks: Arc<dyn Hooks>,
    /// The model the hooks are told about.
    model: String,
}

impl HookedTools {
    /// `inner`'s calls, passed through `hooks` on behalf of `model`.
    pub fn new(inner: Arc<dyn ToolDispatcher>, hooks: Arc<dyn Hooks>, model: String) -> Self {
        Self {
            inner,
            hooks,
            model,
        }
    }
}

#[async_trait]
impl ToolDispatcher for HookedTools {
    fn specs(&self) -> Vec<ToolSpec> {
        self.inner.specs()
    }

    async fn execute(
        &self,
        calls: &[ValidatedCall],
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let session = HookSession {
            session_id: &context.session_id,
            model: &self.model,
        };
        let specs = self.inner.specs();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut runnable = Vec::new();
        for (slot, valid) in results.iter_mut().zip(calls) {
            match apply_pre_tool(self.hooks.as_ref(), session, valid.clone(), &specs).await {
                Ok(valid) => runnable.push(valid),
                Err(result) => *slot = Some(result),
            }
        }
        if !runnable.is_empty() {
            let done = self.inner.execute(&runnable, context, cancel).await;
            let ids: Vec<&str> = calls.iter().map(|c| c.call.id.as_str()).collect();
            place_results(&mut results, &ids, &runnable, done);
        }
        let mut out = Vec::with_capacity(calls.len());
        for (valid, result) in calls.iter().zip(results) {
            let mut result = result
                .unwrap_or_else(|| ToolResult::error(&valid.call, "the tool returned no result"));
            self.hooks
                .post_tool(session, &valid.call, &mut result)
                .await;
            out.push(result);
        }
        out
    }
}

/// Only the tool hooks of `Hooks`: a sub-agent's loop gets these, so its
/// calls pass the same vetoes, rewrites and transforms as its parent's,
/// while session and model hooks stay with the session the user started
/// (a child's task is not a user turn to add context to).
pub struct ToolHooks(pub Arc<dyn Hooks>);

#[async_trait]
impl Hooks for ToolHooks {
    async fn pre_tool(&self, session: HookSession<'_>, call: &ValidatedCall) -> HookVerdict {
        self.0.pre_tool(session, call).await
    }

    async fn post_tool(&self, session: HookSession<'_>, call: &ToolCall, result: &mut ToolResult) {
        self.0.post_tool(session, call, result).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};

    use super::*;

    /// Vetoes `terminal`, rewrites `echo` to say "rewritten", tags results.
    struct Guard;

    #[async_trait]
    impl Hooks for Guard {
        async fn pre_tool(&self, _session: HookSession<'_>, call: &ValidatedCall) -> HookVerdict {
            match call.call.name.as_str() {
                "terminal" => HookVerdict::Block("no terminal".into()),
                "echo" => HookVerdict::Rewrite(json!({"text": "rewritten"})),
                "bad" => HookVerdict::Rewrite(json!({"other": 1})),
                _ => HookVerdict::Continue,
            }
        }

        async fn post_tool(&self, session: HookSession<'_>, _: &ToolCall, result: &mut ToolResult) {
            result.content = format!(
                "{} [{}@{}]",
                result.content, session.session_id, session.model
            );
        }
    }

    #[derive(Default)]
    struct Echo {
        ran: Mutex<Vec<Value>>,
    }

    #[async_trait]
    impl ToolDispatcher for Echo {
        fn specs(&self) -> Vec<ToolSpec> {
            ["echo", "terminal", "bad"]
                .into_iter()
                .map(|name| ToolSpec {
                    name: name.into(),
                    description: String::new(),
                    parameters: json!({"type": "object", "required": ["text"]}),
                    refunds_iteration: false,
                })
                .collect()
        }

        async fn execute(
            &self,
            calls: &[ValidatedCall],
            _: &ToolContext,
            _: &CancellationToken,
        ) -> Vec<ToolResult> {
            calls
                .iter()
                .map(|c| {
                    self.ran.lock().unwrap().push(c.arguments.clone());
                    ToolResult::ok(&c.call, c.arguments["text"].to_string())
                })
                .collect()
        }
    }

    fn call(id: &str, name: &str) -> ValidatedCall {
        let arguments = json!({"text": "original"});
        ValidatedCall {
            call: ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: arguments.to_string(),
            },
            arguments,
        }
    }

    #[tokio::test]
    async fn every_call_passes_the_hooks_in_order() {
        let inner = Arc::new(Echo::default());
        let hooked = HookedTools::new(inner.clone(), Arc::new(Guard), "m".into());
        let context = ToolContext {
            session_id: "s".into(),
        };
        let calls = [call("1", "terminal"), call("2", "echo"), call("3", "bad")];
        let results = hooked
            .execute(&calls, &context, &CancellationToken::new())
            .await;
        let texts: Vec<(&str, bool)> = results
            .iter()
            .map(|r| (r.content.as_str(), r.is_error))
            .collect();
        assert_eq!(texts[0], ("Blocked: no terminal [s@m]", true));
        assert_eq!(texts[1], ("\"rewritten\" [s@m]", false));
        assert!(texts[2].1 && texts[2].0.starts_with("A hook rewrote the arguments"));
        assert_eq!(
            *inner.ran.lock().unwrap(),
            vec![json!({"text": "rewritten"})]
        );
        assert_eq!(
            results
                .iter()
                .map(|r| r.call_id.as_str())
                .collect::<Vec<_>>(),
            ["1", "2", "3"]
        );
    }
}
