//! One account's messages: who may talk (pairing), the commands the gateway
//! answers itself (`/new`, `/approve`, `/deny`), the rest of the command
//! registry through the runner, and turns started under their session's lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use talaria_approval::Decision;
use talaria_pairing::{PairingStore, PlatformAccess, Sender, Strength, Verdict};
use talaria_profile::{BusyMode, GatewayConfig, PlatformConfig, ProfileHome};
use tokio::sync::mpsc;

use crate::approvals::{Answered, Answerer, Approvals, ChatApprover, parse_approval};
use crate::attachments::save_attachments;
use crate::clarify::{ChatClarifier, Clarifications, clarify_key};
use crate::clock::Clock;
use crate::delivery::{Destination, deliver};
use crate::driver::{Outbox, account};
use crate::ports::{
    Attachment, ChatAddress, ChatCapabilities, ChatKind, CommandEffect, CommandReply, Connector,
    IdStrength, InboundMessage, Turn, TurnOutcome, TurnRunner, fallback_capabilities,
};
use crate::router::{Router, SessionKey, conversation_id};
use crate::turns::{Admission, Ticket, Turns};

/// How one account behaves (from `gateway:` in config.yaml).
#[derive(Debug, Clone)]
pub struct AccountSettings {
    /// The profile's name (part of every session key).
    pub profile: String,
    /// The platform's name (`gateway.platforms.<name>`).
    pub platform: String,
    /// `gateway.allow_all`.
    pub allow_all: bool,
    /// `gateway.platforms.<name>`.
    pub config: PlatformConfig,
    /// How long an approval question waits (`approvals.timeout_secs`).
    pub approval_timeout: Duration,
    /// How long a `clarify` question waits (`clarify.timeout_secs`).
    pub clarify_timeout: Duration,
}

impl AccountSettings {
    /// The settings of `platform` in `gateway`.
    pub fn new(
        profile: &str,
        platform: &str,
        gateway: &GatewayConfig,
        approval_timeout: Duration,
        clarify_timeout: Duration,
    ) -> Self {
        Self {
            profile: profile.to_owned(),
            platform: platform.to_owned(),
            allow_all: gateway.allow_all,
            config: gateway.platforms.get(platform).cloned().unwrap_or_default(),
            approval_timeout,
            clarify_timeout,
        }
    }
}

/// How often a typing notice is renewed while a turn runs.
pub const TYPING_REFRESH: Duration = Duration::from_secs(5);

/// What every account of a gateway shares.
#[derive(Debug, Clone)]
pub struct Shared {
    pub router: Router,
    /// Where sessions keep their files (`sessions/<id>/attachments/`).
    pub sessions_dir: std::path::PathBuf,
    pub turns: Arc<Turns>,
    pub approvals: Arc<Approvals>,
    pub clarifications: Arc<Clarifications>,
    pub pairing: PairingStore,
    pub clock: Clock,
    /// Permits for turns running at once, over every account.
    pub running: Arc<tokio::sync::Semaphore>,
}

impl Shared {
    /// The state of a gateway over `home` (session map in `gateway.db`,
    /// the profile's pairing store).
    pub fn for_home(home: &ProfileHome, gateway: &GatewayConfig) -> Self {
        Self {
            router: Router::new(
                home.root().join("gateway.db"),
                gateway.session_idle_reset_hours,
            ),
            sessions_dir: home.sessions_dir(),
            turns: Arc::default(),
            approvals: Arc::default(),
            clarifications: Arc::default(),
            pairing: PairingStore::new(home.pairing_dir()),
            clock: Clock::system(),
            running: Arc::new(tokio::sync::Semaphore::new(
                gateway.max_concurrent_turns.max(1),
            )),
        }
    }
}

/// Starts one account: its driver and its message handler, each on a task.
/// The returned outbox shuts it down ([`Outbox::shutdown`]).
pub fn spawn_account<C: Connector, R: TurnRunner>(
    connector: C,
    runner: Arc<R>,
    settings: AccountSettings,
    shared: Shared,
) -> Outbox {
    let (driver, outbox, messages) = account(connector);
    tokio::spawn(driver.run());
    let gateway = Gateway::new(runner, outbox.clone(), settings, shared);
    tokio::spawn(gateway.run(messages));
    outbox
}

