//! The session's external memory provider (`memory.provider`): a memory
//! plugin held open in a [`MemorySession`] by a worker task, behind the
//! kernel's [`ExternalMemory`] port.
//!
//! - A recall waits at most `memory.prefetch_timeout_ms`; a slower one is
//!   skipped for that turn (the worker finishes it within the plugin's own
//!   time limit, and the answer is dropped).
//! - Finished turns go to a bounded queue ([`QUEUE`] jobs) the worker drains
//!   off the loop's path; at the session's end the rest is drained within
//!   [`DRAIN_DEADLINE`].
//! - Everything sent to the provider passes the secret redactor; everything
//!   it recalls passes the threat scanner and is wrapped in
//!   `<memory-context>` (its own tags neutralised).
//! - A trap disables the provider for the session at once, three failures
//!   (errors, deadlines missed) after [`MAX_FAILURES`]; the user is told once.
//!   One that does not start within [`OPEN_DEADLINE`] is left out.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use talaria_kernel::{ExternalMemory, Message};
use talaria_plugin_host::{MemoryError, MemoryScope, MemorySession, MemorySessionKind};
use tokio::sync::{mpsc, oneshot};

/// Jobs the worker may have waiting (finished turns, events, recalls).
pub const QUEUE: usize = 64;
/// How long the session's end waits for the queue to drain.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(5);
/// Failures after which the provider is disabled for the session.
pub const MAX_FAILURES: u32 = 3;
/// How long a session's start waits for the provider's `initialize` and
/// prompt block; a slower provider is left out of the session.
pub const OPEN_DEADLINE: Duration = Duration::from_secs(10);

enum Job {
    Prefetch {
        query: String,
        reply: oneshot::Sender<Option<String>>,
    },
    Sync {
        turn: Vec<Message>,
        query: String,
    },
    PreCompress {
        messages: Vec<Message>,
        reply: oneshot::Sender<Option<String>>,
    },
    MemoryWrite {
        action: String,
        target: String,
        content: String,
    },
    Delegation {
        task: String,
        summary: String,
        child_session: String,
    },
    End {
        messages: Vec<Message>,
    },
}

/// Failures so far, whether the provider is disabled, and what the user must
/// be told.
#[derive(Default)]
struct Health {
    failures: AtomicU32,
    disabled: AtomicBool,
    /// Whether the user was told that the queue overflowed.
    overflowed: AtomicBool,
    notices: Mutex<Vec<String>>,
}

impl Health {
    fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Acquire)
    }

    /// Counts a failure; disables at once when `fatal`, else at the third.
    fn fail(&self, provider: &str, fatal: bool, error: &str) {
        let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
        if !fatal && failures < MAX_FAILURES {
            return;
        }
        if !self.disabled.swap(true, Ordering::AcqRel) {
            let why = if fatal {
                error.to_owned()
            } else {
                format!("it failed {failures} times; the last: {error}")
            };
            self.note(format!(
                "memory provider {provider} is disabled for this session: {why}"
            ));
        }
    }

    fn note(&self, notice: String) {
        if let Ok(mut notices) = self.notices.lock() {
            notices.push(notice);
        }
    }
}

/// The active provider of one session.
pub struct ActiveMemory {
    name: String,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    worker: Mutex<Option<tokio::task::JoinHandle<()>>>,
    health: Arc<Health>,
    prefetch_timeout: Duration,
    /// Whether the session's turns and writes reach the provider.
    writes: bool,
    /// Whether the provider asked to learn in sub-agent and cron sessions.
    write_in_secondary: bool,
    prompt_block: Option<String>,
}

impl std::fmt::Debug for ActiveMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveMemory")
            .field("provider", &self.name)
            .field("writes", &self.writes)
            .finish_non_exhaustive()
    }
}

impl ActiveMemory {
    /// Starts the worker for an opened `session` and reads its prompt block
    /// (once: it becomes part of the frozen prompt).
    pub async fn start(
        mut session: MemorySession,
        kind: MemorySessionKind,
        prefetch_timeout: Duration,
    ) -> Self {
        let name = session.name().to_owned();
        let health = Arc::new(Health::default());
        let prompt_block = match session.system_prompt_block().await {
            Ok(block) => block.and_then(|block| admitted(&name, &block, &health)),
            Err(error) => {
                health.fail(&name, error.is_fatal(), &error.to_string());
                None
            }
        };
        let write_in_secondary = session.options().write_in_secondary;
        let writes = kind == MemorySessionKind::Primary || write_in_secondary;
        let (sender, receiver) = mpsc::channel(QUEUE);
        let worker = tokio::spawn(work(session, receiver, health.clone()));
        Self {
            name,
            jobs: Mutex::new(Some(sender)),
            worker: Mutex::new(Some(worker)),
            health,
            prefetch_timeout,
            writes,
            write_in_secondary,
            prompt_block,
        }
    }

