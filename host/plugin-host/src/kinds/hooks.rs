//! Lifecycle hooks from plugins: the kernel's [`Hooks`] port over every loaded
//! hooks plugin. Each event goes to the plugins subscribed to it, highest
//! priority first (ties by name), each in a fresh instance; a hook that fails
//! (trap, timeout, invalid output) is logged and skipped, and one that fails
//! [`DISABLE_AFTER_FAILURES`] times in a session is not called again in it.

use std::path::Path;

use async_trait::async_trait;
use talaria_kernel::{
    HookSession, HookVerdict, Hooks, ModelResponse, ToolCall, ToolResult, ValidatedCall,
};

use super::placed::{Placed, names};
use super::{Kind, Slot, Slots};
use crate::bindings::hooks_world::exports::talaria::plugin::hooks::{
    Event, PreToolVerdict, Subscription,
};
use crate::bindings::talaria::plugin::types::{
    Message as WitMessage, Role as WitRole, SessionInfo, ToolError as WitToolError,
};
use crate::error::{CallError, HostError, LoadError};
use crate::failures::{DISABLE_AFTER_FAILURES, Failures};
use crate::invoke::{CallFor, Invocation, classify, prepare, race};
use crate::loaded::LoadedPlugin;
use crate::log::{LogLevel, LogSource};
use crate::sandbox::Sandbox;
use crate::state::PluginState;
use talaria_plugin_manifest::PluginKind;

use crate::bindings::hooks_world::HooksPluginPre;

/// The `hooks` kind: subscriptions listed at load.
pub(crate) struct HooksKind;

impl Kind for HooksKind {
    const KIND: PluginKind = PluginKind::Hooks;
    type Pre = HooksPluginPre<PluginState>;
    type Listed = Vec<HookSubscription>;

    fn pre(
        instance: &wasmtime::component::InstancePre<PluginState>,
    ) -> wasmtime::Result<Self::Pre> {
        HooksPluginPre::new(instance.clone())
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<Self::Listed, LoadError> {
        let reply = invoke_hook(inv, pre, &Sandbox::default(), HookCall::Subscriptions)
            .await
            .map_err(|e| LoadError::Exports {
                plugin: inv.shared.name.clone(),
                message: format!("listing its hook subscriptions failed: {e}"),
            })?;
        Ok(match reply {
            HookReply::Subscriptions(subscriptions) => convert_subscriptions(subscriptions),
            _ => Vec::new(),
        })
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.hooks.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.hooks
    }
}

/// A lifecycle event a hooks plugin can subscribe to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum HookEvent {
    /// Before the session's first turn.
    SessionStart,
    /// When the session ends.
    SessionEnd,
    /// Once per user turn, before the model is asked.
    PreLlm,
    /// After each model reply.
    PostLlm,
    /// Before each tool call.
    PreTool,
    /// After each tool call.
    PostTool,
}

impl HookEvent {
    /// The WIT name of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionStart => "session-start",
            Self::SessionEnd => "session-end",
            Self::PreLlm => "pre-llm",
            Self::PostLlm => "post-llm",
            Self::PreTool => "pre-tool",
            Self::PostTool => "post-tool",
        }
    }
}

impl From<Event> for HookEvent {
    fn from(event: Event) -> Self {
        match event {
            Event::SessionStart => Self::SessionStart,
            Event::SessionEnd => Self::SessionEnd,
            Event::PreLlm => Self::PreLlm,
            Event::PostLlm => Self::PostLlm,
            Event::PreTool => Self::PreTool,
            Event::PostTool => Self::PostTool,
        }
    }
}

/// One event subscription of a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HookSubscription {
    /// The event.
    pub event: HookEvent,
    /// Higher runs first.
    pub priority: i32,
}

fn convert_subscriptions(subscriptions: Vec<Subscription>) -> Vec<HookSubscription> {
    let mut out: Vec<HookSubscription> = Vec::new();
    for s in subscriptions {
        let event = HookEvent::from(s.event);
        // A repeated event keeps its first priority: one delivery per event.
        if !out.iter().any(|o| o.event == event) {
            out.push(HookSubscription {
                event,
                priority: s.priority,
            });
        }
    }
    out
}