/// Handles one account's inbound messages.
pub struct Gateway<R: TurnRunner> {
    inner: Arc<Inner<R>>,
}

impl<R: TurnRunner> Clone for Gateway<R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<R: TurnRunner> std::fmt::Debug for Gateway<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("platform", &self.inner.settings.platform)
            .finish_non_exhaustive()
    }
}

struct Inner<R> {
    runner: Arc<R>,
    outbox: Outbox,
    settings: AccountSettings,
    shared: Shared,
    /// Strangers told "not now", and when (told once per pairing interval).
    told: Mutex<HashMap<String, u64>>,
}

/// A message turned into a turn to run.
struct Job {
    key: SessionKey,
    session_id: String,
    text: String,
    attachments: Vec<Attachment>,
    to: Destination,
    asking: Asking,
}

/// Where a turn's questions wait for their answers.
#[derive(Debug, Clone)]
struct Asking {
    /// Approvals: the conversation (a private one by the sender's identity, whatever the
    /// nick); the asking user or an admin answers.
    approvals: String,
    /// `clarify`: the chat and the user whose message started the turn.
    clarify: String,
    /// The platform's id of that user (the memory provider's scope).
    user_id: String,
    /// Whom the conversation's sessions belong to.
    principal: talaria_kernel::Principal,
}

impl<R: TurnRunner> Gateway<R> {
    /// The handler of the account behind `outbox`.
    pub fn new(runner: Arc<R>, outbox: Outbox, settings: AccountSettings, shared: Shared) -> Self {
        Self {
            inner: Arc::new(Inner {
                runner,
                outbox,
                settings,
                shared,
                told: Mutex::default(),
            }),
        }
    }

    /// Handles messages until the account's driver stops.
    pub async fn run(self, mut messages: mpsc::UnboundedReceiver<InboundMessage>) {
        while let Some(message) = messages.recv().await {
            self.handle(message).await;
        }
    }

    /// Handles one message; every failure is logged or answered, never raised.
    pub async fn handle(&self, message: InboundMessage) {
        let inner = &self.inner;
        if message.sender.is_bot {
            return;
        }
        // Group chatter not meant for the bot is not ours to answer.
        if message.chat.kind != ChatKind::Dm && !message.addressed {
            return;
        }
        let to = Destination {
            chat_id: message.chat.id.clone(),
            thread: message.chat.thread.clone(),
            reply_to: message.message_id.clone(),
        };
        if !self.authorized(&message, &to).await {
            return;
        }
        let platform = &inner.settings.platform;
        let key = SessionKey::for_message(
            &inner.settings.profile,
            platform,
            &message,
            inner.settings.config.group_sessions,
        );
        if message.edit_of.is_some() {
            self.edited(&key, &message.text);
            return;
        }
        let approvals_chat = serde_json::Value::from(vec![
            Some(platform.as_str()),
            Some(conversation_id(&message)),
            message.chat.thread.as_deref(),
        ])
        .to_string();
        let text = message.text.trim();
        // The next words of the user a question waits for answer it; commands
        // stay commands (`/stop` still interrupts).
        let asking = Asking {
            clarify: clarify_key(&approvals_chat, &message.sender.id),
            approvals: approvals_chat,
            user_id: message.sender.id.clone(),
            principal: crate::router::principal_for(
                platform,
                &message,
                inner.settings.config.group_sessions,
            ),
        };
        if command(text).is_none()
            && !text.is_empty()
            && inner.shared.clarifications.answer(
                &asking.clarify,
                Answerer::User(&asking.user_id),
                text.to_owned(),
            ) == Answered::Taken
        {
            return;
        }
        match command(text) {
            Some((name, argument)) => {
                self.command(name, argument, key, to, asking).await;
            }
            None => {
                // `//text` sends a line that starts with `/`.
                let text = text
                    .strip_prefix('/')
                    .filter(|t| t.starts_with('/'))
                    .unwrap_or(text);
                let attachments = message.attachments.clone();
                self.start(key, text.to_owned(), attachments, to, asking)
                    .await;
            }
        }
    }