    /// Whether the provider asked to learn in sub-agent sessions too.
    pub fn wants_sub_agents(&self) -> bool {
        self.write_in_secondary && self.is_active()
    }

    /// The provider's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its block for the system prompt, read at start.
    pub fn prompt_block(&self) -> Option<&str> {
        self.prompt_block.as_deref()
    }

    /// Whether it is still in use this session.
    pub fn is_active(&self) -> bool {
        !self.health.is_disabled()
    }

    /// What the user should be told since the last call (a disabled provider).
    pub fn take_notices(&self) -> Vec<String> {
        self.health
            .notices
            .lock()
            .map(|mut notices| std::mem::take(&mut *notices))
            .unwrap_or_default()
    }

    /// The built-in memory tool wrote `content` to `target`.
    pub fn memory_written(&self, action: &str, target: &str, content: &str) {
        if self.writes {
            self.enqueue(Job::MemoryWrite {
                action: action.to_owned(),
                target: target.to_owned(),
                content: redact(content),
            });
        }
    }

    /// A sub-agent finished the delegated `task` with `summary`.
    pub fn delegated(&self, task: &str, summary: &str, child_session: &str) {
        self.enqueue(Job::Delegation {
            task: redact(task),
            summary: redact(summary),
            child_session: child_session.to_owned(),
        });
    }

    /// Ends the session: `on-session-end` with its `messages`, then
    /// `shutdown`, after what is queued, waiting at most [`DRAIN_DEADLINE`].
    pub async fn end(&self, messages: &[Message]) {
        self.enqueue(Job::End {
            messages: redacted(messages),
        });
        // Closing the queue lets the worker stop once it is drained.
        self.jobs.lock().map(|mut jobs| jobs.take()).ok();
        let worker = self.worker.lock().ok().and_then(|mut w| w.take());
        if let Some(worker) = worker
            && tokio::time::timeout(DRAIN_DEADLINE, worker).await.is_err()
        {
            self.health.note(format!(
                "memory provider {} did not finish within {} s at the session's end",
                self.name,
                DRAIN_DEADLINE.as_secs()
            ));
        }
    }

    fn enqueue(&self, job: Job) -> bool {
        if self.health.is_disabled() {
            return false;
        }
        let Ok(jobs) = self.jobs.lock() else {
            return false;
        };
        let Some(jobs) = jobs.as_ref() else {
            return false;
        };
        match jobs.try_send(job) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.health.overflowed.swap(true, Ordering::AcqRel) {
                    self.health.note(format!(
                        "memory provider {} is behind ({QUEUE} jobs waiting): what it could not take is skipped",
                        self.name
                    ));
                }
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Asks the worker and waits at most the prefetch deadline.
    async fn ask(
        &self,
        job: Job,
        reply: oneshot::Receiver<Option<String>>,
        what: &str,
    ) -> Option<String> {
        if !self.enqueue(job) {
            return None;
        }
        match tokio::time::timeout(self.prefetch_timeout, reply).await {
            Ok(answer) => answer.ok().flatten(),
            Err(_) => {
                let error = format!(
                    "{what} took longer than {} ms",
                    self.prefetch_timeout.as_millis()
                );
                self.health.fail(&self.name, false, &error);
                None
            }
        }
    }
}

#[async_trait]
impl ExternalMemory for ActiveMemory {
    async fn prefetch(&self, query: &str) -> Option<String> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Prefetch {
            query: redact(query),
            reply,
        };
        let recalled = self.ask(job, answer, "the recall").await?;
        let recalled = admitted(&self.name, &recalled, &self.health)?;
        let wrapped = talaria_memory::wrap_provider_context(&recalled);
        (!wrapped.is_empty()).then_some(wrapped)
    }

    fn turn_finished(&self, turn: &[Message]) {
        if !self.writes {
            return;
        }
        let query = turn.first().map(|m| redact(&m.content)).unwrap_or_default();
        self.enqueue(Job::Sync {
            turn: redacted(turn),
            query,
        });
    }

    async fn before_compress(&self, messages: &[Message]) -> Option<String> {
        let (reply, answer) = oneshot::channel();
        let job = Job::PreCompress {
            messages: redacted(messages),
            reply,
        };
        let keep = self.ask(job, answer, "the compression note").await?;
        admitted(&self.name, &keep, &self.health)
    }
}

