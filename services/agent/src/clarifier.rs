//! The port `clarify` asks through. A surface where someone can answer (the
//! REPL, an editor over ACP, a chat behind the gateway) hands one to the
//! agent; without one the tool is not offered, so one-shot runs, cron, batch,
//! the API server, webhooks and MCP serve never see it.

use std::time::Duration;

use async_trait::async_trait;
use talaria_kernel::CancellationToken;

/// What came of a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClarifyAnswer {
    /// The user's answer: the text of the choice they picked, or their own words.
    Answered(String),
    /// The user gave none.
    NoAnswer(NoAnswer),
}

/// Why a question went unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswer {
    /// The user dismissed it (Ctrl-C at the question, "decline" in the editor).
    Declined,
    /// Nobody answered within this time.
    TimedOut(Duration),
    /// The question was withdrawn: the turn was interrupted.
    Cancelled,
}

/// The question could not be asked at all (the chat could not be reached).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClarifyError(pub String);

/// Asks the user a question for `clarify`.
#[async_trait]
pub trait Clarifier: Send + Sync {
    /// Shows `question` with its `choices` (0 to 4, numbered from 1) and
    /// waits for the answer, or until `cancel` fires. Surfaces that time a
    /// question out say so with [`NoAnswer::TimedOut`].
    async fn ask(
        &self,
        question: &str,
        choices: &[String],
        cancel: &CancellationToken,
    ) -> Result<ClarifyAnswer, ClarifyError>;

    /// Whether the user can answer in their own words; when not (an editor
    /// that can only show options), questions need choices.
    fn takes_free_text(&self) -> bool {
        true
    }
}
