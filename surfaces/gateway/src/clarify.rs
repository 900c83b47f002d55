//! `clarify` in the chat: the question is posted where the turn came from
//! (choices numbered), and the next message of the user who started the turn,
//! in that chat, answers it — a number picks a choice, anything else is their
//! own answer. It waits like an approval does ([`Waiting`]); no answer within
//! `clarify.timeout_secs` lets the agent go on without one. The core knows no
//! agent crate: the runner adapts [`ChatClarifier`] to the agent's port.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::approvals::Waiting;
use crate::delivery::{Destination, deliver};
use crate::driver::Outbox;
use crate::ports::ChatCapabilities;

/// The questions waiting for an answer, per chat and user.
pub type Clarifications = Waiting<String>;

/// The key of a chat's questions to one user.
pub fn clarify_key(chat: &str, user: &str) -> String {
    serde_json::Value::from(vec![chat, user]).to_string()
}

/// What came of a question asked in the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatAnswer {
    /// The picked choice's text, or the user's own words.
    Answered(String),
    /// Nobody answered within this time.
    TimedOut(Duration),
    /// The turn ended first.
    Cancelled,
}

/// Asks one user in one chat.
#[derive(Debug)]
pub struct ChatClarifier {
    pub(crate) clarifications: Arc<Clarifications>,
    pub(crate) outbox: Outbox,
    pub(crate) capabilities: ChatCapabilities,
    /// [`clarify_key`] of the chat and the user who started the turn.
    pub(crate) key: String,
    /// That user's sender id: only they answer.
    pub(crate) asker: String,
    pub(crate) to: Destination,
    pub(crate) timeout: Duration,
}

/// Withdraws a question however the wait ends (answered, timed out, or the
/// turn dropped the call), so a later message is not taken as its answer.
struct Withdraw<'a> {
    clarifications: &'a Clarifications,
    key: &'a str,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.clarifications.withdraw(self.key, self.id);
    }
}

impl ChatClarifier {
    /// Posts `question` and waits for the answer; `Err` when it cannot be posted.
    pub async fn ask(
        &self,
        question: &str,
        choices: &[String],
        cancel: &CancellationToken,
    ) -> Result<ChatAnswer, String> {
        // Registered before asking, so an answer typed at once is not lost.
        let (id, answered) = self.clarifications.register(&self.key, &self.asker);
        let _withdraw = Withdraw {
            clarifications: &self.clarifications,
            key: &self.key,
            id,
        };
        let text = question_text(question, choices, self.timeout);
        deliver(&self.outbox, &self.capabilities, &self.to, &text)
            .await
            .map_err(|error| format!("cannot post the question: {error}"))?;
        tokio::select! {
            reply = tokio::time::timeout(self.timeout, answered) => match reply {
                Ok(Ok(reply)) => Ok(ChatAnswer::Answered(pick(&reply, choices))),
                Ok(Err(_)) => Ok(ChatAnswer::Cancelled),
                Err(_elapsed) => {
                    let note = "No answer in time: going on without it.";
                    let _ = deliver(&self.outbox, &self.capabilities, &self.to, note).await;
                    Ok(ChatAnswer::TimedOut(self.timeout))
                }
            },
            () = cancel.cancelled() => Ok(ChatAnswer::Cancelled),
        }
    }
}

/// The question as posted.
fn question_text(question: &str, choices: &[String], timeout: Duration) -> String {
    let mut text = format!("Question: {question}");
    for (i, choice) in choices.iter().enumerate() {
        text.push_str(&format!("\n{}. {choice}", i + 1));
    }
    let how = if choices.is_empty() {
        "Reply with your answer"
    } else {
        "Reply with a number or your own answer"
    };
    let secs = timeout.as_secs();
    let within = if secs >= 120 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    };
    text.push_str(&format!("\n{how} — within {within}."));
    text
}

/// The answer a reply gives: the choice its number names, else its text.
fn pick(reply: &str, choices: &[String]) -> String {
    let reply = reply.trim();
    reply
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| choices.get(i))
        .cloned()
        .unwrap_or_else(|| reply.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_picks_a_choice_and_other_text_is_the_answer() {
        let choices = ["staging".to_owned(), "prod".to_owned()];
        assert_eq!(pick(" 2 ", &choices), "prod");
        assert_eq!(pick("1", &choices), "staging");
        assert_eq!(pick("3", &choices), "3");
        assert_eq!(pick("0", &choices), "0");
        assert_eq!(pick("neither, use dev", &choices), "neither, use dev");
        assert_eq!(pick("7", &[]), "7");
    }

    #[test]
    fn the_question_numbers_its_choices_and_says_how_long_it_waits() {
        let text = question_text(
            "Which target?",
            &["staging".to_owned(), "prod".to_owned()],
            Duration::from_secs(300),
        );
        assert_eq!(
            text,
            "Question: Which target?\n1. staging\n2. prod\n\
             Reply with a number or your own answer — within 5 min."
        );
        let open = question_text("Why?", &[], Duration::from_secs(90));
        assert!(
            open.ends_with("Reply with your answer — within 90 s."),
            "{open}"
        );
    }
}