/// The provider's text, unless the threat scanner finds an attack in it
/// (then dropped, and the user told).
fn admitted(provider: &str, text: &str, health: &Health) -> Option<String> {
    if text.trim().is_empty() {
        return None;
    }
    let threat = match talaria_memory::Scanner::builtin() {
        Ok(scanner) => scanner
            .scan_in(text, talaria_memory::Scope::Memory)
            .map(|t| format!("rule '{}' ({})", t.rule_id, t.category.as_str())),
        Err(error) => Some(format!("the threat scanner is unavailable: {error}")),
    };
    match threat {
        Some(why) => {
            health.note(format!(
                "memory provider {provider}'s text was dropped: it trips the threat scanner's {why}"
            ));
            None
        }
        None => Some(text.to_owned()),
    }
}

fn redact(text: &str) -> String {
    talaria_redact::redact(text).into_owned()
}

fn redacted(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| Message {
            content: redact(&m.content),
            ..m.clone()
        })
        .collect()
}

/// The worker: one job at a time on the session, until the queue closes or
/// the session ends; a disabled provider's jobs are answered with nothing.
async fn work(mut session: MemorySession, mut jobs: mpsc::Receiver<Job>, health: Arc<Health>) {
    let name = session.name().to_owned();
    let failed = |error: MemoryError| health.fail(&name, error.is_fatal(), &error.to_string());
    while let Some(job) = jobs.recv().await {
        if health.is_disabled() {
            continue;
        }
        match job {
            Job::Prefetch { query, reply } => {
                let answer = session.prefetch(&query).await.map_err(failed).ok();
                let _ = reply.send(answer);
            }
            Job::Sync { turn, query } => {
                if let Err(error) = session.sync_turn(&turn).await {
                    failed(error);
                } else if let Err(error) = session.queue_prefetch(&query).await {
                    failed(error);
                }
            }
            Job::PreCompress { messages, reply } => {
                let answer = session
                    .on_pre_compress(&messages)
                    .await
                    .map_err(failed)
                    .ok()
                    .flatten();
                let _ = reply.send(answer);
            }
            Job::MemoryWrite {
                action,
                target,
                content,
            } => {
                let _ = session
                    .on_memory_write(&action, &target, &content)
                    .await
                    .map_err(failed);
            }
            Job::Delegation {
                task,
                summary,
                child_session,
            } => {
                let _ = session
                    .on_delegation(&task, &summary, &child_session)
                    .await
                    .map_err(failed);
            }
            Job::End { messages } => {
                let _ = session.on_session_end(&messages).await.map_err(failed);
                break;
            }
        }
    }
    // After the session's end, or when the agent was dropped without one.
    if session.is_usable() {
        let _ = session.shutdown().await;
    }
}

/// The session kind a surface's sessions are, or `None` where no external
/// memory is offered: webhooks quote outside senders (their text must not
/// become memories) and batch prompts are not anyone's conversation.
pub fn session_kind(surface: crate::Surface) -> Option<MemorySessionKind> {
    use crate::Surface;
    match surface {
        Surface::Cron => Some(MemorySessionKind::Cron),
        Surface::Webhook | Surface::Batch => None,
        Surface::Terminal
        | Surface::OneShot
        | Surface::McpServer
        | Surface::ApiServer
        | Surface::Editor
        | Surface::Gateway => Some(MemorySessionKind::Primary),
    }
}

/// A session's external memory: the active provider, what its children
/// get, and the tools of the memory plugins that are not active (not offered).
pub struct SessionMemory {
    /// The active provider, when one is set and opened.
    pub active: Option<Arc<ActiveMemory>>,
    /// What delegated children get.
    pub children: Option<ChildMemory>,
    /// The tools of the other memory plugins.
    pub idle_tools: Vec<String>,
}

/// Opens the active provider (`memory.provider`) among `providers` for the
/// session `scope` describes (`None`: the surface has no external memory),
/// or explains in `notices` why none is used.
pub async fn for_session(
    providers: Option<talaria_plugin_host::PluginMemoryProviders>,
    config: &talaria_profile::MemoryConfig,
    scope: Option<MemoryScope>,
    notices: &mut Vec<String>,
) -> SessionMemory {
    let providers = providers.map(Arc::new);
    let prefetch_timeout = Duration::from_millis(config.prefetch_timeout_ms);
    let active = match (&scope, config.active()) {
        (Some(scope), Some(name)) => {
            open(providers.as_deref(), name, scope, prefetch_timeout, notices)
                .await
                .map(Arc::new)
        }
        _ => None,
    };
    let active_name = active.as_ref().map(|a| a.name().to_owned());
    let idle_tools = providers
        .iter()
        .flat_map(|p| p.plugins())
        .filter(|p| Some(p.name()) != active_name.as_deref())
        .flat_map(|p| p.tools().iter().map(|t| t.spec.name.clone()))
        .collect();
    let children = match (active.clone(), providers, scope) {
        (Some(parent), Some(providers), Some(scope)) => Some(ChildMemory {
            parent,
            providers,
            scope,
            prefetch_timeout,
        }),
        _ => None,
    };
    SessionMemory {
        active,
        children,
        idle_tools,
    }
}

