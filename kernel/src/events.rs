//! What the loop tells the surface while it runs. Serialisable so a surface can
//! print them as JSON lines.

use serde::Serialize;

use crate::budget::Exhaustion;
use crate::message::Usage;
use crate::model::StreamEvent;

/// One observable step of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A model request is about to be sent.
    ModelRequest {
        /// Iteration number within this run (1-based).
        iteration: u32,
        /// Model asked.
        model: String,
    },
    /// A model call finished.
    Usage {
        /// The model that served the call, and its masked key when keys are pooled.
        served_by: String,
        /// Tokens of this call.
        usage: Usage,
        /// Cost of this call in USD (0 without prices).
        cost_usd: f64,
    },
    /// A call failed and will be retried after a delay.
    Retrying {
        /// Retry number (1-based).
        attempt: u32,
        /// Delay before the retry, in milliseconds.
        delay_ms: u64,
        /// The error being retried.
        error: String,
    },
    /// The loop switched to the next model of the fallback chain.
    FallbackActivated {
        /// Model that failed.
        from: String,
        /// Model used from now on.
        to: String,
        /// Why.
        error: String,
    },
    /// A tool call begins.
    ToolStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as sent by the model.
        arguments: String,
    },
    /// A tool call ended.
    ToolFinished {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Result text.
        content: String,
        /// Whether it failed.
        is_error: bool,
        /// Time taken, in milliseconds.
        duration_ms: u64,
    },
    /// A budget ran out; the model was warned and gets one grace call.
    BudgetWarning {
        /// Which budget.
        exhausted: Exhaustion,
    },
    /// The context was compressed; the conversation continues in a new session.
    Compressed {
        /// The session that was closed.
        from_session: String,
        /// The session that continues it.
        to_session: String,
        /// Estimated prompt tokens before.
        tokens_before: usize,
        /// Estimated prompt tokens after.
        tokens_after: usize,
        /// Whether a model summary was made (false: the fallback summary or pruning only).
        summarized: bool,
    },
    /// Something went wrong that did not stop the run (e.g. persisting failed).
    Warning {
        /// What happened.
        message: String,
    },
    /// The run's final text.
    Final {
        /// The answer (or the forced summary).
        text: String,
    },
    /// Streamed model output, passed through as it arrives.
    #[serde(untagged)]
    Stream(StreamEvent),
}

/// Receives the loop's events.
pub trait EventSink: Send + Sync {
    /// Called for each event, in order.
    fn emit(&self, event: AgentEvent);
}

/// Drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: AgentEvent) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_flat_with_a_type_tag() {
        let delta = AgentEvent::Stream(StreamEvent::TextDelta { text: "hi".into() });
        assert_eq!(
            serde_json::to_string(&delta).unwrap(),
            r#"{"type":"text_delta","text":"hi"}"#
        );
        let fin = AgentEvent::Final {
            text: "done".into(),
        };
        assert_eq!(
            serde_json::to_string(&fin).unwrap(),
            r#"{"type":"final","text":"done"}"#
        );
    }
}
