//! Talaria's microkernel.
//!
//! Only three things live here: the agent loop (a state machine over turns,
//! [`agent_loop`]), the budgets ([`budget`]) and the prompt/cache builder
//! ([`prompt`]). The kernel talks to the world through the small ports in
//! [`model`] and [`ports`]; everything that does I/O implements them from
//! outside, so the loop is tested with fakes.

// Everything public here is what the rest of Talaria is written against.
#![warn(missing_docs)]

pub mod agent_loop;
pub mod budget;
pub mod compress;
pub mod events;
pub mod message;
pub mod model;
pub mod ports;
pub mod principal;
pub mod prompt;
pub mod retry;
pub mod scrub;
pub mod validate;

pub use agent_loop::{
    AgentLoop, Compaction, Conversation, Exit, Grace, LoopConfig, LoopError, LoopState, ModelRoute,
    Phase, Ports,
};
pub use budget::{Budget, Exhaustion, IterationBudget, Pricing};
pub use events::{AgentEvent, EventSink, NoEvents};
pub use message::{ImageRef, Message, ProviderState, Role, ToolCall, ToolResult, ToolSpec, Usage};
pub use model::{
    CacheBreakpoints, FinishReason, ModelError, ModelProvider, ModelRequest, ModelResponse,
    NullSink, StreamEvent, StreamSink, ToolChoice,
};
pub use ports::{
    Clock, ExternalMemory, HookSession, HookVerdict, Hooks, NoHooks, SessionStore, Steering,
    StoreError, Summarizer, SystemClock, ToolContext, ToolDispatcher, ValidatedCall,
};
pub use principal::Principal;
pub use prompt::{FrozenPrompt, PromptBuilder, Section};
pub use retry::RetryPolicy;
pub use tokio_util::sync::CancellationToken;
