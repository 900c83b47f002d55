//! The real [`TurnRunner`]: each turn or command builds an agent from the
//! profile for the stored session, runs, and drops it (no agent outlives its
//! turn). It runs on a thread of its own with a current-thread runtime, as the
//! API server's runs do: building an agent does blocking work, and the
//! agent's futures need not be `Send`. Settings are read per turn, so a config
//! edit applies to the next message.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use talaria_agent::{
    Agent, AgentOptions, Clarifier, ClarifyAnswer, ClarifyError, MessageTarget, Messenger,
    NoAnswer, Surface,
};
use talaria_approval::{Approver, DenyAll};
use talaria_commands::{Context, Effect, Pending, Registry, Surfaces};
use talaria_kernel::{Exit, ImageRef, NoEvents, Principal};
use talaria_profile::{Overrides, ProfileHome, Settings};
use talaria_store::{NewSession, SessionDb};

use tokio_util::sync::CancellationToken;

use crate::clarify::{ChatAnswer, ChatClarifier};
use crate::ports::{
    CommandEffect, CommandReply, SteerNotes, Turn, TurnOutcome, TurnResult, TurnRunner,
};
use crate::webhook::{WebhookJob, WebhookRunner};

/// Runs turns with agents built from a profile.
#[derive(Clone)]
pub struct AgentRunner {
    home: ProfileHome,
    overrides: Overrides,
    cwd: PathBuf,
    messenger: Option<Arc<dyn Messenger>>,
    /// Each chat session's browser, kept between its messages (an agent is
    /// built per message) until idle for `browser.idle_timeout_secs`.
    browsers: Arc<talaria_agent::BrowserKeeper>,
    /// The profile as last read (read again when config.yaml or .env changes).
    profile: Arc<talaria_profile::ProfileCache>,
}

