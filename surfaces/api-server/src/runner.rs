//! One request = one agent turn in a stored session, on a thread of its own
//! with its own current-thread runtime (building an agent does blocking work,
//! and its futures need not be `Send`). Settings are read per run, so a config
//! edit applies to the next request. Nobody can answer approval questions:
//! the approver denies, and outside a sandbox (bwrap, ssh) approvals are off.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use talaria_agent::{Agent, AgentOptions, Surface};
use talaria_approval::DenyAll;
use talaria_kernel::{
    AgentEvent, CancellationToken, EventSink, Exit, Message, Principal, StreamEvent, Usage,
};
use talaria_profile::config::{ApprovalMode, BackendKind};
use talaria_profile::{Overrides, ProfileHome, Settings, SettingsError};
use talaria_store::{NewSession, SessionDb};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use crate::auth::KeyId;
use crate::chain::{Placement, SessionMap, Text};
use crate::error::ApiError;

/// What a run reports while it runs.
#[derive(Debug)]
pub enum RunEvent {
    /// Visible text from the model.
    Text(String),
    /// A tool call began.
    ToolStarted {
        /// Tool name.
        name: String,
    },
    /// A tool call ended.
    ToolFinished {
        /// Tool name.
        name: String,
        /// Whether it failed.
        is_error: bool,
    },
    /// The run ended.
    Done(Result<Finished, ApiError>),
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The final answer (or the forced summary).
    pub answer: String,
    /// The session holding the conversation now.
    pub session_id: String,
    /// Tokens used by the run.
    pub usage: Usage,
    /// Why it ended: `stop` or `length` (a budget ran out).
    pub finish_reason: &'static str,
}

/// Which session a request continues.
#[derive(Debug, Clone)]
pub enum Target {
    /// The client named it (`X-Talaria-Session-Id`, or a previous response).
    Named(String),
    /// Found (or forked) from the resent history.
    Placed(Placement),
}

/// One request to run.
#[derive(Debug)]
pub struct RunRequest {
    /// The caller's key.
    pub key: KeyId,
    /// The client's own system text, layered on top of Talaria's prompt.
    pub system: Option<String>,
    /// The new user message.
    pub prompt: String,
}

/// Runs requests for the server.
#[derive(Debug)]
pub struct Runner {
    home: ProfileHome,
    overrides: Overrides,
    cwd: PathBuf,
    /// Sessions with a run in progress (two runs appending to one session
    /// would interleave their turns).
    busy: Arc<Mutex<HashSet<String>>>,
    /// The profile as last read (read again when config.yaml or .env changes).
    profile: Arc<talaria_profile::ProfileCache>,
    /// The history → session index.
    pub map: SessionMap,
}

/// Takes a session off the busy list when its run ends, however it ends.
struct BusyGuard {
    busy: Arc<Mutex<HashSet<String>>>,
    id: String,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if let Ok(mut busy) = self.busy.lock() {
            busy.remove(&self.id);
        }
    }
}

/// Forwards the loop's events to the request.
struct Forward(mpsc::UnboundedSender<RunEvent>);

impl EventSink for Forward {
    fn emit(&self, event: AgentEvent) {
        let event = match event {
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => RunEvent::Text(text),
            AgentEvent::ToolStarted { name, .. } => RunEvent::ToolStarted { name },
            AgentEvent::ToolFinished { name, is_error, .. } => {
                RunEvent::ToolFinished { name, is_error }
            }
            _ => return,
        };
        let _ = self.0.send(event);
    }
}

/// A session set up for a run, held busy until the run ends.
pub struct Prepared {
    /// Its id.
    pub session_id: String,
    guard: BusyGuard,
    settings: Settings,
}

impl Runner {
    /// A runner over `home`.
    pub fn new(home: ProfileHome, overrides: Overrides, cwd: PathBuf) -> Self {
        let map = SessionMap::new(home.root().join("api_server.db"));
        Self {
            home,
            overrides,
            cwd,
            busy: Arc::default(),
            profile: Arc::default(),
            map,
        }
    }

