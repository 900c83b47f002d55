//! Approvals asked in the chat: the question is posted where the turn came
//! from, and an authorized user of that chat answers with `/approve`
//! (`session`, `always`) or `/deny`. No answer within the timeout is a refusal.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use talaria_approval::{ApprovalRequest, Approver, Decision};
use tokio::sync::oneshot;

use crate::delivery::{Destination, deliver};
use crate::driver::Outbox;
use crate::ports::ChatCapabilities;

/// Questions waiting for an answer, per key (a chat; for `clarify`, a chat
/// and its user): approvals and clarifications share this mechanism.
#[derive(Debug)]
pub struct Waiting<T> {
    waiting: Mutex<HashMap<String, VecDeque<Question<T>>>>,
    next_id: AtomicU64,
}

/// The approval questions waiting, per chat (platform, chat, thread).
pub type Approvals = Waiting<Decision>;

/// A question's id and where its answer goes.
type Question<T> = (u64, oneshot::Sender<T>);

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self {
            waiting: Mutex::default(),
            next_id: AtomicU64::new(0),
        }
    }
}

impl<T> Waiting<T> {
    pub(crate) fn register(&self, key: &str) -> (u64, oneshot::Receiver<T>) {
        let (answer, answered) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting
                .entry(key.to_owned())
                .or_default()
                .push_back((id, answer));
        }
        (id, answered)
    }

    pub(crate) fn withdraw(&self, key: &str, id: u64) {
        if let Ok(mut waiting) = self.waiting.lock()
            && let Some(questions) = waiting.get_mut(key)
        {
            questions.retain(|(question, _)| *question != id);
            if questions.is_empty() {
                waiting.remove(key);
            }
        }
    }

    /// Answers the oldest question waiting under `key`; false when none is.
    pub fn answer(&self, key: &str, answer: T) -> bool {
        let Ok(mut waiting) = self.waiting.lock() else {
            return false;
        };
        let Some(questions) = waiting.get_mut(key) else {
            return false;
        };
        let mut answer = answer;
        let mut answered = false;
        while let Some((_, question)) = questions.pop_front() {
            // A question whose turn is gone cannot take the answer: try the next.
            match question.send(answer) {
                Ok(()) => {
                    answered = true;
                    break;
                }
                Err(back) => answer = back,
            }
        }
        if questions.is_empty() {
            waiting.remove(key);
        }
        answered
    }

    /// Whether a question waits under `key`.
    pub fn is_waiting(&self, key: &str) -> bool {
        self.waiting
            .lock()
            .is_ok_and(|waiting| waiting.get(key).is_some_and(|q| !q.is_empty()))
    }
}

/// The `/approve` argument as a decision.
pub fn parse_approval(argument: &str) -> Option<Decision> {
    match argument.trim().to_ascii_lowercase().as_str() {
        "" | "once" => Some(Decision::Once),
        "session" => Some(Decision::Session),
        "always" => Some(Decision::Always),
        _ => None,
    }
}

/// Asks in one chat.
#[derive(Debug)]
pub struct ChatApprover {
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) outbox: Outbox,
    pub(crate) capabilities: ChatCapabilities,
    /// The approvals key of the chat.
    pub(crate) chat: String,
    pub(crate) to: Destination,
    pub(crate) timeout: Duration,
}

#[async_trait]
impl Approver for ChatApprover {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        // Registered before asking, so an answer typed at once is not lost.
        let (id, answered) = self.approvals.register(&self.chat);
        let question = format!(
            "Approval needed: {tool} wants to run\n{command}\nWhy: {why}\nAnswer /approve \
             (this once), /approve session, /approve always, or /deny — within {secs} s.",
            tool = request.tool,
            command = request.command,
            why = request.finding.description,
            secs = self.timeout.as_secs(),
        );
        if let Err(error) = deliver(&self.outbox, &self.capabilities, &self.to, &question).await {
            crate::log(format_args!("cannot ask for approval: {error}"));
            self.approvals.withdraw(&self.chat, id);
            return Decision::Unavailable;
        }
        match tokio::time::timeout(self.timeout, answered).await {
            Ok(Ok(decision)) => decision,
            Ok(Err(_)) => Decision::Unavailable,
            Err(_) => {
                self.approvals.withdraw(&self.chat, id);
                let note = "No answer in time: refused.";
                let _ = deliver(&self.outbox, &self.capabilities, &self.to, note).await;
                Decision::Deny
            }
        }
    }
}