impl std::fmt::Debug for AgentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRunner")
            .field("home", &self.home)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl AgentRunner {
    /// A runner over `home`, its agents working in `cwd`.
    pub fn new(home: ProfileHome, overrides: Overrides, cwd: PathBuf) -> Self {
        Self {
            home,
            overrides,
            cwd,
            messenger: None,
            browsers: talaria_agent::BrowserKeeper::new(),
            profile: Arc::default(),
        }
    }

    /// The same runner, its agents writing to chats through `messenger`
    /// (the `send_message` tool).
    pub fn with_messenger(mut self, messenger: Arc<dyn Messenger>) -> Self {
        self.messenger = Some(messenger);
        self
    }

    fn settings(&self) -> Result<Settings, String> {
        let (env, config) = self
            .profile
            .load(&self.home)
            .map_err(|e| redact(&e.to_string()))?;
        let mut settings = Settings::resolve(&self.overrides, &env, config, &self.home)
            .map_err(|e| redact(&e.to_string()))?;
        // Chat users approve in the chat; nobody turns that off from there.
        settings.yolo = false;
        Ok(settings)
    }

    /// Creates the session the router named for `principal`, the first time it is used; a
    /// session the gateway started for this chat before sessions had principals becomes its.
    fn ensure_session(
        &self,
        settings: &Settings,
        id: &str,
        source: &str,
        principal: &Principal,
    ) -> Result<(), String> {
        let db = SessionDb::shared(self.home.session_db())
            .map_err(|e| format!("the session database: {e}"))?;
        if db
            .session(id)
            .map_err(|e| format!("session {id}: {e}"))?
            .is_some()
        {
            if !principal.is_owner() {
                db.claim_legacy_chat_session(id, principal)
                    .map_err(|e| format!("session {id}: {e}"))?;
            }
            return Ok(());
        }
        db.create_session(&NewSession {
            id: id.to_owned(),
            title: None,
            source: source.to_owned(),
            model: settings.primary.model.clone(),
            cwd: Some(self.cwd.display().to_string()),
            parent_session_id: None,
            principal: principal.clone(),
        })
        .map_err(|e| format!("cannot create session {id}: {e}"))
    }

    async fn agent(
        &self,
        settings: &Settings,
        session_id: &str,
        source: &str,
        approver: Arc<dyn Approver>,
        principal: Principal,
    ) -> Result<Agent, String> {
        let attendance = Attendance {
            approver,
            messenger: self.messenger.clone(),
            clarifier: None,
            chat_user: None,
            principal,
        };
        self.agent_on(Surface::Gateway, settings, session_id, source, attendance)
            .await
    }

    async fn agent_on(
        &self,
        surface: Surface,
        settings: &Settings,
        session_id: &str,
        source: &str,
        attendance: Attendance,
    ) -> Result<Agent, String> {
        self.ensure_session(settings, session_id, source, &attendance.principal)?;
        let options = AgentOptions {
            surface,
            cwd: self.cwd.clone(),
            approver: attendance.approver,
            resume: Some(session_id.to_owned()),
            editor: None,
            messenger: attendance.messenger,
            clarifier: attendance.clarifier,
            // A chat goes on over many messages; a webhook or a job is one run.
            browsers: (surface == Surface::Gateway).then(|| self.browsers.clone()),
            chat_user: attendance.chat_user,
            principal: attendance.principal,
        };
        let agent = Agent::build(settings, &self.home, options)
            .await
            .map_err(|e| format!("cannot start the agent: {}", redact(&e.to_string())))?;
        for notice in agent.notices() {
            crate::log(format_args!("note: {}", redact(notice)));
        }
        Ok(agent)
    }

    /// The message's image files, prepared in the profile's image store; one that cannot be
    /// sent (damaged, too large) is left out: the message still names it by path.
    fn attach(&self, paths: &[PathBuf]) -> Vec<ImageRef> {
        let store = talaria_agent::image_store(&self.home);
        paths
            .iter()
            .filter_map(|path| match store.attach_file(path) {
                Ok(attached) => Some(attached.image),
                Err(error) => {
                    crate::log(format_args!("{error}"));
                    None
                }
            })
            .collect()
    }

    async fn turn(&self, turn: Turn) -> TurnResult {
        let failed = |message: String| TurnResult {
            outcome: TurnOutcome::Failed(message),
            session_id: turn.session_id.clone(),
        };
        let settings = match self.settings() {
            Ok(settings) => settings,
            Err(message) => return failed(message),
        };
        let source = format!("{}:{}", Surface::Gateway.name(), turn.platform.platform);
        let messenger = self.messenger.clone().map(|inner| {
            Arc::new(WithCurrentChat {
                inner,
                current: MessageTarget {
                    platform: turn.chat.platform.clone(),
                    chat_id: turn.chat.chat_id.clone(),
                    thread: turn.chat.thread.clone(),
                    label: Some("this chat".into()),
                    current: true,
                },
            }) as Arc<dyn Messenger>
        });
        let mut agent = match self
            .agent_on(
                Surface::Gateway,
                &settings,
                &turn.session_id,
                &source,
                Attendance {
                    approver: turn.approver.clone(),
                    messenger,
                    clarifier: turn
                        .clarifier
                        .clone()
                        .map(|chat| Arc::new(InTheChat(chat)) as Arc<dyn Clarifier>),
                    chat_user: turn.user_id.clone().map(|user_id| talaria_agent::ChatUser {
                        platform: turn.chat.platform.clone(),
                        user_id,
                    }),
                    principal: turn.principal.clone(),
                },
            )
            .await
        {
            Ok(agent) => agent,
            Err(message) => return failed(message),
        };
        agent.add_platform_hint(&turn.platform.prompt_hint);
        // Notes that arrive after the turn's last model call stay in
        // `turn.steer`; the gateway answers them next.
        agent.set_steering(Some(Arc::new(turn.steer.clone())));
        let images = self.attach(&turn.images);
        run_to_result(agent, &turn.text, images, &turn.cancel).await
    }

    /// A webhook delivery: a fresh session of its own (`webhook:<route>`),
    /// read-only tools, nobody to approve anything.
    async fn webhook(&self, job: &WebhookJob, cancel: &CancellationToken) -> TurnResult {
        let source = format!("{}:{}", Surface::Webhook.name(), job.route);
        let principal = Principal::webhook(&job.route);
        self.unattended(
            Surface::Webhook,
            &source,
            principal,
            &job.prompt,
            None,
            cancel,
        )
        .await
    }

    /// A scheduled job's run: a fresh session of its own (`cron:<id>`), the
    /// cron tool profile, approvals denied, the job's model if it names one.
    async fn cron_job(&self, job: &talaria_cron::Job, cancel: &CancellationToken) -> TurnResult {
        let source = format!("{}:{}", Surface::Cron.name(), job.id);
        let mut prompt = job.prompt.clone();
        if !job.skills.is_empty() {
            prompt = format!(
                "First load these skills with skill_view and follow them: {}.\n\n{prompt}",
                job.skills.join(", ")
            );
        }
        // Jobs are the owner's.
        self.unattended(
            Surface::Cron,
            &source,
            Principal::owner(),
            &prompt,
            job.model.as_deref(),
            cancel,
        )
        .await
    }

    /// A run nobody attends: a fresh session, no approvals (every request is
    /// denied), no chat to write to on its own.
    async fn unattended(
        &self,
        surface: Surface,
        source: &str,
        principal: Principal,
        prompt: &str,
        model: Option<&str>,
        cancel: &CancellationToken,
    ) -> TurnResult {
        let session_id = crate::router::new_session_id(talaria_pairing::now());
        let failed = |message: String| TurnResult {
            outcome: TurnOutcome::Failed(message),
            session_id: session_id.clone(),
        };
        let mut settings = match self.settings() {
            Ok(settings) => settings,
            Err(message) => return failed(message),
        };
        if let Some(model) = model {
            settings.primary.model = model.to_owned();
        }
        let agent = match self
            .agent_on(
                surface,
                &settings,
                &session_id,
                source,
                Attendance {
                    approver: Arc::new(DenyAll),
                    // What the run reads never picks a chat to write to.
                    messenger: None,
                    // Nobody attends: no questions.
                    clarifier: None,
                    chat_user: None,
                    principal,
                },
            )
            .await
        {
            Ok(agent) => agent,
            Err(message) => return failed(message),
        };
        run_to_result(agent, prompt, Vec::new(), cancel).await
    }

    async fn command(&self, session_id: &str, principal: &Principal, line: &str) -> CommandReply {
        let settings = match self.settings() {
            Ok(settings) => settings,
            Err(message) => return CommandReply::text(message),
        };
        let mut agent = match self
            .agent(
                &settings,
                session_id,
                Surface::Gateway.name(),
                Arc::new(DenyAll),
                principal.clone(),
            )
            .await
        {
            Ok(agent) => agent,
            Err(message) => return CommandReply::text(message),
        };
        let registry = Registry::for_session(&agent, Surfaces::GATEWAY);
        let mut pending = Pending::default();
        let mut context = Context {
            agent: &mut agent,
            pending: &mut pending,
            registry: &registry,
            home: &self.home,
            cwd: &self.cwd,
            surface: Surfaces::GATEWAY,
            events: &NoEvents,
        };
        let reply = registry.dispatch(&mut context, line).await;
        agent.end_session().await;
        let mut text = reply.text;
        if !pending.is_empty() {
            text.push_str(
                "\n(The gateway does not keep changes for the next session yet: set them in \
                 config.yaml.)",
            );
        }
        let effect = match reply.effect {
            Effect::NewSession | Effect::ClearAndNewSession => CommandEffect::NewSession,
            Effect::Resume(id) => CommandEffect::Resume(id),
            Effect::Send(prompt) => CommandEffect::Send(prompt),
            // Terminal-only effects (quit, skins, reasoning) and `--now` reloads
            // mean nothing for an agent built per turn.
            Effect::None
            | Effect::Quit
            | Effect::Reload
            | Effect::Skin(_)
            | Effect::Reasoning(_)
            | Effect::Attach(_) => CommandEffect::None,
        };
        CommandReply { text, effect }
    }
}

