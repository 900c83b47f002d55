//! Approvals asked in the chat: the question is posted where the turn came
//! from, and the user whose message started the turn (or an admin of the
//! platform) answers with `/approve` (`session`, `always`) or `/deny`. No
//! answer within the timeout is a refusal.

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
/// and its user), each bound to the user who asked: approvals and
/// clarifications share this mechanism.
#[derive(Debug)]
pub struct Waiting<T> {
    waiting: Mutex<HashMap<String, VecDeque<Question<T>>>>,
    next_id: AtomicU64,
}

/// The approval questions waiting, per chat (platform, chat, thread).
pub type Approvals = Waiting<Decision>;

/// A question waiting: its id, the sender id of the user whose turn asked, and
/// where its answer goes.
#[derive(Debug)]
struct Question<T> {
    id: u64,
    asker: String,
    answer: oneshot::Sender<T>,
}

/// Who is answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answerer<'a> {
    /// This user (their sender id): only their own questions.
    User(&'a str),
    /// An admin of the platform: the oldest question of anyone.
    Admin,
}

/// What became of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// It went to a waiting question.
    Taken,
    /// Questions wait, but for other users (their ids): not theirs to answer.
    NotTheirs(Vec<String>),
    /// Nothing waits under the key.
    NothingWaiting,
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self {
            waiting: Mutex::default(),
            next_id: AtomicU64::new(0),
        }
    }
}

impl<T> Waiting<T> {
    /// Registers a question under `key` that only `asker` (or an admin) answers.
    pub(crate) fn register(&self, key: &str, asker: &str) -> (u64, oneshot::Receiver<T>) {
        let (answer, answered) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting
                .entry(key.to_owned())
                .or_default()
                .push_back(Question {
                    id,
                    asker: asker.to_owned(),
                    answer,
                });
        }
        (id, answered)
    }

    pub(crate) fn withdraw(&self, key: &str, id: u64) {
        if let Ok(mut waiting) = self.waiting.lock()
            && let Some(questions) = waiting.get_mut(key)
        {
            questions.retain(|question| question.id != id);
            if questions.is_empty() {
                waiting.remove(key);
            }
        }
    }

    /// Answers the oldest question waiting under `key` that `answerer` may answer.
    pub fn answer(&self, key: &str, answerer: Answerer<'_>, answer: T) -> Answered {
        let Ok(mut waiting) = self.waiting.lock() else {
            return Answered::NothingWaiting;
        };
        let Some(questions) = waiting.get_mut(key) else {
            return Answered::NothingWaiting;
        };
        let theirs = |question: &Question<T>| match answerer {
            Answerer::Admin => true,
            Answerer::User(user) => question.asker == user,
        };
        let mut answer = answer;
        let mut outcome = Answered::NothingWaiting;
        while let Some(at) = questions.iter().position(theirs) {
            let Some(question) = questions.remove(at) else {
                break;
            };
            // A question whose turn is gone cannot take the answer: try the next.
            match question.answer.send(answer) {
                Ok(()) => {
                    outcome = Answered::Taken;
                    break;
                }
                Err(back) => answer = back,
            }
        }
        questions.retain(|question| !question.answer.is_closed());
        if outcome == Answered::NothingWaiting && !questions.is_empty() {
            let mut askers: Vec<String> = questions.iter().map(|q| q.asker.clone()).collect();
            askers.dedup();
            outcome = Answered::NotTheirs(askers);
        }
        if questions.is_empty() {
            waiting.remove(key);
        }
        outcome
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
    /// The sender id of the user whose message started the turn: theirs to answer.
    pub(crate) asker: String,
    pub(crate) to: Destination,
    pub(crate) timeout: Duration,
}

#[async_trait]
impl Approver for ChatApprover {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        // Registered before asking, so an answer typed at once is not lost.
        let (id, answered) = self.approvals.register(&self.chat, &self.asker);
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