async fn open(
    providers: Option<&talaria_plugin_host::PluginMemoryProviders>,
    name: &str,
    scope: &MemoryScope,
    prefetch_timeout: Duration,
    notices: &mut Vec<String>,
) -> Option<ActiveMemory> {
    let Some(providers) = providers.filter(|p| !p.is_empty()) else {
        notices.push(format!(
            "memory provider {name} is not used: no memory plugin is loaded"
        ));
        return None;
    };
    let opening = async {
        let session = providers.open(name, scope).await?;
        Ok::<_, MemoryError>(ActiveMemory::start(session, scope.kind, prefetch_timeout).await)
    };
    match tokio::time::timeout(OPEN_DEADLINE, opening).await {
        Ok(Ok(active)) => Some(active),
        Ok(Err(error)) => {
            notices.push(format!("memory provider {name} is not used: {error}"));
            None
        }
        Err(_) => {
            notices.push(format!(
                "memory provider {name} is not used: it did not start within {} s",
                OPEN_DEADLINE.as_secs()
            ));
            None
        }
    }
}

/// What a session's children need to reach its memory provider: the parent
/// is told of every delegation; a child gets a session of its own (kind
/// sub-agent) only when the provider asked to learn in sub-agents.
#[derive(Clone)]
pub struct ChildMemory {
    /// The parent's provider.
    pub parent: Arc<ActiveMemory>,
    /// The memory plugins of the parent's session.
    pub providers: Arc<talaria_plugin_host::PluginMemoryProviders>,
    /// The parent's scope (the child's is derived from it).
    pub scope: MemoryScope,
    /// `memory.prefetch_timeout_ms`.
    pub prefetch_timeout: Duration,
}