/// One call into the `hooks` interface.
enum HookCall<'a> {
    Subscriptions,
    SessionStart(&'a SessionInfo),
    SessionEnd(&'a SessionInfo),
    PreLlm(&'a SessionInfo, &'a str),
    PostLlm(&'a SessionInfo, &'a WitMessage),
    PreTool(&'a SessionInfo, &'a str, &'a String),
    PostTool(
        &'a SessionInfo,
        &'a str,
        &'a String,
        Result<&'a String, &'a WitToolError>,
    ),
}

impl HookCall<'_> {
    fn session(&self) -> Option<&SessionInfo> {
        match self {
            Self::Subscriptions => None,
            Self::SessionStart(s)
            | Self::SessionEnd(s)
            | Self::PreLlm(s, _)
            | Self::PostLlm(s, _)
            | Self::PreTool(s, ..)
            | Self::PostTool(s, ..) => Some(s),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Subscriptions => "subscriptions",
            Self::SessionStart(..) => "session-start",
            Self::SessionEnd(..) => "session-end",
            Self::PreLlm(..) => "pre-llm",
            Self::PostLlm(..) => "post-llm",
            Self::PreTool(..) => "pre-tool",
            Self::PostTool(..) => "post-tool",
        }
    }
}

/// What a hook returned.
enum HookReply {
    Subscriptions(Vec<Subscription>),
    Nothing,
    Text(Option<String>),
    Verdict(PreToolVerdict),
}

/// Runs one hook call in a fresh instance.
async fn invoke_hook(
    inv: &Invocation<'_>,
    pre: &HooksPluginPre<PluginState>,
    sandbox: &Sandbox,
    call: HookCall<'_>,
) -> Result<HookReply, CallError> {
    let shared = inv.shared;
    let name = call.name();
    let session_id = call.session().map_or("", |s| s.session_id.as_str());
    let mut prepared = prepare(
        inv,
        sandbox,
        CallFor {
            session_id,
            tool: name,
        },
    )?;
    let store = &mut prepared.store;
    let raced = race(
        async {
            let instance = pre.instantiate_async(&mut *store).await?;
            let hooks = instance.talaria_plugin_hooks();
            let store = &mut *store;
            Ok(match call {
                HookCall::Subscriptions => {
                    HookReply::Subscriptions(hooks.call_subscriptions(store).await?)
                }
                HookCall::SessionStart(session) => {
                    hooks.call_session_start(store, session).await?;
                    HookReply::Nothing
                }
                HookCall::SessionEnd(session) => {
                    hooks.call_session_end(store, session).await?;
                    HookReply::Nothing
                }
                HookCall::PreLlm(session, message) => {
                    HookReply::Text(hooks.call_pre_llm(store, session, message).await?)
                }
                HookCall::PostLlm(session, reply) => {
                    hooks.call_post_llm(store, session, reply).await?;
                    HookReply::Nothing
                }
                HookCall::PreTool(session, tool, arguments) => {
                    HookReply::Verdict(hooks.call_pre_tool(store, session, tool, arguments).await?)
                }
                HookCall::PostTool(session, tool, arguments, result) => HookReply::Text(
                    hooks
                        .call_post_tool(store, session, tool, arguments, result)
                        .await?,
                ),
            })
        },
        shared.timeout(),
        None,
    )
    .await;
    classify(raced, &prepared, shared, name)
}

/// The kernel's [`Hooks`] over the hooks plugins among those loaded.
pub struct PluginHooks {
    entries: Vec<Placed>,
    surface: String,
    failures: Failures,
}

impl std::fmt::Debug for PluginHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHooks")
            .field("plugins", &names(&self.entries))
            .field("surface", &self.surface)
            .finish_non_exhaustive()
    }
}

impl PluginHooks {
    /// Hooks over the hooks plugins among `plugins` (others are ignored), for
    /// sessions in `cwd` on `surface` (`cli`, `gateway`…, passed to plugins).
    pub fn new(
        plugins: Vec<LoadedPlugin>,
        cwd: &Path,
        surface: impl Into<String>,
    ) -> Result<Self, HostError> {
        let (_, entries) = super::place::<HooksKind>(plugins, cwd)?;
        Ok(Self {
            entries,
            surface: surface.into(),
            failures: Failures::default(),
        })
    }

    /// Whether no plugin provides hooks.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The plugins subscribed to `event`, in the order they run.
    pub fn order(&self, event: HookEvent) -> Vec<&str> {
        self.subscribers(event)
            .iter()
            .map(|e| e.plugin.name())
            .collect()
    }

    fn subscribers(&self, event: HookEvent) -> Vec<&Placed> {
        let mut found: Vec<(i32, &Placed)> = self
            .entries
            .iter()
            .filter_map(|entry| {
                entry
                    .plugin
                    .hook_subscriptions()
                    .iter()
                    .find(|s| s.event == event)
                    .map(|s| (s.priority, entry))
            })
            .collect();
        found.sort_by(|(pa, a), (pb, b)| pb.cmp(pa).then(a.plugin.name().cmp(b.plugin.name())));
        found.into_iter().map(|(_, entry)| entry).collect()
    }

    fn info(&self, session: HookSession<'_>) -> SessionInfo {
        SessionInfo {
            session_id: session.session_id.to_owned(),
            surface: self.surface.clone(),
            model: session.model.to_owned(),
        }
    }

