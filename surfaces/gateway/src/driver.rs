//! One task per platform account holds its connection: it opens it with
//! reconnect backoff, then alternates between the host's work (queued sends,
//! typing notices) and waiting for the platform's messages. The connection is
//! only ever called from this task, one call at a time, as a plugin instance
//! requires. Everyone else talks to it through an [`Outbox`].

use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::ports::{
    ChatCapabilities, Connection, Connector, HostWork, InboundMessage, Outbound, SendOutcome,
    WebhookRequest, WebhookResponse,
};

/// The first wait after a failed connect.
pub const RECONNECT_FIRST: Duration = Duration::from_secs(30);
/// The longest wait between connects.
pub const RECONNECT_MAX: Duration = Duration::from_secs(300);
/// How long one `next_events` call may wait for messages.
pub const POLL_TIMEOUT_MS: u32 = 30_000;

/// Reconnect delays: 30 s doubling, capped at 5 min, back to 30 s after a
/// connection that worked.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            next: RECONNECT_FIRST,
        }
    }
}

impl Backoff {
    /// The wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(RECONNECT_MAX);
        delay
    }

    /// A connection worked: start over.
    pub fn reset(&mut self) {
        self.next = RECONNECT_FIRST;
    }
}

enum Work {
    Send(Outbound, oneshot::Sender<SendOutcome>),
    Typing {
        chat_id: String,
        thread: Option<String>,
    },
    Fetch {
        id: String,
        max_bytes: u64,
        done: oneshot::Sender<Result<Vec<u8>, String>>,
    },
    Webhook(
        WebhookRequest,
        oneshot::Sender<Result<WebhookResponse, String>>,
    ),
}

/// The way to an account's connection, for any task.
#[derive(Debug, Clone)]
pub struct Outbox {
    work: mpsc::UnboundedSender<Work>,
    host_work: HostWork,
    capabilities: watch::Receiver<Option<ChatCapabilities>>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Work::Send(message, _) => f.debug_tuple("Send").field(message).finish(),
            Work::Typing { chat_id, .. } => f.debug_tuple("Typing").field(chat_id).finish(),
            Work::Fetch { id, .. } => f.debug_tuple("Fetch").field(id).finish(),
            Work::Webhook(request, _) => f.debug_tuple("Webhook").field(&request.path).finish(),
        }
    }
}

impl Outbox {
    /// Sends one message (under the length limit) when the connection is up.
    pub async fn send(&self, message: Outbound) -> SendOutcome {
        let (done, outcome) = oneshot::channel();
        if self.work.send(Work::Send(message, done)).is_err() {
            return SendOutcome::Failed("the account is shut down".into());
        }
        self.host_work.raise();
        outcome
            .await
            .unwrap_or_else(|_| SendOutcome::Failed("the connection closed before sending".into()))
    }

    /// Shows that the bot is writing (dropped when the account is down).
    pub fn typing(&self, chat_id: &str, thread: Option<&str>) {
        let work = Work::Typing {
            chat_id: chat_id.to_owned(),
            thread: thread.map(str::to_owned),
        };
        if self.work.send(work).is_ok() {
            self.host_work.raise();
        }
    }

    /// The bytes of an inbound attachment, fetched when the connection is up.
    pub async fn fetch_attachment(&self, id: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
        let (done, fetched) = oneshot::channel();
        let work = Work::Fetch {
            id: id.to_owned(),
            max_bytes,
            done,
        };
        self.work
            .send(work)
            .map_err(|_| "the account is shut down".to_owned())?;
        self.host_work.raise();
        fetched
            .await
            .map_err(|_| "the connection closed before fetching".to_owned())?
    }

    /// Hands a request the platform pushed to the connection (when it is
    /// up): its answer; the messages it carried join the account's others.
    pub async fn webhook(&self, request: WebhookRequest) -> Result<WebhookResponse, String> {
        let (done, answered) = oneshot::channel();
        self.work
            .send(Work::Webhook(request, done))
            .map_err(|_| "the account is shut down".to_owned())?;
        self.host_work.raise();
        answered
            .await
            .map_err(|_| "the connection closed before answering".to_owned())?
    }

    /// The platform's capabilities, once a connection told them.
    pub fn capabilities(&self) -> Option<ChatCapabilities> {
        self.capabilities.borrow().clone()
    }

    /// The platform's capabilities, waiting for a connection to tell them;
    /// `None` when the account shut down first.
    pub async fn connected(&self) -> Option<ChatCapabilities> {
        let mut capabilities = self.capabilities.clone();
        let known = capabilities.wait_for(Option::is_some).await.ok()?;
        known.clone()
    }

    /// Closes the connection and stops the driver.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
        self.host_work.raise();
    }
}

/// The task that holds one account's connection.
pub struct AccountDriver<C: Connector> {
    connector: C,
    work: mpsc::UnboundedReceiver<Work>,
    host_work: HostWork,
    capabilities: watch::Sender<Option<ChatCapabilities>>,
    inbound: mpsc::UnboundedSender<InboundMessage>,
    shutdown: CancellationToken,
    /// Whether it reads the account's events (false: it only sends).
    polls: bool,
}

