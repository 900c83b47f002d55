//! `clarify` in the REPL: the question and its numbered choices are printed
//! on the terminal and one line answers it (a number picks a choice, other
//! text is the answer), read as approvals are ([`crate::tty`]). Ctrl-C while
//! it waits gives the question up and the turn goes on; the REPL's Ctrl-C
//! watcher finds the question in its [`QuestionSlot`].

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use talaria_agent::{Clarifier, ClarifyAnswer, ClarifyError, NoAnswer};
use talaria_kernel::CancellationToken;

use crate::approver::BeforeAsking;
use crate::tty::{TtyAnswer, ask};

/// The question on screen, if any: Ctrl-C cancels it rather than the turn.
pub type QuestionSlot = Arc<Mutex<Option<CancellationToken>>>;

/// Cancels the question on screen; false when none is.
pub fn cancel_question(slot: &QuestionSlot) -> bool {
    let Ok(question) = slot.lock() else {
        return false;
    };
    match question.as_ref() {
        Some(token) if !token.is_cancelled() => {
            token.cancel();
            true
        }
        _ => false,
    }
}

/// The terminal's [`Clarifier`].
pub struct TerminalClarifier {
    before_asking: BeforeAsking,
    question: QuestionSlot,
}

impl TerminalClarifier {
    /// Runs `before_asking` before each question (the spinner stops) and
    /// puts the question in `question` while it waits.
    pub fn new(before_asking: BeforeAsking, question: QuestionSlot) -> Self {
        Self {
            before_asking,
            question,
        }
    }

    fn showing(&self, token: Option<CancellationToken>) {
        if let Ok(mut slot) = self.question.lock() {
            *slot = token;
        }
    }
}

#[async_trait]
impl Clarifier for TerminalClarifier {
    async fn ask(
        &self,
        question: &str,
        choices: &[String],
        cancel: &CancellationToken,
    ) -> Result<ClarifyAnswer, ClarifyError> {
        (self.before_asking)();
        // Cancelled by Ctrl-C at the question, or with the turn.
        let stop = cancel.child_token();
        self.showing(Some(stop.clone()));
        let mut text = question_text(question, choices);
        let answer = loop {
            match ask(text, stop.clone()).await {
                // Enter alone asks again: an answer is a choice or words.
                TtyAnswer::Line(line) if line.trim().is_empty() => {
                    text = "    answer: ".to_owned();
                }
                answer => break answer,
            }
        };
        self.showing(None);
        match answer {
            TtyAnswer::Line(line) => Ok(ClarifyAnswer::Answered(pick(&line, choices))),
            TtyAnswer::Stopped if cancel.is_cancelled() => {
                Ok(ClarifyAnswer::NoAnswer(NoAnswer::Cancelled))
            }
            TtyAnswer::Stopped => Ok(ClarifyAnswer::NoAnswer(NoAnswer::Declined)),
            TtyAnswer::NoTerminal | TtyAnswer::Failed => {
                Err(ClarifyError("the terminal could not be used to ask".into()))
            }
        }
    }
}

/// The question as shown, in the approval prompt's layout.
fn question_text(question: &str, choices: &[String]) -> String {
    let mut text = format!("\n  ? {}\n", question.replace('\n', "\n    "));
    for (i, choice) in choices.iter().enumerate() {
        text.push_str(&format!("      {}. {choice}\n", i + 1));
    }
    let how = if choices.is_empty() {
        "your answer"
    } else {
        "a number, or your own answer"
    };
    text.push_str(&format!("    {how} (Ctrl-C skips): "));
    text
}

/// The answer a line gives: the choice its number names, else its text.
fn pick(line: &str, choices: &[String]) -> String {
    let line = line.trim();
    line.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| choices.get(i))
        .cloned()
        .unwrap_or_else(|| line.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_picks_a_choice_and_other_text_is_the_answer() {
        let choices = ["staging".to_owned(), "prod".to_owned()];
        assert_eq!(pick("2\n", &choices), "prod");
        assert_eq!(pick(" 1 ", &choices), "staging");
        assert_eq!(pick("5", &choices), "5");
        assert_eq!(pick("use dev", &choices), "use dev");
    }

    #[test]
    fn the_question_lists_its_choices_numbered() {
        let text = question_text("Which target?", &["staging".to_owned(), "prod".to_owned()]);
        assert_eq!(
            text,
            "\n  ? Which target?\n      1. staging\n      2. prod\n    \
             a number, or your own answer (Ctrl-C skips): "
        );
    }

    #[test]
    fn ctrl_c_cancels_only_a_question_on_screen() {
        let slot = QuestionSlot::default();
        assert!(!cancel_question(&slot));
        let token = CancellationToken::new();
        *slot.lock().unwrap() = Some(token.clone());
        assert!(cancel_question(&slot));
        assert!(token.is_cancelled());
        // A second Ctrl-C goes to the turn.
        assert!(!cancel_question(&slot));
    }
}