    /// An edit corrects a message: a turn still working in the chat's
    /// session takes the new text as a note; otherwise it is let be (answering
    /// it again would repeat the answer to the original).
    fn edited(&self, key: &SessionKey, text: &str) {
        let inner = &self.inner;
        let now = inner.shared.clock.unix_now();
        let Ok(session_id) = inner.shared.router.resolve(key, now) else {
            return;
        };
        let note = format!(
            "(The user edited their message; it now reads:) {}",
            text.trim()
        );
        inner.shared.turns.steer_running(&session_id, &note);
    }

    async fn authorized(&self, message: &InboundMessage, to: &Destination) -> bool {
        let inner = &self.inner;
        let config = &inner.settings.config;
        let access = PlatformAccess {
            allow_all: config.allow_all,
            allowed_users: config.allowed_users.clone(),
            allowed_chats: config.allowed_chats.clone(),
        };
        let identity = &message.sender.identity;
        let sender = Sender {
            platform: &inner.settings.platform,
            user_id: &message.sender.id,
            user_name: &message.sender.name,
            chat_id: &message.chat.id,
            chat: match message.chat.kind {
                ChatKind::Dm => talaria_pairing::ChatKind::Direct,
                ChatKind::Group => talaria_pairing::ChatKind::Group,
                ChatKind::Channel => talaria_pairing::ChatKind::Channel,
                ChatKind::Thread => talaria_pairing::ChatKind::Thread,
            },
            strength: match identity.strength {
                IdStrength::Strong => Strength::Strong,
                IdStrength::Weak => Strength::Weak,
                IdStrength::NameOnly => Strength::NameOnly,
                IdStrength::Unstated => Strength::Unstated,
            },
            aliases: &identity.also_known_as,
        };
        let now = inner.shared.clock.unix_now();
        let verdict = talaria_pairing::authorize(
            inner.settings.allow_all,
            &access,
            &inner.shared.pairing,
            &sender,
            now,
        );
        match verdict {
            Ok(Verdict::Allowed) => true,
            Ok(Verdict::PairWith(code)) => {
                let text = talaria_pairing::pairing_message(&inner.settings.platform, &code);
                self.post(to, &text);
                false
            }
            Ok(Verdict::NotNow(text)) => {
                if self.first_time_told(&message.sender.id, now) {
                    self.post(to, &text);
                }
                false
            }
            Ok(Verdict::Ignored) => false,
            Err(error) => {
                crate::log(format_args!("pairing store: {error}; message dropped"));
                false
            }
        }
    }

    fn first_time_told(&self, user: &str, now: u64) -> bool {
        let Ok(mut told) = self.inner.told.lock() else {
            return false;
        };
        told.retain(|_, at| now.saturating_sub(*at) < talaria_pairing::REQUEST_INTERVAL_SECS);
        if told.contains_key(user) {
            return false;
        }
        told.insert(user.to_owned(), now);
        true
    }