impl ChildMemory {
    /// A provider session for the child `child_session`, when the provider
    /// asked to learn in sub-agents; `None` otherwise (the child's turns are
    /// not written).
    pub async fn open_child(&self, child_session: &str) -> Option<ActiveMemory> {
        if !self.parent.wants_sub_agents() {
            return None;
        }
        let scope = MemoryScope {
            session_id: child_session.to_owned(),
            kind: MemorySessionKind::SubAgent,
            parent_session: Some(self.scope.session_id.clone()),
            ..self.scope.clone()
        };
        let session = self.providers.open(self.parent.name(), &scope).await.ok()?;
        Some(ActiveMemory::start(session, MemorySessionKind::SubAgent, self.prefetch_timeout).await)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use talaria_plugin_host::{Grants, HostOptions, PluginHost, PluginMemoryProviders};

    use super::*;
    use crate::test_support::test_plugin;

    fn scope(kind: MemorySessionKind) -> MemoryScope {
        MemoryScope {
            session_id: "s1".into(),
            kind,
            platform: "cli".into(),
            profile: "default".into(),
            user_id: None,
            parent_session: None,
            model: "m".into(),
        }
    }

    /// The recorder test plugin, configured with `config`, started for a
    /// session of `kind` with a recall deadline of `deadline_ms`.
    async fn recorder(
        root: &std::path::Path,
        config: &[(&str, &str)],
        kind: MemorySessionKind,
        deadline_ms: u64,
    ) -> (ActiveMemory, talaria_plugin_host::LoadedPlugin) {
        let host =
            PluginHost::new(HostOptions::new(root.join("cache"), root.join("data"))).unwrap();
        let settings: BTreeMap<String, String> = config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let dir = test_plugin("memory-recorder", "talaria-plugin-memory-recorder");
        let plugin = host
            .load_configured(&dir, &Grants::none(), &settings)
            .await
            .unwrap();
        let providers = PluginMemoryProviders::new(vec![plugin.clone()], root).unwrap();
        let session = providers
            .open("memory-recorder", &scope(kind))
            .await
            .unwrap();
        let memory = ActiveMemory::start(session, kind, Duration::from_millis(deadline_ms)).await;
        (memory, plugin)
    }

    fn logged(plugin: &talaria_plugin_host::LoadedPlugin) -> Vec<String> {
        plugin
            .log()
            .lines()
            .into_iter()
            .map(|l| l.message)
            .collect()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_recall_slower_than_the_deadline_is_skipped_without_waiting_for_it() {
        let root = tempfile::tempdir().unwrap();
        let config = [("prefetch_sleep_ms", "4000")];
        let (memory, _plugin) =
            recorder(root.path(), &config, MemorySessionKind::Primary, 100).await;
        // The provider would answer after 4 s; the turn gets nothing well before.
        let recalled = tokio::time::timeout(Duration::from_secs(3), memory.prefetch("hi")).await;
        assert_eq!(recalled, Ok(None));
        assert!(
            memory.is_active(),
            "one missed deadline does not disable it"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_trap_disables_the_provider_with_one_notice() {
        let root = tempfile::tempdir().unwrap();
        let config = [("trap_on", "prefetch")];
        let (memory, _plugin) =
            recorder(root.path(), &config, MemorySessionKind::Primary, 3000).await;
        assert_eq!(memory.prefetch("boom").await, None);
        assert!(!memory.is_active());
        assert_eq!(memory.prefetch("again").await, None);
        let notices = memory.take_notices();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].starts_with("memory provider memory-recorder is disabled for this session:"),
            "{notices:?}"
        );
        assert!(
            notices[0].contains("told to trap in prefetch"),
            "{notices:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn errors_disable_the_provider_at_the_third() {
        let root = tempfile::tempdir().unwrap();
        let config = [("fail_on", "prefetch")];
        let (memory, _plugin) =
            recorder(root.path(), &config, MemorySessionKind::Primary, 3000).await;
        for _ in 0..2 {
            assert_eq!(memory.prefetch("q").await, None);
            assert!(memory.is_active());
            assert!(memory.take_notices().is_empty());
        }
        assert_eq!(memory.prefetch("q").await, None);
        assert!(!memory.is_active());
        let notices = memory.take_notices();
        assert_eq!(notices.len(), 1);
        assert!(
            notices[0].contains("it failed 3 times; the last:"),
            "{notices:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn turns_are_redacted_and_synced_once_then_the_end_drains_the_queue() {
        let root = tempfile::tempdir().unwrap();
        let (memory, plugin) = recorder(root.path(), &[], MemorySessionKind::Primary, 3000).await;
        let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        let turn = [
            Message::user(format!("my key is {secret}")),
            Message::assistant("noted"),
        ];
        memory.turn_finished(&turn);
        memory.turn_finished(&[Message::user("second"), Message::assistant("ok")]);
        memory.end(&turn).await;
        let log = logged(&plugin);
        let synced: Vec<&String> = log.iter().filter(|l| l.contains("sync-turn")).collect();
        assert_eq!(synced.len(), 2, "{log:#?}");
        assert!(!log.iter().any(|l| l.contains(secret)), "{log:#?}");
        assert!(synced[0].contains("my key is "), "{log:#?}");
        let calls: Vec<&str> = log
            .iter()
            .filter_map(|l| l.strip_prefix("memory-recorder: "))
            .map(|l| l.split(' ').next().unwrap_or(""))
            .collect();
        assert_eq!(
            calls,
            [
                "initialize",
                "system-prompt-block",
                "sync-turn",
                "queue-prefetch",
                "sync-turn",
                "queue-prefetch",
                "on-session-end",
                "shutdown"
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn cron_sessions_learn_only_when_the_provider_asks() {
        let root = tempfile::tempdir().unwrap();
        let turn = [Message::user("nightly report"), Message::assistant("done")];
        let (quiet, plugin) = recorder(root.path(), &[], MemorySessionKind::Cron, 3000).await;
        quiet.turn_finished(&turn);
        quiet.memory_written("add", "memory", "x");
        quiet.end(&turn).await;
        let log = logged(&plugin);
        assert!(
            !log.iter()
                .any(|l| l.contains("sync-turn") || l.contains("on-memory-write")),
            "{log:#?}"
        );
        assert!(log.iter().any(|l| l.contains("kind=cron")), "{log:#?}");

        let config = [("write_in_secondary", "true")];
        let (asking, plugin) = recorder(root.path(), &config, MemorySessionKind::Cron, 3000).await;
        asking.turn_finished(&turn);
        asking.end(&turn).await;
        assert!(
            logged(&plugin)
                .iter()
                .any(|l| l.contains("sync-turn 2 messages"))
        );
    }
}
