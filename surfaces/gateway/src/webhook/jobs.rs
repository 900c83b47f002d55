//! The webhook's turns: accepted deliveries wait in a bounded queue and run
//! one at a time, each in a session of its own with the webhook's tool
//! profile; the answer (or why there is none) goes to the route's chat.

use std::sync::Arc;

use async_trait::async_trait;
use talaria_profile::ChatAddress;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::server::{JobQueue, QueueFull, WebhookJob};
use crate::ports::{TurnOutcome, TurnResult};

/// Deliveries that may wait for their turn; more are answered 429.
pub const QUEUED_JOBS: usize = 32;

/// Runs a webhook delivery as a turn.
#[async_trait]
pub trait WebhookRunner: Send + Sync + 'static {
    /// Runs `job`'s prompt in a fresh session with the webhook's tools.
    async fn run_webhook(&self, job: &WebhookJob, cancel: CancellationToken) -> TurnResult;
}

/// Posts an answer to a chat of one of the gateway's accounts.
#[async_trait]
pub trait ChatPoster: Send + Sync + 'static {
    /// Sends `text` to `to`, waiting a while for its platform to connect.
    async fn post(&self, to: &ChatAddress, text: &str) -> Result<(), String>;
}

/// The sending end of the queue, handed to the listener.
#[derive(Debug, Clone)]
pub struct JobSender(mpsc::Sender<WebhookJob>);

impl JobQueue for JobSender {
    fn submit(&self, job: WebhookJob) -> Result<(), QueueFull> {
        self.0.try_send(job).map_err(|_| QueueFull)
    }
}

/// A queue of `capacity` jobs: the listener's end and the worker's.
pub fn job_queue(capacity: usize) -> (JobSender, mpsc::Receiver<WebhookJob>) {
    let (sender, receiver) = mpsc::channel(capacity.max(1));
    (JobSender(sender), receiver)
}

/// Runs queued jobs one after another until `shutdown` (which also stops the
/// running one).
pub async fn run_jobs(
    mut jobs: mpsc::Receiver<WebhookJob>,
    runner: Arc<dyn WebhookRunner>,
    poster: Arc<dyn ChatPoster>,
    shutdown: CancellationToken,
) {
    loop {
        let job = tokio::select! {
            () = shutdown.cancelled() => return,
            job = jobs.recv() => match job {
                Some(job) => job,
                None => return,
            },
        };
        run_one(&job, runner.as_ref(), poster.as_ref(), &shutdown).await;
    }
}

async fn run_one(
    job: &WebhookJob,
    runner: &dyn WebhookRunner,
    poster: &dyn ChatPoster,
    shutdown: &CancellationToken,
) {
    let name = format!("webhook {} ({})", job.route, job.event);
    if !job.flagged.is_empty() {
        crate::log(format_args!(
            "{name}: the payload was flagged: {}",
            job.flagged.join("; ")
        ));
    }
    let result = runner.run_webhook(job, shutdown.child_token()).await;
    let text = match result.outcome {
        TurnOutcome::Answer(text) => {
            crate::log(format_args!(
                "{name}: answered in session {}",
                result.session_id
            ));
            text
        }
        TurnOutcome::Interrupted => {
            crate::log(format_args!(
                "{name}: stopped (session {})",
                result.session_id
            ));
            return;
        }
        TurnOutcome::Failed(message) => {
            crate::log(format_args!("{name}: failed: {message}"));
            format!("The {name} could not be handled: {message}")
        }
    };
    let Some(deliver) = &job.deliver else {
        return;
    };
    let Some(address) = ChatAddress::parse(deliver) else {
        crate::log(format_args!("{name}: cannot deliver to {deliver:?}"));
        return;
    };
    if let Err(error) = poster.post(&address, &text).await {
        crate::log(format_args!(
            "{name}: delivery to {deliver} failed: {error}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    struct Scripted {
        outcomes: Mutex<Vec<TurnOutcome>>,
        prompts: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl WebhookRunner for Scripted {
        async fn run_webhook(&self, job: &WebhookJob, _cancel: CancellationToken) -> TurnResult {
            self.prompts.lock().unwrap().push(job.prompt.clone());
            TurnResult {
                outcome: self.outcomes.lock().unwrap().remove(0),
                session_id: "1800000000_abcdef".into(),
            }
        }
    }

    #[derive(Default)]
    struct Posted(Mutex<Vec<(ChatAddress, String)>>);

    #[async_trait]
    impl ChatPoster for Posted {
        async fn post(&self, to: &ChatAddress, text: &str) -> Result<(), String> {
            self.0.lock().unwrap().push((to.clone(), text.to_owned()));
            Ok(())
        }
    }

    fn job(prompt: &str, deliver: Option<&str>) -> WebhookJob {
        WebhookJob {
            route: "gh".into(),
            event: "push".into(),
            prompt: prompt.into(),
            deliver: deliver.map(str::to_owned),
            flagged: Vec::new(),
        }
    }

    #[tokio::test]
    async fn jobs_run_in_order_and_answers_and_failures_reach_their_chat() {
        let runner = Arc::new(Scripted {
            outcomes: Mutex::new(vec![
                TurnOutcome::Answer("two commits landed".into()),
                TurnOutcome::Failed("the model is down".into()),
                TurnOutcome::Answer("kept in the session".into()),
                TurnOutcome::Interrupted,
            ]),
            prompts: Mutex::default(),
        });
        let posted = Arc::new(Posted::default());
        let (queue, receiver) = job_queue(8);
        for (prompt, deliver) in [
            ("first", Some("irc:#ops")),
            ("second", Some("telegram:42:7")),
            ("third", None),
            ("fourth", Some("irc:#ops")),
        ] {
            queue.submit(job(prompt, deliver)).unwrap();
        }
        drop(queue);
        run_jobs(
            receiver,
            runner.clone(),
            posted.clone(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(
            *runner.prompts.lock().unwrap(),
            ["first", "second", "third", "fourth"]
        );
        let posted = posted.0.lock().unwrap();
        assert_eq!(posted.len(), 2, "{posted:?}");
        assert_eq!(posted[0].0.chat_id, "#ops");
        assert_eq!(posted[0].1, "two commits landed");
        assert_eq!(posted[1].0.platform, "telegram");
        assert_eq!(posted[1].0.thread.as_deref(), Some("7"));
        assert!(
            posted[1]
                .1
                .contains("webhook gh (push) could not be handled: the model is down"),
            "{}",
            posted[1].1
        );
    }

    #[test]
    fn a_full_queue_refuses_instead_of_waiting() {
        let (queue, _receiver) = job_queue(1);
        assert_eq!(queue.submit(job("a", None)), Ok(()));
        assert_eq!(queue.submit(job("b", None)), Err(QueueFull));
    }
}