    /// The profile's settings for a run nobody can approve anything in.
    pub fn settings(&self) -> Result<Settings, ApiError> {
        let (env, config) = self
            .profile
            .load(&self.home)
            .map_err(|e| ApiError::server(redact(&e.to_string())))?;
        let mut settings = Settings::resolve(&self.overrides, &env, config, &self.home)
            .map_err(|e| {
                let hint = if matches!(e, SettingsError::Missing(_)) {
                    " (run `talaria setup` for this profile, or start the server with --provider, --model and --base-url)"
                } else {
                    ""
                };
                ApiError::server(format!("{}{hint}", redact(&e.to_string())))
            })?;
        settings.yolo = false;
        if settings.config.terminal.backend == BackendKind::Local {
            settings.config.approvals.mode = ApprovalMode::Deny;
        }
        Ok(settings)
    }

    /// The profile's session database file.
    pub fn session_db(&self) -> PathBuf {
        self.home.session_db()
    }

    fn db(&self) -> Result<std::sync::Arc<SessionDb>, ApiError> {
        SessionDb::shared(self.home.session_db())
            .map_err(|e| ApiError::server(format!("the session database: {e}")))
    }

    /// A session's stored message count, and whether it is free.
    pub fn current(&self, db: &SessionDb, id: &str) -> Option<(usize, bool)> {
        let messages = db.messages(id).ok()?;
        db.session(id).ok().flatten()?;
        let free = self.busy.lock().is_ok_and(|busy| !busy.contains(id));
        Some((messages.len(), free))
    }

    fn claim(&self, id: &str) -> Result<BusyGuard, ApiError> {
        let mut busy = self
            .busy
            .lock()
            .map_err(|_| ApiError::server("the busy-session list was poisoned"))?;
        if !busy.insert(id.to_owned()) {
            return Err(ApiError::conflict(format!(
                "session {id} is busy with another request; wait for it to finish"
            )));
        }
        Ok(BusyGuard {
            busy: self.busy.clone(),
            id: id.to_owned(),
        })
    }

    /// Finds or makes the request's session for `principal` and claims it (blocking:
    /// SQLite).
    pub fn prepare(&self, target: Target, principal: &Principal) -> Result<Prepared, ApiError> {
        let settings = self.settings()?;
        let db = self.db()?;
        let placement = match target {
            Target::Named(prefix) => {
                let id = db
                    .resolve_id(&prefix, principal)
                    .map_err(|e| ApiError::not_found(format!("session {prefix}: {e}")))?;
                let guard = self.claim(&id)?;
                return Ok(Prepared {
                    session_id: id,
                    guard,
                    settings,
                });
            }
            Target::Placed(placement) => placement,
        };
        if let Placement::Continue(id) = &placement
            && let Ok(guard) = self.claim(id)
        {
            return Ok(Prepared {
                session_id: id.clone(),
                guard,
                settings,
            });
        }
        let (parent, keep, seed) = match placement {
            Placement::Continue(id) => {
                let keep = db.messages(&id).map_or(0, |m| m.len());
                (Some(id), keep, Vec::new())
            }
            Placement::Fork { parent, keep, seed } => (parent, keep, seed),
        };
        let mut messages: Vec<Message> = match &parent {
            Some(parent) => db
                .messages(parent)
                .map_err(|e| ApiError::server(format!("session {parent}: {e}")))?
                .into_iter()
                .take(keep)
                .collect(),
            None => Vec::new(),
        };
        messages.extend(seed.into_iter().map(|Text { role, text }| Message {
            role,
            content: text,
            ..Message::default()
        }));
        let id = talaria_store::new_session_id();
        let guard = self.claim(&id)?;
        db.create_session(&NewSession {
            id: id.clone(),
            title: None,
            source: Surface::ApiServer.name().to_owned(),
            model: settings.primary.model.clone(),
            cwd: Some(self.cwd.display().to_string()),
            parent_session_id: parent,
            principal: principal.clone(),
        })
        .map_err(|e| ApiError::server(format!("cannot create a session: {e}")))?;
        if !messages.is_empty() {
            db.append_batch(&id, &messages)
                .map_err(|e| ApiError::server(format!("cannot fill session {id}: {e}")))?;
        }
        Ok(Prepared {
            session_id: id,
            guard,
            settings,
        })
    }