/// Who is there for a run: the approver, the chats it may write to, the user
/// who answers `clarify` (none in runs nobody attends).
struct Attendance {
    approver: Arc<dyn Approver>,
    messenger: Option<Arc<dyn Messenger>>,
    clarifier: Option<Arc<dyn Clarifier>>,
    /// The person talking, where a chat user started the turn.
    chat_user: Option<talaria_agent::ChatUser>,
    /// Whom the session belongs to.
    principal: Principal,
}

/// The chat's question-and-answer as the agent's [`Clarifier`].
struct InTheChat(Arc<ChatClarifier>);

#[async_trait]
impl Clarifier for InTheChat {
    async fn ask(
        &self,
        question: &str,
        choices: &[String],
        cancel: &CancellationToken,
    ) -> Result<ClarifyAnswer, ClarifyError> {
        match self.0.ask(question, choices, cancel).await {
            Ok(ChatAnswer::Answered(text)) => Ok(ClarifyAnswer::Answered(text)),
            Ok(ChatAnswer::TimedOut(after)) => {
                Ok(ClarifyAnswer::NoAnswer(NoAnswer::TimedOut(after)))
            }
            Ok(ChatAnswer::Cancelled) => Ok(ClarifyAnswer::NoAnswer(NoAnswer::Cancelled)),
            Err(message) => Err(ClarifyError(message)),
        }
    }
}

