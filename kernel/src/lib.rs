//! Talaria's microkernel.
//!
//! Only three things live here: the agent loop (a state machine over turns),
//! the iteration budget, and the prompt/cache builder. The kernel talks to the
//! world through the small ports in [`model`] and [`ports`]; everything that
//! does I/O implements them from outside, so the loop is tested with fakes.

pub mod message;
pub mod model;

pub use message::{Message, Role, ToolCall, ToolResult, ToolSpec, Usage};
pub use model::{
    CacheBreakpoints, FinishReason, ModelError, ModelProvider, ModelRequest, ModelResponse,
    NullSink, StreamEvent, StreamSink, ToolChoice,
};
pub use tokio_util::sync::CancellationToken;