    /// Starts `request` in `prepared` on its own thread; events arrive on
    /// the returned receiver, ending with [`RunEvent::Done`]. `permit` (the
    /// concurrency cap) is held until the run ends.
    pub fn start(
        self: &Arc<Self>,
        prepared: Prepared,
        request: RunRequest,
        cancel: CancellationToken,
        permit: OwnedSemaphorePermit,
    ) -> mpsc::UnboundedReceiver<RunEvent> {
        let (events, receiver) = mpsc::unbounded_channel();
        let runner = self.clone();
        let failed = events.clone();
        let thread = std::thread::Builder::new()
            .name("api-run".into())
            .spawn(move || {
                let _permit = permit;
                let Prepared {
                    session_id,
                    guard,
                    settings,
                } = prepared;
                let outcome = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| ApiError::server(format!("cannot start a runtime: {e}")))
                    .and_then(|runtime| {
                        runtime.block_on(runner.run_agent(
                            settings,
                            session_id,
                            request,
                            cancel,
                            events.clone(),
                        ))
                    });
                drop(guard);
                let _ = events.send(RunEvent::Done(outcome));
            });
        if let Err(error) = thread {
            let _ = failed.send(RunEvent::Done(Err(ApiError::server(format!(
                "cannot start a thread: {error}"
            )))));
        }
        receiver
    }

    async fn run_agent(
        &self,
        settings: Settings,
        session_id: String,
        request: RunRequest,
        cancel: CancellationToken,
        events: mpsc::UnboundedSender<RunEvent>,
    ) -> Result<Finished, ApiError> {
        let options = AgentOptions {
            surface: Surface::ApiServer,
            cwd: self.cwd.clone(),
            approver: Arc::new(DenyAll),
            resume: Some(session_id),
            editor: None,
            messenger: None,
            clarifier: None,
            browsers: None,
            chat_user: None,
            principal: request.key.principal.clone(),
        };
        let mut agent = Agent::build(&settings, &self.home, options)
            .await
            .map_err(|e| {
                ApiError::server(format!(
                    "cannot start the agent: {}",
                    redact(&e.to_string())
                ))
            })?;
        for notice in agent.notices() {
            crate::log(format_args!("note: {}", redact(notice)));
        }
        if let Some(system) = request.system.as_deref() {
            agent.layer_system(system);
        }
        let outcome = agent.run(&request.prompt, &Forward(events), &cancel).await;
        agent.end_session().await;
        let session_id = agent.conversation().session_id.clone();
        // Indexed for the next request of this conversation; a failure costs a fork.
        let stored = self.db().ok().and_then(|db| db.messages(&session_id).ok());
        if let Some(stored) = stored
            && let Err(error) = self.map.record(&request.key, &session_id, &stored)
        {
            crate::log(format_args!("warning: {error}"));
        }
        let usage = agent.state().usage;
        let (answer, finish_reason) = match outcome {
            Ok(Exit::Final(text)) => (text, "stop"),
            Ok(Exit::BudgetExhausted { summary, .. }) => (summary, "length"),
            Ok(Exit::Interrupted) => {
                return Err(ApiError::server(format!(
                    "the request was cancelled; session {session_id} keeps what was done"
                )));
            }
            Err(error) => {
                return Err(ApiError::server(format!(
                    "the run failed: {} (session {session_id})",
                    redact(&error.to_string())
                )));
            }
        };
        Ok(Finished {
            answer,
            session_id,
            usage,
            finish_reason,
        })
    }
}

/// `text` with credentials replaced (errors may quote a request or a key).
pub fn redact(text: &str) -> String {
    talaria_redact::redact(text).into_owned()
}