    /// Calls one plugin's hook; failures are logged, counted and give `None`.
    async fn call(
        &self,
        entry: &Placed,
        session_id: &str,
        call: HookCall<'_>,
    ) -> Option<HookReply> {
        let plugin = entry.plugin.name();
        if self.failures.count(plugin, session_id) >= DISABLE_AFTER_FAILURES {
            return None;
        }
        let Ok(sandbox) = &entry.sandbox else {
            return None;
        };
        let name = call.name();
        let inner = &entry.plugin.inner;
        let pre = match inner.pre::<HooksKind>().await {
            Ok(found) => found?.1,
            Err(error) => {
                entry.plugin.log().push(
                    LogLevel::Warn,
                    LogSource::Host,
                    &format!("{name} hook skipped: {error}"),
                );
                return None;
            }
        };
        match invoke_hook(&inner.invocation(), pre, sandbox, call).await {
            Ok(reply) => Some(reply),
            Err(err) => {
                // `classify` has logged the failure itself.
                entry.plugin.log().push(
                    LogLevel::Warn,
                    LogSource::Host,
                    &format!("{name} hook skipped: {err}"),
                );
                if err.is_plugin_failure() {
                    self.failures.record(&entry.plugin, session_id);
                }
                None
            }
        }
    }

    async fn notify(&self, event: HookEvent, session: HookSession<'_>) {
        let info = self.info(session);
        for entry in self.subscribers(event) {
            let call = match event {
                HookEvent::SessionStart => HookCall::SessionStart(&info),
                _ => HookCall::SessionEnd(&info),
            };
            self.call(entry, session.session_id, call).await;
        }
    }

    fn invalid_output(&self, entry: &Placed, session_id: &str, message: String) {
        let err = CallError::InvalidOutput {
            plugin: entry.plugin.name().to_owned(),
            tool: "pre-tool".into(),
            message,
        };
        entry
            .plugin
            .log()
            .push(LogLevel::Error, LogSource::Host, &err.to_string());
        self.failures.record(&entry.plugin, session_id);
    }
}

#[async_trait]
impl Hooks for PluginHooks {
    async fn session_start(&self, session: HookSession<'_>) {
        self.notify(HookEvent::SessionStart, session).await;
    }

    async fn pre_llm(&self, session: HookSession<'_>, user_message: &str) -> Option<String> {
        let info = self.info(session);
        let mut parts = Vec::new();
        for entry in self.subscribers(HookEvent::PreLlm) {
            let call = HookCall::PreLlm(&info, user_message);
            if let Some(HookReply::Text(Some(text))) =
                self.call(entry, session.session_id, call).await
                && !text.trim().is_empty()
            {
                parts.push(text);
            }
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    async fn post_llm(&self, session: HookSession<'_>, response: &ModelResponse) {
        let info = self.info(session);
        let reply = WitMessage {
            role: WitRole::Assistant,
            content: response.message.content.clone(),
            tool_call_id: None,
            name: None,
        };
        for entry in self.subscribers(HookEvent::PostLlm) {
            self.call(entry, session.session_id, HookCall::PostLlm(&info, &reply))
                .await;
        }
    }

    async fn pre_tool(&self, session: HookSession<'_>, call: &ValidatedCall) -> HookVerdict {
        let info = self.info(session);
        let mut arguments = call.arguments.clone();
        let mut rewritten = false;
        for entry in self.subscribers(HookEvent::PreTool) {
            let text = arguments.to_string();
            let hook_call = HookCall::PreTool(&info, &call.call.name, &text);
            match self.call(entry, session.session_id, hook_call).await {
                Some(HookReply::Verdict(PreToolVerdict::Veto(reason))) => {
                    return HookVerdict::Block(format!(
                        "{reason} (vetoed by plugin {})",
                        entry.plugin.name()
                    ));
                }
                Some(HookReply::Verdict(PreToolVerdict::Rewrite(json))) => {
                    match serde_json::from_str::<serde_json::Value>(&json) {
                        Ok(value) if value.is_object() => {
                            arguments = value;
                            rewritten = true;
                        }
                        Ok(_) => self.invalid_output(
                            entry,
                            session.session_id,
                            "rewritten arguments must be a JSON object".into(),
                        ),
                        Err(e) => self.invalid_output(
                            entry,
                            session.session_id,
                            format!("rewritten arguments are not JSON: {e}"),
                        ),
                    }
                }
                _ => {}
            }
        }
        if rewritten {
            HookVerdict::Rewrite(arguments)
        } else {
            HookVerdict::Continue
        }
    }

    async fn post_tool(&self, session: HookSession<'_>, call: &ToolCall, result: &mut ToolResult) {
        let info = self.info(session);
        for entry in self.subscribers(HookEvent::PostTool) {
            let outcome = if result.is_error {
                Err(WitToolError::Failed(result.content.clone()))
            } else {
                Ok(result.content.clone())
            };
            let hook_call =
                HookCall::PostTool(&info, &call.name, &call.arguments, outcome.as_ref());
            if let Some(HookReply::Text(Some(text))) =
                self.call(entry, session.session_id, hook_call).await
            {
                result.content = text;
            }
        }
    }

    async fn session_end(&self, session: HookSession<'_>) {
        self.notify(HookEvent::SessionEnd, session).await;
    }
}