/// The gateway's targets with the chat a turn runs in first.
struct WithCurrentChat {
    inner: Arc<dyn Messenger>,
    current: MessageTarget,
}

#[async_trait]
impl Messenger for WithCurrentChat {
    fn targets(&self) -> Vec<MessageTarget> {
        let same_chat = |t: &MessageTarget| {
            t.platform == self.current.platform
                && t.chat_id == self.current.chat_id
                && t.thread == self.current.thread
        };
        std::iter::once(self.current.clone())
            .chain(self.inner.targets().into_iter().filter(|t| !same_chat(t)))
            .collect()
    }

    async fn send(&self, target: &MessageTarget, text: &str) -> Result<Option<String>, String> {
        self.inner.send(target, text).await
    }
}

impl talaria_kernel::Steering for SteerNotes {
    fn take_notes(&self) -> Vec<String> {
        self.take()
    }
}

/// Runs `text` on `agent`, ends its session and says how it went.
async fn run_to_result(
    mut agent: Agent,
    text: &str,
    images: Vec<ImageRef>,
    cancel: &CancellationToken,
) -> TurnResult {
    let outcome = agent.run_with_images(text, images, &NoEvents, cancel).await;
    agent.end_session().await;
    let session_id = agent.conversation().session_id.clone();
    let outcome = match outcome {
        Ok(Exit::Final(text)) => TurnOutcome::Answer(text),
        Ok(Exit::BudgetExhausted { summary, .. }) => TurnOutcome::Answer(summary),
        Ok(Exit::Interrupted) => TurnOutcome::Interrupted,
        Err(error) => TurnOutcome::Failed(format!(
            "the run failed: {} (session {session_id})",
            redact(&error.to_string())
        )),
    };
    TurnResult {
        outcome,
        session_id,
    }
}

impl CommandReply {
    fn text(text: String) -> Self {
        Self {
            text,
            effect: CommandEffect::None,
        }
    }
}

#[async_trait]
impl TurnRunner for AgentRunner {
    async fn run_turn(&self, turn: Turn) -> TurnResult {
        let session_id = turn.session_id.clone();
        let runner = self.clone();
        off_thread(move || async move { runner.turn(turn).await })
            .await
            .unwrap_or_else(|message| TurnResult {
                outcome: TurnOutcome::Failed(message),
                session_id,
            })
    }

    async fn run_command(
        &self,
        session_id: &str,
        principal: &Principal,
        line: &str,
    ) -> CommandReply {
        let runner = self.clone();
        let (session_id, line) = (session_id.to_owned(), line.to_owned());
        let principal = principal.clone();
        off_thread(move || async move { runner.command(&session_id, &principal, &line).await })
            .await
            .unwrap_or_else(CommandReply::text)
    }
}

#[async_trait]
impl WebhookRunner for AgentRunner {
    async fn run_webhook(&self, job: &WebhookJob, cancel: CancellationToken) -> TurnResult {
        let runner = self.clone();
        let job = job.clone();
        off_thread(move || async move { runner.webhook(&job, &cancel).await })
            .await
            .unwrap_or_else(|message| TurnResult {
                outcome: TurnOutcome::Failed(message),
                session_id: String::new(),
            })
    }
}

#[async_trait]
impl crate::cron::CronRunner for AgentRunner {
    async fn run_cron_job(&self, job: &talaria_cron::Job, cancel: CancellationToken) -> TurnResult {
        let runner = self.clone();
        let job = job.clone();
        off_thread(move || async move { runner.cron_job(&job, &cancel).await })
            .await
            .unwrap_or_else(|message| TurnResult {
                outcome: TurnOutcome::Failed(message),
                session_id: String::new(),
            })
    }
}

