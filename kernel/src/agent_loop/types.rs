//! The loop's public types: its configuration and ports, the conversation it
//! runs, the state it keeps across turns, and how a run ends.

use super::*;

/// One model of the fallback chain.
#[derive(Clone)]
pub struct ModelRoute {
    /// Endpoint speaking the model's wire format.
    pub provider: Arc<dyn ModelProvider>,
    /// Model name at that endpoint.
    pub model: String,
    /// Which credential of a pool it uses, masked (`…wxyz`); `None` with a single key.
    pub credential: Option<String>,
}

impl ModelRoute {
    /// The model, and the masked credential when the route is one of a pool.
    pub fn label(&self) -> String {
        match &self.credential {
            Some(credential) => format!("{} (key {credential})", self.model),
            None => self.model.clone(),
        }
    }
}

impl std::fmt::Debug for ModelRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider.name(), self.label())
    }
}

/// The loop's tunables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopConfig {
    /// Retries of failed model calls.
    pub retry: RetryPolicy,
    /// How often a reply cut at the token limit is continued.
    pub max_continuations: u32,
    /// Output token cap per call.
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens; compression starts at
    /// `compress_at` of it. `None`: only a context-overflow error compresses.
    pub context_window: Option<u32>,
    /// Share of the context window that triggers compression (0 means 0.5).
    pub compress_at: f32,
    /// Compressions after context-overflow errors before the call gives up (0 means 3).
    pub max_overflow_compressions: u32,
}

impl LoopConfig {
    /// The defaults: three retries, three continuations, no token cap.
    pub fn standard() -> Self {
        Self {
            max_continuations: 3,
            ..Self::default()
        }
    }
}

/// The I/O the loop is wired to.
#[derive(Clone)]
pub struct Ports {
    /// Runs tools.
    pub tools: Arc<dyn ToolDispatcher>,
    /// Observes and gates calls.
    pub hooks: Arc<dyn Hooks>,
    /// Summarises for compression; without one a deterministic summary is used.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// Persists every message.
    pub store: Arc<dyn SessionStore>,
    /// An external memory provider, when one is active.
    pub memory: Option<Arc<dyn ExternalMemory>>,
    /// Time and sleeping.
    pub clock: Arc<dyn Clock>,
}

impl Ports {
    /// Ports with no hooks.
    pub fn new(
        tools: Arc<dyn ToolDispatcher>,
        store: Arc<dyn SessionStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            tools,
            hooks: Arc::new(NoHooks),
            summarizer: None,
            store,
            memory: None,
            clock,
        }
    }
}

/// One session's conversation: its frozen prompt and its messages.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// Session id (for the store and tools).
    pub session_id: String,
    /// Built once at session start; never rebuilt mid-session.
    pub prompt: FrozenPrompt,
    /// Every message so far (the system prompt is separate).
    pub messages: Vec<Message>,
}

impl Conversation {
    /// A new, empty conversation.
    pub fn new(session_id: impl Into<String>, prompt: FrozenPrompt) -> Self {
        Self {
            session_id: session_id.into(),
            prompt,
            messages: Vec::new(),
        }
    }
}

/// Where the state machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// Not running.
    #[default]
    Idle,
    /// Next: ask the model.
    CallModel,
    /// Next: run the outstanding tool calls.
    RunTools,
    /// Next: ask for the final summary (budget exhausted, grace used).
    ForceSummary,
    /// The run has exited.
    Done,
}

/// Progress through the budget-exhaustion protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grace {
    /// The budget has not run out.
    #[default]
    NotNeeded,
    /// The warning is in the conversation; the next call is the grace call.
    Warned(Exhaustion),
    /// The grace call was made; next comes the forced summary.
    Used(Exhaustion),
}

/// Everything the loop remembers across turns, open to inspection.
#[derive(Debug, Clone, Default)]
pub struct LoopState {
    /// Current phase.
    pub phase: Phase,
    /// Model calls made in the current run.
    pub iterations: u32,
    /// Failed attempts of the call in progress.
    pub retries: u32,
    /// Retries over the loop's lifetime.
    pub total_retries: u32,
    /// Index of the active model in the fallback chain; stays once switched.
    pub route: usize,
    /// Tool calls requested and not yet answered.
    pub outstanding: Vec<ToolCall>,
    /// Continuations of truncated replies in the current run.
    pub continuations: u32,
    /// Budget-exhaustion protocol.
    pub grace: Grace,
    /// Whether the last model call took an iteration (grace calls don't).
    pub last_call_consumed: bool,
    /// Text of truncated replies awaiting their continuation.
    pub partial_text: String,
    /// Tokens over the loop's lifetime.
    pub usage: Usage,
    /// USD over the loop's lifetime.
    pub cost_usd: f64,
    /// Whether the `session_start` hooks have run (and `session_end` is owed).
    pub session_started: bool,
    /// Compressions in a row that shrank the prompt by less than 10 %.
    pub compressions_without_gain: u32,
    /// Compressions over the loop's lifetime.
    pub compressions: u32,
    /// Compressions after context-overflow errors since the last successful call.
    pub overflow_compressions: u32,
    /// An output cap lower than the configured one, after the provider said the prompt and
    /// the output budget together do not fit; lifted by the next compression.
    pub max_tokens_cap: Option<u32>,
}

/// What a compression did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// Estimated prompt tokens before.
    pub tokens_before: usize,
    /// Estimated prompt tokens after.
    pub tokens_after: usize,
    /// Tool outputs replaced by a placeholder.
    pub pruned_outputs: usize,
    /// Messages folded into the summary (0: pruning was enough).
    pub summarized_messages: usize,
    /// Tool results cut to their head and tail (anywhere, the protected head and tail too).
    pub shrunk_results: usize,
    /// The session continuing the conversation (a new one when anything changed).
    pub session_id: String,
}

impl LoopState {
    pub(super) fn begin_run(&mut self) {
        self.phase = Phase::CallModel;
        self.iterations = 0;
        self.retries = 0;
        self.outstanding.clear();
        self.continuations = 0;
        self.grace = Grace::NotNeeded;
        self.last_call_consumed = false;
        self.partial_text.clear();
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// The model answered.
    Final(String),
    /// A budget ran out; `summary` is the forced final summary.
    BudgetExhausted {
        /// Which budget.
        exhausted: Exhaustion,
        /// The model's summary, or a deterministic one if it could not give one.
        summary: String,
    },
    /// The user interrupted; the conversation is valid for the next request.
    Interrupted,
}

/// A run that could not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoopError {
    /// The model failed after retries and every fallback.
    #[error("model '{model}' failed: {error}")]
    Model {
        /// The last model tried.
        model: String,
        /// Its error.
        error: ModelError,
    },
    /// No model was configured.
    #[error("no model configured")]
    NoModel,
    /// The prompt cannot be made small enough for the model.
    #[error("{0}")]
    ContextTooLarge(String),
}