    async fn command(
        &self,
        name: &str,
        argument: &str,
        key: SessionKey,
        to: Destination,
        asking: Asking,
    ) {
        let inner = &self.inner;
        let now = inner.shared.clock.unix_now();
        match name {
            "approve" | "deny" => {
                let decision = if name == "deny" {
                    Some(Decision::Deny)
                } else {
                    parse_approval(argument)
                };
                let Some(decision) = decision else {
                    self.post(
                        &to,
                        "Use /approve, /approve session, /approve always or /deny.",
                    );
                    return;
                };
                let answerer = if inner.settings.config.admins.contains(&asking.user_id) {
                    Answerer::Admin
                } else {
                    Answerer::User(&asking.user_id)
                };
                match inner
                    .shared
                    .approvals
                    .answer(&asking.approvals, answerer, decision)
                {
                    Answered::Taken => {}
                    Answered::NothingWaiting => {
                        self.post(&to, "Nothing is waiting for approval here.");
                    }
                    Answered::NotTheirs(_) => self.post(
                        &to,
                        "That approval is not yours to answer: only the user whose message \
                         asked for it, or an admin, can.",
                    ),
                }
            }
            "new" | "reset" => match inner.shared.router.reset(&key, now) {
                Ok(_) => self.post(&to, "Fresh session started."),
                Err(error) => self.post_failure(&to, &error.to_string()),
            },
            _ => {
                let session_id = match inner.shared.router.resolve(&key, now) {
                    Ok(session_id) => session_id,
                    Err(error) => return self.post_failure(&to, &error.to_string()),
                };
                let line = format!("/{name} {argument}").trim_end().to_owned();
                // Queued behind the session's turn, never interrupting it.
                let Admission::Run(ticket) =
                    inner
                        .shared
                        .turns
                        .admit(&session_id, BusyMode::Queue, &line)
                else {
                    return;
                };
                let gateway = self.clone();
                tokio::spawn(async move {
                    let Some(held) = ticket.acquire().await else {
                        return;
                    };
                    let reply = gateway
                        .inner
                        .runner
                        .run_command(&session_id, &asking.principal, &line)
                        .await;
                    drop(held);
                    gateway.command_reply(key, reply, to, asking).await;
                });
            }
        }
    }

    /// Shows a registry command's reply and does what it asks.
    async fn command_reply(
        &self,
        key: SessionKey,
        reply: CommandReply,
        to: Destination,
        asking: Asking,
    ) {
        let inner = &self.inner;
        if !reply.text.trim().is_empty() {
            self.reply(&to, &reply.text).await;
        }
        let now = inner.shared.clock.unix_now();
        let changed = match reply.effect {
            CommandEffect::None => Ok(()),
            CommandEffect::NewSession => inner.shared.router.reset(&key, now).map(drop),
            CommandEffect::Resume(session) => inner.shared.router.point(&key, &session, now),
            CommandEffect::Send(text) => {
                self.start(key, text, Vec::new(), to, asking).await;
                return;
            }
        };
        if let Err(error) = changed {
            self.failed(&to, &error.to_string()).await;
        }
    }

    async fn start(
        &self,
        key: SessionKey,
        text: String,
        attachments: Vec<Attachment>,
        to: Destination,
        asking: Asking,
    ) {
        let inner = &self.inner;
        if text.is_empty() && attachments.is_empty() {
            return;
        }
        let now = inner.shared.clock.unix_now();
        let session_id = match inner.shared.router.resolve(&key, now) {
            Ok(session_id) => session_id,
            Err(error) => return self.post_failure(&to, &error.to_string()),
        };
        // Admitted here, in message order; the turn waits for its lease on a task.
        let mode = inner.settings.config.busy_mode;
        let ticket = match inner.shared.turns.admit(&session_id, mode, &text) {
            Admission::Run(ticket) => ticket,
            Admission::Steered => return,
        };
        let job = Job {
            key,
            session_id,
            text,
            attachments,
            to,
            asking,
        };
        let gateway = self.clone();
        tokio::spawn(async move { gateway.run_job(job, ticket).await });
    }

