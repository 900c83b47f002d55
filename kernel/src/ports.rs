//! The ports besides the model: tool dispatch, hooks, session store and clock.
//! Everything behind them does I/O and lives outside the kernel.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::message::{Message, ToolCall, ToolResult, ToolSpec, Usage};
use crate::model::ModelResponse;

/// A tool call the loop has checked: the tool exists and the arguments are a
/// JSON object with every required field present.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedCall {
    /// The call as the model sent it.
    pub call: ToolCall,
    /// The parsed arguments object.
    pub arguments: serde_json::Value,
}

/// What a tool learns about where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    /// The session the call belongs to.
    pub session_id: String,
}

/// Runs tool calls. Scheduling, approval and execution backends live behind it.
#[async_trait]
pub trait ToolDispatcher: Send + Sync {
    /// The tools the model may see.
    fn specs(&self) -> Vec<ToolSpec>;

    /// Runs one turn's validated calls and returns exactly one result per call,
    /// in call order. A failing tool is an error result, never a panic.
    async fn execute(
        &self,
        calls: &[ValidatedCall],
        context: &ToolContext,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult>;
}

/// Whether a tool call may go ahead.
#[derive(Debug, Clone, PartialEq)]
pub enum HookVerdict {
    /// Run the call.
    Continue,
    /// Do not run it; the model reads the reason as the call's error result.
    Block(String),
    /// Run the call with these arguments instead (checked against the tool's
    /// schema like the model's own).
    Rewrite(serde_json::Value),
}

/// The session a hook runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSession<'a> {
    /// The session id.
    pub session_id: &'a str,
    /// The model currently answering.
    pub model: &'a str,
}

/// Observers and gates around a session, its model calls and its tool calls.
/// Every method defaults to a no-op. The loop calls them in this order:
/// `session_start` once (before the first turn), `pre_llm` once per user turn,
/// `post_llm` after each model response, `pre_tool`/`post_tool` around each
/// call, and `session_end` when the surface ends the session.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Before the session's first turn.
    async fn session_start(&self, _session: HookSession<'_>) {}
    /// Once per user turn, before its first model call: extra context that is
    /// appended to the user's message (never to the system prompt, which stays
    /// byte-stable for prompt caching).
    async fn pre_llm(&self, _session: HookSession<'_>, _user_message: &str) -> Option<String> {
        None
    }
    /// After each successful model response.
    async fn post_llm(&self, _session: HookSession<'_>, _response: &ModelResponse) {}
    /// Before each validated tool call: go ahead, veto, or rewrite the arguments.
    async fn pre_tool(&self, _session: HookSession<'_>, _call: &ValidatedCall) -> HookVerdict {
        HookVerdict::Continue
    }
    /// After each tool call; may rewrite the result.
    async fn post_tool(
        &self,
        _session: HookSession<'_>,
        _call: &ToolCall,
        _result: &mut ToolResult,
    ) {
    }
    /// When the surface ends the session.
    async fn session_end(&self, _session: HookSession<'_>) {}
}

/// An external memory provider as the loop sees it; the plugin behind it,
/// its deadline and its queue live outside the kernel.
#[async_trait]
pub trait ExternalMemory: Send + Sync {
    /// What to recall for the turn whose user message is `query`, already
    /// wrapped in `<memory-context>` tags; `None` when nothing (or nothing in
    /// time). Appended to that turn's user message, never to the system prompt.
    async fn prefetch(&self, query: &str) -> Option<String>;
    /// A finished turn: its user message as the user wrote it, through the
    /// final reply. Called once per finished turn; returns at once (the
    /// provider learns off the loop's path).
    fn turn_finished(&self, turn: &[Message]);
    /// Compression is about to summarise `messages`: what the summary must keep.
    async fn before_compress(&self, messages: &[Message]) -> Option<String>;
}

/// Notes the user adds while a turn runs (a chat's `steer` busy mode). The
/// loop takes them before each model call and adds them to the conversation
/// as a user message, so the model sees them at its next step instead of
/// after the turn.
pub trait Steering: Send + Sync {
    /// The notes added since the last call, oldest first.
    fn take_notes(&self) -> Vec<String>;
}

/// Hooks that do nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHooks;

impl Hooks for NoHooks {}

/// Summarises the middle of a conversation for context compression (the
/// auxiliary model behind it lives outside the kernel).
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// A structured summary (goal, decisions, files touched, open tasks) of
    /// `transcript`, paying attention to `focus` when given.
    async fn summarize(&self, transcript: &str, focus: Option<&str>) -> Result<String, String>;
}

/// A failure of the session store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session store: {0}")]
pub struct StoreError(pub String);

/// Where sessions and their messages are persisted, one message at a time.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Persists one message as soon as it exists.
    async fn append(&self, session_id: &str, message: &Message) -> Result<(), StoreError>;
    /// Persists a model's reply as soon as it exists and adds the call's usage
    /// and cost to the session's totals, in one write where the store can (a
    /// turn's commit count is most of its storage cost).
    async fn append_reply(
        &self,
        session_id: &str,
        message: &Message,
        usage: &Usage,
        cost_usd: f64,
    ) -> Result<(), StoreError>;
    /// Compression closed `old_id`; `new_id` continues it with `messages`.
    /// The default appends the messages to the new session.
    async fn continue_as(
        &self,
        old_id: &str,
        new_id: &str,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        let _ = old_id;
        for message in messages {
            self.append(new_id, message).await?;
        }
        Ok(())
    }
}

/// Monotonic time and sleeping, behind a port so tests run without waiting.
#[async_trait]
pub trait Clock: Send + Sync {
    /// Time since an arbitrary fixed origin.
    fn now(&self) -> Duration;
    /// Waits for `duration`.
    async fn sleep(&self, duration: Duration);
}

/// The real clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    // The real clock behind the port (kernel/clippy.toml keeps the rest off it).
    #[allow(clippy::disallowed_methods)]
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    #[allow(clippy::disallowed_methods)]
    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}
