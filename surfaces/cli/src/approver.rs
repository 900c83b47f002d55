//! Asks the user on the terminal whether a dangerous command may run. The
//! question goes to the controlling terminal (`/dev/tty`), so it works while
//! stdin and stdout are pipes; with no terminal at all nobody can answer (a refusal).

use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;

use async_trait::async_trait;
use talaria_approval::{ApprovalRequest, Approver, Decision};

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
        let request = request.clone();
        tokio::task::spawn_blocking(move || ask_on_tty(&request))
            .await
            .unwrap_or(Decision::Deny)
    }

    fn can_answer(&self) -> bool {
        open_tty().is_ok()
    }
}

/// The controlling terminal, where questions are asked.
fn open_tty() -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
}

fn ask_on_tty(request: &ApprovalRequest) -> Decision {
    let Ok(tty) = open_tty() else {
        // No terminal: nobody was asked, and the refusal must say so.
        return Decision::Unavailable;
    };
    let Ok(mut out) = tty.try_clone() else {
        return Decision::Deny;
    };
    let question = format!(
        "\n  ! {} needs approval ({}):\n      {}\n    \
         allow [o]nce, for this [s]ession, [a]lways, or [d]eny? ",
        request.tool,
        request.finding.description,
        request.command.replace('\n', "\n      ")
    );
    if out.write_all(question.as_bytes()).is_err() || out.flush().is_err() {
        return Decision::Deny;
    }
    let mut answer = String::new();
    if BufReader::new(tty).read_line(&mut answer).is_err() {
        return Decision::Deny;
    }
    parse_answer(&answer)
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