    async fn run_job(&self, job: Job, ticket: Ticket) {
        let inner = &self.inner;
        let turns = &inner.shared.turns;
        let Some(held) = ticket.acquire().await else {
            return;
        };
        // A turn interrupted while it waits for a permit never starts.
        let _permit = tokio::select! {
            permit = inner.shared.running.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
            () = held.cancel.cancelled() => return,
        };
        let capabilities = self.capabilities();
        let mut text = job.text.clone();
        let mut images = Vec::new();
        if !job.attachments.is_empty() {
            let dir = inner
                .shared
                .sessions_dir
                .join(&job.session_id)
                .join("attachments");
            let saved = save_attachments(&inner.outbox, &dir, &job.attachments).await;
            images = saved.images;
            text = [text.as_str(), saved.lines.as_str()]
                .iter()
                .filter(|part| !part.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("\n\n");
        }
        loop {
            let approver = ChatApprover {
                approvals: inner.shared.approvals.clone(),
                outbox: inner.outbox.clone(),
                capabilities: capabilities.clone(),
                chat: job.asking.approvals.clone(),
                asker: job.asking.user_id.clone(),
                to: job.to.clone(),
                timeout: inner.settings.approval_timeout,
            };
            let clarifier = ChatClarifier {
                clarifications: inner.shared.clarifications.clone(),
                outbox: inner.outbox.clone(),
                capabilities: capabilities.clone(),
                key: job.asking.clarify.clone(),
                asker: job.asking.user_id.clone(),
                to: job.to.clone(),
                timeout: inner.settings.clarify_timeout,
            };
            let turn = inner.runner.run_turn(Turn {
                session_id: job.session_id.clone(),
                text,
                images: images.clone(),
                cancel: held.cancel.clone(),
                steer: held.steer.clone(),
                approver: Arc::new(approver),
                clarifier: Some(Arc::new(clarifier)),
                platform: capabilities.clone(),
                chat: ChatAddress {
                    platform: inner.settings.platform.clone(),
                    chat_id: job.to.chat_id.clone(),
                    thread: job.to.thread.clone(),
                },
                user_id: Some(job.asking.user_id.clone()),
                principal: job.asking.principal.clone(),
            });
            let result = tokio::select! {
                // The answer first: a renewal due at the same moment is not needed.
                biased;
                result = turn => result,
                never = self.keep_typing(&job.to, capabilities.typing) => match never {},
            };
            let now = inner.shared.clock.unix_now();
            // Compression may have continued the conversation in a new session.
            if result.session_id != job.session_id
                && let Err(error) =
                    inner
                        .shared
                        .router
                        .replace(&job.key, &job.session_id, &result.session_id, now)
            {
                crate::log(format_args!("{error}"));
            }
            match result.outcome {
                TurnOutcome::Answer(answer) => self.reply(&job.to, &answer).await,
                TurnOutcome::Failed(message) => self.failed(&job.to, &message).await,
                TurnOutcome::Interrupted => {}
            }
            if held.cancel.is_cancelled() {
                break;
            }
            let notes = turns.finish_or_take_notes(&held);
            if notes.is_empty() {
                break;
            }
            // Notes the turn did not take are answered next, together.
            text = notes.join("\n\n");
        }
        drop(held);
    }

    /// Shows the bot writing for as long as it is awaited (platforms let a
    /// typing notice expire after a few seconds).
    async fn keep_typing(
        &self,
        to: &Destination,
        platform_shows_it: bool,
    ) -> std::convert::Infallible {
        loop {
            if platform_shows_it {
                self.inner.outbox.typing(&to.chat_id, to.thread.as_deref());
            }
            tokio::time::sleep(TYPING_REFRESH).await;
        }
    }

    fn capabilities(&self) -> ChatCapabilities {
        self.inner
            .outbox
            .capabilities()
            .unwrap_or_else(|| fallback_capabilities(&self.inner.settings.platform))
    }

    async fn reply(&self, to: &Destination, text: &str) {
        if let Err(error) = deliver(&self.inner.outbox, &self.capabilities(), to, text).await {
            crate::log(format_args!("to {}: {error}", to.chat_id));
        }
    }

    /// Sends on a task of its own: the message loop never waits out a
    /// platform's rate limit.
    fn post(&self, to: &Destination, text: &str) {
        let gateway = self.clone();
        let (to, text) = (to.clone(), text.to_owned());
        tokio::spawn(async move { gateway.reply(&to, &text).await });
    }

    fn post_failure(&self, to: &Destination, message: &str) {
        crate::log(format_args!("{message}"));
        self.post(to, &format!("Something went wrong: {message}"));
    }

    async fn failed(&self, to: &Destination, message: &str) {
        crate::log(format_args!("{message}"));
        self.reply(to, &format!("Something went wrong: {message}"))
            .await;
    }
}

/// `/name argument` → (name, argument); `//…` is not a command.
fn command(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    if rest.starts_with('/') || rest.is_empty() {
        return None;
    }
    let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    // `/approve@botname` is how some platforms address a bot's command.
    let name = name.split('@').next().unwrap_or(name);
    Some((name, argument.trim()))
}
