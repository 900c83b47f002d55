//! Asks the user on the terminal whether a dangerous command may run, through
//! [`crate::tty`]: it works while stdin and stdout are pipes; with no terminal
//! at all nobody can answer (a refusal).

use std::sync::Arc;

use async_trait::async_trait;
use talaria_approval::{ApprovalRequest, Approver, Decision};
use talaria_kernel::CancellationToken;

use crate::tty::{TtyAnswer, ask, open_tty};

/// Called before a question is shown (the REPL stops its spinner).
pub type BeforeAsking = Arc<dyn Fn() + Send + Sync>;

/// The terminal's [`Approver`].
#[derive(Default, Clone)]
pub struct TerminalApprover {
    before_asking: Option<BeforeAsking>,
}

impl TerminalApprover {
    /// An approver that runs `before_asking` before each question.
    pub fn with_pause(before_asking: BeforeAsking) -> Self {
        Self {
            before_asking: Some(before_asking),
        }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        if let Some(pause) = &self.before_asking {
            pause();
        }
        let question = format!(
            "\n  ! {} needs approval ({}):\n      {}\n    \
             allow [o]nce, for this [s]ession, [a]lways, or [d]eny? ",
            request.tool,
            request.finding.description,
            request.command.replace('\n', "\n      ")
        );
        // An interrupted turn drops this future, which gives the question up.
        match ask(question, CancellationToken::new()).await {
            TtyAnswer::Line(answer) => parse_answer(&answer),
            // No terminal: nobody was asked, and the refusal must say so.
            TtyAnswer::NoTerminal => Decision::Unavailable,
            TtyAnswer::Stopped | TtyAnswer::Failed => Decision::Deny,
        }
    }

    fn can_answer(&self) -> bool {
        open_tty().is_ok()
    }

    fn notify(&self, message: &str) {
        eprintln!("  ! {message}");
    }
}

/// Reads an answer; anything unclear is a denial.
fn parse_answer(answer: &str) -> Decision {
    match answer.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Decision::Once,
        "s" | "session" => Decision::Session,
        "a" | "always" => Decision::Always,
        _ => Decision::Deny,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse_answer("o\n"), Decision::Once);
        assert_eq!(parse_answer(" Session "), Decision::Session);
        assert_eq!(parse_answer("A"), Decision::Always);
        assert_eq!(parse_answer("d"), Decision::Deny);
        assert_eq!(parse_answer(""), Decision::Deny, "enter alone denies");
        assert_eq!(parse_answer("maybe"), Decision::Deny);
    }
}