impl<C: Connector> std::fmt::Debug for AccountDriver<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountDriver").finish_non_exhaustive()
    }
}

/// An account: its driver (to spawn), its outbox, and the messages it receives.
pub fn account<C: Connector>(
    connector: C,
) -> (
    AccountDriver<C>,
    Outbox,
    mpsc::UnboundedReceiver<InboundMessage>,
) {
    let (work_sender, work) = mpsc::unbounded_channel();
    let (inbound, messages) = mpsc::unbounded_channel();
    let (capabilities, capabilities_seen) = watch::channel(None);
    let host_work = HostWork::default();
    let shutdown = CancellationToken::new();
    let driver = AccountDriver {
        connector,
        work,
        host_work: host_work.clone(),
        capabilities,
        inbound,
        shutdown: shutdown.clone(),
        polls: true,
    };
    let outbox = Outbox {
        work: work_sender,
        host_work,
        capabilities: capabilities_seen,
        shutdown,
    };
    (driver, outbox, messages)
}

/// An account that only sends (a delivery when no gateway runs): its
/// driver never asks for events, so it takes none that a gateway should
/// answer later (a Telegram update read is an update acknowledged).
pub fn send_only_account<C: Connector>(connector: C) -> (AccountDriver<C>, Outbox) {
    let (mut driver, outbox, _) = account(connector);
    driver.polls = false;
    (driver, outbox)
}

impl<C: Connector> AccountDriver<C> {
    /// Runs until [`Outbox::shutdown`] (or until nobody reads the messages).
    pub async fn run(mut self) {
        let mut backoff = Backoff::default();
        let mut attempt: u32 = 0;
        loop {
            let opened = tokio::select! {
                opened = self.connector.open(attempt, self.host_work.clone()) => opened,
                () = self.shutdown.cancelled() => return,
            };
            let connection = match opened {
                Ok(connection) => connection,
                Err(error) => {
                    attempt = attempt.saturating_add(1);
                    let delay = backoff.next_delay();
                    crate::log(format_args!(
                        "cannot connect (attempt {attempt}): {error}; next try in {} s",
                        delay.as_secs()
                    ));
                    if !self.wait(delay).await {
                        return;
                    }
                    continue;
                }
            };
            match self.serve(connection).await {
                Served::Shutdown => return,
                Served::LostAfterWorking => {
                    backoff.reset();
                    attempt = 0;
                }
                Served::LostAtOnce => {
                    // Opens that succeed but never deliver must not spin.
                    attempt = attempt.saturating_add(1);
                    if !self.wait(backoff.next_delay()).await {
                        return;
                    }
                }
            }
        }
    }

    /// Waits `delay` unless shut down first (then false).
    async fn wait(&self, delay: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(delay) => true,
            () = self.shutdown.cancelled() => false,
        }
    }

    async fn serve(&mut self, mut connection: C::Connection) -> Served {
        let capabilities = connection.capabilities().await;
        self.capabilities.send_replace(Some(capabilities));
        let mut worked = false;
        loop {
            // Cleared before draining: work queued after the drain signals again.
            self.host_work.lower();
            while let Ok(work) = self.work.try_recv() {
                match work {
                    Work::Send(message, done) => {
                        let outcome = connection.send(message).await;
                        let _ = done.send(outcome);
                    }
                    Work::Typing { chat_id, thread } => {
                        connection.typing(&chat_id, thread.as_deref()).await;
                    }
                    Work::Fetch {
                        id,
                        max_bytes,
                        done,
                    } => {
                        let _ = done.send(connection.fetch_attachment(&id, max_bytes).await);
                    }
                    Work::Webhook(request, done) => {
                        let answer = match connection.webhook(request).await {
                            Ok((response, messages)) => {
                                for message in messages {
                                    let _ = self.inbound.send(message);
                                }
                                Ok(response)
                            }
                            Err(error) => Err(error),
                        };
                        let _ = done.send(answer);
                    }
                }
            }
            if self.shutdown.is_cancelled() {
                connection.close().await;
                return Served::Shutdown;
            }
            if !self.polls {
                // Shutting down raises the signal too.
                self.host_work.raised().await;
                continue;
            }
            match connection.next_events(POLL_TIMEOUT_MS).await {
                Ok(messages) => {
                    worked = true;
                    for message in messages {
                        if self.inbound.send(message).is_err() {
                            connection.close().await;
                            return Served::Shutdown;
                        }
                    }
                }
                Err(error) => {
                    crate::log(format_args!("connection lost: {error}; reconnecting"));
                    return if worked {
                        Served::LostAfterWorking
                    } else {
                        Served::LostAtOnce
                    };
                }
            }
        }
    }
}

enum Served {
    Shutdown,
    LostAfterWorking,
    LostAtOnce,
}