/// Runs `work` on a thread of its own with its own runtime.
async fn off_thread<T, F, Fut>(work: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
{
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("gateway-turn".into())
        .spawn(move || {
            let outcome = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|runtime| runtime.block_on(work()))
                .map_err(|e| format!("cannot start a runtime: {e}"));
            let _ = done.send(outcome);
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    result
        .await
        .map_err(|_| "the turn's thread ended without an answer".to_owned())?
}

/// `text` with credentials replaced (errors may quote a request or a key).
fn redact(text: &str) -> String {
    talaria_redact::redact(text).into_owned()
}

#[cfg(test)]
mod tests {
    use talaria_profile::{Overrides, ProfileHome};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::ports::{ChatAddress, fallback_capabilities};

    fn runner(config: &str) -> (tempfile::TempDir, AgentRunner) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.yaml"), config).unwrap();
        let home = ProfileHome::at(dir.path());
        let runner = AgentRunner::new(home, Overrides::default(), dir.path().to_path_buf());
        (dir, runner)
    }

    /// A model nobody answers on: enough to build an agent, never called.
    const CONFIGURED: &str = "model:\n  provider: openai\n  name: m\n  \
                              base_url: http://127.0.0.1:9/v1\n  api_key: k\n";

    #[tokio::test]
    async fn registry_commands_run_in_the_chats_session_and_report_their_effects() {
        let (dir, runner) = runner(CONFIGURED);
        let owner = Principal::owner();
        let help = runner
            .run_command("1800000000_abcdef", &owner, "/help")
            .await;
        assert!(help.text.contains("/new"), "{}", help.text);
        assert!(
            !help.text.contains("/skin"),
            "terminal-only commands stay out"
        );
        assert_eq!(help.effect, CommandEffect::None);
        let new = runner
            .run_command("1800000000_abcdef", &owner, "/new")
            .await;
        assert_eq!(new.effect, CommandEffect::NewSession);
        let db = SessionDb::open(ProfileHome::at(dir.path()).session_db()).unwrap();
        let session = db.session("1800000000_abcdef").unwrap().unwrap();
        assert_eq!(session.source, "gateway");
    }

    #[tokio::test]
    async fn a_profile_without_a_model_fails_the_turn_with_a_message() {
        let (_dir, runner) = runner("");
        let result = runner
            .run_turn(Turn {
                session_id: "1800000000_abcdef".into(),
                text: "hi".into(),
                images: Vec::new(),
                cancel: CancellationToken::new(),
                steer: SteerNotes::default(),
                approver: Arc::new(DenyAll),
                clarifier: None,
                platform: fallback_capabilities("irc"),
                chat: ChatAddress::parse("irc:ann").unwrap(),
                user_id: None,
                principal: Principal::chat_user("irc", "ann"),
            })
            .await;
        assert_eq!(result.session_id, "1800000000_abcdef");
        let TurnOutcome::Failed(message) = result.outcome else {
            panic!("{result:?}");
        };
        assert!(!message.is_empty());
    }

    struct Homes(Vec<MessageTarget>);

    #[async_trait]
    impl Messenger for Homes {
        fn targets(&self) -> Vec<MessageTarget> {
            self.0.clone()
        }

        async fn send(&self, target: &MessageTarget, _: &str) -> Result<Option<String>, String> {
            Ok(Some(target.address()))
        }
    }

    #[tokio::test]
    async fn the_current_chat_comes_first_and_is_not_listed_twice() {
        let home = |platform: &str, chat: &str| MessageTarget {
            platform: platform.into(),
            chat_id: chat.into(),
            thread: None,
            label: Some("home channel".into()),
            current: false,
        };
        let current = MessageTarget {
            label: Some("this chat".into()),
            current: true,
            ..home("irc", "#ops")
        };
        let messenger = WithCurrentChat {
            inner: Arc::new(Homes(vec![home("irc", "#ops"), home("telegram", "42")])),
            current: current.clone(),
        };
        let targets = messenger.targets();
        assert_eq!(targets, [current.clone(), home("telegram", "42")]);
        assert_eq!(
            messenger.send(&current, "hi").await,
            Ok(Some("irc:#ops".into()))
        );
    }
}
